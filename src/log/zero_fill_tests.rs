//! The zero fill ahead of the active segment (`zero_fill.rs`) as seen through
//! `PartitionLog`: where the zeros end, that close, roll and recovery cut them, and that
//! no zero ever lands on data.

use std::path::Path;

use super::segment::segment_path;
use super::tests::{batch, cfg, run};
use super::*;

/// Length of the segment file based at `base`, bytes.
fn file_len(dir: &Path, base: i64) -> u64 {
    std::fs::metadata(segment_path(dir, base, "log")).unwrap().len()
}

/// Every stored batch from offset 0 up to the high watermark, in as many reads as it
/// takes (a read may stop early, at a break between two cached buffers).
async fn read_everything(log: &PartitionLog) -> Vec<u8> {
    let mut out = Vec::new();
    let mut next = 0;
    while next < log.high_watermark() {
        let r = log.read(next, 64 << 20).await.unwrap();
        let last = crate::protocol::batch::BatchIter::new(&r)
            .map_while(|b| b.ok())
            .last()
            .map(|(_, h)| h.last_offset())
            .expect("a read below the high watermark holds a batch");
        out.extend_from_slice(&r);
        next = last + 1;
    }
    out
}

fn file_bytes(dir: &Path, base: i64) -> Vec<u8> {
    std::fs::read(segment_path(dir, base, "log")).unwrap()
}

#[test]
fn zeros_are_written_one_chunk_ahead_and_cut_at_close() {
    run(|dir| async move {
        let log = PartitionLog::open(dir.clone(), cfg()).await.unwrap();
        let b = batch(10, 1000, 0); // one batch of 10,1xx bytes
        let size = b.len() as u64;
        assert!(size > 8192 && size <= 10240);
        log.append(b.clone(), 0).await.unwrap();
        log.active().zero_fill.settle().await;
        // The data write ended at the batch's end rounded up to the DMA alignment; the
        // first chunk is 64 KiB.
        let align = log.active().alignment();
        assert_eq!(file_len(&dir, 0), size.div_ceil(align) * align + 65536);
        let on_disk = file_bytes(&dir, 0);
        assert_eq!(&on_disk[..size as usize], &with_base0(&b)[..]);
        assert!(on_disk[size as usize..].iter().all(|&x| x == 0));

        // Each later append keeps at least one chunk (the written end rounded up to a
        // power of two, 64 KiB to 4 MiB) of zeros ahead of the data, and less than two.
        for k in 2..=40u64 {
            log.append(b.clone(), 0).await.unwrap();
            log.active().zero_fill.settle().await;
            let end = (k * size).div_ceil(align) * align;
            let chunk = end.next_power_of_two().clamp(zero_fill::MIN_CHUNK, zero_fill::MAX_CHUNK);
            let ahead = file_len(&dir, 0) - end;
            assert!(ahead >= chunk && ahead < 2 * chunk, "append {k}: {ahead} bytes ahead");
        }
        let on_disk = file_bytes(&dir, 0);
        assert!(on_disk[40 * size as usize..].iter().all(|&x| x == 0));
        log.close().await.unwrap();
        assert_eq!(file_len(&dir, 0), 40 * size);
    });
}

#[test]
fn a_crash_leaves_zeros_that_recovery_cuts_keeping_every_batch() {
    run(|dir| async move {
        let mut c = cfg();
        c.flush = FlushPolicy::Interval;
        let log = PartitionLog::open(dir.clone(), c.clone()).await.unwrap();
        // Concurrent appends, three at a time: writes are grouped (but stay small) and
        // race the zero writes ahead of them.
        let log = Rc::new(log);
        for wave in 0..100 {
            let mut tasks = Vec::new();
            for i in wave * 3..wave * 3 + 3 {
                let log = log.clone();
                let b = batch(4, 1000 + i, i as i64);
                tasks.push(glommio::spawn_local(async move { log.append(b, 0).await.unwrap() }));
            }
            for t in tasks {
                t.await;
            }
        }
        let hw = log.high_watermark();
        assert_eq!(hw, 1200);
        let expect = read_everything(&log).await;
        let size = log.active().size.get();
        log.active().zero_fill.settle().await;
        let align = log.active().alignment();
        assert!(file_len(&dir, 0) > size.div_ceil(align) * align, "zeros ahead of the data");
        drop(log); // no close: like a kill -9

        let log = PartitionLog::open(dir.clone(), c).await.unwrap();
        assert_eq!(file_len(&dir, 0), size, "recovery cut the zeros");
        assert_eq!(log.high_watermark(), 1200);
        assert_eq!(read_everything(&log).await, expect);
        // Appending goes on after the data, and the zeros come back ahead of it.
        assert_eq!(log.append(batch(2, 10, 0), 0).await.unwrap().base_offset, 1200);
        log.active().zero_fill.settle().await;
        assert!(file_len(&dir, 0) > size);
        let all = read_everything(&log).await;
        assert_eq!(&all[..expect.len()], &expect[..]);
        log.close().await.unwrap();
    });
}

#[test]
fn zeros_stop_at_the_segment_size_and_roll_cuts_them() {
    run(|dir| async move {
        let mut c = cfg();
        c.segment_bytes = 20_000;
        let log = PartitionLog::open(dir.clone(), c).await.unwrap();
        let b = batch(1, 5000, 0);
        for _ in 0..3 {
            log.append(b.clone(), 0).await.unwrap();
        }
        log.active().zero_fill.settle().await;
        // Never past segment.bytes rounded up to the alignment.
        let align = log.active().alignment();
        assert_eq!(file_len(&dir, 0), 20_000u64.div_ceil(align) * align);
        // The fourth batch does not fit: roll, and the sealed file is cut to its data.
        log.append(b.clone(), 0).await.unwrap();
        assert_eq!(file_len(&dir, 0), 3 * b.len() as u64);
        log.close().await.unwrap();
        assert_eq!(file_len(&dir, 3), b.len() as u64);
    });
}

#[test]
fn without_zero_fill_each_write_extends_the_file() {
    run(|dir| async move {
        let mut c = cfg();
        c.zero_fill_max_write = 0;
        let log = PartitionLog::open(dir.clone(), c).await.unwrap();
        let b = batch(10, 1000, 0);
        log.append(b.clone(), 0).await.unwrap();
        let align = log.active().alignment();
        assert_eq!(file_len(&dir, 0), (b.len() as u64).div_ceil(align) * align);
        log.close().await.unwrap();
    });
}

#[test]
fn segments_written_in_large_writes_get_no_zeros() {
    run(|dir| async move {
        let mut c = cfg();
        c.zero_fill_max_write = 8 << 10;
        let log = PartitionLog::open(dir.clone(), c).await.unwrap();
        let b = batch(10, 1000, 0); // above 8 KiB per write
        for _ in 0..5 {
            log.append(b.clone(), 0).await.unwrap();
        }
        let align = log.active().alignment();
        assert_eq!(file_len(&dir, 0), (5 * b.len() as u64).div_ceil(align) * align);
        log.close().await.unwrap();
    });
}

/// `b` as stored at offset 0.
fn with_base0(b: &[u8]) -> Vec<u8> {
    let mut v = b.to_vec();
    crate::protocol::batch::set_base_offset(&mut v, 0);
    v
}

//! Retention (`retention.rs`) and the `segment.ms` roll, through `PartitionLog`.

use std::path::Path;

use super::retention::{Deleted, RetentionPolicy};
use super::tests::{batch, cfg, run};
use super::*;

/// 12 one-record batches of ~1 KiB: four segments of three (segment.bytes 4096), the
/// first six with timestamp 1,000, the rest 50,000.
async fn twelve(dir: &Path) -> Rc<PartitionLog> {
    let mut c = cfg();
    c.segment_bytes = 4096;
    let log = PartitionLog::open(dir.to_path_buf(), c).await.unwrap();
    for i in 0..12 {
        let ts = if i < 6 { 1_000 } else { 50_000 };
        log.append(batch(1, 1000, ts), 0).await.unwrap();
    }
    assert_eq!(
        log.segments.borrow().iter().map(|s| s.base_offset).collect::<Vec<_>>(),
        vec![0, 3, 6, 9]
    );
    log
}

fn files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".log"))
        .collect();
    v.sort();
    v
}

const KEEP: RetentionPolicy =
    RetentionPolicy { retention_ms: -1, retention_bytes: -1, delete: true };

#[test]
fn segments_older_than_retention_ms_are_deleted_and_the_start_moves_for_good() {
    run(|dir| async move {
        let log = twelve(&dir).await;
        let policy = RetentionPolicy { retention_ms: 60_000, ..KEEP };
        let d = log.enforce_retention(&policy, 100_000).await.unwrap();
        let s = log.segments.borrow()[0].size.get(); // every segment holds 3 equal batches
        assert_eq!(d, Deleted { segments: 2, bytes: 2 * s, log_start_offset: 6 });
        assert_eq!(log.log_start_offset(), 6);
        assert!(matches!(log.read(5, 1 << 20).await, Err(ReadError::OffsetOutOfRange)));
        assert_eq!(headers_base(&log.read(6, 1 << 20).await.unwrap()), 6);
        assert_eq!(files(&dir), ["00000000000000000006.log", "00000000000000000009.log"]);
        // A second pass deletes nothing more: the rest is younger than 60 s.
        assert_eq!(log.enforce_retention(&policy, 100_000).await.unwrap().segments, 0);
        log.close().await.unwrap();
        let log = PartitionLog::open(dir.clone(), cfg()).await.unwrap();
        assert_eq!(log.log_start_offset(), 6);
        assert_eq!(log.high_watermark(), 12);
        log.close().await.unwrap();
    });
}

#[test]
fn retention_bytes_keeps_at_least_that_many_bytes() {
    run(|dir| async move {
        let log = twelve(&dir).await;
        let s = log.segments.borrow()[0].size.get();
        // 12 batches in 4 segments of 3; keep at least 6 batches' worth: two segments go.
        let policy = RetentionPolicy { retention_bytes: (2 * s) as i64, ..KEEP };
        let d = log.enforce_retention(&policy, 0).await.unwrap();
        assert_eq!((d.segments, d.log_start_offset), (2, 6));
        // Two segments left (2s bytes); keeping more than one segment's worth means the
        // older one must stay.
        let policy = RetentionPolicy { retention_bytes: (s + 1) as i64, ..KEEP };
        assert_eq!(log.enforce_retention(&policy, 0).await.unwrap().segments, 0);
        log.close().await.unwrap();
    });
}

#[test]
fn compacted_topics_keep_everything_and_an_expired_active_segment_is_rolled_and_deleted() {
    run(|dir| async move {
        let log = twelve(&dir).await;
        let compact = RetentionPolicy { retention_ms: 0, retention_bytes: 0, delete: false };
        assert_eq!(log.enforce_retention(&compact, 100_000).await.unwrap().segments, 0);
        // Segments 0, 3 and 6 are sealed, 9 (offsets 9-11) is active; all past retention.
        let all = RetentionPolicy { retention_ms: 0, retention_bytes: 0, delete: true };
        let d = log.enforce_retention(&all, 100_000).await.unwrap();
        assert_eq!((d.segments, d.log_start_offset), (4, 12));
        assert_eq!(files(&dir), ["00000000000000000012.log"]);
        assert_eq!((log.log_start_offset(), log.high_watermark()), (12, 12));
        assert!(matches!(log.read(11, 1 << 20).await, Err(ReadError::OffsetOutOfRange)));
        // An empty active segment is left alone by the next pass.
        assert_eq!(log.enforce_retention(&all, 100_000).await.unwrap().segments, 0);
        // Appends go on after it, and a restart keeps the start.
        assert_eq!(log.append(batch(1, 10, 0), 0).await.unwrap().base_offset, 12);
        assert_eq!(headers_base(&log.read(12, 1 << 20).await.unwrap()), 12);
        log.close().await.unwrap();
        let log = PartitionLog::open(dir.clone(), cfg()).await.unwrap();
        assert_eq!((log.log_start_offset(), log.high_watermark()), (12, 13));
        log.close().await.unwrap();
    });
}

#[test]
fn an_active_segment_with_recent_records_is_kept() {
    run(|dir| async move {
        let log = twelve(&dir).await;
        // Timestamps: 1,000 for offsets 0-5, 50,000 after; at 100,000 with 60 s retention
        // only segments 0 and 3 are past it.
        let policy = RetentionPolicy { retention_ms: 60_000, ..KEEP };
        let d = log.enforce_retention(&policy, 100_000).await.unwrap();
        assert_eq!((d.segments, d.log_start_offset), (2, 6));
        assert_eq!(log.segments.borrow().last().unwrap().base_offset, 9);
        log.close().await.unwrap();
    });
}

#[test]
fn an_append_to_a_segment_older_than_segment_ms_rolls_it() {
    run(|dir| async move {
        let mut c = cfg();
        c.segment_ms = 1_000;
        let log = PartitionLog::open(dir.clone(), c).await.unwrap();
        log.append(batch(1, 10, 0), 10_000).await.unwrap();
        log.append(batch(1, 10, 0), 11_000).await.unwrap(); // exactly 1,000 ms: no roll
        log.append(batch(1, 10, 0), 11_001).await.unwrap();
        log.append(batch(1, 10, 0), 11_500).await.unwrap();
        let bases: Vec<i64> = log.segments.borrow().iter().map(|s| s.base_offset).collect();
        assert_eq!(bases, vec![0, 2]);
        log.close().await.unwrap();
    });
}

/// After a restart the active segment's age counts from its first batch's timestamp
/// (found in the file), as Kafka's `rollingBasedTimestamp`: the first append rolls an
/// old segment. Before, the age counted from that first append after the restart.
#[test]
fn after_a_restart_the_first_append_rolls_an_old_active_segment() {
    run(|dir| async move {
        let mut c = cfg();
        c.segment_ms = 1_000;
        let log = PartitionLog::open(dir.clone(), c.clone()).await.unwrap();
        log.append(batch(1, 10, 10_000), 10_000).await.unwrap();
        log.append(batch(1, 10, 10_500), 10_500).await.unwrap();
        log.close().await.unwrap();
        drop(log);
        let log = PartitionLog::open(dir.clone(), c).await.unwrap();
        log.append(batch(1, 10, 11_000), 11_000).await.unwrap(); // exactly 1,000 ms: no roll
        log.append(batch(1, 10, 11_001), 11_001).await.unwrap();
        let bases: Vec<i64> = log.segments.borrow().iter().map(|s| s.base_offset).collect();
        assert_eq!(bases, vec![0, 3]);
        log.close().await.unwrap();
    });
}

#[test]
fn the_largest_timestamp_leaves_with_its_segment() {
    run(|dir| async move {
        let mut c = cfg();
        c.segment_bytes = 4096;
        let log = PartitionLog::open(dir.clone(), c).await.unwrap();
        for ts in [90_000, 1, 1, 2, 2, 2, 2] {
            log.append(batch(1, 1000, ts), 0).await.unwrap();
        }
        assert_eq!(log.max_timestamp().await.unwrap(), Some((0, 90_000)));
        let policy = RetentionPolicy { retention_bytes: 1, ..KEEP };
        assert_eq!(log.enforce_retention(&policy, 0).await.unwrap().log_start_offset, 6);
        // The earliest record with the largest timestamp left, at offset 6.
        assert_eq!(log.max_timestamp().await.unwrap(), Some((6, 2)));
        log.close().await.unwrap();
    });
}

/// Base offset of the first batch in `b`.
fn headers_base(b: &[u8]) -> i64 {
    crate::protocol::batch::RecordBatchHeader::parse(b).unwrap().base_offset
}

/// Descriptors this process holds on files under `dir` that were unlinked (`/proc/self/fd`
/// links read "<path> (deleted)").
fn deleted_files_held(dir: &Path) -> usize {
    let prefix = dir.to_string_lossy().into_owned();
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.unwrap().path()).ok())
        .map(|t| t.to_string_lossy().into_owned())
        .filter(|t| t.starts_with(&prefix) && t.ends_with(" (deleted)"))
        .count()
}

#[test]
fn a_deleted_segment_is_closed_after_its_last_reader_and_off_the_shard() {
    run(|dir| async move {
        let log = twelve(&dir).await;
        // A read in flight holds the oldest segment.
        let reader = log.segments.borrow()[0].clone();
        let policy = RetentionPolicy { retention_ms: 60_000, ..KEEP };
        assert_eq!(log.enforce_retention(&policy, 100_000).await.unwrap().segments, 2);
        assert_eq!(files(&dir), ["00000000000000000006.log", "00000000000000000009.log"]);
        // Both deleted `.log`s stay open: each has the shard's descriptor and the second
        // one that is dropped on the blocking thread; the reader's still reads.
        glommio::timer::sleep(Duration::from_millis(300)).await;
        assert_eq!(deleted_files_held(&dir), 2 + 1);
        drop(reader);
        glommio::timer::sleep(Duration::from_millis(400)).await;
        assert_eq!(deleted_files_held(&dir), 0);
        log.close().await.unwrap();
    });
}

/// The race a real client hit (the Python retention test, one run in many): a pass
/// decided that the whole log, the active segment included, was past retention, and a
/// fresh record was appended before the writer task rolled; the roll then sealed the
/// fresh record's segment for nothing and left an extra segment.
#[test]
fn a_record_appended_after_the_pass_decided_keeps_the_active_segment_unrolled() {
    run(|dir| async move {
        let log = twelve(&dir).await;
        // At 100,000 with 0 ms retention every written record is past it: the pass
        // decides to roll the active segment (offsets 9-11) and delete all four.
        let policy = RetentionPolicy { retention_ms: 0, ..KEEP };
        let mut pass = Box::pin(log.enforce_retention(&policy, 100_000));
        assert!(futures_lite::future::poll_once(&mut pass).await.is_none(), "waits for the roll");
        // A record of this instant arrives before the writer task rolls.
        assert_eq!(log.append(batch(1, 10, 100_000), 0).await.unwrap().base_offset, 12);
        let d = pass.await.unwrap();
        assert_eq!((d.segments, d.log_start_offset), (3, 9));
        assert_eq!(files(&dir), ["00000000000000000009.log"]);
        assert_eq!(log.high_watermark(), 13);
        assert_eq!(headers_base(&log.read(9, 1 << 20).await.unwrap()), 9);
        log.close().await.unwrap();
    });
}

#[test]
fn a_pass_leaves_the_active_segment_while_an_append_is_unwritten() {
    run(|dir| async move {
        let log = twelve(&dir).await;
        let policy = RetentionPolicy { retention_ms: 0, ..KEEP };
        // Appended (offset 12 assigned on the first poll) but not yet written.
        let mut append = Box::pin(log.append(batch(1, 10, 1_000), 0));
        assert!(futures_lite::future::poll_once(&mut append).await.is_none());
        assert_eq!((log.log_end_offset(), log.high_watermark()), (13, 12));
        let d = log.enforce_retention(&policy, 100_000).await.unwrap();
        assert_eq!((d.segments, d.log_start_offset), (3, 9));
        assert_eq!(append.await.unwrap().base_offset, 12);
        assert_eq!(files(&dir), ["00000000000000000009.log"]);
        log.close().await.unwrap();
    });
}

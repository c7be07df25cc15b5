//! Start-up recovery of the active segment from its last offset index entry
//! (`recovery::recover_active`): what a start after a clean close reads, what it trusts,
//! and what a crash after such a start leaves.

use bytes::Bytes;

use super::index::OffsetIndex;
use super::recovery;
use super::tests::{cfg, run};
use super::*;
use crate::protocol::batch::testing::{build_batch, BatchSpec};

/// One record of producer 9 (epoch 0) with sequence `seq` and a 480-byte value (about
/// 550 bytes stored), timestamp `1000 + seq`.
pub(super) fn record(seq: i32) -> Bytes {
    Bytes::from(build_batch(&BatchSpec {
        records: 1,
        value_len: 480,
        base_timestamp: 1000 + seq as i64,
        producer_id: 9,
        producer_epoch: 0,
        base_sequence: seq,
        ..Default::default()
    }))
}

/// An index entry every 1,000 bytes, one segment, no cache (reads go to the file).
fn small_index() -> LogConfig {
    let mut c = cfg();
    c.index_interval_bytes = 1000;
    c.cache_bytes = 0;
    c
}

const SEGMENT: &str = "00000000000000000000";

fn index_file(dir: &std::path::Path) -> OffsetIndex {
    let size = std::fs::metadata(dir.join(format!("{SEGMENT}.log"))).unwrap().len();
    OffsetIndex::decode(&std::fs::read(dir.join(format!("{SEGMENT}.index"))).unwrap(), size)
        .unwrap()
}

/// Writes records 0..n (offsets 0..n) and closes the log cleanly.
async fn closed_log(dir: &std::path::Path, n: i32) -> Vec<u8> {
    let log = PartitionLog::open(dir.to_path_buf(), small_index()).await.unwrap();
    for seq in 0..n {
        assert_eq!(log.append(record(seq), 0).await.unwrap().base_offset, seq as i64);
    }
    log.close().await.unwrap();
    std::fs::read(dir.join(format!("{SEGMENT}.log"))).unwrap()
}

/// Recovery of `data` as the only segment file of a directory beside `dir` (no index
/// files: a whole scan).
async fn whole_scan(dir: &std::path::Path, data: &[u8]) -> recovery::Recovered {
    let whole = dir.with_file_name("whole");
    std::fs::create_dir_all(&whole).unwrap();
    std::fs::write(whole.join(format!("{SEGMENT}.log")), data).unwrap();
    recovery::recover(&whole, 1000).await.unwrap()
}

/// Flips one byte of the segment file at `pos`.
fn flip(dir: &std::path::Path, pos: usize) {
    let path = dir.join(format!("{SEGMENT}.log"));
    let mut data = std::fs::read(&path).unwrap();
    data[pos] ^= 0xFF;
    std::fs::write(&path, &data).unwrap();
}

/// After a clean close the next start scans the active segment from its last index
/// entry only: the same log end, indexes and max timestamp as a whole scan, and a byte
/// flipped before that entry goes unnoticed (the data a clean close made durable is
/// trusted, as Kafka trusts it after a clean shutdown), while one flipped after it is
/// found and cut.
#[test]
fn a_clean_close_lets_the_next_start_scan_from_the_last_index_entry() {
    run(|dir| async move {
        let full = closed_log(&dir, 20).await;
        let saved = index_file(&dir);
        let &(last_rel, last_pos) = saved.entries.last().unwrap();
        assert!(saved.entries.len() >= 8, "{} entries", saved.entries.len());

        let rec = recovery::recover(&dir, 1000).await.unwrap();
        assert_eq!(rec.active_scan_from, last_pos as u64);
        let seg = rec.segments.last().unwrap();
        assert_eq!(seg.next_offset.get(), 20);
        assert_eq!(seg.size.get(), full.len() as u64);
        assert_eq!(*seg.index.borrow(), saved, "nothing new after the last entry");
        assert_eq!(rec.max_ts, Some((1019, 19)));
        drop(rec);

        // The same, found by scanning the whole segment (no index files).
        let rec = whole_scan(&dir, &full).await;
        assert_eq!(rec.active_scan_from, 0);
        assert_eq!(*rec.segments.last().unwrap().index.borrow(), saved);
        assert_eq!(rec.segments.last().unwrap().next_offset.get(), 20);
        assert_eq!(rec.max_ts, Some((1019, 19)));
        drop(rec);

        // A flipped byte in the first record (before the last entry): not read, kept.
        flip(&dir, 100);
        let log = PartitionLog::open(dir.clone(), small_index()).await.unwrap();
        assert_eq!(log.high_watermark(), 20);
        log.close().await.unwrap();
        flip(&dir, 100);

        // A flipped byte in the last record (after it): the whole segment is scanned and
        // the data cut before that record.
        let last_record = full.len() - record(19).len();
        assert!(last_record > last_pos as usize, "the last record is after the last entry");
        flip(&dir, last_record + 100);
        let rec = recovery::recover(&dir, 1000).await.unwrap();
        assert_eq!(rec.active_scan_from, 0);
        assert_eq!(rec.segments.last().unwrap().next_offset.get(), 19);
        assert_eq!(
            std::fs::metadata(dir.join(format!("{SEGMENT}.log"))).unwrap().len(),
            last_record as u64
        );
        assert!(last_rel < 19);
    });
}

/// A start after a clean close, more records, then a crash (no close: the index files
/// and the producer snapshot on disk are the clean close's, and the file ends in zero
/// padding): the next start scans from the old last index entry, finds every record
/// written since, indexes them as a whole scan would, and rebuilds the idempotent
/// producer from the old snapshot plus the records after it (found through the index).
#[test]
fn a_crash_after_a_clean_start_recovers_everything_written_since() {
    run(|dir| async move {
        closed_log(&dir, 20).await;
        let stale = index_file(&dir);
        let log = PartitionLog::open(dir.clone(), small_index()).await.unwrap();
        for seq in 20..50 {
            assert_eq!(log.append(record(seq), 0).await.unwrap().base_offset, seq as i64);
        }
        let expect = log.read(0, 1 << 20).await.unwrap();
        drop(log);
        assert_eq!(index_file(&dir), stale, "the crash left the clean close's index");

        let rec = recovery::recover(&dir, 1000).await.unwrap();
        assert_eq!(rec.active_scan_from, stale.entries.last().unwrap().1 as u64);
        assert_eq!(rec.segments.last().unwrap().next_offset.get(), 50);
        assert_eq!(rec.segments.last().unwrap().size.get(), expect.len() as u64);
        let index = rec.segments.last().unwrap().index.borrow().clone();
        assert_eq!(rec.max_ts, Some((1049, 49)));
        drop(rec);
        // The same indexes as a whole scan of the same bytes.
        let rec = whole_scan(&dir, &expect).await;
        assert_eq!(*rec.segments.last().unwrap().index.borrow(), index);
        drop(rec);

        let log = PartitionLog::open(dir.clone(), small_index()).await.unwrap();
        assert_eq!(log.high_watermark(), 50);
        assert_eq!(log.read(0, 1 << 20).await.unwrap(), expect);
        for off in [0, 19, 20, 33, 49] {
            let got = log.read(off, 1).await.unwrap();
            let h = crate::protocol::batch::RecordBatchHeader::parse(&got).unwrap();
            assert_eq!(h.base_offset, off);
        }
        // Sequence 49 was written after the snapshot: its retry is a duplicate.
        let dup = log.append(record(49), 0).await.unwrap();
        assert_eq!((dup.base_offset, dup.duplicate), (49, true));
        assert_eq!(log.append(record(50), 0).await.unwrap().base_offset, 50);
        log.close().await.unwrap();
    });
}

/// A crash after a clean start that tears the last batch (cut anywhere inside it): the
/// scan from the last index entry cuts the torn batch as a whole scan would, without
/// falling back to one, and the index files stay. A corrupt batch after that entry
/// instead sends recovery to the whole scan, which removes the index files: they
/// disagree with the data, and once appends grow the file past their entries a later
/// start would trust them.
#[test]
fn a_torn_tail_is_cut_from_the_last_entry_and_a_corrupt_one_drops_the_index_files() {
    run(|dir| async move {
        let full = closed_log(&dir, 20).await;
        let saved = index_file(&dir);
        let last_pos = saved.entries.last().unwrap().1 as u64;
        let last_record = full.len() - record(19).len();
        let path = dir.join(format!("{SEGMENT}.log"));
        for cut in [last_record + 1, last_record + 61, full.len() - 1] {
            std::fs::write(&path, &full[..cut]).unwrap();
            let rec = recovery::recover(&dir, 1000).await.unwrap();
            assert_eq!(rec.active_scan_from, last_pos, "cut {cut}");
            assert_eq!(rec.segments.last().unwrap().next_offset.get(), 19, "cut {cut}");
            drop(rec);
            assert_eq!(std::fs::metadata(&path).unwrap().len(), last_record as u64);
            assert_eq!(index_file(&dir), saved, "cut {cut}: the index files stay");
        }
        std::fs::write(&path, &full).unwrap();
        flip(&dir, last_record + 100);
        let rec = recovery::recover(&dir, 1000).await.unwrap();
        assert_eq!(rec.active_scan_from, 0);
        drop(rec);
        for ext in ["index", "timeindex"] {
            assert!(!dir.join(format!("{SEGMENT}.{ext}")).exists(), "{ext} removed");
        }
    });
}

/// Fails the offset index's write, as a full disk or a crash between the two would.
fn offset_index_fails(path: &std::path::Path, data: &[u8]) -> std::io::Result<()> {
    if path.extension().is_some_and(|e| e == "index") {
        return Err(std::io::Error::other("no space left"));
    }
    std::fs::write(path, data)
}

/// The time index is written before the offset index: a stop between the two leaves an
/// older offset index (recovery scans more) beside a newer time index, never an offset
/// index past what the time index covers.
#[test]
fn the_time_index_is_written_before_the_offset_index() {
    run(|dir| async move {
        closed_log(&dir, 20).await;
        let old_index = std::fs::read(dir.join(format!("{SEGMENT}.index"))).unwrap();
        let old_time = std::fs::read(dir.join(format!("{SEGMENT}.timeindex"))).unwrap();
        let log = PartitionLog::open(dir.clone(), small_index()).await.unwrap();
        for seq in 20..40 {
            log.append(record(seq), 0).await.unwrap();
        }
        let seg = log.active();
        seg.finish_time_index();
        assert!(seg.save_indexes_with(offset_index_fails).is_err());
        drop(seg);
        drop(log);
        assert_eq!(std::fs::read(dir.join(format!("{SEGMENT}.index"))).unwrap(), old_index);
        assert_ne!(std::fs::read(dir.join(format!("{SEGMENT}.timeindex"))).unwrap(), old_time);
        // The next start scans from the old entry and finds all 40 records.
        let rec = recovery::recover(&dir, 1000).await.unwrap();
        assert_eq!(rec.segments.last().unwrap().next_offset.get(), 40);
        assert_eq!(rec.max_ts, Some((1039, 39)));
    });
}

/// Rewrites the last entry of the segment's offset index file.
fn set_last_entry(dir: &std::path::Path, rel: u32, pos: u32) {
    let path = dir.join(format!("{SEGMENT}.index"));
    let mut b = std::fs::read(&path).unwrap();
    let n = b.len();
    b[n - 8..n - 4].copy_from_slice(&rel.to_be_bytes());
    b[n - 4..].copy_from_slice(&pos.to_be_bytes());
    std::fs::write(&path, &b).unwrap();
}

/// A last index entry that does not name the batch starting at its position (found by
/// a breaker: one pointing into the zeros after the data of a crashed log was taken for
/// the end of the data, and every record after it was cut) sends recovery to the whole
/// scan: into the zero fill, into the middle of a batch, at another batch, or with
/// another offset. Every record survives each.
#[test]
fn a_last_index_entry_not_naming_its_batch_sends_recovery_to_the_whole_scan() {
    run(|dir| async move {
        closed_log(&dir, 20).await;
        let log = PartitionLog::open(dir.clone(), small_index()).await.unwrap();
        for seq in 20..30 {
            log.append(record(seq), 0).await.unwrap();
        }
        let expect = log.read(0, 1 << 20).await.unwrap();
        drop(log); // a crash: the file ends in zero fill
        let file_len = std::fs::metadata(dir.join(format!("{SEGMENT}.log"))).unwrap().len();
        assert!(file_len > expect.len() as u64 + 100, "zero fill after the data");
        let saved = index_file(&dir);
        let (rel, pos) = *saved.entries.last().unwrap();
        let next_batch = pos + record(0).len() as u32;
        let zeros = expect.len() as u32 + 40;
        for (i, (r, p)) in [(rel, zeros), (rel, pos + 40), (rel, next_batch), (rel + 1, pos)]
            .into_iter()
            .enumerate()
        {
            // (The whole scan of the case before removed the index files.)
            std::fs::write(dir.join(format!("{SEGMENT}.index")), saved.encode()).unwrap();
            set_last_entry(&dir, r, p);
            let rec = recovery::recover(&dir, 1000).await.unwrap();
            assert_eq!(rec.active_scan_from, 0, "case {i}");
            assert_eq!(rec.segments.last().unwrap().next_offset.get(), 30, "case {i}");
            drop(rec);
        }
        let log = PartitionLog::open(dir.clone(), small_index()).await.unwrap();
        assert_eq!(log.read(0, 1 << 20).await.unwrap(), expect);
        log.close().await.unwrap();
    });
}

/// Writes records 0..30 (offset `seq`, timestamp 1000 + `seq`) into 4 KiB segments and
/// closes the log; its config and the segments' base offsets (at least 3).
async fn sealed_segments(dir: &std::path::Path) -> (LogConfig, Vec<i64>) {
    let mut c = small_index();
    c.segment_bytes = 4096;
    let log = PartitionLog::open(dir.to_path_buf(), c.clone()).await.unwrap();
    for seq in 0..30 {
        log.append(record(seq), 0).await.unwrap();
    }
    log.close().await.unwrap();
    let bases = recovery::list_segments(dir).unwrap();
    assert!(bases.len() >= 3, "{bases:?}");
    (c, bases)
}

/// A sealed segment's index files are trusted when they decode, but not with an entry
/// naming an offset at or past the next segment's base (a helper appended one such
/// well-formed entry to a `.timeindex`: every later max-timestamp lookup failed with
/// KAFKA_STORAGE_ERROR, across restarts): the segment is scanned and its files rewritten.
#[test]
fn a_sealed_segments_index_entry_past_its_end_sends_it_to_a_scan() {
    run(|dir| async move {
        let (c, bases) = sealed_segments(&dir).await;
        let first = dir.join(format!("{SEGMENT}.timeindex"));
        let good = std::fs::read(&first).unwrap();
        // (a timestamp later than all, the relative offset of the next segment's base)
        let mut damaged = good.clone();
        damaged.extend_from_slice(&5000i64.to_be_bytes());
        damaged.extend_from_slice(&(bases[1] as u32).to_be_bytes());
        std::fs::write(&first, damaged).unwrap();
        let rec = recovery::recover(&dir, 1000).await.unwrap();
        assert_eq!(rec.max_ts, Some((1029, 29)));
        let sealed = &rec.segments[0];
        assert_eq!(sealed.max_ts.get().map(|m| m.0), Some(1000 + bases[1] - 1));
        assert_eq!(std::fs::read(&first).unwrap(), good, "rewritten by the scan");
        // Same for an offset index entry past the end.
        let index = dir.join(format!("{SEGMENT}.index"));
        let good = std::fs::read(&index).unwrap();
        let mut damaged = good.clone();
        // (the next segment's base, a position inside the file after the last entry's:
        // the entry decodes)
        let last_pos = OffsetIndex::decode(&good, u64::MAX).unwrap().entries.last().unwrap().1;
        damaged.extend_from_slice(
            &[&(bases[1] as u32).to_be_bytes()[..], &(last_pos + 1).to_be_bytes()].concat(),
        );
        drop(rec);
        std::fs::write(&index, damaged).unwrap();
        let log = PartitionLog::open(dir.clone(), c).await.unwrap();
        assert_eq!(std::fs::read(&index).unwrap(), good);
        assert_eq!(log.high_watermark(), 30);
        log.close().await.unwrap();
    });
}

/// A `.timeindex` extended but never written before a power loss reads as zeros: one
/// all-zero entry (timestamp 0 at the segment's base) decodes, and trusted it made the
/// segment's max timestamp 0, so `offsets_for_times` answered with the next segment's
/// base for any timestamp inside it (found by a helper zeroing a sealed segment's file).
/// Such an entry sends the segment to a scan, which rewrites the file.
#[test]
fn an_all_zero_time_index_entry_sends_the_segment_to_a_scan() {
    run(|dir| async move {
        let (c, _) = sealed_segments(&dir).await;
        let first = dir.join(format!("{SEGMENT}.timeindex"));
        let good = std::fs::read(&first).unwrap();
        std::fs::write(&first, [0u8; 12]).unwrap();
        let log = PartitionLog::open(dir.clone(), c.clone()).await.unwrap();
        assert_eq!(std::fs::read(&first).unwrap(), good, "rewritten by the scan");
        // Record `seq` has offset `seq` and timestamp 1000 + seq.
        assert_eq!(log.offset_for_timestamp(1001).await.unwrap(), Some((1, 1001)));
        assert_eq!(log.max_timestamp().await.unwrap(), Some((29, 1029)));
        log.close().await.unwrap();
    });
}

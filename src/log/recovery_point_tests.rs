//! Recovery points (`recovery_point.rs`): a log that never closed cleanly is recovered
//! after a crash from the last point, not by a scan of its whole active segment.

use super::index::OffsetIndex;
use super::producer_state::ProducerState;
use super::recovery;
use super::recovery_tests::record;
use super::tests::{cfg, run};
use super::*;

/// Bytes between two recovery points in these tests.
const EVERY: u64 = 5000;

/// An index entry every 1,000 bytes, a recovery point every [`EVERY`], no cache.
fn config(flush: FlushPolicy) -> LogConfig {
    let mut c = cfg();
    c.index_interval_bytes = 1000;
    c.cache_bytes = 0;
    c.flush = flush;
    c.recovery_point_bytes = EVERY;
    c
}

const SEGMENT: &str = "00000000000000000000";

fn index_file(dir: &std::path::Path) -> Option<OffsetIndex> {
    let size = std::fs::metadata(dir.join(format!("{SEGMENT}.log"))).unwrap().len();
    let bytes = std::fs::read(dir.join(format!("{SEGMENT}.index"))).ok()?;
    OffsetIndex::decode(&bytes, size)
}

fn snapshot_offset(dir: &std::path::Path) -> Option<i64> {
    let bytes = std::fs::read(dir.join(recovery::SNAPSHOT_FILE)).ok()?;
    ProducerState::decode_snapshot(&bytes).map(|(_, at)| at)
}

/// Records (of `len` bytes each, appended one at a time) at which a point is taken
/// when one is due every [`EVERY`] bytes.
fn points(records: u64, len: u64) -> Vec<u64> {
    let mut at = 0;
    let mut out = Vec::new();
    for n in 1..=records {
        if n * len - at >= EVERY {
            at = n * len;
            out.push(n);
        }
    }
    out
}

/// A log that never closes: every [`EVERY`] bytes its index files and producer
/// snapshot are brought up to the records written; after a crash recovery scans from
/// the last point's last index entry (with recovery points off: from 0), finds every
/// record, indexes them as a whole scan would, and rebuilds the idempotent producer from
/// the point's snapshot plus the records after it.
#[test]
fn a_crash_recovers_from_the_last_recovery_point() {
    run(|dir| async move {
        let len = record(0).len() as u64;
        let expected = points(50, len);
        assert_eq!(expected.len(), 5, "{expected:?}");
        let log = PartitionLog::open(dir.clone(), config(FlushPolicy::Always)).await.unwrap();
        for seq in 0..50 {
            assert_eq!(log.append(record(seq), 0).await.unwrap().base_offset, seq as i64);
            let taken = expected.iter().filter(|&&n| n <= seq as u64 + 1).count() as u64;
            assert_eq!(log.recovery_points.get(), taken, "after record {seq}");
        }
        let expect = log.read(0, 1 << 20).await.unwrap();
        let last = *expected.last().unwrap();
        let in_memory = log.segments.borrow()[0].index.borrow().clone();
        drop(log); // a crash: no close

        // The files hold what the last point saw.
        let saved = index_file(&dir).expect("index file written by the recovery points");
        let upto = in_memory.entries.iter().take_while(|e| u64::from(e.1) < last * len).count();
        assert_eq!(saved.entries, in_memory.entries[..upto]);
        assert_eq!(snapshot_offset(&dir), Some(last as i64));

        let rec = recovery::recover(&dir, 1000).await.unwrap();
        let from = u64::from(saved.entries.last().unwrap().1);
        assert_eq!(rec.active_scan_from, from);
        assert!(from >= (last - 2) * len, "{from}: within an index interval of the point");
        assert_eq!(rec.segments[0].next_offset.get(), 50);
        assert_eq!(rec.segments[0].size.get(), expect.len() as u64);
        assert_eq!(*rec.segments[0].index.borrow(), in_memory);
        assert_eq!(rec.max_ts, Some((1049, 49)));
        drop(rec);

        let log = PartitionLog::open(dir.clone(), config(FlushPolicy::Always)).await.unwrap();
        assert_eq!(log.high_watermark(), 50);
        assert_eq!(log.read(0, 1 << 20).await.unwrap(), expect);
        // Sequence 49 came after the snapshot, 45 before it: both retries are
        // duplicates (the producer's last five batches are remembered).
        for seq in [49, 45] {
            let dup = log.append(record(seq), 0).await.unwrap();
            assert_eq!((dup.base_offset, dup.duplicate), (seq as i64, true));
        }
        assert_eq!(log.append(record(50), 0).await.unwrap().base_offset, 50);
        log.close().await.unwrap();

        // The same log without recovery points: a crash scans the whole segment.
        let other = dir.join("off");
        let mut c = config(FlushPolicy::Always);
        c.recovery_point_bytes = 0;
        let log = PartitionLog::open(other.clone(), c).await.unwrap();
        for seq in 0..50 {
            log.append(record(seq), 0).await.unwrap();
        }
        assert_eq!(log.recovery_points.get(), 0);
        drop(log);
        assert_eq!(index_file(&other), None);
        assert_eq!(recovery::recover(&other, 1000).await.unwrap().active_scan_from, 0);
    });
}

/// Under `--flush interval` a point is written only after the next fdatasync (its
/// entries then point at durable data); a roll starts counting again from the new
/// segment's start.
#[test]
fn under_the_interval_policy_a_point_waits_for_the_fdatasync() {
    run(|dir| async move {
        let len = record(0).len() as u64;
        let mut c = config(FlushPolicy::Interval);
        c.flush_interval_ms = 2000;
        let log = PartitionLog::open(dir.clone(), c).await.unwrap();
        let n = points(50, len)[0];
        for seq in 0..n as i32 {
            log.append(record(seq), 0).await.unwrap();
        }
        assert_eq!(log.recovery_points.get(), 0);
        assert_eq!(index_file(&dir), None);
        assert_eq!(snapshot_offset(&dir), None);
        glommio::timer::sleep(std::time::Duration::from_millis(2500)).await;
        assert_eq!(log.recovery_points.get(), 1);
        assert!(index_file(&dir).is_some_and(|ix| !ix.entries.is_empty()));
        assert_eq!(snapshot_offset(&dir), Some(n as i64));
        log.close().await.unwrap();
    });
}

//! DeleteRecords on one partition (`start_offset.rs`): Kafka's bounds, the logical start
//! inside a batch, its checkpoint across restarts, and the segments it frees.

use std::path::Path;

use super::start_offset::{DeleteRecordsError, LOG_START_FILE};
use super::tests::{batch, cfg, run};
use super::*;

/// Two 5-record batches: offsets 0..=4 (timestamps 1,000..=1,004) and 5..=9 (2,000..).
async fn two_batches(dir: &Path) -> Rc<PartitionLog> {
    let log = PartitionLog::open(dir.to_path_buf(), cfg()).await.unwrap();
    log.append(batch(5, 10, 1_000), 0).await.unwrap();
    log.append(batch(5, 10, 2_000), 0).await.unwrap();
    assert_eq!(log.high_watermark(), 10);
    log
}

fn base(b: &[u8]) -> i64 {
    crate::protocol::batch::RecordBatchHeader::parse(b).unwrap().base_offset
}

fn bases(log: &PartitionLog) -> Vec<i64> {
    log.segments.borrow().iter().map(|s| s.base_offset).collect()
}

#[test]
fn the_start_moves_inside_a_batch_never_back_and_survives_a_restart() {
    run(|dir| async move {
        let log = two_batches(&dir).await;
        assert_eq!(log.delete_records(3).await.unwrap(), 3);
        assert_eq!(log.log_start_offset(), 3);
        assert!(matches!(log.read(2, 1 << 20).await, Err(ReadError::OffsetOutOfRange)));
        // A read at the start returns the whole batch that holds it, as Kafka's does.
        assert_eq!(base(&log.read(3, 1 << 20).await.unwrap()), 0);
        // A lower offset changes nothing and answers the current start.
        assert_eq!(log.delete_records(2).await.unwrap(), 3);
        assert_eq!(log.delete_records(3).await.unwrap(), 3);
        assert_eq!(std::fs::read_to_string(dir.join(LOG_START_FILE)).unwrap(), "3\n");
        log.close().await.unwrap();
        let log = PartitionLog::open(dir.clone(), cfg()).await.unwrap();
        assert_eq!((log.log_start_offset(), log.high_watermark()), (3, 10));
        assert!(matches!(log.read(2, 1 << 20).await, Err(ReadError::OffsetOutOfRange)));
        log.close().await.unwrap();
    });
}

#[test]
fn minus_one_is_the_high_watermark_and_anything_above_it_is_out_of_range() {
    run(|dir| async move {
        let log = two_batches(&dir).await;
        for bad in [11, i64::MAX, -2, i64::MIN] {
            assert!(
                matches!(log.delete_records(bad).await, Err(DeleteRecordsError::OffsetOutOfRange)),
                "{bad}"
            );
        }
        assert_eq!(log.log_start_offset(), 0);
        assert!(!dir.join(LOG_START_FILE).exists());
        assert_eq!(log.delete_records(-1).await.unwrap(), 10);
        assert_eq!(log.read(10, 1 << 20).await.unwrap().len(), 0);
        assert!(matches!(log.read(9, 1 << 20).await, Err(ReadError::OffsetOutOfRange)));
        assert_eq!(log.append(batch(1, 10, 0), 0).await.unwrap().base_offset, 10);
        assert_eq!(base(&log.read(10, 1 << 20).await.unwrap()), 10);
        log.close().await.unwrap();
    });
}

#[test]
fn sealed_segments_wholly_below_the_start_are_deleted_but_never_the_active_one() {
    run(|dir| async move {
        let mut c = cfg();
        c.segment_bytes = 4096;
        let log = PartitionLog::open(dir.clone(), c).await.unwrap();
        for _ in 0..12 {
            log.append(batch(1, 1000, 0), 0).await.unwrap();
        }
        assert_eq!(bases(&log), vec![0, 3, 6, 9]);
        // Segment 6 holds 6..=8: the start at 7 keeps it.
        assert_eq!(log.delete_records(7).await.unwrap(), 7);
        assert_eq!(bases(&log), vec![6, 9]);
        assert!(!dir.join("00000000000000000000.log").exists());
        assert!(!dir.join("00000000000000000003.index").exists());
        assert_eq!(log.delete_records(-1).await.unwrap(), 12);
        assert_eq!(bases(&log), vec![9]);
        // Retention does not move the logical start back to the first segment's base.
        let all =
            super::retention::RetentionPolicy { retention_ms: 0, retention_bytes: 0, delete: true };
        assert_eq!(log.enforce_retention(&all, 1 << 40).await.unwrap().log_start_offset, 12);
        log.close().await.unwrap();
        let log = PartitionLog::open(dir.clone(), cfg()).await.unwrap();
        assert_eq!((log.log_start_offset(), log.high_watermark()), (12, 12));
        assert_eq!(log.append(batch(1, 10, 0), 0).await.unwrap().base_offset, 12);
        log.close().await.unwrap();
    });
}

#[test]
fn timestamp_lookups_skip_the_records_below_the_start() {
    run(|dir| async move {
        let log = two_batches(&dir).await;
        log.delete_records(2).await.unwrap();
        assert_eq!(log.offset_for_timestamp(0).await.unwrap(), Some((2, 1_002)));
        assert_eq!(log.offset_for_timestamp(1_003).await.unwrap(), Some((3, 1_003)));
        // Every record of the first batch at or after 1,001 is below a start of 5 now,
        // so the answer is the first record of the second batch.
        log.delete_records(5).await.unwrap();
        assert_eq!(log.offset_for_timestamp(1_001).await.unwrap(), Some((5, 2_000)));
        // The largest timestamp is still found (Kafka does not filter it by the start).
        assert_eq!(log.max_timestamp().await.unwrap(), Some((9, 2_004)));
        log.close().await.unwrap();
    });
}

#[test]
fn a_checkpoint_past_the_end_or_unreadable_does_not_break_the_open() {
    run(|dir| async move {
        two_batches(&dir).await.close().await.unwrap();
        std::fs::write(dir.join(LOG_START_FILE), "100\n").unwrap();
        let log = PartitionLog::open(dir.clone(), cfg()).await.unwrap();
        assert_eq!((log.log_start_offset(), log.high_watermark()), (10, 10));
        log.close().await.unwrap();
        std::fs::write(dir.join(LOG_START_FILE), "not a number").unwrap();
        let log = PartitionLog::open(dir.clone(), cfg()).await.unwrap();
        assert_eq!(log.log_start_offset(), 0);
        log.close().await.unwrap();
    });
}

#[test]
fn a_closed_log_refuses_with_a_storage_error() {
    run(|dir| async move {
        let log = two_batches(&dir).await;
        log.close().await.unwrap();
        assert!(matches!(log.delete_records(3).await, Err(DeleteRecordsError::Io(_))));
    });
}

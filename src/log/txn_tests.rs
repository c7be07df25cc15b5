//! Transactions in the partition log: the last stable offset, read_committed reads,
//! the aborted-transaction index and their recovery (KIP-98).

use bytes::Bytes;

use super::tests::{batch, cfg, run};
use super::txn_index::AbortedTxn;
use super::*;
use crate::protocol::batch::testing::{build_batch, BatchSpec};
use crate::protocol::batch::{BatchIter, ATTR_TRANSACTIONAL};
use crate::protocol::control::{encode_marker_batch, ControlType, EndTxnMarker};

/// A transactional batch of `n` records of producer `pid`, epoch 0, from sequence `seq`.
fn txn(pid: i64, seq: i32, n: usize) -> Bytes {
    Bytes::from(build_batch(&BatchSpec {
        records: n,
        producer_id: pid,
        producer_epoch: 0,
        base_sequence: seq,
        attributes: ATTR_TRANSACTIONAL,
        ..Default::default()
    }))
}

fn plain_of(pid: i64, seq: i32) -> Bytes {
    Bytes::from(build_batch(&BatchSpec {
        producer_id: pid,
        producer_epoch: 0,
        base_sequence: seq,
        ..Default::default()
    }))
}

fn marker(pid: i64, control_type: ControlType, coordinator_epoch: i32) -> Bytes {
    encode_marker_batch(pid, 0, EndTxnMarker { control_type, coordinator_epoch }, 5).unwrap()
}

/// (base offset, last offset) of every batch in `b`.
fn ranges(b: &[u8]) -> Vec<(i64, i64)> {
    BatchIter::new(b).map(|x| x.unwrap().1).map(|h| (h.base_offset, h.last_offset())).collect()
}

fn aborted(pid: i64, first: i64, last: i64, lso: i64) -> AbortedTxn {
    AbortedTxn { producer_id: pid, first_offset: first, last_offset: last, last_stable_offset: lso }
}

/// Offsets 0-1 plain; producer 1's transaction 2-4; producer 2's from 5; 6 plain;
/// producer 1 aborts at 7.
async fn two_transactions(log: &PartitionLog) {
    log.append(batch(2, 5, 0), 0).await.unwrap();
    assert_eq!(log.append(txn(1, 0, 3), 0).await.unwrap().base_offset, 2);
    assert_eq!(log.append(txn(2, 0, 1), 0).await.unwrap().base_offset, 5);
    assert_eq!(log.append(batch(1, 5, 0), 0).await.unwrap().base_offset, 6);
    assert_eq!(log.append(marker(1, ControlType::Abort, 0), 0).await.unwrap().base_offset, 7);
}

#[test]
fn read_committed_stops_at_the_first_open_transaction_and_lists_the_aborted_ones() {
    run(|dir| async move {
        let log = PartitionLog::open(dir.clone(), cfg()).await.unwrap();
        assert_eq!(log.last_stable_offset(), 0);
        two_transactions(&log).await;
        assert_eq!((log.high_watermark(), log.last_stable_offset()), (8, 5));
        let (records, list) = log.read_committed(0, 1 << 20).await.unwrap();
        assert_eq!(ranges(&records), vec![(0, 1), (2, 4)]);
        assert_eq!(list, vec![aborted(1, 2, 7, 5)]);
        // read_uncommitted sees everything.
        assert_eq!(ranges(&log.read(0, 1 << 20).await.unwrap()).len(), 5);
        // At the stable offset: nothing yet, not an error.
        assert_eq!(log.read_committed(5, 1 << 20).await.unwrap(), (Bytes::new(), vec![]));
        assert!(matches!(log.read_committed(9, 1 << 20).await, Err(ReadError::OffsetOutOfRange)));
        // Producer 2 commits at 8: stable up to the end.
        log.append(marker(2, ControlType::Commit, 0), 0).await.unwrap();
        assert_eq!(log.last_stable_offset(), 9);
        let (records, list) = log.read_committed(5, 1 << 20).await.unwrap();
        assert_eq!(ranges(&records), vec![(5, 5), (6, 6), (7, 7), (8, 8)]);
        assert_eq!(list, vec![aborted(1, 2, 7, 5)]);
        let (_, list) = log.read_committed(8, 1 << 20).await.unwrap();
        assert_eq!(list, vec![]);
        // The index file has the entry in Kafka's layout.
        let file = std::fs::read(dir.join("00000000000000000000.txnindex")).unwrap();
        assert_eq!(AbortedTxn::decode_all(&file), (vec![aborted(1, 2, 7, 5)], true));
        // Producer 1 writes outside a transaction again.
        assert_eq!(log.append(plain_of(1, 3), 0).await.unwrap().base_offset, 9);
        log.close().await.unwrap();
    });
}

#[test]
fn transaction_rules_at_append() {
    run(|dir| async move {
        let log = PartitionLog::open(dir.clone(), cfg()).await.unwrap();
        log.append(txn(1, 0, 2), 0).await.unwrap();
        // A plain batch while its transaction is ongoing.
        let e = log.append(plain_of(1, 2), 0).await.unwrap_err();
        assert!(matches!(e, AppendError::InvalidTxnState));
        assert_eq!(crate::error::ResponseError::from(&e).code(), 48);
        log.append(marker(1, ControlType::Commit, 4), 0).await.unwrap();
        // A later marker from an older coordinator epoch.
        let e = log.append(marker(1, ControlType::Abort, 3), 0).await.unwrap_err();
        assert!(matches!(e, AppendError::CoordinatorFenced));
        assert_eq!(crate::error::ResponseError::from(&e).code(), 52);
        // A control batch whose record is not a marker value: refused as INVALID_RECORD.
        let mut bad = marker(1, ControlType::Abort, 4).to_vec();
        let at = bad.len() - 7; // the value's version
        bad[at + 1] = 9;
        let crc = crate::protocol::batch::compute_crc(&bad);
        bad[17..21].copy_from_slice(&crc.to_be_bytes());
        let e = log.append(Bytes::from(bad), 0).await.unwrap_err();
        assert_eq!(crate::error::ResponseError::from(&e).code(), 87);
        assert_eq!(log.high_watermark(), 3);
        log.close().await.unwrap();
    });
}

#[test]
fn transactions_and_aborted_ones_survive_a_restart_and_a_crash() {
    run(|dir| async move {
        let log = PartitionLog::open(dir.clone(), cfg()).await.unwrap();
        two_transactions(&log).await;
        log.close().await.unwrap();
        drop(log);
        // Closed: from the snapshot and the index file.
        let log = PartitionLog::open(dir.clone(), cfg()).await.unwrap();
        assert_eq!(log.last_stable_offset(), 5);
        assert_eq!(log.read_committed(0, 1 << 20).await.unwrap().1, vec![aborted(1, 2, 7, 5)]);
        // Producer 2 aborts too, then a crash (no close, no snapshot of it).
        log.append(marker(2, ControlType::Abort, 0), 0).await.unwrap();
        log.append(txn(3, 0, 1), 0).await.unwrap(); // 9, ongoing
        drop(log);
        std::fs::remove_file(dir.join(recovery::SNAPSHOT_FILE)).unwrap();
        std::fs::remove_file(dir.join("00000000000000000000.txnindex")).unwrap();
        // Everything rebuilt by replaying the active segment; the index file rewritten.
        let log = PartitionLog::open(dir.clone(), cfg()).await.unwrap();
        assert_eq!((log.high_watermark(), log.last_stable_offset()), (10, 9));
        let want = vec![aborted(1, 2, 7, 5), aborted(2, 5, 8, 9)];
        assert_eq!(log.read_committed(0, 1 << 20).await.unwrap().1, want);
        let file = std::fs::read(dir.join("00000000000000000000.txnindex")).unwrap();
        assert_eq!(AbortedTxn::decode_all(&file), (want.clone(), true));
        let e = log.append(plain_of(3, 1), 0).await.unwrap_err();
        assert!(matches!(e, AppendError::InvalidTxnState));
        log.append(marker(3, ControlType::Commit, 0), 0).await.unwrap();
        assert_eq!(log.last_stable_offset(), 11);
        log.close().await.unwrap();
    });
}

#[test]
fn a_segment_roll_keeps_each_abort_in_its_segments_index() {
    run(|dir| async move {
        let mut c = cfg();
        c.segment_bytes = 4096;
        let log = PartitionLog::open(dir.clone(), c.clone()).await.unwrap();
        log.append(txn(1, 0, 1), 0).await.unwrap(); // 0
        log.append(
            Bytes::from(build_batch(&BatchSpec { value_len: 4000, ..Default::default() })),
            0,
        )
        .await
        .unwrap(); // 1
        log.append(marker(1, ControlType::Abort, 0), 0).await.unwrap(); // 2, third segment
        assert_eq!(log.segment_count(), 3); // 0, 1 (the big batch), 2 (the marker)
        assert!(!dir.join("00000000000000000000.txnindex").exists());
        let file = std::fs::read(dir.join("00000000000000000002.txnindex")).unwrap();
        assert_eq!(AbortedTxn::decode_all(&file).0, vec![aborted(1, 0, 2, 3)]);
        // The consumer starting in the first segment learns of it too.
        assert_eq!(log.read_committed(0, 1 << 20).await.unwrap().1, vec![aborted(1, 0, 2, 3)]);
        log.close().await.unwrap();
    });
}

#[test]
fn the_last_stable_offset_is_never_below_the_log_start() {
    run(|dir| async move {
        let log = PartitionLog::open(dir.clone(), cfg()).await.unwrap();
        log.append(batch(3, 5, 0), 0).await.unwrap(); // 0-2
        log.append(txn(1, 0, 3), 0).await.unwrap(); // 3-5, open
        log.append(batch(3, 5, 0), 0).await.unwrap(); // 6-8
        assert_eq!(log.last_stable_offset(), 3);
        // DeleteRecords past the open transaction's start (Kafka clamps there too).
        assert_eq!(log.delete_records(5).await.unwrap(), 5);
        assert_eq!(log.last_stable_offset(), 5);
        assert_eq!(log.read_committed(5, 1 << 20).await.unwrap().0, Bytes::new());
        log.append(marker(1, ControlType::Commit, 0), 0).await.unwrap(); // 9
        assert_eq!(log.last_stable_offset(), 10);
        log.close().await.unwrap();
    });
}

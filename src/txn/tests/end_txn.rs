//! EndTxn, the markers and the completion (Kafka's `TransactionCoordinatorTest`, TV0
//! and TV2 clients).

use super::*;
use TransactionVersion::{Tv0, Tv2};
use TxnResult::{Abort, Commit};

/// An id with producer 500 at `epoch` in an Ongoing transaction on t-0 and t-1.
fn ongoing(epoch: i16) -> H {
    let mut h = H::new();
    h.put("tx", &meta(500, epoch, TxnState::Ongoing, &[("t", 0), ("t", 1)]));
    h
}

#[test]
fn request_and_producer_checks() {
    for v in [Tv0, Tv2] {
        let mut h = H::new();
        assert_eq!(h.end("", pe(0, 0), Commit, v), Err(ResponseError::InvalidRequest));
        assert_eq!(h.end("tx", pe(0, 0), Commit, v), Err(ResponseError::InvalidProducerIdMapping));
        h.put("tx", &meta(10, 0, TxnState::Ongoing, &[]));
        assert_eq!(h.end("tx", pe(0, 0), Commit, v), Err(ResponseError::InvalidProducerIdMapping));
        h.put("tx", &meta(500, 5, TxnState::Ongoing, &[]));
        assert_eq!(h.end("tx", pe(500, 0), Commit, v), Err(ResponseError::ProducerFenced));
        assert_eq!(h.end("tx", pe(500, 6), Commit, v), Err(ResponseError::ProducerFenced));
    }
    let mut c = TxnCoordinator::new(TxnConfig::default());
    let d = c.end_txn("tx", 0, 0, Commit, Tv0, None, T0);
    assert_eq!(d, Decision::Answer(Err(ResponseError::NotCoordinator)));
    c.begin_load(c.partition_for("tx"), EPOCH);
    let d = c.end_txn("tx", 0, 0, Commit, Tv0, None, T0);
    assert_eq!(d, Decision::Answer(Err(ResponseError::CoordinatorLoadInProgress)));
}

#[test]
fn tv0_commit_prepares_sends_markers_then_completes() {
    let mut h = ongoing(4);
    h.now = T0 + 30;
    let d = h.c.end_txn("tx", 500, 4, Commit, Tv0, None, h.now);
    let Decision::Write(w) = d else { panic!("{d:?}") };
    let prepared = TxnMetadata {
        state: TxnState::PrepareCommit,
        last_update_timestamp_ms: T0 + 30,
        ..meta(500, 4, TxnState::Ongoing, &[("t", 0), ("t", 1)])
    };
    assert_eq!(w.record, TxnRecord::of("tx", &prepared, 0));
    assert_eq!(h.c.pending_state("tx"), Some(TxnState::PrepareCommit));
    h.now = T0 + 40;
    let done = h.write(&w);
    assert_eq!(done.answer, Ok(pe(500, 4)));
    let markers = done.markers.unwrap();
    assert_eq!(
        (markers.producer_id, markers.producer_epoch, markers.result, markers.coordinator_epoch),
        (500, 4, Commit, EPOCH)
    );
    assert_eq!(markers.partitions, parts(&[("t", 0), ("t", 1)]));
    assert_eq!(h.m("tx"), prepared);
    assert_eq!(h.c.pending_state("tx"), Some(TxnState::CompleteCommit));
    // A retry while the markers are out.
    assert_eq!(h.end("tx", pe(500, 4), Commit, Tv0), Err(ResponseError::ConcurrentTransactions));
    assert_eq!(h.end("tx", pe(500, 4), Abort, Tv0), Err(ResponseError::ConcurrentTransactions));
    h.now = T0 + 90;
    let w = h.c.markers_written(&markers).unwrap();
    // The completion is stamped when the prepare was written.
    let completed = TxnMetadata {
        state: TxnState::CompleteCommit,
        partitions: parts(&[]),
        last_update_timestamp_ms: T0 + 40,
        ..prepared
    };
    assert_eq!(w.record, TxnRecord::of("tx", &completed, 0));
    assert_eq!(h.write(&w), WriteDone { answer: Ok(pe(500, 4)), markers: None });
    assert_eq!(h.m("tx"), completed);
    assert_eq!(h.c.pending_state("tx"), None);
    // Retries of the finished EndTxn.
    assert_eq!(h.end("tx", pe(500, 4), Commit, Tv0), Ok(pe(500, 4)));
    assert_eq!(h.end("tx", pe(500, 4), Abort, Tv0), Err(ResponseError::InvalidTxnState));
    // A new transaction.
    assert_eq!(h.add("tx", pe(500, 4), &[("u", 0)]), Ok(()));
    assert_eq!(h.m("tx").start_timestamp_ms, T0 + 90);
}

#[test]
fn tv0_abort_and_its_retries() {
    let mut h = ongoing(4);
    assert_eq!(h.end("tx", pe(500, 4), Abort, Tv0), Ok(pe(500, 4)));
    assert_eq!(h.markers.last().unwrap().result, Abort);
    assert_eq!(h.state("tx"), TxnState::PrepareAbort);
    h.complete_markers();
    assert_eq!(h.state("tx"), TxnState::CompleteAbort);
    assert_eq!(h.end("tx", pe(500, 4), Abort, Tv0), Ok(pe(500, 4)));
    assert_eq!(h.end("tx", pe(500, 4), Commit, Tv0), Err(ResponseError::InvalidTxnState));
}

#[test]
fn ending_an_empty_transaction_is_an_invalid_state() {
    let mut h = H::new();
    h.put("tx", &meta(500, 4, TxnState::Empty, &[]));
    for v in [Tv0, Tv2] {
        assert_eq!(h.end("tx", pe(500, 4), Commit, v), Err(ResponseError::InvalidTxnState));
        assert_eq!(h.end("tx", pe(500, 4), Abort, v), Err(ResponseError::InvalidTxnState));
    }
}

#[test]
fn an_epoch_other_than_the_current_after_completion_is_fenced() {
    for v in [Tv0, Tv2] {
        let mut h = H::new();
        h.put(
            "tx",
            &TxnMetadata {
                client_transaction_version: v,
                ..meta(500, 2, TxnState::CompleteCommit, &[])
            },
        );
        // TV0 must match; TV2 accepts only the epoch before the bump (1).
        let ok_epoch = if v == Tv2 { 1 } else { 2 };
        for epoch in [0, 1, 2, 3] {
            let expect =
                if epoch == ok_epoch { Ok(pe(500, 2)) } else { Err(ResponseError::ProducerFenced) };
            assert_eq!(h.end("tx", pe(500, epoch), Commit, v), expect, "{v:?} epoch {epoch}");
        }
    }
}

#[test]
fn tv2_end_bumps_the_epoch_and_answers_it() {
    let mut h = ongoing(4);
    let d = h.c.end_txn("tx", 500, 4, Commit, Tv2, None, T0);
    let Decision::Write(w) = d else { panic!("{d:?}") };
    let v = w.record.value.as_ref().unwrap();
    assert_eq!((v.producer_epoch, v.state), (5, TxnState::PrepareCommit));
    let done = h.write(&w);
    assert_eq!(done.answer, Ok(pe(500, 5)));
    assert_eq!(done.markers.as_ref().map(|m| m.producer_epoch), Some(5));
    let m = h.m("tx");
    assert_eq!(
        (m.producer_epoch, m.last_producer_epoch, m.client_transaction_version),
        (5, 4, Tv2)
    );
    // The same request again is a retry: the stored epoch is one above it.
    assert_eq!(h.end("tx", pe(500, 4), Commit, Tv2), Err(ResponseError::ConcurrentTransactions));
    // The bumped epoch before completion is the next EndTxn: fenced.
    assert_eq!(h.end("tx", pe(500, 5), Commit, Tv2), Err(ResponseError::ProducerFenced));
    h.complete_markers();
    assert_eq!(h.state("tx"), TxnState::CompleteCommit);
    assert_eq!(h.end("tx", pe(500, 4), Commit, Tv2), Ok(pe(500, 5)));
    assert_eq!(h.end("tx", pe(500, 4), Abort, Tv2), Err(ResponseError::InvalidTxnState));
    assert_eq!(h.end("tx", pe(500, 5), Commit, Tv2), Err(ResponseError::ProducerFenced));
    // The next transaction runs at epoch 5 and ends at 6.
    assert_eq!(h.add("tx", pe(500, 5), &[("t", 0)]), Ok(()));
    assert_eq!(h.end("tx", pe(500, 5), Abort, Tv2), Ok(pe(500, 6)));
}

#[test]
fn tv2_end_at_an_exhausted_epoch_moves_to_a_new_producer_id() {
    let mut h = ongoing(32766);
    assert_eq!(h.c.end_txn("tx", 500, 32766, Commit, Tv2, None, T0), Decision::NeedProducerId);
    assert_eq!(h.c.pending_state("tx"), None);
    let Decision::Write(w) = h.c.end_txn("tx", 500, 32766, Commit, Tv2, Some(2000), T0) else {
        panic!()
    };
    let done = h.write(&w);
    assert_eq!(done.answer, Ok(pe(2000, 0)));
    let markers = done.markers.unwrap();
    assert_eq!((markers.producer_id, markers.producer_epoch), (500, 32767));
    let m = h.m("tx");
    assert_eq!((m.producer_id, m.producer_epoch, m.next_producer_id), (500, 32767, 2000));
    // Retrying while the markers are out.
    assert_eq!(
        h.end("tx", pe(500, 32766), Commit, Tv2),
        Err(ResponseError::ConcurrentTransactions)
    );
    h.complete_markers();
    let m = h.m("tx");
    assert_eq!(
        (m.producer_id, m.producer_epoch, m.previous_producer_id, m.next_producer_id),
        (2000, 0, 500, -1)
    );
    // The retry after the rotation is recognised.
    assert_eq!(h.end("tx", pe(500, 32766), Commit, Tv2), Ok(pe(2000, 0)));
    assert_eq!(
        h.end("tx", pe(500, 32765), Commit, Tv2),
        Err(ResponseError::InvalidProducerIdMapping)
    );
}

#[test]
fn tv0_end_at_an_exhausted_epoch_needs_no_producer_id() {
    let mut h = ongoing(32766);
    assert_eq!(h.end("tx", pe(500, 32766), Commit, Tv0), Ok(pe(500, 32766)));
}

#[test]
fn a_client_downgraded_to_tv0_retrying_a_tv2_end_is_recognised() {
    let mut h = ongoing(4);
    assert_eq!(h.end("tx", pe(500, 4), Commit, Tv2), Ok(pe(500, 5)));
    assert_eq!(h.end("tx", pe(500, 4), Commit, Tv0), Err(ResponseError::ConcurrentTransactions));
    h.complete_markers();
    assert_eq!(h.end("tx", pe(500, 4), Commit, Tv0), Ok(pe(500, 5)));
}

#[test]
fn a_client_upgraded_to_tv2_retrying_a_tv0_end_is_recognised() {
    let mut h = ongoing(4);
    assert_eq!(h.end("tx", pe(500, 4), Commit, Tv0), Ok(pe(500, 4)));
    assert_eq!(h.end("tx", pe(500, 4), Commit, Tv2), Err(ResponseError::ConcurrentTransactions));
    h.complete_markers();
    assert_eq!(h.end("tx", pe(500, 4), Commit, Tv2), Ok(pe(500, 4)));
}

#[test]
fn a_failed_prepare_write_leaves_the_transaction_open() {
    let mut h = ongoing(4);
    let Decision::Write(w) = h.c.end_txn("tx", 500, 4, Commit, Tv2, None, T0) else { panic!() };
    let done = h.fail(&w, ResponseError::NotLeaderOrFollower);
    assert_eq!(done, WriteDone { answer: Err(ResponseError::NotCoordinator), markers: None });
    assert_eq!(h.m("tx"), meta(500, 4, TxnState::Ongoing, &[("t", 0), ("t", 1)]));
    assert_eq!(h.end("tx", pe(500, 4), Commit, Tv2), Ok(pe(500, 5)));
}

#[test]
fn a_failed_completion_write_is_retried_from_the_markers() {
    let mut h = ongoing(4);
    h.end("tx", pe(500, 4), Abort, Tv0).unwrap();
    let markers = h.markers.pop().unwrap();
    let w = h.c.markers_written(&markers).unwrap();
    let done = h.fail(&w, ResponseError::KafkaStorageError);
    assert_eq!(done.answer, Err(ResponseError::NotCoordinator));
    assert_eq!(h.c.pending_state("tx"), Some(TxnState::CompleteAbort));
    assert_eq!(h.c.markers_written(&markers), Some(w.clone()));
    h.write(&w);
    assert_eq!((h.state("tx"), h.c.pending_state("tx")), (TxnState::CompleteAbort, None));
    // Markers reported twice: nothing left to complete.
    assert_eq!(h.c.markers_written(&markers), None);
}

#[test]
fn an_empty_transaction_sends_no_marker_and_completes_at_once() {
    let mut h = H::new();
    h.put("tx", &meta(500, 1, TxnState::Ongoing, &[]));
    assert_eq!(h.end("tx", pe(500, 1), Commit, Tv0), Ok(pe(500, 1)));
    assert!(h.markers[0].partitions.is_empty());
    h.complete_markers();
    assert_eq!(h.state("tx"), TxnState::CompleteCommit);
}

#[test]
fn a_write_reported_twice_or_out_of_turn_changes_nothing() {
    let mut h = ongoing(4);
    let Decision::Write(w1) = h.c.end_txn("tx", 500, 4, Abort, Tv0, None, T0) else { panic!() };
    h.fail(&w1, ResponseError::NotEnoughReplicas);
    let Decision::Write(w2) = h.c.end_txn("tx", 500, 4, Commit, Tv0, None, T0) else { panic!() };
    // The first attempt reported again, now as written: not the awaited record.
    let done = h.c.write_completed(&w1, Ok(()), T0);
    assert_eq!(done, WriteDone { answer: Err(ResponseError::NotCoordinator), markers: None });
    assert_eq!(h.c.pending_state("tx"), Some(TxnState::PrepareCommit));
    assert_eq!(h.write(&w2).answer, Ok(pe(500, 4)));
    let again = h.c.write_completed(&w2, Ok(()), T0);
    assert_eq!(again.answer, Err(ResponseError::NotCoordinator));
    assert_eq!(h.c.pending_state("tx"), Some(TxnState::CompleteCommit));
}

//! Transaction timeouts and transactional id expiration.

use super::*;

#[test]
fn an_ongoing_transaction_past_its_timeout_is_aborted_with_the_epoch_bumped() {
    let mut h = H::new();
    h.put("tx", &meta(500, 4, TxnState::Ongoing, &[("t", 0)]));
    h.put("idle", &meta(501, 4, TxnState::Empty, &[]));
    assert!(h.c.abort_timed_out_transactions(T0 + i64::from(TIMEOUT)).is_empty());
    h.now = T0 + i64::from(TIMEOUT) + 1;
    let writes = h.c.abort_timed_out_transactions(h.now);
    assert_eq!(writes.len(), 1);
    let expected = TxnMetadata {
        state: TxnState::PrepareAbort,
        last_update_timestamp_ms: h.now,
        ..meta(500, 5, TxnState::Ongoing, &[("t", 0)])
    };
    assert_eq!(writes[0].record, TxnRecord::of("tx", &expected, 0));
    // Pending: not aborted twice.
    assert!(h.c.abort_timed_out_transactions(h.now + 1).is_empty());
    let done = h.write(&writes[0]);
    assert_eq!(done.answer, Ok(pe(500, 5)));
    let markers = done.markers.unwrap();
    assert_eq!((markers.producer_epoch, markers.result), (5, TxnResult::Abort));
    h.complete_markers();
    assert_eq!(h.state("tx"), TxnState::CompleteAbort);
    // The fenced producer learns it on its next request.
    assert_eq!(h.add("tx", pe(500, 4), &[("t", 0)]), Err(ResponseError::ProducerFenced));
    assert_eq!(
        h.end("tx", pe(500, 4), TxnResult::Commit, TransactionVersion::Tv0),
        Err(ResponseError::ProducerFenced)
    );
}

#[test]
fn a_failed_timeout_abort_does_not_bump_the_epoch_again() {
    let mut h = H::new();
    h.put("tx", &meta(500, 4, TxnState::Ongoing, &[("t", 0)]));
    h.now = T0 + i64::from(TIMEOUT) + 1;
    let w = h.c.abort_timed_out_transactions(h.now).remove(0);
    assert_eq!(
        h.fail(&w, ResponseError::NotEnoughReplicas).answer,
        Err(ResponseError::CoordinatorNotAvailable)
    );
    assert_eq!((h.state("tx"), h.m("tx").producer_epoch), (TxnState::Ongoing, 5));
    let w = h.c.abort_timed_out_transactions(h.now).remove(0);
    assert_eq!(w.record.value.as_ref().unwrap().producer_epoch, 5);
    h.write(&w);
    h.complete_markers();
    assert_eq!((h.state("tx"), h.m("tx").producer_epoch), (TxnState::CompleteAbort, 5));
}

#[test]
fn a_pending_transition_is_not_aborted() {
    let mut h = H::new();
    h.put("tx", &meta(500, 4, TxnState::Ongoing, &[("t", 0)]));
    let Decision::Write(_) =
        h.c.end_txn("tx", 500, 4, TxnResult::Commit, TransactionVersion::Tv0, None, T0)
    else {
        panic!()
    };
    assert!(h.c.abort_timed_out_transactions(T0 + 10 * i64::from(TIMEOUT)).is_empty());
}

#[test]
fn under_tv2_the_timeout_abort_bumps_the_epoch_twice() {
    let mut h = H::tv2();
    h.put("tx", &meta(500, 4, TxnState::Ongoing, &[("t", 0)]));
    h.now = T0 + i64::from(TIMEOUT) + 1;
    let w = h.c.abort_timed_out_transactions(h.now).remove(0);
    let v = w.record.value.clone().unwrap();
    assert_eq!((v.version, v.producer_epoch, v.client_transaction_version), (1, 6, 2));
    h.write(&w);
    assert_eq!(h.m("tx").last_producer_epoch, 5);
    h.complete_markers();
    assert_eq!((h.state("tx"), h.m("tx").producer_epoch), (TxnState::CompleteAbort, 6));
    // The producer's own abort retry is fenced (its epoch is two behind).
    assert_eq!(
        h.end("tx", pe(500, 4), TxnResult::Abort, TransactionVersion::Tv2),
        Err(ResponseError::ProducerFenced)
    );
}

#[test]
fn under_tv2_a_fence_that_reaches_32767_is_bumped_once() {
    let mut h = H::tv2();
    h.put("tx", &meta(500, 32766, TxnState::Ongoing, &[("t", 0)]));
    h.now = T0 + i64::from(TIMEOUT) + 1;
    let w = h.c.abort_timed_out_transactions(h.now).remove(0);
    let v = w.record.value.clone().unwrap();
    assert_eq!((v.producer_epoch, v.client_transaction_version), (32767, 0));
    h.write(&w);
    h.complete_markers();
    assert_eq!(h.init("tx", None), Ok(pe(FIRST_PID, 0)));
}

#[test]
fn idle_ids_expire_after_the_expiration_time() {
    let mut h = H::new();
    let week = TxnConfig::default().transactional_id_expiration_ms;
    h.put("empty", &meta(1, 0, TxnState::Empty, &[]));
    h.put("done", &meta(2, 0, TxnState::CompleteCommit, &[]));
    h.put("open", &meta(3, 0, TxnState::Ongoing, &[("t", 0)]));
    assert!(h.c.expire_transactional_ids(T0 + week - 1).is_empty());
    h.now = T0 + week;
    let writes = h.c.expire_transactional_ids(h.now);
    let ids: Vec<&str> = writes.iter().map(|w| w.record.transactional_id.as_str()).collect();
    assert_eq!(ids, vec!["done", "empty"]);
    assert!(writes.iter().all(|w| w.record.value.is_none()));
    // While the tombstone is being written the id cannot be used; it is still
    // described (Kafka looks at the state, not the pending state).
    assert_eq!(h.c.pending_state("empty"), Some(TxnState::Dead));
    assert_eq!(h.init("empty", None), Err(ResponseError::ConcurrentTransactions));
    assert_eq!(h.c.describe("empty").map(|d| d.state), Ok(TxnState::Empty));
    assert_eq!(
        h.fail(&writes[0], ResponseError::KafkaStorageError).answer,
        Err(ResponseError::NotCoordinator)
    );
    assert_eq!((h.state("done"), h.c.pending_state("done")), (TxnState::CompleteCommit, None));
    h.write(&writes[1]);
    assert!(h.c.metadata("empty").is_none());
    assert_eq!(h.c.describe("empty"), Err(ResponseError::TransactionalIdNotFound));
    // The id is new again.
    assert_eq!(h.init("empty", None), Ok(pe(FIRST_PID, 0)));
}

//! InitProducerId with a transactional id (Kafka's `TransactionCoordinatorTest`).

use kafka_protocol::messages::ApiKey;

use super::*;

#[test]
fn request_checks_come_first() {
    let mut h = H::new();
    assert_eq!(h.init("", None), Err(ResponseError::InvalidRequest));
    for bad in [0, -1, 900_001] {
        let d = h.c.init_producer_id("tx", bad, None, None, T0);
        assert_eq!(d, Decision::Answer(Err(ResponseError::InvalidTransactionTimeout)));
    }
    let d = h.c.init_producer_id("tx", 900_000, None, None, T0);
    assert_eq!(d, Decision::NeedProducerId);
    assert_eq!(ProducerIdAndEpoch::from_request(-1, -1), Ok(None));
    assert_eq!(ProducerIdAndEpoch::from_request(-1, 3), Err(ResponseError::InvalidRequest));
    assert_eq!(ProducerIdAndEpoch::from_request(5, -1), Err(ResponseError::InvalidRequest));
    assert_eq!(ProducerIdAndEpoch::from_request(5, 3), Ok(Some(pe(5, 3))));
}

#[test]
fn not_owned_and_loading_partitions() {
    let mut c = TxnCoordinator::new(TxnConfig::default());
    let d = c.init_producer_id("tx", TIMEOUT, None, Some(1), T0);
    assert_eq!(d, Decision::Answer(Err(ResponseError::NotCoordinator)));
    c.begin_load(c.partition_for("tx"), EPOCH);
    let d = c.init_producer_id("tx", TIMEOUT, None, Some(1), T0);
    assert_eq!(d, Decision::Answer(Err(ResponseError::CoordinatorLoadInProgress)));
}

#[test]
fn a_new_id_gets_a_producer_id_at_epoch_0() {
    let mut h = H::new();
    assert_eq!(h.c.init_producer_id("tx", TIMEOUT, None, None, T0), Decision::NeedProducerId);
    assert!(h.c.metadata("tx").is_none(), "nothing changes before the id is allocated");
    let Decision::Write(w) = h.c.init_producer_id("tx", TIMEOUT, None, Some(1000), T0) else {
        panic!("a write")
    };
    assert_eq!(w.partition, h.c.partition_for("tx"));
    assert_eq!(w.coordinator_epoch, EPOCH);
    assert_eq!(h.c.pending_state("tx"), Some(TxnState::Empty));
    // Value version 0 under TV0.
    assert_eq!(w.record, TxnRecord::of("tx", &meta(1000, 0, TxnState::Empty, &[]), 0));
    assert_eq!(h.write(&w).answer, Ok(pe(1000, 0)));
    assert_eq!(h.m("tx"), meta(1000, 0, TxnState::Empty, &[]));
    assert_eq!(h.c.pending_state("tx"), None);
}

#[test]
fn a_new_id_with_a_producer_id_in_the_request_gets_a_new_one() {
    let mut h = H::new();
    assert_eq!(h.init("tx", Some(pe(55, 3))), Ok(pe(FIRST_PID, 0)));
}

#[test]
fn an_existing_id_is_fenced_by_an_epoch_bump_with_the_new_timeout() {
    for state in [TxnState::Empty, TxnState::CompleteCommit, TxnState::CompleteAbort] {
        let mut h = H::new();
        h.put("tx", &meta(500, 4, state, &[]));
        h.now = T0 + 100;
        let d = h.c.init_producer_id("tx", 10, None, None, h.now);
        let Decision::Write(w) = d else { panic!("{d:?}") };
        assert_eq!(h.write(&w).answer, Ok(pe(500, 5)));
        let m = h.m("tx");
        assert_eq!((m.state, m.producer_epoch, m.timeout_ms), (TxnState::Empty, 5, 10));
        assert_eq!((m.last_update_timestamp_ms, m.start_timestamp_ms), (T0 + 100, -1));
    }
}

#[test]
fn prepare_states_and_pending_transitions_answer_concurrent_transactions() {
    for state in [TxnState::PrepareCommit, TxnState::PrepareAbort] {
        let mut h = H::new();
        h.put("tx", &meta(500, 4, state, &[("t", 1)]));
        assert_eq!(h.init("tx", None), Err(ResponseError::ConcurrentTransactions));
    }
    let mut h = H::new();
    h.init("tx", None).unwrap();
    let Decision::Write(_) = h.c.init_producer_id("tx", TIMEOUT, None, None, T0) else { panic!() };
    assert_eq!(h.init("tx", Some(pe(FIRST_PID, 10))), Err(ResponseError::ConcurrentTransactions));
}

#[test]
fn kip_360_current_epoch_bumps_and_a_retry_gets_the_same_answer() {
    let mut h = H::new();
    h.put("tx", &meta(500, 10, TxnState::Empty, &[]));
    assert_eq!(h.init("tx", Some(pe(500, 10))), Ok(pe(500, 11)));
    assert_eq!(h.m("tx").last_producer_epoch, 10);
    // The producer never saw the answer and retries.
    assert_eq!(h.init("tx", Some(pe(500, 10))), Ok(pe(500, 11)));
}

#[test]
fn kip_360_stale_epoch_after_another_producer_initialized_is_fenced() {
    let mut h = H::new();
    h.put("tx", &meta(500, 10, TxnState::Empty, &[]));
    assert_eq!(h.init("tx", None), Ok(pe(500, 11)));
    assert_eq!(h.init("tx", Some(pe(500, 10))), Err(ResponseError::ProducerFenced));
    assert_eq!(
        error_for_version(ApiKey::InitProducerId, 3, ResponseError::ProducerFenced),
        ResponseError::InvalidProducerEpoch
    );
    assert_eq!(
        error_for_version(ApiKey::InitProducerId, 4, ResponseError::ProducerFenced),
        ResponseError::ProducerFenced
    );
}

#[test]
fn kip_360_another_producer_id_is_fenced() {
    let mut h = H::new();
    h.put("tx", &TxnMetadata { previous_producer_id: 500, ..meta(501, 5, TxnState::Empty, &[]) });
    assert_eq!(h.init("tx", Some(pe(500, 5))), Err(ResponseError::ProducerFenced));
}

#[test]
fn kip_360_without_last_producer_data_a_retry_is_fenced() {
    // Loaded metadata has no last epoch: a retry with the old epoch cannot be recognised.
    let mut h = H::new();
    h.put("tx", &meta(500, 11, TxnState::Empty, &[]));
    assert_eq!(h.init("tx", Some(pe(500, 10))), Err(ResponseError::ProducerFenced));
}

#[test]
fn an_exhausted_epoch_rotates_the_producer_id() {
    let mut h = H::new();
    h.put(
        "tx",
        &TxnMetadata { previous_producer_id: -1, ..meta(500, 32766, TxnState::Empty, &[]) },
    );
    assert_eq!(h.init("tx", None), Ok(pe(FIRST_PID, 0)));
    let m = h.m("tx");
    assert_eq!(
        (m.producer_id, m.previous_producer_id, m.last_producer_epoch),
        (FIRST_PID, 500, -1)
    );
}

#[test]
fn a_retry_after_a_rotation_gets_the_rotated_id_and_a_stale_epoch_is_fenced() {
    let mut h = H::new();
    h.put("tx", &meta(500, 32766, TxnState::CompleteCommit, &[]));
    assert_eq!(h.init("tx", Some(pe(500, 32766))), Ok(pe(FIRST_PID, 0)));
    assert_eq!(h.m("tx").last_producer_epoch, 32766);
    assert_eq!(h.init("tx", Some(pe(500, 32766))), Ok(pe(FIRST_PID, 0)));
    let mut h = H::new();
    h.put("tx", &meta(500, 32766, TxnState::CompleteCommit, &[]));
    assert_eq!(h.init("tx", Some(pe(500, 32766))), Ok(pe(FIRST_PID, 0)));
    assert_eq!(h.init("tx", Some(pe(500, 32765))), Err(ResponseError::ProducerFenced));
}

#[test]
fn an_ongoing_transaction_is_aborted_first_with_the_epoch_bumped() {
    let mut h = H::new();
    h.put("tx", &meta(500, 4, TxnState::Ongoing, &[("t", 0), ("t", 1)]));
    h.now = T0 + 50;
    let Decision::Write(w) = h.c.init_producer_id("tx", TIMEOUT, None, None, h.now) else {
        panic!()
    };
    // The fence is in memory at once: the old producer is fenced before the write.
    assert_eq!(h.m("tx").producer_epoch, 5);
    assert_eq!(h.add("tx", pe(500, 4), &[("t", 2)]), Err(ResponseError::ProducerFenced));
    let expected = TxnMetadata {
        state: TxnState::PrepareAbort,
        last_update_timestamp_ms: T0 + 50,
        ..meta(500, 5, TxnState::Ongoing, &[("t", 0), ("t", 1)])
    };
    assert_eq!(w.record, TxnRecord::of("tx", &expected, 0));
    let done = h.write(&w);
    assert_eq!(done.answer, Err(ResponseError::ConcurrentTransactions));
    assert_eq!(
        done.markers,
        Some(TxnMarkers {
            transactional_id: "tx".into(),
            partition: h.c.partition_for("tx"),
            coordinator_epoch: EPOCH,
            producer_id: 500,
            producer_epoch: 5,
            result: TxnResult::Abort,
            partitions: parts(&[("t", 0), ("t", 1)]),
        })
    );
    // While the markers are out the client keeps retrying.
    assert_eq!(h.init("tx", None), Err(ResponseError::ConcurrentTransactions));
    h.complete_markers();
    assert_eq!(h.state("tx"), TxnState::CompleteAbort);
    assert_eq!(h.init("tx", None), Ok(pe(500, 6)));
}

#[test]
fn a_failed_fence_is_not_bumped_again() {
    let mut h = H::new();
    h.put("tx", &meta(500, 4, TxnState::Ongoing, &[("t", 0)]));
    for _ in 0..2 {
        let Decision::Write(w) = h.c.init_producer_id("tx", TIMEOUT, None, None, T0) else {
            panic!()
        };
        assert_eq!(w.record.value.as_ref().unwrap().producer_epoch, 5);
        let done = h.fail(&w, ResponseError::NotEnoughReplicas);
        assert_eq!(
            done,
            WriteDone { answer: Err(ResponseError::CoordinatorNotAvailable), markers: None }
        );
        assert_eq!((h.state("tx"), h.m("tx").producer_epoch), (TxnState::Ongoing, 5));
    }
    assert_eq!(h.init("tx", None), Err(ResponseError::ConcurrentTransactions));
    assert_eq!(h.m("tx").producer_epoch, 5);
    h.complete_markers();
    assert_eq!(h.init("tx", None), Ok(pe(500, 6)));
}

#[test]
fn fencing_an_exhausted_epoch_uses_the_last_epoch_then_rotates() {
    let mut h = H::new();
    h.put("tx", &meta(500, 32766, TxnState::Ongoing, &[("t", 0)]));
    assert_eq!(h.init("tx", None), Err(ResponseError::ConcurrentTransactions));
    let m = h.m("tx");
    assert_eq!(
        (m.state, m.producer_epoch, m.last_producer_epoch),
        (TxnState::PrepareAbort, 32767, -1)
    );
    h.complete_markers();
    assert_eq!(h.init("tx", None), Ok(pe(FIRST_PID, 0)));
}

#[test]
fn a_failed_init_write_answers_the_mapped_error_and_keeps_the_old_state() {
    let mut h = H::new();
    h.put("tx", &meta(500, 4, TxnState::Empty, &[]));
    let Decision::Write(w) = h.c.init_producer_id("tx", TIMEOUT, None, None, T0) else { panic!() };
    let done = h.fail(&w, ResponseError::KafkaStorageError);
    assert_eq!(done.answer, Err(ResponseError::NotCoordinator));
    assert_eq!((h.m("tx").producer_epoch, h.c.pending_state("tx")), (4, None));
    assert_eq!(h.init("tx", None), Ok(pe(500, 5)));
}

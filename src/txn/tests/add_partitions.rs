//! AddPartitionsToTxn, AddOffsetsToTxn and the KIP-890 verification.

use kafka_protocol::messages::ApiKey;

use super::*;

#[test]
fn unknown_ids_and_other_producers_are_refused() {
    let mut h = H::new();
    assert_eq!(h.add("", pe(0, 1), &[("t", 0)]), Err(ResponseError::InvalidRequest));
    assert_eq!(h.add("tx", pe(0, 1), &[("t", 0)]), Err(ResponseError::InvalidProducerIdMapping));
    h.put("tx", &meta(500, 10, TxnState::Empty, &[]));
    assert_eq!(h.add("tx", pe(501, 10), &[("t", 0)]), Err(ResponseError::InvalidProducerIdMapping));
    assert_eq!(h.add("tx", pe(500, 9), &[("t", 0)]), Err(ResponseError::ProducerFenced));
    assert_eq!(h.add("tx", pe(500, 11), &[("t", 0)]), Err(ResponseError::ProducerFenced));
    for api in [ApiKey::AddPartitionsToTxn, ApiKey::AddOffsetsToTxn, ApiKey::EndTxn] {
        assert_eq!(
            error_for_version(api, 1, ResponseError::ProducerFenced),
            ResponseError::InvalidProducerEpoch
        );
        assert_eq!(
            error_for_version(api, 2, ResponseError::ProducerFenced),
            ResponseError::ProducerFenced
        );
        assert_eq!(
            error_for_version(api, 0, ResponseError::ConcurrentTransactions),
            ResponseError::ConcurrentTransactions
        );
    }
}

#[test]
fn not_owned_and_loading_partitions() {
    let mut c = TxnCoordinator::new(TxnConfig::default());
    let d = c.add_partitions("tx", 1, 0, &parts(&[("t", 0)]), T0);
    assert_eq!(d, Decision::Answer(Err(ResponseError::NotCoordinator)));
    c.begin_load(c.partition_for("tx"), EPOCH);
    let d = c.add_partitions("tx", 1, 0, &parts(&[("t", 0)]), T0);
    assert_eq!(d, Decision::Answer(Err(ResponseError::CoordinatorLoadInProgress)));
}

#[test]
fn prepare_states_answer_concurrent_transactions() {
    for state in [TxnState::PrepareCommit, TxnState::PrepareAbort] {
        let mut h = H::new();
        h.put(
            "tx",
            &TxnMetadata {
                client_transaction_version: TransactionVersion::Tv2,
                ..meta(0, 0, state, &[])
            },
        );
        assert_eq!(h.add("tx", pe(0, 0), &[("t", 0)]), Err(ResponseError::ConcurrentTransactions));
    }
}

#[test]
fn the_first_partition_starts_the_transaction() {
    for state in [TxnState::Empty, TxnState::CompleteCommit, TxnState::CompleteAbort] {
        let mut h = H::new();
        h.put("tx", &meta(500, 3, state, &[]));
        h.now = T0 + 70;
        let d = h.c.add_partitions("tx", 500, 3, &parts(&[("t", 0)]), h.now);
        let Decision::Write(w) = d else { panic!("{d:?}") };
        let expected = TxnMetadata {
            state: TxnState::Ongoing,
            start_timestamp_ms: T0 + 70,
            last_update_timestamp_ms: T0 + 70,
            ..meta(500, 3, state, &[("t", 0)])
        };
        assert_eq!(w.record, TxnRecord::of("tx", &expected, 0));
        assert_eq!(h.c.pending_state("tx"), Some(TxnState::Ongoing));
        assert_eq!(h.write(&w), WriteDone { answer: Ok(pe(500, 3)), markers: None });
        assert_eq!(h.m("tx"), expected);
    }
}

#[test]
fn more_partitions_keep_the_start_and_known_ones_need_no_write() {
    let mut h = H::new();
    h.put("tx", &meta(500, 3, TxnState::Ongoing, &[("t", 0)]));
    assert_eq!(
        h.c.add_partitions("tx", 500, 3, &parts(&[("t", 0)]), T0 + 5),
        Decision::Answer(Ok(()))
    );
    h.now = T0 + 9;
    assert_eq!(h.add("tx", pe(500, 3), &[("t", 0), ("u", 2)]), Ok(()));
    let m = h.m("tx");
    assert_eq!(m.partitions, parts(&[("t", 0), ("u", 2)]));
    assert_eq!((m.start_timestamp_ms, m.last_update_timestamp_ms), (T0, T0 + 9));
    // A pending transition refuses a second change.
    let Decision::Write(_) = h.c.add_partitions("tx", 500, 3, &parts(&[("v", 0)]), T0) else {
        panic!()
    };
    assert_eq!(h.add("tx", pe(500, 3), &[("w", 0)]), Err(ResponseError::ConcurrentTransactions));
}

#[test]
fn add_offsets_adds_the_groups_consumer_offsets_partition() {
    let mut h = H::new();
    h.put("tx", &meta(500, 3, TxnState::Empty, &[]));
    let Decision::Write(w) = h.c.add_offsets("tx", 500, 3, 17, T0) else { panic!() };
    h.write(&w);
    assert_eq!(h.m("tx").partitions, parts(&[("__consumer_offsets", 17)]));
    assert_eq!(
        h.c.add_offsets("tx", 500, 4, 17, T0),
        Decision::Answer(Err(ResponseError::ProducerFenced))
    );
}

#[test]
fn a_failed_write_leaves_the_transaction_as_it_was() {
    let mut h = H::new();
    h.put("tx", &meta(500, 3, TxnState::Ongoing, &[("t", 0)]));
    let Decision::Write(w) = h.c.add_partitions("tx", 500, 3, &parts(&[("u", 0)]), T0) else {
        panic!()
    };
    let done = h.fail(&w, ResponseError::RequestTimedOut);
    assert_eq!(done.answer, Err(ResponseError::CoordinatorNotAvailable));
    assert_eq!(h.m("tx"), meta(500, 3, TxnState::Ongoing, &[("t", 0)]));
    assert_eq!(h.c.pending_state("tx"), None);
}

#[test]
fn verification_checks_the_producer_then_each_partition() {
    let mut h = H::new();
    let ask = |h: &H, pid, epoch, list: &[(&str, i32)]| {
        let list: Vec<TopicPartition> = list.iter().map(|(t, p)| tp(t, *p)).collect();
        h.c.verify_partitions("tx", pid, epoch, &list)
    };
    assert_eq!(h.c.verify_partitions("", 0, 0, &[]), Err(ResponseError::InvalidRequest));
    assert_eq!(ask(&h, 0, 0, &[("t", 0)]), Err(ResponseError::InvalidProducerIdMapping));
    h.put(
        "tx",
        &TxnMetadata {
            previous_producer_id: 0,
            ..meta(1, 0, TxnState::PrepareCommit, &[("t", 0)])
        },
    );
    assert_eq!(ask(&h, 0, 0, &[("t", 0)]), Err(ResponseError::InvalidProducerIdMapping));
    h.put("tx", &meta(0, 0, TxnState::PrepareCommit, &[("t", 0)]));
    assert_eq!(ask(&h, 0, 1, &[("t", 0)]), Err(ResponseError::ProducerFenced));
    assert_eq!(ask(&h, 0, 0, &[("t", 0)]), Err(ResponseError::ConcurrentTransactions));
    h.put("tx", &meta(0, 0, TxnState::Ongoing, &[("t", 0)]));
    // A pending transition does not matter.
    let Decision::Write(_) = h.c.add_partitions("tx", 0, 0, &parts(&[("u", 0)]), T0) else {
        panic!()
    };
    assert_eq!(
        ask(&h, 0, 0, &[("t", 0), ("u", 0)]),
        Ok(vec![(tp("t", 0), None), (tp("u", 0), Some(ResponseError::TransactionAbortable))])
    );
    let mut c = TxnCoordinator::new(TxnConfig::default());
    c.begin_load(c.partition_for("tx"), EPOCH);
    assert_eq!(c.verify_partitions("tx", 0, 0, &[]), Err(ResponseError::CoordinatorLoadInProgress));
}

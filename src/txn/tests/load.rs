//! Loading a partition from its log, ownership changes, DescribeTransactions and
//! ListTransactions (Kafka's `TransactionStateManagerTest`).

use super::*;

#[test]
fn replaying_the_log_rebuilds_the_state_last_record_wins_tombstones_delete() {
    let mut h = H::tv2();
    // A life: init, a TV2 commit, a TV2 abort at an exhausted epoch, a second id, and a
    // third that is expired.
    h.init("a", None).unwrap();
    h.add("a", pe(FIRST_PID, 0), &[("t", 0), ("u", 3)]).unwrap();
    h.end("a", pe(FIRST_PID, 0), TxnResult::Commit, TransactionVersion::Tv2).unwrap();
    h.complete_markers();
    h.init("b", None).unwrap();
    h.add("b", pe(FIRST_PID + 1, 0), &[("t", 1)]).unwrap();
    h.init("gone", None).unwrap();
    h.now += TxnConfig::default().transactional_id_expiration_ms;
    let expired = h.c.expire_transactional_ids(h.now);
    assert_eq!(expired.len(), 2, "a and gone are idle: {expired:?}");
    for w in expired.iter().filter(|w| w.record.transactional_id == "gone") {
        h.write(w);
    }
    for w in expired.iter().filter(|w| w.record.transactional_id == "a") {
        h.fail(w, ResponseError::KafkaStorageError);
    }
    assert!(h.c.metadata("gone").is_none());

    let mut fresh = TxnCoordinator::new(h.c.config().clone());
    for p in 0..50 {
        fresh.begin_load(p, EPOCH + 1);
    }
    for (p, r) in &h.log {
        fresh.load_record(*p, r.clone());
    }
    for p in 0..50 {
        assert!(fresh.finish_load(p, h.now).is_empty());
    }
    for id in ["a", "b"] {
        let live = TxnMetadata { last_producer_epoch: NO_PRODUCER_EPOCH, ..h.m(id) };
        assert_eq!(fresh.metadata(id), Some(&live), "{id}");
    }
    assert!(fresh.metadata("gone").is_none());
}

#[test]
fn an_id_loaded_in_prepare_commit_has_its_markers_sent_again() {
    let mut h = H::new();
    let prepared = meta(500, 3, TxnState::PrepareCommit, &[("t", 0), ("u", 1)]);
    h.now = T0 + 500;
    let markers = h.put("tx", &prepared);
    assert_eq!(
        markers,
        vec![TxnMarkers {
            transactional_id: "tx".into(),
            partition: h.c.partition_for("tx"),
            coordinator_epoch: EPOCH,
            producer_id: 500,
            producer_epoch: 3,
            result: TxnResult::Commit,
            partitions: parts(&[("t", 0), ("u", 1)]),
        }]
    );
    assert_eq!(h.c.pending_state("tx"), Some(TxnState::CompleteCommit));
    assert_eq!(
        h.end("tx", pe(500, 3), TxnResult::Commit, TransactionVersion::Tv0),
        Err(ResponseError::ConcurrentTransactions)
    );
    h.complete_markers();
    let m = h.m("tx");
    assert_eq!(
        (m.state, m.last_update_timestamp_ms, m.partitions.len()),
        (TxnState::CompleteCommit, T0 + 500, 0)
    );
}

#[test]
fn an_id_loaded_in_prepare_abort_with_a_next_producer_id_completes_on_it() {
    let mut h = H::new();
    let prepared = TxnMetadata {
        next_producer_id: 900,
        client_transaction_version: TransactionVersion::Tv2,
        ..meta(500, 32767, TxnState::PrepareAbort, &[("t", 0)])
    };
    let markers = h.put("tx", &prepared);
    assert_eq!((markers[0].result, markers[0].producer_epoch), (TxnResult::Abort, 32767));
    h.complete_markers();
    let m = h.m("tx");
    assert_eq!(
        (m.state, m.producer_id, m.producer_epoch, m.previous_producer_id),
        (TxnState::CompleteAbort, 900, 0, 500)
    );
}

#[test]
fn requests_wait_for_the_load_and_records_of_other_partitions_are_ignored() {
    let mut c = TxnCoordinator::new(TxnConfig::default());
    let p = c.partition_for("tx");
    c.begin_load(p, EPOCH);
    c.load_record(p, TxnRecord::of("tx", &meta(500, 1, TxnState::Empty, &[]), 0));
    c.load_record(p + 1, TxnRecord::of("other", &meta(501, 1, TxnState::Empty, &[]), 0));
    assert_eq!(c.describe("tx"), Err(ResponseError::CoordinatorLoadInProgress));
    assert_eq!(c.list(&ListFilter::default(), T0), Err(ResponseError::CoordinatorLoadInProgress));
    assert!(c.is_loading(p));
    c.finish_load(p, T0);
    assert_eq!(c.describe("tx").unwrap().producer_id, 500);
    assert!(c.metadata("other").is_none());
    // A tombstone deletes, a later record wins.
    c.begin_load(p, EPOCH);
    c.load_record(p, TxnRecord::of("tx", &meta(500, 1, TxnState::Empty, &[]), 0));
    c.load_record(p, TxnRecord::tombstone("tx"));
    c.load_record(p, TxnRecord::of("tx", &meta(600, 2, TxnState::Empty, &[]), 0));
    c.finish_load(p, T0);
    assert_eq!(c.metadata("tx").map(|m| (m.producer_id, m.producer_epoch)), Some((600, 2)));
}

#[test]
fn writes_and_markers_of_an_unloaded_or_reloaded_partition_are_refused() {
    let mut h = H::new();
    h.put("tx", &meta(500, 3, TxnState::Ongoing, &[("t", 0)]));
    let Decision::Write(w) =
        h.c.end_txn("tx", 500, 3, TxnResult::Abort, TransactionVersion::Tv0, None, T0)
    else {
        panic!()
    };
    let p = h.c.partition_for("tx");
    h.c.unload(p);
    assert_eq!(h.c.write_completed(&w, Ok(()), T0).answer, Err(ResponseError::NotCoordinator));
    assert_eq!(h.init("tx", None), Err(ResponseError::NotCoordinator));
    assert_eq!(h.c.describe("tx"), Err(ResponseError::NotCoordinator));
    // Reloaded at a new epoch: the old write and its markers belong to the old one.
    h.c.begin_load(p, EPOCH + 1);
    h.c.load_record(p, TxnRecord::of("tx", &meta(500, 3, TxnState::PrepareAbort, &[("t", 0)]), 0));
    let markers = h.c.finish_load(p, T0);
    assert_eq!(markers[0].coordinator_epoch, EPOCH + 1);
    assert_eq!(h.c.write_completed(&w, Ok(()), T0).answer, Err(ResponseError::NotCoordinator));
    let stale = TxnMarkers { coordinator_epoch: EPOCH, ..markers[0].clone() };
    assert_eq!(h.c.markers_written(&stale), None);
    let w = h.c.markers_written(&markers[0]).unwrap();
    assert_eq!(w.coordinator_epoch, EPOCH + 1);
}

#[test]
fn describe_reports_the_transaction() {
    let mut h = H::new();
    h.put("tx", &meta(500, 3, TxnState::Ongoing, &[("u", 2), ("t", 1), ("t", 0)]));
    let d = h.c.describe("tx").unwrap();
    assert_eq!(
        d,
        TxnDescription {
            state: TxnState::Ongoing,
            producer_id: 500,
            producer_epoch: 3,
            timeout_ms: TIMEOUT,
            start_timestamp_ms: T0,
            topics: [("t".to_string(), vec![0, 1]), ("u".to_string(), vec![2])].into(),
        }
    );
    assert_eq!(d.state.name(), "Ongoing");
    assert_eq!(h.c.describe(""), Err(ResponseError::InvalidRequest));
    assert_eq!(h.c.describe("nope"), Err(ResponseError::TransactionalIdNotFound));
    h.put("dead", &meta(501, 3, TxnState::Dead, &[]));
    assert_eq!(h.c.describe("dead"), Err(ResponseError::TransactionalIdNotFound));
}

#[test]
fn list_filters_by_state_producer_id_and_duration() {
    let mut h = H::new();
    let at = |pid: i64, state: TxnState, start: i64| TxnMetadata {
        start_timestamp_ms: start,
        ..meta(pid, 0, state, &[])
    };
    h.put("t0", &at(0, TxnState::Ongoing, T0));
    h.put("t1", &at(1, TxnState::Ongoing, T0));
    h.put("t2", &at(2, TxnState::PrepareCommit, T0 + 1000));
    h.put("t3", &at(3, TxnState::PrepareAbort, T0 + 1000));
    h.put("t4", &at(4, TxnState::CompleteCommit, T0 + 2000));
    h.put("t5", &at(5, TxnState::CompleteAbort, T0 + 2000));
    h.put("t6", &at(6, TxnState::CompleteAbort, T0 + 2000));
    h.put("t7", &at(7, TxnState::PrepareEpochFence, T0 + 2000));
    h.put("t8", &at(8, TxnState::Dead, T0 + 3000));
    let now = T0 + 3000;
    let list = |h: &H, states: &[&str], pids: &[i64], duration_ms: i64| {
        let filter = ListFilter {
            states: states.iter().map(|s| s.to_string()).collect(),
            producer_ids: pids.to_vec(),
            duration_ms,
        };
        let l = h.c.list(&filter, now).unwrap();
        let ids: Vec<String> = l.transactions.iter().map(|t| t.transactional_id.clone()).collect();
        (ids.join(","), l.unknown_state_filters)
    };
    let none: Vec<String> = Vec::new();
    assert_eq!(list(&h, &[], &[], -1), ("t0,t1,t2,t3,t4,t5,t6,t7".into(), none.clone()));
    assert_eq!(list(&h, &[], &[], 0).0, "t0,t1,t2,t3,t4,t5,t6,t7");
    assert_eq!(list(&h, &[], &[], 1000).0, "t0,t1,t2,t3");
    assert_eq!(list(&h, &[], &[], 2000).0, "t0,t1");
    assert_eq!(list(&h, &[], &[], 3000).0, "");
    assert_eq!(list(&h, &["Ongoing"], &[], -1).0, "t0,t1");
    assert_eq!(
        list(&h, &["Ongoing", "UnknownState"], &[], -1),
        ("t0,t1".into(), vec!["UnknownState".to_string()])
    );
    assert_eq!(list(&h, &["PrepareCommit", "CompleteCommit"], &[], -1).0, "t2,t4");
    assert_eq!(list(&h, &["UnknownState"], &[], -1).0, "");
    assert_eq!(list(&h, &[], &[5], -1).0, "t5");
    assert_eq!(list(&h, &[], &[5, 6, 8, 9], -1).0, "t5,t6");
    assert_eq!(list(&h, &["CompleteCommit"], &[4, 5], -1).0, "t4");
    assert_eq!(list(&h, &["CompleteCommit", "CompleteAbort"], &[4, 5], -1).0, "t4,t5");
    assert_eq!(list(&h, &["UnknownState"], &[3, 6], -1).0, "");
    assert_eq!(list(&h, &["CompleteCommit"], &[10], -1).0, "");
    assert_eq!(list(&h, &["Dead"], &[], -1).0, "");
    let l = h.c.list(&ListFilter::default(), now).unwrap();
    assert_eq!(
        l.transactions[2],
        ListedTxn { transactional_id: "t2".into(), producer_id: 2, state: TxnState::PrepareCommit }
    );
}

#[test]
fn placement_is_kafkas_hash_modulo_the_partition_count() {
    // Java: "tx".hashCode() = 116 * 31 + 120 = 3716.
    assert_eq!(partition_for("tx", 50), 16);
    let h = crate::shard::groups::java_string_hash("my-transactional-id");
    assert!(h < 0);
    assert_eq!(partition_for("my-transactional-id", 50), (h.unsigned_abs() % 50) as i32);
    assert_eq!(partition_for("anything", 1), 0);
}

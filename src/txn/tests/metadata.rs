//! States and the transitions of one id's metadata (Kafka's `TransactionMetadataTest`).

use super::*;
use crate::txn::metadata::is_epoch_exhausted;
use crate::txn::state::ALL_STATES;

#[test]
fn state_ids_and_names_are_kafkas() {
    let expected = [
        (0, "Empty"),
        (1, "Ongoing"),
        (2, "PrepareCommit"),
        (3, "PrepareAbort"),
        (4, "CompleteCommit"),
        (5, "CompleteAbort"),
        (6, "Dead"),
        (7, "PrepareEpochFence"),
    ];
    for (state, (id, name)) in ALL_STATES.iter().zip(expected) {
        assert_eq!(state.id(), id);
        assert_eq!(state.name(), name);
        assert_eq!(TxnState::from_id(id), Some(*state));
        assert_eq!(TxnState::from_name(name), Some(*state));
    }
    assert_eq!(TxnState::from_id(8), None);
    assert_eq!(TxnState::from_id(-1), None);
    assert_eq!(TxnState::from_name("ongoing"), None);
}

#[test]
fn valid_previous_states_are_kafkas() {
    use TxnState::*;
    let table: [(TxnState, &[TxnState]); 8] = [
        (Empty, &[Empty, CompleteCommit, CompleteAbort]),
        (Ongoing, &[Ongoing, Empty, CompleteCommit, CompleteAbort]),
        (PrepareCommit, &[Ongoing]),
        (PrepareAbort, &[Ongoing, PrepareEpochFence]),
        (CompleteCommit, &[PrepareCommit]),
        (CompleteAbort, &[PrepareAbort]),
        (Dead, &[Empty, CompleteAbort, CompleteCommit]),
        (PrepareEpochFence, &[Ongoing]),
    ];
    for (to, from) in table {
        for s in ALL_STATES {
            assert_eq!(to.accepts_from(s), from.contains(&s), "{s:?} -> {to:?}");
        }
    }
    let expirable: Vec<TxnState> =
        ALL_STATES.iter().copied().filter(|s| s.is_expiration_allowed()).collect();
    assert_eq!(expirable, vec![Empty, CompleteCommit, CompleteAbort]);
}

#[test]
fn transaction_versions() {
    use TransactionVersion::*;
    assert_eq!(TransactionVersion::of_end_txn_request(4), Tv0);
    assert_eq!(TransactionVersion::of_end_txn_request(5), Tv2);
    assert_eq!(
        [Tv0.log_value_version(), Tv1.log_value_version(), Tv2.log_value_version()],
        [0, 1, 1]
    );
    assert!(!Tv1.supports_epoch_bump() && Tv2.supports_epoch_bump());
    assert_eq!(TransactionVersion::from_level(7), Tv2);
    assert_eq!(TransactionVersion::from_level(1), Tv1);
    assert!(is_epoch_exhausted(32766) && is_epoch_exhausted(32767) && !is_epoch_exhausted(32765));
}

#[test]
fn first_epoch_bump_of_a_new_id_gives_epoch_0() {
    let m = TxnMetadata::new(5, TIMEOUT, T0);
    let t = m.prepare_increment_epoch(30_000, None, T0 + 1).unwrap().unwrap();
    assert_eq!(
        t,
        TxnMetadata {
            producer_id: 5,
            previous_producer_id: 5,
            next_producer_id: -1,
            producer_epoch: 0,
            last_producer_epoch: -1,
            timeout_ms: 30_000,
            state: TxnState::Empty,
            partitions: parts(&[]),
            start_timestamp_ms: -1,
            last_update_timestamp_ms: T0 + 1,
            client_transaction_version: TransactionVersion::Tv0,
        }
    );
}

#[test]
fn epoch_bumps_with_and_without_the_expected_epoch() {
    let m = TxnMetadata { last_producer_epoch: 9, ..meta(5, 10, TxnState::CompleteCommit, &[]) };
    // No expected epoch: bump, forget the last.
    let t = m.prepare_increment_epoch(TIMEOUT, None, T0).unwrap().unwrap();
    assert_eq!((t.producer_epoch, t.last_producer_epoch), (11, -1));
    // The current epoch: bump, remember it.
    let t = m.prepare_increment_epoch(TIMEOUT, Some(10), T0).unwrap().unwrap();
    assert_eq!((t.producer_epoch, t.last_producer_epoch), (11, 10));
    // The last epoch: a retry, nothing bumped.
    let t = m.prepare_increment_epoch(TIMEOUT, Some(9), T0).unwrap().unwrap();
    assert_eq!((t.producer_epoch, t.last_producer_epoch), (10, 9));
    // Any other: fenced.
    assert_eq!(m.prepare_increment_epoch(TIMEOUT, Some(8), T0), Ok(None));
    // A new id (epoch -1) accepts any expected epoch and starts at 0.
    let fresh = TxnMetadata::new(5, TIMEOUT, T0);
    let t = fresh.prepare_increment_epoch(TIMEOUT, Some(3), T0).unwrap().unwrap();
    assert_eq!((t.producer_epoch, t.last_producer_epoch), (0, -1));
}

#[test]
fn an_exhausted_epoch_cannot_be_bumped_only_rotated() {
    let m = meta(5, 32766, TxnState::Empty, &[]);
    assert!(m.prepare_increment_epoch(TIMEOUT, None, T0).is_err());
    let t = m.prepare_producer_id_rotation(6, TIMEOUT, T0 + 5, true).unwrap();
    assert_eq!(
        (t.producer_id, t.previous_producer_id, t.producer_epoch, t.last_producer_epoch),
        (6, 5, 0, 32766)
    );
    assert_eq!(t.last_update_timestamp_ms, T0 + 5);
    let t = m.prepare_producer_id_rotation(6, TIMEOUT, T0, false).unwrap();
    assert_eq!(t.last_producer_epoch, -1);
    for state in [TxnState::Ongoing, TxnState::PrepareAbort, TxnState::PrepareCommit] {
        assert!(meta(5, 32766, state, &[])
            .prepare_producer_id_rotation(6, TIMEOUT, T0, false)
            .is_err());
    }
}

#[test]
fn add_partitions_starts_a_transaction_only_when_none_is_open() {
    let m = meta(5, 1, TxnState::CompleteAbort, &[]);
    let t = m.prepare_add_partitions(&parts(&[("t", 0)]), T0 + 10).unwrap();
    assert_eq!(
        (t.state, t.start_timestamp_ms, t.last_update_timestamp_ms),
        (TxnState::Ongoing, T0 + 10, T0 + 10)
    );
    let t2 = t.prepare_add_partitions(&parts(&[("t", 1)]), T0 + 20).unwrap();
    assert_eq!(t2.start_timestamp_ms, T0 + 10);
    assert_eq!(t2.partitions, parts(&[("t", 0), ("t", 1)]));
    assert!(meta(5, 1, TxnState::PrepareCommit, &[])
        .prepare_add_partitions(&parts(&[]), T0)
        .is_err());
}

#[test]
fn tv2_end_bumps_the_epoch_and_completion_keeps_it() {
    let m = meta(5, 10, TxnState::Ongoing, &[("t", 0)]);
    let prepared = m
        .prepare_abort_or_commit(TxnState::PrepareCommit, TransactionVersion::Tv2, -1, T0 + 1)
        .unwrap();
    assert_eq!((prepared.producer_epoch, prepared.last_producer_epoch), (11, 10));
    assert_eq!(prepared.client_transaction_version, TransactionVersion::Tv2);
    let done = prepared.prepare_complete(T0 + 2).unwrap();
    assert_eq!(
        (done.state, done.producer_id, done.producer_epoch, done.previous_producer_id),
        (TxnState::CompleteCommit, 5, 11, 5)
    );
    assert!(done.partitions.is_empty());
    // TV0 changes no epoch.
    let prepared = m
        .prepare_abort_or_commit(TxnState::PrepareAbort, TransactionVersion::Tv0, -1, T0 + 1)
        .unwrap();
    assert_eq!((prepared.producer_epoch, prepared.last_producer_epoch), (10, -1));
    let done = prepared.prepare_complete(T0 + 2).unwrap();
    assert_eq!(
        (done.state, done.producer_epoch, done.start_timestamp_ms),
        (TxnState::CompleteAbort, 10, T0)
    );
}

#[test]
fn tv2_end_at_an_exhausted_epoch_rotates_the_producer_id_on_completion() {
    let m = meta(5, 32766, TxnState::Ongoing, &[]);
    let prepared = m
        .prepare_abort_or_commit(TxnState::PrepareCommit, TransactionVersion::Tv2, 9893, T0)
        .unwrap();
    assert_eq!(
        (prepared.producer_id, prepared.producer_epoch, prepared.next_producer_id),
        (5, 32767, 9893)
    );
    let done = prepared.prepare_complete(T0).unwrap();
    assert_eq!(
        (done.producer_id, done.producer_epoch, done.previous_producer_id, done.next_producer_id),
        (9893, 0, 5, -1)
    );
    // One more TV2 bump from 32767 would overflow.
    let maxed = meta(5, 32767, TxnState::Ongoing, &[]);
    assert!(maxed
        .prepare_abort_or_commit(TxnState::PrepareAbort, TransactionVersion::Tv2, -1, T0)
        .is_err());
}

#[test]
fn transitions_from_states_that_do_not_accept_them_are_refused() {
    let m = meta(5, 1, TxnState::Empty, &[]);
    let e = m
        .prepare_abort_or_commit(TxnState::PrepareCommit, TransactionVersion::Tv0, -1, T0)
        .unwrap_err();
    assert_eq!((e.from, e.to), (TxnState::Empty, TxnState::PrepareCommit));
    assert!(meta(5, 1, TxnState::Ongoing, &[]).prepare_dead().is_err());
    let dead = meta(5, 1, TxnState::CompleteCommit, &[]).prepare_dead().unwrap();
    assert_eq!(dead.state, TxnState::Dead);
}

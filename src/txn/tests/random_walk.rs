//! Deterministic random walks over every request, failure and timer: nothing panics,
//! every record round-trips (checked by `H::write`), and at every step replaying the
//! records written so far rebuilds the metadata of every id that has nothing pending
//! (except the last epoch, which the log does not hold, and an epoch bumped by a fence
//! whose write failed, which Kafka keeps in memory only).

use super::*;

/// A small deterministic generator (64-bit LCG, high bits).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 =
            self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

const IDS: [&str; 3] = ["a", "b", "c"];

fn replay_matches(h: &H) {
    let config = h.c.config().clone();
    let flexible = config.transaction_version.log_value_version() >= 1;
    let mut fresh = TxnCoordinator::new(config.clone());
    for p in 0..config.num_partitions {
        fresh.begin_load(p, EPOCH);
    }
    for (p, r) in &h.log {
        fresh.load_record(*p, r.clone());
    }
    for p in 0..config.num_partitions {
        fresh.finish_load(p, h.now);
    }
    for id in IDS {
        let part = &h.c.partitions[&h.c.partition_for(id)];
        let Some(entry) = part.ids.get(id) else {
            assert!(fresh.metadata(id).is_none(), "{id} deleted but replayed");
            continue;
        };
        if entry.pending.is_some() || entry.has_failed_epoch_fence {
            continue;
        }
        let mut live = entry.metadata.clone();
        live.last_producer_epoch = NO_PRODUCER_EPOCH;
        if !flexible {
            live.previous_producer_id = NO_PRODUCER_ID;
            live.next_producer_id = NO_PRODUCER_ID;
            live.client_transaction_version = TransactionVersion::Tv0;
        }
        if entry.metadata.producer_epoch == NO_PRODUCER_EPOCH {
            // A new id whose first write failed exists only in memory (as in Kafka).
            assert!(fresh.metadata(id).is_none());
            continue;
        }
        assert_eq!(fresh.metadata(id), Some(&live), "{id} after replay");
    }
}

/// One walk; the states its ids went through.
fn walk(config: TxnConfig, seed: u64, steps: usize) -> BTreeSet<TxnState> {
    let mut seen = BTreeSet::new();
    let mut h = H::with(config);
    let mut rng = Rng(seed);
    // What each id's producer believes it has.
    let mut producers: Vec<Option<ProducerIdAndEpoch>> = vec![None; IDS.len()];
    let mut outstanding: Vec<TxnWrite> = Vec::new();
    for _ in 0..steps {
        h.now += rng.below(20_000) as i64;
        let i = rng.below(IDS.len() as u64) as usize;
        let id = IDS[i];
        let me = producers[i].unwrap_or(pe(0, 0));
        let version =
            if rng.below(2) == 0 { TransactionVersion::Tv0 } else { TransactionVersion::Tv2 };
        let decision = match rng.below(9) {
            0 => {
                let expected = if rng.below(2) == 0 { producers[i] } else { None };
                Some(h.c.init_producer_id(id, TIMEOUT, expected, Some(h.next_pid), h.now))
            }
            1 | 2 => {
                let t = ["t", "u"][rng.below(2) as usize];
                let d = h.c.add_partitions(
                    id,
                    me.producer_id,
                    me.producer_epoch,
                    &parts(&[(t, rng.below(3) as i32)]),
                    h.now,
                );
                Some(match d {
                    Decision::Write(w) => Decision::Write(w),
                    Decision::Answer(a) => Decision::Answer(a.map(|_| me)),
                    Decision::NeedProducerId => panic!("AddPartitionsToTxn allocates nothing"),
                })
            }
            3 => {
                let result = if rng.below(2) == 0 { TxnResult::Commit } else { TxnResult::Abort };
                Some(h.c.end_txn(
                    id,
                    me.producer_id,
                    me.producer_epoch,
                    result,
                    version,
                    Some(h.next_pid),
                    h.now,
                ))
            }
            4 => {
                h.complete_markers();
                None
            }
            5 => {
                outstanding.extend(h.c.abort_timed_out_transactions(h.now));
                None
            }
            6 => {
                let _ = h.c.verify_partitions(id, me.producer_id, me.producer_epoch, &[tp("t", 0)]);
                let _ = h.c.describe(id);
                let _ = h.c.list(&ListFilter::default(), h.now);
                None
            }
            7 => {
                h.now += TxnConfig::default().transactional_id_expiration_ms;
                outstanding.extend(h.c.expire_transactional_ids(h.now));
                None
            }
            _ => {
                // Let an outstanding write land or fail.
                if let Some(w) = outstanding.pop() {
                    if rng.below(3) == 0 {
                        h.fail(&w, ResponseError::NotEnoughReplicas);
                    } else {
                        h.write(&w);
                    }
                }
                None
            }
        };
        match decision {
            None | Some(Decision::Answer(_)) => {}
            Some(Decision::NeedProducerId) => panic!("a fresh id was offered"),
            Some(Decision::Write(w)) => {
                if rng.below(4) == 0 {
                    h.fail(&w, ResponseError::KafkaStorageError);
                } else {
                    let wrote_new_pid = w.record.value.as_ref().is_some_and(|v| {
                        v.producer_id == h.next_pid || v.next_producer_id == h.next_pid
                    });
                    if wrote_new_pid {
                        h.alloc();
                    }
                    let done = h.write(&w);
                    if let Ok(p) = done.answer {
                        producers[i] = Some(p);
                    }
                }
            }
        }
        // One pending transition per id at most, and only ids we know.
        for id in IDS {
            if let Some(s) = h.c.pending_state(id) {
                assert!(h.c.metadata(id).is_some(), "{id} pending {s:?} without metadata");
            }
        }
        replay_matches(&h);
        seen.extend(IDS.iter().filter_map(|id| h.c.metadata(id)).map(|m| m.state));
    }
    seen
}

/// The states every walk set must have reached, so that the walks are not degenerate.
fn assert_covers(seen: &BTreeSet<TxnState>) {
    use TxnState::*;
    for s in [Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort] {
        assert!(seen.contains(&s), "no walk reached {s:?}: {seen:?}");
    }
}

#[test]
fn random_walks_keep_memory_and_log_in_step_under_tv0() {
    let mut seen = BTreeSet::new();
    for seed in 0..40 {
        seen.extend(walk(TxnConfig::default(), seed, 300));
    }
    assert_covers(&seen);
}

#[test]
fn random_walks_keep_memory_and_log_in_step_under_tv2() {
    let mut seen = BTreeSet::new();
    for seed in 100..140 {
        let config =
            TxnConfig { transaction_version: TransactionVersion::Tv2, ..TxnConfig::default() };
        seen.extend(walk(config, seed, 300));
    }
    assert_covers(&seen);
}

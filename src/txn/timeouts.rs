//! The coordinator's periodic work: aborting transactions past their timeout (Kafka's
//! `TransactionCoordinator.abortTimedOutTransactions` with
//! `TransactionStateManager.timedOutTransactions`) and deleting idle transactional ids
//! (`removeExpiredTransactionalIds`).

use super::coordinator::{FenceCause, Purpose};
use super::{TxnCoordinator, TxnWrite};

impl TxnCoordinator {
    /// The transactions to abort at `now_ms`: every Ongoing id of a loaded partition,
    /// without a pending transition, whose start plus its timeout is before `now_ms`.
    /// Each is aborted as a new producer's InitProducerId would (the epoch is bumped to
    /// fence the producer; see `prepare_fence_abort`): write each record, report it to
    /// [`Self::write_completed`] (nobody is answered) and send the markers it returns.
    /// In transactional id order. Call every
    /// `transaction.abort.timed.out.transaction.cleanup.interval.ms` (Kafka: 10000).
    pub fn abort_timed_out_transactions(&mut self, now_ms: i64) -> Vec<TxnWrite> {
        let mut due: Vec<String> = Vec::new();
        for p in self.partitions.values().filter(|p| !p.loading) {
            for (id, e) in &p.ids {
                let m = &e.metadata;
                if e.pending.is_none()
                    && m.state == super::TxnState::Ongoing
                    && m.start_timestamp_ms + i64::from(m.timeout_ms) < now_ms
                {
                    due.push(id.clone());
                }
            }
        }
        due.sort();
        due.iter()
            .filter_map(|id| self.prepare_fence_abort(id, FenceCause::Timeout, now_ms))
            .collect()
    }

    /// The transactional ids to delete at `now_ms`: every id of a loaded partition in
    /// Empty, CompleteCommit or CompleteAbort, without a pending transition, whose last
    /// update is at least `transactional_id_expiration_ms` old. Each becomes Dead (its
    /// requests get CONCURRENT_TRANSACTIONS) and its tombstone is returned: once
    /// [`Self::write_completed`] reports it written the id is gone; a failed write
    /// leaves it as it was. In transactional id order. Call every
    /// `transaction.remove.expired.transaction.cleanup.interval.ms` (Kafka: 3600000).
    pub fn expire_transactional_ids(&mut self, now_ms: i64) -> Vec<TxnWrite> {
        let horizon = now_ms.saturating_sub(self.config.transactional_id_expiration_ms);
        let mut due: Vec<(String, super::TxnMetadata)> = Vec::new();
        for p in self.partitions.values().filter(|p| !p.loading) {
            for (id, e) in &p.ids {
                let m = &e.metadata;
                if e.pending.is_none()
                    && m.state.is_expiration_allowed()
                    && m.last_update_timestamp_ms <= horizon
                {
                    if let Ok(dead) = m.prepare_dead() {
                        due.push((id.clone(), dead));
                    }
                }
            }
        }
        due.sort_by(|a, b| a.0.cmp(&b.0));
        due.into_iter().map(|(id, dead)| self.prepare(&id, dead, Purpose::Expire)).collect()
    }
}

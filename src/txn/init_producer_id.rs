//! InitProducerId with a transactional id (Kafka's
//! `TransactionCoordinator.handleInitProducerId` and `prepareInitProducerIdTransit`,
//! with KIP-360's producer id and epoch in the request).

use super::coordinator::{Entry, FenceCause, Purpose};
use super::metadata::{is_epoch_exhausted, TxnMetadata, NO_PRODUCER_EPOCH};
use super::state::TxnState;
use super::{Decision, ProducerIdAndEpoch, TxnCoordinator};
use crate::error::ResponseError;

impl TxnCoordinator {
    /// InitProducerId for `transactional_id` with `timeout_ms` (the transaction timeout,
    /// ms) and, from v3 on, the producer id and epoch the client had (`expected`, see
    /// [`ProducerIdAndEpoch::from_request`]). A request without a transactional id is an
    /// idempotent producer's and does not come here.
    ///
    /// - INVALID_REQUEST: empty id; INVALID_TRANSACTION_TIMEOUT: `timeout_ms` not in
    ///   `1..=max_timeout_ms`; NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS;
    /// - a new id: needs a producer id, then writes Empty at epoch 0;
    /// - CONCURRENT_TRANSACTIONS while a transition is pending, or in PrepareCommit /
    ///   PrepareAbort (the client retries);
    /// - PRODUCER_FENCED when `expected` names another producer (neither the current
    ///   producer id, nor the previous one with an exhausted epoch (a retry after a
    ///   rotation), and the id has been initialized), or an epoch that is neither the
    ///   current nor the last one;
    /// - Empty / CompleteCommit / CompleteAbort: the epoch is bumped (the answer), or,
    ///   when it is exhausted and `expected` (if any) has the current epoch, a new
    ///   producer id at epoch 0 (needs a producer id); a retry with the last epoch gets
    ///   the current epoch again;
    /// - Ongoing: the coordinator aborts the transaction with the epoch bumped (fencing
    ///   the old producer) and answers CONCURRENT_TRANSACTIONS once the PrepareAbort is
    ///   written; the client retries and then gets the epoch bumped once more.
    ///
    /// The caller maps PRODUCER_FENCED to INVALID_PRODUCER_EPOCH for v0-3
    /// ([`super::error_for_version`]).
    pub fn init_producer_id(
        &mut self,
        transactional_id: &str,
        timeout_ms: i32,
        expected: Option<ProducerIdAndEpoch>,
        fresh_producer_id: Option<i64>,
        now_ms: i64,
    ) -> Decision<ProducerIdAndEpoch> {
        use Decision::Answer;
        if transactional_id.is_empty() {
            return Answer(Err(ResponseError::InvalidRequest));
        }
        if timeout_ms <= 0 || timeout_ms > self.config.max_timeout_ms {
            return Answer(Err(ResponseError::InvalidTransactionTimeout));
        }
        let (_, p) = match self.owned_mut(transactional_id) {
            Ok(x) => x,
            Err(e) => return Answer(Err(e)),
        };
        if !p.ids.contains_key(transactional_id) {
            let Some(producer_id) = fresh_producer_id else {
                return Decision::NeedProducerId;
            };
            let created = TxnMetadata::new(producer_id, timeout_ms, now_ms);
            p.ids.insert(transactional_id.to_string(), Entry::new(created));
        }
        let Some(entry) = p.ids.get(transactional_id) else {
            return Answer(Err(ResponseError::UnknownServerError)); // inserted above
        };
        let m = &entry.metadata;
        if entry.pending.is_some() {
            return Answer(Err(ResponseError::ConcurrentTransactions));
        }
        let valid_producer = |e: &ProducerIdAndEpoch| {
            m.producer_epoch == NO_PRODUCER_EPOCH
                || e.producer_id == m.producer_id
                || (e.producer_id == m.previous_producer_id && is_epoch_exhausted(e.producer_epoch))
        };
        if !expected.iter().all(valid_producer) {
            return Answer(Err(ResponseError::ProducerFenced));
        }
        let target = match m.state {
            TxnState::PrepareAbort | TxnState::PrepareCommit => {
                return Answer(Err(ResponseError::ConcurrentTransactions));
            }
            TxnState::CompleteAbort | TxnState::CompleteCommit | TxnState::Empty => {
                let rotate = m.is_epoch_exhausted()
                    && expected.iter().all(|e| e.producer_epoch == m.producer_epoch);
                if rotate {
                    let Some(producer_id) = fresh_producer_id else {
                        return Decision::NeedProducerId;
                    };
                    m.prepare_producer_id_rotation(
                        producer_id,
                        timeout_ms,
                        now_ms,
                        expected.is_some(),
                    )
                    .map(Some)
                } else {
                    m.prepare_increment_epoch(
                        timeout_ms,
                        expected.map(|e| e.producer_epoch),
                        now_ms,
                    )
                }
            }
            TxnState::Ongoing => {
                return match self.prepare_fence_abort(
                    transactional_id,
                    FenceCause::InitProducerId,
                    now_ms,
                ) {
                    Some(write) => Decision::Write(write),
                    None => Answer(Err(ResponseError::UnknownServerError)),
                };
            }
            // Never stored in a live entry (Kafka throws IllegalStateException).
            TxnState::Dead | TxnState::PrepareEpochFence => {
                return Answer(Err(ResponseError::UnknownServerError));
            }
        };
        match target {
            Ok(Some(target)) => {
                Decision::Write(self.prepare(transactional_id, target, Purpose::InitProducerId))
            }
            Ok(None) => Answer(Err(ResponseError::ProducerFenced)),
            Err(_) => Answer(Err(ResponseError::UnknownServerError)),
        }
    }
}

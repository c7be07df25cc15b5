//! EndTxn, and the coordinator's own abort of an ongoing transaction (Kafka's
//! `TransactionCoordinator.endTransaction`, with KIP-890's epoch bump for TV2 clients,
//! and `TransactionMetadata.prepareFenceProducerEpoch`).

use super::coordinator::{FenceCause, Purpose};
use super::metadata::{NO_PRODUCER_EPOCH, NO_PRODUCER_ID};
use super::state::{TransactionVersion, TxnResult, TxnState};
use super::{Decision, ProducerIdAndEpoch, TxnCoordinator, TxnWrite};
use crate::error::ResponseError;

impl TxnCoordinator {
    /// EndTxn: commit or abort the transaction of `transactional_id`, from a client
    /// speaking `client_version` ([`TransactionVersion::of_end_txn_request`]).
    ///
    /// - INVALID_REQUEST: empty id; NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS;
    /// - INVALID_PRODUCER_ID_MAPPING: unknown id, or another producer id (unless it is a
    ///   TV2 retry after the producer id was rotated: the previous id with epoch
    ///   32766, now at epoch 0);
    /// - PRODUCER_FENCED: the epoch is not the current one. For an id whose last
    ///   transition came from a TV2 client, Prepare* and Complete* only accept the
    ///   epoch just before the bumped one (a retry), Ongoing and Empty the current one;
    /// - CONCURRENT_TRANSACTIONS while a transition is pending (markers included);
    /// - Ongoing: writes PrepareCommit / PrepareAbort (a TV2 client bumps the epoch; with
    ///   the epoch exhausted it also needs a producer id, taken at the completion); the
    ///   answer comes with the write, followed by the markers;
    /// - a retry of a finished EndTxn: CompleteCommit + commit or CompleteAbort + abort
    ///   is answered OK with the current producer id and epoch; PrepareCommit + commit
    ///   or PrepareAbort + abort CONCURRENT_TRANSACTIONS; the other result, or Empty,
    ///   INVALID_TXN_STATE.
    ///
    /// Errors are answered with producer id and epoch -1. The caller maps
    /// PRODUCER_FENCED to INVALID_PRODUCER_EPOCH for v0-1 ([`super::error_for_version`]).
    #[allow(clippy::too_many_arguments)]
    pub fn end_txn(
        &mut self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        result: TxnResult,
        client_version: TransactionVersion,
        fresh_producer_id: Option<i64>,
        now_ms: i64,
    ) -> Decision<ProducerIdAndEpoch> {
        use Decision::Answer;
        if transactional_id.is_empty() {
            return Answer(Err(ResponseError::InvalidRequest));
        }
        let (_, p) = match self.owned_mut(transactional_id) {
            Ok(x) => x,
            Err(e) => return Answer(Err(e)),
        };
        let Some(entry) = p.ids.get(transactional_id) else {
            return Answer(Err(ResponseError::InvalidProducerIdMapping));
        };
        let m = &entry.metadata;
        let stored_v2 = m.client_transaction_version.supports_epoch_bump();
        let retry_on_overflow = stored_v2
            && m.previous_producer_id == producer_id
            && producer_epoch == i16::MAX - 1
            && m.producer_epoch == 0;
        let retry_on_epoch_bump =
            stored_v2 && i32::from(m.producer_epoch) == i32::from(producer_epoch) + 1;
        let valid_epoch = if stored_v2 {
            match m.state {
                TxnState::PrepareCommit | TxnState::PrepareAbort => retry_on_epoch_bump,
                TxnState::CompleteCommit | TxnState::CompleteAbort => {
                    retry_on_epoch_bump || retry_on_overflow
                }
                _ => producer_epoch == m.producer_epoch,
            }
        } else {
            producer_epoch == m.producer_epoch
        };
        if m.producer_id != producer_id && !retry_on_overflow {
            return Answer(Err(ResponseError::InvalidProducerIdMapping));
        }
        if !valid_epoch {
            return Answer(Err(ResponseError::ProducerFenced));
        }
        if entry.pending.is_some() {
            return Answer(Err(ResponseError::ConcurrentTransactions));
        }
        let current =
            ProducerIdAndEpoch { producer_id: m.producer_id, producer_epoch: m.producer_epoch };
        let same_result = |r: TxnResult| r == result;
        let target = match m.state {
            TxnState::Ongoing => {
                let state = match result {
                    TxnResult::Commit => TxnState::PrepareCommit,
                    TxnResult::Abort => TxnState::PrepareAbort,
                };
                let next_producer_id =
                    if client_version.supports_epoch_bump() && m.is_epoch_exhausted() {
                        match fresh_producer_id {
                            Some(id) => id,
                            None => return Decision::NeedProducerId,
                        }
                    } else {
                        NO_PRODUCER_ID
                    };
                m.prepare_abort_or_commit(state, client_version, next_producer_id, now_ms)
            }
            TxnState::CompleteCommit if same_result(TxnResult::Commit) => {
                return Answer(Ok(current));
            }
            TxnState::CompleteAbort if same_result(TxnResult::Abort) => {
                return Answer(Ok(current));
            }
            TxnState::PrepareCommit if same_result(TxnResult::Commit) => {
                return Answer(Err(ResponseError::ConcurrentTransactions));
            }
            TxnState::PrepareAbort if same_result(TxnResult::Abort) => {
                return Answer(Err(ResponseError::ConcurrentTransactions));
            }
            TxnState::CompleteCommit
            | TxnState::CompleteAbort
            | TxnState::PrepareCommit
            | TxnState::PrepareAbort
            | TxnState::Empty => return Answer(Err(ResponseError::InvalidTxnState)),
            // Never stored in a live entry (Kafka throws IllegalStateException).
            TxnState::Dead | TxnState::PrepareEpochFence => {
                return Answer(Err(ResponseError::UnknownServerError));
            }
        };
        match target {
            Ok(target) => {
                Decision::Write(self.prepare(transactional_id, target, Purpose::EndTxn(result)))
            }
            Err(_) => Answer(Err(ResponseError::UnknownServerError)),
        }
    }

    /// The coordinator aborts the ongoing transaction of `transactional_id` (a new
    /// producer's InitProducerId, or the transaction timeout): Kafka's PrepareEpochFence
    /// followed by its `endTransaction(ABORT, isFromClient = false)`, done at once.
    ///
    /// The epoch is bumped in memory before the PrepareAbort is written, which fences
    /// the old producer at once; if that write fails, the next fence does not bump
    /// again (`has_failed_epoch_fence`). The abort is written with the broker's
    /// transaction version, as Kafka does: under TV2 that bumps the epoch a second time,
    /// except when the fence reached 32767 (Kafka would overflow; here the abort keeps
    /// 32767 and is written as TV0). `None` when the epoch is already 32767 (Kafka
    /// throws) or the id is not Ongoing without a pending transition.
    pub(super) fn prepare_fence_abort(
        &mut self,
        transactional_id: &str,
        cause: FenceCause,
        now_ms: i64,
    ) -> Option<TxnWrite> {
        let server_version = self.config.transaction_version;
        let (_, p) = self.owned_mut(transactional_id).ok()?;
        let entry = p.ids.get_mut(transactional_id)?;
        if entry.pending.is_some() || entry.metadata.state != TxnState::Ongoing {
            return None;
        }
        let epoch = entry.metadata.producer_epoch;
        if epoch == i16::MAX {
            return None;
        }
        let fenced = if entry.has_failed_epoch_fence { epoch } else { epoch + 1 };
        let version = if fenced == i16::MAX { TransactionVersion::Tv0 } else { server_version };
        let mut fencing = entry.metadata.clone();
        fencing.producer_epoch = fenced;
        fencing.last_producer_epoch = NO_PRODUCER_EPOCH;
        let target = fencing
            .prepare_abort_or_commit(TxnState::PrepareAbort, version, NO_PRODUCER_ID, now_ms)
            .ok()?;
        entry.metadata = fencing;
        Some(self.prepare(transactional_id, target, Purpose::FenceAbort(cause)))
    }
}

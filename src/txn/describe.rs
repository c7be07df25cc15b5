//! DescribeTransactions and ListTransactions (KIP-664; the duration filter of KIP-994):
//! Kafka's `TransactionCoordinator.handleDescribeTransactions` and
//! `TransactionStateManager.listTransactionStates`.

use std::collections::BTreeMap;

use super::state::TxnState;
use super::TxnCoordinator;
use crate::error::ResponseError;

/// One transactional id as DescribeTransactions reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnDescription {
    /// The state (its [`TxnState::name`] is the response's `TransactionState`).
    pub state: TxnState,
    /// Producer id.
    pub producer_id: i64,
    /// Producer epoch.
    pub producer_epoch: i16,
    /// Transaction timeout (ms).
    pub timeout_ms: i32,
    /// When the current transaction started (ms since the epoch; -1 when none).
    pub start_timestamp_ms: i64,
    /// The partitions in the transaction by topic, both sorted.
    pub topics: BTreeMap<String, Vec<i32>>,
}

/// ListTransactions' filters; an empty list does not filter. The default filters
/// nothing (duration -1, as the request's default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListFilter {
    /// State names ("Ongoing", ...); names that are no state are reported back.
    pub states: Vec<String>,
    /// Producer ids.
    pub producer_ids: Vec<i64>,
    /// Only transactions running longer than this (ms, KIP-994); negative: no filter.
    pub duration_ms: i64,
}

impl Default for ListFilter {
    fn default() -> Self {
        ListFilter { states: Vec::new(), producer_ids: Vec::new(), duration_ms: -1 }
    }
}

/// One listed transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedTxn {
    /// Transactional id.
    pub transactional_id: String,
    /// Producer id.
    pub producer_id: i64,
    /// State (the response's `TransactionState` is its name).
    pub state: TxnState,
}

/// The ListTransactions answer of this coordinator.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TxnListing {
    /// State filters that name no state (the response's `UnknownStateFilters`).
    pub unknown_state_filters: Vec<String>,
    /// The matching transactions, by transactional id.
    pub transactions: Vec<ListedTxn>,
}

impl TxnCoordinator {
    /// DescribeTransactions for one id: INVALID_REQUEST (empty id), NOT_COORDINATOR,
    /// COORDINATOR_LOAD_IN_PROGRESS, TRANSACTIONAL_ID_NOT_FOUND (unknown, or Dead).
    /// Reports the state as of the last durable record; like Kafka, an id whose
    /// expiration tombstone is being written is still described.
    pub fn describe(&self, transactional_id: &str) -> Result<TxnDescription, ResponseError> {
        if transactional_id.is_empty() {
            return Err(ResponseError::InvalidRequest);
        }
        let p = self.owned(transactional_id)?;
        let e = p.ids.get(transactional_id).ok_or(ResponseError::TransactionalIdNotFound)?;
        let m = &e.metadata;
        if m.state == TxnState::Dead {
            return Err(ResponseError::TransactionalIdNotFound);
        }
        let mut topics: BTreeMap<String, Vec<i32>> = BTreeMap::new();
        for (topic, partition) in &m.partitions {
            topics.entry(topic.clone()).or_default().push(*partition);
        }
        Ok(TxnDescription {
            state: m.state,
            producer_id: m.producer_id,
            producer_epoch: m.producer_epoch,
            timeout_ms: m.timeout_ms,
            start_timestamp_ms: m.start_timestamp_ms,
            topics,
        })
    }

    /// ListTransactions over every owned partition at `now_ms`:
    /// COORDINATOR_LOAD_IN_PROGRESS while any is loading. An id matches when it is not
    /// Dead, its producer id is among `producer_ids`, its state among
    /// `states` (when given), and, with `duration_ms >= 0`, it started more than
    /// `duration_ms` before `now_ms` (an id with no transaction, start -1, always has).
    pub fn list(&self, filter: &ListFilter, now_ms: i64) -> Result<TxnListing, ResponseError> {
        if self.partitions.values().any(|p| p.loading) {
            return Err(ResponseError::CoordinatorLoadInProgress);
        }
        let mut listing = TxnListing::default();
        let mut states = Vec::new();
        for name in &filter.states {
            match TxnState::from_name(name) {
                Some(s) => states.push(s),
                None => listing.unknown_state_filters.push(name.clone()),
            }
        }
        for p in self.partitions.values() {
            for (id, e) in &p.ids {
                let m = &e.metadata;
                let included = m.state != TxnState::Dead
                    && (filter.producer_ids.is_empty()
                        || filter.producer_ids.contains(&m.producer_id))
                    && (filter.states.is_empty() || states.contains(&m.state))
                    && !(filter.duration_ms >= 0
                        && now_ms - m.start_timestamp_ms <= filter.duration_ms);
                if included {
                    listing.transactions.push(ListedTxn {
                        transactional_id: id.clone(),
                        producer_id: m.producer_id,
                        state: m.state,
                    });
                }
            }
        }
        listing.transactions.sort_by(|a, b| a.transactional_id.cmp(&b.transactional_id));
        Ok(listing)
    }
}

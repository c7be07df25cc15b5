//! Pending transactional offsets (Kafka's `OffsetMetadataManager.pendingTransactionalOffsets`
//! and `openTransactionsByGroup`) and the end of a transaction
//! (`replayEndTransactionMarker`).
//!
//! A TxnOffsetCommit (or the replay of an offset commit from a transactional batch)
//! puts offsets here, by producer id, group and partition. OffsetFetch does not see
//! them; with `require_stable` it answers UNSTABLE_OFFSET_COMMIT for their
//! partitions. The transaction marker, a COMMIT or ABORT control batch the transaction
//! coordinator has written to the group's `__consumer_offsets` partition, moves them to
//! the committed offsets or drops them ([`GroupCoordinator::complete_transaction`]).
//! An offset tombstone deletes the partition's pending offsets of every producer;
//! while a group has an open transaction, retention neither expires the offsets of its
//! pending partitions nor removes the group (if it has offsets).

use std::collections::BTreeMap;

use super::super::group::{CommittedOffset, Group, Offsets};
use super::super::GroupCoordinator;

/// Producer id -> group id -> pending offsets. A group without offsets left (deleted
/// by a tombstone) still has an open transaction of that producer, as in Kafka's
/// `openTransactionsByGroup`.
#[derive(Debug, Clone, Default)]
pub(crate) struct PendingOffsets(BTreeMap<i64, BTreeMap<String, Offsets>>);

impl PendingOffsets {
    /// Sets `producer_id`'s pending offset of `group` for `key` (topic, partition).
    pub fn put(&mut self, producer_id: i64, group: &str, key: (String, i32), c: CommittedOffset) {
        self.0.entry(producer_id).or_default().entry(group.to_string()).or_default().insert(key, c);
    }

    /// The pending offset of `producer_id` for `group`'s `key`.
    pub fn get(
        &self,
        producer_id: i64,
        group: &str,
        key: &(String, i32),
    ) -> Option<&CommittedOffset> {
        self.0.get(&producer_id)?.get(group)?.get(key)
    }

    /// Whether any producer has a pending offset of `group` for `topic`/`partition`
    /// (Kafka's `hasPendingTransactionalOffsets`).
    pub fn has(&self, group: &str, topic: &str, partition: i32) -> bool {
        let key = (topic.to_string(), partition);
        self.0.values().any(|groups| groups.get(group).is_some_and(|o| o.contains_key(&key)))
    }

    /// Whether a transaction of some producer is open for `group` (Kafka's
    /// `openTransactionsByGroup.containsKey`).
    pub fn has_open_transaction(&self, group: &str) -> bool {
        self.0.values().any(|groups| groups.contains_key(group))
    }

    /// Every partition of `group` with a pending offset, of any producer, sorted.
    pub fn partitions_of(&self, group: &str) -> Vec<(String, i32)> {
        let mut keys: Vec<(String, i32)> =
            self.0.values().filter_map(|g| g.get(group)).flat_map(|o| o.keys().cloned()).collect();
        keys.sort();
        keys.dedup();
        keys
    }

    /// Deletes the pending offsets of every producer for `group`'s `topic`/`partition`
    /// (an offset tombstone); their transactions stay open.
    pub fn remove_partition(&mut self, group: &str, topic: &str, partition: i32) {
        let key = (topic.to_string(), partition);
        for groups in self.0.values_mut() {
            if let Some(o) = groups.get_mut(group) {
                o.remove(&key);
            }
        }
    }

    /// Removes `producer_id`'s pending offset of `group` for `key` if its log order is
    /// `log_order` (the one a failed write set). True when it did.
    pub fn remove_if(
        &mut self,
        producer_id: i64,
        group: &str,
        key: &(String, i32),
        log_order: i64,
    ) -> bool {
        let Some(groups) = self.0.get_mut(&producer_id) else { return false };
        let Some(o) = groups.get_mut(group) else { return false };
        if o.get(key).is_none_or(|c| c.log_order != log_order) {
            return false;
        }
        o.remove(key);
        if o.is_empty() {
            groups.remove(group);
        }
        if groups.is_empty() {
            self.0.remove(&producer_id);
        }
        true
    }

    /// Takes `producer_id`'s open transactions of the groups `in_partition` accepts:
    /// group id -> its pending offsets (maybe none).
    fn take(
        &mut self,
        producer_id: i64,
        in_partition: &dyn Fn(&str) -> bool,
    ) -> Vec<(String, Offsets)> {
        let Some(groups) = self.0.get_mut(&producer_id) else { return Vec::new() };
        let ids: Vec<String> = groups.keys().filter(|g| in_partition(g)).cloned().collect();
        let taken = ids.into_iter().filter_map(|id| groups.remove_entry(&id)).collect();
        if groups.is_empty() {
            self.0.remove(&producer_id);
        }
        taken
    }
}

impl GroupCoordinator {
    /// Ends the transaction of `producer_id` in one `__consumer_offsets` partition:
    /// the marker (COMMIT when `commit`, else ABORT) has been appended there, or
    /// replayed from there at start-up. `in_partition` says which group ids belong to
    /// that partition (one coordinator serves several partitions; a producer's
    /// transaction may span groups of several, each ended by its own marker).
    ///
    /// On COMMIT the producer's pending offsets of those groups become committed,
    /// each only if it is later in log order than the offset committed for its
    /// partition (so a plain OffsetCommit written after the TxnOffsetCommit wins, and
    /// compaction of the offsets log cannot bring back an older one); a group gone
    /// meanwhile comes back as a simple group. On ABORT they are dropped. A producer
    /// without pending offsets there is ignored. Kafka source:
    /// `OffsetMetadataManager.replayEndTransactionMarker`. Nothing is persisted: the
    /// marker itself is the record.
    pub fn complete_transaction(
        &mut self,
        producer_id: i64,
        commit: bool,
        in_partition: &dyn Fn(&str) -> bool,
    ) {
        let taken = self.pending.take(producer_id, in_partition);
        if !commit {
            return;
        }
        for (group_id, offsets) in taken {
            if offsets.is_empty() {
                continue;
            }
            let g = self
                .groups
                .entry(group_id.clone())
                .or_insert_with(|| Group::classic(&group_id, None));
            for (key, c) in offsets {
                if g.offsets.get(&key).is_none_or(|old| c.log_order > old.log_order) {
                    g.offsets.insert(key, c);
                }
            }
        }
    }

    /// The transactional write of `records` ([`super::super::Output::PersistTransactional`]
    /// of `producer_id`) failed: their pending offsets go, unless a later
    /// TxnOffsetCommit of the producer replaced them. A pending offset of the same
    /// producer and partition that the failed write replaced does not come back (it is
    /// in the log, and comes back on a restart; the producer's transaction fails
    /// anyway, and the transaction coordinator aborts it).
    pub fn transactional_write_failed(
        &mut self,
        producer_id: i64,
        records: &[super::super::GroupRecord],
    ) {
        for record in records {
            let super::super::GroupRecord::Offset { group, topic, partition, .. } = record else {
                continue;
            };
            let key = (topic.clone(), *partition);
            let Some(c) = self.pending.get(producer_id, group, &key) else { continue };
            if super::commit::offset_record(group, topic, *partition, c) == *record {
                let order = c.log_order;
                self.pending.remove_if(producer_id, group, &key, order);
            }
        }
    }

    /// The pending transactional offset of `producer_id` for `group`'s
    /// `topic`/`partition` (tests, and what the metrics may show): (offset, metadata).
    pub fn pending_offset(
        &self,
        producer_id: i64,
        group: &str,
        topic: &str,
        partition: i32,
    ) -> Option<(i64, String)> {
        let c = self.pending.get(producer_id, group, &(topic.to_string(), partition))?;
        Some((c.offset, c.metadata.clone()))
    }
}

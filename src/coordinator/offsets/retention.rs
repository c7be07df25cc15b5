//! Offset retention and the removal of dead groups (Kafka's
//! `GroupMetadataManager.cleanupGroupMetadata`, `GroupMetadata.removeExpiredOffsets`).

use super::super::group::{Group, CONSUMER_PROTOCOL_TYPE};
use super::super::records::GroupRecord;
use super::super::state::GroupState;
use super::super::{GroupCoordinator, Output};
use super::PendingOffsets;

impl GroupCoordinator {
    /// Periodic cleanup (Kafka's `GroupMetadataManager.cleanupGroupMetadata`): expire
    /// offsets, then delete Empty groups without offsets. Persists tombstones. An
    /// offset whose partition has a pending transactional offset does not expire yet,
    /// and a group whose offsets all expired is not deleted while a transaction is
    /// open for it.
    pub(crate) fn expire_offsets(&mut self, now: i64, out: &mut Vec<Output>) {
        let mut ids: Vec<String> = self.groups.keys().cloned().collect();
        ids.sort();
        for id in ids {
            let Some(g) = self.groups.get_mut(&id) else { continue };
            let had_offsets = !g.offsets.is_empty();
            g.remove_expired_offsets(self.config.offsets_retention_ms, now, &self.pending, out);
            // A group whose offsets all expired stays while a transaction is open for
            // it (Kafka's `cleanupExpiredOffsets`); one that had none goes anyway.
            let open = had_offsets && self.pending.has_open_transaction(&id);
            if !open && g.maybe_mark_dead(out) {
                self.remove_group(&id);
            }
        }
    }
}

impl Group {
    /// Kafka's `GroupMetadata.removeExpiredOffsets`, persisting a tombstone per offset.
    ///
    /// - Empty group with a protocol type: offsets expire `offsets_retention_ms` after
    ///   the group became Empty (or after the commit if that time is unknown).
    /// - Stable consumer group with known subscriptions: offsets of unsubscribed topics
    ///   expire `offsets_retention_ms` after their commit.
    /// - No protocol type (simple consumers): each offset expires after its commit.
    /// - Explicit v2-4 expire timestamps win in all three cases.
    /// - A partition with a pending transactional offset (`pending`) keeps its offset.
    fn remove_expired_offsets(
        &mut self,
        retention_ms: i64,
        now: i64,
        pending: &PendingOffsets,
        out: &mut Vec<Output>,
    ) {
        let state = self.state();
        let consumer = self.protocol_type() == Some(CONSUMER_PROTOCOL_TYPE);
        let (since_empty, unsubscribed_only) = match self.protocol_type() {
            Some(_) if state == GroupState::Empty => (true, false),
            Some(_) if consumer && self.knows_subscriptions() && state == GroupState::Stable => {
                (false, true)
            }
            None => (false, false),
            _ => return,
        };
        let state_ts = self.state_timestamp_ms();
        let expired: Vec<(String, i32)> = self
            .offsets
            .iter()
            .filter(|((topic, partition), c)| {
                if unsubscribed_only && self.is_subscribed_to(topic) {
                    return false;
                }
                if pending.has(&self.group_id, topic, *partition) {
                    return false;
                }
                match c.expire_timestamp_ms {
                    Some(e) => now >= e,
                    None => {
                        let base = if since_empty {
                            state_ts.unwrap_or(c.commit_timestamp_ms)
                        } else {
                            c.commit_timestamp_ms
                        };
                        now - base >= retention_ms
                    }
                }
            })
            .map(|(k, _)| k.clone())
            .collect();
        for (topic, partition) in expired {
            self.offsets.remove(&(topic.clone(), partition));
            out.push(Output::Persist(GroupRecord::OffsetTombstone {
                group: self.group_id.clone(),
                topic,
                partition,
            }));
        }
    }

    /// Whether the group is dead: Empty and without offsets. If so its metadata is
    /// tombstoned (the caller then forgets the group).
    pub fn maybe_mark_dead(&mut self, out: &mut Vec<Output>) -> bool {
        let dead = self.state() == GroupState::Empty && self.offsets.is_empty();
        if dead {
            out.push(Output::Persist(GroupRecord::GroupTombstone { group: self.group_id.clone() }));
        }
        dead
    }
}

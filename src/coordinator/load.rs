//! Start-up: replaying the records of the internal log ([`GroupRecord`]) into group
//! state, in log order (Kafka's `GroupMetadataManager.loadGroupsAndOffsets`).

use super::classic::ClassicGroup;
use super::consumer::ConsumerGroup;
use super::group::{CommittedOffset, Group, GroupKind};
use super::member::Member;
use super::records::GroupRecord;
use super::state::GroupState;
use super::GroupCoordinator;

impl GroupCoordinator {
    /// Replay one record of the internal log (start-up, in log order). Kafka source:
    /// `GroupMetadataManager.loadGroupsAndOffsets` / `GroupMetadata.loadGroup`.
    ///
    /// A group with stored members comes back Stable in its stored generation (members
    /// keep their ids and assignments and must heartbeat within their session timeout,
    /// armed by `set_loading(false, now)`); without members it is Empty. A group
    /// tombstone clears the metadata (offsets have their own tombstones). A consumer
    /// group ([`GroupRecord::ConsumerGroup`]) comes back with its epochs, members
    /// (epochs, subscriptions, current and target assignments) and subscription
    /// metadata; its members' session timers start at `set_loading(false, now)`.
    ///
    /// The record counts as the latest in log order (see [`GroupCoordinator::replay`]
    /// for a record read at a known offset, or from a transactional batch).
    pub fn load(&mut self, record: GroupRecord) {
        let log_order = self.take_log_order();
        self.load_at(record, log_order);
    }

    /// Replay one record read from the internal log at offset `record_offset`
    /// (start-up, in log order); `transactional_producer`: the producer id of its
    /// record batch when that batch is transactional. An offset commit of a
    /// transactional batch is pending for that producer (invisible to OffsetFetch)
    /// until its transaction marker, replayed with
    /// [`GroupCoordinator::complete_transaction`], commits or drops it; one with no
    /// marker after it stays pending. Everything else is [`GroupCoordinator::load`]ed,
    /// remembering `record_offset` for the order of transactional commits. Kafka
    /// source: `OffsetMetadataManager.replay(recordOffset, producerId, key, value)`.
    pub fn replay(
        &mut self,
        record_offset: i64,
        transactional_producer: Option<i64>,
        record: GroupRecord,
    ) {
        self.next_log_order = self.next_log_order.max(record_offset.saturating_add(1));
        match (transactional_producer, record) {
            (
                Some(producer_id),
                GroupRecord::Offset {
                    group,
                    topic,
                    partition,
                    offset,
                    leader_epoch,
                    metadata,
                    commit_timestamp_ms,
                    expire_timestamp_ms,
                },
            ) => {
                // Kafka creates the (simple) group when it replays an offset commit.
                self.groups.entry(group.clone()).or_insert_with(|| Group::classic(&group, None));
                let c = CommittedOffset {
                    offset,
                    leader_epoch,
                    metadata,
                    commit_timestamp_ms,
                    expire_timestamp_ms,
                    log_order: record_offset,
                    replaced_log_order: None,
                };
                self.pending.put(producer_id, &group, (topic, partition), c);
            }
            (_, record) => self.load_at(record, record_offset),
        }
    }

    /// [`GroupCoordinator::load`] with the record's place in log order.
    pub(super) fn load_at(&mut self, record: GroupRecord, log_order: i64) {
        self.group_write_succeeded(&record);
        match record {
            GroupRecord::Offset {
                group,
                topic,
                partition,
                offset,
                leader_epoch,
                metadata,
                commit_timestamp_ms,
                expire_timestamp_ms,
            } => {
                let g = self
                    .groups
                    .entry(group.clone())
                    .or_insert_with(|| Group::classic(&group, None));
                g.offsets.insert(
                    (topic, partition),
                    CommittedOffset {
                        offset,
                        leader_epoch,
                        metadata,
                        commit_timestamp_ms,
                        expire_timestamp_ms,
                        log_order,
                        replaced_log_order: None,
                    },
                );
            }
            GroupRecord::OffsetTombstone { group, topic, partition } => {
                // It deletes the partition's pending transactional offsets too (Kafka's
                // replay of an offset tombstone).
                self.pending.remove_partition(&group, &topic, partition);
                if let Some(g) = self.groups.get_mut(&group) {
                    g.offsets.remove(&(topic, partition));
                    if g.offsets.is_empty() && !has_metadata(g) {
                        self.remove_group(&group);
                    }
                }
            }
            GroupRecord::GroupMetadata {
                group,
                protocol_type,
                generation,
                protocol,
                leader,
                current_state_timestamp_ms,
                members,
            } => {
                let mut g = ClassicGroup::new(current_state_timestamp_ms);
                g.protocol_type = (!protocol_type.is_empty()).then_some(protocol_type.clone());
                g.generation = generation;
                g.protocol_name = protocol.clone();
                let protocol = protocol.unwrap_or_default();
                for m in members {
                    if let Some(i) = &m.group_instance_id {
                        g.static_members.insert(i.clone(), m.member_id.clone());
                    }
                    g.members.insert(
                        m.member_id.clone(),
                        Member {
                            member_id: m.member_id,
                            group_instance_id: m.group_instance_id,
                            client_id: m.client_id,
                            client_host: m.client_host,
                            rebalance_timeout_ms: m.rebalance_timeout_ms,
                            session_timeout_ms: m.session_timeout_ms,
                            protocol_type: protocol_type.clone(),
                            protocols: vec![(protocol.clone(), m.subscription)],
                            assignment: m.assignment,
                            awaiting_join: None,
                            awaiting_sync: None,
                            is_new: false,
                            heartbeat_deadline: None,
                        },
                    );
                }
                g.leader = leader
                    .filter(|l| g.members.contains_key(l))
                    .or_else(|| g.members.keys().next().cloned());
                g.state = if g.members.is_empty() { GroupState::Empty } else { GroupState::Stable };
                g.subscribed_topics = g.compute_subscribed_topics();
                self.replace_kind(&group, GroupKind::Classic(g));
            }
            GroupRecord::ConsumerGroup { .. } => {
                let id = record.group().to_string();
                if let Some(cg) = ConsumerGroup::from_record(record) {
                    self.replace_kind(&id, GroupKind::Consumer(cg));
                }
            }
            GroupRecord::GroupTombstone { group } => {
                if let Some(old) = self.remove_group(&group) {
                    if !old.offsets.is_empty() {
                        let mut g = Group::classic(&group, None);
                        g.offsets = old.offsets;
                        self.groups.insert(group, g);
                    }
                }
            }
        }
    }
}

impl GroupCoordinator {
    /// Install `kind` as the state of `group_id`, keeping the offsets it already has.
    pub(super) fn replace_kind(&mut self, group_id: &str, kind: GroupKind) {
        let offsets = self.remove_group(group_id).map(|g| g.offsets).unwrap_or_default();
        let mut g = Group::with_kind(group_id, kind);
        g.offsets = offsets;
        self.groups.insert(group_id.to_string(), g);
    }
}

/// Whether a loaded group carries metadata of its own (not just offsets).
pub(super) fn has_metadata(g: &Group) -> bool {
    match &g.kind {
        GroupKind::Classic(c) => {
            c.generation > 0 || c.protocol_type.is_some() || !c.members.is_empty()
        }
        GroupKind::Consumer(_) => true,
    }
}

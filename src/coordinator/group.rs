//! One group as the coordinator keeps it: what every group has (id, committed offsets,
//! timer slot) and what kind of group it is ([`GroupKind`]: classic or KIP-848
//! consumer). Offset retention and deletion work on this shared view.

use std::collections::BTreeMap;

use super::classic::ClassicGroup;
use super::consumer::ConsumerGroup;
use super::records::GroupRecord;
use super::state::GroupState;

/// Protocol type of Java-compatible consumers (Kafka's `ConsumerProtocol.PROTOCOL_TYPE`).
pub(crate) const CONSUMER_PROTOCOL_TYPE: &str = "consumer";

/// A committed offset (Kafka's `OffsetAndMetadata`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CommittedOffset {
    /// The committed offset (the next record to consume).
    pub offset: i64,
    /// -1 when the client sent none.
    pub leader_epoch: i32,
    /// Client-supplied metadata ("" when none).
    pub metadata: String,
    /// When the commit was accepted (ms).
    pub commit_timestamp_ms: i64,
    /// Explicit expiry (ms) from OffsetCommit v2-v4 `retention_time_ms`; `None` = use
    /// the configured retention.
    pub expire_timestamp_ms: Option<i64>,
    /// Where the record that set this offset stands in the internal log's order
    /// (Kafka's `OffsetAndMetadata.recordOffset`): its offset when replayed; for a
    /// commit since start-up, a number from the coordinator's counter, which follows
    /// the order of the appends and starts above every replayed offset. A
    /// transactional offset replaces a committed one only if it is later in this
    /// order.
    pub log_order: i64,
    /// The `log_order` of the committed offset this one replaced in memory (a commit
    /// since start-up), which undoing this commit's failed write puts back.
    pub replaced_log_order: Option<i64>,
}

/// Committed offsets by (topic, partition).
pub(crate) type Offsets = BTreeMap<(String, i32), CommittedOffset>;

/// The protocol a group speaks. A group is of one kind at a time; an empty group of one
/// kind may become the other (Kafka's `GroupMetadataManager` conversions), keeping its
/// offsets.
#[derive(Debug, Clone)]
pub(crate) enum GroupKind {
    /// JoinGroup / SyncGroup / Heartbeat (Kafka's `GroupMetadata`).
    Classic(ClassicGroup),
    /// ConsumerGroupHeartbeat, KIP-848 (Kafka's `ConsumerGroup`).
    Consumer(ConsumerGroup),
}

/// One group of the coordinator: the parts shared by both kinds.
#[derive(Debug, Clone)]
pub(crate) struct Group {
    /// The group id.
    pub group_id: String,
    /// Committed offsets (kept across kind conversions).
    pub offsets: Offsets,
    /// Deadline (ms) currently indexed in the coordinator's timer set.
    pub scheduled: Option<i64>,
    /// Classic or consumer group state.
    pub kind: GroupKind,
}

impl Group {
    /// A new, Empty classic group; `now` (ms) is its state timestamp (`None` when
    /// rebuilt from records that lacked it).
    pub fn classic(group_id: &str, now: Option<i64>) -> Self {
        Group::with_kind(group_id, GroupKind::Classic(ClassicGroup::new(now)))
    }

    /// A new consumer group without members, created at `now` (ms).
    pub fn consumer(group_id: &str, now: i64) -> Self {
        Group::with_kind(group_id, GroupKind::Consumer(ConsumerGroup::new(Some(now))))
    }

    /// A group of `kind` without offsets.
    pub fn with_kind(group_id: &str, kind: GroupKind) -> Self {
        Group { group_id: group_id.to_string(), offsets: Offsets::new(), scheduled: None, kind }
    }

    /// The classic state; a consumer group is Empty without members and Stable with
    /// (how offset retention, DeleteGroups and OffsetDelete see it).
    pub fn state(&self) -> GroupState {
        match &self.kind {
            GroupKind::Classic(c) => c.state,
            GroupKind::Consumer(cg) if cg.members.is_empty() => GroupState::Empty,
            GroupKind::Consumer(_) => GroupState::Stable,
        }
    }

    /// When the group entered its current state (ms): for a consumer group, when it
    /// last became empty or non-empty.
    pub fn state_timestamp_ms(&self) -> Option<i64> {
        match &self.kind {
            GroupKind::Classic(c) => c.state_timestamp_ms,
            GroupKind::Consumer(cg) => cg.state_timestamp_ms,
        }
    }

    /// The protocol type ("consumer", "connect", ...); `None` for a classic group that
    /// never had members.
    pub fn protocol_type(&self) -> Option<&str> {
        match &self.kind {
            GroupKind::Classic(c) => c.protocol_type.as_deref(),
            GroupKind::Consumer(_) => Some(CONSUMER_PROTOCOL_TYPE),
        }
    }

    /// Whether the members' subscriptions are known (consumer protocol).
    pub fn knows_subscriptions(&self) -> bool {
        match &self.kind {
            GroupKind::Classic(c) => c.subscribed_topics.is_some(),
            GroupKind::Consumer(_) => true,
        }
    }

    /// Kafka's `isSubscribedToTopic`: unknown subscriptions count as subscribed.
    pub fn is_subscribed_to(&self, topic: &str) -> bool {
        match &self.kind {
            GroupKind::Classic(c) => c.subscribed_topics.as_ref().is_none_or(|t| t.contains(topic)),
            GroupKind::Consumer(cg) => cg.is_subscribed_to(topic),
        }
    }

    /// Earliest time (ms) at which this group has timer work.
    pub fn next_deadline(&self) -> Option<i64> {
        match &self.kind {
            GroupKind::Classic(c) => c.next_deadline(),
            GroupKind::Consumer(cg) => cg.next_deadline(),
        }
    }

    /// The records that delete the group: a tombstone per offset, then one for the
    /// group's metadata.
    pub fn tombstones(&self) -> impl Iterator<Item = GroupRecord> + '_ {
        let offsets = self.offsets.keys().map(|(topic, partition)| GroupRecord::OffsetTombstone {
            group: self.group_id.clone(),
            topic: topic.clone(),
            partition: *partition,
        });
        offsets.chain(std::iter::once(GroupRecord::GroupTombstone { group: self.group_id.clone() }))
    }

    /// The classic group, `None` for a consumer group.
    pub fn as_classic_mut(&mut self) -> Option<&mut ClassicGroup> {
        match &mut self.kind {
            GroupKind::Classic(c) => Some(c),
            GroupKind::Consumer(_) => None,
        }
    }

    /// The consumer group, `None` for a classic group.
    pub fn as_consumer(&self) -> Option<&ConsumerGroup> {
        match &self.kind {
            GroupKind::Consumer(cg) => Some(cg),
            GroupKind::Classic(_) => None,
        }
    }

    /// The consumer group, `None` for a classic group.
    pub fn as_consumer_mut(&mut self) -> Option<&mut ConsumerGroup> {
        match &mut self.kind {
            GroupKind::Consumer(cg) => Some(cg),
            GroupKind::Classic(_) => None,
        }
    }
}

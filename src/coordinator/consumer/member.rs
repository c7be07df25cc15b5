//! A member of a consumer group (Kafka's `ConsumerGroupMember`), its reconciliation
//! state (`MemberState`) and the member epochs with a special meaning.

use super::super::assignor::Assignment;
use super::regex::TopicRegex;

/// Member epoch of a member joining (or rejoining) the group.
pub(super) const JOIN_EPOCH: i32 = 0;
/// Member epoch of a member leaving the group.
pub(super) const LEAVE_EPOCH: i32 = -1;
/// Member epoch of a static member leaving temporarily (it will rejoin with a new id).
pub(super) const STATIC_LEAVE_EPOCH: i32 = -2;

/// Reconciliation state of a member (Kafka's `MemberState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MemberState {
    /// At its target (or waiting for a newer one).
    Stable,
    /// Must revoke `pending_revocation` before it can move on.
    UnrevokedPartitions,
    /// Waits for partitions still owned by other members.
    UnreleasedPartitions,
}

impl MemberState {
    /// The stored form: 0 stable, 1 unrevoked partitions, 2 unreleased partitions.
    pub fn code(self) -> u8 {
        match self {
            MemberState::Stable => 0,
            MemberState::UnrevokedPartitions => 1,
            MemberState::UnreleasedPartitions => 2,
        }
    }

    /// The state stored as `c` (unknown codes read as Stable).
    pub fn from_code(c: u8) -> Self {
        match c {
            1 => MemberState::UnrevokedPartitions,
            2 => MemberState::UnreleasedPartitions,
            _ => MemberState::Stable,
        }
    }
}

/// A member of a consumer group (Kafka's `ConsumerGroupMember`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ConsumerMember {
    /// Member id (chosen by the client; v0: possibly by the coordinator).
    pub member_id: String,
    /// group.instance.id of a static member.
    pub instance_id: Option<String>,
    /// client.rack.
    pub rack_id: Option<String>,
    /// Client id from the request header.
    pub client_id: String,
    /// Client address as the caller reported it.
    pub client_host: String,
    /// How long (ms) the member may take to revoke partitions; -1 until known.
    pub rebalance_timeout_ms: i32,
    /// Sorted, deduplicated.
    pub subscribed_topic_names: Vec<String>,
    /// The regex of a `SubscribedTopicRegex` subscription (KIP-848): the member also
    /// subscribes to every topic whose whole name matches it.
    pub subscribed_topic_regex: Option<TopicRegex>,
    /// The server assignor the member asked for.
    pub server_assignor: Option<String>,
    /// Current member epoch.
    pub member_epoch: i32,
    /// Member epoch before the last bump (-1 for a new member).
    pub previous_member_epoch: i32,
    /// Where the member is in its reconciliation.
    pub state: MemberState,
    /// Partitions the member owns (and was told about).
    pub assigned: Assignment,
    /// Partitions the member must revoke (still owned by it).
    pub pending_revocation: Assignment,
    /// Session expiry (ms); not persisted.
    pub session_deadline: Option<i64>,
    /// Revocation must be done by then (ms; rebalance timeout); not persisted.
    pub revocation_deadline: Option<i64>,
}

impl ConsumerMember {
    /// Whether the member subscribes to `topic`, by name or by its regex.
    pub fn subscribes_to(&self, topic: &str) -> bool {
        self.subscribed_topic_names.iter().any(|t| t == topic)
            || self.subscribed_topic_regex.as_ref().is_some_and(|r| r.matches(topic))
    }
    /// A member about to join: epoch 0, no assignment.
    pub fn new(member_id: &str) -> Self {
        ConsumerMember {
            member_id: member_id.to_string(),
            instance_id: None,
            rack_id: None,
            client_id: String::new(),
            client_host: String::new(),
            rebalance_timeout_ms: -1,
            subscribed_topic_names: Vec::new(),
            subscribed_topic_regex: None,
            server_assignor: None,
            member_epoch: JOIN_EPOCH,
            previous_member_epoch: -1,
            state: MemberState::Stable,
            assigned: Assignment::new(),
            pending_revocation: Assignment::new(),
            session_deadline: None,
            revocation_deadline: None,
        }
    }

    /// Move to `epoch`, remembering the current one as the previous epoch.
    pub fn set_epoch(&mut self, epoch: i32) {
        if epoch != self.member_epoch {
            self.previous_member_epoch = self.member_epoch;
            self.member_epoch = epoch;
        }
    }

    /// Same durable state (ignores the deadlines).
    pub fn same_state(&self, other: &ConsumerMember) -> bool {
        self.member_epoch == other.member_epoch
            && self.previous_member_epoch == other.previous_member_epoch
            && self.state == other.state
            && self.assigned == other.assigned
            && self.pending_revocation == other.pending_revocation
    }

    /// Whether the member is waiting to revoke partitions.
    pub fn is_revoking(&self) -> bool {
        self.state == MemberState::UnrevokedPartitions
    }

    /// Restart the revocation timer (`now` + rebalance timeout, ms) if the member must
    /// revoke partitions; clear it otherwise.
    pub fn arm_revocation_timer(&mut self, now: i64) {
        self.revocation_deadline =
            self.is_revoking().then(|| now + self.rebalance_timeout_ms.max(0) as i64);
    }
}

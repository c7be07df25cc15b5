//! One member of a classic group (Kafka's `MemberMetadata`).

use bytes::Bytes;

use super::RequestToken;

/// A request parked until the group can answer it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Parked {
    /// The caller's token for the request.
    pub token: RequestToken,
    /// API version the request came with (the response is shaped for it).
    pub version: i16,
}

/// A group member. Kafka source: `kafka.coordinator.group.MemberMetadata`.
#[derive(Debug, Clone)]
pub(crate) struct Member {
    /// Coordinator-assigned member id.
    pub member_id: String,
    /// group.instance.id of a static member.
    pub group_instance_id: Option<String>,
    /// Client id from the JoinGroup request header.
    pub client_id: String,
    /// Client address as the caller reported it.
    pub client_host: String,
    /// Max time (ms) the coordinator waits for this member to rejoin in a rebalance.
    pub rebalance_timeout_ms: i32,
    /// The member is removed if no heartbeat arrives for this long (ms).
    pub session_timeout_ms: i32,
    /// Protocol type the member joined with.
    pub protocol_type: String,
    /// (protocol name, metadata) in the member's order of preference.
    pub protocols: Vec<(String, Bytes)>,
    /// Assignment of the current generation (empty until the leader's SyncGroup).
    pub assignment: Bytes,
    /// Parked JoinGroup (Kafka's `awaitingJoinCallback`).
    pub awaiting_join: Option<Parked>,
    /// Parked SyncGroup (Kafka's `awaitingSyncCallback`).
    pub awaiting_sync: Option<Parked>,
    /// Joined during the current rebalance and not yet through a completed join.
    pub is_new: bool,
    /// When (ms) the member expires without a heartbeat; `None` = not armed.
    pub heartbeat_deadline: Option<i64>,
}

impl Member {
    /// The metadata this member sent for `protocol` (empty if it does not support it).
    pub fn metadata(&self, protocol: &str) -> Bytes {
        self.protocols
            .iter()
            .find(|(n, _)| n == protocol)
            .map(|(_, m)| m.clone())
            .unwrap_or_default()
    }

    /// Same protocols with the same metadata, in the same order (Kafka's `matches`).
    pub fn matches(&self, protocols: &[(String, Bytes)]) -> bool {
        self.protocols == protocols
    }

    /// The member's preferred protocol among `candidates` (Kafka's `vote`).
    pub fn vote<'a>(&'a self, candidates: &[&str]) -> Option<&'a str> {
        self.protocols.iter().map(|(n, _)| n.as_str()).find(|n| candidates.contains(n))
    }

    /// Whether the member counts as alive for session expiry (Kafka's
    /// `hasSatisfiedHeartbeat` when the timer fires): members parked in a rebalance are
    /// exempt, except new members which expire after the new-member join timeout.
    pub fn heartbeat_exempt(&self) -> bool {
        !self.is_new && (self.awaiting_join.is_some() || self.awaiting_sync.is_some())
    }

    /// The session deadline that matters for expiry, if any.
    pub fn effective_deadline(&self) -> Option<i64> {
        if self.heartbeat_exempt() {
            None
        } else {
            self.heartbeat_deadline
        }
    }
}

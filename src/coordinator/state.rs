//! The classic group states (Kafka's `GroupState`).

/// State of a classic group. Kafka source: `kafka.coordinator.group.GroupState`.
///
/// Transitions: Empty -> PreparingRebalance -> CompletingRebalance -> Stable ->
/// PreparingRebalance ...; PreparingRebalance -> Empty when every member left;
/// Empty -> Dead when deleted or its last offset expired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GroupState {
    /// No members; the group may still hold committed offsets.
    Empty,
    /// Waiting for members to (re)join; JoinGroup responses are parked.
    PreparingRebalance,
    /// Join done, waiting for the leader's SyncGroup with the assignment.
    CompletingRebalance,
    /// Assignment distributed; members heartbeat.
    Stable,
    /// Removed; never observed through the API (dead groups are forgotten).
    Dead,
}

impl GroupState {
    /// The name Kafka reports in DescribeGroups / ListGroups ("Empty", "Stable", ...).
    pub fn as_str(self) -> &'static str {
        match self {
            GroupState::Empty => "Empty",
            GroupState::PreparingRebalance => "PreparingRebalance",
            GroupState::CompletingRebalance => "CompletingRebalance",
            GroupState::Stable => "Stable",
            GroupState::Dead => "Dead",
        }
    }
}

//! Coordinator tunables (Kafka's `GroupConfig` / `OffsetConfig`).

/// Limits and timers of the group coordinator. Defaults are Apache Kafka's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoordinatorConfig {
    /// `group.min.session.timeout.ms`: smallest session timeout a member may ask for
    /// (ms); smaller gets INVALID_SESSION_TIMEOUT. Default 6000.
    pub min_session_timeout_ms: i32,
    /// `group.max.session.timeout.ms`: largest session timeout a member may ask for (ms);
    /// larger gets INVALID_SESSION_TIMEOUT. Default 1800000 (30 min).
    pub max_session_timeout_ms: i32,
    /// `group.initial.rebalance.delay.ms`: how long the first rebalance of an Empty group
    /// waits for more members (ms); each new join extends it by this much again, up to
    /// the rebalance timeout. Default 3000.
    pub initial_rebalance_delay_ms: i32,
    /// `group.max.size`: members per group; more get GROUP_MAX_SIZE_REACHED.
    /// Default `i32::MAX`.
    pub max_group_size: i32,
    /// `offsets.retention.minutes` in ms: committed offsets of an Empty group (or of a
    /// topic a Stable consumer group no longer subscribes to) expire this long after the
    /// group emptied / the last commit. Default 7 days.
    pub offsets_retention_ms: i64,
    /// `offsets.retention.check.interval.ms`: how often expired offsets and empty groups
    /// are cleaned up (ms). Default 600000 (10 min).
    pub offsets_retention_check_interval_ms: i64,
    /// `offset.metadata.max.bytes`: longest commit metadata string (bytes); longer gets
    /// OFFSET_METADATA_TOO_LARGE. Default 4096.
    pub offset_metadata_max_bytes: usize,
    /// `group.consumer.heartbeat.interval.ms`: heartbeat interval (ms) given to
    /// consumer-protocol (KIP-848) members in ConsumerGroupHeartbeat. Default 5000.
    pub consumer_heartbeat_interval_ms: i32,
    /// `group.consumer.session.timeout.ms`: a consumer-protocol member that does not
    /// heartbeat for this long (ms) is removed. Default 45000.
    pub consumer_session_timeout_ms: i32,
}

/// Kafka's `GroupCoordinator.NewMemberJoinTimeoutMs`: a new member parked in JoinGroup
/// is dropped after this long (ms) if the rebalance has not completed.
pub(crate) const NEW_MEMBER_JOIN_TIMEOUT_MS: i64 = 5 * 60 * 1000;

impl Default for CoordinatorConfig {
    fn default() -> Self {
        CoordinatorConfig {
            min_session_timeout_ms: 6_000,
            max_session_timeout_ms: 1_800_000,
            initial_rebalance_delay_ms: 3_000,
            max_group_size: i32::MAX,
            offsets_retention_ms: 7 * 24 * 60 * 60 * 1000,
            offsets_retention_check_interval_ms: 600_000,
            offset_metadata_max_bytes: 4096,
            consumer_heartbeat_interval_ms: 5_000,
            consumer_session_timeout_ms: 45_000,
        }
    }
}

//! Consumer group coordinator for the classic group protocol and the consumer group
//! protocol of KIP-848 (ConsumerGroupHeartbeat / ConsumerGroupDescribe with server-side
//! assignment), and committed offsets.
//!
//! [`GroupCoordinator`] is a pure, deterministic state machine modelled on Apache Kafka's
//! `kafka.coordinator.group.GroupCoordinator` / `GroupMetadata`: it does no I/O, owns no
//! timers and never sleeps. The shard that owns a group feeds it decoded requests and the
//! current time (ms since the Unix epoch) and executes the [`Output`]s it returns:
//!
//! - [`Output::Persist`]: append the [`GroupRecord`] (encoded with [`GroupRecord::encode`])
//!   to the coordinator's internal log.
//! - [`Output::PersistTransactional`]: append these offset records as one
//!   transactional record batch of the producer (TxnOffsetCommit).
//! - [`Output::Respond`]: send the response for the request identified by `token`. A
//!   `Respond` may only be sent once every `Persist` that precedes it in the same `Vec`
//!   is durable (this is how OffsetCommit, the leader's SyncGroup and DeleteGroups wait
//!   for their writes, like Kafka's `storeOffsets`/`storeGroup` callbacks).
//!
//! Requests may be *parked* (JoinGroup during a rebalance, follower SyncGroup until the
//! leader's assignment arrives); their `Respond` comes out of a later call, possibly
//! [`GroupCoordinator::tick`]. Every token handed in is answered exactly once.
//!
//! Timers: after any call, [`GroupCoordinator::next_deadline`] says when `tick` next has
//! work (session expiry, rebalance timeout, initial rebalance delay, pending-sync timeout,
//! offset retention). Calling `tick` early is harmless.
//!
//! Start-up: `set_loading(true, _)`, feed every record of the internal log to
//! [`GroupCoordinator::replay`] in log order (with its offset, and its producer id when
//! its batch is transactional) and every transaction marker to
//! [`GroupCoordinator::complete_transaction`], then `set_loading(false, now_ms)`. While
//! loading, group requests get COORDINATOR_LOAD_IN_PROGRESS (SyncGroup gets
//! REBALANCE_IN_PROGRESS, as Kafka does for old clients).
//!
//! Lives on: the one shard (core) that coordinates its groups; never shared across cores.
//!
//! # Layout
//!
//! A `Group` (`group.rs`) holds what both kinds share (id, committed offsets, timer
//! slot) and a `GroupKind`: a classic group or a KIP-848 consumer
//! group. An empty group of one kind becomes the other on its first JoinGroup /
//! ConsumerGroupHeartbeat, keeping its offsets.
//!
//! - `group.rs`: the shared group and the kind enum;
//! - classic protocol: `classic.rs` (the group), `member.rs`, `state.rs`, `join.rs`,
//!   `rebalance.rs`, `sync.rs`, `heartbeat.rs`, `leave.rs`, `timers.rs`, `ctx.rs` (per
//!   call context and the parked JoinGroup / SyncGroup answers);
//! - `consumer/`: the consumer group protocol (KIP-848), with `assignor.rs`;
//! - `offsets/`: OffsetCommit, OffsetFetch, OffsetDelete, retention, TxnOffsetCommit
//!   and the pending transactional offsets that transaction markers complete;
//! - `describe.rs`: ListGroups, DescribeGroups, DeleteGroups;
//! - `failed_write.rs`: the error a response carries when its write failed;
//! - `records.rs` (the stored format), `codec.rs` (its value encoding), `load.rs`
//!   (replaying the records at start-up);
//! - `config.rs`: tunables.

mod assignor;
mod classic;
mod codec;
mod config;
mod consumer;
mod ctx;
mod describe;
/// RE2-syntax regexes matched against whole names (KIP-848 topic regexes; also
/// ListTransactions v2's transactional id pattern, KIP-1152).
pub(crate) use consumer::regex::TopicRegex;
pub use describe::GroupSummary;
mod failed_write;
mod group;
mod heartbeat;
mod join;
mod kafka_records;
mod leave;
mod load;
mod member;
mod offsets;
mod rebalance;
mod records;
mod state;
mod sync;
mod timers;

#[cfg(test)]
mod tests;

use std::collections::{BTreeSet, HashMap};

pub use config::CoordinatorConfig;
pub use failed_write::{answer_failed_write, answer_failed_write_with, FAILED_WRITE_ERROR};
pub use records::{ConsumerMemberRecord, DecodeError, GroupRecord, MemberRecord};
pub use state::GroupState;

use group::{Group, GroupKind};
use kafka_protocol::messages::ResponseKind;
use kafka_protocol::ResponseError;

/// Identifies one in-flight request so that a parked response can be delivered later.
/// Chosen by the caller; the coordinator only echoes it back in [`Output::Respond`].
pub type RequestToken = u64;

/// One action the caller must carry out, in `Vec` order.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// Send `response` as the answer to the request identified by `token`.
    Respond {
        /// The token the request was submitted with.
        token: RequestToken,
        /// The response body; encode it with the version the request came with.
        response: ResponseKind,
    },
    /// Append this record to the internal log. Any `Respond` after it in the same `Vec`
    /// must wait until the append is durable.
    Persist(GroupRecord),
    /// Append these offset records to the internal log as ONE transactional record
    /// batch of producer `producer_id` at `producer_epoch` (TxnOffsetCommit; Kafka's
    /// coordinator runtime writes a transaction's offsets the same way). Any `Respond`
    /// after it waits for it, as for `Persist`. If the append fails, call
    /// [`GroupCoordinator::transactional_write_failed`] with the same producer id and
    /// records, and answer the responses after it with the append's error
    /// (INVALID_PRODUCER_EPOCH when the log fenced the epoch, else the error of
    /// [`answer_failed_write`]).
    PersistTransactional {
        /// The transactional producer's id.
        producer_id: i64,
        /// Its epoch (the log refuses an epoch older than one it has seen).
        producer_epoch: i16,
        /// [`GroupRecord::Offset`]s, in request order.
        records: Vec<GroupRecord>,
    },
}

/// The group coordinator (classic and consumer groups) for the groups of one shard.
///
/// Kafka source: `GroupCoordinator` + `GroupMetadataManager` (offset cache, cleanup).
/// Lives on: the coordinating shard only.
pub struct GroupCoordinator {
    groups: HashMap<String, Group>,
    config: CoordinatorConfig,
    /// True while the internal log is being replayed (COORDINATOR_LOAD_IN_PROGRESS).
    loading: bool,
    /// (deadline ms, group id) for every group with timer work; exactly one entry per
    /// such group, mirrored by `Group::scheduled`.
    timers: BTreeSet<(i64, String)>,
    /// Next periodic offset-retention / empty-group cleanup (ms); `None` until first use.
    next_retention_check_ms: Option<i64>,
    /// Where generated member ids come from.
    ids: MemberIds,
    /// Topic name -> (topic id, partition count), for server-side assignment.
    topics: consumer::TopicCatalog,
    /// The last stored [`GroupRecord::ConsumerGroup`] of every KIP-848 group that has
    /// one (replayed, or written and acknowledged by the log): what a failed write of a
    /// later one puts the group back to ([`GroupCoordinator::group_write_failed`]).
    durable_consumer_groups: HashMap<String, GroupRecord>,
    /// Offsets of transactions still open (TxnOffsetCommit, or replayed from a
    /// transactional batch without its marker yet), invisible to OffsetFetch until
    /// [`GroupCoordinator::complete_transaction`] commits them.
    pending: offsets::PendingOffsets,
    /// The next `log_order` a committed or pending offset gets (see
    /// `CommittedOffset::log_order`): above every replayed record offset.
    next_log_order: i64,
}

/// Source of generated member ids: random v4 UUIDs, or `Some((seed, counter))` for
/// reproducible ids (simulation, tests).
struct MemberIds(Option<(u64, u64)>);

impl MemberIds {
    /// The next UUID.
    fn next_uuid(&mut self) -> uuid::Uuid {
        match &mut self.0 {
            Some((seed, counter)) => {
                *counter += 1;
                uuid::Uuid::from_u64_pair(*seed, *counter)
            }
            None => uuid::Uuid::new_v4(),
        }
    }

    /// A classic member id: `{prefix}-{uuid}` (Kafka's `clientId-UUID` form).
    fn next_member_id(&mut self, prefix: &str) -> String {
        let uuid = self.next_uuid();
        format!("{prefix}-{uuid}")
    }
}

impl GroupCoordinator {
    /// A coordinator with no groups, not loading.
    pub fn new(config: CoordinatorConfig) -> Self {
        GroupCoordinator {
            groups: HashMap::new(),
            config,
            loading: false,
            timers: BTreeSet::new(),
            next_retention_check_ms: None,
            ids: MemberIds(None),
            topics: consumer::TopicCatalog::new(),
            durable_consumer_groups: HashMap::new(),
            pending: offsets::PendingOffsets::default(),
            next_log_order: 0,
        }
    }

    /// Generate member ids from `seed` and a counter instead of random v4 UUIDs, so that
    /// a run is fully reproducible (deterministic simulation, tests).
    pub fn with_deterministic_member_ids(mut self, seed: u64) -> Self {
        self.ids = MemberIds(Some((seed, 0)));
        self
    }

    /// The configuration this coordinator was built with.
    pub fn config(&self) -> &CoordinatorConfig {
        &self.config
    }

    /// Whether state is being rebuilt from the internal log (requests answered with
    /// COORDINATOR_LOAD_IN_PROGRESS).
    pub fn is_loading(&self) -> bool {
        self.loading
    }

    /// Set or clear the loading flag. Clearing it at `now_ms` arms the session timers of
    /// loaded members (deadline `now_ms + session_timeout_ms`) and the retention check, as
    /// Kafka's `GroupCoordinator.onGroupLoaded` does.
    pub fn set_loading(&mut self, loading: bool, now_ms: i64) {
        self.loading = loading;
        if !loading {
            let ids: Vec<String> = self.groups.keys().cloned().collect();
            let consumer_session_ms = self.config.consumer_session_timeout_ms as i64;
            for id in ids {
                match self.groups.get_mut(&id).map(|g| &mut g.kind) {
                    Some(GroupKind::Classic(c)) => {
                        for m in c.members.values_mut() {
                            m.heartbeat_deadline = Some(now_ms + m.session_timeout_ms as i64);
                        }
                    }
                    Some(GroupKind::Consumer(cg)) => cg.arm_timers(consumer_session_ms, now_ms),
                    None => {}
                }
                self.reschedule(&id);
            }
            self.next_retention_check_ms =
                Some(now_ms + self.config.offsets_retention_check_interval_ms);
        }
    }

    /// The state of `group_id`, or `None` if the coordinator does not know it (Dead).
    /// A consumer-protocol group is Empty without members and Stable with.
    pub fn group_state(&self, group_id: &str) -> Option<GroupState> {
        self.groups.get(group_id).map(|g| g.state())
    }

    /// The current generation of `group_id` (0 for a new group, and for a
    /// consumer-protocol group, which has epochs instead: see `consumer_group_state`).
    pub fn group_generation(&self, group_id: &str) -> Option<i32> {
        self.groups.get(group_id).map(|g| match &g.kind {
            GroupKind::Classic(c) => c.generation,
            GroupKind::Consumer(_) => 0,
        })
    }

    /// Member ids of the classic group `group_id` in join order (none for unknown and
    /// consumer-protocol groups).
    pub fn group_members(&self, group_id: &str) -> Vec<String> {
        match self.groups.get(group_id).map(|g| &g.kind) {
            Some(GroupKind::Classic(c)) => c.members.keys().cloned().collect(),
            _ => Vec::new(),
        }
    }

    /// Number of groups currently known (not Dead).
    pub fn group_count(&self) -> usize {
        self.groups.len()
    }

    /// Kafka's `validateGroupStatus`: INVALID_GROUP_ID (empty id where the API requires
    /// one) or COORDINATOR_LOAD_IN_PROGRESS.
    fn validate_group_status(&self, group_id: &str, allow_empty_id: bool) -> Option<ResponseError> {
        if group_id.is_empty() && !allow_empty_id {
            Some(ResponseError::InvalidGroupId)
        } else if self.loading {
            Some(ResponseError::CoordinatorLoadInProgress)
        } else {
            None
        }
    }

    /// Recompute the group's earliest deadline and index it in the timer set.
    fn reschedule(&mut self, group_id: &str) {
        let Some(g) = self.groups.get_mut(group_id) else {
            return;
        };
        let d = g.next_deadline();
        if d != g.scheduled {
            if let Some(old) = g.scheduled.take() {
                self.timers.remove(&(old, group_id.to_string()));
            }
            g.scheduled = d;
            if let Some(d) = d {
                self.timers.insert((d, group_id.to_string()));
            }
        }
    }

    /// Arm the periodic retention check the first time the coordinator sees traffic.
    fn touch_retention_timer(&mut self, now_ms: i64) {
        if self.next_retention_check_ms.is_none() && !self.loading {
            self.next_retention_check_ms =
                Some(now_ms + self.config.offsets_retention_check_interval_ms);
        }
    }

    /// The `log_order` for the next offset written (see `CommittedOffset::log_order`).
    fn take_log_order(&mut self) -> i64 {
        let order = self.next_log_order;
        self.next_log_order += 1;
        order
    }

    /// Forget a group and its timer entry.
    fn remove_group(&mut self, group_id: &str) -> Option<Group> {
        let g = self.groups.remove(group_id)?;
        if let Some(d) = g.scheduled {
            self.timers.remove(&(d, group_id.to_string()));
        }
        Some(g)
    }
}

//! The consumer group protocol of KIP-848 (`group.protocol=consumer`):
//! ConsumerGroupHeartbeat and ConsumerGroupDescribe with server-side assignment.
//! Kafka source: `GroupMetadataManager.consumerGroupHeartbeat` / `consumerGroupLeave` /
//! `consumerGroupDescribe`, `ConsumerGroup`, `ConsumerGroupMember`,
//! `CurrentAssignmentBuilder`.
//!
//! Model: a group has a *group epoch*, bumped whenever membership, subscriptions or the
//! metadata of subscribed topics change. Each bump recomputes the *target assignment*
//! (here eagerly, so the assignment epoch follows the group epoch). Every member
//! reconciles towards its target on its own heartbeats: partitions it must give up are
//! first removed from its assignment (it stays at its old member epoch, state
//! UNREVOKED_PARTITIONS) until it reports (`topic_partitions`) that it no longer owns
//! them; partitions still owned by another member are withheld (UNRELEASED_PARTITIONS)
//! until that member released them. A member reaches the group's epoch once nothing is
//! left to revoke.
//!
//! A consumer group lives in the same [`Group`] as classic groups (the committed
//! offsets, retention and deletion are shared); `Group::consumer` holds its KIP-848
//! state and the classic fields mirror it (protocol type "consumer", state Empty or
//! Stable, subscribed topics) so that offset expiry and OffsetDelete treat it like a
//! classic consumer group.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use bytes::{BufMut, BytesMut};
use indexmap::IndexMap;
use kafka_protocol::messages::consumer_group_describe_response as cgd;
use kafka_protocol::messages::consumer_group_heartbeat_response as cgh;
use kafka_protocol::messages::{
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse, ConsumerProtocolAssignment, ConsumerProtocolSubscription,
    ResponseKind, TopicName,
};
use kafka_protocol::protocol::Encodable;
use kafka_protocol::ResponseError;
use uuid::Uuid;

use super::assignor::{self, Assignment, MemberSpec, TopicSpec};
use super::ctx::{sb, Ctx};
use super::group::{Group, CONSUMER_PROTOCOL_TYPE};
use super::records::{ConsumerMemberRecord, GroupRecord};
use super::state::GroupState;
use super::{GroupCoordinator, Output, RequestToken};

/// Topic name -> (topic id, partition count): the broker's topic catalog.
pub(crate) type TopicCatalog = HashMap<String, (Uuid, i32)>;

/// Member epoch of a member joining (or rejoining) the group.
const JOIN_EPOCH: i32 = 0;
/// Member epoch of a member leaving the group.
const LEAVE_EPOCH: i32 = -1;
/// Member epoch of a static member leaving temporarily (it will rejoin with a new id).
const STATIC_LEAVE_EPOCH: i32 = -2;

/// AclOperation bits READ(3) | DELETE(6) | DESCRIBE(8) (no authorizer configured).
const GROUP_AUTHORIZED_OPERATIONS: i32 = (1 << 3) | (1 << 6) | (1 << 8);

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
    fn code(self) -> u8 {
        match self {
            MemberState::Stable => 0,
            MemberState::UnrevokedPartitions => 1,
            MemberState::UnreleasedPartitions => 2,
        }
    }

    fn from_code(c: u8) -> Self {
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
    pub member_id: String,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    /// Sorted, deduplicated.
    pub subscribed_topic_names: Vec<String>,
    pub server_assignor: Option<String>,
    pub member_epoch: i32,
    pub previous_member_epoch: i32,
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
    fn new(member_id: &str) -> Self {
        ConsumerMember {
            member_id: member_id.to_string(),
            instance_id: None,
            rack_id: None,
            client_id: String::new(),
            client_host: String::new(),
            rebalance_timeout_ms: -1,
            subscribed_topic_names: Vec::new(),
            server_assignor: None,
            member_epoch: 0,
            previous_member_epoch: -1,
            state: MemberState::Stable,
            assigned: Assignment::new(),
            pending_revocation: Assignment::new(),
            session_deadline: None,
            revocation_deadline: None,
        }
    }

    fn set_epoch(&mut self, epoch: i32) {
        if epoch != self.member_epoch {
            self.previous_member_epoch = self.member_epoch;
            self.member_epoch = epoch;
        }
    }

    /// Same durable state (ignores the deadlines).
    fn same_state(&self, other: &ConsumerMember) -> bool {
        self.member_epoch == other.member_epoch
            && self.previous_member_epoch == other.previous_member_epoch
            && self.state == other.state
            && self.assigned == other.assigned
            && self.pending_revocation == other.pending_revocation
    }
}

/// The KIP-848 state of a consumer group (Kafka's `ConsumerGroup`).
#[derive(Debug, Clone, Default)]
pub(crate) struct ConsumerGroup {
    pub group_epoch: i32,
    pub assignment_epoch: i32,
    /// Members in join order.
    pub members: IndexMap<String, ConsumerMember>,
    /// instance id -> member id.
    pub static_members: HashMap<String, String>,
    /// member id -> target assignment (absent = empty).
    pub target: HashMap<String, Assignment>,
    /// (topic id, partition) -> epoch of the member owning it (assigned or pending
    /// revocation). Absent = free.
    pub partition_epochs: HashMap<(Uuid, i32), i32>,
    /// Subscribed topics that exist: name -> (id, partitions).
    pub subscription_metadata: BTreeMap<String, (Uuid, i32)>,
}

/// An error answer: (code, message).
type Fail = (i16, Option<String>);

fn fail(e: ResponseError, msg: impl Into<String>) -> Fail {
    (e.code(), Some(msg.into()))
}

impl ConsumerGroup {
    /// Kafka's `ConsumerGroup.state`: Empty, Assigning, Reconciling or Stable.
    pub fn state_name(&self) -> &'static str {
        if self.members.is_empty() {
            "Empty"
        } else if self.group_epoch > self.assignment_epoch {
            "Assigning"
        } else if self
            .members
            .values()
            .any(|m| m.member_epoch != self.assignment_epoch || m.state != MemberState::Stable)
        {
            "Reconciling"
        } else {
            "Stable"
        }
    }

    /// The server assignor most members ask for (ties: smallest name); uniform if none.
    pub fn assignor(&self) -> String {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for m in self.members.values() {
            if let Some(a) = &m.server_assignor {
                *counts.entry(a.as_str()).or_default() += 1;
            }
        }
        let mut best: Option<(&str, usize)> = None;
        for (a, n) in counts {
            if best.is_none_or(|(_, b)| n > b) {
                best = Some((a, n));
            }
        }
        best.map_or(assignor::UNIFORM, |(a, _)| a).to_string()
    }

    /// Union of the members' subscriptions.
    pub fn subscribed_topics(&self) -> BTreeSet<String> {
        self.members.values().flat_map(|m| m.subscribed_topic_names.iter().cloned()).collect()
    }

    /// Kafka's `computeSubscriptionMetadata`: the subscribed topics found in `catalog`.
    fn compute_subscription_metadata(
        &self,
        catalog: &TopicCatalog,
    ) -> BTreeMap<String, (Uuid, i32)> {
        self.subscribed_topics()
            .into_iter()
            .filter_map(|t| catalog.get(&t).map(|&v| (t, v)))
            .collect()
    }

    /// Recompute the target assignment for the current group epoch.
    fn compute_target(&mut self) {
        let assignor = self.assignor();
        let topics: Vec<TopicSpec> = self
            .subscription_metadata
            .iter()
            .map(|(name, &(id, n))| (id, name.clone(), n))
            .collect();
        let specs: Vec<MemberSpec> = self
            .members
            .values()
            .map(|m| MemberSpec {
                member_id: &m.member_id,
                topics: m
                    .subscribed_topic_names
                    .iter()
                    .filter_map(|t| self.subscription_metadata.get(t).map(|v| v.0))
                    .collect(),
                current: self.target.get(&m.member_id),
            })
            .collect();
        let target = assignor::assign(&assignor, &specs, &topics);
        self.target = target;
        self.assignment_epoch = self.group_epoch;
    }

    /// Bump the group epoch and recompute the target assignment.
    fn bump(&mut self) {
        self.group_epoch += 1;
        self.compute_target();
    }

    /// Insert or replace a member, keeping partition epochs and the static index.
    fn put_member(&mut self, m: ConsumerMember) {
        if let Some(old) = self.members.get(&m.member_id) {
            let old = old.clone();
            self.remove_epochs(&old);
        }
        for (tid, ps) in m.assigned.iter().chain(m.pending_revocation.iter()) {
            for &p in ps {
                self.partition_epochs.insert((*tid, p), m.member_epoch);
            }
        }
        if let Some(i) = &m.instance_id {
            self.static_members.insert(i.clone(), m.member_id.clone());
        }
        self.members.insert(m.member_id.clone(), m);
    }

    fn remove_epochs(&mut self, m: &ConsumerMember) {
        for (tid, ps) in m.assigned.iter().chain(m.pending_revocation.iter()) {
            for &p in ps {
                if self.partition_epochs.get(&(*tid, p)) == Some(&m.member_epoch) {
                    self.partition_epochs.remove(&(*tid, p));
                }
            }
        }
    }

    /// Forget a member (its partitions become free); its target is dropped.
    fn remove_member(&mut self, member_id: &str) -> Option<ConsumerMember> {
        let m = self.members.shift_remove(member_id)?;
        self.remove_epochs(&m);
        if let Some(i) = &m.instance_id {
            if self.static_members.get(i).map(|s| s.as_str()) == Some(member_id) {
                self.static_members.remove(i);
            }
        }
        self.target.remove(member_id);
        Some(m)
    }

    /// Kafka's `consumerGroupFenceMember`: remove the member and bump the group epoch.
    /// Topics nobody subscribes to any more drop out of the subscription metadata.
    fn fence_member(&mut self, member_id: &str) {
        if self.remove_member(member_id).is_none() {
            return;
        }
        let subscribed = self.subscribed_topics();
        self.subscription_metadata.retain(|t, _| subscribed.contains(t));
        self.bump();
    }

    /// Earliest session or revocation deadline of the members.
    pub fn next_deadline(&self) -> Option<i64> {
        self.members
            .values()
            .flat_map(|m| {
                let rev =
                    m.revocation_deadline.filter(|_| m.state == MemberState::UnrevokedPartitions);
                [m.session_deadline, rev]
            })
            .flatten()
            .min()
    }

    /// The durable form of the group.
    pub fn record(&self, group_id: &str, state_ts: Option<i64>) -> GroupRecord {
        let parts = |a: &Assignment| -> Vec<(Uuid, Vec<i32>)> {
            a.iter()
                .filter(|(_, ps)| !ps.is_empty())
                .map(|(t, ps)| (*t, ps.iter().copied().collect()))
                .collect()
        };
        GroupRecord::ConsumerGroup {
            group: group_id.to_string(),
            group_epoch: self.group_epoch,
            assignment_epoch: self.assignment_epoch,
            current_state_timestamp_ms: state_ts,
            subscription_metadata: self
                .subscription_metadata
                .iter()
                .map(|(n, &(id, p))| (n.clone(), id, p))
                .collect(),
            members: self
                .members
                .values()
                .map(|m| ConsumerMemberRecord {
                    member_id: m.member_id.clone(),
                    instance_id: m.instance_id.clone(),
                    rack_id: m.rack_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    rebalance_timeout_ms: m.rebalance_timeout_ms,
                    subscribed_topic_names: m.subscribed_topic_names.clone(),
                    server_assignor: m.server_assignor.clone(),
                    member_epoch: m.member_epoch,
                    previous_member_epoch: m.previous_member_epoch,
                    state: m.state.code(),
                    assigned: parts(&m.assigned),
                    pending_revocation: parts(&m.pending_revocation),
                    target: self.target.get(&m.member_id).map(parts).unwrap_or_default(),
                })
                .collect(),
        }
    }
}

fn to_assignment(parts: &[(Uuid, Vec<i32>)]) -> Assignment {
    let mut a = Assignment::new();
    for (t, ps) in parts {
        a.entry(*t).or_default().extend(ps.iter().copied());
    }
    a.retain(|_, ps| !ps.is_empty());
    a
}

/// Whether the member (per its report; `None` = unknown, assumed yes) still owns any of
/// `partitions` (Kafka's `ownsRevokedPartitions`).
fn owns_any(owned: Option<&Assignment>, partitions: &Assignment) -> bool {
    let Some(owned) = owned else { return true };
    owned.iter().any(|(t, ps)| partitions.get(t).is_some_and(|r| ps.iter().any(|p| r.contains(p))))
}

/// Whether `owned` is known and a subset of `assigned` (Kafka's `isSubset`).
fn is_subset(owned: Option<&Assignment>, assigned: &Assignment) -> bool {
    let Some(owned) = owned else { return false };
    owned.iter().all(|(t, ps)| {
        ps.is_empty() || assigned.get(t).is_some_and(|a| ps.iter().all(|p| a.contains(p)))
    })
}

/// Kafka's `CurrentAssignmentBuilder.build`: the member's next state towards `target`.
fn reconcile(
    m: &ConsumerMember,
    target_epoch: i32,
    target: &Assignment,
    owned: Option<&Assignment>,
    epochs: &HashMap<(Uuid, i32), i32>,
) -> ConsumerMember {
    match m.state {
        MemberState::Stable if m.member_epoch == target_epoch => m.clone(),
        MemberState::UnrevokedPartitions if owns_any(owned, &m.pending_revocation) => m.clone(),
        _ => next_assignment(m, target_epoch, target, owned, epochs),
    }
}

/// Kafka's `CurrentAssignmentBuilder.computeNextAssignment`.
fn next_assignment(
    m: &ConsumerMember,
    target_epoch: i32,
    target: &Assignment,
    owned: Option<&Assignment>,
    epochs: &HashMap<(Uuid, i32), i32>,
) -> ConsumerMember {
    let mut assigned = Assignment::new();
    let mut revoke = Assignment::new();
    let mut pending_assign = Assignment::new();
    let mut unreleased = false;
    let topics: BTreeSet<Uuid> = target.keys().chain(m.assigned.keys()).copied().collect();
    let empty = BTreeSet::new();
    for t in topics {
        let tgt = target.get(&t).unwrap_or(&empty);
        let cur = m.assigned.get(&t).unwrap_or(&empty);
        let keep: BTreeSet<i32> = cur.intersection(tgt).copied().collect();
        let gone: BTreeSet<i32> = cur.difference(&keep).copied().collect();
        let own_revoking = m.pending_revocation.get(&t).unwrap_or(&empty);
        let mut add = BTreeSet::new();
        for &p in tgt.difference(&keep) {
            if epochs.contains_key(&(t, p)) && !own_revoking.contains(&p) {
                unreleased = true;
            } else {
                add.insert(p);
            }
        }
        if !keep.is_empty() {
            assigned.insert(t, keep);
        }
        if !gone.is_empty() {
            revoke.insert(t, gone);
        }
        if !add.is_empty() {
            pending_assign.insert(t, add);
        }
    }
    let mut n = m.clone();
    if !revoke.is_empty() && owns_any(owned, &revoke) {
        // Revoke first, at the current epoch.
        n.state = MemberState::UnrevokedPartitions;
        n.assigned = assigned;
        n.pending_revocation = revoke;
        return n;
    }
    for (t, ps) in pending_assign {
        assigned.entry(t).or_default().extend(ps);
    }
    n.set_epoch(target_epoch);
    n.state = if unreleased { MemberState::UnreleasedPartitions } else { MemberState::Stable };
    n.assigned = assigned;
    n.pending_revocation = Assignment::new();
    n
}

/// Kafka's `throwIfMemberEpochIsInvalid`: a larger epoch, or a smaller one other than
/// the previous epoch with owned partitions within the current assignment (a lost
/// response), is fenced.
fn check_member_epoch(
    m: &ConsumerMember,
    received: i32,
    owned: Option<&Assignment>,
) -> Result<(), Fail> {
    let ok = received == m.member_epoch
        || (received < m.member_epoch
            && received == m.previous_member_epoch
            && is_subset(owned, &m.assigned));
    if ok {
        Ok(())
    } else {
        Err(fail(
            ResponseError::FencedMemberEpoch,
            format!(
                "The consumer group member has a {} member epoch ({received}) than the one known by the group coordinator ({}). The member must abandon all its partitions and rejoin.",
                if received > m.member_epoch { "greater" } else { "smaller" },
                m.member_epoch
            ),
        ))
    }
}

/// Kafka's `throwIfConsumerGroupHeartbeatRequestIsInvalid`.
fn validate_request(
    version: i16,
    req: &ConsumerGroupHeartbeatRequest,
    has_regex: bool,
) -> Result<(), Fail> {
    let invalid = |m: &str| fail(ResponseError::InvalidRequest, m);
    let epoch = req.member_epoch;
    if req.member_id.is_empty() && (version >= 1 || epoch > 0 || epoch == LEAVE_EPOCH) {
        return Err(invalid("MemberId can't be empty."));
    }
    if req.group_id.0.is_empty() {
        return Err(invalid("GroupId can't be empty."));
    }
    if req.instance_id.as_ref().is_some_and(|s| s.is_empty()) {
        return Err(invalid("InstanceId can't be empty."));
    }
    if req.rack_id.as_ref().is_some_and(|s| s.is_empty()) {
        return Err(invalid("RackId can't be empty."));
    }
    if epoch == JOIN_EPOCH {
        if req.rebalance_timeout_ms == -1 {
            return Err(invalid("RebalanceTimeoutMs must be provided in first request."));
        }
        if !req.topic_partitions.as_ref().is_some_and(|t| t.is_empty()) {
            return Err(invalid("TopicPartitions must be empty when (re-)joining."));
        }
        if req.subscribed_topic_names.is_none() && !has_regex {
            return Err(invalid(
                "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.",
            ));
        }
    } else if epoch == STATIC_LEAVE_EPOCH {
        if req.instance_id.is_none() {
            return Err(invalid("InstanceId can't be null."));
        }
    } else if epoch < STATIC_LEAVE_EPOCH {
        return Err(invalid(&format!(
            "MemberEpoch is {epoch}, but must be greater than or equal to -2."
        )));
    }
    if has_regex {
        return Err(fail(
            ResponseError::InvalidRegularExpression,
            "SubscribedTopicRegex is not supported by this broker; subscribe to topic names.",
        ));
    }
    if let Some(a) = &req.server_assignor {
        if !assignor::SUPPORTED.contains(&a.as_str()) {
            return Err(fail(
                ResponseError::UnsupportedAssignor,
                format!(
                    "ServerAssignor {a} is not supported. Supported assignors: {}.",
                    assignor::SUPPORTED.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// The heartbeat response form of an assignment.
fn response_assignment(a: &Assignment) -> cgh::Assignment {
    let mut r = cgh::Assignment::default();
    r.topic_partitions = a
        .iter()
        .map(|(t, ps)| {
            let mut tp = cgh::TopicPartitions::default();
            tp.topic_id = *t;
            tp.partitions = ps.iter().copied().collect();
            tp
        })
        .collect();
    r
}

impl GroupCoordinator {
    /// ConsumerGroupHeartbeat, versions 0-1 (KIP-848). Kafka source:
    /// `GroupMetadataManager.consumerGroupHeartbeat`.
    ///
    /// `member_epoch` 0 joins (v0: an empty member id gets a generated one; v1: the
    /// client's id is required), -1 leaves, -2 is a static member's temporary leave (it
    /// keeps its assignment until it rejoins with its `instance_id` or its session
    /// expires). Any other epoch is a heartbeat: fields left null keep their values.
    /// Subscription or assignor changes bump the group epoch and recompute the target
    /// assignment (server assignor "uniform" by default, or "range"; the group uses the
    /// one most members ask for). The response carries the member's epoch, the heartbeat
    /// interval and, when the request was a full one (joining, or all of
    /// rebalance timeout, subscription and owned partitions given) or the assignment
    /// changed, the member's assignment. Restarts the member's session timer
    /// (`consumer_session_timeout_ms`). Changes are persisted (one
    /// [`GroupRecord::ConsumerGroup`]) before the response.
    ///
    /// Errors (top level, with a message): COORDINATOR_LOAD_IN_PROGRESS, INVALID_REQUEST
    /// (missing/empty fields), UNSUPPORTED_ASSIGNOR, INVALID_REGULAR_EXPRESSION (regex
    /// subscriptions are not supported), UNKNOWN_MEMBER_ID (unknown member, or unknown
    /// group with a non-zero epoch), FENCED_MEMBER_EPOCH, FENCED_INSTANCE_ID,
    /// UNRELEASED_INSTANCE_ID (static member still active under another id),
    /// GROUP_MAX_SIZE_REACHED, GROUP_ID_NOT_FOUND (the id belongs to a classic group
    /// with members; an empty classic group is converted, keeping its offsets).
    #[allow(clippy::too_many_arguments)]
    pub fn consumer_group_heartbeat(
        &mut self,
        token: RequestToken,
        version: i16,
        req: ConsumerGroupHeartbeatRequest,
        client_id: &str,
        client_host: &str,
        now_ms: i64,
    ) -> Vec<Output> {
        let mut out = Vec::new();
        self.touch_retention_timer(now_ms);
        let group_id = req.group_id.0.to_string();
        let before = self.consumer_record(&group_id);
        let result = self.do_consumer_heartbeat(version, &req, client_id, client_host, now_ms);
        self.after_consumer_change(&group_id, before, now_ms, &mut out);
        let r = result.unwrap_or_else(|(code, msg)| {
            let mut r = ConsumerGroupHeartbeatResponse::default();
            r.error_code = code;
            r.error_message = msg.as_deref().map(sb);
            r
        });
        out.push(Output::Respond { token, response: ResponseKind::ConsumerGroupHeartbeat(r) });
        out
    }

    /// The persisted form of `group_id` if it is a consumer group.
    fn consumer_record(&self, group_id: &str) -> Option<GroupRecord> {
        let g = self.groups.get(group_id)?;
        g.consumer.as_ref().map(|c| c.record(group_id, g.state_timestamp_ms))
    }

    /// Mirror the consumer state into the classic fields, persist the group if its
    /// durable state changed, reschedule its timers.
    fn after_consumer_change(
        &mut self,
        group_id: &str,
        before: Option<GroupRecord>,
        now: i64,
        out: &mut Vec<Output>,
    ) {
        if let Some(g) = self.groups.get_mut(group_id) {
            g.sync_consumer_view(now);
        }
        let after = self.consumer_record(group_id);
        if let Some(r) = after {
            if Some(&r) != before.as_ref() {
                out.push(Output::Persist(r));
            }
        }
        self.reschedule(group_id);
    }

    fn do_consumer_heartbeat(
        &mut self,
        version: i16,
        req: &ConsumerGroupHeartbeatRequest,
        client_id: &str,
        client_host: &str,
        now: i64,
    ) -> Result<ConsumerGroupHeartbeatResponse, Fail> {
        if self.loading {
            return Err((ResponseError::CoordinatorLoadInProgress.code(), None));
        }
        let has_regex =
            version >= 1 && req.subscribed_topic_regex.as_ref().is_some_and(|r| !r.is_empty());
        validate_request(version, req, has_regex)?;
        let group_id = req.group_id.0.as_str();
        let epoch = req.member_epoch;
        let instance = req.instance_id.as_ref().map(|s| s.to_string());
        if epoch == LEAVE_EPOCH || epoch == STATIC_LEAVE_EPOCH {
            return self.consumer_leave(group_id, &req.member_id, instance.as_deref(), epoch, now);
        }
        self.get_or_create_consumer_group(group_id, epoch == JOIN_EPOCH, now)?;
        let member_id = if req.member_id.is_empty() {
            self.next_uuid().to_string()
        } else {
            req.member_id.to_string()
        };
        let owned: Option<Assignment> = req.topic_partitions.as_ref().map(|tps| {
            to_assignment(
                &tps.iter().map(|tp| (tp.topic_id, tp.partitions.clone())).collect::<Vec<_>>(),
            )
        });
        let max_size = self.config.max_group_size.max(0) as usize;
        let session_ms = self.config.consumer_session_timeout_ms as i64;
        let interval = self.config.consumer_heartbeat_interval_ms;
        let catalog = &self.topics;
        let g = self.groups.get_mut(group_id).expect("group exists");
        let cg = g.consumer.as_mut().expect("consumer group");

        // The member before this request (`old`), and the one this request updates.
        let existing_static = instance
            .as_ref()
            .and_then(|i| cg.static_members.get(i))
            .and_then(|id| cg.members.get(id))
            .cloned();
        let replacing = epoch == JOIN_EPOCH
            && existing_static.as_ref().is_some_and(|e| e.member_id != member_id);
        if !cg.members.contains_key(&member_id) && !replacing && cg.members.len() >= max_size {
            return Err(fail(
                ResponseError::GroupMaxSizeReached,
                format!(
                    "The consumer group has reached its maximum capacity of {max_size} members."
                ),
            ));
        }
        let (old, mut member) = match (&instance, existing_static) {
            (Some(i), Some(e)) if e.member_id != member_id => {
                if epoch != JOIN_EPOCH {
                    return Err(fail(
                        ResponseError::FencedInstanceId,
                        format!("Static member {member_id} with instance id {i} was fenced by member {}.", e.member_id),
                    ));
                }
                if e.member_epoch != STATIC_LEAVE_EPOCH {
                    return Err(fail(
                        ResponseError::UnreleasedInstanceId,
                        format!(
                            "Static member with instance id {i} is still in use by member {}.",
                            e.member_id
                        ),
                    ));
                }
                // The static member comes back under a new id: it takes over the old
                // member's assignment and target, without a rebalance.
                let target = cg.target.remove(&e.member_id);
                cg.remove_member(&e.member_id);
                let mut m = ConsumerMember::new(&member_id);
                m.assigned = e.assigned.clone();
                m.subscribed_topic_names = e.subscribed_topic_names.clone();
                m.server_assignor = e.server_assignor.clone();
                m.rack_id = e.rack_id.clone();
                m.rebalance_timeout_ms = e.rebalance_timeout_ms;
                if let Some(t) = target {
                    cg.target.insert(member_id.clone(), t);
                }
                let old = m.clone();
                cg.put_member(m.clone());
                (old, m)
            }
            (Some(i), None) if epoch != JOIN_EPOCH => {
                return Err(fail(
                    ResponseError::UnknownMemberId,
                    format!("Instance id {i} is unknown."),
                ));
            }
            _ => match cg.members.get(&member_id) {
                Some(m) if epoch == JOIN_EPOCH => {
                    // Rejoin with the same id: the member released everything.
                    let old = m.clone();
                    let mut m = m.clone();
                    m.member_epoch = 0;
                    m.previous_member_epoch = -1;
                    m.state = MemberState::Stable;
                    m.assigned.clear();
                    m.pending_revocation.clear();
                    m.revocation_deadline = None;
                    (old, m)
                }
                Some(m) => {
                    check_member_epoch(m, epoch, owned.as_ref())?;
                    (m.clone(), m.clone())
                }
                None if epoch == JOIN_EPOCH => {
                    let m = ConsumerMember::new(&member_id);
                    (m.clone(), m)
                }
                None => {
                    return Err(fail(
                        ResponseError::UnknownMemberId,
                        format!("Member {member_id} is not a member of group {group_id}."),
                    ));
                }
            },
        };
        let assigned_before = old.assigned.clone();

        // 1. Update the member; a changed subscription or assignor bumps the group epoch.
        if let Some(i) = &instance {
            member.instance_id = Some(i.clone());
        }
        if let Some(r) = &req.rack_id {
            member.rack_id = Some(r.to_string());
        }
        if req.rebalance_timeout_ms != -1 {
            member.rebalance_timeout_ms = req.rebalance_timeout_ms;
        }
        if let Some(a) = &req.server_assignor {
            member.server_assignor = Some(a.to_string());
        }
        if let Some(names) = &req.subscribed_topic_names {
            let set: BTreeSet<String> = names.iter().map(|n| n.0.to_string()).collect();
            member.subscribed_topic_names = set.into_iter().collect();
        }
        member.client_id = client_id.to_string();
        member.client_host = client_host.to_string();
        let changed = member.subscribed_topic_names != old.subscribed_topic_names
            || member.server_assignor != old.server_assignor;
        cg.put_member(member);
        if changed {
            cg.subscription_metadata = cg.compute_subscription_metadata(catalog);
            cg.bump();
        }

        // 2. Reconcile the member with its target assignment.
        let current = cg.members[&member_id].clone();
        let target = cg.target.get(&member_id).cloned().unwrap_or_default();
        let mut next =
            reconcile(&current, cg.assignment_epoch, &target, owned.as_ref(), &cg.partition_epochs);
        if !next.same_state(&current) {
            next.revocation_deadline = (next.state == MemberState::UnrevokedPartitions)
                .then(|| now + next.rebalance_timeout_ms.max(0) as i64);
        }
        next.session_deadline = Some(now + session_ms);
        cg.put_member(next.clone());

        let mut r = ConsumerGroupHeartbeatResponse::default();
        r.member_id = Some(sb(&member_id));
        r.member_epoch = next.member_epoch;
        r.heartbeat_interval_ms = interval;
        let full = epoch == JOIN_EPOCH
            || (req.rebalance_timeout_ms != -1
                && (req.subscribed_topic_names.is_some() || has_regex)
                && req.topic_partitions.is_some());
        if full || next.assigned != assigned_before {
            r.assignment = Some(response_assignment(&next.assigned));
        }
        Ok(r)
    }

    /// Kafka's `getOrMaybeCreateConsumerGroup`.
    fn get_or_create_consumer_group(
        &mut self,
        group_id: &str,
        create: bool,
        now: i64,
    ) -> Result<(), Fail> {
        match self.groups.get(group_id) {
            Some(g) if g.consumer.is_some() => Ok(()),
            None if create => {
                let mut g = Group::new(group_id, Some(now));
                g.consumer = Some(Box::default());
                self.groups.insert(group_id.to_string(), g);
                Ok(())
            }
            None => Err(fail(
                ResponseError::UnknownMemberId,
                format!("Consumer group {group_id} not found."),
            )),
            Some(g) if create && g.is_empty_classic() => {
                // An empty classic group (e.g. simple commits only) becomes a consumer
                // group; its offsets stay.
                let old = self.remove_group(group_id).expect("group exists");
                let mut g = Group::new(group_id, Some(now));
                g.offsets = old.offsets;
                g.consumer = Some(Box::default());
                self.groups.insert(group_id.to_string(), g);
                Ok(())
            }
            Some(_) => Err(fail(
                ResponseError::GroupIdNotFound,
                format!("Group {group_id} is not a consumer group."),
            )),
        }
    }

    /// Kafka's `consumerGroupLeave`: epoch -1 removes the member (group epoch bump);
    /// epoch -2 (static members) keeps its assignment for its successor.
    fn consumer_leave(
        &mut self,
        group_id: &str,
        member_id: &str,
        instance: Option<&str>,
        epoch: i32,
        now: i64,
    ) -> Result<ConsumerGroupHeartbeatResponse, Fail> {
        let session_ms = self.config.consumer_session_timeout_ms as i64;
        let Some(g) = self.groups.get_mut(group_id) else {
            return Err(fail(
                ResponseError::UnknownMemberId,
                format!("Consumer group {group_id} not found."),
            ));
        };
        let Some(cg) = g.consumer.as_mut() else {
            return Err(fail(
                ResponseError::GroupIdNotFound,
                format!("Group {group_id} is not a consumer group."),
            ));
        };
        let unknown = || {
            fail(
                ResponseError::UnknownMemberId,
                format!("Member {member_id} is not a member of group {group_id}."),
            )
        };
        match instance {
            None => {
                if !cg.members.contains_key(member_id) {
                    return Err(unknown());
                }
                cg.fence_member(member_id);
            }
            Some(i) => {
                let Some(current) = cg.static_members.get(i).cloned() else {
                    return Err(unknown());
                };
                if current != member_id {
                    return Err(fail(
                        ResponseError::FencedInstanceId,
                        format!("Static member {member_id} with instance id {i} was fenced by member {current}."),
                    ));
                }
                if epoch == STATIC_LEAVE_EPOCH {
                    // Partitions pending revocation are released; the rest stays owned
                    // for the member's successor (same instance id).
                    let mut m = cg.members[member_id].clone();
                    m.pending_revocation.clear();
                    m.member_epoch = STATIC_LEAVE_EPOCH;
                    m.state = MemberState::Stable;
                    m.revocation_deadline = None;
                    // It must come back within the session timeout.
                    m.session_deadline = Some(now + session_ms);
                    cg.put_member(m);
                } else {
                    cg.fence_member(member_id);
                }
            }
        }
        let mut r = ConsumerGroupHeartbeatResponse::default();
        r.member_id = Some(sb(member_id));
        r.member_epoch = epoch;
        Ok(r)
    }

    /// ConsumerGroupDescribe, versions 0-1. Kafka source:
    /// `GroupMetadataManager.consumerGroupDescribe`.
    ///
    /// Per group: state (Empty, Assigning, Reconciling, Stable), group and assignment
    /// epochs, the assignor in use, and each member with its epoch, client, subscription,
    /// current and target assignment (topic id and name; topics no longer in the catalog
    /// are left out). Errors per group: COORDINATOR_LOAD_IN_PROGRESS, GROUP_ID_NOT_FOUND
    /// (unknown, or a classic group), INVALID_GROUP_ID (empty id).
    pub fn consumer_group_describe(
        &mut self,
        token: RequestToken,
        version: i16,
        req: ConsumerGroupDescribeRequest,
        _now_ms: i64,
    ) -> Vec<Output> {
        let names: HashMap<Uuid, &str> =
            self.topics.iter().map(|(n, (id, _))| (*id, n.as_str())).collect();
        let describe = |a: &Assignment| -> cgd::Assignment {
            let mut r = cgd::Assignment::default();
            r.topic_partitions = a
                .iter()
                .filter_map(|(t, ps)| {
                    let name = names.get(t)?;
                    let mut tp = cgd::TopicPartitions::default();
                    tp.topic_id = *t;
                    tp.topic_name = TopicName(sb(name));
                    tp.partitions = ps.iter().copied().collect();
                    Some(tp)
                })
                .collect();
            r
        };
        let mut r = ConsumerGroupDescribeResponse::default();
        for id in &req.group_ids {
            let mut d = cgd::DescribedGroup::default();
            d.group_id = id.clone();
            let group = self.groups.get(id.0.as_str());
            if let Some(code) = self.validate_group_status(&id.0, false) {
                d.error_code = code;
            } else if let Some(cg) = group.and_then(|g| g.consumer.as_ref()) {
                d.group_state = sb(cg.state_name());
                d.group_epoch = cg.group_epoch;
                d.assignment_epoch = cg.assignment_epoch;
                d.assignor_name = sb(&cg.assignor());
                if req.include_authorized_operations {
                    d.authorized_operations = GROUP_AUTHORIZED_OPERATIONS;
                }
                let empty = Assignment::new();
                d.members = cg
                    .members
                    .values()
                    .map(|m| {
                        let mut dm = cgd::Member::default();
                        dm.member_id = sb(&m.member_id);
                        dm.instance_id = m.instance_id.as_deref().map(sb);
                        dm.rack_id = m.rack_id.as_deref().map(sb);
                        dm.member_epoch = m.member_epoch;
                        dm.client_id = sb(&m.client_id);
                        dm.client_host = sb(&m.client_host);
                        dm.subscribed_topic_names =
                            m.subscribed_topic_names.iter().map(|t| TopicName(sb(t))).collect();
                        dm.assignment = describe(&m.assigned);
                        dm.target_assignment =
                            describe(cg.target.get(&m.member_id).unwrap_or(&empty));
                        if version >= 1 {
                            dm.member_type = 1;
                        }
                        dm
                    })
                    .collect();
            } else {
                d.error_code = ResponseError::GroupIdNotFound.code();
                d.error_message = Some(sb(&if group.is_some() {
                    format!("Group {} is not a consumer group.", id.0)
                } else {
                    format!("Group {} not found.", id.0)
                }));
            }
            r.groups.push(d);
        }
        vec![Output::Respond { token, response: ResponseKind::ConsumerGroupDescribe(r) }]
    }

    /// Replace the topic catalog the server-side assignors work from (topic name ->
    /// (topic id, partition count)); the shard calls this once after
    /// `set_loading(false, _)` and then whenever topics are created, deleted or grow.
    /// Consumer groups whose subscribed topics changed get a new group epoch and target
    /// assignment (persisted: execute the returned [`Output::Persist`]s); members pick it
    /// up on their next heartbeat. While loading, the catalog is only stored (no group
    /// is re-evaluated until the next call). Without a catalog, members subscribe to
    /// topics that do not exist and get no partitions.
    pub fn set_topic_metadata(&mut self, topics: TopicCatalog, now_ms: i64) -> Vec<Output> {
        self.topics = topics;
        let mut out = Vec::new();
        if self.loading {
            return out;
        }
        let mut ids: Vec<String> = self
            .groups
            .iter()
            .filter(|(_, g)| g.consumer.is_some())
            .map(|(id, _)| id.clone())
            .collect();
        ids.sort();
        for id in ids {
            let before = self.consumer_record(&id);
            let catalog = &self.topics;
            let g = self.groups.get_mut(&id).expect("group exists");
            let cg = g.consumer.as_mut().expect("consumer group");
            let meta = cg.compute_subscription_metadata(catalog);
            if meta != cg.subscription_metadata {
                cg.subscription_metadata = meta;
                cg.bump();
            }
            self.after_consumer_change(&id, before, now_ms, &mut out);
        }
        out
    }

    /// KIP-848 state of a consumer group: (state name, group epoch, assignment epoch);
    /// `None` for unknown and classic groups.
    pub fn consumer_group_state(&self, group_id: &str) -> Option<(&'static str, i32, i32)> {
        let cg = self.groups.get(group_id)?.consumer.as_ref()?;
        Some((cg.state_name(), cg.group_epoch, cg.assignment_epoch))
    }
}

impl Group {
    /// A classic group that can become a consumer group: no members, nothing pending.
    pub fn is_empty_classic(&self) -> bool {
        self.consumer.is_none()
            && self.is(GroupState::Empty)
            && self.members.is_empty()
            && self.pending_members.is_empty()
    }

    /// Mirror a consumer group into the classic fields: protocol type "consumer", state
    /// Empty without members and Stable with, the subscribed topics.
    pub fn sync_consumer_view(&mut self, now: i64) {
        let Some(cg) = &self.consumer else { return };
        let want = if cg.members.is_empty() { GroupState::Empty } else { GroupState::Stable };
        self.protocol_type = Some(CONSUMER_PROTOCOL_TYPE.to_string());
        self.subscribed_topics = Some(cg.subscribed_topics().into_iter().collect());
        if self.state != want {
            self.transition(want, now);
        }
    }

    /// Session expiry and revocation (rebalance) timeout of consumer-group members
    /// (Kafka's `scheduleConsumerGroupSessionTimeout` / `...RebalanceTimeout`): the
    /// member is fenced and the group epoch bumped; the group is persisted.
    pub fn expire_consumer_members(&mut self, ctx: &mut Ctx) -> bool {
        let Some(cg) = self.consumer.as_mut() else {
            return false;
        };
        let now = ctx.now;
        let expired: Vec<String> = cg
            .members
            .values()
            .filter(|m| {
                m.session_deadline.is_some_and(|d| d <= now)
                    || (m.state == MemberState::UnrevokedPartitions
                        && m.revocation_deadline.is_some_and(|d| d <= now))
            })
            .map(|m| m.member_id.clone())
            .collect();
        if expired.is_empty() {
            return false;
        }
        for id in &expired {
            cg.fence_member(id);
        }
        self.sync_consumer_view(now);
        let cg = self.consumer.as_ref().expect("consumer group");
        ctx.persist(cg.record(&self.group_id, self.state_timestamp_ms));
        true
    }

    /// Arm every consumer member's session (and pending revocation) timer from `now`
    /// (after loading).
    pub fn arm_consumer_timers(&mut self, session_ms: i64, now: i64) {
        if let Some(cg) = self.consumer.as_mut() {
            for m in cg.members.values_mut() {
                m.session_deadline = Some(now + session_ms);
                m.revocation_deadline = (m.state == MemberState::UnrevokedPartitions)
                    .then(|| now + m.rebalance_timeout_ms.max(0) as i64);
            }
        }
    }

    /// Rebuild a consumer group from its record (start-up).
    pub fn from_consumer_record(record: GroupRecord) -> Group {
        let GroupRecord::ConsumerGroup {
            group,
            group_epoch,
            assignment_epoch,
            current_state_timestamp_ms,
            subscription_metadata,
            members,
        } = record
        else {
            unreachable!("not a consumer group record")
        };
        let mut cg = ConsumerGroup {
            group_epoch,
            assignment_epoch,
            subscription_metadata: subscription_metadata
                .into_iter()
                .map(|(n, id, p)| (n, (id, p)))
                .collect(),
            ..ConsumerGroup::default()
        };
        for m in members {
            let mut cm = ConsumerMember::new(&m.member_id);
            cm.instance_id = m.instance_id;
            cm.rack_id = m.rack_id;
            cm.client_id = m.client_id;
            cm.client_host = m.client_host;
            cm.rebalance_timeout_ms = m.rebalance_timeout_ms;
            cm.subscribed_topic_names = m.subscribed_topic_names;
            cm.server_assignor = m.server_assignor;
            cm.member_epoch = m.member_epoch;
            cm.previous_member_epoch = m.previous_member_epoch;
            cm.state = MemberState::from_code(m.state);
            cm.assigned = to_assignment(&m.assigned);
            cm.pending_revocation = to_assignment(&m.pending_revocation);
            cg.target.insert(m.member_id.clone(), to_assignment(&m.target));
            cg.put_member(cm);
        }
        let mut g = Group::new(&group, current_state_timestamp_ms);
        g.consumer = Some(Box::new(cg));
        let ts = g.state_timestamp_ms;
        g.sync_consumer_view(0);
        g.state_timestamp_ms = ts;
        g
    }

    /// DescribeGroups for a consumer group, in the classic shape: the state, protocol
    /// type "consumer", the assignor as protocol, and per member a
    /// ConsumerProtocolSubscription (v0) as metadata and a ConsumerProtocolAssignment
    /// (v0) with its current partitions, so that classic admin tools can show it.
    pub fn describe_consumer_classic(
        &self,
        names: &HashMap<Uuid, String>,
    ) -> Option<(String, String, Vec<ClassicMemberView>)> {
        let cg = self.consumer.as_ref()?;
        let members = cg
            .members
            .values()
            .map(|m| {
                let mut sub = BytesMut::new();
                sub.put_i16(0);
                let _ = ConsumerProtocolSubscription::default()
                    .with_topics(m.subscribed_topic_names.iter().map(|t| sb(t)).collect())
                    .encode(&mut sub, 0);
                let mut asg = BytesMut::new();
                asg.put_i16(0);
                let _ = ConsumerProtocolAssignment::default()
                    .with_assigned_partitions(
                        m.assigned
                            .iter()
                            .filter_map(|(t, ps)| {
                                let name = names.get(t)?;
                                Some(
                                    kafka_protocol::messages::consumer_protocol_assignment::TopicPartition::default()
                                        .with_topic(TopicName(sb(name)))
                                        .with_partitions(ps.iter().copied().collect()),
                                )
                            })
                            .collect(),
                    )
                    .encode(&mut asg, 0);
                ClassicMemberView {
                    member_id: m.member_id.clone(),
                    instance_id: m.instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    metadata: sub.freeze(),
                    assignment: asg.freeze(),
                }
            })
            .collect();
        Some((cg.state_name().to_string(), cg.assignor(), members))
    }
}

/// A consumer-group member as DescribeGroups shows it.
pub(crate) struct ClassicMemberView {
    pub member_id: String,
    pub instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub metadata: bytes::Bytes,
    pub assignment: bytes::Bytes,
}

/// Kafka's `ConsumerGroup.validateOffsetCommit` / `validateOffsetFetch` for a member of
/// a consumer group: UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH (epoch ahead of the
/// coordinator's), STALE_MEMBER_EPOCH (behind). A negative epoch on a group without
/// members is accepted (admin / `assign()` commits).
pub(crate) fn validate_member_epoch(
    cg: &ConsumerGroup,
    member_id: &str,
    epoch: i32,
) -> Option<i16> {
    if epoch < 0 && cg.members.is_empty() {
        return None;
    }
    let Some(m) = cg.members.get(member_id) else {
        return Some(ResponseError::UnknownMemberId.code());
    };
    if epoch > m.member_epoch {
        Some(ResponseError::FencedMemberEpoch.code())
    } else if epoch < m.member_epoch {
        Some(ResponseError::StaleMemberEpoch.code())
    } else {
        None
    }
}

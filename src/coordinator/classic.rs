//! A classic group's state (Kafka's `GroupMetadata`): members, generation, protocol
//! and the rebalance deadlines the coordinator watches. Offsets live in the shared
//! [`Group`](super::group::Group).

use std::collections::{HashMap, HashSet};

use bytes::Bytes;
use indexmap::IndexMap;
use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::ConsumerProtocolSubscription;
use kafka_protocol::protocol::Decodable;
use kafka_protocol::ResponseError;

use super::ctx::{Ctx, JoinResult, SyncResult};
use super::group::CONSUMER_PROTOCOL_TYPE;
use super::member::Member;
use super::records::{GroupRecord, MemberRecord};
use super::state::GroupState;
use crate::protocol::strings::sb;

/// The pending rebalance completion (Kafka's `DelayedJoin` / `InitialDelayedJoin`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JoinTimer {
    /// First rebalance of an Empty group: never completes early; at `deadline`, if new
    /// members arrived and `remaining_ms > 0`, it is extended.
    Initial {
        deadline: i64,
        /// This timer's delay (ms).
        delay_ms: i64,
        /// How much longer (ms) the delay may still be extended.
        remaining_ms: i64,
    },
    /// Completes as soon as every member rejoined, or at `deadline` (rebalance timeout).
    Regular { deadline: i64 },
}

impl JoinTimer {
    /// When the timer fires (ms).
    pub fn deadline(&self) -> i64 {
        match *self {
            JoinTimer::Initial { deadline, .. } | JoinTimer::Regular { deadline } => deadline,
        }
    }
}

/// One classic group. Kafka source: `kafka.coordinator.group.GroupMetadata`.
#[derive(Debug, Clone)]
pub(crate) struct ClassicGroup {
    /// Never Dead: a group that dies is forgotten at once.
    pub state: GroupState,
    /// When the group entered its current state (ms); `None` for groups loaded from
    /// records that lacked it.
    pub state_timestamp_ms: Option<i64>,
    /// Generation id: bumped by every completed join phase (0 for a new group).
    pub generation: i32,
    /// Protocol type of the members ("consumer", "connect", ...); `None` until the
    /// first member joined.
    pub protocol_type: Option<String>,
    /// The selected protocol (assignor) of the current generation.
    pub protocol_name: Option<String>,
    /// Member id of the leader (computes the assignment in its SyncGroup).
    pub leader: Option<String>,
    /// Members in join order (the order is what makes leader re-election deterministic).
    pub members: IndexMap<String, Member>,
    /// group.instance.id -> member id.
    pub static_members: HashMap<String, String>,
    /// Member ids handed out with MEMBER_ID_REQUIRED -> session deadline (ms).
    pub pending_members: IndexMap<String, i64>,
    /// Members that have not sent SyncGroup for the current generation.
    pub pending_sync: HashSet<String>,
    /// Kafka's `DelayedSync`: when (ms) pending-sync members are removed.
    pub sync_deadline: Option<i64>,
    /// The pending rebalance completion while PreparingRebalance.
    pub join_timer: Option<JoinTimer>,
    /// A member joined during the initial delay (extends it).
    pub new_member_added: bool,
    /// Topics the consumer-protocol members subscribe to; `None` = unknown.
    pub subscribed_topics: Option<HashSet<String>>,
}

impl ClassicGroup {
    /// An Empty group; `now` (ms) is its state timestamp.
    pub fn new(now: Option<i64>) -> Self {
        ClassicGroup {
            state: GroupState::Empty,
            state_timestamp_ms: now,
            generation: 0,
            protocol_type: None,
            protocol_name: None,
            leader: None,
            members: IndexMap::new(),
            static_members: HashMap::new(),
            pending_members: IndexMap::new(),
            pending_sync: HashSet::new(),
            sync_deadline: None,
            join_timer: None,
            new_member_added: false,
            subscribed_topics: None,
        }
    }

    /// Empty, without members or MEMBER_ID_REQUIRED ids outstanding: the group may
    /// become a consumer group (Kafka's `ClassicGroup.isEmpty` check before conversion).
    pub fn is_empty(&self) -> bool {
        self.is(GroupState::Empty) && self.members.is_empty() && self.pending_members.is_empty()
    }

    /// Enter `state` at `now` (ms).
    pub fn transition(&mut self, state: GroupState, now: i64) {
        self.state = state;
        self.state_timestamp_ms = Some(now);
    }

    /// Whether the group is in `state`.
    pub fn is(&self, state: GroupState) -> bool {
        self.state == state
    }

    /// Whether `member_id` leads the group.
    pub fn is_leader(&self, member_id: &str) -> bool {
        self.leader.as_deref() == Some(member_id)
    }

    /// Members with a parked JoinGroup.
    pub fn num_awaiting_join(&self) -> usize {
        self.members.values().filter(|m| m.awaiting_join.is_some()).count()
    }

    /// Kafka's `hasAllMembersJoined`.
    pub fn has_all_members_joined(&self) -> bool {
        self.members.len() == self.num_awaiting_join() && self.pending_members.is_empty()
    }

    /// Largest rebalance timeout of the members (ms); 0 without members.
    pub fn rebalance_timeout_ms(&self) -> i64 {
        self.members.values().map(|m| m.rebalance_timeout_ms as i64).max().unwrap_or(0)
    }

    /// The member id currently holding group.instance.id `instance_id`.
    pub fn current_static_member_id(&self, instance_id: &str) -> Option<&str> {
        self.static_members.get(instance_id).map(|s| s.as_str())
    }

    /// Kafka's `supportsProtocols`: an Empty group takes any non-empty type and list;
    /// otherwise the type must match and one protocol must be supported by all members.
    pub fn supports_protocols(&self, protocol_type: &str, protocols: &[(String, Bytes)]) -> bool {
        if self.is(GroupState::Empty) {
            !protocol_type.is_empty() && !protocols.is_empty()
        } else {
            self.protocol_type.as_deref() == Some(protocol_type)
                && protocols.iter().any(|(name, _)| {
                    self.members.values().all(|m| m.protocols.iter().any(|(n, _)| n == name))
                })
        }
    }

    /// Kafka's `selectProtocol`: among protocols every member supports, each member votes
    /// for its most preferred; most votes wins (ties: first voted, in member order).
    pub fn select_protocol(&self) -> Option<String> {
        let first = self.members.values().next()?;
        let candidates: Vec<&str> = first
            .protocols
            .iter()
            .map(|(n, _)| n.as_str())
            .filter(|n| self.members.values().all(|m| m.protocols.iter().any(|(p, _)| p == n)))
            .collect();
        let mut votes: IndexMap<&str, usize> = IndexMap::new();
        for m in self.members.values() {
            if let Some(v) = m.vote(&candidates) {
                *votes.entry(v).or_insert(0) += 1;
            }
        }
        let mut best: Option<(&str, usize)> = None;
        for (p, n) in votes {
            if best.is_none_or(|(_, b)| n > b) {
                best = Some((p, n));
            }
        }
        best.map(|(p, _)| p.to_string())
    }

    /// Kafka's `GroupMetadata.add`.
    pub fn add_member(&mut self, member: Member) {
        if let Some(instance) = &member.group_instance_id {
            self.static_members.insert(instance.clone(), member.member_id.clone());
        }
        if self.members.is_empty() {
            self.protocol_type = Some(member.protocol_type.clone());
        }
        if self.leader.is_none() {
            self.leader = Some(member.member_id.clone());
        }
        self.pending_members.shift_remove(&member.member_id);
        self.members.insert(member.member_id.clone(), member);
    }

    /// Kafka's `GroupMetadata.remove`, plus: any request the member still has parked is
    /// answered with UNKNOWN_MEMBER_ID so that no token is left unanswered.
    pub fn remove_member(&mut self, member_id: &str, ctx: &mut Ctx) -> Option<Member> {
        let removed = self.members.shift_remove(member_id);
        if let Some(m) = &removed {
            if let Some(instance) = &m.group_instance_id {
                if self.static_members.get(instance).map(|s| s.as_str()) == Some(member_id) {
                    self.static_members.remove(instance);
                }
            }
            let unknown = ResponseError::UnknownMemberId;
            if let Some(p) = m.awaiting_join {
                ctx.respond_join(p, JoinResult::error("", unknown));
            }
            if let Some(p) = m.awaiting_sync {
                ctx.respond_sync(p, SyncResult::error(unknown));
            }
        }
        if self.is_leader(member_id) {
            self.leader = self.members.keys().next().cloned();
        }
        self.pending_members.shift_remove(member_id);
        self.pending_sync.remove(member_id);
        removed
    }

    /// Kafka's `validateCurrentMember`: FENCED_INSTANCE_ID if the instance id maps to
    /// another member id, UNKNOWN_MEMBER_ID if unknown.
    pub fn validate_current_member(
        &self,
        member_id: &str,
        instance: Option<&str>,
    ) -> Option<ResponseError> {
        if let Some(instance) = instance {
            return match self.current_static_member_id(instance) {
                Some(current) if current != member_id => Some(ResponseError::FencedInstanceId),
                Some(_) => None,
                None => Some(ResponseError::UnknownMemberId),
            };
        }
        if self.members.contains_key(member_id) {
            None
        } else {
            Some(ResponseError::UnknownMemberId)
        }
    }

    /// All members with their metadata for the selected protocol (the leader's view).
    pub fn current_member_metadata(&self) -> Vec<JoinGroupResponseMember> {
        let protocol = self.protocol_name.clone().unwrap_or_default();
        self.members
            .values()
            .map(|m| {
                let mut r = JoinGroupResponseMember::default();
                r.member_id = sb(&m.member_id);
                r.group_instance_id = m.group_instance_id.as_deref().map(sb);
                r.metadata = m.metadata(&protocol);
                r
            })
            .collect()
    }

    /// The join response for a member of the current generation.
    pub fn join_result_for(&self, member_id: &str, with_members: bool) -> JoinResult {
        JoinResult {
            error: None,
            generation_id: self.generation,
            protocol_type: self.protocol_type.clone(),
            protocol_name: self.protocol_name.clone(),
            leader: self.leader.clone().unwrap_or_default(),
            member_id: member_id.to_string(),
            skip_assignment: false,
            members: if with_members { self.current_member_metadata() } else { Vec::new() },
        }
    }

    /// The durable form of the group (Kafka's `GroupMetadataManager.groupMetadataValue`).
    pub fn metadata_record(&self, group_id: &str) -> GroupRecord {
        let protocol = self.protocol_name.clone().unwrap_or_default();
        GroupRecord::GroupMetadata {
            group: group_id.to_string(),
            protocol_type: self.protocol_type.clone().unwrap_or_default(),
            generation: self.generation,
            protocol: self.protocol_name.clone(),
            leader: self.leader.clone(),
            current_state_timestamp_ms: self.state_timestamp_ms,
            members: self
                .members
                .values()
                .map(|m| MemberRecord {
                    member_id: m.member_id.clone(),
                    group_instance_id: m.group_instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    rebalance_timeout_ms: m.rebalance_timeout_ms,
                    session_timeout_ms: m.session_timeout_ms,
                    subscription: m.metadata(&protocol),
                    assignment: m.assignment.clone(),
                })
                .collect(),
        }
    }

    /// Kafka's `computeSubscribedTopics`: the union of the consumer-protocol
    /// subscriptions, or `None` if the group is not a consumer group or one fails to parse.
    pub fn compute_subscribed_topics(&self) -> Option<HashSet<String>> {
        if self.protocol_type.as_deref() != Some(CONSUMER_PROTOCOL_TYPE) {
            return None;
        }
        let protocol = self.protocol_name.as_deref()?;
        let mut topics = HashSet::new();
        for m in self.members.values() {
            for t in parse_subscription(&m.metadata(protocol))? {
                topics.insert(t);
            }
        }
        Some(topics)
    }

    /// Earliest time (ms) at which this group has timer work.
    pub fn next_deadline(&self) -> Option<i64> {
        let mut d: Option<i64> = None;
        let mut take = |x: Option<i64>| {
            if let Some(x) = x {
                d = Some(d.map_or(x, |d| d.min(x)));
            }
        };
        if self.is(GroupState::PreparingRebalance) {
            take(self.join_timer.map(|t| t.deadline()));
        }
        if matches!(self.state, GroupState::CompletingRebalance | GroupState::Stable)
            && !self.pending_sync.is_empty()
        {
            take(self.sync_deadline);
        }
        for m in self.members.values() {
            take(m.effective_deadline());
        }
        for &p in self.pending_members.values() {
            take(Some(p));
        }
        d
    }
}

/// Topics of a serialized `ConsumerProtocolSubscription` (i16 version + body), as
/// Kafka's `ConsumerProtocol.deserializeSubscription` reads it. `None` if unparsable.
pub(crate) fn parse_subscription(metadata: &Bytes) -> Option<Vec<String>> {
    let mut buf = metadata.clone();
    if buf.len() < 2 {
        return None;
    }
    let version = i16::from_be_bytes([buf[0], buf[1]]);
    if version < 0 {
        return None;
    }
    bytes::Buf::advance(&mut buf, 2);
    let sub = ConsumerProtocolSubscription::decode(&mut buf, version.min(3)).ok()?;
    Some(sub.topics.iter().map(|t| t.to_string()).collect())
}

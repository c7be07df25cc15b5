//! Committed offsets: OffsetCommit, OffsetFetch, OffsetDelete and retention (Kafka's
//! `GroupCoordinator.handleCommitOffsets` / `handleFetchOffsets` / `handleDeleteOffsets`,
//! `GroupMetadata.removeExpiredOffsets`, `GroupMetadataManager.cleanupGroupMetadata`).

use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::{
    OffsetCommitRequest, OffsetCommitResponse, OffsetDeleteRequest, OffsetDeleteResponse,
    OffsetFetchRequest, OffsetFetchResponse, ResponseKind, TopicName,
};
use std::collections::hash_map::Entry;

use super::classic::ClassicGroup;
use super::consumer::validate_member_epoch;
use super::ctx::sb;
use super::group::{CommittedOffset, Group, GroupKind, CONSUMER_PROTOCOL_TYPE};
use super::records::GroupRecord;
use super::state::GroupState;
use super::{GroupCoordinator, Output, RequestToken};
use crate::error::{code, ResponseError};

/// Requested partitions per topic; `None` = every committed partition.
type FetchTopics = Option<Vec<(String, Vec<i32>)>>;

/// One partition of an OffsetFetch answer.
struct Fetched {
    partition: i32,
    /// -1 when nothing is committed.
    offset: i64,
    /// -1 when none.
    leader_epoch: i32,
    /// "" when nothing is committed.
    metadata: String,
    error: Option<ResponseError>,
}

impl Fetched {
    /// The answer for `partition`: its committed offset, if any.
    fn new(partition: i32, c: Option<&CommittedOffset>, error: Option<ResponseError>) -> Self {
        Fetched {
            partition,
            offset: c.map_or(-1, |c| c.offset),
            leader_epoch: c.map_or(-1, |c| c.leader_epoch),
            metadata: c.map(|c| c.metadata.clone()).unwrap_or_default(),
            error,
        }
    }
}

/// A topic's fetched partitions.
type FetchedTopic = (String, Vec<Fetched>);

/// The OffsetFetch response topics for `fetched`, in the v1-7 shape
/// (`OffsetFetchResponseTopic` / `...Partition`) or the v8+ one (`...Topics` /
/// `...Partitions`): the same fields under two sets of type names.
macro_rules! response_topics {
    ($topic:ident, $partition:ident, $fetched:expr) => {
        $fetched
            .into_iter()
            .map(|(topic, parts)| {
                let mut rt = $topic::default();
                rt.name = topic_name(&topic);
                rt.partitions = parts
                    .into_iter()
                    .map(|f| {
                        let mut rp = $partition::default();
                        rp.partition_index = f.partition;
                        rp.committed_offset = f.offset;
                        rp.committed_leader_epoch = f.leader_epoch;
                        rp.metadata = Some(sb(&f.metadata));
                        rp.error_code = code(f.error);
                        rp
                    })
                    .collect();
                rt
            })
            .collect()
    };
}

fn topic_name(s: &str) -> TopicName {
    TopicName(sb(s))
}

impl GroupCoordinator {
    /// OffsetCommit, versions 2-9. Kafka source: `GroupCoordinator.handleCommitOffsets`.
    ///
    /// For a consumer-protocol (KIP-848) group, `generation_id_or_member_epoch` is the
    /// member's epoch: UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH (ahead of the
    /// coordinator's), STALE_MEMBER_EPOCH (behind), UNSUPPORTED_VERSION (a member
    /// committing with v8 or older); a negative epoch is accepted while the group has no
    /// members.
    ///
    /// Accepted from a member of the current generation (Stable or PreparingRebalance;
    /// restarts its session timer), or as a simple commit (generation < 0, empty member
    /// id, no instance id) on an Empty or unknown group (created on the fly, as for
    /// `assign()` users). Each stored offset yields a [`Output::Persist`] before the
    /// response. v2-4 `retention_time_ms` (other than -1) sets an explicit expiry.
    ///
    /// Per-partition errors (an empty group id is allowed): COORDINATOR_LOAD_IN_PROGRESS,
    /// ILLEGAL_GENERATION (wrong generation, or an unknown group and a generation of 0
    /// or more), UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, REBALANCE_IN_PROGRESS
    /// (CompletingRebalance), OFFSET_METADATA_TOO_LARGE. Topic existence is not checked
    /// here (the caller knows the catalog).
    pub fn offset_commit(
        &mut self,
        token: RequestToken,
        version: i16,
        req: OffsetCommitRequest,
        now_ms: i64,
    ) -> Vec<Output> {
        let mut out = Vec::new();
        self.touch_retention_timer(now_ms);
        let group_id = req.group_id.0.to_string();
        let instance =
            if version >= 7 { req.group_instance_id.as_ref().map(|s| s.to_string()) } else { None };
        let expire = if (2..=4).contains(&version) && req.retention_time_ms != -1 {
            Some(now_ms + req.retention_time_ms)
        } else {
            None
        };
        let max_metadata_bytes = self.config.offset_metadata_max_bytes;
        let mut group = self.validate_commit(
            version,
            &group_id,
            &req.member_id,
            instance.as_deref(),
            req.generation_id_or_member_epoch,
            now_ms,
        );
        let mut r = OffsetCommitResponse::default();
        for t in &req.topics {
            let mut rt = OffsetCommitResponseTopic::default();
            rt.name = t.name.clone();
            for p in &t.partitions {
                let metadata = p.committed_metadata.as_deref().unwrap_or("");
                let error = match &mut group {
                    Err(e) => Some(*e),
                    Ok(_) if metadata.len() > max_metadata_bytes => {
                        Some(ResponseError::OffsetMetadataTooLarge)
                    }
                    Ok(g) => {
                        let c = CommittedOffset {
                            offset: p.committed_offset,
                            leader_epoch: if version >= 6 { p.committed_leader_epoch } else { -1 },
                            metadata: metadata.to_string(),
                            commit_timestamp_ms: now_ms,
                            expire_timestamp_ms: expire,
                        };
                        out.push(Output::Persist(offset_record(
                            &group_id,
                            &t.name.0,
                            p.partition_index,
                            &c,
                        )));
                        g.offsets.insert((t.name.0.to_string(), p.partition_index), c);
                        None
                    }
                };
                let mut rp = OffsetCommitResponsePartition::default();
                rp.partition_index = p.partition_index;
                rp.error_code = code(error);
                rt.partitions.push(rp);
            }
            r.topics.push(rt);
        }
        self.reschedule(&group_id);
        out.push(Output::Respond { token, response: ResponseKind::OffsetCommit(r) });
        out
    }

    /// Kafka's `handleCommitOffsets` + `validateOffsetCommit`: the group to store the
    /// offsets in (an unknown group is created for a simple commit), or why not.
    fn validate_commit(
        &mut self,
        version: i16,
        group_id: &str,
        member_id: &str,
        instance: Option<&str>,
        generation: i32,
        now: i64,
    ) -> Result<&mut Group, ResponseError> {
        if let Some(e) = self.validate_group_status(group_id, true) {
            return Err(e);
        }
        let group = match self.groups.entry(group_id.to_string()) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(_) if generation >= 0 => return Err(ResponseError::IllegalGeneration),
            Entry::Vacant(e) => e.insert(Group::classic(group_id, Some(now))),
        };
        let error = match &mut group.kind {
            GroupKind::Classic(c) => c.validate_commit(member_id, instance, generation, now),
            GroupKind::Consumer(cg) => {
                // `generation` is the member epoch (Kafka's
                // `ConsumerGroup.validateOffsetCommit`); members must use v9+.
                let simple = generation < 0 && cg.members.is_empty();
                if !simple && version < 9 && cg.members.contains_key(member_id) {
                    Some(ResponseError::UnsupportedVersion)
                } else {
                    validate_member_epoch(cg, member_id, generation)
                }
            }
        };
        match error {
            Some(e) => Err(e),
            None => Ok(group),
        }
    }

    /// OffsetFetch, versions 1-9, including the multi-group form (v8+) and "all
    /// partitions" (null topics, v2+). Kafka source: `GroupCoordinator.handleFetchOffsets`.
    ///
    /// Offsets are returned whatever the group state (simple consumers have no members).
    /// A partition without a committed offset gets offset -1, leader epoch -1, metadata
    /// "". Errors: COORDINATOR_LOAD_IN_PROGRESS (per partition in v1, top level in v2-7,
    /// per group in v8+); v9 per group, for consumer-protocol groups when a member id or
    /// epoch is given: UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH, FENCED_MEMBER_EPOCH.
    pub fn offset_fetch(
        &mut self,
        token: RequestToken,
        version: i16,
        req: OffsetFetchRequest,
        _now_ms: i64,
    ) -> Vec<Output> {
        let mut r = OffsetFetchResponse::default();
        if version >= 8 {
            for g in &req.groups {
                let topics: FetchTopics = g.topics.as_ref().map(|ts| {
                    ts.iter().map(|t| (t.name.0.to_string(), t.partition_indexes.clone())).collect()
                });
                // v9: a consumer-protocol member identifies itself with its epoch.
                let member = (version >= 9 && !(g.member_epoch < 0 && g.member_id.is_none()))
                    .then(|| (g.member_id.as_deref().unwrap_or(""), g.member_epoch));
                let mut rg = OffsetFetchResponseGroup::default();
                rg.group_id = g.group_id.clone();
                match self.fetch_group(&g.group_id.0, topics, member) {
                    Ok(fetched) => {
                        rg.topics = response_topics!(
                            OffsetFetchResponseTopics,
                            OffsetFetchResponsePartitions,
                            fetched
                        )
                    }
                    Err(e) => rg.error_code = e.code(),
                }
                r.groups.push(rg);
            }
        } else {
            let topics: FetchTopics = req.topics.as_ref().map(|ts| {
                ts.iter().map(|t| (t.name.0.to_string(), t.partition_indexes.clone())).collect()
            });
            let fetched = match self.fetch_group(&req.group_id.0, topics.clone(), None) {
                Ok(fetched) => fetched,
                // v1 has no top-level error: report it on every requested partition.
                Err(e) if version < 2 => topics
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(t, ps)| {
                        (t, ps.into_iter().map(|p| Fetched::new(p, None, Some(e))).collect())
                    })
                    .collect(),
                Err(e) => {
                    r.error_code = e.code();
                    Vec::new()
                }
            };
            r.topics =
                response_topics!(OffsetFetchResponseTopic, OffsetFetchResponsePartition, fetched);
        }
        vec![Output::Respond { token, response: ResponseKind::OffsetFetch(r) }]
    }

    /// Kafka's `GroupMetadataManager.getOffsets` for one group: the requested
    /// partitions (`None`: every committed one), or the group's error.
    fn fetch_group(
        &self,
        group_id: &str,
        topics: FetchTopics,
        member: Option<(&str, i32)>,
    ) -> Result<Vec<FetchedTopic>, ResponseError> {
        if let Some(e) = self.validate_group_status(group_id, true) {
            return Err(e);
        }
        let group = self.groups.get(group_id);
        if let (Some((member_id, epoch)), Some(cg)) = (member, group.and_then(Group::as_consumer)) {
            let error = match cg.members.get(member_id) {
                None => Some(ResponseError::UnknownMemberId),
                Some(_) => validate_member_epoch(cg, member_id, epoch),
            };
            if let Some(e) = error {
                return Err(e);
            }
        }
        let committed = |t: &str, p: i32| group.and_then(|g| g.offsets.get(&(t.to_string(), p)));
        let Some(topics) = topics else {
            let mut res: Vec<FetchedTopic> = Vec::new();
            for ((t, p), c) in group.iter().flat_map(|g| &g.offsets) {
                let f = Fetched::new(*p, Some(c), None);
                match res.last_mut() {
                    Some((lt, parts)) if lt == t => parts.push(f),
                    _ => res.push((t.clone(), vec![f])),
                }
            }
            return Ok(res);
        };
        Ok(topics
            .into_iter()
            .map(|(t, ps)| {
                let parts = ps.iter().map(|&p| Fetched::new(p, committed(&t, p), None)).collect();
                (t, parts)
            })
            .collect())
    }

    /// OffsetDelete, version 0. Kafka source: `GroupCoordinator.handleDeleteOffsets`.
    ///
    /// An Empty group's offsets are deleted; a non-empty consumer group's only for topics
    /// it does not subscribe to (GROUP_SUBSCRIBED_TO_TOPIC otherwise; subscriptions are
    /// parsed from the members' ConsumerProtocolSubscription, unknown = subscribed).
    /// Tombstones are persisted before the response; an Empty group left without offsets
    /// is deleted. Top-level errors: INVALID_GROUP_ID, COORDINATOR_LOAD_IN_PROGRESS,
    /// GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP (non-consumer group with members).
    pub fn offset_delete(
        &mut self,
        token: RequestToken,
        _version: i16,
        req: OffsetDeleteRequest,
        _now_ms: i64,
    ) -> Vec<Output> {
        let mut out = Vec::new();
        let group_id = req.group_id.0.to_string();
        let mut r = OffsetDeleteResponse::default();
        let group = match self.validate_group_status(&group_id, false) {
            Some(e) => Err(e),
            None => match self.groups.get_mut(&group_id) {
                None => Err(ResponseError::GroupIdNotFound),
                Some(g) => match g.state() {
                    GroupState::Dead => Err(ResponseError::GroupIdNotFound),
                    GroupState::Empty => Ok(g),
                    _ if g.protocol_type() == Some(CONSUMER_PROTOCOL_TYPE) => Ok(g),
                    _ => Err(ResponseError::NonEmptyGroup),
                },
            },
        };
        let mut dead = false;
        match group {
            Err(e) => r.error_code = e.code(),
            Ok(g) => {
                let empty = g.state() == GroupState::Empty;
                let mut any_eligible = false;
                for t in &req.topics {
                    let mut rt = OffsetDeleteResponseTopic::default();
                    rt.name = t.name.clone();
                    let subscribed = !empty && g.is_subscribed_to(&t.name.0);
                    for p in &t.partitions {
                        let mut rp = OffsetDeleteResponsePartition::default();
                        rp.partition_index = p.partition_index;
                        any_eligible |= !subscribed;
                        if subscribed {
                            rp.error_code = ResponseError::GroupSubscribedToTopic.code();
                        } else if g
                            .offsets
                            .remove(&(t.name.0.to_string(), p.partition_index))
                            .is_some()
                        {
                            out.push(Output::Persist(GroupRecord::OffsetTombstone {
                                group: group_id.clone(),
                                topic: t.name.0.to_string(),
                                partition: p.partition_index,
                            }));
                        }
                        rt.partitions.push(rp);
                    }
                    r.topics.push(rt);
                }
                dead = any_eligible && g.maybe_mark_dead(&mut out);
            }
        }
        if dead {
            self.remove_group(&group_id);
        }
        self.reschedule(&group_id);
        out.push(Output::Respond { token, response: ResponseKind::OffsetDelete(r) });
        out
    }

    /// Periodic cleanup (Kafka's `GroupMetadataManager.cleanupGroupMetadata`): expire
    /// offsets, then delete Empty groups without offsets. Persists tombstones.
    pub(crate) fn expire_offsets(&mut self, now: i64, out: &mut Vec<Output>) {
        let mut ids: Vec<String> = self.groups.keys().cloned().collect();
        ids.sort();
        for id in ids {
            let Some(g) = self.groups.get_mut(&id) else { continue };
            g.remove_expired_offsets(self.config.offsets_retention_ms, now, out);
            if g.maybe_mark_dead(out) {
                self.remove_group(&id);
            }
        }
    }
}

impl ClassicGroup {
    /// Kafka's `GroupMetadata` checks of an offset commit (`validateOffsetCommit`): a
    /// member of the current generation (its session timer restarts), or a simple
    /// commit (generation < 0, no member id, no instance id) to an Empty group.
    /// Errors: UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, ILLEGAL_GENERATION,
    /// REBALANCE_IN_PROGRESS (CompletingRebalance).
    fn validate_commit(
        &mut self,
        member_id: &str,
        instance: Option<&str>,
        generation: i32,
        now: i64,
    ) -> Option<ResponseError> {
        if generation >= 0 || !member_id.is_empty() || instance.is_some() {
            if let Some(e) = self.validate_current_member(member_id, instance) {
                return Some(e);
            }
            if generation != self.generation {
                return Some(ResponseError::IllegalGeneration);
            }
        } else if !self.is(GroupState::Empty) {
            // Only members may commit to a group with members.
            return Some(ResponseError::UnknownMemberId);
        }
        match self.state {
            GroupState::Empty => None,
            GroupState::Stable | GroupState::PreparingRebalance => {
                if let Some(m) = self.members.get_mut(member_id) {
                    m.heartbeat_deadline = Some(now + m.session_timeout_ms as i64);
                }
                None
            }
            GroupState::CompletingRebalance => Some(ResponseError::RebalanceInProgress),
            GroupState::Dead => Some(ResponseError::CoordinatorNotAvailable), // never held
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
    fn remove_expired_offsets(&mut self, retention_ms: i64, now: i64, out: &mut Vec<Output>) {
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
            .filter(|((topic, _), c)| {
                if unsubscribed_only && self.is_subscribed_to(topic) {
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

/// The durable record of one committed offset.
pub(crate) fn offset_record(
    group: &str,
    topic: &str,
    partition: i32,
    c: &CommittedOffset,
) -> GroupRecord {
    GroupRecord::Offset {
        group: group.to_string(),
        topic: topic.to_string(),
        partition,
        offset: c.offset,
        leader_epoch: c.leader_epoch,
        metadata: c.metadata.clone(),
        commit_timestamp_ms: c.commit_timestamp_ms,
        expire_timestamp_ms: c.expire_timestamp_ms,
    }
}

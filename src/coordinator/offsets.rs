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
use kafka_protocol::ResponseError;

use super::consumer::validate_member_epoch;
use super::ctx::sb;
use super::group::{CommittedOffset, Group, GroupKind, CONSUMER_PROTOCOL_TYPE};
use super::records::GroupRecord;
use super::state::GroupState;
use super::{GroupCoordinator, Output, RequestToken};

/// Requested partitions per topic; `None` = every committed partition.
type FetchTopics = Option<Vec<(String, Vec<i32>)>>;

/// One fetched offset: (partition, offset, leader epoch, metadata, error).
type Fetched = (i32, i64, i32, String, i16);

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
        let member_id = req.member_id.to_string();
        let generation = req.generation_id_or_member_epoch;
        let instance =
            if version >= 7 { req.group_instance_id.as_ref().map(|s| s.to_string()) } else { None };
        let expire = if (2..=4).contains(&version) && req.retention_time_ms != -1 {
            Some(now_ms + req.retention_time_ms)
        } else {
            None
        };
        let error = self.validate_commit(
            version,
            &group_id,
            &member_id,
            instance.as_deref(),
            generation,
            now_ms,
        );
        let mut topics = Vec::with_capacity(req.topics.len());
        for t in &req.topics {
            let mut rt = OffsetCommitResponseTopic::default();
            rt.name = t.name.clone();
            for p in &t.partitions {
                let code = match error {
                    Some(code) => code,
                    None => {
                        let metadata = p.committed_metadata.as_deref().unwrap_or("").to_string();
                        if metadata.len() > self.config.offset_metadata_max_bytes {
                            ResponseError::OffsetMetadataTooLarge.code()
                        } else {
                            let c = CommittedOffset {
                                offset: p.committed_offset,
                                leader_epoch: if version >= 6 {
                                    p.committed_leader_epoch
                                } else {
                                    -1
                                },
                                metadata,
                                commit_timestamp_ms: now_ms,
                                expire_timestamp_ms: expire,
                            };
                            let g = self.groups.get_mut(&group_id).expect("validated group");
                            let record = offset_record(&group_id, &t.name.0, p.partition_index, &c);
                            g.offsets.insert((t.name.0.to_string(), p.partition_index), c);
                            out.push(Output::Persist(record));
                            0
                        }
                    }
                };
                let mut rp = OffsetCommitResponsePartition::default();
                rp.partition_index = p.partition_index;
                rp.error_code = code;
                rt.partitions.push(rp);
            }
            topics.push(rt);
        }
        self.reschedule(&group_id);
        let mut r = OffsetCommitResponse::default();
        r.topics = topics;
        out.push(Output::Respond { token, response: ResponseKind::OffsetCommit(r) });
        out
    }

    /// Kafka's `handleCommitOffsets` + `validateOffsetCommit`: `None` = store.
    fn validate_commit(
        &mut self,
        version: i16,
        group_id: &str,
        member_id: &str,
        instance: Option<&str>,
        generation: i32,
        now: i64,
    ) -> Option<i16> {
        if let Some(code) = self.validate_group_status(group_id, true) {
            return Some(code);
        }
        if !self.groups.contains_key(group_id) {
            if generation >= 0 {
                return Some(ResponseError::IllegalGeneration.code());
            }
            self.groups.insert(group_id.to_string(), Group::classic(group_id, Some(now)));
        }
        let group = match self.groups.get_mut(group_id).map(|g| &mut g.kind) {
            None => return Some(ResponseError::IllegalGeneration.code()), // unreachable
            Some(GroupKind::Classic(c)) => c,
            Some(GroupKind::Consumer(cg)) => {
                // Consumer-protocol group: `generation` is the member epoch (Kafka's
                // `ConsumerGroup.validateOffsetCommit`); members must use v9+.
                let simple = generation < 0 && cg.members.is_empty();
                if !simple && version < 9 && cg.members.contains_key(member_id) {
                    return Some(ResponseError::UnsupportedVersion.code());
                }
                return validate_member_epoch(cg, member_id, generation);
            }
        };
        if generation >= 0 || !member_id.is_empty() || instance.is_some() {
            if let Some(code) = group.validate_current_member(member_id, instance) {
                return Some(code);
            }
            if generation != group.generation {
                return Some(ResponseError::IllegalGeneration.code());
            }
        } else if !group.is(GroupState::Empty) {
            // Only members may commit to a group with members.
            return Some(ResponseError::UnknownMemberId.code());
        }
        match group.state {
            GroupState::Empty => None,
            GroupState::Stable | GroupState::PreparingRebalance => {
                if let Some(m) = group.members.get_mut(member_id) {
                    m.heartbeat_deadline = Some(now + m.session_timeout_ms as i64);
                }
                None
            }
            GroupState::CompletingRebalance => Some(ResponseError::RebalanceInProgress.code()),
            GroupState::Dead => Some(ResponseError::CoordinatorNotAvailable.code()), // never
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
                let (error, fetched) = self.fetch_group(&g.group_id.0, topics, member);
                let mut rg = OffsetFetchResponseGroup::default();
                rg.group_id = g.group_id.clone();
                rg.error_code = error;
                rg.topics = fetched
                    .into_iter()
                    .map(|(topic, parts)| {
                        let mut rt = OffsetFetchResponseTopics::default();
                        rt.name = topic_name(&topic);
                        rt.partitions = parts
                            .into_iter()
                            .map(|(p, offset, epoch, metadata, code)| {
                                let mut rp = OffsetFetchResponsePartitions::default();
                                rp.partition_index = p;
                                rp.committed_offset = offset;
                                rp.committed_leader_epoch = epoch;
                                rp.metadata = Some(sb(&metadata));
                                rp.error_code = code;
                                rp
                            })
                            .collect();
                        rt
                    })
                    .collect();
                r.groups.push(rg);
            }
        } else {
            let topics: FetchTopics = req.topics.as_ref().map(|ts| {
                ts.iter().map(|t| (t.name.0.to_string(), t.partition_indexes.clone())).collect()
            });
            let (error, mut fetched) = self.fetch_group(&req.group_id.0, topics.clone(), None);
            if error != 0 && version < 2 {
                // v1 has no top-level error: report it on every requested partition.
                fetched = topics
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(t, ps)| {
                        let parts = ps.into_iter().map(|p| (p, -1, -1, String::new(), error));
                        (t, parts.collect())
                    })
                    .collect();
            } else if error != 0 {
                r.error_code = error;
            }
            r.topics = fetched
                .into_iter()
                .map(|(topic, parts)| {
                    let mut rt = OffsetFetchResponseTopic::default();
                    rt.name = topic_name(&topic);
                    rt.partitions = parts
                        .into_iter()
                        .map(|(p, offset, epoch, metadata, code)| {
                            let mut rp = OffsetFetchResponsePartition::default();
                            rp.partition_index = p;
                            rp.committed_offset = offset;
                            rp.committed_leader_epoch = epoch;
                            rp.metadata = Some(sb(&metadata));
                            rp.error_code = code;
                            rp
                        })
                        .collect();
                    rt
                })
                .collect();
        }
        vec![Output::Respond { token, response: ResponseKind::OffsetFetch(r) }]
    }

    /// Kafka's `GroupMetadataManager.getOffsets` for one group.
    #[allow(clippy::type_complexity)]
    fn fetch_group(
        &self,
        group_id: &str,
        topics: FetchTopics,
        member: Option<(&str, i32)>,
    ) -> (i16, Vec<(String, Vec<Fetched>)>) {
        if let Some(code) = self.validate_group_status(group_id, true) {
            return (code, Vec::new());
        }
        let group = self.groups.get(group_id);
        if let (Some((member_id, epoch)), Some(cg)) = (member, group.and_then(Group::as_consumer)) {
            let code = match cg.members.get(member_id) {
                None => Some(ResponseError::UnknownMemberId.code()),
                Some(_) => validate_member_epoch(cg, member_id, epoch),
            };
            if let Some(code) = code {
                return (code, Vec::new());
            }
        }
        let lookup = |t: &str, p: i32| -> Fetched {
            match group.and_then(|g| g.offsets.get(&(t.to_string(), p))) {
                Some(c) => (p, c.offset, c.leader_epoch, c.metadata.clone(), 0),
                None => (p, -1, -1, String::new(), 0),
            }
        };
        match topics {
            Some(ts) => (
                0,
                ts.into_iter()
                    .map(|(t, ps)| {
                        let parts = ps.iter().map(|&p| lookup(&t, p)).collect();
                        (t, parts)
                    })
                    .collect(),
            ),
            None => {
                let mut res: Vec<(String, Vec<Fetched>)> = Vec::new();
                if let Some(g) = group {
                    for ((t, p), c) in &g.offsets {
                        let f = (*p, c.offset, c.leader_epoch, c.metadata.clone(), 0);
                        match res.last_mut() {
                            Some((lt, parts)) if lt == t => parts.push(f),
                            _ => res.push((t.clone(), vec![f])),
                        }
                    }
                }
                (0, res)
            }
        }
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
        let top = self.validate_group_status(&group_id, false).or_else(|| {
            match self.groups.get(&group_id) {
                None => Some(ResponseError::GroupIdNotFound.code()),
                Some(g) => match g.state() {
                    GroupState::Dead => Some(ResponseError::GroupIdNotFound.code()),
                    GroupState::Empty => None,
                    _ if g.protocol_type() == Some(CONSUMER_PROTOCOL_TYPE) => None,
                    _ => Some(ResponseError::NonEmptyGroup.code()),
                },
            }
        });
        if let Some(code) = top {
            r.error_code = code;
        } else {
            let g = self.groups.get_mut(&group_id).expect("group exists");
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
                    } else if g.offsets.remove(&(t.name.0.to_string(), p.partition_index)).is_some()
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
            if any_eligible && g.maybe_mark_dead(&mut out) {
                self.remove_group(&group_id);
            }
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

//! ConsumerGroupHeartbeat: joining and heartbeating (Kafka's
//! `GroupMetadataManager.consumerGroupHeartbeat`); leaving is `leave.rs`. Every call
//! ends in [`GroupCoordinator::after_consumer_change`], which persists what changed.

use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, HashMap};

use kafka_protocol::messages::consumer_group_heartbeat_response as cgh;
use kafka_protocol::messages::{
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, ResponseKind,
};

use super::super::assignor::Assignment;
use super::super::group::{Group, GroupKind};
use super::super::records::GroupRecord;
use super::super::{GroupCoordinator, Output, RequestToken};
use super::group::ConsumerGroup;
use super::member::{ConsumerMember, MemberState, JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH};
use super::reconcile::reconcile;
use super::record::to_assignment;
use super::regex::TopicRegex;
use super::validate::{check_member_epoch, fail, fenced_instance, validate_request, Fail};
use crate::error::ResponseError;
use crate::protocol::strings::sb;

/// A consumer group as it was before a call: its record (to persist only changes) and
/// whether it had members (to date a change between Empty and non-empty).
pub(super) struct Snapshot {
    record: Option<GroupRecord>,
    had_members: bool,
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
    /// (missing/empty fields), UNSUPPORTED_ASSIGNOR, INVALID_REGULAR_EXPRESSION (a
    /// `SubscribedTopicRegex` that does not compile as RE2), UNKNOWN_MEMBER_ID (unknown member, or unknown
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
        let before = self.consumer_snapshot(&group_id);
        let result = self.do_consumer_heartbeat(version, &req, client_id, client_host, now_ms);
        self.after_consumer_change(&group_id, before, now_ms, &mut out);
        let r = result.unwrap_or_else(|f| {
            let mut r = ConsumerGroupHeartbeatResponse::default();
            r.error_code = f.error.code();
            r.error_message = f.message.as_deref().map(sb);
            r
        });
        out.push(Output::Respond { token, response: ResponseKind::ConsumerGroupHeartbeat(r) });
        out
    }

    /// The compiled regex `source` if a member of consumer group `group_id` uses it.
    fn group_regex(&self, group_id: &str, source: &str) -> Option<TopicRegex> {
        let cg = self.groups.get(group_id)?.as_consumer()?;
        cg.members
            .values()
            .filter_map(|m| m.subscribed_topic_regex.as_ref())
            .find(|r| r.as_str() == source)
            .cloned()
    }

    /// What `group_id` looks like before a change, if it is a consumer group.
    pub(super) fn consumer_snapshot(&self, group_id: &str) -> Snapshot {
        match self.groups.get(group_id).and_then(Group::as_consumer) {
            Some(cg) => {
                Snapshot { record: Some(cg.record(group_id)), had_members: !cg.members.is_empty() }
            }
            None => Snapshot { record: None, had_members: false },
        }
    }

    /// Date the group's Empty / non-empty state, persist the group if its durable state
    /// changed since `before`, reschedule its timers.
    pub(super) fn after_consumer_change(
        &mut self,
        group_id: &str,
        before: Snapshot,
        now: i64,
        out: &mut Vec<Output>,
    ) {
        if let Some(cg) = self.groups.get_mut(group_id).and_then(Group::as_consumer_mut) {
            cg.touch_state(before.had_members, now);
            let after = cg.record(group_id);
            if Some(&after) != before.record.as_ref() {
                out.push(Output::Persist(after));
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
            return Err(Fail { error: ResponseError::CoordinatorLoadInProgress, message: None });
        }
        // v0 has no regex field; an empty regex clears the member's regex, as in Kafka.
        let regex_field = if version >= 1 { req.subscribed_topic_regex.as_ref() } else { None };
        validate_request(req, version, regex_field.is_some())?;
        // Clients may repeat their regex on every heartbeat: one a member of the group
        // already uses is taken as compiled (as Kafka compiles only a group's new regexes).
        let regex = match regex_field.map(|r| r.as_str()) {
            Some("") => Some(None),
            Some(r) => Some(Some(match self.group_regex(req.group_id.0.as_str(), r) {
                Some(known) => known,
                None => TopicRegex::new(r)
                    .map_err(|m| fail(ResponseError::InvalidRegularExpression, m))?,
            })),
            None => None,
        };
        let group_id = req.group_id.0.as_str();
        let epoch = req.member_epoch;
        let instance = req.instance_id.as_ref().map(|s| s.to_string());
        if epoch == LEAVE_EPOCH || epoch == STATIC_LEAVE_EPOCH {
            return self.consumer_leave(group_id, &req.member_id, instance.as_deref(), epoch, now);
        }
        let owned: Option<Assignment> = req.topic_partitions.as_ref().map(|tps| {
            to_assignment(
                &tps.iter().map(|tp| (tp.topic_id, tp.partitions.clone())).collect::<Vec<_>>(),
            )
        });
        let max_size = self.config.max_group_size.max(0) as usize;
        let session_ms = self.config.consumer_session_timeout_ms as i64;
        let interval = self.config.consumer_heartbeat_interval_ms;
        let catalog = &self.topics;
        let cg = get_or_create(&mut self.groups, group_id, epoch == JOIN_EPOCH, now)?;
        let member_id = if req.member_id.is_empty() {
            self.ids.next_uuid().to_string()
        } else {
            req.member_id.to_string()
        };
        let (old, mut member) = cg.member_for_heartbeat(
            group_id,
            &member_id,
            instance.as_deref(),
            epoch,
            owned.as_ref(),
            max_size,
        )?;
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
        if let Some(regex) = regex {
            member.subscribed_topic_regex = regex;
        }
        member.client_id = client_id.to_string();
        member.client_host = client_host.to_string();
        let changed = member.subscribed_topic_names != old.subscribed_topic_names
            || member.subscribed_topic_regex != old.subscribed_topic_regex
            || member.server_assignor != old.server_assignor;
        cg.put_member(member);
        // A new group moves away from epoch 0 at its first member, whatever it
        // subscribes to (Kafka 4.x): a member that joins with an empty subscription
        // (a regex matching nothing yet) must get epoch 1, not stay at 0, which
        // reads as "joining" on its next heartbeat.
        if changed || cg.group_epoch == 0 {
            cg.subscription_metadata = cg.compute_subscription_metadata(catalog);
            cg.bump();
        }

        // 2. Reconcile the member with its target assignment.
        let current = cg.members[&member_id].clone();
        let target = cg.target.get(&member_id).cloned().unwrap_or_default();
        let mut next =
            reconcile(&current, cg.assignment_epoch, &target, owned.as_ref(), &cg.partition_epochs);
        if !next.same_state(&current) {
            next.arm_revocation_timer(now);
        }
        next.session_deadline = Some(now + session_ms);
        cg.put_member(next.clone());

        let mut r = ConsumerGroupHeartbeatResponse::default();
        r.member_id = Some(sb(&member_id));
        r.member_epoch = next.member_epoch;
        r.heartbeat_interval_ms = interval;
        let full = epoch == JOIN_EPOCH
            || (req.rebalance_timeout_ms != -1
                && (req.subscribed_topic_names.is_some() || regex_field.is_some())
                && req.topic_partitions.is_some());
        if full || next.assigned != assigned_before {
            r.assignment = Some(response_assignment(&next.assigned));
        }
        Ok(r)
    }
}

/// Kafka's `getOrMaybeCreateConsumerGroup`: the consumer group `group_id`, created if
/// `create` (an empty classic group is converted, keeping its offsets). Errors:
/// UNKNOWN_MEMBER_ID (no such group and not `create`), GROUP_ID_NOT_FOUND (a classic
/// group that cannot be converted).
fn get_or_create<'a>(
    groups: &'a mut HashMap<String, Group>,
    group_id: &str,
    create: bool,
    now: i64,
) -> Result<&'a mut ConsumerGroup, Fail> {
    let not_found =
        || fail(ResponseError::UnknownMemberId, format!("Consumer group {group_id} not found."));
    let g = match groups.entry(group_id.to_string()) {
        Entry::Occupied(e) => e.into_mut(),
        Entry::Vacant(e) if create => e.insert(Group::consumer(group_id, now)),
        Entry::Vacant(_) => return Err(not_found()),
    };
    if let GroupKind::Classic(c) = &g.kind {
        if !(create && c.is_empty()) {
            return Err(fail(
                ResponseError::GroupIdNotFound,
                format!("Group {group_id} is not a consumer group."),
            ));
        }
        // An empty classic group (e.g. simple commits only) becomes a consumer group;
        // its offsets stay.
        g.kind = GroupKind::Consumer(ConsumerGroup::new(Some(now)));
    }
    g.as_consumer_mut().ok_or_else(not_found)
}

impl ConsumerGroup {
    /// The member a heartbeat (not a leave) speaks for, as it was before the request
    /// and as the request starts from: a new member, a rejoining one (released
    /// everything), a static member back under a new id (takes over the old id's
    /// assignment and target), or the current member after the epoch check. Errors:
    /// GROUP_MAX_SIZE_REACHED, FENCED_INSTANCE_ID, UNRELEASED_INSTANCE_ID,
    /// UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH.
    fn member_for_heartbeat(
        &mut self,
        group_id: &str,
        member_id: &str,
        instance: Option<&str>,
        epoch: i32,
        owned: Option<&Assignment>,
        max_size: usize,
    ) -> Result<(ConsumerMember, ConsumerMember), Fail> {
        let member_id = member_id.to_string();
        let existing_static = instance
            .and_then(|i| self.static_members.get(i))
            .and_then(|id| self.members.get(id))
            .cloned();
        let replacing = epoch == JOIN_EPOCH
            && existing_static.as_ref().is_some_and(|e| e.member_id != member_id);
        if !self.members.contains_key(&member_id) && !replacing && self.members.len() >= max_size {
            return Err(fail(
                ResponseError::GroupMaxSizeReached,
                format!(
                    "The consumer group has reached its maximum capacity of {max_size} members."
                ),
            ));
        }
        let (old, member) = match (instance, existing_static) {
            (Some(i), Some(e)) if e.member_id != member_id => {
                if epoch != JOIN_EPOCH {
                    return Err(fenced_instance(&member_id, i, &e.member_id));
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
                let target = self.target.remove(&e.member_id);
                self.remove_member(&e.member_id);
                let mut m = ConsumerMember::new(&member_id);
                m.assigned = e.assigned.clone();
                m.subscribed_topic_names = e.subscribed_topic_names.clone();
                m.subscribed_topic_regex = e.subscribed_topic_regex.clone();
                m.server_assignor = e.server_assignor.clone();
                m.rack_id = e.rack_id.clone();
                m.rebalance_timeout_ms = e.rebalance_timeout_ms;
                if let Some(t) = target {
                    self.target.insert(member_id.clone(), t);
                }
                let old = m.clone();
                self.put_member(m.clone());
                (old, m)
            }
            (Some(i), None) if epoch != JOIN_EPOCH => {
                return Err(fail(
                    ResponseError::UnknownMemberId,
                    format!("Instance id {i} is unknown."),
                ));
            }
            _ => match self.members.get(&member_id) {
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
                    check_member_epoch(m, epoch, owned)?;
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
        Ok((old, member))
    }
}

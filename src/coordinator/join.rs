//! JoinGroup and the rebalance it drives (Kafka's `GroupCoordinator.handleJoinGroup`,
//! `prepareRebalance`, `onCompleteJoin`).

use bytes::Bytes;
use kafka_protocol::messages::JoinGroupRequest;
use kafka_protocol::ResponseError;

use super::classic::ClassicGroup;
use super::config::NEW_MEMBER_JOIN_TIMEOUT_MS;
use super::ctx::{Ctx, JoinResult};
use super::group::{Group, GroupKind};
use super::member::{Member, Parked};
use super::records::GroupRecord;
use super::state::GroupState;
use super::{GroupCoordinator, Output, RequestToken};

/// A JoinGroup request, normalized across versions.
pub(crate) struct JoinArgs {
    /// Member id ("" for a new member).
    pub member_id: String,
    /// group.instance.id of a static member (v5+).
    pub instance: Option<String>,
    /// Client id from the request header.
    pub client_id: String,
    /// Client address as the caller reported it.
    pub client_host: String,
    /// Rebalance timeout (ms); v0: the session timeout.
    pub rebalance_timeout_ms: i32,
    /// Session timeout (ms).
    pub session_timeout_ms: i32,
    /// Protocol type ("consumer", ...).
    pub protocol_type: String,
    /// (protocol name, metadata) in order of preference.
    pub protocols: Vec<(String, Bytes)>,
    /// Token and version, for answering later.
    pub parked: Parked,
    /// v4+ dynamic members must first obtain a member id (MEMBER_ID_REQUIRED).
    pub require_known_member_id: bool,
    /// v9+: a static leader rejoining a Stable group may skip the assignment.
    pub supports_skip_assignment: bool,
}

impl GroupCoordinator {
    /// JoinGroup, all versions (0-9). Kafka source: `GroupCoordinator.handleJoinGroup`.
    ///
    /// The response is usually parked until the rebalance completes: every known member
    /// rejoined, the rebalance timeout (ms, the largest of the members') passed, or, for
    /// the first rebalance of an Empty group, the initial rebalance delay passed. v0 uses
    /// the session timeout as rebalance timeout.
    ///
    /// Immediate errors: INVALID_GROUP_ID, COORDINATOR_LOAD_IN_PROGRESS,
    /// INVALID_SESSION_TIMEOUT (outside min/max), UNKNOWN_MEMBER_ID (unknown member id or
    /// group), GROUP_MAX_SIZE_REACHED, INCONSISTENT_GROUP_PROTOCOL (protocol type differs
    /// or no protocol in common, or the id belongs to a consumer-protocol group with
    /// members; an empty one becomes a classic group, keeping its offsets),
    /// FENCED_INSTANCE_ID (static member with a stale id),
    /// MEMBER_ID_REQUIRED (v4+, empty member id, no group.instance.id: the response
    /// carries the generated id `{client_id}-{uuid}`; static members get
    /// `{group_instance_id}-{uuid}` without the extra round trip).
    /// A static member rejoining with an empty member id replaces (fences) its old id;
    /// in a Stable group whose selected protocol is unchanged there is no rebalance: the
    /// group is persisted and the member gets the current generation (and, v9+, a leader
    /// gets `skip_assignment`).
    #[allow(clippy::too_many_arguments)]
    pub fn join_group(
        &mut self,
        token: RequestToken,
        version: i16,
        req: JoinGroupRequest,
        client_id: &str,
        client_host: &str,
        now_ms: i64,
    ) -> Vec<Output> {
        let mut out = Vec::new();
        self.touch_retention_timer(now_ms);
        let group_id = req.group_id.0.to_string();
        let instance =
            if version >= 5 { req.group_instance_id.as_ref().map(|s| s.to_string()) } else { None };
        let args = JoinArgs {
            member_id: req.member_id.to_string(),
            client_id: client_id.to_string(),
            client_host: client_host.to_string(),
            rebalance_timeout_ms: if version == 0 {
                req.session_timeout_ms
            } else {
                req.rebalance_timeout_ms
            },
            session_timeout_ms: req.session_timeout_ms,
            protocol_type: req.protocol_type.to_string(),
            protocols: req
                .protocols
                .iter()
                .map(|p| (p.name.to_string(), p.metadata.clone()))
                .collect(),
            parked: Parked { token, version },
            require_known_member_id: version >= 4 && instance.is_none(),
            supports_skip_assignment: version >= 9,
            instance,
        };
        let fail = |out: &mut Vec<Output>, member_id: &str, code: ResponseError| {
            let r = JoinResult::error(member_id, code).into_response(version);
            out.push(Output::Respond {
                token,
                response: kafka_protocol::messages::ResponseKind::JoinGroup(r),
            });
        };
        if let Some(code) = self.validate_group_status(&group_id, false) {
            fail(&mut out, &args.member_id, code);
            return out;
        }
        if args.session_timeout_ms < self.config.min_session_timeout_ms
            || args.session_timeout_ms > self.config.max_session_timeout_ms
        {
            fail(&mut out, &args.member_id, ResponseError::InvalidSessionTimeout);
            return out;
        }
        let is_unknown = args.member_id.is_empty();
        match self.groups.get_mut(&group_id) {
            Some(g) => match &g.kind {
                GroupKind::Classic(_) => {}
                GroupKind::Consumer(cg) if !cg.members.is_empty() => {
                    // A consumer-protocol (KIP-848) group with members.
                    fail(&mut out, &args.member_id, ResponseError::InconsistentGroupProtocol);
                    return out;
                }
                GroupKind::Consumer(_) => {
                    // An empty consumer group becomes a classic one; its offsets stay.
                    g.kind = GroupKind::Classic(ClassicGroup::new(Some(now_ms)));
                    out.push(Output::Persist(GroupRecord::GroupTombstone {
                        group: group_id.clone(),
                    }));
                }
            },
            None if !is_unknown => {
                fail(&mut out, &args.member_id, ResponseError::UnknownMemberId);
                return out;
            }
            None => {
                self.groups.insert(group_id.clone(), Group::classic(&group_id, Some(now_ms)));
            }
        }
        let new_id = if is_unknown {
            let prefix = args.instance.clone().unwrap_or_else(|| client_id.to_string());
            Some(self.ids.next_member_id(&prefix))
        } else {
            None
        };
        let max_size = self.config.max_group_size;
        let Some(group) = self.groups.get_mut(&group_id).and_then(Group::as_classic_mut) else {
            return out; // unreachable: made classic above
        };
        let mut ctx = Ctx { cfg: &self.config, group_id: &group_id, now: now_ms, out: &mut out };
        if !group.accept_joining_member(&args.member_id, max_size) {
            group.remove_member(&args.member_id, &mut ctx);
            ctx.respond_join(
                args.parked,
                JoinResult::error("", ResponseError::GroupMaxSizeReached),
            );
        } else if let Some(new_id) = new_id {
            group.join_new_member(args, new_id, &mut ctx);
        } else {
            group.join_current_member(args, &mut ctx);
        }
        if group.is(GroupState::PreparingRebalance) {
            group.try_complete_join(&mut ctx);
        }
        self.reschedule(&group_id);
        out
    }
}

impl ClassicGroup {
    /// Kafka's `acceptJoiningMember` (group.max.size).
    pub fn accept_joining_member(&self, member_id: &str, max_size: i32) -> bool {
        let max = max_size.max(0) as usize;
        match self.state {
            GroupState::Empty | GroupState::Dead => true,
            GroupState::PreparingRebalance => {
                matches!(self.members.get(member_id), Some(m) if m.awaiting_join.is_some())
                    || self.num_awaiting_join() < max
            }
            GroupState::CompletingRebalance | GroupState::Stable => {
                self.members.contains_key(member_id) || self.members.len() < max
            }
        }
    }

    /// Kafka's `doNewMemberJoinGroup`.
    fn join_new_member(&mut self, args: JoinArgs, new_id: String, ctx: &mut Ctx) {
        if !self.supports_protocols(&args.protocol_type, &args.protocols) {
            ctx.respond_join(
                args.parked,
                JoinResult::error("", ResponseError::InconsistentGroupProtocol),
            );
            return;
        }
        match args.instance.clone() {
            Some(instance) => match self.current_static_member_id(&instance) {
                Some(old) => {
                    let old = old.to_string();
                    self.update_static_member_and_rebalance(&instance, &old, new_id, args, ctx)
                }
                None => self.add_member_and_rebalance(new_id, args, ctx),
            },
            None if args.require_known_member_id => {
                let deadline = ctx.now + args.session_timeout_ms as i64;
                self.pending_members.insert(new_id.clone(), deadline);
                ctx.respond_join(
                    args.parked,
                    JoinResult::error(&new_id, ResponseError::MemberIdRequired),
                );
            }
            None => self.add_member_and_rebalance(new_id, args, ctx),
        }
    }

    /// Kafka's `doCurrentMemberJoinGroup`.
    fn join_current_member(&mut self, args: JoinArgs, ctx: &mut Ctx) {
        let member_id = args.member_id.clone();
        if !self.supports_protocols(&args.protocol_type, &args.protocols) {
            ctx.respond_join(
                args.parked,
                JoinResult::error(&member_id, ResponseError::InconsistentGroupProtocol),
            );
            return;
        }
        if self.pending_members.contains_key(&member_id) {
            self.add_member_and_rebalance(member_id, args, ctx);
            return;
        }
        if let Some(code) = self.validate_current_member(&member_id, args.instance.as_deref()) {
            ctx.respond_join(args.parked, JoinResult::error(&member_id, code));
            return;
        }
        match self.state {
            GroupState::PreparingRebalance => self.update_member_and_rebalance(args, ctx),
            GroupState::CompletingRebalance => {
                if self.members[&member_id].matches(&args.protocols) {
                    // Lost the join response: repeat the current generation.
                    let leader = self.is_leader(&member_id);
                    ctx.respond_join(args.parked, self.join_result_for(&member_id, leader));
                } else {
                    self.update_member_and_rebalance(args, ctx);
                }
            }
            GroupState::Stable => {
                // The leader rejoining forces a rebalance (e.g. topic metadata changed).
                if self.is_leader(&member_id) || !self.members[&member_id].matches(&args.protocols)
                {
                    self.update_member_and_rebalance(args, ctx);
                } else {
                    ctx.respond_join(args.parked, self.join_result_for(&member_id, false));
                }
            }
            GroupState::Empty | GroupState::Dead => ctx.respond_join(
                args.parked,
                JoinResult::error(&member_id, ResponseError::UnknownMemberId),
            ),
        }
    }

    /// Kafka's `addMemberAndRebalance`.
    fn add_member_and_rebalance(&mut self, member_id: String, args: JoinArgs, ctx: &mut Ctx) {
        let member = Member {
            member_id,
            group_instance_id: args.instance,
            client_id: args.client_id,
            client_host: args.client_host,
            rebalance_timeout_ms: args.rebalance_timeout_ms,
            session_timeout_ms: args.session_timeout_ms,
            protocol_type: args.protocol_type,
            protocols: args.protocols,
            assignment: Bytes::new(),
            awaiting_join: Some(args.parked),
            awaiting_sync: None,
            is_new: true,
            // New members cannot heartbeat yet; they get the new-member join timeout.
            heartbeat_deadline: Some(ctx.now + NEW_MEMBER_JOIN_TIMEOUT_MS),
        };
        if self.is(GroupState::PreparingRebalance) && self.generation == 0 {
            self.new_member_added = true;
        }
        self.add_member(member);
        self.maybe_prepare_rebalance(ctx);
    }

    /// Kafka's `updateMember`: new protocols and timeouts, and park the JoinGroup. A
    /// JoinGroup the member already had parked is superseded (REBALANCE_IN_PROGRESS).
    fn update_member(&mut self, member_id: &str, args: &JoinArgs, ctx: &mut Ctx) {
        let Some(m) = self.members.get_mut(member_id) else {
            return;
        };
        m.protocols = args.protocols.clone();
        m.rebalance_timeout_ms = args.rebalance_timeout_ms;
        m.session_timeout_ms = args.session_timeout_ms;
        if let Some(old) = m.awaiting_join.replace(args.parked) {
            let code = ResponseError::RebalanceInProgress;
            ctx.respond_join(old, JoinResult::error(member_id, code));
        }
    }

    /// Kafka's `updateMemberAndRebalance`.
    fn update_member_and_rebalance(&mut self, args: JoinArgs, ctx: &mut Ctx) {
        self.update_member(&args.member_id, &args, ctx);
        self.maybe_prepare_rebalance(ctx);
    }

    /// Kafka's `replaceStaticMember`: the member keeps its place, assignment and
    /// leadership under `new_id`; requests parked under `old_id` get FENCED_INSTANCE_ID.
    fn replace_static_member(&mut self, instance: &str, old_id: &str, new_id: &str, ctx: &mut Ctx) {
        let Some(idx) = self.members.get_index_of(old_id) else {
            return;
        };
        let (_, mut m) = self.members.shift_remove_index(idx).expect("index valid");
        let fenced = ResponseError::FencedInstanceId;
        if let Some(p) = m.awaiting_join.take() {
            let mut r = JoinResult::error(old_id, fenced);
            r.protocol_type = self.protocol_type.clone();
            r.protocol_name = self.protocol_name.clone();
            ctx.respond_join(p, r);
        }
        if let Some(p) = m.awaiting_sync.take() {
            ctx.respond_sync(p, super::ctx::SyncResult::error(fenced));
        }
        m.member_id = new_id.to_string();
        self.members.shift_insert(idx, new_id.to_string(), m);
        if self.is_leader(old_id) {
            self.leader = Some(new_id.to_string());
        }
        if self.pending_sync.remove(old_id) {
            self.pending_sync.insert(new_id.to_string());
        }
        self.static_members.insert(instance.to_string(), new_id.to_string());
    }

    /// Kafka's `updateStaticMemberAndRebalance`.
    fn update_static_member_and_rebalance(
        &mut self,
        instance: &str,
        old_id: &str,
        new_id: String,
        args: JoinArgs,
        ctx: &mut Ctx,
    ) {
        let current_leader = self.leader.clone().unwrap_or_default();
        self.replace_static_member(instance, old_id, &new_id, ctx);
        if let Some(m) = self.members.get_mut(&new_id) {
            m.heartbeat_deadline = Some(ctx.now + m.session_timeout_ms as i64);
        }
        self.update_member(&new_id, &args, ctx);
        match self.state {
            GroupState::Stable => {
                if self.select_protocol() == self.protocol_name {
                    // No rebalance: persist the new member id, answer with the current
                    // generation (followers then SyncGroup for their current assignment).
                    ctx.persist(self.metadata_record(ctx.group_id));
                    let parked = self.members.get_mut(&new_id).and_then(|m| m.awaiting_join.take());
                    let Some(parked) = parked else { return };
                    let result = if args.supports_skip_assignment {
                        let is_leader = self.is_leader(&new_id);
                        let mut r = self.join_result_for(&new_id, is_leader);
                        r.skip_assignment = is_leader;
                        r
                    } else {
                        // Report the old leader id so that a rejoining static leader does
                        // not run a (discarded) assignment.
                        let mut r = self.join_result_for(&new_id, false);
                        r.leader = current_leader;
                        r
                    };
                    ctx.respond_join(parked, result);
                } else {
                    self.maybe_prepare_rebalance(ctx);
                }
            }
            GroupState::CompletingRebalance => self.prepare_rebalance(ctx),
            GroupState::PreparingRebalance => {}
            GroupState::Empty | GroupState::Dead => {}
        }
    }
}

//! Heartbeat and session expiry (Kafka's `GroupCoordinator.handleHeartbeat`,
//! `onExpireHeartbeat`, `removeMemberAndUpdateGroup`).

use crate::error::{code, ResponseError};
use kafka_protocol::messages::{HeartbeatRequest, HeartbeatResponse, ResponseKind};

use super::classic::ClassicGroup;
use super::ctx::Ctx;
use super::group::Group;
use super::state::GroupState;
use super::{GroupCoordinator, Output, RequestToken};

impl GroupCoordinator {
    /// Heartbeat, all versions (0-4). Kafka source: `GroupCoordinator.handleHeartbeat`.
    ///
    /// Restarts the member's session timer (deadline `now_ms + session_timeout_ms`).
    /// Errors: INVALID_GROUP_ID, COORDINATOR_LOAD_IN_PROGRESS, UNKNOWN_MEMBER_ID (unknown
    /// group or member, or Empty group), FENCED_INSTANCE_ID, ILLEGAL_GENERATION,
    /// REBALANCE_IN_PROGRESS (group is PreparingRebalance: the member must rejoin).
    pub fn heartbeat(
        &mut self,
        token: RequestToken,
        version: i16,
        req: HeartbeatRequest,
        now_ms: i64,
    ) -> Vec<Output> {
        let group_id = req.group_id.0.to_string();
        let instance =
            if version >= 3 { req.group_instance_id.as_ref().map(|s| s.to_string()) } else { None };
        let error = self.do_heartbeat(
            &group_id,
            &req.member_id,
            instance.as_deref(),
            req.generation_id,
            now_ms,
        );
        self.reschedule(&group_id);
        let mut r = HeartbeatResponse::default();
        r.error_code = code(error);
        vec![Output::Respond { token, response: ResponseKind::Heartbeat(r) }]
    }

    fn do_heartbeat(
        &mut self,
        group_id: &str,
        member_id: &str,
        instance: Option<&str>,
        generation: i32,
        now: i64,
    ) -> Option<ResponseError> {
        if let Some(e) = self.validate_group_status(group_id, false) {
            return Some(e);
        }
        // A consumer-protocol group has no classic members.
        let Some(group) = self.groups.get_mut(group_id).and_then(Group::as_classic_mut) else {
            return Some(ResponseError::UnknownMemberId);
        };
        if let Some(e) = group.validate_current_member(member_id, instance) {
            return Some(e);
        }
        if generation != group.generation {
            return Some(ResponseError::IllegalGeneration);
        }
        let state = group.state;
        if state == GroupState::Empty || state == GroupState::Dead {
            return Some(ResponseError::UnknownMemberId);
        }
        if let Some(m) = group.members.get_mut(member_id) {
            m.heartbeat_deadline = Some(now + m.session_timeout_ms as i64);
        }
        (state == GroupState::PreparingRebalance).then_some(ResponseError::RebalanceInProgress)
    }
}

impl ClassicGroup {
    /// Kafka's `removeMemberAndUpdateGroup`: a parked JoinGroup of the member gets
    /// UNKNOWN_MEMBER_ID; a Stable/CompletingRebalance group rebalances; a rebalancing
    /// group may now complete.
    pub fn remove_member_and_update_group(&mut self, member_id: &str, ctx: &mut Ctx) {
        self.remove_member(member_id, ctx);
        match self.state {
            GroupState::Dead | GroupState::Empty => {}
            GroupState::Stable | GroupState::CompletingRebalance => {
                self.maybe_prepare_rebalance(ctx)
            }
            GroupState::PreparingRebalance => self.try_complete_join(ctx),
        }
    }

    /// Session expiry (Kafka's `onExpireHeartbeat`) for members and MEMBER_ID_REQUIRED
    /// pending members whose deadline is at or before `ctx.now`. Returns whether any
    /// member was removed.
    pub fn expire_sessions(&mut self, ctx: &mut Ctx) -> bool {
        let now = ctx.now;
        let mut fired = false;
        let pending: Vec<String> = self
            .pending_members
            .iter()
            .filter(|(_, &d)| d <= now)
            .map(|(id, _)| id.clone())
            .collect();
        for id in pending {
            fired = true;
            self.pending_members.shift_remove(&id);
            if self.is(GroupState::PreparingRebalance) {
                self.try_complete_join(ctx);
            }
        }
        let expired: Vec<String> = self
            .members
            .values()
            .filter(|m| m.effective_deadline().is_some_and(|d| d <= now))
            .map(|m| m.member_id.clone())
            .collect();
        for id in expired {
            // An earlier removal may have completed a join and re-armed this member.
            let still = self
                .members
                .get(&id)
                .and_then(|m| m.effective_deadline())
                .is_some_and(|d| d <= now);
            if still {
                fired = true;
                self.remove_member_and_update_group(&id, ctx);
            }
        }
        fired
    }
}

//! SyncGroup: the leader's assignment reaches every member (Kafka's
//! `GroupCoordinator.handleSyncGroup` / `doSyncGroup` / `propagateAssignment`).

use std::collections::HashMap;

use bytes::Bytes;
use kafka_protocol::messages::{ResponseKind, SyncGroupRequest};
use kafka_protocol::ResponseError;

use super::classic::ClassicGroup;
use super::ctx::{Ctx, SyncResult};
use super::group::Group;
use super::member::Parked;
use super::state::GroupState;
use super::{GroupCoordinator, Output, RequestToken};

impl GroupCoordinator {
    /// SyncGroup, all versions (0-5). Kafka source: `GroupCoordinator.handleSyncGroup`.
    ///
    /// In CompletingRebalance a follower's SyncGroup is parked until the leader's arrives
    /// (it is never answered early on a timer; if the leader does not sync within the
    /// rebalance timeout, the group rebalances and parked syncs get REBALANCE_IN_PROGRESS,
    /// as Kafka's pending-sync expiry does). The leader's SyncGroup persists the group
    /// ([`Output::Persist`] before the answers) and answers every parked member with its
    /// assignment; members missing from the leader's assignment get empty bytes. In
    /// Stable the current assignment is returned at once.
    ///
    /// Errors: INVALID_GROUP_ID, REBALANCE_IN_PROGRESS (while loading, or the group is
    /// PreparingRebalance), UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, ILLEGAL_GENERATION,
    /// INCONSISTENT_GROUP_PROTOCOL (v5+: protocol type/name missing or different).
    pub fn sync_group(
        &mut self,
        token: RequestToken,
        version: i16,
        req: SyncGroupRequest,
        now_ms: i64,
    ) -> Vec<Output> {
        let mut out = Vec::new();
        let parked = Parked { token, version };
        let group_id = req.group_id.0.to_string();
        let member_id = req.member_id.to_string();
        let instance =
            if version >= 3 { req.group_instance_id.as_ref().map(|s| s.to_string()) } else { None };
        let (ptype, pname) = if version >= 5 {
            (
                req.protocol_type.as_ref().map(|s| s.to_string()),
                req.protocol_name.as_ref().map(|s| s.to_string()),
            )
        } else {
            (None, None)
        };
        let fail = |out: &mut Vec<Output>, code: ResponseError| {
            out.push(Output::Respond {
                token,
                response: ResponseKind::SyncGroup(SyncResult::error(code).into_response(version)),
            })
        };
        if version >= 5 && (ptype.is_none() || pname.is_none()) {
            fail(&mut out, ResponseError::InconsistentGroupProtocol);
            return out;
        }
        if let Some(code) = self.validate_group_status(&group_id, false) {
            // A loading coordinator lost the rebalance: make the member rejoin.
            let code = if code == ResponseError::CoordinatorLoadInProgress {
                ResponseError::RebalanceInProgress
            } else {
                code
            };
            fail(&mut out, code);
            return out;
        }
        // A consumer-protocol group has no classic members.
        let Some(group) = self.groups.get_mut(&group_id).and_then(Group::as_classic_mut) else {
            fail(&mut out, ResponseError::UnknownMemberId);
            return out;
        };
        let mut ctx = Ctx { cfg: &self.config, group_id: &group_id, now: now_ms, out: &mut out };
        let assignments: HashMap<String, Bytes> =
            req.assignments.into_iter().map(|a| (a.member_id.to_string(), a.assignment)).collect();
        group.do_sync(
            parked,
            &member_id,
            instance.as_deref(),
            req.generation_id,
            ptype.as_deref(),
            pname.as_deref(),
            assignments,
            &mut ctx,
        );
        self.reschedule(&group_id);
        out
    }
}

impl ClassicGroup {
    /// Kafka's `validateSyncGroup` + `doSyncGroup`.
    #[allow(clippy::too_many_arguments)]
    fn do_sync(
        &mut self,
        parked: Parked,
        member_id: &str,
        instance: Option<&str>,
        generation: i32,
        ptype: Option<&str>,
        pname: Option<&str>,
        assignments: HashMap<String, Bytes>,
        ctx: &mut Ctx,
    ) {
        let error = self.validate_current_member(member_id, instance).or_else(|| {
            if generation != self.generation {
                Some(ResponseError::IllegalGeneration)
            } else if ptype.is_some_and(|t| self.protocol_type.as_deref() != Some(t))
                || pname.is_some_and(|n| self.protocol_name.as_deref() != Some(n))
            {
                Some(ResponseError::InconsistentGroupProtocol)
            } else {
                None
            }
        });
        if let Some(code) = error {
            ctx.respond_sync(parked, SyncResult::error(code));
            return;
        }
        match self.state {
            GroupState::Empty | GroupState::Dead => {
                ctx.respond_sync(parked, SyncResult::error(ResponseError::UnknownMemberId))
            }
            GroupState::PreparingRebalance => {
                ctx.respond_sync(parked, SyncResult::error(ResponseError::RebalanceInProgress))
            }
            GroupState::CompletingRebalance => {
                let m = self.members.get_mut(member_id).expect("validated member");
                if let Some(old) = m.awaiting_sync.replace(parked) {
                    let code = ResponseError::RebalanceInProgress;
                    ctx.respond_sync(old, SyncResult::error(code));
                }
                self.remove_pending_sync(member_id);
                if self.is_leader(member_id) {
                    for m in self.members.values_mut() {
                        m.assignment = assignments.get(&m.member_id).cloned().unwrap_or_default();
                    }
                    ctx.persist(self.metadata_record(ctx.group_id));
                    self.propagate_assignment(None, ctx);
                    self.transition(GroupState::Stable, ctx.now);
                }
            }
            GroupState::Stable => {
                self.remove_pending_sync(member_id);
                let m = self.members.get_mut(member_id).expect("validated member");
                m.heartbeat_deadline = Some(ctx.now + m.session_timeout_ms as i64);
                let result = SyncResult {
                    error: None,
                    protocol_type: self.protocol_type.clone(),
                    protocol_name: self.protocol_name.clone(),
                    assignment: m.assignment.clone(),
                };
                ctx.respond_sync(parked, result);
            }
        }
    }

    /// Kafka's `removePendingSyncMember` (+ `DelayedSync` completion when none is left).
    fn remove_pending_sync(&mut self, member_id: &str) {
        self.pending_sync.remove(member_id);
        if self.pending_sync.is_empty() {
            self.sync_deadline = None;
        }
    }

    /// Kafka's `propagateAssignment`: answer every parked SyncGroup with the member's
    /// assignment (or `error`) and restart its session timer.
    pub fn propagate_assignment(&mut self, error: Option<ResponseError>, ctx: &mut Ctx) {
        let (ptype, pname) = if error.is_none() {
            (self.protocol_type.clone(), self.protocol_name.clone())
        } else {
            (None, None)
        };
        for m in self.members.values_mut() {
            if let Some(p) = m.awaiting_sync.take() {
                let result = SyncResult {
                    error,
                    protocol_type: ptype.clone(),
                    protocol_name: pname.clone(),
                    assignment: m.assignment.clone(),
                };
                ctx.respond_sync(p, result);
                m.heartbeat_deadline = Some(ctx.now + m.session_timeout_ms as i64);
            }
        }
    }

    /// Kafka's `resetAndPropagateAssignmentError`.
    pub fn reset_and_propagate_assignment_error(&mut self, error: ResponseError, ctx: &mut Ctx) {
        for m in self.members.values_mut() {
            m.assignment = Bytes::new();
        }
        self.propagate_assignment(Some(error), ctx);
    }
}

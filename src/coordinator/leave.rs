//! LeaveGroup, single (v0-2) and batched (v3+) (Kafka's `GroupCoordinator.handleLeaveGroup`).

use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::{LeaveGroupRequest, LeaveGroupResponse, ResponseKind};

use super::ctx::Ctx;
use super::group::Group;
use super::state::GroupState;
use super::{GroupCoordinator, Output, RequestToken};
use crate::error::{code, ResponseError};
use crate::protocol::strings::sb;

/// A leaving member: (member id, group instance id).
type Leaving = (String, Option<String>);

impl GroupCoordinator {
    /// LeaveGroup, all versions (0-5). Kafka source: `GroupCoordinator.handleLeaveGroup`.
    ///
    /// v0-2 name one member (`member_id`); v3+ a batch of members, each by member id or,
    /// with an empty member id, by `group_instance_id` (administrative removal). Each
    /// leaving member is removed at once: a Stable/CompletingRebalance group rebalances,
    /// a rebalancing group may complete.
    ///
    /// Errors: top level INVALID_GROUP_ID, COORDINATOR_LOAD_IN_PROGRESS; per member
    /// UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID. v0-2 report the first member error at top
    /// level, as Kafka's `LeaveGroupResponse` does.
    pub fn leave_group(
        &mut self,
        token: RequestToken,
        version: i16,
        req: LeaveGroupRequest,
        now_ms: i64,
    ) -> Vec<Output> {
        let mut out = Vec::new();
        let group_id = req.group_id.0.to_string();
        let leaving: Vec<Leaving> = if version >= 3 {
            req.members
                .iter()
                .map(|m| {
                    (m.member_id.to_string(), m.group_instance_id.as_ref().map(|s| s.to_string()))
                })
                .collect()
        } else {
            vec![(req.member_id.to_string(), None)]
        };
        let result = self.do_leave(&group_id, &leaving, now_ms, &mut out);
        self.reschedule(&group_id);

        let mut r = LeaveGroupResponse::default();
        match result {
            Err(top) => r.error_code = top.code(),
            Ok(results) if version >= 3 => {
                r.members = results
                    .into_iter()
                    .map(|((member_id, instance), error)| {
                        let mut m = MemberResponse::default();
                        m.member_id = sb(&member_id);
                        m.group_instance_id = instance.as_deref().map(sb);
                        m.error_code = code(error);
                        m
                    })
                    .collect();
            }
            Ok(results) => r.error_code = code(results.into_iter().find_map(|(_, e)| e)),
        }
        out.push(Output::Respond { token, response: ResponseKind::LeaveGroup(r) });
        out
    }

    /// Remove each leaving member; the outcome per member, or the top-level error.
    fn do_leave(
        &mut self,
        group_id: &str,
        leaving: &[Leaving],
        now: i64,
        out: &mut Vec<Output>,
    ) -> Result<Vec<(Leaving, Option<ResponseError>)>, ResponseError> {
        if let Some(e) = self.validate_group_status(group_id, false) {
            return Err(e);
        }
        // A consumer-protocol group has no classic members.
        let Some(group) = self.groups.get_mut(group_id).and_then(Group::as_classic_mut) else {
            let unknown = Some(ResponseError::UnknownMemberId);
            return Ok(leaving.iter().map(|l| (l.clone(), unknown)).collect());
        };
        let mut ctx = Ctx { cfg: &self.config, group_id, now, out };
        let mut results = Vec::with_capacity(leaving.len());
        for (member_id, instance) in leaving {
            let error = if member_id.is_empty() {
                match instance.as_deref().and_then(|i| group.current_static_member_id(i)) {
                    Some(current) => {
                        let current = current.to_string();
                        group.remove_member_and_update_group(&current, &mut ctx);
                        None
                    }
                    None => Some(ResponseError::UnknownMemberId),
                }
            } else if group.pending_members.contains_key(member_id) {
                group.pending_members.shift_remove(member_id);
                if group.is(GroupState::PreparingRebalance) {
                    group.try_complete_join(&mut ctx);
                }
                None
            } else {
                let error = group.validate_current_member(member_id, instance.as_deref());
                if error.is_none() {
                    group.remove_member_and_update_group(member_id, &mut ctx);
                }
                error
            };
            results.push(((member_id.clone(), instance.clone()), error));
        }
        Ok(results)
    }
}

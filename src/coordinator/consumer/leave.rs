//! Leaving a consumer group: ConsumerGroupHeartbeat with member epoch -1 (leave) or
//! -2 (a static member's temporary leave). Kafka source:
//! `GroupMetadataManager.consumerGroupLeave`.

use kafka_protocol::messages::ConsumerGroupHeartbeatResponse;

use super::super::group::GroupKind;
use super::super::GroupCoordinator;
use super::member::{MemberState, STATIC_LEAVE_EPOCH};
use super::validate::{fail, fenced_instance, Fail};
use crate::error::ResponseError;
use crate::protocol::strings::sb;

impl GroupCoordinator {
    /// Kafka's `consumerGroupLeave`: epoch -1 removes the member (group epoch bump);
    /// epoch -2 (static members) keeps its assignment for its successor.
    pub(super) fn consumer_leave(
        &mut self,
        group_id: &str,
        member_id: &str,
        instance: Option<&str>,
        epoch: i32,
        now: i64,
    ) -> Result<ConsumerGroupHeartbeatResponse, Fail> {
        let session_ms = self.config.consumer_session_timeout_ms as i64;
        let cg = match self.groups.get_mut(group_id).map(|g| &mut g.kind) {
            Some(GroupKind::Consumer(cg)) => cg,
            Some(GroupKind::Classic(_)) => {
                return Err(fail(
                    ResponseError::GroupIdNotFound,
                    format!("Group {group_id} is not a consumer group."),
                ))
            }
            None => {
                return Err(fail(
                    ResponseError::UnknownMemberId,
                    format!("Consumer group {group_id} not found."),
                ))
            }
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
                    return Err(fenced_instance(member_id, i, &current));
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
}

//! Checks of ConsumerGroupHeartbeat requests and of member epochs (also used by
//! OffsetCommit / OffsetFetch for consumer groups).

use kafka_protocol::messages::ConsumerGroupHeartbeatRequest;

use super::super::assignor::{self, Assignment};
use super::group::ConsumerGroup;
use super::member::{ConsumerMember, JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH};
use super::reconcile::is_subset;
use crate::error::ResponseError;

/// A refused request: the error code and the message the response carries.
#[derive(Debug)]
pub(super) struct Fail {
    /// The top-level error code.
    pub error: ResponseError,
    /// `error_message` of the response.
    pub message: Option<String>,
}

/// A refusal with a message.
pub(super) fn fail(error: ResponseError, message: impl Into<String>) -> Fail {
    Fail { error, message: Some(message.into()) }
}

/// FENCED_INSTANCE_ID: `instance` belongs to member `current`, not to `member_id`.
pub(super) fn fenced_instance(member_id: &str, instance: &str, current: &str) -> Fail {
    fail(
        ResponseError::FencedInstanceId,
        format!(
            "Static member {member_id} with instance id {instance} was fenced by member \
             {current}."
        ),
    )
}

/// Kafka's `throwIfMemberEpochIsInvalid`: a larger epoch, or a smaller one other than
/// the previous epoch with owned partitions within the current assignment (a lost
/// response), is fenced.
pub(super) fn check_member_epoch(
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
                "The consumer group member has a {} member epoch ({received}) than the one \
                 known by the group coordinator ({}). The member must abandon all its \
                 partitions and rejoin.",
                if received > m.member_epoch { "greater" } else { "smaller" },
                m.member_epoch
            ),
        ))
    }
}

/// Kafka's `throwIfConsumerGroupHeartbeatRequestIsInvalid`.
/// `has_regex`: the request carries a `SubscribedTopicRegex` (v1+), compiled by the
/// caller.
pub(super) fn validate_request(
    req: &ConsumerGroupHeartbeatRequest,
    version: i16,
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
                "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when \
                 (re-)joining.",
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

/// Kafka's `ConsumerGroup.validateOffsetCommit` / `validateOffsetFetch` for a member of
/// a consumer group: UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH (epoch ahead of the
/// coordinator's), STALE_MEMBER_EPOCH (behind). A negative epoch on a group without
/// members is accepted (admin / `assign()` commits).
pub(crate) fn validate_member_epoch(
    cg: &ConsumerGroup,
    member_id: &str,
    epoch: i32,
) -> Option<ResponseError> {
    if epoch < 0 && cg.members.is_empty() {
        return None;
    }
    let Some(m) = cg.members.get(member_id) else {
        return Some(ResponseError::UnknownMemberId);
    };
    if epoch > m.member_epoch {
        Some(ResponseError::FencedMemberEpoch)
    } else if epoch < m.member_epoch {
        Some(ResponseError::StaleMemberEpoch)
    } else {
        None
    }
}

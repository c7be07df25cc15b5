//! FindCoordinator (key 10): this broker coordinates every group and transactional
//! id; v4+ answers the batched `coordinator_keys` form (KIP-699).

use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::{BrokerId, FindCoordinatorRequest, FindCoordinatorResponse};

use super::{Ctx, Outcome, Versions};
use crate::error::{self, ResponseError};
use crate::protocol::strings::sb;
use crate::security::acl::{AclOperation, ResourceType};

pub const VERSIONS: Versions = Versions { min: 0, max: 6 };

/// Key type 0 (group) and 1 (transaction) are coordinated here; others
/// (share groups, 2) get INVALID_REQUEST. Without DESCRIBE on the group or the
/// transactional id: GROUP_AUTHORIZATION_FAILED / TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
pub async fn handle(
    ctx: &Ctx,
    request: FindCoordinatorRequest,
) -> Outcome<FindCoordinatorResponse> {
    Outcome::Ready(answer(ctx, request))
}

fn answer(ctx: &Ctx, request: FindCoordinatorRequest) -> FindCoordinatorResponse {
    let (host, port) = (ctx.listener.advertised_host.clone(), ctx.listener.advertised_port);
    let node = BrokerId(ctx.shard.config.node_id);
    let error = |key: &str| match request.key_type {
        0 if !ctx.authorize(AclOperation::Describe, ResourceType::Group, key) => {
            Some(ResponseError::GroupAuthorizationFailed)
        }
        1 if !ctx.authorize(AclOperation::Describe, ResourceType::TransactionalId, key) => {
            Some(ResponseError::TransactionalIdAuthorizationFailed)
        }
        0 | 1 => None,
        _ => Some(ResponseError::InvalidRequest),
    };
    if ctx.api_version >= 4 {
        let coordinators = request
            .coordinator_keys
            .iter()
            .map(|k| {
                let error = error(k.as_str());
                let c =
                    Coordinator::default().with_key(k.clone()).with_error_code(error::code(error));
                if error.is_none() {
                    c.with_node_id(node).with_host(sb(&host)).with_port(port)
                } else {
                    c.with_node_id(BrokerId(-1)).with_port(-1)
                }
            })
            .collect();
        return FindCoordinatorResponse::default().with_coordinators(coordinators);
    }
    let error = error(request.key.as_str());
    let r = FindCoordinatorResponse::default().with_error_code(error::code(error));
    if error.is_none() {
        r.with_node_id(node).with_host(sb(&host)).with_port(port)
    } else {
        r.with_node_id(BrokerId(-1)).with_port(-1)
    }
}

//! FindCoordinator (key 10): this broker coordinates every group and transactional
//! id; v4+ answers the batched `coordinator_keys` form (KIP-699). The node named is
//! the broker's one node, or with `--shard-ports` the node of the shard that
//! coordinates the key ([`crate::net::shard_nodes`]), so that the client's group and
//! transaction requests reach that shard directly.

use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::{BrokerId, FindCoordinatorRequest, FindCoordinatorResponse};

use super::{Ctx, Outcome, Versions};
use crate::error::{self, ResponseError};
use crate::net::shard_nodes;
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
    let shard = &ctx.shard;
    let coordinator = |key: &str| {
        let owner = match request.key_type {
            1 => crate::shard::transactions::coordinator_shard(key, shard.nr_shards),
            _ => crate::shard::groups::coordinator_shard(key, shard.nr_shards, shard.groups.placement()),
        };
        shard_nodes::broker(&shard.config, &ctx.listener, owner)
    };
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
                    let node = coordinator(k.as_str());
                    c.with_node_id(BrokerId(node.node_id)).with_host(sb(&node.host)).with_port(node.port)
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
        let node = coordinator(request.key.as_str());
        r.with_node_id(BrokerId(node.node_id)).with_host(sb(&node.host)).with_port(node.port)
    } else {
        r.with_node_id(BrokerId(-1)).with_port(-1)
    }
}

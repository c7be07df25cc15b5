//! ListGroups (key 16): every shard lists the groups it coordinates (with the
//! request's state and type filters); the lists are concatenated. On a shard's own
//! listener (`--shard-ports`) only that shard's node lists (admin clients ask every node).

use kafka_protocol::messages::{ListGroupsRequest, ListGroupsResponse};

use crate::net::shard_nodes;
use super::{group_route, Ctx, Outcome, Versions};
use crate::security::acl::{AclOperation, ResourceType};

pub const VERSIONS: Versions = Versions { min: 0, max: 5 };

/// Lists groups; the error code is the first shard's non-zero one
/// (COORDINATOR_LOAD_IN_PROGRESS while a shard loads).
pub async fn handle(ctx: &Ctx, request: ListGroupsRequest) -> Outcome<ListGroupsResponse> {
    let mut waits = Vec::new();
    for shard in shard_nodes::listed_shards(&ctx.listener, ctx.shard.nr_shards) {
        waits.push(group_route::send(ctx, shard, request.clone()).await);
    }
    // Kafka lists every group to DESCRIBE on the cluster, else those the connection
    // may DESCRIBE.
    let ctx = ctx.clone();
    let all = ctx.authorize_cluster(AclOperation::Describe);
    Outcome::later(async move {
        let mut out = ListGroupsResponse::default();
        for reply in waits {
            if let Some(r) = reply.await {
                if out.error_code == 0 {
                    out.error_code = r.error_code;
                }
                out.groups.extend(r.groups.into_iter().filter(|g| {
                    all || ctx.authorize(AclOperation::Describe, ResourceType::Group, &g.group_id)
                }));
            }
        }
        out
    })
}

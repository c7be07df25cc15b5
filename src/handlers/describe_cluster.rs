//! DescribeCluster (key 60, KIP-700): this single broker, its cluster id, and
//! itself as controller.

use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::{BrokerId, DescribeClusterRequest, DescribeClusterResponse};

use super::util::sb;
use super::{Ctx, Versions};

pub const VERSIONS: Versions = Versions { min: 0, max: 2 };

/// Describes the cluster. `endpoint_type` 2 (controllers, v1+) is answered with
/// UNSUPPORTED_ENDPOINT_TYPE (119) as a broker-only listener does.
pub fn handle(ctx: &Ctx, request: DescribeClusterRequest) -> DescribeClusterResponse {
    let (host, port) = ctx.shard.config.advertised();
    let node_id = ctx.shard.config.node_id;
    let mut response = DescribeClusterResponse::default()
        .with_cluster_id(sb(&ctx.shard.catalog().cluster_id))
        .with_controller_id(BrokerId(node_id))
        .with_cluster_authorized_operations(i32::MIN)
        .with_brokers(vec![DescribeClusterBroker::default()
            .with_broker_id(BrokerId(node_id))
            .with_host(sb(&host))
            .with_port(port)]);
    if ctx.api_version >= 1 {
        response.endpoint_type = 1;
        if request.endpoint_type == 2 {
            response.error_code = 119;
            response.error_message =
                Some(sb("The target cluster does not expose controller endpoints"));
        }
    }
    response
}

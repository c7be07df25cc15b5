//! DescribeCluster (key 60, KIP-700): this broker's nodes (one, or one per shard with
//! `--shard-ports`: [`crate::net::shard_nodes`]), its cluster id, and node
//! `--node-id` as controller.

use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::{BrokerId, DescribeClusterRequest, DescribeClusterResponse};

use super::{Ctx, Outcome, Versions};
use crate::error::ResponseError;
use crate::protocol::strings::sb;

pub const VERSIONS: Versions = Versions { min: 0, max: 2 };

/// Describes the cluster, as Kafka's `AuthHelper.computeDescribeClusterResponse`
/// does on a broker listener: `endpoint_type` 1 (brokers) is answered; 2
/// (controllers, v1+) gets MISMATCHED_ENDPOINT_TYPE and any other value
/// UNSUPPORTED_ENDPOINT_TYPE, each with only the error code and message set.
pub async fn handle(
    ctx: &Ctx,
    request: DescribeClusterRequest,
) -> Outcome<DescribeClusterResponse> {
    let refused = |error: ResponseError, message: String| {
        Outcome::Ready(
            DescribeClusterResponse::default()
                .with_error_code(error.code())
                .with_error_message(Some(sb(&message))),
        )
    };
    match request.endpoint_type {
        1 => {}
        2 => {
            return refused(
                ResponseError::MismatchedEndpointType,
                "The request was sent to an endpoint of type BROKER, but we wanted an endpoint \
                 of type CONTROLLER"
                    .into(),
            )
        }
        other => {
            return refused(
                ResponseError::UnsupportedEndpointType,
                format!("Unsupported endpoint type {other}"),
            )
        }
    }
    let config = &ctx.shard.config;
    let brokers = crate::net::shard_nodes::brokers(config, &ctx.listener)
        .into_iter()
        .map(|b| {
            DescribeClusterBroker::default()
                .with_broker_id(BrokerId(b.node_id))
                .with_host(sb(&b.host))
                .with_port(b.port)
        })
        .collect();
    let mut response = DescribeClusterResponse::default()
        .with_cluster_id(sb(&ctx.shard.catalog().cluster_id))
        .with_controller_id(BrokerId(config.node_id))
        .with_cluster_authorized_operations(i32::MIN)
        .with_brokers(brokers);
    if ctx.api_version >= 1 {
        response.endpoint_type = 1;
    }
    // KIP-430 with the authorizer on: the cluster's bit set, 0 without DESCRIBE on it.
    if ctx.shard.authorizer.is_some() && request.include_cluster_authorized_operations {
        response.cluster_authorized_operations =
            if ctx.authorize_cluster(crate::security::acl::AclOperation::Describe) {
                ctx.authorized_operations(
                    crate::security::acl::ResourceType::Cluster,
                    crate::security::acl::CLUSTER_NAME,
                )
            } else {
                0
            };
    }
    Outcome::Ready(response)
}

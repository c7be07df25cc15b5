//! ListPartitionReassignments (key 46, KIP-455): the partition reassignments in
//! progress. On one node a partition's only replica is this node and a reassignment
//! completes (or is refused) when it is requested, so none is ever in progress: the
//! answer is always an empty list, for every topic asked about or for all (null
//! `topics`), as Kafka's controller answers when nothing is moving (unknown topics are
//! skipped, not errors).

use kafka_protocol::messages::{ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse};

use kafka_protocol::messages::list_partition_reassignments_response::{
    OngoingPartitionReassignment, OngoingTopicReassignment,
};

use super::{Ctx, Outcome, Versions};
use crate::error::ResponseError;
use crate::protocol::strings::sb;
use crate::security::acl::AclOperation;

pub const VERSIONS: Versions = Versions { min: 0, max: 0 };

/// Lists the reassignments in progress: none. With the authorizer on, a connection
/// without DESCRIBE on the cluster gets CLUSTER_AUTHORIZATION_FAILED, each named
/// partition listed with no replicas (Kafka's `getErrorResponse`).
pub async fn handle(
    ctx: &Ctx,
    request: ListPartitionReassignmentsRequest,
) -> Outcome<ListPartitionReassignmentsResponse> {
    if ctx.authorize_cluster(AclOperation::Describe) {
        return Outcome::Ready(ListPartitionReassignmentsResponse::default());
    }
    let topics = request
        .topics
        .unwrap_or_default()
        .into_iter()
        .map(|t| {
            OngoingTopicReassignment::default().with_name(t.name).with_partitions(
                t.partition_indexes
                    .into_iter()
                    .map(|p| OngoingPartitionReassignment::default().with_partition_index(p))
                    .collect(),
            )
        })
        .collect();
    Outcome::Ready(
        ListPartitionReassignmentsResponse::default()
            .with_error_code(ResponseError::ClusterAuthorizationFailed.code())
            .with_error_message(Some(sb("Cluster authorization failed.")))
            .with_topics(topics),
    )
}

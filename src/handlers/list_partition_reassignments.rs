//! ListPartitionReassignments (key 46, KIP-455): the partition reassignments in
//! progress. On one node a partition's only replica is this node and a reassignment
//! completes (or is refused) when it is requested, so none is ever in progress: the
//! answer is always an empty list, for every topic asked about or for all (null
//! `topics`), as Kafka's controller answers when nothing is moving (unknown topics are
//! skipped, not errors).

use kafka_protocol::messages::{ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse};

use super::{Ctx, Outcome, Versions};

pub const VERSIONS: Versions = Versions { min: 0, max: 0 };

/// Lists the reassignments in progress: none.
pub async fn handle(
    _ctx: &Ctx,
    _request: ListPartitionReassignmentsRequest,
) -> Outcome<ListPartitionReassignmentsResponse> {
    Outcome::Ready(ListPartitionReassignmentsResponse::default())
}

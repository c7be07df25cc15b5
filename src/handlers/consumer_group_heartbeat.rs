//! ConsumerGroupHeartbeat (key 68, KIP-848): the next-generation group protocol with
//! server-side assignment; routed to the group's coordinating shard.

use kafka_protocol::messages::{ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse};

use super::{group_route, Ctx, Outcome, Versions};

pub const VERSIONS: Versions = Versions { min: 0, max: 1 };

/// Sends the heartbeat to the group's coordinator.
pub async fn handle(
    ctx: &Ctx,
    request: ConsumerGroupHeartbeatRequest,
) -> Outcome<ConsumerGroupHeartbeatResponse> {
    group_route::to_group(ctx, request).await
}

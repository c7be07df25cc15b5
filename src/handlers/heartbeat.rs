//! Heartbeat (key 12), classic group protocol: routed to the group's coordinating shard;
//! the state machine is [`crate::coordinator::GroupCoordinator`].

use kafka_protocol::messages::{HeartbeatRequest, HeartbeatResponse};

use super::{group_route, Ctx, Outcome, Versions};

pub const VERSIONS: Versions = Versions { min: 0, max: 4 };

/// Sends the request to the group's coordinator; the response may come much later.
pub async fn handle(ctx: &Ctx, request: HeartbeatRequest) -> Outcome<HeartbeatResponse> {
    group_route::to_group(ctx, request).await
}

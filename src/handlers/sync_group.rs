//! SyncGroup (key 14), classic group protocol: routed to the group's coordinating shard;
//! the state machine is [`crate::coordinator::GroupCoordinator`].

use kafka_protocol::messages::{SyncGroupRequest, SyncGroupResponse};

use super::{group_route, Ctx, Outcome, Versions};

pub const VERSIONS: Versions = Versions { min: 0, max: 5 };

/// Sends the request to the group's coordinator; the response may come much later.
pub async fn handle(ctx: &Ctx, request: SyncGroupRequest) -> Outcome<SyncGroupResponse> {
    group_route::to_group(ctx, request).await
}

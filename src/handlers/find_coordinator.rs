//! FindCoordinator (key 10): this broker coordinates every group and transactional
//! id; v4+ answers the batched `coordinator_keys` form (KIP-699).

use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::{BrokerId, FindCoordinatorRequest, FindCoordinatorResponse};

use super::util::sb;
use super::{Ctx, Versions};

pub const VERSIONS: Versions = Versions { min: 0, max: 6 };

const INVALID_REQUEST: i16 = 42;

/// Key type 0 (group) and 1 (transaction) are coordinated here; others
/// (share groups, 2) get INVALID_REQUEST.
pub fn handle(ctx: &Ctx, request: FindCoordinatorRequest) -> FindCoordinatorResponse {
    let (host, port) = ctx.shard.config.advertised();
    let node = BrokerId(ctx.shard.config.node_id);
    let error = if request.key_type == 0 || request.key_type == 1 { 0 } else { INVALID_REQUEST };
    if ctx.api_version >= 4 {
        let coordinators = request
            .coordinator_keys
            .iter()
            .map(|k| {
                let c = Coordinator::default().with_key(k.clone()).with_error_code(error);
                if error == 0 {
                    c.with_node_id(node).with_host(sb(&host)).with_port(port)
                } else {
                    c.with_node_id(BrokerId(-1)).with_port(-1)
                }
            })
            .collect();
        return FindCoordinatorResponse::default().with_coordinators(coordinators);
    }
    let r = FindCoordinatorResponse::default().with_error_code(error);
    if error == 0 {
        r.with_node_id(node).with_host(sb(&host)).with_port(port)
    } else {
        r.with_node_id(BrokerId(-1)).with_port(-1)
    }
}

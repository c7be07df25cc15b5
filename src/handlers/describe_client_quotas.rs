//! DescribeClientQuotas (key 48, KIP-546). shardlog enforces no client quotas and
//! stores none, so every filter matches no entity: the answer is an empty list.
//! `kafka-configs.sh --describe --entity-type users` asks for quotas before it lists a
//! user's SCRAM credentials, so it needs this answer.

use kafka_protocol::messages::{DescribeClientQuotasRequest, DescribeClientQuotasResponse};

use super::{Ctx, Outcome, Versions};
use crate::error::ResponseError;
use crate::protocol::strings::sb;

pub const VERSIONS: Versions = Versions { min: 0, max: 1 };

/// No entries; a component whose match type is not 0 (exact), 1 (default) or 2 (any
/// specified) gets INVALID_REQUEST.
pub async fn handle(
    _ctx: &Ctx,
    request: DescribeClientQuotasRequest,
) -> Outcome<DescribeClientQuotasResponse> {
    let response = match request.components.iter().find(|c| !(0..=2).contains(&c.match_type)) {
        Some(c) => DescribeClientQuotasResponse::default()
            .with_error_code(ResponseError::InvalidRequest.code())
            .with_error_message(Some(sb(&format!("Unknown match type {}", c.match_type))))
            .with_entries(None),
        None => DescribeClientQuotasResponse::default()
            .with_error_message(None)
            .with_entries(Some(Vec::new())),
    };
    Outcome::Ready(response)
}

//! DescribeClientQuotas (key 48, KIP-546): the stored client quotas whose entity
//! matches the filter (Kafka's `ClientQuotasImage.describe`), from this shard's copy
//! of the catalog. `kafka-configs.sh --describe --entity-type users|clients` uses it.

use kafka_protocol::messages::describe_client_quotas_response::{EntityData, EntryData, ValueData};
use kafka_protocol::messages::{DescribeClientQuotasRequest, DescribeClientQuotasResponse};

use super::acl_wire::NOT_AUTHORIZED;
use super::{Ctx, Outcome, Versions};
use crate::error::ResponseError;
use crate::protocol::strings::sb;
use crate::quota::describe::{self, Component};
use crate::security::acl::AclOperation;

pub const VERSIONS: Versions = Versions { min: 0, max: 1 };

/// The matching entities with their values. Errors (no entries): CLUSTER_AUTHORIZATION_FAILED
/// without DESCRIBE_CONFIGS on the cluster; INVALID_REQUEST for a bad filter;
/// UNSUPPORTED_VERSION for an unknown entity type ([`describe::filter`]).
pub async fn handle(
    ctx: &Ctx,
    request: DescribeClientQuotasRequest,
) -> Outcome<DescribeClientQuotasResponse> {
    let error = |e: ResponseError, m: &str| {
        Outcome::Ready(
            DescribeClientQuotasResponse::default()
                .with_error_code(e.code())
                .with_error_message(Some(sb(m)))
                .with_entries(None),
        )
    };
    if !ctx.authorize_cluster(AclOperation::DescribeConfigs) {
        return error(ResponseError::ClusterAuthorizationFailed, NOT_AUTHORIZED);
    }
    let components: Vec<Component> = request
        .components
        .iter()
        .map(|c| Component {
            entity_type: c.entity_type.to_string(),
            match_type: c.match_type,
            matched: c._match.as_ref().map(|m| m.to_string()),
        })
        .collect();
    let filter = match describe::filter(&components, request.strict) {
        Ok(f) => f,
        Err((e, m)) => return error(e, &m),
    };
    let catalog = ctx.shard.catalog();
    let entries = describe::describe(&catalog.client_quotas, &filter)
        .into_iter()
        .map(|(entity, values)| {
            EntryData::default()
                .with_entity(
                    entity
                        .components()
                        .map(|(t, n)| {
                            EntityData::default()
                                .with_entity_type(sb(t))
                                .with_entity_name(n.as_wire().map(sb))
                        })
                        .collect(),
                )
                .with_values(
                    values
                        .into_iter()
                        .map(|(k, v)| ValueData::default().with_key(sb(k)).with_value(v))
                        .collect(),
                )
        })
        .collect();
    Outcome::Ready(
        DescribeClientQuotasResponse::default().with_error_message(None).with_entries(Some(entries)),
    )
}

//! IncrementalAlterConfigs (key 44, KIP-339): SET, DELETE, APPEND and SUBTRACT on a
//! topic's configs (`kafka-configs --alter`, `Admin.incrementalAlterConfigs`), with
//! `validate_only`; see [`super::alter_config_route`] for how each resource is served
//! and [`crate::config_ops::apply`] for the rules and errors.

use kafka_protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse;
use kafka_protocol::messages::{IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse};

use super::alter_config_route::{route, Resource};
use super::{Ctx, Outcome, Versions};
use crate::config_ops::{ConfigChange, OpType};
use crate::error;
use crate::metadata::CatalogError;
use kafka_protocol::protocol::StrBytes;

pub const VERSIONS: Versions = Versions { min: 0, max: 1 };

/// One answer per resource, in request order: NONE, or UNKNOWN_TOPIC_OR_PARTITION,
/// INVALID_REQUEST (duplicate names, null values, unknown operation or resource type),
/// INVALID_CONFIG (unknown name, bad value, APPEND/SUBTRACT on a non-list, a broker
/// config that only a flag sets), KAFKA_STORAGE_ERROR (catalog not saved).
pub async fn handle(
    ctx: &Ctx,
    request: IncrementalAlterConfigsRequest,
) -> Outcome<IncrementalAlterConfigsResponse> {
    let resources = request
        .resources
        .into_iter()
        .map(|r| {
            let ops: Result<Vec<_>, CatalogError> = r
                .configs
                .iter()
                .map(|c| {
                    let op = OpType::from_code(c.config_operation).ok_or_else(|| {
                        CatalogError::InvalidRequest(format!(
                            "Unknown config operation {} for {}",
                            c.config_operation,
                            c.name.as_str()
                        ))
                    })?;
                    Ok((c.name.to_string(), op, c.value.as_ref().map(|v| v.to_string())))
                })
                .collect();
            Resource {
                resource_type: r.resource_type,
                name: r.resource_name,
                change: ops.map(ConfigChange::Incremental),
            }
        })
        .collect();
    let answers = route(ctx, resources, request.validate_only).await;
    Outcome::Serial(Box::pin(async move {
        let responses = answers
            .await?
            .into_iter()
            .map(|(resource_type, name, error, message)| {
                AlterConfigsResourceResponse::default()
                    .with_resource_type(resource_type)
                    .with_resource_name(name)
                    .with_error_code(error::code(error))
                    .with_error_message(message.map(StrBytes::from_string))
            })
            .collect();
        Some(IncrementalAlterConfigsResponse::default().with_responses(responses))
    }))
}

//! AlterConfigs (key 33, the legacy API): replaces the whole set of a topic's config
//! overrides with the given entries, with `validate_only`; see
//! [`super::alter_config_route`] for how each resource is served and
//! [`crate::config_ops::apply`] for the rules and errors.

use kafka_protocol::messages::alter_configs_response::AlterConfigsResourceResponse;
use kafka_protocol::messages::{AlterConfigsRequest, AlterConfigsResponse};

use super::alter_config_route::{route, Resource};
use super::{Ctx, Outcome, Versions};
use crate::config_ops::ConfigChange;
use crate::error;
use kafka_protocol::protocol::StrBytes;

pub const VERSIONS: Versions = Versions { min: 0, max: 2 };

/// One answer per resource, in request order, with the errors of
/// [`super::incremental_alter_configs::handle`].
pub async fn handle(ctx: &Ctx, request: AlterConfigsRequest) -> Outcome<AlterConfigsResponse> {
    let resources = request
        .resources
        .into_iter()
        .map(|r| {
            let entries = r
                .configs
                .iter()
                .map(|c| (c.name.to_string(), c.value.as_ref().map(|v| v.to_string())))
                .collect();
            Resource {
                resource_type: r.resource_type,
                name: r.resource_name,
                change: Ok(ConfigChange::Replace(entries)),
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
        Some(AlterConfigsResponse::default().with_responses(responses))
    }))
}

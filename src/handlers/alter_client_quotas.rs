//! AlterClientQuotas (key 49, KIP-546): sets or removes client quotas (Kafka's
//! `ControllerApis.handleAlterClientQuotas` and `ClientQuotaControlManager`). The
//! control shard validates them ([`crate::quota::alter`]), persists them and copies
//! them to every shard before the answer.

use kafka_protocol::messages::alter_client_quotas_response::{EntityData, EntryData};
use kafka_protocol::messages::{AlterClientQuotasRequest, AlterClientQuotasResponse};

use super::acl_wire::NOT_AUTHORIZED;
use super::{Ctx, Outcome, Versions};
use crate::error::ResponseError;
use crate::protocol::strings::sb;
use crate::quota::alter::{Alteration, Op, WireEntity};
use crate::security::acl::AclOperation;
use crate::shard::ControlRequest;

pub const VERSIONS: Versions = Versions { min: 0, max: 1 };

/// One entry per entity: CLUSTER_AUTHORIZATION_FAILED for all without ALTER_CONFIGS on
/// the cluster; INVALID_REQUEST (Kafka's messages) for an invalid entity, key or value
/// or a duplicate; KAFKA_STORAGE_ERROR when the change cannot be persisted. With
/// `validate_only` nothing changes.
pub async fn handle(
    ctx: &Ctx,
    request: AlterClientQuotasRequest,
) -> Outcome<AlterClientQuotasResponse> {
    let alterations: Vec<Alteration> = request
        .entries
        .iter()
        .map(|e| Alteration {
            entity: e
                .entity
                .iter()
                .map(|c| (c.entity_type.to_string(), c.entity_name.as_ref().map(|n| n.to_string())))
                .collect(),
            ops: e
                .ops
                .iter()
                .map(|o| Op { key: o.key.to_string(), value: o.value, remove: o.remove })
                .collect(),
        })
        .collect();
    if !ctx.authorize_cluster(AclOperation::AlterConfigs) {
        let entries = alterations
            .iter()
            .map(|a| entry(&a.entity, Some((ResponseError::ClusterAuthorizationFailed, NOT_AUTHORIZED))))
            .collect();
        return Outcome::Ready(AlterClientQuotasResponse::default().with_entries(entries));
    }
    let validate_only = request.validate_only;
    let rx = ctx
        .shard
        .ask_control(|reply| ControlRequest::AlterClientQuotas { alterations, validate_only, reply })
        .await;
    Outcome::serial(async move {
        let entries = match rx.await {
            Ok(results) => results
                .iter()
                .map(|(entity, e)| entry(entity, e.as_ref().map(|(e, m)| (*e, m.as_str()))))
                .collect(),
            // The control shard did not answer (shutdown).
            Err(_) => request
                .entries
                .iter()
                .map(|e| {
                    EntryData::default()
                        .with_error_code(ResponseError::UnknownServerError.code())
                        .with_entity(
                            e.entity
                                .iter()
                                .map(|c| {
                                    EntityData::default()
                                        .with_entity_type(c.entity_type.clone())
                                        .with_entity_name(c.entity_name.clone())
                                })
                                .collect(),
                        )
                })
                .collect(),
        };
        AlterClientQuotasResponse::default().with_entries(entries)
    })
}

/// One response entry: the entity as requested and its error (none on success).
fn entry(entity: &WireEntity, error: Option<(ResponseError, &str)>) -> EntryData {
    let (code, message) = match error {
        Some((e, m)) => (e.code(), Some(sb(m))),
        None => (0, None),
    };
    EntryData::default().with_error_code(code).with_error_message(message).with_entity(
        entity
            .iter()
            .map(|(t, n)| {
                EntityData::default().with_entity_type(sb(t)).with_entity_name(n.as_deref().map(sb))
            })
            .collect(),
    )
}

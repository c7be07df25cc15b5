//! CreateAcls (key 30): adds ACL bindings (Kafka's `AclApis.handleCreateAcls` and
//! `AclControlManager.createAcls`). The control shard persists them and copies them to
//! every shard before the answer.

use kafka_protocol::messages::create_acls_response::AclCreationResult;
use kafka_protocol::messages::{CreateAclsRequest, CreateAclsResponse};

use super::acl_wire::{self, NOT_AUTHORIZED, NO_AUTHORIZER};
use super::{Ctx, Outcome, Versions};
use crate::error::ResponseError;
use crate::protocol::strings::sb;
use crate::security::acl::AclOperation;
use crate::shard::ControlRequest;

pub const VERSIONS: Versions = Versions { min: 1, max: 3 };

/// One result per creation, in order: CLUSTER_AUTHORIZATION_FAILED for all without
/// ALTER on the cluster; SECURITY_DISABLED for all with `--authorizer` off;
/// INVALID_REQUEST for an invalid binding (unknown or ANY type / pattern type /
/// operation / permission, an empty name, a CLUSTER not named `kafka-cluster`, a
/// principal that is not `type:name`); KAFKA_STORAGE_ERROR when it cannot be persisted.
pub async fn handle(ctx: &Ctx, request: CreateAclsRequest) -> Outcome<CreateAclsResponse> {
    let all = |error: ResponseError, message: &str| {
        let results = request
            .creations
            .iter()
            .map(|_| {
                AclCreationResult::default()
                    .with_error_code(error.code())
                    .with_error_message(Some(sb(message)))
            })
            .collect();
        Outcome::Ready(CreateAclsResponse::default().with_results(results))
    };
    if !ctx.authorize_cluster(AclOperation::Alter) {
        return all(ResponseError::ClusterAuthorizationFailed, NOT_AUTHORIZED);
    }
    if ctx.shard.authorizer.is_none() {
        return all(ResponseError::SecurityDisabled, NO_AUTHORIZER);
    }
    let bindings: Vec<_> = request
        .creations
        .iter()
        .map(|c| {
            acl_wire::binding(
                c.resource_type,
                &c.resource_name,
                c.resource_pattern_type,
                &c.principal,
                &c.host,
                c.operation,
                c.permission_type,
            )
        })
        .collect();
    let count = bindings.len();
    let rx = ctx.shard.ask_control(|reply| ControlRequest::CreateAcls { bindings, reply }).await;
    Outcome::serial(async move {
        let answers = rx.await.unwrap_or_default();
        let results = (0..count)
            .map(|i| match answers.get(i) {
                Some(Ok(())) => AclCreationResult::default(),
                Some(Err(e)) => AclCreationResult::default()
                    .with_error_code(e.error().code())
                    .with_error_message(Some(sb(e.message()))),
                // The control shard did not answer (shutdown).
                None => AclCreationResult::default()
                    .with_error_code(ResponseError::UnknownServerError.code()),
            })
            .collect();
        CreateAclsResponse::default().with_results(results)
    })
}

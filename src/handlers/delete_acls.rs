//! DeleteAcls (key 31): removes the ACL bindings each filter matches (Kafka's
//! `AclApis.handleDeleteAcls` and `AclControlManager.deleteAcls`).

use kafka_protocol::messages::delete_acls_response::{DeleteAclsFilterResult, DeleteAclsMatchingAcl};
use kafka_protocol::messages::{DeleteAclsRequest, DeleteAclsResponse};

use super::acl_wire::{self, RawFilter, NOT_AUTHORIZED, NO_AUTHORIZER};
use super::{Ctx, Outcome, Versions};
use crate::error::ResponseError;
use crate::protocol::strings::sb;
use crate::security::acl::AclOperation;
use crate::shard::ControlRequest;

pub const VERSIONS: Versions = Versions { min: 1, max: 3 };

/// One result per filter, in order, with the bindings it removed (a binding two
/// filters match is listed by both): CLUSTER_AUTHORIZATION_FAILED for all without
/// ALTER on the cluster; SECURITY_DISABLED for all with `--authorizer` off;
/// INVALID_REQUEST for a filter with an unknown element; KAFKA_STORAGE_ERROR when the
/// change cannot be persisted.
pub async fn handle(ctx: &Ctx, request: DeleteAclsRequest) -> Outcome<DeleteAclsResponse> {
    let all = |error: ResponseError, message: &str| {
        let results = request
            .filters
            .iter()
            .map(|_| {
                DeleteAclsFilterResult::default()
                    .with_error_code(error.code())
                    .with_error_message(Some(sb(message)))
            })
            .collect();
        Outcome::Ready(DeleteAclsResponse::default().with_filter_results(results))
    };
    if !ctx.authorize_cluster(AclOperation::Alter) {
        return all(ResponseError::ClusterAuthorizationFailed, NOT_AUTHORIZED);
    }
    if ctx.shard.authorizer.is_none() {
        return all(ResponseError::SecurityDisabled, NO_AUTHORIZER);
    }
    if request.filters.iter().any(|f| {
        acl_wire::has_unknown_code([
            f.resource_type_filter,
            f.pattern_type_filter,
            f.operation,
            f.permission_type,
        ])
    }) {
        return all(ResponseError::InvalidRequest, "Filters contain UNKNOWN elements");
    }
    let filters: Vec<_> = request
        .filters
        .iter()
        .map(|f| {
            acl_wire::filter(RawFilter {
                resource_type: f.resource_type_filter,
                name: f.resource_name_filter.as_ref(),
                pattern_type: f.pattern_type_filter,
                principal: f.principal_filter.as_ref(),
                host: f.host_filter.as_ref(),
                operation: f.operation,
                permission: f.permission_type,
            })
        })
        .collect();
    let count = filters.len();
    let rx = ctx.shard.ask_control(|reply| ControlRequest::DeleteAcls { filters, reply }).await;
    Outcome::serial(async move {
        let answers = rx.await.unwrap_or_default();
        let results = (0..count)
            .map(|i| match answers.get(i) {
                Some(Ok(removed)) => DeleteAclsFilterResult::default().with_matching_acls(
                    removed
                        .iter()
                        .map(|b| {
                            DeleteAclsMatchingAcl::default()
                                .with_resource_type(b.pattern.resource_type.code())
                                .with_resource_name(sb(&b.pattern.name))
                                .with_pattern_type(b.pattern.pattern_type.code())
                                .with_principal(sb(&b.entry.principal))
                                .with_host(sb(&b.entry.host))
                                .with_operation(b.entry.operation.code())
                                .with_permission_type(b.entry.permission.code())
                        })
                        .collect(),
                ),
                Some(Err(e)) => DeleteAclsFilterResult::default()
                    .with_error_code(e.error().code())
                    .with_error_message(Some(sb(e.message()))),
                None => DeleteAclsFilterResult::default()
                    .with_error_code(ResponseError::UnknownServerError.code()),
            })
            .collect();
        DeleteAclsResponse::default().with_filter_results(results)
    })
}

//! DescribeAcls (key 29): the ACL bindings a filter matches, grouped by resource
//! pattern (Kafka's `AclApis.handleDescribeAcls`, `DescribeAclsResponse.aclsResources`).
//! Answered from this shard's copy of the ACLs.

use kafka_protocol::messages::describe_acls_response::{AclDescription, DescribeAclsResource};
use kafka_protocol::messages::{DescribeAclsRequest, DescribeAclsResponse};

use super::acl_wire::{self, RawFilter, NOT_AUTHORIZED};
use super::{Ctx, Outcome, Versions};
use crate::error::ResponseError;
use crate::protocol::strings::sb;
use crate::security::acl::AclOperation;

pub const VERSIONS: Versions = Versions { min: 1, max: 3 };

/// CLUSTER_AUTHORIZATION_FAILED without DESCRIBE on the cluster; SECURITY_DISABLED with
/// `--authorizer` off; INVALID_REQUEST for an UNKNOWN (0) code. A filter with a code
/// Kafka does not know otherwise matches nothing.
pub async fn handle(ctx: &Ctx, request: DescribeAclsRequest) -> Outcome<DescribeAclsResponse> {
    let error = |error: ResponseError, message: &str| {
        Outcome::Ready(
            DescribeAclsResponse::default()
                .with_error_code(error.code())
                .with_error_message(Some(sb(message))),
        )
    };
    if !ctx.authorize_cluster(AclOperation::Describe) {
        return error(ResponseError::ClusterAuthorizationFailed, NOT_AUTHORIZED);
    }
    if ctx.shard.authorizer.is_none() {
        return error(ResponseError::SecurityDisabled, "No Authorizer is configured on the broker");
    }
    let r = &request;
    if acl_wire::has_unknown_code([
        r.resource_type_filter,
        r.pattern_type_filter,
        r.operation,
        r.permission_type,
    ]) {
        return error(ResponseError::InvalidRequest, "DescribeAclsRequest contains UNKNOWN elements");
    }
    let filter = acl_wire::filter(RawFilter {
        resource_type: r.resource_type_filter,
        name: r.resource_name_filter.as_ref(),
        pattern_type: r.pattern_type_filter,
        principal: r.principal_filter.as_ref(),
        host: r.host_filter.as_ref(),
        operation: r.operation,
        permission: r.permission_type,
    });
    let catalog = ctx.shard.catalog();
    // The set is ordered by pattern first, so a pattern's bindings are adjacent.
    let mut resources: Vec<DescribeAclsResource> = Vec::new();
    let mut last = None;
    for b in catalog.acls.iter().filter(|b| filter.matches(b)) {
        let description = AclDescription::default()
            .with_principal(sb(&b.entry.principal))
            .with_host(sb(&b.entry.host))
            .with_operation(b.entry.operation.code())
            .with_permission_type(b.entry.permission.code());
        match resources.last_mut() {
            Some(resource) if last == Some(&b.pattern) => resource.acls.push(description),
            _ => {
                resources.push(
                    DescribeAclsResource::default()
                        .with_resource_type(b.pattern.resource_type.code())
                        .with_resource_name(sb(&b.pattern.name))
                        .with_pattern_type(b.pattern.pattern_type.code())
                        .with_acls(vec![description]),
                );
                last = Some(&b.pattern);
            }
        }
    }
    Outcome::Ready(DescribeAclsResponse::default().with_resources(resources))
}

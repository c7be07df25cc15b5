//! The ACL APIs' wire fields to and from [`crate::security::acl`] values (shared by
//! CreateAcls, DescribeAcls and DeleteAcls).

use kafka_protocol::protocol::StrBytes;

use crate::security::acl::{
    AccessControlEntry, AccessControlEntryFilter, AclBinding, AclBindingFilter, AclOperation,
    PatternType, PermissionType, ResourcePattern, ResourcePatternFilter, ResourceType,
};

/// The message of SECURITY_DISABLED answers (Kafka's, without an authorizer).
pub const NO_AUTHORIZER: &str = "No Authorizer is configured.";

/// The message of CLUSTER_AUTHORIZATION_FAILED answers.
pub const NOT_AUTHORIZED: &str = "Request is not authorized.";

/// A filter's raw fields, as DescribeAcls and DeleteAcls carry them.
pub struct RawFilter<'a> {
    pub resource_type: i8,
    pub name: Option<&'a StrBytes>,
    pub pattern_type: i8,
    pub principal: Option<&'a StrBytes>,
    pub host: Option<&'a StrBytes>,
    pub operation: i8,
    pub permission: i8,
}

/// Whether any of a request's codes is Kafka's UNKNOWN (0): Kafka refuses such a
/// request as unparseable (it closes the connection); shardlog answers INVALID_REQUEST.
pub fn has_unknown_code(codes: [i8; 4]) -> bool {
    codes.contains(&0)
}

/// The filter of raw fields; a code Kafka does not know becomes UNKNOWN (its `fromCode`).
pub fn filter(raw: RawFilter<'_>) -> AclBindingFilter {
    AclBindingFilter {
        pattern: ResourcePatternFilter {
            resource_type: ResourceType::from_code(raw.resource_type)
                .unwrap_or(ResourceType::Unknown),
            name: raw.name.map(|s| s.to_string()),
            pattern_type: PatternType::from_code(raw.pattern_type).unwrap_or(PatternType::Unknown),
        },
        entry: AccessControlEntryFilter {
            principal: raw.principal.map(|s| s.to_string()),
            host: raw.host.map(|s| s.to_string()),
            operation: AclOperation::from_code(raw.operation).unwrap_or(AclOperation::Unknown),
            permission: PermissionType::from_code(raw.permission)
                .unwrap_or(PermissionType::Unknown),
        },
    }
}

/// A binding of raw CreateAcls fields (unknown codes become UNKNOWN, which
/// [`AclBinding::validate`] refuses).
pub fn binding(
    resource_type: i8,
    name: &StrBytes,
    pattern_type: i8,
    principal: &StrBytes,
    host: &StrBytes,
    operation: i8,
    permission: i8,
) -> AclBinding {
    AclBinding {
        pattern: ResourcePattern {
            resource_type: ResourceType::from_code(resource_type).unwrap_or(ResourceType::Unknown),
            name: name.to_string(),
            pattern_type: PatternType::from_code(pattern_type).unwrap_or(PatternType::Unknown),
        },
        entry: AccessControlEntry {
            principal: principal.to_string(),
            host: host.to_string(),
            operation: AclOperation::from_code(operation).unwrap_or(AclOperation::Unknown),
            permission: PermissionType::from_code(permission).unwrap_or(PermissionType::Unknown),
        },
    }
}

//! The ACL model (KIP-290 prefixed patterns included): resource patterns, access
//! control entries, their bindings and the filters DescribeAcls / DeleteAcls match
//! them with. Codes and matching rules are Kafka's (`org.apache.kafka.common.acl`,
//! `org.apache.kafka.common.resource`): the codes below are what the wire carries.
//!
//! Pure values, no I/O: the control shard keeps the bindings in the catalog
//! ([`crate::metadata::Catalog::acls`]) and every shard checks requests against its own
//! copy with [`authorizer::Authorizer`].

pub mod authorizer;

use serde::{Deserialize, Serialize};

pub use authorizer::Authorizer;

/// Generates a Kafka code enum: `Name = code` variants, `from_code` (`None` for an
/// unknown code) and `code`.
macro_rules! kafka_codes {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $code:literal),* $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(rename_all = "SCREAMING_SNAKE_CASE")]
        pub enum $name {
            $($(#[$vdoc])* $variant),*
        }

        impl $name {
            /// Every value, in code order.
            pub const ALL_VALUES: &'static [$name] = &[$($name::$variant),*];

            /// The value of a wire code; `None` for a code Kafka does not know
            /// (Kafka's `fromCode` gives UNKNOWN for those).
            pub fn from_code(code: i8) -> Option<$name> {
                match code {
                    $($code => Some($name::$variant),)*
                    _ => None,
                }
            }

            /// The wire code.
            pub fn code(self) -> i8 {
                match self {
                    $($name::$variant => $code),*
                }
            }
        }
    };
}

kafka_codes! {
    /// Kafka's `ResourceType`: what an ACL protects.
    ResourceType {
        Unknown = 0,
        /// Filters only: any resource type.
        Any = 1,
        Topic = 2,
        Group = 3,
        /// The one cluster resource, named [`CLUSTER_NAME`].
        Cluster = 4,
        TransactionalId = 5,
        DelegationToken = 6,
        User = 7,
    }
}

kafka_codes! {
    /// Kafka's `PatternType` (KIP-290): how a binding's resource name matches.
    PatternType {
        Unknown = 0,
        /// Filters only: any pattern type, names compared exactly.
        Any = 1,
        /// Filters only: every binding that would apply to the named resource (literal
        /// equal, literal `*`, prefixed that the name starts with).
        Match = 2,
        /// The name exactly, or `*` for every resource of the type.
        Literal = 3,
        /// Every resource whose name starts with the name.
        Prefixed = 4,
    }
}

kafka_codes! {
    /// Kafka's `AclOperation`.
    AclOperation {
        Unknown = 0,
        /// Filters only.
        Any = 1,
        /// Every operation.
        All = 2,
        Read = 3,
        Write = 4,
        Create = 5,
        Delete = 6,
        Alter = 7,
        Describe = 8,
        ClusterAction = 9,
        DescribeConfigs = 10,
        AlterConfigs = 11,
        IdempotentWrite = 12,
        CreateTokens = 13,
        DescribeTokens = 14,
        /// KIP-939 (Kafka 4.x): a transactional producer preparing a two-phase commit.
        TwoPhaseCommit = 15,
    }
}

kafka_codes! {
    /// Kafka's `AclPermissionType`.
    PermissionType {
        Unknown = 0,
        /// Filters only.
        Any = 1,
        Deny = 2,
        Allow = 3,
    }
}

/// The name of the one CLUSTER resource (Kafka's `kafka-cluster`).
pub const CLUSTER_NAME: &str = "kafka-cluster";

/// A literal resource name matching every resource of its type, and an ACL host
/// matching every host.
pub const WILDCARD: &str = "*";

/// The principal of an ACL that applies to every principal.
pub const WILDCARD_PRINCIPAL: &str = "User:*";

impl AclOperation {
    /// The operations Kafka reports as a resource's authorized operations (KIP-430,
    /// Kafka's `AclEntry.supportedOperations`); empty for ANY / UNKNOWN.
    pub fn supported_by(resource_type: ResourceType) -> &'static [AclOperation] {
        use AclOperation::*;
        match resource_type {
            ResourceType::Topic => {
                &[Read, Write, Create, Describe, Delete, Alter, DescribeConfigs, AlterConfigs]
            }
            ResourceType::Group => &[Read, Describe, Delete, DescribeConfigs, AlterConfigs],
            ResourceType::Cluster => &[
                Create,
                ClusterAction,
                DescribeConfigs,
                AlterConfigs,
                IdempotentWrite,
                Alter,
                Describe,
            ],
            ResourceType::TransactionalId => &[Describe, Write],
            ResourceType::DelegationToken => &[Describe],
            ResourceType::User => &[CreateTokens, DescribeTokens],
            ResourceType::Any | ResourceType::Unknown => &[],
        }
    }
}

/// A resource pattern of a binding: a concrete type, a non-empty name and LITERAL or
/// PREFIXED (Kafka's `ResourcePattern`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ResourcePattern {
    pub resource_type: ResourceType,
    pub name: String,
    pub pattern_type: PatternType,
}

/// An access control entry: who (`type:name`, or `User:*`), from which host (an IP
/// address as text, or `*`), may or may not do what (Kafka's `AccessControlEntry`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct AccessControlEntry {
    pub principal: String,
    pub host: String,
    pub operation: AclOperation,
    pub permission: PermissionType,
}

/// One ACL: a resource pattern and an entry (Kafka's `AclBinding`). Bindings are a
/// set: creating one that exists changes nothing.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct AclBinding {
    pub pattern: ResourcePattern,
    pub entry: AccessControlEntry,
}

impl AclBinding {
    /// Kafka's validation of a binding to create (`AclControlManager.validateNewAcl` and
    /// the broker's checks in `AclApis.handleCreateAcls`): a concrete resource type,
    /// LITERAL or PREFIXED, a concrete operation and permission, a non-empty name (the
    /// CLUSTER's being `kafka-cluster`), a `type:name` principal. The error message of
    /// an INVALID_REQUEST.
    pub fn validate(&self) -> Result<(), String> {
        let p = &self.pattern;
        let e = &self.entry;
        if matches!(p.resource_type, ResourceType::Any | ResourceType::Unknown) {
            return Err(format!("Invalid resourceType {:?}", p.resource_type));
        }
        if !matches!(p.pattern_type, PatternType::Literal | PatternType::Prefixed) {
            return Err(format!("Invalid patternType {:?}", p.pattern_type));
        }
        if matches!(e.operation, AclOperation::Any | AclOperation::Unknown) {
            return Err(format!("Invalid operation {:?}", e.operation));
        }
        if !matches!(e.permission, PermissionType::Allow | PermissionType::Deny) {
            return Err(format!("Invalid permissionType {:?}", e.permission));
        }
        if p.resource_type == ResourceType::Cluster && p.name != CLUSTER_NAME {
            return Err(format!("The only valid name for the CLUSTER resource is {CLUSTER_NAME}"));
        }
        if p.name.is_empty() {
            return Err("Invalid empty resource name".to_string());
        }
        if super::KafkaPrincipal::parse(&e.principal).is_none() {
            return Err(format!(
                "Could not parse principal from `{}` (expected principalType:principalName)",
                e.principal
            ));
        }
        Ok(())
    }
}

/// Matches resource patterns (Kafka's `ResourcePatternFilter`): `name` `None` matches
/// any name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourcePatternFilter {
    pub resource_type: ResourceType,
    pub name: Option<String>,
    pub pattern_type: PatternType,
}

/// Matches access control entries (Kafka's `AccessControlEntryFilter`): `None` (null
/// on the wire) matches any principal or host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessControlEntryFilter {
    pub principal: Option<String>,
    pub host: Option<String>,
    pub operation: AclOperation,
    pub permission: PermissionType,
}

/// A filter over bindings, as DescribeAcls and DeleteAcls carry (Kafka's
/// `AclBindingFilter`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclBindingFilter {
    pub pattern: ResourcePatternFilter,
    pub entry: AccessControlEntryFilter,
}

impl ResourcePatternFilter {
    /// Whether `pattern` passes: the type equal or ANY; the pattern type equal, ANY or
    /// MATCH; then the name: exact for ANY or an equal pattern type; for MATCH, a
    /// LITERAL pattern of the name or of `*`, or a PREFIXED pattern the name starts
    /// with.
    pub fn matches(&self, pattern: &ResourcePattern) -> bool {
        if self.resource_type != ResourceType::Any && self.resource_type != pattern.resource_type {
            return false;
        }
        if !matches!(self.pattern_type, PatternType::Any | PatternType::Match)
            && self.pattern_type != pattern.pattern_type
        {
            return false;
        }
        let Some(name) = &self.name else { return true };
        if self.pattern_type == PatternType::Any || self.pattern_type == pattern.pattern_type {
            return *name == pattern.name;
        }
        match pattern.pattern_type {
            PatternType::Literal => *name == pattern.name || pattern.name == WILDCARD,
            PatternType::Prefixed => name.starts_with(&pattern.name),
            _ => false,
        }
    }

    /// Kafka's `isUnknown`: a type or pattern type it does not know.
    pub fn is_unknown(&self) -> bool {
        self.resource_type == ResourceType::Unknown || self.pattern_type == PatternType::Unknown
    }
}

impl AccessControlEntryFilter {
    /// Whether `entry` passes: principal and host equal unless `None`, operation and
    /// permission equal unless ANY.
    pub fn matches(&self, entry: &AccessControlEntry) -> bool {
        self.principal.as_ref().is_none_or(|p| *p == entry.principal)
            && self.host.as_ref().is_none_or(|h| *h == entry.host)
            && (self.operation == AclOperation::Any || self.operation == entry.operation)
            && (self.permission == PermissionType::Any || self.permission == entry.permission)
    }

    /// Kafka's `isUnknown`: an operation or permission it does not know.
    pub fn is_unknown(&self) -> bool {
        self.operation == AclOperation::Unknown || self.permission == PermissionType::Unknown
    }
}

impl AclBindingFilter {
    /// Whether `binding` passes both halves.
    pub fn matches(&self, binding: &AclBinding) -> bool {
        self.pattern.matches(&binding.pattern) && self.entry.matches(&binding.entry)
    }

    /// Kafka's `AclControlManager.validateFilter` for DeleteAcls: INVALID_REQUEST with
    /// this message for a filter with an unknown element.
    pub fn validate(&self) -> Result<(), String> {
        if self.pattern.is_unknown() {
            return Err("Unknown patternFilter.".to_string());
        }
        if self.entry.is_unknown() {
            return Err("Unknown entryFilter.".to_string());
        }
        Ok(())
    }

    /// The filter that matches every binding.
    pub fn any() -> AclBindingFilter {
        AclBindingFilter {
            pattern: ResourcePatternFilter {
                resource_type: ResourceType::Any,
                name: None,
                pattern_type: PatternType::Any,
            },
            entry: AccessControlEntryFilter {
                principal: None,
                host: None,
                operation: AclOperation::Any,
                permission: PermissionType::Any,
            },
        }
    }
}

#[cfg(test)]
mod tests;

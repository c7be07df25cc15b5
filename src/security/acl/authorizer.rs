//! The authorization decision, Kafka's `StandardAuthorizer` (KIP-801) over a set of
//! bindings: pure, so every shard decides from its own copy of the catalog's ACLs with
//! no cross-core call.
//!
//! For a principal `P` from host `H` doing `op` on resource `(type, name)`:
//! 1. a super user (`--super-users`) is allowed everything;
//! 2. the bindings that apply to the resource are the LITERAL ones of `name` or of
//!    `*` and the PREFIXED ones `name` starts with; among them, those whose principal
//!    is `P` or `User:*`, whose host is `H` or `*`, and whose operation is `op`, ALL,
//!    or (ALLOW only) one implying it: READ, WRITE, DELETE and ALTER imply DESCRIBE;
//!    ALTER_CONFIGS implies DESCRIBE_CONFIGS;
//! 3. a matching DENY denies; else a matching ALLOW allows;
//! 4. with no binding applying to the resource at all (whatever its principal or
//!    operation), `--allow-everyone-if-no-acl-found` decides (default: deny).

use std::collections::BTreeSet;

use super::{
    AccessControlEntry, AclBinding, AclOperation, PatternType, PermissionType, ResourcePattern,
    ResourceType, WILDCARD, WILDCARD_PRINCIPAL,
};
use crate::security::KafkaPrincipal;

/// The ACLs in force: a set ordered by resource type, then name, so the bindings of a
/// type are one range.
pub type AclSet = BTreeSet<AclBinding>;

/// The authorizer's settings (`--super-users`, `--allow-everyone-if-no-acl-found`).
/// Built once per shard from the flags; the ACLs come with each call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Authorizer {
    /// Principals allowed everything, as `type:name` text (Kafka's `super.users`).
    pub super_users: BTreeSet<String>,
    /// The decision when no ACL applies to a resource (Kafka's
    /// `allow.everyone.if.no.acl.found`).
    pub allow_if_no_acl: bool,
}

/// Who asks: the connection's principal and its client address (IP as text).
#[derive(Debug, Clone, Copy)]
pub struct Requester<'a> {
    pub principal: &'a KafkaPrincipal,
    pub host: &'a str,
}

impl Authorizer {
    /// Parses Kafka's `super.users` syntax: principals separated by `;` (blanks around
    /// each trimmed, empty items skipped). Errors name the item that is not
    /// `type:name`.
    pub fn parse_super_users(text: &str) -> Result<BTreeSet<String>, String> {
        let mut users = BTreeSet::new();
        for item in text.split(';').map(str::trim).filter(|s| !s.is_empty()) {
            let principal = KafkaPrincipal::parse(item)
                .ok_or_else(|| format!("super user `{item}` is not principalType:principalName"))?;
            users.insert(principal.to_string());
        }
        Ok(users)
    }

    /// Whether `who` may do `op` on the resource `resource_type`/`name` (a literal
    /// resource, as every request names one).
    pub fn authorize(
        &self,
        acls: &AclSet,
        who: Requester<'_>,
        op: AclOperation,
        resource_type: ResourceType,
        name: &str,
    ) -> bool {
        let principal = who.principal.to_string();
        if self.super_users.contains(&principal) {
            return true;
        }
        let mut applies = false;
        let mut allowed = false;
        for acl in of_type(acls, resource_type) {
            if !pattern_applies(&acl.pattern, name) {
                continue;
            }
            applies = true;
            match entry_decides(&acl.entry, &principal, who.host, op) {
                Some(PermissionType::Deny) => return false,
                Some(_) => allowed = true,
                None => {}
            }
        }
        if applies {
            allowed
        } else {
            self.allow_if_no_acl
        }
    }

    /// Whether `who` may do `op` on at least one resource of `resource_type` (Kafka's
    /// `Authorizer.authorizeByResourceType`, KIP-679: an idempotent producer without
    /// IDEMPOTENT_WRITE needs WRITE on some topic): allowed on a resource named
    /// `hardcode` (super users, `*`, the default), or by a wildcard ALLOW, or by an
    /// ALLOW pattern that no DENY of the same literal name or of a prefix of it
    /// overrides. A DENY on `*` denies.
    pub fn authorize_by_resource_type(
        &self,
        acls: &AclSet,
        who: Requester<'_>,
        op: AclOperation,
        resource_type: ResourceType,
    ) -> bool {
        if self.authorize(acls, who, op, resource_type, "hardcode") {
            return true;
        }
        let principal = who.principal.to_string();
        let mut deny_literal = BTreeSet::new();
        let mut deny_prefixed = BTreeSet::new();
        let mut allow = Vec::new();
        for acl in of_type(acls, resource_type) {
            let e = &acl.entry;
            if e.host != WILDCARD && e.host != who.host {
                continue;
            }
            if e.principal != principal && e.principal != WILDCARD_PRINCIPAL {
                continue;
            }
            if e.operation != op && e.operation != AclOperation::All {
                continue;
            }
            let p = &acl.pattern;
            match (e.permission, p.pattern_type) {
                (PermissionType::Deny, PatternType::Literal) if p.name == WILDCARD => return false,
                (PermissionType::Deny, PatternType::Literal) => {
                    deny_literal.insert(p.name.as_str());
                }
                (PermissionType::Deny, PatternType::Prefixed) => {
                    deny_prefixed.insert(p.name.as_str());
                }
                (PermissionType::Allow, PatternType::Literal) if p.name == WILDCARD => return true,
                (PermissionType::Allow, _) => allow.push(p),
                _ => {}
            }
        }
        allow.iter().any(|p| {
            if p.pattern_type == PatternType::Literal && deny_literal.contains(p.name.as_str()) {
                return false;
            }
            !p.name
                .char_indices()
                .map(|(i, c)| &p.name[..i + c.len_utf8()])
                .any(|prefix| deny_prefixed.contains(prefix))
        })
    }

    /// The operations `who` may do on a resource as KIP-430's bit set (bit `code` set
    /// for each allowed operation among [`AclOperation::supported_by`] the type), as
    /// Metadata, DescribeGroups and DescribeCluster report them.
    pub fn authorized_operations(
        &self,
        acls: &AclSet,
        who: Requester<'_>,
        resource_type: ResourceType,
        name: &str,
    ) -> i32 {
        AclOperation::supported_by(resource_type)
            .iter()
            .filter(|op| self.authorize(acls, who, **op, resource_type, name))
            .fold(0, |bits, op| bits | (1 << op.code()))
    }
}

/// Every operation a resource type supports as a KIP-430 bit set: what Kafka reports
/// when no authorizer is configured.
pub fn all_operations(resource_type: ResourceType) -> i32 {
    AclOperation::supported_by(resource_type).iter().fold(0, |bits, op| bits | (1 << op.code()))
}

/// The bindings of one resource type (a range of the ordered set).
fn of_type(acls: &AclSet, resource_type: ResourceType) -> impl Iterator<Item = &AclBinding> {
    let first = AclBinding {
        pattern: ResourcePattern {
            resource_type,
            name: String::new(),
            pattern_type: PatternType::Unknown,
        },
        entry: AccessControlEntry {
            principal: String::new(),
            host: String::new(),
            operation: AclOperation::Unknown,
            permission: PermissionType::Unknown,
        },
    };
    acls.range(first..).take_while(move |b| b.pattern.resource_type == resource_type)
}

/// Whether a binding's pattern applies to the resource `name`.
fn pattern_applies(pattern: &ResourcePattern, name: &str) -> bool {
    match pattern.pattern_type {
        PatternType::Literal => pattern.name == name || pattern.name == WILDCARD,
        PatternType::Prefixed => name.starts_with(&pattern.name),
        _ => false,
    }
}

/// What an entry says about `principal` (as `type:name`) from `host` doing `op`:
/// its permission if it matches, `None` if it does not (Kafka's
/// `StandardAuthorizerData.findResult`).
fn entry_decides(
    entry: &AccessControlEntry,
    principal: &str,
    host: &str,
    op: AclOperation,
) -> Option<PermissionType> {
    if entry.principal != principal && entry.principal != WILDCARD_PRINCIPAL {
        return None;
    }
    if entry.host != WILDCARD && entry.host != host {
        return None;
    }
    let op_matches = entry.operation == AclOperation::All
        || entry.operation == op
        || (entry.permission == PermissionType::Allow && implies(entry.operation, op));
    op_matches.then_some(entry.permission)
}

/// Whether an ALLOW of `granted` also allows `wanted`: READ, WRITE, DELETE and ALTER
/// imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS.
fn implies(granted: AclOperation, wanted: AclOperation) -> bool {
    use AclOperation::*;
    match wanted {
        Describe => matches!(granted, Read | Write | Delete | Alter),
        DescribeConfigs => granted == AlterConfigs,
        _ => false,
    }
}

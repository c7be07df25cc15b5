//! Decisions and filter matches, each the value Kafka's `StandardAuthorizer` and
//! `AclBindingFilter` give for the same input.

use super::authorizer::{all_operations, AclSet, Requester};
use super::*;
use crate::security::KafkaPrincipal;

fn acl(
    rt: ResourceType,
    name: &str,
    pt: PatternType,
    principal: &str,
    host: &str,
    op: AclOperation,
    perm: PermissionType,
) -> AclBinding {
    AclBinding {
        pattern: ResourcePattern { resource_type: rt, name: name.into(), pattern_type: pt },
        entry: AccessControlEntry {
            principal: principal.into(),
            host: host.into(),
            operation: op,
            permission: perm,
        },
    }
}

fn allow_topic(name: &str, pt: PatternType, principal: &str, op: AclOperation) -> AclBinding {
    acl(ResourceType::Topic, name, pt, principal, "*", op, PermissionType::Allow)
}

fn deny_topic(name: &str, pt: PatternType, principal: &str, op: AclOperation) -> AclBinding {
    acl(ResourceType::Topic, name, pt, principal, "*", op, PermissionType::Deny)
}

fn set(bindings: &[AclBinding]) -> AclSet {
    bindings.iter().cloned().collect()
}

const ALICE: &str = "User:alice";

fn can(auth: &Authorizer, acls: &AclSet, who: &str, op: AclOperation, topic: &str) -> bool {
    let principal = KafkaPrincipal::parse(who).unwrap();
    let req = Requester { principal: &principal, host: "10.0.0.1" };
    auth.authorize(acls, req, op, ResourceType::Topic, topic)
}

use AclOperation::*;
use PatternType::{Literal, Prefixed};

#[test]
fn no_acls_deny_by_default_and_allow_with_allow_everyone() {
    let acls = AclSet::new();
    assert!(!can(&Authorizer::default(), &acls, ALICE, Read, "t"));
    let open = Authorizer { allow_if_no_acl: true, ..Default::default() };
    assert!(can(&open, &acls, ALICE, Read, "t"));
}

#[test]
fn allow_everyone_applies_only_where_no_acl_matches_the_resource() {
    let open = Authorizer { allow_if_no_acl: true, ..Default::default() };
    // An ACL for bob on `t` means alice gets no default on `t`, but still on `u`.
    let acls = set(&[allow_topic("t", Literal, "User:bob", Read)]);
    assert!(!can(&open, &acls, ALICE, Read, "t"));
    assert!(can(&open, &acls, ALICE, Read, "u"));
    // A prefixed ACL covers every name it starts.
    let acls = set(&[allow_topic("t", Prefixed, "User:bob", Read)]);
    assert!(!can(&open, &acls, ALICE, Read, "tx"));
    assert!(can(&open, &acls, ALICE, Read, "u"));
    // An ACL on another resource type does not count.
    let group = acl(ResourceType::Group, "t", Literal, ALICE, "*", Read, PermissionType::Deny);
    assert!(can(&open, &set(&[group]), ALICE, Read, "t"));
}

#[test]
fn literal_prefixed_and_wildcard_patterns() {
    let auth = Authorizer::default();
    let acls = set(&[allow_topic("ok-", Prefixed, ALICE, Write)]);
    assert!(can(&auth, &acls, ALICE, Write, "ok-x"));
    assert!(can(&auth, &acls, ALICE, Write, "ok-"));
    assert!(!can(&auth, &acls, ALICE, Write, "ok"));
    assert!(!can(&auth, &acls, ALICE, Write, "no-x"));
    let acls = set(&[allow_topic("ok-", Literal, ALICE, Write)]);
    assert!(!can(&auth, &acls, ALICE, Write, "ok-x"));
    assert!(can(&auth, &acls, ALICE, Write, "ok-"));
    let acls = set(&[allow_topic("*", Literal, ALICE, Write)]);
    assert!(can(&auth, &acls, ALICE, Write, "anything"));
    // `*` is only a wildcard as a LITERAL name: PREFIXED `*` covers names starting with '*'.
    let acls = set(&[allow_topic("*", Prefixed, ALICE, Write)]);
    assert!(!can(&auth, &acls, ALICE, Write, "anything"));
}

#[test]
fn principal_and_host_must_match_or_be_wildcards() {
    let auth = Authorizer::default();
    let acls = set(&[allow_topic("t", Literal, "User:*", Read)]);
    assert!(can(&auth, &acls, ALICE, Read, "t"));
    assert!(can(&auth, &acls, "User:ANONYMOUS", Read, "t"));
    // Only `User:*` is a wildcard; another type's `*` is a name.
    let acls = set(&[allow_topic("t", Literal, "Group:*", Read)]);
    assert!(!can(&auth, &acls, ALICE, Read, "t"));
    let acls = set(&[allow_topic("t", Literal, "User:bob", Read)]);
    assert!(!can(&auth, &acls, ALICE, Read, "t"));
    let here =
        acl(ResourceType::Topic, "t", Literal, ALICE, "10.0.0.1", Read, PermissionType::Allow);
    let there =
        acl(ResourceType::Topic, "t", Literal, ALICE, "10.0.0.2", Read, PermissionType::Allow);
    assert!(can(&auth, &set(&[here]), ALICE, Read, "t"));
    assert!(!can(&auth, &set(&[there]), ALICE, Read, "t"));
}

#[test]
fn deny_wins_over_allow_wherever_it_comes_from() {
    let auth = Authorizer::default();
    let acls = set(&[
        allow_topic("*", Literal, ALICE, All),
        deny_topic("secret-", Prefixed, "User:*", Write),
    ]);
    assert!(can(&auth, &acls, ALICE, Write, "public"));
    assert!(!can(&auth, &acls, ALICE, Write, "secret-1"));
    assert!(can(&auth, &acls, ALICE, Read, "secret-1"));
    let acls = set(&[allow_topic("t", Literal, ALICE, Read), deny_topic("*", Literal, ALICE, All)]);
    assert!(!can(&auth, &acls, ALICE, Read, "t"));
    assert!(!can(&auth, &acls, ALICE, Describe, "t"));
}

#[test]
fn implied_operations_are_allow_only() {
    let auth = Authorizer::default();
    for op in [Read, Write, Delete, Alter] {
        let acls = set(&[allow_topic("t", Literal, ALICE, op)]);
        assert!(can(&auth, &acls, ALICE, Describe, "t"), "{op:?} implies DESCRIBE");
        assert!(!can(&auth, &acls, ALICE, DescribeConfigs, "t"));
    }
    for op in [Create, AlterConfigs, DescribeConfigs] {
        let acls = set(&[allow_topic("t", Literal, ALICE, op)]);
        assert!(!can(&auth, &acls, ALICE, Describe, "t"), "{op:?}");
    }
    let acls = set(&[allow_topic("t", Literal, ALICE, AlterConfigs)]);
    assert!(can(&auth, &acls, ALICE, DescribeConfigs, "t"));
    assert!(!can(&auth, &acls, ALICE, Alter, "t"));
    let acls = set(&[allow_topic("t", Literal, ALICE, Write)]);
    assert!(!can(&auth, &acls, ALICE, Read, "t"));
    // DENY READ does not deny DESCRIBE (it only denies what it names).
    let acls = set(&[allow_topic("t", Literal, ALICE, All), deny_topic("t", Literal, ALICE, Read)]);
    assert!(can(&auth, &acls, ALICE, Describe, "t"));
    assert!(!can(&auth, &acls, ALICE, Read, "t"));
    assert!(can(&auth, &acls, ALICE, Write, "t"));
}

#[test]
fn super_users_are_allowed_everything_even_against_a_deny() {
    let auth = Authorizer {
        super_users: Authorizer::parse_super_users(" User:admin ; User:ops;;").unwrap(),
        ..Default::default()
    };
    assert_eq!(auth.super_users.iter().collect::<Vec<_>>(), ["User:admin", "User:ops"]);
    let acls = set(&[deny_topic("*", Literal, "User:*", All)]);
    assert!(can(&auth, &acls, "User:admin", Write, "t"));
    assert!(can(&auth, &acls, "User:ops", Delete, "t"));
    assert!(!can(&auth, &acls, ALICE, Describe, "t"));
    assert!(Authorizer::parse_super_users("admin").is_err());
}

#[test]
fn authorized_operations_are_kip430_bit_sets() {
    let auth = Authorizer::default();
    let p = KafkaPrincipal::user("alice");
    let who = Requester { principal: &p, host: "h" };
    let acls = set(&[allow_topic("t", Literal, ALICE, Write)]);
    // WRITE (4) and the DESCRIBE (8) it implies.
    assert_eq!(
        auth.authorized_operations(&acls, who, ResourceType::Topic, "t"),
        (1 << 4) | (1 << 8)
    );
    assert_eq!(auth.authorized_operations(&acls, who, ResourceType::Topic, "u"), 0);
    // Every topic operation: READ..ALTER_CONFIGS without CLUSTER_ACTION, IDEMPOTENT_WRITE.
    assert_eq!(all_operations(ResourceType::Topic), 0b1101_1111_1000);
    assert_eq!(
        all_operations(ResourceType::Group),
        (1 << 3) | (1 << 6) | (1 << 8) | (1 << 10) | (1 << 11)
    );
    assert_eq!(all_operations(ResourceType::Cluster), 0b1_1111_1010_0000);
}

#[test]
fn authorize_by_resource_type_follows_kafkas_default() {
    let auth = Authorizer::default();
    let p = KafkaPrincipal::user("alice");
    let who = Requester { principal: &p, host: "h" };
    let by_type =
        |acls: &AclSet| auth.authorize_by_resource_type(acls, who, Write, ResourceType::Topic);
    assert!(!by_type(&AclSet::new()));
    assert!(by_type(&set(&[allow_topic("a", Literal, ALICE, Write)])));
    assert!(by_type(&set(&[allow_topic("a", Prefixed, "User:*", All)])));
    assert!(!by_type(&set(&[allow_topic("a", Literal, ALICE, Read)])));
    // A DENY of the same literal, or of a prefix, overrides; another name does not.
    assert!(!by_type(&set(&[
        allow_topic("ab", Literal, ALICE, Write),
        deny_topic("ab", Literal, ALICE, Write)
    ])));
    assert!(!by_type(&set(&[
        allow_topic("ab", Literal, ALICE, Write),
        deny_topic("a", Prefixed, ALICE, Write)
    ])));
    assert!(by_type(&set(&[
        allow_topic("ab", Literal, ALICE, Write),
        deny_topic("b", Prefixed, ALICE, Write)
    ])));
    // A DENY of `*` denies even with a wildcard ALLOW.
    assert!(!by_type(&set(&[
        allow_topic("*", Literal, ALICE, Write),
        deny_topic("*", Literal, ALICE, Write)
    ])));
    let open = Authorizer { allow_if_no_acl: true, ..Default::default() };
    assert!(open.authorize_by_resource_type(&AclSet::new(), who, Write, ResourceType::Topic));
}

fn filter(
    rt: ResourceType,
    name: Option<&str>,
    pt: PatternType,
    principal: Option<&str>,
    op: AclOperation,
    perm: PermissionType,
) -> AclBindingFilter {
    AclBindingFilter {
        pattern: ResourcePatternFilter {
            resource_type: rt,
            name: name.map(String::from),
            pattern_type: pt,
        },
        entry: AccessControlEntryFilter {
            principal: principal.map(String::from),
            host: None,
            operation: op,
            permission: perm,
        },
    }
}

#[test]
fn filters_match_as_kafkas_binding_filters() {
    let lit = allow_topic("foo", Literal, ALICE, Read);
    let star = allow_topic("*", Literal, ALICE, Read);
    let pre = allow_topic("fo", Prefixed, ALICE, Read);
    let any = PermissionType::Any;
    let f = |name, pt| filter(ResourceType::Topic, name, pt, None, AclOperation::Any, any);
    // ANY: names compared exactly, any pattern type.
    let matched = |flt: &AclBindingFilter| {
        [&lit, &star, &pre].iter().map(|b| flt.matches(b)).collect::<Vec<_>>()
    };
    assert_eq!(matched(&f(Some("foo"), PatternType::Any)), [true, false, false]);
    assert_eq!(matched(&f(Some("fo"), PatternType::Any)), [false, false, true]);
    // MATCH: everything that applies to the resource `foo`.
    assert_eq!(matched(&f(Some("foo"), PatternType::Match)), [true, true, true]);
    assert_eq!(matched(&f(Some("bar"), PatternType::Match)), [false, true, false]);
    // LITERAL / PREFIXED: that pattern type, exact name.
    assert_eq!(matched(&f(Some("foo"), Literal)), [true, false, false]);
    assert_eq!(matched(&f(Some("foo"), Prefixed)), [false, false, false]);
    assert_eq!(matched(&f(None, Prefixed)), [false, false, true]);
    assert_eq!(matched(&f(None, PatternType::Any)), [true, true, true]);
    // Entry halves.
    let by_principal =
        filter(ResourceType::Any, None, PatternType::Any, Some("User:bob"), AclOperation::Any, any);
    assert!(!by_principal.matches(&lit));
    let by_op = filter(ResourceType::Any, None, PatternType::Any, None, Write, any);
    assert!(!by_op.matches(&lit));
    let by_perm =
        filter(ResourceType::Topic, None, PatternType::Any, None, Read, PermissionType::Allow);
    assert!(by_perm.matches(&lit));
    let groups = filter(ResourceType::Group, None, PatternType::Any, None, AclOperation::Any, any);
    assert!(!groups.matches(&lit));
    assert!(AclBindingFilter::any().matches(&pre));
}

#[test]
fn filter_and_binding_validation_errors() {
    let any = PermissionType::Any;
    let unknown =
        filter(ResourceType::Unknown, None, PatternType::Any, None, AclOperation::Any, any);
    assert_eq!(unknown.validate(), Err("Unknown patternFilter.".to_string()));
    let unknown_op =
        filter(ResourceType::Any, None, PatternType::Any, None, AclOperation::Unknown, any);
    assert_eq!(unknown_op.validate(), Err("Unknown entryFilter.".to_string()));
    assert_eq!(AclBindingFilter::any().validate(), Ok(()));

    let good = allow_topic("t", Literal, ALICE, Read);
    assert_eq!(good.validate(), Ok(()));
    let mut b = good.clone();
    b.pattern.pattern_type = PatternType::Match;
    assert_eq!(b.validate(), Err("Invalid patternType Match".to_string()));
    let mut b = good.clone();
    b.entry.operation = AclOperation::Any;
    assert_eq!(b.validate(), Err("Invalid operation Any".to_string()));
    let mut b = good.clone();
    b.pattern.name = String::new();
    assert_eq!(b.validate(), Err("Invalid empty resource name".to_string()));
    let mut b = good.clone();
    b.entry.principal = "alice".into();
    assert!(b.validate().is_err());
    let cluster =
        acl(ResourceType::Cluster, "c", Literal, ALICE, "*", Alter, PermissionType::Allow);
    assert_eq!(
        cluster.validate(),
        Err("The only valid name for the CLUSTER resource is kafka-cluster".to_string())
    );
}

#[test]
fn codes_round_trip() {
    for op in AclOperation::ALL_VALUES {
        assert_eq!(AclOperation::from_code(op.code()), Some(*op));
    }
    assert_eq!(ResourceType::from_code(7), Some(ResourceType::User));
    assert_eq!(ResourceType::from_code(8), None);
    assert_eq!(PatternType::from_code(4), Some(PatternType::Prefixed));
    assert_eq!(PermissionType::from_code(3), Some(PermissionType::Allow));
}

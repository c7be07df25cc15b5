//! The consumer group protocol of KIP-848 (`group.protocol=consumer`):
//! ConsumerGroupHeartbeat and ConsumerGroupDescribe with server-side assignment.
//! Kafka source: `GroupMetadataManager.consumerGroupHeartbeat` / `consumerGroupLeave` /
//! `consumerGroupDescribe`, `ConsumerGroup`, `ConsumerGroupMember`,
//! `CurrentAssignmentBuilder`.
//!
//! Model: a group has a *group epoch*, bumped whenever membership, subscriptions or the
//! metadata of subscribed topics change. Each bump recomputes the *target assignment*
//! (here eagerly, so the assignment epoch follows the group epoch). Every member
//! reconciles towards its target on its own heartbeats: partitions it must give up are
//! first removed from its assignment (it stays at its old member epoch, state
//! UNREVOKED_PARTITIONS) until it reports (`topic_partitions`) that it no longer owns
//! them; partitions still owned by another member are withheld (UNRELEASED_PARTITIONS)
//! until that member released them. A member reaches the group's epoch once nothing is
//! left to revoke.
//!
//! A consumer group is the [`GroupKind::Consumer`](super::group::GroupKind) variant of a
//! coordinator group: committed offsets, retention and deletion are shared with classic
//! groups, which see it as protocol type "consumer", Empty without members and Stable
//! with.
//!
//! Layout:
//! - `member.rs`: a member, its reconciliation state and the special member epochs;
//! - `group.rs`: the group (epochs, members, target assignment, partition owners);
//! - `reconcile.rs`: a member's next assignment (Kafka's `CurrentAssignmentBuilder`);
//! - `validate.rs`: request and member-epoch checks;
//! - `regex.rs`: topic regexes of `SubscribedTopicRegex` subscriptions (RE2 syntax);
//! - `heartbeat.rs`: ConsumerGroupHeartbeat (join, heartbeat), `leave.rs`: leaving;
//! - `describe.rs`: ConsumerGroupDescribe and the classic DescribeGroups view;
//! - `timers.rs`: session and revocation timeouts;
//! - `topics.rs`: the topic catalog the assignors work from;
//! - `record.rs`: the group as a [`GroupRecord::ConsumerGroup`](super::GroupRecord).

mod describe;
mod group;
mod heartbeat;
mod leave;
mod member;
mod reconcile;
mod record;
pub(crate) mod regex;
mod timers;
mod topics;
mod validate;

pub(crate) use group::ConsumerGroup;
pub(crate) use topics::TopicCatalog;
pub(crate) use validate::validate_member_epoch;

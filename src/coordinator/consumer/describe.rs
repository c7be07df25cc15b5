//! Describing consumer groups: ConsumerGroupDescribe (Kafka's
//! `GroupMetadataManager.consumerGroupDescribe`) and the classic DescribeGroups shape of
//! a consumer group.

use std::collections::HashMap;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::consumer_group_describe_response as cgd;
use kafka_protocol::messages::consumer_protocol_assignment::TopicPartition;
use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::{
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, ConsumerProtocolAssignment,
    ConsumerProtocolSubscription, ResponseKind, TopicName,
};
use kafka_protocol::protocol::Encodable;
use uuid::Uuid;

use super::super::assignor::Assignment;
use super::super::describe::GROUP_AUTHORIZED_OPERATIONS;
use super::super::group::{Group, CONSUMER_PROTOCOL_TYPE};
use super::super::{GroupCoordinator, Output, RequestToken};
use super::group::ConsumerGroup;
use super::topics::TopicCatalog;
use crate::error::ResponseError;
use crate::protocol::strings::sb;

/// topic id -> topic name, from the catalog.
fn topic_names(catalog: &TopicCatalog) -> HashMap<Uuid, &str> {
    catalog.iter().map(|(n, (id, _))| (*id, n.as_str())).collect()
}

/// `body` encoded as Kafka's consumer protocol embeds it: an i16 version (0), then the
/// body in version 0.
fn consumer_protocol_bytes(body: &impl Encodable) -> Bytes {
    let mut b = BytesMut::new();
    b.put_i16(0);
    // Version 0 of both consumer protocol messages encodes any value.
    let _ = body.encode(&mut b, 0);
    b.freeze()
}

impl GroupCoordinator {
    /// ConsumerGroupDescribe, versions 0-1. Kafka source:
    /// `GroupMetadataManager.consumerGroupDescribe`.
    ///
    /// Per group: state (Empty, Assigning, Reconciling, Stable), group and assignment
    /// epochs, the assignor in use, and each member with its epoch, client, subscription,
    /// current and target assignment (topic id and name; topics no longer in the catalog
    /// are left out). Errors per group: COORDINATOR_LOAD_IN_PROGRESS, GROUP_ID_NOT_FOUND
    /// (unknown, or a classic group), INVALID_GROUP_ID (empty id).
    pub fn consumer_group_describe(
        &mut self,
        token: RequestToken,
        version: i16,
        req: ConsumerGroupDescribeRequest,
        _now_ms: i64,
    ) -> Vec<Output> {
        let names = topic_names(&self.topics);
        let describe = |a: &Assignment| -> cgd::Assignment {
            let mut r = cgd::Assignment::default();
            r.topic_partitions = a
                .iter()
                .filter_map(|(t, ps)| {
                    let name = names.get(t)?;
                    let mut tp = cgd::TopicPartitions::default();
                    tp.topic_id = *t;
                    tp.topic_name = TopicName(sb(name));
                    tp.partitions = ps.iter().copied().collect();
                    Some(tp)
                })
                .collect();
            r
        };
        let mut r = ConsumerGroupDescribeResponse::default();
        for id in &req.group_ids {
            let mut d = cgd::DescribedGroup::default();
            d.group_id = id.clone();
            let group = self.groups.get(id.0.as_str());
            if let Some(e) = self.validate_group_status(&id.0, false) {
                d.error_code = e.code();
            } else if let Some(cg) = group.and_then(Group::as_consumer) {
                d.group_state = sb(cg.state_name());
                d.group_epoch = cg.group_epoch;
                d.assignment_epoch = cg.assignment_epoch;
                d.assignor_name = sb(&cg.assignor());
                if req.include_authorized_operations {
                    d.authorized_operations = GROUP_AUTHORIZED_OPERATIONS;
                }
                let empty = Assignment::new();
                d.members = cg
                    .members
                    .values()
                    .map(|m| {
                        let mut dm = cgd::Member::default();
                        dm.member_id = sb(&m.member_id);
                        dm.instance_id = m.instance_id.as_deref().map(sb);
                        dm.rack_id = m.rack_id.as_deref().map(sb);
                        dm.member_epoch = m.member_epoch;
                        dm.client_id = sb(&m.client_id);
                        dm.client_host = sb(&m.client_host);
                        dm.subscribed_topic_names =
                            m.subscribed_topic_names.iter().map(|t| TopicName(sb(t))).collect();
                        dm.subscribed_topic_regex =
                            m.subscribed_topic_regex.as_ref().map(|r| sb(r.as_str()));
                        dm.assignment = describe(&m.assigned);
                        dm.target_assignment =
                            describe(cg.target.get(&m.member_id).unwrap_or(&empty));
                        if version >= 1 {
                            dm.member_type = 1;
                        }
                        dm
                    })
                    .collect();
            } else {
                d.error_code = ResponseError::GroupIdNotFound.code();
                d.error_message = Some(sb(&if group.is_some() {
                    format!("Group {} is not a consumer group.", id.0)
                } else {
                    format!("Group {} not found.", id.0)
                }));
            }
            r.groups.push(d);
        }
        vec![Output::Respond { token, response: ResponseKind::ConsumerGroupDescribe(r) }]
    }

    /// KIP-848 state of a consumer group: (state name, group epoch, assignment epoch);
    /// `None` for unknown and classic groups.
    pub fn consumer_group_state(&self, group_id: &str) -> Option<(&'static str, i32, i32)> {
        let cg = self.groups.get(group_id)?.as_consumer()?;
        Some((cg.state_name(), cg.group_epoch, cg.assignment_epoch))
    }
}

impl ConsumerGroup {
    /// DescribeGroups for a consumer group, in the classic shape: the KIP-848 state,
    /// protocol type "consumer", the assignor as protocol, and per member a
    /// ConsumerProtocolSubscription (v0) as metadata and a ConsumerProtocolAssignment
    /// (v0) with its current partitions (topics missing from `catalog` left out), so
    /// that classic admin tools can show it.
    pub fn describe_classic(&self, catalog: &TopicCatalog, d: &mut DescribedGroup) {
        let names = topic_names(catalog);
        d.group_state = sb(self.state_name());
        d.protocol_type = sb(CONSUMER_PROTOCOL_TYPE);
        d.protocol_data = sb(&self.assignor());
        d.members = self
            .members
            .values()
            .map(|m| {
                // The topics the member gets partitions of: its names and its regex's
                // matches among the subscribed topics that exist.
                let mut topics: Vec<&String> = m.subscribed_topic_names.iter().collect();
                topics.extend(
                    self.subscription_metadata
                        .keys()
                        .filter(|t| m.subscribed_topic_regex.as_ref().is_some_and(|r| r.matches(t)))
                        .filter(|t| !m.subscribed_topic_names.contains(t)),
                );
                topics.sort();
                let subscription = ConsumerProtocolSubscription::default()
                    .with_topics(topics.into_iter().map(|t| sb(t)).collect());
                let partitions = m.assigned.iter().filter_map(|(t, ps)| {
                    Some(
                        TopicPartition::default()
                            .with_topic(TopicName(sb(names.get(t)?)))
                            .with_partitions(ps.iter().copied().collect()),
                    )
                });
                let assignment = ConsumerProtocolAssignment::default()
                    .with_assigned_partitions(partitions.collect());
                let mut dm = DescribedGroupMember::default();
                dm.member_id = sb(&m.member_id);
                dm.group_instance_id = m.instance_id.as_deref().map(sb);
                dm.client_id = sb(&m.client_id);
                dm.client_host = sb(&m.client_host);
                dm.member_metadata = consumer_protocol_bytes(&subscription);
                dm.member_assignment = consumer_protocol_bytes(&assignment);
                dm
            })
            .collect();
    }
}

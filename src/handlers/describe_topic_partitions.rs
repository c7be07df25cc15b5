//! DescribeTopicPartitions (key 75, KIP-966): topics and their partitions, paged by a
//! partition limit and a cursor; Kafka 4.x admin clients use it for `describeTopics`
//! (`kafka-topics --describe`). As Kafka's `DescribeTopicPartitionsRequestHandler` and
//! `KRaftMetadataCache.getTopicMetadataForDescribeTopicResponse` answer:
//!
//! - No topics named: every topic, else the named ones (each once); in both cases only
//!   those at or after the cursor's topic, sorted by name. A cursor whose topic is not
//!   among the named ones: INVALID_REQUEST for every named topic.
//! - The cursor's topic starts at the cursor's partition, the others at 0; at most
//!   `response_partition_limit` partitions (clamped to 1..=2000) are returned. Where the limit
//!   cuts a topic, `next_cursor` names the first partition left out; where it falls
//!   between topics, `next_cursor` is the next topic, partition 0.
//! - A named topic that does not exist: UNKNOWN_TOPIC_OR_PARTITION
//!   (INVALID_TOPIC_EXCEPTION for an illegal name), with the zero topic id and no
//!   partitions; it does not count against the limit. Unknown topics are not listed
//!   when every topic was asked for.
//! - Each partition: this node leads it with epoch [`PARTITION_LEADER_EPOCH`], is its
//!   only replica and in its ISR; no eligible leader replicas (KIP-966 lists empty).

use std::collections::BTreeSet;

use kafka_protocol::messages::describe_topic_partitions_response::{
    Cursor, DescribeTopicPartitionsResponsePartition, DescribeTopicPartitionsResponseTopic,
};
use kafka_protocol::messages::{
    BrokerId, DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse,
};

use super::{Ctx, Outcome, Versions};
use crate::error::ResponseError;
use crate::metadata::{is_internal, Catalog, PARTITION_LEADER_EPOCH};
use crate::protocol::strings::topic_name;
use crate::protocol::topic_name::validate_topic_name;
use crate::security::acl::{AclOperation, ResourceType};

pub const VERSIONS: Versions = Versions { min: 0, max: 0 };

/// Kafka's `max.request.partition.size.limit` default: the most partitions one
/// response holds.
const MAX_PARTITIONS: i32 = 2000;

/// Describes the topics asked for (see the module documentation).
pub async fn handle(
    ctx: &Ctx,
    request: DescribeTopicPartitionsRequest,
) -> Outcome<DescribeTopicPartitionsResponse> {
    let catalog = ctx.shard.catalog();
    let access = Access {
        describe: &|name| ctx.authorize(AclOperation::Describe, ResourceType::Topic, name),
        operations: &|name| ctx.authorized_operations(ResourceType::Topic, name),
    };
    let config = &ctx.shard.config;
    let node_of = |shard| crate::net::shard_nodes::node_of(config, shard);
    Outcome::Ready(describe(&catalog, &node_of, &request, &access))
}

/// What the connection may see (Kafka's `DescribeTopicPartitionsRequestHandler`): a
/// topic it may not DESCRIBE is left out of an all-topics answer and, when named, gets
/// TOPIC_AUTHORIZATION_FAILED with a zero topic id, after the authorized topics, whether
/// it exists or not.
struct Access<'a> {
    /// Whether the connection may DESCRIBE the topic.
    describe: &'a dyn Fn(&str) -> bool,
    /// The KIP-430 bits of what it may do to the topic.
    operations: &'a dyn Fn(&str) -> i32,
}

/// The answer from `catalog`; `node_of` gives the node id of the shard owning a
/// partition (its leader and only replica).
fn describe(
    catalog: &Catalog,
    node_of: &dyn Fn(usize) -> i32,
    request: &DescribeTopicPartitionsRequest,
    access: &Access<'_>,
) -> DescribeTopicPartitionsResponse {
    let mut response = DescribeTopicPartitionsResponse::default();
    let all = request.topics.is_empty();
    let cursor_topic = request.cursor.as_ref().map_or("", |c| c.topic_name.as_str());
    let names: BTreeSet<&str> = if all {
        catalog.topics.keys().map(String::as_str).collect()
    } else {
        request.topics.iter().map(|t| t.name.as_str()).collect()
    };
    let names: Vec<&str> = names.into_iter().filter(|n| *n >= cursor_topic).collect();
    if !all && request.cursor.is_some() && !names.contains(&cursor_topic) {
        response.topics = request
            .topics
            .iter()
            .map(|t| {
                DescribeTopicPartitionsResponseTopic::default()
                    .with_error_code(ResponseError::InvalidRequest.code())
                    .with_name(Some(t.name.clone()))
            })
            .collect();
        return response;
    }
    let (names, denied): (Vec<&str>, Vec<&str>) =
        names.into_iter().partition(|n| (access.describe)(n));
    // Kafka clamps the limit to [1, 2000]: a limit of 0 would page forever.
    let mut remaining = request.response_partition_limit.clamp(1, MAX_PARTITIONS);
    for name in names {
        if remaining <= 0 {
            if remaining == 0 {
                response.next_cursor =
                    Some(Cursor::default().with_topic_name(topic_name(name)).with_partition_index(0));
            }
            break;
        }
        let Some(meta) = catalog.topic(name) else {
            if !all {
                let error = match validate_topic_name(name) {
                    Ok(()) => ResponseError::UnknownTopicOrPartition,
                    Err(_) => ResponseError::InvalidTopicException,
                };
                response.topics.push(
                    DescribeTopicPartitionsResponseTopic::default()
                        .with_error_code(error.code())
                        .with_name(Some(topic_name(name)))
                        .with_is_internal(is_internal(name)),
                );
            }
            continue;
        };
        let count = meta.partition_shards.len() as i32;
        let start = match &request.cursor {
            Some(c) if c.topic_name.as_str() == name => c.partition_index.max(0),
            _ => 0,
        };
        let end = count.min(start.saturating_add(remaining));
        let partitions: Vec<_> = (start..end)
            .map(|p| {
                let node_id = node_of(meta.partition_shards[p as usize]);
                DescribeTopicPartitionsResponsePartition::default()
                    .with_partition_index(p)
                    .with_leader_id(BrokerId(node_id))
                    .with_leader_epoch(PARTITION_LEADER_EPOCH)
                    .with_replica_nodes(vec![BrokerId(node_id)])
                    .with_isr_nodes(vec![BrokerId(node_id)])
                    .with_eligible_leader_replicas(Some(Vec::new()))
                    .with_last_known_elr(Some(Vec::new()))
            })
            .collect();
        remaining -= partitions.len() as i32;
        response.topics.push(
            DescribeTopicPartitionsResponseTopic::default()
                .with_name(Some(topic_name(name)))
                .with_topic_id(meta.id)
                .with_is_internal(is_internal(name))
                .with_partitions(partitions)
                .with_topic_authorized_operations((access.operations)(name)),
        );
        if end < count {
            response.next_cursor =
                Some(Cursor::default().with_topic_name(topic_name(name)).with_partition_index(end));
            break;
        }
    }
    if !all {
        response.topics.extend(denied.into_iter().map(|name| {
            DescribeTopicPartitionsResponseTopic::default()
                .with_error_code(ResponseError::TopicAuthorizationFailed.code())
                .with_name(Some(topic_name(name)))
        }));
    }
    response
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::describe_topic_partitions_request::{Cursor as At, TopicRequest};

    use super::*;

    /// The operations a topic allows without an authorizer (Kafka's `AuthHelper`: READ,
    /// WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS as bits).
    const TOPIC_OPERATIONS: i32 = (1 << 3)
        | (1 << 4)
        | (1 << 5)
        | (1 << 6)
        | (1 << 7)
        | (1 << 8)
        | (1 << 10)
        | (1 << 11);

    /// No authorizer: every topic visible, every operation allowed.
    fn everything() -> Access<'static> {
        Access { describe: &|_| true, operations: &|_| TOPIC_OPERATIONS }
    }

    fn catalog(topics: &[(&str, usize)]) -> Catalog {
        let mut c = Catalog::default();
        for (name, partitions) in topics {
            c.create_topic(name, *partitions as i32, Default::default(), 1).unwrap();
        }
        c
    }

    fn request(topics: &[&str], limit: i32, cursor: Option<(&str, i32)>) -> DescribeTopicPartitionsRequest {
        DescribeTopicPartitionsRequest::default()
            .with_topics(topics.iter().map(|t| TopicRequest::default().with_name(topic_name(t))).collect())
            .with_response_partition_limit(limit)
            .with_cursor(cursor.map(|(t, p)| At::default().with_topic_name(topic_name(t)).with_partition_index(p)))
    }

    /// (name, error, partition indexes) of one topic.
    type TopicSummary = (String, i16, Vec<i32>);

    /// Each topic's summary, and the next cursor.
    fn summary(r: &DescribeTopicPartitionsResponse) -> (Vec<TopicSummary>, Option<(String, i32)>) {
        let topics = r
            .topics
            .iter()
            .map(|t| {
                let name = t.name.as_ref().map(|n| n.to_string()).unwrap_or_default();
                (name, t.error_code, t.partitions.iter().map(|p| p.partition_index).collect())
            })
            .collect();
        let cursor = r.next_cursor.as_ref().map(|c| (c.topic_name.to_string(), c.partition_index));
        (topics, cursor)
    }

    fn t(name: &str, error: i16, partitions: std::ops::Range<i32>) -> TopicSummary {
        (name.to_string(), error, partitions.collect())
    }

    #[test]
    fn every_topic_sorted_and_paged_by_the_partition_limit() {
        let c = catalog(&[("b", 3), ("a", 2), ("c", 1)]);
        let r = describe(&c, &|_| 1, &request(&[], 2000, None), &everything());
        assert_eq!(summary(&r), (vec![t("a", 0, 0..2), t("b", 0, 0..3), t("c", 0, 0..1)], None));
        // A limit of 3 cuts b after its first partition; the cursor continues there.
        let r = describe(&c, &|_| 1, &request(&[], 3, None), &everything());
        assert_eq!(summary(&r), (vec![t("a", 0, 0..2), t("b", 0, 0..1)], Some(("b".into(), 1))));
        let r = describe(&c, &|_| 1, &request(&[], 3, Some(("b", 1))), &everything());
        assert_eq!(summary(&r), (vec![t("b", 0, 1..3), t("c", 0, 0..1)], None));
        // A limit that ends exactly at a topic's end: the cursor is the next topic.
        let r = describe(&c, &|_| 1, &request(&[], 2, None), &everything());
        assert_eq!(summary(&r), (vec![t("a", 0, 0..2)], Some(("b".into(), 0))));
        let p = &r.topics[0].partitions[1];
        assert_eq!((p.leader_id, p.leader_epoch, p.replica_nodes.clone()), (BrokerId(1), 0, vec![BrokerId(1)]));
        assert_eq!(r.topics[0].topic_id, c.topic("a").unwrap().id);
    }

    #[test]
    fn each_partition_is_led_by_its_shards_node() {
        let mut c = Catalog::default();
        c.create_topic("a", 4, Default::default(), 2).unwrap();
        let shards = c.topic("a").unwrap().partition_shards.clone();
        assert_eq!(shards, vec![0, 1, 0, 1]);
        let r = describe(&c, &|shard| 10 + shard as i32, &request(&["a"], 2000, None), &everything());
        let leaders: Vec<(i32, Vec<BrokerId>, Vec<BrokerId>)> = r.topics[0]
            .partitions
            .iter()
            .map(|p| (p.leader_id.0, p.replica_nodes.clone(), p.isr_nodes.clone()))
            .collect();
        let node = |n| (n, vec![BrokerId(n)], vec![BrokerId(n)]);
        assert_eq!(leaders, vec![node(10), node(11), node(10), node(11)]);
    }

    #[test]
    fn named_topics_unknown_ones_and_a_cursor_outside_them() {
        let c = catalog(&[("b", 3), ("a", 2)]);
        let unknown = ResponseError::UnknownTopicOrPartition.code();
        let invalid = ResponseError::InvalidTopicException.code();
        let r = describe(&c, &|_| 1, &request(&["b", "zz", "a", "b", "bad name!"], 2000, None), &everything());
        let expect = vec![t("a", 0, 0..2), t("b", 0, 0..3), t("bad name!", invalid, 0..0), t("zz", unknown, 0..0)];
        assert_eq!(summary(&r), (expect, None));
        assert!(r.topics[3].topic_id.is_nil());
        let r = describe(&c, &|_| 1, &request(&["a"], 2000, Some(("b", 0))), &everything());
        assert_eq!(summary(&r), (vec![t("a", ResponseError::InvalidRequest.code(), 0..0)], None));
        // A zero or negative limit counts as 1 (else a client would page forever).
        for limit in [0, -5] {
            let r = describe(&c, &|_| 1, &request(&["a", "b"], limit, None), &everything());
            assert_eq!(summary(&r), (vec![t("a", 0, 0..1)], Some(("a".into(), 1))));
        }
    }

    #[test]
    fn topics_the_connection_may_not_describe_are_hidden_or_refused() {
        let c = catalog(&[("b", 1), ("a", 1), ("c", 1)]);
        let only_a = Access { describe: &|n| n == "a", operations: &|_| 1 << 8 };
        let r = describe(&c, &|_| 1, &request(&[], 2000, None), &only_a);
        assert_eq!(summary(&r), (vec![t("a", 0, 0..1)], None));
        assert_eq!(r.topics[0].topic_authorized_operations, 1 << 8);
        // Named: refused after the authorized ones, existing or not, with no topic id.
        let denied = ResponseError::TopicAuthorizationFailed.code();
        let r = describe(&c, &|_| 1, &request(&["c", "a", "zz"], 2000, None), &only_a);
        assert_eq!(summary(&r), (vec![t("a", 0, 0..1), t("c", denied, 0..0), t("zz", denied, 0..0)], None));
        assert!(r.topics[1].topic_id.is_nil());
    }
}

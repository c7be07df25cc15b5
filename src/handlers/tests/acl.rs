//! ACLs through the handlers, for principals other than `User:ANONYMOUS`: a broker with
//! `--authorizer --super-users User:admin`, ACLs created by the admin, then what alice
//! (who has some) and bob (who has none) are answered.

use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use super::ask_as;
use crate::error::ResponseError;
use crate::shard::testing::with_shard_flags;

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_string())
}

/// ALLOW `principal` `op` on a topic pattern (3 = LITERAL, 4 = PREFIXED).
fn allow_topic(name: &str, pattern: i8, principal: &str, op: i8) -> AclCreation {
    AclCreation::default()
        .with_resource_type(2)
        .with_resource_name(s(name))
        .with_resource_pattern_type(pattern)
        .with_principal(s(principal))
        .with_host(s("*"))
        .with_operation(op)
        .with_permission_type(3)
}

fn one_record_batch() -> bytes::Bytes {
    use kafka_protocol::records::{
        Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
    };
    let record = Record {
        transactional: false,
        control: false,
        delete_horizon: false,
        partition_leader_epoch: 0,
        producer_id: -1,
        producer_epoch: -1,
        timestamp_type: TimestampType::Creation,
        offset: 0,
        sequence: -1,
        timestamp: 1,
        key: None,
        value: Some(bytes::Bytes::from_static(b"v")),
        headers: Default::default(),
    };
    let mut buf = bytes::BytesMut::new();
    let options = RecordEncodeOptions { version: 2, compression: Compression::None };
    RecordBatchEncoder::encode(&mut buf, [record].iter(), &options).expect("encodes");
    buf.freeze()
}

#[test]
fn principals_get_exactly_what_their_acls_grant() {
    with_shard_flags(&["--authorizer", "--super-users", "User:admin"], |shard| async move {
        // The admin (a super user) creates topics and ACLs.
        let topics = ["a-t", "b-t", "c-t"]
            .map(|n| {
                CreatableTopic::default()
                    .with_name(TopicName(s(n)))
                    .with_num_partitions(1)
                    .with_replication_factor(1)
            })
            .to_vec();
        let created = ask_as(
            &shard,
            "admin",
            ApiKey::CreateTopics,
            7,
            RequestKind::CreateTopics(CreateTopicsRequest::default().with_topics(topics)),
        )
        .await;
        let ResponseKind::CreateTopics(created) = created else { panic!() };
        assert_eq!(created.topics.iter().map(|t| t.error_code).collect::<Vec<_>>(), [0, 0, 0]);
        let creations = vec![
            allow_topic("a-", 4, "User:alice", 4), // WRITE on prefix a-
            allow_topic("b-t", 3, "User:*", 8),    // DESCRIBE on b-t for everyone
        ];
        let r = ask_as(
            &shard,
            "admin",
            ApiKey::CreateAcls,
            3,
            RequestKind::CreateAcls(CreateAclsRequest::default().with_creations(creations)),
        )
        .await;
        let ResponseKind::CreateAcls(r) = r else { panic!() };
        assert_eq!(r.results.iter().map(|c| c.error_code).collect::<Vec<_>>(), [0, 0]);
        assert_eq!(shard.catalog().acls.len(), 2);

        // Metadata (all topics) lists what each may DESCRIBE, with KIP-430 bits.
        let all = || {
            RequestKind::Metadata(
                MetadataRequest::default()
                    .with_topics(None)
                    .with_include_topic_authorized_operations(true)
                    .with_include_cluster_authorized_operations(true),
            )
        };
        let ResponseKind::Metadata(m) = ask_as(&shard, "alice", ApiKey::Metadata, 10, all()).await
        else {
            panic!()
        };
        let listed: Vec<_> = m
            .topics
            .iter()
            .map(|t| (t.name.as_ref().unwrap().to_string(), t.topic_authorized_operations))
            .collect();
        assert_eq!(listed, [("a-t".to_string(), (1 << 4) | (1 << 8)), ("b-t".to_string(), 1 << 8)]);
        assert_eq!(m.cluster_authorized_operations, 0);
        let ResponseKind::Metadata(m) = ask_as(&shard, "bob", ApiKey::Metadata, 10, all()).await
        else {
            panic!()
        };
        let listed: Vec<_> =
            m.topics.iter().map(|t| t.name.as_ref().unwrap().to_string()).collect();
        assert_eq!(listed, ["b-t"]);
        // Naming c-t: TOPIC_AUTHORIZATION_FAILED with a zero id, whether it exists or not.
        let named = |name: &str| {
            RequestKind::Metadata(
                MetadataRequest::default()
                    .with_topics(Some(vec![metadata_request::MetadataRequestTopic::default()
                        .with_name(Some(TopicName(s(name))))])),
            )
        };
        for name in ["c-t", "nope"] {
            let ResponseKind::Metadata(m) =
                ask_as(&shard, "alice", ApiKey::Metadata, 10, named(name)).await
            else {
                panic!()
            };
            assert_eq!(m.topics.len(), 1);
            assert_eq!(m.topics[0].error_code, ResponseError::TopicAuthorizationFailed.code());
            assert!(m.topics[0].topic_id.is_nil());
        }
        assert!(shard.catalog().topic("nope").is_none(), "not auto-created without CREATE");

        // Produce: alice may write a-t, not b-t.
        let produce = |topic: &str| {
            RequestKind::Produce(
                ProduceRequest::default().with_acks(-1).with_timeout_ms(5000).with_topic_data(
                    vec![TopicProduceData::default()
                        .with_name(TopicName(s(topic)))
                        .with_partition_data(vec![PartitionProduceData::default()
                            .with_index(0)
                            .with_records(Some(one_record_batch()))])],
                ),
            )
        };
        for (topic, expected) in
            [("a-t", 0), ("b-t", ResponseError::TopicAuthorizationFailed.code())]
        {
            let ResponseKind::Produce(p) =
                ask_as(&shard, "alice", ApiKey::Produce, 9, produce(topic)).await
            else {
                panic!()
            };
            assert_eq!(p.responses[0].partition_responses[0].error_code, expected, "{topic}");
        }

        // InitProducerId: alice writes some topic (KIP-679); bob writes none; a
        // transactional id needs WRITE on it.
        let init = |id: Option<&str>| {
            RequestKind::InitProducerId(
                InitProducerIdRequest::default()
                    .with_transactional_id(id.map(|i| TransactionalId(s(i))))
                    .with_transaction_timeout_ms(60000)
                    .with_producer_id(ProducerId(-1))
                    .with_producer_epoch(-1),
            )
        };
        let cases = [
            ("alice", None, 0),
            ("bob", None, ResponseError::ClusterAuthorizationFailed.code()),
            ("alice", Some("tx"), ResponseError::TransactionalIdAuthorizationFailed.code()),
        ];
        for (user, id, expected) in cases {
            let ResponseKind::InitProducerId(r) =
                ask_as(&shard, user, ApiKey::InitProducerId, 4, init(id)).await
            else {
                panic!()
            };
            assert_eq!(r.error_code, expected, "{user} {id:?}");
        }

        // Groups: FindCoordinator and JoinGroup need DESCRIBE / READ on the group.
        let find = RequestKind::FindCoordinator(
            FindCoordinatorRequest::default().with_key_type(0).with_coordinator_keys(vec![s("g")]),
        );
        let ResponseKind::FindCoordinator(f) =
            ask_as(&shard, "alice", ApiKey::FindCoordinator, 4, find).await
        else {
            panic!()
        };
        assert_eq!(f.coordinators[0].error_code, ResponseError::GroupAuthorizationFailed.code());

        // The ACL APIs: alice has no cluster ACL; the admin describes and deletes.
        let r = ask_as(
            &shard,
            "alice",
            ApiKey::CreateAcls,
            3,
            RequestKind::CreateAcls(
                CreateAclsRequest::default().with_creations(vec![allow_topic(
                    "x",
                    3,
                    "User:alice",
                    2,
                )]),
            ),
        )
        .await;
        let ResponseKind::CreateAcls(r) = r else { panic!() };
        assert_eq!(r.results[0].error_code, ResponseError::ClusterAuthorizationFailed.code());
        let describe = RequestKind::DescribeAcls(
            DescribeAclsRequest::default()
                .with_resource_type_filter(2)
                .with_resource_name_filter(Some(s("a-t")))
                .with_pattern_type_filter(2) // MATCH
                .with_principal_filter(None)
                .with_host_filter(None)
                .with_operation(1)
                .with_permission_type(1),
        );
        let ResponseKind::DescribeAcls(d) =
            ask_as(&shard, "admin", ApiKey::DescribeAcls, 3, describe).await
        else {
            panic!()
        };
        assert_eq!(d.error_code, 0);
        assert_eq!(d.resources.len(), 1);
        assert_eq!(d.resources[0].resource_name.as_str(), "a-");
        assert_eq!(d.resources[0].pattern_type, 4);
        assert_eq!(d.resources[0].acls[0].principal.as_str(), "User:alice");
        let filter = |rt: i8| {
            DeleteAclsFilter::default()
                .with_resource_type_filter(rt)
                .with_resource_name_filter(None)
                .with_principal_filter(None)
                .with_host_filter(None)
                .with_pattern_type_filter(1)
                .with_operation(1)
                .with_permission_type(1)
        };
        let delete = RequestKind::DeleteAcls(
            DeleteAclsRequest::default().with_filters(vec![filter(2), filter(2)]),
        );
        let ResponseKind::DeleteAcls(d) =
            ask_as(&shard, "admin", ApiKey::DeleteAcls, 3, delete).await
        else {
            panic!()
        };
        // Both filters report both bindings (matched against the ACLs before the request).
        assert_eq!(
            d.filter_results.iter().map(|f| f.matching_acls.len()).collect::<Vec<_>>(),
            [2, 2]
        );
        assert!(shard.catalog().acls.is_empty());
        // A filter with an UNKNOWN (0) code: INVALID_REQUEST.
        let delete =
            RequestKind::DeleteAcls(DeleteAclsRequest::default().with_filters(vec![filter(0)]));
        let ResponseKind::DeleteAcls(d) =
            ask_as(&shard, "admin", ApiKey::DeleteAcls, 3, delete).await
        else {
            panic!()
        };
        assert_eq!(d.filter_results[0].error_code, ResponseError::InvalidRequest.code());
    });
}

/// The cluster-level admin APIs and the per-topic checks of OffsetForLeaderEpoch,
/// DescribeTopicPartitions and ConsumerGroupHeartbeat: bob (no ACLs) is
/// refused exactly as Kafka refuses him; the admin (a super user) is answered.
#[test]
fn admin_apis_and_topic_checks_refuse_a_user_without_acls() {
    use kafka_protocol::messages::alter_partition_reassignments_request::{
        ReassignablePartition, ReassignableTopic,
    };
    use kafka_protocol::messages::describe_topic_partitions_request::TopicRequest;
    use kafka_protocol::messages::elect_leaders_request::TopicPartitions;
    use kafka_protocol::messages::offset_for_leader_epoch_request::{
        OffsetForLeaderPartition, OffsetForLeaderTopic,
    };
    with_shard_flags(&["--authorizer", "--super-users", "User:admin"], |shard| async move {
        let topic = CreatableTopic::default()
            .with_name(TopicName(s("t")))
            .with_num_partitions(1)
            .with_replication_factor(1);
        let create = CreateTopicsRequest::default().with_topics(vec![topic]);
        ask_as(&shard, "admin", ApiKey::CreateTopics, 7, RequestKind::CreateTopics(create)).await;
        let cluster_denied = ResponseError::ClusterAuthorizationFailed.code();
        let topic_denied = ResponseError::TopicAuthorizationFailed.code();

        for (user, want) in [("bob", cluster_denied), ("admin", 0)] {
            let r = ask_as(
                &shard,
                user,
                ApiKey::DescribeLogDirs,
                4,
                RequestKind::DescribeLogDirs(Default::default()),
            )
            .await;
            let ResponseKind::DescribeLogDirs(r) = r else { panic!() };
            assert_eq!((r.error_code, r.results.len()), (want, usize::from(want == 0)), "{user}");

            let r = ask_as(
                &shard,
                user,
                ApiKey::DescribeQuorum,
                2,
                RequestKind::DescribeQuorum(Default::default()),
            )
            .await;
            let ResponseKind::DescribeQuorum(r) = r else { panic!() };
            // The admin's empty request names no partition of the metadata topic.
            assert_eq!(r.error_code == cluster_denied, want != 0, "{user}");

            let list = ListPartitionReassignmentsRequest::default();
            let r = ask_as(
                &shard,
                user,
                ApiKey::ListPartitionReassignments,
                0,
                RequestKind::ListPartitionReassignments(list),
            )
            .await;
            let ResponseKind::ListPartitionReassignments(r) = r else { panic!() };
            assert_eq!(r.error_code, want, "{user}");

            let partition = ReassignablePartition::default()
                .with_partition_index(0)
                .with_replicas(Some(vec![BrokerId(shard.config.node_id)]));
            let alter = AlterPartitionReassignmentsRequest::default().with_topics(vec![
                ReassignableTopic::default()
                    .with_name(TopicName(s("t")))
                    .with_partitions(vec![partition]),
            ]);
            let r = ask_as(
                &shard,
                user,
                ApiKey::AlterPartitionReassignments,
                0,
                RequestKind::AlterPartitionReassignments(alter),
            )
            .await;
            let ResponseKind::AlterPartitionReassignments(r) = r else { panic!() };
            assert_eq!(
                (r.error_code, r.responses[0].partitions[0].error_code),
                (want, want),
                "{user}"
            );

            let elect = ElectLeadersRequest::default().with_topic_partitions(Some(vec![
                TopicPartitions::default().with_topic(TopicName(s("t"))).with_partitions(vec![0]),
            ]));
            let r = ask_as(&shard, user, ApiKey::ElectLeaders, 2, RequestKind::ElectLeaders(elect))
                .await;
            let ResponseKind::ElectLeaders(r) = r else { panic!() };
            let partition_error = r.replica_election_results[0].partition_result[0].error_code;
            let not_needed = ResponseError::ElectionNotNeeded.code();
            assert_eq!(
                (r.error_code, partition_error),
                (want, if want == 0 { not_needed } else { want }),
                "{user}"
            );
        }

        let want_topic = |user: &str| if user == "bob" { topic_denied } else { 0 };
        for user in ["bob", "admin"] {
            let epoch = OffsetForLeaderEpochRequest::default().with_topics(vec![
                OffsetForLeaderTopic::default().with_topic(TopicName(s("t"))).with_partitions(
                    vec![OffsetForLeaderPartition::default()
                        .with_partition(0)
                        .with_leader_epoch(0)],
                ),
            ]);
            let r = ask_as(
                &shard,
                user,
                ApiKey::OffsetForLeaderEpoch,
                4,
                RequestKind::OffsetForLeaderEpoch(epoch),
            )
            .await;
            let ResponseKind::OffsetForLeaderEpoch(r) = r else { panic!() };
            let p = &r.topics[0].partitions[0];
            let want_offset = if user == "bob" { -1 } else { 0 };
            assert_eq!((p.error_code, p.end_offset), (want_topic(user), want_offset), "{user}");

            let describe = DescribeTopicPartitionsRequest::default()
                .with_topics(vec![TopicRequest::default().with_name(TopicName(s("t")))])
                .with_response_partition_limit(10);
            let r = ask_as(
                &shard,
                user,
                ApiKey::DescribeTopicPartitions,
                0,
                RequestKind::DescribeTopicPartitions(describe),
            )
            .await;
            let ResponseKind::DescribeTopicPartitions(r) = r else { panic!() };
            assert_eq!(
                (r.topics[0].error_code, r.topics[0].partitions.len()),
                (want_topic(user), usize::from(user == "admin"))
            );
        }

        // bob may read group g, but not see t.
        let read_group = AclCreation::default()
            .with_resource_type(3)
            .with_resource_name(s("g"))
            .with_resource_pattern_type(3)
            .with_principal(s("User:bob"))
            .with_host(s("*"))
            .with_operation(3)
            .with_permission_type(3);
        let acls = CreateAclsRequest::default().with_creations(vec![read_group]);
        ask_as(&shard, "admin", ApiKey::CreateAcls, 3, RequestKind::CreateAcls(acls)).await;
        let heartbeat = ConsumerGroupHeartbeatRequest::default()
            .with_group_id(GroupId(s("g")))
            .with_member_epoch(0)
            .with_rebalance_timeout_ms(30_000)
            .with_subscribed_topic_names(Some(vec![TopicName(s("t"))]))
            .with_topic_partitions(Some(Vec::new()));
        let r = ask_as(
            &shard,
            "bob",
            ApiKey::ConsumerGroupHeartbeat,
            0,
            RequestKind::ConsumerGroupHeartbeat(heartbeat),
        )
        .await;
        let ResponseKind::ConsumerGroupHeartbeat(r) = r else { panic!() };
        assert_eq!(r.error_code, topic_denied);
    });
}

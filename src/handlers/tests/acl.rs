//! ACLs through the handlers, for principals other than `User:ANONYMOUS`: a broker with
//! `--authorizer --super-users User:admin`, ACLs created by the admin, then what alice
//! (who has some) and bob (who has none) are answered.

use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use super::{dispatch, frame, Ctx, Dispatched, Outcome};
use crate::error::ResponseError;
use crate::security::KafkaPrincipal;
use crate::shard::testing::with_shard_flags;
use crate::shard::Shard;
use std::rc::Rc;

fn as_user(shard: &Rc<Shard>, name: &str, version: i16) -> Ctx {
    Ctx {
        shard: shard.clone(),
        api_version: version,
        client_id: "acl-test".into(),
        client_host: "10.1.2.3".into(),
        principal: Rc::new(KafkaPrincipal::user(name)),
        listener: Rc::new(shard.config.listeners().expect("default listener").remove(0)),
    }
}

async fn ask(
    shard: &Rc<Shard>,
    user: &str,
    api: ApiKey,
    v: i16,
    body: RequestKind,
) -> ResponseKind {
    match dispatch(&as_user(shard, user, v), frame(api, v, 5, &body)).await {
        Ok(Dispatched { outcome: Outcome::Ready(r), .. }) => r,
        Ok(Dispatched { outcome: Outcome::Later(later) | Outcome::Serial(later), .. }) => {
            later.await.expect("an answer")
        }
        _ => panic!("{api:?} v{v}: not answered"),
    }
}

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
        let created = ask(
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
        let r = ask(
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
        let ResponseKind::Metadata(m) = ask(&shard, "alice", ApiKey::Metadata, 10, all()).await
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
        let ResponseKind::Metadata(m) = ask(&shard, "bob", ApiKey::Metadata, 10, all()).await
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
                ask(&shard, "alice", ApiKey::Metadata, 10, named(name)).await
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
                ask(&shard, "alice", ApiKey::Produce, 9, produce(topic)).await
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
                ask(&shard, user, ApiKey::InitProducerId, 4, init(id)).await
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
            ask(&shard, "alice", ApiKey::FindCoordinator, 4, find).await
        else {
            panic!()
        };
        assert_eq!(f.coordinators[0].error_code, ResponseError::GroupAuthorizationFailed.code());

        // The ACL APIs: alice has no cluster ACL; the admin describes and deletes.
        let r = ask(
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
            ask(&shard, "admin", ApiKey::DescribeAcls, 3, describe).await
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
        let ResponseKind::DeleteAcls(d) = ask(&shard, "admin", ApiKey::DeleteAcls, 3, delete).await
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
        let ResponseKind::DeleteAcls(d) = ask(&shard, "admin", ApiKey::DeleteAcls, 3, delete).await
        else {
            panic!()
        };
        assert_eq!(d.filter_results[0].error_code, ResponseError::InvalidRequest.code());
    });
}

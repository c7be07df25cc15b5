//! The API table against a real one-shard broker state: every served version of every
//! API is dispatched (not refused), answered, and its response encodes; what is not
//! served is refused (including Produce v0-2, which ApiVersions lists, KAFKA-18659).

use std::rc::Rc;
use std::time::Duration;

use bytes::BytesMut;
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind, ResponseKind, TopicName};
use kafka_protocol::protocol::{Encodable, StrBytes};

use super::{default_request, dispatch, response_api, Ctx, Dispatched, Outcome, Refusal, REGISTRY};
use crate::protocol::frame::{decode_request, Request};
use crate::shard::testing::with_shard;
use crate::shard::Shard;

mod acl;
mod quotas;

/// A request context for `name` (`User:name`) from 10.1.2.3 on the shard's first
/// listener, at `version`.
fn as_user(shard: &Rc<Shard>, name: &str, version: i16) -> Ctx {
    Ctx {
        shard: shard.clone(),
        api_version: version,
        client_id: "handler-test".into(),
        client_host: "10.1.2.3".into(),
        principal: Rc::new(crate::security::KafkaPrincipal::user(name)),
        listener: Rc::new(shard.config.listeners().expect("default listener").remove(0)),
    }
}

/// Dispatches `body` as `user` and awaits its answer.
async fn ask_as(
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

/// Encodes `body` as a whole request frame (without the length prefix) and decodes
/// its header the way a connection does.
fn frame(api: ApiKey, version: i16, correlation_id: i32, body: &RequestKind) -> Request {
    let mut buf = BytesMut::new();
    let header_version =
        if api.valid_versions().max >= version { api.request_header_version(version) } else { 1 };
    RequestHeader::default()
        .with_request_api_key(api as i16)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(StrBytes::from_static_str("table-test")))
        .encode(&mut buf, header_version)
        .expect("header encodes");
    body.encode(&mut buf, version).expect("body encodes");
    decode_request(buf.freeze()).expect("header decodes")
}

fn ctx(shard: &std::rc::Rc<Shard>, version: i16) -> Ctx {
    Ctx {
        shard: shard.clone(),
        api_version: version,
        client_id: "table-test".into(),
        client_host: "127.0.0.1".into(),
        principal: std::rc::Rc::new(crate::security::KafkaPrincipal::anonymous()),
        listener: std::rc::Rc::new(shard.config.listeners().expect("default listener").remove(0)),
    }
}

/// Creates `topics` through CreateTopics v7, as a client would, asserting that each was
/// created.
async fn create_topics(
    shard: &std::rc::Rc<Shard>,
    topics: Vec<kafka_protocol::messages::create_topics_request::CreatableTopic>,
) {
    let n = topics.len();
    let body = RequestKind::CreateTopics(
        kafka_protocol::messages::CreateTopicsRequest::default().with_topics(topics),
    );
    let Ok(Dispatched { outcome: Outcome::Serial(created), .. }) =
        dispatch(&ctx(shard, 7), frame(ApiKey::CreateTopics, 7, 1, &body)).await
    else {
        panic!("CreateTopics is not serial");
    };
    let Some(ResponseKind::CreateTopics(r)) = created.await else { panic!("no answer") };
    assert_eq!(r.topics.iter().map(|t| t.error_code).collect::<Vec<_>>(), vec![0; n]);
}

#[test]
fn every_advertised_version_of_every_api_is_served() {
    with_shard(|shard| async move {
        let mut served = 0;
        for &(api, versions) in REGISTRY {
            for version in versions.min..=versions.max {
                let body = default_request(api).expect("every registered API has a request");
                let request = frame(api, version, 7, &body);
                let dispatched = match dispatch(&ctx(&shard, version), request).await {
                    Ok(d) => d,
                    Err(refusal) => panic!("{api:?} v{version} refused: {refusal:?}"),
                };
                assert_eq!(dispatched.api, api);
                assert_eq!(dispatched.response_version, version);
                let response = match dispatched.outcome {
                    Outcome::Ready(r) => r,
                    Outcome::Later(later) | Outcome::Serial(later) => glommio::timer::timeout(
                        Duration::from_secs(10),
                        async move { Ok(later.await) },
                    )
                    .await
                    .unwrap_or_else(|_| panic!("{api:?} v{version}: no answer in 10 s"))
                    .unwrap_or_else(|| panic!("{api:?} v{version}: response dropped")),
                    Outcome::Silent(_) => {
                        // Only a Produce with acks=0 (the default request) is silent.
                        assert_eq!(api, ApiKey::Produce, "{api:?} v{version} gave no response");
                        served += 1;
                        continue;
                    }
                };
                assert_eq!(response_api(&response), Some(api), "{api:?} v{version}");
                crate::net::connection::encode(7, api, version, &response)
                    .unwrap_or_else(|e| panic!("{api:?} v{version} does not encode: {e}"));
                served += 1;
            }
        }
        let expected: i32 = REGISTRY.iter().map(|(_, v)| (v.max - v.min + 1) as i32).sum();
        assert_eq!(served, expected);
    });
}

#[test]
fn versions_outside_the_table_are_refused_except_api_versions() {
    with_shard(|shard| async move {
        let mut request =
            frame(ApiKey::Metadata, 13, 1, &default_request(ApiKey::Metadata).unwrap());
        request.api_version = 14;
        match dispatch(&ctx(&shard, 14), request).await {
            Err(Refusal::UnsupportedVersion { api: ApiKey::Metadata, version: 14 }) => {}
            Err(other) => panic!("unexpected refusal {other:?}"),
            Ok(_) => panic!("Metadata v14 was served"),
        }

        // Produce v0-2 are advertised (KAFKA-18659, see `api_versions`) but refused.
        for version in 0..=2 {
            // kafka-protocol cannot encode v0-2: encode v3, relabel the header.
            let mut request =
                frame(ApiKey::Produce, 3, 1, &default_request(ApiKey::Produce).unwrap());
            request.api_version = version;
            match dispatch(&ctx(&shard, version), request).await {
                Err(Refusal::UnsupportedVersion { api: ApiKey::Produce, version: v }) => {
                    assert_eq!(v, version)
                }
                Err(other) => panic!("unexpected refusal {other:?}"),
                Ok(_) => panic!("Produce v{version} was served"),
            }
        }

        // KIP-511: ApiVersions v5 (unknown here) is answered in v0 with error 35.
        let mut request =
            frame(ApiKey::ApiVersions, 4, 2, &default_request(ApiKey::ApiVersions).unwrap());
        request.api_version = 5;
        let Ok(dispatched) = dispatch(&ctx(&shard, 5), request).await else {
            panic!("ApiVersions v5 refused");
        };
        assert_eq!(dispatched.response_version, 0);
        let Outcome::Ready(ResponseKind::ApiVersions(r)) = dispatched.outcome else {
            panic!("no ApiVersions answer");
        };
        assert_eq!(r.error_code, 35);
        assert_eq!(r.api_keys.len(), REGISTRY.len());

        let mut request =
            frame(ApiKey::Metadata, 12, 3, &default_request(ApiKey::Metadata).unwrap());
        request.api = None;
        request.api_key = 9999;
        assert!(matches!(
            dispatch(&ctx(&shard, 12), request).await,
            Err(Refusal::UnknownApiKey(9999))
        ));
    });
}

#[test]
fn describe_cluster_refuses_the_controller_endpoint_type_like_kafka() {
    use kafka_protocol::messages::DescribeClusterRequest;
    with_shard(|shard| async move {
        for (endpoint_type, code) in [(1i8, 0i16), (2, 114), (3, 115)] {
            let body = RequestKind::DescribeCluster(
                DescribeClusterRequest::default().with_endpoint_type(endpoint_type),
            );
            let request = frame(ApiKey::DescribeCluster, 1, 4, &body);
            let Ok(d) = dispatch(&ctx(&shard, 1), request).await else { panic!("refused") };
            let Outcome::Ready(ResponseKind::DescribeCluster(r)) = d.outcome else {
                panic!("no DescribeCluster answer");
            };
            assert_eq!(r.error_code, code, "endpoint type {endpoint_type}");
            assert_eq!(r.brokers.len(), if code == 0 { 1 } else { 0 });
        }
    });
}

#[test]
fn catalog_changes_are_serial_so_pipelined_requests_see_them() {
    use kafka_protocol::messages::create_topics_request::CreatableTopic;
    use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
    use kafka_protocol::messages::{CreateTopicsRequest, MetadataRequest, TopicName};
    with_shard(|shard| async move {
        let name = |s: &'static str| TopicName(StrBytes::from_static_str(s));
        let create = RequestKind::CreateTopics(CreateTopicsRequest::default().with_topics(vec![
            CreatableTopic::default()
                .with_name(name("serial"))
                .with_num_partitions(1)
                .with_replication_factor(1),
        ]));
        let d = dispatch(&ctx(&shard, 7), frame(ApiKey::CreateTopics, 7, 1, &create)).await;
        let Ok(Dispatched { outcome: Outcome::Serial(created), .. }) = d else {
            panic!("CreateTopics is not serial");
        };
        let Some(ResponseKind::CreateTopics(r)) = created.await else { panic!("no answer") };
        assert_eq!(r.topics[0].error_code, 0);
        assert!(shard.catalog().topic("serial").is_some(), "visible once the outcome is done");

        let metadata = |topic: &'static str| {
            RequestKind::Metadata(MetadataRequest::default().with_topics(Some(vec![
                MetadataRequestTopic::default().with_name(Some(name(topic))),
            ])))
        };
        // Auto-creation is a catalog change; describing an existing topic is not.
        let d = dispatch(&ctx(&shard, 12), frame(ApiKey::Metadata, 12, 2, &metadata("auto"))).await;
        assert!(matches!(d, Ok(Dispatched { outcome: Outcome::Serial(_), .. })));
        let d =
            dispatch(&ctx(&shard, 12), frame(ApiKey::Metadata, 12, 3, &metadata("serial"))).await;
        assert!(matches!(d, Ok(Dispatched { outcome: Outcome::Ready(_), .. })));
    });
}

#[test]
fn metadata_by_topic_id_ignores_the_name_that_comes_with_it() {
    use kafka_protocol::messages::create_topics_request::CreatableTopic;
    use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
    use kafka_protocol::messages::{MetadataRequest, TopicName};
    with_shard(|shard| async move {
        let name = |s: &'static str| TopicName(StrBytes::from_static_str(s));
        create_topics(
            &shard,
            vec![CreatableTopic::default()
                .with_name(name("by-id"))
                .with_num_partitions(2)
                .with_replication_factor(1)],
        )
        .await;
        let id = shard.catalog().topic("by-id").expect("created").id;
        let unknown = uuid::Uuid::from_u128(42);
        // What the Java Admin sends for describeTopics(TopicCollection.ofTopicIds(..)):
        // an empty name (or null) beside the id; plus an unknown id.
        let request = MetadataRequest::default().with_topics(Some(vec![
            MetadataRequestTopic::default().with_topic_id(id).with_name(Some(name(""))),
            MetadataRequestTopic::default().with_topic_id(unknown).with_name(None),
            MetadataRequestTopic::default().with_topic_id(id).with_name(Some(name("other"))),
        ]));
        let body = RequestKind::Metadata(request);
        let d = dispatch(&ctx(&shard, 13), frame(ApiKey::Metadata, 13, 2, &body)).await;
        let Ok(Dispatched { outcome: Outcome::Ready(ResponseKind::Metadata(r)), .. }) = d else {
            panic!("Metadata by id was not answered at once (no auto-creation by id)");
        };
        assert_eq!(r.topics.len(), 2, "each id once");
        assert_eq!(r.topics[0].error_code, 0);
        assert_eq!(r.topics[0].topic_id, id);
        assert_eq!(r.topics[0].name.as_ref().map(|n| n.as_str()), Some("by-id"));
        assert_eq!(r.topics[0].partitions.len(), 2);
        assert_eq!(r.topics[1].error_code, crate::error::ResponseError::UnknownTopicId.code());
        assert_eq!(r.topics[1].topic_id, unknown);
        assert!(shard.catalog().topic("other").is_none(), "names beside ids are not created");
    });
}

/// Sends `body` (API `api`, version `v`) and waits for its answer, immediate or deferred.
async fn answer(shard: &Rc<Shard>, api: ApiKey, v: i16, body: RequestKind) -> ResponseKind {
    match dispatch(&ctx(shard, v), frame(api, v, 9, &body)).await {
        Ok(Dispatched { outcome: Outcome::Ready(r), .. }) => r,
        Ok(Dispatched { outcome: Outcome::Later(later) | Outcome::Serial(later), .. }) => {
            later.await.expect("an answer")
        }
        _ => panic!("{api:?} v{v}: not answered"),
    }
}

#[test]
fn a_transaction_through_the_handlers() {
    use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
    use kafka_protocol::messages::create_topics_request::CreatableTopic;
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    use kafka_protocol::messages::*;
    with_shard(|shard| async move {
        let tx = TopicName(StrBytes::from_static_str("tx"));
        create_topics(
            &shard,
            vec![CreatableTopic::default()
                .with_name(tx.clone())
                .with_num_partitions(2)
                .with_replication_factor(1)],
        )
        .await;
        let id = || TransactionalId(StrBytes::from_static_str("t1"));
        let init = || {
            RequestKind::InitProducerId(
                InitProducerIdRequest::default()
                    .with_transactional_id(Some(id()))
                    .with_transaction_timeout_ms(60_000),
            )
        };
        let ResponseKind::InitProducerId(first) =
            answer(&shard, ApiKey::InitProducerId, 4, init()).await
        else {
            panic!()
        };
        assert_eq!((first.error_code, first.producer_epoch), (0, 0));
        let pid = first.producer_id;
        // A second producer with the same id fences the first: same id, epoch 1.
        let ResponseKind::InitProducerId(second) =
            answer(&shard, ApiKey::InitProducerId, 4, init()).await
        else {
            panic!()
        };
        assert_eq!((second.error_code, second.producer_id, second.producer_epoch), (0, pid, 1));
        let add = |epoch: i16, topics: Vec<(&'static str, Vec<i32>)>| {
            RequestKind::AddPartitionsToTxn(
                AddPartitionsToTxnRequest::default()
                    .with_v3_and_below_transactional_id(id())
                    .with_v3_and_below_producer_id(pid)
                    .with_v3_and_below_producer_epoch(epoch)
                    .with_v3_and_below_topics(
                        topics
                            .into_iter()
                            .map(|(t, ps)| {
                                AddPartitionsToTxnTopic::default()
                                    .with_name(TopicName(StrBytes::from_static_str(t)))
                                    .with_partitions(ps)
                            })
                            .collect(),
                    ),
            )
        };
        let codes = |r: ResponseKind| -> Vec<(String, i32, i16)> {
            let ResponseKind::AddPartitionsToTxn(r) = r else { panic!() };
            r.results_by_topic_v3_and_below
                .iter()
                .flat_map(|t| {
                    t.results_by_partition
                        .iter()
                        .map(|p| (t.name.to_string(), p.partition_index, p.partition_error_code))
                })
                .collect()
        };
        // The fenced epoch: PRODUCER_FENCED (90) from v2, INVALID_PRODUCER_EPOCH (47) before.
        let fenced = answer(&shard, ApiKey::AddPartitionsToTxn, 3, add(0, vec![("tx", vec![0])]));
        assert_eq!(codes(fenced.await), vec![("tx".into(), 0, 90)]);
        let fenced = answer(&shard, ApiKey::AddPartitionsToTxn, 1, add(0, vec![("tx", vec![0])]));
        assert_eq!(codes(fenced.await), vec![("tx".into(), 0, 47)]);
        // An unknown partition: UNKNOWN_TOPIC_OR_PARTITION (3), the rest
        // OPERATION_NOT_ATTEMPTED (55).
        let r = add(1, vec![("tx", vec![0, 7])]);
        let r = answer(&shard, ApiKey::AddPartitionsToTxn, 3, r).await;
        assert_eq!(codes(r), vec![("tx".into(), 0, 55), ("tx".into(), 7, 3)]);
        let r = answer(&shard, ApiKey::AddPartitionsToTxn, 3, add(1, vec![("tx", vec![0])])).await;
        assert_eq!(codes(r), vec![("tx".into(), 0, 0)]);
        // Transactional batches: partition 0 was added, partition 1 was not.
        let batch = bytes::Bytes::from(crate::protocol::batch::testing::build_batch(
            &crate::protocol::batch::testing::BatchSpec {
                records: 2,
                producer_id: pid.0,
                producer_epoch: 1,
                base_sequence: 0,
                attributes: crate::protocol::batch::ATTR_TRANSACTIONAL,
                ..Default::default()
            },
        ));
        let produce = ProduceRequest::default()
            .with_transactional_id(Some(id()))
            .with_acks(-1)
            .with_timeout_ms(5_000)
            .with_topic_data(vec![TopicProduceData::default()
                .with_name(tx.clone())
                .with_partition_data(
                    (0..2)
                        .map(|p| {
                            PartitionProduceData::default()
                                .with_index(p)
                                .with_records(Some(batch.clone()))
                        })
                        .collect(),
                )]);
        let ResponseKind::Produce(r) =
            answer(&shard, ApiKey::Produce, 9, RequestKind::Produce(produce)).await
        else {
            panic!()
        };
        let got: Vec<(i32, i16)> =
            r.responses[0].partition_responses.iter().map(|p| (p.index, p.error_code)).collect();
        assert_eq!(got, vec![(0, 0), (1, 48)], "INVALID_TXN_STATE for the partition not added");
        let log = shard.log("tx", 0).unwrap().log.clone();
        assert_eq!((log.high_watermark(), log.last_stable_offset()), (2, 0));
        // Commit: answered once PrepareCommit is durable; the marker follows.
        let end = RequestKind::EndTxn(
            EndTxnRequest::default()
                .with_transactional_id(id())
                .with_producer_id(pid)
                .with_producer_epoch(1)
                .with_committed(true),
        );
        let ResponseKind::EndTxn(r) = answer(&shard, ApiKey::EndTxn, 3, end).await else {
            panic!()
        };
        assert_eq!(r.error_code, 0);
        for _ in 0..100 {
            if log.last_stable_offset() == 3 {
                break;
            }
            glommio::timer::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert_eq!((log.high_watermark(), log.last_stable_offset()), (3, 3));
        let describe = RequestKind::DescribeTransactions(
            DescribeTransactionsRequest::default().with_transactional_ids(vec![id()]),
        );
        let mut state = String::new();
        for _ in 0..100 {
            let ResponseKind::DescribeTransactions(r) =
                answer(&shard, ApiKey::DescribeTransactions, 0, describe.clone()).await
            else {
                panic!()
            };
            state = r.transaction_states[0].transaction_state.to_string();
            if state == "CompleteCommit" {
                break;
            }
            glommio::timer::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert_eq!(state, "CompleteCommit");
    });
}

#[test]
fn delete_records_answers_each_partition_with_kafkas_error_codes() {
    use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
    use kafka_protocol::messages::delete_records_request::{
        DeleteRecordsPartition, DeleteRecordsTopic,
    };
    use kafka_protocol::messages::{DeleteRecordsRequest, TopicName};
    with_shard(|shard| async move {
        let name = |s: &'static str| TopicName(StrBytes::from_static_str(s));
        let compact = CreatableTopicConfig::default()
            .with_name(StrBytes::from_static_str("cleanup.policy"))
            .with_value(Some(StrBytes::from_static_str("compact")));
        create_topics(
            &shard,
            vec![
                CreatableTopic::default()
                    .with_name(name("dr"))
                    .with_num_partitions(4)
                    .with_replication_factor(1),
                CreatableTopic::default()
                    .with_name(name("dr-compact"))
                    .with_num_partitions(1)
                    .with_replication_factor(1)
                    .with_configs(vec![compact]),
            ],
        )
        .await;
        let parts = |offsets: &[(i32, i64)]| {
            offsets
                .iter()
                .map(|&(p, o)| {
                    DeleteRecordsPartition::default().with_partition_index(p).with_offset(o)
                })
                .collect::<Vec<_>>()
        };
        let request = DeleteRecordsRequest::default().with_timeout_ms(1000).with_topics(vec![
            DeleteRecordsTopic::default().with_name(name("dr")).with_partitions(parts(&[
                (0, 7),
                (1, 0),
                (2, 1),
                (3, -2),
                (4, 0),
                (0, 5),
            ])),
            DeleteRecordsTopic::default()
                .with_name(name("dr-compact"))
                .with_partitions(parts(&[(0, 0)])),
            DeleteRecordsTopic::default().with_name(name("nope")).with_partitions(parts(&[(0, 0)])),
            DeleteRecordsTopic::default()
                .with_name(name("__consumer_offsets"))
                .with_partitions(parts(&[(0, 0)])),
            // Named again: merged into the first "dr", and partition 0's last offset wins.
            DeleteRecordsTopic::default().with_name(name("dr")).with_partitions(parts(&[(0, -1)])),
        ]);
        for version in 0..=2 {
            let body = RequestKind::DeleteRecords(request.clone());
            let d =
                dispatch(&ctx(&shard, version), frame(ApiKey::DeleteRecords, version, 2, &body))
                    .await;
            let Ok(Dispatched { outcome: Outcome::Later(later), .. }) = d else {
                panic!("v{version}: not dispatched");
            };
            let Some(ResponseKind::DeleteRecords(r)) = later.await else { panic!("no answer") };
            let got: Vec<(String, i32, i64, i16)> = r
                .topics
                .iter()
                .flat_map(|t| {
                    t.partitions.iter().map(|p| {
                        (t.name.to_string(), p.partition_index, p.low_watermark, p.error_code)
                    })
                })
                .collect();
            // One answer per partition, in order of first mention (Kafka keys the request
            // by topic partition).
            let want: Vec<(String, i32, i64, i16)> = [
                ("dr", 0, 0, 0),           // last said -1: the (empty) high watermark
                ("dr", 1, 0, 0),           // 0: nothing to delete
                ("dr", 2, -1, 1),          // above the high watermark: OFFSET_OUT_OF_RANGE
                ("dr", 3, -1, 1),          // negative other than -1
                ("dr", 4, -1, 3),          // UNKNOWN_TOPIC_OR_PARTITION
                ("dr-compact", 0, -1, 44), // POLICY_VIOLATION
                ("nope", 0, -1, 3),
                ("__consumer_offsets", 0, -1, 17), // INVALID_TOPIC_EXCEPTION: internal
            ]
            .iter()
            .map(|&(t, p, l, e)| (t.to_string(), p, l, e))
            .collect();
            assert_eq!(got, want, "v{version}");
        }
    });
}

#[test]
fn describe_log_dirs_reports_every_partition_log_with_its_size() {
    use crate::protocol::batch::testing::{build_batch, BatchSpec};
    use kafka_protocol::messages::create_topics_request::CreatableTopic;
    use kafka_protocol::messages::describe_log_dirs_request::DescribableLogDirTopic;
    use kafka_protocol::messages::{DescribeLogDirsRequest, TopicName};
    with_shard(|shard| async move {
        let name = |s: &'static str| TopicName(StrBytes::from_static_str(s));
        create_topics(
            &shard,
            vec![CreatableTopic::default()
                .with_name(name("ld"))
                .with_num_partitions(2)
                .with_replication_factor(1)],
        )
        .await;
        let batch =
            bytes::Bytes::from(build_batch(&BatchSpec { records: 3, ..Default::default() }));
        let log = shard.log("ld", 1).expect("owned").log.clone();
        log.append(batch.clone(), 0).await.unwrap();
        log.append(batch.clone(), 0).await.unwrap();
        let size = 2 * batch.len() as i64;

        let ask = |topics: Option<Vec<DescribableLogDirTopic>>, version: i16| {
            let shard = shard.clone();
            async move {
                let body = RequestKind::DescribeLogDirs(
                    DescribeLogDirsRequest::default().with_topics(topics),
                );
                let d = dispatch(
                    &ctx(&shard, version),
                    frame(ApiKey::DescribeLogDirs, version, 3, &body),
                )
                .await;
                let Ok(Dispatched { outcome: Outcome::Later(later), .. }) = d else {
                    panic!("v{version}")
                };
                let Some(ResponseKind::DescribeLogDirs(r)) = later.await else {
                    panic!("no answer")
                };
                assert_eq!((r.error_code, r.results.len()), (0, 1));
                let dir = &r.results[0];
                assert_eq!(dir.error_code, 0);
                let want_dir = std::fs::canonicalize(&shard.config.data_dir).unwrap();
                assert_eq!(dir.log_dir.as_str(), want_dir.to_str().unwrap());
                if version >= 4 {
                    assert!(
                        dir.total_bytes > 0
                            && dir.usable_bytes >= 0
                            && dir.usable_bytes <= dir.total_bytes
                    );
                }
                dir.topics
                    .iter()
                    .flat_map(|t| {
                        t.partitions.iter().map(|p| {
                            (
                                t.name.to_string(),
                                p.partition_index,
                                p.partition_size,
                                p.offset_lag,
                                p.is_future_key,
                            )
                        })
                    })
                    .collect::<Vec<_>>()
            }
        };
        let want = |parts: &[(i32, i64)]| {
            parts.iter().map(|&(p, s)| ("ld".to_string(), p, s, 0, false)).collect::<Vec<_>>()
        };
        // An offsets partition a group has written to, and 49 nobody has opened yet.
        let offsets_log = shard.groups.log_for(3).await.unwrap();
        offsets_log.append(batch.clone(), 0).await.unwrap();
        let offsets_topic = crate::metadata::OFFSETS_TOPIC;
        let all_offsets: Vec<_> = (0..50)
            .map(|p| (offsets_topic.to_string(), p, if p == 3 { batch.len() as i64 } else { 0 }))
            .map(|(t, p, s)| (t, p, s, 0, false))
            .collect();
        for version in 1..=4 {
            // All: both partitions and every offsets partition, opened or not (Kafka
            // lists the whole offsets topic once it exists; shardlog's always does).
            let mut everything = all_offsets.clone();
            everything.extend(want(&[(0, 0), (1, size)]));
            assert_eq!(ask(None, version).await, everything, "v{version}");
            let unopened = vec![DescribableLogDirTopic::default()
                .with_topic(name(offsets_topic))
                .with_partitions(vec![3, 4, 50])];
            assert_eq!(
                ask(Some(unopened), version).await,
                all_offsets[3..5].to_vec(),
                "v{version}"
            );
            // Named: only what exists, unknown topics and partitions left out.
            let named = vec![
                DescribableLogDirTopic::default()
                    .with_topic(name("ld"))
                    .with_partitions(vec![1, 7]),
                DescribableLogDirTopic::default().with_topic(name("nope")).with_partitions(vec![0]),
            ];
            assert_eq!(ask(Some(named), version).await, want(&[(1, size)]), "v{version}");
            assert_eq!(ask(Some(vec![]), version).await, want(&[]), "v{version}");
        }
    });
}

#[test]
fn incremental_alter_configs_changes_persists_and_applies_topic_configs() {
    use kafka_protocol::messages::create_topics_request::CreatableTopic;
    use kafka_protocol::messages::incremental_alter_configs_request::{
        AlterConfigsResource, AlterableConfig,
    };
    use kafka_protocol::messages::{IncrementalAlterConfigsRequest, TopicName};
    with_shard(|shard| async move {
        let name = |s: &'static str| TopicName(StrBytes::from_static_str(s));
        create_topics(
            &shard,
            vec![CreatableTopic::default()
                .with_name(name("ac"))
                .with_num_partitions(1)
                .with_replication_factor(1)],
        )
        .await;
        let op = |n: &'static str, code: i8, v: Option<&'static str>| {
            AlterableConfig::default()
                .with_name(StrBytes::from_static_str(n))
                .with_config_operation(code)
                .with_value(v.map(StrBytes::from_static_str))
        };
        let res = |t: i8, n: &'static str, ops: Vec<AlterableConfig>| {
            AlterConfigsResource::default()
                .with_resource_type(t)
                .with_resource_name(StrBytes::from_static_str(n))
                .with_configs(ops)
        };
        let alter = |resources: Vec<AlterConfigsResource>, validate_only: bool| {
            let shard = shard.clone();
            async move {
                let body = RequestKind::IncrementalAlterConfigs(
                    IncrementalAlterConfigsRequest::default()
                        .with_resources(resources)
                        .with_validate_only(validate_only),
                );
                let d =
                    dispatch(&ctx(&shard, 1), frame(ApiKey::IncrementalAlterConfigs, 1, 2, &body))
                        .await;
                let Ok(Dispatched { outcome: Outcome::Serial(later), .. }) = d else {
                    panic!("IncrementalAlterConfigs is not serial");
                };
                let Some(ResponseKind::IncrementalAlterConfigs(r)) = later.await else {
                    panic!("no answer")
                };
                r.responses
                    .iter()
                    .map(|r| (r.resource_type, r.resource_name.to_string(), r.error_code))
                    .collect::<Vec<_>>()
            }
        };
        let set_segment = || {
            vec![op("segment.bytes", 0, Some("2000000")), op("cleanup.policy", 2, Some("compact"))]
        };
        // validate_only: answered, nothing changes.
        assert_eq!(alter(vec![res(2, "ac", set_segment())], true).await, vec![(2, "ac".into(), 0)]);
        assert!(shard.catalog().topic("ac").unwrap().configs.is_empty());
        // INVALID_CONFIG (retention.ms >= -1), INVALID_REQUEST (unknown operation; a
        // resource named twice): nothing applied.
        let bad = res(2, "ac", vec![op("retention.ms", 0, Some("-2"))]);
        assert_eq!(alter(vec![bad], false).await, vec![(2, "ac".into(), 40)]);
        let bad = res(2, "ac", vec![op("retention.ms", 7, Some("1"))]);
        assert_eq!(alter(vec![bad], false).await, vec![(2, "ac".into(), 42)]);
        let twice = vec![res(2, "ac", set_segment()), res(2, "ac", vec![])];
        assert_eq!(alter(twice, false).await, vec![(2, "ac".into(), 42), (2, "ac".into(), 42)]);
        assert!(shard.catalog().topic("ac").unwrap().configs.is_empty());
        let got = alter(
            vec![
                res(2, "ac", set_segment()),
                res(2, "nope", vec![op("retention.ms", 0, Some("1"))]),
                res(4, "0", vec![op("leader.replication.throttled.rate", 1, None)]),
                res(4, "", vec![op("log.retention.ms", 0, Some("1"))]),
                res(4, "5", vec![]),
                res(99, "x", vec![]),
            ],
            false,
        )
        .await;
        let want: Vec<(i8, String, i16)> = [
            (2, "ac", 0),
            (2, "nope", 3), // UNKNOWN_TOPIC_OR_PARTITION
            (4, "0", 0),    // deleting an unset dynamic broker config
            (4, "", 0),     // a cluster-wide dynamic default
            (4, "5", 42),   // another broker
            (99, "x", 42),
        ]
        .iter()
        .map(|&(t, n, e)| (t, n.to_string(), e))
        .collect();
        assert_eq!(got, want);
        let cluster = shard.catalog().broker_default_configs.clone();
        assert_eq!(
            cluster.into_iter().collect::<Vec<_>>(),
            [("log.retention.ms".into(), "1".into())]
        );
        let configs = shard.catalog().topic("ac").unwrap().configs.clone();
        let want: std::collections::BTreeMap<String, String> =
            [("cleanup.policy", "delete,compact"), ("segment.bytes", "2000000")]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
        assert_eq!(configs, want);
        // Persisted, and applied to the open log.
        let saved = crate::metadata::Catalog::load(&shard.config.data_dir).unwrap();
        assert_eq!(saved.topic("ac").unwrap().configs, want);
        assert_eq!(shard.log("ac", 0).unwrap().log.live_config().segment_bytes, 2_000_000);
    });
}

#[test]
fn offset_for_leader_epoch_answers_from_the_one_epoch_each_partition_has() {
    use crate::protocol::batch::testing::{build_batch, BatchSpec};
    use kafka_protocol::messages::create_topics_request::CreatableTopic;
    use kafka_protocol::messages::offset_for_leader_epoch_request::{
        OffsetForLeaderPartition, OffsetForLeaderTopic,
    };
    use kafka_protocol::messages::{OffsetForLeaderEpochRequest, TopicName};
    with_shard(|shard| async move {
        let name = |s: &'static str| TopicName(StrBytes::from_static_str(s));
        create_topics(
            &shard,
            vec![CreatableTopic::default()
                .with_name(name("ofle"))
                .with_num_partitions(1)
                .with_replication_factor(1)],
        )
        .await;
        let batch =
            bytes::Bytes::from(build_batch(&BatchSpec { records: 3, ..Default::default() }));
        shard.log("ofle", 0).unwrap().log.append(batch, 0).await.unwrap();
        let part = |p: i32, current: i32, epoch: i32| {
            OffsetForLeaderPartition::default()
                .with_partition(p)
                .with_current_leader_epoch(current)
                .with_leader_epoch(epoch)
        };
        let request =
            OffsetForLeaderEpochRequest::default().with_replica_id((-1).into()).with_topics(vec![
                OffsetForLeaderTopic::default().with_topic(name("ofle")).with_partitions(vec![
                    part(0, -1, 0),
                    part(0, 0, 0),
                    part(0, -1, 5),
                    part(0, 1, 0),
                    part(1, -1, 0),
                ]),
                OffsetForLeaderTopic::default()
                    .with_topic(name("__consumer_offsets"))
                    .with_partitions(vec![part(0, 0, 0)]),
                OffsetForLeaderTopic::default()
                    .with_topic(name("nope"))
                    .with_partitions(vec![part(0, -1, 0)]),
            ]);
        for version in 2..=4 {
            let body = RequestKind::OffsetForLeaderEpoch(request.clone());
            let d = dispatch(
                &ctx(&shard, version),
                frame(ApiKey::OffsetForLeaderEpoch, version, 2, &body),
            )
            .await;
            let Ok(Dispatched { outcome: Outcome::Later(later), .. }) = d else {
                panic!("v{version}")
            };
            let Some(ResponseKind::OffsetForLeaderEpoch(r)) = later.await else {
                panic!("no answer")
            };
            let got: Vec<(String, i32, i16, i32, i64)> = r
                .topics
                .iter()
                .flat_map(|t| {
                    t.partitions.iter().map(|p| {
                        (
                            t.topic.to_string(),
                            p.partition,
                            p.error_code,
                            p.leader_epoch,
                            p.end_offset,
                        )
                    })
                })
                .collect();
            let want: Vec<(String, i32, i16, i32, i64)> = [
                ("ofle", 0, 0, 0, 3),
                ("ofle", 0, 0, 0, 3),
                ("ofle", 0, 0, -1, -1),  // an epoch after the only one
                ("ofle", 0, 75, -1, -1), // UNKNOWN_LEADER_EPOCH: the client is ahead
                ("ofle", 1, 3, -1, -1),
                ("__consumer_offsets", 0, 0, 0, 0),
                ("nope", 0, 3, -1, -1),
            ]
            .iter()
            .map(|&(t, p, e, ep, o)| (t.to_string(), p, e, ep, o))
            .collect();
            assert_eq!(got, want, "v{version}");
        }
    });
}

/// Creates topic `name` with one partition, appends `batches` batches of 3 records to
/// it, and returns the stored length of one batch.
async fn one_partition_with_batches(
    shard: &Rc<Shard>,
    name: &'static str,
    batches: usize,
) -> usize {
    use crate::protocol::batch::testing::{build_batch, BatchSpec};
    use kafka_protocol::messages::create_topics_request::CreatableTopic;
    create_topics(
        shard,
        vec![CreatableTopic::default()
            .with_name(TopicName(StrBytes::from_static_str(name)))
            .with_num_partitions(1)
            .with_replication_factor(1)],
    )
    .await;
    let batch = || bytes::Bytes::from(build_batch(&BatchSpec { records: 3, ..Default::default() }));
    let log = shard.log(name, 0).unwrap().log.clone();
    for _ in 0..batches {
        log.append(batch(), 0).await.unwrap();
    }
    batch().len()
}

/// Sends a Fetch v11 of partition 0 of `name` from offset 0 (`partition_max_bytes` 1,
/// `max_bytes` 1 MiB) and waits for its deferred answer.
async fn fetch_partition_0(
    shard: &Rc<Shard>,
    name: &'static str,
    min_bytes: i32,
    max_wait_ms: i32,
) -> kafka_protocol::messages::FetchResponse {
    fetch(shard, &[(name, 0, 0, 1)], min_bytes, max_wait_ms).await
}

/// Sends a Fetch v11 of `partitions` (`(topic, partition, fetch offset,
/// partition_max_bytes)`, in one topic entry per partition) with `max_bytes` 1 MiB and
/// waits for its deferred answer.
async fn fetch(
    shard: &Rc<Shard>,
    partitions: &[(&'static str, i32, i64, i32)],
    min_bytes: i32,
    max_wait_ms: i32,
) -> kafka_protocol::messages::FetchResponse {
    fetch_within(shard, partitions, min_bytes, max_wait_ms, 1 << 20).await
}

/// [`fetch`] with the response limit `max_bytes`.
async fn fetch_within(
    shard: &Rc<Shard>,
    partitions: &[(&'static str, i32, i64, i32)],
    min_bytes: i32,
    max_wait_ms: i32,
    max_bytes: i32,
) -> kafka_protocol::messages::FetchResponse {
    use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
    use kafka_protocol::messages::FetchRequest;
    let topics = partitions
        .iter()
        .map(|&(name, partition, offset, max)| {
            FetchTopic::default()
                .with_topic(TopicName(StrBytes::from_static_str(name)))
                .with_partitions(vec![FetchPartition::default()
                    .with_partition(partition)
                    .with_fetch_offset(offset)
                    .with_partition_max_bytes(max)])
        })
        .collect();
    let request = FetchRequest::default()
        .with_max_wait_ms(max_wait_ms)
        .with_min_bytes(min_bytes)
        .with_max_bytes(max_bytes)
        .with_topics(topics);
    let body = RequestKind::Fetch(request);
    let Ok(Dispatched { outcome: Outcome::Later(later), .. }) =
        dispatch(&ctx(shard, 11), frame(ApiKey::Fetch, 11, 3, &body)).await
    else {
        panic!("Fetch is not deferred")
    };
    let Some(ResponseKind::Fetch(r)) = later.await else { panic!("no answer") };
    r
}

/// What a Fetch answered per partition, in order: (error code, high watermark, last
/// stable offset, log start offset, record bytes).
fn fetched(r: &kafka_protocol::messages::FetchResponse) -> Vec<(i16, i64, i64, i64, usize)> {
    r.responses
        .iter()
        .flat_map(|t| &t.partitions)
        .map(|p| {
            let len = p.records.as_ref().map_or(0, |b| b.len());
            (p.error_code, p.high_watermark, p.last_stable_offset, p.log_start_offset, len)
        })
        .collect()
}

/// Kafka's answers around a Fetch's limits (found by a helper comparing with Kafka):
/// a Fetch of no partitions answers at once, whatever `min_bytes`; only the first
/// partition that returns data may go over its `partition_max_bytes` (KIP-74), a later
/// one whose first batch does not fit returns none; a failed read
/// (OFFSET_OUT_OF_RANGE) carries -1 for its offsets.
#[test]
fn a_fetch_answers_as_kafka_at_its_limits() {
    with_shard(|shard| async move {
        let started = std::time::Instant::now();
        let r = fetch(&shard, &[], 1, 5_000).await;
        assert!(r.responses.is_empty());
        assert!(
            started.elapsed() < Duration::from_millis(2_500),
            "waited with nothing to wait for"
        );

        let stored = one_partition_with_batches(&shard, "a", 2).await;
        one_partition_with_batches(&shard, "b", 2).await;
        let passes = || {
            let counts = crate::metrics::read(|m| m.counters());
            counts.storage.latency[crate::metrics::Timed::FetchRead as usize].count
        };
        let before = passes();
        let r = fetch(&shard, &[("a", 0, 0, 1), ("b", 0, 0, 1)], 1, 100).await;
        assert_eq!(passes() - before, 1, "one pass of reads, timed once");
        assert_eq!(fetched(&r), vec![(0, 6, 6, 0, stored), (0, 6, 6, 0, 0)]);
        // A limit that holds one batch: each partition gets exactly one.
        let one = stored as i32;
        let r = fetch(&shard, &[("a", 0, 0, one), ("b", 0, 3, one)], 1, 100).await;
        assert_eq!(fetched(&r), vec![(0, 6, 6, 0, stored), (0, 6, 6, 0, stored)]);
        // Out of range, next to a partition read as usual.
        let r = fetch(&shard, &[("a", 0, 7, 1 << 20), ("b", 0, 0, 1 << 20)], 1, 100).await;
        assert_eq!(fetched(&r), vec![(1, -1, -1, -1, 0), (0, 6, 6, 0, 2 * stored)]);
    });
}

#[test]
fn a_fetch_that_leaves_stored_data_behind_answers_without_waiting_for_min_bytes() {
    with_shard(|shard| async move {
        // One batch fits the partition's limit; the second is stored but left behind.
        let stored = one_partition_with_batches(&shard, "behind", 2).await;
        let started = std::time::Instant::now();
        let r = fetch_partition_0(&shard, "behind", 1 << 20, 5_000).await;
        let p = &r.responses[0].partitions[0];
        assert_eq!((p.records.as_ref().map(|b| b.len()), p.high_watermark), (Some(stored), 6));
        assert!(started.elapsed() < Duration::from_millis(2_500), "waited for min_bytes");
    });
}

/// A Fetch reads about its `max_bytes` from the disk, not `partition_max_bytes` for
/// each partition it names (found by a helper: 100 cold partitions of 3 MB each read
/// 300 MB for a 1 MiB answer). A partition left unread for the limit holds data, so the
/// Fetch answers at once even when the others returned less than `min_bytes` (a disk
/// read takes its whole share of the limit before it knows what it will return).
#[test]
fn a_fetch_reads_from_the_disk_within_its_max_bytes() {
    crate::shard::testing::with_shard_flags(&["--cache-bytes", "0"], |shard| async move {
        let stored = one_partition_with_batches(&shard, "alone", 4).await;
        for name in ["x", "y", "z"] {
            one_partition_with_batches(&shard, name, 4).await;
        }
        let counters = || crate::metrics::read(|m| m.counters());
        let disk = || counters().storage.disk_read_bytes;
        let waits = || counters().storage.latency[crate::metrics::Timed::FetchWait as usize].count;
        // From offset 3: three batches of the four a share of the partition's size allows.
        let limit = 4 * stored as i32;
        let before = disk();
        let r = fetch_within(&shard, &[("alone", 0, 3, 1 << 20)], 1, 100, limit).await;
        assert_eq!(fetched(&r), vec![(0, 12, 12, 0, 3 * stored)]);
        let one_partition = disk() - before;
        assert!(one_partition >= 3 * stored as u64, "read {one_partition} bytes");

        let (before, waited) = (disk(), waits());
        let all = [("x", 0, 3, 1 << 20), ("y", 0, 0, 1 << 20), ("z", 0, 0, 1 << 20)];
        let r = fetch_within(&shard, &all, 1 << 20, 5_000, limit).await;
        let want = vec![(0, 12, 12, 0, 3 * stored), (0, 12, 12, 0, 0), (0, 12, 12, 0, 0)];
        assert_eq!(fetched(&r), want);
        assert_eq!(disk() - before, one_partition, "only x was read");
        assert_eq!(waits(), waited, "the long poll waited though y and z hold data");
    });
}

/// `--fetch-max-bytes` (Kafka's `fetch.max.bytes`, KIP-541) caps a Fetch's `max_bytes`:
/// a consumer asking for 1 MiB gets what the broker's limit holds (one batch of two
/// here, the second left for the next fetch).
#[test]
fn the_brokers_fetch_max_bytes_caps_a_fetch() {
    crate::shard::testing::with_shard_flags(&["--fetch-max-bytes", "1024"], |shard| async move {
        use crate::protocol::batch::testing::{build_batch, BatchSpec};
        one_partition_with_batches(&shard, "capped", 0).await;
        let log = shard.log("capped", 0).unwrap().log.clone();
        let big = || {
            bytes::Bytes::from(build_batch(&BatchSpec {
                records: 1,
                value_len: 700,
                ..Default::default()
            }))
        };
        for _ in 0..2 {
            log.append(big(), 0).await.unwrap();
        }
        let one = big().len();
        assert!(one <= 1024 && 2 * one > 1024, "{one}");
        let r = fetch_within(&shard, &[("capped", 0, 0, 1 << 20)], 1, 100, 1 << 20).await;
        assert_eq!(fetched(&r), vec![(0, 2, 2, 0, one)]);
    });
}

/// A Fetch whose `min_bytes` is more than its partitions' `partition_max_bytes` let a
/// read return waits out `max_wait_ms` without holding the core: other tasks keep
/// running meanwhile (the long poll used to wake at once, again and again, and starve
/// the executor; found by the dispatch fuzzer).
#[test]
fn a_fetch_that_cannot_reach_min_bytes_waits_without_spinning() {
    with_shard(|shard| async move {
        let stored = one_partition_with_batches(&shard, "spin", 1).await;
        let ticks = std::rc::Rc::new(std::cell::Cell::new(0u32));
        let counter = ticks.clone();
        let ticker = glommio::spawn_local(async move {
            loop {
                glommio::timer::sleep(Duration::from_millis(10)).await;
                counter.set(counter.get() + 1);
            }
        })
        .detach();
        let started = std::time::Instant::now();
        let r = fetch_partition_0(&shard, "spin", 1 << 20, 400).await;
        ticker.cancel();
        assert!(started.elapsed() >= Duration::from_millis(400));
        // The one stored batch, whole (a response always carries at least one).
        let records = r.responses[0].partitions[0].records.as_ref().map(|b| b.len());
        assert_eq!(records, Some(stored));
        // 400 ms of 10 ms ticks: about 40 if the core was free; a spinning poll gives 0.
        assert!(ticks.get() >= 20, "the executor ran {} ticks in 400 ms", ticks.get());
    });
}

#[test]
fn an_acks0_produce_yields_the_errors_it_would_have_answered() {
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    use kafka_protocol::messages::ProduceRequest;
    with_shard(|shard| async move {
        let produce = |topics: Vec<TopicProduceData>| {
            RequestKind::Produce(
                ProduceRequest::default()
                    .with_acks(0)
                    .with_timeout_ms(1000)
                    .with_topic_data(topics),
            )
        };
        let nowhere = TopicProduceData::default()
            .with_name(TopicName(StrBytes::from_static_str("no-such-topic")))
            .with_partition_data(vec![
                PartitionProduceData::default().with_index(0),
                PartitionProduceData::default().with_index(1),
            ]);
        for (topics, want) in [(vec![], vec![]), (vec![nowhere], vec![3i16, 3])] {
            let request = frame(ApiKey::Produce, 9, 1, &produce(topics));
            let Ok(Dispatched { outcome: Outcome::Silent(done), .. }) =
                dispatch(&ctx(&shard, 9), request).await
            else {
                panic!("an acks=0 produce is silent");
            };
            // UNKNOWN_TOPIC_OR_PARTITION once per partition: the connection closes.
            assert_eq!(done.await, want);
        }
    });
}

/// TxnOffsetCommit: unknown topics and partitions are refused here, first, with
/// UNKNOWN_TOPIC_OR_PARTITION; the coordinator's answer is merged in by topic, as
/// Kafka's `TxnOffsetCommitResponse.Builder` does; a request left without partitions
/// does not reach the coordinator (no group is created).
#[test]
fn txn_offset_commit_refuses_unknown_partitions_and_merges_by_topic() {
    use kafka_protocol::messages::create_topics_request::CreatableTopic;
    use kafka_protocol::messages::txn_offset_commit_request::{
        TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
    };
    use kafka_protocol::messages::{
        AddOffsetsToTxnRequest, GroupId, InitProducerIdRequest, TransactionalId,
        TxnOffsetCommitRequest,
    };
    with_shard(|shard| async move {
        let name = |s: &'static str| TopicName(StrBytes::from_static_str(s));
        create_topics(
            &shard,
            vec![CreatableTopic::default()
                .with_name(name("t"))
                .with_num_partitions(2)
                .with_replication_factor(1)],
        )
        .await;
        // A transactional producer whose transaction has group "g"'s offsets partition.
        let tx = || TransactionalId(StrBytes::from_static_str("tx"));
        let init = RequestKind::InitProducerId(
            InitProducerIdRequest::default()
                .with_transactional_id(Some(tx()))
                .with_transaction_timeout_ms(60_000),
        );
        let ResponseKind::InitProducerId(init) =
            super::tests::answer(&shard, ApiKey::InitProducerId, 4, init).await
        else {
            panic!()
        };
        let (pid, epoch) = (init.producer_id, init.producer_epoch);
        let add = |group: &'static str| {
            RequestKind::AddOffsetsToTxn(
                AddOffsetsToTxnRequest::default()
                    .with_transactional_id(tx())
                    .with_producer_id(pid)
                    .with_producer_epoch(epoch)
                    .with_group_id(GroupId(StrBytes::from_static_str(group))),
            )
        };
        let ResponseKind::AddOffsetsToTxn(added) =
            super::tests::answer(&shard, ApiKey::AddOffsetsToTxn, 3, add("g")).await
        else {
            panic!()
        };
        assert_eq!(added.error_code, 0);
        let part = |i| TxnOffsetCommitRequestPartition::default().with_partition_index(i);
        let request = |group: &'static str, topics| {
            RequestKind::TxnOffsetCommit(
                TxnOffsetCommitRequest::default()
                    .with_transactional_id(tx())
                    .with_group_id(GroupId(StrBytes::from_static_str(group)))
                    .with_producer_id(pid)
                    .with_producer_epoch(epoch)
                    .with_topics(topics),
            )
        };
        let answer = |d: Result<Dispatched, Refusal>| async move {
            match d.ok().map(|d| d.outcome) {
                Some(Outcome::Ready(ResponseKind::TxnOffsetCommit(r))) => r,
                Some(Outcome::Later(later)) => match later.await {
                    Some(ResponseKind::TxnOffsetCommit(r)) => r,
                    other => panic!("{other:?}"),
                },
                _ => panic!("not answered"),
            }
        };
        let codes =
            |r: &kafka_protocol::messages::TxnOffsetCommitResponse| -> Vec<(String, i32, i16)> {
                r.topics
                    .iter()
                    .flat_map(|t| {
                        t.partitions
                            .iter()
                            .map(|p| (t.name.0.to_string(), p.partition_index, p.error_code))
                    })
                    .collect()
            };
        let body = request(
            "g",
            vec![
                TxnOffsetCommitRequestTopic::default()
                    .with_name(name("t"))
                    .with_partitions(vec![part(0), part(5)]),
                TxnOffsetCommitRequestTopic::default()
                    .with_name(name("nope"))
                    .with_partitions(vec![part(0)]),
            ],
        );
        let r =
            answer(dispatch(&ctx(&shard, 3), frame(ApiKey::TxnOffsetCommit, 3, 1, &body)).await)
                .await;
        assert_eq!(codes(&r), vec![("t".into(), 5, 3), ("t".into(), 0, 0), ("nope".into(), 0, 3)]);
        assert_eq!(
            shard.groups.summaries().iter().map(|g| g.group_id.as_str()).collect::<Vec<_>>(),
            vec!["g"]
        );
        // Only unknown partitions: answered here, group "h" is not created.
        let body = request(
            "h",
            vec![TxnOffsetCommitRequestTopic::default()
                .with_name(name("nope"))
                .with_partitions(vec![part(1)])],
        );
        let r =
            answer(dispatch(&ctx(&shard, 0), frame(ApiKey::TxnOffsetCommit, 0, 2, &body)).await)
                .await;
        assert_eq!(codes(&r), vec![("nope".into(), 1, 3)]);
        assert_eq!(shard.groups.summaries().len(), 1);
        // Group "k"'s offsets partition is not in the transaction (no AddOffsetsToTxn):
        // INVALID_TXN_STATE (48) for every partition, nothing written, no group.
        let body = request(
            "k",
            vec![TxnOffsetCommitRequestTopic::default()
                .with_name(name("t"))
                .with_partitions(vec![part(0), part(1)])],
        );
        let r =
            answer(dispatch(&ctx(&shard, 3), frame(ApiKey::TxnOffsetCommit, 3, 3, &body)).await)
                .await;
        assert_eq!(codes(&r), vec![("t".into(), 0, 48), ("t".into(), 1, 48)]);
        assert_eq!(shard.groups.summaries().len(), 1);
    });
}

#[test]
fn write_txn_markers_answers_each_partition_and_appends_the_markers() {
    use kafka_protocol::messages::create_topics_request::CreatableTopic;
    use kafka_protocol::messages::write_txn_markers_request::{
        WritableTxnMarker, WritableTxnMarkerTopic,
    };
    use kafka_protocol::messages::*;
    with_shard(|shard| async move {
        let wm = TopicName(StrBytes::from_static_str("wm"));
        create_topics(
            &shard,
            vec![CreatableTopic::default()
                .with_name(wm.clone())
                .with_num_partitions(2)
                .with_replication_factor(1)],
        )
        .await;
        let topic = |name: &'static str, partitions: Vec<i32>| {
            WritableTxnMarkerTopic::default()
                .with_name(TopicName(StrBytes::from_static_str(name)))
                .with_partition_indexes(partitions)
        };
        let marker = WritableTxnMarker::default()
            .with_producer_id(ProducerId(42))
            .with_producer_epoch(3)
            .with_transaction_result(false)
            .with_coordinator_epoch(0)
            .with_topics(vec![topic("wm", vec![1, 7, 0]), topic("nope", vec![0])]);
        let body = RequestKind::WriteTxnMarkers(
            WriteTxnMarkersRequest::default().with_markers(vec![marker]),
        );
        let ResponseKind::WriteTxnMarkers(r) =
            answer(&shard, ApiKey::WriteTxnMarkers, 1, body).await
        else {
            panic!()
        };
        // (producer id, [(topic, [(partition, error code)])]).
        type Codes = Vec<(String, Vec<(i32, i16)>)>;
        let got: Vec<(i64, Codes)> = r
            .markers
            .iter()
            .map(|m| {
                let topics = m
                    .topics
                    .iter()
                    .map(|t| {
                        let parts = t
                            .partitions
                            .iter()
                            .map(|p| (p.partition_index, p.error_code))
                            .collect();
                        (t.name.to_string(), parts)
                    })
                    .collect();
                (m.producer_id.0, topics)
            })
            .collect();
        assert_eq!(
            got,
            vec![(
                42,
                vec![
                    ("wm".to_string(), vec![(1, 0), (7, 3), (0, 0)]),
                    ("nope".to_string(), vec![(0, 3)]),
                ]
            )]
        );
        // One ABORT control batch of producer 42, epoch 3, on each existing partition.
        for p in [0, 1] {
            let log = shard.log("wm", p).unwrap().log.clone();
            assert_eq!(log.high_watermark(), 1);
            let read = log.read(0, 1 << 20).await.unwrap();
            let (_, h) = crate::protocol::batch::BatchIter::new(&read).next().unwrap().unwrap();
            assert!(h.is_control());
            assert_eq!((h.producer_id, h.producer_epoch), (42, 3));
        }
    });
}

#[test]
fn list_transactions_v2_filters_by_a_whole_match_of_the_id_pattern() {
    use kafka_protocol::messages::*;
    with_shard(|shard| async move {
        for id in ["alpha-1", "alpha-2", "beta-1"] {
            let init = RequestKind::InitProducerId(
                InitProducerIdRequest::default()
                    .with_transactional_id(Some(TransactionalId(StrBytes::from_static_str(id))))
                    .with_transaction_timeout_ms(60_000),
            );
            let ResponseKind::InitProducerId(r) =
                answer(&shard, ApiKey::InitProducerId, 4, init).await
            else {
                panic!()
            };
            assert_eq!(r.error_code, 0);
        }
        let list = |v: i16, pattern: Option<&'static str>| {
            let shard = shard.clone();
            async move {
                let body = RequestKind::ListTransactions(
                    ListTransactionsRequest::default()
                        .with_transactional_id_pattern(pattern.map(StrBytes::from_static_str)),
                );
                let ResponseKind::ListTransactions(r) =
                    answer(&shard, ApiKey::ListTransactions, v, body).await
                else {
                    panic!()
                };
                let ids: Vec<String> =
                    r.transaction_states.iter().map(|t| t.transactional_id.to_string()).collect();
                (r.error_code, ids)
            }
        };
        let all = vec!["alpha-1".to_string(), "alpha-2".into(), "beta-1".into()];
        assert_eq!(list(2, None).await, (0, all.clone()));
        assert_eq!(list(2, Some("")).await, (0, all.clone()));
        assert_eq!(list(2, Some("alpha-.*")).await, (0, vec!["alpha-1".into(), "alpha-2".into()]));
        // The whole id must match, as RE2/J's `matches()`.
        assert_eq!(list(2, Some("alpha")).await, (0, vec![]));
        assert_eq!(list(2, Some(".*-1")).await, (0, vec!["alpha-1".into(), "beta-1".into()]));
        assert_eq!(
            list(2, Some("alpha-(")).await,
            (crate::error::ResponseError::InvalidRegularExpression.code(), vec![])
        );
    });
}

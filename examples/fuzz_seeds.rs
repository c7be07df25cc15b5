//! Writes the seed corpora of the fuzz targets into `<dir>/<target>/`: request frames
//! (the v1 and v2 request headers of every advertised API and version, with an empty
//! body, and a Produce v9 frame carrying a real batch), segment bytes (valid batches
//! back to back, with a torn tail and zero padding), group log records in Kafka's
//! `__consumer_offsets` formats, and for the `dispatch` target every API and version
//! with a default body plus a CreateTopics-Produce-Fetch-ListOffsets session. The fuzzers (`fuzz/`) mutate them; `scripts/fuzz` runs
//! this first, so the seeds follow the code and nothing binary is committed.
//!
//!     cargo run --release --example fuzz_seeds -- <dir>

use std::path::Path;

use bytes::BytesMut;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, CreateTopicsRequest, FetchRequest, ListOffsetsRequest, ProduceRequest, RequestHeader,
    RequestKind, TopicName,
};
use kafka_protocol::protocol::{Encodable, StrBytes};
use shardlog::handlers::{default_request, REGISTRY};
use shardlog::protocol::batch::testing::{build_batch, BatchSpec};

fn str16(s: &str) -> Vec<u8> {
    let mut b = (s.len() as i16).to_be_bytes().to_vec();
    b.extend_from_slice(s.as_bytes());
    b
}

fn frame(payload: &[u8]) -> Vec<u8> {
    let mut f = (payload.len() as i32).to_be_bytes().to_vec();
    f.extend_from_slice(payload);
    f
}

/// Request header v1 (api key, version, correlation id, client id), then v2's empty
/// tagged fields when `flexible`.
fn header(api: i16, version: i16, flexible: bool) -> Vec<u8> {
    let mut h = api.to_be_bytes().to_vec();
    h.extend_from_slice(&version.to_be_bytes());
    h.extend_from_slice(&7i32.to_be_bytes());
    h.extend(str16("seed"));
    if flexible {
        h.push(0);
    }
    h
}

fn write(dir: &Path, target: &str, name: &str, bytes: &[u8]) {
    let d = dir.join(target);
    std::fs::create_dir_all(&d).expect("create corpus dir");
    std::fs::write(d.join(name), bytes).expect("write seed");
}

fn main() {
    let dir = std::env::args().nth(1).expect("usage: fuzz_seeds <dir>");
    let dir = Path::new(&dir);

    for (api, versions) in REGISTRY {
        let key = *api as i16;
        for v in versions.min..=versions.max {
            for flexible in [false, true] {
                let f = frame(&header(key, v, flexible));
                write(dir, "frames", &format!("api{key}-v{v}-{}", u8::from(flexible)), &f);
            }
        }
    }
    let batch = build_batch(&BatchSpec { records: 3, value_len: 20, ..Default::default() });
    // Produce v9 (flexible): transactional id null, acks -1, timeout, one topic, one
    // partition, the batch as compact bytes.
    let mut produce = header(0, 9, true);
    produce.push(0); // transactional_id: null compact string
    produce.extend_from_slice(&(-1i16).to_be_bytes());
    produce.extend_from_slice(&30_000i32.to_be_bytes());
    produce.push(2); // one topic
    produce.push(2); // compact string "t"
    produce.push(b't');
    produce.push(2); // one partition
    produce.extend_from_slice(&0i32.to_be_bytes());
    let mut n = batch.len() as u64 + 1;
    while n >= 0x80 {
        produce.push((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    produce.push(n as u8);
    produce.extend_from_slice(&batch);
    produce.extend_from_slice(&[0, 0, 0]); // tagged fields: partition, topic, request
    write(dir, "frames", "produce-v9-batch", &frame(&produce));

    let mut segment = vec![0u8]; // first byte: bytes after the slice
    for (i, records) in [1usize, 5, 2].into_iter().enumerate() {
        let b = build_batch(&BatchSpec {
            base_offset: i as i64 * 10,
            records,
            value_len: 16,
            producer_id: 5,
            ..Default::default()
        });
        segment.extend_from_slice(&b);
    }
    write(dir, "batches", "three-batches", &segment);
    let mut torn = segment.clone();
    torn.truncate(segment.len() - 7);
    write(dir, "batches", "torn-tail", &torn);
    let mut padded = segment.clone();
    padded.extend(std::iter::repeat_n(0u8, 100));
    write(dir, "batches", "zero-padding", &padded);
    write(dir, "batches", "one-batch", &batch);

    // Offset commit: key v1 (group, topic, partition), value v3 (offset, leader epoch,
    // metadata, commit timestamp).
    let mut key = 1i16.to_be_bytes().to_vec();
    key.extend(str16("group"));
    key.extend(str16("topic"));
    key.extend_from_slice(&3i32.to_be_bytes());
    let mut value = 3i16.to_be_bytes().to_vec();
    value.extend_from_slice(&42i64.to_be_bytes());
    value.extend_from_slice(&(-1i32).to_be_bytes());
    value.extend(str16(""));
    value.extend_from_slice(&1_700_000_000_000i64.to_be_bytes());
    let mut commit = vec![key.len() as u8];
    commit.extend(&key);
    commit.extend(&value);
    write(dir, "group_records", "offset-commit", &commit);
    // Group metadata key v2 (group) with an empty value; and its tombstone.
    let mut gkey = 2i16.to_be_bytes().to_vec();
    gkey.extend(str16("group"));
    let mut meta = vec![gkey.len() as u8];
    meta.extend(&gkey);
    meta.extend_from_slice(&3i16.to_be_bytes());
    write(dir, "group_records", "group-metadata", &meta);
    let mut tomb = vec![gkey.len() as u8];
    tomb.extend(&gkey);
    tomb.push(0x80);
    write(dir, "group_records", "group-tombstone", &tomb);

    dispatch_seeds(dir);
}

/// A whole request frame: `body` encoded at `version` behind the header version the
/// API uses at that version.
fn request_frame(api: ApiKey, version: i16, body: &RequestKind) -> Vec<u8> {
    let mut buf = BytesMut::new();
    RequestHeader::default()
        .with_request_api_key(api as i16)
        .with_request_api_version(version)
        .with_correlation_id(7)
        .with_client_id(Some(StrBytes::from_static_str("seed")))
        .encode(&mut buf, api.request_header_version(version))
        .expect("header encodes");
    body.encode(&mut buf, version).expect("body encodes");
    frame(&buf)
}

/// Seeds of the `dispatch` target: every advertised API and version with a default
/// body (it decodes, so the handler runs), and a short session: CreateTopics "t" of 2
/// partitions, a Produce of one batch, a Fetch and a ListOffsets of it.
fn dispatch_seeds(dir: &Path) {
    for (api, versions) in REGISTRY {
        let body = default_request(*api).expect("every registered API has a request");
        for v in versions.min..=versions.max {
            let f = request_frame(*api, v, &body);
            write(dir, "dispatch", &format!("default-api{}-v{v}", *api as i16), &f);
        }
    }
    let topic = || TopicName(StrBytes::from_static_str("t"));
    let create = CreateTopicsRequest::default().with_topics(vec![CreatableTopic::default()
        .with_name(topic())
        .with_num_partitions(2)
        .with_replication_factor(1)]);
    let batch = build_batch(&BatchSpec { records: 3, value_len: 20, ..Default::default() });
    let produce =
        ProduceRequest::default().with_acks(-1).with_timeout_ms(1000).with_topic_data(vec![
            TopicProduceData::default().with_name(topic()).with_partition_data(vec![
                PartitionProduceData::default().with_index(0).with_records(Some(batch.into())),
            ]),
        ]);
    let fetch =
        FetchRequest::default().with_max_wait_ms(10).with_max_bytes(1 << 20).with_topics(vec![
            FetchTopic::default().with_topic(topic()).with_partitions(vec![
                FetchPartition::default().with_partition(0).with_partition_max_bytes(1 << 20),
            ]),
        ]);
    let list = ListOffsetsRequest::default().with_topics(vec![ListOffsetsTopic::default()
        .with_name(topic())
        .with_partitions(vec![ListOffsetsPartition::default().with_timestamp(-1)])]);
    let mut session = request_frame(ApiKey::CreateTopics, 7, &RequestKind::CreateTopics(create));
    session.extend(request_frame(ApiKey::Produce, 9, &RequestKind::Produce(produce)));
    session.extend(request_frame(ApiKey::Fetch, 12, &RequestKind::Fetch(fetch)));
    session.extend(request_frame(ApiKey::ListOffsets, 7, &RequestKind::ListOffsets(list)));
    write(dir, "dispatch", "create-produce-fetch-list", &session);
}

//! Kafka wire codec cost on the data path: decoding a 1 MiB Produce request and
//! encoding a 1 MiB Fetch response (kafka-protocol, as vendored by shardlog). Record
//! bytes are `Bytes` slices in both directions, so this is the framing overhead.
//!
//! Run: `cargo bench --bench protocol`

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{FetchResponse, ProduceRequest, TopicName};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use shardlog::protocol::batch::testing::{build_batch, BatchSpec};

const MIB: usize = 1 << 20;

/// `partitions` partitions' worth of record batches (16 x 1000 B records each batch),
/// about 1 MiB in total.
fn partition_records(partitions: usize) -> Vec<Bytes> {
    let per = MIB / partitions;
    (0..partitions)
        .map(|_| {
            let mut v = Vec::with_capacity(per + 20_000);
            while v.len() < per {
                v.extend_from_slice(&build_batch(&BatchSpec {
                    records: 16,
                    value_len: 1000,
                    ..Default::default()
                }));
            }
            Bytes::from(v)
        })
        .collect()
}

fn produce_decode(c: &mut Criterion) {
    let mut g = c.benchmark_group("produce_request_decode");
    g.measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(500));
    for (version, partitions) in [(9i16, 4usize), (9, 64), (12, 4)] {
        let req =
            ProduceRequest::default().with_acks(-1).with_timeout_ms(30_000).with_topic_data(vec![
                TopicProduceData::default()
                    .with_name(TopicName(StrBytes::from_static_str("bench")))
                    .with_partition_data(
                        partition_records(partitions)
                            .into_iter()
                            .enumerate()
                            .map(|(i, r)| {
                                PartitionProduceData::default()
                                    .with_index(i as i32)
                                    .with_records(Some(r))
                            })
                            .collect(),
                    ),
            ]);
        let mut buf = BytesMut::new();
        req.encode(&mut buf, version).unwrap();
        let wire = buf.freeze();
        g.throughput(Throughput::Bytes(wire.len() as u64));
        g.bench_with_input(
            BenchmarkId::new(format!("v{version}"), format!("{partitions}p")),
            &wire,
            |b, wire| {
                b.iter(|| {
                    let mut w = wire.clone();
                    let r = ProduceRequest::decode(&mut w, version).unwrap();
                    black_box(r.topic_data.len())
                })
            },
        );
    }
    g.finish();
}

fn fetch_encode(c: &mut Criterion) {
    let mut g = c.benchmark_group("fetch_response_encode");
    g.measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(500));
    for (version, partitions) in [(11i16, 4usize), (12, 4), (12, 64)] {
        let records = partition_records(partitions);
        let total: usize = records.iter().map(|r| r.len()).sum();
        g.throughput(Throughput::Bytes(total as u64));
        g.bench_with_input(
            BenchmarkId::new(format!("v{version}"), format!("{partitions}p")),
            &records,
            |b, records| {
                let mut out = BytesMut::with_capacity(total + 64 * 1024);
                b.iter(|| {
                    // Build (as the handler does, cloning Bytes handles) and encode.
                    let parts = records
                        .iter()
                        .enumerate()
                        .map(|(i, r)| {
                            PartitionData::default()
                                .with_partition_index(i as i32)
                                .with_high_watermark(1_000_000)
                                .with_last_stable_offset(1_000_000)
                                .with_log_start_offset(0)
                                .with_records(Some(r.clone()))
                        })
                        .collect();
                    let resp = FetchResponse::default().with_responses(vec![
                        FetchableTopicResponse::default()
                            .with_topic(TopicName(StrBytes::from_static_str("bench")))
                            .with_partitions(parts),
                    ]);
                    out.clear();
                    resp.encode(&mut out, version).unwrap();
                    black_box(out.len())
                })
            },
        );
    }
    g.finish();
}

criterion_group!(benches, produce_decode, fetch_encode);
criterion_main!(benches);

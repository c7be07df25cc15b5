//! Record-batch validation and offset assignment on the produce path, per MiB of
//! record data: header parse + CRC32C (what the Produce handler does to every batch),
//! and rewriting base offsets (what the partition log does on append).
//!
//! Run: `cargo bench --bench batch`

use std::time::Duration;

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use shardlog::protocol::batch::testing::{build_batch, BatchSpec};
use shardlog::protocol::batch::{set_base_offset, verify_crc, BatchIter, RecordBatchHeader};

const MIB: usize = 1 << 20;

/// About 1 MiB of concatenated batches, each `records` records of `value_len` bytes
/// (the shape of a Produce request's `records` field).
fn records_mib(records: usize, value_len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(MIB + 64 * 1024);
    let mut seq = 0i32;
    while out.len() < MIB {
        out.extend_from_slice(&build_batch(&BatchSpec {
            records,
            value_len,
            producer_id: 1000,
            producer_epoch: 0,
            base_sequence: seq,
            ..Default::default()
        }));
        seq += records as i32;
    }
    out
}

fn validate(c: &mut Criterion) {
    let mut g = c.benchmark_group("batch_validate");
    g.measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(500));
    // (records per batch, value bytes): librdkafka/Java default 16 KiB batches of 1 KiB
    // records, 100 B records, and one big 1 MiB batch.
    for (records, value_len) in [(16usize, 1000usize), (160, 100), (1000, 1024)] {
        let buf = records_mib(records, value_len);
        g.throughput(Throughput::Bytes(buf.len() as u64));
        let id = format!("{records}x{value_len}B");
        g.bench_with_input(BenchmarkId::new("header+crc32c", &id), &buf, |b, buf| {
            b.iter(|| {
                let mut n = 0usize;
                for item in BatchIter::new(black_box(buf)) {
                    let (at, h) = item.unwrap();
                    assert!(verify_crc(&buf[at..at + h.total_size()]));
                    n += h.records_count as usize;
                }
                n
            })
        });
        g.bench_with_input(BenchmarkId::new("header_only", &id), &buf, |b, buf| {
            b.iter(|| {
                let mut n = 0usize;
                for item in BatchIter::new(black_box(buf)) {
                    n += item.unwrap().1.records_count as usize;
                }
                n
            })
        });
    }
    g.finish();
}

fn assign_offsets(c: &mut Criterion) {
    let mut g = c.benchmark_group("offset_assign");
    g.measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(500));
    let buf = records_mib(16, 1000);
    let batches: Vec<(usize, usize)> =
        BatchIter::new(&buf).map(|r| r.unwrap()).map(|(at, h)| (at, h.total_size())).collect();
    g.throughput(Throughput::Elements(batches.len() as u64));
    g.bench_function("set_base_offset_per_batch", |b| {
        let mut work = buf.clone();
        let mut next = 0i64;
        b.iter(|| {
            for &(at, size) in &batches {
                let slice = &mut work[at..at + size];
                let h = RecordBatchHeader::parse_header(slice).unwrap();
                set_base_offset(slice, next);
                next += h.records_count as i64;
            }
            black_box(next)
        })
    });
    g.finish();
}

criterion_group!(benches, validate, assign_offsets);
criterion_main!(benches);

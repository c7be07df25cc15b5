//! The shard batch cache (`shardlog::log::cache::ShardCache`), no I/O: inserting appended
//! batches through the append arena under a full budget (every insert evicts, LRU over
//! 4 and 64 partitions), and reading 1 MiB fetches back (zero-copy joined `Bytes`).
//!
//! Run: `cargo bench --bench cache`.

use std::time::Duration;

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use shardlog::log::cache::{CachedBatch, ShardCache};
use shardlog::protocol::batch::testing::{build_batch, BatchSpec};

/// A 16 x 1000-byte-record batch (~16 KiB, what the Java producer sends by default).
fn batch() -> Bytes {
    Bytes::from(build_batch(&BatchSpec { records: 16, value_len: 1000, ..Default::default() }))
}

fn insert(c: &mut Criterion) {
    let src = batch();
    let mut g = c.benchmark_group("cache_insert");
    g.measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(500));
    g.throughput(Throughput::Bytes(src.len() as u64));
    for partitions in [4usize, 64] {
        g.bench_with_input(BenchmarkId::new("full_budget", partitions), &partitions, |b, &n| {
            let mut cache = ShardCache::new(64 << 20, usize::MAX);
            let ids: Vec<_> = (0..n).map(|_| cache.register()).collect();
            let mut next = vec![0i64; n];
            let mut i = 0usize;
            b.iter(|| {
                let k = i % n;
                i += 1;
                let (data, alloc) = cache.copy_in(ids[k], &src, |_| {});
                let base = next[k];
                next[k] += 16;
                cache.insert(
                    ids[k],
                    CachedBatch { base_offset: base, last_offset: base + 15, data, alloc },
                );
            })
        });
    }
    g.finish();
}

fn read(c: &mut Criterion) {
    let src = batch();
    let mut cache = ShardCache::new(256 << 20, usize::MAX);
    let id = cache.register();
    let n = 8192i64;
    for k in 0..n {
        let (data, alloc) = cache.copy_in(id, &src, |_| {});
        let b = CachedBatch { base_offset: k * 16, last_offset: k * 16 + 15, data, alloc };
        cache.insert(id, b);
    }
    let mut g = c.benchmark_group("cache_read");
    g.measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(500));
    g.throughput(Throughput::Bytes(1 << 20));
    g.bench_function("fetch_1MiB", |b| {
        let mut off = 0i64;
        b.iter(|| {
            let r = cache.read(id, off, 1 << 20, i64::MAX).unwrap();
            off = (off + 64 * 16) % (n * 16 - 64 * 16);
            r
        })
    });
    g.finish();
}

criterion_group!(benches, insert, read);
criterion_main!(benches);

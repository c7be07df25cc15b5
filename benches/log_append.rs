//! Segment append per batch: `PartitionLog::append` (offset assignment, idempotence
//! check, tail cache, DMA write) on a glommio executor, FlushPolicy::Never, on the
//! disk of the target dir (O_DIRECT needs a real filesystem, not tmpfs).
//!
//! Each criterion sample opens a fresh log in its own executor and times `iters`
//! appends (`iter_custom`), either one at a time (await each) or pipelined (a window
//! of concurrent appends, as the broker has when several produce requests are queued).
//!
//! Run: `cargo bench --bench log_append`. Set SHARDLOG_BENCH_DIR to choose the disk.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use shardlog::config::FlushPolicy;
use shardlog::log::{LogConfig, PartitionLog};
use shardlog::protocol::batch::testing::{build_batch, BatchSpec};

fn bench_dir() -> PathBuf {
    std::env::var_os("SHARDLOG_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")))
}

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 256 << 20,
        index_interval_bytes: 4096,
        flush: FlushPolicy::Never,
        flush_interval_ms: 1000,
        cache_bytes: 1 << 20,
        shard_cache: None,
        log_append_time: false,
        zero_fill_max_write: 256 << 10,
        recovery_point_bytes: 0,
        write_from_arena: true,
        segment_ms: i64::MAX,
    }
}

/// Times `iters` appends of `batch` with at most `window` in flight.
fn run(iters: u64, batch: Bytes, window: usize) -> Duration {
    let base = bench_dir();
    std::fs::create_dir_all(&base).unwrap();
    let tmp = tempfile::tempdir_in(&base).unwrap();
    let dir = tmp.path().join("bench-0");
    let elapsed = glommio::LocalExecutorBuilder::default()
        .spawn(move || async move {
            let log = PartitionLog::open(dir, config()).await.unwrap();
            let start = Instant::now();
            let mut done = 0u64;
            let mut ts = 1_700_000_000_000i64;
            while done < iters {
                let n = (iters - done).min(window as u64);
                let futs: Vec<_> = (0..n)
                    .map(|_| {
                        ts += 1;
                        let log = log.clone();
                        let b = batch.clone();
                        async move { log.append(b, ts).await.unwrap() }
                    })
                    .collect();
                futures_util::future::join_all(futs).await;
                done += n;
            }
            let elapsed = start.elapsed();
            log.close().await.unwrap();
            elapsed
        })
        .unwrap()
        .join()
        .unwrap();
    drop(tmp);
    elapsed
}

fn append(c: &mut Criterion) {
    let mut g = c.benchmark_group("segment_append");
    g.measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(500))
        .sample_size(20);
    for (records, value_len) in [(16usize, 1000usize), (1, 100)] {
        let batch =
            Bytes::from(build_batch(&BatchSpec { records, value_len, ..Default::default() }));
        g.throughput(Throughput::Bytes(batch.len() as u64));
        for window in [1usize, 32] {
            let id = BenchmarkId::new(format!("{}B_batch", batch.len()), format!("window{window}"));
            g.bench_with_input(id, &batch, |b, batch| {
                b.iter_custom(|iters| run(iters, batch.clone(), window))
            });
        }
    }
    g.finish();
}

criterion_group!(benches, append);
criterion_main!(benches);

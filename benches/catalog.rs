//! Partition -> owning shard lookup (the shard-table role of `metadata::Catalog`), done
//! once per partition of every Produce/Fetch request, on a catalog of 1,000 partitions.
//!
//! Run: `cargo bench --bench catalog`

use std::collections::BTreeMap;
use std::time::Duration;

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use shardlog::metadata::Catalog;

fn owner_lookup(c: &mut Criterion) {
    let mut g = c.benchmark_group("shard_table");
    g.measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(500));

    // 1,000 partitions: one topic of 1,000, and 100 topics of 10 (name lookup dominates).
    let mut one = Catalog::default();
    one.create_topic("bench-topic", 1000, BTreeMap::new(), 2).unwrap();
    let mut many = Catalog::default();
    let names: Vec<String> = (0..100).map(|i| format!("topic-{i:03}")).collect();
    for n in &names {
        many.create_topic(n, 10, BTreeMap::new(), 2).unwrap();
    }

    g.throughput(Throughput::Elements(1000));
    g.bench_function("owner/1_topic_x_1000p", |b| {
        b.iter(|| {
            let mut acc = 0usize;
            for p in 0..1000 {
                acc += one.owner(black_box("bench-topic"), p).unwrap();
            }
            acc
        })
    });
    g.bench_function("owner/100_topics_x_10p", |b| {
        b.iter(|| {
            let mut acc = 0usize;
            for n in &names {
                for p in 0..10 {
                    acc += many.owner(black_box(n.as_str()), p).unwrap();
                }
            }
            acc
        })
    });
    g.finish();
}

criterion_group!(benches, owner_lookup);
criterion_main!(benches);

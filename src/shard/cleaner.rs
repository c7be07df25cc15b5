//! The log cleaner of a shard: every `--log-cleaner-backoff-ms` it runs a round
//! ([`pass`]) over the partitions it owns whose topic's `cleanup.policy` includes
//! `compact` and over its group offsets logs (compacted like Kafka's
//! `__consumer_offsets`, so that start-up replay is bounded by the live groups and
//! offsets, not by the commit history): it compacts
//! ([`crate::log::PartitionLog::compact`]) the filthiest eligible log, then the next,
//! until none is eligible ([`crate::log::cleaner::filthiest`]). It runs in its own
//! glommio task queue with a small share of the core and `Latency::NotImportant`, so
//! requests go first; reads and writes are paced by
//! `--log-cleaner-io-max-bytes-per-second`.

use std::rc::Rc;
use std::time::Duration;

use glommio::{Latency, Shares};

use super::state::Shard;
use crate::broker_config::BrokerDefaults;
use crate::clock::now_ms;
use crate::log::cleaner::{filthiest, CleanerLimits, CompactionPolicy};
use crate::log::PartitionLog;
use crate::shutdown::Shutdown;
use crate::topic_config::EffectiveTopicConfig;

/// The cleaner's share of the core against the default queue's 1000.
const CLEANER_SHARES: usize = 100;

/// Starts the cleaner of this shard (unless `--log-cleaner-enable false`).
pub fn spawn(shard: Rc<Shard>, stop: Shutdown) {
    if !shard.config.log_cleaner_enable {
        return;
    }
    let tq = glommio::executor().create_task_queue(
        Shares::Static(CLEANER_SHARES),
        Latency::NotImportant,
        "log-cleaner",
    );
    match glommio::spawn_local_into(run(shard, stop), tq) {
        Ok(t) => {
            t.detach();
        }
        Err(e) => tracing::error!(error = %e, "starting the log cleaner failed"),
    }
}

/// Runs cleaner passes until shutdown.
pub async fn run(shard: Rc<Shard>, stop: Shutdown) {
    while !stop.is_requested() {
        // `log.cleaner.backoff.ms` may change dynamically: read it for every sleep.
        let ms = {
            let catalog = shard.catalog();
            let broker = BrokerDefaults::of(&shard.config, &catalog);
            broker.number("log.cleaner.backoff.ms", shard.config.log_cleaner_backoff_ms)
        };
        let every = Duration::from_millis(ms.max(1));
        futures_lite::future::or(glommio::timer::sleep(every), stop.clone().requested()).await;
        if stop.is_requested() {
            return;
        }
        pass(&shard).await;
    }
}

/// The offsets log's policy: Kafka's defaults for `__consumer_offsets`
/// (`cleanup.policy=compact`, tombstones kept a day).
const OFFSETS_POLICY: CompactionPolicy = CompactionPolicy {
    min_cleanable_dirty_ratio: 0.5,
    min_compaction_lag_ms: 0,
    max_compaction_lag_ms: i64::MAX,
    delete_retention_ms: 86_400_000,
};

/// The policy the offsets logs are cleaned with: the `__consumer_offsets` topic's
/// configs (compact) over the broker's, so a dynamic `log.cleaner.delete.retention.ms`
/// (or ratio, or lag) applies to them at once, as in Kafka, and as DescribeConfigs of
/// `__consumer_offsets` shows; [`OFFSETS_POLICY`] should the catalog lack the topic.
fn offsets_policy(
    catalog: &crate::metadata::Catalog,
    broker: &BrokerDefaults<'_>,
) -> CompactionPolicy {
    catalog
        .topic(crate::metadata::OFFSETS_TOPIC)
        .and_then(|meta| EffectiveTopicConfig::resolve(&meta.configs, broker).compaction)
        .unwrap_or(OFFSETS_POLICY)
}

/// A compacted log the shard owns, as one round of the cleaner sees it.
struct Compacted {
    log: Rc<PartitionLog>,
    policy: CompactionPolicy,
    topic: String,
    partition: i32,
}

/// One round over the compacted partitions, offsets logs and transaction state logs
/// this shard owns, as a
/// Kafka cleaner thread (`LogCleaner.CleanerThread`) works through
/// `LogCleanerManager.grabFilthiestCompactedLog`: weigh every log, clean the filthiest
/// ([`crate::log::cleaner::filthiest`]), weigh them all again, until none is eligible.
/// A log whose pass failed, did nothing, or did not move its checkpoint (a pass for the
/// delete horizon alone, or a damaged segment) is not taken again in the same round.
pub async fn pass(shard: &Shard) {
    let catalog = shard.catalog();
    let broker = BrokerDefaults::of(&shard.config, &catalog);
    let limits = CleanerLimits {
        map_bytes: broker
            .number("log.cleaner.dedupe.buffer.size", shard.config.log_cleaner_dedupe_buffer_size),
        io_bytes_per_sec: broker.number(
            "log.cleaner.io.max.bytes.per.second",
            shard.config.log_cleaner_io_max_bytes_per_second,
        ),
    };
    let mut logs = Vec::new();
    for ((topic, partition), owned) in shard.owned_logs() {
        let Some(meta) = catalog.topic(&topic) else { continue };
        let resolved = EffectiveTopicConfig::resolve(&meta.configs, &broker);
        if let Some(policy) = resolved.compaction {
            logs.push(Compacted { log: owned.log.clone(), policy, topic, partition });
        }
    }
    let offsets_policy = offsets_policy(&catalog, &broker);
    for (p, log) in shard.groups.open_logs() {
        let topic = crate::metadata::OFFSETS_TOPIC.to_string();
        logs.push(Compacted { log, policy: offsets_policy, topic, partition: p as i32 });
    }
    // `__transaction_state` is compacted too (Kafka's defaults for it, as the offsets
    // logs' with no topic of its own in the catalog): a transactional id's last record
    // is all its replay needs.
    for (p, log) in shard.txns.open_logs() {
        let topic = "__transaction_state".to_string();
        logs.push(Compacted { log, policy: OFFSETS_POLICY, topic, partition: p as i32 });
    }
    clean_filthiest_first(&logs, &limits).await;
}

/// The rounds of [`pass`] over `logs`; returns the indexes of the logs cleaned, in order.
async fn clean_filthiest_first(logs: &[Compacted], limits: &CleanerLimits) -> Vec<usize> {
    let mut cleaned = Vec::new();
    let mut done = vec![false; logs.len()];
    loop {
        let now = now_ms();
        let mut weighed = Vec::with_capacity(logs.len());
        for (c, done) in logs.iter().zip(&mut done) {
            if *done || c.log.is_uncleanable() {
                weighed.push(None);
                continue;
            }
            match c.log.to_clean(&c.policy, now).await {
                Ok(w) => weighed.push(Some(w)),
                Err(e) => {
                    let (topic, partition) = (c.topic.as_str(), c.partition);
                    tracing::warn!(topic, partition, error = %e, "weighing a log for the cleaner failed");
                    *done = true;
                    weighed.push(None);
                }
            }
        }
        let Some(i) = filthiest(&weighed) else { return cleaned };
        cleaned.push(i);
        let c = &logs[i];
        let moved = clean(&c.log, &c.policy, limits, &c.topic, c.partition).await;
        if !moved {
            done[i] = true;
        }
    }
}

/// One pass over `log`; true when it moved the log's checkpoint.
async fn clean(
    log: &PartitionLog,
    policy: &CompactionPolicy,
    limits: &CleanerLimits,
    topic: &str,
    partition: i32,
) -> bool {
    match log.compact(policy, limits, now_ms(), false).await {
        Ok(Some(done)) => {
            tracing::info!(
                topic,
                partition,
                cleaned_from = done.cleaned_from,
                cleaned_up_to = done.cleaned_up_to,
                keys = done.keys,
                segments = done.segments_rewritten,
                records_removed = done.records_removed,
                bytes_before = done.bytes_before,
                bytes_after = done.bytes_after,
                delete_horizon_ms = done.delete_horizon_ms,
                "compacted"
            );
            done.cleaned_up_to > done.cleaned_from
        }
        Ok(None) => false,
        Err(e) => {
            // As Kafka's cleaner: a partition whose pass failed is not retried every
            // round (the same batch would fail again, at the same cost); it stays
            // uncleanable until it is opened again.
            log.mark_uncleanable();
            tracing::warn!(
                topic,
                partition,
                error = %e,
                "compaction pass failed; the partition is marked uncleanable until the broker restarts"
            );
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;

    use bytes::Bytes;
    use kafka_protocol::records::Compression;

    use super::*;
    use crate::config::FlushPolicy;
    use crate::log::cleaner::LogToClean;
    use crate::log::LogConfig;

    /// The offsets logs follow the broker's dynamic cleaner configs, as Kafka's
    /// `__consumer_offsets` does; with none set, Kafka's defaults.
    #[test]
    fn offsets_logs_take_the_brokers_dynamic_cleaner_configs() {
        use clap::Parser;
        let dir = tempfile::tempdir().unwrap();
        let catalog = crate::metadata::Catalog::init(dir.path()).unwrap();
        let config = crate::config::Config::parse_from(["shardlog"]);
        let none = std::collections::BTreeMap::new();
        let broker = BrokerDefaults { config: &config, node: &none, cluster: &none };
        let policy = offsets_policy(&catalog, &broker);
        assert_eq!(
            (policy.delete_retention_ms, policy.min_cleanable_dirty_ratio),
            (86_400_000, 0.5)
        );
        let cluster: std::collections::BTreeMap<String, String> = [
            ("log.cleaner.delete.retention.ms", "1000"),
            ("log.cleaner.min.cleanable.ratio", "0.2"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let broker = BrokerDefaults { config: &config, node: &none, cluster: &cluster };
        let policy = offsets_policy(&catalog, &broker);
        assert_eq!((policy.delete_retention_ms, policy.min_cleanable_dirty_ratio), (1000, 0.2));
    }

    /// One batch of `n` records with the distinct keys `<prefix>0..`.
    fn keys(prefix: &str, n: usize) -> Bytes {
        let records = (0..n).map(|i| {
            let key = Bytes::from(format!("{prefix}{i}"));
            (Some(key), Some(Bytes::from(vec![b'v'; 100])), 1_000 + i as i64)
        });
        crate::protocol::records::encode_plain_batch(records, Compression::None).unwrap()
    }

    async fn open(dir: std::path::PathBuf) -> Rc<PartitionLog> {
        let cfg = LogConfig {
            segment_bytes: 1 << 30,
            index_interval_bytes: 4096,
            flush: FlushPolicy::Always,
            flush_interval_ms: 1000,
            cache_bytes: 1 << 20,
            shard_cache: None,
            log_append_time: false,
            zero_fill_max_write: 256 << 10,
            recovery_point_bytes: 0,
            write_from_arena: true,
            segment_ms: i64::MAX,
        };
        PartitionLog::open(dir, cfg).await.unwrap()
    }

    fn compacted(log: &Rc<PartitionLog>, partition: i32) -> Compacted {
        let policy =
            CompactionPolicy { min_cleanable_dirty_ratio: 0.1, ..CompactionPolicy::default() };
        Compacted { log: log.clone(), policy, topic: "t".into(), partition }
    }

    /// Runs `test` on a new glommio executor with a fresh temporary directory.
    fn on_executor<F, Fut>(test: F)
    where
        F: FnOnce(std::path::PathBuf) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + 'static,
    {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_path_buf();
        glommio::LocalExecutorBuilder::default().spawn(move || test(root)).unwrap().join().unwrap();
    }

    #[test]
    fn the_dirtier_log_is_cleaned_first_then_the_other_then_none() {
        on_executor(|root| async move {
            // Partition 0: half cleaned (ratio about 0.5); partition 1: all dirty (1.0).
            let half = open(root.join("t-0")).await;
            half.append(keys("a", 20), 0).await.unwrap();
            half.roll_active().await.unwrap();
            let policy = compacted(&half, 0).policy;
            let limits = CleanerLimits::default();
            half.compact(&policy, &limits, now_ms(), true).await.unwrap().unwrap();
            half.append(keys("b", 20), 0).await.unwrap();
            half.roll_active().await.unwrap();
            let all = open(root.join("t-1")).await;
            all.append(keys("a", 20), 0).await.unwrap();
            all.roll_active().await.unwrap();

            let logs = [compacted(&half, 0), compacted(&all, 1)];
            let r0 = half.to_clean(&policy, now_ms()).await.unwrap().cleanable_ratio();
            let r1 = all.to_clean(&policy, now_ms()).await.unwrap().cleanable_ratio();
            assert!(0.4 < r0 && r0 < 0.6 && r1 == 1.0, "{r0} {r1}");
            assert_eq!(clean_filthiest_first(&logs, &limits).await, vec![1, 0]);
            // Both are clean now: the next round cleans nothing.
            assert_eq!(clean_filthiest_first(&logs, &limits).await, Vec::<usize>::new());
            half.close().await.unwrap();
            all.close().await.unwrap();
        });
    }

    /// A log whose pass fails (here a gzip batch whose records section is not gzip, CRC
    /// valid) is marked uncleanable and not taken again, as Kafka's cleaner does; the
    /// other log is still cleaned.
    #[test]
    fn a_log_whose_pass_fails_is_not_taken_again() {
        on_executor(|root| async move {
            let records = (0..5).map(|i| {
                (Some(Bytes::from(format!("k{i}"))), Some(Bytes::from_static(b"v")), 1_000)
            });
            let gz = crate::protocol::records::encode_plain_batch(records, Compression::Gzip);
            let mut bad = gz.unwrap().to_vec();
            let n = bad.len();
            bad[crate::protocol::batch::RECORD_BATCH_OVERHEAD..n].fill(0x55);
            let crc = crate::protocol::batch::compute_crc(&bad);
            bad[17..21].copy_from_slice(&crc.to_be_bytes());
            let broken = open(root.join("t-0")).await;
            broken.append(Bytes::from(bad), 0).await.unwrap();
            broken.append(keys("a", 5), 0).await.unwrap();
            broken.roll_active().await.unwrap();
            let fine = open(root.join("t-1")).await;
            fine.append(keys("a", 20), 0).await.unwrap();
            fine.append(keys("a", 20), 0).await.unwrap();
            fine.roll_active().await.unwrap();

            let logs = [compacted(&broken, 0), compacted(&fine, 1)];
            let limits = CleanerLimits::default();
            assert!(!broken.is_uncleanable());
            let cleaned = clean_filthiest_first(&logs, &limits).await;
            assert_eq!(cleaned.len(), 2, "{cleaned:?}");
            assert!(broken.is_uncleanable() && !fine.is_uncleanable());
            // The next rounds leave the broken log alone (the fine one is clean).
            assert_eq!(clean_filthiest_first(&logs, &limits).await, Vec::<usize>::new());
            broken.append(keys("b", 5), 0).await.unwrap();
            broken.roll_active().await.unwrap();
            assert_eq!(clean_filthiest_first(&logs, &limits).await, Vec::<usize>::new());
            broken.close().await.unwrap();
            fine.close().await.unwrap();
        });
    }

    fn weighed(dirty_bytes: u64, delay_ms: i64, horizon_due: bool) -> Option<LogToClean> {
        Some(LogToClean {
            clean_bytes: 100 - dirty_bytes,
            dirty_bytes,
            compaction_delay_ms: delay_ms,
            delete_horizon_due: horizon_due,
            min_cleanable_ratio: 0.5,
        })
    }

    #[test]
    fn filthiest_ranks_by_ratio_and_takes_a_due_delete_horizon_only_when_none_is_dirty_enough() {
        // Past max.compaction.lag.ms makes a log eligible but does not put it first.
        let logs = [weighed(10, 5, false), weighed(80, 0, false), weighed(90, 0, true), None];
        assert_eq!(filthiest(&logs), Some(2));
        assert_eq!(filthiest(&logs[..2]), Some(1));
        assert_eq!(filthiest(&[weighed(10, 5, false), weighed(40, 0, false)]), Some(0));
        // A ratio equal to min.cleanable.dirty.ratio is not enough (Kafka: strictly above).
        assert_eq!(filthiest(&[weighed(50, 0, false)]), None);
        // Overdue but nothing cleanable: not eligible.
        assert_eq!(filthiest(&[weighed(0, 5, false)]), None);
        // Nothing dirty enough: the filthiest of the logs whose delete horizon is due.
        let horizon = [weighed(0, 0, true), weighed(30, 0, false), weighed(20, 0, true)];
        assert_eq!(filthiest(&horizon), Some(2));
    }
}

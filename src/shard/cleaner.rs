//! The log cleaner of a shard: every `--log-cleaner-backoff-ms` it runs a compaction
//! pass ([`crate::log::PartitionLog::compact`]) over each partition it owns whose topic's
//! `cleanup.policy` includes `compact`, then over its group offsets logs (compacted like
//! Kafka's `__consumer_offsets`, so that start-up replay is bounded by the live groups
//! and offsets, not by the commit history). It runs in its own glommio task queue with
//! a small share of the core and `Latency::NotImportant`, so requests go first; reads
//! and writes are paced by `--log-cleaner-io-max-bytes-per-second`.

use std::rc::Rc;
use std::time::Duration;

use glommio::{Latency, Shares};

use super::state::Shard;
use crate::broker_config::BrokerDefaults;
use crate::clock::now_ms;
use crate::log::cleaner::{CleanerLimits, CompactionPolicy};
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

/// One pass over every compacted partition and offsets log this shard owns.
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
    for ((topic, partition), owned) in shard.owned_logs() {
        let Some(meta) = catalog.topic(&topic) else { continue };
        let resolved = EffectiveTopicConfig::resolve(&meta.configs, &broker);
        if let Some(policy) = resolved.compaction {
            clean(&owned.log, &policy, &limits, &topic, partition).await;
        }
    }
    for (p, log) in shard.groups.open_logs() {
        clean(&log, &OFFSETS_POLICY, &limits, crate::metadata::OFFSETS_TOPIC, p as i32).await;
    }
}

async fn clean(
    log: &PartitionLog,
    policy: &CompactionPolicy,
    limits: &CleanerLimits,
    topic: &str,
    partition: i32,
) {
    match log.compact(policy, limits, now_ms(), false).await {
        Ok(Some(done)) => tracing::info!(
            topic,
            partition,
            cleaned_up_to = done.cleaned_up_to,
            keys = done.keys,
            segments = done.segments_rewritten,
            records_removed = done.records_removed,
            bytes_before = done.bytes_before,
            bytes_after = done.bytes_after,
            "compacted"
        ),
        Ok(None) => {}
        Err(e) => tracing::warn!(topic, partition, error = %e, "compaction pass failed"),
    }
}

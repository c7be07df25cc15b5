//! The retention task of a shard: every `--log-retention-check-interval-ms` it applies
//! each owned partition's `retention.ms` / `retention.bytes` (its topic's configs, else
//! the broker defaults) through [`crate::log::PartitionLog::enforce_retention`], on the core that
//! owns the log, between requests. Internal logs (the group offsets) are not touched.

use std::rc::Rc;
use std::time::Duration;

use super::state::Shard;
use crate::broker_config::BrokerDefaults;
use crate::clock::now_ms;
use crate::shutdown::Shutdown;
use crate::topic_config::EffectiveTopicConfig;

/// Runs retention passes until shutdown.
pub async fn run(shard: Rc<Shard>, stop: Shutdown) {
    let every = Duration::from_millis(shard.config.log_retention_check_interval_ms.max(1));
    while !stop.is_requested() {
        futures_lite::future::or(glommio::timer::sleep(every), stop.clone().requested()).await;
        if stop.is_requested() {
            return;
        }
        pass(&shard).await;
    }
}

/// One retention pass over every partition this shard owns.
pub async fn pass(shard: &Shard) {
    let catalog = shard.catalog();
    for ((topic, partition), owned) in shard.owned_logs() {
        let Some(meta) = catalog.topic(&topic) else { continue };
        let broker = BrokerDefaults::of(&shard.config, &catalog);
        let policy = EffectiveTopicConfig::resolve(&meta.configs, &broker).retention;
        match owned.log.enforce_retention(&policy, now_ms()).await {
            Ok(d) if d.segments > 0 => tracing::info!(
                topic = %topic,
                partition,
                segments = d.segments,
                bytes = d.bytes,
                log_start_offset = d.log_start_offset,
                "deleted segments past retention"
            ),
            Ok(_) => {}
            Err(e) => tracing::warn!(
                topic = %topic,
                partition,
                error = %e,
                "deleting segments past retention failed"
            ),
        }
    }
}

//! The producer-id expiration task of a shard (Kafka's `PeriodicProducerExpirationCheck`,
//! KIP-854): every `--producer-id-expiration-check-interval-ms` it makes each owned
//! partition forget the idempotent producers that have not written to it for
//! `producer.id.expiration.ms` (a dynamic broker config, else
//! `--producer-id-expiration-ms`), so that producer state (memory and snapshots) stays
//! bounded by the producers that are alive, not by every producer that ever wrote.
//!
//! Kafka does not drop a producer when the log start offset passes its batches
//! (KIP-360 keeps it so that a slow producer is not told UNKNOWN_PRODUCER_ID); only
//! this expiration forgets it, and so it is here.

use std::rc::Rc;
use std::time::Duration;

use super::state::Shard;
use crate::broker_config::BrokerDefaults;
use crate::clock::now_ms;
use crate::shutdown::Shutdown;

/// Runs expiration passes until shutdown.
pub async fn run(shard: Rc<Shard>, stop: Shutdown) {
    let every = Duration::from_millis(shard.config.producer_id_expiration_check_interval_ms.max(1));
    while !stop.is_requested() {
        futures_lite::future::or(glommio::timer::sleep(every), stop.clone().requested()).await;
        if stop.is_requested() {
            return;
        }
        pass(&shard, now_ms());
    }
}

/// One pass over every partition this shard owns at `now_ms` (ms since the epoch);
/// returns how many producers were forgotten.
pub fn pass(shard: &Shard, now_ms: i64) -> usize {
    let catalog = shard.catalog();
    let expiration_ms = BrokerDefaults::of(&shard.config, &catalog)
        .number("producer.id.expiration.ms", shard.config.producer_id_expiration_ms);
    let mut removed = 0;
    for ((topic, partition), owned) in shard.owned_logs() {
        let n = owned.log.remove_expired_producers(now_ms, expiration_ms);
        if n > 0 {
            tracing::debug!(topic = %topic, partition, producers = n, "expired idle producer ids");
        }
        removed += n;
    }
    removed
}

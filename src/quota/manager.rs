//! [`ShardQuotas`]: the quota rates one shard measures for its own connections, and
//! what a response owes to them (Kafka's `ClientQuotaManager` for produce and fetch,
//! `ClientRequestQuotaManager` for request time).
//!
//! Accounting is per shard: each shard enforces the whole quota on the traffic of the
//! connections it accepted, from its own copy of the catalog's quotas, without any
//! cross-core message. A client whose connections land on several shards can get up
//! to (shards x quota).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::time::{Duration, Instant};

use kafka_protocol::messages::ApiKey;

use super::entity::ClientQuotas;
use super::rate::{RateConfig, SampledRate};
use super::resolve::{resolve, MetricEntity, QuotaType};

/// A rate with no event for this long is dropped (Kafka's
/// `InactiveSensorExpirationTimeSeconds`, 1 hour), ms.
const INACTIVE_RATE_EXPIRY_MS: u64 = 3_600_000;

/// How often idle rates are looked for, ms.
const EXPIRY_CHECK_MS: u64 = 60_000;

/// What one request used, as the connection saw it.
#[derive(Debug, Clone)]
pub struct Usage {
    /// The principal's name (`ANONYMOUS` unless SASL).
    pub user: std::rc::Rc<str>,
    pub client_id: String,
    /// The request's size (header and body, without the 4-byte length), bytes: what
    /// the produce quota counts (Kafka's `request.sizeInBytes`).
    pub request_bytes: usize,
    /// The time this shard spent in the request's first phase (decode, validate,
    /// authorize, local appends and reads started, messages to other shards queued):
    /// what the request quota counts.
    pub handle_time: Duration,
}

/// The throttle a response carries and its connection honours (KIP-219).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Throttle {
    /// `throttle_time_ms` of the response, and for how long the connection reads no
    /// further request.
    pub ms: u64,
    /// The quota that asked for the longest throttle (counted in the metrics).
    pub by: Option<QuotaType>,
}

/// The quota rates of one shard. Lives on that shard's core only.
pub struct ShardQuotas {
    cfg: RateConfig,
    epoch: Instant,
    rates: RefCell<HashMap<(QuotaType, MetricEntity), SampledRate>>,
    last_expiry_ms: Cell<u64>,
}

impl ShardQuotas {
    /// An empty table measuring over `cfg`'s windows.
    pub fn new(cfg: RateConfig) -> Self {
        ShardQuotas {
            cfg,
            epoch: Instant::now(),
            rates: RefCell::new(HashMap::new()),
            last_expiry_ms: Cell::new(0),
        }
    }

    /// The quota clock (monotonic), ms.
    pub fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// Records `value` of type `t` for the client and returns the throttle time, ms
    /// (0 without a quota). The request quota's throttle is capped at one window, as
    /// Kafka's `ClientRequestQuotaManager` does; byte rates are not capped.
    pub fn record(
        &self,
        quotas: &ClientQuotas,
        t: QuotaType,
        user: &str,
        client_id: &str,
        value: f64,
        now_ms: u64,
    ) -> u64 {
        let Some(r) = resolve(quotas, t, user, client_id) else { return 0 };
        let max_ms = if t == QuotaType::Request { self.cfg.window_ms } else { u64::MAX };
        self.expire(now_ms);
        let mut rates = self.rates.borrow_mut();
        let rate = rates.entry((t, r.metric)).or_default();
        rate.record_and_throttle(self.cfg, value, r.limit, max_ms, now_ms)
    }

    /// Takes back a value recorded by [`ShardQuotas::record`] (a throttled Fetch whose
    /// records were not sent).
    pub fn unrecord(
        &self,
        quotas: &ClientQuotas,
        t: QuotaType,
        user: &str,
        client_id: &str,
        value: f64,
        now_ms: u64,
    ) {
        let Some(r) = resolve(quotas, t, user, client_id) else { return };
        if let Some(rate) = self.rates.borrow_mut().get_mut(&(t, r.metric)) {
            rate.record(self.cfg, -value, now_ms);
        }
    }

    /// The most bytes a Fetch response of this client may hold (Kafka's
    /// `getMaxValueInQuotaWindow`: quota x (samples - 1) x window), so that one
    /// response alone never exceeds the quota; `None` without a consumer quota.
    pub fn fetch_max_bytes(
        &self,
        quotas: &ClientQuotas,
        user: &str,
        client_id: &str,
    ) -> Option<i32> {
        let r = resolve(quotas, QuotaType::Fetch, user, client_id)?;
        let windows = (self.cfg.samples.max(1) - 1) as f64 * self.cfg.window_ms as f64 / 1000.0;
        Some((r.limit * windows).min(i32::MAX as f64) as i32)
    }

    /// Counts one answered request against the client's quotas and returns the
    /// throttle its response carries: the longest of the produce (request bytes,
    /// Produce), fetch (`response_bytes`, Fetch) and request-time quotas. A throttled
    /// Fetch's bytes are taken back, since its records are not sent (Kafka returns an
    /// empty response).
    pub fn on_response(
        &self,
        quotas: &ClientQuotas,
        api: ApiKey,
        usage: &Usage,
        response_bytes: usize,
        now_ms: u64,
    ) -> Throttle {
        let (user, client) = (&*usage.user, usage.client_id.as_str());
        let mut throttle = Throttle::default();
        let mut take = |t: QuotaType, value: f64| {
            let ms = self.record(quotas, t, user, client, value, now_ms);
            if ms > throttle.ms {
                throttle = Throttle { ms, by: Some(t) };
            }
        };
        match api {
            ApiKey::Produce => take(QuotaType::Produce, usage.request_bytes as f64),
            ApiKey::Fetch => take(QuotaType::Fetch, response_bytes as f64),
            _ => {}
        }
        take(QuotaType::Request, percent_of_a_second(usage.handle_time));
        if api == ApiKey::Fetch && throttle.ms > 0 {
            self.unrecord(quotas, QuotaType::Fetch, user, client, response_bytes as f64, now_ms);
        }
        throttle
    }

    /// Drops the rates idle for an hour, at most once a minute.
    fn expire(&self, now_ms: u64) {
        if now_ms.saturating_sub(self.last_expiry_ms.get()) < EXPIRY_CHECK_MS {
            return;
        }
        self.last_expiry_ms.set(now_ms);
        self.rates.borrow_mut().retain(|_, r| {
            r.last_event_ms().is_some_and(|t| now_ms.saturating_sub(t) < INACTIVE_RATE_EXPIRY_MS)
        });
    }

    /// Whether any quota applies to the client: its connection then handles one request
    /// at a time, as Kafka's do, so that a throttle holds back the very next request
    /// (with pipelining the requests read ahead would escape it).
    pub fn applies(&self, quotas: &ClientQuotas, user: &str, client_id: &str) -> bool {
        QuotaType::ALL.into_iter().any(|t| resolve(quotas, t, user, client_id).is_some())
    }

    /// Rates currently kept (tests, metrics).
    pub fn rates(&self) -> usize {
        self.rates.borrow().len()
    }
}

/// Kafka's `nanosToPercentage`: time as a percentage of one second (1 ms = 0.1).
pub fn percent_of_a_second(d: Duration) -> f64 {
    d.as_nanos() as f64 * 100.0 / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quota::entity::{EntityName, QuotaEntity};

    fn quotas() -> ClientQuotas {
        let mut q = ClientQuotas::default();
        q.set(&QuotaEntity::client(EntityName::Name("slow".into())), "producer_byte_rate", 1000.0);
        q.set(&QuotaEntity::client(EntityName::Name("slow".into())), "consumer_byte_rate", 1000.0);
        q.set(&QuotaEntity::client(EntityName::Name("busy".into())), "request_percentage", 1.0);
        q
    }

    fn usage(client: &str, request_bytes: usize, handle_ms: u64) -> Usage {
        Usage {
            user: "ANONYMOUS".into(),
            client_id: client.into(),
            request_bytes,
            handle_time: Duration::from_millis(handle_ms),
        }
    }

    #[test]
    fn produce_over_quota_is_throttled_by_kafkas_formula() {
        let s = ShardQuotas::new(RateConfig::default());
        let q = quotas();
        let t = s.on_response(&q, ApiKey::Produce, &usage("slow", 20_000, 0), 50, 0);
        assert_eq!(t, Throttle { ms: 10_000, by: Some(QuotaType::Produce) });
        // A client without a quota is never throttled and has no rate.
        let t = s.on_response(&q, ApiKey::Produce, &usage("fast", 20_000_000, 0), 50, 0);
        assert_eq!(t, Throttle::default());
        assert_eq!(s.rates(), 1);
    }

    #[test]
    fn a_throttled_fetch_is_taken_back() {
        let s = ShardQuotas::new(RateConfig::default());
        let q = quotas();
        // 15000 B over 10 s: 1500 B/s, 5000 ms; the bytes are then taken back.
        let t = s.on_response(&q, ApiKey::Fetch, &usage("slow", 100, 0), 15_000, 0);
        assert_eq!(t, Throttle { ms: 5000, by: Some(QuotaType::Fetch) });
        // So 9000 B more stays within the quota.
        let t = s.on_response(&q, ApiKey::Fetch, &usage("slow", 100, 0), 9000, 0);
        assert_eq!(t, Throttle::default());
        assert_eq!(s.fetch_max_bytes(&q, "ANONYMOUS", "slow"), Some(10_000));
        assert_eq!(s.fetch_max_bytes(&q, "ANONYMOUS", "other"), None);
    }

    #[test]
    fn request_time_over_its_percentage_is_throttled_and_capped_at_one_window() {
        let s = ShardQuotas::new(RateConfig::default());
        let q = quotas();
        // 1% of a second over 10 s allows 100 ms. 150 ms of handling: 1.5 %/s,
        // (1.5 - 1) / 1 * 10000 = 5000 ms, capped at 1000.
        let t = s.on_response(&q, ApiKey::Metadata, &usage("busy", 100, 150), 0, 0);
        assert_eq!(t, Throttle { ms: 1000, by: Some(QuotaType::Request) });
        assert_eq!(percent_of_a_second(Duration::from_millis(1)), 0.1);
    }
}

//! A rate over sample windows and the throttle time of a quota on it, pure (times in
//! ms are passed in). Follows Kafka's `SampledStat` / `WindowedSum` / `Rate` and
//! `QuotaUtils.throttleTime` (KIP-13, KIP-219):
//!
//! - a value is added to the current sample, or to a new one when the current one
//!   started `window_ms` or more ago; at most `samples + 1` samples are kept (one
//!   overlapping the oldest edge) and reused in turn;
//! - a sample with no event for `samples * window_ms` is reset (obsolete);
//! - the rate is the sum of the samples over the elapsed span since the oldest sample
//!   started, never counted as less than `samples - 1` whole windows;
//! - a quota is violated when the rate *after* recording exceeds it, and the throttle
//!   time is then `(rate - quota) / quota * span`, rounded to the nearest ms.

/// The sample windows of every quota rate (`--quota-window-num`,
/// `--quota-window-size-seconds`; Kafka's `quota.window.num` 11, `quota.window.size.seconds` 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateConfig {
    /// Samples kept (at least 1).
    pub samples: u32,
    /// Length of one sample window, ms (at least 1).
    pub window_ms: u64,
}

impl Default for RateConfig {
    fn default() -> Self {
        RateConfig { samples: 11, window_ms: 1000 }
    }
}

#[derive(Debug, Clone, Copy)]
struct Sample {
    value: f64,
    start_ms: u64,
    last_event_ms: u64,
}

impl Sample {
    fn new(now_ms: u64) -> Self {
        Sample { value: 0.0, start_ms: now_ms, last_event_ms: now_ms }
    }
}

/// A windowed sum measured as a rate per second. Lives with its owner (a shard's quota
/// table), no I/O.
#[derive(Debug, Clone, Default)]
pub struct SampledRate {
    samples: Vec<Sample>,
    current: usize,
}

impl SampledRate {
    /// Adds `value` at `now_ms` (a negative value takes back an earlier one: Kafka's
    /// `unrecordQuotaSensor`).
    pub fn record(&mut self, cfg: RateConfig, value: f64, now_ms: u64) {
        if self.samples.is_empty() {
            self.samples.push(Sample::new(now_ms));
        }
        if now_ms.saturating_sub(self.samples[self.current].start_ms) >= cfg.window_ms {
            let max = cfg.samples.max(1) as usize + 1;
            self.current = (self.current + 1) % max;
            if self.current >= self.samples.len() {
                self.samples.push(Sample::new(now_ms));
            } else {
                self.samples[self.current] = Sample::new(now_ms);
            }
        }
        let s = &mut self.samples[self.current];
        s.value += value;
        s.last_event_ms = now_ms;
    }

    fn purge(&mut self, cfg: RateConfig, now_ms: u64) {
        let expire = cfg.samples.max(1) as u64 * cfg.window_ms;
        for s in &mut self.samples {
            if now_ms.saturating_sub(s.last_event_ms) >= expire {
                *s = Sample::new(now_ms);
            }
        }
    }

    /// The span the rate is measured over at `now_ms`, ms (Kafka's `Rate.windowSize`).
    pub fn window_size_ms(&mut self, cfg: RateConfig, now_ms: u64) -> u64 {
        self.purge(cfg, now_ms);
        let oldest = self.samples.iter().map(|s| s.start_ms).min().unwrap_or(now_ms);
        let mut elapsed = now_ms.saturating_sub(oldest);
        let full = elapsed / cfg.window_ms.max(1);
        let min_full = cfg.samples.max(1) as u64 - 1;
        if full < min_full {
            elapsed += (min_full - full) * cfg.window_ms;
        }
        elapsed
    }

    /// The rate at `now_ms`, per second.
    pub fn measure(&mut self, cfg: RateConfig, now_ms: u64) -> f64 {
        self.purge(cfg, now_ms);
        let sum: f64 = self.samples.iter().map(|s| s.value).sum();
        let span_ms = self.window_size_ms(cfg, now_ms);
        if span_ms == 0 {
            return 0.0;
        }
        sum / (span_ms as f64 / 1000.0)
    }

    /// Records `value` at `now_ms` and returns the throttle time, ms: 0 while the rate
    /// stays within `limit`, else Kafka's `(rate - limit) / limit * span`, rounded, and
    /// at most `max_ms` (Kafka caps only the request quota, at one window).
    pub fn record_and_throttle(
        &mut self,
        cfg: RateConfig,
        value: f64,
        limit: f64,
        max_ms: u64,
        now_ms: u64,
    ) -> u64 {
        self.record(cfg, value, now_ms);
        let rate = self.measure(cfg, now_ms);
        if rate <= limit {
            return 0;
        }
        let span_ms = self.window_size_ms(cfg, now_ms) as f64;
        let throttle = ((rate - limit) / limit * span_ms).round();
        (throttle as u64).min(max_ms)
    }

    /// When the last value was recorded, ms (for expiring idle rates).
    pub fn last_event_ms(&self) -> Option<u64> {
        self.samples.iter().map(|s| s.last_event_ms).max()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CFG: RateConfig = RateConfig { samples: 11, window_ms: 1000 };

    #[test]
    fn a_young_rate_counts_as_ten_whole_windows() {
        let mut r = SampledRate::default();
        r.record(CFG, 5000.0, 0);
        // 0 ms elapsed: 10 whole windows assumed.
        assert_eq!(r.window_size_ms(CFG, 0), 10_000);
        assert_eq!(r.measure(CFG, 0), 500.0);
        // 2.5 s later: 2 full windows of 10, so 8 more added.
        assert_eq!(r.window_size_ms(CFG, 2500), 10_500);
    }

    #[test]
    fn throttle_time_is_kafkas_formula() {
        let mut r = SampledRate::default();
        // 1000 B/s quota; 20000 B at once over an assumed 10 s span: 2000 B/s,
        // (2000 - 1000) / 1000 * 10000 = 10000 ms.
        assert_eq!(r.record_and_throttle(CFG, 20_000.0, 1000.0, u64::MAX, 0), 10_000);
        // Capped (the request quota's cap is one window).
        let mut r = SampledRate::default();
        assert_eq!(r.record_and_throttle(CFG, 20_000.0, 1000.0, 1000, 0), 1000);
        // Within the quota: no throttle.
        let mut r = SampledRate::default();
        assert_eq!(r.record_and_throttle(CFG, 10_000.0, 1000.0, u64::MAX, 0), 0);
        // 10500 B: 1050 B/s, 50 / 1000 * 10000 = 500 ms.
        assert_eq!(r.record_and_throttle(CFG, 500.0, 1000.0, u64::MAX, 0), 500);
    }

    #[test]
    fn samples_roll_and_expire() {
        let mut r = SampledRate::default();
        for second in 0..20u64 {
            r.record(CFG, 1000.0, second * 1000);
        }
        // 12 samples kept (11 + 1): those started at 8..=19 s. At 19.5 s the one of
        // 8 s had no event for 11.5 s (>= 11 windows): obsolete. The span is
        // 19.5 - 9 = 10.5 s and the sum 11000.
        assert_eq!(r.window_size_ms(CFG, 19_500), 10_500);
        let rate = r.measure(CFG, 19_500);
        assert!((rate - 11_000.0 / 10.5).abs() < 1e-9, "{rate}");
        // 11 s after the last event everything is obsolete.
        assert_eq!(r.measure(CFG, 30_000), 0.0);
    }

    #[test]
    fn unrecording_takes_a_value_back() {
        let mut r = SampledRate::default();
        r.record(CFG, 4000.0, 0);
        r.record(CFG, -4000.0, 0);
        assert_eq!(r.measure(CFG, 0), 0.0);
    }
}

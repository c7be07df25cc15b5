//! Latency histograms: an hdrhistogram of microseconds on the shard, exported as a
//! Prometheus histogram with fixed bucket bounds in seconds.

use hdrhistogram::Histogram;

/// Upper bounds (inclusive, seconds) of the exported buckets; `+Inf` is added by the
/// encoder. From 50 us to 10 s, roughly 1-2.5-5 per decade.
pub const BUCKETS_SECONDS: [f64; 17] = [
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
    2.5, 5.0, 10.0,
];

/// Largest latency recorded exactly, in us (one hour); longer ones are clamped to it.
const MAX_US: u64 = 3_600_000_000;

/// One latency distribution on one shard, in microseconds (2 significant digits).
/// Lives on the shard that records into it.
#[derive(Debug, Clone)]
pub struct Latency {
    histogram: Histogram<u64>,
    /// Exact sum of the recorded values, us (hdrhistogram only keeps buckets).
    sum_us: u64,
}

impl Default for Latency {
    fn default() -> Self {
        // 1 us .. MAX_US with 2 significant digits: about 26 KiB; the bounds are valid.
        let histogram = Histogram::new_with_bounds(1, MAX_US, 2).unwrap_or_else(|_| {
            Histogram::new(2).unwrap_or_else(|_| unreachable!("2 significant digits are valid"))
        });
        Latency { histogram, sum_us: 0 }
    }
}

impl Latency {
    /// Records one duration (clamped to 1 us .. one hour).
    pub fn record(&mut self, d: std::time::Duration) {
        let us = (d.as_micros() as u64).clamp(1, MAX_US);
        self.histogram.saturating_record(us);
        self.sum_us = self.sum_us.saturating_add(us);
    }

    /// How many durations were recorded.
    pub fn count(&self) -> u64 {
        self.histogram.len()
    }

    /// The exported form: cumulative counts at [`BUCKETS_SECONDS`], in one pass over
    /// the recorded values. Values are kept at 2 significant digits, so one is counted
    /// under a bound when the highest value of its hdrhistogram bucket is (a value at
    /// a bound may land in the next bucket up).
    pub fn export(&self) -> ExportedLatency {
        let mut counts = [0u64; BUCKETS_SECONDS.len()];
        for v in self.histogram.iter_recorded() {
            let us = self.histogram.highest_equivalent(v.value_iterated_to());
            let first = BUCKETS_SECONDS.partition_point(|&b| ((b * 1e6) as u64) < us);
            if let Some(c) = counts.get_mut(first) {
                *c += v.count_at_value();
            }
        }
        let mut cumulative = 0;
        let buckets = BUCKETS_SECONDS
            .iter()
            .zip(counts)
            .map(|(&bound, n)| {
                cumulative += n;
                (bound, cumulative)
            })
            .collect();
        ExportedLatency {
            count: self.histogram.len(),
            sum_seconds: self.sum_us as f64 / 1e6,
            buckets,
        }
    }
}

/// A [`Latency`] as it crosses to the shard that serves a scrape.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExportedLatency {
    pub count: u64,
    /// Sum of the recorded durations, seconds.
    pub sum_seconds: f64,
    /// `(upper bound in seconds, cumulative count)`, one per [`BUCKETS_SECONDS`].
    pub buckets: Vec<(f64, u64)>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn buckets_are_cumulative_and_the_sum_is_exact() {
        let mut l = Latency::default();
        l.record(Duration::from_micros(40));
        l.record(Duration::from_micros(700));
        l.record(Duration::from_millis(3));
        l.record(Duration::from_secs(20));
        let e = l.export();
        assert_eq!(e.count, 4);
        assert!((e.sum_seconds - 20.00374).abs() < 1e-9, "{}", e.sum_seconds);
        let at = |bound: f64| e.buckets.iter().find(|b| b.0 == bound).unwrap().1;
        assert_eq!(at(0.00005), 1);
        assert_eq!(at(0.0005), 1);
        assert_eq!(at(0.001), 2);
        assert_eq!(at(0.0025), 2);
        assert_eq!(at(0.005), 3);
        assert_eq!(at(10.0), 3);
    }

    #[test]
    fn values_on_a_bound_are_counted_under_it_when_exact() {
        let mut l = Latency::default();
        l.record(Duration::from_micros(50));
        l.record(Duration::from_micros(100));
        l.record(Duration::from_micros(101));
        let e = l.export();
        assert_eq!(e.buckets[0], (0.00005, 1));
        assert_eq!(e.buckets[1], (0.0001, 2));
        assert_eq!(e.buckets[2], (0.00025, 3));
    }
}

//! Observability: what each shard counts about itself and the Prometheus endpoint
//! that gathers it (issue 13).
//!
//! - [`shard`]: [`ShardMetrics`], one per shard in a thread-local ([`with`]): request
//!   counts by API and version, error codes, latency histograms per phase, bytes and
//!   records per topic, connections, cross-shard messages, executor time. Plain
//!   `Cell`/`RefCell` state: the data path never touches an atomic or another core.
//! - [`latency`]: hdrhistogram-backed latency, exported as Prometheus buckets.
//! - [`errors`]: the error codes a response carries, and their Kafka names.
//! - [`snapshot`]: a shard's counters plus gauges read at scrape time, sent over the
//!   mesh ([`crate::shard::DataRequest::Metrics`]).
//! - [`encode`]: the text exposition (via the `prometheus-client` crate).
//! - [`http`]: the `--metrics-listen` HTTP server (hyper), on the control shard:
//!   `/metrics`, `/healthz`, `/readyz`.

pub mod encode;
pub mod errors;
pub mod http;
pub mod latency;
pub mod shard;
pub mod snapshot;

pub use shard::{Phase, ShardMetrics, Timed};
pub use snapshot::ShardSnapshot;

thread_local! {
    static METRICS: ShardMetrics = ShardMetrics::default();
}

/// Counts something in this thread's (this shard's) metrics. Does nothing once the
/// thread is tearing down its thread-locals (glommio drops the executor's last
/// tasks, and so their connections, from a thread-local destructor too).
pub fn with(f: impl FnOnce(&ShardMetrics)) {
    let _ = METRICS.try_with(f);
}

/// Reads this thread's (this shard's) metrics (for a scrape, on a running shard).
pub fn read<T>(f: impl FnOnce(&ShardMetrics) -> T) -> T {
    METRICS.with(f)
}

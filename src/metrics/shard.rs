//! [`ShardMetrics`]: the counters and histograms one shard keeps about itself.

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Duration;

use kafka_protocol::messages::ApiKey;

use super::latency::{ExportedLatency, Latency};

/// The phases of a request's life that are timed, in order.
///
/// - `Queue`: from the whole frame being read to the start of its handling (waits for
///   the shard's request budget and for earlier requests a catalog change must follow);
/// - `Handle`: from there until its response is ready to be written (this includes
///   waiting for the responses before it on the connection, which leave in order);
/// - `Send`: encoding and writing the response into the socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Queue = 0,
    Handle = 1,
    Send = 2,
}

impl Phase {
    /// Every phase, in the order of a request's life (and of `ApiSnapshot::latency`).
    pub const ALL: [Phase; 3] = [Phase::Queue, Phase::Handle, Phase::Send];

    /// The `phase` label value.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Queue => "queue",
            Phase::Handle => "handle",
            Phase::Send => "send",
        }
    }
}

/// Counters of one API on one shard.
#[derive(Debug, Default)]
struct ApiCounters {
    /// Requests, indexed by version.
    by_version: Vec<u64>,
    /// `(error code, count)` of the codes (other than NONE) found in responses; a
    /// handful per API, searched in order.
    errors: Vec<(i16, u64)>,
    latency: [Latency; 3],
}

/// Bytes and records of one topic moved by one shard.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TopicCounts {
    /// Record batch bytes appended (produce, after validation; counted by the owning
    /// shard once the append succeeded).
    pub bytes_in: u64,
    /// Records in those batches.
    pub records_in: u64,
    /// Record batch bytes sent in Fetch responses (counted by the connection's shard).
    pub bytes_out: u64,
    /// Records in those batches (whole batches: a batch that starts before the fetch
    /// offset counts all its records, as it is all sent).
    pub records_out: u64,
}

/// Record batch bytes of one partition moved by one shard.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PartitionBytes {
    /// Appended (counted by the owning shard).
    pub bytes_in: u64,
    /// Sent in Fetch responses (counted by the connection's shard).
    pub bytes_out: u64,
}

/// A topic's counts on one shard: the totals and, indexed by partition, its
/// partitions' bytes.
#[derive(Debug, Default)]
struct TopicEntry {
    total: TopicCounts,
    partitions: Vec<PartitionBytes>,
}

impl TopicEntry {
    /// The counts of `partition` (a partition of the topic, so below its partition
    /// count; a negative one is not counted per partition).
    fn partition(&mut self, partition: i32) -> Option<&mut PartitionBytes> {
        let i = usize::try_from(partition).ok()?;
        if i >= self.partitions.len() {
            self.partitions.resize(i + 1, PartitionBytes::default());
        }
        self.partitions.get_mut(i)
    }
}

/// Everything one shard counts about itself. Lives on that shard's core only
/// (reached through [`super::with`] and [`super::read`]); never shared, so the data path updates it
/// without atomics. A scrape gathers a [`Counters`] copy from every shard over the mesh.
#[derive(Debug, Default)]
pub struct ShardMetrics {
    /// Indexed by API key (created on an API's first request).
    apis: RefCell<Vec<Option<Box<ApiCounters>>>>,
    /// Bytes appended and fetched over every topic, never pruned (per-topic counts
    /// go with their topic; these stay monotonic).
    bytes_in: std::cell::Cell<u64>,
    bytes_out: std::cell::Cell<u64>,
    topics: RefCell<HashMap<String, TopicEntry>>,
    connections: RefCell<ConnectionCounts>,
    /// Messages sent to (index = peer shard) and received from each shard.
    mesh: RefCell<MeshCounts>,
    /// Executor statistics summed over scrapes (glommio hands out deltas).
    executor: RefCell<ExecutorCounts>,
    storage: RefCell<Storage>,
    quotas: RefCell<QuotaCounts>,
}

/// Responses throttled by a client quota on one shard, indexed by
/// [`crate::quota::QuotaType`] (produce, fetch, request).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QuotaCounts {
    /// Responses (and acks=0 produce requests) that carried a throttle.
    pub throttled: [u64; 3],
    /// The sum of those throttles, ms.
    pub throttle_time_ms: [u64; 3],
}

/// What the storage and fetch paths of one shard time and count.
#[derive(Debug, Default)]
struct Storage {
    /// One per [`Timed`], in [`Timed::ALL`] order.
    latency: [Latency; Timed::ALL.len()],
    cache_hits: u64,
    cache_misses: u64,
    disk_read_bytes: u64,
}

/// The storage and fetch durations a shard times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timed {
    /// A produced batch's append on its owning shard, until it is below the high
    /// watermark (written, and under `--flush always` fdatasync'ed).
    Append = 0,
    /// One DMA write of a group of batches into a segment.
    Write = 1,
    /// One fdatasync of a segment (after a write under `--flush always`, or the
    /// interval flush).
    Fdatasync = 2,
    /// The long poll of a Fetch that had too little data (until data came or
    /// `max_wait_ms` passed).
    FetchWait = 3,
    /// A log read that waited for the disk: a DMA read issued on demand, or a
    /// background read-ahead still in flight when the reader reached it.
    ReadWait = 4,
    /// One pass of a Fetch's reads, timed on the connection's shard: from sending each
    /// owning shard its reads to the last reply (the other shards' wake-ups and reads,
    /// this shard's own reads). A Fetch that long-polls makes a pass after each wake-up.
    FetchRead = 5,
}

impl Timed {
    /// Every timed operation, in the order of `StorageCounts::latency`.
    pub const ALL: [Timed; 6] = [
        Timed::Append,
        Timed::Write,
        Timed::Fdatasync,
        Timed::FetchWait,
        Timed::ReadWait,
        Timed::FetchRead,
    ];

    /// The `op` label value.
    pub fn name(self) -> &'static str {
        match self {
            Timed::Append => "append",
            Timed::Write => "write",
            Timed::Fdatasync => "fdatasync",
            Timed::FetchWait => "fetch_wait",
            Timed::ReadWait => "read_wait",
            Timed::FetchRead => "fetch_read",
        }
    }
}

/// A shard's storage counters as they cross to the scraping shard.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StorageCounts {
    /// One per [`Timed`], in [`Timed::ALL`] order.
    pub latency: Vec<ExportedLatency>,
    /// Log reads served from the batch cache.
    pub cache_hits: u64,
    /// Log reads that read a segment file (not in the cache).
    pub cache_misses: u64,
    /// Bytes read from segment files (DMA reads, whole aligned windows).
    pub disk_read_bytes: u64,
}

/// Connections accepted and closed by one shard.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ConnectionCounts {
    /// Connections this shard accepted (and served), since start.
    pub accepted: u64,
    /// Of those, the ones that have closed.
    pub closed: u64,
    /// Connections the broker closed (or refused), by reason
    /// ([`crate::net::close::CloseReason::name`]), sorted.
    pub closed_by_broker: Vec<(&'static str, u64)>,
}

/// Cross-shard messages of one shard, by peer.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct MeshCounts {
    /// Messages sent, indexed by destination shard.
    pub sent: Vec<u64>,
    /// Messages received, indexed by sending shard.
    pub received: Vec<u64>,
}

/// Executor time and work of one shard.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct ExecutorCounts {
    /// Time spent running tasks, seconds (glommio's `executor_runtime`).
    pub busy_seconds: f64,
    /// Time running tasks plus polling io, seconds (glommio's `total_runtime`).
    pub busy_with_io_seconds: f64,
    /// Times the scheduler picked a task queue.
    pub scheduler_runs: u64,
    /// Tasks run (over every task queue).
    pub tasks_executed: u64,
    /// Times the executor ran out of work and slept in the kernel (after spinning).
    pub parks: u64,
    /// Time asleep in those parks, seconds.
    pub parked_seconds: f64,
}

/// One API's counters as they cross to the scraping shard.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ApiSnapshot {
    /// Kafka's API key (Produce = 0, Fetch = 1, ...).
    pub api_key: i16,
    /// `(version, requests)`, by version.
    pub by_version: Vec<(i16, u64)>,
    /// `(error code, responses carrying it)`, by code.
    pub errors: Vec<(i16, u64)>,
    /// One per [`Phase`], in [`Phase::ALL`] order.
    pub latency: Vec<ExportedLatency>,
}

/// A copy of one shard's counters, made on that shard for a scrape (`Send`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counters {
    /// APIs with at least one request, by API key.
    pub apis: Vec<ApiSnapshot>,
    /// `(topic, counts)`, by topic name.
    pub topics: Vec<(String, TopicCounts)>,
    /// `(topic, partition, bytes)` of the partitions that moved bytes, by topic name
    /// and partition.
    pub partitions: Vec<(String, i32, PartitionBytes)>,
    /// Record batch bytes appended on this shard and sent by it in Fetch responses,
    /// over every topic ever (monotonic, unlike the sum of `topics`).
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Client connections of this shard.
    pub connections: ConnectionCounts,
    /// Cross-shard messages of this shard.
    pub mesh: MeshCounts,
    /// This shard's executor.
    pub executor: ExecutorCounts,
    /// Storage and fetch timings and the batch cache's hits.
    pub storage: StorageCounts,
    /// Client quota throttles.
    pub quotas: QuotaCounts,
}

impl ShardMetrics {
    /// Counts one answered request of `api` at `version`: its time in each [`Phase`]
    /// and the error codes its response carries (see [`super::errors`]).
    pub fn request(&self, api: ApiKey, version: i16, phases: [Duration; 3], errors: &[i16]) {
        let mut apis = self.apis.borrow_mut();
        let key = (api as i16).max(0) as usize;
        if apis.len() <= key {
            apis.resize_with(key + 1, || None);
        }
        let c = apis[key].get_or_insert_with(Box::default);
        let v = version.max(0) as usize;
        if c.by_version.len() <= v {
            c.by_version.resize(v + 1, 0);
        }
        c.by_version[v] += 1;
        for (latency, d) in c.latency.iter_mut().zip(phases) {
            latency.record(d);
        }
        for &code in errors {
            match c.errors.iter_mut().find(|(e, _)| *e == code) {
                Some((_, n)) => *n += 1,
                None => c.errors.push((code, 1)),
            }
        }
    }

    /// Records one storage or fetch duration.
    pub fn timed(&self, what: Timed, d: Duration) {
        self.storage.borrow_mut().latency[what as usize].record(d);
    }

    /// Counts one log read: served from the batch cache (`hit`), or not.
    pub fn cache_read(&self, hit: bool) {
        let mut s = self.storage.borrow_mut();
        if hit {
            s.cache_hits += 1;
        } else {
            s.cache_misses += 1;
        }
    }

    /// Counts bytes read from a segment file.
    pub fn disk_read(&self, bytes: u64) {
        self.storage.borrow_mut().disk_read_bytes += bytes;
    }

    /// Counts record batches (`bytes`, holding `records`) of `partition` of `topic`
    /// appended on this (owning) shard.
    pub fn appended(&self, topic: &str, partition: i32, bytes: u64, records: u64) {
        self.bytes_in.set(self.bytes_in.get() + bytes);
        self.topic(topic, |t| {
            t.total.bytes_in += bytes;
            t.total.records_in += records;
            if let Some(p) = t.partition(partition) {
                p.bytes_in += bytes;
            }
        });
    }

    /// Counts record batches of `partition` of `topic` put into a Fetch response on
    /// this shard.
    pub fn fetched(&self, topic: &str, partition: i32, bytes: u64, records: u64) {
        self.bytes_out.set(self.bytes_out.get() + bytes);
        self.topic(topic, |t| {
            t.total.bytes_out += bytes;
            t.total.records_out += records;
            if let Some(p) = t.partition(partition) {
                p.bytes_out += bytes;
            }
        });
    }

    fn topic(&self, topic: &str, f: impl FnOnce(&mut TopicEntry)) {
        let mut topics = self.topics.borrow_mut();
        match topics.get_mut(topic) {
            Some(t) => f(t),
            None => f(topics.entry(topic.to_string()).or_default()),
        }
    }

    /// Keeps the counts of the topics `keep` accepts and forgets the others (deleted
    /// topics: one created again starts from zero, and old ones do not pile up as
    /// series).
    pub fn retain_topics(&self, keep: impl Fn(&str) -> bool) {
        self.topics.borrow_mut().retain(|name, _| keep(name));
    }

    /// Counts a connection this shard starts serving.
    /// Counts a response throttled for `ms` by the quota of type `by`.
    pub fn quota_throttled(&self, by: crate::quota::QuotaType, ms: u64) {
        let mut q = self.quotas.borrow_mut();
        q.throttled[by as usize] += 1;
        q.throttle_time_ms[by as usize] += ms;
    }

    pub fn connection_accepted(&self) {
        self.connections.borrow_mut().accepted += 1;
    }

    /// Counts a connection of this shard that closed (for any reason).
    pub fn connection_closed(&self) {
        self.connections.borrow_mut().closed += 1;
    }

    /// Counts a connection the broker closed or refused for `reason`.
    pub fn closed_by_broker(&self, reason: &'static str) {
        let mut c = self.connections.borrow_mut();
        match c.closed_by_broker.iter_mut().find(|(r, _)| *r == reason) {
            Some((_, n)) => *n += 1,
            None => {
                c.closed_by_broker.push((reason, 1));
                c.closed_by_broker.sort();
            }
        }
    }

    /// Counts a message sent to shard `to`.
    pub fn mesh_sent(&self, to: usize) {
        bump(&mut self.mesh.borrow_mut().sent, to);
    }

    /// Counts a message received from shard `from`.
    pub fn mesh_received(&self, from: usize) {
        bump(&mut self.mesh.borrow_mut().received, from);
    }

    /// Adds glommio's executor statistics since the last call (glommio resets them
    /// when read, so only this reads them).
    pub fn take_executor_stats(&self) {
        let s = glommio::executor().executor_stats();
        let mut e = self.executor.borrow_mut();
        e.busy_seconds += s.executor_runtime().as_secs_f64();
        e.busy_with_io_seconds += s.total_runtime().as_secs_f64();
        e.scheduler_runs += s.scheduler_runs();
        e.tasks_executed += s.tasks_executed();
        e.parks += s.parks();
        e.parked_seconds += s.parked_time().as_secs_f64();
    }

    /// A copy of every counter, sorted (APIs by key, topics by name).
    pub fn counters(&self) -> Counters {
        let apis: Vec<ApiSnapshot> = self
            .apis
            .borrow()
            .iter()
            .enumerate()
            .filter_map(|(key, c)| Some((key as i16, c.as_ref()?)))
            .map(|(api_key, c)| {
                let mut errors = c.errors.clone();
                errors.sort();
                ApiSnapshot {
                    api_key,
                    by_version: (0..)
                        .zip(c.by_version.iter().copied())
                        .filter(|&(_, n)| n > 0)
                        .collect(),
                    errors,
                    latency: c.latency.iter().map(Latency::export).collect(),
                }
            })
            .collect();
        let entries = self.topics.borrow();
        let mut topics: Vec<(String, TopicCounts)> =
            entries.iter().map(|(k, v)| (k.clone(), v.total)).collect();
        topics.sort_by(|a, b| a.0.cmp(&b.0));
        let mut partitions: Vec<(String, i32, PartitionBytes)> = entries
            .iter()
            .flat_map(|(k, v)| {
                (0..)
                    .zip(&v.partitions)
                    .filter(|(_, p)| **p != PartitionBytes::default())
                    .map(move |(i, p)| (k.clone(), i, *p))
            })
            .collect();
        partitions.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
        let storage = {
            let s = self.storage.borrow();
            StorageCounts {
                latency: s.latency.iter().map(Latency::export).collect(),
                cache_hits: s.cache_hits,
                cache_misses: s.cache_misses,
                disk_read_bytes: s.disk_read_bytes,
            }
        };
        Counters {
            apis,
            topics,
            partitions,
            bytes_in: self.bytes_in.get(),
            bytes_out: self.bytes_out.get(),
            connections: self.connections.borrow().clone(),
            quotas: self.quotas.borrow().clone(),
            mesh: self.mesh.borrow().clone(),
            executor: *self.executor.borrow(),
            storage,
        }
    }
}

fn bump(v: &mut Vec<u64>, i: usize) {
    if v.len() <= i {
        v.resize(i + 1, 0);
    }
    v[i] += 1;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_counted_by_version_and_error() {
        let m = ShardMetrics::default();
        let t = [Duration::from_micros(10); 3];
        m.request(ApiKey::Produce, 9, t, &[]);
        m.request(ApiKey::Produce, 9, t, &[6, 6]);
        m.request(ApiKey::Produce, 3, t, &[3]);
        m.request(ApiKey::Fetch, 12, t, &[]);
        let c = m.counters();
        assert_eq!(c.apis.len(), 2);
        assert_eq!(c.apis[0].api_key, 0);
        assert_eq!(c.apis[0].by_version, vec![(3, 1), (9, 2)]);
        assert_eq!(c.apis[0].errors, vec![(3, 1), (6, 2)]);
        assert_eq!(c.apis[0].latency[Phase::Send as usize].count, 3);
        assert_eq!(c.apis[1].api_key, 1);
    }

    #[test]
    fn topics_and_mesh_are_counted_and_forgotten() {
        let m = ShardMetrics::default();
        m.appended("a", 0, 100, 3);
        m.appended("a", 2, 50, 1);
        m.fetched("a", 2, 150, 4);
        m.fetched("b", 0, 10, 1);
        m.fetched("b", -1, 7, 1);
        m.mesh_sent(1);
        m.mesh_sent(1);
        m.mesh_received(0);
        let c = m.counters();
        let want_a = TopicCounts { bytes_in: 150, records_in: 4, bytes_out: 150, records_out: 4 };
        assert_eq!(c.topics[0], ("a".to_string(), want_a));
        assert_eq!(c.topics[1].1.records_out, 2);
        assert_eq!(c.topics[1].1.bytes_out, 17);
        // Per partition: only those that moved bytes, and no negative index.
        let p = |i, o| PartitionBytes { bytes_in: i, bytes_out: o };
        let want = vec![
            ("a".to_string(), 0, p(100, 0)),
            ("a".to_string(), 2, p(50, 150)),
            ("b".to_string(), 0, p(0, 10)),
        ];
        assert_eq!(c.partitions, want);
        assert_eq!(c.mesh.sent, vec![0, 2]);
        assert_eq!(c.mesh.received, vec![1]);
        m.retain_topics(|t| t != "a");
        assert_eq!(m.counters().topics.len(), 1);
        assert_eq!(m.counters().partitions.len(), 1);
    }
}

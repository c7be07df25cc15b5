//! `shardlog top`: a live view of a running broker, read from its metrics endpoint
//! (`--metrics-listen`) once per interval. Rates are the difference of two scrapes:
//! per shard the CPU busy share, connections, requests/s and MB/s in and out; per API
//! the requests/s, errors/s and the p99 of the time to a ready response over the
//! interval; and the busiest partitions and topics. Runs on the caller's thread, no
//! executor.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use clap::Parser;
use comfy_table::{presets::UTF8_BORDERS_ONLY, Table};
use prometheus_parse::{Sample, Scrape, Value};

/// `shardlog top` flags.
#[derive(Debug, Clone, Parser)]
#[command(name = "shardlog top", about = "A live view of a running shardlog broker")]
pub struct TopArgs {
    /// The broker's metrics endpoint (its `--metrics-listen`), host:port.
    #[arg(long, alias = "bootstrap", default_value = "127.0.0.1:9644")]
    pub metrics: String,
    /// Seconds between refreshes (0.1 to 3600).
    #[arg(long, default_value_t = 1.0, value_parser = interval_seconds)]
    pub interval: f64,
    /// Refreshes to show before exiting, at least 1 (default: until interrupted).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub iterations: Option<u64>,
    /// Topics to list, busiest first.
    #[arg(long, default_value_t = 10)]
    pub topics: usize,
    /// Partitions to list, busiest first (the broker's `--metrics-partitions` must be
    /// on for them to be known).
    #[arg(long, default_value_t = 10)]
    pub partitions: usize,
}

fn interval_seconds(text: &str) -> Result<f64, String> {
    let s: f64 = text.parse().map_err(|e| format!("{e}"))?;
    if (0.1..=3600.0).contains(&s) {
        Ok(s)
    } else {
        Err(format!("must be between 0.1 and 3600 seconds, got {text}"))
    }
}

/// Runs the live view until `iterations` refreshes were shown (or forever). Errors when
/// the endpoint cannot be read at the start; later failures are shown and retried.
pub fn run(args: &TopArgs) -> Result<(), String> {
    let agent: ureq::Agent =
        ureq::Agent::config_builder().timeout_global(Some(Duration::from_secs(5))).build().into();
    check_address(&args.metrics)?;
    let url = format!("http://{}/metrics", args.metrics);
    let interval = Duration::from_secs_f64(args.interval);
    let clear = std::io::IsTerminal::is_terminal(&std::io::stdout());
    let mut before = (Instant::now(), fetch(&agent, &url)?);
    let mut shown = 0u64;
    while args.iterations.is_none_or(|n| shown < n) {
        std::thread::sleep(interval);
        let now = match fetch(&agent, &url) {
            Ok(samples) => (Instant::now(), samples),
            Err(e) => {
                eprintln!("shardlog top: {e} (retrying)");
                shown += 1;
                continue;
            }
        };
        let seconds = now.0.duration_since(before.0).as_secs_f64();
        let view = View::between(&before.1, &now.1, seconds);
        let view = render(&view, &args.metrics, args.topics, args.partitions);
        if clear {
            print!("\x1b[2J\x1b[H");
        }
        println!("{view}");
        before = now;
        shown += 1;
    }
    Ok(())
}

/// Largest `/metrics` text read, bytes (ureq's default limit, 10 MiB, is below what a
/// broker with tens of thousands of lag series serves).
const MAX_SCRAPE_BYTES: u64 = 1 << 30;

/// Refuses an endpoint that is not `host:port` (with a port that is a number), so a
/// typo is not reported as a connection failure.
fn check_address(addr: &str) -> Result<(), String> {
    let port = addr.rsplit_once(':').map(|(host, port)| (host, port.parse::<u16>()));
    match port {
        Some((host, Ok(_))) if !host.is_empty() && !host.contains('/') => Ok(()),
        _ => Err(format!("--metrics {addr:?} is not host:port (e.g. 127.0.0.1:9644)")),
    }
}

/// Reads one scrape: an error if the endpoint cannot be read, is not in the
/// Prometheus text format, or is not a shardlog broker's (no `shardlog_shards`).
fn fetch(agent: &ureq::Agent, url: &str) -> Result<Vec<Sample>, String> {
    let body = agent
        .get(url)
        .call()
        .map_err(|e| format!("cannot read {url}: {e}"))?
        .body_mut()
        .with_config()
        .limit(MAX_SCRAPE_BYTES)
        .read_to_string()
        .map_err(|e| format!("cannot read {url}: {e}"))?;
    let samples = Scrape::parse(body.lines().map(|l| Ok(l.to_string())))
        .map(|s| s.samples)
        .map_err(|e| format!("{url} is not in the Prometheus text format: {e}"))?;
    if !samples.iter().any(|s| s.metric == "shardlog_shards") {
        return Err(format!("{url} has no shardlog metrics: is it a broker's --metrics-listen?"));
    }
    Ok(samples)
}

/// One row per shard.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ShardRow {
    /// Share of the interval the shard's executor ran tasks, 0..1.
    pub busy: f64,
    /// Client connections open at the end of the interval.
    pub connections: f64,
    /// Requests answered per second.
    pub requests_per_s: f64,
    /// Record batch MB (10^6 bytes) per second appended on, and fetched from, it.
    pub mb_in_per_s: f64,
    pub mb_out_per_s: f64,
}

/// One row per API seen in the interval.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ApiRow {
    pub requests_per_s: f64,
    pub errors_per_s: f64,
    /// Upper bound of the bucket holding the 99th percentile of the `handle` phase
    /// (to a ready response) in the interval, ms (infinite above the last bucket);
    /// `None` without requests.
    pub p99_ms: Option<f64>,
}

/// One row per topic.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct TopicRow {
    pub mb_in_per_s: f64,
    pub mb_out_per_s: f64,
    pub records_in_per_s: f64,
}

/// One row per partition: MB (10^6 bytes) per second appended and fetched.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct PartitionRow {
    pub mb_in_per_s: f64,
    pub mb_out_per_s: f64,
}

/// What one refresh shows: rates between two scrapes.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct View {
    pub shards: BTreeMap<u32, ShardRow>,
    pub apis: BTreeMap<String, ApiRow>,
    /// Busiest first (MB/s in plus out), then by name.
    pub topics: Vec<(String, TopicRow)>,
    /// `((topic, partition), rates)`, busiest first, then by topic and partition.
    pub partitions: Vec<((String, i32), PartitionRow)>,
}

/// `metric` per `(topic, partition)` label pair.
fn by_partition(samples: &[Sample], metric: &str) -> BTreeMap<(String, i32), f64> {
    let mut out = BTreeMap::new();
    for s in samples.iter().filter(|s| s.metric == metric) {
        let (Some(t), Some(Ok(p))) =
            (s.labels.get("topic"), s.labels.get("partition").map(str::parse::<i32>))
        else {
            continue;
        };
        *out.entry((t.to_string(), p)).or_default() += scalar(s);
    }
    out
}

const MB: f64 = 1e6;

/// The endpoint's largest finite bucket bound, ms.
const BUCKETS_MS_MAX: f64 = 10_000.0;

fn scalar(s: &Sample) -> f64 {
    match s.value {
        Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => v,
        _ => 0.0,
    }
}

/// The increase per second of each counter from `before` to `after`, `seconds` apart
/// (one absent before counts from 0; one that went back, a restart, counts 0).
fn per_second<K: Ord>(
    before: BTreeMap<K, f64>,
    after: BTreeMap<K, f64>,
    seconds: f64,
) -> BTreeMap<K, f64> {
    after
        .into_iter()
        .map(|(k, v)| {
            let d = v - before.get(&k).copied().unwrap_or(0.0);
            (k, d.max(0.0) / seconds)
        })
        .collect()
}

/// Sum of `metric` by the value of `label` (samples without it are skipped).
fn by_label(samples: &[Sample], metric: &str, label: &str) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for s in samples.iter().filter(|s| s.metric == metric) {
        if let Some(v) = s.labels.get(label) {
            *out.entry(v.to_string()).or_default() += scalar(s);
        }
    }
    out
}

/// Cumulative histogram buckets of `metric` summed over the samples with `label` =
/// each value and `phase` = "handle": `(upper bound, count)`.
fn handle_buckets(samples: &[Sample], metric: &str) -> BTreeMap<String, Vec<(f64, f64)>> {
    let mut out: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for s in samples.iter().filter(|s| s.metric == metric) {
        let (Some(api), Some("handle"), Value::Histogram(h)) =
            (s.labels.get("api"), s.labels.get("phase"), &s.value)
        else {
            continue;
        };
        let sum = out.entry(api.to_string()).or_default();
        for b in h {
            match sum.iter_mut().find(|(le, _)| *le == b.less_than) {
                Some(x) => x.1 += b.count,
                None => sum.push((b.less_than, b.count)),
            }
        }
    }
    for v in out.values_mut() {
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    out
}

impl View {
    /// The rates between scrape `a` and the later scrape `b`, `seconds` apart.
    pub fn between(a: &[Sample], b: &[Sample], seconds: f64) -> View {
        let rate = |metric: &str, label: &str| {
            per_second(by_label(a, metric, label), by_label(b, metric, label), seconds)
        };
        let mut view = View::default();
        let shard_ids: Vec<u32> = by_label(b, "shardlog_executor_busy_seconds_total", "shard")
            .keys()
            .filter_map(|k| k.parse().ok())
            .collect();
        let busy = rate("shardlog_executor_busy_seconds_total", "shard");
        let connections = by_label(b, "shardlog_connections_open", "shard");
        let requests = rate("shardlog_requests_total", "shard");
        let bytes_in = rate("shardlog_bytes_in_total", "shard");
        let bytes_out = rate("shardlog_bytes_out_total", "shard");
        for id in shard_ids {
            let k = id.to_string();
            let get = |m: &BTreeMap<String, f64>| m.get(&k).copied().unwrap_or(0.0);
            view.shards.insert(
                id,
                ShardRow {
                    busy: get(&busy),
                    connections: get(&connections),
                    requests_per_s: get(&requests),
                    mb_in_per_s: get(&bytes_in) / MB,
                    mb_out_per_s: get(&bytes_out) / MB,
                },
            );
        }
        let api_requests = rate("shardlog_requests_total", "api");
        let api_errors = rate("shardlog_request_errors_total", "api");
        let hist_a = handle_buckets(a, "shardlog_request_duration_seconds");
        let hist_b = handle_buckets(b, "shardlog_request_duration_seconds");
        for (api, per_s) in api_requests.into_iter().filter(|(_, r)| *r > 0.0) {
            let p99_ms = hist_b.get(&api).and_then(|now| {
                let then = hist_a.get(&api);
                let delta: Vec<(f64, f64)> = now
                    .iter()
                    .map(|&(le, n)| {
                        let old = then
                            .and_then(|t| t.iter().find(|(l, _)| *l == le))
                            .map_or(0.0, |x| x.1);
                        (le, n - old)
                    })
                    .collect();
                let total = delta.last()?.1;
                let at = delta.iter().find(|(_, n)| *n >= 0.99 * total)?;
                (total > 0.0).then_some(at.0 * 1e3)
            });
            let errors_per_s = api_errors.get(&api).copied().unwrap_or(0.0);
            view.apis.insert(api, ApiRow { requests_per_s: per_s, errors_per_s, p99_ms });
        }
        let t_in = rate("shardlog_topic_bytes_in_total", "topic");
        let t_out = rate("shardlog_topic_bytes_out_total", "topic");
        let t_rec = rate("shardlog_topic_records_in_total", "topic");
        let mut topics: Vec<(String, TopicRow)> = t_in
            .keys()
            .chain(t_out.keys())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .map(|t| {
                let get = |m: &BTreeMap<String, f64>| m.get(t).copied().unwrap_or(0.0);
                let row = TopicRow {
                    mb_in_per_s: get(&t_in) / MB,
                    mb_out_per_s: get(&t_out) / MB,
                    records_in_per_s: get(&t_rec),
                };
                (t.clone(), row)
            })
            .collect();
        topics.sort_by(|a, b| {
            let load = |r: &TopicRow| r.mb_in_per_s + r.mb_out_per_s;
            load(&b.1).total_cmp(&load(&a.1)).then(a.0.cmp(&b.0))
        });
        view.topics = topics;
        let p_rate =
            |metric: &str| per_second(by_partition(a, metric), by_partition(b, metric), seconds);
        let p_in = p_rate("shardlog_partition_bytes_in_total");
        let p_out = p_rate("shardlog_partition_bytes_out_total");
        let mut partitions: Vec<((String, i32), PartitionRow)> = p_in
            .keys()
            .chain(p_out.keys())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .map(|k| {
                let get = |m: &BTreeMap<(String, i32), f64>| m.get(k).copied().unwrap_or(0.0);
                (
                    k.clone(),
                    PartitionRow { mb_in_per_s: get(&p_in) / MB, mb_out_per_s: get(&p_out) / MB },
                )
            })
            .filter(|(_, r)| r.mb_in_per_s + r.mb_out_per_s > 0.0)
            .collect();
        partitions.sort_by(|a, b| {
            let load = |r: &PartitionRow| r.mb_in_per_s + r.mb_out_per_s;
            load(&b.1).total_cmp(&load(&a.1)).then(a.0.cmp(&b.0))
        });
        view.partitions = partitions;
        view
    }
}

/// The refresh as text: four tables (shards, APIs, busiest partitions, busiest
/// topics), with at most `max_topics` topics and `max_partitions` partitions.
pub fn render(view: &View, endpoint: &str, max_topics: usize, max_partitions: usize) -> String {
    let mut shards = Table::new();
    shards.load_style(UTF8_BORDERS_ONLY).set_header(vec![
        "shard",
        "busy %",
        "connections",
        "requests/s",
        "MB/s in",
        "MB/s out",
    ]);
    for (id, r) in &view.shards {
        shards.add_row(vec![
            id.to_string(),
            format!("{:.1}", r.busy * 100.0),
            format!("{:.0}", r.connections),
            format!("{:.0}", r.requests_per_s),
            format!("{:.2}", r.mb_in_per_s),
            format!("{:.2}", r.mb_out_per_s),
        ]);
    }
    let mut apis = Table::new();
    apis.load_style(UTF8_BORDERS_ONLY).set_header(vec![
        "api",
        "requests/s",
        "errors/s",
        "p99 handle ms",
    ]);
    for (api, r) in &view.apis {
        apis.add_row(vec![
            api.clone(),
            format!("{:.1}", r.requests_per_s),
            format!("{:.1}", r.errors_per_s),
            match r.p99_ms {
                None => "-".to_string(),
                Some(ms) if ms.is_finite() => format!("≤ {ms:.2}"),
                Some(_) => format!("> {:.0}", BUCKETS_MS_MAX),
            },
        ]);
    }
    let mut topics = Table::new();
    topics.load_style(UTF8_BORDERS_ONLY).set_header(vec![
        "topic",
        "MB/s in",
        "MB/s out",
        "records/s in",
    ]);
    for (t, r) in view.topics.iter().take(max_topics) {
        topics.add_row(vec![
            t.clone(),
            format!("{:.2}", r.mb_in_per_s),
            format!("{:.2}", r.mb_out_per_s),
            format!("{:.0}", r.records_in_per_s),
        ]);
    }
    let mut partitions = Table::new();
    partitions.load_style(UTF8_BORDERS_ONLY).set_header(vec![
        "topic",
        "partition",
        "MB/s in",
        "MB/s out",
    ]);
    for ((t, p), r) in view.partitions.iter().take(max_partitions) {
        partitions.add_row(vec![
            t.clone(),
            p.to_string(),
            format!("{:.2}", r.mb_in_per_s),
            format!("{:.2}", r.mb_out_per_s),
        ]);
    }
    format!("shardlog top: {endpoint}\n{shards}\n{apis}\n{partitions}\n{topics}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Vec<Sample> {
        Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap().samples
    }

    const BEFORE: &str = "\
# TYPE shardlog_executor_busy_seconds_total counter
shardlog_executor_busy_seconds_total{shard=\"0\"} 1.0
shardlog_executor_busy_seconds_total{shard=\"1\"} 2.0
# TYPE shardlog_requests_total counter
shardlog_requests_total{shard=\"0\",api=\"Produce\",version=\"9\"} 100
# TYPE shardlog_bytes_in_total counter
shardlog_bytes_in_total{shard=\"0\"} 1000000
# TYPE shardlog_topic_bytes_in_total counter
shardlog_topic_bytes_in_total{topic=\"a\"} 1000000
# TYPE shardlog_partition_bytes_in_total counter
shardlog_partition_bytes_in_total{topic=\"a\",partition=\"0\"} 1000000
shardlog_partition_bytes_in_total{topic=\"a\",partition=\"1\"} 0
# TYPE shardlog_request_duration_seconds histogram
shardlog_request_duration_seconds_bucket{shard=\"0\",api=\"Produce\",phase=\"handle\",le=\"0.001\"} 100
shardlog_request_duration_seconds_bucket{shard=\"0\",api=\"Produce\",phase=\"handle\",le=\"0.01\"} 100
shardlog_request_duration_seconds_bucket{shard=\"0\",api=\"Produce\",phase=\"handle\",le=\"+Inf\"} 100
shardlog_request_duration_seconds_sum{shard=\"0\",api=\"Produce\",phase=\"handle\"} 0.05
shardlog_request_duration_seconds_count{shard=\"0\",api=\"Produce\",phase=\"handle\"} 100
";

    const AFTER: &str = "\
# TYPE shardlog_executor_busy_seconds_total counter
shardlog_executor_busy_seconds_total{shard=\"0\"} 1.5
shardlog_executor_busy_seconds_total{shard=\"1\"} 2.0
# TYPE shardlog_requests_total counter
shardlog_requests_total{shard=\"0\",api=\"Produce\",version=\"9\"} 300
# TYPE shardlog_bytes_in_total counter
shardlog_bytes_in_total{shard=\"0\"} 5000000
# TYPE shardlog_topic_bytes_in_total counter
shardlog_topic_bytes_in_total{topic=\"a\"} 5000000
shardlog_topic_bytes_in_total{topic=\"b\"} 6000000
# TYPE shardlog_partition_bytes_in_total counter
shardlog_partition_bytes_in_total{topic=\"a\",partition=\"0\"} 2000000
shardlog_partition_bytes_in_total{topic=\"a\",partition=\"1\"} 3000000
shardlog_partition_bytes_in_total{topic=\"b\",partition=\"7\"} 6000000
# TYPE shardlog_partition_bytes_out_total counter
shardlog_partition_bytes_out_total{topic=\"a\",partition=\"0\"} 2000000
# TYPE shardlog_request_duration_seconds histogram
shardlog_request_duration_seconds_bucket{shard=\"0\",api=\"Produce\",phase=\"handle\",le=\"0.001\"} 101
shardlog_request_duration_seconds_bucket{shard=\"0\",api=\"Produce\",phase=\"handle\",le=\"0.01\"} 300
shardlog_request_duration_seconds_bucket{shard=\"0\",api=\"Produce\",phase=\"handle\",le=\"+Inf\"} 300
shardlog_request_duration_seconds_sum{shard=\"0\",api=\"Produce\",phase=\"handle\"} 1.0
shardlog_request_duration_seconds_count{shard=\"0\",api=\"Produce\",phase=\"handle\"} 300
";

    #[test]
    fn rates_are_differences_over_the_interval() {
        let v = View::between(&parse(BEFORE), &parse(AFTER), 2.0);
        assert_eq!(v.shards.len(), 2);
        assert_eq!(v.shards[&0].busy, 0.25);
        assert_eq!(v.shards[&0].requests_per_s, 100.0);
        assert_eq!(v.shards[&0].mb_in_per_s, 2.0);
        assert_eq!(v.shards[&1].busy, 0.0);
        // 200 Produce requests in the interval: 1 under 1 ms, 199 under 10 ms.
        assert_eq!(v.apis["Produce"].requests_per_s, 100.0);
        assert_eq!(v.apis["Produce"].p99_ms, Some(10.0));
        // The busiest topic first: b (new, 6 MB in 2 s) before a (4 MB).
        assert_eq!(v.topics[0].0, "b");
        assert_eq!(v.topics[0].1.mb_in_per_s, 3.0);
        assert_eq!(v.topics[1].1.mb_in_per_s, 2.0);
        // Partitions, busiest first: b-7 (3 MB/s), then a-0 (0.5 in + 1 out) and a-1
        // (1.5 in), equal, by partition.
        let p = |t: &str, n| (t.to_string(), n);
        let order: Vec<_> = v.partitions.iter().map(|(k, _)| k.clone()).collect();
        assert_eq!(order, vec![p("b", 7), p("a", 0), p("a", 1)]);
        assert_eq!(v.partitions[1].1, PartitionRow { mb_in_per_s: 0.5, mb_out_per_s: 1.0 });
        let text = render(&v, "x:1", 10, 2);
        assert!(text.contains("Produce"), "{text}");
        let row =
            |t: &str, p: &str| text.lines().any(|l| l.split_whitespace().take(3).eq(["│", t, p]));
        assert!(row("b", "7") && row("a", "0"), "{text}");
        assert!(!row("a", "1"), "only 2 partitions shown:\n{text}");
        assert!(text.contains("≤ 10.00"), "{text}");
    }

    #[test]
    fn an_endpoint_must_be_host_and_port() {
        assert!(check_address("127.0.0.1:9644").is_ok());
        assert!(check_address("broker-1:9644").is_ok());
        assert!(check_address("[::1]:9644").is_ok());
        for bad in ["", "9644", "host", "host:", ":9644", "host:99999", "http://h:1/x"] {
            assert!(check_address(bad).is_err(), "{bad:?} accepted");
        }
    }
}

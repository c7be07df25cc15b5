//! The Prometheus text exposition (format 0.0.4) of the gathered snapshots, written
//! with the `prometheus-client` crate's encoder. Every series name and label is listed
//! in the README's "Metrics" section.

use std::collections::BTreeMap;

use kafka_protocol::messages::ApiKey;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use super::errors::error_name;
use super::latency::ExportedLatency;
use super::shard::{PartitionBytes, Phase, Timed, TopicCounts};
use super::snapshot::ShardSnapshot;
use crate::shard::transactions::TxnSummary;

/// Broker-wide values read by the scraping shard.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BrokerGauges {
    /// Bytes free (to unprivileged users) on the filesystem holding the data dir
    /// (`statvfs`; -1 when it cannot be read).
    pub data_dir_free_bytes: i64,
    /// That filesystem's size, bytes (-1 when it cannot be read).
    pub data_dir_total_bytes: i64,
}

/// Everything one scrape shows.
#[derive(Debug, Clone, Default)]
pub struct Scrape {
    /// One per shard that answered (or answered before), in shard order (shared with
    /// the gatherer's copy of each shard's last answer).
    pub shards: Vec<std::sync::Arc<ShardSnapshot>>,
    /// Broker-wide values.
    pub broker: BrokerGauges,
    /// Whether to export committed offsets and lag per group and partition
    /// (`--metrics-consumer-lag`).
    pub consumer_lag: bool,
    /// Whether to export bytes in and out per partition (`--metrics-partitions`).
    pub partition_series: bool,
}

/// The text exposition of `scrape`.
pub fn render(scrape: Scrape) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(scrape));
    let mut out = String::with_capacity(64 * 1024);
    // Writing into a String cannot fail; an encoder error would be a bug in a label.
    if let Err(e) = prometheus_client::encoding::prometheus_text::encode(&mut out, &registry) {
        tracing::error!(error = %e, "encoding the metrics failed");
    }
    out
}

/// The `api` label: Kafka's request name (`Produce`, `Fetch`, ...).
fn api_name(key: i16) -> String {
    match ApiKey::try_from(key) {
        Ok(api) => format!("{api:?}"),
        Err(()) => key.to_string(),
    }
}

type Labels = Vec<(&'static str, String)>;

fn counters<V: prometheus_client::encoding::EncodeCounterValue + Copy>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    series: impl IntoIterator<Item = (Labels, V)>,
) -> std::fmt::Result {
    let mut metric = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (labels, v) in series {
        ConstCounter::new(v).encode(metric.encode_family(&labels)?)?;
    }
    Ok(())
}

fn gauges<V: prometheus_client::encoding::EncodeGaugeValue + Copy>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    series: impl IntoIterator<Item = (Labels, V)>,
) -> std::fmt::Result {
    let mut metric = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
    for (labels, v) in series {
        ConstGauge::new(v).encode(metric.encode_family(&labels)?)?;
    }
    Ok(())
}

fn histograms(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    series: impl IntoIterator<Item = (Labels, ExportedLatency)>,
) -> std::fmt::Result {
    let mut metric = encoder.encode_descriptor(name, help, None, MetricType::Histogram)?;
    for (labels, h) in series {
        // The encoder sums per-bucket counts itself: hand it the increments.
        let mut before = 0;
        let buckets: Vec<(f64, u64)> = h
            .buckets
            .iter()
            .map(|&(bound, cumulative)| {
                let n = cumulative.saturating_sub(before);
                before = cumulative;
                (bound, n)
            })
            .collect();
        metric
            .encode_family(&labels)?
            .encode_histogram::<prometheus_client::encoding::NoLabelSet>(
                h.sum_seconds,
                h.count,
                &buckets,
                None,
            )?;
    }
    Ok(())
}

fn shard_label(s: &ShardSnapshot) -> Labels {
    vec![("shard", s.shard.to_string())]
}

impl Collector for Scrape {
    fn encode(&self, mut e: DescriptorEncoder) -> std::fmt::Result {
        let shards = &self.shards;
        let e = &mut e;
        gauges(
            e,
            "shardlog_shards",
            "Shards (cores) the broker runs.",
            [(vec![], shards.len() as i64)],
        )?;

        // Requests.
        let per_api = || shards.iter().flat_map(|s| s.counters.apis.iter().map(move |a| (s, a)));
        counters(
            e,
            "shardlog_requests",
            "Requests answered, by shard, API and version.",
            per_api().flat_map(|(s, a)| {
                a.by_version.iter().map(move |&(v, n)| {
                    (
                        vec![
                            ("shard", s.shard.to_string()),
                            ("api", api_name(a.api_key)),
                            ("version", v.to_string()),
                        ],
                        n,
                    )
                })
            }),
        )?;
        counters(
            e,
            "shardlog_request_errors",
            "Error codes in responses (one per partition, group or topic that carries one), \
             by shard, API and Kafka error name.",
            per_api().flat_map(|(s, a)| {
                a.errors.iter().map(move |&(code, n)| {
                    (
                        vec![
                            ("shard", s.shard.to_string()),
                            ("api", api_name(a.api_key)),
                            ("error", error_name(code)),
                        ],
                        n,
                    )
                })
            }),
        )?;
        histograms(
            e,
            "shardlog_request_duration_seconds",
            "Time of a request in each phase (queue: frame read to handling; handle: to \
             response ready, in connection order; send: encoding and writing), by shard and API.",
            per_api().flat_map(|(s, a)| {
                Phase::ALL.iter().filter_map(move |&phase| {
                    let h = a.latency.get(phase as usize)?.clone();
                    Some((
                        vec![
                            ("shard", s.shard.to_string()),
                            ("api", api_name(a.api_key)),
                            ("phase", phase.name().to_string()),
                        ],
                        h,
                    ))
                })
            }),
        )?;

        // Topics, summed over shards.
        let mut topics: BTreeMap<&str, TopicCounts> = BTreeMap::new();
        for (name, c) in shards.iter().flat_map(|s| &s.counters.topics) {
            let t = topics.entry(name.as_str()).or_default();
            t.bytes_in += c.bytes_in;
            t.records_in += c.records_in;
            t.bytes_out += c.bytes_out;
            t.records_out += c.records_out;
        }
        let per_topic = |f: fn(&TopicCounts) -> u64| {
            topics.iter().map(move |(name, c)| (vec![("topic", name.to_string())], f(c)))
        };
        counters(
            e,
            "shardlog_topic_bytes_in",
            "Record batch bytes appended, by topic.",
            per_topic(|c| c.bytes_in),
        )?;
        counters(
            e,
            "shardlog_topic_records_in",
            "Records appended, by topic.",
            per_topic(|c| c.records_in),
        )?;
        counters(
            e,
            "shardlog_topic_bytes_out",
            "Record batch bytes sent in Fetch responses, by topic.",
            per_topic(|c| c.bytes_out),
        )?;
        counters(
            e,
            "shardlog_topic_records_out",
            "Records in the batches sent in Fetch responses, by topic.",
            per_topic(|c| c.records_out),
        )?;

        if self.partition_series {
            // Summed over shards: bytes out are counted by every connection's shard.
            let mut partitions: BTreeMap<(&str, i32), PartitionBytes> = BTreeMap::new();
            for (name, p, c) in shards.iter().flat_map(|s| &s.counters.partitions) {
                let t = partitions.entry((name.as_str(), *p)).or_default();
                t.bytes_in += c.bytes_in;
                t.bytes_out += c.bytes_out;
            }
            let per_partition = |f: fn(&PartitionBytes) -> u64| {
                partitions.iter().map(move |((topic, p), c)| {
                    (vec![("topic", topic.to_string()), ("partition", p.to_string())], f(c))
                })
            };
            counters(
                e,
                "shardlog_partition_bytes_in",
                "Record batch bytes appended, by topic and partition.",
                per_partition(|c| c.bytes_in),
            )?;
            counters(
                e,
                "shardlog_partition_bytes_out",
                "Record batch bytes sent in Fetch responses, by topic and partition.",
                per_partition(|c| c.bytes_out),
            )?;
        }

        counters(
            e,
            "shardlog_bytes_in",
            "Record batch bytes appended on each (owning) shard.",
            shards.iter().map(|s| (shard_label(s), s.counters.bytes_in)),
        )?;
        counters(
            e,
            "shardlog_bytes_out",
            "Record batch bytes sent in Fetch responses by each (connection's) shard.",
            shards.iter().map(|s| (shard_label(s), s.counters.bytes_out)),
        )?;

        // Connections, mesh, executor.
        counters(
            e,
            "shardlog_connections_accepted",
            "Client connections accepted, by shard.",
            shards.iter().map(|s| (shard_label(s), s.counters.connections.accepted)),
        )?;
        counters(
            e,
            "shardlog_connections_closed",
            "Client connections closed, by shard.",
            shards.iter().map(|s| (shard_label(s), s.counters.connections.closed)),
        )?;
        gauges(
            e,
            "shardlog_connections_open",
            "Client connections open, by shard.",
            shards.iter().map(|s| {
                let c = &s.counters.connections;
                (shard_label(s), c.accepted.saturating_sub(c.closed) as i64)
            }),
        )?;
        counters(
            e,
            "shardlog_connections_closed_by_broker",
            "Client connections the broker closed or refused, by shard and reason \
             (bad_frame_length, bad_request_header, request_refused, encoding_failed, \
             stopped_reading, too_many_connections_per_ip).",
            shards.iter().flat_map(|s| {
                s.counters.connections.closed_by_broker.iter().map(move |&(reason, n)| {
                    (vec![("shard", s.shard.to_string()), ("reason", reason.to_string())], n)
                })
            }),
        )?;
        let by_type = |f: fn(&ShardSnapshot) -> &[u64; 3]| {
            shards.iter().flat_map(move |s| {
                crate::quota::QuotaType::ALL.into_iter().map(move |t| {
                    let labels =
                        vec![("shard", s.shard.to_string()), ("type", t.name().to_string())];
                    (labels, f(s)[t as usize])
                })
            })
        };
        counters(
            e,
            "shardlog_quota_throttled",
            "Responses a client quota throttled (KIP-219), by shard and quota type \
             (produce, fetch, request).",
            by_type(|s| &s.counters.quotas.throttled),
        )?;
        counters(
            e,
            "shardlog_quota_throttle_time_ms",
            "Sum of the throttle times of those responses, ms, by shard and quota type.",
            by_type(|s| &s.counters.quotas.throttle_time_ms),
        )?;
        let pairs = |f: fn(&ShardSnapshot) -> &Vec<u64>| {
            shards.iter().flat_map(move |s| {
                // A shard's messages to itself are run in place, never sent.
                f(s).iter().enumerate().filter(move |&(peer, _)| peer != s.shard).map(
                    move |(peer, &n)| {
                        (vec![("shard", s.shard.to_string()), ("peer", peer.to_string())], n)
                    },
                )
            })
        };
        counters(
            e,
            "shardlog_mesh_messages_sent",
            "Cross-shard messages sent, by shard and destination shard.",
            pairs(|s| &s.counters.mesh.sent),
        )?;
        counters(
            e,
            "shardlog_mesh_messages_received",
            "Cross-shard messages received, by shard and sending shard.",
            pairs(|s| &s.counters.mesh.received),
        )?;
        // glommio's channels do not expose their length: messages sent minus messages
        // received, read from two snapshots taken a moment apart.
        let received = |by: usize, from: usize| -> Option<u64> {
            let s = shards.iter().find(|s| s.shard == by)?;
            Some(s.counters.mesh.received.get(from).copied().unwrap_or(0))
        };
        gauges(
            e,
            "shardlog_mesh_queue_depth",
            "Cross-shard messages sent by shard to peer and not yet taken by peer \
             (estimated from the two shards' counters).",
            shards.iter().flat_map(|s| {
                let received = &received;
                s.counters
                    .mesh
                    .sent
                    .iter()
                    .enumerate()
                    .filter(move |&(peer, _)| peer != s.shard)
                    .filter_map(move |(peer, &sent)| {
                        let taken = received(peer, s.shard)?;
                        let labels =
                            vec![("shard", s.shard.to_string()), ("peer", peer.to_string())];
                        Some((labels, sent.saturating_sub(taken) as i64))
                    })
            }),
        )?;
        counters(
            e,
            "shardlog_executor_busy_seconds",
            "Time the shard's executor spent running tasks, by shard.",
            shards.iter().map(|s| (shard_label(s), s.counters.executor.busy_seconds)),
        )?;
        counters(
            e,
            "shardlog_executor_busy_with_io_seconds",
            "Time the shard's executor spent running tasks and polling io, by shard.",
            shards.iter().map(|s| (shard_label(s), s.counters.executor.busy_with_io_seconds)),
        )?;
        counters(
            e,
            "shardlog_executor_tasks",
            "Tasks run by the shard's executor, by shard.",
            shards.iter().map(|s| (shard_label(s), s.counters.executor.tasks_executed)),
        )?;
        counters(
            e,
            "shardlog_executor_scheduler_runs",
            "Times the shard's scheduler picked a task queue, by shard.",
            shards.iter().map(|s| (shard_label(s), s.counters.executor.scheduler_runs)),
        )?;
        counters(
            e,
            "shardlog_executor_parks",
            "Times the shard's executor ran out of work and slept in the kernel, by shard.",
            shards.iter().map(|s| (shard_label(s), s.counters.executor.parks)),
        )?;
        counters(
            e,
            "shardlog_executor_parked_seconds",
            "Time the shard's executor slept in those parks, by shard.",
            shards.iter().map(|s| (shard_label(s), s.counters.executor.parked_seconds)),
        )?;

        // Storage and fetch.
        histograms(
            e,
            "shardlog_log_duration_seconds",
            "Storage and fetch durations, by shard and op: append (a produced batch until \
             it is below the high watermark), write (one DMA write of batches), fdatasync, \
             fetch_wait (the long poll of a Fetch that had too little data), read_wait \
             (a log read waiting for the disk: an on-demand DMA read, or a read-ahead still \
             in flight), fetch_read (one pass of a Fetch's reads on their owning shards, \
             timed on the connection's shard).",
            shards.iter().flat_map(|s| {
                Timed::ALL.iter().filter_map(move |&op| {
                    let h = s.counters.storage.latency.get(op as usize)?.clone();
                    Some((vec![("shard", s.shard.to_string()), ("op", op.name().to_string())], h))
                })
            }),
        )?;
        counters(
            e,
            "shardlog_cache_hits",
            "Log reads served from the batch cache, by shard.",
            shards.iter().map(|s| (shard_label(s), s.counters.storage.cache_hits)),
        )?;
        counters(
            e,
            "shardlog_cache_misses",
            "Log reads that read a segment file, by shard.",
            shards.iter().map(|s| (shard_label(s), s.counters.storage.cache_misses)),
        )?;
        counters(
            e,
            "shardlog_disk_read_bytes",
            "Bytes read from segment files (whole aligned DMA reads), by shard.",
            shards.iter().map(|s| (shard_label(s), s.counters.storage.disk_read_bytes)),
        )?;
        let per_shard = |f: fn(&ShardSnapshot) -> u64| {
            shards.iter().map(move |s| (shard_label(s), f(s) as i64))
        };
        gauges(
            e,
            "shardlog_partitions",
            "Data partitions with an open log, by owning shard.",
            per_shard(|s| s.partitions),
        )?;
        gauges(
            e,
            "shardlog_partitions_offline",
            "Owned partitions whose log could not be opened (answered with \
             KAFKA_STORAGE_ERROR), by shard.",
            per_shard(|s| s.offline_partitions),
        )?;
        gauges(
            e,
            "shardlog_log_size_bytes",
            "Bytes of record batches in the data partitions' logs, by owning shard.",
            per_shard(|s| s.log_bytes),
        )?;
        gauges(
            e,
            "shardlog_log_segments",
            "Segment files of the data partitions' logs, by owning shard.",
            per_shard(|s| s.segments),
        )?;
        gauges(
            e,
            "shardlog_cache_used_bytes",
            "Bytes in the shard's batch cache.",
            per_shard(|s| s.cache_used_bytes),
        )?;
        gauges(
            e,
            "shardlog_cache_budget_bytes",
            "The shard's batch cache budget (its share of --cache-bytes).",
            per_shard(|s| s.cache_budget_bytes),
        )?;
        gauges(
            e,
            "shardlog_cache_idle_bytes",
            "Bytes of idle buffers the shard keeps for its batch cache (faulted in, reused before any new allocation).",
            per_shard(|s| s.cache_idle_bytes),
        )?;
        counters(
            e,
            "shardlog_cache_buffers_allocated",
            "Buffers of an append arena's or read window's size the shard allocated because none of its idle ones fitted (each faulted in on the data path).",
            shards.iter().map(|s| (shard_label(s), s.cache_allocated_buffers)),
        )?;
        gauges(
            e,
            "shardlog_data_dir_free_bytes",
            "Bytes free on the filesystem holding the data dir (-1: unknown).",
            [(vec![], self.broker.data_dir_free_bytes)],
        )?;
        gauges(
            e,
            "shardlog_data_dir_size_bytes",
            "Size of the filesystem holding the data dir (-1: unknown).",
            [(vec![], self.broker.data_dir_total_bytes)],
        )?;

        // Transactions.
        let mut txn_states: BTreeMap<&str, u64> = BTreeMap::new();
        for (state, n) in shards.iter().flat_map(|s| &s.transactions.by_state) {
            *txn_states.entry(state).or_default() += n;
        }
        gauges(
            e,
            "shardlog_transactions",
            "Transactional ids, by transaction state (Kafka's names: Empty, Ongoing, \
             PrepareCommit, ...).",
            txn_states.into_iter().map(|(state, n)| (vec![("state", state.to_string())], n as i64)),
        )?;
        let txn =
            |f: fn(&TxnSummary) -> u64| shards.iter().map(|s| f(&s.transactions)).sum::<u64>();
        counters(
            e,
            "shardlog_transactions_completed",
            "Transactions whose markers were all written, by result (commit, abort).",
            [
                (vec![("result", "commit".to_string())], txn(|t| t.committed)),
                (vec![("result", "abort".to_string())], txn(|t| t.aborted)),
            ],
        )?;
        counters(
            e,
            "shardlog_transactions_timed_out",
            "Transactions the coordinator aborted for outliving their transaction.timeout.ms.",
            [(vec![], txn(|t| t.timed_out))],
        )?;
        counters(
            e,
            "shardlog_transaction_marker_retries",
            "Transaction marker writes to a partition that failed and were tried again.",
            [(vec![], txn(|t| t.marker_retries))],
        )?;

        // Groups.
        let groups = || shards.iter().flat_map(|s| &s.groups);
        let mut by_state: BTreeMap<(&str, &str), i64> = BTreeMap::new();
        for g in groups() {
            *by_state.entry((g.group_type, g.state.as_str())).or_default() += 1;
        }
        gauges(
            e,
            "shardlog_consumer_groups",
            "Consumer groups, by group type (classic, consumer) and state.",
            by_state.into_iter().map(|((ty, state), n)| {
                (vec![("type", ty.to_string()), ("state", state.to_string())], n)
            }),
        )?;
        gauges(
            e,
            "shardlog_consumer_group_members",
            "Members of each consumer group.",
            groups().map(|g| (vec![("group", g.group_id.clone())], g.members as i64)),
        )?;
        if !self.consumer_lag {
            return Ok(());
        }
        let high_watermarks: std::collections::HashMap<(&str, i32), i64> = shards
            .iter()
            .flat_map(|s| &s.high_watermarks)
            .map(|(t, p, hw)| ((t.as_str(), *p), *hw))
            .collect();
        let committed = || {
            groups().flat_map(|g| {
                g.offsets.iter().map(move |(t, p, offset)| {
                    let labels = vec![
                        ("group", g.group_id.clone()),
                        ("topic", t.clone()),
                        ("partition", p.to_string()),
                    ];
                    (labels, (t.as_str(), *p), *offset)
                })
            })
        };
        gauges(
            e,
            "shardlog_consumer_group_committed_offset",
            "Committed offset (the next record to consume) of each group and partition.",
            committed().map(|(labels, _, offset)| (labels, offset)),
        )?;
        gauges(
            e,
            "shardlog_consumer_group_lag",
            "High watermark minus committed offset (floored at 0), of each group and \
             partition of a topic that exists.",
            committed().filter_map(|(labels, key, offset)| {
                // A client may commit any offset: -1 or below means none.
                let hw = *high_watermarks.get(&key).filter(|_| offset >= 0)?;
                Some((labels, hw.saturating_sub(offset).max(0)))
            }),
        )?;
        Ok(())
    }
}

/// Reads the free and total bytes of the filesystem holding `dir` (-1 each on error).
pub fn data_dir_gauges(dir: &std::path::Path) -> BrokerGauges {
    match nix::sys::statvfs::statvfs(dir) {
        Ok(s) => {
            let frag = s.fragment_size() as i64;
            BrokerGauges {
                data_dir_free_bytes: s.blocks_available() as i64 * frag,
                data_dir_total_bytes: s.blocks() as i64 * frag,
            }
        }
        Err(_) => BrokerGauges { data_dir_free_bytes: -1, data_dir_total_bytes: -1 },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coordinator::GroupSummary;
    use crate::metrics::shard::ShardMetrics;
    use std::time::Duration;

    #[test]
    fn a_scrape_renders_counters_gauges_and_histograms() {
        let m = ShardMetrics::default();
        let t = [Duration::from_micros(30), Duration::from_millis(2), Duration::from_micros(70)];
        m.request(ApiKey::Produce, 9, t, &[6]);
        m.appended("orders", 1, 4096, 10);
        m.fetched("orders", 1, 50, 1);
        m.mesh_sent(0);
        m.mesh_sent(1);
        m.mesh_sent(1);
        m.mesh_sent(1);
        let other = ShardMetrics::default();
        other.mesh_received(0);
        other.fetched("orders", 1, 100, 2);
        let shard = ShardSnapshot {
            shard: 0,
            counters: m.counters(),
            partitions: 3,
            segments: 4,
            cache_idle_bytes: 7,
            cache_allocated_buffers: 3,
            groups: vec![GroupSummary {
                group_id: "g".into(),
                group_type: "classic",
                state: "Stable".into(),
                members: 2,
                offsets: vec![
                    ("orders".into(), 0, 40),
                    ("gone".into(), 0, 7),
                    ("orders".into(), 1, -1),
                    ("orders".into(), 2, i64::MIN),
                ],
            }],
            high_watermarks: vec![
                ("orders".into(), 0, 100),
                ("orders".into(), 1, 5),
                ("orders".into(), 2, 5),
            ],
            ..Default::default()
        };
        let shard = ShardSnapshot {
            transactions: TxnSummary {
                by_state: vec![("CompleteCommit", 2), ("Ongoing", 1)],
                committed: 5,
                aborted: 1,
                timed_out: 1,
                marker_retries: 0,
            },
            ..shard
        };
        let other = ShardSnapshot {
            shard: 1,
            counters: other.counters(),
            transactions: TxnSummary {
                by_state: vec![("Ongoing", 3)],
                committed: 2,
                marker_retries: 4,
                ..Default::default()
            },
            ..Default::default()
        };
        let text = render(Scrape {
            shards: vec![shard.into(), other.into()],
            broker: BrokerGauges { data_dir_free_bytes: 5, data_dir_total_bytes: 9 },
            consumer_lag: true,
            partition_series: true,
        });
        for line in [
            "# TYPE shardlog_requests_total counter",
            r#"shardlog_requests_total{shard="0",api="Produce",version="9"} 1"#,
            r#"shardlog_request_errors_total{shard="0",api="Produce",error="NOT_LEADER_OR_FOLLOWER"} 1"#,
            r#"shardlog_request_duration_seconds_bucket{shard="0",api="Produce",phase="handle",le="0.001"} 0"#,
            r#"shardlog_request_duration_seconds_bucket{shard="0",api="Produce",phase="handle",le="0.0025"} 1"#,
            r#"shardlog_request_duration_seconds_bucket{shard="0",api="Produce",phase="handle",le="+Inf"} 1"#,
            r#"shardlog_request_duration_seconds_sum{shard="0",api="Produce",phase="handle"} 0.002"#,
            r#"shardlog_cache_idle_bytes{shard="0"} 7"#,
            r#"shardlog_cache_idle_bytes{shard="1"} 0"#,
            r#"shardlog_cache_buffers_allocated_total{shard="0"} 3"#,
            r#"shardlog_cache_buffers_allocated_total{shard="1"} 0"#,
            r#"shardlog_topic_bytes_in_total{topic="orders"} 4096"#,
            r#"shardlog_topic_records_in_total{topic="orders"} 10"#,
            r#"shardlog_topic_bytes_out_total{topic="orders"} 150"#,
            r#"shardlog_partition_bytes_in_total{topic="orders",partition="1"} 4096"#,
            r#"shardlog_partition_bytes_out_total{topic="orders",partition="1"} 150"#,
            r#"shardlog_mesh_messages_sent_total{shard="0",peer="1"} 3"#,
            r#"shardlog_mesh_queue_depth{shard="0",peer="1"} 2"#,
            r#"shardlog_partitions{shard="0"} 3"#,
            r#"shardlog_log_segments{shard="0"} 4"#,
            r#"shardlog_executor_parks_total{shard="1"} 0"#,
            r#"shardlog_consumer_groups{type="classic",state="Stable"} 1"#,
            r#"shardlog_consumer_group_members{group="g"} 2"#,
            r#"shardlog_transactions{state="CompleteCommit"} 2"#,
            r#"shardlog_transactions{state="Ongoing"} 4"#,
            r#"shardlog_transactions_completed_total{result="commit"} 7"#,
            r#"shardlog_transactions_completed_total{result="abort"} 1"#,
            "shardlog_transactions_timed_out_total 1",
            "shardlog_transaction_marker_retries_total 4",
            "shardlog_data_dir_free_bytes 5",
            r#"shardlog_consumer_group_committed_offset{group="g",topic="orders",partition="0"} 40"#,
            r#"shardlog_consumer_group_committed_offset{group="g",topic="gone",partition="0"} 7"#,
            r#"shardlog_consumer_group_lag{group="g",topic="orders",partition="0"} 60"#,
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line:?} in:\n{text}");
        }
        // No lag for an offset below 0 (a client may commit anything).
        assert!(
            !text.contains(r#"shardlog_consumer_group_lag{group="g",topic="orders",partition="1""#)
        );
        assert!(
            !text.contains(r#"shardlog_consumer_group_lag{group="g",topic="orders",partition="2""#)
        );
        // No lag for a topic without a high watermark (deleted).
        assert!(!text.contains(r#"shardlog_consumer_group_lag{group="g",topic="gone""#), "{text}");
        // A shard's messages to itself are not series.
        assert!(!text.contains(r#"shard="0",peer="0""#), "{text}");
    }

    #[test]
    fn partition_and_lag_series_can_be_left_out() {
        let m = ShardMetrics::default();
        m.appended("orders", 0, 10, 1);
        let shard = ShardSnapshot {
            counters: m.counters(),
            groups: vec![GroupSummary {
                group_id: "g".into(),
                group_type: "classic",
                state: "Empty".into(),
                members: 0,
                offsets: vec![("orders".into(), 0, 0)],
            }],
            high_watermarks: vec![("orders".into(), 0, 1)],
            ..Default::default()
        };
        let text = render(Scrape {
            shards: vec![shard.into()],
            broker: BrokerGauges { data_dir_free_bytes: 5, data_dir_total_bytes: 9 },
            consumer_lag: false,
            partition_series: false,
        });
        assert!(text.lines().any(|l| l == r#"shardlog_topic_bytes_in_total{topic="orders"} 10"#));
        for gone in ["shardlog_partition_bytes", "shardlog_consumer_group_lag", "committed_offset"]
        {
            assert!(!text.contains(gone), "{gone} in:\n{text}");
        }
    }
}

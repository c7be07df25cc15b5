//! [`TxnHost`]: runs the pure [`TxnCoordinator`] for the transactional ids a shard
//! coordinates, with their durable state in internal logs (KIP-98).
//!
//! Placement follows Kafka's `__transaction_state`: a transactional id belongs to
//! partition `abs(javaHashCode(id)) % 50` ([`crate::txn::partition_for`]), and partition
//! `p` lives on shard `p % nr_shards`. Each partition is a [`PartitionLog`] under
//! `<data-dir>/meta/transaction-state-<p>/` holding one record batch per
//! `__transaction_state` record (Kafka's `TransactionLogKey` / `TransactionLogValue`,
//! a null value for a tombstone), created on its first write and fdatasync'ed before a
//! write counts. At start-up the shard replays its partitions into the coordinator
//! before it serves; transactions found in PrepareCommit / PrepareAbort get their
//! markers sent again.
//!
//! A request ([`TxnCall`]) runs the coordinator's decision loop: allocate a producer id
//! when asked (control shard), append the record it wants durable, report the append,
//! and, after a PrepareCommit / PrepareAbort, send the markers
//! ([`DataRequest::WriteTxnMarkers`] to every owning shard, retried until written),
//! then write the CompleteCommit / CompleteAbort record. A timer task aborts timed-out
//! transactions and expires idle transactional ids.
//!
//! Lives on: every shard, each with its own coordinator for its own ids.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Duration;

use futures_channel::oneshot;

use super::groups::internal_log_config;
use super::internal_logs::InternalLogs;
use super::messages::{Reply, TxnMarkerWrite};
use super::{ControlRequest, DataRequest, Shard};
use crate::clock::now_ms;
use crate::config::Config;
use crate::error::{KafkaResult, ResponseError};
use crate::log::PartitionLog;
use crate::protocol::control::{ControlType, EndTxnMarker};
use crate::protocol::strings::topic_name;
use crate::txn::{
    Decision, ListFilter, ProducerIdAndEpoch, TopicPartition, TransactionVersion, TxnConfig,
    TxnCoordinator, TxnDescription, TxnListing, TxnMarkers, TxnRecord, TxnResult, TxnWrite,
    WriteDone,
};

/// Partitions of `__transaction_state` (Kafka's `transaction.state.log.num.partitions`
/// default).
pub const TXN_PARTITIONS: i32 = 50;

/// The coordinator epoch of every partition: a single broker never hands a partition
/// over, so the epoch a marker carries never changes.
const COORDINATOR_EPOCH: i32 = 0;

/// Pause between two tries at writing markers a partition refused (ms).
const MARKER_RETRY_MS: u64 = 100;

/// The shard that coordinates `transactional_id`.
pub fn coordinator_shard(transactional_id: &str, nr_shards: usize) -> usize {
    crate::txn::partition_for(transactional_id, TXN_PARTITIONS) as usize % nr_shards.max(1)
}

/// Each partition of a verification, with its error (None: in the transaction).
pub type Verified = Vec<(TopicPartition, Option<ResponseError>)>;

/// A transaction request as it crosses to the coordinating shard (already decoded;
/// the handler builds the response from the typed answer).
#[derive(Debug)]
pub enum TxnCall {
    /// InitProducerId with a transactional id.
    InitProducerId {
        transactional_id: String,
        timeout_ms: i32,
        expected: Option<ProducerIdAndEpoch>,
        reply: Reply<KafkaResult<ProducerIdAndEpoch>>,
    },
    /// AddPartitionsToTxn (not verify-only).
    AddPartitions {
        transactional_id: String,
        producer_id: i64,
        producer_epoch: i16,
        partitions: BTreeSet<TopicPartition>,
        reply: Reply<KafkaResult<()>>,
    },
    /// AddOffsetsToTxn: the group's `__consumer_offsets` partition joins the transaction.
    AddOffsets {
        transactional_id: String,
        producer_id: i64,
        producer_epoch: i16,
        offsets_partition: i32,
        reply: Reply<KafkaResult<()>>,
    },
    /// Are these partitions in the producer's ongoing transaction (KIP-890 part 1)?
    Verify {
        transactional_id: String,
        producer_id: i64,
        producer_epoch: i16,
        partitions: Vec<TopicPartition>,
        reply: Reply<KafkaResult<Verified>>,
    },
    /// EndTxn.
    EndTxn {
        transactional_id: String,
        producer_id: i64,
        producer_epoch: i16,
        result: TxnResult,
        client_version: TransactionVersion,
        reply: Reply<KafkaResult<ProducerIdAndEpoch>>,
    },
    /// DescribeTransactions for one id.
    Describe { transactional_id: String, reply: Reply<KafkaResult<TxnDescription>> },
    /// ListTransactions over this shard's ids.
    List { filter: ListFilter, reply: Reply<KafkaResult<TxnListing>> },
}

/// The transaction coordinator runtime of one shard. Lives on that shard only.
pub struct TxnHost {
    coordinator: RefCell<TxnCoordinator>,
    /// Owned `__transaction_state` partitions opened so far (created on first write;
    /// opened again after a failed write).
    logs: InternalLogs,
    /// Markers of transactions loaded in PrepareCommit / PrepareAbort, sent once the
    /// shard runs ([`TxnHost::run_timers`]).
    resend: RefCell<Vec<TxnMarkers>>,
    abort_interval_ms: u64,
    expire_interval_ms: u64,
    /// `--debug-txn-marker-delay-ms`: a wait before each transaction's markers (tests).
    marker_delay: Duration,
    /// Counters for the metrics endpoint.
    stats: TxnStats,
}

/// What this shard's transaction coordinator did since start (monotonic counters).
#[derive(Debug, Default)]
struct TxnStats {
    /// Transactions whose COMMIT / ABORT markers were all written.
    committed: Cell<u64>,
    aborted: Cell<u64>,
    /// Transactions aborted by the coordinator for outliving their timeout.
    timed_out: Cell<u64>,
    /// Marker writes to one partition that failed and were tried again.
    marker_retries: Cell<u64>,
}

/// A shard's transaction coordinator for a scrape: transactional ids by state, and
/// its counters since start.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TxnSummary {
    /// `(state name, transactional ids in it)`, by state name (Kafka's names:
    /// "Ongoing", "PrepareCommit", ...); states without ids are left out.
    pub by_state: Vec<(&'static str, u64)>,
    /// Transactions completed by commit / by abort (all markers written).
    pub committed: u64,
    pub aborted: u64,
    /// Transactions the coordinator aborted for outliving their timeout.
    pub timed_out: u64,
    /// Marker writes to a partition that failed and were retried.
    pub marker_retries: u64,
}

impl TxnHost {
    /// Opens the `__transaction_state` partitions shard `id` owns and replays them.
    pub async fn open(config: &Config, id: usize, nr_shards: usize) -> std::io::Result<TxnHost> {
        let txn_config = TxnConfig {
            num_partitions: TXN_PARTITIONS,
            max_timeout_ms: config.transaction_max_timeout_ms,
            transactional_id_expiration_ms: config.transactional_id_expiration_ms,
            ..TxnConfig::default()
        };
        let mut coordinator = TxnCoordinator::new(txn_config);
        let meta_dir = config.data_dir.join("meta");
        let mut logs = HashMap::new();
        let mut resend = Vec::new();
        let mut loaded = 0usize;
        let now = now_ms();
        for p in (0..TXN_PARTITIONS).filter(|p| *p as usize % nr_shards.max(1) == id) {
            coordinator.begin_load(p, COORDINATOR_EPOCH);
            let dir = txn_dir(&meta_dir, p);
            if dir.exists() {
                let log = PartitionLog::open(dir.clone(), internal_log_config(config)).await?;
                loaded += replay(&log, &mut coordinator, p, &dir).await?;
                logs.insert(p as usize, log);
            }
            resend.extend(coordinator.finish_load(p, now));
        }
        if loaded > 0 {
            tracing::info!(
                shard = id,
                records = loaded,
                unfinished = resend.len(),
                "transaction coordinator loaded"
            );
        }
        Ok(TxnHost {
            coordinator: RefCell::new(coordinator),
            logs: InternalLogs::new(
                meta_dir,
                TXN_DIR_PREFIX,
                "transaction state partition",
                internal_log_config(config),
                logs,
            ),
            resend: RefCell::new(resend),
            abort_interval_ms: config.transaction_abort_timed_out_transaction_cleanup_interval_ms,
            expire_interval_ms: config.transaction_remove_expired_transaction_cleanup_interval_ms,
            marker_delay: Duration::from_millis(config.debug_txn_marker_delay_ms),
            stats: TxnStats::default(),
        })
    }

    /// Serves one call; its answer goes to the call's reply.
    pub async fn serve(self: &Rc<Self>, shard: &Rc<Shard>, call: TxnCall) {
        match call {
            TxnCall::InitProducerId { transactional_id, timeout_ms, expected, reply } => {
                let id = transactional_id.as_str();
                let r = self
                    .decide(shard, |c, fresh, now| {
                        c.init_producer_id(id, timeout_ms, expected, fresh, now)
                    })
                    .await;
                let _ = reply.send(r);
            }
            TxnCall::AddPartitions {
                transactional_id,
                producer_id,
                producer_epoch,
                partitions,
                reply,
            } => {
                let id = transactional_id.as_str();
                let r = self
                    .decide(shard, |c, _, now| {
                        unit(c.add_partitions(id, producer_id, producer_epoch, &partitions, now))
                    })
                    .await;
                let _ = reply.send(r.map(|_| ()));
            }
            TxnCall::AddOffsets {
                transactional_id,
                producer_id,
                producer_epoch,
                offsets_partition,
                reply,
            } => {
                let id = transactional_id.as_str();
                let r = self
                    .decide(shard, |c, _, now| {
                        unit(c.add_offsets(id, producer_id, producer_epoch, offsets_partition, now))
                    })
                    .await;
                let _ = reply.send(r.map(|_| ()));
            }
            TxnCall::Verify {
                transactional_id,
                producer_id,
                producer_epoch,
                partitions,
                reply,
            } => {
                let r = self.coordinator.borrow().verify_partitions(
                    &transactional_id,
                    producer_id,
                    producer_epoch,
                    &partitions,
                );
                let _ = reply.send(r);
            }
            TxnCall::EndTxn {
                transactional_id,
                producer_id,
                producer_epoch,
                result,
                client_version,
                reply,
            } => {
                let id = transactional_id.as_str();
                let r = self
                    .decide(shard, |c, fresh, now| {
                        c.end_txn(
                            id,
                            producer_id,
                            producer_epoch,
                            result,
                            client_version,
                            fresh,
                            now,
                        )
                    })
                    .await;
                let _ = reply.send(r);
            }
            TxnCall::Describe { transactional_id, reply } => {
                let _ = reply.send(self.coordinator.borrow().describe(&transactional_id));
            }
            TxnCall::List { filter, reply } => {
                let _ = reply.send(self.coordinator.borrow().list(&filter, now_ms()));
            }
        }
    }

    /// Runs `decide` until it answers: allocates a producer id when it asks for one,
    /// and carries out the write it wants (then answers what the write's completion
    /// says, and sends its markers in the background).
    async fn decide(
        self: &Rc<Self>,
        shard: &Rc<Shard>,
        decide: impl Fn(&mut TxnCoordinator, Option<i64>, i64) -> Decision<ProducerIdAndEpoch>,
    ) -> KafkaResult<ProducerIdAndEpoch> {
        let mut fresh = None;
        loop {
            let decision = decide(&mut self.coordinator.borrow_mut(), fresh, now_ms());
            match decision {
                Decision::Answer(r) => return r,
                Decision::NeedProducerId if fresh.is_none() => {
                    let rx = shard
                        .ask_control(|reply| ControlRequest::AllocateProducerId { reply })
                        .await;
                    fresh = Some(rx.await.unwrap_or(Err(ResponseError::CoordinatorNotAvailable))?);
                }
                Decision::NeedProducerId => return Err(ResponseError::UnknownServerError),
                Decision::Write(w) => return self.write(shard, w).await.answer,
            }
        }
    }

    /// Appends `w`'s record durably, reports it to the coordinator, and starts sending
    /// the markers its completion asks for.
    async fn write(self: &Rc<Self>, shard: &Rc<Shard>, w: TxnWrite) -> WriteDone {
        let result = self.append(&w).await;
        let done = self.coordinator.borrow_mut().write_completed(&w, result, now_ms());
        if let Some(markers) = done.markers.clone() {
            let (host, shard) = (self.clone(), shard.clone());
            glommio::spawn_local(async move { host.send_markers(&shard, markers).await }).detach();
        }
        done
    }

    /// One `__transaction_state` record batch, durable when this returns Ok.
    async fn append(&self, w: &TxnWrite) -> KafkaResult<()> {
        let Some((key, value)) = w.record.encode() else {
            return Err(ResponseError::RecordListTooLarge);
        };
        let now = now_ms();
        let records = [(Some(key.into()), value.map(Into::into), now)];
        let batch = crate::protocol::records::encode_plain_batch(
            records,
            kafka_protocol::records::Compression::None,
        )
        .map_err(|_| ResponseError::UnknownServerError)?;
        let log = self.log_for(w.partition).await.map_err(|e| {
            tracing::error!(partition = w.partition, error = %e, "opening a transaction state partition failed");
            ResponseError::KafkaStorageError
        })?;
        log.append(batch, now).await.map(|_| ()).map_err(|e| {
            tracing::warn!(partition = w.partition, error = %e, "transaction state write failed");
            ResponseError::from(&e)
        })
    }

    /// The log of partition `p`, created on first use.
    async fn log_for(&self, p: i32) -> std::io::Result<Rc<PartitionLog>> {
        let p = usize::try_from(p).map_err(|_| std::io::Error::other("negative partition"))?;
        self.logs.log_for(p).await
    }

    /// Writes the markers of one transaction to every partition in it (retrying those
    /// refused, dropping those whose topic is gone), then writes its completion record.
    async fn send_markers(self: &Rc<Self>, shard: &Rc<Shard>, markers: TxnMarkers) {
        let control_type = match markers.result {
            TxnResult::Commit => ControlType::Commit,
            TxnResult::Abort => ControlType::Abort,
        };
        let marker = EndTxnMarker { control_type, coordinator_epoch: markers.coordinator_epoch };
        let mut left: Vec<TopicPartition> = markers.partitions.iter().cloned().collect();
        if !self.marker_delay.is_zero() {
            glommio::timer::sleep(self.marker_delay).await;
        }
        let mut tries = 0u32;
        while !left.is_empty() {
            if tries > 0 {
                if shard.stopping.is_fired() {
                    return;
                }
                glommio::timer::sleep(Duration::from_millis(MARKER_RETRY_MS)).await;
            }
            tries += 1;
            let catalog = shard.catalog();
            let mut by_shard: HashMap<usize, Vec<TopicPartition>> = HashMap::new();
            let mut gone = Vec::new();
            for tp in left.drain(..) {
                match catalog.owner(&tp.0, tp.1) {
                    Some(owner) => by_shard.entry(owner).or_default().push(tp),
                    None => gone.push(tp),
                }
            }
            for tp in gone {
                tracing::info!(topic = %tp.0, partition = tp.1, transactional_id = %markers.transactional_id, "no transaction marker for a partition that no longer exists");
            }
            let mut waits = Vec::new();
            for (owner, tps) in by_shard {
                let writes = tps
                    .iter()
                    .map(|(topic, partition)| TxnMarkerWrite {
                        topic: topic_name(topic),
                        partition: *partition,
                        producer_id: markers.producer_id,
                        producer_epoch: markers.producer_epoch,
                        marker,
                    })
                    .collect();
                let (reply, rx) = oneshot::channel();
                shard.send(owner, DataRequest::WriteTxnMarkers { markers: writes, reply }).await;
                waits.push((tps, rx));
            }
            for (tps, rx) in waits {
                let results = rx.await.unwrap_or_default();
                for (i, tp) in tps.into_iter().enumerate() {
                    match results.get(i).copied().unwrap_or(Err(ResponseError::RequestTimedOut)) {
                        Ok(()) => {}
                        Err(ResponseError::UnknownTopicOrPartition) => {}
                        Err(
                            e @ (ResponseError::TransactionCoordinatorFenced
                            | ResponseError::InvalidProducerEpoch),
                        ) => {
                            tracing::warn!(topic = %tp.0, partition = tp.1, transactional_id = %markers.transactional_id, error = %e, "transaction marker refused; not retried");
                        }
                        Err(e) => {
                            if tries == 1 || tries.is_multiple_of(100) {
                                tracing::warn!(topic = %tp.0, partition = tp.1, transactional_id = %markers.transactional_id, error = %e, "transaction marker not written; retrying");
                            }
                            self.stats.marker_retries.set(self.stats.marker_retries.get() + 1);
                            left.push(tp);
                        }
                    }
                }
            }
        }
        let done = match markers.result {
            TxnResult::Commit => &self.stats.committed,
            TxnResult::Abort => &self.stats.aborted,
        };
        done.set(done.get() + 1);
        let complete = self.coordinator.borrow_mut().markers_written(&markers);
        if let Some(w) = complete {
            // Box: `write` may start another `send_markers` (never for a completion).
            Box::pin(self.write(shard, w)).await;
        }
    }

    /// Sends the markers of transactions loaded half-way, then, until the shard stops,
    /// aborts timed-out transactions and expires idle transactional ids.
    pub async fn run_timers(self: Rc<Self>, shard: Rc<Shard>, stop: crate::shutdown::Shutdown) {
        for markers in self.resend.take() {
            let (host, shard) = (self.clone(), shard.clone());
            glommio::spawn_local(async move { host.send_markers(&shard, markers).await }).detach();
        }
        let tick = self.abort_interval_ms.min(self.expire_interval_ms).max(1);
        let (mut next_abort, mut next_expire) = (0u64, self.expire_interval_ms);
        let mut elapsed = 0u64;
        while !stop.is_requested() {
            glommio::timer::sleep(Duration::from_millis(tick.min(1_000))).await;
            elapsed += tick.min(1_000);
            if elapsed >= next_abort {
                next_abort = elapsed + self.abort_interval_ms;
                let writes = self.coordinator.borrow_mut().abort_timed_out_transactions(now_ms());
                self.stats.timed_out.set(self.stats.timed_out.get() + writes.len() as u64);
                for w in writes {
                    tracing::info!(transactional_id = %w.record.transactional_id, "aborting a transaction that outlived its timeout");
                    let (host, shard) = (self.clone(), shard.clone());
                    glommio::spawn_local(async move { host.write(&shard, w).await }).detach();
                }
            }
            if elapsed >= next_expire {
                next_expire = elapsed + self.expire_interval_ms;
                let writes = self.coordinator.borrow_mut().expire_transactional_ids(now_ms());
                for w in writes {
                    let (host, shard) = (self.clone(), shard.clone());
                    glommio::spawn_local(async move { host.write(&shard, w).await }).detach();
                }
            }
        }
    }

    /// The partitions open on this shard, with their logs, in partition order.
    pub fn open_logs(&self) -> Vec<(usize, Rc<PartitionLog>)> {
        self.logs.open_logs()
    }

    /// This shard's transactions by state and its counters, for the metrics endpoint.
    pub fn summary(&self) -> TxnSummary {
        let mut by_state: std::collections::BTreeMap<&'static str, u64> = Default::default();
        if let Ok(listing) = self.coordinator.borrow().list(&ListFilter::default(), now_ms()) {
            for t in listing.transactions {
                *by_state.entry(t.state.name()).or_default() += 1;
            }
        }
        TxnSummary {
            by_state: by_state.into_iter().collect(),
            committed: self.stats.committed.get(),
            aborted: self.stats.aborted.get(),
            timed_out: self.stats.timed_out.get(),
            marker_retries: self.stats.marker_retries.get(),
        }
    }

    /// Closes every open partition log.
    pub async fn close(&self) {
        self.logs.close().await
    }
}

/// `Decision<()>` as the shared decision loop's type (the value is unused).
fn unit(d: Decision<()>) -> Decision<ProducerIdAndEpoch> {
    match d {
        Decision::Answer(r) => Decision::Answer(r.map(|()| ProducerIdAndEpoch::NONE)),
        Decision::NeedProducerId => Decision::NeedProducerId,
        Decision::Write(w) => Decision::Write(w),
    }
}

/// Partition `p` lives in `meta/transaction-state-<p>/`.
const TXN_DIR_PREFIX: &str = "transaction-state";

fn txn_dir(meta_dir: &Path, p: i32) -> PathBuf {
    meta_dir.join(format!("{TXN_DIR_PREFIX}-{p}"))
}

/// Feeds every record of partition `p`'s log to the loading coordinator; returns how
/// many. Undecodable records are skipped with a warning.
async fn replay(
    log: &PartitionLog,
    coordinator: &mut TxnCoordinator,
    p: i32,
    dir: &Path,
) -> std::io::Result<usize> {
    let mut offset = log.log_start_offset();
    let end = log.high_watermark();
    let mut count = 0;
    while offset < end {
        let chunk = log
            .read(offset, 1 << 20)
            .await
            .map_err(|e| std::io::Error::other(format!("reading {}: {e}", dir.display())))?;
        if chunk.is_empty() {
            break;
        }
        let mut pos = 0;
        while pos < chunk.len() {
            let h = crate::protocol::batch::RecordBatchHeader::parse(&chunk[pos..])
                .map_err(|e| std::io::Error::other(format!("decoding {}: {e}", dir.display())))?;
            let size = h.total_size();
            offset = offset.max(h.next_offset());
            let batch = &chunk[pos..pos + size];
            pos += size;
            if h.is_control() {
                continue;
            }
            let decoded = crate::protocol::records::decode_records(batch)
                .map_err(|e| std::io::Error::other(format!("decoding {}: {e}", dir.display())))?;
            for r in &decoded.records {
                let Some(key) = decoded.key(r) else { continue };
                match TxnRecord::decode(key, decoded.value(r)) {
                    Ok(record) => {
                        coordinator.load_record(p, record);
                        count += 1;
                    }
                    Err(e) => tracing::warn!(
                        partition = %crate::log::log_name(dir),
                        offset = r.offset,
                        error = ?e,
                        "skipping an undecodable transaction state record"
                    ),
                }
            }
        }
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn init(shard: &Rc<Shard>, id: &str) -> KafkaResult<ProducerIdAndEpoch> {
        let (reply, rx) = oneshot::channel();
        let call = TxnCall::InitProducerId {
            transactional_id: id.to_string(),
            timeout_ms: 60_000,
            expected: None,
            reply,
        };
        shard.txns.serve(shard, call).await;
        rx.await.expect("answered")
    }

    /// A `__transaction_state` log whose write failed is opened again from its files
    /// (after the back-off), and writes resume: as the offsets partitions do.
    #[test]
    fn a_failed_transaction_state_write_is_refused_then_the_log_reopens() {
        crate::shard::testing::with_shard(|shard| async move {
            let first = init(&shard, "t1").await.expect("first InitProducerId");
            assert_eq!(first.producer_epoch, 0);
            let logs = shard.txns.logs.open_logs();
            assert_eq!(logs.len(), 1);
            let (p, failed) = logs[0].clone();
            failed.fail_for_test();
            // Within the back-off the failed log stays.
            shard.txns.logs.set_last_reopen(Some(std::time::Instant::now()));
            assert_eq!(init(&shard, "t1").await, Err(ResponseError::NotCoordinator));
            assert!(Rc::ptr_eq(&shard.txns.logs.existing(p).unwrap(), &failed));
            // After it, the next write starts the reopen (and still meets the failed log).
            shard.txns.logs.set_last_reopen(None);
            assert_eq!(init(&shard, "t1").await, Err(ResponseError::NotCoordinator));
            let mut waited = 0;
            while Rc::ptr_eq(&shard.txns.logs.existing(p).unwrap(), &failed) {
                assert!(waited < 200, "the transaction state partition was never opened again");
                glommio::timer::sleep(Duration::from_millis(10)).await;
                waited += 1;
            }
            // The failed tries changed nothing: the epoch is bumped once, from 0.
            let after = init(&shard, "t1").await.expect("InitProducerId after the reopen");
            assert_eq!((after.producer_id, after.producer_epoch), (first.producer_id, 1));
            // Written: the two successful InitProducerId records.
            assert_eq!(shard.txns.logs.existing(p).unwrap().high_watermark(), 2);
        });
    }
}

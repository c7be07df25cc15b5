//! [`GroupHost`]: runs the pure [`GroupCoordinator`] for the groups a shard
//! coordinates, with their durable state in internal logs.
//!
//! Placement follows Kafka's `__consumer_offsets`: a group belongs to offsets
//! partition `abs(javaHashCode(group_id)) % OFFSETS_PARTITIONS`, and offsets
//! partition `p` lives on shard `p % nr_shards`. Each offsets partition is a
//! [`PartitionLog`] under `<data-dir>/meta/consumer-offsets-<p>/` holding one record
//! per [`GroupRecord`] (key/value as its `encode` gives them, null value for
//! tombstones), one record batch per record, except a TxnOffsetCommit's offsets: one
//! transactional batch of the producer, later ended by a COMMIT or ABORT marker
//! ([`GroupHost::write_txn_marker`]). At start-up the shard replays its partitions
//! into the coordinator (later records override earlier ones; a transaction's offsets
//! wait for its marker) before it serves.
//!
//! Lives on: every shard, each with its own coordinator for its own groups.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;
use futures_channel::oneshot;
use futures_lite::future;
use kafka_protocol::messages::{RequestKind, ResponseKind};
use kafka_protocol::records::{Compression, RecordBatchDecoder};

use super::append_barrier::AppendBarrier;
use super::internal_logs::InternalLogs;
use crate::clock::now_ms;
use crate::config::{Config, FlushPolicy};
use crate::coordinator::{
    answer_failed_write_with, CoordinatorConfig, GroupCoordinator, GroupRecord, Output,
    RequestToken, FAILED_WRITE_ERROR,
};
use crate::error::ResponseError;
use crate::log::AppendError;
use crate::log::{LogConfig, PartitionLog};
use crate::metadata::{Catalog, OffsetsPlacement};
use crate::protocol::control::ControlType;

/// Number of offsets partitions (Kafka's `offsets.topic.num.partitions` default), the
/// partitions of the internal topic `__consumer_offsets`.
pub const OFFSETS_PARTITIONS: usize = crate::metadata::OFFSETS_TOPIC_PARTITIONS;

/// How often the timer loop looks for due coordinator deadlines, at most (ms).
const TICK_MS: u64 = 100;

/// Java's `String.hashCode` over UTF-16 code units, as Kafka uses for placement.
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(c as i32))
}

/// The offsets partition of `group_id` under `placement` (Kafka:
/// `GroupMetadataManager.partitionFor`).
pub fn offsets_partition(group_id: &str, placement: OffsetsPlacement) -> usize {
    placement.partition(java_string_hash(group_id))
}

/// The shard that coordinates `group_id`.
pub fn coordinator_shard(group_id: &str, nr_shards: usize, placement: OffsetsPlacement) -> usize {
    offsets_partition(group_id, placement) % nr_shards.max(1)
}

/// A group request as it crosses to the coordinating shard.
#[derive(Debug)]
pub struct GroupCall {
    pub request: RequestKind,
    pub api_version: i16,
    pub client_id: String,
    pub client_host: String,
}

/// The group coordinator runtime of one shard. Lives on that shard only (every shard
/// has one, for the groups it coordinates).
pub struct GroupHost {
    /// Shared with the group-state writes in flight, which undo a failed commit.
    coordinator: Rc<RefCell<GroupCoordinator>>,
    /// Owned offsets partitions opened so far. A partition's log is created on its
    /// first write, so a fresh broker starts without 50 always-synced logs to create.
    logs: InternalLogs,
    /// Parked and in-flight requests waiting for their `Respond`.
    waiting: RefCell<HashMap<RequestToken, oneshot::Sender<ResponseKind>>>,
    next_token: Cell<RequestToken>,
    /// How groups map to offsets partitions in this data dir.
    placement: OffsetsPlacement,
    /// This shard's id and the number of shards: it owns the offsets partitions `p`
    /// with `p % nr_shards == shard_id`.
    shard_id: usize,
    nr_shards: usize,
    /// Responses wait here for the group-state writes started before them.
    barrier: Rc<AppendBarrier>,
    /// Outputs of the coordinator's reaction to a failed write
    /// ([`GroupCoordinator::group_write_failed`]), carried out by the group timers.
    deferred: Rc<RefCell<Vec<Output>>>,
    /// The group-state writes in flight, by group: each write's flag is set if it
    /// fails. A response to a group's request also fails when a write of that group
    /// started before it (by any request) fails, as it may say what that write
    /// changed (Kafka fails the responses deferred on a failed offset).
    writing: WritesInFlight,
}

/// Group id -> the flags of that group's writes in flight (set when one fails).
type WritesInFlight = Rc<RefCell<HashMap<Rc<str>, Vec<WriteFlag>>>>;

/// Set when a write fails, to the error the responses that depend on it get.
type WriteFlag = Rc<Cell<Option<ResponseError>>>;

impl GroupHost {
    /// Opens the offsets partitions shard `id` owns and replays them.
    pub async fn open(
        config: &Config,
        id: usize,
        nr_shards: usize,
        placement: OffsetsPlacement,
    ) -> std::io::Result<GroupHost> {
        let coordinator_config = CoordinatorConfig {
            min_session_timeout_ms: config.group_min_session_timeout_ms,
            max_session_timeout_ms: config.group_max_session_timeout_ms,
            initial_rebalance_delay_ms: config.group_initial_rebalance_delay_ms,
            offsets_retention_ms: config.offsets_retention_minutes.saturating_mul(60_000),
            ..CoordinatorConfig::default()
        };
        let mut coordinator = GroupCoordinator::new(coordinator_config);
        coordinator.set_loading(true, now_ms());
        let mut logs = HashMap::new();
        let mut loaded = 0usize;
        let meta_dir = config.data_dir.join("meta");
        for p in (0..OFFSETS_PARTITIONS).filter(|p| p % nr_shards.max(1) == id) {
            let dir = offsets_dir(&meta_dir, p);
            if !dir.exists() {
                continue;
            }
            let log = PartitionLog::open(dir.clone(), internal_log_config(config)).await?;
            let in_partition = |g: &str| offsets_partition(g, placement) == p;
            loaded += replay(&log, &mut coordinator, &dir, &in_partition).await?;
            logs.insert(p, log);
        }
        coordinator.set_loading(false, now_ms());
        tracing::info!(
            shard = id,
            records = loaded,
            groups = coordinator.group_count(),
            "group coordinator loaded"
        );
        Ok(GroupHost {
            coordinator: Rc::new(RefCell::new(coordinator)),
            logs: InternalLogs::new(
                meta_dir,
                OFFSETS_DIR_PREFIX,
                "offsets partition",
                internal_log_config(config),
                logs,
            ),
            waiting: RefCell::new(HashMap::new()),
            next_token: Cell::new(1),
            placement,
            shard_id: id,
            nr_shards: nr_shards.max(1),
            barrier: Rc::new(AppendBarrier::default()),
            deferred: Rc::default(),
            writing: Rc::default(),
        })
    }

    /// How groups map to offsets partitions (and so to shards) in this data dir.
    pub fn placement(&self) -> OffsetsPlacement {
        self.placement
    }

    /// Feeds one request to the coordinator. Its response arrives on `reply`, maybe
    /// much later (a parked JoinGroup or SyncGroup). Appends it causes are started
    /// before this returns, so they keep the order of the requests.
    pub async fn submit(&self, call: GroupCall, reply: oneshot::Sender<ResponseKind>) {
        let token = self.next_token.get();
        self.next_token.set(token + 1);
        self.waiting.borrow_mut().insert(token, reply);
        let now = now_ms();
        let v = call.api_version;
        let group = group_of(&call.request);
        // What a commit replaces, to put back if its write fails.
        let previous = match &call.request {
            RequestKind::OffsetCommit(r) => {
                let c = self.coordinator.borrow();
                let group = r.group_id.0.as_str();
                r.topics
                    .iter()
                    .flat_map(|t| t.partitions.iter().map(move |p| (t.name.0.as_str(), p)))
                    .map(|(topic, p)| {
                        let record = c.offset_as_record(group, topic, p.partition_index);
                        ((topic.to_string(), p.partition_index), record)
                    })
                    .collect()
            }
            _ => HashMap::new(),
        };
        let outputs = {
            let mut c = self.coordinator.borrow_mut();
            match call.request {
                RequestKind::JoinGroup(r) => {
                    c.join_group(token, v, r, &call.client_id, &call.client_host, now)
                }
                RequestKind::SyncGroup(r) => c.sync_group(token, v, r, now),
                RequestKind::Heartbeat(r) => c.heartbeat(token, v, r, now),
                RequestKind::LeaveGroup(r) => c.leave_group(token, v, r, now),
                RequestKind::OffsetCommit(r) => c.offset_commit(token, v, r, now),
                RequestKind::TxnOffsetCommit(r) => c.txn_offset_commit(token, v, r, now),
                RequestKind::OffsetFetch(r) => c.offset_fetch(token, v, r, now),
                RequestKind::ListGroups(r) => c.list_groups(token, v, r, now),
                RequestKind::DescribeGroups(r) => c.describe_groups(token, v, r, now),
                RequestKind::DeleteGroups(r) => c.delete_groups(token, v, r, now),
                RequestKind::OffsetDelete(r) => c.offset_delete(token, v, r, now),
                RequestKind::ConsumerGroupHeartbeat(r) => {
                    c.consumer_group_heartbeat(token, v, r, &call.client_id, &call.client_host, now)
                }
                RequestKind::ConsumerGroupDescribe(r) => {
                    c.consumer_group_describe(token, v, r, now)
                }
                other => {
                    tracing::error!(request = ?other, "not a group request");
                    self.waiting.borrow_mut().remove(&token);
                    Vec::new()
                }
            }
        };
        self.run_undoing(outputs, previous, Some(group.as_deref())).await;
    }

    /// Ends producer `producer_id`'s transaction in offsets partition `p`, as Kafka's
    /// `GroupCoordinator.completeTransaction` does for a WriteTxnMarkers request that
    /// names a `__consumer_offsets` partition: appends the marker (a COMMIT control
    /// batch when `commit`, else ABORT, of `producer_epoch`, written by the
    /// transaction coordinator of epoch `coordinator_epoch`;
    /// [`crate::protocol::control::encode_marker_batch`]) to the partition's log, and
    /// once it is durable applies it
    /// ([`GroupCoordinator::complete_transaction`] for the groups of `p`): the
    /// producer's pending offsets there become committed offsets, or are dropped.
    ///
    /// The append starts before this returns (so it keeps its place after the group
    /// writes started before it); the returned future yields when it is done: `Ok`, or
    /// NOT_COORDINATOR (`p` is not one of this shard's offsets partitions, or the
    /// write failed: the marker is not applied, the transaction coordinator retries),
    /// INVALID_PRODUCER_EPOCH (the log has seen a newer epoch of the producer). The
    /// coordinator epoch is written, not checked (the log keeps no coordinator epoch
    /// per producer yet; Kafka answers TRANSACTION_COORDINATOR_FENCED for an older one).
    pub async fn write_txn_marker(
        &self,
        p: usize,
        producer_id: i64,
        producer_epoch: i16,
        coordinator_epoch: i32,
        commit: bool,
    ) -> Pin<Box<dyn Future<Output = Result<(), ResponseError>>>> {
        let refused = |e| -> Pin<Box<dyn Future<Output = _>>> { Box::pin(future::ready(Err(e))) };
        if p >= OFFSETS_PARTITIONS || p % self.nr_shards != self.shard_id {
            return refused(ResponseError::NotCoordinator);
        }
        let log = match self.log_for(p).await {
            Ok(log) => log,
            Err(e) => {
                tracing::error!(partition = p, error = %e, "creating an offsets partition failed");
                return refused(FAILED_WRITE_ERROR);
            }
        };
        let now = now_ms();
        let control_type = if commit { ControlType::Commit } else { ControlType::Abort };
        let marker = crate::protocol::control::EndTxnMarker { control_type, coordinator_epoch };
        let Ok(batch) =
            crate::protocol::control::encode_marker_batch(producer_id, producer_epoch, marker, now)
        else {
            return refused(ResponseError::UnknownServerError);
        };
        let (coordinator, placement) = (self.coordinator.clone(), self.placement);
        let (tx, rx) = oneshot::channel();
        // In a task of its own once started: the marker is applied even if the caller
        // stops waiting.
        let mut append: Pin<Box<dyn Future<Output = ()>>> = Box::pin(async move {
            let answer = match log.append(batch, now).await {
                Ok(_) => {
                    let in_partition = |g: &str| offsets_partition(g, placement) == p;
                    let mut c = coordinator.borrow_mut();
                    c.complete_transaction(producer_id, commit, &in_partition);
                    Ok(())
                }
                Err(AppendError::InvalidProducerEpoch) => Err(ResponseError::InvalidProducerEpoch),
                Err(e) => {
                    tracing::error!(
                        partition = p,
                        producer_id,
                        error = %e,
                        "writing a transaction marker failed"
                    );
                    Err(FAILED_WRITE_ERROR)
                }
            };
            let _ = tx.send(answer);
        });
        if future::poll_once(&mut append).await.is_none() {
            glommio::spawn_local(append).detach();
        }
        Box::pin(async move { rx.await.unwrap_or(Err(FAILED_WRITE_ERROR)) })
    }

    /// Tells the coordinator the topics that exist (KIP-848 server-side assignment
    /// needs their ids and partition counts). Called after every catalog change.
    pub async fn set_topics(&self, catalog: &Catalog) {
        // Internal topics included: a regex that matches `__consumer_offsets` gets its
        // partitions assigned, as Kafka's coordinator resolves regexes against every
        // topic (franz-go's Test848RegexBrokerResolves checks it).
        let topics = catalog
            .topics
            .values()
            .map(|t| (t.name.clone(), (t.id, t.partition_shards.len() as i32)))
            .collect();
        let outputs = self.coordinator.borrow_mut().set_topic_metadata(topics, now_ms());
        self.run(outputs).await;
    }

    /// Calls `tick` whenever a deadline is due; runs until the shard stops.
    pub async fn run_timers(self: Rc<Self>, stop: crate::shutdown::Shutdown) {
        while !stop.is_requested() {
            let deferred = std::mem::take(&mut *self.deferred.borrow_mut());
            if !deferred.is_empty() {
                self.run(deferred).await;
            }
            let now = now_ms();
            let due = self.coordinator.borrow().next_deadline().is_some_and(|d| d <= now);
            if due {
                let outputs = self.coordinator.borrow_mut().tick(now);
                self.run(outputs).await;
            }
            let wait = self
                .coordinator
                .borrow()
                .next_deadline()
                .map_or(TICK_MS, |d| (d - now_ms()).clamp(1, TICK_MS as i64) as u64);
            glommio::timer::sleep(Duration::from_millis(wait)).await;
        }
    }

    /// The groups this shard coordinates, for the metrics endpoint.
    pub fn summaries(&self) -> Vec<crate::coordinator::GroupSummary> {
        self.coordinator.borrow().group_summaries()
    }

    /// The offsets partitions open on this shard, with their logs, in partition order.
    pub fn open_logs(&self) -> Vec<(usize, Rc<PartitionLog>)> {
        self.logs.open_logs()
    }

    /// The log of offsets partition `p` if this shard has created it.
    pub fn existing_log(&self, p: usize) -> Option<Rc<PartitionLog>> {
        self.logs.existing(p)
    }

    /// The log of offsets partition `p`, created on first use (by a write, or by a
    /// consumer of `__consumer_offsets`, which then reads an empty partition); opened
    /// again after a failed write ([`InternalLogs::log_for`]).
    pub async fn log_for(&self, p: usize) -> std::io::Result<Rc<PartitionLog>> {
        self.logs.log_for(p).await
    }

    /// Carries out outputs in order: appends start now; each response leaves once
    /// every append started before it (by any request) is written, see
    /// [`AppendBarrier`]. (The first write to an offsets partition waits for the
    /// partition to be created.)
    ///
    /// A response that follows a write of the same request that failed (or found no
    /// offsets partition to go to) is answered with [`answer_failed_write`]'s error
    /// instead: the client is not told that something is stored when it is not.
    async fn run(&self, outputs: Vec<Output>) {
        self.run_undoing(outputs, HashMap::new(), None).await
    }

    /// [`GroupHost::run`], and a commit whose write fails is undone in memory before
    /// anyone waiting for that write is answered: `previous` holds, by (topic,
    /// partition), the record that puts back what the commit replaced
    /// ([`GroupCoordinator::offset_as_record`]). `request`: `Some` when the outputs are
    /// one request's, so a failed write of this request, or one of its group
    /// (`Some(Some(group))`) started earlier by another request, turns the responses
    /// after it into errors; `None` (a timer's outputs mix groups): a failed write is
    /// only logged.
    async fn run_undoing(
        &self,
        outputs: Vec<Output>,
        previous: HashMap<(String, i32), GroupRecord>,
        request: Option<Option<&str>>,
    ) {
        let answer_failures = request.is_some();
        let request_group = request.flatten();
        // This group's writes started before (their own responses wait for them too).
        let earlier: Vec<(Rc<str>, WriteFlag)> = request_group
            .and_then(|g| {
                let writing = self.writing.borrow();
                let (name, flags) = writing.get_key_value(g)?;
                Some(flags.iter().map(|f| (name.clone(), f.clone())).collect())
            })
            .unwrap_or_default();
        for output in &outputs {
            let record = match output {
                Output::Persist(record) => Some(record),
                Output::PersistTransactional { records, .. } => records.first(),
                Output::Respond { .. } => None,
            };
            if let Some(record) = record {
                let p = offsets_partition(record.group(), self.placement);
                if let Err(e) = self.log_for(p).await {
                    tracing::error!(
                        partition = p,
                        group = record.group(),
                        error = %e,
                        "creating an offsets partition failed"
                    );
                }
            }
        }
        // Appends start now, in output order (the first poll assigns the offset).
        // Each response leaves once every append started before it, by this request
        // or an earlier one, has finished: what a client is told is durable first.
        let mut appends: Vec<Pin<Box<dyn Future<Output = ()>>>> = Vec::new();
        let mut later = Vec::new();
        // One flag per write of this call, set if it fails; a response depends on the
        // writes before it (only in a call for one request: a timer's call mixes groups,
        // and its writes are only logged).
        let mut written: Vec<(Rc<str>, WriteFlag)> = earlier;
        for output in outputs {
            match output {
                Output::Persist(record) => {
                    let failed: WriteFlag = Rc::new(Cell::new(None));
                    let group: Rc<str> = Rc::from(record.group());
                    written.push((group.clone(), failed.clone()));
                    let Some(log) =
                        self.logs.existing(offsets_partition(record.group(), self.placement))
                    else {
                        tracing::error!(
                            group = record.group(),
                            "no offsets partition on this shard for the group; answering NOT_COORDINATOR"
                        );
                        failed.set(Some(FAILED_WRITE_ERROR));
                        if let Some(previous) = undo_of(&record, &previous) {
                            self.coordinator.borrow_mut().revert_offset(&record, previous);
                        }
                        continue;
                    };
                    let batch = encode_record(&record);
                    let seq = self.barrier.start();
                    let barrier = self.barrier.clone();
                    let undo = undo_of(&record, &previous);
                    let coordinator = self.coordinator.clone();
                    let deferred = self.deferred.clone();
                    let writing = self.writing.clone();
                    writing.borrow_mut().entry(group.clone()).or_default().push(failed.clone());
                    let mut append: Pin<Box<dyn Future<Output = ()>>> = Box::pin(async move {
                        let result = log.append(batch, now_ms()).await;
                        forget_write(&writing, &group, &failed);
                        if result.is_ok() {
                            coordinator.borrow_mut().group_write_succeeded(&record);
                        }
                        if let Err(e) = result {
                            // Memory goes back to what is stored (a commit), and the
                            // response says the write failed.
                            tracing::error!(
                                group = %group,
                                error = %e,
                                "writing group state failed; answering NOT_COORDINATOR"
                            );
                            failed.set(Some(FAILED_WRITE_ERROR));
                            let mut c = coordinator.borrow_mut();
                            if let Some(previous) = undo {
                                c.revert_offset(&record, previous);
                            }
                            // A group's metadata: it rebalances (the group timers carry
                            // out what that answers).
                            deferred.borrow_mut().extend(c.group_write_failed(&record, now_ms()));
                        }
                        barrier.finish(seq);
                    });
                    if future::poll_once(&mut append).await.is_none() {
                        appends.push(append);
                    }
                }
                Output::PersistTransactional { producer_id, producer_epoch, records } => {
                    let Some(group) = records.first().map(|r| Rc::<str>::from(r.group())) else {
                        continue;
                    };
                    // Only this request's response depends on it: a refused or failed
                    // transactional write changed nothing other requests were told.
                    let failed: WriteFlag = Rc::new(Cell::new(None));
                    written.push((group.clone(), failed.clone()));
                    let p = offsets_partition(&group, self.placement);
                    let Some(log) = self.logs.existing(p) else {
                        tracing::error!(
                            group = %group,
                            "no offsets partition on this shard for the group; answering NOT_COORDINATOR"
                        );
                        failed.set(Some(FAILED_WRITE_ERROR));
                        let mut c = self.coordinator.borrow_mut();
                        c.transactional_write_failed(producer_id, &records);
                        continue;
                    };
                    let batch = encode_transactional(producer_id, producer_epoch, &records);
                    let seq = self.barrier.start();
                    let barrier = self.barrier.clone();
                    let coordinator = self.coordinator.clone();
                    let mut append: Pin<Box<dyn Future<Output = ()>>> = Box::pin(async move {
                        if let Err(e) = log.append(batch, now_ms()).await {
                            let error = match e {
                                AppendError::InvalidProducerEpoch => {
                                    ResponseError::InvalidProducerEpoch
                                }
                                _ => {
                                    tracing::error!(
                                        group = %group,
                                        error = %e,
                                        "writing transactional offsets failed; answering NOT_COORDINATOR"
                                    );
                                    FAILED_WRITE_ERROR
                                }
                            };
                            failed.set(Some(error));
                            let mut c = coordinator.borrow_mut();
                            c.transactional_write_failed(producer_id, &records);
                        }
                        barrier.finish(seq);
                    });
                    if future::poll_once(&mut append).await.is_none() {
                        appends.push(append);
                    }
                }
                Output::Respond { token, mut response } => {
                    let Some(tx) = self.waiting.borrow_mut().remove(&token) else {
                        continue;
                    };
                    let depends = if answer_failures { written.clone() } else { Vec::new() };
                    match self.barrier.wait_for_started() {
                        None => {
                            answer_failures_of(&depends, &mut response);
                            let _ = tx.send(response);
                        }
                        Some(durable) => later.push((durable, depends, tx, Box::new(response))),
                    }
                }
            }
        }
        // Each append and each waiting response on its own: a response waits for the
        // appends started before it, not for the later ones of its own request.
        for append in appends {
            glommio::spawn_local(append).detach();
        }
        for (durable, depends, tx, mut response) in later {
            glommio::spawn_local(async move {
                let _ = durable.await;
                answer_failures_of(&depends, &mut response);
                let _ = tx.send(*response);
            })
            .detach();
        }
    }

    /// Closes the offsets partitions (shutdown).
    pub async fn close(&self) {
        self.logs.close().await
    }
}

/// Turns `response` into the failed-write error if a write it depends on (by group)
/// failed: per group for DeleteGroups (each group's tombstones are its own writes),
/// the whole response otherwise (one request, one group).
fn answer_failures_of(depends: &[(Rc<str>, WriteFlag)], response: &mut ResponseKind) {
    let failed: Vec<&str> =
        depends.iter().filter(|(_, f)| f.get().is_some()).map(|(g, _)| &**g).collect();
    let Some(error) = depends.iter().find_map(|(_, f)| f.get()) else {
        return;
    };
    if let ResponseKind::DeleteGroups(r) = response {
        for result in &mut r.results {
            if result.error_code == 0 && failed.contains(&result.group_id.0.as_str()) {
                result.error_code = crate::coordinator::FAILED_WRITE_ERROR.code();
            }
        }
        return;
    }
    answer_failed_write_with(response, error);
}

/// Takes a finished write's `flag` out of the writes in flight of `group`.
fn forget_write(writing: &WritesInFlight, group: &Rc<str>, flag: &WriteFlag) {
    let mut writing = writing.borrow_mut();
    if let Some(flags) = writing.get_mut(group) {
        flags.retain(|f| !Rc::ptr_eq(f, flag));
        if flags.is_empty() {
            writing.remove(group);
        }
    }
}

/// The group a request that may change group state is for (None for the others, and
/// for DeleteGroups, which names several).
fn group_of(request: &RequestKind) -> Option<String> {
    let id = match request {
        RequestKind::JoinGroup(r) => &r.group_id,
        RequestKind::SyncGroup(r) => &r.group_id,
        RequestKind::Heartbeat(r) => &r.group_id,
        RequestKind::LeaveGroup(r) => &r.group_id,
        RequestKind::OffsetCommit(r) => &r.group_id,
        RequestKind::TxnOffsetCommit(r) => &r.group_id,
        RequestKind::OffsetDelete(r) => &r.group_id,
        RequestKind::ConsumerGroupHeartbeat(r) => &r.group_id,
        _ => return None,
    };
    Some(id.0.to_string())
}

/// What puts back the offset an Offset `record` of this call replaced, if any.
fn undo_of(
    record: &GroupRecord,
    previous: &HashMap<(String, i32), GroupRecord>,
) -> Option<GroupRecord> {
    match record {
        GroupRecord::Offset { topic, partition, .. } => {
            previous.get(&(topic.clone(), *partition)).cloned()
        }
        _ => None,
    }
}

/// Offsets partition `p` lives in `meta/consumer-offsets-<p>/`.
const OFFSETS_DIR_PREFIX: &str = "consumer-offsets";

fn offsets_dir(meta_dir: &Path, p: usize) -> PathBuf {
    meta_dir.join(format!("{OFFSETS_DIR_PREFIX}-{p}"))
}

/// The settings of the shard's internal logs (offsets and `__transaction_state`).
pub(super) fn internal_log_config(config: &Config) -> LogConfig {
    LogConfig {
        segment_bytes: config.offsets_topic_segment_bytes,
        index_interval_bytes: config.index_interval_bytes,
        // Committed offsets are acknowledged only once durable, whatever the data
        // topics' policy: a kill -9 must not lose an acknowledged commit.
        flush: FlushPolicy::Always,
        flush_interval_ms: config.flush_interval_ms,
        cache_bytes: 64 << 10,
        shard_cache: None,
        log_append_time: false,
        zero_fill_max_write: config.zero_fill_max_write_bytes,
        recovery_point_bytes: config.recovery_point_bytes,
        write_from_arena: config.write_from_arena,
        segment_ms: i64::MAX,
    }
}

/// One record batch holding the record's keys and values
/// ([`GroupRecord::encode_records`]: one record, two for a group tombstone; null
/// values for tombstones).
fn encode_record(record: &GroupRecord) -> Bytes {
    let now = now_ms();
    let records = record
        .encode_records()
        .into_iter()
        .map(|(key, value)| (Some(Bytes::from(key)), value.map(Bytes::from), now));
    // Encoding an uncompressed v2 batch into memory cannot fail.
    crate::protocol::records::encode_plain_batch(records, Compression::None)
        .expect("encoding an in-memory record batch")
}

/// One transactional record batch of `producer_id` at `producer_epoch` holding the
/// offset records (Kafka's coordinator writes a TxnOffsetCommit's records so).
fn encode_transactional(producer_id: i64, producer_epoch: i16, records: &[GroupRecord]) -> Bytes {
    let now = now_ms();
    let records = records
        .iter()
        .flat_map(GroupRecord::encode_records)
        .map(|(key, value)| (Some(Bytes::from(key)), value.map(Bytes::from), now));
    // Encoding an uncompressed v2 batch into memory cannot fail.
    crate::protocol::records::encode_transactional_batch(
        producer_id,
        producer_epoch,
        records,
        Compression::None,
    )
    .expect("encoding an in-memory record batch")
}

/// Replays one offsets partition into the coordinator, whose groups are those
/// `in_partition` accepts; returns the record count. The records of a transactional
/// batch are pending for its producer until a control batch of that producer ends the
/// transaction ([`GroupCoordinator::complete_transaction`]); without one they stay
/// pending, as in Kafka's `CoordinatorLoaderImpl`.
async fn replay(
    log: &PartitionLog,
    coordinator: &mut GroupCoordinator,
    dir: &Path,
    in_partition: &dyn Fn(&str) -> bool,
) -> std::io::Result<usize> {
    let mut offset = log.log_start_offset();
    let end = log.high_watermark();
    let mut count = 0;
    while offset < end {
        let mut chunk = log
            .read(offset, 1 << 20)
            .await
            .map_err(|e| std::io::Error::other(format!("reading {}: {e}", dir.display())))?;
        if chunk.is_empty() {
            break;
        }
        while !chunk.is_empty() {
            // Advance by the batch's last offset, not its last record's: compaction
            // keeps a batch's offset range when it drops records at its end.
            let header = crate::protocol::batch::RecordBatchHeader::parse(&chunk)
                .map_err(|e| std::io::Error::other(format!("decoding {}: {e}", dir.display())))?;
            offset = offset.max(header.next_offset());
            if header.is_control() {
                let batch = chunk.split_to(header.total_size());
                match crate::protocol::control::read_marker(&batch) {
                    Ok(Some(m)) => coordinator.complete_transaction(
                        header.producer_id,
                        m.control_type == ControlType::Commit,
                        in_partition,
                    ),
                    Ok(None) => {}
                    Err(e) => tracing::warn!(
                        partition = %crate::log::log_name(dir),
                        offset = header.base_offset,
                        error = %e,
                        "skipping a control batch that is not a transaction marker"
                    ),
                }
                continue;
            }
            let transactional = header.is_transactional().then_some(header.producer_id);
            let set = RecordBatchDecoder::decode(&mut chunk)
                .map_err(|e| std::io::Error::other(format!("decoding {}: {e}", dir.display())))?;
            for r in set.records {
                let Some(key) = r.key.as_deref() else { continue };
                match GroupRecord::decode(key, r.value.as_deref()) {
                    Ok(record) => {
                        coordinator.replay(r.offset, transactional, record);
                        count += 1;
                    }
                    Err(e) => {
                        tracing::warn!(
                            partition = %crate::log::log_name(dir),
                            offset = r.offset,
                            error = ?e,
                            "skipping an undecodable group record"
                        )
                    }
                }
            }
        }
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use bytes::BytesMut;
    use kafka_protocol::records::{Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType};

    use super::*;

    /// The error codes of an OffsetCommit of `g`'s t/0 at `offset` (a standalone
    /// commit: generation -1, no member), through the shard's group host.
    async fn commit_codes(host: &GroupHost, offset: i64) -> Vec<i16> {
        commit_codes_of(host, "g", offset).await
    }

    /// The response to `request` at `version`, submitted to `host` as a client's.
    async fn call(host: &GroupHost, request: RequestKind, version: i16) -> ResponseKind {
        let call = GroupCall {
            request,
            api_version: version,
            client_id: "test".into(),
            client_host: "/127.0.0.1".into(),
        };
        let (tx, rx) = oneshot::channel();
        host.submit(call, tx).await;
        rx.await.expect("the group host answers")
    }

    /// [`commit_codes`] for group `group`.
    async fn commit_codes_of(host: &GroupHost, group: &str, offset: i64) -> Vec<i16> {
        use kafka_protocol::messages::offset_commit_request::{
            OffsetCommitRequestPartition, OffsetCommitRequestTopic,
        };
        use kafka_protocol::messages::{GroupId, OffsetCommitRequest, TopicName};
        use kafka_protocol::protocol::StrBytes;
        let partition = OffsetCommitRequestPartition::default()
            .with_partition_index(0)
            .with_committed_offset(offset);
        let topic = OffsetCommitRequestTopic::default()
            .with_name(TopicName(StrBytes::from_static_str("t")))
            .with_partitions(vec![partition]);
        let request = OffsetCommitRequest::default()
            .with_group_id(GroupId(StrBytes::from_string(group.to_string())))
            .with_generation_id_or_member_epoch(-1)
            .with_topics(vec![topic]);
        let response = call(host, RequestKind::OffsetCommit(request), 8).await;
        let ResponseKind::OffsetCommit(r) = response else { panic!("no OffsetCommit answer") };
        r.topics.iter().flat_map(|t| t.partitions.iter().map(|p| p.error_code)).collect()
    }

    /// DeleteGroups of two groups whose offsets partitions differ, one of which fails
    /// its write: only that group's result is NOT_COORDINATOR.
    #[test]
    fn delete_groups_reports_a_failed_write_per_group() {
        use kafka_protocol::messages::{DeleteGroupsRequest, GroupId};
        use kafka_protocol::protocol::StrBytes;
        crate::shard::testing::with_shard(|shard| async move {
            let host = &shard.groups;
            let p = |g: &str| offsets_partition(g, host.placement);
            let other = (0..).map(|i| format!("g{i}")).find(|g| p(g) != p("g")).unwrap();
            assert_eq!(commit_codes_of(host, "g", 1).await, vec![0]);
            assert_eq!(commit_codes_of(host, &other, 1).await, vec![0]);
            host.existing_log(p("g")).unwrap().fail_for_test();
            host.logs.set_last_reopen(Some(std::time::Instant::now()));
            let ids = ["g", other.as_str()].map(|g| GroupId(StrBytes::from_string(g.into())));
            let request = DeleteGroupsRequest::default().with_groups_names(ids.to_vec());
            let response = call(host, RequestKind::DeleteGroups(request), 2).await;
            let ResponseKind::DeleteGroups(r) = response else { panic!("no answer") };
            let codes: Vec<(String, i16)> =
                r.results.iter().map(|g| (g.group_id.0.to_string(), g.error_code)).collect();
            assert_eq!(codes, vec![("g".to_string(), 16), (other, 0)]);
        });
    }

    /// A commit whose write fails is answered NOT_COORDINATOR (not success); the
    /// offsets partition is opened again on a later write and commits succeed again.
    /// A KIP-848 heartbeat of member `member` at `epoch` (0: join) of group "k",
    /// subscribed to "t"; the response's (error code, member epoch).
    fn cg_beat(member: &str, epoch: i32) -> RequestKind {
        use kafka_protocol::messages::{ConsumerGroupHeartbeatRequest, GroupId, TopicName};
        use kafka_protocol::protocol::StrBytes;
        let mut r = ConsumerGroupHeartbeatRequest::default()
            .with_group_id(GroupId(StrBytes::from_static_str("k")))
            .with_member_id(StrBytes::from_string(member.to_string()))
            .with_member_epoch(epoch);
        if epoch == 0 {
            r = r
                .with_rebalance_timeout_ms(30_000)
                .with_subscribed_topic_names(Some(vec![TopicName(StrBytes::from_static_str("t"))]))
                .with_topic_partitions(Some(vec![]));
        }
        RequestKind::ConsumerGroupHeartbeat(r)
    }

    fn code_and_epoch(r: ResponseKind) -> (i16, i32) {
        match r {
            ResponseKind::ConsumerGroupHeartbeat(r) => (r.error_code, r.member_epoch),
            other => panic!("unexpected {other:?}"),
        }
    }

    /// A KIP-848 group's write fails: the group goes back to what is stored, and a
    /// heartbeat that writes nothing but came in while that write was in flight fails
    /// too (it was told what the failed write changed: here, b's epoch).
    #[test]
    fn a_failed_consumer_group_write_fails_the_groups_responses_behind_it() {
        crate::shard::testing::with_shard(|shard| async move {
            let host = &shard.groups;
            assert_eq!(code_and_epoch(call(host, cg_beat("a", 0), 0).await), (0, 1));
            let logs = host.open_logs();
            assert_eq!(logs.len(), 1);
            host.logs.set_last_reopen(Some(std::time::Instant::now()));
            // b joins, and heartbeats again while the write of its record is in flight;
            // then that write fails.
            let mut replies = Vec::new();
            for request in [cg_beat("b", 0), cg_beat("b", 2)] {
                let call = GroupCall {
                    request,
                    api_version: 0,
                    client_id: "test".into(),
                    client_host: "/127.0.0.1".into(),
                };
                let (tx, rx) = oneshot::channel();
                host.submit(call, tx).await;
                replies.push(rx);
            }
            let beat = replies.pop().unwrap();
            let joined = replies.pop().unwrap();
            logs[0].1.fail_for_test();
            assert_eq!(code_and_epoch(joined.await.unwrap()), (16, 2));
            assert_eq!(code_and_epoch(beat.await.unwrap()), (16, 2));
            // Memory is what is stored: a alone at epoch 1; b is unknown.
            assert_eq!(host.coordinator.borrow().consumer_group_state("k"), Some(("Stable", 1, 1)));
            assert_eq!(code_and_epoch(call(host, cg_beat("b", 2), 0).await).0, 25);
        });
    }

    #[test]
    fn a_failed_group_write_answers_not_coordinator_then_the_log_reopens() {
        crate::shard::testing::with_shard(|shard| async move {
            let host = &shard.groups;
            assert_eq!(commit_codes(host, 5).await, vec![0]);
            let logs = host.open_logs();
            assert_eq!(logs.len(), 1);
            let (p, first) = logs[0].clone();
            first.fail_for_test();
            // Within the back-off the failed log stays: the write fails.
            host.logs.set_last_reopen(Some(std::time::Instant::now()));
            assert_eq!(commit_codes(host, 6).await, vec![16]);
            assert!(Rc::ptr_eq(&host.existing_log(p).unwrap(), &first));
            // Memory went back to what is stored: offset 5, as a restart would show.
            let committed =
                |host: &GroupHost| match host.coordinator.borrow().offset_as_record("g", "t", 0) {
                    GroupRecord::Offset { offset, .. } => offset,
                    other => panic!("no committed offset: {other:?}"),
                };
            assert_eq!(committed(host), 5);
            // After it, a write starts opening the partition again from its files (in
            // a task of its own: this commit still meets the failed log).
            host.logs.set_last_reopen(None);
            assert_eq!(commit_codes(host, 7).await, vec![16]);
            assert_eq!(committed(host), 5);
            let mut waited = 0;
            while Rc::ptr_eq(&host.existing_log(p).unwrap(), &first) {
                assert!(waited < 200, "the offsets partition was never opened again");
                glommio::timer::sleep(std::time::Duration::from_millis(10)).await;
                waited += 1;
            }
            assert_eq!(commit_codes(host, 8).await, vec![0]);
            assert_eq!(committed(host), 8);
            let reopened = host.existing_log(p).unwrap();
            assert!(!reopened.write_failed());
            // Written: the commits of offsets 5 and 8, one record batch each.
            assert_eq!(reopened.high_watermark(), 2);
        });
    }

    /// A commit record with `metadata_len` bytes of metadata.
    fn commit(partition: i32, offset: i64, seq: i32, metadata_len: usize) -> Record {
        let (key, value) = GroupRecord::Offset {
            group: "g".into(),
            topic: "t".into(),
            partition,
            offset,
            leader_epoch: -1,
            metadata: "m".repeat(metadata_len),
            commit_timestamp_ms: 1,
            expire_timestamp_ms: None,
        }
        .encode();
        Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 0,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset: seq as i64 + 1,
            // kafka-protocol keeps records in one batch while offset - sequence stays.
            sequence: seq,
            timestamp: 1,
            key: Some(Bytes::from(key)),
            value: Some(Bytes::from(value)),
            headers: Default::default(),
        }
    }

    /// A group tombstone is one record batch of two records (the log appends a buffer
    /// as one batch: a second batch in it would be lost).
    #[test]
    fn a_group_tombstone_is_one_batch_of_two_records() {
        let bytes = encode_record(&GroupRecord::GroupTombstone { group: "k".into() });
        let header = crate::protocol::batch::RecordBatchHeader::parse(&bytes).unwrap();
        assert_eq!(header.batch_length as usize + 12, bytes.len());
        assert_eq!((header.records_count, header.base_sequence), (2, -1));
        let mut chunk = bytes.clone();
        let set = RecordBatchDecoder::decode(&mut chunk).unwrap();
        let keys: Vec<_> = set.records.iter().map(|r| r.key.clone().unwrap().to_vec()).collect();
        assert_eq!(keys, vec![b"\x00\x02\x00\x01k".to_vec(), b"\x7f\xff\x00\x01k".to_vec()]);
        assert!(set.records.iter().all(|r| r.value.is_none()));
    }

    /// A deleted KIP-848 group stays deleted once compaction has dropped its tombstone:
    /// the tombstone covers the consumer group's own key too, so its last record goes
    /// with it (before, that record outlived the tombstone and a restart brought back
    /// an empty group).
    #[test]
    fn a_deleted_consumer_group_stays_deleted_after_compaction() {
        use kafka_protocol::messages::{DeleteGroupsRequest, GroupId};
        use kafka_protocol::protocol::StrBytes;
        crate::shard::testing::with_shard(|shard| async move {
            let host = &shard.groups;
            assert_eq!(code_and_epoch(call(host, cg_beat("a", 0), 0).await), (0, 1));
            assert_eq!(code_and_epoch(call(host, cg_beat("a", -1), 0).await), (0, -1));
            let request = DeleteGroupsRequest::default()
                .with_groups_names(vec![GroupId(StrBytes::from_static_str("k"))]);
            let ResponseKind::DeleteGroups(r) =
                call(host, RequestKind::DeleteGroups(request), 2).await
            else {
                panic!("no answer")
            };
            assert_eq!(r.results[0].error_code, 0);
            let p = offsets_partition("k", host.placement);
            let log = host.existing_log(p).unwrap();
            // Another group's commit on the same partition after each pass gives the
            // next pass dirty data to clean.
            let neighbour =
                (0..).map(|i| format!("n{i}")).find(|g| offsets_partition(g, host.placement) == p);
            let neighbour = neighbour.unwrap();
            let policy = crate::log::cleaner::CompactionPolicy {
                delete_retention_ms: 0,
                ..Default::default()
            };
            let limits = crate::log::cleaner::CleanerLimits::default();
            for pass in 0..2 {
                assert_eq!(commit_codes_of(host, &neighbour, pass).await, vec![0]);
                log.roll_active().await.unwrap();
                let now = crate::clock::now_ms() + 1 + pass;
                assert!(log.compact(&policy, &limits, now, true).await.unwrap().is_some());
            }
            // What a restart loads: the neighbour's group and nothing of "k".
            let mut coordinator = GroupCoordinator::new(CoordinatorConfig::default());
            let dir = tempfile::tempdir().unwrap();
            replay(&log, &mut coordinator, dir.path(), &|_| true).await.unwrap();
            assert_eq!(coordinator.consumer_group_state("k"), None);
            match coordinator.offset_as_record(&neighbour, "t", 0) {
                GroupRecord::Offset { offset, .. } => assert_eq!(offset, 1),
                other => panic!("the neighbour's commit is lost: {other:?}"),
            }
        });
    }

    /// A compacted offsets log may hold a batch whose last records were removed (its
    /// offset range kept): replay must go on after the batch, not after its last record.
    #[test]
    fn replay_advances_past_a_batch_whose_last_records_were_compacted_away() {
        use clap::Parser;
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("consumer-offsets-0");
        // The replay runs on its own thread: a replay that never advances never yields
        // either, so the test thread watches the clock.
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let _executor = glommio::LocalExecutorBuilder::default()
            .spawn(move || async move {
                let config = Config::parse_from(["shardlog"]);
                let log =
                    PartitionLog::open(dir.clone(), internal_log_config(&config)).await.unwrap();
                let encode = |records: Vec<Record>| {
                    let mut buf = BytesMut::new();
                    let options =
                        RecordEncodeOptions { version: 2, compression: Compression::None };
                    RecordBatchEncoder::encode(&mut buf, records.iter(), &options).unwrap();
                    buf.freeze()
                };
                // Batch 1 (offsets 0-200): commits of partitions 2-201 with 4,000 bytes of
                // metadata each, then partition 1 at offset 200. Batch 2 (offsets
                // 201-301): partition 1 again, then partitions 300-399. A 1 MiB read
                // returns batch 1 alone; compaction drops its last record.
                let mut first: Vec<Record> =
                    (0..200).map(|i| commit(i + 2, 5, i - 1, 4000)).collect();
                first.push(commit(1, 6, 199, 0));
                log.append(encode(first), 1).await.unwrap();
                let mut second = vec![commit(1, 7, -1, 0)];
                second.extend((0..100).map(|i| commit(300 + i, 5, i, 4000)));
                log.append(encode(second), 1).await.unwrap();
                log.roll_active().await.unwrap();
                let policy = crate::log::cleaner::CompactionPolicy::default();
                let limits = crate::log::cleaner::CleanerLimits::default();
                let done = log.compact(&policy, &limits, 10, true).await.unwrap().unwrap();
                assert_eq!(done.records_removed, 1, "{done:?}");
                let mut coordinator = GroupCoordinator::new(CoordinatorConfig::default());
                let replayed = replay(&log, &mut coordinator, &dir, &|_| true).await.unwrap();
                log.close().await.unwrap();
                let _ = done_tx.send(replayed);
            })
            .unwrap();
        let replayed = done_rx.recv_timeout(std::time::Duration::from_secs(30));
        assert_eq!(replayed, Ok(301), "replay must read both batches and stop");
        drop(tmp);
    }

    /// A TxnOffsetCommit of group "g", producer `pid` at `epoch`: t/0 = 10, t/1 = 11
    /// (v3, no member); the partition error codes.
    async fn txn_commit(host: &GroupHost, pid: i64, epoch: i16) -> Vec<i16> {
        use kafka_protocol::messages::txn_offset_commit_request::{
            TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
        };
        use kafka_protocol::messages::{GroupId, ProducerId, TopicName, TxnOffsetCommitRequest};
        use kafka_protocol::protocol::StrBytes;
        let partition = |i: i32| {
            TxnOffsetCommitRequestPartition::default()
                .with_partition_index(i)
                .with_committed_offset(10 + i as i64)
        };
        let topic = TxnOffsetCommitRequestTopic::default()
            .with_name(TopicName(StrBytes::from_static_str("t")))
            .with_partitions(vec![partition(0), partition(1)]);
        let request = TxnOffsetCommitRequest::default()
            .with_group_id(GroupId(StrBytes::from_static_str("g")))
            .with_producer_id(ProducerId(pid))
            .with_producer_epoch(epoch)
            .with_topics(vec![topic]);
        let ResponseKind::TxnOffsetCommit(r) =
            call(host, RequestKind::TxnOffsetCommit(request), 3).await
        else {
            panic!("no TxnOffsetCommit answer")
        };
        r.topics.iter().flat_map(|t| t.partitions.iter().map(|p| p.error_code)).collect()
    }

    /// The committed offset of "g"'s t/`partition` in `c` (-1: none).
    fn committed_in(c: &GroupCoordinator, partition: i32) -> i64 {
        match c.offset_as_record("g", "t", partition) {
            GroupRecord::Offset { offset, .. } => offset,
            _ => -1,
        }
    }

    /// What a restart of `log` (offsets partition `p`) loads.
    async fn replayed(host: &GroupHost, p: usize) -> GroupCoordinator {
        let mut c = GroupCoordinator::new(CoordinatorConfig::default());
        let log = host.existing_log(p).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let placement = host.placement;
        let in_partition = |g: &str| offsets_partition(g, placement) == p;
        replay(&log, &mut c, dir.path(), &in_partition).await.unwrap();
        c
    }

    /// A TxnOffsetCommit is written as one transactional batch of the producer; its
    /// offsets are committed once the COMMIT marker is written, and a restart loads
    /// them committed.
    #[test]
    fn a_txn_offset_commit_is_one_transactional_batch_that_its_marker_commits() {
        crate::shard::testing::with_shard(|shard| async move {
            let host = &shard.groups;
            let p = offsets_partition("g", host.placement);
            assert_eq!(txn_commit(host, 42, 3).await, vec![0, 0]);
            let log = host.existing_log(p).unwrap();
            assert_eq!(log.high_watermark(), 2);
            let batch = log.read(0, 1 << 20).await.unwrap();
            let h = crate::protocol::batch::RecordBatchHeader::parse(&batch).unwrap();
            assert!(h.is_transactional() && !h.is_control());
            assert_eq!((h.producer_id, h.producer_epoch, h.base_sequence), (42, 3, -1));
            assert_eq!((h.base_offset, h.records_count, h.total_size()), (0, 2, batch.len()));
            // Pending: not committed, in memory or after a restart.
            assert_eq!(committed_in(&host.coordinator.borrow(), 0), -1);
            assert_eq!(
                host.coordinator.borrow().pending_offset(42, "g", "t", 1),
                Some((11, "".into()))
            );
            let restarted = replayed(host, p).await;
            assert_eq!(restarted.pending_offset(42, "g", "t", 1), Some((11, "".into())));
            assert_eq!(committed_in(&restarted, 1), -1);

            assert_eq!(host.write_txn_marker(p, 42, 3, 9, true).await.await, Ok(()));
            assert_eq!(log.high_watermark(), 3);
            let marker = log.read(2, 1 << 20).await.unwrap();
            assert_eq!(
                crate::protocol::control::read_marker(&marker).unwrap().unwrap().control_type,
                ControlType::Commit
            );
            let committed = {
                let c = host.coordinator.borrow();
                (committed_in(&c, 0), committed_in(&c, 1))
            };
            assert_eq!(committed, (10, 11));
            let restarted = replayed(host, p).await;
            assert_eq!((committed_in(&restarted, 0), committed_in(&restarted, 1)), (10, 11));
            assert_eq!(restarted.pending_offset(42, "g", "t", 1), None);
            // A partition of no shard's: NOT_COORDINATOR.
            let refused = host.write_txn_marker(OFFSETS_PARTITIONS, 42, 3, 9, true).await.await;
            assert_eq!(refused, Err(ResponseError::NotCoordinator));
        });
    }

    /// After a marker of epoch 5, the log refuses the producer's epoch 4: its
    /// TxnOffsetCommit is answered INVALID_PRODUCER_EPOCH and leaves nothing pending, and
    /// so is its marker; an ABORT drops what the producer had pending.
    #[test]
    fn a_fenced_producer_epoch_is_refused_with_invalid_producer_epoch() {
        crate::shard::testing::with_shard(|shard| async move {
            let host = &shard.groups;
            let p = offsets_partition("g", host.placement);
            assert_eq!(txn_commit(host, 42, 5).await, vec![0, 0]);
            assert_eq!(host.write_txn_marker(p, 42, 5, 0, false).await.await, Ok(()));
            assert_eq!(host.coordinator.borrow().pending_offset(42, "g", "t", 0), None);
            assert_eq!(committed_in(&host.coordinator.borrow(), 0), -1, "aborted");
            assert_eq!(txn_commit(host, 42, 4).await, vec![47, 47]);
            assert_eq!(host.coordinator.borrow().pending_offset(42, "g", "t", 0), None);
            let marker = host.write_txn_marker(p, 42, 4, 0, true).await.await;
            assert_eq!(marker, Err(ResponseError::InvalidProducerEpoch));
            // Written: the first commit's batch and the ABORT marker only.
            assert_eq!(host.existing_log(p).unwrap().high_watermark(), 3);
            let restarted = replayed(host, p).await;
            assert_eq!(restarted.pending_offset(42, "g", "t", 0), None);
            assert_eq!(committed_in(&restarted, 0), -1);
        });
    }

    /// A `DataRequest::WriteTxnMarkers` for a `__consumer_offsets` partition reaches
    /// the owning shard's group host and is answered once the marker is written and
    /// applied.
    #[test]
    fn a_txn_marker_message_ends_the_transaction_on_the_owning_shard() {
        crate::shard::testing::with_shard(|shard| async move {
            let host = &shard.groups;
            let p = offsets_partition("g", host.placement);
            assert_eq!(txn_commit(host, 7, 0).await, vec![0, 0]);
            let (reply, answer) = oneshot::channel();
            let marker = crate::shard::messages::TxnMarkerWrite {
                topic: crate::protocol::strings::topic_name(crate::metadata::OFFSETS_TOPIC),
                partition: p as i32,
                producer_id: 7,
                producer_epoch: 0,
                marker: crate::protocol::control::EndTxnMarker {
                    control_type: crate::protocol::control::ControlType::Commit,
                    coordinator_epoch: 1,
                },
            };
            let request =
                crate::shard::DataRequest::WriteTxnMarkers { markers: vec![marker], reply };
            shard.send(shard.id, request).await;
            assert_eq!(answer.await.expect("answered"), vec![Ok(())]);
            let committed = {
                let c = host.coordinator.borrow();
                (committed_in(&c, 0), committed_in(&c, 1))
            };
            assert_eq!(committed, (10, 11));
        });
    }

    #[test]
    fn java_hash_matches_kafka_placement() {
        // "".hashCode() == 0, "a".hashCode() == 97, "group".hashCode() == 98629247
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("a"), 97);
        assert_eq!(java_string_hash("group"), 98_629_247);
        let kafka = OffsetsPlacement::Kafka;
        assert_eq!(offsets_partition("group", kafka), 98_629_247 % 50);
        assert_eq!(coordinator_shard("group", 2, kafka), (98_629_247 % 50) % 2);
        // A negative hash code: Kafka takes Utils.abs (here 1082347766 % 50 = 16), the
        // old placement masked the sign bit (partition 32).
        let g = "cli-cg-group-e43e6ee5";
        assert_eq!(java_string_hash(g), -1_082_347_766);
        assert_eq!(offsets_partition(g, kafka), 16);
        assert_eq!(offsets_partition(g, OffsetsPlacement::Masked), 32);
        assert_eq!(OffsetsPlacement::Kafka.partition(i32::MIN), 0);
    }
}

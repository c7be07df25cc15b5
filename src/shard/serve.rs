//! Executing [`ShardMessage`]s on the shard that received them.
//!
//! Appends are started in arrival order: the offset assignment of one append happens
//! before the next message is taken from the channel, so a connection's pipelined
//! produces to one partition keep their order across cores. An `AppendMany` assigns
//! the offsets of all its batches, in its list order, before it returns.

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::time::Duration;

use futures_lite::{future, StreamExt};
use glommio::channels::channel_mesh::Receivers;

use bytes::Bytes;
use kafka_protocol::messages::TopicName;

use super::messages::{
    ActiveProducer, Appended, CatalogChanged, ControlRequest, DataRequest, ListedOffset,
    LogDirPartition, PartitionBatches, PartitionRead, ReadSpec, ShardMessage, TxnMarkerWrite,
};
use super::state::Shard;
use crate::broker_config::BrokerDefaults;
use crate::crash::{Label, Labeled};
use crate::error::{KafkaResult, ResponseError};
use crate::log::start_offset::DeleteRecordsError;
use crate::log::{AppendError, AppendInfo, PartitionLog, ReadError};
use crate::protocol::control;
use crate::topic_config::EffectiveTopicConfig;

/// Receives messages from every other shard until the mesh closes: one task per
/// peer takes that peer's messages in the order they were sent and starts each before
/// taking the next (then it completes in its own task). This is what keeps a
/// connection's appends to a remote partition in request order.
pub async fn serve_mesh(shard: Rc<Shard>, mut receivers: Receivers<ShardMessage>) {
    let streams = receivers.streams();
    let mut tasks = Vec::new();
    for (peer, mut stream) in streams {
        let shard = shard.clone();
        tasks.push(glommio::spawn_local(async move {
            // One label per kind, made once: messages are the data path.
            let [data, control, catalog] = ["data", "control", "catalog"]
                .map(|kind| Rc::new(Label::ShardMessage { from: peer, kind }));
            while let Some(message) = stream.next().await {
                crate::metrics::with(|m| m.mesh_received(peer));
                let label = match &message {
                    ShardMessage::Data(_) => &data,
                    ShardMessage::Control(_) => &control,
                    ShardMessage::Catalog(_) => &catalog,
                };
                Labeled::new(label.clone(), execute(&shard, message)).await;
            }
            tracing::debug!(peer, "mesh stream from peer closed");
        }));
    }
    for t in tasks {
        t.await;
    }
}

/// Starts one message: its order-sensitive part runs before this returns, the rest
/// (waiting for the write, long polls, control-plane work) in a spawned task.
pub async fn execute(shard: &Rc<Shard>, message: ShardMessage) {
    match message {
        ShardMessage::Data(request) => execute_data(shard, request).await,
        ShardMessage::Control(request) => execute_control(shard, request),
        ShardMessage::Catalog(CatalogChanged { catalog, reply }) => {
            let shard = shard.clone();
            spawn_detached(async move {
                shard.apply_catalog((*catalog).clone()).await;
                let _ = reply.send(());
            });
        }
    }
}

async fn execute_data(shard: &Rc<Shard>, request: DataRequest) {
    match request {
        DataRequest::WriteTxnMarkers { markers, reply } => {
            let mut writes = Vec::with_capacity(markers.len());
            for m in markers {
                writes.push(start_marker(shard, m).await);
            }
            spawn_detached(async move {
                let mut results = Vec::with_capacity(writes.len());
                for w in writes {
                    results.push(match w {
                        Ok(append) => append.await,
                        Err(e) => Err(e),
                    });
                }
                let _ = reply.send(results);
            });
        }
        DataRequest::Append { topic, partition, batch, now_ms, reply } => {
            let Some(owned) = shard.writable_log(&topic, partition) else {
                let _ = reply.send(Err(not_here(shard, &topic, partition)));
                return;
            };
            match start_append(&owned.log, &topic, partition, batch, now_ms).await {
                Started::Done(r) => {
                    let _ = reply.send(r);
                }
                Started::Writing(append) => spawn_detached(async move {
                    let _ = reply.send(finish(append.await));
                }),
            }
        }
        DataRequest::AppendMany { partitions, now_ms, reply } => {
            let mut started: Vec<Vec<Started>> = Vec::with_capacity(partitions.len());
            let mut writing = false;
            for PartitionBatches { topic, partition, batches } in partitions {
                let Some(owned) = shard.writable_log(&topic, partition) else {
                    started.push(vec![Started::Done(Err(not_here(shard, &topic, partition)))]);
                    continue;
                };
                let mut appends = Vec::with_capacity(batches.len());
                for batch in batches {
                    let s = start_append(&owned.log, &topic, partition, batch, now_ms).await;
                    writing |= matches!(s, Started::Writing(_));
                    appends.push(s);
                }
                started.push(appends);
            }
            if writing {
                spawn_detached(async move {
                    let mut results = Vec::with_capacity(started.len());
                    for appends in started {
                        results.push(first_result(appends).await);
                    }
                    let _ = reply.send(results);
                });
            } else {
                let _ = reply.send(started.into_iter().map(first_done).collect());
            }
        }
        DataRequest::ReadMany { partitions, read_committed, max_bytes, reply } => {
            let mut reads =
                Box::pin(read_many(shard.clone(), partitions, read_committed, max_bytes));
            // Reads served from the cache finish in their first poll: answer them
            // without a task of their own.
            match future::poll_once(&mut reads).await {
                Some(done) => {
                    let _ = reply.send(done);
                }
                None => spawn_detached(async move {
                    let _ = reply.send(reads.await);
                }),
            }
        }
        DataRequest::WaitForData { partitions, timeout_ms, reply } => {
            let waits: Vec<Pin<Box<dyn Future<Output = ()>>>> = partitions
                .iter()
                .filter_map(|(t, p, offset)| {
                    let offset = *offset;
                    shard.existing_readable_log(t, *p).map(|log| {
                        Box::pin(async move { log.wait_for_data(offset).await })
                            as Pin<Box<dyn Future<Output = ()>>>
                    })
                })
                .collect();
            spawn_detached(async move {
                if !waits.is_empty() {
                    let any = futures_util::future::select_all(waits);
                    let _ =
                        glommio::timer::timeout(Duration::from_millis(timeout_ms), async move {
                            any.await;
                            Ok(())
                        })
                        .await;
                } else {
                    glommio::timer::sleep(Duration::from_millis(timeout_ms)).await;
                }
                let _ = reply.send(());
            });
        }
        DataRequest::ListOffset { topic, partition, timestamp, read_committed, reply } => {
            let shard = shard.clone();
            spawn_detached(async move {
                let listed = list_offset(&shard, &topic, partition, timestamp, read_committed);
                let _ = reply.send(listed.await);
            });
        }
        DataRequest::LogOffsets { topic, partition, reply } => {
            let shard = shard.clone();
            spawn_detached(async move {
                let answer = match shard.readable_log(&topic, partition).await {
                    Some(log) => Ok((log.log_start_offset(), log.log_end_offset())),
                    None => Err(not_here(&shard, &topic, partition)),
                };
                let _ = reply.send(answer);
            });
        }
        DataRequest::DescribeLogDir { filter, reply } => {
            let _ = reply.send(describe_log_dir(shard, filter.as_ref()));
        }
        DataRequest::DeleteRecords { topic, partition, offset, reply } => {
            let shard = shard.clone();
            spawn_detached(async move {
                let _ = reply.send(delete_records(&shard, &topic, partition, offset).await);
            });
        }
        DataRequest::DescribeProducers { topic, partition, reply } => {
            let shard = shard.clone();
            spawn_detached(async move {
                let answer = match shard.readable_log(&topic, partition).await {
                    Some(log) => Ok(log
                        .active_producers()
                        .into_iter()
                        .map(|(producer_id, e)| ActiveProducer {
                            producer_id,
                            producer_epoch: e.epoch,
                            last_sequence: e.batches.back().map_or(-1, |b| b.last_seq),
                            last_timestamp: e.last_timestamp,
                            coordinator_epoch: e.coordinator_epoch,
                            current_txn_start_offset: e.current_txn_first_offset.unwrap_or(-1),
                        })
                        .collect()),
                    None => Err(not_here(&shard, &topic, partition)),
                };
                let _ = reply.send(answer);
            });
        }
        DataRequest::Metrics { reply } => {
            // A scrape that gave up on this shard (it was slow) wants no snapshot.
            if !reply.is_canceled() {
                let _ = reply.send(crate::metrics::snapshot::take(shard));
            }
        }
        DataRequest::Group { call, reply } => {
            shard.groups.submit(*call, reply).await;
        }
        DataRequest::Txn(call) => {
            let shard = shard.clone();
            spawn_detached(async move { shard.txns.clone().serve(&shard, *call).await });
        }
    }
}

/// Runs a control request on the control shard. Only `Shard::ask_control` builds
/// one, addressed to the control shard; should one arrive elsewhere it is refused
/// loudly (its reply channel is dropped, so the asker answers with an error).
fn execute_control(shard: &Rc<Shard>, request: ControlRequest) {
    if shard.control.is_none() {
        tracing::error!(shard = shard.id, ?request, "control request on a non-control shard");
        return;
    }
    let shard = shard.clone();
    spawn_detached(async move {
        let Some(control) = &shard.control else { return };
        match request {
            ControlRequest::CreateTopics { topics, validate_only, reply } => {
                let _ = reply.send(control.create_topics(&shard, topics, validate_only).await);
            }
            ControlRequest::DeleteTopics { names, reply } => {
                let _ = reply.send(control.delete_topics(&shard, names).await);
            }
            ControlRequest::CreatePartitions { topics, validate_only, reply } => {
                let _ = reply.send(control.create_partitions(&shard, topics, validate_only).await);
            }
            ControlRequest::AlterConfigs { changes, validate_only, reply } => {
                let _ = reply.send(control.alter_configs(&shard, changes, validate_only).await);
            }
            ControlRequest::CreateAcls { bindings, reply } => {
                let _ = reply.send(control.create_acls(&shard, bindings).await);
            }
            ControlRequest::DeleteAcls { filters, reply } => {
                let _ = reply.send(control.delete_acls(&shard, filters).await);
            }
            ControlRequest::AlterClientQuotas { alterations, validate_only, reply } => {
                let _ = reply
                    .send(control.alter_client_quotas(&shard, alterations, validate_only).await);
            }
            ControlRequest::AllocateProducerId { reply } => {
                let _ = reply.send(control.allocate_producer_id());
            }
            ControlRequest::AlterScramCredentials { deletions, upsertions, reply } => {
                let _ = reply
                    .send(control.alter_scram_credentials(&shard, deletions, upsertions).await);
            }
        }
    });
}

/// An append after its first poll: offsets are assigned by then.
enum Started {
    /// It completed on the first poll (an error, or a duplicate batch).
    Done(KafkaResult<Appended>),
    /// It waits for its write; cancel-safe, the batch is written even if dropped.
    Writing(Pin<Box<dyn Future<Output = Result<AppendInfo, AppendError>>>>),
}

/// Starts one append on `log` (`partition` of `topic`), polling it once so the log
/// assigns its offsets now. A successful append is counted in the topic's metrics.
async fn start_append(
    log: &Rc<PartitionLog>,
    topic: &TopicName,
    partition: i32,
    batch: Bytes,
    now_ms: i64,
) -> Started {
    let log = log.clone();
    let bytes = batch.len() as u64;
    let records = crate::protocol::batch::RecordBatchHeader::parse_header(&batch)
        .map_or(0, |h| h.records_count.max(0) as u64);
    // A shared handle, not a copy of the name: this is the append path.
    let topic = topic.clone();
    let started = std::time::Instant::now();
    let mut append: Pin<Box<dyn Future<Output = _>>> = Box::pin(async move {
        let r = log.append(batch, now_ms).await;
        // A retried duplicate appended nothing (its offsets are the original's).
        if r.as_ref().is_ok_and(|info| !info.duplicate) {
            crate::metrics::with(|m| {
                m.appended(&topic, partition, bytes, records);
                m.timed(crate::metrics::Timed::Append, started.elapsed());
            });
        }
        r
    });
    match future::poll_once(&mut append).await {
        Some(r) => Started::Done(finish(r)),
        None => Started::Writing(append),
    }
}

/// An append's outcome as a shard reply.
fn finish(r: Result<AppendInfo, AppendError>) -> KafkaResult<Appended> {
    r.map(|i| Appended {
        base_offset: i.base_offset,
        log_append_time: i.log_append_time,
        log_start_offset: i.log_start_offset,
    })
    .map_err(|e| ResponseError::from(&e))
}

/// A partition's result from its appends, awaited in batch order: the first batch's
/// [`Appended`], or the first error (the later appends are then not awaited; they are
/// still written). UNKNOWN_SERVER_ERROR for an empty list.
async fn first_result(appends: Vec<Started>) -> KafkaResult<Appended> {
    let mut first = None;
    for s in appends {
        let r = match s {
            Started::Done(r) => r,
            Started::Writing(append) => finish(append.await),
        }?;
        first.get_or_insert(r);
    }
    first.ok_or(ResponseError::UnknownServerError)
}

/// [`first_result`] of appends that all completed on their first poll.
fn first_done(appends: Vec<Started>) -> KafkaResult<Appended> {
    let mut first = None;
    for s in appends {
        let r = match s {
            Started::Done(r) => r,
            // Not reached: the caller checked that nothing is still writing.
            Started::Writing(_) => Err(ResponseError::UnknownServerError),
        }?;
        first.get_or_insert(r);
    }
    first.ok_or(ResponseError::UnknownServerError)
}

fn spawn_detached(f: impl Future<Output = ()> + 'static) {
    glommio::spawn_local(f).detach();
}

/// UNKNOWN_TOPIC_OR_PARTITION when the catalog lacks the partition, else
/// NOT_LEADER_OR_FOLLOWER (its log is not open here yet: clients retry).
/// The error for a partition this shard has no open log of: KAFKA_STORAGE_ERROR while
/// its log cannot be opened (and another try is started, see
/// [`Shard::open_failure`]), NOT_LEADER_OR_FOLLOWER when another shard owns it (a stale
/// route), UNKNOWN_TOPIC_OR_PARTITION when the topic is gone.
/// A marker append under way (its first poll done: it is queued in the log's order).
type MarkerAppend = Pin<Box<dyn Future<Output = KafkaResult<()>>>>;

/// Starts appending the control batch of `m` to its partition's log (a data partition
/// this shard owns, or a `__consumer_offsets` partition it hosts: through the group
/// coordinator, which commits or drops the transaction's offsets once it is durable),
/// so that markers keep the order they were asked in.
async fn start_marker(shard: &Rc<Shard>, m: TxnMarkerWrite) -> KafkaResult<MarkerAppend> {
    let (topic, partition) = (m.topic.as_str(), m.partition);
    if topic == crate::metadata::OFFSETS_TOPIC {
        // The group coordinator applies it to the transaction's pending offsets.
        let p = usize::try_from(partition).map_err(|_| ResponseError::UnknownTopicOrPartition)?;
        let commit = m.marker.control_type == control::ControlType::Commit;
        let (pid, epoch, coordinator_epoch) =
            (m.producer_id, m.producer_epoch, m.marker.coordinator_epoch);
        return Ok(shard.groups.write_txn_marker(p, pid, epoch, coordinator_epoch, commit).await);
    }
    let log = shard.writable_log(topic, partition).map(|o| o.log.clone());
    let Some(log) = log else { return Err(not_here(shard, topic, partition)) };
    let now = crate::clock::now_ms();
    let batch = control::encode_marker_batch(m.producer_id, m.producer_epoch, m.marker, now)
        .map_err(|_| ResponseError::UnknownServerError)?;
    let topic = topic.to_string();
    let mut append: Pin<Box<dyn Future<Output = _>>> =
        Box::pin(async move { log.append(batch, now).await });
    // The first poll queues the batch (cancel-safe from there, see `append`).
    if let Some(r) = future::poll_once(&mut append).await {
        return Ok(Box::pin(std::future::ready(marker_result(&topic, partition, r))));
    }
    Ok(Box::pin(async move { marker_result(&topic, partition, append.await) }))
}

fn marker_result(
    topic: &str,
    partition: i32,
    r: Result<AppendInfo, AppendError>,
) -> KafkaResult<()> {
    r.map(|_| ()).map_err(|e| {
        if let AppendError::Io(io) = &e {
            tracing::error!(%topic, partition, error = %io, "transaction marker append failed");
        }
        ResponseError::from(&e)
    })
}

fn not_here(shard: &Rc<Shard>, topic: &str, partition: i32) -> ResponseError {
    if let Some(e) = shard.open_failure(topic, partition) {
        return e;
    }
    if shard.catalog().topic(topic).is_some() {
        ResponseError::NotLeaderOrFollower
    } else {
        ResponseError::UnknownTopicOrPartition
    }
}

/// Reads `partitions` (all of this shard's) at once: one [`PartitionRead`] each, in
/// their order.
/// Reads `partitions` in list order, sharing `max_bytes` (see [`DataRequest::ReadMany`]):
/// each partition with data below its high watermark (last stable offset when
/// `read_committed`) reads at most `min(its max_bytes, what is left, what it holds
/// past its offset)`. A read served from the cache finishes in its first poll and
/// takes what it returned from what is left; one that goes to the disk takes its
/// whole share and runs concurrently with the others. Partitions past the limit, and
/// those without data, are answered with their offsets only.
async fn read_many(
    shard: Rc<Shard>,
    partitions: Vec<ReadSpec>,
    read_committed: bool,
    max_bytes: usize,
) -> Vec<PartitionRead> {
    let mut answers = Vec::with_capacity(partitions.len());
    let mut reading = Vec::new();
    let mut left = max_bytes;
    let mut any_data = false;
    for (slot, p) in partitions.iter().enumerate() {
        let (topic, partition) = (p.topic.as_str(), p.partition);
        let Some(log) = shard.readable_log(topic, partition).await else {
            answers.push(PartitionRead::failed(not_here(&shard, topic, partition)));
            continue;
        };
        let end = if read_committed { log.last_stable_offset() } else { log.high_watermark() };
        if p.offset >= end || (left == 0 && any_data) {
            answers.push(offsets_only(&log, p.offset, read_committed));
            continue;
        }
        any_data = true;
        // Never 0 here: a share of 0 still reads one whole batch.
        let share = p.max_bytes.min(left).min(log.bytes_from(p.offset, p.max_bytes).max(1));
        let mut read = Box::pin(read(log, topic, partition, p.offset, share, read_committed));
        match future::poll_once(&mut read).await {
            Some(done) => {
                left = left.saturating_sub(done.records.len());
                answers.push(done);
            }
            None => {
                left = left.saturating_sub(share);
                answers.push(PartitionRead::default());
                reading.push((slot, read));
            }
        }
    }
    let (slots, reads): (Vec<usize>, Vec<_>) = reading.into_iter().unzip();
    for (slot, done) in slots.into_iter().zip(futures_util::future::join_all(reads).await) {
        answers[slot] = done;
    }
    answers
}

/// What a read of `log` from `offset` answers apart from its records: its offsets, or
/// the offset's error (as [`PartitionLog::check_offset`]).
fn offsets_only(log: &PartitionLog, offset: i64, read_committed: bool) -> PartitionRead {
    match log.check_offset(offset) {
        Ok(()) => answer(log, Bytes::new(), read_committed.then(Vec::new)),
        Err(e) => PartitionRead::failed(ResponseError::from(&e)),
    }
}

/// A successful read's answer: `records` with `log`'s offsets as they are now.
fn answer(
    log: &PartitionLog,
    records: Bytes,
    aborted: Option<Vec<crate::log::txn_index::AbortedTxn>>,
) -> PartitionRead {
    PartitionRead {
        error: None,
        high_watermark: log.high_watermark(),
        log_start_offset: log.log_start_offset(),
        last_stable_offset: log.last_stable_offset(),
        records,
        aborted,
    }
}

async fn read(
    log: Rc<PartitionLog>,
    topic: &str,
    partition: i32,
    offset: i64,
    max_bytes: usize,
    read_committed: bool,
) -> PartitionRead {
    let read = if read_committed {
        log.read_committed(offset, max_bytes).await.map(|(r, a)| (r, Some(a)))
    } else {
        log.read(offset, max_bytes).await.map(|r| (r, None))
    };
    match read {
        Ok((records, aborted)) => answer(&log, records, aborted),
        Err(e) => {
            if let ReadError::Io(io) = &e {
                tracing::error!(%topic, partition, error = %io, "read failed");
            }
            // Kafka answers a failed read (OFFSET_OUT_OF_RANGE among them) with -1 for
            // the offsets (`UnifiedLog.UnknownOffset`).
            PartitionRead::failed(ResponseError::from(&e))
        }
    }
}

async fn list_offset(
    shard: &Rc<Shard>,
    topic: &str,
    partition: i32,
    timestamp: i64,
    read_committed: bool,
) -> ListedOffset {
    let Some(log) = shard.readable_log(topic, partition).await else {
        return ListedOffset::none(Some(not_here(shard, topic, partition)));
    };
    // What a consumer of this isolation level may read (Kafka's `lastFetchableOffset`):
    // a record found by timestamp at or past it is not answered.
    let fetchable = if read_committed { log.last_stable_offset() } else { log.high_watermark() };
    let at = |offset: i64| ListedOffset { error: None, offset, timestamp: -1 };
    let found = |o: Option<(i64, i64)>| match o {
        Some((offset, ts)) if offset < fetchable => {
            ListedOffset { error: None, offset, timestamp: ts }
        }
        _ => ListedOffset::none(None),
    };
    match timestamp {
        -1 => at(fetchable),
        // -4 (earliest local, KIP-1005) equals -2 without tiered storage.
        -2 | -4 => at(log.log_start_offset()),
        -3 => match log.max_timestamp().await {
            Ok(o) => found(o),
            Err(e) => {
                tracing::error!(%topic, partition, error = %e, "max timestamp lookup failed");
                ListedOffset::none(Some(ResponseError::KafkaStorageError))
            }
        },
        ts if ts >= 0 => match log.offset_for_timestamp(ts).await {
            Ok(o) => found(o),
            Err(e) => {
                tracing::error!(%topic, partition, error = %e, "timestamp lookup failed");
                ListedOffset::none(Some(ResponseError::KafkaStorageError))
            }
        },
        // -5 (latest tiered) has no answer without tiered storage, as in Kafka.
        _ => ListedOffset::none(None),
    }
}

async fn delete_records(
    shard: &Rc<Shard>,
    topic: &str,
    partition: i32,
    offset: i64,
) -> KafkaResult<i64> {
    // Not across a reopen of the log: it could load the old log start offset after the
    // client was told the new one.
    let _no_reopen = shard.hold_logs().await;
    let Some(owned) = shard.log(topic, partition) else {
        return Err(not_here(shard, topic, partition));
    };
    let log = &owned.log;
    let catalog = shard.catalog();
    let Some(meta) = catalog.topic(topic) else {
        return Err(ResponseError::UnknownTopicOrPartition);
    };
    let broker = BrokerDefaults::of(&shard.config, &catalog);
    if !EffectiveTopicConfig::resolve(&meta.configs, &broker).retention.delete {
        return Err(ResponseError::PolicyViolation);
    }
    log.delete_records(offset).await.map_err(|e| {
        if let DeleteRecordsError::Io(io) = &e {
            tracing::error!(%topic, partition, error = %io, "delete records failed");
        }
        ResponseError::from(&e)
    })
}

/// The partition logs this shard holds that `filter` selects (all when `None`).
fn describe_log_dir(
    shard: &Shard,
    filter: Option<&std::collections::HashMap<String, Vec<i32>>>,
) -> Vec<LogDirPartition> {
    let wanted =
        |t: &str, p: i32| filter.is_none_or(|f| f.get(t).is_some_and(|ps| ps.contains(&p)));
    let logs: Vec<(String, i32, Rc<PartitionLog>)> = shard
        .owned_logs()
        .into_iter()
        .filter(|((t, p), _)| wanted(t, *p))
        .map(|((t, p), owned)| (t, p, owned.log.clone()))
        .collect();
    let mut found: Vec<LogDirPartition> = logs
        .into_iter()
        .map(|(topic, partition, log)| LogDirPartition {
            topic,
            partition,
            size_bytes: log.size_bytes() as i64,
            offset_lag: (log.high_watermark() - log.log_end_offset()).max(0),
        })
        .collect();
    // Once the offsets topic exists (Kafka creates all its partitions with it), every
    // offsets partition this shard hosts is listed; one no group has used yet is not
    // open and holds nothing.
    let offsets = crate::metadata::OFFSETS_TOPIC;
    if shard.catalog().topic(offsets).is_some() {
        for p in
            (shard.id..crate::metadata::OFFSETS_TOPIC_PARTITIONS).step_by(shard.nr_shards.max(1))
        {
            if wanted(offsets, p as i32) {
                let log = shard.groups.existing_log(p);
                found.push(LogDirPartition {
                    topic: offsets.to_string(),
                    partition: p as i32,
                    size_bytes: log.as_ref().map_or(0, |l| l.size_bytes() as i64),
                    offset_lag: 0,
                });
            }
        }
    }
    found
}

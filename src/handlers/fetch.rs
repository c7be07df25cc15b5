//! Fetch (key 1): whole stored record batches from each partition's owner, long-
//! polling up to `max_wait_ms` for `min_bytes` (but answering at once when a partition's
//! read left stored data behind: the consumer's next fetch gets it sooner than new data). Batches go out as stored (no
//! re-encoding); a partition read always yields at least one whole batch when data
//! exists, even above the byte limits.
//!
//! Fetch sessions (KIP-227) are declined: every response carries session id 0, so
//! clients keep sending full fetches; an incremental fetch naming a session gets
//! FETCH_SESSION_ID_NOT_FOUND (70).

use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_channel::oneshot;
use kafka_protocol::messages::fetch_response::{
    AbortedTransaction, FetchableTopicResponse, PartitionData,
};
use kafka_protocol::messages::{FetchRequest, FetchResponse, ProducerId, TopicName};

use super::{Ctx, Outcome, Versions};
use crate::error::{self, ResponseError};
use crate::protocol::batch::BatchIter;
use crate::protocol::strings::topic_name;
use crate::security::acl::{AclOperation, ResourceType};
use crate::shard::messages::{PartitionRead, ReadSpec};
use crate::shard::{DataRequest, Shard};

pub const VERSIONS: Versions = Versions { min: 4, max: 18 };

/// One requested partition, resolved against the catalog.
struct Wanted {
    topic_index: usize,
    partition: i32,
    offset: i64,
    max_bytes: usize,
    /// (topic name, owning shard), or the error to answer with.
    target: Result<(TopicName, usize), ResponseError>,
}

/// Starts a Fetch; the long poll runs in the deferred phase.
pub async fn handle(ctx: &Ctx, request: FetchRequest) -> Outcome<FetchResponse> {
    let v = ctx.api_version;
    if request.session_id != 0 {
        let r =
            FetchResponse::default().with_error_code(ResponseError::FetchSessionIdNotFound.code());
        return Outcome::Ready(r);
    }
    let catalog = ctx.shard.catalog();
    let mut headers = Vec::with_capacity(request.topics.len());
    let mut wanted = Vec::new();
    for (ti, t) in request.topics.iter().enumerate() {
        let meta =
            if v >= 13 { catalog.topic_by_id(t.topic_id) } else { catalog.topic(t.topic.as_str()) };
        let mut header = FetchableTopicResponse::default();
        if v >= 13 {
            header.topic_id = t.topic_id;
        } else {
            header.topic = t.topic.clone();
        }
        headers.push(header);
        // Kafka checks READ on the name asked for (before it checks the topic exists),
        // or on the name of a known topic id.
        let name = if v >= 13 { meta.map(|m| m.name.as_str()) } else { Some(t.topic.as_str()) };
        let read_denied =
            name.is_some_and(|n| !ctx.authorize(AclOperation::Read, ResourceType::Topic, n));
        for p in &t.partitions {
            let target = match meta {
                _ if read_denied => Err(ResponseError::TopicAuthorizationFailed),
                None if v >= 13 => Err(ResponseError::UnknownTopicId),
                None => Err(ResponseError::UnknownTopicOrPartition),
                Some(meta) => match catalog.owner(&meta.name, p.partition) {
                    Some(owner) => Ok((topic_name(&meta.name), owner)),
                    None => Err(ResponseError::UnknownTopicOrPartition),
                },
            };
            wanted.push(Wanted {
                topic_index: ti,
                partition: p.partition,
                offset: p.fetch_offset,
                max_bytes: p.partition_max_bytes.max(0) as usize,
                target,
            });
        }
    }
    // Kafka caps a consumer's `max_bytes` at the broker's `fetch.max.bytes` (KIP-541).
    let mut max_bytes = request.max_bytes.min(ctx.shard.config.fetch_max_bytes).max(0) as usize;
    if !catalog.client_quotas.is_empty() {
        // Kafka's fetch quota bound: one response never holds more than the consumer
        // may fetch in a quota window (`getMaxValueInQuotaWindow`).
        let quotas = &ctx.shard.quotas;
        if let Some(cap) =
            quotas.fetch_max_bytes(&catalog.client_quotas, &ctx.principal.name, &ctx.client_id)
        {
            max_bytes = max_bytes.min(cap.max(0) as usize);
        }
    }
    let min_bytes = (request.min_bytes.max(0) as usize).min(max_bytes);
    let max_wait = Duration::from_millis(request.max_wait_ms.max(0) as u64);
    // Isolation level 1 (KIP-98): read up to the last stable offset.
    let read_committed = request.isolation_level == 1;
    let shard = ctx.shard.clone();
    Outcome::later(async move {
        let started = Instant::now();
        let deadline = started + max_wait;
        let mut reads = read_all(&shard, &wanted, read_committed, max_bytes).await;
        let mut waited = false;
        loop {
            let total: usize = reads.iter().map(|r| r.records.len()).sum();
            let any_error = reads.iter().any(|r| r.error.is_some());
            let now = Instant::now();
            // A read that ended below its high watermark (at its byte limit, at a break
            // between two cached buffers, or at the end of a read-ahead window) leaves
            // data that is already there: answer now rather than wait for new data
            // that min_bytes would never need (the consumer's next fetch goes on). Walking
            // the batches costs (3% of broker CPU under a full-speed consumer), so only
            // when the cheaper tests would wait.
            if total >= min_bytes
                // No partitions: nothing to wait for (Kafka answers at once).
                || wanted.is_empty()
                || any_error
                || now >= deadline
                || shard.stopping.is_fired()
                || wanted.iter().zip(&reads).any(|(w, r)| stopped_below_high_watermark(w.offset, r))
            {
                break;
            }
            // Wait for data past what this read saw, not past the fetch offset: when the
            // partitions' `partition_max_bytes` keep a read under `min_bytes` (a consumer
            // with fetch.min.bytes above max.partition.fetch.bytes), data past the
            // offset is already there, and waiting for it would return at once, again
            // and again, without yielding the core until `max_wait_ms` (found by the
            // dispatch fuzzer).
            let seen: Vec<i64> = reads.iter().map(|r| r.high_watermark).collect();
            // At shutdown the poll answers with what it has, so the drain does not
            // wait for `max_wait_ms`.
            futures_lite::future::or(
                wait_for_data(&shard, &wanted, &seen, deadline - now),
                shard.stopping.requested(),
            )
            .await;
            waited = true;
            reads = read_all(&shard, &wanted, read_committed, max_bytes).await;
            if reads.iter().zip(&seen).all(|(r, s)| r.high_watermark == *s) {
                // Woken without new data (a closed or failed log's watch wakes at
                // once): no busy loop either.
                let left = deadline.saturating_duration_since(Instant::now());
                glommio::timer::sleep(left.min(NO_PROGRESS_PAUSE)).await;
            }
        }
        if waited {
            crate::metrics::with(|m| m.timed(crate::metrics::Timed::FetchWait, started.elapsed()));
        }
        build(v, headers, &wanted, reads, max_bytes)
    })
}

/// True when the read from `offset` ended below its high watermark: more data is
/// stored past what it returned, or it returned none though data was there (its
/// partition came after the response's `max_bytes` was used up on its shard).
fn stopped_below_high_watermark(offset: i64, read: &PartitionRead) -> bool {
    // A read_committed read (it lists aborted transactions) ends at the stable offset.
    let end = if read.aborted.is_some() { read.last_stable_offset } else { read.high_watermark };
    if read.records.is_empty() {
        return read.error.is_none() && offset < end;
    }
    let last = BatchIter::new(&read.records).map_while(|b| b.ok()).last();
    last.is_some_and(|(_, h)| h.last_offset() + 1 < end)
}

/// Reads every partition on its owner, all in parallel: one [`DataRequest::ReadMany`]
/// per owning shard (the other shards' first, so they work while this shard reads its
/// own inline); one [`PartitionRead`] per entry of `wanted`, in its order. Each shard
/// reads about `max_bytes` (the response's limit) at most over its partitions, so a
/// Fetch reads up to that once per shard, not `partition_max_bytes` per partition.
async fn read_all(
    shard: &std::rc::Rc<Shard>,
    wanted: &[Wanted],
    read_committed: bool,
    max_bytes: usize,
) -> Vec<PartitionRead> {
    let started = Instant::now();
    let mut reads: Vec<PartitionRead> = Vec::with_capacity(wanted.len());
    // Per shard: the reads asked of it and where each one's answer goes in `reads`.
    let mut per_shard: Vec<(Vec<ReadSpec>, Vec<usize>)> = vec![Default::default(); shard.nr_shards];
    for (i, w) in wanted.iter().enumerate() {
        match &w.target {
            Ok((topic, owner)) => {
                reads.push(PartitionRead::default());
                let (specs, slots) = &mut per_shard[*owner];
                specs.push(ReadSpec {
                    topic: topic.clone(),
                    partition: w.partition,
                    offset: w.offset,
                    max_bytes: w.max_bytes,
                });
                slots.push(i);
            }
            Err(error) => reads.push(PartitionRead::failed(*error)),
        }
    }
    let me = shard.id;
    let order = (0..shard.nr_shards).filter(|&s| s != me).chain(std::iter::once(me));
    let mut replies = Vec::new();
    for owner in order {
        let (partitions, slots) = std::mem::take(&mut per_shard[owner]);
        if partitions.is_empty() {
            continue;
        }
        let (reply, rx) = oneshot::channel();
        shard.send(owner, DataRequest::ReadMany { partitions, read_committed, max_bytes, reply }).await;
        replies.push((rx, slots));
    }
    for (rx, slots) in replies {
        match rx.await {
            Ok(answers) if answers.len() == slots.len() => {
                for (slot, read) in slots.into_iter().zip(answers) {
                    reads[slot] = read;
                }
            }
            // Dropped at shutdown (or a reply of the wrong shape, which the owner
            // never sends).
            _ => {
                for slot in slots {
                    reads[slot] = PartitionRead::failed(ResponseError::UnknownServerError);
                }
            }
        }
    }
    crate::metrics::with(|m| m.timed(crate::metrics::Timed::FetchRead, started.elapsed()));
    reads
}

/// Longest pause of a long poll that was woken without new data, before it reads again.
const NO_PROGRESS_PAUSE: Duration = Duration::from_millis(100);

/// Waits until any partition gets data past both its fetch offset and the high
/// watermark its last read saw (`seen`, in `wanted` order; -1 when unknown), or
/// `timeout`.
async fn wait_for_data(
    shard: &std::rc::Rc<Shard>,
    wanted: &[Wanted],
    seen: &[i64],
    timeout: Duration,
) {
    let mut per_shard: Vec<Vec<(TopicName, i32, i64)>> = vec![Vec::new(); shard.nr_shards];
    for (w, seen) in wanted.iter().zip(seen) {
        if let Ok((topic, owner)) = &w.target {
            per_shard[*owner].push((topic.clone(), w.partition, w.offset.max(*seen)));
        }
    }
    let timeout_ms = timeout.as_millis() as u64;
    let mut waits = Vec::new();
    for (owner, partitions) in per_shard.into_iter().enumerate().filter(|(_, p)| !p.is_empty()) {
        let (tx, rx) = oneshot::channel();
        shard.send(owner, DataRequest::WaitForData { partitions, timeout_ms, reply: tx }).await;
        waits.push(rx);
    }
    if waits.is_empty() {
        glommio::timer::sleep(timeout).await;
    } else {
        let _ = futures_util::future::select_all(waits).await;
    }
}

/// Assembles the response in request order, trimming each partition's batches to its
/// `partition_max_bytes` and to what is left of `max_bytes`, at batch boundaries. Only
/// the first partition that returns data may go over (its first batch is always kept,
/// KIP-74): a later partition whose first batch does not fit returns no records, as
/// Kafka's `minOneMessage` does.
fn build(
    v: i16,
    mut headers: Vec<FetchableTopicResponse>,
    wanted: &[Wanted],
    reads: Vec<PartitionRead>,
    max_bytes: usize,
) -> FetchResponse {
    let mut used = 0usize;
    for (w, read) in wanted.iter().zip(reads) {
        let budget = w.max_bytes.min(max_bytes.saturating_sub(used));
        let records = trim(&read.records, budget, used == 0);
        used += records.len();
        if let (Ok((topic, _)), false) = (&w.target, records.is_empty()) {
            let count = BatchIter::new(&records)
                .map_while(Result::ok)
                .map(|(_, h)| h.records_count.max(0) as u64)
                .sum();
            crate::metrics::with(|m| m.fetched(topic, w.partition, records.len() as u64, count));
        }
        let mut p = PartitionData::default()
            .with_partition_index(w.partition)
            .with_error_code(error::code(read.error))
            .with_high_watermark(read.high_watermark)
            .with_last_stable_offset(read.last_stable_offset)
            .with_aborted_transactions(read.aborted.map(|list| {
                list.iter()
                    .map(|t| {
                        AbortedTransaction::default()
                            .with_producer_id(ProducerId(t.producer_id))
                            .with_first_offset(t.first_offset)
                    })
                    .collect()
            }))
            .with_records(Some(records));
        if v >= 5 {
            p.log_start_offset = read.log_start_offset;
        }
        headers[w.topic_index].partitions.push(p);
    }
    FetchResponse::default().with_responses(headers)
}

/// The longest prefix of whole batches within `budget` bytes; at least the first
/// batch when `must_take_one`.
fn trim(records: &Bytes, budget: usize, must_take_one: bool) -> Bytes {
    if records.len() <= budget {
        return records.clone();
    }
    let mut end = 0;
    for item in BatchIter::new(records) {
        let Ok((at, h)) = item else { break };
        let next = at + h.total_size();
        if next > budget && !(must_take_one && end == 0) {
            break;
        }
        end = next;
    }
    records.slice(..end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::batch::testing::{build_batch, BatchSpec};

    fn two_batches() -> (Bytes, usize) {
        let a = build_batch(&BatchSpec::default());
        let b = build_batch(&BatchSpec::default());
        let n = a.len();
        (Bytes::from([a, b].concat()), n)
    }

    #[test]
    fn trim_keeps_whole_batches_within_budget() {
        let (r, n) = two_batches();
        assert_eq!(trim(&r, 2 * n, false).len(), 2 * n);
        assert_eq!(trim(&r, 2 * n - 1, false).len(), n);
        assert_eq!(trim(&r, n - 1, false).len(), 0);
    }

    #[test]
    fn trim_returns_one_batch_above_the_limit_when_first() {
        let (r, n) = two_batches();
        assert_eq!(trim(&r, 0, true).len(), n);
        assert_eq!(trim(&r, 1, true).len(), n);
    }
}

//! Produce (key 0): validate each partition's record batches here, append them on
//! the owning shards, answer per `acks` (0: no response at all).
//!
//! Two phases: [`handle`] validates and *starts* every append (queues it to the
//! owning shard in request order, or runs it here when this shard owns the
//! partition), and returns the deferred part that waits for the writes. Record
//! bytes are never copied or re-encoded on this shard: each batch is a slice of the
//! request frame (the owning log copies it once, see `PartitionLog::append`).

use bytes::Bytes;
use futures_channel::oneshot;
use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::{ProduceRequest, ProduceResponse};

use super::{Ctx, Outcome, Versions};
use crate::clock::now_ms;
use crate::config::ProduceFanout;
use crate::error::{KafkaResult, ResponseError};
use crate::metadata::TopicMeta;
use crate::protocol::batch::{verify_crc, BatchError, BatchIter};
use crate::protocol::records;
use crate::protocol::strings::{sb, topic_name};
use crate::security::acl::{AclOperation, ResourceType};
use crate::shard::messages::{Appended, PartitionBatches};
use crate::shard::{DataRequest, ShardId};
use crate::topic_config::EffectiveTopicConfig;

pub const VERSIONS: Versions = Versions { min: 3, max: 13 };

/// How far in the future a CreateTime timestamp may be (Kafka's
/// `log.message.timestamp.after.max.ms` default), in ms.
const TIMESTAMP_AFTER_MAX_MS: i64 = 3_600_000;

/// One partition's outcome, known now (an error) or after its appends complete.
enum Pending {
    Done(ResponseError, Option<String>),
    /// Replies of the partition's appends, in batch order (`--produce-fanout per-batch`).
    Appending(Vec<oneshot::Receiver<KafkaResult<Appended>>>),
    /// Entry `index` of the reply of the `AppendMany` sent to `shard`
    /// (`--produce-fanout per-shard`).
    Grouped {
        shard: ShardId,
        index: usize,
    },
}

/// The appends of one Produce request, gathered per owning shard
/// (`--produce-fanout per-shard`). Lives on the connection's shard.
struct Fanout {
    /// Indexed by shard id: the partitions that shard owns, in request order.
    groups: Vec<Vec<PartitionBatches>>,
}

impl Fanout {
    fn new(nr_shards: usize) -> Fanout {
        Fanout { groups: (0..nr_shards).map(|_| Vec::new()).collect() }
    }

    /// Adds a partition's batches to its owner's message; the pending reply entry.
    fn add(&mut self, owner: ShardId, batches: PartitionBatches) -> Pending {
        let group = &mut self.groups[owner];
        group.push(batches);
        Pending::Grouped { shard: owner, index: group.len() - 1 }
    }

    /// Sends one `AppendMany` per shard that owns any of the partitions, the other
    /// shards' first so they work while this shard appends its own inline. The replies
    /// are indexed by shard id (`None`: nothing was sent there).
    async fn send(self, ctx: &Ctx, now: i64) -> Vec<Option<oneshot::Receiver<ShardResults>>> {
        let me = ctx.shard.id;
        let mut replies: Vec<_> = (0..self.groups.len()).map(|_| None).collect();
        let mut own = None;
        for (shard, partitions) in self.groups.into_iter().enumerate() {
            if partitions.is_empty() {
                continue;
            }
            if shard == me {
                own = Some(partitions);
                continue;
            }
            let (reply, rx) = oneshot::channel();
            ctx.shard.send(shard, DataRequest::AppendMany { partitions, now_ms: now, reply }).await;
            replies[shard] = Some(rx);
        }
        if let Some(partitions) = own {
            let (reply, rx) = oneshot::channel();
            ctx.shard.send(me, DataRequest::AppendMany { partitions, now_ms: now, reply }).await;
            replies[me] = Some(rx);
        }
        replies
    }
}

/// One shard's answer to an `AppendMany`: a result per partition, in its list order.
type ShardResults = Vec<KafkaResult<Appended>>;

/// Validates and starts the appends of a Produce request. With the authorizer on
/// (Kafka's `handleProduceRequest`): every partition TRANSACTIONAL_ID_AUTHORIZATION_FAILED
/// when the request has transactional records and no WRITE on its transactional id;
/// TOPIC_AUTHORIZATION_FAILED without WRITE on the topic (before whether it exists).
/// Per partition: UNKNOWN_TOPIC_OR_PARTITION / UNKNOWN_TOPIC_ID, CORRUPT_MESSAGE (bad CRC or a
/// truncated batch), UNSUPPORTED_FOR_MESSAGE_FORMAT (magic < 2), MESSAGE_TOO_LARGE
/// (batch above the topic's `max.message.bytes`), RECORD_LIST_TOO_LARGE (above its
/// `segment.bytes`), INVALID_TIMESTAMP, INVALID_RECORD (also: not exactly one batch),
/// INVALID_RECORD for a control batch (only a transaction coordinator writes those) or
/// a transactional batch without a producer id, the verification errors of a
/// transactional batch (below),
/// INVALID_TOPIC_EXCEPTION (an internal topic such as `__consumer_offsets`),
/// INVALID_REQUIRED_ACKS, and the owner's OUT_OF_ORDER_SEQUENCE_NUMBER /
/// INVALID_PRODUCER_EPOCH / INVALID_TXN_STATE / KAFKA_STORAGE_ERROR.
///
/// Transactional batches (KIP-890 part 1, Kafka's `ReplicaManager.appendRecords`
/// with transaction verification): before they are appended, the transactional id's
/// coordinator confirms their partitions are in the producer's ongoing transaction;
/// a partition that is not gets INVALID_TXN_STATE (TRANSACTION_ABORTABLE from v11),
/// a fenced producer INVALID_PRODUCER_EPOCH, a coordinator that cannot tell
/// NOT_ENOUGH_REPLICAS (retried by every client). A transactional batch without a
/// transactional id in the request gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
pub async fn handle(ctx: &Ctx, request: ProduceRequest) -> Outcome<ProduceResponse> {
    let v = ctx.api_version;
    let acks = request.acks;
    let catalog = ctx.shard.catalog();
    let now = now_ms();
    let txn_denied = transactional_id_denied(ctx, &request);
    let refused = if txn_denied {
        Default::default()
    } else {
        verify_transactional(ctx, &request).await
    };
    let mut fanout = match ctx.shard.config.produce_fanout {
        ProduceFanout::PerShard => Some(Fanout::new(ctx.shard.nr_shards)),
        ProduceFanout::PerBatch => None,
    };
    let mut topics: Vec<(TopicProduceResponse, Vec<(i32, Pending)>)> =
        Vec::with_capacity(request.topic_data.len());

    for topic in request.topic_data {
        let (meta, missing) = if v >= 13 {
            (catalog.topic_by_id(topic.topic_id), ResponseError::UnknownTopicId)
        } else {
            (catalog.topic(topic.name.as_str()), ResponseError::UnknownTopicOrPartition)
        };
        let mut header = TopicProduceResponse::default();
        if v >= 13 {
            header.topic_id = topic.topic_id;
        } else {
            header.name = topic.name.clone();
        }
        let name = if v >= 13 { meta.map(|m| m.name.as_str()) } else { Some(topic.name.as_str()) };
        let write_denied =
            name.is_some_and(|n| !ctx.authorize(AclOperation::Write, ResourceType::Topic, n));
        let mut partitions = Vec::with_capacity(topic.partition_data.len());
        for pd in topic.partition_data {
            let pending = match meta {
                _ if txn_denied => Pending::Done(ResponseError::TransactionalIdAuthorizationFailed, None),
                _ if write_denied => Pending::Done(ResponseError::TopicAuthorizationFailed, None),
                _ if !(-1..=1).contains(&acks) => {
                    Pending::Done(ResponseError::InvalidRequiredAcks, None)
                }
                None => Pending::Done(missing, None),
                Some(meta) if refused.contains_key(&(meta.name.clone(), pd.index)) => {
                    let (error, message) = refused[&(meta.name.clone(), pd.index)].clone();
                    Pending::Done(error, Some(message))
                }
                Some(meta) => {
                    let records = pd.records.unwrap_or_default();
                    start(ctx, &mut fanout, meta, pd.index, records, now).await
                }
            };
            partitions.push((pd.index, pending));
        }
        topics.push((header, partitions));
    }

    let grouped = match fanout {
        Some(fanout) => fanout.send(ctx, now).await,
        None => Vec::new(),
    };
    if acks == 0 {
        return Outcome::Silent(Box::pin(async move {
            let response = respond(v, topics, grouped).await;
            error_codes(&response)
        }));
    }
    Outcome::later(respond(v, topics, grouped))
}

/// Whether the request carries transactional records but the connection may not
/// WRITE its transactional id: then Kafka answers every partition
/// TRANSACTIONAL_ID_AUTHORIZATION_FAILED. Only checked with the authorizer on (a missing
/// id is refused per partition by [`verify_transactional`] either way).
fn transactional_id_denied(ctx: &Ctx, request: &ProduceRequest) -> bool {
    if ctx.shard.authorizer.is_none() {
        return false;
    }
    let transactional = request.topic_data.iter().flat_map(|t| &t.partition_data).any(|pd| {
        pd.records.as_ref().is_some_and(|r| {
            crate::protocol::batch::RecordBatchHeader::parse_header(r)
                .is_ok_and(|h| h.is_transactional())
        })
    });
    transactional
        && request.transactional_id.as_ref().is_none_or(|id| {
            !ctx.authorize(AclOperation::Write, ResourceType::TransactionalId, id.as_str())
        })
}

/// The partitions whose transactional batch may not be appended, with the error and
/// message to answer (see [`handle`]); asks the coordinator once per request.
async fn verify_transactional(
    ctx: &Ctx,
    request: &ProduceRequest,
) -> std::collections::HashMap<(String, i32), (ResponseError, String)> {
    let mut refused = std::collections::HashMap::new();
    let catalog = ctx.shard.catalog();
    let mut wanted = Vec::new();
    let mut producer = None;
    for topic in &request.topic_data {
        let meta = if ctx.api_version >= 13 {
            catalog.topic_by_id(topic.topic_id)
        } else {
            catalog.topic(topic.name.as_str())
        };
        let Some(meta) = meta else { continue };
        for pd in &topic.partition_data {
            let Some(records) = &pd.records else { continue };
            let Ok(h) = crate::protocol::batch::RecordBatchHeader::parse_header(records) else {
                continue;
            };
            if h.is_transactional() && !h.is_control() && h.producer_id >= 0 {
                wanted.push((meta.name.clone(), pd.index));
                producer.get_or_insert((h.producer_id, h.producer_epoch));
            }
        }
    }
    let Some((producer_id, producer_epoch)) = producer else { return refused };
    let Some(id) = request.transactional_id.as_ref().map(|id| id.to_string()) else {
        // Kafka's KafkaApis refuses the request as unauthorized for a transactional id.
        for tp in wanted {
            let message = "Transactional records without a transactional id".to_string();
            refused.insert(tp, (ResponseError::TransactionalIdAuthorizationFailed, message));
        }
        return refused;
    };
    let partitions = wanted.clone();
    let answer = super::txn_route::ask(ctx, &id.clone(), |reply| {
        crate::shard::transactions::TxnCall::Verify {
            transactional_id: id,
            producer_id,
            producer_epoch,
            partitions,
            reply,
        }
    })
    .await
    .await;
    let results = match answer {
        Ok(results) => results,
        Err(e) => wanted.into_iter().map(|tp| (tp, Some(e))).collect(),
    };
    for (tp, error) in results {
        let Some(error) = error else { continue };
        let (error, message) = match error {
            ResponseError::ProducerFenced => {
                (ResponseError::InvalidProducerEpoch, "Producer is fenced".to_string())
            }
            ResponseError::TransactionAbortable | ResponseError::InvalidTxnState => {
                let e = if ctx.api_version > 10 {
                    ResponseError::TransactionAbortable
                } else {
                    ResponseError::InvalidTxnState
                };
                (e, "Partition was not added to the transaction".to_string())
            }
            ResponseError::ConcurrentTransactions
            | ResponseError::CoordinatorLoadInProgress
            | ResponseError::CoordinatorNotAvailable
            | ResponseError::NotCoordinator => (
                ResponseError::NotEnoughReplicas,
                format!(
                    "Unable to verify the partition has been added to the transaction. \
                     Underlying error: {error:?}"
                ),
            ),
            e => (e, e.to_string()),
        };
        refused.insert(tp, (error, message));
    }
    refused
}

/// Validates one partition's records, then adds its batches to the owner's
/// `AppendMany` (`fanout` is `Some`) or sends each batch to the owning shard.
async fn start(
    ctx: &Ctx,
    fanout: &mut Option<Fanout>,
    meta: &TopicMeta,
    partition: i32,
    records: Bytes,
    now: i64,
) -> Pending {
    let Some(&owner) = meta.partition_shards.get(partition as usize).filter(|_| partition >= 0)
    else {
        return Pending::Done(ResponseError::UnknownTopicOrPartition, None);
    };
    if crate::metadata::is_internal(&meta.name) {
        // Kafka's ReplicaManager: clients never append to internal topics.
        return Pending::Done(
            ResponseError::InvalidTopicException,
            Some(format!("Cannot append to internal topic {}", meta.name)),
        );
    }
    let catalog = ctx.shard.catalog();
    let broker = crate::broker_config::BrokerDefaults::of(&ctx.shard.config, &catalog);
    let config = EffectiveTopicConfig::resolve(&meta.configs, &broker);
    let limits = Limits {
        max_message_bytes: config.max_message_bytes,
        segment_bytes: config.segment_bytes,
        compacted: config.compaction.is_some(),
        compression: config.compression,
    };
    let batches = match validate(&records, ctx.api_version, limits, now) {
        Ok(batches) => batches,
        Err((error, message)) => return Pending::Done(error, Some(message)),
    };
    let topic = topic_name(&meta.name);
    if let Some(fanout) = fanout {
        return fanout.add(owner, PartitionBatches { topic, partition, batches });
    }
    let mut replies = Vec::with_capacity(batches.len());
    for batch in batches {
        let (reply, rx) = oneshot::channel();
        let request =
            DataRequest::Append { topic: topic.clone(), partition, batch, now_ms: now, reply };
        ctx.shard.send(owner, request).await;
        replies.push(rx);
    }
    Pending::Appending(replies)
}

/// The topic settings a produced batch is checked against.
#[derive(Debug, Clone, Copy)]
struct Limits {
    /// Largest batch, bytes (`max.message.bytes`): MESSAGE_TOO_LARGE above it.
    max_message_bytes: i32,
    /// Segment size, bytes (`segment.bytes`): RECORD_LIST_TOO_LARGE above it.
    segment_bytes: u64,
    /// `cleanup.policy` includes `compact`: every record needs a key (INVALID_RECORD).
    compacted: bool,
    /// The topic's `compression.type` codec (None: `producer`): a batch in another
    /// codec is recompressed before it is appended.
    compression: Option<u8>,
}

/// Checks a partition's `records` (Produce `version`) and returns its one batch (in a
/// `Vec` for the append path). As Kafka's broker does: exactly one record batch per
/// partition (INVALID_RECORD otherwise, as Produce v3+ requires), magic 2
/// (UNSUPPORTED_FOR_MESSAGE_FORMAT), a whole batch with a matching CRC (CORRUPT_MESSAGE),
/// at most `max.message.bytes` (MESSAGE_TOO_LARGE) and at most `segment.bytes`
/// (RECORD_LIST_TOO_LARGE), consistent offsets and count (INVALID_RECORD), no control
/// batch and no transactional batch without a producer id (INVALID_RECORD), a
/// timestamp not too
/// far ahead of the broker's clock (INVALID_TIMESTAMP), and on a compacted topic a key
/// on every record (INVALID_RECORD; records that do not decode: CORRUPT_MESSAGE). A
/// batch in another codec than the topic's `compression.type` is returned recompressed
/// (MESSAGE_TOO_LARGE if that outgrows `max.message.bytes`), as Kafka's `LogValidator`.
fn validate(
    records: &Bytes,
    version: i16,
    limits: Limits,
    now: i64,
) -> Result<Vec<Bytes>, (ResponseError, String)> {
    let batch_error = |e: BatchError| match e {
        BatchError::UnsupportedMagic(m) => (
            ResponseError::UnsupportedForMessageFormat,
            format!("Record batch magic {m} is not supported; use magic 2"),
        ),
        e => (ResponseError::CorruptMessage, e.to_string()),
    };
    let mut iter = BatchIter::new(records);
    let Some(first) = iter.next() else {
        return Err((
            ResponseError::InvalidRecord,
            format!(
                "Produce requests with version {version} must have at least one record batch \
                 per partition"
            ),
        ));
    };
    // Whatever follows the first batch: a second batch, bytes that are not one, or none.
    let rest = iter.next();
    if let Some(Ok(_)) = rest {
        return Err((
            ResponseError::InvalidRecord,
            format!(
                "Produce requests with version {version} are only allowed to contain exactly \
                 one record batch per partition"
            ),
        ));
    }
    let max_message_bytes = limits.max_message_bytes;
    let (at, header) = first.map_err(batch_error)?;
    let size = header.total_size();
    if size > max_message_bytes.max(0) as usize {
        return Err((
            ResponseError::MessageTooLarge,
            format!(
                "The record batch is {size} bytes, larger than the maximum allowed \
                 ({max_message_bytes})"
            ),
        ));
    }
    if size as u64 > limits.segment_bytes {
        return Err((
            ResponseError::RecordListTooLarge,
            format!(
                "The record batch is {size} bytes, larger than the segment size ({})",
                limits.segment_bytes
            ),
        ));
    }
    let batch = records.slice(at..at + size);
    if !verify_crc(&batch) {
        return Err((
            ResponseError::CorruptMessage,
            "Record batch CRC32C does not match its contents".into(),
        ));
    }
    if header.records_count <= 0
        || header.last_offset_delta < 0
        || header.records_count as i64 != header.last_offset_delta as i64 + 1
    {
        return Err((
            ResponseError::InvalidRecord,
            format!(
                "Inconsistent batch offset range [0, {}] and count of records {}",
                header.last_offset_delta, header.records_count
            ),
        ));
    }
    if header.is_control() {
        return Err((
            ResponseError::InvalidRecord,
            "Clients are not allowed to write control records".into(),
        ));
    }
    if header.is_transactional() && header.producer_id < 0 {
        return Err((
            ResponseError::InvalidRecord,
            "A transactional record batch needs a producer id".into(),
        ));
    }
    if !header.timestamp_type_log_append()
        && header.max_timestamp > now + TIMESTAMP_AFTER_MAX_MS
    {
        return Err((
            ResponseError::InvalidTimestamp,
            format!(
                "Timestamp {} is more than {TIMESTAMP_AFTER_MAX_MS} ms ahead of the \
                 broker's clock",
                header.max_timestamp
            ),
        ));
    }
    if let Some(Err(e)) = rest {
        return Err(batch_error(e));
    }
    let recompress = limits.compression.filter(|&c| c != header.compression());
    if !limits.compacted && recompress.is_none() {
        return Ok(vec![batch]);
    }
    let decoded = records::decode_records(&batch)
        .map_err(|e| (ResponseError::CorruptMessage, e.to_string()))?;
    if limits.compacted {
        if let Some(r) = decoded.records.iter().find(|r| r.key.is_none()) {
            return Err((
                ResponseError::InvalidRecord,
                format!(
                    "Compacted topic cannot accept message without key (record at offset \
                     delta {})",
                    r.offset - decoded.header.base_offset
                ),
            ));
        }
    }
    let Some(codec) = recompress else { return Ok(vec![batch]) };
    let stored = records::recompress(&decoded, codec)
        .map_err(|e| (ResponseError::UnknownServerError, e.to_string()))?;
    if stored.len() > max_message_bytes.max(0) as usize {
        return Err((
            ResponseError::MessageTooLarge,
            format!(
                "The record batch is {} bytes in the topic's compression.type, larger than \
                 the maximum allowed ({max_message_bytes})",
                stored.len()
            ),
        ));
    }
    Ok(vec![Bytes::from(stored)])
}

/// The error codes (other than NONE) of `response`'s partitions, in order.
fn error_codes(response: &ProduceResponse) -> Vec<i16> {
    let partitions = response.responses.iter().flat_map(|t| &t.partition_responses);
    partitions.map(|p| p.error_code).filter(|&code| code != 0).collect()
}

/// Waits for every append and builds the response, in request order.
async fn respond(
    v: i16,
    topics: Vec<(TopicProduceResponse, Vec<(i32, Pending)>)>,
    grouped: Vec<Option<oneshot::Receiver<ShardResults>>>,
) -> ProduceResponse {
    let mut shard_results: Vec<Option<ShardResults>> = Vec::with_capacity(grouped.len());
    for (shard, rx) in grouped.into_iter().enumerate() {
        shard_results.push(match rx {
            Some(rx) => Some(rx.await.unwrap_or_else(|_| {
                tracing::warn!(shard, "append replies dropped by the owning shard");
                Vec::new()
            })),
            None => None,
        });
    }
    let mut responses = Vec::with_capacity(topics.len());
    for (mut header, partitions) in topics {
        let mut out = Vec::with_capacity(partitions.len());
        for (index, pending) in partitions {
            let mut r = PartitionProduceResponse::default().with_index(index).with_base_offset(-1);
            let outcome = match pending {
                Pending::Done(error, message) => Err((error, message)),
                Pending::Appending(replies) => {
                    appended(replies, &header.name, index).await.map_err(|e| (e, None))
                }
                // A dropped reply (shutdown) left no entry: UNKNOWN_SERVER_ERROR.
                Pending::Grouped { shard, index } => shard_results
                    .get(shard)
                    .and_then(|r| r.as_ref()?.get(index).copied())
                    .unwrap_or(Err(ResponseError::UnknownServerError))
                    .map_err(|e| (e, None)),
            };
            match outcome {
                Ok(a) => {
                    r.base_offset = a.base_offset;
                    r.log_append_time_ms = a.log_append_time;
                    if v >= 5 {
                        r.log_start_offset = a.log_start_offset;
                    }
                }
                Err((error, message)) => {
                    r.error_code = error.code();
                    if v >= 8 {
                        r.error_message = message.map(|m| sb(&m));
                    }
                }
            }
            out.push(r);
        }
        header.partition_responses = out;
        responses.push(header);
    }
    ProduceResponse::default().with_responses(responses)
}

/// The first batch's append result, or the first error among the appends to
/// `partition` of `topic` (UNKNOWN_SERVER_ERROR when the owner dropped a reply).
async fn appended(
    replies: Vec<oneshot::Receiver<KafkaResult<Appended>>>,
    topic: &str,
    partition: i32,
) -> KafkaResult<Appended> {
    let mut first = None;
    for rx in replies {
        let a = rx.await.unwrap_or_else(|_| {
            tracing::warn!(topic, partition, "append reply dropped by the owning shard");
            Err(ResponseError::UnknownServerError)
        })?;
        first.get_or_insert(a);
    }
    // `validate` never yields an empty batch list.
    first.ok_or(ResponseError::UnknownServerError)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::batch::testing::{build_batch, BatchSpec};

    const LIMITS: Limits = Limits {
        max_message_bytes: 1 << 20,
        segment_bytes: 1 << 30,
        compacted: false,
        compression: None,
    };

    fn one(records: usize, value_len: usize) -> Vec<u8> {
        build_batch(&BatchSpec { records, value_len, ..Default::default() })
    }

    fn error(records: Vec<u8>, limits: Limits) -> (ResponseError, String) {
        validate(&Bytes::from(records), 9, limits, now_ms()).expect_err("refused")
    }

    #[test]
    fn one_batch_is_accepted() {
        let batch = one(3, 10);
        let got = validate(&Bytes::from(batch.clone()), 9, LIMITS, now_ms()).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(&got[0][..], &batch[..]);
    }

    #[test]
    fn a_compacted_topic_refuses_records_without_a_key() {
        use kafka_protocol::records::Compression;
        let compacted = Limits { compacted: true, ..LIMITS };
        // build_batch writes null keys.
        let (code, msg) = error(one(3, 10), compacted);
        assert_eq!(code, ResponseError::InvalidRecord);
        assert!(msg.contains("without key"), "{msg}");
        assert!(validate(&Bytes::from(one(3, 10)), 9, LIMITS, now_ms()).is_ok());
        let keyed = |key: Option<&'static [u8]>| {
            (key.map(Bytes::from_static), Some(Bytes::from_static(b"v")), now_ms())
        };
        let encode = |records: Vec<_>| {
            crate::protocol::records::encode_plain_batch(records, Compression::Lz4).unwrap()
        };
        let good = encode(vec![keyed(Some(b"a")), keyed(Some(b"b"))]);
        assert_eq!(validate(&good, 9, compacted, now_ms()).unwrap().len(), 1);
        // One keyless record among keyed ones, inside a compressed batch.
        let bad = encode(vec![keyed(Some(b"a")), keyed(None)]);
        let (code, msg) = validate(&bad, 9, compacted, now_ms()).unwrap_err();
        assert_eq!(code, ResponseError::InvalidRecord);
        assert!(msg.contains("offset delta 1"), "{msg}");
    }

    #[test]
    fn a_topic_compression_type_recompresses_batches_in_another_codec() {
        use crate::protocol::batch::RecordBatchHeader;
        let plain = Bytes::from(one(3, 10));
        let codec_of = |b: &Bytes| RecordBatchHeader::parse(b).unwrap().compression();
        for codec in 0..=4u8 {
            let limits = Limits { compression: Some(codec), ..LIMITS };
            let [stored] = &validate(&plain, 9, limits, now_ms()).unwrap()[..] else {
                panic!("one batch")
            };
            assert_eq!(codec_of(stored), codec);
            assert!(verify_crc(stored));
            let (a, b) = (records::decode_records(stored).unwrap(), records::decode_records(&plain).unwrap());
            let spans = |d: &records::BatchRecords| {
                d.records.iter().map(|r| d.data[r.span.clone()].to_vec()).collect::<Vec<_>>()
            };
            assert_eq!(spans(&a), spans(&b));
            // Back to uncompressed: the very bytes that were produced.
            let back = Limits { compression: Some(0), ..LIMITS };
            assert_eq!(&validate(stored, 9, back, now_ms()).unwrap()[0][..], &plain[..]);
        }
        // compression.type=producer stores what came.
        assert_eq!(&validate(&plain, 9, LIMITS, now_ms()).unwrap()[0][..], &plain[..]);
        // Recompressed larger than max.message.bytes (uncompressed 3 records fit).
        let tight = Limits { compression: Some(1), max_message_bytes: plain.len() as i32, ..LIMITS };
        let (code, _) = validate(&plain, 9, tight, now_ms()).unwrap_err();
        assert_eq!(code, ResponseError::MessageTooLarge);
    }

    #[test]
    fn two_batches_for_one_partition_are_invalid_record() {
        let mut records = one(3, 10);
        records.extend_from_slice(&one(2, 10));
        let (e, message) = error(records, LIMITS);
        assert_eq!(e, ResponseError::InvalidRecord);
        assert_eq!(e.code(), 87);
        assert_eq!(
            message,
            "Produce requests with version 9 are only allowed to contain exactly one record \
             batch per partition"
        );
    }

    #[test]
    fn no_batch_is_invalid_record() {
        let (e, _) = error(Vec::new(), LIMITS);
        assert_eq!(e.code(), 87);
    }

    #[test]
    fn a_batch_larger_than_the_segment_is_record_list_too_large() {
        let batch = one(4, 1000);
        let small_segment = Limits { segment_bytes: batch.len() as u64 - 1, ..LIMITS };
        let (e, _) = error(batch.clone(), small_segment);
        assert_eq!((e, e.code()), (ResponseError::RecordListTooLarge, 18));
        // Exactly the segment size fits; max.message.bytes is checked first.
        let exact = Limits { segment_bytes: batch.len() as u64, ..LIMITS };
        assert!(validate(&Bytes::from(batch.clone()), 9, exact, now_ms()).is_ok());
        let both = Limits { max_message_bytes: 100, segment_bytes: 100, ..LIMITS };
        assert_eq!(error(batch, both).0.code(), 10);
    }
}

//! Produce (key 0): validate each partition's record batches here, append them on
//! the owning shards, answer per `acks` (0: no response at all).
//!
//! Two phases: [`handle`] validates and *starts* every append (so offsets are
//! assigned in request order), and returns the deferred part that waits for the
//! writes. Record bytes are never copied or re-encoded on this shard: each batch is
//! a slice of the request frame.

use bytes::Bytes;
use futures_channel::oneshot;
use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::{ProduceRequest, ProduceResponse, ResponseKind};

use super::util::{now_ms, sb};
use super::{Ctx, Outcome, Versions};
use crate::protocol::batch::{verify_crc, BatchError, BatchIter};
use crate::shard::messages::Appended;
use crate::shard::{Shard, ShardRequest};

pub const VERSIONS: Versions = Versions { min: 3, max: 13 };

const CORRUPT_MESSAGE: i16 = 2;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const MESSAGE_TOO_LARGE: i16 = 10;
const INVALID_REQUIRED_ACKS: i16 = 21;
const INVALID_TIMESTAMP: i16 = 32;
const UNSUPPORTED_FOR_MESSAGE_FORMAT: i16 = 43;
const INVALID_TXN_STATE: i16 = 48;
const INVALID_RECORD: i16 = 87;
const UNKNOWN_TOPIC_ID: i16 = 100;
const UNKNOWN_SERVER_ERROR: i16 = -1;

/// How far in the future a CreateTime timestamp may be (Kafka's
/// `log.message.timestamp.after.max.ms` default), in ms.
const TIMESTAMP_AFTER_MAX_MS: i64 = 3_600_000;

/// One partition's outcome, known now (an error) or after its appends complete.
enum Pending {
    Done(i16, Option<String>),
    /// Replies of the partition's appends, in batch order.
    Appending(Vec<oneshot::Receiver<Result<Appended, i16>>>),
}

/// Validates and starts the appends of a Produce request. Per partition:
/// UNKNOWN_TOPIC_OR_PARTITION / UNKNOWN_TOPIC_ID, CORRUPT_MESSAGE (bad CRC or a
/// truncated batch), UNSUPPORTED_FOR_MESSAGE_FORMAT (magic < 2), MESSAGE_TOO_LARGE
/// (batch above the topic's `max.message.bytes`), INVALID_TIMESTAMP, INVALID_RECORD,
/// INVALID_TXN_STATE (transactional batches: transactions are not implemented),
/// and the owner's OUT_OF_ORDER_SEQUENCE_NUMBER / INVALID_PRODUCER_EPOCH.
pub async fn handle(ctx: &Ctx, request: ProduceRequest) -> Outcome {
    let v = ctx.api_version;
    let acks = request.acks;
    let catalog = ctx.shard.catalog();
    let now = now_ms();
    let mut topics: Vec<(TopicProduceResponse, Vec<(i32, Pending)>)> =
        Vec::with_capacity(request.topic_data.len());

    for topic in request.topic_data {
        let meta = if v >= 13 {
            catalog.topic_by_id(topic.topic_id)
        } else {
            catalog.topic(topic.name.as_str())
        };
        let missing = if v >= 13 { UNKNOWN_TOPIC_ID } else { UNKNOWN_TOPIC_OR_PARTITION };
        let mut header = TopicProduceResponse::default();
        if v >= 13 {
            header.topic_id = topic.topic_id;
        } else {
            header.name = topic.name.clone();
        }
        let mut partitions = Vec::with_capacity(topic.partition_data.len());
        for pd in topic.partition_data {
            let pending = match (meta, acks) {
                (_, a) if a != 0 && a != 1 && a != -1 => Pending::Done(INVALID_REQUIRED_ACKS, None),
                (None, _) => Pending::Done(missing, None),
                (Some(meta), _) => {
                    match meta.partition_shards.get(pd.index as usize).filter(|_| pd.index >= 0) {
                        None => Pending::Done(UNKNOWN_TOPIC_OR_PARTITION, None),
                        Some(&owner) => {
                            let max_message_bytes =
                                crate::topic_config::EffectiveTopicConfig::resolve(
                                    &meta.configs,
                                    &ctx.shard.config,
                                )
                                .max_message_bytes;
                            let records = pd.records.unwrap_or_default();
                            match validate(&records, max_message_bytes, now) {
                                Err((code, msg)) => Pending::Done(code, Some(msg)),
                                Ok(batches) => {
                                    let name = Shard::topic_name(&meta.name);
                                    let mut replies = Vec::with_capacity(batches.len());
                                    for batch in batches {
                                        let (tx, rx) = oneshot::channel();
                                        let request = ShardRequest::Append {
                                            topic: name.clone(),
                                            partition: pd.index,
                                            batch,
                                            now_ms: now,
                                            reply: tx,
                                        };
                                        ctx.shard.send(owner, request).await;
                                        replies.push(rx);
                                    }
                                    Pending::Appending(replies)
                                }
                            }
                        }
                    }
                }
            };
            partitions.push((pd.index, pending));
        }
        topics.push((header, partitions));
    }

    if acks == 0 {
        return Outcome::Silent;
    }
    Outcome::Later(Box::pin(async move { Some(ResponseKind::Produce(respond(v, topics).await)) }))
}

/// Splits a partition's `records` into its batches after checking each one.
fn validate(
    records: &Bytes,
    max_message_bytes: i32,
    now: i64,
) -> Result<Vec<Bytes>, (i16, String)> {
    if records.is_empty() {
        return Err((INVALID_RECORD, "Produce request has no record batch".into()));
    }
    let mut batches = Vec::with_capacity(1);
    for item in BatchIter::new(records) {
        let (at, header) = item.map_err(|e| match e {
            BatchError::UnsupportedMagic(m) => (
                UNSUPPORTED_FOR_MESSAGE_FORMAT,
                format!("Record batch magic {m} is not supported; use magic 2"),
            ),
            e => (CORRUPT_MESSAGE, e.to_string()),
        })?;
        let size = header.total_size();
        if size > max_message_bytes.max(0) as usize {
            return Err((
                MESSAGE_TOO_LARGE,
                format!("The record batch is {size} bytes, larger than the maximum allowed ({max_message_bytes})"),
            ));
        }
        let batch = records.slice(at..at + size);
        if !verify_crc(&batch) {
            return Err((
                CORRUPT_MESSAGE,
                "Record batch CRC32C does not match its contents".into(),
            ));
        }
        if header.records_count <= 0
            || header.last_offset_delta < 0
            || header.records_count as i64 != header.last_offset_delta as i64 + 1
        {
            return Err((
                INVALID_RECORD,
                format!(
                    "Inconsistent batch offset range [0, {}] and count of records {}",
                    header.last_offset_delta, header.records_count
                ),
            ));
        }
        if header.is_transactional() || header.is_control() {
            return Err((
                INVALID_TXN_STATE,
                "Transactions are not supported by this broker yet".into(),
            ));
        }
        if !header.timestamp_type_log_append()
            && header.max_timestamp > now + TIMESTAMP_AFTER_MAX_MS
        {
            return Err((
                INVALID_TIMESTAMP,
                format!("Timestamp {} is more than {TIMESTAMP_AFTER_MAX_MS} ms ahead of the broker's clock", header.max_timestamp),
            ));
        }
        batches.push(batch);
    }
    Ok(batches)
}

/// Waits for every append and builds the response, in request order.
async fn respond(
    v: i16,
    topics: Vec<(TopicProduceResponse, Vec<(i32, Pending)>)>,
) -> ProduceResponse {
    let mut responses = Vec::with_capacity(topics.len());
    for (mut header, partitions) in topics {
        let mut out = Vec::with_capacity(partitions.len());
        for (index, pending) in partitions {
            let mut r = PartitionProduceResponse::default().with_index(index).with_base_offset(-1);
            let (code, message) = match pending {
                Pending::Done(code, msg) => (code, msg),
                Pending::Appending(replies) => {
                    let mut first: Option<Appended> = None;
                    let mut code = 0;
                    for rx in replies {
                        match rx.await {
                            Ok(Ok(a)) => {
                                first.get_or_insert(a);
                            }
                            Ok(Err(c)) => {
                                code = c;
                                break;
                            }
                            Err(_) => {
                                tracing::warn!("append reply dropped by the owning shard");
                                code = UNKNOWN_SERVER_ERROR;
                                break;
                            }
                        }
                    }
                    if code == 0 {
                        if let Some(a) = first {
                            r.base_offset = a.base_offset;
                            r.log_append_time_ms = a.log_append_time;
                            if v >= 5 {
                                r.log_start_offset = a.log_start_offset;
                            }
                        }
                    }
                    (code, None)
                }
            };
            r.error_code = code;
            if code != 0 {
                r.base_offset = -1;
                if v >= 8 {
                    r.error_message = message.map(|m| sb(&m));
                }
            }
            out.push(r);
        }
        header.partition_responses = out;
        responses.push(header);
    }
    ProduceResponse::default().with_responses(responses)
}

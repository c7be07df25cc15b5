//! Group records in Apache Kafka's own `__consumer_offsets` key/value schemas, so that
//! the internal log can be served as the internal topic `__consumer_offsets` and read
//! by Kafka's formatters (`kafka-console-consumer --formatter
//! org.apache.kafka.tools.consumer.OffsetsMessageFormatter` / `GroupMetadataMessageFormatter`)
//! and by lag monitors (Burrow and the like) without translation.
//!
//! Schemas (Kafka's `group-coordinator/src/main/resources/common/message/*.json`,
//! non-flexible versions; big-endian; `STRING` = i16 length + UTF-8, `NULLABLE_STRING`
//! = the same with length -1 for null, `BYTES` = i32 length + bytes, arrays = i32 count):
//! - key version 0 or 1, `OffsetCommitKey`: group STRING, topic STRING, partition i32.
//!   Written as version 1.
//! - `OffsetCommitValue` (value version first, i16): v0 and v2 offset i64, metadata
//!   STRING, commitTimestamp i64; v1 adds expireTimestamp i64; v3 offset i64,
//!   leaderEpoch i32, metadata STRING, commitTimestamp i64. Written as v3, or as v1 when
//!   the commit has an explicit expiry (OffsetCommit v2-4 retention), as Kafka writes
//!   it (v1 carries no leader epoch, so it reads back as -1).
//! - key version 2, `GroupMetadataKey`: group STRING.
//! - `GroupMetadataValue`: protocolType STRING, generation i32, protocol
//!   NULLABLE_STRING, leader NULLABLE_STRING, currentStateTimestamp i64 (v2+, -1 =
//!   unknown), members: memberId STRING, groupInstanceId NULLABLE_STRING (v3+),
//!   clientId STRING, clientHost STRING, rebalanceTimeout i32 (v1+; v0 reads it as the
//!   session timeout), sessionTimeout i32, subscription BYTES, assignment BYTES.
//!   Written as v3.
//! - key version [`KEY_CONSUMER_GROUP`] (shardlog's own, outside Kafka's record types so
//!   Kafka's formatters skip it): group STRING; the value is shardlog's whole-group
//!   KIP-848 record (`records.rs`, value version 2). Kafka splits that state over
//!   record types 3-8 and 15; shardlog persists a consumer group as one record.
//!
//! Tombstones are the key with a null value. A record whose group or topic does not
//! fit an i16 length takes shardlog's original key and value (u32 lengths), which
//! `records.rs` still decodes; one whose key fits but whose value has a longer string
//! (a member id, say) keeps this module's key with shardlog's original value, so that
//! the key bytes of a group never depend on its value. A group's tombstone is written
//! under both group keys (version 2 and [`KEY_CONSUMER_GROUP`]): a group may have
//! been either kind, and compaction must be able to drop the records of both.

use bytes::Bytes;

use super::records::{DecodeError, GroupRecord, MemberRecord};

/// Key version of an offset commit (Kafka `OffsetCommitKey`, current version).
const KEY_OFFSET_COMMIT: i16 = 1;
/// Key version of an offset commit written by Kafka before 0.10 (same schema).
const KEY_OFFSET_COMMIT_LEGACY: i16 = 0;
/// Key version of group metadata (Kafka `GroupMetadataKey`).
const KEY_GROUP_METADATA: i16 = 2;
/// Key version of shardlog's KIP-848 consumer group record (not a Kafka record type).
pub(super) const KEY_CONSUMER_GROUP: i16 = i16::MAX;

/// Appends Kafka's primitive types.
struct Writer(Vec<u8>);

impl Writer {
    fn i16(&mut self, v: i16) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    fn i32(&mut self, v: i32) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    /// `None` when `s` is longer than an i16 length allows.
    fn string(&mut self, s: &str) -> Option<()> {
        self.i16(i16::try_from(s.len()).ok()?);
        self.0.extend_from_slice(s.as_bytes());
        Some(())
    }
    fn nullable_string(&mut self, s: Option<&str>) -> Option<()> {
        match s {
            Some(s) => self.string(s),
            None => {
                self.i16(-1);
                Some(())
            }
        }
    }
    fn bytes(&mut self, b: &[u8]) -> Option<()> {
        self.i32(i32::try_from(b.len()).ok()?);
        self.0.extend_from_slice(b);
        Some(())
    }
}

/// Reads Kafka's primitive types; every length is checked against what is left.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if n > self.0.len() {
            return Err(DecodeError("truncated"));
        }
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Ok(head)
    }
    fn i16(&mut self) -> Result<i16, DecodeError> {
        Ok(i16::from_be_bytes(self.take(2)?.try_into().expect("2 bytes")))
    }
    fn i32(&mut self) -> Result<i32, DecodeError> {
        Ok(i32::from_be_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }
    fn i64(&mut self) -> Result<i64, DecodeError> {
        Ok(i64::from_be_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }
    fn nullable_string(&mut self) -> Result<Option<String>, DecodeError> {
        let n = self.i16()?;
        if n < 0 {
            return if n == -1 { Ok(None) } else { Err(DecodeError("negative string length")) };
        }
        let s = self.take(n as usize)?;
        std::str::from_utf8(s)
            .map(|s| Some(s.to_string()))
            .map_err(|_| DecodeError("string is not UTF-8"))
    }
    fn string(&mut self) -> Result<String, DecodeError> {
        self.nullable_string()?.ok_or(DecodeError("null string"))
    }
    fn bytes(&mut self) -> Result<Bytes, DecodeError> {
        let n = usize::try_from(self.i32()?).map_err(|_| DecodeError("negative bytes length"))?;
        Ok(Bytes::copy_from_slice(self.take(n)?))
    }
    fn end(&self) -> Result<(), DecodeError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(DecodeError("trailing bytes"))
        }
    }
}

/// Whether `key` is in this module's format (else shardlog's original one, whose
/// first byte is 1 or 2).
pub(super) fn is_kafka_key(key: &[u8]) -> bool {
    matches!(key.first(), Some(0x00) | Some(0x7f))
}

/// The record's key in Kafka's schemas, or `None` when its group or topic is too long
/// for an i16 length (the record then takes shardlog's original key). The key alone
/// decides the format of the key, so that every record of one group or committed
/// offset has the same key bytes and compaction keeps only the last.
pub(super) fn encode_key(record: &GroupRecord) -> Option<Vec<u8>> {
    let mut k = Writer(Vec::new());
    match record {
        GroupRecord::Offset { group, topic, partition, .. }
        | GroupRecord::OffsetTombstone { group, topic, partition } => {
            offset_key(&mut k, group, topic, *partition)?;
        }
        GroupRecord::GroupMetadata { group, .. } | GroupRecord::GroupTombstone { group } => {
            k.i16(KEY_GROUP_METADATA);
            k.string(group)?;
        }
        GroupRecord::ConsumerGroup { group, .. } => return consumer_group_key(group),
    }
    Some(k.0)
}

/// The key of `group`'s KIP-848 record ([`KEY_CONSUMER_GROUP`]), or `None` when the
/// group id is too long for an i16 length.
pub(super) fn consumer_group_key(group: &str) -> Option<Vec<u8>> {
    let mut k = Writer(Vec::new());
    k.i16(KEY_CONSUMER_GROUP);
    k.string(group)?;
    Some(k.0)
}

/// The record's value in Kafka's schemas (empty for a tombstone), or `None` when one
/// of its strings is too long for an i16 length: the caller then writes shardlog's
/// original value under this module's key. An original value starts with its version
/// byte (1 or 2) where Kafka's start with an i16 version whose first byte is 0, so
/// [`decode`] tells them apart.
pub(super) fn encode_value(record: &GroupRecord) -> Option<Vec<u8>> {
    let mut v = Writer(Vec::new());
    match record {
        GroupRecord::Offset {
            offset,
            leader_epoch,
            metadata,
            commit_timestamp_ms,
            expire_timestamp_ms,
            ..
        } => match expire_timestamp_ms {
            Some(expire) => {
                v.i16(1);
                v.i64(*offset);
                v.string(metadata)?;
                v.i64(*commit_timestamp_ms);
                v.i64(*expire);
            }
            None => {
                v.i16(3);
                v.i64(*offset);
                v.i32(*leader_epoch);
                v.string(metadata)?;
                v.i64(*commit_timestamp_ms);
            }
        },
        GroupRecord::OffsetTombstone { .. } | GroupRecord::GroupTombstone { .. } => {}
        GroupRecord::GroupMetadata {
            protocol_type,
            generation,
            protocol,
            leader,
            current_state_timestamp_ms,
            members,
            ..
        } => {
            v.i16(3);
            v.string(protocol_type)?;
            v.i32(*generation);
            v.nullable_string(protocol.as_deref())?;
            v.nullable_string(leader.as_deref())?;
            v.i64(current_state_timestamp_ms.unwrap_or(-1));
            v.i32(i32::try_from(members.len()).ok()?);
            for m in members {
                v.string(&m.member_id)?;
                v.nullable_string(m.group_instance_id.as_deref())?;
                v.string(&m.client_id)?;
                v.string(&m.client_host)?;
                v.i32(m.rebalance_timeout_ms);
                v.i32(m.session_timeout_ms);
                v.bytes(&m.subscription)?;
                v.bytes(&m.assignment)?;
            }
        }
        GroupRecord::ConsumerGroup { .. } => {
            v.0 = super::records::consumer_group_value(record);
        }
    }
    Some(v.0)
}

/// Whether `value`, found under a key of this module, is in shardlog's original value
/// format (see [`encode_value`]).
fn is_original_value(value: &[u8]) -> bool {
    value.first().is_some_and(|b| *b != 0)
}

fn offset_key(k: &mut Writer, group: &str, topic: &str, partition: i32) -> Option<()> {
    k.i16(KEY_OFFSET_COMMIT);
    k.string(group)?;
    k.string(topic)?;
    k.i32(partition);
    Some(())
}

/// Decodes a record in Kafka's schemas (see [`is_kafka_key`]); `value = None` is a
/// tombstone. Never panics.
pub(super) fn decode(key: &[u8], value: Option<&[u8]>) -> Result<GroupRecord, DecodeError> {
    let mut k = Reader(key);
    let key_version = k.i16()?;
    let group = k.string()?;
    match key_version {
        KEY_OFFSET_COMMIT | KEY_OFFSET_COMMIT_LEGACY => {
            let topic = k.string()?;
            let partition = k.i32()?;
            k.end()?;
            match value {
                None => Ok(GroupRecord::OffsetTombstone { group, topic, partition }),
                Some(value) if is_original_value(value) => super::records::decode_original_value(
                    super::records::KEY_OFFSET,
                    group,
                    topic,
                    partition,
                    value,
                ),
                Some(value) => offset_value(group, topic, partition, value),
            }
        }
        KEY_GROUP_METADATA => {
            k.end()?;
            match value {
                None => Ok(GroupRecord::GroupTombstone { group }),
                Some(value) if is_original_value(value) => super::records::decode_original_value(
                    super::records::KEY_GROUP,
                    group,
                    String::new(),
                    0,
                    value,
                ),
                Some(value) => group_value(group, value),
            }
        }
        KEY_CONSUMER_GROUP => {
            k.end()?;
            match value {
                None => Ok(GroupRecord::GroupTombstone { group }),
                Some(value) => super::records::decode_consumer_group_value(group, value),
            }
        }
        _ => Err(DecodeError("unknown key version")),
    }
}

fn offset_value(
    group: String,
    topic: String,
    partition: i32,
    value: &[u8],
) -> Result<GroupRecord, DecodeError> {
    let mut v = Reader(value);
    let version = v.i16()?;
    let (offset, leader_epoch, metadata, commit_timestamp_ms, expire_timestamp_ms) = match version {
        0 | 2 => (v.i64()?, -1, v.string()?, v.i64()?, None),
        1 => (v.i64()?, -1, v.string()?, v.i64()?, Some(v.i64()?).filter(|t| *t >= 0)),
        3 => (v.i64()?, v.i32()?, v.string()?, v.i64()?, None),
        _ => return Err(DecodeError("unknown offset commit value version")),
    };
    v.end()?;
    Ok(GroupRecord::Offset {
        group,
        topic,
        partition,
        offset,
        leader_epoch,
        metadata,
        commit_timestamp_ms,
        expire_timestamp_ms,
    })
}

fn group_value(group: String, value: &[u8]) -> Result<GroupRecord, DecodeError> {
    let mut v = Reader(value);
    let version = v.i16()?;
    if !(0..=3).contains(&version) {
        return Err(DecodeError("unknown group metadata value version"));
    }
    let protocol_type = v.string()?;
    let generation = v.i32()?;
    let protocol = v.nullable_string()?;
    let leader = v.nullable_string()?;
    let current_state_timestamp_ms =
        if version >= 2 { Some(v.i64()?).filter(|t| *t >= 0) } else { None };
    let count = v.i32()?;
    // A member takes at least 2+2+2+4+4+4 bytes (v0, empty strings): bound the count
    // by what is left before allocating.
    let count = usize::try_from(count).map_err(|_| DecodeError("negative member count"))?;
    if count.saturating_mul(18) > v.0.len() {
        return Err(DecodeError("count exceeds record size"));
    }
    let mut members = Vec::with_capacity(count);
    for _ in 0..count {
        let member_id = v.string()?;
        let group_instance_id = if version >= 3 { v.nullable_string()? } else { None };
        let client_id = v.string()?;
        let client_host = v.string()?;
        let rebalance_timeout = if version >= 1 { Some(v.i32()?) } else { None };
        let session_timeout_ms = v.i32()?;
        members.push(MemberRecord {
            member_id,
            group_instance_id,
            client_id,
            client_host,
            rebalance_timeout_ms: rebalance_timeout.unwrap_or(session_timeout_ms),
            session_timeout_ms,
            subscription: v.bytes()?,
            assignment: v.bytes()?,
        });
    }
    v.end()?;
    Ok(GroupRecord::GroupMetadata {
        group,
        protocol_type,
        generation,
        protocol,
        leader,
        current_state_timestamp_ms,
        members,
    })
}

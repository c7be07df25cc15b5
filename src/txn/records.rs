//! The records of the `__transaction_state` log, byte for byte in Apache Kafka's schemas
//! (`transaction-coordinator/src/main/resources/common/message/TransactionLogKey.json`
//! and `TransactionLogValue.json`), so that Kafka's tools
//! (`TransactionLogMessageFormatter`, `kafka-dump-log --transaction-log-decoder`) read
//! shardlog's log. One record per transactional id and change; the log is compacted on
//! the key; a record with a null value (tombstone) deletes the id.
//!
//! Both key and value start with their schema version (int16, big-endian). Primitive
//! types are big-endian; `STRING` = int16 length + UTF-8; arrays = int32 count (-1 =
//! null); in the flexible value version the strings and arrays are "compact" (unsigned
//! varint length + 1, 0 = null) and every struct ends with its tagged fields (unsigned
//! varint count, then per field: unsigned varint tag, unsigned varint size, bytes).
//!
//! | part | version | layout |
//! | --- | --- | --- |
//! | key | 0 | `version: i16 = 0`, `TransactionalId: STRING` |
//! | value | 0 | `version: i16 = 0`, `ProducerId: i64`, `ProducerEpoch: i16`, `TransactionTimeoutMs: i32`, `TransactionStatus: i8`, `TransactionPartitions: nullable [Topic: STRING, PartitionIds: [i32]]`, `TransactionLastUpdateTimestampMs: i64`, `TransactionStartTimestampMs: i64` |
//! | value | 1 (flexible) | as version 0 with compact strings and arrays, each partitions entry followed by its (empty) tagged fields, then the value's tagged fields: tag 0 `PreviousProducerId: i64` (default -1), tag 1 `NextProducerId: i64` (default -1), tag 2 `ClientTransactionVersion: i16` (default 0); a tagged field equal to its default is not written |
//!
//! `TransactionPartitions` is null for an Empty transaction (Kafka writes it so), and
//! ignored when an Empty value is read. Decoding checks every length and count against
//! the bytes left before allocating and never panics; unknown tagged fields are
//! skipped; trailing bytes are an error.

use std::collections::BTreeSet;

use super::metadata::{TopicPartition, TxnMetadata, NO_PRODUCER_EPOCH, NO_PRODUCER_ID};
use super::state::{TransactionVersion, TxnState};

/// The only key version (`TransactionLogKey`).
pub const KEY_VERSION: i16 = 0;

/// A `__transaction_state` record that could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// The key's version is not 0. Kafka skips such a record when it loads the log (a
    /// leftover of an aborted upgrade); so does [`super::TxnCoordinator::load_record`]'s
    /// caller.
    UnknownKeyVersion(i16),
    /// The bytes do not follow the schema.
    Invalid(&'static str),
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::UnknownKeyVersion(v) => {
                write!(f, "unknown __transaction_state key version {v}")
            }
            DecodeError::Invalid(why) => write!(f, "invalid __transaction_state record: {why}"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// The partitions of one topic in a stored transaction (`PartitionsSchema`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnLogPartitions {
    /// Topic name.
    pub topic: String,
    /// Partition indexes, in stored order.
    pub partition_ids: Vec<i32>,
}

/// A `TransactionLogValue`, field for field, with the version it is (to be) written in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnLogValue {
    /// The schema version: 0 or 1 (flexible).
    pub version: i16,
    /// `ProducerId`.
    pub producer_id: i64,
    /// `PreviousProducerId` (tag 0, version 1 only; -1 = none).
    pub previous_producer_id: i64,
    /// `NextProducerId` (tag 1, version 1 only; -1 = none).
    pub next_producer_id: i64,
    /// `ProducerEpoch`.
    pub producer_epoch: i16,
    /// `TransactionTimeoutMs` (ms).
    pub timeout_ms: i32,
    /// `TransactionStatus`, as its state.
    pub state: TxnState,
    /// `TransactionPartitions`; `None` = null (an Empty transaction).
    pub partitions: Option<Vec<TxnLogPartitions>>,
    /// `TransactionLastUpdateTimestampMs` (ms since the epoch).
    pub last_update_timestamp_ms: i64,
    /// `TransactionStartTimestampMs` (ms since the epoch; -1 = none).
    pub start_timestamp_ms: i64,
    /// `ClientTransactionVersion` (tag 2, version 1 only; default 0).
    pub client_transaction_version: i16,
}

/// One record of the `__transaction_state` log: the key's transactional id and the value
/// (`None` = tombstone: the id is deleted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnRecord {
    /// `TransactionLogKey.TransactionalId`.
    pub transactional_id: String,
    /// The value, or `None` for a tombstone (append it with a null value).
    pub value: Option<TxnLogValue>,
}

impl TxnLogValue {
    /// The value that stores `m`, in `version` (0 or 1; a version-0 value drops the
    /// previous and next producer ids and the client version, as Kafka's does). Kafka
    /// source: `TransactionLog.valueToBytes`; unlike the 4.0 snapshot, which leaves them
    /// at their defaults, version 1 carries the previous and next producer ids, so that a
    /// reload keeps KIP-360 retries and a TV2 producer id rotation in PrepareCommit.
    pub fn of(m: &TxnMetadata, version: i16) -> TxnLogValue {
        let flexible = version >= 1;
        let partitions = (m.state != TxnState::Empty).then(|| {
            let mut by_topic: Vec<TxnLogPartitions> = Vec::new();
            for (topic, p) in &m.partitions {
                match by_topic.last_mut() {
                    Some(t) if &t.topic == topic => t.partition_ids.push(*p),
                    _ => by_topic
                        .push(TxnLogPartitions { topic: topic.clone(), partition_ids: vec![*p] }),
                }
            }
            by_topic
        });
        TxnLogValue {
            version: if flexible { 1 } else { 0 },
            producer_id: m.producer_id,
            previous_producer_id: if flexible { m.previous_producer_id } else { NO_PRODUCER_ID },
            next_producer_id: if flexible { m.next_producer_id } else { NO_PRODUCER_ID },
            producer_epoch: m.producer_epoch,
            timeout_ms: m.timeout_ms,
            state: m.state,
            partitions,
            last_update_timestamp_ms: m.last_update_timestamp_ms,
            start_timestamp_ms: m.start_timestamp_ms,
            client_transaction_version: if flexible {
                m.client_transaction_version.level()
            } else {
                0
            },
        }
    }

    /// The metadata a loaded value stands for (Kafka's `TransactionLog.readTxnRecordValue`):
    /// the last producer epoch is unknown (-1) and an Empty value has no partitions.
    pub fn to_metadata(&self) -> TxnMetadata {
        let partitions: BTreeSet<TopicPartition> = if self.state == TxnState::Empty {
            BTreeSet::new()
        } else {
            self.partitions
                .iter()
                .flatten()
                .flat_map(|t| t.partition_ids.iter().map(|p| (t.topic.clone(), *p)))
                .collect()
        };
        TxnMetadata {
            producer_id: self.producer_id,
            previous_producer_id: self.previous_producer_id,
            next_producer_id: self.next_producer_id,
            producer_epoch: self.producer_epoch,
            last_producer_epoch: NO_PRODUCER_EPOCH,
            timeout_ms: self.timeout_ms,
            state: self.state,
            partitions,
            start_timestamp_ms: self.start_timestamp_ms,
            last_update_timestamp_ms: self.last_update_timestamp_ms,
            client_transaction_version: TransactionVersion::from_level(
                self.client_transaction_version,
            ),
        }
    }

    /// The value's bytes (version first). A string longer than its length prefix allows
    /// (a topic name over 32767 bytes) cannot be written: `None`.
    pub fn encode(&self) -> Option<Vec<u8>> {
        let mut w = Writer(Vec::with_capacity(64));
        let flexible = self.version >= 1;
        w.i16(if flexible { 1 } else { 0 });
        w.i64(self.producer_id);
        w.i16(self.producer_epoch);
        w.i32(self.timeout_ms);
        w.0.push(self.state.id() as u8);
        match &self.partitions {
            None if flexible => w.uvarint(0),
            None => w.i32(-1),
            Some(topics) => {
                w.array_len(topics.len(), flexible)?;
                for t in topics {
                    w.string(&t.topic, flexible)?;
                    w.array_len(t.partition_ids.len(), flexible)?;
                    for p in &t.partition_ids {
                        w.i32(*p);
                    }
                    if flexible {
                        w.uvarint(0);
                    }
                }
            }
        }
        w.i64(self.last_update_timestamp_ms);
        w.i64(self.start_timestamp_ms);
        if flexible {
            let mut tags: Vec<(u32, Vec<u8>)> = Vec::new();
            if self.previous_producer_id != NO_PRODUCER_ID {
                tags.push((0, self.previous_producer_id.to_be_bytes().to_vec()));
            }
            if self.next_producer_id != NO_PRODUCER_ID {
                tags.push((1, self.next_producer_id.to_be_bytes().to_vec()));
            }
            if self.client_transaction_version != 0 {
                tags.push((2, self.client_transaction_version.to_be_bytes().to_vec()));
            }
            w.uvarint(tags.len() as u32);
            for (tag, data) in tags {
                w.uvarint(tag);
                w.uvarint(data.len() as u32);
                w.0.extend_from_slice(&data);
            }
        }
        Some(w.0)
    }

    /// Decode a value (version first). Never panics.
    pub fn decode(bytes: &[u8]) -> Result<TxnLogValue, DecodeError> {
        let mut r = Reader(bytes);
        let version = r.i16()?;
        if !(0..=1).contains(&version) {
            return Err(DecodeError::Invalid("unknown value version"));
        }
        let flexible = version == 1;
        let producer_id = r.i64()?;
        let producer_epoch = r.i16()?;
        let timeout_ms = r.i32()?;
        let state = TxnState::from_id(r.i8()?).ok_or(DecodeError::Invalid("unknown state id"))?;
        // A topic takes at least 2 (or 1) + 4 (or 1) bytes, a partition id 4.
        let partitions = match r.array_len(flexible, if flexible { 3 } else { 6 })? {
            None => None,
            Some(n) => {
                let mut topics = Vec::with_capacity(n);
                for _ in 0..n {
                    let topic = r.string(flexible)?;
                    let count = r
                        .array_len(flexible, 4)?
                        .ok_or(DecodeError::Invalid("null partition ids"))?;
                    let mut partition_ids = Vec::with_capacity(count);
                    for _ in 0..count {
                        partition_ids.push(r.i32()?);
                    }
                    if flexible {
                        r.skip_tagged_fields(|_, _| Ok(()))?;
                    }
                    topics.push(TxnLogPartitions { topic, partition_ids });
                }
                Some(topics)
            }
        };
        let last_update_timestamp_ms = r.i64()?;
        let start_timestamp_ms = r.i64()?;
        let mut value = TxnLogValue {
            version,
            producer_id,
            previous_producer_id: NO_PRODUCER_ID,
            next_producer_id: NO_PRODUCER_ID,
            producer_epoch,
            timeout_ms,
            state,
            partitions,
            last_update_timestamp_ms,
            start_timestamp_ms,
            client_transaction_version: 0,
        };
        if flexible {
            r.skip_tagged_fields(|tag, data| {
                let exact = |n: usize| {
                    if data.len() == n {
                        Ok(())
                    } else {
                        Err(DecodeError::Invalid("tagged field of the wrong size"))
                    }
                };
                match tag {
                    0 => {
                        exact(8)?;
                        value.previous_producer_id = Reader(data).i64()?;
                    }
                    1 => {
                        exact(8)?;
                        value.next_producer_id = Reader(data).i64()?;
                    }
                    2 => {
                        exact(2)?;
                        value.client_transaction_version = Reader(data).i16()?;
                    }
                    _ => {}
                }
                Ok(())
            })?;
        }
        r.end()?;
        Ok(value)
    }
}

impl TxnRecord {
    /// The record that stores `m` for `transactional_id` in value `version`.
    pub fn of(transactional_id: &str, m: &TxnMetadata, version: i16) -> TxnRecord {
        TxnRecord {
            transactional_id: transactional_id.to_string(),
            value: Some(TxnLogValue::of(m, version)),
        }
    }

    /// The tombstone of `transactional_id`.
    pub fn tombstone(transactional_id: &str) -> TxnRecord {
        TxnRecord { transactional_id: transactional_id.to_string(), value: None }
    }

    /// The key's bytes (`TransactionLogKey` v0, version first). `None` when the id is
    /// longer than 32767 bytes (it cannot be stored; Kafka would fail the same way).
    pub fn encode_key(&self) -> Option<Vec<u8>> {
        let mut w = Writer(Vec::with_capacity(4 + self.transactional_id.len()));
        w.i16(KEY_VERSION);
        w.string(&self.transactional_id, false)?;
        Some(w.0)
    }

    /// (key, value) to append; a value of `None` is appended as a null value. `None`
    /// when a string does not fit its length prefix.
    pub fn encode(&self) -> Option<(Vec<u8>, Option<Vec<u8>>)> {
        let key = self.encode_key()?;
        let value = match &self.value {
            Some(v) => Some(v.encode()?),
            None => None,
        };
        Some((key, value))
    }

    /// Decode a record read from the log (`value = None`: a null value, a tombstone).
    /// Never panics.
    pub fn decode(key: &[u8], value: Option<&[u8]>) -> Result<TxnRecord, DecodeError> {
        let mut k = Reader(key);
        let version = k.i16()?;
        if version != KEY_VERSION {
            return Err(DecodeError::UnknownKeyVersion(version));
        }
        let transactional_id = k.string(false)?;
        k.end()?;
        let value = value.map(TxnLogValue::decode).transpose()?;
        Ok(TxnRecord { transactional_id, value })
    }
}

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
    fn uvarint(&mut self, mut v: u32) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }
    /// An array's length: int32, or (flexible) unsigned varint of length + 1.
    fn array_len(&mut self, n: usize, flexible: bool) -> Option<()> {
        let n = i32::try_from(n).ok()?;
        if flexible {
            self.uvarint(n as u32 + 1);
        } else {
            self.i32(n);
        }
        Some(())
    }
    /// A non-null string: int16 length, or (flexible) unsigned varint of length + 1.
    fn string(&mut self, s: &str, flexible: bool) -> Option<()> {
        let n = i16::try_from(s.len()).ok()?;
        if flexible {
            self.uvarint(n as u32 + 1);
        } else {
            self.i16(n);
        }
        self.0.extend_from_slice(s.as_bytes());
        Some(())
    }
}

/// Reads Kafka's primitive types from the front of a slice; every length is checked
/// against what is left.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if n > self.0.len() {
            return Err(DecodeError::Invalid("truncated"));
        }
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Ok(head)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }
    fn i8(&mut self) -> Result<i8, DecodeError> {
        Ok(i8::from_be_bytes(self.array()?))
    }
    fn i16(&mut self) -> Result<i16, DecodeError> {
        Ok(i16::from_be_bytes(self.array()?))
    }
    fn i32(&mut self) -> Result<i32, DecodeError> {
        Ok(i32::from_be_bytes(self.array()?))
    }
    fn i64(&mut self) -> Result<i64, DecodeError> {
        Ok(i64::from_be_bytes(self.array()?))
    }
    /// An unsigned varint of at most 5 bytes (a u32).
    fn uvarint(&mut self) -> Result<u32, DecodeError> {
        let mut v: u32 = 0;
        for i in 0..5 {
            let b = self.take(1)?[0];
            if i == 4 && b > 0x0f {
                return Err(DecodeError::Invalid("varint too long"));
            }
            v |= u32::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(DecodeError::Invalid("varint too long"))
    }
    /// An array's length (`None` = null), checked against the bytes left given that an
    /// element takes at least `min_element_bytes`.
    fn array_len(
        &mut self,
        flexible: bool,
        min_element_bytes: usize,
    ) -> Result<Option<usize>, DecodeError> {
        let n: i64 = if flexible { i64::from(self.uvarint()?) - 1 } else { i64::from(self.i32()?) };
        if n == -1 {
            return Ok(None);
        }
        let n = usize::try_from(n).map_err(|_| DecodeError::Invalid("negative array length"))?;
        if n.saturating_mul(min_element_bytes) > self.0.len() {
            return Err(DecodeError::Invalid("array count exceeds record size"));
        }
        Ok(Some(n))
    }
    /// A non-null string.
    fn string(&mut self, flexible: bool) -> Result<String, DecodeError> {
        let n: i64 = if flexible { i64::from(self.uvarint()?) - 1 } else { i64::from(self.i16()?) };
        let n = usize::try_from(n).map_err(|_| DecodeError::Invalid("null or negative string"))?;
        std::str::from_utf8(self.take(n)?)
            .map(str::to_string)
            .map_err(|_| DecodeError::Invalid("string is not UTF-8"))
    }
    /// A tagged-field section: each field's tag and bytes go to `f` (in stored order;
    /// like Kafka's generated readers, the order of the tags is not checked).
    fn skip_tagged_fields(
        &mut self,
        mut f: impl FnMut(u32, &[u8]) -> Result<(), DecodeError>,
    ) -> Result<(), DecodeError> {
        let count = self.uvarint()?;
        for _ in 0..count {
            let tag = self.uvarint()?;
            let size = self.uvarint()? as usize;
            f(tag, self.take(size)?)?;
        }
        Ok(())
    }
    fn end(&self) -> Result<(), DecodeError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(DecodeError::Invalid("trailing bytes"))
        }
    }
}

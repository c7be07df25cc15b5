//! The records inside one v2 record batch, as the log cleaner (compaction) needs them:
//! each record's offset, timestamp, key and whether it is a tombstone, and a batch
//! rebuilt from a subset of its records. Pure (no I/O); compressed batches are
//! decompressed and recompressed with kafka-protocol's codecs (gzip, snappy in the
//! xerial framing Java uses, lz4 frames, zstd).
//!
//! Record layout (protocol guide, "Record"): `length: varint, attributes: int8,
//! timestampDelta: varlong, offsetDelta: varint, keyLength: varint, key, valueLength:
//! varint, value, headers: [varint key length, key, varint value length, value]`. The
//! deltas are relative to the batch's base offset and base timestamp.
//!
//! A rebuilt batch keeps the original base offset, last offset delta (so the producer's
//! last sequence survives, as Kafka's `MemoryRecords.filterTo` does with
//! `overrideLastOffset`), base timestamp, producer id/epoch, base sequence,
//! partition leader epoch and attributes; the kept records' bytes are copied verbatim
//! (their deltas stay valid); the record count, max timestamp (CreateTime), length and
//! CRC are recomputed.

use std::fmt;
use std::ops::Range;

use bytes::{Bytes, BytesMut};
use kafka_protocol::compression::{Compressor, Gzip, Lz4, Snappy, Zstd};

use super::decompress::{decompress, MAX_DECOMPRESSED_BYTES};

use super::batch::{
    compute_crc, BatchError, RecordBatchHeader, ATTR_COMPRESSION_MASK, LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
};

/// One record batch (magic 2) of `records`, each `(key, value, timestamp)` (None =
/// null; timestamps in ms, CreateTime), with no producer (id -1, epoch -1, base
/// sequence -1) and offsets 0..n, in `compression`. kafka-protocol's encoder starts a
/// new batch wherever offset - sequence changes; the sequences given here keep every
/// record in the one batch, as a log append of one batch needs. Errors: `Codec` when
/// compressing fails.
pub fn encode_plain_batch(
    records: impl IntoIterator<Item = (Option<Bytes>, Option<Bytes>, i64)>,
    compression: kafka_protocol::records::Compression,
) -> Result<Bytes, RecordsError> {
    encode_batch(None, records, compression)
}

/// [`encode_plain_batch`] as a transactional batch (attribute bit 4) of producer
/// `producer_id` at `producer_epoch`, base sequence -1: what the group coordinator
/// appends for a TxnOffsetCommit (Kafka's coordinator writes base sequence 0 and
/// skips the log's sequence checks for its own writes; -1 gets the same from this
/// log: the epoch is fenced, the sequence is not checked).
pub fn encode_transactional_batch(
    producer_id: i64,
    producer_epoch: i16,
    records: impl IntoIterator<Item = (Option<Bytes>, Option<Bytes>, i64)>,
    compression: kafka_protocol::records::Compression,
) -> Result<Bytes, RecordsError> {
    encode_batch(Some((producer_id, producer_epoch)), records, compression)
}

/// One batch of `records` (see [`encode_plain_batch`]), transactional for
/// `producer` (id, epoch) when given.
fn encode_batch(
    producer: Option<(i64, i16)>,
    records: impl IntoIterator<Item = (Option<Bytes>, Option<Bytes>, i64)>,
    compression: kafka_protocol::records::Compression,
) -> Result<Bytes, RecordsError> {
    use kafka_protocol::records::{Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType};
    let (producer_id, producer_epoch) = producer.unwrap_or((-1, -1));
    let records: Vec<Record> = records
        .into_iter()
        .enumerate()
        .map(|(i, (key, value, timestamp))| Record {
            transactional: producer.is_some(),
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 0,
            producer_id,
            producer_epoch,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            sequence: i as i32 - 1,
            timestamp,
            key,
            value,
            headers: Default::default(),
        })
        .collect();
    let mut buf = BytesMut::new();
    let options = RecordEncodeOptions { version: 2, compression };
    RecordBatchEncoder::encode(&mut buf, &records, &options)
        .map_err(|e| RecordsError::Codec(e.to_string()))?;
    Ok(buf.freeze())
}

/// Why a batch's records could not be read or rebuilt.
#[derive(Debug)]
pub enum RecordsError {
    /// The batch header is invalid.
    Batch(BatchError),
    /// An unknown codec id in attribute bits 0-2.
    UnknownCodec(u8),
    /// Decompressing or compressing the records failed (codec message).
    Codec(String),
    /// A record is malformed (what is wrong).
    Malformed(&'static str),
}

impl fmt::Display for RecordsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordsError::Batch(e) => write!(f, "{e}"),
            RecordsError::UnknownCodec(c) => write!(f, "unknown compression codec {c}"),
            RecordsError::Codec(m) => write!(f, "codec: {m}"),
            RecordsError::Malformed(m) => write!(f, "malformed record: {m}"),
        }
    }
}

impl std::error::Error for RecordsError {}

/// One record of a decoded batch; ranges index [`BatchRecords::data`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordView {
    /// Absolute offset (base offset + offset delta).
    pub offset: i64,
    /// Absolute timestamp, ms (base timestamp + delta; the batch max timestamp under
    /// LogAppendTime).
    pub timestamp: i64,
    /// The key's bytes; `None` for a null key.
    pub key: Option<Range<usize>>,
    /// False for a tombstone (null value).
    pub has_value: bool,
    /// The value's bytes; `None` for a null value (a tombstone).
    pub value: Option<Range<usize>>,
    /// Where the timestamp delta ends in [`BatchRecords::data`] (the rest of the record
    /// follows it).
    pub after_timestamp: usize,
    /// The whole record, its length varint included.
    pub span: Range<usize>,
}

/// The records of one batch, decompressed.
#[derive(Debug, Clone)]
pub struct BatchRecords {
    /// The batch header as stored.
    pub header: RecordBatchHeader,
    /// The uncompressed records section.
    pub data: Bytes,
    /// Every record, in order.
    pub records: Vec<RecordView>,
}

/// Attribute bit 6: the batch's base timestamp is its delete horizon (KIP-534).
pub const ATTR_DELETE_HORIZON: i16 = 0x40;

impl BatchRecords {
    /// The batch's delete horizon (KIP-534): when its tombstones may go, ms.
    pub fn delete_horizon(&self) -> Option<i64> {
        (self.header.attributes & ATTR_DELETE_HORIZON != 0).then_some(self.header.base_timestamp)
    }

    /// The key bytes of `r` (`None`: null key).
    pub fn key(&self, r: &RecordView) -> Option<&[u8]> {
        r.key.as_ref().map(|k| &self.data[k.clone()])
    }

    /// The value bytes of `r` (`None`: null value).
    pub fn value(&self, r: &RecordView) -> Option<&[u8]> {
        r.value.as_ref().map(|v| &self.data[v.clone()])
    }
}

/// Reads a zigzag varint of at most `max_bytes` bytes at `*pos`.
fn varint(buf: &[u8], pos: &mut usize, max_bytes: usize) -> Result<i64, RecordsError> {
    let mut z: u64 = 0;
    for i in 0..max_bytes {
        let b = *buf.get(*pos).ok_or(RecordsError::Malformed("truncated varint"))?;
        *pos += 1;
        z |= ((b & 0x7f) as u64) << (7 * i);
        if b & 0x80 == 0 {
            return Ok(((z >> 1) as i64) ^ -((z & 1) as i64));
        }
    }
    Err(RecordsError::Malformed("varint too long"))
}

/// Skips a varint-length-prefixed byte string; returns its range (`None` for length -1).
fn bytes_field(buf: &[u8], pos: &mut usize) -> Result<Option<Range<usize>>, RecordsError> {
    let len = varint(buf, pos, 5)?;
    if len < 0 {
        return Ok(None);
    }
    let start = *pos;
    let end = start.checked_add(len as usize).filter(|&e| e <= buf.len());
    let end = end.ok_or(RecordsError::Malformed("field past the end of the records"))?;
    *pos = end;
    Ok(Some(start..end))
}

fn codec_error(e: anyhow::Error) -> RecordsError {
    RecordsError::Codec(e.to_string())
}

/// The uncompressed records section of `batch` (a whole batch), at most
/// [`MAX_DECOMPRESSED_BYTES`] (see [`super::decompress`]).
fn records_section(h: &RecordBatchHeader, batch: &[u8]) -> Result<Bytes, RecordsError> {
    let raw = &batch[RECORD_BATCH_OVERHEAD..h.total_size()];
    match h.compression() {
        0 => Ok(Bytes::copy_from_slice(raw)),
        c @ 1..=4 => decompress(c, raw, MAX_DECOMPRESSED_BYTES).map_err(RecordsError::Codec),
        c => Err(RecordsError::UnknownCodec(c)),
    }
}

/// Decodes every record of `batch` (one whole v2 batch; trailing bytes are ignored).
/// Errors: an invalid header, an unknown codec, a section that does not decompress, a
/// record count or record lengths that disagree with the bytes.
pub fn decode_records(batch: &[u8]) -> Result<BatchRecords, RecordsError> {
    let header = RecordBatchHeader::parse(batch).map_err(RecordsError::Batch)?;
    let count = usize::try_from(header.records_count)
        .map_err(|_| RecordsError::Malformed("negative record count"))?;
    // The views cost ~100 bytes a record: with the section they stay within the same
    // bound as the section alone (19 million 7-byte records fit 128 MiB, and their
    // views would take 1.8 GB). Checked on the claimed count before decompressing (a
    // count past the bound alone is refused without that work), then with the section.
    let views = count.saturating_mul(std::mem::size_of::<RecordView>());
    let data = if views > MAX_DECOMPRESSED_BYTES {
        Bytes::new()
    } else {
        records_section(&header, batch)?
    };
    if views.saturating_add(data.len()) > MAX_DECOMPRESSED_BYTES {
        return Err(RecordsError::Codec(format!(
            "{count} records decode to more than {MAX_DECOMPRESSED_BYTES} bytes"
        )));
    }
    // Every record takes at least 7 bytes: do not trust the count for the allocation.
    let mut records = Vec::with_capacity(count.min(data.len() / 7 + 1));
    let mut pos = 0usize;
    for _ in 0..count {
        let start = pos;
        let len = varint(&data, &mut pos, 5)?;
        let body = pos;
        let end = usize::try_from(len)
            .ok()
            .and_then(|l| body.checked_add(l))
            .filter(|&e| e <= data.len())
            .ok_or(RecordsError::Malformed("record length past the end of the records"))?;
        let rec = &data[..end];
        let mut p = body + 1; // attributes
        let ts_delta = varint(rec, &mut p, 10)?;
        let after_timestamp = p;
        let offset_delta = varint(rec, &mut p, 5)?;
        let key = bytes_field(rec, &mut p)?;
        let value = bytes_field(rec, &mut p)?;
        let timestamp = if header.timestamp_type_log_append() {
            header.max_timestamp
        } else {
            header.base_timestamp.wrapping_add(ts_delta)
        };
        records.push(RecordView {
            offset: header.base_offset + offset_delta,
            timestamp,
            key,
            has_value: value.is_some(),
            value,
            after_timestamp,
            span: start..end,
        });
        pos = end;
    }
    if pos != data.len() {
        return Err(RecordsError::Malformed("bytes after the last record"));
    }
    Ok(BatchRecords { header, data, records })
}

/// Writes the 61-byte header `h` with `count` records, `max_timestamp` and `records`
/// (already compressed as `h`'s codec says) into a new batch, with its length and CRC.
fn assemble(h: &RecordBatchHeader, count: i32, max_timestamp: i64, records: &[u8]) -> Vec<u8> {
    let total = RECORD_BATCH_OVERHEAD + records.len();
    let mut b = Vec::with_capacity(total);
    b.extend_from_slice(&h.base_offset.to_be_bytes());
    b.extend_from_slice(&((total - LOG_OVERHEAD) as i32).to_be_bytes());
    b.extend_from_slice(&h.partition_leader_epoch.to_be_bytes());
    b.push(h.magic as u8);
    b.extend_from_slice(&[0; 4]); // CRC, below
    b.extend_from_slice(&h.attributes.to_be_bytes());
    b.extend_from_slice(&h.last_offset_delta.to_be_bytes());
    b.extend_from_slice(&h.base_timestamp.to_be_bytes());
    b.extend_from_slice(&max_timestamp.to_be_bytes());
    b.extend_from_slice(&h.producer_id.to_be_bytes());
    b.extend_from_slice(&h.producer_epoch.to_be_bytes());
    b.extend_from_slice(&h.base_sequence.to_be_bytes());
    b.extend_from_slice(&count.to_be_bytes());
    b.extend_from_slice(records);
    let crc = compute_crc(&b);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
    b
}

/// A batch holding only the records of `batch` whose indexes are in `keep` (ascending),
/// with the header fields kept as the module documentation says; recompressed with the
/// batch's own codec. Errors: compressing failed.
pub fn rebuild(batch: &BatchRecords, keep: &[usize]) -> Result<Vec<u8>, RecordsError> {
    build(batch, keep, batch.header.compression(), None)
}

/// [`rebuild`] that also sets the batch's delete horizon (KIP-534, what Kafka's cleaner
/// does the first time it keeps a tombstone): attribute bit 6, the base timestamp
/// becomes `horizon_ms` and each record's timestamp delta is re-encoded against it, so
/// every record keeps its timestamp.
pub fn rebuild_with_horizon(
    batch: &BatchRecords,
    keep: &[usize],
    horizon_ms: i64,
) -> Result<Vec<u8>, RecordsError> {
    build(batch, keep, batch.header.compression(), Some(horizon_ms))
}

/// The whole batch with its records compressed with `codec` (0 none, 1 gzip, 2 snappy,
/// 3 lz4, 4 zstd) instead of its own: what a topic's `compression.type` does to a
/// produced batch in another codec (Kafka's `LogValidator`). Every other header field
/// stays; length and CRC are recomputed. Errors: an unknown codec, compressing failed.
pub fn recompress(batch: &BatchRecords, codec: u8) -> Result<Vec<u8>, RecordsError> {
    let all: Vec<usize> = (0..batch.records.len()).collect();
    build(batch, &all, codec, None)
}

/// Appends a zigzag varint.
fn put_varint(out: &mut BytesMut, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        out.extend_from_slice(&[(z as u8 & 0x7f) | 0x80]);
        z >>= 7;
    }
    out.extend_from_slice(&[z as u8]);
}

fn build(
    batch: &BatchRecords,
    keep: &[usize],
    codec: u8,
    horizon: Option<i64>,
) -> Result<Vec<u8>, RecordsError> {
    let mut h = batch.header;
    h.attributes = (h.attributes & !ATTR_COMPRESSION_MASK) | codec as i16;
    if let Some(horizon) = horizon {
        h.attributes |= ATTR_DELETE_HORIZON;
        h.base_timestamp = horizon;
    }
    let h = &h;
    let mut plain = BytesMut::new();
    let mut max_ts = if h.timestamp_type_log_append() { h.max_timestamp } else { i64::MIN };
    for &i in keep {
        let r = &batch.records[i];
        match horizon {
            None => plain.extend_from_slice(&batch.data[r.span.clone()]),
            Some(base) => {
                // attributes, the new delta, then the rest as it was; a new length.
                let mut body = BytesMut::new();
                let attrs_at = attributes_at(batch, r);
                body.extend_from_slice(&batch.data[attrs_at..attrs_at + 1]);
                let raw = batch.header.base_timestamp.wrapping_add(raw_delta(batch, r)?);
                put_varint(&mut body, raw.wrapping_sub(base));
                body.extend_from_slice(&batch.data[r.after_timestamp..r.span.end]);
                put_varint(&mut plain, body.len() as i64);
                plain.extend_from_slice(&body);
            }
        }
        if !h.timestamp_type_log_append() {
            max_ts = max_ts.max(r.timestamp);
        }
    }
    if keep.is_empty() {
        max_ts = h.max_timestamp;
    }
    let mut out = BytesMut::new();
    let put = |b: &mut BytesMut| {
        b.extend_from_slice(&plain);
        Ok(())
    };
    match h.compression() {
        0 => out = plain.clone(),
        1 => Gzip::compress(&mut out, put).map_err(codec_error)?,
        2 => Snappy::compress(&mut out, put).map_err(codec_error)?,
        3 => Lz4::compress(&mut out, put).map_err(codec_error)?,
        4 => Zstd::compress(&mut out, put).map_err(codec_error)?,
        c => return Err(RecordsError::UnknownCodec(c)),
    }
    Ok(assemble(h, keep.len() as i32, max_ts, &out))
}

/// Where the attributes byte of `r` is: right after its length varint.
fn attributes_at(batch: &BatchRecords, r: &RecordView) -> usize {
    let mut p = r.span.start;
    while batch.data[p] & 0x80 != 0 {
        p += 1;
    }
    p + 1
}

/// The stored timestamp delta of `r` (relative to the batch's base timestamp).
fn raw_delta(batch: &BatchRecords, r: &RecordView) -> Result<i64, RecordsError> {
    let mut p = r.span.start;
    varint(&batch.data, &mut p, 5)?; // length
    p += 1; // attributes
    varint(&batch.data, &mut p, 10)
}

/// A batch with no records and `h`'s header fields (offset range, producer id, epoch,
/// base sequence, timestamps), uncompressed: what the cleaner keeps of a producer's
/// last batch when every record in it is obsolete, so that the producer's state (its
/// last sequence and offset) survives compaction (Kafka's `BatchRetention.RETAIN_EMPTY`).
pub fn empty_batch(h: &RecordBatchHeader) -> Vec<u8> {
    let mut hh = *h;
    hh.attributes &= !ATTR_COMPRESSION_MASK;
    assemble(&hh, 0, h.max_timestamp, &[])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::batch::verify_crc;
    use kafka_protocol::records::{
        Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions,
        TimestampType,
    };

    fn record(offset: i64, key: Option<&str>, value: Option<&str>, ts: i64) -> Record {
        Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 0,
            producer_id: 7,
            producer_epoch: 1,
            timestamp_type: TimestampType::Creation,
            offset,
            sequence: offset as i32,
            timestamp: ts,
            key: key.map(|k| Bytes::copy_from_slice(k.as_bytes())),
            value: value.map(|v| Bytes::copy_from_slice(v.as_bytes())),
            headers: Default::default(),
        }
    }

    fn encode(records: &[Record], compression: Compression) -> Vec<u8> {
        let mut buf = BytesMut::new();
        let opts = RecordEncodeOptions { version: 2, compression };
        RecordBatchEncoder::encode(&mut buf, records.iter(), &opts).unwrap();
        buf.to_vec()
    }

    fn sample() -> Vec<Record> {
        vec![
            record(100, Some("a"), Some("1"), 1000),
            record(101, Some("b"), Some("2"), 1030),
            record(102, Some("a"), None, 1010),
            record(103, None, Some("4"), 1020),
        ]
    }

    #[test]
    fn decodes_offsets_timestamps_keys_and_tombstones() {
        let batch = encode(&sample(), Compression::None);
        let d = decode_records(&batch).unwrap();
        let got: Vec<_> = d
            .records
            .iter()
            .map(|r| (r.offset, r.timestamp, d.key(r).map(|k| k.to_vec()), r.has_value))
            .collect();
        assert_eq!(
            got,
            vec![
                (100, 1000, Some(b"a".to_vec()), true),
                (101, 1030, Some(b"b".to_vec()), true),
                (102, 1010, Some(b"a".to_vec()), false),
                (103, 1020, None, true),
            ]
        );
    }

    #[test]
    fn rebuild_keeps_the_offset_range_and_the_chosen_records_for_every_codec() {
        for c in [
            Compression::None,
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            let batch = encode(&sample(), c);
            let d = decode_records(&batch).unwrap();
            let out = rebuild(&d, &[0, 2]).unwrap();
            assert!(verify_crc(&out), "{c:?}");
            let h = RecordBatchHeader::parse(&out).unwrap();
            assert_eq!(h.total_size(), out.len());
            assert_eq!((h.base_offset, h.last_offset(), h.records_count), (100, 103, 2));
            assert_eq!((h.base_timestamp, h.max_timestamp), (1000, 1010));
            assert_eq!((h.producer_id, h.producer_epoch, h.base_sequence), (7, 1, 100));
            assert_eq!(h.compression(), d.header.compression());
            // Java's view of it, through an independent decoder.
            let set = RecordBatchDecoder::decode(&mut Bytes::from(out)).unwrap();
            let got: Vec<_> =
                set.records.iter().map(|r| (r.offset, r.timestamp, r.value.clone())).collect();
            assert_eq!(
                got,
                vec![(100, 1000, Some(Bytes::from_static(b"1"))), (102, 1010, None)],
                "{c:?}"
            );
        }
    }

    #[test]
    fn recompress_changes_only_the_codec_for_every_pair_of_codecs() {
        let codecs = [
            Compression::None,
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ];
        for from in codecs {
            let d = decode_records(&encode(&sample(), from)).unwrap();
            for to in 0..=4u8 {
                let out = recompress(&d, to).unwrap();
                assert!(verify_crc(&out));
                let h = RecordBatchHeader::parse(&out).unwrap();
                assert_eq!(h.compression(), to, "{from:?} -> {to}");
                let mut expect = d.header;
                expect.attributes = (expect.attributes & !ATTR_COMPRESSION_MASK) | to as i16;
                (expect.batch_length, expect.crc) = (h.batch_length, h.crc);
                assert_eq!(h, expect, "{from:?} -> {to}");
                let again = decode_records(&out).unwrap();
                let views = |b: &BatchRecords| {
                    b.records
                        .iter()
                        .map(|r| {
                            (
                                r.offset,
                                r.timestamp,
                                b.key(r).map(<[u8]>::to_vec),
                                b.data[r.span.clone()].to_vec(),
                            )
                        })
                        .collect::<Vec<_>>()
                };
                assert_eq!(views(&again), views(&d), "{from:?} -> {to}");
            }
        }
        let d = decode_records(&encode(&sample(), Compression::None)).unwrap();
        assert!(matches!(recompress(&d, 5), Err(RecordsError::UnknownCodec(5))));
    }

    #[test]
    fn a_delete_horizon_moves_the_base_timestamp_and_keeps_every_record_timestamp() {
        for c in [Compression::None, Compression::Zstd] {
            let d = decode_records(&encode(&sample(), c)).unwrap();
            assert_eq!(d.delete_horizon(), None);
            let out = rebuild_with_horizon(&d, &[1, 2, 3], 90_000).unwrap();
            assert!(verify_crc(&out));
            let again = decode_records(&out).unwrap();
            assert_eq!(again.delete_horizon(), Some(90_000));
            assert_eq!(again.header.attributes & 0x07, d.header.attributes & 0x07);
            assert_eq!((again.header.base_offset, again.header.last_offset()), (100, 103));
            assert_eq!(again.header.max_timestamp, 1030);
            let got: Vec<_> = again
                .records
                .iter()
                .map(|r| (r.offset, r.timestamp, again.key(r).map(<[u8]>::to_vec), r.has_value))
                .collect();
            let want: Vec<_> = d.records[1..]
                .iter()
                .map(|r| (r.offset, r.timestamp, d.key(r).map(<[u8]>::to_vec), r.has_value))
                .collect();
            assert_eq!(got, want, "{c:?}");
            // An independent decoder sees the same timestamps.
            let set = RecordBatchDecoder::decode(&mut Bytes::from(out)).unwrap();
            let ts: Vec<i64> = set.records.iter().map(|r| r.timestamp).collect();
            assert_eq!(ts, vec![1030, 1010, 1020]);
        }
    }

    #[test]
    fn an_empty_batch_keeps_the_producer_fields_and_offsets() {
        let batch = encode(&sample(), Compression::Gzip);
        let d = decode_records(&batch).unwrap();
        let out = empty_batch(&d.header);
        assert!(verify_crc(&out));
        let h = RecordBatchHeader::parse(&out).unwrap();
        assert_eq!(out.len(), RECORD_BATCH_OVERHEAD);
        assert_eq!((h.base_offset, h.last_offset(), h.records_count), (100, 103, 0));
        assert_eq!((h.producer_id, h.base_sequence, h.compression()), (7, 100, 0));
        assert_eq!(decode_records(&out).unwrap().records, vec![]);
    }

    #[test]
    fn malformed_records_are_errors_not_panics() {
        let batch = encode(&sample(), Compression::None);
        // Claim one more record than there are bytes for.
        let mut more = batch.clone();
        more[57..61].copy_from_slice(&5i32.to_be_bytes());
        assert!(matches!(decode_records(&more), Err(RecordsError::Malformed(_))));
        // Claim fewer: the rest is left over.
        let mut fewer = batch.clone();
        fewer[57..61].copy_from_slice(&3i32.to_be_bytes());
        assert!(matches!(decode_records(&fewer), Err(RecordsError::Malformed(_))));
        // A huge record length.
        let mut long = batch.clone();
        long[61] = 0xfe;
        assert!(decode_records(&long).is_err());
        // Every truncation of the records section.
        for cut in RECORD_BATCH_OVERHEAD..batch.len() {
            let mut b = batch[..cut].to_vec();
            b[8..12].copy_from_slice(&((cut - LOG_OVERHEAD) as i32).to_be_bytes());
            assert!(decode_records(&b).is_err(), "cut at {cut}");
        }
        // A gzip batch whose section is garbage.
        let mut gz = encode(&sample(), Compression::Gzip);
        let n = gz.len();
        gz[RECORD_BATCH_OVERHEAD..n].fill(0x55);
        assert!(matches!(decode_records(&gz), Err(RecordsError::Codec(_))));
    }

    /// A compressed batch whose snappy block claims far more bytes than it could hold is
    /// refused before anything that size is allocated (the fuzz target `batches` ran out
    /// of memory on claims like these; see protocol::decompress).
    #[test]
    fn a_snappy_batch_claiming_gigabytes_is_a_codec_error() {
        let mut b = encode(&sample(), Compression::Snappy);
        let at = RECORD_BATCH_OVERHEAD + 16 + 4; // xerial header, first block length
        b[at..at + 5].copy_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
        let Err(RecordsError::Codec(e)) = decode_records(&b) else { panic!("decoded") };
        assert!(e.ends_with("claims 4294967295 uncompressed bytes"), "{e}");
    }

    /// Millions of minimal records fit the section bound but their views would not: the
    /// decode is refused before the views are built (about 1.8 GB for 128 MiB of them).
    #[test]
    fn records_whose_views_pass_the_bound_are_refused() {
        let h = RecordBatchHeader::parse(&encode(&sample(), Compression::None)).unwrap();
        let n = MAX_DECOMPRESSED_BYTES / std::mem::size_of::<RecordView>() + 1;
        // length 6, attributes, timestamp delta 0, offset delta 0, empty key, null value,
        // no headers
        let data = [0x0c, 0, 0, 0, 0, 1, 0].repeat(n);
        let b = assemble(&h, n as i32, h.max_timestamp, &data);
        let Err(RecordsError::Codec(e)) = decode_records(&b) else { panic!("decoded") };
        assert_eq!(e, format!("{n} records decode to more than 134217728 bytes"));
        // fewer records, but with the section past the bound
        let m = (MAX_DECOMPRESSED_BYTES - 7 * n) / std::mem::size_of::<RecordView>() + 1;
        let b = assemble(&h, m as i32, h.max_timestamp, &data);
        let Err(RecordsError::Codec(e)) = decode_records(&b) else { panic!("decoded") };
        assert_eq!(e, format!("{m} records decode to more than 134217728 bytes"));
        let fewer = 1000;
        let b = assemble(&h, fewer as i32, h.max_timestamp, &data[..7 * fewer]);
        assert_eq!(decode_records(&b).unwrap().records.len(), fewer);
    }
}

//! Control batches: the COMMIT / ABORT markers a transaction coordinator writes into
//! every partition of a transaction (KIP-98; protocol guide, "Control Batches"). Pure.
//!
//! A control batch has attribute bits 4 (transactional) and 5 (control), the producer
//! id and epoch of the transaction, base sequence -1 and one record, never compressed:
//! key `version: int16 (0), type: int16 (0 = ABORT, 1 = COMMIT)`, value
//! `version: int16 (0), coordinator_epoch: int32` (Kafka's `EndTransactionMarker`).
//! Other control record types (KRaft's, 2 and up) are not transaction markers.

use bytes::{Bytes, BytesMut};

use super::records::{decode_records, RecordsError};

/// Which way a transaction ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ControlType {
    /// Key type 0: the transaction's records are to be skipped by read_committed consumers.
    Abort,
    /// Key type 1: the transaction's records are visible.
    Commit,
}

/// The end-of-transaction marker one control batch carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndTxnMarker {
    /// COMMIT or ABORT.
    pub control_type: ControlType,
    /// The epoch of the transaction coordinator that wrote it (fences a stale
    /// coordinator: TRANSACTION_COORDINATOR_FENCED).
    pub coordinator_epoch: i32,
}

/// Reads the marker of a whole control batch (`batch`: the batch bytes, header included;
/// its control bit is the caller's to check). `Ok(None)`: no records (a batch the cleaner
/// emptied) or a control record that is not a transaction marker (KRaft's types).
/// Errors: the batch or its record is malformed, the key or value is shorter than its
/// schema, or a marker value's version is not 0 (Kafka: "Invalid version found for end
/// transaction marker").
pub fn read_marker(batch: &[u8]) -> Result<Option<EndTxnMarker>, RecordsError> {
    let decoded = decode_records(batch)?;
    let Some(record) = decoded.records.first() else { return Ok(None) };
    let key = decoded.key(record).ok_or(RecordsError::Malformed("control record without key"))?;
    if key.len() < 4 {
        return Err(RecordsError::Malformed("control record key shorter than 4 bytes"));
    }
    let control_type = match i16::from_be_bytes([key[2], key[3]]) {
        0 => ControlType::Abort,
        1 => ControlType::Commit,
        _ => return Ok(None),
    };
    let value =
        decoded.value(record).ok_or(RecordsError::Malformed("transaction marker without value"))?;
    if value.len() < 6 {
        return Err(RecordsError::Malformed("transaction marker value shorter than 6 bytes"));
    }
    if i16::from_be_bytes([value[0], value[1]]) != 0 {
        return Err(RecordsError::Malformed("transaction marker value version is not 0"));
    }
    let coordinator_epoch = i32::from_be_bytes([value[2], value[3], value[4], value[5]]);
    Ok(Some(EndTxnMarker { control_type, coordinator_epoch }))
}

/// Kafka's control batch for `marker` of producer `producer_id` / `producer_epoch`, at
/// offset 0 (the log assigns the real one), timestamp `timestamp_ms`, partition leader
/// epoch 0. Errors: only the encoder's (never for these inputs in practice).
pub fn encode_marker_batch(
    producer_id: i64,
    producer_epoch: i16,
    marker: EndTxnMarker,
    timestamp_ms: i64,
) -> Result<Bytes, RecordsError> {
    use kafka_protocol::records::{
        Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
    };
    let kind: i16 = match marker.control_type {
        ControlType::Abort => 0,
        ControlType::Commit => 1,
    };
    let mut key = Vec::with_capacity(4);
    key.extend_from_slice(&0i16.to_be_bytes());
    key.extend_from_slice(&kind.to_be_bytes());
    let mut value = Vec::with_capacity(6);
    value.extend_from_slice(&0i16.to_be_bytes());
    value.extend_from_slice(&marker.coordinator_epoch.to_be_bytes());
    let records = [Record {
        transactional: true,
        control: true,
        delete_horizon: false,
        partition_leader_epoch: 0,
        producer_id,
        producer_epoch,
        timestamp_type: TimestampType::Creation,
        offset: 0,
        sequence: -1,
        timestamp: timestamp_ms,
        key: Some(Bytes::from(key)),
        value: Some(Bytes::from(value)),
        headers: Default::default(),
    }];
    let mut buf = BytesMut::new();
    let options = RecordEncodeOptions { version: 2, compression: Compression::None };
    RecordBatchEncoder::encode(&mut buf, &records, &options)
        .map_err(|e| RecordsError::Codec(e.to_string()))?;
    Ok(buf.freeze())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::batch::{RecordBatchHeader, ATTR_CONTROL, ATTR_TRANSACTIONAL};

    #[test]
    fn a_marker_batch_has_kafkas_layout_and_reads_back() {
        let marker = EndTxnMarker { control_type: ControlType::Commit, coordinator_epoch: 7 };
        let b = encode_marker_batch(42, 3, marker, 1_700_000_000_000).unwrap();
        let h = RecordBatchHeader::parse(&b).unwrap();
        assert_eq!(h.attributes, ATTR_TRANSACTIONAL | ATTR_CONTROL);
        assert_eq!((h.producer_id, h.producer_epoch, h.base_sequence), (42, 3, -1));
        assert_eq!((h.records_count, h.last_offset_delta), (1, 0));
        assert_eq!(h.max_timestamp, 1_700_000_000_000);
        // The record: length, attributes, ts delta, offset delta, key (4), value (6),
        // no headers.
        let rec = &b[61..];
        assert_eq!(rec, [32, 0, 0, 0, 8, 0, 0, 0, 1, 12, 0, 0, 0, 0, 0, 7, 0]);
        assert_eq!(read_marker(&b).unwrap(), Some(marker));
        let abort = EndTxnMarker { control_type: ControlType::Abort, coordinator_epoch: -1 };
        let b = encode_marker_batch(1, 0, abort, 5).unwrap();
        assert_eq!(read_marker(&b).unwrap(), Some(abort));
    }

    #[test]
    fn other_control_types_and_bad_markers() {
        let marker = EndTxnMarker { control_type: ControlType::Commit, coordinator_epoch: 7 };
        let good = encode_marker_batch(42, 3, marker, 0).unwrap().to_vec();
        let fix = |mut b: Vec<u8>| {
            let crc = crate::protocol::batch::compute_crc(&b);
            b[17..21].copy_from_slice(&crc.to_be_bytes());
            b
        };
        // Key type 3 (a KRaft control record): not a marker.
        let mut kraft = good.clone();
        kraft[61 + 8] = 3;
        assert_eq!(read_marker(&fix(kraft)).unwrap(), None);
        // Value version 1: refused.
        let mut v1 = good.clone();
        let at = 61 + 10;
        assert_eq!(&v1[at..at + 2], [0, 0]);
        v1[at + 1] = 1;
        assert!(read_marker(&fix(v1)).is_err());
        // Truncated: refused, no panic.
        for cut in 0..good.len() {
            let _ = read_marker(&good[..cut]);
        }
    }
}

//! `__transaction_state` records: bytes built by hand from Kafka's JSON schemas, round
//! trips, and bad input.

use super::*;
use crate::txn::records::DecodeError;
use crate::txn::state::ALL_STATES;

fn be16(v: i16) -> Vec<u8> {
    v.to_be_bytes().to_vec()
}
fn be32(v: i32) -> Vec<u8> {
    v.to_be_bytes().to_vec()
}
fn be64(v: i64) -> Vec<u8> {
    v.to_be_bytes().to_vec()
}

/// Concatenate byte pieces.
fn cat(pieces: &[Vec<u8>]) -> Vec<u8> {
    pieces.concat()
}

#[test]
fn key_is_version_0_then_the_transactional_id_as_a_string() {
    let r = TxnRecord::tombstone("tx-1");
    assert_eq!(r.encode_key().unwrap(), vec![0, 0, 0, 4, b't', b'x', b'-', b'1']);
    assert_eq!(r.encode().unwrap(), (vec![0, 0, 0, 4, b't', b'x', b'-', b'1'], None));
}

#[test]
fn value_v0_matches_the_schema_byte_for_byte() {
    let m = TxnMetadata {
        start_timestamp_ms: 1200,
        last_update_timestamp_ms: 1234,
        ..meta(1000, 5, TxnState::Ongoing, &[("t", 1), ("t", 0), ("u", 7)])
    };
    let expected = cat(&[
        be16(0),     // version
        be64(1000),  // ProducerId
        be16(5),     // ProducerEpoch
        be32(60000), // TransactionTimeoutMs
        vec![1],     // TransactionStatus: Ongoing
        be32(2),     // TransactionPartitions: 2 topics
        be16(1),
        b"t".to_vec(),
        be32(2),
        be32(0),
        be32(1),
        be16(1),
        b"u".to_vec(),
        be32(1),
        be32(7),
        be64(1234), // TransactionLastUpdateTimestampMs
        be64(1200), // TransactionStartTimestampMs
    ]);
    let v = TxnLogValue::of(&m, 0);
    assert_eq!(v.encode().unwrap(), expected);
    assert_eq!(TxnLogValue::decode(&expected).unwrap(), v);
    assert_eq!(v.to_metadata(), TxnMetadata { previous_producer_id: NO_PRODUCER_ID, ..m });
}

#[test]
fn value_v0_of_an_empty_transaction_has_null_partitions() {
    let m = meta(9, 0, TxnState::Empty, &[]);
    let expected = cat(&[
        be16(0),
        be64(9),
        be16(0),
        be32(60000),
        vec![0],
        be32(-1), // null array
        be64(T0),
        be64(-1),
    ]);
    assert_eq!(TxnLogValue::of(&m, 0).encode().unwrap(), expected);
}

#[test]
fn value_v1_is_flexible_with_compact_arrays_and_tagged_fields() {
    let m = TxnMetadata {
        previous_producer_id: 999,
        next_producer_id: 2000,
        client_transaction_version: TransactionVersion::Tv2,
        start_timestamp_ms: 1200,
        last_update_timestamp_ms: 1234,
        ..meta(1000, 32767, TxnState::PrepareCommit, &[("t", 0), ("t", 1)])
    };
    let expected = cat(&[
        be16(1),
        be64(1000),
        be16(32767),
        be32(60000),
        vec![2],       // PrepareCommit
        vec![2],       // compact array: 1 topic
        vec![2, b't'], // compact string "t"
        vec![3],       // compact array: 2 partition ids
        be32(0),
        be32(1),
        vec![0], // the topic entry's tagged fields: none
        be64(1234),
        be64(1200),
        vec![3],    // 3 tagged fields
        vec![0, 8], // tag 0 PreviousProducerId, 8 bytes
        be64(999),
        vec![1, 8], // tag 1 NextProducerId
        be64(2000),
        vec![2, 2], // tag 2 ClientTransactionVersion, 2 bytes
        be16(2),
    ]);
    let v = TxnLogValue::of(&m, 1);
    assert_eq!(v.encode().unwrap(), expected);
    assert_eq!(TxnLogValue::decode(&expected).unwrap(), v);
    assert_eq!(v.to_metadata(), m);
}

#[test]
fn value_v1_leaves_out_tagged_fields_at_their_defaults() {
    let m =
        TxnMetadata { previous_producer_id: NO_PRODUCER_ID, ..meta(5, 0, TxnState::Empty, &[]) };
    let expected = cat(&[
        be16(1),
        be64(5),
        be16(0),
        be32(60000),
        vec![0],
        vec![0],
        be64(T0),
        be64(-1),
        vec![0],
    ]);
    assert_eq!(TxnLogValue::of(&m, 1).encode().unwrap(), expected);
}

#[test]
fn every_state_round_trips_in_both_versions() {
    for state in ALL_STATES {
        for version in [0, 1] {
            let m = meta(77, 3, state, &[("a", 1), ("b", 2)]);
            let r = TxnRecord::of("tx", &m, version);
            check_record(&r);
            let loaded = r.value.unwrap().to_metadata();
            assert_eq!(loaded.state, state);
            let expect_partitions =
                if state == TxnState::Empty { parts(&[]) } else { m.partitions };
            assert_eq!(loaded.partitions, expect_partitions);
        }
    }
    check_record(&TxnRecord::tombstone("tx"));
}

#[test]
fn a_null_value_is_a_tombstone() {
    let key = TxnRecord::tombstone("tx").encode_key().unwrap();
    assert_eq!(TxnRecord::decode(&key, None).unwrap(), TxnRecord::tombstone("tx"));
}

#[test]
fn an_empty_value_ignores_stored_partitions_on_load() {
    let mut v = TxnLogValue::of(&meta(1, 1, TxnState::Empty, &[]), 1);
    v.partitions = Some(vec![TxnLogPartitions { topic: "t".into(), partition_ids: vec![1] }]);
    let back = TxnLogValue::decode(&v.encode().unwrap()).unwrap();
    assert_eq!(back, v);
    assert!(back.to_metadata().partitions.is_empty());
}

#[test]
fn unknown_tagged_fields_are_skipped() {
    let m =
        TxnMetadata { previous_producer_id: NO_PRODUCER_ID, ..meta(5, 0, TxnState::Empty, &[]) };
    let mut bytes = TxnLogValue::of(&m, 1).encode().unwrap();
    assert_eq!(bytes.last(), Some(&0), "no tagged field");
    let last = bytes.len() - 1;
    bytes.truncate(last);
    bytes.extend_from_slice(&[1, 9, 3, 0xaa, 0xbb, 0xcc]); // one field, tag 9, 3 bytes
    let v = TxnLogValue::decode(&bytes).unwrap();
    assert_eq!(v.producer_id, 5);
    assert_eq!(v.client_transaction_version, 0);
}

#[test]
fn an_unknown_key_version_is_reported_for_the_loader_to_skip() {
    let key = cat(&[be16(1), be16(2), b"tx".to_vec()]);
    assert_eq!(TxnRecord::decode(&key, None), Err(DecodeError::UnknownKeyVersion(1)));
}

#[test]
fn bad_values_are_errors() {
    let good = TxnLogValue::of(&meta(1, 1, TxnState::Ongoing, &[("t", 0)]), 1).encode().unwrap();
    // Unknown version, unknown state id, trailing bytes.
    let mut v2 = good.clone();
    v2[1] = 2;
    assert!(TxnLogValue::decode(&v2).is_err());
    let mut bad_state = good.clone();
    bad_state[16] = 8;
    assert_eq!(TxnLogValue::decode(&bad_state), Err(DecodeError::Invalid("unknown state id")));
    let mut trailing = good.clone();
    trailing.push(0);
    assert_eq!(TxnLogValue::decode(&trailing), Err(DecodeError::Invalid("trailing bytes")));
    // A partition count far beyond the record is refused before allocating.
    let huge = cat(&[be16(0), be64(1), be16(1), be32(1), vec![1], be32(i32::MAX)]);
    assert_eq!(
        TxnLogValue::decode(&huge),
        Err(DecodeError::Invalid("array count exceeds record size"))
    );
    // A negative string length in the key.
    assert!(TxnRecord::decode(&cat(&[be16(0), be16(-1)]), None).is_err());
}

#[test]
fn every_truncation_and_byte_flip_decodes_without_panicking() {
    let samples = [
        TxnLogValue::of(&meta(1, 1, TxnState::Ongoing, &[("topic", 0), ("topic", 5)]), 0),
        TxnLogValue::of(
            &TxnMetadata {
                next_producer_id: 3,
                client_transaction_version: TransactionVersion::Tv2,
                ..meta(1, 1, TxnState::PrepareAbort, &[("topic", 0)])
            },
            1,
        ),
    ];
    for s in samples {
        let bytes = s.encode().unwrap();
        for n in 0..bytes.len() {
            assert!(TxnLogValue::decode(&bytes[..n]).is_err(), "prefix {n} decoded");
        }
        // Deterministic pseudo-random corruption: decoding returns, whatever it returns.
        let mut x: u32 = 12345;
        for _ in 0..5000 {
            let mut b = bytes.clone();
            for _ in 0..3 {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                let i = (x >> 8) as usize % b.len();
                b[i] = (x >> 16) as u8;
            }
            let _ = TxnLogValue::decode(&b);
            let _ = TxnRecord::decode(&b, Some(&b));
        }
    }
}

#[test]
fn a_string_too_long_for_its_length_prefix_cannot_be_encoded() {
    let long = "x".repeat(40_000);
    assert_eq!(TxnRecord::tombstone(&long).encode_key(), None);
    let m = meta(1, 1, TxnState::Ongoing, &[(long.as_str(), 0)]);
    assert_eq!(TxnLogValue::of(&m, 0).encode(), None);
}

#[test]
fn a_value_from_a_future_version_with_unknown_tagged_fields_reads_as_kafka_reads_it() {
    // Kafka's TransactionLogTest.testDeserializeFutureTransactionLogValue: tags 100 (a
    // STRING "foo") and 101 (an INT32 4000) on a partitions entry and on the value.
    let unknown_tags = cat(&[vec![2, 100, 5], be16(3), b"foo".to_vec(), vec![101, 4], be32(4000)]);
    let bytes = cat(&[
        be16(1),
        be64(1000),
        be16(100),
        be32(1000),
        vec![4],    // CompleteCommit
        vec![2, 6], // 1 entry; topic: 5 bytes
        b"topic".to_vec(),
        vec![2], // 1 partition id
        be32(1),
        unknown_tags.clone(),
        be64(2000),
        be64(3000),
        unknown_tags,
    ]);
    let key = TxnRecord::tombstone("transaction-id").encode_key().unwrap();
    let r = TxnRecord::decode(&key, Some(&bytes)).unwrap();
    let m = r.value.unwrap().to_metadata();
    assert_eq!(
        (m.producer_id, m.producer_epoch, m.timeout_ms, m.state),
        (1000, 100, 1000, TxnState::CompleteCommit)
    );
    assert_eq!(m.partitions, parts(&[("topic", 1)]));
    assert_eq!((m.last_update_timestamp_ms, m.start_timestamp_ms), (2000, 3000));
}

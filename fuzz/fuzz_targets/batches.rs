//! Stored and produced record batches: the header view, the CRC check, the records
//! inside a batch (any codec), and the recovery scan of a segment's bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shardlog::protocol::batch::{verify_crc, BatchScan, RecordBatchHeader};
use shardlog::protocol::records::decode_records;

fuzz_target!(|data: &[u8]| {
    if let Ok(h) = RecordBatchHeader::parse(data) {
        let _ = h.last_offset();
        let _ = h.next_offset();
    }
    let _ = verify_crc(data);
    let _ = decode_records(data);
    // The first byte says how many more bytes of the "file" follow unread.
    let (after, bytes) = match data.split_first() {
        Some((n, rest)) => (u64::from(*n), rest),
        None => (0, data),
    };
    let mut scan = BatchScan::new(bytes, after);
    let mut last_end = 0usize;
    for (pos, h) in &mut scan {
        assert!(pos >= last_end, "batches overlap");
        last_end = pos + h.total_size();
        assert!(last_end <= bytes.len(), "a batch past the data");
    }
    assert!(scan.position() <= bytes.len());
});

//! Records of the group offsets log, in both key formats (Kafka's
//! `__consumer_offsets` schemas and shardlog's earlier own), as replay reads them.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shardlog::coordinator::GroupRecord;

fuzz_target!(|data: &[u8]| {
    // First byte: key length; bit 7 of the second: tombstone (no value).
    let Some((&key_len, rest)) = data.split_first() else {
        return;
    };
    let key_len = usize::from(key_len).min(rest.len());
    let (key, value) = rest.split_at(key_len);
    let tombstone = value.first().is_some_and(|b| b & 0x80 != 0);
    let _ = GroupRecord::decode(key, if tombstone { None } else { Some(value) });
});

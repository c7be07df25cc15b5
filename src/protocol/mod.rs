//! The Kafka wire format, without I/O: frame limits, request header decode, topic
//! name rules, string conversions, the record batch header view and transaction
//! markers (`control`), and codecs read with a bound on their output (`decompress`). Nothing here imports glommio, so it can be unit-tested and
//! fuzzed on its own.

pub mod batch;
pub mod control;
pub mod decompress;
pub mod frame;
pub mod records;
pub mod strings;
pub mod topic_name;

//! Conversions into kafka-protocol's string types (`StrBytes`, `TopicName`), shared
//! by handlers, shards and the coordinator.

use kafka_protocol::messages::TopicName;
use kafka_protocol::protocol::StrBytes;

/// A `StrBytes` (kafka-protocol's string type) holding a copy of `s`.
pub fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

/// A `TopicName` holding a copy of `s` (the cheap, `Send` form used in responses
/// and shard messages).
pub fn topic_name(s: &str) -> TopicName {
    TopicName(sb(s))
}

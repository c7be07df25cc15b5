//! Small conversions shared by handlers.

use kafka_protocol::messages::TopicName;
use kafka_protocol::protocol::StrBytes;

/// A `StrBytes` from a `&str` (kafka-protocol's string type).
pub fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

/// A `TopicName` from a `&str`.
pub fn topic_name(s: &str) -> TopicName {
    TopicName(sb(s))
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

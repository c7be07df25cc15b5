//! Kafka's topic name rules (`org.apache.kafka.common.internals.Topic.validate`).

/// Longest legal topic name, in characters.
pub const MAX_TOPIC_NAME_LEN: usize = 249;

/// Checks a topic name: 1..=249 characters from `[a-zA-Z0-9._-]`, and not `.` or
/// `..`. A failure maps to INVALID_TOPIC_EXCEPTION; the message says why.
pub fn validate_topic_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("Topic name is illegal, it can't be empty".into());
    }
    if name == "." || name == ".." {
        return Err("Topic name cannot be \".\" or \"..\"".into());
    }
    if name.len() > MAX_TOPIC_NAME_LEN {
        return Err(format!(
            "Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LEN} characters, \
             topic name: {name}"
        ));
    }
    if !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-') {
        return Err(format!(
            "Topic name \"{name}\" is illegal, it contains a character other than ASCII \
             alphanumerics, '.', '_' and '-'"
        ));
    }
    Ok(())
}

/// Kafka treats `.` and `_` as the same character when checking for collisions
/// (metric names would clash); two names that collide cannot both exist.
pub fn collision_key(name: &str) -> String {
    name.replace('.', "_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legal_names_pass() {
        assert_eq!(validate_topic_name("orders-v1.eu_west"), Ok(()));
        assert_eq!(validate_topic_name(&"a".repeat(249)), Ok(()));
    }

    #[test]
    fn illegal_names_fail() {
        assert!(validate_topic_name("").is_err());
        assert!(validate_topic_name(".").is_err());
        assert!(validate_topic_name("..").is_err());
        assert!(validate_topic_name(&"a".repeat(250)).is_err());
        assert!(validate_topic_name("bad topic!").is_err());
        assert!(validate_topic_name("caf\u{e9}").is_err());
    }

    #[test]
    fn dot_and_underscore_collide() {
        assert_eq!(collision_key("a.b"), collision_key("a_b"));
        assert_ne!(collision_key("a.b"), collision_key("a-b"));
    }
}

//! Topic regular expressions of KIP-848 subscriptions (`SubscribedTopicRegex`).
//!
//! Kafka compiles them with RE2/J and resolves a regex to every topic whose whole name
//! matches it (`Pattern.matcher(topic).matches()`); the `regex` crate has RE2's
//! syntax and guarantees, so a regex is compiled here anchored at both ends. The
//! compiled program is bounded ([`SIZE_LIMIT`]) so that a hostile pattern cannot make
//! the coordinator allocate without bound.

use regex::{Regex, RegexBuilder};

/// Largest compiled program accepted for one regex, in bytes.
const SIZE_LIMIT: usize = 1 << 20;

/// A member's topic regex: the text the client sent and its compiled, anchored form.
/// Two are equal when their texts are.
#[derive(Debug, Clone)]
pub(crate) struct TopicRegex {
    source: String,
    compiled: Regex,
}

impl TopicRegex {
    /// Compiles `source`. Errors: the message Kafka's
    /// `throwIfRegularExpressionIsInvalid` gives with INVALID_REGULAR_EXPRESSION.
    pub fn new(source: &str) -> Result<TopicRegex, String> {
        RegexBuilder::new(&format!("^(?:{source})$"))
            .size_limit(SIZE_LIMIT)
            .build()
            .map(|compiled| TopicRegex { source: source.to_string(), compiled })
            .map_err(|e| {
                let reason = e.to_string();
                let reason = reason.lines().last().unwrap_or("").trim_start_matches("error: ");
                format!(
                    "SubscribedTopicRegex `{source}` is not a valid regular expression: {reason}."
                )
            })
    }

    /// The regex as the client sent it.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether the whole of `topic` matches.
    pub fn matches(&self, topic: &str) -> bool {
        self.compiled.is_match(topic)
    }
}

impl PartialEq for TopicRegex {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_whole_name_must_match() {
        let r = TopicRegex::new("orders-.*").unwrap();
        assert!(r.matches("orders-eu"));
        assert!(r.matches("orders-"));
        assert!(!r.matches("old-orders-eu"));
        let alt = TopicRegex::new("a|b").unwrap();
        assert!(alt.matches("a") && alt.matches("b") && !alt.matches("ab"));
        assert_eq!(alt.as_str(), "a|b");
        assert_eq!(TopicRegex::new("x").unwrap(), TopicRegex::new("x").unwrap());
    }

    #[test]
    fn invalid_and_oversized_patterns_are_refused_with_kafkas_message() {
        let e = TopicRegex::new("orders-(").unwrap_err();
        assert!(
            e.starts_with("SubscribedTopicRegex `orders-(` is not a valid regular expression: "),
            "{e}"
        );
        // RE2 has no backreferences, like Kafka's RE2/J.
        assert!(TopicRegex::new("(a)\\1").is_err());
        assert!(TopicRegex::new("a{1000}{1000}").is_err());
    }
}

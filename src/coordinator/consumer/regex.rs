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
        RegexBuilder::new(&format!("^(?:{})$", unquote(source)))
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

/// `source` with every `\Q...\E` span (RE2 and Java: the text between is literal; an
/// unterminated `\Q` runs to the end) replaced by the escaped text, which the `regex`
/// crate does not support itself. Java's `Pattern.quote` produces such spans, so a
/// `SubscriptionPattern` built with it reaches the broker in this form.
fn unquote(source: &str) -> std::borrow::Cow<'_, str> {
    if !source.contains("\\Q") {
        return std::borrow::Cow::Borrowed(source);
    }
    let mut out = String::with_capacity(source.len() + 8);
    let mut rest = source;
    while let Some(i) = rest.find("\\") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(quoted) = after.strip_prefix('Q') {
            let (literal, tail) = match quoted.find("\\E") {
                Some(end) => (&quoted[..end], &quoted[end + 2..]),
                None => (quoted, ""),
            };
            out.push_str(&regex::escape(literal));
            rest = tail;
        } else {
            // Any other escape: keep the backslash and the character after it.
            let len = after.chars().next().map_or(0, char::len_utf8);
            out.push('\\');
            out.push_str(&after[..len]);
            rest = &after[len..];
        }
    }
    out.push_str(rest);
    std::borrow::Cow::Owned(out)
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
    fn quoted_spans_are_literal_as_java_pattern_quote_makes_them() {
        let r = TopicRegex::new("\\Qrx.b\\E").unwrap();
        assert!(r.matches("rx.b") && !r.matches("rxab"));
        assert_eq!(r.as_str(), "\\Qrx.b\\E");
        let r = TopicRegex::new("pre-\\Q(x)*\\E-.*").unwrap();
        assert!(r.matches("pre-(x)*-1") && !r.matches("pre-x-1"));
        // Unterminated: literal to the end; other escapes are kept.
        assert!(TopicRegex::new("\\Qa+").unwrap().matches("a+"));
        assert!(TopicRegex::new("a\\.b\\Q.\\E").unwrap().matches("a.b."));
        assert!(!TopicRegex::new("a\\.b").unwrap().matches("axb"));
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

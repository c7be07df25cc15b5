//! SASL/PLAIN (RFC 4616), as Kafka's `PlainSaslServer`: one message
//! `authzid NUL user NUL password`; the authzid, when not empty, must equal the user.
//! The users and their passwords come from `--sasl-plain-users-file` ([`PlainUsers`]).

use std::collections::HashMap;
use std::path::Path;

/// The users PLAIN accepts: user name -> password. Read once at start-up; shared by
/// every shard (read-only).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlainUsers {
    passwords: HashMap<String, String>,
}

impl PlainUsers {
    /// Parses the users file: one `user:password` per line (the password is
    /// everything after the first `:` and may hold `:`), leading and trailing blanks
    /// of a line ignored, blank lines and lines starting with `#` skipped. Errors name
    /// the line: a line without `:`, an empty user name, a user given twice.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut passwords = HashMap::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let n = i + 1;
            let (user, password) =
                line.split_once(':').ok_or_else(|| format!("line {n}: expected user:password"))?;
            if user.is_empty() {
                return Err(format!("line {n}: empty user name"));
            }
            if passwords.insert(user.to_string(), password.to_string()).is_some() {
                return Err(format!("line {n}: user {user:?} is given twice"));
            }
        }
        Ok(PlainUsers { passwords })
    }

    /// Reads and parses `path` ([`PlainUsers::parse`]).
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Self::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Number of users.
    pub fn len(&self) -> usize {
        self.passwords.len()
    }

    /// Whether there are no users.
    pub fn is_empty(&self) -> bool {
        self.passwords.is_empty()
    }

    /// Checks one PLAIN message; the authenticated user name, or Kafka's
    /// `SaslAuthenticationException` message (sent to the client as it is).
    pub fn authenticate(&self, message: &[u8]) -> Result<String, String> {
        let (authzid, user, password) = parse_message(message)?;
        if user.is_empty() {
            return Err("Authentication failed: username not specified".into());
        }
        if password.is_empty() {
            return Err("Authentication failed: password not specified".into());
        }
        let known = self.passwords.get(user).is_some_and(|p| {
            // Not stopping at the first difference: the time does not tell a prefix.
            p.len() == password.len()
                && p.bytes().zip(password.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
        });
        if !known {
            return Err("Authentication failed: Invalid username or password".into());
        }
        if !authzid.is_empty() && authzid != user {
            return Err("Authentication failed: Client requested an authorization id that is \
                        different from username"
                .into());
        }
        Ok(user.to_string())
    }
}

/// Splits a PLAIN message into (authzid, user, password): exactly two NULs (Kafka's
/// "Invalid SASL/PLAIN response: expected 3 tokens, got N", counting at most 4).
pub fn parse_message(message: &[u8]) -> Result<(&str, &str, &str), String> {
    let text = std::str::from_utf8(message)
        .map_err(|_| "Invalid SASL/PLAIN response: not UTF-8".to_string())?;
    let tokens: Vec<&str> = text.splitn(4, '\0').collect();
    match tokens[..] {
        [authzid, user, password] => Ok((authzid, user, password)),
        _ => Err(format!("Invalid SASL/PLAIN response: expected 3 tokens, got {}", tokens.len())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_users_file() {
        let users = PlainUsers::parse("# admins\nalice:alice-secret\n\n  bob:pa:ss  \n").unwrap();
        assert_eq!(users.len(), 2);
        assert_eq!(users.authenticate(b"\0bob\0pa:ss"), Ok("bob".into()));
        assert_eq!(PlainUsers::parse("alice"), Err("line 1: expected user:password".into()));
        assert_eq!(PlainUsers::parse("#\n:pw"), Err("line 2: empty user name".into()));
        assert_eq!(PlainUsers::parse("a:1\na:2"), Err("line 2: user \"a\" is given twice".into()));
    }

    #[test]
    fn checks_messages_as_kafka_does() {
        let users = PlainUsers::parse("alice:alice-secret").unwrap();
        assert_eq!(users.authenticate(b"\0alice\0alice-secret"), Ok("alice".into()));
        assert_eq!(users.authenticate(b"alice\0alice\0alice-secret"), Ok("alice".into()));
        assert_eq!(
            users.authenticate(b"\0alice\0wrong"),
            Err("Authentication failed: Invalid username or password".into())
        );
        assert_eq!(
            users.authenticate(b"\0mallory\0alice-secret"),
            Err("Authentication failed: Invalid username or password".into())
        );
        assert_eq!(
            users.authenticate(b"bob\0alice\0alice-secret"),
            Err("Authentication failed: Client requested an authorization id that is \
                 different from username"
                .into())
        );
        assert_eq!(
            users.authenticate(b"\0\0x"),
            Err("Authentication failed: username not specified".into())
        );
        assert_eq!(
            users.authenticate(b"\0alice\0"),
            Err("Authentication failed: password not specified".into())
        );
        assert_eq!(
            users.authenticate(b"alice\0alice-secret"),
            Err("Invalid SASL/PLAIN response: expected 3 tokens, got 2".into())
        );
        assert_eq!(
            users.authenticate(b"\0a\0b\0c\0d"),
            Err("Invalid SASL/PLAIN response: expected 3 tokens, got 4".into())
        );
    }
}

//! `KafkaPrincipal`: a principal type and a name, written `type:name` (`User:alice`),
//! as Kafka's `org.apache.kafka.common.security.auth.KafkaPrincipal` (KIP-189).

use std::fmt;

/// A principal: `principal_type` (`User` for every principal Kafka's built-in
/// authenticators produce) and `name`. Immutable once a connection has authenticated;
/// shared by the connection's requests as an `Rc`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KafkaPrincipal {
    pub principal_type: String,
    pub name: String,
}

impl KafkaPrincipal {
    /// The principal type of users (`User`).
    pub const USER_TYPE: &'static str = "User";
    /// The name of the unauthenticated principal (`ANONYMOUS`).
    pub const ANONYMOUS_NAME: &'static str = "ANONYMOUS";

    /// `User:<name>`.
    pub fn user(name: impl Into<String>) -> Self {
        KafkaPrincipal { principal_type: Self::USER_TYPE.to_string(), name: name.into() }
    }

    /// `User:ANONYMOUS`: a PLAINTEXT (or SSL without client authentication)
    /// connection.
    pub fn anonymous() -> Self {
        Self::user(Self::ANONYMOUS_NAME)
    }

    /// Parses `type:name` (the type is everything before the first `:`); `None` when
    /// there is no `:` or either side is empty. `User:*` parses (ACLs' wildcard).
    pub fn parse(text: &str) -> Option<Self> {
        let (ty, name) = text.split_once(':')?;
        if ty.is_empty() || name.is_empty() {
            return None;
        }
        Some(KafkaPrincipal { principal_type: ty.to_string(), name: name.to_string() })
    }
}

impl fmt::Display for KafkaPrincipal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.principal_type, self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_type_colon_name() {
        let p = KafkaPrincipal::parse("User:alice").unwrap();
        assert_eq!(p, KafkaPrincipal::user("alice"));
        assert_eq!(p.to_string(), "User:alice");
        // Only the first ':' separates: a name may hold more.
        let q = KafkaPrincipal::parse("User:CN=a,O=b:c").unwrap();
        assert_eq!((q.principal_type.as_str(), q.name.as_str()), ("User", "CN=a,O=b:c"));
        assert_eq!(KafkaPrincipal::parse("alice"), None);
        assert_eq!(KafkaPrincipal::parse(":alice"), None);
        assert_eq!(KafkaPrincipal::parse("User:"), None);
        assert_eq!(KafkaPrincipal::anonymous().to_string(), "User:ANONYMOUS");
    }
}

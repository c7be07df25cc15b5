//! Who is talking and what they may do (issue 14): the Kafka principal a connection
//! acts as, and the ACLs and authorizer that decide its requests. Listeners with TLS or
//! SASL authenticate the principal; a PLAINTEXT connection is `User:ANONYMOUS`, as in
//! Kafka.
//!
//! - [`sasl`]: a connection's SASL exchange on a SASL_PLAINTEXT listener (KIP-152,
//!   KIP-368 re-authentication), a pure state machine;
//! - [`plain`]: SASL/PLAIN (RFC 4616) and the `--sasl-plain-users-file` users;
//! - [`scram`]: SCRAM-SHA-256/512 (RFC 5802, RFC 7677) and the stored credentials,
//!   which live in the catalog ([`credentials`]: AlterUserScramCredentials);
//! - [`tls`]: the keystore, truststore and client authentication of SSL and SASL_SSL
//!   listeners (one rustls `ServerConfig`), and the principal of a client certificate,
//!   named as [`x500`] writes its subject (RFC 2253, as Java does);
//! - [`acl`]: Kafka's ACL model and the authorizer's decision (StandardAuthorizer).

pub mod acl;
pub mod credentials;
pub mod plain;
mod principal;
pub mod sasl;
pub mod scram;
pub mod tls;
pub mod x500;

pub use principal::KafkaPrincipal;

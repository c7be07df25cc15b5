//! Who is talking (issue 14): the Kafka principal a connection acts as. Listeners with
//! TLS or SASL authenticate it; the authorizer checks it against ACLs. A PLAINTEXT
//! connection is `User:ANONYMOUS`, as in Kafka.

mod principal;

pub use principal::KafkaPrincipal;

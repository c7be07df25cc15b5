//! Listeners in Kafka's syntax (`listeners`, `advertised.listeners`): a comma-separated
//! list of `PROTOCOL://host:port`, where PROTOCOL is a security protocol name
//! (`PLAINTEXT`, `SASL_PLAINTEXT`, `SSL`, `SASL_SSL`). Kafka also accepts listener
//! names mapped to protocols by `listener.security.protocol.map`; shardlog does not
//! (the listener's name is its protocol's name, Kafka's default map).
//!
//! Pure: parsing and validation only. `SSL` and `SASL_SSL` listeners need a keystore
//! ([`check_tls`]).

use std::net::{SocketAddr, ToSocketAddrs};

/// A listener's security protocol (Kafka's `SecurityProtocol`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SecurityProtocol {
    /// No TLS, no authentication: every connection is `User:ANONYMOUS`.
    Plaintext,
    /// TLS; with `--ssl-client-auth`, the client certificate names the principal.
    Ssl,
    /// SASL authentication (KIP-43, KIP-152) over plain TCP.
    SaslPlaintext,
    /// SASL over TLS.
    SaslSsl,
}

impl SecurityProtocol {
    /// Kafka's name for the protocol (`SASL_PLAINTEXT`).
    pub fn name(self) -> &'static str {
        match self {
            SecurityProtocol::Plaintext => "PLAINTEXT",
            SecurityProtocol::Ssl => "SSL",
            SecurityProtocol::SaslPlaintext => "SASL_PLAINTEXT",
            SecurityProtocol::SaslSsl => "SASL_SSL",
        }
    }

    /// The protocol named `name` (case-insensitive, as Kafka upper-cases names).
    pub fn parse(name: &str) -> Option<Self> {
        [Self::Plaintext, Self::Ssl, Self::SaslPlaintext, Self::SaslSsl]
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name))
    }

    /// Whether connections are TLS (SSL, SASL_SSL).
    pub fn is_tls(self) -> bool {
        matches!(self, SecurityProtocol::Ssl | SecurityProtocol::SaslSsl)
    }

    /// Whether connections must authenticate with SASL before anything else.
    pub fn is_sasl(self) -> bool {
        matches!(self, SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl)
    }
}

/// One `PROTOCOL://host:port` entry as written. `host` is empty for "every
/// interface" (`PLAINTEXT://:9092`, as Kafka allows).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerSpec {
    pub protocol: SecurityProtocol,
    pub host: String,
    pub port: u16,
}

impl ListenerSpec {
    /// The address to bind: the host resolved (the first address), or `0.0.0.0` for an
    /// empty host.
    pub fn bind_addr(&self) -> Result<SocketAddr, String> {
        let host = if self.host.is_empty() { "0.0.0.0" } else { self.host.as_str() };
        (host, self.port)
            .to_socket_addrs()
            .map_err(|e| format!("listener {self}: cannot resolve {host:?}: {e}"))?
            .next()
            .ok_or_else(|| format!("listener {self}: {host:?} resolves to no address"))
    }
}

impl std::fmt::Display for ListenerSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(f, "{}://[{}]:{}", self.protocol.name(), self.host, self.port)
        } else {
            write!(f, "{}://{}:{}", self.protocol.name(), self.host, self.port)
        }
    }
}

/// Parses a `listeners` or `advertised.listeners` value. Errors (as text for the
/// start-up log): an entry without `://` or `:port`, an unknown protocol name, a bad
/// port, an empty list, and two entries with the same protocol (Kafka: "Each listener
/// must have a different name").
pub fn parse_listeners(text: &str) -> Result<Vec<ListenerSpec>, String> {
    let mut specs: Vec<ListenerSpec> = Vec::new();
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (name, rest) = entry
            .split_once("://")
            .ok_or_else(|| format!("listener {entry:?} is not PROTOCOL://host:port"))?;
        let protocol = SecurityProtocol::parse(name).ok_or_else(|| {
            format!(
                "listener {entry:?}: unknown security protocol {name:?} (expected PLAINTEXT, \
                 SASL_PLAINTEXT, SSL or SASL_SSL; listener names mapped by \
                 listener.security.protocol.map are not supported)"
            )
        })?;
        let (host, port) = rest
            .rsplit_once(':')
            .ok_or_else(|| format!("listener {entry:?} is not PROTOCOL://host:port"))?;
        let port: u16 =
            port.parse().map_err(|_| format!("listener {entry:?}: bad port {port:?}"))?;
        let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
        if specs.iter().any(|s| s.protocol == protocol) {
            return Err(format!(
                "listener {entry:?}: each listener must have a different name, and {} is \
                 given twice",
                protocol.name()
            ));
        }
        specs.push(ListenerSpec { protocol, host: host.to_string(), port });
    }
    if specs.is_empty() {
        return Err("no listener given (expected PROTOCOL://host:port[,...])".into());
    }
    Ok(specs)
}

/// Refuses an SSL or SASL_SSL listener when there is no keystore
/// (`--ssl-keystore-location`, Kafka `ssl.keystore.location`).
pub fn check_tls(specs: &[ListenerSpec], has_keystore: bool) -> Result<(), String> {
    match specs.iter().find(|s| s.protocol.is_tls()) {
        Some(s) if !has_keystore => Err(format!(
            "listener {s}: SSL and SASL_SSL listeners need --ssl-keystore-location (a PEM \
             file with the private key and the certificate chain)"
        )),
        _ => Ok(()),
    }
}

/// A listener as every shard binds it, and what it tells clients.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listener {
    pub protocol: SecurityProtocol,
    /// The address every shard binds (SO_REUSEPORT).
    pub bind: SocketAddr,
    /// The host returned in Metadata, FindCoordinator and DescribeCluster to clients
    /// that came in through this listener.
    pub advertised_host: String,
    /// The port returned with `advertised_host`.
    pub advertised_port: i32,
    /// `Some(shard)` for a shard's own listener (`--shard-ports`): only that shard
    /// binds it, and a connection through it talks to that shard's broker node
    /// ([`crate::net::shard_nodes`]). `None` for the listeners every shard binds.
    pub shard: Option<usize>,
}

impl Listener {
    /// Kafka's listener name (= the protocol's name here).
    pub fn name(&self) -> &'static str {
        self.protocol.name()
    }

    /// The listener as `listeners` writes it: `NAME://bound address`.
    pub fn bound_url(&self) -> String {
        format!("{}://{}", self.name(), self.bind)
    }

    /// The listener as `advertised.listeners` writes it: `NAME://host:port` as clients
    /// are told.
    pub fn advertised_url(&self) -> String {
        format!("{}://{}:{}", self.name(), self.advertised_host, self.advertised_port)
    }
}

/// Resolves `listeners` with their advertised addresses: the `advertised` entry with
/// the same name, else the bound address (as Kafka falls back to `listeners`). An
/// advertised entry naming no listener is an error, as in Kafka.
pub fn resolve(
    listeners: &[ListenerSpec],
    advertised: Option<&[ListenerSpec]>,
) -> Result<Vec<Listener>, String> {
    if let Some(unknown) = advertised
        .into_iter()
        .flatten()
        .find(|a| listeners.iter().all(|l| l.protocol != a.protocol))
    {
        return Err(format!("advertised listener {unknown} names no listener of --listeners"));
    }
    listeners
        .iter()
        .map(|spec| {
            let bind = spec.bind_addr()?;
            let (host, port) =
                match advertised.into_iter().flatten().find(|a| a.protocol == spec.protocol) {
                    Some(a) => (a.host.clone(), a.port),
                    None => (bind.ip().to_string(), bind.port()),
                };
            Ok(Listener {
                protocol: spec.protocol,
                bind,
                advertised_host: host,
                advertised_port: port as i32,
                shard: None,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(protocol: SecurityProtocol, host: &str, port: u16) -> ListenerSpec {
        ListenerSpec { protocol, host: host.into(), port }
    }

    #[test]
    fn parses_kafka_listener_lists() {
        use SecurityProtocol::*;
        assert_eq!(
            parse_listeners("PLAINTEXT://127.0.0.1:9092, sasl_plaintext://:9093").unwrap(),
            vec![spec(Plaintext, "127.0.0.1", 9092), spec(SaslPlaintext, "", 9093)]
        );
        assert_eq!(
            parse_listeners("SASL_SSL://[::1]:9094").unwrap(),
            vec![spec(SaslSsl, "::1", 9094)]
        );
        assert_eq!(spec(SaslSsl, "::1", 9094).to_string(), "SASL_SSL://[::1]:9094");
        assert_eq!(
            parse_listeners("INTERNAL://h:1"),
            Err("listener \"INTERNAL://h:1\": unknown security protocol \"INTERNAL\" (expected \
                 PLAINTEXT, SASL_PLAINTEXT, SSL or SASL_SSL; listener names mapped by \
                 listener.security.protocol.map are not supported)"
                .into())
        );
        assert_eq!(
            parse_listeners("h:1"),
            Err("listener \"h:1\" is not PROTOCOL://host:port".into())
        );
        assert_eq!(
            parse_listeners("PLAINTEXT://h:x"),
            Err("listener \"PLAINTEXT://h:x\": bad port \"x\"".into())
        );
        assert!(parse_listeners("PLAINTEXT://a:1,PLAINTEXT://b:2")
            .unwrap_err()
            .contains("given twice"));
        assert!(parse_listeners(" , ").is_err());
    }

    #[test]
    fn tls_listeners_need_a_keystore() {
        let specs = parse_listeners("PLAINTEXT://:1,SSL://:2").unwrap();
        assert_eq!(
            check_tls(&specs, false),
            Err("listener SSL://:2: SSL and SASL_SSL listeners need --ssl-keystore-location \
                 (a PEM file with the private key and the certificate chain)"
                .into())
        );
        assert_eq!(check_tls(&specs, true), Ok(()));
        let sasl_ssl = parse_listeners("SASL_SSL://:3").unwrap();
        assert!(check_tls(&sasl_ssl, false).unwrap_err().starts_with("listener SASL_SSL://:3:"));
        assert_eq!(check_tls(&parse_listeners("SASL_PLAINTEXT://:1").unwrap(), false), Ok(()));
        assert!(SecurityProtocol::SaslSsl.is_tls() && SecurityProtocol::SaslSsl.is_sasl());
        assert!(SecurityProtocol::Ssl.is_tls() && !SecurityProtocol::Ssl.is_sasl());
        assert!(!SecurityProtocol::SaslPlaintext.is_tls());
    }

    #[test]
    fn each_listener_advertises_its_own_address_or_its_advertised_entry() {
        use SecurityProtocol::*;
        let listeners =
            parse_listeners("PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://0.0.0.0:9093").unwrap();
        let advertised = parse_listeners("SASL_PLAINTEXT://broker.example:19093").unwrap();
        let resolved = resolve(&listeners, Some(&advertised)).unwrap();
        assert_eq!(
            resolved,
            vec![
                Listener {
                    protocol: Plaintext,
                    bind: "127.0.0.1:9092".parse().unwrap(),
                    advertised_host: "127.0.0.1".into(),
                    advertised_port: 9092,
                    shard: None,
                },
                Listener {
                    protocol: SaslPlaintext,
                    bind: "0.0.0.0:9093".parse().unwrap(),
                    advertised_host: "broker.example".into(),
                    advertised_port: 19093,
                    shard: None,
                },
            ]
        );
        let stray = parse_listeners("SSL://x:1").unwrap();
        assert_eq!(
            resolve(&listeners, Some(&stray)),
            Err("advertised listener SSL://x:1 names no listener of --listeners".into())
        );
    }
}

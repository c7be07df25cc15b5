//! The TLS settings of SSL and SASL_SSL listeners (Kafka's `ssl.*` broker configs):
//! the keystore and truststore read from PEM files once at start-up and built into one
//! rustls `ServerConfig`, immutable and shared by every shard (the handshakes and the
//! encryption run on each connection's own shard, `net::tls`), and the principal of a
//! connection authenticated by its client certificate.
//!
//! Files, as Kafka's `ssl.keystore.type=PEM` / `ssl.truststore.type=PEM`:
//!
//! | flag | Kafka config | holds |
//! | --- | --- | --- |
//! | `--ssl-keystore-location` | `ssl.keystore.location` | the private key (PKCS#8, PKCS#1 or SEC1, not encrypted) and the certificate chain, leaf first |
//! | `--ssl-truststore-location` | `ssl.truststore.location` | the CA certificates that sign client certificates |
//! | `--ssl-client-auth` | `ssl.client.auth` | `none`, `requested` or `required`, for SSL listeners (SASL_SSL ones never ask, as in Kafka without a listener-prefixed setting) |
//!
//! Differences from Kafka: an encrypted key (`ssl.key.password`) is refused; client
//! authentication needs `--ssl-truststore-location` (Kafka would fall back to the
//! JVM's CAs); no session resumption (no shared session cache or ticket keys across
//! shards: Kafka clients keep their connections, so every handshake is a full one).

use std::path::Path;
use std::sync::Arc;

use rustls::server::{NoServerSessionStorage, WebPkiClientVerifier};
use rustls::{RootCertStore, ServerConfig};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use super::KafkaPrincipal;
use crate::net::listeners::SecurityProtocol;

/// Whether SSL listeners ask clients for a certificate (Kafka `ssl.client.auth`;
/// SASL_SSL listeners never do, [`TlsServers`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ClientAuth {
    /// No client certificate is asked for: the principal is `User:ANONYMOUS` on SSL.
    None,
    /// Asked for; a client without one connects as `User:ANONYMOUS`, a client with one
    /// that does not verify fails the handshake.
    Requested,
    /// A client without a verified certificate fails the handshake.
    Required,
}

impl ClientAuth {
    /// Kafka's value (`none`, `requested`, `required`).
    pub fn name(self) -> &'static str {
        match self {
            ClientAuth::None => "none",
            ClientAuth::Requested => "requested",
            ClientAuth::Required => "required",
        }
    }
}

/// The server configurations of the TLS listeners, built once at start-up and shared by
/// every shard: SSL listeners ask for client certificates as `--ssl-client-auth` says;
/// SASL_SSL listeners never do (Kafka applies a broker-wide `ssl.client.auth` to SSL
/// listeners only, KIP-684; SASL decides the principal there).
#[derive(Debug, Clone)]
pub struct TlsServers {
    pub ssl: Arc<ServerConfig>,
    pub sasl_ssl: Arc<ServerConfig>,
}

impl TlsServers {
    /// Reads the files and builds both configurations (see [`server_config`]).
    pub fn load(files: TlsFiles<'_>) -> Result<Self, String> {
        let ssl = server_config(files)?;
        let sasl_ssl = if files.client_auth == ClientAuth::None {
            ssl.clone()
        } else {
            server_config(TlsFiles { client_auth: ClientAuth::None, ..files })?
        };
        Ok(TlsServers { ssl, sasl_ssl })
    }

    /// The configuration of a listener of `protocol`; `None` for the plain ones.
    pub fn for_protocol(&self, protocol: SecurityProtocol) -> Option<Arc<ServerConfig>> {
        match protocol {
            SecurityProtocol::Ssl => Some(self.ssl.clone()),
            SecurityProtocol::SaslSsl => Some(self.sasl_ssl.clone()),
            SecurityProtocol::Plaintext | SecurityProtocol::SaslPlaintext => None,
        }
    }
}

/// What the TLS files and flags say, before they are read.
#[derive(Debug, Clone, Copy)]
pub struct TlsFiles<'a> {
    pub keystore: &'a Path,
    pub truststore: Option<&'a Path>,
    pub client_auth: ClientAuth,
}

/// Reads the keystore (and truststore) and builds the server configuration every SSL
/// and SASL_SSL connection shares. Errors, as text for the start-up log: an unreadable
/// file, no certificate or no key in the keystore, an encrypted key, a key that does
/// not match the leaf certificate, client authentication without a truststore, a
/// truststore without a CA certificate.
pub fn server_config(files: TlsFiles<'_>) -> Result<Arc<ServerConfig>, String> {
    let keystore = files.keystore;
    let shown = keystore.display();
    let pem = std::fs::read(keystore)
        .map_err(|e| format!("--ssl-keystore-location {shown}: cannot read: {e}"))?;
    let chain = certificates(&pem).map_err(|e| format!("--ssl-keystore-location {shown}: {e}"))?;
    if chain.is_empty() {
        return Err(format!(
            "--ssl-keystore-location {shown}: no certificate (expected the PEM certificate \
             chain, leaf first, with the private key)"
        ));
    }
    let key = match PrivateKeyDer::from_pem_slice(&pem) {
        Ok(key) => key,
        Err(rustls_pki_types::pem::Error::NoItemsFound) => {
            let encrypted = String::from_utf8_lossy(&pem).contains("ENCRYPTED PRIVATE KEY");
            return Err(if encrypted {
                format!(
                    "--ssl-keystore-location {shown}: the private key is encrypted; shardlog \
                     needs it unencrypted (PKCS#8, PKCS#1 or SEC1)"
                )
            } else {
                format!(
                    "--ssl-keystore-location {shown}: no private key (expected a PKCS#8, \
                     PKCS#1 or SEC1 PEM key with the certificate chain)"
                )
            });
        }
        Err(e) => return Err(format!("--ssl-keystore-location {shown}: bad private key: {e}")),
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = match (files.client_auth, files.truststore) {
        (ClientAuth::None, _) => WebPkiClientVerifier::no_client_auth(),
        (auth, None) => {
            return Err(format!(
                "--ssl-client-auth {} needs --ssl-truststore-location (the CAs that sign \
                 client certificates)",
                auth.name()
            ))
        }
        (auth, Some(path)) => {
            let roots = Arc::new(truststore(path)?);
            let builder = WebPkiClientVerifier::builder_with_provider(roots, provider.clone());
            let builder = if auth == ClientAuth::Requested {
                builder.allow_unauthenticated()
            } else {
                builder
            };
            builder
                .build()
                .map_err(|e| format!("--ssl-truststore-location {}: {e}", path.display()))?
        }
    };
    if let (ClientAuth::None, Some(path)) = (files.client_auth, files.truststore) {
        // Checked even when unused, so a bad file is found before it is needed.
        truststore(path)?;
    }
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .map_err(|e| format!("--ssl-keystore-location {shown}: {e}"))?;
    // Shared-nothing: no session cache (a mutex shared by the shards) and no tickets.
    config.session_storage = Arc::new(NoServerSessionStorage {});
    config.send_tls13_tickets = 0;
    Ok(Arc::new(config))
}

/// Every certificate in a PEM text, in order.
fn certificates(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("bad PEM certificate: {e}"))
}

/// The CA certificates of a PEM truststore file.
fn truststore(path: &Path) -> Result<RootCertStore, String> {
    let shown = path.display();
    let pem = std::fs::read(path)
        .map_err(|e| format!("--ssl-truststore-location {shown}: cannot read: {e}"))?;
    let certs =
        certificates(&pem).map_err(|e| format!("--ssl-truststore-location {shown}: {e}"))?;
    let mut roots = RootCertStore::empty();
    for cert in certs {
        roots.add(cert).map_err(|e| format!("--ssl-truststore-location {shown}: {e}"))?;
    }
    if roots.is_empty() {
        return Err(format!("--ssl-truststore-location {shown}: no CA certificate"));
    }
    Ok(roots)
}

/// The principal of a TLS connection, as Kafka's `DefaultKafkaPrincipalBuilder` with
/// `ssl.principal.mapping.rules=DEFAULT`: `User:<subject in RFC 2253>` of the verified
/// client certificate `leaf` (DER), or `User:ANONYMOUS` without one.
pub fn principal(leaf: Option<&[u8]>) -> KafkaPrincipal {
    leaf.and_then(super::x500::subject_rfc2253)
        .map_or_else(KafkaPrincipal::anonymous, KafkaPrincipal::user)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(keystore: &Path) -> TlsFiles<'_> {
        TlsFiles { keystore, truststore: None, client_auth: ClientAuth::None }
    }

    #[test]
    fn principal_is_the_subject_or_anonymous() {
        let der = include_bytes!("testdata/tricky-subject.der");
        assert!(principal(Some(der)).to_string().starts_with("User:2.5.4.5=#13023432,DC=com,"));
        assert_eq!(principal(None), KafkaPrincipal::anonymous());
    }

    #[test]
    fn bad_keystores_are_refused_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.pem");
        let e = server_config(files(&missing)).unwrap_err();
        assert!(
            e.starts_with(&format!("--ssl-keystore-location {}: cannot read:", missing.display())),
            "{e}"
        );

        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "").unwrap();
        assert_eq!(
            server_config(files(&empty)).unwrap_err(),
            format!(
                "--ssl-keystore-location {}: no certificate (expected the PEM certificate \
                 chain, leaf first, with the private key)",
                empty.display()
            )
        );

        let cert_only = dir.path().join("cert.pem");
        let cert = pem_block("CERTIFICATE", include_bytes!("testdata/tricky-subject.der"));
        std::fs::write(&cert_only, &cert).unwrap();
        assert_eq!(
            server_config(files(&cert_only)).unwrap_err(),
            format!(
                "--ssl-keystore-location {}: no private key (expected a PKCS#8, PKCS#1 or \
                 SEC1 PEM key with the certificate chain)",
                cert_only.display()
            )
        );

        let encrypted = dir.path().join("encrypted.pem");
        let key = pem_block("ENCRYPTED PRIVATE KEY", b"0123456789");
        std::fs::write(&encrypted, format!("{cert}{key}")).unwrap();
        assert_eq!(
            server_config(files(&encrypted)).unwrap_err(),
            format!(
                "--ssl-keystore-location {}: the private key is encrypted; shardlog needs it \
                 unencrypted (PKCS#8, PKCS#1 or SEC1)",
                encrypted.display()
            )
        );
    }

    /// A throwaway self-signed P-256 certificate and its PKCS#8 key, for tests only.
    fn good_keystore() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("src/security/testdata/test-only-keystore.pem")
    }

    #[test]
    fn a_good_keystore_builds_and_client_auth_needs_a_truststore() {
        let keystore = good_keystore();
        assert!(server_config(files(&keystore)).is_ok());
        let required = TlsFiles { client_auth: ClientAuth::Required, ..files(&keystore) };
        assert_eq!(
            server_config(required).unwrap_err(),
            "--ssl-client-auth required needs --ssl-truststore-location (the CAs that sign \
             client certificates)"
        );
        // The self-signed certificate is its own CA.
        let trusted = TlsFiles { truststore: Some(&keystore), ..required };
        assert!(server_config(trusted).is_ok());
        let requested = TlsFiles { client_auth: ClientAuth::Requested, ..trusted };
        assert!(server_config(requested).is_ok());
    }

    /// Kafka (KIP-684): the broker-wide `ssl.client.auth` is for SSL listeners only.
    #[test]
    fn sasl_ssl_listeners_never_ask_for_a_client_certificate() {
        let keystore = good_keystore();
        let required = TlsFiles {
            keystore: &keystore,
            truststore: Some(&keystore),
            client_auth: ClientAuth::Required,
        };
        // (test_tls.py's required-certificate test shows a SASL_SSL client without one
        // logging in.)
        let servers = TlsServers::load(required).unwrap();
        let ssl = servers.for_protocol(SecurityProtocol::Ssl).unwrap();
        let sasl_ssl = servers.for_protocol(SecurityProtocol::SaslSsl).unwrap();
        assert!(!Arc::ptr_eq(&ssl, &sasl_ssl));
        assert!(servers.for_protocol(SecurityProtocol::Plaintext).is_none());
        assert!(servers.for_protocol(SecurityProtocol::SaslPlaintext).is_none());
        // Without client authentication both are the one configuration.
        let none =
            TlsServers::load(TlsFiles { client_auth: ClientAuth::None, ..required }).unwrap();
        assert!(Arc::ptr_eq(&none.ssl, &none.sasl_ssl));
    }

    /// A PEM block of `label` around `der`.
    fn pem_block(label: &str, der: &[u8]) -> String {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD.encode(der);
        let lines: Vec<&str> =
            b64.as_bytes().chunks(64).map(|c| std::str::from_utf8(c).unwrap()).collect();
        format!("-----BEGIN {label}-----\n{}\n-----END {label}-----\n", lines.join("\n"))
    }
}

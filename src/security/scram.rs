//! SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), server side, as Kafka's
//! `ScramSaslServer` runs them: no channel binding (gs2 flag `n`), an optional
//! authzid that must equal the user, extensions accepted and ignored (delegation
//! tokens, `tokenauth=true`, are refused).
//!
//! The exchange, one SaslAuthenticate round trip per line:
//!
//! | from | message | example (RFC 7677) |
//! | --- | --- | --- |
//! | client | client-first: `n,[a=authzid],n=user,r=cnonce[,ext]` | `n,,n=user,r=rOprNGfwEbeRWgbNEkqO` |
//! | server | server-first: `r=cnonce+snonce,s=base64(salt),i=iterations` | `r=rOpr...$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096` |
//! | client | client-final: `c=base64(gs2 header),r=nonce,p=base64(proof)` | `c=biws,r=rOpr...$k0,p=dHzb...dVQ=` |
//! | server | server-final: `v=base64(server signature)` | `v=6rriTRBi...95G4=` |
//!
//! The stored credential is Kafka's: salt, StoredKey = H(HMAC(SaltedPassword,
//! "Client Key")), ServerKey = HMAC(SaltedPassword, "Server Key"), iterations. The
//! primitives are the `sha2`, `hmac` and `pbkdf2` crates. Pure: no I/O, the server
//! nonce is given by the caller.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256, Sha512};

/// A SCRAM mechanism, with Kafka's type byte (AlterUserScramCredentials,
/// DescribeUserScramCredentials): 1 = SCRAM-SHA-256, 2 = SCRAM-SHA-512.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScramMechanism {
    Sha256,
    Sha512,
}

/// Fewest PBKDF2 iterations a credential may have (Kafka's `minIterations`, both
/// mechanisms).
pub const MIN_ITERATIONS: i32 = 4096;
/// Most iterations AlterUserScramCredentials accepts (Kafka's `MAX_ITERATIONS`).
pub const MAX_ITERATIONS: i32 = 16384;

impl ScramMechanism {
    /// Every mechanism, in type order.
    pub const ALL: [ScramMechanism; 2] = [ScramMechanism::Sha256, ScramMechanism::Sha512];

    /// The SASL mechanism name (`SCRAM-SHA-256`).
    pub fn name(self) -> &'static str {
        match self {
            ScramMechanism::Sha256 => "SCRAM-SHA-256",
            ScramMechanism::Sha512 => "SCRAM-SHA-512",
        }
    }

    /// Kafka's type byte.
    pub fn type_id(self) -> i8 {
        match self {
            ScramMechanism::Sha256 => 1,
            ScramMechanism::Sha512 => 2,
        }
    }

    /// The mechanism of type byte `id`; `None` for 0 (UNKNOWN) and any other value.
    pub fn from_type(id: i8) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.type_id() == id)
    }

    /// The mechanism named `name`, exactly.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }

    fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        match self {
            ScramMechanism::Sha256 => {
                let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key size");
                mac.update(data);
                mac.finalize().into_bytes().to_vec()
            }
            ScramMechanism::Sha512 => {
                let mut mac = Hmac::<Sha512>::new_from_slice(key).expect("HMAC takes any key size");
                mac.update(data);
                mac.finalize().into_bytes().to_vec()
            }
        }
    }

    fn hash(self, data: &[u8]) -> Vec<u8> {
        match self {
            ScramMechanism::Sha256 => Sha256::digest(data).to_vec(),
            ScramMechanism::Sha512 => Sha512::digest(data).to_vec(),
        }
    }

    /// Hi(password, salt, iterations) = PBKDF2 with this mechanism's HMAC (RFC 5802).
    pub fn salted_password(self, password: &[u8], salt: &[u8], iterations: u32) -> Vec<u8> {
        match self {
            ScramMechanism::Sha256 => {
                pbkdf2::pbkdf2_hmac_array::<Sha256, 32>(password, salt, iterations).to_vec()
            }
            ScramMechanism::Sha512 => {
                pbkdf2::pbkdf2_hmac_array::<Sha512, 64>(password, salt, iterations).to_vec()
            }
        }
    }
}

/// A user's stored SCRAM credential for one mechanism (Kafka's
/// `UserScramCredentialRecord`). Persisted in the catalog with base64 byte fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScramCredential {
    #[serde(with = "b64")]
    pub salt: Vec<u8>,
    #[serde(with = "b64")]
    pub stored_key: Vec<u8>,
    #[serde(with = "b64")]
    pub server_key: Vec<u8>,
    pub iterations: i32,
}

impl ScramCredential {
    /// The credential for a salted password (what AlterUserScramCredentials carries;
    /// the password itself never reaches the broker).
    pub fn from_salted_password(
        mechanism: ScramMechanism,
        salt: &[u8],
        salted_password: &[u8],
        iterations: i32,
    ) -> Self {
        let client_key = mechanism.hmac(salted_password, b"Client Key");
        ScramCredential {
            salt: salt.to_vec(),
            stored_key: mechanism.hash(&client_key),
            server_key: mechanism.hmac(salted_password, b"Server Key"),
            iterations,
        }
    }
}

/// Why an exchange failed: `Invalid` becomes Kafka's generic "invalid credentials"
/// message (a `SaslException` in Kafka), `Refused` is sent as it is (Kafka's
/// `SaslAuthenticationException`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScramError {
    Invalid(String),
    Refused(String),
}

/// Where a server-side exchange is.
#[derive(Debug)]
pub enum ScramServer {
    /// Waiting for the client-first message.
    Start { mechanism: ScramMechanism },
    /// Server-first sent; waiting for client-final.
    Sent {
        mechanism: ScramMechanism,
        user: String,
        credential: ScramCredential,
        client_first_bare: String,
        server_first: String,
        nonce: String,
    },
    /// Done (successfully or not): no more messages.
    Done,
}

impl ScramServer {
    pub fn new(mechanism: ScramMechanism) -> Self {
        ScramServer::Start { mechanism }
    }

    /// Answers the client-first message: the server-first message, with `server_nonce`
    /// (printable, without `,`) appended to the client's nonce. `lookup` gives the
    /// user's credential for this mechanism.
    pub fn client_first(
        &mut self,
        message: &[u8],
        server_nonce: &str,
        lookup: impl FnOnce(&str) -> Option<ScramCredential>,
    ) -> Result<Vec<u8>, ScramError> {
        let ScramServer::Start { mechanism } = *self else {
            *self = ScramServer::Done;
            return Err(ScramError::Invalid("unexpected client-first message".into()));
        };
        *self = ScramServer::Done;
        let text = std::str::from_utf8(message)
            .map_err(|_| ScramError::Invalid("client-first message is not UTF-8".into()))?;
        let first = parse_client_first(text)?;
        let user = unescape(first.sasl_name)?;
        if first.extensions.split(',').any(|e| e == "tokenauth=true") {
            return Err(ScramError::Invalid("delegation tokens are not supported".into()));
        }
        let credential = lookup(&user).ok_or_else(|| {
            ScramError::Invalid("Authentication failed: Invalid user credentials".into())
        })?;
        if let Some(authzid) = first.authzid {
            if unescape(authzid)? != user {
                return Err(ScramError::Refused(
                    "Authentication failed: Client requested an authorization id that is \
                     different from username"
                        .into(),
                ));
            }
        }
        if credential.iterations < MIN_ITERATIONS {
            return Err(ScramError::Invalid(format!(
                "Iterations {} is less than the minimum {MIN_ITERATIONS} for {}",
                credential.iterations,
                mechanism.name()
            )));
        }
        let nonce = format!("{}{server_nonce}", first.nonce);
        let server_first =
            format!("r={nonce},s={},i={}", BASE64.encode(&credential.salt), credential.iterations);
        *self = ScramServer::Sent {
            mechanism,
            user,
            credential,
            client_first_bare: first.bare.to_string(),
            server_first: server_first.clone(),
            nonce,
        };
        Ok(server_first.into_bytes())
    }

    /// Verifies the client-final message's proof; answers the server-final message and
    /// the authenticated user name.
    pub fn client_final(&mut self, message: &[u8]) -> Result<(Vec<u8>, String), ScramError> {
        let state = std::mem::replace(self, ScramServer::Done);
        let ScramServer::Sent {
            mechanism,
            user,
            credential,
            client_first_bare,
            server_first,
            nonce,
        } = state
        else {
            return Err(ScramError::Invalid("unexpected client-final message".into()));
        };
        let invalid = |m: &str| {
            ScramError::Invalid(format!("Invalid SCRAM client final message format: {m}"))
        };
        let text = std::str::from_utf8(message).map_err(|_| invalid("not UTF-8"))?;
        let (without_proof, proof) = text.rsplit_once(",p=").ok_or_else(|| invalid(text))?;
        let mut fields = without_proof.split(',');
        let channel =
            fields.next().and_then(|c| c.strip_prefix("c=")).ok_or_else(|| invalid(text))?;
        BASE64.decode(channel).map_err(|_| invalid(text))?;
        let client_nonce =
            fields.next().and_then(|r| r.strip_prefix("r=")).ok_or_else(|| invalid(text))?;
        let proof = BASE64.decode(proof).map_err(|_| invalid(text))?;
        if client_nonce != nonce {
            return Err(ScramError::Invalid(
                "Invalid client nonce in the final client message.".into(),
            ));
        }
        let auth_message = format!("{client_first_bare},{server_first},{without_proof}");
        let client_signature = mechanism.hmac(&credential.stored_key, auth_message.as_bytes());
        if proof.len() != client_signature.len() {
            return Err(ScramError::Invalid("Invalid client credentials".into()));
        }
        let client_key: Vec<u8> = proof.iter().zip(&client_signature).map(|(p, s)| p ^ s).collect();
        if !same_bytes(&mechanism.hash(&client_key), &credential.stored_key) {
            return Err(ScramError::Invalid("Invalid client credentials".into()));
        }
        let server_signature = mechanism.hmac(&credential.server_key, auth_message.as_bytes());
        Ok((format!("v={}", BASE64.encode(server_signature)).into_bytes(), user))
    }
}

/// Compares without stopping at the first difference (the time taken does not tell
/// how much of a proof was right).
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The parts of a client-first message.
struct ClientFirst<'a> {
    authzid: Option<&'a str>,
    /// client-first-bare: from `n=` on (part of the auth message).
    bare: &'a str,
    sasl_name: &'a str,
    nonce: &'a str,
    /// `,`-separated `key=value` extensions after the nonce (may be empty).
    extensions: &'a str,
}

fn parse_client_first(text: &str) -> Result<ClientFirst<'_>, ScramError> {
    let invalid =
        || ScramError::Invalid(format!("Invalid SCRAM client first message format: {text}"));
    // gs2-header: "n," then an optional "a=authzid", then ",".
    let rest = text.strip_prefix("n,").ok_or_else(invalid)?;
    let (authzid, bare) = rest.split_once(',').ok_or_else(invalid)?;
    let authzid = match authzid {
        "" => None,
        a => Some(a.strip_prefix("a=").ok_or_else(invalid)?),
    };
    // A reserved "m=..." before the user name is refused (RFC 5802: must fail).
    let mut fields = bare.splitn(3, ',');
    let sasl_name = fields.next().and_then(|n| n.strip_prefix("n=")).ok_or_else(invalid)?;
    let nonce = fields.next().and_then(|r| r.strip_prefix("r=")).ok_or_else(invalid)?;
    if nonce.is_empty() || nonce.contains(|c: char| !(' '..='~').contains(&c)) {
        return Err(invalid());
    }
    Ok(ClientFirst { authzid, bare, sasl_name, nonce, extensions: fields.next().unwrap_or("") })
}

/// A saslname back to the user name: `=2C` is `,`, `=3D` is `=`; any other `=` is an
/// error (RFC 5802).
fn unescape(sasl_name: &str) -> Result<String, ScramError> {
    let mut out = String::with_capacity(sasl_name.len());
    let mut rest = sasl_name;
    while let Some(i) = rest.find('=') {
        out.push_str(&rest[..i]);
        match rest.get(i..i + 3) {
            Some("=2C") => out.push(','),
            Some("=3D") => out.push('='),
            _ => return Err(ScramError::Invalid(format!("Invalid username: {sasl_name}"))),
        }
        rest = &rest[i + 3..];
    }
    out.push_str(rest);
    Ok(out)
}

/// A fresh server nonce: 24 random bytes from the OS, base64 (printable, no `,`).
pub fn server_nonce() -> String {
    let mut bytes = [0u8; 24];
    // getrandom only fails where no OS source exists; a zero nonce is then still
    // unique enough per connection only with the client's half, so refuse loudly.
    getrandom::getrandom(&mut bytes).expect("the OS random source is available");
    BASE64.encode(bytes)
}

/// serde for byte fields as base64 strings.
mod b64 {
    use super::{Engine, BASE64};
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&BASE64.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        BASE64.decode(text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7677 section 3: user "user", password "pencil".
    const SALT_B64: &str = "W22ZaJ0SNY7soEsUEjb6gQ==";
    const CLIENT_FIRST: &str = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO";
    const SERVER_NONCE: &str = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
    const SERVER_FIRST: &str =
        "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
    const CLIENT_FINAL: &str = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,\
                                p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
    const SERVER_FINAL: &str = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";

    fn pencil() -> ScramCredential {
        let salt = BASE64.decode(SALT_B64).unwrap();
        let salted = ScramMechanism::Sha256.salted_password(b"pencil", &salt, 4096);
        ScramCredential::from_salted_password(ScramMechanism::Sha256, &salt, &salted, 4096)
    }

    #[test]
    fn rfc_7677_exchange() {
        let mut server = ScramServer::new(ScramMechanism::Sha256);
        let first = server
            .client_first(CLIENT_FIRST.as_bytes(), SERVER_NONCE, |u| (u == "user").then(pencil))
            .unwrap();
        assert_eq!(String::from_utf8(first).unwrap(), SERVER_FIRST);
        let (last, user) = server.client_final(CLIENT_FINAL.as_bytes()).unwrap();
        assert_eq!(
            (String::from_utf8(last).unwrap().as_str(), user.as_str()),
            (SERVER_FINAL, "user")
        );
        assert!(matches!(server, ScramServer::Done));
    }

    #[test]
    fn a_wrong_proof_or_nonce_or_user_fails() {
        let start = || {
            let mut s = ScramServer::new(ScramMechanism::Sha256);
            s.client_first(CLIENT_FIRST.as_bytes(), SERVER_NONCE, |_| Some(pencil())).unwrap();
            s
        };
        let bad_proof = CLIENT_FINAL.replace("p=dHzb", "p=dHza");
        assert_eq!(
            start().client_final(bad_proof.as_bytes()),
            Err(ScramError::Invalid("Invalid client credentials".into()))
        );
        let bad_nonce = CLIENT_FINAL.replace("$k0", "$k1");
        assert_eq!(
            start().client_final(bad_nonce.as_bytes()),
            Err(ScramError::Invalid("Invalid client nonce in the final client message.".into()))
        );
        let mut s = ScramServer::new(ScramMechanism::Sha256);
        assert_eq!(
            s.client_first(CLIENT_FIRST.as_bytes(), SERVER_NONCE, |_| None),
            Err(ScramError::Invalid("Authentication failed: Invalid user credentials".into()))
        );
        let mut s = ScramServer::new(ScramMechanism::Sha256);
        assert_eq!(
            s.client_first(b"n,a=admin,n=user,r=abc", SERVER_NONCE, |_| Some(pencil())),
            Err(ScramError::Refused(
                "Authentication failed: Client requested an authorization id that is \
                 different from username"
                    .into()
            ))
        );
        let mut s = ScramServer::new(ScramMechanism::Sha256);
        assert!(s.client_first(b"y,,n=user,r=abc", SERVER_NONCE, |_| Some(pencil())).is_err());
        // A final message before a first one.
        assert!(ScramServer::new(ScramMechanism::Sha256)
            .client_final(CLIENT_FINAL.as_bytes())
            .is_err());
    }

    #[test]
    fn sasl_names_unescape_and_sha512_round_trips() {
        assert_eq!(unescape("a=2Cb=3Dc").unwrap(), "a,b=c");
        assert!(unescape("a=2").is_err());
        // A SHA-512 exchange computed as a client would.
        let m = ScramMechanism::Sha512;
        let salt = b"salt-salt";
        let salted = m.salted_password(b"secret", salt, 4096);
        let cred = ScramCredential::from_salted_password(m, salt, &salted, 4096);
        let mut s = ScramServer::new(m);
        s.client_first(b"n,,n=al=3Dice,r=cn", "sn", |u| (u == "al=ice").then(|| cred.clone()))
            .unwrap();
        let without_proof = "c=biws,r=cnsn";
        let auth =
            format!("n=al=3Dice,r=cn,r=cnsn,s={},i=4096,{without_proof}", BASE64.encode(salt));
        let client_key = m.hmac(&salted, b"Client Key");
        let signature = m.hmac(&m.hash(&client_key), auth.as_bytes());
        let proof: Vec<u8> = client_key.iter().zip(&signature).map(|(a, b)| a ^ b).collect();
        let (last, user) = s
            .client_final(format!("{without_proof},p={}", BASE64.encode(proof)).as_bytes())
            .unwrap();
        let expected = format!("v={}", BASE64.encode(m.hmac(&cred.server_key, auth.as_bytes())));
        assert_eq!((String::from_utf8(last).unwrap(), user.as_str()), (expected, "al=ice"));
        assert_eq!(ScramMechanism::from_type(2), Some(m));
        assert_eq!(ScramMechanism::from_type(0), None);
    }
}

//! The SASL exchange of one connection on a SASL_PLAINTEXT listener, as Kafka's
//! `SaslServerAuthenticator` runs it (KIP-43, KIP-152, KIP-368). Pure: fed the
//! connection's requests (or raw tokens) and the time, it says what to answer and
//! when to close; the connection (`net::connection`) does the I/O.
//!
//! | state | accepts | then |
//! | --- | --- | --- |
//! | handshake | ApiVersions (once, answered by the normal handler), SaslHandshake v0-1 | authenticate; an unsupported mechanism is answered with UNSUPPORTED_SASL_MECHANISM and the enabled list, then the connection closes |
//! | authenticate (handshake v1) | SaslAuthenticate v0-2 carrying the mechanism's tokens | complete; a failure is answered with SASL_AUTHENTICATION_FAILED and Kafka's message, then the connection closes |
//! | authenticate (handshake v0) | raw length-prefixed tokens, answered the same way (no Kafka header) | complete; a failure closes the connection at once |
//! | complete | every request (dispatched normally) | a SaslHandshake from a client that used SaslAuthenticate v1+ starts a re-authentication (same mechanism, same principal); past the session lifetime anything else closes the connection |
//!
//! Anything else closes the connection without an answer, with a logged reason
//! (Kafka's `IllegalSaslStateException`; Kafka also answers a non-SaslAuthenticate
//! request in the authenticate state with ILLEGAL_SASL_STATE before closing, shardlog
//! only closes). Requests are handled one at a time until the exchange is complete:
//! every answer is ready at once, and the connection reads the next request only then.

use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::{
    ApiKey, ResponseKind, SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
    SaslHandshakeResponse,
};
use kafka_protocol::protocol::{Decodable, StrBytes};

use super::plain::PlainUsers;
use super::scram::{self, ScramCredential, ScramError, ScramMechanism, ScramServer};
use super::KafkaPrincipal;
use crate::error::ResponseError;
use crate::handlers;
use crate::protocol::frame::Request;

/// A SASL mechanism shardlog implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mechanism {
    /// RFC 4616, users from `--sasl-plain-users-file`.
    Plain,
    /// RFC 5802 / RFC 7677, credentials from AlterUserScramCredentials.
    Scram(ScramMechanism),
}

impl Mechanism {
    /// The SASL name (`PLAIN`, `SCRAM-SHA-256`).
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Plain => "PLAIN",
            Mechanism::Scram(m) => m.name(),
        }
    }

    /// The mechanism named `name` (exactly, as Kafka compares).
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "PLAIN" => Some(Mechanism::Plain),
            other => ScramMechanism::from_name(other).map(Mechanism::Scram),
        }
    }

    /// Parses `--sasl-enabled-mechanisms`: comma-separated names, at least one, each
    /// implemented, none twice.
    pub fn parse_list(text: &str) -> Result<Vec<Mechanism>, String> {
        let mut out = Vec::new();
        for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let m = Mechanism::from_name(name).ok_or_else(|| {
                format!(
                    "--sasl-enabled-mechanisms: {name:?} is not implemented (PLAIN, \
                     SCRAM-SHA-256 and SCRAM-SHA-512 are)"
                )
            })?;
            if out.contains(&m) {
                return Err(format!("--sasl-enabled-mechanisms: {name} is given twice"));
            }
            out.push(m);
        }
        if out.is_empty() {
            return Err("--sasl-enabled-mechanisms: no mechanism given".into());
        }
        Ok(out)
    }
}

/// How SASL listeners authenticate: built once at start-up from the flags, shared
/// read-only by every shard.
#[derive(Debug, Clone)]
pub struct SaslConfig {
    /// `--sasl-enabled-mechanisms`, in the order given (the SaslHandshake answer's).
    pub mechanisms: Vec<Mechanism>,
    /// `--sasl-plain-users-file` (empty without it).
    pub plain_users: PlainUsers,
    /// `--connections-max-reauth-ms`: the session lifetime; zero = no expiry.
    pub max_reauth: Duration,
}

impl Default for SaslConfig {
    fn default() -> Self {
        SaslConfig {
            mechanisms: vec![
                Mechanism::Plain,
                Mechanism::Scram(ScramMechanism::Sha256),
                Mechanism::Scram(ScramMechanism::Sha512),
            ],
            plain_users: PlainUsers::default(),
            max_reauth: Duration::ZERO,
        }
    }
}

/// What the connection does with a request (or raw token).
#[derive(Debug)]
pub enum Step {
    /// Not the exchange's: dispatch it as any request (ApiVersions before the
    /// handshake; everything once authenticated).
    Dispatch,
    /// Answer with `response` (at `version`) instead of dispatching; with `close`, then
    /// close the connection for that reason.
    Answer { api: ApiKey, version: i16, response: Box<ResponseKind>, close: Option<String> },
    /// Answer with a raw length-prefixed token (after a v0 handshake).
    Raw { token: Bytes },
    /// Close at once, without an answer, for this reason.
    Close(String),
}

/// The mechanism's side of an exchange in progress.
#[derive(Debug)]
enum Exchange {
    Plain,
    Scram(ScramServer),
}

#[derive(Debug)]
enum State {
    /// Before SaslHandshake; `versions_seen` once ApiVersions was answered.
    Handshake { versions_seen: bool },
    /// After SaslHandshake: tokens in SaslAuthenticate (`framed`, handshake v1) or raw.
    Authenticate { mechanism: Mechanism, exchange: Exchange, framed: bool },
    /// A re-authentication asked for another mechanism: the next token fails with this.
    BadMechanism(String),
    /// Authenticated as `principal` with `mechanism` until `expires` (if any).
    Complete { principal: KafkaPrincipal, mechanism: Mechanism, expires: Option<Instant> },
}

/// One connection's SASL state. Lives with the connection, on its core.
#[derive(Debug)]
pub struct SaslSession {
    state: State,
    /// The principal and mechanism being re-authenticated (KIP-368), if any.
    previous: Option<(KafkaPrincipal, Mechanism)>,
    /// The client sent SaslAuthenticate v1+, so it can re-authenticate.
    reauth_capable: bool,
}

impl Default for SaslSession {
    fn default() -> Self {
        SaslSession::new()
    }
}

impl SaslSession {
    pub fn new() -> Self {
        SaslSession {
            state: State::Handshake { versions_seen: false },
            previous: None,
            reauth_capable: false,
        }
    }

    /// The authenticated principal; `None` until the exchange completes. During a
    /// re-authentication it is still the previous one.
    pub fn principal(&self) -> Option<&KafkaPrincipal> {
        match (&self.state, &self.previous) {
            (State::Complete { principal, .. }, _) => Some(principal),
            (_, Some((principal, _))) => Some(principal),
            _ => None,
        }
    }

    /// Whether the next frame is a raw token rather than a Kafka request (after a
    /// SaslHandshake v0).
    pub fn expects_raw_token(&self) -> bool {
        matches!(self.state, State::Authenticate { framed: false, .. })
    }

    /// Whether requests are outside the normal flow (not yet authenticated, or a
    /// re-authentication under way): the connection then handles them one at a time.
    pub fn in_exchange(&self) -> bool {
        !matches!(self.state, State::Complete { .. })
    }

    /// What to do with `request`, at `now`. `scram` looks up a user's credential.
    pub fn on_request(
        &mut self,
        request: &Request,
        config: &SaslConfig,
        now: Instant,
        scram: &dyn Fn(&str, ScramMechanism) -> Option<ScramCredential>,
    ) -> Step {
        let api = request.api;
        match &mut self.state {
            State::Complete { principal, mechanism, expires } => {
                if api == Some(ApiKey::SaslHandshake) && self.reauth_capable {
                    self.previous = Some((principal.clone(), *mechanism));
                    return self.handshake(request, config);
                }
                if expires.is_some_and(|e| now >= e) {
                    return Step::Close(
                        "the SASL session expired (--connections-max-reauth-ms) and the client \
                         did not re-authenticate"
                            .into(),
                    );
                }
                Step::Dispatch
            }
            State::Handshake { versions_seen } => match api {
                Some(ApiKey::ApiVersions) if !*versions_seen && self.previous.is_none() => {
                    // An unsupported version gets UNSUPPORTED_VERSION (KIP-511) and the
                    // client may ask again, as Kafka allows.
                    *versions_seen = handlers::api_versions::VERSIONS.contains(request.api_version);
                    Step::Dispatch
                }
                Some(ApiKey::SaslHandshake) => self.handshake(request, config),
                Some(ApiKey::ApiVersions) => Step::Close(
                    "Unexpected ApiVersions request received during SASL authentication state \
                     HANDSHAKE_REQUEST"
                        .into(),
                ),
                _ => Step::Close(format!(
                    "Unexpected Kafka request of type {} during SASL handshake.",
                    api_name(request)
                )),
            },
            State::Authenticate { .. } if api == Some(ApiKey::SaslAuthenticate) => {
                self.authenticate(request, config, now, scram)
            }
            State::Authenticate { .. } => Step::Close(format!(
                "Unexpected Kafka request of type {} during SASL authentication.",
                api_name(request)
            )),
            State::BadMechanism(message) => Step::Close(message.clone()),
        }
    }

    /// A raw token after a SaslHandshake v0: the mechanism's answer as a raw token, or
    /// a close (Kafka sends nothing on a failure there).
    pub fn on_raw_token(
        &mut self,
        token: &[u8],
        config: &SaslConfig,
        now: Instant,
        scram: &dyn Fn(&str, ScramMechanism) -> Option<ScramCredential>,
    ) -> Step {
        match self.evaluate(token, config, now, scram) {
            Ok((answer, _)) => Step::Raw { token: answer },
            Err(message) => Step::Close(message),
        }
    }

    fn handshake(&mut self, request: &Request, config: &SaslConfig) -> Step {
        let version = request.api_version;
        if !handlers::sasl_handshake::VERSIONS.contains(version) {
            return Step::Close(format!("SaslHandshake v{version} is not supported"));
        }
        let Ok(decoded) = SaslHandshakeRequest::decode(&mut request.body.clone(), version) else {
            return Step::Close("malformed SaslHandshake request".into());
        };
        let names: Vec<StrBytes> =
            config.mechanisms.iter().map(|m| StrBytes::from_static_str(m.name())).collect();
        let wanted = decoded.mechanism.as_str();
        let answer = |error: Option<ResponseError>, close: Option<String>| Step::Answer {
            api: ApiKey::SaslHandshake,
            version,
            response: Box::new(ResponseKind::SaslHandshake(
                SaslHandshakeResponse::default()
                    .with_error_code(crate::error::code(error))
                    .with_mechanisms(names.clone()),
            )),
            close,
        };
        let Some(mechanism) =
            Mechanism::from_name(wanted).filter(|m| config.mechanisms.contains(m))
        else {
            self.state = State::Handshake { versions_seen: true };
            return answer(
                Some(ResponseError::UnsupportedSaslMechanism),
                Some(format!("Unsupported SASL mechanism {wanted}")),
            );
        };
        if let Some((_, previous)) = &self.previous {
            if *previous != mechanism {
                self.state = State::BadMechanism(format!(
                    "SASL mechanism '{}' requested by client is not supported for \
                     re-authentication of mechanism '{}'",
                    mechanism.name(),
                    previous.name()
                ));
                return answer(None, None);
            }
        }
        let exchange = match mechanism {
            Mechanism::Plain => Exchange::Plain,
            Mechanism::Scram(m) => Exchange::Scram(ScramServer::new(m)),
        };
        self.state = State::Authenticate { mechanism, exchange, framed: version >= 1 };
        answer(None, None)
    }

    fn authenticate(
        &mut self,
        request: &Request,
        config: &SaslConfig,
        now: Instant,
        scram: &dyn Fn(&str, ScramMechanism) -> Option<ScramCredential>,
    ) -> Step {
        let version = request.api_version;
        if !handlers::sasl_authenticate::VERSIONS.contains(version) {
            return Step::Close(format!("SaslAuthenticate v{version} is not supported"));
        }
        let Ok(decoded) = SaslAuthenticateRequest::decode(&mut request.body.clone(), version)
        else {
            return Step::Close("malformed SaslAuthenticate request".into());
        };
        self.reauth_capable |= version > 0;
        let (response, close) = match self.evaluate(&decoded.auth_bytes, config, now, scram) {
            Ok((token, lifetime_ms)) => (
                SaslAuthenticateResponse::default()
                    .with_error_message(None)
                    .with_auth_bytes(token)
                    .with_session_lifetime_ms(lifetime_ms),
                None,
            ),
            Err(message) => (
                SaslAuthenticateResponse::default()
                    .with_error_code(ResponseError::SaslAuthenticationFailed.code())
                    .with_error_message(Some(StrBytes::from_string(message.clone()))),
                Some(message),
            ),
        };
        Step::Answer {
            api: ApiKey::SaslAuthenticate,
            version,
            response: Box::new(ResponseKind::SaslAuthenticate(response)),
            close,
        }
    }

    /// Runs one token through the mechanism: its answer and, when this completed the
    /// exchange, the session lifetime in ms (0 otherwise or with no expiry); or the
    /// failure message sent to the client.
    fn evaluate(
        &mut self,
        token: &[u8],
        config: &SaslConfig,
        now: Instant,
        scram: &dyn Fn(&str, ScramMechanism) -> Option<ScramCredential>,
    ) -> Result<(Bytes, i64), String> {
        let text = if self.previous.is_some() { "re-authentication" } else { "authentication" };
        let State::Authenticate { mechanism, exchange, .. } = &mut self.state else {
            return Err(match &self.state {
                State::BadMechanism(m) => m.clone(),
                _ => "unexpected SASL token".into(),
            });
        };
        let mechanism = *mechanism;
        let invalid = || {
            format!(
                "Authentication failed during {text} due to invalid credentials with SASL \
                 mechanism {}",
                mechanism.name()
            )
        };
        let done = match exchange {
            Exchange::Plain => {
                config.plain_users.authenticate(token).map(|user| (Bytes::new(), user))
            }
            Exchange::Scram(server) => {
                let result = match server {
                    ScramServer::Start { .. } => {
                        let m = match mechanism {
                            Mechanism::Scram(m) => m,
                            Mechanism::Plain => {
                                unreachable!("a SCRAM exchange has a SCRAM mechanism")
                            }
                        };
                        let first =
                            server.client_first(token, &scram::server_nonce(), |u| scram(u, m));
                        match first {
                            Ok(answer) => return Ok((Bytes::from(answer), 0)),
                            Err(e) => Err(e),
                        }
                    }
                    _ => {
                        server.client_final(token).map(|(answer, user)| (Bytes::from(answer), user))
                    }
                };
                result.map_err(|e| match e {
                    ScramError::Invalid(_) => invalid(),
                    ScramError::Refused(message) => message,
                })
            }
        };
        let (answer, user) = match done {
            Ok(done) => done,
            Err(message) => {
                self.state = State::BadMechanism(message.clone());
                return Err(message);
            }
        };
        let principal = KafkaPrincipal::user(user);
        if let Some((before, _)) = self.previous.take() {
            if before != principal {
                let message = format!(
                    "Cannot change principals during re-authentication from {}.{}: {}.{}",
                    before.principal_type, before.name, principal.principal_type, principal.name
                );
                self.state = State::BadMechanism(message.clone());
                return Err(message);
            }
        }
        let lifetime = config.max_reauth;
        let expires = (!lifetime.is_zero()).then(|| now + lifetime);
        self.state = State::Complete { principal, mechanism, expires };
        Ok((answer, lifetime.as_millis().min(i64::MAX as u128) as i64))
    }
}

fn api_name(request: &Request) -> String {
    match request.api {
        Some(api) => format!("{api:?}"),
        None => format!("(unknown key {})", request.api_key),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::RequestKind;

    fn request(api: ApiKey, version: i16, body: RequestKind) -> Request {
        let mut buf = bytes::BytesMut::new();
        body.encode(&mut buf, version).unwrap();
        Request {
            api_key: api as i16,
            api: Some(api),
            api_version: version,
            correlation_id: 1,
            client_id: "t".into(),
            body: buf.freeze(),
        }
    }

    fn handshake(mechanism: &str, version: i16) -> Request {
        let body =
            SaslHandshakeRequest::default().with_mechanism(StrBytes::from_string(mechanism.into()));
        request(ApiKey::SaslHandshake, version, RequestKind::SaslHandshake(body))
    }

    fn authenticate(token: &[u8], version: i16) -> Request {
        let body =
            SaslAuthenticateRequest::default().with_auth_bytes(Bytes::copy_from_slice(token));
        request(ApiKey::SaslAuthenticate, version, RequestKind::SaslAuthenticate(body))
    }

    fn config(max_reauth_ms: u64) -> SaslConfig {
        SaslConfig {
            plain_users: PlainUsers::parse("alice:alice-secret\nbob:bob-secret").unwrap(),
            max_reauth: Duration::from_millis(max_reauth_ms),
            ..SaslConfig::default()
        }
    }

    fn no_scram(_: &str, _: ScramMechanism) -> Option<ScramCredential> {
        None
    }

    /// (error code, message, session lifetime, close reason) of a SaslAuthenticate answer.
    fn auth_answer(step: Step) -> (i16, Option<String>, i64, Option<String>) {
        match step {
            Step::Answer { response, close, .. } => match *response {
                ResponseKind::SaslAuthenticate(r) => (
                    r.error_code,
                    r.error_message.map(|m| m.to_string()),
                    r.session_lifetime_ms,
                    close,
                ),
                other => panic!("not a SaslAuthenticate answer: {other:?}"),
            },
            other => panic!("not an answer: {other:?}"),
        }
    }

    /// The SaslHandshake answer of `step` and its close reason.
    fn handshake_answer(step: Step) -> (SaslHandshakeResponse, Option<String>) {
        match step {
            Step::Answer { response, close, .. } => match *response {
                ResponseKind::SaslHandshake(r) => (r, close),
                other => panic!("not a SaslHandshake answer: {other:?}"),
            },
            other => panic!("not an answer: {other:?}"),
        }
    }

    #[test]
    fn plain_login_then_requests_are_dispatched() {
        let (cfg, now) = (config(0), Instant::now());
        let mut s = SaslSession::new();
        let metadata = request(ApiKey::Metadata, 12, RequestKind::Metadata(Default::default()));
        let versions =
            request(ApiKey::ApiVersions, 3, RequestKind::ApiVersions(Default::default()));
        // KIP-511: a version from the future is answered, and the client asks again.
        let mut future_versions =
            request(ApiKey::ApiVersions, 3, RequestKind::ApiVersions(Default::default()));
        future_versions.api_version = 99;
        assert!(matches!(s.on_request(&future_versions, &cfg, now, &no_scram), Step::Dispatch));
        assert!(matches!(s.on_request(&versions, &cfg, now, &no_scram), Step::Dispatch));
        let (r, close) =
            handshake_answer(s.on_request(&handshake("PLAIN", 1), &cfg, now, &no_scram));
        assert_eq!((r.error_code, close), (0, None));
        let names: Vec<String> = r.mechanisms.iter().map(|m| m.to_string()).collect();
        assert_eq!(names, ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]);
        assert_eq!(s.principal(), None);
        assert_eq!(
            auth_answer(s.on_request(
                &authenticate(b"\0alice\0alice-secret", 2),
                &cfg,
                now,
                &no_scram
            )),
            (0, None, 0, None)
        );
        assert_eq!(s.principal(), Some(&KafkaPrincipal::user("alice")));
        assert!(matches!(s.on_request(&metadata, &cfg, now, &no_scram), Step::Dispatch));
    }

    #[test]
    fn before_authentication_other_requests_close_the_connection() {
        let (cfg, now) = (config(0), Instant::now());
        let metadata = request(ApiKey::Metadata, 12, RequestKind::Metadata(Default::default()));
        let mut s = SaslSession::new();
        match s.on_request(&metadata, &cfg, now, &no_scram) {
            Step::Close(reason) => {
                assert_eq!(
                    reason,
                    "Unexpected Kafka request of type Metadata during SASL handshake."
                )
            }
            other => panic!("{other:?}"),
        }
        let mut s = SaslSession::new();
        s.on_request(&handshake("PLAIN", 1), &cfg, now, &no_scram);
        match s.on_request(&metadata, &cfg, now, &no_scram) {
            Step::Close(reason) => assert_eq!(
                reason,
                "Unexpected Kafka request of type Metadata during SASL authentication."
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn unsupported_mechanism_and_wrong_password_answer_then_close() {
        let (cfg, now) = (config(0), Instant::now());
        let mut s = SaslSession::new();
        let (r, close) =
            handshake_answer(s.on_request(&handshake("GSSAPI", 1), &cfg, now, &no_scram));
        assert_eq!(r.error_code, ResponseError::UnsupportedSaslMechanism.code());
        assert_eq!(r.mechanisms.len(), 3);
        assert_eq!(close.as_deref(), Some("Unsupported SASL mechanism GSSAPI"));
        let mut s = SaslSession::new();
        s.on_request(&handshake("PLAIN", 1), &cfg, now, &no_scram);
        let message = "Authentication failed: Invalid username or password".to_string();
        assert_eq!(
            auth_answer(s.on_request(&authenticate(b"\0alice\0nope", 1), &cfg, now, &no_scram)),
            (
                ResponseError::SaslAuthenticationFailed.code(),
                Some(message.clone()),
                0,
                Some(message)
            )
        );
        assert_eq!(s.principal(), None);
        // SCRAM with an unknown user: Kafka's generic message.
        let mut s = SaslSession::new();
        s.on_request(&handshake("SCRAM-SHA-512", 1), &cfg, now, &no_scram);
        let generic = "Authentication failed during authentication due to invalid credentials \
                       with SASL mechanism SCRAM-SHA-512"
            .to_string();
        assert_eq!(
            auth_answer(s.on_request(&authenticate(b"n,,n=carol,r=abc", 1), &cfg, now, &no_scram)),
            (
                ResponseError::SaslAuthenticationFailed.code(),
                Some(generic.clone()),
                0,
                Some(generic)
            )
        );
    }

    #[test]
    fn a_v0_handshake_takes_raw_tokens() {
        let (cfg, now) = (config(0), Instant::now());
        let mut s = SaslSession::new();
        s.on_request(&handshake("PLAIN", 0), &cfg, now, &no_scram);
        assert!(s.expects_raw_token());
        match s.on_raw_token(b"\0bob\0bob-secret", &cfg, now, &no_scram) {
            Step::Raw { token } => assert!(token.is_empty()),
            other => panic!("{other:?}"),
        }
        assert_eq!(s.principal(), Some(&KafkaPrincipal::user("bob")));
        assert!(!s.expects_raw_token());
    }

    #[test]
    fn sessions_expire_and_reauthenticate_kip_368() {
        let (cfg, t0) = (config(1000), Instant::now());
        let mut s = SaslSession::new();
        s.on_request(&handshake("PLAIN", 1), &cfg, t0, &no_scram);
        assert_eq!(
            auth_answer(s.on_request(
                &authenticate(b"\0alice\0alice-secret", 1),
                &cfg,
                t0,
                &no_scram
            )),
            (0, None, 1000, None)
        );
        let metadata = request(ApiKey::Metadata, 12, RequestKind::Metadata(Default::default()));
        let later = t0 + Duration::from_millis(1500);
        assert!(matches!(
            s.on_request(&metadata, &cfg, t0 + Duration::from_millis(999), &no_scram),
            Step::Dispatch
        ));
        // Re-authentication at 1.5 s: allowed although expired.
        assert!(matches!(
            s.on_request(&handshake("PLAIN", 1), &cfg, later, &no_scram),
            Step::Answer { close: None, .. }
        ));
        assert!(s.in_exchange());
        assert_eq!(s.principal(), Some(&KafkaPrincipal::user("alice")));
        assert_eq!(
            auth_answer(s.on_request(
                &authenticate(b"\0alice\0alice-secret", 1),
                &cfg,
                later,
                &no_scram
            )),
            (0, None, 1000, None)
        );
        assert!(matches!(s.on_request(&metadata, &cfg, later, &no_scram), Step::Dispatch));
        // Past the new lifetime without re-authenticating: closed.
        assert!(matches!(
            s.on_request(&metadata, &cfg, later + Duration::from_millis(1000), &no_scram),
            Step::Close(_)
        ));
        // Another principal on re-authentication is refused.
        s.on_request(&handshake("PLAIN", 1), &cfg, later, &no_scram);
        let (code, message, _, close) = auth_answer(s.on_request(
            &authenticate(b"\0bob\0bob-secret", 1),
            &cfg,
            later,
            &no_scram,
        ));
        assert_eq!(code, ResponseError::SaslAuthenticationFailed.code());
        assert_eq!(
            message.as_deref(),
            Some("Cannot change principals during re-authentication from User.alice: User.bob")
        );
        assert!(close.is_some());
    }

    #[test]
    fn enabled_mechanisms_parse() {
        assert_eq!(
            Mechanism::parse_list("SCRAM-SHA-512, PLAIN"),
            Ok(vec![Mechanism::Scram(ScramMechanism::Sha512), Mechanism::Plain])
        );
        assert!(Mechanism::parse_list("GSSAPI").is_err());
        assert!(Mechanism::parse_list("PLAIN,PLAIN").is_err());
        assert!(Mechanism::parse_list("").is_err());
    }
}

//! One client connection, on the core that accepted it.
//!
//! A reader reads frames (length checked against `--max-request-bytes` before any
//! allocation), dispatches each request in arrival order, and queues its outcome;
//! a writer awaits the queued outcomes *in order* and writes the responses. At most
//! [`MAX_IN_FLIGHT`] requests wait for their responses; beyond that the reader stops
//! reading (back-pressure), and so it does while the bytes of its unanswered requests
//! are over the connection's or the shard's budget ([`super::limits`]). A connection
//! with nothing in flight that reads nothing for `--connections-max-idle-ms` is closed,
//! and so is one whose client takes no byte of a response for that long (it stopped
//! reading: its queued responses and their budget are released).
//! Under client quotas ([`crate::quota`]) the writer counts each answered request,
//! writes the throttle into its response, and the reader then reads nothing from the
//! connection until the throttle is over (KIP-219 muting).
//! A malformed request, an unknown API key or an oversized frame closes the connection
//! with a logged reason; nothing else is affected.

use std::cell::{Cell, RefCell};
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use bytes::{BufMut, Bytes, BytesMut};
use futures_lite::future;
use glommio::channels::local_channel::{self, LocalReceiver, LocalSender};
use glommio::net::TcpStream;
use kafka_protocol::messages::{ApiKey, ResponseHeader, ResponseKind};
use kafka_protocol::protocol::Encodable;

use super::close::{closing, CloseReason};
use super::limits::{ConnectionBudget, Reservation};
use super::segments::Segments;
use super::split::{write_all_parts, ReadHalf, Transport, WriteHalf};
use super::tls::TlsStream;
use crate::crash::{Label, Labeled};
use crate::handlers::{self, Ctx, Dispatched, Outcome};
use crate::net::listeners::Listener;
use crate::protocol::frame::{check_frame_length, decode_request};
use crate::security::sasl::{SaslConfig, SaslSession, Step};
use crate::security::KafkaPrincipal;
use crate::shard::Shard;
use crate::shutdown::LocalStop;

/// Requests of one connection that may await their responses at once.
pub const MAX_IN_FLIGHT: usize = 64;

/// Bytes the reader asks the socket for at a time (frames larger than this are
/// read in one exact-size allocation).
const READ_CHUNK: usize = 64 * 1024;

/// Most the read buffer grows by per read, in bytes.
const MAX_GROWTH: usize = 1 << 20;

/// What the writer sends for a request.
// The common variant is kept inline (no allocation per request); the queue holds at
// most `MAX_IN_FLIGHT` of them.
#[allow(clippy::large_enum_variant)]
enum Answer {
    /// A Kafka response (or none, acks=0).
    Response(Dispatched),
    /// A raw length-prefixed SASL token, after a SaslHandshake v0 (no Kafka header).
    RawToken(Bytes),
}

/// A response slot in the writer's queue, in request order.
struct Queued {
    correlation_id: i32,
    answer: Answer,
    /// The request's bytes in the budgets, given back once its response is written.
    reservation: Reservation,
    /// Names the request in a panic report while its response is being finished.
    label: Rc<Label>,
    /// When it reached the phases its metrics time.
    times: Times,
    /// What it used, when a client quota applies to its client (else nothing is counted).
    quota: Option<crate::quota::Usage>,
}

/// How many queued responses the writer has not finished, and who waits for none.
/// Lives on the connection's core, shared by its reader and writer.
struct InFlight {
    queued: Cell<usize>,
    idle: RefCell<Option<futures_channel::oneshot::Sender<()>>>,
    /// Requests the reader is dispatching (or serving serially) and has not queued yet.
    handling: Cell<usize>,
    /// When a read returned bytes or a response was written last.
    last_active: Cell<std::time::Instant>,
    /// Until when the reader reads no request: the client is throttled (KIP-219).
    muted_until: Cell<Option<Instant>>,
}

impl Default for InFlight {
    fn default() -> Self {
        InFlight {
            queued: Cell::new(0),
            idle: RefCell::new(None),
            handling: Cell::new(0),
            last_active: Cell::new(std::time::Instant::now()),
            muted_until: Cell::new(None),
        }
    }
}

impl InFlight {
    fn touch(&self) {
        self.last_active.set(std::time::Instant::now());
    }

    /// Resolves once the connection has had nothing in flight and no traffic for
    /// `max_idle` (Kafka's `connections.max.idle.ms`); never when `max_idle` is zero.
    async fn idle_for(&self, max_idle: std::time::Duration) {
        if max_idle.is_zero() {
            return future::pending().await;
        }
        loop {
            let since = self.last_active.get().elapsed();
            let busy = self.queued.get() > 0 || self.handling.get() > 0;
            if since >= max_idle && !busy {
                return;
            }
            // Busy: look again a whole period later (activity resets the clock anyway).
            let wait = if since >= max_idle { max_idle } else { max_idle - since };
            glommio::timer::sleep(wait).await;
        }
    }

    /// Holds back the reader for `ms` from now (or longer, if already held longer).
    fn mute_for(&self, ms: u64) {
        let until = Instant::now() + std::time::Duration::from_millis(ms);
        if self.muted_until.get().is_none_or(|u| u < until) {
            self.muted_until.set(Some(until));
        }
    }

    /// Resolves once the connection is not muted. Waiting on a throttle is not being
    /// idle. Only this connection waits (a timer), and nothing is borrowed meanwhile.
    async fn unmuted(&self) {
        while let Some(until) = self.muted_until.get() {
            let now = Instant::now();
            if until <= now {
                self.muted_until.set(None);
                break;
            }
            let _waiting = Handling::start(self);
            glommio::timer::sleep(until - now).await;
        }
    }

    /// Resolves once every queued response has been written (or the writer ended).
    async fn drained(&self) {
        if self.queued.get() == 0 {
            return;
        }
        let (tx, rx) = futures_channel::oneshot::channel();
        *self.idle.borrow_mut() = Some(tx);
        let _ = rx.await;
    }

    fn done_one(&self) {
        self.queued.set(self.queued.get().saturating_sub(1));
        if self.queued.get() == 0 {
            if let Some(tx) = self.idle.borrow_mut().take() {
                let _ = tx.send(());
            }
        }
    }
}

/// What a connection knows of the listener that accepted it.
pub struct Accepted {
    /// Its protocol and advertised address.
    pub listener: Rc<Listener>,
    /// How SASL listeners authenticate.
    pub security: Arc<SaslConfig>,
    /// On SSL and SASL_SSL listeners, the TLS configuration every shard shares.
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

/// Serves one connection until the client closes it, it misbehaves, or `stop`
/// resolves (shutdown: in-flight requests still get their responses). On an SSL or
/// SASL_SSL listener the TLS handshake comes first (a client that does not complete it
/// within `--connections-max-idle-ms` is closed); on SSL the principal is then the
/// client certificate's subject (`User:CN=...`, or `User:ANONYMOUS` without one). On a
/// SASL_PLAINTEXT or SASL_SSL listener the SASL exchange ([`SaslSession`]) comes next
/// and decides the principal.
pub async fn serve(
    shard: Rc<Shard>,
    stream: TcpStream,
    accepted: Accepted,
    budget: ConnectionBudget,
    stop: LocalStop,
) {
    let _counted = CountedConnection::open();
    let _ = stream.set_nodelay(true);
    let peer = stream.peer_addr().ok();
    let max_idle = std::time::Duration::from_millis(shard.config.connections_max_idle_ms);
    let transport = match &accepted.tls {
        None => Transport::Plain(stream),
        Some(config) => match tls_handshake(stream, config.clone(), peer, max_idle, &stop).await {
            Some(tls) => Transport::Tls(Box::new(tls)),
            None => return,
        },
    };
    let principal = match &transport {
        Transport::Tls(tls) if !accepted.listener.protocol.is_sasl() => {
            crate::security::tls::principal(tls.peer_leaf_certificate())
        }
        _ => KafkaPrincipal::anonymous(),
    };
    let stream = Rc::new(RefCell::new(transport));
    let (tx, rx) = local_channel::new_bounded::<Queued>(MAX_IN_FLIGHT);
    let in_flight = Rc::new(InFlight::default());
    let writer_in_flight = in_flight.clone();
    let (done_tx, done_rx) = futures_channel::oneshot::channel::<()>();
    let writer = WriteHalf::new(stream.clone());
    let write_stall = std::time::Duration::from_millis(shard.config.response_write_stall_ms);
    let writer_shard = shard.clone();
    glommio::spawn_local(async move {
        let env = WriteEnv {
            peer,
            stall: write_stall,
            shard: &writer_shard,
            in_flight: &writer_in_flight,
        };
        write_loop(writer, rx, &env).await;
        let _ = done_tx.send(());
    })
    .detach();

    let reader = ReadHalf::new(stream.clone(), shard.config.receive_lowat_bytes);
    let read_side = async {
        let idle = async {
            in_flight.idle_for(max_idle).await;
            tracing::debug!(
                ?peer,
                idle_ms = max_idle.as_millis() as u64,
                "closing idle connection"
            );
        };
        let reading =
            read_loop(&shard, reader, tx, peer, &in_flight, &budget, &accepted, principal);
        future::or(future::or(reading, idle), stop.requested()).await;
        // `tx` is gone: the writer drains what is queued, then ends.
        future::pending::<()>().await
    };
    future::or(read_side, async {
        let _ = done_rx.await;
    })
    .await;
    // The read side was dropped above and the writer task has ended, so the stream
    // is normally ours alone; if a half still lives, dropping ours closes the socket
    // once that half ends.
    if let Ok(stream) = Rc::try_unwrap(stream) {
        let mut transport = stream.into_inner();
        if let Transport::Tls(tls) = &mut transport {
            tls.close_notify();
        }
        let _ = transport.tcp().shutdown(std::net::Shutdown::Both).await;
    }
}

/// Runs the TLS handshake of a new connection; `None` (logged) when it fails, the
/// client stays silent for `max_idle` (when not zero), or shutdown comes first.
async fn tls_handshake(
    stream: TcpStream,
    config: Arc<rustls::ServerConfig>,
    peer: Option<SocketAddr>,
    max_idle: std::time::Duration,
    stop: &LocalStop,
) -> Option<TlsStream> {
    let mut tls = match TlsStream::new(stream, config) {
        Ok(tls) => tls,
        Err(e) => {
            tracing::warn!(?peer, error = %e, "closing connection: TLS setup failed");
            return None;
        }
    };
    let timeout = async {
        if max_idle.is_zero() {
            future::pending::<()>().await
        }
        glommio::timer::sleep(max_idle).await;
    };
    let outcome = future::or(async { Some(tls.handshake().await) }, async {
        future::or(timeout, stop.requested()).await;
        None
    })
    .await;
    match outcome {
        Some(Ok(())) => Some(tls),
        Some(Err(e)) => {
            if closing(CloseReason::TlsHandshake) {
                tracing::info!(?peer, error = %e, "closing connection: TLS handshake failed");
            }
            None
        }
        None => {
            if closing(CloseReason::TlsHandshake) {
                tracing::info!(?peer, "closing connection: TLS handshake not completed");
            }
            None
        }
    }
}

#[allow(clippy::too_many_arguments)] // one connection's pieces, each used throughout
async fn read_loop(
    shard: &Rc<Shard>,
    mut reader: ReadHalf,
    tx: LocalSender<Queued>,
    peer: Option<SocketAddr>,
    in_flight: &InFlight,
    budget: &ConnectionBudget,
    accepted: &Accepted,
    principal: KafkaPrincipal,
) {
    let max = shard.config.max_request_bytes;
    // Formatted once per connection, not per request.
    let client_host: Rc<str> = peer.map(|p| p.ip().to_string()).unwrap_or_default().into();
    // Anonymous on PLAINTEXT; on SSL, the client certificate's; on SASL, who the
    // exchange authenticated (nothing is dispatched before it did, except ApiVersions).
    let mut principal = Rc::new(principal);
    let mut sasl = accepted.listener.protocol.is_sasl().then(SaslSession::new);
    let security = &accepted.security;
    let scram = |user: &str, mechanism| {
        crate::security::credentials::lookup(&shard.catalog().scram_credentials, user, mechanism)
    };
    let mut buf = BytesMut::with_capacity(READ_CHUNK);
    // Whether a client quota applies: (catalog version, client id, user, answer).
    let mut quota_applies: Option<(u64, String, String, bool)> = None;
    loop {
        // A throttled client's next request waits for the end of its throttle.
        in_flight.unmuted().await;
        // Complete the 4-byte length prefix, then the frame.
        if !fill(&mut reader, &mut buf, 4, in_flight).await {
            return;
        }
        let prefix = [buf[0], buf[1], buf[2], buf[3]];
        let size = match check_frame_length(prefix, max) {
            Ok(size) => size,
            Err(e) => {
                if closing(CloseReason::BadFrameLength) {
                    tracing::warn!(?peer, error = ?e, "closing connection: bad frame length");
                }
                return;
            }
        };
        // Room in the connection's budget first: over it, this connection reads nothing
        // more. Not idle meanwhile: it waits for its own responses, not for the client.
        let own = {
            let _waiting = Handling::start(in_flight);
            budget.reserve_own(4 + size).await
        };
        in_flight.touch();
        // A client that stalls inside a frame is idle, though.
        if !fill(&mut reader, &mut buf, 4 + size, in_flight).await {
            return;
        }
        let received = Instant::now();
        // From here the request is the reader's: the connection is not idle.
        let handling = Handling::start(in_flight);
        // Then the shard's budget, for bytes that are really here.
        let reservation = budget.reserve_shared(own, 4 + size).await;
        let _ = buf.split_to(4);
        let frame: Bytes = buf.split_to(size).freeze();
        if let Some(session) = sasl.as_mut().filter(|s| s.expects_raw_token()) {
            // After a SaslHandshake v0 the frames are the mechanism's tokens.
            let token = match session.on_raw_token(&frame, security, Instant::now(), &scram) {
                Step::Raw { token } => token,
                other => {
                    sasl_close(peer, &other);
                    return;
                }
            };
            if let Some(p) = session.principal().filter(|p| **p != *principal) {
                principal = Rc::new(p.clone());
            }
            in_flight.queued.set(in_flight.queued.get() + 1);
            drop(handling);
            let label = Rc::new(Label::Request {
                api_key: ApiKey::SaslAuthenticate as i16,
                api_version: 0,
                correlation_id: 0,
                client_id: String::new(),
                peer,
            });
            let times = Times { received, dispatched: Instant::now() };
            let queued = Queued {
                correlation_id: 0,
                answer: Answer::RawToken(token),
                reservation,
                label,
                times,
                quota: None,
            };
            if tx.send(queued).await.is_err() {
                return;
            }
            continue;
        }
        let mut request = match decode_request(frame) {
            Ok(r) => r,
            Err(e) => {
                if closing(CloseReason::BadRequestHeader) {
                    tracing::warn!(?peer, error = ?e, "closing connection: bad request header");
                }
                return;
            }
        };
        let (correlation_id, api_key, api_version) =
            (request.correlation_id, request.api_key, request.api_version);
        let label = Rc::new(Label::Request {
            api_key,
            api_version,
            correlation_id,
            client_id: request.client_id.clone(),
            peer,
        });
        if shard.config.debug_panic_client_id.as_deref() == Some(request.client_id.as_str()) {
            let _label = Labeled::new(label.clone(), async {
                panic!("--debug-panic-client-id matched this request's client id")
            })
            .await;
        }
        if shard.config.debug_stall_client_id.as_deref() == Some(request.client_id.as_str()) {
            tracing::warn!("--debug-stall-client-id matched: blocking this shard for 3 s");
            std::thread::sleep(std::time::Duration::from_secs(3));
        }
        if let Some(session) = sasl.as_mut() {
            let exchange = session.in_exchange()
                || matches!(request.api, Some(ApiKey::SaslHandshake | ApiKey::SaslAuthenticate));
            if exchange {
                // The SASL exchange is serial: nothing in flight around it.
                in_flight.drained().await;
            }
            match session.on_request(&request, security, Instant::now(), &scram) {
                Step::Dispatch => {}
                Step::Answer { api, version, response, close } => {
                    if let Some(p) = session.principal().filter(|p| **p != *principal) {
                        principal = Rc::new(p.clone());
                    }
                    in_flight.queued.set(in_flight.queued.get() + 1);
                    drop(handling);
                    let dispatched = Dispatched {
                        api,
                        response_version: version,
                        outcome: Outcome::Ready(*response),
                    };
                    let times = Times { received, dispatched: Instant::now() };
                    let answer = Answer::Response(dispatched);
                    let queued =
                        Queued { correlation_id, answer, reservation, label, times, quota: None };
                    if tx.send(queued).await.is_err() {
                        return;
                    }
                    if let Some(reason) = close {
                        // The answer goes out first (Kafka sends it, then closes).
                        in_flight.drained().await;
                        sasl_close(peer, &Step::Close(reason));
                        return;
                    }
                    continue;
                }
                other => {
                    sasl_close(peer, &other);
                    return;
                }
            }
        }
        let ctx = Ctx {
            shard: shard.clone(),
            api_version,
            client_id: std::mem::take(&mut request.client_id),
            client_host: client_host.clone(),
            principal: principal.clone(),
            listener: accepted.listener.clone(),
        };
        if request.api.is_some_and(handlers::waits_for_earlier) {
            // It changes what earlier requests act on: let them finish first.
            in_flight.drained().await;
        }
        let dispatch_started = Instant::now();
        let mut dispatched =
            match Labeled::new(label.clone(), handlers::dispatch(&ctx, request)).await {
                Ok(d) => d,
                Err(refusal) => {
                    if closing(CloseReason::RequestRefused) {
                        tracing::warn!(
                            ?peer,
                            client_id = %ctx.client_id,
                            api_key,
                            api_version,
                            ?refusal,
                            "closing connection: request refused"
                        );
                    }
                    return;
                }
            };
        // One check without quotas; with some, what this request used if a quota
        // applies to its client (looked up again only when the catalog or the client
        // changed).
        let catalog = shard.catalog();
        let quota = if catalog.client_quotas.is_empty() {
            None
        } else {
            let key = (catalog.version, ctx.client_id.as_str(), ctx.principal.name.as_str());
            let applies = match &quota_applies {
                Some((v, c, u, applies)) if (*v, c.as_str(), u.as_str()) == key => *applies,
                _ => {
                    let applies = shard.quotas.applies(&catalog.client_quotas, key.2, key.1);
                    quota_applies = Some((key.0, key.1.to_string(), key.2.to_string(), applies));
                    applies
                }
            };
            applies.then(|| crate::quota::Usage {
                user: ctx.principal.name.as_str().into(),
                client_id: ctx.client_id.clone(),
                request_bytes: size,
                handle_time: dispatch_started.elapsed(),
            })
        };
        drop(catalog);
        // A client under a quota gets one request at a time (as on Kafka), so that
        // the throttle of this response holds back the next request.
        let one_at_a_time = quota.is_some();
        if let Outcome::Serial(serial) = dispatched.outcome {
            // The next request must see this one's effect: finish it before reading on.
            dispatched.outcome = match Labeled::new(label.clone(), serial).await {
                Some(response) => Outcome::Ready(response),
                None => {
                    tracing::warn!(
                        request = %label,
                        "closing connection: response dropped (shutdown)"
                    );
                    return;
                }
            };
        }
        in_flight.queued.set(in_flight.queued.get() + 1);
        drop(handling);
        let queued = Queued {
            correlation_id,
            answer: Answer::Response(dispatched),
            reservation,
            label,
            times: Times { received, dispatched: dispatch_started },
            quota,
        };
        if tx.send(queued).await.is_err() {
            return;
        }
        if one_at_a_time {
            in_flight.drained().await;
        }
    }
}

/// Logs (rate-limited) why a SASL connection closes.
fn sasl_close(peer: Option<SocketAddr>, step: &Step) {
    if closing(CloseReason::Sasl) {
        match step {
            Step::Close(reason) => {
                tracing::info!(?peer, reason = %reason, "closing connection: SASL")
            }
            other => tracing::warn!(?peer, step = ?other, "closing connection: SASL"),
        }
    }
}

/// Counts a connection in the shard's metrics as open until dropped.
struct CountedConnection;

impl CountedConnection {
    fn open() -> Self {
        crate::metrics::with(|m| m.connection_accepted());
        CountedConnection
    }
}

impl Drop for CountedConnection {
    fn drop(&mut self) {
        crate::metrics::with(|m| m.connection_closed());
    }
}

/// Counts a request as being handled by the reader until dropped.
struct Handling<'a>(&'a InFlight);

impl<'a> Handling<'a> {
    fn start(in_flight: &'a InFlight) -> Self {
        in_flight.handling.set(in_flight.handling.get() + 1);
        Handling(in_flight)
    }
}

impl Drop for Handling<'_> {
    fn drop(&mut self) {
        self.0.handling.set(self.0.handling.get().saturating_sub(1));
    }
}

/// Reads until `buf` holds at least `want` bytes; false on EOF or error. Reads go into
/// the buffer's spare capacity, which is never zero-filled.
async fn fill(
    reader: &mut ReadHalf,
    buf: &mut BytesMut,
    want: usize,
    in_flight: &InFlight,
) -> bool {
    while buf.len() < want {
        // Grow with the bytes that arrive, not with the declared frame size: a client
        // that announces 100 MiB and sends nothing costs one chunk, not 100 MiB.
        let missing = want - buf.len();
        let chunk = missing.clamp(READ_CHUNK, MAX_GROWTH);
        match reader.read_into(buf, chunk, missing).await {
            Ok(0) | Err(_) => return false,
            Ok(_) => in_flight.touch(),
        }
    }
    true
}

/// What the writer of a connection works with.
struct WriteEnv<'a> {
    peer: Option<SocketAddr>,
    /// How long the client may take no byte of a response.
    stall: std::time::Duration,
    shard: &'a Rc<Shard>,
    in_flight: &'a InFlight,
}

async fn write_loop(mut writer: WriteHalf, rx: LocalReceiver<Queued>, env: &WriteEnv<'_>) {
    while let Some(queued) = rx.recv().await {
        let Queued { correlation_id, answer, reservation, label, times, quota } = queued;
        let open = match answer {
            Answer::Response(dispatched) => {
                write_one(&mut writer, env, correlation_id, dispatched, label, times, quota).await
            }
            Answer::RawToken(token) => {
                let frame = [Bytes::copy_from_slice(&(token.len() as u32).to_be_bytes()), token];
                write_all_parts(&mut writer, &frame, env.stall).await.is_ok()
            }
        };
        drop(reservation);
        env.in_flight.touch();
        env.in_flight.done_one();
        if !open {
            return;
        }
    }
}

/// Awaits one outcome and writes its response. False when the connection must close
/// (the response was dropped at shutdown, could not be encoded, or the write failed;
/// logged here).
async fn write_one(
    writer: &mut WriteHalf,
    env: &WriteEnv<'_>,
    correlation_id: i32,
    dispatched: Dispatched,
    label: Rc<Label>,
    times: Times,
    quota: Option<crate::quota::Usage>,
) -> bool {
    let (peer, stall) = (env.peer, env.stall);
    let Dispatched { api, response_version, outcome } = dispatched;
    let mut response = match outcome {
        Outcome::Ready(r) => r,
        Outcome::Later(later) | Outcome::Serial(later) => {
            match Labeled::new(label.clone(), later).await {
                Some(r) => r,
                None => {
                    // Responses leave in request order: without this one, none of the
                    // later ones can be sent either.
                    tracing::warn!(request = %label, "closing connection: response dropped (shutdown)");
                    return false;
                }
            }
        }
        Outcome::Silent(done) => {
            // Nothing to write; the request's budget is held until its appends finish.
            let errors = Labeled::new(label.clone(), done).await;
            times.count(api, response_version, Instant::now(), &errors);
            if let Some(usage) = &quota {
                // acks=0: no response to carry the throttle; the connection is muted.
                throttle(env, usage, api, 0);
            }
            if errors.is_empty() {
                return true;
            }
            // Kafka's KafkaApis: the client of an acks=0 request that failed learns it
            // by losing the connection, and refreshes its metadata.
            if closing(CloseReason::ProduceFailedWithoutAcks) {
                let names: Vec<String> =
                    errors.iter().map(|&c| crate::metrics::errors::error_name(c)).collect();
                tracing::warn!(
                    request = %label,
                    errors = ?names,
                    "closing connection: an acks=0 produce request failed"
                );
            }
            return false;
        }
    };
    let ready = Instant::now();
    let encoded = encode(correlation_id, api, response_version, &response).and_then(|frame| {
        let Some(usage) = &quota else { return Ok(frame) };
        let bytes = frame.iter().map(Bytes::len).sum::<usize>().saturating_sub(4);
        let ms = throttle(env, usage, api, bytes);
        if ms == 0 || !crate::quota::response::set_throttle_time(&mut response, ms) {
            return Ok(frame);
        }
        // A throttled Fetch sends no records (Kafka's throttled fetch response).
        crate::quota::response::empty_fetch_records(&mut response);
        encode(correlation_id, api, response_version, &response)
    });
    let frame = match encoded {
        Ok(frame) => frame,
        Err(e) => {
            closing(CloseReason::EncodingFailed);
            tracing::error!(
                request = %label,
                error = %e,
                "closing connection: response encoding failed"
            );
            return false;
        }
    };
    if let Err(e) = write_all_parts(writer, &frame, stall).await {
        if e.kind() == std::io::ErrorKind::TimedOut {
            if closing(CloseReason::StoppedReading) {
                tracing::info!(?peer, ?api, error = %e, "closing connection: the client stopped reading its responses");
            }
        } else {
            tracing::debug!(?peer, error = %e, "write failed");
        }
        return false;
    }
    let mut errors = Vec::new();
    crate::metrics::errors::error_codes(&response, &mut errors);
    times.count(api, response_version, ready, &errors);
    true
}

/// Counts an answered request against its client's quotas (Kafka's produce, fetch and
/// request quota managers) and mutes the connection for the throttle; returns the
/// throttle, ms (0: none). `response_bytes` is the encoded response's size without
/// its length prefix (what the fetch quota counts).
fn throttle(
    env: &WriteEnv<'_>,
    usage: &crate::quota::Usage,
    api: ApiKey,
    response_bytes: usize,
) -> u64 {
    let catalog = env.shard.catalog();
    let quotas = &env.shard.quotas;
    let t = quotas.on_response(&catalog.client_quotas, api, usage, response_bytes, quotas.now_ms());
    if let Some(by) = t.by {
        env.in_flight.mute_for(t.ms);
        crate::metrics::with(|m| m.quota_throttled(by, t.ms));
    }
    t.ms
}

/// When a request reached the phases its metrics time ([`crate::metrics::Phase`]).
#[derive(Debug, Clone, Copy)]
struct Times {
    /// The whole frame had been read.
    received: Instant,
    /// Its handling started.
    dispatched: Instant,
}

impl Times {
    /// Counts an answered request whose response was ready at `ready` and has just
    /// been written (or needed none), carrying `errors`.
    fn count(self, api: ApiKey, version: i16, ready: Instant, errors: &[i16]) {
        let now = Instant::now();
        let phases = [
            self.dispatched.saturating_duration_since(self.received),
            ready.saturating_duration_since(self.dispatched),
            now.saturating_duration_since(ready),
        ];
        crate::metrics::with(|m| m.request(api, version, phases, errors));
    }
}

/// Encodes one response frame at `version`: size, header (v0, or v1 for flexible
/// versions; ApiVersions always v0), body. Fetch record batches are referenced, not
/// copied.
pub fn encode(
    correlation_id: i32,
    api: ApiKey,
    version: i16,
    response: &ResponseKind,
) -> anyhow::Result<Vec<Bytes>> {
    let header = ResponseHeader::default().with_correlation_id(correlation_id);
    let header_version = api.response_header_version(version);
    if let ResponseKind::Fetch(fetch) = response {
        let records = fetch
            .responses
            .iter()
            .flat_map(|t| t.partitions.iter())
            .filter_map(|p| p.records.clone())
            .collect();
        let mut out = Segments::new(records, 1024);
        header.encode(&mut out, header_version)?;
        fetch.encode(&mut out, version)?;
        return Ok(out.finish());
    }
    let mut out = BytesMut::with_capacity(256);
    out.put_i32(0);
    header.encode(&mut out, header_version)?;
    response.encode(&mut out, version)?;
    let size = (out.len() - 4) as i32;
    out[..4].copy_from_slice(&size.to_be_bytes());
    Ok(vec![out.freeze()])
}

//! The per-shard listeners. Every shard binds every listener's address with
//! SO_REUSEPORT (glommio sets it), so the kernel spreads new connections over the
//! cores; a connection then lives on the core that accepted it and knows the listener
//! it came in through (its protocol, what to advertise).

use std::rc::Rc;

use futures_lite::future;
use glommio::net::TcpListener;
use glommio::sync::Gate;

use super::connection;
use super::limits::{ConnectionLimits, Refused, RequestBudget};
use super::listeners::Listener;
use crate::security::sasl::SaslConfig;
use crate::shard::Shard;
use crate::shutdown::Shutdown;

/// How long shutdown waits for connections to finish their in-flight requests.
pub const DRAIN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// How often a listener at `--max-connections` looks again, in ms.
const FULL_POLL_MS: u64 = 20;

/// A bound listener socket and the listener it serves (protocol, advertised address).
pub struct Bound {
    pub socket: TcpListener,
    pub listener: Rc<Listener>,
    /// On SSL and SASL_SSL listeners, the TLS configuration (shared by every shard).
    pub tls: Option<std::sync::Arc<rustls::ServerConfig>>,
}

/// Accepts connections on every listener until `stop` resolves, then waits for every
/// connection to finish its in-flight requests. Lives on one shard; `limits` is
/// shared by all shards and listeners; `security` says how SASL listeners
/// authenticate.
pub async fn run(
    shard: Rc<Shard>,
    listeners: Vec<Bound>,
    limits: std::sync::Arc<ConnectionLimits>,
    security: std::sync::Arc<SaslConfig>,
    stop: Shutdown,
) {
    let gate = Rc::new(Gate::new());
    let config = &shard.config;
    let budget = RequestBudget::new(
        config.queued_request_bytes_per_shard(shard.nr_shards) as u64,
        config.queued_max_request_bytes_per_connection as u64,
    );
    // Tells this shard's connections and long polls; fired once the loops below end.
    let local_stop = shard.stopping.clone();
    let loops: Vec<_> = listeners
        .into_iter()
        .map(|bound| {
            let accepting = Accepting {
                shard: shard.clone(),
                limits: limits.clone(),
                security: security.clone(),
                stop: stop.clone(),
                gate: gate.clone(),
                budget: budget.clone(),
            };
            glommio::spawn_local(accepting.run(bound))
        })
        .collect();
    for task in loops {
        task.await;
    }
    tracing::info!(shard = shard.id, "stopped accepting; draining connections");
    local_stop.fire();
    let drained = glommio::timer::timeout(DRAIN_TIMEOUT, async {
        let _ = gate.close().await;
        Ok(())
    })
    .await;
    match drained {
        Ok(()) => tracing::info!(shard = shard.id, "connections drained"),
        Err(_) => tracing::warn!(
            shard = shard.id,
            timeout_ms = DRAIN_TIMEOUT.as_millis() as u64,
            "connections still busy after the drain timeout; closing anyway"
        ),
    }
}

/// What one listener's accept loop shares with the others of its shard.
struct Accepting {
    shard: Rc<Shard>,
    limits: std::sync::Arc<ConnectionLimits>,
    security: std::sync::Arc<SaslConfig>,
    stop: Shutdown,
    gate: Rc<Gate>,
    budget: RequestBudget,
}

impl Accepting {
    /// Accepts connections on `bound` until shutdown is requested.
    async fn run(self, bound: Bound) {
        let Accepting { shard, limits, security, stop, gate, budget } = self;
        let Bound { socket: listener, listener: info, tls } = bound;
        let local_stop = shard.stopping.clone();
        let mut failures = 0u32;
        let mut full_logged = false;
        // One shutdown waiter for the whole loop, polled again by each accept.
        let mut stopping = std::pin::pin!(stop.clone().requested());
        loop {
            if stop.is_requested() {
                break;
            }
            if limits.full() {
                // Kafka's acceptor blocks the same way: clients wait in the backlog.
                if !full_logged {
                    tracing::warn!(
                        shard = shard.id,
                        open = limits.open(),
                        "--max-connections reached; not accepting until a connection closes"
                    );
                    full_logged = true;
                }
                glommio::timer::sleep(std::time::Duration::from_millis(FULL_POLL_MS)).await;
                continue;
            }
            full_logged = false;
            let accepted = future::or(async { Some(listener.accept().await) }, async {
                stopping.as_mut().await;
                None
            })
            .await;
            match accepted {
                None => break,
                Some(Ok(stream)) => {
                    failures = 0;
                    let peer = stream.peer_addr().ok();
                    let admitted = loop {
                        match limits.admit(peer.map(|p| p.ip())) {
                            Ok(admitted) => break Some(admitted),
                            // Another shard took the last place while this one accepted:
                            // hold the connection unread until a place frees.
                            Err(Refused::Full) if !stop.is_requested() => {
                                glommio::timer::sleep(std::time::Duration::from_millis(
                                    FULL_POLL_MS,
                                ))
                                .await
                            }
                            Err(Refused::Full) => break None,
                            Err(refused) => {
                                if super::close::closing(
                                    super::close::CloseReason::TooManyConnectionsPerIp,
                                ) {
                                    tracing::info!(
                                        ?peer,
                                        ?refused,
                                        "closing new connection: too many connections"
                                    );
                                }
                                break None;
                            }
                        }
                    };
                    let Some(admitted) = admitted else {
                        drop(stream);
                        continue;
                    };
                    let shard = shard.clone();
                    let stop = local_stop.clone();
                    let budget = budget.connection();
                    let listener = connection::Accepted {
                        listener: info.clone(),
                        security: security.clone(),
                        tls: tls.clone(),
                    };
                    match gate.spawn(async move {
                        connection::serve(shard, stream, listener, budget, stop).await;
                        drop(admitted);
                    }) {
                        Ok(task) => {
                            task.detach();
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "connection not started: shutting down")
                        }
                    }
                }
                Some(Err(e)) => {
                    // EMFILE and friends: keep serving the connections we have, back off
                    // (up to 1 s), and log only the first failures of a streak.
                    failures += 1;
                    if failures <= 3 || failures.is_power_of_two() {
                        tracing::warn!(error = %e, failures, "accept failed");
                    }
                    let backoff = 10u64 << failures.min(7);
                    glommio::timer::sleep(std::time::Duration::from_millis(backoff.min(1000)))
                        .await;
                }
            }
        }
    }
}

//! The per-shard listener. Every shard binds the same address with SO_REUSEPORT
//! (glommio sets it), so the kernel spreads new connections over the cores; a
//! connection then lives on the core that accepted it.

use std::rc::Rc;

use futures_lite::future;
use glommio::net::TcpListener;
use glommio::sync::Gate;

use super::connection;
use crate::shard::Shard;
use crate::shutdown::Shutdown;

/// How long shutdown waits for connections to finish their in-flight requests.
pub const DRAIN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Accepts connections until `stop` resolves, then waits for every connection to
/// finish its in-flight requests. Lives on one shard.
pub async fn run(shard: Rc<Shard>, listener: TcpListener, stop: Shutdown) {
    let gate = Rc::new(Gate::new());
    let mut failures = 0u32;
    loop {
        if stop.is_requested() {
            break;
        }
        let accepted = future::or(async { Some(listener.accept().await) }, async {
            stop.clone().requested().await;
            None
        })
        .await;
        match accepted {
            None => break,
            Some(Ok(stream)) => {
                failures = 0;
                let shard = shard.clone();
                let stop = stop.clone();
                match gate.spawn(async move { connection::serve(shard, stream, stop).await }) {
                    Ok(task) => {
                        task.detach();
                    }
                    Err(e) => tracing::warn!(error = %e, "connection not started: shutting down"),
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
                glommio::timer::sleep(std::time::Duration::from_millis(backoff.min(1000))).await;
            }
        }
    }
    tracing::info!(shard = shard.id, "stopped accepting; draining connections");
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

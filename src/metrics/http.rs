//! The metrics listener (`--metrics-listen`): `/metrics` (Prometheus text format),
//! `/healthz` and `/readyz`, served with hyper's HTTP/1 server on the control shard.
//! A scrape asks every shard for its [`ShardSnapshot`] over the mesh and renders
//! them; no shard shares a counter with another.

use std::convert::Infallible;
use std::os::fd::{FromRawFd, IntoRawFd};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_channel::oneshot;
use futures_lite::{AsyncRead, AsyncWrite};
use glommio::net::{TcpListener, TcpStream};
use http_body_util::Full;
use hyper::{Method, Request, Response, StatusCode};

use super::encode::{data_dir_gauges, render, Scrape};
use super::snapshot::{take, ShardSnapshot};
use crate::shard::{DataRequest, Shard};
use crate::shutdown::{Shutdown, Startup};

/// Longest a scrape waits for the other shards' snapshots (all of them together);
/// a shard that has not answered by then is shown as it last answered.
const GATHER_TIMEOUT: Duration = Duration::from_secs(3);

/// Longest one HTTP connection may stay open (a client that stalls mid-request, or
/// reads its response too slowly, is dropped after this; Prometheus' default scrape
/// timeout is the same). Every connection serves one request (no keep-alive).
const CONNECTION_TIMEOUT: Duration = Duration::from_secs(10);

/// Most HTTP connections open at once; more are closed at once (and logged, at most
/// once per [`REFUSAL_LOG_EVERY`]).
const MAX_CONNECTIONS: usize = 256;

/// Least time between two warnings about refused metrics connections.
const REFUSAL_LOG_EVERY: Duration = Duration::from_secs(10);

/// hyper's read buffer limit per connection, bytes (its minimum is 8 KiB): a request
/// with larger headers is refused.
const MAX_BUF_BYTES: usize = 16 * 1024;

/// The text exposition's content type (Prometheus text format 0.0.4).
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Binds `addr` without SO_REUSEPORT, so that a second broker on the same machine
/// cannot silently share (and answer half of) the scrapes.
pub fn bind(addr: std::net::SocketAddr) -> std::io::Result<TcpListener> {
    let std_listener = std::net::TcpListener::bind(addr)?;
    // SAFETY: the fd comes from a listening socket we own and hand over whole.
    Ok(unsafe { TcpListener::from_raw_fd(std_listener.into_raw_fd()) })
}

/// Serves the metrics listener for as long as the control shard runs (through a
/// shutdown's drain too: `/readyz` then answers 503). Lives on the control shard.
pub async fn run(shard: Rc<Shard>, listener: TcpListener, startup: Startup, stop: Shutdown) {
    let gatherer = Rc::new(Gatherer::default());
    let open = Rc::new(std::cell::Cell::new(0usize));
    let mut refused = 0u64;
    let mut warned: Option<std::time::Instant> = None;
    loop {
        let stream = match listener.accept().await {
            Ok(stream) if open.get() >= MAX_CONNECTIONS => {
                drop(stream);
                refused += 1;
                if warned.is_none_or(|t| t.elapsed() >= REFUSAL_LOG_EVERY) {
                    tracing::warn!(
                        open = open.get(),
                        refused,
                        "metrics endpoint: too many connections open; refusing new ones"
                    );
                    warned = Some(std::time::Instant::now());
                    refused = 0;
                }
                continue;
            }
            Ok(stream) => stream,
            Err(e) => {
                tracing::warn!(error = %e, "metrics listener: accept failed");
                glommio::timer::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let shard = shard.clone();
        let (startup, stop, gatherer) = (startup.clone(), stop.clone(), gatherer.clone());
        let open = open.clone();
        open.set(open.get() + 1);
        glommio::spawn_local(async move {
            let service = hyper::service::service_fn(move |req| {
                let (shard, startup, stop) = (shard.clone(), startup.clone(), stop.clone());
                let gatherer = gatherer.clone();
                async move {
                    Ok::<_, Infallible>(answer(&shard, &gatherer, &startup, &stop, req).await)
                }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .keep_alive(false)
                .max_buf_size(MAX_BUF_BYTES)
                .serve_connection(Io(stream), service);
            match glommio::timer::timeout(CONNECTION_TIMEOUT, async { Ok(conn.await) }).await {
                Ok(Err(e)) => tracing::debug!(error = %e, "metrics connection failed"),
                Err(_) => tracing::debug!("metrics connection closed after its time limit"),
                Ok(Ok(())) => {}
            }
            open.set(open.get() - 1);
        })
        .detach();
    }
}

/// Whether every shard has recovered its logs and serves (and no shutdown began).
fn ready(shard: &Shard, startup: &Startup, stop: &Shutdown) -> bool {
    startup.all_ready(shard.nr_shards) && !stop.is_requested()
}

async fn answer(
    shard: &Rc<Shard>,
    gatherer: &Gatherer,
    startup: &Startup,
    stop: &Shutdown,
    req: Request<hyper::body::Incoming>,
) -> Response<Full<Bytes>> {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return text(StatusCode::METHOD_NOT_ALLOWED, "only GET\n");
    }
    match req.uri().path() {
        "/metrics" => {
            let scrape = gatherer.gather(shard).await;
            // Rendering a big scrape (tens of thousands of lag series) takes tens of
            // ms: done on glommio's blocking thread, so shard 0 keeps serving.
            let body = glommio::executor().spawn_blocking(move || render(scrape)).await;
            let mut r = Response::new(Full::new(Bytes::from(body)));
            r.headers_mut().insert(
                hyper::header::CONTENT_TYPE,
                hyper::header::HeaderValue::from_static(CONTENT_TYPE),
            );
            r
        }
        "/healthz" => text(StatusCode::OK, "ok\n"),
        "/readyz" if ready(shard, startup, stop) => text(StatusCode::OK, "ready\n"),
        "/readyz" => text(StatusCode::SERVICE_UNAVAILABLE, "not ready\n"),
        _ => text(StatusCode::NOT_FOUND, "not found: try /metrics, /healthz or /readyz\n"),
    }
}

fn text(status: StatusCode, body: &'static str) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
    *r.status_mut() = status;
    r
}

/// Gathers the shards' snapshots for a scrape, and keeps the last one of each so that
/// a shard that does not answer in time is shown as it last was: its counters never
/// seem to go back (which Prometheus would take for a restart). Lives on the control
/// shard.
#[derive(Default)]
pub struct Gatherer {
    last: std::cell::RefCell<Vec<Option<std::sync::Arc<ShardSnapshot>>>>,
}

impl Gatherer {
    /// Every shard's snapshot (this one's taken here), in shard order. The others are
    /// asked over the mesh and waited for at most [`GATHER_TIMEOUT`] in all (a stalled
    /// or shutting-down shard); one without an answer is given as it last answered, or
    /// left out if it never did.
    pub async fn gather(&self, shard: &Rc<Shard>) -> Scrape {
        let deadline = std::time::Instant::now() + GATHER_TIMEOUT;
        let left = || deadline.saturating_duration_since(std::time::Instant::now());
        let mut waits = Vec::with_capacity(shard.nr_shards);
        for to in (0..shard.nr_shards).filter(|&to| to != shard.id) {
            let (reply, rx) = oneshot::channel();
            // Room in a stalled shard's channel may never come: bounded too.
            let sent = glommio::timer::timeout(left(), async {
                shard.send(to, DataRequest::Metrics { reply }).await;
                Ok(())
            })
            .await;
            if sent.is_ok() {
                waits.push((to, rx));
            }
        }
        let mut fresh: Vec<ShardSnapshot> = vec![take(shard)];
        for (to, rx) in waits {
            match glommio::timer::timeout(left(), async { Ok(rx.await) }).await {
                Ok(Ok(s)) => fresh.push(s),
                _ => tracing::debug!(shard = to, "no metrics snapshot from shard in time"),
            }
        }
        let mut last = self.last.borrow_mut();
        if last.len() < shard.nr_shards {
            last.resize(shard.nr_shards, None);
        }
        for s in fresh {
            let i = s.shard;
            if let Some(slot) = last.get_mut(i) {
                *slot = Some(std::sync::Arc::new(s));
            }
        }
        let shards = last.iter().flatten().cloned().collect();
        Scrape {
            shards,
            broker: data_dir_gauges(&shard.config.data_dir),
            consumer_lag: shard.config.metrics_consumer_lag,
            partition_series: shard.config.metrics_partitions,
        }
    }
}

/// glommio's stream as hyper's runtime I/O.
struct Io(TcpStream);

impl hyper::rt::Read for Io {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        let mut chunk = [0u8; 4096];
        let want = buf.remaining().min(chunk.len());
        match Pin::new(&mut self.0).poll_read(cx, &mut chunk[..want]) {
            Poll::Ready(Ok(n)) => {
                buf.put_slice(&chunk[..n]);
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl hyper::rt::Write for Io {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_close(cx)
    }
}

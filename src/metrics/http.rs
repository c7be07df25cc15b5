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

/// Most `/metrics` answers gathered and rendered at once; more wait (each within its
/// connection's [`CONNECTION_TIMEOUT`]). This bounds the CPU and the transient memory
/// of rendering; a text being written is held by its connection (at most
/// [`MAX_CONNECTIONS`], each for at most [`CONNECTION_TIMEOUT`]), so that a client that
/// does not read cannot keep others from scraping.
const MAX_SCRAPES: u64 = 4;

/// What the endpoint serves from: the control shard once it has recovered its logs
/// (before that, `/metrics` answers 503 and `/healthz` 200), and the broker's
/// start-up and shutdown state. Lives on the control shard.
pub struct Endpoint {
    shard: std::cell::OnceCell<Rc<Shard>>,
    nr_shards: usize,
    startup: Startup,
    stop: Shutdown,
    gatherer: Gatherer,
    scrapes: glommio::sync::Semaphore,
}

impl Endpoint {
    /// An endpoint for a broker of `nr_shards` shards, serving before its shard is set.
    pub fn new(nr_shards: usize, startup: Startup, stop: Shutdown) -> Rc<Endpoint> {
        Rc::new(Endpoint {
            shard: std::cell::OnceCell::new(),
            nr_shards,
            startup,
            stop,
            gatherer: Gatherer::default(),
            scrapes: glommio::sync::Semaphore::new(MAX_SCRAPES),
        })
    }

    /// The control shard, once it has recovered: `/metrics` serves from then on.
    pub fn set_shard(&self, shard: Rc<Shard>) {
        let _ = self.shard.set(shard);
    }

    /// Whether every shard has recovered its logs and serves (and no shutdown began).
    fn ready(&self) -> bool {
        self.startup.all_ready(self.nr_shards) && !self.stop.is_requested()
    }
}

/// Serves the metrics listener for as long as the control shard runs: from before its
/// recovery (`/healthz` answers at once) through a shutdown's drain (`/readyz` then
/// answers 503). Lives on the control shard.
pub async fn run(endpoint: Rc<Endpoint>, listener: TcpListener) {
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
        let endpoint = endpoint.clone();
        let open = open.clone();
        open.set(open.get() + 1);
        glommio::spawn_local(async move {
            let service = hyper::service::service_fn(move |req| {
                let endpoint = endpoint.clone();
                async move { Ok::<_, Infallible>(answer(&endpoint, req).await) }
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

async fn answer(endpoint: &Endpoint, req: Request<hyper::body::Incoming>) -> Response<Full<Bytes>> {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return text(StatusCode::METHOD_NOT_ALLOWED, "only GET\n");
    }
    match req.uri().path() {
        "/metrics" => {
            let Some(shard) = endpoint.shard.get() else {
                return text(StatusCode::SERVICE_UNAVAILABLE, "recovering the logs\n");
            };
            let Ok(permit) = endpoint.scrapes.acquire_permit(1).await else {
                return text(StatusCode::SERVICE_UNAVAILABLE, "shutting down\n");
            };
            let scrape = endpoint.gatherer.gather(shard).await;
            // Rendering a big scrape (tens of thousands of lag series) takes tens of
            // ms: done on glommio's blocking thread, so shard 0 keeps serving.
            let body = glommio::executor().spawn_blocking(move || render(scrape)).await;
            drop(permit);
            let mut r = Response::new(Full::new(Bytes::from(body)));
            r.headers_mut().insert(
                hyper::header::CONTENT_TYPE,
                hyper::header::HeaderValue::from_static(CONTENT_TYPE),
            );
            r
        }
        "/healthz" => text(StatusCode::OK, "ok\n"),
        "/readyz" if endpoint.ready() => text(StatusCode::OK, "ready\n"),
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// `GET path` over a plain socket: the status line and the body.
    fn get(port: u16, path: &str) -> (String, String) {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        let status = text.lines().next().unwrap_or_default().to_string();
        let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
        (status, body)
    }

    #[test]
    fn before_the_control_shard_recovered_only_health_answers_ok() {
        glommio::LocalExecutorBuilder::default()
            .spawn(|| async {
                let endpoint = Endpoint::new(2, Startup::default(), Shutdown::default());
                let listener = bind("127.0.0.1:0".parse().unwrap()).unwrap();
                let port = listener.local_addr().unwrap().port();
                glommio::spawn_local(run(endpoint, listener)).detach();
                let answers = glommio::executor()
                    .spawn_blocking(move || {
                        ["/healthz", "/readyz", "/metrics", "/nope"].map(|p| get(port, p))
                    })
                    .await;
                let status = |i: usize| answers[i].0.as_str();
                assert_eq!(status(0), "HTTP/1.1 200 OK");
                assert_eq!(answers[0].1, "ok\n");
                assert_eq!(status(1), "HTTP/1.1 503 Service Unavailable");
                assert_eq!(status(2), "HTTP/1.1 503 Service Unavailable");
                assert_eq!(answers[2].1, "recovering the logs\n");
                assert_eq!(status(3), "HTTP/1.1 404 Not Found");
            })
            .unwrap()
            .join()
            .unwrap();
    }
}

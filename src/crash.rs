//! What a panic reports and what it does. A shard that panicked has lost its tasks and
//! the partitions it owned, so the broker must not go on with it: the panic hook logs
//! the panic with the request that was being worked on (API key and version,
//! correlation id, client id, peer) and aborts the process (exit by SIGABRT, non-zero;
//! what was acknowledged is on disk as after a `kill -9`, which recovery handles).
//!
//! The request is known through a per-thread label that [`Labeled`] sets while it
//! polls a request's future; every core runs one executor thread, so the label is the
//! request whose code was running when the panic happened.

use std::cell::Cell;
use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

thread_local! {
    static CURRENT: Cell<Option<Rc<Label>>> = const { Cell::new(None) };
}

/// What a panic report says about the work that was running.
#[derive(Debug, Clone)]
pub enum Label {
    /// A client's request, on the core whose connection read it.
    Request {
        api_key: i16,
        api_version: i16,
        correlation_id: i32,
        client_id: String,
        peer: Option<SocketAddr>,
    },
    /// A message from another shard (`from`: its index in the mesh).
    ShardMessage { from: usize, kind: &'static str },
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Label::Request { api_key, api_version, correlation_id, client_id, peer } => {
                let peer = peer.map_or_else(|| "unknown".to_string(), |p| p.to_string());
                write!(
                    f,
                    "request api_key={api_key} api_version={api_version} \
                     correlation_id={correlation_id} client_id={client_id:?} peer={peer}"
                )
            }
            Label::ShardMessage { from, kind } => write!(f, "{kind} message from shard {from}"),
        }
    }
}

pin_project_lite::pin_project! {
    /// A future that is `label`'s work: while it is polled, a panic report names it.
    pub struct Labeled<F> {
        label: Rc<Label>,
        #[pin]
        inner: F,
    }
}

impl<F> Labeled<F> {
    pub fn new(label: Rc<Label>, inner: F) -> Self {
        Labeled { label, inner }
    }
}

impl<F: Future> Future for Labeled<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let outer = CURRENT.with(|c| c.replace(Some(this.label.clone())));
        let result = this.inner.poll(cx);
        // Not reached after a panic: the hook aborts first, and reads the label.
        CURRENT.with(|c| c.set(outer));
        result
    }
}

/// The label of the work this thread is polling now, as text.
pub fn current() -> Option<String> {
    CURRENT.with(|c| {
        let label = c.take();
        let text = label.as_ref().map(|l| l.to_string());
        c.set(label);
        text
    })
}

/// Installs the panic hook: log the panic (message, location, thread, the labelled
/// request if any) at error level, then abort the process.
pub fn install_hook() {
    std::panic::set_hook(Box::new(|info| {
        let thread = std::thread::current();
        let working_on = current().unwrap_or_else(|| "no request".to_string());
        tracing::error!(
            thread = thread.name().unwrap_or("unnamed"),
            working_on = %working_on,
            "panic: {info}; aborting, since a shard cannot go on without its tasks"
        );
        std::process::abort();
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_label_is_set_only_while_the_future_is_polled() {
        let label = Rc::new(Label::Request {
            api_key: 0,
            api_version: 9,
            correlation_id: 7,
            client_id: "producer-1".into(),
            peer: Some("127.0.0.1:5000".parse().unwrap()),
        });
        let seen = futures_lite::future::block_on(Labeled::new(label, async { current() }));
        assert_eq!(
            seen.as_deref(),
            Some(
                "request api_key=0 api_version=9 correlation_id=7 client_id=\"producer-1\" \
                 peer=127.0.0.1:5000"
            )
        );
        assert_eq!(current(), None);
    }

    #[test]
    fn an_inner_label_gives_way_to_the_outer_one_when_done() {
        let outer = Rc::new(Label::ShardMessage { from: 1, kind: "data" });
        let inner = Rc::new(Label::ShardMessage { from: 0, kind: "control" });
        let seen = futures_lite::future::block_on(Labeled::new(outer, async move {
            let inside = Labeled::new(inner, async { current() }).await;
            (inside, current())
        }));
        assert_eq!(seen.0.as_deref(), Some("control message from shard 0"));
        assert_eq!(seen.1.as_deref(), Some("data message from shard 1"));
    }
}

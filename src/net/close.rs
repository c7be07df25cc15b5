//! Why the broker closes a client connection: each reason is counted in the shard's
//! metrics (`shardlog_connections_closed_by_broker_total{reason}`), and its warning is
//! rate-limited per shard, so that a flood of bad clients cannot flood the log.

use std::cell::RefCell;
use std::time::{Duration, Instant};

/// A reason the broker closes a connection (or refuses a new one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CloseReason {
    /// A frame length below 0 or above `--max-request-bytes`.
    BadFrameLength,
    /// A request header that does not decode.
    BadRequestHeader,
    /// An unknown API key, an unsupported version or a body that does not decode.
    RequestRefused,
    /// A response that could not be encoded (a bug; logged as an error, never limited).
    EncodingFailed,
    /// The client took no byte of its responses for `--connections-max-idle-ms`.
    StoppedReading,
    /// Over `--max-connections-per-ip`.
    TooManyConnectionsPerIp,
    /// An acks=0 produce request failed for some partition: without a response, closing
    /// the connection is how the client learns (Kafka does the same).
    ProduceFailedWithoutAcks,
    /// On a SASL listener: a request outside the SASL exchange before authentication,
    /// a failed authentication or an unsupported mechanism (after its answer), or a
    /// session past `--connections-max-reauth-ms` (KIP-368).
    Sasl,
    /// On an SSL or SASL_SSL listener: the TLS handshake failed (not TLS, no common
    /// version or cipher suite, a client certificate missing or not verified) or was
    /// not completed within `--connections-max-idle-ms`.
    TlsHandshake,
}

impl CloseReason {
    /// The `reason` label value.
    pub fn name(self) -> &'static str {
        match self {
            CloseReason::BadFrameLength => "bad_frame_length",
            CloseReason::BadRequestHeader => "bad_request_header",
            CloseReason::RequestRefused => "request_refused",
            CloseReason::EncodingFailed => "encoding_failed",
            CloseReason::StoppedReading => "stopped_reading",
            CloseReason::TooManyConnectionsPerIp => "too_many_connections_per_ip",
            CloseReason::ProduceFailedWithoutAcks => "produce_failed_without_acks",
            CloseReason::Sasl => "sasl",
            CloseReason::TlsHandshake => "tls_handshake",
        }
    }
}

/// Warnings about closed connections one shard logs per [`WINDOW`]; the rest are
/// counted and summed up in one line when the next window starts.
pub const BURST: u32 = 20;
/// The rate limit's window.
pub const WINDOW: Duration = Duration::from_secs(10);

/// The rate limit of one shard's connection warnings. Lives on that shard (a
/// thread-local).
#[derive(Debug)]
struct Limit {
    started: Instant,
    logged: u32,
    suppressed: u64,
}

thread_local! {
    static LIMIT: RefCell<Limit> =
        RefCell::new(Limit { started: Instant::now(), logged: 0, suppressed: 0 });
}

/// Counts a connection closed for `reason` and says whether to log it (at most
/// [`BURST`] per [`WINDOW`] on this shard; an encoding failure always is).
pub fn closing(reason: CloseReason) -> bool {
    crate::metrics::with(|m| m.closed_by_broker(reason.name()));
    if reason == CloseReason::EncodingFailed {
        return true;
    }
    LIMIT.with(|l| allow(&mut l.borrow_mut(), Instant::now()))
}

/// The rate limit's decision at `now`; logs the summary of a window that suppressed
/// warnings when the next one starts.
fn allow(l: &mut Limit, now: Instant) -> bool {
    if now.duration_since(l.started) >= WINDOW {
        if l.suppressed > 0 {
            tracing::warn!(
                suppressed = l.suppressed,
                window_s = WINDOW.as_secs(),
                "more connections were closed than logged (see \
                 shardlog_connections_closed_by_broker_total)"
            );
        }
        *l = Limit { started: now, logged: 0, suppressed: 0 };
    }
    if l.logged < BURST {
        l.logged += 1;
        true
    } else {
        l.suppressed += 1;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_is_logged_then_counted_until_the_next_window() {
        let t0 = Instant::now();
        let mut l = Limit { started: t0, logged: 0, suppressed: 0 };
        let logged = (0..BURST + 5).filter(|_| allow(&mut l, t0)).count();
        assert_eq!(logged, BURST as usize);
        assert_eq!(l.suppressed, 5);
        assert!(allow(&mut l, t0 + WINDOW));
        assert_eq!((l.logged, l.suppressed), (1, 0));
    }
}

//! How many bytes a connection's socket must hold before its reader is woken: the
//! socket's `SO_RCVLOWAT`, set from what the reader still needs of the frame it is
//! reading.
//!
//! A reader that has read what arrived and must wait for more registers a readiness
//! poll (glommio `poll_read`). By default Linux wakes it for every segment that
//! arrives (`tcp_data_ready`), so a client that sends a large request in small pieces
//! costs one wake-up, `recv` and re-armed poll per piece. librdkafka over TLS writes
//! one TLS record per message (about 1 KiB with 1 KiB records): measured on a 2 GB
//! produce, the broker did a `recv` per 2 KiB (a million of them) and spent 3.9
//! CPU-s/GB against 0.55 on plain TCP. With the low-water mark at what the frame still
//! needs (at most `--receive-lowat-bytes`), the kernel wakes the reader once that much is
//! there (`tcp_epollin_ready`; also when its receive buffer is under pressure or the
//! window is nearly closed, so a mark that is too high delays, never deadlocks).
//!
//! The mark must never exceed what the peer will certainly send: plain TCP uses the
//! exact bytes missing from the frame; TLS subtracts one record's plaintext (rustls
//! may hold part of a record already, see [`super::tls`]). Waits for a new frame's
//! length prefix go back to 1 byte.
//!
//! The default mark is 8 KiB (`--receive-lowat-bytes 8192`, the smallest that is set):
//! librdkafka over TLS then costs 2.2x less broker CPU per GB at 17% more throughput
//! (2026-12-05, three alternating runs and two bench subsets). Higher marks trade its
//! throughput for CPU when the client's congestion control is BBR over loopback (-15%
//! at 12 KiB, -28 to -40% at 32 KiB; +8% at 32 KiB on cubic): BBR's window, in
//! packets, is small at a loopback RTT, and the receiver's ACKs are delayed while
//! unread bytes shrink its window.

use std::os::fd::RawFd;

/// Below this many missing bytes the mark stays at 1: a wake-up or two saved would not
/// pay for the `setsockopt` calls that raise and lower it.
pub const MIN_RCVLOWAT: usize = 8 << 10;

/// The low-water mark of one socket as last set (1, the kernel's default, until then).
#[derive(Debug)]
pub struct RcvLowat {
    current: usize,
    /// Highest mark to set, bytes (`--receive-lowat-bytes`); below [`MIN_RCVLOWAT`]
    /// the mark is never raised.
    max: usize,
}

impl RcvLowat {
    /// A socket's mark, at the kernel's default until a wait raises it (up to `max`
    /// bytes).
    pub fn new(max: usize) -> RcvLowat {
        RcvLowat { current: 1, max }
    }

    /// The mark to set before waiting for `missing` more bytes: 1 below
    /// [`MIN_RCVLOWAT`] (or when `max` is), else `missing` up to `max`.
    pub fn target(&self, missing: usize) -> usize {
        if missing < MIN_RCVLOWAT || self.max < MIN_RCVLOWAT {
            1
        } else {
            missing.min(self.max)
        }
    }

    /// The mark now in effect, bytes.
    pub fn current(&self) -> usize {
        self.current
    }

    /// Sets the mark of socket `fd` for a reader about to wait for `missing` more bytes
    /// ([`RcvLowat::target`]); one `setsockopt` only when the mark changes. A socket that
    /// refuses keeps the old mark (correct either way: the mark only saves wake-ups).
    pub fn before_wait(&mut self, fd: RawFd, missing: usize) {
        let target = self.target(missing);
        if target == self.current {
            return;
        }
        let value = target as nix::libc::c_int;
        // SAFETY: `value` outlives the call and its size is passed with it.
        let rc = unsafe {
            nix::libc::setsockopt(
                fd,
                nix::libc::SOL_SOCKET,
                nix::libc::SO_RCVLOWAT,
                (&value as *const nix::libc::c_int).cast(),
                std::mem::size_of::<nix::libc::c_int>() as nix::libc::socklen_t,
            )
        };
        if rc == 0 {
            self.current = target;
        } else {
            tracing::debug!(error = %std::io::Error::last_os_error(), target, "SO_RCVLOWAT not set");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsRawFd;

    const MAX: usize = 32 << 10;

    #[test]
    fn target_is_one_below_the_minimum_and_capped_above() {
        let mark = RcvLowat::new(MAX);
        assert_eq!(mark.target(0), 1);
        assert_eq!(mark.target(4), 1);
        assert_eq!(mark.target(MIN_RCVLOWAT - 1), 1);
        assert_eq!(mark.target(MIN_RCVLOWAT), MIN_RCVLOWAT);
        assert_eq!(mark.target(20_000), 20_000);
        assert_eq!(mark.target(MAX + 1), MAX);
        assert_eq!(mark.target(1 << 30), MAX);
        // --receive-lowat-bytes 0 (or below the minimum): never raised.
        assert_eq!(RcvLowat::new(0).target(1 << 20), 1);
        assert_eq!(RcvLowat::new(MIN_RCVLOWAT - 1).target(1 << 20), 1);
    }

    fn socket_lowat(fd: RawFd) -> i32 {
        let mut value: nix::libc::c_int = 0;
        let mut len = std::mem::size_of::<nix::libc::c_int>() as nix::libc::socklen_t;
        // SAFETY: `value` and `len` outlive the call.
        let rc = unsafe {
            nix::libc::getsockopt(
                fd,
                nix::libc::SOL_SOCKET,
                nix::libc::SO_RCVLOWAT,
                (&mut value as *mut nix::libc::c_int).cast(),
                &mut len,
            )
        };
        assert_eq!(rc, 0);
        value
    }

    /// The mark reaches the socket, goes back to 1 for a small wait, and a socket whose
    /// mark is high still wakes a poll once that many bytes are there, not before.
    #[test]
    fn mark_is_set_on_the_socket_and_poll_waits_for_it() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        let fd = server.as_raw_fd();
        let mut mark = RcvLowat::new(MAX);
        assert_eq!(socket_lowat(fd), 1);
        mark.before_wait(fd, 20_000);
        assert_eq!((mark.current(), socket_lowat(fd)), (20_000, 20_000));
        mark.before_wait(fd, 1 << 20);
        assert_eq!((mark.current(), socket_lowat(fd)), (MAX, MAX as i32));

        let readable = |timeout_ms: i32| {
            let mut p = nix::libc::pollfd { fd, events: nix::libc::POLLIN, revents: 0 };
            // SAFETY: one valid pollfd.
            unsafe { nix::libc::poll(&mut p, 1, timeout_ms) }
        };
        client.write_all(&vec![1u8; MAX - 1]).unwrap();
        assert_eq!(readable(100), 0, "woken below the mark");
        client.write_all(&[1u8]).unwrap();
        assert_eq!(readable(5_000), 1, "not woken at the mark");

        mark.before_wait(fd, 4);
        assert_eq!((mark.current(), socket_lowat(fd)), (1, 1));
    }
}

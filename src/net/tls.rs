//! One TLS connection (SSL and SASL_SSL listeners): a rustls `ServerConnection` over
//! the connection's TCP stream, driven on the connection's own shard by its tasks (the
//! handshake by [`TlsStream::handshake`] before the reader and writer start, then the
//! decryption by the reader and the encryption by the writer, through
//! [`super::split::Half`]).
//!
//! I/O is non-blocking `recv` / `sendmsg` on the socket; when it would block, glommio's
//! `poll_read` / `poll_write` waits for readiness (and moves the first byte). Received
//! ciphertext goes through a per-connection buffer of [`CIPHERTEXT_CHUNK`] bytes (rustls
//! takes at most 4 KiB per `read_tls`, so reading the socket through it would cost a
//! syscall per 4 KiB). Plaintext written is encrypted into TLS records of up to 16 KiB
//! that span the response's parts (one record per part would cost a record header and
//! tag per small part), at most [`SEND_BUFFER_BYTES`] before they are sent.

use std::io::{self, IoSlice, Read, Write};
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, RawFd};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use futures_lite::{AsyncRead, AsyncWrite};
use glommio::net::TcpStream;
use nix::sys::socket::{sendmsg, MsgFlags};
use rustls::{ServerConfig, ServerConnection};

/// Bytes of ciphertext one `recv` asks the socket for.
pub const CIPHERTEXT_CHUNK: usize = 64 * 1024;

/// Most ciphertext bytes encrypted and not yet sent (rustls' default is 64 KiB).
pub const SEND_BUFFER_BYTES: usize = 256 * 1024;

/// A TLS server connection over a TCP stream.
pub struct TlsStream {
    tcp: TcpStream,
    conn: ServerConnection,
    /// Ciphertext received and not yet given to rustls: `inbox[start..end]`.
    inbox: Box<[u8]>,
    start: usize,
    end: usize,
}

impl TlsStream {
    /// Starts a server connection over `tcp` (nothing is read or written yet).
    pub fn new(tcp: TcpStream, config: Arc<ServerConfig>) -> Result<Self, rustls::Error> {
        let mut conn = ServerConnection::new(config)?;
        conn.set_buffer_limit(Some(SEND_BUFFER_BYTES));
        Ok(TlsStream { tcp, conn, inbox: vec![0u8; CIPHERTEXT_CHUNK].into(), start: 0, end: 0 })
    }

    /// The TCP stream under the TLS.
    pub fn tcp(&self) -> &TcpStream {
        &self.tcp
    }

    /// The TCP stream under the TLS, to close it.
    pub fn tcp_mut(&mut self) -> &mut TcpStream {
        &mut self.tcp
    }

    /// The DER of the client's verified certificate, leaf first; `None` when it sent
    /// none (or before the handshake).
    pub fn peer_leaf_certificate(&self) -> Option<&[u8]> {
        self.conn.peer_certificates().and_then(|c| c.first()).map(|c| c.as_ref())
    }

    /// Runs the handshake to its end (its last flight written). Errors: the peer's
    /// bytes are not TLS, the handshake failed (no common version or cipher, a client
    /// certificate that does not verify or is missing when required; the alert is sent
    /// first when the socket takes it), or the socket's error, or end of stream.
    pub async fn handshake(&mut self) -> io::Result<()> {
        std::future::poll_fn(|cx| self.poll_handshake(cx)).await
    }

    fn poll_handshake(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        loop {
            ready!(self.poll_flush_tls(cx))?;
            if !self.conn.is_handshaking() {
                return Poll::Ready(Ok(()));
            }
            if self.start == self.end && ready!(self.poll_fill(cx))? == 0 {
                return Poll::Ready(Err(io::ErrorKind::UnexpectedEof.into()));
            }
            self.feed()?;
        }
    }

    /// Gives rustls the buffered ciphertext (as much as it takes) and processes it. On a
    /// TLS error the alert rustls queued is sent if the socket takes it at once.
    fn feed(&mut self) -> io::Result<Fed> {
        if self.start < self.end {
            let mut pending = &self.inbox[self.start..self.end];
            let n = self.conn.read_tls(&mut pending)?;
            self.start += n;
        }
        match self.conn.process_new_packets() {
            Ok(state) => Ok(Fed {
                plaintext: state.plaintext_bytes_to_read(),
                peer_closed: state.peer_has_closed(),
            }),
            Err(e) => {
                let _ = self.try_flush_now();
                Err(io::Error::new(io::ErrorKind::InvalidData, e))
            }
        }
    }

    /// Reads more ciphertext into the (empty) inbox: one non-blocking `recv`, or when
    /// nothing is there, glommio's wait for one byte. Returns the bytes read, 0 at end of
    /// stream.
    fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        self.start = 0;
        self.end = 0;
        let fd = self.tcp.as_raw_fd();
        // SAFETY: `recv` writes at most `inbox.len()` bytes into memory we own.
        let n = unsafe {
            nix::libc::recv(
                fd,
                self.inbox.as_mut_ptr().cast(),
                self.inbox.len(),
                nix::libc::MSG_DONTWAIT,
            )
        };
        let n = if n >= 0 {
            n as usize
        } else {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::WouldBlock {
                return Poll::Ready(Err(e));
            }
            ready!(Pin::new(&mut self.tcp).poll_read(cx, &mut self.inbox[..1]))?
        };
        self.end = n;
        Poll::Ready(Ok(n))
    }

    /// Reads decrypted bytes into `spare` (see `Half::poll_read_uninit`), as many as the
    /// received ciphertext holds; 0 at the end of the stream (the peer's close_notify or
    /// the TCP end).
    pub fn poll_read_uninit(
        &mut self,
        cx: &mut Context<'_>,
        spare: &mut [MaybeUninit<u8>],
    ) -> Poll<io::Result<usize>> {
        let mut filled = 0;
        while filled < spare.len() {
            let Fed { plaintext, peer_closed } = self.feed()?;
            if plaintext > 0 {
                let k = plaintext.min(spare.len() - filled);
                let dst = &mut spare[filled..filled + k];
                dst.fill(MaybeUninit::new(0));
                // SAFETY: these `k` bytes were just initialised.
                let dst: &mut [u8] = unsafe { &mut *(dst as *mut [MaybeUninit<u8>] as *mut [u8]) };
                filled += self.conn.reader().read(dst)?;
                continue;
            }
            if self.start < self.end {
                continue;
            }
            if filled > 0 {
                break;
            }
            // Anything rustls wants to say back (a KeyUpdate's answer) goes out when the
            // socket takes it now, else with the next response.
            if self.conn.wants_write() {
                let _ = self.try_flush_now();
            }
            if peer_closed || ready!(self.poll_fill(cx))? == 0 {
                return Poll::Ready(Ok(0));
            }
        }
        Poll::Ready(Ok(filled))
    }

    /// Encrypts what of `bufs` fits in the send buffer and returns how many plaintext
    /// bytes it took; sends queued records first when the buffer is full.
    pub fn poll_write_vectored(
        &mut self,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        loop {
            let n = self.conn.writer().write_vectored(bufs)?;
            if n > 0 || bufs.iter().all(|b| b.is_empty()) {
                return Poll::Ready(Ok(n));
            }
            ready!(self.poll_flush_tls(cx))?;
        }
    }

    /// Sends every queued TLS record; Pending while the socket is full.
    pub fn poll_flush_tls(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.conn.wants_write() {
            let mut socket = Socket { tcp: &mut self.tcp, cx: Some(cx) };
            match self.conn.write_tls(&mut socket) {
                Ok(0) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Poll::Pending,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
        Poll::Ready(Ok(()))
    }

    /// Sends what the socket takes of the queued records now, without waiting.
    fn try_flush_now(&mut self) -> io::Result<()> {
        while self.conn.wants_write() {
            let mut socket = Socket { tcp: &mut self.tcp, cx: None };
            match self.conn.write_tls(&mut socket) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(_) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Queues a close_notify and sends it if the socket takes it now.
    pub fn close_notify(&mut self) {
        self.conn.send_close_notify();
        let _ = self.try_flush_now();
    }
}

/// What rustls holds after [`TlsStream::feed`].
struct Fed {
    /// Decrypted bytes ready to read.
    plaintext: usize,
    /// The peer sent its close_notify.
    peer_closed: bool,
}

/// The socket as rustls writes TLS records into it: one non-blocking `sendmsg` of the
/// records; when the socket is full, `WouldBlock`, after glommio's `poll_write`
/// registered the waker (when there is a `cx`; a byte it manages to send is counted).
struct Socket<'a, 'b> {
    tcp: &'a mut TcpStream,
    cx: Option<&'a mut Context<'b>>,
}

impl Write for Socket<'_, '_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_vectored(&[IoSlice::new(buf)])
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        let fd: RawFd = self.tcp.as_raw_fd();
        match sendmsg::<()>(fd, bufs, &[], MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_NOSIGNAL, None) {
            Ok(n) => Ok(n),
            Err(nix::errno::Errno::EAGAIN) => {
                let Some(cx) = self.cx.as_mut() else {
                    return Err(io::ErrorKind::WouldBlock.into());
                };
                let first = bufs.iter().find(|b| !b.is_empty()).map_or(&[][..], |b| &b[..]);
                match Pin::new(&mut *self.tcp).poll_write(cx, first) {
                    Poll::Ready(result) => result,
                    Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
                }
            }
            Err(e) => Err(e.into()),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

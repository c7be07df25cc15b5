//! Read and write halves of one connection's [`Transport`] (plain TCP, or TLS over
//! TCP), for the reader and writer of the connection on the same core. Each half
//! borrows the transport only inside a single `poll_*` call, never across an `.await`.
//! On plain TCP a read is one `recv` into the caller's buffer and a write one `sendmsg`
//! of the response's parts; on TLS the same go through [`super::tls::TlsStream`].

use std::cell::RefCell;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{ready, Context, Poll};

use std::io::IoSlice;
use std::os::fd::AsRawFd;

use futures_lite::AsyncWrite;
use glommio::net::TcpStream;
use nix::sys::socket::{sendmsg, MsgFlags};

use super::rcvlowat::RcvLowat;
use super::recv::Receiver;
use super::tls::TlsStream;

/// What a connection's bytes travel over.
pub enum Transport {
    /// PLAINTEXT and SASL_PLAINTEXT listeners.
    Plain(TcpStream),
    /// SSL and SASL_SSL listeners (boxed: the rustls state is large).
    Tls(Box<TlsStream>),
}

impl Transport {
    /// The TCP stream underneath.
    pub fn tcp(&self) -> &TcpStream {
        match self {
            Transport::Plain(s) => s,
            Transport::Tls(t) => t.tcp(),
        }
    }
}

/// The reading half of a transport shared by the two tasks of a connection (one core
/// only): the connection's reader, with the socket's receive state.
pub struct ReadHalf {
    transport: Rc<RefCell<Transport>>,
    /// The socket's receive low-water mark (set by reads only).
    lowat: RcvLowat,
    /// The plain socket's reading side (a TLS stream keeps its own).
    receiver: Receiver,
}

impl ReadHalf {
    /// The reading half of `transport`; its reads raise the socket's low-water mark up
    /// to `max_lowat` bytes (`--receive-lowat-bytes`; 0 never).
    pub fn new(transport: Rc<RefCell<Transport>>, max_lowat: usize) -> ReadHalf {
        ReadHalf { transport, lowat: RcvLowat::new(max_lowat), receiver: Receiver::default() }
    }

    /// Reads into `spare` (uninitialised memory, e.g. a `BytesMut`'s spare capacity) and
    /// returns how many bytes were written to its front, 0 at end of stream. `missing`
    /// is how many bytes the caller still needs at least (of the frame it reads; 1 when
    /// any will do): a wait for data is woken only once the socket holds about that
    /// many ([`RcvLowat`]). Plain: one non-blocking `recv` straight into the buffer, so
    /// nothing has to be zero-filled first, and when it finds nothing a wait for
    /// readiness ([`Receiver`]). TLS: what the received ciphertext decrypts to
    /// ([`TlsStream::poll_read_uninit`]).
    pub fn poll_read_uninit(
        &mut self,
        cx: &mut Context<'_>,
        spare: &mut [std::mem::MaybeUninit<u8>],
        missing: usize,
    ) -> Poll<io::Result<usize>> {
        if spare.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let mut t = self.transport.borrow_mut();
        match &mut *t {
            Transport::Plain(s) => {
                let lowat = &mut self.lowat;
                self.receiver.poll_recv(cx, s, spare, |fd| lowat.before_wait(fd, missing))
            }
            Transport::Tls(tls) => tls.poll_read_uninit(cx, spare, missing, &mut self.lowat),
        }
    }

    /// Appends what one read returns to `buf`, growing it by up to `chunk` bytes of spare
    /// capacity first; returns the bytes read (0 at end of stream). `missing`: the
    /// bytes the caller needs at least (see [`ReadHalf::poll_read_uninit`]).
    pub async fn read_into(
        &mut self,
        buf: &mut bytes::BytesMut,
        chunk: usize,
        missing: usize,
    ) -> io::Result<usize> {
        buf.reserve(chunk);
        let n =
            std::future::poll_fn(|cx| self.poll_read_uninit(cx, buf.spare_capacity_mut(), missing))
                .await?;
        // SAFETY: `poll_read_uninit` initialised the first `n` bytes of the spare capacity.
        unsafe { buf.set_len(buf.len() + n) };
        Ok(n)
    }
}

/// The writing half of a transport shared by the two tasks of a connection (one core
/// only): the connection's writer.
pub struct WriteHalf {
    transport: Rc<RefCell<Transport>>,
}

impl WriteHalf {
    /// The writing half of `transport`.
    pub fn new(transport: Rc<RefCell<Transport>>) -> WriteHalf {
        WriteHalf { transport }
    }

    /// Whether the transport is TLS.
    pub fn is_tls(&self) -> bool {
        matches!(&*self.transport.borrow(), Transport::Tls(_))
    }
}

impl AsyncWrite for WriteHalf {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let mut t = self.transport.borrow_mut();
        match &mut *t {
            Transport::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Transport::Tls(tls) => tls.poll_write_vectored(cx, &[IoSlice::new(buf)]),
        }
    }
    /// Plain: one non-blocking `sendmsg` of every slice (a response's header and its
    /// record batches in one syscall, not one per piece); when the socket is full, falls
    /// back to glommio's `poll_write` of the first non-empty slice, which waits for
    /// room. TLS: encrypts what fits in the send buffer (sent by the next write or
    /// [`WriteHalf::poll_flush`]).
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let mut t = self.transport.borrow_mut();
        let s = match &mut *t {
            Transport::Plain(s) => s,
            Transport::Tls(tls) => return tls.poll_write_vectored(cx, bufs),
        };
        let fd = s.as_raw_fd();
        match sendmsg::<()>(fd, bufs, &[], MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_NOSIGNAL, None) {
            Ok(n) => Poll::Ready(Ok(n)),
            Err(nix::errno::Errno::EAGAIN) => {
                let first = bufs.iter().find(|b| !b.is_empty()).map_or(&[][..], |b| &b[..]);
                Pin::new(s).poll_write(cx, first)
            }
            Err(e) => Poll::Ready(Err(e.into())),
        }
    }
    /// Plain: nothing is buffered. TLS: sends every encrypted record.
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut t = self.transport.borrow_mut();
        match &mut *t {
            Transport::Plain(_) => Poll::Ready(Ok(())),
            Transport::Tls(tls) => tls.poll_flush_tls(cx),
        }
    }
    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut t = self.transport.borrow_mut();
        match &mut *t {
            Transport::Plain(s) => Pin::new(s).poll_close(cx),
            Transport::Tls(tls) => {
                ready!(tls.poll_flush_tls(cx))?;
                Pin::new(tls.tcp_mut()).poll_close(cx)
            }
        }
    }
}

/// Writes every byte of `parts`, in order, with as few `sendmsg` calls as the socket
/// allows (see [`WriteHalf::poll_write_vectored`]); over TLS the parts are encrypted
/// together (records of up to 16 KiB span parts) and every record is sent before this
/// returns. Errors: the socket's, or `TimedOut`
/// when the peer took nothing for `stall` (its receive window stayed full: a client
/// that stopped reading its responses); `stall` zero waits forever.
pub async fn write_all_parts(
    half: &mut WriteHalf,
    parts: &[bytes::Bytes],
    stall: std::time::Duration,
) -> io::Result<()> {
    let tls = half.is_tls();
    // TLS takes every part at once, so that small parts share records.
    let most = if tls { parts.len().max(1) } else { MAX_IOVECS };
    let mut index = 0; // first part not wholly written
    let mut offset = 0; // bytes of parts[index] already written
    while index < parts.len() {
        let slices: Vec<IoSlice<'_>> = std::iter::once(IoSlice::new(&parts[index][offset..]))
            .chain(parts[index + 1..].iter().take(most - 1).map(|p| IoSlice::new(p)))
            .collect();
        let write = futures_lite::AsyncWriteExt::write_vectored(half, &slices);
        let mut written = stalling(write, stall).await?;
        if written == 0 && slices.iter().any(|s| !s.is_empty()) {
            return Err(io::ErrorKind::WriteZero.into());
        }
        while index < parts.len() && written >= parts[index].len() - offset {
            written -= parts[index].len() - offset;
            index += 1;
            offset = 0;
        }
        offset += written;
    }
    if tls {
        // The last records encrypted are still queued.
        stalling(futures_lite::AsyncWriteExt::flush(half), stall).await?;
    }
    Ok(())
}

/// `io`, or `TimedOut` when it is still pending after `stall` (zero: never).
async fn stalling<T>(
    io: impl std::future::Future<Output = io::Result<T>>,
    stall: std::time::Duration,
) -> io::Result<T> {
    if stall.is_zero() {
        return io.await;
    }
    futures_lite::future::or(io, async {
        glommio::timer::sleep(stall).await;
        Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("the peer read nothing for {} ms", stall.as_millis()),
        ))
    })
    .await
}

/// Most slices passed to one `sendmsg` (below Linux's `UIO_MAXIOV`, 1024).
const MAX_IOVECS: usize = 256;

#[cfg(test)]
mod tests {
    use super::*;
    use futures_lite::AsyncReadExt;
    use glommio::net::TcpListener;

    /// Reads into spare capacity see every byte in order, including data that arrives
    /// only after the reader started waiting, and report the end of the stream as 0.
    #[test]
    fn read_into_appends_what_arrives_then_zero_at_end() {
        glommio::LocalExecutorBuilder::default()
            .spawn(|| async move {
                let listener = TcpListener::bind("127.0.0.1:0").unwrap();
                let addr = listener.local_addr().unwrap();
                let sent: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
                let to_send = sent.clone();
                let writer = glommio::spawn_local(async move {
                    let mut conn = listener.accept().await.unwrap();
                    for piece in to_send.chunks(70_000) {
                        glommio::timer::sleep(std::time::Duration::from_millis(5)).await;
                        futures_lite::AsyncWriteExt::write_all(&mut conn, piece).await.unwrap();
                    }
                    conn.shutdown(std::net::Shutdown::Write).await.unwrap();
                });
                let stream = TcpStream::connect(addr).await.unwrap();
                let mut half =
                    ReadHalf::new(Rc::new(RefCell::new(Transport::Plain(stream))), 32 << 10);
                let mut buf = bytes::BytesMut::new();
                loop {
                    let before = buf.len();
                    let n = half.read_into(&mut buf, 64 << 10, 1).await.unwrap();
                    assert_eq!(buf.len(), before + n);
                    if n == 0 {
                        break;
                    }
                }
                writer.await;
                assert_eq!(buf.len(), sent.len());
                assert!(buf[..] == sent[..], "bytes differ");
            })
            .unwrap()
            .join()
            .unwrap();
    }

    /// Parts of every size, more than one `sendmsg` takes, and more bytes than the socket
    /// buffers hold (so the full-socket fallback runs), arrive whole and in order.
    #[test]
    fn write_all_parts_sends_every_byte_in_order() {
        glommio::LocalExecutorBuilder::default()
            .spawn(|| async move {
                let listener = TcpListener::bind("127.0.0.1:0").unwrap();
                let addr = listener.local_addr().unwrap();
                let mut parts = Vec::new();
                let mut expected = Vec::new();
                for i in 0..600usize {
                    let len = match i % 4 {
                        0 => 0,
                        1 => 7,
                        2 => 1000,
                        _ => 40_000,
                    };
                    let part: Vec<u8> = (0..len).map(|j| (i * 31 + j) as u8).collect();
                    expected.extend_from_slice(&part);
                    parts.push(bytes::Bytes::from(part));
                }
                let reader = glommio::spawn_local(async move {
                    let mut conn = listener.accept().await.unwrap();
                    let mut got = Vec::new();
                    conn.read_to_end(&mut got).await.unwrap();
                    got
                });
                let stream = TcpStream::connect(addr).await.unwrap();
                let shared = Rc::new(RefCell::new(Transport::Plain(stream)));
                let mut half = WriteHalf::new(shared.clone());
                write_all_parts(&mut half, &parts, std::time::Duration::from_secs(30))
                    .await
                    .unwrap();
                drop(half);
                let Transport::Plain(stream) = Rc::try_unwrap(shared).ok().unwrap().into_inner()
                else {
                    unreachable!()
                };
                stream.shutdown(std::net::Shutdown::Write).await.unwrap();
                let got = reader.await;
                assert_eq!(got.len(), expected.len());
                assert!(got == expected, "bytes differ");
            })
            .unwrap()
            .join()
            .unwrap();
    }

    /// A peer that reads nothing: the write gives up with `TimedOut` once the socket
    /// buffers are full and nothing moved for the stall time.
    #[test]
    fn write_all_parts_times_out_when_the_peer_reads_nothing() {
        glommio::LocalExecutorBuilder::default()
            .spawn(|| async move {
                let listener = TcpListener::bind("127.0.0.1:0").unwrap();
                let addr = listener.local_addr().unwrap();
                let (hold_tx, hold_rx) = futures_channel::oneshot::channel::<()>();
                let peer = glommio::spawn_local(async move {
                    let _conn = listener.accept().await.unwrap();
                    let _ = hold_rx.await;
                });
                let stream = TcpStream::connect(addr).await.unwrap();
                let mut half = WriteHalf::new(Rc::new(RefCell::new(Transport::Plain(stream))));
                let parts = vec![bytes::Bytes::from(vec![7u8; 64 << 20])];
                let stall = std::time::Duration::from_millis(200);
                let started = std::time::Instant::now();
                let e = write_all_parts(&mut half, &parts, stall).await.unwrap_err();
                assert_eq!(e.kind(), io::ErrorKind::TimedOut);
                assert!(started.elapsed() >= stall);
                let _ = hold_tx.send(());
                peer.await;
            })
            .unwrap()
            .join()
            .unwrap();
    }
}

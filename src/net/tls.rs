//! One TLS connection (SSL and SASL_SSL listeners): a rustls `ServerConnection` over
//! the connection's TCP stream, driven on the connection's own shard by its tasks (the
//! handshake by [`TlsStream::handshake`] before the reader and writer start, then the
//! decryption by the reader and the encryption by the writer, through
//! [`super::split::ReadHalf`], [`super::split::WriteHalf`]).
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

use futures_lite::AsyncWrite;
use glommio::net::TcpStream;
use nix::sys::socket::{sendmsg, MsgFlags};
use rustls::{ServerConfig, ServerConnection};

use super::rcvlowat::RcvLowat;
use super::recv::Receiver;

/// Bytes of ciphertext one `recv` asks the socket for.
pub const CIPHERTEXT_CHUNK: usize = 64 * 1024;

/// Most plaintext bytes in one TLS record (2^14, RFC 8446 §5.1 and RFC 5246 §6.2.1).
pub const MAX_RECORD_PLAINTEXT: usize = 16 * 1024;

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
    /// The socket's reading side.
    receiver: Receiver,
}

impl TlsStream {
    /// Starts a server connection over `tcp` (nothing is read or written yet).
    pub fn new(tcp: TcpStream, config: Arc<ServerConfig>) -> Result<Self, rustls::Error> {
        let mut conn = ServerConnection::new(config)?;
        conn.set_buffer_limit(Some(SEND_BUFFER_BYTES));
        let inbox = vec![0u8; CIPHERTEXT_CHUNK].into();
        Ok(TlsStream { tcp, conn, inbox, start: 0, end: 0, receiver: Receiver::default() })
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
            if self.start == self.end && ready!(self.poll_fill(cx, None))? == 0 {
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

    /// Reads more ciphertext into the (empty) inbox: one non-blocking `recv`, and when
    /// it finds nothing a wait for readiness ([`Receiver`]), after setting the
    /// socket's low-water mark to `wait_for`'s bytes when given (else
    /// leaving it as it is). Returns the bytes read, 0 at end of stream.
    fn poll_fill(
        &mut self,
        cx: &mut Context<'_>,
        mut wait_for: Option<(&mut RcvLowat, usize)>,
    ) -> Poll<io::Result<usize>> {
        self.start = 0;
        self.end = 0;
        // SAFETY: the inbox is initialised memory; viewing it as `MaybeUninit` only
        // lets `recv` write into it.
        let inbox = unsafe { &mut *(&mut *self.inbox as *mut [u8] as *mut [MaybeUninit<u8>]) };
        let n = ready!(self.receiver.poll_recv(cx, &mut self.tcp, inbox, |fd| {
            if let Some((lowat, missing)) = wait_for.as_mut() {
                lowat.before_wait(fd, *missing);
            }
        }))?;
        self.end = n;
        Poll::Ready(Ok(n))
    }

    /// Reads decrypted bytes into `spare` (see `ReadHalf::poll_read_uninit`), as many as the
    /// received ciphertext holds; 0 at the end of the stream (the peer's close_notify or
    /// the TCP end). `missing`: plaintext bytes the caller needs at least; a wait for
    /// ciphertext sets `lowat` to what of it must still come from the socket (minus one
    /// record's plaintext, [`MAX_RECORD_PLAINTEXT`], which rustls may already hold part of).
    pub fn poll_read_uninit(
        &mut self,
        cx: &mut Context<'_>,
        spare: &mut [MaybeUninit<u8>],
        missing: usize,
        lowat: &mut RcvLowat,
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
            // Every plaintext byte still missing comes in a record whose ciphertext is
            // longer; only the record rustls holds part of may be partly read already.
            let from_socket = missing.saturating_sub(MAX_RECORD_PLAINTEXT);
            if peer_closed || ready!(self.poll_fill(cx, Some((lowat, from_socket))))? == 0 {
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

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::io::{Read, Write};
    use std::rc::Rc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use bytes::Bytes;
    use glommio::net::TcpListener;
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};

    use super::*;
    use crate::net::split::{write_all_parts, ReadHalf, Transport, WriteHalf};
    use crate::security::tls::{server_config, ClientAuth, TlsFiles};

    fn testdata(name: &str) -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/net/testdata").join(name)
    }

    /// The client's socket, counting the ciphertext bytes it reads.
    struct Counting(std::net::TcpStream, Arc<AtomicUsize>);

    impl Read for Counting {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.0.read(buf)?;
            self.1.fetch_add(n, Ordering::Relaxed);
            Ok(n)
        }
    }

    impl Write for Counting {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.write(buf)
        }
        fn flush(&mut self) -> io::Result<()> {
            self.0.flush()
        }
    }

    /// A rustls client with alice's certificate: sends `upload` (in TLS records of at
    /// most `piece` bytes, each sent on its own, with a 2 ms pause after every fourth),
    /// reads `want` bytes back after sending one more byte, and returns them with the
    /// ciphertext bytes that carried them.
    fn client(port: u16, upload: Vec<u8>, piece: usize, want: usize) -> (Vec<u8>, usize) {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_file_iter(testdata("test-only-ca.pem")).unwrap() {
            roots.add(cert.unwrap()).unwrap();
        }
        let alice = testdata("test-only-alice.pem");
        let chain: Vec<_> =
            CertificateDer::pem_file_iter(&alice).unwrap().map(|c| c.unwrap()).collect();
        let key = PrivateKeyDer::from_pem_file(&alice).unwrap();
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_client_auth_cert(chain, key)
            .unwrap();
        let name = ServerName::try_from("localhost").unwrap();
        let conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
        let counted = Arc::new(AtomicUsize::new(0));
        let tcp = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        tcp.set_nodelay(true).unwrap();
        let mut tls = rustls::StreamOwned::new(conn, Counting(tcp, counted.clone()));
        for (i, chunk) in upload.chunks(piece).enumerate() {
            tls.write_all(chunk).unwrap();
            tls.flush().unwrap();
            if i % 4 == 3 {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        }
        let mut ack = [0u8; 1];
        tls.read_exact(&mut ack).unwrap();
        let before = counted.load(Ordering::Relaxed);
        tls.write_all(b"!").unwrap();
        let mut got = vec![0u8; want];
        tls.read_exact(&mut got).unwrap();
        (got, counted.load(Ordering::Relaxed) - before)
    }

    /// The server side of [`client`]: accepts and completes the handshake.
    async fn accept(listener: &TcpListener) -> TlsStream {
        let stream = listener.accept().await.unwrap();
        let ca = testdata("test-only-ca.pem");
        let server = testdata("test-only-server.pem");
        let files = TlsFiles {
            keystore: &server,
            truststore: Some(&ca),
            client_auth: ClientAuth::Required,
        };
        let mut tls = TlsStream::new(stream, server_config(files).unwrap()).unwrap();
        tls.handshake().await.unwrap();
        tls
    }

    /// A 200,000-byte frame sent as 200 TLS records of 1,000 bytes, arriving in 50
    /// bursts: read with what the frame still lacks, it arrives whole; with the
    /// low-water mark (32 KiB at most) in about a dozen reads, with the mark off in one
    /// or more per burst. Returns the reads.
    fn frame_in_small_records(max_lowat: usize) -> usize {
        glommio::LocalExecutorBuilder::default()
            .spawn(move || async move {
                let listener = TcpListener::bind("127.0.0.1:0").unwrap();
                let port = listener.local_addr().unwrap().port();
                let upload: Vec<u8> = (0..200_000u32).map(|i| (i % 241) as u8).collect();
                let expected = upload.clone();
                let client = std::thread::spawn(move || client(port, upload, 1000, 1));
                let tls = accept(&listener).await;
                let shared = Rc::new(RefCell::new(Transport::Tls(Box::new(tls))));
                let mut half = ReadHalf::new(shared.clone(), max_lowat);
                let mut writer = WriteHalf::new(shared);
                let mut buf = bytes::BytesMut::new();
                let mut reads = 0;
                while buf.len() < expected.len() {
                    let missing = expected.len() - buf.len();
                    let n = half.read_into(&mut buf, 64 << 10, missing).await.unwrap();
                    assert!(n > 0, "end of stream after {} bytes", buf.len());
                    reads += 1;
                }
                assert!(buf[..] == expected[..], "bytes differ");
                let stall = std::time::Duration::from_secs(30);
                write_all_parts(&mut writer, &[Bytes::from_static(b"k")], stall).await.unwrap();
                let mut bang = bytes::BytesMut::new();
                half.read_into(&mut bang, 16, 1).await.unwrap();
                write_all_parts(&mut writer, &[Bytes::from_static(b"z")], stall).await.unwrap();
                assert_eq!(client.join().unwrap().0, b"z");
                reads
            })
            .unwrap()
            .join()
            .unwrap()
    }

    #[test]
    fn a_frame_in_small_records_wakes_the_reader_per_low_water_mark() {
        let with_mark = frame_in_small_records(32 << 10);
        // 200,000 - 16,384 bytes in reads of 32 KiB or more while 8 KiB or more must still
        // come from the socket, then at most the last 24 KiB in 1,000-byte records.
        assert!(with_mark <= 6 + 25, "{with_mark} reads with the mark");
        // The control: without the mark the same frame takes more reads than the bound
        // above, so that bound would catch a mark that did nothing. On an idle machine
        // that is one read per burst (50) or more; when the reader runs behind (a loaded
        // machine) bursts coalesce: 42 and 48 were seen beside another test run.
        let without = frame_in_small_records(0);
        assert!(without > 6 + 25, "{without} reads without the mark");
    }

    /// Over TLS with a required client certificate: the handshake names alice, 3 MB sent
    /// in one go arrive whole through the reader, and a response of 1,000 small parts
    /// leaves as one TLS record (not one per part).
    #[test]
    fn tls_reads_and_writes_through_the_halves() {
        glommio::LocalExecutorBuilder::default()
            .spawn(|| async move {
                let listener = TcpListener::bind("127.0.0.1:0").unwrap();
                let port = listener.local_addr().unwrap().port();
                let upload: Vec<u8> = (0..3_000_000u32).map(|i| (i % 253) as u8).collect();
                let expected = upload.clone();
                let parts: Vec<Bytes> =
                    (0..1000u32).map(|i| Bytes::from(format!("part{i:06}"))).collect();
                let response: Vec<u8> = parts.iter().flat_map(|p| p.to_vec()).collect();
                let want = response.len();
                let size = upload.len();
                let client = std::thread::spawn(move || client(port, upload, size, want));
                let tls = accept(&listener).await;
                let principal = crate::security::tls::principal(tls.peer_leaf_certificate());
                assert_eq!(principal.to_string(), "User:CN=alice,OU=eng,O=acme");

                let shared = Rc::new(RefCell::new(Transport::Tls(Box::new(tls))));
                let mut half = ReadHalf::new(shared.clone(), 32 << 10);
                let mut writer = WriteHalf::new(shared.clone());
                let mut buf = bytes::BytesMut::new();
                while buf.len() < expected.len() {
                    let n = half.read_into(&mut buf, 64 << 10, 1).await.unwrap();
                    assert!(n > 0, "end of stream after {} bytes", buf.len());
                }
                assert!(buf[..] == expected[..], "bytes differ");
                let stall = std::time::Duration::from_secs(30);
                write_all_parts(&mut writer, &[Bytes::from_static(b"k")], stall).await.unwrap();
                let mut bang = bytes::BytesMut::new();
                half.read_into(&mut bang, 16, 1).await.unwrap();
                assert_eq!(&bang[..], b"!");
                write_all_parts(&mut writer, &parts, stall).await.unwrap();

                let (got, ciphertext) = client.join().unwrap();
                assert_eq!(got, response);
                // One TLS 1.3 record: 5 header bytes, 1 content type byte, 16 tag bytes.
                assert_eq!(ciphertext, response.len() + 22);
            })
            .unwrap()
            .join()
            .unwrap();
    }
}

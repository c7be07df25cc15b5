//! Zero fill ahead of a segment's write position, so that appends overwrite blocks the
//! file already has instead of extending it.
//!
//! On ext4, an O_DIRECT write that extends the file (or lands in an unwritten extent, as
//! `fallocate` leaves it) cannot be issued without blocking, so io_uring hands every such
//! write to a kernel worker thread (`iou-wrk`): a thread wake-up and two context
//! switches per append. A write that only overwrites written blocks inside the file is
//! issued inline. So each active segment keeps a *frontier*: the file holds written
//! blocks (data, or zeros written here) up to it, and once the write position comes
//! within one chunk of it, one large zero write pushes it a chunk further, in the
//! background. One such write per chunk replaces a worker hand-off per append
//! (measured: the `iou-wrk` threads' share of broker CPU under kafka-producer-perf-test
//! went from ~18% to ~0).
//!
//! Zeros cost disk bandwidth (every byte is written twice) and save CPU per write, so a
//! segment gets them only while its writes are small: the average bytes per data write
//! (a moving average) must stay below a limit (`--zero-fill-max-write-bytes`). Producers
//! sending large batches (librdkafka's defaults) extend the file as before; measured, with
//! zeros their throughput dropped by a quarter on this machine's disk.
//!
//! Chunks grow with the segment (the written size rounded up to a power of two, from
//! [`MIN_CHUNK`] to [`MAX_CHUNK`]), so a quiet partition holds at most [`MIN_CHUNK`] of
//! zeros while the segment is small and a large one up to two [`MAX_CHUNK`]s; never past
//! the segment's size limit. The
//! zeros after the last batch are cut when the segment is rolled or closed, and by
//! recovery after a crash (a zero batch header is the end of the data).
//!
//! Invariant: a data write never overlaps a zero write in flight (it waits for it), so
//! zeros never land on data. A failed zero write only turns the zero fill of its segment
//! off. Up to about two chunks (8 MiB) of zeros can sit ahead of the data: a new chunk
//! is added when less than one is left.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::io;
use std::rc::Rc;

use glommio::io::{DmaBuffer, DmaFile};
use glommio::task::JoinHandle;

/// Smallest zero write, bytes.
pub const MIN_CHUNK: u64 = 64 << 10;
/// Largest zero write, bytes.
pub const MAX_CHUNK: u64 = 4 << 20;

thread_local! {
    /// One zeroed DMA buffer per chunk size, reused by every segment of the shard
    /// (written with `write_rc_at`, never modified).
    static ZEROS: RefCell<HashMap<u64, Rc<DmaBuffer>>> = RefCell::default();
}

/// The zero fill state of one segment file.
#[derive(Debug, Default)]
pub struct ZeroFill {
    /// File position (bytes) up to which the file holds written blocks, or zeros are
    /// being written.
    frontier: Cell<u64>,
    /// The zero write in flight: its start position and its task.
    inflight: RefCell<Option<(u64, JoinHandle<io::Result<()>>)>>,
    /// Moving average of the bytes each data write added, times 8 (weight 1/8 per write).
    avg_write_x8: Cell<u64>,
    /// A zero write failed (say, ENOSPC): no more for this segment. Zeros are only an
    /// optimisation, so their failure never fails the log; data writes report their own.
    off: Cell<bool>,
    /// The partition's log name (`topic-partition`), for warnings.
    log: String,
}

impl ZeroFill {
    /// A fill state for a file of the log `log` (`topic-partition`, named in warnings)
    /// whose written blocks end at `len` bytes.
    pub fn new(len: u64, log: String) -> ZeroFill {
        ZeroFill { frontier: Cell::new(len), log, ..ZeroFill::default() }
    }

    /// Sets the frontier after the file was truncated to `len` bytes (no write in flight).
    pub fn truncated(&self, len: u64) {
        self.frontier.set(len);
    }

    /// Call before a data write ending at file position `end` (exclusive, bytes): waits
    /// for the zero write in flight if the data write would overlap it.
    pub async fn before_write(&self, end: u64) {
        let overlaps = matches!(&*self.inflight.borrow(), Some((start, _)) if end > *start);
        if overlaps {
            self.settle().await;
        }
    }

    /// Call after a data write that added `written` bytes and ended at file position
    /// `end`: moves the frontier past it and, when fewer than one chunk of zeros is left
    /// ahead, no zero write is in flight and the average write is below `max_write`
    /// bytes, starts the next zero write, stopping at `limit` (the segment's size limit,
    /// rounded up to the DMA alignment).
    pub fn after_write(
        &self,
        file: &Rc<DmaFile>,
        written: u64,
        end: u64,
        limit: u64,
        max_write: u64,
    ) {
        let avg = self.avg_write_x8.get();
        let avg = if avg == 0 { written * 8 } else { avg - avg / 8 + written };
        self.avg_write_x8.set(avg);
        let frontier = self.frontier.get().max(end);
        self.frontier.set(frontier);
        if avg / 8 >= max_write
            || self.off.get()
            || self.inflight.borrow().is_some()
            || frontier >= limit
            || !frontier.is_multiple_of(file.alignment())
        {
            return;
        }
        let chunk = end.next_power_of_two().clamp(MIN_CHUNK, MAX_CHUNK);
        if frontier - end >= chunk {
            return;
        }
        let len = chunk.min(limit - frontier);
        let zeros = zero_buffer(file, len as usize);
        let file = file.clone();
        let task = glommio::spawn_local(async move {
            let n = file.write_rc_at(zeros, frontier).await.map_err(io::Error::from)?;
            if (n as u64) < len {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    format!("short zero fill write: {n} of {len} bytes"),
                ));
            }
            Ok(())
        });
        *self.inflight.borrow_mut() = Some((frontier, task.detach()));
        self.frontier.set(frontier + len);
    }

    /// Waits for the zero write in flight, if any (before a data write that overlaps
    /// it, a truncate or a close). A failed zero write is logged and turns the zero fill
    /// of this segment off; the data writes that follow extend the file as without it.
    pub async fn settle(&self) {
        let inflight = self.inflight.borrow_mut().take();
        if let Some((start, task)) = inflight {
            if let Some(Err(e)) = task.await {
                tracing::warn!(
                    partition = %self.log,
                    position = start,
                    error = %e,
                    "zero fill write failed; appends to this segment extend the file instead"
                );
                self.off.set(true);
            }
        }
    }
}

/// A zeroed buffer of `len` bytes (a multiple of the DMA alignment); the shard keeps
/// one per power-of-two size.
fn zero_buffer(file: &DmaFile, len: usize) -> Rc<DmaBuffer> {
    let fresh = || {
        let mut b = file.alloc_dma_buffer(len);
        b.as_bytes_mut().fill(0);
        Rc::new(b)
    };
    if !len.is_power_of_two() {
        return fresh();
    }
    ZEROS.with(|z| z.borrow_mut().entry(len as u64).or_insert_with(fresh).clone())
}

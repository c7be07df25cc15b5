//! One segment of a partition log: a DMA (O_DIRECT) `.log` file of verbatim v2 batches
//! named by its 20-digit base offset, plus its in-memory sparse indexes (persisted as
//! `.index` / `.timeindex`). Lives on the partition's owning shard only.

use std::cell::{Cell, RefCell};
use std::io;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use futures_util::future::{FutureExt, Shared};
use glommio::io::{DmaFile, OpenOptions};
use glommio::task::JoinHandle;

use super::arena::{shard_pool, ReadBuf};
use super::index::{OffsetIndex, TimeIndex};
use super::zero_fill::ZeroFill;
use crate::metrics::Timed;
use crate::protocol::batch::{
    BatchIter, BatchScan, RecordBatchHeader, ScanStop, RECORD_BATCH_OVERHEAD,
};

/// Bytes read per DMA read when scanning a segment.
const SCAN_CHUNK: usize = 1 << 20;
/// Smallest read when walking headers for a fetch.
const MIN_READ: usize = 64 << 10;

/// `<dir>/<20-digit base offset>.<ext>`.
pub fn segment_path(dir: &Path, base_offset: i64, ext: &str) -> PathBuf {
    dir.join(format!("{base_offset:020}.{ext}"))
}

/// Removes the files with extensions `exts` of the segment at `base_offset` in `dir`,
/// if any (`NotFound` is not an error).
fn remove_files(dir: &Path, base_offset: i64, exts: &[&str]) -> io::Result<()> {
    for ext in exts {
        match std::fs::remove_file(segment_path(dir, base_offset, ext)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

/// A segment file and its indexes. `size` is the logical size: the end of the last whole batch
/// written (the file itself may be longer by zero padding to the DMA alignment and by the
/// zero fill written ahead, see [`ZeroFill`], until it is truncated at roll/close). Lives on the partition's owning shard only, inside its `PartitionLog`.
#[derive(Debug)]
pub struct Segment {
    /// Offset of the first batch in the segment (also its name).
    pub base_offset: i64,
    /// Directory holding the segment.
    pub dir: PathBuf,
    /// The `.log` file, opened read+write with O_DIRECT.
    pub file: Rc<DmaFile>,
    /// Logical size in bytes.
    pub size: Cell<u64>,
    /// Offset after the last batch written.
    pub next_offset: Cell<i64>,
    /// Sparse offset index.
    pub index: RefCell<OffsetIndex>,
    /// Sparse time index.
    pub time_index: RefCell<TimeIndex>,
    /// Batch bytes since the last index entry.
    pub bytes_since_index: Cell<u64>,
    /// Largest batch max timestamp in the segment and that batch's last offset.
    pub max_ts: Cell<Option<(i64, i64)>>,
    /// The first batch's max timestamp (ms), once known: noted when the batch at
    /// position 0 is written or scanned, else read on demand
    /// ([`Segment::first_batch_timestamp`]; Kafka's `LogSegment.getFirstBatchTimestamp`).
    first_batch_ts: Cell<Option<i64>>,
    /// Bytes of the partial last DMA block, `[align_down(size), size)` (active segment).
    pub tail: RefCell<Vec<u8>>,
    /// The last large read from disk, kept so that sequential fetches (a consumer
    /// catching up) are served from memory: one DMA read of [`READ_AHEAD`] bytes
    /// instead of one per fetch.
    readahead: RefCell<Option<ReadAhead>>,
    /// The next read-ahead window, being read in the background while the consumer
    /// works through `readahead` (see [`Segment::read_bytes`]).
    prefetch: RefCell<Option<Prefetch>>,
    /// Reads that waited for a DMA read issued on demand (not served from memory or from
    /// a background read); a sequential consumer should cause one per segment.
    pub demand_reads: Cell<u64>,
    /// Zeros written ahead of the write position (active segment).
    pub zero_fill: ZeroFill,
    /// How many entries of `(index, time_index)` the index files hold: loaded from
    /// them, or written by [`Segment::save_indexes_with`] or
    /// [`Segment::append_index_entries`]; `(0, 0)` when there are none.
    saved_entries: Cell<(usize, usize)>,
}

/// Bytes read past what a fetch asked for; see [`Segment::read_bytes`].
pub const READ_AHEAD: usize = 4 << 20;

/// Read-ahead bytes a shard may hold (or have in flight) across all its segments.
pub const READ_AHEAD_BUDGET: usize = 64 << 20;

thread_local! {
    /// Read-ahead bytes held (or being read) by this shard's segments.
    static READ_AHEAD_HELD: Cell<usize> = const { Cell::new(0) };
}

/// Bytes of the shard's read-ahead budget held by one buffer or read in flight; given
/// back when dropped.
#[derive(Debug)]
struct Held(usize);

impl Held {
    /// Takes `bytes` of the shard's budget if that leaves it within
    /// [`READ_AHEAD_BUDGET`] (`already` bytes of it are about to be given back).
    fn take(bytes: usize, already: usize) -> Option<Held> {
        READ_AHEAD_HELD.with(|h| {
            (h.get().saturating_sub(already) + bytes <= READ_AHEAD_BUDGET).then(|| {
                h.set(h.get() + bytes);
                Held(bytes)
            })
        })
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        READ_AHEAD_HELD.with(|h| h.set(h.get().saturating_sub(self.0)));
    }
}

/// One read-ahead buffer: `data` holds the segment bytes from file position `pos` (the
/// DMA read's own aligned buffer, never copied).
#[derive(Debug)]
struct ReadAhead {
    pos: u64,
    data: ReadBuf,
    /// File position after the last batch `data` holds whole: where the next window starts.
    whole_end: u64,
    _held: Option<Held>,
}

/// A background read of `[pos, pos + len)`; resolves to `None` when the read failed
/// (the reader then reads synchronously and reports the error itself).
struct Prefetch {
    pos: u64,
    len: u64,
    done: Shared<JoinHandle<Option<ReadBuf>>>,
    held: Held,
}

impl std::fmt::Debug for Prefetch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prefetch").field("pos", &self.pos).field("len", &self.len).finish()
    }
}

impl Segment {
    fn new(dir: &Path, base_offset: i64, file: DmaFile, size: u64) -> Segment {
        Segment {
            base_offset,
            dir: dir.to_path_buf(),
            file: Rc::new(file),
            size: Cell::new(size),
            next_offset: Cell::new(base_offset),
            index: RefCell::default(),
            time_index: RefCell::default(),
            bytes_since_index: Cell::new(0),
            max_ts: Cell::new(None),
            first_batch_ts: Cell::new(None),
            tail: RefCell::default(),
            readahead: RefCell::default(),
            prefetch: RefCell::default(),
            demand_reads: Cell::new(0),
            zero_fill: ZeroFill::new(size, super::log_name(dir).into_owned()),
            saved_entries: Cell::new((0, 0)),
        }
    }

    async fn open_file(path: &Path, create: bool) -> io::Result<DmaFile> {
        let mut o = OpenOptions::new();
        o.read(true).write(true);
        if create {
            o.create(true).truncate(true);
        }
        o.dma_open(path).await.map_err(io::Error::from)
    }

    /// Creates (truncating) an empty segment file, removing index files (and an
    /// aborted-transaction index) left under its name: recovery trusts the active
    /// segment's index files (it scans only from their last entry) and loads every
    /// `.txnindex`, so none may describe another file's data.
    pub async fn create(dir: &Path, base_offset: i64) -> io::Result<Segment> {
        remove_files(dir, base_offset, &["index", "timeindex", super::txn_index::EXT])?;
        let f = Self::open_file(&segment_path(dir, base_offset, "log"), true).await?;
        Ok(Segment::new(dir, base_offset, f, 0))
    }

    /// A segment of `size` bytes in the already open `file` (the log cleaner's output,
    /// opened before it is renamed into place); indexes empty, `next_offset` the base.
    pub fn from_file(dir: &Path, base_offset: i64, file: DmaFile, size: u64) -> Segment {
        Segment::new(dir, base_offset, file, size)
    }

    /// Opens an existing segment file; `size` starts as the file size (recovery fixes it).
    pub async fn open(dir: &Path, base_offset: i64) -> io::Result<Segment> {
        let f = Self::open_file(&segment_path(dir, base_offset, "log"), false).await?;
        let size = f.file_size().await.map_err(io::Error::from)?;
        Ok(Segment::new(dir, base_offset, f, size))
    }

    /// DMA alignment of the file.
    pub fn alignment(&self) -> u64 {
        self.file.alignment()
    }

    /// Relative offset of `offset` in this segment (saturating into u32).
    pub fn rel(&self, offset: i64) -> u32 {
        (offset - self.base_offset).clamp(0, u32::MAX as i64) as u32
    }

    /// Index bookkeeping for a batch written (or found by recovery) at `pos`: an offset
    /// index entry (and a time index entry) once `interval` bytes were written since the
    /// last one; tracks the max timestamp and next offset.
    pub fn note_batch(&self, pos: u64, h: &RecordBatchHeader, interval: u64) {
        if pos > 0 && self.bytes_since_index.get() >= interval {
            self.index.borrow_mut().push(self.rel(h.base_offset), pos as u32);
            if let Some((ts, off)) = self.max_ts.get() {
                self.time_index.borrow_mut().push(ts, self.rel(off));
            }
            self.bytes_since_index.set(0);
        }
        self.bytes_since_index.set(self.bytes_since_index.get() + h.total_size() as u64);
        if pos == 0 {
            self.first_batch_ts.set(Some(h.max_timestamp));
        }
        if self.max_ts.get().is_none_or(|(t, _)| h.max_timestamp > t) {
            self.max_ts.set(Some((h.max_timestamp, h.last_offset())));
        }
        self.next_offset.set(h.next_offset());
    }

    /// The max timestamp (ms) of the segment's first batch, None for an empty segment
    /// (Kafka's `LogSegment.getFirstBatchTimestamp`, which the log cleaner measures
    /// `max.compaction.lag.ms` from). Read from the file (one DMA block) the first time
    /// when the segment was opened from its index files; errors: that read, or a damaged
    /// first batch header.
    pub async fn first_batch_timestamp(&self) -> io::Result<Option<i64>> {
        if let Some(ts) = self.first_batch_ts.get() {
            return Ok(Some(ts));
        }
        let len = self.size.get().min(self.alignment().max(RECORD_BATCH_OVERHEAD as u64));
        if len == 0 {
            return Ok(None);
        }
        let data = read_at(&self.file, 0, len as usize).await?;
        let h = RecordBatchHeader::parse_header(&data).map_err(|e| {
            invalid(format!(
                "segment {} of {}: first batch: {e}",
                self.base_offset,
                self.dir.display()
            ))
        })?;
        self.first_batch_ts.set(Some(h.max_timestamp));
        Ok(Some(h.max_timestamp))
    }

    /// Adds the final time index entry (segment max timestamp), as Kafka does when a
    /// segment becomes inactive.
    pub fn finish_time_index(&self) {
        if let Some((ts, off)) = self.max_ts.get() {
            self.time_index.borrow_mut().push(ts, self.rel(off));
        }
    }

    /// Writes `.index` and `.timeindex` (small files; plain std I/O, then renamed into
    /// place so a crash leaves either the old or the new file).
    pub fn save_indexes(&self) -> io::Result<()> {
        self.save_indexes_with(write_atomic)
    }

    /// [`Segment::save_indexes`], each file written by `write`: the time index first, so
    /// that a stop between the two (a crash, a full disk) leaves an older offset index
    /// beside a newer time index, never the reverse. Recovery scans the active segment
    /// from the offset index's last entry and takes its max timestamp from the time index:
    /// an older offset index only makes it scan (and re-index) more; a newer one beside an
    /// older time index would skip batches the time index does not cover.
    pub fn save_indexes_with(&self, write: WriteFile) -> io::Result<()> {
        let ix = self.index.borrow().encode();
        let tx = self.time_index.borrow().encode();
        let ix_before = self.saved_entries.get().0;
        write(&segment_path(&self.dir, self.base_offset, "timeindex"), &tx)?;
        self.saved_entries.set((ix_before, tx.len() / 12));
        write(&segment_path(&self.dir, self.base_offset, "index"), &ix)?;
        self.saved_entries.set((ix.len() / 8, tx.len() / 12));
        Ok(())
    }

    /// Appends to the index files the entries they do not hold yet, up to `upto` =
    /// `(offset index entries, time index entries)` (counts from the start of each
    /// index), the time index first as [`Segment::save_indexes_with`] orders them: a
    /// recovery point of the active segment (see `PartitionLog`'s recovery points). The
    /// caller makes sure that every entry up to there points at durable data. Plain
    /// appends without fsync: a process crash keeps them; after a power loss a torn or
    /// lost append makes the files older or undecodable, and recovery then scans more.
    pub fn append_index_entries(&self, upto: (usize, usize)) -> io::Result<()> {
        let (ix_saved, tx_saved) = self.saved_entries.get();
        if upto.1 > tx_saved {
            let b = self.time_index.borrow().encode_range(tx_saved..upto.1);
            append_file(&segment_path(&self.dir, self.base_offset, "timeindex"), &b)?;
            self.saved_entries.set((ix_saved, upto.1));
        }
        if upto.0 > ix_saved {
            let b = self.index.borrow().encode_range(ix_saved..upto.0);
            append_file(&segment_path(&self.dir, self.base_offset, "index"), &b)?;
            self.saved_entries.set((upto.0, self.saved_entries.get().1));
        }
        Ok(())
    }

    /// Removes this segment's `.index` and `.timeindex` files, if any (`NotFound` is
    /// not an error).
    pub fn remove_index_files(&self) -> io::Result<()> {
        self.saved_entries.set((0, 0));
        remove_files(&self.dir, self.base_offset, &["index", "timeindex"])
    }

    /// Loads both index files; false (indexes left empty) if either is missing or damaged,
    /// or (with `end`, the exclusive offset where the next segment starts) an entry of
    /// either names an offset at or past `end`, or the last time index entry of a
    /// non-empty segment is all zeros. On success also sets `max_ts` from the last time
    /// index entry.
    pub fn load_indexes(&self, end: Option<i64>) -> bool {
        let ix = std::fs::read(segment_path(&self.dir, self.base_offset, "index"));
        let tx = std::fs::read(segment_path(&self.dir, self.base_offset, "timeindex"));
        let (Ok(ix), Ok(tx)) = (ix, tx) else {
            return false;
        };
        let (Some(ix), Some(tx)) =
            (OffsetIndex::decode(&ix, self.size.get()), TimeIndex::decode(&tx))
        else {
            return false;
        };
        if self.size.get() > 0 && tx.entries.is_empty() {
            return false; // a non-empty inactive segment always has its final entry
        }
        // An all-zero last entry (timestamp 0 at the segment's base) is what a file
        // extended but never written looks like after a power loss (index files are
        // not fsync'ed): trusted, it would make this segment's max timestamp 0 and send
        // every `offsets_for_times` past it. A segment whose records really all have
        // timestamps of 0 or less only costs a scan at each start.
        if self.size.get() > 0 && tx.entries.last() == Some(&(0, 0)) {
            return false;
        }
        // Both indexes are increasing in offset: their last entries bound the rest.
        let last_rel = |r: Option<u32>| r.map_or(-1, |r| self.base_offset + i64::from(r));
        if end.is_some_and(|end| {
            last_rel(ix.entries.last().map(|e| e.0)) >= end
                || last_rel(tx.entries.last().map(|e| e.1)) >= end
        }) {
            return false;
        }
        self.max_ts.set(tx.entries.last().map(|&(t, r)| (t, self.base_offset + r as i64)));
        self.saved_entries.set((ix.entries.len(), tx.entries.len()));
        *self.index.borrow_mut() = ix;
        *self.time_index.borrow_mut() = tx;
        true
    }

    /// Reads from `pos` at least `min` and at most `want` bytes (both clamped to the
    /// logical size): a view of a DMA read buffer, not a copy. Served from the read-ahead
    /// buffer when it holds `min` bytes there, else from the background read of the next
    /// window when that does, else by one DMA read of `want` bytes, or of [`READ_AHEAD`]
    /// while the shard's budget allows (the surplus becomes the read-ahead buffer).
    ///
    /// A read-ahead window is consumed up to the end of its last whole batch; the next
    /// window starts there and is read in the background as soon as the window before it
    /// serves a read, so a consumer reading sequentially does not wait for the disk.
    /// Written bytes below the logical size never change, so buffered bytes stay valid.
    pub async fn read_bytes(&self, pos: u64, min: usize, want: usize) -> io::Result<ReadBuf> {
        let size = self.size.get();
        let want_end = (pos + want.max(min) as u64).min(size);
        let min_end = (pos + min as u64).min(want_end);
        if want_end <= pos {
            return Ok(ReadBuf::default());
        }
        if let Some(hit) = self.in_readahead(pos, min_end, want_end) {
            return Ok(hit);
        }
        let pending = self.prefetch.borrow_mut().take();
        if let Some(p) = pending {
            if pos >= p.pos && min_end <= p.pos + p.len {
                let waited = p.done.peek().is_none().then(std::time::Instant::now);
                let done = p.done.clone().await.flatten();
                if let Some(w) = waited {
                    crate::metrics::with(|m| m.timed(Timed::ReadWait, w.elapsed()));
                }
                if let Some(data) = done {
                    self.install(p.pos, data, Some(p.held));
                    if let Some(hit) = self.in_readahead(pos, min_end, want_end) {
                        return Ok(hit);
                    }
                }
            } else if p.pos > pos {
                // Still ahead of this reader: keep it.
                *self.prefetch.borrow_mut() = Some(p);
            }
        }
        let held_here = self.readahead.borrow().as_ref().map_or(0, |r| r.data.len());
        let held = Held::take(READ_AHEAD, held_here);
        let len = if held.is_some() {
            (want_end - pos).max(self.window_len(pos))
        } else {
            want_end - pos
        };
        let read_end = (pos + len).min(size);
        self.demand_reads.set(self.demand_reads.get() + 1);
        let waited = std::time::Instant::now();
        let r = read_at(&self.file, pos, (read_end - pos) as usize).await?;
        crate::metrics::with(|m| m.timed(Timed::ReadWait, waited.elapsed()));
        if (r.len() as u64) < min_end - pos {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("short read at {pos} in segment {}", self.base_offset),
            ));
        }
        let out = r.slice(0, r.len().min((want_end - pos) as usize));
        if r.len() > out.len() {
            self.install(pos, r, held);
            if let Some(ra_end) = self.readahead.borrow().as_ref().map(|r| r.whole_end) {
                self.prefetch_after(ra_end);
            }
        }
        Ok(out)
    }

    /// Length of a read-ahead window from `pos`: up to the aligned position
    /// [`READ_AHEAD`] bytes past `pos`'s aligned start, so that its DMA read is exactly
    /// [`READ_AHEAD`] bytes and its buffer the same size as an append arena (the shard's
    /// pool recycles one as the other).
    fn window_len(&self, pos: u64) -> u64 {
        READ_AHEAD as u64 - (pos - self.file.align_down(pos))
    }

    /// Makes `data` (segment bytes from file position `pos`) the read-ahead buffer.
    fn install(&self, pos: u64, data: ReadBuf, held: Option<Held>) {
        // The walk below is a chain of dependent loads, each the first touch of fresh
        // DMA'd memory (a cache and TLB miss per batch); the index knows most of the
        // batch starts, so their misses are started together first.
        let end = pos + data.len() as u64;
        prefetch_headers(
            &data,
            self.index.borrow().positions_in(pos, end).map(|p| (p - pos) as usize),
        );
        let whole = BatchIter::new(&data)
            .map_while(|b| b.ok())
            .map(|(at, h)| at + h.total_size())
            .last()
            .unwrap_or(0);
        let whole_end = pos + whole as u64;
        *self.readahead.borrow_mut() = Some(ReadAhead { pos, data, whole_end, _held: held });
    }

    /// From the read-ahead buffer, if it holds `[pos, min_end)`: `[pos, want_end)` or as
    /// much of it as it holds. Starts the background read of the next window.
    fn in_readahead(&self, pos: u64, min_end: u64, want_end: u64) -> Option<ReadBuf> {
        let (hit, whole_end) = {
            let ra = self.readahead.borrow();
            let ra = ra.as_ref()?;
            let ra_end = ra.pos + ra.data.len() as u64;
            if pos < ra.pos || min_end > ra_end {
                return None;
            }
            let end = want_end.min(ra_end);
            (ra.data.slice((pos - ra.pos) as usize, (end - pos) as usize), ra.whole_end)
        };
        self.prefetch_after(whole_end);
        Some(hit)
    }

    /// Starts reading `[from, from + READ_AHEAD)` (clamped to the logical size) in the
    /// background, unless such a read is already in flight, there is nothing there, or
    /// the shard's read-ahead budget is spent.
    fn prefetch_after(&self, from: u64) {
        let size = self.size.get();
        let current = self.readahead.borrow().as_ref().map(|r| r.pos);
        if from >= size
            || current == Some(from)
            || self.prefetch.borrow().as_ref().is_some_and(|p| p.pos == from)
        {
            // Nothing there, a window without one whole batch, or already under way.
            return;
        }
        let replaced = self.prefetch.borrow().as_ref().map_or(0, |p| p.held.0);
        let len = (size - from).min(self.window_len(from));
        let Some(held) = Held::take(len as usize, replaced) else { return };
        let file = self.file.clone();
        let task = glommio::spawn_local(async move {
            read_at(&file, from, len as usize).await.ok().filter(|r| r.len() as u64 == len)
        });
        let done = task.detach().shared();
        *self.prefetch.borrow_mut() = Some(Prefetch { pos: from, len, done, held });
    }

    /// Recovery scan of the file bytes `[from, file_end)`: reads them in DMA reads of
    /// `SCAN_CHUNK` bytes (longer when one batch is longer) and runs the pure
    /// [`BatchScan`] over each read, which checks every batch's header, length and CRC32C.
    /// Calls `f(position in the file, header, the batch's bytes)` for each valid batch, in
    /// order. Returns the
    /// end of the last valid batch (a file position) and why the scan stopped there:
    /// [`ScanStop::End`] when it reached `file_end`, else a torn tail, zero padding or a
    /// corrupt batch (never `NeedMore`). A read shorter than asked is taken as the end of
    /// the file.
    pub async fn scan(
        &self,
        from: u64,
        mut file_end: u64,
        mut f: impl FnMut(u64, &RecordBatchHeader, &[u8]) -> Result<(), ScanStop>,
    ) -> io::Result<(u64, ScanStop)> {
        let mut pos = from;
        let mut want = SCAN_CHUNK;
        loop {
            let chunk = self.scan_chunk(pos, want, &mut file_end).await?;
            for (at, h) in &chunk.batches {
                let bytes = &chunk.data[*at..*at + h.total_size()];
                if let Err(stop) = f(pos + *at as u64, h, bytes) {
                    return Ok((pos + *at as u64, stop));
                }
            }
            pos += chunk.consumed as u64;
            match chunk.stop {
                ScanStop::NeedMore { need } => want = need.max(SCAN_CHUNK),
                stop => return Ok((pos, stop)),
            }
        }
    }

    /// One step of [`Segment::scan`]: one DMA read of up to `want` bytes from `pos`
    /// (clamped to `file_end`, which a short read lowers) and the valid whole batches in
    /// it, CRCs checked. [`ScanStop::NeedMore`] asks for a longer read from
    /// `pos + consumed`; any other stop is final.
    pub async fn scan_chunk(
        &self,
        pos: u64,
        want: usize,
        file_end: &mut u64,
    ) -> io::Result<ScanChunk> {
        let len = (want as u64).min(file_end.saturating_sub(pos)) as usize;
        let data =
            if len == 0 { ReadBuf::default() } else { read_at(&self.file, pos, len).await? };
        if data.len() < len {
            *file_end = pos + data.len() as u64;
        }
        let (batches, consumed, stop) = {
            let mut scan = BatchScan::new(&data, file_end.saturating_sub(pos + data.len() as u64));
            let batches: Vec<(usize, RecordBatchHeader)> = (&mut scan).collect();
            (batches, scan.position(), scan.stop().unwrap_or(ScanStop::End))
        };
        Ok(ScanChunk { data, batches, consumed, stop })
    }

    /// Walks batch headers from `pos` (an index position) without CRC checks, returning
    /// the position and header of the first batch for which `pred` holds, stopping at the
    /// logical size or at the first batch with `last_offset >= limit`. `hint` sizes reads.
    pub async fn find_batch(
        &self,
        mut pos: u64,
        limit: i64,
        hint: usize,
        mut pred: impl FnMut(&RecordBatchHeader) -> bool,
    ) -> io::Result<Option<(u64, RecordBatchHeader, ReadBuf, u64)>> {
        let end = self.size.get();
        let mut buf = ReadBuf::default();
        let mut buf_pos = 0u64;
        while pos < end {
            let h = self.header_at(pos, end, hint, &mut buf, &mut buf_pos).await?;
            if h.last_offset() >= limit {
                return Ok(None);
            }
            if pred(&h) {
                return Ok(Some((pos, h, buf, buf_pos)));
            }
            pos += h.total_size() as u64;
        }
        Ok(None)
    }

    /// Header at `pos`, from `buf` (which starts at file position `buf_pos`) when it holds
    /// the 61 header bytes, else from a new read of at least `hint` bytes.
    async fn header_at(
        &self,
        pos: u64,
        end: u64,
        hint: usize,
        buf: &mut ReadBuf,
        buf_pos: &mut u64,
    ) -> io::Result<RecordBatchHeader> {
        let have =
            pos >= *buf_pos && pos + RECORD_BATCH_OVERHEAD as u64 <= *buf_pos + buf.len() as u64;
        if !have {
            *buf = self.read_bytes(pos, RECORD_BATCH_OVERHEAD, hint.max(MIN_READ)).await?;
            *buf_pos = pos;
        }
        let at = (pos - *buf_pos) as usize;
        let h = RecordBatchHeader::parse_header(&buf[at..])
            .map_err(|e| invalid(format!("segment {} pos {pos}: {e}", self.base_offset)))?;
        if pos + h.total_size() as u64 > end {
            return Err(invalid(format!(
                "segment {} pos {pos}: batch past end {end}",
                self.base_offset
            )));
        }
        Ok(h)
    }

    /// Whole batches starting with the one containing `offset`, with `last_offset <
    /// limit`, totalling at most `max_bytes` but at least one batch, as consecutive
    /// views of DMA read buffers (see [`Segment::read_bytes`]), each holding whole
    /// batches: a read that reaches the end of one read-ahead window goes on into the
    /// next only when that one is in memory or already being read, else it stops there
    /// (the next fetch continues). `None` when no such batch is in this segment.
    pub async fn read_from(
        &self,
        offset: i64,
        max_bytes: usize,
        limit: i64,
    ) -> io::Result<Option<Vec<ReadBuf>>> {
        let start_pos = self.index.borrow().lookup(self.rel(offset)) as u64;
        let hint = max_bytes.clamp(MIN_READ, 16 << 20);
        let Some((start, first, mut buf, mut buf_pos)) =
            self.find_batch(start_pos, limit, hint, |h| h.last_offset() >= offset).await?
        else {
            return Ok(None);
        };
        let end = self.size.get();
        let mut total = first.total_size() as u64;
        if start < buf_pos || start + total > buf_pos + buf.len() as u64 {
            let len = total as usize;
            buf = self.read_bytes(start, len, len).await?;
            buf_pos = start;
        }
        let mut parts = Vec::new();
        let mut part_start = start;
        let mut pos = start + total;
        let mut switched = false;
        while pos < end {
            let buf_end = buf_pos + buf.len() as u64;
            if pos + RECORD_BATCH_OVERHEAD as u64 <= buf_end {
                let h = self.header_at(pos, end, hint, &mut buf, &mut buf_pos).await?;
                let n = h.total_size() as u64;
                if h.last_offset() >= limit || total + n > max_bytes as u64 {
                    break;
                }
                if pos + n <= buf_end {
                    total += n;
                    pos += n;
                    switched = false;
                    continue;
                }
            }
            // The next batch is not whole in `buf`: go on in the next window if it is
            // (or is about to be) in memory, once per batch.
            if switched || !self.in_memory_soon(pos) {
                break;
            }
            parts.push(buf.slice((part_start - buf_pos) as usize, (pos - part_start) as usize));
            buf = self.read_bytes(pos, RECORD_BATCH_OVERHEAD, hint).await?;
            buf_pos = pos;
            part_start = pos;
            switched = true;
        }
        if pos > part_start {
            parts.push(buf.slice((part_start - buf_pos) as usize, (pos - part_start) as usize));
        }
        Ok(Some(parts))
    }

    /// True when a batch header at `pos` is in the read-ahead buffer or in the window
    /// being read in the background.
    fn in_memory_soon(&self, pos: u64) -> bool {
        let covers =
            |at: u64, len: u64| pos >= at && pos + RECORD_BATCH_OVERHEAD as u64 <= at + len;
        self.readahead.borrow().as_ref().is_some_and(|r| covers(r.pos, r.data.len() as u64))
            || self.prefetch.borrow().as_ref().is_some_and(|p| covers(p.pos, p.len))
    }
}

/// Loads one byte of the record batch header at each position `at` of `data` (the
/// cache lines of its first and last byte) with independent loads, so that the CPU waits
/// for these misses together rather than one by one in a walk over the headers that
/// follows. Positions past the end are skipped.
fn prefetch_headers(data: &[u8], at: impl Iterator<Item = usize>) {
    let mut acc = 0u8;
    for i in at {
        for b in [data.get(i), data.get(i + RECORD_BATCH_OVERHEAD - 1)].into_iter().flatten() {
            acc ^= *b;
        }
    }
    std::hint::black_box(acc);
}

/// What one [`Segment::scan_chunk`] read found.
pub struct ScanChunk {
    /// The bytes read (a DMA buffer).
    pub data: ReadBuf,
    /// `(position in data, header)` of each valid whole batch, in order.
    pub batches: Vec<(usize, RecordBatchHeader)>,
    /// Bytes of `data` up to the end of the last valid batch.
    pub consumed: usize,
    /// Why the scan of this read stopped.
    pub stop: ScanStop,
}

/// `len` bytes of `file` from position `pos` (any alignment), read with one DMA read
/// straight into a pooled buffer that the result then references (no copy); fewer bytes
/// at the end of the file.
async fn read_at(file: &DmaFile, pos: u64, len: usize) -> io::Result<ReadBuf> {
    let start = file.align_down(pos);
    let skip = (pos - start) as usize;
    let lent = file.align_up((skip + len) as u64) as usize;
    let block = shard_pool().read_block(lent);
    let (block, n) = file.read_at_aligned_into(start, block).await.map_err(io::Error::from)?;
    crate::metrics::with(|m| m.disk_read(n as u64));
    Ok(block.freeze(n).slice(skip, len))
}

/// Writes `data` to `path` via a temporary file, synced before it is renamed into
/// place, then syncs the directory so that the rename itself survives a machine crash:
/// afterwards `path` holds the old or the new bytes, never a torn mix or an empty file.
/// Blocking std I/O: for small files written at a roll, a close or a cleaner pass,
/// never per request.
pub fn write_atomic(path: &Path, data: &[u8]) -> io::Result<()> {
    use std::io::Write;
    let tmp = PathBuf::from(format!("{}.tmp", path.display()));
    let mut file = std::fs::File::create(&tmp)?;
    file.write_all(data)?;
    file.sync_data()?;
    drop(file);
    std::fs::rename(&tmp, path)?;
    sync_parent_dir(path)
}

/// Appends `data` to `path` (created if missing), without fsync.
fn append_file(path: &Path, data: &[u8]) -> io::Result<()> {
    use std::io::Write;
    std::fs::OpenOptions::new().create(true).append(true).open(path)?.write_all(data)
}

/// [`write_atomic`] without its fsyncs: the file is written and renamed over `path`,
/// and the caller makes it durable later with one `syncfs` for many such files (a
/// shutdown closing thousands of logs). Until then a crash may leave the old file or a
/// damaged new one; recovery rebuilds damaged indexes and snapshots from the segments.
pub fn write_replace(path: &Path, data: &[u8]) -> io::Result<()> {
    let tmp = PathBuf::from(format!("{}.tmp", path.display()));
    std::fs::write(&tmp, data)?;
    std::fs::rename(&tmp, path)
}

/// How a file that replaces another is made durable: at once ([`write_atomic`]), or
/// later by the caller ([`write_replace`]).
pub type WriteFile = fn(&Path, &[u8]) -> io::Result<()>;

/// fsyncs the directory holding `path` (what makes a create, rename or unlink in it
/// durable on ext4 and xfs).
pub fn sync_parent_dir(path: &Path) -> io::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::File::open(dir)?.sync_all()
}

thread_local! {
    static PROBED_DEVICES: std::cell::RefCell<std::collections::HashSet<u64>> =
        Default::default();
}

/// Works around glommio 0.9's io_uring poll-ring probe: the first `DmaFile` a thread
/// opens on a block device decides (per thread, cached) whether that device's reads go
/// to the IOPOLL ring, by reading block 0 of *that* file. If the file is empty the probe
/// read "succeeds" with 0 bytes, the device is wrongly marked pollable, and every later
/// read fails with EOPNOTSUPP (os error 95) on devices without poll queues (e.g.
/// virtio). This opens a non-empty scratch file in `dir` first, once per thread and
/// device, so the probe sees real data. Call it on each shard before opening any
/// `DmaFile` on the data device ([`super::PartitionLog::open`] calls it itself).
pub async fn probe_dma_device(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(dir)?.dev();
    if PROBED_DEVICES.with(|p| p.borrow().contains(&dev)) {
        return Ok(());
    }
    let path = dir.join(".dma-probe");
    std::fs::write(&path, vec![0xA5u8; 64 << 10])?;
    let opened = DmaFile::open(&path).await;
    let _ = std::fs::remove_file(&path);
    opened.map_err(io::Error::from)?.close().await.map_err(io::Error::from)?;
    PROBED_DEVICES.with(|p| p.borrow_mut().insert(dev));
    Ok(())
}

//! One segment of a partition log: a DMA (O_DIRECT) `.log` file of verbatim v2 batches
//! named by its 20-digit base offset, plus its in-memory sparse indexes (persisted as
//! `.index` / `.timeindex`). Lives on the partition's owning shard only.

use std::cell::{Cell, RefCell};
use std::io;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use bytes::Bytes;
use glommio::io::{DmaFile, OpenOptions};

use super::index::{OffsetIndex, TimeIndex};
use crate::protocol::batch::{BatchScan, RecordBatchHeader, ScanStop, RECORD_BATCH_OVERHEAD};

/// Bytes read per DMA read when scanning a segment.
const SCAN_CHUNK: usize = 1 << 20;
/// Smallest read when walking headers for a fetch.
const MIN_READ: usize = 64 << 10;

/// `<dir>/<20-digit base offset>.<ext>`.
pub fn segment_path(dir: &Path, base_offset: i64, ext: &str) -> PathBuf {
    dir.join(format!("{base_offset:020}.{ext}"))
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

/// A segment file and its indexes. `size` is the logical size: the end of the last whole batch
/// written (the file itself may be longer by zero padding to the DMA alignment until it is
/// truncated at roll/close). Lives on the partition's owning shard only, inside its `PartitionLog`.
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
    /// Bytes of the partial last DMA block, `[align_down(size), size)` (active segment).
    pub tail: RefCell<Vec<u8>>,
    /// The last large read from disk, kept so that sequential fetches (a consumer
    /// catching up) are served from memory: one DMA read of [`READ_AHEAD`] bytes
    /// instead of one per fetch.
    readahead: RefCell<Option<ReadAhead>>,
}

/// Bytes read past what a fetch asked for; see [`Segment::read_bytes`].
pub const READ_AHEAD: usize = 4 << 20;

/// Read-ahead bytes a shard may hold across all its segments.
pub const READ_AHEAD_BUDGET: usize = 64 << 20;

thread_local! {
    /// Read-ahead bytes held by this shard's segments.
    static READ_AHEAD_HELD: Cell<usize> = const { Cell::new(0) };
}

/// One read-ahead buffer: `data` holds the segment bytes from file position `pos`.
/// Its size counts against the shard's [`READ_AHEAD_BUDGET`] until dropped.
#[derive(Debug)]
struct ReadAhead {
    pos: u64,
    data: Bytes,
}

impl ReadAhead {
    fn new(pos: u64, data: Bytes) -> ReadAhead {
        READ_AHEAD_HELD.with(|h| h.set(h.get() + data.len()));
        ReadAhead { pos, data }
    }
}

impl Drop for ReadAhead {
    fn drop(&mut self) {
        READ_AHEAD_HELD.with(|h| h.set(h.get().saturating_sub(self.data.len())));
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
            tail: RefCell::default(),
            readahead: RefCell::default(),
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

    /// Creates (truncating) an empty segment file.
    pub async fn create(dir: &Path, base_offset: i64) -> io::Result<Segment> {
        let f = Self::open_file(&segment_path(dir, base_offset, "log"), true).await?;
        Ok(Segment::new(dir, base_offset, f, 0))
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
        if self.max_ts.get().is_none_or(|(t, _)| h.max_timestamp > t) {
            self.max_ts.set(Some((h.max_timestamp, h.last_offset())));
        }
        self.next_offset.set(h.next_offset());
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
        let ix = self.index.borrow().encode();
        let tx = self.time_index.borrow().encode();
        write_atomic(&segment_path(&self.dir, self.base_offset, "index"), &ix)?;
        write_atomic(&segment_path(&self.dir, self.base_offset, "timeindex"), &tx)
    }

    /// Loads both index files; false (indexes left empty) if either is missing or damaged.
    /// On success also sets `max_ts` from the last time index entry.
    pub fn load_indexes(&self) -> bool {
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
        self.max_ts.set(tx.entries.last().map(|&(t, r)| (t, self.base_offset + r as i64)));
        *self.index.borrow_mut() = ix;
        *self.time_index.borrow_mut() = tx;
        true
    }

    /// Reads `[pos, pos+len)` (clamped to the logical size) into `Bytes`. Served from
    /// the read-ahead buffer when it holds the range; otherwise one DMA read of at
    /// least [`READ_AHEAD`] bytes (while the shard's budget allows) whose surplus is
    /// kept for the next sequential read. Written bytes below the logical size never
    /// change, so buffered bytes stay valid.
    pub async fn read_bytes(&self, pos: u64, len: usize) -> io::Result<Bytes> {
        let end = (pos + len as u64).min(self.size.get());
        if end <= pos {
            return Ok(Bytes::new());
        }
        if let Some(ra) = self.readahead.borrow().as_ref() {
            if pos >= ra.pos && end <= ra.pos + ra.data.len() as u64 {
                return Ok(ra.data.slice((pos - ra.pos) as usize..(end - ra.pos) as usize));
            }
        }
        let held_elsewhere = READ_AHEAD_HELD.with(|h| h.get())
            - self.readahead.borrow().as_ref().map_or(0, |r| r.data.len());
        let want = if held_elsewhere + READ_AHEAD <= READ_AHEAD_BUDGET {
            (end - pos).max(READ_AHEAD as u64)
        } else {
            end - pos
        };
        let read_end = (pos + want).min(self.size.get());
        let r = self.file.read_at(pos, (read_end - pos) as usize).await.map_err(io::Error::from)?;
        if r.len() < (end - pos) as usize {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("short read at {pos} in segment {}", self.base_offset),
            ));
        }
        let data = Bytes::copy_from_slice(&r[..]);
        let out = data.slice(..(end - pos) as usize);
        if data.len() > out.len() {
            *self.readahead.borrow_mut() = Some(ReadAhead::new(pos, data));
        }
        Ok(out)
    }

    /// Recovery scan of the file bytes `[from, file_end)`: reads them in DMA reads of
    /// `SCAN_CHUNK` bytes (longer when one batch is longer) and runs the pure
    /// [`BatchScan`] over each read, which checks every batch's header, length and CRC32C.
    /// Calls `f(position in the file, header)` for each valid batch, in order. Returns the
    /// end of the last valid batch (a file position) and why the scan stopped there:
    /// [`ScanStop::End`] when it reached `file_end`, else a torn tail, zero padding or a
    /// corrupt batch (never `NeedMore`). A read shorter than asked is taken as the end of
    /// the file.
    pub async fn scan(
        &self,
        from: u64,
        mut file_end: u64,
        mut f: impl FnMut(u64, &RecordBatchHeader),
    ) -> io::Result<(u64, ScanStop)> {
        let mut pos = from;
        let mut want = SCAN_CHUNK;
        loop {
            let len = (want as u64).min(file_end.saturating_sub(pos)) as usize;
            let read = if len == 0 {
                None
            } else {
                Some(self.file.read_at(pos, len).await.map_err(io::Error::from)?)
            };
            let buf = read.as_ref().map_or(&[][..], |r| &r[..]);
            if buf.len() < len {
                file_end = pos + buf.len() as u64;
            }
            let mut scan = BatchScan::new(buf, file_end.saturating_sub(pos + buf.len() as u64));
            for (at, h) in &mut scan {
                f(pos + at as u64, &h);
            }
            pos += scan.position() as u64;
            match scan.stop().unwrap_or(ScanStop::End) {
                ScanStop::NeedMore { need } => want = need.max(SCAN_CHUNK),
                stop => return Ok((pos, stop)),
            }
        }
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
    ) -> io::Result<Option<(u64, RecordBatchHeader, Bytes, u64)>> {
        let end = self.size.get();
        let mut buf = Bytes::new();
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
        buf: &mut Bytes,
        buf_pos: &mut u64,
    ) -> io::Result<RecordBatchHeader> {
        let have =
            pos >= *buf_pos && pos + RECORD_BATCH_OVERHEAD as u64 <= *buf_pos + buf.len() as u64;
        if !have {
            *buf = self.read_bytes(pos, hint.max(MIN_READ)).await?;
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
    /// limit`, totalling at most `max_bytes` but at least one batch. `None` when no such
    /// batch is in this segment.
    pub async fn read_from(
        &self,
        offset: i64,
        max_bytes: usize,
        limit: i64,
    ) -> io::Result<Option<Bytes>> {
        let start_pos = self.index.borrow().lookup(self.rel(offset)) as u64;
        let hint = max_bytes.clamp(MIN_READ, 16 << 20);
        let Some((start, first, mut buf, mut buf_pos)) =
            self.find_batch(start_pos, limit, hint, |h| h.last_offset() >= offset).await?
        else {
            return Ok(None);
        };
        let end = self.size.get();
        let mut total = first.total_size() as u64;
        let mut pos = start + total;
        while pos < end {
            let h = self.header_at(pos, end, hint, &mut buf, &mut buf_pos).await?;
            let n = h.total_size() as u64;
            if h.last_offset() >= limit || total + n > max_bytes as u64 {
                break;
            }
            total += n;
            pos += n;
        }
        if start >= buf_pos && start + total <= buf_pos + buf.len() as u64 {
            let a = (start - buf_pos) as usize;
            return Ok(Some(buf.slice(a..a + total as usize)));
        }
        Ok(Some(self.read_bytes(start, total as usize).await?))
    }
}

/// Writes `data` to `path` via a temporary file and a rename.
pub fn write_atomic(path: &Path, data: &[u8]) -> io::Result<()> {
    let tmp = PathBuf::from(format!("{}.tmp", path.display()));
    std::fs::write(&tmp, data)?;
    std::fs::rename(&tmp, path)
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

//! The storage engine of one partition: [`PartitionLog`].
//!
//! A partition log lives on exactly one shard (one glommio executor, one thread) and is
//! only touched there; it is `!Send` (`Rc`, `Cell`, `RefCell` inside) and never holds a
//! `RefCell` borrow across an `.await`.
//!
//! ## Write path (group commit)
//! [`PartitionLog::append`] is synchronous in memory: sequence check, offset assignment
//! (rewrites the base offset, optionally LogAppendTime), push to the batch cache and to a
//! pending queue; then it awaits the high watermark. A per-partition writer task drains
//! the queue into one aligned write (re-writing the partial last block from its aligned
//! start; the whole blocks straight from the batch cache's arena where it holds them
//! aligned like the file, see [`gather`]), writes it, `fdatasync`s under
//! [`FlushPolicy::Always`], then
//! advances the high watermark and wakes appenders and Fetch long-polls. Under
//! [`FlushPolicy::Interval`] a timer task `fdatasync`s every `flush_interval_ms`.
//!
//! ## Files (see `ARCHITECTURE.md`, "Storage layout")
//! `<dir>/<base offset:020>.log` (batches verbatim), `.index` (relative offset u32 ->
//! position u32), `.timeindex` (max timestamp i64 -> relative offset u32),
//! `.txnindex` (the aborted transactions whose marker is in the segment, see
//! [`txn_index`]), `producer.snapshot` (idempotent and transactional producer state,
//! written at roll and close), and `log-start-offset` (the start DeleteRecords set, see
//! [`start_offset`]).
//!
//! ## Transactions (KIP-98)
//! A transactional batch starts its producer's transaction on the partition; a control
//! batch (COMMIT or ABORT marker, [`crate::protocol::control`]) ends it. The **last
//! stable offset** ([`PartitionLog::last_stable_offset`]) is the first offset of the
//! earliest transaction not yet complete (ongoing, or its marker not yet written), or
//! the high watermark: read_committed fetches ([`PartitionLog::read_committed`]) stop
//! there and list the aborted transactions overlapping what they return.

pub mod arena;
pub mod cache;
pub mod cleaner;
pub mod gather;
pub mod index;
pub mod producer_state;
pub mod recovery;
pub mod recovery_point;
pub mod retention;
pub mod retire;
pub mod segment;
pub mod start_offset;
pub mod txn_index;
pub mod watch;
pub mod zero_fill;

#[cfg(test)]
mod cleaner_tests;
#[cfg(test)]
mod recovery_point_tests;
#[cfg(test)]
mod recovery_tests;
#[cfg(test)]
mod retention_tests;
#[cfg(test)]
mod start_offset_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod txn_tests;
#[cfg(test)]
mod zero_fill_tests;

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::rc::{Rc, Weak};
use std::time::Duration;

use bytes::Bytes;

use crate::config::FlushPolicy;
use crate::metadata::PARTITION_LEADER_EPOCH;
use crate::metrics::Timed;
use crate::protocol::batch::{self, RecordBatchHeader};
use crate::protocol::control;
use cache::{CachedBatch, PartitionId, ShardCache, SharedCache};
use producer_state::{ProducerState, SeqCheck};
use segment::{write_atomic, Segment};
use txn_index::{AbortedTxn, TxnIndex};
use watch::{HwWatch, Notify};

/// Largest single DMA write the writer task issues (more pending data -> several writes).
const MAX_WRITE_BYTES: usize = 4 << 20;

/// Per-partition storage settings (Kafka topic configs in parentheses).
#[derive(Debug, Clone)]
pub struct LogConfig {
    /// Roll a new segment once the active one would exceed this many bytes
    /// (`segment.bytes`). Clamped to 2 GiB (index positions are u32).
    pub segment_bytes: u64,
    /// Bytes of batches between two sparse index entries (`index.interval.bytes`).
    pub index_interval_bytes: u64,
    /// When writes are made durable.
    pub flush: FlushPolicy,
    /// Period of the background fdatasync under [`FlushPolicy::Interval`], ms.
    pub flush_interval_ms: u64,
    /// Most bytes of this partition's batches the batch cache may hold (`usize::MAX`:
    /// no cap beyond the cache's budget; 0: never cache this partition).
    pub cache_bytes: usize,
    /// The shard's batch cache, shared by the shard's partitions. `None`: the log gets a
    /// private cache with a budget of `cache_bytes`.
    pub shard_cache: Option<SharedCache>,
    /// `message.timestamp.type=LogAppendTime`: the broker stamps each batch's max
    /// timestamp with the append time.
    pub log_append_time: bool,
    /// Write zeros ahead of the active segment's write position, so appends overwrite
    /// blocks in place instead of extending the file, while its data writes average
    /// fewer than this many bytes (see [`zero_fill`]); 0: never.
    pub zero_fill_max_write: u64,
    /// DMA-write appended batches straight from the batch cache's arena, where it holds
    /// them at addresses aligned like their file positions, with only the partial first
    /// and last blocks copied; false: every write copies its batches into one DMA
    /// buffer (`--write-from-arena`).
    pub write_from_arena: bool,
    /// `segment.ms`: an append to an active segment whose first append (after it was
    /// created or the log opened) is more than this many ms ago rolls a new segment
    /// (Kafka bases this on the first batch's timestamp; the broker's clock keeps
    /// producers with old timestamps from rolling a segment per batch).
    pub segment_ms: i64,
    /// Active-segment bytes written between two recovery points (see
    /// [`recovery_point`]); 0: none (the index files are written at roll and close).
    pub recovery_point_bytes: u64,
}

/// The topic configs of a partition log that can change while it is open (AlterConfigs,
/// IncrementalAlterConfigs; Kafka applies them to the open log too): they take effect
/// from the next append (a smaller `segment.bytes` or `segment.ms` rolls on it). The
/// rest of [`LogConfig`] is fixed when the log opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveConfig {
    /// `segment.bytes`, clamped to 4 KiB..=2 GiB.
    pub segment_bytes: u64,
    /// `index.interval.bytes`, at least 1.
    pub index_interval_bytes: u64,
    /// `message.timestamp.type=LogAppendTime`.
    pub log_append_time: bool,
    /// `segment.ms`.
    pub segment_ms: i64,
}

impl LiveConfig {
    fn of(c: &LogConfig) -> LiveConfig {
        LiveConfig {
            segment_bytes: c.segment_bytes.clamp(4096, 2 << 30),
            index_interval_bytes: c.index_interval_bytes.max(1),
            log_append_time: c.log_append_time,
            segment_ms: c.segment_ms,
        }
    }
}

/// Result of a successful append (ProduceResponse partition fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendInfo {
    /// Offset assigned to the first record.
    pub base_offset: i64,
    /// Offset assigned to the last record.
    pub last_offset: i64,
    /// Append time in ms under LogAppendTime, else -1.
    pub log_append_time: i64,
    /// The partition's log start offset.
    pub log_start_offset: i64,
    /// A retry of one of the producer's last batches: nothing was appended, the
    /// offsets are the original's.
    pub duplicate: bool,
}

/// Why an append failed.
#[derive(Debug)]
pub enum AppendError {
    /// Idempotent sequence gap, or a new epoch not starting at sequence 0.
    OutOfOrderSequence,
    /// Producer epoch older than the one already seen (fenced).
    InvalidProducerEpoch,
    /// A non-transactional batch from a producer whose transaction is ongoing on the
    /// partition.
    InvalidTxnState,
    /// A transaction marker from an older coordinator epoch than the last one's.
    CoordinatorFenced,
    /// A control batch whose marker does not decode (what is wrong).
    InvalidMarker(String),
    /// The write failed, or the log is closed / failed.
    Io(io::Error),
}

impl std::fmt::Display for AppendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AppendError::OutOfOrderSequence => write!(f, "out of order sequence number"),
            AppendError::InvalidProducerEpoch => write!(f, "invalid producer epoch"),
            AppendError::InvalidTxnState => {
                write!(f, "non-transactional batch while the producer's transaction is ongoing")
            }
            AppendError::CoordinatorFenced => write!(f, "marker from an older coordinator epoch"),
            AppendError::InvalidMarker(m) => write!(f, "invalid transaction marker: {m}"),
            AppendError::Io(e) => write!(f, "storage error: {e}"),
        }
    }
}

impl std::error::Error for AppendError {}

/// Why a read failed.
#[derive(Debug)]
pub enum ReadError {
    /// `offset < log_start_offset` or `offset > high_watermark` (Kafka
    /// OFFSET_OUT_OF_RANGE; the mapping is in [`crate::error`]).
    OffsetOutOfRange,
    /// Reading the segment failed (Kafka KAFKA_STORAGE_ERROR).
    Io(io::Error),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::OffsetOutOfRange => write!(f, "offset out of range"),
            ReadError::Io(e) => write!(f, "storage error: {e}"),
        }
    }
}

impl std::error::Error for ReadError {}

/// A batch accepted in memory, waiting for the writer task.
struct Pending {
    data: Bytes,
    header: RecordBatchHeader,
    /// Start a new segment (based at this batch) before writing it.
    roll: bool,
    /// The transaction an ABORT marker batch ends, for the segment's aborted-transaction
    /// index file.
    aborted: Option<AbortedTxn>,
}

/// State changed synchronously by `append` (never borrowed across an await).
struct State {
    /// Log end offset: next offset to assign (>= high watermark).
    leo: i64,
    /// Bytes the active segment will hold once the pending queue is written.
    planned_size: u64,
    /// Base offset of the segment the next batch goes to (unless it rolls).
    planned_base: i64,
    pending: VecDeque<Pending>,
    producers: ProducerState,
    /// Broker time (ms) of the first append to the segment the next batch goes to; for
    /// the active segment found at open, its first batch's max timestamp.
    planned_first_append: Option<i64>,
}

/// The storage engine of one partition. Lives on the partition's owning shard only
/// (`!Send`); shared there as `Rc<PartitionLog>`.
pub struct PartitionLog {
    dir: PathBuf,
    config: LogConfig,
    /// The changeable part of the topic's configs, in force now.
    live: Cell<LiveConfig>,
    watch: Rc<HwWatch>,
    writer_wake: Rc<Notify>,
    state: RefCell<State>,
    /// Segments in offset order; the last is active. Only the writer task pushes.
    segments: RefCell<Vec<Rc<Segment>>>,
    log_start: Cell<i64>,
    /// (max timestamp, last offset of its batch) over the written log.
    max_ts: Cell<Option<(i64, i64)>>,
    /// The aborted transactions (an entry is added when its ABORT marker is appended).
    aborted: RefCell<TxnIndex>,
    closed: Cell<bool>,
    /// A compaction pass failed on this log's data (Kafka's "uncleanable" partition,
    /// `LogCleanerManager.markPartitionUncleanable`): the cleaner skips it until the log
    /// is opened again (broker restart, or the topic deleted and recreated).
    uncleanable: Cell<bool>,
    /// Serializes the log start checkpoint writes of DeleteRecords.
    checkpointing: glommio::sync::Semaphore,
    /// Held by the log cleaner from its check that a pass's source segments are still
    /// in the log to their replacement in memory (the file renames and fsyncs in between
    /// run on glommio's blocking thread), and by retention and close, so that neither
    /// removes or closes the segments of a swap under way (`cleaner.rs`).
    swapping: glommio::sync::Semaphore,
    /// The cleaner's checkpoint as last read or written; None until the cleaner first
    /// looks at the log (`cleaner.rs`).
    cleaner_checkpoint: Cell<Option<cleaner::Checkpoint>>,
    /// Callers of [`PartitionLog::roll_active`] (no offset) and
    /// [`PartitionLog::roll_active_at`] (the log end offset they decided at) waiting for
    /// the writer task to roll.
    roll_waiters: RefCell<Vec<(Option<i64>, futures_channel::oneshot::Sender<()>)>>,
    /// Set when a write failed; the log then refuses appends.
    failed: RefCell<Option<(io::ErrorKind, String)>>,
    /// Resolves (cancelled) once the writer task has ended: a failed log is closed only
    /// after its last write, so that nobody opens its files while it still writes.
    writer_exit: RefCell<Option<futures_channel::oneshot::Receiver<()>>>,
    /// Data written since the last fdatasync (Interval policy).
    dirty: Cell<bool>,
    /// Wakes the flush task (Interval policy) when `dirty` becomes true, and at close
    /// or drop so that it ends: a clean log's flush task sleeps without a timer.
    flush_wake: Rc<Notify>,
    /// The active segment's size (bytes) when its last recovery point was taken (at
    /// open: where its index files end), see [`recovery_point`].
    point_size: Cell<u64>,
    /// A recovery point waiting for the next fdatasync (Interval policy).
    point: RefCell<Option<recovery_point::RecoveryPoint>>,
    /// An ABORT marker's entry was appended to a `.txnindex` file without fsync since
    /// the last producer snapshot was written.
    txn_unsynced: Cell<bool>,
    /// Recovery points written (see [`recovery_point`]).
    pub recovery_points: Cell<u64>,
    /// The batch cache (the shard's, or a private one) and this partition's handle in it.
    cache: SharedCache,
    cache_id: PartitionId,
    /// Writes sent gathered from the arena ([`gather`]) rather than copied.
    pub gathered_writes: Cell<u64>,
    /// Batches those gathered writes carried.
    pub gathered_batches: Cell<u64>,
}

impl Drop for PartitionLog {
    fn drop(&mut self) {
        self.flush_wake.notify();
        if let Ok(mut c) = self.cache.try_borrow_mut() {
            c.unregister(self.cache_id);
        }
    }
}

impl std::fmt::Debug for PartitionLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartitionLog")
            .field("dir", &self.dir)
            .field("log_start_offset", &self.log_start.get())
            .field("high_watermark", &self.watch.get())
            .finish()
    }
}

impl PartitionLog {
    /// Opens (recovering) or creates the log in `dir` (created if missing), and starts
    /// its writer task (and flush timer under [`FlushPolicy::Interval`]) on the current
    /// shard. Must be called inside a glommio executor.
    pub async fn open(dir: PathBuf, mut config: LogConfig) -> io::Result<Rc<PartitionLog>> {
        config.segment_bytes = config.segment_bytes.clamp(4096, 2 << 30);
        config.index_interval_bytes = config.index_interval_bytes.max(1);
        let rec = recovery::recover(&dir, config.index_interval_bytes).await?;
        let Some(active) = rec.segments.last().cloned() else {
            return Err(io::Error::other(format!("{}: recovery left no segment", dir.display())));
        };
        let leo = active.next_offset.get();
        let mut log_start = rec.segments[0].base_offset;
        if let Some(checkpoint) = start_offset::load(&dir)? {
            if checkpoint > leo {
                // Only after data under the checkpoint was lost (no fsync before a crash).
                tracing::warn!(partition = %log_name(&dir), checkpoint, log_end_offset = leo, "log start offset checkpoint is past the end of the log; starting at the end");
            }
            log_start = log_start.max(checkpoint.min(leo));
        }
        // The active segment's age for `segment.ms` counts from its first batch, also
        // across a restart (Kafka's `LogSegment.rollingBasedTimestamp`, loaded from the
        // file): without it the first append after a restart never rolls an old
        // segment. Logs that never roll by age (the offsets logs) skip the read.
        let first_append = if config.segment_ms == i64::MAX {
            None
        } else {
            active.first_batch_timestamp().await.ok().flatten().filter(|ts| *ts >= 0)
        };
        let cache = match &config.shard_cache {
            Some(c) => c.clone(),
            None => ShardCache::shared(config.cache_bytes, usize::MAX),
        };
        let cache_id = cache.borrow_mut().register();
        let (writer_exited, writer_exit) = futures_channel::oneshot::channel::<()>();
        let log = Rc::new(PartitionLog {
            cache,
            cache_id,
            gathered_writes: Cell::new(0),
            gathered_batches: Cell::new(0),
            watch: Rc::new(HwWatch::new(leo)),
            writer_wake: Rc::new(Notify::default()),
            state: RefCell::new(State {
                leo,
                planned_size: active.size.get(),
                planned_base: active.base_offset,
                pending: VecDeque::new(),
                producers: rec.producers,
                planned_first_append: first_append,
            }),
            log_start: Cell::new(log_start),
            segments: RefCell::new(rec.segments),
            max_ts: Cell::new(rec.max_ts),
            aborted: RefCell::new(rec.aborted),
            closed: Cell::new(false),
            uncleanable: Cell::new(false),
            failed: RefCell::new(None),
            writer_exit: RefCell::new(Some(writer_exit)),
            checkpointing: glommio::sync::Semaphore::new(1),
            swapping: glommio::sync::Semaphore::new(1),
            cleaner_checkpoint: Cell::new(None),
            roll_waiters: RefCell::default(),
            dirty: Cell::new(false),
            flush_wake: Rc::new(Notify::default()),
            point_size: Cell::new(rec.active_scan_from),
            point: RefCell::default(),
            txn_unsynced: Cell::new(false),
            recovery_points: Cell::new(0),
            dir,
            live: Cell::new(LiveConfig::of(&config)),
            config,
        });
        let writer = writer_task(Rc::downgrade(&log), log.writer_wake.clone(), writer_exited);
        glommio::spawn_local(writer).detach();
        if log.config.flush == FlushPolicy::Interval {
            let ms = log.config.flush_interval_ms.max(1);
            let wake = log.flush_wake.clone();
            glommio::spawn_local(flush_task(Rc::downgrade(&log), wake, ms)).detach();
        }
        Ok(log)
    }

    /// The partition directory.
    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }

    /// The configuration the log was opened with (after clamping); see
    /// [`PartitionLog::live_config`] for the topic configs in force now.
    pub fn config(&self) -> &LogConfig {
        &self.config
    }

    /// The changeable topic configs in force.
    pub fn live_config(&self) -> LiveConfig {
        self.live.get()
    }

    /// Applies changed topic configs (`log_config` built as at open): from the next
    /// append on. Returns whether anything changed.
    pub fn update_config(&self, log_config: &LogConfig) -> bool {
        let next = LiveConfig::of(log_config);
        self.live.replace(next) != next
    }

    /// True when a write to this log failed (say, ENOSPC): appends get
    /// KAFKA_STORAGE_ERROR, reads below the high watermark still work, and the owning
    /// shard opens the log again (recovery) to resume appends, see
    /// [`crate::shard::Shard::writable_log`].
    pub fn write_failed(&self) -> bool {
        self.failed.borrow().is_some()
    }

    /// Fails the log as a failed write does (tests of what comes after one).
    #[cfg(test)]
    pub(crate) fn fail_for_test(&self) {
        self.fail(&io::Error::other("injected by a test"));
    }

    fn io_error(&self) -> Option<io::Error> {
        if let Some((kind, msg)) = &*self.failed.borrow() {
            return Some(io::Error::new(*kind, msg.clone()));
        }
        if self.closed.get() {
            return Some(io::Error::new(io::ErrorKind::BrokenPipe, "partition log closed"));
        }
        None
    }

    /// Appends ONE record batch (already validated by the caller: magic 2, CRC ok, size
    /// within limits). Assigns offsets (rewrites the base offset and stamps the partition
    /// leader epoch, [`PARTITION_LEADER_EPOCH`]; under LogAppendTime also stamps `now_ms`
    /// and recomputes the CRC), checks idempotent sequences, and
    /// resolves when the batch is written (and fdatasync'ed under
    /// [`FlushPolicy::Always`]), i.e. when it is below the high watermark. A duplicate of
    /// one of a producer's last 5 batches returns the original offsets without appending.
    /// Cancel-safe: once the first poll returns, the batch will be written even if this
    /// future is dropped.
    pub async fn append(&self, batch: Bytes, now_ms: i64) -> Result<AppendInfo, AppendError> {
        if let Some(e) = self.io_error() {
            return Err(AppendError::Io(e));
        }
        let h = RecordBatchHeader::parse(&batch).map_err(|e| {
            AppendError::Io(io::Error::new(io::ErrorKind::InvalidData, e.to_string()))
        })?;
        let marker = if h.is_control() {
            control::read_marker(&batch).map_err(|e| AppendError::InvalidMarker(e.to_string()))?
        } else {
            None
        };
        let info = {
            let mut st = self.state.borrow_mut();
            match st.producers.check(&h, marker.as_ref()) {
                SeqCheck::Fenced => return Err(AppendError::InvalidProducerEpoch),
                SeqCheck::OutOfOrder => return Err(AppendError::OutOfOrderSequence),
                SeqCheck::InvalidTxnState => return Err(AppendError::InvalidTxnState),
                SeqCheck::CoordinatorFenced => return Err(AppendError::CoordinatorFenced),
                SeqCheck::Duplicate(m) => AppendInfo {
                    base_offset: m.base_offset,
                    last_offset: m.last_offset,
                    log_append_time: -1,
                    log_start_offset: self.log_start.get(),
                    duplicate: true,
                },
                SeqCheck::Append => {
                    let size = h.total_size();
                    let base = st.leo;
                    let live = self.live.get();
                    let lat = if live.log_append_time { now_ms } else { -1 };
                    let aged = st
                        .planned_first_append
                        .is_some_and(|t| now_ms.saturating_sub(t) > live.segment_ms);
                    let roll = st.planned_size > 0
                        && (st.planned_size + size as u64 > live.segment_bytes
                            || base + h.last_offset_delta as i64 - st.planned_base
                                > u32::MAX as i64
                            || aged);
                    // Where the batch will lie in its segment file, for the arena to
                    // mirror the file's block alignment (see `write_group`).
                    let file_pos = self.config.write_from_arena.then_some(if roll {
                        0
                    } else {
                        st.planned_size
                    });
                    let (data, alloc) = self.cache.borrow_mut().copy_in_at(
                        self.cache_id,
                        &batch[..size],
                        file_pos,
                        |buf| {
                            batch::set_base_offset(buf, base);
                            batch::set_partition_leader_epoch(buf, PARTITION_LEADER_EPOCH);
                            if lat >= 0 {
                                batch::set_log_append_time(buf, lat);
                            }
                        },
                    );
                    let mut hdr = h;
                    hdr.base_offset = base;
                    hdr.partition_leader_epoch = PARTITION_LEADER_EPOCH;
                    if lat >= 0 {
                        hdr.max_timestamp = lat;
                        hdr.attributes |= batch::ATTR_LOG_APPEND_TIME;
                    }
                    let completed = st.producers.record(&hdr, marker.as_ref());
                    let mut aborted = None;
                    if let Some(txn) = completed {
                        if txn.aborted {
                            let t = AbortedTxn {
                                producer_id: txn.producer_id,
                                first_offset: txn.first_offset,
                                last_offset: txn.last_offset,
                                last_stable_offset: st.producers.last_stable_offset_after(&txn),
                            };
                            self.aborted.borrow_mut().insert(t);
                            aborted = Some(t);
                        }
                        st.producers.completed_unwritten(txn);
                    }
                    if roll {
                        st.planned_size = 0;
                        st.planned_base = base;
                        st.planned_first_append = None;
                    }
                    st.planned_first_append.get_or_insert(now_ms);
                    st.planned_size += size as u64;
                    st.leo = hdr.next_offset();
                    self.cache.borrow_mut().insert(
                        self.cache_id,
                        CachedBatch {
                            base_offset: base,
                            last_offset: hdr.last_offset(),
                            data: data.clone(),
                            alloc,
                        },
                    );
                    st.pending.push_back(Pending { data, header: hdr, roll, aborted });
                    self.writer_wake.notify();
                    AppendInfo {
                        base_offset: base,
                        last_offset: hdr.last_offset(),
                        log_append_time: lat,
                        log_start_offset: self.log_start.get(),
                        duplicate: false,
                    }
                }
            }
        };
        self.watch.wait_above(info.last_offset).await;
        if self.watch.get() > info.last_offset {
            Ok(info)
        } else {
            Err(AppendError::Io(
                self.io_error().unwrap_or_else(|| io::Error::other("append not written")),
            ))
        }
    }

    /// Whole stored batches starting with the batch that CONTAINS `offset`, up to
    /// `max_bytes` total but always at least one whole batch if any exists at/after
    /// `offset` (below the high watermark). Empty when `offset == high_watermark()`.
    /// `OffsetOutOfRange` when `offset < log_start_offset()` or `> high_watermark()`.
    /// Served from the shard's batch cache (zero-copy when the batches are adjacent in
    /// memory, see [`ShardCache::read`]) or else a DMA read of one segment (a read never
    /// spans two segments), whose batches are then cached too.
    pub async fn read(&self, offset: i64, max_bytes: usize) -> Result<Bytes, ReadError> {
        self.check_offset(offset)?;
        self.read_any(offset, max_bytes, i64::MAX).await
    }

    /// `OffsetOutOfRange` when a read from `offset` would fail for its offset alone:
    /// below `log_start_offset()` or above `high_watermark()` (what a read answers
    /// before it looks for batches, so a Fetch that reads a partition for its offsets
    /// only answers the same error).
    pub fn check_offset(&self, offset: i64) -> Result<(), ReadError> {
        if offset < self.log_start.get() || offset > self.watch.get() {
            return Err(ReadError::OffsetOutOfRange);
        }
        Ok(())
    }

    /// Bytes a read from `offset` could return at most, capped at `cap`: from the
    /// offset index's entry at or below `offset` in the segment holding it to the end
    /// of the log (an over-estimate by up to one index interval, plus data above the
    /// high watermark or last stable offset). 0 only when no segment holds data at or
    /// after that entry. Costs a binary search in memory, no I/O; a Fetch sizes each
    /// partition's share of its `max_bytes` with it before it reads.
    pub fn bytes_from(&self, offset: i64, cap: usize) -> usize {
        let segments = self.segments.borrow();
        let i = segments.partition_point(|g| g.base_offset <= offset).max(1) - 1;
        let mut total = 0u64;
        for (n, seg) in segments.iter().enumerate().skip(i) {
            let from =
                if n == i { u64::from(seg.index.borrow().lookup(seg.rel(offset))) } else { 0 };
            total += seg.size.get().saturating_sub(from);
            if total >= cap as u64 {
                return cap;
            }
        }
        total as usize
    }

    /// [`PartitionLog::read`] for a read_committed consumer (KIP-98): the batches stop
    /// at the last stable offset (exclusive), and come with the aborted transactions
    /// that overlap `[offset, last stable offset)` (Kafka's `FetchDataInfo.
    /// abortedTransactions`; possibly more than the batches returned need, never fewer),
    /// in marker order. Empty when `offset` is at or past the last stable offset (but
    /// not past the high watermark). Errors as [`PartitionLog::read`].
    pub async fn read_committed(
        &self,
        offset: i64,
        max_bytes: usize,
    ) -> Result<(Bytes, Vec<AbortedTxn>), ReadError> {
        self.check_offset(offset)?;
        let lso = self.last_stable_offset();
        let records = self.read_any(offset, max_bytes, lso).await?;
        if records.is_empty() || self.aborted.borrow().is_empty() {
            return Ok((records, Vec::new()));
        }
        Ok((records, self.aborted.borrow().collect(offset, lso)))
    }

    /// Exclusive: the first offset a read_committed consumer may not read yet: the
    /// first offset of the earliest transaction not complete (ongoing, or its marker
    /// not yet written), or the high watermark when that is lower (KIP-98, Kafka's
    /// `UnifiedLog.lastStableOffset`); never below the log start offset (DeleteRecords
    /// or retention past an open transaction's start: Kafka's
    /// `updateFirstUnstableOffset` clamps it there too).
    pub fn last_stable_offset(&self) -> i64 {
        let hw = self.watch.get();
        let first_unstable = self.state.borrow().producers.first_unstable_offset();
        first_unstable.map_or(hw, |o| o.max(self.log_start.get()).min(hw))
    }

    /// [`PartitionLog::read`] without the log start check (what is still stored below
    /// the start, the rest of a batch or segment DeleteRecords cut into, is returned)
    /// and with batches stopping before `limit` too (an offset at a batch boundary).
    async fn read_any(
        &self,
        offset: i64,
        max_bytes: usize,
        limit: i64,
    ) -> Result<Bytes, ReadError> {
        let hw = self.watch.get();
        if offset > hw {
            return Err(ReadError::OffsetOutOfRange);
        }
        let hw = hw.min(limit);
        if offset >= hw {
            return Ok(Bytes::new());
        }
        let cached = self.cache.borrow_mut().read(self.cache_id, offset, max_bytes, hw);
        crate::metrics::with(|m| m.cache_read(cached.is_some()));
        if let Some(b) = cached {
            return Ok(b);
        }
        let segs: Vec<Rc<Segment>> = {
            let s = self.segments.borrow();
            let i = s.partition_point(|g| g.base_offset <= offset).max(1) - 1;
            s[i..].to_vec()
        };
        for seg in segs {
            if let Some(parts) =
                seg.read_from(offset, max_bytes, hw).await.map_err(ReadError::Io)?
            {
                let cached = self.cache.borrow_mut().insert_read(self.cache_id, &parts);
                return Ok(cached.unwrap_or_else(|| match &parts[..] {
                    [one] => one.bytes().clone(),
                    _ => parts.iter().map(|p| &p[..]).collect::<Vec<_>>().concat().into(),
                }));
            }
        }
        Ok(Bytes::new())
    }

    /// Exclusive high watermark: the next offset to be readable = end of the written
    /// (under [`FlushPolicy::Always`]: fdatasync'ed) data.
    pub fn high_watermark(&self) -> i64 {
        self.watch.get()
    }

    /// Log end offset: next offset to be assigned (>= high watermark; greater while
    /// writes are in flight).
    pub fn log_end_offset(&self) -> i64 {
        self.state.borrow().leo
    }

    /// Log start offset, inclusive: the first offset a read may ask for (the oldest
    /// segment's base offset, or further after DeleteRecords, even inside a batch).
    pub fn log_start_offset(&self) -> i64 {
        self.log_start.get()
    }

    /// The idempotent producers this partition knows (DescribeProducers), by producer
    /// id: `(producer id, entry)`.
    pub fn active_producers(&self) -> Vec<(i64, producer_state::ProducerEntry)> {
        let st = self.state.borrow();
        let mut v: Vec<_> = st.producers.producers().map(|(pid, e)| (pid, e.clone())).collect();
        v.sort_by_key(|(pid, _)| *pid);
        v
    }

    /// Forgets the idempotent producers whose last batch is `expiration_ms` or more
    /// older than `now_ms` (Kafka `producer.id.expiration.ms`, KIP-854; see
    /// [`producer_state::ProducerState::remove_expired`]); returns how many. The next
    /// producer-state snapshot leaves them out.
    pub fn remove_expired_producers(&self, now_ms: i64, expiration_ms: i64) -> usize {
        self.state.borrow_mut().producers.remove_expired(now_ms, expiration_ms)
    }

    /// Bytes of record batches stored, over every segment (DescribeLogDirs' partition
    /// size, Kafka's `UnifiedLog.size`): what is written, not what is still pending.
    pub fn size_bytes(&self) -> u64 {
        self.segments.borrow().iter().map(|s| s.size.get()).sum()
    }

    /// Segment files of the log (the active one included).
    pub fn segment_count(&self) -> usize {
        self.segments.borrow().len()
    }

    /// Resolves once `high_watermark() > offset` (Fetch long-poll), or when the log is
    /// closed or failed. Cancel-safe (may be dropped by a timeout).
    pub fn wait_for_data(&self, offset: i64) -> impl Future<Output = ()> + 'static {
        self.watch.wait_above(offset)
    }

    /// ListOffsets by timestamp: `(offset, timestamp)` of the first record whose
    /// timestamp is >= `ts_ms`, as Kafka answers (`offsetsForTimes`). Segment max
    /// timestamps pick the segment, its time and offset indexes the start position,
    /// batch headers the first batch whose max timestamp qualifies, and that batch's
    /// records (decompressed if needed) the record. None if no written record
    /// qualifies. Errors: I/O, or a stored batch that does not decode (InvalidData).
    pub async fn offset_for_timestamp(&self, ts_ms: i64) -> io::Result<Option<(i64, i64)>> {
        let hw = self.watch.get();
        let start = self.log_start.get();
        let segs: Vec<Rc<Segment>> = self.segments.borrow().clone();
        for seg in segs {
            if seg.next_offset.get() <= start || seg.max_ts.get().is_none_or(|(t, _)| t < ts_ms) {
                continue;
            }
            let rel = seg.time_index.borrow().lookup(ts_ms);
            let mut pos = seg.index.borrow().lookup(rel) as u64;
            // Records below the log start (DeleteRecords inside a batch) do not count:
            // the batch holding the start may qualify only through them.
            while let Some((at, h, _, _)) = seg
                .find_batch(pos, hw, 0, |h| h.max_timestamp >= ts_ms && h.last_offset() >= start)
                .await?
            {
                let records = self.batch_records(h.base_offset).await?;
                if let Some(r) = records.into_iter().find(|(o, t)| *o >= start && *t >= ts_ms) {
                    return Ok(Some(r));
                }
                pos = at + h.total_size() as u64;
            }
        }
        Ok(None)
    }

    /// ListOffsets -3 (KIP-734, KAFKA-16310): `(offset, timestamp)` of the first record
    /// with the largest timestamp in the log (in the earliest batch holding it). None
    /// when the log is empty. Errors as [`PartitionLog::offset_for_timestamp`].
    pub async fn max_timestamp(&self) -> io::Result<Option<(i64, i64)>> {
        let Some((ts, last_offset)) = self.max_ts.get() else { return Ok(None) };
        let records = self.batch_records(last_offset).await?;
        Ok(records.into_iter().find(|(_, t)| *t == ts).or(Some((last_offset, ts))))
    }

    /// `(offset, timestamp)` of every record of the batch holding `offset`.
    async fn batch_records(&self, offset: i64) -> io::Result<Vec<(i64, i64)>> {
        let bytes = self.read_any(offset, 1, i64::MAX).await.map_err(|e| match e {
            ReadError::Io(e) => e,
            ReadError::OffsetOutOfRange => {
                io::Error::other(format!("offset {offset} out of range"))
            }
        })?;
        if bytes.is_empty() {
            return Ok(Vec::new());
        }
        crate::protocol::batch::record_timestamps(&bytes).map_err(|e| {
            io::Error::new(io::ErrorKind::InvalidData, format!("batch at offset {offset}: {e}"))
        })
    }

    /// Waits for pending writes, fdatasyncs, truncates the active segment to its logical
    /// size, writes its indexes and the producer snapshot, closes the files. Later
    /// appends fail with `AppendError::Io`; idempotent. A log whose write failed only
    /// waits for its zero fill and returns the failure; its files stay open and reads
    /// below the high watermark keep working.
    pub async fn close(&self) -> io::Result<()> {
        self.close_with(write_atomic).await
    }

    /// [`PartitionLog::close`] for a shutdown: the indexes and the producer snapshot are
    /// written without their fsyncs ([`segment::write_replace`]); the caller makes them
    /// durable with one `syncfs` once every log is closed (about 6 fewer synchronous
    /// fsyncs per log: a broker with 10,000 partitions took 20-120 s to stop).
    pub async fn close_deferring_sync(&self) -> io::Result<()> {
        self.close_with(segment::write_replace).await
    }

    async fn close_with(&self, write: segment::WriteFile) -> io::Result<()> {
        if self.closed.replace(true) {
            return Ok(());
        }
        // A cleaner swap under way finishes first (it sees `closed` and stops after).
        let _swap = self.swapping.acquire_permit(1).await;
        let leo = self.state.borrow().leo;
        self.writer_wake.notify();
        self.watch.wait_above(leo - 1).await;
        let res = self.finish_files(write).await;
        self.cache.borrow_mut().clear(self.cache_id);
        self.watch.stop();
        self.writer_wake.notify();
        self.flush_wake.notify();
        res
    }

    async fn finish_files(&self, write: segment::WriteFile) -> io::Result<()> {
        if self.failed.borrow().is_some() {
            // Whoever opens these files next must meet neither a write of this instance
            // nor a zero write landing late: wait for the writer task's end (it stops at
            // its next group), then for the zero fill.
            let exit = self.writer_exit.borrow_mut().take();
            if let Some(exit) = exit {
                let _ = exit.await;
            }
            self.active().zero_fill.settle().await;
            let failed =
                self.failed.borrow().clone().unwrap_or((io::ErrorKind::Other, String::new()));
            return Err(io::Error::new(failed.0, failed.1));
        }
        let active = self.active();
        active.zero_fill.settle().await;
        active.file.fdatasync().await.map_err(io::Error::from)?;
        active.file.truncate(active.size.get()).await.map_err(io::Error::from)?;
        active.finish_time_index();
        active.save_indexes_with(write)?;
        self.save_snapshot_with(write)?;
        let segs: Vec<Rc<Segment>> = self.segments.borrow().clone();
        for s in segs {
            let f = s.file.clone();
            drop(s);
            let _ = f.close_rc().await;
        }
        Ok(())
    }

    /// Closes the log and removes its directory, on glommio's blocking thread: freeing
    /// the blocks of a large file takes the kernel about 0.2 s per GB on ext4, which
    /// would stall every connection and partition of the shard.
    pub async fn delete(&self) -> io::Result<()> {
        let _ = self.close().await;
        let dir = self.dir.clone();
        glommio::executor()
            .spawn_blocking(move || match std::fs::remove_dir_all(&dir) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            })
            .await
    }

    fn active(&self) -> Rc<Segment> {
        // Invariant: a log always has its active segment; open creates one, and
        // retention or truncation rolls a new one before removing the last.
        self.segments.borrow().last().expect("a log always has an active segment").clone()
    }

    fn save_snapshot(&self) -> io::Result<()> {
        self.save_snapshot_with(write_atomic)
    }

    fn save_snapshot_with(&self, write: segment::WriteFile) -> io::Result<()> {
        let bytes = {
            let st = self.state.borrow();
            st.producers.encode_snapshot(st.leo)
        };
        write(&self.dir.join(recovery::SNAPSHOT_FILE), &bytes)
    }

    fn fail(&self, e: &io::Error) {
        if once_a_minute(&self.dir, "write failed") {
            tracing::error!(partition = %log_name(&self.dir), error = %e, "partition log write failed");
        } else {
            tracing::debug!(partition = %log_name(&self.dir), error = %e, "partition log write failed again");
        }
        *self.failed.borrow_mut() = Some((e.kind(), e.to_string()));
        self.watch.stop();
    }

    /// Writer task body: writes everything pending, in groups of up to
    /// [`MAX_WRITE_BYTES`], rolling segments where `append` decided to.
    async fn drain(&self) -> io::Result<()> {
        loop {
            // The flush task may fail the log while a write is in flight: write no more.
            if self.failed.borrow().is_some() {
                return Ok(());
            }
            let (group, roll) = {
                let mut st = self.state.borrow_mut();
                let mut group: Vec<Pending> = Vec::new();
                let mut bytes = 0usize;
                let mut roll = false;
                while let Some(p) = st.pending.pop_front() {
                    if !group.is_empty() && (p.roll || bytes + p.data.len() > MAX_WRITE_BYTES) {
                        st.pending.push_front(p);
                        break;
                    }
                    roll |= p.roll;
                    bytes += p.data.len();
                    group.push(p);
                }
                (group, roll)
            };
            let Some(hw) = group.last().map(|p| p.header.next_offset()) else {
                return Ok(());
            };
            if roll {
                self.roll(group[0].header.base_offset).await?;
            }
            let seg = self.active();
            let started = std::time::Instant::now();
            self.write_group(&seg, &group).await?;
            let written = std::time::Instant::now();
            crate::metrics::with(|m| m.timed(Timed::Write, written - started));
            if self.config.flush == FlushPolicy::Always {
                seg.file.fdatasync().await.map_err(io::Error::from)?;
                crate::metrics::with(|m| m.timed(Timed::Fdatasync, written.elapsed()));
            } else if !self.dirty.replace(true) {
                self.flush_wake.notify();
            }
            let aborted: Vec<AbortedTxn> = group.iter().filter_map(|p| p.aborted).collect();
            if !aborted.is_empty() {
                let sync = self.config.flush == FlushPolicy::Always;
                txn_index::append(&self.dir, seg.base_offset, &aborted, sync)?;
                self.txn_unsynced.set(self.txn_unsynced.get() || !sync);
            }
            for p in &group {
                let h = &p.header;
                if self.max_ts.get().is_none_or(|(t, _)| h.max_timestamp > t) {
                    self.max_ts.set(Some((h.max_timestamp, h.last_offset())));
                }
            }
            self.state.borrow_mut().producers.on_high_watermark(hw);
            self.watch.advance(hw);
            self.take_recovery_point(&seg);
        }
    }

    /// One round of the writer task: drain the pending batches, then roll the active
    /// segment if [`PartitionLog::roll_active`] asked for it. True when the task is done
    /// (the log failed, or is closed with nothing left to write).
    async fn write_pending(&self) -> bool {
        if self.failed.borrow().is_some() {
            return true;
        }
        if let Err(e) = self.drain().await {
            self.fail(&e);
            return true;
        }
        if self.failed.borrow().is_some() {
            return true;
        }
        let waiters = self.roll_waiters.take();
        if !waiters.is_empty() && !self.closed.get() {
            let leo = self.state.borrow().leo;
            if waiters.iter().any(|(at, _)| at.is_none_or(|at| at == leo)) {
                if let Err(e) = self.roll_idle().await {
                    self.fail(&e);
                    return true;
                }
            }
            for (_, w) in waiters {
                let _ = w.send(());
            }
        }
        self.closed.get() && self.state.borrow().pending.is_empty()
    }

    /// Seals the active segment at the log end offset, if it holds data and nothing is
    /// pending (the writer task, right after a drain). Appends arriving meanwhile go to
    /// the new segment.
    async fn roll_idle(&self) -> io::Result<()> {
        if self.active().size.get() == 0 {
            return Ok(());
        }
        let base = {
            let mut st = self.state.borrow_mut();
            if !st.pending.is_empty() {
                return Ok(());
            }
            st.planned_size = 0;
            st.planned_base = st.leo;
            st.planned_first_append = None;
            st.leo
        };
        self.roll(base).await
    }

    /// Seals the active segment now, if it holds data, so that retention can delete it
    /// (Kafka rolls before deleting every segment of a log). Done by the writer task
    /// after it has written everything pending. Errors: the log is closed or failed, or
    /// the roll failed.
    pub async fn roll_active(&self) -> io::Result<()> {
        self.roll_when(None).await
    }

    /// [`PartitionLog::roll_active`], but only if the log end offset is still `leo` when
    /// the writer task gets to it: a batch appended after the caller decided (retention,
    /// on the segment's written timestamps) stays in the active segment, which is then
    /// not rolled. Errors: as `roll_active`.
    pub async fn roll_active_at(&self, leo: i64) -> io::Result<()> {
        self.roll_when(Some(leo)).await
    }

    /// Asks the writer task to roll (if the log end offset is `at`, when given) and
    /// waits for it.
    async fn roll_when(&self, at: Option<i64>) -> io::Result<()> {
        if let Some(e) = self.io_error() {
            return Err(e);
        }
        let (tx, rx) = futures_channel::oneshot::channel();
        self.roll_waiters.borrow_mut().push((at, tx));
        self.writer_wake.notify();
        if rx.await.is_err() {
            return Err(self.io_error().unwrap_or_else(|| io::Error::other("roll not done")));
        }
        Ok(())
    }

    /// One DMA write: the partial last block followed by the group's batches, zero padded
    /// to the alignment, at the aligned start of that block. Gathered from the batches'
    /// arena memory when they lie there like in the file (see [`gather`]), else copied
    /// into one DMA buffer; the bytes written are the same either way.
    async fn write_group(&self, seg: &Segment, group: &[Pending]) -> io::Result<()> {
        let align = seg.alignment() as usize;
        let size = seg.size.get();
        let start = size - size % align as u64;
        let new_bytes: usize = group.iter().map(|p| p.data.len()).sum();
        let tail_len = (size - start) as usize;
        let used = tail_len + new_bytes;
        let buf_len = used.div_ceil(align) * align;
        let end = start + buf_len as u64;
        let gathered = if self.config.write_from_arena {
            let batches = group.iter().map(|p| p.data.clone()).collect();
            gather::GatheredWrite::new(&seg.file, &seg.tail.borrow(), batches, size)
        } else {
            None
        };
        let (n, new_tail) = match gathered {
            Some(mut w) => {
                debug_assert_eq!(w.len, buf_len);
                let new_tail = std::mem::take(&mut w.new_tail);
                seg.zero_fill.before_write(end).await;
                let (_, n) =
                    seg.file.write_at_aligned_from(start, w).await.map_err(io::Error::from)?;
                self.gathered_writes.set(self.gathered_writes.get() + 1);
                self.gathered_batches.set(self.gathered_batches.get() + group.len() as u64);
                (n, new_tail)
            }
            None => {
                let mut dma = seg.file.alloc_dma_buffer(buf_len);
                let new_tail = {
                    let b = dma.as_bytes_mut();
                    b[..tail_len].copy_from_slice(&seg.tail.borrow());
                    let mut at = tail_len;
                    for p in group {
                        b[at..at + p.data.len()].copy_from_slice(&p.data);
                        at += p.data.len();
                    }
                    b[used..].fill(0);
                    b[used - used % align..used].to_vec()
                };
                seg.zero_fill.before_write(end).await;
                (seg.file.write_at(dma, start).await.map_err(io::Error::from)?, new_tail)
            }
        };
        if n < buf_len {
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                format!("short DMA write: {n} of {buf_len} bytes"),
            ));
        }
        let live = self.live.get();
        let limit = live.segment_bytes.div_ceil(align as u64) * align as u64;
        let max_write = self.config.zero_fill_max_write;
        seg.zero_fill.after_write(&seg.file, new_bytes as u64, end, limit, max_write);
        let mut pos = size;
        for p in group {
            seg.note_batch(pos, &p.header, live.index_interval_bytes);
            pos += p.data.len() as u64;
        }
        seg.size.set(pos);
        *seg.tail.borrow_mut() = new_tail;
        Ok(())
    }

    /// Seals the active segment (truncate padding, sync, final time index entry, index
    /// files, producer snapshot) and starts a new one based at `base`.
    async fn roll(&self, base: i64) -> io::Result<()> {
        let old = self.active();
        old.zero_fill.settle().await;
        old.file.truncate(old.size.get()).await.map_err(io::Error::from)?;
        if self.config.flush != FlushPolicy::Never {
            old.file.fdatasync().await.map_err(io::Error::from)?;
        }
        old.finish_time_index();
        old.save_indexes()?;
        old.tail.borrow_mut().clear();
        let seg = Rc::new(Segment::create(&self.dir, base).await?);
        if self.config.flush == FlushPolicy::Always {
            std::fs::File::open(&self.dir)?.sync_all()?;
        }
        self.segments.borrow_mut().push(seg);
        self.point_size.set(0);
        self.point.take();
        // The snapshot no longer replays the ABORT markers before it.
        if self.txn_unsynced.replace(false) {
            txn_index::sync(&self.dir, old.base_offset)?;
        }
        self.save_snapshot()?;
        tracing::debug!(dir = %self.dir.display(), base, "rolled segment");
        Ok(())
    }
}

/// Least time between two reports of the same kind about one partition directory.
const REPORT_EVERY: Duration = Duration::from_secs(60);

thread_local! {
    /// When each (directory, kind of report) was last logged at its full level.
    static REPORTED: RefCell<std::collections::HashMap<(PathBuf, &'static str), std::time::Instant>> =
        RefCell::default();
}

/// A partition log's name in warnings: its directory's name, `topic-partition` (as
/// Kafka names a log), e.g. `orders-3` or `__consumer_offsets-7`.
pub fn log_name(dir: &Path) -> std::borrow::Cow<'_, str> {
    dir.file_name().map_or_else(|| dir.to_string_lossy(), |n| n.to_string_lossy())
}

/// True when a report of kind `what` about partition directory `dir` is due: the first
/// one, or one [`REPORT_EVERY`] after the last. While a disk stays full, a partition
/// fails a write and is opened again every second; this keeps its ERROR and INFO lines
/// to one a minute (the others go to debug).
pub fn once_a_minute(dir: &Path, what: &'static str) -> bool {
    REPORTED.with(|r| {
        let mut r = r.borrow_mut();
        let now = std::time::Instant::now();
        let key = (dir.to_path_buf(), what);
        let due = r.get(&key).is_none_or(|t| now.duration_since(*t) >= REPORT_EVERY);
        if due {
            r.insert(key, now);
        }
        due
    })
}

/// The per-partition writer: sleeps until `append` (or [`PartitionLog::roll_active`])
/// notifies, then drains, then rolls if asked to. Holds only a weak reference while
/// idle, so dropping the last `Rc<PartitionLog>` ends it.
async fn writer_task(
    log: Weak<PartitionLog>,
    wake: Rc<Notify>,
    _exited: futures_channel::oneshot::Sender<()>,
) {
    loop {
        wake.wait().await;
        let Some(log) = log.upgrade() else { return };
        if log.write_pending().await {
            // Whoever still waits for a roll is answered by the dropped sender.
            log.roll_waiters.take();
            return;
        }
    }
}

/// Background fdatasync of the active segment (FlushPolicy::Interval): `ms` after a
/// write finds the log clean, so that written data is durable within `ms` (plus the
/// fdatasync). Between writes it sleeps on `wake` with no timer: an idle partition costs
/// no wake-up (1,000 idle partitions cost 0.02-0.05 of a core in 1 s ticks). Holds only
/// a weak reference, so dropping the last `Rc<PartitionLog>` (which notifies) ends it.
async fn flush_task(log: Weak<PartitionLog>, wake: Rc<Notify>, ms: u64) {
    loop {
        wake.wait().await;
        if log.upgrade().is_none_or(|l| l.closed.get() || l.failed.borrow().is_some()) {
            return;
        }
        glommio::timer::sleep(Duration::from_millis(ms)).await;
        let Some(log) = log.upgrade() else { return };
        if log.closed.get() || log.failed.borrow().is_some() {
            return;
        }
        if log.dirty.replace(false) {
            let seg = log.active();
            // A recovery point taken before this fdatasync describes data it covers.
            let point = log.point.take();
            let started = std::time::Instant::now();
            if let Err(e) = seg.file.fdatasync().await {
                log.fail(&io::Error::from(e));
                return;
            }
            crate::metrics::with(|m| m.timed(Timed::Fdatasync, started.elapsed()));
            if let Some(point) = point {
                log.write_recovery_point(point);
            }
        }
    }
}

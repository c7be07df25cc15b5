//! Log compaction (`cleanup.policy=compact`), as Kafka's log cleaner does it: for every
//! key only the record with the latest offset survives, tombstones (null values) are
//! removed `delete.retention.ms` after the cleaner first kept them (KIP-534: the batch
//! gets a delete horizon), and offsets never change (the removed records leave gaps).
//!
//! Which log the shard cleans next is chosen as Kafka's `LogCleanerManager` does
//! ([`filthiest`], driven by `shard/cleaner.rs`): each log is weighed ([`LogToClean`]),
//! the one with the highest cleanable ratio among those eligible goes first, then all
//! are weighed again.
//!
//! One pass ([`PartitionLog::compact`]), on the partition's owning shard:
//! 1. The **cleanable range** is the sealed segments (never the active one) up to the
//!    first one younger than `min.compaction.lag.ms` (by its largest record timestamp)
//!    or reaching past the last stable offset (a transaction still open there may
//!    abort).
//!    The **dirty** part is what lies past the cleaner checkpoint ([`Checkpoint`],
//!    `cleaner-offset-checkpoint` in the partition directory: the end of the last pass's
//!    range). The pass runs when dirty bytes / cleanable bytes exceed
//!    `min.cleanable.dirty.ratio`, or when the earliest first-batch timestamp of the
//!    dirty sealed segments is older than `max.compaction.lag.ms` (Kafka's
//!    `maxCompactionDelay`), or when the checkpoint's delete horizon has passed: the
//!    smallest horizon of a batch the last pass kept with a tombstone, so that a
//!    tombstone goes about `delete.retention.ms` after its first pass even when no new
//!    data arrives (KIP-534; Kafka's own cleaner waits for new dirty data). A pass for
//!    the horizon alone maps nothing and rewrites the cleanable range.
//! 2. The **offset map**: key -> latest offset over the dirty segments, oldest first,
//!    segment by segment while the keys held stay within the dedupe budget
//!    (`--log-cleaner-dedupe-buffer-size`); the pass cleans up to the end of the last
//!    segment mapped.
//! 3. Every segment from the start of the log to there is **rewritten** without the
//!    records the map supersedes (a record whose key maps to a larger offset), keyless
//!    records, and tombstones past their batch's delete horizon; a batch that keeps a
//!    tombstone and has no horizon gets one (`now + delete.retention.ms`, attribute bit
//!    6 with the base timestamp, record deltas re-encoded). Consecutive segments whose sizes add up to at
//!    most `segment.bytes` are rewritten into one (Kafka's `groupSegmentsBySize`), named
//!    by the first, so compacted logs do not pile up small files. A batch keeps its base
//!    offset and last offset (see [`crate::protocol::records`]); a batch left with no
//!    records goes, unless it is the last batch of an idempotent producer, which stays
//!    as an empty batch so the producer's sequence state survives. A lone segment in
//!    which nothing changes is not rewritten; a group left empty is deleted (its offsets
//!    become a gap), unless it starts the log, which keeps an empty segment to hold the
//!    log start offset.
//! 4. **Crash safety**: the new segment is written to `<base>.log.cleaned` and
//!    fdatasync'ed; then it is renamed to `<base>.<end>.swap` and the directory
//!    fsync'ed: the commit point, the name says which segments it replaces (base offsets
//!    in `[base, end)`). Then the sources' index files and their other `.log` files are
//!    removed, the swap file is renamed over `<base>.log` (and the directory fsync'ed),
//!    the new segment replaces the sources in memory and its indexes are written. The
//!    renames, unlinks and fsyncs run on glommio's blocking thread, in that order; while
//!    they do, the sources stay in the log (readers keep their open files) and retention
//!    and close wait (`PartitionLog::swapping`). Recovery ([`super::recovery`]) deletes a
//!    leftover `.cleaned` file (before the commit point: the sources are intact) and
//!    finishes a leftover `.swap` the same way ([`complete_swaps`]); missing indexes are
//!    rebuilt by its scan.
//!
//! Readers in flight keep the old segment's open file (and its read-ahead) until they
//! finish. Control batches are kept as they are (Kafka removes a marker once its
//! transaction's records are gone and `delete.retention.ms` has passed; shardlog does
//! not yet). Records of aborted transactions are neither mapped nor kept (a
//! transactional batch between its producer's first offset and ABORT marker in the
//! aborted-transaction index). A pass over several segments writes their aborted
//! transaction index entries into the new segment's file before it removes theirs.

use std::collections::HashMap;
use std::io;
use std::path::Path;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_lite::AsyncWriteExt;
use glommio::io::{DmaStreamWriterBuilder, OpenOptions};

use super::segment::ScanChunk;
use super::segment::{segment_path, write_atomic, Segment};
use super::PartitionLog;
use crate::protocol::batch::{RecordBatchHeader, ScanStop};
use crate::protocol::records::{self, BatchRecords};

/// The file holding the cleaner checkpoint: the offset (decimal) up to which the log was
/// cleaned, exclusive.
pub const CHECKPOINT_FILE: &str = "cleaner-offset-checkpoint";

/// Bytes read per step while cleaning.
const CHUNK: usize = 1 << 20;

/// Bytes an offset map entry costs beyond its key (hash table slot, `Bytes` header,
/// offset).
const MAP_ENTRY_OVERHEAD: usize = 64;

/// The topic configs compaction follows (Kafka names in parentheses; defaults as Kafka's).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompactionPolicy {
    /// A dirty / cleanable bytes ratio above this starts a pass
    /// (`min.cleanable.dirty.ratio`, 0.5).
    pub min_cleanable_dirty_ratio: f64,
    /// A segment whose largest timestamp is less than this many ms old is not cleaned
    /// yet (`min.compaction.lag.ms`, 0).
    pub min_compaction_lag_ms: i64,
    /// A dirty sealed segment whose first batch is older than this many ms is cleaned
    /// whatever the ratio (`max.compaction.lag.ms`, `i64::MAX`).
    pub max_compaction_lag_ms: i64,
    /// Tombstones are kept this many ms after their segment was cleaned
    /// (`delete.retention.ms`, 86,400,000).
    pub delete_retention_ms: i64,
}

impl Default for CompactionPolicy {
    fn default() -> Self {
        CompactionPolicy {
            min_cleanable_dirty_ratio: 0.5,
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: i64::MAX,
            delete_retention_ms: 86_400_000,
        }
    }
}

/// The broker's cleaner settings (flags).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CleanerLimits {
    /// Bytes of keys (plus [`MAP_ENTRY_OVERHEAD`] each) the offset map may hold
    /// (`log.cleaner.dedupe.buffer.size`); at least one segment is mapped per pass.
    pub map_bytes: usize,
    /// Bytes read plus written per second, at most (`log.cleaner.io.max.bytes.per.second`).
    pub io_bytes_per_sec: f64,
}

impl Default for CleanerLimits {
    fn default() -> Self {
        CleanerLimits { map_bytes: 128 << 20, io_bytes_per_sec: f64::MAX }
    }
}

/// What one pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cleaned {
    /// The checkpoint before the pass (offset, exclusive).
    pub cleaned_from: i64,
    /// The cleaned range ended here (exclusive): the new checkpoint. Equal to
    /// `cleaned_from` after a pass for the delete horizon alone.
    pub cleaned_up_to: i64,
    /// The new checkpoint's delete horizon (ms; see [`Checkpoint`]).
    pub delete_horizon_ms: Option<i64>,
    /// Keys in the offset map.
    pub keys: usize,
    /// Segments rewritten.
    pub segments_rewritten: usize,
    /// Records removed.
    pub records_removed: u64,
    /// Bytes of the rewritten segments before and after.
    pub bytes_before: u64,
    /// See `bytes_before`.
    pub bytes_after: u64,
}

/// The cleaner's checkpoint of one log, the content of [`CHECKPOINT_FILE`]:
///
/// | line | content |
/// | --- | --- |
/// | 1 | `cleaned_up_to`, decimal |
/// | 2 (optional) | `delete_horizon_ms`, decimal; absent when None |
///
/// A file of one line (written before the horizon was tracked) reads as no horizon.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Checkpoint {
    /// The end of the last cleaned range (offset, exclusive): where the dirty part starts
    /// (Kafka's `cleaner-offset-checkpoint` entry).
    pub cleaned_up_to: i64,
    /// The smallest delete horizon (ms since the epoch, KIP-534) of a batch that the
    /// last pass kept with a tombstone in it: from then on a pass removes at least one
    /// tombstone, so the log is due for one even without new dirty data. None: no
    /// tombstone waits.
    pub delete_horizon_ms: Option<i64>,
}

impl Checkpoint {
    /// Parses the file's text (None: not a checkpoint).
    pub fn parse(text: &str) -> Option<Checkpoint> {
        let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
        let cleaned_up_to = lines.next()?.parse().ok()?;
        let delete_horizon_ms = match lines.next() {
            Some(l) => Some(l.parse().ok()?),
            None => None,
        };
        Some(Checkpoint { cleaned_up_to, delete_horizon_ms })
    }

    /// The file's text.
    pub fn encode(&self) -> String {
        match self.delete_horizon_ms {
            Some(h) => format!("{}\n{h}\n", self.cleaned_up_to),
            None => format!("{}\n", self.cleaned_up_to),
        }
    }
}

/// Reads the checkpoint's cleaned offset (None: no file, or unreadable).
pub fn load_checkpoint(dir: &Path) -> Option<i64> {
    load_cleaner_checkpoint(dir).map(|c| c.cleaned_up_to)
}

/// Reads the whole checkpoint (None: no file, or unreadable).
pub fn load_cleaner_checkpoint(dir: &Path) -> Option<Checkpoint> {
    Checkpoint::parse(&std::fs::read_to_string(dir.join(CHECKPOINT_FILE)).ok()?)
}

/// What the cleaner weighs of one compacted log before choosing which to clean
/// (Kafka's `LogToClean`, built by `LogCleanerManager.grabFilthiestCompactedLog`).
/// The cleanable segments are the sealed ones up to the first younger than
/// `min.compaction.lag.ms`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogToClean {
    /// Bytes of the cleanable segments below the checkpoint (Kafka's `cleanBytes`).
    pub clean_bytes: u64,
    /// Bytes of the cleanable segments past the checkpoint (Kafka's `cleanableBytes`).
    pub dirty_bytes: u64,
    /// ms by which the earliest first-batch timestamp of the dirty sealed segments is
    /// past `max.compaction.lag.ms`; 0 when none is (Kafka's
    /// `LogCleanerManager.maxCompactionDelay`).
    pub compaction_delay_ms: i64,
    /// The checkpoint's delete horizon has passed (see [`Checkpoint`]).
    pub delete_horizon_due: bool,
    /// The log's `min.cleanable.dirty.ratio`.
    pub min_cleanable_ratio: f64,
}

impl LogToClean {
    /// Clean plus dirty bytes (Kafka's `totalBytes`).
    pub fn total_bytes(&self) -> u64 {
        self.clean_bytes + self.dirty_bytes
    }

    /// Dirty / total bytes, 0 for an empty log (Kafka's `cleanableRatio`).
    pub fn cleanable_ratio(&self) -> f64 {
        match self.total_bytes() {
            0 => 0.0,
            t => self.dirty_bytes as f64 / t as f64,
        }
    }

    /// Kafka's test for a log it may clean now: dirty bytes past `max.compaction.lag.ms`,
    /// or a ratio above `min.cleanable.dirty.ratio` (strictly).
    pub fn dirty_enough(&self) -> bool {
        (self.compaction_delay_ms > 0 && self.dirty_bytes > 0)
            || self.cleanable_ratio() > self.min_cleanable_ratio
    }
}

/// Which of `logs` (None: not compacted, or nothing in it) to clean next, as Kafka's
/// `LogCleanerManager.grabFilthiestCompactedLog`: among the non-empty logs that are
/// [`LogToClean::dirty_enough`], the one with the highest cleanable ratio (a log past
/// `max.compaction.lag.ms` takes its turn by ratio too); when none is, the one with
/// the highest ratio among those whose delete horizon is due (the KIP-534 pass Kafka's
/// pull request #10914 had before it was merged without it). Ties go to the earlier.
pub fn filthiest(logs: &[Option<LogToClean>]) -> Option<usize> {
    let best = |pick: &dyn Fn(&LogToClean) -> bool| {
        let mut best: Option<(usize, f64)> = None;
        for (i, l) in logs.iter().enumerate() {
            let Some(l) = l.filter(|l| l.total_bytes() > 0 && pick(l)) else { continue };
            if best.is_none_or(|(_, r)| l.cleanable_ratio() > r) {
                best = Some((i, l.cleanable_ratio()));
            }
        }
        best.map(|(i, _)| i)
    };
    best(&LogToClean::dirty_enough).or_else(|| best(&|l: &LogToClean| l.delete_horizon_due))
}

/// Paces the cleaner's I/O to `bytes_per_sec`.
struct Throttle {
    bytes_per_sec: f64,
    start: Instant,
    bytes: u64,
}

impl Throttle {
    async fn account(&mut self, bytes: usize) {
        self.bytes += bytes as u64;
        if self.bytes_per_sec <= 0.0 || self.bytes_per_sec >= f64::MAX / 2.0 {
            return;
        }
        let due = Duration::from_secs_f64(self.bytes as f64 / self.bytes_per_sec);
        let elapsed = self.start.elapsed();
        if due > elapsed {
            glommio::timer::sleep(due - elapsed).await;
        }
    }
}

/// Key -> latest offset over the dirty range, and the log's aborted transactions: their
/// records neither enter the map nor survive a pass (Kafka's cleaner discards them).
#[derive(Default)]
struct OffsetMap {
    latest: HashMap<Bytes, i64>,
    bytes: usize,
    aborted: super::txn_index::AbortedRanges,
}

impl OffsetMap {
    /// True for a transactional batch of an aborted transaction.
    fn is_aborted(&self, h: &RecordBatchHeader) -> bool {
        h.is_transactional()
            && !h.is_control()
            && self.aborted.contains(h.producer_id, h.base_offset)
    }
}

impl OffsetMap {
    fn put(&mut self, key: &[u8], offset: i64) {
        if let Some(o) = self.latest.get_mut(key) {
            *o = (*o).max(offset);
        } else {
            self.bytes += key.len() + MAP_ENTRY_OVERHEAD;
            self.latest.insert(Bytes::copy_from_slice(key), offset);
        }
    }

    /// True when `offset` holds the latest value of `key` the map knows of (or the map
    /// has not seen the key).
    fn is_latest(&self, key: &[u8], offset: i64) -> bool {
        self.latest.get(key).is_none_or(|&o| offset >= o)
    }
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

/// The whole batches of a sealed segment, read `CHUNK` bytes at a time (more when one
/// batch is longer), the reads paced by the cleaner's throttle.
struct Chunks<'a> {
    seg: &'a Segment,
    pos: u64,
    end: u64,
    want: usize,
    /// The end was reached, or a damaged batch found (the error is returned next).
    stopped: Option<Option<io::Error>>,
}

impl<'a> Chunks<'a> {
    fn new(seg: &'a Segment) -> Self {
        Chunks { seg, pos: 0, end: seg.size.get(), want: CHUNK, stopped: None }
    }

    /// The next read and its valid batches, or None after the segment's end. Errors:
    /// I/O, or a damaged batch (a sealed segment must scan to its end; the cleaner then
    /// leaves the partition alone), returned after the valid batches before it.
    async fn next(&mut self, throttle: &mut Throttle) -> io::Result<Option<ScanChunk>> {
        match self.stopped.take() {
            Some(None) => {
                self.stopped = Some(None);
                return Ok(None);
            }
            Some(Some(e)) => return Err(e),
            None => {}
        }
        let chunk = self.seg.scan_chunk(self.pos, self.want, &mut self.end).await?;
        throttle.account(chunk.data.len()).await;
        glommio::yield_if_needed().await;
        self.pos += chunk.consumed as u64;
        match chunk.stop {
            ScanStop::NeedMore { need } => self.want = need.max(CHUNK),
            ScanStop::End => self.stopped = Some(None),
            stop => {
                self.stopped = Some(Some(invalid(format!(
                    "segment {} of {} is damaged at byte {}: {stop}",
                    self.seg.base_offset,
                    self.seg.dir.display(),
                    self.pos
                ))))
            }
        }
        Ok(Some(chunk))
    }
}

/// Calls `f(header, batch bytes)` for every batch of `seg`. Errors as [`Chunks::next`],
/// or `f`'s.
async fn for_each_batch(
    seg: &Segment,
    throttle: &mut Throttle,
    mut f: impl FnMut(&RecordBatchHeader, &[u8]) -> io::Result<()>,
) -> io::Result<()> {
    let mut chunks = Chunks::new(seg);
    while let Some(chunk) = chunks.next(throttle).await? {
        for (at, h) in &chunk.batches {
            f(h, &chunk.data[*at..*at + h.total_size()])?;
        }
    }
    Ok(())
}

fn decode(h: &RecordBatchHeader, bytes: &[u8]) -> io::Result<BatchRecords> {
    records::decode_records(bytes)
        .map_err(|e| invalid(format!("batch at offset {}: {e}", h.base_offset)))
}

/// A pass's view of the log, taken with no await (see [`PartitionLog::plan`]).
struct Plan {
    /// The log's segments, the last one active.
    segs: Vec<Rc<Segment>>,
    /// `segs[..cleanable]` are the cleanable segments (sealed, old enough).
    cleanable: usize,
    /// The first sealed segment past the checkpoint (the number of sealed segments
    /// when none is).
    first_dirty: usize,
    checkpoint: Checkpoint,
}

impl Plan {
    fn sealed(&self) -> &[Rc<Segment>] {
        &self.segs[..self.segs.len() - 1]
    }

    /// ms by which the dirty sealed segments are overdue, Kafka's
    /// `LogCleanerManager.maxCompactionDelay`: the earliest first-batch timestamp (ms > 0
    /// only) of the dirty sealed segments, measured against `now - max.compaction.lag.ms`.
    /// Reads a segment's first batch header the first time it is asked.
    async fn compaction_delay_ms(&self, policy: &CompactionPolicy, now_ms: i64) -> io::Result<i64> {
        let clean_until = now_ms.saturating_sub(policy.max_compaction_lag_ms.max(0));
        if clean_until <= 1 {
            return Ok(0); // no timestamp > 0 is earlier (the default lag is i64::MAX)
        }
        let mut earliest = i64::MAX;
        for seg in &self.sealed()[self.first_dirty.min(self.sealed().len())..] {
            if let Some(ts) = seg.first_batch_timestamp().await?.filter(|&t| t > 0) {
                earliest = earliest.min(ts);
            }
        }
        Ok(if earliest < clean_until { clean_until - earliest } else { 0 })
    }

    fn to_clean(&self, policy: &CompactionPolicy, delay_ms: i64, now_ms: i64) -> LogToClean {
        let size = |s: &[Rc<Segment>]| s.iter().map(|s| s.size.get()).sum::<u64>();
        let sealed = self.sealed();
        let dirty_end = self.cleanable.max(self.first_dirty);
        LogToClean {
            clean_bytes: size(&sealed[..self.first_dirty]),
            dirty_bytes: size(&sealed[self.first_dirty..dirty_end]),
            compaction_delay_ms: delay_ms,
            delete_horizon_due: self.checkpoint.delete_horizon_ms.is_some_and(|h| h <= now_ms),
            min_cleanable_ratio: policy.min_cleanable_dirty_ratio,
        }
    }
}

/// Runs `f` on glommio's blocking thread: renames, unlinks and fsyncs of the cleaner
/// would otherwise stall every connection and partition of the shard.
async fn off_shard<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    glommio::executor().spawn_blocking(f).await
}

/// Removes `path` on the blocking thread, ignoring errors (a leftover `.cleaned` file is
/// truncated by the next pass and deleted at start-up).
async fn discard(path: std::path::PathBuf) {
    let _ = off_shard(move || std::fs::remove_file(path)).await;
}

impl PartitionLog {
    /// The cleaner's checkpoint: the cached copy, else read from its file (on the blocking
    /// thread; a missing or unreadable file reads as offset 0, no horizon).
    async fn cleaner_checkpoint(&self) -> Checkpoint {
        if let Some(c) = self.cleaner_checkpoint.get() {
            return c;
        }
        let dir = self.dir.clone();
        let c = off_shard(move || load_cleaner_checkpoint(&dir)).await.unwrap_or_default();
        // A pass may have stored a newer one meanwhile.
        let c = self.cleaner_checkpoint.get().unwrap_or(c);
        self.cleaner_checkpoint.set(Some(c));
        c
    }

    /// The segments as they are now, split as the module documentation says. A
    /// checkpoint past the log end offset (data lost after a crash) counts as 0, as
    /// Kafka's `LogCleanerManager.cleanableOffsets` resets it to the log start.
    fn plan(&self, policy: &CompactionPolicy, now_ms: i64, mut checkpoint: Checkpoint) -> Plan {
        let segs: Vec<Rc<Segment>> = self.segments.borrow().clone();
        let sealed = &segs[..segs.len() - 1];
        if checkpoint.cleaned_up_to > self.log_end_offset() {
            checkpoint.cleaned_up_to = 0;
        }
        let lag_ok = |s: &Segment| {
            s.max_ts
                .get()
                .is_none_or(|(t, _)| now_ms.saturating_sub(t) >= policy.min_compaction_lag_ms)
        };
        // Nothing at or past the last stable offset: the records of a transaction not
        // yet complete may still be aborted (Kafka's `firstUncleanableDirtyOffset`).
        let lso = self.last_stable_offset();
        let cleanable = sealed
            .iter()
            .position(|s| !lag_ok(s) || s.next_offset.get() > lso)
            .unwrap_or(sealed.len());
        let first_dirty = sealed
            .iter()
            .position(|s| s.next_offset.get() > checkpoint.cleaned_up_to)
            .unwrap_or(sealed.len());
        Plan { segs, cleanable, first_dirty, checkpoint }
    }

    /// What the cleaner weighs of this log now (see [`LogToClean`]; `now_ms` is the
    /// broker's clock). Errors: reading a dirty segment's first batch header.
    pub async fn to_clean(&self, policy: &CompactionPolicy, now_ms: i64) -> io::Result<LogToClean> {
        let plan = self.plan(policy, now_ms, self.cleaner_checkpoint().await);
        let delay = plan.compaction_delay_ms(policy, now_ms).await?;
        Ok(plan.to_clean(policy, delay, now_ms))
    }

    /// True once a compaction pass failed on this log (Kafka's uncleanable partition).
    pub fn is_uncleanable(&self) -> bool {
        self.uncleanable.get()
    }

    /// Marks the log uncleanable: the cleaner leaves it alone until it is opened again.
    pub fn mark_uncleanable(&self) {
        self.uncleanable.set(true);
    }

    /// One compaction pass (see the module documentation), if the log is dirty enough,
    /// its delete horizon has passed (or `force`). `now_ms` is the broker's clock.
    /// Returns what it did, or None when there was nothing to do. Errors: I/O, or a
    /// damaged sealed segment (the log is left as it was; nothing is lost).
    pub async fn compact(
        &self,
        policy: &CompactionPolicy,
        limits: &CleanerLimits,
        now_ms: i64,
        force: bool,
    ) -> io::Result<Option<Cleaned>> {
        if self.closed.get() || self.failed.borrow().is_some() {
            return Ok(None);
        }
        let plan = self.plan(policy, now_ms, self.cleaner_checkpoint().await);
        let delay = plan.compaction_delay_ms(policy, now_ms).await?;
        let stats = plan.to_clean(policy, delay, now_ms);
        let cleanable = &plan.segs[..plan.cleanable];
        let dirty = plan.first_dirty < plan.cleanable;
        let horizon_pass = stats.delete_horizon_due && !cleanable.is_empty();
        if !dirty && !horizon_pass {
            return Ok(None);
        }
        if !force && !stats.dirty_enough() && !stats.delete_horizon_due {
            return Ok(None);
        }

        let mut throttle =
            Throttle { bytes_per_sec: limits.io_bytes_per_sec, start: Instant::now(), bytes: 0 };
        let mut map = OffsetMap { aborted: self.aborted.borrow().ranges(), ..Default::default() };
        // Without dirty segments (a pass for the delete horizon) nothing is mapped and
        // every cleanable segment is rewritten.
        let mut mapped_end = if dirty { plan.first_dirty } else { cleanable.len() };
        for seg in cleanable.get(plan.first_dirty..).unwrap_or_default() {
            if mapped_end > plan.first_dirty && map.bytes >= limits.map_bytes {
                break;
            }
            for_each_batch(seg, &mut throttle, |h, bytes| {
                if h.is_control() || map.is_aborted(h) {
                    return Ok(());
                }
                let b = decode(h, bytes)?;
                for r in &b.records {
                    if let Some(k) = b.key(r) {
                        map.put(k, r.offset);
                    }
                }
                Ok(())
            })
            .await?;
            mapped_end += 1;
        }
        let cleaned_up_to = if dirty {
            cleanable[mapped_end - 1].next_offset.get()
        } else {
            plan.checkpoint.cleaned_up_to
        };
        let mut done = Cleaned {
            cleaned_from: plan.checkpoint.cleaned_up_to,
            cleaned_up_to,
            keys: map.latest.len(),
            ..Cleaned::default()
        };
        let live = self.live.get();
        let horizon = Horizon { now_ms, delete_retention_ms: policy.delete_retention_ms };
        // The smallest delete horizon of a batch kept with a tombstone; one not yet due
        // from the last checkpoint stays too (its segment may lie past the range read).
        let mut waiting = plan.checkpoint.delete_horizon_ms.filter(|&h| h > now_ms);
        let mut start = 0;
        while start < mapped_end {
            let group = group_end(&cleanable[..mapped_end], start, live.segment_bytes);
            let sources: Vec<Rc<Segment>> = cleanable[start..group].to_vec();
            let cleaned =
                self.clean_group(&sources, &map, horizon, &mut throttle, &mut waiting).await?;
            if let Some((removed, after)) = cleaned {
                done.segments_rewritten += sources.len();
                done.records_removed += removed;
                done.bytes_before += sources.iter().map(|s| s.size.get()).sum::<u64>();
                done.bytes_after += after;
            }
            start = group;
        }
        if self.closed.get() {
            return Ok(Some(done));
        }
        let checkpoint = Checkpoint { cleaned_up_to, delete_horizon_ms: waiting };
        let (path, text) = (self.dir.join(CHECKPOINT_FILE), checkpoint.encode());
        off_shard(move || write_atomic(&path, text.as_bytes())).await?;
        self.cleaner_checkpoint.set(Some(checkpoint));
        done.delete_horizon_ms = waiting;
        Ok(Some(done))
    }

    /// Rewrites the consecutive segments `sources` as one segment (named by the first)
    /// without what `map` supersedes; see the module documentation. Lowers `waiting` to
    /// the delete horizon of every batch kept with a tombstone. Returns `(records
    /// removed, new size)`, or None when a lone segment did not change (or a source left
    /// the log meanwhile).
    async fn clean_group(
        &self,
        sources: &[Rc<Segment>],
        map: &OffsetMap,
        horizon: Horizon,
        throttle: &mut Throttle,
        waiting: &mut Option<i64>,
    ) -> io::Result<Option<(u64, u64)>> {
        let first = &sources[0];
        let last = &sources[sources.len() - 1];
        let (base, end) = (first.base_offset, last.next_offset.get());
        let tmp = segment_path(&self.dir, base, "log.cleaned");
        let result = self.write_cleaned(sources, &tmp, map, horizon, throttle, waiting).await;
        let (removed, size, headers) = match result {
            Ok(Some(r)) => r,
            Ok(None) => {
                discard(tmp).await;
                return Ok(None);
            }
            Err(e) => {
                discard(tmp).await;
                return Err(e);
            }
        };
        let file = OpenOptions::new().read(true).write(true).dma_open(&tmp).await;
        let file = match file {
            Ok(f) => f,
            Err(e) => {
                discard(tmp).await;
                return Err(e.into());
            }
        };
        let new = Segment::from_file(&self.dir, base, file, size);
        let interval = self.live.get().index_interval_bytes;
        for (pos, h) in &headers {
            new.note_batch(*pos, h, interval);
        }
        new.next_offset.set(end);
        new.finish_time_index();
        // From the check below to the new segment's index files, retention and close
        // wait: the sources stay in the log, at `at`, while the files are renamed and
        // synced on the blocking thread. Readers keep reading the sources' open files.
        let _swap = self
            .swapping
            .acquire_permit(1)
            .await
            .map_err(|e| io::Error::other(format!("cleaner swap: {e}")))?;
        let in_place = |segs: &[Rc<Segment>]| {
            let at = segs.iter().position(|s| Rc::ptr_eq(s, first));
            at.filter(|&at| {
                segs.len() > at + sources.len()
                    && sources.iter().zip(&segs[at..]).all(|(src, s)| Rc::ptr_eq(src, s))
            })
        };
        let at = in_place(&self.segments.borrow()).filter(|_| !self.closed.get());
        let Some(at) = at else {
            drop(new);
            discard(tmp).await;
            return Ok(None);
        };
        let bases: Vec<i64> = sources.iter().map(|s| s.base_offset).collect();
        let dir = self.dir.clone();
        let moved = || io::Error::other("cleaner: the log's segments moved during a swap");
        if size == 0 && at > 0 {
            // Nothing left: the segments go (their offsets become a gap at the end of the
            // one before). The first segment of the log stays, empty, to keep the log
            // start offset.
            drop(new);
            super::retire::retire(sources.to_vec());
            off_shard(move || {
                std::fs::remove_file(&tmp)?;
                remove_segment_files(&dir, &bases, None)
            })
            .await?;
            let mut segs = self.segments.borrow_mut();
            if in_place(&segs) != Some(at) {
                return Err(moved());
            }
            segs.drain(at..at + sources.len());
            segs[at - 1].next_offset.set(end);
            drop(segs);
            self.cache.borrow_mut().evict_range(self.cache_id, base, end);
            return Ok(Some((removed, 0)));
        }
        // The commit point: a complete swap file names the range it replaces.
        let swap = swap_path(&self.dir, base, end);
        {
            let (dir, swap) = (dir.clone(), swap.clone());
            off_shard(move || {
                std::fs::rename(&tmp, &swap)?;
                std::fs::File::open(&dir)?.sync_all()
            })
            .await?;
        }
        // Before the sources' files go: their blocks are freed off the shard.
        super::retire::retire(sources.to_vec());
        off_shard(move || finish_swap(&dir, &swap, base, &bases)).await?;
        let new = Rc::new(new);
        {
            let mut segs = self.segments.borrow_mut();
            if in_place(&segs) != Some(at) {
                return Err(moved());
            }
            segs.splice(at..at + sources.len(), [new.clone()]);
            let max_ts =
                segs.iter().filter_map(|s| s.max_ts.get()).reduce(
                    |a, b| {
                        if b.0 > a.0 {
                            b
                        } else {
                            a
                        }
                    },
                );
            self.max_ts.set(max_ts);
        }
        // Batches read from the sources meanwhile may be cached: they go with the rest.
        self.cache.borrow_mut().evict_range(self.cache_id, base, end);
        let (ix, tx) = (new.index.borrow().encode(), new.time_index.borrow().encode());
        let dir = self.dir.clone();
        off_shard(move || {
            write_atomic(&segment_path(&dir, base, "index"), &ix)?;
            write_atomic(&segment_path(&dir, base, "timeindex"), &tx)
        })
        .await?;
        Ok(Some((removed, size)))
    }

    /// Writes the cleaned copy of `sources`, one after the other, to `tmp`
    /// (fdatasync'ed), lowering `waiting` to the delete horizon of every batch kept with
    /// a tombstone. Returns `(records removed, size, (position, header) of every batch
    /// written)`, or None when a lone source stays as it is.
    #[allow(clippy::type_complexity)]
    async fn write_cleaned(
        &self,
        sources: &[Rc<Segment>],
        tmp: &Path,
        map: &OffsetMap,
        horizon: Horizon,
        throttle: &mut Throttle,
        waiting: &mut Option<i64>,
    ) -> io::Result<Option<(u64, u64, Vec<(u64, RecordBatchHeader)>)>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .dma_open(tmp)
            .await
            .map_err(io::Error::from)?;
        let mut writer =
            DmaStreamWriterBuilder::new(file).with_buffer_size(CHUNK).with_write_behind(2).build();
        let mut out: Vec<u8> = Vec::with_capacity(CHUNK);
        let mut written = 0u64;
        let mut headers = Vec::new();
        let mut removed = 0u64;
        let mut changed = sources.len() > 1;
        let result: io::Result<()> = async {
            for seg in sources {
                let mut chunks = Chunks::new(seg);
                while let Some(chunk) = chunks.next(throttle).await? {
                    for (at, h) in &chunk.batches {
                        let bytes = &chunk.data[*at..*at + h.total_size()];
                        let (kept, tombstone_until) = self.clean_batch(h, bytes, map, horizon)?;
                        if let Some(t) = tombstone_until {
                            *waiting = Some(waiting.map_or(t, |w| w.min(t)));
                        }
                        match kept {
                            Kept::Whole => {
                                headers.push((written + out.len() as u64, *h));
                                out.extend_from_slice(bytes);
                            }
                            Kept::Rebuilt(b, n) => {
                                let nh = RecordBatchHeader::parse(&b)
                                    .map_err(|e| invalid(e.to_string()))?;
                                headers.push((written + out.len() as u64, nh));
                                out.extend_from_slice(&b);
                                removed += n;
                                changed = true;
                            }
                            Kept::Nothing(n) => {
                                removed += n;
                                changed = true;
                            }
                        }
                    }
                    if !out.is_empty() {
                        writer.write_all(&out).await?;
                        written += out.len() as u64;
                        throttle.account(out.len()).await;
                        out.clear();
                    }
                }
            }
            Ok(())
        }
        .await;
        let closed = writer.close().await;
        result?;
        closed?;
        Ok(changed.then_some((removed, written, headers)))
    }

    /// What the cleaner keeps of one batch: the records whose key the map does not
    /// supersede; of those, tombstones only until the batch's delete horizon (KIP-534).
    /// A batch that keeps a tombstone and has no horizon yet gets one, `delete.retention.ms`
    /// from now, as Kafka's cleaner sets it. Also returns the batch's delete horizon
    /// (ms) when it keeps a tombstone.
    fn clean_batch(
        &self,
        h: &RecordBatchHeader,
        bytes: &[u8],
        map: &OffsetMap,
        horizon: Horizon,
    ) -> io::Result<(Kept, Option<i64>)> {
        if h.is_control() {
            return Ok((Kept::Whole, None));
        }
        let b = decode(h, bytes)?;
        let expired = b.delete_horizon().is_some_and(|at| horizon.now_ms >= at);
        let aborted = map.is_aborted(h);
        let keep: Vec<usize> = b
            .records
            .iter()
            .enumerate()
            .filter(|(_, r)| {
                !aborted
                    && b.key(r).is_some_and(|k| map.is_latest(k, r.offset))
                    && (r.has_value || !expired)
            })
            .map(|(i, _)| i)
            .collect();
        let removed = (b.records.len() - keep.len()) as u64;
        let keeps_tombstone = keep.iter().any(|&i| !b.records[i].has_value);
        let needs_horizon = b.delete_horizon().is_none() && keeps_tombstone;
        let at = horizon.now_ms.saturating_add(horizon.delete_retention_ms);
        let until = keeps_tombstone.then(|| b.delete_horizon().unwrap_or(at));
        if removed == 0 && !needs_horizon {
            return Ok((Kept::Whole, until));
        }
        if !keep.is_empty() {
            let rebuilt = if needs_horizon {
                records::rebuild_with_horizon(&b, &keep, at)
            } else {
                records::rebuild(&b, &keep)
            };
            let rebuilt =
                rebuilt.map_err(|e| invalid(format!("batch at offset {}: {e}", h.base_offset)))?;
            return Ok((Kept::Rebuilt(rebuilt, removed), until));
        }
        let producers_last = h.producer_id >= 0 && {
            let st = self.state.borrow();
            st.producers
                .get(h.producer_id)
                .and_then(|e| e.batches.back())
                .is_some_and(|m| m.last_offset == h.last_offset())
        };
        if producers_last {
            return Ok((Kept::Rebuilt(records::empty_batch(h), removed), None));
        }
        Ok((Kept::Nothing(removed), None))
    }
}

/// The clock and `delete.retention.ms` of a pass (for delete horizons).
#[derive(Debug, Clone, Copy)]
struct Horizon {
    now_ms: i64,
    delete_retention_ms: i64,
}

/// End (exclusive index) of the group of segments starting at `segs[start]` that are
/// cleaned into one: consecutive segments whose sizes add up to at most
/// `segment_bytes` and whose offsets span at most `u32::MAX` (index entries are
/// relative), at least one (Kafka's `LogCleaner.groupSegmentsBySize`).
fn group_end(segs: &[Rc<Segment>], start: usize, segment_bytes: u64) -> usize {
    let base = segs[start].base_offset;
    let mut size = segs[start].size.get();
    let mut end = start + 1;
    while end < segs.len() {
        let next = &segs[end];
        if size + next.size.get() > segment_bytes || next.next_offset.get() - base > u32::MAX as i64
        {
            break;
        }
        size += next.size.get();
        end += 1;
    }
    end
}

/// `<dir>/<base:020>.<end:020>.swap`: a complete cleaned segment replacing the segments
/// with base offsets in `[base, end)`.
fn swap_path(dir: &Path, base: i64, end: i64) -> std::path::PathBuf {
    dir.join(format!("{base:020}.{end:020}.swap"))
}

/// Removes the index files of the segments based at `bases` (but the aborted
/// transaction index of `keep`), and their `.log` files except the one based at `keep`.
fn remove_segment_files(dir: &Path, bases: &[i64], keep: Option<i64>) -> io::Result<()> {
    for &b in bases {
        for ext in ["index", "timeindex"] {
            remove_if_exists(&segment_path(dir, b, ext))?;
        }
        if Some(b) != keep {
            remove_if_exists(&segment_path(dir, b, super::txn_index::EXT))?;
        }
    }
    for &b in bases.iter().filter(|&&b| Some(b) != keep) {
        remove_if_exists(&segment_path(dir, b, "log"))?;
    }
    Ok(())
}

fn remove_if_exists(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Puts the swap file `swap` (based at `base`) in place of the segments based at
/// `bases`: their index files and the other `.log` files go, then the swap file is
/// renamed over `<base>.log` and the directory fsync'ed. Also what recovery does with a
/// swap file a crash left (see [`complete_swaps`]).
fn finish_swap(dir: &Path, swap: &Path, base: i64, bases: &[i64]) -> io::Result<()> {
    // The sources' aborted transactions go to the new segment's index first: a crash
    // after this leaves them in both, which the next merge (and the log) dedupes.
    let aborted = super::txn_index::merge_files(dir, bases)?;
    super::txn_index::rewrite(dir, base, &aborted)?;
    remove_segment_files(dir, bases, Some(base))?;
    std::fs::rename(swap, segment_path(dir, base, "log"))?;
    std::fs::File::open(dir)?.sync_all()
}

/// Start-up: finishes every swap a crash left between its commit point and its
/// rename (the `.log` files in the swap's range are replaced by it). Returns how many.
pub fn complete_swaps(dir: &Path, segment_bases: &[i64]) -> io::Result<usize> {
    let mut done = 0;
    for e in std::fs::read_dir(dir)? {
        let path = e?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else { continue };
        let Some(stem) = name.strip_suffix(".swap") else { continue };
        let Some((b, e)) = stem.split_once('.') else { continue };
        let (Ok(base), Ok(end)) = (b.parse::<i64>(), e.parse::<i64>()) else { continue };
        let bases: Vec<i64> =
            segment_bases.iter().copied().filter(|&s| s >= base && s < end).collect();
        tracing::info!(file = %path.display(), replaced = ?bases, "finishing an interrupted compaction swap");
        finish_swap(dir, &path, base, &bases)?;
        done += 1;
    }
    Ok(done)
}

/// The cleaner's verdict on one batch.
enum Kept {
    /// Every record stays: the batch is copied as it is.
    Whole,
    /// Some records (or, for a producer's last batch, none) stay: the rebuilt batch, and
    /// how many records went.
    Rebuilt(Vec<u8>, u64),
    /// The batch goes (this many records).
    Nothing(u64),
}

//! Retention: deleting whole segments from the start of a partition's log once they are
//! older than `retention.ms` or the log is larger than `retention.bytes`, as Kafka's log
//! manager does (`UnifiedLog.deleteOldSegments`), and rolling the active segment by age
//! (`segment.ms`, on the next append) so that old data can leave it. When every segment
//! is past retention, the active one included, the active segment is rolled and deleted
//! too (Kafka's `deleteSegments` rolls first), so a partition nobody writes to empties.
//!
//! Only sealed segments are deleted; the log start offset becomes the base offset of the
//! oldest segment left (unless DeleteRecords already moved it further, see
//! [`super::start_offset`]), so it is persisted by the files themselves (a restart finds
//! the same first segment) and never moves back. Reads below it get OFFSET_OUT_OF_RANGE and
//! ListOffsets(earliest) returns it.

use std::io;
use std::rc::Rc;

use super::segment::{segment_path, Segment};
use super::PartitionLog;

/// What a partition keeps, from its topic's configs (or the broker defaults).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetentionPolicy {
    /// `retention.ms`: a sealed segment whose largest record timestamp is more than this
    /// many ms before now is deleted (with every segment before it); -1: no time limit.
    pub retention_ms: i64,
    /// `retention.bytes`: the oldest sealed segments are deleted while the log without
    /// them still holds at least this many bytes; -1: no size limit.
    pub retention_bytes: i64,
    /// `cleanup.policy` includes `delete` (a `compact`-only topic keeps everything here).
    pub delete: bool,
}

/// What one retention pass deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Deleted {
    /// Segments deleted.
    pub segments: usize,
    /// Their bytes.
    pub bytes: u64,
    /// The log start offset after the pass.
    pub log_start_offset: i64,
}

impl PartitionLog {
    /// Deletes the segments `policy` no longer keeps, oldest first, stopping at the
    /// first one it keeps. When that is every segment, the active one included (it holds
    /// data, all of it past retention), the active segment is rolled first and then
    /// deleted too, as Kafka does: a partition nobody writes to empties. Whatever the
    /// policy, a sealed segment wholly below the log start offset (moved by
    /// DeleteRecords) goes too, as Kafka's `deleteLogStartOffsetBreachedSegments`.
    /// `now_ms` is the broker's clock (ms since the epoch). Errors: the roll failed, or
    /// removing a segment's files failed (the segment is already out of the log then; the
    /// error is the first file that could not go).
    pub async fn enforce_retention(
        &self,
        policy: &RetentionPolicy,
        now_ms: i64,
    ) -> io::Result<Deleted> {
        // A failed log is left as it is: the shard opens it again (recovery) and the
        // next pass applies retention to the new instance.
        if self.closed.get() || self.write_failed() {
            return Ok(Deleted { log_start_offset: self.log_start.get(), ..Deleted::default() });
        }
        // Not while the cleaner swaps segments in (its sources must stay in the log).
        let _swap = self.swapping.acquire_permit(1).await;
        if self.closed.get() || self.write_failed() {
            return Ok(Deleted { log_start_offset: self.log_start.get(), ..Deleted::default() });
        }
        let (n, all) = self.expired_segments(policy, now_ms);
        // The active segment is judged by what is written (its max timestamp): with a
        // batch appended but not yet written (high watermark below the log end offset),
        // or appended before the writer rolls (`roll_active_at`), it may hold new
        // records, so it stays. Kafka decides and rolls under the log's lock.
        let leo = self.log_end_offset();
        if all && self.high_watermark() == leo {
            self.roll_active_at(leo).await?;
            if self.closed.get() || self.write_failed() {
                return Ok(Deleted {
                    log_start_offset: self.log_start.get(),
                    ..Deleted::default()
                });
            }
            let (n, _) = self.expired_segments(policy, now_ms);
            return self.delete_oldest_segments(n);
        }
        self.delete_oldest_segments(n)
    }

    /// How many of the oldest sealed segments `policy` deletes, and whether it would
    /// delete the (non-empty) active segment too.
    fn expired_segments(&self, policy: &RetentionPolicy, now_ms: i64) -> (usize, bool) {
        let segs = self.segments.borrow();
        let mut total: u64 = segs.iter().map(|s| s.size.get()).sum();
        let mut n = 0;
        for (i, seg) in segs.iter().enumerate() {
            let active = i + 1 == segs.len();
            let below_start = !active && seg.next_offset.get() <= self.log_start.get();
            let too_old = policy.delete
                && policy.retention_ms >= 0
                && seg
                    .max_ts
                    .get()
                    .is_some_and(|(ts, _)| now_ms.saturating_sub(ts) > policy.retention_ms);
            let too_big = policy.delete
                && policy.retention_bytes >= 0
                && total - seg.size.get() >= policy.retention_bytes as u64;
            if !(below_start || too_old || too_big) || (active && seg.size.get() == 0) {
                break;
            }
            if active {
                return (n, true);
            }
            total -= seg.size.get();
            n += 1;
        }
        (n, false)
    }

    /// Deletes the sealed segments wholly below the log start offset (after
    /// DeleteRecords). Errors as [`PartitionLog::enforce_retention`].
    pub(super) async fn delete_segments_below_start(&self) -> io::Result<Deleted> {
        let keep_all = RetentionPolicy { retention_ms: -1, retention_bytes: -1, delete: false };
        self.enforce_retention(&keep_all, 0).await
    }

    /// Takes the `n` oldest segments (all sealed) out of the log, moves the log start
    /// offset past them (never back), and removes their files.
    fn delete_oldest_segments(&self, n: usize) -> io::Result<Deleted> {
        let mut deleted = Deleted { log_start_offset: self.log_start.get(), ..Deleted::default() };
        if n == 0 {
            return Ok(deleted);
        }
        let doomed: Vec<Rc<Segment>> =
            {
                let mut segs = self.segments.borrow_mut();
                let doomed: Vec<Rc<Segment>> = segs.drain(..n).collect();
                let past = doomed.last().map_or(0, |s| s.next_offset.get());
                self.log_start.set(self.log_start.get().max(segs[0].base_offset).max(past));
                // The log's largest timestamp (ListOffsets -3) may have gone with them.
                let max_ts = segs.iter().filter_map(|s| s.max_ts.get()).reduce(|a, b| {
                    if b.0 > a.0 {
                        b
                    } else {
                        a
                    }
                });
                self.max_ts.set(max_ts);
                doomed
            };
        self.cache.borrow_mut().evict_below(self.cache_id, self.log_start.get());
        self.aborted.borrow_mut().remove_below(self.log_start.get());
        deleted.log_start_offset = self.log_start.get();
        let mut first_error = None;
        for seg in &doomed {
            deleted.segments += 1;
            deleted.bytes += seg.size.get();
        }
        // Before the unlinks: the blocks are freed off the shard, after the reads in
        // flight (they hold their own `Rc<Segment>`).
        let bases: Vec<i64> = doomed.iter().map(|s| s.base_offset).collect();
        super::retire::retire(doomed);
        for base in bases {
            for ext in ["log", "index", "timeindex", super::txn_index::EXT] {
                match std::fs::remove_file(segment_path(&self.dir, base, ext)) {
                    Err(e) if e.kind() != io::ErrorKind::NotFound => {
                        first_error.get_or_insert(e);
                    }
                    _ => {}
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(deleted),
        }
    }
}

//! The log start offset a client moved with DeleteRecords (API 21, KIP-107), and its
//! checkpoint.
//!
//! Retention moves the log start offset only to a segment boundary, so the first
//! segment's base offset persists it. DeleteRecords may move it anywhere up to the high
//! watermark, inside a segment and even inside a batch: that logical start is written to
//! `<partition dir>/log-start-offset` (decimal text, temporary file + fsync + rename)
//! before the request is answered, and [`super::PartitionLog::open`] takes the larger of
//! it and the first segment's base offset, so a restart (or kill -9) never moves the
//! start back. Kafka keeps one `log-start-offset-checkpoint` per log dir, written every
//! `log.flush.start.offset.checkpoint.interval.ms`; shardlog writes it synchronously,
//! per partition.
//!
//! The sealed segments wholly below the new start are deleted at once (Kafka deletes
//! them at its next retention check), never the active segment.

use std::io::{self, Write};
use std::path::Path;

use super::PartitionLog;

/// The checkpoint file in a partition directory.
pub const LOG_START_FILE: &str = "log-start-offset";

/// Why DeleteRecords failed on a partition.
#[derive(Debug)]
pub enum DeleteRecordsError {
    /// The offset is above the high watermark, or negative other than -1 (Kafka
    /// OFFSET_OUT_OF_RANGE).
    OffsetOutOfRange,
    /// The checkpoint could not be written, or the log is closed or failed (Kafka
    /// KAFKA_STORAGE_ERROR).
    Io(io::Error),
}

impl std::fmt::Display for DeleteRecordsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeleteRecordsError::OffsetOutOfRange => write!(f, "offset out of range"),
            DeleteRecordsError::Io(e) => write!(f, "storage error: {e}"),
        }
    }
}

impl std::error::Error for DeleteRecordsError {}

/// The offset `dir`'s checkpoint holds, if it has one. A file that does not parse is
/// logged and ignored (the first segment's base offset then stands). Errors: reading it
/// failed other than by its absence.
pub fn load(dir: &Path) -> io::Result<Option<i64>> {
    let path = dir.join(LOG_START_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    match text.trim().parse::<i64>() {
        Ok(offset) if offset >= 0 => Ok(Some(offset)),
        _ => {
            tracing::warn!(partition = %super::log_name(dir), path = %path.display(), content = %text.trim(), "ignoring an unreadable log start offset checkpoint");
            Ok(None)
        }
    }
}

/// Writes `offset` as `dir`'s checkpoint durably: temporary file, fsync, rename, fsync
/// of the directory. Blocking: run on glommio's blocking thread, never on the shard
/// (two fsyncs per partition would stall every other request of the shard).
fn store(dir: &Path, offset: i64) -> io::Result<()> {
    let path = dir.join(LOG_START_FILE);
    let tmp = dir.join(format!("{LOG_START_FILE}.tmp"));
    {
        let mut f = std::fs::File::create(&tmp)?;
        writeln!(f, "{offset}")?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, &path)?;
    std::fs::File::open(dir)?.sync_all()
}

impl PartitionLog {
    /// DeleteRecords on this partition: moves the log start offset up to `offset`
    /// (exclusive end of what is deleted; -1 means the high watermark) and returns the
    /// low watermark, the log start offset afterwards. An offset at or below the current
    /// start changes nothing and returns the current start, as in Kafka
    /// (`UnifiedLog.maybeIncrementLogStartOffset`). The start is checkpointed before
    /// this returns (on glommio's blocking thread; the shard keeps serving); sealed
    /// segments wholly below it are then deleted (a failure there is
    /// logged, the start stands). Reads below the new start get OFFSET_OUT_OF_RANGE; a
    /// read at it still returns the whole batch that holds it.
    ///
    /// Errors: [`DeleteRecordsError::OffsetOutOfRange`] when `offset > high_watermark()`
    /// or `offset < -1`; [`DeleteRecordsError::Io`] when the checkpoint cannot be written
    /// or the log is closed or failed.
    pub async fn delete_records(&self, offset: i64) -> Result<i64, DeleteRecordsError> {
        if let Some(e) = self.io_error() {
            return Err(DeleteRecordsError::Io(e));
        }
        let hw = self.high_watermark();
        let target = if offset == -1 { hw } else { offset };
        if target < 0 || target > hw {
            return Err(DeleteRecordsError::OffsetOutOfRange);
        }
        if target <= self.log_start.get() {
            return Ok(self.log_start.get());
        }
        // One checkpoint write at a time per partition, so the file only ever grows.
        let _permit = self.checkpointing.acquire_permit(1).await.map_err(|e| {
            DeleteRecordsError::Io(io::Error::other(format!("log start checkpoint: {e}")))
        })?;
        if target <= self.log_start.get() {
            return Ok(self.log_start.get());
        }
        let dir = self.dir.clone();
        glommio::executor()
            .spawn_blocking(move || store(&dir, target))
            .await
            .map_err(DeleteRecordsError::Io)?;
        // Retention may have moved it further meanwhile; it never moves back.
        self.log_start.set(self.log_start.get().max(target));
        self.cache.borrow_mut().evict_below(self.cache_id, target);
        self.aborted.borrow_mut().remove_below(self.log_start.get());
        if let Err(e) = self.delete_segments_below_start().await {
            tracing::warn!(partition = %super::log_name(&self.dir), error = %e, "deleting segments below the log start offset failed");
        }
        Ok(self.log_start.get())
    }
}

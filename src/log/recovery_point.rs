//! Recovery points of a partition's active segment: while the segment is written, its
//! index files (and the partition's producer snapshot) are brought up to date each
//! [`super::LogConfig::recovery_point_bytes`] bytes, once the data they describe is durable.
//! Start-up recovery ([`super::recovery`]) scans the active segment from the last
//! offset index entry in its file and replays producers from the snapshot's offset, so
//! after a crash it reads about that many bytes of each log, not the whole active
//! segment since its roll or the last clean stop (up to `segment.bytes`, 1 GiB by
//! default). Kafka with its default flush settings recovers the whole active segment
//! after an unclean shutdown: its recovery point moves when a segment rolls.
//!
//! A point is *taken* by the writer task after a group of batches is written (under
//! [`FlushPolicy::Always`] also fdatasync'ed): it counts the index entries that exist
//! then (adding the time index entry of the segment's max timestamp so far, as a roll
//! does) and, when no append is waiting to be written (the log end offset is the
//! segment's end), encodes the producer snapshot. It is *written* at once under
//! `Always` and [`FlushPolicy::Never`], and under [`FlushPolicy::Interval`] after the
//! next fdatasync of the segment: the index entries are appended to the files (time
//! index first), the snapshot replaces `producer.snapshot`, none of them fsync'ed (a
//! process crash keeps them; after a power loss an older or damaged file only makes
//! recovery scan more, see [`Segment::append_index_entries`]). A point taken while
//! appends wait carries no snapshot, and is only taken once twice the distance was
//! written, so that a quiet moment (the usual case between produce requests) brings the
//! snapshot along: a snapshot that counted batches not yet written would be ahead of
//! the log after a crash that lost them, recovery would refuse it and replay the active
//! segment from its start without the producers of older segments; the previous
//! snapshot (a roll's or an earlier point's) is always usable.

use super::{recovery, segment, txn_index, FlushPolicy, PartitionLog, Segment};

/// A recovery point taken but not yet written (see the module docs).
#[derive(Debug)]
pub(super) struct RecoveryPoint {
    /// Base offset of the segment it describes: nothing is written if that segment is
    /// no longer the active one (its roll wrote complete index files).
    segment: i64,
    /// `(offset index, time index)` entries up to which the files are brought.
    entries: (usize, usize),
    /// The producer snapshot at the segment's end, when no append was waiting.
    snapshot: Option<Vec<u8>>,
}

impl PartitionLog {
    /// Takes a recovery point of the active segment `seg` if one is due: called by the
    /// writer task after each group is written (see the module docs). Under
    /// [`FlushPolicy::Interval`] the point waits in `self.point` for the next
    /// fdatasync (a newer one replaces it); otherwise it is written now.
    pub(super) fn take_recovery_point(&self, seg: &Segment) {
        let every = self.config.recovery_point_bytes;
        let size = seg.size.get();
        let since = size.saturating_sub(self.point_size.get());
        if every == 0 || since < every {
            return;
        }
        let snapshot = {
            let st = self.state.borrow();
            (st.leo == seg.next_offset.get()).then(|| st.producers.encode_snapshot(st.leo))
        };
        if snapshot.is_none() && since < 2 * every {
            return;
        }
        seg.finish_time_index();
        let point = RecoveryPoint {
            segment: seg.base_offset,
            entries: (seg.index.borrow().entries.len(), seg.time_index.borrow().entries.len()),
            snapshot,
        };
        self.point_size.set(size);
        if self.config.flush == FlushPolicy::Interval {
            *self.point.borrow_mut() = Some(point);
        } else {
            self.write_recovery_point(point);
        }
    }

    /// Writes `point` (its data is durable). A failure is logged, not the log's: the
    /// files stay as they were, and recovery after a crash scans from an older point.
    pub(super) fn write_recovery_point(&self, point: RecoveryPoint) {
        if self.closed.get() || self.failed.borrow().is_some() {
            return;
        }
        let seg = self.active();
        if seg.base_offset != point.segment {
            return;
        }
        let written = (|| {
            seg.append_index_entries(point.entries)?;
            if let Some(snapshot) = &point.snapshot {
                // The snapshot no longer replays the ABORT markers before it: their
                // aborted-transaction index entries must be durable first.
                if self.txn_unsynced.replace(false) {
                    txn_index::sync(&self.dir, seg.base_offset)?;
                }
                segment::write_replace(&self.dir.join(recovery::SNAPSHOT_FILE), snapshot)?;
            }
            std::io::Result::Ok(())
        })();
        match written {
            Ok(()) => {
                self.recovery_points.set(self.recovery_points.get() + 1);
                tracing::debug!(partition = %super::log_name(&self.dir), segment = seg.base_offset, entries = ?point.entries, snapshot = point.snapshot.is_some(), "recovery point written");
            }
            Err(e) => {
                if super::once_a_minute(&self.dir, "recovery point") {
                    tracing::warn!(partition = %super::log_name(&self.dir), error = %e, "could not write a recovery point; a start after a crash scans from an older one");
                }
            }
        }
    }
}

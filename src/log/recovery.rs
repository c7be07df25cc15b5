//! Start-up recovery of one partition's directory (runs on the owning shard, inside
//! [`super::PartitionLog::open`]): lists segments, trusts inactive segments whose index
//! files are valid (otherwise rescans them, truncating a torn tail and rebuilding the
//! indexes), scans the active segment from its last offset index entry (the whole
//! segment, its index files then removed, when it has no valid index files or the part
//! after that entry holds a corrupt batch) verifying length and CRC of every batch,
//! truncates a torn or corrupt tail,
//! rebuilds the producer state from the last snapshot plus the batches after it (found
//! through the offset index), and loads the aborted-transaction index files, adding the
//! entries of ABORT markers after the snapshot that a crash kept out of them.
//!
//! After a clean shutdown (the active segment's index files and the producer snapshot
//! were written at its end) a start therefore reads about one index interval of each
//! log, not its whole active segment (up to `segment.bytes`); after a crash, about what
//! was written since the last recovery point (`recovery_point.rs`). Kafka skips recovery
//! after a clean shutdown and otherwise recovers from its recovery point (by default the
//! start of the active segment).

use std::io;
use std::path::Path;
use std::rc::Rc;

use super::producer_state::ProducerState;
use super::segment::Segment;
use super::txn_index::{self, AbortedTxn, TxnIndex};
use crate::protocol::batch::{RecordBatchHeader, ScanStop};
use crate::protocol::control;

/// File holding the producer-state snapshot (see [`ProducerState::encode_snapshot`]).
pub const SNAPSHOT_FILE: &str = "producer.snapshot";

/// What recovery found.
pub struct Recovered {
    /// Segments in offset order; the last one is active (never empty).
    pub segments: Vec<Rc<Segment>>,
    /// Rebuilt idempotent and transactional producer state.
    pub producers: ProducerState,
    /// Every aborted transaction whose marker is in the log.
    pub aborted: TxnIndex,
    /// (max timestamp, last offset of its batch) over the whole log.
    pub max_ts: Option<(i64, i64)>,
    /// File position in the active segment where its recovery scan started: its last
    /// offset index entry's, or 0 when it was scanned whole.
    pub active_scan_from: u64,
}

/// Base offsets of the `<20 digits>.log` files in `dir`, sorted.
pub fn list_segments(dir: &Path) -> io::Result<Vec<i64>> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let name = e?.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(stem) = name.strip_suffix(".log") {
            if stem.len() == 20 && stem.bytes().all(|b| b.is_ascii_digit()) {
                if let Ok(b) = stem.parse::<i64>() {
                    v.push(b);
                }
            }
        }
    }
    v.sort_unstable();
    Ok(v)
}

/// Removes the `<base>.log.cleaned` files a crash left behind in the middle of a
/// compaction pass (the segment it was replacing is still in place, see
/// [`super::cleaner`]).
fn remove_unfinished_cleaning(dir: &Path) -> io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let path = e?.path();
        if path.to_str().is_some_and(|p| p.ends_with(".log.cleaned")) {
            tracing::info!(file = %path.display(), "removing the output of an unfinished compaction pass");
            std::fs::remove_file(&path)?;
        }
    }
    Ok(())
}

/// Whether a whole, CRC-valid batch `h` can follow in a segment based at
/// `segment_base` whose data so far ends before `expected`; see
/// [`ScanStop::BadOffsets`].
pub fn check_offsets(
    segment_base: i64,
    expected: i64,
    h: &RecordBatchHeader,
) -> Result<(), ScanStop> {
    let last = h.last_offset();
    if h.base_offset < expected || last < h.base_offset || last - segment_base > i32::MAX as i64 {
        return Err(ScanStop::BadOffsets {
            base_offset: h.base_offset,
            last_offset: last,
            expected,
        });
    }
    Ok(())
}

/// Scans `seg` from 0, rebuilding its indexes, truncating anything after the last valid
/// batch (logged). Returns the number of bytes cut.
async fn scan_and_repair(seg: &Segment, interval: u64) -> io::Result<u64> {
    *seg.index.borrow_mut() = Default::default();
    *seg.time_index.borrow_mut() = Default::default();
    seg.bytes_since_index.set(0);
    seg.max_ts.set(None);
    seg.next_offset.set(seg.base_offset);
    let (valid, stop) = scan_indexing(seg, 0, interval).await?;
    trim(seg, valid, stop).await
}

/// Scans `seg` from file position `from` (a batch boundary) to its end, checking each
/// batch and adding it to the indexes ([`Segment::note_batch`]); returns where the valid
/// data ends and why the scan stopped there.
async fn scan_indexing(seg: &Segment, from: u64, interval: u64) -> io::Result<(u64, ScanStop)> {
    seg.scan(from, seg.size.get(), |pos, h, _| {
        check_offsets(seg.base_offset, seg.next_offset.get(), h)?;
        seg.note_batch(pos, h, interval);
        Ok(())
    })
    .await
}

/// Truncates `seg` to `valid` bytes (the end of its valid data, found by a scan that
/// stopped for `stop`), logged; returns the number of bytes cut.
async fn trim(seg: &Segment, valid: u64, stop: ScanStop) -> io::Result<u64> {
    let file_end = seg.size.get();
    let cut = file_end.saturating_sub(valid);
    if cut > 0 {
        // Zeros after the last batch of a segment that was not closed (the padding to
        // the DMA alignment, and the zero fill written ahead, see `zero_fill`) are the
        // normal end of the data, not damage.
        if stop == ScanStop::ZeroPadding {
            tracing::info!(
                dir = %seg.dir.display(),
                segment = seg.base_offset,
                valid_bytes = valid,
                truncated_bytes = cut,
                "trimming the zeros after the last batch (end of data)"
            );
        } else {
            tracing::warn!(
                partition = %super::log_name(&seg.dir),
                segment = seg.base_offset,
                valid_bytes = valid,
                truncated_bytes = cut,
                reason = %stop,
                "truncating torn or corrupt segment tail"
            );
        }
        seg.file.truncate(valid).await.map_err(io::Error::from)?;
        seg.size.set(valid);
        seg.zero_fill.truncated(valid);
    }
    Ok(cut)
}

/// Recovers the active segment `seg`. When its index files load (a clean close wrote
/// them at the end of the data; after a crash they are those of the last recovery point
/// or clean close, whose entries all point at data made durable before they were
/// written), only the
/// batches from its last offset index entry on are scanned and indexed: those a crash
/// may have torn; a torn batch there (the crash's) is cut as a whole scan would cut it.
/// If no whole batch with the entry's base offset starts at the entry's position, or
/// that part holds a corrupt batch or offsets out of order, or there are no usable
/// index files, the whole segment is scanned and repaired, as a damaged inactive one is,
/// and its index files are removed: they disagree with the data (or do not decode), and
/// no later start may trust them once appends make them look valid again; a clean close
/// or a roll writes new ones. Returns the file position the scan that stood started
/// from (0: the whole segment).
async fn recover_active(seg: &Segment, interval: u64) -> io::Result<u64> {
    let last_entry =
        if seg.load_indexes(None) { seg.index.borrow().entries.last().copied() } else { None };
    let Some((rel, pos)) = last_entry else {
        seg.remove_index_files()?;
        scan_and_repair(seg, interval).await?;
        return Ok(0);
    };
    // The entry's batch starts there and is the next one expected; the max timestamp
    // comes from the time index's last entry (see `load_indexes`).
    seg.next_offset.set(seg.base_offset + rel as i64);
    seg.bytes_since_index.set(0);
    let from = pos as u64;
    // The entry must name the batch that starts there: one whose base offset is the
    // entry's. An entry pointing anywhere else (zeros, the middle of a batch, another
    // batch: a damaged or stale file) sends recovery to the whole scan.
    let first = seg.base_offset + rel as i64;
    let (valid, stop) = seg
        .scan(from, seg.size.get(), |at, h, _| {
            if at == from && h.base_offset != first {
                return Err(ScanStop::BadOffsets {
                    base_offset: h.base_offset,
                    last_offset: h.last_offset(),
                    expected: first,
                });
            }
            check_offsets(seg.base_offset, seg.next_offset.get(), h)?;
            seg.note_batch(at, h, interval);
            Ok(())
        })
        .await?;
    if valid > from
        && matches!(stop, ScanStop::End | ScanStop::ZeroPadding | ScanStop::TornTail { .. })
    {
        trim(seg, valid, stop).await?;
        return Ok(from);
    }
    tracing::info!(
        partition = %super::log_name(&seg.dir),
        segment = seg.base_offset,
        position = valid,
        reason = %stop,
        "the active segment is damaged after its last index entry; scanning it whole"
    );
    seg.remove_index_files()?;
    scan_and_repair(seg, interval).await?;
    Ok(0)
}

/// Recovers (or initialises) the partition directory `dir`.
pub async fn recover(dir: &Path, interval: u64) -> io::Result<Recovered> {
    std::fs::create_dir_all(dir)?;
    super::segment::probe_dma_device(dir).await?;
    remove_unfinished_cleaning(dir)?;
    // A swapped-in segment has no index files yet: the scan below rebuilds them.
    super::cleaner::complete_swaps(dir, &list_segments(dir)?)?;
    let bases = list_segments(dir)?;
    let mut segments: Vec<Rc<Segment>> = Vec::with_capacity(bases.len().max(1));
    if bases.is_empty() {
        segments.push(Rc::new(Segment::create(dir, 0).await?));
        return Ok(Recovered {
            segments,
            producers: ProducerState::default(),
            aborted: TxnIndex::default(),
            max_ts: None,
            active_scan_from: 0,
        });
    }
    let mut active_scan_from = 0;
    for (i, &base) in bases.iter().enumerate() {
        let seg = Segment::open(dir, base).await?;
        if i + 1 == bases.len() {
            active_scan_from = recover_active(&seg, interval).await?;
        } else {
            if !seg.load_indexes(Some(bases[i + 1])) {
                scan_and_repair(&seg, interval).await?;
                seg.finish_time_index();
                seg.save_indexes()?;
            }
            seg.next_offset.set(bases[i + 1]);
        }
        segments.push(Rc::new(seg));
    }
    // Keep the partial last DMA block of the active segment in memory.
    let Some(active) = segments.last().cloned() else {
        return Err(io::Error::other(format!("no segment in {} after recovery", dir.display())));
    };
    let size = active.size.get();
    let start = size - size % active.alignment();
    let tail_len = (size - start) as usize;
    let tail = active.read_bytes(start, tail_len, tail_len).await?;
    *active.tail.borrow_mut() = tail.to_vec();

    let leo = active.next_offset.get();
    let max_ts =
        segments.iter().filter_map(|s| s.max_ts.get()).fold(None, |acc: Option<(i64, i64)>, x| {
            match acc {
                Some(a) if a.0 >= x.0 => Some(a),
                _ => Some(x),
            }
        });

    // Producer state: snapshot (if it describes a prefix of this log) + replay after it.
    let snap = std::fs::read(dir.join(SNAPSHOT_FILE))
        .ok()
        .and_then(|b| ProducerState::decode_snapshot(&b));
    let (mut producers, from) = match snap {
        Some((s, at)) if at >= segments[0].base_offset && at <= leo => (s, at),
        _ => (ProducerState::default(), active.base_offset),
    };
    let mut aborted = TxnIndex::default();
    let mut files: Vec<Vec<AbortedTxn>> = Vec::with_capacity(segments.len());
    for seg in &segments {
        let (entries, whole) = txn_index::load(dir, seg.base_offset)?;
        if !whole {
            tracing::warn!(partition = %super::log_name(dir), segment = seg.base_offset, entries = entries.len(), "aborted transaction index damaged; keeping its whole entries");
        }
        for t in &entries {
            aborted.insert(*t);
        }
        files.push(entries);
    }
    for seg in segments.iter().filter(|s| s.next_offset.get() > from) {
        // The segment holding the snapshot's offset is replayed from the index entry at
        // or before it, not from its start.
        let start = if from > seg.base_offset {
            seg.index.borrow().lookup(seg.rel(from)) as u64
        } else {
            0
        };
        seg.scan(start, seg.size.get(), |pos, h, bytes| {
            if h.base_offset < from {
                return Ok(());
            }
            let marker = if h.is_control() {
                control::read_marker(bytes).unwrap_or_else(|e| {
                    tracing::warn!(partition = %super::log_name(dir), offset = h.base_offset, position = pos, error = %e, "ignoring a control batch whose marker does not decode");
                    None
                })
            } else {
                None
            };
            if let Some(txn) = producers.record(h, marker.as_ref()) {
                if txn.aborted {
                    aborted.insert(AbortedTxn {
                        producer_id: txn.producer_id,
                        first_offset: txn.first_offset,
                        last_offset: txn.last_offset,
                        last_stable_offset: producers.last_stable_offset_after(&txn),
                    });
                }
            }
            Ok(())
        })
        .await?;
    }
    // Entries past the end of the log (its tail was cut) go; a segment whose file
    // differs from what the log holds (an entry a crash kept out, or one past the end)
    // is rewritten, so that the next start finds it even after the snapshot moves on.
    aborted.remove_from(leo);
    for (i, seg) in segments.iter().enumerate() {
        let end = segments.get(i + 1).map_or(i64::MAX, |s| s.base_offset);
        let want = aborted.in_range(seg.base_offset, end);
        if want != files[i] {
            txn_index::rewrite(dir, seg.base_offset, &want)?;
        }
    }
    Ok(Recovered { segments, producers, aborted, max_ts, active_scan_from })
}

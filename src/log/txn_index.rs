//! The aborted-transaction index of one partition (Kafka's `TransactionIndex`): every
//! aborted transaction, so that a read_committed Fetch can list those overlapping the
//! data it returns (the consumer then skips their records).
//!
//! On disk, per segment, `<base offset:020>.txnindex` holds the transactions whose
//! ABORT marker is in that segment, in Kafka's entry layout (34 bytes, big-endian):
//! `version: int16 (0), producer_id: int64, first_offset: int64, last_offset: int64,
//! last_stable_offset: int64`. An entry is appended when its marker is written (the
//! writer task); a missing file is an empty index (logs written before transactions
//! existed). In memory the partition keeps one [`TxnIndex`] over all its segments,
//! loaded at open, pruned below the log start offset.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::Path;

use super::segment::segment_path;

/// Bytes of one entry on disk.
pub const ENTRY_BYTES: usize = 34;

/// Extension of the per-segment index files.
pub const EXT: &str = "txnindex";

/// One aborted transaction (Kafka's `AbortedTxn`); offsets inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbortedTxn {
    /// The producer that ran it.
    pub producer_id: i64,
    /// Offset of its first batch in this partition.
    pub first_offset: i64,
    /// Offset of its ABORT marker.
    pub last_offset: i64,
    /// The last stable offset once it completed: the first offset of the earliest
    /// transaction still ongoing then, else `last_offset + 1`.
    pub last_stable_offset: i64,
}

impl AbortedTxn {
    /// Appends the 34-byte entry to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&0i16.to_be_bytes());
        out.extend_from_slice(&self.producer_id.to_be_bytes());
        out.extend_from_slice(&self.first_offset.to_be_bytes());
        out.extend_from_slice(&self.last_offset.to_be_bytes());
        out.extend_from_slice(&self.last_stable_offset.to_be_bytes());
    }

    /// Decodes a file's entries. A partial last entry (a torn append) is dropped; an
    /// entry with a version other than 0 ends the decode (what follows is not trusted).
    /// Returns the entries and whether the bytes were whole and valid.
    pub fn decode_all(b: &[u8]) -> (Vec<AbortedTxn>, bool) {
        let mut out = Vec::with_capacity(b.len() / ENTRY_BYTES);
        let mut chunks = b.chunks_exact(ENTRY_BYTES);
        for c in &mut chunks {
            if i16::from_be_bytes([c[0], c[1]]) != 0 {
                return (out, false);
            }
            let at = |i: usize| i64::from_be_bytes(c[i..i + 8].try_into().unwrap_or_default());
            out.push(AbortedTxn {
                producer_id: at(2),
                first_offset: at(10),
                last_offset: at(18),
                last_stable_offset: at(26),
            });
        }
        let whole = chunks.remainder().is_empty();
        (out, whole)
    }
}

/// Every aborted transaction of a partition, by marker offset. Lives inside the
/// partition's `PartitionLog`, on its owning shard.
#[derive(Debug, Clone, Default)]
pub struct TxnIndex {
    by_last_offset: BTreeMap<i64, AbortedTxn>,
}

impl TxnIndex {
    /// Adds (or replaces: the same marker offset is the same transaction) an entry.
    pub fn insert(&mut self, t: AbortedTxn) {
        self.by_last_offset.insert(t.last_offset, t);
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.by_last_offset.len()
    }

    /// True without entries.
    pub fn is_empty(&self) -> bool {
        self.by_last_offset.is_empty()
    }

    /// The aborted transactions a read_committed fetch of `[fetch_offset, upper)`
    /// must report: marker at or after `fetch_offset`, first offset before `upper`
    /// (Kafka's `TransactionIndex.collectAbortedTxns`). The walk stops after an entry
    /// whose last stable offset is at or past `upper`: every transaction completed after
    /// it started at or after `upper`.
    pub fn collect(&self, fetch_offset: i64, upper: i64) -> Vec<AbortedTxn> {
        let mut out = Vec::new();
        for t in self.by_last_offset.range(fetch_offset..).map(|(_, t)| t) {
            if t.first_offset < upper {
                out.push(*t);
            }
            if t.last_stable_offset >= upper {
                break;
            }
        }
        out
    }

    /// Entries whose marker offset is in `[from, to)`, in order.
    pub fn in_range(&self, from: i64, to: i64) -> Vec<AbortedTxn> {
        self.by_last_offset.range(from..to.max(from)).map(|(_, t)| *t).collect()
    }

    /// Every entry as `producer id -> [(first offset, last offset)]` in marker order,
    /// to ask many times whether a batch is aborted ([`AbortedRanges::contains`]).
    pub fn ranges(&self) -> AbortedRanges {
        let mut by_producer: std::collections::HashMap<i64, Vec<(i64, i64)>> =
            std::collections::HashMap::new();
        for t in self.by_last_offset.values() {
            by_producer.entry(t.producer_id).or_default().push((t.first_offset, t.last_offset));
        }
        AbortedRanges { by_producer }
    }

    /// Drops the entries whose marker is below `offset` (the log start moved past
    /// them: no fetch can ask for them).
    pub fn remove_below(&mut self, offset: i64) {
        self.by_last_offset = self.by_last_offset.split_off(&offset);
    }

    /// Drops the entries whose marker is at or past `offset` (recovery cut the log
    /// there).
    pub fn remove_from(&mut self, offset: i64) {
        self.by_last_offset.split_off(&offset);
    }
}

/// The aborted transactions of a partition by producer (see [`TxnIndex::ranges`]).
#[derive(Debug, Clone, Default)]
pub struct AbortedRanges {
    by_producer: std::collections::HashMap<i64, Vec<(i64, i64)>>,
}

impl AbortedRanges {
    /// True when producer `producer_id`'s record at `offset` belongs to an aborted
    /// transaction (its transactional batch lies between the transaction's first
    /// offset and its ABORT marker).
    pub fn contains(&self, producer_id: i64, offset: i64) -> bool {
        let Some(v) = self.by_producer.get(&producer_id) else { return false };
        let i = v.partition_point(|&(_, last)| last < offset);
        v.get(i).is_some_and(|&(first, _)| first <= offset)
    }
}

/// Reads the index file of the segment based at `base` in `dir`: its entries (empty
/// when the file does not exist) and whether the file was whole and valid.
pub fn load(dir: &Path, base: i64) -> io::Result<(Vec<AbortedTxn>, bool)> {
    match std::fs::read(segment_path(dir, base, EXT)) {
        Ok(b) => Ok(AbortedTxn::decode_all(&b)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok((Vec::new(), true)),
        Err(e) => Err(e),
    }
}

/// Appends `entries` to the index file of the segment based at `base` (created if
/// missing); `sync`: fdatasync it too. Plain std I/O on the calling thread: one small
/// write per group of ABORT markers written.
pub fn append(dir: &Path, base: i64, entries: &[AbortedTxn], sync: bool) -> io::Result<()> {
    let mut b = Vec::with_capacity(entries.len() * ENTRY_BYTES);
    for t in entries {
        t.encode(&mut b);
    }
    let mut f =
        std::fs::OpenOptions::new().create(true).append(true).open(segment_path(dir, base, EXT))?;
    f.write_all(&b)?;
    if sync {
        f.sync_data()?;
    }
    Ok(())
}

/// fdatasyncs the index file of the segment based at `base`, if there is one: what
/// [`append`] without `sync` left in the page cache becomes durable before a producer
/// snapshot that no longer replays the markers behind it is written.
pub fn sync(dir: &Path, base: i64) -> io::Result<()> {
    match std::fs::File::open(segment_path(dir, base, EXT)) {
        Ok(f) => f.sync_data(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Replaces the index file of the segment based at `base` with `entries` (removes it
/// when there are none), atomically (see [`super::segment::write_atomic`]).
pub fn rewrite(dir: &Path, base: i64, entries: &[AbortedTxn]) -> io::Result<()> {
    let path = segment_path(dir, base, EXT);
    if entries.is_empty() {
        return match std::fs::remove_file(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        };
    }
    let mut b = Vec::with_capacity(entries.len() * ENTRY_BYTES);
    for t in entries {
        t.encode(&mut b);
    }
    super::segment::write_atomic(&path, &b)
}

/// The entries of the index files of the segments based at `bases`, in marker order,
/// each marker once (a cleaner swap merges its sources' files into the first one's,
/// see `cleaner.rs`; repeating a merge a crash interrupted finds some entries twice).
pub fn merge_files(dir: &Path, bases: &[i64]) -> io::Result<Vec<AbortedTxn>> {
    let mut index = TxnIndex::default();
    for &b in bases {
        for t in load(dir, b)?.0 {
            index.insert(t);
        }
    }
    Ok(index.by_last_offset.into_values().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(pid: i64, first: i64, last: i64, lso: i64) -> AbortedTxn {
        AbortedTxn {
            producer_id: pid,
            first_offset: first,
            last_offset: last,
            last_stable_offset: lso,
        }
    }

    #[test]
    fn entries_have_kafkas_34_byte_layout() {
        let mut b = Vec::new();
        t(7, 10, 20, 21).encode(&mut b);
        assert_eq!(b.len(), ENTRY_BYTES);
        assert_eq!(&b[..2], [0, 0]);
        assert_eq!(&b[2..10], 7i64.to_be_bytes());
        assert_eq!(&b[26..34], 21i64.to_be_bytes());
        t(8, 30, 40, 41).encode(&mut b);
        assert_eq!(AbortedTxn::decode_all(&b), (vec![t(7, 10, 20, 21), t(8, 30, 40, 41)], true));
        // A torn append keeps the whole entries; a bad version stops the decode.
        assert_eq!(AbortedTxn::decode_all(&b[..50]), (vec![t(7, 10, 20, 21)], false));
        b[ENTRY_BYTES + 1] = 1;
        assert_eq!(AbortedTxn::decode_all(&b), (vec![t(7, 10, 20, 21)], false));
    }

    #[test]
    fn collect_returns_the_transactions_overlapping_the_range() {
        let mut ix = TxnIndex::default();
        // Producer 1 aborted [0, 5] while producer 2's transaction from 3 was ongoing;
        // producer 2 aborted [3, 9]; producer 3 aborted [20, 25].
        ix.insert(t(1, 0, 5, 3));
        ix.insert(t(2, 3, 9, 10));
        ix.insert(t(3, 20, 25, 26));
        assert_eq!(ix.collect(0, 4), vec![t(1, 0, 5, 3), t(2, 3, 9, 10)]);
        assert_eq!(ix.collect(6, 30), vec![t(2, 3, 9, 10), t(3, 20, 25, 26)]);
        assert_eq!(ix.collect(6, 10), vec![t(2, 3, 9, 10)]);
        assert_eq!(ix.collect(0, 3), vec![t(1, 0, 5, 3)]);
        assert_eq!(ix.collect(26, 100), vec![]);
        assert_eq!(ix.in_range(5, 25), vec![t(1, 0, 5, 3), t(2, 3, 9, 10)]);
        let r = ix.ranges();
        assert!(r.contains(2, 3) && r.contains(2, 8) && r.contains(1, 0));
        assert!(!r.contains(2, 2) && !r.contains(1, 6) && !r.contains(3, 19) && !r.contains(4, 21));
        assert!(r.contains(3, 20));
        ix.remove_below(6);
        assert_eq!(ix.len(), 2);
        ix.remove_from(25);
        assert_eq!(ix.in_range(0, 100), vec![t(2, 3, 9, 10)]);
    }

    #[test]
    fn files_append_rewrite_and_merge() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(load(dir.path(), 0).unwrap(), (vec![], true));
        append(dir.path(), 0, &[t(1, 0, 5, 6)], false).unwrap();
        append(dir.path(), 0, &[t(2, 7, 9, 10)], true).unwrap();
        append(dir.path(), 100, &[t(3, 95, 101, 102), t(2, 7, 9, 10)], false).unwrap();
        assert_eq!(load(dir.path(), 0).unwrap(), (vec![t(1, 0, 5, 6), t(2, 7, 9, 10)], true));
        let merged = merge_files(dir.path(), &[0, 100]).unwrap();
        assert_eq!(merged, vec![t(1, 0, 5, 6), t(2, 7, 9, 10), t(3, 95, 101, 102)]);
        rewrite(dir.path(), 0, &merged).unwrap();
        assert_eq!(load(dir.path(), 0).unwrap().0, merged);
        rewrite(dir.path(), 0, &[]).unwrap();
        assert!(!segment_path(dir.path(), 0, EXT).exists());
    }
}

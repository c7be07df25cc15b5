//! Sparse per-segment indexes, kept in memory and persisted as `.index` / `.timeindex`
//! files next to the segment (written at roll and close; rebuilt by scanning the segment
//! when missing or damaged). Owned by a [`super::segment::Segment`] on the partition's
//! shard.
//!
//! - offset index: entries of (relative offset u32, file position u32), 8 bytes each,
//!   big-endian, one every `index_interval_bytes` of batches, strictly increasing.
//! - time index: entries of (max timestamp so far i64 ms, relative offset u32 of the LAST
//!   record of the batch holding it), 12 bytes each, both non-decreasing.

/// Sparse offset index of one segment. Lives on the partition's owning shard only, inside its
/// `PartitionLog`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OffsetIndex {
    /// (relative offset, file position), increasing in both.
    pub entries: Vec<(u32, u32)>,
}

impl OffsetIndex {
    /// Adds an entry if it keeps the index strictly increasing.
    pub fn push(&mut self, rel: u32, pos: u32) {
        if self.entries.last().is_none_or(|&(r, p)| rel > r && pos > p) {
            self.entries.push((rel, pos));
        }
    }

    /// File position to start scanning from for relative offset `rel`: the position of
    /// the greatest entry with offset <= rel, else 0.
    pub fn lookup(&self, rel: u32) -> u32 {
        let i = self.entries.partition_point(|&(r, _)| r <= rel);
        if i == 0 {
            0
        } else {
            self.entries[i - 1].1
        }
    }

    /// File positions (bytes) of the entries in `[from, to)`, increasing: batch starts
    /// known without reading the segment.
    pub fn positions_in(&self, from: u64, to: u64) -> impl Iterator<Item = u64> + '_ {
        let i = self.entries.partition_point(|&(_, p)| u64::from(p) < from);
        self.entries[i..].iter().map(|&(_, p)| u64::from(p)).take_while(move |&p| p < to)
    }

    /// File bytes.
    pub fn encode(&self) -> Vec<u8> {
        self.encode_range(0..self.entries.len())
    }

    /// File bytes of the entries `range` (by index into [`OffsetIndex::entries`]): what
    /// appending them to a file holding the ones before writes.
    pub fn encode_range(&self, range: std::ops::Range<usize>) -> Vec<u8> {
        let entries = self.entries.get(range).unwrap_or_default();
        let mut b = Vec::with_capacity(entries.len() * 8);
        for &(r, p) in entries {
            b.extend_from_slice(&r.to_be_bytes());
            b.extend_from_slice(&p.to_be_bytes());
        }
        b
    }

    /// Parses file bytes; None if the length is not a multiple of 8, entries are not
    /// strictly increasing, or a position is at/after `segment_size`.
    pub fn decode(b: &[u8], segment_size: u64) -> Option<OffsetIndex> {
        if !b.len().is_multiple_of(8) {
            return None;
        }
        let mut ix = OffsetIndex::default();
        for c in b.chunks_exact(8) {
            let r = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
            let p = u32::from_be_bytes([c[4], c[5], c[6], c[7]]);
            if p as u64 >= segment_size {
                return None;
            }
            if let Some(&(lr, lp)) = ix.entries.last() {
                if r <= lr || p <= lp {
                    return None;
                }
            }
            ix.entries.push((r, p));
        }
        Some(ix)
    }
}

/// Sparse time index of one segment. Lives on the partition's owning shard only, inside its
/// `PartitionLog`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TimeIndex {
    /// (max timestamp so far, relative last offset of the batch holding it).
    pub entries: Vec<(i64, u32)>,
}

impl TimeIndex {
    /// Adds an entry if its timestamp is greater than the last one's.
    pub fn push(&mut self, ts: i64, rel: u32) {
        if self.entries.last().is_none_or(|&(t, r)| ts > t && rel >= r) {
            self.entries.push((ts, rel));
        }
    }

    /// Relative offset to start a timestamp search from: the offset of the last entry
    /// with timestamp < `ts` (every batch up to it has a smaller max timestamp), else 0.
    pub fn lookup(&self, ts: i64) -> u32 {
        let i = self.entries.partition_point(|&(t, _)| t < ts);
        if i == 0 {
            0
        } else {
            self.entries[i - 1].1
        }
    }

    /// File bytes.
    pub fn encode(&self) -> Vec<u8> {
        self.encode_range(0..self.entries.len())
    }

    /// File bytes of the entries `range` (by index into [`TimeIndex::entries`]).
    pub fn encode_range(&self, range: std::ops::Range<usize>) -> Vec<u8> {
        let entries = self.entries.get(range).unwrap_or_default();
        let mut b = Vec::with_capacity(entries.len() * 12);
        for &(t, r) in entries {
            b.extend_from_slice(&t.to_be_bytes());
            b.extend_from_slice(&r.to_be_bytes());
        }
        b
    }

    /// Parses file bytes; None if the length is not a multiple of 12 or entries decrease.
    pub fn decode(b: &[u8]) -> Option<TimeIndex> {
        if !b.len().is_multiple_of(12) {
            return None;
        }
        let mut ix = TimeIndex::default();
        for c in b.chunks_exact(12) {
            let t = i64::from_be_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
            let r = u32::from_be_bytes([c[8], c[9], c[10], c[11]]);
            if let Some(&(lt, lr)) = ix.entries.last() {
                if t <= lt || r < lr {
                    return None;
                }
            }
            ix.entries.push((t, r));
        }
        Some(ix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_in_a_range() {
        let mut ix = OffsetIndex::default();
        for (rel, pos) in [(3, 4096), (7, 8192), (12, 12300), (20, 20000)] {
            ix.push(rel, pos);
        }
        let at = |from, to| ix.positions_in(from, to).collect::<Vec<u64>>();
        assert_eq!(at(0, 4096), Vec::<u64>::new());
        assert_eq!(at(0, 4097), vec![4096]);
        assert_eq!(at(4096, 12300), vec![4096, 8192]);
        assert_eq!(at(4097, 1 << 20), vec![8192, 12300, 20000]);
        assert_eq!(at(20001, 1 << 20), Vec::<u64>::new());
    }

    #[test]
    fn offset_index() {
        let mut ix = OffsetIndex::default();
        ix.push(5, 4000);
        ix.push(9, 8200);
        ix.push(9, 9000); // ignored
        assert_eq!(ix.entries.len(), 2);
        assert_eq!(ix.lookup(0), 0);
        assert_eq!(ix.lookup(5), 4000);
        assert_eq!(ix.lookup(8), 4000);
        assert_eq!(ix.lookup(100), 8200);
        let enc = ix.encode();
        assert_eq!(enc.len(), 16);
        assert_eq!(OffsetIndex::decode(&enc, 9000), Some(ix.clone()));
        assert_eq!(OffsetIndex::decode(&enc, 8200), None);
        assert_eq!(OffsetIndex::decode(&enc[..15], 9000), None);
    }

    #[test]
    fn time_index() {
        let mut ix = TimeIndex::default();
        ix.push(100, 3);
        ix.push(100, 5); // ignored
        ix.push(200, 9);
        assert_eq!(ix.lookup(50), 0);
        assert_eq!(ix.lookup(100), 0);
        assert_eq!(ix.lookup(101), 3);
        assert_eq!(ix.lookup(1000), 9);
        assert_eq!(TimeIndex::decode(&ix.encode()), Some(ix));
    }
}

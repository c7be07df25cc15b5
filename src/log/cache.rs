//! In-memory tail cache of one partition: the most recent batches as `Bytes`, within a
//! byte budget, so tail fetches never touch the disk. Lives inside a
//! [`super::PartitionLog`] on the partition's owning shard only.

use std::collections::VecDeque;

use bytes::Bytes;

/// One cached batch: its assigned offsets and its stored bytes.
#[derive(Debug, Clone)]
pub struct CachedBatch {
    /// Base offset (as rewritten into the batch).
    pub base_offset: i64,
    /// Last offset.
    pub last_offset: i64,
    /// The whole stored batch.
    pub data: Bytes,
}

/// Recent batches in offset order, evicted oldest first beyond `budget` bytes (the newest
/// batch is always kept, even if larger than the budget, unless the budget is 0).
#[derive(Debug, Default)]
pub struct BatchCache {
    batches: VecDeque<CachedBatch>,
    bytes: usize,
    budget: usize,
}

impl BatchCache {
    /// An empty cache holding at most `budget` bytes.
    pub fn new(budget: usize) -> Self {
        BatchCache { batches: VecDeque::new(), bytes: 0, budget }
    }

    /// Bytes currently cached.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Appends the next batch (offsets must follow the previous one) and evicts.
    pub fn push(&mut self, b: CachedBatch) {
        if self.budget == 0 {
            return;
        }
        self.bytes += b.data.len();
        self.batches.push_back(b);
        while self.bytes > self.budget && self.batches.len() > 1 {
            let Some(old) = self.batches.pop_front() else { break };
            self.bytes -= old.data.len();
        }
    }

    /// Drops everything.
    pub fn clear(&mut self) {
        self.batches.clear();
        self.bytes = 0;
    }

    /// Batches starting with the one containing `offset`, all with `last_offset < limit`
    /// (the high watermark), totalling at most `max_bytes` but at least one. `None` when
    /// the cache does not cover `offset` (it is older than the cache, or not yet cached).
    pub fn read(&self, offset: i64, max_bytes: usize, limit: i64) -> Option<Vec<Bytes>> {
        let first = self.batches.front()?;
        if offset < first.base_offset {
            return None;
        }
        let idx = self.batches.partition_point(|b| b.last_offset < offset);
        let mut out = Vec::new();
        let mut total = 0usize;
        for b in self.batches.range(idx..) {
            if b.last_offset >= limit {
                break;
            }
            if !out.is_empty() && total + b.data.len() > max_bytes {
                break;
            }
            total += b.data.len();
            out.push(b.data.clone());
        }
        if out.is_empty() {
            None
        } else {
            Some(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cb(base: i64, n: i64, len: usize) -> CachedBatch {
        CachedBatch {
            base_offset: base,
            last_offset: base + n - 1,
            data: Bytes::from(vec![base as u8; len]),
        }
    }

    #[test]
    fn read_and_evict() {
        let mut c = BatchCache::new(250);
        c.push(cb(0, 2, 100));
        c.push(cb(2, 3, 100));
        assert_eq!(c.read(3, 1, 100).unwrap().len(), 1);
        assert_eq!(c.read(3, 1, 100).unwrap()[0][0], 2);
        assert_eq!(c.read(0, 200, 100).unwrap().len(), 2);
        assert_eq!(c.read(0, 199, 100).unwrap().len(), 1);
        assert_eq!(c.read(0, 1000, 2).unwrap().len(), 1); // hw limit
        assert!(c.read(0, 1000, 0).is_none());
        assert!(c.read(5, 1000, 100).is_none());
        c.push(cb(5, 1, 100));
        assert_eq!(c.bytes(), 200);
        assert!(c.read(1, 1000, 100).is_none()); // evicted
        assert_eq!(c.read(2, 1000, 100).unwrap().len(), 2);
    }
}

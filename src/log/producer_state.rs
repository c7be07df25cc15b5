//! Idempotent-producer state of one partition (Kafka's `ProducerStateManager`, reduced):
//! producer id -> epoch and the metadata of its last [`MAX_BATCHES`] batches.
//!
//! Pure state machine (no I/O besides the snapshot encode/decode on byte slices).
//! Lives inside a [`super::PartitionLog`], on the partition's owning shard only.

use std::collections::{HashMap, VecDeque};

use crate::protocol::batch::RecordBatchHeader;

/// Batches remembered per producer for duplicate detection (Kafka: 5, the max in-flight).
pub const MAX_BATCHES: usize = 5;

/// Metadata of one appended batch of an idempotent producer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchMeta {
    /// baseSequence of the batch.
    pub first_seq: i32,
    /// Sequence of its last record (wrapping at `i32::MAX`).
    pub last_seq: i32,
    /// Offset assigned to its first record.
    pub base_offset: i64,
    /// Offset assigned to its last record.
    pub last_offset: i64,
}

/// What one producer is known to have written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProducerEntry {
    /// Current epoch.
    pub epoch: i16,
    /// Its last batches, oldest first, at most [`MAX_BATCHES`].
    pub batches: VecDeque<BatchMeta>,
    /// Max timestamp of its last batch appended (ms; -1 before any), as
    /// DescribeProducers reports it.
    pub last_timestamp: i64,
}

/// Outcome of checking a batch against the producer state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeqCheck {
    /// Append it (then call [`ProducerState::record`]).
    Append,
    /// Already appended: answer with these original offsets, do not append.
    Duplicate(BatchMeta),
    /// Sequence gap or a new epoch not starting at 0 (Kafka OUT_OF_ORDER_SEQUENCE_NUMBER).
    OutOfOrder,
    /// Epoch older than the known one (Kafka INVALID_PRODUCER_EPOCH).
    Fenced,
}

/// Producer id -> [`ProducerEntry`] for one partition. Lives on the partition's owning shard only,
/// inside its `PartitionLog`.
#[derive(Debug, Clone, Default)]
pub struct ProducerState {
    producers: HashMap<i64, ProducerEntry>,
}

fn next_seq(s: i32) -> i32 {
    if s == i32::MAX {
        0
    } else {
        s + 1
    }
}

impl ProducerState {
    /// Number of producers tracked.
    pub fn len(&self) -> usize {
        self.producers.len()
    }

    /// True when no producer is tracked.
    pub fn is_empty(&self) -> bool {
        self.producers.is_empty()
    }

    /// The entry of `pid`, if known.
    pub fn get(&self, pid: i64) -> Option<&ProducerEntry> {
        self.producers.get(&pid)
    }

    /// Checks `h` (a batch about to be appended) per Kafka's rules: producer id -1 or a
    /// control batch: no sequence check (a control batch is still fenced by epoch);
    /// unknown producer: any sequence; lower epoch: `Fenced`; higher epoch: first seq
    /// must be 0; same epoch: a batch whose (first, last) seq matches one of the last
    /// five is a `Duplicate`, otherwise first seq must follow the last seq.
    pub fn check(&self, h: &RecordBatchHeader) -> SeqCheck {
        if h.producer_id < 0 {
            return SeqCheck::Append;
        }
        let Some(e) = self.producers.get(&h.producer_id) else {
            return SeqCheck::Append;
        };
        if h.producer_epoch < e.epoch {
            return SeqCheck::Fenced;
        }
        if h.is_control() || h.base_sequence < 0 {
            return SeqCheck::Append;
        }
        let (first, last) = (h.base_sequence, h.last_sequence());
        if h.producer_epoch > e.epoch {
            return if first == 0 { SeqCheck::Append } else { SeqCheck::OutOfOrder };
        }
        if let Some(b) = e.batches.iter().find(|b| b.first_seq == first && b.last_seq == last) {
            return SeqCheck::Duplicate(*b);
        }
        match e.batches.back() {
            None => SeqCheck::Append,
            Some(b) if first == next_seq(b.last_seq) => SeqCheck::Append,
            Some(_) => SeqCheck::OutOfOrder,
        }
    }

    /// Records an appended batch (its header with the assigned base offset).
    pub fn record(&mut self, h: &RecordBatchHeader) {
        if h.producer_id < 0 {
            return;
        }
        let e = self.producers.entry(h.producer_id).or_default();
        e.last_timestamp = h.max_timestamp;
        if h.producer_epoch != e.epoch {
            e.epoch = h.producer_epoch;
            e.batches.clear();
        }
        if h.is_control() || h.base_sequence < 0 {
            return;
        }
        if e.batches.len() == MAX_BATCHES {
            e.batches.pop_front();
        }
        e.batches.push_back(BatchMeta {
            first_seq: h.base_sequence,
            last_seq: h.last_sequence(),
            base_offset: h.base_offset,
            last_offset: h.last_offset(),
        });
    }

    /// Forgets every producer whose last batch's max timestamp is `expiration_ms` or
    /// more before `now_ms` (both ms since the epoch), as Kafka's
    /// `ProducerStateManager.removeExpiredProducers` does with `producer.id.expiration.ms`
    /// (KIP-854). A producer loaded from a snapshot without timestamps (-1) counts as
    /// expired, as Kafka's `NO_TIMESTAMP` does. Its next batch is then taken with any
    /// sequence, as a new producer's is. Returns how many were removed.
    pub fn remove_expired(&mut self, now_ms: i64, expiration_ms: i64) -> usize {
        let before = self.producers.len();
        self.producers.retain(|_, e| now_ms.saturating_sub(e.last_timestamp) < expiration_ms);
        before - self.producers.len()
    }

    /// Every producer, by producer id.
    pub fn producers(&self) -> impl Iterator<Item = (i64, &ProducerEntry)> {
        self.producers.iter().map(|(pid, e)| (*pid, e))
    }

    /// Snapshot encoding: magic "PSS2", covered offset i64, count u32, then per producer
    /// pid i64, epoch i16, last timestamp i64, n u8, n x (first i32, last i32, base i64,
    /// last i64); then the CRC32C (u32) of everything before it. Big-endian. "PSS1"
    /// (written before the last timestamp was kept) is the same without it.
    pub fn encode_snapshot(&self, covers_offset: i64) -> Vec<u8> {
        let mut b = Vec::with_capacity(16 + self.producers.len() * 64);
        b.extend_from_slice(b"PSS2");
        b.extend_from_slice(&covers_offset.to_be_bytes());
        b.extend_from_slice(&(self.producers.len() as u32).to_be_bytes());
        for (pid, e) in &self.producers {
            b.extend_from_slice(&pid.to_be_bytes());
            b.extend_from_slice(&e.epoch.to_be_bytes());
            b.extend_from_slice(&e.last_timestamp.to_be_bytes());
            b.push(e.batches.len() as u8);
            for m in &e.batches {
                b.extend_from_slice(&m.first_seq.to_be_bytes());
                b.extend_from_slice(&m.last_seq.to_be_bytes());
                b.extend_from_slice(&m.base_offset.to_be_bytes());
                b.extend_from_slice(&m.last_offset.to_be_bytes());
            }
        }
        let crc = crc32c::crc32c(&b);
        b.extend_from_slice(&crc.to_be_bytes());
        b
    }

    /// Decodes [`Self::encode_snapshot`] output: `(state, covered offset)`, or None if the
    /// bytes are malformed or the CRC does not match.
    pub fn decode_snapshot(b: &[u8]) -> Option<(ProducerState, i64)> {
        if b.len() < 20 || (&b[..4] != b"PSS1" && &b[..4] != b"PSS2") {
            return None;
        }
        let with_timestamp = &b[..4] == b"PSS2";
        let (body, crc) = b.split_at(b.len() - 4);
        if crc32c::crc32c(body) != u32::from_be_bytes(crc.try_into().ok()?) {
            return None;
        }
        let mut r = Reader(&body[4..]);
        let covers = r.i64()?;
        let n = r.u32()?;
        let mut s = ProducerState::default();
        for _ in 0..n {
            let pid = r.i64()?;
            let epoch = r.i16()?;
            let last_timestamp = if with_timestamp { r.i64()? } else { -1 };
            let k = r.u8()?;
            let mut e = ProducerEntry { epoch, batches: VecDeque::new(), last_timestamp };
            for _ in 0..k {
                e.batches.push_back(BatchMeta {
                    first_seq: r.i32()?,
                    last_seq: r.i32()?,
                    base_offset: r.i64()?,
                    last_offset: r.i64()?,
                });
            }
            s.producers.insert(pid, e);
        }
        Some((s, covers))
    }
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        if self.0.len() < N {
            return None;
        }
        let (a, rest) = self.0.split_at(N);
        self.0 = rest;
        a.try_into().ok()
    }
    fn u8(&mut self) -> Option<u8> {
        self.take::<1>().map(|a| a[0])
    }
    fn i16(&mut self) -> Option<i16> {
        self.take().map(i16::from_be_bytes)
    }
    fn i32(&mut self) -> Option<i32> {
        self.take().map(i32::from_be_bytes)
    }
    fn u32(&mut self) -> Option<u32> {
        self.take().map(u32::from_be_bytes)
    }
    fn i64(&mut self) -> Option<i64> {
        self.take().map(i64::from_be_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::batch::testing::{build_batch, BatchSpec};

    fn hdr(pid: i64, epoch: i16, seq: i32, n: usize, base: i64) -> RecordBatchHeader {
        let b = build_batch(&BatchSpec {
            base_offset: base,
            records: n,
            producer_id: pid,
            producer_epoch: epoch,
            base_sequence: seq,
            ..Default::default()
        });
        RecordBatchHeader::parse(&b).unwrap()
    }

    #[test]
    fn rules() {
        let mut s = ProducerState::default();
        let a = hdr(1, 0, 0, 3, 0);
        assert_eq!(s.check(&a), SeqCheck::Append);
        s.record(&a);
        // duplicate of the same batch
        let dup = hdr(1, 0, 0, 3, 99);
        assert_eq!(
            s.check(&dup),
            SeqCheck::Duplicate(BatchMeta {
                first_seq: 0,
                last_seq: 2,
                base_offset: 0,
                last_offset: 2
            })
        );
        assert_eq!(s.check(&hdr(1, 0, 4, 1, 3)), SeqCheck::OutOfOrder);
        let b = hdr(1, 0, 3, 2, 3);
        assert_eq!(s.check(&b), SeqCheck::Append);
        s.record(&b);
        // new epoch must restart at 0
        assert_eq!(s.check(&hdr(1, 1, 5, 1, 5)), SeqCheck::OutOfOrder);
        let c = hdr(1, 1, 0, 1, 5);
        assert_eq!(s.check(&c), SeqCheck::Append);
        s.record(&c);
        assert_eq!(s.check(&hdr(1, 0, 5, 1, 6)), SeqCheck::Fenced);
        // unknown producer: any sequence; pid -1: no checks
        assert_eq!(s.check(&hdr(2, 0, 77, 1, 6)), SeqCheck::Append);
        assert_eq!(s.check(&hdr(-1, -1, -1, 1, 6)), SeqCheck::Append);
    }

    #[test]
    fn producers_expire_by_their_last_batch_timestamp() {
        let mut st = ProducerState::default();
        let at = |pid: i64, seq: i32, base: i64, ts: i64| RecordBatchHeader {
            max_timestamp: ts,
            ..hdr(pid, 0, seq, 1, base)
        };
        st.record(&at(1, 0, 0, 1_000));
        st.record(&at(2, 0, 1, 1_000));
        st.record(&at(2, 1, 2, 5_000)); // producer 2's last batch is newer
                                        // 5,000 ms of expiration at now = 5,999: producer 1 (last 1,000) is 4,999 old.
        assert_eq!(st.remove_expired(5_999, 5_000), 0);
        assert_eq!(st.remove_expired(6_000, 5_000), 1);
        assert_eq!(st.producers().map(|(pid, _)| pid).collect::<Vec<_>>(), vec![2]);
        // Forgotten: its next batch is taken whatever its sequence.
        assert_eq!(st.check(&at(1, 7, 3, 6_000)), SeqCheck::Append);
        assert_eq!(st.check(&at(2, 7, 3, 6_000)), SeqCheck::OutOfOrder);
        assert_eq!(st.remove_expired(10_000, 5_000), 1);
        assert!(st.is_empty());
    }

    #[test]
    fn keeps_five_and_wraps() {
        let mut s = ProducerState::default();
        for i in 0..7 {
            s.record(&hdr(9, 2, i, 1, i as i64));
        }
        assert_eq!(s.get(9).unwrap().batches.len(), 5);
        assert_eq!(s.check(&hdr(9, 2, 1, 1, 0)), SeqCheck::OutOfOrder);
        assert!(matches!(s.check(&hdr(9, 2, 2, 1, 0)), SeqCheck::Duplicate(_)));
        let mut w = ProducerState::default();
        w.record(&hdr(3, 0, i32::MAX - 1, 2, 0)); // last seq = MAX
        assert_eq!(w.check(&hdr(3, 0, 0, 1, 2)), SeqCheck::Append);
    }

    #[test]
    fn snapshot_round_trip() {
        let mut s = ProducerState::default();
        s.record(&hdr(1, 0, 0, 3, 0));
        s.record(&hdr(5, 7, 10, 2, 3));
        let enc = s.encode_snapshot(42);
        let (d, at) = ProducerState::decode_snapshot(&enc).unwrap();
        assert_eq!(at, 42);
        assert_eq!(d.get(1), s.get(1));
        assert_eq!(d.get(5), s.get(5));
        assert_eq!(d.get(5).unwrap().last_timestamp, hdr(5, 7, 10, 2, 3).max_timestamp);
        let mut bad = enc.clone();
        bad[10] ^= 1;
        assert!(ProducerState::decode_snapshot(&bad).is_none());
        assert!(ProducerState::decode_snapshot(&enc[..enc.len() - 1]).is_none());
    }

    #[test]
    fn a_pss1_snapshot_from_before_last_timestamps_still_loads() {
        let mut b = b"PSS1".to_vec();
        b.extend_from_slice(&42i64.to_be_bytes());
        b.extend_from_slice(&1u32.to_be_bytes());
        b.extend_from_slice(&7i64.to_be_bytes()); // pid
        b.extend_from_slice(&3i16.to_be_bytes()); // epoch
        b.push(1);
        for v in [0i32, 2] {
            b.extend_from_slice(&v.to_be_bytes());
        }
        for v in [10i64, 12] {
            b.extend_from_slice(&v.to_be_bytes());
        }
        let crc = crc32c::crc32c(&b);
        b.extend_from_slice(&crc.to_be_bytes());
        let (s, at) = ProducerState::decode_snapshot(&b).unwrap();
        assert_eq!(at, 42);
        let meta = BatchMeta { first_seq: 0, last_seq: 2, base_offset: 10, last_offset: 12 };
        let want = ProducerEntry { epoch: 3, batches: VecDeque::from([meta]), last_timestamp: -1 };
        assert_eq!(s.get(7), Some(&want));
    }
}

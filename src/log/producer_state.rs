//! Idempotent and transactional producer state of one partition (Kafka's
//! `ProducerStateManager`, reduced): producer id -> epoch, the metadata of its last
//! [`MAX_BATCHES`] batches, its ongoing transaction on this partition and the epoch of
//! the coordinator that wrote its last transaction marker; and the transactions not yet
//! complete, which bound the last stable offset (KIP-98).
//!
//! Pure state machine (no I/O besides the snapshot encode/decode on byte slices).
//! Lives inside a [`super::PartitionLog`], on the partition's owning shard only.

use std::collections::{BTreeMap, HashMap, VecDeque};

use crate::protocol::batch::RecordBatchHeader;
use crate::protocol::control::{ControlType, EndTxnMarker};

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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerEntry {
    /// Current epoch.
    pub epoch: i16,
    /// Its last batches, oldest first, at most [`MAX_BATCHES`].
    pub batches: VecDeque<BatchMeta>,
    /// Max timestamp of its last batch appended (ms; -1 before any), as
    /// DescribeProducers reports it.
    pub last_timestamp: i64,
    /// Offset of the first batch of its ongoing transaction on this partition; None
    /// outside a transaction (Kafka's `currentTxnFirstOffset`).
    pub current_txn_first_offset: Option<i64>,
    /// Coordinator epoch of the last transaction marker written for it; -1 before any.
    /// A marker with a lower one is refused (TRANSACTION_COORDINATOR_FENCED).
    pub coordinator_epoch: i32,
}

impl Default for ProducerEntry {
    fn default() -> Self {
        ProducerEntry {
            epoch: 0,
            batches: VecDeque::new(),
            last_timestamp: -1,
            current_txn_first_offset: None,
            coordinator_epoch: -1,
        }
    }
}

/// A transaction whose marker was appended: `[first_offset, last_offset]`, inclusive,
/// the last being the marker's offset (Kafka's `CompletedTxn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompletedTxn {
    /// The producer that ran it.
    pub producer_id: i64,
    /// Offset of its first batch on this partition.
    pub first_offset: i64,
    /// Offset of its marker.
    pub last_offset: i64,
    /// Ended by an ABORT marker.
    pub aborted: bool,
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
    /// A non-transactional batch from a producer with a transaction ongoing on this
    /// partition (Kafka INVALID_TXN_STATE).
    InvalidTxnState,
    /// A transaction marker from a coordinator epoch older than the last marker's
    /// (Kafka TRANSACTION_COORDINATOR_FENCED).
    CoordinatorFenced,
}

/// Producer id -> [`ProducerEntry`] for one partition, and its transactions not yet
/// complete. Lives on the partition's owning shard only, inside its `PartitionLog`.
#[derive(Debug, Clone, Default)]
pub struct ProducerState {
    producers: HashMap<i64, ProducerEntry>,
    /// Ongoing transactions: first offset -> producer id (Kafka's `ongoingTxns`).
    ongoing: BTreeMap<i64, i64>,
    /// Transactions whose marker is appended but not yet below the high watermark, in
    /// marker order (Kafka's `unreplicatedTxns`): still unstable.
    unwritten: VecDeque<CompletedTxn>,
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

    /// Checks `h` (a batch about to be appended; `marker`: its transaction marker when
    /// it is a control batch) per Kafka's `ProducerAppendInfo` rules: producer id -1: no
    /// check; unknown producer: any sequence; lower epoch: `Fenced`; a marker: fenced
    /// by epoch and by coordinator epoch (`CoordinatorFenced`), no sequence check;
    /// higher epoch: first seq must be 0; same epoch: a batch whose (first, last) seq
    /// matches one of the last five is a `Duplicate`, otherwise first seq must follow
    /// the last seq; then a non-transactional batch while the producer's transaction is
    /// ongoing here is `InvalidTxnState`.
    pub fn check(&self, h: &RecordBatchHeader, marker: Option<&EndTxnMarker>) -> SeqCheck {
        if h.producer_id < 0 {
            return SeqCheck::Append;
        }
        let Some(e) = self.producers.get(&h.producer_id) else {
            return SeqCheck::Append;
        };
        if h.producer_epoch < e.epoch {
            return SeqCheck::Fenced;
        }
        if h.is_control() {
            return match marker {
                Some(m) if m.coordinator_epoch < e.coordinator_epoch => SeqCheck::CoordinatorFenced,
                _ => SeqCheck::Append,
            };
        }
        let in_txn = || {
            if e.current_txn_first_offset.is_some() && !h.is_transactional() {
                SeqCheck::InvalidTxnState
            } else {
                SeqCheck::Append
            }
        };
        if h.base_sequence < 0 {
            return in_txn();
        }
        let (first, last) = (h.base_sequence, h.last_sequence());
        if h.producer_epoch > e.epoch {
            return if first == 0 { in_txn() } else { SeqCheck::OutOfOrder };
        }
        if let Some(b) = e.batches.iter().find(|b| b.first_seq == first && b.last_seq == last) {
            return SeqCheck::Duplicate(*b);
        }
        match e.batches.back() {
            None => in_txn(),
            Some(b) if first == next_seq(b.last_seq) => in_txn(),
            Some(_) => SeqCheck::OutOfOrder,
        }
    }

    /// Records an appended batch (its header with the assigned base offset; `marker` as
    /// for [`ProducerState::check`]). A transactional data batch starts the producer's
    /// transaction here if none is ongoing; a marker ends it and returns it (None for a
    /// marker of a producer with no transaction here: nothing to complete, as Kafka).
    pub fn record(
        &mut self,
        h: &RecordBatchHeader,
        marker: Option<&EndTxnMarker>,
    ) -> Option<CompletedTxn> {
        if h.producer_id < 0 {
            return None;
        }
        let e = self.producers.entry(h.producer_id).or_default();
        e.last_timestamp = h.max_timestamp;
        if h.producer_epoch != e.epoch {
            e.epoch = h.producer_epoch;
            e.batches.clear();
        }
        if h.is_control() {
            let m = marker?;
            e.coordinator_epoch = m.coordinator_epoch;
            let first_offset = e.current_txn_first_offset.take()?;
            self.ongoing.remove(&first_offset);
            return Some(CompletedTxn {
                producer_id: h.producer_id,
                first_offset,
                last_offset: h.base_offset,
                aborted: m.control_type == ControlType::Abort,
            });
        }
        if h.is_transactional() && e.current_txn_first_offset.is_none() {
            e.current_txn_first_offset = Some(h.base_offset);
            self.ongoing.insert(h.base_offset, h.producer_id);
        }
        if h.base_sequence < 0 {
            return None;
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
        None
    }

    /// The last stable offset a transaction completed by `txn` (just recorded) leaves:
    /// the first offset of the earliest transaction still ongoing, else the offset after
    /// its marker (Kafka's `ProducerStateManager.lastStableOffset(CompletedTxn)`; stored
    /// in the aborted-transaction index).
    pub fn last_stable_offset_after(&self, txn: &CompletedTxn) -> i64 {
        self.ongoing.keys().next().copied().unwrap_or(txn.last_offset + 1)
    }

    /// Keeps `txn` (just recorded by an append, its marker not yet written) unstable
    /// until the high watermark passes its marker ([`ProducerState::on_high_watermark`]).
    pub fn completed_unwritten(&mut self, txn: CompletedTxn) {
        self.unwritten.push_back(txn);
    }

    /// The high watermark moved to `hw` (exclusive): transactions whose marker is below
    /// it are stable.
    pub fn on_high_watermark(&mut self, hw: i64) {
        while self.unwritten.front().is_some_and(|t| t.last_offset < hw) {
            self.unwritten.pop_front();
        }
    }

    /// The first offset of the earliest transaction not complete (ongoing, or its marker
    /// not yet written); None when there is none (Kafka's `firstUnstableOffset`). The
    /// last stable offset is this or the high watermark, whichever is lower.
    pub fn first_unstable_offset(&self) -> Option<i64> {
        let ongoing = self.ongoing.keys().next().copied();
        let unwritten = self.unwritten.iter().map(|t| t.first_offset).min();
        match (ongoing, unwritten) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Forgets every producer whose last batch's max timestamp is `expiration_ms` or
    /// more before `now_ms` (both ms since the epoch), as Kafka's
    /// `ProducerStateManager.removeExpiredProducers` does with `producer.id.expiration.ms`
    /// (KIP-854). A producer loaded from a snapshot without timestamps (-1) counts as
    /// expired, as Kafka's `NO_TIMESTAMP` does. Its next batch is then taken with any
    /// sequence, as a new producer's is. A producer with a transaction ongoing here
    /// never expires (Kafka's `isProducerExpired`). Returns how many were removed.
    pub fn remove_expired(&mut self, now_ms: i64, expiration_ms: i64) -> usize {
        let before = self.producers.len();
        self.producers.retain(|_, e| {
            e.current_txn_first_offset.is_some()
                || now_ms.saturating_sub(e.last_timestamp) < expiration_ms
        });
        before - self.producers.len()
    }

    /// Every producer, by producer id.
    pub fn producers(&self) -> impl Iterator<Item = (i64, &ProducerEntry)> {
        self.producers.iter().map(|(pid, e)| (*pid, e))
    }

    /// Snapshot encoding: magic "PSS3", covered offset i64, count u32, then per producer
    /// pid i64, epoch i16, last timestamp i64, coordinator epoch i32, ongoing
    /// transaction's first offset i64 (-1: none), n u8, n x (first i32, last i32, base
    /// i64, last i64); then the CRC32C (u32) of everything before it. Big-endian.
    /// Older files load: "PSS2" (before transactions) lacks the coordinator epoch and
    /// the first offset, "PSS1" also the last timestamp.
    pub fn encode_snapshot(&self, covers_offset: i64) -> Vec<u8> {
        let mut b = Vec::with_capacity(16 + self.producers.len() * 76);
        b.extend_from_slice(b"PSS3");
        b.extend_from_slice(&covers_offset.to_be_bytes());
        b.extend_from_slice(&(self.producers.len() as u32).to_be_bytes());
        for (pid, e) in &self.producers {
            b.extend_from_slice(&pid.to_be_bytes());
            b.extend_from_slice(&e.epoch.to_be_bytes());
            b.extend_from_slice(&e.last_timestamp.to_be_bytes());
            b.extend_from_slice(&e.coordinator_epoch.to_be_bytes());
            b.extend_from_slice(&e.current_txn_first_offset.unwrap_or(-1).to_be_bytes());
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
        let version = match b.get(..4)? {
            b"PSS1" => 1,
            b"PSS2" => 2,
            b"PSS3" => 3,
            _ => return None,
        };
        if b.len() < 20 {
            return None;
        }
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
            let last_timestamp = if version >= 2 { r.i64()? } else { -1 };
            let (coordinator_epoch, txn_first) =
                if version >= 3 { (r.i32()?, r.i64()?) } else { (-1, -1) };
            let current_txn_first_offset = (txn_first >= 0).then_some(txn_first);
            let k = r.u8()?;
            let mut e = ProducerEntry {
                epoch,
                batches: VecDeque::new(),
                last_timestamp,
                current_txn_first_offset,
                coordinator_epoch,
            };
            for _ in 0..k {
                e.batches.push_back(BatchMeta {
                    first_seq: r.i32()?,
                    last_seq: r.i32()?,
                    base_offset: r.i64()?,
                    last_offset: r.i64()?,
                });
            }
            if let Some(first) = current_txn_first_offset {
                s.ongoing.insert(first, pid);
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

    impl ProducerState {
        fn check_data(&self, h: &RecordBatchHeader) -> SeqCheck {
            self.check(h, None)
        }
        fn record_data(&mut self, h: &RecordBatchHeader) {
            assert_eq!(self.record(h, None), None);
        }
    }

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
        assert_eq!(s.check_data(&a), SeqCheck::Append);
        s.record_data(&a);
        // duplicate of the same batch
        let dup = hdr(1, 0, 0, 3, 99);
        assert_eq!(
            s.check_data(&dup),
            SeqCheck::Duplicate(BatchMeta {
                first_seq: 0,
                last_seq: 2,
                base_offset: 0,
                last_offset: 2
            })
        );
        assert_eq!(s.check_data(&hdr(1, 0, 4, 1, 3)), SeqCheck::OutOfOrder);
        let b = hdr(1, 0, 3, 2, 3);
        assert_eq!(s.check_data(&b), SeqCheck::Append);
        s.record_data(&b);
        // new epoch must restart at 0
        assert_eq!(s.check_data(&hdr(1, 1, 5, 1, 5)), SeqCheck::OutOfOrder);
        let c = hdr(1, 1, 0, 1, 5);
        assert_eq!(s.check_data(&c), SeqCheck::Append);
        s.record_data(&c);
        assert_eq!(s.check_data(&hdr(1, 0, 5, 1, 6)), SeqCheck::Fenced);
        // unknown producer: any sequence; pid -1: no checks
        assert_eq!(s.check_data(&hdr(2, 0, 77, 1, 6)), SeqCheck::Append);
        assert_eq!(s.check_data(&hdr(-1, -1, -1, 1, 6)), SeqCheck::Append);
    }

    #[test]
    fn producers_expire_by_their_last_batch_timestamp() {
        let mut st = ProducerState::default();
        let at = |pid: i64, seq: i32, base: i64, ts: i64| RecordBatchHeader {
            max_timestamp: ts,
            ..hdr(pid, 0, seq, 1, base)
        };
        st.record_data(&at(1, 0, 0, 1_000));
        st.record_data(&at(2, 0, 1, 1_000));
        st.record_data(&at(2, 1, 2, 5_000)); // producer 2's last batch is newer
                                             // 5,000 ms of expiration at now = 5,999: producer 1 (last 1,000) is 4,999 old.
        assert_eq!(st.remove_expired(5_999, 5_000), 0);
        assert_eq!(st.remove_expired(6_000, 5_000), 1);
        assert_eq!(st.producers().map(|(pid, _)| pid).collect::<Vec<_>>(), vec![2]);
        // Forgotten: its next batch is taken whatever its sequence.
        assert_eq!(st.check_data(&at(1, 7, 3, 6_000)), SeqCheck::Append);
        assert_eq!(st.check_data(&at(2, 7, 3, 6_000)), SeqCheck::OutOfOrder);
        assert_eq!(st.remove_expired(10_000, 5_000), 1);
        assert!(st.is_empty());
    }

    fn txn(pid: i64, epoch: i16, seq: i32, n: usize, base: i64) -> RecordBatchHeader {
        RecordBatchHeader {
            attributes: crate::protocol::batch::ATTR_TRANSACTIONAL,
            ..hdr(pid, epoch, seq, n, base)
        }
    }

    fn marker_at(
        pid: i64,
        epoch: i16,
        base: i64,
        control_type: ControlType,
        coordinator_epoch: i32,
    ) -> (RecordBatchHeader, EndTxnMarker) {
        let m = EndTxnMarker { control_type, coordinator_epoch };
        let b = crate::protocol::control::encode_marker_batch(pid, epoch, m, 9).unwrap();
        let h = RecordBatchHeader { base_offset: base, ..RecordBatchHeader::parse(&b).unwrap() };
        (h, m)
    }

    #[test]
    fn transactions_start_at_their_first_batch_and_end_at_their_marker() {
        let mut s = ProducerState::default();
        assert_eq!(s.first_unstable_offset(), None);
        // Producer 1: a transaction from offset 10 (two batches); producer 2 from 12.
        assert_eq!(s.check(&txn(1, 0, 0, 2, 10), None), SeqCheck::Append);
        assert_eq!(s.record(&txn(1, 0, 0, 2, 10), None), None);
        assert_eq!(s.record(&txn(2, 0, 0, 1, 12), None), None);
        assert_eq!(s.record(&txn(1, 0, 2, 1, 13), None), None);
        assert_eq!(s.get(1).unwrap().current_txn_first_offset, Some(10));
        assert_eq!(s.first_unstable_offset(), Some(10));
        // A plain batch from producer 1 while its transaction is ongoing: refused.
        assert_eq!(s.check(&hdr(1, 0, 3, 1, 14), None), SeqCheck::InvalidTxnState);
        // A retry of its first batch is still a duplicate.
        assert!(matches!(s.check(&txn(1, 0, 0, 2, 14), None), SeqCheck::Duplicate(_)));
        // Producer 1 aborts at 14.
        let (h, m) = marker_at(1, 0, 14, ControlType::Abort, 3);
        assert_eq!(s.check(&h, Some(&m)), SeqCheck::Append);
        let done = s.record(&h, Some(&m)).unwrap();
        assert_eq!(
            done,
            CompletedTxn { producer_id: 1, first_offset: 10, last_offset: 14, aborted: true }
        );
        // Producer 2's transaction (from 12) bounds the stable offset.
        assert_eq!(s.last_stable_offset_after(&done), 12);
        s.completed_unwritten(done);
        assert_eq!(s.first_unstable_offset(), Some(10));
        s.on_high_watermark(14);
        assert_eq!(s.first_unstable_offset(), Some(10));
        s.on_high_watermark(15);
        assert_eq!(s.first_unstable_offset(), Some(12));
        let e = s.get(1).unwrap();
        assert_eq!((e.current_txn_first_offset, e.coordinator_epoch), (None, 3));
        // A marker from an older coordinator epoch is fenced; an older producer epoch too.
        let (h, m) = marker_at(1, 0, 15, ControlType::Commit, 2);
        assert_eq!(s.check(&h, Some(&m)), SeqCheck::CoordinatorFenced);
        s.record(&txn(1, 1, 0, 1, 15), None);
        let (h, m) = marker_at(1, 0, 16, ControlType::Commit, 3);
        assert_eq!(s.check(&h, Some(&m)), SeqCheck::Fenced);
        // Producer 2 commits at 16: nothing else ongoing but producer 1's new one (15).
        let (h, m) = marker_at(2, 0, 16, ControlType::Commit, 3);
        let done = s.record(&h, Some(&m)).unwrap();
        assert!(!done.aborted);
        assert_eq!(s.last_stable_offset_after(&done), 15);
        // A marker for a producer with no transaction here completes nothing.
        let (h, m) = marker_at(2, 0, 17, ControlType::Commit, 3);
        assert_eq!(s.record(&h, Some(&m)), None);
        let (h, m) = marker_at(1, 1, 18, ControlType::Commit, 3);
        let done = s.record(&h, Some(&m)).unwrap();
        assert_eq!(s.last_stable_offset_after(&done), 19);
        assert_eq!(s.first_unstable_offset(), None);
    }

    #[test]
    fn a_producer_in_a_transaction_does_not_expire_and_its_transaction_survives_a_snapshot() {
        let mut s = ProducerState::default();
        s.record(&RecordBatchHeader { max_timestamp: 1_000, ..txn(4, 2, 0, 3, 20) }, None);
        s.record(&RecordBatchHeader { max_timestamp: 1_000, ..hdr(5, 0, 0, 1, 23) }, None);
        let (h, m) = marker_at(6, 0, 24, ControlType::Commit, 8);
        s.record(&h, Some(&m));
        assert_eq!(s.remove_expired(1_000_000, 5_000), 2);
        assert_eq!(s.len(), 1);
        s.record(&hdr(6, 0, 0, 1, 25), None);
        s.get(6).unwrap();
        let (d, at) = ProducerState::decode_snapshot(&s.encode_snapshot(26)).unwrap();
        assert_eq!(at, 26);
        assert_eq!(d.get(4), s.get(4));
        assert_eq!(d.get(4).unwrap().current_txn_first_offset, Some(20));
        assert_eq!(d.first_unstable_offset(), Some(20));
        assert_eq!(d.get(6).unwrap().coordinator_epoch, -1);
    }

    #[test]
    fn keeps_five_and_wraps() {
        let mut s = ProducerState::default();
        for i in 0..7 {
            s.record_data(&hdr(9, 2, i, 1, i as i64));
        }
        assert_eq!(s.get(9).unwrap().batches.len(), 5);
        assert_eq!(s.check_data(&hdr(9, 2, 1, 1, 0)), SeqCheck::OutOfOrder);
        assert!(matches!(s.check_data(&hdr(9, 2, 2, 1, 0)), SeqCheck::Duplicate(_)));
        let mut w = ProducerState::default();
        w.record_data(&hdr(3, 0, i32::MAX - 1, 2, 0)); // last seq = MAX
        assert_eq!(w.check_data(&hdr(3, 0, 0, 1, 2)), SeqCheck::Append);
    }

    #[test]
    fn snapshot_round_trip() {
        let mut s = ProducerState::default();
        s.record_data(&hdr(1, 0, 0, 3, 0));
        s.record_data(&hdr(5, 7, 10, 2, 3));
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
        let want =
            ProducerEntry { epoch: 3, batches: VecDeque::from([meta]), ..Default::default() };
        assert_eq!(s.get(7), Some(&want));
    }
}

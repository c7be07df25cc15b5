//! Specification tests for the transaction coordinator, after Kafka's
//! `TransactionCoordinatorTest`, `TransactionMetadataTest`, `TransactionStateManagerTest`
//! and `TransactionLogTest`. `H` drives a coordinator that owns every partition with a
//! manual clock and a producer id counter; every record it is asked to write is checked
//! to encode and decode back to itself, and is kept in `log`, the partition's log as the
//! shard would have written it.

mod add_partitions;
mod end_txn;
mod init_producer_id;
mod load;
mod metadata;
mod random_walk;
mod records;
mod timeouts;

use std::collections::BTreeSet;

use super::*;

/// Test start time (ms since the epoch).
pub const T0: i64 = 1_000_000;
/// The coordinator epoch of every partition.
pub const EPOCH: i32 = 7;
/// The transaction timeout of test producers (ms).
pub const TIMEOUT: i32 = 60_000;
/// The first producer id the harness allocates.
pub const FIRST_PID: i64 = 1000;

pub fn tp(topic: &str, partition: i32) -> TopicPartition {
    (topic.to_string(), partition)
}

pub fn parts(list: &[(&str, i32)]) -> BTreeSet<TopicPartition> {
    list.iter().map(|(t, p)| tp(t, *p)).collect()
}

pub fn pe(producer_id: i64, producer_epoch: i16) -> ProducerIdAndEpoch {
    ProducerIdAndEpoch { producer_id, producer_epoch }
}

/// Metadata in `state` with the usual test values: producer id `pid` (previous the
/// same), `epoch`, timeout [`TIMEOUT`], the transaction started and last updated at
/// [`T0`], TV0.
pub fn meta(pid: i64, epoch: i16, state: TxnState, partitions: &[(&str, i32)]) -> TxnMetadata {
    TxnMetadata {
        producer_id: pid,
        previous_producer_id: pid,
        next_producer_id: NO_PRODUCER_ID,
        producer_epoch: epoch,
        last_producer_epoch: NO_PRODUCER_EPOCH,
        timeout_ms: TIMEOUT,
        state,
        partitions: parts(partitions),
        start_timestamp_ms: if state == TxnState::Empty { -1 } else { T0 },
        last_update_timestamp_ms: T0,
        client_transaction_version: TransactionVersion::Tv0,
    }
}

/// Encode, decode, compare: the record the coordinator asks for round-trips.
pub fn check_record(r: &TxnRecord) {
    let (key, value) = r.encode().expect("record encodes");
    let back = TxnRecord::decode(&key, value.as_deref()).expect("record decodes");
    assert_eq!(&back, r);
}

pub struct H {
    pub c: TxnCoordinator,
    pub now: i64,
    pub next_pid: i64,
    /// Every record written, with its partition, in order.
    pub log: Vec<(i32, TxnRecord)>,
    /// Markers handed out and not yet reported written.
    pub markers: Vec<TxnMarkers>,
}

impl H {
    pub fn new() -> Self {
        Self::with(TxnConfig::default())
    }

    /// A coordinator owning every partition, loaded at [`EPOCH`].
    pub fn with(config: TxnConfig) -> Self {
        let mut c = TxnCoordinator::new(config.clone());
        for p in 0..config.num_partitions {
            c.begin_load(p, EPOCH);
            assert!(c.finish_load(p, T0).is_empty());
        }
        H { c, now: T0, next_pid: FIRST_PID, log: Vec::new(), markers: Vec::new() }
    }

    pub fn tv2() -> Self {
        Self::with(TxnConfig {
            transaction_version: TransactionVersion::Tv2,
            ..TxnConfig::default()
        })
    }

    /// Make `m` the state of `id` by reloading its partition with one record (value
    /// version 1, so previous and next producer ids are kept; the last epoch is -1, as
    /// after any load). Returns the markers `finish_load` asked for.
    pub fn put(&mut self, id: &str, m: &TxnMetadata) -> Vec<TxnMarkers> {
        let p = self.c.partition_for(id);
        let others: Vec<(String, TxnMetadata)> = self
            .c
            .partitions
            .get(&p)
            .map(|part| part.ids.iter().map(|(k, e)| (k.clone(), e.metadata.clone())).collect())
            .unwrap_or_default();
        self.c.begin_load(p, EPOCH);
        for (k, other) in others.iter().filter(|(k, _)| k != id) {
            self.c.load_record(p, TxnRecord::of(k, other, 1));
        }
        self.c.load_record(p, TxnRecord::of(id, m, 1));
        let markers = self.c.finish_load(p, self.now);
        self.markers.extend(markers.clone());
        markers
    }

    pub fn alloc(&mut self) -> i64 {
        self.next_pid += 1;
        self.next_pid - 1
    }

    /// Write `w` successfully and report it.
    pub fn write(&mut self, w: &TxnWrite) -> WriteDone {
        check_record(&w.record);
        self.log.push((w.partition, w.record.clone()));
        let done = self.c.write_completed(w, Ok(()), self.now);
        self.markers.extend(done.markers.clone());
        done
    }

    /// Report a failed write of `w`.
    pub fn fail(&mut self, w: &TxnWrite, error: ResponseError) -> WriteDone {
        check_record(&w.record);
        self.c.write_completed(w, Err(error), self.now)
    }

    /// Carry a decision through: allocate when asked, write when asked; the answer.
    fn settle(
        &mut self,
        mut f: impl FnMut(&mut TxnCoordinator, Option<i64>, i64) -> Decision<ProducerIdAndEpoch>,
    ) -> Result<ProducerIdAndEpoch, ResponseError> {
        let mut fresh = None;
        loop {
            match f(&mut self.c, fresh, self.now) {
                Decision::Answer(a) => return a,
                Decision::NeedProducerId => {
                    assert!(fresh.is_none(), "asked for a producer id twice");
                    fresh = Some(self.alloc());
                }
                Decision::Write(w) => return self.write(&w).answer,
            }
        }
    }

    pub fn init(
        &mut self,
        id: &str,
        expected: Option<ProducerIdAndEpoch>,
    ) -> Result<ProducerIdAndEpoch, ResponseError> {
        self.settle(|c, fresh, now| c.init_producer_id(id, TIMEOUT, expected, fresh, now))
    }

    pub fn end(
        &mut self,
        id: &str,
        producer: ProducerIdAndEpoch,
        result: TxnResult,
        version: TransactionVersion,
    ) -> Result<ProducerIdAndEpoch, ResponseError> {
        self.settle(|c, fresh, now| {
            c.end_txn(
                id,
                producer.producer_id,
                producer.producer_epoch,
                result,
                version,
                fresh,
                now,
            )
        })
    }

    pub fn add(
        &mut self,
        id: &str,
        producer: ProducerIdAndEpoch,
        partitions: &[(&str, i32)],
    ) -> Result<(), ResponseError> {
        let d = self.c.add_partitions(
            id,
            producer.producer_id,
            producer.producer_epoch,
            &parts(partitions),
            self.now,
        );
        match d {
            Decision::Answer(a) => a,
            Decision::NeedProducerId => panic!("AddPartitionsToTxn needs no producer id"),
            Decision::Write(w) => self.write(&w).answer.map(|_| ()),
        }
    }

    /// Report every outstanding marker set written and write the completions.
    pub fn complete_markers(&mut self) {
        for m in std::mem::take(&mut self.markers) {
            let w = self.c.markers_written(&m).expect("a completion to write");
            let done = self.write(&w);
            assert!(done.answer.is_ok(), "{done:?}");
            assert_eq!(done.markers, None);
        }
    }

    pub fn state(&self, id: &str) -> TxnState {
        self.c.metadata(id).expect("known id").state
    }

    pub fn m(&self, id: &str) -> TxnMetadata {
        self.c.metadata(id).expect("known id").clone()
    }
}

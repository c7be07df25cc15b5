//! The append messages against a real one-shard broker state: an `AppendMany` gives
//! the same per-partition results and offsets as one `Append` per batch, and keeps
//! the order of batches within a message and across pipelined messages; a `ReadMany`
//! answers each of its partitions in list order.

use std::rc::Rc;

use bytes::Bytes;
use futures_channel::oneshot;
use kafka_protocol::messages::TopicName;

use super::messages::{Appended, NewTopic, PartitionBatches, PartitionRead, ReadSpec};
use super::{ControlRequest, DataRequest, Shard};
use crate::error::{KafkaResult, ResponseError};
use crate::protocol::batch::testing::{build_batch, BatchSpec};
use crate::protocol::batch::BatchIter;
use crate::protocol::strings::topic_name;

/// Runs `test` on a fresh one-shard broker state that has topics "many" and "single"
/// of 3 partitions each.
fn with_shard<F, Fut>(test: F)
where
    F: FnOnce(Rc<Shard>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()>,
{
    super::testing::with_shard(|shard| async move {
        create_topics(&shard, &["many", "single"]).await;
        assert!(shard.log("many", 2).is_some() && shard.log("single", 2).is_some());
        test(shard).await;
    });
}

/// Creates `names`, 3 partitions each, through the control shard.
async fn create_topics(shard: &Rc<Shard>, names: &[&str]) {
    let topics = names
        .iter()
        .map(|&name| NewTopic {
            name: name.into(),
            partitions: 3,
            configs: Default::default(),
            shards: None,
        })
        .collect();
    let created = shard
        .ask_control(|reply| ControlRequest::CreateTopics { topics, validate_only: false, reply })
        .await
        .await
        .expect("control answers");
    assert!(created.iter().all(|r| r.is_ok()), "topics created");
}

/// A plain batch of `n` records.
fn batch(n: usize) -> Bytes {
    Bytes::from(build_batch(&BatchSpec { records: n, value_len: 10, ..Default::default() }))
}

/// An idempotent batch of `n` records from producer 7, epoch 0, at `seq`.
fn idem(seq: i32, n: usize) -> Bytes {
    Bytes::from(build_batch(&BatchSpec {
        records: n,
        producer_id: 7,
        producer_epoch: 0,
        base_sequence: seq,
        ..Default::default()
    }))
}

/// Sends one `AppendMany` for `partitions` of `topic`; the wait for its reply.
async fn append_many(
    shard: &Rc<Shard>,
    topic: &str,
    partitions: Vec<(i32, Vec<Bytes>)>,
) -> oneshot::Receiver<Vec<KafkaResult<Appended>>> {
    let partitions = partitions
        .into_iter()
        .map(|(partition, batches)| PartitionBatches { topic: name(topic), partition, batches })
        .collect();
    let (reply, rx) = oneshot::channel();
    shard.send(shard.id, DataRequest::AppendMany { partitions, now_ms: 0, reply }).await;
    rx
}

/// Sends one `Append` per batch of each partition and reduces each partition's
/// replies the way Produce does: the first batch's result, or the first error.
async fn append_each(
    shard: &Rc<Shard>,
    topic: &str,
    partitions: Vec<(i32, Vec<Bytes>)>,
) -> Vec<KafkaResult<Appended>> {
    let mut waits = Vec::new();
    for (partition, batches) in partitions {
        let mut replies = Vec::new();
        for batch in batches {
            let (reply, rx) = oneshot::channel();
            let request =
                DataRequest::Append { topic: name(topic), partition, batch, now_ms: 0, reply };
            shard.send(shard.id, request).await;
            replies.push(rx);
        }
        waits.push(replies);
    }
    let mut results = Vec::new();
    for replies in waits {
        let mut first: Option<KafkaResult<Appended>> = None;
        for rx in replies {
            let r = rx.await.expect("reply");
            match (&first, r) {
                (None, r) => first = Some(r),
                (Some(Ok(_)), Err(e)) => first = Some(Err(e)),
                _ => {}
            }
            if matches!(first, Some(Err(_))) {
                break;
            }
        }
        results.push(first.expect("at least one batch"));
    }
    results
}

fn name(topic: &str) -> TopicName {
    topic_name(topic)
}

/// Base offsets of the batches stored in `topic`/`partition`.
async fn stored_bases(shard: &Rc<Shard>, topic: &str, partition: i32) -> Vec<i64> {
    let log = shard.log(topic, partition).expect("owned").log.clone();
    let bytes = log.read(0, 1 << 20).await.expect("read");
    BatchIter::new(&bytes).map(|b| b.expect("valid batch").1.base_offset).collect()
}

fn base_offsets(results: &[KafkaResult<Appended>]) -> Vec<KafkaResult<i64>> {
    results.iter().map(|r| r.map(|a| a.base_offset)).collect()
}

#[test]
fn append_many_equals_one_append_per_batch() {
    with_shard(|shard| async move {
        let shape = || {
            vec![(0, vec![batch(3), batch(2)]), (2, vec![batch(4)]), (1, vec![batch(1), batch(1)])]
        };
        let many = append_many(&shard, "many", shape()).await.await.expect("reply");
        let single = append_each(&shard, "single", shape()).await;
        assert_eq!(many, single);
        assert_eq!(base_offsets(&many), vec![Ok(0), Ok(0), Ok(0)]);

        // A second round continues where the first ended, in both paths.
        let many = append_many(&shard, "many", shape()).await.await.expect("reply");
        let single = append_each(&shard, "single", shape()).await;
        assert_eq!(many, single);
        assert_eq!(base_offsets(&many), vec![Ok(5), Ok(4), Ok(2)]);
        for (topic, p) in [("many", 0), ("single", 0)] {
            assert_eq!(stored_bases(&shard, topic, p).await, vec![0, 3, 5, 8], "{topic}-{p}");
        }
    });
}

#[test]
fn append_many_reports_each_partitions_first_error() {
    with_shard(|shard| async move {
        let shape = || {
            vec![
                // The second batch skips sequence 2..4: OUT_OF_ORDER_SEQUENCE_NUMBER, the
                // first is still appended.
                (0, vec![idem(0, 2), idem(5, 1)]),
                // Not a partition of the topic (Produce refuses it before sending; the
                // owner answers as for a log it has not opened yet).
                (9, vec![batch(1)]),
                (1, vec![batch(2)]),
            ]
        };
        let many = append_many(&shard, "many", shape()).await.await.expect("reply");
        let single = append_each(&shard, "single", shape()).await;
        assert_eq!(many, single);
        assert_eq!(
            base_offsets(&many),
            vec![
                Err(ResponseError::OutOfOrderSequenceNumber),
                Err(ResponseError::NotLeaderOrFollower),
                Ok(0)
            ]
        );
        assert_eq!(stored_bases(&shard, "many", 0).await, vec![0]);

        // A duplicate of the first batch answers with its original offset at once.
        let dup = append_many(&shard, "many", vec![(0, vec![idem(0, 2)])]).await;
        assert_eq!(base_offsets(&dup.await.expect("reply")), vec![Ok(0)]);
    });
}

#[test]
fn pipelined_append_many_keep_request_order() {
    with_shard(|shard| async move {
        // Start several messages before awaiting any reply, as a connection does with
        // pipelined Produce requests.
        let mut waits = Vec::new();
        for round in 0..5 {
            let n = round + 1;
            waits.push(append_many(&shard, "many", vec![(1, vec![batch(n), batch(1)])]).await);
        }
        let mut expected = 0;
        let mut stored = Vec::new();
        for (round, rx) in waits.into_iter().enumerate() {
            assert_eq!(base_offsets(&rx.await.expect("reply")), vec![Ok(expected)]);
            stored.push(expected);
            stored.push(expected + round as i64 + 1);
            expected += round as i64 + 2;
        }
        assert_eq!(stored_bases(&shard, "many", 1).await, stored);
    });
}

/// Waits (at most 2 s) until partition "single"-0 is served by a new instance of
/// `failed`, its log opened again after a write failure.
async fn wait_reopened(shard: &Rc<Shard>, failed: &Rc<crate::log::PartitionLog>) {
    let mut waited = 0;
    while Rc::ptr_eq(&shard.log("single", 0).expect("owned").log, failed) {
        assert!(waited < 200, "the failed log was never opened again");
        glommio::timer::sleep(std::time::Duration::from_millis(10)).await;
        waited += 1;
    }
}

/// A partition whose write failed (a full disk): appends get KAFKA_STORAGE_ERROR, what
/// it stored stays readable, and the shard opens it again (recovery) so that appends
/// resume right after the last written batch.
#[test]
fn a_failed_partition_log_is_opened_again_and_appends_resume() {
    with_shard(|shard| async move {
        let ok = append_each(&shard, "single", vec![(0, vec![batch(3), batch(3)])]).await;
        assert_eq!(base_offsets(&ok), vec![Ok(0)]);
        let failed = shard.log("single", 0).expect("owned").log.clone();
        failed.fail_for_test();
        let refused = append_each(&shard, "single", vec![(0, vec![batch(2)])]).await;
        assert_eq!(base_offsets(&refused), vec![Err(ResponseError::KafkaStorageError)]);
        // The refusal started a new try at opening it; wait for the new instance.
        wait_reopened(&shard, &failed).await;
        // The failed instance still serves what it stored.
        let old = failed.read(0, 1 << 20).await.expect("read");
        let bases: Vec<i64> =
            BatchIter::new(&old).map(|b| b.expect("batch").1.base_offset).collect();
        assert_eq!(bases, vec![0, 3]);
        let resumed = append_each(&shard, "single", vec![(0, vec![batch(2)])]).await;
        assert_eq!(base_offsets(&resumed), vec![Ok(6)]);
        assert_eq!(stored_bases(&shard, "single", 0).await, vec![0, 3, 6]);
    });
}

/// DeleteRecords racing the reopen of a failed log: the client is told the new log
/// start offset only if the instance that serves afterwards has it too.
#[test]
fn delete_records_and_a_reopen_of_the_log_do_not_interleave() {
    with_shard(|shard| async move {
        let ok = append_each(&shard, "single", vec![(0, vec![batch(3), batch(3)])]).await;
        assert_eq!(base_offsets(&ok), vec![Ok(0)]);
        let failed = shard.log("single", 0).expect("owned").log.clone();
        failed.fail_for_test();
        // This refusal starts the reopen (a task that runs at the next yield) ...
        let refused = append_each(&shard, "single", vec![(0, vec![batch(2)])]).await;
        assert_eq!(base_offsets(&refused), vec![Err(ResponseError::KafkaStorageError)]);
        // ... and DeleteRecords arrives meanwhile.
        let (reply, rx) = oneshot::channel();
        let request =
            DataRequest::DeleteRecords { topic: name("single"), partition: 0, offset: 3, reply };
        shard.send(shard.id, request).await;
        assert_eq!(rx.await.expect("reply"), Ok(3));
        wait_reopened(&shard, &failed).await;
        assert_eq!(shard.log("single", 0).expect("owned").log.log_start_offset(), 3);
    });
}

#[test]
fn producer_ids_idle_for_the_expiration_are_forgotten() {
    with_shard(|shard| async move {
        // Producer 7 writes sequences 0..1 to two partitions; its batches' max
        // timestamp is 1_700_000_000_001 (BatchSpec's base timestamp + 1).
        for topic in ["many", "single"] {
            let r = append_many(&shard, topic, vec![(1, vec![idem(0, 2)])]).await;
            assert_eq!(base_offsets(&r.await.expect("reply")), vec![Ok(0)]);
        }
        let expiration = shard.config.producer_id_expiration_ms;
        assert_eq!(expiration, 86_400_000, "Kafka's default");
        let last = 1_700_000_000_001;
        assert_eq!(super::producer_expiry::pass(&shard, last + expiration - 1), 0);
        let skip = || async {
            let r = append_many(&shard, "many", vec![(1, vec![idem(5, 1)])]).await;
            base_offsets(&r.await.expect("reply"))
        };
        // Still known: a sequence gap is refused.
        assert_eq!(skip().await, vec![Err(ResponseError::OutOfOrderSequenceNumber)]);
        assert_eq!(super::producer_expiry::pass(&shard, last + expiration), 2);
        for topic in ["many", "single"] {
            let log = shard.log(topic, 1).expect("owned").log.clone();
            assert_eq!(log.active_producers(), vec![], "{topic}");
        }
        // Forgotten: its next batch is taken whatever its sequence, as a new producer's.
        assert_eq!(skip().await, vec![Ok(2)]);
    });
}

#[test]
fn transaction_markers_end_transactions_on_their_partitions() {
    use super::messages::TxnMarkerWrite;
    use crate::protocol::control::{ControlType, EndTxnMarker};
    with_shard(|shard| async move {
        // Producer 7's transactional batch on many-0 and many-1.
        let txn = Bytes::from(build_batch(&BatchSpec {
            records: 2,
            producer_id: 7,
            producer_epoch: 0,
            base_sequence: 0,
            attributes: crate::protocol::batch::ATTR_TRANSACTIONAL,
            ..Default::default()
        }));
        for p in [0, 1] {
            let r = append_many(&shard, "many", vec![(p, vec![txn.clone()])]).await;
            assert!(r.await.unwrap()[0].is_ok());
            assert_eq!(shard.log("many", p).unwrap().log.last_stable_offset(), 0);
        }
        let write = |partition: i32, topic: &str, control_type, coordinator_epoch| TxnMarkerWrite {
            topic: name(topic),
            partition,
            producer_id: 7,
            producer_epoch: 0,
            marker: EndTxnMarker { control_type, coordinator_epoch },
        };
        let markers = vec![
            write(0, "many", ControlType::Commit, 1),
            write(1, "many", ControlType::Commit, 1),
            write(2, "many", ControlType::Commit, 1),
            write(0, "nope", ControlType::Commit, 1),
        ];
        let (reply, rx) = oneshot::channel();
        shard.send(shard.id, DataRequest::WriteTxnMarkers { markers, reply }).await;
        let results = rx.await.unwrap();
        assert_eq!(
            results,
            vec![Ok(()), Ok(()), Ok(()), Err(ResponseError::UnknownTopicOrPartition)]
        );
        for p in [0, 1] {
            let log = shard.log("many", p).unwrap().log.clone();
            assert_eq!((log.high_watermark(), log.last_stable_offset()), (3, 3));
            let read = log.read(2, 1 << 20).await.unwrap();
            let (_, h) = BatchIter::new(&read).next().unwrap().unwrap();
            assert!(h.is_control() && h.producer_id == 7);
        }
        // A marker from an older coordinator epoch is fenced.
        let (reply, rx) = oneshot::channel();
        let markers = vec![write(0, "many", ControlType::Abort, 0)];
        shard.send(shard.id, DataRequest::WriteTxnMarkers { markers, reply }).await;
        assert_eq!(rx.await.unwrap(), vec![Err(ResponseError::TransactionCoordinatorFenced)]);
    });
}

/// Sends one `ReadMany` for `partitions` (`(topic, partition, offset)`, 1 MiB each)
/// to this shard, with no response limit, and waits for its reply.
async fn read_many(
    shard: &Rc<Shard>,
    partitions: &[(&str, i32, i64)],
    read_committed: bool,
) -> Vec<PartitionRead> {
    read_many_within(shard, partitions, read_committed, usize::MAX).await
}

/// [`read_many`] with the Fetch's response limit `max_bytes`.
async fn read_many_within(
    shard: &Rc<Shard>,
    partitions: &[(&str, i32, i64)],
    read_committed: bool,
    max_bytes: usize,
) -> Vec<PartitionRead> {
    let partitions = partitions
        .iter()
        .map(|&(topic, partition, offset)| ReadSpec {
            topic: name(topic),
            partition,
            offset,
            max_bytes: 1 << 20,
        })
        .collect();
    let (reply, rx) = oneshot::channel();
    let request = DataRequest::ReadMany { partitions, read_committed, max_bytes, reply };
    shard.send(shard.id, request).await;
    rx.await.expect("reply")
}

/// What a read answered: (error, high watermark, log start offset, batch base offsets).
fn answered(read: &PartitionRead) -> (Option<ResponseError>, i64, i64, Vec<i64>) {
    let bases = BatchIter::new(&read.records).map(|b| b.expect("batch").1.base_offset).collect();
    (read.error, read.high_watermark, read.log_start_offset, bases)
}

/// A `ReadMany` answers every listed partition in list order, each on its own (an
/// error in one does not touch the others), the same from the batch cache (answered in
/// the message's first poll) and from the disk (answered by a task of its own).
#[test]
fn read_many_answers_each_partition_in_list_order() {
    for flags in [&[][..], &["--cache-bytes", "0"][..]] {
        super::testing::with_shard_flags(flags, move |shard| async move {
            create_topics(&shard, &["t"]).await;
            let shape = vec![(0, vec![batch(3), batch(2)]), (1, vec![batch(4)])];
            let appended = append_many(&shard, "t", shape).await.await.expect("reply");
            assert_eq!(base_offsets(&appended), vec![Ok(0), Ok(0)]);
            let reads = read_many(
                &shard,
                &[("t", 1, 0), ("t", 9, 0), ("t", 0, 4), ("t", 0, 6), ("t", 2, 0), ("t", 0, 0)],
                false,
            )
            .await;
            let reads: Vec<_> = reads.iter().map(answered).collect();
            let none = ResponseError::NotLeaderOrFollower;
            assert_eq!(
                reads,
                vec![
                    (None, 4, 0, vec![0]),
                    // Not a partition of the topic: as for a log not opened yet.
                    (Some(none), -1, -1, vec![]),
                    // The batch holding offset 4 comes whole.
                    (None, 5, 0, vec![3]),
                    // Kafka answers a failed read with -1 for the offsets.
                    (Some(ResponseError::OffsetOutOfRange), -1, -1, vec![]),
                    (None, 0, 0, vec![]),
                    (None, 5, 0, vec![0, 3]),
                ],
                "flags {flags:?}"
            );
            // read_committed: no transaction is open, the aborted list is empty, not null.
            let committed = read_many(&shard, &[("t", 0, 0)], true).await;
            assert_eq!(committed[0].aborted.as_deref(), Some(&[][..]));
            assert_eq!(answered(&committed[0]), (None, 5, 0, vec![0, 3]));
        });
    }
}

/// The partitions of a `ReadMany` share the Fetch's `max_bytes` in list order: once it
/// is used up, the rest are answered with their offsets and no records (so a Fetch of
/// many partitions reads about `max_bytes`, not `partition_max_bytes` per partition).
/// A read from the cache takes what it returned; one from the disk its whole share.
#[test]
fn read_many_shares_the_fetch_limit_in_list_order() {
    for flags in [&[][..], &["--cache-bytes", "0"][..]] {
        let from_disk = !flags.is_empty();
        super::testing::with_shard_flags(flags, move |shard| async move {
            create_topics(&shard, &["t"]).await;
            let b = batch(3).len();
            let three = || vec![batch(3), batch(3), batch(3)];
            let shape = vec![(0, three()), (1, three()), (2, three())];
            append_many(&shard, "t", shape).await.await.expect("reply");
            let oor = ResponseError::OffsetOutOfRange;
            let parts = [("t", 0, 0), ("t", 1, 0), ("t", 2, 0), ("t", 2, 99)];
            let reads = read_many_within(&shard, &parts, false, 2 * b).await;
            let reads: Vec<_> = reads.iter().map(answered).collect();
            assert_eq!(
                reads,
                vec![
                    (None, 9, 0, vec![0, 3]),
                    // Past the limit: offsets only.
                    (None, 9, 0, vec![]),
                    (None, 9, 0, vec![]),
                    // An offset past the high watermark fails as a read would.
                    (Some(oor), -1, -1, vec![]),
                ],
                "flags {flags:?}"
            );
            // The first partition holds one batch past offset 6, less than its share.
            let parts = [("t", 0, 6), ("t", 1, 0)];
            let reads = read_many_within(&shard, &parts, false, 2 * b).await;
            let reads: Vec<_> = reads.iter().map(answered).collect();
            // From the cache the next takes what is left (one batch); a disk read
            // took the whole share before it knew.
            let second = if from_disk { vec![] } else { vec![0] };
            assert_eq!(reads, vec![(None, 9, 0, vec![6]), (None, 9, 0, second)], "{flags:?}");
            // A limit of 0 still reads the first partition with data (one batch, KIP-74),
            // and read_committed offsets-only answers carry an empty aborted list.
            let parts = [("t", 0, 9), ("t", 1, 3), ("t", 2, 0)];
            let reads = read_many_within(&shard, &parts, true, 0).await;
            assert_eq!(reads[2].aborted.as_deref(), Some(&[][..]));
            let reads: Vec<_> = reads.iter().map(answered).collect();
            assert_eq!(
                reads,
                vec![(None, 9, 0, vec![]), (None, 9, 0, vec![3]), (None, 9, 0, vec![])],
                "{flags:?}"
            );
        });
    }
}

//! Compaction (`cleaner.rs`) through `PartitionLog`: what survives, offsets, tombstones,
//! producer state, the dirty ratio, and the crash points of a pass.

use std::path::Path;

use kafka_protocol::records::{
    Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

use super::cleaner::{load_checkpoint, CleanerLimits, CompactionPolicy, CHECKPOINT_FILE};
use super::tests::{cfg, run};
use super::*;
use crate::protocol::batch::verify_crc;

/// A batch of records `(key, value)` (None: null) with timestamps from `ts`, from
/// producer `pid` (-1: none) starting at sequence `seq`.
fn keyed(
    recs: &[(Option<&str>, Option<&str>)],
    ts: i64,
    pid: i64,
    seq: i32,
    c: Compression,
) -> Bytes {
    let records: Vec<Record> = recs
        .iter()
        .enumerate()
        .map(|(i, (k, v))| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 0,
            producer_id: pid,
            producer_epoch: if pid >= 0 { 0 } else { -1 },
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            // kafka-protocol starts a new batch where offset - sequence changes.
            sequence: if pid >= 0 { seq + i as i32 } else { i as i32 - 1 },
            timestamp: ts + i as i64,
            key: k.map(|k| Bytes::copy_from_slice(k.as_bytes())),
            value: v.map(|v| Bytes::copy_from_slice(v.as_bytes())),
            headers: Default::default(),
        })
        .collect();
    let mut buf = bytes::BytesMut::new();
    let opts = RecordEncodeOptions { version: 2, compression: c };
    RecordBatchEncoder::encode(&mut buf, records.iter(), &opts).unwrap();
    buf.freeze()
}

/// Seals the active segment now (as a roll by size or age would on the next append).
async fn seal(log: &PartitionLog) {
    let leo = log.log_end_offset();
    log.roll(leo).await.unwrap();
    let mut st = log.state.borrow_mut();
    st.planned_size = 0;
    st.planned_base = leo;
    st.planned_first_append = None;
}

type Row = (i64, Option<String>, Option<String>);

/// `(offset, key, value)` of every record in the log, read through kafka-protocol's
/// decoder, with every batch's CRC checked.
async fn contents(log: &PartitionLog) -> Vec<Row> {
    let text = |b: Option<Bytes>| b.map(|v| String::from_utf8(v.to_vec()).unwrap());
    let mut out = Vec::new();
    let mut at = log.log_start_offset();
    while at < log.high_watermark() {
        let bytes = log.read(at, 1 << 20).await.unwrap();
        assert!(!bytes.is_empty());
        let mut pos = 0;
        while pos < bytes.len() {
            let h = RecordBatchHeader::parse(&bytes[pos..]).unwrap();
            let b = bytes.slice(pos..pos + h.total_size());
            assert!(verify_crc(&b), "batch at {} has a bad CRC", h.base_offset);
            for r in RecordBatchDecoder::decode(&mut b.clone()).unwrap().records {
                out.push((r.offset, text(r.key), text(r.value)));
            }
            at = h.next_offset();
            pos += h.total_size();
        }
    }
    out
}

fn row(o: i64, k: &str, v: Option<&str>) -> Row {
    (o, Some(k.to_string()), v.map(str::to_string))
}

fn compact_cfg() -> LogConfig {
    let mut c = cfg();
    c.segment_bytes = 4096;
    c
}

const FORCE: bool = true;
const NOW: i64 = 10_000_000_000_000;

/// 60 one-record batches of ~200 bytes, keys k0..k4 in turn, value "v<i>": several
/// sealed segments of 4 KiB and an active one.
async fn sixty(dir: &Path) -> Rc<PartitionLog> {
    let log = PartitionLog::open(dir.to_path_buf(), compact_cfg()).await.unwrap();
    for i in 0..60 {
        let (key, value) = (format!("k{}", i % 5), format!("v{i}-{}", "x".repeat(150)));
        let b = keyed(
            &[(Some(key.as_str()), Some(value.as_str()))],
            1_000 + i,
            -1,
            -1,
            Compression::None,
        );
        log.append(b, 0).await.unwrap();
    }
    log
}

#[test]
fn the_latest_record_per_key_survives_with_its_offset() {
    run(|dir| async move {
        let log = sixty(&dir).await;
        let active_base = log.active().base_offset;
        assert!(log.segments.borrow().len() >= 3);
        let done = log
            .compact(&CompactionPolicy::default(), &CleanerLimits::default(), NOW, FORCE)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(done.cleaned_up_to, active_base);
        assert_eq!(done.keys, 5);
        assert_eq!(load_checkpoint(&dir), Some(active_base));
        let got = contents(&log).await;
        // In the cleaned range: for each key, the last offset below active_base holding it.
        let mut expected: Vec<i64> =
            (0..5).map(|k| (0..active_base).filter(|o| o % 5 == k).max().unwrap()).collect();
        expected.sort();
        expected.extend(active_base..60);
        assert_eq!(got.iter().map(|r| r.0).collect::<Vec<_>>(), expected);
        for (o, k, v) in &got {
            assert_eq!(k.as_deref(), Some(format!("k{}", o % 5).as_str()));
            assert!(v.as_deref().unwrap().starts_with(&format!("v{o}-")));
        }
        assert_eq!(done.records_removed, active_base as u64 - 5);
        // Offsets and high watermark are unchanged; reads land on the next record kept.
        assert_eq!((log.log_start_offset(), log.high_watermark()), (0, 60));
        let b = log.read(1, 1 << 20).await.unwrap();
        assert_eq!(RecordBatchHeader::parse(&b).unwrap().base_offset, expected[0]);
        // A restart trusts the new index files and reads the same.
        log.close().await.unwrap();
        let log = PartitionLog::open(dir.clone(), compact_cfg()).await.unwrap();
        assert_eq!(contents(&log).await, got);
        // Nothing new is dirty: a pass without force does nothing.
        let (policy, limits) = (CompactionPolicy::default(), CleanerLimits::default());
        assert_eq!(log.compact(&policy, &limits, NOW, false).await.unwrap(), None);
        log.close().await.unwrap();
    });
}

#[test]
fn gzip_batches_are_cleaned_record_by_record() {
    run(|dir| async move {
        let log = PartitionLog::open(dir.clone(), compact_cfg()).await.unwrap();
        // Two batches of 4 records each; the second updates a and b.
        let first = [
            (Some("a"), Some("1")),
            (Some("b"), Some("2")),
            (Some("c"), Some("3")),
            (Some("d"), Some("4")),
        ];
        let second = [
            (Some("a"), Some("5")),
            (Some("b"), Some("6")),
            (Some("e"), Some("7")),
            (Some("f"), Some("8")),
        ];
        log.append(keyed(&first, 1_000, -1, -1, Compression::Gzip), 0).await.unwrap();
        log.append(keyed(&second, 2_000, -1, -1, Compression::Gzip), 0).await.unwrap();
        seal(&log).await;
        let policy = CompactionPolicy::default();
        log.compact(&policy, &CleanerLimits::default(), NOW, FORCE).await.unwrap().unwrap();
        let got = contents(&log).await;
        let s = |o: i64, k: &str, v: &str| row(o, k, Some(v));
        assert_eq!(
            got,
            vec![
                s(2, "c", "3"),
                s(3, "d", "4"),
                s(4, "a", "5"),
                s(5, "b", "6"),
                s(6, "e", "7"),
                s(7, "f", "8")
            ]
        );
        let b = log.read(0, 1 << 20).await.unwrap();
        let h = RecordBatchHeader::parse(&b).unwrap();
        assert_eq!(
            (h.base_offset, h.last_offset(), h.records_count, h.compression()),
            (0, 3, 2, 1)
        );
        log.close().await.unwrap();
    });
}

#[test]
fn tombstones_stay_for_delete_retention_ms_after_their_segment_was_cleaned() {
    run(|dir| async move {
        let log = PartitionLog::open(dir.clone(), compact_cfg()).await.unwrap();
        log.append(
            keyed(
                &[(Some("a"), Some("1")), (Some("b"), Some("2"))],
                1_000,
                -1,
                -1,
                Compression::None,
            ),
            0,
        )
        .await
        .unwrap();
        log.append(keyed(&[(Some("a"), None)], 1_100, -1, -1, Compression::None), 0).await.unwrap();
        seal(&log).await;
        let policy =
            CompactionPolicy { delete_retention_ms: 60_000, ..CompactionPolicy::default() };
        let limits = CleanerLimits::default();
        let now = crate::clock::now_ms();
        log.compact(&policy, &limits, now, FORCE).await.unwrap().unwrap();
        assert_eq!(contents(&log).await, vec![row(1, "b", Some("2")), row(2, "a", None)]);
        // The tombstone's batch carries its delete horizon (KIP-534): bit 6, base timestamp.
        let b = log.read(2, 1 << 20).await.unwrap();
        let h = RecordBatchHeader::parse(&b).unwrap();
        assert_eq!((h.base_offset, h.attributes & 0x40, h.base_timestamp), (2, 0x40, now + 60_000));
        // New dirty data; the tombstone's segment is clean but was cleaned just now.
        log.append(keyed(&[(Some("c"), Some("3"))], 1_200, -1, -1, Compression::None), 0)
            .await
            .unwrap();
        seal(&log).await;
        log.compact(&policy, &limits, now, FORCE).await.unwrap().unwrap();
        assert_eq!(contents(&log).await.len(), 3);
        // 61 s later, the next pass removes it.
        log.append(keyed(&[(Some("d"), Some("4"))], 1_300, -1, -1, Compression::None), 0)
            .await
            .unwrap();
        seal(&log).await;
        log.compact(&policy, &limits, now + 61_000, FORCE).await.unwrap().unwrap();
        assert_eq!(
            contents(&log).await,
            vec![row(1, "b", Some("2")), row(3, "c", Some("3")), row(4, "d", Some("4"))]
        );
        log.close().await.unwrap();
    });
}

#[test]
fn the_dirty_ratio_and_the_compaction_lags_decide_when_a_pass_runs() {
    run(|dir| async move {
        let log = sixty(&dir).await;
        let limits = CleanerLimits::default();
        let never =
            CompactionPolicy { min_cleanable_dirty_ratio: 1.1, ..CompactionPolicy::default() };
        assert_eq!(log.compact(&never, &limits, NOW, false).await.unwrap(), None);
        // Overdue by max.compaction.lag.ms: runs whatever the ratio.
        let overdue = CompactionPolicy { max_compaction_lag_ms: 1_000, ..never };
        assert!(log.compact(&overdue, &limits, NOW, false).await.unwrap().is_some());
        assert!(dir.join(CHECKPOINT_FILE).exists());
        log.close().await.unwrap();
    });
    run(|dir| async move {
        let log = sixty(&dir).await;
        // Every segment is younger than min.compaction.lag.ms: nothing is cleanable.
        let young =
            CompactionPolicy { min_compaction_lag_ms: 1_000_000, ..CompactionPolicy::default() };
        assert_eq!(
            log.compact(&young, &CleanerLimits::default(), 2_000, FORCE).await.unwrap(),
            None
        );
        log.close().await.unwrap();
    });
}

#[test]
fn a_small_dedupe_budget_cleans_in_several_passes() {
    run(|dir| async move {
        let log = sixty(&dir).await;
        let sealed: Vec<i64> = log.segments.borrow().iter().map(|s| s.next_offset.get()).collect();
        let limits = CleanerLimits { map_bytes: 1, ..CleanerLimits::default() };
        let policy = CompactionPolicy::default();
        let first = log.compact(&policy, &limits, NOW, FORCE).await.unwrap().unwrap();
        assert_eq!(first.cleaned_up_to, sealed[0], "one segment mapped per pass");
        let second = log.compact(&policy, &limits, NOW, FORCE).await.unwrap().unwrap();
        assert_eq!(second.cleaned_up_to, sealed[1]);
        log.close().await.unwrap();
    });
}

#[test]
fn an_idempotent_producers_last_batch_stays_empty_and_its_sequence_survives() {
    run(|dir| async move {
        let log = PartitionLog::open(dir.clone(), compact_cfg()).await.unwrap();
        log.append(keyed(&[(Some("a"), Some("1"))], 1_000, 9, 0, Compression::None), 0)
            .await
            .unwrap();
        log.append(keyed(&[(Some("a"), Some("2"))], 1_001, -1, -1, Compression::None), 0)
            .await
            .unwrap();
        seal(&log).await;
        log.compact(&CompactionPolicy::default(), &CleanerLimits::default(), NOW, FORCE)
            .await
            .unwrap()
            .unwrap();
        let b = log.read(0, 1 << 20).await.unwrap();
        let h = RecordBatchHeader::parse(&b).unwrap();
        assert_eq!((h.base_offset, h.records_count, h.producer_id, h.base_sequence), (0, 0, 9, 0));
        log.close().await.unwrap();
        // After a restart (producer state from the snapshot and the log), the next sequence
        // is accepted and a retry of sequence 0 is a duplicate of offset 0.
        let log = PartitionLog::open(dir.clone(), compact_cfg()).await.unwrap();
        let dup = log
            .append(keyed(&[(Some("a"), Some("1"))], 1_000, 9, 0, Compression::None), 0)
            .await
            .unwrap();
        assert_eq!(dup.base_offset, 0);
        let next = log
            .append(keyed(&[(Some("a"), Some("3"))], 1_002, 9, 1, Compression::None), 0)
            .await
            .unwrap();
        assert_eq!(next.base_offset, 2);
        log.close().await.unwrap();
    });
}

#[test]
fn a_crash_before_the_rename_leaves_the_old_segment_and_the_leftover_is_removed() {
    run(|dir| async move {
        let log = sixty(&dir).await;
        let before = contents(&log).await;
        log.close().await.unwrap();
        // A pass died after writing part of its output.
        let leftover = dir.join("00000000000000000000.log.cleaned");
        std::fs::write(&leftover, b"partial").unwrap();
        let log = PartitionLog::open(dir.clone(), compact_cfg()).await.unwrap();
        assert!(!leftover.exists());
        assert_eq!(contents(&log).await, before);
        log.close().await.unwrap();
    });
}

#[test]
fn a_crash_between_the_rename_and_the_new_indexes_is_recovered_by_a_scan() {
    run(|dir| async move {
        let log = sixty(&dir).await;
        log.compact(&CompactionPolicy::default(), &CleanerLimits::default(), NOW, FORCE)
            .await
            .unwrap()
            .unwrap();
        let after = contents(&log).await;
        log.close().await.unwrap();
        // The old indexes were removed before the rename; the new ones not yet written.
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if name.starts_with("00000000000000000000.") && !name.ends_with(".log") {
                std::fs::remove_file(&p).unwrap();
            }
        }
        let log = PartitionLog::open(dir.clone(), compact_cfg()).await.unwrap();
        assert_eq!(contents(&log).await, after);
        log.close().await.unwrap();
    });
}

/// Base offsets of the `.log` files in `dir`.
fn log_files(dir: &Path) -> Vec<i64> {
    recovery::list_segments(dir).unwrap()
}

#[test]
fn small_cleaned_segments_are_merged_into_one() {
    run(|dir| async move {
        let log = sixty(&dir).await;
        let (policy, limits) = (CompactionPolicy::default(), CleanerLimits::default());
        log.compact(&policy, &limits, NOW, FORCE).await.unwrap().unwrap();
        let after_first = log.segments.borrow().len();
        let before = contents(&log).await;
        // The cleaned segments are small now; the next pass merges them.
        for i in 60..70 {
            let (key, value) = (format!("k{}", i % 5), format!("v{i}"));
            let b = keyed(
                &[(Some(key.as_str()), Some(value.as_str()))],
                2_000 + i,
                -1,
                -1,
                Compression::None,
            );
            log.append(b, 0).await.unwrap();
        }
        seal(&log).await;
        log.compact(&policy, &limits, NOW, FORCE).await.unwrap().unwrap();
        let bases: Vec<i64> = log.segments.borrow().iter().map(|s| s.base_offset).collect();
        assert_eq!(bases.len(), 2, "one cleaned segment and the active one, not {after_first}+");
        assert_eq!(bases[0], 0);
        assert_eq!(log_files(&dir), bases);
        let got = contents(&log).await;
        let expected: Vec<Row> =
            (65..70).map(|o| row(o, &format!("k{}", o % 5), Some(&format!("v{o}")))).collect();
        assert_eq!(got, expected);
        assert!(before.len() > got.len());
        // The merged segment's indexes are on disk and trusted after a restart.
        log.close().await.unwrap();
        let log = PartitionLog::open(dir.clone(), compact_cfg()).await.unwrap();
        assert_eq!(contents(&log).await, expected);
        assert_eq!(log.segments.borrow()[0].next_offset.get(), 70);
        log.close().await.unwrap();
    });
}

#[test]
fn a_crash_after_the_swap_commit_point_is_finished_at_start_up() {
    run(|dir| async move {
        let log = sixty(&dir).await;
        let before = contents(&log).await;
        let bases: Vec<(i64, i64)> =
            log.segments.borrow().iter().map(|s| (s.base_offset, s.next_offset.get())).collect();
        assert!(bases.len() >= 4);
        log.close().await.unwrap();
        // A pass merged the first two segments, committed (renamed to .swap) and died
        // before removing the sources.
        let seg = |b: i64| dir.join(format!("{b:020}.log"));
        let mut merged = std::fs::read(seg(bases[0].0)).unwrap();
        merged.extend(std::fs::read(seg(bases[1].0)).unwrap());
        let swap = dir.join(format!("{:020}.{:020}.swap", bases[0].0, bases[1].1));
        std::fs::write(&swap, &merged).unwrap();
        let log = PartitionLog::open(dir.clone(), compact_cfg()).await.unwrap();
        assert!(!swap.exists());
        let now: Vec<i64> = log.segments.borrow().iter().map(|s| s.base_offset).collect();
        let want: Vec<i64> = bases.iter().map(|b| b.0).filter(|&b| b != bases[1].0).collect();
        assert_eq!(now, want);
        assert_eq!(log_files(&dir), want);
        assert_eq!(contents(&log).await, before);
        log.close().await.unwrap();
    });
}

#[test]
fn an_expired_tombstone_is_removed_without_new_dirty_data_even_after_a_restart() {
    run(|dir| async move {
        let log = PartitionLog::open(dir.clone(), compact_cfg()).await.unwrap();
        let recs = [(Some("a"), Some("1")), (Some("b"), Some("2"))];
        log.append(keyed(&recs, 1_000, -1, -1, Compression::None), 0).await.unwrap();
        log.append(keyed(&[(Some("a"), None)], 1_100, -1, -1, Compression::None), 0).await.unwrap();
        seal(&log).await;
        let policy =
            CompactionPolicy { delete_retention_ms: 60_000, ..CompactionPolicy::default() };
        let limits = CleanerLimits::default();
        let now = NOW;
        log.compact(&policy, &limits, now, false).await.unwrap().unwrap();
        // A record in the active segment (never cleanable, so nothing new is dirty) lets
        // `contents` read past the gap the tombstone leaves.
        log.append(keyed(&[(Some("c"), Some("3"))], 1_200, -1, -1, Compression::None), 0)
            .await
            .unwrap();
        let c = row(3, "c", Some("3"));
        assert_eq!(
            contents(&log).await,
            vec![row(1, "b", Some("2")), row(2, "a", None), c.clone()]
        );
        // Before the horizon (now + 60 s) no pass runs.
        assert_eq!(log.compact(&policy, &limits, now + 59_999, false).await.unwrap(), None);
        // The horizon survives a restart (it is in the cleaner checkpoint).
        log.close().await.unwrap();
        let log = PartitionLog::open(dir.clone(), compact_cfg()).await.unwrap();
        let done = log.compact(&policy, &limits, now + 60_000, false).await.unwrap();
        let done = done.expect("a pass for the passed delete horizon");
        assert_eq!(done.records_removed, 1);
        assert_eq!(contents(&log).await, vec![row(1, "b", Some("2")), c]);
        // No tombstone waits any more: the next pass has nothing to do.
        assert_eq!(log.compact(&policy, &limits, now + 120_000, false).await.unwrap(), None);
        log.close().await.unwrap();
    });
}

#[test]
fn max_compaction_lag_counts_from_the_first_batch_of_a_dirty_segment() {
    run(|dir| async move {
        let log = PartitionLog::open(dir.clone(), compact_cfg()).await.unwrap();
        // One sealed segment: its first batch is 10 s old, its last (largest timestamp)
        // 10 ms old.
        let first = keyed(&[(Some("a"), Some("1"))], NOW - 10_000, -1, -1, Compression::None);
        log.append(first, 0).await.unwrap();
        let last = keyed(&[(Some("a"), Some("2"))], NOW - 10, -1, -1, Compression::None);
        log.append(last, 0).await.unwrap();
        seal(&log).await;
        // The first batch's timestamp is read back from the file after a restart.
        log.close().await.unwrap();
        let log = PartitionLog::open(dir.clone(), compact_cfg()).await.unwrap();
        let limits = CleanerLimits::default();
        let never =
            CompactionPolicy { min_cleanable_dirty_ratio: 1.1, ..CompactionPolicy::default() };
        let lag = |ms| CompactionPolicy { max_compaction_lag_ms: ms, ..never };
        // 10 s is not past a lag of 10 s (Kafka: strictly earlier than now - lag).
        assert_eq!(log.compact(&lag(10_000), &limits, NOW, false).await.unwrap(), None);
        let done = log.compact(&lag(5_000), &limits, NOW, false).await.unwrap();
        assert_eq!(done.expect("overdue by its first batch").records_removed, 1);
        assert_eq!(contents(&log).await, vec![row(1, "a", Some("2"))]);
        log.close().await.unwrap();
    });
}

#[test]
fn a_cleaned_segment_keeps_the_aborted_transactions_of_the_segments_it_replaces() {
    use crate::protocol::control::{encode_marker_batch, ControlType, EndTxnMarker};
    use txn_index::AbortedTxn;
    run(|dir| async move {
        let log = PartitionLog::open(dir.clone(), compact_cfg()).await.unwrap();
        // k = committed (0) and producer 7's transaction k = aborted (1) in the first
        // segment, its ABORT marker (2) in the second, a record in the third; then a pass
        // merges the three.
        let b = keyed(&[(Some("k"), Some("committed"))], 999, -1, -1, Compression::None);
        log.append(b, 0).await.unwrap();
        let mut t = keyed(&[(Some("k"), Some("aborted"))], 1_000, 7, 0, Compression::None).to_vec();
        t[21..23].copy_from_slice(&crate::protocol::batch::ATTR_TRANSACTIONAL.to_be_bytes());
        let crc = crate::protocol::batch::compute_crc(&t);
        t[17..21].copy_from_slice(&crc.to_be_bytes());
        log.append(Bytes::from(t), 0).await.unwrap();
        seal(&log).await;
        let abort = EndTxnMarker { control_type: ControlType::Abort, coordinator_epoch: 0 };
        log.append(encode_marker_batch(7, 0, abort, 1_001).unwrap(), 0).await.unwrap();
        seal(&log).await;
        let b = keyed(&[(Some("j"), Some("v"))], 1_002, -1, -1, Compression::None);
        log.append(b, 0).await.unwrap();
        seal(&log).await;
        let entry =
            AbortedTxn { producer_id: 7, first_offset: 1, last_offset: 2, last_stable_offset: 3 };
        assert_eq!(txn_index::load(&dir, 2).unwrap().0, vec![entry]);
        let (policy, limits) = (CompactionPolicy::default(), CleanerLimits::default());
        log.compact(&policy, &limits, NOW, FORCE).await.unwrap().unwrap();
        assert_eq!(log.segments.borrow()[0].base_offset, 0);
        assert_eq!(log.segments.borrow()[1].base_offset, 4, "0-3 merged into one segment");
        assert_eq!(txn_index::load(&dir, 0).unwrap().0, vec![entry]);
        assert!(!dir.join("00000000000000000002.txnindex").exists());
        // The aborted record neither superseded k = committed nor stayed; the marker did.
        let rows: Vec<(i64, Option<String>)> =
            contents(&log).await.into_iter().map(|(o, k, _)| (o, k)).collect();
        let marker_key = Some("\0\0\0\0".to_string());
        let want = vec![(0, Some("k".into())), (2, marker_key), (3, Some("j".into()))];
        assert_eq!(rows, want);
        assert_eq!(log.read_committed(0, 1 << 20).await.unwrap().1, vec![entry]);
        log.close().await.unwrap();
        drop(log);
        let log = PartitionLog::open(dir.clone(), compact_cfg()).await.unwrap();
        assert_eq!(log.read_committed(0, 1 << 20).await.unwrap().1, vec![entry]);
        log.close().await.unwrap();
    });
}

#[test]
fn segments_past_the_last_stable_offset_wait_for_their_transaction_to_end() {
    use crate::protocol::control::{encode_marker_batch, ControlType, EndTxnMarker};
    run(|dir| async move {
        let log = PartitionLog::open(dir.clone(), compact_cfg()).await.unwrap();
        let b = keyed(&[(Some("k"), Some("v1"))], 1_000, -1, -1, Compression::None);
        log.append(b, 0).await.unwrap();
        let mut t = keyed(&[(Some("k"), Some("open"))], 1_001, 7, 0, Compression::None).to_vec();
        t[21..23].copy_from_slice(&crate::protocol::batch::ATTR_TRANSACTIONAL.to_be_bytes());
        let crc = crate::protocol::batch::compute_crc(&t);
        t[17..21].copy_from_slice(&crc.to_be_bytes());
        log.append(Bytes::from(t), 0).await.unwrap();
        seal(&log).await;
        log.append(keyed(&[(Some("j"), Some("x"))], 1_002, -1, -1, Compression::None), 0)
            .await
            .unwrap();
        seal(&log).await;
        assert_eq!(log.last_stable_offset(), 1);
        let (policy, limits) = (CompactionPolicy::default(), CleanerLimits::default());
        // The open transaction's segment is not cleanable: k = v1 stays.
        assert_eq!(log.compact(&policy, &limits, NOW, FORCE).await.unwrap(), None);
        assert_eq!(contents(&log).await[0], row(0, "k", Some("v1")));
        // Committed: now its record supersedes k = v1.
        let commit = EndTxnMarker { control_type: ControlType::Commit, coordinator_epoch: 0 };
        log.append(encode_marker_batch(7, 0, commit, 1_003).unwrap(), 0).await.unwrap();
        seal(&log).await;
        log.compact(&policy, &limits, NOW, FORCE).await.unwrap().unwrap();
        let keys: Vec<(i64, Option<String>)> =
            contents(&log).await.into_iter().map(|(o, k, _)| (o, k)).collect();
        assert_eq!(keys[0], (1, Some("k".to_string())));
        log.close().await.unwrap();
    });
}

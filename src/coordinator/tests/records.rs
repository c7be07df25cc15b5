//! GroupRecord encoding and rebuilding state from the internal log.

use bytes::Bytes;

use super::*;
use crate::coordinator::{GroupRecord, GroupState, MemberRecord};

fn every_kind() -> Vec<GroupRecord> {
    vec![
        GroupRecord::Offset {
            group: "g".into(),
            topic: "t".into(),
            partition: 3,
            offset: 1 << 40,
            // Kafka's v1 value (explicit expiry) has no leader epoch.
            leader_epoch: -1,
            metadata: "m\u{e9}ta".into(),
            commit_timestamp_ms: T0,
            expire_timestamp_ms: Some(T0 + 5),
        },
        GroupRecord::Offset {
            group: "g".into(),
            topic: "t".into(),
            partition: 4,
            offset: 12,
            leader_epoch: 7,
            metadata: "".into(),
            commit_timestamp_ms: T0,
            expire_timestamp_ms: None,
        },
        GroupRecord::Offset {
            group: "".into(),
            topic: "t".into(),
            partition: -1,
            offset: -1,
            leader_epoch: -1,
            metadata: "".into(),
            commit_timestamp_ms: 0,
            expire_timestamp_ms: None,
        },
        GroupRecord::OffsetTombstone { group: "g".into(), topic: "t".into(), partition: 3 },
        GroupRecord::GroupMetadata {
            group: "g".into(),
            protocol_type: "consumer".into(),
            generation: 4,
            protocol: Some("range".into()),
            leader: Some("m1".into()),
            current_state_timestamp_ms: Some(T0),
            members: vec![
                MemberRecord {
                    member_id: "m1".into(),
                    group_instance_id: Some("i1".into()),
                    client_id: "c".into(),
                    client_host: "/127.0.0.1".into(),
                    rebalance_timeout_ms: REBALANCE,
                    session_timeout_ms: SESSION,
                    subscription: subscription(&["t"]),
                    assignment: Bytes::from_static(b"\x00\x01"),
                },
                MemberRecord {
                    member_id: "m2".into(),
                    group_instance_id: None,
                    client_id: "".into(),
                    client_host: "".into(),
                    rebalance_timeout_ms: 0,
                    session_timeout_ms: 0,
                    subscription: Bytes::new(),
                    assignment: Bytes::new(),
                },
            ],
        },
        GroupRecord::GroupMetadata {
            group: "empty".into(),
            protocol_type: "".into(),
            generation: 1,
            protocol: None,
            leader: None,
            current_state_timestamp_ms: None,
            members: vec![],
        },
        GroupRecord::GroupTombstone { group: "g".into() },
    ]
}

fn round_trip(r: &GroupRecord) -> GroupRecord {
    let (k, v) = r.encode();
    let value = if r.is_tombstone() { None } else { Some(&v[..]) };
    GroupRecord::decode(&k, value).unwrap()
}

#[test]
fn every_record_kind_round_trips() {
    for r in every_kind() {
        assert_eq!(round_trip(&r), r);
        // Logs written in shardlog's original format still load.
        let (k, v) = r.encode_original();
        assert!(k[0] == 1 || k[0] == 2, "{r:?}");
        let value = if r.is_tombstone() { None } else { Some(&v[..]) };
        assert_eq!(GroupRecord::decode(&k, value).unwrap(), r);
    }
}

#[test]
fn offsets_and_groups_are_written_in_kafkas_consumer_offsets_schemas() {
    let (k, v) = GroupRecord::Offset {
        group: "g".into(),
        topic: "t".into(),
        partition: 3,
        offset: 0x0102,
        leader_epoch: 5,
        metadata: "m".into(),
        commit_timestamp_ms: 0x0a0b,
        expire_timestamp_ms: None,
    }
    .encode();
    // OffsetCommitKey v1: version, group, topic, partition.
    assert_eq!(k, b"\x00\x01\x00\x01g\x00\x01t\x00\x00\x00\x03");
    // OffsetCommitValue v3: version, offset, leader epoch, metadata, commit timestamp.
    let mut want = vec![0, 3, 0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 5, 0, 1, b'm'];
    want.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0x0a, 0x0b]);
    assert_eq!(v, want);
    // With an explicit expiry: v1 (offset, metadata, commit and expire timestamps).
    let (_, v1) = GroupRecord::Offset {
        group: "g".into(),
        topic: "t".into(),
        partition: 3,
        offset: 1,
        leader_epoch: 5,
        metadata: "".into(),
        commit_timestamp_ms: 2,
        expire_timestamp_ms: Some(3),
    }
    .encode();
    assert_eq!(
        v1,
        [&[0u8, 1][..], &1i64.to_be_bytes(), &[0, 0], &2i64.to_be_bytes(), &3i64.to_be_bytes()]
            .concat()
    );
    // GroupMetadataKey v2 and GroupMetadataValue v3 of an empty group.
    let (k, v) = GroupRecord::GroupMetadata {
        group: "g".into(),
        protocol_type: "consumer".into(),
        generation: 2,
        protocol: None,
        leader: None,
        current_state_timestamp_ms: None,
        members: vec![],
    }
    .encode();
    assert_eq!(k, b"\x00\x02\x00\x01g");
    let mut want = vec![0, 3, 0, 8];
    want.extend_from_slice(b"consumer");
    want.extend_from_slice(&[0, 0, 0, 2, 0xff, 0xff, 0xff, 0xff]);
    want.extend_from_slice(&(-1i64).to_be_bytes());
    want.extend_from_slice(&[0, 0, 0, 0]);
    assert_eq!(v, want);
    // A tombstone is the key alone; a consumer group's key is shardlog's own type.
    assert_eq!(GroupRecord::GroupTombstone { group: "g".into() }.encode().0, b"\x00\x02\x00\x01g");
}

#[test]
fn a_value_too_long_for_kafkas_schemas_keeps_kafkas_key() {
    let long = "x".repeat(40_000);
    let offset = |metadata: String| GroupRecord::Offset {
        group: "g".into(),
        topic: "t".into(),
        partition: 0,
        offset: 1,
        leader_epoch: -1,
        metadata,
        commit_timestamp_ms: 2,
        expire_timestamp_ms: None,
    };
    // The key depends on the key's strings alone: a long metadata string leaves the
    // commit under the same key as a short one (and as its tombstone), so compaction
    // keeps only the last of them. The value is then shardlog's original one.
    let (k, v) = offset(long.clone()).encode();
    assert_eq!(k, offset("m".into()).encode().0);
    assert_eq!(
        k,
        GroupRecord::OffsetTombstone { group: "g".into(), topic: "t".into(), partition: 0 }
            .encode()
            .0
    );
    assert_eq!(v[0], 1, "original value version");
    assert_eq!(round_trip(&offset(long.clone())), offset(long.clone()));

    // The same for a group whose member id does not fit an i16 length.
    let group = |member_id: String| GroupRecord::GroupMetadata {
        group: "g".into(),
        protocol_type: "consumer".into(),
        generation: 1,
        protocol: Some("range".into()),
        leader: Some(member_id.clone()),
        current_state_timestamp_ms: Some(T0),
        members: vec![MemberRecord {
            member_id,
            group_instance_id: None,
            client_id: "c".into(),
            client_host: "/127.0.0.1".into(),
            rebalance_timeout_ms: REBALANCE,
            session_timeout_ms: SESSION,
            subscription: subscription(&["t"]),
            assignment: Bytes::new(),
        }],
    };
    let (k, v) = group(long.clone()).encode();
    assert_eq!(k, b"\x00\x02\x00\x01g");
    assert_eq!(v[0], 1, "original value version");
    assert_eq!(round_trip(&group(long.clone())), group(long.clone()));

    // A group id too long for Kafka's key: every record of the group takes the
    // original key, the tombstone too.
    let mut r = offset("m".into());
    if let GroupRecord::Offset { group, .. } = &mut r {
        *group = long.clone();
    }
    let (k, _) = r.encode();
    assert_eq!(k[0], 1, "original offset key");
    assert_eq!(round_trip(&r), r);
    let tombstone = GroupRecord::GroupTombstone { group: long.clone() };
    let records = tombstone.encode_records();
    assert_eq!(records.len(), 1, "the original group key is shared by both kinds");
    assert_eq!(records[0].0[0], 2, "original group key");
    assert_eq!(records[0].1, None);
}

#[test]
fn a_group_tombstone_covers_both_group_keys() {
    // A classic group's metadata and a KIP-848 group's record have different keys in
    // Kafka's schemas: the tombstone must cover both, or compaction keeps a consumer
    // group's last record after dropping the tombstone and a restart brings it back.
    let records = GroupRecord::GroupTombstone { group: "g".into() }.encode_records();
    assert_eq!(
        records,
        vec![(b"\x00\x02\x00\x01g".to_vec(), None), (b"\x7f\xff\x00\x01g".to_vec(), None)]
    );
    for (k, v) in &records {
        assert_eq!(
            GroupRecord::decode(k, v.as_deref()).unwrap(),
            GroupRecord::GroupTombstone { group: "g".into() }
        );
    }
    // Every other record is one record, its encode().
    for r in every_kind().into_iter().filter(|r| !matches!(r, GroupRecord::GroupTombstone { .. })) {
        let (k, v) = r.encode();
        let value = (!r.is_tombstone()).then_some(v);
        assert_eq!(r.encode_records(), vec![(k, value)], "{r:?}");
    }
}

#[test]
fn kafka_format_records_from_older_kafka_versions_decode() {
    // OffsetCommitKey v0 with an OffsetCommitValue v0 (offset, metadata, timestamp).
    let key = b"\x00\x00\x00\x01g\x00\x01t\x00\x00\x00\x07";
    let value = [&[0u8, 0][..], &9i64.to_be_bytes(), &[0, 0], &4i64.to_be_bytes()].concat();
    assert_eq!(
        GroupRecord::decode(key, Some(&value)).unwrap(),
        GroupRecord::Offset {
            group: "g".into(),
            topic: "t".into(),
            partition: 7,
            offset: 9,
            leader_epoch: -1,
            metadata: "".into(),
            commit_timestamp_ms: 4,
            expire_timestamp_ms: None,
        }
    );
    // Unknown key and value versions are errors.
    assert!(GroupRecord::decode(b"\x00\x09\x00\x01g", None).is_err());
    assert!(GroupRecord::decode(key, Some(&[0, 4, 0, 0])).is_err());
}

#[test]
fn state_rebuilt_from_persisted_records_serves_same_offsets() {
    // A live coordinator: a stable group with member commits, simple commits, an
    // overwritten offset, a deleted offset, a deleted group, an expired member id.
    let (mut h, a, b) = H::stable_group();
    h.commit(8, "solo", "", -1, &[("t1", 0, 42), ("t1", 1, 7), ("t2", 0, 3)]);
    h.commit(8, "solo", "", -1, &[("t1", 0, 43)]);
    h.commit(8, "g", &a, 1, &[("t1", 0, 100), ("x", 2, 200)]);
    h.commit(8, "gone", "", -1, &[("t1", 0, 1)]);
    h.run(2, |c, t, now| {
        let req = DeleteGroupsRequest::default().with_groups_names(vec![gid("gone")]);
        c.delete_groups(t, 2, req, now)
    });
    h.run(0, |c, t, now| {
        use kafka_protocol::messages::offset_delete_request::*;
        let req = OffsetDeleteRequest::default().with_group_id(gid("solo")).with_topics(vec![
            OffsetDeleteRequestTopic::default()
                .with_name(TopicName(s("t2")))
                .with_partitions(vec![OffsetDeleteRequestPartition::default()]),
        ]);
        c.offset_delete(t, 0, req, now)
    });
    let kinds: Vec<&str> = h
        .log
        .iter()
        .map(|r| match r {
            GroupRecord::Offset { .. } => "offset",
            GroupRecord::OffsetTombstone { .. } => "offset-tombstone",
            GroupRecord::GroupMetadata { .. } => "group",
            GroupRecord::ConsumerGroup { .. } => "consumer-group",
            GroupRecord::GroupTombstone { .. } => "group-tombstone",
        })
        .collect();
    for k in ["offset", "offset-tombstone", "group", "group-tombstone"] {
        assert!(kinds.contains(&k), "log lacks {k}: {kinds:?}");
    }

    let mut fresh = H::new();
    fresh.c.set_loading(true, T0);
    for r in &h.log {
        fresh.c.load(round_trip(r));
    }
    fresh.now = h.now;
    fresh.c.set_loading(false, h.now);

    for g in ["solo", "g", "gone"] {
        assert_eq!(fresh.fetch(g, None), h.fetch(g, None), "group {g}");
    }
    let r = fresh.fetch("solo", Some(&[("t1", &[0, 1]), ("t2", &[0])]));
    let offsets: Vec<i64> =
        r.topics.iter().flat_map(|t| t.partitions.iter().map(|p| p.committed_offset)).collect();
    assert_eq!(offsets, vec![43, 7, -1]);
    assert_eq!(fresh.c.group_state("gone"), None);
    assert_eq!(fresh.c.group_state("g"), Some(GroupState::Stable));
    assert_eq!(fresh.c.group_generation("g"), Some(1));
    assert_eq!(fresh.c.group_members("g"), vec![a.clone(), b.clone()]);
    // Loaded members carry on: heartbeat, and SyncGroup returns the stored assignment.
    assert_eq!(fresh.heartbeat("g", &b, 1), 0);
    let (t, out) = fresh.sync(5, "g", &b, 1, &[]);
    assert_eq!(sync_resp(&out, t).unwrap().assignment.as_ref(), b"B");
}

#[test]
fn loaded_group_members_expire_without_heartbeats() {
    // The record persisted by the leader's SyncGroup round-trips through load.
    let mut h2 = H::new();
    let a2 = h2.member_id_for("g");
    h2.join(5, "g", &a2, None);
    h2.tick_at(T0 + 3_000);
    let (_, out) = h2.sync(5, "g", &a2, 1, &[(a2.as_str(), b"X")]);
    let records = persisted(&out);
    assert_eq!(records.len(), 1);
    let mut fresh = H::new();
    fresh.c.load(round_trip(&records[0]));
    fresh.c.set_loading(false, T0 + 3_000);
    fresh.now = T0 + 3_000;
    let (t, out) = fresh.sync(5, "g", &a2, 1, &[]);
    assert_eq!(sync_resp(&out, t).unwrap().assignment.as_ref(), b"X");
    // Session timers start when loading ends.
    assert_eq!(fresh.c.next_deadline(), Some(T0 + 3_000 + SESSION as i64));
    let out = fresh.tick_at(T0 + 3_000 + SESSION as i64);
    // Its only member gone, the group completes an empty generation and persists it.
    assert_eq!(fresh.c.group_state("g"), Some(GroupState::Empty));
    assert_eq!(fresh.c.group_generation("g"), Some(2));
    assert!(matches!(
        &persisted(&out)[..],
        [GroupRecord::GroupMetadata { generation: 2, members, .. }] if members.is_empty()
    ));
}

/// xorshift64*: a small deterministic generator for the garbage test.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn bytes(&mut self, max: usize) -> Vec<u8> {
        let n = (self.next() as usize) % (max + 1);
        (0..n).map(|_| self.next() as u8).collect()
    }
}

#[test]
fn decode_never_panics_on_garbage() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let valid: Vec<(Vec<u8>, Vec<u8>)> = every_kind().iter().map(|r| r.encode()).collect();
    let mut ok = 0;
    for i in 0..20_000 {
        let (key, value) = match i % 3 {
            // Pure noise.
            0 => (rng.bytes(64), rng.bytes(256)),
            // A valid record, truncated.
            1 => {
                let (k, v) = &valid[(rng.next() as usize) % valid.len()];
                let kl = (rng.next() as usize) % (k.len() + 1);
                let vl = (rng.next() as usize) % (v.len() + 1);
                (k[..kl].to_vec(), v[..vl].to_vec())
            }
            // A valid record with flipped bits.
            _ => {
                let (mut k, mut v) = valid[(rng.next() as usize) % valid.len()].clone();
                for _ in 0..3 {
                    if !v.is_empty() {
                        let p = (rng.next() as usize) % v.len();
                        v[p] ^= 1 << (rng.next() % 8);
                    }
                    if rng.next().is_multiple_of(4) {
                        let p = (rng.next() as usize) % k.len();
                        k[p] ^= 1 << (rng.next() % 8);
                    }
                }
                (k, v)
            }
        };
        if GroupRecord::decode(&key, Some(&value)).is_ok() {
            ok += 1;
        }
        let _ = GroupRecord::decode(&key, None);
    }
    // A group record claiming 4 billion members in a few bytes is refused up front.
    let mut key = vec![2u8, 0, 0, 0, 1, b'g'];
    let value = [1u8, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff];
    assert!(GroupRecord::decode(&key, Some(&value)).is_err());
    key.push(0);
    assert!(GroupRecord::decode(&key, None).is_err(), "trailing key bytes");
    assert!(ok > 0, "some mutated records still decode");
}

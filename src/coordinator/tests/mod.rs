//! Specification tests for the group coordinator. `H` drives a coordinator with a
//! manual clock, and checks two things on every output: each request token is answered
//! exactly once, and each response encodes in the version its request came with.

mod admin;
mod consumer;
mod join_sync;
mod offsets;
mod records;
mod static_members;
mod txn;

use std::collections::HashMap;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Encodable, StrBytes};

use super::{CoordinatorConfig, GroupCoordinator, Output};

/// Session timeout used by test members (ms).
pub const SESSION: i32 = 30_000;
/// Rebalance timeout used by test members (ms).
pub const REBALANCE: i32 = 20_000;
/// Test start time (ms since the epoch).
pub const T0: i64 = 1_000_000;

pub fn s(x: &str) -> StrBytes {
    StrBytes::from_string(x.to_string())
}

pub fn gid(x: &str) -> GroupId {
    GroupId(s(x))
}

/// A serialized ConsumerProtocolSubscription (v1) for `topics`, as Java clients send.
pub fn subscription(topics: &[&str]) -> Bytes {
    let mut b = BytesMut::new();
    b.put_i16(1);
    ConsumerProtocolSubscription::default()
        .with_topics(topics.iter().map(|t| s(t)).collect())
        .encode(&mut b, 1)
        .unwrap();
    b.freeze()
}

pub struct H {
    pub c: GroupCoordinator,
    pub now: i64,
    next_token: u64,
    open: HashMap<u64, i16>,
    /// Every record the coordinator asked to persist, in order: the internal log.
    pub log: Vec<super::GroupRecord>,
}

impl H {
    pub fn new() -> Self {
        Self::with_config(CoordinatorConfig::default())
    }

    pub fn with_config(cfg: CoordinatorConfig) -> Self {
        H {
            c: GroupCoordinator::new(cfg).with_deterministic_member_ids(7),
            now: T0,
            next_token: 0,
            open: HashMap::new(),
            log: Vec::new(),
        }
    }

    fn token(&mut self, version: i16) -> u64 {
        self.next_token += 1;
        self.open.insert(self.next_token, version);
        self.next_token
    }

    /// Check answered-once and encodability of every response.
    pub fn check(&mut self, out: Vec<Output>) -> Vec<Output> {
        self.log.extend(persisted(&out));
        for o in &out {
            if let Output::Respond { token, response } = o {
                let v = self
                    .open
                    .remove(token)
                    .unwrap_or_else(|| panic!("token {token} answered twice or unknown"));
                let mut b = BytesMut::new();
                response
                    .encode(&mut b, v)
                    .unwrap_or_else(|e| panic!("{response:?} does not encode in v{v}: {e}"));
            }
        }
        out
    }

    /// Call any coordinator API with a fresh token at the current time.
    pub fn run(
        &mut self,
        version: i16,
        f: impl FnOnce(&mut GroupCoordinator, u64, i64) -> Vec<Output>,
    ) -> (u64, Vec<Output>) {
        let t = self.token(version);
        let out = f(&mut self.c, t, self.now);
        (t, self.check(out))
    }

    /// Tokens not answered yet.
    pub fn parked(&self) -> usize {
        self.open.len()
    }

    pub fn join_req(
        group: &str,
        member: &str,
        instance: Option<&str>,
        topics: &[&str],
    ) -> JoinGroupRequest {
        JoinGroupRequest::default()
            .with_group_id(gid(group))
            .with_session_timeout_ms(SESSION)
            .with_rebalance_timeout_ms(REBALANCE)
            .with_member_id(s(member))
            .with_group_instance_id(instance.map(s))
            .with_protocol_type(s("consumer"))
            .with_protocols(vec![JoinGroupRequestProtocol::default()
                .with_name(s("range"))
                .with_metadata(subscription(topics))])
    }

    pub fn join_with(&mut self, version: i16, req: JoinGroupRequest) -> (u64, Vec<Output>) {
        let t = self.token(version);
        let out = self.c.join_group(t, version, req, "client", "/10.0.0.1", self.now);
        (t, self.check(out))
    }

    pub fn join(
        &mut self,
        version: i16,
        group: &str,
        member: &str,
        instance: Option<&str>,
    ) -> (u64, Vec<Output>) {
        self.join_with(version, Self::join_req(group, member, instance, &["t1"]))
    }

    pub fn sync(
        &mut self,
        version: i16,
        group: &str,
        member: &str,
        generation: i32,
        assignments: &[(&str, &[u8])],
    ) -> (u64, Vec<Output>) {
        let mut req = SyncGroupRequest::default()
            .with_group_id(gid(group))
            .with_generation_id(generation)
            .with_member_id(s(member))
            .with_assignments(
                assignments
                    .iter()
                    .map(|(m, a)| {
                        SyncGroupRequestAssignment::default()
                            .with_member_id(s(m))
                            .with_assignment(Bytes::copy_from_slice(a))
                    })
                    .collect(),
            );
        if version >= 5 {
            req = req.with_protocol_type(Some(s("consumer"))).with_protocol_name(Some(s("range")));
        }
        let t = self.token(version);
        let out = self.c.sync_group(t, version, req, self.now);
        (t, self.check(out))
    }

    pub fn heartbeat(&mut self, group: &str, member: &str, generation: i32) -> i16 {
        let req = HeartbeatRequest::default()
            .with_group_id(gid(group))
            .with_member_id(s(member))
            .with_generation_id(generation);
        let t = self.token(4);
        let out = self.c.heartbeat(t, 4, req, self.now);
        let out = self.check(out);
        match &out[..] {
            [Output::Respond { response: ResponseKind::Heartbeat(r), .. }] => r.error_code,
            other => panic!("unexpected {other:?}"),
        }
    }

    pub fn heartbeat_static(
        &mut self,
        group: &str,
        member: &str,
        instance: &str,
        generation: i32,
    ) -> i16 {
        let req = HeartbeatRequest::default()
            .with_group_id(gid(group))
            .with_member_id(s(member))
            .with_group_instance_id(Some(s(instance)))
            .with_generation_id(generation);
        let t = self.token(4);
        let out = self.c.heartbeat(t, 4, req, self.now);
        match &self.check(out)[..] {
            [Output::Respond { response: ResponseKind::Heartbeat(r), .. }] => r.error_code,
            other => panic!("unexpected {other:?}"),
        }
    }

    /// Move the clock to `at` and run due timers.
    pub fn tick_at(&mut self, at: i64) -> Vec<Output> {
        self.now = at;
        let out = self.c.tick(at);
        self.check(out)
    }

    pub fn commit(
        &mut self,
        version: i16,
        group: &str,
        member: &str,
        generation: i32,
        offsets: &[(&str, i32, i64)],
    ) -> Vec<Output> {
        let mut topics: Vec<OffsetCommitRequestTopic> = Vec::new();
        for (t, p, o) in offsets {
            let part = OffsetCommitRequestPartition::default()
                .with_partition_index(*p)
                .with_committed_offset(*o)
                .with_committed_metadata(Some(s("meta")));
            match topics.iter_mut().find(|x| x.name.0.as_str() == *t) {
                Some(x) => x.partitions.push(part),
                None => topics.push(
                    OffsetCommitRequestTopic::default()
                        .with_name(TopicName(s(t)))
                        .with_partitions(vec![part]),
                ),
            }
        }
        let req = OffsetCommitRequest::default()
            .with_group_id(gid(group))
            .with_generation_id_or_member_epoch(generation)
            .with_member_id(s(member))
            .with_topics(topics);
        let t = self.token(version);
        let out = self.c.offset_commit(t, version, req, self.now);
        self.check(out)
    }

    /// OffsetFetch v7 (single group); `None` topics = all.
    pub fn fetch(&mut self, group: &str, topics: Option<&[(&str, &[i32])]>) -> OffsetFetchResponse {
        let req =
            OffsetFetchRequest::default().with_group_id(gid(group)).with_topics(topics.map(|ts| {
                ts.iter()
                    .map(|(t, ps)| {
                        OffsetFetchRequestTopic::default()
                            .with_name(TopicName(s(t)))
                            .with_partition_indexes(ps.to_vec())
                    })
                    .collect()
            }));
        let t = self.token(7);
        let out = self.c.offset_fetch(t, 7, req, self.now);
        match self.check(out).pop() {
            Some(Output::Respond { response: ResponseKind::OffsetFetch(r), .. }) => r,
            other => panic!("unexpected {other:?}"),
        }
    }

    /// Two dynamic members joined with v5 (MEMBER_ID_REQUIRED round trip), synced with
    /// assignments "A" and "B": group "g" Stable at generation 1. Returns (leader, follower).
    pub fn stable_group() -> (H, String, String) {
        Self::stable_group_with(CoordinatorConfig::default())
    }

    /// [`H::stable_group`] with a custom configuration.
    pub fn stable_group_with(cfg: CoordinatorConfig) -> (H, String, String) {
        let mut h = H::with_config(cfg);
        let a = h.member_id_for("g");
        let (ta, out) = h.join(5, "g", &a, None);
        assert!(out.is_empty());
        let b = h.member_id_for("g");
        let (tb, out) = h.join(5, "g", &b, None);
        assert!(out.is_empty());
        h.tick_at(T0 + 3_000);
        let out = h.tick_at(T0 + 6_000);
        assert_eq!(join_resp(&out, ta).unwrap().generation_id, 1);
        assert_eq!(join_resp(&out, tb).unwrap().generation_id, 1);
        let (_, out) = h.sync(5, "g", &b, 1, &[]);
        assert!(out.is_empty());
        let (_, out) = h.sync(5, "g", &a, 1, &[(a.as_str(), b"A"), (b.as_str(), b"B")]);
        assert_eq!(out.len(), 3);
        (h, a, b)
    }

    /// JoinGroup v5 with an empty member id: returns the id from MEMBER_ID_REQUIRED.
    pub fn member_id_for(&mut self, group: &str) -> String {
        let (t, out) = self.join(5, group, "", None);
        let r = join_resp(&out, t).expect("immediate response");
        assert_eq!(r.error_code, 79, "MEMBER_ID_REQUIRED");
        r.member_id.to_string()
    }
}

pub fn response(out: &[Output], token: u64) -> Option<&ResponseKind> {
    out.iter().find_map(|o| match o {
        Output::Respond { token: t, response } if *t == token => Some(response),
        _ => None,
    })
}

pub fn join_resp(out: &[Output], token: u64) -> Option<JoinGroupResponse> {
    match response(out, token)? {
        ResponseKind::JoinGroup(r) => Some(r.clone()),
        other => panic!("not a JoinGroup response: {other:?}"),
    }
}

pub fn sync_resp(out: &[Output], token: u64) -> Option<SyncGroupResponse> {
    match response(out, token)? {
        ResponseKind::SyncGroup(r) => Some(r.clone()),
        other => panic!("not a SyncGroup response: {other:?}"),
    }
}

/// Index of the first Persist / the Respond for `token` in `out`.
pub fn position_of_respond(out: &[Output], token: u64) -> usize {
    out.iter()
        .position(|o| matches!(o, Output::Respond { token: t, .. } if *t == token))
        .expect("responded")
}

pub fn persisted(out: &[Output]) -> Vec<super::GroupRecord> {
    out.iter()
        .filter_map(|o| match o {
            Output::Persist(r) => Some(r.clone()),
            _ => None,
        })
        .collect()
}

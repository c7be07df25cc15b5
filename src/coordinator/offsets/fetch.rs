//! OffsetFetch (Kafka's `GroupCoordinator.handleFetchOffsets`,
//! `GroupMetadataManager.getOffsets`).

use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::{OffsetFetchRequest, OffsetFetchResponse, ResponseKind};

use super::super::consumer::validate_member_epoch;
use super::super::group::{CommittedOffset, Group};
use super::super::{GroupCoordinator, Output, RequestToken};
use crate::error::{code, ResponseError};
use crate::protocol::strings::{sb, topic_name};

/// Requested partitions per topic; `None` = every committed partition.
type FetchTopics = Option<Vec<(String, Vec<i32>)>>;

/// One partition of an OffsetFetch answer.
struct Fetched {
    partition: i32,
    /// -1 when nothing is committed.
    offset: i64,
    /// -1 when none.
    leader_epoch: i32,
    /// "" when nothing is committed.
    metadata: String,
    error: Option<ResponseError>,
}

impl Fetched {
    /// The answer for `partition`: its committed offset, if any.
    fn new(partition: i32, c: Option<&CommittedOffset>, error: Option<ResponseError>) -> Self {
        Fetched {
            partition,
            offset: c.map_or(-1, |c| c.offset),
            leader_epoch: c.map_or(-1, |c| c.leader_epoch),
            metadata: c.map(|c| c.metadata.clone()).unwrap_or_default(),
            error,
        }
    }
}

/// A topic's fetched partitions.
type FetchedTopic = (String, Vec<Fetched>);

/// The OffsetFetch response topics for `fetched`, in the v1-7 shape
/// (`OffsetFetchResponseTopic` / `...Partition`) or the v8+ one (`...Topics` /
/// `...Partitions`): the same fields under two sets of type names.
macro_rules! response_topics {
    ($topic:ident, $partition:ident, $fetched:expr) => {
        $fetched
            .into_iter()
            .map(|(topic, parts)| {
                let mut rt = $topic::default();
                rt.name = topic_name(&topic);
                rt.partitions = parts
                    .into_iter()
                    .map(|f| {
                        let mut rp = $partition::default();
                        rp.partition_index = f.partition;
                        rp.committed_offset = f.offset;
                        rp.committed_leader_epoch = f.leader_epoch;
                        rp.metadata = Some(sb(&f.metadata));
                        rp.error_code = code(f.error);
                        rp
                    })
                    .collect();
                rt
            })
            .collect()
    };
}

impl GroupCoordinator {
    /// OffsetFetch, versions 1-9, including the multi-group form (v8+) and "all
    /// partitions" (null topics, v2+). Kafka source: `GroupCoordinator.handleFetchOffsets`.
    ///
    /// Offsets are returned whatever the group state (simple consumers have no members).
    /// A partition without a committed offset gets offset -1, leader epoch -1, metadata
    /// "". With `require_stable` (v7+), UNSTABLE_OFFSET_COMMIT for a partition with a
    /// pending transactional offset. Errors: COORDINATOR_LOAD_IN_PROGRESS (per partition in v1, top level in v2-7,
    /// per group in v8+); v9 per group, for consumer-protocol groups when a member id or
    /// epoch is given: UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH, FENCED_MEMBER_EPOCH.
    pub fn offset_fetch(
        &mut self,
        token: RequestToken,
        version: i16,
        req: OffsetFetchRequest,
        _now_ms: i64,
    ) -> Vec<Output> {
        let mut r = OffsetFetchResponse::default();
        if version >= 8 {
            for g in &req.groups {
                let topics: FetchTopics = g.topics.as_ref().map(|ts| {
                    ts.iter().map(|t| (t.name.0.to_string(), t.partition_indexes.clone())).collect()
                });
                // v9: a consumer-protocol member identifies itself with its epoch.
                let member = (version >= 9 && !(g.member_epoch < 0 && g.member_id.is_none()))
                    .then(|| (g.member_id.as_deref().unwrap_or(""), g.member_epoch));
                let mut rg = OffsetFetchResponseGroup::default();
                rg.group_id = g.group_id.clone();
                match self.fetch_group(&g.group_id.0, topics, member, req.require_stable) {
                    Ok(fetched) => {
                        rg.topics = response_topics!(
                            OffsetFetchResponseTopics,
                            OffsetFetchResponsePartitions,
                            fetched
                        )
                    }
                    Err(e) => rg.error_code = e.code(),
                }
                r.groups.push(rg);
            }
        } else {
            let topics: FetchTopics = req.topics.as_ref().map(|ts| {
                ts.iter().map(|t| (t.name.0.to_string(), t.partition_indexes.clone())).collect()
            });
            let stable = version >= 7 && req.require_stable;
            let fetched = match self.fetch_group(&req.group_id.0, topics.clone(), None, stable) {
                Ok(fetched) => fetched,
                // v1 has no top-level error: report it on every requested partition.
                Err(e) if version < 2 => topics
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(t, ps)| {
                        (t, ps.into_iter().map(|p| Fetched::new(p, None, Some(e))).collect())
                    })
                    .collect(),
                Err(e) => {
                    r.error_code = e.code();
                    Vec::new()
                }
            };
            r.topics =
                response_topics!(OffsetFetchResponseTopic, OffsetFetchResponsePartition, fetched);
        }
        vec![Output::Respond { token, response: ResponseKind::OffsetFetch(r) }]
    }

    /// Kafka's `GroupMetadataManager.getOffsets` for one group: the requested
    /// partitions (`None`: every committed one), or the group's error. With
    /// `require_stable` (v7+), a partition with a pending transactional offset is
    /// answered UNSTABLE_OFFSET_COMMIT (offset -1) instead of its committed offset, as
    /// Kafka's `OffsetMetadataManager.fetchOffsets` does; "all partitions" lists the
    /// committed ones only.
    fn fetch_group(
        &self,
        group_id: &str,
        topics: FetchTopics,
        member: Option<(&str, i32)>,
        require_stable: bool,
    ) -> Result<Vec<FetchedTopic>, ResponseError> {
        if let Some(e) = self.validate_group_status(group_id, true) {
            return Err(e);
        }
        let group = self.groups.get(group_id);
        if let (Some((member_id, epoch)), Some(cg)) = (member, group.and_then(Group::as_consumer)) {
            let error = match cg.members.get(member_id) {
                None => Some(ResponseError::UnknownMemberId),
                Some(_) => validate_member_epoch(cg, member_id, epoch),
            };
            if let Some(e) = error {
                return Err(e);
            }
        }
        let fetched = |t: &str, p: i32, c: Option<&CommittedOffset>| {
            if require_stable && self.pending.has(group_id, t, p) {
                Fetched::new(p, None, Some(ResponseError::UnstableOffsetCommit))
            } else {
                Fetched::new(p, c, None)
            }
        };
        let committed = |t: &str, p: i32| group.and_then(|g| g.offsets.get(&(t.to_string(), p)));
        let Some(topics) = topics else {
            let mut res: Vec<FetchedTopic> = Vec::new();
            for ((t, p), c) in group.iter().flat_map(|g| &g.offsets) {
                let f = fetched(t, *p, Some(c));
                match res.last_mut() {
                    Some((lt, parts)) if lt == t => parts.push(f),
                    _ => res.push((t.clone(), vec![f])),
                }
            }
            return Ok(res);
        };
        Ok(topics
            .into_iter()
            .map(|(t, ps)| {
                let parts = ps.iter().map(|&p| fetched(&t, p, committed(&t, p))).collect();
                (t, parts)
            })
            .collect())
    }
}

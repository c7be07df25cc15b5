//! Group administration: ListGroups, DescribeGroups, DeleteGroups (Kafka's
//! `GroupCoordinator.handleListGroups` / `handleDescribeGroup` / `handleDeleteGroups`).

use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::{
    DeleteGroupsRequest, DeleteGroupsResponse, DescribeGroupsRequest, DescribeGroupsResponse,
    ListGroupsRequest, ListGroupsResponse, ResponseKind,
};

use super::group::GroupKind;
use super::state::GroupState;
use super::{GroupCoordinator, GroupRecord, Output, RequestToken};
use crate::error::{code, ResponseError};
use crate::protocol::strings::sb;

/// Group type reported by ListGroups v5+ for classic-protocol groups.
const CLASSIC_GROUP_TYPE: &str = "classic";
/// Group type reported by ListGroups v5+ for consumer-protocol (KIP-848) groups.
const CONSUMER_GROUP_TYPE: &str = "consumer";

/// AclOperation bits READ(3) | DELETE(6) | DESCRIBE(8): what a group allows when no
/// authorizer is configured.
pub(crate) const GROUP_AUTHORIZED_OPERATIONS: i32 = (1 << 3) | (1 << 6) | (1 << 8);

impl GroupCoordinator {
    /// ListGroups, versions 0-5. Kafka source: `GroupCoordinator.handleListGroups`.
    ///
    /// Groups sorted by id. v4+ `states_filter` and v5+ `types_filter` ("classic" or
    /// "consumer") match case-insensitively; empty filters match all. Consumer-protocol
    /// groups report their KIP-848 state (Empty, Assigning, Reconciling, Stable) and
    /// protocol type "consumer". While loading: COORDINATOR_LOAD_IN_PROGRESS and no
    /// groups.
    pub fn list_groups(
        &mut self,
        token: RequestToken,
        version: i16,
        req: ListGroupsRequest,
        _now_ms: i64,
    ) -> Vec<Output> {
        let mut r = ListGroupsResponse::default();
        if self.loading {
            r.error_code = ResponseError::CoordinatorLoadInProgress.code();
        } else {
            let states: Vec<String> = if version >= 4 {
                req.states_filter.iter().map(|s| s.to_lowercase()).collect()
            } else {
                Vec::new()
            };
            let types: Vec<String> = if version >= 5 {
                req.types_filter.iter().map(|s| s.to_lowercase()).collect()
            } else {
                Vec::new()
            };
            let mut groups: Vec<(&String, &str, &str)> = self
                .groups
                .values()
                .map(|g| match &g.kind {
                    GroupKind::Consumer(cg) => (&g.group_id, cg.state_name(), CONSUMER_GROUP_TYPE),
                    GroupKind::Classic(c) => (&g.group_id, c.state.as_str(), CLASSIC_GROUP_TYPE),
                })
                .filter(|(_, state, ty)| {
                    (states.is_empty() || states.contains(&state.to_lowercase()))
                        && (types.is_empty() || types.iter().any(|t| t == ty))
                })
                .collect();
            groups.sort_by(|a, b| a.0.cmp(b.0));
            r.groups = groups
                .into_iter()
                .map(|(id, state, ty)| {
                    let g = &self.groups[id];
                    let mut l = ListedGroup::default();
                    l.group_id = sb(id).into();
                    l.protocol_type = sb(g.protocol_type().unwrap_or(""));
                    l.group_state = sb(state);
                    l.group_type = sb(ty);
                    l
                })
                .collect();
        }
        vec![Output::Respond { token, response: ResponseKind::ListGroups(r) }]
    }

    /// DescribeGroups, versions 0-6. Kafka source: `GroupCoordinator.handleDescribeGroup`.
    ///
    /// A Stable group reports its protocol and each member's metadata and assignment;
    /// other states report members without them. Unknown groups: state "Dead" (v6+:
    /// with GROUP_ID_NOT_FOUND). Errors per group: COORDINATOR_LOAD_IN_PROGRESS.
    /// v3+ `include_authorized_operations`: READ|DELETE|DESCRIBE (no authorizer).
    /// A consumer-protocol (KIP-848) group is described in the classic shape: its
    /// KIP-848 state, protocol type "consumer", the assignor as protocol, and per member
    /// a ConsumerProtocolSubscription / ConsumerProtocolAssignment (v0) of its topics and
    /// current partitions.
    pub fn describe_groups(
        &mut self,
        token: RequestToken,
        version: i16,
        req: DescribeGroupsRequest,
        _now_ms: i64,
    ) -> Vec<Output> {
        let mut r = DescribeGroupsResponse::default();
        for id in &req.groups {
            let mut d = DescribedGroup::default();
            d.group_id = id.clone();
            if version >= 3 && req.include_authorized_operations {
                d.authorized_operations = GROUP_AUTHORIZED_OPERATIONS;
            }
            let group = self.groups.get(id.0.as_str()).map(|g| &g.kind);
            if let Some(e) = self.validate_group_status(&id.0, true) {
                d.error_code = e.code();
            } else if let Some(GroupKind::Consumer(cg)) = group {
                cg.describe_classic(&self.topics, &mut d);
            } else if let Some(GroupKind::Classic(g)) = group {
                let stable = g.is(GroupState::Stable);
                let protocol = g.protocol_name.clone().unwrap_or_default();
                d.group_state = sb(g.state.as_str());
                d.protocol_type = sb(g.protocol_type.as_deref().unwrap_or(""));
                d.protocol_data = sb(if stable { &protocol } else { "" });
                d.members = g
                    .members
                    .values()
                    .map(|m| {
                        let mut dm = DescribedGroupMember::default();
                        dm.member_id = sb(&m.member_id);
                        dm.group_instance_id = m.group_instance_id.as_deref().map(sb);
                        dm.client_id = sb(&m.client_id);
                        dm.client_host = sb(&m.client_host);
                        if stable {
                            dm.member_metadata = m.metadata(&protocol);
                            dm.member_assignment = m.assignment.clone();
                        }
                        dm
                    })
                    .collect();
            } else {
                d.group_state = sb(GroupState::Dead.as_str());
                if version >= 6 {
                    d.error_code = ResponseError::GroupIdNotFound.code();
                    d.error_message = Some(sb(&format!("Group {} not found.", id.0)));
                }
            }
            r.groups.push(d);
        }
        vec![Output::Respond { token, response: ResponseKind::DescribeGroups(r) }]
    }

    /// DeleteGroups, versions 0-2. Kafka source: `GroupCoordinator.handleDeleteGroups`.
    ///
    /// Only Empty groups (classic, or consumer-protocol without members) are deleted:
    /// tombstones for each offset and the group are persisted before the response.
    /// Errors per group: COORDINATOR_LOAD_IN_PROGRESS, GROUP_ID_NOT_FOUND,
    /// NON_EMPTY_GROUP. Duplicate ids are answered once.
    pub fn delete_groups(
        &mut self,
        token: RequestToken,
        _version: i16,
        req: DeleteGroupsRequest,
        _now_ms: i64,
    ) -> Vec<Output> {
        let mut out = Vec::new();
        let mut r = DeleteGroupsResponse::default();
        let mut seen = std::collections::HashSet::new();
        for id in &req.groups_names {
            if !seen.insert(id.0.to_string()) {
                continue;
            }
            let error = if let Some(e) = self.validate_group_status(&id.0, true) {
                Some(e)
            } else {
                match self.groups.get(id.0.as_str()).map(|g| g.state()) {
                    None | Some(GroupState::Dead) => Some(ResponseError::GroupIdNotFound),
                    Some(GroupState::Empty) => {
                        if let Some(g) = self.remove_group(id.0.as_str()) {
                            // The committed offsets' tombstones, then one for each
                            // partition with only pending transactional offsets
                            // (they go too: Kafka's `deleteAllOffsets`), then the
                            // group's.
                            let mut records: Vec<GroupRecord> = g.tombstones().collect();
                            let group_tombstone = records.pop();
                            for (topic, partition) in self.pending.partitions_of(&g.group_id) {
                                self.pending.remove_partition(&g.group_id, &topic, partition);
                                if !g.offsets.contains_key(&(topic.clone(), partition)) {
                                    records.push(GroupRecord::OffsetTombstone {
                                        group: g.group_id.clone(),
                                        topic,
                                        partition,
                                    });
                                }
                            }
                            records.extend(group_tombstone);
                            out.extend(records.into_iter().map(Output::Persist));
                        }
                        None
                    }
                    Some(_) => Some(ResponseError::NonEmptyGroup),
                }
            };
            let mut d = DeletableGroupResult::default();
            d.group_id = id.clone();
            d.error_code = code(error);
            r.results.push(d);
        }
        out.push(Output::Respond { token, response: ResponseKind::DeleteGroups(r) });
        out
    }
}

/// One group as the metrics endpoint reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupSummary {
    pub group_id: String,
    /// "classic" or "consumer" (ListGroups v5's group type).
    pub group_type: &'static str,
    /// The state name ListGroups reports (Empty, Stable, PreparingRebalance, ...).
    pub state: String,
    /// Members that joined (pending classic members are not counted).
    pub members: usize,
    /// Committed offsets: `(topic, partition, offset)` (the next record to consume), by
    /// topic and partition.
    pub offsets: Vec<(String, i32, i64)>,
}

impl GroupCoordinator {
    /// Every group this coordinator holds, sorted by id (nothing while loading).
    pub fn group_summaries(&self) -> Vec<GroupSummary> {
        if self.loading {
            return Vec::new();
        }
        let mut out: Vec<GroupSummary> = self
            .groups
            .values()
            .map(|g| match &g.kind {
                GroupKind::Consumer(cg) => GroupSummary {
                    group_id: g.group_id.clone(),
                    group_type: CONSUMER_GROUP_TYPE,
                    state: cg.state_name().to_string(),
                    members: cg.members.len(),
                    offsets: committed(g),
                },
                GroupKind::Classic(c) => GroupSummary {
                    group_id: g.group_id.clone(),
                    group_type: CLASSIC_GROUP_TYPE,
                    state: c.state.as_str().to_string(),
                    members: c.members.len(),
                    offsets: committed(g),
                },
            })
            .collect();
        out.sort_by(|a, b| a.group_id.cmp(&b.group_id));
        out
    }
}

fn committed(g: &super::group::Group) -> Vec<(String, i32, i64)> {
    g.offsets.iter().map(|((t, p), o)| (t.clone(), *p, o.offset)).collect()
}

//! OffsetDelete (Kafka's `GroupCoordinator.handleDeleteOffsets`).

use kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kafka_protocol::messages::{OffsetDeleteRequest, OffsetDeleteResponse, ResponseKind};

use super::super::group::CONSUMER_PROTOCOL_TYPE;
use super::super::records::GroupRecord;
use super::super::state::GroupState;
use super::super::{GroupCoordinator, Output, RequestToken};
use crate::error::ResponseError;

impl GroupCoordinator {
    /// OffsetDelete, version 0. Kafka source: `GroupCoordinator.handleDeleteOffsets`.
    ///
    /// An Empty group's offsets are deleted (committed and pending transactional ones:
    /// Kafka's `deleteOffsets` writes a tombstone for either); a non-empty consumer group's only for topics
    /// it does not subscribe to (GROUP_SUBSCRIBED_TO_TOPIC otherwise; subscriptions are
    /// parsed from the members' ConsumerProtocolSubscription, unknown = subscribed).
    /// Tombstones are persisted before the response. An Empty group left without offsets
    /// stays (DeleteGroups can still delete it, and DescribeGroups/ListGroups show it)
    /// until the periodic cleanup removes it, as Kafka 4.x's group coordinator does
    /// (`OffsetMetadataManager.deleteOffsets` writes only offset tombstones; the group goes
    /// in `cleanupGroupMetadata`). Top-level errors: INVALID_GROUP_ID, COORDINATOR_LOAD_IN_PROGRESS,
    /// GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP (non-consumer group with members).
    pub fn offset_delete(
        &mut self,
        token: RequestToken,
        _version: i16,
        req: OffsetDeleteRequest,
        _now_ms: i64,
    ) -> Vec<Output> {
        let mut out = Vec::new();
        let group_id = req.group_id.0.to_string();
        let mut r = OffsetDeleteResponse::default();
        let group = match self.validate_group_status(&group_id, false) {
            Some(e) => Err(e),
            None => match self.groups.get_mut(&group_id) {
                None => Err(ResponseError::GroupIdNotFound),
                Some(g) => match g.state() {
                    GroupState::Dead => Err(ResponseError::GroupIdNotFound),
                    GroupState::Empty => Ok(g),
                    _ if g.protocol_type() == Some(CONSUMER_PROTOCOL_TYPE) => Ok(g),
                    _ => Err(ResponseError::NonEmptyGroup),
                },
            },
        };
        match group {
            Err(e) => r.error_code = e.code(),
            Ok(g) => {
                let empty = g.state() == GroupState::Empty;
                for t in &req.topics {
                    let mut rt = OffsetDeleteResponseTopic::default();
                    rt.name = t.name.clone();
                    let subscribed = !empty && g.is_subscribed_to(&t.name.0);
                    for p in &t.partitions {
                        let mut rp = OffsetDeleteResponsePartition::default();
                        rp.partition_index = p.partition_index;
                        if subscribed {
                            rp.error_code = ResponseError::GroupSubscribedToTopic.code();
                        } else {
                            // A tombstone for a committed or a pending transactional
                            // offset; it deletes both.
                            let key = (t.name.0.to_string(), p.partition_index);
                            let committed = g.offsets.remove(&key).is_some();
                            let pending = self.pending.has(&group_id, &key.0, key.1);
                            if committed || pending {
                                self.pending.remove_partition(&group_id, &key.0, key.1);
                                out.push(Output::Persist(GroupRecord::OffsetTombstone {
                                    group: group_id.clone(),
                                    topic: key.0,
                                    partition: key.1,
                                }));
                            }
                        }
                        rt.partitions.push(rp);
                    }
                    r.topics.push(rt);
                }
            }
        }
        self.reschedule(&group_id);
        out.push(Output::Respond { token, response: ResponseKind::OffsetDelete(r) });
        out
    }
}

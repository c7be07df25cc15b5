//! A consumer group's durable form, [`GroupRecord::ConsumerGroup`], and rebuilding the
//! group from it at start-up.

use uuid::Uuid;

use super::super::assignor::Assignment;
use super::super::records::{ConsumerMemberRecord, GroupRecord};
use super::group::ConsumerGroup;
use super::member::{ConsumerMember, MemberState};
use super::regex::TopicRegex;

/// An assignment as stored: (topic id, partitions), topics without partitions left out.
fn to_parts(a: &Assignment) -> Vec<(Uuid, Vec<i32>)> {
    a.iter()
        .filter(|(_, ps)| !ps.is_empty())
        .map(|(t, ps)| (*t, ps.iter().copied().collect()))
        .collect()
}

/// An assignment from (topic id, partitions) pairs (merged, empty topics dropped).
pub(super) fn to_assignment(parts: &[(Uuid, Vec<i32>)]) -> Assignment {
    let mut a = Assignment::new();
    for (t, ps) in parts {
        a.entry(*t).or_default().extend(ps.iter().copied());
    }
    a.retain(|_, ps| !ps.is_empty());
    a
}

impl ConsumerGroup {
    /// The durable form of the group `group_id` (deadlines are not stored).
    pub fn record(&self, group_id: &str) -> GroupRecord {
        GroupRecord::ConsumerGroup {
            group: group_id.to_string(),
            group_epoch: self.group_epoch,
            assignment_epoch: self.assignment_epoch,
            current_state_timestamp_ms: self.state_timestamp_ms,
            subscription_metadata: self
                .subscription_metadata
                .iter()
                .map(|(n, &(id, p))| (n.clone(), id, p))
                .collect(),
            members: self
                .members
                .values()
                .map(|m| ConsumerMemberRecord {
                    member_id: m.member_id.clone(),
                    instance_id: m.instance_id.clone(),
                    rack_id: m.rack_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    rebalance_timeout_ms: m.rebalance_timeout_ms,
                    subscribed_topic_names: m.subscribed_topic_names.clone(),
                    server_assignor: m.server_assignor.clone(),
                    member_epoch: m.member_epoch,
                    previous_member_epoch: m.previous_member_epoch,
                    state: m.state.code(),
                    assigned: to_parts(&m.assigned),
                    pending_revocation: to_parts(&m.pending_revocation),
                    target: self.target.get(&m.member_id).map(to_parts).unwrap_or_default(),
                })
                .collect(),
            member_regexes: self
                .members
                .values()
                .filter_map(|m| {
                    Some((
                        m.member_id.clone(),
                        m.subscribed_topic_regex.as_ref()?.as_str().to_string(),
                    ))
                })
                .collect(),
        }
    }

    /// Rebuild a consumer group from its record (start-up); `None` for other records.
    /// Member timers are armed later (`arm_timers`).
    pub fn from_record(record: GroupRecord) -> Option<ConsumerGroup> {
        let GroupRecord::ConsumerGroup {
            group_epoch,
            assignment_epoch,
            current_state_timestamp_ms,
            subscription_metadata,
            members,
            member_regexes,
            ..
        } = record
        else {
            return None;
        };
        let mut cg = ConsumerGroup {
            group_epoch,
            assignment_epoch,
            subscription_metadata: subscription_metadata
                .into_iter()
                .map(|(n, id, p)| (n, (id, p)))
                .collect(),
            ..ConsumerGroup::new(current_state_timestamp_ms)
        };
        for m in members {
            let mut cm = ConsumerMember::new(&m.member_id);
            cm.instance_id = m.instance_id;
            cm.rack_id = m.rack_id;
            cm.client_id = m.client_id;
            cm.client_host = m.client_host;
            cm.rebalance_timeout_ms = m.rebalance_timeout_ms;
            cm.subscribed_topic_names = m.subscribed_topic_names;
            // A stored regex compiled when it was accepted; one that no longer does
            // (a stricter regex engine) subscribes to nothing rather than failing the load.
            cm.subscribed_topic_regex = member_regexes
                .iter()
                .find(|(id, _)| *id == m.member_id)
                .and_then(|(_, r)| TopicRegex::new(r).ok());
            cm.server_assignor = m.server_assignor;
            cm.member_epoch = m.member_epoch;
            cm.previous_member_epoch = m.previous_member_epoch;
            cm.state = MemberState::from_code(m.state);
            cm.assigned = to_assignment(&m.assigned);
            cm.pending_revocation = to_assignment(&m.pending_revocation);
            cg.target.insert(m.member_id.clone(), to_assignment(&m.target));
            cg.put_member(cm);
        }
        Some(cg)
    }
}

//! The KIP-848 state of one consumer group (Kafka's `ConsumerGroup`): epochs, members,
//! the target assignment and which member epoch owns each partition.

use std::collections::{BTreeMap, HashMap};

use indexmap::IndexMap;
use uuid::Uuid;

use super::super::assignor::{self, Assignment, MemberSpec, TopicSpec};
use super::member::{ConsumerMember, MemberState};
use super::topics::TopicCatalog;

/// The KIP-848 state of a consumer group (Kafka's `ConsumerGroup`).
#[derive(Debug, Clone, Default)]
pub(crate) struct ConsumerGroup {
    /// Bumped on every change of membership, subscriptions or subscribed topics.
    pub group_epoch: i32,
    /// The group epoch the target assignment was computed for.
    pub assignment_epoch: i32,
    /// When the group last became empty or non-empty (ms since the epoch); `None` when
    /// loaded from a record that lacked it.
    pub state_timestamp_ms: Option<i64>,
    /// Members in join order.
    pub members: IndexMap<String, ConsumerMember>,
    /// instance id -> member id.
    pub static_members: HashMap<String, String>,
    /// member id -> target assignment (absent = empty).
    pub target: HashMap<String, Assignment>,
    /// (topic id, partition) -> epoch of the member owning it (assigned or pending
    /// revocation). Absent = free.
    pub partition_epochs: HashMap<(Uuid, i32), i32>,
    /// Subscribed topics that exist: name -> (id, partitions).
    pub subscription_metadata: BTreeMap<String, (Uuid, i32)>,
}

impl ConsumerGroup {
    /// A group without members at epoch 0, created at `now` (ms).
    pub fn new(now: Option<i64>) -> Self {
        ConsumerGroup { state_timestamp_ms: now, ..ConsumerGroup::default() }
    }

    /// Kafka's `ConsumerGroup.state`: Empty, Assigning, Reconciling or Stable.
    pub fn state_name(&self) -> &'static str {
        if self.members.is_empty() {
            "Empty"
        } else if self.group_epoch > self.assignment_epoch {
            "Assigning"
        } else if self
            .members
            .values()
            .any(|m| m.member_epoch != self.assignment_epoch || m.state != MemberState::Stable)
        {
            "Reconciling"
        } else {
            "Stable"
        }
    }

    /// Date the group's Empty / non-empty state: if it changed since the call began
    /// (`had_members`), it changed at `now` (ms).
    pub fn touch_state(&mut self, had_members: bool, now: i64) {
        if had_members == self.members.is_empty() {
            self.state_timestamp_ms = Some(now);
        }
    }

    /// The server assignor most members ask for (ties: smallest name); uniform if none.
    pub fn assignor(&self) -> String {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for m in self.members.values() {
            if let Some(a) = &m.server_assignor {
                *counts.entry(a.as_str()).or_default() += 1;
            }
        }
        let mut best: Option<(&str, usize)> = None;
        for (a, n) in counts {
            if best.is_none_or(|(_, b)| n > b) {
                best = Some((a, n));
            }
        }
        best.map_or(assignor::UNIFORM, |(a, _)| a).to_string()
    }

    /// Whether any member subscribes to `topic`, by name or by regex.
    pub fn is_subscribed_to(&self, topic: &str) -> bool {
        self.members.values().any(|m| m.subscribes_to(topic))
    }

    /// Kafka's `computeSubscriptionMetadata`: the subscribed topics found in `catalog`,
    /// by name or by a member's regex (resolved against every topic of the catalog, as
    /// Kafka's `refreshRegularExpressions` does, but at once instead of in the
    /// background: the catalog is in memory).
    pub fn compute_subscription_metadata(
        &self,
        catalog: &TopicCatalog,
    ) -> BTreeMap<String, (Uuid, i32)> {
        let mut meta: BTreeMap<String, (Uuid, i32)> = self
            .members
            .values()
            .flat_map(|m| m.subscribed_topic_names.iter())
            .filter_map(|t| catalog.get(t).map(|&v| (t.clone(), v)))
            .collect();
        let regexes: Vec<_> =
            self.members.values().filter_map(|m| m.subscribed_topic_regex.as_ref()).collect();
        if !regexes.is_empty() {
            for (t, &v) in catalog {
                if !meta.contains_key(t) && regexes.iter().any(|r| r.matches(t)) {
                    meta.insert(t.clone(), v);
                }
            }
        }
        meta
    }

    /// Recompute the target assignment for the current group epoch.
    fn compute_target(&mut self) {
        let assignor = self.assignor();
        let topics: Vec<TopicSpec> = self
            .subscription_metadata
            .iter()
            .map(|(name, &(id, n))| (id, name.clone(), n))
            .collect();
        let specs: Vec<MemberSpec> = self
            .members
            .values()
            .map(|m| MemberSpec {
                member_id: &m.member_id,
                topics: self
                    .subscription_metadata
                    .iter()
                    .filter(|(t, _)| m.subscribes_to(t))
                    .map(|(_, v)| v.0)
                    .collect(),
                current: self.target.get(&m.member_id),
            })
            .collect();
        let target = assignor::assign(&assignor, &specs, &topics);
        self.target = target;
        self.assignment_epoch = self.group_epoch;
    }

    /// Bump the group epoch and recompute the target assignment.
    pub fn bump(&mut self) {
        self.group_epoch += 1;
        self.compute_target();
    }

    /// Insert or replace a member, keeping partition epochs and the static index.
    pub fn put_member(&mut self, m: ConsumerMember) {
        if let Some(old) = self.members.get(&m.member_id) {
            let old = old.clone();
            self.remove_epochs(&old);
        }
        for (tid, ps) in m.assigned.iter().chain(m.pending_revocation.iter()) {
            for &p in ps {
                self.partition_epochs.insert((*tid, p), m.member_epoch);
            }
        }
        if let Some(i) = &m.instance_id {
            self.static_members.insert(i.clone(), m.member_id.clone());
        }
        self.members.insert(m.member_id.clone(), m);
    }

    fn remove_epochs(&mut self, m: &ConsumerMember) {
        for (tid, ps) in m.assigned.iter().chain(m.pending_revocation.iter()) {
            for &p in ps {
                if self.partition_epochs.get(&(*tid, p)) == Some(&m.member_epoch) {
                    self.partition_epochs.remove(&(*tid, p));
                }
            }
        }
    }

    /// Forget a member (its partitions become free); its target is dropped.
    pub fn remove_member(&mut self, member_id: &str) -> Option<ConsumerMember> {
        let m = self.members.shift_remove(member_id)?;
        self.remove_epochs(&m);
        if let Some(i) = &m.instance_id {
            if self.static_members.get(i).map(|s| s.as_str()) == Some(member_id) {
                self.static_members.remove(i);
            }
        }
        self.target.remove(member_id);
        Some(m)
    }

    /// Kafka's `consumerGroupFenceMember`: remove the member and bump the group epoch.
    /// Topics nobody subscribes to any more drop out of the subscription metadata.
    pub fn fence_member(&mut self, member_id: &str) {
        if self.remove_member(member_id).is_none() {
            return;
        }
        let gone: Vec<String> = self
            .subscription_metadata
            .keys()
            .filter(|t| !self.is_subscribed_to(t))
            .cloned()
            .collect();
        for t in gone {
            self.subscription_metadata.remove(&t);
        }
        self.bump();
    }

    /// Earliest session or revocation deadline of the members (ms).
    pub fn next_deadline(&self) -> Option<i64> {
        self.members
            .values()
            .flat_map(|m| [m.session_deadline, m.revocation_deadline.filter(|_| m.is_revoking())])
            .flatten()
            .min()
    }
}

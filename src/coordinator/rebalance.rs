//! The classic rebalance: preparing it, completing the join phase and starting the next
//! generation (Kafka's `GroupCoordinator.prepareRebalance`, `DelayedJoin`,
//! `onCompleteJoin`, `GroupMetadata.initNextGeneration`).

use super::classic::{ClassicGroup, JoinTimer};
use super::ctx::Ctx;
use super::state::GroupState;
use crate::error::ResponseError;

impl ClassicGroup {
    /// Kafka's `maybePrepareRebalance`: only from Stable, CompletingRebalance or Empty.
    pub fn maybe_prepare_rebalance(&mut self, ctx: &mut Ctx) {
        if matches!(
            self.state,
            GroupState::Stable | GroupState::CompletingRebalance | GroupState::Empty
        ) {
            self.prepare_rebalance(ctx);
        }
    }

    /// Kafka's `prepareRebalance`: parked SyncGroups get REBALANCE_IN_PROGRESS; an Empty
    /// group waits the initial rebalance delay, others up to the rebalance timeout.
    pub fn prepare_rebalance(&mut self, ctx: &mut Ctx) {
        if self.is(GroupState::CompletingRebalance) {
            self.reset_and_propagate_assignment_error(ResponseError::RebalanceInProgress, ctx);
        }
        self.sync_deadline = None;
        let initial = self.is(GroupState::Empty);
        self.join_timer = Some(if initial {
            let delay = ctx.cfg.initial_rebalance_delay_ms.max(0) as i64;
            JoinTimer::Initial {
                deadline: ctx.now + delay,
                delay_ms: delay,
                remaining_ms: (self.rebalance_timeout_ms() - delay).max(0),
            }
        } else {
            JoinTimer::Regular { deadline: ctx.now + self.rebalance_timeout_ms() }
        });
        self.transition(GroupState::PreparingRebalance, ctx.now);
        if !initial {
            self.try_complete_join(ctx);
        }
    }

    /// Kafka's `tryCompleteJoin` (DelayedJoin.tryComplete): complete as soon as every
    /// member rejoined and no MEMBER_ID_REQUIRED member is outstanding. The initial delay
    /// never completes early.
    pub fn try_complete_join(&mut self, ctx: &mut Ctx) {
        if self.is(GroupState::PreparingRebalance)
            && matches!(self.join_timer, Some(JoinTimer::Regular { .. }))
            && self.has_all_members_joined()
        {
            self.on_complete_join(ctx);
        }
    }

    /// Kafka's `onCompleteJoin`: drop dynamic members that did not rejoin, start the next
    /// generation, answer every parked JoinGroup (the leader gets all members' metadata
    /// for the selected protocol) and start waiting for SyncGroups.
    pub fn on_complete_join(&mut self, ctx: &mut Ctx) {
        self.join_timer = None;
        let gone: Vec<String> = self
            .members
            .values()
            .filter(|m| m.awaiting_join.is_none() && m.group_instance_id.is_none())
            .map(|m| m.member_id.clone())
            .collect();
        for id in gone {
            self.remove_member(&id, ctx);
        }
        if !self.maybe_elect_new_joined_leader() && !self.members.is_empty() {
            // Nobody rejoined (only absent static members left): wait another rebalance
            // timeout; their sessions expire meanwhile.
            self.join_timer =
                Some(JoinTimer::Regular { deadline: ctx.now + self.rebalance_timeout_ms().max(1) });
            return;
        }
        self.init_next_generation(ctx.now);
        if self.is(GroupState::Empty) {
            ctx.persist(self.metadata_record(ctx.group_id));
            return;
        }
        let ids: Vec<String> = self.members.keys().cloned().collect();
        for id in ids {
            let is_leader = self.is_leader(&id);
            let result = self.join_result_for(&id, is_leader);
            let m = self.members.get_mut(&id).expect("member");
            if let Some(p) = m.awaiting_join.take() {
                ctx.respond_join(p, result);
            }
            m.heartbeat_deadline = Some(ctx.now + m.session_timeout_ms as i64);
            m.is_new = false;
            self.pending_sync.insert(id);
        }
        self.sync_deadline = Some(ctx.now + self.rebalance_timeout_ms());
    }

    /// Kafka's `maybeElectNewJoinedLeader`: keep the leader if it rejoined, else pick the
    /// first member that did. False if nobody rejoined.
    fn maybe_elect_new_joined_leader(&mut self) -> bool {
        let Some(leader) = self.leader.clone() else {
            return false;
        };
        if matches!(self.members.get(&leader), Some(m) if m.awaiting_join.is_some()) {
            return true;
        }
        match self.members.values().find(|m| m.awaiting_join.is_some()) {
            Some(m) => {
                self.leader = Some(m.member_id.clone());
                true
            }
            None => false,
        }
    }

    /// Kafka's `initNextGeneration`.
    fn init_next_generation(&mut self, now: i64) {
        self.generation += 1;
        if self.members.is_empty() {
            self.protocol_name = None;
            self.subscribed_topics = None;
            self.transition(GroupState::Empty, now);
        } else {
            self.protocol_name = self.select_protocol();
            self.subscribed_topics = self.compute_subscribed_topics();
            self.transition(GroupState::CompletingRebalance, now);
        }
        self.pending_sync.clear();
        self.sync_deadline = None;
    }
}

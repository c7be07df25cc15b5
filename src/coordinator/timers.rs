//! Timer-driven transitions: session expiry, rebalance timeout, initial rebalance delay,
//! pending-sync timeout, offset retention (what Kafka's purgatories and the offsets
//! cleanup scheduler do).

use super::classic::{ClassicGroup, JoinTimer};
use super::ctx::Ctx;
use super::group::GroupKind;
use super::state::GroupState;
use super::{GroupCoordinator, Output};

/// Bound on transitions per group per tick (guards against zero-length timers looping).
const MAX_ROUNDS: usize = 16;

impl GroupCoordinator {
    /// Run every timer due at or before `now_ms` (ms since the epoch):
    ///
    /// - consumer-protocol (KIP-848) members: session expiry and revocation (rebalance)
    ///   timeout fence the member and bump the group epoch (the group is persisted);
    /// - session expiry (Kafka's `onExpireHeartbeat`): a member that did not heartbeat
    ///   within `session_timeout_ms` is removed and the group rebalances; parked members
    ///   are exempt, except new members after 5 min (`NewMemberJoinTimeoutMs`);
    ///   MEMBER_ID_REQUIRED ids not used within the session timeout are dropped;
    /// - rebalance timeout (`DelayedJoin`): the join completes without the members that
    ///   did not rejoin (dynamic ones are removed);
    /// - initial rebalance delay (`InitialDelayedJoin`);
    /// - pending-sync timeout (`DelayedSync`): members that did not SyncGroup within the
    ///   rebalance timeout are removed and the group rebalances (parked SyncGroups get
    ///   REBALANCE_IN_PROGRESS);
    /// - every `offsets_retention_check_interval_ms`, offset expiry and removal of Empty
    ///   groups without offsets (tombstones persisted).
    ///
    /// Does nothing while loading. Calling it early is harmless.
    pub fn tick(&mut self, now_ms: i64) -> Vec<Output> {
        let mut out = Vec::new();
        if self.loading {
            return out;
        }
        let due: Vec<String> = self
            .timers
            .iter()
            .take_while(|(d, _)| *d <= now_ms)
            .map(|(_, id)| id.clone())
            .collect();
        for id in due {
            if let Some(g) = self.groups.get_mut(&id) {
                let mut ctx = Ctx { cfg: &self.config, group_id: &id, now: now_ms, out: &mut out };
                match &mut g.kind {
                    GroupKind::Classic(c) => c.run_timers(&mut ctx),
                    GroupKind::Consumer(cg) => cg.expire_members(&mut ctx),
                }
            }
            self.reschedule(&id);
        }
        if self.next_retention_check_ms.is_some_and(|t| t <= now_ms) {
            self.expire_offsets(now_ms, &mut out);
            self.next_retention_check_ms =
                Some(now_ms + self.config.offsets_retention_check_interval_ms.max(1));
        }
        out
    }

    /// Earliest time (ms since the epoch) at which [`GroupCoordinator::tick`] has work;
    /// `None` if there is none.
    pub fn next_deadline(&self) -> Option<i64> {
        let timer = self.timers.first().map(|(d, _)| *d);
        match (timer, self.next_retention_check_ms) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

impl ClassicGroup {
    /// Fire every deadline of this group that is due at `ctx.now`.
    fn run_timers(&mut self, ctx: &mut Ctx) {
        for _ in 0..MAX_ROUNDS {
            let mut fired = self.expire_sessions(ctx);
            if self.is(GroupState::PreparingRebalance) {
                if let Some(t) = self.join_timer.filter(|t| t.deadline() <= ctx.now) {
                    fired = true;
                    self.on_join_timer(t, ctx);
                }
            }
            if matches!(self.state, GroupState::CompletingRebalance | GroupState::Stable)
                && !self.pending_sync.is_empty()
                && self.sync_deadline.is_some_and(|d| d <= ctx.now)
            {
                fired = true;
                self.on_expire_pending_sync(ctx);
            }
            if !fired {
                break;
            }
        }
    }

    /// `InitialDelayedJoin.onComplete` / `DelayedJoin` expiry.
    fn on_join_timer(&mut self, t: JoinTimer, ctx: &mut Ctx) {
        match t {
            JoinTimer::Initial { delay_ms, remaining_ms, .. }
                if self.new_member_added && remaining_ms != 0 =>
            {
                self.new_member_added = false;
                let delay = (ctx.cfg.initial_rebalance_delay_ms.max(0) as i64).min(remaining_ms);
                self.join_timer = Some(JoinTimer::Initial {
                    deadline: ctx.now + delay,
                    delay_ms: delay,
                    remaining_ms: (remaining_ms - delay_ms).max(0),
                });
            }
            _ => self.on_complete_join(ctx),
        }
    }

    /// Kafka's `onExpirePendingSync`: drop members that never sent SyncGroup, rebalance.
    fn on_expire_pending_sync(&mut self, ctx: &mut Ctx) {
        let pending: Vec<String> =
            self.members.keys().filter(|id| self.pending_sync.contains(*id)).cloned().collect();
        self.pending_sync.clear();
        self.sync_deadline = None;
        for id in pending {
            self.remove_member(&id, ctx);
        }
        self.prepare_rebalance(ctx);
    }
}

//! Consumer-group member timers: session expiry and revocation (rebalance) timeout
//! (Kafka's `scheduleConsumerGroupSessionTimeout` / `scheduleConsumerGroupRebalanceTimeout`).

use super::super::ctx::Ctx;
use super::group::ConsumerGroup;

impl ConsumerGroup {
    /// Fence every member whose session deadline, or revocation deadline while it still
    /// has partitions to revoke, is at or before `ctx.now` (ms); each bumps the group
    /// epoch. If any was fenced, the group is persisted.
    pub fn expire_members(&mut self, ctx: &mut Ctx) {
        let now = ctx.now;
        let expired: Vec<String> = self
            .members
            .values()
            .filter(|m| {
                m.session_deadline.is_some_and(|d| d <= now)
                    || (m.is_revoking() && m.revocation_deadline.is_some_and(|d| d <= now))
            })
            .map(|m| m.member_id.clone())
            .collect();
        if expired.is_empty() {
            return;
        }
        let had_members = !self.members.is_empty();
        for id in &expired {
            self.fence_member(id);
        }
        self.touch_state(had_members, now);
        ctx.persist(self.record(ctx.group_id));
    }

    /// Arm every member's session timer (`now + session_ms`) and, for members that must
    /// revoke partitions, the revocation timer (after loading).
    pub fn arm_timers(&mut self, session_ms: i64, now: i64) {
        for m in self.members.values_mut() {
            m.session_deadline = Some(now + session_ms);
            m.arm_revocation_timer(now);
        }
    }
}

//! Reconciliation of one member towards its target assignment (Kafka's
//! `CurrentAssignmentBuilder`): revoke first, at the current member epoch; then take the
//! new epoch with every target partition no other member still owns.

use std::collections::{BTreeSet, HashMap};

use uuid::Uuid;

use super::super::assignor::Assignment;
use super::member::{ConsumerMember, MemberState};

/// Whether the member (per its report; `None` = unknown, assumed yes) still owns any of
/// `partitions` (Kafka's `ownsRevokedPartitions`).
fn owns_any(owned: Option<&Assignment>, partitions: &Assignment) -> bool {
    let Some(owned) = owned else { return true };
    owned.iter().any(|(t, ps)| partitions.get(t).is_some_and(|r| ps.iter().any(|p| r.contains(p))))
}

/// Whether `owned` is known and a subset of `assigned` (Kafka's `isSubset`).
pub(super) fn is_subset(owned: Option<&Assignment>, assigned: &Assignment) -> bool {
    let Some(owned) = owned else { return false };
    owned.iter().all(|(t, ps)| {
        ps.is_empty() || assigned.get(t).is_some_and(|a| ps.iter().all(|p| a.contains(p)))
    })
}

/// Kafka's `CurrentAssignmentBuilder.build`: the member's next state towards `target`.
pub(super) fn reconcile(
    m: &ConsumerMember,
    target_epoch: i32,
    target: &Assignment,
    owned: Option<&Assignment>,
    epochs: &HashMap<(Uuid, i32), i32>,
) -> ConsumerMember {
    match m.state {
        MemberState::Stable if m.member_epoch == target_epoch => m.clone(),
        MemberState::UnrevokedPartitions if owns_any(owned, &m.pending_revocation) => m.clone(),
        _ => next_assignment(m, target_epoch, target, owned, epochs),
    }
}

/// Kafka's `CurrentAssignmentBuilder.computeNextAssignment`.
fn next_assignment(
    m: &ConsumerMember,
    target_epoch: i32,
    target: &Assignment,
    owned: Option<&Assignment>,
    epochs: &HashMap<(Uuid, i32), i32>,
) -> ConsumerMember {
    let mut assigned = Assignment::new();
    let mut revoke = Assignment::new();
    let mut pending_assign = Assignment::new();
    let mut unreleased = false;
    let topics: BTreeSet<Uuid> = target.keys().chain(m.assigned.keys()).copied().collect();
    let empty = BTreeSet::new();
    for t in topics {
        let tgt = target.get(&t).unwrap_or(&empty);
        let cur = m.assigned.get(&t).unwrap_or(&empty);
        let keep: BTreeSet<i32> = cur.intersection(tgt).copied().collect();
        let gone: BTreeSet<i32> = cur.difference(&keep).copied().collect();
        let own_revoking = m.pending_revocation.get(&t).unwrap_or(&empty);
        let mut add = BTreeSet::new();
        for &p in tgt.difference(&keep) {
            if epochs.contains_key(&(t, p)) && !own_revoking.contains(&p) {
                unreleased = true;
            } else {
                add.insert(p);
            }
        }
        if !keep.is_empty() {
            assigned.insert(t, keep);
        }
        if !gone.is_empty() {
            revoke.insert(t, gone);
        }
        if !add.is_empty() {
            pending_assign.insert(t, add);
        }
    }
    let mut n = m.clone();
    if !revoke.is_empty() && owns_any(owned, &revoke) {
        // Revoke first, at the current epoch.
        n.state = MemberState::UnrevokedPartitions;
        n.assigned = assigned;
        n.pending_revocation = revoke;
        return n;
    }
    for (t, ps) in pending_assign {
        assigned.entry(t).or_default().extend(ps);
    }
    n.set_epoch(target_epoch);
    n.state = if unreleased { MemberState::UnreleasedPartitions } else { MemberState::Stable };
    n.assigned = assigned;
    n.pending_revocation = Assignment::new();
    n
}

//! Server-side assignors of the consumer group protocol (KIP-848): "uniform" (Kafka's
//! `UniformAssignor`: balanced and sticky) and "range" (Kafka's `RangeAssignor`:
//! per-topic contiguous ranges, co-partitioned across topics).
//!
//! Both are pure functions of the members' subscriptions (resolved to topic ids), the
//! topics' partition counts and, for stickiness, the previous target assignment. Members
//! are taken in member-id order, partitions in (topic name, partition) order, so the
//! result is deterministic.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use uuid::Uuid;

/// topic id -> partitions.
pub(crate) type Assignment = BTreeMap<Uuid, BTreeSet<i32>>;

/// Kafka's `UniformAssignor.UNIFORM_ASSIGNOR_NAME`; the default server assignor.
pub(crate) const UNIFORM: &str = "uniform";
/// Kafka's `RangeAssignor.RANGE_ASSIGNOR_NAME`.
pub(crate) const RANGE: &str = "range";
/// Server assignors a member may ask for (`server_assignor`).
pub(crate) const SUPPORTED: [&str; 2] = [UNIFORM, RANGE];

/// One member as the assignor sees it.
pub(crate) struct MemberSpec<'a> {
    /// The member id.
    pub member_id: &'a str,
    /// Ids of the existing topics the member subscribes to.
    pub topics: BTreeSet<Uuid>,
    /// The member's previous target assignment (stickiness), if any.
    pub current: Option<&'a Assignment>,
}

/// One existing topic: (id, name, partition count).
pub(crate) type TopicSpec = (Uuid, String, i32);

/// Compute the target assignment of every member with `assignor` (unknown names fall
/// back to uniform; callers validate names first).
pub(crate) fn assign(
    assignor: &str,
    members: &[MemberSpec],
    topics: &[TopicSpec],
) -> HashMap<String, Assignment> {
    let mut members: Vec<&MemberSpec> = members.iter().collect();
    members.sort_by(|a, b| a.member_id.cmp(b.member_id));
    let mut topics: Vec<&TopicSpec> = topics.iter().collect();
    topics.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.cmp(&b.0)));
    let owned =
        if assignor == RANGE { range(&members, &topics) } else { uniform(&members, &topics) };
    members
        .iter()
        .zip(owned)
        .map(|(m, parts)| {
            let mut a = Assignment::new();
            for (ti, p) in parts {
                a.entry(topics[ti].0).or_default().insert(p);
            }
            (m.member_id.to_string(), a)
        })
        .collect()
}

/// For each topic (by index), the indices of the members subscribed to it.
fn eligible(members: &[&MemberSpec], topics: &[&TopicSpec]) -> Vec<Vec<usize>> {
    topics
        .iter()
        .map(|t| (0..members.len()).filter(|&i| members[i].topics.contains(&t.0)).collect())
        .collect()
}

/// Range: per topic, its subscribers in member-id order get contiguous ranges; the first
/// `partitions % subscribers` get one extra. Not sticky.
fn range(members: &[&MemberSpec], topics: &[&TopicSpec]) -> Vec<BTreeSet<(usize, i32)>> {
    let mut out = vec![BTreeSet::new(); members.len()];
    for (ti, subs) in eligible(members, topics).into_iter().enumerate() {
        if subs.is_empty() {
            continue;
        }
        let n = topics[ti].2.max(0);
        let k = subs.len() as i32;
        let (quota, extra) = (n / k, n % k);
        let mut start = 0;
        for (i, &m) in subs.iter().enumerate() {
            let len = quota + i32::from((i as i32) < extra);
            out[m].extend((start..start + len).map(|p| (ti, p)));
            start += len;
        }
    }
    out
}

/// Uniform: balanced (member partition counts differ by at most one where subscriptions
/// allow) and sticky (previous targets kept unless that breaks the balance).
///
/// 1. Every member keeps the valid partitions of its previous target.
/// 2. Unowned partitions go, in order, to the least-loaded subscriber (ties: member-id
///    order).
/// 3. While some member has at least two more partitions than a subscriber of one of
///    its topics, its last such partition moves to the least-loaded such subscriber.
fn uniform(members: &[&MemberSpec], topics: &[&TopicSpec]) -> Vec<BTreeSet<(usize, i32)>> {
    let eligible = eligible(members, topics);
    let index: HashMap<Uuid, usize> = topics.iter().enumerate().map(|(i, t)| (t.0, i)).collect();
    let mut out: Vec<BTreeSet<(usize, i32)>> = vec![BTreeSet::new(); members.len()];
    let mut taken: BTreeSet<(usize, i32)> = BTreeSet::new();
    for (mi, m) in members.iter().enumerate() {
        for (tid, parts) in m.current.into_iter().flatten() {
            let Some(&ti) = index.get(tid) else { continue };
            if !m.topics.contains(tid) {
                continue;
            }
            for &p in parts {
                if p >= 0 && p < topics[ti].2 && taken.insert((ti, p)) {
                    out[mi].insert((ti, p));
                }
            }
        }
    }
    for (ti, t) in topics.iter().enumerate() {
        for p in 0..t.2.max(0) {
            if taken.contains(&(ti, p)) {
                continue;
            }
            if let Some(&m) = eligible[ti].iter().min_by_key(|&&m| (out[m].len(), m)) {
                out[m].insert((ti, p));
            }
        }
    }
    // Each move lowers the sum of squared counts, so this terminates.
    loop {
        let mut order: Vec<usize> = (0..members.len()).collect();
        order.sort_by_key(|&i| (std::cmp::Reverse(out[i].len()), i));
        let mut mv = None;
        'search: for &a in &order {
            let count = out[a].len();
            for &(ti, p) in out[a].iter().rev() {
                let best =
                    eligible[ti].iter().filter(|&&b| b != a).min_by_key(|&&b| (out[b].len(), b));
                if let Some(&b) = best {
                    if out[b].len() + 1 < count {
                        mv = Some((a, b, (ti, p)));
                        break 'search;
                    }
                }
            }
        }
        let Some((a, b, tp)) = mv else { break };
        out[a].remove(&tp);
        out[b].insert(tp);
    }
    out
}

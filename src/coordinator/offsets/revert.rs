//! Undoing a commit whose write failed: the offsets in memory go back to what is
//! stored, so that what OffsetFetch shows is what a restart would show (Kafka applies a
//! commit to its offset cache only once the append succeeded; this coordinator applies
//! it at once and undoes it on failure).

use super::super::{GroupCoordinator, GroupRecord};

impl GroupCoordinator {
    /// The committed offset of `group` for `topic`/`partition` as the record that would
    /// put it back: an Offset record, or an OffsetTombstone when there is none. Taken
    /// before a commit, for [`GroupCoordinator::revert_offset`].
    pub fn offset_as_record(&self, group: &str, topic: &str, partition: i32) -> GroupRecord {
        let key = (topic.to_string(), partition);
        match self.groups.get(group).and_then(|g| g.offsets.get(&key)) {
            Some(c) => super::commit::offset_record(group, topic, partition, c),
            None => GroupRecord::OffsetTombstone {
                group: group.to_string(),
                topic: topic.to_string(),
                partition,
            },
        }
    }

    /// The write of `failed` (an Offset record) failed: if the offset in memory is
    /// still the one `failed` set (no later commit replaced it), puts `previous` back
    /// (from [`GroupCoordinator::offset_as_record`] before the commit). True when it
    /// did. Other records are left alone (false).
    pub fn revert_offset(&mut self, failed: &GroupRecord, previous: GroupRecord) -> bool {
        let GroupRecord::Offset { group, topic, partition, .. } = failed else {
            return false;
        };
        // The offset in memory, as a record, is still the one the failed write carried.
        if self.offset_as_record(group, topic, *partition) != *failed {
            return false;
        }
        // What it replaced comes back at its own place in log order.
        let key = (topic.clone(), *partition);
        let replaced = self.groups.get(group).and_then(|g| g.offsets.get(&key)?.replaced_log_order);
        let log_order = replaced.unwrap_or_else(|| self.take_log_order());
        match previous {
            GroupRecord::Offset { .. } => self.load_at(previous, log_order),
            // No offset before: remove it (not with a tombstone's replay, which would
            // delete the partition's pending transactional offsets too).
            _ => {
                if let Some(g) = self.groups.get_mut(group) {
                    g.offsets.remove(&key);
                    if g.offsets.is_empty() && !super::super::load::has_metadata(g) {
                        self.remove_group(group);
                    }
                }
            }
        }
        true
    }
}

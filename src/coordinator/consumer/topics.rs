//! The topic catalog the server-side assignors work from, and re-evaluating consumer
//! groups when it changes.

use std::collections::HashMap;

use uuid::Uuid;

use super::super::group::Group;
use super::super::records::GroupRecord;
use super::super::{GroupCoordinator, Output};

/// Topic name -> (topic id, partition count): the broker's topic catalog.
pub(crate) type TopicCatalog = HashMap<String, (Uuid, i32)>;

impl GroupCoordinator {
    /// Replace the topic catalog the server-side assignors work from (topic name ->
    /// (topic id, partition count)); the shard calls this once after
    /// `set_loading(false, _)` and then whenever topics are created, deleted or grow.
    /// Consumer groups whose subscribed topics changed get a new group epoch and target
    /// assignment (persisted: execute the returned [`Output::Persist`]s); members pick it
    /// up on their next heartbeat. Committed offsets of topics that disappeared from
    /// the catalog, or came back with a new id, are deleted (tombstones persisted), as
    /// Kafka's coordinator does on partition deletion (`onPartitionsDeleted`): a topic
    /// deleted and created again starts without the old offsets. While loading, the
    /// catalog is only stored (no group is re-evaluated until the next call). Without a catalog, members subscribe to
    /// topics that do not exist and get no partitions.
    pub fn set_topic_metadata(&mut self, topics: TopicCatalog, now_ms: i64) -> Vec<Output> {
        // Topics that were deleted (or deleted and recreated: a new id) since the last call.
        let mut gone: Vec<String> = self
            .topics
            .iter()
            .filter(|(name, (id, _))| topics.get(*name).map(|(new_id, _)| new_id) != Some(id))
            .map(|(name, _)| name.clone())
            .collect();
        gone.sort();
        self.topics = topics;
        let mut out = Vec::new();
        if self.loading {
            return out;
        }
        self.remove_offsets_of_deleted_topics(&gone, &mut out);
        let mut ids: Vec<String> = self
            .groups
            .iter()
            .filter(|(_, g)| g.as_consumer().is_some())
            .map(|(id, _)| id.clone())
            .collect();
        ids.sort();
        for id in ids {
            let before = self.consumer_snapshot(&id);
            let catalog = &self.topics;
            if let Some(cg) = self.groups.get_mut(&id).and_then(Group::as_consumer_mut) {
                let meta = cg.compute_subscription_metadata(catalog);
                if meta != cg.subscription_metadata {
                    cg.subscription_metadata = meta;
                    cg.bump();
                }
            }
            self.after_consumer_change(&id, before, now_ms, &mut out);
        }
        out
    }

    /// Deletes every group's committed offsets of the `gone` topics, persisting a
    /// tombstone for each. Groups left Empty without offsets stay until the periodic
    /// cleanup (as after OffsetDelete).
    fn remove_offsets_of_deleted_topics(&mut self, gone: &[String], out: &mut Vec<Output>) {
        if gone.is_empty() {
            return;
        }
        let mut ids: Vec<String> = self.groups.keys().cloned().collect();
        ids.sort();
        for id in ids {
            let Some(g) = self.groups.get_mut(&id) else { continue };
            // Committed and pending transactional offsets alike (Kafka's
            // `onPartitionsDeleted`), one tombstone per partition.
            let mut keys: Vec<(String, i32)> =
                g.offsets.keys().filter(|(t, _)| gone.contains(t)).cloned().collect();
            keys.extend(
                self.pending.partitions_of(&id).into_iter().filter(|(t, _)| gone.contains(t)),
            );
            keys.sort();
            keys.dedup();
            for key in keys {
                g.offsets.remove(&key);
                self.pending.remove_partition(&id, &key.0, key.1);
                out.push(Output::Persist(GroupRecord::OffsetTombstone {
                    group: id.clone(),
                    topic: key.0,
                    partition: key.1,
                }));
            }
        }
    }
}

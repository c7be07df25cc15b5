//! The topic catalog the server-side assignors work from, and re-evaluating consumer
//! groups when it changes.

use std::collections::HashMap;

use uuid::Uuid;

use super::super::group::Group;
use super::super::{GroupCoordinator, Output};

/// Topic name -> (topic id, partition count): the broker's topic catalog.
pub(crate) type TopicCatalog = HashMap<String, (Uuid, i32)>;

impl GroupCoordinator {
    /// Replace the topic catalog the server-side assignors work from (topic name ->
    /// (topic id, partition count)); the shard calls this once after
    /// `set_loading(false, _)` and then whenever topics are created, deleted or grow.
    /// Consumer groups whose subscribed topics changed get a new group epoch and target
    /// assignment (persisted: execute the returned [`Output::Persist`]s); members pick it
    /// up on their next heartbeat. While loading, the catalog is only stored (no group
    /// is re-evaluated until the next call). Without a catalog, members subscribe to
    /// topics that do not exist and get no partitions.
    pub fn set_topic_metadata(&mut self, topics: TopicCatalog, now_ms: i64) -> Vec<Output> {
        self.topics = topics;
        let mut out = Vec::new();
        if self.loading {
            return out;
        }
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
}

//! [`Shard`]: everything one core owns.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;

use futures_channel::oneshot;
use glommio::channels::channel_mesh::Senders;
use uuid::Uuid;

use super::control::Control;
use super::groups::GroupHost;
use super::messages::{
    CatalogChanged, ControlRequest, DataRequest, Reply, ShardId, ShardMessage, CONTROL_SHARD,
};
use crate::config::Config;
use crate::error::ResponseError;
use crate::log::cache::{ShardCache, SharedCache};
use crate::log::{LogConfig, PartitionLog};
use crate::metadata::Catalog;
use crate::topic_config::EffectiveTopicConfig;

/// One partition's log as its owning shard holds it. Lives on that shard only.
pub struct OwnedLog {
    /// Topic id at the time the log was opened; a recreated topic gets a new log.
    pub topic_id: Uuid,
    pub log: Rc<PartitionLog>,
}

/// The state of one shard. Lives on exactly one core (its glommio executor) and is
/// shared by that core's connections and tasks through an `Rc`.
pub struct Shard {
    /// This shard's index in the channel mesh (0 is the control shard).
    pub id: ShardId,
    /// Fired by this shard's listener once it stops accepting (shutdown): its
    /// connections end their read loops and Fetch long polls answer at once.
    pub stopping: crate::shutdown::LocalStop,
    pub nr_shards: usize,
    pub config: Arc<Config>,
    /// The authorizer the flags configure (`--authorizer`); `None` when off. It decides
    /// from this shard's copy of the catalog's ACLs (`Catalog::acls`), so a check never
    /// leaves the core.
    pub authorizer: Option<crate::security::acl::Authorizer>,
    /// The client quota rates of this shard's connections ([`crate::quota`]), measured
    /// against the quotas of this shard's catalog copy.
    pub quotas: crate::quota::ShardQuotas,
    /// This core's read-only copy of the topic catalog (the shard table).
    catalog: RefCell<Rc<Catalog>>,
    /// The partition logs this shard owns, by (topic, partition).
    logs: RefCell<HashMap<(String, i32), Rc<OwnedLog>>>,
    senders: Senders<ShardMessage>,
    /// The group coordinator for the groups this shard coordinates.
    pub groups: Rc<GroupHost>,
    /// The transaction coordinator for the transactional ids this shard coordinates.
    pub txns: Rc<super::transactions::TxnHost>,
    /// Catalog writer and producer-id allocator; `Some` on [`CONTROL_SHARD`] only.
    pub control: Option<Control>,
    /// The batch cache shared by the data partitions this shard owns (its share of
    /// `--cache-bytes`).
    pub cache: SharedCache,
    /// Owned partitions whose log could not be opened (e.g. file descriptors exhausted,
    /// a file where the directory should be), with the error; answered with
    /// KAFKA_STORAGE_ERROR and opened again on use, see [`Shard::open_failure`].
    open_failures: RefCell<HashMap<(String, i32), String>>,
    /// When the last new try at opening failed partitions started.
    last_reopen: std::cell::Cell<Option<std::time::Instant>>,
    /// One [`Shard::apply_catalog`] at a time: a catalog change and a new try at opening
    /// failed partitions must not both open the same log.
    applying: glommio::sync::Semaphore,
}

/// Least time between two tries at opening the partitions that failed to open.
pub const REOPEN_BACKOFF: std::time::Duration = std::time::Duration::from_secs(1);

/// Partition logs a shard closes at once at shutdown.
const CLOSE_CONCURRENCY: usize = 32;

impl Shard {
    /// Builds the shard state from the catalog on disk, opening every log it owns.
    pub async fn start(
        id: ShardId,
        nr_shards: usize,
        config: Arc<Config>,
        senders: Senders<ShardMessage>,
    ) -> std::io::Result<Rc<Shard>> {
        let mut catalog = Catalog::load(&config.data_dir)?;
        catalog.fit_to_shards(nr_shards);
        let control = if id == CONTROL_SHARD {
            Some(Control::load(&config.data_dir, &catalog)?)
        } else {
            None
        };
        // Catalog::init chose the placement before the shards started; a catalog without
        // one (tests that skip init) uses Kafka's.
        let placement =
            catalog.offsets_placement.unwrap_or(crate::metadata::OffsetsPlacement::Kafka);
        let groups = Rc::new(GroupHost::open(&config, id, nr_shards, placement).await?);
        let txns = Rc::new(super::transactions::TxnHost::open(&config, id, nr_shards).await?);
        let cache_bytes = config.cache_bytes_per_shard(nr_shards);
        tracing::debug!(shard = id, cache_bytes, "batch cache budget");
        let cache =
            ShardCache::for_shard(cache_bytes, config.partition_cache_bytes.unwrap_or(usize::MAX));
        let shard = Rc::new(Shard {
            id,
            nr_shards,
            authorizer: config.authorizer(),
            quotas: crate::quota::ShardQuotas::new(config.quota_rate()),
            config,
            catalog: RefCell::new(Rc::new(Catalog::default())),
            logs: RefCell::new(HashMap::new()),
            senders,
            groups,
            txns,
            control,
            cache,
            open_failures: RefCell::new(HashMap::new()),
            last_reopen: std::cell::Cell::new(None),
            applying: glommio::sync::Semaphore::new(1),
            stopping: Default::default(),
        });
        shard.apply_catalog(catalog).await;
        Ok(shard)
    }

    /// This core's current catalog copy.
    pub fn catalog(&self) -> Rc<Catalog> {
        self.catalog.borrow().clone()
    }

    /// KAFKA_STORAGE_ERROR if this shard owns `topic`/`partition` but could not open its
    /// log. Starts another try at opening every such partition (at most once per
    /// [`REOPEN_BACKOFF`]), so a partition that failed for a passing reason (file
    /// descriptors) serves again once it can, without a restart.
    pub fn open_failure(self: &Rc<Self>, topic: &str, partition: i32) -> Option<ResponseError> {
        if !self.open_failures.borrow().contains_key(&(topic.to_string(), partition)) {
            return None;
        }
        self.start_reopen();
        Some(ResponseError::KafkaStorageError)
    }

    /// The log to append to `topic`/`partition` ([`Shard::log`]). When its last write
    /// failed (say, the disk was full) the log answers appends with KAFKA_STORAGE_ERROR,
    /// and this starts a new try at opening it (at most once per [`REOPEN_BACKOFF`]):
    /// recovery from the files rebuilds what was written, and appends resume once
    /// writes succeed again.
    pub fn writable_log(self: &Rc<Self>, topic: &str, partition: i32) -> Option<Rc<OwnedLog>> {
        let owned = self.log(topic, partition)?;
        if owned.log.write_failed() {
            self.start_reopen();
        }
        Some(owned)
    }

    /// Waits for a catalog change or a log reopen in flight to end, and keeps new ones
    /// out while the returned permit lives. What changes a log's files from outside its
    /// own tasks (DeleteRecords' log start checkpoint) holds it, so that a reopen never
    /// loads the files half-way through such a change: the new instance sees all of it
    /// or the change is made on the new instance.
    pub async fn hold_logs(&self) -> Option<glommio::sync::Permit<'_>> {
        self.applying.acquire_permit(1).await.ok()
    }

    /// Starts another try at opening the partitions whose log failed to open or to
    /// write, unless one started less than [`REOPEN_BACKOFF`] ago.
    fn start_reopen(self: &Rc<Self>) {
        let due = self.last_reopen.get().is_none_or(|t| t.elapsed() >= REOPEN_BACKOFF);
        if due {
            self.last_reopen.set(Some(std::time::Instant::now()));
            let shard = self.clone();
            glommio::spawn_local(async move { shard.reopen_failed().await }).detach();
        }
    }

    /// The owned partitions whose log could not be opened, with the error.
    pub fn open_failures(&self) -> Vec<((String, i32), String)> {
        self.open_failures.borrow().iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }

    /// The owned log of `topic`/`partition`, if this shard owns it.
    pub fn log(&self, topic: &str, partition: i32) -> Option<Rc<OwnedLog>> {
        self.logs.borrow().get(&(topic.to_string(), partition)).cloned()
    }

    /// Every data partition log this shard owns, with its (topic, partition).
    pub fn owned_logs(&self) -> Vec<((String, i32), Rc<OwnedLog>)> {
        self.logs.borrow().iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }

    /// The log to read `topic`/`partition` from on this shard: an owned data partition,
    /// or for the internal topic `__consumer_offsets` the group log of that offsets
    /// partition (created empty on first use; `None` if it cannot be created or another
    /// shard coordinates it).
    pub async fn readable_log(&self, topic: &str, partition: i32) -> Option<Rc<PartitionLog>> {
        if topic != crate::metadata::OFFSETS_TOPIC {
            return self.log(topic, partition).map(|o| o.log.clone());
        }
        let p =
            usize::try_from(partition).ok().filter(|p| *p % self.nr_shards.max(1) == self.id)?;
        match self.groups.log_for(p).await {
            Ok(log) => Some(log),
            Err(e) => {
                tracing::error!(partition, error = %e, "opening an offsets partition failed");
                None
            }
        }
    }

    /// [`Shard::readable_log`] without creating anything (for long polls).
    pub fn existing_readable_log(&self, topic: &str, partition: i32) -> Option<Rc<PartitionLog>> {
        if topic != crate::metadata::OFFSETS_TOPIC {
            return self.log(topic, partition).map(|o| o.log.clone());
        }
        self.groups.existing_log(usize::try_from(partition).ok()?)
    }

    /// Directory of a partition's segments: `<data-dir>/<topic>-<partition>`.
    pub fn partition_dir(&self, topic: &str, partition: i32) -> PathBuf {
        self.config.data_dir.join(format!("{topic}-{partition}"))
    }

    /// Sends a data-plane request to shard `to` (a partition's owner or a group's
    /// coordinator). A request for this shard itself is executed directly (an append
    /// gets its offsets before this returns); one for another shard is queued on that
    /// shard's channel from this one, which is FIFO and executed in order by
    /// [`super::serve::serve_mesh`]. Either way appends issued in order by one task are
    /// written in that order. Awaits only room in the mesh channel, never the other
    /// shard's work: the reply comes on the request's own channel.
    pub async fn send(self: &Rc<Self>, to: ShardId, request: DataRequest) {
        self.deliver(to, ShardMessage::Data(request)).await;
    }

    /// Sends a control-plane request (built around a fresh reply channel) to the
    /// control shard and returns the wait for its answer, which yields `Err` when the
    /// control shard dropped it (shutdown).
    pub async fn ask_control<T>(
        self: &Rc<Self>,
        build: impl FnOnce(Reply<T>) -> ControlRequest,
    ) -> oneshot::Receiver<T> {
        let (tx, rx) = oneshot::channel();
        self.deliver(CONTROL_SHARD, ShardMessage::Control(build(tx))).await;
        rx
    }

    /// Tells shard `to` about a new catalog (control shard only, see
    /// [`Control`]).
    pub(super) async fn send_catalog(self: &Rc<Self>, to: ShardId, change: CatalogChanged) {
        self.deliver(to, ShardMessage::Catalog(change)).await;
    }

    async fn deliver(self: &Rc<Self>, to: ShardId, message: ShardMessage) {
        if to == self.id {
            super::serve::execute(self, message).await;
        } else if let Err(message) = {
            crate::metrics::with(|m| m.mesh_sent(to));
            self.senders.send_to(to, message).await
        } {
            // The mesh only closes at shutdown; the dropped reply sender tells the
            // waiting task (it sees a cancelled reply and answers with an error).
            tracing::debug!(to, ?message, "mesh send failed during shutdown");
        }
    }

    /// Replaces this shard's catalog copy (if newer) and opens or deletes the logs
    /// whose ownership changed. Logs are deleted before new ones open, so a topic
    /// deleted and recreated under the same name starts empty.
    pub async fn apply_catalog(self: &Rc<Self>, catalog: Catalog) {
        let _one_at_a_time = self.applying.acquire_permit(1).await;
        self.apply_catalog_now(catalog).await;
    }

    /// Tries again to open the owned partitions that failed to open, against the
    /// catalog current when its turn comes.
    async fn reopen_failed(self: &Rc<Self>) {
        let _one_at_a_time = self.applying.acquire_permit(1).await;
        let catalog = (*self.catalog()).clone();
        self.apply_catalog_now(catalog).await;
    }

    async fn apply_catalog_now(self: &Rc<Self>, catalog: Catalog) {
        if catalog.version < self.catalog.borrow().version && !self.logs.borrow().is_empty() {
            return;
        }
        let catalog = Rc::new(catalog);
        *self.catalog.borrow_mut() = catalog.clone();
        // Deleted topics' counters go with them (a topic created again starts at zero).
        crate::metrics::with(|m| m.retain_topics(|name| catalog.topic(name).is_some()));

        let stale: Vec<((String, i32), Rc<OwnedLog>)> = self
            .logs
            .borrow()
            .iter()
            .filter(|((topic, p), owned)| {
                let t = catalog.topic(topic);
                !(t.map(|t| t.id) == Some(owned.topic_id)
                    && catalog.owner(topic, *p) == Some(self.id))
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (key, owned) in stale {
            self.logs.borrow_mut().remove(&key);
            let still_exists = catalog.topic(&key.0).map(|t| t.id) == Some(owned.topic_id);
            let result =
                if still_exists { owned.log.close().await } else { owned.log.delete().await };
            if let Err(e) = result {
                tracing::warn!(
                    topic = %key.0,
                    partition = key.1,
                    error = %e,
                    "closing a removed partition log failed"
                );
            }
        }

        // Failures of partitions this shard no longer owns (or of deleted topics) go.
        self.open_failures.borrow_mut().retain(|(topic, p), _| {
            catalog.topic(topic).is_some() && catalog.owner(topic, *p) == Some(self.id)
        });
        // The internal topic's partitions are the group host's logs, not data logs.
        for t in catalog.topics.values().filter(|t| !crate::metadata::is_internal(&t.name)) {
            let broker = crate::broker_config::BrokerDefaults::of(&self.config, &catalog);
            let topic_config = EffectiveTopicConfig::resolve(&t.configs, &broker);
            for (p, &owner) in t.partition_shards.iter().enumerate() {
                let key = (t.name.clone(), p as i32);
                if owner != self.id {
                    continue;
                }
                let open = self.logs.borrow().get(&key).cloned();
                if let Some(owned) = open.as_ref().filter(|o| o.log.write_failed()) {
                    self.reopen_after_write_failure(key, owned, &topic_config).await;
                    continue;
                }
                if let Some(owned) = open {
                    // AlterConfigs: the open log follows its topic's configs.
                    if owned.log.update_config(&self.log_config(&topic_config)) {
                        tracing::info!(topic = %t.name, partition = p, config = ?owned.log.live_config(), "topic configs changed");
                    }
                    continue;
                }
                let dir = self.partition_dir(&t.name, p as i32);
                match PartitionLog::open(dir, self.log_config(&topic_config)).await {
                    Ok(log) => {
                        if self.open_failures.borrow_mut().remove(&key).is_some() {
                            tracing::info!(topic = %t.name, partition = p, "partition log opened on a new try");
                        }
                        let owned = OwnedLog { topic_id: t.id, log };
                        self.logs.borrow_mut().insert(key, Rc::new(owned));
                    }
                    Err(e) => {
                        let first =
                            self.open_failures.borrow_mut().insert(key, e.to_string()).is_none();
                        if first {
                            tracing::error!(
                                topic = %t.name,
                                partition = p,
                                error = %e,
                                "opening partition log failed; KAFKA_STORAGE_ERROR until it opens"
                            )
                        }
                    }
                }
            }
        }
        self.groups.set_topics(&catalog).await;
    }

    /// Opens again the log of `key`, whose last write failed: the failed instance is
    /// closed first (its zero fill settles, its files stay readable), then recovery
    /// rebuilds the log from disk, and the new instance replaces it. If the open fails
    /// (the disk is still full), the failed instance stays: fetches keep reading it and
    /// appends keep getting KAFKA_STORAGE_ERROR until a later try succeeds.
    async fn reopen_after_write_failure(
        &self,
        key: (String, i32),
        failed: &Rc<OwnedLog>,
        topic_config: &EffectiveTopicConfig,
    ) {
        let _ = failed.log.close().await;
        let dir = self.partition_dir(&key.0, key.1);
        match PartitionLog::open(dir, self.log_config(topic_config)).await {
            Ok(log) => {
                if crate::log::once_a_minute(log.dir(), "opened again") {
                    tracing::info!(
                        topic = %key.0,
                        partition = key.1,
                        high_watermark = log.high_watermark(),
                        "partition log opened again after a write failure; appends resume"
                    );
                }
                let owned = OwnedLog { topic_id: failed.topic_id, log };
                self.logs.borrow_mut().insert(key, Rc::new(owned));
            }
            Err(e) => tracing::warn!(
                topic = %key.0,
                partition = key.1,
                error = %e,
                "opening a partition log again after a write failure failed; retrying on the next append"
            ),
        }
    }

    fn log_config(&self, topic: &EffectiveTopicConfig) -> LogConfig {
        LogConfig {
            segment_bytes: topic.segment_bytes,
            index_interval_bytes: topic.index_interval_bytes,
            flush: self.config.flush,
            flush_interval_ms: self.config.flush_interval_ms,
            cache_bytes: self.config.partition_cache_bytes.unwrap_or(usize::MAX),
            shard_cache: Some(self.cache.clone()),
            log_append_time: topic.log_append_time,
            zero_fill_max_write: self.config.zero_fill_max_write_bytes,
            recovery_point_bytes: self.config.recovery_point_bytes,
            write_from_arena: self.config.write_from_arena,
            segment_ms: topic.segment_ms,
        }
    }

    /// Closes every log this shard owns (flush, fdatasync, truncate to size),
    /// the offsets partitions included.
    pub async fn close_logs(&self) {
        // After a catalog change or a reopen in flight, so none opens a log behind us.
        let _one_at_a_time = self.applying.acquire_permit(1).await;
        self.groups.close().await;
        self.txns.close().await;
        let logs: Vec<_> = self.logs.borrow_mut().drain().collect();
        if logs.is_empty() {
            return;
        }
        // Several at once, so that their fdatasyncs and truncates overlap; the files they
        // replace are made durable by one syncfs after the last.
        use futures_util::stream::{self, StreamExt};
        stream::iter(logs)
            .map(|((topic, p), owned)| async move {
                if let Err(e) = owned.log.close_deferring_sync().await {
                    tracing::warn!(%topic, partition = p, error = %e, "closing partition log failed");
                }
            })
            .buffer_unordered(CLOSE_CONCURRENCY)
            .collect::<()>()
            .await;
        let dir = self.config.data_dir.clone();
        let synced = glommio::executor()
            .spawn_blocking(move || {
                let d = std::fs::File::open(&dir)?;
                nix::unistd::syncfs(std::os::fd::AsRawFd::as_raw_fd(&d))
                    .map_err(std::io::Error::from)
            })
            .await;
        if let Err(e) = synced {
            tracing::warn!(error = %e, "syncfs of the data dir after closing the logs failed");
        }
    }

    /// Closes this shard's side of the mesh (shutdown).
    pub fn close_mesh(&self) {
        self.senders.close();
    }
}

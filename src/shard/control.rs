//! The control plane, run on the control shard (0) only: the authoritative topic catalog (its
//! ACLs and client quotas included) and the producer-id allocator. Changes are serialized by a semaphore, persisted, then
//! broadcast to every shard; the caller's reply waits until all shards applied them.

use std::cell::{Cell, RefCell};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

use glommio::sync::Semaphore;

use super::messages::ConfigTarget;
use super::messages::{CatalogChanged, NewTopic};
use super::state::Shard;
use crate::config_ops::{self, ConfigChange};
use crate::error::{KafkaResult, ResponseError};
use crate::metadata::{Catalog, CatalogError, TopicMeta};
use crate::security::acl::{AclBinding, AclBindingFilter};

/// Producer ids are reserved on disk in blocks of this many, so a restart never
/// hands out an id twice.
const PRODUCER_ID_BLOCK: i64 = 1000;

/// Shard 0's control-plane state. Lives on shard 0's core only.
pub struct Control {
    data_dir: PathBuf,
    catalog: RefCell<Catalog>,
    changes: Semaphore,
    next_producer_id: Cell<i64>,
    reserved_until: Cell<i64>,
}

impl Control {
    /// Loads the producer-id reservation; `catalog` is the one just read from disk.
    pub fn load(data_dir: &Path, catalog: &Catalog) -> std::io::Result<Control> {
        std::fs::create_dir_all(data_dir.join("meta"))?;
        let reserved = match std::fs::read_to_string(Self::producer_id_path(data_dir)) {
            Ok(s) => s.trim().parse::<i64>().unwrap_or(0),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
            Err(e) => return Err(e),
        };
        Ok(Control {
            data_dir: data_dir.to_path_buf(),
            catalog: RefCell::new(catalog.clone()),
            changes: Semaphore::new(1),
            next_producer_id: Cell::new(reserved),
            reserved_until: Cell::new(reserved),
        })
    }

    fn producer_id_path(data_dir: &Path) -> PathBuf {
        data_dir.join("meta").join("producer_ids")
    }

    /// A producer id never handed out before, by this or an earlier run.
    /// Errors with KAFKA_STORAGE_ERROR when the reservation cannot be saved.
    pub fn allocate_producer_id(&self) -> KafkaResult<i64> {
        let id = self.next_producer_id.get();
        if id >= self.reserved_until.get() {
            let until = id + PRODUCER_ID_BLOCK;
            let path = Self::producer_id_path(&self.data_dir);
            let tmp = path.with_extension("tmp");
            let write = || -> std::io::Result<()> {
                let mut f = std::fs::File::create(&tmp)?;
                f.write_all(until.to_string().as_bytes())?;
                f.sync_all()?;
                std::fs::rename(&tmp, &path)?;
                // Without this a machine crash may bring back the old reservation, and
                // producer ids already handed out would be handed out again.
                crate::log::segment::sync_parent_dir(&path)
            };
            if let Err(e) = write() {
                tracing::error!(error = %e, "saving the producer id reservation failed");
                return Err(ResponseError::KafkaStorageError);
            }
            self.reserved_until.set(until);
        }
        self.next_producer_id.set(id + 1);
        Ok(id)
    }

    /// CreateTopics: validates all, creates the valid ones unless `validate_only`.
    pub async fn create_topics(
        &self,
        shard: &Rc<Shard>,
        topics: Vec<NewTopic>,
        validate_only: bool,
    ) -> Vec<Result<TopicMeta, CatalogError>> {
        let _permit = self.changes.acquire_permit(1).await;
        let mut next = self.catalog.borrow().clone();
        let results: Vec<_> = topics
            .iter()
            .map(|t| {
                if validate_only {
                    next.check_new_topic(&t.name, t.partitions).map(|_| TopicMeta {
                        name: t.name.clone(),
                        id: uuid::Uuid::nil(),
                        partition_shards: vec![0; t.partitions as usize],
                        configs: t.configs.clone(),
                    })
                } else if let Some(shards) = &t.shards {
                    next.create_topic_on(&t.name, shards, t.configs.clone(), shard.nr_shards)
                        .cloned()
                } else {
                    next.create_topic(&t.name, t.partitions, t.configs.clone(), shard.nr_shards)
                        .cloned()
                }
            })
            .collect();
        if !validate_only && results.iter().any(Result::is_ok) {
            if let Err(e) = self.commit(shard, next).await {
                return failed(results, e);
            }
        }
        results
    }

    /// DeleteTopics by name.
    pub async fn delete_topics(
        &self,
        shard: &Rc<Shard>,
        names: Vec<String>,
    ) -> Vec<Result<TopicMeta, CatalogError>> {
        let _permit = self.changes.acquire_permit(1).await;
        let mut next = self.catalog.borrow().clone();
        let results: Vec<_> = names.iter().map(|n| next.delete_topic(n)).collect();
        if results.iter().any(Result::is_ok) {
            if let Err(e) = self.commit(shard, next).await {
                return failed(results, e);
            }
        }
        results
    }

    /// CreatePartitions: grows each topic to the given total count.
    pub async fn create_partitions(
        &self,
        shard: &Rc<Shard>,
        topics: Vec<(String, i32, Option<crate::metadata::AssignedPartitions>)>,
        validate_only: bool,
    ) -> Vec<Result<(), CatalogError>> {
        let _permit = self.changes.acquire_permit(1).await;
        let mut next = self.catalog.borrow().clone();
        let results: Vec<_> = topics
            .iter()
            .map(|(n, count, assigned)| {
                next.create_partitions_assigned(n, *count, assigned.as_ref(), shard.nr_shards)
            })
            .collect();
        if !validate_only && results.iter().any(Result::is_ok) {
            if let Err(e) = self.commit(shard, next).await {
                return failed(results, e);
            }
        }
        results
    }

    /// AlterConfigs / IncrementalAlterConfigs: applies each change to its target in the
    /// authoritative catalog (a topic's overrides with [`config_ops::apply`], this
    /// node's or the cluster-default dynamic broker configs with
    /// [`config_ops::BROKER`]), then commits once if anything changed (unless
    /// `validate_only`). One result per change, in order: UNKNOWN_TOPIC_OR_PARTITION,
    /// INVALID_CONFIG, INVALID_REQUEST, or KAFKA_STORAGE_ERROR when the catalog cannot
    /// be persisted.
    pub async fn alter_configs(
        &self,
        shard: &Rc<Shard>,
        changes: Vec<(ConfigTarget, ConfigChange)>,
        validate_only: bool,
    ) -> Vec<Result<(), CatalogError>> {
        let _permit = self.changes.acquire_permit(1).await;
        let mut next = self.catalog.borrow().clone();
        let results: Vec<_> = changes
            .iter()
            .map(|(target, change)| match target {
                ConfigTarget::Topic(name) if crate::metadata::is_internal(name) => {
                    Err(CatalogError::InvalidRequest(format!(
                        "The configs of the internal topic {name} are set by the broker \
                         (--offsets-topic-segment-bytes); they cannot be altered"
                    )))
                }
                ConfigTarget::Topic(name) => {
                    let current = next.topic(name).map(|t| t.configs.clone()).ok_or_else(|| {
                        CatalogError::UnknownTopic(format!("Topic {name} does not exist."))
                    })?;
                    let configs = config_ops::apply(&current, change)?;
                    next.set_topic_configs(name, configs)
                }
                ConfigTarget::Broker => {
                    let configs = config_ops::apply_to(
                        &config_ops::BROKER,
                        &next.broker_node_configs,
                        change,
                    )?;
                    next.broker_node_configs = configs;
                    Ok(())
                }
                ConfigTarget::BrokerDefault => {
                    let configs = config_ops::apply_to(
                        &config_ops::BROKER,
                        &next.broker_default_configs,
                        change,
                    )?;
                    next.broker_default_configs = configs;
                    Ok(())
                }
            })
            .collect();
        if !validate_only && results.iter().any(Result::is_ok) {
            if let Err(e) = self.commit(shard, next).await {
                return failed(results, e);
            }
        }
        results
    }

    /// AlterUserScramCredentials: applies the changes to the authoritative catalog's
    /// credentials ([`crate::security::credentials::alter`]) and commits once if any
    /// succeeded; when the catalog cannot be persisted every success becomes
    /// KAFKA_STORAGE_ERROR.
    pub async fn alter_scram_credentials(
        &self,
        shard: &Rc<Shard>,
        deletions: Vec<crate::security::credentials::Deletion>,
        upsertions: Vec<crate::security::credentials::Upsertion>,
    ) -> Vec<crate::security::credentials::AlterResult> {
        let _permit = self.changes.acquire_permit(1).await;
        let mut next = self.catalog.borrow().clone();
        let mut results = crate::security::credentials::alter(
            &mut next.scram_credentials,
            &deletions,
            &upsertions,
        );
        if results.iter().any(|(_, e)| e.is_none()) {
            if let Err(e) = self.commit(shard, next).await {
                for (_, error) in results.iter_mut().filter(|(_, e)| e.is_none()) {
                    *error = Some((ResponseError::KafkaStorageError, e.message().to_string()));
                }
            }
        }
        results
    }

    /// CreateAcls: validates each binding ([`AclBinding::validate`]: INVALID_REQUEST)
    /// and adds the valid ones (an existing one is left as is, as Kafka does), then
    /// commits once. One result per binding, in order.
    pub async fn create_acls(
        &self,
        shard: &Rc<Shard>,
        bindings: Vec<AclBinding>,
    ) -> Vec<Result<(), CatalogError>> {
        let _permit = self.changes.acquire_permit(1).await;
        let mut next = self.catalog.borrow().clone();
        let results: Vec<_> = bindings
            .into_iter()
            .map(|b| {
                b.validate().map_err(CatalogError::InvalidRequest)?;
                next.acls.insert(b);
                Ok(())
            })
            .collect();
        if next.acls != self.catalog.borrow().acls {
            if let Err(e) = self.commit(shard, next).await {
                return failed(results, e);
            }
        }
        results
    }

    /// DeleteAcls: for each filter in order, removes the bindings it matches (a filter
    /// with an unknown element gets INVALID_REQUEST: [`AclBindingFilter::validate`]),
    /// then commits once. A binding two filters match is reported by both, as in Kafka
    /// (each filter is matched against the ACLs as they were before the request).
    pub async fn delete_acls(
        &self,
        shard: &Rc<Shard>,
        filters: Vec<AclBindingFilter>,
    ) -> Vec<Result<Vec<AclBinding>, CatalogError>> {
        let _permit = self.changes.acquire_permit(1).await;
        let mut next = self.catalog.borrow().clone();
        let before = next.acls.clone();
        let results: Vec<_> = filters
            .iter()
            .map(|f| {
                f.validate().map_err(CatalogError::InvalidRequest)?;
                let removed: Vec<AclBinding> =
                    before.iter().filter(|b| f.matches(b)).cloned().collect();
                for b in &removed {
                    next.acls.remove(b);
                }
                Ok(removed)
            })
            .collect();
        if next.acls != self.catalog.borrow().acls {
            if let Err(e) = self.commit(shard, next).await {
                return failed(results, e);
            }
        }
        results
    }

    /// AlterClientQuotas: applies the alterations to the authoritative catalog's quotas
    /// ([`crate::quota::alter::alter`]) and, unless `validate_only`, commits once if
    /// they changed anything. One result per entity: INVALID_REQUEST with Kafka's
    /// message, or KAFKA_STORAGE_ERROR for every success when the catalog cannot be
    /// persisted.
    pub async fn alter_client_quotas(
        &self,
        shard: &Rc<Shard>,
        alterations: Vec<crate::quota::alter::Alteration>,
        validate_only: bool,
    ) -> Vec<crate::quota::alter::ControlResult> {
        let _permit = self.changes.acquire_permit(1).await;
        let mut next = self.catalog.borrow().clone();
        let mut results: Vec<_> = crate::quota::alter::alter(&mut next.client_quotas, &alterations)
            .into_iter()
            .map(|(entity, e)| (entity, e.map(|m| (ResponseError::InvalidRequest, m))))
            .collect();
        if !validate_only && next.client_quotas != self.catalog.borrow().client_quotas {
            if let Err(e) = self.commit(shard, next).await {
                for (_, error) in results.iter_mut().filter(|(_, e)| e.is_none()) {
                    *error = Some((ResponseError::KafkaStorageError, e.message().to_string()));
                }
            }
        }
        results
    }

    /// Persists `next` as the new catalog and waits until every shard applied it.
    /// When it cannot be persisted nothing changes and the error is returned.
    async fn commit(&self, shard: &Rc<Shard>, mut next: Catalog) -> Result<(), CatalogError> {
        next.version = self.catalog.borrow().version + 1;
        if let Err(e) = next.save(&self.data_dir) {
            tracing::error!(error = %e, "persisting the topic catalog failed; change refused");
            return Err(CatalogError::Storage(format!("persisting the topic catalog failed: {e}")));
        }
        *self.catalog.borrow_mut() = next.clone();
        let shared = Arc::new(next.clone());
        let mut waits = Vec::new();
        for to in (0..shard.nr_shards).filter(|s| *s != shard.id) {
            let (tx, rx) = futures_channel::oneshot::channel();
            shard.send_catalog(to, CatalogChanged { catalog: shared.clone(), reply: tx }).await;
            waits.push(rx);
        }
        shard.apply_catalog(next).await;
        for rx in waits {
            let _ = rx.await;
        }
        Ok(())
    }
}

/// Every change that would have succeeded fails with `error` instead.
fn failed<T>(
    results: Vec<Result<T, CatalogError>>,
    error: CatalogError,
) -> Vec<Result<T, CatalogError>> {
    results.into_iter().map(|r| r.and(Err(error.clone()))).collect()
}

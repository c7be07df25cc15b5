//! The partitions of one internal topic that a shard hosts (`__consumer_offsets` for
//! the group coordinator, `__transaction_state` for the transaction coordinator): their
//! logs by partition, each created on first use and opened again after a failed write.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::Instant;

use glommio::sync::Semaphore;

use super::state::REOPEN_BACKOFF;
use crate::log::{LogConfig, PartitionLog};

/// The open logs of one internal topic's partitions on one shard, by partition number.
/// Lives on that shard only.
pub struct InternalLogs {
    logs: Rc<RefCell<HashMap<usize, Rc<PartitionLog>>>>,
    /// Serializes creating, reopening and closing logs.
    opening: Rc<Semaphore>,
    config: LogConfig,
    meta_dir: PathBuf,
    /// The directory name before `-<partition>` (`consumer-offsets`).
    prefix: &'static str,
    /// What a partition is called in logs (`offsets partition`).
    what: &'static str,
    /// When the last try at opening again a partition whose write failed started.
    last_reopen: Cell<Option<Instant>>,
}

impl InternalLogs {
    /// The partitions under `meta_dir/<prefix>-<p>/`, starting with `logs` (those that
    /// the coordinator's load opened); `what` names a partition in log lines.
    pub fn new(
        meta_dir: PathBuf,
        prefix: &'static str,
        what: &'static str,
        config: LogConfig,
        logs: HashMap<usize, Rc<PartitionLog>>,
    ) -> InternalLogs {
        InternalLogs {
            logs: Rc::new(RefCell::new(logs)),
            opening: Rc::new(Semaphore::new(1)),
            config,
            meta_dir,
            prefix,
            what,
            last_reopen: Cell::new(None),
        }
    }

    /// The directory of partition `p`.
    pub fn dir(&self, p: usize) -> PathBuf {
        self.meta_dir.join(format!("{}-{p}", self.prefix))
    }

    /// Partition `p`'s log if it is open.
    pub fn existing(&self, p: usize) -> Option<Rc<PartitionLog>> {
        self.logs.borrow().get(&p).cloned()
    }

    /// The log of partition `p`, created on first use.
    ///
    /// A log whose last write failed (say, the disk was full) is returned as it is (it
    /// refuses appends and still serves reads), and a task is started that opens it
    /// again (at most once per [`REOPEN_BACKOFF`]): recovery rebuilds it from its files
    /// and writes resume once they succeed. In a task of its own, so that the request
    /// that noticed (or the mesh loop that runs it) neither waits for the recovery nor,
    /// if dropped, cuts it short.
    pub async fn log_for(&self, p: usize) -> std::io::Result<Rc<PartitionLog>> {
        if let Some(log) = self.existing(p) {
            if log.write_failed() {
                self.start_reopen(p, &log);
            }
            return Ok(log);
        }
        let _permit = self.opening.acquire_permit(1).await;
        if let Some(log) = self.existing(p) {
            return Ok(log);
        }
        let log = PartitionLog::open(self.dir(p), self.config.clone()).await?;
        self.logs.borrow_mut().insert(p, log.clone());
        Ok(log)
    }

    /// Starts opening again partition `p`, whose log `failed` failed a write, unless a
    /// try started less than [`REOPEN_BACKOFF`] ago. The new instance replaces `failed`
    /// only if the open succeeds and `failed` is still the one in use.
    fn start_reopen(&self, p: usize, failed: &Rc<PartitionLog>) {
        if self.last_reopen.get().is_some_and(|t| t.elapsed() < REOPEN_BACKOFF) {
            return;
        }
        self.last_reopen.set(Some(Instant::now()));
        let (logs, opening, failed) = (self.logs.clone(), self.opening.clone(), failed.clone());
        let (dir, config, what) = (self.dir(p), self.config.clone(), self.what);
        glommio::spawn_local(async move {
            let _permit = opening.acquire_permit(1).await;
            let current = logs.borrow().get(&p).cloned();
            if !current.is_some_and(|c| Rc::ptr_eq(&c, &failed)) {
                return;
            }
            let _ = failed.close().await;
            match PartitionLog::open(dir, config).await {
                Ok(log) => {
                    if crate::log::once_a_minute(log.dir(), "opened again") {
                        tracing::info!(partition = p, "{what} opened again after a write failure");
                    }
                    logs.borrow_mut().insert(p, log);
                }
                Err(e) => tracing::warn!(
                    partition = p,
                    error = %e,
                    "opening a {what} again after a write failure failed; retrying on the next write"
                ),
            }
        })
        .detach();
    }

    /// The open partitions with their logs, in partition order.
    pub fn open_logs(&self) -> Vec<(usize, Rc<PartitionLog>)> {
        let mut v: Vec<_> = self.logs.borrow().iter().map(|(p, l)| (*p, l.clone())).collect();
        v.sort_by_key(|(p, _)| *p);
        v
    }

    /// Closes every open log (shutdown).
    pub async fn close(&self) {
        let _permit = self.opening.acquire_permit(1).await;
        for (p, log) in self.open_logs() {
            if let Err(e) = log.close().await {
                tracing::warn!(partition = p, error = %e, "closing a {} failed", self.what);
            }
        }
    }

    /// Pretends a reopen started at `at` (`None`: never), for tests of the back-off.
    #[cfg(test)]
    pub fn set_last_reopen(&self, at: Option<Instant>) {
        self.last_reopen.set(at);
    }
}

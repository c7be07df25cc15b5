//! Test support: a real one-shard broker state on its own glommio executor.

use std::rc::Rc;
use std::sync::Arc;

use clap::Parser;
use glommio::channels::channel_mesh::MeshBuilder;
use glommio::LocalExecutorBuilder;

use super::{Shard, ShardMessage};
use crate::config::Config;

/// Runs `test` on a new glommio executor with a fresh one-shard broker state (default
/// flags, a temporary data dir), then closes its logs. Panics in `test` fail the
/// calling test.
pub fn with_shard<F, Fut>(test: F)
where
    F: FnOnce(Rc<Shard>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()>,
{
    with_shard_flags(&[], test)
}

/// [`with_shard`] with these flags added to the defaults (e.g. `--authorizer`).
pub fn with_shard_flags<F, Fut>(flags: &[&str], test: F)
where
    F: FnOnce(Rc<Shard>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()>,
{
    let flags: Vec<String> = flags.iter().map(|f| f.to_string()).collect();
    let dir = tempfile::tempdir().expect("tempdir");
    let data_dir = dir.path().to_str().expect("utf-8 path").to_string();
    LocalExecutorBuilder::default()
        .spawn(move || async move {
            let args =
                ["shardlog", "--data-dir", &data_dir].into_iter().map(String::from).chain(flags);
            let config = Arc::new(Config::parse_from(args));
            // As `main` does before the shards start: the catalog with `__consumer_offsets`.
            crate::metadata::Catalog::init(std::path::Path::new(&data_dir)).expect("catalog");
            let mesh = MeshBuilder::<ShardMessage, _>::full(1, 16);
            let (senders, _receivers) = mesh.join().await.expect("mesh");
            let shard = Shard::start(0, 1, config, senders).await.expect("shard starts");
            test(shard.clone()).await;
            shard.close_logs().await;
        })
        .expect("executor")
        .join()
        .expect("test body");
}

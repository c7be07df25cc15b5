//! DescribeLogDirs (key 35): the broker's one log dir (`--data-dir`) with the size of
//! every partition log in it, asked of every shard (each answers for the logs it
//! holds; on a shard's own listener, `--shard-ports`, only that shard: its node's
//! replicas). `kafka-log-dirs --describe`, `Admin.describeLogDirs` and
//! `kafka-reassign-partitions --generate` call it.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use futures_channel::oneshot;
use kafka_protocol::messages::describe_log_dirs_response::{
    DescribeLogDirsPartition, DescribeLogDirsResult, DescribeLogDirsTopic,
};
use kafka_protocol::messages::{DescribeLogDirsRequest, DescribeLogDirsResponse};
use kafka_protocol::protocol::StrBytes;

use crate::net::shard_nodes;
use super::{Ctx, Outcome, Versions};
use crate::error::ResponseError;
use crate::protocol::strings::topic_name;
use crate::security::acl::AclOperation;
use crate::shard::messages::LogDirPartition;
use crate::shard::DataRequest;

/// v0 left Kafka in 4.0 (KIP-896); v4 adds the dir's total and usable bytes (KIP-827).
pub const VERSIONS: Versions = Versions { min: 1, max: 4 };

/// One result for the data dir, error NONE, with every partition log in it (all of
/// them when `topics` is null; else only the named partitions that exist here, so
/// unknown ones are simply absent, as in Kafka; an empty list selects none). Topics
/// are sorted by name, partitions by index. `partition_size` is bytes of record
/// batches, `offset_lag` 0 (no future replicas), `is_future_key` false. v4:
/// `total_bytes` / `usable_bytes` of the dir's file system (`statvfs`; -1 if that
/// fails). With the authorizer on, a connection without DESCRIBE on the cluster gets
/// CLUSTER_AUTHORIZATION_FAILED and no results (Kafka's `handleDescribeLogDirsRequest`).
pub async fn handle(
    ctx: &Ctx,
    request: DescribeLogDirsRequest,
) -> Outcome<DescribeLogDirsResponse> {
    if !ctx.authorize_cluster(AclOperation::Describe) {
        return Outcome::Ready(
            DescribeLogDirsResponse::default()
                .with_error_code(ResponseError::ClusterAuthorizationFailed.code())
                .with_results(Vec::new()),
        );
    }
    let filter: Option<HashMap<String, Vec<i32>>> = request.topics.map(|topics| {
        let mut f: HashMap<String, Vec<i32>> = HashMap::new();
        for t in topics {
            f.entry(t.topic.to_string()).or_default().extend(t.partitions);
        }
        f
    });
    let mut pending = Vec::with_capacity(ctx.shard.nr_shards);
    for to in shard_nodes::listed_shards(&ctx.listener, ctx.shard.nr_shards) {
        let (tx, rx) = oneshot::channel();
        ctx.shard.send(to, DataRequest::DescribeLogDir { filter: filter.clone(), reply: tx }).await;
        pending.push(rx);
    }
    let dir = &ctx.shard.config.data_dir;
    let log_dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone());
    let (total_bytes, usable_bytes) = space(&log_dir);
    let log_dir = StrBytes::from_string(log_dir.display().to_string());
    Outcome::later(async move {
        let mut by_topic: BTreeMap<String, Vec<LogDirPartition>> = BTreeMap::new();
        for rx in pending {
            // A shard shutting down answers nothing: its partitions are left out.
            for p in rx.await.unwrap_or_default() {
                by_topic.entry(p.topic.clone()).or_default().push(p);
            }
        }
        let topics = by_topic
            .into_iter()
            .map(|(name, mut parts)| {
                parts.sort_by_key(|p| p.partition);
                let partitions = parts
                    .iter()
                    .map(|p| {
                        DescribeLogDirsPartition::default()
                            .with_partition_index(p.partition)
                            .with_partition_size(p.size_bytes)
                            .with_offset_lag(p.offset_lag)
                            .with_is_future_key(false)
                    })
                    .collect();
                DescribeLogDirsTopic::default()
                    .with_name(topic_name(&name))
                    .with_partitions(partitions)
            })
            .collect();
        let result = DescribeLogDirsResult::default()
            .with_error_code(0)
            .with_log_dir(log_dir)
            .with_topics(topics)
            .with_total_bytes(total_bytes)
            .with_usable_bytes(usable_bytes);
        DescribeLogDirsResponse::default().with_error_code(0).with_results(vec![result])
    })
}

/// (total, usable-by-this-user) bytes of the file system holding `dir`, as Java's
/// `FileStore.getTotalSpace` / `getUsableSpace`; (-1, -1) when `statvfs` fails.
fn space(dir: &Path) -> (i64, i64) {
    match nix::sys::statvfs::statvfs(dir) {
        Ok(s) => {
            let frag = s.fragment_size() as i64;
            (
                (s.blocks() as i64).saturating_mul(frag),
                (s.blocks_available() as i64).saturating_mul(frag),
            )
        }
        Err(_) => (-1, -1),
    }
}

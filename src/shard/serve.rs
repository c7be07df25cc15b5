//! Executing [`ShardRequest`]s on the shard that received them.
//!
//! Appends are started in arrival order: the offset assignment of one append happens
//! before the next message is taken from the channel, so a connection's pipelined
//! produces to one partition keep their order across cores.

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::time::Duration;

use futures_lite::{future, StreamExt};
use glommio::channels::channel_mesh::Receivers;

use super::messages::{Appended, ListedOffset, PartitionRead, ShardRequest};
use super::state::Shard;
use crate::log::{AppendError, ReadError};

/// Kafka error codes used by the data plane here.
const OFFSET_OUT_OF_RANGE: i16 = 1;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const NOT_LEADER_OR_FOLLOWER: i16 = 6;
const KAFKA_STORAGE_ERROR: i16 = 56;

/// Receives requests from every other shard until the mesh closes; each request is
/// started in order, then completes in its own task.
pub async fn serve_mesh(shard: Rc<Shard>, mut receivers: Receivers<ShardRequest>) {
    let streams = receivers.streams();
    let mut tasks = Vec::new();
    for (peer, mut stream) in streams {
        let shard = shard.clone();
        tasks.push(glommio::spawn_local(async move {
            while let Some(request) = stream.next().await {
                execute(&shard, request).await;
            }
            tracing::debug!(peer, "mesh stream from peer closed");
        }));
    }
    for t in tasks {
        t.await;
    }
}

/// Starts one request: its order-sensitive part runs before this returns, the rest
/// (waiting for the write, long polls, control-plane work) in a spawned task.
pub async fn execute(shard: &Rc<Shard>, request: ShardRequest) {
    match request {
        ShardRequest::Append { topic, partition, batch, now_ms, reply } => {
            let Some(owned) = shard.log(&topic, partition) else {
                let _ = reply.send(Err(not_here(shard, &topic)));
                return;
            };
            let log = owned.log.clone();
            let mut append = Box::pin(async move { log.append(batch, now_ms).await });
            // Poll once now: the log assigns offsets synchronously on first poll.
            let finish = |r: Result<crate::log::AppendInfo, AppendError>| {
                r.map(|i| Appended {
                    base_offset: i.base_offset,
                    log_append_time: i.log_append_time,
                    log_start_offset: i.log_start_offset,
                })
                .map_err(|e| crate::error::ResponseError::from(&e).code())
            };
            match future::poll_once(&mut append).await {
                Some(r) => {
                    let _ = reply.send(finish(r));
                }
                None => spawn_detached(async move {
                    let _ = reply.send(finish(append.await));
                }),
            }
        }
        ShardRequest::Read { topic, partition, offset, max_bytes, reply } => {
            let shard = shard.clone();
            spawn_detached(async move {
                let _ = reply.send(read(&shard, &topic, partition, offset, max_bytes).await);
            });
        }
        ShardRequest::WaitForData { partitions, timeout_ms, reply } => {
            let waits: Vec<Pin<Box<dyn Future<Output = ()>>>> = partitions
                .iter()
                .filter_map(|(t, p, offset)| {
                    shard.log(t, *p).map(|o| {
                        Box::pin(o.log.wait_for_data(*offset)) as Pin<Box<dyn Future<Output = ()>>>
                    })
                })
                .collect();
            spawn_detached(async move {
                if !waits.is_empty() {
                    let any = futures_util::future::select_all(waits);
                    let _ =
                        glommio::timer::timeout(Duration::from_millis(timeout_ms), async move {
                            any.await;
                            Ok(())
                        })
                        .await;
                } else {
                    glommio::timer::sleep(Duration::from_millis(timeout_ms)).await;
                }
                let _ = reply.send(());
            });
        }
        ShardRequest::ListOffset { topic, partition, timestamp, reply } => {
            let shard = shard.clone();
            spawn_detached(async move {
                let _ = reply.send(list_offset(&shard, &topic, partition, timestamp).await);
            });
        }
        ShardRequest::CreateTopics { topics, validate_only, reply } => {
            let shard = shard.clone();
            spawn_detached(async move {
                if let Some(control) = &shard.control {
                    let _ = reply.send(control.create_topics(&shard, topics, validate_only).await);
                }
            });
        }
        ShardRequest::DeleteTopics { names, reply } => {
            let shard = shard.clone();
            spawn_detached(async move {
                if let Some(control) = &shard.control {
                    let _ = reply.send(control.delete_topics(&shard, names).await);
                }
            });
        }
        ShardRequest::CreatePartitions { topics, validate_only, reply } => {
            let shard = shard.clone();
            spawn_detached(async move {
                if let Some(control) = &shard.control {
                    let _ =
                        reply.send(control.create_partitions(&shard, topics, validate_only).await);
                }
            });
        }
        ShardRequest::AllocateProducerId { reply } => {
            if let Some(control) = &shard.control {
                let _ = reply.send(control.allocate_producer_id());
            }
        }
        ShardRequest::Group { call, reply } => {
            shard.groups.submit(*call, reply).await;
        }
        ShardRequest::CatalogChanged { catalog, reply } => {
            let shard = shard.clone();
            spawn_detached(async move {
                shard.apply_catalog((*catalog).clone()).await;
                let _ = reply.send(());
            });
        }
    }
}

fn spawn_detached(f: impl Future<Output = ()> + 'static) {
    glommio::spawn_local(f).detach();
}

/// UNKNOWN_TOPIC_OR_PARTITION when the catalog lacks the partition, else
/// NOT_LEADER_OR_FOLLOWER (its log is not open here yet: clients retry).
fn not_here(shard: &Shard, topic: &str) -> i16 {
    if shard.catalog().topic(topic).is_some() {
        NOT_LEADER_OR_FOLLOWER
    } else {
        UNKNOWN_TOPIC_OR_PARTITION
    }
}

async fn read(
    shard: &Rc<Shard>,
    topic: &str,
    partition: i32,
    offset: i64,
    max_bytes: usize,
) -> PartitionRead {
    let Some(owned) = shard.log(topic, partition) else {
        return PartitionRead {
            error: not_here(shard, topic),
            high_watermark: -1,
            log_start_offset: -1,
            ..Default::default()
        };
    };
    let log = &owned.log;
    let (error, records) = match log.read(offset, max_bytes).await {
        Ok(records) => (0, records),
        Err(ReadError::OffsetOutOfRange) => (OFFSET_OUT_OF_RANGE, bytes::Bytes::new()),
        Err(ReadError::Io(e)) => {
            tracing::error!(%topic, partition, error = %e, "read failed");
            (KAFKA_STORAGE_ERROR, bytes::Bytes::new())
        }
    };
    PartitionRead {
        error,
        high_watermark: log.high_watermark(),
        log_start_offset: log.log_start_offset(),
        records,
    }
}

async fn list_offset(
    shard: &Rc<Shard>,
    topic: &str,
    partition: i32,
    timestamp: i64,
) -> ListedOffset {
    let Some(owned) = shard.log(topic, partition) else {
        return ListedOffset { error: not_here(shard, topic), offset: -1, timestamp: -1 };
    };
    let log = &owned.log;
    let found = |o: Option<(i64, i64)>| match o {
        Some((offset, ts)) => ListedOffset { error: 0, offset, timestamp: ts },
        None => ListedOffset { error: 0, offset: -1, timestamp: -1 },
    };
    match timestamp {
        -1 => ListedOffset { error: 0, offset: log.high_watermark(), timestamp: -1 },
        -2 => ListedOffset { error: 0, offset: log.log_start_offset(), timestamp: -1 },
        -3 => found(log.max_timestamp()),
        ts if ts >= 0 => match log.offset_for_timestamp(ts).await {
            Ok(o) => found(o),
            Err(e) => {
                tracing::error!(%topic, partition, error = %e, "timestamp lookup failed");
                ListedOffset { error: KAFKA_STORAGE_ERROR, offset: -1, timestamp: -1 }
            }
        },
        // -4 (earliest local, KIP-1005) equals -2 without tiered storage; -5 (latest
        // tiered) has no answer there, as in Kafka.
        -4 => ListedOffset { error: 0, offset: log.log_start_offset(), timestamp: -1 },
        _ => ListedOffset { error: 0, offset: -1, timestamp: -1 },
    }
}

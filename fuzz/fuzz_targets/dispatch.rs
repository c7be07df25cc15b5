//! A connection's bytes through the whole request path: frames are read as
//! `net::connection` reads them, each request is dispatched to its handler
//! (`handlers::dispatch`) against a real one-shard broker state, its second phase is
//! awaited (at most 200 ms: long polls are cut short) and its response encoded at the
//! request's version. Nothing may panic, whatever the fields say (negative partitions,
//! huge sizes, unknown topics, group state mid-rebalance...).
//!
//! The broker state lives as long as the fuzzer process (one glommio executor and a
//! temporary data dir made on the first input), so inputs see what earlier ones left:
//! a crash may need the inputs before it to reproduce. Topic creation is limited to 8
//! partitions per request so that the data dir stays small.
#![no_main]

use std::cell::OnceCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use clap::Parser;
use glommio::channels::channel_mesh::MeshBuilder;
use glommio::{LocalExecutor, LocalExecutorBuilder};
use kafka_protocol::messages::RequestKind;
use libfuzzer_sys::fuzz_target;
use shardlog::config::Config;
use shardlog::handlers::{dispatch, Ctx, Outcome, REGISTRY};
use shardlog::net::connection::encode;
use shardlog::protocol::frame::{check_frame_length, decode_request};
use shardlog::shard::{Shard, ShardMessage};

/// The broker's default `--max-request-bytes`.
const MAX_REQUEST_BYTES: usize = 100 << 20;
/// Most time one input's frames may take (each long poll is cut at 200 ms).
const INPUT_BUDGET: Duration = Duration::from_secs(5);
/// Most partitions a fuzzed CreateTopics / CreatePartitions may ask for.
const MAX_FUZZ_PARTITIONS: i32 = 8;

/// Fields drop in order: the shard (its logs) inside the executor's thread first.
struct Broker {
    shard: OnceCell<Rc<Shard>>,
    executor: LocalExecutor,
    _data_dir: tempfile::TempDir,
}

thread_local! {
    static BROKER: Broker = {
        let data_dir = tempfile::tempdir().expect("tempdir");
        let executor = LocalExecutorBuilder::default().make().expect("glommio executor");
        let path = data_dir.path().to_str().expect("utf-8 path").to_string();
        let shard = OnceCell::new();
        executor.run(async {
            let config = Arc::new(Config::parse_from(["shardlog", "--data-dir", &path]));
            shardlog::metadata::Catalog::init(std::path::Path::new(&path)).expect("catalog");
            let mesh = MeshBuilder::<ShardMessage, _>::full(1, 16);
            let (senders, receivers) = mesh.join().await.expect("mesh");
            // One shard sends to itself directly; the receivers only need to live.
            std::mem::forget(receivers);
            let s = Shard::start(0, 1, config, senders).await.expect("shard starts");
            // Group timers (rebalance and session timeouts), as the broker runs them.
            let stop = shardlog::shutdown::Shutdown::default();
            glommio::spawn_local(s.groups.clone().run_timers(stop)).detach();
            let _ = shard.set(s);
        });
        Broker { shard, executor, _data_dir: data_dir }
    };
}

/// True when a catalog change asks for more topics or partitions than the fuzzer
/// allows.
fn too_big(request: &RequestKind) -> bool {
    let max = MAX_FUZZ_PARTITIONS as usize;
    match request {
        RequestKind::CreateTopics(r) => {
            r.topics.len() > 2
                || r.topics.iter().any(|t| {
                    t.num_partitions > MAX_FUZZ_PARTITIONS || t.assignments.len() > max
                })
        }
        RequestKind::CreatePartitions(r) => {
            r.topics.len() > 2 || r.topics.iter().any(|t| t.count > MAX_FUZZ_PARTITIONS)
        }
        _ => false,
    }
}

fuzz_target!(|data: &[u8]| {
    BROKER.with(|broker| {
        let shard = broker.shard.get().expect("shard").clone();
        broker.executor.run(async move {
            let mut rest = data;
            // Each long poll is cut at 200 ms; the whole input at INPUT_BUDGET, so that
            // only a real hang (a task that never yields) reaches libFuzzer's -timeout.
            let started = std::time::Instant::now();
            while rest.len() >= 4 && started.elapsed() < INPUT_BUDGET {
                let prefix = [rest[0], rest[1], rest[2], rest[3]];
                let Ok(size) = check_frame_length(prefix, MAX_REQUEST_BYTES) else { return };
                if rest.len() < 4 + size {
                    return;
                }
                let frame = Bytes::copy_from_slice(&rest[4..4 + size]);
                rest = &rest[4 + size..];
                let Ok(request) = decode_request(frame) else { return };
                let Some(api) = request.api else { return };
                let version = request.api_version;
                let advertised =
                    REGISTRY.iter().any(|(k, v)| *k == api && (v.min..=v.max).contains(&version));
                if advertised {
                    let mut body = request.body.clone();
                    match RequestKind::decode(api, &mut body, version) {
                        Ok(kind) if too_big(&kind) => continue,
                        Ok(_) => {}
                        // The connection closes on a body that does not decode.
                        Err(_) => return,
                    }
                }
                let ctx = Ctx {
                    shard: shard.clone(),
                    api_version: version,
                    client_id: request.client_id.clone(),
                    client_host: "127.0.0.1".into(),
                    principal: std::rc::Rc::new(shardlog::security::KafkaPrincipal::anonymous()),
                    listener: std::rc::Rc::new(
                        shard.config.listeners().expect("default listener").remove(0),
                    ),
                };
                let Ok(dispatched) = dispatch(&ctx, request).await else { return };
                let response = match dispatched.outcome {
                    Outcome::Ready(r) => Some(r),
                    Outcome::Later(later) | Outcome::Serial(later) => {
                        glommio::timer::timeout(Duration::from_millis(200), async move {
                            Ok(later.await)
                        })
                        .await
                        .ok()
                        .flatten()
                    }
                    Outcome::Silent(done) => {
                        let _ = glommio::timer::timeout(Duration::from_millis(200), async move {
                            done.await;
                            Ok(())
                        })
                        .await;
                        None
                    }
                };
                if let Some(response) = response {
                    // The broker closes the connection on an encoding failure: a bug.
                    if let Err(e) = encode(7, dispatched.api, dispatched.response_version, &response) {
                        panic!("{:?} v{} response does not encode: {e}", dispatched.api, dispatched.response_version);
                    }
                }
            }
        })
    })
});

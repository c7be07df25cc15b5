//! The committed fuzz seeds (`fuzz/seeds/`, client traffic captured by
//! `fuzz/capture.py --regenerate`) stay meaningful: every file is listed in
//! `fuzz/seeds/MANIFEST` with its size, frame count and API keys, every request frame
//! decodes with the broker's own reader (length prefix, header, body at an advertised
//! version, with no byte left over), every record batch parses with a valid CRC and
//! decodes, and the set covers the APIs and codecs the clients were captured for. A
//! decoder change that starts refusing real client traffic, or a seed file that rots,
//! fails here instead of silently leaving the fuzzers with inputs they reject at the
//! first frame.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, RequestKind};
use shardlog::handlers::REGISTRY;
use shardlog::protocol::batch::{verify_crc, RecordBatchHeader};
use shardlog::protocol::frame::{check_frame_length, decode_request};
use shardlog::protocol::records::decode_records;

/// The broker's default `--max-request-bytes`.
const MAX_REQUEST_BYTES: usize = 100 << 20;
/// What fuzz/capture.py keeps a seed file under.
const MAX_SEED_BYTES: usize = 64 << 10;
/// What the whole committed set must stay under.
const MAX_TOTAL_BYTES: usize = 2 << 20;

fn seeds() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz").join("seeds")
}

/// One MANIFEST line: `<dir>/<file> <bytes> <frames> <api keys, comma-separated or ->`.
#[derive(Debug, PartialEq, Eq)]
struct Entry {
    bytes: usize,
    frames: usize,
    apis: BTreeSet<i16>,
}

fn manifest() -> BTreeMap<String, Entry> {
    let text = std::fs::read_to_string(seeds().join("MANIFEST")).expect("fuzz/seeds/MANIFEST");
    let mut out = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let f: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(f.len(), 4, "MANIFEST line {line:?}");
        let apis = if f[3] == "-" {
            BTreeSet::new()
        } else {
            f[3].split(',').map(|k| k.parse().expect("api key")).collect()
        };
        let entry = Entry {
            bytes: f[1].parse().expect("bytes"),
            frames: f[2].parse().expect("frames"),
            apis,
        };
        assert!(out.insert(f[0].to_string(), entry).is_none(), "{} listed twice", f[0]);
    }
    out
}

/// The files of `fuzz/seeds/<dir>`, by `<dir>/<name>`.
fn files(dir: &str) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(seeds().join(dir)).expect("seed dir") {
        let e = e.expect("dir entry");
        let name = format!("{dir}/{}", e.file_name().to_str().expect("utf-8 name"));
        out.insert(name, std::fs::read(e.path()).expect("seed file"));
    }
    out
}

/// Decodes a stream of request frames as a connection reads it; panics (naming the file
/// and frame) on anything the broker would refuse. Returns the frames' API keys.
///
/// Two things real clients do are let through, checked exactly:
/// - an ApiVersions request above the versions the broker advertises (the Java client
///   4.x opens with v5): the broker answers UNSUPPORTED_VERSION with its own range and
///   the client asks again (KIP-511), so the dispatch target sees it too;
/// - body bytes past the request's schema: librdkafka 2.16's admin client sends
///   Metadata v13 with 3 bytes more than v13 holds (it looks like v8-v10's
///   include_cluster_authorized_operations plus an empty tagged field); the decoder,
///   like Kafka's, ignores trailing bytes. Any other trailing bytes fail.
fn decode_stream(name: &str, data: &[u8]) -> Vec<i16> {
    let mut keys = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        let n = keys.len();
        assert!(rest.len() >= 4, "{name}: frame {n}: a partial length prefix");
        let size = check_frame_length([rest[0], rest[1], rest[2], rest[3]], MAX_REQUEST_BYTES)
            .unwrap_or_else(|e| panic!("{name}: frame {n}: length refused: {e:?}"));
        assert!(rest.len() >= 4 + size, "{name}: frame {n}: truncated");
        let frame = Bytes::copy_from_slice(&rest[4..4 + size]);
        rest = &rest[4 + size..];
        let request = decode_request(frame)
            .unwrap_or_else(|e| panic!("{name}: frame {n}: header refused: {e:?}"));
        let api = request
            .api
            .unwrap_or_else(|| panic!("{name}: frame {n}: unknown API key {}", request.api_key));
        let version = request.api_version;
        keys.push(request.api_key);
        let versions = REGISTRY
            .iter()
            .find(|(k, _)| *k == api)
            .map(|(_, v)| v)
            .unwrap_or_else(|| panic!("{name}: frame {n}: {api:?} is not advertised"));
        if api == ApiKey::ApiVersions && version > versions.max {
            continue;
        }
        assert!(
            (versions.min..=versions.max).contains(&version),
            "{name}: frame {n}: {api:?} v{version} is not advertised"
        );
        let mut body = request.body;
        RequestKind::decode(api, &mut body, version)
            .unwrap_or_else(|e| panic!("{name}: frame {n}: {api:?} v{version} body: {e}"));
        let librdkafka_metadata = api == ApiKey::Metadata
            && version == 13
            && request.client_id == "rdkafka"
            && body.len() == 3;
        assert!(
            body.is_empty() || librdkafka_metadata,
            "{name}: frame {n}: {api:?} v{version}: {} body bytes left over",
            body.len()
        );
    }
    keys
}

#[test]
fn the_manifest_lists_exactly_the_seed_files() {
    let manifest = manifest();
    let mut on_disk = BTreeMap::new();
    for dir in ["frames", "dispatch", "batches"] {
        on_disk.extend(files(dir));
    }
    let listed: BTreeSet<&String> = manifest.keys().collect();
    let present: BTreeSet<&String> = on_disk.keys().collect();
    assert_eq!(listed, present, "fuzz/seeds/MANIFEST and the seed files differ");
    let mut total = 0;
    for (name, data) in &on_disk {
        assert_eq!(data.len(), manifest[name].bytes, "{name}: size");
        assert!(!data.is_empty() && data.len() <= MAX_SEED_BYTES, "{name}: {} bytes", data.len());
        total += data.len();
    }
    assert!(total <= MAX_TOTAL_BYTES, "the seeds take {total} bytes");
}

#[test]
fn every_frame_of_the_stream_seeds_decodes() {
    let manifest = manifest();
    let mut seen: BTreeMap<&str, BTreeSet<i16>> = BTreeMap::new();
    for dir in ["frames", "dispatch"] {
        let files = files(dir);
        assert!(files.len() >= 20, "{dir}: only {} seed files", files.len());
        for (name, data) in &files {
            let keys = decode_stream(name, data);
            let entry = &manifest[name];
            assert_eq!(keys.len(), entry.frames, "{name}: frame count");
            let set: BTreeSet<i16> = keys.into_iter().collect();
            assert_eq!(set, entry.apis, "{name}: API keys");
            seen.entry(dir).or_default().extend(set);
        }
    }
    // What the captured clients did (fuzz/capture.py's cells): produce, consume with
    // classic and KIP-848 groups, commit offsets, and the admin calls.
    let want = [
        ApiKey::Produce,
        ApiKey::Fetch,
        ApiKey::ListOffsets,
        ApiKey::Metadata,
        ApiKey::OffsetCommit,
        ApiKey::OffsetFetch,
        ApiKey::FindCoordinator,
        ApiKey::JoinGroup,
        ApiKey::Heartbeat,
        ApiKey::LeaveGroup,
        ApiKey::SyncGroup,
        ApiKey::DescribeGroups,
        ApiKey::ListGroups,
        ApiKey::ApiVersions,
        ApiKey::CreateTopics,
        ApiKey::DeleteTopics,
        ApiKey::DeleteRecords,
        ApiKey::InitProducerId,
        ApiKey::DescribeConfigs,
        ApiKey::AlterConfigs,
        ApiKey::IncrementalAlterConfigs,
        ApiKey::CreatePartitions,
        ApiKey::DeleteGroups,
        ApiKey::OffsetDelete,
        ApiKey::DescribeLogDirs,
        ApiKey::DescribeCluster,
        ApiKey::ConsumerGroupHeartbeat,
        ApiKey::ConsumerGroupDescribe,
    ];
    for dir in ["frames", "dispatch"] {
        let missing: Vec<ApiKey> =
            want.iter().copied().filter(|k| !seen[dir].contains(&(*k as i16))).collect();
        assert!(missing.is_empty(), "{dir}: no seed has {missing:?}");
    }
}

#[test]
fn every_batch_seed_is_whole_batches_with_valid_crcs() {
    let mut codecs = BTreeSet::new();
    let mut idempotent = 0;
    let files = files("batches");
    assert!(files.len() >= 10, "only {} batch seeds", files.len());
    for (name, data) in &files {
        let mut pos = 0;
        while pos < data.len() {
            let batch = &data[pos..];
            let h = RecordBatchHeader::parse(batch)
                .unwrap_or_else(|e| panic!("{name}@{pos}: header: {e:?}"));
            assert!(verify_crc(batch), "{name}@{pos}: CRC");
            let records =
                decode_records(batch).unwrap_or_else(|e| panic!("{name}@{pos}: records: {e:?}"));
            assert_eq!(records.records.len(), h.records_count as usize, "{name}@{pos}");
            codecs.insert(h.compression());
            if h.producer_id >= 0 {
                idempotent += 1;
            }
            pos += h.total_size();
        }
    }
    assert_eq!(codecs, BTreeSet::from([0, 1, 2, 3, 4]), "codecs of the batch seeds");
    assert!(idempotent > 0, "no batch of an idempotent producer");
}

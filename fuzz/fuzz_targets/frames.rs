//! A connection's bytes: the frame reader's length checks, then the request header and
//! the body of every advertised API and version, frame after frame, as
//! `net::connection` and `handlers::dispatch` take them. Nothing may panic or
//! allocate past the bytes given (the vendored kafka-protocol bounds array counts).
#![no_main]

use bytes::Bytes;
use kafka_protocol::messages::RequestKind;
use libfuzzer_sys::fuzz_target;
use shardlog::handlers::REGISTRY;
use shardlog::protocol::frame::{check_frame_length, decode_request};

/// The broker's default `--max-request-bytes`.
const MAX_REQUEST_BYTES: usize = 100 << 20;

fuzz_target!(|data: &[u8]| {
    let mut rest = data;
    while rest.len() >= 4 {
        let Ok(size) = check_frame_length([rest[0], rest[1], rest[2], rest[3]], MAX_REQUEST_BYTES)
        else {
            return;
        };
        if rest.len() < 4 + size {
            return;
        }
        let frame = Bytes::copy_from_slice(&rest[4..4 + size]);
        rest = &rest[4 + size..];
        let Ok(request) = decode_request(frame) else {
            return;
        };
        let Some(api) = request.api else {
            return;
        };
        let advertised = REGISTRY
            .iter()
            .any(|(k, v)| *k == api && (v.min..=v.max).contains(&request.api_version));
        if !advertised {
            continue;
        }
        let mut body = request.body;
        let _ = RequestKind::decode(api, &mut body, request.api_version);
    }
});

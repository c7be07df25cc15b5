//! Request frames: a 4-byte big-endian size followed by that many bytes of request
//! header and body (Kafka protocol guide, "Common Request and Response Structure").

use bytes::{Buf, Bytes};
use kafka_protocol::messages::{ApiKey, RequestHeader};
use kafka_protocol::protocol::Decodable;

/// Why a frame's length prefix was refused; the connection is closed.
#[derive(Debug, PartialEq, Eq)]
pub enum FrameError {
    /// The length prefix is negative or zero.
    InvalidLength(i32),
    /// The length prefix is above `--max-request-bytes`.
    TooLarge { size: usize, max: usize },
}

/// Checks a frame's 4-byte length prefix against `max_bytes` before anything is
/// allocated for it. Returns the body length in bytes.
pub fn check_frame_length(prefix: [u8; 4], max_bytes: usize) -> Result<usize, FrameError> {
    let size = i32::from_be_bytes(prefix);
    if size <= 0 {
        return Err(FrameError::InvalidLength(size));
    }
    let size = size as usize;
    if size > max_bytes {
        return Err(FrameError::TooLarge { size, max: max_bytes });
    }
    Ok(size)
}

/// A request whose header is decoded; `body` is the rest of the frame, still encoded.
#[derive(Debug)]
pub struct Request {
    /// The API key as sent; `api` is `None` for keys this crate does not know.
    pub api_key: i16,
    pub api: Option<ApiKey>,
    pub api_version: i16,
    pub correlation_id: i32,
    pub client_id: String,
    pub body: Bytes,
}

/// Why a request header could not be decoded; the connection is closed.
#[derive(Debug, PartialEq, Eq)]
pub enum HeaderError {
    /// Fewer than the 8 fixed bytes (api key, version, correlation id).
    Truncated,
    /// The header (client id or tagged fields) is malformed.
    Malformed,
}

/// Decodes the request header of one frame. The header version follows from the API
/// key and version (flexible versions use header v2, KIP-482); for an unknown key or
/// an unsupported version the header is decoded as v1 (ApiVersions must still be
/// answerable in that case, KIP-511).
pub fn decode_request(mut frame: Bytes) -> Result<Request, HeaderError> {
    if frame.len() < 8 {
        return Err(HeaderError::Truncated);
    }
    let api_key = i16::from_be_bytes([frame[0], frame[1]]);
    let api_version = i16::from_be_bytes([frame[2], frame[3]]);
    let api = ApiKey::try_from(api_key).ok();
    let header_version = match api {
        Some(k) if (k.valid_versions().min..=k.valid_versions().max).contains(&api_version) => {
            k.request_header_version(api_version)
        }
        _ => 1,
    };
    let header =
        RequestHeader::decode(&mut frame, header_version).map_err(|_| HeaderError::Malformed)?;
    let client_id = header.client_id.map(|s| s.to_string()).unwrap_or_default();
    Ok(Request {
        api_key,
        api,
        api_version,
        correlation_id: header.correlation_id,
        client_id,
        body: frame.slice(..frame.remaining()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_and_zero_lengths_are_refused() {
        assert_eq!(
            check_frame_length((-1i32).to_be_bytes(), 100),
            Err(FrameError::InvalidLength(-1))
        );
        assert_eq!(check_frame_length(0i32.to_be_bytes(), 100), Err(FrameError::InvalidLength(0)));
    }

    #[test]
    fn length_above_the_limit_is_refused() {
        assert_eq!(
            check_frame_length(2_000_000_000i32.to_be_bytes(), 100 << 20),
            Err(FrameError::TooLarge { size: 2_000_000_000, max: 100 << 20 })
        );
        assert_eq!(check_frame_length(100i32.to_be_bytes(), 100), Ok(100));
    }

    #[test]
    fn header_v1_is_decoded() {
        // ApiVersions v0: key 18, version 0, correlation 7, client id "ab".
        let frame = Bytes::from_static(&[0, 18, 0, 0, 0, 0, 0, 7, 0, 2, b'a', b'b', 9]);
        let req = decode_request(frame).unwrap();
        assert_eq!(req.api_key, 18);
        assert_eq!(req.api, Some(ApiKey::ApiVersions));
        assert_eq!(req.correlation_id, 7);
        assert_eq!(req.client_id, "ab");
        assert_eq!(&req.body[..], &[9]);
    }

    #[test]
    fn truncated_headers_are_errors_not_panics() {
        for n in 0..12 {
            let full = [0u8, 18, 0, 0, 0, 0, 0, 7, 0, 2, b'a', b'b'];
            let r = decode_request(Bytes::copy_from_slice(&full[..n]));
            assert!(r.is_err(), "prefix of {n} bytes decoded");
        }
    }
}

//! ApiVersions (key 18): the table of implemented APIs and versions, derived from
//! [`super::REGISTRY`]. An unsupported request version is answered with
//! UNSUPPORTED_VERSION and the table, in v0 format (KIP-511).

use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, ApiVersionsResponse};

use super::{Ctx, Outcome, Versions, REGISTRY};
use crate::error::ResponseError;

pub const VERSIONS: Versions = Versions { min: 0, max: 4 };

/// The lowest version advertised for `key`: the lowest served, except for Produce.
///
/// Produce is advertised from v0 although v0-2 requests are refused (the connection is
/// closed, as for any unsupported version), as Apache Kafka 4.x does (KAFKA-18659):
/// librdkafka before 2.10 and every client built on it (kcat, confluent-kafka) decide
/// from ApiVersions whether the broker takes compressed batches by checking that
/// Produce v0 is listed, and without it silently send every batch uncompressed. Clients
/// pick the highest version both sides know, so no client sends v0-2 because of it.
fn advertised_min(key: ApiKey, served: Versions) -> i16 {
    if key == ApiKey::Produce {
        0
    } else {
        served.min
    }
}

fn table() -> Vec<ApiVersion> {
    REGISTRY
        .iter()
        .map(|(key, v)| {
            ApiVersion::default()
                .with_api_key(*key as i16)
                .with_min_version(advertised_min(*key, *v))
                .with_max_version(v.max)
        })
        .collect()
}

/// Answers a supported ApiVersions request with the full table.
pub async fn handle(_ctx: &Ctx, _request: ApiVersionsRequest) -> Outcome<ApiVersionsResponse> {
    Outcome::Ready(ApiVersionsResponse::default().with_api_keys(table()))
}

/// KIP-511: a client may send ApiVersions at a version newer than this broker knows
/// (the body is then not decodable). Instead of closing the connection, answer with
/// UNSUPPORTED_VERSION and the table, encoded as v0 so that any client can read it;
/// the client retries with a version from the table. Returns (response version,
/// response) for such a request, `None` for every other API.
pub fn fallback(api: ApiKey, version: i16) -> Option<(i16, ApiVersionsResponse)> {
    if api != ApiKey::ApiVersions || VERSIONS.contains(version) {
        return None;
    }
    let response = ApiVersionsResponse::default()
        .with_error_code(ResponseError::UnsupportedVersion.code())
        .with_api_keys(table());
    Some((0, response))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_lists_every_registered_api_once() {
        let t = table();
        assert_eq!(t.len(), REGISTRY.len());
        let mut keys: Vec<i16> = t.iter().map(|a| a.api_key).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), REGISTRY.len());
        let av = t.iter().find(|a| a.api_key == 18).unwrap();
        assert_eq!((av.min_version, av.max_version), (0, 4));
        // Every API is advertised with the range it serves, except Produce (KAFKA-18659).
        for a in &t {
            let key = ApiKey::try_from(a.api_key).unwrap();
            let served = REGISTRY.iter().find(|(k, _)| *k == key).unwrap().1;
            let min = if key == ApiKey::Produce { 0 } else { served.min };
            assert_eq!((a.min_version, a.max_version), (min, served.max), "{key:?}");
        }
    }

    #[test]
    fn produce_is_advertised_from_v0_but_served_from_v3() {
        let t = table();
        let produce = t.iter().find(|a| a.api_key == ApiKey::Produce as i16).unwrap();
        assert_eq!((produce.min_version, produce.max_version), (0, 13));
        assert!(!super::super::produce::VERSIONS.contains(2));
        assert!(super::super::produce::VERSIONS.contains(3));
    }

    #[test]
    fn newer_api_versions_gets_unsupported_version_in_v0() {
        let (version, response) = fallback(ApiKey::ApiVersions, 5).unwrap();
        assert_eq!(version, 0);
        assert_eq!(response.error_code, 35);
        assert_eq!(response.api_keys.len(), REGISTRY.len());
        assert!(fallback(ApiKey::ApiVersions, 3).is_none());
        assert!(fallback(ApiKey::Metadata, 99).is_none());
    }
}

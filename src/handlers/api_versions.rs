//! ApiVersions (key 18): the table of implemented APIs and versions, derived from
//! [`super::REGISTRY`]. An unsupported request version is answered with
//! UNSUPPORTED_VERSION and the table, in v0 format (KIP-511).

use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, ApiVersionsResponse};

use super::{Ctx, Outcome, Versions, REGISTRY};
use crate::error::ResponseError;

pub const VERSIONS: Versions = Versions { min: 0, max: 4 };

fn table() -> Vec<ApiVersion> {
    REGISTRY
        .iter()
        .map(|(key, v)| {
            ApiVersion::default()
                .with_api_key(*key as i16)
                .with_min_version(v.min)
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

//! ApiVersions (key 18): the table of implemented APIs and versions, derived from
//! [`super::REGISTRY`]. An unsupported request version is answered with
//! UNSUPPORTED_VERSION (35) and the table, in v0 format (KIP-511).

use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{ApiVersionsRequest, ApiVersionsResponse};

use super::{Ctx, Versions, REGISTRY};

pub const VERSIONS: Versions = Versions { min: 0, max: 4 };

const UNSUPPORTED_VERSION: i16 = 35;

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
pub fn handle(_ctx: &Ctx, _request: ApiVersionsRequest) -> ApiVersionsResponse {
    ApiVersionsResponse::default().with_error_code(0).with_api_keys(table())
}

/// The KIP-511 answer to an ApiVersions version this broker does not implement.
pub fn unsupported() -> ApiVersionsResponse {
    ApiVersionsResponse::default().with_error_code(UNSUPPORTED_VERSION).with_api_keys(table())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_lists_every_registered_api_once() {
        let t = table();
        assert_eq!(t.len(), REGISTRY.len());
        let av = t.iter().find(|a| a.api_key == 18).unwrap();
        assert_eq!((av.min_version, av.max_version), (0, 4));
        assert_eq!(unsupported().error_code, 35);
    }
}

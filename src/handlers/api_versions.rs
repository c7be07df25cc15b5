//! ApiVersions (key 18): the table of implemented APIs and versions, derived from
//! [`super::REGISTRY`]. An unsupported request version is answered with
//! UNSUPPORTED_VERSION and the table, in v0 format (KIP-511). From v3 the answer also
//! carries the cluster's features (KIP-584), which the Admin client's
//! `describeFeatures` and `kafka-features describe` read.

use kafka_protocol::messages::api_versions_response::{
    ApiVersion, FinalizedFeatureKey, SupportedFeatureKey,
};
use kafka_protocol::protocol::StrBytes;
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

/// A feature flag (KIP-584) this broker supports: (name, lowest level, highest level,
/// finalized level). A finalized level of 0 is not listed as finalized, as Kafka omits
/// features that are off.
///
/// - `metadata.version` 7 (3.3-IV3) to 25 (4.0-IV3), finalized at 25: shardlog
///   behaves as a Kafka 4.0 cluster.
/// - `group.version` 0-1, finalized at 1: the KIP-848 consumer group protocol is on.
/// - `kraft.version` 0 only: a static quorum of one voter (no KIP-853 reconfiguration).
/// - `transaction.version` 0 only: no KIP-890 transactions protocol (see the
///   transactions issue); producers use the original one.
const FEATURES: &[(&str, i16, i16, i16)] = &[
    ("metadata.version", 7, 25, 25),
    ("group.version", 0, 1, 1),
    ("kraft.version", 0, 0, 0),
    ("transaction.version", 0, 0, 0),
];

/// The epoch of the finalized features: they were finalized once, at the first start.
const FINALIZED_FEATURES_EPOCH: i64 = 1;

/// Answers a supported ApiVersions request with the full table, and from v3 the features.
pub async fn handle(ctx: &Ctx, _request: ApiVersionsRequest) -> Outcome<ApiVersionsResponse> {
    let response = ApiVersionsResponse::default().with_api_keys(table());
    if ctx.api_version >= 3 {
        Outcome::Ready(with_features(response))
    } else {
        Outcome::Ready(response)
    }
}

/// `response` with [`FEATURES`] as supported and finalized features (v3+ fields).
fn with_features(response: ApiVersionsResponse) -> ApiVersionsResponse {
    let name = |n: &'static str| StrBytes::from_static_str(n);
    response
        .with_supported_features(
            FEATURES
                .iter()
                .map(|(n, min, max, _)| {
                    SupportedFeatureKey::default().with_name(name(n)).with_min_version(*min).with_max_version(*max)
                })
                .collect(),
        )
        .with_finalized_features_epoch(FINALIZED_FEATURES_EPOCH)
        .with_finalized_features(
            FEATURES
                .iter()
                .filter(|(_, _, _, level)| *level > 0)
                .map(|(n, _, _, level)| {
                    FinalizedFeatureKey::default()
                        .with_name(name(n))
                        .with_min_version_level(*level)
                        .with_max_version_level(*level)
                })
                .collect(),
        )
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
    fn features_are_the_ones_of_a_kafka_4_0_cluster_with_kip_848_groups() {
        let r = with_features(ApiVersionsResponse::default());
        let supported: Vec<(&str, i16, i16)> =
            r.supported_features.iter().map(|f| (f.name.as_str(), f.min_version, f.max_version)).collect();
        assert_eq!(
            supported,
            vec![("metadata.version", 7, 25), ("group.version", 0, 1), ("kraft.version", 0, 0), ("transaction.version", 0, 0)]
        );
        let finalized: Vec<(&str, i16, i16)> =
            r.finalized_features.iter().map(|f| (f.name.as_str(), f.min_version_level, f.max_version_level)).collect();
        assert_eq!(finalized, vec![("metadata.version", 25, 25), ("group.version", 1, 1)]);
        assert_eq!(r.finalized_features_epoch, 1);
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

//! CreatePartitions (key 37): grows topics to a larger partition count; new
//! partitions are placed fewest-partitions-first like new topics.

use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::{CreatePartitionsRequest, CreatePartitionsResponse};

use super::util::sb;
use super::{Ctx, Versions};
use crate::shard::ShardRequest;

pub const VERSIONS: Versions = Versions { min: 0, max: 3 };

const INVALID_REQUEST: i16 = 42;
const UNKNOWN_SERVER_ERROR: i16 = -1;

/// Per topic: UNKNOWN_TOPIC_OR_PARTITION, INVALID_PARTITIONS (count not above the
/// current one), INVALID_REQUEST (duplicate topic in the request).
pub async fn handle(ctx: &Ctx, request: CreatePartitionsRequest) -> CreatePartitionsResponse {
    let mut seen = std::collections::HashMap::new();
    for t in &request.topics {
        *seen.entry(t.name.0.to_string()).or_insert(0) += 1;
    }
    let asked: Vec<(String, i32)> = request
        .topics
        .iter()
        .filter(|t| seen[t.name.0.as_str()] == 1)
        .map(|t| (t.name.0.to_string(), t.count))
        .collect();
    let validate_only = request.validate_only;
    let mut answers = if asked.is_empty() {
        Vec::new()
    } else {
        ctx.shard
            .ask(0, |reply| ShardRequest::CreatePartitions { topics: asked, validate_only, reply })
            .await
            .unwrap_or_default()
    }
    .into_iter();
    let results = request
        .topics
        .iter()
        .map(|t| {
            let r = CreatePartitionsTopicResult::default().with_name(t.name.clone());
            if seen[t.name.0.as_str()] > 1 {
                return r
                    .with_error_code(INVALID_REQUEST)
                    .with_error_message(Some(sb("Duplicate topic in request.")));
            }
            match answers.next() {
                Some(Ok(())) => r,
                Some(Err(e)) => {
                    r.with_error_code(e.code()).with_error_message(Some(sb(e.message())))
                }
                None => r.with_error_code(UNKNOWN_SERVER_ERROR),
            }
        })
        .collect();
    CreatePartitionsResponse::default().with_results(results)
}

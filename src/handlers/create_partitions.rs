//! CreatePartitions (key 37): grows topics to a larger partition count; new
//! partitions are placed fewest-partitions-first like new topics.

use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::{CreatePartitionsRequest, CreatePartitionsResponse};

use super::{Ctx, Outcome, Versions};
use crate::error::ResponseError;
use crate::protocol::strings::sb;
use crate::shard::ControlRequest;

pub const VERSIONS: Versions = Versions { min: 0, max: 3 };

/// Per topic: UNKNOWN_TOPIC_OR_PARTITION, INVALID_PARTITIONS (count not above the
/// current one), INVALID_REQUEST (duplicate topic in the request).
pub async fn handle(
    ctx: &Ctx,
    request: CreatePartitionsRequest,
) -> Outcome<CreatePartitionsResponse> {
    let mut seen = std::collections::HashMap::new();
    for t in &request.topics {
        *seen.entry(t.name.0.to_string()).or_insert(0) += 1;
    }
    // Kafka: ALTER on each topic, else TOPIC_AUTHORIZATION_FAILED.
    let denied: std::collections::HashSet<String> = request
        .topics
        .iter()
        .map(|t| t.name.0.to_string())
        .filter(|n| !ctx.authorize(crate::security::acl::AclOperation::Alter, crate::security::acl::ResourceType::Topic, n))
        .collect();
    let asked: Vec<(String, i32)> = request
        .topics
        .iter()
        .filter(|t| seen[t.name.0.as_str()] == 1 && !denied.contains(t.name.0.as_str()))
        .map(|t| (t.name.0.to_string(), t.count))
        .collect();
    let validate_only = request.validate_only;
    let growing = if asked.is_empty() {
        None
    } else {
        let topics = asked;
        Some(
            ctx.shard
                .ask_control(|reply| ControlRequest::CreatePartitions {
                    topics,
                    validate_only,
                    reply,
                })
                .await,
        )
    };
    Outcome::serial(async move {
        let mut answers = match growing {
            Some(rx) => rx.await.unwrap_or_default(),
            None => Vec::new(),
        }
        .into_iter();
        let results = request
            .topics
            .iter()
            .map(|t| {
                let r = CreatePartitionsTopicResult::default().with_name(t.name.clone());
                if seen[t.name.0.as_str()] > 1 {
                    return r
                        .with_error_code(ResponseError::InvalidRequest.code())
                        .with_error_message(Some(sb("Duplicate topic in request.")));
                }
                if denied.contains(t.name.0.as_str()) {
                    return r.with_error_code(ResponseError::TopicAuthorizationFailed.code());
                }
                match answers.next() {
                    Some(Ok(())) => r,
                    Some(Err(e)) => r
                        .with_error_code(e.error().code())
                        .with_error_message(Some(sb(e.message()))),
                    // The control shard did not answer (shutdown).
                    None => r.with_error_code(ResponseError::UnknownServerError.code()),
                }
            })
            .collect();
        CreatePartitionsResponse::default().with_results(results)
    })
}

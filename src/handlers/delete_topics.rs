//! DeleteTopics (key 20): by name (all versions) or by topic id (v6+, KIP-516).
//! The reply waits until the owning shards removed the partitions' directories.

use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::{DeleteTopicsRequest, DeleteTopicsResponse};

use super::{Ctx, Outcome, Versions};
use crate::error::ResponseError;
use crate::protocol::strings::{sb, topic_name};
use crate::security::acl::{AclOperation, ResourceType};
use crate::shard::ControlRequest;

pub const VERSIONS: Versions = Versions { min: 1, max: 6 };

/// Deletes topics. Errors per topic: UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID,
/// INVALID_REQUEST (both name and id given).
pub async fn handle(ctx: &Ctx, request: DeleteTopicsRequest) -> Outcome<DeleteTopicsResponse> {
    let v = ctx.api_version;
    let catalog = ctx.shard.catalog();
    // (requested name, requested id, resolved name or error)
    type Wanted = (Option<String>, uuid::Uuid, Result<String, ResponseError>);
    let mut wanted: Vec<Wanted> = Vec::new();
    if v >= 6 {
        for t in &request.topics {
            let entry = match (&t.name, t.topic_id.is_nil()) {
                (Some(n), true) => (Some(n.0.to_string()), t.topic_id, Ok(n.0.to_string())),
                (None, false) => match catalog.topic_by_id(t.topic_id) {
                    Some(meta) => (None, t.topic_id, Ok(meta.name.clone())),
                    None => (None, t.topic_id, Err(ResponseError::UnknownTopicId)),
                },
                _ => (
                    t.name.as_ref().map(|n| n.0.to_string()),
                    t.topic_id,
                    Err(ResponseError::InvalidRequest),
                ),
            };
            wanted.push(entry);
        }
    } else {
        for n in &request.topic_names {
            wanted.push((Some(n.0.to_string()), uuid::Uuid::nil(), Ok(n.0.to_string())));
        }
    }
    // Kafka: DELETE on each topic, else TOPIC_AUTHORIZATION_FAILED.
    for (_, _, resolved) in wanted.iter_mut() {
        if let Ok(name) = resolved {
            if !ctx.authorize(AclOperation::Delete, ResourceType::Topic, name) {
                *resolved = Err(ResponseError::TopicAuthorizationFailed);
            }
        }
    }
    let names: Vec<String> =
        wanted.iter().filter_map(|(_, _, r)| r.as_ref().ok().cloned()).collect();
    let deleting = if names.is_empty() {
        None
    } else {
        Some(ctx.shard.ask_control(|reply| ControlRequest::DeleteTopics { names, reply }).await)
    };
    Outcome::serial(async move {
        let mut answers = match deleting {
            Some(rx) => rx.await.unwrap_or_default(),
            None => Vec::new(),
        }
        .into_iter();

        let responses = wanted
            .into_iter()
            .map(|(name, id, resolved)| {
                let mut r = DeletableTopicResult::default();
                let outcome = match resolved {
                    Ok(_) => match answers.next() {
                        Some(Ok(meta)) => Ok(meta),
                        Some(Err(e)) => Err((e.error(), e.message().to_string())),
                        None => Err((
                            ResponseError::UnknownServerError,
                            "deletion was not answered".to_string(),
                        )),
                    },
                    Err(error) => Err((error, String::new())),
                };
                match outcome {
                    Ok(meta) => {
                        r.name = Some(topic_name(&meta.name));
                        if v >= 6 {
                            r.topic_id = meta.id;
                        }
                    }
                    Err((error, msg)) => {
                        r.name = name.as_deref().map(topic_name);
                        if v >= 6 {
                            r.topic_id = id;
                        }
                        r.error_code = error.code();
                        if v >= 5 && !msg.is_empty() {
                            r.error_message = Some(sb(&msg));
                        }
                    }
                }
                if v < 6 && r.name.is_none() {
                    r.name = Some(topic_name(""));
                }
                r
            })
            .collect();
        DeleteTopicsResponse::default().with_responses(responses)
    })
}

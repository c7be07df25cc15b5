//! DeleteTopics (key 20): by name (all versions) or by topic id (v6+, KIP-516).
//! The reply waits until the owning shards removed the partitions' directories.

use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::{DeleteTopicsRequest, DeleteTopicsResponse};

use super::util::{sb, topic_name};
use super::{Ctx, Versions};
use crate::shard::ShardRequest;

pub const VERSIONS: Versions = Versions { min: 1, max: 6 };

const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const INVALID_REQUEST: i16 = 42;
const UNKNOWN_TOPIC_ID: i16 = 100;
const UNKNOWN_SERVER_ERROR: i16 = -1;

/// Deletes topics. Errors per topic: UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID,
/// INVALID_REQUEST (both name and id given).
pub async fn handle(ctx: &Ctx, request: DeleteTopicsRequest) -> DeleteTopicsResponse {
    let v = ctx.api_version;
    let catalog = ctx.shard.catalog();
    // (requested name, requested id, resolved name or error)
    let mut wanted: Vec<(Option<String>, uuid::Uuid, Result<String, i16>)> = Vec::new();
    if v >= 6 {
        for t in &request.topics {
            let entry = match (&t.name, t.topic_id.is_nil()) {
                (Some(n), true) => (Some(n.0.to_string()), t.topic_id, Ok(n.0.to_string())),
                (None, false) => match catalog.topic_by_id(t.topic_id) {
                    Some(meta) => (None, t.topic_id, Ok(meta.name.clone())),
                    None => (None, t.topic_id, Err(UNKNOWN_TOPIC_ID)),
                },
                _ => (t.name.as_ref().map(|n| n.0.to_string()), t.topic_id, Err(INVALID_REQUEST)),
            };
            wanted.push(entry);
        }
    } else {
        for n in &request.topic_names {
            wanted.push((Some(n.0.to_string()), uuid::Uuid::nil(), Ok(n.0.to_string())));
        }
    }
    let names: Vec<String> =
        wanted.iter().filter_map(|(_, _, r)| r.as_ref().ok().cloned()).collect();
    let mut answers = if names.is_empty() {
        Vec::new()
    } else {
        ctx.shard
            .ask(0, |reply| ShardRequest::DeleteTopics { names, reply })
            .await
            .unwrap_or_default()
    }
    .into_iter();

    let responses = wanted
        .into_iter()
        .map(|(name, id, resolved)| {
            let mut r = DeletableTopicResult::default();
            let outcome = match resolved {
                Ok(_) => match answers.next() {
                    Some(Ok(meta)) => Ok(meta),
                    Some(Err(e)) => Err((e.code(), e.message().to_string())),
                    None => Err((UNKNOWN_SERVER_ERROR, "deletion was not answered".to_string())),
                },
                Err(code) => Err((code, String::new())),
            };
            match outcome {
                Ok(meta) => {
                    r.name = Some(topic_name(&meta.name));
                    if v >= 6 {
                        r.topic_id = meta.id;
                    }
                }
                Err((code, msg)) => {
                    r.name = name.as_deref().map(topic_name);
                    if v >= 6 {
                        r.topic_id = id;
                    }
                    r.error_code = if code == 0 { UNKNOWN_TOPIC_OR_PARTITION } else { code };
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
}

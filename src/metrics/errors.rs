//! The Kafka error codes a response carries, for the per-API error counters.

use kafka_protocol::messages::ResponseKind;
use kafka_protocol::ResponseError;

/// Appends to `out` every error code other than NONE (0) that `response` carries: its
/// top-level code and its per-topic, per-partition, per-group or per-coordinator codes,
/// for the APIs clients call in their steady state and the admin APIs with per-item
/// results. A response of another API adds nothing (it is counted as a request only).
pub fn error_codes(response: &ResponseKind, out: &mut Vec<i16>) {
    let mut add = |code: i16| {
        if code != 0 {
            out.push(code);
        }
    };
    match response {
        ResponseKind::Produce(r) => {
            r.responses.iter().flat_map(|t| &t.partition_responses).for_each(|p| add(p.error_code))
        }
        ResponseKind::Fetch(r) => {
            add(r.error_code);
            r.responses.iter().flat_map(|t| &t.partitions).for_each(|p| add(p.error_code));
        }
        ResponseKind::ListOffsets(r) => {
            r.topics.iter().flat_map(|t| &t.partitions).for_each(|p| add(p.error_code))
        }
        ResponseKind::Metadata(r) => r.topics.iter().for_each(|t| add(t.error_code)),
        ResponseKind::OffsetCommit(r) => {
            r.topics.iter().flat_map(|t| &t.partitions).for_each(|p| add(p.error_code))
        }
        ResponseKind::OffsetFetch(r) => {
            add(r.error_code);
            r.groups.iter().for_each(|g| add(g.error_code));
        }
        ResponseKind::FindCoordinator(r) => {
            add(r.error_code);
            r.coordinators.iter().for_each(|c| add(c.error_code));
        }
        ResponseKind::JoinGroup(r) => add(r.error_code),
        ResponseKind::SyncGroup(r) => add(r.error_code),
        ResponseKind::Heartbeat(r) => add(r.error_code),
        ResponseKind::LeaveGroup(r) => add(r.error_code),
        ResponseKind::ConsumerGroupHeartbeat(r) => add(r.error_code),
        ResponseKind::InitProducerId(r) => add(r.error_code),
        ResponseKind::ApiVersions(r) => add(r.error_code),
        ResponseKind::ListGroups(r) => add(r.error_code),
        ResponseKind::DescribeGroups(r) => r.groups.iter().for_each(|g| add(g.error_code)),
        ResponseKind::DeleteGroups(r) => r.results.iter().for_each(|g| add(g.error_code)),
        ResponseKind::CreateTopics(r) => r.topics.iter().for_each(|t| add(t.error_code)),
        ResponseKind::DeleteTopics(r) => r.responses.iter().for_each(|t| add(t.error_code)),
        ResponseKind::CreatePartitions(r) => r.results.iter().for_each(|t| add(t.error_code)),
        ResponseKind::DeleteRecords(r) => {
            r.topics.iter().flat_map(|t| &t.partitions).for_each(|p| add(p.error_code))
        }
        _ => {}
    }
}

/// The `error` label of a code: Kafka's name (`NOT_LEADER_OR_FOLLOWER`), or the number
/// for a code this build does not know.
pub fn error_name(code: i16) -> String {
    match ResponseError::try_from_code(code) {
        Some(ResponseError::Unknown(_)) | None => code.to_string(),
        Some(e) => upper_snake(&format!("{e:?}")),
    }
}

/// `NotLeaderOrFollower` -> `NOT_LEADER_OR_FOLLOWER`.
fn upper_snake(camel: &str) -> String {
    let mut out = String::with_capacity(camel.len() + 8);
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::produce_response::{
        PartitionProduceResponse, TopicProduceResponse,
    };
    use kafka_protocol::messages::ProduceResponse;

    #[test]
    fn partition_codes_of_a_produce_response_are_found() {
        let p = |code| PartitionProduceResponse::default().with_error_code(code);
        let t = TopicProduceResponse::default().with_partition_responses(vec![p(0), p(6), p(3)]);
        let r = ResponseKind::Produce(ProduceResponse::default().with_responses(vec![t]));
        let mut out = Vec::new();
        error_codes(&r, &mut out);
        assert_eq!(out, vec![6, 3]);
    }

    #[test]
    fn codes_are_named_as_kafka_names_them() {
        assert_eq!(error_name(6), "NOT_LEADER_OR_FOLLOWER");
        assert_eq!(error_name(3), "UNKNOWN_TOPIC_OR_PARTITION");
        assert_eq!(error_name(-1), "UNKNOWN_SERVER_ERROR");
        assert_eq!(error_name(30000), "30000");
    }
}

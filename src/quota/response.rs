//! Writing a throttle into a response (KIP-219: the response leaves at once carrying
//! `throttle_time_ms`, and the client holds back its next requests for that long).

use kafka_protocol::messages::ResponseKind;

/// Generates [`set_throttle_time`] over the served APIs whose response has a
/// `throttle_time_ms` field (SaslHandshake, SaslAuthenticate and WriteTxnMarkers have
/// none; Kafka exempts them from throttling too).
macro_rules! throttled_apis {
    ($($api:ident),* $(,)?) => {
        /// Sets the response's `throttle_time_ms` to `ms` (saturated to i32); false for
        /// a response without the field.
        pub fn set_throttle_time(response: &mut ResponseKind, ms: u64) -> bool {
            let ms = ms.min(i32::MAX as u64) as i32;
            match response {
                $(ResponseKind::$api(r) => {
                    r.throttle_time_ms = ms;
                    true
                })*
                _ => false,
            }
        }
    };
}

throttled_apis! {
    Produce, Fetch, ListOffsets, Metadata, OffsetCommit, OffsetFetch, FindCoordinator,
    JoinGroup, Heartbeat, LeaveGroup, SyncGroup, DescribeGroups, ListGroups, ApiVersions,
    CreateTopics, DeleteTopics, DeleteRecords, OffsetForLeaderEpoch, InitProducerId,
    TxnOffsetCommit, DescribeAcls, CreateAcls, DeleteAcls, DescribeConfigs, AlterConfigs,
    CreatePartitions, DeleteGroups, OffsetDelete, DescribeCluster, ConsumerGroupHeartbeat,
    ConsumerGroupDescribe, DescribeLogDirs, IncrementalAlterConfigs,
    AlterPartitionReassignments, ListPartitionReassignments, ElectLeaders,
    DescribeTopicPartitions, DescribeProducers, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
    DescribeTransactions, ListTransactions, DescribeUserScramCredentials,
    AlterUserScramCredentials, DescribeClientQuotas, AlterClientQuotas,
}

/// A throttled Fetch sends no records (Kafka's `getThrottledResponse`): every
/// partition's records are emptied, its other fields (high watermark, errors) kept, so
/// the consumer fetches the same offsets again once the throttle is over.
pub fn empty_fetch_records(response: &mut ResponseKind) {
    if let ResponseKind::Fetch(fetch) = response {
        for p in fetch.responses.iter_mut().flat_map(|t| t.partitions.iter_mut()) {
            if p.records.is_some() {
                p.records = Some(bytes::Bytes::new());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::{ProduceResponse, SaslHandshakeResponse};

    #[test]
    fn sets_the_field_where_there_is_one() {
        let mut r = ResponseKind::Produce(ProduceResponse::default());
        assert!(set_throttle_time(&mut r, 1234));
        let ResponseKind::Produce(p) = &r else { unreachable!() };
        assert_eq!(p.throttle_time_ms, 1234);
        let mut r = ResponseKind::SaslHandshake(SaslHandshakeResponse::default());
        assert!(!set_throttle_time(&mut r, 1));
        let mut r = ResponseKind::Produce(ProduceResponse::default());
        set_throttle_time(&mut r, u64::MAX);
        let ResponseKind::Produce(p) = &r else { unreachable!() };
        assert_eq!(p.throttle_time_ms, i32::MAX);
    }
}

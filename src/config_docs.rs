//! The documentation DescribeConfigs (v3+) returns for a config when the request sets
//! `include_documentation` (null otherwise, as Kafka does): one short text per topic
//! config and per broker config shardlog describes, with its unit. Written for
//! shardlog; where shardlog only stores a value without acting on it, the text says so.

/// Topic configs, sorted by name.
const TOPIC: &[(&str, &str)] = &[
    ("cleanup.policy", "What happens to old log segments: `delete` removes them by time or size (retention.ms, retention.bytes), `compact` keeps the latest record of each key; both may be listed. A list of strings."),
    ("compression.gzip.level", "Compression level used when compression.type is gzip: 1 to 9, or -1 for the codec's default. Stored only: shardlog recompresses with the codec's default level."),
    ("compression.lz4.level", "Compression level used when compression.type is lz4: 1 to 17. Stored only: shardlog recompresses with the codec's default level."),
    ("compression.type", "Codec record batches are stored with: uncompressed, gzip, snappy, lz4, zstd, or producer to keep each batch as the producer compressed it."),
    ("compression.zstd.level", "Compression level used when compression.type is zstd: -131072 to 22. Stored only: shardlog recompresses with the codec's default level."),
    ("delete.retention.ms", "How long tombstones (records with a null value) stay in a compacted log after compaction reaches them, in milliseconds, so that consumers can still see the deletion."),
    ("errors.deadletterqueue.group.enable", "Whether share groups may write records they fail to process to a dead letter queue topic. Stored only: shardlog has no share groups."),
    ("file.delete.delay.ms", "Time between removing a segment from the log and deleting its files, in milliseconds."),
    ("flush.messages", "Number of records appended between two forced flushes of the log to disk. Stored only: shardlog flushes by its --flush policy."),
    ("flush.ms", "Longest time a record may stay in the log before it is flushed to disk, in milliseconds. Stored only: shardlog flushes by its --flush policy."),
    ("follower.replication.throttled.replicas", "Replicas whose follower replication is throttled: partition:broker pairs separated by commas, or * for all. Stored only: shardlog has no followers."),
    ("index.interval.bytes", "Bytes of record batches between two entries of the sparse offset and time indexes; smaller means larger indexes and shorter scans."),
    ("leader.replication.throttled.replicas", "Replicas whose leader-side replication is throttled: partition:broker pairs separated by commas, or * for all. Stored only: shardlog has no followers."),
    ("local.retention.bytes", "Largest size a partition's local log may reach when remote storage is enabled, in bytes; -2 uses retention.bytes. Stored only: shardlog has no remote storage."),
    ("local.retention.ms", "How long local segments are kept when remote storage is enabled, in milliseconds; -2 uses retention.ms. Stored only: shardlog has no remote storage."),
    ("max.compaction.lag.ms", "Longest time a record may stay uncompacted in a compacted log, in milliseconds; the active segment is rolled by this age so that it becomes cleanable."),
    ("max.decompressed.message.bytes", "Largest size a record batch may have once decompressed, in bytes. Stored only."),
    ("max.message.bytes", "Largest record batch the topic accepts, in bytes after compression; a larger one fails with MESSAGE_TOO_LARGE."),
    ("message.timestamp.after.max.ms", "How far in the future a record's CreateTime may be, relative to the broker's clock, in milliseconds; a later one fails with INVALID_TIMESTAMP. Stored only: shardlog enforces the default, 3600000."),
    ("message.timestamp.before.max.ms", "How far in the past a record's CreateTime may be, relative to the broker's clock, in milliseconds. Stored only."),
    ("message.timestamp.type", "Which timestamp records keep: CreateTime (the producer's) or LogAppendTime (the broker's clock when the batch is appended)."),
    ("min.cleanable.dirty.ratio", "Share of a compacted log that must be uncompacted before the cleaner takes it, from 0 to 1."),
    ("min.compaction.lag.ms", "Shortest time a record stays uncompacted in a compacted log, in milliseconds."),
    ("min.insync.replicas", "Fewest in-sync replicas that must have a write for an acks=all produce to succeed. Stored only: each partition has one replica."),
    ("preallocate", "Whether a new segment file is allocated at its full size when it is created. Stored only."),
    ("remote.copy.lag.bytes", "Bytes a partition's local log may hold beyond what is copied to remote storage; -1 means no limit. Stored only: shardlog has no remote storage."),
    ("remote.copy.lag.ms", "How long a segment may wait before it is copied to remote storage, in milliseconds; -1 means no limit. Stored only: shardlog has no remote storage."),
    ("remote.log.copy.disable", "Whether copying segments to remote storage is stopped for this topic. Stored only: shardlog has no remote storage."),
    ("remote.log.delete.on.disable", "Whether the topic's remote segments are deleted when remote storage is turned off for it. Stored only: shardlog has no remote storage."),
    ("remote.storage.enable", "Whether the topic keeps segments in remote (tiered) storage. Stored only: shardlog has no remote storage."),
    ("retention.bytes", "Size a partition may keep under the delete policy, in bytes: the oldest sealed segments are deleted while it stays above this; -1 means no size limit."),
    ("retention.ms", "How long records are kept under the delete policy, in milliseconds: a sealed segment whose newest record is older is deleted; -1 keeps records forever."),
    ("segment.bytes", "Size of a log segment file, in bytes: a new segment is rolled when an append would pass it."),
    ("segment.index.bytes", "Size of a segment's offset and time index files, in bytes. Stored only."),
    ("segment.jitter.ms", "Random time subtracted from segment.ms per segment, in milliseconds, to spread rolls. Stored only."),
    ("segment.ms", "Age at which the active segment is rolled even if it is not full, in milliseconds, so that retention or compaction can reach its records."),
    ("unclean.leader.election.enable", "Whether a replica outside the ISR may become leader, at the cost of losing records. Stored only: each partition has one replica."),
];

/// Broker configs, sorted by name.
const BROKER: &[(&str, &str)] = &[
    ("advertised.listeners", "Per listener, the address clients that came in through it are told to connect to, as a PROTOCOL://host:port list (flags --advertised-listeners, or --advertised-listener for the --listen listener); null means the listeners addresses."),
    ("auto.create.topics.enable", "Whether a Metadata request for an unknown topic creates it (flag --auto-create-topics)."),
    ("background.threads", "Threads for background work. Stored only."),
    ("broker.id", "This broker's id, the same as node.id (flag --node-id)."),
    ("compression.gzip.level", "Default compression.gzip.level of topics: 1 to 9, or -1 for the codec's default."),
    ("compression.lz4.level", "Default compression.lz4.level of topics: 1 to 17."),
    ("compression.type", "Default compression.type of topics: uncompressed, gzip, snappy, lz4, zstd or producer."),
    ("compression.zstd.level", "Default compression.zstd.level of topics: -131072 to 22."),
    ("connections.max.idle.ms", "A connection with nothing in flight that sends nothing for this long is closed, in milliseconds; 0 never closes it (flag --connections-max-idle-ms)."),
    ("fetch.max.bytes", "Most bytes of record batches in one Fetch response, whatever the consumer asks for; the first batch still comes whole above it (flag --fetch-max-bytes)."),
    ("group.initial.rebalance.delay.ms", "How long a new, empty classic group waits for more members before its first rebalance completes, in milliseconds (flag --group-initial-rebalance-delay-ms)."),
    ("group.max.session.timeout.ms", "Largest session timeout a classic group member may ask for, in milliseconds (flag --group-max-session-timeout-ms)."),
    ("group.min.session.timeout.ms", "Smallest session timeout a classic group member may ask for, in milliseconds (flag --group-min-session-timeout-ms)."),
    ("listeners", "Addresses every shard listens on, as a PROTOCOL://host:port list, PROTOCOL PLAINTEXT or SASL_PLAINTEXT (flag --listeners; --listen for one PLAINTEXT listener)."),
    ("log.cleaner.backoff.ms", "How long each shard's log cleaner sleeps between passes, in milliseconds (flag --log-cleaner-backoff-ms)."),
    ("log.cleaner.dedupe.buffer.size", "Bytes of keys one cleaner pass may map, per shard; a dirtier log is cleaned over several passes (flag --log-cleaner-dedupe-buffer-size)."),
    ("log.cleaner.delete.retention.ms", "Default delete.retention.ms of topics: how long tombstones stay after compaction reaches them, in milliseconds."),
    ("log.cleaner.enable", "Whether the log cleaner compacts cleanup.policy=compact topics and the group offsets log (flag --log-cleaner-enable)."),
    ("log.cleaner.io.buffer.load.factor", "Load factor of the cleaner's key map. Stored only."),
    ("log.cleaner.io.buffer.size", "Bytes of the cleaner's read and write buffers. Stored only."),
    ("log.cleaner.io.max.bytes.per.second", "Bytes per second each shard's cleaner may read plus write (flag --log-cleaner-io-max-bytes-per-second)."),
    ("log.cleaner.max.compaction.lag.ms", "Default max.compaction.lag.ms of topics, in milliseconds."),
    ("log.cleaner.min.cleanable.ratio", "Default min.cleanable.dirty.ratio of topics, from 0 to 1."),
    ("log.cleaner.min.compaction.lag.ms", "Default min.compaction.lag.ms of topics, in milliseconds."),
    ("log.cleaner.threads", "Number of cleaner threads. Stored only: each shard cleans its own partitions."),
    ("log.cleanup.policy", "Default cleanup.policy of topics: delete, compact, or both."),
    ("log.dirs", "Directory holding the topic catalog and every partition's segments (flag --data-dir)."),
    ("log.flush.interval.messages", "Default flush.messages of topics. Stored only: shardlog flushes by its --flush policy."),
    ("log.flush.interval.ms", "Default flush.ms of topics, in milliseconds; null falls back to log.flush.scheduler.interval.ms. Stored only."),
    ("log.flush.scheduler.interval.ms", "How often logs are checked for a due flush, in milliseconds. Not used: shardlog flushes by its --flush policy."),
    ("log.index.interval.bytes", "Default index.interval.bytes of topics: bytes of batches between two sparse index entries (flag --index-interval-bytes)."),
    ("log.index.size.max.bytes", "Default segment.index.bytes of topics, in bytes. Stored only."),
    ("log.local.retention.bytes", "Default local.retention.bytes of topics, in bytes. Stored only."),
    ("log.local.retention.ms", "Default local.retention.ms of topics, in milliseconds. Stored only."),
    ("log.message.timestamp.after.max.ms", "Default message.timestamp.after.max.ms of topics, in milliseconds. Stored only: shardlog enforces 3600000."),
    ("log.message.timestamp.before.max.ms", "Default message.timestamp.before.max.ms of topics, in milliseconds. Stored only."),
    ("log.message.timestamp.type", "Default message.timestamp.type of topics: CreateTime or LogAppendTime."),
    ("log.preallocate", "Default preallocate of topics. Stored only."),
    ("log.remote.copy.lag.bytes", "Default remote.copy.lag.bytes of topics, in bytes. Stored only."),
    ("log.remote.copy.lag.ms", "Default remote.copy.lag.ms of topics, in milliseconds. Stored only."),
    ("log.retention.bytes", "Default retention.bytes of topics, per partition; -1 means no size limit (flag --log-retention-bytes)."),
    ("log.retention.check.interval.ms", "How often each shard applies retention to its partitions, in milliseconds (flag --log-retention-check-interval-ms)."),
    ("log.retention.hours", "Default retention.ms of topics in hours, used when log.retention.ms is null."),
    ("log.retention.minutes", "Default retention.ms of topics in minutes, used when log.retention.ms is null. Not settable in shardlog."),
    ("log.retention.ms", "Default retention.ms of topics, in milliseconds; -1 keeps records forever; null falls back to log.retention.hours (flag --log-retention-ms)."),
    ("log.roll.hours", "Default segment.ms of topics in hours, used when log.roll.ms is null."),
    ("log.roll.jitter.hours", "Default segment.jitter.ms of topics in hours, used when log.roll.jitter.ms is null."),
    ("log.roll.jitter.ms", "Default segment.jitter.ms of topics, in milliseconds; null falls back to log.roll.jitter.hours. Stored only."),
    ("log.roll.ms", "Default segment.ms of topics, in milliseconds; null falls back to log.roll.hours (flag --log-segment-ms)."),
    ("log.segment.bytes", "Default segment.bytes of topics: segment file size, in bytes (flag --segment-bytes)."),
    ("log.segment.delete.delay.ms", "Default file.delete.delay.ms of topics, in milliseconds."),
    ("max.connections", "Most client connections open at once; at the limit new clients wait in the listen backlog (flag --max-connections)."),
    ("max.connections.per.ip", "Most connections open at once from one IP address; one more is closed at once (flag --max-connections-per-ip)."),
    ("max.decompressed.message.bytes", "Default max.decompressed.message.bytes of topics, in bytes. Stored only."),
    ("message.max.bytes", "Default max.message.bytes of topics: largest record batch accepted, in bytes (flag --max-message-bytes)."),
    ("min.insync.replicas", "Default min.insync.replicas of topics. Stored only: each partition has one replica."),
    ("node.id", "This broker's node id (flag --node-id)."),
    ("num.io.threads", "Threads that process requests. Stored only: each shard runs on its own core."),
    ("num.network.threads", "Threads that read and write sockets. Stored only: each shard runs on its own core."),
    ("num.partitions", "Number of partitions of an auto-created topic (flag --default-partitions)."),
    ("num.replica.fetchers", "Threads that fetch from leaders. Stored only: shardlog has no followers."),
    ("offsets.retention.minutes", "How long the committed offsets of an empty group are kept, in minutes (flag --offsets-retention-minutes)."),
    ("offsets.topic.segment.bytes", "Segment size of the group offsets log, in bytes (flag --offsets-topic-segment-bytes)."),
    ("producer.id.expiration.ms", "How long a partition remembers an idempotent producer after its last batch, in milliseconds; a forgotten producer's next batch is taken with any sequence (flag --producer-id-expiration-ms)."),
    ("queued.max.request.bytes", "Bytes of requests read and not yet answered that the broker holds at once; -1 means no limit (flag --queued-max-request-bytes)."),
    ("socket.request.max.bytes", "Largest request frame accepted, in bytes; a larger one closes the connection (flag --max-request-bytes)."),
    ("unclean.leader.election.enable", "Default unclean.leader.election.enable of topics. Stored only: each partition has one replica."),
];

fn find(table: &'static [(&'static str, &'static str)], name: &str) -> Option<&'static str> {
    table.binary_search_by(|(n, _)| n.cmp(&name)).ok().map(|i| table[i].1)
}

/// The documentation of topic config `name`.
pub fn topic(name: &str) -> Option<&'static str> {
    find(TOPIC, name)
}

/// The documentation of broker config `name`.
pub fn broker(name: &str) -> Option<&'static str> {
    find(BROKER, name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_described_config_has_documentation_and_the_tables_are_sorted() {
        for table in [TOPIC, BROKER] {
            assert!(table.windows(2).all(|w| w[0].0 < w[1].0), "unsorted at {table:?}");
        }
        for n in crate::topic_config::names() {
            assert!(topic(n).is_some(), "no documentation for topic config {n}");
        }
        for d in crate::broker_config::DESCRIBED {
            assert!(broker(d.name).is_some(), "no documentation for broker config {}", d.name);
        }
        assert_eq!(TOPIC.len(), crate::topic_config::names().count());
        assert_eq!(BROKER.len(), crate::broker_config::DESCRIBED.len());
    }
}

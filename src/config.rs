//! The broker's configuration: every tunable is a clap flag with a `SHARDLOG_*`
//! environment fallback, its unit and its default documented in `--help`.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;

use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches, Parser, ValueEnum};

use crate::net::listeners::Listener;

/// When a partition's segment writes are made durable with `fdatasync`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FlushPolicy {
    /// fdatasync after every write, before the produce is acknowledged.
    Always,
    /// fdatasync every `--flush-interval-ms`; acks wait only for the write.
    Interval,
    /// never fdatasync explicitly (the kernel decides); acks wait only for the write.
    Never,
}

/// How log lines are written to stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event: time, level, target, message, fields.
    Text,
    /// One JSON object per line (`timestamp`, `level`, `target`, `fields` with the
    /// message and every field, `span` context), for log collectors.
    Json,
}

/// How a Produce request's batches for partitions owned by other shards cross cores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProduceFanout {
    /// One mesh message per destination shard per Produce request, carrying every
    /// batch that shard owns (`DataRequest::AppendMany`), and one reply.
    PerShard,
    /// One mesh message (`DataRequest::Append`) and one reply per record batch.
    PerBatch,
}

/// Command-line configuration of one shardlog process.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "shardlog",
    version,
    about = "A Kafka-compatible, thread-per-core message broker",
    after_help = "Live view of a running broker: shardlog top [--metrics host:port] (see shardlog top --help)"
)]
pub struct Config {
    /// Address every shard listens on (SO_REUSEPORT spreads connections over cores).
    /// Port 0: a free port is picked at start (one for every shard), advertised, and
    /// logged in the "starting shardlog" line.
    #[arg(long, env = "SHARDLOG_LISTEN", default_value = "127.0.0.1:9092")]
    pub listen: SocketAddr,

    /// host:port returned to clients in Metadata and FindCoordinator.
    /// Default: the --listen address.
    #[arg(long, env = "SHARDLOG_ADVERTISED_LISTENER")]
    pub advertised_listener: Option<String>,

    /// Listeners in Kafka's syntax (`listeners`): comma-separated
    /// `PROTOCOL://host:port`, PROTOCOL one of PLAINTEXT, SSL, SASL_PLAINTEXT and
    /// SASL_SSL (SSL and SASL_SSL need --ssl-keystore-location); an empty host binds
    /// every interface; port 0 picks a free port as for --listen. Each is bound on
    /// every shard (SO_REUSEPORT). Default: `--listen` as the one PLAINTEXT listener.
    #[arg(long, env = "SHARDLOG_LISTENERS")]
    pub listeners: Option<String>,

    /// Per listener, the `PROTOCOL://host:port` returned in Metadata, FindCoordinator
    /// and DescribeCluster to clients that came in through it (Kafka
    /// `advertised.listeners`). A listener not named here advertises its bound address
    /// (or `--advertised-listener` for the `--listen` one).
    #[arg(long, env = "SHARDLOG_ADVERTISED_LISTENERS")]
    pub advertised_listeners: Option<String>,

    /// Advertise each shard as a broker node of its own: shard i also listens, alone,
    /// on port PORT+i of the listener's host (0: a free port per shard, picked at
    /// every start: clients that knew the old ports must bootstrap again after a
    /// restart, so give a fixed PORT to a broker that restarts) and is node `--node-id`+i in Metadata, DescribeCluster and
    /// FindCoordinator, the leader of the partitions it owns and the coordinator of
    /// its groups and transactional ids. Clients then send each request to the shard
    /// that owns what it names (no hop between cores) and keep one fetch in flight
    /// per shard (and one connection per node: N+1 per client, which
    /// `--max-connections-per-ip` must allow). The shared listener still serves
    /// everything (bootstrap). Needs exactly one listener, advertising the port it
    /// binds. Default: off (one node).
    #[arg(long, env = "SHARDLOG_SHARD_PORTS")]
    pub shard_ports: Option<u16>,

    /// SASL mechanisms offered on SASL_PLAINTEXT and SASL_SSL listeners, comma-separated (Kafka
    /// `sasl.enabled.mechanisms`; Kafka's default is GSSAPI, which shardlog does not
    /// implement): PLAIN, SCRAM-SHA-256, SCRAM-SHA-512.
    #[arg(
        long,
        env = "SHARDLOG_SASL_ENABLED_MECHANISMS",
        default_value = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
    )]
    pub sasl_enabled_mechanisms: String,

    /// The users SASL/PLAIN accepts: a text file of `user:password` lines (the
    /// password is everything after the first `:`; blank lines and lines starting
    /// with `#` are skipped), read once at start-up. Without it PLAIN accepts no one.
    #[arg(long, env = "SHARDLOG_SASL_PLAIN_USERS_FILE")]
    pub sasl_plain_users_file: Option<PathBuf>,

    /// Longest a SASL session lasts before the client must re-authenticate, in ms
    /// (Kafka `connections.max.reauth.ms`, KIP-368): told to clients in SaslAuthenticate
    /// v1+; a connection past it that sends anything but a re-authentication is closed.
    /// 0: sessions never expire.
    #[arg(long, env = "SHARDLOG_CONNECTIONS_MAX_REAUTH_MS", default_value_t = 0)]
    pub connections_max_reauth_ms: u64,

    /// The TLS keystore of SSL and SASL_SSL listeners: one PEM file holding the private
    /// key (PKCS#8, PKCS#1 or SEC1, unencrypted) and the certificate chain, leaf first
    /// (Kafka `ssl.keystore.location` with `ssl.keystore.type=PEM`). Read once at
    /// start-up; a bad file stops the start.
    #[arg(long, env = "SHARDLOG_SSL_KEYSTORE_LOCATION")]
    pub ssl_keystore_location: Option<PathBuf>,

    /// The CA certificates (a PEM bundle) that client certificates must chain to on SSL
    /// and SASL_SSL listeners (Kafka `ssl.truststore.location` with
    /// `ssl.truststore.type=PEM`). Needed by --ssl-client-auth requested or required.
    #[arg(long, env = "SHARDLOG_SSL_TRUSTSTORE_LOCATION")]
    pub ssl_truststore_location: Option<PathBuf>,

    /// Whether SSL listeners ask clients for a certificate (Kafka `ssl.client.auth`):
    /// none, requested (a client without one is `User:ANONYMOUS`) or required (a client
    /// without a verified one fails the handshake). The principal is `User:` and the
    /// certificate's subject (RFC 2253, e.g. `User:CN=alice,OU=eng,O=acme`). SASL_SSL
    /// listeners never ask (as Kafka applies its broker-wide setting to SSL only).
    #[arg(long, env = "SHARDLOG_SSL_CLIENT_AUTH", value_enum, default_value = "none")]
    pub ssl_client_auth: crate::security::tls::ClientAuth,

    /// Address of the metrics endpoint, served over HTTP by the control shard:
    /// `/metrics` (Prometheus text format), `/healthz` (the process is up) and
    /// `/readyz` (every shard has recovered and serves). Empty: no endpoint. When the
    /// address is taken the broker logs a warning and runs without it.
    #[arg(long, env = "SHARDLOG_METRICS_LISTEN", default_value = "127.0.0.1:9644")]
    pub metrics_listen: String,

    /// Export each consumer group's committed offset and lag per partition
    /// (`shardlog_consumer_group_committed_offset`, `shardlog_consumer_group_lag`): one
    /// series per group and partition, so as many series as clients make groups.
    #[arg(long, env = "SHARDLOG_METRICS_CONSUMER_LAG", default_value_t = true, action = clap::ArgAction::Set)]
    pub metrics_consumer_lag: bool,

    /// Export record batch bytes in and out per partition
    /// (`shardlog_partition_bytes_in_total`, `shardlog_partition_bytes_out_total`; what
    /// `shardlog top` ranks the busiest partitions by): two series per partition that
    /// moved data since start.
    #[arg(long, env = "SHARDLOG_METRICS_PARTITIONS", default_value_t = true, action = clap::ArgAction::Set)]
    pub metrics_partitions: bool,

    /// This broker's node id (Kafka `node.id`).
    #[arg(long, env = "SHARDLOG_NODE_ID", default_value_t = 0)]
    pub node_id: i32,

    /// Directory holding the topic catalog and every partition's segments.
    #[arg(long, env = "SHARDLOG_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,

    /// Number of shards (one pinned executor per core). Default: every CPU this
    /// process may run on.
    #[arg(long, env = "SHARDLOG_CORES")]
    pub cores: Option<usize>,

    /// io_uring registered-buffer memory per shard, in bytes.
    #[arg(long, env = "SHARDLOG_IO_MEMORY", default_value_t = 10 << 20)]
    pub io_memory: usize,

    /// io_uring submission ring depth (entries) per shard.
    #[arg(long, env = "SHARDLOG_RING_DEPTH", default_value_t = 128)]
    pub ring_depth: usize,

    /// Largest request frame accepted, in bytes; a larger (or negative) length
    /// closes the connection.
    #[arg(long, env = "SHARDLOG_MAX_REQUEST_BYTES", default_value_t = 100 << 20)]
    pub max_request_bytes: usize,

    /// Bytes of requests read from clients and not yet answered that the broker holds
    /// at once, for the whole broker; each shard gets an equal share for the
    /// connections it serves (Kafka `queued.max.request.bytes`). Over it, shards stop
    /// reading from their sockets until responses go out. A request larger than a
    /// shard's share waits until it is alone. 0: no limit.
    #[arg(long, env = "SHARDLOG_QUEUED_MAX_REQUEST_BYTES", default_value_t = 256 << 20)]
    pub queued_max_request_bytes: usize,

    /// Bytes of requests read and not yet answered that one connection may hold; over
    /// it the broker stops reading that connection until its responses go out (one
    /// pipelining client cannot take a shard's whole share). 0: no limit.
    #[arg(
        long,
        env = "SHARDLOG_QUEUED_MAX_REQUEST_BYTES_PER_CONNECTION",
        default_value_t = 16 << 20
    )]
    pub queued_max_request_bytes_per_connection: usize,

    /// Most client connections open at once over the whole broker (Kafka
    /// `max.connections`); at the limit the broker stops accepting and new clients
    /// wait in the listen backlog until a connection closes. Default: no limit.
    #[arg(long, env = "SHARDLOG_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,

    /// Most connections open at once from one client IP address (Kafka
    /// `max.connections.per.ip`); one more is closed as soon as it is accepted, and
    /// logged. Default: no limit.
    #[arg(long, env = "SHARDLOG_MAX_CONNECTIONS_PER_IP")]
    pub max_connections_per_ip: Option<usize>,

    /// A connection with no request in flight that reads no byte for this long is
    /// closed, in ms (Kafka `connections.max.idle.ms`); this also drops a client that
    /// sent part of a frame and stalled. 0: never.
    #[arg(long, env = "SHARDLOG_CONNECTIONS_MAX_IDLE_MS", default_value_t = 600_000)]
    pub connections_max_idle_ms: u64,

    /// A connection whose client takes no byte of a pending response for this long is
    /// closed, in ms: it stopped reading, and its queued responses would otherwise
    /// hold the shard's queued-request budget (`--queued-max-request-bytes`). Any
    /// progress restarts the clock, so a slow reader is never cut. shardlog's own
    /// limit (Kafka has none apart from `connections.max.idle.ms`). 0: never.
    #[arg(long, env = "SHARDLOG_RESPONSE_WRITE_STALL_MS", default_value_t = 60_000)]
    pub response_write_stall_ms: u64,

    /// Create a topic when a Metadata request names it (Kafka
    /// `auto.create.topics.enable`; producers ask for metadata first).
    #[arg(
        long,
        env = "SHARDLOG_AUTO_CREATE_TOPICS",
        default_value_t = true,
        action = clap::ArgAction::Set
    )]
    pub auto_create_topics: bool,

    /// Partitions of an auto-created topic (Kafka `num.partitions`).
    #[arg(long, env = "SHARDLOG_DEFAULT_PARTITIONS", default_value_t = 1)]
    pub default_partitions: i32,

    /// Default `retention.ms` of topics (Kafka `log.retention.ms`; 7 days): sealed
    /// segments whose newest record is older are deleted; -1 keeps them forever.
    #[arg(
        long,
        env = "SHARDLOG_LOG_RETENTION_MS",
        default_value_t = 604_800_000,
        allow_negative_numbers = true
    )]
    pub log_retention_ms: i64,

    /// Default `retention.bytes` of topics (Kafka `log.retention.bytes`): the oldest
    /// sealed segments of a partition are deleted while it stays at least this large;
    /// -1: no size limit.
    #[arg(long, env = "SHARDLOG_LOG_RETENTION_BYTES", default_value_t = -1, allow_negative_numbers = true)]
    pub log_retention_bytes: i64,

    /// Default `segment.ms` of topics (Kafka `log.roll.ms`; 7 days): an append to an
    /// active segment older than this (by the broker's clock at its first append) rolls
    /// a new one, so that retention can delete the old data.
    #[arg(long, env = "SHARDLOG_LOG_SEGMENT_MS", default_value_t = 604_800_000)]
    pub log_segment_ms: i64,

    /// How often each shard applies retention to its partitions, ms (Kafka
    /// `log.retention.check.interval.ms`).
    #[arg(long, env = "SHARDLOG_LOG_RETENTION_CHECK_INTERVAL_MS", default_value_t = 300_000)]
    pub log_retention_check_interval_ms: u64,

    /// How long a partition remembers an idempotent producer that has stopped writing
    /// to it, ms, measured from its last batch's max timestamp (Kafka
    /// `producer.id.expiration.ms`, KIP-854; default one day). A forgotten producer's
    /// next batch is taken with any sequence, as a new producer's is.
    #[arg(long, env = "SHARDLOG_PRODUCER_ID_EXPIRATION_MS", default_value_t = 86_400_000,
          value_parser = clap::value_parser!(i64).range(1..))]
    pub producer_id_expiration_ms: i64,

    /// How often each shard looks for expired producer ids, ms (Kafka
    /// `producer.id.expiration.check.interval.ms`).
    #[arg(
        long,
        env = "SHARDLOG_PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS",
        default_value_t = 600_000
    )]
    pub producer_id_expiration_check_interval_ms: u64,

    /// The longest transaction timeout a transactional producer may ask for, ms (Kafka
    /// `transaction.max.timeout.ms`); InitProducerId with a longer one gets
    /// INVALID_TRANSACTION_TIMEOUT.
    #[arg(long, env = "SHARDLOG_TRANSACTION_MAX_TIMEOUT_MS", default_value_t = 900_000,
          value_parser = clap::value_parser!(i32).range(1..))]
    pub transaction_max_timeout_ms: i32,

    /// How often the transaction coordinator aborts transactions that outlived their
    /// timeout, ms (Kafka `transaction.abort.timed.out.transaction.cleanup.interval.ms`).
    #[arg(long, env = "SHARDLOG_TRANSACTION_ABORT_TIMED_OUT_TRANSACTION_CLEANUP_INTERVAL_MS",
          default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub transaction_abort_timed_out_transaction_cleanup_interval_ms: u64,

    /// How long a transactional id is kept after its last transaction ended, ms (Kafka
    /// `transactional.id.expiration.ms`, default 7 days).
    #[arg(long, env = "SHARDLOG_TRANSACTIONAL_ID_EXPIRATION_MS", default_value_t = 604_800_000,
          value_parser = clap::value_parser!(i64).range(1..))]
    pub transactional_id_expiration_ms: i64,

    /// How often the transaction coordinator removes expired transactional ids, ms
    /// (Kafka `transaction.remove.expired.transaction.cleanup.interval.ms`).
    #[arg(long, env = "SHARDLOG_TRANSACTION_REMOVE_EXPIRED_TRANSACTION_CLEANUP_INTERVAL_MS",
          default_value_t = 3_600_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub transaction_remove_expired_transaction_cleanup_interval_ms: u64,

    /// Run the log cleaner: compaction of `cleanup.policy=compact` topics and of the
    /// group offsets log (Kafka `log.cleaner.enable`).
    #[arg(
        long,
        env = "SHARDLOG_LOG_CLEANER_ENABLE",
        default_value_t = true,
        action = clap::ArgAction::Set
    )]
    pub log_cleaner_enable: bool,

    /// How long each shard's cleaner sleeps between passes over its partitions, ms
    /// (Kafka `log.cleaner.backoff.ms`).
    #[arg(long, env = "SHARDLOG_LOG_CLEANER_BACKOFF_MS", default_value_t = 15_000)]
    pub log_cleaner_backoff_ms: u64,

    /// Bytes of keys the cleaner's offset map may hold per pass, per shard (Kafka
    /// `log.cleaner.dedupe.buffer.size`); a dirtier log is cleaned over several passes.
    #[arg(long, env = "SHARDLOG_LOG_CLEANER_DEDUPE_BUFFER_SIZE", default_value_t = 128 << 20)]
    pub log_cleaner_dedupe_buffer_size: usize,

    /// Bytes per second each shard's cleaner may read plus write (Kafka
    /// `log.cleaner.io.max.bytes.per.second`; default unlimited).
    #[arg(long, env = "SHARDLOG_LOG_CLEANER_IO_MAX_BYTES_PER_SECOND", default_value_t = f64::MAX)]
    pub log_cleaner_io_max_bytes_per_second: f64,

    /// Segment size of the group offsets log, bytes (Kafka `offsets.topic.segment.bytes`):
    /// the cleaner compacts its sealed segments.
    #[arg(long, env = "SHARDLOG_OFFSETS_TOPIC_SEGMENT_BYTES", default_value_t = 100 << 20)]
    pub offsets_topic_segment_bytes: u64,

    /// Segment size in bytes before a new segment is rolled (Kafka `log.segment.bytes`).
    #[arg(long, env = "SHARDLOG_SEGMENT_BYTES", default_value_t = 1 << 30)]
    pub segment_bytes: u64,

    /// Bytes of batches between two sparse index entries (Kafka `log.index.interval.bytes`).
    #[arg(long, env = "SHARDLOG_INDEX_INTERVAL_BYTES", default_value_t = 4096)]
    pub index_interval_bytes: u64,

    /// Most bytes of record batches in one Fetch response, whatever the consumer asks
    /// for (Kafka `fetch.max.bytes`, KIP-541; at least 1024): a Fetch's `max_bytes` is
    /// capped at it, and with it what one Fetch reads from the disk and the batch cache
    /// on each shard. The first batch of a response still comes whole above it (KIP-74).
    #[arg(long, env = "SHARDLOG_FETCH_MAX_BYTES", default_value_t = 57_671_680,
          value_parser = clap::value_parser!(i32).range(1024..))]
    pub fetch_max_bytes: i32,

    /// Largest record batch accepted, in bytes (Kafka `message.max.bytes`).
    #[arg(long, env = "SHARDLOG_MAX_MESSAGE_BYTES", default_value_t = 1_048_588)]
    pub max_message_bytes: i32,

    /// When segment writes are made durable.
    #[arg(long, env = "SHARDLOG_FLUSH", value_enum, default_value_t = FlushPolicy::Interval)]
    pub flush: FlushPolicy,

    /// Under `--flush interval`: ms from a write that finds a partition clean to its
    /// fdatasync (so written data is durable within this bound; a partition with
    /// nothing to sync has no timer).
    #[arg(long, env = "SHARDLOG_FLUSH_INTERVAL_MS", default_value_t = 1000)]
    pub flush_interval_ms: u64,

    /// Memory for the batch cache, in bytes, for the whole broker; each shard gets an
    /// equal share (`cache-bytes / shards`) for the batches of the partitions it owns:
    /// recently produced batches and batches read from disk, evicted least recently used
    /// partition first, oldest batch first. Fetches of cached data never touch the disk.
    /// 0 disables the cache (every fetch reads its segment). Default: a quarter of the
    /// physical memory (`MemTotal` in /proc/meminfo), at most 1 GiB; see
    /// [`default_cache_bytes`].
    #[arg(long, env = "SHARDLOG_CACHE_BYTES")]
    pub cache_bytes: Option<usize>,

    /// Fault in the batch cache's memory (`--cache-bytes`) at start-up, in the
    /// background (one short-lived thread per shard, on the shard's CPU, at nice 19),
    /// instead of as data first arrives: the kernel zeroes every page a
    /// process touches for the first time, which cost a fresh broker about a quarter of
    /// its CPU while its first `--cache-bytes` of data were produced. The memory is the
    /// broker's from the start (resident, like a JVM heap pre-touched), and is recycled
    /// by the cache from then on; at most half the memory available at start-up
    /// (`MemAvailable`) is faulted in ahead of use, whatever the budget. `false`: memory
    /// is faulted in as the cache fills.
    #[arg(
        long,
        env = "SHARDLOG_CACHE_PREFAULT",
        default_value_t = true,
        action = clap::ArgAction::Set
    )]
    pub cache_prefault: bool,

    /// Most bytes of one partition's batches its shard's batch cache may hold, in bytes.
    /// Default: no limit beyond the shard's share of `--cache-bytes`. 0 keeps every
    /// data partition out of the cache.
    #[arg(long, env = "SHARDLOG_PARTITION_CACHE_BYTES")]
    pub partition_cache_bytes: Option<usize>,

    /// Smallest session timeout a group member may ask for, ms
    /// (Kafka `group.min.session.timeout.ms`; smaller gets INVALID_SESSION_TIMEOUT).
    #[arg(long, env = "SHARDLOG_GROUP_MIN_SESSION_TIMEOUT_MS", default_value_t = 6000)]
    pub group_min_session_timeout_ms: i32,

    /// Largest session timeout a group member may ask for, ms
    /// (Kafka `group.max.session.timeout.ms`).
    #[arg(long, env = "SHARDLOG_GROUP_MAX_SESSION_TIMEOUT_MS", default_value_t = 1_800_000)]
    pub group_max_session_timeout_ms: i32,

    /// How long a new, empty group waits for more members before its first
    /// rebalance completes, ms (Kafka `group.initial.rebalance.delay.ms`).
    #[arg(long, env = "SHARDLOG_GROUP_INITIAL_REBALANCE_DELAY_MS", default_value_t = 3000)]
    pub group_initial_rebalance_delay_ms: i32,

    /// How long committed offsets of an empty group are kept, minutes
    /// (Kafka `offsets.retention.minutes`).
    #[arg(long, env = "SHARDLOG_OFFSETS_RETENTION_MINUTES", default_value_t = 10_080)]
    pub offsets_retention_minutes: i64,

    /// How a Produce request's appends reach the partitions' owning shards:
    /// `per-shard` (one cross-core message per destination shard per request) or
    /// `per-batch` (one per record batch; the older path, kept for ablation).
    #[arg(
        long,
        env = "SHARDLOG_PRODUCE_FANOUT",
        value_enum,
        default_value_t = ProduceFanout::PerShard
    )]
    pub produce_fanout: ProduceFanout,

    /// How long an idle executor busy-polls for new work before it parks its thread
    /// (glommio `spin_before_park`), in microseconds; 0 parks at once. Spinning
    /// trades CPU for fewer sleeps and cross-core wake-ups (each park costs a
    /// `membarrier` IPI and a context switch). Default 0: on a 2-core machine shared
    /// with the client, 50 and 200 us cut context switches by 15-25% but cost 40-110%
    /// more broker CPU per GB and lowered throughput.
    #[arg(long, env = "SHARDLOG_SPIN_BEFORE_PARK_US", default_value_t = 0)]
    pub spin_before_park_us: u64,

    /// Most bytes a connection's socket must hold before a reader waiting for the rest
    /// of a request is woken (the socket's `SO_RCVLOWAT`, set to what the request still
    /// lacks, up to this; below 8192 never set; waits for a new request wake at 1
    /// byte). Fewer wake-ups and `recv`s for clients that send a request in small
    /// pieces, such as librdkafka over TLS (a record per message): at the default 8192
    /// its broker CPU per GB fell 2.2x and its throughput rose 17% (BBR over loopback);
    /// higher marks cut the CPU a little more but cost throughput with the client on BBR
    /// (-15% at 12288, -28 to -40% at 32768: BBR's window, in packets, then waits on
    /// the fewer ACKs). 0: the kernel's 1 byte, a wake-up per segment.
    #[arg(long, env = "SHARDLOG_RECEIVE_LOWAT_BYTES", default_value_t = 8192)]
    pub receive_lowat_bytes: usize,

    /// Write zeros ahead of an active segment's write position (up to 4 MiB, cut at
    /// roll, close and recovery) while its appends average fewer than this many bytes
    /// per write, so that they overwrite blocks in place: on ext4 an O_DIRECT write that
    /// extends the file goes through an io_uring worker thread (a wake-up and two context
    /// switches per write), an overwrite does not. Costs a second write of each byte to
    /// the disk, hence only for small writes. 0: never.
    #[arg(long, env = "SHARDLOG_ZERO_FILL_MAX_WRITE_BYTES", default_value_t = 256 << 10)]
    pub zero_fill_max_write_bytes: u64,

    /// Bring an active segment's index files (and the partition's producer snapshot)
    /// up to date each time this many bytes were written to it, once they are durable
    /// (under `--flush interval` after the next fdatasync), so that a start after a
    /// crash scans at most about this much of each partition's log instead of its
    /// whole active segment (up to `segment.bytes`). 0: only at roll and clean stop
    /// (Kafka's default: its recovery point moves when a segment rolls).
    #[arg(long, env = "SHARDLOG_RECOVERY_POINT_BYTES", default_value_t = 64 << 20)]
    pub recovery_point_bytes: u64,

    /// DMA-write appended batches straight from the batch cache's memory: each batch is
    /// placed there at an address aligned like its position in the segment file, so a
    /// write sends the whole 4 KiB blocks from the cache and copies only the partial
    /// first and last blocks. `false`: every write copies its batches into one DMA
    /// buffer first (a second copy of every produced byte). The bytes on disk are the
    /// same either way.
    #[arg(
        long,
        env = "SHARDLOG_WRITE_FROM_ARENA",
        default_value_t = true,
        action = clap::ArgAction::Set
    )]
    pub write_from_arena: bool,

    /// For tests of the panic path only: a request whose client id is this makes the
    /// shard that reads it panic (the broker then logs the request and aborts).
    #[arg(long, env = "SHARDLOG_DEBUG_PANIC_CLIENT_ID", hide = true)]
    pub debug_panic_client_id: Option<String>,

    /// For tests of the stall watchdog only: a request whose client id is this blocks
    /// the thread of the shard that reads it for 3 s.
    #[arg(long, env = "SHARDLOG_DEBUG_STALL_CLIENT_ID", hide = true)]
    pub debug_stall_client_id: Option<String>,

    /// For tests of transaction recovery only: the transaction coordinator waits this
    /// long (ms) after logging PrepareCommit / PrepareAbort before it writes the
    /// transaction's markers, so a test can kill the broker in between. Default: 0.
    #[arg(long, env = "SHARDLOG_DEBUG_TXN_MARKER_DELAY_MS", hide = true, default_value_t = 0)]
    pub debug_txn_marker_delay_ms: u64,

    /// A shard that has not run its tasks for this long (its thread blocked, or a task
    /// that never yields) is logged as stalled, in ms ([`crate::watchdog`]). 0: never.
    #[arg(long, env = "SHARDLOG_STALL_WARN_MS", default_value_t = 2_000)]
    pub stall_warn_ms: u64,

    /// A shard that has not run its tasks for this long makes the broker log it and
    /// abort (exit by SIGABRT), in ms: a broker with a dead core must not go on. 0: never.
    #[arg(long, env = "SHARDLOG_STALL_ABORT_MS", default_value_t = 120_000)]
    pub stall_abort_ms: u64,

    /// Check every request against the ACLs (Kafka's `authorizer.class.name` set to
    /// `StandardAuthorizer`; issue 14). Off (the default): no request is checked and
    /// CreateAcls / DescribeAcls / DeleteAcls answer SECURITY_DISABLED, as Kafka without
    /// an authorizer. `--authorizer` alone means on.
    #[arg(
        long,
        env = "SHARDLOG_AUTHORIZER",
        default_value_t = false,
        num_args = 0..=1,
        default_missing_value = "true",
        action = clap::ArgAction::Set
    )]
    pub authorizer: bool,

    /// Principals the authorizer allows everything (Kafka `super.users`):
    /// `User:a;User:b`. Default: none.
    #[arg(long, env = "SHARDLOG_SUPER_USERS", default_value = "",
          value_parser = parse_super_users)]
    pub super_users: String,

    /// What the authorizer decides when no ACL applies to a resource (Kafka
    /// `allow.everyone.if.no.acl.found`). Default: false (deny).
    #[arg(
        long,
        env = "SHARDLOG_ALLOW_EVERYONE_IF_NO_ACL_FOUND",
        default_value_t = false,
        num_args = 0..=1,
        default_missing_value = "true",
        action = clap::ArgAction::Set
    )]
    pub allow_everyone_if_no_acl_found: bool,

    /// Samples a client quota's rate is measured over (Kafka `quota.window.num`; issue 14,
    /// [`crate::quota`]). At least 1. Default: 11.
    #[arg(long, env = "SHARDLOG_QUOTA_WINDOW_NUM", default_value_t = 11,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub quota_window_num: u32,

    /// Length of one quota sample window, in seconds (Kafka
    /// `quota.window.size.seconds`). At least 1. Default: 1.
    #[arg(long, env = "SHARDLOG_QUOTA_WINDOW_SIZE_SECONDS", default_value_t = 1,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub quota_window_size_seconds: u64,

    /// Log filter (tracing `EnvFilter` syntax), e.g. `info` or `shardlog=debug`.
    #[arg(long, env = "SHARDLOG_LOG", default_value = "info")]
    pub log: String,

    /// Log line format on stderr: `text` or `json` (one object per line).
    #[arg(long, env = "SHARDLOG_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// The flags the operator set, on the command line or through their `SHARDLOG_*`
    /// variable, by clap id (the field name, e.g. `log_retention_ms`); the others hold
    /// their default. DescribeConfigs reports a value from a given flag as
    /// STATIC_BROKER_CONFIG and a default as DEFAULT_CONFIG. Filled by
    /// [`Config::from_args`]; empty after `Config::parse_from` (every flag a default).
    #[arg(skip)]
    pub given: BTreeSet<String>,

    /// The port each listener (in [`Config::listeners`] order) was bound to when its
    /// flag gave port 0 (an ephemeral port, as Kafka's `listeners=PLAINTEXT://:0`);
    /// 0 or missing: the flag's port. Filled by `main` before the shards start, so
    /// that every shard binds the same port (SO_REUSEPORT) and clients are told it.
    #[arg(skip)]
    pub bound_ports: Vec<u16>,

    /// With `--shard-ports`, the port each shard's own listener was bound to (by
    /// shard id; ephemeral ones resolved). Filled by `main` before the shards start;
    /// empty without the flag.
    #[arg(skip)]
    pub shard_bound_ports: Vec<u16>,
}

impl Config {
    /// Parses `args` (the program name first) and the `SHARDLOG_*` variables like
    /// `Config::parse_from`, and records in [`Config::given`] which flags were set.
    /// On a usage error it prints clap's message and exits, as `parse` does.
    pub fn from_args<I, T>(args: I) -> Config
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let command = Config::command();
        let matches = command.clone().get_matches_from(args);
        let mut config = Config::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
        // The flags only: `matches.ids()` also holds the struct's argument group.
        config.given = command
            .get_arguments()
            .map(|arg| arg.get_id().as_str())
            .filter(|id| {
                matches!(
                    matches.value_source(id),
                    Some(ValueSource::CommandLine | ValueSource::EnvVariable)
                )
            })
            .map(str::to_string)
            .collect();
        config
    }

    /// The sample windows of every client quota rate (`--quota-window-num`,
    /// `--quota-window-size-seconds`).
    pub fn quota_rate(&self) -> crate::quota::RateConfig {
        crate::quota::RateConfig {
            samples: self.quota_window_num.max(1),
            window_ms: self.quota_window_size_seconds.max(1).saturating_mul(1000),
        }
    }

    /// The authorizer the flags configure; `None` with `--authorizer` off.
    pub fn authorizer(&self) -> Option<crate::security::acl::Authorizer> {
        self.authorizer.then(|| crate::security::acl::Authorizer {
            // Checked by the flag's parser.
            super_users: crate::security::acl::Authorizer::parse_super_users(&self.super_users)
                .unwrap_or_default(),
            allow_if_no_acl: self.allow_everyone_if_no_acl_found,
        })
    }

    /// Whether the operator set the flag with clap id `id` (see [`Config::given`]).
    pub fn is_given(&self, id: &str) -> bool {
        self.given.contains(id)
    }

    /// The `--metrics-listen` address; `None` when the endpoint is off (empty value).
    pub fn metrics_addr(&self) -> Result<Option<SocketAddr>, String> {
        let text = self.metrics_listen.trim();
        if text.is_empty() {
            return Ok(None);
        }
        text.parse().map(Some).map_err(|e| {
            format!(
                "--metrics-listen must be host:port with an IP address or empty, got {text:?}: {e}"
            )
        })
    }

    /// Checks values clap cannot: ranges that would make the broker useless.
    pub fn validate(&self) -> Result<(), String> {
        let listeners = self.listeners()?;
        if self.shard_ports.is_some() && listeners.len() != 1 {
            return Err(format!(
                "--shard-ports needs exactly one listener, and {} are given",
                listeners.len()
            ));
        }
        if let Some(m) = self.metrics_addr()? {
            if let Some(l) = listeners.iter().find(|l| m.port() != 0 && m.port() == l.bind.port()) {
                return Err(format!(
                    "--metrics-listen ({m}) and --listen ({}) must use different ports",
                    l.bind
                ));
            }
        }
        for (i, l) in listeners.iter().enumerate() {
            if l.bind.port() != 0 && listeners[..i].iter().any(|o| o.bind.port() == l.bind.port()) {
                return Err(format!("two listeners use port {}", l.bind.port()));
            }
        }
        crate::security::sasl::Mechanism::parse_list(&self.sasl_enabled_mechanisms)?;
        if self.max_request_bytes < 1024 {
            return Err(format!(
                "--max-request-bytes must be at least 1024, got {}",
                self.max_request_bytes
            ));
        }
        if self.log_segment_ms < 1 {
            return Err(format!(
                "--log-segment-ms must be at least 1, got {}",
                self.log_segment_ms
            ));
        }
        if self.log_retention_ms < -1 || self.log_retention_bytes < -1 {
            return Err("--log-retention-ms and --log-retention-bytes must be -1 or more".into());
        }
        if self.segment_bytes < 1 << 20 {
            return Err(format!(
                "--segment-bytes must be at least 1048576 (1 MiB), got {}",
                self.segment_bytes
            ));
        }
        if self.max_message_bytes < 0 {
            return Err(format!(
                "--max-message-bytes must not be negative, got {}",
                self.max_message_bytes
            ));
        }
        if self.default_partitions < 1 {
            return Err(format!(
                "--default-partitions must be at least 1, got {}",
                self.default_partitions
            ));
        }
        if self.log_cleaner_io_max_bytes_per_second.is_nan()
            || self.log_cleaner_io_max_bytes_per_second <= 0.0
        {
            return Err("--log-cleaner-io-max-bytes-per-second must be more than 0".into());
        }
        if self.cores == Some(0) {
            return Err("--cores must be at least 1".into());
        }
        if self.max_connections == Some(0) || self.max_connections_per_ip == Some(0) {
            return Err("--max-connections and --max-connections-per-ip must be at least 1".into());
        }
        Ok(())
    }

    /// The batch cache budget of one shard, in bytes: `--cache-bytes` (default
    /// [`default_cache_bytes`] of the physical memory) divided by `shards`.
    pub fn cache_bytes_per_shard(&self, shards: usize) -> usize {
        let total = self.cache_bytes.unwrap_or_else(|| default_cache_bytes(physical_memory()));
        total / shards.max(1)
    }

    /// One shard's share of `--queued-max-request-bytes`, in bytes (0: unlimited).
    pub fn queued_request_bytes_per_shard(&self, shards: usize) -> usize {
        match self.queued_max_request_bytes {
            0 => 0,
            total => (total / shards.max(1)).max(1),
        }
    }

    /// The listeners every shard binds, with what each advertises: `--listeners`
    /// (with `--advertised-listeners`), or else `--listen` as one PLAINTEXT listener
    /// advertising `--advertised-listener`. Errors name the bad flag value.
    pub fn listeners(&self) -> Result<Vec<Listener>, String> {
        use crate::net::listeners::{check_tls, parse_listeners, resolve, SecurityProtocol};
        let advertised = match &self.advertised_listeners {
            Some(text) => {
                Some(parse_listeners(text).map_err(|e| format!("--advertised-listeners: {e}"))?)
            }
            None => None,
        };
        let Some(text) = &self.listeners else {
            let (host, port) = self.advertised();
            let mut listener = Listener {
                protocol: SecurityProtocol::Plaintext,
                bind: self.listen,
                advertised_host: host,
                advertised_port: port,
                shard: None,
            };
            if let Some(a) = advertised.iter().flatten().find(|a| a.protocol == listener.protocol) {
                (listener.advertised_host, listener.advertised_port) =
                    (a.host.clone(), a.port as i32);
            }
            let mut listeners = vec![listener];
            self.apply_bound_ports(&mut listeners);
            return Ok(listeners);
        };
        let specs = parse_listeners(text).map_err(|e| format!("--listeners: {e}"))?;
        check_tls(&specs, self.ssl_keystore_location.is_some())
            .map_err(|e| format!("--listeners: {e}"))?;
        let mut listeners = resolve(&specs, advertised.as_deref())?;
        self.apply_bound_ports(&mut listeners);
        Ok(listeners)
    }

    /// Gives each listener bound to port 0 the port [`Config::bound_ports`] holds for
    /// it, and advertises that port where the advertised port is 0 too (Kafka
    /// advertises the bound port of a `:0` listener).
    fn apply_bound_ports(&self, listeners: &mut [Listener]) {
        for (listener, &port) in listeners.iter_mut().zip(&self.bound_ports) {
            if listener.bind.port() == 0 && port != 0 {
                listener.bind.set_port(port);
                if listener.advertised_port == 0 {
                    listener.advertised_port = i32::from(port);
                }
            }
        }
    }

    /// The TLS configurations SSL and SASL_SSL connections share, read from the
    /// `--ssl-*` files; `None` when no listener uses TLS. Errors name the bad flag.
    pub fn tls(&self) -> Result<Option<crate::security::tls::TlsServers>, String> {
        if !self.listeners()?.iter().any(|l| l.protocol.is_tls()) {
            return Ok(None);
        }
        let Some(keystore) = &self.ssl_keystore_location else {
            return Err("SSL and SASL_SSL listeners need --ssl-keystore-location".into());
        };
        let files = crate::security::tls::TlsFiles {
            keystore,
            truststore: self.ssl_truststore_location.as_deref(),
            client_auth: self.ssl_client_auth,
        };
        crate::security::tls::TlsServers::load(files).map(Some)
    }

    /// The `host:port` clients are told to connect to.
    pub fn advertised(&self) -> (String, i32) {
        if let Some(a) = &self.advertised_listener {
            if let Some((h, p)) = a.rsplit_once(':') {
                if let Ok(port) = p.parse::<i32>() {
                    return (h.trim_matches(|c| c == '[' || c == ']').to_string(), port);
                }
            }
            return (a.clone(), self.listen.port() as i32);
        }
        (self.listen.ip().to_string(), self.listen.port() as i32)
    }
}

/// Largest default batch cache, in bytes (1 GiB).
pub const DEFAULT_CACHE_BYTES_MAX: usize = 1 << 30;

/// The default `--cache-bytes` for `physical_memory` bytes of RAM (`None`: unknown, taken
/// as 4 GiB): a quarter of it, at most [`DEFAULT_CACHE_BYTES_MAX`].
///
/// Why a cap: the cache grows into fresh anonymous memory, which the kernel zeroes on
/// first touch; measured on the 2-core benchmark VM, zeroing took 50% of the broker's
/// CPU while producing into a cache still growing (about 1 CPU-s per GB, 3x the CPU of
/// a full cache that recycles its arenas, and 0.6x the produce throughput), while a
/// consumer reading past the cache lost about 20% to read-ahead from disk. A cache much
/// bigger than the hot tail costs more than it saves; raise the flag for workloads that
/// re-read more than that. (With `--cache-prefault`, the default, the zeroing happens at
/// start-up instead, in the background; the cap still bounds the memory taken.)
pub fn default_cache_bytes(physical_memory: Option<usize>) -> usize {
    (physical_memory.unwrap_or(4 << 30) / 4).min(DEFAULT_CACHE_BYTES_MAX)
}

/// Physical memory in bytes (`MemTotal` of /proc/meminfo).
pub fn physical_memory() -> Option<usize> {
    meminfo("MemTotal:")
}

/// Memory available for new allocations without swapping, in bytes (`MemAvailable` of
/// /proc/meminfo), now.
pub fn available_memory() -> Option<usize> {
    meminfo("MemAvailable:")
}

/// One `kB` field of /proc/meminfo, in bytes.
fn meminfo(key: &str) -> Option<usize> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with(key))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// `--super-users`: checked with Kafka's syntax, kept as given.
fn parse_super_users(text: &str) -> Result<String, String> {
    crate::security::acl::Authorizer::parse_super_users(text).map(|_| text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metrics_endpoint_needs_its_own_port_and_an_ip_address() {
        let parse =
            |args: &[&str]| Config::parse_from(["shardlog"].iter().chain(args).copied()).validate();
        assert_eq!(parse(&[]), Ok(()));
        assert_eq!(parse(&["--metrics-listen", ""]), Ok(()));
        let same = parse(&["--listen", "127.0.0.1:9500", "--metrics-listen", "0.0.0.0:9500"]);
        assert_eq!(
            same,
            Err("--metrics-listen (0.0.0.0:9500) and --listen (127.0.0.1:9500) must use \
                 different ports"
                .to_string())
        );
        assert!(parse(&["--metrics-listen", "localhost:x"]).is_err_and(|e| e.starts_with(
            "--metrics-listen must be host:port with an IP address or empty, got \"localhost:x\""
        )));
    }

    #[test]
    fn listeners_on_port_0_take_the_bound_port_and_advertise_it() {
        let parse = |args: &[&str]| Config::parse_from(["shardlog"].iter().chain(args).copied());
        let ports = |c: &Config| -> Vec<(u16, i32)> {
            c.listeners().unwrap().iter().map(|l| (l.bind.port(), l.advertised_port)).collect()
        };
        // --listen: the bound port is bound and advertised, also with an advertised
        // host that names no port.
        let mut c = parse(&["--listen", "127.0.0.1:0"]);
        assert_eq!(ports(&c), [(0, 0)]);
        c.bound_ports = vec![40001];
        assert_eq!(ports(&c), [(40001, 40001)]);
        let mut c = parse(&["--listen", "127.0.0.1:0", "--advertised-listener", "kafka.example"]);
        c.bound_ports = vec![40001];
        assert_eq!(c.listeners().unwrap()[0].advertised_host, "kafka.example");
        assert_eq!(ports(&c), [(40001, 40001)]);
        // An advertised port that is given stays; a listener with its own port keeps it.
        let mut c = parse(&[
            "--listeners",
            "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:9093",
            "--advertised-listeners",
            "PLAINTEXT://kafka.example:9092",
        ]);
        c.bound_ports = vec![40001, 9093];
        assert_eq!(ports(&c), [(40001, 9092), (9093, 9093)]);
    }

    #[test]
    fn tls_listeners_need_a_keystore_and_read_it_at_start_up() {
        let config = |args: &[&str]| Config::parse_from(["shardlog"].iter().chain(args).copied());
        let ssl = ["--listeners", "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0"];
        assert_eq!(
            config(&ssl).validate(),
            Err("--listeners: listener SSL://127.0.0.1:0: SSL and SASL_SSL listeners need \
                 --ssl-keystore-location (a PEM file with the private key and the certificate \
                 chain)"
                .into())
        );
        let keystore =
            concat!(env!("CARGO_MANIFEST_DIR"), "/src/security/testdata/test-only-keystore.pem");
        let with_keystore = config(&[ssl[0], ssl[1], "--ssl-keystore-location", keystore]);
        assert_eq!(with_keystore.validate(), Ok(()));
        assert!(with_keystore.tls().unwrap().is_some());
        assert_eq!(with_keystore.ssl_client_auth, crate::security::tls::ClientAuth::None);
        // No TLS listener: the files are not needed (nor read).
        assert!(config(&["--ssl-keystore-location", "/nonexistent"]).tls().unwrap().is_none());
        let bad = config(&[ssl[0], ssl[1], "--ssl-keystore-location", "/nonexistent/k.pem"]);
        assert!(bad
            .tls()
            .unwrap_err()
            .starts_with("--ssl-keystore-location /nonexistent/k.pem: cannot read:"));
        let required = config(&[
            ssl[0],
            ssl[1],
            "--ssl-keystore-location",
            keystore,
            "--ssl-client-auth",
            "required",
        ]);
        assert_eq!(required.ssl_client_auth, crate::security::tls::ClientAuth::Required);
        assert!(required.tls().unwrap_err().starts_with("--ssl-client-auth required needs"));
    }

    #[test]
    fn given_flags_are_told_from_defaults() {
        let c = Config::from_args(["shardlog", "--log-retention-ms", "1000", "--node-id=3"]);
        assert_eq!((c.log_retention_ms, c.node_id), (1000, 3));
        assert_eq!(c.given, ["log_retention_ms", "node_id"].map(String::from).into());
        assert!(c.is_given("node_id") && !c.is_given("segment_bytes"));
        // A flag given with its default value is still given (Kafka: a property in
        // server.properties is STATIC_BROKER_CONFIG whatever its value).
        let c = Config::from_args(["shardlog", "--segment-bytes", "1073741824"]);
        assert!(c.is_given("segment_bytes"));
        assert!(Config::parse_from(["shardlog"]).given.is_empty());
    }

    #[test]
    fn the_default_cache_is_a_quarter_of_memory_up_to_1_gib() {
        assert_eq!(default_cache_bytes(Some(2 << 30)), 512 << 20);
        assert_eq!(default_cache_bytes(Some(4 << 30)), 1 << 30);
        assert_eq!(default_cache_bytes(Some(24 << 30)), 1 << 30);
        assert_eq!(default_cache_bytes(None), 1 << 30);
    }
}

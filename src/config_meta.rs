//! What DescribeConfigs (key 32) and CreateTopics (v5+) say about a config besides its
//! name: where its value comes from ([`Source`]), its type ([`ConfigType`]), and the
//! levels that set it ([`Synonym`]), in the words of the Kafka protocol guide
//! (`DescribeConfigsResponse`) and KIP-226.
//!
//! A config's value is looked up level by level, highest precedence first:
//!
//! | level | source | held in |
//! | --- | --- | --- |
//! | the topic's override | TOPIC_CONFIG (1) | `TopicMeta::configs` |
//! | this broker's dynamic config | DYNAMIC_BROKER_CONFIG (2) | `Catalog::broker_node_configs` |
//! | the cluster's dynamic default | DYNAMIC_DEFAULT_BROKER_CONFIG (3) | `Catalog::broker_default_configs` |
//! | a flag the operator gave | STATIC_BROKER_CONFIG (4) | `Config`, `Config::given` |
//! | the default | DEFAULT_CONFIG (5) | `topic_config`, `broker_config::DESCRIBED` |
//!
//! A topic config's broker levels are those of the broker config it defaults to
//! (`topic_config::broker_synonym`), under the broker config's names.

/// Where a value comes from (DescribeConfigs `config_source` and synonym `source`;
/// Kafka's `DescribeConfigsResponse.ConfigSource`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Source {
    /// A topic's own override (DYNAMIC_TOPIC_CONFIG in the admin clients).
    Topic = 1,
    /// A dynamic broker config set for this node (KIP-226).
    DynamicBroker = 2,
    /// A dynamic broker config set as the cluster default.
    DynamicDefaultBroker = 3,
    /// A flag (or its `SHARDLOG_*` variable) the operator set: Kafka's
    /// server.properties.
    StaticBroker = 4,
    /// Nothing set: the default.
    Default = 5,
}

impl Source {
    /// The wire code.
    pub fn code(self) -> i8 {
        self as i8
    }
}

/// A config's type (DescribeConfigs `config_type`, v3+; Kafka's `ConfigDef.Type` as
/// `DescribeConfigsResponse.ConfigType`). Kafka's SHORT (4), CLASS (8) and PASSWORD
/// (9) have no config shardlog describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigType {
    Boolean = 1,
    String = 2,
    Int = 3,
    Long = 5,
    Double = 6,
    /// Comma-separated values.
    List = 7,
}

impl ConfigType {
    /// The wire code.
    pub fn code(self) -> i8 {
        self as i8
    }
}

/// One level that sets a config: a DescribeConfigs synonym (`include_synonyms`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Synonym {
    /// The config name at that level: the topic config's own name for
    /// [`Source::Topic`], else a broker config name.
    pub name: String,
    /// The value set there (null for an unset default).
    pub value: Option<String>,
    /// The level.
    pub source: Source,
}

impl Synonym {
    pub fn new(name: &str, value: Option<String>, source: Source) -> Synonym {
        Synonym { name: name.to_string(), value, source }
    }
}

/// A described config's value: the value in force, its source (the first synonym's,
/// DEFAULT_CONFIG when there is none) and every level that sets it, highest precedence
/// first (sent only with `include_synonyms`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Described {
    pub value: Option<String>,
    pub source: Source,
    pub synonyms: Vec<Synonym>,
}

impl Described {
    /// The value in force is `value`; the source is the first synonym's.
    pub fn new(value: Option<String>, synonyms: Vec<Synonym>) -> Described {
        let source = synonyms.first().map_or(Source::Default, |s| s.source);
        Described { value, source, synonyms }
    }
}

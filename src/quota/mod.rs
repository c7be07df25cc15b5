//! Client quotas (KIP-13 byte rates, KIP-55 user and client-id entities, KIP-124
//! request time, KIP-219 throttling, KIP-546 the Describe/AlterClientQuotas APIs).
//!
//! - [`entity`]: who a quota applies to (user, client-id, ip, or their defaults) and
//!   the stored quotas, kept in the catalog (so every shard has a copy);
//! - [`alter`]: AlterClientQuotas' validation and effect, pure, Kafka's messages;
//! - [`describe`]: DescribeClientQuotas' filters, pure;
//! - [`resolve`]: which quota applies to a (user, client id) and the rate it is
//!   measured in (Kafka's default quota callback);
//! - [`rate`]: the windowed rate and the throttle time, pure, times passed in;
//! - [`manager`]: [`ShardQuotas`], one shard's rates and what a response owes;
//! - [`response`]: writing `throttle_time_ms` into a response.
//!
//! Enforcement lives with the connection ([`crate::net::connection`]): with no quota
//! in the catalog a request costs one check (`ClientQuotas::is_empty`); otherwise the
//! writer counts each answered request, writes the throttle into its response and
//! the reader reads nothing more from the connection until the throttle is over.

pub mod alter;
pub mod describe;
pub mod entity;
pub mod manager;
pub mod rate;
pub mod resolve;
pub mod response;

pub use entity::{ClientQuotas, EntityName, QuotaEntity};
pub use manager::{ShardQuotas, Throttle, Usage};
pub use rate::RateConfig;
pub use resolve::QuotaType;

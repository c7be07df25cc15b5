//! SaslHandshake (key 17). On a SASL listener the connection's SASL exchange
//! (`security::sasl`) answers it before authentication (and for a KIP-368
//! re-authentication); this handler sees only the others, on a PLAINTEXT listener or
//! from a client that cannot re-authenticate, and answers ILLEGAL_SASL_STATE as Kafka's
//! `KafkaApis.handleSaslHandshakeRequest` does.

use kafka_protocol::messages::{SaslHandshakeRequest, SaslHandshakeResponse};

use super::{Ctx, Outcome, Versions};
use crate::error::ResponseError;

/// v0 is followed by raw tokens, v1 by SaslAuthenticate requests (KIP-152).
pub const VERSIONS: Versions = Versions { min: 0, max: 1 };

/// ILLEGAL_SASL_STATE, no mechanisms.
pub async fn handle(_ctx: &Ctx, _request: SaslHandshakeRequest) -> Outcome<SaslHandshakeResponse> {
    Outcome::Ready(
        SaslHandshakeResponse::default().with_error_code(ResponseError::IllegalSaslState.code()),
    )
}

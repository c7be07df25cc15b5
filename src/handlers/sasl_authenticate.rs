//! SaslAuthenticate (key 36, KIP-152). On a SASL listener the connection's SASL
//! exchange (`security::sasl`) answers it while authenticating; this handler sees only
//! the others (after authentication, or on a PLAINTEXT listener) and answers
//! ILLEGAL_SASL_STATE as Kafka's `KafkaApis.handleSaslAuthenticateRequest` does.

use kafka_protocol::messages::{SaslAuthenticateRequest, SaslAuthenticateResponse};

use super::{Ctx, Outcome, Versions};
use crate::error::ResponseError;
use crate::protocol::strings::sb;

/// v1 adds `session_lifetime_ms` (KIP-368), v2 is flexible.
pub const VERSIONS: Versions = Versions { min: 0, max: 2 };

/// ILLEGAL_SASL_STATE with Kafka's message.
pub async fn handle(
    _ctx: &Ctx,
    _request: SaslAuthenticateRequest,
) -> Outcome<SaslAuthenticateResponse> {
    Outcome::Ready(
        SaslAuthenticateResponse::default()
            .with_error_code(ResponseError::IllegalSaslState.code())
            .with_error_message(Some(sb("SaslAuthenticate request received after successful authentication"))),
    )
}

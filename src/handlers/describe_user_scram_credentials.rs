//! DescribeUserScramCredentials (key 50, KIP-554): the mechanisms and iterations of
//! users' SCRAM credentials (never salts or keys), from this shard's catalog copy, as
//! Kafka's `ScramImage.describe` ([`crate::security::credentials::describe`]).

use kafka_protocol::messages::describe_user_scram_credentials_response::{
    CredentialInfo, DescribeUserScramCredentialsResult,
};
use kafka_protocol::messages::{
    DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse,
};

use super::{Ctx, Outcome, Versions};
use crate::protocol::strings::sb;
use crate::security::credentials;

pub const VERSIONS: Versions = Versions { min: 0, max: 0 };

/// Null or empty `users`: every user with a credential; else each named user
/// (RESOURCE_NOT_FOUND without credentials, DUPLICATE_RESOURCE when named twice).
pub async fn handle(
    ctx: &Ctx,
    request: DescribeUserScramCredentialsRequest,
) -> Outcome<DescribeUserScramCredentialsResponse> {
    let catalog = ctx.shard.catalog();
    let users: Option<Vec<String>> =
        request.users.map(|u| u.iter().map(|n| n.name.to_string()).collect());
    let results = credentials::describe(&catalog.scram_credentials, users.as_deref())
        .into_iter()
        .map(|(user, result)| {
            let r = DescribeUserScramCredentialsResult::default().with_user(sb(&user));
            match result {
                Ok(infos) => r.with_credential_infos(
                    infos
                        .into_iter()
                        .map(|(mechanism, iterations)| {
                            CredentialInfo::default()
                                .with_mechanism(mechanism)
                                .with_iterations(iterations)
                        })
                        .collect(),
                ),
                Err((error, message)) => {
                    r.with_error_code(error.code()).with_error_message(Some(sb(&message)))
                }
            }
        })
        .collect();
    Outcome::Ready(DescribeUserScramCredentialsResponse::default().with_results(results))
}

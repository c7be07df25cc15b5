//! AlterUserScramCredentials (key 51, KIP-554): adds, replaces or deletes users' SCRAM
//! credentials. The control shard applies them as Kafka's
//! `ScramControlManager.alterCredentials` ([`crate::security::credentials::alter`]),
//! persists them with the catalog and copies them to every shard before the answer,
//! so the next authentication on any shard sees them.

use kafka_protocol::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse,
};

use super::{Ctx, Outcome, Versions};
use crate::error::ResponseError;
use crate::protocol::strings::sb;
use crate::security::credentials::{Deletion, Upsertion};
use crate::shard::ControlRequest;

pub const VERSIONS: Versions = Versions { min: 0, max: 0 };

/// One result per user: NONE, DUPLICATE_RESOURCE, RESOURCE_NOT_FOUND,
/// UNSUPPORTED_SASL_MECHANISM, UNACCEPTABLE_CREDENTIAL, or KAFKA_STORAGE_ERROR when the
/// catalog cannot be persisted or the control shard dropped the request (shutdown).
pub async fn handle(
    ctx: &Ctx,
    request: AlterUserScramCredentialsRequest,
) -> Outcome<AlterUserScramCredentialsResponse> {
    let deletions: Vec<Deletion> = request
        .deletions
        .iter()
        .map(|d| Deletion { user: d.name.to_string(), mechanism: d.mechanism })
        .collect();
    let upsertions: Vec<Upsertion> = request
        .upsertions
        .iter()
        .map(|u| Upsertion {
            user: u.name.to_string(),
            mechanism: u.mechanism,
            iterations: u.iterations,
            salt: u.salt.to_vec(),
            salted_password: u.salted_password.to_vec(),
        })
        .collect();
    let mut users: Vec<String> = Vec::new();
    for u in deletions.iter().map(|d| &d.user).chain(upsertions.iter().map(|u| &u.user)) {
        if !users.contains(u) {
            users.push(u.clone());
        }
    }
    let reply = ctx
        .shard
        .ask_control(|reply| ControlRequest::AlterScramCredentials { deletions, upsertions, reply })
        .await;
    Outcome::serial(async move {
        let results = reply.await.unwrap_or_else(|_| {
            let dropped = (ResponseError::KafkaStorageError, "The broker is shutting down".to_string());
            users.into_iter().map(|u| (u, Some(dropped.clone()))).collect()
        });
        let results = results
            .into_iter()
            .map(|(user, error)| {
                let r = AlterUserScramCredentialsResult::default().with_user(sb(&user));
                match error {
                    None => r,
                    Some((error, message)) => {
                        r.with_error_code(error.code()).with_error_message(Some(sb(&message)))
                    }
                }
            })
            .collect();
        AlterUserScramCredentialsResponse::default().with_results(results)
    })
}

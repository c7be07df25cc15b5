//! The SCRAM credentials of every user, as the catalog holds them, and what
//! DescribeUserScramCredentials (key 50) and AlterUserScramCredentials (key 51) do to
//! them: Kafka's `ScramImage.describe` and `ScramControlManager.alterCredentials`.
//! Pure: the control shard persists the result with the catalog and every shard gets
//! a copy, so an authentication looks its credential up on its own shard.

use std::collections::BTreeMap;

use super::scram::{ScramCredential, ScramMechanism, MAX_ITERATIONS, MIN_ITERATIONS};
use crate::error::ResponseError;

/// user name -> SCRAM mechanism name (`SCRAM-SHA-256`) -> credential.
pub type ScramCredentials = BTreeMap<String, BTreeMap<String, ScramCredential>>;

/// The credential of `user` for `mechanism`, if stored.
pub fn lookup(
    credentials: &ScramCredentials,
    user: &str,
    mechanism: ScramMechanism,
) -> Option<ScramCredential> {
    credentials.get(user)?.get(mechanism.name()).cloned()
}

/// One AlterUserScramCredentials upsertion: the client salts and hashes the password
/// (PBKDF2 with `iterations`), the broker derives the stored and server keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upsertion {
    pub user: String,
    /// Kafka's type byte (1 = SCRAM-SHA-256, 2 = SCRAM-SHA-512).
    pub mechanism: i8,
    pub iterations: i32,
    pub salt: Vec<u8>,
    pub salted_password: Vec<u8>,
}

/// One deletion: a user's credential for one mechanism (type byte).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deletion {
    pub user: String,
    pub mechanism: i8,
}

/// A user's result: NONE, or an error code and Kafka's message.
pub type AlterResult = (String, Option<(ResponseError, String)>);

/// Applies deletions and upsertions to `credentials` as Kafka's
/// `ScramControlManager.alterCredentials`: a user named twice in one request gets
/// DUPLICATE_RESOURCE ("A user credential cannot be altered twice in the same
/// request") and none of its changes apply; an empty user UNACCEPTABLE_CREDENTIAL
/// ("Username must not be empty"); an unknown mechanism UNSUPPORTED_SASL_MECHANISM
/// ("Unknown SCRAM mechanism"); iterations below 4096 or above 16384
/// UNACCEPTABLE_CREDENTIAL ("Too few iterations" / "Too many iterations"); deleting a
/// credential that does not exist RESOURCE_NOT_FOUND ("Attempt to delete a user
/// credential that does not exist"). One result per user: the successes (deletions,
/// then upsertions, in request order), then the errors (in the order first seen).
pub fn alter(
    credentials: &mut ScramCredentials,
    deletions: &[Deletion],
    upsertions: &[Upsertion],
) -> Vec<AlterResult> {
    let mut errors: Vec<(String, (ResponseError, String))> = Vec::new();
    // With the mechanism each was validated with.
    let mut deletes: Vec<(&Deletion, ScramMechanism)> = Vec::new();
    let mut upserts: Vec<(&Upsertion, ScramMechanism)> = Vec::new();
    let duplicate = || {
        (
            ResponseError::DuplicateResource,
            "A user credential cannot be altered twice in the same request".to_string(),
        )
    };
    let has_error = |errors: &[(String, _)], user: &str| errors.iter().any(|(u, _)| u == user);
    for d in deletions {
        if has_error(&errors, &d.user) {
            continue;
        }
        if let Some(i) = deletes.iter().position(|(x, _)| x.user == d.user) {
            deletes.remove(i);
            errors.push((d.user.clone(), duplicate()));
            continue;
        }
        match validate(&d.user, d.mechanism).and_then(|m| {
            if lookup(credentials, &d.user, m).is_none() {
                Err((
                    ResponseError::ResourceNotFound,
                    "Attempt to delete a user credential that does not exist".to_string(),
                ))
            } else {
                Ok(m)
            }
        }) {
            Ok(m) => deletes.push((d, m)),
            Err(e) => errors.push((d.user.clone(), e)),
        }
    }
    for u in upsertions {
        if has_error(&errors, &u.user) {
            continue;
        }
        let in_deletes = deletes.iter().position(|(x, _)| x.user == u.user);
        let in_upserts = upserts.iter().position(|(x, _)| x.user == u.user);
        if in_deletes.is_some() || in_upserts.is_some() {
            if let Some(i) = in_deletes {
                deletes.remove(i);
            }
            if let Some(i) = in_upserts {
                upserts.remove(i);
            }
            errors.push((u.user.clone(), duplicate()));
            continue;
        }
        let checked = validate(&u.user, u.mechanism).and_then(|m| {
            if u.iterations < MIN_ITERATIONS {
                Err((ResponseError::UnacceptableCredential, "Too few iterations".to_string()))
            } else if u.iterations > MAX_ITERATIONS {
                Err((ResponseError::UnacceptableCredential, "Too many iterations".to_string()))
            } else {
                Ok(m)
            }
        });
        match checked {
            Ok(m) => upserts.push((u, m)),
            Err(e) => errors.push((u.user.clone(), e)),
        }
    }
    let mut results = Vec::new();
    for (d, mechanism) in deletes {
        if let Some(by_mechanism) = credentials.get_mut(&d.user) {
            by_mechanism.remove(mechanism.name());
            if by_mechanism.is_empty() {
                credentials.remove(&d.user);
            }
        }
        results.push((d.user.clone(), None));
    }
    for (u, mechanism) in upserts {
        let credential = ScramCredential::from_salted_password(
            mechanism,
            &u.salt,
            &u.salted_password,
            u.iterations,
        );
        credentials
            .entry(u.user.clone())
            .or_default()
            .insert(mechanism.name().to_string(), credential);
        results.push((u.user.clone(), None));
    }
    results.extend(errors.into_iter().map(|(user, e)| (user, Some(e))));
    results
}

/// Kafka's `validateScramUsernameAndMechanism`.
fn validate(user: &str, mechanism: i8) -> Result<ScramMechanism, (ResponseError, String)> {
    if user.is_empty() {
        return Err((ResponseError::UnacceptableCredential, "Username must not be empty".into()));
    }
    ScramMechanism::from_type(mechanism)
        .ok_or((ResponseError::UnsupportedSaslMechanism, "Unknown SCRAM mechanism".into()))
}

/// One user's DescribeUserScramCredentials result: its (mechanism type byte,
/// iterations) pairs, or an error code and Kafka's message.
pub type DescribeResult = (String, Result<Vec<(i8, i32)>, (ResponseError, String)>);

/// Kafka's `ScramImage.describe`: `users` `None` or empty describes every user with a
/// credential (by name); otherwise each named user once, in request order: a user
/// named twice gets DUPLICATE_RESOURCE ("Cannot describe SCRAM credentials for the
/// same user twice in a single request: <user>"), one without credentials
/// RESOURCE_NOT_FOUND ("Attempt to describe a user credential that does not exist:
/// <user>").
pub fn describe(credentials: &ScramCredentials, users: Option<&[String]>) -> Vec<DescribeResult> {
    let infos = |user: &str| -> Option<Vec<(i8, i32)>> {
        let by_mechanism = credentials.get(user)?;
        let infos: Vec<_> = ScramMechanism::ALL
            .into_iter()
            .filter_map(|m| by_mechanism.get(m.name()).map(|c| (m.type_id(), c.iterations)))
            .collect();
        (!infos.is_empty()).then_some(infos)
    };
    match users {
        None | Some([]) => {
            credentials.keys().filter_map(|u| infos(u).map(|i| (u.clone(), Ok(i)))).collect()
        }
        Some(users) => {
            let mut unique: Vec<(&String, bool)> = Vec::new();
            for u in users {
                match unique.iter_mut().find(|(x, _)| *x == u) {
                    Some((_, twice)) => *twice = true,
                    None => unique.push((u, false)),
                }
            }
            unique
                .into_iter()
                .map(|(user, twice)| {
                    let result = if twice {
                        Err((
                            ResponseError::DuplicateResource,
                            format!(
                                "Cannot describe SCRAM credentials for the same user twice in \
                                 a single request: {user}"
                            ),
                        ))
                    } else {
                        infos(user).ok_or_else(|| {
                            (
                                ResponseError::ResourceNotFound,
                                format!(
                                    "Attempt to describe a user credential that does not \
                                     exist: {user}"
                                ),
                            )
                        })
                    };
                    (user.clone(), result)
                })
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn up(user: &str, mechanism: i8, iterations: i32) -> Upsertion {
        Upsertion {
            user: user.into(),
            mechanism,
            iterations,
            salt: b"salt".to_vec(),
            salted_password: vec![7; 32],
        }
    }

    fn del(user: &str, mechanism: i8) -> Deletion {
        Deletion { user: user.into(), mechanism }
    }

    fn codes(results: &[AlterResult]) -> Vec<(&str, Option<ResponseError>)> {
        results.iter().map(|(u, e)| (u.as_str(), e.as_ref().map(|(c, _)| *c))).collect()
    }

    #[test]
    fn alter_follows_scram_control_manager() {
        let mut creds = ScramCredentials::new();
        let r = alter(
            &mut creds,
            &[del("nobody", 1)],
            &[
                up("alice", 1, 8192),
                up("bob", 3, 8192),
                up("carol", 2, 4095),
                up("dave", 2, 16385),
                up("", 1, 4096),
            ],
        );
        assert_eq!(
            codes(&r),
            vec![
                ("alice", None),
                ("nobody", Some(ResponseError::ResourceNotFound)),
                ("bob", Some(ResponseError::UnsupportedSaslMechanism)),
                ("carol", Some(ResponseError::UnacceptableCredential)),
                ("dave", Some(ResponseError::UnacceptableCredential)),
                ("", Some(ResponseError::UnacceptableCredential)),
            ]
        );
        assert_eq!(r[3].1.as_ref().unwrap().1, "Too few iterations");
        assert_eq!(r[4].1.as_ref().unwrap().1, "Too many iterations");
        assert_eq!(lookup(&creds, "alice", ScramMechanism::Sha256).unwrap().iterations, 8192);
        // Named twice: neither change applies.
        let r = alter(&mut creds, &[del("alice", 1)], &[up("alice", 2, 4096)]);
        assert_eq!(codes(&r), vec![("alice", Some(ResponseError::DuplicateResource))]);
        assert!(lookup(&creds, "alice", ScramMechanism::Sha256).is_some());
        let r = alter(&mut creds, &[del("alice", 1)], &[]);
        assert_eq!(codes(&r), vec![("alice", None)]);
        assert!(creds.is_empty());
    }

    #[test]
    fn describe_follows_scram_image() {
        let mut creds = ScramCredentials::new();
        alter(&mut creds, &[], &[up("bob", 2, 4096)]);
        alter(&mut creds, &[], &[up("bob", 1, 8192), up("alice", 1, 4096)]);
        assert_eq!(
            describe(&creds, None),
            vec![
                ("alice".into(), Ok(vec![(1, 4096)])),
                ("bob".into(), Ok(vec![(1, 8192), (2, 4096)]))
            ]
        );
        let named = ["bob", "x", "bob"].map(String::from);
        assert_eq!(
            describe(&creds, Some(&named)),
            vec![
                (
                    "bob".into(),
                    Err((
                        ResponseError::DuplicateResource,
                        "Cannot describe SCRAM credentials for the same user twice in a single \
                         request: bob"
                            .into()
                    ))
                ),
                (
                    "x".into(),
                    Err((
                        ResponseError::ResourceNotFound,
                        "Attempt to describe a user credential that does not exist: x".into()
                    ))
                ),
            ]
        );
    }
}

//! Sessions ended before they expire: by a logout, or for all of a user's sessions at once (a
//! password change, a disabled user, "log out everywhere").
//!
//! A session token is checked by its signature alone, so ending one early needs a record every
//! instance consults. The services keep these records on NATS and fold them in here; the
//! decision whether a session still counts is made here, the same on every instance.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use crate::{secret::CredentialError, session::SessionClaims};

/// One ending, as recorded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "ended", rename_all = "snake_case")]
pub enum SessionEnd {
    /// One session, named by its digest ([`session_digest`]): a logout.
    Session {
        digest: String,
        user: String,
        /// When it would have expired anyway: after that the record can be forgotten.
        expires_unix_ms: i64,
    },
    /// Every session of `user` issued before `from_unix_ms`.
    UserSessionsBefore {
        user: String,
        from_unix_ms: i64,
        /// Made in a users file (a password change, a disabled user, `users end-sessions`),
        /// rather than by a logout: an instance whose own copy of the file is older opens no
        /// new session for the user until it has the new one.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        from_users_file: bool,
    },
}

/// The sessions ended so far.
#[derive(Clone, Debug, Default)]
pub struct Revocations {
    /// Ended sessions by digest, with when each would have expired.
    sessions: HashMap<String, i64>,
    /// Per user: sessions issued before this moment are ended.
    users_from: HashMap<String, i64>,
    /// Per user: the latest such moment a users file set.
    users_file_from: HashMap<String, i64>,
}

/// The name a session is ended by: the hex SHA-256 of the token (the token itself is a
/// credential and is never recorded).
pub fn session_digest(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Revocations {
    pub fn record(&mut self, end: SessionEnd) {
        match end {
            SessionEnd::Session {
                digest,
                expires_unix_ms,
                ..
            } => {
                self.sessions.insert(digest, expires_unix_ms);
            }
            SessionEnd::UserSessionsBefore {
                user,
                from_unix_ms,
                from_users_file,
            } => {
                if from_users_file {
                    let from = self
                        .users_file_from
                        .entry(user.clone())
                        .or_insert(from_unix_ms);
                    *from = (*from).max(from_unix_ms);
                }
                let from = self.users_from.entry(user).or_insert(from_unix_ms);
                // An earlier moment recorded later never brings ended sessions back.
                *from = (*from).max(from_unix_ms);
            }
        }
    }

    /// The moment before which `user`'s sessions are ended, if any.
    pub fn user_sessions_from(&self, user: &str) -> Option<i64> {
        self.users_from.get(user).copied()
    }

    /// The latest moment a users file (anywhere) ended `user`'s sessions, if any.
    pub fn users_file_sessions_from(&self, user: &str) -> Option<i64> {
        self.users_file_from.get(user).copied()
    }

    /// Refuses a session (its token and its verified claims) that was ended.
    pub fn check(&self, token: &str, claims: &SessionClaims) -> Result<(), CredentialError> {
        if self
            .user_sessions_from(&claims.user)
            .is_some_and(|from| claims.issued_unix_ms < from)
            || self.sessions.contains_key(&session_digest(token))
        {
            return Err(CredentialError::Ended);
        }
        Ok(())
    }

    /// Forgets the ended sessions that have expired anyway (bounded memory over an event).
    pub fn forget_expired(&mut self, now_unix_ms: i64) {
        self.sessions.retain(|_, expires| *expires > now_unix_ms);
    }

    /// How many single sessions are remembered as ended.
    pub fn ended_sessions(&self) -> usize {
        self.sessions.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(user: &str, issued: i64) -> SessionClaims {
        SessionClaims {
            user: user.into(),
            issued_unix_ms: issued,
            expires_unix_ms: issued + 1_000,
            csrf: format!("{user}{issued}"),
        }
    }

    #[test]
    fn a_logged_out_session_is_refused_and_others_are_not() {
        let mut revocations = Revocations::default();
        revocations.record(SessionEnd::Session {
            digest: session_digest("token-a"),
            user: "chief".into(),
            expires_unix_ms: 1_000,
        });
        assert_eq!(
            revocations.check("token-a", &claims("chief", 0)),
            Err(CredentialError::Ended)
        );
        assert_eq!(revocations.check("token-b", &claims("chief", 0)), Ok(()));
        revocations.forget_expired(999);
        assert_eq!(revocations.ended_sessions(), 1);
        revocations.forget_expired(1_000);
        assert_eq!(revocations.ended_sessions(), 0);
    }

    #[test]
    fn a_users_sessions_before_a_moment_end_and_never_come_back() {
        let mut revocations = Revocations::default();
        let end = |from| SessionEnd::UserSessionsBefore {
            user: "chief".into(),
            from_unix_ms: from,
            from_users_file: true,
        };
        revocations.record(end(500));
        assert_eq!(
            revocations.check("t", &claims("chief", 499)),
            Err(CredentialError::Ended)
        );
        assert_eq!(revocations.check("t", &claims("chief", 500)), Ok(()));
        assert_eq!(revocations.check("t", &claims("arbiter", 0)), Ok(()));
        revocations.record(end(100));
        assert_eq!(
            revocations.check("t", &claims("chief", 499)),
            Err(CredentialError::Ended)
        );
        assert_eq!(revocations.user_sessions_from("chief"), Some(500));
        assert_eq!(revocations.users_file_sessions_from("chief"), Some(500));
        assert_eq!(revocations.users_file_sessions_from("arbiter"), None);
    }

    #[test]
    fn endings_read_back_as_written() {
        for end in [
            SessionEnd::Session {
                digest: session_digest("x"),
                user: "u".into(),
                expires_unix_ms: 3,
            },
            SessionEnd::UserSessionsBefore {
                user: "u".into(),
                from_unix_ms: 4,
                from_users_file: false,
            },
        ] {
            let json = serde_json::to_string(&end).expect("json");
            assert_eq!(serde_json::from_str::<SessionEnd>(&json).ok(), Some(end));
        }
    }
}

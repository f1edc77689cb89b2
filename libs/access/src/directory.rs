//! The users file: who exists, their roles per tournament, and their password and API tokens as
//! argon2id hashes. JSON, written by `boardcast users` and read by the services.

use std::collections::BTreeMap;

use rand::RngCore;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::{
    policy::{Grant, Identity, Role},
    secret::{self, CredentialError},
    session::SessionClaims,
};

/// The users file's format version.
pub const DIRECTORY_VERSION: u32 = 1;

/// A password shorter than this is refused.
pub const MIN_PASSWORD_CHARS: usize = 10;

const TOKEN_PREFIX: &str = "bct1";

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Directory {
    pub version: u32,
    /// By login name.
    pub users: BTreeMap<String, UserRecord>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserRecord {
    /// How the user is shown, e.g. "IA Jane Smith".
    pub display_name: String,
    /// argon2id PHC string; absent for a user who logs in with tokens only (a service).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_hash: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tokens: Vec<TokenRecord>,
    #[serde(default)]
    pub grants: Vec<Grant>,
    /// A disabled user's password, tokens and sessions are refused.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disabled: bool,
    /// Sessions issued before this moment are refused: set by a password change, by disabling
    /// the user and by `boardcast users end-sessions`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub sessions_from_unix_ms: i64,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

/// An API token: `bct1.<user>.<id>.<secret>`; only the secret's hash is kept.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenRecord {
    pub id: String,
    pub hash: String,
    /// What it is for, e.g. "simulator".
    pub label: String,
    pub created_unix_ms: i64,
    /// When it stops working. (Tokens made before tokens expired have none, and are listed as
    /// such so that they can be rotated.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_unix_ms: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DirectoryError {
    #[error("the users file is not valid: {0}")]
    Invalid(String),
    #[error("the users file has version {0}; this program reads version {DIRECTORY_VERSION}")]
    Version(u32),
    #[error(
        "invalid user name {0:?}: use 1 to 64 of a-z, 0-9, '-' and '_', starting with a letter or digit"
    )]
    BadName(String),
    #[error("user {0:?} already exists")]
    Exists(String),
    #[error("no user {0:?}")]
    NoUser(String),
    #[error("user {0:?} has no token {1:?} (`boardcast users list` shows the ids)")]
    NoToken(String, String),
    #[error("the password is too short: at least {MIN_PASSWORD_CHARS} characters")]
    WeakPassword,
    #[error("{0}")]
    Credential(#[from] CredentialError),
}

/// Checks a login name: it is recorded as the actor of rulings, so it is kept plain.
pub fn validate_user_name(name: &str) -> Result<(), DirectoryError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        && name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric());
    if ok {
        Ok(())
    } else {
        Err(DirectoryError::BadName(name.to_owned()))
    }
}

fn random_salt(rng: &mut impl RngCore) -> [u8; 16] {
    let mut salt = [0u8; 16];
    rng.fill_bytes(&mut salt);
    salt
}

impl Directory {
    pub fn new() -> Directory {
        Directory {
            version: DIRECTORY_VERSION,
            users: BTreeMap::new(),
        }
    }

    pub fn parse(text: &str) -> Result<Directory, DirectoryError> {
        let directory: Directory =
            serde_json::from_str(text).map_err(|e| DirectoryError::Invalid(e.to_string()))?;
        if directory.version != DIRECTORY_VERSION {
            return Err(DirectoryError::Version(directory.version));
        }
        for name in directory.users.keys() {
            validate_user_name(name)?;
        }
        Ok(directory)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("the directory serialises") + "\n"
    }

    fn user_mut(&mut self, user: &str) -> Result<&mut UserRecord, DirectoryError> {
        self.users
            .get_mut(user)
            .ok_or_else(|| DirectoryError::NoUser(user.to_owned()))
    }

    pub fn add_user(&mut self, user: &str, display_name: &str) -> Result<(), DirectoryError> {
        validate_user_name(user)?;
        if self.users.contains_key(user) {
            return Err(DirectoryError::Exists(user.to_owned()));
        }
        self.users.insert(
            user.to_owned(),
            UserRecord {
                display_name: if display_name.trim().is_empty() {
                    user.to_owned()
                } else {
                    display_name.trim().to_owned()
                },
                ..Default::default()
            },
        );
        Ok(())
    }

    pub fn remove_user(&mut self, user: &str) -> Result<(), DirectoryError> {
        self.users
            .remove(user)
            .map(|_| ())
            .ok_or_else(|| DirectoryError::NoUser(user.to_owned()))
    }

    /// Disables or enables a user. Disabling also ends the user's sessions.
    pub fn set_disabled(
        &mut self,
        user: &str,
        disabled: bool,
        now_unix_ms: i64,
    ) -> Result<(), DirectoryError> {
        let record = self.user_mut(user)?;
        record.disabled = disabled;
        if disabled {
            record.sessions_from_unix_ms = record.sessions_from_unix_ms.max(now_unix_ms);
        }
        Ok(())
    }

    /// Ends every session of the user issued before now ("log out everywhere").
    pub fn end_sessions(&mut self, user: &str, now_unix_ms: i64) -> Result<(), DirectoryError> {
        let record = self.user_mut(user)?;
        record.sessions_from_unix_ms = record.sessions_from_unix_ms.max(now_unix_ms);
        Ok(())
    }

    /// Sets the user's password; the sessions opened with the old one end.
    pub fn set_password(
        &mut self,
        user: &str,
        password: &str,
        rng: &mut impl RngCore,
        now_unix_ms: i64,
    ) -> Result<(), DirectoryError> {
        if password.chars().count() < MIN_PASSWORD_CHARS {
            return Err(DirectoryError::WeakPassword);
        }
        let hash = secret::hash_secret(password, &random_salt(rng))?;
        let record = self.user_mut(user)?;
        record.password_hash = Some(hash);
        record.sessions_from_unix_ms = record.sessions_from_unix_ms.max(now_unix_ms);
        Ok(())
    }

    /// Gives `user` the role in the tournament (replacing the role the user had there, boards
    /// included).
    pub fn grant(&mut self, user: &str, grant: Grant) -> Result<(), DirectoryError> {
        let record = self.user_mut(user)?;
        record
            .grants
            .retain(|g| !(g.tournament == grant.tournament && g.role == grant.role));
        record.grants.push(grant);
        Ok(())
    }

    /// Takes the user's roles in the tournament away (only `role`, when given). Says how many
    /// were taken.
    pub fn revoke(
        &mut self,
        user: &str,
        tournament: &str,
        role: Option<Role>,
    ) -> Result<usize, DirectoryError> {
        let record = self.user_mut(user)?;
        let before = record.grants.len();
        record
            .grants
            .retain(|g| !(g.tournament == tournament && role.is_none_or(|r| r == g.role)));
        Ok(before - record.grants.len())
    }

    /// A new API token for `user`, working until `expires_unix_ms`; the token itself is
    /// returned once and never stored.
    pub fn new_token(
        &mut self,
        user: &str,
        label: &str,
        expires_unix_ms: i64,
        rng: &mut impl RngCore,
        now_unix_ms: i64,
    ) -> Result<String, DirectoryError> {
        use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
        let mut id = [0u8; 6];
        rng.fill_bytes(&mut id);
        let id = URL_SAFE_NO_PAD.encode(id).replace(['-', '_'], "x");
        let mut secret_bytes = [0u8; 32];
        rng.fill_bytes(&mut secret_bytes);
        let secret = URL_SAFE_NO_PAD.encode(secret_bytes);
        let hash = secret::hash_secret(&secret, &random_salt(rng))?;
        self.user_mut(user)?.tokens.push(TokenRecord {
            id: id.clone(),
            hash,
            label: label.to_owned(),
            created_unix_ms: now_unix_ms,
            expires_unix_ms: Some(expires_unix_ms),
        });
        Ok(format!("{TOKEN_PREFIX}.{user}.{id}.{secret}"))
    }

    /// Replaces the user's token `id` by a new one with the same label, working until
    /// `expires_unix_ms`; the old one keeps working until `old_until_unix_ms` (if it would not
    /// stop earlier), so that the program using it can be given the new one without a gap.
    pub fn rotate_token(
        &mut self,
        user: &str,
        id: &str,
        expires_unix_ms: i64,
        old_until_unix_ms: i64,
        rng: &mut impl RngCore,
        now_unix_ms: i64,
    ) -> Result<String, DirectoryError> {
        let old = self
            .user_mut(user)?
            .tokens
            .iter_mut()
            .find(|t| t.id == id)
            .ok_or_else(|| DirectoryError::NoToken(user.to_owned(), id.to_owned()))?;
        old.expires_unix_ms = Some(
            old.expires_unix_ms
                .map_or(old_until_unix_ms, |e| e.min(old_until_unix_ms)),
        );
        let label = old.label.clone();
        self.new_token(user, &label, expires_unix_ms, rng, now_unix_ms)
    }

    /// Revokes the user's token with this id (all of them for `None`); says how many.
    pub fn revoke_tokens(&mut self, user: &str, id: Option<&str>) -> Result<usize, DirectoryError> {
        let record = self.user_mut(user)?;
        let before = record.tokens.len();
        record.tokens.retain(|t| id.is_some_and(|id| t.id != id));
        Ok(before - record.tokens.len())
    }

    /// The user's identity, when the user exists and is enabled.
    pub fn identity(&self, user: &str) -> Result<Identity, CredentialError> {
        let record = self.users.get(user).ok_or(CredentialError::WrongPassword)?;
        if record.disabled {
            return Err(CredentialError::Disabled(user.to_owned()));
        }
        Ok(Identity {
            user: user.to_owned(),
            display_name: record.display_name.clone(),
            grants: record.grants.clone(),
            expires_unix_ms: None,
            assigned: Default::default(),
        })
    }

    /// Checks a user's password. Slow on purpose (argon2id), also for an unknown user.
    pub fn check_password(&self, user: &str, password: &str) -> Result<Identity, CredentialError> {
        let hash = self
            .users
            .get(user)
            .and_then(|r| r.password_hash.as_deref());
        let matches = secret::verify_secret(password, hash.unwrap_or(&secret::DUMMY_HASH));
        if !matches || hash.is_none() {
            return Err(CredentialError::WrongPassword);
        }
        self.identity(user)
    }

    /// The identity of a session's user, when the session (its verified claims) was issued
    /// after the user's sessions were last ended.
    pub fn session_identity(&self, claims: &SessionClaims) -> Result<Identity, CredentialError> {
        let mut identity = self.identity(&claims.user)?;
        let from = self
            .users
            .get(&claims.user)
            .map_or(0, |r| r.sessions_from_unix_ms);
        if claims.issued_unix_ms < from {
            return Err(CredentialError::Ended);
        }
        identity.expires_unix_ms = Some(claims.expires_unix_ms);
        Ok(identity)
    }

    /// Whether a token names a token of this file (its user and id), without checking its
    /// secret: made-up tokens are refused before any slow hash is computed for them.
    pub fn names_a_token(&self, token: &str) -> bool {
        let mut parts = token.split('.');
        match (parts.next(), parts.next(), parts.next()) {
            (Some(TOKEN_PREFIX), Some(user), Some(id)) => self
                .users
                .get(user)
                .is_some_and(|r| r.tokens.iter().any(|t| t.id == id)),
            _ => false,
        }
    }

    /// Checks an API token at `now_unix_ms`. Slow on purpose (argon2id): callers cache the
    /// answer, with the identity's `expires_unix_ms` (the token's expiry).
    pub fn check_token(&self, token: &str, now_unix_ms: i64) -> Result<Identity, CredentialError> {
        let mut parts = token.split('.');
        let (Some(TOKEN_PREFIX), Some(user), Some(id), Some(secret), None) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return Err(CredentialError::Malformed);
        };
        let record = self
            .users
            .get(user)
            .and_then(|r| r.tokens.iter().find(|t| t.id == id))
            .ok_or(CredentialError::UnknownToken)?;
        if !secret::verify_secret(secret, &record.hash) {
            return Err(CredentialError::UnknownToken);
        }
        if record
            .expires_unix_ms
            .is_some_and(|expires| now_unix_ms >= expires)
        {
            return Err(CredentialError::TokenExpired);
        }
        let mut identity = self.identity(user)?;
        identity.expires_unix_ms = record.expires_unix_ms;
        Ok(identity)
    }
}

#[cfg(test)]
mod tests {
    use rand::{SeedableRng as _, rngs::StdRng};

    use super::*;

    fn directory() -> (Directory, StdRng) {
        let mut rng = StdRng::seed_from_u64(7);
        let mut d = Directory::new();
        d.add_user("chief", "IA Chief").expect("add");
        d.set_password("chief", "a long passphrase", &mut rng, 0)
            .expect("password");
        d.grant(
            "chief",
            Grant {
                tournament: "open".into(),
                role: Role::ChiefArbiter,
                boards: vec![],
            },
        )
        .expect("grant");
        (d, rng)
    }

    #[test]
    fn passwords_check_and_survive_the_file() {
        let (d, _) = directory();
        let d = Directory::parse(&d.to_json()).expect("parse");
        let who = d
            .check_password("chief", "a long passphrase")
            .expect("login");
        assert_eq!(who.user, "chief");
        assert_eq!(who.grants.len(), 1);
        assert_eq!(
            d.check_password("chief", "a long passphrasf"),
            Err(CredentialError::WrongPassword)
        );
        assert_eq!(
            d.check_password("nobody", "a long passphrase"),
            Err(CredentialError::WrongPassword)
        );
        assert!(!d.to_json().contains("a long passphrase"));
    }

    #[test]
    fn tokens_check_until_revoked_and_are_never_stored() {
        let (mut d, mut rng) = directory();
        let token = d
            .new_token("chief", "simulator", 1_000, &mut rng, 5)
            .expect("token");
        assert!(
            !d.to_json()
                .contains(token.rsplit('.').next().expect("secret"))
        );
        assert_eq!(
            d.check_token(&token, 999)
                .map(|i| (i.user, i.expires_unix_ms)),
            Ok(("chief".to_owned(), Some(1_000)))
        );
        assert_eq!(
            d.check_token(&token, 1_000),
            Err(CredentialError::TokenExpired)
        );
        let altered = format!("{token}x");
        assert_eq!(
            d.check_token(&altered, 6),
            Err(CredentialError::UnknownToken)
        );
        assert_eq!(
            d.check_token("bct1.chief", 6),
            Err(CredentialError::Malformed)
        );
        assert!(d.names_a_token(&altered));
        assert!(!d.names_a_token("bct1.chief.nope.secret"));
        assert_eq!(d.revoke_tokens("chief", None), Ok(1));
        assert!(!d.names_a_token(&token));
        assert_eq!(d.check_token(&token, 6), Err(CredentialError::UnknownToken));
    }

    #[test]
    fn a_rotated_token_works_until_the_overlap_ends_and_its_successor_after() {
        let (mut d, mut rng) = directory();
        let old = d
            .new_token("chief", "pairing", 10_000, &mut rng, 0)
            .expect("token");
        let id = d.users["chief"].tokens[0].id.clone();
        let new = d
            .rotate_token("chief", &id, 20_000, 600, &mut rng, 500)
            .expect("rotate");
        assert!(d.check_token(&old, 599).is_ok());
        assert_eq!(d.check_token(&old, 600), Err(CredentialError::TokenExpired));
        assert!(d.check_token(&new, 600).is_ok());
        assert_eq!(d.users["chief"].tokens[1].label, "pairing");
        assert!(matches!(
            d.rotate_token("chief", "nope", 1, 1, &mut rng, 0),
            Err(DirectoryError::NoToken(..))
        ));
    }

    #[test]
    fn a_password_change_a_disable_and_end_sessions_end_earlier_sessions() {
        let (mut d, mut rng) = directory();
        let session = |issued| SessionClaims {
            user: "chief".into(),
            issued_unix_ms: issued,
            expires_unix_ms: issued + 10_000,
            csrf: String::new(),
        };
        assert!(d.session_identity(&session(100)).is_ok());
        d.set_password("chief", "another long passphrase", &mut rng, 200)
            .expect("password");
        assert_eq!(
            d.session_identity(&session(100)),
            Err(CredentialError::Ended)
        );
        assert!(d.session_identity(&session(200)).is_ok());
        d.end_sessions("chief", 300).expect("end");
        assert_eq!(
            d.session_identity(&session(250)),
            Err(CredentialError::Ended)
        );
        d.set_disabled("chief", true, 400).expect("disable");
        d.set_disabled("chief", false, 500).expect("enable");
        assert_eq!(
            d.session_identity(&session(350)),
            Err(CredentialError::Ended)
        );
        assert_eq!(
            d.session_identity(&session(400)).map(|i| i.expires_unix_ms),
            Ok(Some(10_400))
        );
        let d = Directory::parse(&d.to_json()).expect("parse");
        assert_eq!(d.users["chief"].sessions_from_unix_ms, 400);
    }

    #[test]
    fn disabled_users_and_bad_input_are_refused_clearly() {
        let (mut d, _) = directory();
        d.set_disabled("chief", true, 0).expect("disable");
        assert!(matches!(
            d.check_password("chief", "a long passphrase"),
            Err(CredentialError::Disabled(_))
        ));
        let mut rng = StdRng::seed_from_u64(1);
        assert_eq!(
            d.set_password("chief", "short", &mut rng, 0),
            Err(DirectoryError::WeakPassword)
        );
        assert!(matches!(
            d.add_user("Bad Name", ""),
            Err(DirectoryError::BadName(_))
        ));
        assert!(matches!(
            d.add_user("chief", ""),
            Err(DirectoryError::Exists(_))
        ));
        assert!(matches!(
            Directory::parse("{"),
            Err(DirectoryError::Invalid(_))
        ));
        assert!(matches!(
            Directory::parse(r#"{"version":9,"users":{}}"#),
            Err(DirectoryError::Version(9))
        ));
    }
}

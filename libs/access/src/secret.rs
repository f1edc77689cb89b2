//! Passwords and API tokens, kept only as argon2id hashes.

use argon2::{
    Argon2, PasswordHash, PasswordHasher as _, PasswordVerifier as _, password_hash::SaltString,
};
use thiserror::Error;

/// Why a credential was not accepted. Deliberately says nothing about which part was wrong
/// (user or password) to the caller; the services log the detail.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CredentialError {
    #[error("no credential was given")]
    Missing,
    #[error("the credential is malformed")]
    Malformed,
    #[error("wrong user name or password")]
    WrongPassword,
    #[error("the token is unknown or revoked")]
    UnknownToken,
    #[error("the session has expired; log in again")]
    Expired,
    #[error(
        "the session has ended (logged out, the password changed or the user disabled); log in \
         again"
    )]
    Ended,
    #[error("the API token has expired; rotate it with `boardcast users rotate-token`")]
    TokenExpired,
    #[error("the session's signature does not verify")]
    BadSignature,
    #[error("user {0:?} is disabled")]
    Disabled(String),
    #[error("hashing failed: {0}")]
    Hashing(String),
}

/// The argon2id hash (PHC string, with its parameters and salt) of `secret`.
pub fn hash_secret(secret: &str, salt: &[u8; 16]) -> Result<String, CredentialError> {
    let salt = SaltString::encode_b64(salt).map_err(|e| CredentialError::Hashing(e.to_string()))?;
    Argon2::default()
        .hash_password(secret.as_bytes(), &salt)
        .map(|hash| hash.to_string())
        .map_err(|e| CredentialError::Hashing(e.to_string()))
}

/// Whether `secret` matches the PHC string `hash` (false for a malformed hash).
pub fn verify_secret(secret: &str, hash: &str) -> bool {
    PasswordHash::new(hash)
        .map(|parsed| {
            Argon2::default()
                .verify_password(secret.as_bytes(), &parsed)
                .is_ok()
        })
        .unwrap_or(false)
}

/// A hash nobody's password matches, verified against when the user does not exist so that a
/// wrong user name takes as long as a wrong password (no user enumeration by timing).
pub(crate) static DUMMY_HASH: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    hash_secret(
        "no password matches this one: it is never handed out",
        &[0; 16],
    )
    .unwrap_or_default()
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_verifies_against_its_own_hash_only() {
        let hash = hash_secret("correct horse battery", &[7; 16]).expect("hash");
        assert!(hash.starts_with("$argon2id$"));
        assert!(verify_secret("correct horse battery", &hash));
        assert!(!verify_secret("correct horse batterz", &hash));
        assert!(!verify_secret("correct horse battery", "not a hash"));
        assert!(DUMMY_HASH.starts_with("$argon2id$"));
        assert!(!verify_secret("anything", &DUMMY_HASH));
    }
}

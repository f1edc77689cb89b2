//! Sessions: signed, expiring tokens a login hands out.
//!
//! `bcs1.<claims>.<mac>`: the claims as base64url JSON, and HMAC-SHA-256 over them with the
//! deployment's session key. Any instance holding the key checks a session without a shared
//! store; the claims are readable by whoever holds the token (nothing secret in them) and
//! unforgeable without the key.

use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use hmac::{Hmac, Mac as _};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use crate::secret::CredentialError;

const PREFIX: &str = "bcs1.";

/// What a session token says.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionClaims {
    pub user: String,
    pub issued_unix_ms: i64,
    pub expires_unix_ms: i64,
    /// A random value a web page must send back with every form: a cross-site page cannot read
    /// it, so it cannot forge a form (see the arbiter service).
    pub csrf: String,
}

impl SessionClaims {
    /// The claims of a token without checking its signature: only for what the holder may know
    /// anyway (a page's own CSRF value). Every decision checks with `SessionKey::open`.
    pub fn read_unverified(token: &str) -> Result<SessionClaims, CredentialError> {
        let (claims, _) = split(token)?;
        decode_claims(claims)
    }
}

/// The deployment's key for signing sessions (32 random bytes, hex in its file).
#[derive(Clone)]
pub struct SessionKey([u8; 32]);

impl std::fmt::Debug for SessionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionKey(…)")
    }
}

impl SessionKey {
    pub fn from_bytes(bytes: [u8; 32]) -> SessionKey {
        SessionKey(bytes)
    }

    /// Reads the key from its file's text: 64 hex digits.
    pub fn from_hex(text: &str) -> Result<SessionKey, String> {
        let text = text.trim();
        let mut key = [0u8; 32];
        if text.len() != 64 || !text.is_ascii() {
            return Err("a session key is 64 hex digits".to_owned());
        }
        for (i, byte) in key.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16)
                .map_err(|_| "a session key is 64 hex digits".to_owned())?;
        }
        Ok(SessionKey(key))
    }

    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn mac(&self, claims: &str) -> Hmac<Sha256> {
        let mut mac =
            Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes a key of any length");
        mac.update(claims.as_bytes());
        mac
    }

    /// The token for `claims`.
    pub fn issue(&self, claims: &SessionClaims) -> String {
        let json = serde_json::to_vec(claims).expect("claims serialise");
        let claims = URL_SAFE_NO_PAD.encode(json);
        let tag = URL_SAFE_NO_PAD.encode(self.mac(&claims).finalize().into_bytes());
        format!("{PREFIX}{claims}.{tag}")
    }

    /// The claims of a token this key signed and that has not expired at `now_unix_ms`.
    pub fn open(&self, token: &str, now_unix_ms: i64) -> Result<SessionClaims, CredentialError> {
        let (claims, tag) = split(token)?;
        let tag = URL_SAFE_NO_PAD
            .decode(tag)
            .map_err(|_| CredentialError::Malformed)?;
        self.mac(claims)
            .verify_slice(&tag)
            .map_err(|_| CredentialError::BadSignature)?;
        let claims = decode_claims(claims)?;
        if now_unix_ms >= claims.expires_unix_ms {
            return Err(CredentialError::Expired);
        }
        Ok(claims)
    }
}

/// Whether a bearer credential is a session token (rather than an API token).
pub fn is_session_token(token: &str) -> bool {
    token.starts_with(PREFIX)
}

fn split(token: &str) -> Result<(&str, &str), CredentialError> {
    token
        .strip_prefix(PREFIX)
        .and_then(|rest| rest.split_once('.'))
        .ok_or(CredentialError::Malformed)
}

fn decode_claims(claims: &str) -> Result<SessionClaims, CredentialError> {
    let json = URL_SAFE_NO_PAD
        .decode(claims)
        .map_err(|_| CredentialError::Malformed)?;
    serde_json::from_slice(&json).map_err(|_| CredentialError::Malformed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims() -> SessionClaims {
        SessionClaims {
            user: "chief".into(),
            issued_unix_ms: 1_000,
            expires_unix_ms: 2_000,
            csrf: "abc".into(),
        }
    }

    #[test]
    fn a_session_opens_with_its_key_until_it_expires() {
        let key = SessionKey::from_bytes([1; 32]);
        let token = key.issue(&claims());
        assert!(is_session_token(&token));
        assert_eq!(key.open(&token, 1_999), Ok(claims()));
        assert_eq!(key.open(&token, 2_000), Err(CredentialError::Expired));
        assert_eq!(SessionClaims::read_unverified(&token), Ok(claims()));
    }

    #[test]
    fn a_forged_or_altered_session_is_refused() {
        let key = SessionKey::from_bytes([1; 32]);
        let other = SessionKey::from_bytes([2; 32]);
        let token = other.issue(&claims());
        assert_eq!(key.open(&token, 1_500), Err(CredentialError::BadSignature));
        // Longer expiry, same signature.
        let genuine = key.issue(&claims());
        let (_, tag) = genuine.rsplit_once('.').expect("tag");
        let altered = SessionClaims {
            expires_unix_ms: i64::MAX,
            ..claims()
        };
        let altered_claims = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&altered).expect("json"));
        let forged = format!("{PREFIX}{altered_claims}.{tag}");
        assert_eq!(key.open(&forged, 1_500), Err(CredentialError::BadSignature));
        for garbage in ["", "bcs1.", "bcs1.x.y", "bearer", "bcs1.!!.??"] {
            assert!(key.open(garbage, 1_500).is_err(), "{garbage:?}");
        }
    }

    #[test]
    fn keys_round_trip_through_hex() {
        let key = SessionKey::from_bytes([0xab; 32]);
        assert_eq!(
            SessionKey::from_hex(&key.to_hex()).map(|k| k.0),
            Ok([0xab; 32])
        );
        assert!(SessionKey::from_hex("abc").is_err());
        assert!(SessionKey::from_hex(&"zz".repeat(32)).is_err());
    }
}

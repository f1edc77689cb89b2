//! Who wrote a record: the game service signs each record's hash with Ed25519, and every reader
//! checks the signature against the public keys it trusts before folding the record.
//!
//! The hash chain alone proves that a log was not altered after the fact, but anyone able to
//! write to a game's subject could append a record that continues the chain. A signature binds
//! the record's hash — and through the chain every earlier record of the game — to a key only the
//! game service holds.

use std::collections::BTreeMap;

use base64::Engine as _;
use ed25519_dalek::{Signature, Signer as _, SigningKey, Verifier as _, VerifyingKey};
use sha2::{Digest as _, Sha256};

use crate::events::GameEventRecord;

/// Signed is `SIGNING_CONTEXT || hash`: a signature made for a game record can never be passed
/// off as one for anything else the key might sign later.
const SIGNING_CONTEXT: &[u8] = b"boardcast game record v1";

/// How a public key is written in files and messages: `ed25519:` and the key in base64.
const PUBLIC_KEY_PREFIX: &str = "ed25519:";
/// How a secret key file starts; the 32-byte seed follows in base64.
const SECRET_KEY_PREFIX: &str = "boardcast-ed25519-secret:";

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KeyError {
    #[error("not a public key (expected `ed25519:` and 32 bytes in base64): {0}")]
    BadPublicKey(String),
    #[error(
        "not a boardcast signing key (expected `boardcast-ed25519-secret:` and 32 bytes in base64)"
    )]
    BadSecretKey,
}

/// Why a record's signature is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SignatureError {
    #[error("record {game_seq} is not signed")]
    Unsigned { game_seq: u64 },
    #[error("record {game_seq} is signed by key {key_id}, which is not among the trusted keys")]
    UnknownKey { game_seq: u64, key_id: String },
    #[error(
        "record {game_seq}: its signature by key {key_id} does not verify (the record was altered, or the signature forged)"
    )]
    BadSignature { game_seq: u64, key_id: String },
    #[error(
        "record {game_seq} is not signed although earlier records of its game are (a record was inserted)"
    )]
    UnsignedAfterSigned { game_seq: u64 },
}

impl SignatureError {
    pub fn game_seq(&self) -> u64 {
        match self {
            SignatureError::Unsigned { game_seq }
            | SignatureError::UnknownKey { game_seq, .. }
            | SignatureError::BadSignature { game_seq, .. }
            | SignatureError::UnsignedAfterSigned { game_seq } => *game_seq,
        }
    }
}

/// A public key that verifies records, with the id records name it by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublicKey {
    key: VerifyingKey,
    key_id: String,
}

impl PublicKey {
    pub fn from_bytes(bytes: &[u8]) -> Result<PublicKey, KeyError> {
        let bytes: [u8; 32] = bytes
            .try_into()
            .map_err(|_| KeyError::BadPublicKey(format!("{} bytes", bytes.len())))?;
        let key = VerifyingKey::from_bytes(&bytes)
            .map_err(|_| KeyError::BadPublicKey("not a point on the curve".into()))?;
        Ok(PublicKey {
            key_id: key_id_of(&key),
            key,
        })
    }

    /// Reads `ed25519:<base64>`.
    pub fn parse(text: &str) -> Result<PublicKey, KeyError> {
        let text = text.trim();
        let encoded = text
            .strip_prefix(PUBLIC_KEY_PREFIX)
            .ok_or_else(|| KeyError::BadPublicKey(text.chars().take(60).collect()))?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .map_err(|e| KeyError::BadPublicKey(e.to_string()))?;
        Self::from_bytes(&bytes)
    }

    pub fn to_bytes(&self) -> [u8; 32] {
        self.key.to_bytes()
    }

    /// `ed25519:<base64>`, as `parse` reads it.
    pub fn to_text(&self) -> String {
        format!(
            "{PUBLIC_KEY_PREFIX}{}",
            base64::engine::general_purpose::STANDARD.encode(self.key.to_bytes())
        )
    }

    /// The id records name the key by: the first 16 hex digits of the fingerprint.
    pub fn key_id(&self) -> &str {
        &self.key_id
    }

    /// SHA-256 of the key in hex, in groups of four: what an organiser publishes and a
    /// committee compares.
    pub fn fingerprint(&self) -> String {
        let digest = hex_digits(&Sha256::digest(self.key.to_bytes()));
        digest
            .as_bytes()
            .chunks(4)
            .map(|c| String::from_utf8_lossy(c).into_owned())
            .collect::<Vec<_>>()
            .join(":")
    }

    /// Whether `pin` is this key's whole fingerprint (with or without the colons, any case):
    /// a shortened one would let a key made to match it pass.
    pub fn matches(&self, pin: &str) -> bool {
        let pin: String = pin
            .chars()
            .filter(|c| *c != ':' && !c.is_whitespace())
            .collect::<String>()
            .to_ascii_lowercase();
        pin == self.fingerprint().replace(':', "")
    }
}

fn hex_digits(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn key_id_of(key: &VerifyingKey) -> String {
    hex_digits(&Sha256::digest(key.to_bytes())[..8])
}

/// The game service's signing key.
#[derive(Clone)]
pub struct RecordSigner {
    key: SigningKey,
    public: PublicKey,
}

impl std::fmt::Debug for RecordSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the secret.
        write!(f, "RecordSigner({})", self.public.key_id)
    }
}

impl RecordSigner {
    /// A signer from a 32-byte seed (the caller draws it from a secure random source).
    pub fn from_seed(seed: [u8; 32]) -> RecordSigner {
        let key = SigningKey::from_bytes(&seed);
        let verifying = key.verifying_key();
        RecordSigner {
            public: PublicKey {
                key_id: key_id_of(&verifying),
                key: verifying,
            },
            key,
        }
    }

    /// Reads a secret key file's text.
    pub fn parse(text: &str) -> Result<RecordSigner, KeyError> {
        let encoded = text
            .trim()
            .strip_prefix(SECRET_KEY_PREFIX)
            .ok_or(KeyError::BadSecretKey)?;
        let seed: [u8; 32] = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .map_err(|_| KeyError::BadSecretKey)?
            .try_into()
            .map_err(|_| KeyError::BadSecretKey)?;
        Ok(Self::from_seed(seed))
    }

    /// The secret key file's text, as `parse` reads it.
    pub fn to_secret_text(&self) -> String {
        format!(
            "{SECRET_KEY_PREFIX}{}\n",
            base64::engine::general_purpose::STANDARD.encode(self.key.to_bytes())
        )
    }

    pub fn public_key(&self) -> &PublicKey {
        &self.public
    }

    /// Signs a record whose hash is set (`Game::record` sets it).
    pub fn sign(&self, record: &mut GameEventRecord) {
        let signature = self.key.sign(&signed_message(&record.hash));
        record.signature = signature.to_bytes().to_vec();
        record.key_id = self.public.key_id.clone();
    }
}

fn signed_message(hash: &[u8]) -> Vec<u8> {
    let mut message = Vec::with_capacity(SIGNING_CONTEXT.len() + hash.len());
    message.extend_from_slice(SIGNING_CONTEXT);
    message.extend_from_slice(hash);
    message
}

/// Whether a record that verified carries a signature at all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Authenticity {
    Signed {
        key_id: String,
    },
    /// Written before records were signed; accepted only as the start of a game's log.
    Unsigned,
}

/// The public keys a reader trusts, by key id, and whether it accepts logs written before
/// signing.
#[derive(Clone, Debug, Default)]
pub struct TrustedKeys {
    keys: BTreeMap<String, PublicKey>,
    accept_unsigned: bool,
}

impl TrustedKeys {
    pub fn new(keys: impl IntoIterator<Item = PublicKey>) -> TrustedKeys {
        TrustedKeys {
            keys: keys.into_iter().map(|k| (k.key_id.clone(), k)).collect(),
            accept_unsigned: false,
        }
    }

    /// Reads a trusted-keys file: one `ed25519:<base64>` per line, optionally followed by a
    /// comment; blank lines and lines starting with `#` are skipped. Errors name the line.
    pub fn parse(text: &str) -> Result<TrustedKeys, String> {
        let mut keys = Vec::new();
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let first = line.split_whitespace().next().unwrap_or_default();
            let key = PublicKey::parse(first).map_err(|e| format!("line {}: {e}", number + 1))?;
            keys.push(key);
        }
        Ok(Self::new(keys))
    }

    /// Also accept records without a signature at the start of a game's log (logs written
    /// before records were signed); a signed game never accepts an unsigned record.
    pub fn accepting_unsigned(mut self, accept: bool) -> TrustedKeys {
        self.accept_unsigned = accept;
        self
    }

    pub fn add(&mut self, key: PublicKey) {
        self.keys.insert(key.key_id.clone(), key);
    }

    pub fn keys(&self) -> impl Iterator<Item = &PublicKey> {
        self.keys.values()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    pub fn get(&self, key_id: &str) -> Option<&PublicKey> {
        self.keys.get(key_id)
    }

    /// Checks `record`'s signature. `game_signed` says whether the game's log already holds a
    /// signed record (`Game::is_signed`); `game_seq` only names the record in errors.
    pub fn check(
        &self,
        record: &GameEventRecord,
        game_seq: u64,
        game_signed: bool,
    ) -> Result<Authenticity, SignatureError> {
        let key = self.named_key(record, game_seq, game_signed)?;
        let Some(key) = key else {
            return Ok(Authenticity::Unsigned);
        };
        if !signature_verifies(key, record) {
            return Err(SignatureError::BadSignature {
                game_seq,
                key_id: record.key_id.clone(),
            });
        }
        Ok(Authenticity::Signed {
            key_id: record.key_id.clone(),
        })
    }

    /// Everything `check` checks but the signature itself: an unsigned record where one is
    /// allowed, or one naming a trusted key. For records whose content a later signature already
    /// proves (through the hash chain): the key they name must still be trusted.
    pub fn check_named(
        &self,
        record: &GameEventRecord,
        game_seq: u64,
        game_signed: bool,
    ) -> Result<Authenticity, SignatureError> {
        Ok(match self.named_key(record, game_seq, game_signed)? {
            Some(_) => Authenticity::Signed {
                key_id: record.key_id.clone(),
            },
            None => Authenticity::Unsigned,
        })
    }

    /// The trusted key `record` names (`None`: an unsigned record that is allowed).
    fn named_key(
        &self,
        record: &GameEventRecord,
        game_seq: u64,
        game_signed: bool,
    ) -> Result<Option<&PublicKey>, SignatureError> {
        if record.signature.is_empty() && record.key_id.is_empty() {
            return if game_signed {
                Err(SignatureError::UnsignedAfterSigned { game_seq })
            } else if self.accept_unsigned {
                Ok(None)
            } else {
                Err(SignatureError::Unsigned { game_seq })
            };
        }
        self.keys
            .get(&record.key_id)
            .map(Some)
            .ok_or_else(|| SignatureError::UnknownKey {
                game_seq,
                key_id: record.key_id.clone(),
            })
    }
}

impl TrustedKeys {
    /// Whether every record among `records` that claims a signer (a signature or a key id)
    /// carries a good signature by a trusted key, checked as one Ed25519 batch: the terms of
    /// one key's signatures coalesced, about four times as fast as one by one. `false` says
    /// only that at least one does not: [`TrustedKeys::check`] each to name it. Records
    /// claiming no signer at all are left to `check`. The batch accepts what ZIP 215's
    /// cofactored equation accepts, a little more than [`signature_verifies`] (a signature
    /// altered by a small-order component): the content is still the signer's, as the hash
    /// chain shows.
    pub fn batch_verifies(&self, records: &[&GameEventRecord]) -> bool {
        use rand_core_06::SeedableRng as _;
        let mut batch = ed25519_zebra::batch::Verifier::new();
        for record in records
            .iter()
            .filter(|r| !(r.signature.is_empty() && r.key_id.is_empty()))
        {
            let (Some(key), Ok(signature)) = (
                self.keys.get(&record.key_id),
                <[u8; 64]>::try_from(record.signature.as_slice()),
            ) else {
                return false;
            };
            batch.queue((
                ed25519_zebra::VerificationKeyBytes::from(key.key.to_bytes()),
                ed25519_zebra::Signature::from_bytes(&signature),
                &signed_message(&record.hash),
            ));
        }
        // The coefficients must be unpredictable to whoever made the signatures.
        let Ok(rng) = rand_chacha_03::ChaCha20Rng::from_rng(rand_core_06::OsRng) else {
            return false;
        };
        batch.verify(rng).is_ok()
    }
}

/// Whether `record`'s signature is `key`'s over its hash.
pub fn signature_verifies(key: &PublicKey, record: &GameEventRecord) -> bool {
    Signature::from_slice(&record.signature).is_ok_and(|signature| {
        key.key
            .verify(&signed_message(&record.hash), &signature)
            .is_ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(hash: u8) -> GameEventRecord {
        GameEventRecord {
            event: vec![1, 2, 3],
            prev_hash: vec![0; 32],
            hash: vec![hash; 32],
            chain_version: 1,
            ..Default::default()
        }
    }

    #[test]
    fn a_signed_record_verifies_with_its_key_only() {
        let signer = RecordSigner::from_seed([7; 32]);
        let other = RecordSigner::from_seed([8; 32]);
        let mut r = record(1);
        signer.sign(&mut r);
        let trusted = TrustedKeys::new([signer.public_key().clone()]);
        assert_eq!(
            trusted.check(&r, 1, false),
            Ok(Authenticity::Signed {
                key_id: signer.public_key().key_id().to_owned()
            })
        );
        // The hash changed after signing: refused.
        let mut altered = r.clone();
        altered.hash[0] ^= 1;
        assert!(matches!(
            trusted.check(&altered, 1, true),
            Err(SignatureError::BadSignature { .. })
        ));
        // Signed by a key nobody trusts.
        let mut forged = record(1);
        other.sign(&mut forged);
        assert!(matches!(
            trusted.check(&forged, 1, true),
            Err(SignatureError::UnknownKey { .. })
        ));
        // Signed by another key but naming the trusted one.
        forged.key_id = signer.public_key().key_id().to_owned();
        assert!(matches!(
            trusted.check(&forged, 1, true),
            Err(SignatureError::BadSignature { .. })
        ));
    }

    #[test]
    fn unsigned_records_only_at_the_start_of_a_log_and_only_when_accepted() {
        let trusted = TrustedKeys::new([RecordSigner::from_seed([7; 32]).public_key().clone()]);
        let r = record(1);
        assert_eq!(
            trusted.check(&r, 1, false),
            Err(SignatureError::Unsigned { game_seq: 1 })
        );
        let legacy = trusted.accepting_unsigned(true);
        assert_eq!(legacy.check(&r, 1, false), Ok(Authenticity::Unsigned));
        assert_eq!(
            legacy.check(&r, 9, true),
            Err(SignatureError::UnsignedAfterSigned { game_seq: 9 })
        );
    }

    #[test]
    fn keys_read_back_as_written() {
        let signer = RecordSigner::from_seed([3; 32]);
        let again = RecordSigner::parse(&signer.to_secret_text()).expect("reads");
        assert_eq!(again.public_key(), signer.public_key());
        let public = PublicKey::parse(&signer.public_key().to_text()).expect("reads");
        assert_eq!(&public, signer.public_key());
        assert!(public.matches(&public.fingerprint()));
        assert!(public.matches(&public.fingerprint().replace(':', "").to_uppercase()));
        assert!(
            !public.matches(public.key_id()),
            "a key id is too short to pin a key"
        );
        assert!(!public.matches("abcd"));
        let file = format!(
            "# the hall's game service\n\n{} since 2026-11\n",
            public.to_text()
        );
        let trusted = TrustedKeys::parse(&file).expect("reads");
        assert_eq!(trusted.get(public.key_id()), Some(&public));
        assert!(
            TrustedKeys::parse("ed25519:nope")
                .unwrap_err()
                .contains("line 1")
        );
        assert_eq!(
            RecordSigner::parse("garbage").unwrap_err(),
            KeyError::BadSecretKey
        );
    }

    #[test]
    fn a_batch_verifies_when_every_signature_does_and_fails_on_any_other() {
        let signer = RecordSigner::from_seed([7; 32]);
        let other = RecordSigner::from_seed([8; 32]);
        let trusted = TrustedKeys::new([signer.public_key().clone()]);
        let mut records: Vec<GameEventRecord> = (0..40u8)
            .map(|n| {
                let mut r = record(n);
                signer.sign(&mut r);
                r
            })
            .collect();
        // An unsigned record is left to `check`.
        records.push(record(99));
        let all: Vec<&GameEventRecord> = records.iter().collect();
        assert!(trusted.batch_verifies(&all));
        assert!(trusted.batch_verifies(&[]));
        let mut altered = records.clone();
        altered[17].hash[0] ^= 1;
        assert!(!trusted.batch_verifies(&altered.iter().collect::<Vec<_>>()));
        let mut foreign = records.clone();
        other.sign(&mut foreign[3]);
        assert!(!trusted.batch_verifies(&foreign.iter().collect::<Vec<_>>()));
        let mut garbled = records.clone();
        garbled[5].signature.truncate(10);
        assert!(!trusted.batch_verifies(&garbled.iter().collect::<Vec<_>>()));
        // A signature removed and its key id kept: not a record without a signer.
        let mut stripped = records;
        stripped[9].signature.clear();
        assert!(!trusted.batch_verifies(&stripped.iter().collect::<Vec<_>>()));
        assert!(matches!(
            trusted.check(&stripped[9], 9, true),
            Err(SignatureError::BadSignature { .. })
        ));
    }
}

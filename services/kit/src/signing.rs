//! The game service's signing key and the public keys readers trust, as files: where they are,
//! how they are created, and the command-line options every log reader shares.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use boardcast_game::signing::{PublicKey, RecordSigner, TrustedKeys};
use rand::RngCore as _;

use crate::secrets::write_private;

/// Where the game service's signing key is unless configured otherwise.
pub const DEFAULT_SIGNING_KEY_FILE: &str = "var/signing.key";
/// Where readers find the public keys they trust unless configured otherwise.
pub const DEFAULT_TRUSTED_KEYS_FILE: &str = "var/trusted-keys";

/// How every reader of the game log is told which signatures to accept.
#[derive(clap::Args, Debug, Clone)]
pub struct TrustArgs {
    /// File of the public keys whose signatures on game log records are accepted: one
    /// `ed25519:<base64>` per line (as `boardcast keys new` appends them and `boardcast keys
    /// show` prints them); keep old keys listed after a rotation. A record signed by no key
    /// listed here is refused.
    #[arg(long, env = "BOARDCAST_TRUSTED_KEYS", default_value = DEFAULT_TRUSTED_KEYS_FILE)]
    pub trusted_keys: PathBuf,
    /// Also accept game logs written before records were signed (unsigned records at the start
    /// of a game's log only; they are marked unsigned). Off by default: in a signed deployment
    /// an unsigned record is a forgery, and with this on, whoever can write to the game log can
    /// start an unsigned game. Use it only while such old logs must be read.
    #[arg(long, env = "BOARDCAST_ACCEPT_UNSIGNED_LOGS")]
    pub accept_unsigned_logs: bool,
}

impl TrustArgs {
    /// The trusted keys; the file must exist and name at least one key.
    pub fn load(&self) -> anyhow::Result<TrustedKeys> {
        Ok(read_trusted_keys(&self.trusted_keys)?.accepting_unsigned(self.accept_unsigned_logs))
    }

    /// The trusted keys plus `own` (the game service trusts its own key without a file).
    pub fn load_with(&self, own: &PublicKey) -> anyhow::Result<TrustedKeys> {
        let mut keys = match std::fs::read_to_string(&self.trusted_keys) {
            Ok(text) => TrustedKeys::parse(&text)
                .map_err(anyhow::Error::msg)
                .with_context(|| format!("reading {}", self.trusted_keys.display()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => TrustedKeys::default(),
            Err(e) => {
                return Err(e).with_context(|| format!("reading {}", self.trusted_keys.display()));
            }
        };
        keys.add(own.clone());
        Ok(keys.accepting_unsigned(self.accept_unsigned_logs))
    }
}

/// Reads a trusted-keys file, refusing a missing or empty one with what to do.
pub fn read_trusted_keys(path: &Path) -> anyhow::Result<TrustedKeys> {
    let text = std::fs::read_to_string(path).with_context(|| {
        format!(
            "reading the trusted keys {}: copy the game service's public key there \
             (`boardcast keys show --key FILE` on its machine prints it)",
            path.display()
        )
    })?;
    let keys = TrustedKeys::parse(&text)
        .map_err(anyhow::Error::msg)
        .with_context(|| format!("reading the trusted keys {}", path.display()))?;
    if keys.is_empty() {
        anyhow::bail!(
            "{} lists no public key: add the game service's (`boardcast keys show`)",
            path.display()
        );
    }
    Ok(keys)
}

/// Reads the game service's signing key; a missing file is an error that says how to make one
/// (a key appearing silently would make every reader refuse the new records).
pub fn read_signing_key(path: &Path) -> anyhow::Result<RecordSigner> {
    let text = std::fs::read_to_string(path).with_context(|| {
        format!(
            "reading the signing key {}: create one with `boardcast keys new --key {}`",
            path.display(),
            path.display()
        )
    })?;
    RecordSigner::parse(&text)
        .map_err(anyhow::Error::msg)
        .with_context(|| format!("reading the signing key {}", path.display()))
}

/// Creates a new signing key at `key_path` (0600; an existing key is never overwritten) and
/// appends its public key to the trusted-keys file at `trusted_path`.
pub fn create_signing_key(key_path: &Path, trusted_path: &Path) -> anyhow::Result<RecordSigner> {
    if key_path.exists() {
        anyhow::bail!(
            "{} already exists; a signing key is never overwritten (its records would no longer \
             verify if the public key were lost). Choose another file to rotate the key.",
            key_path.display()
        );
    }
    let mut seed = [0u8; 32];
    rand::rng().fill_bytes(&mut seed);
    let signer = RecordSigner::from_seed(seed);
    write_private(key_path, &signer.to_secret_text())?;
    trust_key(trusted_path, signer.public_key())?;
    Ok(signer)
}

/// Appends `key` to the trusted-keys file (created if needed) unless it is listed already.
pub fn trust_key(trusted_path: &Path, key: &PublicKey) -> anyhow::Result<()> {
    let existing = match std::fs::read_to_string(trusted_path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("reading {}", trusted_path.display())),
    };
    if TrustedKeys::parse(&existing)
        .map(|keys| keys.get(key.key_id()).is_some())
        .unwrap_or(false)
    {
        return Ok(());
    }
    let mut text = existing;
    if text.is_empty() {
        text.push_str("# Public keys whose signatures on game log records are trusted.\n");
    } else if !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&format!(
        "{} fingerprint {}\n",
        key.to_text(),
        key.fingerprint()
    ));
    if let Some(dir) = trusted_path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(trusted_path, text)
        .with_context(|| format!("writing {}", trusted_path.display()))
}

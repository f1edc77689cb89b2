//! The hash chain over a game's records (see `GameEventRecord` in the schema).

use sha2::{Digest, Sha256};

/// Version of the chain algorithm written into every record.
pub const HASH_CHAIN_VERSION: u32 = 1;

/// `prev_hash` of a game's first record.
pub const GENESIS_HASH: [u8; 32] = [0; 32];

/// SHA-256(prev_hash || event bytes), over the bytes exactly as stored.
pub fn chain_hash(prev_hash: &[u8; 32], event_bytes: &[u8]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(prev_hash);
    hasher.update(event_bytes);
    hasher.finalize().into()
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ChainError {
    #[error("record {game_seq}: unsupported hash-chain version {version}")]
    UnsupportedVersion { game_seq: u64, version: u32 },
    #[error(
        "record {game_seq}: previous hash does not match the chain head (missing or reordered record)"
    )]
    BrokenLink { game_seq: u64 },
    #[error("record {game_seq}: hash does not match its content (altered record)")]
    BadHash { game_seq: u64 },
}

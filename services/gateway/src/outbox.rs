//! The store-and-forward outbox: observations are numbered and written to a redb file before
//! anything else happens to them, and leave it only when JetStream has acknowledged them.
//!
//! `device_seq` counters live in the same file and advance in the same transaction as the
//! observation is stored, so a number is never reused, also across restarts and crashes.
//!
//! The file also keeps a random key from which each observation's message nonce is derived
//! with its board and number: a resend, also after a restart, carries the same message id, and
//! no other gateway can compute it (see `boardcast_kit::nats::observation_message_id`).

use std::path::Path;

use boardcast_schema::device::v1::Observation;
use prost::Message as _;
use redb::{Database, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition};

/// Pending observations by outbox position (arrival order over all boards).
const PENDING: TableDefinition<u64, &[u8]> = TableDefinition::new("pending");
/// The last `device_seq` given out per board.
const LAST_SEQ: TableDefinition<&str, u64> = TableDefinition::new("last_device_seq");
/// The key of the message nonces, made when the file is.
const NONCE_KEY: TableDefinition<&str, &[u8]> = TableDefinition::new("message_nonce_key");
/// The highest `device_seq` JetStream acknowledged per board: a JetStream that holds less of
/// the board is not the one this outbox published to. Absent from files written before it was
/// kept (nothing acknowledged is then known).
const ACKNOWLEDGED: TableDefinition<&str, u64> = TableDefinition::new("acknowledged_device_seq");

#[derive(Debug, thiserror::Error)]
pub enum OutboxError {
    #[error("outbox storage: {0}")]
    Storage(String),
    #[error("outbox entry {position} is not an observation: {reason}")]
    Corrupt { position: u64, reason: String },
}

fn storage(e: impl std::fmt::Display) -> OutboxError {
    OutboxError::Storage(e.to_string())
}

/// What the outbox holds of one board, for the check before anything is published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingBoard {
    pub board_id: String,
    /// Observations not yet acknowledged.
    pub pending: u64,
    /// When the gateway received the oldest of them (ms since 1970; 0: not known).
    pub oldest_receive_unix_ms: i64,
    /// The highest `device_seq` of the board JetStream acknowledged to this outbox (0: none).
    pub acknowledged_up_to: u64,
}

/// Why observations waiting in the outbox look like another event's, one sentence per board:
/// the oldest is older than `max_age_ms` (a NATS outage in a round is minutes, not hours), or
/// JetStream holds the board's observations only up to `jetstream_last` although it acknowledged
/// more to this outbox (the outbox published to another NATS store: another event, a test
/// hall). `jetstream_last` is `None` for a board when JetStream could not be asked.
pub fn foreign_observations(
    boards: &[PendingBoard],
    jetstream_last: impl Fn(&str) -> Option<u64>,
    now_unix_ms: i64,
    max_age_ms: i64,
) -> Vec<String> {
    let mut reasons = Vec::new();
    for board in boards {
        let age_ms = now_unix_ms.saturating_sub(board.oldest_receive_unix_ms);
        if board.oldest_receive_unix_ms > 0 && age_ms > max_age_ms {
            reasons.push(format!(
                "{} observation(s) of board {} wait since {} h ago",
                board.pending,
                board.board_id,
                age_ms / 3_600_000
            ));
        } else if let Some(last) = jetstream_last(&board.board_id)
            && last < board.acknowledged_up_to
        {
            reasons.push(format!(
                "{} observation(s) of board {} wait, and this NATS holds the board's only up to \
                 number {last} although it acknowledged up to {} to this outbox",
                board.pending, board.board_id, board.acknowledged_up_to
            ));
        }
    }
    reasons
}

/// An observation waiting to be published.
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    pub position: u64,
    pub observation: Observation,
    /// Its message id's nonce: the same each time it is sent.
    pub message_nonce: u64,
}

pub struct Outbox {
    db: Database,
    /// Secret: the message nonces are hashes of it, the board and the number.
    nonce_key: [u8; 32],
}

impl Outbox {
    /// Opens (or creates) the outbox file. After an unclean shutdown redb repairs the file here.
    pub fn open(path: &Path) -> Result<Outbox, OutboxError> {
        let db = Database::create(path).map_err(storage)?;
        let txn = db.begin_write().map_err(storage)?;
        txn.open_table(PENDING).map_err(storage)?;
        txn.open_table(LAST_SEQ).map_err(storage)?;
        txn.open_table(ACKNOWLEDGED).map_err(storage)?;
        let nonce_key = {
            let mut table = txn.open_table(NONCE_KEY).map_err(storage)?;
            let stored = table
                .get("key")
                .map_err(storage)?
                .and_then(|v| <[u8; 32]>::try_from(v.value()).ok());
            match stored {
                Some(key) => key,
                None => {
                    let key: [u8; 32] = rand::random();
                    table.insert("key", key.as_slice()).map_err(storage)?;
                    key
                }
            }
        };
        txn.commit().map_err(storage)?;
        Ok(Outbox { db, nonce_key })
    }

    /// The message nonce of a board's observation: one per observation (a board's numbers are
    /// never reused), the same on every resend.
    fn message_nonce(&self, board_id: &str, device_seq: u64) -> u64 {
        use sha2::{Digest as _, Sha256};
        let digest = Sha256::new()
            .chain_update(self.nonce_key)
            .chain_update((board_id.len() as u64).to_be_bytes())
            .chain_update(board_id.as_bytes())
            .chain_update(device_seq.to_be_bytes())
            .finalize();
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        u64::from_be_bytes(first)
    }

    /// Numbers the observations for their boards (setting `device_seq`) and stores them durably,
    /// all in one transaction. Returns them as stored.
    pub fn append(&self, observations: Vec<Observation>) -> Result<Vec<Observation>, OutboxError> {
        let txn = self.db.begin_write().map_err(storage)?;
        let mut stored = Vec::with_capacity(observations.len());
        {
            let mut pending = txn.open_table(PENDING).map_err(storage)?;
            let mut last_seq = txn.open_table(LAST_SEQ).map_err(storage)?;
            let first_position = pending
                .last()
                .map_err(storage)?
                .map(|(k, _)| k.value() + 1)
                .unwrap_or(1);
            for (position, mut observation) in (first_position..).zip(observations) {
                let seq = last_seq
                    .get(observation.board_id.as_str())
                    .map_err(storage)?
                    .map(|v| v.value())
                    .unwrap_or(0)
                    + 1;
                last_seq
                    .insert(observation.board_id.as_str(), seq)
                    .map_err(storage)?;
                observation.device_seq = seq;
                pending
                    .insert(position, observation.encode_to_vec().as_slice())
                    .map_err(storage)?;
                stored.push(observation);
            }
        }
        txn.commit().map_err(storage)?;
        Ok(stored)
    }

    /// Makes the board's next `device_seq` come after `last_elsewhere` (the last one JetStream
    /// holds), when that is further than this outbox got: a new or replaced outbox file must not
    /// number a board from 1 again, or its observations would be taken for duplicates. Never
    /// lowers the counter. Returns the board's last `device_seq` now.
    pub fn continue_after(&self, board_id: &str, last_elsewhere: u64) -> Result<u64, OutboxError> {
        let txn = self.db.begin_write().map_err(storage)?;
        let last = {
            let mut last_seq = txn.open_table(LAST_SEQ).map_err(storage)?;
            let own = last_seq
                .get(board_id)
                .map_err(storage)?
                .map_or(0, |v| v.value());
            if last_elsewhere > own {
                last_seq.insert(board_id, last_elsewhere).map_err(storage)?;
            }
            own.max(last_elsewhere)
        };
        txn.commit().map_err(storage)?;
        Ok(last)
    }

    /// The oldest pending observations, up to `limit`, in arrival order.
    pub fn peek(&self, limit: usize) -> Result<Vec<Pending>, OutboxError> {
        let txn = self.db.begin_read().map_err(storage)?;
        let table = txn.open_table(PENDING).map_err(storage)?;
        let mut out = Vec::new();
        for entry in table.iter().map_err(storage)?.take(limit) {
            let (key, value) = entry.map_err(storage)?;
            let position = key.value();
            let observation =
                Observation::decode(value.value()).map_err(|e| OutboxError::Corrupt {
                    position,
                    reason: e.to_string(),
                })?;
            let message_nonce = self.message_nonce(&observation.board_id, observation.device_seq);
            out.push(Pending {
                position,
                observation,
                message_nonce,
            });
        }
        Ok(out)
    }

    /// Forgets observations JetStream has acknowledged, remembering how far each board's were.
    pub fn remove(&self, positions: &[u64]) -> Result<(), OutboxError> {
        if positions.is_empty() {
            return Ok(());
        }
        let txn = self.db.begin_write().map_err(storage)?;
        {
            let mut table = txn.open_table(PENDING).map_err(storage)?;
            let mut acknowledged = txn.open_table(ACKNOWLEDGED).map_err(storage)?;
            for position in positions {
                let Some(removed) = table.remove(position).map_err(storage)? else {
                    continue;
                };
                let Ok(observation) = Observation::decode(removed.value()) else {
                    continue;
                };
                let board = observation.board_id.as_str();
                let before = acknowledged
                    .get(board)
                    .map_err(storage)?
                    .map_or(0, |v| v.value());
                if observation.device_seq > before {
                    acknowledged
                        .insert(board, observation.device_seq)
                        .map_err(storage)?;
                }
            }
        }
        txn.commit().map_err(storage)?;
        Ok(())
    }

    /// Each board with observations waiting: how many, since when, and how far JetStream
    /// acknowledged the board's before.
    pub fn pending_boards(&self) -> Result<Vec<PendingBoard>, OutboxError> {
        let txn = self.db.begin_read().map_err(storage)?;
        let table = txn.open_table(PENDING).map_err(storage)?;
        let acknowledged = txn.open_table(ACKNOWLEDGED).map_err(storage)?;
        let mut boards: std::collections::BTreeMap<String, PendingBoard> =
            std::collections::BTreeMap::new();
        for entry in table.iter().map_err(storage)? {
            let (key, value) = entry.map_err(storage)?;
            let observation =
                Observation::decode(value.value()).map_err(|e| OutboxError::Corrupt {
                    position: key.value(),
                    reason: e.to_string(),
                })?;
            let board = boards
                .entry(observation.board_id.clone())
                .or_insert_with(|| PendingBoard {
                    board_id: observation.board_id.clone(),
                    pending: 0,
                    oldest_receive_unix_ms: observation.receive_time_unix_ms,
                    acknowledged_up_to: 0,
                });
            board.pending += 1;
            board.oldest_receive_unix_ms = board
                .oldest_receive_unix_ms
                .min(observation.receive_time_unix_ms);
        }
        for board in boards.values_mut() {
            board.acknowledged_up_to = acknowledged
                .get(board.board_id.as_str())
                .map_err(storage)?
                .map_or(0, |v| v.value());
        }
        Ok(boards.into_values().collect())
    }

    pub fn pending_count(&self) -> Result<u64, OutboxError> {
        let txn = self.db.begin_read().map_err(storage)?;
        let table = txn.open_table(PENDING).map_err(storage)?;
        table.len().map_err(storage)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observations_of_another_event_are_told_apart() {
        let hour = 3_600_000;
        let board = |id: &str, oldest: i64, acknowledged: u64| PendingBoard {
            board_id: id.into(),
            pending: 3,
            oldest_receive_unix_ms: oldest,
            acknowledged_up_to: acknowledged,
        };
        let now = 100 * hour;
        let boards = [
            // Waiting a few minutes, JetStream as far as it acknowledged: published.
            board("fresh", now - hour / 20, 40),
            // Waiting two days.
            board("old", now - 48 * hour, 0),
            // JetStream has less than it acknowledged: another store.
            board("elsewhere", now - hour / 20, 450),
        ];
        let last = |id: &str| match id {
            "fresh" => Some(40),
            "elsewhere" => Some(0),
            _ => None,
        };
        let reasons = foreign_observations(&boards, last, now, 12 * hour);
        assert_eq!(reasons.len(), 2, "{reasons:?}");
        assert!(
            reasons[0].contains("board old wait since 48 h"),
            "{reasons:?}"
        );
        assert!(
            reasons[1].contains("board elsewhere") && reasons[1].contains("up to 450"),
            "{reasons:?}"
        );
        // JetStream not asked (NATS away): only the age counts.
        assert!(foreign_observations(&boards[2..], |_| None, now, 12 * hour).is_empty());
    }

    #[test]
    fn what_is_waiting_is_summed_up_per_board_with_how_far_jetstream_took_it()
    -> Result<(), OutboxError> {
        let dir = tempfile::tempdir().map_err(storage)?;
        let outbox = Outbox::open(&dir.path().join("outbox.redb"))?;
        let at = |board: &str, ms: i64| Observation {
            board_id: board.into(),
            receive_time_unix_ms: ms,
            ..Default::default()
        };
        outbox.append(vec![at("a", 100), at("a", 200), at("b", 50), at("a", 300)])?;
        let pending = outbox.peek(10)?;
        // JetStream took a's first two.
        outbox.remove(&[pending[0].position, pending[1].position])?;
        assert_eq!(
            outbox.pending_boards()?,
            [
                PendingBoard {
                    board_id: "a".into(),
                    pending: 1,
                    oldest_receive_unix_ms: 300,
                    acknowledged_up_to: 2,
                },
                PendingBoard {
                    board_id: "b".into(),
                    pending: 1,
                    oldest_receive_unix_ms: 50,
                    acknowledged_up_to: 0,
                },
            ]
        );
        Ok(())
    }

    fn obs(board: &str) -> Observation {
        Observation {
            board_id: board.into(),
            ..Default::default()
        }
    }

    #[test]
    fn numbers_survive_reopening_and_are_never_reused() -> Result<(), OutboxError> {
        let dir = tempfile::tempdir().map_err(storage)?;
        let path = dir.path().join("outbox.redb");
        let nonce_before;
        {
            let outbox = Outbox::open(&path)?;
            let stored = outbox.append(vec![obs("a"), obs("b"), obs("a")])?;
            let seqs: Vec<u64> = stored.iter().map(|o| o.device_seq).collect();
            assert_eq!(seqs, vec![1, 1, 2]);
            let pending = outbox.peek(10)?;
            assert_eq!(pending.len(), 3);
            nonce_before = pending[2].message_nonce;
            outbox.remove(&[pending[0].position, pending[1].position])?;
        }
        let outbox = Outbox::open(&path)?;
        let left = outbox.peek(10)?;
        assert_eq!(left.len(), 1);
        assert_eq!(
            (
                left[0].observation.board_id.as_str(),
                left[0].observation.device_seq
            ),
            ("a", 2)
        );
        outbox.remove(&[left[0].position])?;
        // The same message nonce after reopening: a resend is a duplicate to JetStream. Another
        // observation has another; another outbox file, another key.
        assert_eq!(left[0].message_nonce, nonce_before);
        assert_ne!(outbox.message_nonce("a", 1), nonce_before);
        assert_ne!(outbox.message_nonce("b", 2), nonce_before);
        let other = Outbox::open(&dir.path().join("other.redb"))?;
        assert_ne!(other.message_nonce("a", 2), nonce_before);
        // Emptied, then more: numbers go on from where they were.
        let stored = outbox.append(vec![obs("a"), obs("b")])?;
        assert_eq!(stored[0].device_seq, 3);
        assert_eq!(stored[1].device_seq, 2);
        assert_eq!(outbox.pending_count()?, 2);
        Ok(())
    }
}

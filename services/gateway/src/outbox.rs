//! The store-and-forward outbox: observations are numbered and written to a redb file before
//! anything else happens to them, and leave it only when JetStream has acknowledged them.
//!
//! `device_seq` counters live in the same file and advance in the same transaction as the
//! observation is stored, so a number is never reused, also across restarts and crashes.

use std::path::Path;

use boardcast_schema::device::v1::Observation;
use prost::Message as _;
use redb::{Database, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition};

/// Pending observations by outbox position (arrival order over all boards).
const PENDING: TableDefinition<u64, &[u8]> = TableDefinition::new("pending");
/// The last `device_seq` given out per board.
const LAST_SEQ: TableDefinition<&str, u64> = TableDefinition::new("last_device_seq");

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

/// An observation waiting to be published.
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    pub position: u64,
    pub observation: Observation,
}

pub struct Outbox {
    db: Database,
}

impl Outbox {
    /// Opens (or creates) the outbox file. After an unclean shutdown redb repairs the file here.
    pub fn open(path: &Path) -> Result<Outbox, OutboxError> {
        let db = Database::create(path).map_err(storage)?;
        let txn = db.begin_write().map_err(storage)?;
        txn.open_table(PENDING).map_err(storage)?;
        txn.open_table(LAST_SEQ).map_err(storage)?;
        txn.commit().map_err(storage)?;
        Ok(Outbox { db })
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
            out.push(Pending {
                position,
                observation,
            });
        }
        Ok(out)
    }

    /// Forgets observations JetStream has acknowledged.
    pub fn remove(&self, positions: &[u64]) -> Result<(), OutboxError> {
        if positions.is_empty() {
            return Ok(());
        }
        let txn = self.db.begin_write().map_err(storage)?;
        {
            let mut table = txn.open_table(PENDING).map_err(storage)?;
            for position in positions {
                table.remove(position).map_err(storage)?;
            }
        }
        txn.commit().map_err(storage)?;
        Ok(())
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
        {
            let outbox = Outbox::open(&path)?;
            let stored = outbox.append(vec![obs("a"), obs("b"), obs("a")])?;
            let seqs: Vec<u64> = stored.iter().map(|o| o.device_seq).collect();
            assert_eq!(seqs, vec![1, 1, 2]);
            let pending = outbox.peek(10)?;
            assert_eq!(pending.len(), 3);
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
        // Emptied, then more: positions and numbers go on from where they were.
        let stored = outbox.append(vec![obs("a"), obs("b")])?;
        assert_eq!(stored[0].device_seq, 3);
        assert_eq!(stored[1].device_seq, 2);
        assert_eq!(outbox.pending_count()?, 2);
        Ok(())
    }
}

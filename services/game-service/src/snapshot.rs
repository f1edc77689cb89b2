//! Snapshots of the folded games in a redb file, so a restart does not re-read the whole log.
//!
//! The snapshot is only an optimisation: it holds, per game, the game's records exactly as stored
//! in the log, plus the stream sequence up to which every record of the log had been folded, both
//! written in one transaction (so the position always matches the games). On start the games are
//! folded from the snapshot (local, no network) and only the log after that position is read.
//! Deleting the file changes nothing but the start-up time. Storing records rather than a
//! serialised `Game` keeps the snapshot independent of the aggregate's in-memory layout: folding
//! them again is the same code path as reading the log.

use std::{
    path::{Path, PathBuf},
    sync::atomic::{AtomicBool, Ordering},
};

use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};

const GAMES: TableDefinition<&str, &[u8]> = TableDefinition::new("games");
const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
/// Where each game's subject ends in the log; a table of its own, so that snapshots written
/// before it was kept still read (their games' ends are then not known until their next record).
const GAME_ENDS: TableDefinition<&str, u64> = TableDefinition::new("game_ends");
/// Where each game was set up on the board it is on (its first record, or a revision that moved
/// it), when that is not its first record; a table of its own like `GAME_ENDS`.
const ON_BOARD_SINCE: TableDefinition<&str, u64> = TableDefinition::new("on_board_since");
/// The game live on each board (board → game id and `on_board_since`); rewritten whole each
/// time, and absent from snapshots written before it was kept (worked out from the games then).
const LIVE_ON_BOARD: TableDefinition<&str, (&str, u64)> = TableDefinition::new("live_on_board");
/// Written by earlier versions (games read with a record skipped); removed when the snapshot is
/// cleared.
const BEHIND: TableDefinition<&str, u64> = TableDefinition::new("behind");
/// The games whose log does not follow on (see `SnapshotData::broken`), with why; rewritten
/// whole each time, and absent from snapshots written before it was kept.
const BROKEN: TableDefinition<&str, &str> = TableDefinition::new("broken");
const FOLDED_SEQ: &str = "folded_seq";
/// When the game log the snapshot was folded from was created (`nats::game_log_created`):
/// absent from snapshots written before it was kept.
const LOG_CREATED: &str = "log_created";

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("snapshot {path}: {reason}")]
    Storage { path: PathBuf, reason: String },
    #[error("snapshot {path}: game {game_id} is stored in a form this version cannot read")]
    Corrupt { path: PathBuf, game_id: String },
}

pub struct SnapshotGame {
    pub game_id: String,
    pub first_stream_seq: u64,
    /// Stream sequence of the record that set the game up on its board (see `Entry`).
    pub on_board_since: u64,
    /// The game's `GameEventRecord`s, encoded as in the log.
    pub records: Vec<Vec<u8>>,
    /// Stream sequence of the last record on the game's subject (0: not known).
    pub last_stream_seq: u64,
}

pub struct SnapshotData {
    /// Every record of the log up to this stream sequence is in the snapshot.
    pub folded_seq: u64,
    pub games: Vec<SnapshotGame>,
    /// The game live on each board: board, game, `on_board_since` (all of them, whatever
    /// changed); `None` from a snapshot written before it was kept.
    pub live_on_board: Option<Vec<(String, String, u64)>>,
    /// The games whose log does not follow on (a record missing, two with one number), with
    /// why: restored so, their boards' observations go to the dead-letter stream at once after
    /// a restart too.
    pub broken: Vec<(String, String)>,
}

pub struct Snapshots {
    path: PathBuf,
    db: Database,
    /// The game log this service folds: a snapshot of another one (last event's file, a new
    /// NATS store) is cleared, not restored.
    log_created: String,
    /// A write failed: the file may lack changes, so the next write must hold every game.
    needs_full: AtomicBool,
}

fn encode_game(game: &SnapshotGame) -> Vec<u8> {
    let size: usize = game.records.iter().map(|r| r.len() + 4).sum();
    let mut out = Vec::with_capacity(8 + size);
    out.extend_from_slice(&game.first_stream_seq.to_le_bytes());
    for record in &game.records {
        // Records are a few hundred bytes; u32 lengths are plenty.
        out.extend_from_slice(&(record.len() as u32).to_le_bytes());
        out.extend_from_slice(record);
    }
    out
}

fn decode_game(game_id: &str, bytes: &[u8]) -> Option<SnapshotGame> {
    let (first, mut rest) = bytes.split_first_chunk::<8>()?;
    let mut records = Vec::new();
    while !rest.is_empty() {
        let (len, after) = rest.split_first_chunk::<4>()?;
        let len = u32::from_le_bytes(*len) as usize;
        if after.len() < len {
            return None;
        }
        records.push(after[..len].to_vec());
        rest = &after[len..];
    }
    Some(SnapshotGame {
        game_id: game_id.to_owned(),
        first_stream_seq: u64::from_le_bytes(*first),
        on_board_since: u64::from_le_bytes(*first),
        records,
        last_stream_seq: 0,
    })
}

impl Snapshots {
    /// Opens (or creates) the snapshot file for the game log created at `log_created`.
    pub fn open(path: &Path, log_created: &str) -> Result<Snapshots, SnapshotError> {
        let storage = |reason: String| SnapshotError::Storage {
            path: path.to_owned(),
            reason,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| storage(e.to_string()))?;
        }
        let db = Database::create(path).map_err(|e| storage(e.to_string()))?;
        Ok(Snapshots {
            path: path.to_owned(),
            db,
            log_created: log_created.to_owned(),
            needs_full: AtomicBool::new(false),
        })
    }

    fn storage(&self, reason: impl ToString) -> SnapshotError {
        SnapshotError::Storage {
            path: self.path.clone(),
            reason: reason.to_string(),
        }
    }

    /// Every row of a table keyed by game id; none when the table is absent (a snapshot written
    /// before it was kept).
    fn rows<V: redb::Value + 'static, T>(
        &self,
        txn: &redb::ReadTransaction,
        table: TableDefinition<&'static str, V>,
        owned: impl Fn(V::SelfType<'_>) -> T,
    ) -> Result<Vec<(String, T)>, SnapshotError> {
        match txn.open_table(table) {
            Ok(table) => table
                .iter()
                .map_err(|e| self.storage(e))?
                .map(|row| {
                    row.map(|(id, value)| (id.value().to_owned(), owned(value.value())))
                        .map_err(|e| self.storage(e))
                })
                .collect(),
            Err(redb::TableError::TableDoesNotExist(_)) => Ok(Vec::new()),
            Err(e) => Err(self.storage(e)),
        }
    }

    /// Reads the whole snapshot; `None` when it is empty, or when it was folded from another
    /// game log (it is then cleared).
    pub fn read(&self) -> Result<Option<SnapshotData>, SnapshotError> {
        let txn = self.db.begin_read().map_err(|e| self.storage(e))?;
        let meta = match txn.open_table(META) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
            Err(e) => return Err(self.storage(e)),
        };
        let made_from = meta
            .get(LOG_CREATED)
            .map_err(|e| self.storage(e))?
            .map(|v| String::from_utf8_lossy(v.value()).into_owned());
        if let Some(made_from) = made_from.filter(|made_from| *made_from != self.log_created) {
            tracing::warn!(
                path = %self.path.display(),
                made_from,
                this_log = self.log_created,
                "the snapshot was folded from another game log (another event, or a new NATS \
                 store): cleared, the games are read from this log"
            );
            drop(meta);
            drop(txn);
            self.clear()?;
            return Ok(None);
        }
        let Some(seq) = meta.get(FOLDED_SEQ).map_err(|e| self.storage(e))? else {
            return Ok(None);
        };
        let folded_seq = seq
            .value()
            .try_into()
            .map(u64::from_le_bytes)
            .map_err(|_| self.storage("bad folded_seq"))?;
        let table = txn.open_table(GAMES).map_err(|e| self.storage(e))?;
        let ends = match txn.open_table(GAME_ENDS) {
            Ok(t) => Some(t),
            Err(redb::TableError::TableDoesNotExist(_)) => None,
            Err(e) => return Err(self.storage(e)),
        };
        let on_board_since: std::collections::HashMap<String, u64> = self
            .rows(&txn, ON_BOARD_SINCE, |seq| seq)?
            .into_iter()
            .collect();
        let mut games = Vec::new();
        for row in table.iter().map_err(|e| self.storage(e))? {
            let (id, bytes) = row.map_err(|e| self.storage(e))?;
            let mut game =
                decode_game(id.value(), bytes.value()).ok_or_else(|| SnapshotError::Corrupt {
                    path: self.path.clone(),
                    game_id: id.value().to_owned(),
                })?;
            if let Some(ends) = &ends {
                game.last_stream_seq = ends
                    .get(id.value())
                    .map_err(|e| self.storage(e))?
                    .map_or(0, |end| end.value());
            }
            if let Some(&seq) = on_board_since.get(id.value()) {
                game.on_board_since = seq;
            }
            games.push(game);
        }
        let broken = self.rows(&txn, BROKEN, str::to_owned)?;
        let live_on_board = match txn.open_table(LIVE_ON_BOARD) {
            Ok(_) => Some(
                self.rows(&txn, LIVE_ON_BOARD, |(game, since)| {
                    (game.to_owned(), since)
                })?
                .into_iter()
                .map(|(board, (game, since))| (board, game, since))
                .collect(),
            ),
            Err(redb::TableError::TableDoesNotExist(_)) => None,
            Err(e) => return Err(self.storage(e)),
        };
        Ok(Some(SnapshotData {
            folded_seq,
            games,
            live_on_board,
            broken,
        }))
    }

    /// Empties the snapshot (when it does not belong to the log it is used with).
    pub fn clear(&self) -> Result<(), SnapshotError> {
        let txn = self.db.begin_write().map_err(|e| self.storage(e))?;
        for table in [GAMES, META] {
            txn.delete_table(table).map_err(|e| self.storage(e))?;
        }
        for table in [GAME_ENDS, ON_BOARD_SINCE, BEHIND] {
            txn.delete_table(table).map_err(|e| self.storage(e))?;
        }
        txn.delete_table(LIVE_ON_BOARD)
            .map_err(|e| self.storage(e))?;
        txn.delete_table(BROKEN).map_err(|e| self.storage(e))?;
        txn.commit().map_err(|e| self.storage(e))?;
        Ok(())
    }

    pub fn needs_full(&self) -> bool {
        self.needs_full.load(Ordering::SeqCst)
    }

    /// Writes the changed games (every game when `full`) and the new log position in one
    /// transaction.
    pub fn write(&self, data: &SnapshotData, full: bool) -> Result<(), SnapshotError> {
        let result = self.write_txn(data, full);
        if result.is_err() {
            self.needs_full.store(true, Ordering::SeqCst);
        } else if full {
            self.needs_full.store(false, Ordering::SeqCst);
        }
        result
    }

    /// Replaces every row of a table keyed by game id with `rows`.
    fn rewrite<'v, V: redb::Value + 'static>(
        &self,
        txn: &redb::WriteTransaction,
        table: TableDefinition<&'static str, V>,
        rows: impl Iterator<Item = (&'v String, V::SelfType<'v>)>,
    ) -> Result<(), SnapshotError> {
        txn.delete_table(table).map_err(|e| self.storage(e))?;
        let mut opened = txn.open_table(table).map_err(|e| self.storage(e))?;
        for (game_id, value) in rows {
            opened
                .insert(game_id.as_str(), value)
                .map_err(|e| self.storage(e))?;
        }
        Ok(())
    }

    fn write_txn(&self, data: &SnapshotData, full: bool) -> Result<(), SnapshotError> {
        let txn = self.db.begin_write().map_err(|e| self.storage(e))?;
        if full {
            txn.delete_table(GAMES).map_err(|e| self.storage(e))?;
            txn.delete_table(GAME_ENDS).map_err(|e| self.storage(e))?;
            txn.delete_table(ON_BOARD_SINCE)
                .map_err(|e| self.storage(e))?;
        }
        {
            let mut table = txn.open_table(GAMES).map_err(|e| self.storage(e))?;
            let mut ends = txn.open_table(GAME_ENDS).map_err(|e| self.storage(e))?;
            let mut on_board = txn
                .open_table(ON_BOARD_SINCE)
                .map_err(|e| self.storage(e))?;
            for game in &data.games {
                if game.on_board_since != game.first_stream_seq {
                    on_board
                        .insert(game.game_id.as_str(), game.on_board_since)
                        .map_err(|e| self.storage(e))?;
                } else {
                    on_board
                        .remove(game.game_id.as_str())
                        .map_err(|e| self.storage(e))?;
                }
                table
                    .insert(game.game_id.as_str(), encode_game(game).as_slice())
                    .map_err(|e| self.storage(e))?;
                ends.insert(game.game_id.as_str(), game.last_stream_seq)
                    .map_err(|e| self.storage(e))?;
            }
            let mut meta = txn.open_table(META).map_err(|e| self.storage(e))?;
            meta.insert(FOLDED_SEQ, data.folded_seq.to_le_bytes().as_slice())
                .map_err(|e| self.storage(e))?;
            meta.insert(LOG_CREATED, self.log_created.as_bytes())
                .map_err(|e| self.storage(e))?;
        }
        txn.delete_table(BEHIND).map_err(|e| self.storage(e))?;
        self.rewrite(
            &txn,
            BROKEN,
            data.broken.iter().map(|(id, why)| (id, why.as_str())),
        )?;
        if let Some(live) = &data.live_on_board {
            self.rewrite(
                &txn,
                LIVE_ON_BOARD,
                live.iter()
                    .map(|(board, game, since)| (board, (game.as_str(), *since))),
            )?;
        }
        txn.commit().map_err(|e| self.storage(e))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(last_stream_seq: u64) -> SnapshotData {
        SnapshotData {
            folded_seq: 9,
            games: vec![SnapshotGame {
                game_id: "g1".into(),
                first_stream_seq: 2,
                on_board_since: 5,
                records: vec![b"one".to_vec(), b"two".to_vec()],
                last_stream_seq,
            }],
            live_on_board: Some(vec![("b1".into(), "g1".into(), 5)]),
            broken: vec![("g2".into(), "forked".into())],
        }
    }

    #[test]
    fn each_game_s_end_and_the_broken_games_are_kept_and_an_older_snapshot_still_reads()
    -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let snapshots = Snapshots::open(&dir.path().join("snapshot.redb"), "1700000000")?;
        snapshots.write(&data(7), true)?;
        let read = snapshots.read()?.expect("written");
        assert_eq!(read.folded_seq, 9);
        let game = &read.games[0];
        assert_eq!(
            (
                game.first_stream_seq,
                game.on_board_since,
                game.last_stream_seq
            ),
            (2, 5, 7)
        );
        assert_eq!(game.records, [b"one".to_vec(), b"two".to_vec()]);
        assert_eq!(read.broken, [("g2".to_owned(), "forked".to_owned())]);
        assert_eq!(
            read.live_on_board,
            Some(vec![("b1".to_owned(), "g1".to_owned(), 5)])
        );
        // Rewritten whole: a game mended since is no longer listed, a board left no longer.
        snapshots.write(
            &SnapshotData {
                games: Vec::new(),
                broken: Vec::new(),
                live_on_board: Some(Vec::new()),
                ..data(7)
            },
            false,
        )?;
        let read = snapshots.read()?.expect("written");
        assert_eq!((read.games.len(), read.broken.len()), (1, 0));
        assert_eq!(read.live_on_board, Some(Vec::new()));
        // Written before the games' ends, boards and the broken games were kept: the ends are not
        // known (0), a game is on its board since its first record, which game is live on each
        // board is worked out again, nothing else is lost.
        let txn = snapshots.db.begin_write()?;
        txn.delete_table(GAME_ENDS)?;
        txn.delete_table(ON_BOARD_SINCE)?;
        txn.delete_table(LIVE_ON_BOARD)?;
        txn.delete_table(BROKEN)?;
        txn.commit()?;
        let read = snapshots.read()?.expect("still there");
        let game = &read.games[0];
        assert_eq!(
            (
                game.last_stream_seq,
                game.on_board_since,
                game.records.len()
            ),
            (0, 2, 2)
        );
        assert_eq!(read.live_on_board, None);
        Ok(())
    }

    #[test]
    fn a_snapshot_of_another_game_log_is_cleared_not_restored() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("snapshot.redb");
        {
            let last_event = Snapshots::open(&path, "1700000000")?;
            last_event.write(&data(7), true)?;
            assert!(last_event.read()?.is_some());
        }
        // This event's log (a new NATS store): nothing of the last event's games comes back,
        // now or after this event's first write.
        let this_event = Snapshots::open(&path, "1800000000")?;
        assert!(this_event.read()?.is_none());
        this_event.write(
            &SnapshotData {
                folded_seq: 3,
                games: Vec::new(),
                live_on_board: Some(Vec::new()),
                broken: Vec::new(),
            },
            false,
        )?;
        let read = this_event.read()?.expect("this event's");
        assert_eq!((read.folded_seq, read.games.len()), (3, 0));
        drop(this_event);
        // A snapshot written before the log was named is read as before.
        let older = Snapshots::open(&path, "1900000000")?;
        let txn = older.db.begin_write()?;
        txn.open_table(META)?.remove(LOG_CREATED)?;
        txn.commit()?;
        assert!(older.read()?.is_some());
        Ok(())
    }
}

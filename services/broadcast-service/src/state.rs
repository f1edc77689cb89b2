//! The projection on disk (redb): each game's feed state, each round's release point and the
//! game log position they were built from, written in one transaction.
//!
//! On start the service resumes from here and reads only the log after that position. A game
//! state this version cannot read is dropped and the log read again from its start; the rounds'
//! release points live in their own table and are kept, so that a restart never shows less than
//! was shown before.

use std::path::{Path, PathBuf};

use boardcast_feeds::{Dirty, GameSnapshot, RoundKey, RoundSnapshot};
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};

const GAMES: TableDefinition<&str, &[u8]> = TableDefinition::new("games");
const ROUNDS: TableDefinition<&str, &[u8]> = TableDefinition::new("rounds");
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
const STREAM_SEQ: &str = "stream_seq";
/// Which game log the state was built from: the stream's creation time. A state file from
/// another log (NATS set up afresh) is started over rather than resumed at a wrong position.
const LOG: TableDefinition<&str, &str> = TableDefinition::new("log");
const LOG_CREATED: &str = "created";
/// How many times the state was opened before: each run's versions lie past the earlier runs'
/// (`Feeds::restore`). Kept when the state is started afresh.
const RUNS: TableDefinition<&str, u64> = TableDefinition::new("runs");
const RUNS_KEY: &str = "runs";

#[derive(Debug, thiserror::Error)]
#[error("projection state {path}: {reason}")]
pub struct StateError {
    path: PathBuf,
    reason: String,
}

pub struct State {
    path: PathBuf,
    /// The open file; `None` after a write failed. redb refuses every write after an I/O error
    /// (a full disk, say) until the file is opened again, which the next write does.
    db: std::sync::Mutex<Option<Database>>,
    /// This run's number: how many times the state was opened before.
    run: u64,
}

/// What a previous run left.
pub struct Stored {
    /// Every record of the game log up to here is in `games`.
    pub stream_seq: u64,
    pub games: Vec<(String, GameSnapshot)>,
    pub rounds: Vec<(RoundKey, RoundSnapshot)>,
}

fn round_name(key: &RoundKey) -> String {
    format!("{}/{}", key.tournament_id, key.round)
}

impl State {
    /// Opens (or creates) the state of the game log created at `log_created`.
    pub fn open(path: &Path, log_created: &str) -> Result<State, StateError> {
        let fail = |reason: String| StateError {
            path: path.to_owned(),
            reason,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| fail(e.to_string()))?;
        }
        let db = Database::create(path).map_err(|e| fail(e.to_string()))?;
        let mut state = State {
            path: path.to_owned(),
            db: std::sync::Mutex::new(None),
            run: 0,
        };
        let txn = db.begin_write().map_err(|e| state.fail(e))?;
        {
            let mut log = txn.open_table(LOG).map_err(|e| state.fail(e))?;
            let stored = log
                .get(LOG_CREATED)
                .map_err(|e| state.fail(e))?
                .map(|v| v.value().to_owned());
            if stored.as_deref().is_some_and(|s| s != log_created) {
                tracing::warn!(
                    path = %path.display(),
                    "the stored feeds were built from another game log; starting afresh"
                );
                for table in [GAMES, ROUNDS] {
                    txn.delete_table(table).map_err(|e| state.fail(e))?;
                }
                txn.delete_table(META).map_err(|e| state.fail(e))?;
            }
            log.insert(LOG_CREATED, log_created)
                .map_err(|e| state.fail(e))?;
        }
        {
            let mut runs = txn.open_table(RUNS).map_err(|e| state.fail(e))?;
            state.run = runs
                .get(RUNS_KEY)
                .map_err(|e| state.fail(e))?
                .map_or(0, |v| v.value());
            let next = state
                .run
                .checked_add(1)
                .ok_or_else(|| state.fail("too many runs"))?;
            runs.insert(RUNS_KEY, next).map_err(|e| state.fail(e))?;
        }
        txn.open_table(GAMES).map_err(|e| state.fail(e))?;
        txn.open_table(ROUNDS).map_err(|e| state.fail(e))?;
        txn.open_table(META).map_err(|e| state.fail(e))?;
        txn.commit().map_err(|e| state.fail(e))?;
        state.db = std::sync::Mutex::new(Some(db));
        Ok(state)
    }

    /// This run's number, counted from 0 over every opening of the file.
    pub fn run(&self) -> u64 {
        self.run
    }

    fn fail(&self, reason: impl ToString) -> StateError {
        StateError {
            path: self.path.clone(),
            reason: reason.to_string(),
        }
    }

    /// Reads what was stored. Games this version cannot read are left out and the log position
    /// reset to its start, so that they are built again from the log.
    pub fn read(&self) -> Result<Stored, StateError> {
        let db = self.db.lock().unwrap_or_else(|e| e.into_inner());
        let txn = db
            .as_ref()
            .ok_or_else(|| self.fail("the state file is not open"))?
            .begin_read()
            .map_err(|e| self.fail(e))?;
        let meta = txn.open_table(META).map_err(|e| self.fail(e))?;
        let mut stream_seq = meta
            .get(STREAM_SEQ)
            .map_err(|e| self.fail(e))?
            .map_or(0, |v| v.value());
        let mut games = Vec::new();
        let table = txn.open_table(GAMES).map_err(|e| self.fail(e))?;
        for row in table.iter().map_err(|e| self.fail(e))? {
            let (id, bytes) = row.map_err(|e| self.fail(e))?;
            match serde_json::from_slice::<GameSnapshot>(bytes.value()) {
                Ok(snapshot) => games.push((id.value().to_owned(), snapshot)),
                Err(e) => {
                    tracing::warn!(
                        game = id.value(),
                        "the stored feed state cannot be read ({e}); reading the game log again"
                    );
                    stream_seq = 0;
                }
            }
        }
        if stream_seq == 0 {
            games.clear();
        }
        let mut rounds = Vec::new();
        let table = txn.open_table(ROUNDS).map_err(|e| self.fail(e))?;
        for row in table.iter().map_err(|e| self.fail(e))? {
            let (_, bytes) = row.map_err(|e| self.fail(e))?;
            let (key, snapshot): (RoundKey, RoundSnapshot) =
                serde_json::from_slice(bytes.value()).map_err(|e| self.fail(e))?;
            rounds.push((key, snapshot));
        }
        Ok(Stored {
            stream_seq,
            games,
            rounds,
        })
    }

    /// Stores what changed and the log position it was built from, in one transaction. After
    /// a failure the file is closed, and opened again by the next write.
    pub fn write(&self, stream_seq: u64, dirty: &Dirty) -> Result<(), StateError> {
        let mut db = self.db.lock().unwrap_or_else(|e| e.into_inner());
        if db.is_none() {
            *db = Some(Database::create(&self.path).map_err(|e| self.fail(e))?);
        }
        let Some(open) = db.as_ref() else {
            return Err(self.fail("the state file is not open"));
        };
        let written = self.write_in(open, stream_seq, dirty);
        if written.is_err() {
            *db = None;
        }
        written
    }

    fn write_in(&self, db: &Database, stream_seq: u64, dirty: &Dirty) -> Result<(), StateError> {
        let txn = db.begin_write().map_err(|e| self.fail(e))?;
        {
            let mut games = txn.open_table(GAMES).map_err(|e| self.fail(e))?;
            for (id, snapshot) in &dirty.games {
                let bytes = serde_json::to_vec(snapshot).map_err(|e| self.fail(e))?;
                games
                    .insert(id.as_str(), bytes.as_slice())
                    .map_err(|e| self.fail(e))?;
            }
            let mut rounds = txn.open_table(ROUNDS).map_err(|e| self.fail(e))?;
            for (key, snapshot) in &dirty.rounds {
                let bytes = serde_json::to_vec(&(key, snapshot)).map_err(|e| self.fail(e))?;
                rounds
                    .insert(round_name(key).as_str(), bytes.as_slice())
                    .map_err(|e| self.fail(e))?;
            }
            let mut meta = txn.open_table(META).map_err(|e| self.fail(e))?;
            meta.insert(STREAM_SEQ, stream_seq)
                .map_err(|e| self.fail(e))?;
        }
        txn.commit().map_err(|e| self.fail(e))
    }
}

//! The games this instance knows, folded from the game log, and appending to the log.
//!
//! # Why appends are serialised on the whole stream
//!
//! Several instances of the game service may run at once. Each keeps every game in memory and
//! remembers `folded_seq`: the stream sequence of `BOARDCAST_GAMES` up to which it has folded
//! *every* record, of every game. An append is published with `Nats-Expected-Last-Sequence =
//! folded_seq` (stream-level), so it is stored only if nobody has written anything since this
//! instance last looked: the decision it carries was made on the current state of the game.
//!
//! The per-subject check (`Nats-Expected-Last-Subject-Sequence`) would allow appends to different
//! games in parallel, but nats-server 2.9.10 does not serialise it on replicated (R3) streams:
//! concurrent writers expecting the same subject sequence are each accepted, which forks a game's
//! log (nats-server #4320, fixed in 2.9.21). The stream-level check is serialised correctly on R3
//! there, so it is what this store relies on. The price is that all games' appends are one
//! sequence: a write by another instance to *any* game makes the next append conflict. On a
//! conflict the store catches up (folds every record it has not seen, from `folded_seq + 1`) and
//! then retries: with the same records if the game itself did not change, otherwise by deciding
//! again on the caught-up state. Appends are a few per second per board, so one sequence is
//! plenty; should it not be, the games stream can be sharded by game into several streams, each
//! with its own `folded_seq`.
//!
//! A conflict is never resolved by writing anyway, so a game's log never forks. Every record is
//! also published with `Nats-Msg-Id = <game>:<game_seq>`: a retry after an unknown outcome (a
//! timeout) whose first attempt was stored is then deduplicated by JetStream; a duplicate
//! acknowledgement is treated as a conflict (catch up and look), because the stored record with
//! that id may be another instance's.

use std::collections::{HashMap, HashSet};

use async_nats::jetstream::{
    self,
    consumer::{DeliverPolicy, pull::OrderedConfig},
    context::PublishErrorKind,
    message::PublishMessage,
    stream::Stream,
};
use boardcast_game::signing::{PublicKey, RecordSigner, TrustedKeys};
use boardcast_game::{Game, NewEvent, events::GameEvent, events::GameEventRecord};
use boardcast_kit::nats::{
    GAMES_STREAM, GAMES_SUBJECTS, game_message_id, game_subject, next_message,
};
use futures::StreamExt;
use prost::Message as _;

use crate::snapshot::{SnapshotData, SnapshotGame};

/// How many times one decision is retried after conflicts before giving up (the observation is
/// then delivered again later).
const MAX_ATTEMPTS: usize = 20;

/// Catch-ups up to this many records read message by message; longer ones use a consumer.
const DIRECT_CATCH_UP: u64 = 64;

pub(crate) struct Entry {
    pub(crate) game: Game,
    /// Stream sequence of the game's first record: restoring games in this order restores which
    /// game is live on each board.
    pub(crate) first_stream_seq: u64,
    /// The game's records as stored, for snapshots and for completing an interrupted decision.
    pub(crate) records: Vec<Vec<u8>>,
}

#[derive(Default)]
pub(crate) struct Games {
    pub(crate) by_id: HashMap<String, Entry>,
    /// The game live on each physical board: the latest one started there.
    live_on_board: HashMap<String, String>,
    /// Every record of the stream up to this sequence has been folded.
    pub(crate) folded_seq: u64,
    /// The game whose record is at `folded_seq` (checked against the log when a snapshot is used).
    pub(crate) last_game: Option<String>,
    /// Games changed since the last snapshot.
    dirty: HashSet<String>,
    /// The keys whose signatures are accepted on records read from the log.
    trusted: TrustedKeys,
}

impl Games {
    pub(crate) fn insert(&mut self, entry: Entry) {
        let game_id = entry.game.game_id().to_owned();
        self.live_on_board
            .insert(entry.game.board_id().to_owned(), game_id.clone());
        self.by_id.insert(game_id, entry);
    }

    /// Folds the record stored at `stream_seq`. A record that does not continue its game's chain
    /// (which the append protocol never writes) is reported and skipped, so one bad record does
    /// not stop every other game.
    fn fold(&mut self, payload: &[u8], stream_seq: u64) {
        if stream_seq <= self.folded_seq {
            return;
        }
        self.folded_seq = stream_seq;
        let folded = GameEventRecord::decode(payload)
            .map_err(|e| e.to_string())
            .and_then(|record| {
                let event = Game::open_record(&record).map_err(|e| e.to_string())?;
                match self.by_id.get_mut(&event.game_id) {
                    Some(entry) => {
                        entry
                            .game
                            .apply_trusted(&record, &self.trusted)
                            .map_err(|e| e.to_string())?;
                        entry.records.push(payload.to_vec());
                    }
                    None => {
                        let game = Game::from_first_trusted(&record, &self.trusted)
                            .map_err(|e| e.to_string())?;
                        self.insert(Entry {
                            game,
                            first_stream_seq: stream_seq,
                            records: vec![payload.to_vec()],
                        });
                    }
                }
                Ok(event.game_id)
            });
        match folded {
            Ok(game_id) => {
                self.dirty.insert(game_id.clone());
                self.last_game = Some(game_id);
            }
            Err(e) => {
                tracing::error!(
                    stream_seq,
                    "skipping a game log record that cannot be folded: {e}"
                );
                self.last_game = None;
            }
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AppendError {
    #[error("the log of game {0} kept changing under this decision; retry")]
    Conflict(String),
    #[error("appending to the log of game {game_id}: {reason}")]
    Failed { game_id: String, reason: String },
}

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("reading the game log: {0}")]
    Log(String),
}

enum PublishOutcome {
    Stored(u64),
    /// Someone else wrote first (or the message id was already used): catch up and look again.
    Conflict,
}

pub struct Store {
    js: jetstream::Context,
    stream: Stream,
    /// The games as folded so far. Locked only for moments and never across a NATS call, so a
    /// read (GetGame, a claim, a list) never waits for an append in progress.
    games: std::sync::RwLock<Games>,
    /// One append or catch-up at a time on this instance (and the gRPC decisions, made in it
    /// whole); held across NATS calls. Only its holder changes `games`. Decisions on
    /// observations are made outside it, and their appends check in it that the game still
    /// ends where they continue it (`Store::append`).
    writer: tokio::sync::Mutex<()>,
    /// Since when the writer has been busy: a write that takes long means the service is stuck.
    busy_since: std::sync::Mutex<Option<std::time::Instant>>,
    /// Signs every record this instance appends.
    signer: RecordSigner,
}

/// The writer's turn; notes how long it is held.
struct Turn<'a> {
    _writer: tokio::sync::MutexGuard<'a, ()>,
    busy_since: &'a std::sync::Mutex<Option<std::time::Instant>>,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        if let Ok(mut since) = self.busy_since.lock() {
            *since = None;
        }
    }
}

fn failed(game_id: &str, reason: impl ToString) -> AppendError {
    AppendError::Failed {
        game_id: game_id.to_owned(),
        reason: reason.to_string(),
    }
}

impl Store {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Games> {
        self.games
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Games> {
        self.games
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    async fn turn(&self) -> Turn<'_> {
        let writer = self.writer.lock().await;
        if let Ok(mut since) = self.busy_since.lock() {
            *since = Some(std::time::Instant::now());
        }
        Turn {
            _writer: writer,
            busy_since: &self.busy_since,
        }
    }

    /// How long the current decision, append or catch-up has been going on, if one is.
    pub fn busy_for(&self) -> Option<std::time::Duration> {
        self.busy_since
            .lock()
            .ok()
            .and_then(|since| since.map(|at| at.elapsed()))
    }

    /// Rebuilds every game: from the snapshot if there is a usable one, then from the log after
    /// the snapshot's stream sequence (the whole log without one).
    /// Also says whether the snapshot was used.
    pub async fn load(
        js: jetstream::Context,
        snapshot: Option<SnapshotData>,
        signer: RecordSigner,
        trusted: TrustedKeys,
    ) -> anyhow::Result<(Store, bool)> {
        let stream = js
            .get_stream(GAMES_STREAM)
            .await
            .map_err(|e| anyhow::anyhow!("opening the game log stream: {e}"))?;
        let mut games = Games {
            trusted: trusted.clone(),
            ..Games::default()
        };
        let mut used = false;
        if let Some(snapshot) = snapshot {
            match restore(&stream, snapshot, trusted).await {
                Ok(restored) => {
                    games = restored;
                    used = true;
                }
                Err(e) => tracing::warn!("not using the snapshot, rebuilding from the log: {e}"),
            }
        }
        let store = Store {
            js,
            stream,
            games: std::sync::RwLock::new(games),
            writer: tokio::sync::Mutex::new(()),
            busy_since: std::sync::Mutex::new(None),
            signer,
        };
        store.catch_up().await?;
        Ok((store, used))
    }

    /// The key this instance signs with.
    pub fn public_key(&self) -> &PublicKey {
        self.signer.public_key()
    }

    /// The keys whose signatures are accepted on the log's records.
    pub fn trusted_keys(&self) -> TrustedKeys {
        self.read().trusted.clone()
    }

    pub async fn game_count(&self) -> usize {
        self.read().by_id.len()
    }

    pub async fn folded_seq(&self) -> u64 {
        self.read().folded_seq
    }

    pub async fn with_game<T>(&self, game_id: &str, f: impl FnOnce(&Game) -> T) -> Option<T> {
        self.read().by_id.get(game_id).map(|e| f(&e.game))
    }

    /// Runs `f` on the game live on `board_id`.
    pub async fn with_board<T>(&self, board_id: &str, f: impl FnOnce(&Game) -> T) -> Option<T> {
        let games = self.read();
        let id = games.live_on_board.get(board_id)?;
        games.by_id.get(id).map(|e| f(&e.game))
    }

    /// Runs `f` on the game live on each board.
    pub async fn live_games<T>(&self, mut f: impl FnMut(&Game) -> T) -> Vec<T> {
        let games = self.read();
        games
            .live_on_board
            .values()
            .filter_map(|id| games.by_id.get(id))
            .map(|e| f(&e.game))
            .collect()
    }

    /// Where the log of a round's games starts: the first record of the earliest of them this
    /// instance knows, or else the first record it has not folded (a game created since).
    pub async fn round_start_seq(&self, tournament_id: &str, round: u32) -> u64 {
        let games = self.read();
        games
            .by_id
            .values()
            .filter(|e| {
                let info = e.game.info();
                info.tournament_id == tournament_id && info.round == round
            })
            .map(|e| e.first_stream_seq)
            .min()
            .unwrap_or(games.folded_seq + 1)
    }

    pub async fn all_games<T>(&self, mut f: impl FnMut(&Game) -> Option<T>) -> Vec<T> {
        let games = self.read();
        games.by_id.values().filter_map(|e| f(&e.game)).collect()
    }

    /// Folds what other instances have appended since this one last looked (asked often, and
    /// usually nothing: that is found with one message lookup).
    pub async fn refresh(&self) -> Result<(), ReadError> {
        let folded_seq = self.read().folded_seq;
        self.fold_news_after(folded_seq, GAMES_SUBJECTS)
            .await
            .map(|_| ())
    }

    /// Runs `decide` on the game live on `board_id` and appends what it returns, on the current
    /// state of the log: a decision that produced nothing is made again after catching up if the
    /// game's log had moved on since the state it was made on (one that found no game, if the
    /// log had), and an append that conflicts is decided again after catching up. `decide` may
    /// therefore run more than once.
    ///
    /// Decisions on different boards run concurrently: only the append takes the writer's turn,
    /// and it first checks that the game still ends where the decision continues it.
    pub async fn decide_on_board<T>(
        &self,
        board_id: &str,
        recorded_unix_ms: i64,
        decide: impl Fn(&Game) -> T,
        events_of: impl Fn(&T) -> Vec<NewEvent>,
    ) -> Result<Option<T>, AppendError> {
        let mut caught_up = false;
        for _ in 0..MAX_ATTEMPTS {
            // Decided on what is folded, and where the log stood for it.
            let (decided, decided_on_seq) = {
                let games = self.read();
                let decided = games
                    .live_on_board
                    .get(board_id)
                    .and_then(|id| games.by_id.get(id))
                    .map(|entry| {
                        let game_id = entry.game.game_id().to_owned();
                        let decision = decide(&entry.game);
                        let new_events = events_of(&decision);
                        let records = (!new_events.is_empty()).then(|| {
                            Game::record_signed(
                                Some(&entry.game),
                                &game_id,
                                new_events,
                                recorded_unix_ms,
                                &self.signer,
                            )
                        });
                        (game_id, decision, records)
                    });
                (decided, games.folded_seq)
            };
            let Some((game_id, decision, records)) = decided else {
                if caught_up
                    || !self
                        .fold_news_after(decided_on_seq, GAMES_SUBJECTS)
                        .await
                        .map_err(|e| failed(board_id, e))?
                {
                    return Ok(None);
                }
                caught_up = true;
                continue;
            };
            let Some(records) = records else {
                // Nothing to append: the decision stands unless the game itself moved on; what
                // other games did cannot change it. (A game set up on the board in its place
                // does not end this one: the observation is then decided again for the new
                // game with the next one of the board, see `ingest`.)
                if !caught_up
                    && self
                        .fold_news_after(decided_on_seq, &game_subject(&game_id))
                        .await
                        .map_err(|e| failed(&game_id, e))?
                {
                    caught_up = true;
                    continue;
                }
                return Ok(Some(decision));
            };
            let _turn = self.turn().await;
            // Decided outside the turn: the game may have been replaced on the board meanwhile.
            let still_live = self.read().live_on_board.get(board_id) == Some(&game_id);
            if still_live && self.append(&game_id, records).await? {
                return Ok(Some(decision));
            }
            // Decided again on the log as it is now.
            self.catch_up().await.map_err(|e| failed(&game_id, e))?;
            caught_up = true;
        }
        Err(AppendError::Conflict(board_id.to_owned()))
    }

    /// Completes a decision that was interrupted after some of its records were appended (a
    /// crash between two appends): the game's last recorded observation was `device_seq`; decide
    /// it again on the state before it, and append the records the first attempt did not.
    /// Returns how many records were added.
    pub async fn complete_last_decision(
        &self,
        board_id: &str,
        recorded_unix_ms: i64,
        is_decision_start: impl Fn(&GameEvent) -> bool,
        decide: impl Fn(&Game) -> Vec<NewEvent>,
    ) -> Result<usize, AppendError> {
        let _turn = self.turn().await;
        for _ in 0..MAX_ATTEMPTS {
            // What the interrupted decision still lacks, decided under the read lock (no NATS).
            let completion = {
                let games = self.read();
                let Some(entry) = games
                    .live_on_board
                    .get(board_id)
                    .and_then(|id| games.by_id.get(id))
                else {
                    return Ok(0);
                };
                let game_id = entry.game.game_id().to_owned();
                let events: Vec<GameEvent> = entry
                    .records
                    .iter()
                    .filter_map(|bytes| GameEventRecord::decode(bytes.as_slice()).ok())
                    .filter_map(|record| GameEvent::decode(record.event.as_slice()).ok())
                    .collect();
                let Some(start) = events.iter().rposition(&is_decision_start) else {
                    return Ok(0);
                };
                if start == 0 {
                    return Ok(0);
                }
                let before = refold(&entry.records[..start]).map_err(|e| failed(&game_id, e))?;
                let expected = decide(&before);
                let written = &events[start..];
                let same = |new: &NewEvent, old: &GameEvent| {
                    old.kind.as_ref() == Some(&new.kind)
                        && old.provenance.as_ref() == Some(&new.provenance)
                };
                if expected.len() <= written.len()
                    || !expected
                        .iter()
                        .zip(written)
                        .all(|(new, old)| same(new, old))
                {
                    return Ok(0);
                }
                let missing: Vec<NewEvent> = expected[written.len()..].to_vec();
                let count = missing.len();
                let records = Game::record_signed(
                    Some(&entry.game),
                    &game_id,
                    missing,
                    recorded_unix_ms,
                    &self.signer,
                );
                (game_id, records, count)
            };
            let (game_id, records, count) = completion;
            if self.append(&game_id, records).await? {
                tracing::warn!(%game_id, records = count, "completed a decision interrupted between appends");
                return Ok(count);
            }
        }
        Err(AppendError::Conflict(board_id.to_owned()))
    }

    /// Runs `decide` on the current state of game `game_id` (caught up with the log first) and
    /// appends what it returns; on a conflicting append it catches up and decides again, so
    /// `decide` may run more than once. `None` when there is no such game; `Some(Err)` when
    /// `decide` refused.
    pub async fn decide_on_game<E>(
        &self,
        game_id: &str,
        recorded_unix_ms: i64,
        decide: impl Fn(&Game) -> Result<Vec<NewEvent>, E>,
    ) -> Result<Option<Result<(), E>>, AppendError> {
        let _turn = self.turn().await;
        self.catch_up().await.map_err(|e| failed(game_id, e))?;
        for _ in 0..MAX_ATTEMPTS {
            let records = {
                let games = self.read();
                let Some(entry) = games.by_id.get(game_id) else {
                    return Ok(None);
                };
                let new_events = match decide(&entry.game) {
                    Ok(events) => events,
                    Err(refused) => return Ok(Some(Err(refused))),
                };
                if new_events.is_empty() {
                    return Ok(Some(Ok(())));
                }
                Game::record_signed(
                    Some(&entry.game),
                    game_id,
                    new_events,
                    recorded_unix_ms,
                    &self.signer,
                )
            };
            if self.append(game_id, records).await? {
                return Ok(Some(Ok(())));
            }
        }
        Err(AppendError::Conflict(game_id.to_owned()))
    }

    /// Appends the first record of a new game. Returns false when the game already exists.
    pub async fn create(
        &self,
        game_id: &str,
        first: NewEvent,
        recorded_unix_ms: i64,
    ) -> Result<bool, AppendError> {
        let _turn = self.turn().await;
        let records =
            Game::record_signed(None, game_id, vec![first], recorded_unix_ms, &self.signer);
        for attempt in 0..MAX_ATTEMPTS {
            if attempt > 0 {
                self.catch_up().await.map_err(|e| failed(game_id, e))?;
            }
            if self.read().by_id.contains_key(game_id) {
                return Ok(false);
            }
            if self.append(game_id, records.clone()).await? {
                return Ok(true);
            }
        }
        Err(AppendError::Conflict(game_id.to_owned()))
    }

    /// Appends `records`, which continue `game_id`'s chain, each expecting the stream to end at
    /// `folded_seq`. Returns false when the game changed under the decision (decide again);
    /// conflicts caused by other games only are retried here with the same records.
    async fn append(
        &self,
        game_id: &str,
        records: Vec<GameEventRecord>,
    ) -> Result<bool, AppendError> {
        // Decided outside the turn (see `decide_on_board`): still valid only if the game has not
        // changed since, here or elsewhere (then the publish below conflicts).
        if let Some(first) = records.first() {
            let event = Game::open_record(first).map_err(|e| failed(game_id, e))?;
            if !self.continues(game_id, &first.prev_hash, event.game_seq) {
                return Ok(false);
            }
        }
        let mut pending = records.into_iter().peekable();
        let mut conflicts = 0;
        // The records stored so far, folded together so that a reader sees a decision whole.
        let mut stored: Vec<(Vec<u8>, u64)> = Vec::new();
        let mut expected_last = self.read().folded_seq;
        while let Some(record) = pending.peek() {
            let event = Game::open_record(record).map_err(|e| failed(game_id, e))?;
            let expected_prev = record.prev_hash.clone();
            let payload = record.encode_to_vec();
            let outcome = self
                .publish(
                    game_id,
                    event.game_seq,
                    &record.hash,
                    &payload,
                    expected_last,
                )
                .await;
            match outcome {
                Ok(PublishOutcome::Stored(seq)) => {
                    stored.push((payload, seq));
                    expected_last = seq;
                    pending.next();
                }
                Ok(PublishOutcome::Conflict) => {
                    self.fold_stored(&mut stored);
                    conflicts += 1;
                    if conflicts > MAX_ATTEMPTS {
                        return Err(AppendError::Conflict(game_id.to_owned()));
                    }
                    self.catch_up().await.map_err(|e| failed(game_id, e))?;
                    expected_last = self.read().folded_seq;
                    // The rest of the records are still valid if the game's chain still ends
                    // where they continue it (only other games were written meanwhile).
                    if !self.continues(game_id, &expected_prev, event.game_seq) {
                        return Ok(false);
                    }
                }
                Err(e) => {
                    self.fold_stored(&mut stored);
                    return Err(e);
                }
            }
        }
        self.fold_stored(&mut stored);
        Ok(true)
    }

    /// Whether a record with `prev_hash` and `game_seq` continues game `game_id` as folded.
    fn continues(&self, game_id: &str, prev_hash: &[u8], game_seq: u64) -> bool {
        match self.read().by_id.get(game_id) {
            Some(entry) => {
                entry.game.chain_head().as_slice() == prev_hash
                    && entry.game.last_game_seq().checked_add(1) == Some(game_seq)
            }
            None => game_seq == 1,
        }
    }

    /// Folds the records an append stored, under one write lock.
    fn fold_stored(&self, stored: &mut Vec<(Vec<u8>, u64)>) {
        if stored.is_empty() {
            return;
        }
        let mut games = self.write();
        for (payload, seq) in stored.drain(..) {
            games.fold(&payload, seq);
        }
    }

    /// Publishes one record, expecting the whole stream to end at `expected_last`.
    async fn publish(
        &self,
        game_id: &str,
        game_seq: u64,
        hash: &[u8],
        payload: &[u8],
        expected_last: u64,
    ) -> Result<PublishOutcome, AppendError> {
        let message = PublishMessage::build()
            .payload(payload.to_vec().into())
            .message_id(game_message_id(game_id, game_seq, hash))
            .expected_last_sequence(expected_last);
        let ack = self
            .js
            .send_publish(game_subject(game_id), message)
            .await
            .map_err(|e| failed(game_id, e))?
            .await;
        match ack {
            Ok(ack) if ack.duplicate => Ok(PublishOutcome::Conflict),
            Ok(ack) => Ok(PublishOutcome::Stored(ack.sequence)),
            Err(e) if e.kind() == PublishErrorKind::WrongLastSequence => {
                Ok(PublishOutcome::Conflict)
            }
            // Unknown outcome: the record may or may not be stored. The caller does not ack the
            // observation; the next attempt catches up first and so sees it if it was stored.
            Err(e) => Err(failed(game_id, e)),
        }
    }

    /// Whether the log holds anything on `subject` after `seq`; if so, catches up (in the
    /// writer's turn). Taken outside the turn, so that decisions that produce nothing do not
    /// wait for appends; a catch-up another decision made meanwhile is not made again.
    async fn fold_news_after(&self, seq: u64, subject: &str) -> Result<bool, ReadError> {
        let news = next_message(&self.stream, seq + 1, subject)
            .await
            .map_err(|e| ReadError::Log(e.to_string()))?
            .map(|m| m.sequence);
        let Some(news) = news else {
            return Ok(false);
        };
        let _turn = self.turn().await;
        if self.read().folded_seq < news {
            self.catch_up().await?;
        }
        Ok(true)
    }

    /// Folds every record after `folded_seq` up to the stream's current last sequence.
    /// Called by the writer's turn holder only (and at load).
    async fn catch_up(&self) -> Result<(), ReadError> {
        let info = self
            .stream
            .get_info()
            .await
            .map_err(|e| ReadError::Log(e.to_string()))?;
        let last = info.state.last_sequence;
        let folded_seq = self.read().folded_seq;
        if last <= folded_seq {
            return Ok(());
        }
        if last - folded_seq <= DIRECT_CATCH_UP {
            // Read first and folded together: readers see other instances' decisions whole.
            let mut read = Vec::new();
            for seq in folded_seq + 1..=last {
                match self.stream.get_raw_message(seq).await {
                    Ok(message) => read.push((Some(message.payload), seq)),
                    Err(e)
                        if e.kind() == jetstream::stream::RawMessageErrorKind::NoMessageFound =>
                    {
                        // Removed from the stream (by an operator): nothing to fold.
                        read.push((None, seq));
                    }
                    Err(e) => return Err(ReadError::Log(format!("stream sequence {seq}: {e}"))),
                }
            }
            let mut games = self.write();
            for (payload, seq) in read {
                match payload {
                    Some(payload) => games.fold(&payload, seq),
                    None => games.folded_seq = games.folded_seq.max(seq),
                }
            }
            return Ok(());
        }
        let consumer = self
            .stream
            .create_consumer(OrderedConfig {
                filter_subject: GAMES_SUBJECTS.to_owned(),
                deliver_policy: DeliverPolicy::ByStartSequence {
                    start_sequence: folded_seq + 1,
                },
                ..Default::default()
            })
            .await
            .map_err(|e| ReadError::Log(e.to_string()))?;
        let mut messages = consumer
            .messages()
            .await
            .map_err(|e| ReadError::Log(e.to_string()))?;
        while self.read().folded_seq < last {
            let Some(message) = messages.next().await else {
                return Err(ReadError::Log("the log ended early".into()));
            };
            let message = message.map_err(|e| ReadError::Log(e.to_string()))?;
            let info = message.info().map_err(|e| ReadError::Log(e.to_string()))?;
            let (seq, pending) = (info.stream_sequence, info.pending);
            let mut games = self.write();
            games.fold(&message.payload, seq);
            if pending == 0 {
                // Nothing after it, though the stream's last sequence is further: the records
                // up to there were removed (by an operator), so there is nothing to fold.
                games.folded_seq = games.folded_seq.max(last);
            }
        }
        Ok(())
    }

    /// What a snapshot needs: the games changed since the last one (all of them when `all`), and
    /// the log position they are folded up to.
    pub(crate) async fn take_changes(&self, all: bool) -> Option<SnapshotData> {
        let mut games = self.write();
        if games.dirty.is_empty() && !all {
            return None;
        }
        let dirty = std::mem::take(&mut games.dirty);
        let ids: Vec<&String> = if all {
            games.by_id.keys().collect()
        } else {
            dirty.iter().collect()
        };
        let changed = ids
            .into_iter()
            .filter_map(|id| {
                games.by_id.get(id).map(|e| SnapshotGame {
                    game_id: (*id).clone(),
                    first_stream_seq: e.first_stream_seq,
                    records: e.records.clone(),
                })
            })
            .collect();
        Some(SnapshotData {
            folded_seq: games.folded_seq,
            last_game: games.last_game.clone().unwrap_or_default(),
            games: changed,
        })
    }
}

fn refold(records: &[Vec<u8>]) -> Result<Game, String> {
    let mut iter = records
        .iter()
        .map(|bytes| GameEventRecord::decode(bytes.as_slice()).map_err(|e| e.to_string()));
    let first = iter.next().ok_or("a game without records")??;
    let mut game = Game::from_first_record(&first).map_err(|e| e.to_string())?;
    for record in iter {
        game.apply(&record?).map_err(|e| e.to_string())?;
    }
    Ok(game)
}

/// Rebuilds the games of a snapshot, after checking that the log still holds, at the snapshot's
/// sequence, the record the snapshot ends with (the stream was not recreated or purged).
///
/// The snapshot's records are not checked against their signatures again: the file is this
/// service's own, written from records that were checked when they were folded, and whoever can
/// change it can read the signing key beside it. The log after it is checked as it is read.
async fn restore(
    stream: &Stream,
    snapshot: SnapshotData,
    trusted: TrustedKeys,
) -> Result<Games, String> {
    let mut games = Games {
        trusted,
        ..Games::default()
    };
    if snapshot.folded_seq == 0 {
        return Ok(games);
    }
    let mut saved = snapshot.games;
    saved.sort_by_key(|g| g.first_stream_seq);
    let mut tail: Option<Vec<u8>> = None;
    for g in saved {
        let game = refold(&g.records).map_err(|e| format!("game {}: {e}", g.game_id))?;
        if game.game_id() != g.game_id {
            return Err(format!(
                "game {} holds records of {}",
                g.game_id,
                game.game_id()
            ));
        }
        if g.game_id == snapshot.last_game {
            tail = g.records.last().cloned();
        }
        games.insert(Entry {
            game,
            first_stream_seq: g.first_stream_seq,
            records: g.records,
        });
    }
    if !snapshot.last_game.is_empty() {
        let stored = stream
            .get_raw_message(snapshot.folded_seq)
            .await
            .map_err(|e| format!("stream sequence {}: {e}", snapshot.folded_seq))?;
        if Some(stored.payload.as_ref()) != tail.as_deref() {
            return Err(format!(
                "the log's record at sequence {} is not the snapshot's",
                snapshot.folded_seq
            ));
        }
    }
    games.folded_seq = snapshot.folded_seq;
    games.last_game = Some(snapshot.last_game).filter(|g| !g.is_empty());
    Ok(games)
}

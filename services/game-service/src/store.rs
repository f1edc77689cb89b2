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
//! # Pipelined appends
//!
//! Waiting for each record's acknowledgement before publishing the next made all appends of an
//! instance one at a time, each a round trip to the stream's leader: that bounded the whole hall
//! (about 4,400 observations per second here). Decisions on observations are therefore appended
//! in a pipeline: in the writer's turn a decision publishes its records right after the records
//! still in flight, and then waits for their acknowledgements in the order they were published
//! (the `acks` turn, queued for before the writer's turn is let go), and folds them. Each record
//! expects the stream to end where the one published before it will be stored
//! (`Nats-Expected-Last-Sequence`) *and* with that record (`Nats-Expected-Last-Msg-Id`, its
//! message id). The sequence alone would not do: when a record in flight is refused because
//! another writer came first, the next one's expected sequence is then the other writer's
//! record's, and it would be stored on top of a record its decision never saw. With the message
//! id it is refused too, and so is everything after it; nats-server checks both where it applies
//! a record, on every replica, so the answer is the same on all of them
//! (`tests/game_log.rs`, `a_record_sent_after_a_refused_one_is_refused_too`). A decision whose
//! record was refused takes the writer's turn alone (nothing in flight), catches up, and appends
//! what is not stored yet one record at a time, as any conflict. Since the log's checks look at
//! the whole stream, that a pipelined decision was made on the whole of its game rests on this
//! instance ([`crate::pipeline`]): two decisions on one game are never in flight together, and a
//! game with a record of unknown fate (stored perhaps, not folded here) is appended to alone,
//! after a catch-up, until the log was caught up with nothing in flight.
//!
//! Only nats-server 2.9 is sent records in the pipeline. nats-server 2.15 refuses a wrong
//! sequence before replicating a record, but checks the message id only where it applies it, and
//! takes a mismatch there as a write error that stops the stream (seen in the same test): later
//! servers get one decision at a time in the writer's turn alone.
//!
//! # A game's own end
//!
//! The stream-level check says that nobody wrote since this instance last looked, not that it
//! saw everything written before: a read given by a nats-server 2.9 leader that lacked records
//! (after a node was killed) could go past a game's record that the log then held, and a
//! decision on the game without it would be stored beside it. So each decision's first record
//! also expects the game's subject to end where this instance folded the game's last record
//! (`Nats-Expected-Last-Subject-Sequence`, `Entry::last_stream_seq`). That check can only
//! refuse more, never accept what the stream-level check refuses, so nats-server #4320 does not
//! matter here. A refusal that a catch-up does not explain (the stream ended where expected),
//! or that repeats, makes the store compare the game's last record in the log with its own: a
//! different one puts the game behind, to be read again whole before anything is appended.
//!
//! A conflict is never resolved by writing anyway, so a game's log never forks. Every record is
//! also published with `Nats-Msg-Id = <game>:<game_seq>`: a retry after an unknown outcome (a
//! timeout) whose first attempt was stored is then deduplicated by JetStream; a duplicate
//! acknowledgement is treated as a conflict (catch up and look), because the stored record with
//! that id may be another instance's.

use async_nats::jetstream::{
    self, context::PublishErrorKind, message::PublishMessage, stream::Stream,
};
use boardcast_game::events::{GameEvent, GameEventRecord, GameState, LogNotFollowed};
use boardcast_game::signing::{PublicKey, RecordSigner, TrustedKeys};
use boardcast_game::{Game, NewEvent};
use boardcast_kit::game_log;
use boardcast_kit::nats::{
    GAMES_STREAM, GAMES_SUBJECTS, game_message_id, game_subject, next_message,
};
use futures::StreamExt;
use prost::Message as _;
use tracing::Instrument as _;

use crate::games::{Entry, Games, NotRefolded, Stuck, refold, skipped_as_bad};
use crate::pipeline::{Admission, InFlight};
use crate::silent_leader::SilentLeader;
use crate::snapshot::SnapshotData;

/// How many times one decision is retried after conflicts before giving up (the observation is
/// then delivered again later).
const MAX_ATTEMPTS: usize = 20;

/// How long a catch-up waits for the next record from its consumer before it gives up (and is
/// made again later): longer than the log reader takes to make a stalled consumer again
/// ([`game_log::STALL_CHECK`]), so that it gives up only while NATS cannot be read.
const CATCH_UP_STALL: std::time::Duration = std::time::Duration::from_secs(30);

/// How many times rebuilding the games at start is taken up again after the log stopped coming.
const LOAD_ATTEMPTS: u32 = 10;

/// Catch-ups up to this many records read message by message (a round trip each, and nothing
/// that can stall, while the writer's turn waits); longer ones use a consumer.
const DIRECT_CATCH_UP: u64 = 1_000;

/// The same at start, where the whole log is usually read, and when following the log: a
/// consumer beyond a few records. An instance that decides little (a standby) finds much of the
/// log new each time it looks (a few thousand records a second at full speed), and one consumer
/// streaming them spares the server a request for each.
const DIRECT_READING_ON: u64 = 64;

#[derive(Debug, thiserror::Error)]
pub enum AppendError {
    #[error("the log of game {0} kept changing under this decision; retry")]
    Conflict(String),
    /// Game `0` was folded afresh from its log since the caller looked at it (records it held
    /// then may have been removed by an operator): what the caller concluded from it (the gap
    /// before an observation) may no longer hold; nothing was decided, look again.
    #[error(
        "game {0} was read again from its log since its board's observations were looked at; \
         they are looked at again"
    )]
    FoldedAfresh(String),
    /// The decision cannot be stored (a record NATS refuses, a record that does not open).
    #[error("appending to the log of game {game_id}: {reason}")]
    Failed { game_id: String, reason: String },
    /// NATS did not answer or could not be read (no leader during an election, a timeout, the
    /// connection lost): nothing is wrong with the decision; it is tried again.
    #[error("appending to the log of game {game_id}: NATS is unavailable: {reason}")]
    Unavailable { game_id: String, reason: String },
    /// Nothing is decided on the game here: folding one of its records panicked (a bug), so
    /// what is folded of it stops short of its log. Trying again does not help; a service
    /// without the bug does.
    #[error("nothing is decided on game {game_id} here: {reason}")]
    Unfoldable { game_id: String, reason: String },
    /// Nothing is appended to the game: its log, read again, does not follow on for good (two
    /// records with one number, or one missing for long). Trying again does not help; an
    /// operator mending the log (`boardcast fork keep` for a fork) does.
    #[error("nothing is appended to game {game_id} until its log is mended: {reason}")]
    LogBroken { game_id: String, reason: String },
}

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("reading the game log: {0}")]
    Log(String),
}

/// Where a decision is made (see [`Store::decide_and_append`]).
enum Mode {
    /// Outside the writer's turn, concurrently with other decisions; the turn is taken for the
    /// append only. A decision to append nothing stands if the state it was made on was the
    /// whole log at a moment after `whole_after` (see [`Store::whole_log_at`]); otherwise the
    /// log is asked whether its game moved on.
    Concurrent { whole_after: std::time::Instant },
    /// In the writer's turn: on the state caught up with the log when `catch_up_first` (a
    /// command that must see what other instances wrote), else on the state as folded (an
    /// append that conflicts catches up then).
    InTurn { catch_up_first: bool },
}

/// What a decision made of the folded state.
enum Decision<T> {
    /// Nothing to append: `outcome` is the answer. `rests_on`: the log subject whose state it
    /// rests on; a decision made outside the writer's turn is made again once when the log holds
    /// something on it after the state it was made on.
    Nothing {
        outcome: T,
        rests_on: Option<String>,
    },
    /// None can be made: game `game_id` cannot be folded here (see `Games::unfoldable`).
    Unfoldable { game_id: String, reason: String },
    /// None is made: game `game_id` was folded afresh since the caller looked at it (see
    /// `AppendError::FoldedAfresh`).
    FoldedAfresh { game_id: String },
    /// `records` continue game `game_id`'s chain; `outcome` once they are stored. `on_board`:
    /// the board whose live game the decision was made for (the append is decided again if
    /// another game was set up there meanwhile).
    Append {
        game_id: String,
        records: Vec<GameEventRecord>,
        on_board: Option<String>,
        outcome: T,
    },
}

impl<T> Decision<T> {
    fn unfoldable(game_id: &str, reason: &str) -> Decision<T> {
        Decision::Unfoldable {
            game_id: game_id.to_owned(),
            reason: reason.to_owned(),
        }
    }
}

enum PublishOutcome {
    Stored(u64),
    /// Someone else wrote first (or the message id was already used): catch up and look again.
    Conflict,
}

pub struct Store {
    js: jetstream::Context,
    stream: Stream,
    /// The game log over a connection of its own, for the checks of decisions that append
    /// nothing ([`Store::fold_news_after`]): they are most of a hall's requests, and on the
    /// appends' connection they waited in line with them (nats-server and the client each
    /// handle a connection's messages one at a time).
    checks: Stream,
    /// The games as folded so far. Locked only for moments and never across a NATS call, so a
    /// read (GetGame, a claim, a list) never waits for an append in progress.
    games: std::sync::RwLock<Games>,
    /// The turn to publish, and what this instance published last. Decisions on observations
    /// are made outside it and take it only to publish their records (checking first that the
    /// game still ends where they continue it), without waiting for the acknowledgements of the
    /// records before theirs: see "Pipelined appends" above.
    writer: tokio::sync::Mutex<LastPublished>,
    /// The turn to handle acknowledgements and fold: taken, while `writer` is still held, in
    /// the order the records were published (tokio's mutex is first come, first served), so
    /// that records are folded in stream order. Only its holder changes `games`. Both together
    /// are the writer's turn alone ([`Turn`]): nothing of this instance's is in flight then;
    /// an append or catch-up in it (and the gRPC decisions, made in it whole) waits for each
    /// acknowledgement.
    acks: tokio::sync::Mutex<()>,
    /// The games with records in flight or of unknown fate: which decisions may be appended
    /// in the pipeline (see [`crate::pipeline`]).
    in_flight: std::sync::Mutex<InFlight>,
    /// Whether decisions on observations are appended in the pipeline (see "Pipelined appends"
    /// above), which only nats-server 2.9 allows: each decision is otherwise appended in the
    /// writer's turn alone.
    pipelined: bool,
    /// Since when acknowledgements have been awaited: a write that takes long means the service
    /// is stuck.
    busy_since: std::sync::Mutex<Option<std::time::Instant>>,
    /// Signs every record this instance appends.
    signer: RecordSigner,
    /// This instance's appends that got no acknowledgement in a row: a leader that stopped
    /// acknowledging is asked to step down (see `silent_leader`).
    silent_leader: std::sync::Mutex<SilentLeader>,
    /// When each game behind the log (`Games::behind`) is next read again at a catch-up (and,
    /// for one found broken, before its board's next observation): often while a record is
    /// missing, every `READ_AGAIN_BROKEN` once its log was found broken.
    read_again_at: std::sync::Mutex<std::collections::HashMap<String, std::time::Instant>>,
    /// Since when each game behind the log has been found still missing a record when read
    /// again: past `BEHIND_FOR_GOOD`, decisions on it fail rather than hold its partition up.
    missing_since: std::sync::Mutex<MissingSince>,
    /// When a catch-up last went past stream sequences it was not given, on the stream's word
    /// that they were removed: for `PASSED_OVER_DOUBT` after, an append first checks that the
    /// game's last record in the log is the one folded here (`verify_last_record`).
    passed_over_at: std::sync::Mutex<Option<std::time::Instant>>,
    /// Since when the log's leader has lacked a record the log keeps, and when it was last
    /// asked to step down for it (see `note_leader_lacking`).
    leader_lacking: std::sync::Mutex<LeaderLacking>,
    /// A moment at which what is folded was the whole log: when the latest record this
    /// instance appended and folded was sent. Each append expects the stream to end where the
    /// record before it was folded or sent, so a record stored shows that the log then held
    /// nothing else. A decision that appends nothing, made on a state that was the whole log
    /// after its observation was stored, stands without asking the log whether its game moved
    /// on (see `Mode::Concurrent`). Changed and read with `games` held, so that it goes with
    /// the state read.
    whole_log_at: std::sync::Mutex<Option<std::time::Instant>>,
    /// The boards whose games' logs were found mended in the last `MENDED_KEPT`, and when
    /// ([`Store::mended_boards`]): kept rather than only announced, so that a partition's
    /// consumer started after the mend (at start-up, a standby taking over) finds them too.
    mended: std::sync::Mutex<std::collections::HashMap<String, std::time::Instant>>,
    /// Changes whenever a board is added to `mended`.
    mended_signal: tokio::sync::watch::Sender<u64>,
    /// The last game whose end in the log was looked at ([`Store::look_at_games`]): the next
    /// look goes on after it.
    looked_at_last: std::sync::Mutex<String>,
    /// The games whose end in the log looked moved when last looked at, and since when: read
    /// again only once it still does `MOVED_CONFIRMED` later (a leader just elected, or
    /// lacking a record, answers with an earlier end for a moment).
    looked_moved: std::sync::Mutex<std::collections::HashMap<String, std::time::Instant>>,
}

/// Where this instance's last published record is expected in the stream, when records are in
/// flight: the next one is published expecting to follow it.
#[derive(Default)]
struct LastPublished {
    seq: u64,
    message_id: String,
}

/// A game's last record in the log, against what is folded here.
#[derive(Debug, PartialEq, Eq)]
enum LastRecord {
    /// The one folded here (or one newer than what is folded, which a catch-up will fold).
    AsFolded,
    /// Another, at this stream sequence (or none): the game is now behind.
    Other { at: u64 },
}

/// What the log must end with for a record to be stored.
struct Expected<'a> {
    /// The whole stream's last sequence (`Nats-Expected-Last-Sequence`): nobody else wrote
    /// since.
    last: u64,
    /// The message id of the record published just before, when it is still in flight
    /// (`Nats-Expected-Last-Msg-Id`): it was not refused.
    last_id: Option<&'a str>,
    /// The last sequence on the game's own subject (`Nats-Expected-Last-Subject-Sequence`):
    /// the game holds no record this instance did not fold. See "A game's own end".
    game_end: Option<u64>,
}

/// A game admitted into the pipeline, until its records in flight are answered. Dropped
/// without [`AdmittedGame::settle`] (the append was cancelled, or panicked, after records may
/// have been sent), the game is taken as having a record of unknown fate: it never stays "in
/// flight" for good, and its next decision is appended alone.
struct AdmittedGame<'a> {
    in_flight: &'a std::sync::Mutex<InFlight>,
    game_id: &'a str,
    /// Whether each record in flight was folded or known refused, once answered.
    folded: bool,
}

impl AdmittedGame<'_> {
    /// The records in flight were answered: `folded` when each is folded or known refused.
    fn settle(mut self, folded: bool) {
        self.folded = folded;
    }
}

impl Drop for AdmittedGame<'_> {
    fn drop(&mut self) {
        lock_in_flight(self.in_flight).settled(self.game_id, self.folded);
    }
}

fn lock_in_flight(in_flight: &std::sync::Mutex<InFlight>) -> std::sync::MutexGuard<'_, InFlight> {
    in_flight
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A record to append, with its place in its game (read from it once).
struct Outgoing {
    game_seq: u64,
    record: GameEventRecord,
}

/// `records` of game `game_id`, each with its place in the game.
fn outgoing(game_id: &str, records: Vec<GameEventRecord>) -> Result<Vec<Outgoing>, AppendError> {
    records
        .into_iter()
        .map(|record| {
            let game_seq = Game::open_record(&record)
                .map_err(|e| failed(game_id, e))?
                .game_seq;
            Ok(Outgoing { game_seq, record })
        })
        .collect()
}

/// The writer's turn alone: nothing of this instance's is in flight.
struct Turn<'a> {
    // Fields drop in order: the acknowledgement turn is let go first, so that whoever takes the
    // writer's turn next finds nothing in flight and does not chain its records on a
    // `LastPublished` from before this turn.
    _acks: AckTurn<'a>,
    _writer: tokio::sync::MutexGuard<'a, LastPublished>,
}

/// The turn to handle acknowledgements; notes how long it is held.
struct AckTurn<'a> {
    _acks: tokio::sync::MutexGuard<'a, ()>,
    busy_since: &'a std::sync::Mutex<Option<std::time::Instant>>,
}

impl Drop for AckTurn<'_> {
    fn drop(&mut self) {
        if let Ok(mut since) = self.busy_since.lock() {
            *since = None;
        }
    }
}

fn unavailable(game_id: &str, reason: impl ToString) -> AppendError {
    AppendError::Unavailable {
        game_id: game_id.to_owned(),
        reason: reason.to_string(),
    }
}

/// What a decision on game `game_id`, stuck behind its log, comes to.
fn stuck_error(game_id: &str, stuck: &Stuck) -> AppendError {
    let game_id = game_id.to_owned();
    match stuck {
        Stuck::Unfoldable(reason) => AppendError::Unfoldable {
            game_id,
            reason: reason.clone(),
        },
        Stuck::Broken(reason) => AppendError::LogBroken {
            game_id,
            reason: reason.clone(),
        },
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

    /// Whether a panic (a bug) struck while the games were being changed: what is folded here
    /// may then differ from the log, and only folding it afresh (a restart) can be trusted.
    pub fn games_poisoned(&self) -> bool {
        self.games.is_poisoned()
    }

    async fn turn(&self) -> Turn<'_> {
        let writer = self.writer.lock().await;
        let acks = self.acks.lock().await;
        Turn {
            _acks: self.ack_turn(acks),
            _writer: writer,
        }
    }

    fn ack_turn<'a>(&'a self, acks: tokio::sync::MutexGuard<'a, ()>) -> AckTurn<'a> {
        if let Ok(mut since) = self.busy_since.lock() {
            *since = Some(std::time::Instant::now());
        }
        AckTurn {
            _acks: acks,
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
        checks: jetstream::Context,
        snapshot: Option<SnapshotData>,
        signer: RecordSigner,
        trusted: TrustedKeys,
    ) -> anyhow::Result<(Store, bool)> {
        let open = |js: jetstream::Context| async move {
            js.get_stream(GAMES_STREAM)
                .await
                .map_err(|e| anyhow::anyhow!("opening the game log stream: {e}"))
        };
        let (stream, checks) = (open(js.clone()).await?, open(checks).await?);
        let mut games = Games::new(trusted.clone());
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
        let pipelined = pipelines_safely(&js.client().server_info().version);
        let store = Store {
            js,
            stream,
            checks,
            games: std::sync::RwLock::new(games),
            writer: tokio::sync::Mutex::default(),
            acks: tokio::sync::Mutex::new(()),
            in_flight: std::sync::Mutex::default(),
            pipelined,
            busy_since: std::sync::Mutex::new(None),
            signer,
            silent_leader: std::sync::Mutex::default(),
            read_again_at: std::sync::Mutex::default(),
            missing_since: std::sync::Mutex::default(),
            passed_over_at: std::sync::Mutex::default(),
            leader_lacking: std::sync::Mutex::default(),
            whole_log_at: std::sync::Mutex::default(),
            mended: std::sync::Mutex::default(),
            mended_signal: tokio::sync::watch::Sender::new(0),
            looked_at_last: std::sync::Mutex::default(),
            looked_moved: std::sync::Mutex::default(),
        };
        // A stalled read (see `CATCH_UP_STALL`) keeps what it folded: go on from there.
        let mut stalls = 0;
        while let Err(e) = store.catch_up_reading(DIRECT_READING_ON).await {
            stalls += 1;
            if stalls >= LOAD_ATTEMPTS {
                return Err(e.into());
            }
            tracing::warn!("rebuilding the games: {e}; going on from where it stopped");
        }
        // Games restored behind are read again now, not at the first catch-up that finds
        // something new: one whose record folding panics on is then known as such before
        // anything is decided on it.
        let turn = store.turn().await;
        store.read_again_when_due(&turn).await;
        drop(turn);
        Ok((store, used))
    }

    /// The key this instance signs with.
    pub fn public_key(&self) -> &PublicKey {
        self.signer.public_key()
    }

    /// The keys whose signatures are accepted on the log's records.
    pub fn trusted_keys(&self) -> TrustedKeys {
        self.read().trusted().clone()
    }

    pub async fn game_count(&self) -> usize {
        self.read().len()
    }

    pub async fn folded_seq(&self) -> u64 {
        self.read().folded_seq()
    }

    pub async fn with_game<T>(&self, game_id: &str, f: impl FnOnce(&Game) -> T) -> Option<T> {
        self.read().get(game_id).map(|e| f(&e.game))
    }

    /// Where game `game_id`'s log goes on past what is folded here, and why, when it does.
    pub async fn not_followed(&self, game_id: &str) -> Option<LogNotFollowed> {
        self.read().not_followed(game_id)
    }

    /// Why nothing can be decided now on the game live on `board_id`, when it is stuck behind
    /// its log (see `Stuck`): it cannot be folded here, or its log is broken. A broken one is
    /// read again first when that is due, so that its board goes on once an operator mended it.
    pub async fn stuck_on_board(&self, board_id: &str) -> Option<AppendError> {
        let broken = {
            let games = self.read();
            match games.stuck_on(board_id)? {
                (game_id, Stuck::Broken(_)) if self.read_again_due(game_id) => game_id.to_owned(),
                (game_id, stuck) => return Some(stuck_error(game_id, stuck)),
            }
        };
        {
            let turn = self.turn().await;
            self.read_again_if_due(&turn, &broken).await;
        }
        let games = self.read();
        let (game_id, stuck) = games.stuck_on(board_id)?;
        Some(stuck_error(game_id, stuck))
    }

    /// Game `game_id`'s state as the API shows it (saying whether its log goes on past it).
    pub async fn game_state(&self, game_id: &str) -> Option<GameState> {
        let games = self.read();
        games.get(game_id).map(|e| games.state_of(&e.game))
    }

    /// The states of the games `wanted`, as [`Store::game_state`].
    pub async fn game_states(&self, mut wanted: impl FnMut(&Game) -> bool) -> Vec<GameState> {
        let games = self.read();
        games
            .all()
            .filter(|e| wanted(&e.game))
            .map(|e| games.state_of(&e.game))
            .collect()
    }

    /// Runs `f` on game `game_id` when what is folded of it here is its whole log as read;
    /// otherwise says where its log goes on past it, and why.
    pub async fn with_whole_game<T>(
        &self,
        game_id: &str,
        f: impl FnOnce(&Game) -> T,
    ) -> Option<Result<T, LogNotFollowed>> {
        let games = self.read();
        let entry = games.get(game_id)?;
        Some(match games.not_followed(game_id) {
            Some(not_followed) => Err(not_followed),
            None => Ok(f(&entry.game)),
        })
    }

    /// Runs `f` on the game live on `board_id`.
    pub async fn with_board<T>(&self, board_id: &str, f: impl FnOnce(&Game) -> T) -> Option<T> {
        self.with_board_entry(board_id, |e| f(&e.game)).await
    }

    /// Runs `f` on the game live on `board_id`, with what it was folded from.
    pub(crate) async fn with_board_entry<T>(
        &self,
        board_id: &str,
        f: impl FnOnce(&Entry) -> T,
    ) -> Option<T> {
        self.read().live_on(board_id).map(f)
    }

    /// Runs `f` on the game live on each board.
    pub async fn live_games<T>(&self, mut f: impl FnMut(&Game) -> T) -> Vec<T> {
        self.read().live().map(|e| f(&e.game)).collect()
    }

    /// Where the log of a round's games starts: the first record of the earliest of them this
    /// instance knows, or else the first record it has not folded (a game created since).
    pub async fn round_start_seq(&self, tournament_id: &str, round: u32) -> u64 {
        self.read().round_start_seq(tournament_id, round)
    }

    pub async fn all_games<T>(&self, mut f: impl FnMut(&Game) -> Option<T>) -> Vec<T> {
        self.read().all().filter_map(|e| f(&e.game)).collect()
    }

    /// Whether the game log holds anything on game `game_id`'s subject (one lookup, no turn).
    pub async fn in_log(&self, game_id: &str) -> Result<bool, ReadError> {
        self.last_on_subject(game_id)
            .await
            .map(|last| last.is_some())
            .map_err(|e| ReadError::Log(e.to_string()))
    }

    /// The last message on game `game_id`'s subject in the log, if there is one.
    async fn last_on_subject(
        &self,
        game_id: &str,
    ) -> Result<Option<jetstream::message::StreamMessage>, jetstream::stream::LastRawMessageError>
    {
        match self
            .checks
            .get_last_raw_message_by_subject(&game_subject(game_id))
            .await
        {
            Ok(message) => Ok(Some(message)),
            Err(e) if e.kind() == jetstream::stream::LastRawMessageErrorKind::NoMessageFound => {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Folds what other instances have appended since this one last looked (asked often, and
    /// usually nothing: that is found with one message lookup).
    pub async fn refresh(&self) -> Result<(), ReadError> {
        let folded_seq = self.read().folded_seq();
        self.fold_news_after(folded_seq, GAMES_SUBJECTS, DIRECT_READING_ON)
            .await
            .map(|_| ())
    }

    /// The one decide-and-append loop every change to the log goes through: decide on the
    /// folded state, append what was decided expecting the stream to end where the decision
    /// was made, and when the append conflicts, catch up and decide again (so `decide` may run
    /// more than once).
    ///
    /// `Mode::Concurrent` decides outside the writer's turn, so that decisions on different
    /// boards run at the same time; only the append takes the turn, and it first checks that the
    /// game still ends where the decision continues it. A decision to append nothing is then
    /// checked against what the log holds since (see [`Decision::Nothing`]). `Mode::InTurn`
    /// decides within the turn. `target` (the board or game) names the decision in errors.
    async fn decide_and_append<T>(
        &self,
        target: &str,
        mode: Mode,
        decide: impl Fn(&Games) -> Decision<T>,
    ) -> Result<T, AppendError> {
        if self.games_poisoned() {
            // Nothing is decided on games that may differ from the log; the service is stopping
            // (see `main`), and what waits is decided after the restart.
            return Err(unavailable(
                target,
                "a panic struck while games were being folded; the service is stopping",
            ));
        }
        let held = match mode {
            Mode::InTurn { catch_up_first } => {
                let turn = self.turn().await;
                if catch_up_first {
                    self.catch_up_alone(&turn)
                        .await
                        .map_err(|e| unavailable(target, e))?;
                }
                Some(turn)
            }
            Mode::Concurrent { .. } => None,
        };
        let mut caught_up = held.is_some();
        for _ in 0..MAX_ATTEMPTS {
            // Decided on what is folded, where the log stood for it, and since when at least
            // that was the whole log.
            let (decision, decided_on_seq, whole_log_at) = {
                let games = self.read();
                (
                    decide(&games),
                    games.folded_seq(),
                    *self.lock_whole_log_at(),
                )
            };
            match decision {
                Decision::Unfoldable { game_id, reason } => {
                    return Err(AppendError::Unfoldable { game_id, reason });
                }
                Decision::FoldedAfresh { game_id } => {
                    return Err(AppendError::FoldedAfresh(game_id));
                }
                Decision::Nothing { outcome, rests_on } => {
                    let Some(subject) = rests_on.filter(|_| !caught_up) else {
                        return Ok(outcome);
                    };
                    // Decided outside the turn on a state the log may have moved on from: it
                    // stands if that state was the whole log late enough, else it is decided
                    // again once caught up, if the log holds something newer on it.
                    if let Mode::Concurrent { whole_after } = mode
                        && whole_log_at.is_some_and(|at| at >= whole_after)
                    {
                        crate::metrics::nothing_decided("witnessed");
                        return Ok(outcome);
                    }
                    crate::metrics::nothing_decided("asked");
                    if self
                        .fold_news_after(decided_on_seq, &subject, DIRECT_CATCH_UP)
                        .await
                        .map_err(|e| unavailable(target, e))?
                    {
                        caught_up = true;
                        continue;
                    }
                    return Ok(outcome);
                }
                Decision::Append {
                    game_id,
                    records,
                    on_board,
                    outcome,
                } => {
                    let records = outgoing(&game_id, records)?;
                    let appended = match &held {
                        Some(turn) => self.append(turn, &game_id, records).await?,
                        None if self.pipelined => {
                            self.append_pipelined(&game_id, records, on_board.as_deref())
                                .await?
                        }
                        None => {
                            let turn = self.turn().await;
                            self.still_live(&game_id, on_board.as_deref())
                                && self.append(&turn, &game_id, records).await?
                        }
                    };
                    if appended {
                        return Ok(outcome);
                    }
                    let taken;
                    let alone = match &held {
                        Some(turn) => turn,
                        None => {
                            taken = self.turn().await;
                            &taken
                        }
                    };
                    self.catch_up_alone(alone)
                        .await
                        .map_err(|e| unavailable(&game_id, e))?;
                    caught_up = true;
                }
            }
        }
        Err(AppendError::Conflict(target.to_owned()))
    }

    /// Seals `new_events` into records continuing `entry`'s game, signed by this instance.
    fn sealed(&self, entry: &Entry, new_events: Vec<NewEvent>, at: i64) -> Vec<GameEventRecord> {
        Game::record_signed(
            Some(&entry.game),
            entry.game.game_id(),
            new_events,
            at,
            &self.signer,
        )
    }

    /// Runs `decide` on the game live on `board_id` and appends the events `events_of` finds in
    /// what it returns (see [`Store::decide_and_append`], concurrently with other boards). A
    /// decision that produced nothing stands when the state it was made on was the whole log at
    /// a moment after `whole_after` (when the observation decided was stored, at the latest:
    /// see `ingest`); else it is made again after catching up if the game's log had moved on
    /// since the state it was made on (one that found no game, if the log had). `looked_at`:
    /// the game's `Entry::folded_afresh` when the caller looked at its board (a gap before the
    /// observation); nothing is decided on it once it was folded afresh since.
    pub async fn decide_on_board<T>(
        &self,
        board_id: &str,
        recorded_unix_ms: i64,
        whole_after: std::time::Instant,
        looked_at: Option<u64>,
        decide: impl Fn(&Game) -> T,
        events_of: impl Fn(&T) -> Vec<NewEvent>,
    ) -> Result<Option<T>, AppendError> {
        self.decide_and_append(board_id, Mode::Concurrent { whole_after }, |games| {
            if let Some((game_id, reason)) = games.unfoldable_on(board_id) {
                return Decision::unfoldable(game_id, reason);
            }
            let Some(entry) = games.live_on(board_id) else {
                return Decision::Nothing {
                    outcome: None,
                    rests_on: Some(GAMES_SUBJECTS.to_owned()),
                };
            };
            let game_id = entry.game.game_id().to_owned();
            if looked_at.is_some_and(|folded_afresh| folded_afresh != entry.folded_afresh) {
                return Decision::FoldedAfresh { game_id };
            }
            let decision = decide(&entry.game);
            let new_events = events_of(&decision);
            if new_events.is_empty() {
                // The decision stands unless the game itself moved on; what other games did
                // cannot change it. (A game set up on the board in its place does not end this
                // one: the observation is then decided again for the new game with the next one
                // of the board, see `ingest`.)
                return Decision::Nothing {
                    outcome: Some(decision),
                    rests_on: Some(game_subject(&game_id)),
                };
            }
            Decision::Append {
                records: self.sealed(entry, new_events, recorded_unix_ms),
                game_id,
                on_board: Some(board_id.to_owned()),
                outcome: Some(decision),
            }
        })
        .await
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
        let added = self
            .decide_and_append(
                board_id,
                Mode::InTurn {
                    catch_up_first: false,
                },
                |games| {
                    let nothing = |outcome| Decision::Nothing {
                        outcome,
                        rests_on: None,
                    };
                    if let Some((game_id, reason)) = games.unfoldable_on(board_id) {
                        return Decision::unfoldable(game_id, reason);
                    }
                    let Some(entry) = games.live_on(board_id) else {
                        return nothing(Ok(0));
                    };
                    match self.completion(entry, &is_decision_start, &decide) {
                        Ok(Some(missing)) => Decision::Append {
                            game_id: entry.game.game_id().to_owned(),
                            outcome: Ok(missing.len()),
                            records: self.sealed(entry, missing, recorded_unix_ms),
                            on_board: None,
                        },
                        Ok(None) => nothing(Ok(0)),
                        Err(e) => nothing(Err((entry.game.game_id().to_owned(), e))),
                    }
                },
            )
            .await?
            .map_err(|(game_id, e)| failed(&game_id, e))?;
        if added > 0 {
            tracing::warn!(
                board_id,
                records = added,
                "completed a decision interrupted between appends"
            );
        }
        Ok(added)
    }

    /// The events the game's last decision lacks: decided again on the state before it, those
    /// after the ones written, when the ones written are its beginning.
    fn completion(
        &self,
        entry: &Entry,
        is_decision_start: impl Fn(&GameEvent) -> bool,
        decide: impl Fn(&Game) -> Vec<NewEvent>,
    ) -> Result<Option<Vec<NewEvent>>, String> {
        let events: Vec<GameEvent> = entry
            .records
            .iter()
            .filter_map(|bytes| GameEventRecord::decode(bytes.as_slice()).ok())
            .filter_map(|record| GameEvent::decode(record.event.as_slice()).ok())
            .collect();
        let Some(start) = events.iter().rposition(&is_decision_start) else {
            return Ok(None);
        };
        if start == 0 {
            return Ok(None);
        }
        let before = refold(&entry.records[..start])?;
        let expected = decide(&before);
        let written = &events[start..];
        let same = |new: &NewEvent, old: &GameEvent| {
            old.kind.as_ref() == Some(&new.kind) && old.provenance.as_ref() == Some(&new.provenance)
        };
        if expected.len() <= written.len()
            || !expected
                .iter()
                .zip(written)
                .all(|(new, old)| same(new, old))
        {
            return Ok(None);
        }
        Ok(Some(expected[written.len()..].to_vec()))
    }

    /// Runs `decide` on the current state of game `game_id` (caught up with the log first) and
    /// appends what it returns (see [`Store::decide_and_append`]). `None` when there is no such
    /// game; `Some(Err)` when `decide` refused.
    pub async fn decide_on_game<E>(
        &self,
        game_id: &str,
        recorded_unix_ms: i64,
        decide: impl Fn(&Game) -> Result<Vec<NewEvent>, E>,
    ) -> Result<Option<Result<(), E>>, AppendError> {
        self.decide_and_append(
            game_id,
            Mode::InTurn {
                catch_up_first: true,
            },
            |games| {
                if let Some(reason) = games.unfoldable(game_id) {
                    return Decision::unfoldable(game_id, reason);
                }
                let Some(entry) = games.get(game_id) else {
                    return Decision::Nothing {
                        outcome: None,
                        rests_on: None,
                    };
                };
                match decide(&entry.game) {
                    Err(refused) => Decision::Nothing {
                        outcome: Some(Err(refused)),
                        rests_on: None,
                    },
                    Ok(new_events) if new_events.is_empty() => Decision::Nothing {
                        outcome: Some(Ok(())),
                        rests_on: None,
                    },
                    Ok(new_events) => Decision::Append {
                        game_id: game_id.to_owned(),
                        records: self.sealed(entry, new_events, recorded_unix_ms),
                        on_board: None,
                        outcome: Some(Ok(())),
                    },
                }
            },
        )
        .await
    }

    /// Appends the first record of a new game. Returns false when the game already exists.
    pub async fn create(
        &self,
        game_id: &str,
        first: NewEvent,
        recorded_unix_ms: i64,
    ) -> Result<bool, AppendError> {
        let records =
            Game::record_signed(None, game_id, vec![first], recorded_unix_ms, &self.signer);
        self.decide_and_append(
            game_id,
            Mode::InTurn {
                catch_up_first: false,
            },
            |games| {
                if let Some(reason) = games.unfoldable(game_id) {
                    return Decision::unfoldable(game_id, reason);
                }
                if games.get(game_id).is_some() {
                    return Decision::Nothing {
                        outcome: false,
                        rests_on: None,
                    };
                }
                Decision::Append {
                    game_id: game_id.to_owned(),
                    records: records.clone(),
                    on_board: None,
                    outcome: true,
                }
            },
        )
        .await
    }

    /// Appends `records`, which continue `game_id`'s chain, in the writer's turn alone, each
    /// expecting the stream to end at `folded_seq`. Returns false when the game changed under the
    /// decision (decide again); conflicts caused by other games only are retried here with the
    /// same records.
    async fn append(
        &self,
        alone: &Turn<'_>,
        game_id: &str,
        records: Vec<Outgoing>,
    ) -> Result<bool, AppendError> {
        self.verify_last_record(game_id).await?;
        self.read_again_if_behind(alone, game_id).await?;
        // Decided outside the turn (see `decide_on_board`): still valid only if the game has not
        // changed since, here or elsewhere (then the publish below conflicts).
        if let Some(first) = records.first()
            && !self.continues(game_id, &first.record.prev_hash, first.game_seq)
        {
            return Ok(false);
        }
        let mut conflicts = 0;
        // Before anything of this append is sent: see `whole_log_at`.
        let sent_at = std::time::Instant::now();
        // The records stored so far, folded together so that a reader sees a decision whole.
        let mut stored: Vec<(Vec<u8>, u64)> = Vec::new();
        let mut expected_last = self.read().folded_seq();
        let first_game_seq = records.first().map_or(0, |r| r.game_seq);
        let mut game_end = self.expected_game_end(game_id, first_game_seq);
        let mut pending = records.iter();
        let mut next = pending.next();
        while let Some(Outgoing { game_seq, record }) = next {
            let payload = record.encode_to_vec();
            let outcome = self
                .publish(
                    game_id,
                    *game_seq,
                    &record.hash,
                    &payload,
                    expected_last,
                    game_end,
                )
                .await;
            match outcome {
                Ok(PublishOutcome::Stored(seq)) => {
                    crate::metrics::record_appended();
                    stored.push((payload, seq));
                    expected_last = seq;
                    game_end = Some(seq);
                    next = pending.next();
                }
                Ok(PublishOutcome::Conflict) => {
                    crate::metrics::append_conflict();
                    self.fold_stored(&mut stored, sent_at);
                    conflicts += 1;
                    if conflicts > MAX_ATTEMPTS {
                        return Err(AppendError::Conflict(game_id.to_owned()));
                    }
                    self.catch_up_alone(alone)
                        .await
                        .map_err(|e| unavailable(game_id, e))?;
                    let caught_up_to = self.read().folded_seq();
                    let stream_moved_on = caught_up_to != expected_last;
                    expected_last = caught_up_to;
                    // The rest of the records are still valid if the game's chain still ends
                    // where they continue it (only other games were written meanwhile).
                    if !self.continues(game_id, &record.prev_hash, *game_seq) {
                        return Ok(false);
                    }
                    // Refused although the stream ended where expected, or again: the game's
                    // subject may not have (see "A game's own end"). Read again whole, the game
                    // is decided on afresh.
                    let subject_in_doubt =
                        (!stream_moved_on || conflicts > 1) && game_end.is_some();
                    if subject_in_doubt && self.read().get(game_id).is_none() {
                        // Setting the game up: its subject holds records although none of the
                        // game was folded here.
                        match self.subject_end_without_game(alone, game_id).await? {
                            Some(end) => game_end = Some(end),
                            None => return Ok(false),
                        }
                        continue;
                    }
                    if subject_in_doubt
                        && self.check_last_record(game_id).await? != LastRecord::AsFolded
                    {
                        self.read_again_if_behind(alone, game_id).await?;
                        return Ok(false);
                    }
                    game_end = self.expected_game_end(game_id, *game_seq);
                }
                Err(e) => {
                    self.fold_stored(&mut stored, sent_at);
                    return Err(e);
                }
            }
        }
        self.fold_stored(&mut stored, sent_at);
        Ok(true)
    }

    /// Appends a decision made outside the writer's turn, in the pipeline: its records are
    /// published after those still in flight, without waiting for their acknowledgements, each
    /// expecting to follow the one published before it (see "Pipelined appends" above), and are
    /// folded once acknowledged, in stream order. Returns false when the game changed under the
    /// decision (decide again). When a record is refused (another writer came between, or one
    /// in flight before it was refused), the writer's turn is taken alone, the log caught up,
    /// and what is not stored yet is appended one record at a time ([`Store::append`]); so is a
    /// decision on a game with a record of unknown fate ([`crate::pipeline`]).
    async fn append_pipelined(
        &self,
        game_id: &str,
        records: Vec<Outgoing>,
        on_board: Option<&str>,
    ) -> Result<bool, AppendError> {
        let Some(first) = records.first() else {
            return Ok(true);
        };
        self.verify_last_record(game_id).await?;
        let writer = self.writer.lock().await;
        // Nothing in flight when the acknowledgement turn is free: taken before the checks
        // below, so that nobody folds (and changes what they look at) between them and the
        // publishing.
        let acks = self.acks.try_lock().ok();
        // A game whose records as read here do not follow on is read again first, alone.
        let admission = if self.read().behind_from(game_id).is_some() {
            Admission::Alone
        } else {
            self.lock_in_flight().admit(game_id)
        };
        match admission {
            Admission::Pipelined => {}
            Admission::InFlight => return Ok(false),
            Admission::Alone => {
                drop((acks, writer));
                let turn = self.turn().await;
                self.catch_up_alone(&turn)
                    .await
                    .map_err(|e| unavailable(game_id, e))?;
                return Ok(self.still_live(game_id, on_board)
                    && self.append(&turn, game_id, records).await?);
            }
        }
        let admitted = AdmittedGame {
            in_flight: &self.in_flight,
            game_id,
            folded: false,
        };
        // Decided outside the turn: the game may have changed since (here or elsewhere; then a
        // publish below is refused). Looked at once the game is admitted: an earlier decision of
        // this instance on it, in flight a moment ago, has been folded by then (its game is
        // settled only after its records are), so this sees the game as the log will hold it.
        if !self.still_live(game_id, on_board)
            || !self.continues(game_id, &first.record.prev_hash, first.game_seq)
        {
            // Nothing sent.
            admitted.settle(true);
            return Ok(false);
        }
        let published = self
            .publish_in_pipeline(game_id, &records, writer, acks)
            .await;
        admitted.settle(published.is_ok());
        if let Err(e) = &published {
            tracing::info!(
                game = game_id,
                "{e}: the fate of records sent is unknown; the game's next decision is appended \
                 alone, after a catch-up"
            );
        }
        if published? {
            return Ok(true);
        }
        // Refused: alone in the writer's turn, on the caught-up log, the records not stored yet.
        let turn = self.turn().await;
        self.catch_up_alone(&turn)
            .await
            .map_err(|e| unavailable(game_id, e))?;
        let last_game_seq = self
            .read()
            .get(game_id)
            .map_or(0, |e| e.game.last_game_seq());
        let last_hash = records.last().map(|r| r.record.hash.clone());
        let rest: Vec<Outgoing> = records
            .into_iter()
            .filter(|r| r.game_seq > last_game_seq)
            .collect();
        // None left: stored, if what the game ends with is this decision's last record.
        if rest.is_empty() {
            return Ok(self.read().get(game_id).is_some_and(|e| {
                e.records.last().is_some_and(|last| {
                    GameEventRecord::decode(last.as_slice())
                        .is_ok_and(|last| Some(&last.hash) == last_hash.as_ref())
                })
            }));
        }
        self.append(&turn, game_id, rest).await
    }

    /// Whether game `game_id` is still the one live on `on_board` (a decision made outside the
    /// writer's turn: another game may have been set up there since).
    fn still_live(&self, game_id: &str, on_board: Option<&str>) -> bool {
        on_board.is_none_or(|board| {
            self.read()
                .live_on(board)
                .is_some_and(|e| e.game.game_id() == game_id)
        })
    }

    fn lock_in_flight(&self) -> std::sync::MutexGuard<'_, InFlight> {
        lock_in_flight(&self.in_flight)
    }

    /// Publishes `records` after what is in flight and folds them once acknowledged; true when
    /// all were stored (see [`Store::append_pipelined`]). An error leaves the fate of some of
    /// them unknown.
    async fn publish_in_pipeline(
        &self,
        game_id: &str,
        records: &[Outgoing],
        mut writer: tokio::sync::MutexGuard<'_, LastPublished>,
        acks: Option<tokio::sync::MutexGuard<'_, ()>>,
    ) -> Result<bool, AppendError> {
        // Nothing in flight (`acks` taken): the records follow what is folded. Otherwise they
        // follow the last record published, which may still be refused: then they are refused
        // as well.
        let (mut expected_seq, mut expected_id) = match acks {
            Some(_) => (self.read().folded_seq(), None),
            None => (writer.seq, Some(writer.message_id.clone())),
        };
        // The game has nothing in flight (`InFlight::admit`): its subject ends where it was
        // folded. Only the first record expects that; the others follow it.
        let mut game_end =
            self.expected_game_end(game_id, records.first().map_or(0, |r| r.game_seq));
        let mut in_flight = Vec::with_capacity(records.len());
        // Before anything of this decision is sent: see `whole_log_at`.
        let sent_at = std::time::Instant::now();
        for Outgoing { game_seq, record } in records {
            let payload = record.encode_to_vec();
            let ack = self
                .send(
                    game_id,
                    *game_seq,
                    &record.hash,
                    &payload,
                    Expected {
                        last: expected_seq,
                        last_id: expected_id.as_deref(),
                        game_end: game_end.take(),
                    },
                )
                .await?;
            in_flight.push((payload, ack));
            // Past the end of u64 the record is only refused.
            expected_seq = expected_seq.saturating_add(1);
            expected_id = Some(game_message_id(game_id, *game_seq, &record.hash));
        }
        *writer = LastPublished {
            seq: expected_seq,
            message_id: expected_id.unwrap_or_default(),
        };
        let acks = match acks {
            Some(acks) => acks,
            // Queued while still publishing alone: acknowledgements are handled in the order the
            // records were published.
            None => self.acks.lock().await,
        };
        drop(writer);
        let ack_turn = self.ack_turn(acks);
        let mut stored = Vec::with_capacity(in_flight.len());
        for (payload, ack) in in_flight {
            match self.outcome(game_id, ack).await {
                Ok(PublishOutcome::Stored(seq)) => {
                    crate::metrics::record_appended();
                    stored.push((payload, seq));
                }
                // The records after it were published expecting it: refused as well.
                Ok(PublishOutcome::Conflict) => {
                    crate::metrics::append_conflict();
                    break;
                }
                Err(e) => {
                    self.fold_in_order(&mut stored, sent_at)
                        .await
                        .map_err(|read| unavailable(game_id, read))?;
                    return Err(e);
                }
            }
        }
        let complete = stored.len() == records.len();
        self.fold_in_order(&mut stored, sent_at)
            .await
            .map_err(|e| unavailable(game_id, e))?;
        drop(ack_turn);
        Ok(complete)
    }

    /// Folds records this instance stored, in stream order; when one does not follow what is
    /// folded (a record before it, whose outcome was not known, was stored after all), the log
    /// is caught up instead, which folds it. An error when the log does not show them yet (a
    /// leader newly elected, still applying): their fate is then unknown here. In the
    /// acknowledgement turn.
    async fn fold_in_order(
        &self,
        stored: &mut Vec<(Vec<u8>, u64)>,
        sent_at: std::time::Instant,
    ) -> Result<(), ReadError> {
        let (Some(&(_, first)), Some(&(_, last))) = (stored.first(), stored.last()) else {
            return Ok(());
        };
        if first <= self.read().folded_seq().saturating_add(1) {
            self.fold_stored(stored, sent_at);
            return Ok(());
        }
        stored.clear();
        self.catch_up().await?;
        if self.read().folded_seq() < last {
            return Err(ReadError::Log(format!(
                "record {last}, stored by this instance, is not in the log as read; reading it \
                 again later"
            )));
        }
        Ok(())
    }

    /// Where the first record of an append to game `game_id`, numbered `first_game_seq`,
    /// expects the game's subject to end: where its last record was folded here, or, for the
    /// first record of a game nothing of which is folded here, with no record at all (so that a
    /// first record another writer stored, and this instance's read left out, is not written
    /// beside). `None`: not known (a snapshot written before it was kept).
    fn expected_game_end(&self, game_id: &str, first_game_seq: u64) -> Option<u64> {
        let games = self.read();
        match games.get(game_id) {
            Some(entry) => Some(entry.last_stream_seq).filter(|&seq| seq > 0),
            None => (first_game_seq == 1).then_some(0),
        }
    }

    /// For game `game_id`, nothing of which is folded here although its subject holds records
    /// up to what is folded (its first record was refused): where the subject ends, when no
    /// record on it is one of the game's that a trusted key signed (a forgery, say, which every
    /// reader skips). When its first record is there, the game is read again whole (put behind
    /// first) and `None` returned: it exists, and the decision is made afresh. Later records of
    /// the game without a first one that can start it: an error, for an operator.
    async fn subject_end_without_game(
        &self,
        alone: &Turn<'_>,
        game_id: &str,
    ) -> Result<Option<u64>, AppendError> {
        let up_to = self.read().folded_seq();
        let on_subject = game_log::game_records(&self.stream, game_id, up_to)
            .await
            .map_err(|e| unavailable(game_id, e))?;
        let of_game =
            boardcast_game::trusted_records_of(game_id, &on_subject, &self.trusted_keys());
        let first = of_game
            .iter()
            .find(|(_, opened)| Game::from_first_opened(opened).is_ok());
        match (first, of_game.first()) {
            (Some(&(seq, _)), _) => {
                tracing::warn!(
                    game = %game_id,
                    stream_seq = seq,
                    "the game's log holds a record not folded here: reading it again"
                );
                self.write().put_behind(game_id, seq);
                self.read_again_if_behind(alone, game_id).await?;
                Ok(None)
            }
            (None, Some(&(seq, _))) => Err(failed(
                game_id,
                format!(
                    "its log holds records of it (from stream sequence {seq}) but no first \
                     record that can start it; an operator must look (`boardcast fork show`)"
                ),
            )),
            // Nothing there (all of it past what is folded: the next refusal catches up), or
            // nothing of the game.
            (None, None) => Ok(Some(on_subject.last().map_or(0, |&(seq, _)| seq))),
        }
    }

    /// Whether a record with `prev_hash` and `game_seq` continues game `game_id` as folded.
    fn continues(&self, game_id: &str, prev_hash: &[u8], game_seq: u64) -> bool {
        self.read().continues(game_id, prev_hash, game_seq)
    }

    /// Folds the records an append stored, under one write lock; they were sent after
    /// `sent_at`, so what is folded then was the whole log at a moment after it.
    fn fold_stored(&self, stored: &mut Vec<(Vec<u8>, u64)>, sent_at: std::time::Instant) {
        if stored.is_empty() {
            return;
        }
        let mut games = self.write();
        for (payload, seq) in stored.drain(..) {
            games.fold_own(&payload, seq);
        }
        let mut whole_log_at = self.lock_whole_log_at();
        *whole_log_at = (*whole_log_at).max(Some(sent_at));
        drop((whole_log_at, games));
    }

    fn lock_whole_log_at(&self) -> std::sync::MutexGuard<'_, Option<std::time::Instant>> {
        self.whole_log_at
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Publishes one record, expecting the whole stream to end at `expected_last` and, when
    /// given, the game's subject at `game_end`, and waits for the answer.
    async fn publish(
        &self,
        game_id: &str,
        game_seq: u64,
        hash: &[u8],
        payload: &[u8],
        expected_last: u64,
        game_end: Option<u64>,
    ) -> Result<PublishOutcome, AppendError> {
        let ack = self
            .send(
                game_id,
                game_seq,
                hash,
                payload,
                Expected {
                    last: expected_last,
                    last_id: None,
                    game_end,
                },
            )
            .await?;
        self.outcome(game_id, ack).await
    }

    /// Sends one record with what the log must end with to store it; the answer comes later.
    async fn send(
        &self,
        game_id: &str,
        game_seq: u64,
        hash: &[u8],
        payload: &[u8],
        expected: Expected<'_>,
    ) -> Result<jetstream::context::PublishAckFuture, AppendError> {
        // The record carries the trace of what it was decided on (an observation, a gRPC call)
        // to the services that read the log.
        let span = tracing::info_span!("record.append", game = %game_id, game_seq);
        let mut headers = async_nats::HeaderMap::new();
        span.in_scope(|| boardcast_kit::telemetry::inject_into_nats(&mut headers));
        let mut message = PublishMessage::build()
            .payload(payload.to_vec().into())
            .headers(headers)
            .message_id(game_message_id(game_id, game_seq, hash))
            .expected_last_sequence(expected.last);
        if let Some(id) = expected.last_id {
            message = message.expected_last_message_id(id);
        }
        if let Some(end) = expected.game_end {
            message = message.expected_last_subject_sequence(end);
        }
        self.js
            .send_publish(game_subject(game_id), message)
            .instrument(span)
            .await
            .map_err(|e| match e.kind() {
                PublishErrorKind::MaxPayloadExceeded => failed(game_id, e),
                _ => unavailable(game_id, e),
            })
    }

    /// What became of a record sent: stored (where), refused as a conflict, or not known.
    async fn outcome(
        &self,
        game_id: &str,
        ack: jetstream::context::PublishAckFuture,
    ) -> Result<PublishOutcome, AppendError> {
        let ack = ack.await;
        match &ack {
            Err(e) if e.kind() == PublishErrorKind::TimedOut => self.unacknowledged(),
            _ => self.lock_silent_leader().answered(),
        }
        match ack {
            Ok(ack) if ack.duplicate => Ok(PublishOutcome::Conflict),
            Ok(ack) => Ok(PublishOutcome::Stored(ack.sequence)),
            Err(e)
                if matches!(
                    e.kind(),
                    PublishErrorKind::WrongLastSequence | PublishErrorKind::WrongLastMessageId
                ) =>
            {
                Ok(PublishOutcome::Conflict)
            }
            // Unknown outcome: the record may or may not be stored. The caller does not ack the
            // observation; the next attempt catches up first and so sees it if it was stored.
            Err(e)
                if matches!(
                    e.kind(),
                    PublishErrorKind::TimedOut
                        | PublishErrorKind::StreamNotFound
                        | PublishErrorKind::BrokenPipe
                ) =>
            {
                Err(unavailable(game_id, e))
            }
            Err(e) => Err(failed(game_id, e)),
        }
    }

    fn lock_silent_leader(&self) -> std::sync::MutexGuard<'_, SilentLeader> {
        self.silent_leader
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// An append got no acknowledgement: when appends have gone unacknowledged for longer than
    /// an election, asks the game log's leader to step down (without waiting for the answer).
    fn unacknowledged(&self) {
        let mut silent_leader = self.lock_silent_leader();
        let Some(silent_for) = silent_leader.unanswered(std::time::Instant::now()) else {
            return;
        };
        tracing::warn!(
            appends = silent_leader.count(),
            "the game log's leader has acknowledged no append for {} s: asking it to step down \
             (a nats-server 2.9 leader can stop acknowledging after a network partition heals)",
            silent_for.as_secs()
        );
        self.ask_leader_to_step_down();
    }

    /// Asks the game log's leader to step down, without waiting for the answer.
    fn ask_leader_to_step_down(&self) {
        crate::metrics::leader_step_down_asked(GAMES_STREAM);
        let js = self.js.clone();
        tokio::spawn(async move {
            match boardcast_kit::nats::step_down_stream_leader(&js, GAMES_STREAM).await {
                Ok(()) => {
                    tracing::info!("the game log's leader stepped down; a new one is elected")
                }
                Err(e) => tracing::warn!("{e:#}"),
            }
        });
    }

    /// Whether the log holds anything on `subject` after `seq`; if so, catches up (in the
    /// writer's turn, reading up to `direct` records message by message). Taken outside the
    /// turn, so that decisions that produce nothing do not wait for appends; a catch-up another
    /// decision made meanwhile is not made again.
    async fn fold_news_after(
        &self,
        seq: u64,
        subject: &str,
        direct: u64,
    ) -> Result<bool, ReadError> {
        let news = next_message(&self.checks, seq + 1, subject)
            .await
            .map_err(|e| ReadError::Log(e.to_string()))?
            .map(|m| m.sequence);
        let Some(news) = news else {
            return Ok(false);
        };
        let turn = self.turn().await;
        if self.read().folded_seq() < news {
            self.catch_up_alone_reading(&turn, direct).await?;
        }
        Ok(true)
    }

    /// [`Store::catch_up`] in the writer's turn alone: nothing of this instance's is in flight,
    /// so whatever was stored of its records of unknown fate is folded after it.
    async fn catch_up_alone(&self, alone: &Turn<'_>) -> Result<(), ReadError> {
        self.catch_up_alone_reading(alone, DIRECT_CATCH_UP).await
    }

    /// [`Store::catch_up_alone`], reading up to `direct` records message by message.
    async fn catch_up_alone_reading(&self, alone: &Turn<'_>, direct: u64) -> Result<(), ReadError> {
        self.catch_up_reading(direct).await?;
        self.lock_in_flight().caught_up_alone();
        self.read_again_when_due(alone).await;
        Ok(())
    }

    /// Reads the games behind the log again whose turn it is: another instance may be the one
    /// deciding a game's observations, and then no append here would.
    async fn read_again_when_due(&self, alone: &Turn<'_>) {
        let behind = self.read().behind();
        for (game_id, _) in behind {
            self.read_again_if_due(alone, &game_id).await;
        }
    }

    /// Whether game `game_id`, behind, is due to be read again (see `read_again_at`).
    fn read_again_due(&self, game_id: &str) -> bool {
        self.lock_read_again_at()
            .get(game_id)
            .is_none_or(|&at| at <= std::time::Instant::now())
    }

    /// Reads game `game_id` again if it is due, and sets when it is next.
    async fn read_again_if_due(&self, alone: &Turn<'_>, game_id: &str) {
        if !self.read_again_due(game_id) {
            return;
        }
        let now = std::time::Instant::now();
        let pause = match self.read_again_counted(alone, game_id).await {
            Ok(()) => None,
            Err(Unread::Missing(e) | Unread::Unreadable(e)) => {
                tracing::warn!(game = %game_id, "{e}");
                Some(READ_AGAIN_MISSING)
            }
            Err(Unread::ForGood(e)) => {
                tracing::error!(game = %game_id, "{e}");
                Some(READ_AGAIN_BROKEN)
            }
            Err(Unread::Unfoldable(e)) => {
                tracing::error!(game = %game_id, "{e}");
                Some(READ_AGAIN_UNFOLDABLE)
            }
        };
        let mut read_again_at = self.lock_read_again_at();
        match pause {
            Some(pause) => read_again_at.insert(game_id.to_owned(), now + pause),
            None => read_again_at.remove(game_id),
        };
    }

    fn lock_read_again_at(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, std::time::Instant>> {
        self.read_again_at
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// [`Store::read_game_again`], counted by outcome. A game read whole that was broken, or
    /// that holds fewer records than before (an operator removed some), has its board added
    /// to [`Store::mended_boards`]: observations given up, or decided into the records removed,
    /// are decided again.
    async fn read_again_counted(&self, alone: &Turn<'_>, game_id: &str) -> Result<(), Unread> {
        let folded_afresh = |games: &Games| games.get(game_id).map(|e| e.folded_afresh);
        let (was_broken, folded_before) = {
            let games = self.read();
            (games.is_broken(game_id), folded_afresh(&games))
        };
        let read_again = self.read_game_again(alone, game_id).await;
        let judged = self
            .missing_since
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .judge(game_id, read_again, std::time::Instant::now());
        // Counted as judged: a record missing for long counts as broken for good.
        crate::metrics::game_read_again(match &judged {
            Ok(()) => "whole",
            Err(Unread::Missing(_)) => "missing",
            Err(Unread::Unreadable(_)) => "unreadable",
            Err(Unread::ForGood(_)) => "forked",
            Err(Unread::Unfoldable(_)) => "unfoldable",
        });
        let mended = judged.is_ok() && {
            let games = self.read();
            was_broken || folded_before.is_some_and(|before| folded_afresh(&games) != Some(before))
        };
        let mended_board = mended.then(|| self.read().board_of_live(game_id)).flatten();
        match (&judged, mended_board) {
            (Err(Unread::ForGood(reason)), _) => self.write().put_broken(game_id, reason),
            (Ok(()), Some(board)) => {
                tracing::info!(game = %game_id, %board, "the game's log was mended: deciding the board's observations given up or removed meanwhile");
                let now = std::time::Instant::now();
                let mut mended = self
                    .mended
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                mended.retain(|_, at| now.saturating_duration_since(*at) < MENDED_KEPT);
                mended.insert(board, now);
                self.mended_signal.send_modify(|changes| *changes += 1);
            }
            _ => {}
        }
        judged
    }

    /// The boards whose games' logs were found mended (see `Stuck::Broken`) in the last
    /// `MENDED_KEPT`, and when: the observations given up while a log was broken are decided
    /// then, without waiting for the board's next one (a finished game's board may send none).
    pub fn mended_boards(&self) -> Vec<(String, std::time::Instant)> {
        self.mended
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .iter()
            .filter(|(_, at)| at.elapsed() < MENDED_KEPT)
            .map(|(board, at)| (board.clone(), *at))
            .collect()
    }

    /// Changes whenever a board is found mended (see [`Store::mended_boards`]).
    pub fn mended_signal(&self) -> tokio::sync::watch::Receiver<u64> {
        self.mended_signal.subscribe()
    }

    /// Reads the games whose logs were found broken again, those whose turn it is (every
    /// `READ_AGAIN_BROKEN`): an operator may have mended one while nothing was appended here
    /// (the reads at catch-ups) and its board sent nothing (the read before each observation).
    pub async fn read_broken_again(&self) {
        let due: Vec<String> = self
            .read()
            .broken()
            .into_iter()
            .map(|(game_id, _)| game_id)
            .filter(|game_id| self.read_again_due(game_id))
            .collect();
        if due.is_empty() {
            return;
        }
        let turn = self.turn().await;
        for game_id in due {
            self.read_again_if_due(&turn, &game_id).await;
        }
    }

    /// Looks whether the next `count` games live on their boards (in turn, by id) still end in
    /// the log where they were folded here, and reads one again that does not, twice at least
    /// `MOVED_CONFIRMED` apart. An operator's
    /// removal of records this instance folded (`boardcast fork cut`, or `fork keep` of another
    /// branch) appends nothing: without this, an instance that never found the log broken
    /// would notice only at the game's next append, which a finished game's board may never
    /// cause, and the observations decided into the records removed would stay undecided.
    pub async fn look_at_games(&self, count: usize) {
        let next: Vec<String> = {
            let mut live = self.read().live_following();
            live.sort_unstable();
            self.looked_moved
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .retain(|game_id, _| live.binary_search(game_id).is_ok());
            let mut last = self
                .looked_at_last
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            let start = live.partition_point(|g| g <= &*last);
            let next: Vec<String> = live
                .iter()
                .cycle()
                .skip(start)
                .take(count.min(live.len()))
                .cloned()
                .collect();
            if let Some(g) = next.last() {
                last.clone_from(g);
            }
            next
        };
        for game_id in next {
            let as_folded = self.ends_as_folded(&game_id).await;
            let moved_since = {
                let mut moved = self
                    .looked_moved
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                match as_folded {
                    // NATS away: looked at on the next round.
                    None => continue,
                    Some(true) => {
                        moved.remove(&game_id);
                        continue;
                    }
                    Some(false) => *moved
                        .entry(game_id.clone())
                        .or_insert_with(std::time::Instant::now),
                }
            };
            if moved_since.elapsed() < MOVED_CONFIRMED {
                continue;
            }
            // Looked at again in the writer's turn, one game at a time: appends wait for that
            // game only, and only when its end still looks different.
            let turn = self.turn().await;
            match self.check_last_record(&game_id).await {
                Ok(LastRecord::Other { .. }) => self.read_again_if_due(&turn, &game_id).await,
                Ok(LastRecord::AsFolded) => {}
                Err(e) => {
                    tracing::debug!(game = %game_id, "looking at the game's end in the log: {e}")
                }
            }
            drop(turn);
            self.looked_moved
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .remove(&game_id);
        }
    }

    /// Whether game `game_id`'s subject ends where it was folded here (its last record the
    /// one folded, or where the subject was seen to end: a record skipped as bad, or an end
    /// nats-server 2.9 no longer finds, see `check_last_record`), or on one newer than all that
    /// is folded (another instance's, read at the next catch-up), at one lookup without the
    /// writer's turn. `None`: NATS did not answer.
    async fn ends_as_folded(&self, game_id: &str) -> Option<bool> {
        let last = self.last_on_subject(game_id).await.ok()?;
        let games = self.read();
        let Some(entry) = games.get(game_id) else {
            return Some(true);
        };
        Some(match last {
            None => entry.last_stream_seq == 0,
            Some(last) => {
                last.sequence > games.folded_seq()
                    || last.sequence == entry.last_stream_seq
                    || GameEventRecord::decode(last.payload.as_ref())
                        .is_ok_and(|r| entry.game.chain_head() == r.hash.as_slice())
            }
        })
    }

    /// A catch-up went past stream sequences it was not given (see `passed_over_at`).
    fn passed_over(&self) {
        *self
            .passed_over_at
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(std::time::Instant::now());
    }

    /// Within `PASSED_OVER_DOUBT` of a pass-over, checks that game `game_id`'s last record in
    /// the log is the one folded here. On nats-server 2.9, after a node was killed, a leader was
    /// seen to answer that a record was removed that the log then held: a game whose record was
    /// passed over that way, with nothing of it read since, would be decided on without it and
    /// its log forked. Such a game is put behind (read again before anything is appended).
    async fn verify_last_record(&self, game_id: &str) -> Result<(), AppendError> {
        let in_doubt = self
            .passed_over_at
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .is_some_and(|at| at.elapsed() < PASSED_OVER_DOUBT);
        if !in_doubt {
            return Ok(());
        }
        match self.check_last_record(game_id).await? {
            LastRecord::AsFolded => Ok(()),
            LastRecord::Other { at } => Err(AppendError::Unavailable {
                game_id: game_id.to_owned(),
                reason: format!(
                    "its last record in the log (stream sequence {at}) is not the one folded \
                     here; reading its log again"
                ),
            }),
        }
    }

    /// Whether game `game_id`'s last record in the log is the one folded here; when it is not,
    /// the game is put behind (read again before anything is appended to it).
    async fn check_last_record(&self, game_id: &str) -> Result<LastRecord, AppendError> {
        let last = self
            .last_on_subject(game_id)
            .await
            .map_err(|e| unavailable(game_id, e))?
            .map(|m| (m.sequence, m.payload));
        // nats-server 2.9 finds no last message on a subject whose last messages were removed
        // (an operator's `boardcast fork cut`), and its per-subject check then refuses every
        // expected end but 0, until a message is stored on the subject again. A game folded
        // here is then looked for by reading its subject, and its appends leave that check out
        // (the stream-level one stays) until one is stored.
        let (last, lookup_lost) = match last {
            None if self.read().get(game_id).is_some() => {
                let read = game_log::game_records(&self.checks, game_id, u64::MAX)
                    .await
                    .map_err(|e| unavailable(game_id, e))?;
                (read.into_iter().last(), true)
            }
            last => (last, false),
        };
        let folded_seq = self.read().folded_seq();
        if last.as_ref().is_some_and(|(seq, _)| *seq > folded_seq) {
            // Newer than what is folded: the append, expecting `folded_seq`, is refused anyway.
            return Ok(LastRecord::AsFolded);
        }
        let head_in_log = last
            .as_ref()
            .and_then(|(_, payload)| GameEventRecord::decode(payload.as_ref()).ok())
            .map(|record| record.hash);
        let mut games = self.write();
        let entry = games.get(game_id);
        if let (Some((seq, payload)), Some(entry)) = (&last, entry)
            && *seq == entry.last_stream_seq
            && skipped_as_bad(payload, game_id, entry.game.last_game_seq())
        {
            // Where the game's subject was seen to end, on a record skipped here as bad in
            // itself (a forgery, say): nothing of the game was missed.
            return Ok(LastRecord::AsFolded);
        }
        let head_here = entry.map(|e| e.game.chain_head().to_vec());
        if head_in_log == head_here {
            // The same record: where the subject ends is taken from the log (the record was
            // stored twice, say), or left unknown (0) while the server's lookup lost it.
            if let Some((seq, _)) = &last {
                games.set_game_end(game_id, if lookup_lost { 0 } else { *seq });
            }
            return Ok(LastRecord::AsFolded);
        }
        let at = last.map_or(folded_seq, |(seq, _)| seq);
        games.put_behind(game_id, at);
        drop(games);
        tracing::warn!(
            game = %game_id,
            stream_seq = at,
            "the game's last record in the log is not the one folded here: reading its log again"
        );
        Ok(LastRecord::Other { at })
    }

    /// Refuses to append to game `game_id` while its records as read here do not follow on
    /// (after reading them again): the decision would be made on a game missing a record, and
    /// its records written beside it.
    async fn read_again_if_behind(
        &self,
        alone: &Turn<'_>,
        game_id: &str,
    ) -> Result<(), AppendError> {
        if self.read().behind_from(game_id).is_none() {
            return Ok(());
        }
        self.read_again_counted(alone, game_id)
            .await
            .map_err(|unread| match unread {
                // For good: only an operator can mend a forked log,
                Unread::ForGood(reason) => AppendError::LogBroken {
                    game_id: game_id.to_owned(),
                    reason,
                },
                // only a service without the bug fold a record that folding panics on.
                Unread::Unfoldable(reason) => AppendError::Unfoldable {
                    game_id: game_id.to_owned(),
                    reason,
                },
                Unread::Missing(reason) | Unread::Unreadable(reason) => AppendError::Unavailable {
                    game_id: game_id.to_owned(),
                    reason,
                },
            })
    }

    /// Reads game `game_id`'s records again, one by one from the log's leader up to what is
    /// folded, and folds them afresh. Its records as first read did not follow on: a consumer,
    /// or a leader newly elected, can leave a record out (seen on nats-server 2.9 after a node
    /// was killed while the log was written), and what another reader delivers later may be
    /// whole. An error when they still do not follow on (a record still missing, or the log
    /// holds two records with one number: forked).
    async fn read_game_again(&self, _alone: &Turn<'_>, game_id: &str) -> Result<(), Unread> {
        let Some(from) = self.read().behind_from(game_id) else {
            return Ok(());
        };
        let up_to = self.read().folded_seq();
        let records: Vec<(u64, Vec<u8>)> = game_log::game_records(&self.stream, game_id, up_to)
            .await
            .map_err(|e| Unread::Unreadable(e.to_string()))?
            .into_iter()
            .map(|(seq, payload)| (seq, payload.to_vec()))
            .collect();
        let forked = boardcast_game::fork_point(&boardcast_game::trusted_records_of(
            game_id,
            &records,
            &self.trusted_keys(),
        ));
        self.write()
            .refolded(game_id, records)
            .map_err(|not_refolded| match not_refolded {
                NotRefolded::Panicked(reason) => Unread::Unfoldable(reason),
                NotRefolded::DoesNotFollowOn(e) => {
                    let reason = format!(
                        "the log of game {game_id} does not follow on from stream sequence \
                         {from}, read again: {e}; nothing is appended to it here until it does"
                    );
                    match forked {
                        Some(game_seq) => Unread::ForGood(format!(
                            "{reason} (it holds two records numbered {game_seq}: forked; an \
                             operator keeps one branch, see boardcast fork show {game_id})"
                        )),
                        None => Unread::Missing(reason),
                    }
                }
            })?;
        tracing::warn!(game = %game_id, from, "the game's log, read again whole, follows on: folded afresh");
        Ok(())
    }

    /// Folds every record after `folded_seq` up to the stream's current last sequence.
    /// Called by the writer's turn holder only (and at load).
    async fn catch_up(&self) -> Result<(), ReadError> {
        self.catch_up_reading(DIRECT_CATCH_UP).await
    }

    /// [`Store::catch_up`], reading up to `direct` records message by message.
    async fn catch_up_reading(&self, direct: u64) -> Result<(), ReadError> {
        let info = self
            .stream
            .get_info()
            .await
            .map_err(|e| ReadError::Log(e.to_string()))?;
        let last = info.state.last_sequence;
        let folded_seq = self.read().folded_seq();
        if last <= folded_seq {
            return Ok(());
        }
        if last - folded_seq <= direct {
            // Read first and folded together: readers see other instances' decisions whole.
            let mut read = Vec::new();
            for seq in folded_seq + 1..=last {
                match self.stream.get_raw_message(seq).await {
                    Ok(message) => read.push((Some(message.payload), seq)),
                    Err(e)
                        if e.kind() == jetstream::stream::RawMessageErrorKind::NoMessageFound =>
                    {
                        read.push((None, seq));
                    }
                    Err(e) => return Err(ReadError::Log(format!("stream sequence {seq}: {e}"))),
                }
            }
            let missing: Vec<u64> = read
                .iter()
                .filter(|(payload, _)| payload.is_none())
                .map(|&(_, seq)| seq)
                .collect();
            if !missing.is_empty() {
                self.confirm_removed(missing).await?;
                self.passed_over();
            }
            let mut games = self.write();
            for (payload, seq) in read {
                match payload {
                    Some(payload) => games.fold(&payload, seq),
                    None => games.skip_to(seq),
                }
            }
            return Ok(());
        }
        let messages = game_log::read_from(&self.stream, GAMES_SUBJECTS, folded_seq + 1)
            .await
            .map_err(|e| ReadError::Log(e.to_string()))?;
        let mut messages = std::pin::pin!(messages);
        while self.read().folded_seq() < last {
            // Whoever holds the writer's turn for the catch-up must not wait for NATS forever.
            let next = tokio::time::timeout(CATCH_UP_STALL, messages.next())
                .await
                .map_err(|_| {
                    ReadError::Log(format!(
                        "the log stopped coming for {} s; catching up again later",
                        CATCH_UP_STALL.as_secs()
                    ))
                })?;
            let Some(message) = next else {
                return Err(ReadError::Log("the log ended early".into()));
            };
            self.note_leader_lacking(&message);
            let message = message.map_err(|e| ReadError::Log(e.to_string()))?;
            // What the reader passed over was removed (`game_log` checks it).
            let (seq, pending) = (message.stream_seq, message.pending);
            if seq > self.read().folded_seq().saturating_add(1) {
                self.passed_over();
            }
            self.write().fold(&message.payload, seq);
            if pending == 0 && seq < last {
                // Nothing after it, though the stream's last sequence is further.
                self.confirm_removed(seq + 1..=last).await?;
                self.passed_over();
                self.write().skip_to(last);
            }
        }
        Ok(())
    }

    /// [`game_log::confirm_removed`]: a catch-up goes past a record not delivered only once
    /// the stream confirms it removed, else it is made again later.
    async fn confirm_removed(&self, seqs: impl IntoIterator<Item = u64>) -> Result<(), ReadError> {
        // A record listed as deleted from within the log is taken as removed only after a
        // while: a leader that lost records lists them so too (and is asked to step down
        // meanwhile, see `note_leader_lacking`).
        let confirmed =
            game_log::confirm_removed(&self.stream, seqs, game_log::deleted_for_good).await;
        self.note_leader_lacking(&confirmed);
        confirmed.map_err(|e| ReadError::Log(e.to_string()))
    }

    /// Keeps track of how long the log's leader has been lacking a record the log keeps; past
    /// `LACKING_LEADER`, asks it to step down (at most every `LACKING_STEP_DOWN_EVERY`): a
    /// replica whose store lost records stays without them, and every reader waits on it while
    /// it leads.
    fn note_leader_lacking<T>(&self, read: &Result<T, game_log::LogError>) {
        let mut lacking = self
            .leader_lacking
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let Err(game_log::LogError::NotDelivered(seq)) = read else {
            lacking.since = None;
            return;
        };
        let now = std::time::Instant::now();
        let since = *lacking.since.get_or_insert(now);
        let asked_lately = lacking
            .asked_at
            .is_some_and(|at| now.duration_since(at) < LACKING_STEP_DOWN_EVERY);
        if now.duration_since(since) < LACKING_LEADER || asked_lately {
            return;
        }
        lacking.asked_at = Some(now);
        tracing::warn!(
            record = seq,
            "the game log's leader has lacked a record the log keeps for {} s: asking it to step \
             down",
            now.duration_since(since).as_secs()
        );
        self.ask_leader_to_step_down();
    }

    /// What a snapshot needs: the games changed since the last one (all of them when `all`), and
    /// the log position they are folded up to.
    pub(crate) async fn take_changes(&self, all: bool) -> Option<SnapshotData> {
        // Not from games that a panic may have left different from the log (see
        // `games_poisoned`): checked under the same lock, so no fold can panic in between.
        self.games.write().ok()?.take_changes(all)
    }
}

/// How long a game's end in the log must keep looking moved before it is read again (see
/// `Store::looked_moved`).
const MOVED_CONFIRMED: std::time::Duration = std::time::Duration::from_secs(10);

/// How long a board found mended is kept for the partitions' consumers (see
/// `Store::mended_boards`): longer than one takes to start, or a standby to take over.
const MENDED_KEPT: std::time::Duration = std::time::Duration::from_secs(600);

/// How soon a game behind the log is read again while a record is missing (a leader catching
/// up, or replaced, within seconds); once its log was found broken (it stays so until an
/// operator mends it, and then its board should go on within seconds, as the broadcast and the
/// arbiters' dashboards do); and once a record of it was found unfoldable (until a service
/// without the bug reads it, which a restart does at once).
const READ_AGAIN_MISSING: std::time::Duration = std::time::Duration::from_secs(1);
const READ_AGAIN_BROKEN: std::time::Duration = std::time::Duration::from_secs(10);
const READ_AGAIN_UNFOLDABLE: std::time::Duration = std::time::Duration::from_secs(60);

/// See `Store::note_leader_lacking`.
#[derive(Default)]
struct LeaderLacking {
    since: Option<std::time::Instant>,
    asked_at: Option<std::time::Instant>,
}

/// How long the log's leader may lack a record the log keeps before it is asked to step down
/// (longer than a newly elected leader takes to apply what it has), and how often at most.
const LACKING_LEADER: std::time::Duration = std::time::Duration::from_secs(10);
const LACKING_STEP_DOWN_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

/// How long after a catch-up went past sequences it was not given appends verify their game's
/// last record in the log: longer than a node takes to be restarted and caught up.
const PASSED_OVER_DOUBT: std::time::Duration = std::time::Duration::from_secs(300);

/// How long a game may stay behind the log with a record missing when read again before
/// decisions on it fail (and its observations go to the dead-letter stream) rather than hold its
/// partition up: longer than a leader takes to be elected and catch up.
const BEHIND_FOR_GOOD: std::time::Duration = std::time::Duration::from_secs(120);

/// Since when each game behind the log has been found missing a record, read again while NATS
/// could be read: what turns a record missing for long into one missing for good.
#[derive(Default)]
struct MissingSince(std::collections::HashMap<String, std::time::Instant>);

impl MissingSince {
    /// The outcome of reading game `game_id` again at `now`, with a record still missing for
    /// longer than `BEHIND_FOR_GOOD` taken as missing for good. NATS away says nothing of the
    /// record: the clock starts again once the log can be read, so an outage, however long, is
    /// waited out (as everywhere in ingest) rather than taken as a lost record.
    fn judge(
        &mut self,
        game_id: &str,
        read_again: Result<(), Unread>,
        now: std::time::Instant,
    ) -> Result<(), Unread> {
        match read_again {
            Err(Unread::Missing(reason)) => {
                let since = *self.0.entry(game_id.to_owned()).or_insert(now);
                if now.saturating_duration_since(since) > BEHIND_FOR_GOOD {
                    return Err(Unread::ForGood(format!(
                        "{reason}, for over {} s: taken as for good",
                        BEHIND_FOR_GOOD.as_secs()
                    )));
                }
                Err(Unread::Missing(reason))
            }
            other => {
                self.0.remove(game_id);
                other
            }
        }
    }
}

/// Why a game's log, read again, still does not fold.
#[derive(Debug)]
enum Unread {
    /// A record is still missing from what the log's leader gives.
    Missing(String),
    /// The log cannot be read now (NATS away): nothing is known of the record.
    Unreadable(String),
    /// For good: the log holds two records with one number, or a record has been missing for
    /// longer than `BEHIND_FOR_GOOD`.
    ForGood(String),
    /// Folding one of the game's records panicked (a bug): only a service without the bug can
    /// fold it.
    Unfoldable(String),
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
    if snapshot.folded_seq == 0 {
        return Ok(Games::new(trusted));
    }
    let (folded_seq, last_game) = (snapshot.folded_seq, snapshot.last_game.clone());
    let tail = snapshot
        .games
        .iter()
        .find(|g| g.game_id == last_game)
        .and_then(|g| g.records.last().cloned());
    let games = Games::from_snapshot(snapshot, trusted)?;
    if !last_game.is_empty() {
        let stored = stream
            .get_raw_message(folded_seq)
            .await
            .map_err(|e| format!("stream sequence {folded_seq}: {e}"))?;
        if Some(stored.payload.as_ref()) != tail.as_deref() {
            return Err(format!(
                "the log's record at sequence {folded_seq} is not the snapshot's"
            ));
        }
    }
    Ok(games)
}
/// Whether the nats-server of version `version` (as it reports it, e.g. `2.9.10`) may be sent
/// records in the pipeline: nats-server 2.9 refuses a record whose expected last message id does
/// not match, like any conflict, where it applies it on each replica. nats-server 2.15 (as the
/// tests show) takes the same mismatch on a replicated stream as a write error and stops the
/// stream until its replicas are restored, so later servers are sent one decision at a time.
fn pipelines_safely(version: &str) -> bool {
    let mut numbers = version.trim_start_matches('v').split('.');
    numbers.next() == Some("2") && numbers.next() == Some("9")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_taken_as_missing_for_good_only_after_missing_while_the_log_could_be_read() {
        let t0 = std::time::Instant::now();
        let mut clock = MissingSince::default();
        let missing = || Err(Unread::Missing("record 7 missing".to_owned()));
        let unreadable = || Err(Unread::Unreadable("no responders".to_owned()));
        // What the clock makes of game `game`, read again at `secs` as `read`.
        let mut judge = |game: &str, read: Result<(), Unread>, secs: u64| match clock.judge(
            game,
            read,
            t0 + std::time::Duration::from_secs(secs),
        ) {
            Ok(()) => "whole",
            Err(Unread::Missing(_)) => "missing",
            Err(Unread::Unreadable(_)) => "unreadable",
            Err(Unread::ForGood(_)) => "for good",
            Err(Unread::Unfoldable(_)) => "unfoldable",
        };
        assert_eq!(judge("g", missing(), 0), "missing");
        assert_eq!(judge("g", missing(), 100), "missing");
        // NATS away for ten minutes: waited out, and the clock starts again after it.
        for secs in (110..710).step_by(60) {
            assert_eq!(judge("g", unreadable(), secs), "unreadable");
        }
        assert_eq!(judge("g", missing(), 720), "missing");
        assert_eq!(judge("g", missing(), 830), "missing");
        assert_eq!(judge("g", missing(), 841), "for good");
        // Another game has a clock of its own; a game read whole is off the clock.
        assert_eq!(judge("h", missing(), 841), "missing");
        assert_eq!(judge("h", Ok(()), 900), "whole");
        assert_eq!(judge("h", missing(), 1000), "missing");
        // A record that folding panics on is no record missing: it is not put on the clock.
        let unfoldable = || Err(Unread::Unfoldable("folding it panicked".to_owned()));
        assert_eq!(judge("u", unfoldable(), 0), "unfoldable");
        assert_eq!(judge("u", unfoldable(), 1000), "unfoldable");
    }

    #[test]
    fn only_nats_server_2_9_gets_records_in_the_pipeline() {
        assert!(pipelines_safely("2.9.10"));
        assert!(pipelines_safely("v2.9.25"));
        assert!(!pipelines_safely("2.15.1"));
        assert!(!pipelines_safely("2.10.0"));
        assert!(!pipelines_safely("2.90.0"));
        assert!(!pipelines_safely(""));
    }
}

//! The game log and the games folded from it: every change is fetch → decide → append → fold.
//!
//! One file on purpose: its locks (`games`, `turns`, `appends`, `witness`), what each guards and
//! the order they are taken in are checked here, read together.
//!
//! Each game's log is its own subject of `BOARDCAST_GAMES`. A decision is made on the game as
//! folded here and its records are appended expecting the game's subject to end where this
//! instance folded it (`Nats-Expected-Last-Subject-Sequence`), which the server checks on the
//! stream's leader: two decisions made on one state of a game never both land, whichever
//! instances made them. A refusal means the game moved: its new records are read and folded,
//! and the decision is made again.
//!
//! On a replicated log (a hall's three nodes) a decision of several records is one atomic batch
//! (nats-server 2.12+, `allow_atomic`), stored whole or not at all. On a single server
//! nats-server stages each atomic batch in a file store of its own, which cost it about 2 ms of
//! CPU a batch here and made a live hall of 1,000 boards wait seconds (docs/ingest-benchmark.md),
//! so there each record follows the one before, expecting it; a decision stored in part (the
//! service stopped between two records) is completed when its observation is delivered again
//! ([`Store::complete_last_decision`]). Decisions on different games append concurrently; decisions on one game are
//! made one after another here (its turn), so that they do not refuse each other.
//!
//! A decision that appends nothing (most clock readings) stands only if the state it was made on
//! holds every record stored before its observation was: when this instance folded the whole
//! log up to one of its own appends sent after that moment (a busy hall has many), or else when
//! the game's subject still ends where it was made (one lookup on the stream's leader, which
//! costs the server a search of the game's records).
//!
//! Every instance also follows the whole stream with one ordered consumer ([`Store::follow`]),
//! folding what other instances append. Folding is idempotent per game (`games`), so a record
//! this instance appended and folded is skipped when the follower reads it.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;

use async_nats::jetstream::{
    self, context::PublishErrorKind, message::PublishMessage, stream::Stream,
};
use boardcast_game::events::{GameEvent, GameEventRecord, GameState, LogNotFollowed};
use boardcast_game::signing::{PublicKey, RecordSigner, TrustedKeys};
use boardcast_game::{Game, NewEvent};
use boardcast_kit::game_log;
use boardcast_kit::nats::{GAMES_STREAM, GAMES_SUBJECTS, game_subject};
use futures::StreamExt;
use prost::Message as _;
use tracing::Instrument as _;

use crate::games::{Entry, Games, Signature};
use crate::snapshot::SnapshotData;

/// How many times one decision is made again after its game moved before giving up (the
/// observation is then delivered again later).
const MAX_ATTEMPTS: usize = 20;

/// How long waiting for the follower to fold what the log held may take.
const SYNC_WITHIN: Duration = Duration::from_secs(10);

/// How long a decision that appends nothing waits for the follower to fold the log up to one of
/// this instance's appends before it asks the log instead.
const WITNESS_WAIT: Duration = Duration::from_millis(100);

/// The server's error code for an expected last (subject) sequence that does not hold.
const WRONG_LAST_SEQUENCE: u64 = 10071;

#[derive(Debug, thiserror::Error)]
pub enum AppendError {
    #[error("the log of game {0} kept changing under this decision; retry")]
    Conflict(String),
    /// The decision cannot be stored (a record NATS refuses).
    #[error("appending to the log of game {game_id}: {reason}")]
    Failed { game_id: String, reason: String },
    /// NATS did not answer or could not be read (no leader during an election, a timeout, the
    /// connection lost): nothing is wrong with the decision; it is tried again.
    #[error("appending to the log of game {game_id}: NATS is unavailable: {reason}")]
    Unavailable { game_id: String, reason: String },
    /// Nothing is decided on the game here: folding one of its records panicked (a bug).
    /// Trying again does not help; a service without the bug does.
    #[error("nothing is decided on game {game_id} here: {reason}")]
    Unfoldable { game_id: String, reason: String },
    /// Nothing is appended to the game: its log does not follow on (a record missing, or two
    /// with one number). An operator mends it (`boardcast fork`).
    #[error(
        "nothing is appended to game {game_id} until its log is mended (see boardcast fork show \
         {game_id}): {reason}"
    )]
    LogBroken { game_id: String, reason: String },
}

fn unavailable(game_id: &str, reason: impl ToString) -> AppendError {
    AppendError::Unavailable {
        game_id: game_id.to_owned(),
        reason: reason.to_string(),
    }
}

fn failed(game_id: &str, reason: impl ToString) -> AppendError {
    AppendError::Failed {
        game_id: game_id.to_owned(),
        reason: reason.to_string(),
    }
}

/// What a decision made of the folded state.
enum Decision<T> {
    /// Nothing to append: `outcome` is the answer, if the game has not moved meanwhile.
    Nothing(T),
    /// `records` continue the game's chain; `outcome` once they are stored.
    Append {
        records: Vec<GameEventRecord>,
        outcome: T,
    },
    /// The board's live game is no longer the one whose turn was taken: look again.
    BoardMoved,
}

/// What became of an append.
enum Appended {
    /// Stored, each record at the stream sequence given in order.
    Stored(Vec<u64>),
    /// Refused: the game's subject does not end where the decision was made.
    Moved,
}

pub struct Store {
    /// Appends, and the JetStream API.
    js: jetstream::Context,
    /// The games stream, for reads.
    stream: Stream,
    /// The games as folded so far. Locked only for moments and never across a NATS call, so a
    /// read (GetGame, a claim, a list) never waits for an append in progress.
    games: std::sync::RwLock<Games>,
    /// Each game's turn: decisions on one game are made one after another here, so that they
    /// do not refuse each other's appends. An entry lives while a decision holds or waits for it.
    turns: std::sync::Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// Signs every record this instance appends.
    signer: RecordSigner,
    /// When each append in flight began (keyed by a counter), for [`Store::busy_for`].
    appends: std::sync::Mutex<(u64, HashMap<u64, Instant>)>,
    /// The follower's position, for those waiting for it ([`Store::refresh`]).
    followed: tokio::sync::watch::Sender<u64>,
    /// Whether the log is replicated: a decision of several records is then one atomic batch,
    /// otherwise its records are appended one after the other (see the module comment).
    batches: bool,
    /// The latest-sent of this instance's appends that was stored: every record stored before
    /// it was sent lies below its stream sequence, so once the follower folded up to there,
    /// what is folded holds everything stored before that moment (see `Decision::Nothing`).
    witness: std::sync::Mutex<Option<Witness>>,
}

/// One of this instance's appends, stored.
#[derive(Clone, Copy)]
struct Witness {
    sent_at: Instant,
    /// The stream sequence of its last record.
    seq: u64,
}

/// A game's turn, given back when dropped.
struct Turn<'a> {
    store: &'a Store,
    game_id: String,
    _held: tokio::sync::OwnedMutexGuard<()>,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let mut turns = lock(&self.store.turns);
        // Nobody else holds or waits for it (the map and this turn keep the only two handles).
        if turns
            .get(&self.game_id)
            .is_some_and(|turn| Arc::strong_count(turn) <= 2)
        {
            turns.remove(&self.game_id);
        }
    }
}

/// An append in flight, counted by [`Store::busy_for`] until dropped.
struct InFlight<'a> {
    store: &'a Store,
    id: u64,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        lock(&self.store.appends).1.remove(&self.id);
    }
}

fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
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

    /// How long the oldest append in flight has been waiting for NATS, if one is.
    pub fn busy_for(&self) -> Option<Duration> {
        lock(&self.appends).1.values().min().map(Instant::elapsed)
    }

    /// Rebuilds every game: from the snapshot if there is a usable one, then from the log after
    /// the snapshot's stream sequence (the whole log without one). Also says whether the
    /// snapshot was used.
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
        let mut games = Games::new(trusted.clone());
        let mut used = false;
        if let Some(snapshot) = snapshot {
            match Games::from_snapshot(snapshot, trusted) {
                Ok(restored) => {
                    games = restored;
                    used = true;
                }
                Err(e) => tracing::warn!("not using the snapshot, rebuilding from the log: {e}"),
            }
        }
        let folded_seq = games.folded_seq();
        let batches = stream.cached_info().config.num_replicas > 1;
        let store = Store {
            batches,
            js,
            stream,
            games: std::sync::RwLock::new(games),
            turns: std::sync::Mutex::default(),
            signer,
            appends: std::sync::Mutex::default(),
            followed: tokio::sync::watch::Sender::new(folded_seq),
            witness: std::sync::Mutex::default(),
        };
        let last = store.log_end().await?;
        if last < folded_seq {
            // The snapshot is of a longer log than this one (another stream of that name).
            anyhow::ensure!(
                !used,
                "the snapshot was folded up to stream sequence {folded_seq}, but the game log ends \
                 at {last}: the log is another one (a new NATS store, or its streams in another \
                 NATS account after an upgrade: see the deployment guide, \"Upgrading \
                 boardcast\"); move the snapshot file (--snapshot) aside to start from this log"
            );
        }
        store.read_log_until(last).await?;
        // Games restored broken are folded afresh from their logs now: mended meanwhile, or
        // found broken again (and why) before anything is decided or read on them.
        let broken = store.read().broken_ids();
        for game_id in broken {
            store.read_again_if_changed(&game_id).await?;
        }
        Ok((store, used))
    }

    /// Folds the log from the follower's position up to stream sequence `last`.
    async fn read_log_until(&self, last: u64) -> anyhow::Result<()> {
        let from = self.read().folded_seq() + 1;
        if from > last {
            return Ok(());
        }
        let mut messages = game_log::read_from(&self.stream, GAMES_SUBJECTS, from).await?;
        while let Some(message) = messages.next().await {
            let message = message?;
            self.follow_one(&message.subject, &message.payload, message.stream_seq);
            if message.stream_seq >= last || message.pending == 0 {
                break;
            }
        }
        Ok(())
    }

    fn follow_one(&self, subject: &str, payload: &[u8], stream_seq: u64) {
        self.write().follow(subject, payload, stream_seq);
        self.followed.send_replace(stream_seq);
    }

    /// Follows the whole log for as long as the service runs, folding what every instance
    /// appends (this one's own records are known already and skipped).
    pub async fn follow(self: Arc<Self>) {
        loop {
            let from = self.read().folded_seq() + 1;
            match game_log::read_from(&self.stream, GAMES_SUBJECTS, from).await {
                Ok(mut messages) => {
                    while let Some(message) = messages.next().await {
                        match message {
                            Ok(message) => self.follow_one(
                                &message.subject,
                                &message.payload,
                                message.stream_seq,
                            ),
                            Err(e) => {
                                tracing::warn!("following the game log: {e}");
                                break;
                            }
                        }
                    }
                }
                Err(e) => tracing::warn!("following the game log: {e}"),
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }

    /// The stream sequence of the game log's last record (0: empty).
    async fn log_end(&self) -> anyhow::Result<u64> {
        let mut stream = self.stream.clone();
        let info = stream
            .info()
            .await
            .map_err(|e| anyhow::anyhow!("reading the game log's state: {e}"))?;
        Ok(info.state.last_sequence)
    }

    /// Returns once the follower has folded every record the log held when asked: what other
    /// instances appended before is then known here.
    pub async fn refresh(&self) -> anyhow::Result<()> {
        let last = self.log_end().await?;
        let mut followed = self.followed.subscribe();
        tokio::time::timeout(SYNC_WITHIN, followed.wait_for(|&seq| seq >= last))
            .await
            .map_err(|_| {
                anyhow::anyhow!("the game log was not followed up to {last} within {SYNC_WITHIN:?}")
            })?
            .map_err(|e| anyhow::anyhow!("following the game log: {e}"))?;
        Ok(())
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

    /// Why nothing can be decided on the game live on `board_id`, when it is broken.
    /// Its log is looked at first (one lookup): once mended, the game is folded afresh and the
    /// board goes on.
    pub async fn broken_on_board(&self, board_id: &str) -> Option<AppendError> {
        let game_id = {
            let games = self.read();
            let game_id = games.live_id_on(board_id)?;
            games.broken(game_id)?;
            game_id.to_owned()
        };
        if let Err(e) = self.read_again_if_changed(&game_id).await {
            tracing::warn!(game = %game_id, "looking whether its log was mended: {e:#}");
        }
        broken_error(&self.read(), &game_id)
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
    /// The boards carrying a game, folded or not (its first record may be unfoldable).
    pub async fn boards_with_a_game(&self) -> std::collections::HashSet<String> {
        self.read()
            .boards_with_a_game()
            .map(str::to_owned)
            .collect()
    }

    pub async fn live_games<T>(&self, mut f: impl FnMut(&Game) -> T) -> Vec<T> {
        self.read().live().map(|e| f(&e.game)).collect()
    }

    /// Where the log of a round's games starts: the first record of the earliest of them this
    /// instance knows, or else the first record it has not folded yet.
    pub async fn round_start_seq(&self, tournament_id: &str, round: u32) -> u64 {
        self.read().round_start_seq(tournament_id, round)
    }

    pub async fn all_games<T>(&self, mut f: impl FnMut(&Game) -> Option<T>) -> Vec<T> {
        self.read().all().filter_map(|e| f(&e.game)).collect()
    }

    /// Whether the game log holds anything on game `game_id`'s subject (one lookup).
    pub async fn in_log(&self, game_id: &str) -> anyhow::Result<bool> {
        Ok(self.subject_end(game_id).await? > 0)
    }

    /// The games changed since the last snapshot (all when `all`), or `None` when nothing
    /// changed or a panic may have left them different from the log.
    pub(crate) async fn take_changes(&self, all: bool) -> Option<SnapshotData> {
        // Checked under the same lock, so no fold can panic in between.
        self.games.write().ok()?.take_changes(all)
    }

    /// The stream sequence of the last record on game `game_id`'s subject, as the stream's
    /// leader says (0: none).
    async fn subject_end(&self, game_id: &str) -> anyhow::Result<u64> {
        match self
            .stream
            .get_last_raw_message_by_subject(&game_subject(game_id))
            .await
        {
            Ok(message) => Ok(message.sequence),
            Err(e) if e.kind() == jetstream::stream::LastRawMessageErrorKind::NoMessageFound => {
                Ok(0)
            }
            Err(e) => Err(anyhow::anyhow!(
                "reading the end of game {game_id}'s log: {e}"
            )),
        }
    }

    async fn turn(&self, game_id: &str) -> Turn<'_> {
        let turn = lock(&self.turns)
            .entry(game_id.to_owned())
            .or_default()
            .clone();
        Turn {
            store: self,
            game_id: game_id.to_owned(),
            _held: turn.lock_owned().await,
        }
    }

    /// The one loop every change to the log goes through, in game `game_id`'s turn: decide on
    /// the folded state, append expecting the game's subject to end where the decision was made,
    /// and when the game moved, fold what it holds now and decide again. `stored_by`: a moment
    /// by which what is decided on (an observation) was stored; a decision that appends
    /// nothing must rest on every record stored before then.
    async fn decide_and_append<T>(
        &self,
        game_id: &str,
        stored_by: Instant,
        decide: impl Fn(&Games) -> Result<Decision<T>, AppendError>,
    ) -> Result<T, AppendError> {
        let _turn = self.turn(game_id).await;
        if self.read().broken(game_id).is_some() {
            self.read_again_if_changed(game_id)
                .await
                .map_err(|e| unavailable(game_id, e))?;
        }
        let mut witnessed_by = None;
        for _ in 0..MAX_ATTEMPTS {
            if self.games_poisoned() {
                // The service is stopping (see `main`); what waits is decided after the restart.
                return Err(unavailable(
                    game_id,
                    "a panic struck while games were being folded; the service is stopping",
                ));
            }
            let (decision, end, followed) = {
                let games = self.read();
                if let Some(e) = broken_error(&games, game_id) {
                    return Err(e);
                }
                let end = games.end_of(game_id);
                (decide(&games)?, end, games.folded_seq())
            };
            match decision {
                Decision::BoardMoved => return Err(AppendError::Conflict(game_id.to_owned())),
                Decision::Nothing(outcome) => {
                    // Witnessed: everything stored before `stored_by` was folded. The first
                    // witness found is kept: later ones lie further on.
                    if witnessed_by.is_none() {
                        witnessed_by = (*lock(&self.witness))
                            .filter(|w| w.sent_at >= stored_by)
                            .map(|w| w.seq);
                    }
                    if let Some(seq) = witnessed_by {
                        if followed.saturating_add(1) >= seq {
                            crate::metrics::nothing_decided("witnessed");
                            return Ok(outcome);
                        }
                        if self.wait_followed(seq - 1).await {
                            // Decided again on the state folded that far.
                            continue;
                        }
                    }
                    let now = self
                        .subject_end(game_id)
                        .await
                        .map_err(|e| unavailable(game_id, e))?;
                    if now == end {
                        crate::metrics::nothing_decided("asked");
                        return Ok(outcome);
                    }
                }
                Decision::Append { records, outcome } => {
                    match self.append(game_id, &records, end).await? {
                        Appended::Stored(seqs) => {
                            self.fold_own(game_id, &records, &seqs);
                            return Ok(outcome);
                        }
                        Appended::Moved => {}
                    }
                }
            }
            crate::metrics::append_conflict();
            let refolded = self
                .catch_up_game(game_id, end)
                .await
                .map_err(|e| unavailable(game_id, e))?;
            if refolded {
                // Records the caller may have looked at were removed (the gap before an
                // observation): it looks again.
                return Err(AppendError::Conflict(game_id.to_owned()));
            }
        }
        Err(AppendError::Conflict(game_id.to_owned()))
    }

    /// Waits, at most `WITNESS_WAIT`, until the follower has folded the log up to `seq`.
    async fn wait_followed(&self, seq: u64) -> bool {
        let mut followed = self.followed.subscribe();
        matches!(
            tokio::time::timeout(WITNESS_WAIT, followed.wait_for(|&f| f >= seq)).await,
            Ok(Ok(_))
        )
    }

    /// Folds records this instance just stored, at the stream sequences `seqs`.
    fn fold_own(&self, game_id: &str, records: &[GameEventRecord], seqs: &[u64]) {
        let mut games = self.write();
        for (record, &seq) in records.iter().zip(seqs) {
            games.fold(game_id, &record.encode_to_vec(), seq, Signature::OwnRecord);
            crate::metrics::record_appended();
        }
        let last = seqs.last().copied().unwrap_or_default();
        if games.get(game_id).is_none_or(|e| e.last_stream_seq != last) {
            tracing::error!(game = %game_id, last, "a record just appended did not fold here");
        }
    }

    /// Folds what game `game_id`'s log holds after stream sequence `after`, where it was folded
    /// up to. A log that holds nothing after it although the game moved ends before it: records
    /// were removed (an operator's `fork cut`): the game is folded afresh from its whole log,
    /// and `true` says so.
    async fn catch_up_game(&self, game_id: &str, after: u64) -> anyhow::Result<bool> {
        let news = self.read_game(game_id, after).await?;
        if news.is_empty() {
            let whole = self.read_game(game_id, 0).await?;
            tracing::warn!(game = %game_id, records = whole.len(), "the game's log ends before what was folded here: folding it afresh");
            self.write().replace(game_id, &whole);
            return Ok(true);
        }
        let mut games = self.write();
        for (seq, payload) in news {
            games.fold(game_id, &payload, seq, Signature::Check);
        }
        Ok(false)
    }

    /// Folds game `game_id` afresh from its whole log when its subject holds another number of
    /// messages than were read here: an operator mended it (`boardcast fork keep` or `cut`
    /// removed records), or it was restored broken from a snapshot. One lookup otherwise; asked
    /// only for a game marked broken, before a decision on it.
    async fn read_again_if_changed(&self, game_id: &str) -> anyhow::Result<()> {
        let subject = game_subject(game_id);
        let mut counts = self
            .stream
            .info_with_subjects(&subject)
            .await
            .map_err(|e| anyhow::anyhow!("counting game {game_id}'s records: {e}"))?;
        let mut in_log = 0;
        while let Some(count) = counts.next().await {
            let (on, count) =
                count.map_err(|e| anyhow::anyhow!("counting game {game_id}'s records: {e}"))?;
            if on == subject {
                in_log = count as u64;
            }
        }
        if self.read().read_on_subject(game_id) == Some(in_log) {
            return Ok(());
        }
        let whole = self.read_game(game_id, 0).await?;
        let mut games = self.write();
        games.replace(game_id, &whole);
        match games.broken(game_id) {
            Some(broken) => {
                tracing::warn!(game = %game_id, "folded afresh from its log, which still does not follow on: {}", broken.reason());
            }
            None => {
                tracing::info!(game = %game_id, records = whole.len(), "folded afresh from its mended log: decisions on it go on")
            }
        }
        Ok(())
    }

    /// Game `game_id`'s records after stream sequence `after`, as the stream's leader holds them.
    async fn read_game(&self, game_id: &str, after: u64) -> anyhow::Result<Vec<(u64, Bytes)>> {
        Ok(game_log::game_records_between(&self.stream, game_id, after, u64::MAX).await?)
    }

    /// Appends `records` to game `game_id`'s subject, expecting it to end at stream sequence
    /// `end`: one publish, or one atomic batch for several records.
    async fn append(
        &self,
        game_id: &str,
        records: &[GameEventRecord],
        end: u64,
    ) -> Result<Appended, AppendError> {
        let _in_flight = {
            let mut appends = lock(&self.appends);
            appends.0 += 1;
            let id = appends.0;
            appends.1.insert(id, Instant::now());
            InFlight { store: self, id }
        };
        // The records carry the trace of what they were decided on to the services that read
        // the log.
        let span = tracing::info_span!("record.append", game = %game_id, records = records.len());
        let mut trace = async_nats::HeaderMap::new();
        span.in_scope(|| boardcast_kit::telemetry::inject_into_nats(&mut trace));
        let subject = game_subject(game_id);
        let sent_at = Instant::now();
        let appended = self
            .publish(game_id, subject, records, end, trace)
            .instrument(span)
            .await;
        if let Ok(Appended::Stored(seqs)) = &appended
            && let Some(&seq) = seqs.last()
        {
            let mut witness = lock(&self.witness);
            if witness.is_none_or(|w| w.sent_at < sent_at) {
                *witness = Some(Witness { sent_at, seq });
            }
        }
        appended
    }

    /// Publishes `records` as [`Store::append`] says.
    async fn publish(
        &self,
        game_id: &str,
        subject: String,
        records: &[GameEventRecord],
        end: u64,
        trace: async_nats::HeaderMap,
    ) -> Result<Appended, AppendError> {
        if let [record] = records {
            let message = PublishMessage::build()
                .payload(record.encode_to_vec().into())
                .headers(trace)
                .expected_last_subject_sequence(end);
            let ack = async { self.js.send_publish(subject, message).await?.await }.await;
            return match ack {
                Ok(ack) => Ok(Appended::Stored(vec![ack.sequence])),
                Err(e) if e.kind() == PublishErrorKind::WrongLastSequence => Ok(Appended::Moved),
                Err(e) if e.kind() == PublishErrorKind::MaxPayloadExceeded => {
                    Err(failed(game_id, e))
                }
                Err(e) => Err(unavailable(game_id, e)),
            };
        }
        if self.batches {
            return batch::publish(self.js.client(), &subject, records, end, &trace, game_id).await;
        }
        let mut end = end;
        let mut seqs = Vec::with_capacity(records.len());
        for (n, record) in records.iter().enumerate() {
            let message = PublishMessage::build()
                .payload(record.encode_to_vec().into())
                .headers(trace.clone())
                .expected_last_subject_sequence(end);
            match async { self.js.send_publish(subject.clone(), message).await?.await }.await {
                Ok(ack) => {
                    end = ack.sequence;
                    seqs.push(end);
                }
                // Only the first can find the game moved: each later one expects the one before.
                Err(e) if n == 0 && e.kind() == PublishErrorKind::WrongLastSequence => {
                    return Ok(Appended::Moved);
                }
                Err(e) if e.kind() == PublishErrorKind::MaxPayloadExceeded => {
                    return Err(failed(game_id, e));
                }
                Err(e) => return Err(unavailable(game_id, e)),
            }
        }
        Ok(Appended::Stored(seqs))
    }

    /// Runs `decide` on the game live on `board_id` and appends the events `events_of` finds in
    /// what it returns; the observation decided was stored by `stored_by` (see
    /// [`Store::decide_and_append`]). `None` when no game is live on the board as folded here:
    /// the caller has made sure that the follower folded what the log held before
    /// (`Store::refresh`, as `ingest::game_in_progress` does for every observation of a board
    /// without a game).
    pub async fn decide_on_board<T>(
        &self,
        board_id: &str,
        recorded_unix_ms: i64,
        stored_by: Instant,
        decide: impl Fn(&Game) -> T,
        events_of: impl Fn(&T) -> Vec<NewEvent>,
    ) -> Result<Option<T>, AppendError> {
        for _ in 0..MAX_ATTEMPTS {
            let live = self.read().live_id_on(board_id).map(str::to_owned);
            let Some(game_id) = live else {
                return Ok(None);
            };
            let decided = self
                .decide_and_append(&game_id, stored_by, |games| {
                    if games.live_id_on(board_id) != Some(game_id.as_str()) {
                        return Ok(Decision::BoardMoved);
                    }
                    let Some(entry) = games.get(&game_id) else {
                        return Ok(Decision::BoardMoved);
                    };
                    let decision = decide(&entry.game);
                    let new_events = events_of(&decision);
                    Ok(if new_events.is_empty() {
                        Decision::Nothing(Some(decision))
                    } else {
                        Decision::Append {
                            records: self.sealed(entry, new_events, recorded_unix_ms),
                            outcome: Some(decision),
                        }
                    })
                })
                .await;
            match decided {
                // Another game was set up on the board meanwhile: decided for that one.
                Err(AppendError::Conflict(_))
                    if self.read().live_id_on(board_id) != Some(game_id.as_str()) => {}
                other => return other,
            }
        }
        Err(AppendError::Conflict(board_id.to_owned()))
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

    /// Completes a decision that was stored in part (the service stopped between two of its
    /// records, on a single server: see the module comment): the game's last recorded
    /// observation is decided again on the state before it, and the records the first attempt
    /// did not append are appended. Returns how many.
    pub async fn complete_last_decision(
        &self,
        board_id: &str,
        recorded_unix_ms: i64,
        is_decision_start: impl Fn(&GameEvent) -> bool,
        decide: impl Fn(&Game) -> Vec<NewEvent>,
    ) -> Result<usize, AppendError> {
        let Some(game_id) = self.read().live_id_on(board_id).map(str::to_owned) else {
            return Ok(0);
        };
        let added = self
            .decide_and_append(&game_id, Instant::now(), |games| {
                let Some(entry) = games.get(&game_id) else {
                    return Ok(Decision::Nothing(0));
                };
                match completion(entry, &is_decision_start, &decide) {
                    Ok(Some(missing)) => Ok(Decision::Append {
                        outcome: missing.len(),
                        records: self.sealed(entry, missing, recorded_unix_ms),
                    }),
                    Ok(None) => Ok(Decision::Nothing(0)),
                    Err(e) => Err(failed(&game_id, e)),
                }
            })
            .await?;
        if added > 0 {
            tracing::warn!(
                board_id,
                records = added,
                "completed a decision stored in part"
            );
        }
        Ok(added)
    }

    /// Runs `decide` on the current state of game `game_id` and appends what it returns. `None`
    /// when there is no such game; `Some(Err)` when `decide` refused.
    pub async fn decide_on_game<E>(
        &self,
        game_id: &str,
        recorded_unix_ms: i64,
        decide: impl Fn(&Game) -> Result<Vec<NewEvent>, E>,
    ) -> Result<Option<Result<(), E>>, AppendError> {
        self.decide_and_append(game_id, Instant::now(), |games| {
            let Some(entry) = games.get(game_id) else {
                return Ok(Decision::Nothing(None));
            };
            Ok(match decide(&entry.game) {
                Err(refused) => Decision::Nothing(Some(Err(refused))),
                Ok(new_events) if new_events.is_empty() => Decision::Nothing(Some(Ok(()))),
                Ok(new_events) => Decision::Append {
                    records: self.sealed(entry, new_events, recorded_unix_ms),
                    outcome: Some(Ok(())),
                },
            })
        })
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
        self.decide_and_append(game_id, Instant::now(), |games| {
            Ok(if games.get(game_id).is_some() {
                Decision::Nothing(false)
            } else {
                Decision::Append {
                    records: records.clone(),
                    outcome: true,
                }
            })
        })
        .await
    }
}

/// The events `entry`'s last decision lacks: decided again on the state before it, those after
/// the ones written, when the ones written are its beginning.
fn completion(
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
    let before = crate::games::refold(&entry.records[..start])?;
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

/// Why nothing is decided on game `game_id`, when it is broken.
fn broken_error(games: &Games, game_id: &str) -> Option<AppendError> {
    let broken = games.broken(game_id)?;
    let (game_id, reason) = (game_id.to_owned(), broken.reason());
    Some(match broken.why {
        crate::games::BrokenWhy::Unfoldable(_) => AppendError::Unfoldable { game_id, reason },
        crate::games::BrokenWhy::LogDoesNotFollowOn(_) | crate::games::BrokenWhy::Restored(_) => {
            AppendError::LogBroken { game_id, reason }
        }
    })
}

/// Atomic batch publish (ADR-50, nats-server 2.12+): the few headers it needs, written here
/// rather than through a crate that would bring a second copy of the NATS client.
mod batch;

//! The index of the games this instance knows, folded from the game log: pure (no NATS, no
//! clock), so that what a record does to it is tested on its own. The store keeps it behind a
//! lock and feeds it the records it reads from and appends to the log.
//!
//! Folding is idempotent per game: a record whose `game_seq` is already folded is skipped (the
//! follower reads the records this instance appended and folded a moment ago), the next one is
//! applied, and one that does not follow on (a gap, two records with one number) marks the game
//! broken. A broken game takes no decision until an operator mended its log and it was folded
//! afresh from it ([`Games::replace`]).
//!
//! A third of the file is its tests: every way a record can follow on, or not, on the index alone.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::panic::AssertUnwindSafe;

use boardcast_game::events::{GameEventRecord, GameState, LogNotFollowed, game_event};
use boardcast_game::signing::TrustedKeys;
use boardcast_game::{ChainError, Game, GameError};
use boardcast_kit::game_log::LogBreak;
use boardcast_kit::panic_text;
use prost::Message as _;

use crate::snapshot::{SnapshotData, SnapshotGame};

/// One game with what it was folded from.
pub(crate) struct Entry {
    pub(crate) game: Game,
    /// Stream sequence of the game's first record: where a round's log starts.
    pub(crate) first_stream_seq: u64,
    /// Stream sequence of the record that set it up on the board it is on: its first record,
    /// or a revision of its set-up that moved it there. The latest set up on a board is live
    /// there, restored from a snapshot too.
    pub(crate) on_board_since: u64,
    /// The game's records as stored, for snapshots and for folding it afresh.
    pub(crate) records: Vec<Vec<u8>>,
    /// Stream sequence of the game's last record as folded here: an append expects the game's
    /// subject to end there (`Nats-Expected-Last-Subject-Sequence`).
    pub(crate) last_stream_seq: u64,
    /// Which folding afresh of the game this is (0: never folded afresh here): what a
    /// partition noted of the board against an earlier one no longer holds (records it rested
    /// on may have been removed; see `ingest::Seen`).
    pub(crate) generation: u64,
}

#[derive(Default)]
pub(crate) struct Games {
    by_id: HashMap<String, Entry>,
    /// The game live on each physical board: the latest one set up there (by its first record
    /// or a revision).
    live_on_board: HashMap<String, LiveGame>,
    /// The follower's position: every record of the stream up to it has been folded.
    folded_seq: u64,
    /// Games changed since the last snapshot.
    dirty: HashSet<String>,
    /// The keys whose signatures are accepted on records read from the log.
    trusted: TrustedKeys,
    /// Games on which nothing is decided, and why (see [`Broken`]).
    broken: BTreeMap<String, Broken>,
    /// Where the subjects of games with no entry here end (records on them skipped as bad: a
    /// forgery, say): an append to such a game expects its subject to end there.
    stray_ends: HashMap<String, u64>,
    /// How many times a game was folded afresh here (see `Entry::generation`).
    refolds: u64,
    /// How many messages of each game's subject were read here, in stream order (not known for
    /// a game restored broken from a snapshot): a broken game whose subject holds another
    /// number was changed by an operator, and is folded afresh (see `Store`).
    read_on_subject: HashMap<String, u64>,
}

/// The game live on a board.
#[derive(Debug)]
struct LiveGame {
    /// `None`: its game was set up again on another board, and no finished game is there to
    /// go back to (an unfinished one was replaced there): the board carries no game.
    game_id: Option<String>,
    /// The latest `Entry::on_board_since` of a game set up on the board (the one that left it,
    /// too): a game set up there earlier, folded afresh, does not take the board.
    on_board_since: u64,
}

/// Why nothing is decided on a game here.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Broken {
    /// The stream sequence of the record it stopped at.
    pub(crate) from: u64,
    pub(crate) why: BrokenWhy,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum BrokenWhy {
    /// Its log does not follow on (a record missing, two records with one number). What this
    /// service does then: nothing is decided on the game, its board's observations go to the
    /// dead-letter stream with the reason, and once an operator mended the log (`boardcast
    /// fork`) the game is folded afresh from it (`Store::broken_on_board`).
    LogDoesNotFollowOn(LogBreak),
    /// Folding one of its records panicked (a bug): nothing is decided on it until a service
    /// without the bug folds it. Skipping the record would decide on a game the log does not hold.
    Unfoldable(String),
    /// Marked so in the snapshot this instance started from, with why as said then: the game
    /// is folded afresh from its log before anything is decided on it.
    Restored(String),
}

impl Broken {
    pub(crate) fn reason(&self) -> String {
        match &self.why {
            BrokenWhy::LogDoesNotFollowOn(at) => at.to_string(),
            BrokenWhy::Unfoldable(reason) | BrokenWhy::Restored(reason) => reason.clone(),
        }
    }
}

/// Why a record was not applied to a game.
enum Unapplied {
    /// The game refused it.
    Refused(GameError),
    /// Applying it panicked (a bug), saying this.
    Panicked(String),
}

/// `apply` with a panic in it caught: one record that folding panics on (a bug) must not stop
/// every other game, nor the service at every start. After a panic the game may be half
/// changed: callers fold it afresh from its records.
fn guarded<T>(
    record: &GameEventRecord,
    apply: impl FnOnce() -> Result<T, GameError>,
) -> Result<T, Unapplied> {
    std::panic::catch_unwind(AssertUnwindSafe(|| {
        let applied = apply();
        // After the game was changed, as the worst bug would: what it leaves must be undone.
        #[cfg(debug_assertions)]
        if let Ok(event) = Game::open_record(record) {
            crate::fault_points::panic_at(
                crate::fault_points::Place::Folding,
                &event.game_id,
                event.game_seq,
            );
        }
        #[cfg(not(debug_assertions))]
        let _ = record;
        applied
    }))
    .map_err(|payload| Unapplied::Panicked(panic_text(payload.as_ref())))?
    .map_err(Unapplied::Refused)
}

/// Whether a record failed to fold because the game's records do not follow on (rather than
/// because the record itself is bad: undecodable, altered, not signed by a trusted key).
fn does_not_follow_on(e: &GameError) -> bool {
    matches!(
        e,
        GameError::OutOfSequence { .. }
            | GameError::NotStarted
            | GameError::Chain(ChainError::BrokenLink { .. })
    )
}

/// Whether record `game_seq` of a game's `records` (one per number, in order) is the one with
/// `hash`.
fn holds(records: &[Vec<u8>], game_seq: u64, hash: &[u8]) -> bool {
    usize::try_from(game_seq)
        .ok()
        .and_then(|n| records.get(n.checked_sub(1)?))
        .and_then(|bytes| GameEventRecord::decode(bytes.as_slice()).ok())
        .is_some_and(|folded| folded.hash == hash)
}

/// Whether a record's signature is checked when it is folded.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Signature {
    /// Read from the log: signed by a trusted key, or skipped.
    Check,
    /// Signed by this instance a moment ago, in this process.
    OwnRecord,
}

/// What folding one record did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Folded {
    /// It continued (or started) its game.
    Applied,
    /// Its game already holds it.
    Known,
    /// It was skipped: bad in itself, or its game is broken (now or before).
    Skipped,
}

impl Games {
    /// No games yet; records folded must be signed by one of `trusted`.
    pub(crate) fn new(trusted: TrustedKeys) -> Games {
        Games {
            trusted,
            ..Games::default()
        }
    }

    /// The games a snapshot holds, folded from their records (in the order they were set up,
    /// so that the latest game on each board is live there), up to the snapshot's sequence.
    pub(crate) fn from_snapshot(
        snapshot: SnapshotData,
        trusted: TrustedKeys,
    ) -> Result<Games, String> {
        let mut games = Games::new(trusted);
        let mut saved = snapshot.games;
        saved.sort_by_key(|g| g.on_board_since);
        // Which game is live on each board, as written; from an older snapshot, worked out from
        // the order the games were set up on their boards (before a game could leave one).
        let recompute = snapshot.live_on_board.is_none();
        for (board_id, game_id, on_board_since) in snapshot.live_on_board.unwrap_or_default() {
            games.live_on_board.insert(
                board_id,
                LiveGame {
                    // Written as "": no game (ids are never empty).
                    game_id: Some(game_id).filter(|id| !id.is_empty()),
                    on_board_since,
                },
            );
        }
        for g in saved {
            let game = refold(&g.records).map_err(|e| format!("game {}: {e}", g.game_id))?;
            if game.game_id() != g.game_id {
                return Err(format!(
                    "game {} holds records of {}",
                    g.game_id,
                    game.game_id()
                ));
            }
            if recompute {
                games.set_up_on(game.board_id(), &g.game_id, g.on_board_since);
            }
            games
                .read_on_subject
                .insert(g.game_id.clone(), g.records.len() as u64);
            games.by_id.insert(
                g.game_id,
                Entry {
                    game,
                    first_stream_seq: g.first_stream_seq,
                    on_board_since: g.on_board_since,
                    records: g.records,
                    last_stream_seq: g.last_stream_seq,
                    generation: 0,
                },
            );
        }
        games.folded_seq = snapshot.folded_seq;
        for (game_id, why) in snapshot.broken {
            games.read_on_subject.remove(&game_id);
            games.broken.insert(
                game_id,
                Broken {
                    from: 0,
                    why: BrokenWhy::Restored(why),
                },
            );
        }
        Ok(games)
    }

    /// Game `game_id`, set up on `board_id` by the record at `on_board_since`, is live there
    /// unless a game was set up there later.
    fn set_up_on(&mut self, board_id: &str, game_id: &str, on_board_since: u64) {
        let known = self.live_on_board.get(board_id);
        let same_game = known.is_some_and(|live| live.game_id.as_deref() == Some(game_id));
        let latest = known.map_or(0, |live| live.on_board_since);
        if !same_game && latest > on_board_since {
            return;
        }
        self.live_on_board.insert(
            board_id.to_owned(),
            LiveGame {
                game_id: Some(game_id.to_owned()),
                on_board_since: on_board_since.max(latest),
            },
        );
    }

    /// Game `game_id` was set up again on another board than `board_before` by the record at
    /// `stream_seq` (a revision: a wrong board before play, a broken one in play).
    fn moved(&mut self, game_id: &str, board_before: &str, stream_seq: u64) {
        self.refolds += 1;
        let generation = self.refolds;
        let Some(entry) = self.by_id.get_mut(game_id) else {
            return;
        };
        entry.on_board_since = stream_seq;
        // What was noted of the board it was on tells nothing about this one.
        entry.generation = generation;
        let board_now = entry.game.board_id().to_owned();
        self.left_board(board_before, game_id);
        self.set_up_on(&board_now, game_id, stream_seq);
    }

    /// Game `game_id` left `board_id`: the board is live with the latest other game set up on
    /// it if that one is finished (its observations then change nothing); an unfinished one was
    /// replaced there and stays so, and the board carries no game until one is set up on it.
    fn left_board(&mut self, board_id: &str, game_id: &str) {
        let Some(live) = self
            .live_on_board
            .get_mut(board_id)
            .filter(|live| live.game_id.as_deref() == Some(game_id))
        else {
            return;
        };
        live.game_id = self
            .by_id
            .iter()
            .filter(|(id, e)| id.as_str() != game_id && e.game.board_id() == board_id)
            .max_by_key(|(_, e)| e.on_board_since)
            .filter(|(_, e)| e.game.is_over())
            .map(|(id, _)| id.clone());
    }

    /// Folds the record stored on `subject` at `stream_seq` as the follower read it, and moves
    /// the follower's position there.
    pub(crate) fn follow(&mut self, subject: &str, payload: &[u8], stream_seq: u64) -> Folded {
        self.folded_seq = self.folded_seq.max(stream_seq);
        match boardcast_kit::nats::game_of_subject(subject) {
            Some(game_id) => self.fold(game_id, payload, stream_seq, Signature::Check),
            None => Folded::Skipped,
        }
    }

    /// Folds one record stored at `stream_seq` on game `game_id`'s subject. A record bad in
    /// itself (undecodable, altered, not signed by a trusted key, of another game) is reported
    /// and skipped, so one bad record does not stop every other game; one that does not follow
    /// on marks its game broken. Either way the game's subject now ends there.
    pub(crate) fn fold(
        &mut self,
        game_id: &str,
        payload: &[u8],
        stream_seq: u64,
        signature: Signature,
    ) -> Folded {
        if stream_seq > self.end_of(game_id) {
            *self.read_on_subject.entry(game_id.to_owned()).or_default() += 1;
        }
        let folded = self.fold_record(game_id, payload, stream_seq, signature);
        match self.by_id.get_mut(game_id) {
            Some(entry) if entry.last_stream_seq < stream_seq => {
                entry.last_stream_seq = stream_seq;
                self.dirty.insert(game_id.to_owned());
            }
            Some(_) => {}
            None => {
                let end = self.stray_ends.entry(game_id.to_owned()).or_default();
                *end = (*end).max(stream_seq);
            }
        }
        folded
    }

    /// How many messages of game `game_id`'s subject were read here, when known.
    pub(crate) fn read_on_subject(&self, game_id: &str) -> Option<u64> {
        self.read_on_subject.get(game_id).copied()
    }

    /// Where game `game_id`'s subject ends as read here (0: nothing read of it).
    pub(crate) fn end_of(&self, game_id: &str) -> u64 {
        match self.by_id.get(game_id) {
            Some(entry) => entry.last_stream_seq,
            None => self.stray_ends.get(game_id).copied().unwrap_or(0),
        }
    }

    fn fold_record(
        &mut self,
        subject_game: &str,
        payload: &[u8],
        stream_seq: u64,
        signature: Signature,
    ) -> Folded {
        let opened = GameEventRecord::decode(payload)
            .map_err(|e| e.to_string())
            .and_then(|record| {
                let event = Game::open_record(&record).map_err(|e| e.to_string())?;
                Ok((record, event))
            });
        let (record, event) = match opened {
            Ok((_, event)) if event.game_id != subject_game => {
                tracing::error!(stream_seq, game = %subject_game, "skipping a record on the game's subject that is not one of its own");
                return Folded::Skipped;
            }
            Ok(opened) => opened,
            Err(e) => {
                tracing::error!(stream_seq, game = %subject_game, "skipping a game log record that cannot be read: {e}");
                return Folded::Skipped;
            }
        };
        let game_id = event.game_id.clone();
        if self.broken.contains_key(&game_id) {
            return Folded::Skipped;
        }
        let trusted = &self.trusted;
        // The board the game was on, when this record set it up on another.
        let mut moved_from = None;
        let applied = match self.by_id.get_mut(&game_id) {
            Some(entry) if event.game_seq <= entry.game.last_game_seq() => {
                if holds(&entry.records, event.game_seq, &record.hash) {
                    return Folded::Known;
                }
                // A forgery (not signed by a trusted key) is no branch of the game's log.
                if signature == Signature::Check
                    && let Err(e) = Game::read_stored(payload, trusted, entry.game.is_signed())
                {
                    tracing::error!(stream_seq, game = %game_id, "skipping a game log record that cannot be folded: {e}");
                    return Folded::Skipped;
                }
                let at = LogBreak {
                    game_id: game_id.clone(),
                    stream_seq,
                    game_seq: event.game_seq,
                    why: "a second record with this number: the log forked".into(),
                };
                self.mark_broken(&game_id, stream_seq, BrokenWhy::LogDoesNotFollowOn(at));
                return Folded::Skipped;
            }
            Some(entry) => {
                let board_before = entry.game.board_id().to_owned();
                guarded(&record, || match signature {
                    Signature::Check => entry.game.apply_trusted(&record, trusted),
                    Signature::OwnRecord => entry.game.apply(&record),
                })
                .map(|()| {
                    entry.records.push(payload.to_vec());
                    if entry.game.board_id() != board_before {
                        moved_from = Some(board_before);
                    }
                })
            }
            None => guarded(&record, || match signature {
                Signature::Check => Game::from_first_trusted(&record, trusted),
                Signature::OwnRecord => Game::from_first_record(&record),
            })
            .map(|game| {
                self.stray_ends.remove(&game_id);
                self.set_up_on(game.board_id(), &game_id, stream_seq);
                self.by_id.insert(
                    game_id.clone(),
                    Entry {
                        game,
                        first_stream_seq: stream_seq,
                        on_board_since: stream_seq,
                        records: vec![payload.to_vec()],
                        last_stream_seq: stream_seq,
                        generation: 0,
                    },
                );
            }),
        };
        match applied {
            Ok(()) => {
                if let Some(board_before) = moved_from {
                    self.moved(&game_id, &board_before, stream_seq);
                }
                crate::fault_points::panic_at(
                    crate::fault_points::Place::Folded,
                    &game_id,
                    event.game_seq,
                );
                self.dirty.insert(game_id);
                Folded::Applied
            }
            Err(Unapplied::Refused(e)) if does_not_follow_on(&e) => {
                let at = LogBreak {
                    game_id: game_id.clone(),
                    stream_seq,
                    game_seq: event.game_seq,
                    why: e.to_string(),
                };
                self.mark_broken(&game_id, stream_seq, BrokenWhy::LogDoesNotFollowOn(at));
                Folded::Skipped
            }
            Err(Unapplied::Refused(e)) => {
                tracing::error!(stream_seq, game = %game_id, "skipping a game log record that cannot be folded: {e}");
                Folded::Skipped
            }
            Err(Unapplied::Panicked(text)) => {
                // The panic may have left the game half changed: folded again without it.
                if let Some(entry) = self.by_id.get_mut(&game_id) {
                    match refold(&entry.records) {
                        Ok(game) => entry.game = game,
                        Err(_) => {
                            self.by_id.remove(&game_id);
                        }
                    }
                }
                // Its first record: the game is live on its board all the same, so that the
                // board's observations are not decided for the game before it.
                if let Some(game_event::Kind::Started(info)) = &event.kind {
                    self.set_up_on(&info.board_id, &game_id, stream_seq);
                }
                let reason = format!(
                    "folding its record at stream sequence {stream_seq} panicked (a bug): {text}"
                );
                self.mark_broken(&game_id, stream_seq, BrokenWhy::Unfoldable(reason));
                Folded::Skipped
            }
        }
    }

    fn mark_broken(&mut self, game_id: &str, stream_seq: u64, why: BrokenWhy) {
        let broken = Broken {
            from: stream_seq,
            why,
        };
        tracing::error!(game = %game_id, stream_seq, "nothing is decided on the game until it is mended: {}", broken.reason());
        self.broken.insert(game_id.to_owned(), broken);
        // So that the next snapshot is written, with the mark.
        self.dirty.insert(game_id.to_owned());
    }

    /// Game `game_id` folded afresh from its whole log, `records` (stream sequence and record as
    /// stored, in stream order): replaces what was folded of it, broken or not. The game is
    /// broken again if its log does not follow on; nothing of it is kept when its log holds no
    /// record of it.
    pub(crate) fn replace(&mut self, game_id: &str, records: &[(u64, impl AsRef<[u8]>)]) {
        let before = self.by_id.remove(game_id);
        self.broken.remove(game_id);
        self.stray_ends.remove(game_id);
        self.read_on_subject.remove(game_id);
        self.dirty.insert(game_id.to_owned());
        for (stream_seq, payload) in records {
            self.fold(game_id, payload.as_ref(), *stream_seq, Signature::Check);
        }
        self.refolds += 1;
        let generation = self.refolds;
        if let Some(entry) = self.by_id.get_mut(game_id) {
            entry.generation = generation;
        }
        // No longer on the board it was on (nothing of it in the log any more, or the revision
        // that put it there removed): it is not live there.
        let board_now = self
            .by_id
            .get(game_id)
            .map(|e| e.game.board_id().to_owned());
        if let Some(before) = before
            && board_now.as_deref() != Some(before.game.board_id())
        {
            self.left_board(before.game.board_id(), game_id);
        }
    }

    pub(crate) fn folded_seq(&self) -> u64 {
        self.folded_seq
    }

    pub(crate) fn trusted(&self) -> &TrustedKeys {
        &self.trusted
    }

    pub(crate) fn len(&self) -> usize {
        self.by_id.len()
    }

    pub(crate) fn get(&self, game_id: &str) -> Option<&Entry> {
        self.by_id.get(game_id)
    }

    /// The game live on `board_id`: the latest set up there.
    pub(crate) fn live_on(&self, board_id: &str) -> Option<&Entry> {
        self.by_id
            .get(self.live_on_board.get(board_id)?.game_id.as_deref()?)
    }

    /// The id of the game live on `board_id`, folded or not (its first record may be
    /// unfoldable).
    pub(crate) fn live_id_on(&self, board_id: &str) -> Option<&str> {
        self.live_on_board.get(board_id)?.game_id.as_deref()
    }

    /// The boards carrying a game, folded or not.
    pub(crate) fn boards_with_a_game(&self) -> impl Iterator<Item = &str> {
        self.live_on_board
            .iter()
            .filter(|(_, live)| live.game_id.is_some())
            .map(|(board, _)| board.as_str())
    }

    /// The game live on each board.
    pub(crate) fn live(&self) -> impl Iterator<Item = &Entry> {
        self.live_on_board
            .values()
            .filter_map(|live| self.by_id.get(live.game_id.as_deref()?))
    }

    pub(crate) fn all(&self) -> impl Iterator<Item = &Entry> {
        self.by_id.values()
    }

    /// The games on which nothing is decided.
    pub(crate) fn broken_ids(&self) -> Vec<String> {
        self.broken.keys().cloned().collect()
    }

    /// Why nothing is decided on game `game_id`, when nothing is.
    pub(crate) fn broken(&self, game_id: &str) -> Option<&Broken> {
        self.broken.get(game_id)
    }

    /// Where game `game_id`'s log goes on past what is folded here, and why, when it does.
    pub(crate) fn not_followed(&self, game_id: &str) -> Option<LogNotFollowed> {
        self.broken.get(game_id).map(|b| LogNotFollowed {
            from_stream_seq: b.from,
            reason: b.reason(),
        })
    }

    /// `game`'s state as the API shows it, saying whether its log goes on past it.
    pub(crate) fn state_of(&self, game: &Game) -> GameState {
        GameState {
            log_not_followed: self.not_followed(game.game_id()),
            ..game.to_state()
        }
    }

    /// Where the log of a round's games starts: the first record of the earliest of them known,
    /// or else the first record not folded yet (a game created since).
    pub(crate) fn round_start_seq(&self, tournament_id: &str, round: u32) -> u64 {
        self.by_id
            .values()
            .filter(|e| {
                let info = e.game.info();
                info.tournament_id == tournament_id && info.round == round
            })
            .map(|e| e.first_stream_seq)
            .min()
            .unwrap_or(self.folded_seq + 1)
    }

    /// The games changed since the last call (all of them when `all`), with the follower's
    /// position, for a snapshot; `None` when nothing changed.
    pub(crate) fn take_changes(&mut self, all: bool) -> Option<SnapshotData> {
        if self.dirty.is_empty() && !all {
            return None;
        }
        let dirty = std::mem::take(&mut self.dirty);
        let ids: Vec<&String> = if all {
            self.by_id.keys().collect()
        } else {
            dirty.iter().collect()
        };
        let changed = ids
            .into_iter()
            .filter_map(|id| {
                self.by_id.get(id).map(|e| SnapshotGame {
                    game_id: (*id).clone(),
                    first_stream_seq: e.first_stream_seq,
                    on_board_since: e.on_board_since,
                    records: e.records.clone(),
                    last_stream_seq: e.last_stream_seq,
                })
            })
            .collect();
        Some(SnapshotData {
            folded_seq: self.folded_seq,
            games: changed,
            live_on_board: Some(
                self.live_on_board
                    .iter()
                    .map(|(board, live)| {
                        let game = live.game_id.clone().unwrap_or_default();
                        (board.clone(), game, live.on_board_since)
                    })
                    .collect(),
            ),
            broken: self
                .broken
                .iter()
                .map(|(game_id, b)| (game_id.clone(), b.reason()))
                .collect(),
        })
    }
}

/// A game folded from its records as stored (a panic folding one is an error too).
pub(crate) fn refold(records: &[Vec<u8>]) -> Result<Game, String> {
    let mut iter = records
        .iter()
        .map(|bytes| GameEventRecord::decode(bytes.as_slice()).map_err(|e| e.to_string()));
    let first = iter.next().ok_or("a game without records")??;
    let mut game = guarded(&first, || Game::from_first_record(&first)).map_err(unapplied_text)?;
    for record in iter {
        let record = record?;
        guarded(&record, || game.apply(&record)).map_err(unapplied_text)?;
    }
    Ok(game)
}

fn unapplied_text(e: Unapplied) -> String {
    match e {
        Unapplied::Refused(e) => e.to_string(),
        Unapplied::Panicked(text) => format!("folding a record panicked (a bug): {text}"),
    }
}

#[cfg(test)]
mod tests {
    use boardcast_game::events::{Annotation, ArbiterAction, GameStarted, arbiter_action::Action};
    use boardcast_game::signing::RecordSigner;

    use super::*;

    fn signer() -> RecordSigner {
        RecordSigner::from_seed([7; 32])
    }

    fn trusted() -> TrustedKeys {
        TrustedKeys::parse(&signer().public_key().to_text()).expect("a key")
    }

    /// The first record of a game on `board` (round `round`), encoded as stored.
    fn started(round: u32, board: &str) -> (Game, Vec<u8>) {
        let info = boardcast_game::example_game("t", round, 1, board);
        let (id, event) = Game::decide_start(&info, "operator", "r").expect("valid");
        let record = Game::record_signed(None, &id, vec![event], 1_000, &signer()).remove(0);
        let game = Game::from_first_record(&record).expect("folds");
        (game, record.encode_to_vec())
    }

    /// The next record of `game`: an arbiter's note.
    fn note(game: &Game) -> Vec<u8> {
        let action = ArbiterAction {
            action: Some(Action::Annotation(Annotation { text: "n".into() })),
            ..Default::default()
        };
        let events = game
            .decide_arbiter(&action, "arbiter", &format!("n{}", game.last_game_seq()))
            .expect("accepted");
        let record = Game::record_signed(Some(game), game.game_id(), events, 2_000, &signer());
        record[0].encode_to_vec()
    }

    /// Folds `payload` as the follower reads it, on its game's subject.
    fn follow(games: &mut Games, payload: &[u8], stream_seq: u64) -> Folded {
        let game_id = GameEventRecord::decode(payload)
            .ok()
            .and_then(|r| Game::open_record(&r).ok())
            .map_or_else(|| "unknown".to_owned(), |e| e.game_id);
        games.follow(
            &boardcast_kit::nats::game_subject(&game_id),
            payload,
            stream_seq,
        )
    }

    #[test]
    fn own_records_fold_unchecked_but_still_in_chain() {
        let (game, first) = started(1, "b1");
        let second = note(&game);
        let mut checked = Games::new(trusted());
        follow(&mut checked, &first, 1);
        follow(&mut checked, &second, 2);
        let mut own = Games::new(trusted());
        own.fold(game.game_id(), &first, 1, Signature::OwnRecord);
        own.fold(game.game_id(), &second, 2, Signature::OwnRecord);
        assert_eq!(
            own.get(game.game_id()).map(|e| &e.records),
            checked.get(game.game_id()).map(|e| &e.records)
        );
        assert_eq!(own.get(game.game_id()).map(|e| e.last_stream_seq), Some(2));
    }

    #[test]
    fn a_record_folded_twice_is_known_and_the_follower_moves_on() {
        let mut games = Games::new(trusted());
        let (game, first) = started(1, "b1");
        let second = note(&game);
        // This instance appended both (stream sequences 3 and 4) before its follower read them.
        assert_eq!(
            games.fold(game.game_id(), &first, 3, Signature::OwnRecord),
            Folded::Applied
        );
        assert_eq!(
            games.fold(game.game_id(), &second, 4, Signature::OwnRecord),
            Folded::Applied
        );
        assert_eq!(games.folded_seq(), 0);
        assert_eq!(follow(&mut games, &first, 3), Folded::Known);
        assert_eq!(follow(&mut games, &second, 4), Folded::Known);
        let entry = games.get(game.game_id()).expect("known");
        assert_eq!(entry.records, vec![first, second]);
        assert_eq!((games.folded_seq(), entry.last_stream_seq), (4, 4));
        assert!(games.broken(game.game_id()).is_none());
    }

    #[test]
    fn the_latest_game_set_up_on_a_board_is_live_there() {
        let mut games = Games::new(trusted());
        let (round_1, first_1) = started(1, "b1");
        let (round_2, first_2) = started(2, "b1");
        follow(&mut games, &first_1, 5);
        follow(&mut games, &first_2, 9);
        assert_eq!(
            games.live_on("b1").map(|e| e.game.game_id()),
            Some(round_2.game_id())
        );
        assert_eq!(games.live().count(), 1);
        assert_eq!(games.len(), 2);
        assert_eq!(games.round_start_seq("t", 1), 5);
        assert_eq!(games.round_start_seq("t", 2), 9);
        // A round with no game yet starts after what is folded.
        assert_eq!(games.round_start_seq("t", 3), 10);
        assert!(games.get(round_1.game_id()).is_some());
        // Folded afresh, the earlier game does not take the board back.
        games.replace(round_1.game_id(), &[(5, first_1)]);
        assert_eq!(games.live_id_on("b1"), Some(round_2.game_id()));
    }

    /// The next record of `game`: its set-up revised onto `board`.
    fn moved_to(game: &Game, board: &str) -> Vec<u8> {
        let info = GameStarted {
            board_id: board.into(),
            ..game.info().clone()
        };
        let revision = game
            .decide_set_up_revision(&info, "operator", "again")
            .expect("allowed before play");
        Game::record_signed(Some(game), game.game_id(), revision, 3_000, &signer())[0]
            .encode_to_vec()
    }

    #[test]
    fn a_game_set_up_again_on_another_board_takes_it_and_a_snapshot_keeps_that() {
        let mut games = Games::new(trusted());
        // Round 1 on b1 (adjourned), then round 2 on b1 by mistake; round 2 moves to b2.
        let (round_1, first_1) = started(1, "b1");
        let (round_2, first_2) = started(2, "b1");
        follow(&mut games, &first_1, 1);
        follow(&mut games, &first_2, 2);
        let generation = games.get(round_2.game_id()).map(|e| e.generation);
        assert_eq!(
            follow(&mut games, &moved_to(&round_2, "b2"), 7),
            Folded::Applied
        );
        let live = |games: &Games| {
            (
                games.live_id_on("b1").map(str::to_owned),
                games.live_id_on("b2").map(str::to_owned),
            )
        };
        let expected = (None, Some(round_2.game_id().to_owned()));
        assert_eq!(
            live(&games),
            expected,
            "b1 is not the unfinished game's again: it was replaced there"
        );
        assert!(games.get(round_1.game_id()).is_some());
        let entry = games.get(round_2.game_id()).expect("known");
        assert_eq!((entry.first_stream_seq, entry.on_board_since), (2, 7));
        assert_ne!(
            Some(entry.generation),
            generation,
            "what a partition noted of b1 is not taken for b2"
        );
        assert_eq!(games.round_start_seq("t", 2), 2);
        // Restored: the same boards.
        let restored = Games::from_snapshot(games.take_changes(true).expect("games"), trusted())
            .expect("restores");
        assert_eq!(live(&restored), expected);
        // Folded afresh from the log: the same.
        games.replace(
            round_2.game_id(),
            &[(2, first_2), (7, moved_to(&round_2, "b2"))],
        );
        assert_eq!(live(&games), expected);
    }

    #[test]
    fn a_board_left_goes_back_to_a_finished_game_only() {
        use boardcast_game::events::{DeclareResult, GameResult};
        let mut games = Games::new(trusted());
        // Round 1's game on b1 is finished, round 2's on b2 unfinished (adjourned); round 3's
        // games are set up on b1 and b2 (replacing round 2's), then both moved to b3 and b4.
        let (round_1, first_1) = started(1, "b1");
        let result = ArbiterAction {
            action: Some(Action::Result(DeclareResult {
                result: GameResult::Draw as i32,
                ..Default::default()
            })),
            ..Default::default()
        };
        let ended = Game::record_signed(
            Some(&round_1),
            round_1.game_id(),
            round_1
                .decide_arbiter(&result, "arbiter", "r")
                .expect("accepted"),
            2_000,
            &signer(),
        );
        let (round_2, first_2) = started(2, "b2");
        let on_b1 = boardcast_game::example_game("t", 3, 1, "b1");
        let on_b2 = boardcast_game::example_game("t", 3, 2, "b2");
        let mut seq = 0;
        let mut next = || {
            seq += 1;
            seq
        };
        follow(&mut games, &first_1, next());
        for record in &ended {
            follow(&mut games, &record.encode_to_vec(), next());
        }
        let first_2_at = next();
        follow(&mut games, &first_2, first_2_at);
        for (info, to) in [(on_b1, "b3"), (on_b2, "b4")] {
            let (id, event) = Game::decide_start(&info, "operator", "r3").expect("valid");
            let record = Game::record_signed(None, &id, vec![event], 1_000, &signer()).remove(0);
            let game = Game::from_first_record(&record).expect("folds");
            follow(&mut games, &record.encode_to_vec(), next());
            follow(&mut games, &moved_to(&game, to), next());
        }
        assert_eq!(games.live_id_on("b1"), Some(round_1.game_id()), "finished");
        assert_eq!(
            games.live_id_on("b2"),
            None,
            "round 2's game was replaced there"
        );
        // Restored from a snapshot: the same boards.
        let restored = Games::from_snapshot(games.take_changes(true).expect("games"), trusted())
            .expect("restores");
        for board in ["b1", "b2", "b3", "b4"] {
            assert_eq!(
                restored.live_id_on(board),
                games.live_id_on(board),
                "{board}"
            );
        }
        // Folded afresh (its log mended), the replaced game does not take the board back.
        games.replace(round_2.game_id(), &[(first_2_at, first_2)]);
        assert_eq!(games.live_id_on("b2"), None);
    }

    #[test]
    fn a_game_folded_afresh_without_its_move_leaves_the_board_it_was_moved_to() {
        let mut games = Games::new(trusted());
        let (game, first) = started(1, "b1");
        follow(&mut games, &first, 1);
        follow(&mut games, &moved_to(&game, "b2"), 2);
        assert_eq!(games.live_id_on("b2"), Some(game.game_id()));
        // An operator cut the log before the revision.
        games.replace(game.game_id(), &[(1, first)]);
        assert_eq!(games.live_id_on("b1"), Some(game.game_id()));
        assert_eq!(games.live_id_on("b2"), None);
    }

    #[test]
    fn a_record_bad_in_itself_is_skipped_and_others_go_on() {
        let mut games = Games::new(trusted());
        let (game, first) = started(1, "b1");
        follow(&mut games, &first, 1);
        assert_eq!(
            games.follow(
                &boardcast_kit::nats::game_subject(game.game_id()),
                b"not a record",
                2
            ),
            Folded::Skipped
        );
        // A game signed by a key nobody trusts.
        let mut stranger = Games::new(TrustedKeys::default());
        let (_, other_first) = started(1, "b2");
        assert_eq!(follow(&mut stranger, &other_first, 1), Folded::Skipped);
        assert_eq!(stranger.len(), 0);
        let second = note(&game);
        assert_eq!(follow(&mut games, &second, 3), Folded::Applied);
        assert!(games.broken(game.game_id()).is_none());
    }

    #[test]
    fn a_game_whose_log_skips_a_record_or_forks_is_broken_until_folded_afresh() {
        let (game, first) = started(1, "b1");
        let second = note(&game);
        let mut after_second = game.clone();
        after_second
            .apply(&GameEventRecord::decode(second.as_slice()).expect("a record"))
            .expect("folds");
        let third = note(&after_second);
        // A record missing: the third follows the first.
        let mut games = Games::new(trusted());
        follow(&mut games, &first, 1);
        assert_eq!(follow(&mut games, &third, 3), Folded::Skipped);
        let broken = games.not_followed(game.game_id()).expect("broken");
        assert_eq!(broken.from_stream_seq, 3);
        assert!(
            broken.reason.contains("does not follow on"),
            "{}",
            broken.reason
        );
        // Nothing more is folded of it, and the snapshot keeps the mark.
        assert_eq!(follow(&mut games, &second, 4), Folded::Skipped);
        let saved = games.take_changes(true).expect("changes");
        assert_eq!(saved.broken.len(), 1);
        // Mended: folded afresh from the whole log.
        games.replace(
            game.game_id(),
            &[(1, first.clone()), (2, second.clone()), (3, third)],
        );
        assert!(games.broken(game.game_id()).is_none());
        assert_eq!(
            games
                .get(game.game_id())
                .map(|e| (e.records.len(), e.last_stream_seq)),
            Some((3, 3))
        );
        // Two records with one number: the log forked.
        let mut games = Games::new(trusted());
        follow(&mut games, &first, 1);
        follow(&mut games, &second, 2);
        let action = ArbiterAction {
            action: Some(Action::Annotation(Annotation {
                text: "another".into(),
            })),
            ..Default::default()
        };
        let events = game
            .decide_arbiter(&action, "arbiter", "x")
            .expect("accepted");
        let other = Game::record_signed(Some(&game), game.game_id(), events, 3_000, &signer());
        assert_eq!(
            follow(&mut games, &other[0].encode_to_vec(), 3),
            Folded::Skipped
        );
        let forked = games.not_followed(game.game_id()).expect("broken");
        assert!(forked.reason.contains("forked"), "{}", forked.reason);
    }

    #[test]
    fn a_game_whose_log_lost_its_last_records_is_folded_afresh_shorter() {
        let mut games = Games::new(trusted());
        let (game, first) = started(1, "b1");
        let second = note(&game);
        follow(&mut games, &first, 1);
        follow(&mut games, &second, 2);
        games.replace(game.game_id(), &[(1, first)]);
        let entry = games.get(game.game_id()).expect("known");
        assert_eq!((entry.game.last_game_seq(), entry.last_stream_seq), (1, 1));
        // Nothing of it left in the log: no longer live on its board.
        games.replace(game.game_id(), &[] as &[(u64, Vec<u8>)]);
        assert!(games.get(game.game_id()).is_none());
        assert!(games.live_on("b1").is_none());
    }

    #[test]
    fn snapshots_hold_the_changed_games_and_restore_them() {
        let mut games = Games::new(trusted());
        let (game, first) = started(1, "b1");
        follow(&mut games, &first, 1);
        follow(&mut games, &note(&game), 2);
        let saved = games.take_changes(false).expect("changes");
        assert!(games.take_changes(false).is_none(), "nothing changed since");
        let restored = Games::from_snapshot(saved, trusted()).expect("restores");
        let entry = restored.get(game.game_id()).expect("restored");
        assert_eq!((entry.game.last_game_seq(), entry.last_stream_seq), (2, 2));
        assert_eq!(restored.folded_seq(), 2);
        assert_eq!(restored.live_id_on("b1"), Some(game.game_id()));
    }
}

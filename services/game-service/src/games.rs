//! The index of the games this instance knows, folded from the game log: pure (no NATS, no
//! clock), so that what a record does to it is tested on its own. The store keeps it behind a
//! lock and feeds it what it reads from and appends to the log.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::panic::AssertUnwindSafe;

use boardcast_game::events::{GameEventRecord, GameState, LogNotFollowed, game_event};
use boardcast_game::signing::TrustedKeys;
use boardcast_game::{ChainError, Game, GameError};
use boardcast_kit::panic_text;
use prost::Message as _;

use crate::snapshot::{SnapshotData, SnapshotGame};

/// One game with what it was folded from.
pub(crate) struct Entry {
    pub(crate) game: Game,
    /// Stream sequence of the game's first record: restoring games in this order restores which
    /// game is live on each board.
    pub(crate) first_stream_seq: u64,
    /// The game's records as stored, for snapshots and for completing an interrupted decision.
    pub(crate) records: Vec<Vec<u8>>,
    /// Stream sequence of the last record on the game's subject as read here (0: not known, a
    /// snapshot written before it was kept). An append expects the subject to end there, so that
    /// a record of the game this instance did not see is refused rather than written beside.
    pub(crate) last_stream_seq: u64,
    /// When the game was last folded afresh from its log here without some of the records it
    /// held (`Games::refolded`, counted across all games; 0: never): an operator removed a
    /// branch, or the records after one lost, so what was noted of its board against the
    /// earlier state no longer holds (see `ingest::Seen`).
    pub(crate) folded_afresh: u64,
}

#[derive(Default)]
pub(crate) struct Games {
    by_id: HashMap<String, Entry>,
    /// How many times a game was folded afresh here (see `Entry::folded_afresh`).
    refolds: u64,
    /// The game live on each physical board: the latest one started there.
    live_on_board: HashMap<String, LiveGame>,
    /// Every record of the stream up to this sequence has been folded.
    folded_seq: u64,
    /// The game whose record is at `folded_seq` (checked against the log when a snapshot is used).
    last_game: Option<String>,
    /// Games changed since the last snapshot.
    dirty: HashSet<String>,
    /// The keys whose signatures are accepted on records read from the log.
    trusted: TrustedKeys,
    /// Games whose records, as read here, do not follow on (one missing or out of order in
    /// what was delivered, or the log forks), with the stream sequence of the first that did
    /// not. Nothing is appended to them until they were read again whole
    /// ([`Games::refolded`]): a decision on the state folded here would be written beside the
    /// record not seen, and fork the game's log.
    behind: BTreeMap<String, Behind>,
}

/// The game live on a board.
#[derive(Debug)]
struct LiveGame {
    game_id: String,
    /// The stream sequence of its first record: a game set up on the board later (a higher
    /// one) takes the board, one read again that was set up earlier does not. Kept here, not
    /// only in the game's entry, for a game live on its board with nothing of it folded.
    first_stream_seq: u64,
}

/// Where a game's records as read here stopped following on, and whether reading it again
/// cannot help.
#[derive(Clone, Debug, PartialEq)]
struct Behind {
    /// The stream sequence of the first record that did not follow on (or of the game's last
    /// record in the log, when that is not the one folded here).
    from: u64,
    /// Why it stays behind however often it is read again, when that is known. Kept in
    /// snapshots when broken; one that cannot be folded is found so again when read again.
    stuck: Option<Stuck>,
}

/// Why a game behind stays so when read again, with what was found.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Stuck {
    /// Folding one of its records panicked (a bug in the rules or the aggregate). Nothing is
    /// decided on it until a service without the bug reads it whole: the record is in the log,
    /// so skipping it would decide on a game the log does not hold.
    Unfoldable(String),
    /// Its log, read again, does not follow on for good: two records with one number (forked),
    /// or one missing for longer than a leader takes to come back. Only an operator mends it;
    /// a decision asked for (an arbiter's) reads it again first, and finds it mended or
    /// refuses; its board's observations are refused without reading it again, which is done
    /// every 10 s at most.
    Broken(String),
}

/// What `GetGame` says of a game behind for want of a record.
const NOT_FOLLOWING_ON: &str = "a record of the game in the log does not follow on from what \
     was read of it here (one missing from what was delivered, or the log forks); it is read \
     again";

/// Why a record was not applied to a game.
enum Unapplied {
    /// The game refused it.
    Refused(GameError),
    /// Applying it panicked (a bug), saying this.
    Panicked(String),
}

/// `apply` (a record applied to a game, or a game started from its first record) with a panic in
/// it caught: one record that folding panics on (a bug) must not stop every other game, nor
/// the service at every start, as an uncaught panic under the games' lock would. After a panic
/// the game `apply` changed may be half changed: callers fold it afresh or drop it.
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

/// Why [`Games::refolded`] left a game behind.
#[derive(Debug)]
pub(crate) enum NotRefolded {
    /// The log itself does not follow on: a record still missing, or two with one number.
    DoesNotFollowOn(String),
    /// Folding one of its records panicked (a bug): reading it again will not help.
    Panicked(String),
}

/// Whether a record failed to fold because the game's records as read do not follow on (rather
/// than because the record itself is bad: undecodable, altered, not signed by a trusted key).
fn missing_or_reordered(e: &GameError) -> bool {
    matches!(
        e,
        GameError::OutOfSequence { .. }
            | GameError::NotStarted
            | GameError::Chain(ChainError::BrokenLink { .. })
    )
}

impl Entry {
    /// Whether record `game_seq` as folded is the one with `hash`.
    fn holds(&self, game_seq: u64, hash: &[u8]) -> bool {
        holds(&self.records, game_seq, hash)
    }
}

/// Whether record `game_seq` of a game's `records` as folded (one per number, in order) is the
/// one with `hash`.
fn holds(records: &[Vec<u8>], game_seq: u64, hash: &[u8]) -> bool {
    usize::try_from(game_seq)
        .ok()
        .and_then(|n| records.get(n.checked_sub(1)?))
        .and_then(|bytes| GameEventRecord::decode(bytes.as_slice()).ok())
        .is_some_and(|folded| folded.hash == hash)
}

/// Whether `payload`, the last record on game `game_id`'s subject, is one its fold skips as bad
/// in itself: not a record of the game, or one past the game's last record `last_game_seq` (a
/// record of the game that continued it would have been folded). A record at or before it is
/// one of the game's own, compared by hash.
pub(crate) fn skipped_as_bad(payload: &[u8], game_id: &str, last_game_seq: u64) -> bool {
    GameEventRecord::decode(payload)
        .ok()
        .and_then(|record| Game::open_record(&record).ok())
        .is_none_or(|event| event.game_id != game_id || event.game_seq > last_game_seq)
}

/// Whether a record's signature is checked when it is folded.
#[derive(Clone, Copy)]
enum Signature {
    /// Read from the log: signed by a trusted key, or skipped.
    Check,
    /// Signed by this instance a moment ago, in this process.
    OwnRecord,
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
        saved.sort_by_key(|g| g.first_stream_seq);
        for g in saved {
            let game = refold(&g.records).map_err(|e| format!("game {}: {e}", g.game_id))?;
            if game.game_id() != g.game_id {
                return Err(format!(
                    "game {} holds records of {}",
                    g.game_id,
                    game.game_id()
                ));
            }
            games.insert(Entry {
                game,
                first_stream_seq: g.first_stream_seq,
                records: g.records,
                last_stream_seq: g.last_stream_seq,
                folded_afresh: 0,
            });
        }
        games.folded_seq = snapshot.folded_seq;
        games.last_game = Some(snapshot.last_game).filter(|g| !g.is_empty());
        games.behind = snapshot
            .behind
            .into_iter()
            .map(|(game_id, from)| {
                let behind = Behind { from, stuck: None };
                (game_id, behind)
            })
            .collect();
        for (game_id, why) in snapshot.broken {
            games.put_broken(&game_id, &why);
        }
        Ok(games)
    }

    fn insert(&mut self, entry: Entry) {
        let game_id = entry.game.game_id().to_owned();
        self.set_up_on(entry.game.board_id(), &game_id, entry.first_stream_seq);
        self.by_id.insert(game_id, entry);
    }

    /// Game `game_id`, whose first record is at `first_stream_seq`, is live on `board_id`
    /// unless a game set up there later is.
    fn set_up_on(&mut self, board_id: &str, game_id: &str, first_stream_seq: u64) {
        let later_known = self.live_on_board.get(board_id).is_some_and(|live| {
            live.game_id != game_id && live.first_stream_seq > first_stream_seq
        });
        if !later_known {
            self.live_on_board.insert(
                board_id.to_owned(),
                LiveGame {
                    game_id: game_id.to_owned(),
                    first_stream_seq,
                },
            );
        }
    }

    /// Folds the record stored at `stream_seq`. A record bad in itself (undecodable, altered,
    /// not signed by a trusted key) is reported and skipped, so one bad record does not stop
    /// every other game; one that does not follow on from what was read of its game puts that
    /// game behind (see `behind`). Records at or before `folded_seq` were folded already.
    pub(crate) fn fold(&mut self, payload: &[u8], stream_seq: u64) {
        self.fold_record(payload, stream_seq, Signature::Check);
    }

    /// [`Games::fold`] for a record this instance signed and appended itself: its signature is
    /// not checked again (checking is most of the cost of folding, and this instance's key is
    /// trusted); its chain is.
    pub(crate) fn fold_own(&mut self, payload: &[u8], stream_seq: u64) {
        self.fold_record(payload, stream_seq, Signature::OwnRecord);
    }

    fn fold_record(&mut self, payload: &[u8], stream_seq: u64, signature: Signature) {
        if stream_seq <= self.folded_seq {
            return;
        }
        self.folded_seq = stream_seq;
        let mut game_behind = None;
        let mut panicked = None;
        let folded = GameEventRecord::decode(payload)
            .map_err(|e| e.to_string())
            .and_then(|record| {
                let event = Game::open_record(&record).map_err(|e| e.to_string())?;
                if self.behind.contains_key(&event.game_id) {
                    // Read again whole once it can be; its later records cannot follow on here.
                    return Ok(None);
                }
                let mut not_applied = |e: Unapplied| match e {
                    Unapplied::Refused(e) => {
                        if missing_or_reordered(&e) {
                            game_behind = Some(event.game_id.clone());
                        }
                        e.to_string()
                    }
                    Unapplied::Panicked(text) => {
                        // The board of a game whose first record it was: live there now.
                        let set_up_on = match &event.kind {
                            Some(game_event::Kind::Started(info)) => Some(info.board_id.clone()),
                            _ => None,
                        };
                        panicked = Some((event.game_id.clone(), text, set_up_on));
                        // Reported below, with the panic.
                        String::new()
                    }
                };
                match self.by_id.get_mut(&event.game_id) {
                    Some(entry) if entry.holds(event.game_seq, &record.hash) => {
                        // The same record stored again (published twice): nothing new, but the
                        // game's subject now ends here (kept in the next snapshot).
                        entry.last_stream_seq = stream_seq;
                        self.dirty.insert(event.game_id);
                        return Ok(None);
                    }
                    Some(entry) => {
                        guarded(&record, || match signature {
                            Signature::Check => entry.game.apply_trusted(&record, &self.trusted),
                            Signature::OwnRecord => entry.game.apply(&record),
                        })
                        .map_err(&mut not_applied)?;
                        crate::fault_points::panic_at(
                            crate::fault_points::Place::Folded,
                            &event.game_id,
                            event.game_seq,
                        );
                        entry.records.push(payload.to_vec());
                        entry.last_stream_seq = stream_seq;
                    }
                    None => {
                        let game = guarded(&record, || match signature {
                            Signature::Check => Game::from_first_trusted(&record, &self.trusted),
                            Signature::OwnRecord => Game::from_first_record(&record),
                        })
                        .map_err(&mut not_applied)?;
                        self.insert(Entry {
                            game,
                            first_stream_seq: stream_seq,
                            records: vec![payload.to_vec()],
                            last_stream_seq: stream_seq,
                            folded_afresh: 0,
                        });
                    }
                }
                Ok(Some(event.game_id))
            });
        match folded {
            Ok(Some(game_id)) => {
                self.dirty.insert(game_id.clone());
                self.last_game = Some(game_id);
            }
            Ok(None) => self.last_game = None,
            Err(e) => {
                if let Some((game_id, text, set_up_on)) = panicked {
                    tracing::error!(
                        stream_seq,
                        game = %game_id,
                        "folding a game log record panicked (a bug): {text}; nothing is decided \
                         on the game until a service without the bug reads its log"
                    );
                    self.after_panic(&game_id, stream_seq, &text, set_up_on);
                } else if let Some(game_id) = game_behind {
                    tracing::error!(
                        stream_seq,
                        game = %game_id,
                        "a game log record does not follow on from what was read of its \
                         game: {e}; nothing is appended to the game until its log is read \
                         again whole"
                    );
                    self.put_behind(&game_id, stream_seq);
                } else {
                    tracing::error!(
                        stream_seq,
                        "skipping a game log record that cannot be folded: {e}"
                    );
                }
                self.last_game = None;
            }
        }
    }

    /// Folding game `game_id`'s record at `stream_seq` panicked, saying `text`. The panic may
    /// have left the game half changed: it is folded again from its records before that one
    /// (which folded a moment ago), and put behind from that record, so that nothing is decided
    /// on it and reads say its state stops short of its log. When it was the game's first
    /// record (the game set up on board `set_up_on`), the game is live on that board all the
    /// same, with nothing folded: the board's observations are not decided for the game before.
    fn after_panic(
        &mut self,
        game_id: &str,
        stream_seq: u64,
        text: &str,
        set_up_on: Option<String>,
    ) {
        if let Some(entry) = self.by_id.get_mut(game_id) {
            match refold(&entry.records) {
                Ok(game) => entry.game = game,
                Err(e) => {
                    tracing::error!(game = %game_id, "folding the game again: {e}; nothing of it is kept here until its log is read again");
                    self.by_id.remove(game_id);
                }
            }
        }
        if let Some(board) = set_up_on {
            self.set_up_on(&board, game_id, stream_seq);
        }
        self.put_unfoldable(game_id, stream_seq, text);
    }

    /// The games whose records as read here do not follow on, with the stream sequence of the
    /// first that did not (see `behind`).
    pub(crate) fn behind(&self) -> Vec<(String, u64)> {
        self.behind
            .iter()
            .map(|(g, b)| (g.clone(), b.from))
            .collect()
    }

    /// Puts game `game_id` behind the log from stream sequence `stream_seq` (its last record in
    /// the log is not the one folded here).
    pub(crate) fn put_behind(&mut self, game_id: &str, stream_seq: u64) {
        self.behind.entry(game_id.to_owned()).or_insert(Behind {
            from: stream_seq,
            stuck: None,
        });
        // So that the next snapshot is written, with the mark.
        self.dirty.insert(game_id.to_owned());
    }

    /// Game `game_id`'s subject ends at `stream_seq` in the log (its last record there is the
    /// one folded here).
    pub(crate) fn set_game_end(&mut self, game_id: &str, stream_seq: u64) {
        if let Some(entry) = self.by_id.get_mut(game_id)
            && entry.last_stream_seq != stream_seq
        {
            entry.last_stream_seq = stream_seq;
            self.dirty.insert(game_id.to_owned());
        }
    }

    /// Where game `game_id`'s records as read here stopped following on, if they did.
    pub(crate) fn behind_from(&self, game_id: &str) -> Option<u64> {
        self.behind.get(game_id).map(|b| b.from)
    }

    /// Why nothing can be decided on game `game_id` here, when folding one of its records
    /// panicked.
    pub(crate) fn unfoldable(&self, game_id: &str) -> Option<&str> {
        match self.behind.get(game_id)?.stuck.as_ref()? {
            Stuck::Unfoldable(reason) => Some(reason),
            Stuck::Broken(_) => None,
        }
    }

    /// Game `game_id` is behind from `stream_seq` because folding its record there panicked,
    /// saying `text`.
    fn put_unfoldable(&mut self, game_id: &str, stream_seq: u64, text: &str) -> String {
        let reason =
            format!("folding its record at stream sequence {stream_seq} panicked (a bug): {text}");
        self.put_behind(game_id, stream_seq);
        if let Some(behind) = self.behind.get_mut(game_id) {
            behind.stuck = Some(Stuck::Unfoldable(reason.clone()));
        }
        reason
    }

    /// Game `game_id`, behind, was read again and its log does not follow on for good (see
    /// `Stuck::Broken`), as `reason` says. A game that cannot be folded stays marked so.
    pub(crate) fn put_broken(&mut self, game_id: &str, reason: &str) {
        if let Some(behind) = self.behind.get_mut(game_id)
            && !matches!(behind.stuck, Some(Stuck::Unfoldable(_)))
        {
            behind.stuck = Some(Stuck::Broken(reason.to_owned()));
            // So that the next snapshot is written, with the mark.
            self.dirty.insert(game_id.to_owned());
        }
    }

    /// Where game `game_id`'s log goes on past what is folded here, and why, when it does.
    pub(crate) fn not_followed(&self, game_id: &str) -> Option<LogNotFollowed> {
        self.behind.get(game_id).map(|b| LogNotFollowed {
            from_stream_seq: b.from,
            reason: match &b.stuck {
                Some(Stuck::Unfoldable(reason) | Stuck::Broken(reason)) => reason.clone(),
                None => NOT_FOLLOWING_ON.to_owned(),
            },
        })
    }

    /// `game`'s state as the API shows it, saying whether its log goes on past it.
    pub(crate) fn state_of(&self, game: &Game) -> GameState {
        GameState {
            log_not_followed: self.not_followed(game.game_id()),
            ..game.to_state()
        }
    }

    /// The game live on `board_id` cannot be folded here: its id and why.
    pub(crate) fn unfoldable_on(&self, board_id: &str) -> Option<(&str, &str)> {
        match self.stuck_on(board_id)? {
            (game_id, Stuck::Unfoldable(reason)) => Some((game_id, reason)),
            (_, Stuck::Broken(_)) => None,
        }
    }

    /// The games whose logs were found broken, and why (see `Stuck::Broken`).
    pub(crate) fn broken(&self) -> Vec<(String, String)> {
        self.behind
            .iter()
            .filter_map(|(game_id, behind)| match &behind.stuck {
                Some(Stuck::Broken(why)) => Some((game_id.clone(), why.clone())),
                _ => None,
            })
            .collect()
    }

    /// Whether game `game_id`'s log is marked broken: its board's observations are being given
    /// up until the log is mended.
    pub(crate) fn is_broken(&self, game_id: &str) -> bool {
        self.behind
            .get(game_id)
            .is_some_and(|b| matches!(b.stuck, Some(Stuck::Broken(_))))
    }

    /// The board game `game_id` is live on, if it is.
    pub(crate) fn board_of_live(&self, game_id: &str) -> Option<String> {
        self.live_on_board
            .iter()
            .find(|(_, live)| live.game_id == game_id)
            .map(|(board, _)| board.clone())
    }

    /// The games live on their boards whose records as read here follow on: those whose end
    /// in the log is looked at in turn (see `Store::look_at_games`). Finished ones too: the
    /// records removed may be those that finished it.
    pub(crate) fn live_following(&self) -> Vec<String> {
        self.live()
            .filter(|e| !self.behind.contains_key(e.game.game_id()))
            .map(|e| e.game.game_id().to_owned())
            .collect()
    }

    /// The game live on `board_id` when it is stuck behind its log: its id and why.
    pub(crate) fn stuck_on(&self, board_id: &str) -> Option<(&str, &Stuck)> {
        let game_id = &self.live_on_board.get(board_id)?.game_id;
        Some((game_id, self.behind.get(game_id)?.stuck.as_ref()?))
    }

    /// Game `game_id` folded afresh from `records` (stream sequence and record as stored, in
    /// stream order, up to `folded_seq`): every one must follow on and be signed by a trusted
    /// key. Replaces what was folded of the game, which is no longer behind. An error (the log
    /// itself does not follow on: a record still missing, or two with one number; or folding a
    /// record panicked, which marks the game unfoldable) leaves it behind, and what was folded
    /// of it as it was.
    pub(crate) fn refolded(
        &mut self,
        game_id: &str,
        records: Vec<(u64, Vec<u8>)>,
    ) -> Result<(), NotRefolded> {
        // As `fold_record` folds them: a record bad in itself (undecodable, altered, not signed
        // by a trusted key, of another game) is skipped; one that does not follow on is not.
        let mut folded: Option<(Game, u64, Vec<Vec<u8>>)> = None;
        // Where the game's subject ends, skipped records included.
        let last_stream_seq = records.iter().map(|(seq, _)| *seq).max().unwrap_or(0);
        for (seq, bytes) in records {
            let record = match GameEventRecord::decode(bytes.as_slice()) {
                Ok(record) => record,
                Err(e) => {
                    tracing::error!(stream_seq = seq, game = %game_id, "skipping a game log record that cannot be folded: {e}");
                    continue;
                }
            };
            let Some(event) = Game::open_record(&record)
                .ok()
                .filter(|event| event.game_id == game_id)
            else {
                tracing::error!(stream_seq = seq, game = %game_id, "skipping a record on the game's subject that is not one of its own");
                continue;
            };
            if let Some((_, _, kept)) = &folded
                && holds(kept, event.game_seq, &record.hash)
            {
                // The same record stored again: nothing new.
                continue;
            }
            let applied = guarded(&record, || match &mut folded {
                Some((game, _, _)) => game.apply_trusted(&record, &self.trusted),
                None => Game::from_first_trusted(&record, &self.trusted)
                    .map(|game| folded = Some((game, seq, Vec::new()))),
            });
            match applied {
                Ok(()) => {
                    if let Some((_, _, kept)) = &mut folded {
                        kept.push(bytes);
                    }
                }
                Err(Unapplied::Refused(e)) if missing_or_reordered(&e) => {
                    return Err(NotRefolded::DoesNotFollowOn(format!(
                        "stream sequence {seq}: {e}"
                    )));
                }
                Err(Unapplied::Refused(e)) => {
                    tracing::error!(stream_seq = seq, game = %game_id, "skipping a game log record that cannot be folded: {e}")
                }
                Err(Unapplied::Panicked(text)) => {
                    // Its first record: set up on its board all the same (as `after_panic`).
                    if let Some(game_event::Kind::Started(info)) = &event.kind {
                        self.set_up_on(&info.board_id, game_id, seq);
                    }
                    return Err(NotRefolded::Panicked(
                        self.put_unfoldable(game_id, seq, &text),
                    ));
                }
            }
        }
        let (game, first_stream_seq, records) = folded.ok_or_else(|| {
            NotRefolded::DoesNotFollowOn("no record of the game in the log".to_owned())
        })?;
        // Live on its board unless a game set up there later is known.
        self.set_up_on(game.board_id(), game_id, first_stream_seq);
        // Records that only go on from those folded before (one left out of what was
        // delivered, read now) remove nothing: what was noted against the game still holds.
        let folded_afresh = match self.by_id.get(game_id) {
            Some(before) if records.starts_with(&before.records) => before.folded_afresh,
            _ => {
                self.refolds = self.refolds.saturating_add(1);
                self.refolds
            }
        };
        self.by_id.insert(
            game_id.to_owned(),
            Entry {
                game,
                first_stream_seq,
                records,
                last_stream_seq,
                folded_afresh,
            },
        );
        self.behind.remove(game_id);
        self.dirty.insert(game_id.to_owned());
        Ok(())
    }

    /// The stream's records up to `stream_seq` hold nothing more to fold (removed by an
    /// operator, or not game records).
    pub(crate) fn skip_to(&mut self, stream_seq: u64) {
        self.folded_seq = self.folded_seq.max(stream_seq);
    }

    pub(crate) fn folded_seq(&self) -> u64 {
        self.folded_seq
    }

    /// The game whose record is at `folded_seq`, when known.
    #[cfg(test)]
    pub(crate) fn last_game(&self) -> Option<&str> {
        self.last_game.as_deref()
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
        self.by_id.get(&self.live_on_board.get(board_id)?.game_id)
    }

    /// The game live on each board.
    pub(crate) fn live(&self) -> impl Iterator<Item = &Entry> {
        self.live_on_board
            .values()
            .filter_map(|live| self.by_id.get(&live.game_id))
    }

    pub(crate) fn all(&self) -> impl Iterator<Item = &Entry> {
        self.by_id.values()
    }

    /// Whether a record with `prev_hash` and `game_seq` continues game `game_id` as folded (the
    /// first record of a game not known yet does).
    pub(crate) fn continues(&self, game_id: &str, prev_hash: &[u8], game_seq: u64) -> bool {
        match self.by_id.get(game_id) {
            Some(entry) => {
                entry.game.chain_head().as_slice() == prev_hash
                    && entry.game.last_game_seq().checked_add(1) == Some(game_seq)
            }
            None => game_seq == 1,
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

    /// What a snapshot needs: the games changed since the last one (all of them when `all`), and
    /// the log position they are folded up to. `None` when nothing changed.
    pub(crate) fn take_changes(&mut self, all: bool) -> Option<SnapshotData> {
        // Games behind go with it, marked so: restored, they are read again before anything is
        // appended to them, as here.
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
                    records: e.records.clone(),
                    last_stream_seq: e.last_stream_seq,
                })
            })
            .collect();
        Some(SnapshotData {
            folded_seq: self.folded_seq,
            last_game: self.last_game.clone().unwrap_or_default(),
            games: changed,
            behind: self.behind(),
            broken: self.broken(),
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

/// What [`refold`] says of a record it could not apply.
fn unapplied_text(e: Unapplied) -> String {
    match e {
        Unapplied::Refused(e) => e.to_string(),
        Unapplied::Panicked(text) => format!("folding a record panicked (a bug): {text}"),
    }
}

#[cfg(test)]
mod tests {
    use boardcast_game::events::{
        Annotation, ArbiterAction, GameStarted, Player, TimeControl, TimePeriod,
        arbiter_action::Action,
    };
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
        let info = GameStarted {
            tournament_id: "t".into(),
            round,
            board_number: 1,
            board_id: board.into(),
            edition: "fide-2023".into(),
            white: Some(Player {
                name: "W".into(),
                ..Default::default()
            }),
            black: Some(Player {
                name: "B".into(),
                ..Default::default()
            }),
            time_control: Some(TimeControl {
                periods: vec![TimePeriod {
                    base_ms: 5_400_000,
                    ..Default::default()
                }],
            }),
            ..Default::default()
        };
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

    #[test]
    fn own_records_fold_unchecked_but_still_in_chain() {
        let (game, first) = started(1, "b1");
        let second = note(&game);
        let mut checked = Games::new(trusted());
        checked.fold(&first, 1);
        checked.fold(&second, 2);
        let mut own = Games::new(trusted());
        own.fold_own(&first, 1);
        own.fold_own(&second, 2);
        assert_eq!(
            own.get(game.game_id()).map(|e| &e.records),
            checked.get(game.game_id()).map(|e| &e.records)
        );
        // A record that does not continue the chain is still refused.
        let (other, other_first) = started(2, "b2");
        let stray = note(&other);
        own.fold_own(&other_first, 3);
        own.fold_own(&stray, 4);
        own.fold_own(&stray, 5);
        assert_eq!(
            own.get(other.game_id()).map(|e| e.records.len()),
            Some(2),
            "the second copy of the note does not continue the chain"
        );
    }

    #[test]
    fn records_fold_in_stream_order_once_each() {
        let mut games = Games::new(trusted());
        let (game, first) = started(1, "b1");
        games.fold(&first, 1);
        let second = note(&game);
        games.fold(&second, 2);
        games.fold(&second, 2);
        games.fold(&first, 1);
        let entry = games.get(game.game_id()).expect("known");
        assert_eq!(entry.game.last_game_seq(), 2);
        assert_eq!(entry.records, vec![first, second]);
        assert_eq!(
            (games.folded_seq(), games.last_game()),
            (2, Some(game.game_id()))
        );
    }

    #[test]
    fn the_latest_game_set_up_on_a_board_is_live_there() {
        let mut games = Games::new(trusted());
        let (round_1, first_1) = started(1, "b1");
        let (round_2, first_2) = started(2, "b1");
        games.fold(&first_1, 5);
        games.fold(&first_2, 9);
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
    }

    #[test]
    fn a_record_that_breaks_its_chain_or_is_unsigned_is_skipped_and_others_go_on() {
        let mut games = Games::new(trusted());
        let (game, first) = started(1, "b1");
        games.fold(&first, 1);
        // A record that does not follow the game's last one.
        let mut forged = GameEventRecord::decode(note(&game).as_slice()).expect("a record");
        forged.prev_hash = vec![1; 32];
        games.fold(&forged.encode_to_vec(), 2);
        // Not a record at all.
        games.fold(b"not a record", 3);
        // A game signed by a key nobody trusts.
        let mut stranger = Games::new(TrustedKeys::default());
        let (_, other_first) = started(1, "b2");
        stranger.fold(&other_first, 1);
        assert_eq!(stranger.len(), 0);
        assert_eq!(
            games.get(game.game_id()).map(|e| e.game.last_game_seq()),
            Some(1)
        );
        assert_eq!((games.folded_seq(), games.last_game()), (3, None));
        // The game goes on with the record that really follows.
        games.fold(&note(&game), 4);
        assert_eq!(
            games.get(game.game_id()).map(|e| e.game.last_game_seq()),
            Some(2)
        );
    }

    #[test]
    fn a_game_whose_records_as_read_skip_one_is_behind_until_read_again_whole() {
        let mut games = Games::new(trusted());
        let (game, first) = started(1, "b1");
        let mut second_game = game.clone();
        let second = note(&game);
        second_game
            .apply(&GameEventRecord::decode(second.as_slice()).expect("a record"))
            .expect("follows");
        let third = note(&second_game);
        let (other, other_first) = started(2, "b2");
        assert_ne!(other.game_id(), game.game_id());
        games.fold(&first, 1);
        // Record 2 (stream sequence 2) was left out of what was delivered.
        games.fold(&third, 3);
        games.fold(&other_first, 4);
        assert_eq!(games.behind_from(game.game_id()), Some(3));
        assert_eq!(games.behind(), vec![(game.game_id().to_owned(), 3)]);
        // Other games go on; the one behind takes nothing more until read again.
        assert!(games.get(other.game_id()).is_some());
        games.fold(&note(&second_game), 5);
        assert_eq!(games.folded_seq(), 5);
        // Read again without the record: still behind.
        let partial = vec![(1, first.clone()), (3, third.clone())];
        assert!(games.refolded(game.game_id(), partial).is_err());
        assert_eq!(games.behind_from(game.game_id()), Some(3));
        assert!(
            games.stuck_on("b1").is_none(),
            "read again, it may still follow on"
        );
        // Taken as broken for good: its board's observations wait on nothing, and its state
        // says why.
        games.put_broken(game.game_id(), "forked");
        assert_eq!(
            games.stuck_on("b1"),
            Some((game.game_id(), &Stuck::Broken("forked".to_owned())))
        );
        assert_eq!(
            games.unfoldable(game.game_id()),
            None,
            "decisions read it again"
        );
        let not_followed = games.not_followed(game.game_id()).expect("behind");
        assert_eq!(not_followed.reason, "forked");
        // Read again each turn; found mended, its board's observations given up are decided.
        assert_eq!(
            games.broken(),
            [(game.game_id().to_owned(), "forked".to_owned())]
        );
        assert!(games.is_broken(game.game_id()) && !games.is_broken(other.game_id()));
        assert_eq!(games.board_of_live(game.game_id()).as_deref(), Some("b1"));
        assert_eq!(games.live_following(), [other.game_id()], "not one behind");
        // A snapshot meanwhile keeps the marks: restored, the game is behind still, and broken.
        let restored = Games::from_snapshot(games.take_changes(true).expect("all"), trusted())
            .expect("restores");
        assert_eq!(restored.behind_from(game.game_id()), Some(3));
        assert_eq!(
            restored.stuck_on("b1"),
            Some((game.game_id(), &Stuck::Broken("forked".to_owned())))
        );
        assert!(restored.get(other.game_id()).is_some());
        // Read again whole: folded afresh, live on its board, no longer behind (a record bad in
        // itself is skipped, as when folded).
        let whole = vec![(1, first), (2, second), (3, b"junk".to_vec()), (4, third)];
        games.refolded(game.game_id(), whole).expect("whole");
        assert_eq!(games.behind_from(game.game_id()), None);
        assert!(games.stuck_on("b1").is_none(), "mended");
        assert!(games.broken().is_empty());
        assert!(!games.is_broken(game.game_id()));
        let entry = games.get(game.game_id()).expect("known");
        assert_eq!((entry.game.last_game_seq(), entry.records.len()), (3, 3));
        assert_eq!(
            games.live_on("b1").map(|e| e.game.game_id().to_owned()),
            Some(game.game_id().to_owned())
        );
        assert!(games.take_changes(false).is_some());
    }

    #[test]
    fn a_game_read_again_never_takes_its_board_from_one_set_up_there_later() {
        let mut games = Games::new(trusted());
        let (earlier, earlier_first) = started(1, "b1");
        let earlier_second = note(&earlier);
        let mut earlier_then = earlier.clone();
        earlier_then
            .apply(&GameEventRecord::decode(earlier_second.as_slice()).expect("a record"))
            .expect("follows");
        let (later, later_first) = started(2, "b1");
        games.fold(&earlier_first, 1);
        // Record 2 of the earlier game (stream sequence 2) was left out of what was delivered.
        games.fold(&note(&earlier_then), 3);
        games.fold(&later_first, 5);
        assert_eq!(games.behind_from(earlier.game_id()), Some(3));
        let whole = vec![
            (1, earlier_first),
            (2, earlier_second),
            (3, note(&earlier_then)),
        ];
        games.refolded(earlier.game_id(), whole).expect("whole");
        assert_eq!(
            games.live_on("b1").map(|e| e.game.game_id()),
            Some(later.game_id())
        );
    }

    #[test]
    fn the_same_record_stored_twice_is_a_duplicate_not_a_fork() {
        let mut games = Games::new(trusted());
        let (game, first) = started(1, "b1");
        let second = note(&game);
        games.fold(&first, 1);
        games.fold(&second, 2);
        games.fold(&second, 3);
        assert_eq!(games.behind_from(game.game_id()), None);
        let log = vec![(1, first), (2, second.clone()), (3, second)];
        games
            .refolded(game.game_id(), log)
            .expect("a copy is no fork");
        assert_eq!(games.get(game.game_id()).map(|e| e.records.len()), Some(2));
    }

    #[test]
    fn where_each_game_s_subject_ends_follows_its_records_as_read() {
        let mut games = Games::new(trusted());
        let (game, first) = started(1, "b1");
        let (other, other_first) = started(2, "b2");
        let second = note(&game);
        let end = |games: &Games, id: &str| games.get(id).map(|e| e.last_stream_seq);
        games.fold(&first, 1);
        games.fold(&other_first, 2);
        assert_eq!(end(&games, game.game_id()), Some(1));
        games.fold_own(&second, 3);
        assert_eq!(end(&games, game.game_id()), Some(3));
        assert_eq!(
            end(&games, other.game_id()),
            Some(2),
            "others' records do not move it"
        );
        // Stored twice: the subject ends at the copy, which the next snapshot keeps.
        games.take_changes(false);
        games.fold(&second, 4);
        assert_eq!(end(&games, game.game_id()), Some(4));
        let changed = games.take_changes(false).expect("a change");
        assert_eq!(
            changed
                .games
                .iter()
                .map(|g| g.last_stream_seq)
                .collect::<Vec<_>>(),
            [4]
        );
        // So is a game put behind.
        games.put_behind(other.game_id(), 9);
        let changed = games.take_changes(false).expect("a change");
        assert_eq!(changed.behind, [(other.game_id().to_owned(), 9)]);
        games
            .refolded(other.game_id(), vec![(2, other_first.clone())])
            .expect("whole");
        // A record bad in itself is skipped here: where the subject ends is then learnt from the
        // log (`set_game_end`) or a reading again, which counts every record on the subject.
        games.fold(b"junk", 5);
        assert_eq!(end(&games, game.game_id()), Some(4));
        games.set_game_end(game.game_id(), 5);
        assert_eq!(end(&games, game.game_id()), Some(5));
        let log = vec![(1, first), (3, second), (6, b"junk".to_vec())];
        games.refolded(game.game_id(), log).expect("whole");
        assert_eq!(end(&games, game.game_id()), Some(6));
        // Kept in snapshots.
        let restored = Games::from_snapshot(games.take_changes(true).expect("all"), trusted())
            .expect("restores");
        assert_eq!(end(&restored, game.game_id()), Some(6));
        assert_eq!(end(&restored, other.game_id()), Some(2));
    }

    #[test]
    fn a_last_record_is_taken_as_skipped_only_when_it_cannot_be_one_of_the_game_s_own() {
        let (game, first) = started(1, "b1");
        let (other, other_first) = started(2, "b2");
        let id = game.game_id();
        assert!(skipped_as_bad(b"junk", id, 1));
        assert!(skipped_as_bad(&other_first, id, 1), "another game's record");
        assert!(
            skipped_as_bad(&note(&game), id, 1),
            "past the game's last record"
        );
        assert!(
            !skipped_as_bad(&first, id, 1),
            "one of its own, compared by hash"
        );
        assert!(!skipped_as_bad(&note(&game), id, 2));
        assert!(!skipped_as_bad(&note(&other), other.game_id(), 2));
    }

    #[test]
    fn a_game_whose_first_record_was_not_read_is_behind() {
        let mut games = Games::new(trusted());
        let (game, first) = started(1, "b1");
        games.fold(&note(&game), 2);
        assert_eq!(games.behind_from(game.game_id()), Some(2));
        assert!(games.get(game.game_id()).is_none());
        games
            .refolded(game.game_id(), vec![(1, first), (2, note(&game))])
            .expect("whole");
        assert_eq!(
            games.get(game.game_id()).map(|e| e.game.last_game_seq()),
            Some(2)
        );
    }

    #[test]
    fn a_record_continues_a_game_only_after_its_last_one() {
        let mut games = Games::new(trusted());
        let (game, first) = started(1, "b1");
        assert!(games.continues(game.game_id(), &[0; 32], 1));
        games.fold(&first, 1);
        assert!(games.continues(game.game_id(), game.chain_head(), 2));
        assert!(!games.continues(game.game_id(), game.chain_head(), 3));
        assert!(!games.continues(game.game_id(), &[0; 32], 2));
        assert!(!games.continues("t-r9-b9", &[0; 32], 2));
    }

    #[test]
    fn snapshots_hold_the_changed_games_and_restore_them() {
        let mut games = Games::new(trusted());
        let (game_1, first_1) = started(1, "b1");
        let (game_2, first_2) = started(2, "b1");
        games.fold(&first_1, 1);
        games.fold(&first_2, 2);
        let all = games.take_changes(false).expect("changes");
        assert_eq!(all.games.len(), 2);
        assert!(games.take_changes(false).is_none(), "nothing changed since");
        games.fold(&note(&game_2), 3);
        let changed = games.take_changes(false).expect("changes");
        assert_eq!(changed.games.len(), 1);
        assert_eq!(changed.folded_seq, 3);
        let everything = games.take_changes(true).expect("all");
        let restored = Games::from_snapshot(everything, trusted()).expect("restores");
        assert_eq!(restored.folded_seq(), 3);
        assert_eq!(restored.last_game(), Some(game_2.game_id()));
        assert_eq!(
            restored.live_on("b1").map(|e| e.game.game_id()),
            Some(game_2.game_id()),
            "the later game is live on the board again"
        );
        assert!(restored.get(game_1.game_id()).is_some());
    }
}

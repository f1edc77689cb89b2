//! What the broadcast service shows and when: every game's display fold, held back by the
//! organiser's delay, and the feeds (PGN and JSON) built from what has been released.
//!
//! Pure: no I/O and no wall clock; the service passes the time in. The one rule that everything
//! here serves: **nothing recorded later than `now − delay` is ever visible** — not in a body,
//! not in its size or `ETag`, not in a list of rounds — and what was released stays released
//! when the delay is raised (each round's release point only moves forward).

mod delay;
mod delta;
mod lichess;
mod standings;
mod teams;
mod view;

use std::{
    collections::{BTreeMap, BTreeSet, HashMap, VecDeque},
    sync::{Arc, Mutex},
};

use boardcast_game::signing::TrustedKeys;
use boardcast_game::{
    Game, GameError,
    display::{DisplayError, DisplayGame, clock_stopped_by, shows},
    events::{GameEvent, GameEventRecord},
};
use boardcast_rules::pgn::write_annotated_game;
use prost::Message as _;
use sha2::{Digest, Sha256};

pub use delay::{
    DelayError, Delays, MAX_DELAY_MS, RELEASE_STEP_MS, STEPPED_FROM_MS, release_point,
    release_step_ms,
};
pub use delta::{Applied, DeltaError, GameDelta, apply_delta};
pub use lichess::{LICHESS_MAX_GAMES, LichessPush, LichessPusher, parse_board_range};
pub use standings::{RoundSummary, Standing, TeamStanding, TournamentSummary};
pub use teams::{MatchView, team_matches};
pub use view::{ClockView, GameView, PlayerView, national_line};

/// A round of a tournament: the unit of a feed and of the delay.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct RoundKey {
    pub tournament_id: String,
    pub round: u32,
}

/// A response body and what a poller needs to tell whether it changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Body {
    pub text: String,
    /// A strong validator: a hash of the text, so equal bodies have equal tags across restarts.
    pub etag: String,
    /// When the newest event in the body was recorded (ms since the epoch): never later than
    /// the release point, so it gives nothing away.
    pub last_modified_unix_ms: i64,
}

impl Body {
    pub fn new(text: String, last_modified_unix_ms: i64) -> Body {
        let digest = Sha256::digest(text.as_bytes());
        let etag = format!(
            "\"{}\"",
            digest[..12]
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        );
        Body {
            text,
            etag,
            last_modified_unix_ms,
        }
    }
}

/// A game changed when events were released.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub round: RoundKey,
    pub game_id: String,
    /// The round's version after the release: live updates carry it as their id.
    pub version: u64,
    /// Whether live viewers see the change; `false`: only its PGN tells more (a note, a draw
    /// offer), for the round's feed and whoever pushes it on.
    pub seen_live: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum FeedError {
    #[error(transparent)]
    Record(#[from] GameError),
    #[error("game {game_id}: expected log entry {expected}, got {got}")]
    OutOfSequence {
        game_id: String,
        expected: u64,
        got: u64,
    },
    #[error("game {game_id}, log entry {game_seq}: previous hash does not match the chain")]
    BrokenChain { game_id: String, game_seq: u64 },
    #[error("game {game_id}: {source}")]
    Display {
        game_id: String,
        source: DisplayError,
    },
}

impl FeedError {
    /// The game whose records as delivered do not follow on (a record left out, or one the log
    /// no longer holds), when that is what this says: reading its log again may put it right.
    pub fn game_out_of_chain(&self) -> Option<&str> {
        self.out_of_chain_at().map(|(game_id, _)| game_id)
    }

    /// [`FeedError::game_out_of_chain`], with the number of the log entry that does not
    /// follow on.
    pub fn out_of_chain_at(&self) -> Option<(&str, u64)> {
        match self {
            FeedError::OutOfSequence { game_id, got, .. } => Some((game_id, *got)),
            FeedError::BrokenChain { game_id, game_seq } => Some((game_id, *game_seq)),
            FeedError::Record(_) | FeedError::Display { .. } => None,
        }
    }
}

/// One game: where its log has been read to, what viewers see and what waits for release.
struct FeedGame {
    round: RoundKey,
    board_number: u32,
    /// The log's order and hash chain, checked as records arrive.
    last_game_seq: u64,
    chain_head: [u8; 32],
    /// Whether a signed record has been taken: from then on every record must be signed.
    signed: bool,
    /// What has been released; `None` until the game's start is.
    shown: Option<DisplayGame>,
    /// Events read from the log and not yet released, oldest first.
    pending: VecDeque<GameEvent>,
    /// The round's version when the shown view last changed: a live connection resuming after
    /// an earlier one is sent the game again.
    changed_at: u64,
    /// The view's version: the `game_seq` of the last event that changed what viewers see, so
    /// that every instance following the log gives the same view the same version.
    view_version: u64,
    /// The shown game as PGN, built when it changes.
    pgn: Option<Arc<Body>>,
    /// The shown game as JSON for live pages, built when it changes.
    json: Option<Arc<str>>,
    /// The shown view, which the next change is told against.
    view: Option<GameView>,
    /// The last change as JSON ([`GameDelta`]); `None` when it has to be sent whole (first
    /// shown, taken again from its log, its players changed).
    delta: Option<Arc<str>>,
}

/// A round: how far it has been released and the cache of its feed.
struct RoundFeed {
    /// Everything recorded up to here is shown; only ever moves forward.
    released_until_unix_ms: i64,
    /// Counts the releases that changed something in the round.
    version: u64,
    /// The shown games in board order.
    boards: BTreeSet<(u32, String)>,
    /// The round's PGN, rebuilt on the first request after a change.
    pgn: Mutex<Option<Arc<Body>>>,
}

impl RoundFeed {
    fn new(first_version: u64) -> RoundFeed {
        RoundFeed {
            released_until_unix_ms: i64::MIN,
            version: first_version,
            boards: BTreeSet::new(),
            pgn: Mutex::new(None),
        }
    }
}

/// Every game of every round, as far as the delay lets it be seen.
pub struct Feeds {
    games: HashMap<String, FeedGame>,
    rounds: BTreeMap<RoundKey, RoundFeed>,
    delays: Delays,
    /// The keys whose signatures are accepted on the log's records.
    trusted: TrustedKeys,
    /// Games with pending events: the only ones a release has to look at.
    waiting: BTreeSet<String>,
    /// What changed since the last `take_dirty`, for the service to store.
    dirty_games: BTreeSet<String>,
    dirty_rounds: BTreeSet<RoundKey>,
    /// Where this run's round versions start (see [`Feeds::restore`]).
    first_version: u64,
}

/// How many versions one run of the feeds may use: runs' versions never overlap, and 2^53 (exact
/// in every JSON reader) allows two million runs.
pub const VERSIONS_PER_RUN: u64 = 1 << 32;

/// A game as stored between runs of the service.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GameSnapshot {
    pub round: RoundKey,
    pub board_number: u32,
    pub last_game_seq: u64,
    pub chain_head: [u8; 32],
    /// Absent in state written before records were signed.
    #[serde(default)]
    pub signed: bool,
    pub shown: Option<DisplayGame>,
    /// The pending events, encoded.
    pub pending: Vec<Vec<u8>>,
    /// The round's version when the shown view last changed.
    pub version: u64,
    /// The view's version (see `FeedGame`); absent in state written before it was kept.
    #[serde(default)]
    pub view_version: u64,
}

/// A round as stored between runs of the service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RoundSnapshot {
    pub released_until_unix_ms: i64,
    pub version: u64,
}

/// What changed since it was last taken: to be stored with the log position it came from.
#[derive(Debug, Default)]
pub struct Dirty {
    pub games: Vec<(String, GameSnapshot)>,
    pub rounds: Vec<(RoundKey, RoundSnapshot)>,
}

impl Feeds {
    /// The keys whose signatures the feeds accept on records.
    pub fn trusted(&self) -> &TrustedKeys {
        &self.trusted
    }

    pub fn new(delays: Delays, trusted: TrustedKeys) -> Feeds {
        Feeds {
            games: HashMap::new(),
            rounds: BTreeMap::new(),
            delays,
            trusted,
            waiting: BTreeSet::new(),
            dirty_games: BTreeSet::new(),
            dirty_rounds: BTreeSet::new(),
            first_version: 0,
        }
    }

    pub fn delays(&self) -> &Delays {
        &self.delays
    }

    /// The delay settings from now on. What was released stays released; a lower delay releases
    /// what is now due at the next [`Feeds::release`].
    pub fn set_delays(&mut self, delays: Delays) {
        self.delays = delays;
    }

    /// Takes one record of the game log, in the log's order. Checks the record's hash, its
    /// place in the game's sequence and chain, and its signature; keeps what viewers may see for
    /// release. A record already taken (delivered again) changes nothing.
    pub fn accept(&mut self, record: &GameEventRecord) -> Result<(), FeedError> {
        let event = Game::open_record(record)?;
        let head: [u8; 32] =
            record
                .hash
                .as_slice()
                .try_into()
                .map_err(|_| FeedError::BrokenChain {
                    game_id: event.game_id.clone(),
                    game_seq: event.game_seq,
                })?;
        match self.games.get_mut(&event.game_id) {
            Some(game) => {
                if event.game_seq <= game.last_game_seq {
                    // Another record with the number of the last one taken: refused as any
                    // record no trusted key signed, or else the log forks there.
                    if event.game_seq == game.last_game_seq && head != game.chain_head {
                        self.trusted
                            .check(record, event.game_seq, game.signed)
                            .map_err(GameError::from)?;
                        return Err(FeedError::BrokenChain {
                            game_id: event.game_id,
                            game_seq: event.game_seq,
                        });
                    }
                    // Delivered again (the log re-read from an older position): already taken.
                    return Ok(());
                }
                let expected = game.last_game_seq.saturating_add(1);
                if event.game_seq != expected {
                    return Err(FeedError::OutOfSequence {
                        game_id: event.game_id,
                        expected,
                        got: event.game_seq,
                    });
                }
                if record.prev_hash.as_slice() != game.chain_head.as_slice() {
                    return Err(FeedError::BrokenChain {
                        game_id: event.game_id,
                        game_seq: event.game_seq,
                    });
                }
                self.trusted
                    .check(record, event.game_seq, game.signed)
                    .map_err(GameError::from)?;
                game.signed |= !record.signature.is_empty();
                game.last_game_seq = event.game_seq;
                game.chain_head = head;
                let game_id = event.game_id.clone();
                if shows(&event) || changes_clock_run(game, &event) {
                    game.pending.push_back(event);
                    self.waiting.insert(game_id.clone());
                }
                self.dirty_games.insert(game_id);
            }
            None => {
                let Some(boardcast_game::events::game_event::Kind::Started(info)) = &event.kind
                else {
                    return Err(FeedError::OutOfSequence {
                        game_id: event.game_id,
                        expected: 1,
                        got: event.game_seq,
                    });
                };
                if event.game_seq != 1 || record.prev_hash.as_slice() != [0u8; 32].as_slice() {
                    return Err(FeedError::OutOfSequence {
                        game_id: event.game_id,
                        expected: 1,
                        got: event.game_seq,
                    });
                }
                self.trusted
                    .check(record, 1, false)
                    .map_err(GameError::from)?;
                let round = RoundKey {
                    tournament_id: info.tournament_id.clone(),
                    round: info.round,
                };
                self.rounds
                    .entry(round.clone())
                    .or_insert_with(|| RoundFeed::new(self.first_version));
                let game_id = event.game_id.clone();
                self.games.insert(
                    game_id.clone(),
                    FeedGame {
                        round,
                        board_number: info.board_number,
                        last_game_seq: 1,
                        chain_head: head,
                        signed: !record.signature.is_empty(),
                        shown: None,
                        pending: VecDeque::from([event]),
                        changed_at: 0,
                        view_version: 0,
                        pgn: None,
                        json: None,
                        view: None,
                        delta: None,
                    },
                );
                self.waiting.insert(game_id.clone());
                self.dirty_games.insert(game_id);
            }
        }
        Ok(())
    }

    /// Game `game_id` taken again from its whole log, read again (its records in order): what
    /// was taken of it is dropped, and its view is built again from these as they fall due. For
    /// a game whose log did not follow on and that an operator mended (records removed, a
    /// branch kept). When these do not follow on either, the game stays as it was.
    pub fn read_again(
        &mut self,
        game_id: &str,
        records: &[GameEventRecord],
    ) -> Result<(), FeedError> {
        if records.is_empty() {
            return Ok(());
        }
        let before = self.games.remove(game_id);
        // As when the log is followed: a record bad in itself is refused and the rest taken; one
        // that does not follow on stops it.
        let taken = records
            .iter()
            .map(|record| self.accept(record))
            .try_for_each(|taken| match taken {
                Err(e) if e.game_out_of_chain().is_some() => Err(e),
                _ => Ok(()),
            });
        match taken {
            Ok(()) => {
                if let (Some(before), Some(game)) = (before, self.games.get_mut(game_id)) {
                    // Round versions only go forward, for pages that ask what changed since.
                    game.changed_at = before.changed_at;
                }
                self.dirty_games.insert(game_id.to_owned());
                Ok(())
            }
            Err(e) => {
                self.games.remove(game_id);
                if let Some(before) = before {
                    self.games.insert(game_id.to_owned(), before);
                }
                Err(e)
            }
        }
    }

    /// Moves each round's release point to `now − delay` (never back) and shows every pending
    /// event recorded up to it. Returns the games that changed, with the round's new version
    /// (each release that changes a round counts one); a game that cannot be shown is reported
    /// and keeps its last good view.
    pub fn release(&mut self, now_unix_ms: i64) -> (Vec<Change>, Vec<FeedError>) {
        for (key, round) in &mut self.rounds {
            let until = release_point(now_unix_ms, self.delays.delay_ms(key));
            if until > round.released_until_unix_ms {
                round.released_until_unix_ms = until;
                self.dirty_rounds.insert(key.clone());
            }
        }
        // Per round, the games changed and whether viewers see each change.
        let mut changed: BTreeMap<RoundKey, Vec<(String, bool)>> = BTreeMap::new();
        let mut errors = Vec::new();
        let waiting = std::mem::take(&mut self.waiting);
        for game_id in waiting {
            let Some(game) = self.games.get_mut(&game_id) else {
                continue;
            };
            let until = self
                .rounds
                .get(&game.round)
                .map_or(i64::MIN, |r| r.released_until_unix_ms);
            let mut any = false;
            // The view after the last event of this release that changed it, with that
            // event's number as its version: event by event, so that every instance gives a
            // view the same version however its releases group the events.
            let mut newest: Option<GameView> = None;
            while game
                .pending
                .front()
                .is_some_and(|e| e.recorded_unix_ms <= until)
            {
                let Some(event) = game.pending.pop_front() else {
                    break;
                };
                let result = if let Some(shown) = game.shown.as_mut() {
                    shown.evolve(&event)
                } else {
                    DisplayGame::start(&event).map(|shown| game.shown = Some(shown))
                };
                match result {
                    Ok(()) => any = true,
                    Err(source) => errors.push(FeedError::Display {
                        game_id: game_id.clone(),
                        source,
                    }),
                }
                if let Some(shown) = &game.shown {
                    let view = GameView::of(shown, event.game_seq);
                    let before = newest.as_ref().or(game.view.as_ref());
                    if before.is_none_or(|before| !delta::same_but_version(before, &view)) {
                        newest = Some(view);
                    }
                }
            }
            if !game.pending.is_empty() {
                self.waiting.insert(game_id.clone());
            }
            if !any {
                continue;
            }
            self.dirty_games.insert(game_id.clone());
            rebuild_pgn(game);
            // Nothing a viewer sees may have changed (a note for the record, say): no live
            // update then, but the PGN may tell more.
            let seen_live = newest.is_some();
            if let Some(view) = newest {
                show(game, view);
            }
            changed
                .entry(game.round.clone())
                .or_default()
                .push((game_id, seen_live));
        }
        let mut changes = Vec::new();
        for (key, game_ids) in changed {
            let Some(round) = self.rounds.get_mut(&key) else {
                continue;
            };
            round.version = round.version.saturating_add(1);
            if let Ok(mut pgn) = round.pgn.lock() {
                *pgn = None;
            }
            self.dirty_rounds.insert(key.clone());
            for (game_id, seen_live) in game_ids {
                let Some(game) = self.games.get_mut(&game_id) else {
                    continue;
                };
                if seen_live {
                    game.changed_at = round.version;
                }
                round.boards.insert((game.board_number, game_id.clone()));
                changes.push(Change {
                    round: key.clone(),
                    game_id,
                    version: round.version,
                    seen_live,
                });
            }
        }
        (changes, errors)
    }

    /// When the next pending event falls due with the current delays (ms since the epoch).
    pub fn next_due(&self) -> Option<i64> {
        self.waiting
            .iter()
            .filter_map(|id| self.games.get(id))
            .filter_map(|g| {
                let first = g.pending.front()?;
                Some(delay::shown_at(
                    first.recorded_unix_ms,
                    self.delays.delay_ms(&g.round),
                ))
            })
            .min()
    }

    /// How long a copy of the round's feeds taken at `now` stays the newest (ms), so that a
    /// cache in front (a CDN) may keep it that long: until the round's release point next
    /// moves, for a round released in steps ([`release_step_ms`]); 0 for one released
    /// continuously, where a newer copy may be due at any moment. It depends on the clock, the
    /// delay and whether this copy has been released up to now, never on what is held back: a
    /// copy asked for after a step began but before its release ran is already stale (0).
    pub fn round_fresh_for_ms(&self, key: &RoundKey, now_unix_ms: i64) -> u64 {
        let delay = self.delays.delay_ms(key);
        let step = release_step_ms(delay);
        if step == 0
            || self
                .released_until(key)
                .is_none_or(|released| released < release_point(now_unix_ms, delay))
        {
            return 0;
        }
        let until = now_unix_ms.saturating_sub(i64::try_from(delay).unwrap_or(i64::MAX));
        u64::try_from(step - until.rem_euclid(step)).unwrap_or(0)
    }

    /// The rounds with at least one game shown, by tournament and number.
    pub fn rounds(&self) -> Vec<&RoundKey> {
        self.rounds
            .iter()
            .filter(|(_, r)| !r.boards.is_empty())
            .map(|(k, _)| k)
            .collect()
    }

    /// Whether anything of the round is shown (released).
    pub fn shows_round(&self, key: &RoundKey) -> bool {
        self.rounds.get(key).is_some_and(|r| !r.boards.is_empty())
    }

    /// The round's version (0 before anything of it was shown).
    pub fn round_version(&self, key: &RoundKey) -> u64 {
        self.rounds.get(key).map_or(0, |r| r.version)
    }

    /// Up to where the round has been released (ms since the epoch).
    pub fn released_until(&self, key: &RoundKey) -> Option<i64> {
        self.rounds
            .get(key)
            .map(|r| r.released_until_unix_ms)
            .filter(|t| *t != i64::MIN)
    }

    /// The shown games of a round in board order.
    /// A team event's matches in the round, as shown ([`team_matches`]).
    pub fn round_matches(&self, key: &RoundKey) -> Vec<MatchView> {
        team_matches(self.round_feed_games(key).filter_map(|g| g.view.as_ref()))
    }

    /// The shown games of a round in board order, each with the round's version when it last
    /// changed.
    pub fn round_games_with_versions(&self, key: &RoundKey) -> Vec<(&DisplayGame, u64)> {
        self.round_feed_games(key)
            .filter_map(|g| Some((g.shown.as_ref()?, g.changed_at)))
            .collect()
    }

    pub fn round_games(&self, key: &RoundKey) -> Vec<&DisplayGame> {
        self.round_feed_games(key)
            .filter_map(|g| g.shown.as_ref())
            .collect()
    }

    fn round_feed_games(&self, key: &RoundKey) -> impl Iterator<Item = &FeedGame> {
        self.rounds
            .get(key)
            .into_iter()
            .flat_map(|r| r.boards.iter())
            .filter_map(|(_, id)| self.games.get(id))
    }

    /// A shown game.
    pub fn game(&self, game_id: &str) -> Option<&DisplayGame> {
        self.games.get(game_id)?.shown.as_ref()
    }

    /// The shown game's round and the round's version when it last changed.
    pub fn game_round(&self, game_id: &str) -> Option<(&RoundKey, u64)> {
        let game = self.games.get(game_id)?;
        game.shown.as_ref()?;
        Some((&game.round, game.changed_at))
    }

    /// The round's games as JSON for live pages, with the round's version when each last
    /// changed: those changed after `since` (all with 0), in board order.
    pub fn round_json_since(&self, key: &RoundKey, since: u64) -> Vec<(&str, u64, Arc<str>)> {
        self.rounds
            .get(key)
            .into_iter()
            .flat_map(|r| r.boards.iter())
            .filter_map(|(_, id)| Some((id.as_str(), self.games.get(id)?)))
            .filter(|(_, g)| g.changed_at > since)
            .filter_map(|(id, g)| Some((id, g.changed_at, g.json.clone()?)))
            .collect()
    }

    /// A shown game as JSON for live pages, with the round's version when it last changed.
    pub fn game_json(&self, game_id: &str) -> Option<(u64, Arc<str>)> {
        let game = self.games.get(game_id)?;
        Some((game.changed_at, game.json.clone()?))
    }

    /// The game's last change as a [`GameDelta`] (JSON), from the version before its current
    /// one; `None` when that change has to be sent whole.
    pub fn game_delta(&self, game_id: &str) -> Option<Arc<str>> {
        self.games.get(game_id)?.delta.clone()
    }

    /// A shown game as PGN.
    pub fn game_pgn(&self, game_id: &str) -> Option<Arc<Body>> {
        self.games.get(game_id)?.pgn.clone()
    }

    /// The round's shown games as one PGN file in board order; `None` when none is shown.
    pub fn round_pgn(&self, key: &RoundKey) -> Option<Arc<Body>> {
        let round = self.rounds.get(key)?;
        if round.boards.is_empty() {
            return None;
        }
        let mut cache = round.pgn.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(body) = cache.as_ref() {
            return Some(body.clone());
        }
        let mut text = String::new();
        let mut newest = i64::MIN;
        for game in self.round_feed_games(key) {
            if let Some(pgn) = &game.pgn {
                text.push_str(&pgn.text);
                newest = newest.max(pgn.last_modified_unix_ms);
            }
        }
        let body = Arc::new(Body::new(text, newest));
        *cache = Some(body.clone());
        Some(body)
    }

    /// What changed since the last call, for the service to store.
    pub fn take_dirty(&mut self) -> Dirty {
        let games = std::mem::take(&mut self.dirty_games)
            .into_iter()
            .filter_map(|id| {
                let g = self.games.get(&id)?;
                Some((
                    id,
                    GameSnapshot {
                        round: g.round.clone(),
                        board_number: g.board_number,
                        last_game_seq: g.last_game_seq,
                        chain_head: g.chain_head,
                        signed: g.signed,
                        shown: g.shown.clone(),
                        pending: g.pending.iter().map(|e| e.encode_to_vec()).collect(),
                        version: g.changed_at,
                        view_version: g.view_version,
                    },
                ))
            })
            .collect();
        let rounds = std::mem::take(&mut self.dirty_rounds)
            .into_iter()
            .filter_map(|key| {
                let r = self.rounds.get(&key)?;
                Some((
                    key,
                    RoundSnapshot {
                        released_until_unix_ms: r.released_until_unix_ms,
                        version: r.version,
                    },
                ))
            })
            .collect();
        Dirty { games, rounds }
    }

    /// Marks games and rounds as changed again (their store failed): the next `take_dirty`
    /// returns them as they are then.
    pub fn mark_dirty(&mut self, dirty: &Dirty) {
        self.dirty_games
            .extend(dirty.games.iter().map(|(id, _)| id.clone()));
        self.dirty_rounds
            .extend(dirty.rounds.iter().map(|(key, _)| key.clone()));
    }

    /// Rebuilds the feeds from what a previous run stored, as the `run`-th run (counted from
    /// 0). What was stored may be older than what viewers saw (the service stores a little
    /// later); this run's versions all lie past `run` × [`VERSIONS_PER_RUN`], above any an
    /// earlier run gave, so that a viewer resuming after the version it had is sent everything
    /// shown again.
    pub fn restore(
        delays: Delays,
        trusted: TrustedKeys,
        games: impl IntoIterator<Item = (String, GameSnapshot)>,
        rounds: impl IntoIterator<Item = (RoundKey, RoundSnapshot)>,
        run: u64,
    ) -> Result<Feeds, prost::DecodeError> {
        let mut feeds = Feeds::new(delays, trusted);
        feeds.first_version = run.saturating_mul(VERSIONS_PER_RUN);
        for (key, snapshot) in rounds {
            let mut round = RoundFeed::new(feeds.first_version);
            round.released_until_unix_ms = snapshot.released_until_unix_ms;
            round.version = snapshot.version.max(feeds.first_version);
            feeds.rounds.insert(key, round);
        }
        for (game_id, snapshot) in games {
            let pending = snapshot
                .pending
                .iter()
                .map(|bytes| GameEvent::decode(bytes.as_slice()))
                .collect::<Result<VecDeque<_>, _>>()?;
            if !pending.is_empty() {
                feeds.waiting.insert(game_id.clone());
            }
            let round = feeds
                .rounds
                .entry(snapshot.round.clone())
                .or_insert_with(|| RoundFeed::new(feeds.first_version));
            if snapshot.shown.is_some() {
                round
                    .boards
                    .insert((snapshot.board_number, game_id.clone()));
            }
            let mut game = FeedGame {
                round: snapshot.round,
                board_number: snapshot.board_number,
                last_game_seq: snapshot.last_game_seq,
                chain_head: snapshot.chain_head,
                signed: snapshot.signed,
                shown: snapshot.shown,
                pending,
                changed_at: snapshot.version,
                view_version: snapshot.view_version,
                pgn: None,
                json: None,
                view: None,
                delta: None,
            };
            rebuild_pgn(&mut game);
            if let Some(shown) = &game.shown {
                let view = GameView::of(shown, game.view_version);
                show(&mut game, view);
            }
            feeds.games.insert(game_id, game);
        }
        Ok(feeds)
    }
}

/// Whether a clock reading stops or restarts the clock, as the game's events taken so far
/// (released or waiting) leave it: only those readings are kept for viewers, and none before
/// the first move or after the end, when no clock runs for them either way.
fn changes_clock_run(game: &FeedGame, event: &GameEvent) -> bool {
    use boardcast_game::events::game_event::Kind;
    let Some(stopped) = clock_stopped_by(event) else {
        return false;
    };
    let mut stopped_before = None;
    for taken in game.pending.iter().rev() {
        match &taken.kind {
            Some(Kind::Ended(_)) => return false,
            Some(Kind::MoveCompleted(_)) => {
                stopped_before = Some(false);
                break;
            }
            _ => {
                if let Some(taken_stopped) = clock_stopped_by(taken) {
                    stopped_before = Some(taken_stopped);
                    break;
                }
            }
        }
    }
    let stopped_before = match (stopped_before, &game.shown) {
        (Some(before), _) => before,
        (None, Some(shown)) if shown.result.is_none() && !shown.moves.is_empty() => {
            shown.clock_stopped
        }
        (None, _) => return false,
    };
    stopped != stopped_before
}

/// Builds a game's cached PGN from what is shown.
fn rebuild_pgn(game: &mut FeedGame) {
    let Some(shown) = &game.shown else {
        return;
    };
    game.pgn = Some(Arc::new(Body::new(
        write_annotated_game(&shown.to_pgn()),
        shown.updated_unix_ms,
    )));
}

/// Shows `view`: its JSON, and the change from the view shown before as a delta.
fn show(game: &mut FeedGame, view: GameView) {
    game.delta = game
        .view
        .as_ref()
        .filter(|before| before.version != view.version)
        .and_then(|before| GameDelta::between(before, &view))
        .and_then(|delta| serde_json::to_string(&delta).ok())
        .map(Arc::from);
    game.json = serde_json::to_string(&view).ok().map(Arc::from);
    game.view_version = view.version;
    game.view = Some(view);
}

//! Replaying a game from its records: the same `Game::apply` as the live service, with the
//! timeline people read (every touch, clock reading, move, alert, claim and ruling with who made
//! it), the position after every record, and the game as it stood at any moment.

use std::sync::Arc;

use boardcast_game::alerts::{Alert, GameAlerts};
use boardcast_game::events::{GameEvent, GameEventRecord, GameStarted, game_event::Kind};
use boardcast_game::signing::TrustedKeys;
use boardcast_game::timeline::{ClockView, FoldedGame, TimelineEntry};
use boardcast_game::{CURRENT_INTERPRETATION, Game, GameError, OpenedRecord};
use boardcast_rules::claims::{AvailableClaim, available_claims};
use prost::Message as _;

use crate::file::ExportedGame;

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("game {game_id}: the file holds no record of it")]
    Empty { game_id: String },
    #[error("game {game_id}, the file's record #{position}: {reason}")]
    Refused {
        game_id: String,
        position: usize,
        reason: String,
    },
}

/// One step of the replay: a record's event and the game right after it. Its timeline entry
/// (the record in words) is made when it is read: a round holds hundreds of thousands of steps.
#[derive(Clone, Debug)]
pub struct Step {
    pub event: GameEvent,
    /// A clock reading in it is read the other way round (the clock was turned).
    pub swapped: bool,
    /// It raised an alert.
    pub raises_alert: bool,
    /// Its sequence in the stream it was exported from.
    pub stream_seq: u64,
    /// The position after it, as FEN (shared by the records that leave it as it was).
    pub fen: Arc<str>,
    /// The last completed move (UCI), to mark on a board.
    pub last_move: Arc<str>,
    pub clocks: ClockView,
    /// The game's Laws, for the record's words (shared by the game's steps).
    pub edition: Arc<str>,
    /// Whether the record carries no signature (written before records were signed).
    pub unsigned: bool,
}

impl Step {
    /// The record as a timeline entry: what it is, who, and its words.
    pub fn entry(&self) -> TimelineEntry {
        TimelineEntry::of(
            &self.event,
            self.swapped,
            self.raises_alert,
            self.stream_seq,
            Some(&self.edition),
        )
    }
}

/// What a step looks like in JSON and to the HTML page: its entry's fields, then the rest.
#[derive(serde::Serialize)]
struct StepView<'a> {
    #[serde(flatten)]
    entry: TimelineEntry,
    fen: &'a str,
    last_move: &'a str,
    clocks: &'a ClockView,
    unsigned: bool,
}

impl serde::Serialize for Step {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        StepView {
            entry: self.entry(),
            fen: &self.fen,
            last_move: &self.last_move,
            clocks: &self.clocks,
            unsigned: self.unsigned,
        }
        .serialize(serializer)
    }
}

/// A game replayed from its records.
pub struct ReplayedGame {
    pub game_id: String,
    /// The game after its last record.
    pub game: Game,
    pub clocks: ClockView,
    pub steps: Vec<Step>,
    pub alerts: Vec<Alert>,
    /// Records refused because no trusted key signed them, in words (the file's place, the
    /// reason). Every reader refuses them; the game goes on with the record that continues the
    /// chain before them.
    pub refused: Vec<String>,
}

impl ReplayedGame {
    pub fn info(&self) -> &GameStarted {
        self.game.info()
    }

    /// What a reader must know before relying on this replay, in words: each record refused,
    /// and a game set up by a newer boardcast (whose observations this version can only read by
    /// its own rules).
    pub fn cautions(&self) -> Vec<String> {
        let mut cautions: Vec<String> = self
            .refused
            .iter()
            .map(|refusal| format!("refused, not folded: {refusal}"))
            .collect();
        let interpretation = self.info().interpretation;
        if interpretation > CURRENT_INTERPRETATION {
            cautions.push(format!(
                "set up by a newer boardcast, which reads the boards' observations by its \
                 interpretation {interpretation}; this version knows up to \
                 {CURRENT_INTERPRETATION} and replays the game by its own, which may differ: \
                 replay it with the version that wrote it"
            ));
        }
        cautions
    }
}

/// What the game was at one moment.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Moment {
    pub game_id: String,
    /// The last record folded.
    pub game_seq: u64,
    pub recorded_unix_ms: i64,
    pub fen: String,
    pub to_move: &'static str,
    pub completed_plies: usize,
    pub clocks: ClockView,
    /// How often the current position has occurred (Article 9.2).
    pub repetition_count: usize,
    /// Half-moves without a capture or pawn move (Article 9.3).
    pub halfmove_clock: u32,
    /// The draw claims the player to move could make then.
    pub claims_available: Vec<AvailableClaim>,
    pub result: String,
    /// `ReplayedGame::cautions`: what the moment may not show as it was.
    pub cautions: Vec<String>,
}

/// When to stop a replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum At {
    /// After the record with this sequence number.
    Seq(u64),
    /// After the last record recorded at or before this time (ms since the Unix epoch).
    Time(i64),
}

/// Replays `exported` up to `until` (the whole game when `None`). Records are authenticated
/// with `trusted`: when the chain is whole, by its last record's signature (which covers every
/// record before it) and each record naming a trusted key; otherwise record by record. A record
/// that is not authenticated is refused (listed in `refused`) and the game goes on without it.
pub fn replay(
    exported: &ExportedGame,
    trusted: &TrustedKeys,
    until: Option<At>,
) -> Result<ReplayedGame, ReplayError> {
    let game_id = exported.game_id.clone();
    let refused = |position: usize, reason: String| ReplayError::Refused {
        game_id: game_id.clone(),
        position,
        reason,
    };
    let mut folded: Option<FoldedGame> = None;
    let mut alerts = GameAlerts::new();
    let mut steps = Vec::with_capacity(exported.records.len());
    // The game's Laws, once it is set up: every step's words name them alike.
    let mut edition: Option<Arc<str>> = None;
    let mut refusals = Vec::new();
    // Checking every signature costs ~35 µs a record; when the chain is whole and its last
    // record verifies, that signature covers every record before it (each hash commits to the
    // previous one), so no other needs checking. Otherwise each is checked and refused alone.
    let opened: Vec<Result<OpenedRecord, String>> = exported
        .records
        .iter()
        .map(|r| {
            let record = GameEventRecord::decode(r.payload.as_slice())
                .map_err(|e| format!("undecodable: {e}"))?;
            Game::open(record).map_err(|e| e.to_string())
        })
        .collect();
    let anchored = chain_anchored(&exported.game_id, &opened, trusted);
    let mut last_position: Option<(usize, Arc<str>, Arc<str>)> = None;
    for (index, (exported_record, opened)) in exported.records.iter().zip(opened).enumerate() {
        let position = index + 1;
        let opened = match opened {
            Ok(opened) => opened,
            Err(e) => {
                refusals.push(format!("the file's record #{position}: {e}"));
                continue;
            }
        };
        let (record, event) = (opened.record(), opened.event());
        let stop = match until {
            Some(At::Seq(seq)) => event.game_seq > seq,
            Some(At::Time(t)) => event.recorded_unix_ms > t && folded.is_some(),
            None => false,
        };
        if stop {
            break;
        }
        let signed_before = folded.as_ref().is_some_and(|f| f.game.is_signed());
        let authenticated = if anchored {
            trusted.check_named(record, event.game_seq, signed_before)
        } else {
            trusted.check(record, event.game_seq, signed_before)
        };
        if let Err(e) = authenticated {
            refusals.push(format!("the file's record #{position}: {e}"));
            continue;
        }
        let swapped = match fold_one(&mut folded, &opened) {
            Ok(swapped) => swapped,
            // The game's start was refused: nothing after it can be folded either.
            Err(e) if folded.is_none() && !refusals.is_empty() => {
                refusals.push(format!("the file's record #{position}: {e}"));
                continue;
            }
            Err(e) => return Err(refused(position, e.to_string())),
        };
        let Some(current) = &folded else {
            continue;
        };
        let changed = alerts.fold(event, &current.game);
        let raises_alert = changed
            .iter()
            .filter_map(|&i| alerts.alerts().get(i))
            .any(|a| a.raised_at == event.game_seq);
        // Most records (touches, clock readings) leave the position as it was: its FEN is
        // written again only when the completed moves changed.
        let plies = current.game.completed_moves().len();
        let (fen, last_move) = match &last_position {
            Some((at, fen, last_move)) if *at == plies && !restores(event) => {
                (fen.clone(), last_move.clone())
            }
            _ => {
                let fen: Arc<str> = boardcast_game::fen(current.game.position()).into();
                let last_move: Arc<str> = current
                    .game
                    .completed_moves()
                    .last()
                    .map_or("", |m| m.event.uci.as_str())
                    .into();
                last_position = Some((plies, fen.clone(), last_move.clone()));
                (fen, last_move)
            }
        };
        let (clocks, unsigned) = (current.clocks, record.signature.is_empty());
        let edition = edition
            .get_or_insert_with(|| Arc::from(current.game.rules().edition.to_string()))
            .clone();
        steps.push(Step {
            event: opened.into_event(),
            swapped,
            raises_alert,
            stream_seq: exported_record.stream_seq,
            fen,
            last_move,
            clocks,
            edition,
            unsigned,
        });
    }
    let folded = folded.ok_or_else(|| match refusals.first() {
        Some(first) => ReplayError::Refused {
            game_id: game_id.clone(),
            position: 1,
            reason: format!("no record could be folded; the first was refused ({first})"),
        },
        None => ReplayError::Empty {
            game_id: game_id.clone(),
        },
    })?;
    Ok(ReplayedGame {
        game_id,
        clocks: folded.clocks,
        game: folded.game,
        steps,
        alerts: alerts.alerts().to_vec(),
        refused: refusals,
    })
}

fn fold_one(folded: &mut Option<FoldedGame>, opened: &OpenedRecord) -> Result<bool, GameError> {
    match folded {
        None => {
            let (game, swapped) = FoldedGame::start(opened)?;
            *folded = Some(game);
            Ok(swapped)
        }
        Some(game) => game.apply(opened),
    }
}

/// Whether an event can change the position without changing the number of completed moves.
fn restores(event: &GameEvent) -> bool {
    matches!(
        event.kind,
        Some(Kind::PositionRestored(_) | Kind::Arbiter(_))
    )
}

/// Whether a game's records form one whole chain (each opened, following the one before in
/// sequence and hash) whose last record is signed by a trusted key.
fn chain_anchored(
    game_id: &str,
    opened: &[Result<OpenedRecord, String>],
    trusted: &TrustedKeys,
) -> bool {
    let mut head = boardcast_game::GENESIS_HASH;
    for (index, opened) in opened.iter().enumerate() {
        let Ok(opened) = opened else {
            return false;
        };
        let (record, event) = (opened.record(), opened.event());
        if event.game_seq != index as u64 + 1
            || event.game_id != game_id
            || record.prev_hash.as_slice() != head.as_slice()
        {
            return false;
        }
        head.copy_from_slice(&record.hash);
    }
    opened.last().is_some_and(|last| {
        last.as_ref().is_ok_and(|last| {
            !last.record().signature.is_empty()
                && trusted
                    .check(last.record(), opened.len() as u64, true)
                    .is_ok()
        })
    })
}

impl ReplayedGame {
    /// The game as it stands after the replayed records.
    pub fn moment(&self) -> Moment {
        let game = &self.game;
        let last = self.steps.last();
        Moment {
            game_id: self.game_id.clone(),
            game_seq: game.last_game_seq(),
            recorded_unix_ms: last.map_or(0, |s| s.event.recorded_unix_ms),
            fen: boardcast_game::fen(game.position()),
            to_move: match game.turn() {
                shakmaty::Color::White => "white",
                shakmaty::Color::Black => "black",
            },
            completed_plies: game.completed_moves().len(),
            clocks: self.clocks,
            repetition_count: game.repetition().repetition_count(),
            halfmove_clock: game.repetition().halfmove_clock(),
            claims_available: if game.is_over() {
                Vec::new()
            } else {
                available_claims(game.rules(), game.repetition())
            },
            result: game.result_token().to_owned(),
            cautions: self.cautions(),
        }
    }
}

/// Why a replay gave no result: the work itself failed (a bug), not the record.
fn failed_unexpectedly(game: &ExportedGame) -> Result<ReplayedGame, ReplayError> {
    Err(ReplayError::Refused {
        game_id: game.game_id.clone(),
        position: 0,
        reason: "replaying it failed unexpectedly (a bug in this version)".into(),
    })
}

/// `replay` of each game over the machine's cores, made into what the caller needs of it by
/// `render` on the core that replayed it (a large replay is also freed there, which is much
/// cheaper than on another thread), then handed to `each` in the games' order as soon as it is
/// ready. Only a few games are held at a time: for printing a whole round's timelines.
pub fn replay_each<O: Send>(
    games: &[(&ExportedGame, Option<At>)],
    trusted: &TrustedKeys,
    render: impl Fn(Result<ReplayedGame, ReplayError>) -> O + Sync,
    mut each: impl FnMut(O),
) {
    crate::parallel::for_each_on_every_core(
        games,
        |(game, until)| render(replay(game, trusted, *until)),
        |(game, _)| render(failed_unexpectedly(game)),
        32,
        |_, rendered| each(rendered),
    );
}

/// `replay` of several games, spread over the machine's cores; the results in the same order.
pub fn replay_many(
    games: &[(&ExportedGame, Option<At>)],
    trusted: &TrustedKeys,
) -> Vec<Result<ReplayedGame, ReplayError>> {
    crate::parallel::map_on_every_core(
        games,
        |(game, until)| replay(game, trusted, *until),
        |(game, _)| failed_unexpectedly(game),
    )
}

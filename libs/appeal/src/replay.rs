//! Replaying a game from its records: the same `Game::apply` as the live service, with the
//! timeline people read (every touch, clock reading, move, alert, claim and ruling with who made
//! it), the position after every record, and the game as it stood at any moment.

use boardcast_game::alerts::{Alert, GameAlerts};
use boardcast_game::events::{GameEvent, GameEventRecord, GameStarted};
use boardcast_game::signing::TrustedKeys;
use boardcast_game::timeline::{ClockView, FoldedGame, TimelineEntry};
use boardcast_game::{Game, GameError};
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

/// One step of the replay: a record, its timeline entry and the game right after it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Step {
    #[serde(flatten)]
    pub entry: TimelineEntry,
    /// The position after it, as FEN.
    pub fen: String,
    /// The last completed move (UCI), to mark on a board.
    pub last_move: String,
    pub clocks: ClockView,
    /// Whether the record carries no signature (written before records were signed).
    pub unsigned: bool,
}

/// A game replayed from its records.
pub struct ReplayedGame {
    pub game_id: String,
    /// The game after its last record.
    pub game: Game,
    pub clocks: ClockView,
    pub steps: Vec<Step>,
    pub alerts: Vec<Alert>,
}

impl ReplayedGame {
    pub fn info(&self) -> &GameStarted {
        self.game.info()
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
}

/// When to stop a replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum At {
    /// After the record with this sequence number.
    Seq(u64),
    /// After the last record recorded at or before this time (ms since the Unix epoch).
    Time(i64),
}

/// Replays `exported` up to `until` (the whole game when `None`), checking every record's
/// chain and signature with `trusted`.
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
    for (index, exported_record) in exported.records.iter().enumerate() {
        let position = index + 1;
        let record = GameEventRecord::decode(exported_record.payload.as_slice())
            .map_err(|e| refused(position, format!("undecodable: {e}")))?;
        let event = Game::open_record(&record).map_err(|e| refused(position, e.to_string()))?;
        let stop = match until {
            Some(At::Seq(seq)) => event.game_seq > seq,
            Some(At::Time(t)) => event.recorded_unix_ms > t && folded.is_some(),
            None => false,
        };
        if stop {
            break;
        }
        let swapped = fold_one(&mut folded, &record, &event, trusted)
            .map_err(|e| refused(position, e.to_string()))?;
        let Some(current) = &folded else {
            continue;
        };
        let changed = alerts.fold(&event, &current.game);
        let raises_alert = changed
            .iter()
            .filter_map(|&i| alerts.alerts().get(i))
            .any(|a| a.raised_at == event.game_seq);
        steps.push(Step {
            entry: TimelineEntry::of(&event, swapped, raises_alert, exported_record.stream_seq),
            fen: boardcast_game::fen(current.game.position()),
            last_move: current
                .game
                .completed_moves()
                .last()
                .map(|m| m.event.uci.clone())
                .unwrap_or_default(),
            clocks: current.clocks,
            unsigned: record.signature.is_empty(),
        });
    }
    let folded = folded.ok_or_else(|| ReplayError::Empty {
        game_id: game_id.clone(),
    })?;
    Ok(ReplayedGame {
        game_id,
        clocks: folded.clocks,
        game: folded.game,
        steps,
        alerts: alerts.alerts().to_vec(),
    })
}

fn fold_one(
    folded: &mut Option<FoldedGame>,
    record: &GameEventRecord,
    event: &GameEvent,
    trusted: &TrustedKeys,
) -> Result<bool, GameError> {
    match folded {
        None => {
            let (game, swapped) = FoldedGame::start(record, event, trusted)?;
            *folded = Some(game);
            Ok(swapped)
        }
        Some(game) => game.apply(record, event, trusted),
    }
}

impl ReplayedGame {
    /// The game as it stands after the replayed records.
    pub fn moment(&self) -> Moment {
        let game = &self.game;
        let last = self.steps.last();
        Moment {
            game_id: self.game_id.clone(),
            game_seq: game.last_game_seq(),
            recorded_unix_ms: last.map_or(0, |s| s.entry.recorded_unix_ms),
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
        }
    }
}

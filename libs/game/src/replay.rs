//! Observations replayed into a game as the game service decides them: one at a time, each
//! decision recorded and folded before the next. A capture of a board (`replay-dgt --pgn`) is
//! shown through this, so what a replay prints is what the service would record.

use crate::device::{Observation, SourceKind, observation::Kind};
use crate::events::{GameEvent, GameStarted, Player, TimeControl, TimePeriod};
use crate::observation::ObservationOutcome;
use crate::state::{Game, GameError};
use crate::wording;

/// How long a placement must stand before the game reads it as settled (the move inference's
/// quiet period): a replay without timestamps lets this pass after a board's full report.
pub fn settle_ms() -> i64 {
    boardcast_inference::Config::default().quiet_ms
}

/// An observation kind at a time since the first one (a capture has no timestamps: its reader
/// reconstructs them).
#[derive(Debug, Clone, PartialEq)]
pub struct TimedKind {
    pub at_ms: i64,
    pub kind: Kind,
}

/// The game observations are replayed into: what the game service would have been told.
#[derive(Debug, Clone)]
pub struct ReplaySetup {
    pub game: GameStarted,
    /// Device time of the first observation (ms since the Unix epoch); the others follow at
    /// their offsets.
    pub start_unix_ms: i64,
}

impl ReplaySetup {
    /// A game on `board_id` between unnamed players, with the time control the clock's first
    /// reading shows (the larger time, in whole minutes, no increment) when `time_control` is
    /// `None`.
    pub fn for_observations(
        observations: &[TimedKind],
        board_id: &str,
        time_control: Option<TimeControl>,
        start_unix_ms: i64,
    ) -> ReplaySetup {
        let first_clock = observations.iter().find_map(|o| match &o.kind {
            Kind::Clock(c) => Some(c.white_remaining_ms.max(c.black_remaining_ms)),
            _ => None,
        });
        let time_control = time_control.unwrap_or_else(|| TimeControl {
            periods: vec![TimePeriod {
                moves: 0,
                base_ms: first_clock
                    .map(|ms| ms.div_ceil(60_000).max(1) * 60_000)
                    .unwrap_or(7_200_000),
                ..Default::default()
            }],
        });
        let player = |name: &str| {
            Some(Player {
                name: name.to_owned(),
                ..Default::default()
            })
        };
        ReplaySetup {
            game: GameStarted {
                tournament_id: "capture".to_owned(),
                round: 1,
                board_number: 1,
                board_id: board_id.to_owned(),
                white: player("?"),
                black: player("?"),
                time_control: Some(time_control),
                ..Default::default()
            },
            start_unix_ms,
        }
    }
}

/// Observations folded into a game as the game service folds them.
#[derive(Debug, Clone)]
pub struct Replay {
    /// The game, exactly as the game service records it from the same observations.
    pub game: Game,
    /// Its log's events, in order.
    pub events: Vec<GameEvent>,
    /// What the log says beyond the routine moves, in words, for the operator.
    pub notes: Vec<String>,
    /// Observations the game refused, with the reason.
    pub refused: Vec<String>,
}

/// Replays `observations` into the game of `setup` with the aggregate itself, one at a time as
/// the game service decides them. Errors only when the game cannot be set up.
pub fn replay_observations(
    observations: &[TimedKind],
    setup: &ReplaySetup,
) -> Result<Replay, GameError> {
    let (game_id, started) = Game::decide_start(&setup.game, "capture replay", "")?;
    let first = Game::record(None, &game_id, vec![started], setup.start_unix_ms);
    let mut game = Game::from_first_record(&first[0])?;
    let edition = game.rules().edition.to_string();
    let mut replay_events = Vec::new();
    let mut notes = Vec::new();
    let mut refused = Vec::new();
    for (index, timed) in observations.iter().enumerate() {
        let at = setup.start_unix_ms.saturating_add(timed.at_ms);
        let obs = Observation {
            board_id: setup.game.board_id.clone(),
            device_seq: index as u64 + 1,
            device_time_unix_ms: at,
            receive_time_unix_ms: at,
            source: SourceKind::CaptureReplay as i32,
            kind: Some(timed.kind.clone()),
        };
        let new_events = match game.decide_observation(&obs) {
            Ok(ObservationOutcome::Events(events)) => events,
            Ok(ObservationOutcome::Ignored(_)) => continue,
            Err(rejected) => {
                refused.push(format!("observation {}: {rejected}", obs.device_seq));
                continue;
            }
        };
        for record in Game::record(Some(&game), &game_id, new_events, at) {
            game.apply(&record)?;
            let event = Game::open_record(&record)?;
            notes.extend(wording::describe(&event, Some(&edition)));
            replay_events.push(event);
        }
    }
    Ok(Replay {
        game,
        events: replay_events,
        notes,
        refused,
    })
}

impl Replay {
    /// The replayed game as PGN with `tags`, its Result tag set from the game.
    pub fn pgn_with_tags(&self, tags: &[(String, String)]) -> boardcast_rules::pgn::PgnGame {
        let mut pgn = self.game.to_pgn().game;
        pgn.tags = tags.to_vec();
        match pgn.tags.iter_mut().find(|(name, _)| name == "Result") {
            Some((_, value)) => *value = pgn.result.clone(),
            None => pgn.tags.push(("Result".to_owned(), pgn.result.clone())),
        }
        pgn
    }
}

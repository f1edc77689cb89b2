//! Setting a game up: the identifiers, the pairing's checks and the `GameStarted` event.

use shakmaty::{CastlingMode, Chess, fen::Fen};

use boardcast_rules::ruleset::{
    Edition, Period, RuleSet, Supervision, TimeControl as RulesTimeControl,
};

use crate::clock::CURRENT_INTERPRETATION;
use crate::events::{
    ClockPressSettled, GameStarted, IrregularityCleared, PressSettlement, Provenance, SetUpRevised,
    SetupAspect, SetupMismatchCleared, Source, game_event::Kind,
};
use crate::record::NewEvent;
use crate::state::{Game, GameError, fen_of};

/// The id of the game of a pairing: `<tournament>-r<round>-b<board>`.
pub fn game_id_for(tournament_id: &str, round: u32, board_number: u32) -> String {
    format!("{tournament_id}-r{round}-b{board_number}")
}

/// A game set up to show and test the API with: `tournament_id`'s round `round`, board
/// `board_number` on physical board `board_id`, White against Black, 90 minutes each, the 2023
/// Laws.
pub fn example_game(
    tournament_id: &str,
    round: u32,
    board_number: u32,
    board_id: &str,
) -> GameStarted {
    use crate::events::{Player, TimeControl, TimePeriod};
    let player = |name: &str| {
        Some(Player {
            name: name.into(),
            ..Default::default()
        })
    };
    GameStarted {
        tournament_id: tournament_id.into(),
        round,
        board_number,
        board_id: board_id.into(),
        edition: "fide-2023".into(),
        white: player("White"),
        black: player("Black"),
        time_control: Some(TimeControl {
            periods: vec![TimePeriod {
                base_ms: 5_400_000,
                ..Default::default()
            }],
        }),
        ..Default::default()
    }
}

/// Bounds of a time control: more is a typo or hostile (and keeps clock arithmetic in range).
const MAX_PERIODS: usize = 10;
const MAX_PERIOD_MS: u64 = 24 * 3_600_000;
const MAX_BONUS_MS: u64 = 3_600_000;
const MAX_PERIOD_MOVES: u32 = 1_000;

/// Whether `id` could be a game's: made as `game_id_for` makes them (a tournament id's
/// characters; at most 88 long). Any other id is no game's, and never a NATS subject.
pub fn could_be_game_id(id: &str) -> bool {
    (1..=128).contains(&id.len()) && id.chars().all(id_char)
}

/// The characters of ids, which end up in NATS subjects and URLs.
fn id_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

/// Ids end up in NATS subjects and URLs: ASCII letters, digits, `-` and `_` only.
pub(crate) fn validate_id(what: &str, id: &str) -> Result<(), GameError> {
    if id.is_empty() || id.len() > 64 {
        return Err(GameError::InvalidGame(format!(
            "{what} must be 1 to 64 characters long, got {:?}",
            id
        )));
    }
    if let Some(c) = id.chars().find(|&c| !id_char(c)) {
        return Err(GameError::InvalidGame(format!(
            "{what} {id:?} contains {c:?}; use ASCII letters, digits, '-' and '_'"
        )));
    }
    Ok(())
}

/// Checks a tournament id (it becomes part of game ids and NATS subjects).
pub fn validate_tournament_id(tournament_id: &str) -> Result<(), GameError> {
    validate_id("tournament id", tournament_id)
}

/// What the dead-letter stream files an observation under when it names no readable board: no
/// board may be called so, lest a real board's given-up observations mix with those.
pub const UNREADABLE_BOARD: &str = "unknown";

/// Checks the id of a physical board a game, a gateway or the simulator is put on anew: a NATS
/// subject token, and not [`UNREADABLE_BOARD`]. (A game's set-up is checked for the token only:
/// one recorded on that board before the name was kept still revises and verifies.)
pub fn validate_board_id(board_id: &str) -> Result<(), GameError> {
    validate_id("board id", board_id)?;
    if board_id == UNREADABLE_BOARD {
        return Err(GameError::InvalidGame(format!(
            "board id {UNREADABLE_BOARD:?} is kept for observations whose board cannot be read; \
             name the board otherwise (e.g. by its number in the hall)"
        )));
    }
    Ok(())
}

pub(crate) fn start_position(info: &GameStarted) -> Result<Chess, GameError> {
    if info.start_fen.is_empty() {
        return Ok(Chess::default());
    }
    let fen: Fen = info
        .start_fen
        .parse()
        .map_err(|e| GameError::InvalidGame(format!("start FEN {:?}: {e}", info.start_fen)))?;
    fen.into_position(CastlingMode::Standard)
        .map_err(|e| GameError::InvalidGame(format!("start FEN {:?}: {e}", info.start_fen)))
}

/// The rule set a game is played under: its edition and the category of its time control.
/// Supervision is taken as adequate until the pairing says otherwise.
pub fn rules_of(info: &GameStarted) -> Result<RuleSet, GameError> {
    let edition: Edition = if info.edition.is_empty() {
        Edition::default()
    } else {
        info.edition
            .parse()
            .map_err(|e| GameError::InvalidGame(format!("{e}")))?
    };
    let periods = info
        .time_control
        .as_ref()
        .map(|tc| {
            tc.periods
                .iter()
                .map(|p| Period {
                    moves: p.moves,
                    base_ms: p.base_ms,
                    increment_ms: p.increment_ms,
                    delay_ms: p.delay_ms,
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(RuleSet::from_time_control(
        edition,
        &RulesTimeControl { periods },
        Supervision::Adequate,
    ))
}

impl Game {
    /// Decides the start of a game: validates the pairing and returns its `GameStarted` event,
    /// recorded as set up by `actor` with the client's `request_id`.
    pub fn decide_start(
        info: &GameStarted,
        actor: &str,
        request_id: &str,
    ) -> Result<(String, NewEvent), GameError> {
        check_set_up(info)?;
        let game_id = game_id_for(&info.tournament_id, info.round, info.board_number);
        Ok((
            game_id,
            NewEvent {
                kind: Kind::Started(GameStarted {
                    interpretation: CURRENT_INTERPRETATION,
                    ..info.clone()
                }),
                provenance: set_up_by(actor, request_id),
            },
        ))
    }

    /// Decides a revision of the game's set-up to `revised`, by `actor`: its events (none when it
    /// changes nothing, or when request `request_id` set the game up or revised it already). Its ids are the game's;
    /// an empty edition is the game's; `revised.board_seq_before` is the new board's last
    /// observation now and counts only when the board changes (on the same board the game goes
    /// on from what it accounted for). Before the game begins anything else may change; after
    /// it the players' and the event's details, and the physical board (one broke: the game
    /// goes on there from the position its completed moves reach), never the rules it is read
    /// with.
    pub fn decide_set_up_revision(
        &self,
        revised: &GameStarted,
        actor: &str,
        request_id: &str,
    ) -> Result<Vec<NewEvent>, RevisionRefused> {
        check_set_up(revised).map_err(RevisionRefused::Invalid)?;
        // A retry of the request that set the game up or revised it: what it asked is done (and
        // a later revision is not undone by it).
        if !request_id.is_empty()
            && (self.record.revisions.contains(request_id)
                || self.record.started_by_request == request_id)
        {
            return Ok(Vec::new());
        }
        let same_board = revised.board_id == self.info.board_id;
        // Written otherwise but meaning the same (no edition: the game's), the game's words stay.
        let same_edition = revised.edition.is_empty()
            || rules_of(revised).map(|r| r.edition) == rules_of(&self.info).map(|r| r.edition);
        let start_fen = |info: &GameStarted| start_position(info).ok().map(|p| fen_of(&p));
        let same_start = start_fen(revised) == start_fen(&self.info);
        let revised = GameStarted {
            tournament_id: self.info.tournament_id.clone(),
            round: self.info.round,
            board_number: self.info.board_number,
            interpretation: self.info.interpretation,
            board_seq_before: if same_board {
                self.info.board_seq_before
            } else {
                revised.board_seq_before
            },
            edition: if same_edition {
                self.info.edition.clone()
            } else {
                revised.edition.clone()
            },
            start_fen: if same_start {
                self.info.start_fen.clone()
            } else {
                revised.start_fen.clone()
            },
            ..revised.clone()
        };
        if revised == self.info {
            return Ok(Vec::new());
        }
        if self.has_begun()
            && let Some(what) = changes_the_rules(&self.info, &revised)
        {
            return Err(RevisionRefused::Begun { what });
        }
        // Moved to another board in play (its board or clock broke): from the position the
        // completed moves reach, so not while a move stands on the old board uncompleted.
        if !same_board && !self.provisional.is_empty() {
            return Err(RevisionRefused::MoveOnTheBoard);
        }
        let mut events = vec![NewEvent {
            kind: Kind::SetUpRevised(SetUpRevised {
                set_up: Some(revised),
            }),
            provenance: set_up_by(actor, request_id),
        }];
        // What the board showed against another board or start is no longer in question: said
        // so, so that every reader closes it (the next placement says again what is wrong).
        if !same_board || !same_start {
            let mut cleared: Vec<Kind> = self
                .board
                .setup_mismatches
                .iter()
                .map(|m| m.aspect())
                .filter(|&aspect| !same_board || aspect == SetupAspect::StartPosition)
                .map(|aspect| {
                    Kind::SetupMismatchCleared(SetupMismatchCleared {
                        aspect: aspect as i32,
                    })
                })
                .collect();
            if self.board.irregular.is_some() {
                cleared.push(Kind::IrregularityCleared(IrregularityCleared {
                    ply: u32::try_from(self.moves.len())
                        .unwrap_or(u32::MAX)
                        .saturating_add(1),
                }));
            }
            // Presses in doubt were the old clock's: the new one's presses cannot settle them
            // (they are read with its sides), so no penalty rests on them.
            if !same_board {
                cleared.extend(self.clock.doubts.iter().map(|doubt| {
                    Kind::PressSettled(ClockPressSettled {
                        doubt_game_seq: doubt.game_seq,
                        settlement: PressSettlement::NotConfirmed as i32,
                    })
                }));
            }
            events.extend(cleared.into_iter().map(|kind| NewEvent {
                kind,
                provenance: set_up_by(actor, request_id),
            }));
        }
        Ok(events)
    }
}

/// Why a revision of a game's set-up was refused.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RevisionRefused {
    #[error(transparent)]
    Invalid(GameError),
    #[error(
        "the game has begun (a move made or on its board, an illegal move or a result): only the \
         players' details, the event's and the physical board can be changed now, not its {what}"
    )]
    Begun { what: &'static str },
    #[error(
        "a move stands on the board, not completed: it goes with the game to another board once \
         completed (the clock pressed, or the arbiter enters it) or taken back"
    )]
    MoveOnTheBoard,
}

/// A set-up's provenance: an operator's, with the request that made it.
fn set_up_by(actor: &str, request_id: &str) -> Provenance {
    Provenance {
        source: Source::Operator as i32,
        actor: actor.to_owned(),
        request_id: request_id.to_owned(),
        ..Default::default()
    }
}

/// What of a game's identity `revised` changes, if anything (a revision never may).
pub(crate) fn unrevisable(set_up: &GameStarted, revised: &GameStarted) -> Option<&'static str> {
    if revised.tournament_id != set_up.tournament_id {
        Some("tournament")
    } else if revised.round != set_up.round {
        Some("round")
    } else if revised.board_number != set_up.board_number {
        Some("board number")
    } else if revised.interpretation != set_up.interpretation {
        Some("interpretation")
    } else {
        None
    }
}

/// Whether `revised` puts the game on another physical board (or follows it from another
/// observation).
pub(crate) fn moves_board(set_up: &GameStarted, revised: &GameStarted) -> bool {
    revised.board_id != set_up.board_id || revised.board_seq_before != set_up.board_seq_before
}

/// What of the rules the game's moves are read with `revised` changes, if anything: once the
/// game has begun, none of it may change.
pub(crate) fn changes_the_rules(
    set_up: &GameStarted,
    revised: &GameStarted,
) -> Option<&'static str> {
    if revised.time_control != set_up.time_control {
        Some("time control")
    } else if revised.edition != set_up.edition {
        Some("Laws edition")
    } else if revised.start_fen != set_up.start_fen {
        Some("start position")
    } else {
        None
    }
}

/// Checks a pairing's set-up: ids, players, time control, start position and edition.
fn check_set_up(info: &GameStarted) -> Result<(), GameError> {
    validate_id("tournament id", &info.tournament_id)?;
    validate_id("board id", &info.board_id)?;
    if info.round == 0 || info.board_number == 0 {
        return Err(GameError::InvalidGame(
            "round and board number start at 1".to_owned(),
        ));
    }
    if info.white.as_ref().is_none_or(|p| p.name.trim().is_empty())
        || info.black.as_ref().is_none_or(|p| p.name.trim().is_empty())
    {
        return Err(GameError::InvalidGame(
            "both players need a name".to_owned(),
        ));
    }
    let tc = info.time_control.as_ref().ok_or_else(|| {
        GameError::InvalidGame("a time control with at least one period is required".into())
    })?;
    if tc.periods.is_empty() {
        return Err(GameError::InvalidGame(
            "a time control with at least one period is required".to_owned(),
        ));
    }
    if let Some((i, _)) = tc
        .periods
        .iter()
        .enumerate()
        .find(|(_, p)| p.base_ms == 0 && p.increment_ms == 0)
    {
        return Err(GameError::InvalidGame(format!(
            "time control period {} has neither time nor increment",
            i + 1
        )));
    }
    // Numbers no event uses are a typo or hostile, and arithmetic on clocks stays in range.
    if tc.periods.len() > MAX_PERIODS {
        return Err(GameError::InvalidGame(format!(
            "a time control of {} periods; at most {MAX_PERIODS}",
            tc.periods.len()
        )));
    }
    for (i, p) in tc.periods.iter().enumerate() {
        let absurd = if p.base_ms > MAX_PERIOD_MS {
            Some(format!("{} h of base time", p.base_ms / 3_600_000))
        } else if p.increment_ms > MAX_BONUS_MS || p.delay_ms > MAX_BONUS_MS {
            Some("an increment or delay of more than an hour".to_owned())
        } else if p.moves > MAX_PERIOD_MOVES {
            Some(format!("{} moves", p.moves))
        } else {
            None
        };
        if let Some(what) = absurd {
            return Err(GameError::InvalidGame(format!(
                "time control period {}: {what} is not a chess time control",
                i + 1
            )));
        }
    }
    start_position(info)?;
    rules_of(info)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_board_id_is_a_subject_token_and_not_the_unreadable_boards_name() {
        for good in ["hall-1", "B_12", "unknown-2"] {
            assert!(validate_board_id(good).is_ok(), "{good}");
        }
        for bad in ["", "hall.1", "hall 1", "a>", "unknown"] {
            assert!(validate_board_id(bad).is_err(), "{bad:?}");
        }
    }
}

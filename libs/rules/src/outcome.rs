//! How a game ends: result, reason and article, per edition.

use serde::Serialize;
use shakmaty::{Chess, Color, Position};

use crate::{
    dead, moverules,
    repetition::RepetitionTracker,
    ruleset::{Category, Edition, RuleSet},
};

/// The result of a game.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum GameResult {
    #[serde(rename = "1-0")]
    WhiteWins,
    #[serde(rename = "0-1")]
    BlackWins,
    #[serde(rename = "1/2-1/2")]
    Draw,
}

impl GameResult {
    /// The result as in PGN.
    pub const fn as_pgn(self) -> &'static str {
        match self {
            GameResult::WhiteWins => "1-0",
            GameResult::BlackWins => "0-1",
            GameResult::Draw => "1/2-1/2",
        }
    }

    /// A win for `winner`.
    pub const fn win_for(winner: Color) -> Self {
        match winner {
            Color::White => GameResult::WhiteWins,
            Color::Black => GameResult::BlackWins,
        }
    }
}

/// Why a game ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    Checkmate,
    Stalemate,
    DeadPosition,
    FivefoldRepetition,
    SeventyFiveMoves,
    FlagFall,
    /// A flag fell but the opponent could not checkmate by any series of legal moves.
    FlagFallOpponentCannotMate,
    /// A flag fell and whether the opponent could checkmate was not determined: no result
    /// until the arbiter decides.
    FlagFallUndetermined,
    Resignation,
    /// A resignation when the opponent could not checkmate (2023: a draw).
    ResignationOpponentCannotMate,
    /// A resignation (2023) when whether the opponent could checkmate was not determined: no
    /// result until the arbiter decides.
    ResignationUndetermined,
    Agreement,
    BothFlagsFallen,
    DrawClaim,
    ArbiterDecision,
}

/// A game end: result, reason and the article it rests on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GameEnd {
    /// `None` when the result rests on a question the analysis could not settle (whether a side
    /// can still checkmate): the game is over and the arbiter decides its result.
    pub result: Option<GameResult>,
    pub reason: EndReason,
    pub article: &'static str,
}

/// Editions from 2018 number sub-articles 5.1.1 where earlier ones wrote 5.1.a.
fn numbered(edition: Edition) -> bool {
    matches!(
        edition,
        Edition::Fide2018 | Edition::Fide2023 | Edition::Iccf2019
    )
}

/// What the position on the board says, as [`judge_board`] finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BoardVerdict {
    /// The position ends the game.
    Ends(GameEnd),
    /// Play goes on.
    Continues,
    /// Play goes on, but whether the position is dead (`article`) was not determined: never a
    /// verdict, the arbiter is to be told.
    DeadUndetermined { article: &'static str },
}

/// The game end the position itself imposes, in order of precedence: checkmate, stalemate,
/// dead position, then (from 2014) fivefold repetition and seventy-five moves. `None` while play
/// goes on, also when whether the position is dead was not determined ([`judge_board`] tells).
pub fn end_on_board(rules: &RuleSet, history: &RepetitionTracker) -> Option<GameEnd> {
    match judge_board(rules, history, DeadPositionCheck::OnItsOwn) {
        BoardVerdict::Ends(end) => Some(end),
        BoardVerdict::Continues | BoardVerdict::DeadUndetermined { .. } => None,
    }
}

/// How [`judge_board`] asks whether the position is dead.
#[derive(Debug, Clone, Copy)]
pub enum DeadPositionCheck<'a> {
    /// The position on its own ([`dead::dead_position`]).
    OnItsOwn,
    /// With the positions before it ([`dead::dead_position_in_game`]): the same answers, but
    /// `No` also where the analysis of the position alone is left undetermined and a position
    /// before it, reachable from it, is not dead.
    InTheGame(&'a dead::GameAnswers),
}

/// [`end_on_board`], telling apart a position that does not end the game from one whose
/// deadness the analysis could not determine.
pub fn judge_board(
    rules: &RuleSet,
    history: &RepetitionTracker,
    dead_check: DeadPositionCheck<'_>,
) -> BoardVerdict {
    let pos = history.position();
    let n = numbered(rules.edition);
    let dead_article = if n { "5.2.2" } else { "5.2.b" };
    if pos.is_checkmate() {
        return BoardVerdict::Ends(GameEnd {
            result: Some(GameResult::win_for(!pos.turn())),
            reason: EndReason::Checkmate,
            article: if n { "5.1.1" } else { "5.1.a" },
        });
    }
    if pos.is_stalemate() {
        return BoardVerdict::Ends(GameEnd {
            result: Some(GameResult::Draw),
            reason: EndReason::Stalemate,
            article: if n { "5.2.1" } else { "5.2.a" },
        });
    }
    let dead = match dead_check {
        DeadPositionCheck::OnItsOwn => dead::dead_position(pos),
        DeadPositionCheck::InTheGame(answers) => {
            dead::dead_position_in_game(history.positions(), answers)
        }
    };
    if dead == dead::Answer::Yes {
        return BoardVerdict::Ends(dead_position_reached(rules));
    }
    if history.fivefold().is_some() {
        return BoardVerdict::Ends(GameEnd {
            result: Some(GameResult::Draw),
            reason: EndReason::FivefoldRepetition,
            article: if n { "9.6.1" } else { "9.6.a" },
        });
    }
    if moverules::seventy_five_moves(pos, rules) {
        return BoardVerdict::Ends(GameEnd {
            result: Some(GameResult::Draw),
            reason: EndReason::SeventyFiveMoves,
            article: if n { "9.6.2" } else { "9.6.b" },
        });
    }
    if dead == dead::Answer::Undetermined {
        return BoardVerdict::DeadUndetermined {
            article: dead_article,
        };
    }
    BoardVerdict::Continues
}

/// The game ends in a draw: the position is dead.
pub fn dead_position_reached(rules: &RuleSet) -> GameEnd {
    GameEnd {
        result: Some(GameResult::Draw),
        reason: EndReason::DeadPosition,
        article: if numbered(rules.edition) {
            "5.2.2"
        } else {
            "5.2.b"
        },
    }
}

fn flag_article(edition: Edition) -> &'static str {
    match edition {
        Edition::Fide2005 => "6.10",
        _ => "6.9",
    }
}

/// `flagged`'s flag fell before completing the prescribed moves, in `pos`: a loss, unless the
/// opponent cannot checkmate by any series of legal moves — then a draw. When that was not
/// determined, the game is over without a result: the arbiter decides.
pub fn flag_fall(rules: &RuleSet, pos: &Chess, flagged: Color) -> GameEnd {
    let article = flag_article(rules.edition);
    let (result, reason) = match dead::can_checkmate(pos, !flagged) {
        dead::Answer::Yes => (Some(GameResult::win_for(!flagged)), EndReason::FlagFall),
        dead::Answer::No => (
            Some(GameResult::Draw),
            EndReason::FlagFallOpponentCannotMate,
        ),
        dead::Answer::Undetermined => (None, EndReason::FlagFallUndetermined),
    };
    GameEnd {
        result,
        reason,
        article,
    }
}

/// `resigning` resigns in `pos`. From 2023 a resignation is a draw when the opponent cannot
/// checkmate by any series of legal moves (undetermined: no result, the arbiter decides).
pub fn resignation(rules: &RuleSet, pos: &Chess, resigning: Color) -> GameEnd {
    let n = numbered(rules.edition);
    let article = if n { "5.1.2" } else { "5.1.b" };
    let win = (
        Some(GameResult::win_for(!resigning)),
        EndReason::Resignation,
    );
    let (result, reason) = if rules.edition == Edition::Fide2023 {
        match dead::can_checkmate(pos, !resigning) {
            dead::Answer::Yes => win,
            dead::Answer::No => (
                Some(GameResult::Draw),
                EndReason::ResignationOpponentCannotMate,
            ),
            dead::Answer::Undetermined => (None, EndReason::ResignationUndetermined),
        }
    } else {
        win
    };
    GameEnd {
        result,
        reason,
        article,
    }
}

/// Both players agree to a draw.
pub fn agreement(rules: &RuleSet) -> GameEnd {
    GameEnd {
        result: Some(GameResult::Draw),
        reason: EndReason::Agreement,
        article: if numbered(rules.edition) {
            "5.2.3"
        } else {
            "5.2.c"
        },
    }
}

/// Where the Laws of 2018 and 2023 put both flags fallen: their Guidelines, not an article.
pub const GUIDELINES_BOTH_FLAGS: &str = "III.3.1";

/// An upheld draw claim ends the game.
pub fn draw_claim_upheld(article: &'static str) -> GameEnd {
    GameEnd {
        result: Some(GameResult::Draw),
        reason: EndReason::DrawClaim,
        article,
    }
}

/// Both flags have fallen and it cannot be established which fell first. In rapid and blitz the
/// game is drawn; in standard play it is drawn only in the last period (`in_last_period`), and
/// otherwise play continues (`None`). From 2018 the rule is no longer an article of the Laws but
/// their Guidelines III.3.1 (games without increment, standard and rapid).
pub fn both_flags_fallen(rules: &RuleSet, in_last_period: bool) -> Option<GameEnd> {
    let article = match (rules.edition, rules.category) {
        (Edition::Fide2005, Category::Standard) => "6.12",
        (Edition::Fide2005, _) => "B.8",
        (Edition::Fide2009, Category::Standard) => "6.11",
        (Edition::Fide2009, _) => "A.4.f",
        (Edition::Fide2018 | Edition::Fide2023, Category::Standard | Category::Rapid) => {
            GUIDELINES_BOTH_FLAGS
        }
        (_, Category::Standard) => "6.11",
        (_, _) => "A.4.4",
    };
    (rules.category != Category::Standard || in_last_period).then_some(GameEnd {
        result: Some(GameResult::Draw),
        reason: EndReason::BothFlagsFallen,
        article,
    })
}

/// A result the arbiter decides (forfeits, double forfeit, default time), with its article.
pub fn arbiter_decision(result: GameResult, article: &'static str) -> GameEnd {
    GameEnd {
        result: Some(result),
        reason: EndReason::ArbiterDecision,
        article,
    }
}

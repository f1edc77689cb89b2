//! Illegal moves and their penalties (Article 7; rapid and blitz appendices).

use serde::Serialize;
use shakmaty::{Chess, Color};

use crate::{
    dead,
    ruleset::{Category, Edition, RuleSet, Side},
};

/// What kind of irregularity was completed (by pressing the clock).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IllegalKind {
    /// A move that is not legal in the position (including capturing the king).
    IllegalMove,
    /// A pawn moved to the last rank and the clock pressed without promoting.
    UnpromotedPawn,
    /// The clock pressed without making a move (illegal from 2018).
    ClockWithoutMove,
    /// A move made with two hands (illegal from 2018).
    TwoHands,
}

/// Penalised illegal moves per player; the caller keeps it with the game state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct IllegalMoveTally {
    pub white: u32,
    pub black: u32,
}

impl IllegalMoveTally {
    /// Penalised illegal moves by `side`.
    pub fn of(&self, side: Color) -> u32 {
        match side {
            Color::White => self.white,
            Color::Black => self.black,
        }
    }

    fn incremented(mut self, side: Color) -> Self {
        match side {
            Color::White => self.white += 1,
            Color::Black => self.black += 1,
        }
        self
    }
}

/// How the position is corrected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Correction {
    /// Restore the position before the irregularity (7.4.a / 7.5.1); the replacing move must
    /// respect 4.3 for the touched piece.
    RestorePosition,
    /// Replace the unpromoted pawn by a queen of the same colour (from 2014).
    ReplacePawnWithQueen,
    /// Nothing to correct (clock pressed without a move).
    None,
    /// The illegal move stands (no claim before the opponent moved, without adequate supervision).
    MoveStands,
}

/// The penalty decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "penalty", rename_all = "snake_case")]
pub enum IllegalPenalty {
    /// Time added to the opponent's clock.
    OpponentTime { bonus_ms: u64 },
    /// The offender loses the game.
    Loss,
    /// The game is drawn: the offender would lose but the opponent cannot checkmate.
    Draw,
    /// The offender loses, or the game is drawn if the opponent cannot checkmate, and whether
    /// the opponent can was not determined: the arbiter decides.
    LossOrDraw,
    /// No penalty (the move stands, or the act is not an illegal move under this edition).
    NoPenalty,
}

/// What the arbiter is told about a completed illegal move.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IllegalMoveReport {
    pub offender: Side,
    pub kind: IllegalKind,
    /// False when the act is not an illegal move under the edition (e.g. pressing the clock
    /// without moving before 2018).
    pub counts_as_illegal: bool,
    pub penalty: IllegalPenalty,
    pub correction: Correction,
    /// How many penalised illegal moves the offender has made, this one included.
    pub offender_count: u32,
    /// The tally to keep for the rest of the game.
    pub tally: IllegalMoveTally,
    pub article: &'static str,
}

/// A completed illegal move to judge.
#[derive(Debug, Clone)]
pub struct IllegalMoveCase<'a> {
    pub offender: Color,
    pub kind: IllegalKind,
    /// The position before the irregularity (the one that is restored).
    pub position_before: &'a Chess,
    /// Without adequate supervision in rapid and blitz: the opponent claimed before making his
    /// own move. Ignored otherwise (the arbiter acts on his own).
    pub opponent_claimed: bool,
}

const MINUTE_MS: u64 = 60_000;

fn is_illegal_under(edition: Edition, kind: IllegalKind) -> bool {
    match kind {
        IllegalKind::IllegalMove | IllegalKind::UnpromotedPawn => true,
        IllegalKind::ClockWithoutMove | IllegalKind::TwoHands => {
            matches!(edition, Edition::Fide2018 | Edition::Fide2023)
        }
    }
}

fn standard_article(edition: Edition, kind: IllegalKind) -> &'static str {
    match edition {
        Edition::Fide2005 | Edition::Fide2009 => "7.4.b",
        Edition::Fide2014 => "7.5.b",
        _ => match kind {
            IllegalKind::UnpromotedPawn => "7.5.2",
            IllegalKind::ClockWithoutMove => "7.5.3",
            IllegalKind::TwoHands => "7.5.4",
            IllegalKind::IllegalMove => "7.5.5",
        },
    }
}

/// The time given to the opponent per penalised illegal move: 2 min, 1 min in blitz from 2018
/// and in rapid too in 2023.
fn bonus_ms(rules: &RuleSet) -> u64 {
    match (rules.edition, rules.category) {
        (Edition::Fide2018, Category::Blitz) => MINUTE_MS,
        (Edition::Fide2023, Category::Rapid | Category::Blitz) => MINUTE_MS,
        _ => 2 * MINUTE_MS,
    }
}

/// The penalised illegal move number that loses: the 3rd in 2005/2009, the 2nd from 2014.
fn losing_count(edition: Edition) -> u32 {
    match edition {
        Edition::Fide2005 | Edition::Fide2009 => 3,
        _ => 2,
    }
}

/// How a penalised illegal move of `kind` is corrected under `edition` (Articles 7.4 / 7.5):
/// an unpromoted pawn is replaced by a queen from 2014, a press without a move needs nothing,
/// otherwise the position before the irregularity is restored.
pub fn correction_of(edition: Edition, kind: IllegalKind) -> Correction {
    match kind {
        IllegalKind::UnpromotedPawn if edition >= Edition::Fide2014 => {
            Correction::ReplacePawnWithQueen
        }
        IllegalKind::ClockWithoutMove => Correction::None,
        _ => Correction::RestorePosition,
    }
}

/// The penalty of a penalised illegal move counted again as the offender's `count`-th, after an
/// earlier one's penalty was rejected: below the edition's losing count, time for the opponent;
/// at or above it, the loss (or draw) it was judged with, which rests on the same position; as
/// judged where the arbiter acts on a claim only (the count does not matter there).
pub fn recounted_penalty(rules: &RuleSet, count: u32, judged: IllegalPenalty) -> IllegalPenalty {
    // Where the arbiter acts on a claim only, the penalty does not depend on the count.
    let claim_based = rules.claim_based_supervision() && !rules.edition.is_iccf();
    if !claim_based && count < losing_count(rules.edition) {
        IllegalPenalty::OpponentTime {
            bonus_ms: bonus_ms(rules),
        }
    } else {
        judged
    }
}

/// Judges a completed illegal move under `rules`, given the tally so far.
pub fn judge_illegal_move(
    rules: &RuleSet,
    tally: IllegalMoveTally,
    case: &IllegalMoveCase<'_>,
) -> IllegalMoveReport {
    let edition = rules.edition;
    let offender = case.offender;
    let opponent = !offender;
    let mut report = IllegalMoveReport {
        offender: offender.into(),
        kind: case.kind,
        counts_as_illegal: is_illegal_under(edition, case.kind),
        penalty: IllegalPenalty::NoPenalty,
        correction: Correction::None,
        offender_count: tally.of(offender),
        tally,
        article: standard_article(edition, case.kind),
    };
    if !report.counts_as_illegal {
        report.article = "6.2";
        return report;
    }
    let claim_based = rules.claim_based_supervision() && !edition.is_iccf();
    if claim_based {
        report.article = match (edition, rules.category) {
            (Edition::Fide2005, Category::Blitz) => "C.3",
            (Edition::Fide2005, _) => "B.6",
            (Edition::Fide2009, Category::Blitz) => "B.3",
            (Edition::Fide2009, _) => "A.4.c",
            (_, Category::Blitz) => "B.3",
            _ => "A.4.2",
        };
        if !case.opponent_claimed {
            report.correction = Correction::MoveStands;
            return report;
        }
        // 2005/2009 blitz: the claimant wins, or draws if he cannot checkmate.
        if matches!(edition, Edition::Fide2005 | Edition::Fide2009)
            && rules.category == Category::Blitz
        {
            report.correction = Correction::RestorePosition;
            report.penalty = loss_unless_opponent_cannot_mate(case.position_before, opponent);
            report.offender_count = tally.of(offender) + 1;
            report.tally = tally.incremented(offender);
            return report;
        }
    }
    report.correction = correction_of(edition, case.kind);
    let count = tally.of(offender) + 1;
    report.offender_count = count;
    report.tally = tally.incremented(offender);
    report.penalty = if count >= losing_count(edition) {
        // 2005 has no exception; from 2009 a draw when the opponent cannot checkmate.
        if edition == Edition::Fide2005 {
            IllegalPenalty::Loss
        } else {
            loss_unless_opponent_cannot_mate(case.position_before, opponent)
        }
    } else {
        IllegalPenalty::OpponentTime {
            bonus_ms: bonus_ms(rules),
        }
    };
    report
}

/// A loss, or a draw when the opponent cannot checkmate by any series of legal moves; an
/// undetermined answer is left to the arbiter.
fn loss_unless_opponent_cannot_mate(position: &Chess, opponent: Color) -> IllegalPenalty {
    match dead::can_checkmate(position, opponent) {
        dead::Answer::Yes => IllegalPenalty::Loss,
        dead::Answer::No => IllegalPenalty::Draw,
        dead::Answer::Undetermined => IllegalPenalty::LossOrDraw,
    }
}

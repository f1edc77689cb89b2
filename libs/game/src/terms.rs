//! The log's typed terms where meaning is read from them (whose illegal move, which penalty,
//! which side acted), from events written with them or, in logs written before they were
//! typed, from the words those logs carried instead; and the shared conversions between the
//! rules library's terms and the log's (sides, endings, results, touches).
//!
//! The fallbacks here are the only place where stored words are read for their meaning: each
//! accepts exactly what earlier versions wrote, so an old log folds as it always did, and
//! nothing else depends on how a message is worded (invariant 5). Terms only ever shown to
//! people are shown in an old log's own words (`wording`).

use boardcast_rules::illegal::IllegalPenalty;
use boardcast_rules::touch::{Touch, TouchAction};
use boardcast_schema::pieces::board_piece;
use shakmaty::{Board, Color, Square};

use crate::device::{Observation, observation::Kind as ObservationKind};

use crate::events::{
    ClaimJudged, GameEnded, GameResult, IllegalMoveKind, IllegalMoveRecorded, PenaltyKind, Side,
    Termination, TouchMoveBreach, arbiter_action::Action, game_event::Kind,
};

/// The colour a side names, if any.
pub fn color_of(side: Side) -> Option<Color> {
    match side {
        Side::White => Some(Color::White),
        Side::Black => Some(Color::Black),
        Side::Unspecified => None,
    }
}

/// The side of a colour.
pub fn side_of(color: Color) -> Side {
    match color {
        Color::White => Side::White,
        Color::Black => Side::Black,
    }
}

/// A side as earlier versions wrote it: "white" or "black".
pub fn legacy_side(text: &str) -> Side {
    match text {
        "white" => Side::White,
        "black" => Side::Black,
        _ => Side::Unspecified,
    }
}

/// The side of a field that is typed now and was written as words before: the typed value when
/// set, else the words.
pub fn side_or_legacy(typed: Side, legacy: &str) -> Side {
    if typed == Side::Unspecified {
        legacy_side(legacy)
    } else {
        typed
    }
}

/// Who made the illegal move.
pub fn offender(illegal: &IllegalMoveRecorded) -> Side {
    side_or_legacy(illegal.offender_side(), &illegal.offender)
}

/// The penalty proposed for the illegal move. Logs written before it was typed said only
/// whether there was none ("none", "none: not an illegal move under …") and the rest in words:
/// those read as `NotIllegal`/`None` or, for any other words, as the time or loss that
/// `opponent_bonus_ms` and `result_if_confirmed` record.
pub fn penalty(illegal: &IllegalMoveRecorded) -> PenaltyKind {
    let typed = illegal.penalty();
    if typed != PenaltyKind::Unspecified {
        return typed;
    }
    let words = illegal.proposed_penalty.as_str();
    if words.starts_with("none: not an illegal move") {
        PenaltyKind::NotIllegal
    } else if words.starts_with("none") {
        PenaltyKind::None
    } else if illegal.opponent_bonus_ms > 0 {
        PenaltyKind::OpponentTime
    } else if words.starts_with("the game is lost, or drawn") {
        PenaltyKind::LossOrDraw
    } else if words.starts_with("the game is drawn") {
        PenaltyKind::Draw
    } else {
        PenaltyKind::Loss
    }
}

/// Whether a penalty that the arbiter rejects is taken off the offender's count of illegal
/// moves: one that counted towards the next penalty.
pub fn rejection_uncounts(penalty: PenaltyKind) -> bool {
    !matches!(penalty, PenaltyKind::NotIllegal | PenaltyKind::None)
}

/// A penalty of the rules as the log records it: its kind, the time it gives the opponent and
/// the result if the arbiter confirms it. `counts`: the act is an illegal move under the edition.
pub fn penalty_terms(
    penalty: IllegalPenalty,
    counts: bool,
    offender: Color,
) -> (PenaltyKind, u64, GameResult) {
    if !counts {
        return (PenaltyKind::NotIllegal, 0, GameResult::Unspecified);
    }
    let loss = match offender {
        Color::White => GameResult::BlackWins,
        Color::Black => GameResult::WhiteWins,
    };
    match penalty {
        IllegalPenalty::OpponentTime { bonus_ms } => {
            (PenaltyKind::OpponentTime, bonus_ms, GameResult::Unspecified)
        }
        IllegalPenalty::Loss => (PenaltyKind::Loss, 0, loss),
        IllegalPenalty::Draw => (PenaltyKind::Draw, 0, GameResult::Draw),
        IllegalPenalty::LossOrDraw => (PenaltyKind::LossOrDraw, 0, GameResult::Unspecified),
        IllegalPenalty::NoPenalty => (PenaltyKind::None, 0, GameResult::Unspecified),
    }
}

/// The penalty an illegal move's record proposes, in the rules' terms; `None` when it is no
/// penalty (not an illegal move under the edition, none, or not stated).
pub fn rules_penalty(illegal: &IllegalMoveRecorded) -> Option<IllegalPenalty> {
    match penalty(illegal) {
        PenaltyKind::OpponentTime => Some(IllegalPenalty::OpponentTime {
            bonus_ms: illegal.opponent_bonus_ms,
        }),
        PenaltyKind::Loss => Some(IllegalPenalty::Loss),
        PenaltyKind::Draw => Some(IllegalPenalty::Draw),
        PenaltyKind::LossOrDraw => Some(IllegalPenalty::LossOrDraw),
        PenaltyKind::NotIllegal | PenaltyKind::None | PenaltyKind::Unspecified => None,
    }
}

/// The time a rejected claim's penalty adds to each clock (White's, Black's; negative when
/// taken off), the claimant being the player to move then (Article 9.5); `None` for an upheld
/// claim or no time recorded.
pub fn rejected_claim_time(judged: &ClaimJudged, claimant: Color) -> Option<(i64, i64)> {
    let in_ms = |ms: u64| i64::try_from(ms).unwrap_or(i64::MAX);
    let (bonus, deduction) = (
        in_ms(judged.opponent_bonus_ms),
        in_ms(judged.claimant_deduction_ms),
    );
    if judged.upheld || (bonus == 0 && deduction == 0) {
        return None;
    }
    Some(match claimant {
        Color::White => (-deduction, bonus),
        Color::Black => (bonus, -deduction),
    })
}

/// The rules library's breach as the log records it.
pub fn breach_of(breach: boardcast_rules::touch::TouchBreach) -> TouchMoveBreach {
    use boardcast_rules::touch::TouchBreach as B;
    match breach {
        B::OwnPieceNotMoved => TouchMoveBreach::OwnPieceNotMoved,
        B::OpponentPieceNotCaptured => TouchMoveBreach::OpponentPieceNotCaptured,
        B::TouchedCaptureNotMade => TouchMoveBreach::TouchedCaptureNotMade,
        B::CastlingNotMade => TouchMoveBreach::CastlingNotMade,
        B::CastledAfterRookFirst => TouchMoveBreach::CastledAfterRookFirst,
        B::ReleasedPieceMovedAgain => TouchMoveBreach::ReleasedPieceMovedAgain,
    }
}

/// The rules library's kind of illegal move as the log records it.
pub fn illegal_kind_of(kind: boardcast_rules::illegal::IllegalKind) -> IllegalMoveKind {
    use boardcast_rules::illegal::IllegalKind as K;
    match kind {
        K::IllegalMove => IllegalMoveKind::IrregularPosition,
        K::UnpromotedPawn => IllegalMoveKind::PawnNotPromoted,
        K::ClockWithoutMove => IllegalMoveKind::ClockWithoutMove,
        K::TwoHands => IllegalMoveKind::TwoHands,
    }
}

/// The log's kind of illegal move in the rules library's terms (`None` when not stated).
pub fn rules_illegal_kind(kind: IllegalMoveKind) -> Option<boardcast_rules::illegal::IllegalKind> {
    use boardcast_rules::illegal::IllegalKind as K;
    match kind {
        IllegalMoveKind::IrregularPosition => Some(K::IllegalMove),
        IllegalMoveKind::PawnNotPromoted => Some(K::UnpromotedPawn),
        IllegalMoveKind::ClockWithoutMove => Some(K::ClockWithoutMove),
        IllegalMoveKind::TwoHands => Some(K::TwoHands),
        IllegalMoveKind::Unspecified => None,
    }
}

/// The article a game end rests on: its own field, or in logs written before it existed, the
/// one its detail names ("flag fall (Article 6.9)").
pub fn ended_article(ended: &GameEnded) -> Option<&str> {
    if ended.article.is_empty() {
        article_in(&ended.detail)
    } else {
        Some(&ended.article)
    }
}

fn article_in(detail: &str) -> Option<&str> {
    let (_, after) = detail.rsplit_once("Article ")?;
    let article = after
        .split(|c: char| c == ')' || c.is_whitespace() || c == ';' || c == ',')
        .next()?;
    (!article.is_empty()).then_some(article)
}

/// The event as versions before the typed terms wrote it: the typed fields cleared, the words
/// kept. A log written then holds exactly this where this version writes `kind`, so a decision
/// made again is the logged one when either matches.
pub fn without_typed_terms(kind: &Kind) -> Kind {
    let mut kind = kind.clone();
    match &mut kind {
        Kind::IllegalMove(m) => {
            m.offender_side = 0;
            m.illegal_kind = 0;
            m.penalty = 0;
        }
        Kind::Irregularity(i) => {
            i.cause_kind = 0;
            i.unmatched_for_ms = 0;
            i.moves_back = 0;
        }
        Kind::TouchMove(t) => t.breach_kind = 0,
        Kind::ClockAlert(a) => a.clock_of = 0,
        Kind::ClaimJudged(j) => j.verdict = 0,
        Kind::Ended(e) => e.article.clear(),
        Kind::Arbiter(a) => match a.action.as_mut() {
            Some(Action::DrawOffer(who) | Action::Resignation(who)) => who.player = 0,
            Some(Action::Claim(ruling)) => ruling.claimant_side = 0,
            _ => {}
        },
        _ => {}
    }
    kind
}

/// A lift or placement as the touch-move rules read it (`None` for other observations and for
/// squares or pieces no board has).
pub fn touch_of(obs: &Observation) -> Option<Touch> {
    match obs.kind.as_ref()? {
        ObservationKind::Lifted(l) => Some(Touch {
            action: TouchAction::Lift,
            square: square_of(l.square)?,
            piece: board_piece(l.piece)?,
        }),
        ObservationKind::Placed(p) => Some(Touch {
            action: TouchAction::Place,
            square: square_of(p.square)?,
            piece: board_piece(p.piece)?,
        }),
        _ => None,
    }
}

fn square_of(index: u32) -> Option<Square> {
    (index < 64).then(|| Square::new(index))
}

/// A pawn of `side` standing on its last rank.
pub fn unpromoted_pawn(placement: &str, side: Color) -> bool {
    let Ok(board) = placement.parse::<Board>() else {
        return false;
    };
    let last_rank = match side {
        Color::White => shakmaty::Bitboard::from_rank(shakmaty::Rank::Eighth),
        Color::Black => shakmaty::Bitboard::from_rank(shakmaty::Rank::First),
    };
    (board.pawns() & board.by_color(side) & last_rank).any()
}

/// A game end of the rules library as the event that records it (the article also in the
/// detail, for people).
pub fn ending_of(end: &boardcast_rules::outcome::GameEnd) -> GameEnded {
    use boardcast_rules::outcome::EndReason as R;
    let (termination, words) = match end.reason {
        R::Checkmate => (Termination::Checkmate, "checkmate"),
        R::Stalemate => (Termination::Stalemate, "stalemate"),
        R::DeadPosition => (Termination::DeadPosition, "dead position"),
        R::FivefoldRepetition => (Termination::FivefoldRepetition, "fivefold repetition"),
        R::SeventyFiveMoves => (Termination::SeventyFiveMoves, "seventy-five moves"),
        R::FlagFall => (Termination::FlagFall, "flag fall"),
        R::FlagFallOpponentCannotMate => (
            Termination::FlagFall,
            "flag fall, but the opponent cannot checkmate",
        ),
        R::FlagFallUndetermined => (
            Termination::FlagFall,
            "flag fall; whether the opponent can checkmate was not determined, so the arbiter \
             decides the result",
        ),
        R::Resignation => (Termination::Resignation, "resignation"),
        R::ResignationOpponentCannotMate => (
            Termination::Resignation,
            "resignation, but the opponent cannot checkmate",
        ),
        R::ResignationUndetermined => (
            Termination::Resignation,
            "resignation; whether the opponent can checkmate was not determined, so the \
             arbiter decides the result",
        ),
        R::Agreement => (Termination::Agreement, "draw agreed"),
        R::BothFlagsFallen => (Termination::BothFlags, "both flags fallen"),
        R::DrawClaim => (Termination::DrawClaim, "draw claim upheld"),
        R::ArbiterDecision => (Termination::Arbiter, "arbiter's decision"),
    };
    GameEnded {
        result: result_of(end.result) as i32,
        termination: termination as i32,
        detail: format!("{words} (Article {})", end.article),
        article: end.article.to_owned(),
    }
}

/// A game end of the rules library as the event kind that records it.
pub fn ended_event(end: &boardcast_rules::outcome::GameEnd) -> Kind {
    Kind::Ended(ending_of(end))
}

/// The rules' result, in the schema's terms (none yet: the arbiter decides).
pub fn result_of(result: Option<boardcast_rules::outcome::GameResult>) -> GameResult {
    use boardcast_rules::outcome::GameResult as R;
    match result {
        Some(R::WhiteWins) => GameResult::WhiteWins,
        Some(R::BlackWins) => GameResult::BlackWins,
        Some(R::Draw) => GameResult::Draw,
        None => GameResult::Unspecified,
    }
}

/// The result as PGN writes it: "1-0", "0-1", "1/2-1/2", or "*" while there is none; the
/// scores PGN itself has no token for as lichess and the pairing programs read them in the
/// Result tag: "0-0" (both lose), "1/2-0" and "0-1/2".
pub fn result_token(result: GameResult) -> &'static str {
    use boardcast_rules::pgn;
    match result {
        GameResult::WhiteWins => "1-0",
        GameResult::BlackWins => "0-1",
        GameResult::Draw => "1/2-1/2",
        GameResult::BothLose => pgn::BOTH_LOST,
        GameResult::WhiteHalfBlackZero => pgn::WHITE_HALF_BLACK_ZERO,
        GameResult::WhiteZeroBlackHalf => pgn::WHITE_ZERO_BLACK_HALF,
        GameResult::Unspecified => "*",
    }
}

/// The verdict a claim was judged with from the log (a log written before it was typed: read
/// from its name).
pub fn claim_judgement(j: &crate::events::ClaimJudged) -> crate::events::ClaimJudgement {
    use crate::events::ClaimJudgement;
    match j.verdict() {
        ClaimJudgement::Unspecified => match j.verdict_from_log.as_str() {
            "upheld" => ClaimJudgement::Upheld,
            "rejected" => ClaimJudgement::Rejected,
            "right_lost" => ClaimJudgement::RightLost,
            _ => ClaimJudgement::Unspecified,
        },
        verdict => verdict,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_article_is_read_from_a_game_end_detail() {
        assert_eq!(article_in("flag fall (Article 6.9)"), Some("6.9"));
        assert_eq!(
            article_in("flag fall, but the opponent cannot checkmate (Article 6.10)"),
            Some("6.10")
        );
        assert_eq!(
            article_in("white resigned: resignation (Article 5.1.2)"),
            Some("5.1.2")
        );
        assert_eq!(
            article_in("both flags fallen (Article A.4.4)"),
            Some("A.4.4")
        );
        for nothing in ["", "flag fall", "Article ", "(Article )"] {
            assert_eq!(article_in(nothing), None, "{nothing:?}");
        }
    }

    #[test]
    fn legacy_penalty_words_read_as_earlier_versions_folded_them() {
        let words = |text: &str, bonus: u64| IllegalMoveRecorded {
            proposed_penalty: text.into(),
            opponent_bonus_ms: bonus,
            ..Default::default()
        };
        let read = |text: &str, bonus: u64| penalty(&words(text, bonus));
        assert_eq!(
            read("none: not an illegal move under fide-2005", 0),
            PenaltyKind::NotIllegal
        );
        assert_eq!(read("none", 0), PenaltyKind::None);
        assert_eq!(
            read("120 s added to the opponent's clock", 120_000),
            PenaltyKind::OpponentTime
        );
        assert_eq!(read("the game is lost", 0), PenaltyKind::Loss);
        assert_eq!(
            read("the game is drawn (the opponent cannot checkmate)", 0),
            PenaltyKind::Draw
        );
        // Exactly the penalties earlier versions did not take off the count when rejected.
        for (text, bonus) in [
            ("none", 0),
            ("none: not an illegal move under fide-2014", 0),
        ] {
            assert!(!rejection_uncounts(read(text, bonus)));
        }
        for (text, bonus) in [
            ("60 s added to the opponent's clock", 60_000),
            ("the game is lost", 0),
        ] {
            assert!(rejection_uncounts(read(text, bonus)));
        }
    }

    #[test]
    fn typed_values_win_over_words() {
        let illegal = IllegalMoveRecorded {
            offender: "black".into(),
            offender_side: Side::White as i32,
            proposed_penalty: "none".into(),
            penalty: PenaltyKind::Loss as i32,
            ..Default::default()
        };
        assert_eq!(offender(&illegal), Side::White);
        assert_eq!(penalty(&illegal), PenaltyKind::Loss);
    }

    #[test]
    fn a_side_no_version_wrote_is_no_side() {
        assert_eq!(legacy_side("nobody"), Side::Unspecified);
        assert_eq!(side_or_legacy(Side::Unspecified, "black"), Side::Black);
        assert_eq!(side_or_legacy(Side::White, "black"), Side::White);
    }
}

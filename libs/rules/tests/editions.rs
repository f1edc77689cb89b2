//! Table-driven tests per edition: draw claims, incorrect-claim penalties, illegal-move
//! penalties, touch-move reports and game ends, each with the article cited.

mod common;

use boardcast_rules::{
    claims::{ClaimBasis, ClaimKind, ClaimVerdict, DrawClaim, TimePenalty, evaluate_claim},
    illegal::{
        Correction, IllegalKind, IllegalMoveCase, IllegalMoveTally, IllegalPenalty,
        judge_illegal_move,
    },
    outcome::{self, EndReason, GameResult},
    repetition::RepetitionTracker,
    ruleset::{Category, Edition, RuleSet, Supervision},
    touch::{Touch, TouchAction, TouchBreach, check_touches},
};
use common::*;
use shakmaty::{Chess, Color, Piece, Role, Square};

const MIN: u64 = 60_000;
const SHUFFLE: [&str; 8] = [
    "g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1", "f6g8",
];

fn claim(kind: ClaimKind) -> DrawClaim {
    DrawClaim {
        kind,
        intended_move: None,
        claimant_has_moved: false,
        claimant_has_touched: false,
        claimant_remaining_ms: 10 * MIN,
    }
}

fn rules(edition: Edition, category: Category) -> RuleSet {
    RuleSet::new(edition, category, Supervision::Adequate)
}

#[test]
fn threefold_claims_upheld_in_every_edition_with_evidence() {
    for edition in Edition::ALL {
        let r = RuleSet::standard(edition);
        // On the board: the start position at plies 0, 4 and 8.
        let board = track(edition, &Chess::default(), &SHUFFLE);
        let report = evaluate_claim(&r, &board, &claim(ClaimKind::Threefold)).expect("judged");
        assert_eq!(report.verdict, ClaimVerdict::Upheld, "{edition}");
        assert_eq!(report.article, "9.2", "{edition}");
        assert_eq!(report.basis, ClaimBasis::Position);
        let plies: Vec<u32> = report.evidence.occurrences.iter().map(|o| o.ply).collect();
        assert_eq!(plies, [0, 4, 8], "{edition}");
        assert_eq!(report.evidence.log_refs, [0, 400, 800], "{edition}");

        // With the intended move f6-g8: the third occurrence would be at ply 8.
        let before = track(edition, &Chess::default(), &SHUFFLE[..7]);
        let intended = parse_uci(before.position(), "f6g8");
        let report = evaluate_claim(
            &r,
            &before,
            &DrawClaim {
                intended_move: Some(intended),
                ..claim(ClaimKind::Threefold)
            },
        )
        .expect("judged");
        assert_eq!(report.verdict, ClaimVerdict::Upheld, "{edition}");
        assert_eq!(report.basis, ClaimBasis::IntendedMove);
        let plies: Vec<u32> = report.evidence.occurrences.iter().map(|o| o.ply).collect();
        assert_eq!(plies, [0, 4], "{edition}");
        assert_eq!(report.evidence.intended_occurrence_ply, Some(8));
    }
}

#[test]
fn incorrect_claim_penalties_per_edition() {
    // (edition, category, claimant's time, opponent bonus, claimant deduction, article)
    let table = [
        (
            Edition::Fide2005,
            Category::Standard,
            10 * MIN,
            3 * MIN,
            3 * MIN,
            "9.5.b",
        ),
        (
            Edition::Fide2005,
            Category::Standard,
            5 * MIN,
            3 * MIN,
            5 * MIN / 2,
            "9.5.b",
        ),
        (
            Edition::Fide2005,
            Category::Standard,
            90_000,
            3 * MIN,
            30_000,
            "9.5.b",
        ),
        (
            Edition::Fide2005,
            Category::Standard,
            2 * MIN,
            3 * MIN,
            MIN,
            "9.5.b",
        ),
        (
            Edition::Fide2005,
            Category::Standard,
            50_000,
            3 * MIN,
            0,
            "9.5.b",
        ),
        (
            Edition::Fide2009,
            Category::Standard,
            10 * MIN,
            3 * MIN,
            0,
            "9.5",
        ),
        (
            Edition::Fide2014,
            Category::Standard,
            10 * MIN,
            2 * MIN,
            0,
            "9.5.b",
        ),
        (
            Edition::Fide2018,
            Category::Standard,
            10 * MIN,
            2 * MIN,
            0,
            "9.5.3",
        ),
        (
            Edition::Fide2018,
            Category::Rapid,
            10 * MIN,
            2 * MIN,
            0,
            "9.5.3",
        ),
        (Edition::Fide2018, Category::Blitz, 10 * MIN, MIN, 0, "B.3"),
        (
            Edition::Fide2023,
            Category::Standard,
            10 * MIN,
            2 * MIN,
            0,
            "9.5.3",
        ),
        (Edition::Fide2023, Category::Rapid, 10 * MIN, MIN, 0, "A.3"),
        (Edition::Fide2023, Category::Blitz, 10 * MIN, MIN, 0, "A.3"),
        (
            Edition::Iccf2019,
            Category::Standard,
            10 * MIN,
            0,
            0,
            "9.5.3",
        ),
    ];
    for (edition, category, remaining, bonus, deduction, article) in table {
        let history = track(edition, &Chess::default(), &SHUFFLE[..4]);
        let c = DrawClaim {
            claimant_remaining_ms: remaining,
            ..claim(ClaimKind::Threefold)
        };
        let report = evaluate_claim(&rules(edition, category), &history, &c).expect("judged");
        assert_eq!(
            report.verdict,
            ClaimVerdict::Rejected {
                penalty: TimePenalty {
                    opponent_bonus_ms: bonus,
                    claimant_deduction_ms: deduction,
                },
                penalty_article: article,
                intended_move_must_be_played: None,
            },
            "{edition} {category:?} {remaining}"
        );
        assert_eq!(report.evidence.occurrences.len(), 2);
    }

    // A rejected intended-move claim: the move must be played.
    let history = track(Edition::Fide2023, &Chess::default(), &SHUFFLE[..3]);
    let m = parse_uci(history.position(), "f6g8");
    let report = evaluate_claim(
        &RuleSet::standard(Edition::Fide2023),
        &history,
        &DrawClaim {
            intended_move: Some(m),
            ..claim(ClaimKind::Threefold)
        },
    )
    .expect("judged");
    assert!(matches!(
        report.verdict,
        ClaimVerdict::Rejected { intended_move_must_be_played: Some(ref u), .. } if u == "f6g8"
    ));
}

#[test]
fn right_to_claim_lost_per_edition() {
    // (edition, moved, touched, lost)
    let table = [
        (Edition::Fide2005, false, true, false),
        (Edition::Fide2005, true, false, true),
        (Edition::Fide2009, false, true, true),
        (Edition::Fide2014, false, true, true),
        (Edition::Fide2018, false, true, true),
        (Edition::Fide2023, false, true, true),
        (Edition::Fide2023, false, false, false),
    ];
    for (edition, moved, touched, lost) in table {
        let history = track(edition, &Chess::default(), &SHUFFLE);
        let c = DrawClaim {
            claimant_has_moved: moved,
            claimant_has_touched: touched,
            ..claim(ClaimKind::Threefold)
        };
        let report = evaluate_claim(&RuleSet::standard(edition), &history, &c).expect("judged");
        if lost {
            assert_eq!(report.verdict, ClaimVerdict::RightLost, "{edition}");
            assert_eq!(report.article, "9.4");
        } else {
            assert_eq!(report.verdict, ClaimVerdict::Upheld, "{edition}");
        }
    }
}

#[test]
fn fifty_move_claims_per_edition() {
    // Eight pieces: the ICCF exception does not apply.
    let fen_99 = "r3k3/pp6/8/8/8/8/PP6/R3K3 w - - 99 80";
    let fen_100 = "r3k3/pp6/8/8/8/8/PP6/R3K3 w - - 100 80";
    // Three pieces: no fifty-move claim under ICCF.
    let fen_few = "4k3/8/8/8/8/8/8/R3K3 w - - 100 80";
    // (edition, fen, intended move, upheld, basis)
    let table = [
        (Edition::Fide2009, fen_99, None, false, ClaimBasis::Position),
        (
            Edition::Fide2009,
            fen_99,
            Some("a1b1"),
            true,
            ClaimBasis::IntendedMove,
        ),
        (
            Edition::Fide2009,
            fen_99,
            Some("a2a3"),
            false,
            ClaimBasis::IntendedMove,
        ),
        (Edition::Fide2023, fen_100, None, true, ClaimBasis::Position),
        (Edition::Fide2005, fen_100, None, true, ClaimBasis::Position),
        (Edition::Fide2023, fen_few, None, true, ClaimBasis::Position),
        (Edition::Iccf2019, fen_100, None, true, ClaimBasis::Position),
        (
            Edition::Iccf2019,
            fen_few,
            None,
            false,
            ClaimBasis::Position,
        ),
    ];
    for (edition, fen, intended, upheld, basis) in table {
        let start = position_from_fen(fen);
        let history = RepetitionTracker::new(edition, &start, 7);
        let c = DrawClaim {
            intended_move: intended.map(|u| parse_uci(&start, u)),
            ..claim(ClaimKind::Fifty)
        };
        let report = evaluate_claim(&RuleSet::standard(edition), &history, &c).expect("judged");
        assert_eq!(report.article, "9.3");
        assert_eq!(
            report.verdict == ClaimVerdict::Upheld,
            upheld,
            "{edition} {fen} {intended:?}: {}",
            report.explanation
        );
        assert_eq!(report.basis, basis);
        assert!(report.evidence.log_refs.contains(&7));
    }
}

/// edition, category, supervision, kind, earlier penalised illegal moves, opponent claimed,
/// position before, penalty, correction, article.
type IllegalCase<'a> = (
    Edition,
    Category,
    Supervision,
    IllegalKind,
    u32,
    bool,
    &'a Chess,
    IllegalPenalty,
    Correction,
    &'static str,
);

/// edition, position, touches, move made (UCI), expected (breach, article, touch indices).
type TouchCase<'a> = (
    Edition,
    &'a Chess,
    Vec<Touch>,
    &'static str,
    Option<(TouchBreach, &'static str, Vec<usize>)>,
);

fn illegal(
    edition: Edition,
    category: Category,
    supervision: Supervision,
    kind: IllegalKind,
    prior: u32,
    claimed: bool,
    position: &Chess,
) -> boardcast_rules::illegal::IllegalMoveReport {
    judge_illegal_move(
        &RuleSet::new(edition, category, supervision),
        IllegalMoveTally {
            white: prior,
            black: 0,
        },
        &IllegalMoveCase {
            offender: Color::White,
            kind,
            position_before: position,
            opponent_claimed: claimed,
        },
    )
}

#[test]
fn illegal_move_penalties_per_edition() {
    use Category::*;
    use IllegalKind::*;
    use Supervision::*;
    let full = Chess::default();
    // Black has a bare king: it cannot checkmate by any series of legal moves.
    let bare = position_from_fen("4k3/8/8/8/8/8/8/3QK3 w - - 0 1");
    let two = IllegalPenalty::OpponentTime { bonus_ms: 2 * MIN };
    let one = IllegalPenalty::OpponentTime { bonus_ms: MIN };
    let none = IllegalPenalty::NoPenalty;
    let restore = Correction::RestorePosition;
    #[rustfmt::skip]
    let table: Vec<IllegalCase> = vec![
        (Edition::Fide2005, Standard, Adequate, IllegalMove, 0, false, &full, two, restore, "7.4.b"),
        (Edition::Fide2005, Standard, Adequate, IllegalMove, 1, false, &full, two, restore, "7.4.b"),
        (Edition::Fide2005, Standard, Adequate, IllegalMove, 2, false, &bare, IllegalPenalty::Loss, restore, "7.4.b"),
        (Edition::Fide2009, Standard, Adequate, IllegalMove, 2, false, &full, IllegalPenalty::Loss, restore, "7.4.b"),
        (Edition::Fide2009, Standard, Adequate, IllegalMove, 2, false, &bare, IllegalPenalty::Draw, restore, "7.4.b"),
        (Edition::Fide2009, Standard, Adequate, UnpromotedPawn, 0, false, &full, two, restore, "7.4.b"),
        (Edition::Fide2009, Standard, Adequate, ClockWithoutMove, 0, false, &full, none, Correction::None, "6.2"),
        (Edition::Fide2014, Standard, Adequate, IllegalMove, 0, false, &full, two, restore, "7.5.b"),
        (Edition::Fide2014, Standard, Adequate, IllegalMove, 1, false, &full, IllegalPenalty::Loss, restore, "7.5.b"),
        (Edition::Fide2014, Standard, Adequate, IllegalMove, 1, false, &bare, IllegalPenalty::Draw, restore, "7.5.b"),
        (Edition::Fide2014, Standard, Adequate, UnpromotedPawn, 0, false, &full, two, Correction::ReplacePawnWithQueen, "7.5.b"),
        (Edition::Fide2018, Standard, Adequate, ClockWithoutMove, 0, false, &full, two, Correction::None, "7.5.3"),
        (Edition::Fide2018, Standard, Adequate, UnpromotedPawn, 0, false, &full, two, Correction::ReplacePawnWithQueen, "7.5.2"),
        (Edition::Fide2018, Blitz, Adequate, IllegalMove, 0, false, &full, one, restore, "7.5.5"),
        (Edition::Fide2018, Rapid, Adequate, IllegalMove, 0, false, &full, two, restore, "7.5.5"),
        (Edition::Fide2023, Rapid, Adequate, IllegalMove, 0, false, &full, one, restore, "7.5.5"),
        (Edition::Fide2023, Standard, Adequate, TwoHands, 1, false, &full, IllegalPenalty::Loss, restore, "7.5.4"),
        // Rapid and blitz without adequate supervision: only on the opponent's claim.
        (Edition::Fide2005, Rapid, Inadequate, IllegalMove, 0, true, &full, two, restore, "B.6"),
        (Edition::Fide2005, Blitz, Inadequate, IllegalMove, 0, true, &full, IllegalPenalty::Loss, restore, "C.3"),
        (Edition::Fide2005, Blitz, Inadequate, IllegalMove, 0, true, &bare, IllegalPenalty::Draw, restore, "C.3"),
        (Edition::Fide2009, Blitz, Inadequate, IllegalMove, 0, false, &full, none, Correction::MoveStands, "B.3"),
        (Edition::Fide2009, Blitz, Inadequate, IllegalMove, 0, true, &full, IllegalPenalty::Loss, restore, "B.3"),
        (Edition::Fide2009, Blitz, Inadequate, IllegalMove, 0, true, &bare, IllegalPenalty::Draw, restore, "B.3"),
        (Edition::Fide2009, Rapid, Inadequate, IllegalMove, 0, true, &full, two, restore, "A.4.c"),
        (Edition::Fide2023, Blitz, Inadequate, IllegalMove, 0, true, &full, one, restore, "B.3"),
        (Edition::Fide2023, Blitz, Inadequate, IllegalMove, 1, true, &full, IllegalPenalty::Loss, restore, "B.3"),
        (Edition::Fide2023, Rapid, Inadequate, IllegalMove, 1, false, &full, none, Correction::MoveStands, "A.4.2"),
    ];
    for (edition, category, supervision, kind, prior, claimed, pos, penalty, correction, article) in
        table
    {
        let report = illegal(edition, category, supervision, kind, prior, claimed, pos);
        let case = format!("{edition} {category:?} {supervision:?} {kind:?} after {prior}");
        assert_eq!(report.penalty, penalty, "{case}");
        assert_eq!(report.correction, correction, "{case}");
        assert_eq!(report.article, article, "{case}");
        let penalised = !matches!(penalty, IllegalPenalty::NoPenalty);
        assert_eq!(report.tally.white, prior + u32::from(penalised), "{case}");
        assert_eq!(report.tally.black, 0);
    }
}

fn lift(sq: Square, color: Color, role: Role) -> Touch {
    Touch {
        action: TouchAction::Lift,
        square: sq,
        piece: Piece { color, role },
    }
}

fn place(sq: Square, color: Color, role: Role) -> Touch {
    Touch {
        action: TouchAction::Place,
        square: sq,
        piece: Piece { color, role },
    }
}

#[test]
fn touch_move_reports_per_edition() {
    use Color::{Black, White};
    use Role::*;
    use Square::*;
    let start = Chess::default();
    let pawns = position_from_fen("4k3/8/8/3p4/4P3/8/8/4K3 w - - 0 1");
    let castle = position_from_fen("4k3/8/8/8/8/8/8/4K2R w K - 0 1");
    #[rustfmt::skip]
    let table: Vec<TouchCase> = vec![
        // Knight lifted and put back, then a pawn moved.
        (Edition::Fide2023, &start,
         vec![lift(G1, White, Knight), place(G1, White, Knight), lift(E2, White, Pawn), place(E4, White, Pawn)],
         "e2e4", Some((TouchBreach::OwnPieceNotMoved, "4.3.1", vec![0]))),
        (Edition::Fide2023, &start,
         vec![lift(G1, White, Knight), place(F3, White, Knight)], "g1f3", None),
        // Opponent's capturable pawn lifted, then another move.
        (Edition::Fide2009, &pawns,
         vec![lift(D5, Black, Pawn), place(D5, Black, Pawn), lift(E4, White, Pawn), place(E5, White, Pawn)],
         "e4e5", Some((TouchBreach::TouchedCaptureNotMade, "4.3.c", vec![2, 0]))),
        // Only the opponent's pawn among the touches given (4.3.b).
        (Edition::Fide2009, &pawns,
         vec![lift(D5, Black, Pawn), place(D5, Black, Pawn)],
         "e4e5", Some((TouchBreach::OpponentPieceNotCaptured, "4.3.b", vec![0]))),
        // Opponent's pawn touched first, no capture with the touched king: the pawn had to be taken.
        (Edition::Fide2009, &pawns,
         vec![lift(D5, Black, Pawn), place(D5, Black, Pawn), lift(E1, White, King), place(D2, White, King)],
         "e1d2", Some((TouchBreach::OpponentPieceNotCaptured, "4.3.c", vec![0]))),
        (Edition::Fide2009, &pawns,
         vec![lift(D5, Black, Pawn), lift(E4, White, Pawn), place(D5, White, Pawn)], "e4d5", None),
        // Own and opponent's piece touched, the capture was possible, the king moved instead.
        (Edition::Fide2014, &pawns,
         vec![lift(E4, White, Pawn), place(E4, White, Pawn), lift(D5, Black, Pawn), place(D5, Black, Pawn),
              lift(E1, White, King), place(D2, White, King)],
         "e1d2", Some((TouchBreach::TouchedCaptureNotMade, "4.3.3", vec![0, 2]))),
        // King then rook touched, castling legal, another king move made.
        (Edition::Fide2018, &castle,
         vec![lift(E1, White, King), place(E1, White, King), lift(H1, White, Rook), place(H1, White, Rook),
              lift(E1, White, King), place(D1, White, King)],
         "e1d1", Some((TouchBreach::CastlingNotMade, "4.4.1", vec![0, 2]))),
        // Rook then king touched, then castled on that side: not allowed (4.4.b in 2005 and
        // 2009, 4.4.2 from 2014).
        (Edition::Fide2009, &castle,
         vec![lift(H1, White, Rook), place(H1, White, Rook), lift(E1, White, King), place(G1, White, King),
              lift(H1, White, Rook), place(F1, White, Rook)],
         "e1g1", Some((TouchBreach::CastledAfterRookFirst, "4.4.b", vec![0, 2]))),
        (Edition::Fide2005, &castle,
         vec![lift(H1, White, Rook), place(H1, White, Rook), lift(E1, White, King), place(G1, White, King),
              lift(H1, White, Rook), place(F1, White, Rook)],
         "e1g1", Some((TouchBreach::CastledAfterRookFirst, "4.4.b", vec![0, 2]))),
        (Edition::Fide2023, &castle,
         vec![lift(H1, White, Rook), place(H1, White, Rook), lift(E1, White, King), place(G1, White, King),
              lift(H1, White, Rook), place(F1, White, Rook)],
         "e1g1", Some((TouchBreach::CastledAfterRookFirst, "4.4.2", vec![0, 2]))),
        // Released on f3, lifted again and placed on h3: 4.7 from 2014 (4.6 is promotion).
        (Edition::Fide2023, &start,
         vec![lift(G1, White, Knight), place(F3, White, Knight), lift(F3, White, Knight), place(H3, White, Knight)],
         "g1h3", Some((TouchBreach::ReleasedPieceMovedAgain, "4.7", vec![1, 2, 3]))),
        (Edition::Fide2009, &start,
         vec![lift(G1, White, Knight), place(F3, White, Knight), lift(F3, White, Knight), place(H3, White, Knight)],
         "g1h3", Some((TouchBreach::ReleasedPieceMovedAgain, "4.6", vec![1, 2, 3]))),
    ];
    for (i, (edition, pos, touches, made, expected)) in table.into_iter().enumerate() {
        let m = parse_uci(pos, made);
        let report = check_touches(&RuleSet::standard(edition), pos, &touches, m);
        assert!(!report.only_on_claim);
        match expected {
            None => assert!(
                report.possible_breaches.is_empty(),
                "case {i}: {:?}",
                report.possible_breaches
            ),
            Some((breach, article, indices)) => {
                assert_eq!(report.possible_breaches.len(), 1, "case {i}: {report:?}");
                let found = &report.possible_breaches[0];
                assert_eq!(found.breach, breach, "case {i}");
                assert_eq!(found.article, article, "case {i}");
                assert_eq!(found.touch_indices, indices, "case {i}");
                assert!(!found.released_where_no_move_goes, "case {i}");
            }
        }
    }
    // A bishop put down on c3, where no move of it goes, then played to e3: that put-down made
    // no move, which the report says (the game does not hold it against the player).
    let opened = position_from_fen("rnbqkbnr/pppp1ppp/8/4p3/3P4/8/PPP1PPPP/RNBQKBNR w KQkq - 0 2");
    let report = check_touches(
        &RuleSet::standard(Edition::Fide2023),
        &opened,
        &[
            lift(C1, White, Bishop),
            place(C3, White, Bishop),
            lift(C3, White, Bishop),
            place(E3, White, Bishop),
        ],
        parse_uci(&opened, "c1e3"),
    );
    let [found] = &report.possible_breaches[..] else {
        panic!("{report:?}");
    };
    assert_eq!(found.breach, TouchBreach::ReleasedPieceMovedAgain);
    assert!(found.released_where_no_move_goes);
    // Without adequate supervision in rapid, the arbiter acts on a claim only.
    let report = check_touches(
        &RuleSet::new(Edition::Fide2023, Category::Rapid, Supervision::Inadequate),
        &start,
        &[lift(G1, White, Knight), place(G1, White, Knight)],
        parse_uci(&start, "e2e4"),
    );
    assert!(report.only_on_claim);
    assert_eq!(report.possible_breaches.len(), 1);
}

#[test]
fn game_ends_per_edition() {
    let bare_black = position_from_fen("4k3/8/8/8/8/8/8/3QK3 b - - 0 1");
    // Flag fall: a loss, or a draw when the opponent cannot checkmate.
    for (edition, article) in [
        (Edition::Fide2005, "6.10"),
        (Edition::Fide2009, "6.9"),
        (Edition::Fide2023, "6.9"),
    ] {
        let r = RuleSet::standard(edition);
        let white_flag = outcome::flag_fall(&r, &bare_black, Color::White);
        assert_eq!(white_flag.result, Some(GameResult::Draw), "{edition}");
        assert_eq!(white_flag.reason, EndReason::FlagFallOpponentCannotMate);
        assert_eq!(white_flag.article, article);
        let black_flag = outcome::flag_fall(&r, &bare_black, Color::Black);
        assert_eq!(black_flag.result, Some(GameResult::WhiteWins), "{edition}");
    }
    // Resignation against a bare king: a draw only from 2023.
    let r2018 = outcome::resignation(
        &RuleSet::standard(Edition::Fide2018),
        &bare_black,
        Color::White,
    );
    assert_eq!(
        (r2018.result, r2018.article),
        (Some(GameResult::BlackWins), "5.1.2")
    );
    let r2023 = outcome::resignation(
        &RuleSet::standard(Edition::Fide2023),
        &bare_black,
        Color::White,
    );
    assert_eq!(r2023.result, Some(GameResult::Draw));
    let r2009 = outcome::resignation(
        &RuleSet::standard(Edition::Fide2009),
        &bare_black,
        Color::Black,
    );
    assert_eq!(
        (r2009.result, r2009.article),
        (Some(GameResult::WhiteWins), "5.1.b")
    );
    // Both flags: in standard play only in the last period; always in rapid and blitz.
    let std2009 = RuleSet::standard(Edition::Fide2009);
    assert!(outcome::both_flags_fallen(&std2009, false).is_none());
    assert_eq!(
        outcome::both_flags_fallen(&std2009, true).map(|e| e.article),
        Some("6.11")
    );
    let blitz = rules(Edition::Fide2009, Category::Blitz);
    assert_eq!(
        outcome::both_flags_fallen(&blitz, false).and_then(|e| e.result),
        Some(GameResult::Draw)
    );
    // From 2018 the Guidelines (games without increment) hold the rule, not Article 6.11.
    for edition in [Edition::Fide2018, Edition::Fide2023] {
        for category in [Category::Standard, Category::Rapid] {
            assert_eq!(
                outcome::both_flags_fallen(&rules(edition, category), true).map(|e| e.article),
                Some("III.3.1"),
                "{edition:?} {category:?}"
            );
        }
    }
    assert_eq!(
        outcome::both_flags_fallen(&RuleSet::standard(Edition::Fide2014), true).map(|e| e.article),
        Some("6.11")
    );
    assert_eq!(
        outcome::agreement(&RuleSet::standard(Edition::Fide2005)).article,
        "5.2.c"
    );

    // On the board: checkmate, stalemate, dead position, 75 moves with mate precedence.
    let mate = track(
        Edition::Fide2023,
        &Chess::default(),
        &["f2f3", "e7e5", "g2g4", "d8h4"],
    );
    let end = outcome::end_on_board(&RuleSet::standard(Edition::Fide2023), &mate).expect("ended");
    assert_eq!(
        (end.result, end.reason, end.article),
        (Some(GameResult::BlackWins), EndReason::Checkmate, "5.1.1")
    );
    let end = outcome::end_on_board(
        &RuleSet::standard(Edition::Fide2009),
        &track(
            Edition::Fide2009,
            &Chess::default(),
            &["f2f3", "e7e5", "g2g4", "d8h4"],
        ),
    )
    .expect("ended");
    assert_eq!(end.article, "5.1.a");
    let stalemate = RepetitionTracker::new(
        Edition::Fide2023,
        &position_from_fen("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1"),
        0,
    );
    assert_eq!(
        outcome::end_on_board(&RuleSet::standard(Edition::Fide2023), &stalemate).map(|e| e.reason),
        Some(EndReason::Stalemate)
    );
    let dead = RepetitionTracker::new(
        Edition::Fide2023,
        &position_from_fen("4k3/8/8/8/8/8/8/4K3 w - - 0 1"),
        0,
    );
    assert_eq!(
        outcome::end_on_board(&RuleSet::standard(Edition::Fide2023), &dead)
            .map(|e| (e.reason, e.article)),
        Some((EndReason::DeadPosition, "5.2.2"))
    );
    // Clock 149: a mating 150th half-move is checkmate, a quiet one is the 75-move draw (2014+).
    let near = position_from_fen("6k1/5ppp/8/8/8/8/8/R5K1 w - - 149 120");
    for (edition, made, expected) in [
        (Edition::Fide2023, "a1a8", Some(EndReason::Checkmate)),
        (Edition::Fide2023, "a1b1", Some(EndReason::SeventyFiveMoves)),
        (Edition::Fide2014, "a1b1", Some(EndReason::SeventyFiveMoves)),
        (Edition::Fide2009, "a1b1", None),
    ] {
        let t = track(edition, &near, &[made]);
        assert_eq!(
            outcome::end_on_board(&RuleSet::standard(edition), &t).map(|e| e.reason),
            expected,
            "{edition} {made}"
        );
    }
}

/// A pending illegal move counted again after an earlier one's penalty was rejected: time for
/// the opponent below the edition's losing count (2nd from 2014, 3rd in 2005 and 2009), the
/// loss it was judged with at it, and where the arbiter acts on a claim only, as judged.
#[test]
fn an_illegal_move_counted_again_by_edition() {
    use boardcast_rules::illegal::recounted_penalty;
    let standard = |edition| RuleSet::standard(edition);
    let time = |ms| IllegalPenalty::OpponentTime { bonus_ms: ms };
    let loss = IllegalPenalty::Loss;
    assert_eq!(
        recounted_penalty(&standard(Edition::Fide2023), 1, loss),
        time(120_000)
    );
    assert_eq!(
        recounted_penalty(&standard(Edition::Fide2023), 2, loss),
        loss
    );
    assert_eq!(
        recounted_penalty(&standard(Edition::Fide2009), 2, loss),
        time(120_000)
    );
    assert_eq!(
        recounted_penalty(&standard(Edition::Fide2009), 3, loss),
        loss
    );
    assert_eq!(
        recounted_penalty(&standard(Edition::Fide2023), 2, IllegalPenalty::Draw),
        IllegalPenalty::Draw
    );
    let blitz_on_claims = RuleSet::new(Edition::Fide2009, Category::Blitz, Supervision::Inadequate);
    assert_eq!(recounted_penalty(&blitz_on_claims, 1, loss), loss);
}

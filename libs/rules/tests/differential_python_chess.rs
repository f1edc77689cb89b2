//! Differential tests against python-chess 1.11.2 (run through
//! `tests/reference/python_chess_verdicts.py`).
//!
//! Compared per ply, under the 2018 and 2023 rules (whose repetition identity and automatic draws
//! python-chess implements): repetition counts, threefold on the board and with an intended move,
//! fifty moves on the board and with an intended move, fivefold and seventy-five moves.
//!
//! Definitions lined up: python-chess's `can_claim_threefold_repetition` and
//! `can_claim_fifty_moves` include the intended-move variant, so they are compared with "on the
//! board or with some intended move" here; `is_repetition(3)` and `is_fifty_moves` are the
//! on-board variants. python-chess's fifty-move rule counts a halfmove clock of at least 100 and
//! requires a legal move, as the Laws do (a mate or stalemate ends the game first).

mod common;

use boardcast_rules::{
    analysis,
    claims::ClaimKind,
    moverules,
    repetition::RepetitionTracker,
    ruleset::{Edition, RuleSet},
};
use common::{generated::generated_games, *};
use serde_json::Value;
use shakmaty::{Chess, Move};

/// Dead positions are not part of this comparison (python-chess has no exact test for them).
const NO_DEAD: analysis::AnalysisOptions = analysis::AnalysisOptions {
    dead_positions: false,
};

fn flag(v: &Value, name: &str) -> bool {
    v[name]
        .as_bool()
        .unwrap_or_else(|| panic!("{name} missing"))
}

/// Compares every ply of every game; returns how many plies had each verdict true, so the test
/// can check the generated games exercise every rule.
///
/// The per-ply verdicts come from a tracker under `edition`; the analysis reports compared with
/// them are `analyses` (one per game, under an edition with the same repetition and move rules).
fn compare(
    edition: Edition,
    games: &[(Chess, Option<String>, Vec<Move>)],
    reference: &[Vec<Value>],
    analyses: &[analysis::MovesAnalysis],
) -> [usize; 7] {
    let rules = RuleSet::standard(edition);
    let mut seen = [0usize; 7];
    assert_eq!(games.len(), analyses.len());
    for (g, (((start, fen, moves), expected), analysed)) in
        games.iter().zip(reference).zip(analyses).enumerate()
    {
        let mut tracker = RepetitionTracker::new(edition, start, 0);
        assert_eq!(expected.len(), moves.len() + 1);
        for (ply, want) in expected.iter().enumerate() {
            if ply > 0 {
                tracker
                    .play(moves[ply - 1], ply as u64)
                    .expect("generated moves are legal");
            }
            let pos = tracker.position();
            let threefold_board = tracker.threefold_on_board().is_some();
            let threefold_claim = threefold_board || !tracker.threefold_intended_moves().is_empty();
            let fifty_board = moverules::fifty_claim_on_board(pos, &rules);
            let fifty_claim =
                fifty_board || !moverules::fifty_intended_moves(pos, &rules).is_empty();
            let got = [
                tracker.repetition_count() as u64 == want["count"].as_u64().expect("count"),
                threefold_board == flag(want, "threefold_board"),
                threefold_claim == flag(want, "threefold_claim"),
                fifty_board == flag(want, "fifty_board"),
                fifty_claim == flag(want, "fifty_claim"),
                tracker.fivefold().is_some() == flag(want, "fivefold"),
                moverules::seventy_five_moves(pos, &rules) == flag(want, "seventyfive"),
            ];
            assert!(
                got.iter().all(|ok| *ok),
                "{edition} game {g} (start {fen:?}) ply {ply}: mismatch with python-chess {want}; \
                 ours: count {} threefold board {threefold_board} claim {threefold_claim} \
                 fifty board {fifty_board} claim {fifty_claim} fivefold {} seventyfive {}; \
                 moves {:?}",
                tracker.repetition_count(),
                tracker.fivefold().is_some(),
                moverules::seventy_five_moves(pos, &rules),
                moves.iter().map(|m| to_uci(*m)).collect::<Vec<_>>()
            );
            // The same verdicts as the analysis reports them.
            let claims_here: Vec<_> = analysed
                .claims
                .iter()
                .filter(|c| c.ply as usize == ply)
                .collect();
            assert_eq!(
                claims_here.iter().any(|c| c.kind == ClaimKind::Threefold),
                threefold_claim,
                "analysis threefold at game {g} ply {ply}"
            );
            assert_eq!(
                claims_here.iter().any(|c| c.kind == ClaimKind::Fifty),
                fifty_claim,
                "analysis fifty at game {g} ply {ply}"
            );
            for (i, name) in [
                "count",
                "threefold_board",
                "threefold_claim",
                "fifty_board",
                "fifty_claim",
                "fivefold",
                "seventyfive",
            ]
            .iter()
            .enumerate()
            {
                let on = if *name == "count" {
                    want[*name].as_u64().unwrap_or(0) >= 2
                } else {
                    flag(want, name)
                };
                seen[i] += usize::from(on);
            }
        }
        let first = |name: &str| {
            expected
                .iter()
                .position(|v| flag(v, name))
                .map(|p| p as u32)
        };
        let automatic_first = |kind: analysis::AutomaticKind| {
            analysed
                .automatic
                .iter()
                .find(|a| a.kind == kind)
                .map(|a| a.ply)
        };
        assert_eq!(
            automatic_first(analysis::AutomaticKind::Fivefold),
            first("fivefold")
        );
        assert_eq!(
            automatic_first(analysis::AutomaticKind::Seventyfive),
            first("seventyfive")
        );
    }
    seen
}

#[test]
fn generated_games_agree_with_python_chess_under_2018_and_2023() {
    let games = generated_games();
    let request: Vec<(Option<String>, Vec<String>)> = games
        .iter()
        .map(|(_, fen, moves)| (fen.clone(), moves.iter().map(|m| to_uci(*m)).collect()))
        .collect();
    // python-chess works on one core while our own side is checked on the other.
    let python = std::thread::spawn(move || python_chess_verdicts(&request));
    let ours_2023: Vec<_> = games
        .iter()
        .map(|(start, _, moves)| {
            analysis::analyze_moves_with(
                &RuleSet::standard(Edition::Fide2023),
                start,
                moves,
                NO_DEAD,
            )
            .expect("legal game")
        })
        .collect();
    let reference = python.join().expect("reference thread");
    // 2023 has the same repetition and move rules as 2018: the 2023 analysis is checked against
    // the 2018 tracker and python-chess together.
    let seen = compare(Edition::Fide2018, &games, &reference, &ours_2023);
    // The generator must exercise every rule, or the comparison proves little.
    for (name, count) in [
        "repetitions",
        "threefold on board",
        "threefold claims",
        "fifty on board",
        "fifty claims",
        "fivefold",
        "seventy-five",
    ]
    .iter()
    .zip(seen)
    {
        assert!(count > 0, "no ply with {name} in the generated games");
    }
}

#[test]
fn london_classic_agrees_with_python_chess() {
    let games: Vec<(Chess, Option<String>, Vec<Move>)> = london_games()
        .iter()
        .map(|g| {
            let (start, moves) = game_moves(g);
            (start, g.tag("FEN").map(str::to_owned), moves)
        })
        .collect();
    assert_eq!(games.len(), 45);
    let request: Vec<(Option<String>, Vec<String>)> = games
        .iter()
        .map(|(_, fen, moves)| (fen.clone(), moves.iter().map(|m| to_uci(*m)).collect()))
        .collect();
    let reference = python_chess_verdicts(&request);
    let analyses: Vec<_> = games
        .iter()
        .map(|(start, _, moves)| {
            analysis::analyze_moves_with(
                &RuleSet::standard(Edition::Fide2023),
                start,
                moves,
                NO_DEAD,
            )
            .expect("legal game")
        })
        .collect();
    compare(Edition::Fide2023, &games, &reference, &analyses);
}

/// A knight shuffle repeats the start position at plies 0, 4, 8, 12, 16 (fivefold under both
/// readings); a longer cycle brings five occurrences that are not on consecutive alternate
/// moves: fivefold for python-chess and 2018+, not for 2014.
#[test]
fn fivefold_2014_needs_consecutive_alternate_moves() {
    let shuffle = ["g1f3", "g8f6", "f3g1", "f6g8"];
    let mut straight: Vec<&str> = Vec::new();
    for _ in 0..4 {
        straight.extend(shuffle);
    }
    // Start position at 0, 4, then a detour so the next returns are 8 plies apart.
    let mut scattered: Vec<&str> = Vec::new();
    scattered.extend(shuffle);
    for _ in 0..3 {
        scattered.extend([
            "g1f3", "g8f6", "b1c3", "b8c6", "c3b1", "c6b8", "f3g1", "f6g8",
        ]);
    }
    let start = Chess::default();
    let reference = python_chess_verdicts(&[
        (None, straight.iter().map(|s| s.to_string()).collect()),
        (None, scattered.iter().map(|s| s.to_string()).collect()),
    ]);

    let t2014 = track(Edition::Fide2014, &start, &straight);
    let t2018 = track(Edition::Fide2018, &start, &straight);
    let plies = |o: Vec<boardcast_rules::repetition::Occurrence>| {
        o.iter().map(|o| o.ply).collect::<Vec<_>>()
    };
    assert_eq!(
        plies(t2014.fivefold().expect("2014 fivefold")),
        [0, 4, 8, 12, 16]
    );
    assert_eq!(
        plies(t2018.fivefold().expect("2018 fivefold")),
        [0, 4, 8, 12, 16]
    );
    assert!(flag(reference[0].last().expect("ply"), "fivefold"));

    let s2014 = track(Edition::Fide2014, &start, &scattered);
    let s2018 = track(Edition::Fide2018, &start, &scattered);
    assert_eq!(s2018.repetition_count(), 5);
    assert_eq!(
        plies(s2018.fivefold().expect("2018 fivefold")),
        [0, 4, 12, 20, 28]
    );
    assert!(flag(reference[1].last().expect("ply"), "fivefold"));
    assert!(
        s2014.fivefold().is_none(),
        "not on consecutive alternate moves"
    );
    // The 2009 rules have no automatic fivefold at all.
    assert!(
        track(Edition::Fide2009, &start, &scattered)
            .fivefold()
            .is_none()
    );
}

/// 2005 9.2: positions differ when the right to castle "has been changed temporarily". A black
/// bishop shuttles between a6 (covering f1: white cannot castle) and b7 (castling possible) while
/// the knights shuffle; the same placement of pieces recurs, but castling availability changed in
/// between. python-chess and 2009 count a threefold repetition; 2005 does not.
#[test]
fn castling_temporarily_impossible_separates_positions_in_2005() {
    let fen = "rn2k3/8/b7/8/8/8/8/1N2K2R w K - 0 1";
    let start = position_from_fen(fen);
    let moves = [
        "b1c3", "a6b7", "c3b1", "b7a6", // back to the start: castling was possible in between
        "b1c3", "a6b7", "c3b1", "b7a6",
    ];
    let reference = python_chess_verdicts(&[(
        Some(fen.to_owned()),
        moves.iter().map(|s| s.to_string()).collect(),
    )]);
    let last = reference[0].last().expect("ply");
    assert_eq!(last["count"].as_u64(), Some(3));
    assert!(flag(last, "threefold_board"));

    let t2009 = track(Edition::Fide2009, &start, &moves);
    assert!(t2009.threefold_on_board().is_some());
    let t2005 = track(Edition::Fide2005, &start, &moves);
    assert_eq!(t2005.repetition_count(), 1);
    assert!(t2005.threefold_on_board().is_none());

    // Without the temporary change (knights only), 2005 counts the repetition like 2009.
    let knights = [
        "b1c3", "b8c6", "c3b1", "c6b8", "b1c3", "b8c6", "c3b1", "c6b8",
    ];
    let k2005 = track(Edition::Fide2005, &start, &knights);
    assert_eq!(k2005.repetition_count(), 3);
}

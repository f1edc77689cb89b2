//! The whole-game analysis behind `boardcast analyze`.

mod common;

use boardcast_rules::{
    analysis::{self, AutomaticKind, ClaimPoint},
    claims::{ClaimBasis, ClaimKind},
    pgn::{PgnGame, PgnMove},
    ruleset::{Edition, RuleSet},
};
use common::*;
use shakmaty::{Chess, Position};

fn game_from_uci(fen: Option<&str>, ucis: &[&str], result: &str) -> PgnGame {
    let start = fen.map_or_else(Chess::default, position_from_fen);
    let mut pos = start.clone();
    let mut moves = Vec::new();
    for u in ucis {
        let m = parse_uci(&pos, u);
        moves.push(PgnMove {
            san: boardcast_rules::pgn::san_plus(&pos, &m),
            clock_ms: None,
            elapsed_ms: None,
            comment: None,
        });
        pos.play_unchecked(m);
    }
    let mut tags = vec![
        ("White".to_owned(), "W".to_owned()),
        ("Black".to_owned(), "B".to_owned()),
        ("Round".to_owned(), "1".to_owned()),
    ];
    if let Some(f) = fen {
        tags.push(("FEN".to_owned(), f.to_owned()));
    }
    PgnGame {
        tags,
        moves,
        result: result.to_owned(),
    }
}

fn at(claims: &[ClaimPoint], ply: u32, kind: ClaimKind, basis: ClaimBasis) -> Option<&ClaimPoint> {
    claims
        .iter()
        .find(|c| c.ply == ply && c.kind == kind && c.basis == basis)
}

#[test]
fn knight_shuffle_claims_with_occurrences() {
    let game = game_from_uci(
        None,
        &[
            "g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1", "f6g8",
        ],
        "1/2-1/2",
    );
    let report =
        analysis::analyze_game(&RuleSet::standard(Edition::Fide2023), &game).expect("analysed");
    assert_eq!(report.plies, 8);
    // Before Black's 4th move: f6-g8 would bring the start position a third time.
    let intended = at(
        &report.claims,
        7,
        ClaimKind::Threefold,
        ClaimBasis::IntendedMove,
    )
    .expect("intended-move claim at ply 7");
    assert_eq!(intended.occurrences, [0, 4, 8]);
    assert_eq!(intended.moves, ["f6g8"]);
    let on_board = at(
        &report.claims,
        8,
        ClaimKind::Threefold,
        ClaimBasis::Position,
    )
    .expect("claim at ply 8");
    assert_eq!(on_board.occurrences, [0, 4, 8]);
    // At ply 8, g1-f3 would repeat the position after plies 1 and 5 a third time.
    let next = at(
        &report.claims,
        8,
        ClaimKind::Threefold,
        ClaimBasis::IntendedMove,
    )
    .expect("intended-move claim at ply 8");
    assert_eq!(next.occurrences, [1, 5, 9]);
    assert!(report.claims.iter().all(|c| c.ply >= 7));
    assert_eq!(report.status, "1/2-1/2");
    assert_eq!(report.ended_at_ply, None);

    let json = serde_json::to_value(&report).expect("serialises");
    for key in [
        "white",
        "black",
        "round",
        "plies",
        "claims",
        "automatic",
        "status",
    ] {
        assert!(json.get(key).is_some(), "{key} in {json}");
    }
    assert_eq!(json["claims"][0]["kind"], "threefold");
    assert_eq!(json["claims"][0]["basis"], "intended_move");
}

#[test]
fn fifty_claims_and_automatic_draws() {
    let fen = "r3k3/pp6/8/8/8/8/PP6/R3K3 w - - 98 80";
    let game = game_from_uci(Some(fen), &["a1b1", "a8b8", "b1a1"], "*");
    let report =
        analysis::analyze_game(&RuleSet::standard(Edition::Fide2023), &game).expect("analysed");
    let intended = at(
        &report.claims,
        1,
        ClaimKind::Fifty,
        ClaimBasis::IntendedMove,
    )
    .expect("fifty with intended move at ply 1");
    // The last capture or pawn move is before the score: no occurrence to point at.
    assert!(intended.occurrences.is_empty());
    assert!(at(&report.claims, 1, ClaimKind::Fifty, ClaimBasis::Position).is_none());
    assert!(at(&report.claims, 2, ClaimKind::Fifty, ClaimBasis::Position).is_some());
    assert_eq!(report.status, "ongoing");

    // A pawn move inside the score: the claim points at the ply after it.
    let reset_game = game_from_uci(Some("r3k3/pp6/8/8/8/8/PP6/R3K3 w - - 0 80"), &["a2a3"], "*");
    let r = analysis::analyze_game(&RuleSet::standard(Edition::Fide2023), &reset_game)
        .expect("analysed");
    assert!(r.claims.is_empty());

    // The king takes the last rook: dead position from ply 1, the game ends there.
    let dead = game_from_uci(
        Some("4k3/8/8/8/8/8/4r3/4KB2 w - - 0 1"),
        &["e1e2", "e8d7"],
        "1/2-1/2",
    );
    let report =
        analysis::analyze_game(&RuleSet::standard(Edition::Fide2009), &dead).expect("analysed");
    assert_eq!(report.first_dead_ply, Some(1));
    assert_eq!(report.status, "dead_position");
    assert_eq!(report.ended_at_ply, Some(1));
    assert!(
        report
            .automatic
            .iter()
            .any(|a| a.ply == 1 && a.kind == AutomaticKind::DeadPosition)
    );

    // 75 moves: automatic from 2014, not before.
    let near = "6k1/5ppp/8/8/8/8/8/R5K1 w - - 149 120";
    let quiet = game_from_uci(Some(near), &["a1b1"], "*");
    let r2023 =
        analysis::analyze_game(&RuleSet::standard(Edition::Fide2023), &quiet).expect("analysed");
    assert_eq!(r2023.status, "seventyfive");
    assert_eq!(r2023.automatic[0].kind, AutomaticKind::Seventyfive);
    let r2009 =
        analysis::analyze_game(&RuleSet::standard(Edition::Fide2009), &quiet).expect("analysed");
    assert_eq!(r2009.status, "ongoing");
    // Mate on the 150th half-move takes precedence.
    let mate = game_from_uci(Some(near), &["a1a8"], "1-0");
    let r = analysis::analyze_game(&RuleSet::standard(Edition::Fide2023), &mate).expect("analysed");
    assert_eq!(r.status, "checkmate");
}

#[test]
fn london_classic_analyses() {
    let rules = RuleSet::standard(Edition::Fide2023);
    for game in london_games() {
        let report = analysis::analyze_game(&rules, &game).expect("analysed");
        assert_eq!(report.plies as usize, game.moves.len());
        assert_eq!(report.white, game.tag("White").unwrap_or("?"));
        // Grandmaster games end by resignation or agreement: the status is the result tag,
        // unless the final position is mate, stalemate or dead.
        if report.ended_at_ply.is_none() {
            assert_eq!(report.status, game.result);
        } else {
            assert_eq!(report.ended_at_ply, Some(report.plies));
        }
        for c in &report.claims {
            assert!(c.ply <= report.plies);
            if c.kind == ClaimKind::Threefold {
                assert!(c.occurrences.len() >= 3);
            }
        }
    }
}

#[test]
fn fen_analysis() {
    let bare = analysis::analyze_fen("4k3/8/8/8/8/8/8/4K3 w - - 0 1").expect("valid");
    let json = serde_json::to_value(&bare).expect("serialises");
    assert_eq!(
        json,
        serde_json::json!({"dead": "yes", "white_can_mate": "no", "black_can_mate": "no"})
    );
    let queen = analysis::analyze_fen("4k3/8/8/8/8/8/8/3QK3 b - - 0 1").expect("valid");
    let json = serde_json::to_value(&queen).expect("serialises");
    assert_eq!(json["dead"], "no");
    assert_eq!(json["white_can_mate"], "yes");
    assert_eq!(json["black_can_mate"], "no");
    // The helpmate is the evidence: played out, it ends with White mating.
    let mut pos = position_from_fen("4k3/8/8/8/8/8/8/3QK3 b - - 0 1");
    for uci in &queen.white_helpmate {
        let m = parse_uci(&pos, uci);
        pos.play_unchecked(m);
    }
    assert!(pos.is_checkmate() && pos.turn() == shakmaty::Color::Black);
    assert!(queen.black_helpmate.is_empty());
    let err = analysis::analyze_fen("not a fen").expect_err("invalid");
    assert!(err.to_string().contains("not a fen"));
}

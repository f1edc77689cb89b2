//! The rules library beside python-chess 1.11.2, on the same games in the same run: the per-ply
//! verdicts both compute (repetition count, threefold and fifty-move on the board and with an
//! intended move, fivefold, seventy-five moves), timed for each, with every answer compared; and
//! the library's whole claim analysis of each game (what `boardcast analyze` and the game service
//! use). Two sets: the London Chess Classic 2016's 45 games (`BENCH_REPEAT` times, default 4), and
//! the differential tests' generated games, which reach every rule. Run with
//! `cargo bench -p boardcast-rules --bench versus_python_chess`.

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::Instant;

use boardcast_rules::{
    analysis, moverules,
    repetition::RepetitionTracker,
    ruleset::{Edition, RuleSet},
};
use common::*;
use shakmaty::{Chess, Move};

/// The seven verdicts of a ply, in the script's order.
type Verdicts = [bool; 7];

const NAMES: [&str; 7] = [
    "count",
    "threefold_board",
    "threefold_claim",
    "fifty_board",
    "fifty_claim",
    "fivefold",
    "seventyfive",
];

/// The library's verdicts for every ply of a game, and the repetition count of each.
fn ours(rules: &RuleSet, start: &Chess, moves: &[Move]) -> Vec<(u64, Verdicts)> {
    let mut tracker = RepetitionTracker::new(rules.edition, start, 0);
    let mut plies = Vec::with_capacity(moves.len() + 1);
    for ply in 0..=moves.len() {
        if ply > 0 {
            tracker
                .play(moves[ply - 1], ply as u64)
                .expect("a game's moves are legal");
        }
        let pos = tracker.position();
        let threefold_board = tracker.threefold_on_board().is_some();
        let fifty_board = moverules::fifty_claim_on_board(pos, rules);
        plies.push((
            tracker.repetition_count() as u64,
            [
                false,
                threefold_board,
                threefold_board || !tracker.threefold_intended_moves().is_empty(),
                fifty_board,
                fifty_board || !moverules::fifty_intended_moves(pos, rules).is_empty(),
                tracker.fivefold().is_some(),
                moverules::seventy_five_moves(pos, rules),
            ],
        ));
    }
    plies
}

fn main() {
    let repeat: usize = std::env::var("BENCH_REPEAT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4);
    let london: Vec<Game> = (0..repeat)
        .flat_map(|_| london_games())
        .map(|g| {
            let (start, moves) = game_moves(&g);
            (start, g.tag("FEN").map(str::to_owned), moves)
        })
        .collect();
    compare(
        &format!("the London Chess Classic 2016's 45 games, {repeat} times"),
        &london,
    );
    compare(
        "games generated to reach every rule (knight shuffles, quiet endings near the fifty-move \
         limit; those of the differential tests)",
        &generated::generated_games(),
    );
}

/// A game: its start, the FEN it is given by (none: the standard start), its moves.
type Game = (Chess, Option<String>, Vec<Move>);

fn compare(name: &str, games: &[Game]) {
    let plies: usize = games.iter().map(|(_, _, m)| m.len() + 1).sum();
    let request: Vec<(Option<String>, Vec<String>)> = games
        .iter()
        .map(|(_, fen, moves)| (fen.clone(), moves.iter().map(|m| to_uci(*m)).collect()))
        .collect();
    let rules = RuleSet::standard(Edition::Fide2023);

    let started = Instant::now();
    let verdicts: Vec<_> = games
        .iter()
        .map(|(start, _, moves)| ours(&rules, start, moves))
        .collect();
    let ours_s = started.elapsed().as_secs_f64();

    let started = Instant::now();
    for (start, _, moves) in games {
        let analysed = analysis::analyze_moves_with(
            &rules,
            start,
            moves,
            analysis::AnalysisOptions {
                dead_positions: false,
            },
        )
        .expect("a game's moves are legal");
        std::hint::black_box(analysed);
    }
    let analysis_s = started.elapsed().as_secs_f64();

    let (reference, python_s) = python_chess_verdicts_timed(&request);

    // Every answer compared: a benchmark of two programs that disagree measures nothing.
    assert_eq!(
        reference.len(),
        verdicts.len(),
        "python-chess answered for every game"
    );
    for (ours, theirs) in verdicts.iter().zip(&reference) {
        assert_eq!(
            ours.len(),
            theirs.len(),
            "python-chess answered for every ply"
        );
    }
    let mut disagreements = 0;
    let mut true_answers = [0usize; 7];
    for (ours, theirs) in verdicts.iter().zip(&reference) {
        for ((count, v), want) in ours.iter().zip(theirs) {
            let expected_count = want["count"].as_u64().unwrap_or(0);
            disagreements += usize::from(*count != expected_count);
            true_answers[0] += usize::from(*count >= 2);
            for i in 1..7 {
                let theirs = want[NAMES[i]].as_bool().unwrap_or(!v[i]);
                disagreements += usize::from(v[i] != theirs);
                true_answers[i] += usize::from(theirs);
            }
        }
    }

    let n = games.len() as f64;
    println!("{} games ({plies} plies): {name}", games.len());
    println!(
        "  verdicts per ply (repetition count, threefold and fifty-move on the board and claimed \
         with an intended move, fivefold, seventy-five moves):"
    );
    println!(
        "    rules library: {ours_s:.3} s, {:.0} games/s",
        n / ours_s
    );
    println!(
        "    python-chess 1.11.2: {python_s:.3} s, {:.0} games/s",
        n / python_s
    );
    println!(
        "    ratio: the rules library is {:.1}x as fast",
        python_s / ours_s
    );
    println!(
        "  whole claim analysis per game (every claim at every ply, with its articles; no dead \
         positions): {analysis_s:.3} s, {:.0} games/s ({:.1}x python-chess's verdicts)",
        n / analysis_s,
        python_s / analysis_s
    );
    println!(
        "  answers compared: {disagreements} disagreements; plies where each holds: {}",
        NAMES
            .iter()
            .zip(true_answers)
            .map(|(name, count)| format!("{name} {count}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    assert_eq!(
        disagreements, 0,
        "the two disagree: the timing means nothing"
    );
}

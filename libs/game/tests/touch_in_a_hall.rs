//! Touch-move alerts on boards as a hall uses them: every London game played with players' real
//! habits (pieces slid across squares, adjustments, sensors losing a piece for a scan, captured
//! pieces taken off first, late presses) raises at most one touch-move alert per thousand plies,
//! and every real breach played in (a piece released on another square for a second or more,
//! then moved on) is alerted.
//!
//! The count is the benchmark's too: `BENCH_TOUCH_SEEDS=8 cargo test --release -p
//! boardcast-game --test touch_in_a_hall -- --nocapture` plays each game with eight seeds and
//! prints the figures (`make bench` runs it).

mod common;

use boardcast_game::alerts::AlertKind;
use boardcast_game::events::{TimePeriod, TouchEvidence, game_event::Kind};
use boardcast_rules::pgn::{PgnGame, parse_san, read_games};
use boardcast_sim::{HallBehaviour, ScriptOptions, script_in_hall};
use common::{Board, started};
use shakmaty::{Position as _, uci::UciMove};

/// What one game played in a hall gave.
#[derive(Default)]
struct Tally {
    plies: usize,
    /// Touch-move alerts raised, and at which plies.
    alerts: Vec<u32>,
    /// Findings noted on the timeline only (seen for a moment).
    notes: usize,
    /// Moves that came out other than the score's.
    wrong_moves: usize,
}

/// Plays `pgn` with `hall`'s habits through the aggregate and its alerts, as the services do.
fn play(pgn: &PgnGame, hall: HallBehaviour, seed: u64) -> (Tally, Vec<u32>) {
    let options = ScriptOptions {
        hall: Some((hall, seed)),
        ..ScriptOptions::default()
    };
    let (steps, breaches) = script_in_hall(pgn, &options).expect("scripts");
    // Two hours, no increment: the clock checks have nothing to say about the hall's habits.
    let periods = vec![TimePeriod {
        moves: 0,
        base_ms: 7_200_000,
        ..Default::default()
    }];
    let mut board = Board::start(&started("fide-2023", "", periods), 0);
    for step in steps {
        board.observe_at(step.kind, step.at_ms as i64);
    }
    let alerts = board
        .alerts
        .alerts()
        .iter()
        .filter(|a| a.kind == AlertKind::PossibleTouchMoveBreach)
        .map(|a| a.ply)
        .collect();
    let notes =
        board.count(|k| matches!(k, Kind::TouchMove(t) if t.evidence() == TouchEvidence::Brief));
    // Compared as moves: scores may over-disambiguate SAN.
    let played: Vec<String> = board.game.moves().iter().map(|m| m.uci.clone()).collect();
    let mut pos = pgn.start_position().expect("start");
    let score: Vec<String> = pgn
        .moves
        .iter()
        .map(|m| {
            let mv = parse_san(&pos, &m.san).expect("legal");
            pos.play_unchecked(mv);
            UciMove::from_standard(mv).to_string()
        })
        .collect();
    let wrong_moves = played.iter().zip(&score).filter(|(a, b)| a != b).count()
        + score.len().abs_diff(played.len());
    let tally = Tally {
        plies: pgn.moves.len(),
        alerts,
        notes,
        wrong_moves,
    };
    (tally, breaches)
}

fn seeds() -> u64 {
    std::env::var("BENCH_TOUCH_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
}

#[test]
fn clean_play_in_a_hall_raises_at_most_one_touch_alert_per_thousand_plies() {
    let games = read_games(include_str!("../../../data/london-classic-2016.pgn")).expect("reads");
    let (mut plies, mut alerts, mut notes, mut wrong) = (0, 0, 0, 0);
    for seed in 0..seeds() {
        for (i, pgn) in games.iter().enumerate() {
            let (tally, _) = play(pgn, HallBehaviour::clean(), seed * 1_000 + i as u64);
            plies += tally.plies;
            alerts += tally.alerts.len();
            notes += tally.notes;
            wrong += tally.wrong_moves;
        }
    }
    let per_thousand = |n: usize| n as f64 * 1000.0 / plies as f64;
    eprintln!(
        "clean play in a hall: {plies} plies, {alerts} touch-move alerts ({:.2} per 1,000 \
         plies), {notes} touches noted without an alert ({:.1} per 1,000 plies)",
        per_thousand(alerts),
        per_thousand(notes)
    );
    assert_eq!(wrong, 0, "every move read as the score has it");
    assert!(notes > 0, "the habits were played");
    assert!(
        per_thousand(alerts) <= 1.0,
        "{alerts} alerts in {plies} plies"
    );
}

#[test]
fn every_real_breach_in_a_hall_is_alerted() {
    let games = read_games(include_str!("../../../data/london-classic-2016.pgn")).expect("reads");
    let hall = HallBehaviour {
        breach: 0.02,
        ..HallBehaviour::clean()
    };
    let (mut injected, mut missed, mut plies, mut other_alerts) = (0, Vec::new(), 0, 0);
    for seed in 0..seeds() {
        for (i, pgn) in games.iter().enumerate() {
            let (tally, breaches) = play(pgn, hall, 7_000 + seed * 1_000 + i as u64);
            plies += tally.plies;
            injected += breaches.len();
            other_alerts += tally
                .alerts
                .iter()
                .filter(|p| !breaches.contains(p))
                .count();
            missed.extend(
                breaches
                    .iter()
                    .filter(|ply| !tally.alerts.contains(ply))
                    .map(|ply| format!("{} ply {ply}", pgn.players())),
            );
        }
    }
    eprintln!(
        "real breaches in a hall: {injected} played in over {plies} plies, {} alerted, {} \
         missed; {other_alerts} alerts at other plies",
        injected - missed.len(),
        missed.len()
    );
    assert!(injected > 0);
    assert!(missed.is_empty(), "breaches not alerted: {missed:?}");
}

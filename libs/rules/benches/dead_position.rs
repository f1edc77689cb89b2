//! Times the dead-position analysis on tournament positions (every 10th ply of the London Chess
//! Classic 2016) and on the published unwinnability test positions (most of them locked pawn
//! structures), and counts its answers against the expected ones. Run with
//! `cargo bench -p boardcast-rules --bench dead_position` (with `SHOW_SLOW=1`, every position that
//! took over 0.5 ms is printed with its FEN).

use std::time::{Duration, Instant};

use boardcast_rules::{
    dead::{self, Unwinnability},
    pgn,
};
use shakmaty::{CastlingMode, Chess, Color, Position, fen::Fen};

/// The analyzer's published average time per position (its "full" version), the goal.
const GOAL_MS_PER_POSITION: f64 = 0.34;

fn main() {
    let tournament = tournament_positions();
    let vectors = test_vectors();
    println!("dead-position analysis, one side at a time (Article 6.9) and both (Article 5.2.2)");
    println!("goal: at most {GOAL_MS_PER_POSITION} ms per position on average");
    let published: Vec<_> = vectors.iter().map(|(pos, _)| pos.clone()).collect();
    let locked: Vec<_> = published
        .iter()
        .filter(|pos| pawns_locked(pos))
        .cloned()
        .collect();
    // DEAD_BENCH_ONLY=tournament, =locked or =vectors runs one set, e.g. under a profiler;
    // SHOW_UNDETERMINED=1 lists the positions left undetermined.
    let only = std::env::var("DEAD_BENCH_ONLY").unwrap_or_default();
    let runs = |set: &str| only.is_empty() || only == set;
    if runs("tournament") {
        report("tournament positions", &tournament);
        with_positions_before();
    }
    if runs("locked") {
        report(
            "locked positions (published test positions whose every pawn is blocked by a pawn)",
            &locked,
        );
    }
    if runs("vectors") {
        report("all published test positions", &published);
        answers(&vectors);
    }
}

/// Times `dead_position` (both sides' analyses as needed) over `positions`.
fn report(name: &str, positions: &[Chess]) {
    let mut times: Vec<Duration> = Vec::with_capacity(positions.len());
    let (mut dead_count, mut undetermined) = (0, 0);
    let mut undetermined_time = Duration::ZERO;
    let started = Instant::now();
    for pos in positions {
        let t = Instant::now();
        let answer = dead::dead_position(pos);
        let took = t.elapsed();
        match answer {
            dead::Answer::Yes => dead_count += 1,
            dead::Answer::Undetermined => {
                undetermined += 1;
                undetermined_time += took;
                if std::env::var_os("SHOW_UNDETERMINED").is_some() {
                    println!("  undetermined: {}", fen(pos));
                }
            }
            dead::Answer::No => {}
        }
        if std::env::var_os("SHOW_SLOW").is_some() && took > Duration::from_micros(500) {
            println!(
                "  slow ({:.2} ms, {answer:?}): {}",
                took.as_secs_f64() * 1e3,
                fen(pos)
            );
        }
        times.push(took);
    }
    let total = started.elapsed();
    times.sort();
    let p99 = times[(times.len() * 99).div_ceil(100).saturating_sub(1)];
    let max = times.last().copied().unwrap_or_default();
    println!(
        "{name}: {} positions ({dead_count} proven dead, {undetermined} undetermined); \
         dead_position mean {:.3} ms, p99 {:.3} ms, max {:.1} ms, total {:.0} ms",
        positions.len(),
        total.as_secs_f64() * 1e3 / positions.len() as f64,
        p99.as_secs_f64() * 1e3,
        max.as_secs_f64() * 1e3,
        total.as_secs_f64() * 1e3,
    );
    let decided = positions.len() - undetermined;
    if undetermined > 0 && decided > 0 {
        println!(
            "  decided positions mean {:.3} ms; undetermined ones (the whole budget) mean {:.1} ms",
            (total - undetermined_time).as_secs_f64() * 1e3 / decided as f64,
            undetermined_time.as_secs_f64() * 1e3 / undetermined as f64,
        );
    }
}

/// Every ply of the London games judged twice: on its own, and with the positions before it as a
/// game's decisions judge it (`dead_position_in_game`, interpretation 4). The budget of the first
/// is one node larger so that neither reuses the answers the thread keeps of the other; the
/// answers must agree.
fn with_positions_before() {
    let games = london_games();
    let alone_budget = dead::Budget {
        proof_nodes: dead::Budget::default().proof_nodes + 1,
        ..dead::Budget::default()
    };
    let (mut plies, mut alone_time, mut in_game_time) = (0u32, Duration::ZERO, Duration::ZERO);
    for game in &games {
        let answers = dead::GameAnswers::default();
        let mut positions = vec![game.start_position().expect("start position")];
        for mv in &game.moves {
            let mut pos = positions.last().expect("a position").clone();
            pos.play_unchecked(pgn::parse_san(&pos, &mv.san).expect("legal move"));
            positions.push(pos);
            let t = Instant::now();
            let alone =
                dead::dead_position_within(positions.last().expect("played"), &alone_budget);
            alone_time += t.elapsed();
            let t = Instant::now();
            let in_game = dead::dead_position_in_game(&positions, &answers);
            in_game_time += t.elapsed();
            assert_eq!(alone, in_game, "{} after {}", game.players(), mv.san);
            plies += 1;
        }
    }
    let per_ply = |time: Duration| time.as_secs_f64() * 1e6 / f64::from(plies);
    println!(
        "every ply of the London games ({plies}): the position alone {:.1} µs, with the positions \
         before it {:.1} µs on average, the same answers",
        per_ply(alone_time),
        per_ply(in_game_time)
    );
}

/// Counts the analysis' answers per side against the expected ones, with the default budget
/// (the check after every move) and the thorough one (for verdicts).
fn answers(vectors: &[(Chess, [bool; 2])]) {
    for (name, budget) in [
        ("default", dead::Budget::default()),
        ("thorough", dead::Budget::thorough()),
    ] {
        answers_within(vectors, name, &budget);
    }
}

fn answers_within(vectors: &[(Chess, [bool; 2])], name: &str, budget: &dead::Budget) {
    let (mut right, mut wrong, mut undetermined) = (0, 0, 0);
    let started = Instant::now();
    for (pos, expected) in vectors {
        for (side, can_mate) in [Color::White, Color::Black].into_iter().zip(expected) {
            match dead::analyze(pos, side, budget) {
                Unwinnability::Undetermined => {
                    undetermined += 1;
                    if std::env::var_os("SHOW_UNDETERMINED").is_some() {
                        println!(
                            "  undetermined: {} for {side:?} (can mate: {can_mate})",
                            fen(pos)
                        );
                    }
                }
                answer if answer.is_unwinnable() != *can_mate => right += 1,
                answer => {
                    wrong += 1;
                    println!("  wrong: {} for {side:?}: {answer:?}", fen(pos));
                }
            }
        }
    }
    let questions = vectors.len() * 2;
    println!(
        "per side on the test positions, {name} budget: {questions} questions, {right} right, \
         {wrong} wrong, {undetermined} undetermined; mean {:.3} ms per question",
        started.elapsed().as_secs_f64() * 1e3 / questions as f64
    );
}

/// A locked pawn structure: there are pawns, and every one has a pawn right in front of it.
fn pawns_locked(pos: &Chess) -> bool {
    let board = pos.board();
    let pawns = board.pawns();
    pawns.any()
        && pawns.into_iter().all(|sq| {
            let ahead = if board.white().contains(sq) { 8 } else { -8 };
            sq.offset(ahead).is_some_and(|front| pawns.contains(front))
        })
}

fn fen(pos: &Chess) -> String {
    Fen::from_position(pos, shakmaty::EnPassantMode::Legal).to_string()
}

fn london_games() -> Vec<pgn::PgnGame> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../data/london-classic-2016.pgn"
    );
    let text = std::fs::read_to_string(path).expect("the London file is in data/");
    pgn::read_games(&text).expect("the London file reads")
}

fn tournament_positions() -> Vec<Chess> {
    let mut positions = Vec::new();
    for game in london_games() {
        let mut pos = game.start_position().expect("start position");
        for (ply, mv) in game.moves.iter().enumerate() {
            if ply % 10 == 0 {
                positions.push(pos.clone());
            }
            let m = pgn::parse_san(&pos, &mv.san).expect("legal move");
            pos.play_unchecked(m);
        }
    }
    positions
}

/// The test positions the rules library accepts as positions of a game, with whether White and
/// Black can mate.
fn test_vectors() -> Vec<(Chess, [bool; 2])> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/unwinnability-vectors.txt"
    );
    let text = std::fs::read_to_string(path).expect("the test vectors are in tests/data/");
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .filter_map(|line| {
            let (expected, fen) = line.split_once(' ')?;
            let parsed: Fen = fen.parse().ok()?;
            let pos: Chess = parsed.into_position(CastlingMode::Standard).ok()?;
            let bytes = expected.as_bytes();
            Some((pos, [bytes[0] == b'W', bytes[1] == b'B']))
        })
        .collect()
}

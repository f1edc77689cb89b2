//! Shared helpers for the integration tests.
#![allow(dead_code)]

pub mod generated;

use std::{
    io::Write,
    path::PathBuf,
    process::{Command, Stdio},
};

use boardcast_rules::{
    pgn::{self, PgnGame},
    repetition::RepetitionTracker,
    ruleset::Edition,
};
use serde_json::Value;
use shakmaty::{CastlingMode, Chess, Move, Position, fen::Fen, uci::UciMove};

pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root exists")
}

pub fn position_from_fen(fen: &str) -> Chess {
    let parsed: Fen = fen.parse().expect("valid FEN in test");
    parsed
        .into_position(CastlingMode::Standard)
        .expect("legal FEN in test")
}

pub fn parse_uci(pos: &Chess, uci: &str) -> Move {
    uci.parse::<UciMove>()
        .expect("UCI syntax")
        .to_move(pos)
        .unwrap_or_else(|_| panic!("{uci} is legal"))
}

pub fn to_uci(m: Move) -> String {
    m.to_uci(CastlingMode::Standard).to_string()
}

/// Plays UCI moves from `start`, returning the tracker and the moves.
pub fn track(edition: Edition, start: &Chess, ucis: &[&str]) -> RepetitionTracker {
    let mut tracker = RepetitionTracker::new(edition, start, 0);
    for (i, uci) in ucis.iter().enumerate() {
        let m = parse_uci(tracker.position(), uci);
        tracker.play(m, (i as u64 + 1) * 100).expect("legal move");
    }
    tracker
}

/// The London Classic 2016 games.
pub fn london_games() -> Vec<PgnGame> {
    let text = std::fs::read_to_string(workspace_root().join("data/london-classic-2016.pgn"))
        .expect("data/london-classic-2016.pgn is readable");
    pgn::read_games(&text).expect("London games parse")
}

/// The mainline of a score as moves.
pub fn game_moves(game: &PgnGame) -> (Chess, Vec<Move>) {
    let start = game.start_position().expect("start position");
    let mut pos = start.clone();
    let mut moves = Vec::new();
    for pm in &game.moves {
        let m = pgn::parse_san(&pos, &pm.san).expect("legal SAN");
        pos.play_unchecked(m);
        moves.push(m);
    }
    (start, moves)
}

/// Runs the python-chess reference script on games given as (optional FEN, UCI moves). Panics
/// with instructions when the interpreter or the `chess` module is missing.
pub fn python_chess_verdicts(games: &[(Option<String>, Vec<String>)]) -> Vec<Vec<Value>> {
    python_chess_verdicts_timed(games).0
}

/// `python_chess_verdicts`, with the seconds python-chess took for them (without its start and
/// the JSON in and out).
pub fn python_chess_verdicts_timed(
    games: &[(Option<String>, Vec<String>)],
) -> (Vec<Vec<Value>>, f64) {
    let root = workspace_root();
    let python = std::env::var("BOARDCAST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|_| root.join("var/venv/bin/python3"));
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/reference/python_chess_verdicts.py");
    let hint = "run `make test` (it creates var/venv with `pip install chess==1.11.2`), or set \
                BOARDCAST_PYTHON to a python3 that has chess==1.11.2 installed";
    let check = Command::new(&python)
        .args([
            "-c",
            "import chess, sys; sys.stdout.write(chess.__version__)",
        ])
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "python interpreter {} not runnable ({e}); {hint}",
                python.display()
            )
        });
    assert!(
        check.status.success(),
        "python-chess is not importable with {}: {}; {hint}",
        python.display(),
        String::from_utf8_lossy(&check.stderr)
    );
    let version = String::from_utf8_lossy(&check.stdout).to_string();
    assert_eq!(version, "1.11.2", "python-chess 1.11.2 expected; {hint}");

    let request = serde_json::json!({
        "games": games
            .iter()
            .map(|(fen, moves)| serde_json::json!({"fen": fen, "moves": moves}))
            .collect::<Vec<_>>()
    });
    let mut child = Command::new(&python)
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("reference script starts");
    let mut stdin = child.stdin.take().expect("stdin");
    let body = request.to_string();
    let writer = std::thread::spawn(move || stdin.write_all(body.as_bytes()));
    let output = child.wait_with_output().expect("reference script runs");
    writer.join().expect("writer").expect("request written");
    assert!(
        output.status.success(),
        "reference script failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let response: Value = serde_json::from_slice(&output.stdout).expect("JSON from script");
    let games = response["games"]
        .as_array()
        .expect("games array")
        .iter()
        .map(|g| g.as_array().expect("plies array").clone())
        .collect();
    (games, response["elapsed_s"].as_f64().unwrap_or(f64::NAN))
}

//! The dead-position analysis gives exactly the answers it gave when the logs were written.
//!
//! A game's log records what the analysis answered after each move (nothing, a dead position,
//! or "undetermined" for the arbiter), and `boardcast replay --verify` decides every move again:
//! an analysis that answers one position differently — even "undetermined" where it used to
//! find a helpmate — makes an honest old log fail verification. So any change to the search must
//! keep every answer, every line found and every count of positions proven, on tournament
//! positions (every ply of the London Chess Classic 2016) and on the published test positions.
//! The answers are summed up in one digest; `ANSWERS_OUT=path` writes them out in full, to set
//! side by side with the same file written at the commit before a change.

use boardcast_rules::{
    dead::{self, Budget},
    pgn,
};
use shakmaty::{CastlingMode, Chess, Color, EnPassantMode, Position, fen::Fen};

/// The digest of every answer below, as the analysis gave them when it was last changed on
/// purpose (a change of an answer is a change of the rules: it needs its own decision record).
const EXPECTED_DIGEST: u64 = 0xb267_33e7_8679_f462;

#[test]
fn every_answer_is_the_one_the_logs_were_written_with() {
    let mut answers = String::new();
    for (name, pos) in tournament_positions() {
        let fen = Fen::from_position(&pos, EnPassantMode::Legal);
        let both = dead::dead_position(&pos);
        answers.push_str(&format!("{name} {fen}: dead {both:?}\n"));
        for side in [Color::White, Color::Black] {
            let answer = dead::analyze(&pos, side, &Budget::default());
            answers.push_str(&format!("  {side:?}: {answer:?}\n"));
        }
    }
    for (line, pos) in test_vectors() {
        let fen = Fen::from_position(&pos, EnPassantMode::Legal);
        answers.push_str(&format!("vector {line} {fen}:\n"));
        for side in [Color::White, Color::Black] {
            let answer = dead::analyze(&pos, side, &Budget::default());
            answers.push_str(&format!("  {side:?}: {answer:?}\n"));
        }
        // The thorough budget (a verdict rests on it) on every tenth position: its walks are
        // ten times longer.
        if line % 10 == 0 {
            for side in [Color::White, Color::Black] {
                let answer = dead::analyze(&pos, side, &Budget::thorough());
                answers.push_str(&format!("  {side:?} thoroughly: {answer:?}\n"));
            }
        }
    }
    if let Some(path) = std::env::var_os("ANSWERS_OUT") {
        std::fs::write(&path, &answers).expect("writes the answers");
    }
    let digest = fnv1a(answers.as_bytes());
    assert_eq!(
        digest, EXPECTED_DIGEST,
        "the analysis answers differently (digest {digest:#x}): write the answers with \
         ANSWERS_OUT=path here and at the commit before, and compare"
    );
}

/// FNV-1a, 64 bits: a digest that stays the same across Rust versions and platforms.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Every position of every game of the London Chess Classic 2016, named by game and ply.
fn tournament_positions() -> Vec<(String, Chess)> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../data/london-classic-2016.pgn"
    );
    let text = std::fs::read_to_string(path).expect("the London file is in data/");
    let mut positions = Vec::new();
    for (number, game) in pgn::read_games(&text)
        .expect("the London file reads")
        .into_iter()
        .enumerate()
    {
        let mut pos = game.start_position().expect("start position");
        for (ply, mv) in game.moves.iter().enumerate() {
            let m = pgn::parse_san(&pos, &mv.san).expect("legal move");
            pos.play_unchecked(m);
            positions.push((format!("game {} ply {}", number + 1, ply + 1), pos.clone()));
        }
    }
    positions
}

/// The published test positions the rules accept as positions of a game, by line of the file.
fn test_vectors() -> Vec<(usize, Chess)> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/unwinnability-vectors.txt"
    );
    let text = std::fs::read_to_string(path).expect("the test vectors are in tests/data/");
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.starts_with('#') && !line.trim().is_empty())
        .filter_map(|(index, line)| {
            let (_, fen) = line.split_once(' ')?;
            let parsed: Fen = fen.parse().ok()?;
            let pos: Chess = parsed.into_position(CastlingMode::Standard).ok()?;
            Some((index + 1, pos))
        })
        .collect()
}

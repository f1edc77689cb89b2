//! Times `dead::is_dead` over the test positions and positions sampled from the London Chess
//! Classic 2016 (every 10th ply of every game). Run with
//! `cargo bench -p boardcast-rules --bench dead_position`.

use std::time::{Duration, Instant};

use boardcast_rules::{dead, pgn};
use shakmaty::{CastlingMode, Chess, Position, fen::Fen};

const FIXED: &[&str] = &[
    "8/8/4k3/8/8/4K3/8/8 w - - 0 1",
    "8/8/4k3/8/8/4KB2/8/8 w - - 0 1",
    "8/8/4k3/8/8/4KN2/8/8 b - - 0 1",
    "5b2/8/4k3/8/8/4K3/8/2B5 w - - 0 1",
    "5b2/8/4k2b/8/8/4K3/8/2B1B3 w - - 0 1",
    "8/8/4k3/1p1p1p1p/1P1P1P1P/8/4K3/8 w - - 0 1",
    "8/8/4k3/1p1p1p1p/1P1P1P1P/8/4K3/2B5 w - - 0 1",
    "7k/6Q1/8/8/8/8/8/K7 b - - 0 1",
    "7k/6R1/8/8/8/8/B7/K7 b - - 0 1",
    "8/8/4k3/8/8/4KQ2/8/8 w - - 0 1",
    "8/8/4k3/8/3n4/4KN2/8/8 w - - 0 1",
    "8/8/4k3/8/3n4/4KB2/8/8 w - - 0 1",
    "2b5/8/4k3/8/8/4K3/8/2B5 w - - 0 1",
    "8/8/4k3/4p3/8/4KN2/8/8 w - - 0 1",
    "8/8/4k3/1p1p1p1p/1P1P1P1P/8/4K3/5B2 w - - 0 1",
    "8/8/4k3/1p1p1p2/1P1P1P2/8/4K3/8 w - - 0 1",
];

fn main() {
    let mut positions: Vec<Chess> = FIXED
        .iter()
        .map(|fen| {
            let parsed: Fen = fen.parse().expect("FEN");
            parsed.into_position(CastlingMode::Standard).expect("legal")
        })
        .collect();
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../data/london-classic-2016.pgn"
    );
    let text = std::fs::read_to_string(path).expect("the London file is in data/");
    for game in pgn::read_games(&text).expect("the London file reads") {
        let mut pos = game.start_position().expect("start position");
        for (ply, mv) in game.moves.iter().enumerate() {
            if ply % 10 == 0 {
                positions.push(pos.clone());
            }
            let m = pgn::parse_san(&pos, &mv.san).expect("legal move");
            pos.play_unchecked(m);
        }
    }

    let mut times: Vec<Duration> = Vec::with_capacity(positions.len());
    let mut dead_count = 0;
    let started = Instant::now();
    for pos in &positions {
        let t = Instant::now();
        if dead::is_dead(pos) {
            dead_count += 1;
        }
        times.push(t.elapsed());
    }
    let total = started.elapsed();
    times.sort();
    let p99 = times[(times.len() * 99).div_ceil(100).saturating_sub(1)];
    let max = times.last().copied().unwrap_or_default();
    println!(
        "is_dead: {} positions ({} dead), total {:.1} ms, mean {:.1} µs, p99 {:.1} µs, max {:.1} µs",
        positions.len(),
        dead_count,
        total.as_secs_f64() * 1e3,
        total.as_secs_f64() * 1e6 / positions.len() as f64,
        p99.as_secs_f64() * 1e6,
        max.as_secs_f64() * 1e6,
    );
}

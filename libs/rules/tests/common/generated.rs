//! Games generated to exercise every repetition and move rule (knight shuffles, quiet endings,
//! positions near the fifty-move limit), for the comparison with python-chess.

use rand::{Rng, SeedableRng, seq::IndexedRandom};
use rand_chacha::ChaCha8Rng;
use shakmaty::{Chess, Move, Position};

use super::position_from_fen;

/// How a generated game chooses its moves.
#[derive(Clone, Copy)]
pub struct Style {
    /// Probability of undoing one's own previous move when legal (knight shuffles).
    undo: f64,
    /// Probability of avoiding captures and pawn moves when another move exists.
    quiet: f64,
    max_plies: usize,
}

/// Sized so the whole comparison takes seconds in a debug build.
pub const GENERATED_GAMES: usize = 216;

pub const STARTS: [&str; 9] = [
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    "4k3/8/8/8/8/8/8/R3K2R w KQ - 0 1",
    "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1",
    "4k3/8/3n4/8/8/3N4/8/4K3 w - - 0 1",
    "2r3k1/5ppp/8/8/8/8/5PPP/2R3K1 w - - 90 60",
    "8/8/4k3/8/2q5/8/3QK3/8 w - - 120 80",
    "4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 1",
    "r3k2r/pppq1ppp/2n2n2/3pp3/3PP3/2N2N2/PPPQ1PPP/R3K2R w KQkq - 0 1",
    "6k1/5p2/6p1/8/8/6P1/5P2/6K1 w - - 97 70",
];

pub fn generate(rng: &mut ChaCha8Rng, start: &Chess, style: Style) -> Vec<Move> {
    let mut pos = start.clone();
    let mut moves: Vec<Move> = Vec::new();
    while moves.len() < style.max_plies {
        let legal = pos.legal_moves();
        if legal.is_empty() {
            break;
        }
        let undo = moves
            .len()
            .checked_sub(2)
            .map(|i| moves[i])
            .and_then(|prev| match prev {
                Move::Normal {
                    role,
                    from,
                    to,
                    capture: None,
                    promotion: None,
                } => legal.iter().copied().find(|m| {
                    *m == Move::Normal {
                        role,
                        from: to,
                        to: from,
                        capture: None,
                        promotion: None,
                    }
                }),
                _ => None,
            });
        let chosen = match undo {
            Some(m) if rng.random_bool(style.undo) => m,
            _ => {
                let quiet: Vec<Move> = legal.iter().copied().filter(|m| !m.is_zeroing()).collect();
                let pool: &[Move] = if !quiet.is_empty() && rng.random_bool(style.quiet) {
                    &quiet
                } else {
                    &legal
                };
                *pool.choose(rng).expect("non-empty move list")
            }
        };
        pos.play_unchecked(chosen);
        moves.push(chosen);
    }
    moves
}

pub fn generated_games() -> Vec<(Chess, Option<String>, Vec<Move>)> {
    let mut rng = ChaCha8Rng::seed_from_u64(0x0b0a_12dc_a575);
    let styles = [
        Style {
            undo: 0.75,
            quiet: 0.9,
            max_plies: 60,
        },
        Style {
            undo: 0.3,
            quiet: 0.98,
            max_plies: 80,
        },
        Style {
            undo: 0.0,
            quiet: 0.5,
            max_plies: 60,
        },
        Style {
            undo: 0.9,
            quiet: 0.99,
            max_plies: 50,
        },
    ];
    let mut games = Vec::new();
    for i in 0..GENERATED_GAMES {
        let fen = STARTS[i % STARTS.len()];
        let style = styles[(i / STARTS.len()) % styles.len()];
        let start = position_from_fen(fen);
        let moves = generate(&mut rng, &start, style);
        games.push((start, Some(fen.to_owned()), moves));
    }
    games
}

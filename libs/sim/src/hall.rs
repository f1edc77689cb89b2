//! Players' hands as a board's sensors see them in a hall, with their timing: pieces slid across
//! squares, adjustments, a sensor losing a piece for a scan, a captured piece taken off first,
//! a press well after the piece is set down — and, when asked for, real touch-move breaches (a
//! piece released on another square for a second or more, then moved on).
//!
//! A board scans its squares every 200–250 ms: what changes between two scans is one update,
//! a lift or a placement with the whole placement after it, as a gateway reports it.

use rand::{Rng, seq::IndexedRandom};
use rand_chacha::ChaCha8Rng;
use shakmaty::{Board, Chess, Move, Piece, Position, Role, Square};

use crate::{Kind, lifted, placed, placement_of};

/// How often a board reports what its squares hold.
const SCAN_MS: u64 = 250;

/// How often each behaviour happens, per move (a chance from 0 to 1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HallBehaviour {
    /// A bishop, rook or queen slid over the squares between, shown on each for 40–350 ms.
    pub slide: f64,
    /// A piece of the player's adjusted on its square first (off it for 150–700 ms).
    pub adjust: f64,
    /// A sensor loses a resting piece for one scan (250 ms).
    pub flicker: f64,
    /// A captured piece taken off before the capturing piece is lifted.
    pub capture_first: f64,
    /// The press 1–8 s after the piece is set down rather than at once.
    pub late_press: f64,
    /// A real breach of Article 4.6: the piece released on another square it could go to for
    /// 1–4 s, then lifted again and moved on.
    pub breach: f64,
}

impl HallBehaviour {
    /// Clean play as halls see it: every harmless habit, no breach.
    pub fn clean() -> HallBehaviour {
        HallBehaviour {
            slide: 0.3,
            adjust: 0.08,
            flicker: 0.03,
            capture_first: 0.5,
            late_press: 0.15,
            breach: 0.0,
        }
    }
}

/// One move's hand steps, each at an offset from the hand's start, and the press's delay after
/// the last of them.
pub(crate) struct Hand {
    pub steps: Vec<(u64, Kind)>,
    /// Whether a real breach was played into this move.
    pub breach: bool,
    /// How long after the hand's last step the clock is pressed.
    pub press_after_ms: u64,
}

/// A piece lifted off `square` (when one is there), seen as the board reports a change.
fn lift(board: &mut Board, steps: &mut Vec<(u64, Kind)>, at: u64, square: Square) -> Option<Piece> {
    let piece = board.remove_piece_at(square)?;
    steps.push((at, lifted(square, piece)));
    steps.push((at, placement_of(board)));
    Some(piece)
}

/// A piece put down on `square`, seen as the board reports a change.
fn put(board: &mut Board, steps: &mut Vec<(u64, Kind)>, at: u64, square: Square, piece: Piece) {
    board.set_piece_at(square, piece);
    steps.push((at, placed(square, piece)));
    steps.push((at, placement_of(board)));
}

/// The hand of `mv` from `pos`, with the behaviours `hall` makes happen by `rng`.
pub(crate) fn hand(pos: &Chess, mv: &Move, hall: &HallBehaviour, rng: &mut ChaCha8Rng) -> Hand {
    let mover = pos.turn();
    let mut board = pos.board().clone();
    let mut steps = Vec::new();
    let mut at = 0u64;
    let chance = |p: f64, rng: &mut ChaCha8Rng| p > 0.0 && rng.random::<f64>() < p;

    // A piece of the player's adjusted first (off its square for 150–700 ms).
    if chance(hall.adjust, rng) {
        let own: Vec<Square> = (board.by_color(mover) & !board.kings())
            .into_iter()
            .collect();
        if let Some(&square) = own.choose(rng)
            && let Some(piece) = lift(&mut board, &mut steps, at, square)
        {
            at += rng.random_range(150..=700);
            put(&mut board, &mut steps, at, square, piece);
            at += rng.random_range(300..=1_500);
        }
    }
    // A sensor loses a resting piece, either side's, for one scan.
    if chance(hall.flicker, rng) {
        let resting: Vec<Square> = board.occupied().into_iter().collect();
        if let Some(&square) = resting.choose(rng)
            && let Some(piece) = lift(&mut board, &mut steps, at, square)
        {
            at += SCAN_MS;
            put(&mut board, &mut steps, at, square, piece);
            at += rng.random_range(200..=1_000);
        }
    }

    let mut breach = false;
    match *mv {
        Move::Normal {
            role,
            from,
            capture,
            to,
            promotion,
        } => {
            let piece = Piece { color: mover, role };
            let captured_first = capture.is_some() && chance(hall.capture_first, rng);
            if captured_first {
                lift(&mut board, &mut steps, at, to);
                at += rng.random_range(200..=600);
            }
            lift(&mut board, &mut steps, at, from);
            at += rng.random_range(150..=400);
            // Released on another square it could go to, left there, then moved on.
            let via = chance(hall.breach, rng)
                .then(|| {
                    let others: Vec<Square> = pos
                        .legal_moves()
                        .iter()
                        .filter(|m| {
                            m.from() == Some(from)
                                && m.to() != to
                                && !m.is_capture()
                                && m.promotion().is_none()
                        })
                        .map(|m| m.to())
                        .collect();
                    others.choose(rng).copied()
                })
                .flatten();
            if let Some(via) = via {
                put(&mut board, &mut steps, at, via, piece);
                at += rng.random_range(1_000..=4_000);
                lift(&mut board, &mut steps, at, via);
                at += rng.random_range(150..=400);
                breach = true;
            } else if matches!(role, Role::Bishop | Role::Rook | Role::Queen)
                && chance(hall.slide, rng)
            {
                // Slid: set down on each square between for a moment.
                for square in shakmaty::attacks::between(from, to) {
                    put(&mut board, &mut steps, at, square, piece);
                    at += rng.random_range(40..=350);
                    lift(&mut board, &mut steps, at, square);
                    at += rng.random_range(20..=80);
                }
            }
            if capture.is_some() && !captured_first {
                lift(&mut board, &mut steps, at, to);
                at += rng.random_range(200..=600);
            }
            put(
                &mut board,
                &mut steps,
                at,
                to,
                Piece {
                    color: mover,
                    role: promotion.unwrap_or(role),
                },
            );
        }
        // En passant and castling as every hand makes them.
        _ => {
            let mut after = pos.clone();
            after.play_unchecked(*mv);
            for kind in crate::hand_steps(pos, mv) {
                steps.push((at, kind));
                at += 150;
            }
            steps.push((at, placement_of(after.board())));
        }
    }
    let press_after_ms = if chance(hall.late_press, rng) {
        rng.random_range(1_000..=8_000)
    } else {
        rng.random_range(150..=600)
    };
    Hand {
        steps,
        breach,
        press_after_ms,
    }
}

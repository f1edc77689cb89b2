//! Reconstruction of missed moves: a bounded search for legal sequences reaching a placement.

use shakmaty::{Board, Chess, Color, Move, Position};

/// The outcome of a reconstruction search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reconstruction {
    /// Exactly one sequence of the shortest length reaches the placement.
    Unique(Vec<Move>),
    /// Several sequences of the shortest length reach it.
    Ambiguous,
    /// None within the depth (or the search budget ran out).
    NotFound,
}

/// Searches from `start` for sequences of 2..=`max_plies` legal moves whose final placement is
/// `target`, shortest first. With `last_mover`, only sequences whose last move is by that side
/// count (the side that pressed the clock has just moved). `budget` caps positions examined.
pub fn reconstruct(
    start: &Chess,
    target: &Board,
    max_plies: u32,
    last_mover: Option<Color>,
    budget: usize,
) -> Reconstruction {
    let mut visited = 0usize;
    for depth in 2..=max_plies {
        let mover_of_last = if depth % 2 == 1 {
            start.turn()
        } else {
            start.turn().other()
        };
        if last_mover.is_some_and(|side| side != mover_of_last) {
            continue;
        }
        let mut found = Vec::new();
        let mut line = Vec::new();
        let complete = search(
            start,
            target,
            depth,
            &mut line,
            &mut found,
            &mut visited,
            budget,
        );
        match found.len() {
            0 if complete => continue,
            0 => return Reconstruction::NotFound,
            1 => return Reconstruction::Unique(found.swap_remove(0)),
            _ => return Reconstruction::Ambiguous,
        }
    }
    Reconstruction::NotFound
}

/// Depth-first search; returns false when the budget ran out. Stops early after two finds,
/// which is enough to know the answer is not unique.
fn search(
    pos: &Chess,
    target: &Board,
    remaining: u32,
    line: &mut Vec<Move>,
    found: &mut Vec<Vec<Move>>,
    visited: &mut usize,
    budget: usize,
) -> bool {
    if remaining == 0 {
        if pos.board() == target {
            found.push(line.clone());
        }
        return true;
    }
    if !reachable(pos, target, remaining) {
        return true;
    }
    for m in pos.legal_moves() {
        *visited += 1;
        if *visited > budget {
            return false;
        }
        let mut next = pos.clone();
        next.play_unchecked(m);
        line.push(m);
        let complete = search(&next, target, remaining - 1, line, found, visited, budget);
        line.pop();
        if !complete {
            return false;
        }
        if found.len() > 1 {
            return true;
        }
    }
    true
}

/// A cheap necessary condition: every square whose content must change to a piece of a colour
/// needs a move of that colour to land there, and a move lands on at most two squares (castling).
fn reachable(pos: &Chess, target: &Board, remaining: u32) -> bool {
    let board = pos.board();
    let mover = pos.turn();
    let mover_moves = remaining.div_ceil(2);
    let other_moves = remaining / 2;
    for color in Color::ALL {
        let (now, then) = (
            board.by_color(color).count(),
            target.by_color(color).count(),
        );
        // Pieces never appear, and each one that goes needs a capture by the other side.
        let other_side_moves = if color == mover {
            other_moves
        } else {
            mover_moves
        };
        if then > now || (now - then) as u32 > other_side_moves {
            return false;
        }
        let landings = target
            .by_color(color)
            .into_iter()
            .filter(|&sq| target.piece_at(sq) != board.piece_at(sq))
            .count() as u32;
        let moves = if color == mover {
            mover_moves
        } else {
            other_moves
        };
        if landings > 2 * moves {
            return false;
        }
    }
    true
}

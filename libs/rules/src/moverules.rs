//! The fifty-move rule (9.3, a claim) and the seventy-five-move rule (9.6.2, automatic from 2014).
//!
//! Counted on the halfmove clock: 50 moves by each player = 100 half-moves without a capture or
//! pawn move.

use shakmaty::{Chess, Move, Position};

use crate::ruleset::{Edition, RuleSet};

/// Half-moves without capture or pawn move that make a fifty-move claim correct.
pub const FIFTY_MOVE_PLIES: u32 = 100;
/// Half-moves without capture or pawn move that end the game automatically (from 2014).
pub const SEVENTY_FIVE_MOVE_PLIES: u32 = 150;
/// ICCF: the fifty-move rule does not apply with this many pieces or fewer on the board.
pub const ICCF_FIFTY_MOVE_PIECE_LIMIT: usize = 7;

/// Whether the fifty-move rule applies to `pos` at all (ICCF: not with 7 or fewer pieces, where
/// tablebase claims take over).
pub fn fifty_move_rule_applies(pos: &Chess, rules: &RuleSet) -> bool {
    match rules.edition {
        Edition::Iccf2019 => pos.board().occupied().count() > ICCF_FIFTY_MOVE_PIECE_LIMIT,
        _ => true,
    }
}

/// A fifty-move claim on the position on the board is correct: the last 50 moves by each player
/// were made without a capture or pawn move, and the game has not already ended (the player to
/// move has a legal move).
pub fn fifty_claim_on_board(pos: &Chess, rules: &RuleSet) -> bool {
    fifty_move_rule_applies(pos, rules)
        && pos.halfmoves() >= FIFTY_MOVE_PLIES
        && !pos.legal_moves().is_empty()
}

/// A fifty-move claim with the intended move `m` is correct: `m` is legal, neither a capture nor
/// a pawn move, completes the fifty moves, and does not itself end the game (a checkmate or
/// stalemate takes precedence).
pub fn fifty_claim_with_move(pos: &Chess, rules: &RuleSet, m: Move) -> bool {
    if !pos.is_legal(m) || m.is_zeroing() || pos.halfmoves() + 1 < FIFTY_MOVE_PLIES {
        return false;
    }
    let mut after = pos.clone();
    after.play_unchecked(m);
    fifty_claim_on_board(&after, rules)
}

/// Every intended move that would make a fifty-move claim correct.
pub fn fifty_intended_moves(pos: &Chess, rules: &RuleSet) -> Vec<Move> {
    if pos.halfmoves() + 1 < FIFTY_MOVE_PLIES {
        return Vec::new();
    }
    pos.legal_moves()
        .into_iter()
        .filter(|&m| fifty_claim_with_move(pos, rules, m))
        .collect()
}

/// The seventy-five-move rule ends the game on `pos` (2014 and later: 75 moves by each player
/// without capture or pawn move; a checkmate on the last move takes precedence).
pub fn seventy_five_moves(pos: &Chess, rules: &RuleSet) -> bool {
    rules.edition.has_automatic_draws()
        && pos.halfmoves() >= SEVENTY_FIVE_MOVE_PLIES
        && !pos.legal_moves().is_empty()
}

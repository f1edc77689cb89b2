//! Dead positions (Article 5.2.b / 9.6) and "can this side still checkmate" (Article 6.9).
//!
//! Placeholder signatures: the exact search replaces these bodies.

use shakmaty::{Chess, Color, Position};

/// True when no sequence of legal moves can lead to checkmate by either side.
pub fn is_dead(pos: &Chess) -> bool {
    pos.is_insufficient_material()
}

/// True when `side` can checkmate by some series of legal moves (any play by the opponent).
pub fn can_checkmate(pos: &Chess, side: Color) -> bool {
    !pos.has_insufficient_material(side)
}

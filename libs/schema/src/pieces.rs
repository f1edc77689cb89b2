//! The observation schema's piece codes and shakmaty's pieces: every producer and consumer of
//! observations converts between them, so the table is here once.

use shakmaty::{Color, Piece, Role};

use crate::device::v1::Piece as DevicePiece;

/// The schema's code for a piece.
pub fn device_piece(piece: Piece) -> DevicePiece {
    use DevicePiece as D;
    match (piece.color, piece.role) {
        (Color::White, Role::Pawn) => D::WhitePawn,
        (Color::White, Role::Knight) => D::WhiteKnight,
        (Color::White, Role::Bishop) => D::WhiteBishop,
        (Color::White, Role::Rook) => D::WhiteRook,
        (Color::White, Role::Queen) => D::WhiteQueen,
        (Color::White, Role::King) => D::WhiteKing,
        (Color::Black, Role::Pawn) => D::BlackPawn,
        (Color::Black, Role::Knight) => D::BlackKnight,
        (Color::Black, Role::Bishop) => D::BlackBishop,
        (Color::Black, Role::Rook) => D::BlackRook,
        (Color::Black, Role::Queen) => D::BlackQueen,
        (Color::Black, Role::King) => D::BlackKing,
    }
}

/// The piece a code stands for; `None` for `PIECE_UNSPECIFIED` and for numbers that are no code.
pub fn board_piece(code: i32) -> Option<Piece> {
    use DevicePiece as D;
    let (color, role) = match DevicePiece::try_from(code).ok()? {
        D::WhitePawn => (Color::White, Role::Pawn),
        D::WhiteKnight => (Color::White, Role::Knight),
        D::WhiteBishop => (Color::White, Role::Bishop),
        D::WhiteRook => (Color::White, Role::Rook),
        D::WhiteQueen => (Color::White, Role::Queen),
        D::WhiteKing => (Color::White, Role::King),
        D::BlackPawn => (Color::Black, Role::Pawn),
        D::BlackKnight => (Color::Black, Role::Knight),
        D::BlackBishop => (Color::Black, Role::Bishop),
        D::BlackRook => (Color::Black, Role::Rook),
        D::BlackQueen => (Color::Black, Role::Queen),
        D::BlackKing => (Color::Black, Role::King),
        D::Unspecified => return None,
    };
    Some(Piece { color, role })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_piece_round_trips_and_other_codes_are_none() {
        for color in Color::ALL {
            for role in Role::ALL {
                let piece = Piece { color, role };
                assert_eq!(board_piece(device_piece(piece) as i32), Some(piece));
            }
        }
        assert_eq!(board_piece(DevicePiece::Unspecified as i32), None);
        assert_eq!(board_piece(13), None);
        assert_eq!(board_piece(-1), None);
    }
}

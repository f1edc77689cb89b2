//! Piece codes, DGT square numbering and conversion to shakmaty types.

use shakmaty::{Board, Color, File, Piece, Rank, Role, Square};

/// What the board reports for one square (piece codes 0–15 of the protocol).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PieceCode {
    /// Code 0: nothing on the square.
    Empty,
    /// Codes 1–12: a chess piece.
    Piece(Piece),
    /// Codes 13–15: special marker pieces some boards report; the value is the raw code.
    Marker(u8),
}

const ROLES: [Role; 6] = [
    Role::Pawn,
    Role::Rook,
    Role::Knight,
    Role::Bishop,
    Role::King,
    Role::Queen,
];

impl PieceCode {
    /// Decodes a raw code; `None` for values above 15.
    pub fn from_u8(code: u8) -> Option<PieceCode> {
        match code {
            0 => Some(PieceCode::Empty),
            1..=12 => {
                let index = usize::from(code - 1);
                let color = if index < 6 {
                    Color::White
                } else {
                    Color::Black
                };
                Some(PieceCode::Piece(Piece {
                    color,
                    role: ROLES[index % 6],
                }))
            }
            13..=15 => Some(PieceCode::Marker(code)),
            _ => None,
        }
    }

    /// The raw code (0–15). A `Marker` holding a value outside 13–15 is masked into range.
    pub fn to_u8(self) -> u8 {
        match self {
            PieceCode::Empty => 0,
            PieceCode::Piece(piece) => {
                let role_index = ROLES.iter().position(|&r| r == piece.role).unwrap_or(0) as u8;
                let base = if piece.color == Color::White { 1 } else { 7 };
                base + role_index
            }
            PieceCode::Marker(code) => code.clamp(13, 15),
        }
    }

    /// The chess piece, if this code is one.
    pub fn piece(self) -> Option<Piece> {
        match self {
            PieceCode::Piece(piece) => Some(piece),
            _ => None,
        }
    }
}

/// A square in DGT numbering: 0 = a8, 1 = b8, …, 7 = h8, 8 = a7, …, 63 = h1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DgtSquare(u8);

impl DgtSquare {
    /// `None` for values above 63.
    pub fn new(index: u8) -> Option<DgtSquare> {
        (index < 64).then_some(DgtSquare(index))
    }

    /// The raw index, 0–63.
    pub fn index(self) -> u8 {
        self.0
    }

    /// The chess square this sensor square reads when the board is set up in `orientation`.
    pub fn to_square(self, orientation: Orientation) -> Square {
        let index = match orientation {
            Orientation::Normal => self.0,
            Orientation::Rotated => 63 - self.0,
        };
        let file = File::new(u32::from(index % 8));
        let rank = Rank::new(7 - u32::from(index / 8));
        Square::from_coords(file, rank)
    }

    /// The sensor square that reads the chess square `square` in `orientation`.
    pub fn from_square(square: Square, orientation: Orientation) -> DgtSquare {
        let index = (7 - square.rank().to_u32()) * 8 + square.file().to_u32();
        // index < 64 by construction
        let index = index as u8;
        match orientation {
            Orientation::Normal => DgtSquare(index),
            Orientation::Rotated => DgtSquare(63 - index),
        }
    }
}

/// How the board lies relative to the players.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Orientation {
    /// White sits at the side away from the connector: DGT square 0 is a8.
    #[default]
    Normal,
    /// The board is turned round: DGT square 0 is h1.
    Rotated,
}

impl Orientation {
    /// The other orientation.
    pub fn flipped(self) -> Orientation {
        match self {
            Orientation::Normal => Orientation::Rotated,
            Orientation::Rotated => Orientation::Normal,
        }
    }
}

/// The 64 piece codes of a board dump, indexed by DGT square.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BoardCodes(pub [PieceCode; 64]);

impl Default for BoardCodes {
    fn default() -> Self {
        BoardCodes([PieceCode::Empty; 64])
    }
}

impl BoardCodes {
    /// The code on a sensor square.
    pub fn get(&self, square: DgtSquare) -> PieceCode {
        self.0[usize::from(square.index())]
    }

    /// Sets the code on a sensor square (as a field update does).
    pub fn set(&mut self, square: DgtSquare, code: PieceCode) {
        self.0[usize::from(square.index())] = code;
    }

    /// The chess placement, reading the board in `orientation`. Marker codes are left out.
    pub fn to_board(&self, orientation: Orientation) -> Board {
        let mut board = Board::empty();
        for (index, code) in self.0.iter().enumerate() {
            if let (PieceCode::Piece(piece), Some(square)) = (code, DgtSquare::new(index as u8)) {
                board.set_piece_at(square.to_square(orientation), *piece);
            }
        }
        board
    }

    /// The codes a board set up in `orientation` reports for `board`.
    pub fn from_board(board: &Board, orientation: Orientation) -> BoardCodes {
        let mut codes = BoardCodes::default();
        for (square, piece) in board.iter() {
            codes.set(
                DgtSquare::from_square(square, orientation),
                PieceCode::Piece(piece),
            );
        }
        codes
    }

    /// The orientation in which these codes show the standard start position, if any.
    pub fn start_orientation(&self) -> Option<Orientation> {
        let start = Board::new();
        [Orientation::Normal, Orientation::Rotated]
            .into_iter()
            .find(|&o| self.to_board(o) == start)
    }
}

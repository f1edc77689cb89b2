//! Chess960 (2009 Appendix F, ICCF Appendix B): start positions, their Scharnagl numbers and
//! castling.
//!
//! The back rank is random with the king between the rooks and the bishops on opposite colours;
//! Black mirrors White. The 960 start positions are numbered 0..=959 after Scharnagl; number 518
//! is the standard position. Castling ends with king and rook on the standard squares (c/d or
//! g/f); shakmaty decides its legality when positions are built with [`CastlingMode::Chess960`].
//! On the ICCF server castling is entered by moving the king onto its own rook:
//! [`castling_by_king_onto_rook`] reads that form (as does `notation::read_iccf`).

use shakmaty::{
    CastlingMode, Chess, Color, EnPassantMode, File, Move, Position, Rank, Role, Square, fen::Fen,
};

/// Number of the standard chess start position.
pub const STANDARD_NUMBER: u16 = 518;

/// A back rank from a-file to h-file.
pub type BackRank = [Role; 8];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Chess960Error {
    #[error("Chess960 start positions are numbered 0 to 959, not {0}")]
    NumberOutOfRange(u16),
    #[error("not a Chess960 back rank: {0}")]
    InvalidBackRank(&'static str),
    #[error("not a Chess960 start position: {0}")]
    NotAStartPosition(String),
}

/// The knights' places among the five squares left after the bishops and the queen.
const KNIGHT_PLACES: [(usize, usize); 10] = [
    (0, 1),
    (0, 2),
    (0, 3),
    (0, 4),
    (1, 2),
    (1, 3),
    (1, 4),
    (2, 3),
    (2, 4),
    (3, 4),
];

/// The back rank of start position `number` (Scharnagl's numbering).
pub fn back_rank(number: u16) -> Result<BackRank, Chess960Error> {
    if number > 959 {
        return Err(Chess960Error::NumberOutOfRange(number));
    }
    let n = usize::from(number);
    let mut rank: [Option<Role>; 8] = [None; 8];
    rank[(n % 4) * 2 + 1] = Some(Role::Bishop); // light squares: b, d, f, h
    let n = n / 4;
    rank[(n % 4) * 2] = Some(Role::Bishop); // dark squares: a, c, e, g
    let n = n / 4;
    place_on_empty(&mut rank, n % 6, Role::Queen);
    let (first, second) = KNIGHT_PLACES[n / 6];
    // Place the later knight first so that the earlier index still counts the same squares.
    place_on_empty(&mut rank, second, Role::Knight);
    place_on_empty(&mut rank, first, Role::Knight);
    for role in [Role::Rook, Role::King, Role::Rook] {
        place_on_empty(&mut rank, 0, role);
    }
    Ok(rank.map(|role| role.unwrap_or(Role::Pawn)))
}

fn place_on_empty(rank: &mut [Option<Role>; 8], index: usize, role: Role) {
    if let Some(slot) = rank.iter_mut().filter(|s| s.is_none()).nth(index) {
        *slot = Some(role);
    }
}

/// Checks the Chess960 rules for a back rank: one king, one queen, two rooks, two bishops, two
/// knights; the bishops on opposite colours; the king between the rooks.
pub fn validate_back_rank(rank: &BackRank) -> Result<(), Chess960Error> {
    let count = |role: Role| rank.iter().filter(|r| **r == role).count();
    if count(Role::King) != 1
        || count(Role::Queen) != 1
        || count(Role::Rook) != 2
        || count(Role::Bishop) != 2
        || count(Role::Knight) != 2
    {
        return Err(Chess960Error::InvalidBackRank(
            "it needs one king, one queen and two each of rooks, bishops and knights",
        ));
    }
    let files = |role: Role| -> Vec<usize> { (0..8).filter(|f| rank[*f] == role).collect() };
    let bishops = files(Role::Bishop);
    if bishops[0] % 2 == bishops[1] % 2 {
        return Err(Chess960Error::InvalidBackRank(
            "the bishops must stand on squares of opposite colours",
        ));
    }
    let (rooks, king) = (files(Role::Rook), files(Role::King)[0]);
    if !(rooks[0] < king && king < rooks[1]) {
        return Err(Chess960Error::InvalidBackRank(
            "the king must stand between the rooks",
        ));
    }
    Ok(())
}

/// Scharnagl number of a valid back rank.
pub fn number_of(rank: &BackRank) -> Result<u16, Chess960Error> {
    validate_back_rank(rank)?;
    let file_of = |role: Role, parity: usize| {
        (0..8)
            .find(|f| rank[*f] == role && f % 2 == parity)
            .unwrap_or(0)
    };
    let light_bishop = file_of(Role::Bishop, 1) / 2;
    let dark_bishop = file_of(Role::Bishop, 0) / 2;
    let without_bishops: Vec<Role> = rank
        .iter()
        .copied()
        .filter(|r| *r != Role::Bishop)
        .collect();
    let queen = without_bishops
        .iter()
        .position(|r| *r == Role::Queen)
        .unwrap_or(0);
    let rest: Vec<usize> = without_bishops
        .iter()
        .filter(|r| **r != Role::Queen)
        .enumerate()
        .filter(|(_, r)| **r == Role::Knight)
        .map(|(i, _)| i)
        .collect();
    let knights = KNIGHT_PLACES
        .iter()
        .position(|(a, b)| rest == [*a, *b])
        .unwrap_or(0);
    let number = ((knights * 6 + queen) * 4 + dark_bishop) * 4 + light_bishop;
    // At most 959 by construction.
    Ok(number as u16)
}

/// The start position `number`, with Chess960 castling rules.
pub fn start_position(number: u16) -> Result<Chess, Chess960Error> {
    let fen = start_fen(number)?;
    let parsed: Fen = fen
        .parse()
        .map_err(|e| Chess960Error::NotAStartPosition(format!("{e}")))?;
    parsed
        .into_position(CastlingMode::Chess960)
        .map_err(|e| Chess960Error::NotAStartPosition(format!("{e}")))
}

/// FEN of start position `number`, with Shredder castling letters (the rooks' files, e.g.
/// `HAha` for the standard position) so that the rooks are named explicitly.
pub fn start_fen(number: u16) -> Result<String, Chess960Error> {
    let rank = back_rank(number)?;
    let white: String = rank.iter().map(|r| r.upper_char()).collect();
    let black = white.to_ascii_lowercase();
    let rook_files: String = (0..8u32)
        .rev()
        .filter(|f| rank[*f as usize] == Role::Rook)
        .map(|f| File::new(f).upper_char())
        .collect();
    Ok(format!(
        "{black}/pppppppp/8/8/8/8/PPPPPPPP/{white} w {rook_files}{} - 0 1",
        rook_files.to_ascii_lowercase()
    ))
}

/// The Scharnagl number of a FEN if it is a Chess960 start position: White to move, pawns on
/// their ranks, a valid back rank mirrored by Black, nothing else, all four castling rights.
pub fn start_number_of_fen(fen: &str) -> Result<u16, Chess960Error> {
    let not_start = |reason: &str| Chess960Error::NotAStartPosition(reason.to_owned());
    let parsed: Fen = fen
        .parse()
        .map_err(|e| Chess960Error::NotAStartPosition(format!("{e}")))?;
    let pos: Chess = parsed
        .into_position(CastlingMode::Chess960)
        .map_err(|e| Chess960Error::NotAStartPosition(format!("{e}")))?;
    if pos.turn() != Color::White {
        return Err(not_start("White moves first"));
    }
    let board = pos.board();
    let mut rank = [Role::Pawn; 8];
    for (f, slot) in rank.iter_mut().enumerate() {
        let file = File::new(f as u32);
        let piece = board.piece_at(Square::from_coords(file, Rank::First));
        let Some(piece) = piece.filter(|p| p.color == Color::White) else {
            return Err(not_start("the white back rank is incomplete"));
        };
        *slot = piece.role;
    }
    let number = number_of(&rank)?;
    let expected = start_position(number)?;
    if expected.board() != board {
        return Err(not_start(
            "pawns and Black's pieces must mirror the start position",
        ));
    }
    if expected.castles().castling_rights() != pos.castles().castling_rights() {
        return Err(not_start("all four castling rights must be present"));
    }
    if pos.ep_square(EnPassantMode::Legal).is_some() {
        return Err(not_start("no en passant at the start"));
    }
    Ok(number)
}

/// Castling entered as the king moving onto its own rook (the ICCF server's form), if that is a
/// legal castling move in `pos`.
pub fn castling_by_king_onto_rook(pos: &Chess, king: Square, rook: Square) -> Option<Move> {
    pos.legal_moves()
        .into_iter()
        .find(|m| matches!(m, Move::Castle { king: k, rook: r } if *k == king && *r == rook))
}

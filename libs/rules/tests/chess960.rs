//! Chess960 start positions, numbering and castling.

use std::collections::HashSet;

use boardcast_rules::{
    chess960::{
        self, Chess960Error, STANDARD_NUMBER, back_rank, castling_by_king_onto_rook, number_of,
        start_fen, start_number_of_fen, start_position, validate_back_rank,
    },
    notation::{read_iccf, write_iccf},
};
use shakmaty::{Chess, Color, Move, Piece, Position, Role, Square, fen::Fen};

fn piece(pos: &Chess, square: Square) -> Option<Piece> {
    pos.board().piece_at(square)
}

#[test]
fn number_518_is_the_standard_position() {
    use Role::*;
    assert_eq!(
        back_rank(STANDARD_NUMBER),
        Ok([Rook, Knight, Bishop, Queen, King, Bishop, Knight, Rook])
    );
    let pos = start_position(STANDARD_NUMBER).expect("valid");
    assert_eq!(pos.board(), Chess::default().board());
    assert_eq!(
        start_number_of_fen("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"),
        Ok(STANDARD_NUMBER)
    );
}

#[test]
fn known_numbers() {
    use Role::*;
    // Number 0 is BBQNNRKR in Scharnagl's table.
    assert_eq!(
        back_rank(0),
        Ok([Bishop, Bishop, Queen, Knight, Knight, Rook, King, Rook])
    );
    assert_eq!(
        back_rank(959),
        Ok([Rook, King, Rook, Knight, Knight, Queen, Bishop, Bishop])
    );
    assert_eq!(back_rank(960), Err(Chess960Error::NumberOutOfRange(960)));
}

#[test]
fn all_960_are_distinct_valid_and_numbered_back() {
    let mut seen = HashSet::new();
    for number in 0..960u16 {
        let rank = back_rank(number).expect("in range");
        validate_back_rank(&rank).expect("valid back rank");
        assert_eq!(number_of(&rank), Ok(number));
        assert!(seen.insert(rank), "{number} is distinct");
        let fen = start_fen(number).expect("fen");
        assert_eq!(start_number_of_fen(&fen), Ok(number), "{fen}");
        let pos = start_position(number).expect("legal");
        assert_eq!(pos.turn(), Color::White);
        assert!(!pos.legal_moves().is_empty(), "{fen}");
    }
    assert_eq!(seen.len(), 960);
}

#[test]
fn invalid_back_ranks_are_rejected() {
    use Role::*;
    let same_colour_bishops = [Bishop, Rook, Bishop, Queen, King, Knight, Knight, Rook];
    assert!(matches!(
        validate_back_rank(&same_colour_bishops),
        Err(Chess960Error::InvalidBackRank(r)) if r.contains("opposite colours")
    ));
    let king_outside = [King, Rook, Bishop, Queen, Knight, Bishop, Knight, Rook];
    assert!(matches!(
        validate_back_rank(&king_outside),
        Err(Chess960Error::InvalidBackRank(r)) if r.contains("between")
    ));
    let two_queens = [Rook, Queen, Bishop, Queen, King, Bishop, Knight, Rook];
    assert!(validate_back_rank(&two_queens).is_err());
    assert!(number_of(&two_queens).is_err());

    // Not start positions.
    for fen in [
        "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w Kkq - 0 1",
        "nrbqkbrn/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        "brbqknnr/pppppppp/8/8/8/8/PPPPPPPP/BRBQKNNR w KQkq - 0 1",
        "not a fen",
    ] {
        assert!(start_number_of_fen(fen).is_err(), "{fen}");
    }
    // Valid: the X-FEN letters name the outer rooks, Shredder letters their files.
    for fen in [
        "bbrqkrnn/pppppppp/8/8/8/8/PPPPPPPP/BBRQKRNN w KQkq - 0 1",
        "bbrqkrnn/pppppppp/8/8/8/8/PPPPPPPP/BBRQKRNN w FCfc - 0 1",
    ] {
        assert!(start_number_of_fen(fen).is_ok(), "{fen}");
    }
}

/// Plays castling in a few positions and checks where king and rook end.
#[test]
fn castling_ends_on_the_standard_squares() {
    // King g1, rooks b1 and h1: short castling moves only the rook, long castling crosses.
    let pos = Fen::from_ascii(b"1r4kr/pppppppp/8/8/8/8/PPPPPPPP/1R4KR w HBhb - 0 1")
        .expect("fen")
        .into_position::<Chess>(shakmaty::CastlingMode::Chess960)
        .expect("legal");
    let short = castling_by_king_onto_rook(&pos, Square::G1, Square::H1).expect("O-O legal");
    let mut after = pos.clone();
    after.play_unchecked(short);
    assert_eq!(piece(&after, Square::G1), Some(Color::White.king()));
    assert_eq!(piece(&after, Square::F1), Some(Color::White.rook()));
    assert_eq!(piece(&after, Square::H1), None);
    let long = castling_by_king_onto_rook(&pos, Square::G1, Square::B1).expect("O-O-O legal");
    let mut after = pos.clone();
    after.play_unchecked(long);
    assert_eq!(piece(&after, Square::C1), Some(Color::White.king()));
    assert_eq!(piece(&after, Square::D1), Some(Color::White.rook()));
    assert_eq!(piece(&after, Square::B1), None);
    assert_eq!(piece(&after, Square::G1), None);
    assert_eq!(piece(&after, Square::H1), Some(Color::White.rook()));

    // King b1, rooks a1 and h1.
    let pos = Fen::from_ascii(b"rk5r/pppppppp/8/8/8/8/PPPPPPPP/RK5R w HAha - 0 1")
        .expect("fen")
        .into_position::<Chess>(shakmaty::CastlingMode::Chess960)
        .expect("legal");
    let long = castling_by_king_onto_rook(&pos, Square::B1, Square::A1).expect("O-O-O");
    let mut after = pos.clone();
    after.play_unchecked(long);
    assert_eq!(piece(&after, Square::C1), Some(Color::White.king()));
    assert_eq!(piece(&after, Square::D1), Some(Color::White.rook()));
    let short = castling_by_king_onto_rook(&pos, Square::B1, Square::H1).expect("O-O");
    let mut after = pos.clone();
    after.play_unchecked(short);
    assert_eq!(piece(&after, Square::G1), Some(Color::White.king()));
    assert_eq!(piece(&after, Square::F1), Some(Color::White.rook()));

    // Not the king's own rook, or not a castling move.
    assert_eq!(
        castling_by_king_onto_rook(&pos, Square::B1, Square::C1),
        None
    );
}

#[test]
fn castling_through_an_attacked_square_is_illegal() {
    // The king crosses c1..f1 on the way to g1; a black rook on e8 covers e1.
    let pos = Fen::from_ascii(b"1k2r3/8/8/8/8/8/8/RK5R w HA - 0 1")
        .expect("fen")
        .into_position::<Chess>(shakmaty::CastlingMode::Chess960)
        .expect("legal");
    assert_eq!(
        castling_by_king_onto_rook(&pos, Square::B1, Square::H1),
        None
    );
    assert!(castling_by_king_onto_rook(&pos, Square::B1, Square::A1).is_some());
}

#[test]
fn iccf_castling_by_king_onto_rook() {
    let pos = Fen::from_ascii(b"rk5r/pppppppp/8/8/8/8/PPPPPPPP/RK5R w HAha - 0 1")
        .expect("fen")
        .into_position::<Chess>(shakmaty::CastlingMode::Chess960)
        .expect("legal");
    // King b1 onto rook h1 (2181) and to its destination g1 (2171) both mean O-O.
    let onto_rook = read_iccf(&pos, "2181").expect("castling");
    assert!(matches!(onto_rook, Move::Castle { .. }));
    assert_eq!(read_iccf(&pos, "2171"), Ok(onto_rook));
    assert_eq!(write_iccf(onto_rook), "2171");
    // King b1 onto rook a1: O-O-O, king to c1 — which is also an ordinary king step.
    let long = read_iccf(&pos, "2111").expect("castling");
    assert!(matches!(long, Move::Castle { .. }));
    let step = read_iccf(&pos, "2131").expect("king step");
    assert!(matches!(
        step,
        Move::Normal {
            role: Role::King,
            ..
        }
    ));
    assert_eq!(chess960::STANDARD_NUMBER, 518);
}

//! Every game of a real tournament, played through the engine as a board would report it,
//! comes out as exactly the source moves.

mod common;

use boardcast_inference::Output;
use boardcast_rules::pgn::read_games;
use common::Script;
use shakmaty::san::San;
use shakmaty::{Chess, Move, Position};

const PGN: &str = include_str!("../../../data/london-classic-2016.pgn");

/// The squares a move empties before the mover's piece lands: the origin, plus the captured
/// piece's square (removed first, as most players do).
fn lift_squares(m: Move) -> Vec<shakmaty::Square> {
    match m {
        Move::Normal {
            from, to, capture, ..
        } => {
            let mut squares = Vec::new();
            if capture.is_some() {
                squares.push(to);
            }
            squares.push(from);
            squares
        }
        Move::EnPassant { from, to } => {
            vec![from, shakmaty::Square::from_coords(to.file(), from.rank())]
        }
        Move::Castle { king, .. } => vec![king],
        Move::Put { .. } => Vec::new(),
    }
}

#[test]
fn every_london_classic_game_is_inferred_exactly() {
    let games = read_games(PGN).expect("PGN parses");
    assert!(games.len() > 30, "{} games", games.len());
    let mut plies = 0;
    for (number, game) in games.iter().enumerate() {
        let mut s = Script::new(Chess::default());
        let mut pos = Chess::default();
        let mut confirmed = Vec::new();
        for pgn_move in &game.moves {
            let m = pgn_move
                .san
                .parse::<San>()
                .expect("SAN")
                .to_move(&pos)
                .expect("legal");
            let mut out = Vec::new();
            // Intermediate placements: the emptied squares, one at a time.
            let mut board = pos.board().clone();
            for square in lift_squares(m) {
                board.discard_piece_at(square);
                out.extend(s.placement(board.clone()));
            }
            let mover = pos.turn();
            pos.play_unchecked(m);
            out.extend(s.placement(pos.board().clone()));
            out.extend(s.press(mover));
            for o in &out {
                match o {
                    Output::MoveConfirmed { mv, .. } => confirmed.push(mv.mv),
                    Output::Touch { .. } | Output::MoveProvisional { .. } => {}
                    other => panic!("game {}: unexpected {other:?}", number + 1),
                }
            }
            plies += 1;
        }
        let expected: Vec<Move> = {
            let mut p = Chess::default();
            game.moves
                .iter()
                .map(|pm| {
                    let m = pm
                        .san
                        .parse::<San>()
                        .expect("SAN")
                        .to_move(&p)
                        .expect("legal");
                    p.play_unchecked(m);
                    m
                })
                .collect()
        };
        assert_eq!(confirmed, expected, "game {}", number + 1);
        // Moves, not SAN spelling: the source sometimes disambiguates more than needed.
        let game_moves: Vec<Move> = s.engine.moves().into_iter().map(|m| m.mv).collect();
        assert_eq!(game_moves, expected, "game {}", number + 1);
        assert_eq!(s.engine.confirmed_plies() as usize, expected.len());
    }
    assert!(plies > 1000, "{plies} plies");
}

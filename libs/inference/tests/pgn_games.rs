//! Every game of a real tournament, played through the engine as a board would report it,
//! comes out as exactly the source moves.

mod common;

use boardcast_inference::{KEPT_PLIES, Output};
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
        // The graph is pruned as moves are completed: the line itself, plus the possible moves
        // of only the last KEPT_PLIES + 1 positions.
        let mut line = vec![Chess::default()];
        for &m in &expected {
            let mut next = line[line.len() - 1].clone();
            next.play_unchecked(m);
            line.push(next);
        }
        let recent = line.len().saturating_sub(KEPT_PLIES as usize + 1);
        let bound = line.len()
            + line[recent..]
                .iter()
                .map(|p| p.legal_moves().len())
                .sum::<usize>();
        assert!(
            s.engine.positions_held() <= bound,
            "game {}: {} positions held, at most {bound} expected",
            number + 1,
            s.engine.positions_held()
        );
    }
    assert!(plies > 1000, "{plies} plies");
}

/// Plays `m` as a board with realistic sensor behaviour reports it, through single lifts and
/// places: a ghost read before some moves, sliding pieces seen one square short of their
/// destination, captures in either order, castling king first, the en passant pawn removed last.
fn play_noisily(s: &mut Script, pos: &Chess, m: Move, ply: usize) -> Vec<Output> {
    use shakmaty::{Color, Piece, Role, Square};
    let mut out = Vec::new();
    let board = pos.board();
    if ply % 7 == 3 {
        let empty = (!board.occupied()).first().expect("an empty square");
        let ghost = Piece {
            color: Color::Black,
            role: Role::Knight,
        };
        out.extend(s.put(empty, ghost));
        out.extend(s.lift(empty));
    }
    match m {
        Move::Normal {
            role,
            from,
            to,
            capture,
            promotion,
        } => {
            let piece = Piece {
                color: pos.turn(),
                role: promotion.unwrap_or(role),
            };
            let sliding = matches!(role, Role::Rook | Role::Bishop | Role::Queen);
            let distance = from.distance(to);
            if capture.is_some() && ply.is_multiple_of(2) {
                // Captured piece first, then the capturing one.
                out.extend(s.lift(to));
                out.extend(s.lift(from));
                out.extend(s.put(to, piece));
            } else if capture.is_none() && sliding && distance >= 2 && promotion.is_none() {
                let step_file = (to.file() as i32 - from.file() as i32).signum();
                let step_rank = (to.rank() as i32 - from.rank() as i32).signum();
                let short = Square::from_coords(
                    to.file().offset(-step_file).expect("on the board"),
                    to.rank().offset(-step_rank).expect("on the board"),
                );
                out.extend(s.lift(from));
                out.extend(s.put(short, piece));
                out.extend(s.lift(short));
                out.extend(s.put(to, piece));
            } else {
                // Lands on the captured piece directly when capturing.
                out.extend(s.lift(from));
                out.extend(s.put(to, piece));
            }
        }
        Move::EnPassant { from, to } => {
            let pawn = board.piece_at(from).expect("pawn");
            out.extend(s.lift(from));
            out.extend(s.put(to, pawn));
            out.extend(s.lift(Square::from_coords(to.file(), from.rank())));
        }
        Move::Castle { king, rook } => {
            let side = m.castling_side().expect("castling");
            let color = pos.turn();
            let king_piece = board.piece_at(king).expect("king");
            let rook_piece = board.piece_at(rook).expect("rook");
            out.extend(s.lift(king));
            out.extend(s.put(side.king_to(color), king_piece));
            out.extend(s.lift(rook));
            out.extend(s.put(side.rook_to(color), rook_piece));
        }
        Move::Put { .. } => {}
    }
    out
}

#[test]
fn london_classic_games_survive_realistic_sensor_noise() {
    let games = read_games(PGN).expect("PGN parses");
    for (number, game) in games.iter().enumerate() {
        let mut s = Script::new(Chess::default());
        let mut pos = Chess::default();
        let mut expected = Vec::new();
        let mut confirmed = Vec::new();
        for (ply, pgn_move) in game.moves.iter().enumerate() {
            let m = pgn_move
                .san
                .parse::<San>()
                .expect("SAN")
                .to_move(&pos)
                .expect("legal");
            let mut out = play_noisily(&mut s, &pos, m, ply);
            let mover = pos.turn();
            pos.play_unchecked(m);
            expected.push(m);
            assert_eq!(
                s.sensed,
                *pos.board(),
                "game {} ply {}",
                number + 1,
                ply + 1
            );
            out.extend(s.press(mover));
            for o in out {
                match o {
                    Output::MoveConfirmed { mv, .. } => confirmed.push(mv.mv),
                    Output::Touch { .. }
                    | Output::MoveProvisional { .. }
                    | Output::ProvisionalRevised { .. }
                    | Output::GhostIgnored { .. } => {}
                    other => panic!(
                        "game {} ply {}: unexpected {other:?} on {}, game ends {:?}",
                        number + 1,
                        ply + 1,
                        s.sensed,
                        s.engine
                            .moves()
                            .iter()
                            .rev()
                            .take(4)
                            .map(|m| m.san.clone())
                            .collect::<Vec<_>>()
                    ),
                }
            }
        }
        assert_eq!(confirmed, expected, "game {}", number + 1);
    }
}

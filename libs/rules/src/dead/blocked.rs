//! The semi-static proof that a side can never mate: pawns frozen for good, the squares every
//! other piece can ever reach behind them, and whether a mating pattern fits in those squares.
//!
//! After the "full" analysis of A. Ambrona, "A Practical Algorithm for Chess Unwinnability"
//! (FUN 2022). Every region here over-approximates what legal play can do, so each "cannot" is
//! sound; what cannot be proven this way is left to the search.

use shakmaty::{Bitboard, Board, ByColor, Color, Role, Square, attacks};

/// One piece's possible future.
#[derive(Debug, Clone, Copy)]
struct Unit {
    square: Square,
    color: Color,
    /// The piece's role now (a pawn stays `Pawn` even when it can promote).
    role: Role,
    /// Every square the piece can ever stand on (its own square included).
    reach: Bitboard,
    /// The squares of `reach` it stands on as a pawn (empty for pieces).
    as_pawn: Bitboard,
    /// The squares of `reach` it stands on as a piece: a pawn's only once promoted (any piece:
    /// a queen's and a knight's ways cover all), empty if it can never promote.
    as_piece: Bitboard,
}

impl Unit {
    fn promotes(&self) -> bool {
        self.role == Role::Pawn && self.as_piece.any()
    }

    /// Every square the piece can ever attack, with `stuck` pieces blocking lines.
    fn attacks(&self, stuck: Bitboard) -> Bitboard {
        let from_pawn = self.as_pawn.into_iter().fold(Bitboard::EMPTY, |acc, sq| {
            acc | attacks::pawn_attacks(self.color, sq)
        });
        let roles: &[Role] = match self.role {
            Role::Pawn => &[Role::Queen, Role::Knight],
            role => &[role][..],
        };
        roles.iter().fold(from_pawn, |acc, role| {
            self.as_piece.into_iter().fold(acc, |acc, sq| {
                acc | attacks::attacks(sq, role.of(self.color), stuck)
            })
        })
    }
}

/// Every piece's future, as the least solution of "a piece can be somewhere only if some legal
/// move can bring it there":
/// - a move needs its target (and a line's squares) empty at the time, so each such square must
///   be empty now or its piece able to leave or be captured;
/// - a pawn captures only where an enemy piece other than the king can be;
/// - a king never enters a square that an enemy piece that never moves attacks;
/// - a pawn never passes an enemy pawn on its file while neither can leave the file and the
///   enemy one cannot be captured on it.
///
/// Starting from every piece on its own square and adding only what these conditions allow, the
/// result contains everything legal play can do (by induction over any sequence of moves).
struct Futures {
    units: Vec<Unit>,
    /// Occupied squares whose piece never leaves and is never captured.
    stuck: Bitboard,
}

impl Futures {
    /// The futures of the pieces on `board`, or `None` as soon as `hopeless` says that what is
    /// known so far already rules out the caller's proof (regions only grow).
    fn of(board: &Board, hopeless: impl Fn(&[Unit]) -> bool) -> Option<Futures> {
        let mut units: Vec<Unit> = board
            .occupied()
            .into_iter()
            .filter_map(|square| {
                let piece = board.piece_at(square)?;
                let (as_pawn, as_piece) = if piece.role == Role::Pawn {
                    (Bitboard::from_square(square), Bitboard::EMPTY)
                } else {
                    (Bitboard::EMPTY, Bitboard::from_square(square))
                };
                Some(Unit {
                    square,
                    color: piece.color,
                    role: piece.role,
                    reach: Bitboard::from_square(square),
                    as_pawn,
                    as_piece,
                })
            })
            .collect();
        // A piece's walk depends on nothing but the stuck pieces: while they stay the same, a
        // piece already walked has nowhere new to go (pawns also depend on their victims).
        let mut walked_with: Option<Bitboard> = None;
        loop {
            let reach_of = |color: Color, kings: bool| {
                units
                    .iter()
                    .filter(|u| u.color == color && (kings || u.role != Role::King))
                    .fold(Bitboard::EMPTY, |acc, u| acc | u.reach)
            };
            let captors = ByColor::new_with(|color| reach_of(!color, true));
            let stuck: Bitboard = units
                .iter()
                .filter(|u| u.reach.count() == 1 && !captors.get(u.color).contains(u.square))
                .map(|u| u.square)
                .collect();
            let world = World {
                board,
                stuck,
                victims: ByColor::new_with(|color| reach_of(!color, false)),
                units: &units,
            };
            let grown: Vec<Unit> = units
                .iter()
                .map(|u| {
                    if u.role != Role::Pawn && walked_with == Some(stuck) {
                        *u
                    } else {
                        world.grow(u)
                    }
                })
                .collect();
            walked_with = Some(stuck);
            if grown
                .iter()
                .zip(&units)
                .all(|(new, old)| new.reach == old.reach)
            {
                return Some(Futures { units, stuck });
            }
            if hopeless(&grown) {
                return None;
            }
            units = grown;
        }
    }

    fn king(&self, color: Color) -> Option<&Unit> {
        self.units
            .iter()
            .find(|u| u.color == color && u.role == Role::King)
    }
}

/// What one round of growing the regions reads: the previous round's facts.
struct World<'a> {
    board: &'a Board,
    stuck: Bitboard,
    /// For each colour, the squares where a piece of the other colour that a pawn can capture
    /// (any but the king) can be.
    victims: ByColor<Bitboard>,
    units: &'a [Unit],
}

impl World<'_> {
    fn grow(&self, unit: &Unit) -> Unit {
        let mut grown = *unit;
        let own_stuck = self.stuck & self.board.by_color(unit.color);
        if unit.role == Role::Pawn {
            grown.as_pawn = self.pawn_walk(unit, own_stuck);
            let promotions = grown.as_pawn & Bitboard::from_rank((!unit.color).backrank());
            if promotions.any() {
                let start = promotions | unit.as_piece;
                grown.as_piece = [Role::Queen, Role::Knight]
                    .into_iter()
                    .fold(start, |acc, role| {
                        acc | self.piece_walk(role, unit.color, start, own_stuck)
                    });
            }
        } else {
            grown.as_piece = self.piece_walk(unit.role, unit.color, unit.as_piece, own_stuck);
        }
        grown.reach = grown.as_pawn | grown.as_piece;
        grown
    }

    /// The squares a piece of `role` reaches from `start`: lines are blocked only by stuck
    /// pieces, it never lands on a stuck piece of its own, and a king avoids the squares that a
    /// stuck enemy piece attacks.
    fn piece_walk(
        &self,
        role: Role,
        color: Color,
        start: Bitboard,
        own_stuck: Bitboard,
    ) -> Bitboard {
        let forbidden = if role == Role::King {
            // What a piece that never moves attacks, it attacks for good (a slider at least
            // the squares next to it along its lines).
            (self.stuck & self.board.by_color(!color))
                .into_iter()
                .filter_map(|sq| self.board.piece_at(sq).map(|piece| (sq, piece)))
                .fold(Bitboard::EMPTY, |acc, (sq, piece)| {
                    acc | attacks::attacks(sq, piece, Bitboard::FULL)
                })
        } else {
            Bitboard::EMPTY
        };
        let mut region = start;
        let mut frontier: Vec<Square> = start.into_iter().collect();
        while let Some(sq) = frontier.pop() {
            let steps = attacks::attacks(sq, role.of(color), self.stuck);
            for next in steps & !own_stuck & !forbidden & !region {
                region.add(next);
                frontier.push(next);
            }
        }
        region
    }

    /// The squares a pawn stands on before it promotes: pushes onto squares that can be empty,
    /// short of an enemy pawn it can never pass, and captures where an enemy piece can be.
    fn pawn_walk(&self, pawn: &Unit, own_stuck: Bitboard) -> Bitboard {
        let color = pawn.color;
        let last_rank = Bitboard::from_rank((!color).backrank());
        let barrier = self.confronting(pawn);
        let victims = *self.victims.get(color);
        let mut walk = pawn.as_pawn;
        let mut frontier: Vec<Square> = walk.into_iter().collect();
        while let Some(sq) = frontier.pop() {
            if last_rank.contains(sq) {
                continue;
            }
            let push = forward(color, sq)
                .filter(|front| !self.stuck.contains(*front) && !barrier.contains(*front))
                .map(Bitboard::from_square)
                .unwrap_or_default();
            let captures = attacks::pawn_attacks(color, sq) & victims & !own_stuck;
            for next in (push | captures) & !walk {
                walk.add(next);
                frontier.push(next);
            }
        }
        walk
    }

    /// The squares of its file a pawn can never push onto: from the first enemy pawn ahead on
    /// the file that it can never get past, on. It gets past only if one of them leaves the
    /// file or the enemy pawn is captured on it.
    fn confronting(&self, pawn: &Unit) -> Bitboard {
        let file = Bitboard::from_file(pawn.square.file());
        let left_file = |u: &Unit| (u.reach & !file).any();
        if left_file(pawn) {
            return Bitboard::EMPTY;
        }
        let ahead = |sq: Square| ahead_of(pawn.color, pawn.square, sq);
        let captors = self
            .units
            .iter()
            .filter(|u| u.color == pawn.color && u.square != pawn.square)
            .fold(Bitboard::EMPTY, |acc, u| acc | u.reach);
        let blocker = self
            .units
            .iter()
            .filter(|u| u.color != pawn.color && u.role == Role::Pawn)
            .filter(|u| file.contains(u.square) && ahead(u.square))
            .filter(|u| !left_file(u) && (u.reach & captors).is_empty())
            .min_by_key(|u| u.square.rank().distance(pawn.square.rank()));
        blocker.map_or(Bitboard::EMPTY, |q| {
            file.into_iter()
                .filter(|&sq| sq == q.square || ahead_of(pawn.color, q.square, sq))
                .collect()
        })
    }
}

/// `sq` lies beyond `of` in the direction `color`'s pawns move.
fn ahead_of(color: Color, of: Square, sq: Square) -> bool {
    if color.is_white() {
        sq.rank() > of.rank()
    } else {
        sq.rank() < of.rank()
    }
}

fn forward(color: Color, sq: Square) -> Option<Square> {
    sq.offset(if color.is_white() { 8 } else { -8 })
}

/// Without two pawns locked head-on nothing stays in place for good, and [`cannot_mate`] cannot
/// succeed: the common case, answered before any work.
pub(super) fn may_be_blocked(board: &Board) -> bool {
    let white_pawns = board.pawns() & board.white();
    let black_pawns = board.pawns() & board.black();
    (white_pawns.shift(8) & black_pawns).any()
}

/// Proves that `winner` can never checkmate on this board, or returns `false` (not proven).
///
/// The loser's king lives in its region for good. If no piece of the winner can ever attack a
/// square of it, there is no check, so no mate. If the only pieces that can are bishops on one
/// colour of squares, a mate on square `s` needs every flight square of the other colour (and,
/// with one bishop, the flight squares on the diagonal it does not check along) taken by a piece
/// of the loser, one piece per square, or guarded by the winner's king; when neither is possible
/// on any square of the region, the side can never mate.
///
/// The caller makes sure that no en passant capture is possible (the analysis does not model it
/// for the move at hand) and that no castling right is left (castling moves a king and a rook
/// past each other, in Chess960 even swaps them, which the walks do not model).
pub(super) fn cannot_mate(board: &Board, winner: Color) -> bool {
    if !may_be_blocked(board) {
        return false;
    }
    // A piece other than a bishop that can enter the loser king's region defeats the proof.
    let hopeless = |units: &[Unit]| {
        let king_region = units
            .iter()
            .filter(|u| u.color != winner && u.role == Role::King)
            .fold(Bitboard::EMPTY, |acc, u| acc | u.reach);
        units.iter().any(|u| {
            u.color == winner
                && !matches!(u.role, Role::King | Role::Bishop)
                && (u.reach & king_region).any()
        })
    };
    let Some(futures) = Futures::of(board, hopeless) else {
        return false;
    };
    let (Some(loser_king), Some(winner_king)) = (futures.king(!winner), futures.king(winner))
    else {
        return false;
    };
    let region = loser_king.reach;
    let visitors: Vec<(&Unit, Bitboard)> = futures
        .units
        .iter()
        .filter(|u| u.color == winner && u.role != Role::King)
        .map(|u| (u, u.attacks(futures.stuck)))
        .filter(|(u, attacks)| ((*attacks | u.reach) & region).any())
        .collect();
    let checks = visitors
        .iter()
        .fold(Bitboard::EMPTY, |acc, (_, attacks)| acc | *attacks)
        & region;
    if checks.is_empty() {
        return true;
    }
    if visitors
        .iter()
        .any(|(u, _)| u.role != Role::Bishop || u.promotes())
    {
        return false;
    }
    let squares_of = |(u, _): &(&Unit, Bitboard)| {
        if (u.reach & Bitboard::DARK_SQUARES).any() {
            Bitboard::DARK_SQUARES
        } else {
            Bitboard::LIGHT_SQUARES
        }
    };
    let colour = squares_of(&visitors[0]);
    if visitors.iter().any(|u| squares_of(u) != colour) {
        return false;
    }
    let blockers: Vec<Bitboard> = futures
        .units
        .iter()
        .filter(|u| u.color != winner && u.role != Role::King)
        .map(|u| u.reach)
        .collect();
    for s in checks & colour {
        let flights = attacks::king_attacks(s) & region;
        let other_colour = flights & !colour;
        let options: Vec<Bitboard> = if visitors.len() >= 2 {
            vec![other_colour]
        } else {
            // One bishop checks along one diagonal; the other diagonal's flights stay open.
            let rising = |t: Square| (t.file() > s.file()) == (t.rank() > s.rank());
            let (up, down): (Bitboard, Bitboard) = (
                (flights & colour)
                    .into_iter()
                    .filter(|&t| rising(t))
                    .collect(),
                (flights & colour)
                    .into_iter()
                    .filter(|&t| !rising(t))
                    .collect(),
            );
            vec![other_colour | down, other_colour | up]
        };
        // The winner's king, where it can be and not next to `s`, guards the flights next to
        // it; the empty set stands for a king too far away to guard any.
        let king_posts = winner_king.reach & !attacks::king_attacks(s).with(s);
        let mut guards = king_posts
            .into_iter()
            .map(attacks::king_attacks)
            .filter(|guarded| (*guarded & flights).any())
            .chain([Bitboard::EMPTY]);
        if guards.any(|guarded| {
            options
                .iter()
                .any(|needed| can_fill(*needed & !guarded, &blockers))
        }) {
            return false;
        }
    }
    true
}

/// Whether distinct pieces, each able to reach its square, can stand on every square of
/// `needed` at once (a bipartite matching of squares to pieces).
fn can_fill(needed: Bitboard, reaches: &[Bitboard]) -> bool {
    /// Kuhn's augmenting path: gives `sq` a piece, moving earlier assignments where needed.
    fn assign(
        sq: Square,
        reaches: &[Bitboard],
        holds: &mut [Option<Square>],
        tried: &mut [bool],
    ) -> bool {
        for (piece, reach) in reaches.iter().enumerate() {
            if reach.contains(sq) && !tried[piece] {
                tried[piece] = true;
                if holds[piece].is_none_or(|other| assign(other, reaches, holds, tried)) {
                    holds[piece] = Some(sq);
                    return true;
                }
            }
        }
        false
    }
    if needed.count() > reaches.len() {
        return false;
    }
    let mut holds = vec![None; reaches.len()];
    needed.into_iter().all(|sq| {
        let mut tried = vec![false; reaches.len()];
        assign(sq, reaches, &mut holds, &mut tried)
    })
}

#[cfg(test)]
mod tests {
    use shakmaty::{CastlingMode, Chess, Position, fen::Fen};

    use super::*;

    fn board(fen: &str) -> Board {
        let fen: Fen = fen.parse().expect("FEN");
        let pos: Chess = fen.into_position(CastlingMode::Standard).expect("legal");
        pos.board().clone()
    }

    fn futures(fen: &str) -> Futures {
        Futures::of(&board(fen), |_| false).expect("computed to the end")
    }

    fn reach(futures: &Futures, sq: Square) -> Bitboard {
        futures
            .units
            .iter()
            .find(|u| u.square == sq)
            .map(|u| u.reach)
            .expect("a piece there")
    }

    #[test]
    fn a_locked_chain_is_stuck_and_the_kings_stay_on_their_side() {
        let f = futures("8/8/4k3/1p1p1p1p/1P1P1P1P/8/4K3/8 w - - 0 1");
        assert_eq!(
            f.stuck,
            board("8/8/4k3/1p1p1p1p/1P1P1P1P/8/4K3/8 w - - 0 1").pawns()
        );
        let white_king = reach(&f, Square::E2);
        assert!(white_king.contains(Square::A3) && !white_king.contains(Square::A5));
        assert!((white_king & Bitboard::from_rank(shakmaty::Rank::Sixth)).is_empty());
    }

    #[test]
    fn a_pawn_captures_only_where_a_victim_can_be_and_never_a_king() {
        // The b5 pawn attacks a6, next to the black king, and c6, where no black piece but the
        // king can ever stand (the bishop keeps to dark squares): it never moves.
        let f = futures("8/k1b5/1p1p1p2/1PpP1Pp1/K1P3P1/3B4/8/8 w - - 0 1");
        assert_eq!(reach(&f, Square::B5), Bitboard::from_square(Square::B5));
        assert!(f.stuck.contains(Square::B5));
    }

    #[test]
    fn a_piece_that_never_moves_guards_its_squares_for_good() {
        // The knight on a8 is shut in but guards b6: the black king can never take that pawn.
        let f = futures("N1b1N1N1/1pPpPpPp/1P1P1P1P/4B3/8/8/8/K1k5 w - - 0 1");
        assert!(!reach(&f, Square::C1).contains(Square::B6));
        assert!(f.stuck.contains(Square::A8));
    }

    #[test]
    fn filling_squares_needs_one_piece_per_square() {
        let a = Bitboard::from_square(Square::A1);
        let b = Bitboard::from_square(Square::B1);
        assert!(can_fill(a | b, &[a | b, a]));
        assert!(!can_fill(a | b, &[a, a]));
        assert!(can_fill(Bitboard::EMPTY, &[]));
    }
}

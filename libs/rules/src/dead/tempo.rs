//! The proof that a side can never mate a king that can only shuttle between two squares behind
//! pawns that never move: every mating net it could build either stalemates the king first or
//! needs a square only its own king can cover, and a king cannot cover the square the other king
//! just came from.
//!
//! The situation: the loser has only its king, its pawns and pieces its own pawns shut in for
//! good (which never move, capture or give check); every pawn stands head-on against a
//! pawn and no pawn attacks an enemy one, so — as long as no piece captures a pawn or is offered
//! to one — no pawn ever moves again. The loser's only moves are then its king's, between two
//! squares `a` and `b` (every other square around is its own pawn's or guarded by an enemy
//! pawn). A mate on `x` (one of them) needs `x̄`, the other one, covered. If no piece of the
//! winner can ever attack `x̄`, only its king can cover it; but on the move before the mate the
//! loser's king came from `x̄`, so the winner's king was not beside `x̄` then (kings never touch):
//! the mating move is a king move, and the check on `x` a discovered one, which the proof
//! excludes square by square. A winner's king that steps beside the square the loser's king would
//! go to leaves the loser without a move: stalemate, the game is over. (Positions of this kind
//! are the "dead by tempo" ones of the published unwinnability test set: bishops of one colour
//! against a king on two squares of different colours.)
//!
//! The shuttling side itself can never mate either: it has nothing but its king, pawns that
//! never move and pieces shut in; a king never gives check, and a pawn that never moves never
//! gives a new one (the other king never steps into its attack).
//!
//! Every region here over-approximates what legal play can do, so each "cannot" is sound.

use shakmaty::{Bitboard, Board, Chess, Color, EnPassantMode, Position, Role, Square, attacks};

/// Proves that `side` can never checkmate from `pos` (see the module comment), or returns
/// `false` (not proven): when its own king is the one that shuttles, because it then never
/// gives check; when the opponent's is, because of the tempo argument.
pub(super) fn cannot_mate(pos: &Chess, side: Color) -> bool {
    Frozen::prove(pos, side).is_some()
        || Frozen::prove(pos, !side).is_some_and(|frozen| frozen.winner_cannot_mate(pos))
}

/// What holds for the rest of the game once proven: no pawn ever moves or is captured, the
/// shuttling king (the loser's) never leaves its two squares, and the other side's pieces and
/// king never leave their regions, until the game ends.
struct Frozen {
    winner: Color,
    /// The two squares of the loser's king.
    shuttle: Bitboard,
    /// Each of the winner's pieces other than its king: its role and every square it can ever
    /// reach.
    pieces: Vec<(Role, Bitboard)>,
    /// Every square one of those pieces can ever attack (lines through the loser's king).
    attacked: Bitboard,
    /// Where the winner's king can ever be before the game ends, and the squares among them it
    /// can move on from (not beside the shuttle, except where it stands now).
    king_reach: Bitboard,
    king_origins: Bitboard,
    pawns: Bitboard,
}

impl Frozen {
    /// The proof that the structure stays frozen, with `loser`'s king shuttling, or `None`.
    fn prove(pos: &Chess, loser: Color) -> Option<Frozen> {
        if pos.ep_square(EnPassantMode::Legal).is_some() || pos.castles().castling_rights().any() {
            return None;
        }
        let board = pos.board();
        let winner = !loser;
        let pawns = board.pawns();
        let (winner_pawns, loser_pawns) = (
            pawns & board.by_color(winner),
            pawns & board.by_color(loser),
        );
        if !pawns_frozen(board) {
            return None;
        }
        let loser_king = board.king_of(loser)?;
        let winner_king = board.king_of(winner)?;
        let guarded_by = |by: Bitboard, color: Color| {
            by.into_iter().fold(Bitboard::EMPTY, |acc, sq| {
                acc | attacks::pawn_attacks(color, sq)
            })
        };
        let winner_pawn_guard = guarded_by(winner_pawns, winner);
        let loser_pawn_guard = guarded_by(loser_pawns, loser);
        // A king in check from a pawn would stand on a square a pawn covers for good: the
        // argument below needs both of its squares free of that.
        if winner_pawn_guard.contains(loser_king) {
            return None;
        }
        // Besides its king and pawns the loser may have only pieces its own pawns shut in: they
        // never move, capture or give check, and guard those pawns for good (as long as no pawn
        // and no piece of the winner can take them, checked below).
        let loser_pieces = board.by_color(loser) & !pawns & !board.kings();
        let mut shut_in_guard = Bitboard::EMPTY;
        for square in loser_pieces {
            let attacked = attacks::attacks(square, board.piece_at(square)?, pawns);
            if (attacked & !loser_pawns).any() || winner_pawn_guard.contains(square) {
                return None;
            }
            shut_in_guard |= attacked;
        }
        let loser_guard = loser_pawn_guard | shut_in_guard;

        // Where the loser's king can ever be: away from the pawns and from squares the winner's
        // pawns guard. A winner's pawn it could take would change the structure.
        let shuttle = flood(
            Bitboard::from_square(loser_king),
            attacks::king_attacks,
            !pawns & !loser_pieces & !winner_pawn_guard,
            winner_pawns & !winner_pawn_guard,
        )?;
        if shuttle.count() != 2 {
            return None;
        }
        let around = shuttle
            .into_iter()
            .fold(Bitboard::EMPTY, |acc, sq| acc | attacks::king_attacks(sq))
            & !shuttle;

        // Every square each of the winner's pieces can ever reach (lines blocked by pawns
        // only), and every square it can ever attack from there. A piece that could take a
        // pawn or a shut-in piece, or be taken by a pawn, defeats the proof.
        let mut pieces = Vec::new();
        let mut attacked = Bitboard::EMPTY;
        for square in board.by_color(winner) & !pawns & !board.kings() {
            let role = board.role_at(square)?;
            let piece = role.of(winner);
            let moves = |sq: Square| attacks::attacks(sq, piece, pawns) & !winner_pawns;
            let reach = flood(
                Bitboard::from_square(square),
                moves,
                !loser_pawn_guard,
                loser_pawns | loser_pieces | loser_pawn_guard,
            )?;
            for sq in reach {
                attacked |= attacks::attacks(sq, piece, pawns);
            }
            pieces.push((role, reach));
        }

        // The winner's king never stands beside the shuttle once the game has gone on: the
        // loser's king would have no move, and the game would be over (stalemate, or a mate by
        // a discovered check, which `winner_cannot_mate` rules out). So those squares are
        // reached but not gone on from. Taking an unguarded pawn or shut-in piece of the loser
        // anywhere else changes the structure; taking one beside the shuttle ends the game
        // unless the pawn behind it is freed to move.
        let start = Bitboard::from_square(winner_king);
        let king_moves = |sq: Square| {
            if around.contains(sq) && !start.contains(sq) {
                Bitboard::EMPTY
            } else {
                attacks::king_attacks(sq)
            }
        };
        let king_reach = flood(
            start,
            king_moves,
            !winner_pawns & !loser_guard & !shuttle,
            (loser_pawns | loser_pieces) & !loser_guard & !around,
        )?;
        let frees_a_pawn = (king_reach & loser_pawns).into_iter().any(|sq| {
            sq.offset(if loser.is_white() { -8 } else { 8 })
                .is_some_and(|behind| loser_pawns.contains(behind))
        });
        if frees_a_pawn {
            return None;
        }
        Some(Frozen {
            winner,
            shuttle,
            pieces,
            attacked,
            king_reach,
            king_origins: (king_reach & !around) | start,
            pawns,
        })
    }

    /// The tempo argument (see the module comment): whether the winner can never mate the
    /// shuttling king.
    fn winner_cannot_mate(&self, pos: &Chess) -> bool {
        for x in self.shuttle {
            let other = (self.shuttle & !Bitboard::from_square(x))
                .first()
                .unwrap_or(x);
            if !self.attacked.contains(x) {
                continue; // never in check on x
            }
            if self.attacked.contains(other) {
                return false;
            }
            if self.discovered_check_possible(x, other) {
                return false;
            }
        }
        // The one mate the argument leaves out: on the winner's first move, its king already
        // beside the shuttle (there was no move before it).
        !(pos.turn() == self.winner && mates_at_once(pos, self.winner))
    }

    /// Whether some king move of the winner to a square beside `other` (not beside `x`) could
    /// uncover a line piece's check on `x`.
    fn discovered_check_possible(&self, x: Square, other: Square) -> bool {
        let targets = self.king_reach
            & attacks::king_attacks(other)
            & !attacks::king_attacks(x)
            & !Bitboard::from_square(x);
        self.pieces.iter().any(|(role, reach)| {
            let lines = |sq: Square| match role {
                Role::Bishop => attacks::bishop_attacks(sq, Bitboard::EMPTY),
                Role::Rook => attacks::rook_attacks(sq, Bitboard::EMPTY),
                Role::Queen => attacks::queen_attacks(sq, Bitboard::EMPTY),
                _ => Bitboard::EMPTY,
            };
            reach
                .into_iter()
                .filter(|&s| lines(s).contains(x))
                .any(|s| {
                    let between = attacks::between(s, x);
                    (between & self.pawns).is_empty()
                        && targets.into_iter().any(|to| {
                            !between.contains(to)
                                && (between & self.king_origins & attacks::king_attacks(to)).any()
                        })
                })
        })
    }
}

/// Every pawn stands head-on against a pawn (directly in front of it, either colour: a column
/// of pawns ends against an enemy one), and no pawn attacks an enemy pawn: as long as no piece
/// captures a pawn or is offered to one, no pawn moves again.
fn pawns_frozen(board: &Board) -> bool {
    let pawns = board.pawns();
    let (white, black) = (pawns & board.white(), pawns & board.black());
    let blocked = |own: Bitboard, color: Color| {
        own.into_iter().all(|sq| {
            sq.offset(if color.is_white() { 8 } else { -8 })
                .is_some_and(|front| pawns.contains(front))
        })
    };
    let attacks_any = |own: Bitboard, color: Color, enemy: Bitboard| {
        own.into_iter()
            .any(|sq| (attacks::pawn_attacks(color, sq) & enemy).any())
    };
    blocked(white, Color::White)
        && blocked(black, Color::Black)
        && !attacks_any(white, Color::White, black)
        && !attacks_any(black, Color::Black, white)
}

/// The squares reachable from `start` by `step`s through `allowed` squares; `None` when a step
/// could reach a square of `forbidden` (the start squares included).
fn flood(
    start: Bitboard,
    step: impl Fn(Square) -> Bitboard,
    allowed: Bitboard,
    forbidden: Bitboard,
) -> Option<Bitboard> {
    if (start & forbidden).any() {
        return None;
    }
    let mut reached = start;
    let mut frontier = start;
    while frontier.any() {
        let next = frontier
            .into_iter()
            .fold(Bitboard::EMPTY, |acc, sq| acc | step(sq));
        if (next & forbidden).any() {
            return None;
        }
        frontier = next & allowed & !reached;
        reached |= frontier;
    }
    Some(reached)
}

/// Whether `winner`, to move, has a move that mates.
fn mates_at_once(pos: &Chess, winner: Color) -> bool {
    pos.legal_moves().into_iter().any(|m| {
        let mut next = pos.clone();
        next.play_unchecked(m);
        next.turn() != winner && next.is_checkmate()
    })
}

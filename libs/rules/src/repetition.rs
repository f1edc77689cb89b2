//! Position identity and repetition (Article 9.2; fivefold 9.6.1 from 2014).
//!
//! Positions are compared exactly (no hashing), so an arbiter's verdict never rests on a hash
//! collision. Identity depends on the edition: see [`Identity`].

use std::collections::HashMap;

use serde::Serialize;
use shakmaty::{
    Bitboard, Board, CastlingSide, Chess, Color, EnPassantMode, Move, Position, Square,
};

use crate::ruleset::{Edition, Side};

/// What makes two positions "the same" under an edition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Identity {
    /// 2009 and later: pieces, side to move, castling *rights* and a legally capturable en passant.
    CastlingRights,
    /// 2005: as above, and positions also differ when "the right to castle has been changed
    /// temporarily" (9.2): the key holds which castling moves are possible right now (attacked
    /// square, piece in between) and how many times that set has changed so far in the game. Since
    /// the set itself follows from the pieces and the rights, the clause bites through the change
    /// count: two occurrences are the same only if castling did not become temporarily possible or
    /// impossible between them.
    CastlingAvailability,
}

impl Identity {
    /// The identity rule of `edition`.
    pub const fn of(edition: Edition) -> Self {
        match edition {
            Edition::Fide2005 => Identity::CastlingAvailability,
            _ => Identity::CastlingRights,
        }
    }
}

/// The identity of a position for repetition purposes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PositionKey {
    board: Board,
    turn: Color,
    castling_rights: Bitboard,
    ep_square: Option<Square>,
    /// Bit per (colour, side) castling move possible now; always 0 unless
    /// [`Identity::CastlingAvailability`].
    castling_now: u8,
    /// How many times `castling_now` changed from one ply to the next before this position;
    /// always 0 unless [`Identity::CastlingAvailability`].
    castling_changes: u32,
}

impl PositionKey {
    /// The key of `pos` under `identity`.
    pub fn new(pos: &Chess, identity: Identity) -> Self {
        let castling_now = match identity {
            Identity::CastlingRights => 0,
            Identity::CastlingAvailability => {
                let mut bits = 0u8;
                for (i, (color, side)) in [
                    (Color::White, CastlingSide::KingSide),
                    (Color::White, CastlingSide::QueenSide),
                    (Color::Black, CastlingSide::KingSide),
                    (Color::Black, CastlingSide::QueenSide),
                ]
                .into_iter()
                .enumerate()
                {
                    if castling_possible_now(pos, color, side) {
                        bits |= 1 << i;
                    }
                }
                bits
            }
        };
        PositionKey {
            board: pos.board().clone(),
            turn: pos.turn(),
            castling_rights: pos.castles().castling_rights(),
            ep_square: pos.ep_square(EnPassantMode::Legal),
            castling_now,
            castling_changes: 0,
        }
    }

    /// The key of `pos` when it follows the position with key `previous` in a game.
    pub fn following(pos: &Chess, identity: Identity, previous: &PositionKey) -> Self {
        let mut key = PositionKey::new(pos, identity);
        key.castling_changes =
            previous.castling_changes + u32::from(key.castling_now != previous.castling_now);
        key
    }
}

/// Whether `color` could castle on `side` in this position if it were its turn: it has the
/// right, the squares between king and rook are empty, and the king is not in check and does not
/// pass through or land on an attacked square. For the opponent of the side to move this is the
/// "possible move" of Article 9.2 (2005) that a temporary obstacle takes away.
pub fn castling_possible_now(pos: &Chess, color: Color, side: CastlingSide) -> bool {
    let castles = pos.castles();
    let (Some(rook), Some(king)) = (castles.rook(color, side), pos.board().king_of(color)) else {
        return false;
    };
    let board = pos.board();
    if !(castles.path(color, side) & board.occupied()).is_empty() {
        return false;
    }
    let king_to = side.king_to(color);
    let occupied_without = board.occupied() ^ Bitboard::from(king) ^ Bitboard::from(rook);
    let king_path =
        shakmaty::attacks::between(king, king_to) | Bitboard::from(king) | Bitboard::from(king_to);
    king_path
        .into_iter()
        .all(|sq| board.attacks_to(sq, !color, occupied_without).is_empty())
}

/// One occurrence of a position in a game.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Occurrence {
    /// Half-moves played when the position stood on the board (0 = start position).
    pub ply: u32,
    /// The number of the move that produced the position, as on the scoresheet (0 for a start
    /// position with White to move).
    pub move_number: u32,
    /// The player to move in the position.
    pub to_move: Side,
    /// The caller's reference to the record that produced the position (e.g. an event sequence).
    pub log_ref: u64,
}

/// Every position of one game in order, with where each occurred.
#[derive(Debug, Clone)]
pub struct RepetitionTracker {
    edition: Edition,
    identity: Identity,
    current: Chess,
    /// The position at every ply, so that a take-back restores it exactly.
    positions: Vec<Chess>,
    keys: Vec<PositionKey>,
    occurrences: Vec<Occurrence>,
    by_key: HashMap<PositionKey, Vec<usize>>,
    halfmove_clocks: Vec<u32>,
}

/// Plies of the 2014 fivefold rule: the position after five consecutive alternate moves by each
/// player, i.e. the same position at p, p+4, p+8, p+12 and p+16.
const FIVEFOLD_2014_STRIDE: usize = 4;

impl RepetitionTracker {
    /// Starts a record at `start` (ply 0), produced by the record `log_ref`.
    pub fn new(edition: Edition, start: &Chess, log_ref: u64) -> Self {
        let mut tracker = RepetitionTracker {
            edition,
            identity: Identity::of(edition),
            current: start.clone(),
            positions: Vec::new(),
            keys: Vec::new(),
            occurrences: Vec::new(),
            by_key: HashMap::new(),
            halfmove_clocks: Vec::new(),
        };
        tracker.record(start.clone(), log_ref);
        tracker
    }

    /// The key `pos` would have if it were the next position of the game.
    pub fn next_key(&self, pos: &Chess) -> PositionKey {
        match self.keys.last() {
            Some(previous) => PositionKey::following(pos, self.identity, previous),
            None => PositionKey::new(pos, self.identity),
        }
    }

    fn record(&mut self, pos: Chess, log_ref: u64) {
        let index = self.keys.len();
        let key = self.next_key(&pos);
        let turn = pos.turn();
        let fullmoves = pos.fullmoves().get();
        let move_number = if turn == Color::Black {
            fullmoves
        } else {
            fullmoves.saturating_sub(1)
        };
        self.occurrences.push(Occurrence {
            ply: u32::try_from(index).unwrap_or(u32::MAX),
            move_number,
            to_move: turn.into(),
            log_ref,
        });
        self.halfmove_clocks.push(pos.halfmoves());
        self.by_key.entry(key.clone()).or_default().push(index);
        self.keys.push(key);
        self.positions.push(pos.clone());
        self.current = pos;
    }

    /// Plays a legal move on the current position.
    pub fn play(&mut self, m: Move, log_ref: u64) -> Result<(), IllegalMoveError> {
        if !self.current.is_legal(m) {
            return Err(IllegalMoveError {
                ply: self.ply() + 1,
                uci: m.to_uci(self.current.castles().mode()).to_string(),
            });
        }
        let mut next = self.current.clone();
        next.play_unchecked(m);
        self.record(next, log_ref);
        Ok(())
    }

    /// Records the position reached by the next move when the caller has already played it.
    pub fn push_position(&mut self, pos: &Chess, log_ref: u64) {
        self.record(pos.clone(), log_ref);
    }

    /// Forgets every position after `ply` and restores the position at `ply` (e.g. when an
    /// illegal move is taken back, 7.4/7.5).
    pub fn truncate(&mut self, ply: u32) {
        let keep = (ply as usize + 1).min(self.keys.len()).max(1);
        for (index, key) in self.keys.iter().enumerate().skip(keep) {
            if let Some(list) = self.by_key.get_mut(key) {
                list.retain(|&i| i != index);
            }
        }
        self.by_key.retain(|_, list| !list.is_empty());
        self.keys.truncate(keep);
        self.occurrences.truncate(keep);
        self.halfmove_clocks.truncate(keep);
        self.positions.truncate(keep);
        if let Some(pos) = self.positions.last() {
            self.current = pos.clone();
        }
    }

    /// The position at `ply`, if recorded.
    pub fn position_at(&self, ply: u32) -> Option<&Chess> {
        self.positions.get(ply as usize)
    }

    /// The position at every ply, the one on the board last.
    pub fn positions(&self) -> &[Chess] {
        &self.positions
    }

    /// The edition whose identity rule is applied.
    pub fn edition(&self) -> Edition {
        self.edition
    }

    /// The position on the board.
    pub fn position(&self) -> &Chess {
        &self.current
    }

    /// Half-moves recorded so far (the ply of the current position).
    pub fn ply(&self) -> u32 {
        u32::try_from(self.keys.len().saturating_sub(1)).unwrap_or(u32::MAX)
    }

    /// The occurrence recorded at `ply`.
    pub fn occurrence(&self, ply: u32) -> Option<Occurrence> {
        self.occurrences.get(ply as usize).copied()
    }

    /// Every occurrence of the position with `key`, in order.
    pub fn occurrences_of(&self, key: &PositionKey) -> Vec<Occurrence> {
        self.by_key
            .get(key)
            .map(|list| list.iter().map(|&i| self.occurrences[i]).collect())
            .unwrap_or_default()
    }

    /// Every occurrence of the current position, including the current one.
    pub fn current_occurrences(&self) -> Vec<Occurrence> {
        self.keys
            .last()
            .map(|key| self.occurrences_of(key))
            .unwrap_or_default()
    }

    /// How many times the current position has occurred, including now.
    pub fn repetition_count(&self) -> usize {
        self.keys
            .last()
            .and_then(|key| self.by_key.get(key))
            .map_or(0, Vec::len)
    }

    /// Threefold repetition on the board (9.2): the current position has occurred at least three
    /// times. Returns the occurrences.
    pub fn threefold_on_board(&self) -> Option<Vec<Occurrence>> {
        (self.repetition_count() >= 3).then(|| self.current_occurrences())
    }

    /// Threefold repetition with an intended move (9.2): the position after `intended` would
    /// occur for at least the third time. Returns its earlier occurrences (the would-be one, at
    /// `ply() + 1`, is not included). `None` if the move is illegal or the count falls short.
    pub fn threefold_with_move(&self, intended: Move) -> Option<Vec<Occurrence>> {
        if !self.current.is_legal(intended) {
            return None;
        }
        let mut after = self.current.clone();
        after.play_unchecked(intended);
        let earlier = self.occurrences_of(&self.next_key(&after));
        (earlier.len() >= 2).then_some(earlier)
    }

    /// Every legal move that would complete a threefold repetition, with the earlier occurrences.
    pub fn threefold_intended_moves(&self) -> Vec<(Move, Vec<Occurrence>)> {
        // Only positions since the last capture or pawn move can recur; skip generating the
        // positions after every legal move when none of them has occurred twice yet.
        let window = (self.halfmove_clock() as usize).min(self.keys.len().saturating_sub(1));
        let opponent = !self.current.turn();
        let candidate = self.keys[self.keys.len() - 1 - window..]
            .iter()
            .any(|k| k.turn == opponent && self.by_key.get(k).is_some_and(|l| l.len() >= 2));
        if !candidate {
            return Vec::new();
        }
        self.current
            .legal_moves()
            .into_iter()
            .filter_map(|m| self.threefold_with_move(m).map(|occ| (m, occ)))
            .collect()
    }

    /// Fivefold repetition as an automatic draw under the edition, judged on the current
    /// position: 2018 and later, any five occurrences (9.6.1); 2014, the same position after five
    /// consecutive alternate moves by each player (plies p, p+4, …, p+16). `None` for editions
    /// without the rule. Returns the occurrences it rests on.
    pub fn fivefold(&self) -> Option<Vec<Occurrence>> {
        match self.edition {
            Edition::Fide2018 | Edition::Fide2023 => self.fivefold_any(),
            Edition::Fide2014 => self.fivefold_consecutive(),
            _ => None,
        }
    }

    /// Five occurrences in any order (the 2018+ rule, independent of the edition).
    pub fn fivefold_any(&self) -> Option<Vec<Occurrence>> {
        (self.repetition_count() >= 5).then(|| self.current_occurrences())
    }

    /// Five occurrences on consecutive alternate moves ending now (the 2014 rule).
    pub fn fivefold_consecutive(&self) -> Option<Vec<Occurrence>> {
        let last = self.keys.len().checked_sub(1)?;
        let first = last.checked_sub(4 * FIVEFOLD_2014_STRIDE)?;
        let plies: Vec<usize> = (first..=last).step_by(FIVEFOLD_2014_STRIDE).collect();
        plies
            .iter()
            .all(|&i| self.keys[i] == self.keys[last])
            .then(|| plies.iter().map(|&i| self.occurrences[i]).collect())
    }

    /// The halfmove clock of the current position.
    pub fn halfmove_clock(&self) -> u32 {
        self.halfmove_clocks.last().copied().unwrap_or(0)
    }

    /// The occurrence right after the last capture or pawn move, if it is within the record (the
    /// position where the halfmove clock was last reset).
    pub fn last_reset(&self) -> Option<Occurrence> {
        self.halfmove_clocks
            .iter()
            .rposition(|&clock| clock == 0)
            .map(|i| self.occurrences[i])
    }
}

/// A move that is not legal in the tracked position.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("move {uci} at ply {ply} is not legal")]
pub struct IllegalMoveError {
    pub ply: u32,
    pub uci: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::{CastlingMode, fen::Fen, uci::UciMove};

    fn play(tracker: &mut RepetitionTracker, uci: &str) {
        let m = uci
            .parse::<UciMove>()
            .expect("uci")
            .to_move(tracker.position())
            .expect("legal");
        let next = tracker.ply() + 1;
        tracker.play(m, u64::from(next) * 10).expect("legal");
    }

    #[test]
    fn knight_shuffle_counts_and_log_refs() {
        let mut t = RepetitionTracker::new(Edition::Fide2023, &Chess::default(), 0);
        for _ in 0..2 {
            for m in ["g1f3", "g8f6", "f3g1", "f6g8"] {
                play(&mut t, m);
            }
        }
        assert_eq!(t.repetition_count(), 3);
        let occ = t.threefold_on_board().expect("threefold");
        assert_eq!(occ.iter().map(|o| o.ply).collect::<Vec<_>>(), [0, 4, 8]);
        assert_eq!(
            occ.iter().map(|o| o.log_ref).collect::<Vec<_>>(),
            [0, 40, 80]
        );
        assert_eq!(occ[1].move_number, 2);
    }

    #[test]
    fn truncate_takes_back_moves_and_counts() {
        let mut t = RepetitionTracker::new(Edition::Fide2023, &Chess::default(), 0);
        for m in ["g1f3", "g8f6", "f3g1", "f6g8", "g1f3"] {
            play(&mut t, m);
        }
        assert_eq!(t.repetition_count(), 2);
        t.truncate(3);
        assert_eq!(t.ply(), 3);
        assert_eq!(t.position(), t.position_at(3).expect("ply 3"));
        play(&mut t, "f6g8");
        assert_eq!(t.repetition_count(), 2);
        assert_eq!(
            t.current_occurrences()
                .iter()
                .map(|o| o.ply)
                .collect::<Vec<_>>(),
            [0, 4]
        );
    }

    #[test]
    fn manual_castling_check_matches_legal_moves() {
        let fen: Fen = "r3k2r/8/8/8/8/7b/8/R3K2R w KQkq - 0 1"
            .parse()
            .expect("fen");
        let pos: Chess = fen.into_position(CastlingMode::Standard).expect("pos");
        for side in [CastlingSide::KingSide, CastlingSide::QueenSide] {
            assert_eq!(
                castling_possible_now(&pos, Color::White, side),
                !pos.castling_moves(side).is_empty()
            );
        }
        assert!(!castling_possible_now(
            &pos,
            Color::White,
            CastlingSide::KingSide
        ));
        assert!(castling_possible_now(
            &pos,
            Color::White,
            CastlingSide::QueenSide
        ));
    }
}

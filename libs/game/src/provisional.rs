//! The provisional line: moves seen on the board after the completed ones, in order, that no
//! clock press has confirmed yet. The fold (`evolve`) and the decisions on observations keep it
//! with the same operations, so the line the log describes is the line the decisions reason on.

use shakmaty::{Chess, Move, Position};

use crate::events::MoveProvisional;

/// A move on the board that the clock has not confirmed yet.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Provisional {
    pub(crate) mv: Move,
    pub(crate) event: MoveProvisional,
    /// The observations it rests on.
    pub(crate) device_seqs: Vec<u64>,
}

/// Usually one move; more when a press was missed (pressed before the piece landed) or when
/// moves were reconstructed: the next press completes them all. Plies count from the game's
/// start; `completed` is the number of completed moves the line follows.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ProvisionalLine(Vec<Provisional>);

impl ProvisionalLine {
    /// Where a move of `ply` goes: right after the completed moves or after a provisional one
    /// (replacing what follows). `None` for a ply already completed or beyond the line.
    pub(crate) fn index_of(&self, completed: usize, ply: u32) -> Option<usize> {
        (ply as usize)
            .checked_sub(completed + 1)
            .filter(|&index| index <= self.0.len())
    }

    /// Whether the line holds a move of `ply`.
    pub(crate) fn holds(&self, completed: usize, ply: u32) -> bool {
        self.index_of(completed, ply)
            .is_some_and(|index| index < self.0.len())
    }

    /// Puts `entry` at its ply, in place of that ply's move and those after it; `false` (and
    /// nothing changed) when its ply has no place in the line.
    pub(crate) fn place(&mut self, completed: usize, entry: Provisional) -> bool {
        let Some(index) = self.index_of(completed, entry.event.ply) else {
            return false;
        };
        self.0.truncate(index);
        self.0.push(entry);
        true
    }

    /// Drops the move of `ply` and those after it; `false` when `ply` has no place in the line.
    pub(crate) fn withdraw(&mut self, completed: usize, ply: u32) -> bool {
        let Some(index) = self.index_of(completed, ply) else {
            return false;
        };
        self.0.truncate(index);
        true
    }

    /// `mv` was completed: the line goes on if it was its first move; otherwise (an arbiter
    /// entered another move) what the board showed no longer follows the game.
    pub(crate) fn complete(&mut self, mv: Move) {
        if self.0.first().is_some_and(|first| first.mv == mv) {
            self.0.remove(0);
        } else {
            self.0.clear();
        }
    }

    pub(crate) fn clear(&mut self) {
        self.0.clear();
    }

    /// The line's moves, emptying it (they are completed at once).
    pub(crate) fn take(&mut self) -> Vec<Provisional> {
        std::mem::take(&mut self.0)
    }

    /// The position after the line's moves, played from `completed_position`.
    pub(crate) fn position_after(&self, completed_position: &Chess) -> Chess {
        let mut position = completed_position.clone();
        for p in &self.0 {
            position.play_unchecked(p.mv);
        }
        position
    }

    pub(crate) fn moves(&self) -> &[Provisional] {
        &self.0
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The provisional moves a declared result settles (from interpretation 3): each completed as
/// the board showed it (source `BOARD_SENSOR`, so that it is shown as not confirmed by a press,
/// arbiter or scoresheet), on the record before the game's end. A final king move onto a centre
/// square is left out when `signal`: it may be the first king of the result signal.
pub(crate) fn settled_by_result(
    line: &[Provisional],
    completed_position: &Chess,
    provenance: &crate::events::Provenance,
    signal: bool,
) -> Vec<crate::record::NewEvent> {
    let mut moves = line;
    if signal
        && let Some((last, before)) = line.split_last()
        && last.mv.role() == shakmaty::Role::King
        && boardcast_rules::result_signal::CENTRE.contains(&last.mv.to())
    {
        moves = before;
    }
    completed_as_seen(
        moves,
        completed_position,
        |p| crate::events::Provenance {
            source: crate::events::Source::BoardSensor as i32,
            device_seqs: p.device_seqs.clone(),
            ..provenance.clone()
        },
        None,
    )
}

/// Moves the board showed completed without a press, in order from `completed_position`, each
/// with its provenance; the last one with `final_clocks` (White, Black) when the clock showed
/// them (the moves before it had no reading of their own).
pub(crate) fn completed_as_seen(
    moves: &[Provisional],
    completed_position: &Chess,
    provenance_of: impl Fn(&Provisional) -> crate::events::Provenance,
    final_clocks: Option<(u64, u64)>,
) -> Vec<crate::record::NewEvent> {
    use crate::events::{MoveCompleted, game_event::Kind};
    let mut position = completed_position.clone();
    moves
        .iter()
        .enumerate()
        .map(|(i, p)| {
            position.play_unchecked(p.mv);
            let clocks = final_clocks.filter(|_| i + 1 == moves.len());
            crate::record::NewEvent {
                kind: Kind::MoveCompleted(MoveCompleted {
                    ply: p.event.ply,
                    uci: p.event.uci.clone(),
                    san: p.event.san.clone(),
                    fen_after: crate::state::fen_of(&position),
                    white_remaining_ms: clocks.map(|c| c.0),
                    black_remaining_ms: clocks.map(|c| c.1),
                }),
                provenance: provenance_of(p),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use shakmaty::{CastlingMode, uci::UciMove};

    use super::*;

    fn entry(pos: &Chess, ply: u32, uci: &str) -> Provisional {
        let mv = uci
            .parse::<UciMove>()
            .expect("uci")
            .to_move(pos)
            .expect("legal");
        Provisional {
            mv,
            event: MoveProvisional {
                ply,
                uci: mv.to_uci(CastlingMode::Standard).to_string(),
                ..Default::default()
            },
            device_seqs: Vec::new(),
        }
    }

    #[test]
    fn a_move_replaces_its_ply_and_what_followed() {
        let start = Chess::default();
        let mut line = ProvisionalLine::default();
        assert!(line.place(0, entry(&start, 1, "e2e4")));
        let after = line.position_after(&start);
        assert!(line.place(0, entry(&after, 2, "e7e5")));
        assert_eq!(line.len(), 2);
        // A sliding piece seen further on: ply 1 again drops ply 2.
        assert!(line.place(0, entry(&start, 1, "e2e3")));
        assert_eq!(line.len(), 1);
        // Ply 3 has no place after one provisional move; ply 0 was never a move.
        let after = line.position_after(&start);
        assert!(!line.place(0, entry(&after, 3, "e7e5")));
        assert!(!line.withdraw(0, 0));
        assert_eq!(line.len(), 1);
    }

    #[test]
    fn completing_the_first_move_keeps_the_rest_and_another_move_clears_it() {
        let start = Chess::default();
        let mut line = ProvisionalLine::default();
        let first = entry(&start, 1, "d2d4");
        let first_move = first.mv;
        line.place(0, first);
        let after = line.position_after(&start);
        line.place(0, entry(&after, 2, "d7d5"));
        line.complete(first_move);
        assert_eq!(line.len(), 1);
        assert_eq!(line.index_of(1, 2), Some(0));
        assert!(line.holds(1, 2));
        assert!(
            !line.holds(1, 3),
            "where a move of ply 3 would go, but none is there"
        );
        assert!(!line.holds(1, 1), "completed");
        let other = entry(&after, 2, "g8f6").mv;
        line.complete(other);
        assert!(line.is_empty());
    }
}

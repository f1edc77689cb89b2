//! The clock's two displays: which one is White's, worked out from the presses (a gateway's
//! configured side is only a hint), and presses that would be illegal moves, held in doubt until
//! the presses that follow settle them (Article 7.5.4 asks for certainty that the press happened
//! without a move).

use boardcast_rules::illegal::IllegalKind;
use shakmaty::{Chess, Color, Position};

use crate::device::{ClockDisplay, ClockReading, ClockRun};
use crate::events::{
    ClockPressInDoubt, ClockPressSettled, ClockSidesBasis, ClockSidesEstablished, PressSettlement,
    SetupAspect, SetupMismatch, Side,
};

/// How a new game reads its observations (`GameStarted.interpretation`). 1: clock sides from
/// the evidence, restarts are no presses, presses in doubt. 2: a board that took back a
/// confirmed move and then shows the game going on from it is back on the game, and only moves
/// the provisional line holds are withdrawn. 3: a possible touch-move breach is an alert only
/// when its touches were seen at rest for a real time (`TOUCH_REST_MS`), otherwise a note; a
/// move leaving a dead position completes at once, as mate and stalemate do; a move completed
/// without a press gets the clocks the last reading shows, counted down to that moment; a
/// declared result settles the provisional moves before it. 4: whether a position is dead is
/// also answered from the positions before it (a quiet move that can be taken back leaves a
/// position that is not dead when the one before is not): half the analysis saved, the same
/// answers, except that a position the analysis alone leaves undetermined may be found live.
/// 5: a rejected draw claim's time counts in the clock's prediction (Article 9.5); rejecting an
/// illegal move's penalty proposes the same player's later ones again, counted one lower
/// (`PenaltyRevised`); a claim with a written move names the unconfirmed moves up to the
/// position it is played from; touch-move clauses are cited as the edition numbers them (4.3.1
/// from 2014), and 2005's Article 4.4.b (no castling after the rook was touched first) applies.
/// 6: the released-piece clause is cited as the edition numbers it (4.7 from 2014), and a piece
/// released on a square no legal move takes it to made no move, so moving it on is no breach; a
/// result that replaces another, and a claim ruled against the log's verdict, need a reason.
/// 7: the clock as set for the game is checked when started before the first move; Black's
/// first move is predicted from Black's clock at White's first press; a clock that misses the
/// increment is told as such, and a difference that repeats on the mover's next moves is told
/// once; the game's position seen turned round at any point turns the board's reading (not only
/// the start position); both flags fallen is cited from the Guidelines (III.3.1) from 2018.
/// 8: a flag does not end the game when the clock has not run in this game (left from an
/// earlier game), nor when it falls after the player completed a period's moves and the clock
/// did not add the next period's time at that press nor made it up since (its move counter is
/// wrong: a clock with an evident defect, Article 6.10); each is an alert for the arbiter. Both flags fallen under the
/// Guidelines are said so ("Guidelines III.3.1", not "Article").
pub const CURRENT_INTERPRETATION: u32 = 8;

/// Which display of the clock is White's, as the log has established it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct ClockSides {
    /// Readings whose source does not name its White display are read the other way round.
    reversed: bool,
    /// White's display, when the readings the sides rest on named their source's White display;
    /// then every reading that names one is read by it (a gateway restarted with another
    /// setting mid-game is still read right).
    white_display: ClockDisplay,
    /// `Unspecified` while nothing is established: the readings' labels are taken as they are.
    pub(crate) basis: ClockSidesBasis,
}

impl ClockSides {
    pub(crate) fn from_event(event: &ClockSidesEstablished) -> ClockSides {
        ClockSides {
            reversed: event.reversed,
            white_display: event.white_display(),
            basis: event.basis(),
        }
    }

    pub(crate) fn to_event(self) -> ClockSidesEstablished {
        ClockSidesEstablished {
            reversed: self.reversed,
            white_display: self.white_display as i32,
            basis: self.basis as i32,
        }
    }

    /// Whether `reading`'s White and Black are the other way round.
    pub(crate) fn swaps(&self, reading: &ClockReading) -> bool {
        match (self.white_display, reading.white_display()) {
            (
                white @ (ClockDisplay::Left | ClockDisplay::Right),
                labelled @ (ClockDisplay::Left | ClockDisplay::Right),
            ) => white != labelled,
            _ => self.reversed,
        }
    }

    /// `reading` with White and Black as these sides say.
    pub(crate) fn read(&self, reading: &ClockReading) -> ClockReading {
        if !self.swaps(reading) {
            return *reading;
        }
        ClockReading {
            white_remaining_ms: reading.black_remaining_ms,
            black_remaining_ms: reading.white_remaining_ms,
            running: match reading.running() {
                ClockRun::White => ClockRun::Black,
                ClockRun::Black => ClockRun::White,
                other => other,
            } as i32,
            white_flag: reading.black_flag,
            black_flag: reading.white_flag,
            white_display: reading.white_display,
        }
    }

    /// The event establishing sides under which `reading` is read as these sides read it, or
    /// the other way round (`turn_round`).
    pub(crate) fn establish(
        &self,
        reading: &ClockReading,
        turn_round: bool,
        basis: ClockSidesBasis,
    ) -> ClockSidesEstablished {
        let reversed = self.swaps(reading) != turn_round;
        ClockSidesEstablished {
            reversed,
            white_display: match (reading.white_display(), reversed) {
                (ClockDisplay::Unspecified, _) => ClockDisplay::Unspecified,
                (labelled, false) => labelled,
                (ClockDisplay::Left, true) => ClockDisplay::Right,
                (_, true) => ClockDisplay::Left,
            } as i32,
            basis: basis as i32,
        }
    }
}

/// A display's name in words for people.
pub(crate) fn display_name(display: ClockDisplay) -> &'static str {
    match display {
        ClockDisplay::Left => "left",
        ClockDisplay::Right => "right",
        ClockDisplay::Unspecified => "unnamed",
    }
}

/// The side whose display runs in a reading, if one does.
pub(crate) fn running_side(reading: &ClockReading) -> Option<Color> {
    match reading.running() {
        ClockRun::White => Some(Color::White),
        ClockRun::Black => Some(Color::Black),
        _ => None,
    }
}

/// What the operator is told when the presses show White's time on the other display than the
/// board's source was set up with; `None` when they agree.
pub(crate) fn clock_sides_mismatch(
    board_id: &str,
    reading: &ClockReading,
    sides: &ClockSidesEstablished,
) -> Option<SetupMismatch> {
    if !sides.reversed {
        return None;
    }
    let (expected, seen, fix) = match (reading.white_display(), sides.white_display()) {
        (
            configured @ (ClockDisplay::Left | ClockDisplay::Right),
            white @ (ClockDisplay::Left | ClockDisplay::Right),
        ) => (
            format!(
                "White's time on the clock's {} display (the gateway's --white-clock {})",
                display_name(configured),
                display_name(configured)
            ),
            format!(
                "White's time on the {} display: the clock presses after the moves stopped it",
                display_name(white)
            ),
            format!(
                "Nothing to do for this game: it reads the clock the right way round. For the \
                 next games on board {board_id}, start its gateway with --white-clock {} or \
                 turn the clock round.",
                display_name(white)
            ),
        ),
        _ => (
            "White's time on the display the board's source reports as White's".to_owned(),
            "White's time on the other display: the clock presses after the moves stopped it"
                .to_owned(),
            format!(
                "Nothing to do for this game: it reads the clock the right way round. For the \
                 next games on board {board_id}, set the clock's side in the board's source \
                 (e.g. DGT LiveChess) or turn the clock round."
            ),
        ),
    };
    Some(SetupMismatch {
        aspect: SetupAspect::ClockSides as i32,
        expected,
        seen,
        fix,
    })
}

/// A press in doubt, as the fold keeps it until a later press settles it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PressDoubt {
    pub(crate) game_seq: u64,
    pub(crate) event: ClockPressInDoubt,
    /// The press's reading as its source labelled it: the display that stopped is the one not
    /// running in it, whoever that turns out to be.
    pub(crate) reading: ClockReading,
    /// The press's observation.
    pub(crate) device_seq: u64,
    /// The position the press was made in (the completed moves then).
    pub(crate) position: Chess,
}

impl PressDoubt {
    /// Who pressed, read with `sides`.
    pub(crate) fn presser(&self, sides: &ClockSides) -> Option<Color> {
        running_side(&sides.read(&self.reading)).map(|running| !running)
    }

    /// What a press that completes moves up to `completed_through` (read with the sides now
    /// established) makes of this doubt; `None` while it leaves it open (it completed moves
    /// before the doubt's ply). `reconstructed`: the ply's move was reconstructed rather than
    /// seen.
    pub(crate) fn settle(
        &self,
        sides: &ClockSides,
        completed_through: u32,
        reconstructed: bool,
    ) -> Option<PressSettlement> {
        let mover = self.position.turn();
        let doubt_presser = self.presser(sides);
        if doubt_presser != Some(mover) {
            let read_then = match self.event.presser() {
                Side::White => Some(Color::White),
                Side::Black => Some(Color::Black),
                Side::Unspecified => None,
            };
            // Read with the sides the presses established, the player not to move pressed: an
            // ordinary press (the opponent's clock started, or pressed back).
            return Some(if read_then != doubt_presser {
                PressSettlement::ClockSides
            } else {
                PressSettlement::NotConfirmed
            });
        }
        Some(if completed_through < self.event.ply {
            return None;
        } else if completed_through == self.event.ply && !reconstructed {
            // The player to move pressed without a legal move on the board, then completed the
            // ply with a press of their own (a press completing moves up to this ply is its
            // mover's) on a move the board saw.
            PressSettlement::IllegalMove
        } else {
            PressSettlement::NotConfirmed
        })
    }

    /// The illegal move the doubt turned out to be.
    pub(crate) fn illegal_kind(&self) -> IllegalKind {
        if self.event.without_move {
            IllegalKind::ClockWithoutMove
        } else if crate::terms::unpromoted_pawn(&self.event.placement, self.position.turn()) {
            IllegalKind::UnpromotedPawn
        } else {
            IllegalKind::IllegalMove
        }
    }
}

pub(crate) fn settled(doubt: &PressDoubt, settlement: PressSettlement) -> ClockPressSettled {
    ClockPressSettled {
        doubt_game_seq: doubt.game_seq,
        settlement: settlement as i32,
    }
}

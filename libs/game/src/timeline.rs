//! A game's log entries as a timeline people read — the arbiters' dashboard and an appeals
//! committee's replay alike: what each entry is, its category for filters, its words (every
//! entry, touches included, because whoever reviews a dispute needs every touch; the words
//! themselves are `wording`'s), and the clocks as last known.

use serde::Serialize;

use crate::alerts::{AlertKind, AlertStatus};
use crate::device::{ClockRun, observation};
use crate::events::{GameEvent, Source, arbiter_action::Action, game_event::Kind};
use crate::{Game, GameError, OpenedRecord};

pub use crate::wording::{
    device_state_name, format_clock, kind_name, move_number, source_name, square_name, words,
};

/// The clocks as last known from the log: the last completed move's times, a clock reading, or
/// what an arbiter set.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq, Eq)]
pub struct ClockView {
    pub white_ms: Option<u64>,
    pub black_ms: Option<u64>,
    /// `white`, `black`, `stopped`, or empty when unknown.
    pub running: &'static str,
    /// `move`, `reading`, `arbiter`, or empty when no clock is known yet.
    pub from: &'static str,
    /// The log entry the values come from.
    pub at_game_seq: u64,
}

/// One entry of a game's timeline.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TimelineEntry {
    pub game_seq: u64,
    pub recorded_unix_ms: i64,
    /// Device time of the observations it rests on (0: none, e.g. an arbiter's action).
    pub device_time_unix_ms: i64,
    pub source: &'static str,
    /// The authenticated user who issued it (arbiter actions, set-up).
    pub actor: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub request_id: String,
    pub kind: &'static str,
    /// `move`, `observation`, `clock`, `alert`, `ruling` or `game`: the page's filters.
    pub category: &'static str,
    pub words: String,
    /// The entry raised an alert.
    pub raises_alert: bool,
    #[serde(skip)]
    pub stream_seq: u64,
}

/// A game folded with the aggregate, and its clocks as last known, entry by entry.
#[derive(Clone)]
pub struct FoldedGame {
    pub game: Game,
    pub clocks: ClockView,
}

impl FoldedGame {
    /// Folds the game's first record (its event already opened); also returns whether a clock
    /// reading in it is read the other way round.
    /// The caller has checked the record's signature (this folds what it is given).
    pub fn start(opened: &OpenedRecord) -> Result<(FoldedGame, bool), GameError> {
        let event = opened.event();
        let mut folded = FoldedGame {
            game: Game::from_first_opened(opened)?,
            clocks: ClockView::default(),
        };
        let swapped = folded.track(event);
        Ok((folded, swapped))
    }

    /// Applies the next record (its event already opened); returns whether a clock reading in it
    /// is read the other way round.
    /// The caller has checked the record's signature.
    pub fn apply(&mut self, opened: &OpenedRecord) -> Result<bool, GameError> {
        self.game.apply_opened(opened)?;
        Ok(self.track(opened.event()))
    }

    fn track(&mut self, event: &GameEvent) -> bool {
        let seq = event.game_seq;
        let mut swapped = false;
        match event.kind.as_ref() {
            Some(Kind::ObservationRecorded(o)) => {
                if let Some(observation::Kind::Clock(reading)) =
                    o.observation.as_ref().and_then(|o| o.kind.as_ref())
                {
                    // Read with the sides the game has established (this event changes none).
                    swapped = self.game.clock.sides.swaps(reading);
                    let (white, black) = if swapped {
                        (reading.black_remaining_ms, reading.white_remaining_ms)
                    } else {
                        (reading.white_remaining_ms, reading.black_remaining_ms)
                    };
                    self.clocks = ClockView {
                        white_ms: Some(white),
                        black_ms: Some(black),
                        running: match (reading.running(), swapped) {
                            (ClockRun::White, false) | (ClockRun::Black, true) => "white",
                            (ClockRun::Black, false) | (ClockRun::White, true) => "black",
                            (ClockRun::Stopped, _) => "stopped",
                            (ClockRun::Unspecified, _) => "",
                        },
                        from: "reading",
                        at_game_seq: seq,
                    };
                }
            }
            Some(Kind::MoveCompleted(m))
                if m.white_remaining_ms.is_some() || m.black_remaining_ms.is_some() =>
            {
                self.clocks = ClockView {
                    white_ms: m.white_remaining_ms.or(self.clocks.white_ms),
                    black_ms: m.black_remaining_ms.or(self.clocks.black_ms),
                    // The mover pressed: the opponent's clock runs.
                    running: if m.ply % 2 == 1 { "black" } else { "white" },
                    from: "move",
                    at_game_seq: seq,
                };
            }
            Some(Kind::PositionRestored(r)) => {
                self.clocks.white_ms = r.white_remaining_ms.or(self.clocks.white_ms);
                self.clocks.black_ms = r.black_remaining_ms.or(self.clocks.black_ms);
                self.clocks.from = "arbiter";
                self.clocks.at_game_seq = seq;
            }
            Some(Kind::Arbiter(a)) => {
                if let Some(Action::Clocks(c)) = a.action.as_ref() {
                    // As the aggregate applies them: time added, then clocks set.
                    let adjust = |current: Option<u64>, set: Option<u64>, added: i64| {
                        set.or_else(|| {
                            current
                                .map(|ms| i64::try_from(ms).unwrap_or(i64::MAX))
                                .map(|ms| ms.saturating_add(added).max(0).unsigned_abs())
                        })
                    };
                    self.clocks.white_ms =
                        adjust(self.clocks.white_ms, c.white_remaining_ms, c.white_added_ms);
                    self.clocks.black_ms =
                        adjust(self.clocks.black_ms, c.black_remaining_ms, c.black_added_ms);
                    self.clocks.from = "arbiter";
                    self.clocks.at_game_seq = seq;
                }
                // A confirmed penalty gives the opponent the edition's time (Article 7.5.5).
                if let Some(Action::Penalty(decision)) = a.action.as_ref()
                    && decision.confirmed
                    && let Some(entry) = self
                        .game
                        .illegal_moves()
                        .iter()
                        .find(|e| e.game_seq == decision.illegal_move_game_seq)
                    && entry.event.opponent_bonus_ms > 0
                    // As the game has it: after a restore to before the illegal move, the clocks
                    // set with the restore govern.
                    && entry.completed_moves <= self.game.completed_moves().len()
                {
                    let bonus = entry.event.opponent_bonus_ms;
                    let opponent =
                        if crate::terms::offender(&entry.event) == crate::events::Side::White {
                            &mut self.clocks.black_ms
                        } else {
                            &mut self.clocks.white_ms
                        };
                    *opponent = opponent.map(|ms| ms.saturating_add(bonus));
                    self.clocks.from = "arbiter";
                    self.clocks.at_game_seq = seq;
                }
            }
            // A rejected claim's time, given on the clock at the ruling (Article 9.5), as the
            // game reads it (from interpretation 5: older records replay as they always did).
            Some(Kind::ClaimJudged(judged)) if self.game.info().interpretation >= 5 => {
                if let Some((white, black)) =
                    crate::terms::rejected_claim_time(judged, self.game.turn())
                {
                    let add = |clock: &mut Option<u64>, ms: i64| {
                        *clock = clock.map(|c| c.saturating_add_signed(ms));
                    };
                    add(&mut self.clocks.white_ms, white);
                    add(&mut self.clocks.black_ms, black);
                    self.clocks.from = "arbiter";
                    self.clocks.at_game_seq = seq;
                }
            }
            Some(Kind::Ended(_)) => self.clocks.running = "stopped",
            _ => {}
        }
        swapped
    }
}

impl TimelineEntry {
    /// The timeline entry of `event`; `swapped` as `FoldedGame::apply` returned it.
    /// `edition`: the game's Laws (see `wording::describe`).
    pub fn of(
        event: &GameEvent,
        swapped: bool,
        raises_alert: bool,
        stream_seq: u64,
        edition: Option<&str>,
    ) -> Self {
        let provenance = event.provenance.clone().unwrap_or_default();
        TimelineEntry {
            game_seq: event.game_seq,
            recorded_unix_ms: event.recorded_unix_ms,
            device_time_unix_ms: provenance.device_time_unix_ms,
            source: source_name(provenance.source()),
            actor: provenance.actor,
            request_id: provenance.request_id,
            kind: kind_name(event),
            category: category(event),
            words: words(event, swapped, edition),
            raises_alert,
            stream_seq,
        }
    }
}

/// An alert kind in words, as the queue's heading.
pub fn alert_kind_label(kind: AlertKind) -> &'static str {
    match kind {
        AlertKind::IllegalMove => "Illegal move",
        AlertKind::PossibleTouchMoveBreach => "Possible touch-move breach",
        AlertKind::FlagFall => "Flag fall",
        AlertKind::ThreefoldClaimAvailable => "Threefold repetition claimable",
        AlertKind::FiftyMoveClaimAvailable => "Fifty-move rule claimable",
        AlertKind::AutomaticDraw => "Automatic draw",
        AlertKind::DeadPosition => "Dead position",
        AlertKind::IrregularPlacement => "Irregular placement",
        AlertKind::PressInDoubt => "Clock press in doubt",
        AlertKind::ClockMismatch => "Clock mismatch",
        AlertKind::BoardNotResponding => "Board not responding",
        AlertKind::BatteryLow => "Battery low",
        AlertKind::ObservationsMissing => "Observations missing",
        AlertKind::ClaimOnUnconfirmedMoves => "Claim on unconfirmed moves",
        AlertKind::SetupMismatch => "Set-up mismatch",
        AlertKind::WrittenMoveNotPlayed => "Written move not played",
        AlertKind::ResultChanged => "Result changed",
        AlertKind::RulingAgainstTheLog => "Ruling against the log",
    }
}

pub fn alert_status_name(status: &AlertStatus) -> &'static str {
    match status {
        AlertStatus::New => "new",
        AlertStatus::Acknowledged { .. } => "acknowledged",
        AlertStatus::Resolved { .. } => "resolved",
    }
}

/// The filter an entry belongs to on the game page: `move`, `observation`, `clock`, `alert`,
/// `ruling` or `game`.
pub fn category(event: &GameEvent) -> &'static str {
    let Some(kind) = event.kind.as_ref() else {
        return "game";
    };
    match kind {
        Kind::Started(_) | Kind::SetUpRevised(_) => "game",
        Kind::ObservationRecorded(o) => {
            match o.observation.as_ref().and_then(|o| o.kind.as_ref()) {
                Some(observation::Kind::Clock(_)) => "clock",
                _ => "observation",
            }
        }
        Kind::Touch(_) => "observation",
        // Touches seen only for a moment: noted, not an alert.
        Kind::TouchMove(t) if t.evidence() == crate::events::TouchEvidence::Brief => "observation",
        Kind::TouchMove(_) => "alert",
        Kind::MoveProvisional(_)
        | Kind::ProvisionalWithdrawn(_)
        | Kind::MoveCompleted(_)
        | Kind::Reconstructed(_) => "move",
        Kind::ClockSides(_) | Kind::PressSettled(_) => "clock",
        Kind::Irregularity(_)
        | Kind::IrregularityCleared(_)
        | Kind::IllegalMove(_)
        | Kind::ClockAlert(_)
        | Kind::DeadPositionUndetermined(_)
        | Kind::BoardStatus(_)
        | Kind::ObservationsMissing(_)
        | Kind::SetupMismatch(_)
        | Kind::SetupMismatchCleared(_)
        | Kind::PressInDoubt(_) => "alert",
        Kind::Arbiter(_)
        | Kind::ClaimJudged(_)
        | Kind::PositionRestored(_)
        | Kind::PenaltyRevised(_) => "ruling",
        Kind::Ended(_) => {
            let by_arbiter = event
                .provenance
                .as_ref()
                .is_some_and(|p| p.source() == Source::Arbiter);
            if by_arbiter { "ruling" } else { "game" }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{BoardPlacement, ClockReading, Observation, Piece, PieceLifted};
    use crate::events::{
        AlertAcknowledgement, ArbiterAction, MoveCompleted, ObservationRecorded, PenaltyDecision,
        Provenance,
    };

    fn event(kind: Kind) -> GameEvent {
        GameEvent {
            game_id: "g".into(),
            game_seq: 5,
            recorded_unix_ms: 1,
            provenance: Some(Provenance::default()),
            kind: Some(kind),
        }
    }

    fn observed(kind: observation::Kind) -> GameEvent {
        event(Kind::ObservationRecorded(ObservationRecorded {
            observation: Some(Observation {
                board_id: "b".into(),
                device_seq: 42,
                kind: Some(kind),
                ..Default::default()
            }),
        }))
    }

    #[test]
    fn lifts_placements_and_readings_are_in_words() {
        let lifted = observed(observation::Kind::Lifted(PieceLifted {
            square: 6,
            piece: Piece::WhiteKnight as i32,
        }));
        assert_eq!(
            words(&lifted, false, None),
            "#42 white knight lifted from g1"
        );
        assert_eq!(category(&lifted), "observation");
        assert_eq!(kind_name(&lifted), "piece_lifted");

        let placement = observed(observation::Kind::Placement(BoardPlacement {
            placement: "8/8/8/8/8/8/8/8".into(),
        }));
        assert_eq!(
            words(&placement, false, None),
            "#42 board shows 8/8/8/8/8/8/8/8"
        );

        let reading = observed(observation::Kind::Clock(ClockReading {
            white_remaining_ms: 5_400_000,
            black_remaining_ms: 5_399_000,
            running: ClockRun::White as i32,
            ..Default::default()
        }));
        assert_eq!(
            words(&reading, false, None),
            "#42 clock reading: White 1:30:00, Black 1:29:59, White's clock running"
        );
        assert_eq!(category(&reading), "clock");
        // Read with the sides the log established: the displays are the other way round.
        let swapped = words(&reading, true, None);
        assert!(
            swapped.starts_with(
                "#42 clock reading: White 1:29:59, Black 1:30:00, Black's clock running"
            ),
            "{swapped}"
        );
    }

    #[test]
    fn moves_and_rulings_are_in_words() {
        let completed = event(Kind::MoveCompleted(MoveCompleted {
            ply: 4,
            uci: "g8f6".into(),
            san: "Nf6".into(),
            white_remaining_ms: Some(60_000),
            black_remaining_ms: Some(59_000),
            ..Default::default()
        }));
        assert_eq!(
            words(&completed, false, None),
            "ply 4: 2… Nf6 completed (White 0:01:00, Black 0:00:59)"
        );
        assert_eq!(category(&completed), "move");

        let ack = event(Kind::Arbiter(ArbiterAction {
            action: Some(Action::Acknowledgement(AlertAcknowledgement {
                alert_game_seq: 12,
                note: "on my way".into(),
            })),
            resolves_alerts: vec![],
        }));
        assert_eq!(
            words(&ack, false, None),
            "alert of log entry 12 acknowledged: on my way"
        );
        assert_eq!(category(&ack), "ruling");

        let penalty = event(Kind::Arbiter(ArbiterAction {
            action: Some(Action::Penalty(PenaltyDecision {
                illegal_move_game_seq: 30,
                confirmed: true,
                note: String::new(),
            })),
            resolves_alerts: vec![30],
        }));
        let text = words(&penalty, false, None);
        assert!(
            text.contains("penalty for the illegal move of log entry 30 confirmed"),
            "{text}"
        );
        assert!(
            text.ends_with("(resolves the alerts of log entries 30)"),
            "{text}"
        );
    }

    #[test]
    fn move_numbers_and_squares() {
        assert_eq!(move_number(1), "1.");
        assert_eq!(move_number(2), "1…");
        assert_eq!(move_number(23), "12.");
        assert_eq!(square_name(0), "a1");
        assert_eq!(square_name(63), "h8");
        assert_eq!(square_name(64), "square 64");
        assert_eq!(format_clock(5_400_999), "1:30:00");
    }
}

//! Folding board and clock observations into game events.
//!
//! Every observation that can matter is recorded in the game's log as it came
//! (`ObservationRecorded`), followed by what it means. What it means is decided by move
//! inference (`boardcast_inference`) over the recorded observations: touches, provisional moves
//! and their revisions, moves completed by the clock press (Article 6.7), reconstructed moves,
//! irregular placements, completed illegal moves with the edition's penalty proposed, and the
//! players' result signal. Because the engine only ever sees recorded observations, folding the
//! log rebuilds it exactly. Clock readings that are not a press (the clock's once-a-second
//! ticks) are neither recorded nor folded.

use boardcast_inference::{Event as InferenceEvent, Input, IrregularityCause, Output, PlyMove};
use boardcast_rules::illegal::{IllegalKind, IllegalMoveCase, IllegalPenalty, judge_illegal_move};
use boardcast_rules::touch::{Touch, TouchAction, check_touches};
use boardcast_schema::pieces::{board_piece, device_piece};
use shakmaty::{Board, Chess, Color, Piece, Position, Square, uci::UciMove};

use crate::clock::{ClockSides, clock_sides_mismatch, running_side, settled};
use crate::device::{ClockReading, ClockRun, DeviceState, DeviceStatus, Observation, observation};
use crate::events::{
    BoardStatusChanged, ClockAlert, ClockPressInDoubt, ClockSidesBasis, GameEnded, GameResult,
    IllegalMoveRecorded, IrregularityCleared, IrregularityObserved, MoveCompleted, MoveProvisional,
    MovesReconstructed, ObservationRecorded, ObservationsMissing, PossibleTouchMoveBreach,
    PressSettlement, Provenance, ProvisionalMoveWithdrawn, SetupAspect, SetupMismatch,
    SetupMismatchCleared, Side, Source, Termination, TouchObserved, game_event::Kind,
};
use crate::events::{IrregularityCause as Cause, PenaltyKind};
use crate::game::{ClockChange, Game, NewEvent, fen_of};
use crate::terms::{self, side_of};
use crate::wording;

/// Where a move of `ply` goes in a provisional line after `completed` moves; `None` for a ply
/// already completed or beyond the line.
pub(crate) fn line_index(completed: usize, line_len: usize, ply: u32) -> Option<usize> {
    (ply as usize)
        .checked_sub(completed + 1)
        .filter(|&index| index <= line_len)
}

/// A battery at or below this is reported to the arbiter once (a board that dies mid-game loses
/// its moves until it is back).
pub const LOW_BATTERY_PERCENT: u32 = 20;

/// Why an observation changed nothing. Each is normal on a live board; the service logs them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ignored {
    /// Already applied (same or older `device_seq`).
    Duplicate { device_seq: u64, last_applied: u64 },
    /// The game has ended.
    GameOver,
    /// A clock reading that is not a press: the clock ticking.
    ClockTick,
    /// From the game played on the board before this one was set up there.
    EarlierGame {
        device_seq: u64,
        earlier_game_last: u64,
    },
    /// Recorded as missing before it arrived: the game has moved on without it.
    AfterItsGap { device_seq: u64 },
}

/// Why an observation cannot be used at all: the payload is wrong, not the game.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejected {
    #[error("observation for board {got} sent to the game on board {expected}")]
    WrongBoard { expected: String, got: String },
    #[error("observation without content")]
    Empty,
    #[error("invalid placement {placement:?}: {reason}")]
    InvalidPlacement { placement: String, reason: String },
    #[error("square {0} does not exist (squares are 0 = a1 to 63 = h8)")]
    InvalidSquare(u32),
    #[error("piece code {0} is not a piece")]
    InvalidPiece(i32),
    #[error("clock reading without a running state")]
    ClockWithoutState,
    #[error(
        "observation {device_seq} is {} ahead of the board's last one ({accounted}): no board \
         sends that many; a corrupt or hostile number",
        device_seq.saturating_sub(*accounted)
    )]
    ImplausibleSequence { device_seq: u64, accounted: u64 },
    #[error("a clock showing {ms} ms ({} h): more than a day is no chess clock's", ms / 3_600_000)]
    ImplausibleClock { ms: u64 },
    #[error("the observation is {bytes} bytes; at most {MAX_OBSERVATION_BYTES} are used")]
    TooLarge { bytes: usize },
}

/// The most a board's `device_seq` may jump ahead of its last observation: far more than a board
/// sends in an event (a running clock reports once a second), far less than a corrupt number.
pub const MAX_DEVICE_SEQ_JUMP: u64 = 10_000_000;
/// The highest first `device_seq` of a board nothing is known of (its earlier observations
/// purged, a counter kept for years): 2^53, far below a corrupt number near 2^64.
pub const MAX_FIRST_DEVICE_SEQ: u64 = 1 << 53;

/// Whether `device_seq` can follow a board's last accounted observation `accounted` (0: none).
pub fn plausible_device_seq(accounted: u64, device_seq: u64) -> bool {
    if accounted == 0 {
        device_seq <= MAX_FIRST_DEVICE_SEQ
    } else {
        device_seq.saturating_sub(accounted) <= MAX_DEVICE_SEQ_JUMP
    }
}
/// The most a clock may show: no time control gives a player a day.
pub const MAX_CLOCK_MS: u64 = 24 * 3_600_000;
/// The largest observation used (a placement or a status is well under 1 KB): its record must fit
/// a NATS message whatever the server's limit.
pub const MAX_OBSERVATION_BYTES: usize = 4_096;

#[derive(Debug, Clone, PartialEq)]
pub enum ObservationOutcome {
    Events(Vec<NewEvent>),
    Ignored(Ignored),
}

/// A lift or placement as the touch-move rules read it.
pub(crate) fn touch_of(obs: &Observation) -> Option<Touch> {
    match obs.kind.as_ref()? {
        observation::Kind::Lifted(l) => Some(Touch {
            action: TouchAction::Lift,
            square: square(l.square).ok()?,
            piece: piece(l.piece).ok()?,
        }),
        observation::Kind::Placed(p) => Some(Touch {
            action: TouchAction::Place,
            square: square(p.square).ok()?,
            piece: piece(p.piece).ok()?,
        }),
        _ => None,
    }
}

fn piece(code: i32) -> Result<Piece, Rejected> {
    board_piece(code).ok_or(Rejected::InvalidPiece(code))
}

fn square(index: u32) -> Result<Square, Rejected> {
    if index < 64 {
        Ok(Square::new(index))
    } else {
        Err(Rejected::InvalidSquare(index))
    }
}

fn uci(mv: &PlyMove) -> String {
    UciMove::from_standard(mv.mv).to_string()
}

impl Game {
    /// The engine input an observation gives, or `None` when it gives none (device status, a
    /// clock that keeps running on the same side). The same function serves `decide` and the
    /// fold, so both feed the engine alike.
    pub(crate) fn inference_input(&self, obs: &Observation) -> Option<Input> {
        let event = match obs.kind.as_ref()? {
            observation::Kind::Lifted(l) => InferenceEvent::Lifted {
                square: square(l.square).ok()?,
            },
            observation::Kind::Placed(p) => InferenceEvent::Placed {
                square: square(p.square).ok()?,
                piece: piece(p.piece).ok()?,
            },
            observation::Kind::Placement(p) => InferenceEvent::Placement(p.placement.parse().ok()?),
            observation::Kind::Clock(c) => {
                // Any reading that is not a press is the clock ticking: time passes for the
                // inference.
                match self.press_by(self.clock_sides.read(c).running()) {
                    Some(side) => InferenceEvent::ClockPressed { side },
                    None => InferenceEvent::Tick,
                }
            }
            observation::Kind::Status(_) => return None,
        };
        Some(Input {
            seq: obs.device_seq,
            time_ms: obs.device_time_unix_ms,
            event,
        })
    }

    /// Who pressed, when the clock (read with the game's sides) now runs `running`: a press is
    /// the running side changing, and the side that stopped pressed. From interpretation 1 a
    /// clock that runs again after it stood (started, or restarted by the arbiter) is no press.
    fn press_by(&self, running: ClockRun) -> Option<Color> {
        match (self.interpretation, self.clock_running, running) {
            (0, before, ClockRun::Black) if before != ClockRun::Black => Some(Color::White),
            (0, before, ClockRun::White) if before != ClockRun::White => Some(Color::Black),
            (_, ClockRun::White, ClockRun::Black) => Some(Color::White),
            (_, ClockRun::Black, ClockRun::White) => Some(Color::Black),
            _ => None,
        }
    }

    fn check_payload(obs: &Observation) -> Result<(), Rejected> {
        let bytes = prost::Message::encoded_len(obs);
        if bytes > MAX_OBSERVATION_BYTES {
            return Err(Rejected::TooLarge { bytes });
        }
        match obs.kind.as_ref().ok_or(Rejected::Empty)? {
            observation::Kind::Lifted(l) => square(l.square).map(|_| ()),
            observation::Kind::Placed(p) => {
                square(p.square)?;
                piece(p.piece).map(|_| ())
            }
            observation::Kind::Placement(p) => {
                p.placement
                    .parse::<Board>()
                    .map(|_| ())
                    .map_err(|e| Rejected::InvalidPlacement {
                        placement: p.placement.clone(),
                        reason: e.to_string(),
                    })
            }
            observation::Kind::Clock(c) => {
                if let Some(ms) = [c.white_remaining_ms, c.black_remaining_ms]
                    .into_iter()
                    .find(|ms| *ms > MAX_CLOCK_MS)
                {
                    return Err(Rejected::ImplausibleClock { ms });
                }
                match ClockRun::try_from(c.running) {
                    Ok(ClockRun::Unspecified) | Err(_) => Err(Rejected::ClockWithoutState),
                    Ok(_) => Ok(()),
                }
            }
            observation::Kind::Status(_) => Ok(()),
        }
    }

    /// Decides what an observation of this game's board means.
    pub fn decide_observation(&self, obs: &Observation) -> Result<ObservationOutcome, Rejected> {
        if obs.board_id != self.info.board_id {
            return Err(Rejected::WrongBoard {
                expected: self.info.board_id.clone(),
                got: obs.board_id.clone(),
            });
        }
        Self::check_payload(obs)?;
        let accounted = self.board_seq_accounted();
        if !plausible_device_seq(accounted, obs.device_seq) {
            return Err(Rejected::ImplausibleSequence {
                device_seq: obs.device_seq,
                accounted,
            });
        }
        if obs.device_seq <= self.board_seq_floor {
            return Ok(ObservationOutcome::Ignored(Ignored::EarlierGame {
                device_seq: obs.device_seq,
                earlier_game_last: self.board_seq_floor,
            }));
        }
        if self
            .missing
            .iter()
            .any(|m| (m.first_device_seq..=m.last_device_seq).contains(&obs.device_seq))
        {
            return Ok(ObservationOutcome::Ignored(Ignored::AfterItsGap {
                device_seq: obs.device_seq,
            }));
        }
        if obs.device_seq <= self.last_device_seq {
            return Ok(ObservationOutcome::Ignored(Ignored::Duplicate {
                device_seq: obs.device_seq,
                last_applied: self.last_device_seq,
            }));
        }
        if self.is_over() {
            return Ok(ObservationOutcome::Ignored(Ignored::GameOver));
        }
        if self.interpretation >= 1 {
            return Ok(self.decide_by_evidence(obs));
        }
        let input = self.inference_input(obs);
        let is_tick = input
            .as_ref()
            .is_some_and(|i| matches!(i.event, InferenceEvent::Tick));
        if let (true, Some(observation::Kind::Clock(c))) = (is_tick, &obs.kind) {
            // The clock ticking is recorded only when it matters: the board's quiet period ended
            // with it (inference concluded something: a reconstruction, an irregularity) or a
            // flag changed. Unrecorded ticks change nothing, so folding the log sees the same.
            let flags_changed = (c.white_flag, c.black_flag) != self.flags;
            // Most ticks: known to conclude nothing without running a copy of the engine.
            let idle = input
                .as_ref()
                .is_none_or(|i| self.inference.tick_would_be_idle(i.time_ms));
            if idle && !flags_changed {
                return Ok(ObservationOutcome::Ignored(Ignored::ClockTick));
            }
            let mut engine = self.inference.clone();
            let outputs = input.map(|i| engine.observe(i)).unwrap_or_default();
            if outputs.is_empty() && !flags_changed {
                return Ok(ObservationOutcome::Ignored(Ignored::ClockTick));
            }
            let mut events = vec![NewEvent {
                kind: Kind::ObservationRecorded(ObservationRecorded {
                    observation: Some(obs.clone()),
                }),
                provenance: self.provenance(obs, Source::Clock, vec![obs.device_seq]),
            }];
            if flags_changed && let Some(end) = self.flag_verdict(c.white_flag, c.black_flag) {
                events.push(game_ended(
                    end,
                    self.provenance(obs, Source::Clock, vec![obs.device_seq]),
                ));
                return Ok(ObservationOutcome::Events(events));
            }
            let follows_game = self.follows_game(&engine);
            let clocks = Some((c.white_remaining_ms, c.black_remaining_ms));
            events.extend(self.meaning(obs, outputs, follows_game, clocks));
            return Ok(ObservationOutcome::Events(events));
        }
        let mut events = vec![NewEvent {
            kind: Kind::ObservationRecorded(ObservationRecorded {
                observation: Some(obs.clone()),
            }),
            provenance: self.provenance(obs, Source::BoardSensor, vec![obs.device_seq]),
        }];
        if let Some(input) = input {
            let mut engine = self.inference.clone();
            let outputs = engine.observe(input);
            let follows_game = self.follows_game(&engine);
            let clocks = match &obs.kind {
                Some(observation::Kind::Clock(c)) => {
                    Some((c.white_remaining_ms, c.black_remaining_ms))
                }
                _ => None,
            };
            events.extend(self.meaning(obs, outputs, follows_game, clocks));
        }
        if let Some(observation::Kind::Status(status)) = &obs.kind {
            events.extend(self.board_status_change(obs, status));
        }
        Ok(ObservationOutcome::Events(events))
    }

    /// `decide_observation` from interpretation 1: the clock's sides from the evidence, presses
    /// that would be illegal moves held in doubt (see the `clock` module).
    fn decide_by_evidence(&self, obs: &Observation) -> ObservationOutcome {
        let basis = vec![obs.device_seq];
        let Some(observation::Kind::Clock(raw)) = &obs.kind else {
            let mut events = vec![self.recorded(obs, Source::BoardSensor)];
            if let Some(input) = self.inference_input(obs) {
                let mut engine = self.inference.clone();
                let outputs = engine.observe(input);
                events = self.conclude(obs, self.clock_sides, events, &engine, outputs, None);
            }
            if let Some(observation::Kind::Status(status)) = &obs.kind {
                events.extend(self.board_status_change(obs, status));
            }
            return ObservationOutcome::Events(events);
        };
        let mut sides = self.clock_sides;
        let mut prefix = Vec::new();
        // The clock started before any move: the Laws start White's clock, so its running
        // display is White's until a press completing a move says otherwise.
        if sides.basis == ClockSidesBasis::Unspecified
            && self.moves.is_empty()
            && self.inference.moves().is_empty()
            && !matches!(self.clock_running, ClockRun::White | ClockRun::Black)
            && let Some(running) = running_side(&sides.read(raw))
        {
            let event =
                sides.establish(raw, running == Color::Black, ClockSidesBasis::ClockStarted);
            sides = ClockSides::from_event(&event);
            prefix.push(NewEvent {
                kind: Kind::ClockSides(event),
                provenance: self.provenance(obs, Source::Clock, basis.clone()),
            });
        }
        let reading = sides.read(raw);
        let time_ms = obs.device_time_unix_ms;
        if let Some(presser) = self.press_by(reading.running()) {
            return ObservationOutcome::Events(self.decide_press(obs, raw, presser));
        }
        // The clock ticking, stopping or running again: recorded when the running side or a
        // flag changed, or the board's quiet period ended with it.
        let flags_changed = (reading.white_flag, reading.black_flag) != self.flags;
        let changed =
            flags_changed || reading.running() != self.clock_running || !prefix.is_empty();
        if !changed && self.inference.tick_would_be_idle(time_ms) {
            return ObservationOutcome::Ignored(Ignored::ClockTick);
        }
        let mut engine = self.inference.clone();
        let outputs = engine.observe(Input {
            seq: obs.device_seq,
            time_ms,
            event: InferenceEvent::Tick,
        });
        if outputs.is_empty() && !changed {
            return ObservationOutcome::Ignored(Ignored::ClockTick);
        }
        let clocks = Some((reading.white_remaining_ms, reading.black_remaining_ms));
        if flags_changed
            && let Some(end) = self.flag_verdict(reading.white_flag, reading.black_flag)
        {
            let mut events = prefix;
            events.push(self.recorded(obs, Source::Clock));
            events.push(game_ended(end, self.provenance(obs, Source::Clock, basis)));
            return ObservationOutcome::Events(events);
        }
        prefix.push(self.recorded(obs, Source::Clock));
        ObservationOutcome::Events(self.conclude(obs, sides, prefix, &engine, outputs, clocks))
    }

    /// A clock press, read with the game's sides. When the press would be one without a move
    /// but completes the move on the board if the displays are read the other way round, the
    /// clock's sides are the other way round (set up so, or the clock turned round): recorded,
    /// and the press is read so.
    fn decide_press(&self, obs: &Observation, raw: &ClockReading, presser: Color) -> Vec<NewEvent> {
        let press = |side| Input {
            seq: obs.device_seq,
            time_ms: obs.device_time_unix_ms,
            event: InferenceEvent::ClockPressed { side },
        };
        let mut engine = self.inference.clone();
        let outputs = engine.observe(press(presser));
        let without_move = outputs
            .iter()
            .any(|o| matches!(o, Output::ClockPressWithoutMove { .. }));
        // Sides a press has established change only with a clock that stood since the last
        // move (an arbiter turning it round stops it), or when an earlier press in doubt was an
        // ordinary one read the other way round too (the clock turned round while the board did
        // not see it stand); otherwise the press stays in doubt.
        let turned_sides = || {
            ClockSides::from_event(&self.clock_sides.establish(
                raw,
                true,
                ClockSidesBasis::MovePress,
            ))
        };
        let sides_may_change = |turned: &ClockSides| {
            self.clock_sides.basis != ClockSidesBasis::MovePress
                || self.clock_stood
                || self
                    .doubts
                    .iter()
                    .any(|d| d.presser(turned) != Some(d.position.turn()))
        };
        if without_move && sides_may_change(&turned_sides()) && !self.completes(&engine, &outputs) {
            let mut turned = self.inference.clone();
            let turned_outputs = turned.observe(press(!presser));
            if self.completes(&turned, &turned_outputs) {
                let event = self
                    .clock_sides
                    .establish(raw, true, ClockSidesBasis::MovePress);
                let sides = ClockSides::from_event(&event);
                let reading = sides.read(raw);
                let mut prefix = vec![NewEvent {
                    kind: Kind::ClockSides(event),
                    provenance: self.provenance(obs, Source::Clock, vec![obs.device_seq]),
                }];
                prefix.extend(self.clock_sides_told(obs, raw, &event));
                prefix.push(self.recorded(obs, Source::Clock));
                let clocks = Some((reading.white_remaining_ms, reading.black_remaining_ms));
                return self.conclude(obs, sides, prefix, &turned, turned_outputs, clocks);
            }
        }
        let reading = self.clock_sides.read(raw);
        let clocks = Some((reading.white_remaining_ms, reading.black_remaining_ms));
        let prefix = vec![self.recorded(obs, Source::Clock)];
        self.conclude(obs, self.clock_sides, prefix, &engine, outputs, clocks)
    }

    /// How many moves of the provisional `line` count before the ply being played: all of them
    /// from interpretation 1, none before (as those logs were decided).
    fn line_ahead<T>(&self, line: &[T]) -> u32 {
        if self.interpretation >= 1 {
            u32::try_from(line.len()).unwrap_or(u32::MAX)
        } else {
            0
        }
    }

    /// Whether the engine's conclusions complete a move of the game.
    fn completes(&self, engine: &boardcast_inference::Inference, outputs: &[Output]) -> bool {
        let completed = self.moves.len() as u32;
        self.follows_game(engine)
            && outputs
                .iter()
                .any(|o| matches!(o, Output::MoveConfirmed { mv, .. } if mv.ply > completed))
    }

    /// The events of a decision from interpretation 1: `prefix` (what is recorded first), then,
    /// when the engine's conclusions complete a move, the clock's sides confirmed by it and the
    /// presses in doubt it settles, then what the conclusions mean. `sides` are the sides the
    /// decision reads the clock with (new ones are in `prefix`).
    fn conclude(
        &self,
        obs: &Observation,
        sides: ClockSides,
        mut events: Vec<NewEvent>,
        engine: &boardcast_inference::Inference,
        outputs: Vec<Output>,
        clocks: Option<(u64, u64)>,
    ) -> Vec<NewEvent> {
        if self.completes(engine, &outputs) {
            let completed = self.moves.len() as u32;
            let confirmed: Vec<(u32, Vec<u64>)> = outputs
                .iter()
                .filter_map(|o| match o {
                    Output::MoveConfirmed { mv, basis } if mv.ply > completed => {
                        Some((mv.ply, basis.clone()))
                    }
                    _ => None,
                })
                .collect();
            let through = confirmed
                .iter()
                .map(|(ply, _)| *ply)
                .max()
                .unwrap_or(completed);
            let press_basis = confirmed
                .last()
                .map(|(_, basis)| basis.clone())
                .unwrap_or_else(|| vec![obs.device_seq]);
            if sides.basis != ClockSidesBasis::MovePress {
                let event = crate::events::ClockSidesEstablished {
                    basis: ClockSidesBasis::MovePress as i32,
                    ..sides.to_event()
                };
                // The reading the sides were confirmed on: this one, or the press waited for.
                let raw = match &obs.kind {
                    Some(observation::Kind::Clock(c)) => Some(*c),
                    _ => self.last_clock,
                };
                if let Some(raw) = raw {
                    events.extend(self.clock_sides_told(obs, &raw, &event));
                }
                events.insert(
                    0,
                    NewEvent {
                        kind: Kind::ClockSides(event),
                        provenance: self.provenance(obs, Source::Clock, press_basis.clone()),
                    },
                );
            }
            let reconstructed = |ply: u32| {
                self.reconstructed.contains(&ply)
                    || outputs.iter().any(|o| {
                        matches!(o, Output::Reconstructed { moves, .. }
                            if moves.iter().any(|m| m.ply == ply))
                    })
            };
            let mut tally = self.illegal_tally;
            for doubt in &self.doubts {
                let Some(settlement) =
                    doubt.settle(&sides, through, reconstructed(doubt.event.ply))
                else {
                    continue;
                };
                let mut basis = vec![doubt.device_seq];
                basis.extend(press_basis.iter().copied());
                events.push(NewEvent {
                    kind: Kind::PressSettled(settled(doubt, settlement)),
                    provenance: self.provenance(obs, Source::Clock, basis.clone()),
                });
                if settlement == PressSettlement::IllegalMove {
                    events.push(self.illegal_move(
                        obs,
                        doubt.event.ply,
                        &doubt.position,
                        doubt.position.turn(),
                        doubt.illegal_kind(),
                        doubt.event.placement.clone(),
                        &mut tally,
                        basis,
                    ));
                }
            }
        }
        let follows_game = self.follows_game(engine);
        events.extend(self.meaning(obs, outputs, follows_game, clocks));
        events
    }

    /// What the operator is told when the clock's sides are established by a press: a set-up
    /// alert when they are not as the board's source was set up, or the alert's end when they
    /// are again.
    fn clock_sides_told(
        &self,
        obs: &Observation,
        raw: &ClockReading,
        sides: &crate::events::ClockSidesEstablished,
    ) -> Option<NewEvent> {
        let open = self
            .setup_mismatches
            .iter()
            .any(|m| m.aspect() == SetupAspect::ClockSides);
        let kind = match clock_sides_mismatch(&self.info.board_id, raw, sides) {
            Some(mismatch) if !open => Kind::SetupMismatch(mismatch),
            None if open => Kind::SetupMismatchCleared(SetupMismatchCleared {
                aspect: SetupAspect::ClockSides as i32,
            }),
            _ => return None,
        };
        Some(NewEvent {
            kind,
            provenance: self.provenance(obs, Source::Clock, vec![obs.device_seq]),
        })
    }

    fn recorded(&self, obs: &Observation, source: Source) -> NewEvent {
        NewEvent {
            kind: Kind::ObservationRecorded(ObservationRecorded {
                observation: Some(obs.clone()),
            }),
            provenance: self.provenance(obs, source, vec![obs.device_seq]),
        }
    }

    /// Records that the board's observations `first..=last` never arrived before `noticed_at`
    /// (the caller has looked for them). Observations the game has already accounted for are
    /// left out; nothing is recorded for a finished game.
    pub fn decide_missing_observations(
        &self,
        first: u64,
        last: u64,
        noticed_at: &Observation,
    ) -> Vec<NewEvent> {
        let first = first.max(self.board_seq_accounted() + 1);
        if first > last || last >= noticed_at.device_seq || self.is_over() {
            return Vec::new();
        }
        vec![NewEvent {
            kind: Kind::ObservationsMissing(ObservationsMissing {
                first_device_seq: first,
                last_device_seq: last,
                noticed_at_device_seq: noticed_at.device_seq,
                unusable_reason: String::new(),
            }),
            provenance: self.provenance(
                noticed_at,
                Source::BoardSensor,
                vec![noticed_at.device_seq],
            ),
        }]
    }

    /// Observation `device_seq` of the board arrived but could not be decided (`reason`; it goes
    /// to the dead-letter stream): a hole in the board's record, as for one that never arrived.
    /// Nothing when it is already accounted for, implausibly far ahead, or the game is over.
    pub fn decide_unusable_observation(
        &self,
        device_seq: u64,
        device_time_unix_ms: i64,
        reason: &str,
    ) -> Vec<NewEvent> {
        let accounted = self.board_seq_accounted();
        if device_seq <= accounted || !plausible_device_seq(accounted, device_seq) || self.is_over()
        {
            return Vec::new();
        }
        let noticed = Observation {
            board_id: self.info.board_id.clone(),
            device_seq,
            device_time_unix_ms,
            ..Default::default()
        };
        vec![NewEvent {
            kind: Kind::ObservationsMissing(ObservationsMissing {
                first_device_seq: device_seq,
                last_device_seq: device_seq,
                noticed_at_device_seq: device_seq,
                unusable_reason: reason.to_owned(),
            }),
            provenance: self.provenance(&noticed, Source::BoardSensor, vec![device_seq]),
        }]
    }

    /// A change the arbiter should know of: the board's connection state, or its battery falling
    /// to the low level. Repeated reports of the same state are only recorded.
    fn board_status_change(&self, obs: &Observation, status: &DeviceStatus) -> Option<NewEvent> {
        let state = status.state();
        let battery_low = |b: Option<u32>| b.is_some_and(|p| p <= LOW_BATTERY_PERCENT);
        let connection_changed = state != DeviceState::Unspecified && state != self.board.state;
        let battery_fell =
            battery_low(status.battery_percent) && !battery_low(self.board.battery_percent);
        if !connection_changed && !battery_fell {
            return None;
        }
        Some(NewEvent {
            kind: Kind::BoardStatus(BoardStatusChanged {
                state: if state == DeviceState::Unspecified {
                    self.board.state as i32
                } else {
                    state as i32
                },
                battery_percent: status.battery_percent.or(self.board.battery_percent),
                detail: status.detail.clone(),
                battery_low: battery_fell && !connection_changed,
            }),
            provenance: self.provenance(obs, Source::BoardSensor, vec![obs.device_seq]),
        })
    }

    fn provenance(&self, obs: &Observation, source: Source, device_seqs: Vec<u64>) -> Provenance {
        Provenance {
            source: source as i32,
            board_id: obs.board_id.clone(),
            device_seqs,
            device_time_unix_ms: obs.device_time_unix_ms,
            ..Default::default()
        }
    }

    /// Whether the engine's line starts with the game's completed moves. It does not after the
    /// arbiter entered a move the board does not show, or while the board is back before a
    /// completed move: moves the engine sees then are not moves of this game.
    fn follows_game(&self, engine: &boardcast_inference::Inference) -> bool {
        let line = engine.moves();
        line.len() >= self.moves.len()
            && line
                .iter()
                .zip(&self.moves)
                .all(|(seen, completed)| uci(seen) == completed.event.uci)
    }

    /// The events the engine's conclusions amount to. Moves are only taken from an engine whose
    /// line follows the game (`follows_game`).
    fn meaning(
        &self,
        obs: &Observation,
        outputs: Vec<Output>,
        follows_game: bool,
        clocks: Option<(u64, u64)>,
    ) -> Vec<NewEvent> {
        let mut events = Vec::new();
        // What this decision adds, so that later outputs of the same observation see it.
        let mut position = self.position.clone();
        let mut completed = self.moves.len() as u32;
        // The provisional line after the completed moves (see `Game::provisional`).
        let mut line: Vec<(shakmaty::Move, MoveProvisional)> = self
            .provisional
            .iter()
            .map(|p| (p.mv, p.event.clone()))
            .collect();
        let mut reconstructed = self.reconstructed.clone();
        let mut tally = self.illegal_tally;
        let mut ended = false;
        for output in outputs {
            if ended {
                break;
            }
            let about_moves = matches!(
                output,
                Output::MoveProvisional { .. }
                    | Output::ProvisionalRevised { .. }
                    | Output::MoveConfirmed { .. }
                    | Output::Reconstructed { .. }
            );
            if about_moves && !follows_game {
                continue;
            }
            match output {
                Output::Touch {
                    piece,
                    from,
                    to,
                    basis,
                } => events.push(NewEvent {
                    kind: Kind::Touch(TouchObserved {
                        ply: completed + 1,
                        piece: device_piece(piece) as i32,
                        from_square: u32::from(from),
                        to_square: to.map(u32::from),
                    }),
                    provenance: self.provenance(obs, Source::BoardSensor, basis),
                }),
                Output::MoveProvisional { mv, basis } => {
                    let provisional = MoveProvisional {
                        ply: mv.ply,
                        uci: uci(&mv),
                        san: mv.san.clone(),
                        replaces_uci: String::new(),
                    };
                    events.extend(self.provisional_or_final(
                        obs,
                        &position,
                        &mut line,
                        completed,
                        mv,
                        provisional,
                        basis,
                        &mut ended,
                    ));
                }
                Output::ProvisionalRevised {
                    from_move,
                    to_move,
                    basis,
                } => {
                    let provisional = MoveProvisional {
                        ply: to_move.ply,
                        uci: uci(&to_move),
                        san: to_move.san.clone(),
                        replaces_uci: uci(&from_move),
                    };
                    events.extend(self.provisional_or_final(
                        obs,
                        &position,
                        &mut line,
                        completed,
                        to_move,
                        provisional,
                        basis,
                        &mut ended,
                    ));
                }
                Output::MoveConfirmed { mv, basis } => {
                    // Moves before the game's completed ones are already in the log.
                    if mv.ply <= completed {
                        continue;
                    }
                    let source = if reconstructed.contains(&mv.ply) {
                        Source::Reconstruction
                    } else {
                        Source::Clock
                    };
                    let touch_breaches = if mv.ply == self.moves.len() as u32 + 1 {
                        self.touch_breaches(obs, &position, &mv)
                    } else {
                        Vec::new()
                    };
                    position.play_unchecked(mv.mv);
                    completed = mv.ply;
                    if line.first().is_some_and(|(first, _)| *first == mv.mv) {
                        line.remove(0);
                    } else {
                        line.clear();
                    }
                    let provenance = self.provenance(obs, source, basis);
                    events.push(NewEvent {
                        kind: Kind::MoveCompleted(MoveCompleted {
                            ply: mv.ply,
                            uci: uci(&mv),
                            san: mv.san.clone(),
                            fen_after: fen_of(&position),
                            white_remaining_ms: clocks.map(|c| c.0),
                            black_remaining_ms: clocks.map(|c| c.1),
                        }),
                        provenance: provenance.clone(),
                    });
                    events.extend(touch_breaches);
                    if mv.ply == self.moves.len() as u32 + 1
                        && let Some(alert) = clocks.and_then(|c| self.clock_alert(obs, mv.ply, c))
                    {
                        events.push(alert);
                    }
                    for kind in self.verdict_after_moves(&position, completed) {
                        ended |= matches!(kind, Kind::Ended(_));
                        // Whether a position is dead is noted for the arbiter once.
                        let noted =
                            |e: &NewEvent| matches!(e.kind, Kind::DeadPositionUndetermined(_));
                        if matches!(kind, Kind::DeadPositionUndetermined(_))
                            && events.iter().any(noted)
                        {
                            continue;
                        }
                        events.push(NewEvent {
                            kind,
                            provenance: provenance.clone(),
                        });
                    }
                }
                Output::Takeback {
                    undone,
                    confirmed,
                    basis,
                } => {
                    for mv in undone.iter().filter(|m| m.ply > completed) {
                        line.truncate((mv.ply - completed - 1) as usize);
                        events.push(NewEvent {
                            kind: Kind::ProvisionalWithdrawn(ProvisionalMoveWithdrawn {
                                ply: mv.ply,
                                uci: uci(mv),
                            }),
                            provenance: self.provenance(obs, Source::BoardSensor, basis.clone()),
                        });
                    }
                    if confirmed > 0 {
                        // Completed moves stand until an arbiter decides otherwise (Article 7).
                        events.push(NewEvent {
                            kind: Kind::Irregularity(irregularity(IrregularityObserved {
                                ply: completed + 1,
                                placement: self.placement_of(obs),
                                cause_kind: Cause::BoardWentBack as i32,
                                moves_back: u32::try_from(confirmed).unwrap_or(u32::MAX),
                                ..Default::default()
                            })),
                            provenance: self.provenance(obs, Source::BoardSensor, basis),
                        });
                    }
                }
                Output::Reconstructed { moves, basis } => {
                    let first_ply = moves.first().map(|m| m.ply).unwrap_or(completed + 1);
                    let Some(index) = line_index(completed as usize, line.len(), first_ply) else {
                        continue;
                    };
                    line.truncate(index);
                    for m in &moves {
                        reconstructed.insert(m.ply);
                        line.push((
                            m.mv,
                            MoveProvisional {
                                ply: m.ply,
                                uci: uci(m),
                                san: m.san.clone(),
                                replaces_uci: String::new(),
                            },
                        ));
                    }
                    events.push(NewEvent {
                        kind: Kind::Reconstructed(MovesReconstructed {
                            first_ply,
                            uci: moves.iter().map(uci).collect(),
                            san: moves.iter().map(|m| m.san.clone()).collect(),
                        }),
                        provenance: self.provenance(obs, Source::Reconstruction, basis),
                    });
                }
                Output::Irregularity {
                    placement,
                    cause,
                    ambiguous,
                    basis,
                } => {
                    let placement = placement.board_fen().to_string();
                    let (cause_kind, unmatched_for_ms) = match cause {
                        IrregularityCause::ClockPressed { .. } => (Cause::ClockPressed, 0),
                        IrregularityCause::Quiet { unmatched_for_ms } => {
                            (Cause::Quiet, u64::try_from(unmatched_for_ms).unwrap_or(0))
                        }
                    };
                    events.push(NewEvent {
                        kind: Kind::Irregularity(irregularity(IrregularityObserved {
                            ply: completed + self.line_ahead(&line) + 1,
                            placement: placement.clone(),
                            ambiguous,
                            cause_kind: cause_kind as i32,
                            unmatched_for_ms,
                            ..Default::default()
                        })),
                        provenance: self.provenance(obs, Source::BoardSensor, basis.clone()),
                    });
                    if completed == 0
                        && line.is_empty()
                        && !self.start_seen
                        && matches!(cause, IrregularityCause::Quiet { .. })
                        && self.interpretation >= 1
                    {
                        events.extend(self.start_position_mismatch(obs, &placement, &basis));
                    }
                    if let IrregularityCause::ClockPressed { side } = cause
                        && self.interpretation >= 1
                    {
                        events.push(self.press_in_doubt(
                            obs,
                            completed + line.len() as u32,
                            side,
                            false,
                            placement,
                            basis,
                        ));
                    } else if let IrregularityCause::ClockPressed { side } = cause {
                        let kind = if unpromoted_pawn(&placement, side) {
                            IllegalKind::UnpromotedPawn
                        } else {
                            IllegalKind::IllegalMove
                        };
                        events.push(self.illegal_move(
                            obs,
                            self.moves.len() as u32 + 1,
                            &position,
                            side,
                            kind,
                            placement,
                            &mut tally,
                            basis,
                        ));
                    }
                }
                Output::IrregularityCleared { basis } => {
                    if self
                        .setup_mismatches
                        .iter()
                        .any(|m| m.aspect() == SetupAspect::StartPosition)
                    {
                        events.push(NewEvent {
                            kind: Kind::SetupMismatchCleared(SetupMismatchCleared {
                                aspect: SetupAspect::StartPosition as i32,
                            }),
                            provenance: self.provenance(obs, Source::BoardSensor, basis.clone()),
                        });
                    }
                    events.push(NewEvent {
                        kind: Kind::IrregularityCleared(IrregularityCleared {
                            ply: completed + self.line_ahead(&line) + 1,
                        }),
                        provenance: self.provenance(obs, Source::BoardSensor, basis),
                    });
                }
                Output::ClockPressWithoutMove { side, basis } if self.interpretation >= 1 => {
                    let placement = self.placement_of(obs);
                    events.push(self.press_in_doubt(
                        obs,
                        completed + line.len() as u32,
                        side,
                        true,
                        placement,
                        basis,
                    ));
                }
                Output::ClockPressWithoutMove { side, basis } => {
                    let placement = self.placement_of(obs);
                    events.push(self.illegal_move(
                        obs,
                        self.moves.len() as u32 + 1,
                        &position,
                        side,
                        IllegalKind::ClockWithoutMove,
                        placement,
                        &mut tally,
                        basis,
                    ));
                }
                Output::NewGame { basis, .. } => events.push(NewEvent {
                    kind: Kind::Irregularity(irregularity(IrregularityObserved {
                        ply: completed + 1,
                        placement: self.placement_of(obs),
                        cause_kind: Cause::StartPositionSetUp as i32,
                        ..Default::default()
                    })),
                    provenance: self.provenance(obs, Source::BoardSensor, basis),
                }),
                Output::ResultSignalled { result, basis } => {
                    let result = match result {
                        boardcast_inference::ResultSignal::WhiteWins => GameResult::WhiteWins,
                        boardcast_inference::ResultSignal::BlackWins => GameResult::BlackWins,
                        boardcast_inference::ResultSignal::Draw => GameResult::Draw,
                    };
                    events.push(NewEvent {
                        kind: Kind::Ended(GameEnded {
                            result: result as i32,
                            termination: Termination::BoardResultSignal as i32,
                            detail: format!(
                                "kings placed on the centre squares ({})",
                                self.placement_of(obs)
                            ),
                            article: String::new(),
                        }),
                        provenance: self.provenance(obs, Source::BoardSensor, basis),
                    });
                    ended = true;
                }
                Output::OrientationChanged { orientation, basis } if self.interpretation >= 1 => {
                    events.extend(self.orientation_told(obs, orientation, basis));
                }
                Output::OrientationChanged { .. } => {}
                Output::GhostIgnored { .. } => {}
            }
        }
        events
    }

    /// A provisional move at its place in the line, or — when it mates or stalemates — the move
    /// completed at once with the line before it, and the game's end: no clock press follows
    /// such a move (Articles 5.1.a, 5.2.a, 6.7.a).
    #[allow(clippy::too_many_arguments)]
    fn provisional_or_final(
        &self,
        obs: &Observation,
        position: &Chess,
        line: &mut Vec<(shakmaty::Move, MoveProvisional)>,
        completed: u32,
        mv: PlyMove,
        provisional: MoveProvisional,
        basis: Vec<u64>,
        ended: &mut bool,
    ) -> Vec<NewEvent> {
        // The engine continues its own line, which the log follows; a ply outside it would be
        // an event the game cannot fold, so it is left out (the press settles the moves).
        let Some(index) = line_index(completed as usize, line.len(), provisional.ply) else {
            return Vec::new();
        };
        line.truncate(index);
        let mut after = position.clone();
        for (m, _) in line.iter() {
            after.play_unchecked(*m);
        }
        after.play_unchecked(mv.mv);
        let provenance = self.provenance(obs, Source::BoardSensor, basis);
        // Only mate and stalemate end a game without the press: a provisional move may still
        // change, and automatic draws wait for the completed move.
        let end = (after.is_checkmate() || after.is_stalemate())
            .then(|| self.verdict_after_moves(&after, provisional.ply))
            .into_iter()
            .flatten()
            .find(|kind| matches!(kind, Kind::Ended(_)));
        let Some(end) = end else {
            line.push((mv.mv, provisional.clone()));
            return vec![NewEvent {
                kind: Kind::MoveProvisional(provisional),
                provenance,
            }];
        };
        *ended = true;
        let mut before = position.clone();
        let mut events = Vec::new();
        for (m, p) in line.drain(..).chain([(mv.mv, provisional)]) {
            before.play_unchecked(m);
            events.push(NewEvent {
                kind: Kind::MoveCompleted(MoveCompleted {
                    ply: p.ply,
                    uci: p.uci,
                    san: p.san,
                    fen_after: fen_of(&before),
                    white_remaining_ms: None,
                    black_remaining_ms: None,
                }),
                provenance: provenance.clone(),
            });
        }
        events.push(NewEvent {
            kind: end,
            provenance,
        });
        events
    }

    /// A press that would complete an illegal move, held for the next presses to settle.
    /// `before`: the moves on the board before the press's ply (completed and provisional).
    fn press_in_doubt(
        &self,
        obs: &Observation,
        before: u32,
        presser: Color,
        without_move: bool,
        placement: String,
        basis: Vec<u64>,
    ) -> NewEvent {
        NewEvent {
            kind: Kind::PressInDoubt(ClockPressInDoubt {
                ply: before + 1,
                presser: side_of(presser) as i32,
                without_move,
                placement,
            }),
            provenance: self.provenance(obs, Source::Clock, basis),
        }
    }

    /// The board shows the start position turned round from how its gateway reads it: the game
    /// follows the board, and the operator is told what to set for the next games.
    fn orientation_told(
        &self,
        obs: &Observation,
        orientation: boardcast_inference::Orientation,
        basis: Vec<u64>,
    ) -> Option<NewEvent> {
        let open = self
            .setup_mismatches
            .iter()
            .any(|m| m.aspect() == SetupAspect::Orientation);
        let kind = match orientation {
            boardcast_inference::Orientation::Rotated if !open => {
                Kind::SetupMismatch(SetupMismatch {
                    aspect: SetupAspect::Orientation as i32,
                    expected: "the start position with White's pieces on ranks 1 and 2 as the \
                               board's gateway reads the board"
                        .to_owned(),
                    seen: "the start position turned round: White's pieces on ranks 7 and 8"
                        .to_owned(),
                    fix: format!(
                        "Nothing to do for this game: it reads the board turned round. For the \
                         next games on board {}, turn the board round or change its gateway's \
                         --rotated setting.",
                        self.info.board_id
                    ),
                })
            }
            boardcast_inference::Orientation::Normal if open => {
                Kind::SetupMismatchCleared(SetupMismatchCleared {
                    aspect: SetupAspect::Orientation as i32,
                })
            }
            _ => return None,
        };
        Some(NewEvent {
            kind,
            provenance: self.provenance(obs, Source::BoardSensor, basis),
        })
    }

    /// Before the first move the board shows a placement that is neither the game's start
    /// position nor a move from it: the pieces were set up wrongly (or a piece is missing).
    fn start_position_mismatch(
        &self,
        obs: &Observation,
        placement: &str,
        basis: &[u64],
    ) -> Option<NewEvent> {
        if self
            .setup_mismatches
            .iter()
            .any(|m| m.aspect() == SetupAspect::StartPosition)
        {
            return None;
        }
        let seen: Board = placement.parse().ok()?;
        let expected = self.start.board();
        let name = |piece: Option<Piece>| match piece {
            Some(p) => format!("{:?} {:?}", p.color, p.role).to_lowercase(),
            None => "nothing".to_owned(),
        };
        let differences: Vec<String> = Square::ALL
            .into_iter()
            .filter(|&sq| expected.piece_at(sq) != seen.piece_at(sq))
            .map(|sq| {
                format!(
                    "{sq} should hold {} (holds {})",
                    name(expected.piece_at(sq)),
                    name(seen.piece_at(sq))
                )
            })
            .collect();
        Some(NewEvent {
            kind: Kind::SetupMismatch(SetupMismatch {
                aspect: SetupAspect::StartPosition as i32,
                expected: expected.board_fen().to_string(),
                seen: placement.to_owned(),
                fix: format!(
                    "Set the pieces up as the game's start position: {}.",
                    differences.join("; ")
                ),
            }),
            provenance: self.provenance(obs, Source::BoardSensor, basis.to_vec()),
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn illegal_move(
        &self,
        obs: &Observation,
        ply: u32,
        position: &Chess,
        offender: Color,
        kind: IllegalKind,
        placement: String,
        tally: &mut boardcast_rules::illegal::IllegalMoveTally,
        basis: Vec<u64>,
    ) -> NewEvent {
        let report = judge_illegal_move(
            &self.rules,
            *tally,
            &IllegalMoveCase {
                offender,
                kind,
                position_before: position,
                opponent_claimed: false,
            },
        );
        *tally = report.tally;
        let (opponent_bonus_ms, result_if_confirmed) =
            match (report.counts_as_illegal, report.penalty) {
                (true, IllegalPenalty::OpponentTime { bonus_ms }) => {
                    (bonus_ms, GameResult::Unspecified)
                }
                (true, IllegalPenalty::Loss) => (
                    0,
                    if offender == Color::White {
                        GameResult::BlackWins
                    } else {
                        GameResult::WhiteWins
                    },
                ),
                (true, IllegalPenalty::Draw) => (0, GameResult::Draw),
                _ => (0, GameResult::Unspecified),
            };
        let penalty = if !report.counts_as_illegal {
            PenaltyKind::NotIllegal
        } else {
            match report.penalty {
                IllegalPenalty::OpponentTime { .. } => PenaltyKind::OpponentTime,
                IllegalPenalty::Loss => PenaltyKind::Loss,
                IllegalPenalty::Draw => PenaltyKind::Draw,
                IllegalPenalty::LossOrDraw => PenaltyKind::LossOrDraw,
                IllegalPenalty::NoPenalty => PenaltyKind::None,
            }
        };
        let offender = terms::side_of(offender);
        let kind = terms::illegal_kind_of(kind);
        NewEvent {
            kind: Kind::IllegalMove(IllegalMoveRecorded {
                ply,
                offender: wording::side(offender).to_owned(),
                kind: wording::illegal_kind(kind).to_owned(),
                placement,
                offender_count: report.offender_count,
                proposed_penalty: wording::penalty(
                    penalty,
                    opponent_bonus_ms,
                    Some(&self.rules.edition.to_string()),
                ),
                article: report.article.to_owned(),
                opponent_bonus_ms,
                result_if_confirmed: result_if_confirmed as i32,
                offender_side: offender as i32,
                illegal_kind: kind as i32,
                penalty: penalty as i32,
            }),
            provenance: self.provenance(obs, Source::Clock, basis),
        }
    }

    /// What the position says when `after` stands on the board after `ply` completed moves
    /// (the moves between the game's last completed one and `after` are replayed from the
    /// engine), as events: an end, or the note that whether it is dead was not determined.
    fn verdict_after_moves(&self, after: &Chess, ply: u32) -> Vec<Kind> {
        let mut history = self.repetition.clone();
        let mut pos = self.position.clone();
        let pending = self.inference.moves();
        for m in pending
            .iter()
            .filter(|m| m.ply > self.moves.len() as u32 && m.ply <= ply)
        {
            if history.play(m.mv, 0).is_err() {
                return Vec::new();
            }
            pos.play_unchecked(m.mv);
        }
        if pos.board() != after.board() || pos.turn() != after.turn() {
            // The engine's line differs from what we were told: judge the position alone.
            history.push_position(after, 0);
        }
        self.board_verdict_events(&history, ply)
    }

    /// Possible Article 4 breaches in the touches recorded before `mv` (the current
    /// observation is not among them: a press or a placement is not a touch).
    fn touch_breaches(&self, obs: &Observation, before: &Chess, mv: &PlyMove) -> Vec<NewEvent> {
        if self.touches.is_empty() {
            return Vec::new();
        }
        let touches: Vec<Touch> = self.touches.iter().map(|(_, t)| *t).collect();
        let report = check_touches(&self.rules, before, &touches, mv.mv);
        report
            .possible_breaches
            .into_iter()
            .map(|breach| {
                let seqs: Vec<u64> = breach
                    .touch_indices
                    .iter()
                    .filter_map(|i| self.touches.get(*i).map(|(seq, _)| *seq))
                    .collect();
                NewEvent {
                    kind: Kind::TouchMove(PossibleTouchMoveBreach {
                        ply: mv.ply,
                        breach: wording::breach_name(terms::breach_of(breach.breach)).to_owned(),
                        breach_kind: terms::breach_of(breach.breach) as i32,
                        article: breach.article.to_owned(),
                        square: breach.square.clone(),
                        touch_game_seqs: seqs,
                        only_on_claim: report.only_on_claim,
                    }),
                    provenance: self.provenance(obs, Source::BoardSensor, vec![obs.device_seq]),
                }
            })
            .collect()
    }

    /// Compares the mover's clock after the press with what the time control predicts from
    /// the mover's previous reading and the time since the opponent's press: previous − thinking
    /// time + increment (+ the next period's time when this move completes a period).
    fn clock_alert(&self, obs: &Observation, ply: u32, clocks: (u64, u64)) -> Option<NewEvent> {
        const TOLERANCE_MS: i64 = 5_000;
        let mover_is_white = ply % 2 == 1;
        let mover = if mover_is_white {
            Side::White
        } else {
            Side::Black
        };
        // The mover's previous move, and the opponent's move that started the mover's clock.
        let index = ply as usize - 1;
        let previous = self.moves.get(index.checked_sub(2)?)?;
        let opponent = self.moves.get(index.checked_sub(1)?)?;
        let mut start_ms = if mover_is_white {
            previous.event.white_remaining_ms
        } else {
            previous.event.black_remaining_ms
        }
        .map(|ms| ms as i64);
        if opponent.device_time_unix_ms <= 0
            || obs.device_time_unix_ms < opponent.device_time_unix_ms
        {
            return None;
        }
        let thinking = obs.device_time_unix_ms - opponent.device_time_unix_ms;
        let periods = &self.info.time_control.as_ref()?.periods;
        let own_move = ply.div_ceil(2);
        let effect = period_effect(periods, own_move);
        let (bonus, boundary) = (effect.bonus_ms, effect.completes_period);
        // What the arbiter did to the mover's clock since the mover's previous move, in order:
        // time added counts; a clock set before the opponent's move started the mover's clock
        // is the new starting point; one set while it ran (the moment is not known in device
        // time) leaves nothing to predict from.
        for (completed, _, change) in self
            .clock_changes
            .iter()
            .filter(|(completed, _, _)| (index - 1..=index).contains(completed))
        {
            let while_running = *completed == index;
            let mover = |white: Option<u64>, black: Option<u64>| {
                if mover_is_white { white } else { black }
            };
            match *change {
                ClockChange::Added { white_ms, black_ms } => {
                    let added = if mover_is_white { white_ms } else { black_ms };
                    start_ms = start_ms.map(|ms| ms + added);
                }
                ClockChange::Set { white, black } => {
                    if let Some(ms) = mover(white, black) {
                        if while_running {
                            return None;
                        }
                        start_ms = Some(ms as i64);
                    }
                }
                ClockChange::Restored { white, black } => match mover(white, black) {
                    Some(ms) if !while_running => start_ms = Some(ms as i64),
                    _ => return None,
                },
            }
        }
        let used = (thinking - effect.delay_ms as i64).max(0);
        let expected = start_ms? - used + effect.increment_ms as i64 + bonus as i64;
        let reported = if mover_is_white { clocks.0 } else { clocks.1 } as i64;
        if (reported - expected).abs() <= TOLERANCE_MS {
            return None;
        }
        let reason = if boundary && reported < expected - bonus as i64 / 2 {
            format!(
                "the next period's {} min were not added after move {own_move}",
                bonus / 60_000
            )
        } else {
            format!(
                "the clock differs by {} s from the time control's prediction",
                (reported - expected) / 1000
            )
        };
        Some(NewEvent {
            kind: Kind::ClockAlert(ClockAlert {
                ply,
                side: wording::side(mover).to_owned(),
                clock_of: mover as i32,
                expected_ms: expected.max(0) as u64,
                reported_ms: reported.max(0) as u64,
                reason,
            }),
            provenance: self.provenance(obs, Source::Clock, vec![obs.device_seq]),
        })
    }

    /// What newly fallen flags mean (Article 6.9; both flags: 6.11 / the rapid and blitz rules).
    fn flag_verdict(&self, white: bool, black: bool) -> Option<GameEnded> {
        use boardcast_rules::outcome::{both_flags_fallen, flag_fall};
        let end = match (white, black) {
            (true, true) => both_flags_fallen(&self.rules, self.in_last_period())?,
            (true, false) if !self.flags.0 => flag_fall(&self.rules, &self.position, Color::White),
            (false, true) if !self.flags.1 => flag_fall(&self.rules, &self.position, Color::Black),
            _ => return None,
        };
        Some(crate::arbiter::ending_of(&end))
    }

    /// Play is in the time control's last period (the moves of the earlier ones are made).
    fn in_last_period(&self) -> bool {
        let periods = self
            .info
            .time_control
            .as_ref()
            .map(|tc| tc.periods.as_slice())
            .unwrap_or_default();
        let before_last: u32 = periods
            .iter()
            .take(periods.len().saturating_sub(1))
            .map(|p| p.moves)
            .sum();
        // Full moves of the side that moves least: White's count equals or exceeds Black's.
        let full_moves = (self.moves.len() / 2) as u32;
        full_moves >= before_last
    }

    /// The placement the board shows: the observation's own, or the engine's last one.
    fn placement_of(&self, obs: &Observation) -> String {
        match &obs.kind {
            Some(observation::Kind::Placement(p)) => p.placement.clone(),
            _ => self.inference.position().board().board_fen().to_string(),
        }
    }
}

/// For a player's `own_move`-th move: the increment added after it, the delay before its clock
/// runs, the time added because it completes a period (the next period's base), and whether it
/// does.
fn period_effect(periods: &[crate::events::TimePeriod], own_move: u32) -> PeriodEffect {
    let mut first_move = 1;
    for (i, period) in periods.iter().enumerate() {
        let last_move = if period.moves == 0 {
            u32::MAX
        } else {
            first_move + period.moves - 1
        };
        if own_move <= last_move {
            let completes = period.moves != 0 && own_move == last_move;
            let bonus = if completes {
                periods.get(i + 1).map(|p| p.base_ms).unwrap_or(0)
            } else {
                0
            };
            return PeriodEffect {
                increment_ms: period.increment_ms,
                delay_ms: period.delay_ms,
                bonus_ms: bonus,
                completes_period: completes,
            };
        }
        first_move = last_move + 1;
    }
    PeriodEffect::default()
}

/// What the time control does to the mover's clock on one move.
#[derive(Debug, Default, Clone, Copy)]
struct PeriodEffect {
    increment_ms: u64,
    /// Thinking time up to this much is not taken from the clock (delay mode).
    delay_ms: u64,
    /// The next period's time, added when this move completes a period.
    bonus_ms: u64,
    completes_period: bool,
}

/// A pawn of `side` standing on its last rank.
pub(crate) fn unpromoted_pawn(placement: &str, side: Color) -> bool {
    let Ok(board) = placement.parse::<Board>() else {
        return false;
    };
    let last_rank = match side {
        Color::White => shakmaty::Bitboard::from_rank(shakmaty::Rank::Eighth),
        Color::Black => shakmaty::Bitboard::from_rank(shakmaty::Rank::First),
    };
    (board.pawns() & board.by_color(side) & last_rank).any()
}

fn game_ended(end: GameEnded, provenance: Provenance) -> NewEvent {
    NewEvent {
        kind: Kind::Ended(end),
        provenance,
    }
}

/// An irregularity with its cause also in words (for people and older readers).
fn irregularity(mut observed: IrregularityObserved) -> IrregularityObserved {
    observed.cause = wording::irregularity_cause(&observed);
    observed
}

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

use boardcast_inference::{Event as InferenceEvent, Input, Output, PlyMove};
use boardcast_schema::pieces::board_piece;
use shakmaty::{Board, Color, Piece, Position, Square, uci::UciMove};

use crate::clock::{ClockSides, running_side};
use crate::device::{ClockReading, ClockRun, Observation, observation};
use crate::events::{
    ClockSidesBasis, GameEnded, IrregularityObserved, ObservationRecorded, ObservationsMissing,
    Provenance, Source, game_event::Kind,
};
use crate::record::NewEvent;
use crate::state::Game;
use crate::wording;

mod clock_check;
mod meaning;
mod reports;

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

/// A piece of a lift or placement: its code must name one.
fn piece(code: i32) -> Result<Piece, Rejected> {
    board_piece(code).ok_or(Rejected::InvalidPiece(code))
}

/// A square of a lift or placement: 0 (a1) to 63 (h8).
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
                match self.press_by(self.clock.sides.read(c).running()) {
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
        match (self.interpretation, self.clock.running, running) {
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
        if obs.device_seq <= self.board.seq_floor {
            return Ok(ObservationOutcome::Ignored(Ignored::EarlierGame {
                device_seq: obs.device_seq,
                earlier_game_last: self.board.seq_floor,
            }));
        }
        if self
            .board
            .missing
            .iter()
            .any(|m| (m.first_device_seq..=m.last_device_seq).contains(&obs.device_seq))
        {
            return Ok(ObservationOutcome::Ignored(Ignored::AfterItsGap {
                device_seq: obs.device_seq,
            }));
        }
        if obs.device_seq <= self.board.last_device_seq {
            return Ok(ObservationOutcome::Ignored(Ignored::Duplicate {
                device_seq: obs.device_seq,
                last_applied: self.board.last_device_seq,
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
            let flags_changed = (c.white_flag, c.black_flag) != self.clock.flags;
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
                events = self.conclude(obs, self.clock.sides, events, &engine, outputs, None);
            }
            if let Some(observation::Kind::Status(status)) = &obs.kind {
                events.extend(self.board_status_change(obs, status));
            }
            return ObservationOutcome::Events(events);
        };
        let mut sides = self.clock.sides;
        let mut prefix = Vec::new();
        // The clock started before any move: the Laws start White's clock, so its running
        // display is White's until a press completing a move says otherwise.
        if sides.basis == ClockSidesBasis::Unspecified
            && self.moves.is_empty()
            && self.inference.line_len() == 0
            && !matches!(self.clock.running, ClockRun::White | ClockRun::Black)
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
        let flags_changed = (reading.white_flag, reading.black_flag) != self.clock.flags;
        let changed =
            flags_changed || reading.running() != self.clock.running || !prefix.is_empty();
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
        let mut not_counted = Vec::new();
        if flags_changed {
            let flags = if self.interpretation >= 8 {
                let (counted, alerts) = self.flags_counted(obs, &reading);
                not_counted = alerts;
                counted
            } else {
                (reading.white_flag, reading.black_flag)
            };
            if let Some(end) = self.flag_verdict(flags.0, flags.1) {
                let mut events = prefix;
                events.push(self.recorded(obs, Source::Clock));
                events.extend(not_counted);
                events.push(game_ended(end, self.provenance(obs, Source::Clock, basis)));
                return ObservationOutcome::Events(events);
            }
        }
        prefix.push(self.recorded(obs, Source::Clock));
        prefix.extend(not_counted);
        prefix.extend(self.clock_set_up_alerts(obs, &reading));
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
            ClockSides::from_event(&self.clock.sides.establish(
                raw,
                true,
                ClockSidesBasis::MovePress,
            ))
        };
        let sides_may_change = |turned: &ClockSides| {
            self.clock.sides.basis != ClockSidesBasis::MovePress
                || self.clock.stood
                || self
                    .clock
                    .doubts
                    .iter()
                    .any(|d| d.presser(turned) != Some(d.position.turn()))
        };
        if without_move && sides_may_change(&turned_sides()) && !self.completes(&engine, &outputs) {
            let mut turned = self.inference.clone();
            let turned_outputs = turned.observe(press(!presser));
            if self.completes(&turned, &turned_outputs) {
                let event = self
                    .clock
                    .sides
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
        let reading = self.clock.sides.read(raw);
        let clocks = Some((reading.white_remaining_ms, reading.black_remaining_ms));
        let prefix = vec![self.recorded(obs, Source::Clock)];
        self.conclude(obs, self.clock.sides, prefix, &engine, outputs, clocks)
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

    fn provenance(&self, obs: &Observation, source: Source, device_seqs: Vec<u64>) -> Provenance {
        Provenance {
            source: source as i32,
            board_id: obs.board_id.clone(),
            device_seqs,
            device_time_unix_ms: obs.device_time_unix_ms,
            ..Default::default()
        }
    }

    /// The placement the board shows: the observation's own, or the engine's last one.
    fn placement_of(&self, obs: &Observation) -> String {
        match &obs.kind {
            Some(observation::Kind::Placement(p)) => p.placement.clone(),
            _ => self.inference.position().board().board_fen().to_string(),
        }
    }
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

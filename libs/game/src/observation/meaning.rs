//! What the move inference concludes from the recorded observations, as events: touches,
//! provisional moves and their revisions, completed and reconstructed moves, takebacks,
//! irregular placements, the clock's sides and the board's set-up, game ends on the board.

use boardcast_inference::{IrregularityCause, Output, PlyMove};
use boardcast_rules::illegal::IllegalKind;
use boardcast_schema::pieces::device_piece;
use shakmaty::{Board, Chess, Color, Piece, Position, Square};

use crate::clock::{ClockSides, clock_sides_mismatch, settled};
use crate::device::{ClockReading, Observation, observation};
use crate::events::IrregularityCause as Cause;
use crate::events::{
    ClockPressInDoubt, ClockSidesBasis, GameEnded, GameResult, IrregularityCleared,
    IrregularityObserved, MoveCompleted, MoveProvisional, MovesReconstructed, PressSettlement,
    ProvisionalMoveWithdrawn, SetupAspect, SetupMismatch, SetupMismatchCleared, Source,
    Termination, TouchObserved, game_event::Kind,
};
use crate::provisional::{Provisional, ProvisionalLine};
use crate::record::NewEvent;
use crate::state::{Game, fen_of};
use crate::terms::{self, side_of};

use super::*;

impl Game {
    /// Whether the engine's conclusions complete a move of the game.
    pub(super) fn completes(
        &self,
        engine: &boardcast_inference::Inference,
        outputs: &[Output],
    ) -> bool {
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
    pub(super) fn conclude(
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
                    _ => self.clock.last_reading,
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
            let mut tally = self.rulings.illegal_tally;
            for doubt in &self.clock.doubts {
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

    /// Whether the engine's line starts with the game's completed moves. It does not after the
    /// arbiter entered a move the board does not show, or while the board is back before a
    /// completed move: moves the engine sees then are not moves of this game.
    pub(super) fn follows_game(&self, engine: &boardcast_inference::Inference) -> bool {
        let line = engine.line();
        line.len() >= self.moves.len()
            && line
                .iter()
                .zip(&self.moves)
                .all(|(seen, completed)| *seen == completed.mv)
    }

    /// The events the engine's conclusions amount to. Moves are only taken from an engine whose
    /// line follows the game (`follows_game`).
    pub(super) fn meaning(
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
        let mut line = self.provisional.clone();
        let mut reconstructed = self.reconstructed.clone();
        let mut tally = self.rulings.illegal_tally;
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
                    line.complete(mv.mv);
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
                        // The engine may take back moves of a line the game never followed
                        // (seen while the board was back before a completed move).
                        if self.interpretation >= 2 && !line.holds(completed as usize, mv.ply) {
                            continue;
                        }
                        line.withdraw(completed as usize, mv.ply);
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
                    if !line.withdraw(completed as usize, first_ply) {
                        continue;
                    }
                    for m in &moves {
                        reconstructed.insert(m.ply);
                        line.place(
                            completed as usize,
                            Provisional {
                                mv: m.mv,
                                event: MoveProvisional {
                                    ply: m.ply,
                                    uci: uci(m),
                                    san: m.san.clone(),
                                    replaces_uci: String::new(),
                                },
                                device_seqs: Vec::new(),
                            },
                        );
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
                        && !self.board.start_seen
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
                        let kind = if terms::unpromoted_pawn(&placement, side) {
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
                        .board
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
                    // The moves the board showed before the kings went to the centre are settled
                    // by the result (from interpretation 3), a last king move onto a centre
                    // square excepted: it may be the signal's first king.
                    if self.interpretation >= 3 {
                        let provenance = self.provenance(obs, Source::BoardSensor, basis.clone());
                        events.extend(crate::provisional::settled_by_result(
                            line.moves(),
                            &position,
                            &provenance,
                            true,
                        ));
                        line.clear();
                    }
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
    pub(super) fn provisional_or_final(
        &self,
        obs: &Observation,
        position: &Chess,
        line: &mut ProvisionalLine,
        completed: u32,
        mv: PlyMove,
        provisional: MoveProvisional,
        basis: Vec<u64>,
        ended: &mut bool,
    ) -> Vec<NewEvent> {
        // The engine continues its own line, which the log follows; a ply outside it would be
        // an event the game cannot fold, so it is left out (the press settles the moves).
        if !line.withdraw(completed as usize, provisional.ply) {
            return Vec::new();
        }
        let mut after = line.position_after(position);
        after.play_unchecked(mv.mv);
        let provenance = self.provenance(obs, Source::BoardSensor, basis);
        // Only mate, stalemate and (from interpretation 3) a dead position end a game without the
        // press (Article 5.2.2): a provisional move may still change, and automatic draws wait
        // for the completed move.
        let ends_at_once = after.is_checkmate()
            || after.is_stalemate()
            || (self.interpretation >= 3 && dead_at_once(&mv.mv, &after));
        let end = ends_at_once
            .then(|| self.verdict_after_moves(&after, provisional.ply))
            .into_iter()
            .flatten()
            .find(|kind| {
                matches!(kind, Kind::Ended(e) if matches!(
                    e.termination(),
                    Termination::Checkmate | Termination::Stalemate | Termination::DeadPosition
                ))
            });
        let Some(end) = end else {
            line.place(
                completed as usize,
                Provisional {
                    mv: mv.mv,
                    event: provisional.clone(),
                    device_seqs: Vec::new(),
                },
            );
            return vec![NewEvent {
                kind: Kind::MoveProvisional(provisional),
                provenance,
            }];
        };
        *ended = true;
        // The last move's clocks, as the clock shows them now (from interpretation 3).
        let final_clocks = (self.interpretation >= 3)
            .then(|| self.clocks_without_press(obs))
            .flatten();
        let mut seen = line.take();
        seen.push(Provisional {
            mv: mv.mv,
            event: provisional,
            device_seqs: Vec::new(),
        });
        let mut events = crate::provisional::completed_as_seen(
            &seen,
            position,
            |_| provenance.clone(),
            final_clocks,
        );
        events.push(NewEvent {
            kind: end,
            provenance,
        });
        events
    }

    /// The clocks (White, Black) at `obs` when no press shows them: the last recorded reading,
    /// read with the clock's sides, the running side's time counted down by the device time
    /// since (no increment: none is added without a press).
    pub(super) fn clocks_without_press(&self, obs: &Observation) -> Option<(u64, u64)> {
        let raw = self.clock.last_reading.as_ref()?;
        let reading = self.clock.sides.read(raw);
        let elapsed = u64::try_from(
            obs.device_time_unix_ms
                .checked_sub(self.clock.last_reading_at_ms)?,
        )
        .ok()?;
        let (mut white, mut black) = (reading.white_remaining_ms, reading.black_remaining_ms);
        match crate::clock::running_side(&reading) {
            Some(Color::White) => white = white.saturating_sub(elapsed),
            Some(Color::Black) => black = black.saturating_sub(elapsed),
            None => {}
        }
        Some((white, black))
    }

    /// How many moves of the provisional `line` count before the ply being played: all of them
    /// from interpretation 1, none before (as those logs were decided).
    pub(super) fn line_ahead(&self, line: &ProvisionalLine) -> u32 {
        if self.interpretation >= 1 {
            u32::try_from(line.len()).unwrap_or(u32::MAX)
        } else {
            0
        }
    }

    /// What the position says when `after` stands on the board after `ply` completed moves
    /// (the moves between the game's last completed one and `after` are replayed from the
    /// engine), as events: an end, or the note that whether it is dead was not determined.
    pub(super) fn verdict_after_moves(&self, after: &Chess, ply: u32) -> Vec<Kind> {
        let mut history = self.repetition.clone();
        let mut pos = self.position.clone();
        let line = self.inference.line();
        let pending = line
            .iter()
            .take(usize::try_from(ply).unwrap_or(usize::MAX))
            .skip(self.moves.len());
        for &mv in pending {
            if history.play(mv, 0).is_err() {
                return Vec::new();
            }
            pos.play_unchecked(mv);
        }
        if pos.board() != after.board() || pos.turn() != after.turn() {
            // The engine's line differs from what we were told: judge the position as told
            // (the positions before it count only where it can be shown to go back to them).
            history.push_position(after, 0);
        }
        self.board_verdict_events(&history, ply)
    }

    /// What the operator is told when the clock's sides are established by a press: a set-up
    /// alert when they are not as the board's source was set up, or the alert's end when they
    /// are again.
    pub(super) fn clock_sides_told(
        &self,
        obs: &Observation,
        raw: &ClockReading,
        sides: &crate::events::ClockSidesEstablished,
    ) -> Option<NewEvent> {
        let open = self
            .board
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

    /// The board shows the start position turned round from how its gateway reads it: the game
    /// follows the board, and the operator is told what to set for the next games.
    pub(super) fn orientation_told(
        &self,
        obs: &Observation,
        orientation: boardcast_inference::Orientation,
        basis: Vec<u64>,
    ) -> Option<NewEvent> {
        let open = self
            .board
            .setup_mismatches
            .iter()
            .any(|m| m.aspect() == SetupAspect::Orientation);
        // Before interpretation 7 only the start position turned round is recognised.
        let at_start = self.moves.is_empty() && self.provisional.is_empty();
        let kind = match orientation {
            boardcast_inference::Orientation::Rotated if !open => {
                Kind::SetupMismatch(SetupMismatch {
                    aspect: SetupAspect::Orientation as i32,
                    expected: if at_start {
                        "the start position with White's pieces on ranks 1 and 2 as the board's \
                         gateway reads the board"
                    } else {
                        "the game's position as the board's gateway reads the board"
                    }
                    .to_owned(),
                    seen: if at_start {
                        "the start position turned round: White's pieces on ranks 7 and 8"
                    } else {
                        "the game's position turned round: the board was turned round or set up \
                         so"
                    }
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
    pub(super) fn start_position_mismatch(
        &self,
        obs: &Observation,
        placement: &str,
        basis: &[u64],
    ) -> Option<NewEvent> {
        if self
            .board
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

    /// A press that would complete an illegal move, held for the next presses to settle.
    /// `before`: the moves on the board before the press's ply (completed and provisional).
    pub(super) fn press_in_doubt(
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
}

/// Whether a move's position may be dead, cheaply first: insufficient material on both sides is
/// (a few bit operations); otherwise only a capture, a promotion or a pawn move can have made it
/// so, and only then is the search asked (with its node budget: the same answer on every replay).
/// An undetermined position is not dead here: the move waits for its press.
fn dead_at_once(mv: &shakmaty::Move, after: &Chess) -> bool {
    after.is_insufficient_material()
        || ((mv.is_capture() || mv.is_promotion() || mv.role() == shakmaty::Role::Pawn)
            && boardcast_rules::dead::dead_position(after) == boardcast_rules::dead::Answer::Yes)
}

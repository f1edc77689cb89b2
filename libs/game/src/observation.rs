//! Folding board and clock observations into game events.
//!
//! A placement that equals the position after a legal move makes that move provisional; the
//! clock press of the side that moved completes it (Article 6.7). Everything else is either an
//! event of its own or ignored with a stated reason, never dropped silently.

use shakmaty::{Board, Chess, Color, Move, Position, Square, uci::UciMove};

use crate::device::{ClockRun, Observation, observation};
use crate::events::{
    GameEnded, GameResult, MoveCompleted, MoveProvisional, Provenance, ProvisionalMoveWithdrawn,
    Source, Termination, game_event::Kind,
};
use crate::game::{Game, NewEvent, fen_of};

/// Why an observation changed nothing. Each is normal on a live board; the service logs them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ignored {
    /// Already applied (same or older `device_seq`).
    Duplicate { device_seq: u64, last_applied: u64 },
    /// The game has ended.
    GameOver,
    /// A placement between moves: a lifted piece, a half-finished move, a sensor ghost.
    TransientPlacement,
    /// The placement shows the provisional move already known.
    Unchanged,
    /// A clock reading that is not a press completing a move.
    ClockTick,
    /// The clock was pressed but the board shows no legal move. (Recorded as an irregularity
    /// once illegal-move tracking exists.)
    PressWithoutMove,
    /// Lifts, placements of single pieces and device status are not folded into the game yet.
    NotFolded(&'static str),
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
    #[error("clock reading without a running state")]
    ClockWithoutState,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ObservationOutcome {
    Events(Vec<NewEvent>),
    Ignored(Ignored),
}

/// The four centre squares are mutually adjacent, so two kings there is never a position: it is
/// the players' signal of a result. Both kings on the light squares (d5, e4): White won; on the
/// dark squares (d4, e5): Black won; one of each: a draw.
fn result_signal(board: &Board) -> Option<GameResult> {
    let white = board.king_of(Color::White)?;
    let black = board.king_of(Color::Black)?;
    if (board.kings() & board.by_color(Color::White)).count() != 1
        || (board.kings() & board.by_color(Color::Black)).count() != 1
    {
        return None;
    }
    let centre = [Square::D4, Square::E4, Square::D5, Square::E5];
    if !centre.contains(&white) || !centre.contains(&black) {
        return None;
    }
    Some(match (white.is_light(), black.is_light()) {
        (true, true) => GameResult::WhiteWins,
        (false, false) => GameResult::BlackWins,
        _ => GameResult::Draw,
    })
}

impl Game {
    /// Decides what an observation of this game's board means.
    pub fn decide_observation(&self, obs: &Observation) -> Result<ObservationOutcome, Rejected> {
        if obs.board_id != self.info.board_id {
            return Err(Rejected::WrongBoard {
                expected: self.info.board_id.clone(),
                got: obs.board_id.clone(),
            });
        }
        let kind = obs.kind.as_ref().ok_or(Rejected::Empty)?;
        if obs.device_seq <= self.last_device_seq {
            return Ok(ObservationOutcome::Ignored(Ignored::Duplicate {
                device_seq: obs.device_seq,
                last_applied: self.last_device_seq,
            }));
        }
        if self.is_over() {
            return Ok(ObservationOutcome::Ignored(Ignored::GameOver));
        }
        match kind {
            observation::Kind::Placement(p) => self.decide_placement(obs, &p.placement),
            observation::Kind::Clock(c) => {
                let running = ClockRun::try_from(c.running).unwrap_or(ClockRun::Unspecified);
                if running == ClockRun::Unspecified {
                    return Err(Rejected::ClockWithoutState);
                }
                Ok(self.decide_clock(obs, running, c.white_remaining_ms, c.black_remaining_ms))
            }
            observation::Kind::Lifted(_) => Ok(ObservationOutcome::Ignored(Ignored::NotFolded(
                "piece lifted",
            ))),
            observation::Kind::Placed(_) => Ok(ObservationOutcome::Ignored(Ignored::NotFolded(
                "piece placed",
            ))),
            observation::Kind::Status(_) => Ok(ObservationOutcome::Ignored(Ignored::NotFolded(
                "device status",
            ))),
        }
    }

    fn provenance(&self, obs: &Observation, source: Source, device_seqs: Vec<u64>) -> Provenance {
        Provenance {
            source: source as i32,
            board_id: obs.board_id.clone(),
            device_seqs,
            device_time_unix_ms: obs.device_time_unix_ms,
            actor: String::new(),
        }
    }

    fn decide_placement(
        &self,
        obs: &Observation,
        placement: &str,
    ) -> Result<ObservationOutcome, Rejected> {
        let board: Board = placement
            .parse()
            .map_err(
                |e: shakmaty::fen::ParseFenError| Rejected::InvalidPlacement {
                    placement: placement.to_owned(),
                    reason: e.to_string(),
                },
            )?;
        let ply = self.moves.len() as u32 + 1;
        if &board == self.position.board() {
            return Ok(match &self.provisional {
                Some(p) => ObservationOutcome::Events(vec![NewEvent {
                    kind: Kind::ProvisionalWithdrawn(ProvisionalMoveWithdrawn {
                        ply,
                        uci: p.event.uci.clone(),
                    }),
                    provenance: self.provenance(obs, Source::BoardSensor, vec![obs.device_seq]),
                }]),
                None => ObservationOutcome::Ignored(Ignored::TransientPlacement),
            });
        }
        if let Some(mv) = self.legal_move_to(&board) {
            if self.provisional.as_ref().is_some_and(|p| p.mv == mv) {
                return Ok(ObservationOutcome::Ignored(Ignored::Unchanged));
            }
            let provisional = MoveProvisional {
                ply,
                uci: UciMove::from_standard(mv).to_string(),
                san: boardcast_rules::pgn::san_plus(&self.position, &mv),
            };
            let provenance = self.provenance(obs, Source::BoardSensor, vec![obs.device_seq]);
            let mut after = self.position.clone();
            after.play_unchecked(mv);
            // A move that mates or stalemates ends the game at once; no clock press follows
            // (Articles 5.1.a, 5.2.a, 6.7.a).
            if ending(&after).is_some() {
                return Ok(ObservationOutcome::Events(completion(
                    &provisional,
                    &after,
                    None,
                    provenance,
                )));
            }
            return Ok(ObservationOutcome::Events(vec![NewEvent {
                kind: Kind::MoveProvisional(provisional),
                provenance,
            }]));
        }
        if let Some(result) = result_signal(&board) {
            return Ok(ObservationOutcome::Events(vec![NewEvent {
                kind: Kind::Ended(GameEnded {
                    result: result as i32,
                    termination: Termination::BoardResultSignal as i32,
                    detail: format!("kings placed on the centre squares ({placement})"),
                }),
                provenance: self.provenance(obs, Source::BoardSensor, vec![obs.device_seq]),
            }]));
        }
        Ok(ObservationOutcome::Ignored(Ignored::TransientPlacement))
    }

    /// The legal move whose resulting placement is `board`; promotions other than to a queen
    /// are told apart by the piece on the promotion square.
    fn legal_move_to(&self, board: &Board) -> Option<Move> {
        self.position.legal_moves().into_iter().find(|mv| {
            let mut after = self.position.clone();
            after.play_unchecked(*mv);
            after.board() == board
        })
    }

    fn decide_clock(
        &self,
        obs: &Observation,
        running: ClockRun,
        white_ms: u64,
        black_ms: u64,
    ) -> ObservationOutcome {
        let mover = self.position.turn();
        let opponent_running = match mover {
            Color::White => running == ClockRun::Black,
            Color::Black => running == ClockRun::White,
        };
        if !opponent_running {
            return ObservationOutcome::Ignored(Ignored::ClockTick);
        }
        let Some(provisional) = &self.provisional else {
            return ObservationOutcome::Ignored(Ignored::PressWithoutMove);
        };
        let mut after = self.position.clone();
        after.play_unchecked(provisional.mv);
        let mut device_seqs = provisional.device_seqs.clone();
        device_seqs.push(obs.device_seq);
        let provenance = self.provenance(obs, Source::Clock, device_seqs);
        ObservationOutcome::Events(completion(
            &provisional.event,
            &after,
            Some((white_ms, black_ms)),
            provenance,
        ))
    }
}

/// How the game ends with this position on the board, if it does.
fn ending(after: &Chess) -> Option<(GameResult, Termination, &'static str)> {
    if after.is_checkmate() {
        let winner = !after.turn();
        Some((
            if winner == Color::White {
                GameResult::WhiteWins
            } else {
                GameResult::BlackWins
            },
            Termination::Checkmate,
            "checkmate",
        ))
    } else if after.is_stalemate() {
        Some((GameResult::Draw, Termination::Stalemate, "stalemate"))
    } else {
        None
    }
}

/// The events that complete a move: the move, and the end of the game if it ends it.
fn completion(
    mv: &MoveProvisional,
    after: &Chess,
    clocks: Option<(u64, u64)>,
    provenance: Provenance,
) -> Vec<NewEvent> {
    let mut events = vec![NewEvent {
        kind: Kind::MoveCompleted(MoveCompleted {
            ply: mv.ply,
            uci: mv.uci.clone(),
            san: mv.san.clone(),
            fen_after: fen_of(after),
            white_remaining_ms: clocks.map(|c| c.0),
            black_remaining_ms: clocks.map(|c| c.1),
        }),
        provenance: provenance.clone(),
    }];
    if let Some((result, termination, detail)) = ending(after) {
        events.push(NewEvent {
            kind: Kind::Ended(GameEnded {
                result: result as i32,
                termination: termination as i32,
                detail: detail.to_owned(),
            }),
            provenance,
        });
    }
    events
}

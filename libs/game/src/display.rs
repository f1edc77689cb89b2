//! What viewers see of a game: the score, the clocks, the result and the board's status, folded
//! from the game's events without move inference, so that its size grows with the moves only.
//!
//! Display data (Article 6.14): nothing on an arbiter's path reads it. It follows the log's
//! meaning — the same completed moves, restores, rulings and clock changes as [`Game`] — but
//! keeps none of the observations that the aggregate needs to decide.
//!
//! [`Game`]: crate::Game

use boardcast_rules::pgn::{AnnotatedGame, PgnGame, PgnMove};

use crate::events::{
    GameEvent, GameStarted, MoveProvisional, PenaltyDecision, Source, arbiter_action::Action,
    game_event::Kind,
};

/// One game as viewers see it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DisplayGame {
    pub game_id: String,
    /// The set-up: players, time control, round and board. Kept as the encoded `GameStarted`
    /// in snapshots, so that a field added to the schema survives a restart.
    #[serde(with = "started_bytes")]
    pub info: GameStarted,
    pub moves: Vec<DisplayMove>,
    /// Moves the board shows after the completed ones that no clock press confirmed yet.
    pub provisional: Vec<ProvisionalMove>,
    /// The clocks as last known: a reading at a completed move, then whatever the arbiter did.
    pub clocks: Option<Clocks>,
    pub result: Option<Ending>,
    pub board: BoardState,
    /// Plies after which the mover offered a draw.
    pub draw_offers: Vec<u32>,
    /// The arbiter's rulings as viewers may read them (`wording::public_ruling`: no notes,
    /// reasons or names), at the number of completed moves they followed.
    pub arbiter_notes: Vec<(u32, String)>,
    /// Illegal moves whose penalty may give the opponent time, for the clocks when confirmed.
    illegal_moves: Vec<IllegalMove>,
    /// The clock stands (the arbiter stopped it): neither side's time runs until it goes again
    /// or a move is completed. Absent from views stored before it was kept.
    #[serde(default)]
    pub clock_stopped: bool,
    /// When the game service recorded the last event that changed this view, ms since the epoch.
    pub updated_unix_ms: i64,
}

/// Whether a clock reading in the log says the clock stands (`Some(true)`) or runs
/// (`Some(false)`); `None` for any other event. Viewers are told only when that changes: most
/// readings only confirm that the side to move is thinking.
pub fn clock_stopped_by(event: &GameEvent) -> Option<bool> {
    let Some(Kind::ObservationRecorded(recorded)) = &event.kind else {
        return None;
    };
    match recorded.observation.as_ref()?.kind.as_ref()? {
        crate::device::observation::Kind::Clock(reading) => match reading.running() {
            crate::device::ClockRun::Stopped => Some(true),
            crate::device::ClockRun::White | crate::device::ClockRun::Black => Some(false),
            crate::device::ClockRun::Unspecified => None,
        },
        _ => None,
    }
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DisplayMove {
    pub ply: u32,
    pub uci: String,
    pub san: String,
    pub fen_after: String,
    /// The mover's clock after the move, when a clock reported it.
    pub clock_ms: Option<u64>,
    /// Confirmed by a clock press, an arbiter or a scoresheet; false for a move only the board
    /// showed (reconstructed, or completed by mate without a press).
    pub confirmed: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProvisionalMove {
    pub ply: u32,
    pub uci: String,
    pub san: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Clocks {
    pub white_ms: u64,
    pub black_ms: u64,
    /// When these times were read or set (recorded time, ms since the epoch): the side to move
    /// has used time since then.
    pub as_of_unix_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Ending {
    /// The PGN result token: `1-0`, `0-1`, `1/2-1/2`, or a score only the Result tag carries:
    /// `0-0` (both lost), `1/2-0`, `0-1/2`.
    pub result: String,
    /// How the game ended, in words for viewers.
    pub termination: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BoardState {
    /// False while the board is not responding or disconnected: its moves are not being seen.
    pub responding: bool,
    pub battery_percent: Option<u32>,
    pub battery_low: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct IllegalMove {
    game_seq: u64,
    offender_is_white: bool,
    opponent_bonus_ms: u64,
    /// Completed moves when it was made: a restore to before it cancels its time.
    completed_moves: usize,
}

/// Why an event could not be shown.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DisplayError {
    #[error("log entry {game_seq}: {reason}")]
    Inconsistent { game_seq: u64, reason: String },
    #[error("the first event of a game must be its start")]
    NotAStart,
}

mod started_bytes {
    use prost::Message as _;

    use crate::events::GameStarted;

    pub fn serialize<S: serde::Serializer>(info: &GameStarted, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&info.encode_to_vec())
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<GameStarted, D::Error> {
        let bytes: Vec<u8> = serde::Deserialize::deserialize(d)?;
        GameStarted::decode(bytes.as_slice()).map_err(serde::de::Error::custom)
    }
}

/// Whether an event can change what viewers see; the others need not be kept for them.
pub fn shows(event: &GameEvent) -> bool {
    match &event.kind {
        Some(Kind::Started(_))
        | Some(Kind::SetUpRevised(_))
        | Some(Kind::MoveProvisional(_))
        | Some(Kind::ProvisionalWithdrawn(_))
        | Some(Kind::MoveCompleted(_))
        | Some(Kind::Ended(_))
        | Some(Kind::Reconstructed(_))
        | Some(Kind::IllegalMove(_))
        | Some(Kind::PenaltyRevised(_))
        | Some(Kind::ClaimJudged(_))
        | Some(Kind::PositionRestored(_))
        | Some(Kind::BoardStatus(_)) => true,
        // An arbiter's note, the alert queue's bookkeeping and a penalty rejected change
        // nothing viewers see (see `wording::public_ruling`).
        Some(Kind::Arbiter(action)) => !matches!(
            &action.action,
            Some(Action::Acknowledgement(_) | Action::Annotation(_))
                | Some(Action::Penalty(PenaltyDecision {
                    confirmed: false,
                    ..
                }))
        ),
        _ => false,
    }
}

impl DisplayGame {
    /// A game from its first event, `GameStarted`.
    pub fn start(event: &GameEvent) -> Result<DisplayGame, DisplayError> {
        let Some(Kind::Started(info)) = &event.kind else {
            return Err(DisplayError::NotAStart);
        };
        Ok(DisplayGame {
            game_id: event.game_id.clone(),
            info: info.clone(),
            moves: Vec::new(),
            provisional: Vec::new(),
            clocks: None,
            result: None,
            board: BoardState {
                responding: true,
                ..Default::default()
            },
            draw_offers: Vec::new(),
            arbiter_notes: Vec::new(),
            illegal_moves: Vec::new(),
            clock_stopped: false,
            updated_unix_ms: event.recorded_unix_ms,
        })
    }

    /// Folds one event of the game's log (after its start) into the view.
    pub fn evolve(&mut self, event: &GameEvent) -> Result<(), DisplayError> {
        let inconsistent = |reason: String| DisplayError::Inconsistent {
            game_seq: event.game_seq,
            reason,
        };
        let at = event.recorded_unix_ms;
        if let Some(stopped) = clock_stopped_by(event) {
            // Before the first move and after the end no clock runs for viewers either way.
            let shows_a_clock = self.result.is_none() && !self.moves.is_empty();
            if stopped == self.clock_stopped || !shows_a_clock {
                return Ok(());
            }
            // Stopped: the side to move's clock ran until now. Going again: from now.
            if let Some(clocks) = self.clocks_at(at) {
                self.clocks = Some(clocks);
            }
            self.clock_stopped = stopped;
            self.updated_unix_ms = at;
            return Ok(());
        }
        match &event.kind {
            Some(Kind::Started(_)) => return Err(inconsistent("game started twice".into())),
            // The log's reader checked what may change; viewers see the game as now set up.
            Some(Kind::SetUpRevised(revised)) => {
                let set_up = revised
                    .set_up
                    .as_ref()
                    .ok_or_else(|| inconsistent("a revision of the set-up without one".into()))?;
                if set_up.board_id != self.info.board_id {
                    self.board = BoardState {
                        responding: true,
                        ..Default::default()
                    };
                }
                self.info = set_up.clone();
            }
            Some(Kind::MoveProvisional(p)) => {
                self.truncate_line(p.ply)
                    .ok_or_else(|| inconsistent(format!("provisional move for ply {}", p.ply)))?;
                self.provisional.push(ProvisionalMove::from(p));
            }
            Some(Kind::ProvisionalWithdrawn(w)) => {
                self.truncate_line(w.ply);
            }
            Some(Kind::Reconstructed(r)) => {
                self.truncate_line(r.first_ply).ok_or_else(|| {
                    inconsistent(format!("moves reconstructed from ply {}", r.first_ply))
                })?;
                for (i, (uci, san)) in r.uci.iter().zip(&r.san).enumerate() {
                    let offset = u32::try_from(i)
                        .map_err(|_| inconsistent("too many reconstructed moves".into()))?;
                    self.provisional.push(ProvisionalMove {
                        ply: r.first_ply.saturating_add(offset),
                        uci: uci.clone(),
                        san: san.clone(),
                    });
                }
            }
            Some(Kind::MoveCompleted(m)) => {
                let source = event
                    .provenance
                    .as_ref()
                    .map(|p| p.source())
                    .unwrap_or(Source::Unspecified);
                let white_moved = self.white_moves(m.ply);
                // A move completed without a reading (entered by the arbiter, a mate nobody
                // pressed after): the mover's clock ran until then, the opponent's runs from now.
                let counted_down = self.clocks_at(at);
                // A completed move is a press: the opponent's clock runs.
                self.clock_stopped = false;
                self.moves.push(DisplayMove {
                    ply: m.ply,
                    uci: m.uci.clone(),
                    san: m.san.clone(),
                    fen_after: m.fen_after.clone(),
                    clock_ms: if white_moved {
                        m.white_remaining_ms
                    } else {
                        m.black_remaining_ms
                    },
                    confirmed: matches!(
                        source,
                        Source::Clock | Source::Arbiter | Source::Scoresheet
                    ),
                });
                if self.provisional.first().is_some_and(|p| p.uci == m.uci) {
                    self.provisional.remove(0);
                } else {
                    self.provisional.clear();
                }
                self.clocks = match (m.white_remaining_ms, m.black_remaining_ms) {
                    (Some(white_ms), Some(black_ms)) => Some(Clocks {
                        white_ms,
                        black_ms,
                        as_of_unix_ms: at,
                    }),
                    _ => counted_down,
                };
            }
            Some(Kind::Ended(end)) => {
                self.result = Some(Ending {
                    result: crate::terms::result_token(end.result()).to_owned(),
                    termination: crate::wording::termination_name(end.termination())
                        .map_or_else(|| end.detail.clone(), str::to_owned),
                });
                self.provisional.clear();
            }
            Some(Kind::IllegalMove(illegal)) => self.illegal_moves.push(IllegalMove {
                game_seq: event.game_seq,
                offender_is_white: crate::terms::offender(illegal) == crate::events::Side::White,
                opponent_bonus_ms: illegal.opponent_bonus_ms,
                completed_moves: self.moves.len(),
            }),
            Some(Kind::PenaltyRevised(revised)) => {
                if let Some(illegal) = self
                    .illegal_moves
                    .iter_mut()
                    .find(|i| i.game_seq == revised.illegal_move_game_seq)
                {
                    illegal.opponent_bonus_ms = revised.opponent_bonus_ms;
                }
            }
            // As the game reads it: from interpretation 5 (older records show as they did).
            Some(Kind::ClaimJudged(judged)) if self.info.interpretation >= 5 => {
                let claimant = if self.white_to_move() {
                    shakmaty::Color::White
                } else {
                    shakmaty::Color::Black
                };
                if let Some((white, black)) = crate::terms::rejected_claim_time(judged, claimant) {
                    self.add_time(white, black, at);
                }
            }
            Some(Kind::Arbiter(action)) => {
                let completed = self.completed();
                match &action.action {
                    Some(Action::DrawOffer(_)) => self.draw_offers.push(completed),
                    _ => {
                        if let Some(text) = crate::wording::public_ruling(action) {
                            self.arbiter_notes.push((completed, text));
                        }
                    }
                }
                match &action.action {
                    // The end was withdrawn: the game is on again.
                    Some(Action::Resume(_)) => self.result = None,
                    Some(Action::Clocks(c)) => {
                        // As the aggregate applies them: time added, then clocks set.
                        self.add_time(c.white_added_ms, c.black_added_ms, at);
                        self.set_clocks(c.white_remaining_ms, c.black_remaining_ms, at);
                    }
                    Some(Action::Penalty(decision)) if decision.confirmed => {
                        let bonus = self
                            .illegal_moves
                            .iter()
                            .find(|i| i.game_seq == decision.illegal_move_game_seq)
                            .filter(|i| i.completed_moves <= self.moves.len())
                            .map(|i| (i.offender_is_white, i.opponent_bonus_ms));
                        if let Some((offender_is_white, bonus)) = bonus {
                            let bonus = i64::try_from(bonus).unwrap_or(i64::MAX);
                            if offender_is_white {
                                self.add_time(0, bonus, at);
                            } else {
                                self.add_time(bonus, 0, at);
                            }
                        }
                    }
                    _ => {}
                }
            }
            Some(Kind::PositionRestored(restored)) => {
                let ply = restored.ply as usize;
                if ply > self.moves.len() {
                    return Err(inconsistent(format!("cannot restore ply {ply}")));
                }
                // The clock that ran until the restore is the one of the side to move before it.
                self.clocks = self.clocks_at(at);
                self.moves.truncate(ply);
                for (note_ply, _) in &mut self.arbiter_notes {
                    *note_ply = (*note_ply).min(restored.ply);
                }
                self.draw_offers.retain(|p| *p <= restored.ply);
                self.provisional.clear();
                self.illegal_moves.retain(|i| i.completed_moves <= ply);
                self.set_clocks(restored.white_remaining_ms, restored.black_remaining_ms, at);
            }
            Some(Kind::BoardStatus(status)) => {
                use crate::device::DeviceState;
                if !status.battery_low {
                    self.board.responding = !matches!(
                        status.state(),
                        DeviceState::NotResponding | DeviceState::Disconnected
                    );
                }
                // The battery as last reported: low again or no longer (a board back from a
                // charge), whichever report says it.
                if status.battery_percent.is_some() {
                    self.board.battery_percent = status.battery_percent;
                    self.board.battery_low =
                        crate::state::BoardStatus::battery_low(status.battery_percent);
                } else if status.battery_low {
                    self.board.battery_low = true;
                }
            }
            // Nothing viewers see; see `shows`.
            _ => return Ok(()),
        }
        self.updated_unix_ms = at;
        Ok(())
    }

    /// Drops the provisional line from `ply` on; `None` when `ply` does not follow the
    /// completed moves and the line.
    fn truncate_line(&mut self, ply: u32) -> Option<()> {
        let index = (ply as usize).checked_sub(self.moves.len() + 1)?;
        if index > self.provisional.len() {
            return None;
        }
        self.provisional.truncate(index);
        Some(())
    }

    fn completed(&self) -> u32 {
        u32::try_from(self.moves.len()).unwrap_or(u32::MAX)
    }

    /// Whether White made the move of `ply` (1 = the first move from the start position).
    fn white_moves(&self, ply: u32) -> bool {
        (ply % 2 == 1) == self.white_starts()
    }

    fn white_starts(&self) -> bool {
        // The side to move is the FEN's second field; the standard start is White's.
        self.info.start_fen.split_whitespace().nth(1) != Some("b")
    }

    /// Whether the side to move's clock runs, as viewers are told: once the first move is made,
    /// until the game ends, while the clock is not stopped.
    pub fn clock_runs(&self) -> bool {
        self.result.is_none() && !self.moves.is_empty() && !self.clock_stopped
    }

    /// Whether White is to move after the completed moves.
    pub fn white_to_move(&self) -> bool {
        self.white_moves(self.completed().saturating_add(1))
    }

    /// The clocks as they stand at `at`: the side to move's has run since they were read (as
    /// viewers count it down), so it is counted down before either is changed and re-dated.
    fn clocks_at(&self, at: i64) -> Option<Clocks> {
        let mut clocks = self.clocks?;
        if self.clock_runs() {
            let used = u64::try_from(at.saturating_sub(clocks.as_of_unix_ms)).unwrap_or(0);
            if self.white_to_move() {
                clocks.white_ms = clocks.white_ms.saturating_sub(used);
            } else {
                clocks.black_ms = clocks.black_ms.saturating_sub(used);
            }
        }
        clocks.as_of_unix_ms = clocks.as_of_unix_ms.max(at);
        Some(clocks)
    }

    fn add_time(&mut self, white_ms: i64, black_ms: i64, at: i64) {
        if white_ms == 0 && black_ms == 0 {
            return;
        }
        if let Some(mut clocks) = self.clocks_at(at) {
            clocks.white_ms = clocks.white_ms.saturating_add_signed(white_ms);
            clocks.black_ms = clocks.black_ms.saturating_add_signed(black_ms);
            self.clocks = Some(clocks);
        }
    }

    fn set_clocks(&mut self, white: Option<u64>, black: Option<u64>, at: i64) {
        if white.is_none() && black.is_none() {
            return;
        }
        let current = self.clocks_at(at).unwrap_or(Clocks {
            white_ms: white.or(black).unwrap_or(0),
            black_ms: black.or(white).unwrap_or(0),
            as_of_unix_ms: at,
        });
        self.clocks = Some(Clocks {
            white_ms: white.unwrap_or(current.white_ms),
            black_ms: black.unwrap_or(current.black_ms),
            as_of_unix_ms: at,
        });
    }

    /// The position viewers see: after the last completed move.
    pub fn fen(&self) -> String {
        match self.moves.last() {
            Some(m) => m.fen_after.clone(),
            None if self.info.start_fen.is_empty() => {
                crate::state::fen_of(&shakmaty::Chess::default())
            }
            None => self.info.start_fen.clone(),
        }
    }

    /// The PGN result token, `*` while the game goes on.
    pub fn result_token(&self) -> &str {
        self.result.as_ref().map_or("*", |e| e.result.as_str())
    }

    /// The game as a PGN score for feeds: the tags of its set-up, the current clocks
    /// (`WhiteClock`/`BlackClock`, so that time added shows before the next move), every
    /// completed move with `[%clk]`, then the moves the board shows that no press confirmed yet,
    /// marked as such, and the result once the game is over.
    pub fn to_pgn(&self) -> AnnotatedGame {
        let mut tags = crate::pgn_tags(&self.game_id, &self.info);
        if let Some(clocks) = &self.clocks {
            tags.push(("WhiteClock".to_owned(), format_clock_tag(clocks.white_ms)));
            tags.push(("BlackClock".to_owned(), format_clock_tag(clocks.black_ms)));
        }
        let mut moves: Vec<PgnMove> = self
            .moves
            .iter()
            .map(|m| PgnMove {
                san: m.san.clone(),
                clock_ms: m.clock_ms,
                elapsed_ms: None,
                comment: (!m.confirmed).then(|| UNCONFIRMED.to_owned()),
            })
            .collect();
        moves.extend(self.provisional.iter().map(|p| PgnMove {
            san: p.san.clone(),
            clock_ms: None,
            elapsed_ms: None,
            comment: Some(PROVISIONAL.to_owned()),
        }));
        let notes =
            crate::pgn::move_notes(self.moves.len(), &self.draw_offers, &self.arbiter_notes);
        AnnotatedGame {
            game: PgnGame {
                tags,
                moves,
                result: self.result_token().to_owned(),
            },
            notes,
        }
    }
}

/// The comment on a move the board showed that no clock press confirmed yet.
pub const PROVISIONAL: &str = "provisional: seen on the board, not yet confirmed by a clock press";
/// The comment on a completed move that rests on the board alone (reconstructed, or a mate).
pub const UNCONFIRMED: &str = "board only: not confirmed by a clock press, arbiter or scoresheet";

impl From<&MoveProvisional> for ProvisionalMove {
    fn from(p: &MoveProvisional) -> Self {
        ProvisionalMove {
            ply: p.ply,
            uci: p.uci.clone(),
            san: p.san.clone(),
        }
    }
}

/// `H:MM:SS` as in the `WhiteClock`/`BlackClock` tags.
fn format_clock_tag(ms: u64) -> String {
    let seconds = ms / 1000;
    format!(
        "{}:{:02}:{:02}",
        seconds / 3600,
        (seconds / 60) % 60,
        seconds % 60
    )
}

//! `evolve`: one event of the log folded into the game's state. The only code that changes a
//! `Game`; it reads typed terms only (see `terms`), never words.

use shakmaty::{Chess, Move, Position};

use boardcast_inference::{Config as InferenceConfig, Inference};
use boardcast_rules::repetition::RepetitionTracker;

use crate::chain::{ChainError, GENESIS_HASH};
use crate::clock::{ClockSides, PressDoubt};
use crate::device::ClockRun;
use crate::events::{
    GameEvent, GameEventRecord, GameStarted, MoveProvisional, Side, Source, game_event::Kind,
};
use crate::provisional::{Provisional, ProvisionalLine};
use crate::start::{rules_of, start_position};
use crate::state::{
    BoardRecord, BoardStatus, ClockChange, ClockState, CompletedMove, Game, GameError,
    IllegalMoveEntry, RecordHead, RecordedRequest, Rulings, parse_uci_in,
};
use crate::terms;

/// Move inference from `start`, as interpretation `interpretation` reads observations.
fn inference_from(start: Chess, interpretation: u32) -> Inference {
    Inference::with_config(
        start,
        InferenceConfig {
            confirmed_line_stays_reachable: interpretation >= 2,
            turned_round_anywhere: interpretation >= 7,
            ..InferenceConfig::default()
        },
    )
}

impl Game {
    pub(crate) fn from_first_checked(
        record: &GameEventRecord,
        event: GameEvent,
    ) -> Result<Game, GameError> {
        if record.prev_hash.as_slice() != GENESIS_HASH.as_slice() || event.game_seq != 1 {
            return Err(ChainError::BrokenLink {
                game_seq: event.game_seq,
            }
            .into());
        }
        let started_by_request = event
            .provenance
            .as_ref()
            .map(|p| p.request_id.clone())
            .unwrap_or_default();
        let Some(Kind::Started(info)) = event.kind else {
            return Err(GameError::NotStarted);
        };
        let mut head = [0u8; 32];
        head.copy_from_slice(&record.hash);
        let record_head = RecordHead {
            last_game_seq: 1,
            chain_head: head,
            signed: u64::from(!record.signature.is_empty()),
            unsigned: u64::from(record.signature.is_empty()),
            started_by_request,
            requests: Default::default(),
            revisions: Default::default(),
        };
        Game::set_up(event.game_id, info, record_head)
    }

    /// A game as its first record sets it up, before anything is observed.
    fn set_up(game_id: String, info: GameStarted, record: RecordHead) -> Result<Game, GameError> {
        let position = start_position(&info)?;
        let rules = rules_of(&info)?;
        let board_seq_floor = info.board_seq_before;
        let interpretation = info.interpretation;
        Ok(Game {
            game_id,
            inference: inference_from(position.clone(), interpretation),
            repetition: RepetitionTracker::new(rules.edition, &position, 1),
            rules,
            info,
            interpretation,
            start: position.clone(),
            position,
            moves: Vec::new(),
            provisional: ProvisionalLine::default(),
            reconstructed: Default::default(),
            result: None,
            begun: false,
            record,
            board: BoardRecord {
                seq_floor: board_seq_floor,
                ..BoardRecord::default()
            },
            clock: ClockState::default(),
            rulings: Rulings::default(),
            dead_answers: Default::default(),
        })
    }

    /// Folds a revision of the set-up (`SetUpRevised`). The players' and the event's details
    /// change the game's description only. What its observations are read with may change only
    /// before the game began, and only what depends on it starts again: the rules (time
    /// control, Laws); the start position, repetitions and inference (a start position —
    /// the board's orientation is kept); the board and clock as observed (another physical
    /// board, followed after `board_seq_before`). What the log recorded stays: its record, the
    /// arbiters' rulings, and on the same board what the board and clock showed.
    fn revise_set_up(&mut self, revised: &GameStarted) -> Result<(), String> {
        if let Some(what) = crate::start::unrevisable(&self.info, revised) {
            return Err(format!("a revision of the set-up changes its {what}"));
        }
        let new_board = crate::start::moves_board(&self.info, revised);
        let new_rules = crate::start::changes_the_rules(&self.info, revised);
        if !new_board && new_rules.is_none() {
            self.info = revised.clone();
            return Ok(());
        }
        if self.has_begun() {
            if let Some(what) = new_rules {
                return Err(format!(
                    "the set-up revised after the game began changes its {what}"
                ));
            }
            if !self.provisional.is_empty() {
                return Err("moved to another board with a move standing on the old one".into());
            }
            return self.move_to_board(revised);
        }
        // Everything that can fail first: a revision that does not fold changes nothing.
        let rules = rules_of(revised).map_err(|e| e.to_string())?;
        let start = start_position(revised).map_err(|e| e.to_string())?;
        let new_start = crate::state::fen_of(&start) != crate::state::fen_of(&self.start);
        if new_board {
            self.board = BoardRecord {
                seq_floor: revised.board_seq_before,
                ..BoardRecord::default()
            };
            self.clock = ClockState::default();
        }
        if new_board || new_start {
            let orientation = self.inference.orientation();
            self.inference = inference_from(start.clone(), self.interpretation);
            if !new_board {
                self.inference.set_orientation(orientation);
            }
            self.board.start_seen &= !new_start;
            self.dead_answers = Default::default();
        }
        self.repetition = RepetitionTracker::new(rules.edition, &start, 1);
        self.start = start.clone();
        self.position = start;
        self.rules = rules;
        self.info = revised.clone();
        Ok(())
    }

    /// The game in play moved to another physical board (its board or clock broke): that
    /// board is followed after `revised.board_seq_before`, from the position the completed
    /// moves reach, as the board shows it from now on; its clock is another clock (which
    /// display is White's is worked out again, and the time control's prediction starts from
    /// its own readings), what the arbiters did to the clocks stays. The old clock's presses in
    /// doubt are settled by the revision's own records, after it.
    fn move_to_board(&mut self, revised: &GameStarted) -> Result<(), String> {
        let mut inference = inference_from(self.start.clone(), self.interpretation);
        let moves: Vec<Move> = self.moves.iter().map(|m| m.mv).collect();
        inference
            .sync(self.start.clone(), &moves)
            .map_err(|e| format!("following the game on another board: {e}"))?;
        self.inference = inference;
        self.board = BoardRecord {
            seq_floor: revised.board_seq_before,
            ..BoardRecord::default()
        };
        self.clock = ClockState {
            changes: std::mem::take(&mut self.clock.changes),
            doubts: std::mem::take(&mut self.clock.doubts),
            new_clock_at: Some(self.moves.len()),
            ..ClockState::default()
        };
        self.info = revised.clone();
        Ok(())
    }

    pub(crate) fn evolve(&mut self, event: &GameEvent) -> Result<(), GameError> {
        let inconsistent = |reason: String| GameError::Inconsistent {
            game_seq: event.game_seq,
            reason,
        };
        match &event.kind {
            None => return Err(inconsistent("event without content".into())),
            Some(Kind::Started(_)) => return Err(inconsistent("game started twice".into())),
            Some(Kind::SetUpRevised(revised)) => {
                let set_up = revised
                    .set_up
                    .as_ref()
                    .ok_or_else(|| inconsistent("a revision of the set-up without one".into()))?;
                self.revise_set_up(set_up).map_err(inconsistent)?;
                if let Some(p) = event
                    .provenance
                    .as_ref()
                    .filter(|p| !p.request_id.is_empty())
                {
                    self.record.revisions.insert(p.request_id.clone());
                }
            }
            Some(Kind::ObservationRecorded(recorded)) => {
                let observation = recorded
                    .observation
                    .as_ref()
                    .ok_or_else(|| inconsistent("recorded observation is empty".into()))?;
                self.board.last_device_seq = self.board.last_device_seq.max(observation.device_seq);
                // Same input, same engine state: the outputs were recorded as their own events.
                if let Some(input) = self.inference_input(observation) {
                    self.inference.observe(input);
                }
                if let Some(crate::device::observation::Kind::Placement(p)) = &observation.kind
                    && let Ok(board) = p.placement.parse::<shakmaty::Board>()
                {
                    let mut rotated = board.clone();
                    rotated.rotate_180();
                    self.board.start_seen |= [board, rotated].contains(self.start.board());
                }
                if let Some(touch) = crate::terms::touch_of(observation) {
                    let at_ms = observation.device_time_unix_ms;
                    self.board.touches.push((
                        event.game_seq,
                        boardcast_rules::touch::TimedTouch { touch, at_ms },
                    ));
                }
                if let Some(crate::device::observation::Kind::Status(s)) = &observation.kind
                    && s.clock_connected.is_some()
                {
                    self.board.clock_connected = s.clock_connected;
                }
                if let Some(crate::device::observation::Kind::Clock(c)) = &observation.kind {
                    self.clock.last_reading = Some(*c);
                    self.clock.last_reading_at_ms = observation.device_time_unix_ms;
                    self.follow_clock();
                }
            }
            Some(Kind::MoveProvisional(p)) => {
                let completed = self.moves.len();
                if !self.provisional.withdraw(completed, p.ply) {
                    return Err(inconsistent(format!("provisional move for ply {}", p.ply)));
                }
                let mv = parse_uci_in(&self.line_position(), &p.uci)
                    .map_err(|e| inconsistent(format!("provisional move: {e}")))?;
                let device_seqs = event
                    .provenance
                    .as_ref()
                    .map(|p| p.device_seqs.clone())
                    .unwrap_or_default();
                self.provisional.place(
                    completed,
                    Provisional {
                        mv,
                        event: p.clone(),
                        device_seqs,
                    },
                );
            }
            Some(Kind::ProvisionalWithdrawn(w)) => {
                self.provisional.withdraw(self.moves.len(), w.ply);
            }
            Some(Kind::MoveCompleted(m)) => {
                let mv = self
                    .parse_uci(&m.uci)
                    .map_err(|e| inconsistent(format!("completed move: {e}")))?;
                self.position.play_unchecked(mv);
                self.repetition
                    .play(mv, event.game_seq)
                    .map_err(|e| inconsistent(format!("completed move: {e}")))?;
                let source = event
                    .provenance
                    .as_ref()
                    .map(|p| p.source())
                    .unwrap_or(Source::Unspecified);
                self.moves.push(CompletedMove {
                    event: m.clone(),
                    mv,
                    source,
                    game_seq: event.game_seq,
                    device_time_unix_ms: event
                        .provenance
                        .as_ref()
                        .map(|p| p.device_time_unix_ms)
                        .unwrap_or(0),
                });
                self.provisional.complete(mv);
                self.board.irregular = None;
                self.board.touches.clear();
                self.clock.stood = false;
                // A move completed without the engine's confirmation (a mate needs no press, an
                // arbiter enters a move): the engine follows the game, not the other way round.
                if self.inference.confirmed_plies() as usize != self.moves.len() {
                    self.sync_inference()
                        .map_err(|e| inconsistent(format!("following the completed moves: {e}")))?;
                }
            }
            Some(Kind::Ended(end)) => {
                self.result = Some((end.result(), end.termination()));
                self.provisional.clear();
            }
            Some(Kind::ClockSides(sides)) => {
                self.clock.sides = ClockSides::from_event(sides);
                // The last reading (the one before the press that showed the sides) reads
                // differently now.
                self.follow_clock();
            }
            Some(Kind::SetupMismatch(mismatch)) => {
                self.board
                    .setup_mismatches
                    .retain(|m| m.aspect != mismatch.aspect);
                self.board.setup_mismatches.push(mismatch.clone());
            }
            Some(Kind::SetupMismatchCleared(cleared)) => self
                .board
                .setup_mismatches
                .retain(|m| m.aspect != cleared.aspect),
            Some(Kind::PressInDoubt(doubt)) => {
                // Recorded right after the press's observation.
                let reading = self.clock.last_reading.ok_or_else(|| {
                    inconsistent("a press in doubt without a clock reading".into())
                })?;
                self.clock.doubts.push(PressDoubt {
                    game_seq: event.game_seq,
                    event: doubt.clone(),
                    reading,
                    device_seq: self.board.last_device_seq,
                    // The position the press's ply was to be played in: after the completed
                    // moves and those the board showed before it.
                    position: self.line_position(),
                });
            }
            Some(Kind::PressSettled(settled)) => self
                .clock
                .doubts
                .retain(|d| d.game_seq != settled.doubt_game_seq),
            Some(Kind::DeadPositionUndetermined(noted)) => {
                self.rulings.dead_undetermined_at.get_or_insert(noted.ply);
            }
            Some(Kind::ClaimJudged(judged)) => {
                // A rejected claim's penalty is given on the clock there and then (Article
                // 9.5): the next readings show it (from interpretation 5). The claimant is the
                // player to move, as checked when it was decided.
                if self.interpretation >= 5
                    && let Some((white_ms, black_ms)) =
                        terms::rejected_claim_time(judged, self.position.turn())
                {
                    // Made now, after every change recorded so far: in order, as the
                    // arbiter's clock adjustments are.
                    self.clock.changes.push((
                        self.moves.len(),
                        event.game_seq,
                        ClockChange::Added { white_ms, black_ms },
                    ));
                }
            }
            Some(Kind::ClockAlert(alert)) => match alert.ply {
                // A flag not counted is about the flag, not the move it came after. Before the
                // first move it is told as a display set wrongly is (what it shows is told once).
                ply if ply > 0 && alert.flag_not_counted => {}
                0 => self.clock.set_up_told.push((
                    terms::side_or_legacy(alert.clock_of(), &alert.side),
                    alert.reported_ms,
                )),
                ply => {
                    if let Some(mv) = self.moves.get(ply as usize - 1) {
                        self.clock.alerted.push((ply, mv.game_seq));
                        let difference = i64::try_from(alert.reported_ms)
                            .ok()
                            .zip(i64::try_from(alert.expected_ms).ok())
                            .and_then(|(reported, expected)| reported.checked_sub(expected));
                        if let Some(difference) = difference {
                            self.clock.differences.push((ply, difference));
                        }
                    }
                }
            },
            Some(Kind::Touch(_)) | Some(Kind::TouchMove(_)) => {}
            Some(Kind::BoardStatus(status)) => {
                self.board.status = BoardStatus {
                    state: status.state(),
                    battery_percent: status.battery_percent,
                };
            }
            Some(Kind::Reconstructed(r)) => {
                // The board jumped over these moves: they join the line, unconfirmed, and the
                // next press completes them with the rest.
                let completed = self.moves.len();
                if !self.provisional.withdraw(completed, r.first_ply) {
                    return Err(inconsistent(format!(
                        "moves reconstructed from ply {}",
                        r.first_ply
                    )));
                }
                for (i, (uci, san)) in r.uci.iter().zip(&r.san).enumerate() {
                    let ply = r.first_ply + i as u32;
                    let mv = parse_uci_in(&self.line_position(), uci)
                        .map_err(|e| inconsistent(format!("reconstructed move: {e}")))?;
                    self.provisional.place(
                        completed,
                        Provisional {
                            mv,
                            event: MoveProvisional {
                                ply,
                                uci: uci.clone(),
                                san: san.clone(),
                                replaces_uci: String::new(),
                            },
                            device_seqs: Vec::new(),
                        },
                    );
                    self.reconstructed.insert(ply);
                }
            }
            Some(Kind::ObservationsMissing(missing)) => {
                self.board.last_device_seq =
                    self.board.last_device_seq.max(missing.last_device_seq);
                self.board.missing.push(missing.clone());
            }
            Some(Kind::Irregularity(i)) => self.board.irregular = Some(i.placement.clone()),
            Some(Kind::IrregularityCleared(_)) => self.board.irregular = None,
            Some(Kind::IllegalMove(illegal)) => {
                match terms::offender(illegal) {
                    Side::White => self.rulings.illegal_tally.white = illegal.offender_count,
                    Side::Black => self.rulings.illegal_tally.black = illegal.offender_count,
                    Side::Unspecified => {
                        return Err(inconsistent(format!(
                            "illegal move by {:?}",
                            illegal.offender
                        )));
                    }
                }
                // From interpretation 1 an illegal move can be recorded when a later press settles
                // it: it was made after the moves before its ply.
                let completed_moves = if self.interpretation >= 1 {
                    (illegal.ply as usize).saturating_sub(1)
                } else {
                    self.moves.len()
                };
                self.rulings.illegal_moves.push(IllegalMoveEntry {
                    game_seq: event.game_seq,
                    event: illegal.clone(),
                    decided: None,
                    completed_moves,
                });
            }
            Some(Kind::PenaltyRevised(revised)) => {
                let entry = self
                    .rulings
                    .illegal_moves
                    .iter_mut()
                    .find(|e| e.game_seq == revised.illegal_move_game_seq)
                    .ok_or_else(|| {
                        inconsistent(format!(
                            "a penalty revised for log entry {}, which records no illegal move",
                            revised.illegal_move_game_seq
                        ))
                    })?;
                let proposal = &mut entry.event;
                proposal.offender_count = revised.offender_count;
                proposal.penalty = revised.penalty;
                proposal.proposed_penalty = revised.proposed_penalty.clone();
                proposal.opponent_bonus_ms = revised.opponent_bonus_ms;
                proposal.result_if_confirmed = revised.result_if_confirmed;
            }
            Some(Kind::Arbiter(action)) => {
                let actor = event
                    .provenance
                    .as_ref()
                    .map(|p| p.actor.as_str())
                    .unwrap_or_default();
                if let Some(request_id) = event.provenance.as_ref().map(|p| &p.request_id)
                    && !request_id.is_empty()
                {
                    self.record.requests.insert(
                        request_id.clone(),
                        RecordedRequest {
                            game_seq: event.game_seq,
                            actor: actor.to_owned(),
                            action: action.clone(),
                        },
                    );
                }
                let ply = self.moves.len() as u32;
                if let Some(crate::events::arbiter_action::Action::DrawOffer(_)) = &action.action {
                    self.rulings.draw_offers.push(ply);
                } else if let Some(text) = crate::wording::arbiter_action(action) {
                    self.rulings
                        .arbiter_notes
                        .push((ply, format!("{text} ({actor})")));
                }
                if let Some(crate::events::arbiter_action::Action::Resume(_)) = &action.action {
                    // The end is withdrawn: the game goes on from its completed moves, which the
                    // engine follows again (what it held unconfirmed at the end was dropped).
                    self.result = None;
                    self.sync_inference()
                        .map_err(|e| inconsistent(format!("resuming play: {e}")))?;
                }
                if let Some(crate::events::arbiter_action::Action::Clocks(c)) = &action.action {
                    let completed = self.moves.len();
                    self.clock.changes.push((
                        completed,
                        event.game_seq,
                        ClockChange::Added {
                            white_ms: c.white_added_ms,
                            black_ms: c.black_added_ms,
                        },
                    ));
                    if c.white_remaining_ms.is_some() || c.black_remaining_ms.is_some() {
                        self.clock.changes.push((
                            completed,
                            event.game_seq,
                            ClockChange::Set {
                                white: c.white_remaining_ms,
                                black: c.black_remaining_ms,
                            },
                        ));
                    }
                }
                if let Some(crate::events::arbiter_action::Action::Penalty(decision)) =
                    &action.action
                    && let Some(entry) = self
                        .rulings
                        .illegal_moves
                        .iter_mut()
                        .find(|e| e.game_seq == decision.illegal_move_game_seq)
                {
                    entry.decided = Some(decision.confirmed);
                    // A confirmed penalty's time is given to the opponent on the clock, as a rule
                    // when the illegal move is dealt with at the board: it counts from then,
                    // before whatever the arbiter did to the clocks later. (After a restore to
                    // before the illegal move, the clocks set with the restore govern.)
                    let bonus = entry.event.opponent_bonus_ms as i64;
                    if decision.confirmed && bonus > 0 && entry.completed_moves <= self.moves.len()
                    {
                        let (white_ms, black_ms) = match terms::offender(&entry.event) {
                            Side::White => (0, bonus),
                            _ => (bonus, 0),
                        };
                        self.clock.changes.push((
                            entry.completed_moves,
                            entry.game_seq,
                            ClockChange::Added { white_ms, black_ms },
                        ));
                        self.clock
                            .changes
                            .sort_by_key(|(completed, game_seq, _)| (*completed, *game_seq));
                    }
                    // A rejected penalty does not count towards the next one.
                    if !decision.confirmed
                        && terms::rejection_uncounts(terms::penalty(&entry.event))
                    {
                        match terms::offender(&entry.event) {
                            Side::White => {
                                self.rulings.illegal_tally.white =
                                    self.rulings.illegal_tally.white.saturating_sub(1)
                            }
                            _ => {
                                self.rulings.illegal_tally.black =
                                    self.rulings.illegal_tally.black.saturating_sub(1)
                            }
                        }
                    }
                }
            }
            Some(Kind::PositionRestored(restored)) => {
                let ply = restored.ply as usize;
                if ply > self.moves.len() {
                    return Err(inconsistent(format!("cannot restore ply {ply}")));
                }
                self.moves.truncate(ply);
                // The rulings made on the plies taken back stay in the score, at the ply the game
                // goes on from: they are part of what happened.
                for (note_ply, _) in &mut self.rulings.arbiter_notes {
                    *note_ply = (*note_ply).min(restored.ply);
                }
                // Presses in doubt about plies the restore took back are left for the arbiter's
                // ruling that restored the position: no later press settles them.
                self.clock.doubts.retain(|d| d.event.ply as usize <= ply);
                self.clock
                    .changes
                    .retain(|(completed, _, _)| *completed <= ply);
                self.clock.changes.push((
                    ply,
                    event.game_seq,
                    ClockChange::Restored {
                        white: restored.white_remaining_ms,
                        black: restored.black_remaining_ms,
                    },
                ));
                self.board.touches.clear();
                // Moves taken back to before the game moved to another clock: the moves made
                // from here on are timed on the new one.
                self.clock.new_clock_at = self.clock.new_clock_at.map(|at| at.min(ply));
                self.repetition.truncate(restored.ply);
                self.position = self.repetition.position().clone();
                self.provisional.clear();
                self.board.irregular = None;
                self.sync_inference()
                    .map_err(|e| inconsistent(format!("restoring ply {ply}: {e}")))?;
            }
        }
        self.begun |= matches!(
            event.kind,
            Some(
                Kind::MoveCompleted(_)
                    | Kind::Reconstructed(_)
                    | Kind::IllegalMove(_)
                    | Kind::Ended(_)
            )
        );
        Ok(())
    }

    /// The clock's running side and flags from the last recorded reading, read with the sides.
    pub(crate) fn follow_clock(&mut self) {
        let Some(raw) = self.clock.last_reading else {
            return;
        };
        let reading = self.clock.sides.read(&raw);
        self.clock.flags = (reading.white_flag, reading.black_flag);
        self.clock.ran |= matches!(reading.running(), ClockRun::White | ClockRun::Black);
        match (self.interpretation, reading.running()) {
            (0, running @ (ClockRun::White | ClockRun::Black)) => self.clock.running = running,
            // Interpretation 0: a paused clock is not a press when it runs again, so only White
            // and Black count.
            (0, _) => {}
            (_, running) => {
                self.clock.stood |= running == ClockRun::Stopped;
                self.clock.running = running;
            }
        }
    }

    /// Makes the move inference follow the game's completed moves.
    pub(crate) fn sync_inference(&mut self) -> Result<(), String> {
        let moves: Vec<Move> = self.moves.iter().map(|m| m.mv).collect();
        self.inference
            .sync(self.start.clone(), &moves)
            .map_err(|e| e.to_string())
    }
}

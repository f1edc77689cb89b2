//! Arbiter actions: decisions and records, each with the arbiter's name.

use boardcast_rules::illegal::recounted_penalty;
use boardcast_rules::outcome::{agreement, resignation};
use shakmaty::{Color, Position, uci::UciMove};

use crate::events::{
    ArbiterAction, GameEnded, GameResult, MoveCompleted, PenaltyRevised, PositionRestored,
    Provenance, Side, Source, Termination, arbiter_action::Action, game_event::Kind,
};
use crate::observation::MAX_CLOCK_MS;
use crate::record::NewEvent;
use crate::state::{Game, IllegalMoveEntry, fen_of};
use crate::terms::{self, ending_of};
use crate::wording;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ActionRejected {
    #[error("an arbiter action needs the arbiter's name")]
    NoActor,
    #[error("the action is empty")]
    Empty,
    #[error("the game is over; only results, penalty decisions and annotations can be entered")]
    GameOver,
    #[error("{0}")]
    Invalid(String),
    #[error(
        "request id {request_id:?} already recorded another action (log entry {game_seq}); \
         choose a new id for a new action"
    )]
    RequestIdReused { request_id: String, game_seq: u64 },
}

/// The side an action names (after [`normalized`], its typed field).
fn side(side: Side) -> Result<Color, ActionRejected> {
    terms::color_of(side).ok_or_else(|| ActionRejected::Invalid("the side is missing".into()))
}

/// A side given as its typed value or, from clients older than it, as words: both are
/// recorded, the typed value for readers and the words for readers older than it. The two must
/// agree when both are given.
fn normalized_side(typed: Side, words: &str) -> Result<(Side, String), ActionRejected> {
    let from_words = terms::legacy_side(words);
    if !words.is_empty() && from_words == Side::Unspecified {
        return Err(ActionRejected::Invalid(format!(
            "side must be \"white\" or \"black\", got {words:?}"
        )));
    }
    let side = match (typed, from_words) {
        (Side::Unspecified, from_words) => from_words,
        (typed, Side::Unspecified) => typed,
        (typed, from_words) if typed == from_words => typed,
        (typed, from_words) => {
            return Err(ActionRejected::Invalid(format!(
                "the side is given as {} and as {:?}",
                wording::side(typed),
                wording::side(from_words)
            )));
        }
    };
    let words = if side == Side::Unspecified {
        String::new()
    } else {
        wording::side(side).to_owned()
    };
    Ok((side, words))
}

/// The action as it is recorded: sides both typed and in words.
fn normalized(action: &ArbiterAction) -> Result<ArbiterAction, ActionRejected> {
    let mut action = action.clone();
    match action.action.as_mut() {
        Some(Action::DrawOffer(who) | Action::Resignation(who)) => {
            let (side, words) = normalized_side(who.player(), &who.side)?;
            who.set_player(side);
            who.side = words;
        }
        Some(Action::Claim(ruling)) => {
            let (side, words) = normalized_side(ruling.claimant_side(), &ruling.claimant)?;
            ruling.set_claimant_side(side);
            ruling.claimant = words;
        }
        _ => {}
    }
    Ok(action)
}

impl Game {
    /// The later penalties not ruled on yet of the same offender, proposed again when the
    /// penalty of `rejected` is rejected: each counts one lower (interpretation 5 or later).
    fn penalties_recounted(&self, rejected: &IllegalMoveEntry) -> Vec<PenaltyRevised> {
        let offender = terms::offender(&rejected.event);
        if self.interpretation < 5 || !terms::rejection_uncounts(terms::penalty(&rejected.event)) {
            return Vec::new();
        }
        let Some(color) = terms::color_of(offender) else {
            return Vec::new();
        };
        let edition = self.rules.edition.to_string();
        self.rulings
            .illegal_moves
            .iter()
            .filter(|later| {
                later.game_seq > rejected.game_seq
                    && later.decided.is_none()
                    && terms::offender(&later.event) == offender
            })
            .filter_map(|later| {
                let judged = terms::rules_penalty(&later.event)?;
                let count = later.event.offender_count.checked_sub(1)?;
                let recounted = recounted_penalty(&self.rules, count, judged);
                let (penalty, opponent_bonus_ms, result) =
                    terms::penalty_terms(recounted, true, color);
                Some(PenaltyRevised {
                    illegal_move_game_seq: later.game_seq,
                    offender_count: count,
                    penalty: penalty as i32,
                    proposed_penalty: wording::penalty(penalty, opponent_bonus_ms, Some(&edition)),
                    opponent_bonus_ms,
                    result_if_confirmed: result as i32,
                    because_rejected_game_seq: rejected.game_seq,
                })
            })
            .collect()
    }

    /// The provisional moves a result declared now settles (interpretation 3 or later).
    fn settled_line(&self, provenance: &Provenance) -> Vec<NewEvent> {
        if self.interpretation < 3 {
            return Vec::new();
        }
        crate::provisional::settled_by_result(
            self.provisional.moves(),
            &self.position,
            provenance,
            false,
        )
    }

    /// Decides an arbiter's action: the action itself is recorded, then its effects.
    ///
    /// `request_id` is the client's id for the action (may be empty): when the log already holds
    /// the same action from the same actor under it, this is a retry and nothing is to be
    /// recorded (no events); another action under it is `RequestIdReused`.
    pub fn decide_arbiter(
        &self,
        action: &ArbiterAction,
        actor: &str,
        request_id: &str,
    ) -> Result<Vec<NewEvent>, ActionRejected> {
        if actor.trim().is_empty() {
            return Err(ActionRejected::NoActor);
        }
        if let Some(earlier) = self.record.requests.get(request_id) {
            let same_action = earlier.action == *action
                || matches!(
                    (normalized(&earlier.action), normalized(action)),
                    (Ok(recorded), Ok(retried)) if recorded == retried
                );
            if same_action && earlier.actor == actor {
                return Ok(Vec::new());
            }
            return Err(ActionRejected::RequestIdReused {
                request_id: request_id.to_owned(),
                game_seq: earlier.game_seq,
            });
        }
        let action = &normalized(action)?;
        let inner = action.action.as_ref().ok_or(ActionRejected::Empty)?;
        let allowed_after_end = matches!(
            inner,
            Action::Penalty(_)
                | Action::Result(_)
                | Action::Annotation(_)
                | Action::Acknowledgement(_)
                | Action::Resume(_)
        );
        if self.is_over() && !allowed_after_end {
            return Err(ActionRejected::GameOver);
        }
        let in_log = |game_seq: u64| (1..=self.record.last_game_seq).contains(&game_seq);
        if let Some(&outside) = action.resolves_alerts.iter().find(|&&s| !in_log(s)) {
            return Err(ActionRejected::Invalid(format!(
                "the ruling resolves the alert of log entry {outside}, but the log has entries \
                 1 to {}",
                self.record.last_game_seq
            )));
        }
        let provenance = Provenance {
            source: Source::Arbiter as i32,
            actor: actor.to_owned(),
            request_id: request_id.to_owned(),
            ..Default::default()
        };
        let ended = |end: GameEnded| NewEvent {
            kind: Kind::Ended(end),
            provenance: provenance.clone(),
        };
        let mut events = vec![NewEvent {
            kind: Kind::Arbiter(action.clone()),
            provenance: provenance.clone(),
        }];
        match inner {
            Action::Penalty(decision) => {
                let Some(record) = self
                    .rulings
                    .illegal_moves
                    .iter()
                    .find(|r| r.game_seq == decision.illegal_move_game_seq)
                else {
                    return Err(ActionRejected::Invalid(format!(
                        "no illegal move was recorded at log entry {}",
                        decision.illegal_move_game_seq
                    )));
                };
                if let Some(earlier) = record.decided {
                    return Err(ActionRejected::Invalid(format!(
                        "the penalty of log entry {} was already {}",
                        record.game_seq,
                        if earlier { "confirmed" } else { "rejected" }
                    )));
                }
                // A loss (or draw) proposed for a player's later illegal move rests on the
                // earlier ones counting: ruled on first, a rejection could make it a time
                // penalty (interpretation 5 or later).
                let counted_on = self.rulings.illegal_moves.iter().find(|earlier| {
                    earlier.game_seq < record.game_seq
                        && earlier.decided.is_none()
                        && terms::offender(&earlier.event) == terms::offender(&record.event)
                        && terms::rejection_uncounts(terms::penalty(&earlier.event))
                });
                if let Some(earlier) = counted_on
                    && self.interpretation >= 5
                    && decision.confirmed
                    && record.event.result_if_confirmed() != GameResult::Unspecified
                {
                    return Err(ActionRejected::Invalid(format!(
                        "the penalty proposed at log entry {} counts the illegal move of log entry \
                         {}, not ruled on yet: rule on that one first",
                        record.game_seq, earlier.game_seq
                    )));
                }
                if !decision.confirmed {
                    events.extend(self.penalties_recounted(record).into_iter().map(|revised| {
                        NewEvent {
                            kind: Kind::PenaltyRevised(revised),
                            provenance: provenance.clone(),
                        }
                    }));
                }
                let result = record.event.result_if_confirmed();
                if decision.confirmed && result != GameResult::Unspecified && !self.is_over() {
                    events.push(ended(GameEnded {
                        result: result as i32,
                        termination: Termination::Arbiter as i32,
                        detail: format!(
                            "illegal move by {} (Article {})",
                            wording::side(terms::offender(&record.event)),
                            record.event.article
                        ),
                        article: record.event.article.clone(),
                    }));
                }
            }
            Action::Restore(restore) => {
                clocks_within_a_day(restore.white_remaining_ms, restore.black_remaining_ms)?;
                if restore.ply as usize > self.moves.len() {
                    return Err(ActionRejected::Invalid(format!(
                        "cannot restore ply {}: the game has {} completed moves",
                        restore.ply,
                        self.moves.len()
                    )));
                }
                let fen = self
                    .repetition
                    .position_at(restore.ply)
                    .map(fen_of)
                    .unwrap_or_default();
                events.push(NewEvent {
                    kind: Kind::PositionRestored(PositionRestored {
                        ply: restore.ply,
                        fen,
                        white_remaining_ms: restore.white_remaining_ms,
                        black_remaining_ms: restore.black_remaining_ms,
                    }),
                    provenance: provenance.clone(),
                });
            }
            Action::Move(entered) => {
                let text = entered.san.trim();
                let mv = self.parse_move_text(text).ok_or_else(|| {
                    ActionRejected::Invalid(format!(
                        "{text:?} is not a legal move in {}",
                        fen_of(&self.position)
                    ))
                })?;
                let san = boardcast_rules::pgn::san_plus(&self.position, &mv);
                let mut after = self.position.clone();
                after.play_unchecked(mv);
                events.push(NewEvent {
                    kind: Kind::MoveCompleted(MoveCompleted {
                        ply: self.moves.len() as u32 + 1,
                        uci: UciMove::from_standard(mv).to_string(),
                        san,
                        fen_after: fen_of(&after),
                        white_remaining_ms: None,
                        black_remaining_ms: None,
                    }),
                    provenance: provenance.clone(),
                });
                let ply = self.moves.len() as u32 + 1;
                events.extend(
                    self.verdict_after(mv, ply)
                        .into_iter()
                        .map(|kind| NewEvent {
                            kind,
                            provenance: provenance.clone(),
                        }),
                );
            }
            Action::Resignation(who) => {
                let resigned = side(who.player())?;
                // The moves the board showed before it are settled first, and the resignation
                // judged on the position they leave.
                let settled = self.settled_line(&provenance);
                let after = if settled.is_empty() {
                    self.position.clone()
                } else {
                    self.line_position()
                };
                events.extend(settled);
                let mut end = ending_of(&resignation(&self.rules, &after, resigned));
                end.detail = format!("{} resigned: {}", wording::player(who), end.detail);
                events.push(ended(end));
            }
            Action::DrawAgreed(_) => {
                events.extend(self.settled_line(&provenance));
                events.push(ended(ending_of(&agreement(&self.rules))));
            }
            Action::Result(declared) => {
                let result = declared.result();
                if result == GameResult::Unspecified {
                    return Err(ActionRejected::Invalid(
                        "a declared result needs a result".into(),
                    ));
                }
                // From interpretation 6 a result that replaces another says why (the chief
                // arbiter is alerted: `AlertKind::ResultChanged`).
                if let Some((before, _)) = self.result
                    && before != result
                    && self.interpretation >= 6
                    && declared.reason.trim().is_empty()
                {
                    return Err(ActionRejected::Invalid(format!(
                        "the game's result is {}: changing it to {} needs a reason (Article 8.7: \
                         the signed result stands unless the arbiter decides otherwise); the \
                         chief arbiter is alerted",
                        crate::terms::result_token(before),
                        crate::terms::result_token(result)
                    )));
                }
                if !self.is_over() {
                    events.extend(self.settled_line(&provenance));
                }
                events.push(ended(GameEnded {
                    result: result as i32,
                    termination: Termination::Arbiter as i32,
                    detail: declared.reason.clone(),
                    article: declared.article.clone(),
                }));
            }
            Action::DrawOffer(who) => {
                side(who.player())?;
            }
            Action::Claim(ruling) => {
                let claimant = side(ruling.claimant_side())?;
                if claimant != self.position().turn() {
                    // The opponent's move stands on the board, made but not pressed: the claimant
                    // has the move (Article 1.3), and the claim rests on that move, which only
                    // the board saw. The arbiter enters it from the scoresheet first.
                    let line = self.provisional_line();
                    if !line.is_empty() && claimant == self.line_position().turn() {
                        let moves: Vec<&str> = line.iter().map(|m| m.san.as_str()).collect();
                        return Err(ActionRejected::Invalid(format!(
                            "the board shows {} after the completed moves, not completed by a \
                             press: enter {} from the scoresheet first (moves the arbiter \
                             confirms), then rule on the claim",
                            moves.join(" "),
                            if moves.len() == 1 { "it" } else { "them" }
                        )));
                    }
                    return Err(ActionRejected::Invalid(
                        "only the player to move can claim a draw (Article 9.2)".into(),
                    ));
                }
                let claim = self
                    .draw_claim(&crate::claims::ClaimStatement {
                        kind: ruling.kind(),
                        intended_move: &ruling.intended_move,
                        claimant_has_moved: ruling.claimant_has_moved,
                        claimant_has_touched: ruling.claimant_has_touched,
                        claimant_remaining_ms: ruling.claimant_remaining_ms,
                    })
                    .map_err(ActionRejected::Invalid)?;
                let assessment = self
                    .evaluate_claim(&claim)
                    .map_err(|e| ActionRejected::Invalid(e.to_string()))?;
                let judged = assessment.judged(ruling.upheld);
                // From interpretation 6 a ruling against the log's verdict says why (the chief
                // arbiter is alerted: `AlertKind::RulingAgainstTheLog`).
                let log_upholds =
                    crate::terms::claim_judgement(&judged) == crate::events::ClaimJudgement::Upheld;
                if ruling.upheld != log_upholds
                    && self.interpretation >= 6
                    && ruling.note.trim().is_empty()
                {
                    return Err(ActionRejected::Invalid(format!(
                        "the log judges this claim {}: {} it needs a note saying why (what the \
                         scoresheets or the players showed); the chief arbiter is alerted",
                        crate::wording::claim_verdict(&judged),
                        if ruling.upheld {
                            "upholding"
                        } else {
                            "rejecting"
                        }
                    )));
                }
                let article = judged.article.clone();
                events.push(NewEvent {
                    kind: Kind::ClaimJudged(judged),
                    provenance: provenance.clone(),
                });
                if ruling.upheld {
                    events.push(ended(GameEnded {
                        result: GameResult::Draw as i32,
                        termination: Termination::DrawClaim as i32,
                        detail: format!("draw claim upheld (Article {article})"),
                        article,
                    }));
                }
            }
            Action::Acknowledgement(ack) => {
                if !in_log(ack.alert_game_seq) {
                    return Err(ActionRejected::Invalid(format!(
                        "no log entry {} to acknowledge: the log has entries 1 to {}",
                        ack.alert_game_seq, self.record.last_game_seq
                    )));
                }
            }
            Action::Clocks(adjusted) => {
                for (side, added) in [
                    ("White", adjusted.white_added_ms),
                    ("Black", adjusted.black_added_ms),
                ] {
                    if added.unsigned_abs() > MAX_CLOCK_MS {
                        return Err(ActionRejected::Invalid(format!(
                            "{added} ms for {side}: more than a day is no clock adjustment"
                        )));
                    }
                }
                clocks_within_a_day(adjusted.white_remaining_ms, adjusted.black_remaining_ms)?;
            }
            Action::Annotation(_) => {}
            Action::Resume(resumed) => {
                if !self.is_over() {
                    return Err(ActionRejected::Invalid(
                        "the game is not over: there is no end to withdraw".into(),
                    ));
                }
                if resumed.reason.trim().is_empty() {
                    return Err(ActionRejected::Invalid(
                        "play resumed after the game's end needs a reason (what made the end an \
                         error); the chief arbiter is alerted"
                            .into(),
                    ));
                }
            }
        }
        Ok(events)
    }
}

/// Refuses clocks set to more than any chess clock shows (a typing slip, or a hostile number
/// that the clock arithmetic would otherwise carry).
fn clocks_within_a_day(white: Option<u64>, black: Option<u64>) -> Result<(), ActionRejected> {
    for (side, ms) in [("White", white), ("Black", black)] {
        if let Some(ms) = ms.filter(|&ms| ms > MAX_CLOCK_MS) {
            return Err(ActionRejected::Invalid(format!(
                "{side}'s clock set to {ms} ms: more than a day is no chess clock's"
            )));
        }
    }
    Ok(())
}

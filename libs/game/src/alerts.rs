//! Alerts for the arbiters: what in a game's log needs an arbiter's attention, and where each
//! alert stands (new, acknowledged, resolved), worked out from the log alone.
//!
//! An alert is named by the log entry that raised it (`raised_at`, its game_seq), so the same
//! log always gives the same alerts and no entry raises one twice, whichever instance folds it
//! and however often. (An entry raises one alert, or two of different kinds: a move after which
//! both a threefold and a fifty-move claim become available, a board going away with a low
//! battery; acknowledging or resolving the entry's alert applies to both.) Acknowledgements and
//! resolutions are arbiter actions in the same log (`AlertAcknowledgement`,
//! `ArbiterAction.resolves_alerts`) or the log's own later entries (a penalty decided, an
//! irregularity cleared): alerts are a fold of the log, nothing else.

use boardcast_rules::claims::{
    AvailableClaim, ClaimBasis, ClaimKind as RulesClaimKind, available_claims, claim_article,
};
use boardcast_rules::illegal::{
    IllegalKind, IllegalMoveCase, IllegalMoveTally, judge_illegal_move,
};
use boardcast_rules::ruleset::Edition;
use shakmaty::Color;

use crate::device::DeviceState;
use crate::events::{
    BoardStatusChanged, ClaimJudgement, ClaimKind, GameEvent, GameResult, PressSettlement,
    SetupAspect, Side, Source, Termination, TouchEvidence, arbiter_action::Action,
    game_event::Kind,
};
use crate::state::Game;
use crate::{terms, wording};

/// What an automatic end rests on (Article 6.14: no verdict on display data alone): the moves
/// that made the repeated position (fivefold), the last capture or pawn move and the last move
/// (seventy-five moves), the last move (a dead position); and, in words, the moves before it no
/// clock press or arbiter confirmed, which the arbiter checks against the scoresheets before
/// confirming the result (the position stands on every move that led to it).
fn automatic_end_evidence(termination: Termination, game: &Game) -> (Vec<u64>, String) {
    let moves = game.completed_moves();
    let repetition = game.repetition();
    let rests_on: Vec<u64> = match termination {
        Termination::FivefoldRepetition => repetition
            .current_occurrences()
            .iter()
            .map(|o| o.log_ref)
            .filter(|&seq| seq > 0)
            .collect(),
        Termination::SeventyFiveMoves => {
            let reset_ply = repetition.ply().saturating_sub(repetition.halfmove_clock());
            [reset_ply as usize, moves.len()]
                .into_iter()
                .filter_map(|ply| ply.checked_sub(1).and_then(|i| moves.get(i)))
                .map(|m| m.game_seq)
                .collect()
        }
        Termination::DeadPosition => moves.last().map(|m| m.game_seq).into_iter().collect(),
        _ => return (Vec::new(), String::new()),
    };
    let unconfirmed: Vec<String> = moves
        .iter()
        .filter(|m| {
            !matches!(
                m.source,
                Source::Clock | Source::Arbiter | Source::Scoresheet
            )
        })
        .map(|m| format!("{} {}", m.event.ply, m.event.san))
        .collect();
    let words = if unconfirmed.is_empty() {
        String::new()
    } else {
        format!(
            " It rests on moves no clock press or arbiter confirmed (plies {}): check them \
             against the scoresheets.",
            unconfirmed.join(", ")
        )
    };
    (rests_on, words)
}

/// An illegal move's alert in words, with the penalty proposed now.
fn illegal_move_summary(m: &crate::events::IllegalMoveRecorded, game: &Game) -> String {
    let edition = game.rules().edition.to_string();
    let (_, kind, penalty) = wording::illegal_move(m, Some(&edition));
    // What the arbiter puts right at the board, when the penalty counts (Articles 7.4, 7.5).
    let correction = terms::rules_illegal_kind(m.illegal_kind())
        .filter(|_| terms::rejection_uncounts(terms::penalty(m)))
        .and_then(|kind| {
            wording::correction(boardcast_rules::illegal::correction_of(
                game.rules().edition,
                kind,
            ))
        })
        .map(|words| format!(" Correction: {words}."))
        .unwrap_or_default();
    format!(
        "ply {}: illegal move by {}: {kind}. Proposed penalty: {penalty}; to be confirmed or \
         rejected.{correction}",
        m.ply,
        side_named(terms::offender(m), &m.offender),
    )
}

/// What an alert is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AlertKind {
    /// A completed illegal move, with the edition's penalty proposed (Article 7.5).
    IllegalMove,
    /// Lifts and placements that may breach touch-move (Article 4).
    PossibleTouchMoveBreach,
    /// A flag fell (Article 6.9): the detail says whether the opponent can still mate.
    FlagFall,
    /// A threefold-repetition claim became available (Article 9.2).
    ThreefoldClaimAvailable,
    /// A fifty-move claim became available (Article 9.3).
    FiftyMoveClaimAvailable,
    /// Fivefold repetition or seventy-five moves: the game is drawn (Articles 9.6.1, 9.6.2).
    AutomaticDraw,
    /// A dead position: the game is drawn (Articles 5.2.2, 9.6).
    DeadPosition,
    /// The board showed a placement that matches no legal position for longer than the quiet
    /// period (Article 7).
    IrregularPlacement,
    /// The clock was pressed without a move (or on an irregular placement): held in doubt
    /// (Article 7.5.4), never a penalty by itself.
    PressInDoubt,
    /// A clock reading that disagrees with the time control (Article 6.10).
    ClockMismatch,
    /// The board or clock stopped responding or disconnected: moves are not being seen.
    BoardNotResponding,
    /// The board's battery is low.
    BatteryLow,
    /// Observations of the board never arrived: the record has a hole.
    ObservationsMissing,
    /// A claim was ruled on moves no clock press or arbiter confirmed (Article 6.14): the
    /// scoresheets must be checked.
    ClaimOnUnconfirmedMoves,
    /// The board's set-up differs from what the game expects (clock sides, orientation, start
    /// position), with the fix.
    SetupMismatch,
    /// A claim with a written move was ruled incorrect and another move was then played: the
    /// written move had to be (Article 9.5).
    WrittenMoveNotPlayed,
    /// An arbiter changed a game's result (Article 8.7: the signed result stands unless the
    /// arbiter decides otherwise): for the chief arbiter to check.
    ResultChanged,
    /// An arbiter ruled on a draw claim against the log's own verdict: for the chief arbiter to
    /// check.
    RulingAgainstTheLog,
}

impl AlertKind {
    /// The kind's stable name: in the arbiter service's API and pages, and in the simulator's
    /// record of the alerts its incidents should raise. Never change one.
    pub fn name(self) -> &'static str {
        match self {
            AlertKind::IllegalMove => "illegal_move",
            AlertKind::PossibleTouchMoveBreach => "touch_move",
            AlertKind::FlagFall => "flag_fall",
            AlertKind::ThreefoldClaimAvailable => "threefold_available",
            AlertKind::FiftyMoveClaimAvailable => "fifty_moves_available",
            AlertKind::AutomaticDraw => "automatic_draw",
            AlertKind::DeadPosition => "dead_position",
            AlertKind::IrregularPlacement => "irregular_placement",
            AlertKind::PressInDoubt => "press_in_doubt",
            AlertKind::ClockMismatch => "clock_mismatch",
            AlertKind::BoardNotResponding => "board_not_responding",
            AlertKind::BatteryLow => "battery_low",
            AlertKind::ObservationsMissing => "observations_missing",
            AlertKind::ClaimOnUnconfirmedMoves => "claim_on_unconfirmed_moves",
            AlertKind::SetupMismatch => "setup_mismatch",
            AlertKind::WrittenMoveNotPlayed => "written_move_not_played",
            AlertKind::ResultChanged => "result_changed",
            AlertKind::RulingAgainstTheLog => "ruling_against_the_log",
        }
    }
}

/// Where an alert stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AlertStatus {
    New,
    /// An arbiter saw it (the AlertAcknowledgement entry).
    Acknowledged {
        by: String,
        at_unix_ms: i64,
        game_seq: u64,
    },
    /// Settled by a log entry: an arbiter's ruling (`by` is the arbiter) or the log itself (a
    /// placement back to normal, a press settled, the board back: `by` is empty).
    Resolved {
        by: String,
        at_unix_ms: i64,
        game_seq: u64,
        /// The resolving entry in words.
        how: String,
    },
}

/// One alert.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Alert {
    /// The log entry that raised it: its id within the game.
    pub raised_at: u64,
    pub kind: AlertKind,
    /// The ply concerned (completed moves + 1 when it is about the move being played).
    pub ply: u32,
    /// Device time of the observations it rests on (0 when none: an arbiter's record).
    pub device_time_unix_ms: i64,
    /// When the game service recorded the raising entry.
    pub recorded_unix_ms: i64,
    /// The article of the Laws concerned, e.g. "7.5.1".
    pub article: String,
    /// What happened, in words an arbiter reads on a tablet.
    pub summary: String,
    /// The log entries it rests on (the raising entry first).
    pub rests_on: Vec<u64>,
    pub status: AlertStatus,
}

impl Alert {
    /// Not resolved yet (new or acknowledged).
    pub fn is_open(&self) -> bool {
        !matches!(self.status, AlertStatus::Resolved { .. })
    }
}

/// The alerts of one game, kept up to date by folding the game's events in order.
///
/// What raises each kind, and what in the log resolves it (`by` is the entry's actor: the
/// arbiter for a ruling and its effects, empty for what the board showed):
///
/// - IllegalMove: `IllegalMoveRecorded`; resolved by the `PenaltyDecision` naming it.
/// - PossibleTouchMoveBreach: `PossibleTouchMoveBreach`.
/// - FlagFall: `GameEnded` by a flag fall or both flags; AutomaticDraw: by fivefold repetition or
///   seventy-five moves; DeadPosition: by a dead position. Nothing but an arbiter resolves them:
///   the arbiter confirms the result.
/// - ThreefoldClaimAvailable, FiftyMoveClaimAvailable: a `MoveCompleted` (or `PositionRestored`)
///   after which the player to move may claim, on the position or with an intended move, when
///   that claim was not available before; resolved by a `ClaimRuling` on that kind of claim and
///   by `GameEnded`.
/// - IrregularPlacement: `IrregularityObserved`; resolved by `IrregularityCleared`,
///   `PositionRestored`, `GameEnded`.
/// - PressInDoubt: `ClockPressInDoubt`; resolved by the `ClockPressSettled` naming it, or a
///   `PositionRestored` that took its ply back.
/// - ClockMismatch: `ClockAlert`.
/// - BoardNotResponding: `BoardStatusChanged` to not responding or disconnected, unless one is
///   open; resolved by `BoardStatusChanged` to connected. Also, the clock not heard from in play
///   (unless such an alert is open): the board saying no clock is connected to it (a status
///   `ObservationRecorded`), and once a game a second move seen unconfirmed while the clock has
///   sent no reading in the game (`MoveProvisional`); resolved by a clock reading recorded, the
///   board saying the clock is connected, or `GameEnded`.
/// - BatteryLow: `BoardStatusChanged` that finds the battery at the low level when it was not.
/// - ObservationsMissing: `ObservationsMissing`.
/// - ClaimOnUnconfirmedMoves: `ClaimJudged` with unconfirmed plies.
/// - SetupMismatch: `SetupMismatch`; resolved by `SetupMismatchCleared` of its aspect.
///
/// Any alert is acknowledged by an `AlertAcknowledgement` naming its entry (a later one changes
/// nothing) and resolved by an `ArbiterAction` whose `resolves_alerts` names it; once resolved it
/// stays as its first resolution left it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GameAlerts {
    alerts: Vec<Alert>,
    /// Whether a threefold / fifty-move claim was available in the position last folded.
    claims_available: [bool; 2],
    /// The press in doubt the last entry settled as an illegal move: (that entry, the doubt's
    /// entry). The `IllegalMoveRecorded` right after it comes from it.
    settled_illegal: Option<(u64, u64)>,
    /// The board's battery was low at its last status change.
    battery_low: bool,
    /// The set-up mismatch alerts by aspect, until cleared.
    setup_aspects: Vec<(u64, i32)>,
    /// After a claim with a written move ruled incorrect: the move that must be played next (UCI)
    /// and the entry that ruled so, until the next move.
    written_move_due: Option<(String, u64)>,
    /// The game's result as last recorded (`GameEnded`), to tell a changed one.
    result: Option<GameResult>,
    /// The entries that raised alerts about the clock not being heard (moves seen with no
    /// reading in the game, raised once a game; the board saying no clock is connected): a
    /// reading, the board saying the clock is back, or the end resolves them.
    clock_unheard: Vec<u64>,
    /// The alert for moves seen with no reading in the game was raised.
    no_reading_told: bool,
}

impl GameAlerts {
    pub fn new() -> GameAlerts {
        GameAlerts::default()
    }

    /// Folds the next event of the game; `game` is the game with that event applied. Returns
    /// the indices (into `alerts()`) of alerts raised or changed by it, in order.
    ///
    /// Never panics, whatever the log holds: an entry that names nothing changes nothing.
    pub fn fold(&mut self, event: &GameEvent, game: &Game) -> Vec<usize> {
        let Some(kind) = event.kind.as_ref() else {
            return Vec::new();
        };
        let entry = Entry::of(event, game);
        // What the entry settles first, so that it never settles what it raises itself.
        let mut changed = self.settle(event, kind, &entry, game);
        let mut raised = self.raised_by(event, kind, &entry, game);
        raised.extend(self.written_move(kind, &entry, game));
        raised.extend(self.overruled(kind, &entry, game));
        if let Some(unheard) = self.clock_not_heard(kind, game) {
            self.clock_unheard.push(entry.game_seq);
            raised.push(unheard);
        }
        match kind {
            Kind::MoveCompleted(_) | Kind::PositionRestored(_) => {
                raised.extend(self.claims_now(game))
            }
            Kind::Ended(_) => self.claims_available = [false; 2],
            Kind::BoardStatus(b) => self.battery_low = battery_low(b),
            _ => {}
        }
        self.settled_illegal = match kind {
            Kind::PressSettled(s) if s.settlement() == PressSettlement::IllegalMove => {
                Some((entry.game_seq, s.doubt_game_seq))
            }
            _ => None,
        };
        for r in raised {
            let index = self.alerts.len();
            if let Kind::SetupMismatch(m) = kind {
                self.setup_aspects.push((entry.game_seq, m.aspect));
            }
            self.alerts.push(r.into_alert(&entry));
            changed.push(index);
        }
        changed.sort_unstable();
        changed.dedup();
        changed
    }

    /// The clock not heard from while the game is played: no move is completed (nor broadcast)
    /// without its presses, so a clock not connected to the board, or not paired, must be found
    /// at once. Raised, unless one such alert is open, when the board says no clock is connected
    /// to it, and, once a game, when a second move stands unconfirmed with no reading at all in
    /// the game.
    fn clock_not_heard(&mut self, kind: &Kind, game: &Game) -> Option<Raised> {
        let unplugged = match kind {
            Kind::ObservationRecorded(recorded) => matches!(
                recorded.observation.as_ref().and_then(|o| o.kind.as_ref()),
                Some(crate::device::observation::Kind::Status(s)) if s.clock_connected == Some(false)
            ),
            _ => false,
        };
        let no_reading = matches!(kind, Kind::MoveProvisional(_))
            && !self.no_reading_told
            && game.clock.last_reading.is_none()
            && game.provisional.len() >= 2;
        // Most entries are neither: the open alerts are looked through only for those.
        if !(unplugged || no_reading)
            || game.is_over()
            || self
                .open()
                .any(|a| self.clock_unheard.contains(&a.raised_at))
        {
            return None;
        }
        if unplugged {
            return Some(Raised::new(
                AlertKind::BoardNotResponding,
                completed_moves(game).saturating_add(1),
                "",
                format!(
                    "board {}: the board says no clock is connected to it. Plug the clock's \
                     cable in: moves are completed, and broadcast, only with the clock's presses \
                     or entered by an arbiter.",
                    game.board_id()
                ),
            ));
        }
        self.no_reading_told = true;
        Some(Raised::new(
            AlertKind::BoardNotResponding,
            completed_moves(game).saturating_add(1),
            "",
            format!(
                "board {}: moves are seen but its clock has sent no reading since the game was \
                 set up. Is the clock connected to the board (a DGT board: the clock's cable; \
                 LiveChess: the clock paired)? Moves are completed, and broadcast, only with the \
                 clock's presses or entered by an arbiter.",
                game.board_id()
            ),
        ))
    }

    /// What an arbiter decided against what the record says: a result changed, a claim ruled
    /// against the log's verdict. Raised for every log (they are for the chief arbiter to look
    /// at; from interpretation 6 each needs a reason, in the entry before).
    fn overruled(&mut self, kind: &Kind, entry: &Entry, game: &Game) -> Option<Raised> {
        match kind {
            Kind::Ended(e) => {
                let before = self.result.replace(e.result());
                let before = before.filter(|&r| r != e.result() && !entry.actor.is_empty())?;
                Some(Raised::new(
                    AlertKind::ResultChanged,
                    completed_moves(game),
                    "8.7",
                    format!(
                        "result changed from {} to {} by {}{}{}: the players signed the \
                         scoresheets with a result; the chief arbiter checks the change.",
                        terms::result_token(before),
                        terms::result_token(e.result()),
                        entry.actor,
                        if e.detail.is_empty() { "" } else { ": " },
                        e.detail
                    ),
                ))
            }
            Kind::Arbiter(action) => {
                let Some(Action::Resume(resumed)) = &action.action else {
                    return None;
                };
                let before = self.result.take()?;
                Some(Raised::new(
                    AlertKind::ResultChanged,
                    completed_moves(game),
                    "",
                    format!(
                        "result {} withdrawn by {}: play resumed ({}); the chief arbiter checks \
                         that the end was an error.",
                        terms::result_token(before),
                        if entry.actor.is_empty() {
                            "the arbiter"
                        } else {
                            entry.actor
                        },
                        resumed.reason
                    ),
                ))
            }
            Kind::ClaimJudged(j) => {
                let log_upholds = terms::claim_judgement(j) == ClaimJudgement::Upheld;
                (j.upheld != log_upholds).then(|| {
                    Raised::new(
                        AlertKind::RulingAgainstTheLog,
                        completed_moves(game).saturating_add(1),
                        j.article.clone(),
                        format!(
                            "{} {} a draw claim the log judges {} ({}): the chief arbiter \
                             checks the ruling (the arbiter's note, if any, is in the entry \
                             before).",
                            if entry.actor.is_empty() {
                                "The arbiter"
                            } else {
                                entry.actor
                            },
                            if j.upheld { "upheld" } else { "rejected" },
                            wording::claim_verdict(j),
                            j.explanation
                        ),
                    )
                })
            }
            _ => None,
        }
    }

    /// Whether the move a rejected claim's written move obliged was played (Article 9.5): the
    /// ruling names it, the next completed move either is it or raises an alert. Games from
    /// interpretation 5 on: the alerts of older ones stay as they were.
    fn written_move(&mut self, kind: &Kind, entry: &Entry, game: &Game) -> Option<Raised> {
        if game.info().interpretation < 5 {
            return None;
        }
        match kind {
            Kind::ClaimJudged(j) if !j.upheld && !j.intended_move_must_be_played.is_empty() => {
                self.written_move_due =
                    Some((j.intended_move_must_be_played.clone(), entry.game_seq));
                None
            }
            Kind::MoveCompleted(m) => {
                let (due, ruled_at) = self.written_move_due.take()?;
                (m.uci != due).then(|| {
                    Raised::new(
                        AlertKind::WrittenMoveNotPlayed,
                        m.ply,
                        claim_penalty_article(game),
                        format!(
                            "ply {}: {} played where the claim ruled incorrect (entry \
                             {ruled_at}) obliged the written move {due}.",
                            m.ply, m.san
                        ),
                    )
                    .resting_on([ruled_at])
                })
            }
            Kind::PositionRestored(_) | Kind::Ended(_) => {
                self.written_move_due = None;
                None
            }
            _ => None,
        }
    }

    /// Every alert of the game, in the order raised.
    pub fn alerts(&self) -> &[Alert] {
        &self.alerts
    }

    /// The alert raised by the log entry `raised_at` (the first, when a move made both a
    /// threefold and a fifty-move claim available).
    pub fn get(&self, raised_at: u64) -> Option<&Alert> {
        self.alerts.iter().find(|a| a.raised_at == raised_at)
    }

    /// The alerts not resolved yet, in the order raised.
    pub fn open(&self) -> impl Iterator<Item = &Alert> {
        self.alerts.iter().filter(|a| a.is_open())
    }

    /// What an entry raises, other than claims becoming available: each kind's ply, article,
    /// summary and the entries it rests on, in one place.
    fn raised_by(&self, event: &GameEvent, kind: &Kind, entry: &Entry, game: &Game) -> Vec<Raised> {
        let completed = completed_moves(game);
        // The move being played.
        let next = completed.saturating_add(1);
        let board = game.board_id();
        vec![match kind {
            Kind::IllegalMove(m) => {
                // Settled from a press in doubt: the doubt and its settlement come with it.
                let settled = self
                    .settled_illegal
                    .filter(|(settled, _)| settled.checked_add(1) == Some(entry.game_seq))
                    .map(|(settled, doubt)| [doubt, settled]);
                Raised::new(
                    AlertKind::IllegalMove,
                    m.ply,
                    m.article.clone(),
                    illegal_move_summary(m, game),
                )
                .resting_on(settled.into_iter().flatten())
            }
            // Touches seen only for a moment are a note on the timeline, not an alert.
            Kind::TouchMove(t) if t.evidence() == TouchEvidence::Brief => return Vec::new(),
            Kind::TouchMove(t) => Raised::new(
                AlertKind::PossibleTouchMoveBreach,
                t.ply,
                t.article.clone(),
                format!(
                    "ply {}: possible touch-move breach: {} ({}){}{}.",
                    t.ply,
                    wording::touch_breach(t).replace('_', " "),
                    t.square,
                    wording::touch_rest(t),
                    if t.only_on_claim {
                        "; only on a player's claim"
                    } else {
                        "; for the arbiter to rule on, never a penalty by itself"
                    }
                ),
            )
            .resting_on(t.touch_game_seqs.iter().copied()),
            Kind::Ended(e) => {
                let (alert, ply, fallback) = match e.termination() {
                    Termination::FlagFall => (AlertKind::FlagFall, next, "6.9"),
                    Termination::BothFlags => (AlertKind::FlagFall, next, "6.11"),
                    Termination::FivefoldRepetition => {
                        (AlertKind::AutomaticDraw, completed, "9.6.1")
                    }
                    Termination::SeventyFiveMoves => (AlertKind::AutomaticDraw, completed, "9.6.2"),
                    Termination::DeadPosition => (AlertKind::DeadPosition, completed, "5.2.2"),
                    _ => return Vec::new(),
                };
                let what = match e.termination() {
                    Termination::BothFlags => "Both flags fell".to_owned(),
                    Termination::FlagFall => match flag_of(e.result(), game) {
                        Some(side) => format!("{side}'s flag fell"),
                        None => "A flag fell".to_owned(),
                    },
                    Termination::DeadPosition => format!("ply {ply}: a dead position"),
                    _ => format!("ply {ply}: an automatic draw"),
                };
                let (mut rests_on, unconfirmed) = automatic_end_evidence(e.termination(), game);
                // What older games' alerts rest on stays as it was (the words may change).
                if game.info().interpretation < 5 {
                    rests_on.clear();
                }
                Raised::new(
                    alert,
                    ply,
                    terms::ended_article(e).unwrap_or(fallback),
                    format!(
                        "{what}: {}{}{}. The arbiter confirms the result.{unconfirmed}",
                        terms::result_token(e.result()),
                        if e.detail.is_empty() { "" } else { ", " },
                        e.detail
                    ),
                )
                .resting_on(rests_on)
            }
            Kind::Irregularity(i) => Raised::new(
                AlertKind::IrregularPlacement,
                i.ply,
                "7",
                format!(
                    "ply {}: the board shows a placement no legal continuation explains ({}{}): {}",
                    i.ply,
                    wording::irregularity_cause(i),
                    if i.ambiguous { ", ambiguous" } else { "" },
                    i.placement
                ),
            ),
            Kind::PressInDoubt(d) => Raised::new(
                AlertKind::PressInDoubt,
                d.ply,
                press_article(game, d.presser(), d.without_move),
                format!(
                    "ply {}: clock pressed by {} {}; in doubt until the next presses settle it, \
                     never a penalty by itself.",
                    d.ply,
                    match d.presser() {
                        Side::White => "White",
                        Side::Black => "Black",
                        Side::Unspecified => "an unknown player",
                    },
                    if d.without_move {
                        "without a move on the board"
                    } else {
                        "with an irregular position on the board"
                    }
                ),
            ),
            Kind::DeadPositionUndetermined(d) => Raised::new(
                AlertKind::DeadPosition,
                d.ply,
                d.article.clone(),
                format!(
                    "ply {}: whether the position is dead was not determined: the analysis found \
                     neither a mate for either side nor a proof that none exists. Play goes on; \
                     the arbiter decides whether the game has ended.",
                    d.ply
                ),
            ),
            Kind::ClockAlert(a) if a.flag_not_counted => Raised::new(
                AlertKind::ClockMismatch,
                a.ply,
                clock_article(game.rules().edition),
                format!(
                    "{}: {}'s {}. The flag does not end the game: set the clock right (a clock \
                     with an evident defect); its readings count again from then.",
                    if a.ply == 0 {
                        "before the first move".to_owned()
                    } else {
                        format!("ply {}", a.ply)
                    },
                    side_named(terms::side_or_legacy(a.clock_of(), &a.side), &a.side),
                    a.reason,
                ),
            ),
            Kind::ClockAlert(a) if a.ply == 0 => Raised::new(
                AlertKind::ClockMismatch,
                0,
                clock_article(game.rules().edition),
                format!(
                    "before the first move: {}'s clock was set to {} where the time control \
                     starts from {}. Set it right before play.",
                    side_named(terms::side_or_legacy(a.clock_of(), &a.side), &a.side),
                    wording::format_clock(a.reported_ms),
                    wording::format_clock(a.expected_ms),
                ),
            ),
            Kind::ClockAlert(a) => Raised::new(
                AlertKind::ClockMismatch,
                a.ply,
                clock_article(game.rules().edition),
                format!(
                    "ply {}: {}'s clock shows {} where the time control gives {}: {}. The \
                     clock's reading stands.",
                    a.ply,
                    side_named(terms::side_or_legacy(a.clock_of(), &a.side), &a.side),
                    minutes_seconds(a.reported_ms),
                    minutes_seconds(a.expected_ms),
                    a.reason
                ),
            ),
            Kind::BoardStatus(b) => return self.board_status_alerts(b, game),
            Kind::ObservationsMissing(m) => Raised::new(
                AlertKind::ObservationsMissing,
                next,
                "",
                if m.unusable_reason.is_empty() {
                    format!(
                        "board {board}: observations {} to {} never arrived (noticed at {}); what \
                         happened on the board meanwhile is known only from what it showed later.",
                        m.first_device_seq, m.last_device_seq, m.noticed_at_device_seq
                    )
                } else {
                    format!(
                        "board {board}: observation {} could not be used ({}); it is in the \
                         dead-letter stream, and what happened on the board then is known only \
                         from what it showed later.",
                        m.first_device_seq, m.unusable_reason
                    )
                },
            ),
            Kind::ClaimJudged(j) if !j.unconfirmed_plies.is_empty() => {
                let plies: Vec<String> = j
                    .unconfirmed_plies
                    .iter()
                    .map(|&ply| match move_at(game, ply) {
                        Some(san) => format!("{ply} ({san})"),
                        None => ply.to_string(),
                    })
                    .collect();
                Raised::new(
                    AlertKind::ClaimOnUnconfirmedMoves,
                    next,
                    display_data_article(game.rules().edition),
                    format!(
                        "the claim ruled on ({} from the log) rests on moves no clock press or \
                         arbiter confirmed: plies {}. Check them against the scoresheets.",
                        wording::claim_verdict(j),
                        plies.join(", ")
                    ),
                )
                .resting_on(j.game_seqs.iter().copied())
            }
            Kind::SetupMismatch(m) => Raised::new(
                AlertKind::SetupMismatch,
                next,
                match m.aspect() {
                    SetupAspect::StartPosition | SetupAspect::Orientation => "7",
                    SetupAspect::ClockSides | SetupAspect::Unspecified => "",
                },
                crate::wording::describe(event, Some(&entry.edition)).unwrap_or_default(),
            ),
            _ => return Vec::new(),
        }]
    }

    /// What a change of the board's state raises: the board away (unless it is already), its
    /// battery falling to the low level (also when the same report brought it back).
    fn board_status_alerts(&self, b: &BoardStatusChanged, game: &Game) -> Vec<Raised> {
        let ply = completed_moves(game).saturating_add(1);
        let board = game.board_id();
        let mut raised = Vec::new();
        let away = match b.state() {
            DeviceState::NotResponding => Some("not responding"),
            DeviceState::Disconnected => Some("disconnected"),
            DeviceState::Connected | DeviceState::Unspecified => None,
        };
        if let Some(state) = away
            && !self.open().any(|a| {
                a.kind == AlertKind::BoardNotResponding
                    && !self.clock_unheard.contains(&a.raised_at)
            })
        {
            raised.push(Raised::new(
                AlertKind::BoardNotResponding,
                ply,
                "",
                format!(
                    "board {board} {state}{}{}: its moves are not seen until it is back.",
                    if b.detail.is_empty() { "" } else { ": " },
                    b.detail
                ),
            ));
        }
        if battery_low(b) && !self.battery_low {
            raised.push(Raised::new(
                AlertKind::BatteryLow,
                ply,
                "",
                match b.battery_percent {
                    Some(percent) => format!("board {board}: battery low ({percent}%)."),
                    None => format!("board {board}: battery low."),
                },
            ));
        }
        raised
    }

    /// The claims that became available in the game's position (after a completed move or a
    /// restored position), once per kind until they are no longer available.
    fn claims_now(&mut self, game: &Game) -> Vec<Raised> {
        let available = if game.is_over() {
            Vec::new()
        } else {
            available_claims(game.rules(), game.repetition())
        };
        let mut raised = Vec::new();
        for (i, kind) in [RulesClaimKind::Threefold, RulesClaimKind::Fifty]
            .into_iter()
            .enumerate()
        {
            let of_kind: Vec<&AvailableClaim> =
                available.iter().filter(|c| c.kind == kind).collect();
            let now = !of_kind.is_empty();
            if now && !self.claims_available[i] {
                raised.push(claim_available(kind, &of_kind, game));
            }
            self.claims_available[i] = now;
        }
        raised
    }

    /// What an entry acknowledges or resolves.
    fn settle(&mut self, event: &GameEvent, kind: &Kind, entry: &Entry, game: &Game) -> Vec<usize> {
        match kind {
            Kind::Arbiter(action) => {
                let mut changed = match &action.action {
                    Some(Action::Acknowledgement(ack)) => {
                        self.acknowledge(ack.alert_game_seq, entry)
                    }
                    _ => Vec::new(),
                };
                // A ruling resolves what it rules on, and whatever it names.
                let ruled_on = |a: &Alert| match &action.action {
                    Some(Action::Penalty(d)) => {
                        a.kind == AlertKind::IllegalMove && a.raised_at == d.illegal_move_game_seq
                    }
                    Some(Action::Claim(c)) => claim_alert_of(c.kind(), a.kind),
                    _ => false,
                };
                changed.extend(self.resolve(event, entry, |a| {
                    ruled_on(a) || action.resolves_alerts.contains(&a.raised_at)
                }));
                changed
            }
            // The proposal is revised in place: the alert stays open, saying the new penalty.
            Kind::PenaltyRevised(r) => {
                let revised = game
                    .illegal_moves()
                    .iter()
                    .find(|m| m.game_seq == r.illegal_move_game_seq);
                let alert = self.alerts.iter_mut().enumerate().find(|(_, a)| {
                    a.kind == AlertKind::IllegalMove && a.raised_at == r.illegal_move_game_seq
                });
                match (revised, alert) {
                    (Some(revised), Some((index, alert))) => {
                        alert.summary = illegal_move_summary(&revised.event, game);
                        alert.rests_on.push(entry.game_seq);
                        vec![index]
                    }
                    _ => Vec::new(),
                }
            }
            Kind::PressSettled(s) => self.resolve(event, entry, |a| {
                a.kind == AlertKind::PressInDoubt && a.raised_at == s.doubt_game_seq
            }),
            Kind::IrregularityCleared(_) => {
                self.resolve(event, entry, |a| a.kind == AlertKind::IrregularPlacement)
            }
            // The position stands again: the placement is normal, and the presses in doubt about
            // the plies it took back are the arbiter's ruling's (those the game still holds are
            // left for the next presses).
            Kind::PositionRestored(_) => self.resolve(event, entry, |a| match a.kind {
                AlertKind::IrregularPlacement => true,
                AlertKind::PressInDoubt => {
                    !game.clock.doubts.iter().any(|d| d.game_seq == a.raised_at)
                }
                _ => false,
            }),
            Kind::Ended(_) => {
                let unheard = self.clock_unheard.clone();
                self.resolve(event, entry, |a| {
                    matches!(
                        a.kind,
                        AlertKind::IrregularPlacement
                            | AlertKind::ThreefoldClaimAvailable
                            | AlertKind::FiftyMoveClaimAvailable
                    ) || unheard.contains(&a.raised_at)
                })
            }
            Kind::BoardStatus(b) if !b.battery_low && b.state() == DeviceState::Connected => {
                let unheard = self.clock_unheard.clone();
                self.resolve(event, entry, |a| {
                    a.kind == AlertKind::BoardNotResponding && !unheard.contains(&a.raised_at)
                })
            }
            // The clock is heard from: a reading, or the board saying it is connected again.
            Kind::ObservationRecorded(recorded)
                if matches!(
                    recorded.observation.as_ref().and_then(|o| o.kind.as_ref()),
                    Some(crate::device::observation::Kind::Clock(_))
                ) || matches!(
                    recorded.observation.as_ref().and_then(|o| o.kind.as_ref()),
                    Some(crate::device::observation::Kind::Status(s))
                        if s.clock_connected == Some(true)
                ) =>
            {
                let unheard = self.clock_unheard.clone();
                self.resolve(event, entry, |a| unheard.contains(&a.raised_at))
            }
            Kind::SetupMismatchCleared(c) => {
                let cleared: Vec<u64> = self
                    .setup_aspects
                    .iter()
                    .filter(|(_, aspect)| *aspect == c.aspect)
                    .map(|(raised_at, _)| *raised_at)
                    .collect();
                self.setup_aspects.retain(|(_, aspect)| *aspect != c.aspect);
                self.resolve(event, entry, |a| {
                    a.kind == AlertKind::SetupMismatch && cleared.contains(&a.raised_at)
                })
            }
            _ => Vec::new(),
        }
    }

    /// Acknowledges the new alerts raised at `raised_at`; an acknowledged or resolved alert stays
    /// as it is, and an entry that raised no alert changes nothing.
    fn acknowledge(&mut self, raised_at: u64, entry: &Entry) -> Vec<usize> {
        let mut changed = Vec::new();
        for (index, alert) in self.alerts.iter_mut().enumerate() {
            if alert.raised_at == raised_at && alert.status == AlertStatus::New {
                alert.status = AlertStatus::Acknowledged {
                    by: entry.actor.to_owned(),
                    at_unix_ms: entry.recorded_unix_ms,
                    game_seq: entry.game_seq,
                };
                changed.push(index);
            }
        }
        changed
    }

    /// Resolves the open alerts `resolves` picks with the entry `event`.
    fn resolve(
        &mut self,
        event: &GameEvent,
        entry: &Entry,
        resolves: impl Fn(&Alert) -> bool,
    ) -> Vec<usize> {
        let mut changed = Vec::new();
        let mut how = None;
        for (index, alert) in self.alerts.iter_mut().enumerate() {
            if alert.is_open() && resolves(alert) {
                let how = how
                    .get_or_insert_with(|| resolution_in_words(event, &entry.edition))
                    .clone();
                alert.status = AlertStatus::Resolved {
                    by: entry.actor.to_owned(),
                    at_unix_ms: entry.recorded_unix_ms,
                    game_seq: entry.game_seq,
                    how,
                };
                changed.push(index);
            }
        }
        changed
    }
}

/// An alert an entry raises, before it is given the entry's own data and a status.
struct Raised {
    kind: AlertKind,
    ply: u32,
    article: String,
    summary: String,
    /// The log entries it rests on besides the raising entry.
    also_rests_on: Vec<u64>,
}

impl Raised {
    fn new(kind: AlertKind, ply: u32, article: impl Into<String>, summary: String) -> Raised {
        Raised {
            kind,
            ply,
            article: article.into(),
            summary,
            also_rests_on: Vec::new(),
        }
    }

    fn resting_on(mut self, entries: impl IntoIterator<Item = u64>) -> Raised {
        self.also_rests_on.extend(entries);
        self
    }

    fn into_alert(self, entry: &Entry) -> Alert {
        let mut rests_on = vec![entry.game_seq];
        for seq in self.also_rests_on {
            if !rests_on.contains(&seq) {
                rests_on.push(seq);
            }
        }
        Alert {
            raised_at: entry.game_seq,
            kind: self.kind,
            ply: self.ply,
            device_time_unix_ms: entry.device_time_unix_ms,
            recorded_unix_ms: entry.recorded_unix_ms,
            article: self.article,
            summary: self.summary,
            rests_on,
            status: AlertStatus::New,
        }
    }
}

/// The log entry being folded, as alerts name it.
struct Entry<'a> {
    game_seq: u64,
    recorded_unix_ms: i64,
    device_time_unix_ms: i64,
    actor: &'a str,
    /// The game's Laws, for the entry's words.
    edition: String,
}

impl<'a> Entry<'a> {
    fn of(event: &'a GameEvent, game: &Game) -> Entry<'a> {
        let provenance = event.provenance.as_ref();
        Entry {
            game_seq: event.game_seq,
            recorded_unix_ms: event.recorded_unix_ms,
            device_time_unix_ms: provenance.map_or(0, |p| p.device_time_unix_ms),
            actor: provenance.map_or("", |p| p.actor.as_str()),
            edition: game.rules().edition.to_string(),
        }
    }
}

/// A claim of `kind` available to the player to move, as the rules library found it (on the
/// position, with an intended move, or both).
fn claim_available(kind: RulesClaimKind, claims: &[&AvailableClaim], game: &Game) -> Raised {
    let ply = completed_moves(game);
    let player = match game.turn() {
        Color::White => "White",
        Color::Black => "Black",
    };
    let on_position = claims.iter().find(|c| c.basis == ClaimBasis::Position);
    let intended: Vec<String> = claims
        .iter()
        .filter(|c| c.basis == ClaimBasis::IntendedMove)
        .flat_map(|c| c.moves.iter().map(|uci| san_of(game, uci)))
        .collect();
    let mut occurrences: Vec<_> = claims.iter().flat_map(|c| c.occurrences.iter()).collect();
    occurrences.sort_by_key(|o| o.ply);
    occurrences.dedup();
    let plies = |of: &[&boardcast_rules::Occurrence]| {
        of.iter()
            .map(|o| o.ply.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (alert, rule) = match kind {
        RulesClaimKind::Threefold => (AlertKind::ThreefoldClaimAvailable, "threefold repetition"),
        RulesClaimKind::Fifty => (AlertKind::FiftyMoveClaimAvailable, "the fifty-move rule"),
    };
    let why = match (kind, on_position) {
        (RulesClaimKind::Threefold, Some(c)) => format!(
            "the position has stood {} times (at plies {})",
            c.occurrences.len(),
            plies(&c.occurrences.iter().collect::<Vec<_>>())
        ),
        (RulesClaimKind::Threefold, None) => format!(
            "with the intended move {}, the position of plies {} would stand a third time",
            intended.join(" or "),
            plies(&occurrences)
        ),
        (RulesClaimKind::Fifty, Some(_)) => format!(
            "{} half-moves without a capture or pawn move",
            game.repetition().halfmove_clock()
        ),
        (RulesClaimKind::Fifty, None) => format!(
            "{} half-moves without a capture or pawn move, and an intended move that is neither \
             would make fifty moves",
            game.repetition().halfmove_clock()
        ),
    };
    Raised::new(
        alert,
        ply,
        claim_article(kind),
        format!("after ply {ply}: {player} may claim a draw by {rule}: {why}."),
    )
    .resting_on(occurrences.iter().map(|o| o.log_ref))
}

/// The battery is at the low level: the game service says when it fell there, but not when the
/// same report also changed the connection (`battery_low` is false then).
fn battery_low(b: &BoardStatusChanged) -> bool {
    b.battery_low || crate::state::BoardStatus::battery_low(b.battery_percent)
}

/// The claim-available alert kind a claim of `kind` rules on (both for an unspecified kind).
/// The article that obliges the written move of a claim ruled incorrect, in the game's edition.
fn claim_penalty_article(game: &Game) -> &'static str {
    boardcast_rules::claims::incorrect_claim_penalty(game.rules(), 0).1
}

fn claim_alert_of(kind: ClaimKind, alert: AlertKind) -> bool {
    match kind {
        ClaimKind::Threefold => alert == AlertKind::ThreefoldClaimAvailable,
        ClaimKind::FiftyMoves => alert == AlertKind::FiftyMoveClaimAvailable,
        ClaimKind::Unspecified => matches!(
            alert,
            AlertKind::ThreefoldClaimAvailable | AlertKind::FiftyMoveClaimAvailable
        ),
    }
}

/// The article a press in doubt would be judged under if it turns out an illegal move: the one
/// the rules give a first illegal move of its kind in this game (pressing without a move is no
/// illegal move before 2018: then the clock's article).
fn press_article(game: &Game, presser: Side, without_move: bool) -> &'static str {
    let kind = if without_move {
        IllegalKind::ClockWithoutMove
    } else {
        IllegalKind::IllegalMove
    };
    let offender = match presser {
        Side::White => Color::White,
        Side::Black => Color::Black,
        Side::Unspecified => game.turn(),
    };
    judge_illegal_move(
        game.rules(),
        IllegalMoveTally::default(),
        &IllegalMoveCase {
            offender,
            kind,
            position_before: game.position(),
            opponent_claimed: false,
        },
    )
    .article
}

/// The article that forbids a claim relying only on what display boards and screens show
/// (2005 6.15, 2009 6.14, 2023 6.12 as the digest of the Laws has them).
fn display_data_article(edition: Edition) -> &'static str {
    match edition {
        Edition::Fide2005 => "6.15",
        Edition::Fide2014 | Edition::Fide2018 | Edition::Fide2023 => "6.12",
        Edition::Fide2009 | Edition::Iccf2019 => "6.14",
    }
}

/// The article that makes the clock's indications conclusive unless it has an evident defect
/// (2005 6.11; 6.10 from 2009).
fn clock_article(edition: Edition) -> &'static str {
    match edition {
        Edition::Fide2005 => "6.11",
        _ => "6.10",
    }
}

/// Whose flag fell, from the result, or from the clock's flags for a draw.
fn flag_of(result: GameResult, game: &Game) -> Option<&'static str> {
    match (result, game.clock.flags) {
        (GameResult::BlackWins, _) | (_, (true, false)) => Some("White"),
        (GameResult::WhiteWins, _) | (_, (false, true)) => Some("Black"),
        _ => None,
    }
}

/// The resolving entry in words.
fn resolution_in_words(event: &GameEvent, edition: &str) -> String {
    if let Some(words) = crate::wording::describe(event, Some(edition)) {
        return words;
    }
    match &event.kind {
        Some(Kind::Arbiter(action)) => match &action.action {
            Some(Action::Acknowledgement(ack)) if !ack.note.is_empty() => ack.note.clone(),
            _ => "resolved by the arbiter".to_owned(),
        },
        _ => format!("log entry {}", event.game_seq),
    }
}

fn completed_moves(game: &Game) -> u32 {
    u32::try_from(game.completed_moves().len()).unwrap_or(u32::MAX)
}

/// The SAN of the completed move of `ply`.
fn move_at(game: &Game, ply: u32) -> Option<&str> {
    let index = usize::try_from(ply).ok()?.checked_sub(1)?;
    game.completed_moves()
        .get(index)
        .map(|m| m.event.san.as_str())
}

/// A move legal in the game's position, in SAN (as given when it is not).
fn san_of(game: &Game, uci: &str) -> String {
    game.parse_move_text(uci)
        .map(|mv| boardcast_rules::pgn::san_plus(game.position(), &mv))
        .unwrap_or_else(|| uci.to_owned())
}

/// "white" as "White", in a summary.
/// A side as a name; a log's own words where it named none the log's terms know.
fn side_named(side: Side, words: &str) -> String {
    match side {
        Side::Unspecified => words.to_owned(),
        side => wording::side_title(side).to_owned(),
    }
}

/// A clock time as m:ss (minutes past 59 as they are: 90:00).
fn minutes_seconds(ms: u64) -> String {
    let seconds = ms / 1000;
    format!("{}:{:02}", seconds / 60, seconds % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_times_are_minutes_and_seconds() {
        assert_eq!(minutes_seconds(0), "0:00");
        assert_eq!(minutes_seconds(59_999), "0:59");
        assert_eq!(minutes_seconds(90 * 60_000), "90:00");
        assert_eq!(minutes_seconds(5_060_000), "84:20");
        assert_eq!(minutes_seconds(u64::MAX), "307445734561825:51");
    }

    #[test]
    fn a_claim_ruling_resolves_the_claims_of_its_kind() {
        use AlertKind::{FiftyMoveClaimAvailable as Fifty, ThreefoldClaimAvailable as Threefold};
        assert!(claim_alert_of(ClaimKind::Threefold, Threefold));
        assert!(!claim_alert_of(ClaimKind::Threefold, Fifty));
        assert!(claim_alert_of(ClaimKind::FiftyMoves, Fifty));
        assert!(!claim_alert_of(
            ClaimKind::FiftyMoves,
            AlertKind::IllegalMove
        ));
        assert!(claim_alert_of(ClaimKind::Unspecified, Threefold));
        assert!(claim_alert_of(ClaimKind::Unspecified, Fifty));
    }

    #[test]
    fn display_data_is_no_basis_for_a_claim_under_each_edition_article() {
        assert_eq!(display_data_article(Edition::Fide2005), "6.15");
        assert_eq!(display_data_article(Edition::Fide2009), "6.14");
        assert_eq!(display_data_article(Edition::Fide2023), "6.12");
    }

    #[test]
    fn a_raised_alert_rests_on_its_entry_first_and_each_entry_once() {
        let entry = Entry {
            game_seq: 9,
            recorded_unix_ms: 5,
            device_time_unix_ms: 4,
            actor: "",
            edition: "fide-2023".into(),
        };
        let alert = Raised::new(AlertKind::ClockMismatch, 3, "6.10", "s".into())
            .resting_on([2, 9, 2, 7])
            .into_alert(&entry);
        assert_eq!(alert.rests_on, [9, 2, 7]);
        assert_eq!(
            (
                alert.raised_at,
                alert.recorded_unix_ms,
                alert.device_time_unix_ms
            ),
            (9, 5, 4)
        );
        assert_eq!(alert.status, AlertStatus::New);
    }
}

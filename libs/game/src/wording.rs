//! Game events in words for people (a capture's replay notes, timelines, alerts, pages): one
//! place, so that every tool says the same thing about the same record. Words are made from the
//! events' typed terms; nothing reads them back (a log written before a term was typed shows its
//! own words for it).

use crate::clock::display_name;
use crate::device::ClockDisplay;
use crate::events::{
    ArbiterAction, ClaimJudged, ClaimJudgement, ClaimRuling, ClockAlert, ClockSidesBasis,
    GameEvent, IllegalMoveKind, IllegalMoveRecorded, IrregularityCause, IrregularityObserved,
    PenaltyKind, PossibleTouchMoveBreach, PressSettlement, SetupAspect, Side, SideAction,
    TouchMoveBreach, arbiter_action::Action, game_event::Kind,
};
use crate::terms;

/// A side in running text: "white", "black".
pub fn side(side: Side) -> &'static str {
    match side {
        Side::White => "white",
        Side::Black => "black",
        Side::Unspecified => "an unknown player",
    }
}

/// A side at the start of a phrase or as a name: "White", "Black".
pub fn side_title(side: Side) -> &'static str {
    match side {
        Side::White => "White",
        Side::Black => "Black",
        Side::Unspecified => "an unknown player",
    }
}

/// A side read from a field that was words before it was typed: the typed value's words, or
/// the stored words when the log predates it.
fn side_or_stored(typed: Side, stored: &str) -> String {
    match terms::side_or_legacy(typed, stored) {
        Side::Unspecified => stored.to_owned(),
        known => side(known).to_owned(),
    }
}

/// What made a move illegal.
pub fn illegal_kind(kind: IllegalMoveKind) -> &'static str {
    match kind {
        IllegalMoveKind::IrregularPosition => "irregular position at clock press",
        IllegalMoveKind::PawnNotPromoted => "pawn on the last rank not promoted",
        IllegalMoveKind::ClockWithoutMove => "clock pressed without a move",
        IllegalMoveKind::TwoHands => "move made with two hands",
        IllegalMoveKind::Unspecified => "an illegal move",
    }
}

/// A proposed penalty; `edition` names the Laws for a penalty that is none because the act is
/// not illegal under them.
pub fn penalty(kind: PenaltyKind, opponent_bonus_ms: u64, edition: Option<&str>) -> String {
    match kind {
        PenaltyKind::NotIllegal => format!(
            "none: not an illegal move under {}",
            edition.unwrap_or("the game's edition")
        ),
        PenaltyKind::None => "none".to_owned(),
        PenaltyKind::OpponentTime => {
            format!(
                "{} s added to the opponent's clock",
                opponent_bonus_ms / 1000
            )
        }
        PenaltyKind::Loss => "the game is lost".to_owned(),
        PenaltyKind::Draw => "the game is drawn (the opponent cannot checkmate)".to_owned(),
        PenaltyKind::LossOrDraw => "the game is lost, or drawn if the opponent cannot checkmate: \
                                    that was not determined, the arbiter decides"
            .to_owned(),
        PenaltyKind::Unspecified => "not stated".to_owned(),
    }
}

/// An illegal move's offender, kind and proposed penalty in words (a log written before they
/// were typed says them in its own words, shown as they are).
pub fn illegal_move(m: &IllegalMoveRecorded, edition: Option<&str>) -> (String, String, String) {
    let offender = side_or_stored(m.offender_side(), &m.offender);
    let kind = match m.illegal_kind() {
        IllegalMoveKind::Unspecified => m.kind.clone(),
        kind => illegal_kind(kind).to_owned(),
    };
    let penalty = match m.penalty() {
        PenaltyKind::Unspecified => m.proposed_penalty.clone(),
        kind => penalty(kind, m.opponent_bonus_ms, edition),
    };
    (offender, kind, penalty)
}

/// Why an irregular placement was reported.
pub fn irregularity_cause(i: &IrregularityObserved) -> String {
    match i.cause_kind() {
        IrregularityCause::ClockPressed => "clock pressed".to_owned(),
        IrregularityCause::Quiet => {
            format!("no legal continuation for {} s", i.unmatched_for_ms / 1000)
        }
        IrregularityCause::BoardWentBack => {
            format!("the board went back {} completed move(s)", i.moves_back)
        }
        IrregularityCause::StartPositionSetUp => {
            "the start position was set up during the game".to_owned()
        }
        IrregularityCause::Unspecified => i.cause.clone(),
    }
}

/// A touch-move breach by name: "own_piece_not_moved", ...
pub fn breach_name(breach: TouchMoveBreach) -> &'static str {
    match breach {
        TouchMoveBreach::OwnPieceNotMoved => "own_piece_not_moved",
        TouchMoveBreach::OpponentPieceNotCaptured => "opponent_piece_not_captured",
        TouchMoveBreach::TouchedCaptureNotMade => "touched_capture_not_made",
        TouchMoveBreach::CastlingNotMade => "castling_not_made",
        TouchMoveBreach::CastledAfterRookFirst => "castled_after_rook_first",
        TouchMoveBreach::ReleasedPieceMovedAgain => "released_piece_moved_again",
        TouchMoveBreach::Unspecified => "unspecified",
    }
}

/// A possible touch-move breach's name (a log written before it was typed: its own name).
pub fn touch_breach(t: &PossibleTouchMoveBreach) -> String {
    match t.breach_kind() {
        TouchMoveBreach::Unspecified => t.breach.clone(),
        breach => breach_name(breach).to_owned(),
    }
}

/// A claim's verdict by name: "upheld", "rejected", "right_lost".
pub fn verdict_name(verdict: ClaimJudgement) -> &'static str {
    match verdict {
        ClaimJudgement::Upheld => "upheld",
        ClaimJudgement::Rejected => "rejected",
        ClaimJudgement::RightLost => "right_lost",
        ClaimJudgement::Unspecified => "unspecified",
    }
}

/// The verdict a claim was judged with from the log (a log written before it was typed: its
/// own name).
pub fn claim_verdict(j: &ClaimJudged) -> String {
    match j.verdict() {
        ClaimJudgement::Unspecified => j.verdict_from_log.clone(),
        verdict => verdict_name(verdict).to_owned(),
    }
}

/// Whose clock a clock alert is about.
pub fn clock_alert_side(a: &ClockAlert) -> String {
    side_or_stored(a.clock_of(), &a.side)
}

/// The claimant of a claim ruling.
pub fn claimant(c: &ClaimRuling) -> String {
    side_or_stored(c.claimant_side(), &c.claimant)
}

/// The player of a draw offer or resignation.
pub fn player(s: &SideAction) -> String {
    side_or_stored(s.player(), &s.side)
}

fn aspect(aspect: SetupAspect) -> &'static str {
    match aspect {
        SetupAspect::ClockSides => "clock sides",
        SetupAspect::Orientation => "board orientation",
        SetupAspect::StartPosition => "start position",
        SetupAspect::Unspecified => "set-up",
    }
}

/// What an event says, in a line; `None` for the routine ones (observations, touches,
/// provisional and completed moves, the start).
pub fn describe(event: &GameEvent) -> Option<String> {
    Some(match event.kind.as_ref()? {
        Kind::MoveProvisional(p) if !p.replaces_uci.is_empty() => format!(
            "ply {}: provisional {} revised to {}",
            p.ply, p.replaces_uci, p.uci
        ),
        Kind::ProvisionalWithdrawn(w) => format!("ply {}: provisional {} taken back", w.ply, w.uci),
        Kind::Reconstructed(r) => format!("ply {}: reconstructed {}", r.first_ply, r.uci.join(" ")),
        Kind::Irregularity(i) => format!(
            "ply {}: irregularity ({}){}: {}",
            i.ply,
            irregularity_cause(i),
            if i.ambiguous { ", ambiguous" } else { "" },
            i.placement
        ),
        Kind::IrregularityCleared(c) => format!("ply {}: irregularity cleared", c.ply),
        Kind::IllegalMove(m) => {
            let (offender, kind, penalty) = illegal_move(m, None);
            format!(
                "ply {}: illegal move by {offender}: {kind} (Article {}); proposed penalty: \
                 {penalty}",
                m.ply, m.article
            )
        }
        Kind::PressInDoubt(d) => format!(
            "ply {}: clock press by {} {}, in doubt until the next presses settle it",
            d.ply,
            side(d.presser()),
            if d.without_move {
                "without a move on the board"
            } else {
                "with an irregular position on the board"
            }
        ),
        Kind::PressSettled(s) => format!(
            "clock press in doubt (record {}) settled: {}",
            s.doubt_game_seq,
            match s.settlement() {
                PressSettlement::IllegalMove => "an illegal move",
                PressSettlement::ClockSides => "an ordinary press, read with the clock's sides",
                PressSettlement::NotConfirmed => "not shown to be illegal, no penalty",
                PressSettlement::Unspecified => "unspecified",
            }
        ),
        Kind::ClockSides(c) => {
            let white = match c.white_display() {
                ClockDisplay::Unspecified if c.reversed => {
                    "White's time on the display reported as Black's".to_owned()
                }
                ClockDisplay::Unspecified => {
                    "White's time on the display reported as White's".to_owned()
                }
                d => format!("White's time on the {} display", display_name(d)),
            };
            let basis = match c.basis() {
                ClockSidesBasis::ClockStarted => "it ran when the clock was started",
                ClockSidesBasis::MovePress => "the press after a move stopped it",
                ClockSidesBasis::Unspecified => "unspecified",
            };
            format!("clock: {white} ({basis})")
        }
        Kind::SetupMismatch(m) => format!(
            "set-up ({}): expected {}; seen {}. {}",
            aspect(m.aspect()),
            m.expected,
            m.seen,
            m.fix
        ),
        Kind::SetupMismatchCleared(c) => {
            format!("set-up ({}): as expected again", aspect(c.aspect()))
        }
        Kind::ClockAlert(a) => format!(
            "ply {}: clock alert for {}: {}",
            a.ply,
            clock_alert_side(a),
            a.reason
        ),
        Kind::DeadPositionUndetermined(d) => format!(
            "ply {}: whether the position is dead was not determined (Article {})",
            d.ply, d.article
        ),
        Kind::TouchMove(t) => format!(
            "ply {}: possible touch-move breach ({}, {}, Article {})",
            t.ply,
            touch_breach(t),
            t.square,
            t.article
        ),
        Kind::BoardStatus(b) => format!(
            "board: {:?}{}",
            b.state(),
            if b.battery_low { ", battery low" } else { "" }
        ),
        Kind::ObservationsMissing(m) if !m.unusable_reason.is_empty() => format!(
            "observation {} could not be used: {}",
            m.first_device_seq, m.unusable_reason
        ),
        Kind::ObservationsMissing(m) => format!(
            "observations {} to {} never arrived",
            m.first_device_seq, m.last_device_seq
        ),
        Kind::Ended(e) => format!(
            "result {}: {:?}{}",
            terms::result_token(e.result()),
            e.termination(),
            if e.detail.is_empty() {
                String::new()
            } else {
                format!(" ({})", e.detail)
            }
        ),
        Kind::Arbiter(a) => arbiter_action(a)?,
        Kind::ClaimJudged(c) => format!("claim judged from the log: {}", claim_verdict(c)),
        Kind::PositionRestored(r) => format!("position after ply {} restored", r.ply),
        Kind::Started(_)
        | Kind::ObservationRecorded(_)
        | Kind::Touch(_)
        | Kind::MoveProvisional(_)
        | Kind::MoveCompleted(_) => return None,
    })
}

/// An arbiter action in words, for score sheets and PGN comments; `None` for draw offers, which
/// have their own notation.
pub fn arbiter_action(action: &ArbiterAction) -> Option<String> {
    let text = match action.action.as_ref()? {
        Action::Penalty(d) => format!(
            "penalty for the illegal move of log entry {} {}{}",
            d.illegal_move_game_seq,
            if d.confirmed { "confirmed" } else { "rejected" },
            if d.note.is_empty() {
                String::new()
            } else {
                format!(": {}", d.note)
            }
        ),
        Action::Restore(r) => {
            let mut parts = vec![format!("position after ply {} restored", r.ply)];
            parts.extend(clocks_set(r.white_remaining_ms, r.black_remaining_ms));
            if !r.reason.is_empty() {
                parts.push(r.reason.clone());
            }
            parts.join("; ")
        }
        Action::Clocks(c) => {
            let mut parts = clocks_set(c.white_remaining_ms, c.black_remaining_ms);
            if c.white_added_ms != 0 {
                parts.push(format!("{:+} s for White", c.white_added_ms / 1000));
            }
            if c.black_added_ms != 0 {
                parts.push(format!("{:+} s for Black", c.black_added_ms / 1000));
            }
            if !c.reason.is_empty() {
                parts.push(c.reason.clone());
            }
            parts.join("; ")
        }
        Action::Move(m) => format!("move {} entered", m.san),
        Action::DrawOffer(_) => return None,
        Action::Resignation(s) => format!("{} resigned", player(s)),
        Action::DrawAgreed(_) => "draw agreed".to_owned(),
        Action::Result(r) => format!("result declared: {}", r.reason),
        Action::Annotation(a) => a.text.clone(),
        // Bookkeeping of the arbiters' alert queue, not part of the score.
        Action::Acknowledgement(_) => return None,
        Action::Claim(c) => format!(
            "{} claimed a draw by {}{}: {}",
            claimant(c),
            match c.kind() {
                crate::events::ClaimKind::FiftyMoves => "the fifty-move rule",
                _ => "threefold repetition",
            },
            if c.intended_move.is_empty() {
                String::new()
            } else {
                format!(" with the intended move {}", c.intended_move)
            },
            if c.upheld { "upheld" } else { "rejected" }
        ),
    };
    Some(text)
}

/// "White's clock set to 1:30:00", for each clock the arbiter set.
fn clocks_set(white_ms: Option<u64>, black_ms: Option<u64>) -> Vec<String> {
    [("White", white_ms), ("Black", black_ms)]
        .into_iter()
        .filter_map(|(side, ms)| {
            ms.map(|ms| {
                format!(
                    "{side}'s clock set to {}",
                    boardcast_rules::pgn::format_clock(ms)
                )
            })
        })
        .collect()
}

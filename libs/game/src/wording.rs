//! Game events in words for people (a capture's replay notes, timelines): one place, so that
//! every tool says the same thing about the same record.

use crate::clock::display_name;
use crate::device::ClockDisplay;
use crate::events::{
    ClockSidesBasis, GameEvent, PressSettlement, SetupAspect, Side, game_event::Kind,
};

fn side(side: Side) -> &'static str {
    match side {
        Side::White => "white",
        Side::Black => "black",
        Side::Unspecified => "an unknown player",
    }
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
            i.cause,
            if i.ambiguous { ", ambiguous" } else { "" },
            i.placement
        ),
        Kind::IrregularityCleared(c) => format!("ply {}: irregularity cleared", c.ply),
        Kind::IllegalMove(m) => format!(
            "ply {}: illegal move by {}: {} (Article {}); proposed penalty: {}",
            m.ply, m.offender, m.kind, m.article, m.proposed_penalty
        ),
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
        Kind::ClockAlert(a) => format!("ply {}: clock alert for {}: {}", a.ply, a.side, a.reason),
        Kind::DeadPositionUndetermined(d) => format!(
            "ply {}: whether the position is dead was not determined (Article {})",
            d.ply, d.article
        ),
        Kind::TouchMove(t) => format!(
            "ply {}: possible touch-move breach ({}, {}, Article {})",
            t.ply, t.breach, t.square, t.article
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
            match e.result() {
                crate::events::GameResult::WhiteWins => "1-0",
                crate::events::GameResult::BlackWins => "0-1",
                crate::events::GameResult::Draw => "1/2-1/2",
                crate::events::GameResult::Unspecified => "*",
            },
            e.termination(),
            if e.detail.is_empty() {
                String::new()
            } else {
                format!(" ({})", e.detail)
            }
        ),
        Kind::Arbiter(a) => crate::arbiter::describe(a)?,
        Kind::ClaimJudged(c) => format!("claim judged from the log: {}", c.verdict_from_log),
        Kind::PositionRestored(r) => format!("position after ply {} restored", r.ply),
        Kind::Started(_)
        | Kind::ObservationRecorded(_)
        | Kind::Touch(_)
        | Kind::MoveProvisional(_)
        | Kind::MoveCompleted(_) => return None,
    })
}

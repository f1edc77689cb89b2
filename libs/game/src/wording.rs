//! Game events in words for people (a capture's replay notes, timelines, alerts, pages): one
//! place, so that every tool says the same thing about the same record. Words are made from the
//! events' typed terms; nothing reads them back (a log written before a term was typed shows its
//! own words for it).

use crate::clock::display_name;
use crate::device::ClockDisplay;
use crate::device::{self, ClockRun, DeviceState, Piece, observation};
use crate::events::{
    self, ArbiterAction, ClaimJudged, ClaimJudgement, ClaimRuling, ClockAlert, ClockSidesBasis,
    GameEvent, GameStarted, IllegalMoveKind, IllegalMoveRecorded, IrregularityCause,
    IrregularityObserved, PenaltyKind, PossibleTouchMoveBreach, PressSettlement, SetupAspect, Side,
    SideAction, Source, Termination, TouchEvidence, TouchMoveBreach, arbiter_action::Action,
    game_event::Kind,
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

/// How an illegal move is put right at the board, in words; `None` when nothing is to be done.
pub fn correction(correction: boardcast_rules::illegal::Correction) -> Option<&'static str> {
    use boardcast_rules::illegal::Correction;
    match correction {
        Correction::RestorePosition => {
            Some("the position before the irregularity is restored, and a move made there")
        }
        Correction::ReplacePawnWithQueen => {
            Some("the unpromoted pawn is replaced by a queen of its colour")
        }
        Correction::None | Correction::MoveStands => None,
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

/// What a claim the arbiter rejected costs the claimant (Article 9.5), in words; `None` for an
/// upheld claim or none recorded.
pub fn rejected_claim_penalty(j: &ClaimJudged) -> Option<String> {
    if j.upheld {
        return None;
    }
    let mut parts = Vec::new();
    if j.opponent_bonus_ms > 0 {
        parts.push(format!(
            "{} s added to the opponent's clock",
            j.opponent_bonus_ms / 1000
        ));
    }
    if j.claimant_deduction_ms > 0 {
        parts.push(format!(
            "{} s taken off the claimant's",
            j.claimant_deduction_ms / 1000
        ));
    }
    if !j.intended_move_must_be_played.is_empty() {
        parts.push(format!(
            "the written move {} must be played",
            j.intended_move_must_be_played
        ));
    }
    (!parts.is_empty()).then(|| parts.join(", "))
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

/// How long the piece of a touch-move finding was at rest, when known: `, at rest 1.5 s`.
pub fn touch_rest(t: &crate::events::PossibleTouchMoveBreach) -> String {
    match t.rest_ms {
        ms if ms > 0 => format!(", at rest {:.1} s", ms as f64 / 1000.0),
        _ => String::new(),
    }
}

/// What an event says, in a line; `None` for the routine ones (observations, touches,
/// provisional and completed moves, the start). `edition`: the game's Laws, named where a
/// penalty is none because the act is not illegal under them.
pub fn describe(event: &GameEvent, edition: Option<&str>) -> Option<String> {
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
            let (offender, kind, penalty) = illegal_move(m, edition);
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
        Kind::ClockAlert(a) if a.ply == 0 => format!(
            "before the first move: clock alert for {}: {}",
            clock_alert_side(a),
            a.reason
        ),
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
        Kind::TouchMove(t) if t.evidence() == TouchEvidence::Brief => format!(
            "ply {}: touch noted, not an alert ({}, {}, Article {}){}: seen only for a moment, \
             as a piece slid across squares, an adjustment or a sensor shows",
            t.ply,
            touch_breach(t),
            t.square,
            t.article,
            touch_rest(t)
        ),
        Kind::TouchMove(t) => format!(
            "ply {}: possible touch-move breach ({}, {}, Article {}){}",
            t.ply,
            touch_breach(t),
            t.square,
            t.article,
            touch_rest(t)
        ),
        Kind::BoardStatus(b) => match (b.state(), b.battery_low) {
            (DeviceState::Unspecified, true) => "board: battery low".to_owned(),
            (state, battery_low) => format!(
                "board: {}{}",
                device_state_name(state),
                if battery_low { ", battery low" } else { "" }
            ),
        },
        Kind::ObservationsMissing(m) if !m.unusable_reason.is_empty() => format!(
            "observation {} could not be used: {}",
            m.first_device_seq, m.unusable_reason
        ),
        Kind::ObservationsMissing(m) => format!(
            "observations {} to {} never arrived",
            m.first_device_seq, m.last_device_seq
        ),
        Kind::Ended(e) => format!(
            "result {}: {}",
            terms::result_token(e.result()),
            ending(e.termination(), &e.detail)
        ),
        Kind::Arbiter(a) => arbiter_action(a)?,
        Kind::ClaimJudged(c) => format!(
            "claim judged from the log: {}{}",
            claim_verdict(c),
            rejected_claim_penalty(c)
                .map(|penalty| format!("; rejected by the arbiter: {penalty}"))
                .unwrap_or_default()
        ),
        Kind::PositionRestored(r) => format!("position after ply {} restored", r.ply),
        Kind::SetUpRevised(r) => match &r.set_up {
            Some(s) => format!("set-up revised: {}", set_up_words(s)),
            None => "set-up revised, without one".to_owned(),
        },
        Kind::PenaltyRevised(r) => format!(
            "the penalty of the illegal move of log entry {} proposed again, as the offender's \
             illegal move number {} once the penalty of log entry {} was rejected: {}",
            r.illegal_move_game_seq,
            r.offender_count,
            r.because_rejected_game_seq,
            r.proposed_penalty
        ),
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
        Action::Resume(r) => format!("end withdrawn, play resumed: {}", r.reason),
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

/// An arbiter's ruling as viewers may read it (the broadcast's PGN and JSON, a site the feed is
/// pushed to): what happened on the board and the clocks, in fixed words. Never an arbiter's
/// note, reason or name — a note may be about fair play, a reason about a player's conduct —
/// and nothing for rulings that change nothing viewers see (a penalty rejected: there was no
/// illegal move). `None` for those and for draw offers, which have their own notation.
pub fn public_ruling(action: &ArbiterAction) -> Option<String> {
    let text = match action.action.as_ref()? {
        Action::Penalty(d) if d.confirmed => {
            "illegal move: the arbiter confirmed the penalty".into()
        }
        Action::Penalty(_) => return None,
        Action::Restore(r) => {
            let mut parts = vec![format!(
                "the arbiter restored the position after ply {}",
                r.ply
            )];
            parts.extend(clocks_set(r.white_remaining_ms, r.black_remaining_ms));
            parts.join("; ")
        }
        Action::Clocks(c) => {
            let mut parts = clocks_set(c.white_remaining_ms, c.black_remaining_ms);
            for (side, added) in [("White", c.white_added_ms), ("Black", c.black_added_ms)] {
                if added != 0 {
                    parts.push(format!("{:+} s for {side}", added / 1000));
                }
            }
            if parts.is_empty() {
                return None;
            }
            format!("the arbiter adjusted the clocks: {}", parts.join("; "))
        }
        Action::Move(m) => format!("move {} entered by the arbiter", m.san),
        Action::Resignation(s) => format!("{} resigned", player(s)),
        Action::DrawAgreed(_) => "draw agreed".to_owned(),
        Action::Result(_) => "result declared by the arbiter".to_owned(),
        Action::Resume(_) => "the end was withdrawn by the arbiter: play resumed".to_owned(),
        Action::Claim(c) => format!(
            "{} claimed a draw by {}: {}",
            claimant(c),
            match c.kind() {
                crate::events::ClaimKind::FiftyMoves => "the fifty-move rule",
                _ => "threefold repetition",
            },
            if c.upheld { "upheld" } else { "rejected" }
        ),
        Action::Annotation(_) | Action::Acknowledgement(_) | Action::DrawOffer(_) => return None,
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

// Log entries in words, one line each (the timeline people read).

/// `h:mm:ss`, as clocks show it.
pub fn format_clock(ms: u64) -> String {
    let s = ms / 1000;
    format!("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
}

/// Squares are numbered 0 = a1 … 63 = h8.
pub fn square_name(square: u32) -> String {
    if square > 63 {
        return format!("square {square}");
    }
    let file = (b'a' + (square % 8) as u8) as char;
    format!("{file}{}", square / 8 + 1)
}

pub fn piece_name(piece: Piece) -> &'static str {
    match piece {
        Piece::WhitePawn => "white pawn",
        Piece::WhiteKnight => "white knight",
        Piece::WhiteBishop => "white bishop",
        Piece::WhiteRook => "white rook",
        Piece::WhiteQueen => "white queen",
        Piece::WhiteKing => "white king",
        Piece::BlackPawn => "black pawn",
        Piece::BlackKnight => "black knight",
        Piece::BlackBishop => "black bishop",
        Piece::BlackRook => "black rook",
        Piece::BlackQueen => "black queen",
        Piece::BlackKing => "black king",
        Piece::Unspecified => "a piece",
    }
}

pub fn source_name(source: Source) -> &'static str {
    match source {
        Source::BoardSensor => "board",
        Source::Clock => "clock",
        Source::Arbiter => "arbiter",
        Source::Scoresheet => "scoresheet",
        Source::Reconstruction => "reconstruction",
        Source::Operator => "operator",
        Source::Unspecified => "",
    }
}

/// How a game ended, and the log's words on it when they add to that: "decided by the arbiter
/// (mobile phone rang)", but "draw agreed (Article 5.2.3)" alone.
fn ending(termination: Termination, detail: &str) -> String {
    match termination_name(termination) {
        Some(name) if detail.is_empty() => name.to_owned(),
        Some(name) if !detail.contains(name) => format!("{name} ({detail})"),
        _ if !detail.is_empty() => detail.to_owned(),
        _ => "ended".to_owned(),
    }
}

/// How a game ended, in words; `None` when the log names no way (its detail says it).
pub fn termination_name(termination: Termination) -> Option<&'static str> {
    Some(match termination {
        Termination::Checkmate => "checkmate",
        Termination::Stalemate => "stalemate",
        Termination::BoardResultSignal => "result signalled on the board",
        Termination::Arbiter => "decided by the arbiter",
        Termination::Resignation => "resignation",
        Termination::Agreement => "draw agreed",
        Termination::DeadPosition => "dead position",
        Termination::FivefoldRepetition => "fivefold repetition",
        Termination::SeventyFiveMoves => "75-move rule",
        Termination::FlagFall => "flag fall",
        Termination::BothFlags => "both flags fell",
        Termination::DrawClaim => "draw claim upheld",
        Termination::Unspecified => return None,
    })
}

pub fn device_state_name(state: DeviceState) -> &'static str {
    match state {
        DeviceState::Connected => "connected",
        DeviceState::NotResponding => "not responding",
        DeviceState::Disconnected => "disconnected",
        DeviceState::Unspecified => "unknown",
    }
}

/// "12." for White's ply 23, "12…" for Black's ply 24.
pub fn move_number(ply: u32) -> String {
    let number = ply.div_ceil(2).max(1);
    if ply % 2 == 1 {
        format!("{number}.")
    } else {
        format!("{number}…")
    }
}

fn player_name(p: &Option<events::Player>) -> String {
    match p {
        Some(p) if p.rating > 0 => format!("{} ({})", p.name, p.rating),
        Some(p) if !p.name.is_empty() => p.name.clone(),
        _ => "?".to_owned(),
    }
}

/// A set-up in words: players, round, board and physical board, Laws.
fn set_up_words(s: &GameStarted) -> String {
    format!(
        "{} – {}, round {} board {} on physical board {}{}",
        player_name(&s.white),
        player_name(&s.black),
        s.round,
        s.board_number,
        s.board_id,
        if s.edition.is_empty() {
            String::new()
        } else {
            format!(", Laws {}", s.edition)
        }
    )
}

fn clocks_words(white: Option<u64>, black: Option<u64>) -> String {
    let parts: Vec<String> = [("White", white), ("Black", black)]
        .into_iter()
        .filter_map(|(side, ms)| ms.map(|ms| format!("{side} {}", format_clock(ms))))
        .collect();
    parts.join(", ")
}

/// A clock reading in words. `swapped`: the log established that this reading's White and Black
/// are the other way round from its source's labels (the clock is turned round or was set up
/// the other way): the words give the sides as the game reads them.
fn clock_reading_words(reading: &device::ClockReading, swapped: bool) -> String {
    let (white, black, white_flag, black_flag) = if swapped {
        (
            reading.black_remaining_ms,
            reading.white_remaining_ms,
            reading.black_flag,
            reading.white_flag,
        )
    } else {
        (
            reading.white_remaining_ms,
            reading.black_remaining_ms,
            reading.white_flag,
            reading.black_flag,
        )
    };
    let running = match (reading.running(), swapped) {
        (ClockRun::White, false) | (ClockRun::Black, true) => "White's clock running",
        (ClockRun::Black, false) | (ClockRun::White, true) => "Black's clock running",
        (ClockRun::Stopped, _) => "clock stopped",
        (ClockRun::Unspecified, _) => "running side not reported",
    };
    let mut words = format!(
        "clock reading: White {}, Black {}, {running}",
        format_clock(white),
        format_clock(black)
    );
    if white_flag {
        words.push_str(", White's flag shown");
    }
    if black_flag {
        words.push_str(", Black's flag shown");
    }
    if swapped {
        words.push_str(" (displays read the other way round, as the log established)");
    }
    words
}

fn observation_words(o: &device::Observation, clock_swapped: bool) -> String {
    let words = match o.kind.as_ref() {
        Some(observation::Kind::Lifted(l)) => {
            format!(
                "{} lifted from {}",
                piece_name(l.piece()),
                square_name(l.square)
            )
        }
        Some(observation::Kind::Placed(p)) => {
            format!(
                "{} placed on {}",
                piece_name(p.piece()),
                square_name(p.square)
            )
        }
        Some(observation::Kind::Placement(p)) => format!("board shows {}", p.placement),
        Some(observation::Kind::Clock(c)) => clock_reading_words(c, clock_swapped),
        Some(observation::Kind::Status(s)) => {
            let mut words = format!("board {}", device_state_name(s.state()));
            if let Some(b) = s.battery_percent {
                words.push_str(&format!(", battery {b}%"));
            }
            if !s.detail.is_empty() {
                words.push_str(&format!(" ({})", s.detail));
            }
            words
        }
        None => "an observation of an unknown kind".to_owned(),
    };
    format!("#{} {words}", o.device_seq)
}

fn arbiter_words(a: &ArbiterAction) -> Option<String> {
    Some(match a.action.as_ref()? {
        Action::Acknowledgement(ack) => format!(
            "alert of log entry {} acknowledged{}",
            ack.alert_game_seq,
            if ack.note.is_empty() {
                String::new()
            } else {
                format!(": {}", ack.note)
            }
        ),
        Action::DrawOffer(s) => format!("{} offered a draw", crate::wording::player(s)),
        _ => return None,
    })
}

/// What a log entry says, in a line. `clock_swapped`: for a clock reading, whether the log had
/// established that its displays read the other way round.
pub fn words(event: &GameEvent, clock_swapped: bool, edition: Option<&str>) -> String {
    let mut text = match event.kind.as_ref() {
        None => "an entry of a kind this service does not know".to_owned(),
        Some(kind) => describe(event, edition).unwrap_or_else(|| match kind {
            Kind::Started(s) => format!("game set up: {}", set_up_words(s)),
            Kind::ObservationRecorded(o) => match &o.observation {
                Some(o) => observation_words(o, clock_swapped),
                None => "an empty observation".to_owned(),
            },
            Kind::Touch(t) => format!(
                "ply {}: touch: {} from {}{}",
                t.ply,
                piece_name(t.piece()),
                square_name(t.from_square),
                match t.to_square {
                    Some(to) => format!(" put down on {}", square_name(to)),
                    None => " taken off the board".to_owned(),
                }
            ),
            Kind::MoveProvisional(p) => format!(
                "ply {}: {} {} seen on the board ({}), not yet completed by a clock press",
                p.ply,
                move_number(p.ply),
                p.san,
                p.uci
            ),
            Kind::MoveCompleted(m) => {
                let clocks = clocks_words(m.white_remaining_ms, m.black_remaining_ms);
                format!(
                    "ply {}: {} {} completed{}",
                    m.ply,
                    move_number(m.ply),
                    m.san,
                    if clocks.is_empty() {
                        String::new()
                    } else {
                        format!(" ({clocks})")
                    }
                )
            }
            Kind::Arbiter(a) => arbiter_words(a).unwrap_or_else(|| "an arbiter action".to_owned()),
            _ => kind_name(event).replace('_', " "),
        }),
    };
    if let Some(Kind::Arbiter(a)) = event.kind.as_ref()
        && !a.resolves_alerts.is_empty()
    {
        let list: Vec<String> = a.resolves_alerts.iter().map(u64::to_string).collect();
        text.push_str(&format!(
            " (resolves the alerts of log entries {})",
            list.join(", ")
        ));
    }
    text
}

/// An observation's kind as a stable name (the oneof field).
pub fn observation_kind_name(kind: &observation::Kind) -> &'static str {
    match kind {
        observation::Kind::Lifted(_) => "piece_lifted",
        observation::Kind::Placed(_) => "piece_placed",
        observation::Kind::Placement(_) => "board_placement",
        observation::Kind::Clock(_) => "clock_reading",
        observation::Kind::Status(_) => "device_status",
    }
}

/// The entry's kind as a stable name (the oneof field), for the page and tests.
pub fn kind_name(event: &GameEvent) -> &'static str {
    let Some(kind) = event.kind.as_ref() else {
        return "unknown";
    };
    match kind {
        Kind::Started(_) => "started",
        Kind::SetUpRevised(_) => "set_up_revised",
        Kind::MoveProvisional(_) => "move_provisional",
        Kind::ProvisionalWithdrawn(_) => "provisional_withdrawn",
        Kind::MoveCompleted(_) => "move_completed",
        Kind::Ended(_) => "ended",
        Kind::ObservationRecorded(o) => o
            .observation
            .as_ref()
            .and_then(|o| o.kind.as_ref())
            .map_or("observation", observation_kind_name),
        Kind::Touch(_) => "touch",
        Kind::Reconstructed(_) => "reconstructed",
        Kind::Irregularity(_) => "irregularity",
        Kind::IrregularityCleared(_) => "irregularity_cleared",
        Kind::IllegalMove(_) => "illegal_move",
        Kind::Arbiter(a) => match a.action.as_ref() {
            Some(Action::Penalty(_)) => "penalty_decision",
            Some(Action::Restore(_)) => "restore_position",
            Some(Action::Clocks(_)) => "adjust_clocks",
            Some(Action::Move(_)) => "enter_move",
            Some(Action::DrawOffer(_)) => "draw_offer",
            Some(Action::Resignation(_)) => "resignation",
            Some(Action::DrawAgreed(_)) => "draw_agreed",
            Some(Action::Result(_)) => "declare_result",
            Some(Action::Resume(_)) => "play_resumed",
            Some(Action::Annotation(_)) => "annotation",
            Some(Action::Claim(_)) => "claim_ruling",
            Some(Action::Acknowledgement(_)) => "acknowledgement",
            None => "arbiter_action",
        },
        Kind::PositionRestored(_) => "position_restored",
        Kind::TouchMove(_) => "touch_move",
        Kind::ClockAlert(_) => "clock_alert",
        Kind::DeadPositionUndetermined(_) => "dead_position_undetermined",
        Kind::BoardStatus(_) => "board_status",
        Kind::ClaimJudged(_) => "claim_judged",
        Kind::PenaltyRevised(_) => "penalty_revised",
        Kind::ObservationsMissing(_) => "observations_missing",
        Kind::ClockSides(_) => "clock_sides",
        Kind::SetupMismatch(_) => "setup_mismatch",
        Kind::SetupMismatchCleared(_) => "setup_mismatch_cleared",
        Kind::PressInDoubt(_) => "press_in_doubt",
        Kind::PressSettled(_) => "press_settled",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_penalty_is_worded_from_its_type_as_earlier_versions_wrote_it() {
        let illegal = IllegalMoveRecorded {
            offender_side: Side::Black as i32,
            illegal_kind: IllegalMoveKind::ClockWithoutMove as i32,
            penalty: PenaltyKind::NotIllegal as i32,
            ..Default::default()
        };
        assert_eq!(
            illegal_move(&illegal, Some("fide-2005")),
            (
                "black".to_owned(),
                "clock pressed without a move".to_owned(),
                "none: not an illegal move under fide-2005".to_owned()
            )
        );
        assert_eq!(
            penalty(PenaltyKind::OpponentTime, 120_000, None),
            "120 s added to the opponent's clock"
        );
        // A log written before the types: its own words.
        let old = IllegalMoveRecorded {
            offender: "white".into(),
            kind: "move made with two hands".into(),
            proposed_penalty: "the game is lost".into(),
            ..Default::default()
        };
        assert_eq!(
            illegal_move(&old, None),
            (
                "white".to_owned(),
                "move made with two hands".to_owned(),
                "the game is lost".to_owned()
            )
        );
    }

    #[test]
    fn endings_and_board_states_are_worded_for_people() {
        let event = |kind| GameEvent {
            kind: Some(kind),
            ..Default::default()
        };
        let ended = event(Kind::Ended(events::GameEnded {
            result: events::GameResult::Draw as i32,
            termination: Termination::BoardResultSignal as i32,
            ..Default::default()
        }));
        assert_eq!(
            describe(&ended, None).as_deref(),
            Some("result 1/2-1/2: result signalled on the board")
        );
        // The log's own words after the way, unless they say it already.
        assert_eq!(
            ending(Termination::Arbiter, "mobile phone rang"),
            "decided by the arbiter (mobile phone rang)"
        );
        assert_eq!(
            ending(Termination::Agreement, "draw agreed (Article 5.2.3)"),
            "draw agreed (Article 5.2.3)"
        );
        assert_eq!(ending(Termination::Unspecified, ""), "ended");
        let away = event(Kind::BoardStatus(events::BoardStatusChanged {
            state: DeviceState::NotResponding as i32,
            battery_low: true,
            ..Default::default()
        }));
        assert_eq!(
            describe(&away, None).as_deref(),
            Some("board: not responding, battery low")
        );
    }
}

//! What an arbiter rules through the dashboard — actions, claims, assignments — read from forms
//! or JSON and forwarded to the game service as the arbiter's own calls.

use crate::follow::AlertFilter;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use boardcast_access::{BoardsRuled, Operation};
use boardcast_game::events::arbiter_action::Action;
use boardcast_game::events::{
    ActRequest, AdjustClocks, AlertAcknowledgement, Annotation, ArbiterAction, ClaimKind,
    ClaimRuling, DeclareResult, DrawAgreed, EnterMove, EvaluateClaimRequest, GameResult,
    PenaltyDecision, PlayResumed, RestorePosition, Side, SideAction,
};
use boardcast_game::timeline::TimelineEntry;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{
    AppState, Session, bad_request, form_request_id, json_error, new_request_id, no_store,
    not_readable, read_json, upstream_error,
};

/// A clock value as a form gives it: milliseconds as a number, or text `h:mm:ss`, `m:ss` or
/// seconds, with an optional sign for time added or taken.
#[derive(Deserialize, Debug, Clone, PartialEq)]
#[serde(untagged)]
pub enum ClockInput {
    Ms(i64),
    Text(String),
}

/// Milliseconds of a clock input; `None` for empty text.
pub fn clock_ms(input: &Option<ClockInput>, what: &str) -> Result<Option<i64>, String> {
    let text = match input {
        None => return Ok(None),
        Some(ClockInput::Ms(ms)) => return Ok(Some(*ms)),
        Some(ClockInput::Text(text)) => text.trim(),
    };
    if text.is_empty() {
        return Ok(None);
    }
    let bad = || format!("{what}: {text:?} is not a time (h:mm:ss, m:ss or seconds)");
    let (sign, digits) = match text.as_bytes()[0] {
        b'-' => (-1, &text[1..]),
        b'+' => (1, &text[1..]),
        _ => (1, text),
    };
    let parts: Vec<&str> = digits.split(':').map(str::trim).collect();
    if parts.len() > 3
        || parts
            .iter()
            .any(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) || p.len() > 9)
    {
        return Err(bad());
    }
    let numbers: Vec<i64> = parts.iter().map(|p| p.parse().unwrap_or(0)).collect();
    if numbers.len() > 1 && numbers[1..].iter().any(|n| *n >= 60) {
        return Err(bad());
    }
    let seconds = numbers.iter().fold(0i64, |acc, n| acc * 60 + n);
    Ok(Some(sign * seconds * 1000))
}

pub(super) fn remaining_ms(input: &Option<ClockInput>, what: &str) -> Result<Option<u64>, String> {
    match clock_ms(input, what)? {
        None => Ok(None),
        Some(ms) if ms >= 0 => Ok(Some(ms as u64)),
        Some(_) => Err(format!("{what} cannot be negative")),
    }
}

#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(super) enum ClaimKindBody {
    Threefold,
    FiftyMoves,
}

impl From<ClaimKindBody> for ClaimKind {
    fn from(kind: ClaimKindBody) -> ClaimKind {
        match kind {
            ClaimKindBody::Threefold => ClaimKind::Threefold,
            ClaimKindBody::FiftyMoves => ClaimKind::FiftyMoves,
        }
    }
}

/// A ruling as the page posts it.
#[derive(Deserialize, Debug)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub(super) enum ActionBody {
    Acknowledge {
        alert_game_seq: u64,
        #[serde(default)]
        note: String,
    },
    ClaimRuling {
        claimant: String,
        kind: ClaimKindBody,
        #[serde(default)]
        intended_move: String,
        #[serde(default)]
        claimant_has_moved: bool,
        #[serde(default)]
        claimant_has_touched: bool,
        #[serde(default)]
        claimant_remaining: Option<ClockInput>,
        upheld: bool,
        #[serde(default)]
        note: String,
    },
    Penalty {
        illegal_move_game_seq: u64,
        confirmed: bool,
        #[serde(default)]
        note: String,
    },
    Restore {
        ply: u32,
        #[serde(default)]
        reason: String,
        #[serde(default)]
        white_remaining: Option<ClockInput>,
        #[serde(default)]
        black_remaining: Option<ClockInput>,
    },
    Clocks {
        #[serde(default)]
        white_remaining: Option<ClockInput>,
        #[serde(default)]
        black_remaining: Option<ClockInput>,
        #[serde(default)]
        white_added: Option<ClockInput>,
        #[serde(default)]
        black_added: Option<ClockInput>,
        #[serde(default)]
        reason: String,
    },
    EnterMove {
        san: String,
    },
    Result {
        result: String,
        #[serde(default)]
        reason: String,
        #[serde(default)]
        article: String,
    },
    Annotation {
        text: String,
    },
    /// The game's end was recorded in error: play goes on.
    Resume {
        reason: String,
    },
    DrawOffer {
        side: String,
    },
    Resignation {
        side: String,
    },
    DrawAgreed {},
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub(super) struct ActBody {
    request_id: String,
    #[serde(default)]
    resolves_alerts: Vec<u64>,
    action: ActionBody,
}

pub(super) fn side(text: &str, what: &str) -> Result<Side, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "white" => Ok(Side::White),
        "black" => Ok(Side::Black),
        other => Err(format!("{what} must be white or black, not {other:?}")),
    }
}

pub(super) fn game_result(text: &str) -> Result<GameResult, String> {
    match text.trim() {
        "1-0" => Ok(GameResult::WhiteWins),
        "0-1" => Ok(GameResult::BlackWins),
        "1/2-1/2" | "½-½" | "draw" => Ok(GameResult::Draw),
        "0-0" => Ok(GameResult::BothLose),
        "1/2-0" | "½-0" => Ok(GameResult::WhiteHalfBlackZero),
        "0-1/2" | "0-½" => Ok(GameResult::WhiteZeroBlackHalf),
        other => Err(format!(
            "the result must be 1-0, 0-1, 1/2-1/2, 0-0 (both lose), 1/2-0 or 0-1/2 (one loses, \
             the other scores a draw), not {other:?}"
        )),
    }
}

/// The ruling as the game service's `ArbiterAction`.
pub(super) fn arbiter_action(
    body: ActionBody,
    resolves_alerts: Vec<u64>,
) -> Result<ArbiterAction, String> {
    let action = match body {
        ActionBody::Acknowledge {
            alert_game_seq,
            note,
        } => Action::Acknowledgement(AlertAcknowledgement {
            alert_game_seq,
            note,
        }),
        ActionBody::ClaimRuling {
            claimant,
            kind,
            intended_move,
            claimant_has_moved,
            claimant_has_touched,
            claimant_remaining,
            upheld,
            note,
        } => Action::Claim(ClaimRuling {
            claimant_side: side(&claimant, "the claimant")? as i32,
            // Also in words, for a game service older than the typed side.
            claimant: claimant.trim().to_ascii_lowercase(),
            kind: ClaimKind::from(kind) as i32,
            intended_move: intended_move.trim().to_owned(),
            claimant_has_moved,
            claimant_has_touched,
            claimant_remaining_ms: remaining_ms(&claimant_remaining, "the claimant's time")?
                .unwrap_or(0),
            upheld,
            note,
        }),
        ActionBody::Penalty {
            illegal_move_game_seq,
            confirmed,
            note,
        } => Action::Penalty(PenaltyDecision {
            illegal_move_game_seq,
            confirmed,
            note,
        }),
        ActionBody::Restore {
            ply,
            reason,
            white_remaining,
            black_remaining,
        } => Action::Restore(RestorePosition {
            ply,
            reason,
            white_remaining_ms: remaining_ms(&white_remaining, "White's clock")?,
            black_remaining_ms: remaining_ms(&black_remaining, "Black's clock")?,
        }),
        ActionBody::Clocks {
            white_remaining,
            black_remaining,
            white_added,
            black_added,
            reason,
        } => {
            let clocks = AdjustClocks {
                white_remaining_ms: remaining_ms(&white_remaining, "White's clock")?,
                black_remaining_ms: remaining_ms(&black_remaining, "Black's clock")?,
                white_added_ms: clock_ms(&white_added, "time for White")?.unwrap_or(0),
                black_added_ms: clock_ms(&black_added, "time for Black")?.unwrap_or(0),
                reason,
            };
            if clocks.white_remaining_ms.is_none()
                && clocks.black_remaining_ms.is_none()
                && clocks.white_added_ms == 0
                && clocks.black_added_ms == 0
            {
                return Err("set a clock or add time: every field is empty".to_owned());
            }
            Action::Clocks(clocks)
        }
        ActionBody::EnterMove { san } => {
            let san = san.trim().to_owned();
            if san.is_empty() {
                return Err("enter the move (SAN or UCI)".to_owned());
            }
            Action::Move(EnterMove { san })
        }
        ActionBody::Result {
            result,
            reason,
            article,
        } => Action::Result(DeclareResult {
            result: game_result(&result)? as i32,
            reason,
            article,
        }),
        ActionBody::Annotation { text } => {
            if text.trim().is_empty() {
                return Err("the note is empty".to_owned());
            }
            Action::Annotation(Annotation { text })
        }
        ActionBody::Resume { reason } => {
            if reason.trim().is_empty() {
                return Err("say why the end was an error: the chief arbiter is told".to_owned());
            }
            Action::Resume(PlayResumed { reason })
        }
        ActionBody::DrawOffer { side: s } => Action::DrawOffer(SideAction {
            player: side(&s, "the side")? as i32,
            side: s.trim().to_ascii_lowercase(),
        }),
        ActionBody::Resignation { side: s } => Action::Resignation(SideAction {
            player: side(&s, "the side")? as i32,
            side: s.trim().to_ascii_lowercase(),
        }),
        ActionBody::DrawAgreed {} => Action::DrawAgreed(DrawAgreed {}),
    };
    Ok(ArbiterAction {
        action: Some(action),
        resolves_alerts,
    })
}

/// What a forwarded ruling came to.
#[derive(Serialize)]
pub(super) struct ActAnswer {
    request_id: String,
    /// The form had been submitted before: the game service recorded nothing twice.
    already_recorded: bool,
    /// The log entries the ruling added, in words.
    recorded: Vec<TimelineEntry>,
    message: String,
    /// The game's log after the call (as the game service answered).
    game_seq: u64,
    /// A request id for the form shown again.
    next_request_id: String,
}

pub(super) async fn api_act(
    State(state): State<AppState>,
    session: Session,
    Path(game_id): Path<String>,
    body: Bytes,
) -> Response {
    let body: ActBody = match read_json(&body, "the ruling") {
        Ok(body) => body,
        Err(message) => return bad_request(message),
    };
    let request_id = match form_request_id(&body.request_id) {
        Ok(id) => id,
        Err(message) => return bad_request(message),
    };
    if body.resolves_alerts.len() > 1000 {
        return json_error(
            StatusCode::BAD_REQUEST,
            "INVALID_ARGUMENT",
            "too many alerts to resolve at once",
        );
    }
    let action = match arbiter_action(body.action, body.resolves_alerts) {
        Ok(action) => action,
        Err(message) => return bad_request(message),
    };
    let already = !state
        .games
        .entries_of_request(&game_id, &request_id)
        .is_empty();
    let answer = state
        .api
        .act(
            session.token.clone(),
            ActRequest {
                game_id: game_id.clone(),
                action: Some(action),
                request_id: request_id.clone(),
            },
        )
        .await;
    let answer = match answer {
        Ok(answer) => answer,
        Err(e) => {
            tracing::info!(game = %game_id, user = %session.identity.user, code = e.code_name(), "ruling refused: {e}");
            return upstream_error(&e);
        }
    };
    let game_seq = answer.state.map(|s| s.last_game_seq).unwrap_or(0);
    // The page shows what the log shows: wait (briefly) until the follower has read it.
    let caught_up = state
        .games
        .wait_for(&game_id, game_seq, state.config.act_wait)
        .await;
    let recorded = state.games.entries_of_request(&game_id, &request_id);
    let words: Vec<&str> = recorded.iter().map(|e| e.words.as_str()).collect();
    let message = if !caught_up || recorded.is_empty() {
        format!(
            "The game service recorded it (the game's log ends at entry {game_seq}); it shows \
             here as soon as this service has read the log."
        )
    } else if already {
        format!(
            "This form had been sent before: nothing was recorded twice. The log holds: {}.",
            words.join("; ")
        )
    } else {
        format!("Recorded: {}.", words.join("; "))
    };
    tracing::info!(game = %game_id, user = %session.identity.user, %request_id, "ruling forwarded");
    no_store(&ActAnswer {
        request_id,
        already_recorded: already,
        recorded,
        message,
        game_seq,
        next_request_id: new_request_id(),
    })
}

// ---------------------------------------------------------------------------------------------
// Arbiters and their boards: the chief arbiter assigns them, through the game service.

/// Board numbers as an arbiter writes them: `1-4, 7 9`.
pub fn parse_boards(text: &str) -> Result<Vec<u32>, String> {
    let mut boards = std::collections::BTreeSet::new();
    for part in text
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|p| !p.is_empty())
    {
        let number = |n: &str| {
            n.trim()
                .parse::<u32>()
                .ok()
                .filter(|n| *n >= 1)
                .ok_or_else(|| format!("{part:?} is not a board number (1, 2, … or a range 1-8)"))
        };
        match part.split_once('-') {
            Some((first, last)) => {
                let (first, last) = (number(first)?, number(last)?);
                if last < first || last - first >= boardcast_access::MAX_ASSIGNED_BOARDS as u32 {
                    return Err(format!("the range {part:?} is not a range of boards"));
                }
                boards.extend(first..=last);
            }
            None => {
                boards.insert(number(part)?);
            }
        }
        if boards.len() > boardcast_access::MAX_ASSIGNED_BOARDS {
            return Err(format!(
                "more than {} boards",
                boardcast_access::MAX_ASSIGNED_BOARDS
            ));
        }
    }
    Ok(boards.into_iter().collect())
}

/// `1-4, 7` for boards 1, 2, 3, 4 and 7.
pub fn describe_boards(boards: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < boards.len() {
        let mut j = i;
        while j + 1 < boards.len() && boards[j + 1] == boards[j] + 1 {
            j += 1;
        }
        parts.push(if j > i {
            format!("{}-{}", boards[i], boards[j])
        } else {
            boards[i].to_string()
        });
        i = j + 1;
    }
    parts.join(", ")
}

pub(super) fn assignment_json(
    a: &boardcast_schema::game::v1::ArbiterAssignment,
) -> serde_json::Value {
    json!({
        "user": a.user,
        "boards": a.boards,
        "boards_text": describe_boards(&a.boards),
        "assigned_by": a.assigned_by,
        "assigned_unix_ms": a.assigned_unix_ms,
    })
}

#[derive(Deserialize, Default)]
pub(super) struct AssignmentsQuery {
    /// The round whose boards' coverage is asked for.
    round: Option<u32>,
}

/// Who rules on which boards of a tournament: the chief arbiter's assignments in force, every
/// arbiter with the boards they rule on now (the users file's unless assigned), and with
/// `round` which of the round's boards no arbiter or several rule on.
pub(super) async fn api_assignments(
    State(state): State<AppState>,
    session: Session,
    Path(tournament): Path<String>,
    Query(query): Query<AssignmentsQuery>,
) -> Response {
    if let Some(why) = not_readable(&session, &tournament) {
        return json_error(StatusCode::FORBIDDEN, "PERMISSION_DENIED", why);
    }
    let listed = match state
        .api
        .list_assignments(session.token.clone(), tournament.clone())
        .await
    {
        Ok(listed) => listed,
        Err(e) => return upstream_error(&e),
    };
    // Who rules where is for those who rule in the tournament; for others the page says so.
    let rules_here = session.identity.rules_on(&tournament).is_some();
    let ruled: Vec<(&str, BoardsRuled)> = listed
        .arbiters
        .iter()
        .map(|a| {
            let boards = if a.every_board {
                BoardsRuled::Every
            } else {
                BoardsRuled::These(a.boards.clone())
            };
            (a.user.as_str(), boards)
        })
        .collect();
    let coverage = query.round.filter(|_| rules_here).map(|round| {
        let boards: Vec<u32> = state
            .games
            .boards(&AlertFilter {
                tournament: Some(tournament.clone()),
                round: Some(round),
                game: None,
            })
            .iter()
            .map(|b| b.board_number)
            .collect();
        let coverage =
            boardcast_access::coverage(ruled.iter().map(|(user, boards)| (*user, boards)), &boards);
        json!({
            "round": round,
            "uncovered": coverage.uncovered,
            "uncovered_text": describe_boards(&coverage.uncovered),
            "shared": coverage.shared.iter().map(|(board, users)| json!({
                "board": board,
                "users": users,
            })).collect::<Vec<_>>(),
        })
    });
    let arbiters = rules_here.then(|| {
        listed
            .arbiters
            .iter()
            .map(|a| {
                json!({
                    "user": a.user,
                    "display_name": a.display_name,
                    "every_board": a.every_board,
                    "boards": a.boards,
                    "boards_text": describe_boards(&a.boards),
                    "assignment": a.assignment.as_ref().map(assignment_json),
                })
            })
            .collect::<Vec<_>>()
    });
    no_store(&json!({
        "assignments": listed.assignments.iter().map(assignment_json).collect::<Vec<_>>(),
        "arbiters": arbiters,
        "coverage": coverage,
        "may_assign": session
            .identity
            .may(Operation::AssignArbiters { tournament: &tournament })
            .is_ok(),
    }))
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub(super) struct AssignBody {
    request_id: String,
    user: String,
    /// `1-4, 7`; empty takes every board away.
    #[serde(default)]
    boards: String,
}

pub(super) async fn api_assign(
    State(state): State<AppState>,
    session: Session,
    Path(tournament): Path<String>,
    body: Bytes,
) -> Response {
    let body: AssignBody = match read_json(&body, "the assignment") {
        Ok(body) => body,
        Err(message) => return bad_request(message),
    };
    let request_id = match form_request_id(&body.request_id) {
        Ok(id) => id,
        Err(message) => return bad_request(message),
    };
    let user = body.user.trim().to_owned();
    if user.is_empty() {
        return json_error(
            StatusCode::BAD_REQUEST,
            "INVALID_ARGUMENT",
            "name the arbiter (their user name)",
        );
    }
    let boards = match parse_boards(&body.boards) {
        Ok(boards) => boards,
        Err(message) => return bad_request(message),
    };
    let answer = state
        .api
        .assign_arbiter(
            session.token.clone(),
            boardcast_schema::game::v1::AssignArbiterRequest {
                tournament_id: tournament.clone(),
                user,
                boards,
                request_id,
            },
        )
        .await;
    match answer {
        Ok(assignment) => {
            tracing::info!(%tournament, user = %assignment.user, by = %session.identity.user, "arbiter assigned");
            let message = if assignment.boards.is_empty() {
                format!(
                    "Recorded: {} rules on no board of {tournament} now.",
                    assignment.user
                )
            } else {
                format!(
                    "Recorded: {} rules on board{} {} of {tournament} now.",
                    assignment.user,
                    if assignment.boards.len() == 1 {
                        ""
                    } else {
                        "s"
                    },
                    describe_boards(&assignment.boards)
                )
            };
            no_store(&json!({
                "assignment": assignment_json(&assignment),
                "message": message,
                "next_request_id": new_request_id(),
            }))
        }
        Err(e) => upstream_error(&e),
    }
}

#[derive(Deserialize, Debug)]
pub(super) struct ClaimBody {
    kind: ClaimKindBody,
    #[serde(default)]
    intended_move: String,
    #[serde(default)]
    claimant_has_moved: bool,
    #[serde(default)]
    claimant_has_touched: bool,
    #[serde(default)]
    claimant_remaining: Option<ClockInput>,
}

pub(super) async fn api_claim(
    State(state): State<AppState>,
    session: Session,
    Path(game_id): Path<String>,
    body: Bytes,
) -> Response {
    let body: ClaimBody = match read_json(&body, "the claim") {
        Ok(body) => body,
        Err(message) => return bad_request(message),
    };
    let remaining = match remaining_ms(&body.claimant_remaining, "the claimant's time") {
        Ok(ms) => ms.unwrap_or(0),
        Err(message) => return bad_request(message),
    };
    let request = EvaluateClaimRequest {
        game_id: game_id.clone(),
        kind: ClaimKind::from(body.kind) as i32,
        intended_move: body.intended_move.trim().to_owned(),
        claimant_has_moved: body.claimant_has_moved,
        claimant_has_touched: body.claimant_has_touched,
        claimant_remaining_ms: remaining,
    };
    match state
        .api
        .evaluate_claim(session.token.clone(), request)
        .await
    {
        Ok(verdict) => no_store(&json!({
            "verdict": verdict.verdict,
            "article": verdict.article,
            "explanation": verdict.explanation,
            "occurrences": verdict.occurrences.iter().map(|o| json!({
                "ply": o.ply, "move_number": o.move_number, "game_seq": o.game_seq,
            })).collect::<Vec<_>>(),
            "game_seqs": verdict.game_seqs,
            "penalty_if_rejected": verdict.penalty_if_rejected,
            "unconfirmed": verdict.unconfirmed.iter().map(|u| json!({
                "ply": u.ply,
                "san": u.san,
                "game_seq": u.game_seq,
                "source": boardcast_game::timeline::source_name(u.source()),
            })).collect::<Vec<_>>(),
            "detail": serde_json::from_str::<serde_json::Value>(&verdict.detail_json)
                .unwrap_or(serde_json::Value::String(verdict.detail_json.clone())),
        })),
        Err(e) => upstream_error(&e),
    }
}

// ---------------------------------------------------------------------------------------------
// The live queue: server-sent events.

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_values_are_read_as_forms_give_them() {
        let text = |t: &str| Some(ClockInput::Text(t.into()));
        assert_eq!(clock_ms(&text("1:30:00"), "t"), Ok(Some(5_400_000)));
        assert_eq!(clock_ms(&text("5:07"), "t"), Ok(Some(307_000)));
        assert_eq!(clock_ms(&text("90"), "t"), Ok(Some(90_000)));
        assert_eq!(clock_ms(&text("+2:00"), "t"), Ok(Some(120_000)));
        assert_eq!(clock_ms(&text("-1:00"), "t"), Ok(Some(-60_000)));
        assert_eq!(clock_ms(&text("  "), "t"), Ok(None));
        assert_eq!(clock_ms(&None, "t"), Ok(None));
        assert_eq!(clock_ms(&Some(ClockInput::Ms(1500)), "t"), Ok(Some(1500)));
        for bad in ["1:60", "a:00", "1::00", "1:2:3:4", "+", "9999999999"] {
            assert!(clock_ms(&text(bad), "White's clock").is_err(), "{bad}");
        }
    }

    #[test]
    fn results_are_read_as_arbiters_write_them() {
        assert_eq!(game_result(" 1-0 "), Ok(GameResult::WhiteWins));
        assert_eq!(game_result("½-½"), Ok(GameResult::Draw));
        assert_eq!(game_result("0-0"), Ok(GameResult::BothLose));
        assert_eq!(game_result("½-0"), Ok(GameResult::WhiteHalfBlackZero));
        assert_eq!(game_result("1/2-0"), Ok(GameResult::WhiteHalfBlackZero));
        assert_eq!(game_result("0-1/2"), Ok(GameResult::WhiteZeroBlackHalf));
        assert!(game_result("1-1").is_err());
    }

    #[test]
    fn boards_are_read_as_arbiters_write_them() {
        assert_eq!(parse_boards("1-4, 7 9,9"), Ok(vec![1, 2, 3, 4, 7, 9]));
        assert_eq!(parse_boards("1-2000, 1, 2000").map(|b| b.len()), Ok(2000));
        assert_eq!(parse_boards("  "), Ok(vec![]));
        for bad in ["0", "a", "4-2", "1-", "-3", "1-99999999", "4294967296"] {
            assert!(parse_boards(bad).is_err(), "{bad}");
        }
        assert_eq!(describe_boards(&[1, 2, 3, 4, 7, 9, 10]), "1-4, 7, 9-10");
        assert_eq!(describe_boards(&[]), "");
    }
}

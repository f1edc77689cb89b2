//! The dashboard's pages (one HTML shell filled by `dashboard.js`), its script and style, and
//! the health check.

use super::REQUEST_IDS_PER_PAGE;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::Response;
use axum::response::{Html, IntoResponse as _};
use boardcast_access::Operation;
use serde::Deserialize;
use serde_json::json;

use super::{
    AppState, DASHBOARD_CSS, DASHBOARD_HTML, DASHBOARD_JS, Session, escape, message_page,
    new_request_id, no_store, not_readable,
};

pub(super) async fn css() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        DASHBOARD_CSS,
    )
        .into_response()
}

pub(super) async fn js() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        DASHBOARD_JS,
    )
        .into_response()
}

/// The dashboard page: the same document for every view, told which one it is and given what
/// its scripts need (CSRF value, request ids for its forms) in a JSON block.
pub(super) fn render(
    session: &Session,
    page: &str,
    title: &str,
    params: serde_json::Value,
) -> Response {
    let boot = json!({
        "page": page,
        "csrf": session.csrf,
        "user": session.identity.user,
        "display_name": session.identity.display_name,
        "grants": session.identity.grants.iter().map(|g| json!({
            "tournament": g.tournament,
            "role": g.role.name(),
            "boards": g.boards,
        })).collect::<Vec<_>>(),
        "expires_unix_ms": session.identity.expires_unix_ms,
        "params": params,
        "request_ids": (0..REQUEST_IDS_PER_PAGE).map(|_| new_request_id()).collect::<Vec<_>>(),
    });
    // In a JSON script block only "</script" could end it early: `<` is escaped.
    let boot = boot.to_string().replace('<', "\\u003c");
    let user = if session.identity.display_name.is_empty() {
        &session.identity.user
    } else {
        &session.identity.display_name
    };
    let mut body = DASHBOARD_HTML
        .replace("{{TITLE}}", &escape(title))
        .replace("{{PAGE}}", page)
        .replace("{{USER}}", &escape(user))
        .replace("{{CSRF}}", &escape(&session.csrf))
        .replace("{{BOOT}}", &boot);
    // Every form shown carries its own request id: submitting it again is the same request.
    while let Some(at) = body.find("{{RID}}") {
        body.replace_range(at..at + "{{RID}}".len(), &new_request_id());
    }
    ([(header::CACHE_CONTROL, "no-store")], Html(body)).into_response()
}

pub(super) async fn index_page(session: Session) -> Response {
    render(&session, "index", "Rounds", json!({}))
}

pub(super) async fn round_page(
    session: Session,
    Path((tournament, round)): Path<(String, String)>,
) -> Response {
    let Ok(round) = round.parse::<u32>() else {
        return message_page(
            StatusCode::NOT_FOUND,
            "Not found",
            &format!("{round:?} is not a round number"),
        );
    };
    if let Some(why) = not_readable(&session, &tournament) {
        return message_page(StatusCode::FORBIDDEN, "Not allowed", &why);
    }
    render(
        &session,
        "round",
        &format!("{tournament} · round {round}"),
        json!({ "tournament": tournament, "round": round }),
    )
}

#[derive(Deserialize, Default)]
pub(super) struct GamePageQuery {
    alert: Option<u64>,
}

pub(super) async fn game_page(
    State(state): State<AppState>,
    session: Session,
    Path(game_id): Path<String>,
    query: Result<Query<GamePageQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let query = query.map(|q| q.0).unwrap_or_default();
    let Some((tournament, board_number)) = state.games.tournament_of(&game_id) else {
        return message_page(
            StatusCode::NOT_FOUND,
            "Not found",
            &format!("no game {game_id:?} in the game log"),
        );
    };
    if let Some(why) = not_readable(&session, &tournament) {
        return message_page(StatusCode::FORBIDDEN, "Not allowed", &why);
    }
    let may_rule = session.identity.may(Operation::Rule {
        tournament: &tournament,
        board_number,
    });
    render(
        &session,
        "game",
        &game_id,
        json!({
            "game_id": game_id,
            "tournament": tournament,
            "board_number": board_number,
            "alert": query.alert,
            "may_rule": may_rule.is_ok(),
            "may_rule_why": may_rule.err().map(|d| d.to_string()),
        }),
    )
}

/// Alive, and whether the log is followed; nothing that moves with play (no position, no count):
/// it answers without a login, and during a delay must not tell when moves are made.
pub(super) async fn healthz(State(state): State<AppState>) -> Response {
    no_store(&json!({
        "status": "ok",
        "game_log": state.games.status(),
        "game_service": game_service_status(&state),
    }))
}

fn game_service_status(state: &AppState) -> serde_json::Value {
    match state.api.unreachable() {
        None => json!("answers"),
        Some(why) => json!({ "unreachable": why }),
    }
}

/// Ready for arbiters: the game log followed and the game service answering (logins and
/// rulings go to it). 503 with what is missing otherwise; put a load balancer on this.
pub(super) async fn readyz(State(state): State<AppState>) -> Response {
    let game_log = state.games.status();
    let ready =
        game_log == crate::follow::FollowStatus::Following && state.api.unreachable().is_none();
    let mut response = no_store(&json!({
        "ready": ready,
        "game_log": game_log,
        "game_service": game_service_status(&state),
    }));
    if !ready {
        *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    }
    response
}

// ---------------------------------------------------------------------------------------------
// JSON API: reads.

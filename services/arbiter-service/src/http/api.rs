//! The dashboard's JSON API for reading (rounds, boards, alerts, timelines, positions) and the
//! live queue of alerts and boards as server-sent events.

use super::new_request_id;
use axum::response::IntoResponse as _;
use serde::Deserialize;
use serde_json::json;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{Response, sse};
use boardcast_access::Identity;
use boardcast_kit::now_unix_ms;
use futures::Stream;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use super::{
    ApiError, AppState, REQUEST_IDS_PER_PAGE, Session, json_error, no_store, not_readable,
};
use crate::auth;
use crate::auth::SessionError;
use crate::follow::{AlertFilter, AlertKey, AlertView, BoardView, Change};

pub(super) async fn api_me(session: Session) -> Response {
    no_store(&json!({
        "user": session.identity.user,
        "display_name": session.identity.display_name,
        "expires_unix_ms": session.identity.expires_unix_ms,
        "grants": session.identity.grants.iter().map(|g| json!({
            "tournament": g.tournament,
            "role": g.role.name(),
            "boards": g.boards,
        })).collect::<Vec<_>>(),
        // By tournament ("*" for every one the user has no entry for): the boards the user
        // rules on, "every" for a chief arbiter; none listed for reading only.
        "rules_on": rules_on(&session.identity),
    }))
}

/// The boards an identity rules on in each tournament it has a grant or an assignment in.
fn rules_on(identity: &boardcast_access::Identity) -> serde_json::Map<String, serde_json::Value> {
    let tournaments: std::collections::BTreeSet<&str> = identity
        .grants
        .iter()
        .map(|g| g.tournament.as_str())
        .chain(identity.assigned.keys().map(String::as_str))
        .collect();
    tournaments
        .into_iter()
        .filter_map(|t| {
            let boards = match identity.rules_on(t)? {
                boardcast_access::BoardsRuled::Every => json!("every"),
                boardcast_access::BoardsRuled::These(boards) => json!(boards),
            };
            Some((t.to_owned(), boards))
        })
        .collect()
}

pub(super) async fn api_rounds(State(state): State<AppState>, session: Session) -> Response {
    let identity = session.identity.clone();
    no_store(&state.games.rounds(&|t| identity.may_read(t)))
}

pub(super) async fn api_round(
    State(state): State<AppState>,
    session: Session,
    Path((tournament, round)): Path<(String, String)>,
) -> Response {
    let Ok(round) = round.parse::<u32>() else {
        return json_error(
            StatusCode::NOT_FOUND,
            "NOT_FOUND",
            format!("{round:?} is not a round number"),
        );
    };
    if let Some(why) = not_readable(&session, &tournament) {
        return json_error(StatusCode::FORBIDDEN, "PERMISSION_DENIED", why);
    }
    let filter = AlertFilter {
        tournament: Some(tournament),
        round: Some(round),
        game: None,
    };
    no_store(&json!({ "boards": state.games.boards(&filter) }))
}

#[derive(Deserialize, Default)]
pub(super) struct AlertQuery {
    tournament: Option<String>,
    round: Option<u32>,
    game: Option<String>,
    /// Resolved alerts too.
    #[serde(default)]
    all: bool,
    last_event_id: Option<String>,
}

/// The queue's filter, refused when it names something the user may not read.
pub(super) fn alert_filter(
    state: &AppState,
    session: &Session,
    query: &AlertQuery,
) -> Result<AlertFilter, ApiError> {
    let mut filter = AlertFilter {
        tournament: query.tournament.clone().filter(|t| !t.is_empty()),
        round: query.round.filter(|r| *r > 0),
        game: query.game.clone().filter(|g| !g.is_empty()),
    };
    if let Some(game) = &filter.game {
        let Some((tournament, _)) = state.games.tournament_of(game) else {
            return Err(ApiError::new(
                StatusCode::NOT_FOUND,
                "NOT_FOUND",
                format!("no game {game:?} in the game log"),
            ));
        };
        filter.tournament = Some(tournament);
    }
    if let Some(tournament) = &filter.tournament
        && let Some(why) = not_readable(session, tournament)
    {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "PERMISSION_DENIED",
            why,
        ));
    }
    Ok(filter)
}

pub(super) async fn api_alerts(
    State(state): State<AppState>,
    session: Session,
    query: Result<Query<AlertQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let query = match query {
        Ok(Query(q)) => q,
        Err(e) => return json_error(StatusCode::BAD_REQUEST, "INVALID_ARGUMENT", e.body_text()),
    };
    let filter = match alert_filter(&state, &session, &query) {
        Ok(f) => f,
        Err(refused) => return refused.into_response(),
    };
    let identity = session.identity.clone();
    let readable = move |t: &str| identity.may_read(t);
    let everything: AlertKey = (0, String::new(), 0);
    let (alerts, _) = state.games.alerts_since(
        &filter,
        &readable,
        if query.all { Some(&everything) } else { None },
    );
    no_store(&json!({ "alerts": alerts }))
}

#[derive(Deserialize)]
pub(super) struct CountQuery {
    count: Option<usize>,
}

pub(super) async fn api_request_ids(
    _session: Session,
    Query(query): Query<CountQuery>,
) -> Response {
    let count = query.count.unwrap_or(REQUEST_IDS_PER_PAGE).clamp(1, 100);
    no_store(&json!({
        "request_ids": (0..count).map(|_| new_request_id()).collect::<Vec<_>>(),
    }))
}

/// The game's tournament if the user may read it; otherwise the response to send.
pub(super) fn readable_game(
    state: &AppState,
    session: &Session,
    game_id: &str,
) -> Result<(String, u32), ApiError> {
    let Some((tournament, board)) = state.games.tournament_of(game_id) else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "NOT_FOUND",
            format!("no game {game_id:?} in the game log"),
        ));
    };
    if let Some(why) = not_readable(session, &tournament) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "PERMISSION_DENIED",
            why,
        ));
    }
    Ok((tournament, board))
}

pub(super) async fn api_game(
    State(state): State<AppState>,
    session: Session,
    Path(game_id): Path<String>,
) -> Response {
    if let Err(refused) = readable_game(&state, &session, &game_id) {
        return refused.into_response();
    }
    match state.games.game_detail(&game_id) {
        Some(detail) => no_store(&detail),
        None => json_error(
            StatusCode::NOT_FOUND,
            "NOT_FOUND",
            format!("no game {game_id:?} in the game log"),
        ),
    }
}

#[derive(Deserialize)]
pub(super) struct AfterQuery {
    after: Option<u64>,
}

pub(super) async fn api_timeline(
    State(state): State<AppState>,
    session: Session,
    Path(game_id): Path<String>,
    query: Result<Query<AfterQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    if let Err(refused) = readable_game(&state, &session, &game_id) {
        return refused.into_response();
    }
    let after = match query {
        Ok(Query(q)) => q.after.unwrap_or(0),
        Err(e) => return json_error(StatusCode::BAD_REQUEST, "INVALID_ARGUMENT", e.body_text()),
    };
    match state.games.timeline_after(&game_id, after) {
        Some(entries) => no_store(&json!({
            "timeline": entries,
            "board": state.games.board(&game_id),
        })),
        None => json_error(StatusCode::NOT_FOUND, "NOT_FOUND", "no such game"),
    }
}

pub(super) async fn api_at(
    State(state): State<AppState>,
    session: Session,
    Path((game_id, game_seq)): Path<(String, String)>,
) -> Response {
    if let Err(refused) = readable_game(&state, &session, &game_id) {
        return refused.into_response();
    }
    let Ok(game_seq) = game_seq.parse::<u64>() else {
        return json_error(
            StatusCode::BAD_REQUEST,
            "INVALID_ARGUMENT",
            format!("{game_seq:?} is not a log entry number"),
        );
    };
    // Folding a long game is CPU work: off the async threads.
    let games = state.games.clone();
    let folded = tokio::task::spawn_blocking(move || games.position_at(&game_id, game_seq)).await;
    match folded {
        Ok(Ok(view)) => no_store(&view),
        Ok(Err(e @ crate::follow::AtError::OutOfRange { .. })) => {
            json_error(StatusCode::NOT_FOUND, "OUT_OF_RANGE", e.to_string())
        }
        Ok(Err(e)) => json_error(StatusCode::UNPROCESSABLE_ENTITY, "DAMAGED", e.to_string()),
        Err(e) => json_error(StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL", e.to_string()),
    }
}

// ---------------------------------------------------------------------------------------------
// Rulings: forwarded to the game service.

pub(super) fn alert_event(alert: &AlertView) -> sse::Event {
    let event = sse::Event::default().event("alert");
    // Game ids are checked by the aggregate; an id that could break the stream is left out.
    let event = if alert.event_id.contains(['\n', '\r', '\0']) {
        event
    } else {
        event.id(alert.event_id.clone())
    };
    event
        .json_data(alert)
        .unwrap_or_else(|_| sse::Event::default().comment("an alert that cannot be sent"))
}

pub(super) fn board_event(board: &BoardView) -> sse::Event {
    sse::Event::default()
        .event("board")
        .json_data(board)
        .unwrap_or_else(|_| sse::Event::default().comment("a board that cannot be sent"))
}

/// `GET /events?tournament=..&round=..` (or `?game=..`): the open alerts (or, for a page that
/// reconnects with `Last-Event-ID`, every change after that event), the boards, then each alert
/// raised or changed and each board changed, as they happen.
pub(super) async fn events(
    State(state): State<AppState>,
    session: Session,
    headers: HeaderMap,
    query: Result<Query<AlertQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let query = match query {
        Ok(Query(q)) => q,
        Err(e) => return json_error(StatusCode::BAD_REQUEST, "INVALID_ARGUMENT", e.body_text()),
    };
    let filter = match alert_filter(&state, &session, &query) {
        Ok(f) => f,
        Err(refused) => return refused.into_response(),
    };
    // A browser reconnecting by itself sends the header; a page making a new connection passes
    // its last id in the query.
    let last_event_id = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or(query.last_event_id.clone())
        .filter(|id| !id.is_empty());
    let stream = live_events(
        state,
        session.token.clone(),
        session.identity.clone(),
        filter,
        last_event_id,
    );
    sse::Sse::new(stream)
        .keep_alive(sse::KeepAlive::default())
        .into_response()
}

pub(super) fn live_events(
    state: AppState,
    token: String,
    identity: Arc<Identity>,
    filter: AlertFilter,
    last_event_id: Option<String>,
) -> impl Stream<Item = Result<sse::Event, Infallible>> {
    let (tx, rx) = mpsc::channel::<sse::Event>(256);
    // Subscribed before the first answer is read, so that nothing falls between the two.
    let mut changes = state.games.subscribe();
    tokio::spawn(async move {
        let mut identity = identity;
        let after = last_event_id
            .as_deref()
            .and_then(|id| state.games.key_of_event_id(id));
        let (alerts, mut seen) =
            state
                .games
                .alerts_since(&filter, &|t| identity.may_read(t), after.as_ref());
        let boards = state.games.boards(&filter);
        let hello = json!({
            "game_log": state.games.status(),
            "replayed_from": after.as_ref().map(|_| last_event_id.clone()),
        });
        let mut first = vec![sse::Event::default().event("hello").data(hello.to_string())];
        first.extend(
            boards
                .iter()
                .filter(|b| identity.may_read(&b.tournament_id))
                .map(board_event),
        );
        first.extend(alerts.iter().map(alert_event));
        // What follows is news (the page highlights it).
        first.push(sse::Event::default().event("ready").data(""));
        for event in first {
            if tx.send(event).await.is_err() {
                return;
            }
        }
        // The stream ends when the session does: the page reconnects, is refused and logs in.
        let expires = identity.expires_unix_ms.map(|at| {
            let left = (at - now_unix_ms()).max(0) as u64;
            tokio::time::Instant::now() + Duration::from_millis(left)
        });
        let session_over = async {
            match expires {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending::<()>().await,
            }
        };
        tokio::pin!(session_over);
        // A role taken away or a session ended shows within the identity cache's lifetime.
        let mut recheck = tokio::time::interval_at(
            tokio::time::Instant::now() + auth::IDENTITY_TTL,
            auth::IDENTITY_TTL,
        );
        loop {
            let change = tokio::select! {
                change = changes.recv() => change,
                _ = tx.closed() => return,
                _ = &mut session_over => {
                    let _ = tx.send(sse::Event::default().event("session-expired").data("log in again")).await;
                    return;
                }
                _ = recheck.tick() => {
                    match state.sessions.identity(&token, now_unix_ms()).await {
                        Ok(fresh) => {
                            if filter.tournament.as_deref().is_some_and(|t| !fresh.may_read(t)) {
                                // The page reconnects and is told why it may not.
                                return;
                            }
                            identity = fresh;
                        }
                        Err(SessionError::Invalid(_)) => {
                            let _ = tx.send(sse::Event::default().event("session-expired").data("log in again")).await;
                            return;
                        }
                        // The game service is away: keep serving what this service knows.
                        Err(SessionError::Unavailable(_)) => {}
                    }
                    continue;
                }
            };
            let events: Vec<sse::Event> = match change {
                Ok(Change::Alert(alert)) => {
                    // An entry's alert changes are sent before its board change; one at `seen`
                    // itself may repeat what the first answer had (harmless: the page keys
                    // alerts by id and version), never miss anything.
                    if alert.stream_seq < seen
                        || !filter.matches(&alert)
                        || !identity.may_read(&alert.tournament_id)
                    {
                        continue;
                    }
                    vec![alert_event(&alert)]
                }
                Ok(Change::Game {
                    game_id,
                    stream_seq,
                }) => {
                    if stream_seq <= seen {
                        continue;
                    }
                    seen = stream_seq;
                    match state.games.board(&game_id) {
                        Some(board)
                            if filter.matches_board(&board)
                                && identity.may_read(&board.tournament_id) =>
                        {
                            vec![board_event(&board)]
                        }
                        _ => continue,
                    }
                }
                Err(RecvError::Lagged(_)) => {
                    // Changes were dropped: send again what changed since the last one handled
                    // (a repeat is harmless, the page keys alerts by id).
                    let after: AlertKey = (seen, String::new(), 0);
                    let (alerts, now) =
                        state
                            .games
                            .alerts_since(&filter, &|t| identity.may_read(t), Some(&after));
                    seen = now;
                    let mut events: Vec<sse::Event> = state
                        .games
                        .boards(&filter)
                        .iter()
                        .filter(|b| identity.may_read(&b.tournament_id))
                        .map(board_event)
                        .collect();
                    events.extend(alerts.iter().map(alert_event));
                    events
                }
                Err(RecvError::Closed) => return,
            };
            for event in events {
                if tx.send(event).await.is_err() {
                    return;
                }
            }
        }
    });
    futures::StreamExt::map(ReceiverStream::new(rx), Ok)
}

//! HTTP routes: PGN feeds, the live page and its update stream.

use std::{convert::Infallible, sync::Arc};

use axum::{
    Json, Router,
    extract::{Path, State},
    http::{StatusCode, header},
    response::{Html, IntoResponse, Response, sse},
    routing::get,
};
use futures::{Stream, StreamExt, stream};
use tokio_stream::wrappers::BroadcastStream;

use crate::projection::Projection;

type Shared = State<Arc<Projection>>;

pub fn router(projection: Arc<Projection>) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/healthz", get(|| async { "ok" }))
        .route("/api/games", get(all_games))
        .route("/games/{file}", get(game_pgn))
        .route("/tournaments/{tournament}/rounds/{file}", get(round_pgn))
        .route(
            "/tournaments/{tournament}/rounds/{round}/live",
            get(live_page),
        )
        .route(
            "/tournaments/{tournament}/rounds/{round}/updates",
            get(round_updates),
        )
        .with_state(projection)
}

fn not_found(what: String) -> Response {
    (StatusCode::NOT_FOUND, format!("{what}\n")).into_response()
}

fn pgn_response(body: String) -> Response {
    (
        [
            (
                header::CONTENT_TYPE,
                "application/x-chess-pgn; charset=utf-8",
            ),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// `{name}.pgn` → `name`.
fn strip_pgn(file: &str) -> Option<&str> {
    file.strip_suffix(".pgn").filter(|s| !s.is_empty())
}

async fn round_pgn(State(p): Shared, Path((tournament, file)): Path<(String, String)>) -> Response {
    let Some(round) = strip_pgn(&file).and_then(|r| r.parse::<u32>().ok()) else {
        return not_found(format!(
            "no such feed {file:?}: rounds are served as <round number>.pgn"
        ));
    };
    match p
        .pgn(|g| g.info().tournament_id == tournament && g.info().round == round)
        .await
    {
        Some(body) => pgn_response(body),
        None => not_found(format!("no games in round {round} of {tournament:?}")),
    }
}

async fn game_pgn(State(p): Shared, Path(file): Path<String>) -> Response {
    let Some(game_id) = strip_pgn(&file) else {
        return not_found(format!(
            "no such game file {file:?}: games are served as <game id>.pgn"
        ));
    };
    match p.pgn(|g| g.game_id() == game_id).await {
        Some(body) => pgn_response(body),
        None => not_found(format!("no game {game_id:?}")),
    }
}

async fn all_games(State(p): Shared) -> Response {
    Json(p.views(|_| true).await).into_response()
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

async fn index(State(p): Shared) -> Html<String> {
    let mut body = String::from(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>boardcast</title>\
         <style>body{font-family:system-ui,sans-serif;margin:2rem;}li{margin:.3rem 0}</style>\
         </head><body><h1>boardcast</h1>",
    );
    let rounds = p.rounds().await;
    if rounds.is_empty() {
        body.push_str("<p>No games yet.</p>");
    }
    for (tournament, list) in rounds {
        let t = escape(&tournament);
        body.push_str(&format!("<h2>{t}</h2><ul>"));
        for round in list {
            body.push_str(&format!(
                "<li>Round {round}: <a href=\"/tournaments/{t}/rounds/{round}/live\">live</a> · \
                 <a href=\"/tournaments/{t}/rounds/{round}.pgn\">PGN</a></li>"
            ));
        }
        body.push_str("</ul>");
    }
    body.push_str("</body></html>");
    Html(body)
}

async fn live_page(Path((tournament, round)): Path<(String, u32)>) -> Html<String> {
    Html(
        LIVE_PAGE
            .replace("{{TOURNAMENT}}", &escape(&tournament))
            .replace("{{ROUND}}", &round.to_string()),
    )
}

/// Server-sent events: every game of the round once, then each game again whenever it changes.
async fn round_updates(
    State(p): Shared,
    Path((tournament, round)): Path<(String, u32)>,
) -> sse::Sse<impl Stream<Item = Result<sse::Event, Infallible>>> {
    let changes = BroadcastStream::new(p.subscribe());
    let in_round = {
        let tournament = tournament.clone();
        move |g: &boardcast_game::Game| {
            g.info().tournament_id == tournament && g.info().round == round
        }
    };
    let initial = p.views(in_round.clone()).await;
    let first = stream::iter(initial).map(|v| Ok(game_event(&v)));
    let updates = changes.filter_map(move |change| {
        let p = p.clone();
        let in_round = in_round.clone();
        async move {
            // A lagging receiver skipped some ids; the next change of each game catches up.
            let game_id = change.ok()?;
            let mut views = p.views(|g| g.game_id() == game_id && in_round(g)).await;
            views.pop().map(|v| Ok(game_event(&v)))
        }
    });
    sse::Sse::new(first.chain(updates)).keep_alive(sse::KeepAlive::default())
}

fn game_event(view: &crate::projection::GameView) -> sse::Event {
    sse::Event::default()
        .event("game")
        .json_data(view)
        .unwrap_or_else(|_| sse::Event::default().comment("unserialisable game view"))
}

const LIVE_PAGE: &str = include_str!("live.html");

//! HTTP routes: PGN and JSON feeds (conditional and compressed; the round's also as lichess
//! takes it), the hall's monitor pages, and live updates over server-sent events and WebSocket.
//!
//! Every route reads the released feeds only; nothing here can see what the delay holds back.
//! One file, long as it is, so that every public route can be checked against that in one read.

use std::{
    collections::{HashMap, VecDeque},
    convert::Infallible,
    sync::{Arc, Mutex},
    time::{Duration, UNIX_EPOCH},
};

use axum::{
    Json, Router,
    extract::{
        Path, Query, State,
        ws::{Message, WebSocket, WebSocketUpgrade},
    },
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{Html, IntoResponse, Response, sse},
    routing::get,
};
use boardcast_feeds::{Body, LichessPusher, RoundKey, national_line, parse_board_range};
use boardcast_rules::notation::Language;
use futures::{Stream, StreamExt as _, stream};
use tokio::sync::broadcast::{self, error::RecvError};
use tower_http::compression::CompressionLayer;

use crate::{
    projection::{LiveEvent, Projection, now_unix_ms},
    push::PushStatuses,
};

#[derive(Clone)]
pub struct App {
    pub projection: Arc<Projection>,
    pub pushes: PushStatuses,
    /// Each polled round's games as lichess takes them, kept until a game changes.
    lichess: Arc<Mutex<HashMap<RoundKey, LichessPusher>>>,
    /// Names this run of this instance in the live cursors it gives (`<epoch>-<round version>`):
    /// round versions count this run's releases, so a cursor from another instance or an
    /// earlier run says nothing of what a viewer has, and that viewer is sent every game.
    pub epoch: Arc<str>,
}

impl App {
    pub fn new(projection: Arc<Projection>, pushes: PushStatuses) -> App {
        App {
            projection,
            pushes,
            lichess: Arc::default(),
            // 32 random bits: short, since every live event carries it.
            epoch: Arc::from(format!("{:08x}", rand::random::<u32>())),
        }
    }

    /// The live cursor of round version `version`.
    fn cursor(&self, version: u64) -> String {
        format!("{}-{version}", self.epoch)
    }

    /// The round version a cursor names, when this run gave it.
    fn version_of(&self, cursor: &str) -> Option<u64> {
        let (epoch, version) = cursor.trim().split_once('-')?;
        (epoch == &*self.epoch).then_some(())?;
        version.parse().ok()
    }
}

type Shared = State<App>;

pub fn router(app: App) -> Router {
    // Bodies that are fetched whole are compressed; live streams are not (a compressor holds
    // events back until its buffer fills).
    let documents = Router::new()
        .route("/", get(index))
        .route("/api/games", get(all_games))
        .route("/api/push", get(push_status))
        .route("/games/{file}", get(game_file))
        .route("/tournaments/{tournament}/rounds/{file}", get(round_file))
        .route(
            "/tournaments/{tournament}/rounds/{round}/lichess.pgn",
            get(round_for_lichess),
        )
        .route(
            "/tournaments/{tournament}/rounds/{round}/live",
            get(grid_page),
        )
        .route(
            "/tournaments/{tournament}/rounds/{round}/boards/{board}",
            get(board_page),
        )
        .route(
            "/tournaments/{tournament}/rounds/{round}/hall",
            get(hall_page),
        )
        .layer(CompressionLayer::new());
    Router::new()
        .merge(documents)
        .route("/healthz", get(|| async { "ok" }))
        .route("/static/monitor.js", get(monitor_script))
        .route("/readyz", get(ready))
        .route(
            "/tournaments/{tournament}/rounds/{round}/updates",
            get(round_updates),
        )
        .route(
            "/tournaments/{tournament}/rounds/{round}/ws",
            get(round_socket),
        )
        .route("/games/{game_id}/updates", get(game_updates))
        .with_state(app)
}

fn not_found(what: String) -> Response {
    (StatusCode::NOT_FOUND, format!("{what}\n")).into_response()
}

async fn ready(State(app): Shared) -> Response {
    if app.projection.is_ready() {
        "ready\n".into_response()
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "catching up with the game log\n",
        )
            .into_response()
    }
}

/// A body with its validators and how long a cache may keep it (`fresh_ms`: see
/// `Feeds::round_fresh_for_ms`); `304 Not Modified` when the poller already has it.
fn conditional(
    body: &Body,
    request: &HeaderMap,
    content_type: &'static str,
    fresh_ms: u64,
) -> Response {
    let etag = HeaderValue::from_str(&body.etag).ok();
    let last_modified = u64::try_from(body.last_modified_unix_ms)
        .ok()
        .map(|ms| httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_millis(ms)))
        .and_then(|d| HeaderValue::from_str(&d).ok());
    let matches = request
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|tag| {
            let tag = tag.trim();
            tag == "*" || tag.trim_start_matches("W/") == body.etag
        });
    let mut response = if matches {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        (
            [(header::CONTENT_TYPE, HeaderValue::from_static(content_type))],
            body.text.clone(),
        )
            .into_response()
    };
    let headers = response.headers_mut();
    let seconds = fresh_ms / 1000;
    let cache_control = if seconds == 0 {
        HeaderValue::from_static("no-cache")
    } else {
        HeaderValue::from_str(&format!("public, max-age={seconds}"))
            .unwrap_or(HeaderValue::from_static("no-cache"))
    };
    headers.insert(header::CACHE_CONTROL, cache_control);
    if let Some(etag) = etag {
        headers.insert(header::ETAG, etag);
    }
    if let Some(date) = last_modified {
        headers.insert(header::LAST_MODIFIED, date);
    }
    response
}

/// How long a cache may keep the round's feeds now: nothing while this instance is still
/// catching up with the log (it may be behind what is due).
fn fresh_for_ms(app: &App, feeds: &boardcast_feeds::Feeds, key: &RoundKey) -> u64 {
    if !app.projection.is_ready() {
        return 0;
    }
    feeds.round_fresh_for_ms(key, now_unix_ms())
}

const PGN: &str = "application/x-chess-pgn; charset=utf-8";
const JSON: &str = "application/json";

/// `/tournaments/{t}/rounds/{n}.pgn` (the round's games, for broadcast sites) or `{n}.json`.
async fn round_file(
    State(app): Shared,
    Path((tournament, file)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let parsed = file
        .rsplit_once('.')
        .and_then(|(n, ext)| Some((n.parse::<u32>().ok()?, ext)));
    let Some((round, ext)) = parsed.filter(|(_, ext)| matches!(*ext, "pgn" | "json")) else {
        return not_found(format!(
            "no such feed {file:?}: rounds are served as <round number>.pgn or .json"
        ));
    };
    let key = RoundKey {
        tournament_id: tournament,
        round,
    };
    let feeds = app.projection.read();
    let body = match ext {
        "pgn" => feeds.round_pgn(&key),
        _ => round_json(&feeds, &key),
    };
    let fresh_ms = fresh_for_ms(&app, &feeds, &key);
    drop(feeds);
    match body {
        Some(body) => conditional(
            &body,
            &headers,
            if ext == "pgn" { PGN } else { JSON },
            fresh_ms,
        ),
        None => not_found(format!(
            "no games in round {round} of {:?}",
            key.tournament_id
        )),
    }
}

#[derive(serde::Deserialize)]
struct LichessQuery {
    /// `FIRST-LAST`: the boards of one lichess round (at most 100).
    boards: Option<String>,
}

/// `/tournaments/{t}/rounds/{n}/lichess.pgn[?boards=FIRST-LAST]`: the round as a lichess
/// broadcast round polling it takes it (`boardcast_feeds::LichessPusher`: completed moves, at
/// most 100 games, clocks and time control as lichess reads them).
async fn round_for_lichess(
    State(app): Shared,
    Path((tournament, round)): Path<(String, u32)>,
    Query(query): Query<LichessQuery>,
    headers: HeaderMap,
) -> Response {
    let boards = match query.boards.as_deref().map(parse_board_range).transpose() {
        Ok(boards) => boards,
        Err(e) => return (StatusCode::BAD_REQUEST, format!("{e}\n")).into_response(),
    };
    let key = RoundKey {
        tournament_id: tournament,
        round,
    };
    let feeds = app.projection.read();
    let games = feeds.round_games_with_versions(&key);
    if games.is_empty() {
        return not_found(format!(
            "no games in round {round} of {:?}",
            key.tournament_id
        ));
    }
    let push = {
        let mut pushers = app.lichess.lock().unwrap_or_else(|e| e.into_inner());
        pushers
            .entry(key.clone())
            .or_default()
            .push(&games, boards.as_ref())
    };
    let fresh_ms = fresh_for_ms(&app, &feeds, &key);
    drop(feeds);
    if push.games == 0 {
        return not_found(format!(
            "no games on those boards in round {round} of {:?}",
            key.tournament_id
        ));
    }
    let body = Body::new(push.text, push.last_modified_unix_ms);
    conditional(&body, &headers, PGN, fresh_ms)
}

/// The round's shown games as one JSON document, in board order.
fn round_json(feeds: &boardcast_feeds::Feeds, key: &RoundKey) -> Option<Arc<Body>> {
    let games = feeds.round_json_since(key, 0);
    if games.is_empty() {
        return None;
    }
    let list: Vec<&str> = games.iter().map(|(_, _, json)| json.as_ref()).collect();
    // A team event's matches with their points; nothing for an individual one.
    let matches = feeds.round_matches(key);
    let matches = if matches.is_empty() {
        String::new()
    } else {
        format!(
            ",\"matches\":{}",
            serde_json::to_string(&matches).unwrap_or_else(|_| "[]".into())
        )
    };
    // The same bytes on every instance that shows the same (no instance's own counters).
    let text = format!(
        "{{\"tournament_id\":{},\"round\":{},\"delay_ms\":{}{matches},\"games\":[{}]}}",
        serde_json::Value::from(key.tournament_id.as_str()),
        key.round,
        feeds.delays().delay_ms(key),
        list.join(",")
    );
    let newest = feeds
        .round_games(key)
        .iter()
        .map(|g| g.updated_unix_ms)
        .max()
        .unwrap_or(0);
    Some(Arc::new(Body::new(text, newest)))
}

/// `/games/{id}.pgn` or `/games/{id}.json`.
async fn game_file(State(app): Shared, Path(file): Path<String>, headers: HeaderMap) -> Response {
    let Some((game_id, ext)) = file
        .rsplit_once('.')
        .filter(|(id, ext)| !id.is_empty() && matches!(*ext, "pgn" | "json"))
    else {
        return not_found(format!(
            "no such game file {file:?}: games are served as <game id>.pgn or .json"
        ));
    };
    let feeds = app.projection.read();
    let body = if ext == "pgn" {
        feeds.game_pgn(game_id)
    } else {
        feeds.game_json(game_id).map(|(_, json)| {
            let at = feeds.game(game_id).map_or(0, |g| g.updated_unix_ms);
            Arc::new(Body::new(json.to_string(), at))
        })
    };
    let fresh_ms = feeds
        .game_round(game_id)
        .map_or(0, |(key, _)| fresh_for_ms(&app, &feeds, key));
    drop(feeds);
    match body {
        Some(body) => conditional(
            &body,
            &headers,
            if ext == "pgn" { PGN } else { JSON },
            fresh_ms,
        ),
        None => not_found(format!("no game {game_id:?}")),
    }
}

async fn all_games(State(app): Shared) -> Response {
    let feeds = app.projection.read();
    let mut games = Vec::new();
    for key in feeds.rounds() {
        for (_, _, json) in feeds.round_json_since(key, 0) {
            games.push(json);
        }
    }
    drop(feeds);
    let text = format!(
        "[{}]",
        games
            .iter()
            .map(|j| j.as_ref())
            .collect::<Vec<_>>()
            .join(",")
    );
    ([(header::CONTENT_TYPE, JSON)], text).into_response()
}

async fn push_status(State(app): Shared) -> Response {
    let statuses = app.pushes.lock().unwrap_or_else(|e| e.into_inner()).clone();
    Json(statuses).into_response()
}

pub(crate) fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// The public face: each tournament by name with its place and dates, its rounds with their
/// date, state and links, and standings from the results shown (individual, and team in a team
/// event). Released state only, like every public page.
async fn index(State(app): Shared) -> Html<String> {
    let tournaments = app.projection.read().tournaments();
    let mut body = String::from(INDEX_HEAD);
    if tournaments.is_empty() {
        body.push_str("<p>No games yet.</p>");
    }
    let points = |p: f64| {
        let whole = p.trunc();
        match (whole as u64, p - whole > 0.0) {
            (0, true) => "½".to_owned(),
            (w, true) => format!("{w}½"),
            (w, false) => w.to_string(),
        }
    };
    for t in &tournaments {
        let id = escape(&t.tournament_id);
        let name = if t.name.is_empty() {
            id.clone()
        } else {
            escape(&t.name)
        };
        let dates = match (t.first_date.as_str(), t.last_date.as_str()) {
            ("", _) => String::new(),
            (first, last) if first == last => escape(first),
            (first, last) => format!("{} – {}", escape(first), escape(last)),
        };
        let place = [escape(&t.site), dates]
            .into_iter()
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(" · ");
        body.push_str(&format!(
            "<section class=\"tournament\" id=\"{id}\"><h2>{name}</h2><p class=\"place\">{place}</p>\
             <h3>Rounds</h3><ul class=\"rounds\">"
        ));
        for round in &t.rounds {
            let r = round.round;
            body.push_str(&format!(
                "<li data-round=\"{r}\"><strong>Round {r}</strong> <span class=\"date\">{}</span> \
                 <span class=\"state {state}\">{state}</span> <span class=\"count\">{} of {} \
                 games over</span><br><a href=\"/tournaments/{id}/rounds/{r}/live\">all boards</a> · \
                 <a href=\"/tournaments/{id}/rounds/{r}/hall?every=15\">hall</a> · \
                 <a href=\"/tournaments/{id}/rounds/{r}.pgn\">PGN</a> · \
                 <a href=\"/tournaments/{id}/rounds/{r}.json\">JSON</a></li>",
                escape(&round.date),
                round.finished,
                round.games,
                state = round.state(),
            ));
        }
        body.push_str("</ul>");
        if !t.team_standings.is_empty() {
            body.push_str(
                "<h3>Teams</h3><div class=\"table\"><table class=\"teams\"><thead><tr><th>#</th>\
                 <th>Team</th><th title=\"match points\">MP</th><th title=\"board points\">BP</th>\
                 <th title=\"matches over\">M</th></tr></thead><tbody>",
            );
            for (place, team) in t.team_standings.iter().enumerate() {
                body.push_str(&format!(
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    place + 1,
                    escape(&team.team),
                    team.match_points,
                    points(team.board_points),
                    team.matches
                ));
            }
            body.push_str("</tbody></table></div>");
        }
        if !t.standings.is_empty() {
            body.push_str(
                "<h3>Standings</h3><div class=\"table\"><table class=\"players\"><thead><tr>\
                 <th>#</th><th>Player</th><th>Rating</th><th>Pts</th><th title=\"games over\">G</th>\
                 </tr></thead><tbody>",
            );
            for (place, player) in t.standings.iter().enumerate() {
                let title = if player.title.is_empty() {
                    String::new()
                } else {
                    format!("<span class=\"title\">{}</span> ", escape(&player.title))
                };
                let fed = if player.federation.is_empty() {
                    String::new()
                } else {
                    format!(" <span class=\"fed\">{}</span>", escape(&player.federation))
                };
                let rating = if player.rating > 0 {
                    player.rating.to_string()
                } else {
                    String::new()
                };
                body.push_str(&format!(
                    "<tr><td>{}</td><td>{title}{}{fed}</td><td>{rating}</td><td>{}</td><td>{}</td></tr>",
                    place + 1,
                    escape(&player.name),
                    points(player.points),
                    player.games
                ));
            }
            body.push_str("</tbody></table></div>");
        }
        body.push_str("</section>");
    }
    body.push_str("</main></body></html>");
    Html(body)
}

/// The index's head and style: one column on a phone, readable without zooming.
const INDEX_HEAD: &str = "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
    <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>boardcast</title>\
    <style>body{font-family:system-ui,sans-serif;margin:0;background:#f4f4f0;color:#222}\
    main{max-width:60rem;margin:0 auto;padding:1rem}h1{font-size:1.4rem;margin:.2rem 0 1rem}\
    .tournament{background:#fff;border-radius:8px;padding:.8rem 1rem;margin:0 0 1rem;\
    box-shadow:0 1px 3px #0002}h2{font-size:1.25rem;margin:.2rem 0}.place{color:#555;margin:0 0 .5rem}\
    h3{font-size:1rem;margin:.8rem 0 .3rem}.rounds{list-style:none;padding:0;margin:0}\
    .rounds li{padding:.4rem 0;border-top:1px solid #eee;line-height:1.6}.date,.count{color:#666}\
    .state{font-size:.8rem;padding:.05rem .4rem;border-radius:1rem;background:#eee}\
    .state.playing{background:#dfe}.table{overflow-x:auto}table{border-collapse:collapse;width:100%}\
    th,td{text-align:left;padding:.3rem .3rem;border-top:1px solid #eee;white-space:nowrap}\
    td:nth-child(2){white-space:normal;width:100%}\
    td:nth-child(n+3),th:nth-child(n+3){text-align:right}.title{color:#a40;font-weight:600}\
    .fed{color:#666;font-size:.85em}a{color:#05c}</style></head><body><main><h1>boardcast</h1>";

const GRID_PAGE: &str = include_str!("live.html");
const MONITOR_SCRIPT: &str = include_str!("monitor.js");

async fn monitor_script() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        MONITOR_SCRIPT,
    )
        .into_response()
}
const BOARD_PAGE: &str = include_str!("board.html");

fn page(template: &str, tournament: &str, round: u32, board: Option<u32>) -> Html<String> {
    Html(
        template
            .replace("{{TOURNAMENT}}", &escape(tournament))
            .replace("{{ROUND}}", &round.to_string())
            .replace(
                "{{BOARD}}",
                &board.map_or_else(|| "null".to_owned(), |b| b.to_string()),
            ),
    )
}

async fn grid_page(Path((tournament, round)): Path<(String, u32)>) -> Html<String> {
    page(GRID_PAGE, &tournament, round, None)
}

async fn board_page(Path((tournament, round, board)): Path<(String, u32, u32)>) -> Html<String> {
    page(BOARD_PAGE, &tournament, round, Some(board))
}

async fn hall_page(Path((tournament, round)): Path<(String, u32)>) -> Html<String> {
    page(BOARD_PAGE, &tournament, round, None)
}

/// Options of a live connection.
#[derive(Debug, serde::Deserialize, Default)]
pub struct LiveQuery {
    /// Resume after this cursor (as `Last-Event-ID`).
    since: Option<String>,
    /// Moves in these piece letters (ISO 639-1 code, e.g. `de`).
    lang: Option<String>,
}

/// One item of a live connection; `cursor` is the round's version at the change, as the client
/// gives it back to resume.
enum LiveItem {
    /// The round's settings, first on every connection.
    Round(String),
    /// A game's view: on connecting, after falling behind, and when a change cannot be sent as
    /// a delta.
    Game { cursor: String, json: String },
    /// What changed in a game since its previous version (`boardcast_feeds::GameDelta`).
    Delta { cursor: String, json: Arc<str> },
}

fn language(code: Option<&str>) -> Option<Language> {
    let code = code?;
    Language::ALL
        .into_iter()
        .find(|l| l.code() == code)
        .filter(|l| *l != Language::English)
}

/// The live items of a round (or one game of it) after version `since`: what changed meanwhile
/// first, then every update as it is released. A connection that falls behind is sent the
/// games that changed since the last it got, so it never misses a game's latest state.
fn live_items(
    app: App,
    key: RoundKey,
    updates: broadcast::Receiver<LiveEvent>,
    only_game: Option<String>,
    since: u64,
    lang: Option<Language>,
) -> impl Stream<Item = LiveItem> + Send + 'static {
    struct Cursor {
        app: App,
        key: RoundKey,
        only_game: Option<String>,
        lang: Option<Language>,
        /// Everything up to this version has been sent.
        sent: u64,
        /// The newest version of an update passed on: after a lag, the catch-up starts from
        /// the version before it (a release gives several games the same version).
        delivered: u64,
        queue: VecDeque<LiveItem>,
        updates: broadcast::Receiver<LiveEvent>,
        started: bool,
    }
    impl Cursor {
        /// The round's event: its delay and the service's clock, which the pages count the
        /// clocks by; sent first, and again when the delay changes.
        fn round_item(&self) -> LiveItem {
            let feeds = self.app.projection.read();
            let delay_ms = feeds.delays().delay_ms(&self.key);
            LiveItem::Round(
                serde_json::json!({
                    "tournament_id": self.key.tournament_id,
                    "round": self.key.round,
                    "delay_ms": delay_ms,
                    "release_step_ms": boardcast_feeds::release_step_ms(delay_ms),
                    "server_now_unix_ms": now_unix_ms(),
                })
                .to_string(),
            )
        }

        /// Queues the games changed after `self.sent`, as they are now, in the order they
        /// changed: a connection cut in between resumes from the last cursor it got without
        /// passing over a game it did not.
        fn catch_up(&mut self) {
            let feeds = self.app.projection.read();
            let version = feeds.round_version(&self.key);
            let mut changed = feeds.round_json_since(&self.key, self.sent);
            changed.sort_by_key(|(_, changed_at, _)| *changed_at);
            for (game_id, game_version, json) in changed {
                let item = self.game_item(&feeds, game_id, game_version, &json);
                if let Some(item) = item {
                    self.queue.push_back(item);
                }
            }
            self.sent = self.sent.max(version);
        }

        fn game_item(
            &self,
            feeds: &boardcast_feeds::Feeds,
            game_id: &str,
            version: u64,
            json: &str,
        ) -> Option<LiveItem> {
            if self.only_game.as_deref().is_some_and(|g| g != game_id) {
                return None;
            }
            // With other piece letters, the game as it is now, whole (its moves rewritten from
            // the current game: an older update's other fields would not match them). The
            // cursor stays the update's: a later one may still be queued, and a connection
            // resuming after this must not pass over it.
            let json = match self.lang {
                Some(lang) => {
                    let (_, now) = feeds.game_json(game_id)?;
                    let mut value: serde_json::Value = serde_json::from_str(&now).ok()?;
                    let (moves, provisional) = national_line(feeds.game(game_id)?, lang);
                    value["moves"] = serde_json::json!(moves);
                    value["provisional"] = serde_json::json!(provisional);
                    value.to_string()
                }
                None => json.to_owned(),
            };
            Some(LiveItem::Game {
                cursor: self.app.cursor(version),
                json,
            })
        }
    }
    // A version past any this service gave (from another instance, or a state file started
    // afresh) says nothing of what the viewer has: everything is sent.
    let since = if since > app.projection.read().round_version(&key) {
        0
    } else {
        since
    };
    let cursor = Cursor {
        app,
        key,
        only_game,
        lang,
        sent: since,
        delivered: since,
        queue: VecDeque::new(),
        updates,
        started: false,
    };
    stream::unfold(cursor, |mut cursor| async move {
        if !cursor.started {
            cursor.started = true;
            let round = cursor.round_item();
            cursor.catch_up();
            return Some((round, cursor));
        }
        loop {
            if let Some(item) = cursor.queue.pop_front() {
                return Some((item, cursor));
            }
            match cursor.updates.recv().await {
                Ok(LiveEvent::DelayChanged) => {
                    let round = cursor.round_item();
                    cursor.queue.push_back(round);
                }
                Ok(LiveEvent::Game(update)) if update.version > cursor.sent => {
                    let item = match (&update.delta, cursor.lang) {
                        // Moves in other piece letters are sent whole: a delta carries SAN.
                        (Some(delta), None)
                            if cursor
                                .only_game
                                .as_deref()
                                .is_none_or(|g| g == update.game_id) =>
                        {
                            Some(LiveItem::Delta {
                                cursor: cursor.app.cursor(update.version),
                                json: delta.clone(),
                            })
                        }
                        _ => {
                            let feeds = cursor.app.projection.read();
                            cursor.game_item(&feeds, &update.game_id, update.version, &update.json)
                        }
                    };
                    if let Some(item) = item {
                        cursor.queue.push_back(item);
                    }
                    cursor.delivered = cursor.delivered.max(update.version);
                }
                // Already sent with the catch-up.
                Ok(_) => {}
                Err(RecvError::Lagged(_)) => {
                    // What was passed over may have been a change of the delay: told again.
                    let round = cursor.round_item();
                    cursor.queue.push_back(round);
                    cursor.sent = cursor.sent.max(cursor.delivered.saturating_sub(1));
                    cursor.catch_up();
                }
                Err(RecvError::Closed) => return None,
            }
        }
    })
}

/// The round version a resuming client has everything of (`Last-Event-ID`, else `?since=`); 0
/// (send every game) for a cursor this run of this instance did not give.
fn since_of(app: &App, query: &LiveQuery, headers: &HeaderMap) -> u64 {
    let cursor = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .or(query.since.as_deref());
    resumed_after(app, cursor)
}

/// The round version before the cursor's: one release changes several games under one version,
/// and a connection cut among them has some and not others, so they are all sent again.
fn resumed_after(app: &App, cursor: Option<&str>) -> u64 {
    cursor
        .and_then(|cursor| app.version_of(cursor))
        .map_or(0, |version| version.saturating_sub(1))
}

fn sse_of(
    items: impl Stream<Item = LiveItem> + Send + 'static,
) -> sse::Sse<impl Stream<Item = Result<sse::Event, Infallible>>> {
    let events = items.map(|item| {
        Ok(match item {
            LiveItem::Round(json) => sse::Event::default().event("round").data(json),
            LiveItem::Game { cursor, json } => {
                sse::Event::default().event("game").id(cursor).data(json)
            }
            // The most frequent event goes unnamed (`message`): its name would be a tenth of
            // every update's bytes.
            LiveItem::Delta { cursor, json } => sse::Event::default().id(cursor).data(&*json),
        })
    });
    sse::Sse::new(events).keep_alive(sse::KeepAlive::default())
}

/// Server-sent events of a round: its settings, the games changed since the client's last
/// event (`Last-Event-ID` or `?since=`; all of them on a first connection), then each update.
async fn round_updates(
    State(app): Shared,
    Path((tournament, round)): Path<(String, u32)>,
    Query(query): Query<LiveQuery>,
    headers: HeaderMap,
) -> Response {
    let key = RoundKey {
        tournament_id: tournament,
        round,
    };
    let Some(updates) = app.projection.subscribe(&key) else {
        return no_round(&key);
    };
    let since = since_of(&app, &query, &headers);
    let lang = language(query.lang.as_deref());
    sse_of(live_items(app, key, updates, None, since, lang)).into_response()
}

/// A round nothing of which is shown (yet): like one that does not exist, and nothing is kept
/// for it. Pages opened before the round starts ask again.
fn no_round(key: &RoundKey) -> Response {
    not_found(format!(
        "no round {} of {:?} is shown (yet)",
        key.round, key.tournament_id
    ))
}

/// Server-sent events of one game.
async fn game_updates(
    State(app): Shared,
    Path(game_id): Path<String>,
    Query(query): Query<LiveQuery>,
    headers: HeaderMap,
) -> Response {
    let key = app
        .projection
        .read()
        .game_round(&game_id)
        .map(|(key, _)| key.clone());
    let Some((key, updates)) = key.and_then(|key| {
        let updates = app.projection.subscribe(&key)?;
        Some((key, updates))
    }) else {
        return not_found(format!("no game {game_id:?}"));
    };
    let since = since_of(&app, &query, &headers);
    let lang = language(query.lang.as_deref());
    sse_of(live_items(app, key, updates, Some(game_id), since, lang)).into_response()
}

/// The same live items over WebSocket, one JSON text message each:
/// `{"type":"round",...}` first, then `{"type":"game","cursor":C,"game":{...}}` (whole) or
/// `{"type":"delta","cursor":C,"delta":{...}}`; `?since=C` resumes.
async fn round_socket(
    State(app): Shared,
    Path((tournament, round)): Path<(String, u32)>,
    Query(query): Query<LiveQuery>,
    upgrade: WebSocketUpgrade,
) -> Response {
    let key = RoundKey {
        tournament_id: tournament,
        round,
    };
    let Some(updates) = app.projection.subscribe(&key) else {
        return no_round(&key);
    };
    let since = resumed_after(&app, query.since.as_deref());
    let lang = language(query.lang.as_deref());
    upgrade
        // Viewers send nothing but pings and a close: a big message is refused, not read.
        .max_message_size(VIEWER_MESSAGE_LIMIT)
        .max_frame_size(VIEWER_MESSAGE_LIMIT)
        .on_upgrade(move |socket| {
            serve_socket(socket, live_items(app, key, updates, None, since, lang))
        })
}

/// The largest WebSocket message a viewer may send.
const VIEWER_MESSAGE_LIMIT: usize = 4096;

async fn serve_socket(mut socket: WebSocket, items: impl Stream<Item = LiveItem> + Send) {
    let mut items = std::pin::pin!(items);
    loop {
        tokio::select! {
            item = items.next() => {
                let Some(item) = item else { break };
                let text = match item {
                    LiveItem::Round(json) => format!("{{\"type\":\"round\",\"round\":{json}}}"),
                    LiveItem::Game { cursor, json } => {
                        format!("{{\"type\":\"game\",\"cursor\":\"{cursor}\",\"game\":{json}}}")
                    }
                    LiveItem::Delta { cursor, json } => {
                        format!("{{\"type\":\"delta\",\"cursor\":\"{cursor}\",\"delta\":{json}}}")
                    }
                };
                if socket.send(Message::Text(text.into())).await.is_err() {
                    break;
                }
            }
            incoming = socket.recv() => match incoming {
                // Nothing is taken from viewers; pings are answered by the library.
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                Some(Ok(_)) => {}
            }
        }
    }
}

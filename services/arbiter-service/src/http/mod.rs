//! HTTP routes: login and logout, the dashboard's pages and JSON API, the live alert queue
//! (server-sent events), and the rulings forwarded to the game service.
//!
//! Nothing here changes a game: a ruling is forwarded as the arbiter's own `Act` call and the
//! pages show its effect when the log does.

use std::{collections::HashMap, sync::Arc, time::Duration};

use axum::{
    Form, Json, Router,
    body::{Body, Bytes},
    extract::{FromRequest, FromRequestParts, Request, State},
    http::{HeaderMap, HeaderValue, Method, StatusCode, header, request::Parts},
    middleware::{self, Next},
    response::{Html, IntoResponse, Redirect, Response},
    routing::{get, post},
};
use boardcast_access::{Identity, Operation};
use boardcast_kit::now_unix_ms;
use serde::Serialize;
use serde_json::json;

mod api;
mod login;
mod pages;
mod rulings;

use api::{
    api_alerts, api_at, api_game, api_me, api_request_ids, api_round, api_rounds, api_timeline,
    events,
};
use login::{login, login_page, logout};
use pages::{css, game_page, healthz, index_page, js, readyz, round_page};
use rulings::{api_act, api_assign, api_assignments, api_claim};

use crate::{
    auth::{self, LoginThrottle, Refused, SessionError, Sessions},
    follow::Games,
    upstream::{GameApi, UpstreamError},
};

const DASHBOARD_HTML: &str = include_str!("../dashboard.html");
const LOGIN_HTML: &str = include_str!("../login.html");
const DASHBOARD_JS: &str = include_str!("../dashboard.js");
const DASHBOARD_CSS: &str = include_str!("../dashboard.css");

/// Request ids handed to a page with it, for the forms it shows before asking for more.
const REQUEST_IDS_PER_PAGE: usize = 24;
/// Largest form body read to find its CSRF field.
const FORM_LIMIT: usize = 64 * 1024;

/// How the HTTP side is set up.
#[derive(Clone, Debug)]
pub struct HttpConfig {
    /// The browser reaches the dashboard over HTTPS (its own TLS, or a proxy's): cookies are
    /// `Secure`, never sent over plain HTTP, where anyone on the path could read them.
    pub secure_cookies: bool,
    /// Origins besides the request's own host that may post (a reverse proxy's public origin).
    pub allowed_origins: Vec<String>,
    /// Reverse proxies in front, whose X-Forwarded-For names the client.
    pub proxies: Vec<std::net::IpAddr>,
    /// How long a ruling's answer waits for the log to show what it recorded.
    pub act_wait: Duration,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            secure_cookies: false,
            allowed_origins: Vec::new(),
            proxies: Vec::new(),
            act_wait: Duration::from_secs(5),
        }
    }
}

pub struct Inner {
    pub games: Arc<Games>,
    pub api: Arc<GameApi>,
    pub sessions: Sessions,
    pub throttle: LoginThrottle,
    pub config: HttpConfig,
}

pub type AppState = Arc<Inner>;

pub fn state(
    games: Arc<Games>,
    api: Arc<GameApi>,
    throttle: LoginThrottle,
    config: HttpConfig,
) -> AppState {
    Arc::new(Inner {
        games,
        sessions: Sessions::new(api.clone()),
        api,
        throttle,
        config,
    })
}

pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/login", get(login_page).post(login))
        .route("/logout", post(logout))
        .route("/", get(index_page))
        .route("/tournaments/{tournament}/rounds/{round}", get(round_page))
        .route("/games/{game_id}", get(game_page))
        .route("/assets/dashboard.css", get(css))
        .route("/assets/dashboard.js", get(js))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/events", get(events))
        .route("/api/me", get(api_me))
        .route("/api/rounds", get(api_rounds))
        .route(
            "/api/tournaments/{tournament}/rounds/{round}",
            get(api_round),
        )
        .route("/api/alerts", get(api_alerts))
        .route("/api/request-ids", get(api_request_ids))
        .route("/api/games/{game_id}", get(api_game))
        .route("/api/games/{game_id}/timeline", get(api_timeline))
        .route("/api/games/{game_id}/at/{game_seq}", get(api_at))
        .route("/api/games/{game_id}/act", post(api_act))
        .route("/api/games/{game_id}/claim", post(api_claim))
        .route(
            "/api/tournaments/{tournament}/assignments",
            get(api_assignments).post(api_assign),
        )
        .layer(middleware::from_fn_with_state(state.clone(), guard_posts))
        .layer(middleware::from_fn(security_headers))
        .with_state(state)
}

// ---------------------------------------------------------------------------------------------
// Small helpers.

/// A random UUID v4 (RFC 9562), for request ids.
pub fn new_request_id() -> String {
    let mut b: [u8; 16] = rand::random();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// Whether `text` is a UUID in its usual text form (request ids must be).
pub fn is_uuid(text: &str) -> bool {
    text.len() == 36
        && text.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        })
}

pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// Requests answered with JSON (API calls, the event stream) rather than pages.
fn is_api_path(path: &str) -> bool {
    path.starts_with("/api/") || path == "/events"
}

fn wants_json(parts_path: &str, headers: &HeaderMap) -> bool {
    is_api_path(parts_path)
        || headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json"))
}

/// A refusal of an API call, made into its JSON answer at the end (small to pass around).
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
}

impl ApiError {
    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        json_error(self.status, self.code, self.message)
    }
}

fn json_error(status: StatusCode, code: &str, message: impl Into<String>) -> Response {
    (
        status,
        [(header::CACHE_CONTROL, "no-store")],
        Json(json!({ "error": message.into(), "code": code })),
    )
        .into_response()
}

fn no_store<T: Serialize>(value: &T) -> Response {
    ([(header::CACHE_CONTROL, "no-store")], Json(value)).into_response()
}

/// A plain page with a message, for refusals and errors outside the dashboard.
fn message_page(status: StatusCode, title: &str, message: &str) -> Response {
    let body = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{t} · boardcast arbiters</title><link rel=\"stylesheet\" href=\"/assets/dashboard.css\">\
         </head><body class=\"message-page\"><main><h1>{t}</h1>\
         <p id=\"message\" data-testid=\"message\" role=\"alert\">{m}</p>\
         <p><a class=\"button\" href=\"/\">Back to the dashboard</a></p></main></body></html>",
        t = escape(title),
        m = escape(message)
    );
    (status, [(header::CACHE_CONTROL, "no-store")], Html(body)).into_response()
}

fn refusal(status: StatusCode, json: bool, refused: &Refused) -> Response {
    if json {
        json_error(status, "REFUSED", refused.to_string())
    } else {
        message_page(status, "Refused", &refused.to_string())
    }
}

/// The HTTP status for a game service refusal.
fn status_of(error: &UpstreamError) -> StatusCode {
    use tonic::Code;
    match error.code {
        Code::InvalidArgument | Code::OutOfRange => StatusCode::UNPROCESSABLE_ENTITY,
        Code::NotFound => StatusCode::NOT_FOUND,
        Code::AlreadyExists | Code::FailedPrecondition | Code::Aborted => StatusCode::CONFLICT,
        Code::PermissionDenied => StatusCode::FORBIDDEN,
        Code::Unauthenticated => StatusCode::UNAUTHORIZED,
        Code::ResourceExhausted => StatusCode::TOO_MANY_REQUESTS,
        Code::DeadlineExceeded => StatusCode::GATEWAY_TIMEOUT,
        Code::Unavailable | Code::Cancelled | Code::Unknown => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::BAD_GATEWAY,
    }
}

/// A JSON body, or why `what` could not be read.
fn read_json<T: serde::de::DeserializeOwned>(body: &[u8], what: &str) -> Result<T, String> {
    serde_json::from_slice(body).map_err(|e| format!("{what} could not be read: {e}"))
}

/// The form's request id (a UUID the service handed out), or what is wrong with it.
fn form_request_id(text: &str) -> Result<String, String> {
    let request_id = text.trim().to_ascii_lowercase();
    if is_uuid(&request_id) {
        Ok(request_id)
    } else {
        Err("the form has no valid request id; reload the page".to_owned())
    }
}

/// 400 INVALID_ARGUMENT with the message.
fn bad_request(message: String) -> Response {
    json_error(StatusCode::BAD_REQUEST, "INVALID_ARGUMENT", message)
}

fn upstream_error(error: &UpstreamError) -> Response {
    let message = if error.outcome_unknown() {
        format!(
            "{} — the outcome is unknown: send the same form again (it carries the same request \
             id, so nothing is recorded twice)",
            error.message
        )
    } else {
        error.message.clone()
    };
    json_error(status_of(error), error.code_name(), message)
}

// ---------------------------------------------------------------------------------------------
// Middleware: security headers, and the checks every state-changing request passes first.

async fn security_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    for (name, value) in [
        (
            "content-security-policy",
            "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; \
             connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
        ),
        ("x-content-type-options", "nosniff"),
        ("x-frame-options", "DENY"),
        ("referrer-policy", "same-origin"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

/// Every POST: the Origin must be this site's; and but for /login the request must carry its
/// session's CSRF value (header `X-CSRF-Token`, or the form field `csrf`). A refusal forwards
/// nothing.
async fn guard_posts(State(state): State<AppState>, request: Request, next: Next) -> Response {
    if matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    ) {
        return next.run(request).await;
    }
    let path = request.uri().path().to_owned();
    let json = wants_json(&path, request.headers());
    let authority = request.uri().authority().map(|a| a.as_str().to_owned());
    if let Err(refused) = auth::check_origin(
        request.headers(),
        authority.as_deref(),
        &state.config.allowed_origins,
    ) {
        tracing::warn!(%path, "refused a request: {refused}");
        return refusal(StatusCode::FORBIDDEN, json, &refused);
    }
    if path == "/login" {
        return next.run(request).await;
    }
    let token = auth::session_token(request.headers());
    let header_value = request
        .headers()
        .get(auth::CSRF_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let is_form = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
    let (request, provided) = match header_value {
        Some(value) => (request, Some(value)),
        None if is_form => {
            // The form's body is read to find its field, then handed on unchanged.
            let (parts, body) = request.into_parts();
            let bytes = match axum::body::to_bytes(body, FORM_LIMIT).await {
                Ok(bytes) => bytes,
                Err(_) => {
                    return message_page(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        "Refused",
                        "the form is too large",
                    );
                }
            };
            let field = form_field(&bytes, auth::CSRF_FIELD).await;
            (Request::from_parts(parts, Body::from(bytes)), field)
        }
        None => (request, None),
    };
    if let Err(refused) = auth::check_csrf(token.as_deref(), provided.as_deref()) {
        tracing::warn!(%path, "refused a request: {refused}");
        let status = if refused == Refused::NoSession {
            StatusCode::UNAUTHORIZED
        } else {
            StatusCode::FORBIDDEN
        };
        return refusal(status, json, &refused);
    }
    next.run(request).await
}

/// A field of an urlencoded form body.
async fn form_field(body: &Bytes, name: &str) -> Option<String> {
    let request = Request::builder()
        .method(Method::POST)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from(body.clone()))
        .ok()?;
    let Form(fields) = Form::<HashMap<String, String>>::from_request(request, &())
        .await
        .ok()?;
    fields.get(name).cloned()
}

// ---------------------------------------------------------------------------------------------
// Sessions.

/// A signed-in user: the session token, its CSRF value and who it is. Pages without a valid
/// session redirect to /login; API calls answer 401.
pub struct Session {
    pub token: String,
    pub csrf: String,
    pub identity: Arc<Identity>,
}

impl FromRequestParts<AppState> for Session {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let path = parts.uri.path().to_owned();
        let api = is_api_path(&path);
        let not_signed_in = |message: String| -> Response {
            if api {
                let mut response = json_error(StatusCode::UNAUTHORIZED, "UNAUTHENTICATED", message);
                response.headers_mut().insert(
                    header::SET_COOKIE,
                    HeaderValue::from_str(&auth::clear_cookie(state.config.secure_cookies))
                        .unwrap_or_else(|_| HeaderValue::from_static("")),
                );
                response
            } else {
                let next = parts
                    .uri
                    .path_and_query()
                    .map(|p| p.as_str().to_owned())
                    .unwrap_or_else(|| "/".to_owned());
                let location = format!("/login?next={}", percent_encode(&next));
                let mut response = Redirect::to(&location).into_response();
                if let Ok(cookie) =
                    HeaderValue::from_str(&auth::clear_cookie(state.config.secure_cookies))
                {
                    response.headers_mut().insert(header::SET_COOKIE, cookie);
                }
                response
            }
        };
        let Some(token) = auth::session_token(&parts.headers) else {
            return Err(not_signed_in("not signed in; log in first".to_owned()));
        };
        match state.sessions.identity(&token, now_unix_ms()).await {
            Ok(identity) => Ok(Session {
                csrf: auth::csrf_of(&token).unwrap_or_default(),
                token,
                identity,
            }),
            Err(SessionError::Invalid(message)) => Err(not_signed_in(message)),
            Err(e @ SessionError::Unavailable(_)) => Err(if api {
                json_error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "UNAVAILABLE",
                    e.to_string(),
                )
            } else {
                message_page(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "Unavailable",
                    &e.to_string(),
                )
            }),
        }
    }
}

/// Why `session` may not read `tournament`, when it may not.
fn not_readable(session: &Session, tournament: &str) -> Option<String> {
    session
        .identity
        .may(Operation::Read { tournament })
        .err()
        .map(|denied| denied.to_string())
}

/// `text` for a URL's query, every byte but the unreserved ones and `/` escaped.
fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_are_version_4_uuids() {
        let id = new_request_id();
        assert!(is_uuid(&id));
        assert_eq!(&id[14..15], "4", "version 4: {id}");
        assert!(
            matches!(&id[19..20], "8" | "9" | "a" | "b"),
            "RFC variant: {id}"
        );
    }
}

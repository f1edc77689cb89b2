//! HTTP routes: login and logout, the dashboard's pages and JSON API, the live alert queue
//! (server-sent events), and the rulings forwarded to the game service.
//!
//! Nothing here changes a game: a ruling is forwarded as the arbiter's own `Act` call and the
//! pages show its effect when the log does.

use std::{collections::HashMap, convert::Infallible, net::SocketAddr, sync::Arc, time::Duration};

use axum::{
    Form, Json, Router,
    body::{Body, Bytes},
    extract::{ConnectInfo, FromRequest, FromRequestParts, Path, Query, Request, State},
    http::{HeaderMap, HeaderValue, Method, StatusCode, header, request::Parts},
    middleware::{self, Next},
    response::{Html, IntoResponse, Redirect, Response, sse},
    routing::{get, post},
};
use boardcast_access::{Identity, Operation};
use boardcast_game::events::{
    ActRequest, AdjustClocks, AlertAcknowledgement, Annotation, ArbiterAction, ClaimKind,
    ClaimRuling, DeclareResult, DrawAgreed, EnterMove, EvaluateClaimRequest, GameResult,
    PenaltyDecision, RestorePosition, Side, SideAction, arbiter_action::Action,
};
use boardcast_game::timeline::TimelineEntry;
use boardcast_kit::now_unix_ms;
use futures::Stream;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::sync::{broadcast::error::RecvError, mpsc};
use tokio_stream::wrappers::ReceiverStream;

use crate::{
    auth::{self, LoginThrottle, Refused, SessionError, Sessions},
    follow::{AlertFilter, AlertKey, AlertView, BoardView, Change, Games},
    upstream::{GameApi, UpstreamError},
};

const DASHBOARD_HTML: &str = include_str!("dashboard.html");
const LOGIN_HTML: &str = include_str!("login.html");
const DASHBOARD_JS: &str = include_str!("dashboard.js");
const DASHBOARD_CSS: &str = include_str!("dashboard.css");

/// Request ids handed to a page with it, for the forms it shows before asking for more.
const REQUEST_IDS_PER_PAGE: usize = 24;
/// Largest form body read to find its CSRF field.
const FORM_LIMIT: usize = 64 * 1024;

/// How the HTTP side is set up.
#[derive(Clone, Debug)]
pub struct HttpConfig {
    /// Served over TLS: cookies are `Secure`.
    pub tls: bool,
    /// Origins besides the request's own host that may post (a reverse proxy's public origin).
    pub allowed_origins: Vec<String>,
    /// How long a ruling's answer waits for the log to show what it recorded.
    pub act_wait: Duration,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            tls: false,
            allowed_origins: Vec::new(),
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
                    HeaderValue::from_str(&auth::clear_cookie(state.config.tls))
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
                if let Ok(cookie) = HeaderValue::from_str(&auth::clear_cookie(state.config.tls)) {
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

/// A path on this site to go back to after logging in (never another site).
fn safe_next(next: Option<&str>) -> &str {
    match next {
        Some(n) if n.starts_with('/') && !n.starts_with("//") && !n.contains('\\') => n,
        _ => "/",
    }
}

// ---------------------------------------------------------------------------------------------
// Login and logout.

#[derive(Deserialize, Default)]
struct LoginQuery {
    next: Option<String>,
}

fn login_form(status: StatusCode, error: &str, user: &str, next: &str) -> Response {
    let body = LOGIN_HTML
        .replace("{{ERROR}}", &escape(error))
        .replace(
            "{{ERROR_HIDDEN}}",
            if error.is_empty() { "hidden" } else { "" },
        )
        .replace("{{USER}}", &escape(user))
        .replace("{{NEXT}}", &escape(next));
    (status, [(header::CACHE_CONTROL, "no-store")], Html(body)).into_response()
}

async fn login_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(query): Query<LoginQuery>,
) -> Response {
    let next = safe_next(query.next.as_deref()).to_owned();
    if let Some(token) = auth::session_token(&headers)
        && state.sessions.identity(&token, now_unix_ms()).await.is_ok()
    {
        return Redirect::to(&next).into_response();
    }
    login_form(StatusCode::OK, "", "", &next)
}

#[derive(Deserialize)]
struct LoginForm {
    #[serde(default)]
    user: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    next: Option<String>,
}

/// "… try again in 42 s" → 42, for `Retry-After`.
fn seconds_in(message: &str) -> Option<u64> {
    let at = message.find("try again in ")? + "try again in ".len();
    let digits: String = message[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

fn with_retry_after(mut response: Response, seconds: u64) -> Response {
    if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
        response.headers_mut().insert(header::RETRY_AFTER, value);
    }
    response
}

async fn login(State(state): State<AppState>, request: Request) -> Response {
    let ip = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip())
        .unwrap_or(std::net::IpAddr::from([0, 0, 0, 0]));
    let form = match Form::<LoginForm>::from_request(request, &state).await {
        Ok(Form(form)) => form,
        Err(e) => {
            return login_form(
                StatusCode::BAD_REQUEST,
                &format!("The login form could not be read: {e}"),
                "",
                "/",
            );
        }
    };
    let next = safe_next(form.next.as_deref()).to_owned();
    let user = form.user.trim().to_owned();
    if user.is_empty() || form.password.is_empty() {
        return login_form(
            StatusCode::BAD_REQUEST,
            "Enter your user name and password.",
            &user,
            &next,
        );
    }
    if user.len() > 200 || form.password.len() > 1024 {
        return login_form(
            StatusCode::BAD_REQUEST,
            "The user name or password is too long.",
            "",
            &next,
        );
    }
    let now = std::time::Instant::now();
    let attempt = state.throttle.begin(ip, now);
    if let Err(wait) = attempt {
        let seconds = auth::retry_after_secs(wait);
        tracing::warn!(%ip, "login refused: too many failed logins from this address");
        return with_retry_after(
            login_form(
                StatusCode::TOO_MANY_REQUESTS,
                &format!("Too many failed logins from this address: try again in {seconds} s."),
                &user,
                &next,
            ),
            seconds,
        );
    }
    match state.api.login(user.clone(), form.password, ip).await {
        Ok(answer) => {
            state.throttle.succeeded(ip);
            let now_ms = now_unix_ms();
            let expires = answer
                .identity
                .as_ref()
                .map(|i| i.expires_unix_ms)
                .filter(|e| *e > 0)
                .or_else(|| {
                    boardcast_access::SessionClaims::read_unverified(&answer.session_token)
                        .ok()
                        .map(|c| c.expires_unix_ms)
                })
                .unwrap_or(now_ms);
            if let Some(identity) = &answer.identity {
                state
                    .sessions
                    .remember(&answer.session_token, auth::identity_from_proto(identity));
            }
            let cookie = auth::session_cookie(
                &answer.session_token,
                (expires - now_ms) / 1000,
                state.config.tls,
            );
            tracing::info!(%user, %ip, "logged in");
            let mut response = Redirect::to(&next).into_response();
            match HeaderValue::from_str(&cookie) {
                Ok(value) => {
                    response.headers_mut().insert(header::SET_COOKIE, value);
                    response
                }
                Err(_) => login_form(
                    StatusCode::BAD_GATEWAY,
                    "The game service returned a session token that cannot be kept in a cookie.",
                    &user,
                    &next,
                ),
            }
        }
        Err(e)
            if matches!(
                e.code,
                tonic::Code::Unauthenticated | tonic::Code::ResourceExhausted
            ) =>
        {
            let blocked = state.throttle.failed(ip, now);
            tracing::info!(%user, %ip, code = e.code_name(), "login failed");
            let mut message = e.message.clone();
            if let Some(block) = blocked {
                message.push_str(&format!(
                    " Too many failed logins from this address: the next attempt is possible in \
                     {} s.",
                    auth::retry_after_secs(block)
                ));
            }
            if e.code == tonic::Code::ResourceExhausted {
                let response = login_form(StatusCode::TOO_MANY_REQUESTS, &message, &user, &next);
                match seconds_in(&e.message) {
                    Some(seconds) => with_retry_after(response, seconds),
                    None => response,
                }
            } else {
                login_form(StatusCode::UNAUTHORIZED, &message, &user, &next)
            }
        }
        Err(e) => {
            tracing::warn!(%user, "login: the game service did not answer: {e}");
            login_form(
                status_of(&e),
                &format!(
                    "The game service cannot log you in right now: {}",
                    e.message
                ),
                &user,
                &next,
            )
        }
    }
}

async fn logout(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if let Some(token) = auth::session_token(&headers) {
        // Ended at the game service, so that the cookie is worth nothing anywhere, even if it
        // was copied. A session that no longer counts there has nothing left to end.
        match state.api.logout(token.clone()).await {
            Ok(()) => {}
            Err(e) if e.code == tonic::Code::Unauthenticated => {}
            Err(e) => {
                tracing::warn!(
                    "logout: the game service could not end the session: {}",
                    e.message
                );
                return message_page(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "Not logged out",
                    &format!(
                        "The game service could not end your session ({}). It still works: \
                         go back and log out again in a moment.",
                        e.message
                    ),
                );
            }
        }
        state.sessions.forget(&token);
    }
    let mut response = Redirect::to("/login").into_response();
    if let Ok(cookie) = HeaderValue::from_str(&auth::clear_cookie(state.config.tls)) {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    response
}

// ---------------------------------------------------------------------------------------------
// Pages.

async fn css() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        DASHBOARD_CSS,
    )
        .into_response()
}

async fn js() -> Response {
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
fn render(session: &Session, page: &str, title: &str, params: serde_json::Value) -> Response {
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

async fn index_page(session: Session) -> Response {
    render(&session, "index", "Rounds", json!({}))
}

fn not_readable(session: &Session, tournament: &str) -> Option<String> {
    session
        .identity
        .may(Operation::Read { tournament })
        .err()
        .map(|denied| denied.to_string())
}

async fn round_page(
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
struct GamePageQuery {
    alert: Option<u64>,
}

async fn game_page(
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
async fn healthz(State(state): State<AppState>) -> Response {
    no_store(&json!({
        "status": "ok",
        "game_log": state.games.status(),
    }))
}

// ---------------------------------------------------------------------------------------------
// JSON API: reads.

async fn api_me(session: Session) -> Response {
    no_store(&json!({
        "user": session.identity.user,
        "display_name": session.identity.display_name,
        "expires_unix_ms": session.identity.expires_unix_ms,
        "grants": session.identity.grants.iter().map(|g| json!({
            "tournament": g.tournament,
            "role": g.role.name(),
            "boards": g.boards,
        })).collect::<Vec<_>>(),
    }))
}

async fn api_rounds(State(state): State<AppState>, session: Session) -> Response {
    let identity = session.identity.clone();
    no_store(&state.games.rounds(&|t| identity.may_read(t)))
}

async fn api_round(
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
struct AlertQuery {
    tournament: Option<String>,
    round: Option<u32>,
    game: Option<String>,
    /// Resolved alerts too.
    #[serde(default)]
    all: bool,
    last_event_id: Option<String>,
}

/// The queue's filter, refused when it names something the user may not read.
fn alert_filter(
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

async fn api_alerts(
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
struct CountQuery {
    count: Option<usize>,
}

async fn api_request_ids(_session: Session, Query(query): Query<CountQuery>) -> Response {
    let count = query.count.unwrap_or(REQUEST_IDS_PER_PAGE).clamp(1, 100);
    no_store(&json!({
        "request_ids": (0..count).map(|_| new_request_id()).collect::<Vec<_>>(),
    }))
}

/// The game's tournament if the user may read it; otherwise the response to send.
fn readable_game(
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

async fn api_game(
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
struct AfterQuery {
    after: Option<u64>,
}

async fn api_timeline(
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

async fn api_at(
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

fn remaining_ms(input: &Option<ClockInput>, what: &str) -> Result<Option<u64>, String> {
    match clock_ms(input, what)? {
        None => Ok(None),
        Some(ms) if ms >= 0 => Ok(Some(ms as u64)),
        Some(_) => Err(format!("{what} cannot be negative")),
    }
}

#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum ClaimKindBody {
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
enum ActionBody {
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
struct ActBody {
    request_id: String,
    #[serde(default)]
    resolves_alerts: Vec<u64>,
    action: ActionBody,
}

fn side(text: &str, what: &str) -> Result<Side, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "white" => Ok(Side::White),
        "black" => Ok(Side::Black),
        other => Err(format!("{what} must be white or black, not {other:?}")),
    }
}

fn game_result(text: &str) -> Result<GameResult, String> {
    match text.trim() {
        "1-0" => Ok(GameResult::WhiteWins),
        "0-1" => Ok(GameResult::BlackWins),
        "1/2-1/2" | "½-½" | "draw" => Ok(GameResult::Draw),
        other => Err(format!(
            "the result must be 1-0, 0-1 or 1/2-1/2, not {other:?}"
        )),
    }
}

/// The ruling as the game service's `ArbiterAction`.
fn arbiter_action(body: ActionBody, resolves_alerts: Vec<u64>) -> Result<ArbiterAction, String> {
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
struct ActAnswer {
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

async fn api_act(
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

fn assignment_json(a: &boardcast_schema::game::v1::ArbiterAssignment) -> serde_json::Value {
    json!({
        "user": a.user,
        "boards": a.boards,
        "boards_text": describe_boards(&a.boards),
        "assigned_by": a.assigned_by,
        "assigned_unix_ms": a.assigned_unix_ms,
    })
}

async fn api_assignments(
    State(state): State<AppState>,
    session: Session,
    Path(tournament): Path<String>,
) -> Response {
    if let Some(why) = not_readable(&session, &tournament) {
        return json_error(StatusCode::FORBIDDEN, "PERMISSION_DENIED", why);
    }
    match state
        .api
        .list_assignments(session.token.clone(), tournament.clone())
        .await
    {
        Ok(assignments) => no_store(&json!({
            "assignments": assignments.iter().map(assignment_json).collect::<Vec<_>>(),
            "may_assign": session
                .identity
                .may(Operation::AssignArbiters { tournament: &tournament })
                .is_ok(),
        })),
        Err(e) => upstream_error(&e),
    }
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct AssignBody {
    request_id: String,
    user: String,
    /// `1-4, 7`; empty takes every board away.
    #[serde(default)]
    boards: String,
}

async fn api_assign(
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
struct ClaimBody {
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

async fn api_claim(
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

fn alert_event(alert: &AlertView) -> sse::Event {
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

fn board_event(board: &BoardView) -> sse::Event {
    sse::Event::default()
        .event("board")
        .json_data(board)
        .unwrap_or_else(|_| sse::Event::default().comment("a board that cannot be sent"))
}

/// `GET /events?tournament=..&round=..` (or `?game=..`): the open alerts (or, for a page that
/// reconnects with `Last-Event-ID`, every change after that event), the boards, then each alert
/// raised or changed and each board changed, as they happen.
async fn events(
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

fn live_events(
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

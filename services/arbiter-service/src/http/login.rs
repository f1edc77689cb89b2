//! Signing in and out: the login page and form, its throttle's answers, and logout, which
//! ends the session at the game service too.

use axum::extract::FromRequest as _;
use axum::response::{Html, IntoResponse as _};
use serde::Deserialize;
use std::net::{IpAddr, SocketAddr};

use axum::Form;
use axum::extract::{ConnectInfo, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Redirect, Response};
use boardcast_kit::now_unix_ms;

use super::{AppState, LOGIN_HTML, escape, message_page, status_of};
use crate::auth;

/// A path on this site to go back to after logging in (never another site): visible ASCII
/// only, since browsers drop tabs and line breaks from a URL (`/\t/evil.example` would become
/// `//evil.example`, another site) and read a backslash as a slash.
pub(super) fn safe_next(next: Option<&str>) -> &str {
    match next {
        Some(n)
            if n.starts_with('/')
                && !n.starts_with("//")
                && n.bytes().all(|b| b.is_ascii_graphic() && b != b'\\') =>
        {
            n
        }
        _ => "/",
    }
}

// ---------------------------------------------------------------------------------------------
// Login and logout.

#[derive(Deserialize, Default)]
pub(super) struct LoginQuery {
    next: Option<String>,
}

pub(super) fn login_form(status: StatusCode, error: &str, user: &str, next: &str) -> Response {
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

pub(super) async fn login_page(
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
pub(super) struct LoginForm {
    #[serde(default)]
    user: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    next: Option<String>,
}

/// "… try again in 42 s" → 42, for `Retry-After`.
pub(super) fn seconds_in(message: &str) -> Option<u64> {
    let at = message.find("try again in ")? + "try again in ".len();
    let digits: String = message[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

pub(super) fn with_retry_after(mut response: Response, seconds: u64) -> Response {
    if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
        response.headers_mut().insert(header::RETRY_AFTER, value);
    }
    response
}

/// Whose login this is: the connection's address, or, from a proxy in front, the last entry of
/// its X-Forwarded-For that is not one of the proxies (what the first proxy saw; anything
/// before it the client may have written itself). An entry there that is no address (some
/// proxies write `unknown`) gives the proxy's own: never one the client wrote further left.
/// Addresses are compared canonically (`::ffff:10.0.0.2` is `10.0.0.2`).
pub(super) fn client_address(peer: IpAddr, headers: &HeaderMap, proxies: &[IpAddr]) -> IpAddr {
    let peer = peer.to_canonical();
    let is_proxy = |ip: IpAddr| proxies.iter().any(|p| p.to_canonical() == ip);
    if !is_proxy(peer) {
        return peer;
    }
    let entries: Vec<&str> = headers
        .get_all("x-forwarded-for")
        .iter()
        .map(|value| value.to_str().unwrap_or_default())
        .flat_map(|value| value.split(','))
        .map(str::trim)
        .collect();
    for entry in entries.into_iter().rev() {
        // An address, or one with its port (`1.2.3.4:5678`, `[2001:db8::1]:443`).
        let ip = entry
            .parse::<IpAddr>()
            .or_else(|_| entry.parse::<SocketAddr>().map(|a| a.ip()))
            .map(|ip| ip.to_canonical());
        match ip {
            Ok(ip) if is_proxy(ip) => continue,
            Ok(ip) => return ip,
            Err(_) => return peer,
        }
    }
    peer
}

pub(super) async fn login(State(state): State<AppState>, request: Request) -> Response {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip())
        .unwrap_or(IpAddr::from([0, 0, 0, 0]));
    let ip = client_address(peer, request.headers(), &state.config.proxies);
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
                state.config.secure_cookies,
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

pub(super) async fn logout(State(state): State<AppState>, headers: HeaderMap) -> Response {
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
    if let Ok(cookie) = HeaderValue::from_str(&auth::clear_cookie(state.config.secure_cookies)) {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    response
}

// ---------------------------------------------------------------------------------------------
// Pages.

#[cfg(test)]
mod tests {
    use super::{client_address, safe_next};
    use axum::http::{HeaderMap, HeaderValue};
    use std::net::IpAddr;

    #[test]
    fn a_proxys_forwarded_address_counts_and_nobody_elses() {
        let ip = |text: &str| text.parse::<IpAddr>().expect("an address");
        let proxies = [ip("10.0.0.2"), ip("10.0.0.3")];
        let mut headers = HeaderMap::new();
        headers.append(
            "x-forwarded-for",
            HeaderValue::from_static("1.1.1.1, 203.0.113.7, 10.0.0.3"),
        );
        // From a proxy: the last address before the proxies (a client may write the rest).
        assert_eq!(
            client_address(ip("10.0.0.2"), &headers, &proxies),
            ip("203.0.113.7")
        );
        // From anyone else: the header is the client's own word.
        assert_eq!(
            client_address(ip("198.51.100.9"), &headers, &proxies),
            ip("198.51.100.9")
        );
        // A proxy that sent none, or nothing readable where the client's address belongs: the
        // proxy's own, never an address the client wrote further left.
        let mut junk = HeaderMap::new();
        junk.append(
            "x-forwarded-for",
            HeaderValue::from_static("6.6.6.6, unknown"),
        );
        assert_eq!(
            client_address(ip("10.0.0.2"), &junk, &proxies),
            ip("10.0.0.2")
        );
        assert_eq!(
            client_address(ip("10.0.0.2"), &HeaderMap::new(), &proxies),
            ip("10.0.0.2")
        );
        // With a port, and IPv4 as an IPv6 listener sees it.
        let mut ported = HeaderMap::new();
        ported.append(
            "x-forwarded-for",
            HeaderValue::from_static("6.6.6.6, 203.0.113.7:5678"),
        );
        assert_eq!(
            client_address(ip("::ffff:10.0.0.2"), &ported, &proxies),
            ip("203.0.113.7")
        );
    }

    #[test]
    fn only_a_path_on_this_site_is_gone_back_to() {
        for path in ["/", "/games/open-r1-b1", "/alerts?board=3&x=%2F%2Fa"] {
            assert_eq!(safe_next(Some(path)), path);
        }
        for other_site in [
            "//evil.example",
            "/\\evil.example",
            "/\t/evil.example",
            "/\n/evil.example",
            "/\r\n/evil.example",
            "/ /evil.example",
            "https://evil.example",
            "evil.example",
            "/caf\u{e9}",
            "",
        ] {
            assert_eq!(safe_next(Some(other_site)), "/", "{other_site:?}");
        }
        assert_eq!(safe_next(None), "/");
    }
}

//! Who is using the dashboard: the session cookie, who a session belongs to (the game service's
//! `WhoAmI`, cached for two seconds), the CSRF and Origin checks of every state-changing request, and the
//! slow-down of failed logins per client address.
//!
//! The game service is the authority on sessions and permissions: this service only keeps the
//! session token in an HttpOnly cookie and forwards it. The CSRF value comes from the token's own
//! claims, so no server-side session store is needed and every instance agrees.

use std::{
    collections::{HashMap, VecDeque},
    net::IpAddr,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use axum::http::{HeaderMap, header};
use boardcast_access::{Grant, Identity, Role, SessionClaims, is_session_token};
use boardcast_schema::game::v1 as proto;
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;
use tonic::Code;

use crate::upstream::GameApi;

pub const SESSION_COOKIE: &str = "boardcast_session";
/// The header `fetch` requests carry the CSRF value in.
pub const CSRF_HEADER: &str = "x-csrf-token";
/// The form field plain form posts carry it in.
pub const CSRF_FIELD: &str = "csrf";
/// How long a `WhoAmI` answer is used before the game service is asked again: a session ended
/// elsewhere (a logout on another dashboard, a password change, a disabled user) or a changed
/// role takes at most this long to show here, open live streams included.
pub const IDENTITY_TTL: Duration = Duration::from_secs(2);
/// Cached answers kept before old ones are swept out.
const CACHE_LIMIT: usize = 10_000;

/// The session token from the request's cookies.
pub fn session_token(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, value)| *name == SESSION_COOKIE && !value.is_empty())
        .map(|(_, value)| value.trim_matches('"').to_owned())
}

/// The `Set-Cookie` value that keeps a session for `max_age_s` seconds. HttpOnly: page scripts
/// never see the token; SameSite=Strict: other sites' pages do not send it.
pub fn session_cookie(token: &str, max_age_s: i64, secure: bool) -> String {
    format!(
        "{SESSION_COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}{}",
        max_age_s.max(0),
        if secure { "; Secure" } else { "" }
    )
}

/// The `Set-Cookie` value that removes the session cookie.
pub fn clear_cookie(secure: bool) -> String {
    session_cookie("", 0, secure)
}

/// Why a state-changing request was refused before anything was forwarded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("refused: not signed in (no session cookie); log in again")]
    NoSession,
    #[error("refused: the session cookie is malformed; log in again")]
    MalformedSession,
    #[error(
        "refused: the request carries no CSRF token (header X-CSRF-Token or form field csrf); \
         reload the page and try again"
    )]
    MissingCsrf,
    #[error(
        "refused: the CSRF token does not match this session (the page may be from an earlier \
         session); reload the page and try again"
    )]
    WrongCsrf,
    #[error("refused: a request from another site ({0}) may not change anything here")]
    ForeignOrigin(String),
}

/// The CSRF value of a session token (its claims, read without the key: the holder may know its
/// own value; the game service checks the signature of everything forwarded).
pub fn csrf_of(token: &str) -> Result<String, Refused> {
    SessionClaims::read_unverified(token)
        .map(|claims| claims.csrf)
        .map_err(|_| Refused::MalformedSession)
}

/// The request's CSRF value must equal its session's.
pub fn check_csrf(token: Option<&str>, provided: Option<&str>) -> Result<(), Refused> {
    let token = token.ok_or(Refused::NoSession)?;
    let expected = csrf_of(token)?;
    let provided = provided
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .ok_or(Refused::MissingCsrf)?;
    if expected.is_empty() {
        // A session without a CSRF value cannot be used to change anything from a page.
        return Err(Refused::MalformedSession);
    }
    if bool::from(expected.as_bytes().ct_eq(provided.as_bytes())) {
        Ok(())
    } else {
        Err(Refused::WrongCsrf)
    }
}

/// A request naming another site as its origin is refused: its page could not read the CSRF
/// value, but this is checked first and for /login too (which has no session yet). Same-site is
/// the host the request was sent to (`Host`, or HTTP/2's `:authority` given as `authority`), or
/// one of `allowed` (full origins, for a reverse proxy).
pub fn check_origin(
    headers: &HeaderMap,
    authority: Option<&str>,
    allowed: &[String],
) -> Result<(), Refused> {
    if let Some(site) = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok())
        && site.eq_ignore_ascii_case("cross-site")
    {
        return Err(Refused::ForeignOrigin(
            "Sec-Fetch-Site: cross-site".to_owned(),
        ));
    }
    let Some(origin) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let origin = origin
        .to_str()
        .map_err(|_| Refused::ForeignOrigin("an unreadable Origin".to_owned()))?
        .trim();
    if allowed
        .iter()
        .any(|a| a.trim_end_matches('/').eq_ignore_ascii_case(origin))
    {
        return Ok(());
    }
    let origin_authority = origin
        .strip_prefix("https://")
        .or_else(|| origin.strip_prefix("http://"))
        .filter(|rest| !rest.is_empty() && !rest.contains('/'));
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .or(authority);
    match (origin_authority, host) {
        (Some(origin_authority), Some(host))
            if origin_authority.eq_ignore_ascii_case(host.trim()) =>
        {
            Ok(())
        }
        _ => Err(Refused::ForeignOrigin(format!("Origin {origin}"))),
    }
}

/// The proto identity in the access library's terms (grants of an unknown role are dropped: they
/// allow nothing).
pub fn identity_from_proto(identity: &proto::Identity) -> Identity {
    Identity {
        user: identity.user.clone(),
        display_name: identity.display_name.clone(),
        grants: identity
            .grants
            .iter()
            .filter_map(|g| {
                let role = match g.role() {
                    proto::Role::ChiefArbiter => Role::ChiefArbiter,
                    proto::Role::Arbiter => Role::Arbiter,
                    proto::Role::Observer => Role::Observer,
                    proto::Role::Operator => Role::Operator,
                    proto::Role::Unspecified => return None,
                };
                Some(Grant {
                    tournament: g.tournament_id.clone(),
                    role,
                    boards: g.boards.clone(),
                })
            })
            .collect(),
        expires_unix_ms: (identity.expires_unix_ms != 0).then_some(identity.expires_unix_ms),
        assigned: identity
            .assignments
            .iter()
            .map(|a| (a.tournament_id.clone(), a.boards.clone()))
            .collect(),
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    /// Expired, revoked, forged, malformed: log in again.
    #[error("{0}")]
    Invalid(String),
    /// The game service could not be asked: not the user's fault, nothing to log in again for.
    #[error("the game service cannot check the session right now: {0}")]
    Unavailable(String),
}

struct Cached {
    at: Instant,
    answer: Result<Arc<Identity>, SessionError>,
}

/// Sessions as the game service knows them, each answer kept for `IDENTITY_TTL`.
pub struct Sessions {
    api: Arc<GameApi>,
    /// By the token's SHA-256, so that the tokens themselves are not kept here.
    cache: Mutex<HashMap<[u8; 32], Cached>>,
}

fn token_key(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

impl Sessions {
    pub fn new(api: Arc<GameApi>) -> Sessions {
        Sessions {
            api,
            cache: Mutex::new(HashMap::new()),
        }
    }

    fn cached(&self, key: &[u8; 32], now: Instant) -> Option<Result<Arc<Identity>, SessionError>> {
        let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .get(key)
            .filter(|c| now.duration_since(c.at) < IDENTITY_TTL)
            .map(|c| c.answer.clone())
    }

    fn store(&self, key: [u8; 32], answer: Result<Arc<Identity>, SessionError>, now: Instant) {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= CACHE_LIMIT {
            cache.retain(|_, c| now.duration_since(c.at) < IDENTITY_TTL);
        }
        cache.insert(key, Cached { at: now, answer });
    }

    /// Keeps the identity a login returned, sparing the first page its `WhoAmI`.
    pub fn remember(&self, token: &str, identity: Identity) {
        self.store(token_key(token), Ok(Arc::new(identity)), Instant::now());
    }

    /// Forgets a session (logout).
    pub fn forget(&self, token: &str) {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        cache.remove(&token_key(token));
    }

    /// Who the session token belongs to, as the game service says (cached for `IDENTITY_TTL`).
    pub async fn identity(
        &self,
        token: &str,
        now_unix_ms: i64,
    ) -> Result<Arc<Identity>, SessionError> {
        // Only what the holder may know is read without the key; a token is never accepted on
        // its own claims, only refused early when they say it has expired.
        if !is_session_token(token) {
            return Err(SessionError::Invalid(
                "the session cookie is not a session; log in again".to_owned(),
            ));
        }
        match SessionClaims::read_unverified(token) {
            Ok(claims) if claims.expires_unix_ms <= now_unix_ms => {
                return Err(SessionError::Invalid(
                    "the session has expired; log in again".to_owned(),
                ));
            }
            Ok(_) => {}
            Err(_) => {
                return Err(SessionError::Invalid(
                    "the session cookie is malformed; log in again".to_owned(),
                ));
            }
        }
        let key = token_key(token);
        let now = Instant::now();
        let answer = match self.cached(&key, now) {
            Some(answer) => answer,
            None => {
                let answer = match self.api.who_am_i(token.to_owned()).await {
                    Ok(identity) => Ok(Arc::new(identity_from_proto(&identity))),
                    Err(e)
                        if matches!(
                            e.code,
                            Code::Unauthenticated | Code::PermissionDenied | Code::InvalidArgument
                        ) =>
                    {
                        Err(SessionError::Invalid(e.message))
                    }
                    Err(e) => {
                        // Not cached: the next request asks again.
                        return Err(SessionError::Unavailable(e.message));
                    }
                };
                self.store(key, answer.clone(), now);
                answer
            }
        };
        let identity = answer?;
        if identity
            .expires_unix_ms
            .is_some_and(|expires| expires <= now_unix_ms)
        {
            return Err(SessionError::Invalid(
                "the session has expired; log in again".to_owned(),
            ));
        }
        Ok(identity)
    }
}

/// How failed logins from one address are slowed down.
#[derive(Clone, Copy, Debug)]
pub struct ThrottlePolicy {
    /// Failures are counted over this window…
    pub window: Duration,
    /// …and this many in it start a block,
    pub allowed: usize,
    /// first this long, doubling with each further failure,
    pub first_block: Duration,
    /// up to this.
    pub max_block: Duration,
}

impl Default for ThrottlePolicy {
    fn default() -> Self {
        ThrottlePolicy {
            window: Duration::from_secs(15 * 60),
            allowed: 5,
            first_block: Duration::from_secs(30),
            max_block: Duration::from_secs(5 * 60),
        }
    }
}

#[derive(Default)]
struct Failures {
    times: VecDeque<Instant>,
    blocked_until: Option<Instant>,
    next_block: Option<Duration>,
    /// Attempts started and not answered yet: counted with the failures, so that many sent at
    /// once cannot all pass before the first failure is known.
    in_flight: usize,
}

/// A login attempt under way from an address (`LoginThrottle::begin`); ends when dropped.
pub struct Attempt<'a> {
    throttle: &'a LoginThrottle,
    ip: IpAddr,
}

impl Drop for Attempt<'_> {
    fn drop(&mut self) {
        let mut addresses = self
            .throttle
            .addresses
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(failures) = addresses.get_mut(&self.ip) {
            failures.in_flight = failures.in_flight.saturating_sub(1);
            if failures.in_flight == 0
                && failures.times.is_empty()
                && failures.blocked_until.is_none()
            {
                addresses.remove(&self.ip);
            }
        }
    }
}

/// What an address sending more attempts at once than it may fail is told to wait.
const TOO_MANY_AT_ONCE_WAIT: Duration = Duration::from_secs(1);

/// Failed logins per client address, in memory (the game service also slows down per user: this
/// stops one address trying many users).
pub struct LoginThrottle {
    policy: ThrottlePolicy,
    addresses: Mutex<HashMap<IpAddr, Failures>>,
}

/// Whole seconds to wait, rounded up (at least 1), for `Retry-After`.
pub fn retry_after_secs(wait: Duration) -> u64 {
    wait.as_millis().div_ceil(1000).max(1) as u64
}

impl LoginThrottle {
    pub fn new(policy: ThrottlePolicy) -> LoginThrottle {
        LoginThrottle {
            policy,
            addresses: Mutex::new(HashMap::new()),
        }
    }

    /// `Err(wait)` while the address is blocked: nothing is forwarded.
    pub fn check(&self, ip: IpAddr, now: Instant) -> Result<(), Duration> {
        let addresses = self.addresses.lock().unwrap_or_else(|e| e.into_inner());
        match addresses.get(&ip).and_then(|f| f.blocked_until) {
            Some(until) if until > now => Err(until - now),
            _ => Ok(()),
        }
    }

    /// Starts an attempt from `ip`: `Err(wait)` while the address is blocked, or while its
    /// recent failures and the attempts it has under way reach what it may fail.
    pub fn begin(&self, ip: IpAddr, now: Instant) -> Result<Attempt<'_>, Duration> {
        self.check(ip, now)?;
        let policy = self.policy;
        let mut addresses = self.addresses.lock().unwrap_or_else(|e| e.into_inner());
        if addresses.len() >= CACHE_LIMIT {
            addresses.retain(|_, f| {
                f.in_flight > 0
                    || f.blocked_until.is_some_and(|u| u > now)
                    || f.times
                        .back()
                        .is_some_and(|t| now.duration_since(*t) < policy.window)
            });
        }
        let failures = addresses.entry(ip).or_default();
        let recent = failures
            .times
            .iter()
            .filter(|t| now.duration_since(**t) < policy.window)
            .count();
        // Up to the failures still allowed at once; one at a time once they are used up (a
        // block that has passed lets the next attempt through, and its failure blocks again).
        if failures.in_flight >= policy.allowed.saturating_sub(recent).max(1) {
            return Err(TOO_MANY_AT_ONCE_WAIT);
        }
        failures.in_flight += 1;
        Ok(Attempt { throttle: self, ip })
    }

    /// Counts a failed login; `Some(block)` when the address is now blocked for that long.
    pub fn failed(&self, ip: IpAddr, now: Instant) -> Option<Duration> {
        let policy = self.policy;
        let mut addresses = self.addresses.lock().unwrap_or_else(|e| e.into_inner());
        if addresses.len() >= CACHE_LIMIT {
            addresses.retain(|_, f| {
                f.blocked_until.is_some_and(|u| u > now)
                    || f.times
                        .back()
                        .is_some_and(|t| now.duration_since(*t) < policy.window)
            });
        }
        let failures = addresses.entry(ip).or_default();
        while failures
            .times
            .front()
            .is_some_and(|t| now.duration_since(*t) >= policy.window)
        {
            failures.times.pop_front();
        }
        failures.times.push_back(now);
        if failures.times.len() < policy.allowed {
            failures.next_block = None;
            return None;
        }
        let block = failures.next_block.unwrap_or(policy.first_block);
        failures.blocked_until = Some(now + block);
        failures.next_block = Some((block * 2).min(policy.max_block));
        Some(block)
    }

    /// A successful login from the address clears its count.
    pub fn succeeded(&self, ip: IpAddr) {
        let mut addresses = self.addresses.lock().unwrap_or_else(|e| e.into_inner());
        addresses.remove(&ip);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;
    use boardcast_access::{SessionKey, is_session_token};

    pub(crate) fn token(csrf: &str) -> String {
        let token = SessionKey::from_bytes([7; 32]).issue(&SessionClaims {
            user: "ia-smith".into(),
            issued_unix_ms: 0,
            expires_unix_ms: i64::MAX,
            csrf: csrf.into(),
        });
        assert!(is_session_token(&token));
        token
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_str(value).expect("header"));
        }
        map
    }

    #[test]
    fn the_session_is_read_from_the_cookies() {
        let h = headers(&[("cookie", "a=1; boardcast_session=bcs1.x.y; b=2")]);
        assert_eq!(session_token(&h).as_deref(), Some("bcs1.x.y"));
        let h = headers(&[("cookie", "a=1"), ("cookie", "boardcast_session=t")]);
        assert_eq!(session_token(&h).as_deref(), Some("t"));
        assert_eq!(
            session_token(&headers(&[("cookie", "boardcast_session=")])),
            None
        );
        assert_eq!(session_token(&HeaderMap::new()), None);
    }

    #[test]
    fn cookies_are_http_only_strict_and_secure_over_tls() {
        let c = session_cookie("tok", 3600, true);
        assert_eq!(
            c,
            "boardcast_session=tok; HttpOnly; SameSite=Strict; Path=/; Max-Age=3600; Secure"
        );
        assert!(!session_cookie("tok", 5, false).contains("Secure"));
        assert!(clear_cookie(false).contains("Max-Age=0"));
    }

    #[test]
    fn the_csrf_value_must_be_the_sessions() {
        let t = token("s3cret");
        assert_eq!(check_csrf(Some(&t), Some("s3cret")), Ok(()));
        assert_eq!(check_csrf(Some(&t), None), Err(Refused::MissingCsrf));
        assert_eq!(check_csrf(Some(&t), Some(" ")), Err(Refused::MissingCsrf));
        assert_eq!(check_csrf(Some(&t), Some("guess")), Err(Refused::WrongCsrf));
        assert_eq!(check_csrf(None, Some("s3cret")), Err(Refused::NoSession));
        assert_eq!(
            check_csrf(Some("garbage"), Some("s3cret")),
            Err(Refused::MalformedSession)
        );
        assert_eq!(
            check_csrf(Some(&token("")), Some("anything")),
            Err(Refused::MalformedSession)
        );
    }

    #[test]
    fn only_this_sites_origin_may_post() {
        let host = ("host", "arbiters.local:8090");
        assert_eq!(check_origin(&headers(&[host]), None, &[]), Ok(()));
        assert_eq!(
            check_origin(
                &headers(&[host, ("origin", "http://arbiters.local:8090")]),
                None,
                &[]
            ),
            Ok(())
        );
        assert_eq!(
            check_origin(
                &headers(&[host, ("origin", "https://ARBITERS.local:8090")]),
                None,
                &[]
            ),
            Ok(())
        );
        for foreign in [
            "https://evil.example",
            "null",
            "http://arbiters.local:8091",
            "file://",
        ] {
            assert!(
                matches!(
                    check_origin(&headers(&[host, ("origin", foreign)]), None, &[]),
                    Err(Refused::ForeignOrigin(_))
                ),
                "{foreign}"
            );
        }
        let proxied = [host, ("origin", "https://arbiters.example.org")];
        assert!(check_origin(&headers(&proxied), None, &[]).is_err());
        assert_eq!(
            check_origin(
                &headers(&proxied),
                None,
                &["https://arbiters.example.org/".to_owned()]
            ),
            Ok(())
        );
        assert!(
            check_origin(
                &headers(&[host, ("sec-fetch-site", "cross-site")]),
                None,
                &[]
            )
            .is_err()
        );
        // HTTP/2 names the host in `:authority`, not in a Host header.
        let h2 = headers(&[("origin", "https://arbiters.local:8443")]);
        assert_eq!(check_origin(&h2, Some("arbiters.local:8443"), &[]), Ok(()));
        assert!(check_origin(&h2, Some("other:8443"), &[]).is_err());
        assert!(check_origin(&h2, None, &[]).is_err());
    }

    #[test]
    fn failed_logins_from_an_address_are_slowed_down_doubling_up_to_five_minutes() {
        let throttle = LoginThrottle::new(ThrottlePolicy::default());
        let ip: IpAddr = "192.0.2.1".parse().expect("ip");
        let other: IpAddr = "192.0.2.2".parse().expect("ip");
        let t0 = Instant::now();
        for i in 0..4 {
            assert_eq!(throttle.failed(ip, t0 + Duration::from_secs(i)), None);
            assert_eq!(throttle.check(ip, t0 + Duration::from_secs(i)), Ok(()));
        }
        // The fifth failure within 15 minutes blocks the address for 30 s.
        let t = t0 + Duration::from_secs(10);
        assert_eq!(throttle.failed(ip, t), Some(Duration::from_secs(30)));
        assert_eq!(
            throttle.check(ip, t + Duration::from_secs(1)),
            Err(Duration::from_secs(29))
        );
        assert_eq!(throttle.check(other, t), Ok(()));
        // Each further failure doubles the block, up to five minutes.
        let mut t = t + Duration::from_secs(30);
        assert_eq!(throttle.check(ip, t), Ok(()));
        let mut blocks = Vec::new();
        for _ in 0..5 {
            let block = throttle.failed(ip, t).expect("blocked");
            blocks.push(block.as_secs());
            t += block;
        }
        assert_eq!(blocks, [60, 120, 240, 300, 300]);
        // A success clears the address.
        throttle.succeeded(ip);
        // Attempts under way count: an address may not start more at once than it may fail.
        let burst = LoginThrottle::new(ThrottlePolicy::default());
        let started: Vec<_> = (0..5).map(|_| burst.begin(other, t0)).collect();
        assert!(started.iter().all(Result::is_ok));
        assert_eq!(burst.begin(other, t0).err(), Some(Duration::from_secs(1)));
        drop(started);
        assert!(burst.begin(other, t0).is_ok());
        // Once a block has passed, attempts go through one at a time.
        for i in 0..5 {
            burst.failed(other, t0 + Duration::from_secs(i));
        }
        assert!(burst.begin(other, t0 + Duration::from_secs(10)).is_err());
        let after_block = t0 + Duration::from_secs(40);
        let one = burst.begin(other, after_block);
        assert!(one.is_ok());
        assert!(burst.begin(other, after_block).is_err(), "one at a time");
        drop(one);
        assert_eq!(throttle.check(ip, t), Ok(()));
        assert_eq!(throttle.failed(ip, t), None);
        // Failures older than the window no longer count.
        let throttle = LoginThrottle::new(ThrottlePolicy::default());
        for i in 0..4 {
            throttle.failed(ip, t0 + Duration::from_secs(i));
        }
        assert_eq!(throttle.failed(ip, t0 + Duration::from_secs(16 * 60)), None);
        assert_eq!(retry_after_secs(Duration::from_millis(29_001)), 30);
        assert_eq!(retry_after_secs(Duration::ZERO), 1);
    }

    #[test]
    fn proto_identities_become_access_identities() {
        let identity = identity_from_proto(&proto::Identity {
            user: "ia-smith".into(),
            display_name: "IA Smith".into(),
            grants: vec![
                proto::Grant {
                    tournament_id: "open".into(),
                    role: proto::Role::Arbiter as i32,
                    boards: vec![1, 2],
                },
                proto::Grant {
                    tournament_id: "rapid".into(),
                    role: proto::Role::Unspecified as i32,
                    boards: vec![],
                },
            ],
            expires_unix_ms: 0,
            assignments: vec![proto::ArbiterAssignment {
                tournament_id: "open".into(),
                user: "ia-smith".into(),
                boards: vec![5],
                ..Default::default()
            }],
        });
        // The chief arbiter's assignment replaces the grant's boards.
        let rule = |board_number| boardcast_access::Operation::Rule {
            tournament: "open",
            board_number,
        };
        assert!(identity.may(rule(5)).is_ok());
        assert!(identity.may(rule(1)).is_err());
        assert!(identity.may_read("open"));
        assert!(!identity.may_read("rapid"));
        assert_eq!(identity.expires_unix_ms, None);
        assert_eq!(identity.grants[0].boards, vec![1, 2]);
    }
}

//! The HTTP side against a fake game service: CSRF and Origin refusals forward nothing, logins
//! are slowed down per address, sessions are checked (and cached), rulings are forwarded with the
//! arbiter's own session and come back as the log entries they added, and the live queue resumes
//! from the last event a page saw.

use std::{
    net::SocketAddr,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use boardcast_access::{SessionClaims, SessionKey};
use boardcast_game::{
    Game,
    events::{
        ActRequest, ActResponse, ClaimVerdict, EnterMove, EvaluateClaimRequest,
        arbiter_action::Action,
    },
};
use boardcast_schema::game::v1 as proto;
use futures::future::BoxFuture;
use prost::Message as _;
use tonic::Code;

use crate::{
    auth::{LoginThrottle, ThrottlePolicy},
    follow::{Games, tests::Script},
    http::{self, HttpConfig},
    upstream::{GameApi, UpstreamError},
};

const CSRF: &str = "csrf-of-the-session";

fn session_token(user: &str, csrf: &str) -> String {
    SessionKey::from_bytes([9; 32]).issue(&SessionClaims {
        user: user.into(),
        issued_unix_ms: 0,
        expires_unix_ms: i64::MAX / 2,
        csrf: csrf.into(),
    })
}

/// The game service as far as these tests need it. Rulings are decided on a scripted game and
/// its new records folded into the follower, as the real log would deliver them.
struct Fake {
    games: Arc<Games>,
    script: Mutex<Script>,
    stream_seq: AtomicU64,
    token: String,
    identity: proto::Identity,
    calls: Mutex<Vec<String>>,
    /// Answer every Act with this refusal instead.
    refuse_act: Mutex<Option<UpstreamError>>,
}

impl Fake {
    fn calls(&self, name: &str) -> usize {
        self.calls
            .lock()
            .expect("lock")
            .iter()
            .filter(|c| c.starts_with(name))
            .count()
    }

    fn record(&self, name: String) {
        self.calls.lock().expect("lock").push(name);
    }

    fn check(&self, token: &str) -> Result<(), UpstreamError> {
        if token == self.token {
            Ok(())
        } else {
            Err(UpstreamError::new(
                Code::Unauthenticated,
                "the session has expired; log in again",
            ))
        }
    }

    fn publish(&self, records: &[boardcast_game::events::GameEventRecord], subject: &str) {
        for record in records {
            let seq = self.stream_seq.fetch_add(1, Ordering::SeqCst) + 1;
            self.games
                .fold_message(seq, subject, &record.encode_to_vec());
        }
    }
}

impl GameApi for Fake {
    fn login(
        &self,
        user: String,
        password: String,
    ) -> BoxFuture<'_, Result<proto::LoginResponse, UpstreamError>> {
        self.record(format!("login {user}"));
        Box::pin(async move {
            if user == "ia-smith" && password == "right" {
                Ok(proto::LoginResponse {
                    session_token: self.token.clone(),
                    identity: Some(proto::Identity {
                        expires_unix_ms: boardcast_kit::now_unix_ms() + 3_600_000,
                        ..self.identity.clone()
                    }),
                })
            } else {
                Err(UpstreamError::new(
                    Code::Unauthenticated,
                    "wrong user name or password",
                ))
            }
        })
    }

    fn who_am_i(&self, token: String) -> BoxFuture<'_, Result<proto::Identity, UpstreamError>> {
        self.record("who_am_i".to_owned());
        Box::pin(async move {
            self.check(&token)?;
            Ok(self.identity.clone())
        })
    }

    fn evaluate_claim(
        &self,
        token: String,
        request: EvaluateClaimRequest,
    ) -> BoxFuture<'_, Result<ClaimVerdict, UpstreamError>> {
        self.record(format!("evaluate_claim {}", request.game_id));
        Box::pin(async move {
            self.check(&token)?;
            Ok(ClaimVerdict {
                verdict: "rejected".into(),
                article: "9.2".into(),
                explanation: "the position occurred once".into(),
                game_seqs: vec![1],
                ..Default::default()
            })
        })
    }

    fn act(
        &self,
        token: String,
        request: ActRequest,
    ) -> BoxFuture<'_, Result<ActResponse, UpstreamError>> {
        self.record(format!("act {}", request.request_id));
        Box::pin(async move {
            self.check(&token)?;
            if let Some(refusal) = self.refuse_act.lock().expect("lock").clone() {
                return Err(refusal);
            }
            let (records, subject, state) = {
                let mut script = self.script.lock().expect("lock");
                let action = request.action.clone().unwrap_or_default();
                let events = script
                    .game
                    .decide_arbiter(&action, "ia-smith", &request.request_id)
                    .map_err(|e| UpstreamError::new(Code::InvalidArgument, e.to_string()))?;
                let records =
                    Game::record(Some(&script.game), script.game.game_id(), events, 5_000);
                for record in &records {
                    script.game.apply(record).expect("applies");
                    script.records.push(record.clone());
                }
                (records, script.subject(), script.game.to_state())
            };
            self.publish(&records, &subject);
            Ok(ActResponse { state: Some(state) })
        })
    }
}

struct Harness {
    base: String,
    fake: Arc<Fake>,
    games: Arc<Games>,
    game_id: String,
    client: reqwest::Client,
}

impl Harness {
    async fn start() -> Harness {
        Harness::start_with(ThrottlePolicy::default()).await
    }

    async fn start_with(policy: ThrottlePolicy) -> Harness {
        let games = Arc::new(Games::new());
        let script = Script::start("open", 1, 3);
        let game_id = script.game.game_id().to_owned();
        let fake = Arc::new(Fake {
            games: games.clone(),
            stream_seq: AtomicU64::new(0),
            token: session_token("ia-smith", CSRF),
            identity: proto::Identity {
                user: "ia-smith".into(),
                display_name: "IA Smith".into(),
                grants: vec![proto::Grant {
                    tournament_id: "open".into(),
                    role: proto::Role::Arbiter as i32,
                    boards: vec![3],
                }],
                expires_unix_ms: 0,
            },
            calls: Mutex::new(Vec::new()),
            refuse_act: Mutex::new(None),
            script: Mutex::new(script),
        });
        {
            let script = fake.script.lock().expect("lock");
            let records = script.records.clone();
            let subject = script.subject();
            drop(script);
            fake.publish(&records, &subject);
        }
        // A game of a tournament the arbiter may not read.
        let other = Script::start("closed", 1, 1);
        fake.publish(&other.records, &other.subject());

        let state = http::state(
            games.clone(),
            fake.clone(),
            LoginThrottle::new(policy),
            HttpConfig {
                act_wait: Duration::from_secs(2),
                ..Default::default()
            },
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move {
            axum::serve(
                listener,
                http::router(state).into_make_service_with_connect_info::<SocketAddr>(),
            )
            .await
        });
        Harness {
            base: format!("http://{addr}"),
            fake,
            games,
            game_id,
            client: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .expect("client"),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn host(&self) -> String {
        self.base.trim_start_matches("http://").to_owned()
    }

    fn cookie(&self) -> String {
        format!("boardcast_session={}", self.fake.token)
    }

    async fn act(
        &self,
        csrf: Option<&str>,
        origin: Option<&str>,
        body: serde_json::Value,
    ) -> (u16, serde_json::Value) {
        let mut request = self
            .client
            .post(self.url(&format!("/api/games/{}/act", self.game_id)))
            .header("cookie", self.cookie())
            .json(&body);
        if let Some(csrf) = csrf {
            request = request.header("x-csrf-token", csrf);
        }
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        let response = request.send().await.expect("sent");
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or_default())
    }
}

fn note(request_id: &str, text: &str) -> serde_json::Value {
    serde_json::json!({
        "request_id": request_id,
        "action": { "type": "annotation", "text": text },
    })
}

const RID: &str = "0f8fad5b-d9cb-469f-a165-70867728950e";

#[tokio::test]
async fn a_post_without_the_sessions_csrf_value_is_refused_and_nothing_is_forwarded() {
    let h = Harness::start().await;
    let same_site = format!("http://{}", h.host());

    let (status, body) = h.act(None, Some(&same_site), note(RID, "no token")).await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap_or("")
            .contains("no CSRF token"),
        "{body}"
    );

    let (status, body) = h.act(Some("a guess"), None, note(RID, "wrong token")).await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap_or("")
            .contains("does not match"),
        "{body}"
    );

    let (status, body) = h
        .act(
            Some(CSRF),
            Some("https://evil.example"),
            note(RID, "foreign"),
        )
        .await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap_or("")
            .contains("another site"),
        "{body}"
    );

    // Another session's token is no good either.
    let other = session_token("ia-smith", "another-csrf");
    let response = h
        .client
        .post(h.url(&format!("/api/games/{}/act", h.game_id)))
        .header("cookie", format!("boardcast_session={other}"))
        .header("x-csrf-token", CSRF)
        .json(&note(RID, "other session"))
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status().as_u16(), 403);

    // The claim evaluation is a POST too.
    let response = h
        .client
        .post(h.url(&format!("/api/games/{}/claim", h.game_id)))
        .header("cookie", h.cookie())
        .json(&serde_json::json!({ "kind": "threefold" }))
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status().as_u16(), 403);

    assert_eq!(h.fake.calls("act"), 0, "nothing was forwarded");
    assert_eq!(h.fake.calls("evaluate_claim"), 0, "nothing was forwarded");
    assert_eq!(
        h.fake.calls("who_am_i"),
        0,
        "refused before the session was even looked up"
    );

    // With the right value from this site it goes through.
    let (status, body) = h.act(Some(CSRF), Some(&same_site), note(RID, "fine")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(h.fake.calls("act"), 1);
}

#[tokio::test]
async fn forms_carry_the_csrf_value_in_a_field() {
    let h = Harness::start().await;
    let logout = |csrf: &'static str| {
        h.client
            .post(h.url("/logout"))
            .header("cookie", h.cookie())
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("csrf={csrf}"))
            .send()
    };
    let refused = logout("nope").await.expect("sent");
    assert_eq!(refused.status().as_u16(), 403);
    let text = refused.text().await.expect("body");
    assert!(text.contains("does not match"), "{text}");
    let done = logout(CSRF).await.expect("sent");
    assert_eq!(done.status().as_u16(), 303);
    let cookie = done
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(
        cookie.starts_with("boardcast_session=;") && cookie.contains("Max-Age=0"),
        "{cookie}"
    );
}

#[tokio::test]
async fn a_ruling_is_forwarded_as_the_arbiter_and_answered_with_what_the_log_recorded() {
    let h = Harness::start().await;
    let body = serde_json::json!({
        "request_id": RID,
        "resolves_alerts": [1],
        "action": { "type": "enter_move", "san": "e4" },
    });
    let (status, answer) = h.act(Some(CSRF), None, body.clone()).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["already_recorded"], false);
    let recorded: Vec<&str> = answer["recorded"]
        .as_array()
        .expect("entries")
        .iter()
        .filter_map(|e| e["words"].as_str())
        .collect();
    assert!(
        recorded.iter().any(|w| w.contains("move e4 entered")),
        "{answer}"
    );
    assert!(
        recorded.iter().any(|w| w.contains("1. e4 completed")),
        "{answer}"
    );
    assert!(
        answer["message"]
            .as_str()
            .unwrap_or("")
            .starts_with("Recorded:"),
        "{answer}"
    );
    let next = answer["next_request_id"].as_str().unwrap_or("");
    assert!(http::is_uuid(next) && next != RID, "{answer}");

    // The same form sent again is the same request: nothing is recorded twice.
    let (status, again) = h.act(Some(CSRF), None, body).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["already_recorded"], true, "{again}");
    let detail = h.games.game_detail(&h.game_id).expect("game");
    assert_eq!(detail.moves.len(), 1);

    // The game service's refusal is shown verbatim.
    *h.fake.refuse_act.lock().expect("lock") = Some(UpstreamError::new(
        Code::PermissionDenied,
        "ia-smith is not assigned board 3 of tournament \"open\"",
    ));
    let (status, refused) = h
        .act(
            Some(CSRF),
            None,
            note("6ba7b810-9dad-41d1-80b4-00c04fd430c8", "x"),
        )
        .await;
    assert_eq!(status, 403);
    assert_eq!(
        refused["error"],
        "ia-smith is not assigned board 3 of tournament \"open\""
    );
    assert_eq!(refused["code"], "PERMISSION_DENIED");

    // Bad input is a clear 400, never forwarded.
    let calls = h.fake.calls("act");
    for bad in [
        serde_json::json!({ "request_id": "not-a-uuid", "action": { "type": "annotation", "text": "x" } }),
        serde_json::json!({ "request_id": RID, "action": { "type": "launch_missiles" } }),
        serde_json::json!({ "request_id": RID, "action": { "type": "clocks", "white_added": "9:99" } }),
        serde_json::json!({ "request_id": RID, "action": { "type": "result", "result": "2-0" } }),
    ] {
        let (status, answer) = h.act(Some(CSRF), None, bad.clone()).await;
        assert_eq!(status, 400, "{bad} → {answer}");
        assert!(!answer["error"].as_str().unwrap_or("").is_empty());
    }
    assert_eq!(h.fake.calls("act"), calls);
}

#[tokio::test]
async fn pages_need_a_session_and_show_only_readable_tournaments() {
    let h = Harness::start().await;
    let page = h.client.get(h.url("/")).send().await.expect("sent");
    assert_eq!(page.status().as_u16(), 303);
    assert_eq!(
        page.headers().get("location").and_then(|v| v.to_str().ok()),
        Some("/login?next=/")
    );
    let api = h.client.get(h.url("/api/me")).send().await.expect("sent");
    assert_eq!(api.status().as_u16(), 401);
    let expired = h
        .client
        .get(h.url("/api/me"))
        .header(
            "cookie",
            format!("boardcast_session={}", session_token("x", "y")),
        )
        .send()
        .await
        .expect("sent");
    assert_eq!(expired.status().as_u16(), 401);

    let get = |path: String| {
        h.client
            .get(h.url(&path))
            .header("cookie", h.cookie())
            .send()
    };
    let rounds: serde_json::Value = get("/api/rounds".into())
        .await
        .expect("sent")
        .json()
        .await
        .expect("json");
    let tournaments: Vec<&str> = rounds
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|r| r["tournament_id"].as_str())
        .collect();
    assert_eq!(tournaments, ["open"]);
    let closed_game = boardcast_game::game_id_for("closed", 1, 1);
    assert_eq!(
        get(format!("/api/games/{closed_game}"))
            .await
            .expect("sent")
            .status()
            .as_u16(),
        403
    );
    assert_eq!(
        get(format!("/games/{closed_game}"))
            .await
            .expect("sent")
            .status()
            .as_u16(),
        403
    );
    assert_eq!(
        get("/tournaments/closed/rounds/1".into())
            .await
            .expect("sent")
            .status()
            .as_u16(),
        403
    );
    assert_eq!(
        get("/api/games/nope".into())
            .await
            .expect("sent")
            .status()
            .as_u16(),
        404
    );

    let page = get(format!("/games/{}", h.game_id)).await.expect("sent");
    assert_eq!(page.status().as_u16(), 200);
    let html = page.text().await.expect("html");
    assert!(
        !html.contains("{{RID}}") && !html.contains("{{CSRF}}"),
        "every placeholder filled"
    );
    assert!(html.contains(CSRF), "the page carries its CSRF value");
    let at: serde_json::Value = get(format!("/api/games/{}/at/1", h.game_id))
        .await
        .expect("sent")
        .json()
        .await
        .expect("json");
    assert_eq!(at["completed_plies"], 0);
    assert_eq!(
        get(format!("/api/games/{}/at/99", h.game_id))
            .await
            .expect("sent")
            .status()
            .as_u16(),
        404
    );
    assert_eq!(
        get(format!("/api/games/{}/at/x", h.game_id))
            .await
            .expect("sent")
            .status()
            .as_u16(),
        400
    );
    // Many requests, one WhoAmI: the answer is cached.
    assert_eq!(
        h.fake.calls("who_am_i"),
        2,
        "one for the valid session, one for the unknown one"
    );
}

#[tokio::test]
async fn failed_logins_are_slowed_down_per_address() {
    let h = Harness::start().await;
    let login = |password: &'static str, origin: Option<String>| {
        let mut request = h.client.post(h.url("/login")).form(&[
            ("user", "ia-smith"),
            ("password", password),
            ("next", "/games/x"),
        ]);
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        request.send()
    };
    let foreign = login("right", Some("https://evil.example".into()))
        .await
        .expect("sent");
    assert_eq!(foreign.status().as_u16(), 403);
    assert_eq!(h.fake.calls("login"), 0);

    for _ in 0..5 {
        let response = login("wrong", Some(format!("http://{}", h.host())))
            .await
            .expect("sent");
        assert_eq!(response.status().as_u16(), 401);
        let text = response.text().await.expect("page");
        assert!(text.contains("wrong user name or password"), "{text}");
    }
    let blocked = login("right", None).await.expect("sent");
    assert_eq!(blocked.status().as_u16(), 429);
    let retry: u64 = blocked
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .expect("Retry-After");
    assert!((1..=30).contains(&retry), "{retry}");
    assert!(
        blocked
            .text()
            .await
            .expect("page")
            .contains("Too many failed logins")
    );
    assert_eq!(
        h.fake.calls("login"),
        5,
        "the blocked attempt was not forwarded"
    );
}

#[tokio::test]
async fn a_login_sets_the_session_cookie() {
    let h = Harness::start().await;
    let response = h
        .client
        .post(h.url("/login"))
        .form(&[
            ("user", "ia-smith"),
            ("password", "right"),
            ("next", "/games/x"),
        ])
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status().as_u16(), 303);
    assert_eq!(
        response
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok()),
        Some("/games/x")
    );
    let cookie = response
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(
        cookie.starts_with(&format!("boardcast_session={};", h.fake.token)),
        "{cookie}"
    );
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let max_age: i64 = cookie
        .split("Max-Age=")
        .nth(1)
        .and_then(|rest| rest.split(';').next())
        .and_then(|v| v.parse().ok())
        .expect("Max-Age");
    assert!((3590..=3600).contains(&max_age), "{cookie}");
    // The identity the login returned is kept: the next page needs no WhoAmI.
    let me = h
        .client
        .get(h.url("/api/me"))
        .header("cookie", h.cookie())
        .send()
        .await
        .expect("sent");
    assert_eq!(me.status().as_u16(), 200);
    assert_eq!(h.fake.calls("who_am_i"), 0);
    // An off-site "next" is never followed.
    let response = h
        .client
        .post(h.url("/login"))
        .form(&[
            ("user", "ia-smith"),
            ("password", "right"),
            ("next", "//evil.example/"),
        ])
        .send()
        .await
        .expect("sent");
    assert_eq!(
        response
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok()),
        Some("/")
    );
}

/// Server-sent events read off a response until `enough` says so (or 5 s pass).
async fn read_events(
    response: &mut reqwest::Response,
    enough: impl Fn(&[(String, String, String)]) -> bool,
) -> Vec<(String, String, String)> {
    let mut buffer = String::new();
    let mut events = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !enough(&events) {
        let chunk = match tokio::time::timeout_at(deadline, response.chunk()).await {
            Ok(Ok(Some(chunk))) => chunk,
            _ => break,
        };
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let (mut kind, mut id, mut data) = (String::new(), String::new(), String::new());
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("event:") {
                    kind = v.trim().to_owned();
                } else if let Some(v) = line.strip_prefix("id:") {
                    id = v.trim().to_owned();
                } else if let Some(v) = line.strip_prefix("data:") {
                    data.push_str(v.trim());
                }
            }
            if !kind.is_empty() {
                events.push((kind, id, data));
            }
        }
    }
    events
}

fn alert_ids(events: &[(String, String, String)]) -> Vec<String> {
    events
        .iter()
        .filter(|(kind, ..)| kind == "alert")
        .map(|(_, id, _)| id.clone())
        .collect()
}

#[tokio::test]
async fn the_live_queue_resumes_from_the_last_event_a_page_saw() {
    let h = Harness::start().await;
    // Moves entered on the game, so that alerts can change at their entries (two each).
    let play = |san: &str| {
        let mut script = h.fake.script.lock().expect("lock");
        script.act(Action::Move(EnterMove { san: san.into() }), san);
        let records = script.records.clone();
        let subject = script.subject();
        drop(script);
        let have = h.games.last_game_seq(&h.game_id).unwrap_or(0) as usize;
        h.fake.publish(&records[have..], &subject);
    };
    for san in ["e4", "e5", "Nf3"] {
        play(san);
    }
    let g = h.game_id.clone();
    h.games.inject_alert(&g, 2, 2, "new");
    h.games.inject_alert(&g, 4, 4, "new");
    h.games.inject_alert(&g, 2, 5, "acknowledged");

    let open = |last: Option<String>| {
        let mut request = h
            .client
            .get(h.url("/events?tournament=open&round=1"))
            .header("cookie", h.cookie());
        if let Some(last) = last {
            request = request.header("last-event-id", last);
        }
        request.send()
    };
    // A first visit: the open alerts, in the order they changed.
    let mut first = open(None).await.expect("sent");
    assert_eq!(first.status().as_u16(), 200);
    let events = read_events(&mut first, |e| alert_ids(e).len() >= 2).await;
    assert_eq!(events[0].0, "hello");
    assert!(
        events
            .iter()
            .any(|(kind, _, data)| kind == "board" && data.contains(&g))
    );
    assert_eq!(alert_ids(&events), [format!("{g}/4/4"), format!("{g}/2/5")]);

    // Live: a change is pushed as it happens (at the entry just recorded).
    play("Nc6");
    h.games.inject_alert(&g, 4, 9, "resolved");
    let events = read_events(&mut first, |e| !alert_ids(e).is_empty()).await;
    assert_eq!(alert_ids(&events), [format!("{g}/4/9")]);
    assert!(
        events.iter().any(|(kind, ..)| kind == "board"),
        "the board's change too"
    );
    drop(first);

    // A page that saw up to 2/2 missed 4/4 (since changed again at 9) and 2/5.
    let mut resumed = open(Some(format!("{g}/2/2"))).await.expect("sent");
    let events = read_events(&mut resumed, |e| alert_ids(e).len() >= 2).await;
    assert_eq!(alert_ids(&events), [format!("{g}/2/5"), format!("{g}/4/9")]);
    drop(resumed);

    // One that saw everything is sent nothing old; an unknown id gets the open alerts.
    let mut current = open(Some(format!("{g}/4/9"))).await.expect("sent");
    let events = read_events(&mut current, |e| e.iter().any(|(k, ..)| k == "board")).await;
    assert!(alert_ids(&events).is_empty(), "{events:?}");
    drop(current);
    let mut unknown = open(Some("nonsense".into())).await.expect("sent");
    let events = read_events(&mut unknown, |e| !alert_ids(e).is_empty()).await;
    assert_eq!(alert_ids(&events), [format!("{g}/2/5")]);

    // A queue of a tournament the arbiter may not read is refused.
    let refused = h
        .client
        .get(h.url("/events?tournament=closed"))
        .header("cookie", h.cookie())
        .send()
        .await
        .expect("sent");
    assert_eq!(refused.status().as_u16(), 403);
}

#[test]
fn clock_values_are_read_as_forms_give_them() {
    use http::{ClockInput, clock_ms};
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
    assert!(http::is_uuid(&http::new_request_id()));
    let id = http::new_request_id();
    assert_eq!(&id[14..15], "4", "version 4: {id}");
    assert!(
        matches!(&id[19..20], "8" | "9" | "a" | "b"),
        "RFC variant: {id}"
    );
}

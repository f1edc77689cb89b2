//! The arbiter service's HTTP side against the real game service: sessions, CSRF and Origin
//! refusals that change nothing, rulings answered with what the log recorded, logins slowed
//! down per address (behind a proxy, per address it forwards), connections capped per address
//! and cut off when silent, pages only of readable tournaments, and a live queue that resumes
//! from the last event a page saw.

mod support;

use std::{net::IpAddr, time::Duration};

use anyhow::{Context as _, bail, ensure};
use boardcast_access::{Grant, Role as AccessRole};
use boardcast_schema::game::v1::GetGameRequest;
use boardcast_testkit::{
    ArbiterService, GameService, TEST_PASSWORD, TestNats, TestUsers, arbiter::ArbiterSession,
};
use serde_json::{Value, json};

/// Boards 1 and 2 of the Arbiters Open (White presses without a move before 2. Ng1 on board 1),
/// and a game of another tournament.
const PGN: &str = "[Event \"Arbiters Open\"]\n[Round \"1.1\"]\n[White \"A\"]\n[Black \"B\"]\n\
    [Result \"*\"]\n\n1. Nf3 Nf6 2. Ng1 Ng8 3. Nf3 Nf6 4. Ng1 Ng8 *\n\n\
    [Event \"Arbiters Open\"]\n[Round \"1.2\"]\n[White \"C\"]\n[Black \"D\"]\n\
    [Result \"*\"]\n\n1. e4 e5 *\n\n\
    [Event \"Closed Event\"]\n[Round \"1.1\"]\n[White \"E\"]\n[Black \"F\"]\n\
    [Result \"*\"]\n\n1. d4 d5 *\n";

const BOARD_1: &str = "arbiters-open-r1-b1";
const BOARD_2: &str = "arbiters-open-r1-b2";
const CLOSED: &str = "closed-event-r1-b1";
/// Arbiter of board 1 of the Arbiters Open only.
const ARBITER: &str = "ia-smith";
/// A well-formed request id.
const RID: &str = "0f8fad5b-d9cb-469f-a165-70867728950e";

struct Hall {
    _nats: TestNats,
    game_service: GameService,
    arbiter: ArbiterService,
}

impl Hall {
    async fn start() -> anyhow::Result<Hall> {
        let nats = TestNats::start()?;
        let game_service = GameService::start(&nats.url())?;
        let arbiter = ArbiterService::start(&nats.url(), &game_service.url())?;
        let token = TestUsers::shared()?.add(
            ARBITER,
            &[Grant {
                tournament: "arbiters-open".into(),
                role: AccessRole::Arbiter,
                boards: vec![1],
            }],
        )?;
        game_service.wait_for_user(&token).await?;
        support::play(
            PGN,
            3,
            &["--incidents", "board=1:press-without-move@ply=3"],
            &nats.url(),
            &game_service.url(),
        )?;
        let js = async_nats::jetstream::new(async_nats::connect(nats.url()).await?);
        support::drained(&js).await?;
        let hall = Hall {
            _nats: nats,
            game_service,
            arbiter,
        };
        // The arbiter service has followed every game to its end.
        let admin = hall.arbiter.login("admin", TEST_PASSWORD).await?;
        for game_id in [BOARD_1, BOARD_2, CLOSED] {
            let last = hall.last_game_seq(game_id).await?;
            let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
            while admin
                .get(&format!("/api/games/{game_id}"))
                .await
                .ok()
                .and_then(|g| g["board"]["last_game_seq"].as_u64())
                != Some(last)
            {
                ensure!(
                    tokio::time::Instant::now() < deadline,
                    "{game_id} not followed"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        Ok(hall)
    }

    async fn last_game_seq(&self, game_id: &str) -> anyhow::Result<u64> {
        Ok(self
            .game_service
            .client()
            .await?
            .get_game(GetGameRequest {
                game_id: game_id.into(),
            })
            .await?
            .into_inner()
            .last_game_seq)
    }

    /// The last entries of the games, as the game service has them.
    async fn logs(&self) -> anyhow::Result<Vec<u64>> {
        let mut seqs = Vec::new();
        for game_id in [BOARD_1, BOARD_2, CLOSED] {
            seqs.push(self.last_game_seq(game_id).await?);
        }
        Ok(seqs)
    }

    fn url(&self, path: &str) -> String {
        self.arbiter.url(path)
    }

    fn origin(&self) -> String {
        self.arbiter.url("")
    }
}

/// An HTTP client that does not follow redirects, from `address`.
fn client_from(address: IpAddr) -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .local_address(address)
        .build()
        .unwrap_or_default()
}

fn client() -> reqwest::Client {
    client_from(IpAddr::from([127, 0, 0, 1]))
}

fn note(request_id: &str, text: &str) -> Value {
    json!({ "request_id": request_id, "action": { "type": "annotation", "text": text } })
}

/// `POST /api/games/{game}/act` with the session's cookie, and the CSRF value and Origin given.
async fn act(
    hall: &Hall,
    session: &ArbiterSession,
    game_id: &str,
    csrf: Option<&str>,
    origin: Option<&str>,
    body: &Value,
) -> anyhow::Result<(u16, Value)> {
    let mut request = client()
        .post(hall.url(&format!("/api/games/{game_id}/act")))
        .header("cookie", session.cookie_header())
        .json(body);
    if let Some(csrf) = csrf {
        request = request.header("x-csrf-token", csrf);
    }
    if let Some(origin) = origin {
        request = request.header("origin", origin);
    }
    let response = request.send().await?;
    let status = response.status().as_u16();
    Ok((status, response.json().await.unwrap_or_default()))
}

fn error_of(body: &Value) -> &str {
    body["error"].as_str().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn posts_without_the_sessions_csrf_value_or_from_another_site_change_nothing()
-> anyhow::Result<()> {
    let hall = Hall::start().await?;
    let session = hall.arbiter.login(ARBITER, TEST_PASSWORD).await?;
    let before = hall.logs().await?;
    let origin = hall.origin();

    let (status, body) = act(
        &hall,
        &session,
        BOARD_1,
        None,
        Some(&origin),
        &note(RID, "x"),
    )
    .await?;
    assert_eq!(status, 403, "{body}");
    assert!(error_of(&body).contains("no CSRF token"), "{body}");

    let guess = Some("a guess");
    let (status, body) = act(&hall, &session, BOARD_1, guess, None, &note(RID, "x")).await?;
    assert_eq!(status, 403, "{body}");
    assert!(error_of(&body).contains("does not match"), "{body}");

    let csrf = Some(session.csrf());
    let foreign = Some("https://evil.example");
    let (status, body) = act(&hall, &session, BOARD_1, csrf, foreign, &note(RID, "x")).await?;
    assert_eq!(status, 403, "{body}");
    assert!(error_of(&body).contains("another site"), "{body}");

    // Another session of the same arbiter has its own value.
    let other = hall.arbiter.login(ARBITER, TEST_PASSWORD).await?;
    let (status, body) = act(&hall, &other, BOARD_1, csrf, None, &note(RID, "x")).await?;
    assert_eq!(status, 403, "{body}");

    // A claim's evaluation is a POST too.
    let response = client()
        .post(hall.url(&format!("/api/games/{BOARD_1}/claim")))
        .header("cookie", session.cookie_header())
        .json(&json!({ "kind": "threefold" }))
        .send()
        .await?;
    assert_eq!(response.status().as_u16(), 403);

    assert_eq!(hall.logs().await?, before, "nothing was recorded");

    // With the session's value, from this site, it is recorded.
    let (status, body) = act(
        &hall,
        &session,
        BOARD_1,
        csrf,
        Some(&origin),
        &note(RID, "fine"),
    )
    .await?;
    assert_eq!(status, 200, "{body}");
    assert_eq!(hall.last_game_seq(BOARD_1).await?, before[0] + 1);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn forms_carry_the_csrf_value_in_a_field() -> anyhow::Result<()> {
    let hall = Hall::start().await?;
    let session = hall.arbiter.login(ARBITER, TEST_PASSWORD).await?;
    let logout = |csrf: &str| {
        client()
            .post(hall.url("/logout"))
            .header("cookie", session.cookie_header())
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("csrf={csrf}"))
            .send()
    };
    let refused = logout("nope").await?;
    assert_eq!(refused.status().as_u16(), 403);
    let text = refused.text().await?;
    assert!(text.contains("does not match"), "{text}");
    let done = logout(session.csrf()).await?;
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
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_ruling_is_recorded_as_the_arbiters_and_answered_with_what_the_log_recorded()
-> anyhow::Result<()> {
    let hall = Hall::start().await?;
    let session = hall.arbiter.login(ARBITER, TEST_PASSWORD).await?;
    let csrf = Some(session.csrf());
    let before = hall.last_game_seq(BOARD_1).await?;
    let body = json!({
        "request_id": RID,
        "action": { "type": "annotation", "text": "scoresheets checked" },
    });
    let (status, answer) = act(&hall, &session, BOARD_1, csrf, None, &body).await?;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["already_recorded"], false);
    let recorded = answer["recorded"].as_array().context("entries")?;
    assert_eq!(recorded.len(), 1, "{answer}");
    assert_eq!(recorded[0]["game_seq"], before + 1);
    assert_eq!(recorded[0]["actor"], ARBITER);
    assert_eq!(recorded[0]["words"], "scoresheets checked");
    assert!(
        answer["message"]
            .as_str()
            .unwrap_or("")
            .starts_with("Recorded:"),
        "{answer}"
    );
    let next = answer["next_request_id"].as_str().unwrap_or("");
    assert!(next.len() == 36 && next != RID, "{answer}");

    // The same form sent again is the same request: nothing is recorded twice.
    let (status, again) = act(&hall, &session, BOARD_1, csrf, None, &body).await?;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["already_recorded"], true, "{again}");
    assert_eq!(hall.last_game_seq(BOARD_1).await?, before + 1);

    // The game service's refusal is shown verbatim: board 2 is not this arbiter's.
    let board_2 = hall.last_game_seq(BOARD_2).await?;
    let other = note("6ba7b810-9dad-41d1-80b4-00c04fd430c8", "x");
    let (status, refused) = act(&hall, &session, BOARD_2, csrf, None, &other).await?;
    assert_eq!(status, 403, "{refused}");
    assert_eq!(refused["code"], "PERMISSION_DENIED");
    assert_eq!(
        refused["error"],
        "ia-smith is not assigned board 2 of tournament \"arbiters-open\""
    );
    assert_eq!(hall.last_game_seq(BOARD_2).await?, board_2);

    // Bad input is a clear 400 and changes nothing.
    for bad in [
        json!({ "request_id": "not-a-uuid", "action": { "type": "annotation", "text": "x" } }),
        json!({ "request_id": RID, "action": { "type": "launch_missiles" } }),
        json!({ "request_id": RID, "action": { "type": "clocks", "white_added": "9:99" } }),
        json!({ "request_id": RID, "action": { "type": "result", "result": "2-0" } }),
        json!({ "request_id": RID, "action": { "type": "annotation", "text": "  " } }),
        json!({ "request_id": RID, "action": { "type": "resume", "reason": " " } }),
        // Refused by the game: it is not over.
        json!({ "request_id": boardcast_kit::client::new_request_id(),
                "action": { "type": "resume", "reason": "flag in error" } }),
    ] {
        let (status, answer) = act(&hall, &session, BOARD_1, csrf, None, &bad).await?;
        assert_eq!(status, 400, "{bad} → {answer}");
        assert!(!error_of(&answer).is_empty(), "{answer}");
    }
    assert_eq!(hall.last_game_seq(BOARD_1).await?, before + 1);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn pages_need_a_session_and_show_only_readable_tournaments() -> anyhow::Result<()> {
    let hall = Hall::start().await?;
    let page = client().get(hall.url("/")).send().await?;
    assert_eq!(page.status().as_u16(), 303);
    assert_eq!(
        page.headers().get("location").and_then(|v| v.to_str().ok()),
        Some("/login?next=/")
    );
    let api = client().get(hall.url("/api/me")).send().await?;
    assert_eq!(api.status().as_u16(), 401);
    // A session signed with another key is no session.
    let forged =
        boardcast_access::SessionKey::from_bytes([9; 32]).issue(&boardcast_access::SessionClaims {
            user: "admin".into(),
            issued_unix_ms: 0,
            expires_unix_ms: i64::MAX / 2,
            csrf: "x".into(),
        });
    let forged = client()
        .get(hall.url("/api/me"))
        .header("cookie", format!("boardcast_session={forged}"))
        .send()
        .await?;
    assert_eq!(forged.status().as_u16(), 401);

    let session = hall.arbiter.login(ARBITER, TEST_PASSWORD).await?;
    let get = |path: String| {
        client()
            .get(hall.url(&path))
            .header("cookie", session.cookie_header())
            .send()
    };
    let rounds: Value = get("/api/rounds".into()).await?.json().await?;
    let tournaments: Vec<&str> = rounds
        .as_array()
        .context("a list")?
        .iter()
        .filter_map(|r| r["tournament_id"].as_str())
        .collect();
    assert_eq!(tournaments, ["arbiters-open"]);
    for path in [
        format!("/api/games/{CLOSED}"),
        format!("/games/{CLOSED}"),
        "/tournaments/closed-event/rounds/1".to_owned(),
        "/events?tournament=closed-event".to_owned(),
    ] {
        assert_eq!(get(path.clone()).await?.status().as_u16(), 403, "{path}");
    }
    assert_eq!(get("/api/games/nope".into()).await?.status().as_u16(), 404);

    let page = get(format!("/games/{BOARD_1}")).await?;
    assert_eq!(page.status().as_u16(), 200);
    let html = page.text().await?;
    assert!(
        !html.contains("{{RID}}") && !html.contains("{{CSRF}}"),
        "every placeholder filled"
    );
    assert!(
        html.contains(session.csrf()),
        "the page carries its CSRF value"
    );
    let at: Value = get(format!("/api/games/{BOARD_1}/at/1"))
        .await?
        .json()
        .await?;
    assert_eq!(at["completed_plies"], 0);
    let status =
        |path: String| async { Ok::<_, anyhow::Error>(get(path).await?.status().as_u16()) };
    assert_eq!(status(format!("/api/games/{BOARD_1}/at/9999")).await?, 404);
    assert_eq!(status(format!("/api/games/{BOARD_1}/at/x")).await?, 400);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn failed_logins_are_slowed_down_per_address() -> anyhow::Result<()> {
    let hall = Hall::start().await?;
    // A second arbiter, whose own logins have not failed.
    let token = TestUsers::shared()?.add(
        "ia-jones",
        &[Grant {
            tournament: "arbiters-open".into(),
            role: AccessRole::Observer,
            boards: Vec::new(),
        }],
    )?;
    hall.game_service.wait_for_user(&token).await?;
    let login = |from: [u8; 4], user: &'static str, password: &'static str, origin: bool| {
        let mut request = client_from(IpAddr::from(from))
            .post(hall.url("/login"))
            .form(&[("user", user), ("password", password), ("next", "/")]);
        if origin {
            request = request.header("origin", hall.origin());
        }
        request.send()
    };
    let foreign = client()
        .post(hall.url("/login"))
        .header("origin", "https://evil.example")
        .form(&[("user", ARBITER), ("password", TEST_PASSWORD)])
        .send()
        .await?;
    assert_eq!(foreign.status().as_u16(), 403);

    for _ in 0..5 {
        let response = login([127, 0, 0, 1], ARBITER, "wrong", true).await?;
        assert_eq!(response.status().as_u16(), 401);
        let text = response.text().await?;
        assert!(text.contains("wrong user name or password"), "{text}");
    }
    // This address waits, whoever it logs in as.
    let blocked = login([127, 0, 0, 1], "ia-jones", TEST_PASSWORD, false).await?;
    assert_eq!(blocked.status().as_u16(), 429);
    let retry: u64 = blocked
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .context("Retry-After")?;
    assert!((1..=30).contains(&retry), "{retry}");
    assert!(blocked.text().await?.contains("Too many failed logins"));
    // Another address does not.
    let other = login([127, 0, 0, 2], "ia-jones", TEST_PASSWORD, false).await?;
    assert_eq!(other.status().as_u16(), 303);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn behind_a_proxy_logins_count_by_forwarded_address_and_connections_are_capped()
-> anyhow::Result<()> {
    // The dashboard (on 127.0.0.1) is trusted by the game service to say whose login it passes
    // on, as the deployment guide sets it up; the proxy in front of it is 127.0.0.3.
    let nats = TestNats::start()?;
    let game_service = boardcast_testkit::GameService::start_with(
        &nats.url(),
        boardcast_testkit::GameServiceOptions {
            args: vec!["--trusted-proxies".into(), "127.0.0.1".into()],
            ..Default::default()
        },
    )?;
    const USER: &str = "ia-behind-proxy";
    let token = TestUsers::shared()?.add(
        USER,
        &[Grant {
            tournament: "arbiters-open".into(),
            role: AccessRole::Observer,
            boards: Vec::new(),
        }],
    )?;
    game_service.wait_for_user(&token).await?;
    let proxy = IpAddr::from([127, 0, 0, 3]);
    let dashboard = ArbiterService::start_with(
        &nats.url(),
        &game_service.url(),
        &[
            "--proxy",
            "127.0.0.3",
            "--max-connections-per-address",
            "2",
            "--header-timeout",
            "2",
        ],
    )?;
    let login = |forwarded_for: &'static str, password: &'static str| {
        client_from(proxy)
            .post(dashboard.url("/login"))
            .header("origin", dashboard.url(""))
            .header("x-forwarded-for", forwarded_for)
            .form(&[("user", USER), ("password", password), ("next", "/")])
            .send()
    };
    // One client behind the proxy fails until it waits ...
    for _ in 0..5 {
        assert_eq!(login("203.0.113.7", "wrong").await?.status().as_u16(), 401);
    }
    assert_eq!(
        login("203.0.113.7", TEST_PASSWORD).await?.status().as_u16(),
        429
    );
    // ... and the others behind the same proxy are not locked out with it.
    assert_eq!(
        login("203.0.113.8", TEST_PASSWORD).await?.status().as_u16(),
        303
    );

    // Two connections from one address, and no more; a proxy's are not counted.
    let local = IpAddr::from([127, 0, 0, 1]);
    let first = support::held_connection_from(local, dashboard.http).await?;
    let second = support::held_connection_from(local, dashboard.http).await?;
    for (_, answer) in [&first, &second] {
        ensure!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }
    let (_, refused) = support::held_connection_from(local, dashboard.http).await?;
    ensure!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    let mut through_proxy = Vec::new();
    for _ in 0..3 {
        let (connection, answer) = support::held_connection_from(proxy, dashboard.http).await?;
        ensure!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        through_proxy.push(connection);
    }
    // A connection that says nothing more is cut off, and its place is free again.
    for (mut connection, _) in [first, second] {
        use tokio::io::AsyncReadExt as _;
        let read =
            tokio::time::timeout(Duration::from_secs(30), connection.read(&mut [0u8; 1])).await?;
        ensure!(matches!(read, Ok(0)) || read.is_err(), "{read:?}");
    }
    let (_, answer) = support::held_connection_from(local, dashboard.http).await?;
    ensure!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_login_sets_a_strict_session_cookie_and_stays_on_this_site() -> anyhow::Result<()> {
    let hall = Hall::start().await?;
    let login = |next: &'static str| {
        client().post(hall.url("/login")).form(&[
            ("user", ARBITER),
            ("password", TEST_PASSWORD),
            ("next", next),
        ])
    };
    let response = login("/games/x").send().await?;
    assert_eq!(response.status().as_u16(), 303);
    let location = |r: &reqwest::Response| {
        r.headers()
            .get("location")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    assert_eq!(location(&response).as_deref(), Some("/games/x"));
    let cookie = response
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(cookie.starts_with("boardcast_session=bcs1."), "{cookie}");
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    // Plain HTTP and no proxy said: a Secure cookie would not come back.
    assert!(!cookie.contains("Secure"), "{cookie}");
    // The cookie lasts as long as the game service's session (12 hours by default).
    let max_age: i64 = cookie
        .split("Max-Age=")
        .nth(1)
        .and_then(|rest| rest.split(';').next())
        .and_then(|v| v.parse().ok())
        .context("Max-Age")?;
    assert!((12 * 3600 - 10..=12 * 3600).contains(&max_age), "{cookie}");
    let session = cookie.split(';').next().unwrap_or_default().to_owned();
    let me: Value = client()
        .get(hall.url("/api/me"))
        .header("cookie", session)
        .send()
        .await?
        .json()
        .await?;
    assert_eq!(me["user"], ARBITER, "{me}");
    // An off-site "next" is never followed.
    for next in [
        "//evil.example/",
        "https://evil.example/",
        "/\\evil.example",
        "/\t/evil.example",
    ] {
        let response = login(next).send().await?;
        assert_eq!(location(&response).as_deref(), Some("/"), "{next}");
    }

    // Behind a proxy that serves HTTPS (its public origin given), the cookie is Secure: never
    // sent over plain HTTP, where anyone on the way could read it.
    let proxied = ArbiterService::start_with(
        &hall._nats.url(),
        &hall.game_service.url(),
        &["--allowed-origin", "https://arbiters.example.org"],
    )?;
    let response = client()
        .post(proxied.url("/login"))
        .header("origin", "https://arbiters.example.org")
        .form(&[
            ("user", ARBITER),
            ("password", TEST_PASSWORD),
            ("next", "/"),
        ])
        .send()
        .await?;
    assert_eq!(response.status().as_u16(), 303);
    let cookie = response
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    assert!(
        cookie.starts_with("boardcast_session=") && cookie.contains("; Secure"),
        "{cookie}"
    );
    Ok(())
}

/// Server-sent events as (event, id, data), read off a response until `enough` says so (or 10 s
/// pass).
async fn read_events(
    response: &mut reqwest::Response,
    enough: impl Fn(&[(String, String, String)]) -> bool,
) -> Vec<(String, String, String)> {
    let mut buffer = String::new();
    let mut events = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
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

/// Every alert's event id (`<game>/<raised at>/<version>`), in the order the alerts last
/// changed, and whether each is still open.
async fn alert_changes(session: &ArbiterSession) -> anyhow::Result<Vec<(String, bool)>> {
    let answer = session.get("/api/alerts?all=true").await?;
    let mut alerts: Vec<(u64, String, bool)> = answer["alerts"]
        .as_array()
        .context("alerts")?
        .iter()
        .map(|a| {
            (
                a["version"].as_u64().unwrap_or_default(),
                a["event_id"].as_str().unwrap_or_default().to_owned(),
                a["status"] != "resolved",
            )
        })
        .collect();
    alerts.sort();
    Ok(alerts.into_iter().map(|(_, id, open)| (id, open)).collect())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_live_queue_resumes_from_the_last_event_a_page_saw() -> anyhow::Result<()> {
    let hall = Hall::start().await?;
    let session = hall.arbiter.login(ARBITER, TEST_PASSWORD).await?;
    let open = |last: Option<String>| {
        let mut request = client()
            .get(hall.url("/events?tournament=arbiters-open&round=1"))
            .header("cookie", session.cookie_header());
        if let Some(last) = last {
            request = request.header("last-event-id", last);
        }
        request.send()
    };
    // The game's alerts: the press in doubt (settled: resolved), the illegal move and the
    // threefold repetition claimable (open).
    let changes = alert_changes(&session).await?;
    let open_now: Vec<String> = changes
        .iter()
        .filter(|(_, open)| *open)
        .map(|(id, _)| id.clone())
        .collect();
    if open_now.len() < 2 || changes.len() < 3 {
        bail!("expected a resolved alert and two open ones: {changes:?}");
    }

    // A first visit: the open alerts, in the order they changed.
    let mut first = open(None).await?;
    assert_eq!(first.status().as_u16(), 200);
    let events = read_events(&mut first, |e| alert_ids(e).len() >= open_now.len()).await;
    assert_eq!(events.first().map(|e| e.0.as_str()), Some("hello"));
    assert!(
        events
            .iter()
            .any(|(kind, _, data)| kind == "board" && data.contains(BOARD_1))
    );
    assert_eq!(alert_ids(&events), open_now);

    // Live: a change is pushed as it happens.
    let raised_at: u64 = open_now[0]
        .split('/')
        .nth(1)
        .context("event id <game>/<raised at>/<version>")?
        .parse()?;
    session
        .post(
            &format!("/api/games/{BOARD_1}/act"),
            &json!({ "request_id": RID, "resolves_alerts": [],
                     "action": { "type": "acknowledge", "alert_game_seq": raised_at } }),
        )
        .await?;
    let events = read_events(&mut first, |e| !alert_ids(e).is_empty()).await;
    let changes = alert_changes(&session).await?;
    let (latest, _) = changes.last().context("changes")?;
    assert_eq!(alert_ids(&events), std::slice::from_ref(latest));
    drop(first);

    // A page that saw up to the first change missed every later one, resolved ones too.
    let mut resumed = open(Some(changes[0].0.clone())).await?;
    let missed: Vec<String> = changes[1..].iter().map(|(id, _)| id.clone()).collect();
    let events = read_events(&mut resumed, |e| alert_ids(e).len() >= missed.len()).await;
    assert_eq!(alert_ids(&events), missed);
    drop(resumed);

    // One that saw everything is sent nothing old; an unknown id gets the open alerts.
    let mut current = open(Some(latest.clone())).await?;
    let events = read_events(&mut current, |e| e.iter().any(|(k, ..)| k == "ready")).await;
    assert!(alert_ids(&events).is_empty(), "{events:?}");
    drop(current);
    let open_now: Vec<String> = changes
        .iter()
        .filter(|(_, open)| *open)
        .map(|(id, _)| id.clone())
        .collect();
    let mut unknown = open(Some("nonsense".into())).await?;
    let events = read_events(&mut unknown, |e| e.iter().any(|(k, ..)| k == "ready")).await;
    assert_eq!(alert_ids(&events), open_now);
    Ok(())
}

/// The dashboard says whether arbiters can use it: the game log followed and the game service
/// answering (logins and rulings go to it). A dashboard whose game service is away says so on
/// `/readyz` (503) and `/healthz`, and is ready once it answers.
#[tokio::test(flavor = "multi_thread")]
async fn the_dashboard_is_ready_only_while_the_game_service_answers() -> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let away = format!("http://127.0.0.1:{}", boardcast_testkit::free_port()?);
    let arbiter = ArbiterService::start(&nats.url(), &away)?;
    // The game log's streams, made by a game service on the hall's NATS; the dashboard's own
    // game service address leads nowhere.
    let _streams = GameService::start(&nats.url())?;
    let readiness = |arbiter: &ArbiterService| {
        let url = arbiter.url("/readyz");
        async move {
            let response = reqwest::get(url).await?;
            let status = response.status().as_u16();
            anyhow::Ok((status, response.json::<Value>().await?))
        }
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let (status, said) = loop {
        let (status, said) = readiness(&arbiter).await?;
        // Asked at least once (the first answer may be "not asked yet").
        if said["game_log"]["state"] == "following"
            && said["game_service"]["unreachable"] != "not asked yet"
        {
            break (status, said);
        }
        ensure!(tokio::time::Instant::now() < deadline, "{said}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(status, 503, "{said}");
    assert!(said["game_service"]["unreachable"].is_string(), "{said}");
    let health: Value = reqwest::get(arbiter.url("/healthz")).await?.json().await?;
    assert_eq!(health["status"], "ok");
    assert!(
        health["game_service"]["unreachable"].is_string(),
        "{health}"
    );

    let hall = Hall::start().await?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (status, said) = readiness(&hall.arbiter).await?;
        if status == 200 {
            assert_eq!(said["game_service"], "answers");
            break;
        }
        ensure!(tokio::time::Instant::now() < deadline, "{said}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}

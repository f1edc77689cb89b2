//! The arbiter dashboard against a running system: a real browser signs in, sees an alert of a
//! simulated game arrive live and rules on it; and the alerts agree across instances and restarts.

mod support;

use std::time::Duration;

use anyhow::{Context as _, bail};
use boardcast_kit::nats_access::Role;
use boardcast_schema::game::v1::game_event::Kind;
use boardcast_testkit::{
    ArbiterService, GameService, TEST_PASSWORD, TestNats,
    browser::{Browser, Page},
    repo_root,
};
use serde_json::{Value, json};

/// A game left unfinished after a repetition: its threefold-repetition alert stays open.
const PGN: &str = "[Event \"Arbiters Open\"]\n[Round \"1.1\"]\n[White \"A\"]\n[Black \"B\"]\n\
                   [Result \"*\"]\n\n1. Nf3 Nf6 2. Ng1 Ng8 3. Nf3 Nf6 4. Ng1 Ng8 *\n";

/// Plays [`PGN`] on one simulated board at full speed, White pressing the clock without a move
/// before 2. Ng1: an illegal move to rule on (Article 7.5.4).
fn simulate(nats_url: &str, game_service: &GameService) -> anyhow::Result<()> {
    support::play(
        PGN,
        1,
        &["--incidents", "board=1:press-without-move@ply=3"],
        nats_url,
        &game_service.url(),
    )
}

/// The actors of the arbiter actions in a game's log, read from the game service.
async fn arbiter_actors(service: &GameService, game_id: &str) -> anyhow::Result<Vec<String>> {
    let mut client = service.client().await?;
    Ok(support::game_events(&mut client, game_id)
        .await?
        .into_iter()
        .filter(|event| matches!(event.kind, Some(Kind::Arbiter(_))))
        .map(|event| event.provenance.map(|p| p.actor).unwrap_or_default())
        .collect())
}

/// Signs in as `admin` through the login page, at a tablet's size; the dashboard is live.
async fn sign_in(browser: &Browser, arbiter: &ArbiterService) -> anyhow::Result<Page> {
    boardcast_testkit::browser::sign_in_to_dashboard(
        browser,
        &arbiter.url("/login"),
        "admin",
        TEST_PASSWORD,
        (1024, 768),
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn an_arbiter_signs_in_sees_an_alert_arrive_and_rules_on_it() -> anyhow::Result<()> {
    let nats = TestNats::start_secured(&[])?;
    let game_service = GameService::start(&nats.url_for(&Role::GameService)?)?;
    let arbiter =
        ArbiterService::start(&nats.url_for(&Role::ArbiterService)?, &game_service.url())?;
    let browser = Browser::launch().await?;
    let mut page = sign_in(&browser, &arbiter).await?;
    assert_eq!(
        page.eval("document.getElementById('who').textContent")
            .await?,
        json!("Test chief arbiter")
    );

    // The games are played with the dashboard open: their alerts arrive as live updates.
    simulate(&nats.url_for(&Role::Simulator)?, &game_service)?;
    let new_alert = "document.querySelector('[data-testid=alert-item]\
                     [data-kind=threefold_available][data-status=new]')";
    page.wait_for(&format!("!!{new_alert}"), Duration::from_secs(30))
        .await?;
    let alert_id = page.eval(&format!("{new_alert}.dataset.alert")).await?;
    let alert_id = alert_id.as_str().context("the alert has no id")?.to_owned();
    let (game_id, _) = alert_id
        .rsplit_once('/')
        .context("alert id <game>/<raised_at>")?;
    let item = format!("document.querySelector('[data-alert=\"{alert_id}\"]')");
    // The round's card counts its one board and its open alerts in words.
    page.wait_for(
        "(t => t.includes('1 board') && !t.includes('1 boards') && /[0-9]+ open alerts?/.test(t))\
         (document.querySelector('[data-testid=round-card]')?.textContent || '')",
        Duration::from_secs(20),
    )
    .await?;

    // Acknowledged through the page, and the queue shows it so once the log does.
    page.eval(&format!(
        "{item}.querySelector('[data-testid=alert-ack]').click(); true"
    ))
    .await?;
    page.wait_for(
        &format!("{item}.dataset.status === 'acknowledged'"),
        Duration::from_secs(20),
    )
    .await?;
    let detail = page
        .eval(&format!(
            "{item}.querySelector('.status-detail').textContent"
        ))
        .await?;
    assert!(
        detail.as_str().unwrap_or_default().contains("by admin"),
        "who acknowledged it is shown: {detail}"
    );

    // The game's page: its timeline in words, the alert among this game's alerts.
    page.eval(&format!(
        "location.href = {}; true",
        json!(format!("/games/{game_id}"))
    ))
    .await?;
    page.wait_for(
        "document.body && document.body.dataset.page === 'game' \
         && document.querySelectorAll('#timeline [data-seq]').length > 0",
        Duration::from_secs(20),
    )
    .await?;
    page.wait_for(
        &format!("!!{item} && {item}.dataset.status === 'acknowledged'"),
        Duration::from_secs(20),
    )
    .await?;

    // A fifty-move claim judged from the log before ruling: too early, so the page says what
    // ruling it incorrect would cost the claimant (Article 9.5).
    page.eval(
        "document.getElementById('claim-kind').value = 'fifty_moves'; \
         document.querySelector('[data-testid=claim-evaluate]').click(); true",
    )
    .await?;
    page.wait_for(
        "!!document.querySelector('[data-testid=claim-penalty]')",
        Duration::from_secs(20),
    )
    .await?;
    let penalty = page
        .eval("document.querySelector('[data-testid=claim-penalty]').textContent")
        .await?;
    assert!(
        penalty.as_str().is_some_and(|text| text
            .starts_with("If you rule the claim incorrect (Article 9.5): ")
            && text.contains("s added to the opponent's clock")),
        "{penalty}"
    );

    // The illegal move's penalty, confirmed from its alert: the page says what was recorded and
    // the alert shows resolved once the log does.
    let illegal = "document.querySelector('[data-testid=alert-item][data-kind=illegal_move]')";
    page.wait_for(
        &format!(
            "!!{illegal} && {illegal}.dataset.status === 'new' \
             && !!document.querySelector('#penalty-entry option:not([value=\"\"])')"
        ),
        Duration::from_secs(20),
    )
    .await?;
    page.eval(&format!(
        "{illegal}.querySelector('[data-testid=alert-rule]').click(); \
         document.querySelector('[data-testid=penalty-confirm]').click(); true"
    ))
    .await?;
    page.wait_for(
        "!document.getElementById('act-confirmation').hidden",
        Duration::from_secs(20),
    )
    .await?;
    let confirmation = page
        .eval("document.getElementById('act-confirmation').textContent")
        .await?;
    assert!(
        confirmation
            .as_str()
            .is_some_and(|text| text.contains("confirmed") && text.contains("(by admin)")),
        "the page shows what was recorded: {confirmation}"
    );
    page.wait_for(
        &format!("{illegal}.dataset.status === 'resolved'"),
        Duration::from_secs(20),
    )
    .await?;

    // The game service recorded the acknowledgement and the ruling as the signed-in arbiter's.
    let actors = arbiter_actors(&game_service, game_id).await?;
    assert_eq!(actors, ["admin", "admin"], "two arbiter actions, by admin");

    let dir = repo_root().join("target/screenshots");
    std::fs::create_dir_all(&dir)?;
    page.screenshot(&dir.join("arbiter-dashboard-tablet.png"))
        .await?;
    // A board's whole position (one long word) wraps in the timeline rather than widen it.
    let widths = page
        .eval(
            "(() => { const t = document.getElementById('timeline'); \
             const fen = [...t.querySelectorAll('[data-seq]')] \
                 .some(e => e.textContent.includes('board shows')); \
             return JSON.stringify([fen, t.scrollWidth, t.clientWidth]); })()",
        )
        .await?;
    let (has_position, scroll_width, client_width): (bool, u32, u32) =
        serde_json::from_str(widths.as_str().unwrap_or_default())?;
    assert!(
        has_position && scroll_width <= client_width,
        "the timeline is as wide as its box ({widths})"
    );

    // On the round's page the chief arbiter gives an arbiter two boards.
    let token = boardcast_testkit::TestUsers::shared()?.add(
        "ia-smith",
        &[boardcast_access::Grant {
            tournament: "arbiters-open".into(),
            role: boardcast_access::Role::Arbiter,
            boards: Vec::new(),
        }],
    )?;
    game_service.wait_for_user(&token).await?;
    page.eval("location.href = '/tournaments/arbiters-open/rounds/1'; true")
        .await?;
    page.wait_for(
        "document.body && document.body.dataset.page === 'round' \
         && !document.getElementById('form-assign').hidden",
        Duration::from_secs(20),
    )
    .await?;
    // Titled with the tournament's name, as on the list of rounds.
    page.wait_for(
        "document.getElementById('round-title').textContent === 'Arbiters Open · round 1'",
        Duration::from_secs(20),
    )
    .await?;
    page.eval(
        "document.getElementById('assign-user').value = 'ia-smith'; \
         document.getElementById('assign-boards').value = '1-2'; \
         document.querySelector('[data-testid=assign-submit]').click(); true",
    )
    .await?;
    page.wait_for(
        "document.querySelector('[data-testid=assignment][data-user=ia-smith]')\
         ?.dataset.boards === '1,2'",
        Duration::from_secs(20),
    )
    .await?;
    let message = page
        .eval("document.getElementById('assign-message').textContent")
        .await?;
    assert_eq!(
        message,
        json!("Recorded: ia-smith rules on boards 1-2 of arbiters-open now.")
    );
    Ok(())
}

/// The alerts an instance lists, everything included.
async fn all_alerts(
    session: &boardcast_testkit::arbiter::ArbiterSession,
) -> anyhow::Result<Vec<Value>> {
    let answer = session.get("/api/alerts?all=true").await?;
    let mut alerts = answer["alerts"]
        .as_array()
        .context("alerts")?
        .iter()
        .map(|a| {
            let mut a = a.clone();
            // Where this instance is in its stream is its own business.
            if let Some(a) = a.as_object_mut() {
                a.remove("event_id");
            }
            a
        })
        .collect::<Vec<_>>();
    alerts.sort_by_key(|a| (a["game_id"].to_string(), a["raised_at"].as_u64()));
    Ok(alerts)
}

/// Waits until an instance's alert list is `expected`.
async fn wait_for_alerts(
    session: &boardcast_testkit::arbiter::ArbiterSession,
    expected: &[Value],
) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let alerts = all_alerts(session).await;
        match alerts {
            Ok(alerts) if alerts == expected => return Ok(()),
            Ok(alerts) if tokio::time::Instant::now() > deadline => {
                assert_eq!(alerts, expected, "the instances list the same alerts");
            }
            _ if tokio::time::Instant::now() > deadline => bail!("no alerts: {alerts:?}"),
            _ => {}
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn alerts_survive_a_restart_and_agree_across_instances() -> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let game_service = GameService::start(&nats.url())?;
    let mut a = ArbiterService::start(&nats.url(), &game_service.url())?;
    simulate(&nats.url(), &game_service)?;
    let session = a.login("admin", TEST_PASSWORD).await?;

    // Instance A has followed the whole log (every observation decided, every entry read): a new
    // alert to acknowledge.
    support::drained(&async_nats::jetstream::new(
        async_nats::connect(nats.url()).await?,
    ))
    .await?;
    let game_id = "arbiters-open-r1-b1";
    let last = game_service
        .client()
        .await?
        .get_game(boardcast_schema::game::v1::GetGameRequest {
            game_id: game_id.into(),
        })
        .await?
        .into_inner()
        .last_game_seq;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while session
        .get(&format!("/api/games/{game_id}"))
        .await
        .ok()
        .and_then(|g| g["board"]["last_game_seq"].as_u64())
        != Some(last)
    {
        if tokio::time::Instant::now() > deadline {
            bail!("instance A never followed {game_id} to entry {last}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let alert = loop {
        let alerts = all_alerts(&session).await?;
        if let Some(alert) = alerts.iter().find(|a| a["status"] == "new") {
            break alert.clone();
        }
        if tokio::time::Instant::now() > deadline {
            bail!("no new alert after the games: {alerts:?}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let game_id = alert["game_id"].as_str().context("game_id")?;
    let raised_at = alert["raised_at"].as_u64().context("raised_at")?;
    let request_id = session.request_id().await?;
    session
        .post(
            &format!("/api/games/{game_id}/act"),
            &json!({
                "request_id": request_id,
                "resolves_alerts": [],
                "action": { "type": "acknowledge", "alert_game_seq": raised_at },
            }),
        )
        .await?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let before = loop {
        let alerts = all_alerts(&session).await?;
        let acknowledged = alerts.iter().any(|a| {
            a["game_id"] == game_id && a["raised_at"] == raised_at && a["status"] == "acknowledged"
        });
        if acknowledged {
            break alerts;
        }
        if tokio::time::Instant::now() > deadline {
            bail!("the acknowledgement never showed: {alerts:?}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };

    // Each alert once, the acknowledged one acknowledged by admin.
    let mut keys: Vec<(String, u64, String)> = before
        .iter()
        .map(|a| {
            (
                a["game_id"].as_str().unwrap_or_default().to_owned(),
                a["raised_at"].as_u64().unwrap_or_default(),
                a["kind"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let count = keys.len();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), count, "each alert exactly once: {before:?}");
    let acknowledged = before
        .iter()
        .find(|a| a["game_id"] == game_id && a["raised_at"] == raised_at)
        .context("the acknowledged alert")?;
    assert_eq!(acknowledged["status_by"], "admin");

    // A second instance, and the first one restarted, list the same alerts.
    let b = ArbiterService::start(&nats.url(), &game_service.url())?;
    assert!(a.process.stop(Duration::from_secs(30))?, "instance A stops");
    drop(a);
    a = ArbiterService::start(&nats.url(), &game_service.url())?;
    wait_for_alerts(&session.on(&b), &before).await?;
    wait_for_alerts(&session.on(&a), &before).await?;
    Ok(())
}

/// Serves `page` to every request on a free local port, as another site would: returns the
/// port.
async fn serve_page(page: String) -> anyhow::Result<u16> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let page = page.clone();
            tokio::spawn(async move {
                // The request is not looked at; its head is read so that the browser sees an answer.
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\n\
                     content-length: {}\r\nconnection: close\r\n\r\n{page}",
                    page.len()
                );
                let _ = socket.write_all(response.as_bytes()).await;
            });
        }
    });
    Ok(port)
}

/// The request ids the forged posts use: well-formed, so that only the guards stop them.
const FORGED_BY_FETCH: &str = "0f0f0f0f-0f0f-4f0f-8f0f-0f0f0f0f0f0f";
const FORGED_BY_FORM: &str = "0e0e0e0e-0e0e-4e0e-8e0e-0e0e0e0e0e0e";

/// What a page of another site does to a signed-in arbiter: a script posts a ruling with the
/// arbiter's cookie (a no-cors fetch, the body JSON sent as text), then a form does the same
/// by navigating there.
fn forging_page(arbiter: &ArbiterService, game_id: &str) -> String {
    let act = arbiter.url(&format!("/api/games/{game_id}/act"));
    let fetched = json!({
        "request_id": FORGED_BY_FETCH, "resolves_alerts": [],
        "action": { "type": "resignation", "side": "white" },
    });
    // A text/plain form sends `name=value`: the name opens the JSON, the value closes it.
    let name = format!(
        r#"{{"request_id":"{FORGED_BY_FORM}","resolves_alerts":[],"action":{{"type":"annotation","text":""#
    );
    format!(
        "<!doctype html><html><body><h1>Free chess puzzles</h1>\
         <form id=f method=post enctype=text/plain action='{act}'>\
         <input type=hidden name='{name}' value='forged\"}}}}'></form>\
         <script>fetch({act:?}, {{ method: 'POST', mode: 'no-cors', credentials: 'include', \
         headers: {{ 'content-type': 'text/plain' }}, body: {body} }})\
         .catch(() => null).finally(() => document.getElementById('f').submit());</script>\
         </body></html>",
        act = act,
        body = json!(fetched.to_string()),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_forged_cross_site_post_is_refused_and_changes_nothing() -> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let game_service = GameService::start(&nats.url())?;
    let arbiter = ArbiterService::start(&nats.url(), &game_service.url())?;
    simulate(&nats.url(), &game_service)?;
    let game_id = "arbiters-open-r1-b1";
    let browser = Browser::launch().await?;
    let mut page = sign_in(&browser, &arbiter).await?;
    let session = arbiter.login("admin", TEST_PASSWORD).await?;
    let state = |game: Value| {
        json!([
            game["board"]["last_game_seq"],
            game["board"]["result"],
            game["timeline"].as_array().map(Vec::len)
        ])
    };
    // Followed to the end of the game's log.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let mut before;
    loop {
        before = session.get(&format!("/api/games/{game_id}")).await;
        if let Ok(game) = &before
            && game["board"]["completed_plies"] == 8
        {
            break;
        }
        if tokio::time::Instant::now() > deadline {
            bail!("the game never showed its 8 plies: {before:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let before = state(before?);
    let log_before = arbiter_actors(&game_service, game_id).await?;

    // From the same site on another port (the cookie goes along: only the Origin and the CSRF
    // value stop it), and from another site (localhost is not 127.0.0.1: no cookie either).
    let port = serve_page(forging_page(&arbiter, game_id)).await?;
    for host in ["127.0.0.1", "localhost"] {
        // From a blank page, so that the wait below cannot be met by the previous answer.
        page.eval("location.href = 'about:blank'; true").await?;
        page.wait_for("location.href === 'about:blank'", Duration::from_secs(20))
            .await?;
        page.eval(&format!("location.href = 'http://{host}:{port}/'; true"))
            .await?;
        page.wait_for(
            &format!(
                "location.href.startsWith({}) && document.readyState === 'complete'",
                json!(arbiter.url("/api/"))
            ),
            Duration::from_secs(20),
        )
        .await?;
        let answer = page.eval("document.body.innerText").await?;
        let answer = answer.as_str().unwrap_or_default();
        assert!(answer.contains("refused"), "{host}: {answer}");
    }

    // Nothing was recorded: the game and its log are as they were.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = state(session.get(&format!("/api/games/{game_id}")).await?);
    assert_eq!(after, before);
    assert_eq!(arbiter_actors(&game_service, game_id).await?, log_before);
    let mut client = game_service.client().await?;
    let events = support::game_events(&mut client, game_id).await?;
    assert!(
        events
            .iter()
            .all(|e| e.provenance.as_ref().is_none_or(
                |p| ![FORGED_BY_FETCH, FORGED_BY_FORM].contains(&p.request_id.as_str())
            )),
        "no forged request in the log"
    );
    Ok(())
}

/// Three games of round 1 of "Deputies Open", each repeating its position: a threefold alert on
/// every board.
const THREE_BOARDS: &str = "[Event \"Deputies Open\"]\n[Round \"1.1\"]\n[White \"A\"]\n\
    [Black \"B\"]\n[Result \"*\"]\n\n1. Nf3 Nf6 2. Ng1 Ng8 3. Nf3 Nf6 4. Ng1 Ng8 *\n\n\
    [Event \"Deputies Open\"]\n[Round \"1.2\"]\n[White \"C\"]\n[Black \"D\"]\n[Result \"*\"]\n\n\
    1. Nc3 Nc6 2. Nb1 Nb8 3. Nc3 Nc6 4. Nb1 Nb8 *\n\n\
    [Event \"Deputies Open\"]\n[Round \"1.3\"]\n[White \"E\"]\n[Black \"F\"]\n[Result \"*\"]\n\n\
    1. Nh3 Nh6 2. Ng1 Ng8 3. Nh3 Nh6 4. Ng1 Ng8 *\n";

#[tokio::test(flavor = "multi_thread")]
async fn a_deputy_sees_their_boards_alerts_and_the_round_shows_who_rules_where()
-> anyhow::Result<()> {
    use boardcast_access::{Grant, Role as AccessRole};
    let nats = TestNats::start_secured(&[])?;
    let game_service = GameService::start(&nats.url_for(&Role::GameService)?)?;
    let arbiter =
        ArbiterService::start(&nats.url_for(&Role::ArbiterService)?, &game_service.url())?;
    let users = boardcast_testkit::TestUsers::shared()?;
    let arbiter_of = |boards: &[u32]| {
        [Grant {
            tournament: "deputies-open".into(),
            role: AccessRole::Arbiter,
            boards: boards.to_vec(),
        }]
    };
    let deputy = users.add("ia-deputy", &arbiter_of(&[2]))?;
    let idle = users.add("ia-idle", &arbiter_of(&[]))?;
    game_service.wait_for_user(&deputy).await?;
    game_service.wait_for_user(&idle).await?;
    support::play(
        THREE_BOARDS,
        3,
        &[],
        &nats.url_for(&Role::Simulator)?,
        &game_service.url(),
    )?;

    let browser = Browser::launch().await?;
    let mut page = boardcast_testkit::browser::sign_in_to_dashboard(
        &browser,
        &arbiter.url("/login"),
        "ia-deputy",
        TEST_PASSWORD,
        (1024, 768),
    )
    .await?;
    page.eval("location.href = '/tournaments/deputies-open/rounds/1'; true")
        .await?;
    // Every board's alert is in the page; the deputy's queue shows board 2's only.
    let items =
        "[...document.querySelectorAll('[data-testid=alert-item][data-kind=threefold_available]')]";
    page.wait_for(
        &format!(
            "document.body && document.body.dataset.page === 'round' \
             && new Set({items}.map(i => i.querySelector('.where').textContent.split(' ·')[0])).size === 3 \
             && document.getElementById('only-mine').checked"
        ),
        Duration::from_secs(30),
    )
    .await?;
    let shown = format!(
        "JSON.stringify({items}.filter(i => getComputedStyle(i).display !== 'none') \
         .map(i => i.querySelector('.where').textContent.split(' ·')[0]))"
    );
    let visible: Vec<String> =
        serde_json::from_str(page.eval(&shown).await?.as_str().context("a list")?)?;
    assert!(
        !visible.is_empty() && visible.iter().all(|b| b == "Board 2"),
        "{visible:?}"
    );
    const COUNT: &str = "Number(document.getElementById('queue-count').textContent)";
    let mine = page.eval(COUNT).await?;
    // Asked for, every board's.
    page.eval("document.getElementById('only-mine').click(); true")
        .await?;
    let visible: Vec<String> =
        serde_json::from_str(page.eval(&shown).await?.as_str().context("a list")?)?;
    assert!(visible.iter().any(|b| b == "Board 1") && visible.iter().any(|b| b == "Board 3"));
    assert!(
        page.eval(COUNT).await?.as_u64() > mine.as_u64(),
        "the count follows the filter"
    );

    // The round's arbiters: the users file's boards, and the boards nobody but the chief
    // arbiter rules on.
    page.wait_for(
        "document.querySelector('[data-testid=assignment][data-user=ia-deputy]')?.dataset.boards === '2' \
         && !document.getElementById('coverage-uncovered').hidden",
        Duration::from_secs(20),
    )
    .await?;
    let deputy_line = page
        .eval("document.querySelector('[data-testid=assignment][data-user=ia-deputy]').textContent")
        .await?;
    assert!(
        deputy_line
            .as_str()
            .is_some_and(|t| t.contains("boards 2") && t.contains("(users file)")),
        "{deputy_line}"
    );
    assert_eq!(
        page.eval("document.getElementById('coverage-uncovered').textContent")
            .await?,
        json!(
            "No arbiter rules on boards 1, 3 of this round: only the chief arbiter can rule there."
        )
    );

    // The chief arbiter gives ia-idle boards 2-3: board 2 is ruled on twice, board 1 by nobody.
    let chief = arbiter.login("admin", TEST_PASSWORD).await?;
    chief
        .post(
            "/api/tournaments/deputies-open/assignments",
            &json!({ "request_id": chief.request_id().await?, "user": "ia-idle", "boards": "2-3" }),
        )
        .await?;
    let listed = chief
        .get("/api/tournaments/deputies-open/assignments?round=1")
        .await?;
    assert_eq!(listed["coverage"]["uncovered"], json!([1]));
    assert_eq!(
        listed["coverage"]["shared"],
        json!([{ "board": 2, "users": ["ia-deputy", "ia-idle"] }])
    );
    let idle_entry = listed["arbiters"]
        .as_array()
        .context("arbiters")?
        .iter()
        .find(|a| a["user"] == "ia-idle")
        .context("ia-idle listed")?;
    assert_eq!(idle_entry["boards"], json!([2, 3]));
    assert_eq!(idle_entry["assignment"]["assigned_by"], "admin");
    page.eval("location.reload(); true").await?;
    page.wait_for(
        "document.getElementById('coverage-shared')?.textContent === \
         'Ruled on by more than one arbiter: board 2 (ia-deputy, ia-idle).'",
        Duration::from_secs(20),
    )
    .await?;

    // An observer is not shown who rules where.
    let observer = users.add(
        "ob-deputies",
        &[Grant {
            tournament: "deputies-open".into(),
            role: AccessRole::Observer,
            boards: Vec::new(),
        }],
    )?;
    game_service.wait_for_user(&observer).await?;
    let observing = arbiter.login("ob-deputies", TEST_PASSWORD).await?;
    let listed = observing
        .get("/api/tournaments/deputies-open/assignments?round=1")
        .await?;
    assert_eq!(
        (&listed["arbiters"], &listed["coverage"]),
        (&Value::Null, &Value::Null)
    );
    Ok(())
}

//! The public broadcast service under abuse, every part a real process: made-up rounds and idle
//! connections cost little while a real viewer gets every move; connections past the cap are
//! answered 503; a client that sends no headers is cut off; a big WebSocket message is refused;
//! nothing public changes with moves during a delay.

mod support;

use std::{
    collections::BTreeMap,
    io::{Read as _, Write as _},
    sync::{Arc, Mutex},
    time::Duration,
};

use anyhow::Context as _;
use boardcast_testkit::{BroadcastService, GameService, TestNats, program};
use futures::{SinkExt as _, StreamExt as _};
use support::BOARDS;

/// The service's resident memory now, in kB.
fn resident_kb(pid: u32) -> anyhow::Result<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))?
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .context("no VmRSS")
}

/// The six short games at `speed`, set up on `game_service`, played in the background (the
/// score file lives as long as the run).
fn simulate(
    speed: &str,
    nats: &str,
    game_service: &str,
) -> anyhow::Result<(std::process::Child, tempfile::NamedTempFile)> {
    let pgn = support::write_pgn()?;
    let child = std::process::Command::new(program("boardcast")?)
        .env("BOARDCAST_TOKEN", boardcast_testkit::admin_token())
        .arg("simulate")
        .arg("--pgn")
        .arg(pgn.path())
        .args(["--boards", &BOARDS.to_string(), "--speed", speed])
        .args(["--nats", nats, "--game-service", game_service])
        .stdout(std::process::Stdio::null())
        .spawn()?;
    Ok((child, pgn))
}

/// The round the six games are played in, once the broadcast service shows it.
async fn shown_round(broadcast: &BroadcastService) -> anyhow::Result<String> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let games: serde_json::Value = reqwest::get(broadcast.url("/api/games"))
            .await?
            .json()
            .await?;
        if let Some(game) = games.as_array().and_then(|g| g.first()) {
            return Ok(format!(
                "/tournaments/{}/rounds/{}",
                game["tournament_id"].as_str().context("a tournament")?,
                game["round"]
            ));
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the round was never shown"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn made_up_rounds_and_idle_connections_cost_little_and_a_viewer_gets_every_move()
-> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let game_service = GameService::start(&nats.url())?;
    let broadcast = BroadcastService::start(&nats.url())?;
    let pid = broadcast.process.pid().context("the service's pid")?;
    let (mut boards, _score) = simulate("20", &nats.url(), &game_service.url())?;
    let round = shown_round(&broadcast).await?;

    // A real viewer, reading every update.
    let mut viewer = reqwest::get(broadcast.url(&format!("{round}/updates"))).await?;
    assert_eq!(viewer.status(), 200);
    // Each game's moves as the viewer last saw them.
    let seen: Arc<Mutex<BTreeMap<String, Vec<String>>>> = Arc::default();
    let viewing = tokio::spawn({
        let seen = seen.clone();
        async move {
            let mut events = support::SseEvents::default();
            let mut games = support::LiveGames::default();
            while let Ok(Some(chunk)) = viewer.chunk().await {
                for event in events.events(&chunk) {
                    if let Ok(support::Taken::Game(id)) = games.take(&event.name, &event.data)
                        && let Some(moves) = games.game(&id).and_then(|g| g.get("moves"))
                    {
                        let moves = serde_json::from_value(moves.clone()).unwrap_or_default();
                        seen.lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .insert(id, moves);
                    }
                }
            }
        }
    });
    let before = resident_kb(pid)?;

    // 20,000 requests for rounds that do not exist, 200 at a time: each a 404, nothing kept.
    let http = reqwest::Client::new();
    let base = broadcast.url("");
    let refused = futures::stream::iter(0..20_000)
        .map(|n| {
            let (http, base) = (http.clone(), base.clone());
            async move {
                let url = format!("{base}/tournaments/made-up-{n}/rounds/{n}/updates");
                http.get(url).send().await.map(|r| r.status())
            }
        })
        .buffer_unordered(200)
        .filter(|status| futures::future::ready(matches!(status, Ok(s) if *s == 404)))
        .count()
        .await;
    assert_eq!(refused, 20_000, "every made-up round is a 404");
    // 1,000 connections that never send a request.
    let idle = (0..1000)
        .map(|_| std::net::TcpStream::connect(broadcast.http))
        .collect::<Result<Vec<_>, _>>()?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = resident_kb(pid)?;
    eprintln!(
        "resident memory {} MB before, {} MB after 20,000 made-up rounds with 1,000 idle \
         connections open",
        before / 1024,
        after / 1024
    );
    assert!(
        after < before + 50 * 1024,
        "grew by {} MB",
        (after.saturating_sub(before)) / 1024
    );
    drop(idle);

    // The games end; the viewer saw each as the round shows it.
    let finished = tokio::task::spawn_blocking(move || boards.wait()).await??;
    assert!(finished.success(), "boardcast simulate failed: {finished}");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let shown = loop {
        let round: serde_json::Value = reqwest::get(broadcast.url(&format!("{round}.json")))
            .await?
            .json()
            .await?;
        let games = round["games"].as_array().cloned().unwrap_or_default();
        if games.len() == BOARDS && games.iter().all(|g| g["result"] != "*") {
            break games;
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the games did not all end"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    tokio::time::sleep(Duration::from_secs(1)).await;
    viewing.abort();
    let seen = seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
    for game in &shown {
        let id = game["game_id"].as_str().context("an id")?;
        let moves: Vec<String> = serde_json::from_value(game["moves"].clone())?;
        assert_eq!(seen.get(id), Some(&moves), "the viewer's last view of {id}");
    }
    Ok(())
}

/// A connection that was answered once and is kept alive, sending nothing more.
fn held_connection(address: std::net::SocketAddr) -> anyhow::Result<std::net::TcpStream> {
    let mut connection = std::net::TcpStream::connect(address)?;
    connection.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")?;
    connection.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut answer = Vec::new();
    let mut buffer = [0u8; 512];
    // `/healthz` answers "ok": the response ends with it.
    while !answer.ends_with(b"\r\n\r\nok") {
        let n = connection.read(&mut buffer)?;
        anyhow::ensure!(
            n > 0,
            "closed before its answer: {}",
            String::from_utf8_lossy(&answer)
        );
        answer.extend_from_slice(&buffer[..n]);
    }
    anyhow::ensure!(
        answer.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&answer)
    );
    Ok(connection)
}

#[tokio::test(flavor = "multi_thread")]
async fn connections_past_the_cap_are_answered_503_and_silent_ones_are_cut_off()
-> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let _game_service = GameService::start(&nats.url())?;
    let broadcast = BroadcastService::start_with(
        &nats.url(),
        &["--max-connections", "20", "--header-timeout", "5"],
    )?;
    // Twenty connections, each admitted (it was answered) and kept alive without a next request.
    let idle = (0..20)
        .map(|_| held_connection(broadcast.http))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut one_more = std::net::TcpStream::connect(broadcast.http)?;
    one_more.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")?;
    one_more.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut answer = Vec::new();
    let read = one_more.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.starts_with("HTTP/1.1 503") && answer.contains("too many connections"),
        "{read:?}: {answer}"
    );
    let answer = reqwest::get(broadcast.url("/healthz")).await?;
    assert_eq!(answer.status(), 503);

    // Each idle connection is closed by the service once its next request's headers are overdue.
    for mut connection in idle {
        connection.set_read_timeout(Some(Duration::from_secs(30)))?;
        let mut byte = [0u8; 1];
        let read = connection.read(&mut byte);
        assert!(
            matches!(read, Ok(0)) || read.is_err(),
            "closed by the service: {read:?}"
        );
    }
    // Their places are free again.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let status = reqwest::get(broadcast.url("/healthz")).await?.status();
        if status == 200 {
            break;
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "still refused: {status}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // A connection that never sends a request is cut off, and one whose request starts and
    // never finishes its headers.
    let mut silent = std::net::TcpStream::connect(broadcast.http)?;
    silent.set_read_timeout(Some(Duration::from_secs(30)))?;
    let read = silent.read(&mut [0u8; 1]);
    assert!(matches!(read, Ok(0)) || read.is_err(), "{read:?}");
    let mut slow = std::net::TcpStream::connect(broadcast.http)?;
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")?;
    slow.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut answer = Vec::new();
    let read = slow.read_to_end(&mut answer);
    assert!(
        read.is_err() || !String::from_utf8_lossy(&answer).contains("200 OK"),
        "a request whose headers never end is not served: {}",
        String::from_utf8_lossy(&answer)
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn one_address_has_its_share_of_connections_and_a_proxy_more() -> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let _game_service = GameService::start(&nats.url())?;
    let broadcast = BroadcastService::start_with(
        &nats.url(),
        &["--max-connections-per-address", "2", "--proxy", "127.0.0.3"],
    )?;
    let script = std::net::IpAddr::from([127, 0, 0, 1]);
    let mut held = Vec::new();
    for _ in 0..2 {
        let (connection, answer) = support::held_connection_from(script, broadcast.http).await?;
        anyhow::ensure!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        held.push(connection);
    }
    let (_, refused) = support::held_connection_from(script, broadcast.http).await?;
    anyhow::ensure!(
        refused.starts_with("HTTP/1.1 503") && refused.contains("too many connections"),
        "{refused}"
    );
    // Another viewer is served, and the proxy in front with more than the share.
    let (_, other) = support::held_connection_from([127, 0, 0, 2].into(), broadcast.http).await?;
    anyhow::ensure!(other.starts_with("HTTP/1.1 200"), "{other}");
    for _ in 0..4 {
        let (connection, answer) =
            support::held_connection_from([127, 0, 0, 3].into(), broadcast.http).await?;
        anyhow::ensure!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        held.push(connection);
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_big_websocket_message_from_a_viewer_is_refused() -> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let game_service = GameService::start(&nats.url())?;
    let broadcast = BroadcastService::start(&nats.url())?;
    support::play(support::PGN, BOARDS, &[], &nats.url(), &game_service.url())?;
    let round = shown_round(&broadcast).await?;
    let url = format!("ws://{}{round}/ws", broadcast.http);
    let (mut socket, _) = tokio_tungstenite::connect_async(&url).await?;
    let big = "x".repeat(64 << 20);
    // Refused while it is sent, or answered with a close: never read whole.
    let sent = socket
        .send(tokio_tungstenite::tungstenite::Message::Text(big.into()))
        .await;
    if sent.is_ok() {
        let ended = tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                match socket.next().await {
                    None | Some(Err(_)) => return,
                    Some(Ok(tokio_tungstenite::tungstenite::Message::Close(_))) => return,
                    Some(Ok(_)) => {}
                }
            }
        })
        .await;
        assert!(ended.is_ok(), "the connection was not closed");
    }
    // The service goes on serving.
    let round_json = reqwest::get(broadcast.url(&format!("{round}.json"))).await?;
    assert_eq!(round_json.status(), 200);
    Ok(())
}

/// Every public route's status and body.
async fn public_answers(
    broadcast: &BroadcastService,
    round: &str,
) -> anyhow::Result<Vec<(String, u16, String)>> {
    let mut answers = Vec::new();
    for path in [
        "/".to_owned(),
        "/healthz".to_owned(),
        "/readyz".to_owned(),
        "/metrics".to_owned(),
        "/api/games".to_owned(),
        "/api/push".to_owned(),
        format!("{round}.pgn"),
        format!("{round}.json"),
        format!("{round}/lichess.pgn"),
        format!("{round}/lichess.pgn?boards=1-3"),
        format!("{round}/updates"),
        format!("{round}/live"),
    ] {
        let response = reqwest::get(broadcast.url(&path)).await?;
        let status = response.status().as_u16();
        answers.push((path, status, response.text().await?));
    }
    Ok(answers)
}

#[tokio::test(flavor = "multi_thread")]
async fn nothing_public_changes_with_moves_during_a_delay() -> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let game_service = GameService::start(&nats.url())?;
    let broadcast = BroadcastService::start_with(&nats.url(), &["--delay", "10"])?;
    broadcast.wait_ready(Duration::from_secs(30)).await?;
    // The round of the six games (their event is "Log Open", round 1).
    let round = "/tournaments/log-open/rounds/1";
    let before = public_answers(&broadcast, round).await?;
    support::play(support::PGN, BOARDS, &[], &nats.url(), &game_service.url())?;
    let js = async_nats::jetstream::new(async_nats::connect(nats.url()).await?);
    support::drained(&js).await?;
    // The games are in the log; the broadcast service has folded them.
    let log = js
        .get_stream(boardcast_kit::nats::GAMES_STREAM)
        .await?
        .get_info()
        .await?
        .state
        .last_sequence;
    assert!(log > 0);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = public_answers(&broadcast, round).await?;
    assert_eq!(before, after, "a public answer changed with the moves");
    Ok(())
}

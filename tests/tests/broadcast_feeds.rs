//! The broadcast service's feeds with every part a real process: simulated boards, NATS, the game
//! service and the broadcast service. The feeds equal the source games; the organiser's delay
//! holds back every endpoint (PGN, JSON, server-sent events, WebSocket, NATS feed subjects),
//! raising it takes nothing back and lowering it releases what is due; a restart changes no
//! output; the lichess push delivers the round to a local HTTP server standing in for lichess.

mod support;

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use anyhow::{Context as _, bail};
use boardcast_rules::pgn::{PgnGame, read_games};
use boardcast_schema::game::v1::game_event::Kind;
use boardcast_testkit::{BroadcastService, GameService, TestNats, program, repo_root};
use futures::StreamExt as _;

const TOURNAMENT: &str = "london-chess-classic-2016";

/// Round 9's first games with the tags a pairing gives: titles, FIDE ids, federations.
fn round_nine(boards: usize) -> anyhow::Result<Vec<PgnGame>> {
    let text = std::fs::read_to_string(repo_root().join("data/london-classic-2016.pgn"))?;
    let pairings: BTreeMap<&str, (&str, &str)> = [
        ("So, Wesley", ("5202213", "USA")),
        ("Vachier-Lagrave, Maxime", ("623539", "FRA")),
        ("Caruana, Fabiano", ("2020009", "USA")),
        ("Giri, Anish", ("24116068", "NED")),
        ("Aronian, Levon", ("13300474", "ARM")),
        ("Nakamura, Hikaru", ("2016192", "USA")),
        ("Kramnik, Vladimir", ("4101588", "RUS")),
        ("Anand, Viswanathan", ("5000017", "IND")),
    ]
    .into_iter()
    .collect();
    let mut games: Vec<PgnGame> = read_games(&text)?.into_iter().take(boards).collect();
    for game in &mut games {
        for side in ["White", "Black"] {
            let name = game.tag(side).unwrap_or_default().to_owned();
            let (fide_id, federation) = pairings.get(name.as_str()).copied().unwrap_or(("", ""));
            game.tags.push((format!("{side}Title"), "GM".into()));
            game.tags.push((format!("{side}FideId"), fide_id.into()));
            game.tags.push((format!("{side}Fed"), federation.into()));
        }
    }
    Ok(games)
}

fn write(games: &[PgnGame]) -> anyhow::Result<tempfile::NamedTempFile> {
    let file = tempfile::NamedTempFile::new()?;
    let text: String = games.iter().map(boardcast_rules::pgn::write_game).collect();
    std::fs::write(file.path(), text)?;
    Ok(file)
}

fn simulate(
    pgn: &std::path::Path,
    boards: usize,
    speed: &str,
    nats: &str,
    game_service: &str,
) -> anyhow::Result<std::process::Command> {
    let mut command = std::process::Command::new(program("boardcast")?);
    command
        .env("BOARDCAST_TOKEN", boardcast_testkit::admin_token())
        .arg("simulate")
        .arg("--pgn")
        .arg(pgn)
        .args(["--boards", &boards.to_string(), "--speed", speed])
        .args(["--nats", nats, "--game-service", game_service])
        .stdout(std::process::Stdio::null());
    Ok(command)
}

async fn get(url: &str, headers: &[(&str, &str)]) -> anyhow::Result<reqwest::Response> {
    let mut request = reqwest::Client::new().get(url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    Ok(request.send().await?)
}

async fn round_pgn(broadcast: &BroadcastService, round: u32) -> anyhow::Result<Vec<PgnGame>> {
    let response = get(
        &broadcast.url(&format!("/tournaments/{TOURNAMENT}/rounds/{round}.pgn")),
        &[],
    )
    .await?;
    if !response.status().is_success() {
        bail!("round {round}: {}", response.status());
    }
    Ok(read_games(&response.text().await?)?)
}

/// Waits until the round's feed has `count` finished games.
async fn finished_feed(broadcast: &BroadcastService, count: usize) -> anyhow::Result<Vec<PgnGame>> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        if let Ok(games) = round_pgn(broadcast, 9).await
            && games.iter().filter(|g| g.result != "*").count() == count
        {
            return Ok(games);
        }
        if tokio::time::Instant::now() > deadline {
            bail!("the feed did not show {count} finished games");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_round_feed_is_the_source_round_and_survives_a_restart() -> anyhow::Result<()> {
    const BOARDS: usize = 4;
    let nats = TestNats::start()?;
    let game_service = GameService::start(&nats.url())?;
    let mut broadcast = BroadcastService::start(&nats.url())?;
    let source = round_nine(BOARDS)?;
    let file = write(&source)?;
    let status =
        simulate(file.path(), BOARDS, "max", &nats.url(), &game_service.url())?.status()?;
    assert!(status.success(), "boardcast simulate failed: {status}");

    let served = finished_feed(&broadcast, BOARDS).await?;
    // Board order, tags as lichess reads them, moves with their clocks, results.
    for (board, (game, source)) in served.iter().zip(&source).enumerate() {
        let board = board + 1;
        assert_eq!(game.tag("Round"), Some(format!("9.{board}").as_str()));
        assert_eq!(game.tag("Board"), Some(board.to_string().as_str()));
        for tag in [
            "White",
            "Black",
            "WhiteElo",
            "BlackElo",
            "WhiteTitle",
            "BlackTitle",
            "WhiteFideId",
            "BlackFideId",
            "Event",
            "Site",
            "Date",
        ] {
            assert_eq!(
                game.tag(tag),
                source.tag(tag).filter(|v| !v.is_empty()),
                "{tag} of board {board}"
            );
        }
        assert_eq!(game.tag("TimeControl"), Some("40/7200:3600+30"));
        assert_eq!(
            support::uci_moves(game)?,
            support::uci_moves(source)?,
            "board {board}"
        );
        let clocks: Vec<Option<u64>> = game.moves.iter().map(|m| m.clock_ms).collect();
        let source_clocks: Vec<Option<u64>> = source.moves.iter().map(|m| m.clock_ms).collect();
        assert_eq!(clocks, source_clocks, "[%clk] of board {board}");
        assert_eq!(game.result, source.result, "board {board}");
        assert!(game.tag("WhiteClock").is_some() && game.tag("BlackClock").is_some());
    }

    // Cheap to poll: the same body has the same ETag, and a poller that has it gets 304.
    let url = broadcast.url(&format!("/tournaments/{TOURNAMENT}/rounds/9.pgn"));
    let first = get(&url, &[]).await?;
    let etag = first
        .headers()
        .get("etag")
        .context("an ETag")?
        .to_str()?
        .to_owned();
    assert!(first.headers().contains_key("last-modified"));
    let body = first.text().await?;
    let again = get(&url, &[("if-none-match", &etag)]).await?;
    assert_eq!(again.status(), reqwest::StatusCode::NOT_MODIFIED);
    assert!(again.text().await?.is_empty());
    let compressed = get(&url, &[("accept-encoding", "gzip")]).await?;
    assert_eq!(
        compressed
            .headers()
            .get("content-encoding")
            .map(|v| v.to_str().unwrap_or_default()),
        Some("gzip")
    );
    let compressed_len = compressed.bytes().await?.len();
    assert!(
        compressed_len * 3 < body.len(),
        "{compressed_len} bytes of {}",
        body.len()
    );

    // A restart resumes from its stored state: ready only once caught up, the same bytes.
    broadcast.restart()?;
    broadcast.wait_ready(Duration::from_secs(30)).await?;
    let after = get(&url, &[]).await?;
    assert_eq!(
        after
            .headers()
            .get("etag")
            .map(|v| v.to_str().unwrap_or_default()),
        Some(etag.as_str())
    );
    assert_eq!(after.text().await?, body);

    // Live updates resume: a client that gives back the cursor of the last event it had gets
    // only what changed since; one of the run before the restart gets every game.
    let updates = broadcast.url(&format!("/tournaments/{TOURNAMENT}/rounds/9/updates"));
    let all = sse_games(&updates, None).await?;
    assert_eq!(all.len(), BOARDS);
    let version = |cursor: &str| -> u64 {
        cursor
            .rsplit_once('-')
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or_default()
    };
    let mut by_version: Vec<&String> = all.iter().collect();
    by_version.sort_by_key(|c| version(c));
    for since in &by_version {
        let resumed = sse_games(&updates, Some(since)).await?;
        // The games of the cursor's own release are sent again: a connection cut among them
        // may have had some and not others.
        let expected = all.iter().filter(|c| version(c) >= version(since)).count();
        assert_eq!(resumed.len(), expected, "resuming after {since}");
    }
    broadcast.restart()?;
    broadcast.wait_ready(Duration::from_secs(30)).await?;
    let after = sse_games(&updates, by_version.last().map(|c| c.as_str())).await?;
    assert_eq!(
        after.len(),
        BOARDS,
        "a cursor of the run before: every game"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn after_a_crash_the_feeds_are_whole_again_and_a_resuming_viewer_misses_nothing()
-> anyhow::Result<()> {
    const BOARDS: usize = 2;
    let nats = TestNats::start()?;
    let game_service = GameService::start(&nats.url())?;
    // Nothing is stored while it runs: what viewers saw is on no disk when it crashes.
    let mut broadcast =
        BroadcastService::start_with(&nats.url(), &["--store-every-ms", "3600000"])?;
    let file = write(&round_nine(BOARDS)?)?;
    let status =
        simulate(file.path(), BOARDS, "max", &nats.url(), &game_service.url())?.status()?;
    assert!(status.success(), "boardcast simulate failed: {status}");
    let shown = finished_feed(&broadcast, BOARDS).await?;
    let updates = broadcast.url(&format!("/tournaments/{TOURNAMENT}/rounds/9/updates"));
    let seen = sse_games(&updates, None).await?;
    let last_seen = seen.last().context("a cursor")?.clone();

    broadcast.crash_and_restart()?;
    broadcast.wait_ready(Duration::from_secs(30)).await?;
    let again = round_pgn(&broadcast, 9).await?;
    assert_eq!(again.len(), shown.len());
    for (again, shown) in again.iter().zip(&shown) {
        assert_eq!(support::uci_moves(again)?, support::uci_moves(shown)?);
        assert_eq!(again.result, shown.result);
    }
    // A viewer resuming from the last cursor it had before the crash is sent every game.
    let resumed = sse_games(&updates, Some(&last_seen)).await?;
    assert_eq!(resumed.len(), BOARDS, "{resumed:?} after {last_seen}");
    Ok(())
}

/// What a delta-applying viewer saw, across its connections.
#[derive(Default)]
struct Viewing {
    games: support::LiveGames,
    deltas: usize,
    wholes: usize,
    connections: usize,
    /// Events of a connection after which it hangs up and resumes (on the next instance).
    hang_up_after: usize,
    /// The delta it drops, as if lost, to see the next one of its game refused.
    drop_delta: usize,
}

/// Follows the round as a page does (whole once, then deltas; resuming with `Last-Event-ID`
/// when a connection ends, each time on the next of `urls`, as a load balancer may send it)
/// until `stop`.
async fn view_round(
    urls: Vec<String>,
    viewing: Arc<tokio::sync::Mutex<Viewing>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> anyhow::Result<()> {
    let mut last_id: Option<String> = None;
    let mut attempt = 0;
    while !stop.load(std::sync::atomic::Ordering::Acquire) {
        let url = urls[attempt % urls.len()].clone();
        attempt += 1;
        let headers: Vec<(&str, &str)> = last_id
            .as_deref()
            .map(|id| ("last-event-id", id))
            .into_iter()
            .collect();
        let Ok(mut response) = get(&url, &headers).await else {
            tokio::time::sleep(NOT_SHOWN_YET_RETRY).await;
            continue;
        };
        if !response.status().is_success() {
            tokio::time::sleep(NOT_SHOWN_YET_RETRY).await;
            continue;
        }
        viewing.lock().await.connections += 1;
        let mut events = support::SseEvents::default();
        let mut taken = 0;
        'connection: while let Ok(Some(chunk)) = response.chunk().await {
            let mut viewing = viewing.lock().await;
            for event in events.events(&chunk) {
                let (kind, data) = (event.name, event.data);
                last_id = event.id.or(last_id);
                taken += 1;
                let mut lost = false;
                if kind == "message" {
                    viewing.deltas += 1;
                    lost = viewing.deltas == viewing.drop_delta;
                }
                if kind == "game" {
                    viewing.wholes += 1;
                }
                if !lost
                    && let support::Taken::Missed(game_id) = viewing.games.take(&kind, &data)?
                {
                    let whole = fetch_whole(&url, &game_id).await?;
                    viewing.games.replace(whole);
                }
                if taken >= viewing.hang_up_after {
                    break 'connection;
                }
            }
        }
    }
    Ok(())
}

/// A viewer that keeps each game from the round's live updates alone — whole once, then its
/// deltas — through a connection it ends and resumes, a restart of the service and a delta it
/// lost, ends with every game exactly as the round's PGN has it: moves, clocks, result.
#[tokio::test(flavor = "multi_thread")]
async fn a_viewer_applying_deltas_ends_with_the_round_through_reconnections_and_a_restart()
-> anyhow::Result<()> {
    const BOARDS: usize = 4;
    let nats = TestNats::start()?;
    let game_service = GameService::start(&nats.url())?;
    let mut broadcast = BroadcastService::start(&nats.url())?;
    let viewing = Arc::new(tokio::sync::Mutex::new(Viewing {
        hang_up_after: 40,
        drop_delta: 25,
        ..Viewing::default()
    }));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let viewer = tokio::spawn(view_round(
        vec![broadcast.url(&format!("/tournaments/{TOURNAMENT}/rounds/9/updates"))],
        viewing.clone(),
        stop.clone(),
    ));
    let file = write(&round_nine(BOARDS)?)?;
    let mut play = simulate(
        file.path(),
        BOARDS,
        "1500",
        &nats.url(),
        &game_service.url(),
    )?
    .spawn()?;
    // Restarted while the games go on.
    tokio::time::sleep(Duration::from_secs(4)).await;
    broadcast.restart()?;
    let status = tokio::task::spawn_blocking(move || play.wait()).await??;
    assert!(status.success(), "boardcast simulate failed: {status}");
    let served = finished_feed(&broadcast, BOARDS).await?;
    stop.store(true, std::sync::atomic::Ordering::Release);
    let viewing = viewer_ends_with(&viewing, &served, &broadcast).await?;
    viewer.abort();
    // It resumed (its own hang-ups, the restart) and lived on deltas in between; the lost one
    // was refused by its game's next delta and the game fetched whole.
    assert!(
        viewing.connections >= 3,
        "{} connections",
        viewing.connections
    );
    assert!(
        viewing.deltas > 4 * viewing.wholes,
        "{} deltas, {} games whole",
        viewing.deltas,
        viewing.wholes
    );
    assert!(viewing.games.missed >= 1, "the lost delta was noticed");
    Ok(())
}

/// Waits until the viewer has seen every game of `served` finish, then checks its copies hold
/// exactly the round's moves, clocks and results, and are the games `service` shows, whole.
async fn viewer_ends_with<'a>(
    viewing: &'a tokio::sync::Mutex<Viewing>,
    served: &[PgnGame],
    service: &BroadcastService,
) -> anyhow::Result<tokio::sync::MutexGuard<'a, Viewing>> {
    let ids: Vec<String> = (1..=served.len())
        .map(|board| format!("{TOURNAMENT}-r9-b{board}"))
        .collect();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let finished = {
            let viewing = viewing.lock().await;
            ids.iter()
                .filter(|id| viewing.games.game(id).is_some_and(|g| g["result"] != "*"))
                .count()
        };
        if finished == served.len() {
            break;
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the viewer saw {finished} of {} games finish",
            served.len()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let viewing = viewing.lock().await;
    eprintln!(
        "{} connections, {} games whole, {} deltas, {} missed",
        viewing.connections, viewing.wholes, viewing.deltas, viewing.games.missed
    );
    for (id, game) in ids.iter().zip(served) {
        let copy = viewing.games.game(id).context("the viewer has the game")?;
        let sans: Vec<String> = game.moves.iter().map(|m| m.san.clone()).collect();
        let clocks: Vec<Option<u64>> = game.moves.iter().map(|m| m.clock_ms).collect();
        assert_eq!(copy["moves"], serde_json::json!(sans), "{id}");
        assert_eq!(copy["move_clocks"], serde_json::json!(clocks), "{id}");
        assert_eq!(copy["result"], game.result.as_str(), "{id}");
        let whole: serde_json::Value = get(&service.url(&format!("/games/{id}.json")), &[])
            .await?
            .json()
            .await?;
        assert_eq!(*copy, whole, "{id}: the copy built from deltas is the game");
    }
    Ok(viewing)
}

/// Two instances behind a load balancer that sends each connection to either: each follows the
/// log itself and serves the same bytes (PGN, JSON, their `ETag`s), and a viewer whose
/// connections alternate between them ends with every game exactly as the round's PGN has it.
#[tokio::test(flavor = "multi_thread")]
async fn two_instances_serve_the_same_feeds_to_a_viewer_moving_between_them() -> anyhow::Result<()>
{
    const BOARDS: usize = 4;
    let nats = TestNats::start()?;
    let game_service = GameService::start(&nats.url())?;
    let instances = [
        BroadcastService::start(&nats.url())?,
        BroadcastService::start(&nats.url())?,
    ];
    let updates = format!("/tournaments/{TOURNAMENT}/rounds/9/updates");
    let viewing = Arc::new(tokio::sync::Mutex::new(Viewing {
        hang_up_after: 30,
        drop_delta: 25,
        ..Viewing::default()
    }));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let viewer = tokio::spawn(view_round(
        instances.iter().map(|i| i.url(&updates)).collect(),
        viewing.clone(),
        stop.clone(),
    ));
    // A system on the hall's network keeping its copies from the NATS delta subjects, on which
    // both instances publish.
    let nats_viewing = Arc::new(tokio::sync::Mutex::new(Viewing::default()));
    let nats_viewer = view_nats_deltas(
        &nats.url(),
        &format!("boardcast.delta.{TOURNAMENT}.9.*"),
        instances[0].http.to_string(),
        nats_viewing.clone(),
    )
    .await?;
    let file = write(&round_nine(BOARDS)?)?;
    let status = simulate(
        file.path(),
        BOARDS,
        "1500",
        &nats.url(),
        &game_service.url(),
    )?
    .status()?;
    assert!(status.success(), "boardcast simulate failed: {status}");
    let served = finished_feed(&instances[0], BOARDS).await?;
    finished_feed(&instances[1], BOARDS).await?;
    stop.store(true, std::sync::atomic::Ordering::Release);
    let viewing = viewer_ends_with(&viewing, &served, &instances[1]).await?;
    viewer.abort();
    {
        let nats_viewing = viewer_ends_with(&nats_viewing, &served, &instances[0]).await?;
        assert!(
            nats_viewing.deltas > nats_viewing.wholes,
            "NATS: {} deltas, {} games whole",
            nats_viewing.deltas,
            nats_viewing.wholes
        );
        // Changes came from both instances: a second copy of one was skipped, not fetched.
        assert!(nats_viewing.games.repeated > 0, "no delta came twice");
    }
    finish_watching(nats_viewer).await?;
    assert!(
        viewing.connections >= 4,
        "{} connections",
        viewing.connections
    );
    assert!(
        viewing.deltas > viewing.wholes,
        "{} deltas, {} whole",
        viewing.deltas,
        viewing.wholes
    );
    // The same bytes from either, so a cache in front may keep whichever it got.
    let mut paths = vec![
        format!("/tournaments/{TOURNAMENT}/rounds/9.pgn"),
        format!("/tournaments/{TOURNAMENT}/rounds/9.json"),
    ];
    for board in 1..=BOARDS {
        paths.push(format!("/games/{TOURNAMENT}-r9-b{board}.json"));
        paths.push(format!("/games/{TOURNAMENT}-r9-b{board}.pgn"));
    }
    for path in paths {
        let mut answers = Vec::new();
        for instance in &instances {
            let response = get(&instance.url(&path), &[]).await?.error_for_status()?;
            let etag = response.headers().get("etag").cloned();
            answers.push((etag, response.text().await?));
        }
        assert_eq!(answers[0], answers[1], "{path}");
    }
    Ok(())
}

/// The cursors of the game events a new connection gets at once, resuming after `since`.
async fn sse_games(url: &str, since: Option<&str>) -> anyhow::Result<Vec<String>> {
    let headers: Vec<(&str, &str)> = since.map(|c| ("last-event-id", c)).into_iter().collect();
    let mut response = get(url, &headers).await?;
    let mut text = String::new();
    let until = tokio::time::Instant::now() + Duration::from_millis(1500);
    while let Ok(Ok(Some(chunk))) = tokio::time::timeout_at(until, response.chunk()).await {
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    anyhow::ensure!(text.contains("event: round"), "{text}");
    Ok(text
        .split("\n\n")
        .filter(|e| e.lines().any(|l| l == "event: game"))
        .filter_map(|e| e.lines().find_map(|l| l.strip_prefix("id: ")))
        .map(str::to_owned)
        .collect())
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// What one endpoint showed of one game, and when the test had it.
#[derive(Debug, Clone)]
struct Sight {
    endpoint: &'static str,
    game_id: String,
    moves: usize,
    finished: bool,
    /// The test's clock once the answer was in: nothing recorded after `at − delay` may be in it.
    at: i64,
    /// The test's clock when it asked (for what must already be shown).
    asked: i64,
    /// How long the answer said a cache may keep it (`Cache-Control: max-age`), in ms.
    fresh_ms: i64,
}

type Sights = Arc<Mutex<Vec<Sight>>>;

fn note(
    sights: &Sights,
    endpoint: &'static str,
    game: &serde_json::Value,
    asked: i64,
    fresh_ms: i64,
) {
    let sight = Sight {
        fresh_ms,
        endpoint,
        game_id: game["game_id"].as_str().unwrap_or_default().to_owned(),
        moves: game["moves"].as_array().map_or(0, Vec::len),
        finished: game["result"].as_str().is_some_and(|r| r != "*"),
        at: now_ms(),
        asked,
    };
    sights.lock().unwrap_or_else(|e| e.into_inner()).push(sight);
}

/// Where a live watcher hands each game view it receives (with the endpoint's name).
type Seen = Arc<dyn Fn(&'static str, &serde_json::Value) + Send + Sync>;

fn noting(sights: &Sights) -> Seen {
    let sights = sights.clone();
    Arc::new(move |endpoint, game| note(&sights, endpoint, game, now_ms(), 0))
}

/// How often a watcher asks again for a round not shown yet (a 404, as a monitor page is told).
const NOT_SHOWN_YET_RETRY: Duration = Duration::from_millis(200);

/// The game whole from the service at `url`'s host, for a viewer whose copy missed an update.
async fn fetch_whole(url: &str, game_id: &str) -> anyhow::Result<serde_json::Value> {
    let base = url
        .split("/tournaments/")
        .next()
        .context("a live URL")?
        .replace("ws://", "http://");
    Ok(get(&format!("{base}/games/{game_id}.json"), &[])
        .await?
        .error_for_status()?
        .json()
        .await?)
}

/// Takes one live update into the viewer's copies and hands the game it changed on; a delta the
/// copy cannot take brings the game whole, as a page does.
async fn take_live(
    url: &str,
    games: &mut support::LiveGames,
    kind: &str,
    data: &str,
    endpoint: &'static str,
    seen: &Seen,
) -> anyhow::Result<()> {
    let game_id = match games.take(kind, data)? {
        support::Taken::Game(game_id) => game_id,
        support::Taken::Missed(game_id) => {
            games.replace(fetch_whole(url, &game_id).await?);
            game_id
        }
        support::Taken::Other => return Ok(()),
    };
    if let Some(game) = games.game(&game_id) {
        seen(endpoint, game);
    }
    Ok(())
}

/// Reads the round's server-sent events for as long as the test runs, from when the round is
/// first shown, keeping each game as a page does (whole once, then its deltas).
async fn watch_sse(url: String, seen: Seen) -> anyhow::Result<()> {
    let mut response = loop {
        let response = get(&url, &[]).await?;
        if response.status() != reqwest::StatusCode::NOT_FOUND {
            break response;
        }
        tokio::time::sleep(NOT_SHOWN_YET_RETRY).await;
    };
    let mut events = support::SseEvents::default();
    let mut games = support::LiveGames::default();
    while let Some(chunk) = response.chunk().await? {
        for event in events.events(&chunk) {
            take_live(&url, &mut games, &event.name, &event.data, "sse", &seen).await?;
        }
    }
    Ok(())
}

async fn watch_websocket(url: String, seen: Seen) -> anyhow::Result<()> {
    let mut socket = loop {
        match tokio_tungstenite::connect_async(&url).await {
            Ok((socket, _)) => break socket,
            Err(tokio_tungstenite::tungstenite::Error::Http(response))
                if response.status() == 404 =>
            {
                tokio::time::sleep(NOT_SHOWN_YET_RETRY).await
            }
            Err(e) => return Err(e.into()),
        }
    };
    let mut games = support::LiveGames::default();
    while let Some(message) = socket.next().await {
        if let tokio_tungstenite::tungstenite::Message::Text(text) = message? {
            let value: serde_json::Value = serde_json::from_str(&text)?;
            let kind = value["type"].as_str().unwrap_or_default();
            let data = match kind {
                "game" => value["game"].to_string(),
                "delta" => value["delta"].to_string(),
                _ => continue,
            };
            take_live(&url, &mut games, kind, &data, "websocket", &seen).await?;
        }
    }
    Ok(())
}

/// Subscribes to the NATS feed subject at once (updates published before a subscription are
/// not kept), then reads it for as long as the test runs.
async fn watch_nats(
    nats: String,
    subject: String,
    seen: Seen,
) -> anyhow::Result<tokio::task::JoinHandle<anyhow::Result<()>>> {
    let (client, feed) = subscribed(&nats, &subject).await?;
    Ok(tokio::spawn(read_nats(client, feed, seen)))
}

/// A subscription to `subject`, in force once this returns (the server has it): core NATS keeps
/// nothing for a subscriber that comes later.
async fn subscribed(
    nats: &str,
    subject: &str,
) -> anyhow::Result<(async_nats::Client, async_nats::Subscriber)> {
    let client = async_nats::connect(nats).await?;
    let feed = client.subscribe(subject.to_owned()).await?;
    client.flush().await?;
    Ok((client, feed))
}

async fn read_nats(
    _client: async_nats::Client,
    mut feed: async_nats::Subscriber,
    seen: Seen,
) -> anyhow::Result<()> {
    // A game's view only ever moves to a later version: the subject carries them in order.
    let mut versions: BTreeMap<String, u64> = BTreeMap::new();
    while let Some(message) = feed.next().await {
        let game: serde_json::Value = serde_json::from_slice(&message.payload)?;
        let id = game["game_id"].as_str().unwrap_or_default().to_owned();
        let version = game["version"].as_u64().unwrap_or_default();
        if let Some(before) = versions.insert(id.clone(), version)
            && before >= version
        {
            bail!("the NATS feed of {id} went from version {before} to {version}");
        }
        seen("nats", &game);
    }
    Ok(())
}

/// Subscribes to the NATS delta subjects `subject` at once, then keeps each game from them for
/// as long as the test runs (a delta its copy cannot take brings the game whole from the
/// service at `http`, as the WebSocket's clients do).
async fn watch_nats_deltas(
    nats: String,
    subject: String,
    http: String,
    seen: Seen,
) -> anyhow::Result<tokio::task::JoinHandle<anyhow::Result<()>>> {
    let (client, mut feed) = subscribed(&nats, &subject).await?;
    Ok(tokio::spawn(async move {
        let _client = client;
        let mut games = support::LiveGames::default();
        let url = format!("http://{http}/tournaments/");
        while let Some(message) = feed.next().await {
            let (kind, data) = nats_update(&message.payload)?;
            take_live(&url, &mut games, kind, &data, "nats deltas", &seen).await?;
        }
        Ok(())
    }))
}

/// Keeps each game of the NATS delta subjects `subject` in `viewing` (subscribed at once), as
/// [`view_round`] does from server-sent events.
async fn view_nats_deltas(
    nats: &str,
    subject: &str,
    http: String,
    viewing: Arc<tokio::sync::Mutex<Viewing>>,
) -> anyhow::Result<tokio::task::JoinHandle<anyhow::Result<()>>> {
    let (client, mut feed) = subscribed(nats, subject).await?;
    Ok(tokio::spawn(async move {
        let _client = client;
        let url = format!("http://{http}/tournaments/");
        while let Some(message) = feed.next().await {
            let (kind, data) = nats_update(&message.payload)?;
            let mut viewing = viewing.lock().await;
            match kind {
                "delta" => viewing.deltas += 1,
                _ => viewing.wholes += 1,
            }
            if let support::Taken::Missed(game_id) = viewing.games.take(kind, &data)? {
                let whole = fetch_whole(&url, &game_id).await?;
                viewing.games.replace(whole);
            }
        }
        Ok(())
    }))
}

/// A message of a NATS delta subject: its kind (`game` or `delta`) and the game or delta.
fn nats_update(payload: &[u8]) -> anyhow::Result<(&'static str, String)> {
    let value: serde_json::Value = serde_json::from_slice(payload)?;
    match value["type"].as_str() {
        Some("game") => Ok(("game", value["game"].to_string())),
        Some("delta") => Ok(("delta", value["delta"].to_string())),
        _ => bail!("not a live update: {value}"),
    }
}

/// Stops a live watcher, with the error it stopped on if it found the feed wrong.
async fn finish_watching(
    watcher: tokio::task::JoinHandle<anyhow::Result<()>>,
) -> anyhow::Result<()> {
    if watcher.is_finished() {
        return watcher.await?;
    }
    watcher.abort();
    Ok(())
}

/// The completed moves of a feed's game: not those the board shows unconfirmed yet.
fn completed(game: &PgnGame) -> Vec<String> {
    game.moves
        .iter()
        .filter(|m| {
            !m.comment
                .as_deref()
                .is_some_and(|c| c.starts_with("provisional"))
        })
        .map(|m| m.san.clone())
        .collect()
}

/// Polls every document endpoint once.
/// How long a response says a cache may keep it, in ms (0: `no-cache`).
fn max_age_ms(response: &reqwest::Response) -> i64 {
    response
        .headers()
        .get("cache-control")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(',').find_map(|d| d.trim().strip_prefix("max-age=")))
        .and_then(|seconds| seconds.parse::<i64>().ok())
        .map_or(0, |seconds| seconds * 1000)
}

async fn poll(
    broadcast: &BroadcastService,
    game_ids: &[String],
    sights: &Sights,
) -> anyhow::Result<()> {
    let asked = now_ms();
    let pgn = get(
        &broadcast.url(&format!("/tournaments/{TOURNAMENT}/rounds/9.pgn")),
        &[],
    )
    .await?;
    if pgn.status().is_success() {
        let fresh_ms = max_age_ms(&pgn);
        let games = read_games(&pgn.text().await?)?;
        for game in games {
            let board: usize = game.tag("Board").and_then(|b| b.parse().ok()).unwrap_or(0);
            let value = serde_json::json!({
                "game_id": game_ids.get(board.wrapping_sub(1)).cloned().unwrap_or_default(),
                "moves": completed(&game),
                "result": game.result,
            });
            note(sights, "round pgn", &value, asked, fresh_ms);
        }
    } else {
        assert_eq!(pgn.status(), reqwest::StatusCode::NOT_FOUND);
    }
    let json = get(
        &broadcast.url(&format!("/tournaments/{TOURNAMENT}/rounds/9.json")),
        &[],
    )
    .await?;
    if json.status().is_success() {
        let fresh_ms = max_age_ms(&json);
        let round: serde_json::Value = json.json().await?;
        for game in round["games"].as_array().into_iter().flatten() {
            note(sights, "round json", game, asked, fresh_ms);
        }
    }
    for game_id in game_ids {
        let asked = now_ms();
        let response = get(&broadcast.url(&format!("/games/{game_id}.json")), &[]).await?;
        if response.status().is_success() {
            let fresh_ms = max_age_ms(&response);
            note(
                sights,
                "game json",
                &response.json().await?,
                asked,
                fresh_ms,
            );
        }
        let response = get(&broadcast.url(&format!("/games/{game_id}.pgn")), &[]).await?;
        if response.status().is_success() {
            let fresh_ms = max_age_ms(&response);
            let game = read_games(&response.text().await?)?.remove(0);
            let value = serde_json::json!({
                "game_id": game_id,
                "moves": completed(&game),
                "result": game.result,
            });
            note(sights, "game pgn", &value, asked, fresh_ms);
        }
    }
    Ok(())
}

/// When each move and the result of a game were recorded, from the game service's log.
async fn recorded_times(
    game_service: &GameService,
    game_id: &str,
) -> anyhow::Result<(Vec<i64>, Option<i64>)> {
    let mut client = boardcast_testkit::admin_client(&game_service.url()).await?;
    let events = support::game_events(&mut client, game_id).await?;
    let mut moves = Vec::new();
    let mut ended = None;
    for event in events {
        match event.kind {
            Some(Kind::MoveCompleted(_)) => moves.push(event.recorded_unix_ms),
            Some(Kind::Ended(_)) => ended = Some(event.recorded_unix_ms),
            _ => {}
        }
    }
    Ok((moves, ended))
}

#[tokio::test(flavor = "multi_thread")]
async fn the_delay_holds_back_every_endpoint_and_only_ever_moves_forward() -> anyhow::Result<()> {
    const BOARDS: usize = 2;
    // Long enough for the round to be released in steps (`boardcast_feeds::release_step_ms`).
    const DELAY_MS: i64 = 20_000;
    let step = boardcast_feeds::release_step_ms(DELAY_MS as u64);
    assert!(step > 0);
    let nats = TestNats::start()?;
    let game_service = GameService::start(&nats.url())?;
    let dir = tempfile::tempdir()?;
    let delays = dir.path().join("delays");
    std::fs::write(&delays, "20s\n")?;
    let broadcast =
        BroadcastService::start_with(&nats.url(), &["--delay-file", &delays.to_string_lossy()])?;
    let game_ids: Vec<String> = (1..=BOARDS)
        .map(|b| format!("{TOURNAMENT}-r9-b{b}"))
        .collect();

    let sights: Sights = Arc::default();
    let live = [
        tokio::spawn(watch_sse(
            broadcast.url(&format!("/tournaments/{TOURNAMENT}/rounds/9/updates")),
            noting(&sights),
        )),
        tokio::spawn(watch_websocket(
            format!(
                "ws://{}/tournaments/{TOURNAMENT}/rounds/9/ws",
                broadcast.http
            ),
            noting(&sights),
        )),
        watch_nats(
            nats.url(),
            format!("boardcast.feed.{TOURNAMENT}.9.*"),
            noting(&sights),
        )
        .await?,
        watch_nats_deltas(
            nats.url(),
            format!("boardcast.delta.{TOURNAMENT}.9.*"),
            broadcast.http.to_string(),
            noting(&sights),
        )
        .await?,
    ];
    let source = round_nine(BOARDS)?;
    let file = write(&source)?;
    let mut play =
        simulate(file.path(), BOARDS, "250", &nats.url(), &game_service.url())?.spawn()?;
    // Nothing of the round can be seen before its start is due; the answer is the one for a
    // round that does not exist.
    let unknown = get(
        &broadcast.url(&format!("/tournaments/{TOURNAMENT}/rounds/99.pgn")),
        &[],
    )
    .await?
    .status();
    assert_eq!(unknown, reqwest::StatusCode::NOT_FOUND);
    while play.try_wait()?.is_none() {
        poll(&broadcast, &game_ids, &sights).await?;
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    // Until the last moves are due under the delay.
    let until =
        tokio::time::Instant::now() + Duration::from_millis((DELAY_MS + step) as u64 + 1000);
    while tokio::time::Instant::now() < until {
        poll(&broadcast, &game_ids, &sights).await?;
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let played = sights.lock().unwrap_or_else(|e| e.into_inner()).clone();

    let mut times = BTreeMap::new();
    for game_id in &game_ids {
        times.insert(
            game_id.clone(),
            recorded_times(&game_service, game_id).await?,
        );
    }
    let mut endpoints = BTreeMap::new();
    let mut cached = 0;
    for sight in &played {
        let (moves, ended) = &times[&sight.game_id];
        let due = |at: i64| moves.iter().filter(|t| **t <= at - DELAY_MS).count();
        // What the release point shows at `at`: everything up to the last step before it.
        let shown = |at: i64| {
            let point = boardcast_feeds::release_point(at, DELAY_MS as u64);
            moves.iter().filter(|t| **t <= point).count()
        };
        assert!(
            sight.moves <= due(sight.at),
            "{} showed {} moves of {} when only {} were due: {sight:?}",
            sight.endpoint,
            sight.moves,
            sight.game_id,
            due(sight.at)
        );
        if sight.finished {
            assert!(
                ended.is_some_and(|t| t <= sight.at - DELAY_MS),
                "{} showed the result early: {sight:?}",
                sight.endpoint
            );
        }
        // Released on time: what its step showed (with a second's grace) is there.
        if sight.endpoint.contains("json") || sight.endpoint.contains("pgn") {
            assert!(
                sight.moves >= shown(sight.asked - 1000),
                "{} is late: {sight:?}",
                sight.endpoint
            );
        }
        // A cache keeping the answer for as long as it said shows nothing stale: the release
        // point shows no further move until then.
        if sight.fresh_ms > 0 {
            cached += 1;
            assert!(
                shown(sight.asked + sight.fresh_ms - 1) <= sight.moves,
                "{} may be cached {} ms, past a move shown then: {sight:?}",
                sight.endpoint,
                sight.fresh_ms
            );
        }
        *endpoints.entry(sight.endpoint).or_insert(0) += 1;
    }
    assert!(cached > 0, "no answer let a cache keep it");
    for endpoint in [
        "round pgn",
        "round json",
        "game json",
        "game pgn",
        "sse",
        "websocket",
        "nats",
        "nats deltas",
    ] {
        assert!(
            endpoints.get(endpoint).is_some_and(|n| *n > 3),
            "{endpoint} seen {:?} times",
            endpoints.get(endpoint)
        );
    }
    // Every game was shown as it was played, a step at a time, not all at once.
    for game_id in &game_ids {
        let mut counts: Vec<usize> = played
            .iter()
            .filter(|s| s.endpoint == "sse" && s.game_id == *game_id)
            .map(|s| s.moves)
            .collect();
        counts.dedup();
        assert!(counts.len() >= 3, "{game_id}: {counts:?}");
    }

    // Raising the delay takes back nothing that was shown and shows nothing new for a while.
    let shown = round_pgn(&broadcast, 9).await?;
    let before: Vec<usize> = shown.iter().map(|g| g.moves.len()).collect();
    std::fs::write(&delays, "60\n")?;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    // A new game starts meanwhile (round 9, board 3): under an hour's delay, it stays hidden.
    let more = round_nine(3)?;
    let third = write(&more[2..])?;
    let status = std::process::Command::new(program("boardcast")?)
        .env("BOARDCAST_TOKEN", boardcast_testkit::admin_token())
        .args(["simulate", "--pgn"])
        .arg(third.path())
        .args([
            "--boards",
            "1",
            "--speed",
            "max",
            "--board-prefix",
            "extra",
            "--nats",
            &nats.url(),
            "--game-service",
            &game_service.url(),
        ])
        .stdout(std::process::Stdio::null())
        .status()?;
    assert!(status.success());
    // Long enough that the old delay would have shown it.
    for _ in 0..32 {
        let now: Vec<usize> = round_pgn(&broadcast, 9)
            .await?
            .iter()
            .map(|g| g.moves.len())
            .collect();
        assert_eq!(now, before, "the raised delay changed what is shown");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }

    // Lowering it releases what is now due: everything, with the third game.
    std::fs::write(&delays, "0\n")?;
    let served = finished_feed(&broadcast, 3).await?;
    for (game, source) in served.iter().zip(&more) {
        assert_eq!(support::uci_moves(game)?, support::uci_moves(source)?);
        assert_eq!(game.result, source.result);
    }
    for task in live {
        finish_watching(task).await?;
    }
    Ok(())
}

/// A board's observations as DGT LiveChess reports them (whole placements, clock readings),
/// published straight to NATS.
struct Board {
    js: async_nats::jetstream::Context,
    id: String,
    seq: u64,
    time: i64,
}

impl Board {
    async fn observe(
        &mut self,
        kind: boardcast_schema::device::v1::observation::Kind,
    ) -> anyhow::Result<()> {
        use boardcast_schema::device::v1::{Observation, SourceKind};
        use prost::Message as _;
        self.seq += 1;
        self.time += 1500;
        let observation = Observation {
            board_id: self.id.clone(),
            device_seq: self.seq,
            device_time_unix_ms: self.time,
            receive_time_unix_ms: self.time,
            source: SourceKind::Livechess as i32,
            kind: Some(kind),
        };
        self.js
            .publish(
                format!("boardcast.board.{}.obs", self.id),
                observation.encode_to_vec().into(),
            )
            .await?
            .await?;
        Ok(())
    }

    async fn shows(&mut self, placement: &str) -> anyhow::Result<()> {
        use boardcast_schema::device::v1::{BoardPlacement, observation::Kind};
        self.observe(Kind::Placement(BoardPlacement {
            placement: placement.into(),
        }))
        .await
    }

    async fn clock(
        &mut self,
        white_runs: bool,
        white_ms: u64,
        black_ms: u64,
    ) -> anyhow::Result<()> {
        use boardcast_schema::device::v1::{ClockReading, ClockRun, observation::Kind};
        self.observe(Kind::Clock(ClockReading {
            white_remaining_ms: white_ms,
            black_remaining_ms: black_ms,
            running: if white_runs {
                ClockRun::White
            } else {
                ClockRun::Black
            } as i32,
            ..Default::default()
        }))
        .await
    }
}

/// What every feed shows of the game as its provisional moves, once they agree on `expected`.
async fn every_feed_shows(
    broadcast: &BroadcastService,
    latest: &Arc<Mutex<BTreeMap<&'static str, serde_json::Value>>>,
    game_id: &str,
    expected: &[&str],
) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let mut shown: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        let provisional = |game: &serde_json::Value| -> Vec<String> {
            game["provisional"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|m| m.as_str().map(str::to_owned))
                .collect()
        };
        for (endpoint, game) in latest.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            shown.insert(endpoint, provisional(game));
        }
        let game: serde_json::Value = get(&broadcast.url(&format!("/games/{game_id}.json")), &[])
            .await?
            .json()
            .await?;
        shown.insert("game json", provisional(&game));
        let round: serde_json::Value =
            get(&broadcast.url("/tournaments/slide-open/rounds/1.json"), &[])
                .await?
                .json()
                .await?;
        shown.insert("round json", provisional(&round["games"][0]));
        for (endpoint, url) in [
            ("game pgn", format!("/games/{game_id}.pgn")),
            (
                "round pgn",
                "/tournaments/slide-open/rounds/1.pgn".to_owned(),
            ),
        ] {
            let text = get(&broadcast.url(&url), &[]).await?.text().await?;
            let game = read_games(&text)?.remove(0);
            let marked: Vec<String> = game
                .moves
                .iter()
                .filter(|m| {
                    m.comment
                        .as_deref()
                        .is_some_and(|c| c.starts_with("provisional"))
                })
                .map(|m| m.san.clone())
                .collect();
            shown.insert(endpoint, marked);
        }
        if shown.len() == 7 && shown.values().all(|s| s == expected) {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            bail!("the feeds do not all show {expected:?}: {shown:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_revised_provisional_move_appears_corrected_in_every_feed() -> anyhow::Result<()> {
    use boardcast_schema::game::v1::{GameStarted, TimeControl, TimePeriod};
    let nats = TestNats::start()?;
    let game_service = GameService::start(&nats.url())?;
    let broadcast = BroadcastService::start(&nats.url())?;
    let mut client = boardcast_testkit::admin_client(&game_service.url()).await?;
    let game_id = client
        .create_game(boardcast_testkit::create_request(GameStarted {
            time_control: Some(TimeControl {
                periods: vec![TimePeriod {
                    base_ms: 5_400_000,
                    ..Default::default()
                }],
            }),
            ..boardcast_testkit::game_on_board("slide-open", 1, "slide-1")
        }))
        .await?
        .into_inner()
        .game_id;

    // Every live feed, its latest word on the game.
    let latest: Arc<Mutex<BTreeMap<&'static str, serde_json::Value>>> = Arc::default();
    let keep = latest.clone();
    let seen: Seen = Arc::new(move |endpoint, game| {
        keep.lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(endpoint, game.clone());
    });
    let watchers = [
        tokio::spawn(watch_sse(
            broadcast.url("/tournaments/slide-open/rounds/1/updates"),
            seen.clone(),
        )),
        tokio::spawn(watch_websocket(
            format!("ws://{}/tournaments/slide-open/rounds/1/ws", broadcast.http),
            seen.clone(),
        )),
        watch_nats(nats.url(), "boardcast.feed.slide-open.1.1".into(), seen).await?,
    ];
    let nats_client = async_nats::connect(nats.url()).await?;
    let js = async_nats::jetstream::new(nats_client.clone());
    let mut board = Board {
        js,
        id: "slide-1".into(),
        seq: 0,
        time: now_ms(),
    };
    board
        .shows("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR")
        .await?;
    board.clock(true, 5_400_000, 5_400_000).await?;
    board
        .shows("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR")
        .await?;
    board.clock(false, 5_390_000, 5_400_000).await?;
    board
        .shows("rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR")
        .await?;
    board.clock(true, 5_390_000, 5_385_000).await?;
    board
        .shows("rnbqkbnr/pppp1ppp/8/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R")
        .await?;
    board.clock(false, 5_380_000, 5_385_000).await?;
    board
        .shows("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R")
        .await?;
    board.clock(true, 5_380_000, 5_370_000).await?;
    // The bishop is seen on c4 on its way …
    board
        .shows("r1bqkbnr/pppp1ppp/2n5/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R")
        .await?;
    every_feed_shows(&broadcast, &latest, &game_id, &["Bc4"]).await?;
    // … and lands on b5: every feed shows the corrected move.
    board
        .shows("r1bqkbnr/pppp1ppp/2n5/1B2p3/4P3/5N2/PPPP1PPP/RNBQK2R")
        .await?;
    every_feed_shows(&broadcast, &latest, &game_id, &["Bb5"]).await?;
    // The press completes it.
    board.clock(false, 5_360_000, 5_370_000).await?;
    every_feed_shows(&broadcast, &latest, &game_id, &[]).await?;
    let text = get(&broadcast.url(&format!("/games/{game_id}.pgn")), &[])
        .await?
        .text()
        .await?;
    let game = read_games(&text)?.remove(0);
    let moves: Vec<&str> = game.moves.iter().map(|m| m.san.as_str()).collect();
    assert_eq!(moves, ["e4", "e5", "Nf3", "Nc6", "Bb5"]);
    for watcher in watchers {
        finish_watching(watcher).await?;
    }
    Ok(())
}

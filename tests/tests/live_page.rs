//! The live page, rendered by a real headless Chromium against a running system.

use std::{process::Command, time::Duration};

use anyhow::bail;
use boardcast_testkit::{
    BroadcastService, GameService, TestNats, browser::Browser, program, repo_root,
};

#[tokio::test(flavor = "multi_thread")]
async fn the_live_page_shows_every_board_with_players_moves_and_result() -> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let game_service = GameService::start(&nats.url())?;
    let mut broadcast = BroadcastService::start(&nats.url())?;
    let browser = Browser::launch().await?;
    // The page is opened before the games start: it waits for the round (nothing is kept for a
    // round not shown), then what it shows arrives as live updates.
    let mut page = browser
        .open(&broadcast.url("/tournaments/london-chess-classic-2016/rounds/9/live"))
        .await?;
    page.wait_for(
        "document.getElementById('status').dataset.state === 'waiting'",
        Duration::from_secs(20),
    )
    .await?;

    let status = Command::new(program("boardcast")?)
        .env("BOARDCAST_TOKEN", boardcast_testkit::admin_token())
        .arg("simulate")
        .arg("--pgn")
        .arg(repo_root().join("data/london-classic-2016.pgn"))
        .args(["--boards", "3", "--speed", "max", "--nats", &nats.url()])
        .args(["--game-service", &game_service.url()])
        .status()?;
    if !status.success() {
        bail!("boardcast simulate failed: {status}");
    }

    page.wait_for(
        "document.querySelectorAll('.game .result').length === 3",
        Duration::from_secs(60),
    )
    .await?;
    page.wait_for(
        "document.getElementById('status').textContent === 'live'",
        Duration::from_secs(20),
    )
    .await?;
    let boards = page
        .eval("[...document.querySelectorAll('.game')].map(g => g.id)")
        .await?;
    assert_eq!(
        boards,
        serde_json::json!([
            "london-chess-classic-2016-r9-b1",
            "london-chess-classic-2016-r9-b2",
            "london-chess-classic-2016-r9-b3"
        ]),
        "one card per board, in board order"
    );
    let text = page.eval("document.body.innerText").await?;
    let text = text.as_str().unwrap_or_default();
    for player in [
        "So, Wesley",
        "Vachier-Lagrave, Maxime",
        "Giri, Anish",
        "Caruana, Fabiano",
    ] {
        assert!(text.contains(player), "{player} is shown");
    }
    assert!(
        text.contains("1. Nf3 c5 2. c4 Nc6"),
        "board 1's moves are shown"
    );
    assert!(text.contains("1/2-1/2"), "results are shown");
    let squares = page
        .eval("document.querySelectorAll('#london-chess-classic-2016-r9-b1 .sq').length")
        .await?;
    assert_eq!(squares, serde_json::json!(64), "a whole board is drawn");
    if let Ok(dir) = std::env::var("BOARDCAST_SCREENSHOT_DIR") {
        page.screenshot(&std::path::Path::new(&dir).join("live-page.png"))
            .await?;
    }
    // The page keeps its update stream open; SIGTERM still stops the service by itself (a few
    // seconds later), rather than waiting for the page to go.
    assert!(
        broadcast.process.stop(Duration::from_secs(30))?,
        "the broadcast service stops with a live page open"
    );
    Ok(())
}

//! A full disk under the broadcast service's state file: the state file only spares a restart
//! reading the log again, so the feeds go on from memory, the failure is logged and counted,
//! the service does not stop (it used to die on a panic that named no disk at all), and it
//! writes the file again once there is room.
//!
//! Needs a small filesystem of its own: a tmpfs mounted over the state's directory, which only
//! root may do; elsewhere the test says so and passes without running.

use std::{process::Command, time::Duration};

use anyhow::{Context as _, bail};
use boardcast_rules::pgn::read_games;
use boardcast_testkit::{BroadcastService, GameService, TestNats, program, repo_root};

/// Unmounts the tmpfs when the test ends, however it ends.
struct Mounted(std::path::PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_disk_under_the_state_file_does_not_stop_the_feeds() -> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let game_service = GameService::start(&nats.url())?;
    let mut broadcast = BroadcastService::start(&nats.url())?;
    let dir = broadcast.dir.path().to_owned();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=4m", "boardcast-full-disk"])
        .arg(&dir)
        .stderr(std::process::Stdio::null())
        .status();
    if !mounted.is_ok_and(|s| s.success()) {
        eprintln!("skipped: this test cannot mount a small filesystem here (needs root)");
        return Ok(());
    }
    let _unmount = Mounted(dir.clone());
    // Started again with its state file on the small filesystem, which is then filled.
    broadcast.crash_and_restart()?;
    broadcast.wait_ready(Duration::from_secs(30)).await?;
    let filler = vec![0u8; 64 * 1024];
    let mut fill = std::fs::File::create(dir.join("filler"))?;
    while std::io::Write::write_all(&mut fill, &filler).is_ok() {}
    drop(fill);

    let source = repo_root().join("data/london-classic-2016.pgn");
    let status = Command::new(program("boardcast")?)
        .env("BOARDCAST_TOKEN", boardcast_testkit::admin_token())
        .arg("simulate")
        .arg("--pgn")
        .arg(&source)
        .args(["--boards", "2", "--speed", "max"])
        .args(["--nats", &nats.url(), "--game-service", &game_service.url()])
        .stdout(std::process::Stdio::null())
        .status()
        .context("running boardcast simulate")?;
    assert!(status.success());

    // Both games end in the feed, served from memory.
    let url = broadcast.url("/tournaments/london-chess-classic-2016/rounds/9.pgn");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        let games = match reqwest::get(&url).await {
            Ok(r) if r.status().is_success() => read_games(&r.text().await?)?,
            _ => Vec::new(),
        };
        if games.len() == 2 && games.iter().all(|g| g.result != "*") {
            break;
        }
        if tokio::time::Instant::now() > deadline {
            bail!("the feed did not show both games ending: {games:?}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    broadcast
        .process
        .check_running()
        .context("the broadcast service still runs")?;
    let metrics = reqwest::get(broadcast.metrics_url("/metrics"))
        .await?
        .text()
        .await?;
    let failures: u64 = metrics
        .lines()
        .find(|l| l.starts_with("boardcast_state_store_failures_total"))
        .and_then(|l| l.split_whitespace().last()?.parse().ok())
        .context("the failures are counted")?;
    assert!(failures > 0, "{metrics}");

    // Space again: the state file is opened afresh and written (redb refuses every write after
    // an I/O error until then), so the service stops cleanly, storing what it shows.
    std::fs::remove_file(dir.join("filler"))?;
    broadcast
        .process
        .signal(nix::sys::signal::Signal::SIGTERM)?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let exited = loop {
        if let Err(exited) = broadcast.process.check_running() {
            break exited.to_string();
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the service did not stop"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        exited.ends_with("exit status: 0"),
        "stopped having stored the feeds: {exited}"
    );
    Ok(())
}

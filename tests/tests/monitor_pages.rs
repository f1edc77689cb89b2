//! The hall's monitor pages in a real headless Chromium against a running system: the big-board
//! view shows a move as it is released with the last move highlighted and the running clock
//! ticking between readings, German piece letters when asked, the hall mode cycles through the
//! boards, a page keeps working through a restart of the service, and a long game's big board
//! fits the screen whatever its shape. Screenshots of the grid and the big board at 1920×1080 go
//! to target/screenshots.

use std::{process::Command, time::Duration};

use anyhow::bail;
use boardcast_testkit::{
    BroadcastService, GameService, TestNats, browser::Browser, program, repo_root,
};

const ROUND: &str = "/tournaments/london-chess-classic-2016/rounds/9";

fn simulate(
    nats: &str,
    game_service: &str,
    boards: &str,
    speed: &str,
) -> anyhow::Result<std::process::Child> {
    Ok(Command::new(program("boardcast")?)
        .env("BOARDCAST_TOKEN", boardcast_testkit::admin_token())
        .arg("simulate")
        .arg("--pgn")
        .arg(repo_root().join("data/london-classic-2016.pgn"))
        .args(["--boards", boards, "--speed", speed, "--nats", nats])
        .args(["--game-service", game_service])
        .stdout(std::process::Stdio::null())
        .spawn()?)
}

/// The simulator stops with the test, whichever way it ends.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_big_board_shows_moves_as_released_with_ticking_clocks_through_a_restart()
-> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let game_service = GameService::start(&nats.url())?;
    let mut broadcast = BroadcastService::start(&nats.url())?;
    let browser = Browser::launch().await?;
    let mut board = browser
        .open(&broadcast.url(&format!("{ROUND}/boards/1")))
        .await?;
    board.set_viewport(1920, 1080).await?;
    // Opened before the round: it waits for it, asking again.
    board
        .wait_for(
            "document.getElementById('status').dataset.state === 'waiting'",
            Duration::from_secs(20),
        )
        .await?;
    // Slow enough that the clock visibly runs between presses.
    let _play = KillOnDrop(simulate(&nats.url(), &game_service.url(), "3", "20")?);

    board
        .wait_for(
            "document.getElementById('moves').textContent.includes('1. Nf3')",
            Duration::from_secs(30),
        )
        .await?;
    // The last move's squares are highlighted: those of the game's last move.
    let check_highlight = "(() => { const g = [...games.values()].find(g => g.board_number === 1); \
        const last = g.uci[g.uci.length - 1]; \
        const marked = [...document.querySelectorAll('#board .last')].map(s => s.dataset.sq).sort(); \
        return JSON.stringify(marked) === JSON.stringify([last.slice(0, 2), last.slice(2, 4)].sort()); })()";
    board
        .wait_for(check_highlight, Duration::from_secs(10))
        .await?;

    // The running clock ticks between readings: two looks a second apart at the same move.
    let look = "(() => { const g = [...games.values()].find(g => g.board_number === 1); \
        const running = document.querySelector('#side .clock.running'); \
        return JSON.stringify([g.moves.length, running ? running.textContent : null]); })()";
    let deadline = tokio::time::Instant::now() + Duration::from_secs(40);
    loop {
        let before = board.eval(look).await?;
        tokio::time::sleep(Duration::from_millis(1200)).await;
        let after = board.eval(look).await?;
        let parse = |v: &serde_json::Value| -> (u64, Option<String>) {
            serde_json::from_str(v.as_str().unwrap_or("[0,null]")).unwrap_or((0, None))
        };
        let ((moves_before, clock_before), (moves_after, clock_after)) =
            (parse(&before), parse(&after));
        if moves_before == moves_after
            && clock_before.is_some()
            && clock_after.is_some()
            && clock_before != clock_after
        {
            break;
        }
        if tokio::time::Instant::now() > deadline {
            bail!("the running clock never ticked between readings: {before} then {after}");
        }
    }
    let dir = repo_root().join("target/screenshots");
    std::fs::create_dir_all(&dir)?;
    board
        .screenshot(&dir.join("monitor-big-board-1920x1080.png"))
        .await?;

    // German piece letters when asked.
    let mut german = browser
        .open(&broadcast.url(&format!("{ROUND}/boards/1?lang=de")))
        .await?;
    german
        .wait_for(
            "document.getElementById('moves').textContent.includes('1. Sf3')",
            Duration::from_secs(30),
        )
        .await?;
    // The hall mode goes from board to board.
    let mut hall = browser
        .open(&broadcast.url(&format!("{ROUND}/hall?every=3")))
        .await?;
    let mut seen = std::collections::BTreeSet::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while seen.len() < 3 {
        // The page may not have a body yet right after it was opened.
        let shown = hall
            .eval("(document.body && document.body.dataset.board) || ''")
            .await?;
        seen.insert(shown.as_str().unwrap_or_default().to_owned());
        seen.remove("");
        if tokio::time::Instant::now() > deadline {
            bail!("the hall mode showed only boards {seen:?}");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    // A restart of the service: the page reconnects and goes on with the next moves.
    let moves_then = board
        .eval("[...games.values()].find(g => g.board_number === 1).moves.length")
        .await?
        .as_u64()
        .unwrap_or(0);
    broadcast.restart()?;
    board
        .wait_for(
            &format!(
                "document.getElementById('status').dataset.state === 'live' && \
                 [...games.values()].find(g => g.board_number === 1).moves.length > {moves_then}"
            ),
            Duration::from_secs(120),
        )
        .await?;

    // The grid of the round, at the same size.
    let mut grid = browser
        .open(&broadcast.url(&format!("{ROUND}/live")))
        .await?;
    grid.set_viewport(1920, 1080).await?;
    grid.wait_for(
        "document.querySelectorAll('.game .sq').length === 3 * 64",
        Duration::from_secs(20),
    )
    .await?;
    grid.screenshot(&dir.join("monitor-grid-1920x1080.png"))
        .await?;
    Ok(())
}

/// A long game on the big board: the board, both players' clocks and the game's status stay on
/// the screen, nothing scrolls but the moves, and the last move is in sight, on the screens halls
/// use (16:9, 16:10, 4:3, a projector's 1280×720) and on a phone held upright. On the round's
/// page every game's moves show their end, on a wide screen and on the phone.
#[tokio::test(flavor = "multi_thread")]
async fn a_long_game_fits_the_screen_on_the_big_board() -> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let game_service = GameService::start(&nats.url())?;
    let broadcast = BroadcastService::start(&nats.url())?;
    let _play = KillOnDrop(simulate(&nats.url(), &game_service.url(), "3", "max")?);
    let browser = Browser::launch().await?;
    let mut round = browser
        .open(&broadcast.url(&format!("{ROUND}/live")))
        .await?;
    // The longest of the round's games, once it is over.
    let longest = "(() => { const done = [...games.values()].filter(g => g.result && g.result !== '*'); \
        if (done.length < 3) return 0; \
        return done.reduce((a, b) => (b.moves.length > a.moves.length ? b : a)).board_number; })()";
    round
        .wait_for(&format!("{longest} > 0"), Duration::from_secs(120))
        .await?;
    let board_number = round.eval(longest).await?.as_u64().unwrap_or(0);
    let plies = round
        .eval(&format!(
            "[...games.values()].find(g => g.board_number === {board_number}).moves.length"
        ))
        .await?
        .as_u64()
        .unwrap_or(0);
    let summary = round
        .eval("JSON.stringify([...games.values()].map(g => [g.board_number, g.moves.length, g.result, g.status]))")
        .await?;
    assert!(plies >= 80, "the longest game has {plies} plies: {summary}");

    let mut board = browser
        .open(&broadcast.url(&format!("{ROUND}/boards/{board_number}")))
        .await?;
    let fits = "(() => { \
        const inside = el => { const r = el.getBoundingClientRect(); \
          return r.top >= 0 && r.left >= 0 && r.bottom <= innerHeight + 0.5 && r.right <= innerWidth + 0.5; }; \
        const root = document.documentElement; \
        const moves = document.getElementById('moves'); \
        return JSON.stringify({ \
          page_scrolls: root.scrollHeight > innerHeight + 0.5 || root.scrollWidth > innerWidth + 0.5, \
          board_on_screen: inside(document.getElementById('board')), \
          clocks_on_screen: [...document.querySelectorAll('#side .clock')].every(inside), \
          status_on_screen: inside(document.getElementById('game-status')), \
          last_move_in_sight: moves.scrollTop + moves.clientHeight >= moves.scrollHeight - 1, \
          result_shown: document.getElementById('moves').textContent.includes('-'), \
        }); })()";
    let all_fit = format!(
        "(s => !s.page_scrolls && s.board_on_screen && s.clocks_on_screen && s.status_on_screen \
         && s.last_move_in_sight && s.result_shown)(JSON.parse({fits}))"
    );
    let dir = repo_root().join("target/screenshots");
    std::fs::create_dir_all(&dir)?;
    for (width, height) in [
        (1920, 1080),
        (1920, 1200),
        (1024, 768),
        (1280, 720),
        (390, 844),
    ] {
        board.set_viewport(width, height).await?;
        if board
            .wait_for(&all_fit, Duration::from_secs(10))
            .await
            .is_err()
        {
            let seen = board.eval(fits).await?;
            bail!("board {board_number} ({plies} plies) at {width}×{height}: {seen}");
        }
    }
    board
        .screenshot(&dir.join("monitor-big-board-long-game-phone.png"))
        .await?;

    // The round's page, and the screen turned or the window resized once it shows the games:
    // every game's last move stays in sight.
    let every_end = "[...document.querySelectorAll('.game .moves')].length === 3 && \
        [...document.querySelectorAll('.game .moves')].every(m => \
            m.scrollTop + m.clientHeight >= m.scrollHeight - 1)";
    let mut page = browser
        .open(&broadcast.url(&format!("{ROUND}/live")))
        .await?;
    for (width, height) in [(1920, 1080), (390, 844), (844, 390), (1280, 720)] {
        page.set_viewport(width, height).await?;
        if page
            .wait_for(every_end, Duration::from_secs(10))
            .await
            .is_err()
        {
            let seen = page
                .eval(
                    "JSON.stringify([...document.querySelectorAll('.game .moves')].map(m => \
                    [m.scrollTop, m.clientHeight, m.scrollHeight]))",
                )
                .await?;
            bail!("the round's page at {width}×{height}: moves boxes (top, height, length) {seen}");
        }
    }
    Ok(())
}

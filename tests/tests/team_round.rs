//! A team round on simulated boards: two matches of four boards, the players' teams set up from
//! the pairing, shown as matches with board and match points on the live page (headless
//! Chromium) and in the round's JSON, and carried as `WhiteTeam`/`BlackTeam` in the PGN.

use std::{process::Command, time::Duration};

use boardcast_testkit::{
    BroadcastService, GameService, TestNats, browser::Browser, program, repo_root,
};

/// Eight games of the London Chess Classic as round 1 of a team event: boards 1–4 Alpha against
/// Beta, 5–8 Gamma against Delta, colours alternating within each match. Returns the PGN and
/// each board's result.
fn team_round_pgn() -> anyhow::Result<(String, Vec<String>)> {
    let source = std::fs::read_to_string(repo_root().join("data/london-classic-2016.pgn"))?;
    let mut pgn = String::new();
    let mut results = Vec::new();
    for (index, game) in source.split("[Event ").skip(1).take(8).enumerate() {
        let board = index + 1;
        let (first, second) = if board <= 4 {
            ("Alpha", "Beta")
        } else {
            ("Gamma", "Delta")
        };
        let (white, black) = if board % 2 == 1 {
            (first, second)
        } else {
            (second, first)
        };
        let mut lines = Vec::new();
        for line in format!("[Event {game}").lines() {
            if line.starts_with("[Round ") {
                lines.push(format!("[Round \"1.{board}\"]"));
                lines.push(format!("[WhiteTeam \"{white}\"]"));
                lines.push(format!("[BlackTeam \"{black}\"]"));
            } else {
                if let Some(result) = line.strip_prefix("[Result \"") {
                    results.push(result.trim_end_matches("\"]").to_owned());
                }
                lines.push(line.to_owned());
            }
        }
        pgn.push_str(&lines.join("\n"));
        pgn.push_str("\n\n");
    }
    anyhow::ensure!(results.len() == 8, "eight games with results");
    Ok((pgn, results))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_team_round_shows_its_matches_with_points_on_the_page_and_in_the_feeds()
-> anyhow::Result<()> {
    let (pgn, results) = team_round_pgn()?;
    let nats = TestNats::start()?;
    let game_service = GameService::start(&nats.url())?;
    let broadcast = BroadcastService::start(&nats.url())?;
    broadcast.wait_ready(Duration::from_secs(30)).await?;
    let file = tempfile::NamedTempFile::new()?;
    std::fs::write(file.path(), &pgn)?;
    let status = Command::new(program("boardcast")?)
        .env("BOARDCAST_TOKEN", boardcast_testkit::admin_token())
        .arg("simulate")
        .arg("--pgn")
        .arg(file.path())
        .args(["--boards", "8", "--speed", "max", "--nats", &nats.url()])
        .args(["--game-service", &game_service.url()])
        .args(["--tournament", "team-cup"])
        .stdout(std::process::Stdio::null())
        .status()?;
    anyhow::ensure!(status.success(), "boardcast simulate failed: {status}");

    // The round's JSON: two matches, their boards, every board's points, the match points.
    let url = broadcast.url("/tournaments/team-cup/rounds/1.json");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let round = loop {
        let response = reqwest::get(&url).await?;
        if response.status().is_success() {
            let round: serde_json::Value = response.json().await?;
            let over = round["games"]
                .as_array()
                .is_some_and(|g| g.len() == 8 && g.iter().all(|g| g["result"] != "*"));
            if over {
                break round;
            }
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the round did not end"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    let half = |result: &str| match result {
        "1-0" => (2, 0),
        "0-1" => (0, 2),
        _ => (1, 1),
    };
    let matches = round["matches"]
        .as_array()
        .expect("a team round has matches");
    assert_eq!(matches.len(), 2);
    for (m, (first, second), boards) in [
        (&matches[0], ("Alpha", "Beta"), 1..=4),
        (&matches[1], ("Gamma", "Delta"), 5..=8),
    ] {
        assert_eq!(m["teams"], serde_json::json!([first, second]));
        assert_eq!(
            m["boards"],
            serde_json::json!(boards.clone().collect::<Vec<_>>())
        );
        // The first team has White on the odd boards.
        let (mut a, mut b) = (0, 0);
        for board in boards {
            let (white, black) = half(&results[board - 1]);
            if board % 2 == 1 {
                (a, b) = (a + white, b + black);
            } else {
                (a, b) = (a + black, b + white);
            }
        }
        assert_eq!(
            m["points"],
            serde_json::json!([f64::from(a) / 2.0, f64::from(b) / 2.0])
        );
        let expected = match a.cmp(&b) {
            std::cmp::Ordering::Greater => [2, 0],
            std::cmp::Ordering::Less => [0, 2],
            std::cmp::Ordering::Equal => [1, 1],
        };
        assert_eq!(m["match_points"], serde_json::json!(expected));
    }
    let first = &round["games"][0];
    assert_eq!(
        (
            first["white"]["team"].as_str(),
            first["black"]["team"].as_str()
        ),
        (Some("Alpha"), Some("Beta"))
    );

    // The PGN carries the teams.
    let pgn_feed = reqwest::get(broadcast.url("/tournaments/team-cup/rounds/1.pgn"))
        .await?
        .text()
        .await?;
    assert!(pgn_feed.contains("[WhiteTeam \"Alpha\"]"), "{pgn_feed}");
    assert!(pgn_feed.contains("[BlackTeam \"Delta\"]"), "{pgn_feed}");

    // The live page shows both matches, final, with their scores.
    let browser = Browser::launch().await?;
    let mut page = browser
        .open(&broadcast.url("/tournaments/team-cup/rounds/1/live"))
        .await?;
    page.wait_for(
        "document.querySelectorAll('#matches .match').length === 2 && \
         !document.querySelector('#matches .going')",
        Duration::from_secs(30),
    )
    .await?;
    let shown = page
        .eval("[...document.querySelectorAll('#matches .match')].map(m => m.innerText)")
        .await?;
    let score = |half: u32| {
        let whole = half / 2;
        match (whole, half % 2) {
            (0, 1) => "½".to_owned(),
            (w, 1) => format!("{w}½"),
            (w, _) => w.to_string(),
        }
    };
    let points =
        |m: &serde_json::Value, i: usize| (m["points"][i].as_f64().unwrap_or(0.0) * 2.0) as u32;
    for (index, m) in matches.iter().enumerate() {
        let expected = format!(
            "{} {} – {} {}",
            m["teams"][0].as_str().unwrap_or_default(),
            score(points(m, 0)),
            score(points(m, 1)),
            m["teams"][1].as_str().unwrap_or_default()
        );
        assert_eq!(shown[index].as_str(), Some(expected.as_str()));
    }

    // The index: the tournament by name, place and date, the round finished, the teams by match
    // points and the players by points; readable on a phone without sideways scrolling.
    let mut index = browser.open(&broadcast.url("/")).await?;
    index
        .wait_for(
            "document.querySelector('.tournament') !== null",
            Duration::from_secs(20),
        )
        .await?;
    let text = index.eval("document.body.innerText").await?;
    let text = text.as_str().unwrap_or_default().to_owned();
    for shown in [
        "London Chess Classic 2016",
        "London · 2016.12.17 – 2016.12.18",
        "Round 1 2016.12.17",
        "finished",
        "8 of 8 games over",
        "Teams",
        "Standings",
    ] {
        assert!(text.contains(shown), "{shown:?} on the index: {text}");
    }
    let teams = index
        .eval("[...document.querySelectorAll('table.teams tbody tr')].map(r => [...r.cells].map(c => c.innerText))")
        .await?;
    assert_eq!(teams.as_array().map(Vec::len), Some(4), "{teams}");
    let top_match_points: u64 = matches
        .iter()
        .flat_map(|m| m["match_points"].as_array().cloned().unwrap_or_default())
        .filter_map(|p| p.as_u64())
        .max()
        .unwrap_or(0);
    assert_eq!(teams[0][2], serde_json::json!(top_match_points.to_string()));
    let players = index
        .eval("document.querySelectorAll('table.players tbody tr').length")
        .await?;
    let names: std::collections::BTreeSet<&str> = round["games"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|g| [g["white"]["name"].as_str(), g["black"]["name"].as_str()])
        .flatten()
        .collect();
    assert_eq!(
        players,
        serde_json::json!(names.len()),
        "every player of the round"
    );
    let dir = repo_root().join("target/screenshots");
    std::fs::create_dir_all(&dir)?;
    for (name, width, height) in [
        ("index-phone.png", 390, 844),
        ("index-desktop.png", 1280, 900),
    ] {
        index.set_viewport(width, height).await?;
        let overflow = index
            .eval("document.documentElement.scrollWidth - window.innerWidth")
            .await?;
        assert!(
            overflow.as_i64().unwrap_or(1) <= 0,
            "{name}: the page is wider than the screen"
        );
        let path = dir.join(name);
        index.screenshot(&path).await?;
        assert!(std::fs::metadata(&path)?.len() > 1000, "{name} saved");
    }
    Ok(())
}

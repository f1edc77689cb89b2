//! A broadcast file as real events publish them, played through the whole system: scores that end
//! with the DGT result signal recorded as king moves, a move that is not legal, round and board
//! numbers that repeat (two broadcast groups merged), a TimeControl in prose. Every game is read
//! and played as far as it is legal; the feed shows those moves, the results and the clocks.

mod support;

use std::{collections::BTreeMap, process::Command, time::Duration};

use anyhow::{Context as _, bail};
use boardcast_rules::pgn::{PgnGame, read_games, read_pgn};
use boardcast_schema::game::v1::ListGamesRequest;
use boardcast_testkit::{BroadcastService, GameService, TestNats, program};

/// Two groups of the "Cup", each with boards 1.1 and 1.2; clocks on every ply.
fn merged_broadcast_file() -> String {
    let game = |round: &str, white: &str, black: &str, result: &str, moves: &[&str], tail: &str| {
        let mut clock = 5_400;
        let mut text = String::new();
        for (ply, san) in moves.iter().enumerate() {
            if ply % 2 == 0 {
                text.push_str(&format!("{}. ", ply / 2 + 1));
            } else {
                clock -= 20;
            }
            text.push_str(&format!(
                "{san} {{[%clk {}:{:02}:{:02}]}} ",
                clock / 3600,
                clock / 60 % 60,
                clock % 60
            ));
        }
        format!(
            "[Event \"Cup\"]\n[Round \"{round}\"]\n[White \"{white}\"]\n[Black \"{black}\"]\n\
             [Result \"{result}\"]\n[TimeControl \"90 min + 30 sec/move\"]\n\n{text}{tail} {result}\n\n"
        )
    };
    [
        // The kings on e4 and d5 after the last move: 1-0.
        game(
            "1.1",
            "Alpha",
            "Bravo",
            "1-0",
            &["e4", "e5", "Nf3", "Nc6", "Bb5", "a6"],
            "4. Ke4 Kd5",
        ),
        // On d4 and e5, the score's result left open: 0-1.
        game(
            "1.2",
            "Charlie",
            "Delta",
            "*",
            &["d4", "d5", "c4", "e6", "Nc3", "Nf6"],
            "4. Kd4 Ke5",
        ),
        // The second group: a move that is not legal, then more.
        game(
            "1.1",
            "Echo",
            "Foxtrot",
            "1/2-1/2",
            &["c4", "c5", "Nc3", "Nc6", "g3", "g6", "Bg2"],
            "4... Kd6 5. Nf3",
        ),
        game(
            "1.2",
            "Golf",
            "Hotel",
            "1-0",
            &["e4", "e5", "Qh5", "Nc6", "Bc4", "Nf6", "Qxf7#"],
            "",
        ),
    ]
    .concat()
}

async fn round_pgn(broadcast: &BroadcastService) -> anyhow::Result<Vec<PgnGame>> {
    let response = reqwest::get(broadcast.url("/tournaments/cup/rounds/1.pgn")).await?;
    if !response.status().is_success() {
        bail!("{}", response.status());
    }
    Ok(read_games(&response.text().await?)?)
}

#[tokio::test(flavor = "multi_thread")]
async fn every_game_of_a_real_style_broadcast_file_is_played_as_far_as_it_is_legal()
-> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let game_service = GameService::start(&nats.url())?;
    let broadcast = BroadcastService::start(&nats.url())?;
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("cup.pgn");
    std::fs::write(&path, merged_broadcast_file())?;
    let simulate = |extra: &[&str]| -> anyhow::Result<std::process::Output> {
        Command::new(program("boardcast")?)
            .env("BOARDCAST_TOKEN", boardcast_testkit::admin_token())
            .arg("simulate")
            .arg("--pgn")
            .arg(&path)
            .args(["--boards", "4", "--speed", "max"])
            .args(["--nats", &nats.url(), "--game-service", &game_service.url()])
            .args(extra)
            .output()
            .context("running boardcast simulate")
    };

    // Repeated round and board numbers: refused at once, saying which and what to do, and
    // nothing set up.
    let refused = simulate(&[])?;
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("cup round 1 board 1: game 1 (Alpha - Bravo), game 3 (Echo - Foxtrot)"),
        "{said}"
    );
    assert!(said.contains("--boards-in-file-order"), "{said}");
    let mut client = boardcast_testkit::admin_client(&game_service.url()).await?;
    let listed = client
        .list_games(ListGamesRequest::default())
        .await?
        .into_inner();
    assert!(listed.games.is_empty(), "nothing set up: {listed:?}");

    // Numbered in the file's order: every game played, each cut short where it stops being
    // legal, with what was done said.
    let played = simulate(&["--boards-in-file-order"])?;
    let said = String::from_utf8_lossy(&played.stderr);
    assert!(played.status.success(), "{said}");
    assert!(said.contains("a DGT board's result signal (1-0)"), "{said}");
    assert!(said.contains("a DGT board's result signal (0-1)"), "{said}");
    assert!(said.contains("4... Kd6 is not legal"), "{said}");
    assert!(
        said.contains("Round \"1.1\" played as round 1, board 3"),
        "{said}"
    );
    assert!(said.contains("read as 5400+30"), "{said}");

    let source = read_pgn(&merged_broadcast_file());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let served: BTreeMap<String, PgnGame> = loop {
        let games = round_pgn(&broadcast).await.unwrap_or_default();
        if games.len() == 4 && games.iter().all(|g| g.result != "*") {
            break games
                .into_iter()
                .map(|g| (g.tag("White").unwrap_or("?").to_owned(), g))
                .collect();
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the round did not finish in the feed: {games:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let results = [
        ("Alpha", "1-0"),
        ("Charlie", "0-1"),
        ("Echo", "1/2-1/2"),
        ("Golf", "1-0"),
    ];
    for (read, (white, result)) in source.games.iter().zip(results) {
        let kept = &read.game.game;
        let game = served
            .get(white)
            .with_context(|| format!("{white}'s game"))?;
        assert_eq!(
            support::uci_moves(game)?,
            support::uci_moves(kept)?,
            "{white}: the moves as far as the score is legal"
        );
        assert_eq!(game.result, result, "{white}");
        for (ply, (shown, source)) in game.moves.iter().zip(&kept.moves).enumerate() {
            let mate = ply + 1 == kept.moves.len() && source.san.ends_with('#');
            match (shown.clock_ms, source.clock_ms) {
                // Mate is completed without a press: its clock is what the clock showed then,
                // before the 30 s increment a press would have added (to whole seconds).
                (Some(shown), Some(source)) if mate => assert!(
                    shown.abs_diff(source - 30_000) <= 1_000,
                    "{white}: the mating move's clock {shown} against {source}"
                ),
                (Some(shown), Some(source)) => {
                    assert_eq!(shown, source, "{white}: the clock after ply {}", ply + 1)
                }
                (None, Some(_)) => panic!("{white}: no clock after ply {}", ply + 1),
                _ => {}
            }
        }
    }
    Ok(())
}

//! From simulated boards to the PGN a viewer downloads, with every part a real process: NATS
//! with users and permissions (each program connects as its own user), the game service, the
//! broadcast service and `boardcast simulate`.

mod support;

use std::{collections::HashMap, process::Command, time::Duration};

use anyhow::{Context as _, bail};
use boardcast_kit::nats_access::Role;
use boardcast_rules::pgn::{PgnGame, read_games};
use boardcast_schema::game::v1::GetGameRequest;
use boardcast_testkit::{BroadcastService, GameService, TestNats, program, repo_root};

const BOARDS: usize = 6;

async fn fetch_pgn(url: &str) -> anyhow::Result<Vec<PgnGame>> {
    let response = reqwest::get(url).await?;
    if !response.status().is_success() {
        bail!("{url}: {}", response.status());
    }
    Ok(read_games(&response.text().await?)?)
}

#[tokio::test(flavor = "multi_thread")]
async fn simulated_boards_reach_the_pgn_feed_move_for_move() -> anyhow::Result<()> {
    let nats = TestNats::start_secured(&[])?;
    let game_service = GameService::start(&nats.url_for(&Role::GameService)?)?;
    let broadcast = BroadcastService::start(&nats.url_for(&Role::BroadcastService)?)?;

    let source_path = repo_root().join("data/london-classic-2016.pgn");
    let source = read_games(&std::fs::read_to_string(&source_path)?)?;
    let expected: Vec<&PgnGame> = source.iter().take(BOARDS).collect();

    let status = Command::new(program("boardcast")?)
        .env("BOARDCAST_TOKEN", boardcast_testkit::admin_token())
        .arg("simulate")
        .arg("--pgn")
        .arg(&source_path)
        .args(["--boards", &BOARDS.to_string(), "--speed", "max"])
        .args(["--nats", &nats.url_for(&Role::Simulator)?])
        .args(["--game-service", &game_service.url()])
        .status()
        .context("running boardcast simulate")?;
    assert!(status.success(), "boardcast simulate failed: {status}");

    // The feeds are per round; the first six games are round 9 (boards 1-5) and round 8.
    let mut rounds: Vec<&str> = expected
        .iter()
        .filter_map(|g| g.tag("Round")?.split('.').next())
        .collect();
    rounds.dedup();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    let served: HashMap<String, PgnGame> = loop {
        let mut served = HashMap::new();
        for round in &rounds {
            let url = broadcast.url(&format!(
                "/tournaments/london-chess-classic-2016/rounds/{round}.pgn"
            ));
            if let Ok(games) = fetch_pgn(&url).await {
                for game in games {
                    served.insert(game.tag("Round").unwrap_or("?").to_owned(), game);
                }
            }
        }
        let finished = served.values().filter(|g| g.result != "*").count();
        if finished == BOARDS {
            break served;
        }
        if tokio::time::Instant::now() > deadline {
            bail!("only {finished} of {BOARDS} games finished in the feed");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };

    for source_game in &expected {
        let round = source_game
            .tag("Round")
            .context("source game without round")?;
        let game = served
            .get(round)
            .with_context(|| format!("game {round} not served"))?;
        assert_eq!(game.tag("White"), source_game.tag("White"), "{round}");
        assert_eq!(game.tag("Black"), source_game.tag("Black"), "{round}");
        assert_eq!(
            support::uci_moves(game)?,
            support::uci_moves(source_game)?,
            "moves of {round}"
        );
        assert_eq!(game.result, source_game.result, "result of {round}");
        // Clock times come from the simulated clock presses, which follow the score's [%clk].
        for (i, (served_move, source_move)) in game.moves.iter().zip(&source_game.moves).enumerate()
        {
            if let (Some(a), Some(b)) = (served_move.clock_ms, source_move.clock_ms) {
                assert_eq!(a, b, "clock after ply {} of {round}", i + 1);
            }
        }
    }

    // The game service answers for the same games, with their hash-chain heads.
    let mut client = boardcast_testkit::admin_client(&game_service.url()).await?;
    let state = client
        .get_game(GetGameRequest {
            game_id: "london-chess-classic-2016-r9-b1".into(),
        })
        .await?
        .into_inner();
    assert_eq!(state.moves.len(), expected[0].moves.len());
    assert_eq!(state.chain_head.len(), 32);
    Ok(())
}

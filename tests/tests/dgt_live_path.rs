//! The live path from a DGT board to the game: raw DGT byte streams (simulated London games, with
//! every human and sensor disturbance), read by `boardcast gateway replay-dgt` as a gateway reads
//! a board, through its outbox to NATS, folded by the game service — into exactly the source
//! games' moves and results.

mod support;

use std::{process::Command, time::Duration};

use anyhow::bail;
use boardcast_rules::pgn::read_games;
use boardcast_schema::game::v1::{
    CreateGameRequest, GameResult, GameStarted, GetGameRequest, Player, TimeControl, TimePeriod,
    game_service_client::GameServiceClient,
};
use boardcast_testkit::{GameService, TestNats, program, repo_root};

/// Boards played through the whole path; every game of the file is replayed through the same
/// decoder and inference by `cargo test -p boardcast-gateway --test dgt_replay`.
const BOARDS: usize = 6;

fn result_token(result: GameResult) -> &'static str {
    match result {
        GameResult::WhiteWins => "1-0",
        GameResult::BlackWins => "0-1",
        GameResult::Draw => "1/2-1/2",
        GameResult::Unspecified => "*",
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn dgt_byte_streams_through_the_gateway_become_the_source_games() -> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let service = GameService::start(&nats.url())?;
    let dir = tempfile::tempdir()?;
    let source_path = repo_root().join("data/london-classic-2016.pgn");
    let source = read_games(&std::fs::read_to_string(&source_path)?)?;

    let out = Command::new(program("boardcast")?)
        .args(["simulate", "--pgn"])
        .arg(&source_path)
        .args(["--boards", &BOARDS.to_string(), "--dgt-out"])
        .arg(dir.path())
        .output()?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let mut client = GameServiceClient::connect(service.url()).await?;
    for (i, game) in source.iter().take(BOARDS).enumerate() {
        let player = |tag: &str| {
            Some(Player {
                name: game.tag(tag).unwrap_or("?").to_owned(),
                ..Default::default()
            })
        };
        client
            .create_game(CreateGameRequest {
                game: Some(GameStarted {
                    tournament_id: "dgt-live".into(),
                    round: 1,
                    board_number: i as u32 + 1,
                    board_id: format!("sim-{}", i + 1),
                    white: player("White"),
                    black: player("Black"),
                    time_control: Some(TimeControl {
                        periods: vec![TimePeriod {
                            moves: 0,
                            base_ms: 7_200_000,
                            ..Default::default()
                        }],
                    }),
                    ..Default::default()
                }),
                actor: "test".into(),
                ..Default::default()
            })
            .await?;
    }

    // Each capture through its own gateway outbox, as separate gateway processes would.
    for board in 1..=BOARDS {
        let out = Command::new(program("boardcast")?)
            .args(["gateway", "replay-dgt"])
            .arg(dir.path().join(format!("sim-{board}.dgt")))
            .args(["--board-id", &format!("sim-{board}"), "--nats", &nats.url()])
            .arg("--outbox")
            .arg(dir.path().join(format!("outbox-{board}.redb")))
            .output()?;
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    let deadline = tokio::time::Instant::now() + Duration::from_secs(300);
    for (i, expected) in source.iter().take(BOARDS).enumerate() {
        let game_id = format!("dgt-live-r1-b{}", i + 1);
        loop {
            let state = client
                .get_game(GetGameRequest {
                    game_id: game_id.clone(),
                })
                .await?
                .into_inner();
            if state.result() != GameResult::Unspecified {
                let moves: Vec<String> = state.moves.iter().map(|m| m.uci.clone()).collect();
                assert_eq!(
                    moves,
                    support::uci_moves(expected)?,
                    "moves of {game_id}, ended by {:?}",
                    state.termination()
                );
                assert_eq!(
                    result_token(state.result()),
                    expected.result,
                    "result of {game_id}"
                );
                break;
            }
            if tokio::time::Instant::now() > deadline {
                bail!(
                    "{game_id} did not end: {} of {} moves",
                    state.moves.len(),
                    expected.moves.len()
                );
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
    Ok(())
}

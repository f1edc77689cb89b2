//! The live path from a DGT board to the game: raw DGT byte streams (simulated London games, with
//! every human and sensor disturbance), read by `boardcast gateway replay-dgt` as a gateway reads
//! a board, through its outbox to NATS, folded by the game service — into exactly the source
//! games' moves and results.

mod support;

use std::{process::Command, time::Duration};

use anyhow::bail;
use boardcast_rules::pgn::read_games;
use boardcast_schema::game::v1::{
    CreateGameRequest, GameResult, GameStarted, GetGameRequest, ListBoardsRequest, Player,
    SetupAspect, Source, TimeControl, TimePeriod, game_event::Kind,
};
use boardcast_testkit::{GameService, TestNats, program, repo_root};

/// Boards played through the whole path: 6, or `BOARDCAST_LIVE_BOARDS` (up to the file's 45
/// games) for a longer run. Every game of the file goes through the same decoder and aggregate
/// in `cargo test -p boardcast-gateway --test dgt_replay`.
fn boards() -> usize {
    std::env::var("BOARDCAST_LIVE_BOARDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(6)
}

#[tokio::test(flavor = "multi_thread")]
async fn dgt_byte_streams_through_the_gateway_become_the_source_games() -> anyhow::Result<()> {
    through_the_live_path("dgt-live", &[]).await
}

/// Hall set-ups the gateways are not told of, with tidy players: White's clock on the right (the
/// gateway at its default, left), and a clock turned round by the arbiter at move 20. Every game
/// comes out complete and exact, each move completed by its own press, with no illegal move,
/// irregularity or press in doubt; `replay-dgt --pgn` prints what the service recorded.
#[tokio::test(flavor = "multi_thread")]
async fn hall_clock_set_ups_are_worked_out_from_the_presses() -> anyhow::Result<()> {
    through_the_live_path(
        "dgt-right",
        &["--dgt-disturbances", "none", "--white-clock", "right"],
    )
    .await?;
    through_the_live_path(
        "dgt-turned",
        &["--dgt-disturbances", "none", "--clock-turned-at-move", "20"],
    )
    .await
}

/// Simulates the first boards' London games as DGT captures (`simulate_args` added), publishes
/// each through its own `gateway replay-dgt` into a game service with tournament `tournament`,
/// and checks every game against its source. With tidy play (`--dgt-disturbances none`) it also
/// checks that nothing irregular was recorded and that `replay-dgt --pgn` prints the same game.
async fn through_the_live_path(tournament: &str, simulate_args: &[&str]) -> anyhow::Result<()> {
    let tidy = simulate_args.contains(&"none");
    let nats = TestNats::start()?;
    let service = GameService::start(&nats.url())?;
    let dir = tempfile::tempdir()?;
    let source_path = repo_root().join("data/london-classic-2016.pgn");
    let source = read_games(&std::fs::read_to_string(&source_path)?)?;

    let out = Command::new(program("boardcast")?)
        .env("BOARDCAST_TOKEN", boardcast_testkit::admin_token())
        .args(["simulate", "--pgn"])
        .arg(&source_path)
        .args(["--boards", &boards().to_string(), "--dgt-out"])
        .arg(dir.path())
        .args(simulate_args)
        .output()?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let mut client = boardcast_testkit::admin_client(&service.url()).await?;
    let time_control = TimeControl {
        periods: vec![TimePeriod {
            moves: 0,
            base_ms: 7_200_000,
            ..Default::default()
        }],
    };
    for (i, game) in source.iter().take(boards()).enumerate() {
        let player = |tag: &str| {
            Some(Player {
                name: game.tag(tag).unwrap_or("?").to_owned(),
                ..Default::default()
            })
        };
        client
            .create_game(CreateGameRequest {
                game: Some(GameStarted {
                    tournament_id: tournament.into(),
                    round: 1,
                    board_number: i as u32 + 1,
                    board_id: format!("sim-{}", i + 1),
                    white: player("White"),
                    black: player("Black"),
                    time_control: Some(time_control.clone()),
                    ..Default::default()
                }),
                request_id: boardcast_kit::client::new_request_id(),
                ..Default::default()
            })
            .await?;
    }

    // Each capture through its own gateway outbox, as separate gateway processes would, with
    // the gateway's default settings.
    for board in 1..=boards() {
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

    // A debug build decides a few hundred observations a second; a board's capture has one
    // clock reading per second of play.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60 * boards().max(5) as u64);
    for (i, expected) in source.iter().take(boards()).enumerate() {
        let game_id = format!("{tournament}-r1-b{}", i + 1);
        let state = loop {
            let state = client
                .get_game(GetGameRequest {
                    game_id: game_id.clone(),
                })
                .await?
                .into_inner();
            if state.result() != GameResult::Unspecified {
                break state;
            }
            if tokio::time::Instant::now() > deadline {
                bail!(
                    "{game_id} did not end: {} of {} moves",
                    state.moves.len(),
                    expected.moves.len()
                );
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        };
        let moves: Vec<String> = state.moves.iter().map(|m| m.uci.clone()).collect();
        assert_eq!(
            moves,
            support::uci_moves(expected)?,
            "moves of {game_id}, ended by {:?}",
            state.termination()
        );
        assert_eq!(
            boardcast_game::terms::result_token(state.result()),
            expected.result,
            "result of {game_id}"
        );
        if !tidy {
            continue;
        }
        let events = support::game_events(&mut client, &game_id).await?;
        let irregular: Vec<_> = events
            .iter()
            .filter(|e| {
                matches!(
                    e.kind,
                    Some(
                        Kind::IllegalMove(_)
                            | Kind::Irregularity(_)
                            | Kind::PressInDoubt(_)
                            | Kind::Reconstructed(_)
                    )
                )
            })
            .collect();
        assert!(irregular.is_empty(), "{game_id}: {irregular:?}");
        // Every move but a mating one completed by a press of its own.
        let mut presses = std::collections::HashSet::new();
        for event in &events {
            if let (Some(Kind::MoveCompleted(m)), Some(p)) = (&event.kind, &event.provenance)
                && p.source() == Source::Clock
            {
                assert!(
                    presses.insert(p.device_seqs.last().copied()),
                    "{game_id}: ply {} shares its press",
                    m.ply
                );
            }
        }
        assert!(
            presses.len() + 1 >= state.moves.len(),
            "{game_id}: {} moves, {} presses",
            state.moves.len(),
            presses.len()
        );

        // The capture replayed to PGN prints what the service recorded: moves and clocks.
        let out = Command::new(program("boardcast")?)
            .args(["gateway", "replay-dgt", "--pgn", "--time-control", "7200"])
            .arg(dir.path().join(format!("sim-{}.dgt", i + 1)))
            .output()?;
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let printed = read_games(&String::from_utf8(out.stdout)?)?;
        let printed_moves: Vec<(String, Option<u64>)> = printed[0]
            .moves
            .iter()
            .map(|m| (m.san.clone(), m.clock_ms))
            .collect();
        let recorded: Vec<(String, Option<u64>)> = state
            .moves
            .iter()
            .map(|m| {
                let clock = if m.ply % 2 == 1 {
                    m.white_remaining_ms
                } else {
                    m.black_remaining_ms
                };
                (m.san.clone(), clock)
            })
            .collect();
        assert_eq!(printed_moves, recorded, "{game_id}");
        assert_eq!(printed[0].result, expected.result, "{game_id}");
    }
    // The boards whose clocks stand otherwise than their gateways were told show it, with the
    // fix.
    let boards = client
        .list_boards(ListBoardsRequest::default())
        .await?
        .into_inner()
        .boards;
    assert_eq!(boards.len(), self::boards());
    let right = simulate_args.contains(&"right");
    let turned = simulate_args.contains(&"--clock-turned-at-move");
    for (board, game) in boards.iter().zip(&source) {
        // White's time ends up on the right: set up so, or turned round before move 20.
        let right = right != (turned && game.moves.len() >= 39);
        let told: Vec<_> = board
            .setup_mismatches
            .iter()
            .filter(|m| m.aspect() == SetupAspect::ClockSides)
            .collect();
        assert_eq!(told.len(), usize::from(right), "{board:?}");
        if let Some(mismatch) = told.first() {
            assert!(mismatch.fix.contains("--white-clock right"), "{mismatch:?}");
            assert!(mismatch.fix.contains(&board.board_id), "{mismatch:?}");
        }
    }
    Ok(())
}

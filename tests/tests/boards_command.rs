//! `boardcast boards` against a running system: the hall's check before a round names the
//! boards played on while no game takes their moves (its game over, or none set up on it) and
//! a board's low battery; only those who set games up see the boards with no game.

use std::time::Duration;

use async_nats::jetstream;
use boardcast_access::{Grant, Role};
use boardcast_schema::device::v1::{DeviceState, observation};
use boardcast_schema::game::v1::{
    ActRequest, ArbiterAction, CreateGameRequest, DeclareResult, GameResult, ListBoardsRequest,
    arbiter_action::Action,
};
use boardcast_testkit::{
    GameService, GameServiceOptions, TestNats, TestUsers, program, publish_observation, showing,
};

const TOURNAMENT: &str = "boards-check";

/// Board `board`'s observation `device_seq`: its gateway reporting it connected.
async fn report(
    js: &jetstream::Context,
    board: &str,
    device_seq: u64,
    battery_percent: u32,
) -> anyhow::Result<()> {
    boardcast_testkit::publish_status(
        js,
        board,
        device_seq,
        DeviceState::Connected,
        battery_percent,
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn the_hall_check_names_boards_played_on_with_no_game_to_take_their_moves()
-> anyhow::Result<()> {
    let nats = TestNats::start()?;
    // Reads open to anyone (a public hall's choice): the traffic is still for a credential.
    let game_service = GameService::start_with(
        &nats.url(),
        GameServiceOptions {
            args: vec!["--open-reads".into()],
            ..Default::default()
        },
    )?;
    let mut admin = game_service.client().await?;
    let js = jetstream::new(async_nats::connect(nats.url()).await?);
    // Board 3 was played on before its game was set up (the last round's game, say).
    publish_observation(&js, "check-3", 1, showing(&["e4", "e5"])?).await?;
    for number in 1..=4 {
        let board = format!("check-{number}");
        admin
            .create_game(CreateGameRequest {
                game: Some(boardcast_testkit::game_on_board(TOURNAMENT, number, &board)),
                replace_unfinished: false,
                request_id: boardcast_kit::client::new_request_id(),
                revise: false,
            })
            .await?;
    }
    // The games of boards 2 to 4 are over (neither player came). Board 2 is set up for the next
    // game, board 3 sends nothing more, board 4 is played on all the same.
    for board_number in 2..=4 {
        admin
            .act(ActRequest {
                game_id: boardcast_game::game_id_for(TOURNAMENT, 1, board_number),
                action: Some(ArbiterAction {
                    action: Some(Action::Result(DeclareResult {
                        result: GameResult::BothLose as i32,
                        reason: "neither player came".into(),
                        article: String::new(),
                    })),
                    ..Default::default()
                }),
                request_id: boardcast_kit::client::new_request_id(),
            })
            .await?;
    }
    report(&js, "check-1", 1, 15).await?;
    // Board 1's clock cable is out: its board says no clock is connected.
    publish_observation(
        &js,
        "check-1",
        2,
        observation::Kind::Status(boardcast_schema::device::v1::DeviceStatus {
            state: DeviceState::Connected as i32,
            battery_percent: Some(15),
            clock_connected: Some(false),
            ..Default::default()
        }),
    )
    .await?;
    report(&js, "check-2", 1, 90).await?;
    publish_observation(&js, "check-2", 2, showing(&[])?).await?;
    report(&js, "check-4", 1, 90).await?;
    publish_observation(&js, "check-4", 2, showing(&["d4"])?).await?;
    // A board nobody paired (its id mistyped in the pairing, say).
    report(&js, "check-9", 1, 90).await?;

    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let listed = loop {
        let listed = admin
            .list_boards(ListBoardsRequest { with_traffic: true })
            .await?
            .into_inner();
        let stray = listed.boards.iter().any(|b| b.board_id == "check-9");
        let low = listed
            .boards
            .iter()
            .find(|b| b.board_id == "check-1" && b.clock_connected == Some(false))
            .and_then(|b| b.battery_percent);
        let played_on = listed
            .boards
            .iter()
            .any(|b| b.board_id == "check-4" && b.played_on_after_the_end);
        if stray && low == Some(15) && played_on {
            break listed;
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the observations were never decided: {listed:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(listed.traffic_error, "");
    assert!(listed.boards_without_game_shown);
    let played_on: Vec<(&str, bool, bool)> = listed
        .boards
        .iter()
        .map(|b| (b.board_id.as_str(), b.game_over, b.played_on_after_the_end))
        .collect();
    // Board 2 shows the start position; board 3's play came before its game was set up.
    assert_eq!(
        played_on,
        [
            ("check-1", false, false),
            ("check-2", true, false),
            ("check-3", true, false),
            ("check-4", true, true),
            ("check-9", false, false),
        ]
    );
    let stray = listed
        .boards
        .iter()
        .find(|b| b.board_id == "check-9")
        .expect("listed");
    assert_eq!((stray.game_id.as_str(), stray.given_up), ("", 1));
    assert!(
        stray
            .last_given_up_reason
            .contains("no game is live on board check-9"),
        "{stray:?}"
    );

    let out = std::process::Command::new(program("boardcast")?)
        .args(["boards", "--game-service", &game_service.url()])
        .env("BOARDCAST_TOKEN", boardcast_testkit::admin_token())
        .output()?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    for expected in [
        "check-1      boards-check round 1 board 1    playing   connected, battery 15%\n",
        "    ! battery low (15%)",
        "    ! no clock connected to the board: plug its cable in",
        "check-2      boards-check round 1 board 2    finished  not reported (when its game ended)\ncheck-3",
        "check-4      boards-check round 1 board 4    finished  not reported (when its game ended)\n    ! played on after its game ended: the board shows a game in progress that no game takes",
        "check-9      no game\n",
        "    ! played on with no game set up: 1 of its messages given up (the last: no game is live",
        "5 boards, 3 to see to",
    ] {
        assert!(said.contains(expected), "{expected:?} in:\n{said}");
    }

    // An observer of the tournament sees its boards, not the hall's boards with no game.
    let observer = TestUsers::shared()?.add(
        "ob-boards",
        &[Grant {
            tournament: TOURNAMENT.into(),
            role: Role::Observer,
            boards: Vec::new(),
        }],
    )?;
    game_service.wait_for_user(&observer).await?;
    let seen = game_service
        .client_as(&observer)
        .await?
        .list_boards(ListBoardsRequest { with_traffic: true })
        .await?
        .into_inner();
    let ids: Vec<&str> = seen.boards.iter().map(|b| b.board_id.as_str()).collect();
    assert_eq!(ids, ["check-1", "check-2", "check-3", "check-4"]);
    assert!(!seen.boards_without_game_shown);

    // Without a credential: the boards, none of their traffic.
    let anonymous = boardcast_kit::client::game_client(&game_service.url(), None)
        .await?
        .list_boards(ListBoardsRequest { with_traffic: true })
        .await?
        .into_inner();
    let ids: Vec<(&str, bool)> = anonymous
        .boards
        .iter()
        .map(|b| (b.board_id.as_str(), b.played_on_after_the_end))
        .collect();
    assert_eq!(
        ids,
        [
            ("check-1", false),
            ("check-2", false),
            ("check-3", false),
            ("check-4", false)
        ]
    );
    assert!(
        anonymous.traffic_error.contains("credential"),
        "{anonymous:?}"
    );
    Ok(())
}

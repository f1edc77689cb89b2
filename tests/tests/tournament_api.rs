//! Setting up a tournament's rounds on physical boards through the game service's API: pairing
//! a round, boards reused round after round, the boards' state, the tournaments' progress, and
//! the service's gRPC health.

use std::time::Duration;

use async_nats::jetstream;
use boardcast_schema::device::v1::DeviceState;
use boardcast_schema::game::v1::{
    ActRequest, ArbiterAction, DeclareResult, GameResult, GetGameRequest, ListBoardsRequest,
    ListGamesRequest, ListTournamentsRequest, PairRoundRequest, Pairing, Player, TimeControl,
    TimePeriod, arbiter_action::Action,
};
use boardcast_testkit::{GameService, TestNats};
use tonic_health::pb::{
    HealthCheckRequest, health_check_response::ServingStatus, health_client::HealthClient,
};

fn pairing(board_number: u32, board_id: &str, white: &str, black: &str) -> Pairing {
    let player = |name: &str| {
        Some(Player {
            name: name.into(),
            ..Default::default()
        })
    };
    Pairing {
        board_number,
        board_id: board_id.into(),
        white: player(white),
        black: player(black),
        start_fen: String::new(),
    }
}

fn round(round: u32, pairings: Vec<Pairing>) -> PairRoundRequest {
    PairRoundRequest {
        tournament_id: "hall-open".into(),
        round,
        time_control: Some(TimeControl {
            periods: vec![TimePeriod {
                moves: 0,
                base_ms: 5_400_000,
                increment_ms: 30_000,
                ..Default::default()
            }],
        }),
        edition: "fide-2023".into(),
        event_name: "Hall Open".into(),
        request_id: boardcast_kit::client::new_request_id(),
        pairings,
        ..Default::default()
    }
}

async fn publish_status(
    js: &jetstream::Context,
    board: &str,
    device_seq: u64,
    state: DeviceState,
) -> anyhow::Result<()> {
    boardcast_testkit::publish_status(js, board, device_seq, state, 64).await
}

#[tokio::test(flavor = "multi_thread")]
async fn rounds_are_paired_on_boards_reused_round_after_round() -> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let service = GameService::start(&nats.url())?;
    let mut client = boardcast_testkit::admin_client(&service.url()).await?;

    let channel = tonic::transport::Endpoint::from_shared(service.url())?
        .connect()
        .await?;
    let mut health = HealthClient::new(channel);
    let status = health
        .check(HealthCheckRequest {
            service: "boardcast.game.v1.GameService".into(),
        })
        .await?
        .into_inner();
    assert_eq!(status.status(), ServingStatus::Serving);

    // A pairing list with a board number twice is refused as a whole.
    let refused = client
        .pair_round(round(
            1,
            vec![
                pairing(1, "hall-1", "Adams", "Brown"),
                pairing(1, "hall-2", "Clark", "Davis"),
            ],
        ))
        .await
        .expect_err("board number 1 twice");
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);
    assert!(refused.message().contains("paired twice"), "{refused:?}");
    let games = client
        .list_games(ListGamesRequest::default())
        .await?
        .into_inner();
    assert!(games.games.is_empty(), "nothing was created");

    let round1 = vec![
        pairing(1, "hall-1", "Adams", "Brown"),
        pairing(2, "hall-2", "Clark", "Davis"),
    ];
    let first_round = round(1, round1.clone());
    let paired = client.pair_round(first_round.clone()).await?.into_inner();
    let ids: Vec<&str> = paired.games.iter().map(|g| g.game_id.as_str()).collect();
    assert_eq!(ids, ["hall-open-r1-b1", "hall-open-r1-b2"]);
    assert!(paired.games.iter().all(|g| g.created));
    // Sending the same request again (a retry) changes nothing; the same round from another
    // request is refused, as the boards are taken.
    let again = client.pair_round(first_round).await?.into_inner();
    assert!(again.games.iter().all(|g| !g.created));
    let other = client
        .pair_round(round(1, round1))
        .await
        .expect_err("another request for the same boards");
    assert_eq!(other.code(), tonic::Code::FailedPrecondition);

    // The board reports itself disconnected: the board list shows it on the live game.
    let js = jetstream::new(async_nats::connect(nats.url()).await?);
    publish_status(&js, "hall-1", 1, DeviceState::Connected).await?;
    publish_status(&js, "hall-1", 2, DeviceState::Disconnected).await?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let boards = client
            .list_boards(ListBoardsRequest::default())
            .await?
            .into_inner()
            .boards;
        let hall1 = boards.iter().find(|b| b.board_id == "hall-1");
        if let Some(b) = hall1
            && b.state() == DeviceState::Disconnected
        {
            assert_eq!(b.game_id, "hall-open-r1-b1");
            assert_eq!(b.last_device_seq, 2);
            assert_eq!(b.battery_percent, Some(64));
            assert_eq!(boards.len(), 2);
            break;
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the board's state did not arrive: {boards:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Round 2 on the same boards while round 1 is still being played: refused.
    let round2 = vec![
        pairing(1, "hall-2", "Adams", "Clark"),
        pairing(2, "hall-1", "Brown", "Davis"),
    ];
    let refused = client
        .pair_round(round(2, round2.clone()))
        .await
        .expect_err("boards still carry unfinished games");
    assert_eq!(refused.code(), tonic::Code::FailedPrecondition);
    assert!(refused.message().contains("not finished"), "{refused:?}");

    for (game_id, result) in [
        ("hall-open-r1-b1", GameResult::WhiteWins),
        ("hall-open-r1-b2", GameResult::Draw),
    ] {
        client
            .act(ActRequest {
                game_id: game_id.into(),
                request_id: boardcast_kit::client::new_request_id(),
                action: Some(ArbiterAction {
                    action: Some(Action::Result(DeclareResult {
                        result: result as i32,
                        reason: "result sheet signed".into(),
                        article: String::new(),
                    })),
                    ..Default::default()
                }),
            })
            .await?;
    }
    client.pair_round(round(2, round2)).await?;

    let boards = client
        .list_boards(ListBoardsRequest::default())
        .await?
        .into_inner()
        .boards;
    let live: Vec<(&str, &str)> = boards
        .iter()
        .map(|b| (b.board_id.as_str(), b.game_id.as_str()))
        .collect();
    assert_eq!(
        live,
        [("hall-1", "hall-open-r2-b2"), ("hall-2", "hall-open-r2-b1")]
    );
    assert!(boards.iter().all(|b| !b.game_over));
    // Round 2's game on hall-1 follows the board from its last observation on: what the board
    // sent before (round 1, the reset) is never applied to it, even if delivered late.
    let round2_game = client
        .get_game(GetGameRequest {
            game_id: "hall-open-r2-b2".into(),
        })
        .await?
        .into_inner();
    assert_eq!(round2_game.info.map(|i| i.board_seq_before), Some(2));

    // The board's next observations go to the game now live on it.
    publish_status(&js, "hall-1", 3, DeviceState::Connected).await?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let boards = client
            .list_boards(ListBoardsRequest::default())
            .await?
            .into_inner()
            .boards;
        // (A decision's records are appended one after the other: the observation's record
        // can be seen before the board's state it changes.)
        if boards.iter().any(|b| {
            b.board_id == "hall-1" && b.last_device_seq == 3 && b.state() == DeviceState::Connected
        }) {
            break;
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "observation 3 did not reach round 2's game: {boards:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let tournaments = client
        .list_tournaments(ListTournamentsRequest {})
        .await?
        .into_inner()
        .tournaments;
    assert_eq!(tournaments.len(), 1);
    assert_eq!(tournaments[0].event_name, "Hall Open");
    let rounds: Vec<(u32, u32, u32)> = tournaments[0]
        .rounds
        .iter()
        .map(|r| (r.round, r.games, r.finished))
        .collect();
    assert_eq!(rounds, [(1, 2, 2), (2, 2, 0)]);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn taking_over_a_board_needs_rights_on_the_tournament_it_is_taken_from() -> anyhow::Result<()>
{
    use boardcast_access::{Grant, Role};
    let nats = TestNats::start()?;
    let service = GameService::start(&nats.url())?;
    let users = boardcast_testkit::TestUsers::shared()?;
    let grant = |tournament: &str| Grant {
        tournament: tournament.into(),
        role: Role::Operator,
        boards: Vec::new(),
    };
    let side_operator = users.add("side-operator", &[grant("side-event")])?;
    let main_operator = users.add("main-operator", &[grant("hall-open")])?;
    for token in [&side_operator, &main_operator] {
        service.wait_for_user(token).await?;
    }
    let mut admin = boardcast_testkit::admin_client(&service.url()).await?;
    admin
        .pair_round(round(1, vec![pairing(1, "hall-1", "Adams", "Brown")]))
        .await?;
    let carried = |boards: Vec<boardcast_schema::game::v1::BoardSummary>| {
        boards
            .into_iter()
            .find(|b| b.board_id == "hall-1")
            .map(|b| b.game_id)
    };

    // The side event's operator pairs its round on the main event's board, replacing its game:
    // refused, and the board still carries the main event's game.
    let mut side_round = round(1, vec![pairing(1, "hall-1", "Evans", "Foster")]);
    side_round.tournament_id = "side-event".into();
    side_round.replace_unfinished = true;
    let mut side = service.client_as(&side_operator).await?;
    let refused = side
        .pair_round(side_round.clone())
        .await
        .expect_err("the main event's board");
    assert_eq!(refused.code(), tonic::Code::PermissionDenied, "{refused:?}");
    assert!(refused.message().contains("hall-open"), "{refused:?}");
    let boards = admin
        .list_boards(ListBoardsRequest::default())
        .await?
        .into_inner();
    assert_eq!(
        carried(boards.boards).as_deref(),
        Some("hall-open-r1-b1"),
        "nothing changed"
    );

    // The main event's operator may give the board away.
    let mut main = service.client_as(&main_operator).await?;
    let mut again = round(2, vec![pairing(1, "hall-1", "Adams", "Clark")]);
    again.replace_unfinished = true;
    main.pair_round(again).await?;
    let boards = admin
        .list_boards(ListBoardsRequest::default())
        .await?
        .into_inner();
    assert_eq!(carried(boards.boards).as_deref(), Some("hall-open-r2-b1"));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_round_set_up_on_the_wrong_boards_is_set_up_again_before_play() -> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let service = GameService::start(&nats.url())?;
    let mut client = boardcast_testkit::admin_client(&service.url()).await?;
    let js = jetstream::new(async_nats::connect(nats.url()).await?);
    let live = async |client: &mut boardcast_kit::client::GameClient| -> anyhow::Result<Vec<(String, String)>> {
        Ok(client
            .list_boards(ListBoardsRequest::default())
            .await?
            .into_inner()
            .boards
            .into_iter()
            .map(|b| (b.board_id, b.game_id))
            .collect())
    };
    // hall-3 carries a side event's unfinished game.
    let mut side = round(1, vec![pairing(1, "hall-3", "Evans", "Fox")]);
    side.tournament_id = "side-blitz".into();
    client.pair_round(side).await?;
    client
        .pair_round(round(
            1,
            vec![
                pairing(1, "hall-1", "Adams", "Brown"),
                pairing(2, "hall-2", "Clark", "Davis"),
            ],
        ))
        .await?;
    publish_status(&js, "hall-2", 1, DeviceState::Connected).await?;
    publish_status(&js, "hall-2", 2, DeviceState::Connected).await?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !client
        .list_boards(ListBoardsRequest::default())
        .await?
        .into_inner()
        .boards
        .iter()
        .any(|b| b.board_id == "hall-2" && b.last_device_seq == 2)
    {
        anyhow::ensure!(tokio::time::Instant::now() < deadline, "hall-2 not heard");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let before = live(&mut client).await?;

    // The tables are on each other's boards: the same request exchanges them. Onto a board of
    // another event's unfinished game: refused, nothing changes.
    let mut onto_side = round(
        1,
        vec![
            pairing(1, "hall-3", "Adams", "Brown"),
            pairing(2, "hall-1", "Clark", "Davis"),
        ],
    );
    onto_side.revise = true;
    let refused = client
        .pair_round(onto_side)
        .await
        .expect_err("hall-3 carries an unfinished game");
    assert_eq!(refused.code(), tonic::Code::FailedPrecondition);
    assert!(
        refused.message().contains("side-blitz-r1-b1"),
        "{refused:?}"
    );
    assert_eq!(live(&mut client).await?, before);

    let mut exchanged = round(
        1,
        vec![
            pairing(1, "hall-2", "Adams", "Brown"),
            pairing(2, "hall-1", "Clark", "Davis"),
        ],
    );
    exchanged.revise = true;
    let revised = client.pair_round(exchanged).await?.into_inner();
    assert!(revised.games.iter().all(|g| g.revised && !g.created));
    let mut now = live(&mut client).await?;
    now.sort();
    assert_eq!(
        now,
        [
            ("hall-1".to_owned(), "hall-open-r1-b2".to_owned()),
            ("hall-2".to_owned(), "hall-open-r1-b1".to_owned()),
            ("hall-3".to_owned(), "side-blitz-r1-b1".to_owned()),
        ]
    );
    // Moved onto hall-2, table 1's game follows it from its last observation on.
    let table_1 = client
        .get_game(GetGameRequest {
            game_id: "hall-open-r1-b1".into(),
        })
        .await?
        .into_inner();
    assert_eq!(
        table_1.info.map(|i| (i.board_id, i.board_seq_before)),
        Some(("hall-2".to_owned(), 2))
    );
    publish_status(&js, "hall-2", 3, DeviceState::Disconnected).await?;
    loop {
        let boards = client
            .list_boards(ListBoardsRequest::default())
            .await?
            .into_inner()
            .boards;
        if boards.iter().any(|b| {
            b.board_id == "hall-2"
                && b.game_id == "hall-open-r1-b1"
                && b.state() == DeviceState::Disconnected
        }) {
            break;
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "hall-2's observation did not reach table 1's game: {boards:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

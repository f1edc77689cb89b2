//! The game service as a process against a real NATS: unusable observations are kept with their
//! reason, and a restart rebuilds every game from its log.

mod support;

use anyhow::Context as _;

use std::{process::Command, time::Duration};

use async_nats::jetstream;
use boardcast_schema::{
    device::v1::{BoardPlacement, Observation, observation::Kind},
    game::v1::{GameState, GetGameRequest, StreamGameEventsRequest},
};
use boardcast_testkit::{GameService, GameServiceOptions, TestNats, program};
use prost::Message as _;
use support::dead_letters;

#[tokio::test(flavor = "multi_thread")]
async fn unusable_observations_are_kept_with_their_reason() -> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let _game_service = GameService::start(&nats.url())?;
    let js = jetstream::new(async_nats::connect(nats.url()).await?);

    js.publish("boardcast.board.b1.obs", vec![0xff, 0x00, 0x13].into())
        .await?
        .await?;
    let orphan = Observation {
        board_id: "b2".into(),
        device_seq: 1,
        kind: Some(Kind::Placement(BoardPlacement {
            placement: "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR".into(),
        })),
        ..Default::default()
    };
    js.publish("boardcast.board.b2.obs", orphan.encode_to_vec().into())
        .await?
        .await?;
    js.publish("boardcast.board.b3.obs", orphan.encode_to_vec().into())
        .await?
        .await?;

    // Decided concurrently (the boards may be in different partitions): in board order here.
    let mut kept = dead_letters(&js, 3).await?;
    kept.sort();
    assert_eq!(kept[0].0, "boardcast.deadletter.b1");
    assert!(kept[0].1.contains("undecodable"), "{:?}", kept[0]);
    assert!(
        kept[1].1.contains("no game is live on board b2"),
        "{:?}",
        kept[1]
    );
    assert!(kept[2].1.contains("published on subject"), "{:?}", kept[2]);
    Ok(())
}

/// The dead-letter stream files observations whose board cannot be read under "unknown": no
/// game is set up on, or moved to, a board of that name, and nothing is recorded.
#[tokio::test(flavor = "multi_thread")]
async fn no_game_goes_on_a_board_named_as_the_unreadable_ones() -> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let service = GameService::start(&nats.url())?;
    let mut client = service.client().await?;
    let on_unknown = boardcast_testkit::game_on_board("reserved", 1, "unknown");
    let refused = client
        .create_game(boardcast_testkit::create_request(on_unknown.clone()))
        .await
        .expect_err("the name is kept");
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);
    assert!(
        refused.message().contains("kept for observations"),
        "{refused:?}"
    );

    client
        .create_game(boardcast_testkit::create_request(
            boardcast_testkit::game_on_board("reserved", 1, "hall-1"),
        ))
        .await?;
    let moved = client
        .create_game(boardcast_schema::game::v1::CreateGameRequest {
            revise: true,
            ..boardcast_testkit::create_request(on_unknown)
        })
        .await
        .expect_err("the name is kept");
    assert_eq!(moved.code(), tonic::Code::InvalidArgument);
    let games = client
        .list_games(boardcast_schema::game::v1::ListGamesRequest::default())
        .await?
        .into_inner()
        .games;
    let boards: Vec<&str> = games
        .iter()
        .filter_map(|g| g.info.as_ref().map(|i| i.board_id.as_str()))
        .collect();
    assert_eq!(boards, ["hall-1"]);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn unpartitioned_observations_go_on_where_the_earlier_single_consumer_stopped()
-> anyhow::Result<()> {
    use async_nats::jetstream::consumer::{AckPolicy, PullConsumer, pull};
    use futures::StreamExt as _;
    // The earlier version ran on servers without the partition mapping: its observations are
    // in the unpartitioned stream, where the new version's consumer of that stream goes on.
    let nats = TestNats::start_partitioned(0)?;
    let js = jetstream::new(async_nats::connect(nats.url()).await?);
    boardcast_kit::nats::ensure_streams(&js, 1, boardcast_kit::nats::DEFAULT_PARTITIONS).await?;
    // As an earlier version left it: one consumer of every observation, having handled the
    // first one.
    let stream = js.get_stream("BOARDCAST_INGEST").await?;
    let old: PullConsumer = stream
        .create_consumer(pull::Config {
            durable_name: Some("game-service".into()),
            ack_policy: AckPolicy::Explicit,
            max_ack_pending: 1,
            ..Default::default()
        })
        .await?;
    js.publish(
        "boardcast.board.b8.obs",
        b"handled before".as_slice().into(),
    )
    .await?
    .await?;
    let mut handled = old.fetch().max_messages(1).messages().await?;
    handled
        .next()
        .await
        .context("the first observation")?
        .map_err(|e| anyhow::anyhow!("{e}"))?
        .double_ack()
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    js.publish(
        "boardcast.board.b9.obs",
        b"not an observation".as_slice().into(),
    )
    .await?
    .await?;

    let _service = GameService::start(&nats.url())?;
    let kept = dead_letters(&js, 1).await?;
    assert_eq!(
        kept[0].0, "boardcast.deadletter.b9",
        "only the new one: {kept:?}"
    );
    let mut consumer: PullConsumer = stream
        .get_consumer(&boardcast_kit::nats_access::ingest_consumer(None))
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let info = loop {
        let info = consumer.info().await?.clone();
        if info.ack_floor.stream_sequence == 2 || tokio::time::Instant::now() > deadline {
            break info;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(
        info.ack_floor.stream_sequence, 2,
        "b9's observation handled"
    );
    assert_eq!(info.config.filter_subject, "boardcast.board.*.obs");
    Ok(())
}

/// A `BOARDCAST_INGEST` left by the version that kept every partition in it: the streams are
/// not changed while it holds partitioned observations (they would be left undecided), with a
/// message saying how to empty it; once it holds none, it is narrowed to the unpartitioned
/// subjects and the partitions get their own streams.
#[tokio::test(flavor = "multi_thread")]
async fn the_earlier_layout_is_left_only_once_its_partitions_are_decided() -> anyhow::Result<()> {
    use async_nats::jetstream::stream;
    use boardcast_kit::nats::{
        DEFAULT_PARTITIONS, INGEST_STREAM, INGEST_SUBJECTS, PARTITIONED_INGEST_SUBJECTS,
        ensure_streams, observation_partitions,
    };
    let nats = TestNats::start_partitioned(0)?;
    let js = jetstream::new(async_nats::connect(nats.url()).await?);
    js.create_stream(stream::Config {
        name: INGEST_STREAM.into(),
        subjects: vec![INGEST_SUBJECTS.into(), PARTITIONED_INGEST_SUBJECTS.into()],
        ..Default::default()
    })
    .await?;
    js.publish("boardcast.board.b1.obs.3", b"undecided".as_slice().into())
        .await?
        .await?;

    let refused = ensure_streams(&js, 1, DEFAULT_PARTITIONS)
        .await
        .expect_err("an observation is still in a partition");
    assert!(
        format!("{refused:#}").contains("nats stream purge BOARDCAST_INGEST"),
        "{refused:#}"
    );
    let mut ingest = js.get_stream(INGEST_STREAM).await?;
    assert_eq!(ingest.info().await?.config.subjects.len(), 2, "unchanged");
    assert_eq!(ingest.info().await?.state.messages, 1, "nothing removed");
    assert_eq!(
        observation_partitions(&js).await?,
        [None],
        "no partition stream yet"
    );

    ingest.purge().filter(PARTITIONED_INGEST_SUBJECTS).await?;
    ensure_streams(&js, 1, DEFAULT_PARTITIONS).await?;
    assert_eq!(
        ingest.info().await?.config.subjects,
        [INGEST_SUBJECTS.to_owned()]
    );
    assert_eq!(
        observation_partitions(&js).await?.len(),
        1 + DEFAULT_PARTITIONS as usize
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_restarted_game_service_rebuilds_its_games_from_the_log() -> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let mut game_service = GameService::start(&nats.url())?;
    let game_id = play_one_game(
        &nats,
        &game_service,
        "[Event \"Restart Open\"]\n[Round \"1.1\"]\n[White \"A\"]\n[Black \"B\"]\n[Result \"1-0\"]\n\n\
         1. e4 e5 2. Bc4 Nc6 3. Qh5 Nf6 4. Qxf7# 1-0\n",
    )?;
    let before = finished_state(&game_service.url(), &game_id).await?;
    assert_eq!(before.moves.len(), 7);
    assert_ne!(before.result, 0, "the mate ended the game");

    game_service.process.kill_hard()?;
    let restarted = GameService::start(&nats.url())?;
    let after = finished_state(&restarted.url(), &game_id).await?;
    assert_eq!(
        after, before,
        "the rebuilt game equals the live one, hash-chain head included"
    );
    Ok(())
}

/// An operator may remove records from the game log; a restart that reads the log with a
/// consumer (more than a few records) must not wait for the removed last one.
#[tokio::test(flavor = "multi_thread")]
async fn a_restart_reads_a_log_whose_last_record_was_removed() -> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let mut game_service = GameService::start(&nats.url())?;
    let game_id = play_one_game(
        &nats,
        &game_service,
        "[Event \"Removal Open\"]\n[Round \"1.1\"]\n[White \"A\"]\n[Black \"B\"]\n[Result \"1-0\"]\n\n\
         1. e4 e5 2. Nf3 d6 3. Bc4 Bg4 4. Nc3 g6 5. Nxe5 Bxd1 6. Bxf7+ Ke7 7. Nd5# 1-0\n",
    )?;
    let before = finished_state(&game_service.url(), &game_id).await?;
    assert!(
        before.last_game_seq > 64,
        "{} records",
        before.last_game_seq
    );
    game_service.process.kill_hard()?;

    let js = jetstream::new(async_nats::connect(nats.url()).await?);
    let mut games = js.get_stream(boardcast_kit::nats::GAMES_STREAM).await?;
    let last = games.info().await?.state.last_sequence;
    assert!(games.delete_message(last).await?);

    let restarted = GameService::start(&nats.url())?;
    let mut client = boardcast_testkit::admin_client(&restarted.url()).await?;
    let after = client
        .get_game(GetGameRequest { game_id })
        .await?
        .into_inner();
    assert_eq!(after.last_game_seq, before.last_game_seq - 1);
    Ok(())
}

/// The same with a log short enough to be read record by record: the removed record is
/// confirmed removed by the stream (not merely missing from a leader still catching up) and
/// passed over.
#[tokio::test(flavor = "multi_thread")]
async fn a_restart_reads_a_short_log_whose_last_record_was_removed() -> anyhow::Result<()> {
    use boardcast_schema::game::v1::ListGamesRequest;
    let nats = TestNats::start()?;
    let mut game_service = GameService::start(&nats.url())?;
    let mut client = game_service.client().await?;
    for board_number in [1, 2] {
        client
            .create_game(boardcast_testkit::create_request(
                boardcast_testkit::game_on_board(
                    "removal-short",
                    board_number,
                    &format!("removal-short-{board_number}"),
                ),
            ))
            .await?;
    }
    game_service.process.kill_hard()?;

    let js = jetstream::new(async_nats::connect(nats.url()).await?);
    let mut games = js.get_stream(boardcast_kit::nats::GAMES_STREAM).await?;
    let last = games.info().await?.state.last_sequence;
    assert_eq!(last, 2, "one record for each game set up");
    assert!(games.delete_message(last).await?);

    let restarted = GameService::start(&nats.url())?;
    let mut client = boardcast_testkit::admin_client(&restarted.url()).await?;
    let listed = client
        .list_games(ListGamesRequest::default())
        .await?
        .into_inner()
        .games;
    let boards: Vec<String> = listed
        .iter()
        .filter_map(|g| g.info.as_ref().map(|i| i.board_id.clone()))
        .collect();
    assert_eq!(boards, ["removal-short-1"]);
    Ok(())
}

/// A client following a game's events keeps its stream open; Ctrl-C or SIGTERM still stops the
/// service cleanly (last snapshot written), a few seconds later.
#[tokio::test(flavor = "multi_thread")]
async fn a_service_with_open_event_streams_stops_on_sigterm() -> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let dir = tempfile::tempdir()?;
    let log = dir.path().join("game-service.log");
    let mut service = GameService::start_with(
        &nats.url(),
        GameServiceOptions {
            log: Some(log.clone()),
            rust_log: Some("boardcast_game_service=info".into()),
            ..Default::default()
        },
    )?;
    let game_id = play_one_game(
        &nats,
        &service,
        "[Event \"Stop Open\"]\n[Round \"1.1\"]\n[White \"A\"]\n[Black \"B\"]\n[Result \"1-0\"]\n\n\
         1. e4 e5 2. Bc4 Nc6 3. Qh5 Nf6 4. Qxf7# 1-0\n",
    )?;
    let mut client = boardcast_testkit::admin_client(&service.url()).await?;
    let mut events = client
        .stream_game_events(StreamGameEventsRequest {
            game_id,
            from_game_seq: 0,
        })
        .await?
        .into_inner();
    assert!(events.message().await?.is_some(), "the stream is open");

    // Generous: the service gives open streams a few seconds, then stops by itself; only a
    // hang reaches this and is then killed.
    assert!(
        service.process.stop(Duration::from_secs(30))?,
        "stopped by itself"
    );
    let log = std::fs::read_to_string(&log)?;
    assert!(log.contains("stopped"), "a clean stop: {log}");
    Ok(())
}

/// Plays a one-game PGN on one simulated board through the running service; the game's id.
fn play_one_game(nats: &TestNats, service: &GameService, pgn: &str) -> anyhow::Result<String> {
    let file = tempfile::NamedTempFile::new()?;
    std::fs::write(file.path(), pgn)?;
    let status = Command::new(program("boardcast")?)
        .env("BOARDCAST_TOKEN", boardcast_testkit::admin_token())
        .arg("simulate")
        .arg("--pgn")
        .arg(file.path())
        .args(["--boards", "1", "--speed", "max", "--nats", &nats.url()])
        .args(["--game-service", &service.url()])
        .status()?;
    anyhow::ensure!(status.success(), "simulate: {status}");
    let event = pgn
        .lines()
        .find_map(|l| l.strip_prefix("[Event \"")?.strip_suffix("\"]"))
        .context("the PGN has an Event tag")?;
    Ok(format!("{}-r1-b1", event.to_lowercase().replace(' ', "-")))
}

/// The game's state once it has a result (or after 30 s).
async fn finished_state(url: &str, game_id: &str) -> anyhow::Result<GameState> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let mut client = boardcast_testkit::admin_client(url).await?;
        let state = client
            .get_game(GetGameRequest {
                game_id: game_id.to_owned(),
            })
            .await?
            .into_inner();
        if state.result != 0 || tokio::time::Instant::now() > deadline {
            return Ok(state);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Game `game_id` as the service has it.
async fn game_state(
    client: &boardcast_kit::client::GameClient,
    game_id: &str,
) -> anyhow::Result<GameState> {
    Ok(client
        .clone()
        .get_game(GetGameRequest {
            game_id: game_id.into(),
        })
        .await?
        .into_inner())
}

/// Game `game_id` once `done` holds of it (within 30 s; else an error saying `what`).
async fn wait_for(
    client: &boardcast_kit::client::GameClient,
    game_id: &str,
    what: &str,
    done: fn(&GameState) -> bool,
) -> anyhow::Result<GameState> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let now = game_state(client, game_id).await?;
        if done(&now) {
            return Ok(now);
        }
        anyhow::ensure!(tokio::time::Instant::now() < deadline, "{what}: {now:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Black's flag ends a game the players go on playing (a clock knocked over, say): the board's
/// moves after the end are not applied. The arbiter resumes play: the moves the board sent since
/// the end are read again from the stream and decided in order, and the game goes on. A game
/// whose board carries the next game by then is not resumed there, and nothing is recorded.
#[tokio::test(flavor = "multi_thread")]
async fn play_resumed_after_an_end_in_error_takes_the_moves_made_since() -> anyhow::Result<()> {
    use boardcast_schema::device::v1::ClockRun;
    use boardcast_schema::game::v1::{
        ActRequest, ArbiterAction, PlayResumed, arbiter_action::Action,
    };
    use boardcast_testkit::{clock_shows, publish_observation, showing};

    let nats = TestNats::start()?;
    let service = GameService::start(&nats.url())?;
    let js = jetstream::new(async_nats::connect(nats.url()).await?);
    let mut client = service.client().await?;
    let game_id = "resumed-r1-b1";
    client
        .create_game(boardcast_testkit::create_request(
            boardcast_testkit::game_on_board("resumed", 1, "resume-1"),
        ))
        .await?;
    let ninety = 5_400_000;
    let played = [
        showing(&[])?,
        clock_shows(ClockRun::White, ninety, ninety),
        showing(&["e4"])?,
        clock_shows(ClockRun::Black, ninety + 20_000, ninety),
        // Black's flag, shown in error.
        Kind::Clock(boardcast_schema::device::v1::ClockReading {
            white_remaining_ms: ninety + 20_000,
            running: ClockRun::Black as i32,
            black_flag: true,
            ..Default::default()
        }),
        // Played on after the end.
        showing(&["e4", "e5"])?,
        clock_shows(ClockRun::White, ninety + 20_000, ninety + 10_000),
    ];
    for (seq, kind) in (1..).zip(played) {
        publish_observation(&js, "resume-1", seq, kind).await?;
    }
    let ended = wait_for(&client, game_id, "the flag ends the game", |g| {
        g.result != 0
    })
    .await?;
    assert_eq!(ended.moves.len(), 1);
    support::drained(&js).await?;
    assert_eq!(
        game_state(&client, game_id).await?.moves.len(),
        1,
        "nothing after the end"
    );

    let resume = |request: &str| ActRequest {
        game_id: game_id.into(),
        action: Some(ArbiterAction {
            action: Some(Action::Resume(PlayResumed {
                reason: "the clock was knocked over; Black had time".into(),
            })),
            ..Default::default()
        }),
        request_id: request.into(),
    };
    client.act(resume("resume-after-flag")).await?;
    // The board's next move: the ones since the end are read again first, in order.
    publish_observation(&js, "resume-1", 8, showing(&["e4", "e5", "Nf3"])?).await?;
    publish_observation(
        &js,
        "resume-1",
        9,
        clock_shows(ClockRun::Black, ninety + 30_000, ninety + 10_000),
    )
    .await?;
    let on = wait_for(&client, game_id, "the moves since the end", |g| {
        g.moves.len() == 3
    })
    .await?;
    assert_eq!(on.result, 0, "the game goes on");
    let sans: Vec<&str> = on.moves.iter().map(|m| m.san.as_str()).collect();
    assert_eq!(sans, ["e4", "e5", "Nf3"]);

    // A game that ended on a board that carries the next round's game by then.
    client
        .create_game(boardcast_testkit::create_request(
            boardcast_testkit::game_on_board("resumed", 2, "resume-2"),
        ))
        .await?;
    client
        .act(ActRequest {
            game_id: "resumed-r1-b2".into(),
            action: Some(ArbiterAction {
                action: Some(Action::Result(boardcast_schema::game::v1::DeclareResult {
                    result: boardcast_schema::game::v1::GameResult::WhiteWins as i32,
                    reason: "Black did not come".into(),
                    article: "6.7.1".into(),
                })),
                ..Default::default()
            }),
            request_id: "forfeit-b2".into(),
        })
        .await?;
    let next_round = boardcast_schema::game::v1::GameStarted {
        round: 2,
        ..boardcast_testkit::game_on_board("resumed", 2, "resume-2")
    };
    client
        .create_game(boardcast_testkit::create_request(next_round))
        .await?;
    let before = game_state(&client, "resumed-r1-b2").await?;
    let refused = client
        .act(ActRequest {
            game_id: "resumed-r1-b2".into(),
            ..resume("resume-b2")
        })
        .await
        .expect_err("the board carries the next game");
    assert_eq!(refused.code(), tonic::Code::FailedPrecondition);
    assert!(refused.message().contains("resumed-r2-b2"), "{refused:?}");
    assert_eq!(
        game_state(&client, "resumed-r1-b2").await?,
        before,
        "nothing recorded"
    );
    Ok(())
}

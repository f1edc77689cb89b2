//! Observations in partitions, against a real NATS and game service: an observation a gateway
//! re-sends seconds after its successors is decided in order with nothing recorded missing; an
//! acknowledgement that never comes holds up its own partition only; and an observation that
//! arrives between a game's set-up and its creation is applied to the game.

mod support;

use std::time::{Duration, Instant};

use anyhow::Context as _;
use async_nats::jetstream::{self, consumer::PullConsumer, message::PublishMessage};
use boardcast_game::Game;
use boardcast_kit::nats::{
    DEFAULT_PARTITIONS, game_subject, ingest_stream, observation_message_id, observation_subject,
    partition_of_board,
};
use boardcast_schema::{
    device::v1::{Observation, Piece, PieceLifted, PiecePlaced, SourceKind, observation::Kind},
    game::v1::{CreateGameRequest, GameStarted, GameState},
};
use boardcast_testkit::{GameService, GameServiceOptions, TestNats, TestUsers};
use futures::StreamExt as _;
use prost::Message as _;
use support::*;

/// A board's observations in the clean run, in the order the board published them.
fn observations_of(base: &Baseline, board_id: &str) -> Vec<Vec<u8>> {
    let subject = observation_subject(board_id);
    base.observations
        .iter()
        .filter(|(s, _)| *s == subject)
        .map(|(_, payload)| payload.clone())
        .collect()
}

/// Publishes one observation as a gateway does (its message id deduplicates a re-send: the
/// nonce, a gateway's secret, is the same for the same observation; here its number will do).
async fn publish(js: &jetstream::Context, payload: &[u8]) -> anyhow::Result<()> {
    let observation = Observation::decode(payload)?;
    js.send_publish(
        observation_subject(&observation.board_id),
        PublishMessage::build()
            .payload(payload.to_vec().into())
            .message_id(observation_message_id(
                &observation.board_id,
                observation.device_seq,
                observation.device_seq,
            )),
    )
    .await?
    .await?;
    Ok(())
}

async fn create(
    client: &mut boardcast_kit::client::GameClient,
    info: &GameStarted,
) -> anyhow::Result<String> {
    Ok(client
        .create_game(CreateGameRequest {
            game: Some(info.clone()),
            request_id: boardcast_kit::client::new_request_id(),
            ..Default::default()
        })
        .await?
        .into_inner()
        .game_id)
}

fn clean_state<'a>(base: &'a Baseline, game_id: &str) -> anyhow::Result<&'a GameState> {
    base.states
        .iter()
        .find(|s| s.game_id == game_id)
        .with_context(|| format!("{game_id} in the clean run"))
}

#[tokio::test(flavor = "multi_thread")]
async fn an_observation_resent_six_seconds_after_its_successors_is_decided_in_order()
-> anyhow::Result<()> {
    let base = baseline().await?;
    let nats = TestNats::start()?;
    let dir = tempfile::tempdir()?;
    let log = dir.path().join("game-service.log");
    let service = GameService::start_with(
        &nats.url(),
        GameServiceOptions {
            log: Some(log.clone()),
            rust_log: Some("warn,boardcast_game_service::ingest=info".into()),
            ..Default::default()
        },
    )?;
    let js = jetstream::new(async_nats::connect(nats.url()).await?);
    let mut client = boardcast_testkit::admin_client(&service.url()).await?;
    // The clean run's longest game.
    let info = base
        .infos
        .iter()
        .max_by_key(|i| observations_of(base, &i.board_id).len())
        .context("a game of the clean run")?
        .clone();
    let game_id = create(&mut client, &info).await?;
    let observations = observations_of(base, &info.board_id);
    anyhow::ensure!(
        observations.len() > 40,
        "a game long enough: {} observations",
        observations.len()
    );

    // A batch whose 21st observation JetStream did not acknowledge: the gateway's connection
    // dropped, and it re-sends that one six seconds later, after the rest of the batch.
    let held = 20;
    for (i, payload) in observations.iter().enumerate() {
        if i != held {
            publish(&js, payload).await?;
        }
    }
    tokio::time::sleep(Duration::from_secs(6)).await;
    publish(&js, &observations[held]).await?;

    drained(&js).await?;
    let expected = clean_state(base, &game_id)?;
    let after = states_reaching(&service.url(), std::slice::from_ref(expected)).await?;
    assert_eq!(
        comparable(&after),
        comparable(std::slice::from_ref(expected))
    );
    assert!(
        after[0].missing_observations.is_empty(),
        "nothing is missing: {:?}",
        after[0].missing_observations
    );
    check_logs(&js, &after).await?;
    drop(service);
    let log = std::fs::read_to_string(&log)?;
    assert!(
        log.contains("waiting for observations the board may still re-send"),
        "the partition waited for the re-send"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_lost_acknowledgement_holds_up_its_partition_only() -> anyhow::Result<()> {
    const ACK_WAIT_S: u64 = 30;
    let base = baseline().await?;
    // Two boards of the clean run in different partitions.
    let held_info = base.infos[0].clone();
    let held_partition = partition_of_board(&held_info.board_id, DEFAULT_PARTITIONS);
    let free_info = base
        .infos
        .iter()
        .find(|i| partition_of_board(&i.board_id, DEFAULT_PARTITIONS) != held_partition)
        .context("two boards in different partitions")?
        .clone();
    let nats = TestNats::start()?;
    let js = jetstream::new(async_nats::connect(nats.url()).await?);
    let options = || GameServiceOptions {
        args: vec!["--ack-wait".into(), ACK_WAIT_S.to_string()],
        ..Default::default()
    };
    let service = GameService::start_with(&nats.url(), options())?;
    let mut client = boardcast_testkit::admin_client(&service.url()).await?;
    let held_game = create(&mut client, &held_info).await?;
    let free_game = create(&mut client, &free_info).await?;
    drop(client);
    // The service makes its partitions' consumers once it serves; the test takes from one.
    let stream = js.get_stream(ingest_stream(Some(held_partition))).await?;
    let consumer_name = boardcast_kit::nats_access::ingest_consumer(Some(held_partition));
    let deadline = Instant::now() + Duration::from_secs(30);
    let consumer: PullConsumer = loop {
        match stream.get_consumer(&consumer_name).await {
            Ok(consumer) => break consumer,
            Err(e) => anyhow::ensure!(
                Instant::now() < deadline,
                "the service never made the consumer {consumer_name}: {e}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    drop(service);

    for info in [&held_info, &free_info] {
        for payload in observations_of(base, &info.board_id) {
            publish(&js, &payload).await?;
        }
    }
    // An instance takes the held board's first observation and is never heard of again: its
    // acknowledgement never comes.
    let mut taken = consumer.fetch().max_messages(1).messages().await?;
    let lost = taken
        .next()
        .await
        .context("the held board's first observation")?
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let lost_at = Instant::now();

    let service = GameService::start_with(&nats.url(), options())?;
    let free_expected = clean_state(base, &free_game)?;
    let free_done = loop {
        let now = states(&service.url()).await?;
        let free = now.iter().find(|s| s.game_id == free_game).cloned();
        let held = now.iter().find(|s| s.game_id == held_game).cloned();
        if let (Some(free), Some(held)) = (free, held)
            && comparable(std::slice::from_ref(&free))
                == comparable(std::slice::from_ref(free_expected))
        {
            break (free, held);
        }
        anyhow::ensure!(
            lost_at.elapsed() < Duration::from_secs(ACK_WAIT_S),
            "the other partition's game was not complete before the lost acknowledgement's wait ended"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    eprintln!(
        "the other partition's game was complete {:.1} s after the acknowledgement was lost",
        lost_at.elapsed().as_secs_f64()
    );
    let (_, held_then) = free_done;
    assert!(
        held_then.moves.is_empty() && lost_at.elapsed() < Duration::from_secs(ACK_WAIT_S),
        "the held board's partition waits for the lost acknowledgement: {} moves",
        held_then.moves.len()
    );

    // Once the wait is over, the observation goes to the service and the held game is complete.
    drop(lost);
    let held_expected = clean_state(base, &held_game)?;
    let deadline = Instant::now() + Duration::from_secs(ACK_WAIT_S + 60);
    loop {
        let now = states(&service.url()).await?;
        if let Some(held) = now.iter().find(|s| s.game_id == held_game)
            && comparable(std::slice::from_ref(held))
                == comparable(std::slice::from_ref(held_expected))
        {
            check_logs(&js, &now).await?;
            break;
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "the held game never completed after the acknowledgement's wait"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    eprintln!(
        "the held board's game was complete {:.1} s after the acknowledgement was lost",
        lost_at.elapsed().as_secs_f64()
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn an_observation_between_a_games_set_up_and_its_creation_is_applied() -> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let service = GameService::start(&nats.url())?;
    let js = jetstream::new(async_nats::connect(nats.url()).await?);
    let board = "race-1";
    let observation = |device_seq: u64, kind: Kind| {
        let now = boardcast_kit::now_unix_ms();
        Observation {
            board_id: board.into(),
            device_seq,
            device_time_unix_ms: now,
            receive_time_unix_ms: now,
            source: SourceKind::DgtSerial as i32,
            kind: Some(kind),
        }
        .encode_to_vec()
    };

    // The operator's set-up looked at the board (nothing sent yet); then White lifts the e2 pawn,
    // before the game is created: no game is live on the board, and the lift is kept aside.
    let info = boardcast_testkit::game_on_board("race", 1, board);
    publish(
        &js,
        &observation(
            1,
            Kind::Lifted(PieceLifted {
                square: 12,
                piece: Piece::WhitePawn as i32,
            }),
        ),
    )
    .await?;
    let kept = dead_letters(&js, 1).await?;
    assert!(kept[0].1.contains("no game is live"), "{kept:?}");

    // The game is created as the set-up found the board, signed as the game service signs.
    let (game_id, start) = Game::decide_start(&info, "operator", "set-up")?;
    let signer = TestUsers::shared()?.signer()?;
    let first = Game::record_signed(
        None,
        &game_id,
        vec![start],
        boardcast_kit::now_unix_ms(),
        &signer,
    );
    js.publish(game_subject(&game_id), first[0].encode_to_vec().into())
        .await?
        .await?;

    // The pawn lands on e4.
    publish(
        &js,
        &observation(
            2,
            Kind::Placed(PiecePlaced {
                square: 28,
                piece: Piece::WhitePawn as i32,
            }),
        ),
    )
    .await?;
    drained(&js).await?;
    let mut client = boardcast_testkit::admin_client(&service.url()).await?;
    let deadline = Instant::now() + Duration::from_secs(30);
    let recorded = loop {
        let events = game_events(&mut client, &game_id).await?;
        let recorded = recorded_observations(&events);
        if recorded.len() >= 2 || Instant::now() > deadline {
            break recorded;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(
        recorded,
        [1, 2],
        "the lift before the creation is in the game, in order"
    );
    let state = states(&service.url()).await?;
    assert!(
        state[0].missing_observations.is_empty(),
        "nothing missing: {:?}",
        state[0].missing_observations
    );
    Ok(())
}

/// A gap in a board's observations on replicated observation streams (a three-node cluster):
/// an observation that never comes is recorded as missing, once, and the rest are decided.
#[tokio::test(flavor = "multi_thread")]
async fn a_gap_on_replicated_observation_streams_is_recorded_as_missing() -> anyhow::Result<()> {
    let base = baseline().await?;
    let cluster = boardcast_testkit::TestCluster::start(3).await?;
    let urls = cluster.urls();
    let service = GameService::start_with(
        &urls,
        GameServiceOptions {
            args: vec!["--replicas".into(), "3".into()],
            ..Default::default()
        },
    )?;
    let js = jetstream::new(boardcast_kit::nats::connect(&urls, "test").await?);
    let mut client = boardcast_testkit::admin_client(&service.url()).await?;
    let info = base
        .infos
        .iter()
        .max_by_key(|i| observations_of(base, &i.board_id).len())
        .context("a game of the clean run")?
        .clone();
    let game_id = create(&mut client, &info).await?;

    // The board's observations but one, which never comes.
    let observations = observations_of(base, &info.board_id);
    let never = 12;
    let lost = Observation::decode(observations[never].as_slice())?.device_seq;
    for (i, payload) in observations.iter().enumerate() {
        if i != never {
            publish(&js, payload).await?;
        }
    }
    drained_within(&js, Duration::from_secs(90)).await?;
    let state = states(&service.url())
        .await?
        .into_iter()
        .find(|s| s.game_id == game_id)
        .context("the game")?;
    assert_eq!(
        state
            .missing_observations
            .iter()
            .map(|m| (m.first_device_seq, m.last_device_seq))
            .collect::<Vec<_>>(),
        vec![(lost, lost)]
    );
    Ok(())
}

//! The game log's guarantees with real processes: a crash of the game service, two instances
//! writing at once (on one server and on a three-node cluster with replicated streams), a
//! standby instance taking over from one that died, duplicated and reordered observations, and
//! snapshots.

mod support;

use std::{collections::BTreeMap, time::Duration};

use anyhow::Context as _;
use async_nats::jetstream::{self, message::PublishMessage};
use boardcast_game::{Game, ObservationOutcome};
use boardcast_schema::{
    device::v1::Observation,
    game::v1::{CreateGameRequest, ObservationsMissing},
};
use boardcast_testkit::{GameService, GameServiceOptions, TestCluster, TestNats};
use prost::Message as _;
use support::*;

#[tokio::test(flavor = "multi_thread")]
async fn a_game_service_killed_mid_round_resumes_without_losing_or_repeating() -> anyhow::Result<()>
{
    let base = baseline().await?;
    let nats = TestNats::start()?;
    let dir = tempfile::tempdir()?;
    let options = GameServiceOptions {
        snapshot: Some(dir.path().join("snapshot.redb")),
        args: vec!["--snapshot-interval".into(), "1".into()],
        ..Default::default()
    };
    let mut service = GameService::start_with(&nats.url(), options.clone())?;
    let js = jetstream::new(async_nats::connect(nats.url()).await?);
    let pgn = write_pgn()?;
    let mut simulator = simulate(pgn.path(), &nats.url(), &service.url())?.spawn()?;

    // Kill it once it has applied some of the round but not all of it.
    let applied = moves_applied_reaching(&service, 8).await?;
    service.process.kill_hard()?;
    let total: usize = base.states.iter().map(|s| s.moves.len()).sum();
    eprintln!("killed the game service with at least {applied} of {total} moves applied");

    let restarted = GameService::start_with(&nats.url(), options)?;
    assert!(simulator.wait()?.success());
    drained(&js).await?;
    let after = states_reaching(&restarted.url(), &base.states).await?;
    assert_eq!(comparable(&after), comparable(&base.states));
    check_logs(&js, &after).await?;
    Ok(())
}

/// Waits until `service` has applied at least `at_least` moves over all its games (within 30 s);
/// returns how many it has.
async fn moves_applied_reaching(service: &GameService, at_least: usize) -> anyhow::Result<usize> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let applied: usize = states(&service.url())
            .await?
            .iter()
            .map(|s| s.moves.len())
            .sum();
        if applied >= at_least {
            return Ok(applied);
        }
        anyhow::ensure!(tokio::time::Instant::now() < deadline, "no moves applied");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_standby_decides_nothing_while_the_first_instance_runs_and_everything_once_it_died()
-> anyhow::Result<()> {
    let base = baseline().await?;
    let nats = TestNats::start()?;
    let ack_wait = vec!["--ack-wait".to_owned(), "10".to_owned()];
    let mut first = GameService::start_with(
        &nats.url(),
        GameServiceOptions {
            args: ack_wait.clone(),
            ..Default::default()
        },
    )?;
    let standby = GameService::start_with(
        &nats.url(),
        GameServiceOptions {
            args: [ack_wait, vec!["--standby".to_owned()]].concat(),
            ..Default::default()
        },
    )?;
    let js = jetstream::new(async_nats::connect(nats.url()).await?);
    let pgn = write_pgn()?;
    let mut simulator = simulate(pgn.path(), &nats.url(), &first.url())?.spawn()?;

    let applied = moves_applied_reaching(&first, 8).await?;
    assert_eq!(
        counted(&standby, "boardcast_observations_total").await?,
        0.0,
        "the standby decided observations while the first instance was deciding them"
    );
    first.process.kill_hard()?;
    let total: usize = base.states.iter().map(|s| s.moves.len()).sum();
    eprintln!("killed the first instance with about {applied} of {total} moves applied");

    // Everything left is decided by the standby, from where the first one stopped.
    assert!(simulator.wait()?.success());
    drained(&js).await?;
    let after = states_reaching(&standby.url(), &base.states).await?;
    assert_eq!(comparable(&after), comparable(&base.states));
    check_logs(&js, &after).await?;
    assert!(counted(&standby, "boardcast_observations_total").await? > 0.0);
    assert!(counted(&standby, "boardcast_partitions_taken_over_total").await? > 0.0);
    Ok(())
}

async fn two_instances(nats_url: &str, args: Vec<String>) -> anyhow::Result<()> {
    let base = baseline().await?;
    let options = GameServiceOptions {
        args,
        ..Default::default()
    };
    let first = GameService::start_with(nats_url, options.clone())?;
    let second = GameService::start_with(nats_url, options)?;
    let js = jetstream::new(boardcast_kit::nats::connect(nats_url, "test").await?);
    let pgn = write_pgn()?;
    // The games are set up through one instance, the observations go to both.
    let status = simulate(pgn.path(), nats_url, &second.url())?.status()?;
    assert!(status.success());
    drained(&js).await?;
    let one = states_reaching(&first.url(), &base.states).await?;
    let two = states_reaching(&second.url(), &base.states).await?;
    assert_eq!(comparable(&one), comparable(&base.states));
    assert_eq!(
        one, two,
        "both instances serve the same games, chain heads included"
    );
    check_logs(&js, &one).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn two_instances_on_one_server_never_fork_a_game() -> anyhow::Result<()> {
    let nats = TestNats::start()?;
    two_instances(&nats.url(), Vec::new()).await
}

#[tokio::test(flavor = "multi_thread")]
async fn two_instances_on_a_three_node_cluster_never_fork_a_game() -> anyhow::Result<()> {
    let mut cluster = TestCluster::start(3).await?;
    let urls = cluster.urls();
    two_instances(&urls, vec!["--replicas".into(), "3".into()])
        .await
        .context("two instances")?;

    // A node crash: once the other two have elected leaders, a new instance rebuilds the same
    // games from the replicated log; again after the node is back.
    let base = baseline().await?;
    let options = GameServiceOptions {
        args: vec!["--replicas".into(), "3".into()],
        ..Default::default()
    };
    cluster.kill(0)?;
    let js = jetstream::new(boardcast_kit::nats::connect(&urls, "test").await?);
    games_stream_available(&js)
        .await
        .context("log after the crash")?;
    let service = GameService::start_with(&urls, options.clone())?;
    let after = states_reaching(&service.url(), &base.states)
        .await
        .context("states after the crash")?;
    assert_eq!(comparable(&after), comparable(&base.states));
    check_logs(&js, &after)
        .await
        .context("logs after the crash")?;

    cluster.restart(0).await?;
    cluster.wait_ready(Duration::from_secs(60)).await?;
    games_stream_available(&js).await?;
    let service = GameService::start_with(&urls, options.clone())?;
    let again = states_reaching(&service.url(), &base.states).await?;
    assert_eq!(again, after);

    // Asked to step down (what the game service does when the leader acknowledges no append),
    // the game log's leader hands over to another replica, and the log is whole.
    let leader = cluster.stream_leader(&js, "BOARDCAST_GAMES").await?;
    boardcast_kit::nats::step_down_stream_leader(&js, "BOARDCAST_GAMES").await?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while cluster.stream_leader(&js, "BOARDCAST_GAMES").await? == leader {
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the leader did not step down"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let service = GameService::start_with(&urls, options)?;
    let stepped_down = states_reaching(&service.url(), &base.states).await?;
    assert_eq!(stepped_down, after);
    check_logs(&js, &stepped_down).await?;
    Ok(())
}

/// Waits until the game log answers (after a node failure, until its stream has a leader).
async fn games_stream_available(js: &jetstream::Context) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let info = match js.get_stream("BOARDCAST_GAMES").await {
            Ok(stream) => stream.get_info().await.map_err(anyhow::Error::from),
            Err(e) => Err(e.into()),
        };
        match info {
            Ok(info) => {
                assert_eq!(info.config.num_replicas, 3);
                return Ok(());
            }
            Err(e) if tokio::time::Instant::now() > deadline => return Err(e),
            Err(_) => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn duplicated_and_reordered_observations_make_the_same_games() -> anyhow::Result<()> {
    let base = baseline().await?;
    let nats = TestNats::start()?;
    let dir = tempfile::tempdir()?;
    let log = dir.path().join("game-service.log");
    let options = GameServiceOptions {
        log: Some(log.clone()),
        rust_log: Some("info".into()),
        ..Default::default()
    };
    let mut service = GameService::start_with(&nats.url(), options.clone())?;
    let mut client = boardcast_testkit::admin_client(&service.url()).await?;
    create_games(&mut client, &base.infos).await?;
    // A board whose observation 2 never arrives: a gap to report.
    let first = &base.infos[0];
    let mut gap_info = first.clone();
    gap_info.board_id = "gap-1".into();
    gap_info.round = 9;
    client
        .create_game(CreateGameRequest {
            game: Some(gap_info),
            request_id: boardcast_kit::client::new_request_id(),
            ..Default::default()
        })
        .await?;
    // Everything is in the stream before the service reads it, as when a gateway flushes its
    // outbox: the service alone has to put it right.
    service.process.stop(Duration::from_secs(5))?;

    let js = jetstream::new(async_nats::connect(nats.url()).await?);
    let mut by_board: BTreeMap<String, Vec<(String, Vec<u8>)>> = BTreeMap::new();
    for (subject, payload) in &base.observations {
        by_board
            .entry(subject.clone())
            .or_default()
            .push((subject.clone(), payload.clone()));
    }
    let mut published = 0;
    let first_subject = format!("boardcast.board.{}.obs", first.board_id);
    let mut displaced = false;
    for (subject, mut observations) in by_board {
        // Swap neighbours here and there: published out of order.
        let mut k = 2;
        while k + 1 < observations.len() {
            observations.swap(k, k + 1);
            k += 6;
        }
        if !displaced && subject != first_subject && observations.len() > 60 {
            // One observation stored after the next forty, as when a gateway re-sends the one
            // of a batch that JetStream did not acknowledge.
            let resent = observations.remove(4);
            observations.insert(44, resent);
            displaced = true;
        }
        for (i, (_, payload)) in observations.iter().enumerate() {
            let observation = Observation::decode(payload.as_slice())?;
            let copies = if i % 4 == 1 { 2 } else { 1 };
            for copy in 0..copies {
                // Different message ids, so JetStream keeps both copies.
                let id = format!("{}:{}:{copy}", observation.board_id, observation.device_seq);
                js.send_publish(
                    subject.clone(),
                    PublishMessage::build()
                        .payload(payload.clone().into())
                        .message_id(id),
                )
                .await?
                .await?;
                published += 1;
            }
        }
        if subject == first_subject {
            for (_, payload) in &observations {
                let mut observation = Observation::decode(payload.as_slice())?;
                if observation.device_seq == 2 {
                    continue;
                }
                observation.board_id = "gap-1".into();
                js.publish(
                    "boardcast.board.gap-1.obs",
                    observation.encode_to_vec().into(),
                )
                .await?
                .await?;
            }
        }
    }
    assert!(
        displaced,
        "a board with enough observations to displace one"
    );
    eprintln!(
        "published {published} observations for {} in the clean run",
        base.observations.len()
    );

    service = GameService::start_with(&nats.url(), options)?;
    drained(&js).await?;
    let (gap, after): (Vec<_>, Vec<_>) = states(&service.url())
        .await?
        .into_iter()
        .partition(|s| s.info.as_ref().is_some_and(|i| i.board_id == "gap-1"));
    assert_eq!(comparable(&after), comparable(&base.states));
    check_logs(&js, &after).await?;
    // The missing observation is in the game's log for the arbiter; observation 4 (published
    // before 3) showed it.
    assert_eq!(
        gap[0].missing_observations,
        vec![ObservationsMissing {
            first_device_seq: 2,
            last_device_seq: 2,
            noticed_at_device_seq: 4,
            unusable_reason: String::new(),
        }]
    );
    // When it turns up after all, it is kept aside, not applied.
    let mut late = base
        .observations
        .iter()
        .filter(|(subject, _)| *subject == format!("boardcast.board.{}.obs", first.board_id))
        .map(|(_, payload)| Observation::decode(payload.as_slice()))
        .find(|o| o.as_ref().is_ok_and(|o| o.device_seq == 2))
        .context("observation 2")??;
    late.board_id = "gap-1".into();
    js.publish("boardcast.board.gap-1.obs", late.encode_to_vec().into())
        .await?
        .await?;
    let kept = dead_letters(&js, 1).await?;
    assert!(
        kept[0]
            .1
            .contains("arrived after it was recorded as missing"),
        "{kept:?}"
    );
    drop(service);
    let log = std::fs::read_to_string(&log)?;
    assert!(
        log.contains("published out of order"),
        "reordered observations are reported"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_restart_with_or_without_the_snapshot_gives_the_same_games() -> anyhow::Result<()> {
    let base = baseline().await?;
    let nats = TestNats::start()?;
    let dir = tempfile::tempdir()?;
    let snapshot = dir.path().join("snapshot.redb");
    let log = dir.path().join("game-service.log");
    let options = GameServiceOptions {
        snapshot: Some(snapshot.clone()),
        log: Some(log.clone()),
        rust_log: Some("boardcast_game_service=info".into()),
        ..Default::default()
    };
    let mut service = GameService::start_with(&nats.url(), options.clone())?;
    let js = jetstream::new(async_nats::connect(nats.url()).await?);
    let pgn = write_pgn()?;
    assert!(
        simulate(pgn.path(), &nats.url(), &service.url())?
            .status()?
            .success()
    );
    drained(&js).await?;
    let live = states_reaching(&service.url(), &base.states).await?;
    service.process.stop(Duration::from_secs(10))?;

    service = GameService::start_with(&nats.url(), options.clone())?;
    let from_snapshot = states(&service.url()).await?;
    service.process.stop(Duration::from_secs(10))?;
    std::fs::remove_file(&snapshot)?;
    service = GameService::start_with(&nats.url(), options.clone())?;
    let from_log = states(&service.url()).await?;
    drop(service);

    assert_eq!(from_snapshot, live);
    assert_eq!(from_log, live);
    let said = std::fs::read_to_string(&log)?;
    assert!(
        said.contains("used_snapshot=true"),
        "the second start used the snapshot"
    );

    // The next event, on a new NATS store, with the same snapshot file (its default path
    // outlives an event): none of this event's games comes back.
    assert!(snapshot.exists(), "written on the way out");
    let next_event = TestNats::start()?;
    let service = GameService::start_with(&next_event.url(), options)?;
    assert_eq!(states(&service.url()).await?, Vec::new());
    drop(service);
    let said = std::fs::read_to_string(&log)?;
    assert!(
        said.contains("folded from another game log"),
        "the operator is told"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_decision_interrupted_between_two_appends_is_completed() -> anyhow::Result<()> {
    let base = baseline().await?;
    let nats = TestNats::start()?;
    let mut service = GameService::start(&nats.url())?;
    let info = base.infos[0].clone();
    let mut client = boardcast_testkit::admin_client(&service.url()).await?;
    let game_id = client
        .create_game(CreateGameRequest {
            game: Some(info.clone()),
            request_id: boardcast_kit::client::new_request_id(),
            ..Default::default()
        })
        .await?
        .into_inner()
        .game_id;
    service.process.stop(Duration::from_secs(5))?;

    // Play the board's observations with the aggregate, appending as the service does, and stop
    // as a crash would: after the first record of the first decision that has several.
    let js = jetstream::new(async_nats::connect(nats.url()).await?);
    let subject = format!("boardcast.board.{}.obs", info.board_id);
    let observations: Vec<Observation> = base
        .observations
        .iter()
        .filter(|(s, _)| *s == subject)
        .map(|(_, payload)| Observation::decode(payload.as_slice()))
        .collect::<Result<_, _>>()?;
    let mut game = fold_log(&js, &game_id).await?;
    let log_subject = format!("boardcast.game.{game_id}.events");
    let mut interrupted = None;
    // Signed as the game service signs: the restarted service must take them as its own.
    let signer = boardcast_testkit::TestUsers::shared()?.signer()?;
    for (i, observation) in observations.iter().enumerate() {
        let Ok(ObservationOutcome::Events(events)) = game.decide_observation(observation) else {
            continue;
        };
        let records = Game::record_signed(Some(&game), &game_id, events, 0, &signer);
        let write = if records.len() > 1 { 1 } else { records.len() };
        for record in &records[..write] {
            js.publish(log_subject.clone(), record.encode_to_vec().into())
                .await?
                .await?;
            game.apply(record)?;
        }
        if records.len() > 1 {
            interrupted = Some(i);
            break;
        }
    }
    let interrupted = interrupted.context("a decision with several records")?;
    // The interrupted observation was never acknowledged: it (and what follows) is delivered.
    for observation in &observations[interrupted..] {
        js.publish(subject.clone(), observation.encode_to_vec().into())
            .await?
            .await?;
    }

    let service = GameService::start(&nats.url())?;
    drained(&js).await?;
    let expected: Vec<_> = base
        .states
        .iter()
        .filter(|s| s.game_id == game_id)
        .cloned()
        .collect();
    let after = states_reaching(&service.url(), &expected).await?;
    assert_eq!(comparable(&after), comparable(&expected));
    check_logs(&js, &after).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn clock_ticks_passed_over_by_another_instance_are_not_gaps() -> anyhow::Result<()> {
    const TICKS_AFTER_PRESS: usize = 3;
    let base = baseline().await?;
    let nats = TestNats::start()?;
    let js = jetstream::new(async_nats::connect(nats.url()).await?);
    // The clean run's observations with the clock ticking after every press, cut in two after
    // the ticks that follow each board's middle press.
    let (mut first_half, mut second_half) = (Vec::new(), Vec::new());
    for segments in with_clock_ticks(&base.observations, TICKS_AFTER_PRESS)?.into_values() {
        let presses = segments.len() - 1;
        for (i, segment) in segments.into_iter().enumerate() {
            if i < presses / 2 {
                first_half.extend(segment);
            } else {
                second_half.extend(segment);
            }
        }
    }
    let publish = |batch: Vec<(String, Vec<u8>)>| {
        let js = js.clone();
        async move {
            for (subject, payload) in batch {
                js.publish(subject, payload.into()).await?.await?;
            }
            anyhow::Ok(())
        }
    };
    let dir = tempfile::tempdir()?;
    let logged = |name: &str| GameServiceOptions {
        log: Some(dir.path().join(name)),
        rust_log: Some("warn,boardcast_game_service::ingest=debug".into()),
        ..Default::default()
    };
    let looked_back = |name: &str| {
        std::fs::read_to_string(dir.path().join(name))
            .is_ok_and(|log| log.contains("observations handled before"))
    };

    // Two instances share the observations: each passes over ticks the other one handled.
    let first = GameService::start_with(&nats.url(), logged("first.log"))?;
    let second = GameService::start_with(&nats.url(), logged("second.log"))?;
    let mut client = boardcast_testkit::admin_client(&first.url()).await?;
    create_games(&mut client, &base.infos).await?;
    publish(first_half).await?;
    drained(&js).await?;
    drop((first, second));
    // How JetStream spreads the observations over the two instances varies from run to run, so
    // whether one passed over the other's ticks here is reported, not required.
    eprintln!(
        "two instances: looked back for the other's ticks: {}",
        looked_back("first.log") || looked_back("second.log")
    );

    // A new instance has handled nothing yet: it finds the ticks after each board's last
    // recorded observation in the stream.
    publish(second_half).await?;
    let third = GameService::start_with(&nats.url(), logged("third.log"))?;
    drained(&js).await?;
    let after = states(&third.url()).await?;
    for state in &after {
        assert!(
            state.missing_observations.is_empty(),
            "{}: no observation is missing, yet {:?} were recorded",
            state.game_id,
            state.missing_observations
        );
    }
    let moves = |states: &[boardcast_schema::game::v1::GameState]| {
        states
            .iter()
            .map(|s| (s.game_id.clone(), s.moves.len(), s.result))
            .collect::<Vec<_>>()
    };
    assert_eq!(moves(&after), moves(&base.states));
    check_logs(&js, &after).await?;
    drop(third);
    assert!(
        looked_back("third.log"),
        "the new instance looked back for the ticks"
    );
    Ok(())
}

/// Sets up the clean run's games, as the simulator does.
async fn create_games(
    client: &mut boardcast_kit::client::GameClient,
    infos: &[boardcast_schema::game::v1::GameStarted],
) -> anyhow::Result<()> {
    for info in infos {
        client
            .create_game(CreateGameRequest {
                game: Some(info.clone()),
                request_id: boardcast_kit::client::new_request_id(),
                ..Default::default()
            })
            .await?;
    }
    Ok(())
}

/// What the game service's appends rest on (see its `store`), on a three-node cluster with
/// replicated streams: a batch (atomic publish) whose first message expects the game's subject
/// to end where another writer's record has since moved it stores nothing at all; the same
/// batch expecting the right end is stored whole, its records one after the other.
#[tokio::test(flavor = "multi_thread")]
async fn a_batch_expecting_a_moved_game_end_stores_nothing_and_one_on_time_stores_all()
-> anyhow::Result<()> {
    let cluster = TestCluster::start(3).await?;
    let client = boardcast_kit::nats::connect(&cluster.urls(), "test").await?;
    let js = jetstream::new(client.clone());
    boardcast_kit::nats::ensure_streams(&js, 3, 1).await?;
    let subject = boardcast_kit::nats::game_subject("g");
    let batch = |id: &str, expected_end: u64, payloads: &[&str]| {
        let (client, subject, id) = (client.clone(), subject.clone(), id.to_owned());
        let payloads: Vec<String> = payloads.iter().map(|p| (*p).to_owned()).collect();
        async move {
            let mut answer = None;
            for (n, payload) in payloads.iter().enumerate() {
                let mut headers = async_nats::HeaderMap::new();
                headers.insert("Nats-Batch-Id", id.as_str());
                headers.insert("Nats-Batch-Sequence", (n + 1).to_string().as_str());
                if n == 0 {
                    let end = expected_end.to_string();
                    headers.insert("Nats-Expected-Last-Subject-Sequence", end.as_str());
                }
                if n + 1 == payloads.len() {
                    headers.insert("Nats-Batch-Commit", "1");
                }
                let request = async_nats::Request::new()
                    .payload(payload.clone().into())
                    .headers(headers);
                let reply = client.send_request(subject.clone(), request).await?;
                answer = Some(serde_json::from_slice::<serde_json::Value>(&reply.payload).ok());
                if answer
                    .as_ref()
                    .and_then(|a| a.as_ref()?.get("error"))
                    .is_some()
                {
                    break;
                }
            }
            anyhow::Ok(answer.flatten().unwrap_or_default())
        }
    };
    let stream = js.get_stream(boardcast_kit::nats::GAMES_STREAM).await?;
    let stored = || async {
        anyhow::Ok(
            boardcast_kit::game_log::game_records(&stream, "g", u64::MAX)
                .await?
                .into_iter()
                .map(|(seq, payload)| (seq, String::from_utf8_lossy(&payload).into_owned()))
                .collect::<Vec<_>>(),
        )
    };
    let first = batch("b1", 0, &["g1", "g2"]).await?;
    assert_eq!(
        (first["seq"].as_u64(), first["count"].as_u64()),
        (Some(2), Some(2)),
        "{first}"
    );
    // Another writer's record moves the game's end to 3.
    js.publish(subject.clone(), "h1".into()).await?.await?;
    let refused = batch("b2", 2, &["g3", "g4", "g5"]).await?;
    assert_eq!(
        refused["error"]["err_code"].as_u64(),
        Some(10071),
        "{refused}"
    );
    assert_eq!(
        stored().await?.len(),
        3,
        "nothing of the refused batch is stored"
    );
    let on_time = batch("b3", 3, &["g3", "g4", "g5"]).await?;
    assert_eq!(on_time["seq"].as_u64(), Some(6), "{on_time}");
    let seqs: Vec<(u64, String)> = stored().await?;
    assert_eq!(
        seqs,
        [
            (1, "g1"),
            (2, "g2"),
            (3, "h1"),
            (4, "g3"),
            (5, "g4"),
            (6, "g5")
        ]
        .map(|(seq, p)| (seq, p.to_owned()))
    );
    Ok(())
}

/// The one reader of the game log delivers what the log holds, in order, past records removed
/// from within it or purged from its start, and reads one game's records by sequence.
#[tokio::test(flavor = "multi_thread")]
async fn a_reader_goes_past_records_removed_and_reads_a_game_again_by_sequence()
-> anyhow::Result<()> {
    use boardcast_kit::game_log;
    use futures::StreamExt as _;
    let nats = TestNats::start()?;
    let js = jetstream::new(async_nats::connect(nats.url()).await?);
    boardcast_kit::nats::ensure_streams(&js, 1, 1).await?;
    for (game, n) in [("g", 1), ("h", 1), ("g", 2), ("g", 3)] {
        js.publish(
            boardcast_kit::nats::game_subject(game),
            format!("{game}{n}").into(),
        )
        .await?
        .await?;
    }
    let stream = js.get_stream(boardcast_kit::nats::GAMES_STREAM).await?;
    stream.delete_message(3).await?;
    stream.purge().sequence(2).await?;
    let messages = game_log::read_from(&stream, boardcast_kit::nats::GAMES_SUBJECTS, 1).await?;
    let mut messages = std::pin::pin!(messages);
    let mut delivered = Vec::new();
    while delivered.len() < 2 {
        match messages.next().await {
            Some(message) => delivered.push(message?.stream_seq),
            None => anyhow::bail!("the reader ended"),
        }
    }
    assert_eq!(delivered, [2, 4]);
    // One game's records again, by sequence, up to a point, and after one.
    let again = game_log::game_records(&stream, "g", 4).await?;
    let read: Vec<(u64, &[u8])> = again.iter().map(|(s, p)| (*s, p.as_ref())).collect();
    assert_eq!(read, [(4, b"g3".as_slice())]);
    assert!(
        game_log::game_records_between(&stream, "g", 4, u64::MAX)
            .await?
            .is_empty()
    );
    Ok(())
}

/// A game whose log holds two different records with one number (written beside each other,
/// as a nats-server fault or an operator's mistake could) waits for an operator: decisions on
/// it fail and change nothing, other games go on, and snapshots go on being written with the
/// game marked broken, so a restart from them finds it forked again rather than whole.
#[tokio::test(flavor = "multi_thread")]
async fn a_forked_game_fails_alone_and_snapshots_go_on_keeping_it_behind() -> anyhow::Result<()> {
    use boardcast_kit::nats::GAMES_STREAM;
    use boardcast_schema::game::v1::{
        ActRequest, Annotation, ArbiterAction, GetGameRequest, arbiter_action::Action,
    };
    let nats = TestNats::start()?;
    let dir = tempfile::tempdir()?;
    let snapshot = dir.path().join("snapshot.redb");
    let options = GameServiceOptions {
        snapshot: Some(snapshot.clone()),
        args: vec!["--snapshot-interval".into(), "1".into()],
        ..Default::default()
    };
    let mut service = GameService::start_with(&nats.url(), options.clone())?;
    let mut client = boardcast_testkit::admin_client(&service.url()).await?;
    let mut game_ids = Vec::new();
    for board in 1..=2 {
        let request = boardcast_testkit::create_request(boardcast_testkit::game_on_board(
            "fork-open",
            board,
            &format!("fork-{board}"),
        ));
        game_ids.push(client.create_game(request).await?.into_inner().game_id);
    }
    let (forked, other) = (&game_ids[0], &game_ids[1]);
    let note = |game_id: &str, text: &str| ActRequest {
        game_id: game_id.to_owned(),
        action: Some(ArbiterAction {
            action: Some(Action::Annotation(Annotation { text: text.into() })),
            ..Default::default()
        }),
        request_id: boardcast_kit::client::new_request_id(),
    };

    // Two notes numbered alike, each signed with the game service's key, written beside each
    // other on the game's subject.
    let js = jetstream::new(async_nats::connect(nats.url()).await?);
    let game = game_from_log(&js, forked).await?;
    let signer = boardcast_testkit::TestUsers::shared()?.signer()?;
    let note_action = |text: &str| Action::Annotation(Annotation { text: text.into() });
    let fork_seqs = write_beside(
        &js,
        &game,
        &[note_action("one"), note_action("another")],
        &signer,
    )
    .await?;
    let forked_records = |stream: jetstream::stream::Stream| async move {
        anyhow::Ok(
            boardcast_kit::game_log::game_records(&stream, forked, u64::MAX)
                .await?
                .len(),
        )
    };
    let in_log = forked_records(js.get_stream(GAMES_STREAM).await?).await?;

    // Decisions on the forked game fail and append nothing; the other game goes on.
    let refused = client.act(note(forked, "after the fork")).await;
    assert!(refused.is_err(), "a decision on a forked game: {refused:?}");
    client.act(note(other, "goes on")).await?;
    assert_eq!(
        forked_records(js.get_stream(GAMES_STREAM).await?).await?,
        in_log,
        "nothing appended to the forked game"
    );

    // A snapshot written since holds the log past the fork, with the game marked broken.
    service.process.stop(Duration::from_secs(10))?;
    {
        use redb::ReadableDatabase as _;
        let db = redb::Database::open(&snapshot)?;
        let txn = db.begin_read()?;
        let meta = txn.open_table(redb::TableDefinition::<&str, &[u8]>::new("meta"))?;
        let folded_seq = meta
            .get("folded_seq")?
            .context("the snapshot's position")?
            .value()
            .try_into()
            .map(u64::from_le_bytes)?;
        let last_fork = fork_seqs.iter().copied().max().unwrap_or_default();
        assert!(
            folded_seq > last_fork,
            "the snapshot holds the log up to {folded_seq}, the fork is at {fork_seqs:?}"
        );
        // Marked broken, with why: restored so, its board waits on nothing after a restart.
        let broken = txn.open_table(redb::TableDefinition::<&str, &str>::new("broken"))?;
        let why = broken
            .get(forked.as_str())?
            .context("the forked game marked broken")?
            .value()
            .to_owned();
        assert!(why.contains("forked"), "{why}");
    }

    // Restarted from that snapshot: the game is still refused, the other still goes on, and
    // both are served as they stood.
    service = GameService::start_with(&nats.url(), options)?;
    let mut client = boardcast_testkit::admin_client(&service.url()).await?;
    let refused = client.act(note(forked, "after the restart")).await;
    assert!(refused.is_err(), "a decision on a forked game: {refused:?}");
    client.act(note(other, "still goes on")).await?;
    assert_eq!(
        forked_records(js.get_stream(GAMES_STREAM).await?).await?,
        in_log
    );
    for game_id in [forked, other] {
        client
            .get_game(GetGameRequest {
                game_id: game_id.clone(),
            })
            .await?;
    }
    Ok(())
}

/// A forked game's observations do not hold up their partition: a restarted service finds the
/// game's log broken as it loads, and since trying again cannot mend a fork, the board's
/// observations (published out of order) go to the dead-letter stream at their first attempt,
/// naming what an operator does, while a board of another game in the same partition goes on
/// being decided. The board's later observations go too, without the game being read again for
/// each; once an operator keeps a branch, the board goes on and every observation given up
/// meanwhile is decided, in order.
#[tokio::test(flavor = "multi_thread")]
async fn a_forked_games_observations_are_given_up_and_their_partition_goes_on() -> anyhow::Result<()>
{
    use boardcast_kit::nats::{observation_subject, partition_of_board};
    use boardcast_schema::game::v1::{Annotation, arbiter_action::Action};
    let nats = TestNats::start()?;
    let service = GameService::start(&nats.url())?;
    let mut client = boardcast_testkit::admin_client(&service.url()).await?;
    // A board of another game in the forked board's partition.
    let partitions = boardcast_kit::nats::DEFAULT_PARTITIONS;
    let forked_board = "forked-1";
    let neighbour = (2..)
        .map(|n| format!("neighbour-{n}"))
        .find(|b| partition_of_board(b, partitions) == partition_of_board(forked_board, partitions))
        .context("a board in the same partition")?;
    let mut game_ids = Vec::new();
    for (number, board) in [(1, forked_board), (2, neighbour.as_str())] {
        let request = boardcast_testkit::create_request(boardcast_testkit::game_on_board(
            "forked-partition",
            number,
            board,
        ));
        game_ids.push(client.create_game(request).await?.into_inner().game_id);
    }
    let js = jetstream::new(async_nats::connect(nats.url()).await?);
    let game = game_from_log(&js, &game_ids[0]).await?;
    let signer = boardcast_testkit::TestUsers::shared()?.signer()?;
    let note = |text: &str| Action::Annotation(Annotation { text: text.into() });
    let branches = write_beside(&js, &game, &[note("one"), note("another")], &signer).await?;
    drop(service);

    // Published while no service runs: the forked board's second observation before its
    // first, then the neighbour's.
    let lift = pawn_lifted;
    for observation in [
        lift(forked_board, 2),
        lift(forked_board, 1),
        lift(&neighbour, 1),
    ] {
        js.publish(
            observation_subject(&observation.board_id),
            observation.encode_to_vec().into(),
        )
        .await?
        .await?;
    }
    let service = GameService::start(&nats.url())?;
    drained(&js).await?;

    let letters = dead_letters(&js, 2).await?;
    for (subject, reason) in &letters {
        assert_eq!(subject, &format!("boardcast.deadletter.{forked_board}"));
        assert!(
            reason.contains("forked") && reason.contains("boardcast fork show"),
            "{reason}"
        );
    }
    assert_eq!(
        counted(
            &service,
            "boardcast_observations_total{disposition=\"retried\"}"
        )
        .await?,
        0.0,
        "given up at the first attempt, not tried again"
    );
    let mut client = boardcast_testkit::admin_client(&service.url()).await?;
    let events = game_events(&mut client, &game_ids[1]).await?;
    assert!(
        recorded_observations(&events).contains(&1),
        "the neighbour's observation is decided"
    );

    // The board plays on: its observations go as they come, and the neighbour's go on being
    // decided.
    for device_seq in 3..=6 {
        let observation = lift(forked_board, device_seq);
        js.publish(
            observation_subject(forked_board),
            observation.encode_to_vec().into(),
        )
        .await?
        .await?;
    }
    js.publish(
        observation_subject(&neighbour),
        lift(&neighbour, 2).encode_to_vec().into(),
    )
    .await?
    .await?;
    drained(&js).await?;
    let letters = dead_letters(&js, 6).await?;
    for (_, reason) in &letters[2..] {
        assert!(reason.contains("until its log is mended"), "{reason}");
    }
    let events = game_events(&mut client, &game_ids[1]).await?;
    assert_eq!(recorded_observations(&events), [1, 2]);

    // An operator keeps the second branch; the game is found mended without the board
    // sending anything more (a finished game's board may not), and every observation given up
    // since the fork is decided, in order.
    let trusted_keys = boardcast_testkit::TestUsers::shared()?
        .trusted_keys()
        .to_string_lossy()
        .into_owned();
    let branch = branches.get(1).context("two branches")?.to_string();
    let dir = tempfile::tempdir()?;
    let save = dir
        .path()
        .join("removed.json")
        .to_string_lossy()
        .into_owned();
    let nats_url = nats.url();
    let (ok, out) = boardcast_cli(&[
        "fork",
        "keep",
        &game_ids[0],
        "--branch",
        &branch,
        "--save",
        &save,
        "--nats",
        &nats_url,
        "--trusted-keys",
        &trusted_keys,
    ])?;
    assert!(ok, "{out}");
    let recorded = until_within(Duration::from_secs(40), || {
        let (mut client, game_id) = (client.clone(), game_ids[0].clone());
        async move {
            let recorded = recorded_observations(&game_events(&mut client, &game_id).await?);
            anyhow::Ok(recorded.contains(&6).then_some(recorded))
        }
    })
    .await
    .context("the observations given up while the log was broken are decided")?;
    assert_eq!(
        recorded,
        [1, 2, 3, 4, 5, 6],
        "each given up since the fork, in order"
    );

    // The board plays on as usual.
    js.publish(
        observation_subject(forked_board),
        lift(forked_board, 7).encode_to_vec().into(),
    )
    .await?
    .await?;
    drained(&js).await?;
    let events = game_events(&mut client, &game_ids[0]).await?;
    assert_eq!(recorded_observations(&events), [1, 2, 3, 4, 5, 6, 7]);
    Ok(())
}

/// A game whose log lost records for good (as a NATS fault can): `boardcast fork show` lists
/// what follows the gap, `fork cut` refuses a wrong cut changing nothing, then removes the
/// records after the gap (saved to a file); the game service, whose state held them, finds the
/// game's end in the log moved back without anything more from the board, reads the game
/// again, and decides the board's observations since the last record kept again from the
/// observation stream, in order, so that nothing the board sent is lost.
#[tokio::test(flavor = "multi_thread")]
async fn a_log_that_lost_records_is_cut_and_the_boards_observations_are_decided_again()
-> anyhow::Result<()> {
    use boardcast_kit::nats::{GAMES_STREAM, observation_subject};
    let nats = TestNats::start()?;
    let service = GameService::start(&nats.url())?;
    let mut client = boardcast_testkit::admin_client(&service.url()).await?;
    let board = "lost-1";
    let request = boardcast_testkit::create_request(boardcast_testkit::game_on_board(
        "lost-records",
        1,
        board,
    ));
    let game_id = client.create_game(request).await?.into_inner().game_id;
    let js = jetstream::new(async_nats::connect(nats.url()).await?);
    let lift = |device_seq: u64| pawn_lifted(board, device_seq);
    let publish = |device_seq: u64| {
        let js = js.clone();
        async move {
            js.publish(
                observation_subject(board),
                lift(device_seq).encode_to_vec().into(),
            )
            .await?
            .await?;
            anyhow::Ok(())
        }
    };
    for device_seq in 1..=6 {
        publish(device_seq).await?;
    }
    drained(&js).await?;
    assert_eq!(
        recorded_observations(&game_events(&mut client, &game_id).await?),
        [1, 2, 3, 4, 5, 6]
    );

    // Record 4 (observation 3's) is lost.
    let log = js.get_stream(GAMES_STREAM).await?;
    let records = || boardcast_kit::game_log::game_records(&log, &game_id, u64::MAX);
    let stored = records().await?;
    assert_eq!(stored.len(), 7, "the set-up and a record per observation");
    log.delete_message(stored[3].0).await?;
    let trusted_keys = boardcast_testkit::TestUsers::shared()?
        .trusted_keys()
        .to_string_lossy()
        .into_owned();
    let nats_url = nats.url();
    let fork = |command: &str, extra: &[&str]| {
        let mut args = vec![
            "fork",
            command,
            &game_id,
            "--nats",
            &nats_url,
            "--trusted-keys",
            &trusted_keys,
        ];
        args.extend_from_slice(extra);
        boardcast_cli(&args)
    };
    let (ok, shown) = fork("show", &[])?;
    assert!(ok, "{shown}");
    assert!(
        shown.contains("follows on up to record 3, and records 4 to 4 are missing")
            && shown.contains(&format!("boardcast fork cut {game_id} --after 3")),
        "{shown}"
    );

    // A cut elsewhere than after the last record that follows on changes nothing.
    let dir = tempfile::tempdir()?;
    let save = dir.path().join("removed.json");
    let save_arg = save.to_string_lossy().into_owned();
    let (ok, refused) = fork("cut", &["--after", "2", "--save", &save_arg])?;
    assert!(
        !ok && refused.contains("follows on up to record 3, not 2"),
        "{refused}"
    );
    assert_eq!(records().await?.len(), 6);
    assert!(!save.exists());

    let (ok, out) = fork("cut", &["--after", "3", "--save", &save_arg])?;
    assert!(ok, "{out}");
    // The records kept are the first three (the game service may already append after them:
    // the cut hands the board's last observation over again).
    let kept: Vec<u64> = records()
        .await?
        .iter()
        .map(|(seq, _)| *seq)
        .take(3)
        .collect();
    assert_eq!(kept, [stored[0].0, stored[1].0, stored[2].0]);
    let saved: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&save)?)?;
    assert_eq!(saved["kept_up_to_record"], 3);
    let removed = saved_stream_seqs(&saved)?;
    assert_eq!(removed, [stored[4].0, stored[5].0, stored[6].0]);

    // Without the board sending anything more (a finished game's board may not: the cut hands
    // its last observation over again), the service finds the game's end in the log moved
    // back, reads the game again, and decides every observation since record 3 again, in
    // order.
    let recorded_in_log = || async {
        records()
            .await?
            .iter()
            .map(|(_, payload)| {
                let record = boardcast_schema::game::v1::GameEventRecord::decode(payload.as_ref())?;
                anyhow::Ok(Game::open_record(&record)?)
            })
            .collect::<anyhow::Result<Vec<_>>>()
            .map(|events| recorded_observations(&events))
    };
    let recorded = until_within(Duration::from_secs(40), || async {
        let recorded = recorded_in_log().await?;
        anyhow::Ok(recorded.contains(&6).then_some(recorded))
    })
    .await
    .context("the board's observations since the cut are decided again")?;
    assert_eq!(recorded, [1, 2, 3, 4, 5, 6]);

    // The board plays on as usual.
    publish(7).await?;
    drained(&js).await?;
    assert_eq!(recorded_in_log().await?, [1, 2, 3, 4, 5, 6, 7]);
    let game = game_from_log(&js, &game_id).await?;
    assert_eq!(
        game.last_game_seq(),
        8,
        "the log follows on, each observation once"
    );
    Ok(())
}

/// A game's first record that another writer stored and this instance's read left out (as
/// nats-server 2.9 was seen to do after a node was killed; here a snapshot that claims the log
/// up to past the record, without the game) is not written beside: setting the same game up
/// again is refused by the log, the game is read again, and its log keeps one first record.
#[tokio::test(flavor = "multi_thread")]
async fn a_game_set_up_elsewhere_and_left_out_here_is_read_not_set_up_twice() -> anyhow::Result<()>
{
    use boardcast_kit::nats::GAMES_STREAM;
    use boardcast_schema::game::v1::GetGameRequest;
    let nats = TestNats::start()?;
    let dir = tempfile::tempdir()?;
    let snapshot = dir.path().join("snapshot.redb");
    let options = GameServiceOptions {
        snapshot: Some(snapshot.clone()),
        ..Default::default()
    };
    let js = jetstream::new(async_nats::connect(nats.url()).await?);
    let records_of = |game_id: String| {
        let js = js.clone();
        async move {
            let stream = js.get_stream(GAMES_STREAM).await?;
            anyhow::Ok(boardcast_kit::game_log::game_records(&stream, &game_id, u64::MAX).await?)
        }
    };
    let pairing =
        |board| boardcast_testkit::game_on_board("left-out", board, &format!("left-out-{board}"));

    // A snapshot holding one game only.
    let mut service = GameService::start_with(&nats.url(), options.clone())?;
    let mut client = boardcast_testkit::admin_client(&service.url()).await?;
    client
        .create_game(boardcast_testkit::create_request(pairing(1)))
        .await?;
    service.process.stop(Duration::from_secs(10))?;
    let one_game = dir.path().join("one-game.redb");
    std::fs::copy(&snapshot, &one_game)?;

    // Another game set up after it.
    service = GameService::start_with(&nats.url(), options.clone())?;
    let mut client = boardcast_testkit::admin_client(&service.url()).await?;
    let game_id = client
        .create_game(boardcast_testkit::create_request(pairing(2)))
        .await?
        .into_inner()
        .game_id;
    service.process.stop(Duration::from_secs(10))?;
    let first = records_of(game_id.clone()).await?;
    let [(first_seq, _)] = first.as_slice() else {
        anyhow::bail!("the game's log: {first:?}");
    };

    // The first snapshot, claiming the log folded up to the second game's record without it.
    std::fs::copy(&one_game, &snapshot)?;
    {
        let db = redb::Database::open(&snapshot)?;
        let txn = db.begin_write()?;
        {
            let mut meta = txn.open_table(redb::TableDefinition::<&str, &[u8]>::new("meta"))?;
            meta.insert("folded_seq", first_seq.to_le_bytes().as_slice())?;
            meta.insert("last_game", b"".as_slice())?;
        }
        txn.commit()?;
    }
    service = GameService::start_with(&nats.url(), options)?;
    let mut client = boardcast_testkit::admin_client(&service.url()).await?;
    let unknown = client
        .get_game(GetGameRequest {
            game_id: game_id.clone(),
        })
        .await;
    assert_eq!(
        unknown.map(|_| ()).map_err(|s| s.code()),
        Err(tonic::Code::Unavailable),
        "the game is not folded here before the set-up, but it is in the log: not \"no game\""
    );

    // Set up again by another request: refused, and the game read from the log.
    let again = client
        .create_game(boardcast_testkit::create_request(pairing(2)))
        .await;
    assert!(again.is_err(), "set up twice: {again:?}");
    let records = records_of(game_id.clone()).await?;
    assert_eq!(
        records.len(),
        1,
        "the game's log holds one first record, not two: {records:?}"
    );
    let state = client
        .get_game(GetGameRequest {
            game_id: game_id.clone(),
        })
        .await?
        .into_inner();
    assert_eq!(state.game_id, game_id);
    service.process.stop(Duration::from_secs(10))?;
    Ok(())
}

/// A game's subject that holds only a record the fold skips (here a first record signed with a
/// key nobody trusts) does not stop the game from being set up: its first record expects the
/// subject to be empty, is refused, and is appended after the forgery once the subject was read.
#[tokio::test(flavor = "multi_thread")]
async fn a_forgery_on_a_new_game_s_subject_does_not_stop_its_set_up() -> anyhow::Result<()> {
    use boardcast_game::signing::RecordSigner;
    use boardcast_kit::nats::{GAMES_STREAM, game_subject};
    use boardcast_schema::game::v1::GetGameRequest;
    let nats = TestNats::start()?;
    let service = GameService::start(&nats.url())?;
    let mut client = boardcast_testkit::admin_client(&service.url()).await?;
    let js = jetstream::new(async_nats::connect(nats.url()).await?);
    let pairing = boardcast_testkit::game_on_board("forged-start", 1, "forged-start-1");
    let (game_id, event) = Game::decide_start(&pairing, "intruder", "forged")?;
    let forged = Game::record_signed(
        None,
        &game_id,
        vec![event],
        1_000,
        &RecordSigner::from_seed([2; 32]),
    );
    js.publish(game_subject(&game_id), forged[0].encode_to_vec().into())
        .await?
        .await?;

    let created = client
        .create_game(boardcast_testkit::create_request(pairing))
        .await?
        .into_inner();
    assert!(created.created);
    // Refused once if the first record expected an empty subject; not at all if the service's
    // follower had read the forgery before the game was set up.
    let conflicts = counted(&service, "boardcast_append_conflicts_total").await?;
    assert!(conflicts <= 1.0, "{conflicts} conflicts");
    let stream = js.get_stream(GAMES_STREAM).await?;
    let on_subject = boardcast_kit::game_log::game_records(&stream, &game_id, u64::MAX).await?;
    assert_eq!(
        on_subject.len(),
        2,
        "the forgery, then the game's first record"
    );
    client
        .get_game(GetGameRequest {
            game_id: game_id.clone(),
        })
        .await?;
    Ok(())
}

/// An operator mends a game whose log forked: `boardcast fork show` lists the two branches,
/// `boardcast fork keep` refuses what is not a branch of a fork and changes nothing then, and
/// keeping the branch the broadcast did not show saves the other branch's records to a file and
/// removes them from the log. The game service then decides on the game again, from the branch
/// kept, and the broadcast shows that branch.
#[tokio::test(flavor = "multi_thread")]
async fn an_operator_keeps_one_branch_of_a_forked_game_and_it_goes_on_from_there()
-> anyhow::Result<()> {
    use boardcast_kit::nats::GAMES_STREAM;
    use boardcast_schema::game::v1::{
        ActRequest, ArbiterAction, EnterMove, GetGameRequest, arbiter_action::Action,
    };
    let nats = TestNats::start()?;
    let service = GameService::start(&nats.url())?;
    let broadcast = boardcast_testkit::BroadcastService::start(&nats.url())?;
    let arbiter = boardcast_testkit::ArbiterService::start(&nats.url(), &service.url())?;
    let mut client = boardcast_testkit::admin_client(&service.url()).await?;
    let mut game_ids = Vec::new();
    for board in 1..=2 {
        let request = boardcast_testkit::create_request(boardcast_testkit::game_on_board(
            "mend",
            board,
            &format!("mend-{board}"),
        ));
        game_ids.push(client.create_game(request).await?.into_inner().game_id);
    }
    let (forked, whole) = (&game_ids[0], &game_ids[1]);
    let js = jetstream::new(async_nats::connect(nats.url()).await?);
    let records_of = |game_id: String| {
        let js = js.clone();
        async move {
            let stream = js.get_stream(GAMES_STREAM).await?;
            anyhow::Ok(boardcast_kit::game_log::game_records(&stream, &game_id, u64::MAX).await?)
        }
    };
    let enter = |game_id: &str, san: &str| ActRequest {
        game_id: game_id.to_owned(),
        action: Some(ArbiterAction {
            action: Some(Action::Move(EnterMove { san: san.into() })),
            ..Default::default()
        }),
        request_id: boardcast_kit::client::new_request_id(),
    };

    // White's first move entered twice beside each other, each signed with the service's key:
    // 1. e4 first, then 1. d4.
    let move_action = |san: &str| Action::Move(EnterMove { san: san.into() });
    let game = game_from_log(&js, forked).await?;
    let signer = boardcast_testkit::TestUsers::shared()?.signer()?;
    let [e4_branch, d4_branch] =
        write_beside(&js, &game, &[move_action("e4"), move_action("d4")], &signer).await?[..]
    else {
        anyhow::bail!("two branches");
    };
    // And a third 1. c4 that no trusted key signed: a forgery, which makes no branch.
    let intruder = boardcast_game::signing::RecordSigner::from_seed([66; 32]);
    write_beside(&js, &game, &[move_action("c4")], &intruder).await?;
    let before_keep = records_of(forked.clone()).await?;
    pgn_shows(&broadcast, forked, "1. e4").await?;
    let refused = client.act(enter(forked, "Nf6")).await;
    assert!(refused.is_err(), "a decision on a forked game: {refused:?}");
    let in_log = before_keep.len();
    // The game's event stream gives its records up to the fork, then ends with DATA_LOSS.
    let mut events = client
        .stream_game_events(boardcast_schema::game::v1::StreamGameEventsRequest {
            game_id: forked.clone(),
            from_game_seq: 0,
        })
        .await?
        .into_inner();
    let mut streamed = Vec::new();
    let ended = loop {
        match tokio::time::timeout(Duration::from_secs(10), events.message()).await? {
            Ok(Some(event)) => streamed.push(event.game_seq),
            Ok(None) => anyhow::bail!("the stream ended without an error after {streamed:?}"),
            Err(status) => break status,
        }
    };
    // The first branch (the arbiter's 1. e4, its records from 2 on) is what was stored first.
    let first_branch: Vec<u64> = (1..=streamed.len() as u64).collect();
    assert!(
        streamed.len() >= 2 && streamed == first_branch,
        "{streamed:?}"
    );
    assert_eq!(ended.code(), tonic::Code::DataLoss, "{ended:?}");
    assert!(ended.message().contains("forked"), "{ended:?}");

    // The operator looks.
    let nats_url = nats.url();
    let trusted_keys = boardcast_testkit::TestUsers::shared()?
        .trusted_keys()
        .to_string_lossy()
        .into_owned();
    let trust = ["--trusted-keys", trusted_keys.as_str()];
    let (ok, out) =
        boardcast_cli(&[&["fork", "show", forked, "--nats", &nats_url], &trust[..]].concat())?;
    assert!(ok, "{out}");
    assert!(out.contains("forks at record 2: 2 branches"), "{out}");
    for branch in [e4_branch, d4_branch] {
        assert!(out.contains(&format!("branch {branch}:")), "{out}");
    }
    assert!(
        out.contains("left aside"),
        "the forgery is named apart: {out}"
    );
    let (ok, out) =
        boardcast_cli(&[&["fork", "show", whole, "--nats", &nats_url], &trust[..]].concat())?;
    assert!(ok && out.contains("does not fork"), "{out}");
    // A misspelt game id is said to be none of the log's, not shown as a whole log.
    let (ok, out) = boardcast_cli(
        &[
            &["fork", "show", "no-such-game", "--nats", &nats_url],
            &trust[..],
        ]
        .concat(),
    )?;
    assert!(!ok && out.contains("holds nothing of game"), "{out}");

    // Refusals change nothing: a record that starts no branch, a game that does not fork.
    let dir = tempfile::tempdir()?;
    let save = dir.path().join("removed.json");
    let save_arg = save.to_string_lossy().into_owned();
    for (game_id, branch) in [(forked, 1), (whole, 1)] {
        let branch = branch.to_string();
        let (ok, out) = boardcast_cli(
            &[
                &[
                    "fork", "keep", game_id, "--branch", &branch, "--save", &save_arg, "--nats",
                    &nats_url,
                ],
                &trust[..],
            ]
            .concat(),
        )?;
        assert!(!ok, "{out}");
        assert!(out.contains("nothing removed"), "{out}");
        assert!(!save.exists(), "nothing saved");
    }
    assert_eq!(records_of(forked.clone()).await?.len(), in_log);

    // The operator keeps 1. d4, the branch the broadcast did not show.
    let d4 = d4_branch.to_string();
    let (ok, out) = boardcast_cli(
        &[
            &[
                "fork", "keep", forked, "--branch", &d4, "--save", &save_arg, "--nats", &nats_url,
            ],
            &trust[..],
        ]
        .concat(),
    )?;
    assert!(ok, "{out}");
    assert!(out.contains("its records follow on"), "{out}");
    let saved: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&save)?)?;
    let removed = saved_stream_seqs(&saved)?;
    assert!(removed.contains(&e4_branch), "{saved}");
    // Each record saved as it was stored.
    for entry in saved["removed"].as_array().context("the records removed")? {
        use base64::Engine as _;
        let seq = entry["stream_seq"].as_u64().context("a stream sequence")?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(entry["record_base64"].as_str().context("the record")?)?;
        let stored = before_keep
            .iter()
            .find(|(s, _)| *s == seq)
            .context("stored")?;
        assert_eq!(stored.1.as_ref(), bytes.as_slice());
    }
    let after = records_of(forked.clone()).await?;
    assert_eq!(after.len(), in_log - removed.len());
    assert!(after.iter().all(|(seq, _)| !removed.contains(seq)));

    // The game goes on from 1. d4, in the game service and in the broadcast.
    client.act(enter(forked, "Nf6")).await?;
    let state = client
        .get_game(GetGameRequest {
            game_id: forked.clone(),
        })
        .await?
        .into_inner();
    let moves: Vec<&str> = state.moves.iter().map(|m| m.san.as_str()).collect();
    assert_eq!(moves, ["d4", "Nf6"]);
    let pgn = pgn_shows(&broadcast, forked, "Nf6").await?;
    assert!(pgn.contains("1. d4") && !pgn.contains("e4"), "{pgn}");
    let session = arbiter
        .login("admin", boardcast_testkit::TEST_PASSWORD)
        .await?;
    dashboard_shows(&session, forked, |detail| {
        detail["board"]["last_game_seq"].as_u64() == Some(state.last_game_seq)
    })
    .await?;

    // A game whose log forks on its last record, mended: no record of it comes any more, and
    // the broadcast and the dashboard still show the branch kept.
    let last_forked = whole;
    let game = game_from_log(&js, last_forked).await?;
    let starts = write_beside(&js, &game, &[move_action("e4"), move_action("d4")], &signer).await?;
    pgn_shows(&broadcast, last_forked, "1. e4").await?;
    let state_is =
        |wanted: &'static str| move |detail: &serde_json::Value| detail["board"]["state"] == wanted;
    dashboard_shows(&session, last_forked, state_is("damaged")).await?;
    let save_last = dir.path().join("removed-last.json");
    let d4 = starts.get(1).context("two branches")?.to_string();
    let save_last_arg = save_last.to_string_lossy().into_owned();
    let (ok, out) = boardcast_cli(
        &[
            &[
                "fork",
                "keep",
                last_forked,
                "--branch",
                &d4,
                "--save",
                &save_last_arg,
                "--nats",
                &nats_url,
            ],
            &trust[..],
        ]
        .concat(),
    )?;
    assert!(ok, "{out}");
    pgn_shows(&broadcast, last_forked, "1. d4").await?;
    let detail = dashboard_shows(&session, last_forked, state_is("playing")).await?;
    assert_eq!(detail["board"]["last_move"], "1. d4", "{detail}");
    Ok(())
}

/// Game `game_id` folded from its records in the log (they must follow on).
async fn game_from_log(js: &jetstream::Context, game_id: &str) -> anyhow::Result<Game> {
    use boardcast_schema::game::v1::GameEventRecord;
    let stream = js.get_stream(boardcast_kit::nats::GAMES_STREAM).await?;
    let mut game: Option<Game> = None;
    for (_, payload) in boardcast_kit::game_log::game_records(&stream, game_id, u64::MAX).await? {
        let record = GameEventRecord::decode(payload.as_ref())?;
        match &mut game {
            Some(game) => game.apply(&record)?,
            None => game = Some(Game::from_first_record(&record)?),
        }
    }
    game.with_context(|| format!("the records of game {game_id}"))
}

/// Writes, one after the other on `game`'s subject, the records of each of `actions` decided on
/// `game` as it stands and signed by `signer`: branches beside each other, as a fork. Returns
/// where each branch's first record is stored.
async fn write_beside(
    js: &jetstream::Context,
    game: &Game,
    actions: &[boardcast_schema::game::v1::arbiter_action::Action],
    signer: &boardcast_game::signing::RecordSigner,
) -> anyhow::Result<Vec<u64>> {
    use boardcast_schema::game::v1::ArbiterAction;
    let mut starts = Vec::new();
    for action in actions {
        let action = ArbiterAction {
            action: Some(action.clone()),
            ..Default::default()
        };
        let events = game.decide_arbiter(&action, "intruder", "fork")?;
        let records = Game::record_signed(Some(game), game.game_id(), events, 1_000, signer);
        for (i, record) in records.iter().enumerate() {
            let ack = js
                .publish(
                    boardcast_kit::nats::game_subject(game.game_id()),
                    record.encode_to_vec().into(),
                )
                .await?
                .await?;
            if i == 0 {
                starts.push(ack.sequence);
            }
        }
    }
    Ok(starts)
}

/// The broadcast's PGN of game `game_id` once it holds `wanted` (within 40 s).
async fn pgn_shows(
    broadcast: &boardcast_testkit::BroadcastService,
    game_id: &str,
    wanted: &str,
) -> anyhow::Result<String> {
    let url = broadcast.url(&format!("/games/{game_id}.pgn"));
    until_within(Duration::from_secs(40), || async {
        let text = reqwest::get(&url).await?.text().await?;
        anyhow::Ok(text.contains(wanted).then_some(text))
    })
    .await
    .with_context(|| format!("the feed of {game_id} showing {wanted:?}"))
}

/// The arbiter dashboard's detail of game `game_id` once `shows` holds of it (within 40 s).
async fn dashboard_shows(
    session: &boardcast_testkit::arbiter::ArbiterSession,
    game_id: &str,
    shows: impl Fn(&serde_json::Value) -> bool,
) -> anyhow::Result<serde_json::Value> {
    let path = format!("/api/games/{game_id}");
    until_within(Duration::from_secs(40), || async {
        let detail = session.get(&path).await?;
        anyhow::Ok(shows(&detail).then_some(detail))
    })
    .await
    .with_context(|| format!("the dashboard's {path}"))
}

/// Asks `check` every 200 ms until it gives something, for at most `limit`.
async fn until_within<T, F, Fut>(limit: Duration, mut check: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Option<T>>>,
{
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if let Some(found) = check().await? {
            return Ok(found);
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "not seen within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Where the records saved by `boardcast fork keep` or `cut` (their file, `saved`) were stored.
fn saved_stream_seqs(saved: &serde_json::Value) -> anyhow::Result<Vec<u64>> {
    Ok(saved["removed"]
        .as_array()
        .context("the records removed")?
        .iter()
        .filter_map(|r| r["stream_seq"].as_u64())
        .collect())
}

/// Board `board`'s observation `device_seq`: White's e-pawn lifted (each one is recorded).
fn pawn_lifted(board: &str, device_seq: u64) -> boardcast_schema::device::v1::Observation {
    use boardcast_schema::device::v1::{
        Observation, Piece, PieceLifted, SourceKind, observation::Kind as ObservationKind,
    };
    let now = boardcast_kit::now_unix_ms();
    Observation {
        board_id: board.to_owned(),
        device_seq,
        device_time_unix_ms: now,
        receive_time_unix_ms: now,
        source: SourceKind::Simulator as i32,
        kind: Some(ObservationKind::Lifted(PieceLifted {
            square: 12,
            piece: Piece::WhitePawn as i32,
        })),
    }
}

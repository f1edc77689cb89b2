//! The game service at the scale of a large event: restart time for many games, with and
//! without its snapshot, and how many observations per second it decides.
//!
//! Ignored in the normal suite; build the release programs and run them explicitly:
//! `cargo build --release --bins && cargo test -p boardcast-testkit --release --test
//! game_log_bench -- --ignored --nocapture` (`BENCH_GAMES` sets the number of games and
//! `BENCH_BOARDS` the number of boards, 1000 each by default; `BENCH_TICKS` clock readings after
//! each press; `BENCH_PARTITIONS` the partitions of the NATS server's mapping, 16 by default, 0
//! for none; `BENCH_INSTANCES` the game service instances, 1 by default; with `BENCH_STANDBY=1`
//! those after the first are started with `--standby`). `live_hall_latency`
//! plays a hall live: `BENCH_MOVE_SECONDS` between moves (8, blitz; 60, classical) with every
//! clock reporting each second, for `BENCH_SECONDS` (60).

mod support;

use std::time::{Duration, Instant};

use anyhow::Context as _;
use async_nats::jetstream;
use boardcast_game::{Game, ObservationOutcome, device::Observation};
use boardcast_testkit::{GameService, GameServiceOptions, TestNats, every_message};
use prost::Message as _;
use support::*;

/// The service's own measure of loading, from its "games rebuilt" log line.
fn rebuilt_ms(log: &str) -> Option<u64> {
    let line = log.lines().rev().find(|l| l.contains("games rebuilt"))?;
    let value = line.split("ms=").nth(1)?;
    value
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "benchmark: run explicitly"]
async fn restart_time_with_and_without_snapshot() -> anyhow::Result<()> {
    let games = setting("BENCH_GAMES", 1000)?;
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
    // The service creates the streams.
    let mut service = GameService::start_with(&nats.url(), options.clone())?;
    service.process.stop(Duration::from_secs(10))?;

    // Games written straight into the log: each one of the six reference games played on its
    // own board, decided by the aggregate exactly as the service would.
    let js = jetstream::new(async_nats::connect(nats.url()).await?);
    let started = Instant::now();
    let mut acks = Vec::new();
    let mut records_total = 0usize;
    // Signed as the game service signs: the service must take them as its own.
    let signer = boardcast_testkit::TestUsers::shared()?.signer()?;
    for i in 0..games {
        let mut info = base.infos[i % base.infos.len()].clone();
        info.round = 100 + (i / base.infos.len()) as u32;
        let original_board = info.board_id.clone();
        info.board_id = format!("bench-{i}");
        let (game_id, first) = Game::decide_start(&info, "bench", "")?;
        let mut records = Game::record_signed(None, &game_id, vec![first], 0, &signer);
        let mut game = Game::from_first_record(&records[0])?;
        for (subject, payload) in &base.observations {
            if !subject.contains(&format!(".{original_board}.")) {
                continue;
            }
            let mut observation = Observation::decode(payload.as_slice())?;
            observation.board_id = info.board_id.clone();
            if let Ok(ObservationOutcome::Events(events)) = game.decide_observation(&observation) {
                let new = Game::record_signed(Some(&game), &game_id, events, 0, &signer);
                for record in &new {
                    game.apply(record)?;
                }
                records.extend(new);
            }
        }
        for record in records {
            records_total += 1;
            acks.push(
                js.publish(
                    format!("boardcast.game.{game_id}.events"),
                    record.encode_to_vec().into(),
                )
                .await?,
            );
            if acks.len() >= 1000 {
                for ack in acks.drain(..) {
                    ack.await?;
                }
            }
        }
    }
    for ack in acks.drain(..) {
        ack.await?;
    }
    eprintln!(
        "wrote {games} games, {records_total} records, in {:?}",
        started.elapsed()
    );

    let measure = |label: &str| -> anyhow::Result<()> {
        let _ = std::fs::remove_file(&log);
        let started = Instant::now();
        let service = GameService::start_with(&nats.url(), options.clone())?;
        let ready = started.elapsed();
        let memory = peak_memory(std::slice::from_ref(&service));
        let mut service = service;
        service.process.stop(Duration::from_secs(30))?;
        let text = std::fs::read_to_string(&log)?;
        eprintln!(
            "{label}: serving after {ready:?}; games rebuilt in {} ms; peak resident memory {memory}",
            rebuilt_ms(&text).map_or("?".into(), |ms| ms.to_string())
        );
        Ok(())
    };
    std::fs::remove_file(&snapshot).ok();
    measure("without snapshot (whole log)")?;
    measure("with snapshot")?;
    std::fs::remove_file(&snapshot)?;
    measure("without snapshot again")?;
    measure("with snapshot again")?;
    Ok(())
}

/// How many observations per second the game service decides: `BENCH_BOARDS` boards (1000 by
/// default) each carrying one of the reference games, with `BENCH_TICKS` clock readings after
/// every press (0 by default; a DGT clock reports every second), every observation already in
/// the stream, the service started on them and timed until it has acknowledged the last.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "benchmark: run explicitly"]
async fn observations_decided_per_second() -> anyhow::Result<()> {
    use boardcast_schema::game::v1::{CreateGameRequest, GetGameRequest};
    let boards = setting("BENCH_BOARDS", 1000)?;
    let ticks = setting("BENCH_TICKS", 0)?;
    let partitions = u32::try_from(setting("BENCH_PARTITIONS", 16)?)?;
    let instances = setting("BENCH_INSTANCES", 1)?.max(1);
    let standby = setting("BENCH_STANDBY", 0)? > 0;
    // BENCH_NODES=3: a three-node cluster on this machine, every stream replicated (R3), as a
    // hall runs (its mapping has the default 16 partitions).
    let nodes = setting("BENCH_NODES", 1)?;
    let base = baseline().await?;
    let by_board = with_clock_ticks(&base.observations, ticks)?;
    let (nats, cluster) = if nodes > 1 {
        (
            None,
            Some(boardcast_testkit::TestCluster::start(nodes).await?),
        )
    } else {
        (Some(TestNats::start_partitioned(partitions)?), None)
    };
    let nats_url = match (&nats, &cluster) {
        (Some(nats), _) => nats.url(),
        (_, Some(cluster)) => cluster.urls(),
        _ => unreachable!("one or the other"),
    };
    let nats_pids: Vec<u32> = match (&nats, &cluster) {
        (Some(nats), _) => nats.server.pid().into_iter().collect(),
        (_, Some(cluster)) => cluster.nodes.iter().filter_map(|n| n.pid()).collect(),
        _ => Vec::new(),
    };
    let nats_cpu_now = || -> Option<f64> { nats_pids.iter().map(|&pid| cpu_seconds_of(pid)).sum() };
    let replicas = if nodes > 1 { 3 } else { 1 };
    let js = jetstream::new(boardcast_kit::nats::connect(&nats_url, "bench").await?);
    let service = partitioned_service(&nats_url, partitions, false, replicas)?;
    let mut client = boardcast_testkit::admin_client(&service.url()).await?;
    let mut per_board: Vec<Vec<(String, Vec<u8>)>> = Vec::new();
    let mut game_ids = Vec::new();
    for i in 0..boards {
        let mut info = base.infos[i % base.infos.len()].clone();
        let original_board = info.board_id.clone();
        info.board_id = format!("load-{i}");
        info.board_number = i as u32 + 1;
        let created = client
            .create_game(CreateGameRequest {
                game: Some(info.clone()),
                request_id: boardcast_kit::client::new_request_id(),
                ..Default::default()
            })
            .await?
            .into_inner();
        game_ids.push(created.game_id);
        let mut observations = Vec::new();
        for (_, payload) in by_board[&original_board].iter().flatten() {
            let mut observation = Observation::decode(payload.as_slice())?;
            observation.board_id = info.board_id.clone();
            observations.push((
                format!("boardcast.board.{}.obs", info.board_id),
                observation.encode_to_vec(),
            ));
        }
        per_board.push(observations);
    }
    drop(service);

    // As in a hall: the boards' observations interleaved.
    let mut acks = Vec::new();
    let mut total = 0usize;
    let longest = per_board.iter().map(Vec::len).max().unwrap_or(0);
    for step in 0..longest {
        for observations in &per_board {
            if let Some((subject, payload)) = observations.get(step) {
                acks.push(js.publish(subject.clone(), payload.clone().into()).await?);
                total += 1;
                if acks.len() >= 1000 {
                    for ack in acks.drain(..) {
                        ack.await?;
                    }
                }
            }
        }
    }
    for ack in acks.drain(..) {
        ack.await?;
    }

    let records_before = records_in_log(&js).await?;
    let started = Instant::now();
    let nats_cpu_before = nats_cpu_now();
    let services = (0..instances)
        .map(|i| partitioned_service(&nats_url, partitions, standby && i > 0, replicas))
        .collect::<anyhow::Result<Vec<_>>>()?;
    drained_within(&js, Duration::from_secs(3600)).await?;
    let elapsed = started.elapsed();
    // The CPU each side spent: steadier than the rate when comparing builds, since the rate
    // also moves with whatever else the machine does.
    let service_cpu: Option<f64> = services.iter().map(cpu_seconds).sum();
    let nats_cpu = nats_cpu_now()
        .zip(nats_cpu_before)
        .map(|(after, before)| after - before);
    let records = records_in_log(&js).await?.saturating_sub(records_before);
    eprintln!(
        "{boards} boards, {ticks} ticks after each press, {partitions} partitions, {nodes} NATS node(s), {instances} instance(s){}: \
         {total} observations decided in {elapsed:?}: {:.0} per second; peak resident memory {}",
        if standby && instances > 1 {
            " (the others standing by)"
        } else {
            ""
        },
        total as f64 / elapsed.as_secs_f64(),
        peak_memory(&services)
    );
    let per_observation = |seconds: f64| seconds * 1e6 / total as f64;
    eprintln!(
        "  {records} records appended ({:.2} an observation)",
        records as f64 / total as f64
    );
    if let (Some(service_cpu), Some(nats_cpu)) = (service_cpu, nats_cpu) {
        eprintln!(
            "  CPU: game service {service_cpu:.1} s ({:.0} µs an observation), nats-server {nats_cpu:.1} s ({:.0} µs)",
            per_observation(service_cpu),
            per_observation(nats_cpu)
        );
    }
    // How the decisions that appended nothing were made sure of their game (a request each when
    // asked), and how many were made again because their game had moved.
    for service in &services {
        let page = reqwest::get(service.metrics_url("/metrics"))
            .await?
            .text()
            .await?;
        for line in page.lines().filter(|l| {
            l.starts_with("boardcast_nothing_decided_total")
                || l.starts_with("boardcast_append_conflicts_total")
        }) {
            eprintln!("  {line}");
        }
    }
    let service = &services[0];
    let mut client = boardcast_testkit::admin_client(&service.url()).await?;
    let mut moves = 0;
    for game_id in game_ids {
        let state = client
            .get_game(GetGameRequest { game_id })
            .await?
            .into_inner();
        moves += state.moves.len();
    }
    let expected: usize = (0..boards)
        .map(|i| base.states[i % base.states.len()].moves.len())
        .sum();
    assert_eq!(moves, expected, "every game has its moves");
    Ok(())
}

/// A game service consuming `partitions` partitions (creating their streams; the default for
/// 0, a server without the mapping), as a standby when `standby`.
fn partitioned_service(
    nats_url: &str,
    partitions: u32,
    standby: bool,
    replicas: usize,
) -> anyhow::Result<GameService> {
    let mut args = match partitions {
        0 => Vec::new(),
        n => vec!["--partitions".to_owned(), n.to_string()],
    };
    args.extend(["--replicas".to_owned(), replicas.to_string()]);
    if standby {
        args.push("--standby".to_owned());
    }
    GameService::start_with(
        nats_url,
        GameServiceOptions {
            args,
            ..Default::default()
        },
    )
}

/// Each service's peak resident memory, as the kernel counts it (`VmHWM`).
fn peak_memory(services: &[GameService]) -> String {
    services
        .iter()
        .map(|s| {
            s.process
                .pid()
                .and_then(peak_resident_kb)
                .map_or_else(|| "?".into(), |kb| format!("{kb} kB"))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// CPU seconds a service has used so far.
fn cpu_seconds(service: &GameService) -> Option<f64> {
    cpu_seconds_of(service.process.pid()?)
}

/// How many records the game log holds.
async fn records_in_log(js: &jetstream::Context) -> anyhow::Result<u64> {
    let mut log = js.get_stream(boardcast_kit::nats::GAMES_STREAM).await?;
    Ok(log.info().await?.state.messages)
}

/// The stored time of every message of `stream` (by stream sequence), with its subject and
/// payload.
async fn read_stream(
    js: &jetstream::Context,
    name: &str,
) -> anyhow::Result<Vec<(i128, String, Vec<u8>)>> {
    let mut read = Vec::new();
    for message in every_message(js, name).await? {
        let at = message.time.unix_timestamp_nanos();
        read.push((at, message.subject.to_string(), message.payload.to_vec()));
    }
    Ok(read)
}

/// Latency in a live hall: `BENCH_BOARDS` boards (1000) each playing one of the reference games,
/// a move every `BENCH_MOVE_SECONDS` (8 for blitz, 60 for classical) with the clock reporting
/// every second in between, for `BENCH_SECONDS` (60). Reports how long each observation that
/// produced events took from its arrival in NATS to its first record in the game log (both
/// stamped by the NATS server), the observations per second, and the game service's CPU and peak
/// resident memory.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "benchmark: run explicitly"]
async fn live_hall_latency() -> anyhow::Result<()> {
    use boardcast_game::events::{CreateGameRequest, game_event::Kind};
    let boards = setting("BENCH_BOARDS", 1000)?;
    let move_seconds = setting("BENCH_MOVE_SECONDS", 8)?.max(1);
    let seconds = setting("BENCH_SECONDS", 60)?;
    let partitions = u32::try_from(setting("BENCH_PARTITIONS", 16)?)?;
    let instances = setting("BENCH_INSTANCES", 1)?.max(1);
    let standby = setting("BENCH_STANDBY", 0)? > 0;
    let base = baseline().await?;
    let by_board = with_clock_ticks(&base.observations, move_seconds - 1)?;
    let nats = TestNats::start_partitioned(partitions)?;
    let js = jetstream::new(async_nats::connect(nats.url()).await?);
    let services = (0..instances)
        .map(|i| partitioned_service(&nats.url(), partitions, standby && i > 0, 1))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut client = boardcast_testkit::admin_client(&services[0].url()).await?;
    let mut plans = Vec::new();
    for i in 0..boards {
        let mut info = base.infos[i % base.infos.len()].clone();
        let original_board = info.board_id.clone();
        info.board_id = format!("live-{i}");
        info.board_number = u32::try_from(i + 1)?;
        client
            .create_game(CreateGameRequest {
                game: Some(info.clone()),
                request_id: boardcast_kit::client::new_request_id(),
                ..Default::default()
            })
            .await?;
        let mut segments = Vec::new();
        for segment in &by_board[&original_board] {
            let mut renamed = Vec::new();
            for (_, payload) in segment {
                let mut observation = Observation::decode(payload.as_slice())?;
                observation.board_id = info.board_id.clone();
                renamed.push(observation);
            }
            segments.push(renamed);
        }
        plans.push(segments);
    }
    let cpu_before: Vec<Option<f64>> = services.iter().map(cpu_seconds).collect();

    // Each board on its own: a move's observations a tenth of a second apart, then the clock
    // every second until the next move; boards start spread over the first move's time.
    let started = tokio::time::Instant::now();
    let end = started + Duration::from_secs(u64::try_from(seconds)?);
    let mut tasks = tokio::task::JoinSet::new();
    for (i, segments) in plans.into_iter().enumerate() {
        let js = js.clone();
        let offset = Duration::from_millis(
            u64::try_from(i)? * 1000 * u64::try_from(move_seconds)? / u64::try_from(boards)?,
        );
        let ticks = move_seconds - 1;
        tasks.spawn(async move {
            let mut at = started + offset;
            let mut published = 0usize;
            for segment in segments {
                let moving = segment.len().saturating_sub(ticks);
                for (k, mut observation) in segment.into_iter().enumerate() {
                    at += if k < moving {
                        Duration::from_millis(100)
                    } else {
                        Duration::from_secs(1)
                    };
                    if at > end {
                        return anyhow::Ok(published);
                    }
                    tokio::time::sleep_until(at).await;
                    let now = boardcast_kit::now_unix_ms();
                    observation.device_time_unix_ms = now;
                    observation.receive_time_unix_ms = now;
                    js.publish(
                        boardcast_kit::nats::observation_subject(&observation.board_id),
                        observation.encode_to_vec().into(),
                    )
                    .await?
                    .await?;
                    published += 1;
                }
            }
            anyhow::Ok(published)
        });
    }
    let mut published = 0;
    while let Some(done) = tasks.join_next().await {
        published += done??;
    }
    let publishing = started.elapsed();
    drained_within(&js, Duration::from_secs(600)).await?;
    let behind = started.elapsed().saturating_sub(publishing);
    let cpu: Vec<String> = services
        .iter()
        .zip(cpu_before)
        .map(|(s, before)| match (cpu_seconds(s), before) {
            (Some(after), Some(before)) => format!(
                "{:.0}%",
                100.0 * (after - before) / started.elapsed().as_secs_f64()
            ),
            _ => "?".into(),
        })
        .collect();

    // Arrival of each observation, and the first record of the game log that names it.
    let mut arrived = std::collections::HashMap::new();
    for partition in boardcast_kit::nats::observation_partitions(&js).await? {
        let name = boardcast_kit::nats::ingest_stream(partition);
        for (at, _, payload) in read_stream(&js, &name).await? {
            let observation = Observation::decode(payload.as_ref())?;
            arrived
                .entry((observation.board_id, observation.device_seq))
                .or_insert(at);
        }
    }
    let mut latencies_us = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (at, _, payload) in read_stream(&js, boardcast_kit::nats::GAMES_STREAM).await? {
        let record = boardcast_game::events::GameEventRecord::decode(payload.as_ref())?;
        let event = Game::open_record(&record)?;
        if let Some(Kind::ObservationRecorded(recorded)) = &event.kind
            && let Some(observation) = &recorded.observation
        {
            let key = (observation.board_id.clone(), observation.device_seq);
            if let Some(arrival) = arrived.get(&key)
                && seen.insert(key)
            {
                latencies_us.push(i64::try_from((at - arrival) / 1000)?);
            }
        }
    }
    latencies_us.sort_unstable();
    let quantile = |q: f64| -> f64 {
        let index = ((latencies_us.len() as f64 - 1.0) * q).round() as usize;
        latencies_us.get(index).copied().unwrap_or(0) as f64 / 1000.0
    };
    eprintln!(
        "live hall: {boards} boards, a move every {move_seconds} s, clocks every second, {partitions} partitions, \
         {instances} instance(s){}, {seconds} s: {published} observations ({:.0} per second); \
         {} observations with events: arrival to log p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; \
         all decided {:.1} s after the last was published; CPU {}; peak resident memory {}",
        if standby && instances > 1 {
            " (the others standing by)"
        } else {
            ""
        },
        published as f64 / publishing.as_secs_f64(),
        latencies_us.len(),
        quantile(0.5),
        quantile(0.99),
        quantile(1.0),
        behind.as_secs_f64(),
        cpu.join(", "),
        peak_memory(&services)
    );
    Ok(())
}

/// A benchmark setting from the environment, or `default` when it is not set.
fn setting(name: &str, default: usize) -> anyhow::Result<usize> {
    match std::env::var(name) {
        Ok(value) => value
            .parse()
            .with_context(|| format!("{name}={value:?} is not a whole number")),
        Err(_) => Ok(default),
    }
}

//! The game service at the scale of a large event: restart time for many games, with and
//! without its snapshot, and how many observations per second it decides.
//!
//! Ignored in the normal suite; build the release programs and run them explicitly:
//! `cargo build --release --bins && cargo test -p boardcast-testkit --release --test
//! game_log_bench -- --ignored --nocapture` (`BENCH_GAMES` sets the number of games and
//! `BENCH_BOARDS` the number of boards, 1000 each by default; `BENCH_TICKS` clock readings after
//! each press).

mod support;

use std::time::{Duration, Instant};

use anyhow::Context as _;
use async_nats::jetstream;
use boardcast_game::{Game, ObservationOutcome, device::Observation};
use boardcast_testkit::{GameService, GameServiceOptions, TestNats};
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
        let mut service = GameService::start_with(&nats.url(), options.clone())?;
        let ready = started.elapsed();
        service.process.stop(Duration::from_secs(30))?;
        let text = std::fs::read_to_string(&log)?;
        eprintln!(
            "{label}: serving after {ready:?}; games rebuilt in {} ms",
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
    let base = baseline().await?;
    let by_board = with_clock_ticks(&base.observations, ticks)?;
    let nats = TestNats::start()?;
    let js = jetstream::new(async_nats::connect(nats.url()).await?);
    let service = GameService::start(&nats.url())?;
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

    let started = Instant::now();
    let service = GameService::start(&nats.url())?;
    drained_within(&js, Duration::from_secs(3600)).await?;
    let elapsed = started.elapsed();
    eprintln!(
        "{boards} boards, {ticks} ticks after each press, {total} observations decided in {elapsed:?}: {:.0} per second",
        total as f64 / elapsed.as_secs_f64()
    );
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

/// A benchmark setting from the environment, or `default` when it is not set.
fn setting(name: &str, default: usize) -> anyhow::Result<usize> {
    match std::env::var(name) {
        Ok(value) => value
            .parse()
            .with_context(|| format!("{name}={value:?} is not a whole number")),
        Err(_) => Ok(default),
    }
}

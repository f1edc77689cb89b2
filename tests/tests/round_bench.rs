//! A round as it happens, from its start: `BENCH_BOARDS` boards (1000) show their set-up position
//! at once, their clocks are started over the first `BENCH_START_SPREAD` seconds (20), and each
//! board then plays one of the London Chess Classic 2016 games at the pace its score's `[%clk]`
//! times give (the opening moves come in seconds, as at a real round start), its clock reporting
//! every second between presses, as DGT clocks do. The boards play the 45 games in turn, so no
//! two boards of one game move together.
//!
//! Every clock press that completes a move is timed in this process to the game log record that
//! completes the move (a plain NATS subscription on the log's subjects) and to the round's
//! server-sent events update that shows it (one timed subscriber, `BENCH_SUBSCRIBERS` (100) more
//! reading and discarding). Reported per minute of the round and overall, with the machine's
//! busy share of its cores per minute, so that the round start is seen and not averaged away.
//!
//! Ignored in the normal suite; build the release programs and run it explicitly:
//! `cargo build --release --bins && cargo test -p boardcast-testkit --release --test round_bench
//! -- --ignored --nocapture`. `BENCH_SECONDS` (240) is how long the boards play;
//! `BENCH_SYNC_ALWAYS=1` has NATS write each message to disk before acknowledging it, as the
//! shipped configurations do (`sync_interval: always`).

mod support;

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Arc, Mutex},
    time::Duration,
};

use anyhow::Context as _;
use async_nats::jetstream;
use boardcast_game::{
    Game,
    device::{ClockRun, Observation, SourceKind, observation::Kind as ObservationKind},
    events::{CreateGameRequest, GameEventRecord, GameStarted, Player, game_event::Kind},
    parse_time_control,
};
use boardcast_rules::pgn::{PgnGame, read_games};
use boardcast_sim::{ScriptOptions, ScriptStep, script};
use boardcast_testkit::{BroadcastService, GameService, TestNats, repo_root};
use futures::StreamExt as _;
use prost::Message as _;
use support::{SseEvents, now_us, percentile, setting};

const TOURNAMENT: &str = "bench";

/// Per board, the time each move's press was published (µs since the epoch), by ply.
type Presses = Arc<Vec<Mutex<Vec<i64>>>>;

/// Latency samples: (the press's time since the round started, latency), both in µs.
type Samples = Arc<Mutex<Vec<(i64, i64)>>>;

/// A board's game: what is set up on the game service and what its board and clock send.
struct Board {
    started: GameStarted,
    steps: Vec<ScriptStep>,
}

fn board(index: usize, game: &PgnGame, start_spread_ms: u64) -> anyhow::Result<Board> {
    let time_control = parse_time_control("40/7200:3600+30").map_err(anyhow::Error::msg)?;
    let first = time_control.periods.first().cloned().unwrap_or_default();
    let player = |side: &str| Player {
        name: game.tag(side).unwrap_or("?").to_owned(),
        rating: game
            .tag(&format!("{side}Elo"))
            .and_then(|r| r.parse().ok())
            .unwrap_or(0),
        ..Default::default()
    };
    let board_number = u32::try_from(index + 1)?;
    let started = GameStarted {
        tournament_id: TOURNAMENT.into(),
        round: 1,
        board_number,
        board_id: format!("round-{board_number}"),
        white: Some(player("White")),
        black: Some(player("Black")),
        time_control: Some(time_control),
        edition: "fide-2023".into(),
        ..Default::default()
    };
    let options = ScriptOptions {
        initial_clock_ms: first.base_ms,
        increment_ms: first.increment_ms,
        clock_reports_every_ms: Some(1_000),
        ..ScriptOptions::default()
    };
    let mut steps = script(game, &options)?;
    // The set-up position shows at the round's start; the clock is started a little later on
    // each board (arbiters walk the hall, players come to the board), and the game runs from
    // there.
    let clock_started = start_spread_ms * (index as u64 * 7919 % 1000) / 1000;
    for step in steps.iter_mut().skip(1) {
        step.at_ms += clock_started;
    }
    Ok(Board { started, steps })
}

/// The machine's busy and total CPU time so far (clock ticks over all cores), from /proc/stat.
fn machine_cpu() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let fields: Vec<u64> = stat
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .filter_map(|f| f.parse().ok())
        .collect();
    let total: u64 = fields.iter().sum();
    // idle and iowait
    let idle = fields.get(3)? + fields.get(4).copied().unwrap_or(0);
    Some((total - idle, total))
}

/// Publishes a board's steps at their times from `start`, each awaited as a gateway awaits its
/// acknowledgement; records when each press that completes a move leaves.
async fn play(
    js: jetstream::Context,
    index: usize,
    board: Board,
    start: tokio::time::Instant,
    end: tokio::time::Instant,
    presses: Presses,
) -> anyhow::Result<u64> {
    let subject = boardcast_kit::nats::observation_subject(&board.started.board_id);
    let mut running = None;
    let mut published = 0;
    for (i, step) in board.steps.into_iter().enumerate() {
        let due = start + Duration::from_millis(step.at_ms);
        if due > end {
            break;
        }
        tokio::time::sleep_until(due).await;
        let is_press = match &step.kind {
            ObservationKind::Clock(reading) => {
                let now = reading.running();
                let pressed = matches!(now, ClockRun::White | ClockRun::Black)
                    && running.is_some_and(|was| was != now);
                running = Some(now);
                pressed
            }
            _ => false,
        };
        let now_ms = boardcast_kit::now_unix_ms();
        let observation = Observation {
            board_id: board.started.board_id.clone(),
            device_seq: i as u64 + 1,
            device_time_unix_ms: now_ms,
            receive_time_unix_ms: now_ms,
            source: SourceKind::Simulator as i32,
            kind: Some(step.kind),
        };
        if is_press {
            presses[index]
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(now_us());
        }
        js.publish(subject.clone(), observation.encode_to_vec().into())
            .await?
            .await?;
        published += 1;
    }
    Ok(published)
}

/// The latency of the plies `from..to` of `board`, shown at `at`, from their presses.
fn time_plies(
    presses: &Presses,
    samples: &Samples,
    round_start_us: i64,
    board: usize,
    plies: std::ops::Range<usize>,
    at: i64,
) {
    let pressed = presses[board].lock().unwrap_or_else(|e| e.into_inner());
    let mut samples = samples.lock().unwrap_or_else(|e| e.into_inner());
    for ply in plies {
        // Ply 1 is completed by the first press.
        if let Some(sent) = ply.checked_sub(1).and_then(|i| pressed.get(i)) {
            samples.push((sent - round_start_us, at - sent));
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "benchmark: run explicitly"]
async fn a_round_from_its_start() -> anyhow::Result<()> {
    let boards = setting("BENCH_BOARDS", 1000)? as usize;
    let seconds = setting("BENCH_SECONDS", 240)?;
    let start_spread_ms = setting("BENCH_START_SPREAD", 20)? * 1000;
    let subscribers = setting("BENCH_SUBSCRIBERS", 100)? as usize;

    let text = std::fs::read_to_string(repo_root().join("data/london-classic-2016.pgn"))?;
    let games = read_games(&text)?;
    let plans = (0..boards)
        .map(|i| board(i, &games[i % games.len()], start_spread_ms))
        .collect::<anyhow::Result<Vec<_>>>()?;

    let nats = if setting("BENCH_SYNC_ALWAYS", 0)? > 0 {
        TestNats::start_synced()?
    } else {
        TestNats::start()?
    };
    let js = jetstream::new(async_nats::connect(nats.url()).await?);
    let game_service = GameService::start(&nats.url())?;
    let broadcast = BroadcastService::start(&nats.url())?;
    let mut client = boardcast_testkit::admin_client(&game_service.url()).await?;
    let mut board_of_game = HashMap::new();
    for (i, plan) in plans.iter().enumerate() {
        let created = client
            .create_game(CreateGameRequest {
                game: Some(plan.started.clone()),
                request_id: boardcast_kit::client::new_request_id(),
                ..Default::default()
            })
            .await?
            .into_inner();
        board_of_game.insert(created.game_id, i);
    }
    let board_of_game = Arc::new(board_of_game);
    eprintln!("{boards} games set up");

    let presses: Presses = Arc::new((0..boards).map(|_| Mutex::default()).collect());
    let to_log: Samples = Arc::default();
    let to_viewer: Samples = Arc::default();
    // Set when the round starts, before any press.
    let round_start_us = Arc::new(std::sync::atomic::AtomicI64::new(0));

    // The game log as it is appended.
    let mut records = async_nats::connect(nats.url())
        .await?
        .subscribe(boardcast_kit::nats::GAMES_SUBJECTS)
        .await?;
    let log_reader = {
        let (presses, to_log, board_of_game, round_start) = (
            presses.clone(),
            to_log.clone(),
            board_of_game.clone(),
            round_start_us.clone(),
        );
        tokio::spawn(async move {
            while let Some(message) = records.next().await {
                let at = now_us();
                let Ok(record) = GameEventRecord::decode(message.payload.as_ref()) else {
                    continue;
                };
                let Ok(event) = Game::open_record(&record) else {
                    continue;
                };
                if let (Some(Kind::MoveCompleted(completed)), Some(&board)) =
                    (&event.kind, board_of_game.get(&event.game_id))
                {
                    let ply = completed.ply as usize;
                    let start = round_start.load(std::sync::atomic::Ordering::Acquire);
                    time_plies(&presses, &to_log, start, board, ply..ply + 1, at);
                }
            }
        })
    };

    // The viewers of the round's live page.
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()?;
    let url = broadcast.url(&format!("/tournaments/{TOURNAMENT}/rounds/1/updates"));
    let mut viewers = Vec::new();
    for n in 0..=subscribers {
        let mut response = http.get(&url).send().await?;
        anyhow::ensure!(
            response.status().is_success(),
            "viewer {n}: {}",
            response.status()
        );
        let timed = n == 0;
        let (presses, to_viewer, board_of_game, round_start) = (
            presses.clone(),
            to_viewer.clone(),
            board_of_game.clone(),
            round_start_us.clone(),
        );
        viewers.push(tokio::spawn(async move {
            let mut shown = vec![0usize; presses.len()];
            let mut events = SseEvents::default();
            while let Ok(Some(chunk)) = response.chunk().await {
                if !timed {
                    continue;
                }
                let at = now_us();
                for event in events.events(&chunk) {
                    let Some(game) = support::MovesUpdate::read(&event) else {
                        continue;
                    };
                    let Some(&board) = board_of_game.get(game.game_id) else {
                        continue;
                    };
                    let whole = event.name == "game";
                    let Some(now_shown) = game.completed(whole, shown[board]) else {
                        continue;
                    };
                    if now_shown > shown[board] {
                        let start = round_start.load(std::sync::atomic::Ordering::Acquire);
                        time_plies(
                            &presses,
                            &to_viewer,
                            start,
                            board,
                            shown[board] + 1..now_shown + 1,
                            at,
                        );
                        shown[board] = now_shown;
                    }
                }
            }
        }));
    }
    eprintln!(
        "{} viewers on the round's live updates (1 timed)",
        subscribers + 1
    );

    // The machine's CPU, each second.
    let cpu_samples: Arc<Mutex<Vec<(u64, u64)>>> = Arc::default();
    let cpu_sampler = {
        let cpu_samples = cpu_samples.clone();
        tokio::spawn(async move {
            let mut every = tokio::time::interval(Duration::from_secs(1));
            loop {
                every.tick().await;
                if let Some(sample) = machine_cpu() {
                    cpu_samples
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(sample);
                }
            }
        })
    };

    let services_cpu_before = [&game_service.process, &broadcast.process]
        .map(|p| p.pid().and_then(support::cpu_seconds_of).unwrap_or(0.0));
    let start = tokio::time::Instant::now() + Duration::from_millis(200);
    let end = start + Duration::from_secs(seconds);
    round_start_us.store(now_us() + 200_000, std::sync::atomic::Ordering::Release);
    let mut players = tokio::task::JoinSet::new();
    for (i, plan) in plans.into_iter().enumerate() {
        players.spawn(play(js.clone(), i, plan, start, end, presses.clone()));
    }
    let mut published = 0;
    while let Some(done) = players.join_next().await {
        published += done.context("a board panicked")??;
    }
    // What is in flight arrives.
    tokio::time::sleep(Duration::from_secs(10)).await;
    let services_cpu = [&game_service.process, &broadcast.process]
        .map(|p| p.pid().and_then(support::cpu_seconds_of).unwrap_or(0.0));
    cpu_sampler.abort();
    log_reader.abort();
    for viewer in &viewers {
        viewer.abort();
    }

    let moves: usize = presses
        .iter()
        .map(|p| p.lock().unwrap_or_else(|e| e.into_inner()).len())
        .sum();
    eprintln!(
        "{boards} boards, {seconds} s from the round's start (clocks started over {} s), clocks \
         reporting every second: {published} observations ({:.0}/s), {moves} moves",
        start_spread_ms / 1000,
        published as f64 / seconds as f64
    );
    let per_minute = |samples: &Samples| {
        let mut minutes: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
        let mut all = Vec::new();
        for (pressed, latency) in samples.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            minutes
                .entry(pressed / 60_000_000)
                .or_default()
                .push(*latency);
            all.push(*latency);
        }
        for samples in minutes.values_mut() {
            samples.sort_unstable();
        }
        all.sort_unstable();
        (minutes, all)
    };
    let (log_minutes, log_all) = per_minute(&to_log);
    let (viewer_minutes, viewer_all) = per_minute(&to_viewer);
    let cpu = cpu_samples
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let busy_in_minute = |minute: usize| -> f64 {
        let window = cpu.iter().skip(minute * 60).take(61).collect::<Vec<_>>();
        match (window.first(), window.last()) {
            (Some((b0, t0)), Some((b1, t1))) if t1 > t0 => {
                100.0 * (b1 - b0) as f64 / (t1 - t0) as f64
            }
            _ => f64::NAN,
        }
    };
    let stats = |samples: &[i64]| {
        format!(
            "{:>6} {:>7.1} {:>7.1} {:>7.1} {:>7.1}",
            samples.len(),
            percentile(samples, 0.5),
            percentile(samples, 0.9),
            percentile(samples, 0.99),
            samples.last().map_or(f64::NAN, |v| *v as f64 / 1000.0)
        )
    };
    eprintln!(
        "minute | press → log: moves    p50     p90     p99     max (ms) | press → viewer: moves    p50     p90     p99     max (ms) | machine busy"
    );
    let empty = Vec::new();
    for minute in 0..seconds.div_ceil(60) as i64 {
        eprintln!(
            "{:>6} | {} | {} | {:.0}%",
            minute + 1,
            stats(log_minutes.get(&minute).unwrap_or(&empty)),
            stats(viewer_minutes.get(&minute).unwrap_or(&empty)),
            busy_in_minute(minute as usize)
        );
    }
    let overall_busy = match (cpu.first(), cpu.last()) {
        (Some((b0, t0)), Some((b1, t1))) if t1 > t0 => 100.0 * (b1 - b0) as f64 / (t1 - t0) as f64,
        _ => f64::NAN,
    };
    eprintln!(
        "   all | {} | {} | {overall_busy:.0}%",
        stats(&log_all),
        stats(&viewer_all)
    );
    let played = seconds as f64 + 10.0;
    for ((name, before), after) in ["game service", "broadcast service"]
        .iter()
        .zip(services_cpu_before)
        .zip(services_cpu)
    {
        eprintln!(
            "{name}: {:.1} CPU seconds ({:.0}% of a core)",
            after - before,
            100.0 * (after - before) / played
        );
    }
    anyhow::ensure!(!log_all.is_empty(), "no move reached the game log");
    anyhow::ensure!(!viewer_all.is_empty(), "no move reached a viewer");
    Ok(())
}

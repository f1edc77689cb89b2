//! The live hall at the scale of a large event: `BENCH_BOARDS` boards (1000) playing in one round
//! while `BENCH_SUBSCRIBERS` (2000) live subscribers follow the round's server-sent events and an
//! arbiter's dashboard follows the round's alerts and boards (the arbiter service's `/events`).
//! Measures p50, p99 and max from a press observation's publication to NATS to a subscriber
//! receiving the update that shows its move, to the arbiter's dashboard receiving the board that
//! shows it, and — on every `BENCH_ALERT_EVERY`th board (20th), whose player presses the clock
//! once without moving — to the dashboard receiving the alert; and each service's CPU seconds and
//! peak resident memory.
//!
//! Ignored in the normal suite; build the release programs and run it explicitly:
//! `cargo build --release --bins && cargo test -p boardcast-testkit --release --test
//! broadcast_bench -- --ignored --nocapture`. Settings: `BENCH_BOARDS`, `BENCH_SUBSCRIBERS`,
//! `BENCH_MOVE_EVERY` (seconds between a board's moves, 60), `BENCH_SECONDS` (how long the boards
//! play, 120), `BENCH_TICKS` (clock readings between a board's presses, sent
//! spread over the interval as a running clock sends them, 0; 59 with a move a minute is a
//! clock reporting every second), `BENCH_MEASURED` (subscribers
//! whose every update is timed, 100; the others read and discard), `BENCH_INSTANCES` (broadcast
//! instances sharing the subscribers in turn, as a load balancer would, 1). Also reports the
//! bytes each subscriber receives: the round sent whole on connecting, then per move.

mod support;

use std::{
    collections::BinaryHeap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicI64, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use anyhow::Context as _;
use async_nats::jetstream;
use boardcast_schema::device::v1::{ClockRun, observation::Kind};
use boardcast_schema::{device::v1::Observation, game::v1::CreateGameRequest};
use boardcast_testkit::{ArbiterService, BroadcastService, GameService, TEST_PASSWORD, TestNats};
use prost::Message as _;
use support::*;

/// The service's CPU seconds (user + system) and peak resident memory (MB), from /proc.
fn usage(pid: u32) -> anyhow::Result<(f64, f64)> {
    let cpu = support::cpu_seconds_of(pid).with_context(|| format!("no CPU time of {pid}"))?;
    let peak_kb =
        support::peak_resident_kb(pid).with_context(|| format!("no peak memory of {pid}"))?;
    Ok((cpu, peak_kb as f64 / 1024.0))
}

/// What the timing needs of an arbiter dashboard's events.
#[derive(serde::Deserialize)]
struct DashboardProbe {
    game_id: String,
    #[serde(default)]
    completed_plies: Option<usize>,
    /// An alert's id (absent from boards).
    #[serde(default)]
    id: Option<String>,
}

/// A press by the player who just moved, without a move: the press that follows `press` on the
/// clock with the other side running again, two seconds later.
fn press_without_move(press: &Observation, device_seq: u64) -> Observation {
    let mut extra = press.clone();
    extra.device_seq = device_seq;
    extra.device_time_unix_ms = press.device_time_unix_ms.saturating_add(2_000);
    if let Some(Kind::Clock(reading)) = &mut extra.kind {
        let back = match reading.running() {
            ClockRun::White => ClockRun::Black,
            _ => ClockRun::White,
        };
        reading.set_running(back);
    }
    extra
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "benchmark: run explicitly"]
async fn latency_to_live_subscribers() -> anyhow::Result<()> {
    let boards = setting("BENCH_BOARDS", 1000)? as usize;
    let subscribers = setting("BENCH_SUBSCRIBERS", 2000)? as usize;
    let move_every = Duration::from_secs(setting("BENCH_MOVE_EVERY", 60)?);
    let play_for = Duration::from_secs(setting("BENCH_SECONDS", 120)?);
    let ticks = setting("BENCH_TICKS", 0)? as usize;
    let measured = (setting("BENCH_MEASURED", 100)? as usize).min(subscribers);
    let instances = setting("BENCH_INSTANCES", 1)?.max(1) as usize;

    let base = baseline().await?;
    let by_board = with_clock_ticks(&base.observations, ticks)?;
    let nats = TestNats::start()?;
    let js = jetstream::new(async_nats::connect(nats.url()).await?);
    let game_service = GameService::start(&nats.url())?;
    let broadcasts = (0..instances)
        .map(|_| BroadcastService::start(&nats.url()))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let arbiter = ArbiterService::start(&nats.url(), &game_service.url())?;
    let alert_every = setting("BENCH_ALERT_EVERY", 20)?.max(1) as usize;
    let mut pids = vec![("game service".to_owned(), game_service.process.pid())];
    for (n, broadcast) in broadcasts.iter().enumerate() {
        pids.push((
            format!("broadcast service {}", n + 1),
            broadcast.process.pid(),
        ));
    }
    pids.push(("arbiter service".to_owned(), arbiter.process.pid()));
    let pids: Vec<(String, u32)> = pids
        .into_iter()
        .map(|(name, pid)| pid.map(|pid| (name, pid)).context("a service's pid"))
        .collect::<anyhow::Result<_>>()?;
    let mut client = boardcast_testkit::admin_client(&game_service.url()).await?;

    // The boards' games, all in one round, each board playing one of the reference games.
    // Per board, the observations of each move (subject, payload), ending with its press.
    // (observations, whether it is the press without a move that should raise an alert)
    let mut segments: Vec<Vec<(Published, bool)>> = Vec::new();
    let mut game_index = std::collections::HashMap::new();
    for i in 0..boards {
        let mut info = base.infos[i % base.infos.len()].clone();
        let original_board = info.board_id.clone();
        info.tournament_id = "bench".into();
        info.round = 1;
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
        game_index.insert(created.game_id, i);
        let mut board_segments = Vec::new();
        // An alert board's player presses once without moving after the first press (its alert
        // falls within the first two intervals of play, the shortest run): later
        // observations are numbered one on.
        let alert_board = i % alert_every == alert_every - 1;
        let mut shift = 0;
        let subject = format!("boardcast.board.{}.obs", info.board_id);
        for (index, segment) in by_board[&original_board].iter().enumerate() {
            let mut renamed = Vec::new();
            let mut last = None;
            for (_, payload) in segment {
                let mut observation = Observation::decode(payload.as_slice())?;
                observation.board_id = info.board_id.clone();
                observation.device_seq += shift;
                renamed.push((subject.clone(), observation.encode_to_vec()));
                last = Some(observation);
            }
            board_segments.push((renamed, false));
            if alert_board
                && index == 0
                && let Some(press) = last
            {
                let extra = press_without_move(&press, press.device_seq + 1);
                board_segments.push((vec![(subject.clone(), extra.encode_to_vec())], true));
                shift = 1;
            }
        }
        segments.push(board_segments);
    }
    let game_index = Arc::new(game_index);
    eprintln!("{boards} games set up");

    // The subscribers: SSE connections on the round.
    let last_sent: Arc<Vec<AtomicI64>> = Arc::new((0..boards).map(|_| AtomicI64::new(0)).collect());
    let latencies: Arc<Mutex<Vec<i64>>> = Arc::default();
    let received = Arc::new(AtomicU64::new(0));
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()?;
    let urls: Vec<String> = broadcasts
        .iter()
        .map(|b| b.url("/tournaments/bench/rounds/1/updates"))
        .collect();
    let mut readers = Vec::new();
    for n in 0..subscribers {
        let mut response = http.get(&urls[n % urls.len()]).send().await?;
        anyhow::ensure!(
            response.status().is_success(),
            "subscriber {n}: {}",
            response.status()
        );
        let (last_sent, latencies, received, game_index) = (
            last_sent.clone(),
            latencies.clone(),
            received.clone(),
            game_index.clone(),
        );
        readers.push(tokio::spawn(async move {
            let timed = n < measured;
            let mut seen = vec![0usize; last_sent.len()];
            let mut events = SseEvents::default();
            let mut mine = Vec::new();
            while let Ok(Some(chunk)) = response.chunk().await {
                received.fetch_add(chunk.len() as u64, Ordering::Relaxed);
                if !timed {
                    continue;
                }
                let at = now_us();
                for event in events.events(&chunk) {
                    let Some(probe) = support::MovesUpdate::read(&event) else {
                        continue;
                    };
                    let Some(&board) = game_index.get(probe.game_id) else {
                        continue;
                    };
                    let whole = event.name == "game";
                    let Some(completed) = probe.completed(whole, seen[board]) else {
                        continue;
                    };
                    if completed > seen[board] {
                        seen[board] = completed;
                        let sent = last_sent[board].load(Ordering::Acquire);
                        if sent > 0 {
                            mine.push(at - sent);
                        }
                    }
                }
                if !mine.is_empty() {
                    latencies
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .append(&mut mine);
                }
            }
        }));
    }
    eprintln!("{subscribers} subscribers connected ({measured} timed)");
    // Every subscriber is sent the round whole first: counted apart from the updates, once
    // nothing but keep-alive comments (a few bytes a connection every 15 s) still comes.
    let mut settled = received.load(Ordering::Relaxed);
    loop {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let now = received.load(Ordering::Relaxed);
        if now - settled < subscribers as u64 * 64 {
            settled = now;
            break;
        }
        settled = now;
    }
    let on_connecting = settled;

    // The arbiter's dashboard: the round's boards and alerts as they change.
    let alert_sent: Arc<Vec<AtomicI64>> =
        Arc::new((0..boards).map(|_| AtomicI64::new(0)).collect());
    let to_dashboard: Arc<Mutex<Vec<i64>>> = Arc::default();
    let to_alert: Arc<Mutex<Vec<i64>>> = Arc::default();
    let session = arbiter.login("admin", TEST_PASSWORD).await?;
    let mut dashboard = http
        .get(arbiter.url("/events?tournament=bench&round=1"))
        .header("cookie", session.cookie_header())
        .send()
        .await?;
    anyhow::ensure!(
        dashboard.status().is_success(),
        "the arbiter's events: {}",
        dashboard.status()
    );
    let dashboard_reader = {
        let (last_sent, alert_sent, to_dashboard, to_alert, game_index) = (
            last_sent.clone(),
            alert_sent.clone(),
            to_dashboard.clone(),
            to_alert.clone(),
            game_index.clone(),
        );
        tokio::spawn(async move {
            let mut plies = vec![0usize; last_sent.len()];
            let mut alerted = vec![false; last_sent.len()];
            let mut known_alerts = std::collections::HashSet::new();
            let mut events = SseEvents::default();
            while let Ok(Some(chunk)) = dashboard.chunk().await {
                let at = now_us();
                for data in events.data(&chunk) {
                    let Ok(probe) = serde_json::from_str::<DashboardProbe>(data.trim()) else {
                        continue;
                    };
                    let Some(&board) = game_index.get(probe.game_id.as_str()) else {
                        continue;
                    };
                    if let Some(id) = probe.id {
                        let sent = alert_sent[board].load(Ordering::Acquire);
                        if known_alerts.insert(id) && sent > 0 && !alerted[board] {
                            alerted[board] = true;
                            to_alert
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .push(at - sent);
                        }
                    } else if let Some(completed) = probe.completed_plies
                        && completed > plies[board]
                    {
                        plies[board] = completed;
                        let sent = last_sent[board].load(Ordering::Acquire);
                        if sent > 0 {
                            to_dashboard
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .push(at - sent);
                        }
                    }
                }
            }
        })
    };
    let cpu_before = pids
        .iter()
        .map(|(_, pid)| usage(*pid).map(|(cpu, _)| cpu))
        .collect::<anyhow::Result<Vec<_>>>()?;

    // The boards: each sends its next move's observations every `move_every`, boards spread
    // evenly over the interval.
    let started = Instant::now();
    let mut queue = BinaryHeap::new();
    for board in 0..boards {
        let offset = move_every.mul_f64(board as f64 / boards as f64);
        queue.push(std::cmp::Reverse((offset, board, 0usize, 0usize)));
    }
    let mut moves_sent = 0u64;
    let mut observations_sent = 0u64;
    let mut behind = Duration::ZERO;
    // `part` 0 is a move's observations up to its press; part k its k-th clock reading after the
    // press, spread over the interval as a running clock reports them.
    while let Some(std::cmp::Reverse((due, board, index, part))) = queue.pop() {
        if due > play_for {
            break;
        }
        let now = started.elapsed();
        if due > now {
            tokio::time::sleep(due - now).await;
        } else {
            behind = behind.max(now - due);
        }
        let Some((segment, raises_alert)) = segments[board].get(index) else {
            continue;
        };
        // Every segment but the alert press and the last ends with its press's readings.
        let readings = if *raises_alert || index + 1 == segments[board].len() {
            0
        } else {
            ticks.min(segment.len().saturating_sub(1))
        };
        let press = segment.len() - readings;
        let to_send = if part == 0 {
            &segment[..press]
        } else {
            &segment[press + part - 1..press + part]
        };
        let mut acks = Vec::new();
        for (i, (subject, payload)) in to_send.iter().enumerate() {
            if part == 0 && i + 1 == press {
                let sent = if *raises_alert {
                    &alert_sent
                } else {
                    &last_sent
                };
                sent[board].store(now_us(), Ordering::Release);
            }
            acks.push(js.publish(subject.clone(), payload.clone().into()).await?);
        }
        tokio::spawn(async move {
            for ack in acks {
                let _ = ack.await;
            }
        });
        observations_sent += to_send.len() as u64;
        if part == 0 {
            moves_sent += 1;
            for k in 1..=readings {
                let at = due + move_every.mul_f64(k as f64 / (readings + 1) as f64);
                queue.push(std::cmp::Reverse((at, board, index, k)));
            }
            queue.push(std::cmp::Reverse((due + move_every, board, index + 1, 0)));
        }
    }
    let played = started.elapsed();
    tokio::time::sleep(Duration::from_secs(10)).await;
    let after = pids
        .iter()
        .map(|(_, pid)| usage(*pid))
        .collect::<anyhow::Result<Vec<_>>>()?;
    for reader in &readers {
        reader.abort();
    }
    dashboard_reader.abort();
    let mut all = std::mem::take(&mut *latencies.lock().unwrap_or_else(|e| e.into_inner()));
    all.sort_unstable();
    let sorted = |samples: &Mutex<Vec<i64>>| {
        let mut samples = std::mem::take(&mut *samples.lock().unwrap_or_else(|e| e.into_inner()));
        samples.sort_unstable();
        samples
    };
    let (dashboard_samples, alert_samples) = (sorted(&to_dashboard), sorted(&to_alert));
    let total = received.load(Ordering::Relaxed);
    let megabytes = total as f64 / 1e6;
    let per_subscriber = |bytes: u64| bytes as f64 / subscribers.max(1) as f64;
    let whole_round = per_subscriber(on_connecting);
    let per_move = per_subscriber(total - on_connecting) / moves_sent.max(1) as f64;
    // A round of games of 80 plies: the round sent whole once, then every move.
    let plies_per_game = 80.0;
    let over_a_round = (whole_round + per_move * plies_per_game * boards as f64)
        / (plies_per_game * boards as f64);
    let line = |what: &str, samples: &[i64]| {
        eprintln!(
            "latency {what} (ms), {} samples: p50 {:.1}  p99 {:.1}  max {:.1}",
            samples.len(),
            percentile(samples, 0.5),
            percentile(samples, 0.99),
            samples.last().map_or(f64::NAN, |v| *v as f64 / 1000.0)
        )
    };
    eprintln!(
        "boards {boards}, subscribers {subscribers}, a move per board every {move_every:?}, \
         {moves_sent} moves sent in {played:.1?} ({:.1}/s), {observations_sent} observations \
         ({:.0}/s with {ticks} clock readings between presses; sender at most {behind:?} behind)",
        moves_sent as f64 / played.as_secs_f64(),
        observations_sent as f64 / played.as_secs_f64()
    );
    line(
        &format!("press → live subscriber, from {measured} subscribers"),
        &all,
    );
    line("press → arbiter's dashboard (board)", &dashboard_samples);
    line(
        &format!("press without a move → arbiter's dashboard (alert), every {alert_every}th board"),
        &alert_samples,
    );
    let seconds = played.as_secs_f64() + 10.0;
    for (((name, _), before), (cpu, peak_mb)) in pids.iter().zip(&cpu_before).zip(&after) {
        eprintln!(
            "{name}: {:.1} CPU seconds while playing ({:.0}% of a core), peak resident memory \
             {peak_mb:.0} MB",
            cpu - before,
            100.0 * (cpu - before) / seconds
        );
    }
    eprintln!("subscribers received {megabytes:.0} MB");
    eprintln!(
        "bytes per subscriber: the round whole on connecting {whole_round:.0} B, then \
         {per_move:.0} B per move; over a round of {plies_per_game:.0}-ply games, the round \
         whole included: {over_a_round:.0} B per move"
    );
    anyhow::ensure!(
        !alert_samples.is_empty(),
        "no alert reached the arbiter's dashboard"
    );
    anyhow::ensure!(!all.is_empty(), "no update reached a subscriber");
    Ok(())
}

//! Faults under load on a three-node NATS cluster with replicated (R3) streams and the hall's
//! accounts and users (every program as its own user, the readers and the board side through
//! their accounts' imports), on the pinned
//! nats-server (2.15.1, `sync_interval: always`; another with `scripts/fault-tests-on.sh`). While 100
//! simulated boards play, one fault after another: kill -9 the leader of the observation stream,
//! then of the game log; freeze a node (SIGSTOP) for longer than an election; cut a node off the
//! network (network namespaces; skipped, with a message, where they cannot be made); kill and restart a
//! game service instance (a second one keeps going), the broadcast service and the arbiter
//! service; kill a gateway while it publishes its outbox and start it again on the same outbox.
//!
//! Then: every observation JetStream acknowledged is in the stream (none lost), every game's log
//! is one chain recording each observation at most once (none applied twice), every game ends as
//! in a fault-free run of the same boards on one server, the gateway's game is its source game,
//! and the broadcast and arbiter services that lived through the faults show what ones started
//! afterwards show. Each fault's stall (the longest the game log went without a record, from the
//! fault to the next one, by the records' stored times) is printed and kept beside the build.

mod support;

use std::{
    collections::BTreeSet,
    process::Command,
    time::{Duration, Instant, SystemTime},
};

use anyhow::Context as _;
use async_nats::jetstream;
use boardcast_kit::{
    nats::{DEFAULT_PARTITIONS, GAMES_STREAM, ingest_stream, partition_of_board},
    nats_access::{GatewayBoards, NatsAccess, Role, SimulatorUser},
};
use boardcast_schema::game::v1::{GameResult, GameStarted, GameState, GetGameRequest};
use boardcast_testkit::{
    ArbiterService, BroadcastService, GameService, GameServiceOptions, ManagedProcess, NatsServer,
    TEST_PASSWORD, TestCluster, TestNats, free_port, program,
};

/// Boards playing through the faults.
const BOARDS: usize = 100;
/// Game time per wall-clock second: the six test games' lengths spread the boards' ends over
/// about a minute and a half, long enough for every fault to fall while boards play.
const SPEED: &str = "2";

/// One fault run at a time: two clusters and their loads side by side on a 2-core machine would
/// measure each other.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(flavor = "multi_thread")]
async fn faults_under_load_on_current_nats() -> anyhow::Result<()> {
    let _turn = ONE_AT_A_TIME.lock().await;
    // The pinned release, or the one BOARDCAST_NATS_SERVER names (scripts/fault-tests-on.sh).
    let server = match std::env::var_os("BOARDCAST_NATS_SERVER") {
        Some(_) => NatsServer::system()?,
        None => NatsServer::current()?,
    };
    faults_under_load(server).await
}

/// The six test games, cycled over `BOARDS` boards (each its own board number).
fn round_pgn() -> String {
    let games: Vec<&str> = support::PGN
        .trim()
        .split("\n\n[Event")
        .map(|g| g.trim_start_matches("[Event"))
        .collect();
    (0..BOARDS)
        .map(|i| {
            let game = games[i % games.len()];
            let round_line = game
                .lines()
                .find(|l| l.starts_with("[Round"))
                .unwrap_or_default();
            format!(
                "[Event{}\n\n",
                game.replacen(round_line, &format!("[Round \"1.{}\"]", i + 1), 1)
            )
        })
        .collect()
}

/// Every (board, device_seq) in the observation stream.
async fn stored_observations(js: &jetstream::Context) -> anyhow::Result<BTreeSet<(String, u64)>> {
    let mut stored = BTreeSet::new();
    for message in boardcast_testkit::every_observation(js).await? {
        let observation = <boardcast_schema::device::v1::Observation as prost::Message>::decode(
            message.payload.as_ref(),
        )?;
        stored.insert((observation.board_id, observation.device_seq));
    }
    Ok(stored)
}

/// What a fault-free run of the boards on one server gives: the games and the observations.
async fn fault_free(
    pgn: &std::path::Path,
) -> anyhow::Result<(Vec<GameState>, BTreeSet<(String, u64)>)> {
    let nats = TestNats::start()?;
    let service = GameService::start(&nats.url())?;
    let log = pgn.with_extension("fault-free.log");
    let status = simulate(pgn, &nats.url(), &service.url(), "max", &log)?
        .status()
        .context("simulating the fault-free run")?;
    anyhow::ensure!(
        status.success(),
        "simulate failed in the fault-free run:\n{}",
        said_at_the_end(&log)
    );
    let js = jetstream::new(async_nats::connect(nats.url()).await?);
    support::drained(&js).await?;
    let states = support::states(&service.url()).await?;
    anyhow::ensure!(states.len() == BOARDS, "{} games", states.len());
    Ok((states, stored_observations(&js).await?))
}

/// `boardcast simulate` of the round; what it says goes to `log`, to be shown if it fails.
fn simulate(
    pgn: &std::path::Path,
    nats: &str,
    game_service: &str,
    speed: &str,
    log: &std::path::Path,
) -> anyhow::Result<Command> {
    let mut command = Command::new(program("boardcast")?);
    command
        .env("BOARDCAST_TOKEN", boardcast_testkit::admin_token())
        .arg("simulate")
        .arg("--pgn")
        .arg(pgn)
        .args(["--boards", &BOARDS.to_string(), "--speed", speed])
        .args(["--nats", nats, "--game-service", game_service])
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?);
    Ok(command)
}

/// The last lines a program wrote to its log file.
fn said_at_the_end(log: &std::path::Path) -> String {
    let said = std::fs::read_to_string(log).unwrap_or_else(|e| format!("({}: {e})", log.display()));
    let lines: Vec<&str> = said.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}

/// When each record of the game log was stored (by the NATS server's clock, this machine's).
async fn record_times(js: &jetstream::Context) -> anyhow::Result<Vec<SystemTime>> {
    let mut times = Vec::new();
    for message in boardcast_testkit::every_message(js, GAMES_STREAM).await? {
        times.push(SystemTime::from(message.time));
    }
    times.sort();
    Ok(times)
}

/// The longest the game log went without a new record from `from` until `until`: how long a
/// fault made then stalled the boards (the boards play throughout, so records come many times a
/// second while nothing stalls).
fn stall(times: &[SystemTime], from: SystemTime, until: SystemTime) -> Duration {
    let mut last = from;
    let mut longest = Duration::ZERO;
    for &t in times.iter().filter(|t| **t > from && **t <= until) {
        longest = longest.max(t.duration_since(last).unwrap_or_default());
        last = t;
    }
    longest.max(until.duration_since(last).unwrap_or_default())
}

/// A fault, when it was made, and what it took to make it.
struct Fault {
    name: &'static str,
    at: SystemTime,
}

async fn faults_under_load(server: NatsServer) -> anyhow::Result<()> {
    let version = server.version()?;
    let dir = tempfile::tempdir()?;
    let pgn = dir.path().join("round.pgn");
    std::fs::write(&pgn, round_pgn())?;
    let (expected, expected_observations) = fault_free(&pgn).await.context("fault-free run")?;

    // The hall's accounts and users, as `boardcast nats-config` writes them: every program
    // connects as its own user, the readers through their accounts' imports.
    let access = NatsAccess::generate(
        &dir.path().join("nats-access"),
        &[GatewayBoards::new("gw", ["gw-1"])],
        SimulatorUser::Included,
    )?;
    // Each node in a network namespace of its own where the kernel allows, to cut one off.
    let (mut cluster, isolated) =
        match TestCluster::start_isolated_secured(3, &server, &access).await {
            Ok(cluster) => (cluster, true),
            Err(e) => {
                eprintln!("the network cut is skipped: no network namespaces here ({e:#})");
                (
                    TestCluster::start_on_secured(3, &server, &access).await?,
                    false,
                )
            }
        };
    let game_urls = cluster.url_for(&Role::GameService)?;
    let broadcast_urls = cluster.url_for(&Role::BroadcastService)?;
    let arbiter_urls = cluster.url_for(&Role::ArbiterService)?;
    let simulator_urls = cluster.url_for(&Role::Simulator)?;
    let gateway_urls = cluster.url_for(&Role::Gateway("gw".into()))?;
    let options = GameServiceOptions {
        args: vec!["--replicas".into(), "3".into()],
        ..Default::default()
    };
    let mut first = GameService::start_with(&game_urls, options.clone())?;
    let second = GameService::start_with(&game_urls, options.clone())?;
    let mut broadcast = BroadcastService::start(&broadcast_urls)?;
    let mut arbiter = ArbiterService::start(&arbiter_urls, &second.url())?;
    let js = jetstream::new(cluster.connect("fault-test").await?);

    // The gateway's board: a DGT capture of the fourth test game, with the simulator's human and
    // sensor disturbances (which raise alerts), set up before play starts.
    let gateway_dir = dir.path().join("gateway");
    std::fs::create_dir_all(&gateway_dir)?;
    let gateway_pgn = gateway_dir.join("game.pgn");
    let gateway_game = round_pgn()
        .split("\n\n[Event")
        .nth(3)
        .map(|g| format!("[Event{g}\n"))
        .context("a fourth game")?;
    std::fs::write(&gateway_pgn, &gateway_game)?;
    let out = Command::new(program("boardcast")?)
        .args(["simulate", "--pgn"])
        .arg(&gateway_pgn)
        .args(["--boards", "1", "--board-prefix", "gw"])
        .arg("--dgt-out")
        .arg(&gateway_dir)
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    create_gateway_game(&second.url()).await?;

    let simulator_log = dir.path().join("simulate.log");
    let mut simulator = simulate(&pgn, &simulator_urls, &second.url(), SPEED, &simulator_log)?
        .spawn()
        .context("starting the simulated boards")?;
    let play_started = Instant::now();
    let mut faults = Vec::new();
    tokio::time::sleep(Duration::from_secs(4)).await;

    // The readers restart first, so that the ones checked at the end have lived through every
    // NATS fault (the arbiter service folds the log afresh when it starts; the broadcast service
    // resumes from its state file).
    faults.push(Fault {
        name: "restart of the broadcast service",
        at: SystemTime::now(),
    });
    broadcast.restart()?;
    faults.push(Fault {
        name: "kill -9 and restart of the arbiter service",
        at: SystemTime::now(),
    });
    arbiter.process.kill_hard()?;
    arbiter = ArbiterService::start(&arbiter_urls, &second.url())?;
    tokio::time::sleep(Duration::from_secs(2)).await;

    // The observation stream of the first board's partition.
    let observations = ingest_stream(Some(partition_of_board("sim-1", DEFAULT_PARTITIONS)));
    for stream in [observations.as_str(), GAMES_STREAM] {
        let leader = cluster.stream_leader(&js, stream).await?;
        faults.push(Fault {
            name: if stream == observations {
                "kill -9 of the observation stream's leader"
            } else {
                "kill -9 of the game log's leader"
            },
            at: SystemTime::now(),
        });
        cluster.kill(leader)?;
        tokio::time::sleep(Duration::from_secs(2)).await;
        cluster.restart(leader).await?;
        tokio::time::sleep(Duration::from_secs(3)).await;
    }

    // Longer than an election (at most 9 s on these servers' Raft).
    let leader = cluster.stream_leader(&js, GAMES_STREAM).await?;
    faults.push(Fault {
        name: "SIGSTOP of the game log's leader for 10 s",
        at: SystemTime::now(),
    });
    cluster.pause(leader)?;
    tokio::time::sleep(Duration::from_secs(10)).await;
    cluster.resume(leader)?;
    tokio::time::sleep(Duration::from_secs(3)).await;

    if isolated {
        let leader = cluster.stream_leader(&js, GAMES_STREAM).await?;
        faults.push(Fault {
            name: "the game log's leader cut off the network for 10 s",
            at: SystemTime::now(),
        });
        cluster.cut(leader)?;
        tokio::time::sleep(Duration::from_secs(10)).await;
        cluster.heal(leader)?;
        tokio::time::sleep(Duration::from_secs(3)).await;
    }

    faults.push(Fault {
        name: "kill -9 and restart of a game service instance",
        at: SystemTime::now(),
    });
    first.process.kill_hard()?;
    first = GameService::start_with(&game_urls, options.clone())?;
    tokio::time::sleep(Duration::from_secs(2)).await;

    // The gateway: killed once part of its outbox is in JetStream, then started again on the
    // same outbox (with no board attached yet), which publishes the rest.
    faults.push(Fault {
        name: "kill -9 of a gateway while it publishes",
        at: SystemTime::now(),
    });
    let outbox = gateway_dir.join("outbox.redb");
    let mut gateway = ManagedProcess::spawn(
        "gateway replay-dgt",
        Command::new(program("boardcast")?)
            .args(["gateway", "replay-dgt"])
            .arg(gateway_dir.join("gw-1.dgt"))
            .args(["--board-id", "gw-1", "--nats", &gateway_urls, "--outbox"])
            .arg(&outbox),
    )?;
    let deadline = Instant::now() + Duration::from_secs(60);
    while boardcast_kit::nats::last_board_seq(&js, "gw-1", boardcast_kit::nats::BoardRead::Leader)
        .await
        .unwrap_or(0)
        == 0
    {
        anyhow::ensure!(Instant::now() < deadline, "the gateway published nothing");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    gateway.kill_hard()?;
    let published_before_the_kill =
        boardcast_kit::nats::last_board_seq(&js, "gw-1", boardcast_kit::nats::BoardRead::Leader)
            .await?;
    let metrics = std::net::SocketAddr::from(([127, 0, 0, 1], free_port()?));
    let mut restarted_gateway = ManagedProcess::spawn(
        "gateway serial",
        Command::new(program("boardcast")?)
            .args(["gateway", "serial", "--port", "/dev/no-such-board"])
            .args(["--board-id", "gw-1", "--nats", &gateway_urls, "--outbox"])
            .arg(&outbox)
            .args(["--metrics-listen", &metrics.to_string()])
            .stderr(std::fs::File::create(
                dir.path().join("gateway-serial.log"),
            )?),
    )?;

    anyhow::ensure!(
        simulator.wait()?.success(),
        "the simulated boards could not publish everything:\n{}",
        said_at_the_end(&simulator_log)
    );
    let played = play_started.elapsed();
    let play_ended = SystemTime::now();
    if let Err(e) = support::drained_within(&js, Duration::from_secs(180)).await {
        let mut streams: Vec<String> = boardcast_kit::nats::observation_partitions(&js)
            .await
            .unwrap_or_default()
            .into_iter()
            .map(ingest_stream)
            .collect();
        streams.push(GAMES_STREAM.to_owned());
        let streams: Vec<&str> = streams.iter().map(String::as_str).collect();
        eprintln!("{}", cluster.diagnosis(&js, &streams).await);
        return Err(e);
    }
    let forks = support::forks(&js).await?;
    assert!(forks.is_empty(), "game logs fork:\n{}", forks.join("\n"));
    let gateway_state = gateway_game_done(&first.url()).await?;
    restarted_gateway.kill_hard()?;
    // What the gateway said at start (the journal, under systemd) names the server, not the
    // password.
    let said = std::fs::read_to_string(dir.path().join("gateway-serial.log"))?;
    let password = &access
        .user(&Role::Gateway("gw".into()))
        .context("the gateway's user")?
        .password;
    assert!(said.contains("gateway-gw:***@"), "{said}");
    assert!(!said.contains(password.as_str()), "the password in: {said}");

    // No acknowledged observation lost: the simulator published each until acknowledged. Read
    // from each stream's leader; one that lacks records the stream's replicas keep (seen on
    // nats-server 2.9 after a node was killed, each replica lacking different ones) answers
    // without them, so a read that misses any is made again from other leaders, and what any
    // of them holds counts as kept.
    let (mut stored, mut simulated) = (BTreeSet::new(), BTreeSet::new());
    for attempt in 1..=4 {
        stored.extend(stored_observations(&js).await?);
        simulated = stored
            .iter()
            .filter(|(board, _)| board.starts_with("sim-"))
            .cloned()
            .collect();
        let missing: Vec<_> = expected_observations.difference(&simulated).collect();
        if missing.is_empty() || attempt == 4 {
            break;
        }
        eprintln!(
            "observations not read from the streams' leaders (read {attempt}): {missing:?}; \
             reading again from other leaders"
        );
        for partition in boardcast_kit::nats::observation_partitions(&js).await? {
            let stream = ingest_stream(partition);
            if let Err(e) = boardcast_kit::nats::step_down_stream_leader(&js, &stream).await {
                eprintln!("{e:#}");
            }
        }
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
    assert_eq!(
        simulated, expected_observations,
        "the observation stream holds exactly the boards' observations"
    );

    // Every game as in the fault-free run, on both instances, and its log one chain recording
    // each observation once.
    let states = boards_reaching(&first.url(), &expected).await?;
    if support::comparable(&states) != support::comparable(&expected) {
        eprintln!("{}", differences(&js, &states, &expected).await);
    }
    assert_eq!(support::comparable(&states), support::comparable(&expected));
    let other = boards_reaching(&second.url(), &expected).await?;
    assert_eq!(other, states, "both instances serve the same games");
    support::check_logs(&js, &states).await?;
    support::check_logs(&js, std::slice::from_ref(&gateway_state)).await?;

    // The feeds and alerts of the services that lived through the faults are those of services
    // that read the log afresh.
    let fresh_broadcast = BroadcastService::start(&broadcast_urls)?;
    let fresh_arbiter = ArbiterService::start(&arbiter_urls, &second.url())?;
    converged(&broadcast, &fresh_broadcast).await?;
    alerts_converged(&arbiter, &fresh_arbiter).await?;

    // The stalls, printed and kept beside the build (a passing test's output is not shown).
    let mut report = format!(
        "nats-server {version}, 3 nodes, R3: {BOARDS} boards played for {:.0} s with {} \
         observations; the gateway had published {published_before_the_kill} when killed\n",
        played.as_secs_f64(),
        stored.len()
    );
    let times = record_times(&js).await?;
    for (i, fault) in faults.iter().enumerate() {
        let until = faults.get(i + 1).map_or(play_ended, |next| next.at);
        report += &format!(
            "  {}: the longest the game log went without a record from it on: {:.2} s\n",
            fault.name,
            stall(&times, fault.at, until).as_secs_f64()
        );
    }
    if !isolated {
        report += "  (the network cut was skipped: no network namespaces here)\n";
    }
    eprint!("{report}");
    let kept = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("fault-stalls-nats-{version}.txt"));
    std::fs::write(&kept, &report).with_context(|| format!("writing {}", kept.display()))?;
    Ok(())
}

/// For each game unlike the fault-free run's: its board's observations as stored (device
/// sequence, stream sequence, when) and the kinds of its log's records, to tell a fault's
/// effect from a decision gone wrong.
async fn differences(
    js: &jetstream::Context,
    states: &[GameState],
    expected: &[GameState],
) -> String {
    let mut out = String::new();
    let observations = match boardcast_testkit::every_observation(js).await {
        Ok(observations) => observations,
        Err(e) => return format!("cannot read the observations: {e:#}"),
    };
    for state in support::comparable(states) {
        let same = expected
            .iter()
            .any(|e| support::comparable(std::slice::from_ref(e))[0] == state);
        let Some(board) = state.info.as_ref().map(|i| i.board_id.clone()) else {
            continue;
        };
        if same {
            continue;
        }
        out += &format!(
            "game {} on board {board} differs; its observations:\n",
            state.game_id
        );
        for message in &observations {
            let Ok(observation) =
                <boardcast_schema::device::v1::Observation as prost::Message>::decode(
                    message.payload.as_ref(),
                )
            else {
                continue;
            };
            if observation.board_id == board {
                out += &format!(
                    "  device_seq {} at stream {} {} stored {:?}\n",
                    observation.device_seq, message.subject, message.sequence, message.time
                );
            }
        }
        match support::fold_log(js, &state.game_id).await {
            Ok(game) => {
                out += &format!(
                    "  missing observations: {:?}\n",
                    game.to_state().missing_observations
                )
            }
            Err(e) => out += &format!("  its log does not fold: {e:#}\n"),
        }
    }
    out
}

/// The simulated boards' games (not the gateway's) once they equal `expected`, or as they are
/// after 30 s.
async fn boards_reaching(url: &str, expected: &[GameState]) -> anyhow::Result<Vec<GameState>> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let boards: Vec<GameState> = support::states(url)
            .await?
            .into_iter()
            .filter(|s| {
                s.info
                    .as_ref()
                    .is_some_and(|i| i.board_id.starts_with("sim-"))
            })
            .collect();
        if support::comparable(&boards) == support::comparable(expected)
            || Instant::now() > deadline
        {
            return Ok(boards);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn create_gateway_game(url: &str) -> anyhow::Result<()> {
    let mut client = boardcast_testkit::admin_client(url).await?;
    client
        .create_game(boardcast_testkit::create_request(GameStarted {
            time_control: boardcast_testkit::two_hours(),
            ..boardcast_testkit::game_on_board("faults-gateway", 1, "gw-1")
        }))
        .await?;
    Ok(())
}

/// The gateway's game once it has ended, checked against its source game.
async fn gateway_game_done(url: &str) -> anyhow::Result<GameState> {
    let mut client = boardcast_testkit::admin_client(url).await?;
    let deadline = Instant::now() + Duration::from_secs(120);
    let state = loop {
        let state = client
            .get_game(GetGameRequest {
                game_id: "faults-gateway-r1-b1".into(),
            })
            .await?
            .into_inner();
        if state.result() != GameResult::Unspecified {
            break state;
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "the gateway's game did not end: {} moves",
            state.moves.len()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let source = boardcast_rules::pgn::read_games(support::PGN)?;
    let moves: Vec<String> = state.moves.iter().map(|m| m.uci.clone()).collect();
    assert_eq!(moves, support::uci_moves(&source[3])?, "the gateway's game");
    Ok(state)
}

/// Both broadcast services serve the same games, versions included (they are the log's), once
/// the fresh one has caught up.
async fn converged(lived: &BroadcastService, fresh: &BroadcastService) -> anyhow::Result<()> {
    let http = reqwest::Client::new();
    let games = |service: &BroadcastService| {
        let request = http.get(service.url("/api/games")).send();
        async move {
            let games: Vec<serde_json::Value> = request.await?.json().await?;
            anyhow::Ok(games)
        }
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (a, b) = (games(lived).await?, games(fresh).await?);
        if a == b {
            return Ok(());
        }
        if Instant::now() > deadline {
            let differing: Vec<_> = a
                .iter()
                .zip(&b)
                .filter(|(x, y)| x != y)
                .map(|(x, y)| format!("{x}\n{y}"))
                .take(2)
                .collect();
            anyhow::bail!(
                "the broadcast service that lived through the faults differs from a fresh one \
                 ({} and {} games), e.g.:\n{}",
                a.len(),
                b.len(),
                differing.join("\n")
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Both arbiter services show the same alerts (once the fresh one has caught up).
async fn alerts_converged(lived: &ArbiterService, fresh: &ArbiterService) -> anyhow::Result<()> {
    let lived = lived.login("admin", TEST_PASSWORD).await?;
    let fresh = fresh.login("admin", TEST_PASSWORD).await?;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let a = lived.get("/api/alerts").await?;
        let b = fresh.get("/api/alerts").await?;
        if a == b {
            let count = a["alerts"].as_array().map_or(0, Vec::len);
            eprintln!("  the arbiters' alerts converged ({count})");
            return Ok(());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "the arbiter service that lived through the faults differs from a fresh one:\n{a}\n{b}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

//! `boardcast demo`: the whole system on one machine.

use std::{
    fs::File,
    net::SocketAddr,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::Duration,
};

use anyhow::{Context as _, bail};
use boardcast_kit::local::{LocalNats, ManagedProcess, wait_for_port};
use boardcast_kit::nats_access::{NatsAccess, Role as NatsRole, SimulatorUser};

use crate::simulate::{self, SimulateArgs, Speed};

#[derive(clap::Args, Debug)]
pub struct DemoArgs {
    /// PGN file with the games to play.
    #[arg(long, default_value = "data/london-classic-2016.pgn")]
    pgn: PathBuf,
    /// Number of simulated boards; board N plays the file's N-th game.
    #[arg(long, default_value_t = 5)]
    boards: usize,
    /// 1 = real time, 60 = a minute of play per second, "max" = as fast as possible.
    #[arg(long, default_value = "60")]
    speed: Speed,
    /// Number each round's boards 1, 2, … in the file's order instead of by the `Round "r.b"`
    /// tags: for a file that merges broadcast groups whose round and board numbers repeat.
    #[arg(long)]
    boards_in_file_order: bool,
    /// Incidents played into the games so that the arbiters' dashboard has something to show
    /// (as `boardcast simulate --incidents`): by default a press without a move (an illegal
    /// move), a piece misplaced and moved on (an irregular placement and a touch-move breach),
    /// a board that stops answering, a low battery, a flag fall and a threefold repetition
    /// claimed (left for the arbiter to rule on), in the first minutes.
    #[arg(long = "incidents", value_name = "SPEC", value_delimiter = ',',
          default_value = DEMO_INCIDENTS)]
    incidents: Vec<simulate::BoardIncident>,
    /// Play the games cleanly, without incidents.
    #[arg(long, conflicts_with = "incidents")]
    no_incidents: bool,
    /// Directory for the demo's NATS data and logs; emptied at start.
    #[arg(long, default_value = "var/demo")]
    data_dir: PathBuf,
    /// Port of the demo's own NATS (not 4222, so a NATS already running there is left alone).
    #[arg(long, default_value_t = 4322)]
    nats_port: u16,
    /// Port of the game service's gRPC API.
    #[arg(long, default_value_t = 50151)]
    grpc_port: u16,
    /// Port of the broadcast service's web pages and PGN feeds.
    #[arg(long, default_value_t = 8088)]
    http_port: u16,
    /// Port of the arbiter service's dashboard.
    #[arg(long, default_value_t = 8090)]
    arbiter_port: u16,
}

/// The services are built next to this binary.
fn sibling_binary(name: &str) -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe().context("locating the boardcast binary")?;
    let path = exe.with_file_name(name);
    if !path.is_file() {
        bail!(
            "{} not found next to {}; build all programs first with `cargo build --bins`",
            name,
            exe.display()
        );
    }
    Ok(path)
}

fn log_file(dir: &Path, name: &str) -> anyhow::Result<Stdio> {
    let path = dir.join(name);
    Ok(File::create(&path)
        .with_context(|| format!("creating {}", path.display()))?
        .into())
}

/// The demo's chief arbiter (login name).
const DEMO_CHIEF: &str = "chief";

/// The demo's users: a chief arbiter with a fresh password, and an operator whose token the
/// simulated boards' set-up uses.
struct DemoAccess {
    users_file: PathBuf,
    session_key: PathBuf,
    chief_password: String,
    simulator_token: String,
}

fn demo_users(data_dir: &Path) -> anyhow::Result<DemoAccess> {
    use boardcast_access::{Directory, EVERY_TOURNAMENT, Grant, Role};
    let mut directory = Directory::new();
    let mut rng = rand::rng();
    let chief_password = crate::users::generate_password();
    directory.add_user(DEMO_CHIEF, "Chief Arbiter (demo)")?;
    directory.set_password(
        DEMO_CHIEF,
        &chief_password,
        &mut rng,
        boardcast_kit::now_unix_ms(),
    )?;
    directory.grant(
        DEMO_CHIEF,
        Grant {
            tournament: EVERY_TOURNAMENT.to_owned(),
            role: Role::ChiefArbiter,
            boards: Vec::new(),
        },
    )?;
    directory.add_user("simulator", "Simulated boards' set-up")?;
    directory.grant(
        "simulator",
        Grant {
            tournament: EVERY_TOURNAMENT.to_owned(),
            role: Role::Operator,
            boards: Vec::new(),
        },
    )?;
    let simulator_token = directory.new_token(
        "simulator",
        "demo",
        // As long as a demo runs.
        boardcast_kit::now_unix_ms().saturating_add(30 * 24 * 3600 * 1000),
        &mut rng,
        boardcast_kit::now_unix_ms(),
    )?;
    let users_file = data_dir.join("users.json");
    let session_key = data_dir.join("session.key");
    boardcast_kit::secrets::write_users(&users_file, &directory)?;
    boardcast_kit::secrets::session_key(&session_key)?;
    Ok(DemoAccess {
        users_file,
        session_key,
        chief_password,
        simulator_token,
    })
}

/// What the demo plays into its games by default, on its first boards: each raises alerts of
/// its own kind on the arbiters' dashboard within the first minutes at the demo's speed.
pub const DEMO_INCIDENTS: &str = "board=1:press-without-move@ply=5,\
board=2:touched-piece@ply=5,board=2:irregular-placement@ply=9:for=15s,\
board=3:offline@ply=6:for=1200s,\
board=4:battery-low@ply=4:percent=10,board=4:flag-fall@ply=12,board=5:threefold-claim@ply=10";

/// The simulation the demo plays: its boards, speed and incidents.
fn simulate_args(args: &DemoArgs) -> SimulateArgs {
    SimulateArgs {
        pgn: args.pgn.clone(),
        boards: args.boards,
        speed: args.speed,
        nats: String::new(),
        game_service: String::new(),
        token_file: None,
        board_prefix: "demo".to_owned(),
        tournament: None,
        time_control: "40/7200:3600+30".to_owned(),
        edition: "fide-2023".to_owned(),
        white_clock: simulate::SimClockSide::Left,
        clock_turned_at_move: None,
        clock_reports_every: 0,
        boards_in_file_order: args.boards_in_file_order,
        dgt: simulate::DgtOutArgs {
            incidents: simulate::IncidentArgs {
                specs: if args.no_incidents {
                    Vec::new()
                } else {
                    // Only on boards the demo plays.
                    args.incidents
                        .iter()
                        .filter(|i| i.board <= args.boards)
                        .cloned()
                        .collect()
                },
                ..Default::default()
            },
            ..Default::default()
        },
    }
}

pub async fn run(args: DemoArgs) -> anyhow::Result<()> {
    let plan_args = simulate_args(&args);
    // Check the games before starting anything.
    let simulate::Plan {
        boards: plans,
        notices,
    } = simulate::plan(&plan_args)?;
    for notice in &notices {
        eprintln!("{notice}");
    }
    let game_service_bin = sibling_binary("boardcast-game-service")?;
    let broadcast_bin = sibling_binary("boardcast-broadcast-service")?;
    let arbiter_bin = sibling_binary("boardcast-arbiter-service")?;

    if args.data_dir.exists() {
        std::fs::remove_dir_all(&args.data_dir)
            .with_context(|| format!("emptying {}", args.data_dir.display()))?;
    }
    let logs = args.data_dir.join("logs");
    std::fs::create_dir_all(&logs).with_context(|| format!("creating {}", logs.display()))?;

    let access = demo_users(&args.data_dir)?;
    // The game service signs every record; the readers trust its public key only.
    let signing_key = args.data_dir.join("signing.key");
    let trusted_keys = args.data_dir.join("trusted-keys");
    let signer = boardcast_kit::signing::create_signing_key(&signing_key, &trusted_keys)?;
    // NATS with users and permissions, as at an event: each program connects as its own user.
    let nats_access = NatsAccess::generate(
        &args.data_dir.join("nats-access"),
        &[],
        SimulatorUser::Included,
    )?;

    println!("starting NATS with JetStream on port {} …", args.nats_port);
    let nats = tokio::task::block_in_place(|| {
        LocalNats::start_with_config(
            &args.data_dir.join("nats"),
            args.nats_port,
            log_file(&logs, "nats.log")?,
            Some(&nats_access.auth_config_path()),
        )
    })
    .context("starting NATS (is the port free? see --nats-port)")?;
    let nats_url = nats.url();
    // Passed in the environment, not on the command line, so the passwords stay out of `ps`.
    let url_for = |role: NatsRole| nats_access.url_for(&role, &nats_url);
    let grpc_addr = SocketAddr::from(([127, 0, 0, 1], args.grpc_port));
    let http_addr = SocketAddr::from(([127, 0, 0, 1], args.http_port));
    let arbiter_addr = SocketAddr::from(([127, 0, 0, 1], args.arbiter_port));

    println!("starting the game service on {grpc_addr} and the broadcast service on {http_addr} …");
    let mut game_service = ManagedProcess::spawn(
        "boardcast-game-service",
        Command::new(&game_service_bin)
            .env("BOARDCAST_NATS_URL", url_for(NatsRole::GameService)?)
            .args(["--grpc-listen", &grpc_addr.to_string()])
            .arg("--users")
            .arg(&access.users_file)
            .arg("--session-key")
            .arg(&access.session_key)
            .arg("--signing-key")
            .arg(&signing_key)
            .arg("--snapshot")
            .arg(args.data_dir.join("game-service/snapshot.redb"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file(&logs, "game-service.log")?),
    )?;
    let mut broadcast = ManagedProcess::spawn(
        "boardcast-broadcast-service",
        Command::new(&broadcast_bin)
            .env("BOARDCAST_NATS_URL", url_for(NatsRole::BroadcastService)?)
            .args(["--http-listen", &http_addr.to_string()])
            .arg("--state")
            .arg(args.data_dir.join("broadcast-service/state.redb"))
            .arg("--trusted-keys")
            .arg(&trusted_keys)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file(&logs, "broadcast-service.log")?),
    )?;
    let mut arbiter = ManagedProcess::spawn(
        "boardcast-arbiter-service",
        Command::new(&arbiter_bin)
            .env("BOARDCAST_NATS_URL", url_for(NatsRole::ArbiterService)?)
            .args(["--http-listen", &arbiter_addr.to_string()])
            .args(["--game-service", &format!("http://{grpc_addr}")])
            .arg("--trusted-keys")
            .arg(&trusted_keys)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file(&logs, "arbiter-service.log")?),
    )?;
    tokio::task::block_in_place(|| {
        wait_for_port(&mut game_service, grpc_addr, Duration::from_secs(30))?;
        wait_for_port(&mut broadcast, http_addr, Duration::from_secs(30))?;
        wait_for_port(&mut arbiter, arbiter_addr, Duration::from_secs(30))
    })
    .with_context(|| format!("starting the services (logs in {})", logs.display()))?;

    simulate::create_games(
        &format!("http://{grpc_addr}"),
        Some(&access.simulator_token),
        &plans,
    )
    .await?;

    let base = format!("http://{http_addr}");
    println!();
    println!("boardcast is running. Open:");
    println!("  index            {base}/");
    let mut rounds: Vec<(String, u32)> = plans
        .iter()
        .map(|p| (p.started.tournament_id.clone(), p.started.round))
        .collect();
    rounds.dedup();
    for (tournament, round) in &rounds {
        let r = format!("{base}/tournaments/{tournament}/rounds/{round}");
        println!("  live, round {round:<3}  {r}/live");
        println!("  board 1 (big)    {r}/boards/1   hall mode {r}/hall?every=15");
        println!("  PGN,  round {round:<3}  {r}.pgn");
    }
    println!("  arbiters         http://{arbiter_addr}/");
    println!(
        "  gRPC             {grpc_addr}   NATS {nats_url} (users and passwords: {})",
        nats_access.credentials_path().display()
    );
    println!(
        "  log in as        {} / {}   (chief arbiter of every tournament; users: {})",
        DEMO_CHIEF,
        access.chief_password,
        access.users_file.display()
    );
    println!(
        "  records signed   key {} fingerprint {} (trusted keys: {})",
        signer.public_key().key_id(),
        signer.public_key().fingerprint(),
        trusted_keys.display()
    );
    println!("  logs             {}", logs.display());
    let record = simulate::incident_record(&plans);
    for board in record.boards.iter().filter(|b| !b.incidents.is_empty()) {
        for incident in &board.incidents {
            let alerts: Vec<&str> = incident.expected_alerts.iter().map(|a| a.kind).collect();
            println!(
                "  incident         {}: {} -> alerts {}",
                board.board_id,
                incident.incident,
                alerts.join(", ")
            );
        }
    }
    println!();
    println!(
        "{} boards are playing at {} speed. Press Ctrl-C to stop.",
        plans.len(),
        match args.speed {
            Speed::Max => "maximum".to_owned(),
            Speed::Factor(f) => format!("{f}x"),
        }
    );

    let client =
        boardcast_kit::nats::connect(&url_for(NatsRole::Simulator)?, "boardcast-demo").await?;
    let js = async_nats::jetstream::new(client);
    let play = simulate::play(&js, &plans, args.speed, simulate::Progress::Quiet);
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        result = play => {
            result?;
            println!("All games have been played; the pages stay up. Press Ctrl-C to stop.");
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = terminate.recv() => {}
            }
        }
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate.recv() => {}
    }
    println!("\nstopping …");
    drop(arbiter);
    drop(broadcast);
    drop(game_service);
    drop(nats);
    println!("stopped.");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_demos_incidents_are_planned_on_its_games() {
        use clap::Parser as _;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            args: DemoArgs,
        }
        let pgn = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../data/london-classic-2016.pgn"
        );
        let args = Cli::try_parse_from(["demo", "--pgn", pgn])
            .expect("defaults parse")
            .args;
        assert_eq!(args.incidents.len(), 7);
        let plan_args = simulate_args(&args);
        let plan = simulate::plan(&plan_args).expect("plans");
        let kinds: Vec<&str> = simulate::incident_record(&plan.boards)
            .boards
            .iter()
            .flat_map(|b| b.incidents.iter())
            .flat_map(|i| i.expected_alerts.iter().map(|a| a.kind))
            .collect();
        for kind in [
            "illegal_move",
            "touch_move",
            "irregular_placement",
            "board_not_responding",
            "battery_low",
            "flag_fall",
            "threefold_available",
        ] {
            assert!(kinds.contains(&kind), "{kind}: {kinds:?}");
        }
    }
}

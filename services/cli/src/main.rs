//! `boardcast`, the operator's command-line tool.

mod analyze;
mod appeal;
mod boards;
mod dead_letters;
mod delay;
mod demo;
mod fork;
mod game_service;
mod gateway;
mod keys;
mod lichess_text;
mod nats_config;
mod pair;
mod results;
mod simulate;
mod tls_certs;
mod users;

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "boardcast",
    version,
    about = "Live broadcasting of over-the-board chess tournaments",
    long_about = "Live broadcasting of over-the-board chess tournaments.\n\n\
The services run as separate programs (boardcast-game-service, boardcast-broadcast-service, \
boardcast-arbiter-service); \
this tool runs the whole system on one machine for a demonstration, feeds simulated boards \
into a running system, runs the board gateway, and analyses games under the Laws of Chess.",
    after_help = "In a hall whose NATS and game service speak TLS with the hall's own authority \
(boardcast tls-certs), every command that reaches them needs its ca.pem: BOARDCAST_NATS_CA for \
NATS (tls:// URLs), BOARDCAST_GAME_SERVICE_CA for the game service (https:// URLs)."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the whole system on this machine: a private NATS, the services and simulated boards
    /// playing real games; prints the URLs to open. Ctrl-C stops everything.
    Demo(demo::DemoArgs),
    /// Play the games of a PGN file on simulated boards, publishing their observations to NATS.
    Simulate(simulate::SimulateArgs),
    /// Analyse games under the Laws of Chess of an edition: every ply where a threefold or
    /// fifty-move claim became available, automatic draws, dead positions, the final status.
    Analyze(analyze::AnalyzeArgs),
    /// The board gateway: read DGT boards on serial ports or a LiveChess installation, or replay
    /// a DGT capture file; observations go through a durable outbox to NATS.
    #[command(subcommand_required = true)]
    Gateway(gateway::GatewayArgs),
    /// Manage users, their roles per tournament, passwords and API tokens (the users file the
    /// game service reads).
    Users(users::UsersArgs),
    /// Generate the NATS accounts, users and permissions of a deployment (a gateway publishes
    /// only its own boards; only the game service writes game logs, readers only read, each from
    /// an account of its own; only the admin deletes streams), or print a role's connection URL.
    NatsConfig(nats_config::NatsConfigArgs),
    /// Make the hall's private certificate authority and a TLS certificate for each host
    /// (NATS clients and routes, gRPC, the dashboard).
    TlsCerts(tls_certs::TlsCertsArgs),
    /// Set the broadcast delay of a tournament or round (an operator's or chief arbiter's
    /// token; lowering the delay in force is the chief arbiter's): every broadcast service holds
    /// moves, clocks and results back that long.
    Delay(delay::DelayArgs),
    /// The game service's signing key: create one, show its public key and fingerprint, or
    /// ask a running game service for its keys.
    Keys(keys::KeysArgs),
    /// Set a round up from the Tournament Report File (TRF16 or TRF-26) the pairing program
    /// exported: players, pairings with colours, byes and forfeits, each table on a physical
    /// board (an operator's or chief arbiter's token); `--dry-run` prints the round as JSON
    /// without a running system.
    Pair(pair::PairArgs),
    /// The hall's boards at a glance, for the check before a round: each board's game,
    /// connection, battery and set-up to correct, and the boards played on while no game takes
    /// their moves (a round not set up on them, a board paired under another id; those with no
    /// game at all for an operator's or chief arbiter's token).
    Boards(boards::BoardsArgs),
    /// Write the rounds' results from the game logs into the pairing program's Tournament
    /// Report File (the one the rounds were set up from), points summed again, so that it
    /// pairs the next round from it; a game without a result is left blank and reported (a
    /// token of anyone who may read the tournament).
    Results(results::ResultsArgs),
    /// Print a Tournament Report File's players or teams as lichess's broadcast settings take
    /// them, to paste there.
    LichessText(lichess_text::LichessTextArgs),
    /// Write games of the live log — a game, a round or a tournament — to one file for an
    /// appeal: the records exactly as stored, the boards' observations, the signing keys.
    Export(appeal::ExportArgs),
    /// Replay games from an exported file (or the live log): the timeline, the moment at a
    /// record or time, claims judged then, verification, PGN, JSON or one HTML page.
    Replay(appeal::ReplayArgs),
    /// A game whose log does not follow on: show why; when it forks (two records with one
    /// number) keep one branch and remove the others' records, when records are missing cut it
    /// after the last that follows on (what is removed is saved to a file first).
    Fork(fork::ForkArgs),
    /// The observations the game service gave up (the dead-letter stream), each with why and
    /// where it is kept whole: a board sending impossible values, a bug struck on one. Lists
    /// them; `--redrive` has a board's decided again once its game can take them.
    DeadLetters(dead_letters::DeadLettersArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let cli = match cli.command {
        Command::Analyze(args) => return analyze::run(args),
        Command::Users(args) => return users::run(args),
        Command::Keys(args) => return keys::run(args),
        Command::TlsCerts(args) => return tls_certs::run(args),
        Command::LichessText(args) => return lichess_text::run(args),
        command => Cli { command },
    };
    let runtime = tokio::runtime::Runtime::new()?;
    match cli.command {
        Command::Demo(args) => runtime.block_on(demo::run(args)),
        Command::Simulate(args) => {
            init_logging();
            runtime.block_on(simulate::run(args))
        }
        Command::Gateway(args) => runtime.block_on(async {
            // A gateway is a service of the hall: its spans start each observation's trace.
            let _telemetry = boardcast_kit::telemetry::init("boardcast-gateway", "warn")?;
            gateway::run(args).await
        }),
        Command::NatsConfig(args) => runtime.block_on(nats_config::run(args)),
        Command::Delay(args) => runtime.block_on(delay::run(args)),
        Command::Pair(args) => runtime.block_on(pair::run(args)),
        Command::Results(args) => runtime.block_on(results::run(args)),
        Command::Boards(args) => runtime.block_on(boards::run(args)),
        // Logging on, so that what NATS refuses (a user that may not read a stream) says why.
        Command::Export(args) => {
            init_logging();
            runtime.block_on(appeal::export(args))
        }
        Command::Fork(args) => {
            init_logging();
            runtime.block_on(fork::run(args))
        }
        Command::DeadLetters(args) => {
            // So that a refusal by NATS (credentials that may not read the stream) says why.
            init_logging();
            runtime.block_on(dead_letters::run(args))
        }
        Command::Replay(args) => {
            init_logging();
            let code = runtime.block_on(appeal::replay_command(args))?;
            std::process::exit(if code == std::process::ExitCode::SUCCESS {
                0
            } else {
                1
            });
        }
        Command::Analyze(_)
        | Command::Users(_)
        | Command::Keys(_)
        | Command::TlsCerts(_)
        | Command::LichessText(_) => {
            unreachable!("handled without a runtime above")
        }
    }
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

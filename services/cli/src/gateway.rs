//! `boardcast gateway`: the board gateway. `serial` reads a DGT board on a serial port,
//! `livechess` follows the boards of a DGT LiveChess installation, and `replay-dgt` reads a DGT
//! capture file (the raw bytes a board sent over its serial port) and either prints the game it
//! shows as PGN or publishes its observations. Whatever is read goes into the redb outbox first
//! and leaves it only when JetStream has acknowledged it, so observations read while NATS is
//! unreachable are published, in order, when it is back.

use std::{path::PathBuf, sync::Arc, time::Duration};

use anyhow::{Context as _, bail};
use async_nats::jetstream;
use boardcast_dgt::Orientation;
use boardcast_game::replay::{ReplaySetup, replay_observations};
use boardcast_gateway::{
    dgt::{ClockSide, DgtSession, DgtSessionConfig, read_capture},
    livechess,
    outbox::Outbox,
    publisher,
    recorder::{Recorder, continue_board_numbering},
    serial::{self, SerialConfig},
};
use boardcast_rules::pgn::write_game;
use boardcast_schema::device::v1::{Observation, SourceKind};
use tokio::sync::Notify;

#[derive(clap::Args, Debug)]
pub struct GatewayArgs {
    #[command(subcommand)]
    pub command: GatewayCommand,
}

#[derive(clap::Subcommand, Debug)]
pub enum GatewayCommand {
    /// Read a DGT board (and the clock connected to it) on a serial port, e.g. /dev/ttyACM0,
    /// and publish its observations. Runs until Ctrl-C; reopens the port when it fails.
    Serial(SerialArgs),
    /// Follow every board of a DGT LiveChess 2 installation and publish their observations.
    /// Runs until Ctrl-C; reconnects when LiveChess goes away.
    Livechess(LivechessArgs),
    /// Replay a DGT capture file: print the game it shows as PGN (--pgn), or publish its
    /// observations to NATS through the outbox, as a board on a serial port would.
    ReplayDgt(ReplayDgtArgs),
}

/// Which clock display shows White's time.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhiteClock {
    Left,
    Right,
}

/// Where observations go: the outbox on disk, then NATS.
#[derive(clap::Args, Debug)]
pub struct PublishArgs {
    /// NATS server of the running system.
    #[arg(
        long,
        env = "BOARDCAST_NATS_URL",
        default_value = "nats://127.0.0.1:4222"
    )]
    pub nats: String,
    /// The hall's certificate authority (PEM, from `boardcast tls-certs`) that the NATS
    /// servers' certificates are checked against. Given, NATS connections are TLS only (use
    /// `tls://` URLs).
    #[arg(long, env = boardcast_kit::nats::NATS_CA_ENV)]
    nats_ca: Option<std::path::PathBuf>,
    /// The gateway's outbox file (observations not yet acknowledged by JetStream). Give each
    /// gateway process its own.
    #[arg(long, default_value = "var/gateway/outbox.redb")]
    pub outbox: PathBuf,
    /// Address to serve /metrics (Prometheus text format: the outbox's backlog), /healthz and
    /// /readyz on, e.g. 127.0.0.1:9465; none when not given.
    #[arg(long, env = "BOARDCAST_METRICS_LISTEN")]
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// Observations found waiting in the outbox at start that look like another event's (the
    /// oldest received more than --outbox-max-age-hours ago, or NATS holding less of a board than
    /// it acknowledged to this outbox) stop the gateway before anything is published, lest they
    /// land in today's games. This publishes them anyway.
    #[arg(long)]
    pub publish_held_outbox: bool,
    /// How old the outbox's waiting observations may be at start (hours).
    #[arg(long, default_value_t = 12)]
    pub outbox_max_age_hours: u32,
}

/// How a DGT board is set up.
#[derive(clap::Args, Debug)]
pub struct BoardSetupArgs {
    /// The board was set up turned round (DGT square 0 is h1).
    #[arg(long)]
    pub rotated: bool,
    /// The clock display taken to show White's time until the clock says otherwise: the game
    /// service works out the real side from the first presses (and follows a clock turned
    /// round), and tells the operator when this setting was wrong.
    #[arg(long, value_enum, default_value = "left")]
    pub white_clock: WhiteClock,
}

impl BoardSetupArgs {
    fn config(&self) -> DgtSessionConfig {
        DgtSessionConfig {
            orientation: if self.rotated {
                Orientation::Rotated
            } else {
                Orientation::Normal
            },
            white_clock: match self.white_clock {
                WhiteClock::Left => ClockSide::Left,
                WhiteClock::Right => ClockSide::Right,
            },
        }
    }
}

#[derive(clap::Args, Debug)]
pub struct SerialArgs {
    /// The board's serial port, e.g. /dev/ttyACM0 (USB boards) or /dev/ttyUSB0.
    #[arg(long)]
    pub port: String,
    /// The board id the game service maps to a game, e.g. "hall-a-12" (letters, digits, - and _).
    #[arg(long)]
    pub board_id: String,
    #[command(flatten)]
    pub setup: BoardSetupArgs,
    #[command(flatten)]
    pub publish: PublishArgs,
}

#[derive(clap::Args, Debug)]
pub struct LivechessArgs {
    /// The LiveChess websocket API.
    #[arg(long, default_value = "ws://127.0.0.1:1982/api/v1.0")]
    pub url: String,
    #[command(flatten)]
    pub publish: PublishArgs,
}

#[derive(clap::Args, Debug)]
pub struct ReplayDgtArgs {
    /// The capture: raw bytes as read from the board's serial port.
    pub file: PathBuf,
    /// Print the game as the game service would record it, as PGN on stdout (what the log
    /// says beyond the moves on stderr), instead of publishing.
    #[arg(long)]
    pub pgn: bool,
    /// With --pgn: the game's time control, as in PGN (e.g. 5400+30, 40/7200:1800+30); by
    /// default the time the clock shows at the start, without increment. Give the game's own to
    /// see the clock alerts the game service would record.
    #[arg(long)]
    pub time_control: Option<String>,
    /// Board id for the observations (default: the serial number in the capture).
    #[arg(long)]
    pub board_id: Option<String>,
    #[command(flatten)]
    pub setup: BoardSetupArgs,
    #[command(flatten)]
    pub publish: PublishArgs,
    /// PGN tags for --pgn, as NAME=VALUE (repeatable), e.g. --tag "White=So, Wesley".
    #[arg(long = "tag")]
    pub tags: Vec<String>,
}

pub async fn run(args: GatewayArgs) -> anyhow::Result<()> {
    match args.command {
        GatewayCommand::Serial(args) => serial(args).await,
        GatewayCommand::Livechess(args) => livechess(args).await,
        GatewayCommand::ReplayDgt(args) => replay_dgt(args).await,
    }
}

/// The outbox and the task that empties it into JetStream.
struct Publishing {
    outbox: Arc<Outbox>,
    js: jetstream::Context,
    wake: Arc<Notify>,
    stop: Arc<Notify>,
    task: tokio::task::JoinHandle<Result<(), boardcast_gateway::outbox::OutboxError>>,
    /// Reports the outbox's backlog when /metrics is scraped; kept for as long as it runs.
    _backlog: Option<opentelemetry::metrics::ObservableGauge<u64>>,
}

impl Publishing {
    async fn start(args: &PublishArgs, client_name: &str) -> anyhow::Result<Publishing> {
        if let Some(dir) = args.outbox.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let outbox = Arc::new(Outbox::open(&args.outbox).with_context(|| {
            format!(
                "opening the outbox {} (is another gateway using it?)",
                args.outbox.display()
            )
        })?);
        // Before connecting: the backlog is what an operator looks at while NATS is away.
        let backlog = match args.metrics_listen {
            Some(addr) => {
                let exposition = boardcast_kit::metrics::install("boardcast-gateway")?;
                let readiness = boardcast_kit::metrics::Readiness::default();
                readiness.set(true);
                boardcast_kit::metrics::serve(addr, exposition, readiness).await?;
                let outbox = outbox.clone();
                Some(
                    opentelemetry::global::meter("boardcast-gateway")
                        .u64_observable_gauge("boardcast.gateway.outbox")
                        .with_description(
                            "Observations kept in the outbox that JetStream has not acknowledged yet",
                        )
                        .with_callback(move |gauge| match outbox.pending_count() {
                            Ok(pending) => gauge.observe(pending, &[]),
                            Err(e) => tracing::warn!("reading the outbox for /metrics: {e}"),
                        })
                        .build(),
                )
            }
            None => None,
        };
        // Returns at once: the outbox keeps observations while NATS is away.
        boardcast_kit::nats::trust_authority(args.nats_ca.as_deref());
        let client = boardcast_kit::nats::connect_observed(&args.nats, client_name, |_| {}).await?;
        let js = jetstream::new(client);
        if !args.publish_held_outbox {
            refuse_foreign_outbox(&outbox, &js, args).await?;
        }
        let wake = Arc::new(Notify::new());
        let stop = Arc::new(Notify::new());
        let task = tokio::spawn(publisher::run(
            outbox.clone(),
            js.clone(),
            wake.clone(),
            stop.clone(),
        ));
        wake.notify_one();
        Ok(Publishing {
            outbox,
            js,
            wake,
            stop,
            task,
            _backlog: backlog,
        })
    }

    fn recorder(&self, source: SourceKind) -> Recorder {
        Recorder::new(self.outbox.clone(), self.wake.clone(), source)
            .continuing_from(self.js.clone())
    }

    /// Stops publishing; what is still in the outbox is published by the next run.
    async fn stop(self) -> anyhow::Result<()> {
        self.stop.notify_one();
        self.task
            .await
            .context("the publisher stopped")?
            .context("publishing the outbox")
    }
}

/// Stops the gateway before it publishes observations waiting in its outbox that look like
/// another event's (`outbox::foreign_observations`). JetStream is asked how far it holds each
/// such board when it answers soon; when NATS is away, only the observations' age counts.
async fn refuse_foreign_outbox(
    outbox: &Arc<Outbox>,
    js: &jetstream::Context,
    args: &PublishArgs,
) -> anyhow::Result<()> {
    let boards = outbox.pending_boards().context("reading the outbox")?;
    if boards.is_empty() {
        return Ok(());
    }
    // NATS may be away (when outboxes fill): asked only once connected, all boards at once,
    // within a bound; unanswered, only the observations' age counts.
    let connected = tokio::time::timeout(Duration::from_secs(3), async {
        while js.client().connection_state() != async_nats::connection::State::Connected {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .is_ok();
    let jetstream_last: std::collections::BTreeMap<String, u64> = if connected {
        let asks = boards.iter().map(|board| async move {
            // A direct get may be answered by a replica a moment behind: asked again a few
            // times before the answer counts as less than JetStream acknowledged.
            let mut highest = None;
            for _ in 0..5 {
                let asked = boardcast_kit::nats::last_board_seq(
                    js,
                    &board.board_id,
                    boardcast_kit::nats::BoardRead::OwnBoard,
                )
                .await;
                let Ok(last) = asked else { break };
                let now = highest.map_or(last, |h: u64| h.max(last));
                highest = Some(now);
                if now >= board.acknowledged_up_to {
                    break;
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            highest.map(|last| (board.board_id.clone(), last))
        });
        tokio::time::timeout(Duration::from_secs(15), futures::future::join_all(asks))
            .await
            .unwrap_or_default()
            .into_iter()
            .flatten()
            .collect()
    } else {
        std::collections::BTreeMap::new()
    };
    let reasons = boardcast_gateway::outbox::foreign_observations(
        &boards,
        |board| jetstream_last.get(board).copied(),
        boardcast_kit::now_unix_ms(),
        i64::from(args.outbox_max_age_hours) * 3_600_000,
    );
    if reasons.is_empty() {
        return Ok(());
    }
    anyhow::bail!(
        "the outbox {} holds observations that look like another event's, so nothing is \
         published: {}. Move the file aside (its observations stay in it) and start with a new \
         --outbox, or publish them anyway with --publish-held-outbox",
        args.outbox.display(),
        reasons.join("; ")
    )
}

/// Runs a reader until Ctrl-C (or until the publisher fails, which only a broken outbox does).
async fn run_until_interrupted(
    publishing: Publishing,
    reader: impl std::future::Future<Output = ()>,
) -> anyhow::Result<()> {
    let outcome = tokio::select! {
        _ = reader => Ok(()),
        signal = tokio::signal::ctrl_c() => signal.context("waiting for Ctrl-C"),
        // The task's own error is reported by `stop` below.
        _ = wait_finished(&publishing.task) => Ok(()),
    };
    let stopped = publishing.stop().await;
    outcome.and(stopped)
}

async fn wait_finished<T>(task: &tokio::task::JoinHandle<T>) {
    while !task.is_finished() {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn serial(args: SerialArgs) -> anyhow::Result<()> {
    boardcast_game::validate_board_id(&args.board_id)?;
    let publishing = Publishing::start(&args.publish, "boardcast-gateway-serial").await?;
    let recorder = publishing.recorder(SourceKind::DgtSerial);
    let mut session = DgtSession::new(args.setup.config());
    let board_id = args.board_id.clone();
    let handle = move |message| {
        let handled = session.on_message(message);
        for diagnostic in &handled.diagnostics {
            tracing::warn!(board = %board_id, "{diagnostic}");
        }
        handled.kinds
    };
    eprintln!(
        "reading board {} on {}; publishing to {} (Ctrl-C stops)",
        args.board_id,
        args.port,
        boardcast_kit::nats::redact(&args.publish.nats)
    );
    let config = SerialConfig::new(&args.port, &args.board_id);
    run_until_interrupted(publishing, serial::run(config, recorder, handle)).await
}

async fn livechess(args: LivechessArgs) -> anyhow::Result<()> {
    let publishing = Publishing::start(&args.publish, "boardcast-gateway-livechess").await?;
    let recorder = publishing.recorder(SourceKind::Livechess);
    eprintln!(
        "following LiveChess at {}; publishing to {} (Ctrl-C stops)",
        args.url,
        boardcast_kit::nats::redact(&args.publish.nats)
    );
    run_until_interrupted(publishing, livechess::run(args.url.clone(), recorder)).await
}

async fn replay_dgt(args: ReplayDgtArgs) -> anyhow::Result<()> {
    let bytes =
        std::fs::read(&args.file).with_context(|| format!("reading {}", args.file.display()))?;
    let capture = read_capture(&bytes, args.setup.config())
        .with_context(|| format!("reading the capture {}", args.file.display()))?;
    for diagnostic in &capture.diagnostics {
        eprintln!("capture: {diagnostic}");
    }
    if args.pgn {
        let time_control = args
            .time_control
            .as_deref()
            .map(boardcast_game::parse_time_control)
            .transpose()
            .map_err(anyhow::Error::msg)?;
        let board_id = args.board_id.as_deref().unwrap_or("capture");
        let setup = ReplaySetup::for_observations(
            &capture.observations,
            board_id,
            time_control,
            boardcast_kit::now_unix_ms(),
        );
        let replay = replay_observations(&capture.observations, &setup)
            .with_context(|| format!("replaying {}", args.file.display()))?;
        // The players and round are not in a capture: only what the operator tags.
        let mut tags: Vec<(String, String)> = replay
            .game
            .to_pgn()
            .game
            .tags
            .into_iter()
            .filter(|(name, _)| name != "White" && name != "Black" && name != "Round")
            .collect();
        for tag in &args.tags {
            let (name, value) = tag
                .split_once('=')
                .with_context(|| format!("--tag {tag:?} is not NAME=VALUE"))?;
            tags.retain(|(existing, _)| existing != name.trim());
            tags.push((name.trim().to_owned(), value.to_owned()));
        }
        let game = replay.pgn_with_tags(&tags);
        print!("{}", write_game(&game));
        for note in &replay.notes {
            eprintln!("{note}");
        }
        for refused in &replay.refused {
            eprintln!("capture: {refused}");
        }
        return Ok(());
    }

    let board_id = match (&args.board_id, &capture.serial_number) {
        (Some(id), _) => id.clone(),
        (None, Some(serial)) => serial.clone(),
        (None, None) => bail!("the capture has no serial number: give --board-id"),
    };
    boardcast_game::validate_board_id(&board_id)?;
    let publishing = Publishing::start(&args.publish, "boardcast-gateway-replay").await?;
    // Device times: the capture's clock-derived offsets from now.
    let start = boardcast_kit::now_unix_ms();
    let observations: Vec<Observation> = capture
        .observations
        .into_iter()
        .map(|timed| Observation {
            board_id: board_id.clone(),
            device_seq: 0,
            device_time_unix_ms: start + timed.at_ms,
            receive_time_unix_ms: boardcast_kit::now_unix_ms(),
            source: SourceKind::CaptureReplay as i32,
            kind: Some(timed.kind),
        })
        .collect();
    let count = observations.len();
    continue_board_numbering(&publishing.outbox, &publishing.js, &board_id).await?;
    {
        let outbox = publishing.outbox.clone();
        tokio::task::spawn_blocking(move || -> anyhow::Result<()> {
            // One transaction per thousand: a long game has tens of thousands of clock readings.
            let mut observations = observations;
            while !observations.is_empty() {
                let rest = observations.split_off(observations.len().min(1000));
                outbox.append(observations)?;
                observations = rest;
            }
            Ok(())
        })
        .await
        .context("storing observations")??;
    }
    eprintln!("{count} observations of board {board_id} stored; publishing");
    publishing.wake.notify_one();
    loop {
        let left = {
            let outbox = publishing.outbox.clone();
            tokio::task::spawn_blocking(move || outbox.pending_count())
                .await
                .context("reading the outbox")??
        };
        if left == 0 {
            break;
        }
        if publishing.task.is_finished() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    publishing.stop().await?;
    eprintln!("all observations published");
    Ok(())
}

//! `boardcast gateway`: board gateway tools. `replay-dgt` reads a DGT capture file (the raw bytes
//! a board sent over its serial port) and either prints the game it shows as PGN or publishes
//! its observations to NATS through the gateway's outbox.

use std::{path::PathBuf, sync::Arc, time::Duration};

use anyhow::{Context as _, bail};
use async_nats::jetstream;
use boardcast_dgt::Orientation;
use boardcast_gateway::{
    dgt::{ClockSide, DgtSessionConfig, replay_capture},
    outbox::Outbox,
    publisher,
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

#[derive(clap::Args, Debug)]
pub struct ReplayDgtArgs {
    /// The capture: raw bytes as read from the board's serial port.
    pub file: PathBuf,
    /// Print the inferred game as PGN on stdout (notes on stderr) instead of publishing.
    #[arg(long)]
    pub pgn: bool,
    /// Board id for the observations (default: the serial number in the capture).
    #[arg(long)]
    pub board_id: Option<String>,
    /// NATS server of the running system.
    #[arg(
        long,
        env = "BOARDCAST_NATS_URL",
        default_value = "nats://127.0.0.1:4222"
    )]
    pub nats: String,
    /// The gateway's outbox file.
    #[arg(long, default_value = "var/gateway/outbox.redb")]
    pub outbox: PathBuf,
    /// The board was set up turned round (DGT square 0 is h1).
    #[arg(long)]
    pub rotated: bool,
    /// The clock display that shows White's time.
    #[arg(long, value_enum, default_value = "left")]
    pub white_clock: WhiteClock,
    /// PGN tags for --pgn, as NAME=VALUE (repeatable), e.g. --tag "White=So, Wesley".
    #[arg(long = "tag")]
    pub tags: Vec<String>,
}

pub async fn run(args: GatewayArgs) -> anyhow::Result<()> {
    match args.command {
        GatewayCommand::ReplayDgt(args) => replay_dgt(args).await,
    }
}

async fn replay_dgt(args: ReplayDgtArgs) -> anyhow::Result<()> {
    let bytes =
        std::fs::read(&args.file).with_context(|| format!("reading {}", args.file.display()))?;
    let config = DgtSessionConfig {
        orientation: if args.rotated {
            Orientation::Rotated
        } else {
            Orientation::Normal
        },
        white_clock: match args.white_clock {
            WhiteClock::Left => ClockSide::Left,
            WhiteClock::Right => ClockSide::Right,
        },
    };
    let replay = replay_capture(&bytes, config)
        .with_context(|| format!("replaying {}", args.file.display()))?;
    for diagnostic in &replay.diagnostics {
        eprintln!("capture: {diagnostic}");
    }
    if args.pgn {
        let mut game = replay.game;
        for tag in &args.tags {
            let (name, value) = tag
                .split_once('=')
                .with_context(|| format!("--tag {tag:?} is not NAME=VALUE"))?;
            game.tags.push((name.trim().to_owned(), value.to_owned()));
        }
        match game.tags.iter_mut().find(|(name, _)| name == "Result") {
            Some((_, value)) => *value = game.result.clone(),
            None => game.tags.push(("Result".to_owned(), game.result.clone())),
        }
        print!("{}", write_game(&game));
        for note in &replay.notes {
            eprintln!("{note}");
        }
        return Ok(());
    }

    let board_id = match (&args.board_id, &replay.serial_number) {
        (Some(id), _) => id.clone(),
        (None, Some(serial)) => serial.clone(),
        (None, None) => bail!("the capture has no serial number: give --board-id"),
    };
    boardcast_game::validate_board_id(&board_id)?;
    if let Some(dir) = args.outbox.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let outbox = Arc::new(
        Outbox::open(&args.outbox)
            .with_context(|| format!("opening the outbox {}", args.outbox.display()))?,
    );
    // Device times: the capture's clock-derived offsets from now.
    let start = boardcast_kit::now_unix_ms();
    let observations: Vec<Observation> = replay
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
    {
        let outbox = outbox.clone();
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

    let client = boardcast_kit::nats::connect(&args.nats, "boardcast-gateway-replay").await?;
    let js = jetstream::new(client);
    let wake = Arc::new(Notify::new());
    let stop = Arc::new(Notify::new());
    let publishing = tokio::spawn(publisher::run(
        outbox.clone(),
        js,
        wake.clone(),
        stop.clone(),
    ));
    wake.notify_one();
    loop {
        let left = {
            let outbox = outbox.clone();
            tokio::task::spawn_blocking(move || outbox.pending_count())
                .await
                .context("reading the outbox")??
        };
        if left == 0 {
            break;
        }
        if publishing.is_finished() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop.notify_one();
    publishing
        .await
        .context("the publisher stopped")?
        .context("publishing the outbox")?;
    eprintln!("all observations published");
    Ok(())
}

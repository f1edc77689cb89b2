//! A DGT board on a serial (USB) port: 9600 baud, 8N1.
//!
//! Start-up as real drivers do it: reset the board, ask for its serial number, version, battery
//! and a board dump, then switch to update mode (field updates plus the clock once a second).
//! The battery is asked again every few minutes (Bluetooth boards answer; others ignore it). A
//! watchdog asks for a board dump when the board has been silent for a while; a board that still
//! says nothing is reported as not responding. When the port fails (the cable is pulled) the
//! board is reported disconnected and the port is reopened until it is back. Every decoded
//! message goes to the caller's handler, which turns it into observations.

use std::time::Duration;

use anyhow::Context as _;
use boardcast_dgt::{Command, Decoder, Message, encode_command};
use boardcast_schema::device::v1::{DeviceState, DeviceStatus, observation::Kind};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_serial::SerialPortBuilderExt;

use crate::recorder::Recorder;

#[derive(Debug, Clone)]
pub struct SerialConfig {
    /// The port, e.g. `/dev/ttyACM0`.
    pub path: String,
    pub board_id: String,
    /// Silence after which the watchdog asks for a board dump.
    pub silence: Duration,
    /// Silence after the watchdog's request after which the board is not responding.
    pub no_response: Duration,
    /// Wait before reopening a failed port.
    pub reopen_after: Duration,
    /// How often the board is asked for its battery once started: a Bluetooth board's runs
    /// down over a round, and the arbiters are told when it is low.
    pub battery_every: Duration,
}

impl SerialConfig {
    pub fn new(path: &str, board_id: &str) -> Self {
        SerialConfig {
            path: path.to_owned(),
            board_id: board_id.to_owned(),
            silence: Duration::from_secs(3),
            no_response: Duration::from_secs(3),
            reopen_after: Duration::from_secs(2),
            battery_every: Duration::from_secs(300),
        }
    }
}

/// The bytes a host sends to start a board.
pub fn startup_sequence() -> Result<Vec<u8>, boardcast_dgt::EncodeError> {
    let mut bytes = Vec::new();
    for command in [
        Command::Reset,
        Command::SerialNumber,
        Command::Version,
        Command::Battery,
        Command::SendBoard,
        Command::SendUpdates,
    ] {
        bytes.extend(encode_command(&command)?);
    }
    Ok(bytes)
}

fn status(state: DeviceState, detail: String) -> Kind {
    Kind::Status(DeviceStatus {
        state: state as i32,
        detail,
        ..Default::default()
    })
}

/// Reads the board for as long as the gateway runs. `handle` turns each decoded message into
/// observations; device times are the receive times (DGT boards have no clock of their own).
pub async fn run<H>(config: SerialConfig, recorder: Recorder, mut handle: H)
where
    H: FnMut(Message) -> Vec<Kind>,
{
    let mut last_state: Option<DeviceState> = None;
    loop {
        let ended = read_port(&config, &recorder, &mut handle, &mut last_state).await;
        let detail = match ended {
            Ok(()) => "port closed".to_owned(),
            Err(e) => format!("{e:#}"),
        };
        tracing::warn!(board = %config.board_id, port = %config.path, "{detail}");
        if last_state != Some(DeviceState::Disconnected) {
            last_state = Some(DeviceState::Disconnected);
            if let Err(e) = recorder
                .record(
                    &config.board_id,
                    boardcast_kit::now_unix_ms(),
                    vec![status(DeviceState::Disconnected, detail)],
                )
                .await
            {
                tracing::error!("cannot store the board's status: {e}");
            }
        }
        tokio::time::sleep(config.reopen_after).await;
    }
}

async fn read_port<H>(
    config: &SerialConfig,
    recorder: &Recorder,
    handle: &mut H,
    last_state: &mut Option<DeviceState>,
) -> anyhow::Result<()>
where
    H: FnMut(Message) -> Vec<Kind>,
{
    let mut port = tokio_serial::new(&config.path, 9600)
        .data_bits(tokio_serial::DataBits::Eight)
        .parity(tokio_serial::Parity::None)
        .stop_bits(tokio_serial::StopBits::One)
        .open_native_async()
        .with_context(|| format!("opening {}", config.path))?;
    port.write_all(&startup_sequence()?)
        .await
        .context("starting the board")?;
    let mut decoder = Decoder::new();
    let mut buffer = [0u8; 512];
    let mut asked = false;
    let mut battery_asked_at = tokio::time::Instant::now();
    loop {
        if battery_asked_at.elapsed() >= config.battery_every {
            // Update mode asked for again after it: only a board or clock request is documented
            // to leave a board's mode as it is.
            let mut ask = encode_command(&Command::Battery)?;
            ask.extend(encode_command(&Command::SendUpdates)?);
            port.write_all(&ask).await?;
            battery_asked_at = tokio::time::Instant::now();
        }
        let wait = if asked {
            config.no_response
        } else {
            config.silence
        };
        let read = tokio::time::timeout(wait, port.read(&mut buffer)).await;
        let now = boardcast_kit::now_unix_ms();
        let mut kinds = Vec::new();
        match read {
            Err(_) if !asked => {
                // Silence: ask for the board; a live board answers with a dump.
                port.write_all(&encode_command(&Command::SendBoard)?)
                    .await?;
                asked = true;
                continue;
            }
            Err(_) => {
                if *last_state != Some(DeviceState::NotResponding) {
                    *last_state = Some(DeviceState::NotResponding);
                    kinds.push(status(
                        DeviceState::NotResponding,
                        "no answer to a board request".into(),
                    ));
                }
                // Keep asking: the board may come back without the port failing.
                port.write_all(&encode_command(&Command::SendBoard)?)
                    .await?;
            }
            Ok(Ok(0)) => return Ok(()),
            Ok(Ok(n)) => {
                asked = false;
                if *last_state != Some(DeviceState::Connected) {
                    *last_state = Some(DeviceState::Connected);
                    kinds.push(status(
                        DeviceState::Connected,
                        format!("reading {}", config.path),
                    ));
                }
                for message in decoder.feed(&buffer[..n]) {
                    kinds.extend(handle(message));
                }
            }
            Ok(Err(e)) => return Err(e).context("reading the port"),
        }
        recorder.record(&config.board_id, now, kinds).await?;
    }
}

//! NATS subjects, JetStream streams and connection set-up.
//!
//! Streams:
//! - `BOARDCAST_INGEST` — device observations on `boardcast.board.<board_id>.obs`, deduplicated
//!   by `Nats-Msg-Id` = `<board_id>:<device_seq>`.
//! - `BOARDCAST_GAMES` — game event records on `boardcast.game.<game_id>.events`, one subject per
//!   game so a game's log is read in order on its own.
//! - `BOARDCAST_DEADLETTER` — observations that could not be used, on
//!   `boardcast.deadletter.<board_id or "unknown">`, with the reason in the `Boardcast-Reason` header.

use std::time::Duration;

use anyhow::Context as _;
use async_nats::jetstream::{self, stream};

pub const INGEST_STREAM: &str = "BOARDCAST_INGEST";
pub const GAMES_STREAM: &str = "BOARDCAST_GAMES";
pub const DEADLETTER_STREAM: &str = "BOARDCAST_DEADLETTER";

pub const INGEST_SUBJECTS: &str = "boardcast.board.*.obs";
pub const GAMES_SUBJECTS: &str = "boardcast.game.*.events";
pub const DEADLETTER_SUBJECTS: &str = "boardcast.deadletter.>";

/// Header carrying the reason an observation went to the dead-letter stream.
pub const REASON_HEADER: &str = "Boardcast-Reason";

pub fn observation_subject(board_id: &str) -> String {
    format!("boardcast.board.{board_id}.obs")
}

pub fn observation_message_id(board_id: &str, device_seq: u64) -> String {
    format!("{board_id}:{device_seq}")
}

pub fn game_subject(game_id: &str) -> String {
    format!("boardcast.game.{game_id}.events")
}

pub fn game_message_id(game_id: &str, game_seq: u64) -> String {
    format!("{game_id}:{game_seq}")
}

pub fn deadletter_subject(board_id: Option<&str>) -> String {
    format!("boardcast.deadletter.{}", board_id.unwrap_or("unknown"))
}

/// Connects to NATS, waiting for it if it is not up yet. `url` may list several servers of a
/// cluster separated by commas (`nats://a:4222,nats://b:4222`); the client fails over between them.
pub async fn connect(url: &str, name: &str) -> anyhow::Result<async_nats::Client> {
    let servers: Vec<&str> = url
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    let client = async_nats::ConnectOptions::new()
        .name(name)
        .retry_on_initial_connect()
        .connection_timeout(Duration::from_secs(5))
        .connect(servers.as_slice())
        .await
        .with_context(|| format!("connecting to NATS at {url}"))?;
    Ok(client)
}

/// Creates the streams if they do not exist yet. Safe to call from every service at start-up.
pub async fn ensure_streams(js: &jetstream::Context, replicas: usize) -> anyhow::Result<()> {
    for (name, subjects, description) in [
        (
            INGEST_STREAM,
            INGEST_SUBJECTS,
            "Board and clock observations",
        ),
        (GAMES_STREAM, GAMES_SUBJECTS, "Game event logs"),
        (
            DEADLETTER_STREAM,
            DEADLETTER_SUBJECTS,
            "Observations that could not be used",
        ),
    ] {
        js.get_or_create_stream(stream::Config {
            name: name.to_owned(),
            subjects: vec![subjects.to_owned()],
            description: Some(description.to_owned()),
            storage: stream::StorageType::File,
            num_replicas: replicas,
            duplicate_window: Duration::from_secs(120),
            ..Default::default()
        })
        .await
        .with_context(|| format!("creating JetStream stream {name}"))?;
    }
    Ok(())
}

/// The first message of `stream` at or after stream sequence `seq` on `subject` (wildcards
/// allowed), found by the server in one request whatever lies in between; `None` when there is
/// none.
pub async fn next_message(
    stream: &stream::Stream,
    seq: u64,
    subject: &str,
) -> Result<Option<jetstream::message::StreamMessage>, stream::RawMessageError> {
    match stream
        .raw_message_builder()
        .sequence(seq)
        .next_by_subject(subject)
        .send()
        .await
    {
        Ok(message) => Ok(Some(message)),
        Err(e) if e.kind() == stream::RawMessageErrorKind::NoMessageFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The `device_seq` of the board's last observation in the ingest stream; 0 when it has sent
/// none. A game set up on the board now follows it from there; a simulated board continues its
/// numbering from there, as a gateway does (a board's numbers are never reused).
pub async fn last_board_seq(js: &jetstream::Context, board_id: &str) -> anyhow::Result<u64> {
    use async_nats::jetstream::stream::LastRawMessageErrorKind;
    use prost::Message as _;
    let stream = js
        .get_stream(INGEST_STREAM)
        .await
        .context("opening the observation stream")?;
    match stream
        .get_last_raw_message_by_subject(&observation_subject(board_id))
        .await
    {
        Ok(message) => {
            let observation =
                boardcast_schema::device::v1::Observation::decode(message.payload.as_ref())
                    .with_context(|| {
                        format!("board {board_id}'s last observation is undecodable")
                    })?;
            Ok(observation.device_seq)
        }
        Err(e) if e.kind() == LastRawMessageErrorKind::NoMessageFound => Ok(0),
        Err(e) => Err(e).with_context(|| format!("reading board {board_id}'s last observation")),
    }
}

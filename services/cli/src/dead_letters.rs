//! `boardcast dead-letters`: the observations the game service gave up, each with why, as the
//! dead-letter stream keeps them, so that an operator in the hall sees what a board sent that was
//! not used without reading NATS by hand. With `--redrive`, a board's given-up observations are
//! published again, in order, to be decided again: after its game's log was mended
//! (`boardcast fork`), or a service without a bug runs.

use anyhow::Context as _;
use async_nats::jetstream::{self, context::GetStreamErrorKind, message::StreamMessage};
use boardcast_kit::nats::{
    DEADLETTER_STREAM, ORIGINAL_BYTES_HEADER, ORIGINAL_SEQUENCE_HEADER, ORIGINAL_STREAM_HEADER,
    REASON_HEADER, deadletter_subject, next_message, observation_message_id, observation_subject,
};
use boardcast_schema::device::v1::Observation;
use prost::Message as _;

#[derive(clap::Args, Debug)]
pub struct DeadLettersArgs {
    /// Only the dead letters of this board (as its gateway names it). Observations whose board
    /// could not be read are listed under `unknown`.
    #[arg(long)]
    board: Option<String>,
    /// Only the dead letters after this one (the number a listing gives each), to see what
    /// came since.
    #[arg(long, default_value_t = 0)]
    after: u64,
    /// Publish the board's dead letters listed (those after --after) again as its observations,
    /// in order, so that the game service decides them again: once the board's game can take
    /// them (its log mended with `boardcast fork`). Those already applied are ignored as
    /// duplicates; one unusable for good is given up again. Needs --board.
    #[arg(long, requires = "board")]
    redrive: bool,
    /// NATS server holding the dead-letter stream, as the admin
    /// (`boardcast nats-config --print-url admin`): no other role an operator is given may read
    /// it.
    #[arg(
        long,
        env = "BOARDCAST_NATS_URL",
        default_value = "nats://127.0.0.1:4222"
    )]
    nats: String,
}

pub async fn run(args: DeadLettersArgs) -> anyhow::Result<()> {
    let js = jetstream::new(
        boardcast_kit::nats::connect_for_command(
            &args.nats,
            "boardcast-dead-letters",
            boardcast_kit::nats::COMMAND_CONNECT_WITHIN,
        )
        .await?,
    );
    let stream = match js.get_stream(DEADLETTER_STREAM).await {
        Ok(stream) => stream,
        Err(e)
            if matches!(e.kind(), GetStreamErrorKind::JetStream(j)
                if j.error_code() == jetstream::ErrorCode::STREAM_NOT_FOUND) =>
        {
            // The game service creates it when it starts: nothing was given up before.
            println!(
                "no dead letters: the stream {DEADLETTER_STREAM} does not exist yet (the game \
                 service creates it when it starts)"
            );
            return Ok(());
        }
        Err(e) => return Err(e).context(format!("opening the stream {DEADLETTER_STREAM}")),
    };
    let subject = args.board.as_deref().map_or_else(
        || "boardcast.deadletter.>".to_owned(),
        |b| deadletter_subject(Some(b)),
    );
    let mut seq = args.after.saturating_add(1);
    let mut listed = 0u64;
    while let Some(message) = next_message(&stream, seq, &subject)
        .await
        .with_context(|| format!("reading {DEADLETTER_STREAM} from sequence {seq}"))?
    {
        print!("{}", describe(&message));
        if args.redrive {
            redrive(&js, &message).await?;
        }
        listed += 1;
        let Some(next) = message.sequence.checked_add(1) else {
            break;
        };
        seq = next;
    }
    match (listed, &args.board) {
        (0, Some(board)) => println!("no dead letters of board {board}"),
        (0, None) => println!("no dead letters"),
        (n, _) if args.redrive => println!(
            "{n} dead letter{} published again as observations",
            if n == 1 { "" } else { "s" }
        ),
        (n, _) => println!("{n} dead letter{}", if n == 1 { "" } else { "s" }),
    }
    Ok(())
}

/// Publishes the observation a dead letter keeps on its board's subject again, under a message
/// id of its own (the first one's may still be in the stream's duplicate window).
async fn redrive(js: &jetstream::Context, message: &StreamMessage) -> anyhow::Result<()> {
    if message.headers.get(ORIGINAL_BYTES_HEADER).is_some() {
        println!("  not published again: only its first bytes are kept");
        return Ok(());
    }
    let Ok(observation) = Observation::decode(message.payload.as_ref()) else {
        println!("  not published again: it is no observation");
        return Ok(());
    };
    let board = &observation.board_id;
    let publish = jetstream::message::PublishMessage::build()
        .payload(message.payload.clone())
        .message_id(observation_message_id(
            board,
            observation.device_seq,
            rand::random(),
        ));
    js.send_publish(observation_subject(board), publish)
        .await
        .context("publishing the observation again")?
        .await
        .context("publishing the observation again")?;
    println!("  published again");
    Ok(())
}

/// One dead letter as the listing shows it: a heading line, then why, then where the
/// observation is kept whole.
fn describe(message: &StreamMessage) -> String {
    let header = |name: &str| message.headers.get(name).map(|v| v.as_str().to_owned());
    let board = message
        .subject
        .strip_prefix("boardcast.deadletter.")
        .unwrap_or(message.subject.as_str());
    // Only its first bytes are kept when it was too large: those may decode as something else.
    let observation = if header(ORIGINAL_BYTES_HEADER).is_some() {
        "an observation too large to keep here".to_owned()
    } else {
        match Observation::decode(message.payload.as_ref()) {
            Ok(o) => {
                let kind = o.kind.as_ref().map_or("no kind".to_owned(), |kind| {
                    boardcast_game::wording::observation_kind_name(kind).replace('_', " ")
                });
                format!("observation {} ({kind})", o.device_seq)
            }
            Err(_) => format!("{} bytes that are no observation", message.payload.len()),
        }
    };
    let time = message
        .time
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|_| message.time.to_string());
    let mut text = format!(
        "#{} {time} board {board}: {observation}\n  why: {}\n",
        message.sequence,
        header(REASON_HEADER).unwrap_or_else(|| "(no reason given)".to_owned())
    );
    if let (Some(stream), Some(at)) = (
        header(ORIGINAL_STREAM_HEADER),
        header(ORIGINAL_SEQUENCE_HEADER),
    ) {
        let bytes = header(ORIGINAL_BYTES_HEADER)
            .map(|n| format!(", {n} bytes"))
            .unwrap_or_default();
        text.push_str(&format!("  kept whole: {stream} sequence {at}{bytes}\n"));
    }
    text
}

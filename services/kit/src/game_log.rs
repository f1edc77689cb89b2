//! The one reader of the game log (`BOARDCAST_GAMES`) that the game service, the broadcast and
//! arbiter services and `boardcast export` share: the messages of a subject in stream order from
//! a sequence on, then live as they are stored.
//!
//! It reads through an ordered consumer: JetStream delivers every message once and in order,
//! and the client recreates the consumer after a gap (a missed heartbeat, a server restart)
//! from the last sequence it delivered. On nats-server 2.9 a consumer was still seen passing over
//! a record the log holds, after a node was killed while the log was written: a reader of the
//! whole stream goes past a sequence it was not delivered only when the stream confirms it
//! removed ([`confirm_removed`]; one listed as deleted from within the log only once it has been
//! for [`DELETED_FOR_GOOD`], see [`deleted_for_good`]), and otherwise reads again from there.
//! An ordered consumer can also stall after a leader change, with heartbeats still coming: when
//! nothing comes for [`STALL_CHECK`] although the log holds more, the reader makes the consumer
//! again from the next sequence it owes, so no reader waits on it for good.

use async_nats::jetstream::{
    consumer::{DeliverPolicy, pull::OrderedConfig},
    stream::Stream,
};
use futures::StreamExt as _;

/// How long a reader waits for the next message before it asks the log whether there is one.
pub const STALL_CHECK: std::time::Duration = std::time::Duration::from_secs(10);

/// One message of the game log as stored.
pub struct LogMessage {
    /// Its sequence in the stream.
    pub stream_seq: u64,
    /// How many messages of the subject followed it in the stream when it was delivered (0: the
    /// reader has caught up).
    pub pending: u64,
    /// The subject it is stored on (`boardcast.game.<game_id>.events`).
    pub subject: String,
    /// The encoded `GameEventRecord`, as stored.
    pub payload: bytes::Bytes,
    /// When NATS stored it: where a reader's latency is measured from.
    pub stored_at: std::time::SystemTime,
    /// The trace of what the record was decided on, to continue in the reader's span.
    pub trace: opentelemetry::Context,
}

#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// NATS could not be read; the ordered consumer goes on once it can.
    #[error("reading the game log: {0}")]
    Read(String),
    /// A message came without its place in the stream: following on from it could skip or
    /// repeat records, so a follower starts again from its last folded sequence.
    #[error("a game log message without its stream position: {0}")]
    NoPosition(String),
    /// The record at this stream sequence was not delivered, or its leader does not have it,
    /// though the log keeps it (see [`confirm_removed`]): read again from there later.
    #[error(
        "record {0} was not delivered and the log keeps it (or lists it as removed only for a \
         moment: a leader still applying, or one whose store lacks it); reading again from there"
    )]
    NotDelivered(u64),
}

/// The messages on `subject` (one game's, or `GAMES_SUBJECTS` for every game) from stream
/// sequence `start` on (1: from the beginning), then live.
pub async fn read_from(
    stream: &Stream,
    subject: &str,
    start: u64,
) -> Result<impl futures::Stream<Item = Result<LogMessage, LogError>> + Send + use<>, LogError> {
    let reader = Reader {
        messages: ordered_from(stream, subject, start).await?,
        stream: stream.clone(),
        subject: subject.to_owned(),
        whole_stream: is_whole_stream(stream, subject),
        next_seq: start.max(1),
    };
    Ok(Box::pin(futures::stream::unfold(
        reader,
        |mut reader| async move {
            let item = reader.next().await?;
            Some((item, reader))
        },
    )))
}

type Messages = std::pin::Pin<Box<dyn futures::Stream<Item = Result<LogMessage, LogError>> + Send>>;

/// A reader of the log that makes its consumer again when it stalls.
struct Reader {
    messages: Messages,
    stream: Stream,
    subject: String,
    /// Reading every message of the stream: then any stream sequence passed over must have been
    /// removed.
    whole_stream: bool,
    /// The sequence from which the messages not delivered yet start.
    next_seq: u64,
}

impl Reader {
    async fn next(&mut self) -> Option<Result<LogMessage, LogError>> {
        loop {
            match tokio::time::timeout(STALL_CHECK, self.messages.next()).await {
                Ok(Some(Ok(message))) => {
                    if self.whole_stream
                        && let Err(e) = confirm_removed(
                            &self.stream,
                            self.next_seq..message.stream_seq,
                            deleted_for_good,
                        )
                        .await
                    {
                        // Read again from the first not delivered, after a moment (a leader
                        // still applying, or one whose store lacks it until it is replaced).
                        tokio::time::sleep(SKIPPED_PAUSE).await;
                        self.restart().await;
                        return Some(Err(e));
                    }
                    self.next_seq = message.stream_seq.saturating_add(1);
                    return Some(Ok(message));
                }
                Ok(other) => return other,
                Err(_) => self.restart_if_stalled().await,
            }
        }
    }

    /// Nothing came for a while: normal when the log holds nothing more, a stall when it does.
    async fn restart_if_stalled(&mut self) {
        let waiting =
            match crate::nats::next_message(&self.stream, self.next_seq, &self.subject).await {
                Ok(waiting) => waiting,
                // NATS away: the consumer goes on once it is back; asked again at the next check.
                Err(e) => {
                    tracing::debug!("checking the game log for records not delivered: {e}");
                    return;
                }
            };
        let Some(waiting) = waiting else {
            return;
        };
        tracing::warn!(
            from = self.next_seq,
            waiting = waiting.sequence,
            "the game log's consumer delivered nothing for {} s although the log holds more: \
             making it again",
            STALL_CHECK.as_secs()
        );
        self.restart().await;
    }

    /// Makes the consumer again from the first message not delivered.
    async fn restart(&mut self) {
        match ordered_from(&self.stream, &self.subject, self.next_seq).await {
            Ok(messages) => self.messages = messages,
            Err(e) => tracing::warn!("making the game log's consumer again: {e}"),
        }
    }
}

/// How long a reader waits before reading again from a record it was not delivered.
const SKIPPED_PAUSE: std::time::Duration = std::time::Duration::from_secs(1);

/// Checks that the stream sequences `seqs`, which a reader was not delivered (or its leader did
/// not answer), were removed from the log, so that it may go past them: below the stream's first
/// sequence (old games purged from its start), or listed as deleted from within it (an operator
/// removed them) when `take_deleted` says so for that sequence. On nats-server 2.9, after a node
/// was killed while the log was written, a leader was seen to lack records the log holds, and to
/// list them as deleted, and consumers to pass over them; a leader newly elected may also not
/// have applied one yet: going past such a record would leave its game short here, so that is an
/// error ([`LogError::NotDelivered`]), and the record is read again later.
pub async fn confirm_removed(
    stream: &Stream,
    seqs: impl IntoIterator<Item = u64>,
    take_deleted: impl Fn(u64) -> bool,
) -> Result<(), LogError> {
    let mut seqs = seqs.into_iter().peekable();
    if seqs.peek().is_none() {
        return Ok(());
    }
    let state = stream
        .info_builder()
        .with_deleted(true)
        .fetch()
        .await
        .map_err(|e| LogError::Read(e.to_string()))?
        .info
        .state;
    let deleted: std::collections::HashSet<u64> =
        state.deleted.unwrap_or_default().into_iter().collect();
    match seqs
        .find(|&seq| seq >= state.first_sequence && !(deleted.contains(&seq) && take_deleted(seq)))
    {
        Some(seq) => Err(LogError::NotDelivered(seq)),
        None => Ok(()),
    }
}

/// How long a record not delivered must have been listed as deleted from within the log before
/// a reader goes past it: longer than a leader that lost it takes to be replaced (the game
/// service asks it to step down after 10 s), after which the record is delivered.
pub const DELETED_FOR_GOOD: std::time::Duration = std::time::Duration::from_secs(30);

/// Whether the game log's record at stream sequence `seq`, listed as deleted from within the
/// log, has been listed so for [`DELETED_FOR_GOOD`] as this process has seen (since now, the
/// first time it asks). A leader that lost records lists them as deleted too, until it is
/// replaced: every reader of the process (the game service's catch-ups, the broadcast and
/// arbiter services, an export) takes such a record as removed only after that wait, which an
/// operator's removal also costs, once. A process reads one game log.
pub fn deleted_for_good(seq: u64) -> bool {
    static LISTED_SINCE: std::sync::LazyLock<
        std::sync::Mutex<std::collections::BTreeMap<u64, std::time::Instant>>,
    > = std::sync::LazyLock::new(Default::default);
    let now = std::time::Instant::now();
    let mut listed = LISTED_SINCE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let since = *listed.entry(seq).or_insert(now);
    now.duration_since(since) >= DELETED_FOR_GOOD
}

/// Whether `subject` is every message of `stream` (its one configured subject).
fn is_whole_stream(stream: &Stream, subject: &str) -> bool {
    stream.cached_info().config.subjects == [subject]
}

/// An ordered consumer's messages on `subject` from stream sequence `start`.
async fn ordered_from(stream: &Stream, subject: &str, start: u64) -> Result<Messages, LogError> {
    let deliver_policy = if start <= 1 {
        DeliverPolicy::All
    } else {
        DeliverPolicy::ByStartSequence {
            start_sequence: start,
        }
    };
    // A filter that is the stream's one subject filters nothing, but nats-server 2.9 still
    // counts a filtered consumer's pending messages by going through the stream's blocks,
    // again and again as it delivers: a standby instance reading the whole log from behind kept
    // the server at a full core, and the hall went from about 5,400 to 1,300 observations
    // decided per second (docs/ingest-benchmark.md).
    let whole_stream = is_whole_stream(stream, subject);
    let consumer = stream
        .create_consumer(OrderedConfig {
            filter_subject: if whole_stream {
                String::new()
            } else {
                subject.to_owned()
            },
            deliver_policy,
            ..Default::default()
        })
        .await
        .map_err(|e| LogError::Read(e.to_string()))?;
    let messages = consumer
        .messages()
        .await
        .map_err(|e| LogError::Read(e.to_string()))?;
    Ok(Box::pin(messages.map(|message| {
        let message = message.map_err(|e| LogError::Read(e.to_string()))?;
        let info = message
            .info()
            .map_err(|e| LogError::NoPosition(e.to_string()))?;
        Ok(LogMessage {
            stream_seq: info.stream_sequence,
            pending: info.pending,
            subject: message.subject.to_string(),
            payload: message.payload.clone(),
            stored_at: info.published.into(),
            trace: crate::telemetry::context_from_nats(message.headers.as_ref()),
        })
    })))
}

/// Game `game_id`'s records as stored up to stream sequence `up_to` (stream sequence and
/// payload, in order), read one by one from the log's leader. What a reader reads again when a
/// game's records as delivered do not follow on: on nats-server 2.9 a consumer, or a leader
/// newly elected after a node was killed, was seen leaving a record out that the log holds.
pub async fn game_records(
    stream: &Stream,
    game_id: &str,
    up_to: u64,
) -> Result<Vec<(u64, bytes::Bytes)>, LogError> {
    let subject = crate::nats::game_subject(game_id);
    let mut records = Vec::new();
    let mut seq = 1;
    while seq <= up_to {
        let message = crate::nats::next_message(stream, seq, &subject)
            .await
            .map_err(|e| LogError::Read(format!("reading the log of game {game_id} again: {e}")))?;
        let Some(message) = message.filter(|m| m.sequence <= up_to) else {
            break;
        };
        seq = message.sequence.saturating_add(1);
        records.push((message.sequence, message.payload));
    }
    Ok(records)
}

/// A span for folding records whose traces are `traces`: a child of the last record traced (so a
/// move's trace reaches the readers of the log), linked to the others of a batch.
pub fn fold_span<'a>(
    reader: &'static str,
    traces: impl IntoIterator<Item = &'a opentelemetry::Context>,
) -> tracing::Span {
    use opentelemetry::trace::TraceContextExt as _;
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;
    let span = tracing::info_span!("game_log.fold", reader);
    let mut traced = traces
        .into_iter()
        .map(|cx| cx.span().span_context().clone())
        .filter(|span_context| span_context.is_valid())
        .collect::<Vec<_>>();
    if let Some(last) = traced.pop() {
        crate::telemetry::continue_trace(
            &span,
            opentelemetry::Context::new().with_remote_span_context(last),
        );
        for other in traced {
            span.add_link(other);
        }
    }
    span
}

//! The one reader of the game log (`BOARDCAST_GAMES`) that the game service, the broadcast and
//! arbiter services and `boardcast export` share: the messages of a subject in stream order from
//! a sequence on, then live as they are stored.
//!
//! It reads through an ordered consumer: JetStream delivers every message once and in order,
//! and the client recreates the consumer after a gap (a missed heartbeat, a server restart)
//! from the last sequence it delivered, so a reader never skips or repeats a record.

use async_nats::jetstream::{
    consumer::{DeliverPolicy, pull::OrderedConfig},
    stream::Stream,
};
use futures::StreamExt as _;

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
}

/// The messages on `subject` (one game's, or `GAMES_SUBJECTS` for every game) from stream
/// sequence `start` on (1: from the beginning), then live.
pub async fn read_from(
    stream: &Stream,
    subject: &str,
    start: u64,
) -> Result<impl futures::Stream<Item = Result<LogMessage, LogError>> + Send + use<>, LogError> {
    let deliver_policy = if start <= 1 {
        DeliverPolicy::All
    } else {
        DeliverPolicy::ByStartSequence {
            start_sequence: start,
        }
    };
    let consumer = stream
        .create_consumer(OrderedConfig {
            filter_subject: subject.to_owned(),
            deliver_policy,
            ..Default::default()
        })
        .await
        .map_err(|e| LogError::Read(e.to_string()))?;
    let messages = consumer
        .messages()
        .await
        .map_err(|e| LogError::Read(e.to_string()))?;
    Ok(messages.map(|message| {
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
    }))
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

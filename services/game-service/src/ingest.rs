//! Consuming board observations: decode, fold into the board's live game, append, then ack.
//!
//! An observation is acknowledged only after the events it produced are in the game log, so a
//! crash before that means redelivery, and redelivery is harmless: the store catches up with the
//! log before deciding, and the game ignores `device_seq`s it has already applied. A crash between
//! two appends of one decision is completed on redelivery (`Store::complete_last_decision`).
//! Observations that cannot be used go to the dead-letter stream with the reason, and are then
//! acknowledged.
//!
//! # Order across instances
//!
//! All instances share one durable consumer with `max_ack_pending = 1`: JetStream hands out the
//! next observation only when the previous one is acknowledged, so observations are decided one
//! at a time in stream order whichever instance gets them, and a board's observations can never
//! be decided out of order by two instances at once. (nats-server 2.9 has no per-subject limit on
//! pending acks nor pinned consumers; one observation in flight is fast enough for a tournament
//! hall, since deciding one takes one append round trip.) When an instance stalls past `ack_wait`
//! its observation goes to another instance; if the stalled one wakes up, its append conflicts
//! with the log (see `store`), it catches up and finds the observation applied.
//!
//! # Gaps and reordering
//!
//! A board may publish out of order (a gateway re-sending from its outbox) and the log may hold
//! duplicates stored under different message ids. Duplicates are ignored by the aggregate
//! (`device_seq` at or below the last applied). When an observation skips `device_seq`s, the
//! board's later messages in the stream are searched for the missing ones; those found are
//! decided first, in order (their own delivery later is then a duplicate). Missing ones that are
//! not found are reported as a gap in the log; if one arrives later it is reported as too late.

use std::{
    collections::{BTreeMap, HashMap},
    time::Duration,
};

use anyhow::Context as _;
use async_nats::{
    HeaderMap,
    jetstream::{self, AckKind, consumer::pull, message::Message, stream::RawMessageErrorKind},
};
use boardcast_game::{
    Ignored, ObservationOutcome, Rejected, device::Observation, events::game_event::Kind,
};
use boardcast_kit::nats::{
    DEADLETTER_STREAM, INGEST_STREAM, INGEST_SUBJECTS, REASON_HEADER, deadletter_subject,
    observation_subject,
};
use futures::StreamExt;
use prost::Message as _;

use crate::store::{AppendError, Store};

const CONSUMER: &str = "game-service";

pub async fn run(js: jetstream::Context, store: std::sync::Arc<Store>) -> anyhow::Result<()> {
    let stream = js
        .get_stream(INGEST_STREAM)
        .await
        .context("opening the observation stream")?;
    let consumer = stream
        .get_or_create_consumer(
            CONSUMER,
            pull::Config {
                durable_name: Some(CONSUMER.to_owned()),
                filter_subject: INGEST_SUBJECTS.to_owned(),
                ack_policy: jetstream::consumer::AckPolicy::Explicit,
                ack_wait: Duration::from_secs(30),
                // One observation in flight across all instances: see the module comment.
                max_ack_pending: 1,
                ..Default::default()
            },
        )
        .await
        .context("creating the observation consumer")?;
    let mut messages = consumer
        .messages()
        .await
        .context("subscribing to observations")?;
    tracing::info!("consuming observations");
    let mut seen = Seen::default();
    while let Some(message) = messages.next().await {
        let message = match message {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!("observation stream: {e}");
                continue;
            }
        };
        handle(&js, &store, &mut seen, message).await;
    }
    anyhow::bail!("the observation consumer ended")
}

/// The highest `device_seq` this instance has seen per board, to tell gaps from observations it
/// has already passed over (clock ticks, rejected ones), which are not recorded in the log.
#[derive(Default)]
struct Seen(HashMap<String, u64>);

/// At most how many later messages of the same board are searched for missing `device_seq`s.
const LOOKAHEAD: usize = 32;

async fn handle(js: &jetstream::Context, store: &Store, seen: &mut Seen, message: Message) {
    let subject_board = message.subject.split('.').nth(2).map(str::to_owned);
    let observation = match Observation::decode(message.payload.as_ref()) {
        Ok(o) => o,
        Err(e) => {
            return dead_letter(
                js,
                message,
                subject_board.as_deref(),
                &format!("undecodable observation: {e}"),
            )
            .await;
        }
    };
    if subject_board.as_deref() != Some(observation.board_id.as_str()) {
        let reason = format!(
            "observation of board {:?} published on subject {}",
            observation.board_id, message.subject
        );
        return dead_letter(js, message, subject_board.as_deref(), &reason).await;
    }
    let board = observation.board_id.clone();
    let stream_seq = message.info().map(|i| i.stream_sequence).unwrap_or(0);
    let last_applied = store
        .with_board(&board, |g| g.board_seq_accounted())
        .await
        .unwrap_or(0);
    let seen_here = seen.0.get(&board).copied().unwrap_or(0);
    let known = seen_here.max(last_applied);
    if observation.device_seq > known + 1
        && let Err(e) = fill_gap(js, store, seen, &observation, known, stream_seq).await
    {
        // Not acknowledged: decided again later, once the earlier ones can be read.
        tracing::warn!(%board, seq = observation.device_seq, "{e}");
        return nak(message).await;
    }
    match decide(store, &observation).await {
        Ok(None) => {
            let reason = format!("no game is live on board {}", observation.board_id);
            dead_letter(js, message, Some(&observation.board_id), &reason).await
        }
        Ok(Some(Err(rejected))) => {
            seen.note(&board, observation.device_seq);
            dead_letter(
                js,
                message,
                Some(&observation.board_id),
                &rejected.to_string(),
            )
            .await
        }
        Ok(Some(Ok(ObservationOutcome::Events(events)))) => {
            tracing::debug!(%board, seq = observation.device_seq, events = events.len(), "applied");
            seen.note(&board, observation.device_seq);
            ack(message).await
        }
        Ok(Some(Ok(ObservationOutcome::Ignored(Ignored::Duplicate {
            device_seq,
            last_applied,
        })))) => {
            if device_seq == last_applied {
                // Delivered again after its decision was appended, or after only part of it was
                // (a crash between appends): complete it.
                if let Err(e) = complete(store, &observation).await {
                    tracing::warn!(%board, seq = device_seq, "{e}");
                    return nak(message).await;
                }
            } else if device_seq > seen_here {
                tracing::warn!(%board, device_seq, last_applied, "observation arrived too late: a later one of this board was already applied");
            } else {
                tracing::debug!(%board, device_seq, last_applied, "duplicate observation");
            }
            seen.note(&board, observation.device_seq);
            ack(message).await
        }
        Ok(Some(Ok(ObservationOutcome::Ignored(Ignored::EarlierGame {
            device_seq,
            earlier_game_last,
        })))) => {
            tracing::info!(%board, device_seq, earlier_game_last, "observation of the board's previous game, delivered after the next game was set up: ignored");
            seen.note(&board, observation.device_seq);
            ack(message).await
        }
        Ok(Some(Ok(ObservationOutcome::Ignored(why)))) => {
            tracing::debug!(%board, seq = observation.device_seq, ?why, "no change");
            seen.note(&board, observation.device_seq);
            ack(message).await
        }
        Err(e @ (AppendError::Conflict(_) | AppendError::Failed { .. })) => {
            // Not acknowledged: JetStream delivers it again and the fold is retried.
            tracing::warn!(%board, seq = observation.device_seq, "{e}");
            nak(message).await
        }
    }
}

impl Seen {
    fn note(&mut self, board: &str, device_seq: u64) {
        let entry = self.0.entry(board.to_owned()).or_default();
        *entry = (*entry).max(device_seq);
    }
}

type Decision = Result<ObservationOutcome, Rejected>;

async fn decide(store: &Store, observation: &Observation) -> Result<Option<Decision>, AppendError> {
    store
        .decide_on_board(
            &observation.board_id,
            boardcast_kit::now_unix_ms(),
            |game| game.decide_observation(observation),
            |decision| match decision {
                Ok(ObservationOutcome::Events(events)) => events.clone(),
                _ => Vec::new(),
            },
        )
        .await
}

async fn complete(store: &Store, observation: &Observation) -> Result<usize, AppendError> {
    store
        .complete_last_decision(
            &observation.board_id,
            boardcast_kit::now_unix_ms(),
            |event| match &event.kind {
                Some(Kind::ObservationRecorded(recorded)) => recorded
                    .observation
                    .as_ref()
                    .is_some_and(|o| o.device_seq == observation.device_seq),
                _ => false,
            },
            |game| match game.decide_observation(observation) {
                Ok(ObservationOutcome::Events(events)) => events,
                _ => Vec::new(),
            },
        )
        .await
}

/// Decides, in order, the board's observations between `known` and `observation` that were
/// published after it (found later in the stream); reports those that cannot be found.
async fn fill_gap(
    js: &jetstream::Context,
    store: &Store,
    seen: &mut Seen,
    observation: &Observation,
    known: u64,
    stream_seq: u64,
) -> Result<(), String> {
    let board = &observation.board_id;
    let wanted = known + 1..observation.device_seq;
    let mut found: BTreeMap<u64, Observation> = BTreeMap::new();
    if stream_seq > 0 {
        let stream = js
            .get_stream(INGEST_STREAM)
            .await
            .map_err(|e| format!("opening the observation stream: {e}"))?;
        let subject = observation_subject(board);
        let mut next = stream_seq + 1;
        for _ in 0..LOOKAHEAD {
            let message = match stream
                .raw_message_builder()
                .sequence(next)
                .next_by_subject(subject.clone())
                .send()
                .await
            {
                Ok(m) => m,
                Err(e) if e.kind() == RawMessageErrorKind::NoMessageFound => break,
                Err(e) => return Err(format!("looking for earlier observations: {e}")),
            };
            next = message.sequence + 1;
            let Ok(later) = Observation::decode(message.payload.as_ref()) else {
                continue;
            };
            // A board's messages are in order but for the few it re-sent: the search ends at
            // the first one that comes after this observation.
            if later.device_seq > observation.device_seq {
                break;
            }
            if wanted.contains(&later.device_seq) && later.board_id == *board {
                found.insert(later.device_seq, later);
                if found.len() as u64 == wanted.end - wanted.start {
                    break;
                }
            }
        }
    }
    let missing: Vec<u64> = wanted.clone().filter(|s| !found.contains_key(s)).collect();
    if let (Some(first), Some(last)) = (missing.first(), missing.last()) {
        // With several instances, the missing ones may be clock ticks another instance passed
        // over (ticks are not recorded in the log).
        tracing::warn!(%board, from = first, to = last, count = missing.len(), before = observation.device_seq, "gap in the board's observations: not received (yet)");
    }
    for (device_seq, earlier) in found {
        tracing::info!(%board, device_seq, before = observation.device_seq, "deciding an observation that was published out of order");
        match decide(store, &earlier).await {
            Ok(_) => seen.note(board, device_seq),
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(())
}

async fn nak(message: Message) {
    if let Err(e) = message
        .ack_with(AckKind::Nak(Some(Duration::from_millis(500))))
        .await
    {
        tracing::warn!("negative acknowledgement failed: {e}");
    }
}

async fn ack(message: Message) {
    if let Err(e) = message.ack().await {
        tracing::warn!("acknowledging an observation failed (it will be delivered again): {e}");
    }
}

/// Keeps an unusable observation, with the reason, and acknowledges it.
async fn dead_letter(js: &jetstream::Context, message: Message, board: Option<&str>, reason: &str) {
    tracing::warn!(subject = %message.subject, "rejected observation: {reason}");
    let mut headers = HeaderMap::new();
    headers.insert(REASON_HEADER, reason);
    headers.insert("Boardcast-Original-Subject", message.subject.as_str());
    let kept = match js
        .publish_with_headers(deadletter_subject(board), headers, message.payload.clone())
        .await
    {
        Ok(ack) => ack.await.map(|_| ()).map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    match kept {
        Ok(()) => ack(message).await,
        Err(e) => {
            tracing::error!(
                "cannot keep the rejected observation in {DEADLETTER_STREAM}: {e}; it will be delivered again"
            );
            let _ = message
                .ack_with(AckKind::Nak(Some(Duration::from_secs(1))))
                .await;
        }
    }
}

//! Consuming board observations: decode, fold into the board's live game, append, then ack.
//!
//! An observation is acknowledged only after the events it produced are in the game log, so a
//! crash before that means redelivery, and redelivery is harmless: the message id deduplicates
//! appends and the game ignores `device_seq`s it has already applied. Observations that cannot be
//! used go to the dead-letter stream with the reason, and are then acknowledged.

use std::time::Duration;

use anyhow::Context as _;
use async_nats::{
    HeaderMap,
    jetstream::{self, AckKind, consumer::pull, message::Message},
};
use boardcast_game::{ObservationOutcome, device::Observation};
use boardcast_kit::nats::{
    DEADLETTER_STREAM, INGEST_STREAM, INGEST_SUBJECTS, REASON_HEADER, deadletter_subject,
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
    while let Some(message) = messages.next().await {
        let message = match message {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!("observation stream: {e}");
                continue;
            }
        };
        handle(&js, &store, message).await;
    }
    anyhow::bail!("the observation consumer ended")
}

async fn handle(js: &jetstream::Context, store: &Store, message: Message) {
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
    let received = boardcast_kit::now_unix_ms();
    let outcome = store
        .decide_on_board(
            &observation.board_id,
            received,
            |game| game.decide_observation(&observation),
            |decision| match decision {
                Ok(ObservationOutcome::Events(events)) => events.clone(),
                _ => Vec::new(),
            },
        )
        .await;
    match outcome {
        Ok(None) => {
            let reason = format!("no game is live on board {}", observation.board_id);
            dead_letter(js, message, Some(&observation.board_id), &reason).await
        }
        Ok(Some(Err(rejected))) => {
            dead_letter(
                js,
                message,
                Some(&observation.board_id),
                &rejected.to_string(),
            )
            .await
        }
        Ok(Some(Ok(ObservationOutcome::Events(events)))) => {
            tracing::debug!(board = %observation.board_id, seq = observation.device_seq, events = events.len(), "applied");
            ack(message).await
        }
        Ok(Some(Ok(ObservationOutcome::Ignored(why)))) => {
            tracing::debug!(board = %observation.board_id, seq = observation.device_seq, ?why, "no change");
            ack(message).await
        }
        Err(e @ (AppendError::Conflict(_) | AppendError::Failed { .. })) => {
            // Not acknowledged: JetStream delivers it again and the fold is retried.
            tracing::warn!(board = %observation.board_id, seq = observation.device_seq, "{e}");
            if let Err(e) = message
                .ack_with(AckKind::Nak(Some(Duration::from_millis(500))))
                .await
            {
                tracing::warn!("negative acknowledgement failed: {e}");
            }
        }
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

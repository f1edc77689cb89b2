//! Publishing the outbox to JetStream, oldest first, until it is empty; then waiting for more.

use std::{sync::Arc, time::Duration};

use async_nats::jetstream::{self, message::PublishMessage};
use boardcast_kit::nats::{observation_message_id, observation_subject};
use prost::Message as _;
use tokio::sync::Notify;

use crate::outbox::{Outbox, OutboxError};

/// Observations published per round trip; the acknowledgements are awaited in order.
const BATCH: usize = 256;

/// Publishes until `stop` is notified. A publish that fails (NATS unreachable, timeout) is
/// retried with the same message id (the outbox's nonce for it, also after a restart), so
/// JetStream stores it once however often it is sent within its duplicate window; the
/// outbox is emptied only up to the first observation that was not acknowledged, so per-board
/// order is kept.
pub async fn run(
    outbox: Arc<Outbox>,
    js: jetstream::Context,
    wake: Arc<Notify>,
    stop: Arc<Notify>,
) -> Result<(), OutboxError> {
    let mut backoff = Duration::from_millis(100);
    loop {
        let batch = {
            let outbox = outbox.clone();
            tokio::task::spawn_blocking(move || outbox.peek(BATCH))
                .await
                .map_err(|e| OutboxError::Storage(e.to_string()))??
        };
        if batch.is_empty() {
            tokio::select! {
                _ = wake.notified() => continue,
                _ = tokio::time::sleep(Duration::from_secs(1)) => continue,
                _ = stop.notified() => return Ok(()),
            }
        }
        let mut in_flight = Vec::with_capacity(batch.len());
        for pending in &batch {
            let o = &pending.observation;
            // Each observation's trace starts here; the game service continues it.
            let span = tracing::info_span!(
                "observation.publish",
                board = %o.board_id,
                device_seq = o.device_seq
            );
            let mut headers = async_nats::HeaderMap::new();
            span.in_scope(|| boardcast_kit::telemetry::inject_into_nats(&mut headers));
            let message = PublishMessage::build()
                .payload(o.encode_to_vec().into())
                .headers(headers)
                .message_id(observation_message_id(
                    &o.board_id,
                    o.device_seq,
                    pending.message_nonce,
                ));
            match js
                .send_publish(observation_subject(&o.board_id), message)
                .await
            {
                // The span lasts until NATS acknowledges the observation.
                Ok(ack) => in_flight.push((pending.position, ack, span)),
                Err(e) => {
                    tracing::warn!("publishing observations: {e}");
                    break;
                }
            }
        }
        let mut acknowledged = Vec::with_capacity(in_flight.len());
        let mut failed = in_flight.len() < batch.len();
        for (position, ack, _span) in in_flight {
            match ack.await {
                Ok(_) => acknowledged.push(position),
                Err(e) => {
                    tracing::warn!("observation not acknowledged, will resend: {e}");
                    failed = true;
                    break;
                }
            }
        }
        let count = acknowledged.len();
        {
            let outbox = outbox.clone();
            tokio::task::spawn_blocking(move || outbox.remove(&acknowledged))
                .await
                .map_err(|e| OutboxError::Storage(e.to_string()))??;
        }
        tracing::debug!(count, "observations published");
        if failed {
            tokio::select! {
                _ = tokio::time::sleep(backoff) => {}
                _ = stop.notified() => return Ok(()),
            }
            backoff = (backoff * 2).min(Duration::from_secs(2));
        } else {
            backoff = Duration::from_millis(100);
        }
    }
}

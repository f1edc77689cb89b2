//! Taking observations from a source into the outbox.

use std::sync::Arc;

use boardcast_schema::device::v1::{Observation, SourceKind, observation::Kind};
use tokio::sync::Notify;

use crate::outbox::{Outbox, OutboxError};

/// Stores observations of one source in the outbox and wakes the publisher.
#[derive(Clone)]
pub struct Recorder {
    outbox: Arc<Outbox>,
    wake: Arc<Notify>,
    source: SourceKind,
}

impl Recorder {
    pub fn new(outbox: Arc<Outbox>, wake: Arc<Notify>, source: SourceKind) -> Self {
        Recorder {
            outbox,
            wake,
            source,
        }
    }

    /// Numbers and stores what a board reported at `device_time_unix_ms`; returns once it is on
    /// disk. The receive time is now.
    pub async fn record(
        &self,
        board_id: &str,
        device_time_unix_ms: i64,
        kinds: Vec<Kind>,
    ) -> Result<Vec<Observation>, OutboxError> {
        if kinds.is_empty() {
            return Ok(Vec::new());
        }
        let received = boardcast_kit::now_unix_ms();
        let observations = kinds
            .into_iter()
            .map(|kind| Observation {
                board_id: board_id.to_owned(),
                device_seq: 0,
                device_time_unix_ms,
                receive_time_unix_ms: received,
                source: self.source as i32,
                kind: Some(kind),
            })
            .collect();
        let outbox = self.outbox.clone();
        let stored = tokio::task::spawn_blocking(move || outbox.append(observations))
            .await
            .map_err(|e| OutboxError::Storage(e.to_string()))??;
        self.wake.notify_one();
        Ok(stored)
    }
}

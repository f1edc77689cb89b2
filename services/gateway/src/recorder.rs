//! Taking observations from a source into the outbox.

use std::{
    collections::HashSet,
    sync::{Arc, Mutex},
    time::Duration,
};

use async_nats::jetstream;
use boardcast_schema::device::v1::{Observation, SourceKind, observation::Kind};
use tokio::sync::Notify;

use crate::outbox::{Outbox, OutboxError};

/// How long the first observation of a board waits for JetStream to say where the board's
/// numbering stands, before numbering from the outbox alone.
const NUMBERING_CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// Stores observations of one source in the outbox and wakes the publisher.
#[derive(Clone)]
pub struct Recorder {
    outbox: Arc<Outbox>,
    wake: Arc<Notify>,
    source: SourceKind,
    /// Where each board's numbering is checked the first time this process sees the board.
    js: Option<jetstream::Context>,
    checked: Arc<Mutex<HashSet<String>>>,
}

impl Recorder {
    pub fn new(outbox: Arc<Outbox>, wake: Arc<Notify>, source: SourceKind) -> Self {
        Recorder {
            outbox,
            wake,
            source,
            js: None,
            checked: Arc::default(),
        }
    }

    /// Before numbering a board's first observation, continues the board's numbering from the
    /// last `device_seq` JetStream holds when that is further than the outbox (a new outbox
    /// file, another machine): otherwise the game service would take the observations for
    /// duplicates of earlier ones.
    pub fn continuing_from(mut self, js: jetstream::Context) -> Self {
        self.js = Some(js);
        self
    }

    async fn check_numbering(&self, board_id: &str) -> Result<(), OutboxError> {
        let Some(js) = &self.js else {
            return Ok(());
        };
        let first_time = self
            .checked
            .lock()
            .map_err(|_| OutboxError::Storage("a recorder thread panicked".into()))?
            .insert(board_id.to_owned());
        if first_time {
            continue_board_numbering(&self.outbox, js, board_id).await?;
        }
        Ok(())
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
        self.check_numbering(board_id).await?;
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

/// Continues the board's numbering in `outbox` from the last `device_seq` JetStream holds, when
/// that is further (see [`Recorder::continuing_from`]). When JetStream cannot say (NATS down),
/// the outbox numbers on alone, with a warning.
pub async fn continue_board_numbering(
    outbox: &Arc<Outbox>,
    js: &jetstream::Context,
    board_id: &str,
) -> Result<(), OutboxError> {
    let last = tokio::time::timeout(
        NUMBERING_CHECK_TIMEOUT,
        boardcast_kit::nats::last_board_seq(js, board_id, boardcast_kit::nats::BoardRead::OwnBoard),
    )
    .await;
    match last {
        Ok(Ok(last)) => {
            let outbox = outbox.clone();
            let board = board_id.to_owned();
            let now = tokio::task::spawn_blocking(move || outbox.continue_after(&board, last))
                .await
                .map_err(|e| OutboxError::Storage(e.to_string()))??;
            tracing::info!(
                board = board_id,
                last_device_seq = now,
                "numbering the board's observations on"
            );
        }
        Ok(Err(e)) => tracing::warn!(
            board = board_id,
            "cannot check the board's last device_seq in JetStream ({e:#}); numbering on from this outbox"
        ),
        Err(_) => tracing::warn!(
            board = board_id,
            "JetStream did not say where the board's numbering stands within {NUMBERING_CHECK_TIMEOUT:?}; numbering on from this outbox"
        ),
    }
    Ok(())
}

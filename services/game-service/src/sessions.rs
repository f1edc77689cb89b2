//! Sessions ended before they expire, kept on NATS (stream `BOARDCAST_SESSIONS`) so that every
//! instance refuses them within moments: a logout on one instance, and a password change, a
//! disabled user or `boardcast users end-sessions` in any instance's copy of the users file.
//!
//! Every instance reads the stream to its end every `FOLLOW_EVERY` and publishes the endings
//! its users file holds that the stream does not yet, so the first instance to see a changed
//! file tells all the others.

use std::{sync::Arc, time::Duration};

use anyhow::Context as _;
use async_nats::jetstream;
use boardcast_access::SessionEnd;
use boardcast_kit::nats::{SESSIONS_STREAM, SESSIONS_SUBJECTS, next_message, session_end_subject};
use tokio::sync::Mutex;
use tonic::Status;

use crate::auth::Authenticator;

/// How often the stream is read and the users file's endings published.
pub const FOLLOW_EVERY: Duration = Duration::from_millis(250);

pub struct SessionLog {
    js: jetstream::Context,
    /// The next stream sequence to read; held while reading so that reads never interleave.
    next_seq: Mutex<u64>,
    /// Where the endings take effect.
    auth: Arc<Authenticator>,
}

impl SessionLog {
    /// Reads every ending recorded so far: a session ended elsewhere must not work here because
    /// this instance has just started.
    pub async fn open(js: jetstream::Context, auth: Arc<Authenticator>) -> anyhow::Result<Self> {
        let log = SessionLog {
            js,
            next_seq: Mutex::new(1),
            auth,
        };
        log.catch_up().await?;
        Ok(log)
    }

    /// Follows the stream and publishes the users file's endings, every `FOLLOW_EVERY`.
    pub async fn follow(&self) {
        let mut tick = tokio::time::interval(FOLLOW_EVERY);
        loop {
            tick.tick().await;
            if let Err(e) = self.catch_up().await {
                tracing::warn!("following the ended sessions: {e:#}");
                continue;
            }
            for end in self.auth.endings_of_the_users_file() {
                if let Err(e) = self.end(end).await {
                    tracing::warn!("recording the users file's ended sessions: {e}");
                }
            }
        }
    }

    /// Takes in the endings recorded since the last call (by any instance).
    pub async fn catch_up(&self) -> anyhow::Result<()> {
        let mut next_seq = self.next_seq.lock().await;
        let stream = self
            .js
            .get_stream_no_info(SESSIONS_STREAM)
            .await
            .context("opening the sessions stream")?;
        while let Some(message) = next_message(&stream, *next_seq, SESSIONS_SUBJECTS)
            .await
            .context("reading the ended sessions")?
        {
            *next_seq = message.sequence.saturating_add(1);
            match serde_json::from_slice::<SessionEnd>(&message.payload) {
                Ok(end) => self.auth.record_session_end(end),
                // Only this service writes the stream; a record it cannot read is reported.
                Err(e) => tracing::error!(
                    seq = message.sequence,
                    "an ended session's record cannot be read and is left out: {e}"
                ),
            }
        }
        self.auth.forget_expired_endings();
        Ok(())
    }

    /// Records an ending, and takes it in here at once.
    pub async fn end(&self, end: SessionEnd) -> Result<(), Status> {
        let unavailable = |e: &dyn std::fmt::Display| {
            Status::unavailable(format!(
                "the session's end could not be recorded on NATS (try again): {e}"
            ))
        };
        let payload = serde_json::to_vec(&end).map_err(|e| Status::internal(e.to_string()))?;
        self.js
            .publish(session_end_subject(&end), payload.into())
            .await
            .map_err(|e| unavailable(&e))?
            .await
            .map_err(|e| unavailable(&e))?;
        self.auth.record_session_end(end);
        Ok(())
    }
}

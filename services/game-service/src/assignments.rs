//! The chief arbiters' assignments of arbiters to boards, kept on NATS (stream
//! `BOARDCAST_ASSIGNMENTS`) so that every instance of the service applies the same ones, in the
//! stream's order, and so that who assigned whom, when, stays on record.
//!
//! An assignment is published and then read back with everything before it: an instance's view
//! is always a prefix of the stream, never its own order of events.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::Context as _;
use async_nats::jetstream;
use boardcast_access::Assignment;
use boardcast_kit::nats::{
    ASSIGNMENTS_STREAM, ASSIGNMENTS_SUBJECTS, assignment_subject, next_message,
};
use boardcast_schema::game::v1::ArbiterAssignment;
use prost::Message as _;
use tokio::sync::Mutex;
use tonic::Status;

use crate::auth::Authenticator;

pub struct AssignmentLog {
    js: jetstream::Context,
    /// The next stream sequence to read; held while reading so that reads never interleave.
    next_seq: Mutex<u64>,
    /// Where the assignments take effect.
    auth: Arc<Authenticator>,
    /// When the stream was last read to its end.
    caught_up_at: std::sync::Mutex<Instant>,
}

/// How old the last complete read of the assignments may be for rulings that rest on them: a
/// board taken from an arbiter must not stay theirs because NATS cannot be read.
const FRESH_FOR: Duration = Duration::from_secs(5);

impl AssignmentLog {
    /// Reads every assignment recorded so far: an arbiter whose board was taken away must not
    /// rule on it because this instance has just started.
    pub async fn open(js: jetstream::Context, auth: Arc<Authenticator>) -> anyhow::Result<Self> {
        let log = AssignmentLog {
            js,
            next_seq: Mutex::new(1),
            auth,
            caught_up_at: std::sync::Mutex::new(Instant::now()),
        };
        log.catch_up().await?;
        Ok(log)
    }

    /// Takes in the assignments recorded since the last call (by any instance).
    pub async fn catch_up(&self) -> anyhow::Result<()> {
        let mut next_seq = self.next_seq.lock().await;
        let stream = self
            .js
            .get_stream(ASSIGNMENTS_STREAM)
            .await
            .context("opening the assignments stream")?;
        while let Some(message) = next_message(&stream, *next_seq, ASSIGNMENTS_SUBJECTS)
            .await
            .context("reading the assignments")?
        {
            *next_seq = message.sequence.saturating_add(1);
            match ArbiterAssignment::decode(message.payload.as_ref()) {
                Ok(recorded) => self.auth.record_assignment(from_proto(recorded)),
                // Only this service writes the stream; a record it cannot read is reported, not
                // guessed at, and the ones after it still count.
                Err(e) => tracing::error!(
                    seq = message.sequence,
                    "an assignment record cannot be read and is left out: {e}"
                ),
            }
        }
        if let Ok(mut at) = self.caught_up_at.lock() {
            *at = Instant::now();
        }
        Ok(())
    }

    /// Whether the assignments in force are known: read to the stream's end a moment ago.
    pub fn fresh(&self) -> bool {
        self.caught_up_at
            .lock()
            .map(|at| at.elapsed() <= FRESH_FOR)
            .unwrap_or(false)
    }

    /// Records an assignment and takes it in with whatever other instances recorded before it;
    /// answers with the assignment recorded under its request id. A retry (the same request id,
    /// however late) records nothing again: the same decision is answered with what was
    /// recorded, another one under that id is ALREADY_EXISTS.
    pub async fn record(&self, assignment: &Assignment) -> Result<Assignment, Status> {
        let unavailable = |e: &dyn std::fmt::Display| {
            Status::unavailable(format!(
                "the assignment could not be recorded on NATS (send it again with the same \
                 request id): {e}"
            ))
        };
        self.catch_up()
            .await
            .map_err(|e| unavailable(&format!("{e:#}")))?;
        if let Some(recorded) = self.recorded_under(assignment)? {
            return Ok(recorded);
        }
        self.publish(&to_proto(assignment)).await?;
        self.catch_up()
            .await
            .map_err(|e| unavailable(&format!("{e:#}")))?;
        self.recorded_under(assignment)?
            .ok_or_else(|| unavailable(&"it is not in the stream after it was stored"))
    }

    /// The assignment already recorded under `assignment`'s request id, if any.
    fn recorded_under(&self, assignment: &Assignment) -> Result<Option<Assignment>, Status> {
        match self.auth.assignment_under(&assignment.request_id) {
            Some(recorded) if recorded.same_decision(assignment) => Ok(Some(recorded)),
            Some(recorded) => Err(Status::already_exists(format!(
                "request id {} already assigned {} to boards {:?} of {}: use a new request id \
                 for a new assignment",
                assignment.request_id, recorded.user, recorded.boards, recorded.tournament
            ))),
            None => Ok(None),
        }
    }

    async fn publish(&self, assignment: &ArbiterAssignment) -> Result<(), Status> {
        let mut headers = async_nats::HeaderMap::new();
        headers.insert(
            "Nats-Msg-Id",
            format!("assign:{}", assignment.request_id).as_str(),
        );
        let unavailable = |e: &dyn std::fmt::Display| {
            Status::unavailable(format!(
                "the assignment could not be recorded on NATS (send it again with the same \
                 request id): {e}"
            ))
        };
        self.js
            .publish_with_headers(
                assignment_subject(&assignment.tournament_id),
                headers,
                assignment.encode_to_vec().into(),
            )
            .await
            .map_err(|e| unavailable(&e))?
            .await
            .map_err(|e| unavailable(&e))?;
        Ok(())
    }
}

pub fn from_proto(recorded: ArbiterAssignment) -> Assignment {
    Assignment {
        tournament: recorded.tournament_id,
        user: recorded.user,
        boards: recorded.boards,
        by: recorded.assigned_by,
        at_unix_ms: recorded.assigned_unix_ms,
        request_id: recorded.request_id,
    }
}

pub fn to_proto(assignment: &Assignment) -> ArbiterAssignment {
    ArbiterAssignment {
        tournament_id: assignment.tournament.clone(),
        user: assignment.user.clone(),
        boards: assignment.boards.clone(),
        assigned_by: assignment.by.clone(),
        assigned_unix_ms: assignment.at_unix_ms,
        request_id: assignment.request_id.clone(),
    }
}

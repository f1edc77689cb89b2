//! Observations given up: the hole recorded in the board's game first, then the observation
//! kept in the dead-letter stream with the reason.

use std::time::Duration;

use async_nats::{
    HeaderMap,
    jetstream::{self, AckKind, message::Message},
};
use boardcast_game::device::Observation;
use boardcast_kit::nats::{
    DEADLETTER_STREAM, ORIGINAL_BYTES_HEADER, ORIGINAL_SEQUENCE_HEADER, ORIGINAL_STREAM_HEADER,
    ORIGINAL_SUBJECT_HEADER, REASON_HEADER, deadletter_subject,
};

use super::{ack, nak};
use crate::store::{AppendError, Store};

/// Records in the game live on its board that `observation` is unusable, and why: a hole in the
/// board's record (nothing when its number is accounted for already).
pub(super) async fn record_unusable(
    store: &Store,
    observation: &Observation,
    reason: &str,
) -> Result<(), AppendError> {
    store
        .decide_on_board(
            &observation.board_id,
            boardcast_kit::now_unix_ms(),
            std::time::Instant::now(),
            |game| {
                game.decide_unusable_observation(
                    observation.device_seq,
                    observation.device_time_unix_ms,
                    reason,
                )
            },
            Vec::clone,
        )
        .await
        .map(|_| ())
}

/// Gives an observation up: the hole in its board's record first (when a game is in progress and
/// it is not accounted for already), then the observation to the dead-letter stream with the
/// reason. If the hole cannot be recorded the observation is delivered again.
pub(super) async fn give_up(
    js: &jetstream::Context,
    store: &Store,
    message: &Message,
    observation: &Observation,
    reason: &str,
) {
    match record_unusable(store, observation, reason).await {
        Ok(_) => dead_letter(js, message, Some(&observation.board_id), reason).await,
        // Nothing can be appended to the game (its log forks, or it cannot be folded here): the
        // observation goes without its hole, rather than holding its partition up for good.
        Err(
            e @ (AppendError::Failed { .. }
            | AppendError::Unfoldable { .. }
            | AppendError::LogBroken { .. }),
        ) => {
            tracing::error!(board = %observation.board_id, seq = observation.device_seq, "the hole cannot be recorded: {e}");
            let reason = format!("{reason}; the hole could not be recorded in the game's log: {e}");
            dead_letter(js, message, Some(&observation.board_id), &reason).await
        }
        Err(e) => {
            tracing::warn!(board = %observation.board_id, seq = observation.device_seq, "recording the hole: {e}");
            nak(message).await
        }
    }
}

/// At most how much of an unusable observation its dead letter keeps. Anything longer was
/// refused for its size (no observation used is longer), and an observation near the server's
/// `max_payload` would not fit a message any more with the dead letter's headers: it could never
/// be kept, and its partition would wait on it for ever. Its start tells what it was; the whole
/// of it stays in its observation stream, at the sequence the headers name.
pub(super) const DEAD_LETTER_PAYLOAD_BYTES: usize = boardcast_game::MAX_OBSERVATION_BYTES;

/// Keeps an unusable observation, with the reason, and acknowledges it.
pub(super) async fn dead_letter(
    js: &jetstream::Context,
    message: &Message,
    board: Option<&str>,
    reason: &str,
) {
    tracing::warn!(subject = %message.subject, "rejected observation: {reason}");
    let (headers, payload) = dead_letter_of(message, reason);
    let kept = match js
        .publish_with_headers(deadletter_subject(board), headers, payload)
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

/// The dead letter of `message`: its reason, where the observation is kept whole, and the
/// observation, cut to [`DEAD_LETTER_PAYLOAD_BYTES`].
pub(super) fn dead_letter_of(message: &Message, reason: &str) -> (HeaderMap, bytes::Bytes) {
    let mut headers = HeaderMap::new();
    headers.insert(REASON_HEADER, header_value(reason).as_str());
    headers.insert(ORIGINAL_SUBJECT_HEADER, message.subject.as_str());
    if let Ok(info) = message.info() {
        headers.insert(ORIGINAL_STREAM_HEADER, info.stream);
        headers.insert(
            ORIGINAL_SEQUENCE_HEADER,
            info.stream_sequence.to_string().as_str(),
        );
    }
    let mut payload = message.payload.clone();
    if payload.len() > DEAD_LETTER_PAYLOAD_BYTES {
        headers.insert(ORIGINAL_BYTES_HEADER, payload.len().to_string().as_str());
        payload.truncate(DEAD_LETTER_PAYLOAD_BYTES);
    }
    (headers, payload)
}

/// At most how long a dead letter's reason header is.
pub(super) const REASON_HEADER_BYTES: usize = 2_000;

/// `text` as a NATS header value: on one line (a header cannot hold a line break, and a panic's
/// message often has several), and not longer than `REASON_HEADER_BYTES`.
pub(super) fn header_value(text: &str) -> String {
    let one_line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    boardcast_kit::cut_to(one_line, REASON_HEADER_BYTES)
}

#[cfg(test)]
mod tests {
    use boardcast_kit::panic_text;

    use super::*;

    #[test]
    fn a_reason_with_several_lines_makes_a_header() {
        let caught = std::panic::catch_unwind(|| assert_eq!(1 + 1, 3)).expect_err("it panics");
        let reason = format!(
            "handling it failed unexpectedly (a bug): {}",
            panic_text(caught.as_ref())
        );
        assert!(reason.contains('\n'), "{reason:?}");
        let mut headers = HeaderMap::new();
        headers.insert(REASON_HEADER, header_value(&reason).as_str());
        let kept = headers.get(REASON_HEADER).map(|v| v.as_str().to_owned());
        assert!(kept.is_some_and(|v| v.contains("left: 2") && v.contains("right: 3")));
        assert!(header_value(&"x".repeat(5_000)).len() <= REASON_HEADER_BYTES);
    }
}

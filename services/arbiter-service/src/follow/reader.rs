//! Following the game log over NATS: the one log reader from the first record not folded, the
//! games whose log does not follow on read again until mended, and waiting for the stream.

use std::{sync::Arc, time::Duration};

use async_nats::jetstream;
use boardcast_kit::game_log;
use boardcast_kit::nats::{GAMES_STREAM, GAMES_SUBJECTS, game_subject};
use futures::StreamExt as _;

use super::{FollowStatus, Games};

/// Reads the damaged games' logs again and folds afresh those an operator mended (`boardcast
/// fork keep`): a game that gets no further record would otherwise stay shown damaged. Those
/// that still do not follow on are left as they are (folding them again would announce their
/// alerts again).
pub(super) async fn show_mended(stream: &jetstream::stream::Stream, games: &Games) {
    let (damaged, trusted) = games.damaged();
    let up_to = games.last_stream_seq();
    for game_id in damaged {
        match game_log::mended_records(stream, &game_id, up_to, &trusted).await {
            Ok(Some(records)) => {
                tracing::info!(game = %game_id, up_to, "the game's log was mended: shown as it holds it");
                games.fold_mended(&game_subject(&game_id), &records);
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(game = %game_id, "{e}; trying again later"),
        }
    }
}

/// Waits until the game log's stream exists. This service never creates it: it may lack the
/// right to, and a stream created here with the wrong settings would be worse than waiting.
pub(super) async fn wait_for_stream(
    js: &jetstream::Context,
    games: &Games,
) -> jetstream::stream::Stream {
    let mut waited = 0u32;
    loop {
        match js.get_stream(GAMES_STREAM).await {
            Ok(stream) => {
                if waited > 0 {
                    tracing::info!("the game log stream {GAMES_STREAM} exists now: following it");
                }
                return stream;
            }
            Err(e) => {
                let reason = format!(
                    "waiting for the JetStream stream {GAMES_STREAM} (the game log) to exist; \
                     the game service creates it, this service never does ({e})"
                );
                // Said once, then every minute or so: a service started before the game service
                // is normal.
                if waited.is_multiple_of(30) {
                    tracing::warn!("{reason}");
                }
                games.set_status(FollowStatus::WaitingForStream(reason));
                waited += 1;
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        }
    }
}

/// Follows the game log for as long as the service runs, resuming after the last folded record
/// whenever the consumer has to be made again.
pub async fn follow(js: jetstream::Context, games: Arc<Games>) {
    loop {
        let stream = wait_for_stream(&js, &games).await;
        if let Err(e) = follow_stream(&stream, &games).await {
            tracing::warn!("following the game log: {e:#}; resuming in a second");
        }
        games.set_status(FollowStatus::Connecting);
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

pub(super) async fn follow_stream(
    stream: &jetstream::stream::Stream,
    games: &Games,
) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let start = games.last_stream_seq() + 1;
    let messages = game_log::read_from(stream, GAMES_SUBJECTS, start)
        .await
        .context("creating a consumer of the game log")?;
    let mut messages = std::pin::pin!(messages);
    games.set_status(FollowStatus::Following);
    let mut caught_up = false;
    let mut errors_in_a_row = 0;
    let mut mended_check = tokio::time::interval(game_log::MENDED_CHECK);
    mended_check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        // (The log's reader keeps what it was reading when the timer comes first.)
        let message = tokio::select! {
            next = messages.next() => match next {
                Some(message) => message,
                None => break,
            },
            _ = mended_check.tick() => {
                show_mended(stream, games).await;
                continue;
            }
        };
        let message = match message {
            Ok(m) => m,
            Err(e @ game_log::LogError::NoPosition(_)) => {
                // A message was read: NATS itself answers.
                errors_in_a_row = 0;
                tracing::error!("{e}");
                continue;
            }
            Err(e) => {
                errors_in_a_row += 1;
                if errors_in_a_row >= 10 {
                    anyhow::bail!("ten errors in a row, the last: {e}");
                }
                tracing::warn!("game log: {e}");
                continue;
            }
        };
        errors_in_a_row = 0;
        let (stream_seq, pending) = (message.stream_seq, message.pending);
        // Traced and timed live only (see `metrics`): a span for each record of the whole log
        // at start would flood the collector.
        if crate::metrics::is_live() {
            game_log::fold_span("arbiter", [&message.trace])
                .in_scope(|| games.fold_message(stream_seq, &message.subject, &message.payload));
            crate::metrics::alerts_after(message.stored_at);
        } else {
            games.fold_message(stream_seq, &message.subject, &message.payload);
        }
        if !caught_up && pending == 0 {
            caught_up = true;
            crate::metrics::caught_up();
            tracing::info!(
                games = games.game_count(),
                stream_seq,
                "the game log is folded; following it live"
            );
        }
    }
    anyhow::bail!("the game log consumer ended")
}

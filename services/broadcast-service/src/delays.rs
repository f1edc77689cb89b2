//! The broadcast delays that operators and chief arbiters set through the game service
//! (`SetBroadcastDelay`), read from NATS (stream `BOARDCAST_DELAYS`). They take precedence over
//! the delays in this service's configuration for the same tournament or round; the latest for
//! a tournament or round is in force. Only one set by someone who may lower a delay (a chief
//! arbiter: `may_lower`) goes below the delay in force; another only raises it.
//!
//! All of them are read before anything is released, so that a restart never shows a round under
//! a shorter delay than the one set.

use std::{sync::Arc, time::Duration};

use anyhow::Context as _;
use async_nats::jetstream::{self, consumer::DeliverPolicy, consumer::pull::OrderedConfig};
use boardcast_feeds::Delays;
use boardcast_game::events::BroadcastDelay;
use boardcast_kit::nats::{DELAYS_STREAM, DELAYS_SUBJECTS};
use futures::StreamExt as _;
use prost::Message as _;

use crate::projection::Projection;

/// The delays in force: the configured ones with the recorded ones on top.
#[derive(Debug, Clone, Default)]
pub struct DelaySources {
    pub configured: Delays,
    pub recorded: Vec<BroadcastDelay>,
}

impl DelaySources {
    pub fn effective(&self) -> Delays {
        let mut delays = self.configured.clone();
        for recorded in &self.recorded {
            let in_force = delays.delay_ms(&boardcast_feeds::RoundKey {
                tournament_id: recorded.tournament_id.clone(),
                round: recorded.round,
            });
            let delay_ms = if recorded.may_lower {
                recorded.delay_ms
            } else {
                recorded.delay_ms.max(in_force)
            };
            if let Err(e) = delays.set(&recorded.tournament_id, recorded.round, delay_ms) {
                tracing::error!("a recorded delay is not applied: {e}");
            }
        }
        delays
    }
}

/// Reads every recorded delay up to the stream's end, and the sequence after the last.
pub async fn read_all(js: &jetstream::Context) -> anyhow::Result<(Vec<BroadcastDelay>, u64)> {
    let mut stream = js
        .get_stream(DELAYS_STREAM)
        .await
        .context("opening the broadcast delays")?;
    let last = stream
        .info()
        .await
        .context("reading the broadcast delays' position")?
        .state
        .last_sequence;
    let mut delays = Vec::new();
    if last == 0 {
        return Ok((delays, 1));
    }
    let consumer = stream
        .create_consumer(OrderedConfig {
            filter_subject: DELAYS_SUBJECTS.to_owned(),
            deliver_policy: DeliverPolicy::All,
            ..Default::default()
        })
        .await
        .context("reading the broadcast delays")?;
    let mut messages = consumer.messages().await?;
    loop {
        let message = tokio::time::timeout(Duration::from_secs(30), messages.next())
            .await
            .context("reading the broadcast delays: no answer from NATS")?
            .context("the broadcast delays ended early")?
            .map_err(|e| anyhow::anyhow!("reading the broadcast delays: {e}"))?;
        let seq = message
            .info()
            .map_err(|e| anyhow::anyhow!("a delay without its position: {e}"))?
            .stream_sequence;
        match BroadcastDelay::decode(message.payload.as_ref()) {
            Ok(delay) => delays.push(delay),
            Err(e) => tracing::error!(stream_seq = seq, "an unreadable broadcast delay: {e}"),
        }
        if seq >= last {
            return Ok((delays, seq + 1));
        }
    }
}

/// Applies the delays recorded from `next_seq` on, for as long as the service runs.
pub async fn follow(
    js: jetstream::Context,
    projection: Arc<Projection>,
    sources: Arc<std::sync::Mutex<DelaySources>>,
    mut next_seq: u64,
) {
    loop {
        let result: anyhow::Result<()> = async {
            let stream = js.get_stream(DELAYS_STREAM).await?;
            let consumer = stream
                .create_consumer(OrderedConfig {
                    filter_subject: DELAYS_SUBJECTS.to_owned(),
                    deliver_policy: DeliverPolicy::ByStartSequence {
                        start_sequence: next_seq,
                    },
                    ..Default::default()
                })
                .await?;
            let mut messages = consumer.messages().await?;
            while let Some(message) = messages.next().await {
                let message = message.map_err(|e| anyhow::anyhow!("{e}"))?;
                next_seq = message
                    .info()
                    .map_err(|e| anyhow::anyhow!("{e}"))?
                    .stream_sequence
                    + 1;
                let delay = match BroadcastDelay::decode(message.payload.as_ref()) {
                    Ok(d) => d,
                    Err(e) => {
                        tracing::error!("an unreadable broadcast delay: {e}");
                        continue;
                    }
                };
                tracing::info!(
                    tournament = %delay.tournament_id, round = delay.round,
                    delay_ms = delay.delay_ms, by = %delay.set_by, "broadcast delay set"
                );
                let effective = {
                    let mut sources = sources.lock().unwrap_or_else(|e| e.into_inner());
                    sources.recorded.push(delay);
                    sources.effective()
                };
                projection.set_delays(effective)?;
            }
            anyhow::bail!("the delays consumer ended")
        }
        .await;
        if let Err(e) = result {
            tracing::warn!("following the broadcast delays: {e:#}; resuming in a second");
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use boardcast_feeds::RoundKey;

    fn recorded(round: u32, minutes: u64, may_lower: bool) -> BroadcastDelay {
        BroadcastDelay {
            tournament_id: "open".into(),
            round,
            delay_ms: minutes * 60_000,
            may_lower,
            ..Default::default()
        }
    }

    fn in_force(sources: &DelaySources, round: u32) -> u64 {
        sources.effective().delay_ms(&RoundKey {
            tournament_id: "open".into(),
            round,
        }) / 60_000
    }

    #[test]
    fn only_a_delay_that_may_lower_goes_below_the_one_in_force() {
        let configured = Delays::parse(["15"]).expect("valid");
        let with = |recorded: Vec<BroadcastDelay>| DelaySources {
            configured: configured.clone(),
            recorded,
        };
        // An operator's delay raises, never lowers, the configured one.
        assert_eq!(in_force(&with(vec![recorded(0, 0, false)]), 3), 15);
        assert_eq!(in_force(&with(vec![recorded(0, 30, false)]), 3), 30);
        // A chief arbiter's lowers it; an operator's after it raises from there.
        assert_eq!(in_force(&with(vec![recorded(0, 0, true)]), 3), 0);
        assert_eq!(
            in_force(&with(vec![recorded(0, 10, true), recorded(0, 5, false)]), 3),
            10
        );
        assert_eq!(
            in_force(
                &with(vec![recorded(0, 10, true), recorded(0, 20, false)]),
                3
            ),
            20
        );
        // A round's own delay starts from the one in force for that round.
        assert_eq!(in_force(&with(vec![recorded(9, 5, false)]), 9), 15);
        assert_eq!(in_force(&with(vec![recorded(9, 5, true)]), 9), 5);
    }
}

//! The observations a board skipped: read around the one that skipped them in its partition's
//! stream, decided again in order, waited for a moment, then recorded as missing (see the
//! module comment of `ingest`).

use std::{collections::BTreeMap, time::Duration};

use async_nats::jetstream::stream::Stream;
use boardcast_game::device::Observation;
use boardcast_kit::nats::{board_observations, next_message};
use prost::Message as _;

use super::dead_letter::record_unusable;
use super::decide;
use super::policy::{SeenBoard, gap_before};
use crate::store::{AppendError, Store};

/// At most how many later messages of the same board are searched for missing `device_seq`s: a
/// gateway publishes up to 256 observations at once and re-sends the ones not acknowledged,
/// which JetStream then stores after the rest.
pub(super) const LOOKAHEAD: usize = 512;

/// At most how many earlier messages of the same board are read to find those another instance
/// passed over; beyond that a gap is logged but not recorded (it cannot be told from ticks).
pub(super) const MAX_LOOKBACK: usize = 20_000;

/// How far below the last accounted `device_seq` the search for passed-over messages starts
/// after a restart, for boards whose messages are out of order where a gateway re-sent them.
pub(super) const RESEND_MARGIN: u64 = 256;

/// How long after this instance first found observations missing before one the board is given
/// to re-send them before they are recorded as missing (a gateway re-sends within seconds).
/// Measured on this instance's own clock, so no clock skew lengthens it.
pub(super) const GAP_PATIENCE: Duration = Duration::from_secs(10);

/// How soon an observation waiting for a gap to close is delivered again.
pub(super) const GAP_RECHECK: Duration = Duration::from_millis(500);

/// Why a gap was left open for now.
pub(super) enum GapOpen {
    /// Observations are missing, but recently: wait for the board to re-send them.
    Waiting { missing: u64 },
    /// The board's observations could not be read or decided.
    Failed(String),
    /// NATS refused to store the decision on one of them (`AppendError::Failed`), or their game
    /// can take nothing (`Unfoldable`, `LogBroken`): decided as this observation's own.
    Refused(AppendError),
}

impl From<String> for GapOpen {
    fn from(e: String) -> Self {
        GapOpen::Failed(e)
    }
}

/// Accounts for the board's `device_seq`s between `known` and `observation`: those in the stream
/// before it were handled already and are decided again, in order (see the module comment);
/// those published after it are decided now, in order; the rest were not found and, once the
/// gap is no longer recent (`waited` since this instance first found it), are recorded as
/// missing in the game's log.
pub(super) async fn close_gap(
    stream: &Stream,
    store: &Store,
    seen_here: Option<SeenBoard>,
    observation: &Observation,
    known: u64,
    stream_seq: u64,
    waited: Duration,
) -> Result<(), GapOpen> {
    let board = &observation.board_id;
    if stream_seq == 0 {
        tracing::warn!(%board, before = observation.device_seq, "gap in the board's observations: cannot look for them (no stream sequence)");
        return Ok(());
    }
    let gap = Gap {
        messages: BoardMessages {
            stream,
            subject: board_observations(board),
        },
        wanted: match gap_before(known, observation.device_seq) {
            Some(wanted) => wanted,
            None => return Ok(()),
        },
        observation,
        stream_seq,
    };
    // Where the board's messages after `known` start: right after the last one this instance
    // handled if that is as far as the game got, otherwise found by bisection from there.
    let (start, from_stream_start) = match seen_here {
        Some(s) if s.stream_seq > 0 && s.device_seq >= known => (s.stream_seq + 1, false),
        Some(s) => (
            gap.messages
                .start_after(known, s.stream_seq + 1, stream_seq)
                .await?,
            false,
        ),
        None => (gap.messages.start_after(known, 1, stream_seq).await?, true),
    };
    let mut found = gap.search(start).await?;
    if found.unaccounted(&gap.wanted) > 0 && !from_stream_start {
        // A message the board re-sent may be stored before the last one this instance handled:
        // before recording anything as missing, search from the stream's start (gaps are rare).
        found = gap
            .search(gap.messages.start_after(known, 1, stream_seq).await?)
            .await?;
    }
    let missing = found.unaccounted(&gap.wanted);
    if missing > 0 && found.complete && waited < GAP_PATIENCE {
        return Err(GapOpen::Waiting { missing });
    }
    if missing > 0 {
        // What was searched, for whoever checks a hole recorded below.
        tracing::warn!(%board, known, before = observation.device_seq, stream_seq, searched_from = start, from_stream_start, waited_ms = u64::try_from(waited.as_millis()).unwrap_or(u64::MAX), passed_over = found.passed_over.len(), later = found.later.len(), "gap in the board's observations: not all found");
    }
    if !found.passed_over.is_empty() {
        tracing::debug!(%board, count = found.passed_over.len(), before = observation.device_seq, "observations handled before (by another instance, before a restart, or before the game was set up): deciding them again in order");
    }
    // In device_seq order: a late observation is decided before the gap after it is recorded;
    // the holes between the ones accounted for are missing.
    let mut accounted: BTreeMap<u64, (Option<Observation>, bool)> = found
        .passed_over
        .into_iter()
        .map(|(seq, o)| (seq, (o, false)))
        .collect();
    accounted.extend(
        found
            .later
            .into_iter()
            .map(|(seq, o)| (seq, (Some(o), true))),
    );
    let mut first_unaccounted = gap.wanted.start;
    for (device_seq, (earlier, published_after)) in accounted {
        if device_seq > first_unaccounted {
            record_missing(
                store,
                observation,
                (first_unaccounted, device_seq - 1),
                found.complete,
            )
            .await?;
        }
        if let Some(earlier) = earlier {
            if published_after {
                tracing::info!(%board, device_seq, before = observation.device_seq, "deciding an observation that was published out of order");
            }
            let stored = match decide(store, &earlier, std::time::Instant::now(), true).await {
                // Unusable: its hole is recorded now, in order. Delivered itself later, it goes
                // to the dead-letter stream, but its number is accounted for by then.
                Ok(Some(Err(undecided))) => {
                    let reason = undecided.reason(board, &earlier);
                    record_unusable(store, &earlier, &reason).await
                }
                Ok(_) => Ok(()),
                Err(e) => Err(e),
            };
            match stored {
                Ok(()) => {}
                Err(
                    refused @ (AppendError::Failed { .. }
                    | AppendError::Unfoldable { .. }
                    | AppendError::LogBroken { .. }),
                ) => {
                    return Err(GapOpen::Refused(refused));
                }
                Err(e) => {
                    return Err(GapOpen::Failed(format!(
                        "deciding observation {device_seq} before it: {e}"
                    )));
                }
            }
        }
        first_unaccounted = device_seq + 1;
    }
    if first_unaccounted < gap.wanted.end {
        record_missing(
            store,
            observation,
            (first_unaccounted, gap.wanted.end - 1),
            found.complete,
        )
        .await?;
    }
    Ok(())
}

/// The `device_seq`s `wanted` that `observation` (at `stream_seq`) skipped.
pub(super) struct Gap<'a> {
    messages: BoardMessages<'a>,
    wanted: std::ops::Range<u64>,
    observation: &'a Observation,
    stream_seq: u64,
}

/// What a search of the stream found of a gap's observations.
pub(super) struct Found {
    /// In the stream before the observation: handled already (decoded, when they can be).
    passed_over: BTreeMap<u64, Option<Observation>>,
    /// In the stream after it: to be decided before it.
    later: BTreeMap<u64, Observation>,
    /// Every earlier message of the board from the start point was read.
    complete: bool,
}

impl Found {
    fn unaccounted(&self, wanted: &std::ops::Range<u64>) -> u64 {
        (wanted.end - wanted.start) - (self.passed_over.len() + self.later.len()) as u64
    }
}

impl Gap<'_> {
    /// Reads the board's messages from stream sequence `next` on: up to `MAX_LOOKBACK` before
    /// the observation and `LOOKAHEAD` after it, or until every wanted `device_seq` is found.
    async fn search(&self, mut next: u64) -> Result<Found, String> {
        let board = &self.observation.board_id;
        let mut found = Found {
            passed_over: BTreeMap::new(),
            later: BTreeMap::new(),
            complete: true,
        };
        let (mut read_before, mut read_after) = (0, 0);
        while found.unaccounted(&self.wanted) > 0 {
            let Some((seq, read)) = self.messages.next_from(next).await? else {
                break;
            };
            next = seq + 1;
            let read = read.filter(|o| o.board_id == *board);
            if seq < self.stream_seq {
                read_before += 1;
                if read_before > MAX_LOOKBACK {
                    // Too far back to tell passed-over from missing: only look ahead.
                    found.complete = false;
                    next = self.stream_seq + 1;
                } else if let Some(read) = read
                    && self.wanted.contains(&read.device_seq)
                {
                    found.passed_over.insert(read.device_seq, Some(read));
                }
            } else if seq > self.stream_seq {
                read_after += 1;
                if read_after > LOOKAHEAD {
                    break;
                }
                if let Some(read) = read
                    && self.wanted.contains(&read.device_seq)
                    && !found.passed_over.contains_key(&read.device_seq)
                {
                    found.later.insert(read.device_seq, read);
                }
            }
        }
        Ok(found)
    }
}

/// Records the board's observations `first..=last` as missing, when the search for them was
/// complete; otherwise only logs them.
pub(super) async fn record_missing(
    store: &Store,
    observation: &Observation,
    (first, last): (u64, u64),
    search_complete: bool,
) -> Result<(), GapOpen> {
    let board = &observation.board_id;
    if !search_complete {
        tracing::warn!(%board, from = first, to = last, before = observation.device_seq, "gap in the board's observations: too many messages to tell it from passed-over ones; not recorded");
        return Ok(());
    }
    tracing::warn!(%board, from = first, to = last, before = observation.device_seq, "gap in the board's observations: never arrived, recorded as missing");
    store
        .decide_on_board(
            board,
            boardcast_kit::now_unix_ms(),
            std::time::Instant::now(),
            |game| game.decide_missing_observations(first, last, observation),
            Vec::clone,
        )
        .await
        .map(|_| ())
        .map_err(|e| match e {
            // The game can take nothing: given up at once, as its own decision would be.
            stuck @ (AppendError::Unfoldable { .. } | AppendError::LogBroken { .. }) => {
                GapOpen::Refused(stuck)
            }
            // Anything else is tried again: the observation must not be given up with a hole
            // of its own only, which would pass over the ones missing before it unrecorded.
            e => GapOpen::Failed(format!("recording the observations missing: {e}")),
        })
}

/// One board's messages in the observation stream, read by stream sequence.
pub(super) struct BoardMessages<'a> {
    stream: &'a Stream,
    subject: String,
}

impl BoardMessages<'_> {
    /// The board's first message at or after stream sequence `seq`, decoded if it can be.
    async fn next_from(&self, seq: u64) -> Result<Option<(u64, Option<Observation>)>, String> {
        let message = next_message(self.stream, seq, &self.subject)
            .await
            .map_err(|e| format!("reading the board's observations: {e}"))?;
        Ok(message.map(|m| (m.sequence, Observation::decode(m.payload.as_ref()).ok())))
    }

    /// A stream sequence in `low..=before` from which the board's messages before `before`
    /// include every one after `known`. A board's messages are in `device_seq` order but for
    /// re-sent ones, so bisection finds where they pass `known`; it aims `RESEND_MARGIN` lower
    /// so that a re-sent run does not hide earlier ones.
    async fn start_after(&self, known: u64, low: u64, before: u64) -> Result<u64, String> {
        let target = known.saturating_sub(RESEND_MARGIN);
        let (mut low, mut high) = (low, before);
        while low < high {
            let middle = low + (high - low) / 2;
            match self.next_from(middle).await? {
                Some((seq, read))
                    if seq < before && read.as_ref().is_none_or(|o| o.device_seq <= target) =>
                {
                    low = seq + 1
                }
                _ => high = middle,
            }
        }
        Ok(low)
    }
}

//! Watching a replicated partition stream's leader, so that a gap in a board's observations
//! costs the partition an election only when a leader change could explain it.
//!
//! On nats-server 2.9 a leader elected after a node was killed was seen to lack acknowledged
//! observations that its replicas held. Before a gap is recorded as missing, the ingest asks the
//! stream's leader to step down and searches again (see `ingest::GapOpen::LeaderMayLack`). That
//! is needless when the leader now in place already led, settled, before the board's last
//! observation handled here was received, and the stream then ended before that observation:
//! the observation and every later one of the board were stored by this leader itself, which
//! cannot lack one that it acknowledged.
//!
//! The leader is looked at every `LEADER_LOOK`; a change between two looks is seen at the
//! second, and a look that finds none (an election going on, NATS away) forgets what was seen.
//! A new leader's stream counts only from a look `NEW_LEADER_SETTLES` after it was first found:
//! a leader just elected may still be applying what it holds and report less. Not covered:
//! leadership that went away and came back between two looks (an election takes seconds and a
//! killed node is not elected again that fast, but two step-downs in a row could do it), and a
//! missing observation that its gateway published before the board's last one handled here
//! (which it re-sent after a lost acknowledgement), lost by a leader change between the two.
//! Both leave the gap recorded without an election.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use async_nats::jetstream::stream::{Info, Stream};

use crate::ingest::NEW_LEADER_SETTLES;

/// How often the leader is looked at.
const LEADER_LOOK: Duration = Duration::from_secs(2);

/// The leader found at the last look, as far as the looks can tell since when.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Tenure {
    /// The leader's server name.
    leader: String,
    /// The first look that found it.
    first_seen: Instant,
    /// The first look at least `NEW_LEADER_SETTLES` after that, once made.
    settled: Option<Settled>,
}

/// A look at a leader that had settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Settled {
    at: Instant,
    /// The stream's last sequence then: every message after it was stored by this leader.
    stored_all_after: u64,
}

/// What the looks so far say, after one more look at `at` that found `leader` with the
/// stream's last sequence at `last_seq` (`None`: no leader found).
fn next_tenure(
    before: Option<Tenure>,
    found: Option<(String, u64)>,
    at: Instant,
) -> Option<Tenure> {
    let (leader, last_seq) = found?;
    match before {
        Some(mut tenure) if tenure.leader == leader => {
            if tenure.settled.is_none()
                && at.saturating_duration_since(tenure.first_seen) >= NEW_LEADER_SETTLES
            {
                tenure.settled = Some(Settled {
                    at,
                    stored_all_after: last_seq,
                });
            }
            Some(tenure)
        }
        _ => Some(Tenure {
            leader,
            first_seen: at,
            settled: None,
        }),
    }
}

/// The leader a stream's info names, with the stream's last sequence.
fn leader_in(info: &Info) -> Option<(String, u64)> {
    let leader = info.cluster.as_ref()?.leader.clone()?;
    Some((leader, info.state.last_sequence))
}

/// A replicated partition stream's leader, looked at every `LEADER_LOOK` for as long as this
/// is kept.
pub struct LeaderWatch {
    stream: Stream,
    tenure: Arc<Mutex<Option<Tenure>>>,
    looking: tokio::task::AbortHandle,
}

impl LeaderWatch {
    pub fn start(stream: Stream) -> LeaderWatch {
        let tenure = Arc::new(Mutex::new(None));
        let (seen, watched) = (tenure.clone(), stream.clone());
        let looking = tokio::spawn(async move {
            let mut look = tokio::time::interval(LEADER_LOOK);
            // A look that took long (NATS slow to answer) is not made up for with a burst.
            look.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                look.tick().await;
                let found = watched.get_info().await.ok().as_ref().and_then(leader_in);
                let mut tenure = seen.lock().unwrap_or_else(PoisonError::into_inner);
                *tenure = next_tenure(tenure.take(), found, Instant::now());
            }
        })
        .abort_handle();
        LeaderWatch {
            stream,
            tenure,
            looking,
        }
    }

    /// Whether the stream's leader had led, settled, since before the message at `stream_seq`
    /// was stored and before it was `received` here, and leads still: then it stored that
    /// message and every later one itself. Asks the stream once more.
    pub async fn stored_everything_from(&self, stream_seq: u64, received: Instant) -> bool {
        let tenure = self
            .tenure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let Some(Tenure {
            leader,
            settled: Some(settled),
            ..
        }) = tenure
        else {
            return false;
        };
        if settled.at >= received || settled.stored_all_after >= stream_seq {
            return false;
        }
        // Since the last look: still the same leader?
        let now = self
            .stream
            .get_info()
            .await
            .ok()
            .as_ref()
            .and_then(leader_in);
        now.is_some_and(|(now, _)| now == leader)
    }
}

impl Drop for LeaderWatch {
    fn drop(&mut self) {
        self.looking.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(leader: &str, last_seq: u64) -> Option<(String, u64)> {
        Some((leader.to_owned(), last_seq))
    }

    #[test]
    fn a_leader_s_stream_counts_from_a_look_once_it_has_settled() {
        let t0 = Instant::now();
        let first = next_tenure(None, found("n1", 40), t0);
        assert_eq!(
            first.as_ref().map(|t| (&*t.leader, t.settled)),
            Some(("n1", None))
        );
        // Not yet settled: what it reports may still grow as it applies what it holds.
        let early = next_tenure(first, found("n1", 45), t0 + Duration::from_secs(2));
        assert_eq!(early.as_ref().and_then(|t| t.settled), None);
        let settled_at = t0 + NEW_LEADER_SETTLES;
        let settled = next_tenure(early, found("n1", 60), settled_at);
        let expected = Some(Settled {
            at: settled_at,
            stored_all_after: 60,
        });
        assert_eq!(settled.as_ref().and_then(|t| t.settled), expected);
        // Still n1 later: the settled look stands.
        let later = next_tenure(settled, found("n1", 900), settled_at + LEADER_LOOK);
        assert_eq!(later.as_ref().and_then(|t| t.settled), expected);
        // Another leader: it starts afresh.
        let other = next_tenure(later, found("n2", 950), settled_at + 2 * LEADER_LOOK);
        assert_eq!(
            other.as_ref().map(|t| (&*t.leader, t.settled)),
            Some(("n2", None))
        );
    }

    #[test]
    fn a_look_that_finds_no_leader_forgets_the_tenure() {
        let t0 = Instant::now();
        let settled = next_tenure(
            next_tenure(None, found("n1", 40), t0),
            found("n1", 40),
            t0 + NEW_LEADER_SETTLES,
        );
        assert!(settled.as_ref().is_some_and(|t| t.settled.is_some()));
        assert_eq!(
            next_tenure(settled, None, t0 + NEW_LEADER_SETTLES + LEADER_LOOK),
            None
        );
    }
}

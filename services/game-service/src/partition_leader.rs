//! A replicated partition stream's leader, for a gap in a board's observations: whether it may
//! lack them, and which leaders they were searched on.
//!
//! On nats-server 2.9 a leader elected after a node was killed was seen to lack acknowledged
//! observations that its replicas held, each replica a different few. So before a gap is
//! recorded as missing, the board's messages are searched on each replica of the stream as
//! leader: the leader is asked to step down (`ingest::GapOpen::LeaderMayLack`), the next one is
//! given `NEW_LEADER_SETTLES` to apply what it holds, and the search is made again, until every
//! replica has led a search. A step-down elects one of the others at random, so a round asks at
//! most `2 × replicas` times; it ends `LEADER_ASK_INTERVAL` after its last step-down, and until
//! then the next gap is recorded once its leader was searched on.
//!
//! None of that is needed when the leader now in place already led, settled, before the
//! board's last observation handled here was received, and the stream then ended before that
//! observation: the observation and every later one of the board were stored by this leader
//! itself, which cannot lack one that it acknowledged. A board that really lost observations
//! under a steady leader therefore costs no election.
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

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use async_nats::jetstream::stream::{Info, Stream};

/// How long after asking a stream's leader to step down a gap is still waited on: a leader just
/// elected may still be applying what it holds, and answer "no message" for it meanwhile.
const NEW_LEADER_SETTLES: Duration = Duration::from_secs(10);

/// A round of searches on each leader ends this long after its last step-down.
const LEADER_ASK_INTERVAL: Duration = Duration::from_secs(60);

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

/// The searches of missing observations in a round (see the module comment).
#[derive(Debug, Default)]
struct LeaderSearches {
    /// The leaders that missing observations were searched on.
    searched_on: BTreeSet<String>,
    /// How many times a leader was asked to step down, and when last.
    asks: u32,
    last_ask: Option<Instant>,
}

/// What to do about observations that a search of their board's messages did not find.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterSearch {
    /// Record them as missing. `leader_unchanged`: the leader stored all of them itself.
    Record { leader_unchanged: bool },
    /// Search again shortly: a leader just elected is settling, or there is none.
    Wait,
    /// Ask the leader to step down, then search again on the next one.
    AskToStepDown,
}

impl LeaderSearches {
    /// After a search that ended at `now` on `leader`, of a stream with `replicas`.
    fn after_search(&mut self, leader: String, replicas: usize, now: Instant) -> AfterSearch {
        let since_last_ask = |searches: &Self| {
            searches
                .last_ask
                .map(|at| now.saturating_duration_since(at))
        };
        if since_last_ask(self).is_some_and(|ago| ago >= LEADER_ASK_INTERVAL) {
            *self = LeaderSearches::default();
        }
        if since_last_ask(self).is_some_and(|ago| ago < NEW_LEADER_SETTLES) {
            return AfterSearch::Wait;
        }
        self.searched_on.insert(leader);
        let max_asks = u32::try_from(replicas.saturating_mul(2)).unwrap_or(u32::MAX);
        if self.searched_on.len() >= replicas || self.asks >= max_asks {
            return AfterSearch::Record {
                leader_unchanged: false,
            };
        }
        self.asks = self.asks.saturating_add(1);
        self.last_ask = Some(now);
        AfterSearch::AskToStepDown
    }
}

/// A replicated partition stream's leader, looked at every `LEADER_LOOK` for as long as this
/// is kept, and the searches of missing observations on it.
pub struct PartitionLeader {
    stream: Stream,
    tenure: Arc<Mutex<Option<Tenure>>>,
    looking: tokio::task::AbortHandle,
    searches: LeaderSearches,
}

impl PartitionLeader {
    pub fn start(stream: Stream) -> PartitionLeader {
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
        PartitionLeader {
            stream,
            tenure,
            looking,
            searches: LeaderSearches::default(),
        }
    }

    /// What to do about observations of a board that a search which ended just now did not
    /// find; `last_handled`: the stream sequence of the board's last observation handled here
    /// and when it was received. Looks at the leader once more, after the search: a leader that
    /// changed during it is not taken for the one searched.
    pub async fn after_search(&mut self, last_handled: Option<(u64, Instant)>) -> AfterSearch {
        let now = self.stream.get_info().await.ok();
        let Some((leader, _)) = now.as_ref().and_then(leader_in) else {
            return AfterSearch::Wait;
        };
        if last_handled.is_some_and(|(stream_seq, received)| {
            self.stored_all_from(&leader, stream_seq, received)
        }) {
            return AfterSearch::Record {
                leader_unchanged: true,
            };
        }
        let replicas = self.stream.cached_info().config.num_replicas;
        self.searches.after_search(leader, replicas, Instant::now())
    }

    /// Whether `leader` (leading now) had led, settled, since before the message at
    /// `stream_seq` was stored and before it was `received` here: then it stored that message
    /// and every later one itself.
    fn stored_all_from(&self, leader: &str, stream_seq: u64, received: Instant) -> bool {
        let tenure = self.tenure.lock().unwrap_or_else(PoisonError::into_inner);
        tenure.as_ref().is_some_and(|tenure| {
            tenure.leader == leader
                && tenure.settled.is_some_and(|settled| {
                    settled.at < received && settled.stored_all_after < stream_seq
                })
        })
    }
}

impl Drop for PartitionLeader {
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
    fn missing_observations_are_searched_on_every_replica_as_leader_before_they_are_recorded() {
        let t0 = Instant::now();
        let mut searches = LeaderSearches::default();
        let record = AfterSearch::Record {
            leader_unchanged: false,
        };
        assert_eq!(
            searches.after_search("n1".into(), 3, t0),
            AfterSearch::AskToStepDown
        );
        // The next leader is settling: searched again later.
        let settling = t0 + NEW_LEADER_SETTLES / 2;
        assert_eq!(
            searches.after_search("n2".into(), 3, settling),
            AfterSearch::Wait
        );
        let t1 = t0 + NEW_LEADER_SETTLES;
        assert_eq!(
            searches.after_search("n2".into(), 3, t1),
            AfterSearch::AskToStepDown
        );
        // The step-down elected n1 again, searched already: asked once more.
        let t2 = t1 + NEW_LEADER_SETTLES;
        assert_eq!(
            searches.after_search("n1".into(), 3, t2),
            AfterSearch::AskToStepDown
        );
        let t3 = t2 + NEW_LEADER_SETTLES;
        assert_eq!(searches.after_search("n3".into(), 3, t3), record);
        // Every replica searched in this round: the next gap is recorded at once.
        assert_eq!(
            searches.after_search("n3".into(), 3, t3 + LEADER_LOOK),
            record
        );
        // A minute after the last step-down, a new round.
        let later = t2 + LEADER_ASK_INTERVAL;
        assert_eq!(
            searches.after_search("n3".into(), 3, later),
            AfterSearch::AskToStepDown
        );
    }

    #[test]
    fn a_round_asks_at_most_twice_as_often_as_there_are_replicas() {
        let mut searches = LeaderSearches::default();
        let mut at = Instant::now();
        let mut asks = 0;
        // The step-downs elect the same two leaders in turn: the third replica never leads.
        for leader in ["n1", "n2"].iter().cycle().take(20) {
            match searches.after_search((*leader).into(), 3, at) {
                AfterSearch::AskToStepDown => asks += 1,
                AfterSearch::Record { .. } => break,
                AfterSearch::Wait => unreachable!("searched once settled"),
            }
            at += NEW_LEADER_SETTLES;
        }
        assert_eq!(asks, 6);
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

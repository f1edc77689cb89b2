//! Watching a replicated partition stream's leader, so that a gap in a board's observations
//! costs the partition an election only when a leader change could explain it.
//!
//! On nats-server 2.9 a leader elected after a node was killed was seen to lack acknowledged
//! observations that its replicas held. Before a gap is recorded as missing, the ingest asks the
//! stream's leader to step down and searches again (see `ingest::GapOpen::LeaderMayLack`). That
//! is needless when the leader now in place has led since before the board's last observation
//! handled here: every observation of the board after that one was stored by this leader
//! itself, so it cannot lack one that it acknowledged. The leader is looked at every
//! `LEADER_LOOK`; a change between two looks is seen at the second, and a look that finds none
//! (an election going on, NATS away) forgets what was seen. Not covered: a missing observation
//! that its gateway published before the board's last one handled here (which it re-sent after
//! a lost acknowledgement), lost by a leader change between the two; the gap is then recorded
//! without an election.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_nats::jetstream::stream::{Info, Stream};

/// How often the leader is looked at. Leadership that went elsewhere and came back within one
/// such interval goes unseen: an election takes seconds, and a killed node is not elected again
/// that fast.
const LEADER_LOOK: Duration = Duration::from_secs(2);

/// The leader found at the last look, and since when it has led as far as the looks can tell.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Tenure {
    /// The leader's server name.
    leader: String,
    /// The stream's last sequence at the first look that found this leader: every message
    /// stored after it was stored while this leader led.
    stored_all_after: u64,
}

/// What the looks so far say, updated by one more look that found `leader` with the stream's
/// last sequence at `last_seq` (`None`: no leader found).
fn next_tenure(before: Option<Tenure>, found: Option<(String, u64)>) -> Option<Tenure> {
    match (before, found) {
        (Some(tenure), Some((leader, _))) if tenure.leader == leader => Some(tenure),
        (_, Some((leader, last_seq))) => Some(Tenure {
            leader,
            stored_all_after: last_seq,
        }),
        (_, None) => None,
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
    tenure: Arc<Mutex<Option<Tenure>>>,
    looking: tokio::task::AbortHandle,
}

impl LeaderWatch {
    pub fn start(stream: Stream) -> LeaderWatch {
        let tenure = Arc::new(Mutex::new(None));
        let seen = tenure.clone();
        let looking = tokio::spawn(async move {
            let mut look = tokio::time::interval(LEADER_LOOK);
            loop {
                look.tick().await;
                let found = stream.get_info().await.ok().as_ref().and_then(leader_in);
                let mut tenure = seen.lock().unwrap_or_else(PoisonError::into_inner);
                *tenure = next_tenure(tenure.take(), found);
            }
        })
        .abort_handle();
        LeaderWatch { tenure, looking }
    }

    /// Whether the stream's leader has led without a break since before stream sequence
    /// `stream_seq` was stored, as the looks so far and one more now tell.
    pub async fn led_since(&self, stream: &Stream, stream_seq: u64) -> bool {
        let Some(tenure) = self
            .tenure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
        else {
            return false;
        };
        // Since the last look: still the same leader?
        let now = stream.get_info().await.ok().as_ref().and_then(leader_in);
        tenure.stored_all_after < stream_seq
            && next_tenure(Some(tenure.clone()), now) == Some(tenure)
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
    fn a_leader_s_tenure_starts_at_the_first_look_that_found_it() {
        let first = next_tenure(None, found("n1", 40));
        assert_eq!(
            first,
            Some(Tenure {
                leader: "n1".into(),
                stored_all_after: 40
            })
        );
        // Still n1 later: the tenure keeps its start.
        let later = next_tenure(first.clone(), found("n1", 900));
        assert_eq!(later, first);
        // Another leader: its tenure starts where the stream stood when it was found.
        let other = next_tenure(later, found("n2", 950));
        assert_eq!(
            other,
            Some(Tenure {
                leader: "n2".into(),
                stored_all_after: 950
            })
        );
    }

    #[test]
    fn a_look_that_finds_no_leader_forgets_the_tenure() {
        let tenure = next_tenure(None, found("n1", 40));
        assert_eq!(next_tenure(tenure, None), None);
        // n1 again after an election whose leader went unseen: a new tenure, not the old one.
        assert_eq!(
            next_tenure(None, found("n1", 70)),
            Some(Tenure {
                leader: "n1".into(),
                stored_all_after: 70
            })
        );
    }
}

//! Telling a game log leader that stopped acknowledging appends from a passing election.
//!
//! On nats-server 2.9 a replicated stream's leader can stop acknowledging publishes for good
//! after a network partition heals: it stays leader, answers reads, and logs "has high message
//! lag" for every publish while storing none (its proposal sequence ran ahead of what it
//! applied). Seen in the fault tests after cutting the game log's leader off the network for
//! 10 s; asking the leader to step down (what an operator would do with `nats stream cluster
//! step-down`) elects a fresh one and appends go on. An election also leaves appends
//! unacknowledged, but for seconds (at most about 9 on these servers): only appends that have
//! gone unacknowledged in a row for longer than that count as a silent leader.

use std::time::{Duration, Instant};

/// How long appends must have gone unacknowledged in a row: longer than an election.
const SILENT_FOR: Duration = Duration::from_secs(12);

/// How many appends in a row at least (a single slow one is not a pattern).
const SILENT_APPENDS: u32 = 3;

/// At most one step-down request per this long from one instance: a new leader needs time to
/// be elected and to show that it acknowledges.
const STEP_DOWN_INTERVAL: Duration = Duration::from_secs(30);

/// The appends of one instance that got no acknowledgement, in a row.
#[derive(Debug, Default)]
pub struct SilentLeader {
    /// When the first of them was made; `None` after an acknowledgement.
    since: Option<Instant>,
    /// How many.
    count: u32,
    /// When this instance last asked the leader to step down.
    last_step_down: Option<Instant>,
}

impl SilentLeader {
    /// An append was acknowledged (stored or refused): the leader answers.
    pub fn answered(&mut self) {
        self.since = None;
        self.count = 0;
    }

    /// An append made at `now` got no acknowledgement. Says whether to ask the leader to step
    /// down now (and then counts the request as made).
    pub fn unanswered(&mut self, now: Instant) -> Option<Duration> {
        let since = *self.since.get_or_insert(now);
        self.count = self.count.saturating_add(1);
        let silent_for = now.saturating_duration_since(since);
        let due = self.count >= SILENT_APPENDS
            && silent_for >= SILENT_FOR
            && self
                .last_step_down
                .is_none_or(|at| now.saturating_duration_since(at) >= STEP_DOWN_INTERVAL);
        if due {
            self.last_step_down = Some(now);
        }
        due.then_some(silent_for)
    }

    /// How many appends in a row went unacknowledged.
    pub fn count(&self) -> u32 {
        self.count
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const APPEND_TIMEOUT: Duration = Duration::from_secs(5);

    #[test]
    fn an_election_does_not_make_a_silent_leader() {
        let mut leader = SilentLeader::default();
        let start = Instant::now();
        // Two appends time out while a new leader is elected; the third is acknowledged.
        assert_eq!(leader.unanswered(start), None);
        assert_eq!(leader.unanswered(start + APPEND_TIMEOUT), None);
        leader.answered();
        assert_eq!(leader.unanswered(start + 3 * APPEND_TIMEOUT), None);
        assert_eq!(leader.count(), 1);
    }

    #[test]
    fn appends_unacknowledged_for_longer_than_an_election_ask_for_a_step_down_now_and_then() {
        let mut leader = SilentLeader::default();
        let start = Instant::now();
        let at = |n: u32| start + APPEND_TIMEOUT * n;
        assert_eq!(leader.unanswered(at(0)), None);
        assert_eq!(leader.unanswered(at(1)), None);
        assert_eq!(
            leader.unanswered(at(2)),
            None,
            "10 s: an election may last that long"
        );
        assert_eq!(leader.unanswered(at(3)), Some(APPEND_TIMEOUT * 3));
        // Not again until the interval has passed, however many more time out.
        for n in 4..9 {
            assert_eq!(leader.unanswered(at(n)), None, "{n}");
        }
        assert_eq!(leader.unanswered(at(9)), Some(APPEND_TIMEOUT * 9));
        // Answered: a new silence starts from nothing.
        leader.answered();
        assert_eq!(leader.unanswered(at(20)), None);
        assert_eq!(leader.count(), 1);
    }

    #[test]
    fn many_appends_in_a_moment_are_not_a_silence() {
        // Appends in flight at once that all fail together (a connection lost) count as many,
        // but not for long.
        let mut leader = SilentLeader::default();
        let now = Instant::now();
        for _ in 0..100 {
            assert_eq!(leader.unanswered(now), None);
        }
    }
}

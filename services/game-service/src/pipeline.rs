//! Which decisions may be appended in the pipeline, behind records still in flight: pure
//! bookkeeping, so that the rule that keeps the game log from forking is tested on its own.
//!
//! A record published in the pipeline expects to follow the record published before it, not
//! the state this instance has folded. The log's checks therefore say only that nobody else
//! wrote in between; that the decision was made on the whole of its game rests on this instance:
//! every record it sent for that game must be folded, or in flight (and then the game waits).
//! A record whose fate is unknown (its acknowledgement was lost, or the log did not show it when
//! read back) may be stored without being folded here: its game is *unsettled*, and a decision
//! on it is appended only alone, after the log was caught up with nothing in flight. Before
//! this rule, a decision made again on a state without such a record was published behind other
//! records in flight and stored: one observation recorded twice in a game's log.

use std::collections::HashSet;

/// The games whose records this instance has in flight, or sent with an unknown fate.
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    /// Games with records published in the pipeline whose acknowledgements are still awaited.
    games: HashSet<String>,
    /// Games with a record sent whose fate is unknown: it may be stored and not folded here.
    unsettled: HashSet<String>,
}

/// Where a decision on a game may be appended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Admission {
    /// In the pipeline, behind what is in flight; the game is now in flight.
    Pipelined,
    /// Not now: the game has records in flight, which the decision did not see.
    InFlight,
    /// Only in the writer's turn alone, after catching up: a record of the game may be stored
    /// without being folded here.
    Alone,
}

impl InFlight {
    /// Where a decision on `game_id` may be appended.
    pub(crate) fn admit(&mut self, game_id: &str) -> Admission {
        if self.unsettled.contains(game_id) {
            Admission::Alone
        } else if self.games.insert(game_id.to_owned()) {
            Admission::Pipelined
        } else {
            Admission::InFlight
        }
    }

    /// The records of `game_id` in flight were answered: `folded` when each is folded or known
    /// to be refused, false when the fate of one is unknown.
    pub(crate) fn settled(&mut self, game_id: &str, folded: bool) {
        self.games.remove(game_id);
        if !folded {
            self.unsettled.insert(game_id.to_owned());
        }
    }

    /// The log was caught up in the writer's turn alone (nothing in flight): whatever was
    /// stored of the records of unknown fate is folded now.
    pub(crate) fn caught_up_alone(&mut self) {
        self.unsettled.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_game_with_records_in_flight_waits_for_them() {
        let mut in_flight = InFlight::default();
        assert_eq!(in_flight.admit("g1"), Admission::Pipelined);
        assert_eq!(in_flight.admit("g1"), Admission::InFlight);
        assert_eq!(
            in_flight.admit("g2"),
            Admission::Pipelined,
            "other games go on"
        );
        in_flight.settled("g1", true);
        assert_eq!(in_flight.admit("g1"), Admission::Pipelined);
    }

    #[test]
    fn a_record_of_unknown_fate_keeps_its_game_out_of_the_pipeline_until_caught_up_alone() {
        let mut in_flight = InFlight::default();
        assert_eq!(in_flight.admit("g1"), Admission::Pipelined);
        assert_eq!(in_flight.admit("g2"), Admission::Pipelined);
        in_flight.settled("g1", false);
        in_flight.settled("g2", true);
        for _ in 0..3 {
            assert_eq!(in_flight.admit("g1"), Admission::Alone);
        }
        assert_eq!(
            in_flight.admit("g2"),
            Admission::Pipelined,
            "other games go on"
        );
        in_flight.caught_up_alone();
        assert_eq!(in_flight.admit("g1"), Admission::Pipelined);
    }
}

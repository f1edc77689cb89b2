//! What the game service does with each delivered observation, as pure rules: what a
//! partition remembers of its boards, the attempts at one observation, and its disposition once
//! decided (acknowledged, tried again, or dead-lettered with the hole it leaves). Property-tested
//! on any decision and any numbers.

use std::{collections::HashMap, time::Duration};

use boardcast_game::{
    Ignored, ObservationOutcome, Rejected, device::Observation, plausible_device_seq,
};
use boardcast_kit::{nats::board_of_subject, panic_text};
use prost::Message as _;

use crate::store::AppendError;

/// What this instance has handled of each board of a partition for the game live on it then:
/// the highest `device_seq`, and the stream sequence of the last message. Every message of the
/// partition before the one being handled has been handled, by this instance or another (one
/// observation in flight: see the module comment), so the board's messages in between were
/// passed over by another instance. Kept per game as folded: what was handled for a game the
/// board no longer carries tells nothing about the new one, nor what was handled for a game
/// before it was folded afresh (records it held then may have been removed).
#[derive(Default)]
pub(super) struct Seen(HashMap<String, (Option<GameFolded>, SeenBoard)>);

/// A game in progress on a board as folded here: its id and `Entry::generation`.
pub(super) type GameFolded = (String, u64);

#[derive(Default, Clone, Copy)]
pub(super) struct SeenBoard {
    pub(super) device_seq: u64,
    pub(super) stream_seq: u64,
}

/// After NATS refused this many times to store an observation's decision, it is given up
/// (dead-lettered, a hole recorded). The pauses between attempts grow from `FIRST_RETRY_PAUSE`.
/// Counted here rather than from JetStream's deliveries, which also count the waits for a gap
/// and for NATS to come back.
pub(super) const MAX_FAILURES: u32 = 5;

/// What a partition's task keeps between observations.
#[derive(Default)]
pub(super) struct PartitionState {
    pub(super) seen: Seen,
    /// The observation being handled (one in flight per partition): how often storing its
    /// decision failed, and since when observations before it are missing.
    pub(super) current: Attempts,
    /// The partition's last messages handed to this instance one after the other in the
    /// stream, each first delivered (at most `RECENT_DELIVERIES`), for
    /// [`PartitionState::stored_by`].
    pub(super) recent: std::collections::VecDeque<Delivery>,
}

/// How many of the partition's last deliveries [`PartitionState::stored_by`] looks back over.
pub(super) const RECENT_DELIVERIES: usize = 16;

/// A message of the partition as it was handed to this instance.
#[derive(Clone, Copy)]
pub(super) struct Delivery {
    pub(super) stream_seq: u64,
    /// When it was received here.
    pub(super) at: std::time::Instant,
    /// How many messages of the partition the stream held after it then.
    pub(super) pending: u64,
}

impl PartitionState {
    /// A moment by which the message just received (`delivery`) was stored in the stream, on
    /// this instance's clock. A decision on it that appends nothing stands without asking the
    /// log when this instance's state holds every record stored after that moment (see
    /// `Store::decide_on_board`): it then misses nothing written before the observation came,
    /// by anyone. When this instance was handed, first delivered, every
    /// message of the partition from an earlier one up to this one, and the stream held this
    /// one already when that earlier one came, that is when the earlier one was received: a
    /// record this instance sent since, once folded, then shows the log whole late enough, and
    /// a busy hall needs no request to the log for it. Otherwise: now.
    pub(super) fn stored_by(
        &mut self,
        delivery: Delivery,
        first_delivery: bool,
    ) -> std::time::Instant {
        let follows_on = first_delivery
            && self
                .recent
                .back()
                .is_some_and(|last| last.stream_seq.checked_add(1) == Some(delivery.stream_seq));
        if !follows_on {
            self.recent.clear();
        }
        let stored_by = self
            .recent
            .iter()
            .find(|earlier| {
                earlier.stream_seq.saturating_add(earlier.pending) >= delivery.stream_seq
            })
            .map_or(delivery.at, |earlier| earlier.at);
        if first_delivery {
            if self.recent.len() >= RECENT_DELIVERIES {
                self.recent.pop_front();
            }
            self.recent.push_back(delivery);
        }
        stored_by
    }
}

pub(super) struct Attempts {
    pub(super) stream_seq: u64,
    /// Earlier attempts that did not store its decision, for whatever reason: the pause before
    /// the next one grows with them.
    pub(super) failures: u32,
    /// Of those, the ones where NATS refused the records (`AppendError::Failed`): only these
    /// count towards giving it up (`MAX_FAILURES`). NATS being away, however long, does not.
    pub(super) refusals: u32,
    /// How often handling it panicked (a bug: see [`after_panic`]).
    pub(super) panics: u32,
    /// When a search of the stream first found observations missing before it: the board's
    /// time to re-send them counts from there, not from earlier attempts that could not search
    /// (NATS away during a fault would otherwise use the time up).
    pub(super) gap_found: Option<std::time::Instant>,
}

impl Default for Attempts {
    /// Attempts at no observation (stream sequences start at 1).
    fn default() -> Self {
        Attempts::at(0)
    }
}

impl Attempts {
    pub(super) fn at(stream_seq: u64) -> Attempts {
        Attempts {
            stream_seq,
            failures: 0,
            refusals: 0,
            panics: 0,
            gap_found: None,
        }
    }

    /// The attempts at the observation at `stream_seq`, starting afresh for a new one.
    pub(super) fn of(&mut self, stream_seq: u64) -> &mut Attempts {
        if self.stream_seq != stream_seq {
            *self = Attempts::at(stream_seq);
        }
        self
    }

    /// How long since observations were first found missing before it (none yet: zero).
    pub(super) fn gap_waited(&self) -> Duration {
        self.gap_found.map_or(Duration::ZERO, |at| at.elapsed())
    }
}

/// The first pause before an observation whose decision could not be stored is tried again.
pub(super) const FIRST_RETRY_PAUSE: Duration = Duration::from_millis(250);

/// The observation a message carries, or why it cannot be decided: its payload does not decode,
/// or it is of another board than its subject names.
pub(super) fn read_observation(subject: &str, payload: &[u8]) -> Result<Observation, String> {
    let observation =
        Observation::decode(payload).map_err(|e| format!("undecodable observation: {e}"))?;
    if board_of_subject(subject) != Some(observation.board_id.as_str()) {
        return Err(format!(
            "observation of board {:?} published on subject {subject}",
            observation.board_id
        ));
    }
    Ok(observation)
}

/// The board's observations missing before `device_seq` when `known` is the last accounted for:
/// none when it follows on, and none either when it is implausibly far ahead (no gap to look
/// for: the decision rejects it).
pub(super) fn gap_before(known: u64, device_seq: u64) -> Option<std::ops::Range<u64>> {
    let first_missing = known.checked_add(1)?;
    (device_seq > first_missing && plausible_device_seq(known, device_seq))
        .then_some(first_missing..device_seq)
}

/// What becomes of a delivered observation once it was decided.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Disposition {
    /// Acknowledged: its decision is in the log (or it changed nothing). `complete_first`: it is
    /// the game's last applied observation delivered again, whose decision may have been stored
    /// only in part: complete it before acknowledging.
    Ack { complete_first: bool },
    /// Not acknowledged: JetStream delivers it again after `pause`, and it is decided again.
    Retry { pause: Duration },
    /// To the dead-letter stream with `reason`.
    DeadLetter { reason: String, hole: Hole },
}

/// The hole a dead-lettered observation leaves in its board's record.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Hole {
    /// None: no game is live on the board.
    NoGame,
    /// Already in the record (it was recorded missing before it arrived).
    Recorded,
    /// To be recorded before it goes (for a game in progress).
    ToRecord,
    /// None can be recorded: the board's game cannot be folded here (`AppendError::Unfoldable`)
    /// or its log is broken (`AppendError::LogBroken`). Not accounted for, as with no game: once
    /// the game can be decided on again (a service without the bug, the log mended), the gap
    /// before the board's next observation brings it back (the board's observations meanwhile
    /// go the same way, see `handle`).
    Unrecordable,
}

impl Disposition {
    /// Whether the board's observations up to it count as seen by this instance afterwards (for
    /// the gap before the next one). Not one that found no game: should a game be set up on the
    /// board a moment later (its set-up checked the board before this arrived), the gap before
    /// its next observation brings this one back (see the module comment). Not one to retry.
    /// What became of the observation, for `boardcast_observations_total`.
    pub(super) fn label(&self, decided: &Result<Option<Decision>, AppendError>) -> &'static str {
        match (self, decided) {
            (Disposition::Retry { .. }, _) => "retried",
            (Disposition::DeadLetter { .. }, _) => "dead_lettered",
            (_, Ok(Some(Ok(ObservationOutcome::Events(_))))) => "applied",
            (_, Ok(Some(Ok(ObservationOutcome::Ignored(Ignored::Duplicate { .. }))))) => {
                "duplicate"
            }
            _ => "unchanged",
        }
    }

    pub(super) fn accounts_for_it(&self) -> bool {
        match self {
            Disposition::Ack { .. } => true,
            Disposition::Retry { .. } => false,
            Disposition::DeadLetter { hole, .. } => {
                !matches!(hole, Hole::NoGame | Hole::Unrecordable)
            }
        }
    }
}

/// The disposition of `observation` decided as `decided`, after the earlier `attempts` to store
/// its decision; `seen_before`: the board's last observation this instance had seen (to
/// tell one that arrived too late from a plain duplicate).
pub(super) fn disposition(
    decided: &Result<Option<Decision>, AppendError>,
    observation: &Observation,
    &Attempts {
        failures, refusals, ..
    }: &Attempts,
    seen_before: u64,
) -> Disposition {
    let board = &observation.board_id;
    let dead = |reason: String, hole: Hole| Disposition::DeadLetter { reason, hole };
    match decided {
        Ok(None) => dead(format!("no game is live on board {board}"), Hole::NoGame),
        // Delivered again in a moment, when the gap before it is looked for on the game in play.
        Ok(Some(Err(Undecided::GapFirst))) => Disposition::Retry {
            pause: super::gaps::GAP_RECHECK,
        },
        Ok(Some(Err(undecided))) => dead(undecided.reason(board, observation), Hole::ToRecord),
        Ok(Some(Ok(ObservationOutcome::Events(events)))) => {
            tracing::debug!(%board, seq = observation.device_seq, events = events.len(), "applied");
            Disposition::Ack {
                complete_first: false,
            }
        }
        Ok(Some(Ok(ObservationOutcome::Ignored(Ignored::Duplicate {
            device_seq,
            last_applied,
        })))) => {
            if *device_seq != *last_applied && *device_seq > seen_before {
                tracing::warn!(%board, device_seq, last_applied, "observation arrived too late: a later one of this board was already applied");
            }
            Disposition::Ack {
                complete_first: device_seq == last_applied,
            }
        }
        Ok(Some(Ok(ObservationOutcome::Ignored(Ignored::EarlierGame {
            device_seq,
            earlier_game_last,
        })))) => {
            tracing::info!(%board, device_seq, earlier_game_last, "observation of the board's previous game, delivered after the next game was set up: ignored");
            Disposition::Ack {
                complete_first: false,
            }
        }
        Ok(Some(Ok(ObservationOutcome::Ignored(Ignored::AfterItsGap { device_seq })))) => dead(
            format!(
                "observation {device_seq} of board {board} arrived after it was recorded as missing: the game went on without it"
            ),
            Hole::Recorded,
        ),
        Ok(Some(Ok(ObservationOutcome::Ignored(why)))) => {
            tracing::debug!(%board, seq = observation.device_seq, ?why, "no change");
            Disposition::Ack {
                complete_first: false,
            }
        }
        // Trying again cannot help (a bug, a forked log) and no hole can be recorded.
        Err(e @ (AppendError::Unfoldable { .. } | AppendError::LogBroken { .. })) => {
            dead(e.to_string(), Hole::Unrecordable)
        }
        Err(e @ AppendError::Failed { .. }) if refusals.saturating_add(1) >= MAX_FAILURES => dead(
            format!("its decision could not be stored in {MAX_FAILURES} attempts: {e}"),
            Hole::ToRecord,
        ),
        // NATS away or a conflict: nothing is wrong with the observation, so it is never given
        // up for it, only tried again after a growing pause.
        Err(
            e @ (AppendError::Conflict(_)
            | AppendError::Failed { .. }
            | AppendError::Unavailable { .. }),
        ) => {
            let attempt = failures.saturating_add(1);
            tracing::warn!(%board, seq = observation.device_seq, attempt, "{e}");
            Disposition::Retry {
                pause: FIRST_RETRY_PAUSE.saturating_mul(1 << attempt.clamp(1, 6)),
            }
        }
    }
}

impl Seen {
    /// What was handled of `board` for `game`.
    pub(super) fn of(&self, board: &str, game: Option<&GameFolded>) -> Option<SeenBoard> {
        self.0
            .get(board)
            .filter(|(seen_for, _)| seen_for.as_ref() == game)
            .map(|(_, seen)| *seen)
    }

    /// Keeps the board's highest `device_seq` for `game` and where it is in the stream (a copy
    /// re-sent later, with a lower `device_seq`, does not move that point).
    pub(super) fn note(
        &mut self,
        board: &str,
        game: Option<&GameFolded>,
        device_seq: u64,
        stream_seq: u64,
    ) {
        let (seen_for, entry) = self.0.entry(board.to_owned()).or_default();
        if seen_for.as_ref() != game {
            *seen_for = game.cloned();
            *entry = SeenBoard::default();
        }
        if device_seq >= entry.device_seq {
            entry.device_seq = device_seq;
            entry.stream_seq = entry.stream_seq.max(stream_seq);
        }
    }
}

/// Why an observation was not decided.
#[derive(Debug)]
pub(super) enum Undecided {
    Rejected(Rejected),
    /// The decision panicked: a bug, with the panic's message.
    Panicked(String),
    /// The board's game was over when the gap before the observation was looked for and is in
    /// play now (play resumed meanwhile), with observations between: those are read first.
    GapFirst,
}

impl Undecided {
    /// Why `observation` of `board` is unusable, as its dead letter and its hole say.
    pub(super) fn reason(&self, board: &str, observation: &Observation) -> String {
        match self {
            Undecided::Rejected(rejected) => rejected.to_string(),
            Undecided::Panicked(panic) => {
                tracing::error!(%board, seq = observation.device_seq, "deciding an observation panicked (a bug): {panic}");
                format!("deciding it failed unexpectedly (a bug): {panic}")
            }
            Undecided::GapFirst => {
                "the observations before it are to be decided first (play resumed)".to_owned()
            }
        }
    }
}

pub(super) type Decision = Result<ObservationOutcome, Undecided>;

/// Runs a decision, a panic in it (a bug) becoming `Undecided::Panicked` with its message:
/// deciding only reads the game, so a panic leaves nothing half-changed, and deciding again would
/// panic again.
pub(super) fn caught<T>(decide: impl FnOnce() -> Result<T, Rejected>) -> Result<T, Undecided> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(decide))
        .map_err(|payload| Undecided::Panicked(panic_text(payload.as_ref())))?
        .map_err(Undecided::Rejected)
}

#[cfg(test)]
mod tests {
    use boardcast_game::device::{ClockReading, observation::Kind};
    use proptest::prelude::*;

    use super::*;

    fn observation(board: String, device_seq: u64, ms: u64) -> Observation {
        Observation {
            board_id: board,
            device_seq,
            device_time_unix_ms: ms as i64,
            kind: Some(Kind::Clock(ClockReading {
                white_remaining_ms: ms,
                black_remaining_ms: u64::MAX - ms,
                ..Default::default()
            })),
            ..Default::default()
        }
    }

    proptest! {
        /// Any bytes on any subject: read, or refused with a reason; never a panic.
        #[test]
        fn any_message_is_read_or_refused_with_a_reason(
            subject in "[a-z0-9.*>]{0,40}",
            payload in proptest::collection::vec(any::<u8>(), 0..600),
        ) {
            match read_observation(&subject, &payload) {
                Ok(o) => prop_assert_eq!(board_of_subject(&subject), Some(o.board_id.as_str())),
                Err(reason) => prop_assert!(!reason.is_empty()),
            }
        }

        /// A well-formed observation with extreme values is read exactly when its subject names
        /// its board, partitioned or not.
        #[test]
        fn an_observation_is_read_only_on_its_boards_subject(
            board in "[a-z0-9-]{1,12}",
            other in "[a-z0-9-]{1,12}",
            device_seq in any::<u64>(),
            ms in any::<u64>(),
            partition in 0u32..64,
        ) {
            let payload = observation(board.clone(), device_seq, ms).encode_to_vec();
            for subject in [
                format!("boardcast.board.{board}.obs"),
                format!("boardcast.board.{board}.obs.{partition}"),
            ] {
                let read = read_observation(&subject, &payload).expect("its own board");
                prop_assert_eq!(read.device_seq, device_seq);
            }
            let elsewhere = read_observation(&format!("boardcast.board.{other}.obs"), &payload);
            prop_assert_eq!(elsewhere.is_ok(), other == board);
        }

        /// Whatever a decision came to, after any number of attempts and whatever the board's
        /// numbers: a disposition and no panic, a reason for every dead letter, a bounded pause
        /// for every retry, and never a give-up for a conflict or NATS being away.
        #[test]
        fn every_decision_has_a_disposition(
            outcome in 0u8..12,
            device_seq in any::<u64>(),
            other_seq in any::<u64>(),
            ms in any::<u64>(),
            failures in any::<u32>(),
            refusals in any::<u32>(),
            seen_before in any::<u64>(),
        ) {
            let obs = observation("b1".into(), device_seq, ms);
            let ignored = |why: Ignored| decided(Ok(ObservationOutcome::Ignored(why)));
            let decision = match outcome {
                0 => Ok(None),
                1 => decided(Err(Undecided::Rejected(Rejected::ImplausibleClock { ms }))),
                2 => decided(Err(Undecided::Rejected(Rejected::ImplausibleSequence {
                    device_seq,
                    accounted: other_seq,
                }))),
                3 => decided(Err(Undecided::Panicked("attempt to add with overflow".into()))),
                4 => decided(Ok(ObservationOutcome::Events(Vec::new()))),
                5 => ignored(Ignored::Duplicate { device_seq, last_applied: other_seq }),
                6 => ignored(Ignored::EarlierGame { device_seq, earlier_game_last: other_seq }),
                7 => ignored(Ignored::AfterItsGap { device_seq }),
                8 => ignored(Ignored::GameOver),
                9 => Err(AppendError::Conflict("g".into())),
                10 => Err(AppendError::Unavailable {
                    game_id: "g".into(),
                    reason: "timed out".into(),
                }),
                _ => Err(AppendError::Failed {
                    game_id: "g".into(),
                    reason: "maximum payload exceeded".into(),
                }),
            };
            let tried = &Attempts { failures, refusals, ..Attempts::default() };
            match disposition(&decision, &obs, tried, seen_before) {
                Disposition::DeadLetter { reason, .. } => prop_assert!(!reason.is_empty()),
                Disposition::Retry { pause } => {
                    prop_assert!(pause <= FIRST_RETRY_PAUSE.saturating_mul(64), "{pause:?}");
                }
                Disposition::Ack { .. } => prop_assert!((4..=8).contains(&outcome)),
            }
            if (9..=10).contains(&outcome) {
                let retried = matches!(
                    disposition(&decision, &obs, tried, seen_before),
                    Disposition::Retry { .. }
                );
                prop_assert!(retried, "a conflict or NATS away is tried again");
            }
        }

        /// The gap arithmetic never overflows: a gap is the numbers strictly between the last
        /// one accounted for and the new one, and only for a plausible jump.
        #[test]
        fn a_gap_lies_strictly_between(known in any::<u64>(), device_seq in any::<u64>()) {
            match gap_before(known, device_seq) {
                Some(gap) => {
                    prop_assert!(known < gap.start && gap.start < gap.end);
                    prop_assert_eq!(gap.end, device_seq);
                    prop_assert!(plausible_device_seq(known, device_seq));
                }
                None => prop_assert!(
                    device_seq <= known.saturating_add(1)
                        || !plausible_device_seq(known, device_seq)
                ),
            }
        }
    }

    fn decided(
        outcome: Result<ObservationOutcome, Undecided>,
    ) -> Result<Option<Decision>, AppendError> {
        Ok(Some(outcome))
    }

    #[test]
    fn a_panic_in_a_decision_becomes_an_undecided_observation_with_its_message() {
        // An arithmetic overflow (overflow checks are on in every build profile).
        let overflowed = caught(|| Ok(std::hint::black_box(u64::MAX) + 1));
        assert!(
            matches!(&overflowed, Err(Undecided::Panicked(m)) if m.contains("overflow")),
            "{overflowed:?}"
        );
        let with_text = caught::<()>(|| panic!("a bug on board {}", 7));
        assert!(
            matches!(&with_text, Err(Undecided::Panicked(m)) if m == "a bug on board 7"),
            "{with_text:?}"
        );
        let rejected = caught::<()>(|| Err(Rejected::Empty));
        assert!(matches!(
            rejected,
            Err(Undecided::Rejected(Rejected::Empty))
        ));
        assert!(matches!(caught(|| Ok(5)), Ok(5)));
    }

    #[test]
    fn each_decision_has_its_disposition() {
        let obs = observation("b1".into(), 7, 1_000);
        let ack = Disposition::Ack {
            complete_first: false,
        };
        let applied = decided(Ok(ObservationOutcome::Events(Vec::new())));
        assert_eq!(disposition(&applied, &obs, &Attempts::default(), 6), ack);
        let no_change = decided(Ok(ObservationOutcome::Ignored(Ignored::ClockTick)));
        assert_eq!(disposition(&no_change, &obs, &Attempts::default(), 6), ack);
        // The last applied one again: its decision may be stored in part, complete it.
        let again = |last_applied| {
            decided(Ok(ObservationOutcome::Ignored(Ignored::Duplicate {
                device_seq: 7,
                last_applied,
            })))
        };
        assert_eq!(
            disposition(&again(7), &obs, &Attempts::default(), 7),
            Disposition::Ack {
                complete_first: true
            }
        );
        assert_eq!(disposition(&again(9), &obs, &Attempts::default(), 9), ack);
        // No game on the board: dead-lettered, not counted as seen (a game set up a moment later
        // brings it back).
        let none = disposition(&Ok(None), &obs, &Attempts::default(), 6);
        assert!(
            matches!(&none, Disposition::DeadLetter { hole: Hole::NoGame, reason } if reason.contains("b1"))
        );
        assert!(!none.accounts_for_it());
        // Refused for good, or a bug: dead-lettered, with the hole recorded first.
        let refused = decided(Err(Undecided::Rejected(Rejected::InvalidSquare(99))));
        let panicked = decided(Err(Undecided::Panicked("overflow".into())));
        for decided in [refused, panicked] {
            let d = disposition(&decided, &obs, &Attempts::default(), 6);
            assert!(
                matches!(
                    &d,
                    Disposition::DeadLetter {
                        hole: Hole::ToRecord,
                        ..
                    }
                ),
                "{d:?}"
            );
            assert!(d.accounts_for_it());
        }
        // Play resumed after the gap before it was looked for: delivered again in a moment,
        // not counted as seen, so that the gap is looked for then.
        let gap_first = disposition(
            &decided(Err(Undecided::GapFirst)),
            &obs,
            &Attempts::default(),
            6,
        );
        assert!(
            matches!(gap_first, Disposition::Retry { .. }),
            "{gap_first:?}"
        );
        assert!(!gap_first.accounts_for_it());
        // After its gap was recorded: dead-lettered, the hole is in the record already.
        let late = decided(Ok(ObservationOutcome::Ignored(Ignored::AfterItsGap {
            device_seq: 7,
        })));
        assert!(matches!(
            disposition(&late, &obs, &Attempts::default(), 9),
            Disposition::DeadLetter {
                hole: Hole::Recorded,
                ..
            }
        ));
    }

    #[test]
    fn a_decision_that_cannot_be_stored_is_retried_with_growing_pauses_then_given_up() {
        let obs = observation("b1".into(), 7, 1_000);
        let failed = Err(AppendError::Failed {
            game_id: "g".into(),
            reason: "maximum payload exceeded".into(),
        });
        let refused = |n: u32| Attempts {
            failures: n,
            refusals: n,
            ..Attempts::default()
        };
        let pauses: Vec<Duration> = (0..MAX_FAILURES - 1)
            .map(|n| match disposition(&failed, &obs, &refused(n), 6) {
                Disposition::Retry { pause } => pause,
                other => panic!("attempt {n}: {other:?}"),
            })
            .collect();
        assert!(pauses.windows(2).all(|p| p[0] < p[1]), "{pauses:?}");
        assert!(matches!(
            disposition(&failed, &obs, &refused(MAX_FAILURES - 1), 6),
            Disposition::DeadLetter {
                hole: Hole::ToRecord,
                ..
            }
        ));
        // Only refusals count: after an election's many attempts, a first refusal is tried again.
        let after_an_election = Attempts {
            failures: 50,
            ..Attempts::default()
        };
        assert!(matches!(
            disposition(&failed, &obs, &after_an_election, 6),
            Disposition::Retry { .. }
        ));
        // A conflict is never given up here: the log moved on, the decision is made again. Nor
        // is NATS being away (an election can last longer than the five attempts).
        let conflict = Err(AppendError::Conflict("b1".into()));
        let unavailable = Err(AppendError::Unavailable {
            game_id: "g".into(),
            reason: "no stream found for given subject".into(),
        });
        for not_given_up in [conflict, unavailable] {
            assert!(matches!(
                disposition(&not_given_up, &obs, &refused(50), 6),
                Disposition::Retry { .. }
            ));
        }
    }

    #[test]
    fn a_game_that_trying_again_cannot_mend_gives_its_observations_up_at_once() {
        let obs = observation("b1".into(), 7, 1_000);
        let forked = Err(AppendError::LogBroken {
            game_id: "g".into(),
            reason: "it holds two records numbered 4: forked".into(),
        });
        let unfoldable = Err(AppendError::Unfoldable {
            game_id: "g".into(),
            reason: "folding record 4 panicked".into(),
        });
        for stuck in [forked, unfoldable] {
            let d = disposition(&stuck, &obs, &Attempts::default(), 6);
            let said = stuck.as_ref().err().map(ToString::to_string);
            match &d {
                Disposition::DeadLetter {
                    reason,
                    hole: Hole::Unrecordable,
                } => assert_eq!(Some(reason), said.as_ref()),
                other => panic!("{other:?}"),
            }
            assert!(!d.accounts_for_it(), "found in the gap once it is mended");
        }
    }

    #[test]
    fn an_observation_is_known_stored_by_an_earlier_delivery_only_when_all_in_between_came_here() {
        let t0 = std::time::Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        let delivery = |stream_seq, ms, pending| Delivery {
            stream_seq,
            at: at(ms),
            pending,
        };
        let mut state = PartitionState::default();
        // The first one seen: only now.
        assert_eq!(state.stored_by(delivery(10, 0, 5), true), at(0));
        // The next ones in the stream, which the stream held when 10 came (five more: up to
        // 15): stored by then.
        assert_eq!(state.stored_by(delivery(11, 2, 4), true), at(0));
        assert_eq!(state.stored_by(delivery(12, 4, 3), true), at(0));
        assert_eq!(state.stored_by(delivery(13, 6, 3), true), at(0));
        assert_eq!(state.stored_by(delivery(14, 8, 2), true), at(0));
        assert_eq!(state.stored_by(delivery(15, 10, 0), true), at(0));
        // 16 was stored after 12 was handed out, before 13 was.
        assert_eq!(state.stored_by(delivery(16, 12, 0), true), at(6));
        // Nothing was waiting when 16 came: 17 may have been stored after it.
        assert_eq!(state.stored_by(delivery(17, 14, 0), true), at(14));
        // A message skipped (handed to another instance, or removed): only now.
        assert_eq!(state.stored_by(delivery(19, 16, 9), true), at(16));
        // Delivered again (NAKed, or its acknowledgement lost): only now, and the run restarts.
        assert_eq!(state.stored_by(delivery(20, 18, 9), false), at(18));
        assert_eq!(state.stored_by(delivery(21, 20, 9), true), at(20));
        assert_eq!(state.stored_by(delivery(22, 22, 9), true), at(20));
        // Stream sequences at the end of u64 do not wrap around.
        let mut state = PartitionState::default();
        assert_eq!(
            state.stored_by(delivery(u64::MAX, 0, u64::MAX), true),
            at(0)
        );
        assert_eq!(state.stored_by(delivery(0, 2, 0), true), at(2));
    }

    #[test]
    fn what_was_seen_of_a_board_holds_for_its_game_as_folded_then_only() {
        let mut seen = Seen::default();
        let game = |id: &str, generation| (id.to_owned(), generation);
        seen.note("b1", Some(&game("g", 0)), 6, 60);
        seen.note("b1", Some(&game("g", 0)), 4, 70);
        let of = |g: &GameFolded| seen.of("b1", Some(g)).map(|s| (s.device_seq, s.stream_seq));
        assert_eq!(
            of(&game("g", 0)),
            Some((6, 60)),
            "a re-sent one moves nothing"
        );
        // Folded afresh from its log (records it held may have been removed): none holds.
        assert_eq!(of(&game("g", 1)), None);
        // Nor for another game set up on the board.
        assert_eq!(of(&game("h", 0)), None);
    }

    #[test]
    fn gaps_at_the_edges() {
        assert_eq!(gap_before(0, 1), None);
        assert_eq!(gap_before(0, 3), Some(1..3));
        assert_eq!(gap_before(5, 6), None);
        assert_eq!(gap_before(u64::MAX, 1), None);
        assert_eq!(gap_before(u64::MAX - 1, u64::MAX), None);
        // Far beyond any plausible jump: not a gap to look for, the decision rejects it.
        assert_eq!(gap_before(10, u64::MAX), None);
    }
}

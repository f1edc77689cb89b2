//! The organiser's delay: per tournament or per round, 0 to 60 minutes.

use std::collections::BTreeMap;

use crate::RoundKey;

/// The longest delay an organiser may set (lichess allows the same hour).
pub const MAX_DELAY_MS: u64 = 60 * 60 * 1000;

/// A round with a delay of at least this much is released in steps (see [`release_step_ms`]).
pub const STEPPED_FROM_MS: u64 = 20_000;
/// The step: what is recorded within one step of the clock is shown at the same moment.
pub const RELEASE_STEP_MS: i64 = 5_000;

/// How a round with `delay_ms` is released: continuously (0), or in steps of this many ms on
/// the clock's own grid (multiples of the step since the epoch), so that every instance moves
/// its release point at the same moments and a copy of the round stays the newest until the
/// next step, which says nothing of what is held back.
pub fn release_step_ms(delay_ms: u64) -> i64 {
    if delay_ms >= STEPPED_FROM_MS {
        RELEASE_STEP_MS
    } else {
        0
    }
}

/// The release point at `now` for `delay_ms`: `now − delay`, down to its step.
pub fn release_point(now_unix_ms: i64, delay_ms: u64) -> i64 {
    let until = now_unix_ms.saturating_sub(i64::try_from(delay_ms).unwrap_or(i64::MAX));
    match release_step_ms(delay_ms) {
        0 => until,
        step => until - until.rem_euclid(step),
    }
}

/// When an event recorded at `recorded_unix_ms` is shown under `delay_ms`: the first moment
/// whose release point reaches it.
pub fn shown_at(recorded_unix_ms: i64, delay_ms: u64) -> i64 {
    let delay = i64::try_from(delay_ms).unwrap_or(i64::MAX);
    let reached = match release_step_ms(delay_ms) {
        0 => recorded_unix_ms,
        step => {
            let past = recorded_unix_ms.rem_euclid(step);
            if past == 0 {
                recorded_unix_ms
            } else {
                recorded_unix_ms.saturating_add(step - past)
            }
        }
    };
    reached.saturating_add(delay)
}

/// Which delay applies to which round: a round's own, else its tournament's, else the default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Delays {
    default_ms: u64,
    tournaments: BTreeMap<String, u64>,
    rounds: BTreeMap<RoundKey, u64>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DelayError {
    #[error("a delay of {minutes} minutes is too long: at most 60")]
    TooLong { minutes: u64 },
    #[error(
        "delay {0:?}: write MINUTES for every round, TOURNAMENT=MINUTES or TOURNAMENT/ROUND=MINUTES \
         (SECONDS followed by s instead of MINUTES, e.g. 90s)"
    )]
    Unreadable(String),
    #[error("delay {setting:?}: {reason}")]
    BadTournament { setting: String, reason: String },
}

/// A tournament id no game can have is refused: a setting for it would never apply.
fn checked_tournament(tournament: &str, setting: &str) -> Result<String, DelayError> {
    boardcast_game::validate_tournament_id(tournament).map_err(|e| DelayError::BadTournament {
        setting: setting.to_owned(),
        reason: e.to_string(),
    })?;
    Ok(tournament.to_owned())
}

/// `MINUTES`, or `SECONDS` followed by `s` (e.g. `90s`), as milliseconds.
fn checked_duration(text: &str, whole: &str) -> Result<u64, DelayError> {
    let text = text.trim();
    let (number, unit_ms) = match text.strip_suffix('s') {
        Some(seconds) => (seconds, 1000),
        None => (text, 60_000),
    };
    let value: u64 = number
        .parse()
        .map_err(|_| DelayError::Unreadable(whole.to_owned()))?;
    let ms = value
        .checked_mul(unit_ms)
        .filter(|ms| *ms <= MAX_DELAY_MS)
        .ok_or(DelayError::TooLong {
            minutes: value.saturating_mul(unit_ms) / 60_000,
        })?;
    Ok(ms)
}

impl Delays {
    /// No delay anywhere.
    pub fn none() -> Delays {
        Delays::default()
    }

    /// The delay for `key`.
    pub fn delay_ms(&self, key: &RoundKey) -> u64 {
        self.rounds
            .get(key)
            .or_else(|| self.tournaments.get(&key.tournament_id))
            .copied()
            .unwrap_or(self.default_ms)
    }

    /// Sets the delay of a tournament (`round` 0: every round without its own) or of one round.
    pub fn set(
        &mut self,
        tournament_id: &str,
        round: u32,
        delay_ms: u64,
    ) -> Result<(), DelayError> {
        if delay_ms > MAX_DELAY_MS {
            return Err(DelayError::TooLong {
                minutes: delay_ms / 60_000,
            });
        }
        if round == 0 {
            self.tournaments.insert(tournament_id.to_owned(), delay_ms);
        } else {
            self.rounds.insert(
                RoundKey {
                    tournament_id: tournament_id.to_owned(),
                    round,
                },
                delay_ms,
            );
        }
        Ok(())
    }

    /// Reads settings as written on the command line: `MINUTES` (every round),
    /// `TOURNAMENT=MINUTES`, `TOURNAMENT/ROUND=MINUTES`, with `SECONDS` followed by `s` in place
    /// of minutes where wanted (`open/9=90s`); later settings override earlier ones.
    pub fn parse<'a>(settings: impl IntoIterator<Item = &'a str>) -> Result<Delays, DelayError> {
        let mut delays = Delays::default();
        for setting in settings {
            match setting.split_once('=') {
                None => delays.default_ms = checked_duration(setting, setting)?,
                Some((target, minutes)) => {
                    let ms = checked_duration(minutes, setting)?;
                    let target = target.trim();
                    match target.rsplit_once('/') {
                        Some((tournament, round)) => {
                            let round = round
                                .parse()
                                .map_err(|_| DelayError::Unreadable(setting.to_owned()))?;
                            if tournament.is_empty() {
                                return Err(DelayError::Unreadable(setting.to_owned()));
                            }
                            delays.rounds.insert(
                                RoundKey {
                                    tournament_id: checked_tournament(tournament, setting)?,
                                    round,
                                },
                                ms,
                            );
                        }
                        None if !target.is_empty() => {
                            delays
                                .tournaments
                                .insert(checked_tournament(target, setting)?, ms);
                        }
                        None => return Err(DelayError::Unreadable(setting.to_owned())),
                    }
                }
            }
        }
        Ok(delays)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_setting_for_a_tournament_id_no_game_can_have_is_refused() {
        for setting in ["Hall Open=15", "Hall Open/2=15", "open?=5"] {
            let refused = Delays::parse([setting]).expect_err(setting);
            assert!(
                matches!(refused, DelayError::BadTournament { .. }),
                "{setting}: {refused}"
            );
        }
        assert!(Delays::parse(["hall-open=15", "hall_open/2=15"]).is_ok());
    }

    fn key(t: &str, round: u32) -> RoundKey {
        RoundKey {
            tournament_id: t.into(),
            round,
        }
    }

    #[test]
    fn a_round_overrides_its_tournament_which_overrides_the_default() {
        let delays = Delays::parse(["15", "open=30", "open/9=0", "open/7=90s"]).expect("valid");
        assert_eq!(delays.delay_ms(&key("open", 9)), 0);
        assert_eq!(delays.delay_ms(&key("open", 7)), 90_000);
        assert_eq!(delays.delay_ms(&key("open", 8)), 30 * 60_000);
        assert_eq!(delays.delay_ms(&key("blitz", 1)), 15 * 60_000);
    }

    #[test]
    fn more_than_an_hour_or_nonsense_is_refused() {
        assert_eq!(
            Delays::parse(["61"]),
            Err(DelayError::TooLong { minutes: 61 })
        );
        assert_eq!(
            Delays::parse(["3601s"]),
            Err(DelayError::TooLong { minutes: 60 })
        );
        assert!(Delays::parse([&format!("{}", u64::MAX)][..].iter().map(|s| s.as_str())).is_err());
        assert!(matches!(
            Delays::parse(["open/x=5"]),
            Err(DelayError::Unreadable(_))
        ));
        assert!(matches!(
            Delays::parse(["=5"]),
            Err(DelayError::Unreadable(_))
        ));
        assert!(matches!(
            Delays::parse(["-1"]),
            Err(DelayError::Unreadable(_))
        ));
    }
}

//! The clock against the time control: each completed move's reading compared with what the
//! time control predicts, and what fallen flags mean.

use shakmaty::Color;

use crate::device::Observation;
use crate::events::{ClockAlert, GameEnded, Side, Source, game_event::Kind};
use crate::record::NewEvent;
use crate::state::{ClockChange, Game};
use crate::wording;

impl Game {
    /// Compares the mover's clock after the press with what the time control predicts from
    /// the mover's previous reading and the time since the opponent's press: previous − thinking
    /// time + increment (+ the next period's time when this move completes a period).
    pub(super) fn clock_alert(
        &self,
        obs: &Observation,
        ply: u32,
        clocks: (u64, u64),
    ) -> Option<NewEvent> {
        const TOLERANCE_MS: u64 = 5_000;
        let mover_is_white = ply % 2 == 1;
        let mover = if mover_is_white {
            Side::White
        } else {
            Side::Black
        };
        // The mover's previous move, and the opponent's move that started the mover's clock.
        let index = ply as usize - 1;
        // Both read on the clock the game is on now (see `ClockState::new_clock_at`).
        if self
            .clock
            .new_clock_at
            .is_some_and(|at| index < at.saturating_add(2))
        {
            return None;
        }
        let previous = self.moves.get(index.checked_sub(2)?)?;
        let opponent = self.moves.get(index.checked_sub(1)?)?;
        // Values from the log (an arbiter's, a clock's) are checked as they are combined: a
        // number no clock shows leaves nothing to predict from, never an overflow.
        let mut start_ms = if mover_is_white {
            previous.event.white_remaining_ms
        } else {
            previous.event.black_remaining_ms
        }
        .and_then(|ms| i64::try_from(ms).ok());
        if opponent.device_time_unix_ms <= 0
            || obs.device_time_unix_ms < opponent.device_time_unix_ms
        {
            return None;
        }
        let thinking = obs.device_time_unix_ms - opponent.device_time_unix_ms;
        let periods = &self.info.time_control.as_ref()?.periods;
        let own_move = ply.div_ceil(2);
        let effect = period_effect(periods, own_move);
        let (bonus, boundary) = (effect.bonus_ms, effect.completes_period);
        // What the arbiter did to the mover's clock since the mover's previous move, in order:
        // time added counts; a clock set before the opponent's move started the mover's clock
        // is the new starting point; one set while it ran (the moment is not known in device
        // time) leaves nothing to predict from.
        for (completed, _, change) in self
            .clock
            .changes
            .iter()
            .filter(|(completed, _, _)| (index - 1..=index).contains(completed))
        {
            let while_running = *completed == index;
            let mover = |white: Option<u64>, black: Option<u64>| {
                if mover_is_white { white } else { black }
            };
            match *change {
                ClockChange::Added { white_ms, black_ms } => {
                    let added = if mover_is_white { white_ms } else { black_ms };
                    start_ms = start_ms.and_then(|ms| ms.checked_add(added));
                }
                ClockChange::Set { white, black } => {
                    if let Some(ms) = mover(white, black) {
                        if while_running {
                            return None;
                        }
                        start_ms = i64::try_from(ms).ok();
                    }
                }
                ClockChange::Restored { white, black } => match mover(white, black) {
                    Some(ms) if !while_running => start_ms = i64::try_from(ms).ok(),
                    _ => return None,
                },
            }
        }
        let delay = i64::try_from(effect.delay_ms).ok()?;
        let increment = i64::try_from(effect.increment_ms).ok()?;
        let bonus_ms = i64::try_from(bonus).ok()?;
        let used = thinking.checked_sub(delay)?.max(0);
        let expected = start_ms?
            .checked_sub(used)?
            .checked_add(increment)?
            .checked_add(bonus_ms)?;
        let reported = i64::try_from(if mover_is_white { clocks.0 } else { clocks.1 }).ok()?;
        let difference = reported.checked_sub(expected)?;
        if difference.unsigned_abs() <= TOLERANCE_MS {
            return None;
        }
        let reason = if boundary && reported < expected.saturating_sub(bonus_ms / 2) {
            format!(
                "the next period's {} min were not added after move {own_move}",
                bonus / 60_000
            )
        } else {
            format!(
                "the clock differs by {} s from the time control's prediction",
                difference / 1000
            )
        };
        Some(NewEvent {
            kind: Kind::ClockAlert(ClockAlert {
                ply,
                side: wording::side(mover).to_owned(),
                clock_of: mover as i32,
                expected_ms: expected.max(0) as u64,
                reported_ms: reported.max(0) as u64,
                reason,
            }),
            provenance: self.provenance(obs, Source::Clock, vec![obs.device_seq]),
        })
    }

    /// What newly fallen flags mean (Article 6.9; both flags: 6.11 / the rapid and blitz rules).
    pub(super) fn flag_verdict(&self, white: bool, black: bool) -> Option<GameEnded> {
        use boardcast_rules::outcome::{both_flags_fallen, flag_fall};
        let end = match (white, black) {
            (true, true) => both_flags_fallen(&self.rules, self.in_last_period())?,
            (true, false) if !self.clock.flags.0 => {
                flag_fall(&self.rules, &self.position, Color::White)
            }
            (false, true) if !self.clock.flags.1 => {
                flag_fall(&self.rules, &self.position, Color::Black)
            }
            _ => return None,
        };
        Some(crate::terms::ending_of(&end))
    }

    /// Play is in the time control's last period (the moves of the earlier ones are made).
    pub(super) fn in_last_period(&self) -> bool {
        let periods = self
            .info
            .time_control
            .as_ref()
            .map(|tc| tc.periods.as_slice())
            .unwrap_or_default();
        let before_last: u32 = periods
            .iter()
            .take(periods.len().saturating_sub(1))
            .map(|p| p.moves)
            .sum();
        // Full moves of the side that moves least: White's count equals or exceeds Black's.
        let full_moves = (self.moves.len() / 2) as u32;
        full_moves >= before_last
    }
}

/// For a player's `own_move`-th move: the increment added after it, the delay before its clock
/// runs, the time added because it completes a period (the next period's base), and whether it
/// does.
fn period_effect(periods: &[crate::events::TimePeriod], own_move: u32) -> PeriodEffect {
    let mut first_move = 1;
    for (i, period) in periods.iter().enumerate() {
        let last_move = if period.moves == 0 {
            u32::MAX
        } else {
            first_move + period.moves - 1
        };
        if own_move <= last_move {
            let completes = period.moves != 0 && own_move == last_move;
            let bonus = if completes {
                periods.get(i + 1).map(|p| p.base_ms).unwrap_or(0)
            } else {
                0
            };
            return PeriodEffect {
                increment_ms: period.increment_ms,
                delay_ms: period.delay_ms,
                bonus_ms: bonus,
                completes_period: completes,
            };
        }
        first_move = last_move + 1;
    }
    PeriodEffect::default()
}

/// What the time control does to the mover's clock on one move.
#[derive(Debug, Default, Clone, Copy)]
struct PeriodEffect {
    increment_ms: u64,
    /// Thinking time up to this much is not taken from the clock (delay mode).
    delay_ms: u64,
    /// The next period's time, added when this move completes a period.
    bonus_ms: u64,
    completes_period: bool,
}

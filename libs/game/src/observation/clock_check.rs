//! The clock against the time control: each completed move's reading compared with what the
//! time control predicts, and what fallen flags mean.

use shakmaty::{Color, Position};

use crate::device::{ClockReading, ClockRun, Observation};
use crate::events::{ClockAlert, GameEnded, Side, Source, game_event::Kind};
use crate::record::NewEvent;
use crate::state::{ClockChange, Game};
use crate::wording;

/// A reading this far from what the time control predicts is the clock's and the board's
/// timing (a press seen a moment late), not a clock set or running wrongly.
const TOLERANCE_MS: u64 = 5_000;

impl Game {
    /// The alert for the press completing `ply` when the mover's clock is not what the time
    /// control predicts from the mover's previous reading and the time since the opponent's
    /// press: previous − thinking time + increment (+ the next period's time when this move
    /// completes a period). From interpretation 7 Black's first move is predicted from Black's
    /// clock at White's first press (it had not run), and a difference the mover's earlier moves
    /// showed too since one that was told (a clock adding the wrong increment) is not told again.
    pub(super) fn clock_alert(
        &self,
        obs: &Observation,
        ply: u32,
        clocks: (u64, u64),
    ) -> Option<NewEvent> {
        let mover_is_white = ply % 2 == 1;
        let reported = if mover_is_white { clocks.0 } else { clocks.1 };
        let prediction = self.predicted(ply, obs.device_time_unix_ms, reported)?;
        let difference = prediction.difference()?;
        if difference.unsigned_abs() <= TOLERANCE_MS {
            return None;
        }
        if self.interpretation >= 7 && self.told_in_this_run(ply, difference) {
            return None;
        }
        let own_move = ply.div_ceil(2);
        let Prediction {
            expected,
            reported,
            bonus_ms,
            completes_period,
            increment_ms,
        } = prediction;
        let reason = if completes_period && reported < expected.saturating_sub(bonus_ms / 2) {
            format!(
                "the next period's {} min were not added after move {own_move}",
                bonus_ms / 60_000
            )
        } else if self.interpretation >= 7
            && increment_ms.unsigned_abs() > TOLERANCE_MS
            && difference.saturating_add(increment_ms).unsigned_abs() <= TOLERANCE_MS
        {
            format!(
                "the {} s increment was not added after move {own_move}",
                increment_ms / 1000
            )
        } else {
            format!(
                "the clock differs by {} s from the time control's prediction",
                difference / 1000
            )
        };
        let mover = if mover_is_white {
            Side::White
        } else {
            Side::Black
        };
        Some(NewEvent {
            kind: Kind::ClockAlert(ClockAlert {
                ply,
                side: wording::side(mover).to_owned(),
                clock_of: mover as i32,
                expected_ms: expected.max(0) as u64,
                reported_ms: reported.max(0) as u64,
                reason,
                flag_not_counted: false,
            }),
            provenance: self.provenance(obs, Source::Clock, vec![obs.device_seq]),
        })
    }

    /// The mover's earlier moves back to one the arbiter was told of were all off their
    /// predictions by about `difference` too (a clock adding the wrong increment on every move):
    /// this move continues a run already told.
    fn told_in_this_run(&self, ply: u32, difference: i64) -> bool {
        let mut before = ply;
        loop {
            before = match before.checked_sub(2) {
                Some(earlier) if earlier > 0 => earlier,
                _ => return false,
            };
            let Some(earlier) = self.moves.get(before as usize - 1) else {
                return false;
            };
            let reported = if before % 2 == 1 {
                earlier.event.white_remaining_ms
            } else {
                earlier.event.black_remaining_ms
            };
            let same = reported
                .and_then(|ms| self.predicted(before, earlier.device_time_unix_ms, ms))
                .and_then(|then| then.difference())
                .is_some_and(|then| {
                    then.unsigned_abs() > TOLERANCE_MS
                        && then
                            .checked_sub(difference)
                            .is_some_and(|d| d.unsigned_abs() <= TOLERANCE_MS)
                });
            if !same {
                return false;
            }
            if self.clock.alerted.contains(&(before, earlier.game_seq)) {
                return true;
            }
        }
    }

    /// What the time control predicts of the mover's clock at the press completing `ply`, made
    /// at `pressed_at_ms` with the mover's clock then showing `reported_ms`; `None` when nothing
    /// can be predicted (no earlier reading, another clock, a clock set while it ran).
    fn predicted(&self, ply: u32, pressed_at_ms: i64, reported_ms: u64) -> Option<Prediction> {
        let mover_is_white = ply % 2 == 1;
        // The mover's previous move, and the opponent's move that started the mover's clock.
        let index = (ply as usize).checked_sub(1)?;
        // Both read on the clock the game is on now (see `ClockState::new_clock_at`).
        if self
            .clock
            .new_clock_at
            .is_some_and(|at| index < at.saturating_add(2))
        {
            return None;
        }
        let opponent = self.moves.get(index.checked_sub(1)?)?;
        // The reading the prediction starts from, and the completed moves when it was made:
        // the mover's previous move, or for Black's first move White's (Black's clock had not
        // run before it).
        let (previous, read_at_completed) = match index.checked_sub(2) {
            Some(before) => (self.moves.get(before)?, before + 1),
            None if self.interpretation >= 7
                && !mover_is_white
                && self.start.turn() == Color::White =>
            {
                (opponent, index)
            }
            None => return None,
        };
        // Values from the log (an arbiter's, a clock's) are checked as they are combined: a
        // number no clock shows leaves nothing to predict from, never an overflow.
        let mut start_ms = if mover_is_white {
            previous.event.white_remaining_ms
        } else {
            previous.event.black_remaining_ms
        }
        .and_then(|ms| i64::try_from(ms).ok());
        if opponent.device_time_unix_ms <= 0 || pressed_at_ms < opponent.device_time_unix_ms {
            return None;
        }
        let thinking = pressed_at_ms - opponent.device_time_unix_ms;
        let periods = &self.info.time_control.as_ref()?.periods;
        let effect = period_effect(periods, ply.div_ceil(2));
        // What the arbiter did to the mover's clock since the reading predicted from, in order:
        // time added counts; a clock set before the opponent's move started the mover's clock
        // is the new starting point; one set while it ran (the moment is not known in device
        // time) leaves nothing to predict from.
        for (completed, _, change) in self
            .clock
            .changes
            .iter()
            .filter(|(completed, _, _)| (read_at_completed..=index).contains(completed))
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
        let increment_ms = i64::try_from(effect.increment_ms).ok()?;
        let bonus_ms = i64::try_from(effect.bonus_ms).ok()?;
        let used = thinking.checked_sub(delay)?.max(0);
        let expected = start_ms?
            .checked_sub(used)?
            .checked_add(increment_ms)?
            .checked_add(bonus_ms)?;
        Some(Prediction {
            expected,
            reported: i64::try_from(reported_ms).ok()?,
            bonus_ms,
            completes_period: effect.completes_period,
            increment_ms,
        })
    }

    /// From interpretation 7, the clock as set for the game, checked each time it is started
    /// before the first move (Article 6.10: a clock set wrongly is put right by the arbiter, best
    /// before play): the display that has not run shows the first period's time, the one running
    /// no more than that (some clocks give the increment at the start). Each display is told once
    /// for what it shows (a clock started to try it and started again as it was says nothing new).
    /// Not checked when the arbiter set the clocks, for a game from a position (Black to move, or
    /// after move 1), nor unless the board shows the game's start position (the system may have
    /// joined a game in play).
    pub(super) fn clock_set_up_alerts(
        &self,
        obs: &Observation,
        reading: &ClockReading,
    ) -> Vec<NewEvent> {
        let running = match reading.running() {
            ClockRun::White => Color::White,
            ClockRun::Black => Color::Black,
            _ => return Vec::new(),
        };
        let first_period = self
            .info
            .time_control
            .as_ref()
            .and_then(|tc| tc.periods.first());
        let Some(first_period) = first_period else {
            return Vec::new();
        };
        let started = !matches!(self.clock.running, ClockRun::White | ClockRun::Black);
        if self.interpretation < 7
            || !started
            || !self.moves.is_empty()
            || !self.provisional.is_empty()
            || !self.clock.changes.is_empty()
            || self.start.turn() == Color::Black
            || self.start.fullmoves().get() > 1
            || !self.board.start_seen
            || self.board.irregular.is_some()
        {
            return Vec::new();
        }
        let base = first_period.base_ms;
        let most = base
            .saturating_add(first_period.increment_ms)
            .saturating_add(TOLERANCE_MS);
        let least = base.saturating_sub(TOLERANCE_MS);
        let told = |side: Side, shown: u64| {
            self.clock
                .set_up_told
                .iter()
                .any(|&(s, ms)| s == side && ms.abs_diff(shown) <= TOLERANCE_MS)
        };
        [
            (Side::White, Color::White, reading.white_remaining_ms),
            (Side::Black, Color::Black, reading.black_remaining_ms),
        ]
        .into_iter()
        .filter(|&(_, color, shown)| shown > most || (color != running && shown < least))
        .filter(|&(side, _, shown)| !told(side, shown))
        .map(|(side, _, shown)| NewEvent {
            kind: Kind::ClockAlert(ClockAlert {
                ply: 0,
                side: wording::side(side).to_owned(),
                clock_of: side as i32,
                expected_ms: base,
                reported_ms: shown,
                reason: format!(
                    "the clock was set to {} where the time control starts from {}",
                    wording::format_clock(shown),
                    wording::format_clock(base)
                ),
                flag_not_counted: false,
            }),
            provenance: self.provenance(obs, Source::Clock, vec![obs.device_seq]),
        })
        .collect()
    }

    /// From interpretation 8, which of the flags `reading` shows anew count as fallen (White,
    /// Black), with an alert for each that does not: one on a clock that has not run in this
    /// game (left from an earlier game), and one shown after the player completed a period's
    /// moves where the clock did not add the next period's time at that press (its move
    /// counter is wrong). Either is a clock with an evident defect (Article 6.10), which the
    /// arbiter sets right; the game goes on.
    pub(super) fn flags_counted(
        &self,
        obs: &Observation,
        reading: &ClockReading,
    ) -> ((bool, bool), Vec<NewEvent>) {
        let mut alerts = Vec::new();
        let mut counted = |shown: bool, before: bool, side: Side, color: Color, shown_ms: u64| {
            if !shown || before {
                return false;
            }
            let (expected_ms, reason) = if !self.clock.ran {
                let base = self
                    .info
                    .time_control
                    .as_ref()
                    .and_then(|tc| tc.periods.first())
                    .map_or(0, |p| p.base_ms);
                (
                    base,
                    "flag shown on a clock that has not run in this game (left from an earlier \
                     game)"
                        .to_owned(),
                )
            } else if let Some((own_move, missing_ms)) = self.period_time_not_added(color) {
                (
                    missing_ms,
                    format!(
                        "flag shown after {} completed move {own_move}, the end of a period, where \
                         the clock did not add the next period's {} min (its move counter is \
                         wrong)",
                        wording::side_title(side),
                        missing_ms / 60_000
                    ),
                )
            } else {
                return true;
            };
            alerts.push(NewEvent {
                kind: Kind::ClockAlert(ClockAlert {
                    ply: u32::try_from(self.moves.len()).unwrap_or(u32::MAX),
                    side: wording::side(side).to_owned(),
                    clock_of: side as i32,
                    expected_ms,
                    reported_ms: shown_ms,
                    reason,
                    flag_not_counted: true,
                }),
                provenance: self.provenance(obs, Source::Clock, vec![obs.device_seq]),
            });
            false
        };
        let white = counted(
            reading.white_flag,
            self.clock.flags.0,
            Side::White,
            Color::White,
            reading.white_remaining_ms,
        );
        let black = counted(
            reading.black_flag,
            self.clock.flags.1,
            Side::Black,
            Color::Black,
            reading.black_remaining_ms,
        );
        ((white, black), alerts)
    }

    /// The `side`'s last completed move that completed a period, when the clock did not add the
    /// next period's time at its press and has not made it up since: the clock alert of that
    /// press found it short by over half that time, the side's later clock alerts do not bring
    /// the shortfall back under half (a counter one behind adds it a move late), and no arbiter
    /// changed that clock since. (Own move number, the time not added.) Only for a game from
    /// the start position: the moves' numbers are the time control's then.
    fn period_time_not_added(&self, side: Color) -> Option<(u32, u64)> {
        if self.start.turn() != Color::White || self.start.fullmoves().get() != 1 {
            return None;
        }
        let periods = &self.info.time_control.as_ref()?.periods;
        let is_white = side == Color::White;
        let plies = u32::try_from(self.moves.len()).ok()?;
        let ply = (1..=plies)
            .rev()
            .filter(|ply| (ply % 2 == 1) == is_white)
            .find(|ply| period_effect(periods, ply.div_ceil(2)).completes_period)?;
        let bonus_ms = period_effect(periods, ply.div_ceil(2)).bonus_ms;
        let half = i64::try_from(bonus_ms / 2).ok()?;
        if bonus_ms <= TOLERANCE_MS {
            return None;
        }
        let told_at_the_press = self
            .clock
            .differences
            .iter()
            .find(|(at, _)| *at == ply)
            .map(|(_, difference)| *difference)?;
        if told_at_the_press > -half {
            return None;
        }
        let still_short = self
            .clock
            .differences
            .iter()
            .filter(|(at, _)| *at >= ply && (at % 2 == 1) == is_white)
            .try_fold(0i64, |sum, (_, difference)| sum.checked_add(*difference))?;
        let changed_since = self
            .clock
            .changes
            .iter()
            .any(|(at, _, change)| *at >= ply as usize && change.touches(is_white));
        (still_short <= -half && !changed_since).then_some((ply.div_ceil(2), bonus_ms))
    }

    /// What newly fallen flags mean (Article 6.9; both flags: 6.11 / the rapid and blitz rules).
    pub(super) fn flag_verdict(&self, white: bool, black: bool) -> Option<GameEnded> {
        use boardcast_rules::outcome::{both_flags_fallen, flag_fall};
        let end = match (white, black) {
            (true, true) => {
                let mut end = both_flags_fallen(&self.rules, self.in_last_period())?;
                // Cited 6.11 (standard) and A.4.4 (rapid) for the Laws of 2018 and 2023 before
                // interpretation 7: a game set up then is decided as it was.
                if self.interpretation < 7
                    && end.article == boardcast_rules::outcome::GUIDELINES_BOTH_FLAGS
                {
                    end.article = match self.rules.category {
                        boardcast_rules::ruleset::Category::Standard => "6.11",
                        _ => "A.4.4",
                    };
                }
                // A guideline is no article: from interpretation 8 its words say so.
                if self.interpretation >= 8
                    && end.article == boardcast_rules::outcome::GUIDELINES_BOTH_FLAGS
                {
                    let mut ended = crate::terms::ending_of(&end);
                    ended.detail = format!("both flags fallen (Guidelines {})", end.article);
                    return Some(ended);
                }
                end
            }
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

/// The time control's prediction for one press, and what the clock showed.
#[derive(Debug, Clone, Copy)]
struct Prediction {
    expected: i64,
    reported: i64,
    /// The next period's time, added because this move completes a period.
    bonus_ms: i64,
    completes_period: bool,
    increment_ms: i64,
}

impl Prediction {
    /// Reported − expected: negative when the clock shows less than predicted; `None` when no
    /// clock could show that difference (nothing is said of it).
    fn difference(&self) -> Option<i64> {
        self.reported.checked_sub(self.expected)
    }
}

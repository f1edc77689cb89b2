//! Time controls written as in the PGN `TimeControl` tag.

use crate::events::{TimeControl, TimePeriod};

/// Parses a PGN `TimeControl` value: periods separated by `:`, each `[moves/]seconds[+increment]`,
/// e.g. `40/7200:3600+30` (40 moves in 2 hours, then 1 hour for the rest with 30 s per move) or
/// `300+2`. The last period always covers the rest of the game.
pub fn parse_time_control(text: &str) -> Result<TimeControl, String> {
    let text = text.trim();
    if text.is_empty() || text == "?" || text == "-" {
        return Err(format!(
            "time control {text:?} names no periods; write e.g. 40/7200:3600+30 or 300+2"
        ));
    }
    let parts: Vec<&str> = text.split(':').collect();
    let mut periods = Vec::with_capacity(parts.len());
    for (i, part) in parts.iter().enumerate() {
        let bad = |why: &str| format!("time control {text:?}, period {}: {why}", i + 1);
        let (moves, rest) = match part.split_once('/') {
            Some((m, r)) => (
                m.parse::<u32>()
                    .ok()
                    .filter(|m| *m > 0)
                    .ok_or_else(|| bad("the move count must be a positive number"))?,
                r,
            ),
            None => (0, *part),
        };
        let (base, increment) = match rest.split_once('+') {
            Some((b, inc)) => (b, Some(inc)),
            None => (rest, None),
        };
        let seconds_ms = |s: &str| {
            s.parse::<u64>()
                .ok()
                .and_then(|seconds| seconds.checked_mul(1000))
                .ok_or_else(|| bad(&format!("{s:?} is not a whole number of seconds")))
        };
        let base_ms = seconds_ms(base)?;
        let increment_ms = increment.map(seconds_ms).transpose()?.unwrap_or(0);
        if base_ms == 0 && increment_ms == 0 {
            return Err(bad("a period needs time or an increment"));
        }
        if moves == 0 && i + 1 < parts.len() {
            return Err(bad("only the last period can be for the rest of the game"));
        }
        periods.push(TimePeriod {
            moves: if i + 1 == parts.len() { 0 } else { moves },
            base_ms,
            increment_ms,
            delay_ms: 0,
        });
    }
    Ok(TimeControl { periods })
}

/// Reads a `TimeControl` tag as real files carry it: the PGN form ([`parse_time_control`]), or
/// the prose organisers write (`90 min + 30 sec/move`, `90'+30''`,
/// `40 moves in 90 minutes, then 30 minutes, 30 seconds per move from move 1`). With prose, says
/// how it was read; `Err` says why it could not be.
pub fn read_time_control_tag(text: &str) -> Result<(TimeControl, Option<String>), String> {
    if let Ok(tc) = parse_time_control(text) {
        return Ok((tc, None));
    }
    let tc = read_prose(text).ok_or_else(|| {
        format!(
            "TimeControl {:?} is not understood (neither the PGN form, e.g. 40/5400+30:1800+30, \
             nor prose such as \"90 min + 30 sec/move\")",
            text.trim()
        )
    })?;
    let read_as = format!(
        "TimeControl {:?} read as {}",
        text.trim(),
        time_control_tag(&tc)
    );
    Ok((tc, Some(read_as)))
}

/// One number of a prose time control, by what its unit makes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ProseItem {
    /// A period's time.
    Base { ms: u64 },
    /// A period's number of moves.
    Moves(u32),
    /// Seconds added per move.
    Increment { ms: u64 },
}

/// Reads prose; `None` when any number's meaning is unclear, or the periods do not add up.
fn read_prose(text: &str) -> Option<TimeControl> {
    let text = text.to_lowercase();
    let mut items = Vec::new();
    // Where the text after the previous number starts: what lies before a number, its unit
    // after it.
    let mut after_previous = 0;
    while let Some(found) = text[after_previous..].find(|c: char| c.is_ascii_digit()) {
        let start = after_previous + found;
        let digits = text[start..]
            .find(|c: char| !c.is_ascii_digit())
            .map_or(text.len(), |end| start + end);
        let value: u64 = text[start..digits].parse().ok().filter(|v| *v <= 100_000)?;
        let unit_end = text[digits..]
            .find(|c: char| c.is_ascii_digit() || matches!(c, '+' | ',' | ';' | '(' | ')'))
            .map_or(text.len(), |end| digits + end);
        let before = text[after_previous..start].trim_end();
        if let Some(item) = prose_item(value, text[digits..unit_end].trim(), before)? {
            items.push(item);
        }
        after_previous = digits;
    }
    periods_of(&items)
}

/// What a number with `unit` after it and `before` it means; `Some(None)` for a number that
/// says nothing about the clock (`from move 1`); `None` when unclear.
fn prose_item(value: u64, unit: &str, before: &str) -> Option<Option<ProseItem>> {
    // Directly after the word "move": "from move 1", "after move 40".
    let after_the_word_move = before
        .strip_suffix("move")
        .is_some_and(|head| !head.ends_with(|c: char| c.is_alphabetic()));
    if after_the_word_move {
        // "from move 1", "after move 40": where a period or increment starts.
        return Some(None);
    }
    let per_move = unit.contains("/m")
        || unit.contains("per move")
        || unit.contains("/ move")
        || unit.contains("inc")
        || unit.contains("bonus");
    let after_plus = before.ends_with('+');
    let seconds = value.checked_mul(1000)?;
    let item = if unit.starts_with("mov") {
        ProseItem::Moves(u32::try_from(value).ok().filter(|m| *m > 0)?)
    } else if unit.starts_with('s') || unit.starts_with('"') || unit.starts_with("''") {
        if per_move || after_plus {
            ProseItem::Increment { ms: seconds }
        } else {
            ProseItem::Base { ms: seconds }
        }
    } else if unit.starts_with('m') || unit.starts_with('\'') {
        if per_move {
            return None;
        }
        ProseItem::Base {
            ms: seconds.checked_mul(60)?,
        }
    } else if unit.starts_with('h') {
        ProseItem::Base {
            ms: seconds.checked_mul(3600)?,
        }
    } else {
        return None;
    };
    Some(Some(item))
}

/// The periods the items describe: each time starts a period; a move count belongs to the time
/// it directly follows (`90 min/40 moves`) or, failing that, to the next (`40 moves in 90
/// minutes`); one increment for every period, as FIDE writes it.
fn periods_of(items: &[ProseItem]) -> Option<TimeControl> {
    let mut periods: Vec<TimePeriod> = Vec::new();
    let mut pending_moves = None;
    let mut increment = None;
    let mut last_was_base = false;
    for item in items {
        match *item {
            ProseItem::Base { ms } => {
                periods.push(TimePeriod {
                    moves: pending_moves.take().unwrap_or(0),
                    base_ms: ms,
                    increment_ms: 0,
                    delay_ms: 0,
                });
                last_was_base = true;
                continue;
            }
            ProseItem::Moves(moves) => match periods.last_mut() {
                Some(period) if last_was_base && period.moves == 0 => period.moves = moves,
                _ if pending_moves.is_none() => pending_moves = Some(moves),
                _ => return None,
            },
            ProseItem::Increment { ms } => {
                if increment.is_some_and(|known| known != ms) {
                    return None;
                }
                increment = Some(ms);
            }
        }
        last_was_base = false;
    }
    let last = periods.len().checked_sub(1)?;
    if pending_moves.is_some() || periods[..last].iter().any(|p| p.moves == 0) {
        return None;
    }
    for period in &mut periods {
        period.increment_ms = increment.unwrap_or(0);
    }
    periods[last].moves = 0;
    Some(TimeControl { periods })
}

/// A time control as a PGN `TimeControl` value (the inverse of [`parse_time_control`]):
/// `40/5400+30:1800+30`. A delay ("delay mode") has no place in the PGN standard and is left out.
pub fn time_control_tag(tc: &TimeControl) -> String {
    let periods: Vec<String> = tc
        .periods
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut text = String::new();
            if p.moves > 0 && i + 1 < tc.periods.len() {
                text.push_str(&format!("{}/", p.moves));
            }
            text.push_str(&(p.base_ms / 1000).to_string());
            if p.increment_ms > 0 {
                text.push_str(&format!("+{}", p.increment_ms / 1000));
            }
            text
        })
        .collect();
    if periods.is_empty() {
        "-".to_owned()
    } else {
        periods.join(":")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Whatever an organiser wrote, reading it answers, never a panic or an overflow.
        #[test]
        fn any_time_control_text_is_read_or_refused(text in "[0-9 a-z'\"+/:,;.-]{0,40}") {
            if let Ok((tc, _)) = read_time_control_tag(&text) {
                proptest::prop_assert!(!tc.periods.is_empty());
            }
        }
    }

    #[test]
    fn time_controls_in_prose_are_read_as_organisers_write_them() {
        for (prose, tag) in [
            ("90 min + 30 sec/move", "5400+30"),
            ("90'+30''", "5400+30"),
            ("90' + 30\"", "5400+30"),
            ("15 min + 10 sec", "900+10"),
            ("2 hours", "7200"),
            (
                "90 min/40 moves + 30 min + 30 sec/move from move 1",
                "40/5400+30:1800+30",
            ),
            (
                "40 moves in 90 minutes, then 30 minutes, 30 seconds per move from move 1",
                "40/5400+30:1800+30",
            ),
            (
                "100 min/40 moves + 50 min/20 moves + 15 min + 30 sec/move",
                "40/6000+30:20/3000+30:900+30",
            ),
            ("Rapid: 25 minutes with 10 seconds increment", "1500+10"),
        ] {
            let (tc, read_as) = read_time_control_tag(prose).expect(prose);
            assert_eq!(time_control_tag(&tc), tag, "{prose}");
            assert!(read_as.is_some_and(|r| r.ends_with(tag)), "{prose}");
        }
        // The PGN form is read as such, nothing said.
        assert_eq!(
            read_time_control_tag("40/5400+30:1800+30").map(|(_, said)| said),
            Ok(None)
        );
        for unclear in [
            "",
            "?",
            "Game in ninety",
            "90 + 30",
            "40 moves",
            "90 min + 30 min",
            "99999999999999999999 min",
            "90 min + 10 sec/move + 30 sec/move",
        ] {
            assert!(read_time_control_tag(unclear).is_err(), "{unclear:?}");
        }
    }

    #[test]
    fn periods_and_increments() {
        let tc = parse_time_control("40/7200:3600+30").expect("valid");
        assert_eq!(tc.periods.len(), 2);
        assert_eq!(tc.periods[0].moves, 40);
        assert_eq!(tc.periods[0].base_ms, 7_200_000);
        assert_eq!(tc.periods[1].moves, 0);
        assert_eq!(tc.periods[1].increment_ms, 30_000);
        assert_eq!(
            parse_time_control("300+2").expect("valid").periods[0].increment_ms,
            2000
        );
        assert!(parse_time_control("?").is_err());
        assert!(parse_time_control("40/abc").is_err());
        assert!(parse_time_control("7200:40/3600").is_err());
    }

    #[test]
    fn the_tag_reads_back_as_the_same_time_control() {
        for text in ["40/5400+30:1800+30", "300+2", "40/7200:3600", "5400"] {
            let tc = parse_time_control(text).expect("valid");
            assert_eq!(time_control_tag(&tc), text);
            assert_eq!(parse_time_control(&time_control_tag(&tc)), Ok(tc));
        }
    }
}

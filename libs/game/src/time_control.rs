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
        let seconds = |s: &str| {
            s.parse::<u64>()
                .map_err(|_| bad(&format!("{s:?} is not a whole number of seconds")))
        };
        let base_ms = seconds(base)? * 1000;
        let increment_ms = increment.map(seconds).transpose()?.unwrap_or(0) * 1000;
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

#[cfg(test)]
mod tests {
    use super::*;

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
}

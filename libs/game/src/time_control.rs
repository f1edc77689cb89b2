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

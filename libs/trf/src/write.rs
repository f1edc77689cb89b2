//! Results back into the file: the pairing program's own file, with the rounds' results
//! written into their columns and each player's points summed again, everything else as it was.

use crate::parse::{FIRST_ROUND_COLUMN, ROUND_BLOCK};
use crate::{Colour, Outcome, TrfError, TrfFile};

/// A game's result for the file, by the players' starting ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GameOutcome {
    pub round: u32,
    pub white: u32,
    pub black: u32,
    pub white_outcome: Outcome,
    pub black_outcome: Outcome,
}

/// Where the points are (columns 81–84, `11.5`).
const POINTS_COLUMNS: (usize, usize) = (81, 84);

impl TrfFile {
    /// `original` — the text this file was read from — with each of `results` written into its
    /// round's result column of both players' records, and every player's points (columns
    /// 81–84) summed again from their rounds under the default scoring. Line ends, other
    /// records and every other column stay as they were. A result for a game the file does not
    /// pair so (these players, these colours, that round) is refused, and nothing is written.
    pub fn with_results(
        &self,
        original: &str,
        results: &[GameOutcome],
    ) -> Result<String, TrfError> {
        for result in results {
            let paired = |rank: u32, opponent: u32, colour: Colour| {
                self.players
                    .get(&rank)
                    .and_then(|p| p.round(result.round))
                    .is_some_and(|e| e.opponent == Some(opponent) && e.colour == Some(colour))
            };
            if !paired(result.white, result.black, Colour::White)
                || !paired(result.black, result.white, Colour::Black)
            {
                return Err(TrfError::File(format!(
                    "round {}: the file does not pair {} (White) with {} (Black)",
                    result.round, result.white, result.black
                )));
            }
        }
        let mut written = String::with_capacity(original.len() + 64);
        for piece in original.split_inclusive('\n') {
            let (line, end) = match piece.strip_suffix("\r\n") {
                Some(line) => (line, "\r\n"),
                None => match piece.strip_suffix('\n') {
                    Some(line) => (line, "\n"),
                    None => (piece, ""),
                },
            };
            let rank = line
                .starts_with("001")
                .then(|| {
                    line.chars()
                        .skip(4)
                        .take(4)
                        .collect::<String>()
                        .trim()
                        .parse::<u32>()
                        .ok()
                })
                .flatten();
            match rank.and_then(|rank| self.players.get(&rank)) {
                Some(player) => {
                    let mut chars: Vec<char> = line.chars().collect();
                    let mut half_points = 0;
                    let mut rounds = player.rounds.clone();
                    for result in results {
                        let outcome = if result.white == player.rank {
                            result.white_outcome
                        } else if result.black == player.rank {
                            result.black_outcome
                        } else {
                            continue;
                        };
                        let index = usize::try_from(result.round)
                            .ok()
                            .and_then(|r| r.checked_sub(1))
                            .unwrap_or(usize::MAX);
                        if let Some(entry) = rounds.get_mut(index) {
                            entry.outcome = Some(outcome);
                        }
                        let column = FIRST_ROUND_COLUMN + ROUND_BLOCK * index + 7;
                        put(&mut chars, column, &outcome.code().to_string());
                    }
                    for entry in &rounds {
                        half_points += entry.outcome.map_or(0, Outcome::half_points);
                    }
                    let points = format!("{:>4.1}", f64::from(half_points) / 2.0);
                    put(&mut chars, POINTS_COLUMNS.0, &points);
                    debug_assert_eq!(POINTS_COLUMNS.1 - POINTS_COLUMNS.0 + 1, points.len());
                    written.extend(chars);
                }
                None => written.push_str(line),
            }
            written.push_str(end);
        }
        Ok(written)
    }
}

/// Writes `text` into `chars` from 1-based `column`, padding the line with spaces as needed.
fn put(chars: &mut Vec<char>, column: usize, text: &str) {
    let start = column - 1;
    let end = start + text.chars().count();
    if chars.len() < end {
        chars.resize(end, ' ');
    }
    for (slot, c) in chars[start..end].iter_mut().zip(text.chars()) {
        *slot = c;
    }
}

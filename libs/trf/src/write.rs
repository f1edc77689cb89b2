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

impl GameOutcome {
    /// The result as a pairing program shows it: `1 – 0`, `+ – -`, `= – =`.
    pub fn codes(&self) -> String {
        format!(
            "{} – {}",
            self.white_outcome.code(),
            self.black_outcome.code()
        )
    }
}

impl TrfFile {
    /// The results the file already holds, differently, for the games of `results` (corrected
    /// in the pairing program, say): each as the file has it. A game the file has no result for
    /// is not among them.
    pub fn differing_results(&self, results: &[GameOutcome]) -> Vec<GameOutcome> {
        let in_file = |rank: u32, round: u32| {
            self.players
                .get(&rank)
                .and_then(|p| p.round(round))
                .and_then(|e| e.outcome)
        };
        results
            .iter()
            .filter_map(|result| {
                let white_outcome = in_file(result.white, result.round)?;
                let black_outcome = in_file(result.black, result.round)?;
                let held = GameOutcome {
                    white_outcome,
                    black_outcome,
                    ..*result
                };
                (held != *result).then_some(held)
            })
            .collect()
    }

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
        if !default_scoring(&self.tournament.scoring) {
            return Err(TrfError::File(format!(
                "the file scores games otherwise than a win 1, a draw ½ (162: {:?}): its points \
                 would be summed wrongly, so no result is written",
                self.tournament.scoring
            )));
        }
        let disagreeing = self.points_not_summed_by_default(original);
        if let Some((rank, written, summed)) = disagreeing.first() {
            return Err(TrfError::File(format!(
                "player {rank}'s points ({written}){} are not the sum of the results under a win \
                 1, a draw ½ ({:.1}): the file scores games otherwise (3-1-0, say) or its points \
                 were changed by hand, so no result is written",
                match disagreeing.len() - 1 {
                    0 => String::new(),
                    others => format!(" and {others} other player(s)'"),
                },
                f64::from(*summed) / 2.0
            )));
        }
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
                    let mut any_new = false;
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
                        any_new = true;
                        let column = FIRST_ROUND_COLUMN + ROUND_BLOCK * index + 7;
                        put(&mut chars, column, &outcome.code().to_string());
                    }
                    for entry in &rounds {
                        half_points += entry.outcome.map_or(0, Outcome::half_points);
                    }
                    // Points summed again for those with a new result; the others' as written.
                    let points = format!("{:>4.1}", f64::from(half_points) / 2.0);
                    if any_new && points.len() == POINTS_COLUMNS.1 - POINTS_COLUMNS.0 + 1 {
                        put(&mut chars, POINTS_COLUMNS.0, &points);
                    }
                    written.extend(chars);
                }
                None => written.push_str(line),
            }
            written.push_str(end);
        }
        Ok(written)
    }
}

impl TrfFile {
    /// The players whose points, as `original` writes them (columns 81–84), are not the sum of
    /// their results under the default scoring: (rank, the points written, the sum in half
    /// points). A file without a `162` record may still score otherwise (TRF16 has no record
    /// for it); its points say so.
    fn points_not_summed_by_default(&self, original: &str) -> Vec<(u32, String, u32)> {
        original
            .lines()
            .filter(|line| line.starts_with("001"))
            .filter_map(|line| {
                let field = |from: usize, to: usize| -> String {
                    line.chars()
                        .skip(from - 1)
                        .take(to - from + 1)
                        .collect::<String>()
                        .trim()
                        .to_owned()
                };
                let rank: u32 = field(5, 8).parse().ok()?;
                let written = field(POINTS_COLUMNS.0, POINTS_COLUMNS.1);
                let points: f64 = written.parse().ok()?;
                let summed = self.players.get(&rank)?.half_points_before(u32::MAX);
                ((points * 2.0 - f64::from(summed)).abs() > 1e-9).then_some((rank, written, summed))
            })
            .collect()
    }
}

/// Whether a `162` record (empty: none) gives the default points: a win (or forfeit win, or
/// full-point or pairing-allocated bye) 1, a draw ½, a loss or absence 0.
fn default_scoring(text: &str) -> bool {
    let words: Vec<&str> = text.split_whitespace().collect();
    words.chunks(2).all(|pair| {
        let (Some(code), Some(value)) = (
            pair.first(),
            pair.get(1).and_then(|v| v.parse::<f64>().ok()),
        ) else {
            return false;
        };
        let default = match code.to_ascii_uppercase().as_str() {
            "W" | "P" => 1.0,
            "D" | "X" => 0.5,
            "L" | "A" => 0.0,
            _ => return false,
        };
        (value - default).abs() < 1e-9
    })
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

impl TrfFile {
    /// The file as TRF16 writes it, from what it holds: the tournament's records, then each
    /// player's `001` record with their rounds and points (summed under the default scoring).
    /// For a tournament whose pairing program's own file is not at hand; that file, with
    /// [`TrfFile::with_results`], keeps everything the program wrote.
    pub fn to_text(&self) -> String {
        let t = &self.tournament;
        let mut text = String::new();
        let mut record = |id: &str, value: &str| {
            if !value.is_empty() {
                text.push_str(&format!("{id} {value}\n"));
            }
        };
        record("012", &t.name);
        record("022", &t.city);
        record("032", &t.federation);
        let date = |d: Option<crate::Date>| {
            d.map(|d| format!("{:04}/{:02}/{:02}", d.year, d.month, d.day))
                .unwrap_or_default()
        };
        record("042", &date(t.start));
        record("052", &date(t.end));
        record("062", &self.players.len().to_string());
        record("102", &t.chief_arbiter);
        record("122", &t.time_control_text);
        record("142", &t.rounds.map(|r| r.to_string()).unwrap_or_default());
        record("222", &t.time_control);
        for player in self.players.values() {
            let half_points: u32 = player
                .rounds
                .iter()
                .filter_map(|e| e.outcome)
                .map(Outcome::half_points)
                .sum();
            let mut line = format!(
                "001 {:>4} {}{:>3} {:<33} {:>4} {:<3} {:>11} {:<10} {:>4.1} {:>4}",
                player.rank,
                player.sex.unwrap_or(' '),
                player.title.map_or("", |t| t.as_str()),
                truncated(&player.name, 33),
                player.rating.map(|r| r.to_string()).unwrap_or_default(),
                truncated(&player.federation, 3),
                truncated(&player.fide_id, 11),
                truncated(&player.birth, 10),
                f64::from(half_points) / 2.0,
                "",
            );
            for entry in &player.rounds {
                // A round the record says nothing of stays blank (not a zero-point bye).
                if entry.opponent.is_none() && entry.colour.is_none() && entry.outcome.is_none() {
                    line.push_str(&" ".repeat(ROUND_BLOCK));
                    continue;
                }
                let opponent = entry
                    .opponent
                    .map_or("0000".to_owned(), |o| format!("{o:>4}"));
                let colour = match entry.colour {
                    Some(Colour::White) => 'w',
                    Some(Colour::Black) => 'b',
                    None => '-',
                };
                let result = entry.outcome.map_or(' ', Outcome::code);
                line.push_str(&format!("  {opponent} {colour} {result}"));
            }
            text.push_str(line.trim_end());
            text.push('\n');
        }
        text
    }
}

/// At most `width` characters of `text` (a field's columns).
fn truncated(text: &str, width: usize) -> String {
    text.chars().take(width).collect()
}

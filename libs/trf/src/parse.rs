//! Reading a TRF: each line by its record id, fields by their columns.

use std::collections::BTreeMap;

use crate::{
    ByeKind, ByeRecord, Colour, Date, LineUp, Note, Outcome, Player, Players, RoundEntry, Team,
    Title, Tournament,
};

/// A file that cannot be read as its author meant: nothing should be set up from it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrfError {
    #[error("line {line}, column {column}: {message}")]
    At {
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{0}")]
    File(String),
}

impl TrfError {
    pub(crate) fn at(line: usize, column: usize, message: impl Into<String>) -> TrfError {
        TrfError::At {
            line,
            column,
            message: message.into(),
        }
    }
}

/// A Tournament Report File, read.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct TrfFile {
    pub tournament: Tournament,
    /// By starting rank.
    pub players: Players,
    pub teams: Vec<Team>,
    /// The teams are `013` records, which pairing programs also write for the clubs of an
    /// individual event (prizes by club), rather than TRF-26's `310`, which only a team event
    /// has.
    pub teams_are_older_records: bool,
    pub byes: Vec<ByeRecord>,
    pub line_ups: Vec<LineUp>,
    /// What was skipped or could not be read where it is not needed.
    pub notes: Vec<Note>,
}

/// Where the `001` record's first round block starts, and each block's width.
pub(crate) const FIRST_ROUND_COLUMN: usize = 92;
pub(crate) const ROUND_BLOCK: usize = 10;

/// Records of TRF16 and TRF-26 this reads nothing of (statistics, pairing-engine settings,
/// informative team records): skipped without a note.
const NOT_NEEDED: &[&str] = &[
    "062", "072", "082", "112", "152", "172", "182", "192", "202", "212", "250", "260", "299",
    "320", "330", "362", "801", "802",
];

/// One line, addressed by 1-based columns as the specification numbers them.
struct Line {
    number: usize,
    chars: Vec<char>,
}

impl Line {
    /// Columns `from` to `to` (inclusive), trimmed; empty past the line's end.
    fn field(&self, from: usize, to: usize) -> String {
        let start = from.saturating_sub(1).min(self.chars.len());
        let end = to.min(self.chars.len());
        self.chars[start..end.max(start)]
            .iter()
            .collect::<String>()
            .trim()
            .to_owned()
    }

    fn char_at(&self, column: usize) -> char {
        self.chars
            .get(column.saturating_sub(1))
            .copied()
            .unwrap_or(' ')
    }

    fn len(&self) -> usize {
        self.chars.len()
    }

    fn number_at(&self, from: usize, to: usize, what: &str) -> Result<Option<u32>, TrfError> {
        let text = self.field(from, to);
        if text.is_empty() {
            return Ok(None);
        }
        text.parse::<u32>().map(Some).map_err(|_| {
            TrfError::at(
                self.number,
                from,
                format!("{what} (columns {from}–{to}) is not a number: {text:?}"),
            )
        })
    }

    /// Numbers in blocks of `width` from column `from` to the line's end (team members,
    /// byes, line-ups); `0` stays, for the caller to read.
    fn numbers_from(&self, from: usize, width: usize, what: &str) -> Result<Vec<u32>, TrfError> {
        let mut numbers = Vec::new();
        let mut column = from;
        while column <= self.len() {
            if let Some(n) = self.number_at(column, column + width - 2, what)? {
                numbers.push(n);
            }
            column += width;
        }
        Ok(numbers)
    }
}

impl TrfFile {
    /// Reads a file's bytes: UTF-8, else Windows-1252 (as Swiss-Manager still writes names),
    /// with a note saying so.
    pub fn parse_bytes(bytes: &[u8]) -> Result<TrfFile, TrfError> {
        // Notepad's "Unicode": every other byte zero, which no TRF is.
        if bytes.starts_with(&[0xff, 0xfe]) || bytes.starts_with(&[0xfe, 0xff]) {
            return Err(TrfError::File(
                "the file is UTF-16 (\"Unicode\" in Notepad): save it as UTF-8 or ANSI, or \
                 export it again from the pairing program"
                    .into(),
            ));
        }
        match std::str::from_utf8(bytes) {
            Ok(text) => TrfFile::parse(text),
            Err(_) => {
                let mut file = TrfFile::parse(&decode_windows_1252(bytes))?;
                file.notes.insert(
                    0,
                    Note {
                        line: 0,
                        text: "the file is not UTF-8: read as Windows-1252 (Latin-1)".into(),
                    },
                );
                Ok(file)
            }
        }
    }

    /// Reads a whole file (LF or CRLF line ends).
    pub fn parse(text: &str) -> Result<TrfFile, TrfError> {
        let mut file = TrfFile::default();
        let mut seen_on: BTreeMap<u32, usize> = BTreeMap::new();
        // `013` is the older team record: read only when the file has no `310`.
        let mut old_teams = Vec::new();
        for (index, raw) in text.trim_start_matches('\u{feff}').lines().enumerate() {
            let line = Line {
                number: index + 1,
                chars: raw
                    .trim_end_matches('\r')
                    .replace('\t', " ")
                    .chars()
                    .collect(),
            };
            let id = line.field(1, 3);
            if line.field(1, line.len()).is_empty() || id.starts_with("###") {
                continue;
            }
            let text_after_id = || line.field(5, line.len());
            let tournament = &mut file.tournament;
            match id.as_str() {
                "001" => {
                    let player = read_player(&line, &mut file.notes)?;
                    if let Some(first) = seen_on.insert(player.rank, line.number) {
                        return Err(TrfError::at(
                            line.number,
                            5,
                            format!(
                                "starting rank {} is given to a player on line {first} already",
                                player.rank
                            ),
                        ));
                    }
                    file.players.insert(player.rank, player);
                }
                "012" => tournament.name = text_after_id(),
                "022" => tournament.city = text_after_id(),
                "032" => tournament.federation = text_after_id(),
                "042" => tournament.start = read_date(&line, 5, &mut file.notes),
                "052" => tournament.end = read_date(&line, 5, &mut file.notes),
                "092" => tournament.kind = text_after_id(),
                "102" => tournament.chief_arbiter = text_after_id(),
                "122" => tournament.time_control_text = text_after_id(),
                "222" => tournament.time_control = text_after_id(),
                "352" => tournament.team_board_colours = text_after_id(),
                "162" => tournament.scoring = text_after_id(),
                "142" | "XXR" => {
                    tournament.rounds = line.number_at(5, line.len(), "the number of rounds")?;
                }
                "132" => {
                    let mut column = FIRST_ROUND_COLUMN;
                    while column <= line.len() {
                        tournament.round_dates.push(read_date_in(
                            &line,
                            column,
                            column + 7,
                            &mut file.notes,
                        ));
                        column += ROUND_BLOCK;
                    }
                }
                "310" => {
                    let number = line
                        .number_at(5, 7, "the team's pairing number")?
                        .ok_or_else(|| TrfError::at(line.number, 5, "a team without a number"))?;
                    file.teams.push(Team {
                        number,
                        name: line.field(9, 40),
                        nickname: line.field(42, 46),
                        players: nonzero(line.numbers_from(74, 5, "a team member")?),
                    });
                }
                "013" => {
                    let players = nonzero(line.numbers_from(37, 5, "a team member")?);
                    if players.is_empty() {
                        // Its members' numbers start at column 37, 5 columns each: written
                        // elsewhere, the team would silently have none.
                        file.notes.push(Note {
                            line: line.number,
                            text: format!(
                                "team {:?} has no member from column 37 on (5 columns a member)",
                                line.field(5, 36)
                            ),
                        });
                    }
                    old_teams.push(Team {
                        number: u32::try_from(old_teams.len() + 1).unwrap_or(u32::MAX),
                        name: line.field(5, 36),
                        nickname: String::new(),
                        players,
                    });
                }
                "240" => {
                    let kind = match line.char_at(5).to_ascii_uppercase() {
                        'F' => ByeKind::FullPoint,
                        'H' => ByeKind::HalfPoint,
                        'Z' => ByeKind::ZeroPoint,
                        'U' => ByeKind::PairingAllocated,
                        other => {
                            return Err(TrfError::at(
                                line.number,
                                5,
                                format!("a bye of kind {other:?} (F, H or Z)"),
                            ));
                        }
                    };
                    let round = line
                        .number_at(7, 9, "the bye's round")?
                        .ok_or_else(|| TrfError::at(line.number, 7, "a bye without a round"))?;
                    for id in nonzero(line.numbers_from(11, 5, "who gets the bye")?) {
                        file.byes.push(ByeRecord { round, kind, id });
                    }
                }
                "300" => {
                    let number = |from, to, what| {
                        line.number_at(from, to, what)?.ok_or_else(|| {
                            TrfError::at(line.number, from, format!("{what} is missing"))
                        })
                    };
                    file.line_ups.push(LineUp {
                        round: number(5, 7, "the line-up's round")?,
                        team: number(9, 11, "the team")?,
                        opponent: number(13, 15, "the opponent team")?,
                        players: line
                            .numbers_from(17, 5, "a board's player")?
                            .into_iter()
                            .map(|p| (p != 0).then_some(p))
                            .collect(),
                    });
                }
                known if NOT_NEEDED.contains(&known) => {}
                // National rating records (a federation's code) and Tornelo's player data.
                national
                    if national.len() == 3 && national.chars().all(|c| c.is_ascii_uppercase()) => {}
                other => file.notes.push(Note {
                    line: line.number,
                    text: format!("record {other:?} is not one this reads: skipped"),
                }),
            }
        }
        // A round date outside the tournament's is a misreading (a day/month/year date, or one
        // longer than the 8 columns the 132 record gives it, read as year/month/day): said,
        // and not used.
        let (start, end) = (file.tournament.start, file.tournament.end);
        for (index, date) in file.tournament.round_dates.iter_mut().enumerate() {
            let Some(read) = *date else { continue };
            let before = start.is_some_and(|start| read < start);
            let after = end.is_some_and(|end| read > end);
            if before || after {
                file.notes.push(Note {
                    line: 0,
                    text: format!(
                        "round {}'s date (132) reads as {}, outside the tournament's dates \
                         (042–052): not used; the 132 record writes dates YY/MM/DD",
                        index + 1,
                        read.pgn()
                    ),
                });
                *date = None;
            }
        }
        if file.players.is_empty() {
            return Err(TrfError::File(
                "the file holds no player record (001 lines): not a Tournament Report File, or \
                 one exported before any player was entered"
                    .into(),
            ));
        }
        if file.teams.is_empty() {
            file.teams = old_teams;
            file.teams_are_older_records = !file.teams.is_empty();
        }
        file.check_references()?;
        Ok(file)
    }

    /// Every starting rank the file names is a player's, and every game is told the same way
    /// by both players: each names the other, one with White and one with Black.
    fn check_references(&self) -> Result<(), TrfError> {
        for player in self.players.values() {
            for (index, entry) in player.rounds.iter().enumerate() {
                let Some(opponent_rank) = entry.opponent else {
                    continue;
                };
                let round = index + 1;
                let at = |message: String| TrfError::at(player.line, entry.column, message);
                let Some(opponent) = self.players.get(&opponent_rank) else {
                    return Err(at(format!(
                        "round {round}: opponent {opponent_rank} is no player's starting rank"
                    )));
                };
                if opponent_rank == player.rank {
                    return Err(at(format!("round {round}: paired with themself")));
                }
                let theirs = opponent.rounds.get(index);
                if theirs.and_then(|e| e.opponent) != Some(player.rank) {
                    return Err(at(format!(
                        "round {round}: paired with {opponent_rank}, whose record (line {}) \
                         does not name {} in that round",
                        opponent.line, player.rank
                    )));
                }
                if let (Some(mine), Some(their)) = (entry.colour, theirs.and_then(|e| e.colour))
                    && mine == their
                {
                    let at = |message: String| TrfError::at(player.line, entry.column + 5, message);
                    return Err(at(format!(
                        "round {round}: both {} and {opponent_rank} (line {}) have {} in \
                         their game",
                        player.rank,
                        opponent.line,
                        if mine == Colour::White {
                            "White"
                        } else {
                            "Black"
                        }
                    )));
                }
            }
        }
        for team in &self.teams {
            if let Some(unknown) = team.players.iter().find(|p| !self.players.contains_key(p)) {
                return Err(TrfError::File(format!(
                    "team {} ({}) names player {unknown}, who is no player's starting rank",
                    team.number, team.name
                )));
            }
        }
        Ok(())
    }
}

/// Windows-1252's characters for the bytes 0x80–0x9F (the five it leaves undefined stay as the
/// control characters Latin-1 has there); every other byte is Latin-1's.
const WINDOWS_1252_HIGH: [char; 32] = [
    '€', '\u{81}', '‚', 'ƒ', '„', '…', '†', '‡', 'ˆ', '‰', 'Š', '‹', 'Œ', '\u{8d}', 'Ž', '\u{8f}',
    '\u{90}', '‘', '’', '“', '”', '•', '–', '—', '˜', '™', 'š', '›', 'œ', '\u{9d}', 'ž', 'Ÿ',
];

/// A Windows-1252 file's text.
pub fn decode_windows_1252(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|&b| match b {
            0x80..=0x9F => WINDOWS_1252_HIGH[usize::from(b - 0x80)],
            _ => char::from(b),
        })
        .collect()
}

/// Text back into Windows-1252, as [`decode_windows_1252`] read it (`?` for a character it has
/// none for).
pub fn encode_windows_1252(text: &str) -> Vec<u8> {
    text.chars()
        .map(|c| match WINDOWS_1252_HIGH.iter().position(|&h| h == c) {
            Some(index) => 0x80 + u8::try_from(index).unwrap_or(0),
            None => u8::try_from(u32::from(c)).unwrap_or(b'?'),
        })
        .collect()
}

fn nonzero(numbers: Vec<u32>) -> Vec<u32> {
    numbers.into_iter().filter(|&n| n != 0).collect()
}

fn read_player(line: &Line, notes: &mut Vec<Note>) -> Result<Player, TrfError> {
    if line.field(5, 8).is_empty() {
        return Err(TrfError::at(
            line.number,
            5,
            "a player record without a starting rank (columns 5–8): the line is cut short or \
             not aligned",
        ));
    }
    let rank = line
        .number_at(5, 8, "the starting rank")?
        .filter(|&r| r > 0)
        .ok_or_else(|| TrfError::at(line.number, 5, "starting rank 0"))?;
    let title_text = line.field(11, 13);
    let title = match (title_text.as_str(), Title::read(&title_text)) {
        ("", _) => None,
        (_, Some(title)) => Some(title),
        (other, None) => {
            notes.push(Note {
                line: line.number,
                text: format!("player {rank}: title {other:?} is not a FIDE title: left out"),
            });
            None
        }
    };
    let rating = line.number_at(49, 52, "the rating")?.filter(|&r| r > 0);
    let fide_id = line.field(58, 68);
    if !fide_id.chars().all(|c| c.is_ascii_digit()) {
        return Err(TrfError::at(
            line.number,
            58,
            format!("the FIDE id (columns 58–68) is not a number: {fide_id:?}"),
        ));
    }
    let mut rounds = Vec::new();
    let mut column = FIRST_ROUND_COLUMN;
    while column <= line.len() {
        rounds.push(read_round(line, column, rounds.len() + 1)?);
        column += ROUND_BLOCK;
    }
    // Blocks left blank at the end are rounds the file says nothing of yet.
    while rounds.last().is_some_and(|e: &RoundEntry| {
        e.opponent.is_none() && e.colour.is_none() && e.outcome.is_none()
    }) {
        rounds.pop();
    }
    let sex = match line.char_at(10).to_ascii_lowercase() {
        ' ' => None,
        c => Some(c),
    };
    Ok(Player {
        rank,
        sex,
        title,
        name: line.field(15, 47),
        rating,
        federation: line.field(54, 56),
        fide_id: if fide_id.trim_start_matches('0').is_empty() {
            String::new()
        } else {
            fide_id
        },
        birth: line.field(70, 79),
        rounds,
        line: line.number,
    })
}

/// A round block: opponent (4 columns), colour, result.
fn read_round(line: &Line, column: usize, round: usize) -> Result<RoundEntry, TrfError> {
    let opponent_text = line.field(column, column + 3);
    let opponent = if opponent_text.is_empty() {
        None
    } else {
        let rank: u32 = opponent_text.parse().map_err(|_| {
            TrfError::at(
                line.number,
                column,
                format!("round {round}: the opponent is not a starting rank: {opponent_text:?}"),
            )
        })?;
        (rank != 0).then_some(rank)
    };
    let colour_column = column + 5;
    if opponent.is_some() && line.len() < colour_column {
        return Err(TrfError::at(
            line.number,
            colour_column,
            format!("round {round}: the line ends before the game's colour: it is cut short"),
        ));
    }
    let colour = match line.char_at(colour_column).to_ascii_lowercase() {
        'w' => Some(Colour::White),
        'b' => Some(Colour::Black),
        // With an opponent a blank is no colour this reads: a line shifted by a column (a name
        // padded by bytes, not characters) would otherwise read as games without colours.
        ' ' if opponent.is_some() => {
            return Err(TrfError::at(
                line.number,
                colour_column,
                format!("round {round}: a game without a colour (w, b, or - for none)"),
            ));
        }
        '-' | ' ' => None,
        other => {
            return Err(TrfError::at(
                line.number,
                colour_column,
                format!("round {round}: colour {other:?} (w, b or -)"),
            ));
        }
    };
    let result_column = column + 7;
    let outcome = match line.char_at(result_column) {
        // Blank: not played yet when paired; with no opponent, a zero-point bye when the block
        // says so (`0000`), else nothing is known of the round.
        ' ' if opponent.is_none() && !opponent_text.is_empty() => Some(Outcome::ZeroPointBye),
        ' ' => None,
        code => Some(Outcome::read(code).ok_or_else(|| {
            TrfError::at(
                line.number,
                result_column,
                format!("round {round}: result {code:?} is not a TRF result code"),
            )
        })?),
    };
    Ok(RoundEntry {
        opponent,
        colour,
        outcome,
        column,
    })
}

fn read_date(line: &Line, from: usize, notes: &mut Vec<Note>) -> Option<Date> {
    read_date_in(line, from, line.len(), notes)
}

/// A date in the forms files use: `2026/01/10` (or with `-` or `.`), `10/01/2026`, `26/01/10`.
fn read_date_in(line: &Line, from: usize, to: usize, notes: &mut Vec<Note>) -> Option<Date> {
    let text = line.field(from, to);
    if text.is_empty() {
        return None;
    }
    let date = Date::read(&text);
    if date.is_none() {
        notes.push(Note {
            line: line.number,
            text: format!("{text:?} (from column {from}) is not a date this reads: left out"),
        });
    }
    date
}

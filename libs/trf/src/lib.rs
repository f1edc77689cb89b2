//! FIDE's Tournament Report File, as pairing programs (Swiss-Manager, Vega, JaVaFo, bbpPairings,
//! Sharly Chess, Tornelo) write it: TRF16 (with JaVaFo's `XX` lines) and TRF-26, in force since
//! 1 September 2025. Read whole ([`TrfFile::parse`]), a round's pairings taken from it in the
//! order pairing programs print them ([`TrfFile::round`]), and results written back into it
//! for the pairing program's next round ([`TrfFile::with_results`]).
//!
//! A TRF is a file of fixed-column records, each line opening with a three-character record id
//! (`001` a player, `012` the tournament's name, `310` a team, `240` byes, …). Columns count
//! characters from 1, as the FIDE specification numbers them. What this crate does not use is
//! skipped and noted ([`Note`]), never an error; what it uses and cannot read is an error naming
//! the line and column ([`TrfError`]), so that a file is either read as its author meant or
//! refused before anything is set up from it.

mod lichess;
mod parse;
mod round;
mod write;

pub use lichess::{lichess_players, lichess_teams};
pub use parse::{TrfError, TrfFile, decode_windows_1252, encode_windows_1252};
pub use round::{ByeKind, Forfeit, RoundBye, RoundPairings, Table, TeamBye, TeamMatch};
pub use write::GameOutcome;

use std::collections::BTreeMap;

/// A calendar date as the file gives it (the forms vary: `2026/01/10`, `24/09/2010`, `26/01/10`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct Date {
    pub year: u16,
    pub month: u8,
    pub day: u8,
}

impl Date {
    /// A date in the forms files use: `2026/01/10` (or with `-` or `.`, as PGN writes it),
    /// `10/01/2026`, `26/01/10` (two-digit years: this century).
    pub fn read(text: &str) -> Option<Date> {
        let parts: Vec<&str> = text.split(['/', '-', '.']).collect();
        let numbers: Option<Vec<u32>> = parts.iter().map(|p| p.trim().parse().ok()).collect();
        match (parts.as_slice(), numbers.as_deref()) {
            ([y, _, _], Some(&[year, month, day])) if y.len() == 4 => Some((year, month, day)),
            ([_, _, y], Some(&[day, month, year])) if y.len() == 4 => Some((year, month, day)),
            ([y, _, _], Some(&[year, month, day])) if y.len() == 2 => {
                Some((2000 + year, month, day))
            }
            _ => None,
        }
        .filter(|&(_, month, day)| (1..=12).contains(&month) && (1..=31).contains(&day))
        .and_then(|(year, month, day)| {
            Some(Date {
                year: u16::try_from(year).ok()?,
                month: u8::try_from(month).ok()?,
                day: u8::try_from(day).ok()?,
            })
        })
    }

    /// As a PGN `Date` tag has it: `YYYY.MM.DD`.
    pub fn pgn(&self) -> String {
        format!("{:04}.{:02}.{:02}", self.year, self.month, self.day)
    }
}

/// The tournament section (`012` … `362`).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Tournament {
    /// `012`.
    pub name: String,
    /// `022`.
    pub city: String,
    /// `032`.
    pub federation: String,
    /// `042` and `052`.
    pub start: Option<Date>,
    pub end: Option<Date>,
    /// `092`: the type of tournament in words (`Individual: Swiss-System`, `Team Swiss`).
    pub kind: String,
    /// `102`.
    pub chief_arbiter: String,
    /// `122`: the time control in words, as the organiser wrote it.
    pub time_control_text: String,
    /// `222` (TRF-26): the time control encoded, `40/6000+30:1500+30`.
    pub time_control: String,
    /// `142`, or JaVaFo's `XXR`: how many rounds the tournament has.
    pub rounds: Option<u32>,
    /// `132`: each round's date, round 1 first.
    pub round_dates: Vec<Option<Date>>,
    /// `352` (TRF-26): the colours of a team's boards in a match, the first team's view,
    /// `WBWB`.
    pub team_board_colours: String,
    /// `162` (TRF-26): the points of a win, a draw, … when they are not the default.
    pub scoring: String,
}

/// A FIDE title, as the `001` record's columns 11–13 give it (TRF16: `GM`; older files and
/// JaVaFo's samples: `g`, `m`, `f`, `wg` …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Title {
    GM,
    IM,
    FM,
    CM,
    WGM,
    WIM,
    WFM,
    WCM,
}

impl Title {
    /// As PGN and FIDE write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Title::GM => "GM",
            Title::IM => "IM",
            Title::FM => "FM",
            Title::CM => "CM",
            Title::WGM => "WGM",
            Title::WIM => "WIM",
            Title::WFM => "WFM",
            Title::WCM => "WCM",
        }
    }

    /// A title as files and PGN write it (`GM`, or JaVaFo's `g`); `None` for none or another.
    pub fn read(text: &str) -> Option<Title> {
        Some(match text.to_ascii_lowercase().as_str() {
            "gm" | "g" => Title::GM,
            "im" | "m" => Title::IM,
            "fm" | "f" => Title::FM,
            "cm" | "c" => Title::CM,
            "wgm" | "wg" => Title::WGM,
            "wim" | "wm" => Title::WIM,
            "wfm" | "wf" => Title::WFM,
            "wcm" | "wc" => Title::WCM,
            _ => return None,
        })
    }
}

/// The side a player has in a game.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Colour {
    White,
    Black,
}

/// A round's result code (the `001` record's column 99 of each round block).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Outcome {
    /// `1`, `=`, `0`.
    Win,
    Draw,
    Loss,
    /// `W`, `D`, `L`: the game lasted less than one move (not rated).
    UnratedWin,
    UnratedDraw,
    UnratedLoss,
    /// `+`, `-`: won or lost by forfeit.
    ForfeitWin,
    ForfeitLoss,
    /// `H`, `F`: a half- or full-point bye the player asked for.
    HalfPointBye,
    FullPointBye,
    /// `U`: the pairing-allocated bye (an odd number of players).
    PairingAllocatedBye,
    /// `Z`: a zero-point bye (a known absence).
    ZeroPointBye,
}

impl Outcome {
    fn read(code: char) -> Option<Outcome> {
        Some(match code.to_ascii_uppercase() {
            '1' => Outcome::Win,
            '=' => Outcome::Draw,
            '0' => Outcome::Loss,
            'W' => Outcome::UnratedWin,
            'D' => Outcome::UnratedDraw,
            'L' => Outcome::UnratedLoss,
            '+' => Outcome::ForfeitWin,
            '-' => Outcome::ForfeitLoss,
            'H' => Outcome::HalfPointBye,
            'F' => Outcome::FullPointBye,
            'U' => Outcome::PairingAllocatedBye,
            'Z' => Outcome::ZeroPointBye,
            _ => return None,
        })
    }

    /// The code written in the file.
    pub fn code(self) -> char {
        match self {
            Outcome::Win => '1',
            Outcome::Draw => '=',
            Outcome::Loss => '0',
            Outcome::UnratedWin => 'W',
            Outcome::UnratedDraw => 'D',
            Outcome::UnratedLoss => 'L',
            Outcome::ForfeitWin => '+',
            Outcome::ForfeitLoss => '-',
            Outcome::HalfPointBye => 'H',
            Outcome::FullPointBye => 'F',
            Outcome::PairingAllocatedBye => 'U',
            Outcome::ZeroPointBye => 'Z',
        }
    }

    /// Points in half points under the default scoring (TRF-26 `162` defaults: a win, a
    /// forfeit win, a full-point or pairing-allocated bye 1; a draw or half-point bye ½).
    pub fn half_points(self) -> u32 {
        match self {
            Outcome::Win
            | Outcome::UnratedWin
            | Outcome::ForfeitWin
            | Outcome::FullPointBye
            | Outcome::PairingAllocatedBye => 2,
            Outcome::Draw | Outcome::UnratedDraw | Outcome::HalfPointBye => 1,
            Outcome::Loss | Outcome::UnratedLoss | Outcome::ForfeitLoss | Outcome::ZeroPointBye => {
                0
            }
        }
    }
}

/// One round of a player's record: whom they were paired with, with which colour, and the
/// result when there is one. The default is a round the record says nothing of.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct RoundEntry {
    /// The opponent's starting rank; `None` for no opponent (`0000` or blanks: a bye, an
    /// absence).
    pub opponent: Option<u32>,
    pub colour: Option<Colour>,
    /// `None` while the game is not played yet (a blank result with an opponent).
    pub outcome: Option<Outcome>,
    /// The column the round's block starts at (for errors).
    #[serde(skip)]
    pub column: usize,
}

/// A player (`001` record).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Player {
    /// The starting rank (pairing number), columns 5–8: how every other record names them.
    pub rank: u32,
    /// `m` or `w`, when given.
    pub sex: Option<char>,
    pub title: Option<Title>,
    /// As written, `Lastname, Firstname`.
    pub name: String,
    /// FIDE rating; `None` when unrated (blank or 0).
    pub rating: Option<u32>,
    pub federation: String,
    /// FIDE id; empty when none (blank or 0).
    pub fide_id: String,
    /// Birth date or year as written.
    pub birth: String,
    /// The round blocks, round 1 first.
    pub rounds: Vec<RoundEntry>,
    /// The line of the file (for errors).
    #[serde(skip)]
    pub line: usize,
}

impl Player {
    /// The player's entry for `round` (from 1), if the record has one.
    pub fn round(&self, round: u32) -> Option<&RoundEntry> {
        self.rounds
            .get(usize::try_from(round).ok()?.checked_sub(1)?)
    }

    /// Points before `round`, in half points (under the default scoring).
    pub fn half_points_before(&self, round: u32) -> u32 {
        self.rounds
            .iter()
            .take(usize::try_from(round.saturating_sub(1)).unwrap_or(usize::MAX))
            .filter_map(|entry| entry.outcome)
            .map(Outcome::half_points)
            .sum()
    }
}

/// A team (`310`, or the older `013`): its players in board order.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Team {
    /// The team's pairing number (`310`; for `013`, its place among the `013` records).
    pub number: u32,
    pub name: String,
    /// `310`'s nickname (often the federation), when given.
    pub nickname: String,
    /// Starting ranks, first board first.
    pub players: Vec<u32>,
}

/// A bye a `240` record (TRF-26) gives for a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct ByeRecord {
    pub round: u32,
    pub kind: ByeKind,
    /// A player's starting rank, or a team's number in a team event.
    pub id: u32,
}

/// A `300` record (TRF-26): a team's line-up for one round when it is not its default board
/// order.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LineUp {
    pub round: u32,
    pub team: u32,
    pub opponent: u32,
    /// Starting ranks by board; `None` for an empty board (`0000`).
    pub players: Vec<Option<u32>>,
}

/// Something of the file that was not used: a record this crate does not read, or a value it
/// could not read where it is not needed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Note {
    pub line: usize,
    pub text: String,
}

/// What [`TrfFile::parse`] read.
pub(crate) type Players = BTreeMap<u32, Player>;

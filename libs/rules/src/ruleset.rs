//! Rule sets: the edition of the Laws, the time-control category and the supervision.
//!
//! Every decision in this crate takes a [`RuleSet`], because the same position or action can
//! have different consequences under different editions and categories.

use std::{fmt, str::FromStr};

use serde::Serialize;

/// An edition of the Laws of Chess.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Edition {
    /// FIDE Laws in force from 1 July 2005.
    #[serde(rename = "fide-2005")]
    Fide2005,
    /// FIDE Laws in force from 1 July 2009.
    #[serde(rename = "fide-2009")]
    Fide2009,
    /// FIDE Laws in force from 1 July 2014.
    #[serde(rename = "fide-2014")]
    Fide2014,
    /// FIDE Laws in force from 1 January 2018.
    #[serde(rename = "fide-2018")]
    Fide2018,
    /// FIDE Laws in force from 1 January 2023 (the default).
    #[default]
    #[serde(rename = "fide-2023")]
    Fide2023,
    /// ICCF rules for correspondence chess, 2019.
    #[serde(rename = "iccf-2019")]
    Iccf2019,
}

impl Edition {
    /// Every edition, oldest first.
    pub const ALL: [Edition; 6] = [
        Edition::Fide2005,
        Edition::Fide2009,
        Edition::Fide2014,
        Edition::Fide2018,
        Edition::Fide2023,
        Edition::Iccf2019,
    ];

    /// The name used on the command line and in configuration, e.g. `fide-2023`.
    pub const fn name(self) -> &'static str {
        match self {
            Edition::Fide2005 => "fide-2005",
            Edition::Fide2009 => "fide-2009",
            Edition::Fide2014 => "fide-2014",
            Edition::Fide2018 => "fide-2018",
            Edition::Fide2023 => "fide-2023",
            Edition::Iccf2019 => "iccf-2019",
        }
    }

    /// True for the ICCF correspondence rules.
    pub const fn is_iccf(self) -> bool {
        matches!(self, Edition::Iccf2019)
    }

    /// Fivefold repetition and the seventy-five-move rule end the game automatically
    /// (FIDE from 2014; ICCF leaves draws to claims processed by the server).
    pub const fn has_automatic_draws(self) -> bool {
        matches!(
            self,
            Edition::Fide2014 | Edition::Fide2018 | Edition::Fide2023
        )
    }
}

impl fmt::Display for Edition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An edition name that is not one of [`Edition::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown edition `{given}`; valid editions are: fide-2005, fide-2009, fide-2014, fide-2018, fide-2023, iccf-2019"
)]
pub struct UnknownEdition {
    /// The text that was given.
    pub given: String,
}

impl FromStr for Edition {
    type Err = UnknownEdition;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.trim().to_ascii_lowercase();
        Edition::ALL
            .into_iter()
            .find(|e| e.name() == wanted)
            .ok_or_else(|| UnknownEdition {
                given: s.to_owned(),
            })
    }
}

/// A side, as it appears in reports (`"white"` / `"black"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    White,
    Black,
}

impl From<shakmaty::Color> for Side {
    fn from(color: shakmaty::Color) -> Self {
        match color {
            shakmaty::Color::White => Side::White,
            shakmaty::Color::Black => Side::Black,
        }
    }
}

impl From<Side> for shakmaty::Color {
    fn from(side: Side) -> Self {
        match side {
            Side::White => shakmaty::Color::White,
            Side::Black => shakmaty::Color::Black,
        }
    }
}

/// The time-control category, which selects the rapid and blitz appendices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    #[default]
    Standard,
    Rapid,
    Blitz,
}

/// Whether the arbiters supervise rapid and blitz games adequately (e.g. one arbiter per game
/// in blitz, per at most three games in rapid). Without adequate supervision the arbiter acts on
/// Articles 4 and 7 only on a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Supervision {
    #[default]
    Adequate,
    Inadequate,
}

/// One period of a time control.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
pub struct Period {
    /// Moves to complete in this period; 0 means the rest of the game.
    pub moves: u32,
    /// Time given at the start of the period, in milliseconds.
    pub base_ms: u64,
    /// Fischer increment added after each move, in milliseconds.
    pub increment_ms: u64,
    /// Delay consumed before the main time runs on each move, in milliseconds.
    pub delay_ms: u64,
}

/// A time control: one or more periods, the last of which normally covers the rest of the game.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize)]
pub struct TimeControl {
    pub periods: Vec<Period>,
}

const MINUTE_MS: u64 = 60_000;

impl TimeControl {
    /// A single period for the whole game.
    pub fn sudden_death(base_ms: u64, increment_ms: u64) -> Self {
        TimeControl {
            periods: vec![Period {
                moves: 0,
                base_ms,
                increment_ms,
                delay_ms: 0,
            }],
        }
    }

    /// The time the category thresholds are measured against: base + 60 × increment of the first
    /// period (delay counted like an increment, since it is time the player gets on every move).
    pub fn reference_ms(&self) -> u64 {
        self.periods.first().map_or(0, |p| {
            p.base_ms
                .saturating_add(p.increment_ms.max(p.delay_ms).saturating_mul(60))
        })
    }

    /// The category under `edition`'s thresholds (Appendix A.1 / B.1 of the edition).
    pub fn category(&self, edition: Edition) -> Category {
        let t = self.reference_ms();
        match edition {
            // Correspondence chess has no rapid or blitz appendix.
            Edition::Iccf2019 => Category::Standard,
            Edition::Fide2005 | Edition::Fide2009 => {
                if t < 15 * MINUTE_MS {
                    Category::Blitz
                } else if t < 60 * MINUTE_MS {
                    Category::Rapid
                } else {
                    Category::Standard
                }
            }
            Edition::Fide2014 | Edition::Fide2018 | Edition::Fide2023 => {
                if t <= 10 * MINUTE_MS {
                    Category::Blitz
                } else if t < 60 * MINUTE_MS {
                    Category::Rapid
                } else {
                    Category::Standard
                }
            }
        }
    }
}

/// The rules a game is played under. Every decision in this crate takes one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
pub struct RuleSet {
    pub edition: Edition,
    pub category: Category,
    pub supervision: Supervision,
}

impl RuleSet {
    /// An explicit rule set.
    pub const fn new(edition: Edition, category: Category, supervision: Supervision) -> Self {
        RuleSet {
            edition,
            category,
            supervision,
        }
    }

    /// Standard play with adequate supervision under `edition`.
    pub const fn standard(edition: Edition) -> Self {
        RuleSet::new(edition, Category::Standard, Supervision::Adequate)
    }

    /// The category derived from the time control per the edition's thresholds.
    pub fn from_time_control(
        edition: Edition,
        time_control: &TimeControl,
        supervision: Supervision,
    ) -> Self {
        RuleSet::new(edition, time_control.category(edition), supervision)
    }

    /// Rapid or blitz without adequate supervision: Articles 4 and 7 are applied only on a claim.
    pub const fn claim_based_supervision(&self) -> bool {
        !matches!(self.category, Category::Standard)
            && matches!(self.supervision, Supervision::Inadequate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edition_names_round_trip() {
        for e in Edition::ALL {
            assert_eq!(e.to_string().parse::<Edition>(), Ok(e));
        }
        let err = "fide-2020".parse::<Edition>().unwrap_err();
        assert!(err.to_string().contains("fide-2023"));
        assert_eq!(Edition::default(), Edition::Fide2023);
    }

    #[test]
    fn categories_follow_edition_thresholds() {
        let tc = |min: u64, inc_s: u64| TimeControl::sudden_death(min * MINUTE_MS, inc_s * 1000);
        // 10 + 0: blitz everywhere; 15 + 0 rapid in 2009; 12 + 0 rapid only from 2014.
        assert_eq!(tc(10, 0).category(Edition::Fide2009), Category::Blitz);
        assert_eq!(tc(10, 0).category(Edition::Fide2023), Category::Blitz);
        assert_eq!(tc(12, 0).category(Edition::Fide2005), Category::Blitz);
        assert_eq!(tc(12, 0).category(Edition::Fide2018), Category::Rapid);
        assert_eq!(tc(15, 0).category(Edition::Fide2009), Category::Rapid);
        // 3 + 2 = 5 min reference: blitz; 50 + 10 = 60 min: standard.
        assert_eq!(tc(3, 2).category(Edition::Fide2023), Category::Blitz);
        assert_eq!(tc(50, 10).category(Edition::Fide2023), Category::Standard);
        assert_eq!(tc(90, 30).category(Edition::Fide2005), Category::Standard);
        assert_eq!(tc(5, 0).category(Edition::Iccf2019), Category::Standard);
    }
}

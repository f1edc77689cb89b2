//! The Laws of Chess as boardcast applies them, edition by edition.
//!
//! Pure: no I/O and no wall clock. Time enters as data.

pub mod analysis;
pub mod chess960;
pub mod claims;
pub mod dead;
pub mod illegal;
pub mod moverules;
pub mod notation;
pub mod outcome;
pub mod pgn;
pub mod repetition;
pub mod result_signal;
pub mod ruleset;
pub mod touch;

pub use repetition::{Occurrence, RepetitionTracker};
pub use ruleset::{Category, Edition, RuleSet, Side, Supervision, TimeControl};

//! The Laws of Chess as boardcast applies them, edition by edition.
//!
//! Pure: no I/O and no wall clock. Time enters as data.

pub mod pgn;

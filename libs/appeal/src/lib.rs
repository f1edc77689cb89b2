//! Appeals: the exact record of games in one file, checked and replayed anywhere.
//!
//! - `file`: the game record file `boardcast export` writes — the records exactly as stored,
//!   the board's observations, the signing keys — read back whole.
//! - `verify`: sequence, chain, signatures, and every decision made again.
//! - `replay`: the same fold as the live service, with the timeline and any moment.
//! - `html`: the replay as one self-contained page.
//! - `fork`: a game's log that forks, its branches, and what keeping one removes.
//!
//! Pure: the caller opens files and connects to NATS.

pub mod file;
pub mod fork;
pub mod html;
mod parallel;
pub mod replay;
pub mod verify;

pub use file::{ExportedGame, FileError, RecordFile, RecordFileWriter};
pub use replay::{At, Moment, ReplayError, ReplayedGame, Step, replay, replay_each, replay_many};
pub use verify::{Problem, ProblemKind, Verification, verify};

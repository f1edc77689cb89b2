//! `boardcast export` and `boardcast replay`: the exact record of games for an appeal — read from
//! the live JetStream log into one file, then checked and replayed anywhere, without the live
//! system.

mod export;
mod replay;

pub use export::{ExportArgs, export};
pub use replay::{ReplayArgs, replay_command};

//! The game aggregate: one game as an ordered, hash-chained log of events.
//!
//! `Game::decide_*` turn a command or a board observation into new events without changing
//! anything; `Game::apply` folds a stored record into the state. The service appends what
//! `decide` returned and then applies it, so the live state and a replay of the log are the same
//! computation. Pure: no I/O and no wall clock; the recording time is passed in.

pub mod alerts;
mod arbiter;
mod chain;
mod claims;
mod clock;
pub mod display;
mod game;
mod observation;
mod pgn;
pub mod replay;
pub mod signing;
pub mod terms;
mod time_control;
pub mod timeline;
pub mod wording;

pub use arbiter::ActionRejected;
pub use chain::{ChainError, GENESIS_HASH, HASH_CHAIN_VERSION, chain_hash};
pub use claims::{ClaimAssessment, ClaimStatement, UnconfirmedMove};
pub use clock::CURRENT_INTERPRETATION;
pub use game::{
    CompletedMove, Game, GameError, IllegalMoveEntry, NewEvent, OpenedRecord, RecordedRequest,
    fen_of as fen, game_id_for, rules_of, validate_board_id, validate_tournament_id,
};
pub use observation::{
    Ignored, MAX_DEVICE_SEQ_JUMP, MAX_FIRST_DEVICE_SEQ, ObservationOutcome, Rejected,
    plausible_device_seq,
};
pub use pgn::pgn_tags;
pub use time_control::{parse_time_control, time_control_tag};

pub use boardcast_schema::device::v1 as device;
pub use boardcast_schema::game::v1 as events;

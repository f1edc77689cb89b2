//! The game aggregate: one game as an ordered, hash-chained log of events.
//!
//! `Game::decide_*` turn a command or a board observation into new events without changing
//! anything; `Game::apply` folds a stored record into the state. The service appends what
//! `decide` returned and then applies it, so the live state and a replay of the log are the same
//! computation. Pure: no I/O and no wall clock; the recording time is passed in.
//!
//! The parts, in the decide/evolve shape:
//! - the state and its queries (`state`), changed only by `evolve` (one event folded);
//! - the decisions, each reading the state and pure helpers, never each other: `start` (a new
//!   game), `observation` (a board's or clock's observation: input checks in its root, then
//!   `meaning`, `reports` and `clock_check`), `arbiter` (rulings and records), `claims` (a draw
//!   claim judged from the log, which a claim ruling records);
//! - the record (`record`, `chain`, `signing`): events sealed into signed, chained records and
//!   records checked and folded in order;
//! - shared pieces: `terms` (the log's typed terms and the conversions from the rules
//!   library's), `provisional` (the line of unconfirmed moves), `clock` (the clock's sides and
//!   presses in doubt);
//! - views folded from the same events: `alerts`, `display`, `timeline`, `pgn`, and `wording`
//!   (all words for people, in one place).

pub mod alerts;
mod arbiter;
mod chain;
mod claims;
mod clock;
pub mod display;
mod evolve;
mod observation;
mod pgn;
mod provisional;
mod record;
pub mod replay;
pub mod signing;
mod start;
mod state;
pub mod terms;
mod time_control;
pub mod timeline;
pub mod wording;

pub use arbiter::ActionRejected;
pub use chain::{ChainError, GENESIS_HASH, HASH_CHAIN_VERSION, chain_hash};
pub use claims::{ClaimAssessment, ClaimStatement, UnconfirmedMove};
pub use clock::CURRENT_INTERPRETATION;
pub use observation::{
    Ignored, MAX_DEVICE_SEQ_JUMP, MAX_FIRST_DEVICE_SEQ, MAX_OBSERVATION_BYTES, ObservationOutcome,
    Rejected, plausible_device_seq,
};
pub use pgn::pgn_tags;
pub use record::{NewEvent, OpenedRecord, follows_on, fork_point, trusted_records_of};
pub use start::{
    RevisionRefused, UNREADABLE_BOARD, could_be_game_id, example_game, game_id_for, rules_of,
    validate_board_id, validate_tournament_id,
};
pub use state::{
    CompletedMove, Game, GameError, IllegalMoveEntry, LOW_BATTERY_PERCENT, RecordedRequest,
    fen_of as fen,
};
pub use time_control::{parse_time_control, read_time_control_tag, time_control_tag};

pub use boardcast_schema::device::v1 as device;
pub use boardcast_schema::game::v1 as events;

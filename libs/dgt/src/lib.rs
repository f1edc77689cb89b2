//! The DGT e-board serial protocol: a streaming [`Decoder`] for what the board sends, encoders
//! for host commands ([`encode_command`]) and for board messages ([`encode_message`], used by
//! simulators), and the mapping between DGT squares/piece codes and shakmaty types.
//!
//! Pure: no I/O, no clock. Feed the decoder whatever the serial port returned.

mod board;
mod decoder;
mod encoder;
mod message;

pub use board::{BoardCodes, DgtSquare, Orientation, PieceCode};
pub use decoder::{Decoder, MAX_FRAME_LEN, MAX_GARBAGE_CHUNK};
pub use encoder::{
    ClockCommand, Command, EncodeError, Hms, RunFlags, clock_command_id, command_id,
    encode_command, encode_message, frame,
};
pub use message::{
    ClockAck, ClockSide, ClockStatus, ClockTime, HEADER_LEN, MalformedReason, Message,
    expected_len, id,
};

//! Encoders: host → board commands, and board → host messages (for simulators and tests).

use crate::message::{ClockSide, ClockTime, HEADER_LEN, Message, expected_len, id};

/// Host → board command bytes.
pub mod command_id {
    pub const RESET: u8 = 0x40;
    pub const SEND_CLOCK: u8 = 0x41;
    pub const SEND_BOARD: u8 = 0x42;
    pub const SEND_UPDATES: u8 = 0x43;
    pub const SEND_UPDATES_BOARD: u8 = 0x44;
    pub const SERIAL_NUMBER: u8 = 0x45;
    pub const SEND_UPDATES_NICE: u8 = 0x4b;
    pub const BATTERY: u8 = 0x4c;
    pub const VERSION: u8 = 0x4d;
    pub const LONG_SERIAL_NUMBER: u8 = 0x55;
    pub const CLOCK_MESSAGE: u8 = 0x2b;
}

/// DGT3000 clock command bytes, sent inside a [`command_id::CLOCK_MESSAGE`] wrapper.
pub mod clock_command_id {
    pub const START: u8 = 0x03;
    pub const END: u8 = 0x00;
    pub const END_DISPLAY: u8 = 0x03;
    pub const VERSION: u8 = 0x09;
    pub const SET_AND_RUN: u8 = 0x0a;
    pub const BEEP: u8 = 0x0b;
    pub const TEXT: u8 = 0x0c;
}

/// Why a message or command cannot be encoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    #[error("{field} must be {expected} ASCII characters below 0x80, got {got:?}")]
    BadText {
        field: &'static str,
        expected: usize,
        got: String,
    },
    #[error("clock value out of range: {0}")]
    BadClockValue(&'static str),
    #[error("payload byte {0:#04x} has bit 7 set")]
    HighBitInPayload(u8),
    #[error("message id {0:#04x} must have bit 7 set and not be a known id with a fixed layout")]
    BadMessageId(u8),
    #[error("payload of {0} bytes is too long for a frame")]
    TooLong(usize),
    #[error("{0} is a decoder report, not a message a board sends")]
    NotAMessage(&'static str),
}

/// A time for one side of the clock, as set by a set-and-run command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Hms {
    pub hours: u8,
    pub minutes: u8,
    pub seconds: u8,
}

impl Hms {
    /// Splits milliseconds into h:m:s, rounding down; `None` above 9:59:59.
    pub fn from_ms(ms: u64) -> Option<Hms> {
        let secs = ms / 1000;
        let hours = secs / 3600;
        (hours <= 9).then_some(Hms {
            hours: hours as u8,
            minutes: ((secs / 60) % 60) as u8,
            seconds: (secs % 60) as u8,
        })
    }
}

/// Flags of the set-and-run clock command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct RunFlags {
    /// 0x01: the left clock counts down.
    pub left_counts_down: bool,
    /// 0x02: the right clock counts down.
    pub right_counts_down: bool,
    /// 0x04: the clock is paused.
    pub pause: bool,
    /// 0x08: pressing the lever switches the running side.
    pub toggle_on_lever: bool,
}

impl RunFlags {
    pub fn to_u8(self) -> u8 {
        u8::from(self.left_counts_down)
            | u8::from(self.right_counts_down) << 1
            | u8::from(self.pause) << 2
            | u8::from(self.toggle_on_lever) << 3
    }
}

/// DGT3000 clock commands.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ClockCommand {
    /// Sets both times and how the clock runs.
    SetAndRun {
        left: Hms,
        right: Hms,
        flags: RunFlags,
    },
    /// Shows 8 characters of text, optionally beeping.
    Text { text: String, beep: bool },
    /// Beeps for `duration` units of 62.5 ms.
    Beep { duration: u8 },
    /// Asks for the clock's version.
    Version,
    /// Ends a text display and returns to showing times.
    EndDisplay,
}

/// A host → board command.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Command {
    /// 0x40: back to idle mode, no more updates.
    Reset,
    /// 0x41: send one clock frame.
    SendClock,
    /// 0x42: send a board dump.
    SendBoard,
    /// 0x43: send field updates, and the clock at least once a second.
    SendUpdates,
    /// 0x44: send field updates only.
    SendUpdatesBoard,
    /// 0x4b: send field updates, and the clock only when it changes.
    SendUpdatesNice,
    /// 0x45: send the serial number.
    SerialNumber,
    /// 0x55: send the long serial number.
    LongSerialNumber,
    /// 0x4c: send the battery status.
    Battery,
    /// 0x4d: send the firmware version.
    Version,
    /// 0x2b: a DGT3000 clock command; wait for its acknowledgement before sending the next one.
    Clock(ClockCommand),
}

/// Encodes a host → board command.
pub fn encode_command(command: &Command) -> Result<Vec<u8>, EncodeError> {
    use command_id as c;
    let single = match command {
        Command::Reset => c::RESET,
        Command::SendClock => c::SEND_CLOCK,
        Command::SendBoard => c::SEND_BOARD,
        Command::SendUpdates => c::SEND_UPDATES,
        Command::SendUpdatesBoard => c::SEND_UPDATES_BOARD,
        Command::SendUpdatesNice => c::SEND_UPDATES_NICE,
        Command::SerialNumber => c::SERIAL_NUMBER,
        Command::LongSerialNumber => c::LONG_SERIAL_NUMBER,
        Command::Battery => c::BATTERY,
        Command::Version => c::VERSION,
        Command::Clock(clock) => return encode_clock_command(clock),
    };
    Ok(vec![single])
}

fn encode_clock_command(command: &ClockCommand) -> Result<Vec<u8>, EncodeError> {
    use clock_command_id as k;
    let (cmd, data): (u8, Vec<u8>) = match command {
        ClockCommand::SetAndRun { left, right, flags } => {
            for hms in [left, right] {
                if hms.hours > 9 || hms.minutes > 59 || hms.seconds > 59 {
                    return Err(EncodeError::BadClockValue("h:m:s above 9:59:59"));
                }
            }
            (
                k::SET_AND_RUN,
                vec![
                    left.hours,
                    left.minutes,
                    left.seconds,
                    right.hours,
                    right.minutes,
                    right.seconds,
                    flags.to_u8(),
                ],
            )
        }
        ClockCommand::Text { text, beep } => {
            let mut data = ascii_exact("text", text, 8)?;
            data.push(if *beep { 0x03 } else { 0x00 });
            (k::TEXT, data)
        }
        ClockCommand::Beep { duration } => {
            if *duration >= 0x80 {
                return Err(EncodeError::BadClockValue("beep duration above 127"));
            }
            (k::BEEP, vec![*duration])
        }
        ClockCommand::Version => (k::VERSION, Vec::new()),
        ClockCommand::EndDisplay => (k::END_DISPLAY, Vec::new()),
    };
    // The length byte counts what follows it: start marker, command, data, end marker.
    let mut bytes = vec![
        command_id::CLOCK_MESSAGE,
        (data.len() + 3) as u8,
        k::START,
        cmd,
    ];
    bytes.extend(data);
    bytes.push(k::END);
    Ok(bytes)
}

fn ascii_exact(field: &'static str, text: &str, len: usize) -> Result<Vec<u8>, EncodeError> {
    let bytes = text.as_bytes();
    if bytes.len() != len || bytes.iter().any(|&b| b >= 0x80) {
        return Err(EncodeError::BadText {
            field,
            expected: len,
            got: text.to_owned(),
        });
    }
    Ok(bytes.to_vec())
}

/// Encodes a board → host message as the board would send it; [`crate::Decoder`] decodes the
/// result back to the same message.
pub fn encode_message(message: &Message) -> Result<Vec<u8>, EncodeError> {
    let (message_id, payload): (u8, Vec<u8>) = match message {
        Message::BoardDump(codes) => (id::BOARD_DUMP, codes.0.iter().map(|c| c.to_u8()).collect()),
        Message::FieldUpdate { square, piece } => {
            (id::FIELD_UPDATE, vec![square.index(), piece.to_u8()])
        }
        Message::Clock(time) => (id::BWTIME, encode_clock_time(time)?.to_vec()),
        Message::ClockAck(ack) => {
            if ack.payload[0] & 0x0f != 0x0a && ack.payload[3] & 0x0f != 0x0a {
                return Err(EncodeError::BadClockValue("an ack needs hours nibble 0xa"));
            }
            (id::BWTIME, ack.payload.to_vec())
        }
        Message::ClockIgnored => (id::BWTIME, vec![0; 7]),
        Message::SerialNumber(serial) => (id::SERIAL_NUMBER, ascii_exact("serial", serial, 5)?),
        Message::LongSerialNumber(serial) => (
            id::LONG_SERIAL_NUMBER,
            ascii_exact("long serial", serial, 10)?,
        ),
        Message::Version { major, minor } => (id::VERSION, vec![*major, *minor]),
        Message::Battery(bytes) => (id::BATTERY, bytes.to_vec()),
        Message::Unknown { id, payload } => {
            if id & 0x80 == 0 || expected_len(*id).is_some() {
                return Err(EncodeError::BadMessageId(*id));
            }
            (*id, payload.clone())
        }
        Message::Malformed { .. } => return Err(EncodeError::NotAMessage("Malformed")),
        Message::Garbage { .. } => return Err(EncodeError::NotAMessage("Garbage")),
    };
    frame(message_id, &payload)
}

/// Wraps a payload into a frame with the 14-bit length header.
pub fn frame(message_id: u8, payload: &[u8]) -> Result<Vec<u8>, EncodeError> {
    if message_id & 0x80 == 0 {
        return Err(EncodeError::BadMessageId(message_id));
    }
    if let Some(&byte) = payload.iter().find(|&&b| b & 0x80 != 0) {
        return Err(EncodeError::HighBitInPayload(byte));
    }
    let total = payload.len() + HEADER_LEN;
    if total > crate::decoder::MAX_FRAME_LEN {
        return Err(EncodeError::TooLong(payload.len()));
    }
    let mut bytes = Vec::with_capacity(total);
    bytes.push(message_id);
    bytes.push(((total >> 7) & 0x7f) as u8);
    bytes.push((total & 0x7f) as u8);
    bytes.extend_from_slice(payload);
    Ok(bytes)
}

fn encode_clock_time(time: &ClockTime) -> Result<[u8; 7], EncodeError> {
    let right = encode_side(&time.right)?;
    let left = encode_side(&time.left)?;
    let payload = [
        right[0],
        right[1],
        right[2],
        left[0],
        left[1],
        left[2],
        time.status.0,
    ];
    if payload.iter().all(|&b| b == 0) {
        // Would read back as the ignored all-zero frame.
        return Err(EncodeError::BadClockValue(
            "an all-zero clock frame is not a time",
        ));
    }
    Ok(payload)
}

fn encode_side(side: &ClockSide) -> Result<[u8; 3], EncodeError> {
    if side.hours > 9 || side.minutes > 59 || side.seconds > 59 {
        return Err(EncodeError::BadClockValue("h:m:s above 9:59:59"));
    }
    let hours = side.hours
        | u8::from(side.flag_fallen) << 4
        | u8::from(side.increment) << 5
        | u8::from(side.flag_shown) << 6;
    let bcd = |v: u8| (v / 10) << 4 | (v % 10);
    Ok([hours, bcd(side.minutes), bcd(side.seconds)])
}

//! Board → host messages.

use crate::board::{BoardCodes, DgtSquare, PieceCode};

/// Message ids (byte 0 of a board → host frame).
pub mod id {
    pub const BOARD_DUMP: u8 = 0x86;
    pub const BWTIME: u8 = 0x8d;
    pub const FIELD_UPDATE: u8 = 0x8e;
    pub const SERIAL_NUMBER: u8 = 0x91;
    pub const VERSION: u8 = 0x93;
    pub const BATTERY: u8 = 0xa0;
    pub const LONG_SERIAL_NUMBER: u8 = 0xa2;
}

/// Length of the frame header: id plus two 7-bit length bytes.
pub const HEADER_LEN: usize = 3;

/// Total frame length (header included) of each known message id.
pub fn expected_len(message_id: u8) -> Option<usize> {
    match message_id {
        id::BOARD_DUMP => Some(67),
        id::BWTIME => Some(10),
        id::FIELD_UPDATE => Some(5),
        id::SERIAL_NUMBER => Some(8),
        id::VERSION => Some(5),
        id::BATTERY => Some(12),
        id::LONG_SERIAL_NUMBER => Some(13),
        _ => None,
    }
}

/// One side of a clock reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ClockSide {
    /// 0–9.
    pub hours: u8,
    /// 0–59.
    pub minutes: u8,
    /// 0–59.
    pub seconds: u8,
    /// Bit 4 of the hours byte: the flag has fallen and the clock is blocked.
    pub flag_fallen: bool,
    /// Bit 5 of the hours byte: the increment indicator.
    pub increment: bool,
    /// Bit 6 of the hours byte: the flag is shown.
    pub flag_shown: bool,
}

impl ClockSide {
    /// The time shown, in milliseconds.
    pub fn remaining_ms(&self) -> u64 {
        (u64::from(self.hours) * 3600 + u64::from(self.minutes) * 60 + u64::from(self.seconds))
            * 1000
    }
}

/// The status byte (p6) of a clock frame. Kept raw so that undocumented bits survive a round trip.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ClockStatus(pub u8);

impl ClockStatus {
    /// Bit 0: the clock is running.
    pub fn running(self) -> bool {
        self.0 & 0x01 != 0
    }
    /// Bit 1: the lever is high on the right side (so the left clock is the one running).
    pub fn lever_right_high(self) -> bool {
        self.0 & 0x02 != 0
    }
    /// Bit 2: the clock's battery is low.
    pub fn low_battery(self) -> bool {
        self.0 & 0x04 != 0
    }
    /// Bit 3: documented as "left side to move"; unreliable on real clocks.
    pub fn left_to_move_bit(self) -> bool {
        self.0 & 0x08 != 0
    }
    /// Bit 4: documented as "right side to move"; unreliable on real clocks.
    pub fn right_to_move_bit(self) -> bool {
        self.0 & 0x10 != 0
    }
    /// Bit 5: no clock is connected to the board.
    pub fn no_clock(self) -> bool {
        self.0 & 0x20 != 0
    }
}

/// A clock time frame (BWTIME) that carries times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ClockTime {
    pub right: ClockSide,
    pub left: ClockSide,
    pub status: ClockStatus,
}

/// A BWTIME frame acknowledging a clock command (hours nibble 0xa on either side).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClockAck {
    /// The 7 payload bytes as received.
    pub payload: [u8; 7],
}

impl ClockAck {
    /// The four acknowledgement bytes, reassembled from the 7-bit payload. The first is 0x10
    /// for a well-formed ack; the second names the acknowledged clock command (for example
    /// 0x0a set-and-run, 0x0b beep, 0x0c text, 0x09 version, 0x88 a button press).
    pub fn ack_bytes(&self) -> [u8; 4] {
        let p = self.payload;
        [
            (p[1] & 0x7f) | ((p[3] << 3) & 0x80),
            (p[2] & 0x7f) | ((p[3] << 2) & 0x80),
            (p[4] & 0x7f) | ((p[0] << 3) & 0x80),
            (p[5] & 0x7f) | ((p[0] << 2) & 0x80),
        ]
    }

    /// The clock command this acknowledges.
    pub fn command(&self) -> u8 {
        self.ack_bytes()[1]
    }
}

/// Why a frame with a known id could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum MalformedReason {
    #[error("piece code above 15")]
    BadPieceCode,
    #[error("square number above 63")]
    BadSquare,
    #[error("clock digits are not valid BCD")]
    BadClockDigits,
}

/// A message from the board, or a report about bytes that did not form one.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Message {
    /// 0x86: all 64 squares.
    BoardDump(BoardCodes),
    /// 0x8e: one square changed.
    FieldUpdate { square: DgtSquare, piece: PieceCode },
    /// 0x8d: clock times.
    Clock(ClockTime),
    /// 0x8d with hours nibble 0xa: the acknowledgement of a clock command.
    ClockAck(ClockAck),
    /// 0x8d with an all-zero payload, as some Bluetooth boards send: carries no time, ignore it.
    ClockIgnored,
    /// 0x91: the serial number (5 ASCII digits).
    SerialNumber(String),
    /// 0xa2: the long serial number (10 ASCII digits).
    LongSerialNumber(String),
    /// 0x93: firmware version.
    Version { major: u8, minor: u8 },
    /// 0xa0: battery status, 9 bytes whose layout differs between board models.
    Battery([u8; 9]),
    /// A well-framed message with an id this decoder does not know.
    Unknown { id: u8, payload: Vec<u8> },
    /// A frame with a known id and length whose contents are invalid.
    Malformed {
        id: u8,
        payload: Vec<u8>,
        reason: MalformedReason,
    },
    /// Bytes skipped while resynchronising (noise, truncated frames, impossible lengths).
    Garbage { bytes: Vec<u8> },
}

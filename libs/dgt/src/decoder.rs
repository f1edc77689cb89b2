//! Streaming decoder for the board → host byte stream.

use crate::board::{BoardCodes, DgtSquare, PieceCode};
use crate::message::{
    ClockAck, ClockSide, ClockStatus, ClockTime, HEADER_LEN, MalformedReason, Message,
    expected_len, id,
};

/// The longest frame accepted for an unknown id. Known messages are at most 67 bytes; a longer
/// length field is far more likely noise than a real message.
pub const MAX_FRAME_LEN: usize = 256;

/// Skipped bytes are reported in chunks of at most this many, so memory stays bounded.
pub const MAX_GARBAGE_CHUNK: usize = 256;

/// Turns byte chunks, split anywhere, into [`Message`]s.
///
/// A byte with bit 7 set always starts a frame, so after noise or a truncated frame the decoder
/// picks up again at the next such byte. Skipped bytes are reported as [`Message::Garbage`],
/// just before the next message (or when [`Decoder::flush`] is called, or when a chunk is full).
/// Memory use is bounded by [`MAX_FRAME_LEN`] + [`MAX_GARBAGE_CHUNK`].
#[derive(Debug, Default, Clone)]
pub struct Decoder {
    frame: Vec<u8>,
    garbage: Vec<u8>,
}

impl Decoder {
    pub fn new() -> Decoder {
        Decoder::default()
    }

    /// Feeds bytes and returns the messages they complete.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<Message> {
        let mut out = Vec::new();
        self.feed_into(bytes, &mut out);
        out
    }

    /// Feeds bytes, appending the messages they complete to `out`.
    pub fn feed_into(&mut self, bytes: &[u8], out: &mut Vec<Message>) {
        for &byte in bytes {
            self.push(byte, out);
        }
    }

    /// Reports everything still buffered (a partial frame, skipped bytes) as garbage, e.g. when
    /// the port closes.
    pub fn flush(&mut self) -> Vec<Message> {
        let mut out = Vec::new();
        let frame = std::mem::take(&mut self.frame);
        self.skip(&frame, &mut out);
        self.emit_garbage(&mut out);
        out
    }

    /// Bytes of a frame started but not yet complete.
    pub fn pending_len(&self) -> usize {
        self.frame.len() + self.garbage.len()
    }

    fn push(&mut self, byte: u8, out: &mut Vec<Message>) {
        if byte & 0x80 != 0 {
            // A new frame starts; whatever was in progress was cut short.
            let truncated = std::mem::take(&mut self.frame);
            self.skip(&truncated, out);
            self.frame.push(byte);
            return;
        }
        if self.frame.is_empty() {
            self.skip(&[byte], out);
            return;
        }
        self.frame.push(byte);
        if self.frame.len() < HEADER_LEN {
            return;
        }
        let declared = (usize::from(self.frame[1]) << 7) | usize::from(self.frame[2]);
        let plausible = match expected_len(self.frame[0]) {
            Some(len) => declared == len,
            None => (HEADER_LEN..=MAX_FRAME_LEN).contains(&declared),
        };
        if !plausible {
            let bad = std::mem::take(&mut self.frame);
            self.skip(&bad, out);
            return;
        }
        if self.frame.len() == declared {
            let frame = std::mem::take(&mut self.frame);
            self.emit_garbage(out);
            out.push(parse(frame[0], &frame[HEADER_LEN..]));
        }
    }

    fn skip(&mut self, bytes: &[u8], out: &mut Vec<Message>) {
        for &byte in bytes {
            self.garbage.push(byte);
            if self.garbage.len() >= MAX_GARBAGE_CHUNK {
                self.emit_garbage(out);
            }
        }
    }

    fn emit_garbage(&mut self, out: &mut Vec<Message>) {
        if !self.garbage.is_empty() {
            out.push(Message::Garbage {
                bytes: std::mem::take(&mut self.garbage),
            });
        }
    }
}

/// Decodes one complete frame whose length has been checked.
fn parse(message_id: u8, payload: &[u8]) -> Message {
    let result = match message_id {
        id::BOARD_DUMP => parse_board_dump(payload),
        id::FIELD_UPDATE => parse_field_update(payload),
        id::BWTIME => parse_clock(payload),
        id::SERIAL_NUMBER => Ok(Message::SerialNumber(ascii(payload))),
        id::LONG_SERIAL_NUMBER => Ok(Message::LongSerialNumber(ascii(payload))),
        id::VERSION => match payload {
            [major, minor] => Ok(Message::Version {
                major: *major,
                minor: *minor,
            }),
            _ => Ok(unknown(message_id, payload)),
        },
        id::BATTERY => match <[u8; 9]>::try_from(payload) {
            Ok(bytes) => Ok(Message::Battery(bytes)),
            Err(_) => Ok(unknown(message_id, payload)),
        },
        _ => Ok(unknown(message_id, payload)),
    };
    result.unwrap_or_else(|reason| Message::Malformed {
        id: message_id,
        payload: payload.to_vec(),
        reason,
    })
}

fn unknown(message_id: u8, payload: &[u8]) -> Message {
    Message::Unknown {
        id: message_id,
        payload: payload.to_vec(),
    }
}

fn ascii(payload: &[u8]) -> String {
    // Payload bytes are below 0x80, hence ASCII.
    payload.iter().map(|&b| char::from(b)).collect()
}

fn parse_board_dump(payload: &[u8]) -> Result<Message, MalformedReason> {
    let mut codes = BoardCodes::default();
    for (slot, &code) in codes.0.iter_mut().zip(payload) {
        *slot = PieceCode::from_u8(code).ok_or(MalformedReason::BadPieceCode)?;
    }
    Ok(Message::BoardDump(codes))
}

fn parse_field_update(payload: &[u8]) -> Result<Message, MalformedReason> {
    let [square, code] = payload else {
        return Err(MalformedReason::BadSquare);
    };
    Ok(Message::FieldUpdate {
        square: DgtSquare::new(*square).ok_or(MalformedReason::BadSquare)?,
        piece: PieceCode::from_u8(*code).ok_or(MalformedReason::BadPieceCode)?,
    })
}

fn parse_clock(payload: &[u8]) -> Result<Message, MalformedReason> {
    let Ok(p) = <[u8; 7]>::try_from(payload) else {
        return Err(MalformedReason::BadClockDigits);
    };
    if p.iter().all(|&b| b == 0) {
        return Ok(Message::ClockIgnored);
    }
    if p[0] & 0x0f == 0x0a || p[3] & 0x0f == 0x0a {
        return Ok(Message::ClockAck(ClockAck { payload: p }));
    }
    Ok(Message::Clock(ClockTime {
        right: clock_side(p[0], p[1], p[2])?,
        left: clock_side(p[3], p[4], p[5])?,
        status: ClockStatus(p[6]),
    }))
}

fn clock_side(hours: u8, minutes: u8, seconds: u8) -> Result<ClockSide, MalformedReason> {
    let h = hours & 0x0f;
    if h > 9 {
        return Err(MalformedReason::BadClockDigits);
    }
    Ok(ClockSide {
        hours: h,
        minutes: bcd(minutes)?,
        seconds: bcd(seconds)?,
        flag_fallen: hours & 0x10 != 0,
        increment: hours & 0x20 != 0,
        flag_shown: hours & 0x40 != 0,
    })
}

fn bcd(byte: u8) -> Result<u8, MalformedReason> {
    let (tens, units) = (byte >> 4, byte & 0x0f);
    if tens > 5 || units > 9 {
        return Err(MalformedReason::BadClockDigits);
    }
    Ok(tens * 10 + units)
}

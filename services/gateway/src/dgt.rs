//! DGT e-boards: from decoded board messages to observations, and replaying captures.
//!
//! [`DgtSession`] follows one board: it keeps the 64 squares from the last board dump and the
//! field updates since, and turns each [`Message`] into observation kinds. It does no I/O, so
//! the serial reader, a capture replay and tests drive it the same way.
//!
//! [`read_capture`] reads a capture file (the raw bytes as read from the serial port) into
//! observations, which `boardcast_game::replay` folds into a game exactly as the game service
//! does.

use boardcast_dgt::{BoardCodes, Decoder, DgtSquare, Message, Orientation, PieceCode};
use boardcast_game::replay::TimedKind;
use boardcast_schema::device::v1::{
    BoardPlacement, ClockDisplay, ClockReading, ClockRun, DeviceState, DeviceStatus,
    Piece as DevicePiece, PieceLifted, PiecePlaced, observation::Kind,
};
use boardcast_schema::pieces::device_piece;
use shakmaty::Board;

/// Which display of the clock shows White's time.
///
/// A DGT3000 reports its left and right displays; which one is White's depends on where the
/// clock stands. FIDE leaves the side to the arbiter, who usually puts all clocks of a row on
/// the same side; DGT's own software assumes White on the left unless told otherwise. Set it per
/// board (or per row) to what the hall looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ClockSide {
    #[default]
    Left,
    Right,
}

/// How a board is set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DgtSessionConfig {
    /// How the board lies; squares are reported as chess squares read in this orientation.
    pub orientation: Orientation,
    /// The clock display that shows White's time.
    pub white_clock: ClockSide,
}

/// What one message (or one chunk of bytes) meant.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Handled {
    /// Observation kinds, in order.
    pub kinds: Vec<Kind>,
    /// Things to log: skipped bytes, malformed or unknown frames, markers.
    pub diagnostics: Vec<String>,
}

/// One DGT board (and the clock connected to it), from messages to observation kinds.
#[derive(Debug, Clone, Default)]
pub struct DgtSession {
    config: DgtSessionConfig,
    decoder: Decoder,
    codes: BoardCodes,
    /// A board dump has been seen, so `codes` is the whole board.
    known: bool,
    serial_number: String,
    firmware_version: String,
    battery_percent: Option<u32>,
    /// Whether a clock is connected to the board, as its clock frames last said.
    clock_connected: Option<bool>,
    last_clock: Option<ClockReading>,
}

fn code_piece(code: PieceCode) -> i32 {
    match code {
        PieceCode::Piece(piece) => device_piece(piece) as i32,
        _ => DevicePiece::Unspecified as i32,
    }
}

impl DgtSession {
    pub fn new(config: DgtSessionConfig) -> DgtSession {
        DgtSession {
            config,
            ..DgtSession::default()
        }
    }

    /// The board as the sensors see it, read in the configured orientation; `None` before the
    /// first board dump.
    pub fn board(&self) -> Option<Board> {
        self.known
            .then(|| self.codes.to_board(self.config.orientation))
    }

    /// Decodes bytes read from the port (split anywhere) and handles every message in them.
    pub fn feed(&mut self, bytes: &[u8]) -> Handled {
        let mut handled = Handled::default();
        for message in self.decoder.feed(bytes) {
            let one = self.on_message(message);
            handled.kinds.extend(one.kinds);
            handled.diagnostics.extend(one.diagnostics);
        }
        handled
    }

    /// What one decoded message means. Never fails: what cannot be used becomes a diagnostic.
    pub fn on_message(&mut self, message: Message) -> Handled {
        let mut out = Handled::default();
        match message {
            Message::BoardDump(codes) => {
                self.codes = codes;
                self.known = true;
                if codes.0.iter().any(|c| matches!(c, PieceCode::Marker(_))) {
                    out.diagnostics
                        .push("board dump with marker pieces (left out)".to_owned());
                }
                out.kinds.push(self.placement());
            }
            Message::FieldUpdate { square, piece } => self.field_update(square, piece, &mut out),
            Message::Clock(time) => {
                // Said when it changes: a board with no clock completes no move.
                let connected = !time.status.no_clock();
                if self.clock_connected != Some(connected) {
                    self.clock_connected = Some(connected);
                    out.kinds.push(self.status());
                }
                if !connected {
                    return out;
                }
                let side = |s: &boardcast_dgt::ClockSide| {
                    (s.remaining_ms(), s.flag_shown || s.flag_fallen)
                };
                let (left, right) = (side(&time.left), side(&time.right));
                let (white, black) = match self.config.white_clock {
                    ClockSide::Left => (left, right),
                    ClockSide::Right => (right, left),
                };
                // Bit 1 (lever high on the right) means the left clock runs; bits 3/4 are not
                // reliable on real clocks.
                let left_runs = time.status.lever_right_high();
                let white_runs = left_runs == (self.config.white_clock == ClockSide::Left);
                let running = match (time.status.running(), white_runs) {
                    (false, _) => ClockRun::Stopped,
                    (true, true) => ClockRun::White,
                    (true, false) => ClockRun::Black,
                };
                let reading = ClockReading {
                    white_remaining_ms: white.0,
                    black_remaining_ms: black.0,
                    running: running as i32,
                    white_flag: white.1,
                    black_flag: black.1,
                    // The configured side is a hint: the game works out the real one.
                    white_display: match self.config.white_clock {
                        ClockSide::Left => ClockDisplay::Left,
                        ClockSide::Right => ClockDisplay::Right,
                    } as i32,
                };
                // In update mode the board repeats the clock every second; a stopped clock
                // repeats the same reading, which says nothing new.
                if self.last_clock.as_ref() != Some(&reading) {
                    self.last_clock = Some(reading);
                    out.kinds.push(Kind::Clock(reading));
                }
            }
            Message::ClockAck(_) | Message::ClockIgnored => {}
            Message::SerialNumber(serial) | Message::LongSerialNumber(serial) => {
                self.serial_number = serial;
                out.kinds.push(self.status());
            }
            Message::Version { major, minor } => {
                self.firmware_version = format!("{major}.{minor}");
                out.kinds.push(self.status());
            }
            Message::Battery(bytes) => {
                // The layout differs between models; Bluetooth boards put the percentage first.
                // Asked every few minutes: said when it changed.
                let percent = (bytes[0] <= 100).then_some(u32::from(bytes[0]));
                if percent != self.battery_percent {
                    self.battery_percent = percent;
                    out.kinds.push(self.status());
                }
            }
            Message::Unknown { id, payload } => out.diagnostics.push(format!(
                "unknown message 0x{id:02x} with {} payload bytes",
                payload.len()
            )),
            Message::Malformed { id, reason, .. } => out
                .diagnostics
                .push(format!("malformed message 0x{id:02x}: {reason}")),
            Message::Garbage { bytes } => out.diagnostics.push(format!(
                "skipped {} bytes that formed no message",
                bytes.len()
            )),
        }
        out
    }

    fn field_update(&mut self, square: DgtSquare, piece: PieceCode, out: &mut Handled) {
        let before = self.codes.get(square);
        self.codes.set(square, piece);
        let chess_square = u32::from(square.to_square(self.config.orientation));
        if let PieceCode::Marker(code) = piece {
            out.diagnostics.push(format!(
                "marker piece {code} on sensor square {}",
                square.index()
            ));
        }
        if before != PieceCode::Empty && before != piece {
            out.kinds.push(Kind::Lifted(PieceLifted {
                square: chess_square,
                piece: code_piece(before),
            }));
        }
        if piece != PieceCode::Empty && before != piece {
            out.kinds.push(Kind::Placed(PiecePlaced {
                square: chess_square,
                piece: code_piece(piece),
            }));
        }
        // Without a dump the rest of the board is unknown: no whole-board placement yet.
        if self.known && before != piece {
            out.kinds.push(self.placement());
        }
    }

    fn placement(&self) -> Kind {
        Kind::Placement(BoardPlacement {
            placement: self.codes.to_board(self.config.orientation).to_string(),
        })
    }

    fn status(&self) -> Kind {
        Kind::Status(DeviceStatus {
            state: DeviceState::Connected as i32,
            battery_percent: self.battery_percent,
            serial_number: self.serial_number.clone(),
            firmware_version: self.firmware_version.clone(),
            detail: String::new(),
            clock_connected: self.clock_connected,
        })
    }
}

/// What a capture holds: the observations the board gave, in order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Capture {
    pub observations: Vec<TimedKind>,
    /// Bytes and frames that could not be used.
    pub diagnostics: Vec<String>,
    /// The board's serial number, if the capture has one.
    pub serial_number: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("the capture has no board dump: no board state to start from")]
    NoBoard,
}

/// Reads a capture file (the raw bytes as read from the serial port) into the observations a
/// gateway would have published.
///
/// A capture has no timestamps, so time is read off the clock: each clock frame advances it by
/// what the running side lost since the previous frame. A board dump is a settled reading
/// (boards send one when asked, at start-up or after a reconnection), so time moves on by the
/// inference's quiet period after one: a dump that matches no position is then looked into by
/// the next clock reading, which after a disconnection reconstructs the moves played meanwhile.
pub fn read_capture(bytes: &[u8], config: DgtSessionConfig) -> Result<Capture, ReplayError> {
    let quiet_ms = boardcast_game::replay::settle_ms();
    let mut session = DgtSession::new(config);
    let mut decoder = Decoder::new();
    let mut capture = Capture::default();
    let mut now: i64 = 0;
    let mut last_clock: Option<ClockReading> = None;
    let mut seen_board = false;
    for message in decoder.feed(bytes) {
        let is_dump = matches!(message, Message::BoardDump(_));
        if let Message::SerialNumber(serial) | Message::LongSerialNumber(serial) = &message {
            capture.serial_number = Some(serial.clone());
        }
        let handled = session.on_message(message);
        capture.diagnostics.extend(handled.diagnostics);
        for kind in handled.kinds {
            match &kind {
                Kind::Placement(_) => seen_board = true,
                Kind::Clock(reading) => {
                    if let Some(previous) = &last_clock {
                        let lost = |before: u64, after: u64| before.saturating_sub(after);
                        let elapsed = match previous.running() {
                            ClockRun::White => {
                                lost(previous.white_remaining_ms, reading.white_remaining_ms)
                            }
                            ClockRun::Black => {
                                lost(previous.black_remaining_ms, reading.black_remaining_ms)
                            }
                            _ => 0,
                        };
                        now = now.saturating_add(i64::try_from(elapsed).unwrap_or(0));
                    }
                    last_clock = Some(*reading);
                }
                _ => {}
            }
            capture.observations.push(TimedKind { at_ms: now, kind });
        }
        if is_dump {
            now = now.saturating_add(quiet_ms);
        }
    }
    if !seen_board {
        return Err(ReplayError::NoBoard);
    }
    Ok(capture)
}

/// A device time for replays that are not published (2026-01-01): only differences of times
/// matter to a game.
pub const REPLAY_EPOCH_MS: i64 = 1_767_225_600_000;

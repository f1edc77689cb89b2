//! DGT e-boards: from decoded board messages to observations, and replaying captures.
//!
//! [`DgtSession`] follows one board: it keeps the 64 squares from the last board dump and the
//! field updates since, and turns each [`Message`] into observation kinds. It does no I/O, so
//! the serial reader, a capture replay and tests drive it the same way.
//!
//! [`replay_capture`] reads a capture file (the raw bytes as read from the serial port) and runs
//! move inference over it; [`replay_capture_to_pgn`] gives the inferred game as PGN.

use std::collections::HashMap;

use boardcast_dgt::{BoardCodes, Decoder, DgtSquare, Message, Orientation, PieceCode};
use boardcast_inference::{
    Config, Event, Inference, Input, IrregularityCause, Output, ResultSignal,
};
use boardcast_rules::pgn::{PgnGame, PgnMove};
use boardcast_schema::device::v1::{
    BoardPlacement, ClockReading, ClockRun, DeviceState, DeviceStatus, Piece as DevicePiece,
    PieceLifted, PiecePlaced, observation::Kind,
};
use boardcast_schema::pieces::device_piece;
use shakmaty::{Board, CastlingMode, Chess, Color, Position, uci::UciMove};

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
                if time.status.no_clock() {
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
                self.battery_percent = (bytes[0] <= 100).then_some(u32::from(bytes[0]));
                out.kinds.push(self.status());
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
        })
    }
}

/// An observation kind read from a capture, at a time reconstructed from the clock.
#[derive(Debug, Clone, PartialEq)]
pub struct TimedKind {
    /// Milliseconds since the capture began, as measured by the running clock (a capture has
    /// no timestamps; see [`replay_capture`]).
    pub at_ms: i64,
    pub kind: Kind,
}

/// An inference output during a replay, with the ply the board was heading for.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayEvent {
    /// The ply after the inferred game at the time (1 = White's first move).
    pub next_ply: u32,
    pub output: Output,
}

/// Everything a capture replay found.
#[derive(Debug, Clone, PartialEq)]
pub struct Replay {
    /// The inferred game, with `[%clk]` from the clock frames.
    pub game: PgnGame,
    /// What inference reported, except touches and the routine provisional/confirmed moves.
    pub events: Vec<ReplayEvent>,
    /// The same events in words, for the operator.
    pub notes: Vec<String>,
    /// Bytes and frames that could not be used.
    pub diagnostics: Vec<String>,
    /// The observations the capture gives, in order.
    pub observations: Vec<TimedKind>,
    /// The board's serial number, if the capture has one.
    pub serial_number: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("the capture has no board dump: no board state to start from")]
    NoBoard,
}

fn side_name(color: Color) -> &'static str {
    match color {
        Color::White => "white",
        Color::Black => "black",
    }
}

fn uci(m: shakmaty::Move) -> String {
    UciMove::from_move(m, CastlingMode::Standard).to_string()
}

/// The words for an output worth telling the operator; `None` for the routine ones.
fn note(next_ply: u32, output: &Output) -> Option<String> {
    Some(match output {
        Output::ProvisionalRevised {
            from_move, to_move, ..
        } => format!(
            "ply {}: provisional {} revised to {}",
            to_move.ply,
            uci(from_move.mv),
            uci(to_move.mv)
        ),
        Output::Reconstructed { moves, .. } => format!(
            "ply {}: reconstructed {}",
            moves.first().map_or(next_ply, |m| m.ply),
            moves
                .iter()
                .map(|m| uci(m.mv))
                .collect::<Vec<_>>()
                .join(" ")
        ),
        Output::Irregularity {
            cause, ambiguous, ..
        } => {
            let why = match cause {
                IrregularityCause::ClockPressed { side } => {
                    format!("at a clock press by {}", side_name(*side))
                }
                IrregularityCause::Quiet { unmatched_for_ms } => {
                    format!("after {unmatched_for_ms} ms unmatched")
                }
            };
            let ambiguous = if *ambiguous { " (ambiguous)" } else { "" };
            format!("ply {next_ply}: irregularity {why}{ambiguous}")
        }
        Output::IrregularityCleared { .. } => format!("ply {next_ply}: irregularity cleared"),
        Output::GhostIgnored { .. } => format!("ply {next_ply}: ghost read ignored"),
        Output::ClockPressWithoutMove { side, .. } => format!(
            "ply {next_ply}: clock pressed by {} without a move",
            side_name(*side)
        ),
        Output::Takeback { undone, .. } => format!(
            "ply {}: taken back {}",
            undone.last().map_or(next_ply, |m| m.ply),
            undone
                .iter()
                .map(|m| uci(m.mv))
                .collect::<Vec<_>>()
                .join(" ")
        ),
        Output::OrientationChanged { orientation, .. } => {
            format!("board orientation: {orientation:?}")
        }
        Output::NewGame { .. } => "new game: start position set up".to_owned(),
        Output::ResultSignalled { result, .. } => {
            format!("result signalled: {}", result_text(*result))
        }
        Output::Touch { .. } | Output::MoveProvisional { .. } | Output::MoveConfirmed { .. } => {
            return None;
        }
    })
}

fn result_text(result: ResultSignal) -> &'static str {
    match result {
        ResultSignal::WhiteWins => "1-0",
        ResultSignal::BlackWins => "0-1",
        ResultSignal::Draw => "1/2-1/2",
    }
}

/// Replays a capture file: decodes it, turns it into observations with a [`DgtSession`] and
/// runs move inference over them.
///
/// A capture has no timestamps, so time is read off the clock: each clock frame advances it by
/// what the running side lost since the previous frame. A clock press is the running side
/// switching between two frames. A board dump is a settled reading (boards send one when asked,
/// at start-up or after a reconnection), so a dump that matches no position is looked into at
/// once as if the quiet period had passed: after a disconnection that reconstructs the moves
/// played meanwhile. The capture must begin at the standard start position.
pub fn replay_capture(bytes: &[u8], config: DgtSessionConfig) -> Result<Replay, ReplayError> {
    let engine_config = Config::default();
    let quiet_ms = engine_config.quiet_ms;
    let mut engine = Inference::with_config(Chess::default(), engine_config);
    let mut session = DgtSession::new(config);
    let mut decoder = Decoder::new();
    let mut replay = Replay {
        game: PgnGame::default(),
        events: Vec::new(),
        notes: Vec::new(),
        diagnostics: Vec::new(),
        observations: Vec::new(),
        serial_number: None,
    };
    let mut seq = 0u64;
    let mut now: i64 = 0;
    let mut last_clock: Option<ClockReading> = None;
    let mut clocks: HashMap<u32, u64> = HashMap::new();
    let mut signal: Option<ResultSignal> = None;
    let mut seen_board = false;

    let mut observe = |engine: &mut Inference,
                       replay: &mut Replay,
                       clocks: &mut HashMap<u32, u64>,
                       signal: &mut Option<ResultSignal>,
                       time_ms: i64,
                       event: Event,
                       press: Option<(Color, ClockReading)>| {
        seq += 1;
        let outputs = engine.observe(Input {
            seq,
            time_ms,
            event,
        });
        let confirmed: Vec<u32> = outputs
            .iter()
            .filter_map(|o| match o {
                Output::MoveConfirmed { mv, .. } => Some(mv.ply),
                _ => None,
            })
            .collect();
        if let Some((presser, reading)) = press {
            // The presser's move was the last confirmed; the opponent's clock has stood still
            // since their own press, so it still shows their time after the move before.
            for (i, ply) in confirmed.iter().rev().take(2).enumerate() {
                let side = if i == 0 { presser } else { !presser };
                let ms = match side {
                    Color::White => reading.white_remaining_ms,
                    Color::Black => reading.black_remaining_ms,
                };
                clocks.insert(*ply, ms);
            }
        }
        // Only worked out when needed: it walks the whole game.
        let mut next_ply = None;
        for output in outputs {
            match &output {
                Output::NewGame { .. } => {
                    clocks.clear();
                    *signal = None;
                }
                Output::ResultSignalled { result, .. } => *signal = Some(*result),
                _ => {}
            }
            if !matches!(
                output,
                Output::Touch { .. }
                    | Output::MoveProvisional { .. }
                    | Output::MoveConfirmed { .. }
            ) {
                let next_ply = *next_ply.get_or_insert_with(|| engine.moves().len() as u32 + 1);
                replay.notes.extend(note(next_ply, &output));
                replay.events.push(ReplayEvent { next_ply, output });
            }
        }
    };

    for message in decoder.feed(bytes) {
        let is_dump = matches!(message, Message::BoardDump(_));
        if let Message::SerialNumber(serial) | Message::LongSerialNumber(serial) = &message {
            replay.serial_number = Some(serial.clone());
        }
        let handled = session.on_message(message);
        replay.diagnostics.extend(handled.diagnostics);
        for kind in handled.kinds {
            match &kind {
                Kind::Placement(placement) => {
                    seen_board = true;
                    if let Ok(board) = Board::from_ascii_board_fen(placement.placement.as_bytes()) {
                        observe(
                            &mut engine,
                            &mut replay,
                            &mut clocks,
                            &mut signal,
                            now,
                            Event::Placement(board),
                            None,
                        );
                    }
                }
                Kind::Clock(reading) => {
                    let mut press = None;
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
                        now += i64::try_from(elapsed).unwrap_or(0);
                        let side = |run: ClockRun| match run {
                            ClockRun::White => Some(Color::White),
                            ClockRun::Black => Some(Color::Black),
                            _ => None,
                        };
                        if let (Some(before), Some(after)) =
                            (side(previous.running()), side(reading.running()))
                            && before != after
                        {
                            press = Some(before);
                        }
                    }
                    last_clock = Some(*reading);
                    if let Some(presser) = press {
                        observe(
                            &mut engine,
                            &mut replay,
                            &mut clocks,
                            &mut signal,
                            now,
                            Event::ClockPressed { side: presser },
                            Some((presser, *reading)),
                        );
                    }
                    observe(
                        &mut engine,
                        &mut replay,
                        &mut clocks,
                        &mut signal,
                        now,
                        Event::Tick,
                        None,
                    );
                }
                _ => {}
            }
            replay.observations.push(TimedKind { at_ms: now, kind });
        }
        if is_dump {
            now += quiet_ms;
            observe(
                &mut engine,
                &mut replay,
                &mut clocks,
                &mut signal,
                now,
                Event::Tick,
                None,
            );
        }
    }
    if !seen_board {
        return Err(ReplayError::NoBoard);
    }

    let pos = engine.position();
    let result = if pos.is_checkmate() {
        match pos.turn() {
            Color::White => "0-1",
            Color::Black => "1-0",
        }
    } else if pos.is_stalemate() {
        "1/2-1/2"
    } else {
        signal.map_or("*", result_text)
    };
    replay.game.moves = engine
        .moves()
        .into_iter()
        .map(|m| PgnMove {
            san: m.san,
            clock_ms: clocks.get(&m.ply).copied(),
            ..PgnMove::default()
        })
        .collect();
    replay.game.result = result.to_owned();
    Ok(replay)
}

/// The game a capture shows, as PGN with `tags` (the Result tag is set from the game), and the
/// notes on revisions, reconstructions, irregularities and the like. White's clock is taken to
/// be the left display and the board to lie normally.
pub fn replay_capture_to_pgn(
    bytes: &[u8],
    tags: &[(String, String)],
) -> Result<(PgnGame, Vec<String>), ReplayError> {
    let replay = replay_capture(bytes, DgtSessionConfig::default())?;
    let mut game = replay.game;
    game.tags = tags.to_vec();
    match game.tags.iter_mut().find(|(name, _)| name == "Result") {
        Some((_, value)) => *value = game.result.clone(),
        None => game.tags.push(("Result".to_owned(), game.result.clone())),
    }
    Ok((game, replay.notes))
}

//! The faithful simulator: a PGN game played on a DGT e-board with a DGT3000 clock, as the raw
//! bytes the board sends over its serial port in update mode.
//!
//! The stream starts as a gateway's start-up sequence is answered (serial number, version, board
//! dump), then carries a field update (0x8e) for every square that changes and a clock frame
//! (0x8d) about once a second of game time and at every press. Players behave like people, driven
//! by a seed: j'adoube, captures in either order, castling king first or rook first, en passant
//! with the captured pawn removed last, sliding pieces seen on the way, ghost reads, knocked-over
//! pieces, an illegal move that is pressed and then taken back, a press without a move, and a
//! board that disconnects for two plies. Each disturbance has a probability in [`Disturbances`]
//! and every one that happened is written to the [`SimRecord`], together with what move
//! inference is expected to report about it ([`Expected`]).
//!
//! Pure: no I/O, no wall clock. Times are milliseconds from the start of the game.

use std::collections::HashSet;
use std::fmt;

use boardcast_dgt::{
    BoardCodes, ClockSide, ClockStatus, ClockTime, DgtSquare, Message, Orientation, PieceCode,
    encode_message,
};
use boardcast_rules::pgn::{PgnGame, parse_san};
use rand::{
    Rng, SeedableRng,
    seq::{IndexedRandom, SliceRandom},
};
use rand_chacha::ChaCha8Rng;
use shakmaty::{
    Board, CastlingMode, Chess, Color, Move, Piece, Position, Role, Square, uci::UciMove,
};

use crate::SimError;

/// Probabilities (0.0–1.0) of each human or sensor disturbance, per ply where it can happen.
#[derive(Debug, Clone, PartialEq)]
pub struct Disturbances {
    /// The player to move adjusts a piece: lifts it and puts it back.
    pub j_adoube: f64,
    /// In a capture, the captured piece is taken off before the capturing piece is lifted.
    pub captured_first: f64,
    /// Castling with the rook first (otherwise the king goes first).
    pub rook_first_castling: f64,
    /// A bishop, rook or queen is seen on a square on its way before it lands.
    pub slide_seen: f64,
    /// A piece is read for one update on an empty square and vanishes again.
    pub ghost: f64,
    /// A piece is knocked over (its square reads empty) and put back.
    pub knocked_over: f64,
    /// An illegal move is made and the clock pressed; it is then taken back, the opponent
    /// presses the clock back and the right move is made.
    pub illegal_move: f64,
    /// The player to move presses the clock without moving; the opponent presses it back.
    pub press_without_move: f64,
    /// The board is disconnected while two plies are played (a pause in the byte stream).
    pub disconnect: f64,
}

impl Disturbances {
    /// A perfect board and perfectly tidy players.
    pub fn none() -> Disturbances {
        Disturbances {
            j_adoube: 0.0,
            captured_first: 0.0,
            rook_first_castling: 0.0,
            slide_seen: 0.0,
            ghost: 0.0,
            knocked_over: 0.0,
            illegal_move: 0.0,
            press_without_move: 0.0,
            disconnect: 0.0,
        }
    }

    /// Everything switched on, at rates that make every kind appear in a long game.
    pub fn all() -> Disturbances {
        Disturbances {
            j_adoube: 0.05,
            captured_first: 0.5,
            rook_first_castling: 0.5,
            slide_seen: 0.3,
            ghost: 0.04,
            knocked_over: 0.02,
            illegal_move: 0.02,
            press_without_move: 0.02,
            disconnect: 0.015,
        }
    }
}

/// How the simulated board, clock and players are set up.
#[derive(Debug, Clone)]
pub struct DgtSimOptions {
    /// Seed of the players' behaviour; the same seed gives the same bytes.
    pub seed: u64,
    pub disturbances: Disturbances,
    /// Both clocks at the start.
    pub initial_clock_ms: u64,
    /// Thinking time per move when the score has no `[%clk]`.
    pub default_think_ms: u64,
    /// The board's 5-digit serial number.
    pub serial_number: String,
    /// How the board lies; `Rotated` sends the start position turned round.
    pub orientation: Orientation,
    /// White's time is on the clock's left display.
    pub white_on_left: bool,
    /// Before this ply's move (or the first one after it that the board sees) the arbiter stops
    /// the clock, turns it round, sets each player's time on the display now in front of them
    /// and starts it again.
    pub clock_turned_before_ply: Option<u32>,
}

impl Default for DgtSimOptions {
    fn default() -> Self {
        DgtSimOptions {
            seed: 1,
            disturbances: Disturbances::all(),
            initial_clock_ms: 2 * 60 * 60 * 1000,
            default_think_ms: 10_000,
            serial_number: "24680".to_owned(),
            orientation: Orientation::Normal,
            white_on_left: true,
            clock_turned_before_ply: None,
        }
    }
}

/// Bytes the board sent at `at_ms` (one message per chunk).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    pub at_ms: u64,
    pub bytes: Vec<u8>,
}

/// A disturbance that happened while a ply was being played.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Disturbance {
    JAdoube {
        square: Square,
    },
    CapturedFirst,
    KingFirstCastling,
    RookFirstCastling,
    EnPassantPawnLast,
    Promotion,
    SlideSeen {
        via: Square,
    },
    Ghost {
        square: Square,
    },
    KnockedOver {
        square: Square,
    },
    /// The illegal move made (and pressed) before the right one, in UCI.
    IllegalMove {
        uci: String,
    },
    PressWithoutMove,
    /// The board was disconnected from `from_ms` to `to_ms`; this ply and the next were played
    /// meanwhile.
    Disconnected {
        from_ms: u64,
        to_ms: u64,
    },
}

/// What move inference should report because of a disturbance. Plies count from 1.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Expected {
    /// The provisional move `from` (UCI) at `ply` is revised to `to`.
    Revised { ply: u32, from: String, to: String },
    /// After a disconnection the board jumped: these moves, from `ply` on, are reconstructed.
    Reconstructed { ply: u32, moves: Vec<String> },
    /// An irregularity when the player of `white`/black pressed the clock, before `ply`.
    IrregularityAtPress { ply: u32, white: bool },
    /// The irregularity before `ply` ended (the illegal move was taken back).
    IrregularityCleared { ply: u32 },
    /// A ghost read before `ply` was ignored.
    GhostIgnored { ply: u32 },
    /// The player to move at `ply` pressed the clock without a move.
    PressWithoutMove { ply: u32, white: bool },
}

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let side = |white: &bool| if *white { "white" } else { "black" };
        match self {
            Expected::Revised { ply, from, to } => {
                write!(f, "ply {ply}: provisional {from} revised to {to}")
            }
            Expected::Reconstructed { ply, moves } => {
                write!(f, "ply {ply}: reconstructed {}", moves.join(" "))
            }
            Expected::IrregularityAtPress { ply, white } => {
                write!(
                    f,
                    "ply {ply}: irregularity at a clock press by {}",
                    side(white)
                )
            }
            Expected::IrregularityCleared { ply } => write!(f, "ply {ply}: irregularity cleared"),
            Expected::GhostIgnored { ply } => write!(f, "ply {ply}: ghost read ignored"),
            Expected::PressWithoutMove { ply, white } => {
                write!(
                    f,
                    "ply {ply}: clock pressed by {} without a move",
                    side(white)
                )
            }
        }
    }
}

/// One ply as it was played.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlyRecord {
    /// 1 for White's first move.
    pub ply: u32,
    pub uci: String,
    pub san: String,
    /// The mover's clock after the press, as the clock showed it.
    pub clock_ms: u64,
    pub disturbances: Vec<Disturbance>,
    pub expected: Vec<Expected>,
}

/// Everything that happened in a simulated game, for tests and for the operator.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SimRecord {
    pub players: String,
    /// The score's result; also signalled with the kings unless the game ended in mate or
    /// stalemate.
    pub result: String,
    /// The last move mated or stalemated (no press, no kings signal).
    pub ended_on_board: bool,
    pub plies: Vec<PlyRecord>,
    /// Pauses of the byte stream (board disconnected), `(from_ms, to_ms)`.
    pub gaps: Vec<(u64, u64)>,
}

impl SimRecord {
    /// Everything inference should report, over all plies.
    pub fn expected(&self) -> Vec<Expected> {
        self.plies
            .iter()
            .flat_map(|p| p.expected.iter().cloned())
            .collect()
    }
}

impl fmt::Display for SimRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "game: {}", self.players)?;
        writeln!(f, "result: {}", self.result)?;
        for (from, to) in &self.gaps {
            writeln!(f, "gap: {from} ms to {to} ms")?;
        }
        for ply in &self.plies {
            write!(
                f,
                "ply {} {} ({}) clock {} ms",
                ply.ply, ply.uci, ply.san, ply.clock_ms
            )?;
            for d in &ply.disturbances {
                write!(f, "; {d:?}")?;
            }
            writeln!(f)?;
            for e in &ply.expected {
                writeln!(f, "  expect {e}")?;
            }
        }
        Ok(())
    }
}

/// A simulated board's output: the timed byte stream and the record of what happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DgtSimulation {
    pub chunks: Vec<Chunk>,
    pub record: SimRecord,
}

impl DgtSimulation {
    /// The capture file: every byte as read from the port, in order, without timing.
    pub fn capture_bytes(&self) -> Vec<u8> {
        self.chunks
            .iter()
            .flat_map(|c| c.bytes.iter().copied())
            .collect()
    }

    /// The timing sidecar for pacing a replay: one line per chunk, `at_ms<TAB>offset<TAB>len`,
    /// where `offset`/`len` locate the chunk's bytes in [`DgtSimulation::capture_bytes`].
    pub fn timing_sidecar(&self) -> String {
        let mut out = String::from("# at_ms\toffset\tlen\n");
        let mut offset = 0usize;
        for chunk in &self.chunks {
            out.push_str(&format!(
                "{}\t{}\t{}\n",
                chunk.at_ms,
                offset,
                chunk.bytes.len()
            ));
            offset += chunk.bytes.len();
        }
        out
    }
}

/// What happens on the board or clock, before it is turned into bytes.
#[derive(Debug, Clone)]
enum Ev {
    /// The board answers the start-up sequence: serial number, version, board dump.
    Hello,
    Set {
        square: Square,
        piece: Option<Piece>,
    },
    /// `by` presses the lever; their clock then shows `shows_ms` (None: the running value).
    Press {
        by: Color,
        shows_ms: Option<u64>,
    },
    StopClock,
    /// The arbiter turns the clock round: stopped, each time set on the other display, started
    /// again for `to_move`.
    TurnClock {
        to_move: Color,
    },
    Disconnect,
    Reconnect,
}

/// Placements move inference may match: every position of the game so far and each of their
/// legal successors. A transient placement outside this set cannot be taken for a move.
struct Known(HashSet<Board>);

impl Known {
    fn add(&mut self, pos: &Chess) {
        self.0.insert(pos.board().clone());
        for m in pos.legal_moves() {
            let mut next = pos.clone();
            next.play_unchecked(m);
            self.0.insert(next.board().clone());
        }
    }

    fn harmless(&self, board: &Board) -> bool {
        !self.0.contains(board) && board_is_not_special(board) && board.kings().count() <= 2
    }
}

/// Not the start position either way round (a new game) and no kings' result signal.
fn board_is_not_special(board: &Board) -> bool {
    let mut rotated = board.clone();
    rotated.rotate_180();
    let start = Board::new();
    if *board == start || rotated == start {
        return false;
    }
    let centre = [Square::D4, Square::E4, Square::D5, Square::E5];
    let kings_in_centre = centre
        .iter()
        .filter(|sq| board.piece_at(**sq).is_some_and(|p| p.role == Role::King))
        .count();
    kings_in_centre < 2
}

fn uci(m: Move) -> String {
    UciMove::from_move(m, CastlingMode::Standard).to_string()
}

/// Steps of the timeline; `at` advances as they are added.
struct Timeline {
    events: Vec<(u64, Ev)>,
    board: Board,
}

impl Timeline {
    fn set(&mut self, at: u64, square: Square, piece: Option<Piece>) {
        match piece {
            Some(p) => self.board.set_piece_at(square, p),
            None => {
                self.board.discard_piece_at(square);
            }
        }
        self.events.push((at, Ev::Set { square, piece }));
    }

    fn push(&mut self, at: u64, ev: Ev) {
        self.events.push((at, ev));
    }
}

/// Plays `game` on a simulated DGT board and clock.
pub fn simulate(game: &PgnGame, options: &DgtSimOptions) -> Result<DgtSimulation, SimError> {
    let players = game.players();
    let start = game.start_position().map_err(|e| SimError::BadGame {
        players: players.clone(),
        reason: e.to_string(),
    })?;
    let mut rng = ChaCha8Rng::seed_from_u64(options.seed);
    let d = &options.disturbances;
    let chance = |p: f64, rng: &mut ChaCha8Rng| p > 0.0 && rng.random::<f64>() < p;

    // Parse the whole game first: a disconnection needs to know the next plies.
    let mut moves = Vec::with_capacity(game.moves.len());
    {
        let mut pos = start.clone();
        for (index, pgn_move) in game.moves.iter().enumerate() {
            let mv = parse_san(&pos, &pgn_move.san).ok_or_else(|| SimError::BadMove {
                players: players.clone(),
                index: index + 1,
                san: pgn_move.san.clone(),
                reason: "not a legal move here".to_owned(),
            })?;
            pos.play_unchecked(mv);
            moves.push(mv);
        }
    }

    let mut line = Timeline {
        events: Vec::new(),
        board: start.board().clone(),
    };
    let mut record = SimRecord {
        players: players.clone(),
        result: game.result.clone(),
        ..SimRecord::default()
    };
    let mut known = Known(HashSet::new());
    let mut pos = start.clone();
    known.add(&pos);
    let mut clocks = [options.initial_clock_ms; 2];
    let mut now: u64 = 0;
    line.push(0, Ev::Hello);
    // Plies still to be played while the board is disconnected, and when it reconnects.
    let mut gap_left = 0usize;
    let mut reconnect_floor: u64 = 0;
    let mut clock_turned = false;

    for (index, (&mv, pgn_move)) in moves.iter().zip(&game.moves).enumerate() {
        let ply = index as u32 + 1;
        let mover = pos.turn();
        let side = usize::from(mover == Color::Black);
        let clock_after = pgn_move.clock_ms.unwrap_or_else(|| {
            clocks[side]
                .saturating_sub(options.default_think_ms)
                .max(1_000)
        });
        let base_think = clocks[side]
            .checked_sub(clock_after)
            .filter(|t| *t >= 1_500)
            .unwrap_or(1_500);
        let mut rec = PlyRecord {
            ply,
            uci: uci(mv),
            san: boardcast_rules::pgn::san_plus(&pos, &mv),
            clock_ms: clock_after,
            disturbances: Vec::new(),
            expected: Vec::new(),
        };
        let mut after = pos.clone();
        after.play_unchecked(mv);
        let ends = after.is_checkmate() || after.is_stalemate();
        let in_gap = gap_left > 0;
        let mut cursor = now.max(reconnect_floor) + 400;

        if !in_gap
            && index + 2 < moves.len()
            && index > 0
            && chance(d.disconnect, &mut rng)
            && let Some(pair) = unique_two_ply(&pos, moves[index], moves[index + 1], &known)
        {
            // The board goes away now; the reconnection comes in the third ply's thinking time.
            let gone_at = now.max(reconnect_floor) + 300;
            gap_left = 2;
            line.push(gone_at, Ev::Disconnect);
            record.gaps.push((gone_at, 0));
            rec.disturbances.push(Disturbance::Disconnected {
                from_ms: gone_at,
                to_ms: 0,
            });
            rec.expected.push(Expected::Reconstructed {
                ply,
                moves: pair.iter().map(|m| uci(*m)).collect(),
            });
        }
        let in_gap = in_gap || gap_left > 0;

        if !in_gap
            && options
                .clock_turned_before_ply
                .is_some_and(|turn_at| ply >= turn_at && !clock_turned)
        {
            line.push(cursor, Ev::TurnClock { to_move: mover });
            cursor += 1_000;
            clock_turned = true;
        }
        if !in_gap {
            // Before the move: things players and sensors do while the player thinks.
            if chance(d.j_adoube, &mut rng) {
                let own: Vec<Square> = pos.board().by_color(mover).into_iter().collect();
                if let Some(&square) = own.choose(&mut rng)
                    && let Some(piece) = pos.board().piece_at(square)
                {
                    line.set(cursor, square, None);
                    line.set(cursor + 400, square, Some(piece));
                    cursor += 1_200;
                    rec.disturbances.push(Disturbance::JAdoube { square });
                }
            }
            if chance(d.knocked_over, &mut rng) {
                let all: Vec<Square> = pos.board().occupied().into_iter().collect();
                if let Some(&square) = all.choose(&mut rng)
                    && let Some(piece) = pos.board().piece_at(square)
                {
                    line.set(cursor, square, None);
                    line.set(cursor + 1_500, square, Some(piece));
                    cursor += 2_300;
                    rec.disturbances.push(Disturbance::KnockedOver { square });
                }
            }
            if chance(d.ghost, &mut rng) {
                let empty: Vec<Square> = (!pos.board().occupied()).into_iter().collect();
                let roles = [
                    Role::Pawn,
                    Role::Knight,
                    Role::Bishop,
                    Role::Rook,
                    Role::Queen,
                ];
                if let (Some(&square), Some(&role)) =
                    (empty.choose(&mut rng), roles.choose(&mut rng))
                {
                    let piece = Piece {
                        color: if rng.random::<bool>() {
                            Color::White
                        } else {
                            Color::Black
                        },
                        role,
                    };
                    let mut seen = pos.board().clone();
                    seen.set_piece_at(square, piece);
                    if known.harmless(&seen) {
                        line.set(cursor, square, Some(piece));
                        line.set(cursor + 250, square, None);
                        cursor += 1_000;
                        rec.disturbances.push(Disturbance::Ghost { square });
                        rec.expected.push(Expected::GhostIgnored { ply });
                    }
                }
            }
            if chance(d.press_without_move, &mut rng) {
                line.push(
                    cursor,
                    Ev::Press {
                        by: mover,
                        shows_ms: None,
                    },
                );
                line.push(
                    cursor + 1_500,
                    Ev::Press {
                        by: !mover,
                        shows_ms: None,
                    },
                );
                cursor += 2_500;
                rec.disturbances.push(Disturbance::PressWithoutMove);
                rec.expected.push(Expected::PressWithoutMove {
                    ply,
                    white: mover == Color::White,
                });
            }
            if chance(d.illegal_move, &mut rng)
                && let Some((from, to, piece)) = illegal_move(&pos, mv, &known, &mut rng)
            {
                line.set(cursor, from, None);
                line.set(cursor + 300, to, Some(piece));
                line.push(
                    cursor + 900,
                    Ev::Press {
                        by: mover,
                        shows_ms: None,
                    },
                );
                line.set(cursor + 2_500, to, None);
                line.set(cursor + 2_800, from, Some(piece));
                line.push(
                    cursor + 3_500,
                    Ev::Press {
                        by: !mover,
                        shows_ms: None,
                    },
                );
                cursor += 4_300;
                rec.disturbances.push(Disturbance::IllegalMove {
                    uci: format!("{from}{to}"),
                });
                rec.expected.push(Expected::IrregularityAtPress {
                    ply,
                    white: mover == Color::White,
                });
                rec.expected.push(Expected::IrregularityCleared { ply });
            }
        }

        // The move itself.
        let hand = hand_steps(&pos, mv, !in_gap, d, &mut rng, &known, &mut rec);
        let hand_len = 250 * hand.len() as u64;
        let hand_start = cursor.max((now + base_think).saturating_sub(hand_len + 300));
        for (i, (square, piece)) in hand.into_iter().enumerate() {
            line.set(hand_start + 250 * i as u64, square, piece);
        }
        let press_at = hand_start + hand_len + 300;
        debug_assert_eq!(&line.board, after.board());
        pos = after;
        known.add(&pos);
        clocks[side] = clock_after;
        now = press_at;
        if !ends {
            line.push(
                press_at,
                Ev::Press {
                    by: mover,
                    shows_ms: Some(clock_after),
                },
            );
        }
        record.plies.push(rec);

        if gap_left > 0 {
            gap_left -= 1;
            if gap_left == 0 {
                let back = now + 1_000;
                line.push(back, Ev::Reconnect);
                if let Some(gap) = record.gaps.last_mut() {
                    gap.1 = back;
                }
                let opened = record
                    .plies
                    .iter_mut()
                    .flat_map(|p| p.disturbances.iter_mut())
                    .filter_map(|d| match d {
                        Disturbance::Disconnected { to_ms, .. } => Some(to_ms),
                        _ => None,
                    })
                    .next_back();
                if let Some(to_ms) = opened {
                    *to_ms = back;
                }
                reconnect_floor = back + 1_000;
            }
        }
        if ends {
            break;
        }
    }

    record.ended_on_board = pos.is_checkmate() || pos.is_stalemate();
    let mut end = now.max(reconnect_floor) + 2_000;
    if !record.ended_on_board
        && let Some(signal) = result_signal(pos.board(), &game.result)
    {
        for (i, (square, piece)) in signal.into_iter().enumerate() {
            line.set(end + 300 * i as u64, square, piece);
        }
        end += 3_000;
    }
    line.push(end, Ev::StopClock);
    let chunks = render(&line.events, start.board(), options, end + 3_000)?;
    Ok(DgtSimulation { chunks, record })
}

/// The two moves, if no other pair of legal moves reaches the same placement (so inference can
/// reconstruct them after the board was away).
fn unique_two_ply(pos: &Chess, first: Move, second: Move, known: &Known) -> Option<[Move; 2]> {
    let mut target = pos.clone();
    target.play_unchecked(first);
    target.play_unchecked(second);
    // A placement the game has had (or was one move from) is matched directly, not searched for:
    // a queen that went e3-c1-e1 is back to where Qe3-e1 would have put it.
    if target.is_checkmate() || target.is_stalemate() || !known.harmless(target.board()) {
        return None;
    }
    // A board that only lost pieces looks like pieces held in the hand, which inference waits
    // for rather than reconstructing (a capture and its recapture on the same square).
    let only_lost = target
        .board()
        .iter()
        .all(|(sq, piece)| pos.board().piece_at(sq) == Some(piece));
    if only_lost {
        return None;
    }
    let mut found = 0;
    for a in pos.legal_moves() {
        let mut p = pos.clone();
        p.play_unchecked(a);
        for b in p.legal_moves() {
            let mut q = p.clone();
            q.play_unchecked(b);
            if q.board() == target.board() {
                found += 1;
            }
        }
    }
    (found == 1).then_some([first, second])
}

/// An illegal move with the piece the right move moves: to an empty square no legal move
/// reaches, giving a placement inference cannot take for any move of the game.
fn illegal_move(
    pos: &Chess,
    mv: Move,
    known: &Known,
    rng: &mut ChaCha8Rng,
) -> Option<(Square, Square, Piece)> {
    let Move::Normal { role, from, .. } = mv else {
        return None;
    };
    if role == Role::King {
        return None;
    }
    let piece = Piece {
        color: pos.turn(),
        role,
    };
    let mut empty: Vec<Square> = (!pos.board().occupied()).into_iter().collect();
    empty.shuffle(rng);
    empty.into_iter().find_map(|to| {
        let mut board = pos.board().clone();
        board.discard_piece_at(from);
        board.set_piece_at(to, piece);
        known.harmless(&board).then_some((from, to, piece))
    })
}

/// The square changes of a move as the hand makes them, with the disturbances that shape them.
fn hand_steps(
    pos: &Chess,
    mv: Move,
    disturb: bool,
    d: &Disturbances,
    rng: &mut ChaCha8Rng,
    known: &Known,
    rec: &mut PlyRecord,
) -> Vec<(Square, Option<Piece>)> {
    let mover = pos.turn();
    let own = |role| Some(Piece { color: mover, role });
    let chance = |p: f64, rng: &mut ChaCha8Rng| disturb && p > 0.0 && rng.random::<f64>() < p;
    match mv {
        Move::Normal {
            role,
            from,
            capture,
            to,
            promotion,
        } => {
            let landed = own(promotion.unwrap_or(role));
            if promotion.is_some() {
                rec.disturbances.push(Disturbance::Promotion);
            }
            if capture.is_some() {
                if chance(d.captured_first, rng) {
                    rec.disturbances.push(Disturbance::CapturedFirst);
                    return vec![(to, None), (from, None), (to, landed)];
                }
                return vec![(from, None), (to, None), (to, landed)];
            }
            let slides = matches!(role, Role::Bishop | Role::Rook | Role::Queen);
            let between: Vec<Square> = shakmaty::attacks::between(from, to).into_iter().collect();
            if slides && !between.is_empty() && chance(d.slide_seen, rng) {
                let via = between[rng.random_range(0..between.len())];
                let short = Move::Normal {
                    role,
                    from,
                    capture: None,
                    to: via,
                    promotion: None,
                };
                let mut seen = pos.board().clone();
                seen.discard_piece_at(from);
                seen.set_piece_at(via, Piece { color: mover, role });
                let legal = pos.is_legal(short);
                // A placement matching some other line of the game would confuse the record.
                if legal || known.harmless(&seen) {
                    rec.disturbances.push(Disturbance::SlideSeen { via });
                    if legal {
                        rec.expected.push(Expected::Revised {
                            ply: rec.ply,
                            from: uci(short),
                            to: uci(mv),
                        });
                    }
                    return vec![(from, None), (via, own(role)), (via, None), (to, own(role))];
                }
            }
            vec![(from, None), (to, landed)]
        }
        Move::EnPassant { from, to } => {
            rec.disturbances.push(Disturbance::EnPassantPawnLast);
            let captured = Square::from_coords(to.file(), from.rank());
            vec![(from, None), (to, own(Role::Pawn)), (captured, None)]
        }
        Move::Castle { king, rook } => {
            let side = mv
                .castling_side()
                .unwrap_or(shakmaty::CastlingSide::KingSide);
            let (king_to, rook_to) = (side.king_to(mover), side.rook_to(mover));
            let rook_move = Move::Normal {
                role: Role::Rook,
                from: rook,
                capture: None,
                to: rook_to,
                promotion: None,
            };
            if chance(d.rook_first_castling, rng) && pos.is_legal(rook_move) {
                rec.disturbances.push(Disturbance::RookFirstCastling);
                rec.expected.push(Expected::Revised {
                    ply: rec.ply,
                    from: uci(rook_move),
                    to: uci(mv),
                });
                return vec![
                    (rook, None),
                    (rook_to, own(Role::Rook)),
                    (king, None),
                    (king_to, own(Role::King)),
                ];
            }
            rec.disturbances.push(Disturbance::KingFirstCastling);
            vec![
                (king, None),
                (king_to, own(Role::King)),
                (rook, None),
                (rook_to, own(Role::Rook)),
            ]
        }
        Move::Put { role, to } => vec![(to, own(role))],
    }
}

/// The players' result signal: pieces on the target centre squares taken off, both kings lifted,
/// then put on the centre (light squares for 1-0, dark for 0-1, one of each for a draw).
fn result_signal(board: &Board, result: &str) -> Option<Vec<(Square, Option<Piece>)>> {
    use Square::{D4, D5, E4, E5};
    let pairs: &[(Square, Square)] = match result {
        "1-0" => &[(E4, D5), (D5, E4)],
        "0-1" => &[(D4, E5), (E5, D4)],
        "1/2-1/2" => &[(E4, E5), (D4, D5), (E4, D4), (D5, E5)],
        _ => return None,
    };
    let white_king = board.king_of(Color::White)?;
    let black_king = board.king_of(Color::Black)?;
    let free = |sq: Square| board.piece_at(sq).is_none() || sq == white_king || sq == black_king;
    let (w_to, b_to) = pairs
        .iter()
        .copied()
        .find(|(w, b)| free(*w) && free(*b))
        .unwrap_or(pairs[0]);
    let mut steps = Vec::new();
    for target in [w_to, b_to] {
        if board
            .piece_at(target)
            .is_some_and(|piece| piece.role != Role::King)
        {
            steps.push((target, None));
        }
    }
    let king = |color| {
        Some(Piece {
            color,
            role: Role::King,
        })
    };
    steps.push((white_king, None));
    steps.push((black_king, None));
    steps.push((w_to, king(Color::White)));
    steps.push((b_to, king(Color::Black)));
    Some(steps)
}

/// The clock as the players left it: each side's time when its clock last stopped or started.
struct ClockState {
    ms: [u64; 2],
    running: Option<Color>,
    since: u64,
    /// The side whose clock runs when it runs (the lever position).
    lever: Color,
}

impl ClockState {
    fn shows(&self, color: Color, at: u64) -> u64 {
        let i = usize::from(color == Color::Black);
        match self.running {
            Some(c) if c == color => self.ms[i].saturating_sub(at.saturating_sub(self.since)),
            _ => self.ms[i],
        }
    }

    /// Freezes the running side's time at `at`.
    fn settle(&mut self, at: u64) {
        for color in Color::ALL {
            let value = self.shows(color, at);
            self.ms[usize::from(color == Color::Black)] = value;
        }
        self.since = at;
    }

    fn frame(&self, at: u64, white_on_left: bool) -> Message {
        let side = |ms: u64| {
            let secs = (ms / 1000).min(9 * 3600 + 59 * 60 + 59);
            ClockSide {
                hours: (secs / 3600) as u8,
                minutes: ((secs / 60) % 60) as u8,
                seconds: (secs % 60) as u8,
                flag_fallen: false,
                increment: false,
                flag_shown: ms == 0,
            }
        };
        let (white, black) = (
            side(self.shows(Color::White, at)),
            side(self.shows(Color::Black, at)),
        );
        let (left, right) = if white_on_left {
            (white, black)
        } else {
            (black, white)
        };
        let left_runs = (self.lever == Color::White) == white_on_left;
        // Bits 3/4 (side to move) are unreliable on real clocks: the simulator leaves them 0.
        let status = u8::from(self.running.is_some()) | u8::from(left_runs) << 1;
        Message::Clock(ClockTime {
            right,
            left,
            status: ClockStatus(status),
        })
    }
}

/// Turns the timeline into bytes: field updates for square changes, clock frames every second
/// and at every press, nothing while disconnected.
fn render(
    events: &[(u64, Ev)],
    start: &Board,
    options: &DgtSimOptions,
    end: u64,
) -> Result<Vec<Chunk>, SimError> {
    let bad = |e: boardcast_dgt::EncodeError| SimError::BadGame {
        players: String::new(),
        reason: format!("encoding a DGT message: {e}"),
    };
    let orientation = options.orientation;
    let mut codes = BoardCodes::default();
    for (square, piece) in start.iter() {
        codes.set(
            DgtSquare::from_square(square, orientation),
            PieceCode::Piece(piece),
        );
    }
    let mut clock = ClockState {
        ms: [options.initial_clock_ms; 2],
        running: Some(Color::White),
        since: 0,
        lever: Color::White,
    };
    let mut chunks = Vec::new();
    let mut connected = true;
    let mut white_on_left = options.white_on_left;
    let mut next_tick: u64 = 1_000;
    let emit = |chunks: &mut Vec<Chunk>, at: u64, message: &Message| -> Result<(), SimError> {
        chunks.push(Chunk {
            at_ms: at,
            bytes: encode_message(message).map_err(bad)?,
        });
        Ok(())
    };
    let hello = |codes: &BoardCodes| -> Vec<Message> {
        vec![
            Message::SerialNumber(options.serial_number.clone()),
            Message::Version { major: 1, minor: 7 },
            Message::BoardDump(*codes),
        ]
    };
    let mut sorted: Vec<&(u64, Ev)> = events.iter().collect();
    sorted.sort_by_key(|(at, _)| *at);
    for (at, ev) in sorted.into_iter().map(|(a, e)| (*a, e)) {
        while next_tick <= at && next_tick <= end {
            if connected {
                emit(
                    &mut chunks,
                    next_tick,
                    &clock.frame(next_tick, white_on_left),
                )?;
            }
            next_tick += 1_000;
        }
        match ev {
            Ev::Hello => {
                for message in hello(&codes) {
                    emit(&mut chunks, at, &message)?;
                }
                emit(&mut chunks, at, &clock.frame(at, white_on_left))?;
            }
            Ev::Set { square, piece } => {
                let dgt = DgtSquare::from_square(*square, orientation);
                let code = piece.map_or(PieceCode::Empty, PieceCode::Piece);
                codes.set(dgt, code);
                if connected {
                    emit(
                        &mut chunks,
                        at,
                        &Message::FieldUpdate {
                            square: dgt,
                            piece: code,
                        },
                    )?;
                }
            }
            Ev::Press { by, shows_ms } => {
                clock.settle(at);
                if let Some(ms) = shows_ms {
                    clock.ms[usize::from(*by == Color::Black)] = *ms;
                }
                clock.running = Some(!*by);
                clock.lever = !*by;
                if connected {
                    emit(&mut chunks, at, &clock.frame(at, white_on_left))?;
                }
            }
            Ev::StopClock => {
                clock.settle(at);
                clock.running = None;
                if connected {
                    emit(&mut chunks, at, &clock.frame(at, white_on_left))?;
                }
            }
            Ev::TurnClock { to_move } => {
                // Stopped, shown with the times on the other displays, started again; the
                // minutes this takes in a hall are on nobody's clock, so they are left out.
                clock.settle(at);
                clock.running = None;
                let mut frames = vec![clock.frame(at, white_on_left)];
                white_on_left = !white_on_left;
                frames.push(clock.frame(at, white_on_left));
                clock.running = Some(*to_move);
                clock.lever = *to_move;
                frames.push(clock.frame(at, white_on_left));
                if connected {
                    for frame in &frames {
                        emit(&mut chunks, at, frame)?;
                    }
                }
            }
            Ev::Disconnect => connected = false,
            Ev::Reconnect => {
                connected = true;
                for message in hello(&codes) {
                    emit(&mut chunks, at, &message)?;
                }
                emit(&mut chunks, at, &clock.frame(at, white_on_left))?;
            }
        }
    }
    while next_tick <= end {
        if connected {
            emit(
                &mut chunks,
                next_tick,
                &clock.frame(next_tick, white_on_left),
            )?;
        }
        next_tick += 1_000;
    }
    Ok(chunks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use boardcast_dgt::Decoder;
    use boardcast_rules::pgn::read_games;

    fn london() -> Vec<PgnGame> {
        read_games(include_str!("../../../data/london-classic-2016.pgn")).expect("reads")
    }

    #[test]
    fn same_seed_same_bytes_other_seed_other_bytes() {
        let game = &london()[2];
        let options = DgtSimOptions::default();
        let a = simulate(game, &options).expect("simulates");
        let b = simulate(game, &options).expect("simulates");
        assert_eq!(a, b);
        let c = simulate(game, &DgtSimOptions { seed: 2, ..options }).expect("simulates");
        assert_ne!(a.capture_bytes(), c.capture_bytes());
    }

    #[test]
    fn stream_decodes_to_startup_answers_updates_and_clock_every_second() {
        let game = &london()[0];
        let options = DgtSimOptions {
            disturbances: Disturbances::none(),
            ..DgtSimOptions::default()
        };
        let sim = simulate(game, &options).expect("simulates");
        assert!(sim.record.expected().is_empty());
        assert!(sim.record.gaps.is_empty());
        let messages = Decoder::new().feed(&sim.capture_bytes());
        assert!(matches!(
            &messages[..3],
            [
                Message::SerialNumber(_),
                Message::Version { .. },
                Message::BoardDump(_)
            ]
        ));
        let updates = messages
            .iter()
            .filter(|m| matches!(m, Message::FieldUpdate { .. }))
            .count();
        // At least a lift and a place per move, plus the kings' result signal.
        assert!(updates >= 2 * game.moves.len() + 4, "{updates}");
        assert!(
            messages
                .iter()
                .all(|m| !matches!(m, Message::Garbage { .. } | Message::Malformed { .. }))
        );
        // Clock frames at least once a second of game time.
        let clock_times: Vec<u64> = sim
            .chunks
            .iter()
            .filter(|c| c.bytes[0] == boardcast_dgt::id::BWTIME)
            .map(|c| c.at_ms)
            .collect();
        assert!(clock_times.windows(2).all(|w| w[1] - w[0] <= 1_000));
        assert!(sim.chunks.windows(2).all(|w| w[0].at_ms <= w[1].at_ms));
        let sidecar = sim.timing_sidecar();
        assert_eq!(sidecar.lines().count(), sim.chunks.len() + 1);
    }

    #[test]
    fn a_disconnection_is_a_pause_in_the_bytes() {
        let games = london();
        let options = DgtSimOptions {
            disturbances: Disturbances {
                disconnect: 0.2,
                ..Disturbances::none()
            },
            ..DgtSimOptions::default()
        };
        let sim = simulate(&games[4], &options).expect("simulates");
        assert!(!sim.record.gaps.is_empty());
        for &(from, to) in &sim.record.gaps {
            assert!(to > from);
            assert!(!sim.chunks.iter().any(|c| c.at_ms > from && c.at_ms < to));
            // The board answers the start-up sequence again when it is back.
            let back = sim
                .chunks
                .iter()
                .find(|c| c.at_ms >= to)
                .expect("bytes after the gap");
            assert_eq!(back.bytes[0], boardcast_dgt::id::SERIAL_NUMBER);
        }
    }
}

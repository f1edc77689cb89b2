//! Inputs, outputs and configuration of the inference engine.

use boardcast_rules::result_signal::ResultSignal;
use shakmaty::{Board, Color, Move, Piece, Square};

/// Sequence number of an input observation (for example the observation's `device_seq`).
pub type Seq = u64;

/// One observation fed to [`crate::Inference::observe`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    /// Identifies the observation; outputs name the inputs they rest on by this number.
    pub seq: Seq,
    /// When it was observed, in milliseconds on any monotonic scale (time enters as data).
    pub time_ms: i64,
    pub event: Event,
}

/// What was observed. Squares and placements are as the sensors report them, read as if the
/// board were set up normally; the engine applies the orientation it has detected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A piece left a square.
    Lifted { square: Square },
    /// A piece was put on a square (replacing whatever the sensors saw there).
    Placed { square: Square, piece: Piece },
    /// The whole board. Sources that report both single changes and whole boards may send both:
    /// an unchanged board is ignored.
    Placement(Board),
    /// The player of `side` pressed the clock, completing their move.
    ClockPressed { side: Color },
    /// Time has passed without board changes; lets the engine report placements that stayed
    /// unmatched for the quiet period.
    Tick,
}

/// How the board lies relative to the players.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Orientation {
    /// As reported: the sensors' a1 is a1.
    #[default]
    Normal,
    /// Turned round: the sensors' a1 is h8.
    Rotated,
}

/// A move in the inferred game.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PlyMove {
    /// 1 for the first move after the engine's start position, 2 for the reply, ...
    pub ply: u32,
    pub mv: Move,
    /// Standard algebraic notation with check/mate suffix.
    pub san: String,
}

/// Why a placement is reported as an irregularity.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum IrregularityCause {
    /// The clock was pressed while the board matched no legal continuation.
    ClockPressed { side: Color },
    /// The board stayed unmatched for the quiet period.
    Quiet { unmatched_for_ms: i64 },
}

/// What the engine concluded. Every item names the input sequence numbers it rests on (`basis`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// A piece was lifted from `from` and ended on `to` (`None`: removed from the board).
    Touch {
        piece: Piece,
        from: Square,
        to: Option<Square>,
        basis: Vec<Seq>,
    },
    /// A move seen on the board, not yet confirmed by the clock; it may still be revised.
    MoveProvisional { mv: PlyMove, basis: Vec<Seq> },
    /// The provisional move at the same ply was replaced by another (a sliding piece that went
    /// further, rook-first castling completed).
    ProvisionalRevised {
        from_move: PlyMove,
        to_move: PlyMove,
        basis: Vec<Seq>,
    },
    /// The clock press confirmed this move.
    MoveConfirmed { mv: PlyMove, basis: Vec<Seq> },
    /// The board returned to an earlier position: these moves, last first, are undone.
    /// `confirmed` counts how many of them had been confirmed by the clock.
    Takeback {
        undone: Vec<PlyMove>,
        confirmed: usize,
        basis: Vec<Seq>,
    },
    /// The board jumped several plies; these moves are the unique legal sequence that explains
    /// the placement. They are provisional like any board-inferred move.
    Reconstructed {
        moves: Vec<PlyMove>,
        basis: Vec<Seq>,
    },
    /// The board matches no legal continuation (nor an earlier position).
    Irregularity {
        placement: Board,
        cause: IrregularityCause,
        /// Several move sequences reach the placement, so none was chosen.
        ambiguous: bool,
        basis: Vec<Seq>,
    },
    /// A reported irregularity ended: the board matches the game again.
    IrregularityCleared { basis: Vec<Seq> },
    /// A placement seen for a single update that vanished again was ignored.
    GhostIgnored { placement: Board, basis: Vec<Seq> },
    /// The clock was pressed by the side to move, without a move on the board.
    ClockPressWithoutMove { side: Color, basis: Vec<Seq> },
    /// The start position (or, with `Config::turned_round_anywhere`, the game's position) was
    /// seen turned round; the board is read in `orientation` from now.
    OrientationChanged {
        orientation: Orientation,
        basis: Vec<Seq>,
    },
    /// The start position was set up on a board that had a game: a new game begins.
    NewGame {
        orientation: Orientation,
        basis: Vec<Seq>,
    },
    /// Both kings were put on the centre squares: a result, never moves.
    ResultSignalled {
        result: ResultSignal,
        basis: Vec<Seq>,
    },
}

/// Tuning of the engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// How long a placement may stay unmatched before it is reported at a [`Event::Tick`].
    pub quiet_ms: i64,
    /// The deepest jump (in plies) reconstructed when the board matches nothing.
    pub max_reconstruct_plies: u32,
    /// Positions examined per reconstruction at most, to keep a pathological board cheap.
    pub reconstruct_budget: usize,
    /// A clock press made while the board matches nothing waits this long for the board to
    /// catch up (a scan takes 200–250 ms, so the last field update may arrive after the press)
    /// before it counts as an irregularity. 0 decides at the press.
    pub press_grace_ms: i64,
    /// The start placement means a new game once the game has at least this many plies (fewer
    /// is read as taking the moves back).
    pub new_game_min_plies: u32,
    /// After a placement took back confirmed moves, the positions that follow them stay
    /// matchable: confirmed moves stand until an arbiter decides otherwise, so a board that
    /// shows the game going on from them (the placement was a misread or a stray hand) is back
    /// on the game. `false` reads boards as versions before this setting did.
    pub confirmed_line_stays_reachable: bool,
    /// The game's position seen turned round at any point of the game (not only the start
    /// position) turns the reading round: a board turned round, or a spare set up so when the
    /// game moved to it. `false` reads boards as versions before this setting did.
    pub turned_round_anywhere: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            quiet_ms: 5_000,
            max_reconstruct_plies: 4,
            reconstruct_budget: 200_000,
            new_game_min_plies: 2,
            press_grace_ms: 0,
            confirmed_line_stays_reachable: true,
            turned_round_anywhere: true,
        }
    }
}

/// Errors of the engine's API (never of observations: bad observations become outputs).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InferenceError {
    #[error("move {index} ({uci}) is illegal in the position it is played from")]
    IllegalMove { index: usize, uci: String },
}

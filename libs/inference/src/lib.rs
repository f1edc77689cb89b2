//! Move inference for e-boards: turns the placements a board reports (and the lifts and
//! places between them), plus clock presses and the passing of time, into moves.
//!
//! The engine keeps a graph of positions keyed by **piece placement only**, seeded with the
//! current position and its legal successors. Each board update looks the placement up: a hit
//! makes that node current (the newest node with a placement wins); a miss is remembered as
//! pending (a lifted piece, a half-finished move, a ghost) and only reported as an
//! irregularity when the clock is pressed or the board stays quiet. The game is the parent
//! chain of the current node, so a sliding rook seen on d1 and then f1 is first a provisional
//! Rd1 and then explicitly revised to Rf1.
//!
//! Pure: no I/O, no clock; time enters as data in each [`Input`].
//!
//! ```
//! use boardcast_inference::{Event, Inference, Input, Output};
//! use shakmaty::{Chess, Color, Position, Square, Board};
//!
//! let mut engine = Inference::new(Chess::default());
//! let mut board = Board::new();
//! let pawn = board.remove_piece_at(Square::E2).unwrap();
//! board.set_piece_at(Square::E4, pawn);
//! let out = engine.observe(Input { seq: 1, time_ms: 0, event: Event::Placement(board) });
//! assert!(matches!(&out[..], [.., Output::MoveProvisional { mv, .. }] if mv.san == "e4"));
//! let out = engine.observe(Input {
//!     seq: 2, time_ms: 500, event: Event::ClockPressed { side: Color::White },
//! });
//! assert!(matches!(&out[..], [Output::MoveConfirmed { mv, .. }] if mv.san == "e4"));
//! ```

mod engine;
mod search;
mod types;

pub use boardcast_rules::result_signal::{ResultSignal, kings_signal};
pub use engine::{Inference, KEPT_PLIES};
pub use search::{Reconstruction, reconstruct};
pub use types::{
    Config, Event, InferenceError, Input, IrregularityCause, Orientation, Output, PlyMove, Seq,
};

//! The result signal of electronic boards: both kings put on the centre squares.
//!
//! DGT boards (and the broadcasts recorded from them) take a result from the position: the
//! players put both kings on d4, e4, d5 or e5, a position no game can reach, as those squares are
//! mutually adjacent. Broadcast files often record the signal as king moves after the last move.

use serde::Serialize;
use shakmaty::{Board, Color, Square};

/// The result signalled by placing both kings on the centre squares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultSignal {
    /// Both kings on light centre squares (e4, d5).
    WhiteWins,
    /// Both kings on dark centre squares (d4, e5).
    BlackWins,
    /// One king on a light and one on a dark centre square.
    Draw,
}

impl ResultSignal {
    /// The result as PGN writes it.
    pub fn pgn_result(self) -> &'static str {
        match self {
            ResultSignal::WhiteWins => "1-0",
            ResultSignal::BlackWins => "0-1",
            ResultSignal::Draw => "1/2-1/2",
        }
    }
}

/// The centre squares the kings signal a result on.
pub const CENTRE: [Square; 4] = [Square::D4, Square::E4, Square::D5, Square::E5];

/// Both kings on centre squares: the result they signal.
pub fn kings_signal(board: &Board) -> Option<ResultSignal> {
    let king = |color: Color| {
        let kings = board.kings() & board.by_color(color);
        match kings.count() {
            1 => kings.first().filter(|sq| CENTRE.contains(sq)),
            _ => None,
        }
    };
    let (white, black) = (king(Color::White)?, king(Color::Black)?);
    Some(match (white.is_light(), black.is_light()) {
        (true, true) => ResultSignal::WhiteWins,
        (false, false) => ResultSignal::BlackWins,
        _ => ResultSignal::Draw,
    })
}

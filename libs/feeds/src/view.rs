//! A shown game as JSON for live pages, monitors and the NATS feed subjects.

use boardcast_game::{display::DisplayGame, events::Player};
use boardcast_rules::notation::{Language, write_national};
use shakmaty::{CastlingMode, Chess, Position as _, fen::Fen, uci::UciMove};

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PlayerView {
    pub name: String,
    pub title: String,
    pub rating: u32,
    pub fide_id: String,
    pub federation: String,
    /// In a team event; absent otherwise.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub team: String,
}

/// The clocks as last known, and which one is running since then.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct ClockView {
    pub white_ms: u64,
    pub black_ms: u64,
    /// When these times were read or set (ms since the epoch): a page counts the running clock
    /// down from there, on the delayed time line.
    pub as_of_unix_ms: i64,
    /// "white" or "black"; absent when no clock runs (game over, not started, or stopped).
    pub running: Option<&'static str>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct GameView {
    pub game_id: String,
    /// The `game_seq` of the last log event that changed this view: the same on every instance
    /// of the service; a delta names the version it applies to.
    pub version: u64,
    pub tournament_id: String,
    pub event: String,
    pub round: u32,
    pub board_number: u32,
    pub white: PlayerView,
    pub black: PlayerView,
    /// The position after the completed moves.
    pub fen: String,
    /// Completed moves in SAN.
    pub moves: Vec<String>,
    /// Completed moves in UCI (for highlighting the last one).
    pub uci: Vec<String>,
    /// The mover's clock after each completed move, when read.
    pub move_clocks: Vec<Option<u64>>,
    /// Plies of completed moves that rest on the board alone (no press, arbiter or scoresheet).
    pub unconfirmed_plies: Vec<u32>,
    /// Moves the board shows after the completed ones, not yet confirmed by a clock press.
    pub provisional: Vec<String>,
    pub clocks: Option<ClockView>,
    /// `*` while the game goes on.
    pub result: String,
    /// How the game ended, in words.
    pub termination: Option<String>,
    /// False while the board is not responding: moves are not being seen.
    pub board_responding: bool,
    pub battery_low: bool,
}

fn player(p: &Option<Player>) -> PlayerView {
    let p = p.clone().unwrap_or_default();
    PlayerView {
        name: p.name,
        title: p.title,
        rating: p.rating,
        fide_id: p.fide_id,
        federation: p.federation,
        team: p.team,
    }
}

impl GameView {
    pub fn of(game: &DisplayGame, version: u64) -> GameView {
        let info = &game.info;
        GameView {
            game_id: game.game_id.clone(),
            version,
            tournament_id: info.tournament_id.clone(),
            event: info.event_name.clone(),
            round: info.round,
            board_number: info.board_number,
            white: player(&info.white),
            black: player(&info.black),
            fen: game.fen(),
            moves: game.moves.iter().map(|m| m.san.clone()).collect(),
            uci: game.moves.iter().map(|m| m.uci.clone()).collect(),
            move_clocks: game.moves.iter().map(|m| m.clock_ms).collect(),
            unconfirmed_plies: game
                .moves
                .iter()
                .filter(|m| !m.confirmed)
                .map(|m| m.ply)
                .collect(),
            provisional: game.provisional.iter().map(|p| p.san.clone()).collect(),
            clocks: game.clocks.map(|c| ClockView {
                white_ms: c.white_ms,
                black_ms: c.black_ms,
                as_of_unix_ms: c.as_of_unix_ms,
                running: game.clock_runs().then(|| {
                    if game.white_to_move() {
                        "white"
                    } else {
                        "black"
                    }
                }),
            }),
            result: game.result_token().to_owned(),
            termination: game.result.as_ref().map(|e| e.termination.clone()),
            board_responding: game.board.responding,
            battery_low: game.board.battery_low,
        }
    }
}

/// The completed moves, and the provisional ones (those the board shows that no press confirmed
/// yet), in the piece letters of `language` (e.g. German `Sf3`), replayed from the game's start
/// with the rules library; moves that do not replay keep their SAN.
pub fn national_line(game: &DisplayGame, language: Language) -> (Vec<String>, Vec<String>) {
    let mut position = if game.info.start_fen.is_empty() {
        Some(Chess::default())
    } else {
        game.info
            .start_fen
            .parse::<Fen>()
            .ok()
            .and_then(|f| f.into_position(CastlingMode::Standard).ok())
    };
    let mut write = |uci: &str, san: &str| {
        let played = position.as_ref().and_then(|pos| {
            let mv = uci.parse::<UciMove>().ok()?.to_move(pos).ok()?;
            Some((write_national(pos, mv, language), mv))
        });
        match played {
            Some((text, mv)) => {
                if let Some(pos) = position.as_mut() {
                    pos.play_unchecked(mv);
                }
                text
            }
            None => {
                // Once a move does not replay, the rest cannot be trusted to either.
                position = None;
                san.to_owned()
            }
        }
    };
    let moves = game.moves.iter().map(|m| write(&m.uci, &m.san)).collect();
    let provisional = game
        .provisional
        .iter()
        .map(|p| write(&p.uci, &p.san))
        .collect();
    (moves, provisional)
}

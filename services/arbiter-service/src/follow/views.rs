//! What the dashboard is shown of the folded games: boards, rounds, alerts, moves, positions,
//! each a plain serialisable view built from a game as folded.

use std::sync::Arc;

use boardcast_game::Game;
use boardcast_game::alerts::{Alert, AlertStatus};
use boardcast_game::timeline::{self, ClockView, TimelineEntry};
use serde::Serialize;

/// Orders alert changes across all games: the JetStream sequence of the log entry that made the
/// change, then the game and the alert (one entry can change several alerts of its game).
pub type AlertKey = (u64, String, u64);

/// One alert as the pages show it.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct AlertView {
    /// `<game_id>/<raised_at>`: the alert's name.
    pub id: String,
    /// `<game_id>/<raised_at>/<version>`: the SSE event id of this state of the alert.
    pub event_id: String,
    pub game_id: String,
    pub tournament_id: String,
    pub round: u32,
    pub board_number: u32,
    pub white: String,
    pub black: String,
    /// The log entry that raised it.
    pub raised_at: u64,
    /// The log entry that last changed it.
    pub version: u64,
    pub kind: &'static str,
    pub kind_label: &'static str,
    pub ply: u32,
    pub device_time_unix_ms: i64,
    pub recorded_unix_ms: i64,
    pub article: String,
    pub summary: String,
    pub rests_on: Vec<u64>,
    /// `new`, `acknowledged` or `resolved`.
    pub status: &'static str,
    /// Who acknowledged or resolved it (empty when the log itself resolved it).
    pub status_by: String,
    pub status_at_unix_ms: i64,
    pub status_game_seq: u64,
    pub status_how: String,
    #[serde(skip)]
    pub stream_seq: u64,
}

impl AlertView {
    pub fn key(&self) -> AlertKey {
        (self.stream_seq, self.game_id.clone(), self.raised_at)
    }

    pub fn is_open(&self) -> bool {
        self.status != "resolved"
    }
}

/// A game's log failed its checks: entries from `at_game_seq` on are not folded.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Damage {
    pub at_game_seq: u64,
    pub reason: String,
    /// Entries after the damaged one that arrived and could not be folded.
    pub entries_not_shown: u64,
    /// "log damaged at entry N: …", as the page shows it.
    pub message: String,
}

/// A board of a round at a glance.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct BoardView {
    pub game_id: String,
    pub tournament_id: String,
    pub event_name: String,
    pub round: u32,
    pub board_number: u32,
    pub board_id: String,
    pub white: String,
    pub black: String,
    pub fen: String,
    /// `white` or `black`.
    pub to_move: &'static str,
    pub completed_plies: usize,
    /// The last completed move, e.g. "12. Nf3".
    pub last_move: String,
    /// Moves seen on the board but not completed by a press.
    pub provisional: Vec<String>,
    pub clocks: ClockView,
    /// `playing`, `finished`, `offline` (the board is not being seen) or `damaged`.
    pub state: &'static str,
    /// PGN result token.
    pub result: &'static str,
    pub termination: String,
    /// The board as its gateway last reported it.
    pub device: &'static str,
    pub battery_percent: Option<u32>,
    pub open_alerts: usize,
    pub new_alerts: usize,
    pub last_game_seq: u64,
    pub damage: Option<Damage>,
}

/// A round of a tournament, for the index.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct RoundView {
    pub tournament_id: String,
    pub event_name: String,
    pub round: u32,
    pub games: usize,
    pub finished: usize,
    pub offline: usize,
    pub open_alerts: usize,
    pub new_alerts: usize,
}

/// A completed move with what it rests on.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct MoveView {
    pub ply: u32,
    pub san: String,
    pub uci: String,
    pub source: &'static str,
    pub game_seq: u64,
    pub device_time_unix_ms: i64,
    pub white_ms: Option<u64>,
    pub black_ms: Option<u64>,
}

/// An illegal move whose proposed penalty no arbiter has decided yet.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PendingPenalty {
    pub game_seq: u64,
    pub ply: u32,
    pub offender: String,
    pub kind: String,
    pub proposed_penalty: String,
    pub article: String,
}

/// Everything the game page shows.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct GameDetail {
    pub board: BoardView,
    pub moves: Vec<MoveView>,
    pub alerts: Vec<AlertView>,
    pub timeline: Vec<TimelineEntry>,
    pub pending_penalties: Vec<PendingPenalty>,
    pub missing_observations: Vec<String>,
    pub setup_mismatches: Vec<String>,
    /// Records on the game's subject that no trusted key signed, refused (each in words): someone
    /// other than the game service wrote to the log.
    pub refused_records: Vec<String>,
}

/// The game as it stood after one log entry.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PositionView {
    pub game_id: String,
    pub game_seq: u64,
    pub fen: String,
    pub to_move: &'static str,
    pub completed_plies: usize,
    pub moves: Vec<MoveView>,
    pub provisional: Vec<String>,
    pub clocks: ClockView,
    pub result: &'static str,
    /// The entry itself in words.
    pub words: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AtError {
    #[error("no game {0:?} in the log")]
    UnknownGame(String),
    #[error("game {game_id:?} has log entries 1 to {last}; there is no entry {asked}")]
    OutOfRange {
        game_id: String,
        asked: u64,
        last: u64,
    },
    #[error("the log of game {game_id:?} cannot be folded to entry {asked}: {reason}")]
    Fold {
        game_id: String,
        asked: u64,
        reason: String,
    },
}

/// What the follower is doing, for /healthz and the pages.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
#[serde(tag = "state", content = "detail", rename_all = "snake_case")]
pub enum FollowStatus {
    Connecting,
    /// The stream does not exist yet (or cannot be read): the game service creates it.
    WaitingForStream(String),
    Following,
}

/// A change the live pages are told about.
#[derive(Clone, Debug)]
pub enum Change {
    /// An alert raised or changed.
    Alert(Arc<AlertView>),
    /// A game's log grew (its board summary and timeline changed).
    Game { game_id: Arc<str>, stream_seq: u64 },
}

pub(super) fn player_name(p: &Option<boardcast_game::events::Player>) -> String {
    p.as_ref().map(|p| p.name.clone()).unwrap_or_default()
}

pub(super) fn side_to_move(game: &Game) -> &'static str {
    if game.turn().is_white() {
        "white"
    } else {
        "black"
    }
}

/// The moves the board shows that no press confirmed yet, numbered (`12. Nf3`, `12... Nc6`).
pub(super) fn provisional_words(game: &Game) -> Vec<String> {
    game.provisional_line()
        .iter()
        .map(|p| format!("{} {}", timeline::move_number(p.ply), p.san))
        .collect()
}

pub(super) fn move_views(game: &Game) -> Vec<MoveView> {
    game.completed_moves()
        .iter()
        .map(|m| MoveView {
            ply: m.event.ply,
            san: m.event.san.clone(),
            uci: m.event.uci.clone(),
            source: timeline::source_name(m.source),
            game_seq: m.game_seq,
            device_time_unix_ms: m.device_time_unix_ms,
            white_ms: m.event.white_remaining_ms,
            black_ms: m.event.black_remaining_ms,
        })
        .collect()
}

pub(super) fn alert_view(game: &Game, alert: &Alert, version: u64, stream_seq: u64) -> AlertView {
    let info = game.info();
    let (status_by, status_at_unix_ms, status_game_seq, status_how) = match &alert.status {
        AlertStatus::New => (String::new(), 0, 0, String::new()),
        AlertStatus::Acknowledged {
            by,
            at_unix_ms,
            game_seq,
        } => (by.clone(), *at_unix_ms, *game_seq, String::new()),
        AlertStatus::Resolved {
            by,
            at_unix_ms,
            game_seq,
            how,
        } => (by.clone(), *at_unix_ms, *game_seq, how.clone()),
    };
    AlertView {
        id: format!("{}/{}", game.game_id(), alert.raised_at),
        event_id: format!("{}/{}/{}", game.game_id(), alert.raised_at, version),
        game_id: game.game_id().to_owned(),
        tournament_id: info.tournament_id.clone(),
        round: info.round,
        board_number: info.board_number,
        white: player_name(&info.white),
        black: player_name(&info.black),
        raised_at: alert.raised_at,
        version,
        kind: alert.kind.name(),
        kind_label: timeline::alert_kind_label(alert.kind),
        ply: alert.ply,
        device_time_unix_ms: alert.device_time_unix_ms,
        recorded_unix_ms: alert.recorded_unix_ms,
        article: alert.article.clone(),
        summary: alert.summary.clone(),
        rests_on: alert.rests_on.clone(),
        status: timeline::alert_status_name(&alert.status),
        status_by,
        status_at_unix_ms,
        status_game_seq,
        status_how,
        stream_seq,
    }
}

//! `boardcast simulate --incidents`: what goes wrong on which board, and the record of what was
//! injected with the alerts each incident is expected to raise.

use std::{path::PathBuf, str::FromStr};

use boardcast_sim::Incident;

use super::BoardPlan;

/// Incidents injected into the published observations, and the record of what was injected.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct IncidentArgs {
    /// Incidents to inject into the boards' games: board=N:KIND@ply=P[:NAME=VALUE], repeated or
    /// comma-separated.
    ///
    /// N is the board (1 to --boards), P the ply before whose move the incident happens (1 is
    /// White's first move, 2 Black's). KIND is one of:
    /// press-without-move (the player to move presses without moving, the opponent presses
    /// back, the move follows);
    /// irregular-placement[:for=DURATION] (the piece the move moves is put on a square it
    /// cannot reach and left there, default 8s);
    /// touched-piece (another piece of the player to move is lifted and put back before a
    /// move that captures nothing: a possible touch-move breach);
    /// offline[:for=DURATION] (the board disconnected, then back, default 20s);
    /// battery-low[:percent=P] (default 15);
    /// lost-observations[:count=N] (the last N observations of the move's hand are never
    /// published, default 2);
    /// flag-fall (the player to move runs out of time; the game ends);
    /// threefold-claim (the players repeat until the player to move can claim a draw).
    /// DURATION is 8000, 8000ms or 8s.
    ///
    /// Example: --incidents board=2:press-without-move@ply=7,board=3:irregular-placement@ply=9
    /// --incidents board=1:offline@ply=5:for=30s
    #[arg(long = "incidents", value_name = "SPEC", value_delimiter = ',')]
    pub specs: Vec<BoardIncident>,
    /// Write to FILE (JSON), before playing, each board's game id and the incidents injected into
    /// it with the alerts each is expected to raise.
    #[arg(long, value_name = "FILE")]
    pub incident_record: Option<PathBuf>,
}

/// One `--incidents` spec: an incident on a board (numbered from 1).
#[derive(Debug, Clone, PartialEq)]
pub struct BoardIncident {
    pub board: usize,
    pub incident: Incident,
}

impl FromStr for BoardIncident {
    type Err = String;
    fn from_str(spec: &str) -> Result<Self, Self::Err> {
        let bad = || format!("incident {spec:?}: expected board=N:KIND@ply=P[:NAME=VALUE]...");
        let (board, incident) = spec
            .trim()
            .strip_prefix("board=")
            .and_then(|rest| rest.split_once(':'))
            .ok_or_else(bad)?;
        let board = board
            .parse::<usize>()
            .ok()
            .filter(|b| *b >= 1)
            .ok_or_else(bad)?;
        Ok(BoardIncident {
            board,
            incident: incident.parse()?,
        })
    }
}

/// What `--incident-record` holds.
#[derive(Debug, serde::Serialize)]
pub struct IncidentRecord {
    pub boards: Vec<BoardRecord>,
}

#[derive(Debug, serde::Serialize)]
pub struct BoardRecord {
    pub board_id: String,
    /// The game the board is set up with: `<tournament>-r<round>-b<board number>`.
    pub game_id: String,
    pub incidents: Vec<IncidentEntry>,
}

#[derive(Debug, serde::Serialize)]
pub struct IncidentEntry {
    /// The incident as `--incidents` writes it, without the board.
    pub incident: String,
    pub kind: &'static str,
    pub ply: u32,
    pub expected_alerts: Vec<AlertEntry>,
}

#[derive(Debug, serde::Serialize)]
pub struct AlertEntry {
    /// The alert kind's stable name, as the arbiter service lists it, e.g. `press_in_doubt`.
    pub kind: &'static str,
    pub ply: u32,
}

/// The record of what the plans inject.
pub fn incident_record(plans: &[BoardPlan]) -> IncidentRecord {
    let boards = plans
        .iter()
        .map(|plan| BoardRecord {
            board_id: plan.board_id.clone(),
            game_id: boardcast_game::game_id_for(
                &plan.started.tournament_id,
                plan.started.round,
                plan.started.board_number,
            ),
            incidents: plan
                .options
                .incidents
                .iter()
                .map(|incident| IncidentEntry {
                    incident: incident.to_string(),
                    kind: incident.kind_name(),
                    ply: incident.ply(),
                    expected_alerts: incident
                        .expected_alerts()
                        .into_iter()
                        .map(|a| AlertEntry {
                            kind: a.kind.name(),
                            ply: a.ply,
                        })
                        .collect(),
                })
                .collect(),
        })
        .collect();
    IncidentRecord { boards }
}

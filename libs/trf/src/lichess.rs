//! The players and teams as lichess's broadcast settings take them, so that an organiser
//! pastes them instead of typing them.

use std::fmt::Write as _;

use crate::TrfFile;

/// The players for lichess's "replace player names, ratings and titles" setting, one line
/// each: `Name = FIDE id / title` when the player has a FIDE id (lichess then takes the rating
/// from FIDE's list), else `Name / rating / title`.
pub fn lichess_players(file: &TrfFile) -> String {
    let mut text = String::new();
    for player in file.players.values() {
        let title = player.title.map_or("", |t| t.as_str());
        let line = if player.fide_id.is_empty() {
            let rating = player.rating.map(|r| r.to_string()).unwrap_or_default();
            format!("{} / {rating} / {title}", player.name)
        } else {
            format!("{} = {} / {title}", player.name, player.fide_id)
        };
        let _ = writeln!(text, "{}", line.trim_end_matches([' ', '/']));
    }
    text
}

/// The teams for lichess's "teams" setting, one line per player: `Team; FIDE id`, or
/// `Team; Name` for a player without one.
pub fn lichess_teams(file: &TrfFile) -> String {
    let mut text = String::new();
    for team in &file.teams {
        for rank in &team.players {
            let Some(player) = file.players.get(rank) else {
                continue;
            };
            let who = if player.fide_id.is_empty() {
                &player.name
            } else {
                &player.fide_id
            };
            let _ = writeln!(text, "{}; {who}", team.name);
        }
    }
    text
}

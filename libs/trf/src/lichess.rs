//! The players and teams as lichess's broadcast settings take them, so that an organiser
//! pastes them instead of typing them.

use std::fmt::Write as _;

use crate::TrfFile;

/// The players for lichess's "replace player names, ratings and titles" setting, one line
/// each, as lila's `RelayPlayersTextarea` splits it at `/`: name, FIDE id, title, rating.
/// With a FIDE id the rating is left out (lichess takes it from FIDE's list); without one the
/// id's place stays empty.
pub fn lichess_players(file: &TrfFile) -> String {
    let mut text = String::new();
    for player in file.players.values() {
        let title = player.title.map_or("", |t| t.as_str());
        let line = if player.fide_id.is_empty() {
            let rating = player.rating.map(|r| r.to_string()).unwrap_or_default();
            format!("{} /  / {title} / {rating}", player.name)
        } else {
            format!("{} / {} / {title}", player.name, player.fide_id)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Player, Title};

    fn player(rank: u32, name: &str, fide_id: &str, rating: Option<u32>, title: &str) -> Player {
        Player {
            rank,
            sex: None,
            title: Title::read(title),
            name: name.to_owned(),
            rating,
            federation: String::new(),
            fide_id: fide_id.to_owned(),
            birth: String::new(),
            rounds: Vec::new(),
            line: 0,
        }
    }

    #[test]
    fn each_field_is_where_lichess_reads_it() {
        let mut file = TrfFile::default();
        for p in [
            player(1, "Carlsen, Magnus", "1503014", Some(2830), "GM"),
            player(2, "Local, Lena", "", Some(1850), "WCM"),
            player(3, "Newcomer, Nils", "", None, ""),
            player(4, "Rated, Rita", "", Some(1500), ""),
        ] {
            file.players.insert(p.rank, p);
        }
        assert_eq!(
            lichess_players(&file),
            "Carlsen, Magnus / 1503014 / GM\n\
             Local, Lena /  / WCM / 1850\n\
             Newcomer, Nils\n\
             Rated, Rita /  /  / 1500\n"
        );
    }
}

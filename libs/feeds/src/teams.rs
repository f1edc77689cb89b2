//! A team event's matches as the feeds show them: a round's games grouped by the two teams that
//! play them, with the board points so far and, once every board is over, the match points.

use std::collections::BTreeMap;

use crate::view::GameView;

/// One match of a round.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct MatchView {
    /// The team with White on the match's first board, then the other.
    pub teams: [String; 2],
    /// The match's boards, in order.
    pub boards: Vec<u32>,
    /// Board points of the finished games, each team's.
    pub points: [f64; 2],
    /// FIDE's default team scoring (2 for a match won, 1 drawn, 0 lost), once every board is
    /// over; absent before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub match_points: Option<[u32; 2]>,
}

/// A finished game's points for White and Black, in half points; `None` while it goes on.
pub(crate) fn half_points(result: &str) -> Option<[u32; 2]> {
    match result {
        "1-0" => Some([2, 0]),
        "0-1" => Some([0, 2]),
        "1/2-1/2" => Some([1, 1]),
        "0-0" => Some([0, 0]),
        "1/2-0" => Some([1, 0]),
        "0-1/2" => Some([0, 1]),
        _ => None,
    }
}

/// The matches of a round's shown games, in board order; empty when its players have no
/// teams. A game whose players' teams are not two different ones is in no match.
pub fn team_matches<'a>(games: impl IntoIterator<Item = &'a GameView>) -> Vec<MatchView> {
    let mut games: Vec<&GameView> = games
        .into_iter()
        .filter(|g| {
            !g.white.team.is_empty() && !g.black.team.is_empty() && g.white.team != g.black.team
        })
        .collect();
    games.sort_by_key(|g| g.board_number);
    // Half points, by match (its teams in order, the lower first) then by team.
    let mut by_teams: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    let mut matches: Vec<(MatchView, [u32; 2], bool)> = Vec::new();
    for game in games {
        let (white, black) = (game.white.team.as_str(), game.black.team.as_str());
        let key = (white.min(black), white.max(black));
        let index = *by_teams.entry(key).or_insert_with(|| {
            matches.push((
                MatchView {
                    teams: [white.to_owned(), black.to_owned()],
                    boards: Vec::new(),
                    points: [0.0; 2],
                    match_points: None,
                },
                [0; 2],
                true,
            ));
            matches.len() - 1
        });
        let (view, halves, all_over) = &mut matches[index];
        view.boards.push(game.board_number);
        let white_side = usize::from(view.teams[0] != white);
        let Some([white_half, black_half]) = half_points(&game.result) else {
            *all_over = false;
            continue;
        };
        halves[white_side] += white_half;
        halves[1 - white_side] += black_half;
    }
    matches
        .into_iter()
        .map(|(mut view, half_points, all_over)| {
            view.points = half_points.map(|h| f64::from(h) / 2.0);
            view.match_points = all_over.then(|| {
                use std::cmp::Ordering::*;
                match half_points[0].cmp(&half_points[1]) {
                    Greater => [2, 0],
                    Less => [0, 2],
                    Equal => [1, 1],
                }
            });
            view
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::PlayerView;

    fn game(board: u32, white_team: &str, black_team: &str, result: &str) -> GameView {
        let player = |team: &str| PlayerView {
            name: format!("{team} player"),
            title: String::new(),
            rating: 0,
            fide_id: String::new(),
            federation: String::new(),
            team: team.to_owned(),
        };
        GameView {
            game_id: format!("g{board}"),
            version: 1,
            tournament_id: "t".into(),
            event: "e".into(),
            round: 1,
            board_number: board,
            white: player(white_team),
            black: player(black_team),
            fen: String::new(),
            moves: Vec::new(),
            uci: Vec::new(),
            move_clocks: Vec::new(),
            unconfirmed_plies: Vec::new(),
            provisional: Vec::new(),
            clocks: None,
            result: result.into(),
            termination: None,
            board_responding: true,
            battery_low: false,
        }
    }

    #[test]
    fn boards_are_grouped_by_their_teams_and_scored_for_each() {
        let games = [
            game(5, "Cuba", "India", "1-0"),
            game(1, "Ukraine", "Georgia", "1/2-1/2"),
            game(2, "Georgia", "Ukraine", "1-0"),
            game(6, "India", "Cuba", "1-0"),
            game(3, "Ukraine", "Georgia", "*"),
            game(7, "Cuba", "India", "0-1"),
            game(8, "India", "Cuba", "1/2-1/2"),
            game(9, "Solo", "", "1-0"),
        ];
        let matches = team_matches(&games);
        assert_eq!(matches.len(), 2, "{matches:?}");
        let first = &matches[0];
        assert_eq!(first.teams, ["Ukraine".to_owned(), "Georgia".to_owned()]);
        assert_eq!(first.boards, [1, 2, 3]);
        assert_eq!(first.points, [0.5, 1.5]);
        assert_eq!(first.match_points, None, "board 3 still plays");
        let second = &matches[1];
        assert_eq!(second.teams, ["Cuba".to_owned(), "India".to_owned()]);
        assert_eq!(second.boards, [5, 6, 7, 8]);
        assert_eq!(second.points, [1.5, 2.5]);
        assert_eq!(second.match_points, Some([0, 2]));
        assert!(team_matches(&games[7..]).is_empty(), "no teams, no match");
        // A board both players lost (neither came) is over, a point for nobody.
        let mut games = games;
        games[4] = game(3, "Ukraine", "Georgia", "0-0");
        let first = &team_matches(&games)[0];
        assert_eq!(first.points, [0.5, 1.5]);
        assert_eq!(first.match_points, Some([0, 2]));
        // Ukraine's player (White) lost to one who could not win: half a point for Georgia.
        games[4] = game(3, "Ukraine", "Georgia", "0-1/2");
        let first = &team_matches(&games)[0];
        assert_eq!(first.points, [0.5, 2.0]);
        // And the other way round: half a point for Ukraine, still not enough.
        games[4] = game(3, "Ukraine", "Georgia", "1/2-0");
        let first = &team_matches(&games)[0];
        assert_eq!(first.points, [1.0, 1.5]);
        assert_eq!(first.match_points, Some([0, 2]));
    }
}

//! The public face of a tournament: its name, place and dates, its rounds with their state, and
//! standings from the results shown so far (individual, and team in a team event). Only what
//! has been released counts: standings never tell a result the delay holds back.

use std::collections::BTreeMap;

use crate::teams::half_points;
use crate::view::GameView;
use crate::{Feeds, RoundKey, team_matches};

/// A tournament as the index shows it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TournamentSummary {
    pub tournament_id: String,
    /// Its games' event name (the first round's first board's).
    pub name: String,
    pub site: String,
    /// The earliest and latest game dates (PGN `YYYY.MM.DD`), when given.
    pub first_date: String,
    pub last_date: String,
    pub rounds: Vec<RoundSummary>,
    pub standings: Vec<Standing>,
    /// Empty unless the games' players have teams.
    pub team_standings: Vec<TeamStanding>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RoundSummary {
    pub round: u32,
    /// The round's date (its games' earliest).
    pub date: String,
    pub games: u32,
    pub finished: u32,
}

impl RoundSummary {
    /// `playing` or `finished` (a round is shown once a game of it is).
    pub fn state(&self) -> &'static str {
        if self.finished == self.games {
            "finished"
        } else {
            "playing"
        }
    }
}

/// A player's place: points from the finished games shown.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Standing {
    pub name: String,
    pub title: String,
    pub rating: u32,
    pub federation: String,
    pub points: f64,
    /// Finished games.
    pub games: u32,
}

/// A team's place: match points (2 a match won, 1 drawn) from matches whose every board is
/// over, then board points from every finished game.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TeamStanding {
    pub team: String,
    pub match_points: u32,
    pub board_points: f64,
    /// Matches whose every board is over.
    pub matches: u32,
}

impl Feeds {
    /// Every tournament with a game shown, by id.
    pub fn tournaments(&self) -> Vec<TournamentSummary> {
        let mut by_tournament: BTreeMap<&str, Vec<&RoundKey>> = BTreeMap::new();
        for key in self.rounds() {
            by_tournament
                .entry(&key.tournament_id)
                .or_default()
                .push(key);
        }
        by_tournament
            .into_iter()
            .map(|(id, rounds)| self.tournament_summary(id, &rounds))
            .collect()
    }

    fn tournament_summary(&self, tournament_id: &str, rounds: &[&RoundKey]) -> TournamentSummary {
        let mut summary = TournamentSummary {
            tournament_id: tournament_id.to_owned(),
            name: String::new(),
            site: String::new(),
            first_date: String::new(),
            last_date: String::new(),
            rounds: Vec::new(),
            standings: Vec::new(),
            team_standings: Vec::new(),
        };
        // Players by FIDE id, else by name: half points, finished games.
        let mut players: BTreeMap<String, (Standing, u32)> = BTreeMap::new();
        let mut teams: BTreeMap<String, TeamStanding> = BTreeMap::new();
        for key in rounds {
            let games = self.round_games(key);
            let views: Vec<&GameView> = self
                .round_feed_games(key)
                .filter_map(|g| g.view.as_ref())
                .collect();
            let mut round = RoundSummary {
                round: key.round,
                date: String::new(),
                games: 0,
                finished: 0,
            };
            for game in &games {
                let info = &game.info;
                if summary.name.is_empty() {
                    summary.name.clone_from(&info.event_name);
                    summary.site.clone_from(&info.site);
                }
                for date in [&info.date].into_iter().filter(|d| !d.is_empty()) {
                    if round.date.is_empty() || *date < round.date {
                        round.date.clone_from(date);
                    }
                    if summary.first_date.is_empty() || *date < summary.first_date {
                        summary.first_date.clone_from(date);
                    }
                    if *date > summary.last_date {
                        summary.last_date.clone_from(date);
                    }
                }
                round.games += 1;
            }
            for view in &views {
                let Some(halves) = half_points(&view.result) else {
                    continue;
                };
                round.finished += 1;
                for (player, half) in [(&view.white, halves[0]), (&view.black, halves[1])] {
                    let id = if player.fide_id.is_empty() {
                        format!("name:{}", player.name)
                    } else {
                        format!("fide:{}", player.fide_id)
                    };
                    let entry = players.entry(id).or_insert_with(|| {
                        (
                            Standing {
                                name: player.name.clone(),
                                title: player.title.clone(),
                                rating: player.rating,
                                federation: player.federation.clone(),
                                points: 0.0,
                                games: 0,
                            },
                            0,
                        )
                    });
                    entry.0.games += 1;
                    entry.1 += half;
                }
            }
            for m in team_matches(views.iter().copied()) {
                for (index, team) in m.teams.iter().enumerate() {
                    let standing = teams.entry(team.clone()).or_insert_with(|| TeamStanding {
                        team: team.clone(),
                        match_points: 0,
                        board_points: 0.0,
                        matches: 0,
                    });
                    standing.board_points += m.points[index];
                    if let Some(points) = m.match_points {
                        standing.match_points += points[index];
                        standing.matches += 1;
                    }
                }
            }
            summary.rounds.push(round);
        }
        summary.standings = players
            .into_values()
            .map(|(mut standing, half)| {
                standing.points = f64::from(half) / 2.0;
                standing
            })
            .collect();
        summary.standings.sort_by(|a, b| {
            b.points
                .total_cmp(&a.points)
                .then(b.rating.cmp(&a.rating))
                .then_with(|| a.name.cmp(&b.name))
        });
        summary.team_standings = teams.into_values().collect();
        summary.team_standings.sort_by(|a, b| {
            b.match_points
                .cmp(&a.match_points)
                .then(b.board_points.total_cmp(&a.board_points))
                .then_with(|| a.team.cmp(&b.team))
        });
        summary
    }
}

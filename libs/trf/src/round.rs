//! A round's pairings as a pairing program published them: the games in board order, the
//! byes, and games already decided by forfeit.

use std::collections::BTreeSet;

use crate::{Colour, Outcome, TrfError, TrfFile};

/// The kinds of bye (TRF result codes `H`, `F`, `U`, `Z`; TRF-26 `240` records).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ByeKind {
    HalfPoint,
    FullPoint,
    /// The bye the pairing gives the odd player out.
    PairingAllocated,
    /// A known absence.
    ZeroPoint,
}

/// A game of the round, by the players' starting ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Table {
    /// From 1, in the order pairing programs print the round.
    pub table: u32,
    pub white: u32,
    pub black: u32,
}

/// A pairing decided before it was played (a player did not come). It keeps its table: the
/// pairing program published the round with it, so the games after it are on the boards that
/// list gave them, and its board stays empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Forfeit {
    pub table: u32,
    pub white: u32,
    pub black: u32,
    /// White's result: `ForfeitWin` or `ForfeitLoss` (both lose: `ForfeitLoss` for both).
    pub white_outcome: Outcome,
    pub black_outcome: Outcome,
}

/// A player without a game in the round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct RoundBye {
    pub player: u32,
    pub kind: ByeKind,
}

/// A team match of the round: its games are the tables `first_table` to `last_table`, board 1
/// first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct TeamMatch {
    /// The team with White on the match's first board.
    pub first_team: u32,
    pub second_team: u32,
    pub first_table: u32,
    pub last_table: u32,
}

/// A team without a match in the round (`240` records of a team event).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct TeamBye {
    pub team: u32,
    pub kind: ByeKind,
}

/// What a round of the file holds.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RoundPairings {
    pub round: u32,
    /// The games to be played, board 1 first. Their numbers skip a forfeit's table.
    pub tables: Vec<Table>,
    pub forfeits: Vec<Forfeit>,
    pub byes: Vec<RoundBye>,
    /// In a team event: the matches, in table order.
    pub matches: Vec<TeamMatch>,
    pub team_byes: Vec<TeamBye>,
    /// Players without a game or a bye in the round (withdrawn, not paired yet, or in a team
    /// event not fielded), by starting rank.
    pub not_paired: Vec<u32>,
}

impl RoundPairings {
    /// The round's tables, counting the forfeits': the boards the round needs, numbered 1 to
    /// this.
    pub fn table_count(&self) -> u32 {
        let played = self.tables.iter().map(|t| t.table);
        let forfeited = self.forfeits.iter().map(|f| f.table);
        played.chain(forfeited).max().unwrap_or(0)
    }
}

impl TrfFile {
    /// Round `round`'s pairings. The file holds no board order for individual games, so the
    /// games are ordered as the FIDE Swiss rules have pairing programs publish them: by the
    /// score before the round of the pair's higher player, then by the pair's total score, then
    /// by the higher player's starting rank (the higher player: the higher score, on equal
    /// scores the better rank).
    pub fn round(&self, round: u32) -> Result<RoundPairings, TrfError> {
        if round == 0 {
            return Err(TrfError::File("rounds are numbered from 1".into()));
        }
        // White, Black, and the outcomes of a forfeit.
        let mut games: Vec<PairedGame> = Vec::new();
        let mut opponentless = Vec::new();
        let mut byes = Vec::new();
        let mut not_paired = Vec::new();
        let mut seen = BTreeSet::new();
        for player in self.players.values() {
            let Some(entry) = player.round(round) else {
                not_paired.push(player.rank);
                continue;
            };
            match (entry.opponent, entry.outcome) {
                (Some(opponent), outcome) => {
                    if !seen.insert(player.rank.min(opponent)) {
                        continue;
                    }
                    let other = self
                        .players
                        .get(&opponent)
                        .and_then(|p| p.round(round))
                        .copied();
                    let (white, black, white_entry, black_entry) =
                        match (entry.colour, other.and_then(|o| o.colour)) {
                            (Some(Colour::White), _) | (None, Some(Colour::Black)) => {
                                (player.rank, opponent, Some(*entry), other)
                            }
                            (Some(Colour::Black), _) | (None, Some(Colour::White)) => {
                                (opponent, player.rank, other, Some(*entry))
                            }
                            // A forfeit needs no colours: the pairing program may leave
                            // them out (`-`) when nobody played.
                            (None, None)
                                if [Some(*entry), other].iter().all(|e| {
                                    matches!(
                                        e.and_then(|e| e.outcome),
                                        Some(Outcome::ForfeitWin | Outcome::ForfeitLoss)
                                    )
                                }) =>
                            {
                                (player.rank, opponent, Some(*entry), other)
                            }
                            (None, None) => {
                                return Err(TrfError::at(
                                    player.line,
                                    entry.column + 5,
                                    format!(
                                        "round {round}: the game of {} and {opponent} has no \
                                         colours",
                                        player.rank
                                    ),
                                ));
                            }
                        };
                    let forfeited = |e: Option<crate::RoundEntry>| {
                        e.and_then(|e| e.outcome)
                            .filter(|o| matches!(o, Outcome::ForfeitWin | Outcome::ForfeitLoss))
                    };
                    match (forfeited(white_entry), forfeited(black_entry)) {
                        (Some(white_outcome), Some(black_outcome)) => {
                            games.push((white, black, Some((white_outcome, black_outcome))));
                        }
                        (None, None) => games.push((white, black, None)),
                        _ => {
                            return Err(TrfError::at(
                                player.line,
                                entry.column + 7,
                                format!(
                                    "round {round}: the game of {} and {opponent} is forfeited \
                                     for one of them only ({:?})",
                                    player.rank,
                                    outcome.map(Outcome::code)
                                ),
                            ));
                        }
                    }
                }
                (None, Some(outcome)) => byes.push(RoundBye {
                    player: player.rank,
                    kind: match outcome {
                        Outcome::HalfPointBye => ByeKind::HalfPoint,
                        Outcome::FullPointBye => ByeKind::FullPoint,
                        Outcome::PairingAllocatedBye => ByeKind::PairingAllocated,
                        Outcome::ZeroPointBye => ByeKind::ZeroPoint,
                        // A result without an opponent: in a team event, a board the other
                        // team left empty (`+`) or a member who did not play (`-`); in an
                        // individual one, the older way of writing a bye (`+`, `=`). Which
                        // one is known once the round's games are.
                        outcome => {
                            opponentless.push((player.rank, outcome));
                            continue;
                        }
                    },
                }),
                (None, None) => not_paired.push(player.rank),
            }
        }
        // TRF-26 lists byes in `240` records too: a team's in a team event.
        let team_of: std::collections::BTreeMap<u32, u32> = self
            .teams
            .iter()
            .flat_map(|t| t.players.iter().map(move |&p| (p, t.number)))
            .collect();
        let team_event = self.is_team_round(&games, &team_of);
        for (player, outcome) in opponentless {
            let kind = match outcome {
                Outcome::ForfeitWin | Outcome::Win if !team_event => Some(ByeKind::FullPoint),
                Outcome::Draw if !team_event => Some(ByeKind::HalfPoint),
                _ => None,
            };
            match kind {
                Some(kind) => byes.push(RoundBye { player, kind }),
                None => not_paired.push(player),
            }
        }
        not_paired.sort_unstable();
        let team_byes = self
            .byes
            .iter()
            .filter(|b| team_event && b.round == round)
            .map(|b| TeamBye {
                team: b.id,
                kind: b.kind,
            })
            .collect();
        for bye in self.byes.iter().filter(|b| !team_event && b.round == round) {
            if let Some(at) = not_paired.iter().position(|&p| p == bye.id) {
                not_paired.remove(at);
                byes.push(RoundBye {
                    player: bye.id,
                    kind: bye.kind,
                });
            }
        }
        if games.is_empty() {
            let last = (1..round)
                .rev()
                .find(|&r| {
                    self.players
                        .values()
                        .any(|p| p.round(r).is_some_and(|e| e.opponent.is_some()))
                })
                .map_or("none".to_owned(), |r| r.to_string());
            return Err(TrfError::File(format!(
                "round {round} has no games in the file (the last round paired in it: {last})"
            )));
        }
        byes.sort_by_key(|b| b.player);
        if team_event {
            let (ordered, matches) = self.team_order(round, games, &team_of)?;
            let (tables, forfeits) = numbered(ordered);
            return Ok(RoundPairings {
                round,
                tables,
                forfeits,
                byes,
                matches,
                team_byes,
                not_paired,
            });
        }
        let score = |rank: u32| {
            self.players
                .get(&rank)
                .map_or(0, |p| p.half_points_before(round))
        };
        games.sort_by_key(|&(white, black, _)| {
            let (w, b) = (score(white), score(black));
            // The pair's higher player: the higher score, on equal scores the better rank.
            let higher = match w.cmp(&b) {
                std::cmp::Ordering::Greater => white,
                std::cmp::Ordering::Less => black,
                std::cmp::Ordering::Equal => white.min(black),
            };
            (
                std::cmp::Reverse(w.max(b)),
                std::cmp::Reverse(w + b),
                higher,
            )
        });
        let (tables, forfeits) =
            numbered(games.into_iter().zip(1u32..).map(|(g, t)| (t, g)).collect());
        Ok(RoundPairings {
            round,
            tables,
            forfeits,
            byes,
            matches: Vec::new(),
            team_byes,
            not_paired,
        })
    }

    /// Each team's match points before `round` (a match won 2, drawn 1, lost 0, by the game
    /// points its players scored against the other team's; a team's bye of a full point as a
    /// match won, of half a point as one drawn).
    fn match_points_before(
        &self,
        round: u32,
        team_of: &std::collections::BTreeMap<u32, u32>,
    ) -> std::collections::BTreeMap<u32, u32> {
        let mut points = std::collections::BTreeMap::new();
        for earlier in 1..round {
            // (team, opponent team) → the team's game points in half points.
            let mut scored: std::collections::BTreeMap<(u32, u32), u32> =
                std::collections::BTreeMap::new();
            // Boards the other team left empty (`0000 - +`): scored against the team met.
            let mut by_default = Vec::new();
            for player in self.players.values() {
                let Some(entry) = player.round(earlier) else {
                    continue;
                };
                let (Some(outcome), Some(&team)) = (entry.outcome, team_of.get(&player.rank))
                else {
                    continue;
                };
                match entry.opponent.and_then(|o| team_of.get(&o)) {
                    Some(&other) => {
                        *scored.entry((team, other)).or_default() += outcome.half_points()
                    }
                    None if entry.opponent.is_none() => by_default.push((team, outcome)),
                    None => {}
                }
            }
            // A team whose opponent is not named anywhere (no line-up, no board played: the
            // other team did not come) won the match if its boards scored.
            let mut unmet: std::collections::BTreeMap<u32, u32> = std::collections::BTreeMap::new();
            for (team, outcome) in by_default {
                let met = self
                    .line_ups
                    .iter()
                    .find(|l| l.round == earlier && l.team == team)
                    .map(|l| l.opponent)
                    .or_else(|| scored.keys().find(|(t, _)| *t == team).map(|&(_, o)| o));
                match met {
                    Some(other) => {
                        *scored.entry((team, other)).or_default() += outcome.half_points();
                    }
                    None => *unmet.entry(team).or_default() += outcome.half_points(),
                }
            }
            for (team, half_points) in unmet {
                if half_points > 0 {
                    *points.entry(team).or_insert(0) += 2;
                }
            }
            for (&(team, other), &own) in &scored {
                let theirs = scored.get(&(other, team)).copied().unwrap_or(0);
                let won = match own.cmp(&theirs) {
                    std::cmp::Ordering::Greater => 2,
                    std::cmp::Ordering::Equal => 1,
                    std::cmp::Ordering::Less => 0,
                };
                *points.entry(team).or_insert(0) += won;
            }
            for bye in self.byes.iter().filter(|b| b.round == earlier) {
                let won = match bye.kind {
                    ByeKind::FullPoint | ByeKind::PairingAllocated => 2,
                    ByeKind::HalfPoint => 1,
                    ByeKind::ZeroPoint => 0,
                };
                *points.entry(bye.id).or_insert(0) += won;
            }
        }
        points
    }

    /// Whether the round is a team event's: every game between two different teams' players,
    /// and the file says so — its type of tournament (`092`), else TRF-26's team records or
    /// line-ups, else the games themselves: each team meets one other team, on more than one
    /// board somewhere. A file's teams alone do not make one: pairing programs write `013`
    /// records for the clubs of an individual open too, whose first round crosses clubs.
    fn is_team_round(
        &self,
        games: &[PairedGame],
        team_of: &std::collections::BTreeMap<u32, u32>,
    ) -> bool {
        let teams_of =
            |&(white, black, _): &PairedGame| match (team_of.get(&white), team_of.get(&black)) {
                (Some(&a), Some(&b)) if a != b => Some((a, b)),
                _ => None,
            };
        let Some(pairs) = games.iter().map(teams_of).collect::<Option<Vec<_>>>() else {
            return false;
        };
        if pairs.is_empty() {
            return false;
        }
        let kind = self.tournament.kind.to_ascii_lowercase();
        if kind.starts_with("team") {
            return true;
        }
        if kind.starts_with("individual") {
            return false;
        }
        if !self.teams_are_older_records || !self.line_ups.is_empty() {
            return true;
        }
        let mut opponent_of = std::collections::BTreeMap::new();
        let mut boards_of = std::collections::BTreeMap::new();
        for &(a, b) in &pairs {
            for (team, opponent) in [(a, b), (b, a)] {
                if *opponent_of.entry(team).or_insert(opponent) != opponent {
                    return false;
                }
            }
            *boards_of.entry((a.min(b), a.max(b))).or_insert(0u32) += 1;
        }
        boards_of.values().any(|&boards| boards > 1)
    }

    /// A team event's games grouped by match (the matches in standings order), each match's
    /// boards in its teams' order for the round: the `300` line-up when
    /// there is one, else the team's own order.
    fn team_order(
        &self,
        round: u32,
        games: Vec<PairedGame>,
        team_of: &std::collections::BTreeMap<u32, u32>,
    ) -> Result<(Vec<AtTable>, Vec<TeamMatch>), TrfError> {
        let board_of = |player: u32, team: u32| {
            let line_up = self
                .line_ups
                .iter()
                .find(|l| l.round == round && l.team == team)
                .map(|l| l.players.iter().position(|&p| p == Some(player)));
            let default = || {
                self.teams
                    .iter()
                    .find(|t| t.number == team)
                    .and_then(|t| t.players.iter().position(|&p| p == player))
            };
            line_up.flatten().or_else(default).unwrap_or(usize::MAX)
        };
        /// A game of a match: the first team's player's place in its line-up, and the game.
        type Board = (usize, PairedGame);
        let mut by_match: std::collections::BTreeMap<(u32, u32), Vec<Board>> =
            std::collections::BTreeMap::new();
        for game in games {
            let (white, black, _) = game;
            let (Some(&white_team), Some(&black_team)) = (team_of.get(&white), team_of.get(&black))
            else {
                return Err(TrfError::File(format!(
                    "round {round}: in a team event, the game of {white} and {black} is not \
                     between two teams' players"
                )));
            };
            let key = (white_team.min(black_team), white_team.max(black_team));
            let first_team_player = if white_team == key.0 { white } else { black };
            by_match
                .entry(key)
                .or_default()
                .push((board_of(first_team_player, key.0), game));
        }
        // The matches as pairing programs list them: by the match points before the round of
        // the match's higher team, then the match's total, then the higher team's number (the
        // higher team: more match points, on equal points the lower number).
        let match_points = self.match_points_before(round, team_of);
        let points = |team: u32| match_points.get(&team).copied().unwrap_or(0);
        let mut by_match: Vec<((u32, u32), Vec<Board>)> = by_match.into_iter().collect();
        by_match.sort_by_key(|&((low, high), _)| {
            let (a, b) = (points(low), points(high));
            let higher = if b > a { high } else { low };
            (
                std::cmp::Reverse(a.max(b)),
                std::cmp::Reverse(a + b),
                higher,
            )
        });
        // Each match has as many tables as a team has boards (the `352` colours, else the
        // round's longest line-up or match): a board left empty keeps its table, so the matches
        // after it stay on the tables the pairing program gave them.
        let line_up_of = |team: u32| {
            self.line_ups
                .iter()
                .find(|l| l.round == round && l.team == team)
        };
        let boards_per_match = match self.tournament.team_board_colours.trim().len() {
            0 => by_match
                .iter()
                .map(|((low, _), boards)| {
                    line_up_of(*low).map_or(boards.len(), |l| l.players.len().max(boards.len()))
                })
                .max()
                .unwrap_or(0),
            colours => colours,
        };
        let table = |at: usize| u32::try_from(at).unwrap_or(u32::MAX);
        let mut tables = Vec::new();
        let mut matches = Vec::new();
        for (index, ((low, high), mut boards)) in by_match.into_iter().enumerate() {
            boards.sort_unstable_by_key(|&(board, (white, black, _))| (board, white, black));
            let base = index.saturating_mul(boards_per_match);
            let first_team = boards
                .first()
                .and_then(|&(_, (white, _, _))| team_of.get(&white).copied())
                .unwrap_or(low);
            // A board's place is its line-up's when the round has one; else the games are
            // the match's first boards, in order.
            let placed = line_up_of(low).is_some()
                && boards.iter().all(|&(board, _)| board < boards_per_match);
            for (order, (board, game)) in boards.into_iter().enumerate() {
                let at = if placed { board } else { order };
                tables.push((table(base + at + 1), game));
            }
            matches.push(TeamMatch {
                first_team,
                second_team: if first_team == low { high } else { low },
                first_table: table(base + 1),
                last_table: table(base + boards_per_match),
            });
        }
        Ok((tables, matches))
    }
}

/// A game of the round: White, Black, and for a forfeit the outcomes the file gives them.
type PairedGame = (u32, u32, Option<(Outcome, Outcome)>);

/// A game and the table it is on.
type AtTable = (u32, PairedGame);

/// The round's games with their tables, split into those to be played and the forfeits (which
/// keep their tables).
fn numbered(games: Vec<AtTable>) -> (Vec<Table>, Vec<Forfeit>) {
    let mut tables = Vec::new();
    let mut forfeits = Vec::new();
    for (table, (white, black, forfeit)) in games {
        match forfeit {
            None => tables.push(Table {
                table,
                white,
                black,
            }),
            Some((white_outcome, black_outcome)) => forfeits.push(Forfeit {
                table,
                white,
                black,
                white_outcome,
                black_outcome,
            }),
        }
    }
    (tables, forfeits)
}

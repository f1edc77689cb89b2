//! Boards the chief arbiter assigns to arbiters from inside the system, on top of the users file.
//!
//! The users file says who is an arbiter of which tournament (the administrator's decision); the
//! chief arbiter decides during the event which boards each of them rules on. The latest
//! assignment of an arbiter in a tournament replaces the boards the file lists there, so that a
//! board can be taken away as well as given.

use std::collections::BTreeMap;

use thiserror::Error;

use crate::directory::Directory;
use crate::policy::{BoardsRuled, EVERY_TOURNAMENT, Identity, Role};

/// The most boards one assignment may list (a Chess Olympiad has some 1,000 boards).
pub const MAX_ASSIGNED_BOARDS: usize = 2_000;

/// One decision of a chief arbiter: `user` rules on `boards` of `tournament` from now on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assignment {
    pub tournament: String,
    pub user: String,
    /// Board numbers, ascending, without repeats; empty takes every board away.
    pub boards: Vec<u32>,
    /// The chief arbiter who decided it.
    pub by: String,
    pub at_unix_ms: i64,
    /// The client's id of the request that made it: a retry finds it instead of assigning again.
    pub request_id: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum AssignmentError {
    #[error("assign arbiters within one tournament, not {0:?}")]
    NoTournament(String),
    #[error("board numbers start at 1")]
    BoardZero,
    #[error("{count} boards in one assignment; at most {MAX_ASSIGNED_BOARDS}")]
    TooManyBoards { count: usize },
    #[error(
        "{user} is not an arbiter of tournament {tournament:?}: the administrator grants the role \
         first (`boardcast users grant {user} {tournament} arbiter`)"
    )]
    NotAnArbiter { user: String, tournament: String },
}

impl Assignment {
    /// An assignment of `target` (as the users file has the user) to `boards`, checked: a real
    /// tournament, board numbers from 1 (sorted, repeats dropped), and a target who is an
    /// arbiter of the tournament.
    pub fn new(
        target: &Identity,
        tournament: &str,
        mut boards: Vec<u32>,
        by: &str,
        at_unix_ms: i64,
        request_id: &str,
    ) -> Result<Assignment, AssignmentError> {
        if tournament.is_empty() || tournament == EVERY_TOURNAMENT {
            return Err(AssignmentError::NoTournament(tournament.to_owned()));
        }
        if boards.contains(&0) {
            return Err(AssignmentError::BoardZero);
        }
        boards.sort_unstable();
        boards.dedup();
        if boards.len() > MAX_ASSIGNED_BOARDS {
            return Err(AssignmentError::TooManyBoards {
                count: boards.len(),
            });
        }
        let arbiter = target.grants.iter().any(|g| {
            g.role == Role::Arbiter
                && (g.tournament == tournament || g.tournament == EVERY_TOURNAMENT)
        });
        if !arbiter {
            return Err(AssignmentError::NotAnArbiter {
                user: target.user.clone(),
                tournament: tournament.to_owned(),
            });
        }
        Ok(Assignment {
            tournament: tournament.to_owned(),
            user: target.user.clone(),
            boards,
            by: by.to_owned(),
            at_unix_ms,
            request_id: request_id.to_owned(),
        })
    }

    /// The same decision (who, where, which boards), whoever made it and when.
    pub fn same_decision(&self, other: &Assignment) -> bool {
        (&self.tournament, &self.user, &self.boards)
            == (&other.tournament, &other.user, &other.boards)
    }
}

/// The assignments in force: the latest one per arbiter and tournament.
#[derive(Clone, Debug, Default)]
pub struct Assignments {
    latest: BTreeMap<(String, String), Assignment>,
    /// Every assignment by the request that made it, for retries (however late).
    by_request: BTreeMap<String, Assignment>,
}

impl Assignments {
    /// Takes `assignment` as the one in force for its arbiter and tournament (assignments are
    /// recorded in order: a later one replaces an earlier one).
    pub fn record(&mut self, assignment: Assignment) {
        if !assignment.request_id.is_empty() {
            self.by_request
                .entry(assignment.request_id.clone())
                .or_insert_with(|| assignment.clone());
        }
        self.latest.insert(
            (assignment.tournament.clone(), assignment.user.clone()),
            assignment,
        );
    }

    /// The assignment recorded under a request id, if any.
    pub fn under_request(&self, request_id: &str) -> Option<&Assignment> {
        self.by_request.get(request_id)
    }

    /// The assignments in force in `tournament`, by user.
    pub fn of_tournament<'a>(
        &'a self,
        tournament: &'a str,
    ) -> impl Iterator<Item = &'a Assignment> {
        self.latest
            .values()
            .filter(move |a| a.tournament == tournament)
    }

    /// Every arbiter of `tournament` in `directory` (disabled users left out) with the boards
    /// they rule on now, chief arbiters first, then by user.
    pub fn arbiters_of(&self, directory: &Directory, tournament: &str) -> Vec<ArbiterBoards> {
        let mut arbiters: Vec<ArbiterBoards> = directory
            .users
            .keys()
            .filter_map(|user| directory.identity(user).ok())
            .filter_map(|mut identity| {
                self.apply_to(&mut identity);
                let boards = identity.rules_on(tournament)?;
                Some(ArbiterBoards {
                    assignment: self
                        .latest
                        .get(&(tournament.to_owned(), identity.user.clone()))
                        .filter(|_| boards != BoardsRuled::Every)
                        .cloned(),
                    user: identity.user,
                    display_name: identity.display_name,
                    boards,
                })
            })
            .collect();
        arbiters.sort_by_key(|a| (a.boards != BoardsRuled::Every, a.user.clone()));
        arbiters
    }

    /// The identity with its assigned boards: these replace the boards of the users file in
    /// each tournament the chief arbiter assigned the user in.
    pub fn apply_to(&self, identity: &mut Identity) {
        identity.assigned = self
            .latest
            .values()
            .filter(|a| a.user == identity.user)
            .map(|a| (a.tournament.clone(), a.boards.clone()))
            .collect();
    }
}

/// An arbiter of a tournament and the boards they rule on now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArbiterBoards {
    pub user: String,
    pub display_name: String,
    pub boards: BoardsRuled,
    /// The chief arbiter's assignment in force, when one replaced the users file's boards.
    pub assignment: Option<Assignment>,
}

/// How a round's boards are covered by its tournament's arbiters (the chief arbiter aside, who
/// rules on all of them).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Coverage {
    /// Boards no arbiter rules on: only the chief arbiter can rule there.
    pub uncovered: Vec<u32>,
    /// Boards more than one arbiter rules on, with theirs (by user): fine when meant, a slip
    /// when a board was given to a second arbiter and not taken from the first.
    pub shared: Vec<(u32, Vec<String>)>,
}

/// How the arbiters, each as (user, boards ruled), cover the boards numbered `boards`.
pub fn coverage<'a>(
    arbiters: impl IntoIterator<Item = (&'a str, &'a BoardsRuled)> + Clone,
    boards: &[u32],
) -> Coverage {
    let mut coverage = Coverage::default();
    let mut boards = boards.to_vec();
    boards.sort_unstable();
    boards.dedup();
    for board in boards {
        let ruling: Vec<String> = arbiters
            .clone()
            .into_iter()
            .filter(|(_, ruled)| matches!(ruled, BoardsRuled::These(b) if b.contains(&board)))
            .map(|(user, _)| user.to_owned())
            .collect();
        match ruling.len() {
            0 => coverage.uncovered.push(board),
            1 => {}
            _ => coverage.shared.push((board, ruling)),
        }
    }
    coverage
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{Denied, Grant, Operation};

    fn arbiter(tournament: &str, boards: &[u32]) -> Identity {
        Identity {
            user: "ia-smith".into(),
            display_name: "IA Smith".into(),
            grants: vec![Grant {
                tournament: tournament.into(),
                role: Role::Arbiter,
                boards: boards.to_vec(),
            }],
            expires_unix_ms: None,
            assigned: BTreeMap::new(),
        }
    }

    fn rule(identity: &Identity, tournament: &str, board_number: u32) -> Result<(), Denied> {
        identity.may(Operation::Rule {
            tournament,
            board_number,
        })
    }

    #[test]
    fn the_latest_assignment_replaces_the_files_boards_in_its_tournament() {
        let mut smith = arbiter("open", &[1, 2]);
        let mut assignments = Assignments::default();
        assignments
            .record(Assignment::new(&smith, "open", vec![7, 3, 7], "chief", 1, "r1").expect("ok"));
        assignments.apply_to(&mut smith);
        assert_eq!(smith.assigned["open"], [3, 7], "sorted, without repeats");
        assert!(rule(&smith, "open", 7).is_ok());
        assert!(matches!(
            rule(&smith, "open", 1),
            Err(Denied::BoardNotAssigned {
                board_number: 1,
                ..
            })
        ));
        // Every board taken away.
        assignments.record(Assignment::new(&smith, "open", vec![], "chief", 2, "r2").expect("ok"));
        assignments.apply_to(&mut smith);
        assert!(rule(&smith, "open", 3).is_err());
        assert_eq!(assignments.of_tournament("open").count(), 1);
        // Each request's assignment is found again by its id.
        assert_eq!(
            assignments.under_request("r1").map(|a| a.boards.clone()),
            Some(vec![3, 7])
        );
        assert!(assignments.under_request("r3").is_none());
    }

    #[test]
    fn an_arbiter_of_every_tournament_is_assigned_per_tournament() {
        let mut smith = arbiter(EVERY_TOURNAMENT, &[1]);
        let mut assignments = Assignments::default();
        assignments
            .record(Assignment::new(&smith, "rapid", vec![4], "chief", 1, "r1").expect("ok"));
        assignments.apply_to(&mut smith);
        assert!(rule(&smith, "rapid", 4).is_ok());
        assert!(rule(&smith, "rapid", 1).is_err(), "replaced in rapid");
        assert!(
            rule(&smith, "open", 1).is_ok(),
            "the file's boards elsewhere"
        );
    }

    #[test]
    fn only_arbiters_of_the_tournament_are_assigned_and_only_real_boards() {
        let smith = arbiter("open", &[]);
        assert!(matches!(
            Assignment::new(&smith, "rapid", vec![1], "chief", 0, "r0"),
            Err(AssignmentError::NotAnArbiter { .. })
        ));
        assert_eq!(
            Assignment::new(&smith, EVERY_TOURNAMENT, vec![1], "chief", 0, "r0"),
            Err(AssignmentError::NoTournament("*".into()))
        );
        assert_eq!(
            Assignment::new(&smith, "open", vec![0], "chief", 0, "r0"),
            Err(AssignmentError::BoardZero)
        );
        let many: Vec<u32> = (1..=MAX_ASSIGNED_BOARDS as u32 + 1).collect();
        assert!(matches!(
            Assignment::new(&smith, "open", many, "chief", 0, "r0"),
            Err(AssignmentError::TooManyBoards { .. })
        ));
    }

    #[test]
    fn the_arbiters_of_a_tournament_with_their_boards_and_how_a_round_is_covered() {
        let mut directory = Directory::new();
        let grant = |tournament: &str, role, boards: &[u32]| Grant {
            tournament: tournament.into(),
            role,
            boards: boards.to_vec(),
        };
        for (user, grants) in [
            ("ca-jones", vec![grant("open", Role::ChiefArbiter, &[])]),
            ("ia-smith", vec![grant("open", Role::Arbiter, &[1, 2, 3])]),
            ("ia-brown", vec![grant("open", Role::Arbiter, &[3, 4])]),
            (
                "ia-every",
                vec![grant(EVERY_TOURNAMENT, Role::Arbiter, &[])],
            ),
            ("ia-rapid", vec![grant("rapid", Role::Arbiter, &[1])]),
            ("ob-white", vec![grant("open", Role::Observer, &[])]),
            ("ia-gone", vec![grant("open", Role::Arbiter, &[5])]),
        ] {
            directory.add_user(user, user).expect("added");
            for g in grants {
                directory.grant(user, g).expect("granted");
            }
        }
        directory
            .set_disabled("ia-gone", true, 1)
            .expect("disabled");
        let mut assignments = Assignments::default();
        let brown = directory.identity("ia-brown").expect("brown");
        assignments
            .record(Assignment::new(&brown, "open", vec![4, 6], "ca-jones", 5, "r1").expect("ok"));

        let arbiters = assignments.arbiters_of(&directory, "open");
        let listed: Vec<(&str, &BoardsRuled, Option<&str>)> = arbiters
            .iter()
            .map(|a| {
                (
                    a.user.as_str(),
                    &a.boards,
                    a.assignment.as_ref().map(|x| x.by.as_str()),
                )
            })
            .collect();
        assert_eq!(
            listed,
            [
                ("ca-jones", &BoardsRuled::Every, None),
                (
                    "ia-brown",
                    &BoardsRuled::These(vec![4, 6]),
                    Some("ca-jones")
                ),
                ("ia-every", &BoardsRuled::These(vec![]), None),
                ("ia-smith", &BoardsRuled::These(vec![1, 2, 3]), None),
            ],
            "the file's boards unless assigned; no observer, other tournament or disabled user"
        );
        let ruled = |arbiters: &[ArbiterBoards]| -> Vec<(String, BoardsRuled)> {
            arbiters
                .iter()
                .map(|a| (a.user.clone(), a.boards.clone()))
                .collect()
        };
        let pairs = ruled(&arbiters);
        fn of(pairs: &[(String, BoardsRuled)]) -> Vec<(&str, &BoardsRuled)> {
            pairs.iter().map(|(u, b)| (u.as_str(), b)).collect()
        }
        assert_eq!(
            coverage(of(&pairs), &[1, 2, 3, 4, 5, 6, 4]),
            Coverage {
                uncovered: vec![5],
                shared: vec![],
            }
        );
        assignments.record(
            Assignment::new(&brown, "open", vec![2, 5, 6], "ca-jones", 6, "r2").expect("ok"),
        );
        let pairs = ruled(&assignments.arbiters_of(&directory, "open"));
        assert_eq!(
            coverage(of(&pairs), &[1, 2, 3, 4, 5, 6]),
            Coverage {
                uncovered: vec![4],
                shared: vec![(2, vec!["ia-brown".to_owned(), "ia-smith".to_owned()])],
            }
        );
        assert!(BoardsRuled::Every.includes(99));
        assert!(!BoardsRuled::These(vec![2, 5]).includes(3));
    }
}

//! Roles per tournament and the one function that says whether an identity may do something.

use std::{collections::BTreeMap, fmt, str::FromStr};

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// A grant's tournament that stands for every tournament.
pub const EVERY_TOURNAMENT: &str = "*";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// Everything in the tournament, including assigning arbiters to boards.
    ChiefArbiter,
    /// Rulings on the boards assigned (by board number), and reads.
    Arbiter,
    /// Reads only.
    Observer,
    /// Setting up games and pairing rounds, and reads; no rulings.
    Operator,
}

impl Role {
    pub const ALL: [Role; 4] = [
        Role::ChiefArbiter,
        Role::Arbiter,
        Role::Observer,
        Role::Operator,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Role::ChiefArbiter => "chief-arbiter",
            Role::Arbiter => "arbiter",
            Role::Observer => "observer",
            Role::Operator => "operator",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Role {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Role::ALL
            .into_iter()
            .find(|r| r.name() == s)
            .ok_or_else(|| {
                format!("unknown role {s:?}: one of chief-arbiter, arbiter, observer, operator")
            })
    }
}

/// A role in one tournament (or in every one: `EVERY_TOURNAMENT`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    pub tournament: String,
    pub role: Role,
    /// For an arbiter: the board numbers assigned. Empty: none yet.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub boards: Vec<u32>,
}

impl Grant {
    fn covers(&self, tournament: &str) -> bool {
        self.tournament == EVERY_TOURNAMENT || self.tournament == tournament
    }
}

/// An authenticated user and what they may do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    /// The login name, recorded as the actor of what the user does.
    pub user: String,
    pub display_name: String,
    pub grants: Vec<Grant>,
    /// When the credential stops being accepted (a session); `None` for an API token.
    pub expires_unix_ms: Option<i64>,
    /// Boards the chief arbiter assigned in the system, by tournament: they replace the boards
    /// of the user's arbiter grants there (`Assignments::apply_to`).
    pub assigned: BTreeMap<String, Vec<u32>>,
}

/// Something an identity may or may not do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation<'a> {
    /// Read games, boards, alerts and verdicts of the tournament.
    Read { tournament: &'a str },
    /// Create games and pair rounds.
    SetUp { tournament: &'a str },
    /// Rule on a game (any arbiter action) on the board with this number.
    Rule {
        tournament: &'a str,
        board_number: u32,
    },
    /// Assign arbiters to boards.
    AssignArbiters { tournament: &'a str },
    /// Lower the broadcast delay in force (raising it is setting up): releases moves sooner,
    /// which is the chief arbiter's call against cheating.
    LowerDelay { tournament: &'a str },
}

impl Operation<'_> {
    fn tournament(&self) -> &str {
        match self {
            Operation::Read { tournament }
            | Operation::SetUp { tournament }
            | Operation::Rule { tournament, .. }
            | Operation::AssignArbiters { tournament }
            | Operation::LowerDelay { tournament } => tournament,
        }
    }

    fn describe(&self) -> String {
        match self {
            Operation::Read { .. } => "reading".to_owned(),
            Operation::SetUp { .. } => "setting up games".to_owned(),
            Operation::Rule { board_number, .. } => format!("rulings on board {board_number}"),
            Operation::AssignArbiters { .. } => "assigning arbiters".to_owned(),
            Operation::LowerDelay { .. } => "lowering the broadcast delay".to_owned(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Denied {
    #[error("{user} has no role in tournament {tournament:?}")]
    NoRole { user: String, tournament: String },
    #[error("{user} may not do this in tournament {tournament:?}: {what} needs {needs}")]
    RoleTooLow {
        user: String,
        tournament: String,
        what: String,
        needs: &'static str,
    },
    #[error("{user} is not assigned board {board_number} of tournament {tournament:?}")]
    BoardNotAssigned {
        user: String,
        tournament: String,
        board_number: u32,
    },
}

impl Identity {
    fn allows(&self, grant: &Grant, operation: &Operation<'_>) -> bool {
        match (grant.role, operation) {
            (Role::ChiefArbiter, _) => true,
            (_, Operation::Read { .. }) => true,
            (Role::Operator, Operation::SetUp { .. }) => true,
            (
                Role::Arbiter,
                Operation::Rule {
                    tournament,
                    board_number,
                },
            ) => self
                .rules_on(tournament)
                .is_some_and(|boards| boards.includes(*board_number)),
            _ => false,
        }
    }
}

impl Identity {
    /// Whether this identity may do `operation`; the refusal says why.
    pub fn may(&self, operation: Operation<'_>) -> Result<(), Denied> {
        let tournament = operation.tournament();
        let grants: Vec<&Grant> = self
            .grants
            .iter()
            .filter(|g| g.covers(tournament))
            .collect();
        if grants.is_empty() {
            return Err(Denied::NoRole {
                user: self.user.clone(),
                tournament: tournament.to_owned(),
            });
        }
        if grants.iter().any(|g| self.allows(g, &operation)) {
            return Ok(());
        }
        match operation {
            Operation::Rule { board_number, .. }
                if grants.iter().any(|g| g.role == Role::Arbiter) =>
            {
                Err(Denied::BoardNotAssigned {
                    user: self.user.clone(),
                    tournament: tournament.to_owned(),
                    board_number,
                })
            }
            _ => Err(Denied::RoleTooLow {
                user: self.user.clone(),
                tournament: tournament.to_owned(),
                what: operation.describe(),
                needs: match operation {
                    Operation::SetUp { .. } => "the operator or chief-arbiter role",
                    Operation::Rule { .. } => {
                        "an arbiter assigned to the board, or the chief arbiter"
                    }
                    Operation::AssignArbiters { .. }
                    | Operation::LowerDelay { .. }
                    | Operation::Read { .. } => "the chief-arbiter role",
                },
            }),
        }
    }

    /// Whether the identity sets games up in some tournament (an operator or a chief arbiter):
    /// who is shown the hall's boards that carry no game yet.
    pub fn sets_up_games(&self) -> bool {
        self.grants
            .iter()
            .any(|g| matches!(g.role, Role::Operator | Role::ChiefArbiter))
    }

    /// Whether the identity may read the tournament (to filter lists).
    pub fn may_read(&self, tournament: &str) -> bool {
        self.may(Operation::Read { tournament }).is_ok()
    }

    /// The boards of `tournament` this identity rules on: every one for its chief arbiter; an
    /// arbiter's assigned boards (the chief arbiter's assignment, else the users file's);
    /// `None` for anyone else.
    pub fn rules_on(&self, tournament: &str) -> Option<BoardsRuled> {
        let grants = || self.grants.iter().filter(|g| g.covers(tournament));
        if grants().any(|g| g.role == Role::ChiefArbiter) {
            return Some(BoardsRuled::Every);
        }
        if !grants().any(|g| g.role == Role::Arbiter) {
            return None;
        }
        let mut boards: Vec<u32> = match self.assigned.get(tournament) {
            Some(assigned) => assigned.clone(),
            None => grants()
                .filter(|g| g.role == Role::Arbiter)
                .flat_map(|g| g.boards.iter().copied())
                .collect(),
        };
        boards.sort_unstable();
        boards.dedup();
        Some(BoardsRuled::These(boards))
    }
}

/// The boards of a tournament someone rules on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BoardsRuled {
    /// The chief arbiter's: all of them.
    Every,
    /// An arbiter's, ascending (none yet when empty).
    These(Vec<u32>),
}

impl BoardsRuled {
    pub fn includes(&self, board_number: u32) -> bool {
        match self {
            BoardsRuled::Every => true,
            BoardsRuled::These(boards) => boards.binary_search(&board_number).is_ok(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(grants: Vec<Grant>) -> Identity {
        Identity {
            user: "ia-smith".into(),
            display_name: "IA Smith".into(),
            grants,
            expires_unix_ms: None,
            assigned: BTreeMap::new(),
        }
    }

    fn grant(tournament: &str, role: Role, boards: &[u32]) -> Grant {
        Grant {
            tournament: tournament.into(),
            role,
            boards: boards.to_vec(),
        }
    }

    #[test]
    fn each_role_allows_exactly_its_operations() {
        let rule = |b| Operation::Rule {
            tournament: "open",
            board_number: b,
        };
        let chief = identity(vec![grant("open", Role::ChiefArbiter, &[])]);
        assert!(chief.may(rule(7)).is_ok());
        assert!(chief.may(Operation::SetUp { tournament: "open" }).is_ok());
        assert!(
            chief
                .may(Operation::AssignArbiters { tournament: "open" })
                .is_ok()
        );

        assert!(
            chief
                .may(Operation::LowerDelay { tournament: "open" })
                .is_ok()
        );
        let operator = identity(vec![grant("open", Role::Operator, &[])]);
        assert!(
            operator
                .may(Operation::SetUp { tournament: "open" })
                .is_ok()
        );
        assert!(matches!(
            operator.may(Operation::LowerDelay { tournament: "open" }),
            Err(Denied::RoleTooLow { .. })
        ));

        let arbiter = identity(vec![grant("open", Role::Arbiter, &[1, 2])]);
        assert!(arbiter.may(rule(2)).is_ok());
        assert!(matches!(
            arbiter.may(rule(3)),
            Err(Denied::BoardNotAssigned {
                board_number: 3,
                ..
            })
        ));
        assert!(matches!(
            arbiter.may(Operation::SetUp { tournament: "open" }),
            Err(Denied::RoleTooLow { .. })
        ));
        assert!(arbiter.may(Operation::Read { tournament: "open" }).is_ok());

        let observer = identity(vec![grant("open", Role::Observer, &[])]);
        assert!(observer.may(Operation::Read { tournament: "open" }).is_ok());
        assert!(matches!(
            observer.may(rule(1)),
            Err(Denied::RoleTooLow { .. })
        ));

        let operator = identity(vec![grant("open", Role::Operator, &[])]);
        assert!(
            operator
                .may(Operation::SetUp { tournament: "open" })
                .is_ok()
        );
        assert!(operator.may(rule(1)).is_err());
        assert!(
            operator
                .may(Operation::AssignArbiters { tournament: "open" })
                .is_err()
        );
    }

    #[test]
    fn a_grant_covers_its_tournament_only_unless_it_is_every_tournament() {
        let arbiter = identity(vec![grant("open", Role::Arbiter, &[1])]);
        assert!(matches!(
            arbiter.may(Operation::Rule {
                tournament: "rapid",
                board_number: 1
            }),
            Err(Denied::NoRole { .. })
        ));
        assert!(!arbiter.may_read("rapid"));
        let chief = identity(vec![grant(EVERY_TOURNAMENT, Role::ChiefArbiter, &[])]);
        assert!(
            chief
                .may(Operation::Rule {
                    tournament: "rapid",
                    board_number: 9
                })
                .is_ok()
        );
    }

    #[test]
    fn roles_read_and_print_by_name() {
        for role in Role::ALL {
            assert_eq!(role.name().parse::<Role>(), Ok(role));
        }
        assert!("admin".parse::<Role>().is_err());
    }
}

//! A game's log that forks: two different records with one number, written beside each other
//! (a nats-server fault, or a writer that bypassed the game service). Where it forks, the
//! branches that follow each record, and which stored messages keeping one branch removes.
//! Pure: the caller reads the log and removes the messages.

use boardcast_game::events::{GameEvent, GameEventRecord};
use boardcast_game::{Game, wording};
use prost::Message as _;

/// One record of a branch as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct BranchRecord {
    /// Where the log holds it (several, when the same record was stored more than once).
    pub stream_seqs: Vec<u64>,
    pub game_seq: u64,
    pub recorded_unix_ms: i64,
    /// The key that signed it (empty: unsigned).
    pub key_id: String,
    /// What it records, in words.
    pub words: String,
}

/// The records that follow one of the records written beside each other, that one first.
#[derive(Debug, Clone, PartialEq)]
pub struct Branch {
    pub records: Vec<BranchRecord>,
}

impl Branch {
    /// Where its first record is stored: how an operator names the branch.
    pub fn first_stream_seq(&self) -> u64 {
        self.records
            .first()
            .and_then(|r| r.stream_seqs.first().copied())
            .unwrap_or(0)
    }

    fn stream_seqs(&self) -> impl Iterator<Item = u64> + '_ {
        self.records
            .iter()
            .flat_map(|r| r.stream_seqs.iter().copied())
    }
}

/// Where a game's log forks and its branches (in the order their first records were stored).
#[derive(Debug, Clone, PartialEq)]
pub struct Fork {
    /// The number the records written beside each other share.
    pub game_seq: u64,
    pub branches: Vec<Branch>,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ForkError {
    #[error(
        "stream sequence {0} is not where a branch of the fork starts (the first record of a \
         branch, as listed)"
    )]
    NotABranch(u64),
}

impl Fork {
    /// The stream sequences to remove so that only the branch starting at `kept` (its first
    /// record's stream sequence) remains: every record of the other branches, every copy.
    pub fn removed_keeping(&self, kept: u64) -> Result<Vec<u64>, ForkError> {
        if !self.branches.iter().any(|b| b.first_stream_seq() == kept) {
            return Err(ForkError::NotABranch(kept));
        }
        let mut removed: Vec<u64> = self
            .branches
            .iter()
            .filter(|b| b.first_stream_seq() != kept)
            .flat_map(Branch::stream_seqs)
            .collect();
        removed.sort_unstable();
        Ok(removed)
    }
}

/// A record of the game as read, with what chains it.
struct Opened {
    stream_seq: u64,
    event: GameEvent,
    record: GameEventRecord,
}

/// Where game `game_id`'s log, its stored messages `stored` (stream sequence and payload, in
/// stream order), forks first; `None` when it does not. Messages that are not records of the
/// game (undecodable, another game's, a bad hash) are left aside, as every reader leaves them.
pub fn find_fork(game_id: &str, stored: &[(u64, Vec<u8>)]) -> Option<Fork> {
    let opened: Vec<Opened> = stored
        .iter()
        .filter_map(|(stream_seq, payload)| {
            let record = GameEventRecord::decode(payload.as_slice()).ok()?;
            let event = Game::open_record(&record).ok()?;
            (event.game_id == game_id).then_some(Opened {
                stream_seq: *stream_seq,
                event,
                record,
            })
        })
        .collect();
    // The first number with two different records.
    let mut first_hash: std::collections::HashMap<u64, &[u8]> = Default::default();
    let game_seq = opened
        .iter()
        .filter(|o| {
            let seen = *first_hash
                .entry(o.event.game_seq)
                .or_insert(o.record.hash.as_slice());
            seen != o.record.hash.as_slice()
        })
        .map(|o| o.event.game_seq)
        .min()?;
    // Each branch from its first record on, following the chain; copies of a record join it.
    let mut branches: Vec<Branch> = Vec::new();
    let mut branch_of: std::collections::HashMap<Vec<u8>, usize> = Default::default();
    for o in &opened {
        let branch = match branch_of.get(&o.record.hash) {
            Some(&b) => {
                // A copy of a record already taken: one more place it is stored.
                if let Some(record) = branches[b]
                    .records
                    .iter_mut()
                    .find(|r| r.game_seq == o.event.game_seq)
                {
                    record.stream_seqs.push(o.stream_seq);
                }
                continue;
            }
            None if o.event.game_seq == game_seq => {
                branches.push(Branch {
                    records: Vec::new(),
                });
                branches.len() - 1
            }
            None if o.event.game_seq > game_seq => match branch_of.get(&o.record.prev_hash) {
                Some(&b) => b,
                // Follows no branch: left aside (no reader folds it).
                None => continue,
            },
            None => continue,
        };
        branch_of.insert(o.record.hash.clone(), branch);
        branches[branch].records.push(BranchRecord {
            stream_seqs: vec![o.stream_seq],
            game_seq: o.event.game_seq,
            recorded_unix_ms: o.event.recorded_unix_ms,
            key_id: o.record.key_id.clone(),
            words: wording::words(&o.event, false, None),
        });
    }
    Some(Fork { game_seq, branches })
}

#[cfg(test)]
mod tests {
    use boardcast_game::events::{Annotation, GameStarted};
    use boardcast_game::events::{ArbiterAction, arbiter_action::Action};

    use super::*;

    /// A game set up on board `board`, with its first record stored at stream sequence 1.
    fn started(board: u32) -> (Game, Vec<(u64, Vec<u8>)>) {
        let info = GameStarted {
            tournament_id: "t".into(),
            round: 1,
            board_number: board,
            board_id: format!("b{board}"),
            white: Some(boardcast_game::events::Player {
                name: "W".into(),
                ..Default::default()
            }),
            black: Some(boardcast_game::events::Player {
                name: "B".into(),
                ..Default::default()
            }),
            time_control: Some(boardcast_game::events::TimeControl {
                periods: vec![boardcast_game::events::TimePeriod {
                    base_ms: 60_000,
                    ..Default::default()
                }],
            }),
            ..Default::default()
        };
        let (game_id, event) = Game::decide_start(&info, "arbiter", "r").expect("a start");
        let first = Game::record(None, &game_id, vec![event], 1_000);
        let game = Game::from_first_record(&first[0]).expect("folds");
        (game, vec![(1, first[0].encode_to_vec())])
    }

    /// A note continuing `game`, recorded at `at`.
    fn note(game: &Game, text: &str, at: i64) -> GameEventRecord {
        let action = ArbiterAction {
            action: Some(Action::Annotation(Annotation { text: text.into() })),
            ..Default::default()
        };
        let events = game
            .decide_arbiter(&action, "arbiter", text)
            .expect("a note");
        Game::record(Some(game), game.game_id(), events, at).remove(0)
    }

    #[test]
    fn a_log_that_follows_on_does_not_fork_even_with_a_record_stored_twice() {
        let (mut game, mut stored) = started(1);
        let one = note(&game, "one", 2_000);
        game.apply(&one).expect("follows");
        stored.push((2, one.encode_to_vec()));
        stored.push((3, one.encode_to_vec()));
        assert_eq!(find_fork(game.game_id(), &stored), None);
    }

    #[test]
    fn each_branch_follows_its_first_record_and_keeping_one_removes_every_copy_of_the_others() {
        let (game, mut stored) = started(1);
        let game_id = game.game_id().to_owned();
        // Two notes numbered 2 beside each other; each goes on with a record of its own.
        let (mut a, mut b) = (game.clone(), game.clone());
        let a2 = note(&a, "one", 2_000);
        let b2 = note(&b, "another", 2_100);
        a.apply(&a2).expect("follows");
        b.apply(&b2).expect("follows");
        let a3 = note(&a, "after one", 3_000);
        let b3 = note(&b, "after another", 3_100);
        // Another game's record and a copy of b2 in between.
        let (_, other_stored) = started(2);
        stored.extend([
            (2, a2.encode_to_vec()),
            (3, b2.encode_to_vec()),
            (4, other_stored[0].1.clone()),
            (5, b3.encode_to_vec()),
            (6, b2.encode_to_vec()),
            (7, a3.encode_to_vec()),
        ]);
        let fork = find_fork(&game_id, &stored).expect("a fork");
        assert_eq!(fork.game_seq, 2);
        let seqs: Vec<Vec<Vec<u64>>> = fork
            .branches
            .iter()
            .map(|b| b.records.iter().map(|r| r.stream_seqs.clone()).collect())
            .collect();
        assert_eq!(
            seqs,
            vec![vec![vec![2], vec![7]], vec![vec![3, 6], vec![5]]]
        );
        assert!(fork.branches[0].records[0].words.contains("one"));
        assert_eq!(fork.removed_keeping(2), Ok(vec![3, 5, 6]));
        assert_eq!(fork.removed_keeping(3), Ok(vec![2, 7]));
        assert_eq!(fork.removed_keeping(5), Err(ForkError::NotABranch(5)));
        // What remains after keeping the first branch follows on.
        let kept: Vec<(u64, Vec<u8>)> = stored
            .into_iter()
            .filter(|(seq, _)| ![3, 5, 6].contains(seq))
            .collect();
        assert_eq!(find_fork(&game_id, &kept), None);
    }
}

//! A game's log that forks: two different records with one number, written beside each other
//! (a nats-server fault, or a writer that bypassed the game service). Where it forks, the
//! branches that follow each record, and which stored messages keeping one branch removes.
//! Also a log that misses records (lost by a nats-server fault): the records after the gap,
//! which no reader can fold, and which cutting the log after the last one that follows on
//! removes. Pure: the caller reads the log and removes the messages.

pub use boardcast_game::follows_on;
use boardcast_game::signing::TrustedKeys;
use boardcast_game::{Game, GameError, OpenedRecord, fork_point, trusted_records_of, wording};

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
    /// Its hash (which tells a copy of it from another record with its number).
    pub hash: Vec<u8>,
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

/// Where a game's log that does not fork stops following on because records are missing from
/// it: what every reader folds, and the records stored after the gap.
#[derive(Debug, Clone, PartialEq)]
pub struct Missing {
    /// The number of the last record that follows on: the game as every reader folds it.
    pub last_followed: u64,
    /// The records stored after the gap, in stream order (each with every place it is
    /// stored): none can be folded without the ones missing.
    pub after: Vec<BranchRecord>,
}

impl Missing {
    /// The stream sequences to remove so that the log ends with the last record that follows
    /// on: every record after the gap, every copy.
    pub fn removed(&self) -> Vec<u64> {
        let mut removed: Vec<u64> = self
            .after
            .iter()
            .flat_map(|r| r.stream_seqs.iter().copied())
            .collect();
        removed.sort_unstable();
        removed
    }
}

/// Where game `game_id`'s log, its stored messages `stored` (stream sequence and payload, in
/// stream order), misses records; `None` when it follows on, forks (see [`find_fork`]), stops
/// following on for another reason (a record the rules refuse), or misses its first record
/// (nothing would be left of the game). Only records every reader takes count, as for
/// [`find_fork`].
pub fn find_missing<P: AsRef<[u8]>>(
    game_id: &str,
    stored: &[(u64, P)],
    trusted: &TrustedKeys,
) -> Option<Missing> {
    let records = trusted_records_of(game_id, stored, trusted);
    if fork_point(&records).is_some() {
        return None;
    }
    let mut game: Option<Game> = None;
    let mut folded: std::collections::HashSet<&[u8]> = Default::default();
    let mut after: Vec<BranchRecord> = Vec::new();
    for (stream_seq, opened) in &records {
        let hash = opened.record().hash.as_slice();
        if folded.contains(hash) {
            continue;
        }
        if after.is_empty() {
            let applied = match &mut game {
                Some(g) => g.apply_opened(opened),
                None => Game::from_first_opened(opened).map(|g| game = Some(g)),
            };
            match applied {
                Ok(()) => {
                    folded.insert(hash);
                    continue;
                }
                Err(GameError::OutOfSequence {
                    expected_after,
                    got,
                    ..
                }) if game.is_some() && got > expected_after.saturating_add(1) => {}
                Err(_) => return None,
            }
        }
        // After the gap: a copy of a record found already is one more place it is stored.
        match after
            .iter_mut()
            .find(|r| r.game_seq == opened.event().game_seq && r.hash == hash)
        {
            Some(found) => found.stream_seqs.push(*stream_seq),
            None => after.push(branch_record(*stream_seq, opened)),
        }
    }
    let last_followed = game?.last_game_seq();
    (!after.is_empty()).then_some(Missing {
        last_followed,
        after,
    })
}

/// A record as a branch (or the records after a gap) lists it.
fn branch_record(stream_seq: u64, opened: &OpenedRecord) -> BranchRecord {
    let (record, event) = (opened.record(), opened.event());
    BranchRecord {
        stream_seqs: vec![stream_seq],
        game_seq: event.game_seq,
        recorded_unix_ms: event.recorded_unix_ms,
        key_id: record.key_id.clone(),
        words: wording::words(event, false, None),
        hash: record.hash.clone(),
    }
}

/// Where game `game_id`'s log, its stored messages `stored` (stream sequence and payload, in
/// stream order), forks first; `None` when it does not. Only records every reader takes count
/// (decodable, hash intact, of the game, signed by a key of `trusted`): others (a forgery, say)
/// are left aside, as the readers leave them, and never make a branch.
pub fn find_fork<P: AsRef<[u8]>>(
    game_id: &str,
    stored: &[(u64, P)],
    trusted: &TrustedKeys,
) -> Option<Fork> {
    let records = trusted_records_of(game_id, stored, trusted);
    let game_seq = fork_point(&records)?;
    // Each branch from its first record on, following the chain; copies of a record join it.
    let mut branches: Vec<Branch> = Vec::new();
    let mut branch_of: std::collections::HashMap<&[u8], usize> = Default::default();
    for (stream_seq, opened) in &records {
        let (record, event) = (opened.record(), opened.event());
        let branch = match branch_of.get(record.hash.as_slice()) {
            Some(&b) => {
                // A copy of a record already taken: one more place it is stored.
                if let Some(taken) = branches[b]
                    .records
                    .iter_mut()
                    .find(|r| r.game_seq == event.game_seq)
                {
                    taken.stream_seqs.push(*stream_seq);
                }
                continue;
            }
            None if event.game_seq == game_seq => {
                branches.push(Branch {
                    records: Vec::new(),
                });
                branches.len() - 1
            }
            None if event.game_seq > game_seq => {
                match branch_of.get(record.prev_hash.as_slice()) {
                    Some(&b) => b,
                    // Follows no branch: left aside (no reader folds it).
                    None => continue,
                }
            }
            None => continue,
        };
        branch_of.insert(record.hash.as_slice(), branch);
        branches[branch]
            .records
            .push(branch_record(*stream_seq, opened));
    }
    Some(Fork { game_seq, branches })
}

#[cfg(test)]
mod tests {
    use boardcast_game::Game;
    use boardcast_game::events::{
        Annotation, ArbiterAction, GameEventRecord, GameStarted, Player, TimeControl, TimePeriod,
        arbiter_action::Action,
    };
    use boardcast_game::signing::RecordSigner;
    use prost::Message as _;

    use super::*;

    fn hall() -> RecordSigner {
        RecordSigner::from_seed([1; 32])
    }

    fn trusted() -> TrustedKeys {
        TrustedKeys::new([hall().public_key().clone()])
    }

    /// A game set up on board `board`, its first record (signed by the hall) stored at 1.
    fn started(board: u32) -> (Game, Vec<(u64, Vec<u8>)>) {
        let player = |name: &str| {
            Some(Player {
                name: name.into(),
                ..Default::default()
            })
        };
        let info = GameStarted {
            tournament_id: "t".into(),
            round: 1,
            board_number: board,
            board_id: format!("b{board}"),
            white: player("W"),
            black: player("B"),
            time_control: Some(TimeControl {
                periods: vec![TimePeriod {
                    base_ms: 60_000,
                    ..Default::default()
                }],
            }),
            ..Default::default()
        };
        let (game_id, event) = Game::decide_start(&info, "arbiter", "r").expect("a start");
        let first = Game::record_signed(None, &game_id, vec![event], 1_000, &hall());
        let game = Game::from_first_record(&first[0]).expect("folds");
        (game, vec![(1, first[0].encode_to_vec())])
    }

    /// A note continuing `game`, recorded at `at`, signed by `signer`.
    fn note(game: &Game, text: &str, at: i64, signer: &RecordSigner) -> GameEventRecord {
        let action = ArbiterAction {
            action: Some(Action::Annotation(Annotation { text: text.into() })),
            ..Default::default()
        };
        let events = game
            .decide_arbiter(&action, "arbiter", text)
            .expect("a note");
        Game::record_signed(Some(game), game.game_id(), events, at, signer).remove(0)
    }

    #[test]
    fn a_log_that_follows_on_does_not_fork_even_with_a_record_stored_twice_or_a_forgery() {
        let (mut game, mut stored) = started(1);
        let one = note(&game, "one", 2_000, &hall());
        let forged = note(&game, "forged", 2_000, &RecordSigner::from_seed([9; 32]));
        game.apply(&one).expect("follows");
        stored.push((2, one.encode_to_vec()));
        stored.push((3, forged.encode_to_vec()));
        stored.push((4, one.encode_to_vec()));
        assert_eq!(find_fork(game.game_id(), &stored, &trusted()), None);
        assert_eq!(follows_on(game.game_id(), &stored, &trusted()), Ok(2));
    }

    #[test]
    fn a_log_missing_records_is_cut_after_the_last_that_follows_on() {
        let (mut game, mut stored) = started(1);
        let game_id = game.game_id().to_owned();
        let mut records = Vec::new();
        for (n, text) in ["two", "three", "four", "five"].into_iter().enumerate() {
            let record = note(&game, text, 2_000 + n as i64, &hall());
            game.apply(&record).expect("follows");
            records.push(record.encode_to_vec());
        }
        // Records 2, 3 (lost: not stored), 4, a copy of 4, 5, and another game's between.
        let (_, other) = started(2);
        stored.extend([
            (2, records[0].clone()),
            (4, records[2].clone()),
            (5, other[0].1.clone()),
            (6, records[2].clone()),
            (7, records[3].clone()),
        ]);
        assert!(follows_on(&game_id, &stored, &trusted()).is_err());
        assert_eq!(find_fork(&game_id, &stored, &trusted()), None);
        let missing = find_missing(&game_id, &stored, &trusted()).expect("records missing");
        assert_eq!(missing.last_followed, 2);
        let after: Vec<(u64, Vec<u64>)> = missing
            .after
            .iter()
            .map(|r| (r.game_seq, r.stream_seqs.clone()))
            .collect();
        assert_eq!(after, [(4, vec![4, 6]), (5, vec![7])]);
        assert!(missing.after[0].words.contains("four"));
        assert_eq!(missing.removed(), [4, 6, 7]);
        // Cut there, the log follows on, and nothing is missing any more.
        let cut: Vec<(u64, Vec<u8>)> = stored
            .iter()
            .filter(|(seq, _)| !missing.removed().contains(seq))
            .cloned()
            .collect();
        assert_eq!(follows_on(&game_id, &cut, &trusted()), Ok(2));
        assert_eq!(find_missing(&game_id, &cut, &trusted()), None);
        // Not a log missing records: one that forks, or that lost its first record.
        let mut forked = stored.clone();
        let beside = started(1).0;
        forked.push((
            8,
            note(&beside, "another two", 9_000, &hall()).encode_to_vec(),
        ));
        assert!(find_fork(&game_id, &forked, &trusted()).is_some());
        assert_eq!(find_missing(&game_id, &forked, &trusted()), None);
        let headless: Vec<(u64, Vec<u8>)> = stored.iter().skip(1).cloned().collect();
        assert_eq!(find_missing(&game_id, &headless, &trusted()), None);
    }

    #[test]
    fn each_branch_follows_its_first_record_and_keeping_one_removes_every_copy_of_the_others() {
        let (game, mut stored) = started(1);
        let game_id = game.game_id().to_owned();
        // Two notes numbered 2 beside each other; each goes on with a record of its own.
        let (mut a, mut b) = (game.clone(), game.clone());
        let a2 = note(&a, "one", 2_000, &hall());
        let b2 = note(&b, "another", 2_100, &hall());
        a.apply(&a2).expect("follows");
        b.apply(&b2).expect("follows");
        let a3 = note(&a, "after one", 3_000, &hall());
        let b3 = note(&b, "after another", 3_100, &hall());
        // A third note numbered 2 that no trusted key signed: no branch.
        let forged = note(&game, "forged", 2_200, &RecordSigner::from_seed([9; 32]));
        // Another game's record and a copy of b2 in between.
        let (_, other_stored) = started(2);
        stored.extend([
            (2, a2.encode_to_vec()),
            (3, b2.encode_to_vec()),
            (4, other_stored[0].1.clone()),
            (5, b3.encode_to_vec()),
            (6, b2.encode_to_vec()),
            (7, forged.encode_to_vec()),
            (8, a3.encode_to_vec()),
        ]);
        let fork = find_fork(&game_id, &stored, &trusted()).expect("a fork");
        assert_eq!(fork.game_seq, 2);
        let seqs: Vec<Vec<Vec<u64>>> = fork
            .branches
            .iter()
            .map(|b| b.records.iter().map(|r| r.stream_seqs.clone()).collect())
            .collect();
        assert_eq!(
            seqs,
            vec![vec![vec![2], vec![8]], vec![vec![3, 6], vec![5]]]
        );
        assert!(fork.branches[0].records[0].words.contains("one"));
        assert!(follows_on(&game_id, &stored, &trusted()).is_err());
        assert_eq!(fork.removed_keeping(2), Ok(vec![3, 5, 6]));
        assert_eq!(fork.removed_keeping(3), Ok(vec![2, 8]));
        assert_eq!(fork.removed_keeping(7), Err(ForkError::NotABranch(7)));
        // What remains after keeping the second branch follows on.
        let kept: Vec<(u64, Vec<u8>)> = stored
            .into_iter()
            .filter(|(seq, _)| ![2, 8].contains(seq))
            .collect();
        assert_eq!(find_fork(&game_id, &kept, &trusted()), None);
        assert_eq!(follows_on(&game_id, &kept, &trusted()), Ok(3));
    }
}

//! The record of a game: decided events sealed into hash-chained, signed records, and records
//! opened, checked and folded in order (the chain itself is in `chain`).

use prost::Message;

use crate::chain::{ChainError, GENESIS_HASH, HASH_CHAIN_VERSION, chain_hash};
use crate::events::{GameEvent, GameEventRecord, Provenance, game_event::Kind};
use crate::signing::{RecordSigner, TrustedKeys};
use crate::state::{Game, GameError};

/// An event decided but not yet recorded: what happened and what it rests on.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    pub kind: Kind,
    pub provenance: Provenance,
}

/// A record whose hash has been checked and whose event is decoded (`Game::open`); only `open`
/// makes one, so the event is always the record's.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenedRecord {
    record: GameEventRecord,
    event: GameEvent,
}

impl OpenedRecord {
    pub fn record(&self) -> &GameEventRecord {
        &self.record
    }

    pub fn event(&self) -> &GameEvent {
        &self.event
    }

    pub fn into_event(self) -> GameEvent {
        self.event
    }
}

impl Game {
    /// Seals decided events into records that continue this game's log and hash chain.
    /// `game` is `None` for the first record of a new game.
    pub fn record(
        game: Option<&Game>,
        game_id: &str,
        new_events: Vec<NewEvent>,
        recorded_unix_ms: i64,
    ) -> Vec<GameEventRecord> {
        let (mut seq, mut prev) = match game {
            Some(g) => (g.record.last_game_seq, g.record.chain_head),
            None => (0, GENESIS_HASH),
        };
        new_events
            .into_iter()
            .map(|new| {
                seq += 1;
                let event = GameEvent {
                    game_id: game_id.to_owned(),
                    game_seq: seq,
                    recorded_unix_ms,
                    provenance: Some(new.provenance),
                    kind: Some(new.kind),
                };
                let bytes = event.encode_to_vec();
                let hash = chain_hash(&prev, &bytes);
                let record = GameEventRecord {
                    event: bytes,
                    prev_hash: prev.to_vec(),
                    hash: hash.to_vec(),
                    chain_version: HASH_CHAIN_VERSION,
                    ..Default::default()
                };
                prev = hash;
                record
            })
            .collect()
    }

    /// `record`, each record signed by `signer`: what the game service appends.
    pub fn record_signed(
        game: Option<&Game>,
        game_id: &str,
        new_events: Vec<NewEvent>,
        recorded_unix_ms: i64,
        signer: &RecordSigner,
    ) -> Vec<GameEventRecord> {
        let mut records = Self::record(game, game_id, new_events, recorded_unix_ms);
        for record in &mut records {
            signer.sign(record);
        }
        records
    }

    /// Checks a record's hash and decodes its event, without applying it.
    pub fn open_record(record: &GameEventRecord) -> Result<GameEvent, GameError> {
        let event = GameEvent::decode(record.event.as_slice())
            .map_err(|e| GameError::Undecodable(e.to_string()))?;
        if record.chain_version != HASH_CHAIN_VERSION {
            return Err(ChainError::UnsupportedVersion {
                game_seq: event.game_seq,
                version: record.chain_version,
            }
            .into());
        }
        let prev: [u8; 32] =
            record
                .prev_hash
                .as_slice()
                .try_into()
                .map_err(|_| ChainError::BrokenLink {
                    game_seq: event.game_seq,
                })?;
        if chain_hash(&prev, &record.event).as_slice() != record.hash.as_slice() {
            return Err(ChainError::BadHash {
                game_seq: event.game_seq,
            }
            .into());
        }
        Ok(event)
    }

    /// Folds the first record of a game into a new game.
    pub fn from_first_record(record: &GameEventRecord) -> Result<Game, GameError> {
        let event = Self::open_record(record)?;
        Self::from_first_checked(record, event)
    }

    /// Checks a record's hash and decodes its event once, for folding without doing either again
    /// (`from_first_opened`, `apply_opened`).
    pub fn open(record: GameEventRecord) -> Result<OpenedRecord, GameError> {
        let event = Self::open_record(&record)?;
        Ok(OpenedRecord { record, event })
    }

    /// What every reader does with a stored message of a game's log before folding it: decode
    /// it, check its hash, and check its signature with `trusted` (`game_signed`: the game's log
    /// already holds a signed record). Any error means the message is refused: not folded.
    pub fn read_stored(
        payload: &[u8],
        trusted: &TrustedKeys,
        game_signed: bool,
    ) -> Result<OpenedRecord, GameError> {
        let record = GameEventRecord::decode(payload)
            .map_err(|e| GameError::Undecodable(format!("the stored record: {e}")))?;
        let opened = Self::open(record)?;
        trusted.check(&opened.record, opened.event.game_seq, game_signed)?;
        Ok(opened)
    }

    /// `from_first_record` on an opened record.
    pub fn from_first_opened(opened: &OpenedRecord) -> Result<Game, GameError> {
        Self::from_first_checked(&opened.record, opened.event.clone())
    }

    /// `apply` on an opened record.
    pub fn apply_opened(&mut self, opened: &OpenedRecord) -> Result<(), GameError> {
        self.apply_checked(&opened.record, &opened.event)
    }

    /// Folds the first record of a game after checking its signature with `keys`.
    pub fn from_first_trusted(
        record: &GameEventRecord,
        keys: &TrustedKeys,
    ) -> Result<Game, GameError> {
        keys.check(record, 1, false)?;
        Self::from_first_record(record)
    }

    /// Folds the next record after checking its signature with `keys` (see `apply`).
    pub fn apply_trusted(
        &mut self,
        record: &GameEventRecord,
        keys: &TrustedKeys,
    ) -> Result<(), GameError> {
        keys.check(record, self.record.last_game_seq + 1, self.is_signed())?;
        self.apply(record)
    }

    /// Folds the next record of this game into its state, checking sequence and hash chain.
    pub fn apply(&mut self, record: &GameEventRecord) -> Result<(), GameError> {
        let event = Self::open_record(record)?;
        self.apply_checked(record, &event)
    }

    /// `apply` after `open_record`: `event` is `record`'s, its hash checked.
    pub(crate) fn apply_checked(
        &mut self,
        record: &GameEventRecord,
        event: &GameEvent,
    ) -> Result<(), GameError> {
        if event.game_id != self.game_id {
            return Err(GameError::WrongGame {
                expected: self.game_id.clone(),
                got: event.game_id.clone(),
            });
        }
        if event.game_seq != self.record.last_game_seq + 1 {
            return Err(GameError::OutOfSequence {
                game_id: self.game_id.clone(),
                expected_after: self.record.last_game_seq,
                got: event.game_seq,
            });
        }
        if record.prev_hash.as_slice() != self.record.chain_head.as_slice() {
            return Err(ChainError::BrokenLink {
                game_seq: event.game_seq,
            }
            .into());
        }
        self.evolve(event)?;
        self.record.last_game_seq = event.game_seq;
        self.record.chain_head.copy_from_slice(&record.hash);
        if record.signature.is_empty() {
            self.record.unsigned += 1;
        } else {
            self.record.signed += 1;
        }
        Ok(())
    }
}

/// The messages among `stored` (stream sequence and payload, in stream order) that are records
/// of game `game_id` every reader would take: decodable, hash intact, signed by a key of
/// `trusted` ([`Game::read_stored`]). Whether they follow on is not checked.
pub fn trusted_records_of<P: AsRef<[u8]>>(
    game_id: &str,
    stored: &[(u64, P)],
    trusted: &TrustedKeys,
) -> Vec<(u64, OpenedRecord)> {
    // As the readers take them: no unsigned record once the game holds a signed one.
    let mut signed_seen = false;
    stored
        .iter()
        .filter_map(|(stream_seq, payload)| {
            let opened = Game::read_stored(payload.as_ref(), trusted, signed_seen).ok()?;
            if opened.event.game_id != game_id {
                return None;
            }
            signed_seen |= !opened.record.signature.is_empty();
            Some((*stream_seq, opened))
        })
        .collect()
}

/// Where a game's log forks: the first number that two different records of `records` (as
/// [`trusted_records_of`] gives them) hold. A record stored twice is not a fork.
pub fn fork_point(records: &[(u64, OpenedRecord)]) -> Option<u64> {
    let mut first_hash: std::collections::HashMap<u64, &[u8]> = Default::default();
    records
        .iter()
        .filter(|(_, opened)| {
            let seen = *first_hash
                .entry(opened.event.game_seq)
                .or_insert(opened.record.hash.as_slice());
            seen != opened.record.hash.as_slice()
        })
        .map(|(_, opened)| opened.event.game_seq)
        .min()
}

/// Whether game `game_id`'s records among `stored` follow on as every reader folds them (a
/// record bad in itself left aside, a copy of one taken once): the number of the last, or where
/// they stop following on.
pub fn follows_on<P: AsRef<[u8]>>(
    game_id: &str,
    stored: &[(u64, P)],
    trusted: &TrustedKeys,
) -> Result<u64, String> {
    let mut game: Option<Game> = None;
    let mut folded_hashes: std::collections::HashSet<Vec<u8>> = Default::default();
    for (stream_seq, opened) in trusted_records_of(game_id, stored, trusted) {
        if !folded_hashes.insert(opened.record().hash.clone()) {
            // A copy of a record folded already.
            continue;
        }
        let folded = match &mut game {
            Some(g) => g.apply_opened(&opened),
            None => Game::from_first_opened(&opened).map(|g| game = Some(g)),
        };
        folded.map_err(|e| format!("stream sequence {stream_seq}: {e}"))?;
    }
    game.map(|g| g.last_game_seq())
        .ok_or_else(|| format!("no record of game {game_id} in the log"))
}

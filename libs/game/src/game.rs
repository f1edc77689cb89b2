//! Game state, the start command, recording new events and folding records.

use prost::Message;
use shakmaty::{CastlingMode, Chess, Color, EnPassantMode, Move, Position, fen::Fen, uci::UciMove};

use crate::chain::{ChainError, GENESIS_HASH, HASH_CHAIN_VERSION, chain_hash};
use crate::events::{
    self, GameEvent, GameEventRecord, GameResult, GameStarted, MoveCompleted, MoveProvisional,
    Provenance, Source, Termination, game_event::Kind,
};

/// An event decided but not yet recorded: what happened and what it rests on.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    pub kind: Kind,
    pub provenance: Provenance,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum GameError {
    #[error("invalid game: {0}")]
    InvalidGame(String),
    #[error("record is not a game event: {0}")]
    Undecodable(String),
    #[error("record {got} does not follow record {expected_after} of game {game_id}")]
    OutOfSequence {
        game_id: String,
        expected_after: u64,
        got: u64,
    },
    #[error("record belongs to game {got}, not {expected}")]
    WrongGame { expected: String, got: String },
    #[error("the first record of a game must be GameStarted")]
    NotStarted,
    #[error("record {game_seq}: {reason}")]
    Inconsistent { game_seq: u64, reason: String },
    #[error(transparent)]
    Chain(#[from] ChainError),
}

/// A move on the board that the clock has not confirmed yet.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Provisional {
    pub(crate) mv: Move,
    pub(crate) event: MoveProvisional,
    pub(crate) device_seqs: Vec<u64>,
}

/// The state of one game, as folded from its log.
#[derive(Debug, Clone)]
pub struct Game {
    pub(crate) game_id: String,
    pub(crate) info: GameStarted,
    pub(crate) position: Chess,
    pub(crate) moves: Vec<MoveCompleted>,
    pub(crate) provisional: Option<Provisional>,
    pub(crate) result: Option<(GameResult, Termination)>,
    pub(crate) last_game_seq: u64,
    pub(crate) chain_head: [u8; 32],
    pub(crate) last_device_seq: u64,
}

/// The id of the game of a pairing: `<tournament>-r<round>-b<board>`.
pub fn game_id_for(tournament_id: &str, round: u32, board_number: u32) -> String {
    format!("{tournament_id}-r{round}-b{board_number}")
}

/// Ids end up in NATS subjects and URLs: ASCII letters, digits, `-` and `_` only.
fn validate_id(what: &str, id: &str) -> Result<(), GameError> {
    if id.is_empty() || id.len() > 64 {
        return Err(GameError::InvalidGame(format!(
            "{what} must be 1 to 64 characters long, got {:?}",
            id
        )));
    }
    if let Some(c) = id
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
    {
        return Err(GameError::InvalidGame(format!(
            "{what} {id:?} contains {c:?}; use ASCII letters, digits, '-' and '_'"
        )));
    }
    Ok(())
}

/// Checks a physical board id (it becomes part of NATS subjects).
pub fn validate_board_id(board_id: &str) -> Result<(), GameError> {
    validate_id("board id", board_id)
}

fn start_position(info: &GameStarted) -> Result<Chess, GameError> {
    if info.start_fen.is_empty() {
        return Ok(Chess::default());
    }
    let fen: Fen = info
        .start_fen
        .parse()
        .map_err(|e| GameError::InvalidGame(format!("start FEN {:?}: {e}", info.start_fen)))?;
    fen.into_position(CastlingMode::Standard)
        .map_err(|e| GameError::InvalidGame(format!("start FEN {:?}: {e}", info.start_fen)))
}

/// FEN of a position, with en passant only where it is legal.
pub fn fen_of(pos: &Chess) -> String {
    Fen::from_position(pos, EnPassantMode::Legal).to_string()
}

impl Game {
    /// Decides the start of a game: validates the pairing and returns its `GameStarted` event.
    pub fn decide_start(info: &GameStarted, actor: &str) -> Result<(String, NewEvent), GameError> {
        validate_id("tournament id", &info.tournament_id)?;
        validate_board_id(&info.board_id)?;
        if info.round == 0 || info.board_number == 0 {
            return Err(GameError::InvalidGame(
                "round and board number start at 1".to_owned(),
            ));
        }
        if info.white.as_ref().is_none_or(|p| p.name.trim().is_empty())
            || info.black.as_ref().is_none_or(|p| p.name.trim().is_empty())
        {
            return Err(GameError::InvalidGame(
                "both players need a name".to_owned(),
            ));
        }
        let tc = info.time_control.as_ref().ok_or_else(|| {
            GameError::InvalidGame("a time control with at least one period is required".into())
        })?;
        if tc.periods.is_empty() {
            return Err(GameError::InvalidGame(
                "a time control with at least one period is required".to_owned(),
            ));
        }
        if let Some((i, _)) = tc
            .periods
            .iter()
            .enumerate()
            .find(|(_, p)| p.base_ms == 0 && p.increment_ms == 0)
        {
            return Err(GameError::InvalidGame(format!(
                "time control period {} has neither time nor increment",
                i + 1
            )));
        }
        start_position(info)?;
        let game_id = game_id_for(&info.tournament_id, info.round, info.board_number);
        Ok((
            game_id,
            NewEvent {
                kind: Kind::Started(info.clone()),
                provenance: Provenance {
                    source: Source::Operator as i32,
                    actor: actor.to_owned(),
                    ..Default::default()
                },
            },
        ))
    }

    /// Seals decided events into records that continue this game's log and hash chain.
    /// `game` is `None` for the first record of a new game.
    pub fn record(
        game: Option<&Game>,
        game_id: &str,
        new_events: Vec<NewEvent>,
        recorded_unix_ms: i64,
    ) -> Vec<GameEventRecord> {
        let (mut seq, mut prev) = match game {
            Some(g) => (g.last_game_seq, g.chain_head),
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
                };
                prev = hash;
                record
            })
            .collect()
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
        if record.prev_hash.as_slice() != GENESIS_HASH.as_slice() || event.game_seq != 1 {
            return Err(ChainError::BrokenLink {
                game_seq: event.game_seq,
            }
            .into());
        }
        let Some(Kind::Started(info)) = event.kind else {
            return Err(GameError::NotStarted);
        };
        let position = start_position(&info)?;
        let mut head = [0u8; 32];
        head.copy_from_slice(&record.hash);
        Ok(Game {
            game_id: event.game_id,
            info,
            position,
            moves: Vec::new(),
            provisional: None,
            result: None,
            last_game_seq: 1,
            chain_head: head,
            last_device_seq: 0,
        })
    }

    /// Folds the next record of this game into its state, checking sequence and hash chain.
    pub fn apply(&mut self, record: &GameEventRecord) -> Result<(), GameError> {
        let event = Self::open_record(record)?;
        if event.game_id != self.game_id {
            return Err(GameError::WrongGame {
                expected: self.game_id.clone(),
                got: event.game_id,
            });
        }
        if event.game_seq != self.last_game_seq + 1 {
            return Err(GameError::OutOfSequence {
                game_id: self.game_id.clone(),
                expected_after: self.last_game_seq,
                got: event.game_seq,
            });
        }
        if record.prev_hash.as_slice() != self.chain_head.as_slice() {
            return Err(ChainError::BrokenLink {
                game_seq: event.game_seq,
            }
            .into());
        }
        self.evolve(&event)?;
        self.last_game_seq = event.game_seq;
        self.chain_head.copy_from_slice(&record.hash);
        if let Some(p) = &event.provenance
            && let Some(max) = p.device_seqs.iter().max()
        {
            self.last_device_seq = self.last_device_seq.max(*max);
        }
        Ok(())
    }

    fn evolve(&mut self, event: &GameEvent) -> Result<(), GameError> {
        let inconsistent = |reason: String| GameError::Inconsistent {
            game_seq: event.game_seq,
            reason,
        };
        match &event.kind {
            None => return Err(inconsistent("event without content".into())),
            Some(Kind::Started(_)) => return Err(inconsistent("game started twice".into())),
            Some(Kind::MoveProvisional(p)) => {
                let mv = self
                    .parse_uci(&p.uci)
                    .map_err(|e| inconsistent(format!("provisional move: {e}")))?;
                let device_seqs = event
                    .provenance
                    .as_ref()
                    .map(|p| p.device_seqs.clone())
                    .unwrap_or_default();
                self.provisional = Some(Provisional {
                    mv,
                    event: p.clone(),
                    device_seqs,
                });
            }
            Some(Kind::ProvisionalWithdrawn(_)) => self.provisional = None,
            Some(Kind::MoveCompleted(m)) => {
                let mv = self
                    .parse_uci(&m.uci)
                    .map_err(|e| inconsistent(format!("completed move: {e}")))?;
                self.position.play_unchecked(mv);
                self.moves.push(m.clone());
                self.provisional = None;
            }
            Some(Kind::Ended(end)) => {
                self.result = Some((end.result(), end.termination()));
                self.provisional = None;
            }
        }
        Ok(())
    }

    pub(crate) fn parse_uci(&self, uci: &str) -> Result<Move, String> {
        let parsed: UciMove = uci.parse().map_err(|e| format!("{uci:?}: {e}"))?;
        parsed
            .to_move(&self.position)
            .map_err(|e| format!("{uci} is not legal in {}: {e}", fen_of(&self.position)))
    }

    pub fn game_id(&self) -> &str {
        &self.game_id
    }

    pub fn info(&self) -> &GameStarted {
        &self.info
    }

    pub fn board_id(&self) -> &str {
        &self.info.board_id
    }

    /// The position after the completed moves.
    pub fn position(&self) -> &Chess {
        &self.position
    }

    pub fn moves(&self) -> &[MoveCompleted] {
        &self.moves
    }

    pub fn provisional(&self) -> Option<&MoveProvisional> {
        self.provisional.as_ref().map(|p| &p.event)
    }

    pub fn result(&self) -> Option<(GameResult, Termination)> {
        self.result
    }

    pub fn is_over(&self) -> bool {
        self.result.is_some()
    }

    pub fn last_game_seq(&self) -> u64 {
        self.last_game_seq
    }

    pub fn chain_head(&self) -> &[u8; 32] {
        &self.chain_head
    }

    /// The highest `device_seq` of the board that an event of this game rests on.
    pub fn last_device_seq(&self) -> u64 {
        self.last_device_seq
    }

    pub fn turn(&self) -> Color {
        self.position.turn()
    }

    /// The state as the API shows it.
    pub fn to_state(&self) -> events::GameState {
        let (result, termination) = self
            .result
            .unwrap_or((GameResult::Unspecified, Termination::Unspecified));
        events::GameState {
            game_id: self.game_id.clone(),
            info: Some(self.info.clone()),
            moves: self.moves.clone(),
            provisional: self.provisional().cloned(),
            fen: fen_of(&self.position),
            result: result as i32,
            termination: termination as i32,
            last_game_seq: self.last_game_seq,
            chain_head: self.chain_head.to_vec(),
        }
    }

    /// The PGN result token.
    pub fn result_token(&self) -> &'static str {
        match self.result.map(|r| r.0) {
            Some(GameResult::WhiteWins) => "1-0",
            Some(GameResult::BlackWins) => "0-1",
            Some(GameResult::Draw) => "1/2-1/2",
            _ => "*",
        }
    }
}

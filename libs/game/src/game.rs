//! Game state, the start command, recording new events and folding records.

use prost::Message;
use shakmaty::{CastlingMode, Chess, Color, EnPassantMode, Move, Position, fen::Fen, uci::UciMove};

use boardcast_inference::Inference;
use boardcast_rules::{
    illegal::IllegalMoveTally,
    repetition::RepetitionTracker,
    ruleset::{Edition, Period, RuleSet, Supervision, TimeControl as RulesTimeControl},
};

use crate::chain::{ChainError, GENESIS_HASH, HASH_CHAIN_VERSION, chain_hash};
use crate::clock::{CURRENT_INTERPRETATION, ClockSides, PressDoubt};
use crate::device::{ClockReading, ClockRun};
use crate::events::{
    self, GameEvent, GameEventRecord, GameResult, GameStarted, MoveCompleted, MoveProvisional,
    Provenance, Side, Source, Termination, game_event::Kind,
};
use crate::signing::{RecordSigner, SignatureError, TrustedKeys};
use crate::terms;

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
    #[error(transparent)]
    Signature(#[from] SignatureError),
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

/// A move on the board that the clock has not confirmed yet.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Provisional {
    pub(crate) mv: Move,
    pub(crate) event: MoveProvisional,
    pub(crate) device_seqs: Vec<u64>,
}

/// A completed move with what it rests on.
#[derive(Debug, Clone, PartialEq)]
pub struct CompletedMove {
    pub event: MoveCompleted,
    pub source: Source,
    /// The `game_seq` of its event.
    pub game_seq: u64,
    /// Device time of the observation that completed it (0 = unknown).
    pub device_time_unix_ms: i64,
}

/// The state of one game, as folded from its log.
/// An arbiter action as its request recorded it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    pub game_seq: u64,
    pub actor: String,
    pub action: crate::events::ArbiterAction,
}

#[derive(Debug, Clone)]
pub struct Game {
    pub(crate) game_id: String,
    pub(crate) info: GameStarted,
    pub(crate) rules: RuleSet,
    pub(crate) start: Chess,
    pub(crate) position: Chess,
    pub(crate) moves: Vec<CompletedMove>,
    /// Moves seen on the board after the completed ones, in order, not yet confirmed by a press:
    /// usually one, more when a press was missed (pressed before the piece landed) or when moves
    /// were reconstructed; the next press completes them all.
    pub(crate) provisional: Vec<Provisional>,
    pub(crate) result: Option<(GameResult, Termination)>,
    pub(crate) last_game_seq: u64,
    pub(crate) chain_head: [u8; 32],
    /// The board's last observation accounted for: applied, or recorded as missing.
    pub(crate) last_device_seq: u64,
    /// The board's observations that never arrived, as recorded.
    pub(crate) missing: Vec<events::ObservationsMissing>,
    /// Move inference over the board's recorded observations.
    pub(crate) inference: Inference,
    /// The clock's running side at the last recorded reading, read with `clock_sides`
    /// (interpretation 0: the last side that ran; a stopped clock is passed over).
    pub(crate) clock_running: ClockRun,
    /// `GameStarted.interpretation`: how this game's observations are read.
    pub(crate) interpretation: u32,
    /// Which clock display is White's, as the log established it.
    pub(crate) clock_sides: ClockSides,
    /// The last recorded clock reading as its source labelled it.
    pub(crate) last_clock: Option<ClockReading>,
    /// The clock has stood (stopped, as for turning it round) since the last completed move.
    pub(crate) clock_stood: bool,
    /// The board has shown the game's start placement (either way round) since the game was
    /// set up: an irregular placement after that is play, not a wrong set-up.
    pub(crate) start_seen: bool,
    /// Presses in doubt that no later press has settled, in order.
    pub(crate) doubts: Vec<PressDoubt>,
    /// The ply after which the log records that whether the position is dead was not
    /// determined: recorded once per game, so that the arbiter is told once.
    pub(crate) dead_undetermined_at: Option<u32>,
    /// What of the board's set-up differs from what the game expects, one per aspect.
    pub(crate) setup_mismatches: Vec<events::SetupMismatch>,
    pub(crate) repetition: RepetitionTracker,
    pub(crate) illegal_tally: IllegalMoveTally,
    /// Plies whose moves were reconstructed rather than seen.
    pub(crate) reconstructed: std::collections::BTreeSet<u32>,
    /// The board shows a placement that matches no legal continuation.
    pub(crate) irregular: Option<String>,
    /// Illegal moves recorded, and the arbiter's decision on each.
    pub(crate) illegal_moves: Vec<IllegalMoveEntry>,
    /// Arbiter actions in words, with the number of completed moves when each was entered.
    pub(crate) arbiter_notes: Vec<(u32, String)>,
    /// Draw offers, by the number of completed moves when each was made.
    pub(crate) draw_offers: Vec<u32>,
    /// Flags shown by the clock at the last recorded reading (White, Black), read with
    /// `clock_sides`.
    pub(crate) flags: (bool, bool),
    /// Lifts and placements recorded since the last completed move, with their `game_seq`.
    pub(crate) touches: Vec<(u64, boardcast_rules::touch::Touch)>,
    /// The board as its gateway last reported it.
    pub(crate) board: BoardStatus,
    /// Changes to the clocks the time control does not predict, with the number of completed
    /// moves and the `game_seq` when each was made, in that order.
    pub(crate) clock_changes: Vec<(usize, u64, ClockChange)>,
    /// Observations of the board up to this one were sent before the game was set up
    /// (`GameStarted.board_seq_before`).
    pub(crate) board_seq_floor: u64,
    /// The request that set the game up (`CreateGame`/`PairRound`), so that its retry is told
    /// from another request for the same board.
    pub(crate) started_by_request: String,
    /// Arbiter actions by the client-chosen id of the request that recorded them, so that a retry
    /// records nothing twice.
    pub(crate) requests: std::collections::BTreeMap<String, RecordedRequest>,
    /// Records folded with and without a signature: a log written before signing is marked
    /// unsigned, and once a game has a signed record an unsigned one is refused.
    pub(crate) signed_records: u64,
    pub(crate) unsigned_records: u64,
}

/// A change to the clocks made by the arbiter, which the next readings reflect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ClockChange {
    /// Time added (or taken, when negative), e.g. for the opponent's illegal move.
    Added { white_ms: i64, black_ms: i64 },
    /// Clocks set to a new time.
    Set {
        white: Option<u64>,
        black: Option<u64>,
    },
    /// The position was restored (Article 7), with the clocks the arbiter set for it.
    Restored {
        white: Option<u64>,
        black: Option<u64>,
    },
}

/// The physical board's state as its gateway reported it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BoardStatus {
    pub state: crate::device::DeviceState,
    pub battery_percent: Option<u32>,
}

/// An illegal move in the record and what the arbiter decided about its penalty.
#[derive(Debug, Clone, PartialEq)]
pub struct IllegalMoveEntry {
    pub game_seq: u64,
    pub event: crate::events::IllegalMoveRecorded,
    /// `Some(true)` confirmed, `Some(false)` rejected, `None` not decided yet.
    pub decided: Option<bool>,
    /// Completed moves when it was recorded.
    pub completed_moves: usize,
}

/// The id of the game of a pairing: `<tournament>-r<round>-b<board>`.
pub fn game_id_for(tournament_id: &str, round: u32, board_number: u32) -> String {
    format!("{tournament_id}-r{round}-b{board_number}")
}

/// Bounds of a time control: more is a typo or hostile (and keeps clock arithmetic in range).
const MAX_PERIODS: usize = 10;
const MAX_PERIOD_MS: u64 = 24 * 3_600_000;
const MAX_BONUS_MS: u64 = 3_600_000;
const MAX_PERIOD_MOVES: u32 = 1_000;

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

/// Checks a tournament id (it becomes part of game ids and NATS subjects).
pub fn validate_tournament_id(tournament_id: &str) -> Result<(), GameError> {
    validate_id("tournament id", tournament_id)
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

/// The rule set a game is played under: its edition and the category of its time control.
/// Supervision is taken as adequate until the pairing says otherwise.
pub fn rules_of(info: &GameStarted) -> Result<RuleSet, GameError> {
    let edition: Edition = if info.edition.is_empty() {
        Edition::default()
    } else {
        info.edition
            .parse()
            .map_err(|e| GameError::InvalidGame(format!("{e}")))?
    };
    let periods = info
        .time_control
        .as_ref()
        .map(|tc| {
            tc.periods
                .iter()
                .map(|p| Period {
                    moves: p.moves,
                    base_ms: p.base_ms,
                    increment_ms: p.increment_ms,
                    delay_ms: p.delay_ms,
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(RuleSet::from_time_control(
        edition,
        &RulesTimeControl { periods },
        Supervision::Adequate,
    ))
}

fn parse_uci_in(position: &Chess, uci: &str) -> Result<Move, String> {
    let parsed: UciMove = uci.parse().map_err(|e| format!("{uci:?}: {e}"))?;
    parsed
        .to_move(position)
        .map_err(|e| format!("{uci} is not legal in {}: {e}", fen_of(position)))
}

/// FEN of a position, with en passant only where it is legal.
pub fn fen_of(pos: &Chess) -> String {
    Fen::from_position(pos, EnPassantMode::Legal).to_string()
}

impl Game {
    /// Decides the start of a game: validates the pairing and returns its `GameStarted` event,
    /// recorded as set up by `actor` with the client's `request_id`.
    pub fn decide_start(
        info: &GameStarted,
        actor: &str,
        request_id: &str,
    ) -> Result<(String, NewEvent), GameError> {
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
        // Numbers no event uses are a typo or hostile, and arithmetic on clocks stays in range.
        if tc.periods.len() > MAX_PERIODS {
            return Err(GameError::InvalidGame(format!(
                "a time control of {} periods; at most {MAX_PERIODS}",
                tc.periods.len()
            )));
        }
        for (i, p) in tc.periods.iter().enumerate() {
            let absurd = if p.base_ms > MAX_PERIOD_MS {
                Some(format!("{} h of base time", p.base_ms / 3_600_000))
            } else if p.increment_ms > MAX_BONUS_MS || p.delay_ms > MAX_BONUS_MS {
                Some("an increment or delay of more than an hour".to_owned())
            } else if p.moves > MAX_PERIOD_MOVES {
                Some(format!("{} moves", p.moves))
            } else {
                None
            };
            if let Some(what) = absurd {
                return Err(GameError::InvalidGame(format!(
                    "time control period {}: {what} is not a chess time control",
                    i + 1
                )));
            }
        }
        start_position(info)?;
        rules_of(info)?;
        let game_id = game_id_for(&info.tournament_id, info.round, info.board_number);
        Ok((
            game_id,
            NewEvent {
                kind: Kind::Started(GameStarted {
                    interpretation: CURRENT_INTERPRETATION,
                    ..info.clone()
                }),
                provenance: Provenance {
                    source: Source::Operator as i32,
                    actor: actor.to_owned(),
                    request_id: request_id.to_owned(),
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

    fn from_first_checked(record: &GameEventRecord, event: GameEvent) -> Result<Game, GameError> {
        if record.prev_hash.as_slice() != GENESIS_HASH.as_slice() || event.game_seq != 1 {
            return Err(ChainError::BrokenLink {
                game_seq: event.game_seq,
            }
            .into());
        }
        let started_by_request = event
            .provenance
            .as_ref()
            .map(|p| p.request_id.clone())
            .unwrap_or_default();
        let Some(Kind::Started(info)) = event.kind else {
            return Err(GameError::NotStarted);
        };
        let position = start_position(&info)?;
        let rules = rules_of(&info)?;
        let board_seq_floor = info.board_seq_before;
        let interpretation = info.interpretation;
        let mut head = [0u8; 32];
        head.copy_from_slice(&record.hash);
        Ok(Game {
            game_id: event.game_id,
            inference: Inference::new(position.clone()),
            repetition: RepetitionTracker::new(rules.edition, &position, 1),
            rules,
            info,
            start: position.clone(),
            position,
            moves: Vec::new(),
            provisional: Vec::new(),
            result: None,
            last_game_seq: 1,
            chain_head: head,
            last_device_seq: 0,
            missing: Vec::new(),
            clock_running: ClockRun::Unspecified,
            interpretation,
            clock_sides: ClockSides::default(),
            last_clock: None,
            clock_stood: false,
            start_seen: false,
            doubts: Vec::new(),
            dead_undetermined_at: None,
            setup_mismatches: Vec::new(),
            illegal_tally: IllegalMoveTally::default(),
            reconstructed: Default::default(),
            irregular: None,
            illegal_moves: Vec::new(),
            arbiter_notes: Vec::new(),
            draw_offers: Vec::new(),
            flags: (false, false),
            touches: Vec::new(),
            board: BoardStatus::default(),
            clock_changes: Vec::new(),
            board_seq_floor,
            started_by_request,
            requests: Default::default(),
            signed_records: u64::from(!record.signature.is_empty()),
            unsigned_records: u64::from(record.signature.is_empty()),
        })
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
        keys.check(record, self.last_game_seq + 1, self.is_signed())?;
        self.apply(record)
    }

    /// Whether the log holds a signed record (from then on every record must be signed).
    pub fn is_signed(&self) -> bool {
        self.signed_records > 0
    }

    /// Records folded without a signature: those of a log written before records were signed.
    pub fn unsigned_records(&self) -> u64 {
        self.unsigned_records
    }

    /// The client's id of the request that set the game up (empty for older logs).
    pub fn started_by_request(&self) -> &str {
        &self.started_by_request
    }

    /// Folds the next record of this game into its state, checking sequence and hash chain.
    pub fn apply(&mut self, record: &GameEventRecord) -> Result<(), GameError> {
        let event = Self::open_record(record)?;
        self.apply_checked(record, &event)
    }

    /// `apply` after `open_record`: `event` is `record`'s, its hash checked.
    fn apply_checked(
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
        self.evolve(event)?;
        self.last_game_seq = event.game_seq;
        self.chain_head.copy_from_slice(&record.hash);
        if record.signature.is_empty() {
            self.unsigned_records += 1;
        } else {
            self.signed_records += 1;
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
            Some(Kind::ObservationRecorded(recorded)) => {
                let observation = recorded
                    .observation
                    .as_ref()
                    .ok_or_else(|| inconsistent("recorded observation is empty".into()))?;
                self.last_device_seq = self.last_device_seq.max(observation.device_seq);
                // Same input, same engine state: the outputs were recorded as their own events.
                if let Some(input) = self.inference_input(observation) {
                    self.inference.observe(input);
                }
                if let Some(crate::device::observation::Kind::Placement(p)) = &observation.kind
                    && let Ok(board) = p.placement.parse::<shakmaty::Board>()
                {
                    let mut rotated = board.clone();
                    rotated.rotate_180();
                    self.start_seen |= [board, rotated].contains(self.start.board());
                }
                if let Some(touch) = crate::observation::touch_of(observation) {
                    self.touches.push((event.game_seq, touch));
                }
                if let Some(crate::device::observation::Kind::Clock(c)) = &observation.kind {
                    self.last_clock = Some(*c);
                    self.follow_clock();
                }
            }
            Some(Kind::MoveProvisional(p)) => {
                let index = self
                    .line_index(p.ply)
                    .ok_or_else(|| inconsistent(format!("provisional move for ply {}", p.ply)))?;
                self.provisional.truncate(index);
                let mv = parse_uci_in(&self.line_position(), &p.uci)
                    .map_err(|e| inconsistent(format!("provisional move: {e}")))?;
                let device_seqs = event
                    .provenance
                    .as_ref()
                    .map(|p| p.device_seqs.clone())
                    .unwrap_or_default();
                self.provisional.push(Provisional {
                    mv,
                    event: p.clone(),
                    device_seqs,
                });
            }
            Some(Kind::ProvisionalWithdrawn(w)) => {
                if let Some(index) = self.line_index(w.ply) {
                    self.provisional.truncate(index);
                }
            }
            Some(Kind::MoveCompleted(m)) => {
                let mv = self
                    .parse_uci(&m.uci)
                    .map_err(|e| inconsistent(format!("completed move: {e}")))?;
                self.position.play_unchecked(mv);
                self.repetition
                    .play(mv, event.game_seq)
                    .map_err(|e| inconsistent(format!("completed move: {e}")))?;
                let source = event
                    .provenance
                    .as_ref()
                    .map(|p| p.source())
                    .unwrap_or(Source::Unspecified);
                self.moves.push(CompletedMove {
                    event: m.clone(),
                    source,
                    game_seq: event.game_seq,
                    device_time_unix_ms: event
                        .provenance
                        .as_ref()
                        .map(|p| p.device_time_unix_ms)
                        .unwrap_or(0),
                });
                // The line goes on if this was its first move; otherwise (an arbiter entered
                // another move) what the board showed no longer follows the game.
                if self.provisional.first().is_some_and(|first| first.mv == mv) {
                    self.provisional.remove(0);
                } else {
                    self.provisional.clear();
                }
                self.irregular = None;
                self.touches.clear();
                self.clock_stood = false;
                // A move completed without the engine's confirmation (a mate needs no press, an
                // arbiter enters a move): the engine follows the game, not the other way round.
                if self.inference.confirmed_plies() as usize != self.moves.len() {
                    self.sync_inference()
                        .map_err(|e| inconsistent(format!("following the completed moves: {e}")))?;
                }
            }
            Some(Kind::Ended(end)) => {
                self.result = Some((end.result(), end.termination()));
                self.provisional.clear();
            }
            Some(Kind::ClockSides(sides)) => {
                self.clock_sides = ClockSides::from_event(sides);
                // The last reading (the one before the press that showed the sides) reads
                // differently now.
                self.follow_clock();
            }
            Some(Kind::SetupMismatch(mismatch)) => {
                self.setup_mismatches
                    .retain(|m| m.aspect != mismatch.aspect);
                self.setup_mismatches.push(mismatch.clone());
            }
            Some(Kind::SetupMismatchCleared(cleared)) => {
                self.setup_mismatches.retain(|m| m.aspect != cleared.aspect)
            }
            Some(Kind::PressInDoubt(doubt)) => {
                // Recorded right after the press's observation.
                let reading = self.last_clock.ok_or_else(|| {
                    inconsistent("a press in doubt without a clock reading".into())
                })?;
                self.doubts.push(PressDoubt {
                    game_seq: event.game_seq,
                    event: doubt.clone(),
                    reading,
                    device_seq: self.last_device_seq,
                    // The position the press's ply was to be played in: after the completed
                    // moves and those the board showed before it.
                    position: self.line_position(),
                });
            }
            Some(Kind::PressSettled(settled)) => {
                self.doubts.retain(|d| d.game_seq != settled.doubt_game_seq)
            }
            Some(Kind::DeadPositionUndetermined(noted)) => {
                self.dead_undetermined_at.get_or_insert(noted.ply);
            }
            Some(Kind::Touch(_))
            | Some(Kind::TouchMove(_))
            | Some(Kind::ClockAlert(_))
            | Some(Kind::ClaimJudged(_)) => {}
            Some(Kind::BoardStatus(status)) => {
                self.board = BoardStatus {
                    state: status.state(),
                    battery_percent: status.battery_percent,
                };
            }
            Some(Kind::Reconstructed(r)) => {
                // The board jumped over these moves: they join the line, unconfirmed, and the
                // next press completes them with the rest.
                let index = self.line_index(r.first_ply).ok_or_else(|| {
                    inconsistent(format!("moves reconstructed from ply {}", r.first_ply))
                })?;
                self.provisional.truncate(index);
                for (i, (uci, san)) in r.uci.iter().zip(&r.san).enumerate() {
                    let ply = r.first_ply + i as u32;
                    let mv = parse_uci_in(&self.line_position(), uci)
                        .map_err(|e| inconsistent(format!("reconstructed move: {e}")))?;
                    self.provisional.push(Provisional {
                        mv,
                        event: MoveProvisional {
                            ply,
                            uci: uci.clone(),
                            san: san.clone(),
                            replaces_uci: String::new(),
                        },
                        device_seqs: Vec::new(),
                    });
                    self.reconstructed.insert(ply);
                }
            }
            Some(Kind::ObservationsMissing(missing)) => {
                self.last_device_seq = self.last_device_seq.max(missing.last_device_seq);
                self.missing.push(missing.clone());
            }
            Some(Kind::Irregularity(i)) => self.irregular = Some(i.placement.clone()),
            Some(Kind::IrregularityCleared(_)) => self.irregular = None,
            Some(Kind::IllegalMove(illegal)) => {
                match terms::offender(illegal) {
                    Side::White => self.illegal_tally.white = illegal.offender_count,
                    Side::Black => self.illegal_tally.black = illegal.offender_count,
                    Side::Unspecified => {
                        return Err(inconsistent(format!(
                            "illegal move by {:?}",
                            illegal.offender
                        )));
                    }
                }
                // From interpretation 1 an illegal move can be recorded when a later press settles
                // it: it was made after the moves before its ply.
                let completed_moves = if self.interpretation >= 1 {
                    (illegal.ply as usize).saturating_sub(1)
                } else {
                    self.moves.len()
                };
                self.illegal_moves.push(IllegalMoveEntry {
                    game_seq: event.game_seq,
                    event: illegal.clone(),
                    decided: None,
                    completed_moves,
                });
            }
            Some(Kind::Arbiter(action)) => {
                let actor = event
                    .provenance
                    .as_ref()
                    .map(|p| p.actor.as_str())
                    .unwrap_or_default();
                if let Some(request_id) = event.provenance.as_ref().map(|p| &p.request_id)
                    && !request_id.is_empty()
                {
                    self.requests.insert(
                        request_id.clone(),
                        RecordedRequest {
                            game_seq: event.game_seq,
                            actor: actor.to_owned(),
                            action: action.clone(),
                        },
                    );
                }
                let ply = self.moves.len() as u32;
                if let Some(crate::events::arbiter_action::Action::DrawOffer(_)) = &action.action {
                    self.draw_offers.push(ply);
                } else if let Some(text) = crate::arbiter::describe(action) {
                    self.arbiter_notes.push((ply, format!("{text} ({actor})")));
                }
                if let Some(crate::events::arbiter_action::Action::Clocks(c)) = &action.action {
                    let completed = self.moves.len();
                    self.clock_changes.push((
                        completed,
                        event.game_seq,
                        ClockChange::Added {
                            white_ms: c.white_added_ms,
                            black_ms: c.black_added_ms,
                        },
                    ));
                    if c.white_remaining_ms.is_some() || c.black_remaining_ms.is_some() {
                        self.clock_changes.push((
                            completed,
                            event.game_seq,
                            ClockChange::Set {
                                white: c.white_remaining_ms,
                                black: c.black_remaining_ms,
                            },
                        ));
                    }
                }
                if let Some(crate::events::arbiter_action::Action::Penalty(decision)) =
                    &action.action
                    && let Some(entry) = self
                        .illegal_moves
                        .iter_mut()
                        .find(|e| e.game_seq == decision.illegal_move_game_seq)
                {
                    entry.decided = Some(decision.confirmed);
                    // A confirmed penalty's time is given to the opponent on the clock, as a rule
                    // when the illegal move is dealt with at the board: it counts from then,
                    // before whatever the arbiter did to the clocks later. (After a restore to
                    // before the illegal move, the clocks set with the restore govern.)
                    let bonus = entry.event.opponent_bonus_ms as i64;
                    if decision.confirmed && bonus > 0 && entry.completed_moves <= self.moves.len()
                    {
                        let (white_ms, black_ms) = match terms::offender(&entry.event) {
                            Side::White => (0, bonus),
                            _ => (bonus, 0),
                        };
                        self.clock_changes.push((
                            entry.completed_moves,
                            entry.game_seq,
                            ClockChange::Added { white_ms, black_ms },
                        ));
                        self.clock_changes
                            .sort_by_key(|(completed, game_seq, _)| (*completed, *game_seq));
                    }
                    // A rejected penalty does not count towards the next one.
                    if !decision.confirmed
                        && terms::rejection_uncounts(terms::penalty(&entry.event))
                    {
                        match terms::offender(&entry.event) {
                            Side::White => {
                                self.illegal_tally.white =
                                    self.illegal_tally.white.saturating_sub(1)
                            }
                            _ => {
                                self.illegal_tally.black =
                                    self.illegal_tally.black.saturating_sub(1)
                            }
                        }
                    }
                }
            }
            Some(Kind::PositionRestored(restored)) => {
                let ply = restored.ply as usize;
                if ply > self.moves.len() {
                    return Err(inconsistent(format!("cannot restore ply {ply}")));
                }
                self.moves.truncate(ply);
                // The rulings made on the plies taken back stay in the score, at the ply the game
                // goes on from: they are part of what happened.
                for (note_ply, _) in &mut self.arbiter_notes {
                    *note_ply = (*note_ply).min(restored.ply);
                }
                // Presses in doubt about plies the restore took back are left for the arbiter's
                // ruling that restored the position: no later press settles them.
                self.doubts.retain(|d| d.event.ply as usize <= ply);
                self.clock_changes
                    .retain(|(completed, _, _)| *completed <= ply);
                self.clock_changes.push((
                    ply,
                    event.game_seq,
                    ClockChange::Restored {
                        white: restored.white_remaining_ms,
                        black: restored.black_remaining_ms,
                    },
                ));
                self.touches.clear();
                self.repetition.truncate(restored.ply);
                self.position = self.repetition.position().clone();
                self.provisional.clear();
                self.irregular = None;
                self.sync_inference()
                    .map_err(|e| inconsistent(format!("restoring ply {ply}: {e}")))?;
            }
        }
        Ok(())
    }

    /// What the position says if `mv` is completed now (mate, stalemate, dead position, and
    /// from 2014 fivefold repetition and seventy-five moves), as events: the end, or the note
    /// for the arbiter that whether the position is dead was not determined.
    pub(crate) fn verdict_after(&self, mv: Move, ply: u32) -> Vec<Kind> {
        let mut history = self.repetition.clone();
        if history.play(mv, 0).is_err() {
            return Vec::new();
        }
        self.board_verdict_events(&history, ply)
    }

    /// The events [`boardcast_rules::outcome::judge_board`]'s verdict on `history` after `ply`
    /// completed moves calls for.
    pub(crate) fn board_verdict_events(&self, history: &RepetitionTracker, ply: u32) -> Vec<Kind> {
        use crate::arbiter::ended_event as ended;
        use boardcast_rules::dead::{Answer, Budget, dead_position_within};
        use boardcast_rules::outcome::{BoardVerdict, dead_position_reached, judge_board};
        match judge_board(&self.rules, history) {
            BoardVerdict::Ends(end) => vec![ended(&end)],
            // Before the arbiter is told, the thorough analysis gets its chance (once per game:
            // after the note, play simply goes on).
            BoardVerdict::DeadUndetermined { article } if self.dead_undetermined_at.is_none() => {
                match dead_position_within(history.position(), &Budget::thorough()) {
                    Answer::Yes => vec![ended(&dead_position_reached(&self.rules))],
                    Answer::No => Vec::new(),
                    Answer::Undetermined => vec![Kind::DeadPositionUndetermined(
                        events::DeadPositionUndetermined {
                            ply,
                            article: article.to_owned(),
                        },
                    )],
                }
            }
            BoardVerdict::DeadUndetermined { .. } | BoardVerdict::Continues => Vec::new(),
        }
    }

    /// The clock's running side and flags from the last recorded reading, read with the sides.
    fn follow_clock(&mut self) {
        let Some(raw) = self.last_clock else {
            return;
        };
        let reading = self.clock_sides.read(&raw);
        self.flags = (reading.white_flag, reading.black_flag);
        match (self.interpretation, reading.running()) {
            (0, running @ (ClockRun::White | ClockRun::Black)) => self.clock_running = running,
            // Interpretation 0: a paused clock is not a press when it runs again, so only White
            // and Black count.
            (0, _) => {}
            (_, running) => {
                self.clock_stood |= running == ClockRun::Stopped;
                self.clock_running = running;
            }
        }
    }

    /// Makes the move inference follow the game's completed moves.
    fn sync_inference(&mut self) -> Result<(), String> {
        let moves: Vec<Move> = self
            .moves
            .iter()
            .filter_map(|m| m.event.uci.parse::<UciMove>().ok())
            .scan(self.start.clone(), |pos, uci| {
                let mv = uci.to_move(pos).ok()?;
                pos.play_unchecked(mv);
                Some(mv)
            })
            .collect();
        self.inference
            .sync(self.start.clone(), &moves)
            .map_err(|e| e.to_string())
    }

    /// Arbiter actions in words, each with the number of completed moves when it was entered.
    pub fn arbiter_notes(&self) -> &[(u32, String)] {
        &self.arbiter_notes
    }

    /// Draw offers, by the number of completed moves when each was made.
    pub fn draw_offers(&self) -> &[u32] {
        &self.draw_offers
    }

    /// Illegal moves in the record with the arbiter's decisions.
    pub fn illegal_moves(&self) -> &[IllegalMoveEntry] {
        &self.illegal_moves
    }

    pub(crate) fn parse_uci(&self, uci: &str) -> Result<Move, String> {
        parse_uci_in(&self.position, uci)
    }

    /// Where a move of `ply` goes in the provisional line: right after the completed moves or
    /// after a provisional one (replacing what follows). `None` for a ply already completed or
    /// beyond the line.
    fn line_index(&self, ply: u32) -> Option<usize> {
        crate::observation::line_index(self.moves.len(), self.provisional.len(), ply)
    }

    /// The position after the completed moves and the provisional line.
    pub(crate) fn line_position(&self) -> Chess {
        let mut position = self.position.clone();
        for p in &self.provisional {
            position.play_unchecked(p.mv);
        }
        position
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

    /// The completed moves with what each rests on.
    pub fn completed_moves(&self) -> &[CompletedMove] {
        &self.moves
    }

    /// The completed moves.
    pub fn moves(&self) -> Vec<MoveCompleted> {
        self.moves.iter().map(|m| m.event.clone()).collect()
    }

    pub fn rules(&self) -> &RuleSet {
        &self.rules
    }

    /// Penalised illegal moves per player, as proposed so far.
    pub fn illegal_tally(&self) -> IllegalMoveTally {
        self.illegal_tally
    }

    /// The placement the board shows while it matches no legal continuation.
    pub fn irregular_placement(&self) -> Option<&str> {
        self.irregular.as_deref()
    }

    pub fn repetition(&self) -> &RepetitionTracker {
        &self.repetition
    }

    /// Every move seen after the completed ones and not confirmed yet, in order.
    pub fn provisional_line(&self) -> Vec<&MoveProvisional> {
        self.provisional.iter().map(|p| &p.event).collect()
    }

    /// The next move to be completed, as the board shows it.
    pub fn provisional(&self) -> Option<&MoveProvisional> {
        self.provisional.first().map(|p| &p.event)
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

    /// The board as its gateway last reported it.
    pub fn board_status(&self) -> BoardStatus {
        self.board
    }

    /// The board's last observation this game has accounted for: its own last one, or the last
    /// one sent before the game was set up.
    pub fn board_seq_accounted(&self) -> u64 {
        self.last_device_seq.max(self.board_seq_floor)
    }

    /// The board's last observation applied to this game or recorded as missing.
    pub fn last_device_seq(&self) -> u64 {
        self.last_device_seq
    }

    /// The board's observations that never arrived, as recorded.
    pub fn missing_observations(&self) -> &[events::ObservationsMissing] {
        &self.missing
    }

    /// What of the board's set-up differs from what the game expects.
    pub fn setup_mismatches(&self) -> &[events::SetupMismatch] {
        &self.setup_mismatches
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
            moves: self.moves(),
            provisional: self.provisional().cloned(),
            provisional_line: self.provisional_line().into_iter().cloned().collect(),
            missing_observations: self.missing.clone(),
            clock_sides: (self.clock_sides.basis != events::ClockSidesBasis::Unspecified)
                .then(|| self.clock_sides.to_event()),
            setup_mismatches: self.setup_mismatches.clone(),
            presses_in_doubt: self.doubts.iter().map(|d| d.game_seq).collect(),
            fen: fen_of(&self.position),
            result: result as i32,
            termination: termination as i32,
            last_game_seq: self.last_game_seq,
            chain_head: self.chain_head.to_vec(),
        }
    }

    /// The PGN result token.
    pub fn result_token(&self) -> &'static str {
        crate::pgn::result_token(self.result.map(|r| r.0))
    }
}

//! The state of one game as folded from its log, and the queries on it. Only `evolve`
//! changes it; the decisions read it.

use shakmaty::{Chess, Color, EnPassantMode, Move, Position, fen::Fen, uci::UciMove};

use boardcast_inference::Inference;
use boardcast_rules::{illegal::IllegalMoveTally, repetition::RepetitionTracker, ruleset::RuleSet};

use crate::chain::ChainError;
use crate::clock::{ClockSides, PressDoubt};
use crate::device::{ClockReading, ClockRun};
use crate::events::{
    self, GameResult, GameStarted, MoveCompleted, MoveProvisional, Source, Termination,
    game_event::Kind,
};
use crate::provisional::ProvisionalLine;
use crate::signing::SignatureError;

/// A completed move with what it rests on.
#[derive(Debug, Clone, PartialEq)]
pub struct CompletedMove {
    pub event: MoveCompleted,
    /// `event.uci` read in the position it was played in.
    pub mv: Move,
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
    /// `GameStarted.interpretation`: how this game's observations are read.
    pub(crate) interpretation: u32,
    pub(crate) start: Chess,
    /// The position after the completed moves.
    pub(crate) position: Chess,
    pub(crate) moves: Vec<CompletedMove>,
    /// Moves seen on the board after the completed ones, not yet confirmed by a press.
    pub(crate) provisional: ProvisionalLine,
    /// Plies whose moves were reconstructed rather than seen.
    pub(crate) reconstructed: std::collections::BTreeSet<u32>,
    /// Positions and move counters since the start, for repetitions and the fifty/75 moves.
    pub(crate) repetition: RepetitionTracker,
    /// Move inference over the board's recorded observations.
    pub(crate) inference: Inference,
    pub(crate) result: Option<(GameResult, Termination)>,
    /// A move was completed or reconstructed, an illegal move recorded or a result given: the
    /// game has begun, whatever was taken back since (see [`Game::has_begun`]).
    pub(crate) begun: bool,
    pub(crate) record: RecordHead,
    pub(crate) board: BoardRecord,
    pub(crate) clock: ClockState,
    pub(crate) rulings: Rulings,
    /// What the dead-position analysis answered for the game's last positions, for the next
    /// move's question (interpretation 4); shared by the copies a decision makes.
    pub(crate) dead_answers: boardcast_rules::dead::GameAnswers,
}

/// Where the game's record stands.
#[derive(Debug, Clone, Default)]
pub(crate) struct RecordHead {
    pub(crate) last_game_seq: u64,
    pub(crate) chain_head: [u8; 32],
    /// Records folded with and without a signature: a log written before signing is marked
    /// unsigned, and once a game has a signed record an unsigned one is refused.
    pub(crate) signed: u64,
    pub(crate) unsigned: u64,
    /// The request that set the game up (`CreateGame`/`PairRound`), so that its retry is told
    /// from another request for the same board.
    pub(crate) started_by_request: String,
    /// Arbiter actions by the client-chosen id of the request that recorded them, so that a retry
    /// records nothing twice.
    pub(crate) requests: std::collections::BTreeMap<String, RecordedRequest>,
    /// The requests that revised the set-up, so that a retry (late, after a newer revision)
    /// revises nothing.
    pub(crate) revisions: std::collections::BTreeSet<String>,
}

/// The physical board as the log knows it.
#[derive(Debug, Clone, Default)]
pub(crate) struct BoardRecord {
    /// As its gateway last reported it.
    pub(crate) status: BoardStatus,
    /// Its last observation accounted for: applied, or recorded as missing.
    pub(crate) last_device_seq: u64,
    /// Its observations up to this one were sent before the game was set up
    /// (`GameStarted.board_seq_before`).
    pub(crate) seq_floor: u64,
    /// Its observations that never arrived, as recorded.
    pub(crate) missing: Vec<events::ObservationsMissing>,
    /// Whether a clock is connected to it, as its last status that said so.
    pub(crate) clock_connected: Option<bool>,
    /// It has shown the game's start placement (either way round) since the game was set up:
    /// an irregular placement after that is play, not a wrong set-up.
    pub(crate) start_seen: bool,
    /// Lifts and placements recorded since the last completed move, with their `game_seq`.
    pub(crate) touches: Vec<(u64, boardcast_rules::touch::TimedTouch)>,
    /// It shows a placement that matches no legal continuation.
    pub(crate) irregular: Option<String>,
    /// What of its set-up differs from what the game expects, one per aspect.
    pub(crate) setup_mismatches: Vec<events::SetupMismatch>,
}

/// The clock as the log knows it.
#[derive(Debug, Clone, Default)]
pub(crate) struct ClockState {
    /// Which display is White's, as the log established it.
    pub(crate) sides: ClockSides,
    /// The running side at the last recorded reading, read with `sides` (interpretation 0: the
    /// last side that ran; a stopped clock is passed over).
    pub(crate) running: ClockRun,
    /// The last recorded reading as its source labelled it.
    pub(crate) last_reading: Option<ClockReading>,
    /// The device time of that reading: a move completed without a press is given the clock
    /// counted down from it.
    pub(crate) last_reading_at_ms: i64,
    /// It has stood (stopped, as for turning it round) since the last completed move.
    pub(crate) stood: bool,
    /// Flags shown at the last recorded reading (White, Black), read with `sides`.
    pub(crate) flags: (bool, bool),
    /// A recorded reading has shown it running in this game: a flag it showed before is left
    /// from an earlier game (interpretation 8).
    pub(crate) ran: bool,
    /// Changes to the clocks the time control does not predict, with the number of completed
    /// moves and the `game_seq` when each was made, in that order.
    pub(crate) changes: Vec<(usize, u64, ClockChange)>,
    /// Presses in doubt that no later press has settled, in order.
    pub(crate) doubts: Vec<PressDoubt>,
    /// The displays told as set wrongly before the first move, with what each showed: told
    /// once for what it shows (`Game::clock_set_up_alerts`).
    pub(crate) set_up_told: Vec<(events::Side, u64)>,
    /// The completed moves a clock alert was raised for, as (ply, the move's `game_seq`): where
    /// the arbiter was told of a run of moves off the prediction by the same amount.
    pub(crate) alerted: Vec<(u32, u64)>,
    /// What those alerts found, as (ply, reported − expected): whether a period's time the clock
    /// did not add was made up since (interpretation 8).
    pub(crate) differences: Vec<(u32, i64)>,
    /// The completed moves when the game in play moved to another board's clock: readings at
    /// moves before are the other clock's, and predict nothing on this one.
    pub(crate) new_clock_at: Option<usize>,
}

/// What the rules and the arbiters noted along the way.
#[derive(Debug, Clone, Default)]
pub(crate) struct Rulings {
    /// Illegal moves recorded, and the arbiter's decision on each.
    pub(crate) illegal_moves: Vec<IllegalMoveEntry>,
    pub(crate) illegal_tally: IllegalMoveTally,
    /// Arbiter actions in words, with the number of completed moves when each was entered.
    pub(crate) arbiter_notes: Vec<(u32, String)>,
    /// Draw offers, by the number of completed moves when each was made.
    pub(crate) draw_offers: Vec<u32>,
    /// The ply after which the log records that whether the position is dead was not
    /// determined: recorded once per game, so that the arbiter is told once.
    pub(crate) dead_undetermined_at: Option<u32>,
}

impl ClockChange {
    /// Whether it changed White's clock (`white`) or Black's.
    pub(crate) fn touches(&self, white: bool) -> bool {
        match *self {
            ClockChange::Added { white_ms, black_ms } => {
                (if white { white_ms } else { black_ms }) != 0
            }
            ClockChange::Set { white: w, black: b }
            | ClockChange::Restored { white: w, black: b } => (if white { w } else { b }).is_some(),
        }
    }
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

/// A battery at or below this is reported to the arbiter once (a board that dies mid-game loses
/// its moves until it is back).
pub const LOW_BATTERY_PERCENT: u32 = 20;

/// The physical board's state as its gateway reported it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BoardStatus {
    pub state: crate::device::DeviceState,
    pub battery_percent: Option<u32>,
}

impl BoardStatus {
    /// The battery is at or below [`LOW_BATTERY_PERCENT`].
    pub fn battery_low(battery_percent: Option<u32>) -> bool {
        battery_percent.is_some_and(|p| p <= LOW_BATTERY_PERCENT)
    }
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

pub(crate) fn parse_uci_in(position: &Chess, uci: &str) -> Result<Move, String> {
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
    /// Whether the log holds a signed record (from then on every record must be signed).
    pub fn is_signed(&self) -> bool {
        self.record.signed > 0
    }

    /// Records folded without a signature: those of a log written before records were signed.
    pub fn unsigned_records(&self) -> u64 {
        self.record.unsigned
    }

    /// The client's id of the request that set the game up (empty for older logs).
    pub fn started_by_request(&self) -> &str {
        &self.record.started_by_request
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
        use crate::terms::ended_event as ended;
        use boardcast_rules::dead::{Answer, Budget, dead_position_within};
        use boardcast_rules::outcome::{
            BoardVerdict, DeadPositionCheck, dead_position_reached, judge_board,
        };
        let dead_check = if self.interpretation >= 4 {
            DeadPositionCheck::InTheGame(&self.dead_answers)
        } else {
            DeadPositionCheck::OnItsOwn
        };
        match judge_board(&self.rules, history, dead_check) {
            BoardVerdict::Ends(end) => vec![ended(&end)],
            // Before the arbiter is told, the thorough analysis gets its chance (once per game:
            // after the note, play simply goes on).
            BoardVerdict::DeadUndetermined { article }
                if self.rulings.dead_undetermined_at.is_none() =>
            {
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

    /// Arbiter actions in words, each with the number of completed moves when it was entered.
    pub fn arbiter_notes(&self) -> &[(u32, String)] {
        &self.rulings.arbiter_notes
    }

    /// Draw offers, by the number of completed moves when each was made.
    pub fn draw_offers(&self) -> &[u32] {
        &self.rulings.draw_offers
    }

    /// Illegal moves in the record with the arbiter's decisions.
    pub fn illegal_moves(&self) -> &[IllegalMoveEntry] {
        &self.rulings.illegal_moves
    }

    pub(crate) fn parse_uci(&self, uci: &str) -> Result<Move, String> {
        parse_uci_in(&self.position, uci)
    }

    /// The position after the completed moves and the provisional line.
    pub(crate) fn line_position(&self) -> Chess {
        self.provisional.position_after(&self.position)
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
        self.rulings.illegal_tally
    }

    /// The placement the board shows while it matches no legal continuation.
    pub fn irregular_placement(&self) -> Option<&str> {
        self.board.irregular.as_deref()
    }

    pub fn repetition(&self) -> &RepetitionTracker {
        &self.repetition
    }

    /// Every move seen after the completed ones and not confirmed yet, in order.
    pub fn provisional_line(&self) -> Vec<&MoveProvisional> {
        self.provisional.moves().iter().map(|p| &p.event).collect()
    }

    /// The next move to be completed, as the board shows it.
    pub fn provisional(&self) -> Option<&MoveProvisional> {
        self.provisional.moves().first().map(|p| &p.event)
    }

    pub fn result(&self) -> Option<(GameResult, Termination)> {
        self.result
    }

    pub fn is_over(&self) -> bool {
        self.result.is_some()
    }

    /// Whether the game has begun as its log knows it: a move was completed or reconstructed, an
    /// illegal move recorded or a result given, even if taken back since; or a move is seen on
    /// the board now (one tried before the round and taken back does not count). Until then
    /// what its observations are read with may be revised.
    pub fn has_begun(&self) -> bool {
        self.begun || !self.provisional.is_empty()
    }

    pub fn last_game_seq(&self) -> u64 {
        self.record.last_game_seq
    }

    pub fn chain_head(&self) -> &[u8; 32] {
        &self.record.chain_head
    }

    /// The board as its gateway last reported it.
    pub fn board_status(&self) -> BoardStatus {
        self.board.status
    }

    /// Whether a clock is connected to the board, as its last report that said so (`None`:
    /// none did).
    pub fn clock_connected(&self) -> Option<bool> {
        self.board.clock_connected
    }

    /// The board's last observation this game has accounted for: its own last one, or the last
    /// one sent before the game was set up.
    pub fn board_seq_accounted(&self) -> u64 {
        self.board.last_device_seq.max(self.board.seq_floor)
    }

    /// The board's last observation applied to this game or recorded as missing.
    pub fn last_device_seq(&self) -> u64 {
        self.board.last_device_seq
    }

    /// The board's observations that never arrived, as recorded.
    pub fn missing_observations(&self) -> &[events::ObservationsMissing] {
        &self.board.missing
    }

    /// What of the board's set-up differs from what the game expects.
    pub fn setup_mismatches(&self) -> &[events::SetupMismatch] {
        &self.board.setup_mismatches
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
            missing_observations: self.board.missing.clone(),
            clock_sides: (self.clock.sides.basis != events::ClockSidesBasis::Unspecified)
                .then(|| self.clock.sides.to_event()),
            setup_mismatches: self.board.setup_mismatches.clone(),
            presses_in_doubt: self.clock.doubts.iter().map(|d| d.game_seq).collect(),
            fen: fen_of(&self.position),
            result: result as i32,
            termination: termination as i32,
            last_game_seq: self.record.last_game_seq,
            chain_head: self.record.chain_head.to_vec(),
            // Known to the service that folded the game, not to the game.
            log_not_followed: None,
        }
    }

    /// The PGN result token.
    pub fn result_token(&self) -> &'static str {
        crate::terms::result_token(self.result.map_or(GameResult::Unspecified, |r| r.0))
    }
}

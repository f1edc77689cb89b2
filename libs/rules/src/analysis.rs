//! Whole-game analysis: every claim that became available, the automatic ends and the final
//! status, for a PGN game score or a FEN.
//!
//! Conventions (see also the crate README):
//! - ply N is the position after the N-th half-move; ply 0 is the start position.
//! - claims are listed for every ply after which the player to move could claim, once per
//!   (ply, kind, basis).
//! - threefold on the position: `occurrences` are the plies of every occurrence so far,
//!   including the current one. Threefold with an intended move: the plies of the earlier
//!   occurrences of the position(s) the qualifying move(s) would produce, followed by the
//!   would-be ply N + 1.
//! - fifty moves: `occurrences` holds the ply right after the last capture or pawn move when it is
//!   within the score, otherwise it is empty (the count started before the score).
//! - the analysis covers every move of the score, also after the game ended under the Laws;
//!   `ended_at_ply` says where it ended.

use serde::Serialize;
use shakmaty::{CastlingMode, Chess, Color, Move, Position, fen::Fen};

use crate::{
    claims::{self, ClaimBasis, ClaimKind},
    dead::{self, Answer, Unwinnability},
    moverules,
    outcome::EndReason,
    pgn::{self, PgnError, PgnGame},
    repetition::RepetitionTracker,
    ruleset::RuleSet,
};

/// A claim available after a ply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClaimPoint {
    pub ply: u32,
    pub kind: ClaimKind,
    pub basis: ClaimBasis,
    pub occurrences: Vec<u32>,
    /// Intended-move claims: the qualifying moves, in UCI.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub moves: Vec<String>,
}

/// An automatic game end reached after a ply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AutomaticKind {
    Fivefold,
    Seventyfive,
    DeadPosition,
}

/// The first ply at which an automatic end of a kind holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AutomaticPoint {
    pub ply: u32,
    pub kind: AutomaticKind,
    /// Fivefold: the plies of the occurrences. Otherwise empty.
    pub occurrences: Vec<u32>,
}

/// The analysis of one game.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GameAnalysis {
    pub white: String,
    pub black: String,
    pub round: String,
    pub edition: String,
    /// Half-moves in the score.
    pub plies: u32,
    pub claims: Vec<ClaimPoint>,
    pub automatic: Vec<AutomaticPoint>,
    /// The first ply at which the position is proven dead, if any.
    pub first_dead_ply: Option<u32>,
    /// Plies the analysis examined without determining whether the position is dead; when not
    /// empty, the first dead ply may lie among them (or, if none is given, anywhere up to them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dead_undetermined_plies: Vec<u32>,
    /// `checkmate`, `stalemate`, `dead_position`, `fivefold`, `seventyfive`: the first end the
    /// position imposed (at `ended_at_ply`); otherwise the score's result tag (`1-0`, `0-1`,
    /// `1/2-1/2`: ended by resignation, agreement, time or a claim; `0-0`, `1/2-0`, `0-1/2`: by
    /// the arbiter) or `ongoing` for `*`.
    pub status: String,
    /// The ply at which the position ended the game, if it did.
    pub ended_at_ply: Option<u32>,
    /// The result tag of the score.
    pub result: String,
    /// Where the score, as read from its file, stopped being legal (the moves after it were left
    /// out of the analysis), when it did. Set by whoever read the file ([`pgn::read_pgn`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score_stopped: Option<pgn::ScoreStop>,
}

/// What is known about a single position: each answer `yes`, `no` or `undetermined`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FenAnalysis {
    pub dead: Answer,
    pub white_can_mate: Answer,
    pub black_can_mate: Answer,
    /// When White can mate: a sequence of legal moves (UCI) that ends with White mating.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub white_helpmate: Vec<String>,
    /// When Black can mate: the same for Black.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub black_helpmate: Vec<String>,
}

/// Input that cannot be analysed.
#[derive(Debug, thiserror::Error)]
pub enum AnalysisError {
    #[error(transparent)]
    Pgn(#[from] PgnError),
    #[error("invalid FEN `{fen}`: {reason}")]
    Fen { fen: String, reason: String },
    #[error("ply {ply}: move `{text}` is not legal")]
    IllegalMove { ply: u32, text: String },
}

/// The findings over a sequence of moves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MovesAnalysis {
    pub claims: Vec<ClaimPoint>,
    pub automatic: Vec<AutomaticPoint>,
    pub first_dead_ply: Option<u32>,
    /// See [`GameAnalysis::dead_undetermined_plies`].
    pub dead_undetermined_plies: Vec<u32>,
    /// The first end imposed by the position, and its ply.
    pub end: Option<(u32, EndReason)>,
}

/// What the analysis looks for besides claims and repetition/move-rule draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnalysisOptions {
    /// Look for dead positions (the search of [`dead::dead_position`]; the costly part).
    pub dead_positions: bool,
}

impl Default for AnalysisOptions {
    fn default() -> Self {
        AnalysisOptions {
            dead_positions: true,
        }
    }
}

/// Analyses legal `moves` played from `start`, with every check.
pub fn analyze_moves(
    rules: &RuleSet,
    start: &Chess,
    moves: &[Move],
) -> Result<MovesAnalysis, AnalysisError> {
    analyze_moves_with(rules, start, moves, AnalysisOptions::default())
}

/// The first ply whose position is proven dead, and the plies examined whose deadness was
/// undetermined. A position reachable from a dead position is dead too (no continuation of it
/// can reach a mate), so deadness only ever starts and lasts: one search on the final position
/// settles whether any ply is dead, and a binary search finds the first. An undetermined answer
/// breaks that reasoning, so from there every ply is examined in turn (rare, and slower).
fn dead_plies(positions: &[Chess]) -> (Option<u32>, Vec<u32>) {
    let ply = |index: usize| u32::try_from(index).unwrap_or(u32::MAX);
    let scan = |from: usize, to: usize| {
        let mut undetermined = Vec::new();
        for (index, pos) in positions.iter().enumerate().take(to + 1).skip(from) {
            match dead::dead_position(pos) {
                Answer::Yes => return (Some(ply(index)), undetermined),
                Answer::Undetermined => undetermined.push(ply(index)),
                Answer::No => {}
            }
        }
        (None, undetermined)
    };
    let Some(last) = positions.len().checked_sub(1) else {
        return (None, Vec::new());
    };
    match dead::dead_position(&positions[last]) {
        Answer::No => return (None, Vec::new()),
        Answer::Undetermined => return scan(0, last),
        Answer::Yes => {}
    }
    let (mut lo, mut hi) = (0usize, last);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match dead::dead_position(&positions[mid]) {
            Answer::Yes => hi = mid,
            Answer::No => lo = mid + 1,
            Answer::Undetermined => return scan(lo, hi),
        }
    }
    (Some(ply(lo)), Vec::new())
}

/// [`analyze_moves`] with a choice of checks.
pub fn analyze_moves_with(
    rules: &RuleSet,
    start: &Chess,
    moves: &[Move],
    options: AnalysisOptions,
) -> Result<MovesAnalysis, AnalysisError> {
    let mut history = RepetitionTracker::new(rules.edition, start, 0);
    let mut claim_points = Vec::new();
    let mut fivefold: Option<AutomaticPoint> = None;
    let mut seventy_five: Option<AutomaticPoint> = None;
    let mut positions = Vec::with_capacity(moves.len() + 1);
    let mut inspect = |history: &RepetitionTracker| {
        let ply = history.ply();
        for c in claims::available_claims(rules, history) {
            let mut occurrences: Vec<u32> = c.occurrences.iter().map(|o| o.ply).collect();
            if c.kind == ClaimKind::Threefold && c.basis == ClaimBasis::IntendedMove {
                occurrences.push(ply + 1);
            }
            claim_points.push(ClaimPoint {
                ply,
                kind: c.kind,
                basis: c.basis,
                occurrences,
                moves: c.moves,
            });
        }
        if fivefold.is_none()
            && let Some(occ) = history.fivefold()
        {
            fivefold = Some(AutomaticPoint {
                ply,
                kind: AutomaticKind::Fivefold,
                occurrences: occ.iter().map(|o| o.ply).collect(),
            });
        }
        if seventy_five.is_none() && moverules::seventy_five_moves(history.position(), rules) {
            seventy_five = Some(AutomaticPoint {
                ply,
                kind: AutomaticKind::Seventyfive,
                occurrences: Vec::new(),
            });
        }
        if options.dead_positions {
            positions.push(history.position().clone());
        }
    };
    inspect(&history);
    for &m in moves {
        let ply = history.ply() + 1;
        history
            .play(m, u64::from(ply))
            .map_err(|e| AnalysisError::IllegalMove { ply, text: e.uci })?;
        inspect(&history);
    }
    let (first_dead, dead_undetermined_plies) = if options.dead_positions {
        dead_plies(&positions)
    } else {
        (None, Vec::new())
    };

    // The first end the position imposes; at the same ply, checkmate before stalemate before a
    // dead position before fivefold before seventy-five moves (mate takes precedence, 9.6).
    let final_ply = history.ply();
    let final_pos = history.position();
    let mut ends: Vec<(u32, u8, EndReason)> = Vec::new();
    if final_pos.is_checkmate() {
        ends.push((final_ply, 0, EndReason::Checkmate));
    } else if final_pos.is_stalemate() {
        ends.push((final_ply, 1, EndReason::Stalemate));
    }
    if let Some(ply) = first_dead {
        ends.push((ply, 2, EndReason::DeadPosition));
    }
    if let Some(p) = &fivefold {
        ends.push((p.ply, 3, EndReason::FivefoldRepetition));
    }
    if let Some(p) = &seventy_five {
        ends.push((p.ply, 4, EndReason::SeventyFiveMoves));
    }
    let end = ends
        .into_iter()
        .min_by_key(|&(ply, rank, _)| (ply, rank))
        .map(|(ply, _, reason)| (ply, reason));

    let mut automatic: Vec<AutomaticPoint> = first_dead
        .map(|ply| AutomaticPoint {
            ply,
            kind: AutomaticKind::DeadPosition,
            occurrences: Vec::new(),
        })
        .into_iter()
        .chain(fivefold)
        .chain(seventy_five)
        .collect();
    automatic.sort_by_key(|a| a.ply);
    Ok(MovesAnalysis {
        claims: claim_points,
        automatic,
        first_dead_ply: first_dead,
        dead_undetermined_plies,
        end,
    })
}

fn status_name(reason: EndReason) -> &'static str {
    match reason {
        EndReason::Checkmate => "checkmate",
        EndReason::Stalemate => "stalemate",
        EndReason::DeadPosition => "dead_position",
        EndReason::FivefoldRepetition => "fivefold",
        EndReason::SeventyFiveMoves => "seventyfive",
        _ => "ended",
    }
}

/// Analyses a game score under `rules`.
pub fn analyze_game(rules: &RuleSet, game: &PgnGame) -> Result<GameAnalysis, AnalysisError> {
    let start = game.start_position()?;
    let mut pos = start.clone();
    let mut moves = Vec::with_capacity(game.moves.len());
    for (i, pm) in game.moves.iter().enumerate() {
        let m = pgn::parse_san(&pos, &pm.san).ok_or_else(|| AnalysisError::IllegalMove {
            ply: u32::try_from(i + 1).unwrap_or(u32::MAX),
            text: pm.san.clone(),
        })?;
        pos.play_unchecked(m);
        moves.push(m);
    }
    let MovesAnalysis {
        claims,
        automatic,
        first_dead_ply,
        dead_undetermined_plies,
        end,
    } = analyze_moves(rules, &start, &moves)?;
    let status = match end {
        Some((_, reason)) => status_name(reason).to_owned(),
        None if game.result == "*" || game.result.is_empty() => "ongoing".to_owned(),
        None => game.result.clone(),
    };
    let tag = |name: &str| game.tag(name).unwrap_or("?").to_owned();
    Ok(GameAnalysis {
        white: tag("White"),
        black: tag("Black"),
        round: tag("Round"),
        edition: rules.edition.to_string(),
        plies: u32::try_from(moves.len()).unwrap_or(u32::MAX),
        claims,
        automatic,
        first_dead_ply,
        dead_undetermined_plies,
        status,
        ended_at_ply: end.map(|(ply, _)| ply),
        result: game.result.clone(),
        score_stopped: None,
    })
}

/// Parses a FEN (standard chess, or Chess960 castling when the standard reading fails).
pub fn parse_fen(fen: &str) -> Result<Chess, AnalysisError> {
    let err = |reason: String| AnalysisError::Fen {
        fen: fen.to_owned(),
        reason,
    };
    let parsed: Fen = fen.trim().parse().map_err(|e| err(format!("{e}")))?;
    parsed
        .clone()
        .into_position(CastlingMode::Standard)
        .or_else(|_| {
            parsed
                .into_position(CastlingMode::Chess960)
                .map_err(|e| err(format!("{e}")))
        })
}

/// Whether the position is dead and which sides can still checkmate, with a helpmate where one
/// can (the thorough budget: someone is asking about this one position).
pub fn analyze_position(pos: &Chess) -> FenAnalysis {
    let answer = |side| dead::analyze(pos, side, &dead::Budget::thorough());
    let (white, black) = (answer(Color::White), answer(Color::Black));
    // Dead when neither side can mate.
    let dead = match (white.can_mate(), black.can_mate()) {
        (Answer::No, Answer::No) => Answer::Yes,
        (Answer::Yes, _) | (_, Answer::Yes) => Answer::No,
        _ => Answer::Undetermined,
    };
    let line = |answer: &Unwinnability| match answer {
        Unwinnability::Winnable(line) => line.clone(),
        _ => Vec::new(),
    };
    FenAnalysis {
        dead,
        white_can_mate: white.can_mate(),
        black_can_mate: black.can_mate(),
        white_helpmate: line(&white),
        black_helpmate: line(&black),
    }
}

/// [`analyze_position`] on a FEN.
pub fn analyze_fen(fen: &str) -> Result<FenAnalysis, AnalysisError> {
    parse_fen(fen).map(|pos| analyze_position(&pos))
}

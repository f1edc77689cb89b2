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
    dead, moverules,
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
    /// The first ply at which the position is dead, if any.
    pub first_dead_ply: Option<u32>,
    /// `checkmate`, `stalemate`, `dead_position`, `fivefold`, `seventyfive`: the first end the
    /// position imposed (at `ended_at_ply`); otherwise the score's result tag (`1-0`, `0-1`,
    /// `1/2-1/2`: ended by resignation, agreement, time or a claim) or `ongoing` for `*`.
    pub status: String,
    /// The ply at which the position ended the game, if it did.
    pub ended_at_ply: Option<u32>,
    /// The result tag of the score.
    pub result: String,
}

/// What is known about a single position.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FenAnalysis {
    pub dead: bool,
    pub white_can_mate: bool,
    pub black_can_mate: bool,
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
    /// The first end imposed by the position, and its ply.
    pub end: Option<(u32, EndReason)>,
}

/// What the analysis looks for besides claims and repetition/move-rule draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnalysisOptions {
    /// Look for dead positions (the exact search of [`dead::is_dead`]; the costly part).
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

/// The first ply whose position is dead. A position reachable from a dead position is dead too
/// (no continuation of it can reach a mate), so deadness only ever starts and lasts: one search
/// on the final position settles whether any ply is dead, and a binary search finds the first.
fn first_dead_ply(positions: &[Chess]) -> Option<u32> {
    let last = positions.last()?;
    if !dead::is_dead(last) {
        return None;
    }
    let (mut lo, mut hi) = (0usize, positions.len() - 1);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if dead::is_dead(&positions[mid]) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    u32::try_from(lo).ok()
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
    let first_dead = if options.dead_positions {
        first_dead_ply(&positions)
    } else {
        None
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
        status,
        ended_at_ply: end.map(|(ply, _)| ply),
        result: game.result.clone(),
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

/// Whether the position is dead and which sides can still checkmate.
pub fn analyze_position(pos: &Chess) -> FenAnalysis {
    FenAnalysis {
        dead: dead::is_dead(pos),
        white_can_mate: dead::can_checkmate(pos, Color::White),
        black_can_mate: dead::can_checkmate(pos, Color::Black),
    }
}

/// [`analyze_position`] on a FEN.
pub fn analyze_fen(fen: &str) -> Result<FenAnalysis, AnalysisError> {
    parse_fen(fen).map(|pos| analyze_position(&pos))
}

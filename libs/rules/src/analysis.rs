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
    outcome::{self, EndReason},
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

/// Analyses legal `moves` played from `start`.
pub fn analyze_moves(
    rules: &RuleSet,
    start: &Chess,
    moves: &[Move],
) -> Result<MovesAnalysis, AnalysisError> {
    let mut history = RepetitionTracker::new(rules.edition, start, 0);
    let mut claim_points = Vec::new();
    let mut automatic: Vec<AutomaticPoint> = Vec::new();
    let mut first_dead = None;
    let mut end = None;
    let mut inspect = |history: &RepetitionTracker,
                       claim_points: &mut Vec<ClaimPoint>,
                       automatic: &mut Vec<AutomaticPoint>| {
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
        let pos = history.position();
        if first_dead.is_none() && dead::is_dead(pos) {
            first_dead = Some(ply);
            automatic.push(AutomaticPoint {
                ply,
                kind: AutomaticKind::DeadPosition,
                occurrences: Vec::new(),
            });
        }
        if !automatic.iter().any(|a| a.kind == AutomaticKind::Fivefold)
            && let Some(occ) = history.fivefold()
        {
            automatic.push(AutomaticPoint {
                ply,
                kind: AutomaticKind::Fivefold,
                occurrences: occ.iter().map(|o| o.ply).collect(),
            });
        }
        if !automatic
            .iter()
            .any(|a| a.kind == AutomaticKind::Seventyfive)
            && moverules::seventy_five_moves(pos, rules)
        {
            automatic.push(AutomaticPoint {
                ply,
                kind: AutomaticKind::Seventyfive,
                occurrences: Vec::new(),
            });
        }
        if end.is_none() {
            end = outcome::end_on_board(rules, history).map(|e| (ply, e.reason));
        }
    };
    inspect(&history, &mut claim_points, &mut automatic);
    for &m in moves {
        let ply = history.ply() + 1;
        history
            .play(m, u64::from(ply))
            .map_err(|e| AnalysisError::IllegalMove { ply, text: e.uci })?;
        inspect(&history, &mut claim_points, &mut automatic);
    }
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

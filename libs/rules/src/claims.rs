//! Draw claims by the player to move: threefold repetition (9.2) and fifty moves (9.3), on the
//! position on the board or with an intended move, and their consequences per edition (9.4, 9.5).

use serde::Serialize;
use shakmaty::{Move, Position};

use crate::{
    moverules,
    repetition::{Occurrence, RepetitionTracker},
    ruleset::{Category, Edition, RuleSet, Side},
};

/// What is claimed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimKind {
    /// Threefold repetition (9.2).
    Threefold,
    /// Fifty moves without capture or pawn move (9.3).
    Fifty,
}

/// What the claim rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimBasis {
    /// The position on the board.
    Position,
    /// The move the claimant has written down and declared, not yet played.
    IntendedMove,
}

/// A draw claim by the player to move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DrawClaim {
    pub kind: ClaimKind,
    /// The declared move, for a claim on the position it would produce.
    pub intended_move: Option<Move>,
    /// The claimant has already made his move without claiming (loses the right in 2005, 9.4).
    pub claimant_has_moved: bool,
    /// The claimant has touched a piece as in 4.3 without claiming (loses the right from 2009, 9.4).
    pub claimant_has_touched: bool,
    /// The claimant's remaining time, for the 2005 penalty on his own clock.
    pub claimant_remaining_ms: u64,
}

/// Time adjustments for an incorrect claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct TimePenalty {
    /// Time added to the opponent's clock.
    pub opponent_bonus_ms: u64,
    /// Time taken from the claimant's clock (2005 only).
    pub claimant_deduction_ms: u64,
}

/// The arbiter's decision on a claim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum ClaimVerdict {
    /// The claim is correct: the game is drawn.
    Upheld,
    /// The claim is incorrect: the penalty applies and play continues; an intended move must be
    /// played (in UCI).
    Rejected {
        penalty: TimePenalty,
        penalty_article: &'static str,
        intended_move_must_be_played: Option<String>,
    },
    /// The claimant lost the right to claim on this move.
    RightLost,
}

/// What the verdict rests on.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct ClaimEvidence {
    /// Threefold: the occurrences of the claimed position in the record. With an intended move,
    /// the earlier occurrences of the position the move would produce; the would-be occurrence
    /// is `intended_occurrence_ply`.
    pub occurrences: Vec<Occurrence>,
    /// The ply at which the intended move would produce the position (current ply + 1).
    pub intended_occurrence_ply: Option<u32>,
    /// Half-moves without capture or pawn move on the board (after the intended move if any).
    pub halfmove_clock: u32,
    /// The position right after the last capture or pawn move, if it is within the record.
    pub last_reset: Option<Occurrence>,
    /// The log references the verdict rests on, in order.
    pub log_refs: Vec<u64>,
}

/// A claim, decided.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClaimReport {
    pub claimant: Side,
    pub kind: ClaimKind,
    /// The basis the verdict rests on (an intended-move claim is also upheld when the position on
    /// the board already qualifies).
    pub basis: ClaimBasis,
    /// The intended move in UCI, if declared.
    pub intended_move: Option<String>,
    pub verdict: ClaimVerdict,
    /// The article the claim was judged under.
    pub article: &'static str,
    pub explanation: String,
    pub evidence: ClaimEvidence,
}

/// A claim that cannot be judged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClaimError {
    #[error("the intended move {uci} is not legal in the position")]
    IllegalIntendedMove { uci: String },
    #[error("the game is over: the player to move has no legal move")]
    GameOver,
}

/// A claim available to the player to move, as found by [`available_claims`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AvailableClaim {
    pub kind: ClaimKind,
    pub basis: ClaimBasis,
    /// Threefold on the position: its occurrences, the current one included. Threefold with an
    /// intended move: the earlier occurrences of the position(s) the qualifying moves would
    /// produce (the would-be occurrence is the current ply + 1 and has no log reference yet).
    /// Fifty: the occurrence right after the last capture or pawn move if it is in the record,
    /// else empty.
    pub occurrences: Vec<Occurrence>,
    /// For intended-move claims: the qualifying moves in UCI.
    pub moves: Vec<String>,
}

/// The article a claim of `kind` is judged under (9.2 threefold, 9.3 fifty moves).
pub fn claim_article(kind: ClaimKind) -> &'static str {
    match kind {
        ClaimKind::Threefold => "9.2",
        ClaimKind::Fifty => "9.3",
    }
}

/// The article and penalty for an incorrect claim under `rules`.
pub fn incorrect_claim_penalty(
    rules: &RuleSet,
    claimant_remaining_ms: u64,
) -> (TimePenalty, &'static str) {
    const MIN: u64 = 60_000;
    match rules.edition {
        Edition::Fide2005 => {
            // 9.5.b: half the remaining time, at most 3 min, above 2 min; left with 1 min between
            // 1 and 2 min; nothing under 1 min.
            let deduction = if claimant_remaining_ms > 2 * MIN {
                (claimant_remaining_ms / 2).min(3 * MIN)
            } else {
                claimant_remaining_ms.saturating_sub(MIN)
            };
            (
                TimePenalty {
                    opponent_bonus_ms: 3 * MIN,
                    claimant_deduction_ms: deduction,
                },
                "9.5.b",
            )
        }
        Edition::Fide2009 => (
            TimePenalty {
                opponent_bonus_ms: 3 * MIN,
                claimant_deduction_ms: 0,
            },
            "9.5",
        ),
        // From 2014 the penalty equals the illegal-move penalty: two minutes.
        Edition::Fide2014 => (
            TimePenalty {
                opponent_bonus_ms: 2 * MIN,
                claimant_deduction_ms: 0,
            },
            "9.5.b",
        ),
        // 2018 blitz: "the penalties of Articles 7 and 9 shall be one minute" (B.3).
        Edition::Fide2018 => match rules.category {
            Category::Blitz => (
                TimePenalty {
                    opponent_bonus_ms: MIN,
                    claimant_deduction_ms: 0,
                },
                "B.3",
            ),
            Category::Standard | Category::Rapid => (
                TimePenalty {
                    opponent_bonus_ms: 2 * MIN,
                    claimant_deduction_ms: 0,
                },
                "9.5.3",
            ),
        },
        Edition::Fide2023 => match rules.category {
            Category::Standard => (
                TimePenalty {
                    opponent_bonus_ms: 2 * MIN,
                    claimant_deduction_ms: 0,
                },
                "9.5.3",
            ),
            Category::Rapid | Category::Blitz => (
                TimePenalty {
                    opponent_bonus_ms: MIN,
                    claimant_deduction_ms: 0,
                },
                "A.3",
            ),
        },
        // Correspondence: the server processes the claim; there is no clock to penalise.
        Edition::Iccf2019 => (TimePenalty::default(), "9.5.3"),
    }
}

fn uci(history: &RepetitionTracker, m: Move) -> String {
    m.to_uci(history.position().castles().mode()).to_string()
}

/// Decides a draw claim by the player to move in `history`'s current position.
pub fn evaluate_claim(
    rules: &RuleSet,
    history: &RepetitionTracker,
    claim: &DrawClaim,
) -> Result<ClaimReport, ClaimError> {
    let pos = history.position();
    let claimant: Side = pos.turn().into();
    let intended_uci = claim.intended_move.map(|m| uci(history, m));
    if let Some(m) = claim.intended_move
        && !pos.is_legal(m)
    {
        return Err(ClaimError::IllegalIntendedMove {
            uci: intended_uci.unwrap_or_default(),
        });
    }
    if pos.legal_moves().is_empty() {
        return Err(ClaimError::GameOver);
    }
    let requested_basis = if claim.intended_move.is_some() {
        ClaimBasis::IntendedMove
    } else {
        ClaimBasis::Position
    };
    let mut report = ClaimReport {
        claimant,
        kind: claim.kind,
        basis: requested_basis,
        intended_move: intended_uci.clone(),
        verdict: ClaimVerdict::Upheld,
        article: claim_article(claim.kind),
        explanation: String::new(),
        evidence: ClaimEvidence {
            halfmove_clock: pos.halfmoves(),
            last_reset: history.last_reset(),
            ..ClaimEvidence::default()
        },
    };

    let right_lost = match rules.edition {
        Edition::Fide2005 => claim.claimant_has_moved,
        _ => claim.claimant_has_moved || claim.claimant_has_touched,
    };
    if right_lost {
        report.verdict = ClaimVerdict::RightLost;
        report.article = "9.4";
        report.explanation = match rules.edition {
            Edition::Fide2005 => "the claimant made a move without claiming".into(),
            _ => "the claimant touched a piece (4.3) without claiming".into(),
        };
        return Ok(report);
    }

    let upheld_basis = match claim.kind {
        ClaimKind::Threefold => {
            let with_move = claim
                .intended_move
                .and_then(|m| history.threefold_with_move(m));
            if let Some(earlier) = with_move {
                report.evidence.occurrences = earlier;
                report.evidence.intended_occurrence_ply = Some(history.ply() + 1);
                Some(ClaimBasis::IntendedMove)
            } else if let Some(occ) = history.threefold_on_board() {
                report.evidence.occurrences = occ;
                Some(ClaimBasis::Position)
            } else {
                report.evidence.occurrences = match claim.intended_move {
                    Some(m) => {
                        let mut after = pos.clone();
                        after.play_unchecked(m);
                        report.evidence.intended_occurrence_ply = Some(history.ply() + 1);
                        history.occurrences_of(&history.next_key(&after))
                    }
                    None => history.current_occurrences(),
                };
                None
            }
        }
        ClaimKind::Fifty => {
            let with_move = claim
                .intended_move
                .filter(|&m| moverules::fifty_claim_with_move(pos, rules, m));
            if let Some(m) = claim.intended_move
                && !m.is_zeroing()
            {
                report.evidence.halfmove_clock = pos.halfmoves() + 1;
            }
            if with_move.is_some() {
                Some(ClaimBasis::IntendedMove)
            } else if moverules::fifty_claim_on_board(pos, rules) {
                report.evidence.halfmove_clock = pos.halfmoves();
                Some(ClaimBasis::Position)
            } else {
                None
            }
        }
    };
    let mut refs: Vec<u64> = report
        .evidence
        .occurrences
        .iter()
        .map(|o| o.log_ref)
        .collect();
    if let Some(reset) = report.evidence.last_reset
        && claim.kind == ClaimKind::Fifty
    {
        refs.push(reset.log_ref);
    }
    if let Some(current) = history.occurrence(history.ply())
        && !refs.contains(&current.log_ref)
    {
        refs.push(current.log_ref);
    }
    report.evidence.log_refs = refs;

    match upheld_basis {
        Some(basis) => {
            report.basis = basis;
            report.verdict = ClaimVerdict::Upheld;
            report.explanation = match claim.kind {
                ClaimKind::Threefold => {
                    "the same position occurs for the third time: game drawn".into()
                }
                ClaimKind::Fifty => {
                    "fifty moves by each player without capture or pawn move: game drawn".into()
                }
            };
        }
        None => {
            let (penalty, penalty_article) =
                incorrect_claim_penalty(rules, claim.claimant_remaining_ms);
            report.verdict = ClaimVerdict::Rejected {
                penalty,
                penalty_article,
                intended_move_must_be_played: intended_uci,
            };
            report.explanation = match claim.kind {
                ClaimKind::Threefold => format!(
                    "the position occurs {} time(s), not three",
                    report.evidence.occurrences.len() + usize::from(claim.intended_move.is_some())
                ),
                ClaimKind::Fifty if !moverules::fifty_move_rule_applies(pos, rules) => {
                    "the fifty-move rule does not apply with 7 or fewer pieces".into()
                }
                ClaimKind::Fifty => format!(
                    "only {} half-moves without capture or pawn move, 100 needed",
                    report.evidence.halfmove_clock
                ),
            };
        }
    }
    Ok(report)
}

/// Every draw claim available to the player to move in `history`'s current position: threefold
/// and fifty moves, on the position and with an intended move (each basis listed at most once).
pub fn available_claims(rules: &RuleSet, history: &RepetitionTracker) -> Vec<AvailableClaim> {
    let pos = history.position();
    let mut claims = Vec::new();
    if pos.legal_moves().is_empty() {
        return claims;
    }
    if let Some(occ) = history.threefold_on_board() {
        claims.push(AvailableClaim {
            kind: ClaimKind::Threefold,
            basis: ClaimBasis::Position,
            occurrences: occ,
            moves: Vec::new(),
        });
    }
    let intended = history.threefold_intended_moves();
    if !intended.is_empty() {
        let mut occurrences: Vec<Occurrence> = Vec::new();
        for (_, occ) in &intended {
            for o in occ {
                if !occurrences.contains(o) {
                    occurrences.push(*o);
                }
            }
        }
        occurrences.sort_by_key(|o| o.ply);
        claims.push(AvailableClaim {
            kind: ClaimKind::Threefold,
            basis: ClaimBasis::IntendedMove,
            occurrences,
            moves: intended.iter().map(|(m, _)| uci(history, *m)).collect(),
        });
    }
    let reset: Vec<Occurrence> = history.last_reset().into_iter().collect();
    if moverules::fifty_claim_on_board(pos, rules) {
        claims.push(AvailableClaim {
            kind: ClaimKind::Fifty,
            basis: ClaimBasis::Position,
            occurrences: reset.clone(),
            moves: Vec::new(),
        });
    }
    let fifty_moves = moverules::fifty_intended_moves(pos, rules);
    if !fifty_moves.is_empty() {
        claims.push(AvailableClaim {
            kind: ClaimKind::Fifty,
            basis: ClaimBasis::IntendedMove,
            occurrences: reset,
            moves: fifty_moves.into_iter().map(|m| uci(history, m)).collect(),
        });
    }
    claims
}

//! Draw claims judged from the game's log alone (Article 6.14: never from display data).

use boardcast_rules::claims::{
    ClaimError, ClaimKind as RulesClaimKind, ClaimReport, ClaimVerdict, DrawClaim, evaluate_claim,
};

use crate::events::{ClaimJudged, ClaimJudgement, ClaimKind, Source};
use crate::state::Game;

/// A completed move that a verdict rests on but that no clock press or arbiter confirmed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnconfirmedMove {
    pub ply: u32,
    pub san: String,
    /// The `game_seq` of its `MoveCompleted` event.
    pub game_seq: u64,
    pub source: Source,
}

/// The rules' verdict on a claim, with what in the record it rests on.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimAssessment {
    pub report: ClaimReport,
    /// Moves up to the last position the verdict rests on that are only board-inferred or
    /// reconstructed. When there are any, the verdict cannot stand on the record alone: the
    /// arbiter must check those moves against the scoresheets first.
    pub unconfirmed: Vec<UnconfirmedMove>,
}

impl ClaimAssessment {
    pub fn rests_on_confirmed_record(&self) -> bool {
        self.unconfirmed.is_empty()
    }
}

/// A draw claim as a client states it: the kind, the intended move as written (SAN or UCI,
/// empty for none) and what the claimant did before claiming.
#[derive(Debug, Clone, Copy)]
pub struct ClaimStatement<'a> {
    pub kind: ClaimKind,
    pub intended_move: &'a str,
    pub claimant_has_moved: bool,
    pub claimant_has_touched: bool,
    pub claimant_remaining_ms: u64,
}

impl ClaimAssessment {
    /// The rules' verdict in the log's terms.
    pub fn judgement(&self) -> ClaimJudgement {
        match self.report.verdict {
            ClaimVerdict::Upheld => ClaimJudgement::Upheld,
            ClaimVerdict::Rejected { .. } => ClaimJudgement::Rejected,
            ClaimVerdict::RightLost => ClaimJudgement::RightLost,
        }
    }

    /// The log's verdict, as recorded beside the arbiter's ruling.
    pub fn judged(&self, upheld: bool) -> ClaimJudged {
        let assessment = self;
        let report = &assessment.report;
        let verdict = self.judgement();
        let (bonus, deduction, intended) = match &report.verdict {
            ClaimVerdict::Rejected {
                penalty,
                intended_move_must_be_played,
                ..
            } => (
                penalty.opponent_bonus_ms,
                penalty.claimant_deduction_ms,
                intended_move_must_be_played.clone(),
            ),
            ClaimVerdict::Upheld | ClaimVerdict::RightLost => (0, 0, None),
        };
        let rejected = !upheld;
        ClaimJudged {
            verdict_from_log: crate::wording::verdict_name(verdict).to_owned(),
            verdict: verdict as i32,
            article: report.article.to_owned(),
            explanation: report.explanation.clone(),
            game_seqs: report.evidence.log_refs.clone(),
            unconfirmed_plies: assessment.unconfirmed.iter().map(|u| u.ply).collect(),
            upheld,
            opponent_bonus_ms: if rejected { bonus } else { 0 },
            claimant_deduction_ms: if rejected { deduction } else { 0 },
            intended_move_must_be_played: if rejected {
                intended.unwrap_or_default()
            } else {
                String::new()
            },
        }
    }
}

impl Game {
    /// The claim in the rules' terms, or why it cannot be judged (no kind, an intended move
    /// that is not legal here).
    pub fn draw_claim(&self, statement: &ClaimStatement) -> Result<DrawClaim, String> {
        let kind = match statement.kind {
            ClaimKind::Threefold => RulesClaimKind::Threefold,
            ClaimKind::FiftyMoves => RulesClaimKind::Fifty,
            ClaimKind::Unspecified => return Err("the kind of claim is missing".to_owned()),
        };
        let intended_move = match statement.intended_move.trim() {
            "" => None,
            text => Some(self.parse_move_text(text).ok_or_else(|| {
                format!(
                    "the intended move {text:?} is not legal in {}",
                    crate::state::fen_of(self.position())
                )
            })?),
        };
        Ok(DrawClaim {
            kind,
            intended_move,
            claimant_has_moved: statement.claimant_has_moved,
            claimant_has_touched: statement.claimant_has_touched,
            claimant_remaining_ms: statement.claimant_remaining_ms,
        })
    }

    /// A move in SAN or UCI, legal in the game's position.
    pub fn parse_move_text(&self, text: &str) -> Option<shakmaty::Move> {
        boardcast_rules::pgn::parse_san(self.position(), text).or_else(|| self.parse_uci(text).ok())
    }

    /// Judges a draw claim by the player to move, from the completed moves of the log.
    pub fn evaluate_claim(&self, claim: &DrawClaim) -> Result<ClaimAssessment, ClaimError> {
        let report = evaluate_claim(&self.rules, &self.repetition, claim)?;
        // A position stands on every move that led to it, so the latest occurrence (or the
        // current position, for a fifty-move claim) bounds the moves the verdict rests on. A
        // claim with a written move rests on the position the move is played from, the current
        // one (Article 9.2.1.1), whatever the earlier occurrences (from interpretation 5).
        let rests_on_current = claim.intended_move.is_some() && self.interpretation >= 5;
        let last_ply = report
            .evidence
            .occurrences
            .iter()
            .map(|o| o.ply)
            .max()
            .unwrap_or(0)
            .max(
                if report.evidence.occurrences.is_empty() || rests_on_current {
                    self.moves.len() as u32
                } else {
                    0
                },
            )
            .min(self.moves.len() as u32);
        let unconfirmed = self.moves[..last_ply as usize]
            .iter()
            .filter(|m| {
                !matches!(
                    m.source,
                    Source::Clock | Source::Arbiter | Source::Scoresheet
                )
            })
            .map(|m| UnconfirmedMove {
                ply: m.event.ply,
                san: m.event.san.clone(),
                game_seq: m.game_seq,
                source: m.source,
            })
            .collect();
        Ok(ClaimAssessment {
            report,
            unconfirmed,
        })
    }
}

//! Draw claims judged from the game's log alone (Article 6.14: never from display data).

use boardcast_rules::claims::{ClaimError, ClaimReport, DrawClaim, evaluate_claim};

use crate::events::Source;
use crate::game::Game;

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

impl Game {
    /// Judges a draw claim by the player to move, from the completed moves of the log.
    pub fn evaluate_claim(&self, claim: &DrawClaim) -> Result<ClaimAssessment, ClaimError> {
        let report = evaluate_claim(&self.rules, &self.repetition, claim)?;
        // A position stands on every move that led to it, so the latest occurrence (or the
        // current position, for a fifty-move claim) bounds the moves the verdict rests on.
        let last_ply = report
            .evidence
            .occurrences
            .iter()
            .map(|o| o.ply)
            .max()
            .unwrap_or(0)
            .max(if report.evidence.occurrences.is_empty() {
                self.moves.len() as u32
            } else {
                0
            })
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

//! Reports for the arbiter that observations give rise to: completed illegal moves with the
//! edition's penalty proposed, possible touch-move breaches, the board's status.

use boardcast_inference::PlyMove;
use boardcast_rules::illegal::{IllegalKind, IllegalMoveCase, judge_illegal_move};
use boardcast_rules::touch::{
    Evidence, TOUCH_REST_MS, TimedTouch, Touch, WeighedBreach, check_touches, weigh_touches,
};
use shakmaty::{Chess, Color};

use crate::device::{DeviceState, DeviceStatus, Observation, SourceKind};
use crate::events::{
    BoardStatusChanged, IllegalMoveRecorded, PossibleTouchMoveBreach, Source, TouchEvidence,
    game_event::Kind,
};
use crate::record::NewEvent;
use crate::state::Game;
use crate::terms::{self};
use crate::wording;

use crate::state::BoardStatus;

impl Game {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn illegal_move(
        &self,
        obs: &Observation,
        ply: u32,
        position: &Chess,
        offender: Color,
        kind: IllegalKind,
        placement: String,
        tally: &mut boardcast_rules::illegal::IllegalMoveTally,
        basis: Vec<u64>,
    ) -> NewEvent {
        let report = judge_illegal_move(
            &self.rules,
            *tally,
            &IllegalMoveCase {
                offender,
                kind,
                position_before: position,
                opponent_claimed: false,
            },
        );
        *tally = report.tally;
        let (penalty, opponent_bonus_ms, result_if_confirmed) =
            terms::penalty_terms(report.penalty, report.counts_as_illegal, offender);
        let offender = terms::side_of(offender);
        let kind = terms::illegal_kind_of(kind);
        NewEvent {
            kind: Kind::IllegalMove(IllegalMoveRecorded {
                ply,
                offender: wording::side(offender).to_owned(),
                kind: wording::illegal_kind(kind).to_owned(),
                placement,
                offender_count: report.offender_count,
                proposed_penalty: wording::penalty(
                    penalty,
                    opponent_bonus_ms,
                    Some(&self.rules.edition.to_string()),
                ),
                article: report.article.to_owned(),
                opponent_bonus_ms,
                result_if_confirmed: result_if_confirmed as i32,
                offender_side: offender as i32,
                illegal_kind: kind as i32,
                penalty: penalty as i32,
            }),
            provenance: self.provenance(obs, Source::Clock, basis),
        }
    }

    /// Possible Article 4 breaches in the touches recorded before `mv` (the current
    /// observation is not among them: a press or a placement is not a touch).
    pub(super) fn touch_breaches(
        &self,
        obs: &Observation,
        before: &Chess,
        mv: &PlyMove,
    ) -> Vec<NewEvent> {
        if self.board.touches.is_empty() {
            return Vec::new();
        }
        let timed: Vec<TimedTouch> = self.board.touches.iter().map(|(_, t)| *t).collect();
        let (weighed, only_on_claim) = if self.interpretation >= 3 {
            // Capture replays know the time only from the clock's whole seconds: a second more
            // is asked for before touches count as at rest.
            let min_rest = match SourceKind::try_from(obs.source) {
                Ok(SourceKind::CaptureReplay) => TOUCH_REST_MS + 1_000,
                _ => TOUCH_REST_MS,
            };
            weigh_touches(&self.rules, before, &timed, mv.mv, min_rest)
        } else {
            let touches: Vec<Touch> = timed.iter().map(|t| t.touch).collect();
            let report = check_touches(&self.rules, before, &touches, mv.mv);
            let weighed = report
                .possible_breaches
                .into_iter()
                .map(|breach| WeighedBreach {
                    breach,
                    evidence: Evidence::AtRest,
                    rest_ms: None,
                })
                .collect();
            (weighed, report.only_on_claim)
        };
        // Before interpretation 5 every edition's clauses were lettered, and a rook touched
        // before the king was not held against castling under 2005 (Article 4.4.b is in it).
        let read_as_before = self.interpretation < 5;
        // Before interpretation 6 the released-piece clause was cited as 4.6 in every edition
        // (4.7 from 2014), and a piece released where no legal move takes it counted as released.
        let released_as_before = self.interpretation < 6;
        let released = boardcast_rules::touch::TouchBreach::ReleasedPieceMovedAgain;
        weighed
            .into_iter()
            .filter(|w| {
                !(read_as_before
                    && w.breach.breach
                        == boardcast_rules::touch::TouchBreach::CastledAfterRookFirst
                    && self.rules.edition == boardcast_rules::ruleset::Edition::Fide2005)
            })
            .filter(|w| released_as_before || !w.breach.released_where_no_move_goes)
            .map(
                |WeighedBreach {
                     breach,
                     evidence,
                     rest_ms,
                 }| {
                    let seqs: Vec<u64> = breach
                        .touch_indices
                        .iter()
                        .filter_map(|i| self.board.touches.get(*i).map(|(seq, _)| *seq))
                        .collect();
                    NewEvent {
                        kind: Kind::TouchMove(PossibleTouchMoveBreach {
                            ply: mv.ply,
                            breach: wording::breach_name(terms::breach_of(breach.breach))
                                .to_owned(),
                            breach_kind: terms::breach_of(breach.breach) as i32,
                            article: if read_as_before
                                || (released_as_before && breach.breach == released)
                            {
                                boardcast_rules::touch::lettered_article(breach.article)
                            } else {
                                breach.article
                            }
                            .to_owned(),
                            square: breach.square.clone(),
                            touch_game_seqs: seqs,
                            only_on_claim,
                            evidence: match (self.interpretation >= 3, evidence) {
                                (false, _) => TouchEvidence::Unspecified,
                                (true, Evidence::AtRest) => TouchEvidence::AtRest,
                                (true, Evidence::Brief) => TouchEvidence::Brief,
                            } as i32,
                            rest_ms: rest_ms.unwrap_or(0),
                        }),
                        provenance: self.provenance(obs, Source::BoardSensor, vec![obs.device_seq]),
                    }
                },
            )
            .collect()
    }

    /// A change the arbiter should know of: the board's connection state, or its battery falling
    /// to the low level. Repeated reports of the same state are only recorded.
    pub(super) fn board_status_change(
        &self,
        obs: &Observation,
        status: &DeviceStatus,
    ) -> Option<NewEvent> {
        let state = status.state();
        let battery_low = BoardStatus::battery_low;
        let connection_changed =
            state != DeviceState::Unspecified && state != self.board.status.state;
        let battery_fell =
            battery_low(status.battery_percent) && !battery_low(self.board.status.battery_percent);
        if !connection_changed && !battery_fell {
            return None;
        }
        Some(NewEvent {
            kind: Kind::BoardStatus(BoardStatusChanged {
                state: if state == DeviceState::Unspecified {
                    self.board.status.state as i32
                } else {
                    state as i32
                },
                battery_percent: status.battery_percent.or(self.board.status.battery_percent),
                detail: status.detail.clone(),
                battery_low: battery_fell && !connection_changed,
            }),
            provenance: self.provenance(obs, Source::BoardSensor, vec![obs.device_seq]),
        })
    }
}

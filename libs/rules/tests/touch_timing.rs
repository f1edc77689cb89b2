//! Touch-move findings weighed by time: a piece slid across squares, adjusted or flickering in a
//! sensor is seen for a moment and gives a note; a piece left at rest and then moved on gives an
//! alert for the arbiter.

use boardcast_rules::{
    RuleSet,
    ruleset::Edition,
    touch::{Evidence, TOUCH_REST_MS, TimedTouch, Touch, TouchAction, TouchBreach, weigh_touches},
};
use shakmaty::{Chess, Color, Piece, Position, Role, Square, uci::UciMove};

fn at(ms: i64, action: TouchAction, square: Square, role: Role) -> TimedTouch {
    TimedTouch {
        touch: Touch {
            action,
            square,
            piece: Piece {
                color: Color::White,
                role,
            },
        },
        at_ms: ms,
    }
}

fn after_e4_e5() -> Chess {
    let mut pos = Chess::default();
    for uci in ["e2e4", "e7e5"] {
        let m = uci.parse::<UciMove>().unwrap().to_move(&pos).unwrap();
        pos.play_unchecked(m);
    }
    pos
}

fn weigh(
    pos: &Chess,
    touches: &[TimedTouch],
    made: &str,
) -> Vec<(TouchBreach, Evidence, Option<i64>)> {
    let rules = RuleSet::standard(Edition::Fide2023);
    let made = made.parse::<UciMove>().unwrap().to_move(pos).unwrap();
    weigh_touches(&rules, pos, touches, made, TOUCH_REST_MS)
        .0
        .into_iter()
        .map(|w| (w.breach.breach, w.evidence, w.rest_ms))
        .collect()
}

/// Bf1-c4 slid over e2 and d3, `rest_on_d3` milliseconds on d3.
fn bishop_slide(rest_on_d3: i64) -> Vec<TimedTouch> {
    use Square::*;
    use TouchAction::*;
    vec![
        at(0, Lift, F1, Role::Bishop),
        at(100, Place, E2, Role::Bishop),
        at(300, Lift, E2, Role::Bishop),
        at(400, Place, D3, Role::Bishop),
        at(400 + rest_on_d3, Lift, D3, Role::Bishop),
        at(500 + rest_on_d3, Place, C4, Role::Bishop),
    ]
}

#[test]
fn a_piece_slid_across_squares_is_a_note_not_an_alert() {
    let found = weigh(&after_e4_e5(), &bishop_slide(200), "f1c4");
    assert!(!found.is_empty(), "the slide is still noted");
    assert!(
        found.iter().all(
            |(breach, evidence, _)| *breach == TouchBreach::ReleasedPieceMovedAgain
                && *evidence == Evidence::Brief
        ),
        "{found:?}"
    );
}

#[test]
fn a_piece_released_for_a_second_and_moved_on_is_an_alert() {
    let found = weigh(&after_e4_e5(), &bishop_slide(1_500), "f1c4");
    assert!(
        found.contains(&(
            TouchBreach::ReleasedPieceMovedAgain,
            Evidence::AtRest,
            Some(1_500)
        )),
        "{found:?}"
    );
}

#[test]
fn an_adjustment_is_a_note_and_a_piece_held_off_its_square_an_alert() {
    use Square::*;
    use TouchAction::*;
    let touched_then_pawn = |held: i64| {
        vec![
            at(0, Lift, G1, Role::Knight),
            at(held, Place, G1, Role::Knight),
            at(held + 500, Lift, D2, Role::Pawn),
            at(held + 800, Place, D4, Role::Pawn),
        ]
    };
    assert_eq!(
        weigh(&after_e4_e5(), &touched_then_pawn(300), "d2d4"),
        [(TouchBreach::OwnPieceNotMoved, Evidence::Brief, Some(300))]
    );
    assert_eq!(
        weigh(&after_e4_e5(), &touched_then_pawn(2_000), "d2d4"),
        [(TouchBreach::OwnPieceNotMoved, Evidence::AtRest, Some(2_000))]
    );
    // An ordinary move is nothing at all.
    assert!(weigh(&after_e4_e5(), &touched_then_pawn(300)[2..], "d2d4").is_empty());
}

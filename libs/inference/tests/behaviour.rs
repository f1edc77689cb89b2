mod common;

use boardcast_inference::{Config, IrregularityCause, Orientation, Output, ResultSignal};
use common::*;
use shakmaty::{Board, Chess, Color, Move, Piece, Position, Role, Square};

fn white(role: Role) -> Piece {
    Piece {
        color: Color::White,
        role,
    }
}

#[test]
fn simple_move_is_provisional_until_the_clock_press() {
    let mut s = Script::new(Chess::default());
    assert!(s.lift(Square::E2).iter().all(|o| !is_move_output(o)));
    let out = s.put(Square::E4, white(Role::Pawn));
    assert_eq!(provisional_sans(&out), ["e4"]);
    // The lift and the place are the basis of the move.
    let Some(Output::MoveProvisional { mv, basis }) = out.last() else {
        panic!("{out:?}");
    };
    assert_eq!((mv.ply, basis.clone()), (1, vec![1, 2]));
    assert!(out.contains(&Output::Touch {
        piece: white(Role::Pawn),
        from: Square::E2,
        to: Some(Square::E4),
        basis: vec![1, 2],
    }));
    assert_eq!(s.engine.confirmed_plies(), 0);
    let out = s.press(Color::White);
    assert_eq!(confirmed_sans(&out), ["e4"]);
    let Some(Output::MoveConfirmed { basis, .. }) = out.last() else {
        panic!("{out:?}");
    };
    assert_eq!(basis, &vec![2, 3]);
    assert_eq!(s.engine.confirmed_plies(), 1);
}

#[test]
fn sliding_rook_is_revised_not_rewritten() {
    let mut s = Script::from_fen("6k1/8/8/8/8/8/8/R5K1 w - - 0 1");
    s.lift(Square::A1);
    let out = s.put(Square::D1, white(Role::Rook));
    assert_eq!(provisional_sans(&out), ["Rd1"]);
    s.lift(Square::D1);
    let out = s.put(Square::F1, white(Role::Rook));
    let revision = out
        .iter()
        .find_map(|o| match o {
            Output::ProvisionalRevised {
                from_move, to_move, ..
            } => Some((from_move.san.clone(), to_move.san.clone(), to_move.ply)),
            _ => None,
        })
        .expect("a revision");
    assert_eq!(revision, ("Rd1".into(), "Rf1".into(), 1));
    assert_eq!(confirmed_sans(&s.press(Color::White)), ["Rf1"]);
    assert_eq!(s.game(), ["Rf1"]);
}

const ITALIAN: [&str; 6] = ["e4", "e5", "Nf3", "Nc6", "Bc4", "Bc5"];

#[test]
fn rook_first_castling_is_a_rook_move_then_castling() {
    let mut s = Script::after(&ITALIAN);
    s.lift(Square::H1);
    let out = s.put(Square::F1, white(Role::Rook));
    assert_eq!(provisional_sans(&out), ["Rf1"]);
    s.lift(Square::E1);
    let out = s.put(Square::G1, white(Role::King));
    assert!(out.iter().any(|o| matches!(o,
        Output::ProvisionalRevised { from_move, to_move, .. }
            if from_move.san == "Rf1" && to_move.san == "O-O")));
    assert_eq!(confirmed_sans(&s.press(Color::White)), ["O-O"]);
}

#[test]
fn king_first_castling() {
    let mut s = Script::after(&ITALIAN);
    s.lift(Square::E1);
    let out = s.put(Square::G1, white(Role::King));
    assert!(out.iter().all(|o| !is_move_output(o)), "{out:?}");
    s.lift(Square::H1);
    let out = s.put(Square::F1, white(Role::Rook));
    assert_eq!(provisional_sans(&out), ["O-O"]);
    assert!(matches!(
        out.iter().find_map(|o| match o {
            Output::MoveProvisional { mv, .. } => Some(mv.mv),
            _ => None,
        }),
        Some(Move::Castle { .. })
    ));
    assert_eq!(confirmed_sans(&s.press(Color::White)), ["O-O"]);
}

#[test]
fn capture_with_the_captured_piece_removed_first() {
    let mut s = Script::after(&["e4", "d5"]);
    s.lift(Square::D5);
    s.lift(Square::E4);
    let out = s.put(Square::D5, white(Role::Pawn));
    assert_eq!(provisional_sans(&out), ["exd5"]);
    assert!(out.contains(&Output::Touch {
        piece: Piece {
            color: Color::Black,
            role: Role::Pawn
        },
        from: Square::D5,
        to: None,
        basis: vec![1],
    }));
}

#[test]
fn capture_with_the_capturing_piece_landing_first() {
    let mut s = Script::after(&["e4", "d5"]);
    s.lift(Square::E4);
    // The sensors see the white pawn on d5 without ever seeing d5 empty.
    let out = s.put(Square::D5, white(Role::Pawn));
    assert_eq!(provisional_sans(&out), ["exd5"]);
}

#[test]
fn en_passant_with_the_captured_pawn_removed_last() {
    let mut s = Script::after(&["e4", "a6", "e5", "d5"]);
    s.lift(Square::E5);
    let out = s.put(Square::D6, white(Role::Pawn));
    assert!(out.iter().all(|o| !is_move_output(o)), "{out:?}");
    let out = s.lift(Square::D5);
    assert_eq!(provisional_sans(&out), ["exd6"]);
    let Some(Output::MoveProvisional { mv, .. }) = out.last() else {
        panic!("{out:?}");
    };
    assert!(matches!(mv.mv, Move::EnPassant { .. }));
}

#[test]
fn promotion_pawn_removed_queen_placed() {
    let mut s = Script::from_fen("k7/4P3/8/8/8/8/8/4K3 w - - 0 1");
    s.lift(Square::E7);
    let out = s.put(Square::E8, white(Role::Queen));
    assert_eq!(provisional_sans(&out), ["e8=Q+"]);
    let mut s = Script::from_fen("k7/4P3/8/8/8/8/8/4K3 w - - 0 1");
    s.lift(Square::E7);
    let out = s.put(Square::E8, white(Role::Knight));
    assert_eq!(provisional_sans(&out), ["e8=N"]);
}

#[test]
fn takeback_returns_to_the_ancestor() {
    let mut s = Script::new(Chess::default());
    s.slide(Square::E2, Square::E4);
    s.press(Color::White);
    s.slide(Square::E7, Square::E5);
    s.press(Color::Black);
    assert_eq!(s.engine.confirmed_plies(), 2);
    let out = s.slide(Square::E5, Square::E7);
    let takeback = out
        .iter()
        .find_map(|o| match o {
            Output::Takeback {
                undone, confirmed, ..
            } => Some((
                undone.iter().map(|m| m.san.clone()).collect::<Vec<_>>(),
                *confirmed,
            )),
            _ => None,
        })
        .expect("a takeback");
    assert_eq!(takeback, (vec!["e5".to_string()], 1));
    assert_eq!(s.game(), ["e4"]);
    assert_eq!(s.engine.confirmed_plies(), 1);
    // Play goes on from there.
    let out = s.slide(Square::C7, Square::C5);
    assert_eq!(provisional_sans(&out), ["c5"]);
}

/// A placement that shows another move in place of a confirmed one (a misread, a stray hand),
/// Black's answer seen while it lasts, then the board as it is: the game goes on.
#[test]
fn board_back_on_the_confirmed_line_after_a_stray_placement() {
    for stays_reachable in [true, false] {
        let mut s = Script::with_config(Config {
            confirmed_line_stays_reachable: stays_reachable,
            ..Config::default()
        });
        s.slide(Square::G1, Square::F3);
        s.press(Color::White);
        // Read as Nh3 instead of Nf3: a confirmed move taken back.
        let out = s.placement(board_after(&Chess::default(), &["Nh3"]));
        assert!(
            out.iter()
                .any(|o| matches!(o, Output::Takeback { confirmed: 1, .. })),
            "{out:?}"
        );
        s.placement(board_after(&Chess::default(), &["Nh3", "e5"]));
        s.placement(board_after(&Chess::default(), &["Nf3", "e5"]));
        let out = s.press(Color::Black);
        if stays_reachable {
            assert_eq!(confirmed_sans(&out), ["Nf3", "e5"], "{out:?}");
            assert_eq!(s.game(), ["Nf3", "e5"]);
            assert_eq!(s.engine.confirmed_plies(), 2);
        } else {
            // As versions before the setting read it: the board is explained from Nh3 on.
            assert_eq!(s.game()[0], "Nh3", "{out:?}");
        }
    }
}

#[test]
fn ghost_read_is_ignored() {
    let mut s = Script::after(&["e4"]);
    let knight = Piece {
        color: Color::Black,
        role: Role::Knight,
    };
    assert!(s.put(Square::E5, knight).is_empty());
    let out = s.lift(Square::E5);
    assert!(
        matches!(&out[..], [Output::GhostIgnored { basis, .. }] if basis == &vec![1, 2]),
        "{out:?}"
    );
    assert_eq!(s.game(), ["e4"]);
    // Nothing left pending: the clock press is ordinary.
    let out = s.slide(Square::E7, Square::E5);
    assert_eq!(provisional_sans(&out), ["e5"]);
}

#[test]
fn piece_lifted_and_put_back_is_touch_evidence() {
    let mut s = Script::after(&["e4", "e5"]);
    s.lift(Square::G1);
    let out = s.put(Square::G1, white(Role::Knight));
    assert_eq!(
        out,
        vec![Output::Touch {
            piece: white(Role::Knight),
            from: Square::G1,
            to: Some(Square::G1),
            basis: vec![1, 2],
        }]
    );
}

#[test]
fn rotated_board_flips_orientation_for_the_game() {
    let mut s = Script::new(Chess::default());
    s.sensor_orientation = Orientation::Rotated;
    let out = s.placement(Board::new());
    assert_eq!(
        out,
        vec![Output::OrientationChanged {
            orientation: Orientation::Rotated,
            basis: vec![1]
        }]
    );
    assert_eq!(s.engine.orientation(), Orientation::Rotated);
    let out = s.slide(Square::E2, Square::E4);
    assert_eq!(provisional_sans(&out), ["e4"]);
    let out = s.slide(Square::C7, Square::C5);
    assert_eq!(provisional_sans(&out), ["c5"]);
    assert_eq!(s.game(), ["e4", "c5"]);
}

/// A board turned round mid-game (or a spare put on the table so when the game moved to it)
/// shows the game's position turned round: read so from then on, and the game goes on. Read as
/// before `turned_round_anywhere`, the same placement matches nothing.
#[test]
fn the_games_position_turned_round_turns_the_reading() {
    let mut s = Script::after(&["e4", "e5", "Nf3"]);
    let position = s.engine.position().board().clone();
    s.sensor_orientation = Orientation::Rotated;
    // The spare being set up: half the pieces on it, long enough to be reported.
    let mut half = position.clone();
    for square in Square::ALL
        .into_iter()
        .filter(|sq| sq.rank() >= shakmaty::Rank::Fifth)
    {
        half.discard_piece_at(square);
    }
    s.placement(half);
    let out = s.tick(10_000);
    assert!(
        out.iter().any(|o| matches!(o, Output::Irregularity { .. })),
        "{out:?}"
    );
    let out = s.placement(position.clone());
    assert_eq!(
        out,
        vec![
            Output::IrregularityCleared { basis: vec![3] },
            Output::OrientationChanged {
                orientation: Orientation::Rotated,
                basis: vec![3]
            }
        ]
    );
    assert_eq!(s.engine.orientation(), Orientation::Rotated);
    let out = s.slide(Square::B8, Square::C6);
    assert_eq!(provisional_sans(&out), ["Nc6"]);
    assert_eq!(s.game(), ["e4", "e5", "Nf3", "Nc6"]);

    // Turned back: read the normal way again.
    s.sensor_orientation = Orientation::Normal;
    let out = s.placement(s.engine.position().board().clone());
    assert_eq!(
        out,
        vec![Output::OrientationChanged {
            orientation: Orientation::Normal,
            basis: vec![6]
        }]
    );

    let mut before = Script::with_config(Config {
        turned_round_anywhere: false,
        ..Config::default()
    });
    for (from, to) in [(Square::E2, Square::E4), (Square::E7, Square::E5)] {
        before.slide(from, to);
    }
    before.sensor_orientation = Orientation::Rotated;
    let out = before.placement(before.engine.position().board().clone());
    assert!(
        !out.iter()
            .any(|o| matches!(o, Output::OrientationChanged { .. })),
        "{out:?}"
    );
    assert_eq!(before.engine.orientation(), Orientation::Normal);
}

#[test]
fn start_placement_on_a_board_with_a_game_is_a_new_game() {
    let mut s = Script::new(Chess::default());
    for (from, to) in [
        (Square::E2, Square::E4),
        (Square::E7, Square::E5),
        (Square::G1, Square::F3),
    ] {
        s.slide(from, to);
    }
    assert_eq!(s.game(), ["e4", "e5", "Nf3"]);
    let out = s.placement(Board::new());
    assert!(
        matches!(
            &out[..],
            [Output::NewGame {
                orientation: Orientation::Normal,
                ..
            }]
        ),
        "{out:?}"
    );
    assert!(s.game().is_empty());
    assert_eq!(*s.engine.position(), Chess::default());
    let out = s.slide(Square::D2, Square::D4);
    assert_eq!(provisional_sans(&out), ["d4"]);
}

#[test]
fn start_placement_after_one_move_is_a_takeback() {
    let mut s = Script::new(Chess::default());
    s.slide(Square::E2, Square::E4);
    let out = s.placement(Board::new());
    assert!(
        out.iter().any(|o| matches!(o, Output::Takeback { .. })),
        "{out:?}"
    );
    assert!(!out.iter().any(|o| matches!(o, Output::NewGame { .. })));
}

#[test]
fn knights_back_home_are_moves_not_a_new_game() {
    let mut s = Script::after(&["Nf3", "Nf6", "Ng1"]);
    let out = s.slide(Square::F6, Square::G8);
    assert_eq!(provisional_sans(&out), ["Ng8"]);
    assert_eq!(s.game(), ["Nf3", "Nf6", "Ng1", "Ng8"]);
}

fn kings_on(white_king: Square, black_king: Square) -> Board {
    let mut board = board_after(&Chess::default(), &["e4", "e5", "Nf3", "Nc6"]);
    let wk = board.remove_piece_at(Square::E1).expect("white king");
    let bk = board.remove_piece_at(Square::E8).expect("black king");
    board.discard_piece_at(white_king);
    board.discard_piece_at(black_king);
    board.set_piece_at(white_king, wk);
    board.set_piece_at(black_king, bk);
    board
}

#[test]
fn kings_on_the_centre_signal_each_result() {
    for (white_king, black_king, result) in [
        (Square::E4, Square::D5, ResultSignal::WhiteWins),
        (Square::D5, Square::E4, ResultSignal::WhiteWins),
        (Square::D4, Square::E5, ResultSignal::BlackWins),
        (Square::E5, Square::D4, ResultSignal::BlackWins),
        (Square::E4, Square::E5, ResultSignal::Draw),
        (Square::D4, Square::D5, ResultSignal::Draw),
    ] {
        let mut s = Script::after(&["e4", "e5", "Nf3", "Nc6"]);
        s.lift(Square::E1);
        s.lift(Square::E8);
        let out = s.placement(kings_on(white_king, black_king));
        assert_eq!(
            out,
            vec![Output::ResultSignalled {
                result,
                basis: vec![3]
            }],
            "{white_king} {black_king}"
        );
        assert!(s.engine.result_signalled());
        // Neither a move nor an irregularity, whatever follows.
        let mut later = s.press(Color::White);
        later.extend(s.tick(60_000));
        assert!(later.is_empty(), "{later:?}");
        assert_eq!(s.game(), ["e4", "e5", "Nf3", "Nc6"]);
        // After a result, setting up the start position begins a new game.
        let out = s.placement(Board::new());
        assert!(matches!(&out[..], [Output::NewGame { .. }]), "{out:?}");
    }
}

#[test]
fn jump_of_three_plies_is_reconstructed() {
    let mut s = Script::new(Chess::default());
    let out = s.placement(board_after(&Chess::default(), &["e4", "e5", "Bc4"]));
    assert!(out.iter().all(|o| !is_move_output(o)), "{out:?}");
    let out = s.press(Color::White);
    let reconstructed = out
        .iter()
        .find_map(|o| match o {
            Output::Reconstructed { moves, basis } => Some((
                moves.iter().map(|m| m.san.clone()).collect::<Vec<_>>(),
                basis.clone(),
            )),
            _ => None,
        })
        .expect("a reconstruction");
    assert_eq!(
        reconstructed,
        (vec!["e4".into(), "e5".into(), "Bc4".into()], vec![1, 2])
    );
    assert_eq!(confirmed_sans(&out), ["e4", "e5", "Bc4"]);
}

#[test]
fn jump_of_two_plies_is_reconstructed_after_a_quiet_period() {
    let mut s = Script::after(&["d4"]);
    s.placement(board_after(&Chess::default(), &["d4", "Nf6", "c4"]));
    assert!(s.tick(1_000).is_empty());
    let out = s.tick(10_000);
    assert_eq!(provisional_sans(&out), ["Nf6", "c4"]);
    assert_eq!(s.game(), ["d4", "Nf6", "c4"]);
    assert_eq!(s.engine.confirmed_plies(), 1);
}

#[test]
fn ambiguous_jump_is_an_irregularity() {
    let mut s = Script::new(Chess::default());
    // 1.e4 e5 2.Nf3 and 1.Nf3 e5 2.e4 reach the same placement.
    s.placement(board_after(&Chess::default(), &["e4", "e5", "Nf3"]));
    let out = s.press(Color::White);
    assert!(
        matches!(
            &out[..],
            [Output::Irregularity {
                ambiguous: true,
                ..
            }]
        ),
        "{out:?}"
    );
}

#[test]
fn illegal_placement_at_clock_press_is_an_irregularity() {
    let mut s = Script::new(Chess::default());
    s.lift(Square::E2);
    let out = s.put(Square::E5, white(Role::Pawn));
    assert!(out.is_empty(), "pending, not yet reported: {out:?}");
    let out = s.press(Color::White);
    let [
        Output::Irregularity {
            placement,
            cause,
            ambiguous,
            basis,
        },
    ] = &out[..]
    else {
        panic!("{out:?}");
    };
    assert_eq!(placement.piece_at(Square::E5), Some(white(Role::Pawn)));
    assert_eq!(
        cause,
        &IrregularityCause::ClockPressed { side: Color::White }
    );
    assert!(!ambiguous);
    assert_eq!(basis, &vec![1, 2, 3]);
    assert!(s.game().is_empty());
    // Reported once; putting the pawn right clears it and the move counts.
    assert!(
        s.press(Color::White)
            .iter()
            .all(|o| !matches!(o, Output::Irregularity { .. }))
    );
    s.lift(Square::E5);
    let out = s.put(Square::E4, white(Role::Pawn));
    assert!(
        out.iter()
            .any(|o| matches!(o, Output::IrregularityCleared { .. }))
    );
    assert_eq!(provisional_sans(&out), ["e4"]);
}

#[test]
fn unmatched_board_is_reported_after_the_quiet_period() {
    let mut s = Script::new(Chess::default());
    let knight = s.lift(Square::G1);
    assert!(knight.is_empty());
    s.put(Square::G4, white(Role::Knight));
    assert!(s.tick(4_000).is_empty());
    let out = s.tick(2_000);
    assert!(
        matches!(
            &out[..],
            [Output::Irregularity {
                cause: IrregularityCause::Quiet { .. },
                ..
            }]
        ),
        "{out:?}"
    );
}

#[test]
fn piece_in_hand_is_not_irregular_while_thinking() {
    let mut s = Script::new(Chess::default());
    s.lift(Square::G1);
    assert!(s.tick(60_000).is_empty());
    let out = s.put(Square::F3, white(Role::Knight));
    assert_eq!(provisional_sans(&out), ["Nf3"]);
}

#[test]
fn clock_press_without_a_move() {
    let mut s = Script::after(&["e4"]);
    let out = s.press(Color::Black);
    assert!(matches!(
        &out[..],
        [Output::ClockPressWithoutMove {
            side: Color::Black,
            ..
        }]
    ));
}

#[test]
fn sync_to_an_authoritative_game() {
    let mut s = Script::new(Chess::default());
    s.slide(Square::E2, Square::E4);
    let moves = play(&Chess::default(), &["d4", "d5"]);
    s.engine.sync(Chess::default(), &moves).expect("legal");
    assert_eq!(s.game(), ["d4", "d5"]);
    assert_eq!(s.engine.confirmed_plies(), 2);
    let illegal = play(&Chess::default(), &["e4"]);
    assert!(
        s.engine
            .sync(Chess::default(), &[illegal[0], illegal[0]])
            .is_err()
    );
    assert_eq!(s.game(), ["d4", "d5"], "a failed sync changes nothing");
}

#[test]
fn continuation_of_a_revised_move_is_not_matched_later() {
    let mut s = Script::from_fen("7k/b7/8/8/8/8/8/1Q5K w - - 0 1");
    // The queen is seen on b6 on its way to b7.
    let first = s.slide(Square::B1, Square::B6);
    assert_eq!(provisional_sans(&first), ["Qb6"]);
    let out = s.slide(Square::B6, Square::B7);
    assert!(
        out.iter()
            .any(|o| matches!(o, Output::ProvisionalRevised { .. })),
        "{out:?}"
    );
    s.press(Color::White);
    s.slide(Square::A7, Square::B6);
    s.press(Color::Black);
    // Lifting the queen now looks like "Qb6 Bxb6" from the earlier branch: not a takeback.
    let out = s.lift(Square::B7);
    assert!(out.iter().all(|o| !is_move_output(o)), "{out:?}");
    assert_eq!(s.game(), ["Qb7", "Bb6"]);
}

fn with_grace() -> Script {
    Script::with_config(Config {
        press_grace_ms: 1_000,
        ..Config::default()
    })
}

#[test]
fn press_before_the_last_scan_waits_for_the_board() {
    let mut s = with_grace();
    s.lift(Square::E2);
    assert!(s.press(Color::White).is_empty());
    let out = s.put(Square::E4, white(Role::Pawn));
    assert_eq!(provisional_sans(&out), ["e4"]);
    let Some(Output::MoveConfirmed { mv, basis }) = out.last() else {
        panic!("{out:?}");
    };
    assert_eq!((mv.san.as_str(), basis.clone()), ("e4", vec![3, 2]));
    assert_eq!(s.engine.confirmed_plies(), 1);
}

#[test]
fn press_grace_expires_into_an_irregularity() {
    let mut s = with_grace();
    s.lift(Square::E2);
    s.put(Square::E5, white(Role::Pawn));
    assert!(s.press(Color::White).is_empty());
    let out = s.tick(2_000);
    assert!(
        matches!(
            &out[..],
            [Output::Irregularity {
                cause: IrregularityCause::ClockPressed { side: Color::White },
                ..
            }]
        ),
        "{out:?}"
    );
}

/// Completed moves more than KEPT_PLIES back keep only the game's own line: the board going
/// back to such a position is still recognised (a takeback of completed moves), another move
/// made there is not matched by placement any more (and the engine holds few positions).
#[test]
fn old_completed_moves_keep_only_the_line() {
    let sans = [
        "e4", "e5", "Nf3", "Nc6", "Bb5", "a6", "Ba4", "Nf6", "O-O", "Be7", "Re1", "b5", "Bb3", "d6",
    ];
    let mut s = Script::after(&sans);
    assert!(sans.len() as u32 > boardcast_inference::KEPT_PLIES + 2);
    // The line (15 positions) and the possible moves of the last KEPT_PLIES + 1 positions.
    assert!(
        s.engine.positions_held() < 15 + (boardcast_inference::KEPT_PLIES as usize + 1) * 45,
        "{} positions held",
        s.engine.positions_held()
    );
    // Back to the position after 1. e4 e5 2. Nf3: twelve completed moves taken back.
    let out = s.placement(board_after(&Chess::default(), &sans[..3]));
    assert!(
        out.iter()
            .any(|o| matches!(o, Output::Takeback { confirmed: 11, .. })),
        "{out:?}"
    );
    assert_eq!(s.game(), ["e4", "e5", "Nf3"]);

    // Another black reply there, far back: no longer matched by placement.
    let mut s = Script::after(&sans);
    let out = s.placement(board_after(&Chess::default(), &["e4", "e5", "Nf3", "d6"]));
    assert!(!out.iter().any(is_move_output), "{out:?}");
    // Two moves back it still is: the reply that was possible there is matched.
    let mut s = Script::after(&sans);
    let mut other = sans[..sans.len() - 1].to_vec();
    other.push("h6");
    let out = s.placement(board_after(&Chess::default(), &other));
    assert!(out.iter().any(is_move_output), "{out:?}");
}

//! The aggregate on scripted observation sequences: claims resting on reconstructed moves,
//! illegal moves by edition, takebacks before the clock press.

use boardcast_game::Game;
use boardcast_game::device::{BoardPlacement, ClockReading, ClockRun, observation::Kind as Obs};
use boardcast_game::events::{GameEventRecord, Source, TimePeriod, game_event::Kind};
use boardcast_rules::claims::{ClaimKind, ClaimVerdict, DrawClaim};
use shakmaty::{Chess, Position};

mod common;
use common::{Board, GAME, KNIGHT_SHUFFLE, play_san, position, started, three_moves_nobody_saw};

impl Board {
    fn new(edition: &str) -> Board {
        Board::from_fen(edition, "")
    }

    /// 40 moves in 90 minutes, then 30 minutes, 30 s a move from the first; the clock started.
    fn from_fen(edition: &str, start_fen: &str) -> Board {
        let periods = vec![
            TimePeriod {
                moves: 40,
                base_ms: 90 * 60_000,
                increment_ms: 30_000,
                delay_ms: 0,
            },
            TimePeriod {
                moves: 0,
                base_ms: 30 * 60_000,
                increment_ms: 30_000,
                delay_ms: 0,
            },
        ];
        Board::with(edition, start_fen, periods)
    }

    /// The clock started; observation `n` at `n` seconds unless a test says when.
    /// 5 minutes, no increment; the clock started.
    fn five_minutes() -> Board {
        let periods = vec![TimePeriod {
            moves: 0,
            base_ms: 300_000,
            ..Default::default()
        }];
        Board::with("fide-2023", "", periods)
    }

    /// The game with the clock started, set as the time control's first period says.
    fn with(edition: &str, start_fen: &str, periods: Vec<TimePeriod>) -> Board {
        let base = periods.first().map_or(0, |p| p.base_ms);
        let mut board = Board::start(&started(edition, start_fen, periods), 0);
        board.start_clock(base);
        board
    }

    /// A game read with `interpretation` (0: a log written before the clock's sides were worked
    /// out from the evidence, as such a log holds it); nothing observed yet.
    fn read_with(interpretation: u32) -> Board {
        let mut started = Board::new("fide-2023").game.info().clone();
        started.interpretation = interpretation;
        Board::recorded(started)
    }

    /// The game `started` records (its interpretation as given), nothing observed yet.
    fn recorded(started: boardcast_game::events::GameStarted) -> Board {
        let mut records = Game::record(
            None,
            GAME,
            vec![boardcast_game::NewEvent {
                kind: Kind::Started(started),
                provenance: Default::default(),
            }],
            0,
        );
        Board::from_first_record(records.remove(0), 0)
    }
}

#[test]
fn a_threefold_claim_resting_on_reconstructed_moves_cannot_be_upheld_on_the_record_alone() {
    let mut board = Board::new("fide-2023");
    let mut pos = Chess::default();
    // 1. e4 e5 2. Bc4: the board missed all three moves and both presses in between; it is seen
    // again with the bishop on c4 when White presses. Only one legal sequence leads there.
    for san in ["e4", "e5", "Bc4"] {
        play_san(&mut pos, san);
    }
    board.placement(pos.board());
    board.clock(ClockRun::Black);
    assert_eq!(
        board.count(|k| matches!(k, Kind::Reconstructed(_))),
        1,
        "{:?}",
        board.kinds()
    );
    // Then the knights shuffle, every move seen and pressed.
    for san in ["Nc6", "Nf3", "Nb8", "Ng1", "Nc6", "Nf3", "Nb8", "Ng1"] {
        board.play(&mut pos, san);
    }
    let moves = board.game.completed_moves();
    assert_eq!(moves.len(), 11);
    assert!(
        moves[..3]
            .iter()
            .all(|m| m.source == Source::Reconstruction)
    );
    assert!(moves[3..].iter().all(|m| m.source == Source::Clock));

    let claim = DrawClaim {
        kind: ClaimKind::Threefold,
        intended_move: None,
        claimant_has_moved: false,
        claimant_has_touched: false,
        claimant_remaining_ms: 5_000_000,
    };
    let assessment = board.game.evaluate_claim(&claim).expect("judged");
    assert!(
        matches!(assessment.report.verdict, ClaimVerdict::Upheld),
        "{:?}",
        assessment.report
    );
    let plies: Vec<u32> = assessment
        .report
        .evidence
        .occurrences
        .iter()
        .map(|o| o.ply)
        .collect();
    assert_eq!(plies, vec![3, 7, 11]);
    // The occurrences rest on log entries: the events that completed those moves.
    let seqs: Vec<u64> = assessment
        .report
        .evidence
        .occurrences
        .iter()
        .map(|o| o.log_ref)
        .collect();
    let expected: Vec<u64> = [3usize, 7, 11]
        .iter()
        .map(|p| moves[p - 1].game_seq)
        .collect();
    assert_eq!(seqs, expected);
    // ... and on three moves nobody saw being made: the arbiter must check the scoresheets.
    assert!(!assessment.rests_on_confirmed_record());
    let unconfirmed: Vec<(u32, &str)> = assessment
        .unconfirmed
        .iter()
        .map(|u| (u.ply, u.san.as_str()))
        .collect();
    assert_eq!(unconfirmed, vec![(1, "e4"), (2, "e5"), (3, "Bc4")]);
}

/// White makes an illegal move and presses the clock, then puts the position back.
fn illegal_attempt(board: &mut Board, pos: &Chess) {
    let mut wrong = pos.board().clone();
    let knight = wrong
        .remove_piece_at(shakmaty::Square::G1)
        .expect("knight on g1");
    wrong.set_piece_at(shakmaty::Square::G3, knight);
    board.observe(Obs::Placement(BoardPlacement {
        placement: wrong.board_fen().to_string(),
    }));
    board.clock(ClockRun::Black);
    board.placement(pos.board());
    // The arbiter gives the move back to White's clock.
    board.clock(ClockRun::White);
}

/// White completes a legal first move with a press of their own: the presses in doubt before
/// it are settled.
fn white_plays_on(board: &mut Board, pos: &Chess) {
    let mut pos = pos.clone();
    board.play(&mut pos, "e4");
}

fn illegal_moves(board: &Board) -> Vec<(String, u32, String)> {
    board
        .kinds()
        .into_iter()
        .filter_map(|k| match k {
            Kind::IllegalMove(i) => Some((
                i.offender.clone(),
                i.offender_count,
                i.proposed_penalty.clone(),
            )),
            _ => None,
        })
        .collect()
}

#[test]
fn illegal_moves_under_2009_cost_time_twice_and_lose_the_third_time() {
    let mut board = Board::new("fide-2009");
    let pos = Chess::default();
    for _ in 0..3 {
        illegal_attempt(&mut board, &pos);
    }
    // Who pressed and whether the board missed a move is not sure until White plays on.
    assert!(illegal_moves(&board).is_empty());
    assert_eq!(board.game.to_state().presses_in_doubt.len(), 3);
    white_plays_on(&mut board, &pos);
    assert!(board.game.to_state().presses_in_doubt.is_empty());
    let illegal = illegal_moves(&board);
    assert_eq!(illegal.len(), 3, "{:?}", board.kinds());
    assert_eq!(
        illegal[0],
        (
            "white".into(),
            1,
            "120 s added to the opponent's clock".into()
        )
    );
    assert_eq!(illegal[1].1, 2);
    assert_eq!(illegal[1].2, "120 s added to the opponent's clock");
    assert_eq!(illegal[2].1, 3);
    assert_eq!(illegal[2].2, "the game is lost");
    assert_eq!(board.game.illegal_tally().white, 3);
    // The penalty is only proposed: e-board data can be wrong, the arbiter decides.
    assert!(!board.game.is_over());
    assert_eq!(board.game.moves().len(), 1);
}

#[test]
fn illegal_moves_under_2023_lose_the_second_time() {
    let mut board = Board::new("fide-2023");
    let pos = Chess::default();
    illegal_attempt(&mut board, &pos);
    illegal_attempt(&mut board, &pos);
    white_plays_on(&mut board, &pos);
    let illegal = illegal_moves(&board);
    assert_eq!(illegal.len(), 2, "{:?}", board.kinds());
    assert_eq!(illegal[0].2, "120 s added to the opponent's clock");
    assert_eq!(illegal[1].2, "the game is lost");
    assert!(
        board.count(|k| matches!(k, Kind::IrregularityCleared(_))) >= 2,
        "the board matched again"
    );
}

#[test]
fn a_move_taken_back_before_the_clock_press_leaves_no_trace_but_its_record() {
    let mut board = Board::new("fide-2023");
    let mut pos = Chess::default();
    let mut e4 = pos.clone();
    play_san(&mut e4, "e4");
    board.placement(e4.board());
    board.placement(pos.board());
    board.play(&mut pos, "d4");
    let moves = board.game.moves();
    assert_eq!(moves.len(), 1);
    assert_eq!(moves[0].san, "d4");
    assert_eq!(
        board.count(|k| matches!(k, Kind::MoveProvisional(p) if p.san == "e4")),
        1
    );
    assert_eq!(
        board.count(|k| matches!(k, Kind::ProvisionalWithdrawn(w) if w.uci == "e2e4")),
        1
    );
}

#[test]
fn pressing_the_clock_without_a_move_is_illegal_from_2018_only() {
    for (edition, counts) in [("fide-2009", false), ("fide-2018", true)] {
        let mut board = Board::new(edition);
        // White presses without a move; Black presses back; White plays and presses.
        board.clock(ClockRun::Black);
        board.clock(ClockRun::White);
        white_plays_on(&mut board, &Chess::default());
        let illegal = illegal_moves(&board);
        assert_eq!(illegal.len(), 1, "{edition}: {:?}", board.kinds());
        assert_eq!(
            illegal[0].2.starts_with("none"),
            !counts,
            "{edition}: {}",
            illegal[0].2
        );
    }
}

fn act(
    board: &mut Board,
    action: boardcast_game::events::arbiter_action::Action,
    actor: &str,
) -> Result<(), boardcast_game::ActionRejected> {
    board.try_act(action, actor, Vec::new())
}

#[test]
fn the_arbiter_confirms_or_rejects_proposed_penalties() {
    use boardcast_game::events::{GameResult, PenaltyDecision, arbiter_action::Action};
    let mut board = Board::new("fide-2023");
    let mut pos = Chess::default();
    // Each illegal attempt is settled by White's next move and press.
    illegal_attempt(&mut board, &pos);
    board.play(&mut pos, "e4");
    let first = board.game.illegal_moves()[0].game_seq;
    // The sensors were wrong: the arbiter rejects it, and it does not count.
    act(
        &mut board,
        Action::Penalty(PenaltyDecision {
            illegal_move_game_seq: first,
            confirmed: false,
            note: "sensor fault".into(),
        }),
        "IA Smith",
    )
    .expect("accepted");
    assert_eq!(board.game.illegal_tally().white, 0);
    board.play(&mut pos, "e5");
    illegal_attempt(&mut board, &pos);
    board.play(&mut pos, "Nc3");
    let second = board.game.illegal_moves()[1].clone();
    assert_eq!(
        second.event.offender_count, 1,
        "the rejected one does not count"
    );
    assert_eq!(second.event.opponent_bonus_ms, 120_000);
    board.play(&mut pos, "Nc6");
    illegal_attempt(&mut board, &pos);
    board.play(&mut pos, "Bc4");
    let third = board.game.illegal_moves()[2].clone();
    assert_eq!(third.event.result_if_confirmed(), GameResult::BlackWins);
    assert!(!board.game.is_over(), "only proposed");
    // The loss counts the second, which is ruled on first.
    let second = second.game_seq;
    act(
        &mut board,
        Action::Penalty(PenaltyDecision {
            illegal_move_game_seq: second,
            confirmed: true,
            note: String::new(),
        }),
        "IA Smith",
    )
    .expect("accepted");
    act(
        &mut board,
        Action::Penalty(PenaltyDecision {
            illegal_move_game_seq: third.game_seq,
            confirmed: true,
            note: String::new(),
        }),
        "IA Smith",
    )
    .expect("accepted");
    assert_eq!(board.game.result_token(), "0-1");
    // Deciding twice is refused, with a reason.
    let again = act(
        &mut board,
        Action::Penalty(PenaltyDecision {
            illegal_move_game_seq: third.game_seq,
            confirmed: false,
            note: String::new(),
        }),
        "IA Smith",
    );
    assert!(
        again
            .expect_err("refused")
            .to_string()
            .contains("already confirmed")
    );
}

#[test]
fn restoring_a_position_entering_moves_and_ending_the_game() {
    use boardcast_game::events::{
        DrawAgreed, EnterMove, RestorePosition, SideAction, arbiter_action::Action,
    };
    let mut board = Board::new("fide-2023");
    let mut pos = Chess::default();
    for san in ["e4", "e5", "Nf3"] {
        board.play(&mut pos, san);
    }
    assert!(
        act(
            &mut board,
            Action::Restore(RestorePosition {
                ply: 2,
                ..Default::default()
            }),
            ""
        )
        .is_err(),
        "who acts is required"
    );
    act(
        &mut board,
        Action::Restore(RestorePosition {
            ply: 2,
            reason: "displaced pieces".into(),
            ..Default::default()
        }),
        "IA Smith",
    )
    .expect("accepted");
    assert_eq!(board.game.moves().len(), 2);
    // The player puts the knight back and plays another move; the board follows the game again.
    let mut restored = Chess::default();
    for san in ["e4", "e5"] {
        play_san(&mut restored, san);
    }
    board.placement(restored.board());
    board.clock(ClockRun::White);
    board.play(&mut restored, "Nc3");
    let sans: Vec<String> = board.game.moves().iter().map(|m| m.san.clone()).collect();
    assert_eq!(sans, vec!["e4", "e5", "Nc3"]);
    // A move from the scoresheet, entered by the arbiter.
    act(
        &mut board,
        Action::Move(EnterMove { san: "Nc6".into() }),
        "IA Smith",
    )
    .expect("accepted");
    let last = board.game.completed_moves().last().expect("a move").clone();
    assert_eq!(
        (last.event.san.as_str(), last.source),
        ("Nc6", Source::Arbiter)
    );
    assert!(
        act(
            &mut board,
            Action::Move(EnterMove { san: "Ke3".into() }),
            "IA Smith"
        )
        .is_err()
    );
    act(
        &mut board,
        Action::DrawOffer(SideAction {
            side: "white".into(),
            ..Default::default()
        }),
        "IA Smith",
    )
    .expect("recorded");
    act(&mut board, Action::DrawAgreed(DrawAgreed {}), "IA Smith").expect("accepted");
    assert_eq!(board.game.result_token(), "1/2-1/2");
    assert_eq!(
        act(
            &mut board,
            Action::Resignation(SideAction {
                side: "black".into(),
                ..Default::default()
            }),
            "IA Smith"
        ),
        Err(boardcast_game::ActionRejected::GameOver)
    );
}

#[test]
fn a_resignation_in_2023_is_a_draw_when_the_opponent_cannot_mate() {
    use boardcast_game::events::{SideAction, arbiter_action::Action};
    // White, with king and queen against a bare king, resigns: Black cannot mate.
    let bare_king = "8/8/4k3/8/8/8/4KQ2/8 w - - 0 1";
    for (edition, result) in [("fide-2023", "1/2-1/2"), ("fide-2018", "0-1")] {
        let mut board = Board::from_fen(edition, bare_king);
        act(
            &mut board,
            Action::Resignation(SideAction {
                side: "white".into(),
                ..Default::default()
            }),
            "IA Smith",
        )
        .expect("accepted");
        assert_eq!(
            board.game.result_token(),
            result,
            "{edition} (Article 5.1.2)"
        );
    }
    let mut board = Board::new("fide-2023");
    act(
        &mut board,
        Action::Resignation(SideAction {
            side: "white".into(),
            ..Default::default()
        }),
        "IA Smith",
    )
    .expect("accepted");
    assert_eq!(
        board.game.result_token(),
        "0-1",
        "from the start position Black can mate"
    );
}

#[test]
fn a_flag_fall_loses_unless_the_opponent_cannot_mate() {
    let mut board = Board::new("fide-2023");
    board.flag(true, false);
    assert_eq!(board.game.result_token(), "0-1");
    // Black has a bare king: White's flag fall is a draw (Article 6.9).
    let mut board = Board::from_fen("fide-2023", "8/8/4k3/8/8/8/4KQ2/8 w - - 0 1");
    board.flag(true, false);
    assert_eq!(board.game.result_token(), "1/2-1/2");
    let detail = board.kinds().into_iter().find_map(|k| match k {
        Kind::Ended(e) => Some(e.detail.clone()),
        _ => None,
    });
    assert!(detail.is_some_and(|d| d.contains("cannot checkmate") && d.contains("6.9")));
    // The clock ticking without news is not recorded.
    let mut board = Board::new("fide-2023");
    let before = board.kinds().len();
    board.clock(ClockRun::White);
    assert_eq!(board.kinds().len(), before);
}

#[test]
fn fivefold_repetition_ends_the_game_automatically_from_2014_only() {
    for (edition, automatic) in [("fide-2009", false), ("fide-2023", true)] {
        let mut board = Board::new(edition);
        let mut pos = Chess::default();
        for _ in 0..4 {
            for san in ["Nf3", "Nf6", "Ng1", "Ng8"] {
                if board.game.is_over() {
                    break;
                }
                board.play(&mut pos, san);
            }
        }
        assert_eq!(board.game.is_over(), automatic, "{edition}");
        if automatic {
            assert_eq!(board.game.result_token(), "1/2-1/2");
            assert_eq!(
                board.game.moves().len(),
                16,
                "ended by the move that made the fifth occurrence"
            );
        }
    }
}

#[test]
fn touching_a_piece_and_moving_another_is_reported_as_a_possible_breach() {
    // Under 2023 the clause is 4.3.1 (interpretation 5); games read as before say 4.3.a.
    for (interpretation, article) in [(4, "4.3.a"), (5, "4.3.1")] {
        touching_a_piece_and_moving_another(interpretation, article);
    }
}

fn touching_a_piece_and_moving_another(interpretation: u32, article: &str) {
    use boardcast_game::device::{Piece as DevicePiece, PieceLifted, PiecePlaced};
    let mut board = Board::read_with(interpretation);
    board.clock(ClockRun::White);
    let mut pos = Chess::default();
    let g1 = u32::from(shakmaty::Square::G1);
    // The knight is lifted and put back, then the e-pawn moves.
    board.observe(Obs::Lifted(PieceLifted {
        square: g1,
        piece: DevicePiece::WhiteKnight as i32,
    }));
    board.observe(Obs::Placed(PiecePlaced {
        square: g1,
        piece: DevicePiece::WhiteKnight as i32,
    }));
    board.play(&mut pos, "e4");
    let breaches: Vec<_> = board
        .kinds()
        .into_iter()
        .filter_map(|k| match k {
            Kind::TouchMove(b) => Some(b.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(breaches.len(), 1, "{:?}", board.kinds());
    assert_eq!(breaches[0].breach, "own_piece_not_moved");
    assert_eq!(breaches[0].article, article);
    assert_eq!(breaches[0].square, "g1");
    assert_eq!(
        breaches[0].touch_game_seqs.len(),
        1,
        "the lift of the knight"
    );
    // A possibility for the arbiter, never a penalty: the move stands.
    assert_eq!(board.game.moves().len(), 1);
    // The next move starts with a clean slate.
    board.play(&mut pos, "e5");
    assert_eq!(board.count(|k| matches!(k, Kind::TouchMove(_))), 1);
}

/// A piece released on a square and then moved on: under 2023 the clause is 4.7 (4.6 became the
/// act of promotion in 2014), as interpretation 6 cites it; a game read by 5 keeps 4.6. A piece
/// put down where no move of it goes made no move: interpretation 6 holds nothing against it.
#[test]
fn a_released_piece_is_cited_as_the_edition_numbers_it_and_a_put_down_no_move_makes_is_none() {
    use boardcast_game::device::{Piece as DevicePiece, PieceLifted, PiecePlaced};
    let square = |sq: shakmaty::Square| u32::from(sq);
    let touch_moves = |board: &Board| -> Vec<(String, String)> {
        board
            .kinds()
            .into_iter()
            .filter_map(|k| match k {
                Kind::TouchMove(b) => Some((b.breach.clone(), b.article.clone())),
                _ => None,
            })
            .collect()
    };
    for (interpretation, article) in [(5, "4.6"), (6, "4.7")] {
        // 1. Nf3 put down, lifted again and played to h3.
        let mut board = Board::read_with(interpretation);
        board.clock(ClockRun::White);
        let knight = DevicePiece::WhiteKnight as i32;
        for (lifted, sq) in [
            (true, shakmaty::Square::G1),
            (false, shakmaty::Square::F3),
            (true, shakmaty::Square::F3),
            (false, shakmaty::Square::H3),
        ] {
            if lifted {
                board.observe(Obs::Lifted(PieceLifted {
                    square: square(sq),
                    piece: knight,
                }));
            } else {
                board.observe(Obs::Placed(PiecePlaced {
                    square: square(sq),
                    piece: knight,
                }));
            }
        }
        let mut pos = Chess::default();
        board.play(&mut pos, "Nh3");
        assert_eq!(
            touch_moves(&board),
            [("released_piece_moved_again".to_owned(), article.to_owned())],
            "interpretation {interpretation}"
        );

        // 1... e5 2. e4: the bishop put down on f3, where no move of it goes, then played to c4.
        let mut board = Board::read_with(interpretation);
        board.clock(ClockRun::White);
        let mut pos = Chess::default();
        board.play(&mut pos, "e4");
        board.play(&mut pos, "e5");
        let bishop = DevicePiece::WhiteBishop as i32;
        board.observe(Obs::Lifted(PieceLifted {
            square: square(shakmaty::Square::F1),
            piece: bishop,
        }));
        board.observe(Obs::Placed(PiecePlaced {
            square: square(shakmaty::Square::F3),
            piece: bishop,
        }));
        board.observe(Obs::Lifted(PieceLifted {
            square: square(shakmaty::Square::F3),
            piece: bishop,
        }));
        board.observe(Obs::Placed(PiecePlaced {
            square: square(shakmaty::Square::C4),
            piece: bishop,
        }));
        board.play(&mut pos, "Bc4");
        assert_eq!(board.game.moves().len(), 3);
        let expected: &[(String, String)] = if interpretation < 6 {
            &[("released_piece_moved_again".to_owned(), "4.6".to_owned())]
        } else {
            &[]
        };
        assert_eq!(
            touch_moves(&board),
            expected,
            "interpretation {interpretation}"
        );
        board.assert_refolds();
    }
}

/// Plays 40 moves each in the first period (90 min + 30 s per move, then 30 min + 30 s), each
/// move taking 10 s; at move 40 the clock adds the second period's time only if `adds_period`.
fn forty_moves(adds_period: bool) -> Board {
    forty_moves_read_with(None, adds_period)
}

/// [`forty_moves`] in a game read with `interpretation` (the current one when `None`).
fn forty_moves_read_with(interpretation: Option<u32>, adds_period: bool) -> Board {
    let mut board = match interpretation {
        None => Board::new("fide-2009"),
        Some(interpretation) => {
            let mut set_up = Board::new("fide-2009").game.info().clone();
            set_up.interpretation = interpretation;
            let mut board = Board::recorded(set_up);
            board.start_clock(90 * 60_000);
            board
        }
    };
    let mut pos = Chess::default();
    let mut clocks = [90 * 60_000u64, 90 * 60_000u64];
    let mut t = 1_000_000i64;
    let cycle = ["Nf3", "Nf6", "Ng1", "Ng8"];
    for ply in 0..80usize {
        let side = ply % 2;
        t += 10_000;
        clocks[side] = clocks[side] - 10_000 + 30_000;
        if ply / 2 + 1 == 40 && adds_period {
            clocks[side] += 30 * 60_000;
        }
        board.play_timed(&mut pos, cycle[ply % 4], t, (clocks[0], clocks[1]));
    }
    board
}

fn clock_alerts(board: &Board) -> Vec<boardcast_game::events::ClockAlert> {
    board
        .kinds()
        .into_iter()
        .filter_map(|k| match k {
            Kind::ClockAlert(a) => Some(a.clone()),
            _ => None,
        })
        .collect()
}

/// White's flag shows in the second period on a clock that did not add its 30 minutes at move
/// 40 (its move counter is wrong): from interpretation 8 the flag does not end the game (a clock
/// with an evident defect, Article 6.10) and an alert says why. A flag after the clock added the
/// time, or in a game read with interpretation 7, ends it as before.
#[test]
fn a_flag_after_a_period_the_clock_did_not_add_does_not_end_the_game() {
    for (interpretation, adds_period, ends) in [
        (None, false, false),
        (None, true, true),
        (Some(7), false, true),
    ] {
        let mut board = forty_moves_read_with(interpretation, adds_period);
        let black = board
            .game
            .moves()
            .last()
            .and_then(|m| m.black_remaining_ms)
            .expect("read");
        board.observe_at(
            Obs::Clock(ClockReading {
                white_remaining_ms: 0,
                black_remaining_ms: black,
                running: ClockRun::White as i32,
                white_flag: true,
                ..Default::default()
            }),
            1_000_000 + 80 * 10_000 + 7_000_000,
        );
        let case = format!("interpretation {interpretation:?}, period added: {adds_period}");
        assert_eq!(board.game.is_over(), ends, "{case}");
        let not_counted: Vec<_> = clock_alerts(&board)
            .into_iter()
            .filter(|a| a.flag_not_counted)
            .collect();
        if ends {
            assert_eq!(board.game.result_token(), "0-1", "{case}");
            assert!(not_counted.is_empty(), "{case}: {not_counted:?}");
        } else {
            assert_eq!(not_counted.len(), 1, "{case}");
            assert_eq!(
                (not_counted[0].ply, not_counted[0].side.as_str()),
                (80, "white")
            );
            assert_eq!(not_counted[0].expected_ms, 30 * 60_000);
            assert!(
                not_counted[0].reason.contains("completed move 40"),
                "{}",
                not_counted[0].reason
            );
            let alert = board
                .alerts
                .alerts()
                .last()
                .cloned()
                .expect("an alert for the flag");
            assert_eq!(alert.kind, boardcast_game::alerts::AlertKind::ClockMismatch);
            assert_eq!(alert.article, "6.10");
            assert!(
                alert.summary.contains("does not end the game"),
                "{}",
                alert.summary
            );
        }
        board.assert_refolds();
    }
}

/// A clock whose move counter was one behind adds the second period's time a move late, at
/// White's move 41: a flag White's clock shows after that counts, as the time was given.
#[test]
fn a_flag_after_the_period_time_came_a_move_late_ends_the_game() {
    let mut board = forty_moves(false);
    let last = board.game.moves().last().cloned().expect("moves");
    let (white, black) = (
        last.white_remaining_ms.expect("read"),
        last.black_remaining_ms.expect("read"),
    );
    let mut pos = board.game.position().clone();
    let t = 1_000_000 + 80 * 10_000;
    let white = white - 10_000 + 30_000 + 30 * 60_000;
    board.play_timed(&mut pos, "Nf3", t + 10_000, (white, black));
    let black = black - 10_000 + 30_000;
    board.play_timed(&mut pos, "Nf6", t + 20_000, (white, black));
    let late: Vec<_> = clock_alerts(&board)
        .into_iter()
        .filter(|a| a.ply == 81)
        .collect();
    assert_eq!(late.len(), 1, "the late addition is told: {late:?}");
    board.observe_at(
        Obs::Clock(ClockReading {
            white_remaining_ms: 0,
            black_remaining_ms: black,
            running: ClockRun::White as i32,
            white_flag: true,
            ..Default::default()
        }),
        t + 20_000 + 7_000_000,
    );
    assert!(board.game.is_over(), "{:?}", clock_alerts(&board));
    assert_eq!(board.game.result_token(), "0-1");
    board.assert_refolds();
}

/// A game set up on a board whose clock still shows the last game's fallen flag: from
/// interpretation 8 that flag does not end the new game before it began, and an alert says to
/// set the clock (under interpretation 7 it ended the game at once). Set and started, the clock
/// counts as ever: a flag that falls in play ends the game.
#[test]
fn a_flag_left_from_the_last_game_does_not_end_the_next_one() {
    let periods = vec![TimePeriod {
        moves: 0,
        base_ms: 300_000,
        ..Default::default()
    }];
    for (interpretation, ends) in [(8, false), (7, true)] {
        let mut set_up = started("fide-2023", "", periods.clone());
        set_up.interpretation = interpretation;
        let mut board = Board::recorded(set_up);
        board.observe(Obs::Clock(ClockReading {
            white_remaining_ms: 12_000,
            black_remaining_ms: 0,
            running: ClockRun::Stopped as i32,
            black_flag: true,
            ..Default::default()
        }));
        assert_eq!(
            board.game.is_over(),
            ends,
            "interpretation {interpretation}"
        );
        if !ends {
            let alerts = clock_alerts(&board);
            assert_eq!(alerts.len(), 1, "{alerts:?}");
            assert!(alerts[0].flag_not_counted && alerts[0].ply == 0);
            assert!(
                alerts[0].reason.contains("not run in this game"),
                "{alerts:?}"
            );
            let summary = &board.alerts.alerts()[0].summary;
            assert!(
                summary.starts_with("before the first move: Black's flag"),
                "{summary}"
            );
            // Set and started for this game; White moves, and Black's flag falls in play.
            board.start_clock(300_000);
            let mut pos = Chess::default();
            board.play(&mut pos, "e4");
            board.observe(Obs::Clock(ClockReading {
                white_remaining_ms: 290_000,
                black_remaining_ms: 0,
                running: ClockRun::Black as i32,
                black_flag: true,
                ..Default::default()
            }));
            assert!(board.game.is_over());
            assert_eq!(board.game.result_token(), "1-0");
        }
        board.assert_refolds();
    }
}

#[test]
fn clocks_follow_a_two_period_time_control_with_increment() {
    let board = forty_moves(true);
    assert_eq!(board.game.moves().len(), 80);
    assert_eq!(
        clock_alerts(&board),
        vec![],
        "every reading is as the time control predicts"
    );
}

#[test]
fn a_period_not_added_at_move_40_is_an_alert_and_the_clock_stands() {
    let board = forty_moves(false);
    let alerts = clock_alerts(&board);
    assert_eq!(alerts.len(), 2, "{alerts:?}");
    assert_eq!((alerts[0].ply, alerts[0].side.as_str()), (79, "white"));
    assert_eq!((alerts[1].ply, alerts[1].side.as_str()), (80, "black"));
    assert!(
        alerts[0]
            .reason
            .contains("30 min were not added after move 40"),
        "{}",
        alerts[0].reason
    );
    assert_eq!(alerts[0].expected_ms - alerts[0].reported_ms, 30 * 60_000);
    // The device's reading is what the record keeps (Article 6.10).
    let last = board.game.moves().last().cloned().expect("moves");
    assert_eq!(Some(alerts[1].reported_ms), last.black_remaining_ms);
}

#[test]
fn the_board_going_away_and_coming_back_is_told_to_the_arbiter_once() {
    use boardcast_game::device::{DeviceState, DeviceStatus};
    let mut board = Board::new("fide-2023");
    let changes = |board: &Board| -> Vec<(i32, bool)> {
        board
            .kinds()
            .into_iter()
            .filter_map(|k| match k {
                Kind::BoardStatus(s) => Some((s.state, s.battery_low)),
                _ => None,
            })
            .collect()
    };
    board.observe(status(DeviceState::Connected, Some(80)));
    board.observe(status(DeviceState::Connected, Some(79)));
    board.observe(status(DeviceState::Disconnected, None));
    board.observe(status(DeviceState::Disconnected, None));
    board.observe(status(DeviceState::Connected, Some(18)));
    board.observe(status(DeviceState::Connected, Some(17)));
    // A battery report without a state: the connection is as it was.
    board.observe(status(DeviceState::Unspecified, Some(12)));
    assert_eq!(
        changes(&board),
        vec![
            (DeviceState::Connected as i32, false),
            (DeviceState::Disconnected as i32, false),
            (DeviceState::Connected as i32, false),
        ]
    );
    let status = board.game.board_status();
    assert_eq!(status.state, DeviceState::Connected);
    assert_eq!(status.battery_percent, Some(18));

    // Low battery reported once, also when no connection change comes with it.
    let mut board = Board::new("fide-2023");
    board.observe(Obs::Status(DeviceStatus {
        state: DeviceState::Connected as i32,
        battery_percent: Some(50),
        ..Default::default()
    }));
    for percent in [21, 20, 19] {
        board.observe(Obs::Status(DeviceStatus {
            state: DeviceState::Connected as i32,
            battery_percent: Some(percent),
            ..Default::default()
        }));
    }
    assert_eq!(
        changes(&board),
        vec![
            (DeviceState::Connected as i32, false),
            (DeviceState::Connected as i32, true),
        ]
    );
}

#[test]
fn a_move_pressed_before_the_piece_landed_is_completed_with_the_next_press() {
    // White presses with the knight still in hand (an irregular position at the press), then
    // puts it down; Black replies and presses: both moves are completed by that press.
    let mut board = Board::new("fide-2023");
    let mut pos = Chess::default();
    board.play(&mut pos, "e4");
    board.play(&mut pos, "e5");
    let mut in_hand = pos.board().clone();
    in_hand.discard_piece_at(shakmaty::Square::G1);
    board.observe(Obs::Placement(BoardPlacement {
        placement: in_hand.board_fen().to_string(),
    }));
    board.clock(ClockRun::Black);
    play_san(&mut pos, "Nf3");
    board.placement(pos.board());
    assert_eq!(board.game.completed_moves().len(), 2);
    assert_eq!(
        board.game.provisional().map(|p| p.san.as_str()),
        Some("Nf3")
    );
    play_san(&mut pos, "Nc6");
    board.placement(pos.board());
    let line: Vec<&str> = board
        .game
        .provisional_line()
        .iter()
        .map(|p| p.san.as_str())
        .collect();
    assert_eq!(line, ["Nf3", "Nc6"]);
    board.clock(ClockRun::White);
    let sans: Vec<&str> = board
        .game
        .completed_moves()
        .iter()
        .map(|m| m.event.san.as_str())
        .collect();
    assert_eq!(sans, ["e4", "e5", "Nf3", "Nc6"]);
    assert!(board.game.provisional_line().is_empty());
}

/// A 90-minute game (30 s a move) whose clock first runs showing `white` and `black`, read
/// with `interpretation`; the board shows the start position, then `before` played on it (not
/// pressed), before the clock starts.
fn clock_started_showing(interpretation: u32, before: &[&str], white: u64, black: u64) -> Board {
    let mut board = Board::read_with(interpretation);
    let mut pos = Chess::default();
    board.placement(pos.board());
    for san in before {
        play_san(&mut pos, san);
        board.placement(pos.board());
    }
    board.observe(Obs::Clock(ClockReading {
        white_remaining_ms: white,
        black_remaining_ms: black,
        running: ClockRun::White as i32,
        ..Default::default()
    }));
    board
}

#[test]
fn a_clock_set_wrongly_is_told_when_it_starts() {
    let ninety = 90 * 60_000;
    // Set to two hours for a 90-minute game: both displays, before the first move.
    let board = clock_started_showing(7, &[], 120 * 60_000, 120 * 60_000);
    let alerts = clock_alerts(&board);
    let told: Vec<(u32, &str, u64, u64)> = alerts
        .iter()
        .map(|a| (a.ply, a.side.as_str(), a.expected_ms, a.reported_ms))
        .collect();
    assert_eq!(
        told,
        [
            (0, "white", ninety, 120 * 60_000),
            (0, "black", ninety, 120 * 60_000)
        ]
    );
    assert_eq!(
        alerts[1].reason,
        "the clock was set to 2:00:00 where the time control starts from 1:30:00"
    );
    let raised = board.seqs(|k| matches!(k, Kind::ClockAlert(_)));
    let summary = &board.alert(raised[1]).summary;
    assert_eq!(
        summary,
        "before the first move: Black's clock was set to 2:00:00 where the time control starts \
         from 1:30:00. Set it right before play."
    );
    board.assert_refolds();

    // Black's display, which has not run, short by ten minutes; White's running one may be
    // below the time (the clock may have run before the board saw it), not above it.
    let board = clock_started_showing(7, &[], ninety - 60_000, 80 * 60_000);
    let told: Vec<String> = clock_alerts(&board).into_iter().map(|a| a.side).collect();
    assert_eq!(told, ["black"]);

    // Set right, a moment after it started, or with the increment already given: nothing.
    for (white, black) in [
        (ninety, ninety),
        (ninety - 2_000, ninety),
        (ninety + 30_000, ninety + 30_000),
    ] {
        let board = clock_started_showing(7, &[], white, black);
        assert_eq!(clock_alerts(&board), vec![], "{white} {black}");
    }

    // Checked at every start before the first move (a start to try the clock uses nothing
    // up), each display told once for what it shows.
    let mut board = clock_started_showing(7, &[], ninety, ninety);
    let restart = |board: &mut Board, white: u64, black: u64| {
        for running in [ClockRun::Stopped, ClockRun::White] {
            board.observe(Obs::Clock(ClockReading {
                white_remaining_ms: white,
                black_remaining_ms: black,
                running: running as i32,
                ..Default::default()
            }));
        }
    };
    restart(&mut board, ninety, 60_000);
    restart(&mut board, ninety, 60_000);
    let told: Vec<(u32, String, u64)> = clock_alerts(&board)
        .into_iter()
        .map(|a| (a.ply, a.side, a.reported_ms))
        .collect();
    assert_eq!(told, [(0, "black".to_owned(), 60_000)]);
    restart(&mut board, ninety, ninety);
    assert_eq!(clock_alerts(&board).len(), 1, "set right: nothing more");
    board.assert_refolds();

    // The board never showed the start position (the system joined a game in play, the board
    // irregular): nothing is said of how the clock was set.
    let mut board = Board::read_with(7);
    board.start_clock(60 * 60_000);
    assert_eq!(clock_alerts(&board), vec![]);

    // The board already shows a move (the system joined a game in play), or the game is read
    // as before interpretation 7: nothing is said of how the clock was set.
    let board = clock_started_showing(7, &["e4"], 120 * 60_000, 120 * 60_000);
    assert_eq!(clock_alerts(&board), vec![]);
    let board = clock_started_showing(6, &[], 120 * 60_000, 120 * 60_000);
    assert_eq!(clock_alerts(&board), vec![]);
}

#[test]
fn a_game_from_a_position_with_black_to_move_predicts_no_first_move_from_the_other_display() {
    // White's first move, ply 2 here, takes a minute: nothing to say of it.
    let fen = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1";
    let ninety = 90 * 60_000;
    let mut board = Board::with(
        "fide-2023",
        fen,
        vec![TimePeriod {
            moves: 0,
            base_ms: ninety,
            increment_ms: 30_000,
            delay_ms: 0,
        }],
    );
    let mut pos = position(fen);
    board.play_timed(&mut pos, "e5", 10_000, (ninety, ninety + 20_000));
    board.play_timed(&mut pos, "Nf3", 70_000, (ninety - 30_000, ninety + 20_000));
    assert_eq!(board.game.moves().len(), 2);
    assert_eq!(clock_alerts(&board), vec![], "{:?}", board.kinds());
}

/// 12 plies of a 90-minute game with 30 s a move (knights out and back: no fivefold
/// repetition yet), each move taking 10 s, on a clock that adds `added` after each move, read
/// with `interpretation`.
fn clock_adding(interpretation: u32, added: impl Fn(usize) -> u64) -> Board {
    let ninety = 90 * 60_000u64;
    let mut board = Board::read_with(interpretation);
    board.start_clock(ninety);
    let mut pos = Chess::default();
    let mut clocks = [ninety, ninety];
    let mut t = 1_000i64;
    let cycle = ["Nf3", "Nf6", "Ng1", "Ng8"];
    for ply in 1..=12usize {
        let side = (ply + 1) % 2;
        t += 10_000;
        clocks[side] = clocks[side] - 10_000 + added(ply);
        board.play_timed(&mut pos, cycle[(ply - 1) % 4], t, (clocks[0], clocks[1]));
    }
    assert_eq!(board.game.moves().len(), 12);
    board
}

#[test]
fn a_clock_without_the_increment_is_told_once_for_each_side() {
    let board = clock_adding(7, |_| 0);
    let alerts = clock_alerts(&board);
    let told: Vec<(u32, &str, &str)> = alerts
        .iter()
        .map(|a| (a.ply, a.side.as_str(), a.reason.as_str()))
        .collect();
    assert_eq!(
        told,
        [
            (2, "black", "the 30 s increment was not added after move 1"),
            (3, "white", "the 30 s increment was not added after move 2"),
        ]
    );
    board.assert_refolds();
    // Read as before interpretation 7: every move of White's from the second, and Black's.
    let before = clock_alerts(&clock_adding(6, |_| 0));
    assert_eq!(before.len(), 10, "{before:?}");

    // 10 s where the time control gives 30: told once a side, in seconds.
    let alerts = clock_alerts(&clock_adding(7, |_| 10_000));
    assert_eq!(alerts.len(), 2, "{alerts:?}");
    assert_eq!(
        alerts[0].reason,
        "the clock differs by -20 s from the time control's prediction"
    );

    // Put right for White's 4th and 5th moves and Black's, wrong again from the 6th: told
    // again then.
    let alerts = clock_alerts(&clock_adding(7, |ply| {
        if (7..11).contains(&ply) { 30_000 } else { 0 }
    }));
    let told: Vec<(u32, &str)> = alerts.iter().map(|a| (a.ply, a.side.as_str())).collect();
    assert_eq!(
        told,
        [(2, "black"), (3, "white"), (11, "white"), (12, "black")]
    );
}

#[test]
fn a_delay_is_not_taken_from_the_clock() {
    // 5 minutes with a 15-second delay: a 3-second move costs nothing, a 25-second one 10 s.
    let periods = vec![TimePeriod {
        moves: 0,
        base_ms: 300_000,
        increment_ms: 0,
        delay_ms: 15_000,
    }];
    let play = |reported_after_slow_move: u64| {
        let mut board = Board::with("fide-2023", "", periods.clone());
        let mut pos = Chess::default();
        let mut t = 1_000_000i64;
        for (san, think, white, black) in [
            ("e4", 3_000, 300_000, 300_000),
            ("e5", 3_000, 300_000, 300_000),
            ("Nf3", 25_000, reported_after_slow_move, 300_000),
        ] {
            t += think;
            board.play_timed(&mut pos, san, t, (white, black));
        }
        assert_eq!(board.game.completed_moves().len(), 3);
        clock_alerts(&board)
    };
    assert!(play(290_000).is_empty(), "10 s over the delay were used");
    // The clock took the whole 25 s: not what a delay clock does.
    let alerts = play(275_000);
    assert_eq!(alerts.len(), 1, "{alerts:?}");
    assert_eq!(alerts[0].expected_ms, 290_000);
}

#[test]
fn a_claim_ruled_on_by_the_arbiter_is_recorded_with_the_log_verdict() {
    use boardcast_game::events::{
        ClaimKind as Kind2, ClaimRuling, GameResult, Termination, arbiter_action::Action,
    };
    let ruling = |claimant: &str, intended: &str, upheld: bool| {
        Action::Claim(ClaimRuling {
            claimant: claimant.into(),
            kind: Kind2::Threefold as i32,
            intended_move: intended.into(),
            upheld,
            ..Default::default()
        })
    };
    let judged = |board: &Board| {
        board
            .kinds()
            .into_iter()
            .filter_map(|k| match k {
                Kind::ClaimJudged(j) => Some(j.clone()),
                _ => None,
            })
            .collect::<Vec<_>>()
    };

    let mut board = Board::new("fide-2023");
    let mut pos = Chess::default();
    for san in ["Nf3", "Nf6", "Ng1", "Ng8", "Nf3", "Nf6", "Ng1"] {
        board.play(&mut pos, san);
    }
    // Black is to move: White cannot claim.
    let refused = act(&mut board, ruling("white", "", false), "IA Arbiter");
    assert!(refused.is_err());
    // Too early on the position: rejected, with the 2023 penalty (Article 9.5.3: +2 min) for
    // the opponent, and the game goes on.
    act(&mut board, ruling("black", "", false), "IA Arbiter").expect("recorded");
    let first = &judged(&board)[0];
    assert_eq!(first.verdict_from_log, "rejected");
    assert!(!first.upheld);
    assert_eq!(first.opponent_bonus_ms, 120_000);
    assert!(!board.game.is_over());
    // With the intended move Ng8 the start position stands for the third time: upheld.
    act(&mut board, ruling("black", "Ng8", true), "IA Arbiter").expect("recorded");
    let second = &judged(&board)[1];
    assert_eq!(second.verdict_from_log, "upheld");
    assert!(second.upheld);
    assert!(
        second.unconfirmed_plies.is_empty(),
        "every move was pressed"
    );
    assert!(
        !second.game_seqs.is_empty(),
        "the verdict names its log entries"
    );
    assert_eq!(
        board.game.result(),
        Some((GameResult::Draw, Termination::DrawClaim))
    );
}

#[test]
fn clock_times_no_clock_shows_are_refused_and_never_overflow_when_in_the_log() {
    use boardcast_game::NewEvent;
    use boardcast_game::events::{
        AdjustClocks, ArbiterAction, Provenance, RestorePosition, arbiter_action::Action,
    };
    let mut board = Board::five_minutes();
    let mut pos = Chess::default();
    let day = 24 * 3_600_000;
    // Refused with a reason, nothing recorded; a day itself is taken.
    let before = board.game.last_game_seq();
    for (added, set) in [
        (i64::MAX, None),
        (i64::MIN, None),
        (day + 1, None),
        (-(day + 1), None),
        (0, Some(u64::MAX)),
        (0, Some(day as u64 + 1)),
    ] {
        let adjusted = Action::Clocks(AdjustClocks {
            white_added_ms: added,
            black_remaining_ms: set,
            reason: "slip".into(),
            ..Default::default()
        });
        let refused = act(&mut board, adjusted, "IA Smith").expect_err("refused");
        assert!(refused.to_string().contains("a day"), "{refused}");
    }
    let restored = Action::Restore(RestorePosition {
        ply: 0,
        reason: "slip".into(),
        white_remaining_ms: Some(u64::MAX),
        black_remaining_ms: None,
    });
    let refused = act(&mut board, restored, "IA Smith").expect_err("refused");
    assert!(refused.to_string().contains("a day"), "{refused}");
    assert_eq!(board.game.last_game_seq(), before, "nothing recorded");
    let a_day = Action::Clocks(AdjustClocks {
        white_added_ms: day,
        reason: "a day".into(),
        ..Default::default()
    });
    act(&mut board, a_day, "IA Smith").expect("a day is taken");

    // The same numbers in the log (another writer's records): the moves after them are decided
    // and their clocks compared without an overflow; where nothing can be predicted, no alert.
    let mut t = 1_000_000i64;
    let mut play = |board: &mut Board, pos: &mut Chess, san: &str| {
        t += 3_000;
        board.play_timed(pos, san, t, (297_000, 297_000));
    };
    play(&mut board, &mut pos, "e4");
    play(&mut board, &mut pos, "e5");
    for (added, set) in [(i64::MAX, None), (i64::MIN, Some(u64::MAX))] {
        board.append(vec![NewEvent {
            kind: Kind::Arbiter(ArbiterAction {
                action: Some(Action::Clocks(AdjustClocks {
                    white_added_ms: added,
                    black_added_ms: added,
                    white_remaining_ms: set,
                    black_remaining_ms: set,
                    reason: "written elsewhere".into(),
                })),
                ..Default::default()
            }),
            provenance: Provenance {
                source: Source::Arbiter as i32,
                actor: "elsewhere".into(),
                ..Default::default()
            },
        }]);
        play(&mut board, &mut pos, "Nf3");
        play(&mut board, &mut pos, "Nc6");
        pos = Chess::default();
        for san in ["e4", "e5"] {
            play_san(&mut pos, san);
        }
        let back = Action::Restore(RestorePosition {
            ply: 2,
            reason: "again".into(),
            white_remaining_ms: Some(297_000),
            black_remaining_ms: Some(297_000),
        });
        act(&mut board, back, "IA Smith").expect("accepted");
        board.placement(pos.board());
    }
    assert_eq!(board.game.moves().len(), 2);
    board.assert_refolds();
}

#[test]
fn the_appeal_timeline_and_the_broadcast_read_an_adjustment_that_adds_and_sets_alike() {
    use boardcast_game::display::DisplayGame;
    use boardcast_game::events::{AdjustClocks, arbiter_action::Action};
    use boardcast_game::timeline::FoldedGame;
    let mut board = Board::new("fide-2023");
    let mut pos = Chess::default();
    board.play_timed(&mut pos, "e4", 10_000, (5_390_000, 5_400_000));
    act(
        &mut board,
        Action::Clocks(AdjustClocks {
            white_added_ms: 60_000,
            black_added_ms: 60_000,
            white_remaining_ms: Some(3_000_000),
            black_remaining_ms: None,
            reason: "both given".into(),
        }),
        "IA Smith",
    )
    .expect("accepted");
    let mut folded: Option<FoldedGame> = None;
    let mut display: Option<DisplayGame> = None;
    for record in &board.records {
        let opened = Game::open(record.clone()).expect("opens");
        match folded.as_mut() {
            Some(f) => {
                f.apply(&opened).expect("folds");
            }
            None => folded = Some(FoldedGame::start(&opened).expect("folds").0),
        }
        match display.as_mut() {
            Some(d) => d.evolve(opened.event()).expect("shows"),
            None => display = Some(DisplayGame::start(opened.event()).expect("shows")),
        }
    }
    let timeline = folded.expect("folded").clocks;
    let shown = display.and_then(|d| d.clocks).expect("clocks shown");
    // Time added, then the clock set: White's is what was set, Black's has the minute.
    assert_eq!(timeline.white_ms, Some(3_000_000));
    assert_eq!(timeline.black_ms, Some(5_460_000));
    // The broadcast dates its clocks (viewers count the side to move down from then): Black's,
    // which ran from the reading to the adjustment, is counted down to it first.
    let reading_at = board.events[board.move_seq(1) as usize - 2].recorded_unix_ms;
    let adjusted_at = board.events.last().expect("adjusted").recorded_unix_ms;
    let ran = (adjusted_at - reading_at) as u64;
    assert!(ran > 0);
    assert_eq!(shown.as_of_unix_ms, adjusted_at);
    assert_eq!(
        (timeline.white_ms, timeline.black_ms.map(|ms| ms - ran)),
        (Some(shown.white_ms), Some(shown.black_ms))
    );
}

/// White thinks for ten minutes; the arbiter gives Black two minutes meanwhile. Viewers go on
/// seeing White's clock run from where it stood, not from where it stood at White's last press.
#[test]
fn time_given_to_one_player_leaves_the_other_players_running_clock_as_it_ran() {
    use boardcast_game::events::{AdjustClocks, arbiter_action::Action};
    let mut board = Board::new("fide-2023");
    let mut pos = Chess::default();
    board.play_timed(&mut pos, "e4", 10_000, (5_390_000, 5_400_000));
    board.play_timed(&mut pos, "e5", 20_000, (5_390_000, 5_390_000));
    let before = shown(&board.records).clocks.expect("clocks");
    act(
        &mut board,
        Action::Clocks(AdjustClocks {
            black_added_ms: 120_000,
            reason: "illegal move by White".into(),
            ..Default::default()
        }),
        "IA Smith",
    )
    .expect("accepted");
    let after = shown(&board.records).clocks.expect("clocks");
    let ran = u64::try_from(after.as_of_unix_ms - before.as_of_unix_ms).expect("later");
    assert!(ran > 0);
    // At any moment after, White's clock as viewers count it is what it was before.
    let white_now = |c: &boardcast_game::display::Clocks, now: i64| {
        c.white_ms - u64::try_from(now - c.as_of_unix_ms).expect("later")
    };
    let now = after.as_of_unix_ms + 5_000;
    assert_eq!(white_now(&after, now), white_now(&before, now));
    assert_eq!(after.black_ms, before.black_ms + 120_000);
}

#[test]
fn time_the_arbiter_gives_or_sets_is_expected_on_the_clock() {
    use boardcast_game::events::{AdjustClocks, RestorePosition, arbiter_action::Action};
    // Every move takes 3 s.
    let mut board = Board::five_minutes();
    let mut pos = Chess::default();
    let mut t = 1_000_000i64;
    let mut play = |board: &mut Board, pos: &mut Chess, san: &str, white: u64, black: u64| {
        t += 3_000;
        board.play_timed(pos, san, t, (white, black));
    };
    play(&mut board, &mut pos, "e4", 297_000, 300_000);
    play(&mut board, &mut pos, "e5", 297_000, 297_000);
    // Two minutes for White (Article 7.5.5 after an illegal move by Black): White's next reading
    // has them.
    act(
        &mut board,
        Action::Clocks(AdjustClocks {
            white_added_ms: 120_000,
            reason: "illegal move by Black".into(),
            ..Default::default()
        }),
        "IA Smith",
    )
    .expect("accepted");
    play(&mut board, &mut pos, "Nf3", 414_000, 297_000);
    play(&mut board, &mut pos, "Nc6", 414_000, 294_000);
    assert_eq!(clock_alerts(&board), vec![], "the added time was expected");

    // Back to the position after 1. e4 e5 (Article 7) with the clocks set for it: the readings
    // start again from what the arbiter set.
    act(
        &mut board,
        Action::Restore(RestorePosition {
            ply: 2,
            reason: "pieces displaced".into(),
            white_remaining_ms: Some(400_000),
            black_remaining_ms: Some(290_000),
        }),
        "IA Smith",
    )
    .expect("accepted");
    let mut pos = Chess::default();
    for san in ["e4", "e5"] {
        play_san(&mut pos, san);
    }
    board.placement(pos.board());
    play(&mut board, &mut pos, "Nf3", 397_000, 290_000);
    play(&mut board, &mut pos, "Nc6", 397_000, 287_000);
    play(&mut board, &mut pos, "Bb5", 394_000, 287_000);
    assert_eq!(board.game.moves().len(), 5);
    assert_eq!(
        clock_alerts(&board),
        vec![],
        "Black's reading after the restore starts from the clock set for Black"
    );
    // The rulings on the plies taken back stay in the score, at the ply play went on from.
    let notes = board.game.arbiter_notes();
    assert_eq!(
        notes,
        [
            (
                2,
                "+120 s for White; illegal move by Black (IA Smith)".to_owned()
            ),
            (
                2,
                "position after ply 2 restored; White's clock set to 0:06:40; Black's clock set \
                 to 0:04:50; pieces displaced (IA Smith)"
                    .to_owned()
            ),
        ],
    );

    // Time nobody gave is still an alert, also on a clock the arbiter set.
    play(&mut board, &mut pos, "a6", 394_000, 344_000);
    let alerts = clock_alerts(&board);
    assert_eq!(alerts.len(), 1, "{alerts:?}");
    assert_eq!((alerts[0].ply, alerts[0].expected_ms), (6, 284_000));
    act(
        &mut board,
        Action::Restore(RestorePosition {
            ply: 6,
            reason: "clock malfunction".into(),
            white_remaining_ms: Some(300_000),
            black_remaining_ms: Some(200_000),
        }),
        "IA Smith",
    )
    .expect("accepted");
    play(&mut board, &mut pos, "Ba4", 297_000, 200_000);
    play(&mut board, &mut pos, "Nf6", 297_000, 250_000);
    let alerts = clock_alerts(&board);
    assert_eq!(alerts.len(), 2, "{alerts:?}");
    assert_eq!((alerts[1].ply, alerts[1].expected_ms), (8, 197_000));
}

#[test]
fn a_confirmed_penalty_time_is_expected_on_the_opponent_clock() {
    penalty_time_on_the_clock(false);
}

/// The arbiter may set the clock at the board before confirming the penalty in the log: the
/// penalty counts from the illegal move, so the clock set afterwards is the starting point.
#[test]
fn a_clock_set_before_the_penalty_is_confirmed_is_expected() {
    penalty_time_on_the_clock(true);
}

/// Black completes an illegal move, White gets the penalty's time on the clock; with
/// `set_first`, the arbiter sets White's clock to include it before confirming the penalty.
fn penalty_time_on_the_clock(set_first: bool) {
    use boardcast_game::events::{AdjustClocks, PenaltyDecision, arbiter_action::Action};
    let periods = vec![TimePeriod {
        moves: 0,
        base_ms: 90 * 60_000,
        ..Default::default()
    }];
    let full = 90 * 60_000;
    let mut board = Board::with("fide-2023", "", periods);
    let mut pos = Chess::default();
    board.play_timed(&mut pos, "e4", 1_003_000, (full - 3_000, full));
    // Black completes an illegal move (Ng8-g6), then puts it back and gets the clock again.
    let mut wrong = pos.board().clone();
    let knight = wrong.remove_piece_at(shakmaty::Square::G8).expect("g8");
    wrong.set_piece_at(shakmaty::Square::G6, knight);
    let reading = |running: ClockRun| {
        Obs::Clock(ClockReading {
            white_remaining_ms: full - 3_000,
            black_remaining_ms: full - 1_000,
            running: running as i32,
            ..Default::default()
        })
    };
    board.observe_at(
        Obs::Placement(BoardPlacement {
            placement: wrong.board_fen().to_string(),
        }),
        1_003_900,
    );
    board.observe_at(reading(ClockRun::White), 1_004_000);
    board.observe_at(
        Obs::Placement(BoardPlacement {
            placement: pos.board().board_fen().to_string(),
        }),
        1_004_500,
    );
    board.observe_at(reading(ClockRun::Black), 1_004_600);
    // Black plays on with a press of their own: the press in doubt was an illegal move.
    board.play_timed(&mut pos, "e5", 1_006_000, (full - 3_000, full - 3_000));
    let illegal = board.game.illegal_moves()[0].clone();
    assert_eq!(illegal.event.offender, "black");
    let bonus = illegal.event.opponent_bonus_ms;
    assert!(bonus > 0, "{illegal:?}");
    if set_first {
        act(
            &mut board,
            Action::Clocks(AdjustClocks {
                white_remaining_ms: Some(full - 3_000 + bonus),
                reason: "penalty time for Black's illegal move".into(),
                ..Default::default()
            }),
            "IA Smith",
        )
        .expect("accepted");
    }
    act(
        &mut board,
        Action::Penalty(PenaltyDecision {
            illegal_move_game_seq: illegal.game_seq,
            confirmed: true,
            note: String::new(),
        }),
        "IA Smith",
    )
    .expect("accepted");
    // White's next reading has the time.
    board.play_timed(
        &mut pos,
        "Nf3",
        1_009_000,
        (full - 6_000 + bonus, full - 3_000),
    );
    assert_eq!(board.game.moves().len(), 3);
    assert_eq!(clock_alerts(&board), vec![]);
}

/// A clock whose White display the gateway takes for Black's: a new game reads the sides from
/// the clock's start (and the first press) and takes nothing for an illegal move; a game set up
/// before that (interpretation 0) reads the clock as it did then, so its log means what it meant.
#[test]
fn clock_sides_from_the_evidence_and_older_logs_as_they_were() {
    let clock_sides = |board: &Board| board.count(|k| matches!(k, Kind::ClockSides(_)));
    // The clock is started with White's time running, on the display read as Black's.
    let mut new = Board::read_with(boardcast_game::CURRENT_INTERPRETATION);
    let mut old = Board::read_with(0);
    for board in [&mut new, &mut old] {
        board.clock(ClockRun::Black);
        let mut pos = Chess::default();
        play_san(&mut pos, "e4");
        board.placement(pos.board());
        // White presses: the display read as White's runs now.
        board.clock(ClockRun::White);
    }
    // New: the sides the other way round, White's e4 completed by White's press.
    assert_eq!(clock_sides(&new), 2, "{:?}", new.kinds());
    assert_eq!(new.game.moves().len(), 1);
    assert!(illegal_moves(&new).is_empty());
    assert_eq!(new.game.setup_mismatches().len(), 1);
    // Old: the readings taken as the gateway labelled them, presses without a move at once.
    assert_eq!(clock_sides(&old), 0);
    assert!(old.game.moves().is_empty());
    assert_eq!(illegal_moves(&old).len(), 2, "{:?}", old.kinds());
    // An older game whose clock stands as its gateway says: moves completed with their clocks.
    let mut old = Board::read_with(0);
    old.clock(ClockRun::White);
    old.play(&mut Chess::default(), "e4");
    assert_eq!(old.game.moves()[0].white_remaining_ms, Some(5_000_000));
}

/// White's Nf3 is pressed, then the board reads Nh3 instead (a misread or a stray hand),
/// Black's e5 is seen while it does, and then the board as it is, Nf3 e5, before Black presses.
/// From interpretation 2 the game goes on with e5 completed; a game set up before
/// (interpretation 1) reads it as it did then: the press in doubt, nothing completed.
#[test]
fn a_board_back_on_the_game_after_a_stray_placement_and_older_logs_as_they_were() {
    let presses_in_doubt = |board: &Board| board.count(|k| matches!(k, Kind::PressInDoubt(_)));
    let withdrawn = |board: &Board| board.count(|k| matches!(k, Kind::ProvisionalWithdrawn(_)));
    let mut new = Board::read_with(boardcast_game::CURRENT_INTERPRETATION);
    let mut old = Board::read_with(1);
    for board in [&mut new, &mut old] {
        board.clock(ClockRun::White);
        let mut pos = Chess::default();
        board.play(&mut pos, "Nf3");
        let mut stray = Chess::default();
        play_san(&mut stray, "Nh3");
        board.placement(stray.board());
        let mut stray_on = stray.clone();
        play_san(&mut stray_on, "e5");
        board.placement(stray_on.board());
        board.play(&mut pos, "e5");
    }
    let sans = |board: &Board| -> Vec<String> {
        board
            .game
            .completed_moves()
            .iter()
            .map(|m| m.event.san.clone())
            .collect()
    };
    assert_eq!(sans(&new), ["Nf3", "e5"], "{:?}", new.kinds());
    assert_eq!(presses_in_doubt(&new), 0);
    // e5 after Nh3 was never on the game's line: nothing of the game's is withdrawn.
    assert_eq!(withdrawn(&new), 0, "{:?}", new.kinds());
    assert_eq!(sans(&old), ["Nf3"], "{:?}", old.kinds());
    assert_eq!(presses_in_doubt(&old), 1, "{:?}", old.kinds());
}

#[test]
fn a_capture_leaving_no_mate_possible_ends_the_game_at_once_with_the_clock() {
    use boardcast_game::events::Termination;
    // King takes the last rook: king against king, a dead position (Article 5.2.2). Nobody
    // presses after it, as after mate.
    let fen = "4k3/8/8/8/8/8/3r4/4K3 w - - 0 1";
    let mut board = Board::from_fen("fide-2023", fen);
    let mut pos: Chess = fen
        .parse::<shakmaty::fen::Fen>()
        .expect("fen")
        .into_position(shakmaty::CastlingMode::Standard)
        .expect("position");
    play_san(&mut pos, "Kxd2");
    // The clock was started (White's) at 1 s; the king takes 30 s later.
    board.observe_at(
        Obs::Placement(BoardPlacement {
            placement: pos.board().board_fen().to_string(),
        }),
        31_000,
    );
    let moves = board.game.moves();
    assert_eq!(moves.len(), 1, "{:?}", board.kinds());
    assert_eq!(moves[0].san, "Kxd2");
    // The clocks as the clock showed them at that moment.
    assert_eq!(moves[0].white_remaining_ms, Some(90 * 60_000 - 30_000));
    assert_eq!(moves[0].black_remaining_ms, Some(90 * 60_000));
    assert_eq!(
        board.game.result().map(|r| r.1),
        Some(Termination::DeadPosition)
    );

    // A game set up before (interpretation 2) waits for the press, as it was decided.
    let mut started = board.game.info().clone();
    started.interpretation = 2;
    let first = Game::record(
        None,
        GAME,
        vec![boardcast_game::NewEvent {
            kind: Kind::Started(started),
            provenance: Default::default(),
        }],
        0,
    )
    .remove(0);
    let mut older = Board::from_first_record(first, 0);
    older.clock(ClockRun::White);
    older.observe_at(
        Obs::Placement(BoardPlacement {
            placement: pos.board().board_fen().to_string(),
        }),
        31_000,
    );
    assert!(older.game.moves().is_empty());
    assert!(older.game.result().is_none());
}

#[test]
fn a_final_move_nobody_pressed_after_is_shown_and_a_resignation_settles_it() {
    use boardcast_game::display::{PROVISIONAL, UNCONFIRMED};
    use boardcast_game::events::{SideAction, arbiter_action::Action};
    let mut board = Board::new("fide-2023");
    let mut pos = Chess::default();
    board.play(&mut pos, "e4");
    // Black's reply is seen on the board; Black never presses (White resigns at once).
    play_san(&mut pos, "e5");
    board.placement(pos.board());
    assert_eq!(board.game.moves().len(), 1);
    // Shown for people, marked as the board's only.
    let shown = board.game.to_pgn().game;
    assert_eq!(shown.moves.len(), 2);
    assert_eq!(shown.moves[1].san, "e5");
    assert_eq!(shown.moves[1].comment.as_deref(), Some(PROVISIONAL));

    board.act(
        Action::Resignation(SideAction {
            side: "white".into(),
            ..Default::default()
        }),
        "IA Smith",
    );
    // The resignation settles the move on the record, as the board showed it.
    let moves = board.game.moves();
    assert_eq!(moves.len(), 2, "{:?}", board.kinds());
    assert_eq!(moves[1].san, "e5");
    assert_eq!(board.game.result_token(), "0-1");
    let completed = board.game.completed_moves();
    assert_eq!(completed[1].source, Source::BoardSensor, "not confirmed");
    let shown = board.game.to_pgn().game;
    assert_eq!(shown.moves[1].comment.as_deref(), Some(UNCONFIRMED));
    assert_eq!(shown.moves[0].comment, None, "confirmed by its press");
    // What happened stays on the record: the sighting, then the settling.
    assert_eq!(board.count(|k| matches!(k, Kind::MoveProvisional(_))), 2);

    // A game set up before interpretation 3 ends as it was decided: the sighting left aside.
    let mut older = Board::read_with(2);
    let mut pos = Chess::default();
    older.clock(ClockRun::White);
    older.play(&mut pos, "e4");
    play_san(&mut pos, "e5");
    older.placement(pos.board());
    older.act(
        Action::Resignation(SideAction {
            side: "white".into(),
            ..Default::default()
        }),
        "IA Smith",
    );
    assert_eq!(older.game.moves().len(), 1);
}

/// Two illegal moves by White settled by one press: the second is proposed as the loss (from
/// 2014 the second penalised illegal move loses, Article 7.5.5). The arbiter finds the first was
/// a sensor fault and rejects it: the second is then White's first, and its proposal says so
/// before anyone confirms it (interpretation 5; a game read by 4 keeps the stale proposal).
#[test]
fn rejecting_an_earlier_penalty_proposes_the_later_one_again() {
    use boardcast_game::events::{
        GameResult, PenaltyDecision, PenaltyKind, arbiter_action::Action,
    };
    for interpretation in [4, boardcast_game::CURRENT_INTERPRETATION] {
        let mut board = Board::read_with(interpretation);
        board.clock(ClockRun::White);
        let mut pos = Chess::default();
        illegal_attempt(&mut board, &pos);
        illegal_attempt(&mut board, &pos);
        board.play(&mut pos, "e4");
        let [first, second] = [0, 1].map(|i| board.game.illegal_moves()[i].clone());
        assert_eq!(second.event.offender_count, 2);
        assert_eq!(second.event.result_if_confirmed(), GameResult::BlackWins);
        assert!(
            board
                .alert(second.game_seq)
                .summary
                .contains("the game is lost")
        );

        // The loss counts the first, not ruled on yet: it cannot be confirmed before it
        // (interpretation 5), and the refusal records nothing.
        if interpretation >= 5 {
            let records = board.records.len();
            let refused = act(
                &mut board,
                Action::Penalty(PenaltyDecision {
                    illegal_move_game_seq: second.game_seq,
                    confirmed: true,
                    note: String::new(),
                }),
                "IA Smith",
            );
            assert!(
                refused
                    .as_ref()
                    .is_err_and(|e| e.to_string().contains("rule on that one first")),
                "{refused:?}"
            );
            assert_eq!(board.records.len(), records);
        }

        act(
            &mut board,
            Action::Penalty(PenaltyDecision {
                illegal_move_game_seq: first.game_seq,
                confirmed: false,
                note: "sensor fault".into(),
            }),
            "IA Smith",
        )
        .expect("accepted");
        let revised = board.seqs(|k| matches!(k, Kind::PenaltyRevised(_)));
        let now = board.game.illegal_moves()[1].clone();
        if interpretation < 5 {
            assert!(revised.is_empty());
            assert_eq!(now.event.result_if_confirmed(), GameResult::BlackWins);
            continue;
        }
        assert_eq!(revised.len(), 1, "{:?}", board.kinds());
        assert_eq!(now.event.offender_count, 1);
        assert_eq!(now.event.penalty(), PenaltyKind::OpponentTime);
        assert_eq!(now.event.opponent_bonus_ms, 120_000);
        assert_eq!(now.event.result_if_confirmed(), GameResult::Unspecified);
        let alert = board.alert(second.game_seq);
        assert!(alert.is_open());
        assert!(
            alert
                .summary
                .contains("120 s added to the opponent's clock"),
            "{}",
            alert.summary
        );
        assert!(alert.rests_on.contains(&revised[0]));
        board.assert_refolds();

        // Confirmed, it costs White time, not the game; and it counts as White's first.
        act(
            &mut board,
            Action::Penalty(PenaltyDecision {
                illegal_move_game_seq: second.game_seq,
                confirmed: true,
                note: String::new(),
            }),
            "IA Smith",
        )
        .expect("accepted");
        assert!(!board.game.is_over());
        assert_eq!(board.game.illegal_tally().white, 1);
        board.assert_refolds();
    }
}

/// Black claims a threefold repetition too early and the arbiter rejects it: White gets two
/// minutes (Article 9.5.3), which the arbiter adds on the clock. White's next reading shows
/// them, and that is what the time control predicts (interpretation 5): no clock alert.
#[test]
fn a_rejected_claims_time_is_expected_on_the_opponents_clock() {
    use boardcast_game::events::{
        ClaimKind as EventClaimKind, ClaimRuling, arbiter_action::Action,
    };
    for interpretation in [4, boardcast_game::CURRENT_INTERPRETATION] {
        let mut board = Board::read_with(interpretation);
        let base: u64 = 90 * 60_000;
        board.start_clock(base);
        let mut pos = Chess::default();
        // 10 s a move, 30 s increment.
        board.play_timed(&mut pos, "Nf3", 10_000, (base + 20_000, base));
        board.play_timed(&mut pos, "Nf6", 20_000, (base + 20_000, base + 20_000));
        board.play_timed(&mut pos, "Ng1", 30_000, (base + 40_000, base + 20_000));
        act(
            &mut board,
            Action::Claim(ClaimRuling {
                claimant_side: boardcast_game::events::Side::Black as i32,
                kind: EventClaimKind::Threefold as i32,
                upheld: false,
                ..Default::default()
            }),
            "IA Smith",
        )
        .expect("recorded");
        let penalty = boardcast_game::wording::describe(
            board.events.last().expect("recorded"),
            Some("fide-2023"),
        );
        assert_eq!(
            penalty.as_deref(),
            Some(
                "claim judged from the log: rejected; rejected by the arbiter: 120 s added to \
                 the opponent's clock"
            )
        );
        // The arbiter added the two minutes to White's clock at the board.
        let bonus = 120_000;
        board.play_timed(
            &mut pos,
            "Ng8",
            40_000,
            (base + 40_000 + bonus, base + 40_000),
        );
        board.play_timed(
            &mut pos,
            "Nf3",
            50_000,
            (base + 60_000 + bonus, base + 40_000),
        );
        let clock_alerts = board.count(|k| matches!(k, Kind::ClockAlert(_)));
        let expected = if interpretation < 5 { 1 } else { 0 };
        assert_eq!(clock_alerts, expected, "{:?}", board.kinds());
        board.assert_refolds();
    }
}

/// A threefold claim with a written move (Article 9.2.1.1) rests on the position the move is
/// played from: moves the board never showed after the last earlier occurrence are named for
/// the scoresheets (interpretation 5), as they are for a claim on the position itself.
#[test]
fn a_claim_with_a_written_move_names_every_unconfirmed_move_it_rests_on() {
    let mut board = Board::from_fen("fide-2023", KNIGHT_SHUFFLE);
    let mut pos = position(KNIGHT_SHUFFLE);
    three_moves_nobody_saw(&mut board, &mut pos);
    let claim = DrawClaim {
        kind: ClaimKind::Threefold,
        intended_move: Some(board.game.parse_move_text("Ng8").expect("legal")),
        claimant_has_moved: false,
        claimant_has_touched: false,
        claimant_remaining_ms: 5_000_000,
    };
    let assessment = board.game.evaluate_claim(&claim).expect("judged");
    assert!(matches!(assessment.report.verdict, ClaimVerdict::Upheld));
    let unconfirmed: Vec<u32> = assessment.unconfirmed.iter().map(|u| u.ply).collect();
    assert_eq!(unconfirmed, vec![5, 6, 7]);
    assert!(!assessment.rests_on_confirmed_record());
}

/// What the broadcast shows of the game these records hold.
fn shown(records: &[GameEventRecord]) -> boardcast_game::display::DisplayGame {
    let mut records = records
        .iter()
        .map(|r| Game::open(r.clone()).expect("opens"));
    let first = records.next().expect("a game");
    let mut display = boardcast_game::display::DisplayGame::start(first.event()).expect("shows");
    for record in records {
        display.evolve(record.event()).expect("shows");
    }
    display
}

/// Viewers are told of a low battery while it is low: a board back from a charge is no longer
/// shown low, and one that comes back still low is.
#[test]
fn viewers_see_the_battery_as_last_reported() {
    use boardcast_game::device::DeviceState;
    let mut board = Board::new("fide-2023");
    board.observe(status(DeviceState::Connected, Some(50)));
    board.observe(status(DeviceState::Connected, Some(10)));
    assert!(shown(&board.records).board.battery_low);
    board.observe(status(DeviceState::Disconnected, None));
    board.observe(status(DeviceState::Connected, Some(100)));
    let back = shown(&board.records).board;
    assert_eq!((back.battery_low, back.battery_percent), (false, Some(100)));
    board.observe(status(DeviceState::Disconnected, None));
    board.observe(status(DeviceState::Connected, Some(12)));
    let low = shown(&board.records).board;
    assert_eq!((low.battery_low, low.battery_percent), (true, Some(12)));
}

/// The board's status as its gateway reports it.
fn status(state: boardcast_game::device::DeviceState, battery: Option<u32>) -> Obs {
    Obs::Status(boardcast_game::device::DeviceStatus {
        state: state as i32,
        battery_percent: battery,
        ..Default::default()
    })
}

/// A deputy changes a finished game's result, or rules on a draw claim against the log's own
/// verdict: from interpretation 6 only with a reason, and either way the chief arbiter is
/// alerted. Confirming the result the game has is no change.
#[test]
fn overruling_the_record_needs_a_reason_and_alerts_the_chief_arbiter() {
    use boardcast_game::alerts::AlertKind;
    use boardcast_game::events::{
        ClaimKind as EventClaimKind, ClaimRuling, DeclareResult, GameResult, Side,
        arbiter_action::Action,
    };
    let declare = |result: GameResult, reason: &str| {
        Action::Result(DeclareResult {
            result: result as i32,
            reason: reason.into(),
            article: String::new(),
        })
    };
    for interpretation in [5, boardcast_game::CURRENT_INTERPRETATION] {
        let mut board = Board::read_with(interpretation);
        board.clock(ClockRun::White);
        let mut pos = Chess::default();
        board.play(&mut pos, "e4");
        board
            .try_act(
                declare(GameResult::WhiteWins, "Black resigned"),
                "ia-smith",
                vec![],
            )
            .expect("a first result");
        // Confirmed again as it is: no change, no alert.
        board
            .try_act(declare(GameResult::WhiteWins, ""), "ia-jones", vec![])
            .expect("the same result");
        let changed = |board: &Board| {
            board
                .raised()
                .into_iter()
                .filter(|(kind, ..)| *kind == AlertKind::ResultChanged)
                .count()
        };
        assert_eq!(changed(&board), 0);
        let records = board.records.len();
        let silent = board.try_act(declare(GameResult::Draw, " "), "ia-jones", vec![]);
        if interpretation >= 6 {
            let refused = silent.expect_err("a change without a reason");
            assert!(refused.to_string().contains("needs a reason"), "{refused}");
            assert_eq!(board.records.len(), records, "nothing recorded");
            board
                .try_act(
                    declare(GameResult::Draw, "the scoresheets say draw agreed"),
                    "ia-jones",
                    vec![],
                )
                .expect("with a reason");
        } else {
            silent.expect("games read as before take it");
        }
        assert_eq!(changed(&board), 1, "interpretation {interpretation}");
        let alert = board
            .alerts
            .alerts()
            .iter()
            .find(|a| a.kind == AlertKind::ResultChanged)
            .expect("raised");
        assert!(
            alert.summary.contains("from 1-0 to 1/2-1/2 by ia-jones"),
            "{}",
            alert.summary
        );
        assert_eq!(alert.article, "8.7");
        board.assert_refolds();
    }

    // A threefold claim upheld though the position has not occurred three times.
    let mut board = Board::new("fide-2023");
    board.clock(ClockRun::White);
    let mut pos = Chess::default();
    board.play(&mut pos, "Nf3");
    board.play(&mut pos, "Nf6");
    let claim = |note: &str| {
        Action::Claim(ClaimRuling {
            kind: EventClaimKind::Threefold as i32,
            claimant_side: Side::White as i32,
            upheld: true,
            note: note.into(),
            ..Default::default()
        })
    };
    let records = board.records.len();
    let refused = board
        .try_act(claim(""), "ia-jones", vec![])
        .expect_err("against the log without a note");
    assert!(refused.to_string().contains("needs a note"), "{refused}");
    assert_eq!(board.records.len(), records);
    board
        .try_act(
            claim("both scoresheets show the position three times"),
            "ia-jones",
            vec![],
        )
        .expect("with a note");
    let against: Vec<_> = board
        .raised()
        .into_iter()
        .filter(|(kind, ..)| *kind == AlertKind::RulingAgainstTheLog)
        .collect();
    assert_eq!(against.len(), 1, "{:?}", board.raised());
    assert!(board.game.is_over(), "the arbiter's ruling stands");
    board.assert_refolds();
}

/// `result` declared on `board` by an arbiter: the game is over with `token`, which the PGN
/// carries in its Result tag (its movetext ends with `*`: PGN has no token for it there), and
/// a PGN reader gives back with the moves; the log refolds. The moves read back.
fn declared_and_read_back(
    board: &mut Board,
    result: boardcast_game::events::GameResult,
    reason: &str,
    article: &str,
    token: &str,
) -> usize {
    use boardcast_game::events::{DeclareResult, arbiter_action::Action};
    board.act(
        Action::Result(DeclareResult {
            result: result as i32,
            reason: reason.into(),
            article: article.into(),
        }),
        "IA Smith",
    );
    assert!(board.game.is_over());
    assert_eq!(board.game.result_token(), token);
    let pgn = boardcast_rules::pgn::write_annotated_game(&board.game.to_pgn());
    assert!(pgn.contains(&format!("[Result \"{token}\"]")), "{pgn}");
    assert!(pgn.trim_end().ends_with('*'), "{pgn}");
    let read = boardcast_rules::pgn::read_games(&pgn).expect("reads");
    assert_eq!(read[0].result, token);
    board.assert_refolds();
    read[0].moves.len()
}

/// Neither player came: the arbiter declares both lost (a double forfeit), "0-0" (in movetext
/// "0-0" reads as castling).
#[test]
fn a_double_forfeit_is_recorded_as_both_players_losing() {
    let mut board = Board::new("fide-2023");
    let read = declared_and_read_back(
        &mut board,
        boardcast_game::events::GameResult::BothLose,
        "neither player came",
        "6.7.1",
        "0-0",
    );
    assert_eq!(read, 0);
}

/// Under the Laws of 2009, White's phone sounds where Black could not win by any series of
/// legal moves: White loses and Black scores a draw (Article 12.3.b), "0-1/2", after the moves.
#[test]
fn a_loss_against_an_opponent_who_cannot_win_is_recorded_as_zero_against_half() {
    let mut board = Board::new("fide-2009");
    let mut pos = Chess::default();
    for san in ["e4", "e5", "Nf3"] {
        board.play(&mut pos, san);
    }
    let read = declared_and_read_back(
        &mut board,
        boardcast_game::events::GameResult::WhiteZeroBlackHalf,
        "White's phone rang",
        "12.3.b",
        "0-1/2",
    );
    assert_eq!(read, 3);
}

/// White claims a threefold repetition that Black's move on the board makes, not pressed yet
/// (Article 9.2.1.2: White has the move once it is made). The claim would rest on a move only
/// the board saw: refused, saying to enter the move first; entered from the scoresheet, the
/// claim is judged on it.
#[test]
fn a_claim_on_a_move_made_but_not_pressed_waits_for_the_move_to_be_entered() {
    use boardcast_game::events::{
        ClaimKind as EventClaimKind, ClaimRuling, EnterMove, Side, arbiter_action::Action,
    };
    let mut board = Board::new("fide-2023");
    let mut pos = Chess::default();
    for san in ["Nf3", "Nf6", "Ng1", "Ng8", "Nf3", "Nf6", "Ng1"] {
        board.play(&mut pos, san);
    }
    play_san(&mut pos, "Ng8");
    board.placement(pos.board());
    assert_eq!(
        board.game.provisional().map(|p| p.san.as_str()),
        Some("Ng8")
    );
    let claim = || {
        Action::Claim(ClaimRuling {
            claimant_side: Side::White as i32,
            kind: EventClaimKind::Threefold as i32,
            upheld: true,
            ..Default::default()
        })
    };
    let recorded = board.records.len();
    let refused = board
        .try_act(claim(), "IA Smith", Vec::new())
        .expect_err("resting on a move only the board saw");
    assert_eq!(board.records.len(), recorded, "the refusal records nothing");
    assert!(
        refused.to_string().starts_with(
            "the board shows Ng8 after the completed moves, not completed by a press: enter it"
        ),
        "{refused}"
    );
    let before = board.records.len();
    board.act(Action::Move(EnterMove { san: "Ng8".into() }), "IA Smith");
    assert!(board.records.len() > before);
    board.act(claim(), "IA Smith");
    assert_eq!(board.game.result_token(), "1/2-1/2", "{:?}", board.kinds());
    board.assert_refolds();
}

/// Both flags fall in a 25-minute game of the 2023 Laws: drawn, under Guidelines III.3.1 (from
/// 2018 the rule is no article, and from interpretation 8 the words say so); a game set up
/// before interpretation 7 keeps A.4.4.
#[test]
fn both_flags_fallen_cite_the_guidelines_from_2018() {
    let periods = vec![TimePeriod {
        moves: 0,
        base_ms: 25 * 60_000,
        ..Default::default()
    }];
    for (interpretation, article, cited) in [
        (8, "III.3.1", "Guidelines III.3.1"),
        (7, "III.3.1", "Article III.3.1"),
        (6, "A.4.4", "Article A.4.4"),
    ] {
        let mut set_up = started("fide-2023", "", periods.clone());
        set_up.interpretation = interpretation;
        let mut board = Board::recorded(set_up);
        board.start_clock(25 * 60_000);
        board.flag(true, true);
        let ended: Vec<(String, String)> = board
            .kinds()
            .into_iter()
            .filter_map(|k| match k {
                Kind::Ended(e) => Some((e.article.clone(), e.detail.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(
            ended,
            [(article.to_owned(), format!("both flags fallen ({cited})"))],
            "interpretation {interpretation}"
        );
        assert_eq!(board.game.result_token(), "1/2-1/2");
    }
}

/// Black's flag ends the game, and the arbiter finds the flag was an error (the clock was
/// knocked): play is resumed with a reason, the chief arbiter is alerted as for a result
/// changed, and the board's next move completes as ever. Resuming a game that is not over, or
/// without a reason, is refused and records nothing.
#[test]
fn the_arbiter_resumes_play_after_an_end_recorded_in_error() {
    use boardcast_game::alerts::AlertKind;
    use boardcast_game::events::{PlayResumed, arbiter_action::Action};
    let resume = |reason: &str| {
        Action::Resume(PlayResumed {
            reason: reason.into(),
        })
    };
    let mut board = Board::five_minutes();
    let mut pos = Chess::default();
    board.play(&mut pos, "e4");
    let recorded = board.events.len();
    assert!(
        board
            .try_act(resume("knocked"), "IA Smith", vec![])
            .is_err()
    );
    assert_eq!(board.events.len(), recorded, "not over: nothing recorded");

    board.observe(Obs::Clock(ClockReading {
        white_remaining_ms: 290_000,
        black_remaining_ms: 0,
        running: ClockRun::Black as i32,
        black_flag: true,
        ..Default::default()
    }));
    assert_eq!(board.game.result_token(), "1-0");
    let recorded = board.events.len();
    assert!(board.try_act(resume("  "), "IA Smith", vec![]).is_err());
    assert_eq!(board.events.len(), recorded, "no reason: nothing recorded");

    board.act(
        resume("the clock was knocked over; Black had time"),
        "IA Smith",
    );
    assert!(!board.game.is_over());
    assert_eq!(board.game.result_token(), "*");
    let changed: Vec<_> = board
        .alerts
        .alerts()
        .iter()
        .filter(|a| a.kind == AlertKind::ResultChanged)
        .map(|a| a.summary.clone())
        .collect();
    assert_eq!(changed.len(), 1, "{changed:?}");
    assert!(
        changed[0].starts_with("result 1-0 withdrawn by IA Smith: play resumed"),
        "{}",
        changed[0]
    );
    board.play(&mut pos, "e5");
    assert_eq!(board.game.moves().len(), 2);
    assert!(!board.game.is_over());
    board.assert_refolds();
}

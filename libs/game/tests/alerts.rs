//! Alerts for the arbiters, folded from real game logs: what each log entry raises, how alerts
//! are acknowledged and resolved, and that a refold gives the same alerts.

use boardcast_game::ObservationOutcome;
use boardcast_game::alerts::{Alert, AlertKind, AlertStatus, GameAlerts};
use boardcast_game::device::{
    BoardPlacement, ClockReading, ClockRun, DeviceState, DeviceStatus, Observation,
    observation::Kind as Obs,
};
use boardcast_game::events::{
    ArbiterAction, GameEvent, TimePeriod, arbiter_action::Action, game_event::Kind,
};
use shakmaty::{Chess, Position, san::San};

mod common;
use common::{Board, GAME, KNIGHT_SHUFFLE, position, recorded_at, started, three_moves_nobody_saw};

/// Observation `n` of the board is made at `DEVICE_TIME_BASE + n` seconds.
const DEVICE_TIME_BASE: i64 = 1_600_000_000_000;

impl Board {
    fn new(edition: &str) -> Board {
        Board::from_fen(edition, "")
    }

    /// A game on board "b" from `start_fen`, the clock started.
    fn from_fen(edition: &str, start_fen: &str) -> Board {
        let mut board = Board::set_up(edition, start_fen, 5_000_000);
        board.clock(ClockRun::White);
        board
    }

    /// A game on board "b" with `base_ms` on each clock and no increment, nothing observed yet.
    fn set_up(edition: &str, start_fen: &str, base_ms: u64) -> Board {
        let periods = vec![TimePeriod {
            moves: 0,
            base_ms,
            increment_ms: 0,
            delay_ms: 0,
        }];
        Board::start(&started(edition, start_fen, periods), DEVICE_TIME_BASE)
    }
}

fn is_new(alert: &Alert) -> bool {
    alert.status == AlertStatus::New
}

/// The entry that resolved `alert`, and by whom.
fn resolved_by(alert: &Alert) -> Option<(u64, &str)> {
    match &alert.status {
        AlertStatus::Resolved { game_seq, by, .. } => Some((*game_seq, by.as_str())),
        _ => None,
    }
}

/// White puts the g1 knight on g3 (no legal move) and presses; the position is put back and the
/// clock given back to White.
fn illegal_attempt(board: &mut Board) {
    let start = Chess::default();
    let mut wrong = start.board().clone();
    let knight = wrong
        .remove_piece_at(shakmaty::Square::G1)
        .expect("knight on g1");
    wrong.set_piece_at(shakmaty::Square::G3, knight);
    board.placement(&wrong);
    board.clock(ClockRun::Black);
    board.placement(start.board());
    board.clock(ClockRun::White);
}

#[test]
fn illegal_moves_are_raised_once_each_with_the_presses_they_were_settled_from() {
    let mut board = Board::new("fide-2023");
    illegal_attempt(&mut board);
    illegal_attempt(&mut board);
    // Only in doubt so far: who pressed and whether the board missed a move is not sure.
    assert!(
        board
            .alerts
            .alerts()
            .iter()
            .all(|a| a.kind != AlertKind::IllegalMove)
    );
    // White completes e4 with a press of their own: both presses were illegal moves.
    board.play(&mut Chess::default(), "e4");

    let irregular = board.seqs(|k| matches!(k, Kind::Irregularity(_)));
    let cleared = board.seqs(|k| matches!(k, Kind::IrregularityCleared(_)));
    let doubts = board.seqs(|k| matches!(k, Kind::PressInDoubt(_)));
    let settled = board.seqs(|k| matches!(k, Kind::PressSettled(_)));
    let illegal = board.seqs(|k| matches!(k, Kind::IllegalMove(_)));
    assert_eq!(
        (
            irregular.len(),
            cleared.len(),
            doubts.len(),
            settled.len(),
            illegal.len()
        ),
        (2, 2, 2, 2, 2)
    );
    let a = |s: &str| s.to_owned();
    assert_eq!(
        board.raised(),
        vec![
            (
                AlertKind::IrregularPlacement,
                irregular[0],
                1,
                a("7"),
                vec![irregular[0]]
            ),
            (
                AlertKind::PressInDoubt,
                doubts[0],
                1,
                a("7.5.5"),
                vec![doubts[0]]
            ),
            (
                AlertKind::IrregularPlacement,
                irregular[1],
                1,
                a("7"),
                vec![irregular[1]]
            ),
            (
                AlertKind::PressInDoubt,
                doubts[1],
                1,
                a("7.5.5"),
                vec![doubts[1]]
            ),
            (
                AlertKind::IllegalMove,
                illegal[0],
                1,
                a("7.5.5"),
                vec![illegal[0], doubts[0], settled[0]]
            ),
            (
                AlertKind::IllegalMove,
                illegal[1],
                1,
                a("7.5.5"),
                vec![illegal[1], doubts[1], settled[1]]
            ),
        ]
    );
    // The placements came back to normal, the presses were settled: by the log, not an arbiter.
    assert_eq!(
        resolved_by(board.alert(irregular[0])),
        Some((cleared[0], ""))
    );
    assert_eq!(
        resolved_by(board.alert(irregular[1])),
        Some((cleared[1], ""))
    );
    assert_eq!(resolved_by(board.alert(doubts[0])), Some((settled[0], "")));
    assert_eq!(resolved_by(board.alert(doubts[1])), Some((settled[1], "")));
    let AlertStatus::Resolved { how, .. } = &board.alert(doubts[0]).status else {
        panic!("resolved");
    };
    assert!(how.contains("an illegal move"), "{how}");
    // The penalties are proposed for the arbiter: the second loses the game.
    let first = board.alert(illegal[0]);
    assert!(is_new(first));
    assert!(first.summary.contains("White"), "{}", first.summary);
    assert!(
        first
            .summary
            .contains("120 s added to the opponent's clock"),
        "{}",
        first.summary
    );
    assert!(board.alert(illegal[1]).summary.contains("the game is lost"));
    let raising = &board.events[illegal[0] as usize - 1];
    assert_eq!(first.recorded_unix_ms, raising.recorded_unix_ms);
    let completing_press = raising.provenance.as_ref().map(|p| p.device_time_unix_ms);
    assert_eq!(Some(first.device_time_unix_ms), completing_press);
    assert_ne!(first.device_time_unix_ms, 0);
    board.assert_refolds();
}

#[test]
fn a_press_without_a_move_is_in_doubt_then_an_illegal_move_from_2018_only() {
    for (edition, article) in [("fide-2023", "7.5.3"), ("fide-2009", "6.2")] {
        let mut board = Board::new(edition);
        // White presses without a move, Black presses back, White plays e4 and presses.
        board.clock(ClockRun::Black);
        board.clock(ClockRun::White);
        board.play(&mut Chess::default(), "e4");
        let doubt = board.seqs(|k| matches!(k, Kind::PressInDoubt(_)));
        let settled = board.seqs(|k| matches!(k, Kind::PressSettled(_)));
        let illegal = board.seqs(|k| matches!(k, Kind::IllegalMove(_)));
        assert_eq!(
            (doubt.len(), settled.len(), illegal.len()),
            (1, 1, 1),
            "{edition}"
        );
        assert_eq!(
            board.raised(),
            vec![
                (
                    AlertKind::PressInDoubt,
                    doubt[0],
                    1,
                    article.to_owned(),
                    vec![doubt[0]]
                ),
                (
                    AlertKind::IllegalMove,
                    illegal[0],
                    1,
                    article.to_owned(),
                    vec![illegal[0], doubt[0], settled[0]]
                ),
            ],
            "{edition}"
        );
        board.assert_refolds();
    }
}

#[test]
fn an_illegal_move_is_acknowledged_then_resolved_by_the_penalty_decision() {
    use boardcast_game::events::{AlertAcknowledgement, Annotation, PenaltyDecision};
    let mut board = Board::new("fide-2023");
    illegal_attempt(&mut board);
    illegal_attempt(&mut board);
    board.play(&mut Chess::default(), "e4");
    let illegal = board.seqs(|k| matches!(k, Kind::IllegalMove(_)));
    let index = |board: &Board, raised_at: u64| {
        board
            .alerts
            .alerts()
            .iter()
            .position(|a| a.raised_at == raised_at)
            .expect("raised")
    };
    let acknowledge = |raised_at: u64| {
        Action::Acknowledgement(AlertAcknowledgement {
            alert_game_seq: raised_at,
            note: "on my way".into(),
        })
    };

    board.act(acknowledge(illegal[0]), "ia-smith");
    let ack = board.game.last_game_seq();
    assert_eq!(
        board.alert(illegal[0]).status,
        AlertStatus::Acknowledged {
            by: "ia-smith".into(),
            at_unix_ms: recorded_at(ack),
            game_seq: ack,
        }
    );
    assert_eq!(board.pushed_at(ack), [index(&board, illegal[0])]);

    // Confirmed: the ruling resolves it, with the arbiter's name and the ruling in words.
    board.act(
        Action::Penalty(PenaltyDecision {
            illegal_move_game_seq: illegal[0],
            confirmed: true,
            note: String::new(),
        }),
        "ia-smith",
    );
    let decision = board.game.last_game_seq();
    let AlertStatus::Resolved {
        by,
        at_unix_ms,
        game_seq,
        how,
    } = &board.alert(illegal[0]).status
    else {
        panic!("resolved: {:?}", board.alert(illegal[0]));
    };
    assert_eq!(
        (by.as_str(), *at_unix_ms, *game_seq),
        ("ia-smith", recorded_at(decision), decision)
    );
    assert!(how.contains("confirmed"), "{how}");
    assert_eq!(board.pushed_at(decision), [index(&board, illegal[0])]);
    assert!(
        is_new(board.alert(illegal[1])),
        "the other one is untouched"
    );

    // Acknowledging a resolved alert, or an entry that raised none, changes nothing.
    let before = board.alerts.clone();
    board.act(acknowledge(illegal[0]), "ia-jones");
    assert!(board.pushed_at(board.game.last_game_seq()).is_empty());
    let no_alert = board.seqs(|k| matches!(k, Kind::ClockSides(_)))[0];
    board.act(acknowledge(no_alert), "ia-jones");
    assert!(board.pushed_at(board.game.last_game_seq()).is_empty());
    assert_eq!(board.alerts, before);

    // Any ruling resolves the alerts it names: the second one, dealt with at the board.
    board.act_resolving(
        Action::Annotation(Annotation {
            text: "sensor fault, penalty withdrawn at the board".into(),
        }),
        "ia-jones",
        vec![illegal[1]],
    );
    let note = board.game.last_game_seq();
    let AlertStatus::Resolved {
        by, game_seq, how, ..
    } = &board.alert(illegal[1]).status
    else {
        panic!("resolved");
    };
    assert_eq!((by.as_str(), *game_seq), ("ia-jones", note));
    assert_eq!(how, "sensor fault, penalty withdrawn at the board");
    // Its penalty decided later: it stays as the first ruling left it.
    board.act(
        Action::Penalty(PenaltyDecision {
            illegal_move_game_seq: illegal[1],
            confirmed: false,
            note: String::new(),
        }),
        "ia-smith",
    );
    assert_eq!(
        resolved_by(board.alert(illegal[1])),
        Some((note, "ia-jones"))
    );
    board.assert_refolds();
}

#[test]
fn a_threefold_claim_is_raised_when_it_becomes_available_and_resolved_by_the_ruling() {
    use boardcast_game::events::{ClaimKind, ClaimRuling};
    let mut board = Board::new("fide-2023");
    let mut pos = Chess::default();
    for _ in 0..2 {
        for san in ["Nf3", "Nf6", "Ng1", "Ng8"] {
            board.play(&mut pos, san);
        }
    }
    // After 4. Ng1 Black may claim with the intended move Ng8 (the start position a third
    // time); after 4... Ng8 and 5. Nf3 the claim stays available: raised once.
    board.play(&mut pos, "Nf3");
    let start = 1;
    let threefold = vec![(
        AlertKind::ThreefoldClaimAvailable,
        board.move_seq(7),
        7,
        "9.2".to_owned(),
        vec![board.move_seq(7), start, board.move_seq(4)],
    )];
    assert_eq!(board.raised(), threefold);
    assert!(board.alert(board.move_seq(7)).summary.contains("Black"));
    assert!(board.alert(board.move_seq(7)).summary.contains("Ng8"));
    // A pawn move: no claim is available any more. The knights shuffle again until Black may
    // claim with 9... Ng8 (the position after 5... e5 a third time): a new alert.
    for san in ["e5", "Ng1", "Nf6", "Nf3", "Ng8", "Ng1", "Nf6", "Nf3"] {
        board.play(&mut pos, san);
    }
    assert_eq!(board.game.completed_moves().len(), 17);
    let mut expected = threefold.clone();
    expected.push((
        AlertKind::ThreefoldClaimAvailable,
        board.move_seq(17),
        17,
        "9.2".to_owned(),
        vec![board.move_seq(17), board.move_seq(10), board.move_seq(14)],
    ));
    assert_eq!(board.raised(), expected);
    // Black claims with the intended move: the ruling resolves both, the game is drawn.
    board.act(
        Action::Claim(ClaimRuling {
            claimant: "black".into(),
            kind: ClaimKind::Threefold as i32,
            intended_move: "Ng8".into(),
            upheld: true,
            ..Default::default()
        }),
        "ia-smith",
    );
    let ruling = board.seqs(|k| matches!(k, Kind::Arbiter(_)))[0];
    for raised_at in [board.move_seq(7), board.move_seq(17)] {
        assert_eq!(
            resolved_by(board.alert(raised_at)),
            Some((ruling, "ia-smith"))
        );
    }
    assert!(board.game.is_over());
    assert_eq!(
        board.alerts.alerts().len(),
        2,
        "a draw by claim raises nothing"
    );
    assert_eq!(board.alerts.open().count(), 0);
    board.assert_refolds();
}

#[test]
fn a_fifty_move_claim_is_raised_once_and_resolved_when_the_game_ends() {
    use boardcast_game::events::DrawAgreed;
    // 97 half-moves without a capture or pawn move so far.
    let mut board = Board::from_fen("fide-2023", "4k3/8/8/8/8/8/4P3/R3K3 w - - 97 80");
    let mut pos: Chess = "4k3/8/8/8/8/8/4P3/R3K3 w - - 97 80"
        .parse::<shakmaty::fen::Fen>()
        .expect("fen")
        .into_position(shakmaty::CastlingMode::Standard)
        .expect("position");
    // 80. Ra2 Kd7: White may claim with an intended move (the 100th half-move); after 81. Ra3
    // and Kd6 on the board. One alert.
    for san in ["Ra2", "Kd7", "Ra3", "Kd6"] {
        board.play(&mut pos, san);
    }
    assert_eq!(board.game.completed_moves().len(), 4);
    assert_eq!(
        board.raised(),
        vec![(
            AlertKind::FiftyMoveClaimAvailable,
            board.move_seq(2),
            2,
            "9.3".to_owned(),
            vec![board.move_seq(2)],
        )]
    );
    let alert = board.alert(board.move_seq(2));
    assert!(alert.summary.contains("99 half-moves"), "{}", alert.summary);
    // A pawn move: the claim is gone; the game ends by agreement: the alert is over with it.
    board.play(&mut pos, "e4");
    assert_eq!(board.alerts.alerts().len(), 1);
    assert!(is_new(board.alert(board.move_seq(2))));
    board.act(Action::DrawAgreed(DrawAgreed {}), "ia-smith");
    let ended = board.seqs(|k| matches!(k, Kind::Ended(_)))[0];
    assert_eq!(
        resolved_by(board.alert(board.move_seq(2))),
        Some((ended, "ia-smith"))
    );
    board.assert_refolds();
}

#[test]
fn a_flag_fall_says_whether_the_opponent_can_mate_and_waits_for_the_arbiter() {
    use boardcast_game::events::{AlertAcknowledgement, Annotation};
    // From the start position Black can mate: White loses.
    let mut board = Board::new("fide-2023");
    board.flag(true, false);
    let ended = board.seqs(|k| matches!(k, Kind::Ended(_)))[0];
    assert_eq!(
        board.raised(),
        vec![(AlertKind::FlagFall, ended, 1, "6.9".to_owned(), vec![ended])]
    );
    let alert = board.alert(ended);
    assert!(
        alert.summary.starts_with("White's flag fell: 0-1"),
        "{}",
        alert.summary
    );
    assert!(is_new(alert));

    // A bare king cannot mate: White's flag fall is a draw, and the summary says why.
    let mut board = Board::from_fen("fide-2023", "8/8/4k3/8/8/8/4KQ2/8 w - - 0 1");
    board.flag(true, false);
    let ended = board.seqs(|k| matches!(k, Kind::Ended(_)))[0];
    assert_eq!(
        board.raised(),
        vec![(AlertKind::FlagFall, ended, 1, "6.9".to_owned(), vec![ended])]
    );
    let alert = board.alert(ended);
    assert!(
        alert.summary.starts_with("White's flag fell: 1/2-1/2"),
        "{}",
        alert.summary
    );
    assert!(
        alert.summary.contains("cannot checkmate"),
        "{}",
        alert.summary
    );
    // The result stands only when the arbiter confirms it: nothing in the log resolves it but
    // the arbiter.
    board.act(
        Action::Acknowledgement(AlertAcknowledgement {
            alert_game_seq: ended,
            note: String::new(),
        }),
        "ia-smith",
    );
    assert!(matches!(
        board.alert(ended).status,
        AlertStatus::Acknowledged { .. }
    ));
    board.act_resolving(
        Action::Annotation(Annotation {
            text: "result confirmed with both players".into(),
        }),
        "ia-smith",
        vec![ended],
    );
    let confirmed = board.game.last_game_seq();
    assert_eq!(
        resolved_by(board.alert(ended)),
        Some((confirmed, "ia-smith"))
    );
    board.assert_refolds();
}

#[test]
fn a_fivefold_repetition_is_an_automatic_draw_for_the_arbiter_to_confirm() {
    let mut board = Board::new("fide-2023");
    let mut pos = Chess::default();
    for _ in 0..4 {
        for san in ["Nf3", "Nf6", "Ng1", "Ng8"] {
            board.play(&mut pos, san);
        }
    }
    assert!(board.game.is_over());
    let ended = board.seqs(|k| matches!(k, Kind::Ended(_)))[0];
    assert_eq!(
        board.raised(),
        vec![
            (
                AlertKind::ThreefoldClaimAvailable,
                board.move_seq(7),
                7,
                "9.2".to_owned(),
                vec![board.move_seq(7), 1, board.move_seq(4)],
            ),
            (
                AlertKind::AutomaticDraw,
                ended,
                16,
                "9.6.1".to_owned(),
                // The five occurrences: the start, then the moves that made it again.
                [ended, 1]
                    .into_iter()
                    .chain([4, 8, 12, 16].map(|ply| board.move_seq(ply)))
                    .collect(),
            ),
        ]
    );
    // Every move was seen and pressed: nothing to check against the scoresheets.
    assert!(!board.alert(ended).summary.contains("scoresheets"));
    // The game is over: the claim is too; the draw waits for the arbiter.
    assert_eq!(
        resolved_by(board.alert(board.move_seq(7))),
        Some((ended, ""))
    );
    assert!(is_new(board.alert(ended)));
    board.assert_refolds();
}

#[test]
fn the_board_away_and_back_and_its_battery_low() {
    let status = |state: DeviceState, battery: Option<u32>| {
        Obs::Status(DeviceStatus {
            state: state as i32,
            battery_percent: battery,
            ..Default::default()
        })
    };
    let mut board = Board::new("fide-2023");
    board.observe(status(DeviceState::Connected, Some(80)));
    board.observe(status(DeviceState::Disconnected, None));
    board.observe(status(DeviceState::NotResponding, None));
    board.observe(status(DeviceState::Connected, Some(60)));
    board.observe(status(DeviceState::Connected, Some(19)));
    board.observe(status(DeviceState::Connected, Some(15)));
    let changes = board.seqs(|k| matches!(k, Kind::BoardStatus(_)));
    // Connected, disconnected, not responding, connected, battery low.
    assert_eq!(changes.len(), 5, "{changes:?}");
    assert_eq!(
        board.raised(),
        vec![
            (
                AlertKind::BoardNotResponding,
                changes[1],
                1,
                String::new(),
                vec![changes[1]]
            ),
            (
                AlertKind::BatteryLow,
                changes[4],
                1,
                String::new(),
                vec![changes[4]]
            ),
        ],
        "not responding while disconnected is the same alert"
    );
    assert!(board.alert(changes[1]).summary.contains("disconnected"));
    assert_eq!(resolved_by(board.alert(changes[1])), Some((changes[3], "")));
    assert!(board.alert(changes[4]).summary.contains("19%"));
    board.assert_refolds();

    // Back with a low battery: one report, two facts.
    let mut board = Board::new("fide-2023");
    board.observe(status(DeviceState::Connected, Some(80)));
    board.observe(status(DeviceState::Disconnected, None));
    board.observe(status(DeviceState::Connected, Some(12)));
    let changes = board.seqs(|k| matches!(k, Kind::BoardStatus(_)));
    assert_eq!(
        board
            .raised()
            .into_iter()
            .map(|(kind, raised_at, ..)| (kind, raised_at))
            .collect::<Vec<_>>(),
        vec![
            (AlertKind::BoardNotResponding, changes[1]),
            (AlertKind::BatteryLow, changes[2]),
        ]
    );
    board.assert_refolds();
}

#[test]
fn observations_that_never_arrived_are_raised_with_their_range() {
    let mut board = Board::new("fide-2023");
    let noticed = Observation {
        board_id: "b".into(),
        device_seq: 9,
        kind: Some(Obs::Placement(BoardPlacement {
            placement: Chess::default().board().board_fen().to_string(),
        })),
        ..Default::default()
    };
    let events = board.game.decide_missing_observations(2, 8, &noticed);
    board.append(events);
    let missing = board.seqs(|k| matches!(k, Kind::ObservationsMissing(_)))[0];
    assert_eq!(
        board.raised(),
        vec![(
            AlertKind::ObservationsMissing,
            missing,
            1,
            String::new(),
            vec![missing]
        )]
    );
    let summary = &board.alert(missing).summary;
    assert!(summary.contains("observations 2 to 8"), "{summary}");
    board.assert_refolds();
}

#[test]
fn a_set_up_mismatch_is_raised_with_its_fix_and_resolved_when_cleared() {
    // The board shows the start position turned round, then the right way round.
    let mut board = Board::new("fide-2023");
    let mut rotated = Chess::default().board().clone();
    rotated.rotate_180();
    board.placement(&rotated);
    board.placement(Chess::default().board());
    board.play(&mut Chess::default(), "e4");
    let mismatch = board.seqs(|k| matches!(k, Kind::SetupMismatch(_)));
    let cleared = board.seqs(|k| matches!(k, Kind::SetupMismatchCleared(_)));
    assert_eq!((mismatch.len(), cleared.len()), (1, 1));
    assert_eq!(
        board.raised(),
        vec![(
            AlertKind::SetupMismatch,
            mismatch[0],
            1,
            "7".to_owned(),
            vec![mismatch[0]]
        )]
    );
    let summary = &board.alert(mismatch[0]).summary;
    for part in [
        "board orientation",
        "expected",
        "seen",
        "turned round",
        "--rotated",
    ] {
        assert!(summary.contains(part), "{part}: {summary}");
    }
    let AlertStatus::Resolved {
        game_seq, by, how, ..
    } = &board.alert(mismatch[0]).status
    else {
        panic!("resolved");
    };
    assert_eq!((*game_seq, by.as_str()), (cleared[0], ""));
    assert!(how.contains("as expected again"), "{how}");
    board.assert_refolds();
}

#[test]
fn a_claim_on_moves_nobody_saw_tells_the_arbiter_to_check_the_scoresheets() {
    use boardcast_game::events::{ClaimKind, ClaimRuling};
    let mut board = Board::new("fide-2023");
    let mut pos = Chess::default();
    // 1. e4 e5 2. Bc4: the board saw only the bishop on c4 at White's press.
    let mut jumped = pos.clone();
    for san in ["e4", "e5", "Bc4"] {
        let mv = san
            .parse::<San>()
            .expect("san")
            .to_move(&jumped)
            .expect("legal");
        jumped.play_unchecked(mv);
    }
    board.placement(jumped.board());
    board.clock(ClockRun::Black);
    pos = jumped;
    for san in ["Nc6", "Nf3", "Nb8", "Ng1", "Nc6", "Nf3", "Nb8", "Ng1"] {
        board.play(&mut pos, san);
    }
    assert_eq!(board.game.completed_moves().len(), 11);
    board.act(
        Action::Claim(ClaimRuling {
            claimant: "black".into(),
            kind: ClaimKind::Threefold as i32,
            upheld: true,
            ..Default::default()
        }),
        "ia-smith",
    );
    let ruling = board.seqs(|k| matches!(k, Kind::Arbiter(_)))[0];
    let judged = board.seqs(|k| matches!(k, Kind::ClaimJudged(_)))[0];
    let Some(Kind::ClaimJudged(verdict)) = &board.events[judged as usize - 1].kind else {
        panic!("judged");
    };
    assert_eq!(verdict.unconfirmed_plies, [1, 2, 3]);
    let mut rests_on = vec![judged];
    rests_on.extend(verdict.game_seqs.iter().copied());
    assert_eq!(
        board.raised(),
        vec![
            // After 5. Nf3 Black may claim with 5... Nb8 (the position after 2. Bc4 a third
            // time).
            (
                AlertKind::ThreefoldClaimAvailable,
                board.move_seq(10),
                10,
                "9.2".to_owned(),
                vec![board.move_seq(10), board.move_seq(3), board.move_seq(7)],
            ),
            (
                AlertKind::ClaimOnUnconfirmedMoves,
                judged,
                12,
                "6.12".to_owned(),
                rests_on
            ),
        ]
    );
    let summary = &board.alert(judged).summary;
    assert!(
        summary.contains("plies 1 (e4), 2 (e5), 3 (Bc4)"),
        "{summary}"
    );
    assert!(summary.contains("scoresheets"), "{summary}");
    assert_eq!(
        resolved_by(board.alert(board.move_seq(10))),
        Some((ruling, "ia-smith"))
    );
    assert!(
        is_new(board.alert(judged)),
        "the game ended, the check is still due"
    );
    board.assert_refolds();
}

#[test]
fn a_restored_position_resolves_the_irregular_placement_and_the_press_in_doubt() {
    use boardcast_game::events::RestorePosition;
    let mut board = Board::new("fide-2023");
    let mut pos = Chess::default();
    board.play(&mut pos, "e4");
    board.play(&mut pos, "e5");
    // A piece knocked over and the clock pressed: the arbiter puts the position back.
    let mut knocked = pos.board().clone();
    knocked.discard_piece_at(shakmaty::Square::D1);
    board.placement(&knocked);
    board.clock(ClockRun::Black);
    let irregular = board.seqs(|k| matches!(k, Kind::Irregularity(_)));
    let doubt = board.seqs(|k| matches!(k, Kind::PressInDoubt(_)));
    assert_eq!((irregular.len(), doubt.len()), (1, 1));
    board.act(
        Action::Restore(RestorePosition {
            ply: 2,
            reason: "queen knocked over".into(),
            ..Default::default()
        }),
        "ia-smith",
    );
    let restored = board.seqs(|k| matches!(k, Kind::PositionRestored(_)))[0];
    assert_eq!(
        board.raised(),
        vec![
            (
                AlertKind::IrregularPlacement,
                irregular[0],
                3,
                "7".to_owned(),
                vec![irregular[0]]
            ),
            (
                AlertKind::PressInDoubt,
                doubt[0],
                3,
                "7.5.5".to_owned(),
                vec![doubt[0]]
            ),
        ]
    );
    for raised_at in [irregular[0], doubt[0]] {
        assert_eq!(
            resolved_by(board.alert(raised_at)),
            Some((restored, "ia-smith"))
        );
    }
    assert_eq!(board.pushed_at(restored), [0, 1]);
    board.assert_refolds();
}

#[test]
fn a_malformed_log_never_panics_and_changes_nothing_it_does_not_name() {
    use boardcast_game::events::{
        AlertAcknowledgement, BoardStatusChanged, ClaimJudged, IllegalMoveRecorded,
        PenaltyDecision, Provenance,
    };
    let board = Board::new("fide-2023");
    let game = &board.game;
    let mut alerts = GameAlerts::new();
    let event = |game_seq: u64, kind: Option<Kind>| GameEvent {
        game_id: GAME.into(),
        game_seq,
        recorded_unix_ms: -1,
        provenance: None,
        kind,
    };
    // No content, no provenance, entries named that raised nothing.
    assert!(alerts.fold(&event(5, None), game).is_empty());
    for action in [
        Action::Acknowledgement(AlertAcknowledgement {
            alert_game_seq: u64::MAX,
            note: String::new(),
        }),
        Action::Penalty(PenaltyDecision {
            illegal_move_game_seq: 0,
            ..Default::default()
        }),
    ] {
        let ruling = ArbiterAction {
            action: Some(action),
            resolves_alerts: vec![0, 7, u64::MAX],
        };
        assert!(
            alerts
                .fold(&event(6, Some(Kind::Arbiter(ruling))), game)
                .is_empty()
        );
    }
    // An impossible device state is no state.
    let status = BoardStatusChanged {
        state: 42,
        ..Default::default()
    };
    assert!(
        alerts
            .fold(&event(7, Some(Kind::BoardStatus(status))), game)
            .is_empty()
    );
    // Entries naming plies and entries that are not there, at the end of the numbers.
    let judged = ClaimJudged {
        game_seqs: vec![u64::MAX, 0],
        unconfirmed_plies: vec![0, u32::MAX],
        ..Default::default()
    };
    assert_eq!(
        alerts.fold(&event(u64::MAX, Some(Kind::ClaimJudged(judged))), game),
        [0]
    );
    assert_eq!(alerts.alerts()[0].rests_on, [u64::MAX, 0]);
    let illegal = IllegalMoveRecorded {
        offender: "nobody".into(),
        ..Default::default()
    };
    let mut odd = event(u64::MAX, Some(Kind::IllegalMove(illegal)));
    odd.provenance = Some(Provenance::default());
    assert_eq!(alerts.fold(&odd, game), [1]);
    assert_eq!(alerts.alerts().len(), 2);
}

#[test]
fn a_clock_reading_the_time_control_does_not_explain_is_raised_in_minutes_and_seconds() {
    let mut board = Board::new("fide-2023");
    let mut pos = Chess::default();
    for san in ["e4", "e5", "Nf3"] {
        board.play(&mut pos, san);
    }
    // Black's press shows a minute more on Black's clock than the time control gives.
    let mv = "Nc6"
        .parse::<San>()
        .expect("san")
        .to_move(&pos)
        .expect("legal");
    pos.play_unchecked(mv);
    board.placement(pos.board());
    board.observe(Obs::Clock(ClockReading {
        white_remaining_ms: 5_000_000,
        black_remaining_ms: 5_060_000,
        running: ClockRun::White as i32,
        ..Default::default()
    }));
    let clock_alert = board.seqs(|k| matches!(k, Kind::ClockAlert(_)));
    assert_eq!(clock_alert.len(), 1);
    assert_eq!(
        board.raised(),
        vec![(
            AlertKind::ClockMismatch,
            clock_alert[0],
            4,
            "6.10".to_owned(),
            vec![clock_alert[0]]
        )]
    );
    let summary = &board.alert(clock_alert[0]).summary;
    // 5,060 s, where 5,000 s less the two seconds Black took were expected.
    assert!(
        summary.contains("Black's clock shows 84:20 where the time control gives 83:18"),
        "{summary}"
    );
    board.assert_refolds();
}

#[test]
fn a_touch_and_another_piece_moved_is_a_possible_breach_resting_on_the_touches() {
    use boardcast_game::device::{Piece, PieceLifted, PiecePlaced};
    let mut board = Board::new("fide-2023");
    let g1 = u32::from(shakmaty::Square::G1);
    board.observe(Obs::Lifted(PieceLifted {
        square: g1,
        piece: Piece::WhiteKnight as i32,
    }));
    board.observe(Obs::Placed(PiecePlaced {
        square: g1,
        piece: Piece::WhiteKnight as i32,
    }));
    board.play(&mut Chess::default(), "e4");
    let breach = board.seqs(|k| matches!(k, Kind::TouchMove(_)));
    assert_eq!(breach.len(), 1);
    let Some(Kind::TouchMove(event)) = &board.events[breach[0] as usize - 1].kind else {
        panic!("breach");
    };
    let mut rests_on = vec![breach[0]];
    rests_on.extend(event.touch_game_seqs.iter().copied());
    assert_eq!(rests_on.len(), 2, "the lift of the knight");
    assert_eq!(
        board.raised(),
        vec![(
            AlertKind::PossibleTouchMoveBreach,
            breach[0],
            1,
            event.article.clone(),
            rests_on
        )]
    );
    assert_eq!(
        event.evidence(),
        boardcast_game::events::TouchEvidence::AtRest
    );
    let summary = &board.alert(breach[0]).summary;
    assert!(
        summary.contains("own piece not moved (g1), at rest 1.0 s"),
        "{summary}"
    );
    board.assert_refolds();
}

#[test]
fn a_touch_seen_only_for_a_moment_is_noted_not_alerted() {
    use boardcast_game::{
        device::{Piece, PieceLifted, PiecePlaced},
        events::TouchEvidence,
    };
    let mut board = Board::new("fide-2023");
    let g1 = u32::from(shakmaty::Square::G1);
    // The knight off its square for 200 ms: an adjustment, or a sensor's flicker.
    board.observe_at(
        Obs::Lifted(PieceLifted {
            square: g1,
            piece: Piece::WhiteKnight as i32,
        }),
        10_000,
    );
    board.observe_at(
        Obs::Placed(PiecePlaced {
            square: g1,
            piece: Piece::WhiteKnight as i32,
        }),
        10_200,
    );
    board.play(&mut Chess::default(), "e4");
    let noted: Vec<_> = board
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            Some(Kind::TouchMove(t)) => Some(t.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(noted.len(), 1, "the touch is on the record");
    assert_eq!(noted[0].evidence(), TouchEvidence::Brief);
    assert_eq!(noted[0].rest_ms, 200);
    assert!(board.raised().is_empty(), "no alert: {:?}", board.raised());
    board.assert_refolds();
}

/// Every eighth London game played on a simulated board whose clock stands the other way round
/// from how its gateway reads it, until the arbiter turns it round before ply 20: the set-up
/// mismatch is raised once and cleared by the log, nothing irregular is raised, and the log
/// alone gives the live alerts.
#[test]
fn simulated_games_raise_only_what_happened_and_refold_to_the_same_alerts() {
    use boardcast_game::device::SourceKind;
    use boardcast_rules::pgn::read_games;
    use boardcast_sim::{ClockSetup, ScriptOptions, script};
    let games = read_games(include_str!("../../../data/london-classic-2016.pgn")).expect("reads");
    let options = ScriptOptions {
        clock: ClockSetup {
            turned_before_ply: Some(20),
            ..ClockSetup::white_on_right()
        },
        ..ScriptOptions::default()
    };
    for pgn in games.iter().step_by(8) {
        let mut board = Board::set_up("fide-2023", "", options.initial_clock_ms);
        for (i, step) in script(pgn, &options)
            .expect("scripts")
            .into_iter()
            .enumerate()
        {
            let obs = Observation {
                board_id: "b".into(),
                device_seq: i as u64 + 1,
                device_time_unix_ms: step.at_ms as i64,
                receive_time_unix_ms: step.at_ms as i64,
                source: SourceKind::Simulator as i32,
                kind: Some(step.kind),
            };
            if let ObservationOutcome::Events(events) = board
                .game
                .decide_observation(&obs)
                .expect("valid observation")
            {
                board.append(events);
            }
        }
        let kinds: Vec<AlertKind> = board.alerts.alerts().iter().map(|a| a.kind).collect();
        let who = pgn.players();
        assert!(
            kinds.iter().all(|k| matches!(
                k,
                AlertKind::SetupMismatch
                    | AlertKind::ThreefoldClaimAvailable
                    | AlertKind::FiftyMoveClaimAvailable
                    | AlertKind::ClockMismatch
            )),
            "{who}: {kinds:?}"
        );
        let mismatches: Vec<&Alert> = board
            .alerts
            .alerts()
            .iter()
            .filter(|a| a.kind == AlertKind::SetupMismatch)
            .collect();
        if pgn.moves.len() >= 20 {
            assert_eq!(mismatches.len(), 1, "{who}");
            let cleared = board.seqs(|k| matches!(k, Kind::SetupMismatchCleared(_)));
            assert_eq!(resolved_by(mismatches[0]), Some((cleared[0], "")), "{who}");
        }
        board.assert_refolds();
    }
}

/// A flag falls where the analysis cannot tell whether the opponent can mate: the game is over
/// but has no result, the alert says so, and the result is the arbiter's to declare.
#[test]
fn a_flag_fall_with_an_undetermined_answer_waits_for_the_arbiters_result() {
    use boardcast_game::events::{DeclareResult, GameResult, Termination};
    // Pawn races behind a half-locked chain: whether Black can still mate is undetermined
    // within the analysis' bounds (see the rules library's dead-position tests).
    let mut board = Board::from_fen(
        "fide-2023",
        "1k6/p1p1p1p1/P1P1P1P1/p1p1p1p1/8/8/P1P1P1P1/4K3 w - - 0 1",
    );
    board.flag(true, false);
    let ended = board.seqs(|k| matches!(k, Kind::Ended(_)))[0];
    assert!(board.game.is_over());
    assert_eq!(
        board.game.result(),
        Some((GameResult::Unspecified, Termination::FlagFall))
    );
    assert_eq!(board.game.result_token(), "*");
    let alert = board.alert(ended);
    assert_eq!(alert.kind, AlertKind::FlagFall);
    assert!(
        alert.summary.starts_with("White's flag fell: *")
            && alert.summary.contains("was not determined")
            && alert.summary.contains("the arbiter decides the result"),
        "{}",
        alert.summary
    );
    // The arbiter rules (here: Black cannot mate, a draw) and that is the result.
    board.act_resolving(
        Action::Result(DeclareResult {
            result: GameResult::Draw as i32,
            reason: "Black cannot checkmate by any series of legal moves".into(),
            article: "6.9".into(),
        }),
        "ia-smith",
        vec![ended],
    );
    assert_eq!(
        board.game.result(),
        Some((GameResult::Draw, Termination::Arbiter))
    );
    board.assert_refolds();
}

/// A completed move leaves a position whose deadness the analysis cannot determine: play goes
/// on, the log notes it once (not again on the next moves), and the arbiter is alerted.
#[test]
fn an_undetermined_dead_position_is_noted_once_for_the_arbiter() {
    // Pawn races behind a half-locked chain (see the rules library's dead-position tests):
    // after each of these king moves, whether Black can mate stays undetermined.
    let start = "1k6/p1p1p1p1/P1P1P1P1/p1p1p1p1/8/8/P1P1P1P1/3K4 w - - 0 1";
    let mut board = Board::from_fen("fide-2023", start);
    let mut pos: Chess = start
        .parse::<shakmaty::fen::Fen>()
        .expect("FEN")
        .into_position(shakmaty::CastlingMode::Standard)
        .expect("legal");
    for san in ["Ke1", "Kc8", "Kd1", "Kb8"] {
        board.play(&mut pos, san);
    }
    assert!(!board.game.is_over(), "play goes on");
    let noted = board.seqs(|k| matches!(k, Kind::DeadPositionUndetermined(_)));
    assert_eq!(noted.len(), 1, "noted once: {:?}", board.kinds());
    let Kind::DeadPositionUndetermined(note) = board.kinds()[noted[0] as usize - 1] else {
        panic!("the note");
    };
    assert_eq!(note.article, "5.2.2");
    let alert = board.alert(noted[0]);
    assert_eq!(alert.kind, AlertKind::DeadPosition);
    assert!(
        alert.summary.contains("was not determined") && alert.summary.contains("arbiter decides"),
        "{}",
        alert.summary
    );
    assert!(is_new(alert));
    board.assert_refolds();
}

/// An automatic draw resting on moves the board never showed says so (Article 6.14): three moves
/// were reconstructed, and the position repeated five times stands on them.
#[test]
fn an_automatic_draw_on_moves_nobody_saw_tells_the_arbiter_to_check_the_scoresheets() {
    let mut board = Board::from_fen("fide-2023", KNIGHT_SHUFFLE);
    let mut pos = position(KNIGHT_SHUFFLE);
    three_moves_nobody_saw(&mut board, &mut pos);
    board.play(&mut pos, "Ng8");
    for _ in 0..2 {
        for san in ["Kg1", "Nh6", "Kh1", "Ng8"] {
            board.play(&mut pos, san);
        }
    }
    assert!(board.game.is_over());
    let ended = board.seqs(|k| matches!(k, Kind::Ended(_)))[0];
    let alert = board.alert(ended);
    assert_eq!(alert.kind, AlertKind::AutomaticDraw);
    assert!(
        alert
            .summary
            .ends_with("It rests on moves no clock press or arbiter confirmed (plies 5 Kg1, 6 Nf6, 7 Kh1): check them against the scoresheets."),
        "{}",
        alert.summary
    );
    assert_eq!(alert.rests_on.len(), 6, "{:?}", alert.rests_on);
    board.assert_refolds();
}

/// A pawn pushed to the last rank and the clock pressed before it was promoted: the alert says
/// how the arbiter puts it right, by the edition — a queen in its place from 2014, the position
/// before it restored in 2009 (Articles 7.5.1 and 7.4.a).
#[test]
fn an_unpromoted_pawn_is_corrected_as_the_edition_says() {
    for (edition, correction) in [
        (
            "fide-2023",
            "Correction: the unpromoted pawn is replaced by a queen of its colour.",
        ),
        (
            "fide-2009",
            "Correction: the position before the irregularity is restored, and a move made there.",
        ),
    ] {
        let fen = "4k3/P7/8/8/8/8/8/4K3 w - - 0 1";
        let mut board = Board::from_fen(edition, fen);
        let start = position(fen);
        let mut unpromoted = start.board().clone();
        let pawn = unpromoted
            .remove_piece_at(shakmaty::Square::A7)
            .expect("a pawn on a7");
        unpromoted.set_piece_at(shakmaty::Square::A8, pawn);
        board.placement(&unpromoted);
        board.clock(ClockRun::Black);
        board.placement(start.board());
        board.clock(ClockRun::White);
        let mut pos = start.clone();
        board.play(&mut pos, "Ke2");
        let illegal: Vec<&Alert> = board
            .alerts
            .alerts()
            .iter()
            .filter(|a| a.kind == AlertKind::IllegalMove)
            .collect();
        assert_eq!(illegal.len(), 1, "{edition}: {:?}", board.kinds());
        assert!(
            illegal[0].summary.ends_with(correction),
            "{edition}: {}",
            illegal[0].summary
        );
        board.assert_refolds();
    }
}

/// A claim with a written move ruled incorrect obliges that move (Article 9.5.3): another move
/// played then is raised, resting on the ruling; the written move played raises nothing.
#[test]
fn a_written_move_not_played_after_a_claim_ruled_incorrect_is_raised() {
    use boardcast_game::events::{ClaimKind, ClaimRuling, Side};
    for (played, raised) in [("Ng8", true), ("e6", false)] {
        let mut board = Board::new("fide-2023");
        let mut pos = Chess::default();
        for san in ["Nf3", "Nf6", "Ng1", "Ng8", "Nf3", "Nf6", "Ng1"] {
            board.play(&mut pos, san);
        }
        board.act(
            Action::Claim(ClaimRuling {
                claimant_side: Side::Black as i32,
                kind: ClaimKind::Threefold as i32,
                intended_move: "e6".into(),
                upheld: false,
                ..Default::default()
            }),
            "IA Smith",
        );
        let ruled = board.seqs(|k| matches!(k, Kind::ClaimJudged(_)))[0];
        board.play(&mut pos, played);
        let written: Vec<&Alert> = board
            .alerts
            .alerts()
            .iter()
            .filter(|a| a.kind == AlertKind::WrittenMoveNotPlayed)
            .collect();
        assert_eq!(written.len(), usize::from(raised), "{played}");
        if let Some(alert) = written.first() {
            assert_eq!(alert.article, "9.5.3");
            assert_eq!(alert.rests_on, vec![board.move_seq(8), ruled]);
            assert!(
                alert.summary.contains("written move e7e6"),
                "{}",
                alert.summary
            );
        }
        board.assert_refolds();
    }
}

/// A board whose clock sends nothing (its cable out): two moves seen and no reading at all
/// raise one alert to check the clock, which the first reading resolves. A game whose clock
/// reports is never told so.
#[test]
fn moves_seen_with_no_clock_reading_raise_one_alert_until_the_clock_is_heard() {
    let mut board = Board::set_up("fide-2023", "", 5_000_000);
    let mut pos = Chess::default();
    board.placement(pos.board());
    for san in ["e4", "e5", "Nf3"] {
        common::play_san(&mut pos, san);
        board.placement(pos.board());
    }
    let no_clock = not_responding(&board);
    assert_eq!(no_clock.len(), 1, "{:?}", board.alerts.alerts());
    assert!(
        no_clock[0].summary.contains("no reading"),
        "{}",
        no_clock[0].summary
    );
    assert_eq!(no_clock[0].status, AlertStatus::New);

    board.clock(ClockRun::Black);
    let no_clock = not_responding(&board);
    assert!(
        matches!(no_clock[0].status, AlertStatus::Resolved { .. }),
        "{:?}",
        no_clock[0].status
    );
    board.assert_refolds();

    let mut clocked = Board::new("fide-2023");
    let mut pos = Chess::default();
    for san in ["e4", "e5", "Nf3", "Nc6"] {
        common::play_san(&mut pos, san);
        clocked.placement(pos.board());
    }
    assert!(
        not_responding(&clocked).is_empty(),
        "{:?}",
        clocked.alerts.alerts()
    );
}

/// The board's alerts that it or its clock is not heard from.
fn not_responding(board: &Board) -> Vec<&Alert> {
    board
        .alerts
        .alerts()
        .iter()
        .filter(|a| a.kind == AlertKind::BoardNotResponding)
        .collect()
}

/// The clock's cable is pulled in play: the board says no clock is connected, which raises one
/// alert (said again, nothing new) until the board says the clock is back.
#[test]
fn a_clock_unplugged_in_play_is_an_alert_until_the_board_says_it_is_back() {
    let mut board = Board::new("fide-2023");
    let mut pos = Chess::default();
    for san in ["e4", "e5"] {
        board.play(&mut pos, san);
    }
    let clock_status = |connected: bool| {
        Obs::Status(DeviceStatus {
            state: DeviceState::Connected as i32,
            clock_connected: Some(connected),
            ..Default::default()
        })
    };
    board.observe(clock_status(false));
    board.observe(clock_status(false));
    let unplugged = not_responding(&board);
    assert_eq!(unplugged.len(), 1, "{:?}", board.alerts.alerts());
    assert!(
        unplugged[0].summary.contains("no clock is connected"),
        "{}",
        unplugged[0].summary
    );
    board.observe(clock_status(true));
    let unplugged = not_responding(&board);
    assert!(
        matches!(unplugged[0].status, AlertStatus::Resolved { .. }),
        "{:?}",
        unplugged[0].status
    );
    board.assert_refolds();
}

//! A game set up again (`SetUpRevised`): before it begins anything but its ids changes; after,
//! the players' and the event's details and the physical board (the game goes on on another
//! board), never the rules it is read with; the log folds to the same game, for the aggregate
//! and for viewers, and a revision the game no longer allows is refused when decided and when
//! folded.

mod common;

use boardcast_game::device::{BoardPlacement, ClockRun, Observation, observation::Kind as Obs};
use boardcast_game::display::DisplayGame;
use boardcast_game::events::{
    GameStarted, Player, SetUpRevised, SetupAspect, TimePeriod, game_event::Kind,
};
use boardcast_game::{Game, GameError, NewEvent, ObservationOutcome, RevisionRefused};
use common::{Board, GAME, fold_records, play_san};
use shakmaty::{Chess, Position};

fn classical() -> Vec<TimePeriod> {
    vec![TimePeriod {
        base_ms: 5_400_000,
        increment_ms: 30_000,
        ..Default::default()
    }]
}

fn player(name: &str, rating: u32) -> Option<Player> {
    Some(Player {
        name: name.into(),
        rating,
        ..Default::default()
    })
}

/// The test game's set-up with other players, on physical board `board_id`.
fn revised(board: &Board, board_id: &str, white: &str, black: &str) -> GameStarted {
    GameStarted {
        board_id: board_id.into(),
        white: player(white, 2500),
        black: player(black, 2480),
        // As a caller sends it: the new board's last observation, and no interpretation.
        board_seq_before: 40,
        interpretation: 0,
        ..board.game.info().clone()
    }
}

fn decide(board: &Board, set_up: &GameStarted) -> Result<Vec<NewEvent>, RevisionRefused> {
    board
        .game
        .decide_set_up_revision(set_up, "chief", "request-2")
}

/// The viewers' fold of the log.
fn displayed(board: &Board) -> DisplayGame {
    let mut shown = DisplayGame::start(&board.events[0]).expect("a start");
    for event in &board.events[1..] {
        shown.evolve(event).expect("folds for viewers");
    }
    shown
}

#[test]
fn before_the_first_move_a_game_is_set_up_again_on_another_board() {
    let mut board = Board::start(&common::started("fide-2023", "", classical()), 0);
    let start = Chess::default();
    board.placement(start.board());
    board.clock(ClockRun::Stopped);
    let set_up = GameStarted {
        time_control: Some(boardcast_game::events::TimeControl {
            periods: vec![TimePeriod {
                base_ms: 900_000,
                increment_ms: 10_000,
                ..Default::default()
            }],
        }),
        ..revised(&board, "hall-7", "Carlsen", "Nakamura")
    };
    let revision = decide(&board, &set_up).expect("allowed before play");
    assert!(!revision.is_empty());
    board.append(revision);

    let game = &board.game;
    assert_eq!(game.board_id(), "hall-7");
    assert_eq!(
        game.info().white.as_ref().map(|p| p.name.as_str()),
        Some("Carlsen")
    );
    assert_eq!(
        (
            game.info().interpretation,
            game.info().tournament_id.as_str()
        ),
        (boardcast_game::CURRENT_INTERPRETATION, "t"),
        "the ids and how the log is read stay the game's"
    );
    assert_eq!(
        game.rules().category,
        boardcast_rules::ruleset::Category::Rapid,
        "read with the new time control"
    );
    // The new board's observations count after its last one when the game was moved there; the
    // old board's are no longer this game's.
    assert_eq!(game.board_seq_accounted(), 40);
    let old_board = Observation {
        board_id: "b".into(),
        device_seq: 3,
        kind: Some(Obs::Placement(BoardPlacement {
            placement: start.board().board_fen().to_string(),
        })),
        ..Default::default()
    };
    assert!(board.game.decide_observation(&old_board).is_err());

    // Played on the new board: the moves are the game's.
    let mut pos = Chess::default();
    let mut device_seq = 40;
    for (san, running) in [("e4", ClockRun::Black), ("e5", ClockRun::White)] {
        play_san(&mut pos, san);
        for kind in [
            Obs::Placement(BoardPlacement {
                placement: pos.board().board_fen().to_string(),
            }),
            Obs::Clock(boardcast_game::device::ClockReading {
                white_remaining_ms: 900_000,
                black_remaining_ms: 900_000,
                running: running as i32,
                ..Default::default()
            }),
        ] {
            device_seq += 1;
            let observation = Observation {
                board_id: "hall-7".into(),
                device_seq,
                device_time_unix_ms: 1_000 * device_seq as i64,
                kind: Some(kind),
                ..Default::default()
            };
            if let ObservationOutcome::Events(events) =
                board.game.decide_observation(&observation).expect("valid")
            {
                board.append(events);
            }
        }
    }
    assert_eq!(board.game.completed_moves().len(), 2);

    // Same records, same game: for the aggregate, its alerts, and viewers.
    board.assert_refolds();
    let (folded, _) = fold_records(&board.records);
    assert_eq!(folded.to_state(), board.game.to_state());
    let shown = displayed(&board);
    assert_eq!(shown.info.board_id, "hall-7");
    assert_eq!(
        shown.info.black.as_ref().map(|p| p.name.as_str()),
        Some("Nakamura")
    );
    assert_eq!(shown.moves.len(), 2);
    let words = boardcast_game::wording::words(
        board
            .events
            .iter()
            .find(|e| matches!(e.kind, Some(Kind::SetUpRevised(_))))
            .expect("recorded"),
        false,
        None,
    );
    assert!(
        words.starts_with("set-up revised: Carlsen (2500) – Nakamura (2480)"),
        "{words}"
    );
}

#[test]
fn on_the_same_board_the_game_goes_on_from_what_the_board_sent() {
    let mut board = Board::start(&common::started("fide-2023", "", classical()), 0);
    board.placement(Chess::default().board());
    board.clock(ClockRun::Stopped);
    let accounted = board.game.board_seq_accounted();
    let revision = decide(&board, &revised(&board, "b", "Firouzja", "Caruana")).expect("allowed");
    assert!(!revision.is_empty());
    board.append(revision);
    assert_eq!(
        board.game.board_seq_accounted(),
        accounted,
        "the board's numbering goes on, its 40 of another board counts for nothing"
    );
    let mut pos = Chess::default();
    board.play(&mut pos, "d4");
    board.play(&mut pos, "Nf6");
    assert_eq!(board.game.completed_moves().len(), 2);
    assert_eq!(
        board.game.info().white.as_ref().map(|p| p.name.as_str()),
        Some("Firouzja")
    );
    board.assert_refolds();
}

#[test]
fn after_the_first_move_the_rules_stay_and_the_names_are_corrected() {
    let mut board = Board::start(&common::started("fide-2023", "", classical()), 0);
    let mut pos = Chess::default();
    board.play(&mut pos, "e4");
    board.play(&mut pos, "e5");
    let moves_before = board.game.completed_moves().len();
    let line_before = board.game.provisional_line().len();
    assert!(moves_before + line_before >= 2);
    let records_before = board.records.len();

    // The time control, the Laws: refused, nothing decided.
    let faster = GameStarted {
        time_control: Some(boardcast_game::events::TimeControl {
            periods: vec![TimePeriod {
                base_ms: 180_000,
                increment_ms: 2_000,
                ..Default::default()
            }],
        }),
        ..revised(&board, "b", "W", "B")
    };
    let other_laws = GameStarted {
        edition: "fide-2018".into(),
        ..revised(&board, "b", "W", "B")
    };
    for (set_up, what) in [(faster, "time control"), (other_laws, "Laws edition")] {
        assert_eq!(
            decide(&board, &set_up),
            Err(RevisionRefused::Begun { what })
        );
    }
    assert_eq!(board.records.len(), records_before);

    // A misspelt name and the event's name: corrected, the moves stay.
    let corrected = GameStarted {
        event_name: "Hall Open 2026".into(),
        ..revised(&board, "b", "Gukesh D", "Ding Liren")
    };
    let revision = decide(&board, &corrected).expect("allowed after the first move");
    assert!(!revision.is_empty());
    board.append(revision);
    assert_eq!(
        (
            board.game.completed_moves().len(),
            board.game.provisional_line().len()
        ),
        (moves_before, line_before)
    );
    assert_eq!(board.game.info().event_name, "Hall Open 2026");
    assert_eq!(
        board.game.info().black.as_ref().map(|p| p.name.as_str()),
        Some("Ding Liren")
    );
    // Asked again (a retry): nothing more to record.
    assert_eq!(decide(&board, &corrected), Ok(Vec::new()));
    board.play(&mut pos, "Nf3");
    assert!(board.game.completed_moves().len() + board.game.provisional_line().len() >= 3);
    board.assert_refolds();
    assert_eq!(displayed(&board).info.event_name, "Hall Open 2026");
}

#[test]
fn an_invalid_set_up_is_refused_as_at_the_start() {
    let board = Board::start(&common::started("fide-2023", "", classical()), 0);
    let nameless = GameStarted {
        white: player(" ", 0),
        ..revised(&board, "b", "W", "B")
    };
    assert!(matches!(
        decide(&board, &nameless),
        Err(RevisionRefused::Invalid(GameError::InvalidGame(_)))
    ));
    let bad_board = revised(&board, "hall 7", "W", "B");
    assert!(matches!(
        decide(&board, &bad_board),
        Err(RevisionRefused::Invalid(GameError::InvalidGame(_)))
    ));
}

#[test]
fn a_log_revising_more_than_it_may_does_not_fold() {
    let mut board = Board::start(&common::started("fide-2023", "", classical()), 0);
    let mut pos = Chess::default();
    board.play(&mut pos, "e4");
    // Written by something other than the decision (a bug, or a forged log): the board changed
    // after the first move, or the game's ids.
    let after_play = revised(&board, "hall-7", "W", "B");
    let other_round = GameStarted {
        round: 2,
        ..revised(&board, "b", "W", "B")
    };
    for set_up in [after_play, other_round] {
        let forged = Game::record(
            Some(&board.game),
            GAME,
            vec![NewEvent {
                kind: Kind::SetUpRevised(SetUpRevised {
                    set_up: Some(set_up),
                }),
                provenance: Default::default(),
            }],
            0,
        );
        let mut game = board.game.clone();
        assert!(
            matches!(game.apply(&forged[0]), Err(GameError::Inconsistent { .. })),
            "refused when folded"
        );
    }
}

/// The same hall, played on a board turned round with the clocks set by the arbiter before the
/// first move, with and without a name corrected before it: the game reads the board alike.
#[test]
fn a_name_corrected_before_play_leaves_what_the_board_and_clock_showed() {
    use boardcast_game::events::{AdjustClocks, arbiter_action::Action};
    let play = |correct: bool| {
        let mut board = Board::start(&common::started("fide-2023", "", classical()), 0);
        let mut rotated = Chess::default().board().clone();
        rotated.rotate_180();
        board.placement(&rotated);
        board.act(
            Action::Clocks(AdjustClocks {
                white_remaining_ms: Some(5_000_000),
                black_remaining_ms: Some(5_000_000),
                reason: "clock set wrongly".into(),
                ..Default::default()
            }),
            "chief",
        );
        if correct {
            let revision =
                decide(&board, &revised(&board, "b", "Anand", "Kramnik")).expect("allowed");
            assert!(!revision.is_empty());
            board.append(revision);
        }
        let mut pos = Chess::default();
        for (san, running) in [("e4", ClockRun::Black), ("c5", ClockRun::White)] {
            play_san(&mut pos, san);
            let mut shown = pos.board().clone();
            shown.rotate_180();
            board.placement(&shown);
            board.clock(running);
        }
        board.assert_refolds();
        board
    };
    let (plain, corrected) = (play(false), play(true));
    let read = |board: &Board| {
        let state = board.game.to_state();
        (
            state.moves,
            state.provisional_line,
            state.setup_mismatches,
            state.clock_sides,
            board.raised().len(),
        )
    };
    assert_eq!(read(&corrected), read(&plain));
    assert_eq!(
        corrected
            .game
            .completed_moves()
            .iter()
            .map(|m| m.event.san.as_str())
            .collect::<Vec<_>>(),
        plain
            .game
            .completed_moves()
            .iter()
            .map(|m| m.event.san.as_str())
            .collect::<Vec<_>>()
    );
    assert!(
        !plain.game.completed_moves().is_empty() || !plain.game.provisional_line().is_empty(),
        "the moves were read on the board turned round"
    );
}

#[test]
fn a_game_taken_back_to_its_start_has_still_begun() {
    use boardcast_game::events::{RestorePosition, arbiter_action::Action};
    let mut board = Board::start(&common::started("fide-2023", "", classical()), 0);
    board.placement(Chess::default().board());
    board.clock(ClockRun::Stopped);
    let mut pos = Chess::default();
    board.play(&mut pos, "e4");
    board.play(&mut pos, "e5");
    board.act(
        Action::Restore(RestorePosition {
            ply: 0,
            reason: "wrong players at the board".into(),
            ..Default::default()
        }),
        "chief",
    );
    assert!(board.game.completed_moves().is_empty());
    assert!(board.game.has_begun());
    let from_the_start_again = GameStarted {
        start_fen: "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1".into(),
        time_control: Some(boardcast_game::events::TimeControl {
            periods: vec![TimePeriod {
                base_ms: 600_000,
                ..Default::default()
            }],
        }),
        ..revised(&board, "b", "W", "B")
    };
    assert_eq!(
        decide(&board, &from_the_start_again),
        Err(RevisionRefused::Begun {
            what: "time control"
        })
    );
}

#[test]
fn a_late_retry_of_a_revision_does_not_undo_a_later_one() {
    let mut board = Board::start(&common::started("fide-2023", "", classical()), 0);
    let first = revised(&board, "b", "Ju Wenjun", "Lei Tingjie");
    let revision = decide(&board, &first).expect("allowed");
    assert!(!revision.is_empty());
    board.append(revision);
    let second = board
        .game
        .decide_set_up_revision(
            &revised(&board, "b", "Lei Tingjie", "Ju Wenjun"),
            "chief",
            "request-3",
        )
        .expect("allowed");
    board.append(second);
    // The first request's answer was lost; it is sent again.
    assert_eq!(decide(&board, &first), Ok(Vec::new()));
    assert_eq!(
        board.game.info().white.as_ref().map(|p| p.name.as_str()),
        Some("Lei Tingjie")
    );
}

#[test]
fn the_same_laws_and_start_written_otherwise_change_nothing() {
    let mut board = Board::start(&common::started("fide-2023", "", classical()), 0);
    let mut pos = Chess::default();
    board.play(&mut pos, "e4");
    for same in [
        GameStarted {
            edition: String::new(),
            ..board.game.info().clone()
        },
        GameStarted {
            start_fen: "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1".into(),
            ..board.game.info().clone()
        },
    ] {
        assert_eq!(
            board
                .game
                .decide_set_up_revision(&same, "chief", "request-4"),
            Ok(Vec::new()),
            "{same:?}"
        );
    }
}

#[test]
fn a_start_position_corrected_closes_what_the_board_showed_against_the_old_one() {
    // Set up from a resumed game's position by mistake; the board shows the normal start.
    let resumed = "rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2";
    let mut board = Board::start(&common::started("fide-2023", resumed, classical()), 0);
    // Shown for a while, unchanged, the clock read meanwhile.
    board.observe_at(
        Obs::Placement(BoardPlacement {
            placement: Chess::default().board().board_fen().to_string(),
        }),
        1_000,
    );
    board.observe_at(
        Obs::Clock(boardcast_game::device::ClockReading {
            white_remaining_ms: 5_400_000,
            black_remaining_ms: 5_400_000,
            running: ClockRun::Stopped as i32,
            ..Default::default()
        }),
        60_000,
    );
    let held = (
        board.game.irregular_placement().is_some(),
        board.game.setup_mismatches().len(),
    );
    assert!(
        held.0 || held.1 > 0,
        "the board does not show the game's start"
    );
    let standard = GameStarted {
        start_fen: String::new(),
        ..board.game.info().clone()
    };
    let revision = decide(&board, &standard).expect("allowed before play");
    let kinds: Vec<&str> = revision
        .iter()
        .map(|e| match e.kind {
            Kind::SetUpRevised(_) => "revised",
            Kind::SetupMismatchCleared(_) => "mismatch cleared",
            Kind::IrregularityCleared(_) => "irregularity cleared",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds[0], "revised");
    assert!(!kinds.contains(&"other"), "{kinds:?}");
    assert_eq!(
        (
            kinds.contains(&"irregularity cleared"),
            kinds.iter().filter(|k| **k == "mismatch cleared").count()
        ),
        held,
        "each closed"
    );
    board.append(revision);
    assert!(board.game.irregular_placement().is_none());
    assert!(board.game.setup_mismatches().is_empty());
    // The board shows the corrected start: the game is played from it.
    board.placement(Chess::default().board());
    board.clock(ClockRun::Stopped);
    let mut pos = Chess::default();
    board.play(&mut pos, "e4");
    board.play(&mut pos, "e5");
    assert_eq!(board.game.completed_moves().len(), 2);
    assert!(board.game.setup_mismatches().is_empty());
    board.assert_refolds();
    // Every alert the old start raised is resolved.
    assert!(
        board
            .alerts
            .alerts()
            .iter()
            .all(|a| !matches!(a.status, boardcast_game::alerts::AlertStatus::New)),
        "{:?}",
        board.alerts.alerts()
    );
}

#[test]
fn a_move_tried_before_the_round_and_taken_back_is_no_start() {
    let mut board = Board::start(&common::started("fide-2023", "", classical()), 0);
    board.placement(Chess::default().board());
    let mut pos = Chess::default();
    play_san(&mut pos, "e4");
    board.placement(pos.board());
    assert!(board.game.has_begun(), "a move on the board");
    board.placement(Chess::default().board());
    assert!(!board.game.has_begun(), "taken back before any press");
    let revision = decide(&board, &revised(&board, "hall-7", "W", "B")).expect("allowed");
    assert!(!revision.is_empty());
}

#[test]
fn a_retry_of_the_request_that_set_the_game_up_changes_nothing() {
    let board = Board::start(&common::started("fide-2023", "", classical()), 0);
    let set_up_again = revised(&board, "b", "Other", "Names");
    // `Board::start` sets the game up with request "".
    let started_by = board.game.started_by_request().to_owned();
    assert!(started_by.is_empty());
    let (id, start) = Game::decide_start(
        &common::started("fide-2023", "", classical()),
        "operator",
        "pairing-1",
    )
    .expect("valid");
    let mut records = Game::record(None, &id, vec![start], 0);
    let game = Game::from_first_record(&records.remove(0)).expect("folds");
    assert_eq!(
        game.decide_set_up_revision(&set_up_again, "operator", "pairing-1"),
        Ok(Vec::new())
    );
    assert_eq!(
        game.decide_set_up_revision(&set_up_again, "operator", "pairing-2")
            .map(|e| e.len()),
        Ok(1)
    );
}

#[test]
fn the_move_counters_of_a_start_position_are_part_of_it() {
    let board = Board::start(&common::started("fide-2023", "", classical()), 0);
    let counted = GameStarted {
        start_fen: "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 12 30".into(),
        ..board.game.info().clone()
    };
    assert_eq!(decide(&board, &counted).map(|e| e.len()), Ok(1));
}

/// Board `board_id`'s observation `device_seq`, at `at_ms`, decided and recorded.
fn observe_on(board: &mut Board, board_id: &str, device_seq: u64, at_ms: i64, kind: Obs) {
    let observation = Observation {
        board_id: board_id.into(),
        device_seq,
        device_time_unix_ms: at_ms,
        kind: Some(kind),
        ..Default::default()
    };
    if let ObservationOutcome::Events(events) =
        board.game.decide_observation(&observation).expect("valid")
    {
        board.append(events);
    }
}

#[test]
fn a_game_in_play_goes_on_on_another_board_when_its_board_breaks() {
    use boardcast_game::device::ClockReading;
    let mut board = Board::start(&common::started("fide-2023", "", classical()), 0);
    board.placement(Chess::default().board());
    board.clock(ClockRun::Stopped);
    let mut pos = Chess::default();
    for san in ["e4", "e5", "Nf3"] {
        board.play(&mut pos, san);
    }
    let completed = board.game.completed_moves().len();
    assert_eq!(completed, 3);
    let spare_set_up = GameStarted {
        board_id: "spare".into(),
        board_seq_before: 100,
        ..board.game.info().clone()
    };
    let spare = || spare_set_up.clone();
    // Black's knight stands on c6, the clock not pressed yet: that move goes with the game once
    // completed or taken back.
    let mut with_nc6 = pos.clone();
    play_san(&mut with_nc6, "Nc6");
    board.placement(with_nc6.board());
    assert_eq!(
        board
            .game
            .decide_set_up_revision(&spare(), "chief", "broken"),
        Err(RevisionRefused::MoveOnTheBoard)
    );
    // A rule of the game stays: refused too.
    let faster = GameStarted {
        edition: "fide-2018".into(),
        ..spare()
    };
    assert_eq!(
        board
            .game
            .decide_set_up_revision(&faster, "chief", "broken"),
        Err(RevisionRefused::Begun {
            what: "Laws edition"
        })
    );
    board.placement(pos.board());
    assert!(board.game.provisional_line().is_empty());
    // The broken clock registers a press by Black without a move: held in doubt.
    board.clock(ClockRun::White);
    let doubts = board.game.to_state().presses_in_doubt;
    assert_eq!(doubts.len(), 1, "{:?}", board.kinds());
    let revision = board
        .game
        .decide_set_up_revision(&spare(), "chief", "broken")
        .expect("allowed in play");
    // The old clock's press in doubt is settled with the move: the new clock cannot say.
    assert!(revision.iter().any(|e| matches!(
        &e.kind,
        Kind::PressSettled(s) if s.doubt_game_seq == doubts[0]
            && s.settlement() == boardcast_game::events::PressSettlement::NotConfirmed
    )));
    board.append(revision);
    assert!(board.game.to_state().presses_in_doubt.is_empty());
    assert!(!board.alert(doubts[0]).is_open(), "its alert is resolved");
    assert_eq!(board.game.board_id(), "spare");
    assert_eq!(
        board.game.completed_moves().len(),
        completed,
        "the moves stay"
    );
    assert_eq!(board.game.board_seq_accounted(), 100);

    // The spare board shows the position, its clock set by the arbiter to the times left; the
    // game goes on there: 3... Nc6 4. Bb5 a6, pressed on the spare clock.
    let alerts_before = board.raised().len();
    let mut seq = 100;
    let mut at = 1_000_000;
    let mut next = |board: &mut Board, kind: Obs| {
        seq += 1;
        at += 20_000;
        observe_on(board, "spare", seq, at, kind);
    };
    let clock = |white_ms: u64, black_ms: u64, running: ClockRun| {
        Obs::Clock(ClockReading {
            white_remaining_ms: white_ms,
            black_remaining_ms: black_ms,
            running: running as i32,
            ..Default::default()
        })
    };
    let shows = |p: &Chess| {
        Obs::Placement(BoardPlacement {
            placement: p.board().board_fen().to_string(),
        })
    };
    next(&mut board, shows(&pos));
    next(&mut board, clock(5_000_000, 5_100_000, ClockRun::Black));
    let mut white = 5_000_000u64;
    let mut black = 5_100_000u64;
    for (san, white_moves) in [("Nc6", false), ("Bb5", true), ("a6", false), ("Ba4", true)] {
        play_san(&mut pos, san);
        next(&mut board, shows(&pos));
        // 40 s thought (the placement and the press 20 s apart each), 30 s added.
        if white_moves {
            white = white - 40_000 + 30_000;
        } else {
            black = black - 40_000 + 30_000;
        }
        let running = if white_moves {
            ClockRun::Black
        } else {
            ClockRun::White
        };
        next(&mut board, clock(white, black, running));
    }
    assert_eq!(board.game.completed_moves().len(), completed + 4);
    let since_the_move: Vec<&Kind> = board
        .kinds()
        .into_iter()
        .skip_while(|k| !matches!(k, Kind::SetUpRevised(_)))
        .filter(|k| matches!(k, Kind::ClockAlert(_)))
        .collect();
    assert!(
        since_the_move.is_empty(),
        "the spare clock is not held to the broken one's readings: {since_the_move:?}"
    );
    assert_eq!(board.raised().len(), alerts_before, "{:?}", board.raised());
    // The broken board's observations are no longer the game's.
    let late = Observation {
        board_id: "b".into(),
        device_seq: 99,
        kind: Some(shows(&pos)),
        ..Default::default()
    };
    assert!(board.game.decide_observation(&late).is_err());
    board.assert_refolds();
    let shown = displayed(&board);
    assert_eq!(shown.info.board_id, "spare");
    assert_eq!(shown.moves.len(), completed + 4);
}

/// The spare board a game moved to stands turned round: the game's position seen so turns the
/// reading (interpretation 7), the arbiter is told, and the game goes on.
#[test]
fn a_spare_board_turned_round_is_read_so() {
    let mut board = Board::start(&common::started("fide-2023", "", classical()), 0);
    board.placement(Chess::default().board());
    let mut pos = Chess::default();
    for san in ["e4", "e5", "Nf3"] {
        board.play(&mut pos, san);
    }
    let spare = GameStarted {
        board_id: "spare".into(),
        board_seq_before: 100,
        ..board.game.info().clone()
    };
    let revision = board
        .game
        .decide_set_up_revision(&spare, "chief", "broken")
        .expect("allowed in play");
    board.append(revision);
    let turned = |p: &Chess| {
        let mut placement = p.board().clone();
        placement.rotate_180();
        Obs::Placement(BoardPlacement {
            placement: placement.board_fen().to_string(),
        })
    };
    observe_on(&mut board, "spare", 101, 1_000_000, turned(&pos));
    let told: Vec<(String, String)> = board
        .kinds()
        .into_iter()
        .filter_map(|k| match k {
            Kind::SetupMismatch(m) if m.aspect() == SetupAspect::Orientation => {
                Some((m.expected.clone(), m.seen.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        told,
        [(
            "the game's position as the board's gateway reads the board".to_owned(),
            "the game's position turned round: the board was turned round or set up so".to_owned()
        )]
    );
    let clock = |running: ClockRun| {
        Obs::Clock(boardcast_game::device::ClockReading {
            white_remaining_ms: 5_000_000,
            black_remaining_ms: 5_000_000,
            running: running as i32,
            ..Default::default()
        })
    };
    // The spare clock started for Black, who plays 3... Nc6 and presses.
    observe_on(&mut board, "spare", 102, 1_001_000, clock(ClockRun::Black));
    play_san(&mut pos, "Nc6");
    observe_on(&mut board, "spare", 103, 1_010_000, turned(&pos));
    observe_on(&mut board, "spare", 104, 1_011_000, clock(ClockRun::White));
    let sans: Vec<String> = board
        .game
        .completed_moves()
        .iter()
        .map(|m| m.event.san.clone())
        .collect();
    assert_eq!(sans, ["e4", "e5", "Nf3", "Nc6"], "{:?}", board.kinds());
    assert_eq!(
        board.game.irregular_placement(),
        None,
        "{:?}",
        board.kinds()
    );
    board.assert_refolds();
}

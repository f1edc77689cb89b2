//! The aggregate folds simulated boards into the right games.

use boardcast_game::device::{
    BoardPlacement, ClockDisplay, Observation, SourceKind, observation::Kind as ObsKind,
};
use boardcast_game::events::{
    GameEventRecord, GameResult, GameStarted, Player, SetupAspect, Termination, TimeControl,
    TimePeriod, game_event::Kind,
};
use boardcast_game::{Game, ObservationOutcome};
use boardcast_rules::pgn::{PgnGame, parse_san, read_games};
use boardcast_sim::{ClockSetup, ScriptOptions, script};
use shakmaty::{Position, uci::UciMove};

fn started(board_id: &str, white: &str, black: &str) -> GameStarted {
    GameStarted {
        tournament_id: "test".into(),
        round: 1,
        board_number: 1,
        board_id: board_id.into(),
        white: Some(Player {
            name: white.into(),
            ..Default::default()
        }),
        black: Some(Player {
            name: black.into(),
            ..Default::default()
        }),
        time_control: Some(TimeControl {
            periods: vec![TimePeriod {
                moves: 0,
                base_ms: 7_200_000,
                ..Default::default()
            }],
        }),
        edition: "fide-2023".into(),
        ..Default::default()
    }
}

fn new_game(info: &GameStarted) -> Game {
    let (id, event) = Game::decide_start(info, "operator", "").expect("valid game");
    let records = Game::record(None, &id, vec![event], 0);
    Game::from_first_record(&records[0]).expect("first record folds")
}

/// Plays a score's simulated observations through the aggregate, as the service does, and
/// returns the game with every record of its log.
fn play_recording(pgn: &PgnGame) -> (Game, Vec<GameEventRecord>) {
    play_recording_with(pgn, &ScriptOptions::default())
}

/// `play_recording` with the simulated board and clock set up as `options` say.
fn play_recording_with(pgn: &PgnGame, options: &ScriptOptions) -> (Game, Vec<GameEventRecord>) {
    let info = started("b1", "W", "B");
    let (id, event) = Game::decide_start(&info, "operator", "").expect("valid game");
    let mut log = Game::record(None, &id, vec![event], 0);
    let mut game = Game::from_first_record(&log[0]).expect("first record folds");
    let steps = script(pgn, options).expect("scripts");
    for (i, step) in steps.into_iter().enumerate() {
        let obs = Observation {
            board_id: "b1".into(),
            device_seq: i as u64 + 1,
            device_time_unix_ms: step.at_ms as i64,
            receive_time_unix_ms: step.at_ms as i64,
            source: SourceKind::Simulator as i32,
            kind: Some(step.kind),
        };
        match game.decide_observation(&obs).expect("valid observation") {
            ObservationOutcome::Events(events) => {
                let records = Game::record(Some(&game), game.game_id(), events, step.at_ms as i64);
                for record in &records {
                    game.apply(record).expect("own records apply");
                }
                log.extend(records);
            }
            ObservationOutcome::Ignored(_) => {}
        }
    }
    (game, log)
}

fn uci_moves(pgn: &PgnGame) -> Vec<String> {
    let mut pos = pgn.start_position().expect("start position");
    pgn.moves
        .iter()
        .map(|m| {
            let mv = parse_san(&pos, &m.san).expect("legal move");
            pos.play_unchecked(mv);
            UciMove::from_standard(mv).to_string()
        })
        .collect()
}

fn play(pgn: &PgnGame) -> Game {
    play_recording(pgn).0
}

#[test]
fn every_london_game_is_folded_into_its_moves_clocks_and_result() {
    for clock in [
        ClockSetup::default(),
        ClockSetup::white_on_right(),
        ClockSetup {
            turned_before_ply: Some(39),
            ..ClockSetup::white_on_right()
        },
    ] {
        every_london_game_folds_with(clock);
    }
}

/// Every London game, its observations published as a gateway set up for White's clock on the
/// left reads a clock standing as `clock` says: the moves, the clocks and the result come out
/// exact, every move completed by a press, nothing irregular.
fn every_london_game_folds_with(clock: ClockSetup) {
    let games = read_games(include_str!("../../../data/london-classic-2016.pgn")).expect("reads");
    let options = ScriptOptions {
        clock,
        ..ScriptOptions::default()
    };
    // Other set-ups on every third game: the DGT capture tests play them all.
    let every = if clock == ClockSetup::default() { 1 } else { 3 };
    for pgn in games.iter().step_by(every) {
        let (game, log) = play_recording_with(pgn, &options);
        let irregular = log
            .iter()
            .filter_map(|r| Game::open_record(r).ok())
            .filter(|e| {
                matches!(
                    e.kind,
                    Some(Kind::IllegalMove(_) | Kind::Irregularity(_) | Kind::PressInDoubt(_))
                )
            })
            .count();
        assert_eq!(irregular, 0, "{clock:?}: {}", pgn.players());
        let told = game
            .setup_mismatches()
            .iter()
            .filter(|m| m.aspect() == SetupAspect::ClockSides)
            .count();
        // Told while White's time is on the other display than the gateway reads it.
        let right_at_the_end = (clock.white_display == ClockDisplay::Right)
            != (clock
                .turned_before_ply
                .is_some_and(|ply| pgn.moves.len() >= ply as usize));
        assert_eq!(
            told,
            usize::from(right_at_the_end),
            "{clock:?}: {}",
            pgn.players()
        );
        // Compared as moves: scores may over-disambiguate SAN (`Ngf6` with a pinned knight).
        let moves = game.moves();
        let played: Vec<&str> = moves.iter().map(|m| m.uci.as_str()).collect();
        assert_eq!(played, uci_moves(pgn), "{}", pgn.players());
        assert_eq!(game.result_token(), pgn.result, "{}", pgn.players());
        for (i, (m, p)) in game.moves().iter().zip(&pgn.moves).enumerate() {
            let mover_clock = if i % 2 == 0 {
                m.white_remaining_ms
            } else {
                m.black_remaining_ms
            };
            // Nobody presses the clock after mate or stalemate: that move has the clocks the last
            // reading shows, the mover's counted down to the moment it was made (what the
            // simulated clock showed then, whatever the score's times were), the opponent's as
            // their press left it.
            let ended_by_move = matches!(
                game.result().map(|r| r.1),
                Some(Termination::Checkmate | Termination::Stalemate)
            );
            if ended_by_move && i + 1 == game.moves().len() {
                let before = &game.moves()[i - 1];
                let (mover_before, opponent_now, opponent_before) = if i % 2 == 0 {
                    (
                        before.white_remaining_ms,
                        m.black_remaining_ms,
                        before.black_remaining_ms,
                    )
                } else {
                    (
                        before.black_remaining_ms,
                        m.white_remaining_ms,
                        before.white_remaining_ms,
                    )
                };
                let shown = mover_clock.expect("the clock at the final move");
                assert!(
                    mover_before.is_some_and(|before| shown < before),
                    "{}: {shown} after {mover_before:?}",
                    pgn.players()
                );
                assert_eq!(opponent_now, opponent_before, "{}", pgn.players());
            // The score lacks a few clock times; the simulated clock then still shows one.
            } else if p.clock_ms.is_some() {
                assert_eq!(mover_clock, p.clock_ms, "{} ply {}", pgn.players(), i + 1);
            }
        }
    }
}

#[test]
fn replaying_the_records_gives_the_same_state_and_a_tampered_record_is_detected() {
    let games = read_games(include_str!("../../../data/london-classic-2016.pgn")).expect("reads");
    let (live, records) = play_recording(&games[0]);
    let mut replayed = Game::from_first_record(&records[0]).expect("folds");
    for r in &records[1..] {
        replayed.apply(r).expect("replays");
    }
    assert_eq!(replayed.to_state(), live.to_state());

    let mut tampered = records.clone();
    let last = tampered.len() - 2;
    tampered[last].event[5] ^= 1;
    let mut again = Game::from_first_record(&tampered[0]).expect("folds");
    let err = tampered[1..]
        .iter()
        .try_for_each(|r| again.apply(r))
        .expect_err("detected");
    assert!(
        err.to_string().contains("altered") || err.to_string().contains("not a game event"),
        "{err}"
    );

    let mut missing = records.clone();
    missing.remove(3);
    let mut again = Game::from_first_record(&missing[0]).expect("folds");
    let err = missing[1..]
        .iter()
        .try_for_each(|r| again.apply(r))
        .expect_err("detected");
    assert!(err.to_string().contains("does not follow"), "{err}");
}

#[test]
fn duplicates_and_invalid_placements_are_told_apart() {
    let game = new_game(&started("b1", "W", "B"));
    let bad = Observation {
        board_id: "b1".into(),
        device_seq: 1,
        kind: Some(ObsKind::Placement(BoardPlacement {
            placement: "not a board".into(),
        })),
        ..Default::default()
    };
    let err = game.decide_observation(&bad).expect_err("rejected");
    assert!(err.to_string().contains("invalid placement"), "{err}");
    let other_board = Observation {
        board_id: "b2".into(),
        ..bad.clone()
    };
    assert!(game.decide_observation(&other_board).is_err());
    let start = Observation {
        kind: Some(ObsKind::Placement(BoardPlacement {
            placement: "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR".into(),
        })),
        ..bad
    };
    // A placement that means nothing new is still recorded: the log keeps what the board saw.
    let ObservationOutcome::Events(events) = game.decide_observation(&start).expect("valid") else {
        panic!("the placement is recorded");
    };
    assert_eq!(events.len(), 1);
    assert!(matches!(
        events[0].kind,
        boardcast_game::events::game_event::Kind::ObservationRecorded(_)
    ));
}

#[test]
fn result_signal_ends_the_game() {
    let games = read_games("[Result \"1/2-1/2\"]\n\n1. e4 e5 1/2-1/2").expect("reads");
    let game = play(&games[0]);
    assert_eq!(game.result().map(|r| r.0), Some(GameResult::Draw));
    assert_eq!(game.moves().len(), 2);
}

/// Board b1's observation `device_seq`: the start placement.
fn start_placement(device_seq: u64) -> Observation {
    Observation {
        board_id: "b1".into(),
        device_seq,
        kind: Some(ObsKind::Placement(BoardPlacement {
            placement: "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR".into(),
        })),
        ..Default::default()
    }
}

#[test]
fn observations_sent_before_the_game_was_set_up_are_not_its_own() {
    // The board carried round 1's game up to observation 40; round 2's game starts after it.
    let info = GameStarted {
        board_seq_before: 40,
        ..started("b1", "W", "B")
    };
    let game = new_game(&info);
    assert_eq!(
        game.decide_observation(&start_placement(38))
            .expect("valid"),
        ObservationOutcome::Ignored(boardcast_game::Ignored::EarlierGame {
            device_seq: 38,
            earlier_game_last: 40,
        })
    );
    assert!(matches!(
        game.decide_observation(&start_placement(41))
            .expect("valid"),
        ObservationOutcome::Events(_)
    ));
    assert_eq!(game.board_seq_accounted(), 40);
}

#[test]
fn missing_observations_are_recorded_and_late_ones_not_applied() {
    let info = started("b1", "W", "B");
    let mut game = new_game(&info);
    let append = |game: &mut Game, events| {
        for record in Game::record(Some(game), "test-r1-b1", events, 0) {
            game.apply(&record).expect("folds");
        }
    };
    let ObservationOutcome::Events(events) =
        game.decide_observation(&start_placement(1)).expect("valid")
    else {
        panic!("recorded");
    };
    append(&mut game, events);

    // Observation 5 arrives; 2 to 4 never did.
    let noticed = start_placement(5);
    let events = game.decide_missing_observations(2, 4, &noticed);
    assert_eq!(events.len(), 1);
    append(&mut game, events);
    let expected = boardcast_game::events::ObservationsMissing {
        first_device_seq: 2,
        last_device_seq: 4,
        noticed_at_device_seq: 5,
        unusable_reason: String::new(),
    };
    assert_eq!(game.missing_observations(), std::slice::from_ref(&expected));
    assert_eq!(game.to_state().missing_observations, vec![expected]);
    // Recorded once: the same gap noticed again (the observation delivered again) adds nothing.
    assert!(game.decide_missing_observations(2, 4, &noticed).is_empty());

    let ObservationOutcome::Events(events) = game.decide_observation(&noticed).expect("valid")
    else {
        panic!("the observation that showed the gap is applied");
    };
    append(&mut game, events);
    for late in 2..=4 {
        assert_eq!(
            game.decide_observation(&start_placement(late))
                .expect("valid"),
            ObservationOutcome::Ignored(boardcast_game::Ignored::AfterItsGap { device_seq: late })
        );
    }
    assert!(matches!(
        game.decide_observation(&start_placement(5)).expect("valid"),
        ObservationOutcome::Ignored(boardcast_game::Ignored::Duplicate { .. })
    ));
}

//! Property: whatever a board, a clock, an arbiter or a hostile publisher sends — any numbers,
//! any strings, moves completed with any clock times — the game decides it or rejects it with a
//! reason, never panics (debug and release builds alike), and what it decides folds back into
//! the game. Time controls with absurd numbers are refused at set-up.

use boardcast_game::device::{
    BoardPlacement, ClockReading, DeviceStatus, Observation, PieceLifted, PiecePlaced, SourceKind,
    observation::Kind,
};
use boardcast_game::events::TimePeriod;
use boardcast_game::{Game, ObservationOutcome};
use proptest::prelude::*;

mod common;
use common::started;

fn new_game() -> Game {
    let info = started(
        "fide-2023",
        "",
        vec![TimePeriod {
            moves: 40,
            base_ms: 5_400_000,
            increment_ms: 30_000,
            delay_ms: 0,
        }],
    );
    let (id, start) = Game::decide_start(&info, "operator", "").expect("a valid game");
    let first = Game::record(None, &id, vec![start], 0);
    Game::from_first_record(&first[0]).expect("folds")
}

/// Any observation kind with any values, extremes favoured.
fn any_kind() -> impl Strategy<Value = Kind> {
    let big = prop_oneof![
        Just(u64::MAX),
        Just(u64::MAX - 1),
        Just(0u64),
        any::<u64>(),
        0..10_000_000u64
    ];
    let square = prop_oneof![0..64u32, Just(u32::MAX), any::<u32>()];
    let piece = prop_oneof![0..13i32, Just(i32::MIN), Just(i32::MAX), any::<i32>()];
    prop_oneof![
        (square.clone(), piece.clone())
            .prop_map(|(square, piece)| Kind::Lifted(PieceLifted { square, piece })),
        (square, piece).prop_map(|(square, piece)| Kind::Placed(PiecePlaced { square, piece })),
        prop_oneof![
            Just("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR".to_owned()),
            Just("8/8/8/8/8/8/8/8".to_owned()),
            ".{0,80}",
        ]
        .prop_map(|placement| Kind::Placement(BoardPlacement { placement })),
        (
            big.clone(),
            big,
            any::<i32>(),
            any::<bool>(),
            any::<bool>(),
            any::<i32>()
        )
            .prop_map(|(white, black, running, white_flag, black_flag, display)| {
                Kind::Clock(ClockReading {
                    white_remaining_ms: white,
                    black_remaining_ms: black,
                    running,
                    white_flag,
                    black_flag,
                    white_display: display,
                })
            }),
        (any::<i32>(), proptest::option::of(any::<u32>()), ".{0,40}").prop_map(
            |(state, battery_percent, detail)| Kind::Status(DeviceStatus {
                state,
                battery_percent,
                detail,
                ..Default::default()
            })
        ),
    ]
}

fn any_time() -> impl Strategy<Value = i64> {
    prop_oneof![
        Just(i64::MIN),
        Just(i64::MAX),
        Just(0i64),
        any::<i64>(),
        1_700_000_000_000i64..1_900_000_000_000
    ]
}

fn any_seq() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(u64::MAX),
        Just(u64::MAX - 1),
        Just(0u64),
        any::<u64>(),
        1..200u64
    ]
}

/// What a hall and its arbiters do to a game: a board's observation with any values, a legal
/// move completed with a clock reading of any times, or an arbiter's action with any numbers.
#[derive(Debug, Clone)]
enum Input {
    Observe(i64, Kind),
    /// `after_ms`: how long after the previous move (mostly a plausible time, sometimes not).
    PlayLegal {
        pick: usize,
        after_ms: i64,
        white_ms: u64,
        black_ms: u64,
    },
    Arbiter(boardcast_game::events::arbiter_action::Action),
}

/// Any arbiter's action that carries numbers, with extremes favoured.
fn any_arbiter_action() -> impl Strategy<Value = boardcast_game::events::arbiter_action::Action> {
    use boardcast_game::events::{
        AdjustClocks, AlertAcknowledgement, EnterMove, PenaltyDecision, RestorePosition,
        arbiter_action::Action,
    };
    let added = prop_oneof![
        Just(i64::MAX),
        Just(i64::MIN),
        any::<i64>(),
        -600_000..600_000i64
    ];
    let set = proptest::option::of(prop_oneof![Just(u64::MAX), any::<u64>(), 0..10_000_000u64]);
    let seq = prop_oneof![Just(u64::MAX), any::<u64>(), 0..50u64];
    prop_oneof![
        (added.clone(), added, set.clone(), set.clone()).prop_map(|(w, b, ws, bs)| {
            Action::Clocks(AdjustClocks {
                white_added_ms: w,
                black_added_ms: b,
                white_remaining_ms: ws,
                black_remaining_ms: bs,
                reason: "any".into(),
            })
        }),
        (
            prop_oneof![Just(u32::MAX), any::<u32>(), 0..20u32],
            set.clone(),
            set
        )
            .prop_map(
                |(ply, white_remaining_ms, black_remaining_ms)| Action::Restore(RestorePosition {
                    ply,
                    reason: "any".into(),
                    white_remaining_ms,
                    black_remaining_ms,
                })
            ),
        (seq.clone(), any::<bool>()).prop_map(|(illegal_move_game_seq, confirmed)| {
            Action::Penalty(PenaltyDecision {
                illegal_move_game_seq,
                confirmed,
                note: String::new(),
            })
        }),
        seq.prop_map(
            |alert_game_seq| Action::Acknowledgement(AlertAcknowledgement {
                alert_game_seq,
                ..Default::default()
            })
        ),
        ".{0,12}".prop_map(|san| Action::Move(EnterMove { san })),
    ]
}

fn any_input() -> impl Strategy<Value = Input> {
    // Mostly what a clock shows, so that moves are completed and their clocks compared.
    let clock = prop_oneof![8 => 0..6_000_000u64, 1 => Just(u64::MAX), 1 => any::<u64>()];
    let after = prop_oneof![8 => 0..600_000i64, 1 => Just(i64::MAX), 1 => any::<i64>()];
    prop_oneof![
        1 => (any_time(), any_kind()).prop_map(|(at, kind)| Input::Observe(at, kind)),
        3 => (any::<usize>(), after, clock.clone(), clock).prop_map(
            |(pick, after_ms, white_ms, black_ms)| Input::PlayLegal { pick, after_ms, white_ms, black_ms }
        ),
        1 => any_arbiter_action().prop_map(Input::Arbiter),
    ]
}

/// Decides `observation` on `game` and folds what it decided back in; a rejection must say why.
fn observe(game: &mut Game, observation: &Observation) -> Result<(), TestCaseError> {
    match game.decide_observation(observation) {
        Ok(ObservationOutcome::Events(events)) => {
            let id = game.game_id().to_owned();
            for record in Game::record(Some(game), &id, events, 0) {
                prop_assert!(game.apply(&record).is_ok(), "its own decision folds back");
            }
        }
        Ok(ObservationOutcome::Ignored(_)) => {}
        Err(rejected) => prop_assert!(!rejected.to_string().is_empty()),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn any_moves_clocks_and_arbiters_actions_are_decided_or_refused_never_a_panic(
        inputs in proptest::collection::vec(any_input(), 1..60)
    ) {
        use boardcast_game::device::{ClockReading, ClockRun};
        use boardcast_game::events::ArbiterAction;
        use shakmaty::Position as _;
        let mut game = new_game();
        let mut device_seq = 0u64;
        let mut now = 1_800_000_000_000i64;
        let mut next = |kind: Kind, at: i64| {
            device_seq += 1;
            Observation {
                board_id: "b".into(),
                device_seq,
                device_time_unix_ms: at,
                receive_time_unix_ms: at,
                source: SourceKind::DgtSerial as i32,
                kind: Some(kind),
            }
        };
        // The clock started, White's running, as the round begins.
        let started = ClockReading {
            white_remaining_ms: 5_400_000,
            black_remaining_ms: 5_400_000,
            running: ClockRun::White as i32,
            ..Default::default()
        };
        observe(&mut game, &next(Kind::Clock(started), now))?;
        for input in inputs {
            match input {
                Input::Observe(at, kind) => observe(&mut game, &next(kind, at))?,
                Input::PlayLegal { pick, after_ms, white_ms, black_ms } => {
                    now = now.saturating_add(after_ms);
                    let at = now;
                    let legal = game.position().legal_moves();
                    let Some(mv) = legal.get(pick % legal.len().max(1)) else { continue };
                    let mut after = game.position().clone();
                    after.play_unchecked(*mv);
                    let placement = BoardPlacement { placement: after.board().board_fen().to_string() };
                    observe(&mut game, &next(Kind::Placement(placement), at.saturating_sub(100)))?;
                    let running = if after.turn().is_white() { ClockRun::White } else { ClockRun::Black };
                    let reading = ClockReading {
                        white_remaining_ms: white_ms,
                        black_remaining_ms: black_ms,
                        running: running as i32,
                        ..Default::default()
                    };
                    observe(&mut game, &next(Kind::Clock(reading), at))?;
                }
                Input::Arbiter(action) => {
                    let action = ArbiterAction { action: Some(action), ..Default::default() };
                    match game.decide_arbiter(&action, "IA Smith", "") {
                        Ok(events) => {
                            let id = game.game_id().to_owned();
                            for record in Game::record(Some(&game), &id, events, 0) {
                                prop_assert!(game.apply(&record).is_ok(), "an arbiter's decision folds back");
                            }
                        }
                        Err(refused) => prop_assert!(!refused.to_string().is_empty()),
                    }
                }
            }
        }
    }

    #[test]
    fn any_observations_are_decided_or_rejected_never_a_panic(
        inputs in proptest::collection::vec((any_seq(), any_time(), any_time(), proptest::option::of(any_kind())), 1..40)
    ) {
        let mut game = new_game();
        for (device_seq, device_time, receive_time, kind) in inputs {
            let obs = Observation {
                board_id: "b".into(),
                device_seq,
                device_time_unix_ms: device_time,
                receive_time_unix_ms: receive_time,
                source: SourceKind::DgtSerial as i32,
                kind,
            };
            match game.decide_observation(&obs) {
                Ok(ObservationOutcome::Events(events)) => {
                    let id = game.game_id().to_owned();
                    for record in Game::record(Some(&game), &id, events, receive_time) {
                        prop_assert!(game.apply(&record).is_ok(), "its own decision folds back");
                    }
                }
                Ok(ObservationOutcome::Ignored(_)) => {}
                Err(rejected) => prop_assert!(!rejected.to_string().is_empty()),
            }
            // A hole for it, as ingest records one when it gives an observation up.
            let hole = game.decide_unusable_observation(device_seq, device_time, "test");
            let id = game.game_id().to_owned();
            for record in Game::record(Some(&game), &id, hole, receive_time) {
                prop_assert!(game.apply(&record).is_ok(), "a hole folds back");
            }
        }
    }

    #[test]
    fn time_controls_with_absurd_numbers_are_refused(
        moves in prop_oneof![Just(u32::MAX), any::<u32>(), 0..100u32],
        base_ms in prop_oneof![Just(u64::MAX), any::<u64>(), 0..20_000_000u64],
        increment_ms in prop_oneof![Just(u64::MAX), any::<u64>(), 0..100_000u64],
        delay_ms in prop_oneof![Just(u64::MAX), any::<u64>(), 0..100_000u64],
    ) {
        let info = started("fide-2023", "", vec![TimePeriod { moves, base_ms, increment_ms, delay_ms }]);
        let sane = base_ms <= 24 * 3_600_000
            && increment_ms <= 3_600_000
            && delay_ms <= 3_600_000
            && moves <= 1_000
            && (base_ms > 0 || increment_ms > 0);
        prop_assert_eq!(Game::decide_start(&info, "operator", "").is_ok(), sane);
    }
}

#[test]
fn a_boards_numbering_may_start_high_but_never_near_the_end_of_the_numbers() {
    use boardcast_game::device::DeviceStatus;
    let status = |device_seq| Observation {
        board_id: "b".into(),
        device_seq,
        kind: Some(Kind::Status(DeviceStatus::default())),
        ..Default::default()
    };
    let game = new_game();
    // Nothing known of the board (its earlier observations purged): a counter kept for months.
    assert!(game.decide_observation(&status(20_000_000)).is_ok());
    assert!(game.decide_observation(&status(u64::MAX - 1)).is_err());
    assert!(boardcast_game::plausible_device_seq(20_000_000, 25_000_000));
    assert!(!boardcast_game::plausible_device_seq(
        20_000_000, 40_000_000
    ));
}

//! Injected incidents folded through the game aggregate: each gives the events and the alerts
//! its record promises, at its ply, once, and the game still ends with the score's moves.

use boardcast_game::alerts::GameAlerts;
use boardcast_game::device::{ClockDisplay, DeviceState, Observation, SourceKind};
use boardcast_game::events::{
    GameEvent, GameStarted, Player, PressSettlement, TimeControl, TimePeriod, game_event::Kind,
};
use boardcast_game::{Game, NewEvent, ObservationOutcome};
use boardcast_rules::pgn::{PgnGame, parse_san, read_games};
use boardcast_sim::{
    ClockSetup, ExpectedAlert, Incident, LaterPeriod, ScriptOptions, SimError, script,
};
use shakmaty::{Position, uci::UciMove};

/// The Berlin of a London Classic game: captures, castling on both sides, a result signal.
const BERLIN: &str = "[Event \"t\"]\n[Result \"1/2-1/2\"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bb5 Nf6 \
                      4. O-O Nxe4 5. Re1 Nd6 6. Nxe5 Be7 7. Bf1 Nxe5 8. Rxe5 O-O 1/2-1/2";

fn berlin() -> PgnGame {
    read_games(BERLIN).expect("reads").remove(0)
}

/// A game folded from a simulated board as the game service folds it: observations in order,
/// a gap in the board's numbering recorded as missing when the next observation shows it.
struct Folded {
    game: Game,
    /// Every event after `GameStarted`, with the number of moves completed once it applied.
    events: Vec<(GameEvent, usize)>,
    alerts: GameAlerts,
}

impl Folded {
    fn append(&mut self, events: Vec<NewEvent>, at_ms: i64) {
        let records = Game::record(Some(&self.game), self.game.game_id(), events, at_ms);
        for record in &records {
            self.game.apply(record).expect("own records apply");
            let event = Game::open_record(record).expect("opens");
            self.alerts.fold(&event, &self.game);
            self.events.push((event, self.game.completed_moves().len()));
        }
    }

    /// The events of a kind, with the moves completed when each was recorded.
    fn of(&self, f: impl Fn(&Kind) -> bool) -> Vec<(&Kind, usize)> {
        self.events
            .iter()
            .filter_map(|(e, completed)| e.kind.as_ref().filter(|k| f(k)).map(|k| (k, *completed)))
            .collect()
    }

    /// The alerts raised, as (kind, ply), in the order raised.
    fn alerts(&self) -> Vec<(String, u32)> {
        self.alerts
            .alerts()
            .iter()
            .map(|a| (a.kind.name().to_owned(), a.ply))
            .collect()
    }

    fn ucis(&self) -> Vec<String> {
        self.game.moves().into_iter().map(|m| m.uci).collect()
    }
}

fn play(pgn: &PgnGame, options: &ScriptOptions) -> Folded {
    let info = GameStarted {
        tournament_id: "t".into(),
        round: 1,
        board_number: 1,
        board_id: "b".into(),
        white: Some(Player {
            name: "W".into(),
            ..Default::default()
        }),
        black: Some(Player {
            name: "B".into(),
            ..Default::default()
        }),
        time_control: Some(TimeControl {
            periods: std::iter::once(TimePeriod {
                moves: options.first_period_moves,
                base_ms: options.initial_clock_ms,
                increment_ms: options.increment_ms,
                delay_ms: 0,
            })
            .chain(options.later_periods.iter().map(|p| TimePeriod {
                moves: p.moves,
                base_ms: p.base_ms,
                increment_ms: p.increment_ms,
                delay_ms: 0,
            }))
            .collect(),
        }),
        edition: "fide-2023".into(),
        ..Default::default()
    };
    let (id, start) = Game::decide_start(&info, "operator", "").expect("valid game");
    let first = Game::record(None, &id, vec![start], 0);
    let mut folded = Folded {
        game: Game::from_first_record(&first[0]).expect("folds"),
        events: Vec::new(),
        alerts: GameAlerts::new(),
    };
    let started = Game::open_record(&first[0]).expect("opens");
    let game = folded.game.clone();
    folded.alerts.fold(&started, &game);
    let mut last_published = 0;
    for (i, step) in script(pgn, options)
        .expect("scripts")
        .into_iter()
        .enumerate()
    {
        let device_seq = i as u64 + 1;
        if step.lost {
            continue;
        }
        let obs = Observation {
            board_id: "b".into(),
            device_seq,
            device_time_unix_ms: step.at_ms as i64,
            receive_time_unix_ms: step.at_ms as i64,
            source: SourceKind::Simulator as i32,
            kind: Some(step.kind),
        };
        if device_seq > last_published + 1 {
            let missing =
                folded
                    .game
                    .decide_missing_observations(last_published + 1, device_seq - 1, &obs);
            folded.append(missing, step.at_ms as i64);
        }
        last_published = device_seq;
        if let ObservationOutcome::Events(events) = folded
            .game
            .decide_observation(&obs)
            .expect("valid observation")
        {
            folded.append(events, step.at_ms as i64);
        }
    }
    folded
}

fn score_ucis(pgn: &PgnGame) -> Vec<String> {
    let mut pos = pgn.start_position().expect("start position");
    pgn.moves
        .iter()
        .map(|m| {
            let mv = parse_san(&pos, &m.san).expect("legal");
            pos.play_unchecked(mv);
            UciMove::from_standard(mv).to_string()
        })
        .collect()
}

fn with(incidents: Vec<Incident>, clock: ClockSetup) -> ScriptOptions {
    ScriptOptions {
        initial_clock_ms: 90 * 60_000,
        clock,
        incidents,
        ..ScriptOptions::default()
    }
}

fn expected(incidents: &[Incident]) -> Vec<(String, u32)> {
    let mut alerts: Vec<(String, u32)> = incidents
        .iter()
        .flat_map(Incident::expected_alerts)
        .map(|ExpectedAlert { kind, ply }| (kind.name().to_owned(), ply))
        .collect();
    alerts.sort();
    alerts
}

/// Plays the Berlin with `incidents`: the moves are the score's, the game ends with the players'
/// signal, and the alerts are exactly those the incidents promise besides those of the clock's
/// set-up (the game played without incidents).
fn played_with(incidents: Vec<Incident>, clock: ClockSetup) -> Folded {
    let pgn = berlin();
    let folded = play(&pgn, &with(incidents.clone(), clock));
    let what = format!("{incidents:?} {clock:?}");
    assert_eq!(folded.ucis(), score_ucis(&pgn), "{what}");
    assert!(folded.game.is_over(), "{what}");
    let mut alerts = folded.alerts();
    alerts.sort();
    let mut promised = play(&pgn, &with(Vec::new(), clock)).alerts();
    promised.extend(expected(&incidents));
    promised.sort();
    assert_eq!(alerts, promised, "{what}");
    folded
}

/// White's time on the left as the gateway reads it, and on the right (worked out by the game).
const CLOCKS: [ClockSetup; 2] = [
    ClockSetup {
        white_display: ClockDisplay::Left,
        gateway_white_display: ClockDisplay::Left,
        turned_before_ply: None,
    },
    ClockSetup {
        white_display: ClockDisplay::Right,
        gateway_white_display: ClockDisplay::Left,
        turned_before_ply: None,
    },
];

#[test]
fn a_game_without_incidents_raises_only_what_its_clock_set_up_does() {
    assert_eq!(play(&berlin(), &with(Vec::new(), CLOCKS[0])).alerts(), []);
    assert_eq!(
        play(&berlin(), &with(Vec::new(), CLOCKS[1])).alerts(),
        [("setup_mismatch".to_owned(), 1)]
    );
}

#[test]
fn a_game_with_an_increment_takes_the_increment_on_every_press() {
    // Thinking time and increment on the clock as the time control says: nothing to report.
    let options = ScriptOptions {
        increment_ms: 30_000,
        ..with(Vec::new(), CLOCKS[0])
    };
    let folded = play(&berlin(), &options);
    assert_eq!(folded.alerts(), []);
    assert!(folded.game.is_over());
}

/// The London Classic's time control (120 min for 40 moves, then 60 min with 30 s a move from
/// move 41), as `boardcast demo` plays it.
fn london_time_control() -> ScriptOptions {
    ScriptOptions {
        initial_clock_ms: 7_200_000,
        first_period_moves: 40,
        later_periods: vec![LaterPeriod {
            moves: 0,
            base_ms: 3_600_000,
            increment_ms: 30_000,
        }],
        ..ScriptOptions::default()
    }
}

#[test]
fn a_press_adds_its_periods_increment_and_the_next_periods_time() {
    let options = london_time_control();
    assert_eq!(options.added_by_press(1), 0);
    assert_eq!(options.added_by_press(40), 3_600_000);
    assert_eq!(options.added_by_press(41), 30_000);
    assert_eq!(options.added_by_press(200), 30_000);
    // 40 moves, 20 moves, then the rest; 30 s a move from move 1.
    let three = ScriptOptions {
        increment_ms: 30_000,
        later_periods: vec![
            LaterPeriod {
                moves: 20,
                base_ms: 3_000_000,
                increment_ms: 30_000,
            },
            LaterPeriod {
                moves: 0,
                base_ms: 900_000,
                increment_ms: 30_000,
            },
        ],
        ..london_time_control()
    };
    assert_eq!(three.added_by_press(40), 3_030_000);
    assert_eq!(three.added_by_press(59), 30_000);
    assert_eq!(three.added_by_press(60), 930_000);
    assert_eq!(three.added_by_press(61), 30_000);
    assert_eq!(ScriptOptions::default().added_by_press(7), 0);
}

/// The plies whose score clock gained more than the time control adds (an arbiter's
/// correction, a clock set by hand, a recording's glitch): no thinking time explains them.
fn plies_the_time_control_cannot_explain(game: &PgnGame, options: &ScriptOptions) -> Vec<u32> {
    let mut clocks = [options.initial_clock_ms; 2];
    let mut own_moves = [0u32; 2];
    let mut unexplained = Vec::new();
    for (i, mv) in game.moves.iter().enumerate() {
        let side = i % 2;
        own_moves[side] += 1;
        let added = options.added_by_press(own_moves[side]);
        // Without a time in the score the simulator takes its default thinking time.
        let after = mv.clock_ms.unwrap_or_else(|| {
            clocks[side]
                .saturating_sub(options.default_think_ms)
                .saturating_add(added)
        });
        if after > clocks[side] + added {
            unexplained.push(i as u32 + 1);
        }
        clocks[side] = after;
    }
    unexplained
}

/// The scores' own clock times, played on the time control they were recorded under: the clock
/// differs from what the time control predicts only where the score's own times do, past the
/// second period's start too.
#[test]
fn london_games_on_their_time_control_show_the_clock_the_time_control_predicts() {
    let games = read_games(include_str!("../../../data/london-classic-2016.pgn")).expect("reads");
    let options = london_time_control();
    for (i, game) in games.iter().enumerate() {
        let folded = play(game, &options);
        assert!(folded.game.is_over(), "game {}", i + 1);
        let clock_alerts: Vec<u32> = folded
            .alerts()
            .into_iter()
            .filter(|(kind, _)| kind == "clock_mismatch")
            .map(|(_, ply)| ply)
            .collect();
        // A gain within the clock check's tolerance raises nothing.
        let unexplained = plies_the_time_control_cannot_explain(game, &options);
        assert!(
            clock_alerts.iter().all(|ply| unexplained.contains(ply)),
            "game {}: clock alerts at {clock_alerts:?}, the score's times unexplained at \
             {unexplained:?}",
            i + 1
        );
    }
}

#[test]
fn a_press_without_a_move_is_in_doubt_then_an_illegal_move_of_its_ply() {
    for clock in CLOCKS {
        for ply in [1, 2, 7, 8, 16] {
            let folded = played_with(vec![Incident::PressWithoutMove { ply }], clock);
            let doubts = folded.of(|k| matches!(k, Kind::PressInDoubt(_)));
            let [(Kind::PressInDoubt(doubt), _)] = doubts[..] else {
                panic!("ply {ply}: {doubts:?}");
            };
            assert_eq!((doubt.ply, doubt.without_move), (ply, true));
            let settled = folded.of(|k| matches!(k, Kind::PressSettled(_)));
            let [(Kind::PressSettled(settled), completed)] = settled[..] else {
                panic!("ply {ply}: {settled:?}");
            };
            assert_eq!(settled.settlement(), PressSettlement::IllegalMove);
            assert_eq!(completed, ply as usize - 1);
            let illegal = folded.of(|k| matches!(k, Kind::IllegalMove(_)));
            let [(Kind::IllegalMove(illegal), _)] = illegal[..] else {
                panic!("ply {ply}: {illegal:?}");
            };
            assert_eq!(illegal.ply, ply);
            let mover = if ply % 2 == 1 { "white" } else { "black" };
            assert_eq!(illegal.offender, mover);
            // Settled by the press that completes the ply: the illegal move, then the move.
            let kinds: Vec<&Kind> = folded
                .events
                .iter()
                .filter_map(|(e, _)| e.kind.as_ref())
                .collect();
            let at = kinds
                .iter()
                .position(|k| matches!(k, Kind::PressSettled(_)))
                .expect("settled");
            assert!(matches!(kinds[at + 1], Kind::IllegalMove(_)), "{kinds:?}");
            assert!(
                matches!(kinds[at + 2], Kind::MoveCompleted(m) if m.ply == ply),
                "{kinds:?}"
            );
        }
    }
}

#[test]
fn a_misplaced_piece_left_past_the_quiet_period_is_an_irregularity_until_put_back() {
    for clock in CLOCKS {
        // Pawn, knight, bishop, king (castling), rook, a capture by each side.
        for ply in [1, 3, 5, 7, 9, 11, 14, 16] {
            let folded = played_with(
                vec![Incident::IrregularPlacement { ply, for_ms: 8_000 }],
                clock,
            );
            let observed = folded.of(|k| matches!(k, Kind::Irregularity(_)));
            let [(Kind::Irregularity(irregular), _)] = observed[..] else {
                panic!("ply {ply}: {observed:?}");
            };
            assert_eq!(irregular.ply, ply);
            assert!(
                irregular.cause.starts_with("no legal continuation"),
                "{irregular:?}"
            );
            let cleared = folded.of(|k| matches!(k, Kind::IrregularityCleared(_)));
            let [(Kind::IrregularityCleared(cleared), completed)] = cleared[..] else {
                panic!("ply {ply}: {cleared:?}");
            };
            // Cleared when the piece is back, before the move.
            assert_eq!((cleared.ply, completed), (ply, ply as usize - 1));
        }
    }
}

#[test]
fn a_misplacement_within_the_quiet_period_is_no_irregularity() {
    for for_ms in [1_000, 5_000] {
        let folded = played_with(
            vec![Incident::IrregularPlacement { ply: 4, for_ms }],
            CLOCKS[0],
        );
        assert!(folded.of(|k| matches!(k, Kind::Irregularity(_))).is_empty());
    }
    played_with(
        vec![Incident::IrregularPlacement {
            ply: 4,
            for_ms: 6_000,
        }],
        CLOCKS[0],
    );
}

#[test]
fn a_board_offline_changes_its_status_twice_before_its_ply() {
    for ply in [1, 6, 16] {
        let folded = played_with(
            vec![Incident::BoardOffline {
                ply,
                for_ms: 20_000,
            }],
            CLOCKS[0],
        );
        let changes: Vec<(i32, usize)> = folded
            .of(|k| matches!(k, Kind::BoardStatus(_)))
            .into_iter()
            .filter_map(|(k, completed)| match k {
                Kind::BoardStatus(s) => Some((s.state, completed)),
                _ => None,
            })
            .collect();
        let before = ply as usize - 1;
        assert_eq!(
            changes,
            [
                (DeviceState::Disconnected as i32, before),
                (DeviceState::Connected as i32, before)
            ]
        );
    }
}

#[test]
fn a_low_battery_is_reported_once_at_its_ply() {
    for (percent, low) in [(15, true), (20, true), (21, false)] {
        let folded = played_with(vec![Incident::BatteryLow { ply: 5, percent }], CLOCKS[0]);
        let changes: Vec<(bool, Option<u32>, usize)> = folded
            .of(|k| matches!(k, Kind::BoardStatus(_)))
            .into_iter()
            .filter_map(|(k, completed)| match k {
                Kind::BoardStatus(s) => Some((s.battery_low, s.battery_percent, completed)),
                _ => None,
            })
            .collect();
        if low {
            assert_eq!(changes, [(true, Some(percent), 4)]);
        } else {
            assert!(changes.is_empty(), "{changes:?}");
        }
    }
}

#[test]
fn lost_observations_are_recorded_missing_and_the_move_is_still_seen() {
    // A quiet move (2 hand observations), a capture (3), castling (4).
    for (ply, count) in [(1, 1), (3, 2), (8, 3), (7, 4), (16, 4)] {
        let folded = played_with(vec![Incident::LostObservations { ply, count }], CLOCKS[0]);
        let missing = folded.of(|k| matches!(k, Kind::ObservationsMissing(_)));
        let [(Kind::ObservationsMissing(m), completed)] = missing[..] else {
            panic!("ply {ply}: {missing:?}");
        };
        assert_eq!(m.last_device_seq - m.first_device_seq + 1, u64::from(count));
        assert_eq!(completed, ply as usize - 1);
    }
}

#[test]
fn every_kind_in_one_game_raises_each_alert_once() {
    let incidents = vec![
        Incident::BatteryLow {
            ply: 2,
            percent: 12,
        },
        Incident::PressWithoutMove { ply: 3 },
        Incident::IrregularPlacement {
            ply: 6,
            for_ms: 12_000,
        },
        Incident::TouchedPiece { ply: 7 },
        Incident::BoardOffline {
            ply: 9,
            for_ms: 30_000,
        },
        Incident::LostObservations { ply: 12, count: 2 },
        Incident::PressWithoutMove { ply: 14 },
    ];
    for clock in CLOCKS {
        played_with(incidents.clone(), clock);
    }
}

/// The first `plies` moves of `pgn`, with no result to signal.
fn opening(pgn: &PgnGame, plies: usize) -> PgnGame {
    let mut game = pgn.clone();
    game.moves.truncate(plies);
    game.result = "*".into();
    game
}

/// The alerts but the clock's: the London scores' clock times follow their own time control.
fn but_clock_alerts(folded: &Folded) -> Vec<(String, u32)> {
    let mut alerts: Vec<(String, u32)> = folded
        .alerts()
        .into_iter()
        .filter(|(kind, _)| kind != "clock_mismatch")
        .collect();
    alerts.sort();
    alerts
}

/// In the London games, on the first move of each kind (by piece, capture, castling, en
/// passant, promotion, side), every incident that depends on the move raises exactly what it
/// promises and the moves are the score's.
#[test]
fn london_moves_of_every_kind_take_the_incidents_that_depend_on_the_move() {
    let games = read_games(include_str!("../../../data/london-classic-2016.pgn")).expect("reads");
    let mut cases = 0;
    let mut kinds = std::collections::HashSet::new();
    for (n, pgn) in games.iter().enumerate() {
        let mut pos = pgn.start_position().expect("start position");
        for (i, m) in pgn.moves.iter().enumerate() {
            let mv = parse_san(&pos, &m.san).expect("legal");
            let kind = (
                mv.role(),
                mv.is_capture(),
                mv.is_castle(),
                mv.is_en_passant(),
                mv.is_promotion(),
                pos.turn(),
            );
            pos.play_unchecked(mv);
            if !kinds.insert(kind) {
                continue;
            }
            let ply = i as u32 + 1;
            let game = opening(pgn, i + 2);
            let baseline = but_clock_alerts(&play(&game, &ScriptOptions::default()));
            let mut incidents = vec![
                Incident::PressWithoutMove { ply },
                Incident::IrregularPlacement { ply, for_ms: 6_000 },
                Incident::TouchedPiece { ply },
            ];
            // The piece placed lost; all but the first lift of a capture or castling (or too many).
            incidents.extend([1, 3].map(|count| Incident::LostObservations { ply, count }));
            for incident in incidents {
                let options = ScriptOptions {
                    incidents: vec![incident],
                    ..ScriptOptions::default()
                };
                if script(&game, &options).is_err() {
                    // More observations lost than the move has; a touch before a capture.
                    assert!(
                        matches!(incident, Incident::LostObservations { count, .. } if count > 2)
                            || matches!(incident, Incident::TouchedPiece { .. } if mv.is_capture())
                    );
                    continue;
                }
                let folded = play(&game, &options);
                let what = format!("game {n}, {incident}, {}", m.san);
                assert_eq!(folded.ucis(), score_ucis(&game), "{what}");
                let mut promised = baseline.clone();
                promised.extend(expected(&[incident]));
                promised.sort();
                assert_eq!(but_clock_alerts(&folded), promised, "{what}");
                cases += 1;
            }
        }
    }
    assert!(cases > 80, "{cases}");
}

/// A mating move: the incidents before it raise what they promise, but those whose alerts need
/// what comes after a move (the next press, the touches weighed) are refused.
#[test]
fn a_mating_move_takes_the_incidents_that_need_nothing_after_it() {
    let pgn = read_games("[Result \"0-1\"]\n\n1. f3 e5 2. g4 Qh4# 0-1")
        .expect("reads")
        .remove(0);
    for incident in [
        Incident::BoardOffline {
            ply: 4,
            for_ms: 10_000,
        },
        Incident::BatteryLow { ply: 4, percent: 5 },
        Incident::LostObservations { ply: 4, count: 2 },
    ] {
        let folded = play(&pgn, &with(vec![incident], CLOCKS[0]));
        assert_eq!(folded.ucis(), score_ucis(&pgn), "{incident}");
        assert!(folded.game.is_over(), "{incident}");
        let mut alerts = folded.alerts();
        alerts.sort();
        assert_eq!(alerts, expected(&[incident]), "{incident}");
    }
    for incident in [
        Incident::PressWithoutMove { ply: 4 },
        Incident::IrregularPlacement {
            ply: 4,
            for_ms: 8_000,
        },
    ] {
        let result = script(&pgn, &with(vec![incident], CLOCKS[0]));
        assert!(
            matches!(result, Err(SimError::BadIncident { .. })),
            "{result:?}"
        );
    }
}

#[test]
fn specs_read_and_print_alike() {
    for spec in [
        "press-without-move@ply=7",
        "irregular-placement@ply=9:for=8000ms",
        "offline@ply=5:for=20000ms",
        "battery-low@ply=3:percent=15",
        "lost-observations@ply=11:count=2",
        "flag-fall@ply=30",
        "threefold-claim@ply=12",
    ] {
        let incident: Incident = spec.parse().expect(spec);
        assert_eq!(incident.to_string(), spec);
    }
    assert_eq!(
        "irregular-placement@ply=9:for=8s".parse(),
        Ok(Incident::IrregularPlacement {
            ply: 9,
            for_ms: 8_000
        })
    );
    assert_eq!(
        "lost-observations@ply=4".parse(),
        Ok(Incident::LostObservations { ply: 4, count: 2 })
    );
    for bad in [
        "juggling@ply=3",
        "press-without-move",
        "press-without-move@ply=x",
        "press-without-move@ply=3:for=2s",
        "offline@ply=3:for=soon",
        "battery-low@ply=3:percent=5:percent=6",
        "flag-fall@ply=3:for=2s",
    ] {
        assert!(bad.parse::<Incident>().is_err(), "{bad}");
    }
}

#[test]
fn incidents_the_game_cannot_have_are_refused() {
    let pgn = berlin();
    for incident in [
        Incident::PressWithoutMove { ply: 17 },
        Incident::PressWithoutMove { ply: 0 },
        Incident::BatteryLow {
            ply: 3,
            percent: 101,
        },
        // 1. e4 is seen in two observations before the whole placement.
        Incident::LostObservations { ply: 1, count: 3 },
    ] {
        let result = script(&pgn, &with(vec![incident], CLOCKS[0]));
        assert!(
            matches!(result, Err(SimError::BadIncident { .. })),
            "{incident}: {result:?}"
        );
    }
    // A battery once low stays low: a second report would raise nothing.
    let twice = vec![
        Incident::BatteryLow {
            ply: 3,
            percent: 15,
        },
        Incident::BatteryLow {
            ply: 9,
            percent: 10,
        },
    ];
    let result = script(&pgn, &with(twice, CLOCKS[0]));
    assert!(
        matches!(result, Err(SimError::BadIncident { .. })),
        "{result:?}"
    );
    // Nothing happens on the board after the game ended, nor does it end twice.
    for after_the_end in [
        vec![
            Incident::FlagFall { ply: 5 },
            Incident::PressWithoutMove { ply: 7 },
        ],
        vec![
            Incident::BatteryLow {
                ply: 6,
                percent: 15,
            },
            Incident::ThreefoldClaim { ply: 6 },
        ],
        vec![
            Incident::ThreefoldClaim { ply: 6 },
            Incident::FlagFall { ply: 6 },
        ],
    ] {
        let result = script(&pgn, &with(after_the_end.clone(), CLOCKS[0]));
        assert!(
            matches!(&result, Err(SimError::BadIncident { reason, .. }) if reason.contains("the game ends at")),
            "{after_the_end:?}: {result:?}"
        );
    }
    // Checked by value: a copy of the one incident that ends the game is that incident.
    let flag = Incident::FlagFall { ply: 5 };
    assert_eq!(flag.check(16, &[flag]), Ok(()));
    assert!(flag.check(16, &[flag, flag]).is_err());
}

/// The game as the incident left it: the score's moves before its ply, then `extra`.
fn ended_at(folded: &Folded, ply: u32, extra: usize) {
    let score = score_ucis(&berlin());
    let moves = folded.ucis();
    assert_eq!(moves.len(), ply as usize - 1 + extra, "{moves:?}");
    assert_eq!(moves[..ply as usize - 1], score[..ply as usize - 1]);
}

#[test]
fn a_flag_fall_ends_the_game_as_the_laws_say_at_its_ply() {
    for clock in CLOCKS {
        for ply in [1, 2, 9, 16] {
            let options = ScriptOptions {
                increment_ms: 30_000,
                ..with(vec![Incident::FlagFall { ply }], clock)
            };
            let folded = play(&berlin(), &options);
            ended_at(&folded, ply, 0);
            assert!(folded.game.is_over(), "ply {ply}");
            // The flagged player loses: the opponent has mating material.
            let winner = if ply % 2 == 1 { "0-1" } else { "1-0" };
            assert_eq!(folded.game.result_token(), winner, "ply {ply}");
            let mut alerts = folded.alerts();
            alerts.retain(|(kind, _)| kind != "setup_mismatch");
            assert_eq!(
                alerts,
                expected(&[Incident::FlagFall { ply }]),
                "ply {ply} {clock:?}"
            );
        }
    }
}

#[test]
fn a_threefold_claim_repeats_the_position_and_waits_for_the_arbiter() {
    for clock in CLOCKS {
        for ply in [1, 4, 9, 15] {
            let options = ScriptOptions {
                increment_ms: 30_000,
                ..with(vec![Incident::ThreefoldClaim { ply }], clock)
            };
            let folded = play(&berlin(), &options);
            // Seven plies out and back, each completed by a press; the claimant's clock stopped.
            ended_at(&folded, ply, 7);
            assert!(!folded.game.is_over(), "ply {ply}: waits for the ruling");
            let moves = folded.ucis();
            let repeated = &moves[ply as usize - 1..];
            assert_eq!(repeated[..3], repeated[4..], "ply {ply}: {repeated:?}");
            // No clock was out of step with the time control (increments included).
            let mut alerts = folded.alerts();
            alerts.retain(|(kind, _)| kind != "setup_mismatch");
            assert_eq!(
                alerts,
                expected(&[Incident::ThreefoldClaim { ply }]),
                "ply {ply} {clock:?}"
            );
        }
    }
}

#[test]
fn a_piece_touched_after_the_board_was_away_is_a_touch_move_alert_only() {
    let pgn = read_games("[Result \"*\"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bb5 Nf6 4. d3 *\n")
        .expect("reads")
        .remove(0);
    for incidents in [
        vec![Incident::TouchedPiece { ply: 6 }],
        vec![
            Incident::BoardOffline {
                ply: 5,
                for_ms: 30_000,
            },
            Incident::TouchedPiece { ply: 6 },
        ],
    ] {
        let folded = play(&pgn, &with(incidents.clone(), CLOCKS[0]));
        assert_eq!(folded.ucis(), score_ucis(&pgn), "{incidents:?}");
        let mut alerts = folded.alerts();
        alerts.sort();
        let mut promised = play(&pgn, &with(Vec::new(), CLOCKS[0])).alerts();
        promised.extend(expected(&incidents));
        promised.sort();
        assert_eq!(alerts, promised, "{incidents:?}");
    }
    // Not on the start position shown again (a board set up for a new game reads so).
    let shuffle = read_games("[Result \"*\"]\n\n1. Nf3 Nf6 2. Ng1 Ng8 3. Nf3 *\n")
        .expect("reads")
        .remove(0);
    let options = with(vec![Incident::TouchedPiece { ply: 5 }], CLOCKS[0]);
    assert!(script(&shuffle, &options).is_err());
}

//! Property: a game's log, read back from its stored bytes and folded from the start, gives
//! exactly the live state, whatever the boards and the arbiters did; and every observation's
//! decision can be made again from the log alone, with the same result (what appeals rely on).
//! Oracle: the completed moves are the source game's whenever the board recovered from what was
//! done to it (no noise at all, or only stray touches, placements, repeats and status reports
//! that the board's next true report undoes).
//! `REPLAY_DEBUG=1` prints each input of a case and the events decided on it.

use boardcast_game::device::{
    ClockReading, DeviceState, DeviceStatus, Observation, PieceLifted, PiecePlaced, SourceKind,
    observation::Kind,
};
use boardcast_game::events::{
    AdjustClocks, Annotation, ArbiterAction, ClaimRuling, EnterMove, GameEventRecord, GameStarted,
    PenaltyDecision, Player, RestorePosition, SideAction, TimeControl, TimePeriod,
    arbiter_action::Action,
};
use boardcast_game::{Game, NewEvent, ObservationOutcome};
use boardcast_rules::pgn::{PgnGame, PgnMove};
use boardcast_sim::{ScriptOptions, script};
use proptest::prelude::*;
use prost::Message as _;
use shakmaty::{Chess, Position, san::SanPlus};

/// A small deterministic generator, so that a failing case is reproduced from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn random_game(rng: &mut Rng, plies: usize) -> PgnGame {
    let mut pos = Chess::default();
    let mut moves = Vec::new();
    for _ in 0..plies {
        let legal = pos.legal_moves();
        if legal.is_empty() {
            break;
        }
        let mv = legal[rng.below(legal.len() as u64) as usize];
        moves.push(PgnMove {
            san: SanPlus::from_move_and_play_unchecked(&mut pos, mv).to_string(),
            clock_ms: None,
            elapsed_ms: None,
            comment: None,
        });
    }
    PgnGame {
        tags: Vec::new(),
        moves,
        result: "*".to_owned(),
    }
}

fn info(edition: &str) -> GameStarted {
    let player = |name: &str| {
        Some(Player {
            name: name.into(),
            ..Default::default()
        })
    };
    GameStarted {
        tournament_id: "prop".into(),
        round: 1,
        board_number: 1,
        board_id: "b1".into(),
        white: player("W"),
        black: player("B"),
        time_control: Some(TimeControl {
            periods: vec![
                TimePeriod {
                    moves: 40,
                    base_ms: 5_400_000,
                    increment_ms: 30_000,
                    ..Default::default()
                },
                TimePeriod {
                    moves: 0,
                    base_ms: 1_800_000,
                    increment_ms: 30_000,
                    ..Default::default()
                },
            ],
        }),
        edition: edition.into(),
        ..Default::default()
    }
}

/// Something that happens to the game: what the board reports, or what an arbiter does.
#[derive(Debug)]
enum Input {
    Board(Kind),
    Arbiter(Action),
    /// The board's observations `first..=last` never arrived (noticed at the next one).
    Missing {
        first: u64,
        last: u64,
    },
}

/// A disturbance a real board or hall produces: stray lifts and placements, a reading of a
/// random placement, clock readings with flags, status changes, arbiter actions.
fn noise(rng: &mut Rng, game: &Game) -> Input {
    let square = |rng: &mut Rng| rng.below(64) as u32;
    match rng.below(9) {
        0 => Input::Board(Kind::Lifted(PieceLifted {
            square: square(rng),
            ..Default::default()
        })),
        1 => Input::Board(Kind::Placed(PiecePlaced {
            square: square(rng),
            piece: 1 + rng.below(12) as i32,
        })),
        2 => {
            // The current position with one piece moved anywhere: often irregular, sometimes legal.
            let mut board = game.position().board().clone();
            let from = shakmaty::Square::new(square(rng));
            let to = shakmaty::Square::new(square(rng));
            if let Some(piece) = board.remove_piece_at(from) {
                board.set_piece_at(to, piece);
            }
            Input::Board(Kind::Placement(boardcast_game::device::BoardPlacement {
                placement: board.to_string(),
            }))
        }
        3 => Input::Board(Kind::Clock(ClockReading {
            white_remaining_ms: rng.below(5_400_000),
            black_remaining_ms: rng.below(5_400_000),
            running: 1 + rng.below(3) as i32,
            white_flag: rng.below(8) == 0,
            black_flag: rng.below(8) == 0,
            // Unnamed, left or right: the game reads each by the sides it established.
            white_display: rng.below(3) as i32,
        })),
        4 => Input::Board(Kind::Status(DeviceStatus {
            state: 1 + rng.below(3) as i32,
            battery_percent: Some(rng.below(101) as u32),
            ..Default::default()
        })),
        5 => Input::Arbiter(Action::Clocks(AdjustClocks {
            white_added_ms: 120_000,
            reason: "illegal move by Black".into(),
            ..Default::default()
        })),
        6 => {
            let confirmed = rng.below(2) == 0;
            match game.illegal_moves().last() {
                Some(illegal) => Input::Arbiter(Action::Penalty(PenaltyDecision {
                    illegal_move_game_seq: illegal.game_seq,
                    confirmed,
                    note: String::new(),
                })),
                None => Input::Arbiter(Action::Annotation(Annotation {
                    text: "nothing to decide".into(),
                })),
            }
        }
        7 => match rng.below(5) {
            2 => Input::Arbiter(Action::Claim(ClaimRuling {
                claimant: if game.position().turn().is_white() {
                    "white".into()
                } else {
                    "black".into()
                },
                kind: 1 + rng.below(2) as i32,
                upheld: rng.below(3) == 0,
                ..Default::default()
            })),
            0 => Input::Arbiter(Action::Restore(RestorePosition {
                ply: rng.below(game.completed_moves().len() as u64 + 1) as u32,
                reason: "illegal move found later".into(),
                white_remaining_ms: (rng.below(2) == 0).then_some(600_000),
                black_remaining_ms: None,
            })),
            1 => Input::Arbiter(Action::DrawOffer(SideAction {
                side: "white".into(),
                ..Default::default()
            })),
            _ => {
                let legal = game.position().legal_moves();
                match legal.first() {
                    Some(mv) => Input::Arbiter(Action::Move(EnterMove {
                        san: shakmaty::san::San::from_move(game.position(), *mv).to_string(),
                    })),
                    None => Input::Arbiter(Action::Annotation(Annotation {
                        text: "no move".into(),
                    })),
                }
            }
        },
        _ => Input::Board(Kind::Status(DeviceStatus {
            state: DeviceState::Disconnected as i32,
            detail: "port closed".into(),
            ..Default::default()
        })),
    }
}

/// Decides, records and applies; returns the records and the decision's events.
fn step(game: &mut Game, log: &mut Vec<Vec<u8>>, events: Vec<NewEvent>, at: i64) {
    let records = Game::record(Some(game), game.game_id(), events, at);
    for record in records {
        game.apply(&record).expect("a game applies its own records");
        log.push(record.encode_to_vec());
    }
}

fn decide(game: &Game, input: &Input, obs: &Observation) -> Option<Vec<NewEvent>> {
    match input {
        Input::Board(_) => match game.decide_observation(obs) {
            Ok(ObservationOutcome::Events(events)) => Some(events),
            Ok(ObservationOutcome::Ignored(_)) | Err(_) => None,
        },
        Input::Missing { first, last } => {
            Some(game.decide_missing_observations(*first, *last, obs)).filter(|e| !e.is_empty())
        }
        Input::Arbiter(action) => game
            .decide_arbiter(
                &ArbiterAction {
                    action: Some(action.clone()),
                    ..Default::default()
                },
                "IA Arbiter",
                "",
            )
            .ok(),
    }
}

fn fold(log: &[Vec<u8>]) -> Game {
    let records: Vec<GameEventRecord> = log
        .iter()
        .map(|bytes| GameEventRecord::decode(bytes.as_slice()).expect("stored records decode"))
        .collect();
    let mut game = Game::from_first_record(&records[0]).expect("first record");
    for record in &records[1..] {
        game.apply(record).expect("the log folds");
    }
    game
}

fn assert_same(replayed: &Game, live: &Game) {
    assert_eq!(replayed.to_state(), live.to_state());
    assert_eq!(replayed.illegal_moves(), live.illegal_moves());
    assert_eq!(replayed.illegal_tally(), live.illegal_tally());
    assert_eq!(replayed.irregular_placement(), live.irregular_placement());
    assert_eq!(replayed.board_status(), live.board_status());
    assert_eq!(replayed.arbiter_notes(), live.arbiter_notes());
    assert_eq!(replayed.draw_offers(), live.draw_offers());
    assert_eq!(replayed.last_device_seq(), live.last_device_seq());
    assert_eq!(replayed.provisional(), live.provisional());
    assert_eq!(replayed.completed_moves(), live.completed_moves());
}

/// What a case does to the board besides playing the game.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Disturb {
    /// Any noise (board, clock, arbiters), observations lost or numbered again.
    Everything,
    /// Only what the board's next true report undoes before the clock is pressed: stray
    /// touches, placements and status reports, never just before a press.
    Recoverable,
}

/// One case: a random game of `plies` plies played on the board with `noise_per_mille`
/// disturbances per scripted observation.
fn check_replay(seed: u64, plies: usize, noise_per_mille: u64, edition: &str) {
    check_replay_with(seed, plies, noise_per_mille, edition, Disturb::Everything);
}

fn check_replay_with(
    seed: u64,
    plies: usize,
    noise_per_mille: u64,
    edition: &str,
    disturb: Disturb,
) {
    let mut rng = Rng(seed);
    let pgn = random_game(&mut rng, plies);
    let steps = script(&pgn, &ScriptOptions::default()).expect("a legal game scripts");

    let (id, started) = Game::decide_start(&info(edition), "operator", "").expect("valid game");
    let first = Game::record(None, &id, vec![started], 0);
    let mut live = Game::from_first_record(&first[0]).expect("first record");
    let mut log = vec![first[0].encode_to_vec()];
    // (observation or action, the log length before its decision), to decide again later.
    let mut decided: Vec<(Input, Observation, usize, usize)> = Vec::new();
    let mut device_seq = 0u64;
    // Whether what was done to the game leaves its moves the source's: arbiters' actions, clock
    // readings out of turn and lost observations can change them for good.
    let mut recoverable = true;
    for scripted in steps {
        let before_press = matches!(scripted.kind, Kind::Clock(_));
        let mut inputs = vec![Input::Board(scripted.kind)];
        if rng.below(1000) < noise_per_mille {
            let disturbance = noise(&mut rng, &live);
            let undone = matches!(
                disturbance,
                Input::Board(
                    Kind::Lifted(_) | Kind::Placed(_) | Kind::Placement(_) | Kind::Status(_)
                )
            );
            if (undone && !before_press) || disturb == Disturb::Everything {
                recoverable &= undone && !before_press;
                inputs.insert(0, disturbance);
            }
        }
        let mut with_gaps = Vec::new();
        for input in inputs {
            let mut gap = None;
            let obs = match &input {
                Input::Board(kind) => {
                    // Now and then a re-sent older observation: a duplicate (or one that
                    // arrives after its gap was recorded); now and then some never arrive.
                    // (A re-sent number with the next observation's content drops that
                    // observation: a loss, so only when everything goes.)
                    let seq =
                        if disturb == Disturb::Everything && device_seq > 3 && rng.below(50) == 0 {
                            recoverable = false;
                            device_seq - rng.below(3)
                        } else {
                            if disturb == Disturb::Everything && rng.below(40) == 0 {
                                let lost = 1 + rng.below(3);
                                gap = Some(Input::Missing {
                                    first: device_seq + 1,
                                    last: device_seq + lost,
                                });
                                recoverable = false;
                                device_seq += lost;
                            }
                            device_seq += 1;
                            device_seq
                        };
                    Observation {
                        board_id: "b1".into(),
                        device_seq: seq,
                        device_time_unix_ms: scripted.at_ms as i64,
                        receive_time_unix_ms: scripted.at_ms as i64,
                        source: SourceKind::Simulator as i32,
                        kind: Some(kind.clone()),
                    }
                }
                Input::Arbiter(_) | Input::Missing { .. } => Observation::default(),
            };
            with_gaps.extend(gap.map(|gap| (gap, obs.clone())));
            with_gaps.push((input, obs));
        }
        for (input, obs) in with_gaps {
            let before = log.len();
            if std::env::var_os("REPLAY_DEBUG").is_some() {
                match &input {
                    Input::Board(k) => eprintln!("board {} {:?}", obs.device_seq, k),
                    Input::Arbiter(a) => eprintln!("arbiter {a:?}"),
                    Input::Missing { first, last } => eprintln!("missing {first}..={last}"),
                }
            }
            if let Some(events) = decide(&live, &input, &obs) {
                if std::env::var_os("REPLAY_DEBUG").is_some() {
                    for e in &events {
                        eprintln!("   -> {:?}", e.kind);
                    }
                }
                step(&mut live, &mut log, events, scripted.at_ms as i64);
            }
            decided.push((input, obs, before, log.len()));
        }
    }

    let replayed = fold(&log);
    assert_same(&replayed, &live);

    if recoverable {
        // The source's moves, up to where the rules ended the game (an automatic draw, a dead
        // position) and all of them otherwise.
        let completed: Vec<&str> = live
            .completed_moves()
            .iter()
            .map(|m| m.event.san.as_str())
            .collect();
        let source: Vec<&str> = pgn.moves.iter().map(|m| m.san.as_str()).collect();
        let strip = |san: &str| san.trim_end_matches(['+', '#']).to_owned();
        let (completed, source): (Vec<String>, Vec<String>) = (
            completed.iter().map(|s| strip(s)).collect(),
            source.iter().map(|s| strip(s)).collect(),
        );
        assert!(
            source.starts_with(&completed),
            "seed {seed}, {plies} plies, noise {noise_per_mille}, {edition}: completed {completed:?}, source {source:?}"
        );
        assert!(
            live.is_over() || completed.len() == source.len(),
            "seed {seed}, {plies} plies, noise {noise_per_mille}, {edition}: {} of the source's {} moves completed: {completed:?}",
            completed.len(),
            source.len()
        );
    }

    // Every decision again, on the game folded from the log up to it: the same events.
    let records: Vec<GameEventRecord> = log
        .iter()
        .map(|bytes| GameEventRecord::decode(bytes.as_slice()).expect("decodes"))
        .collect();
    let mut again = Game::from_first_record(&records[0]).expect("first record");
    let mut applied = 1;
    for (input, obs, before, after) in &decided {
        while applied < *before {
            again.apply(&records[applied]).expect("folds");
            applied += 1;
        }
        let events = decide(&again, input, obs).unwrap_or_default();
        let recorded: Vec<_> = records[*before..*after]
            .iter()
            .map(|r| Game::open_record(r).expect("opens"))
            .map(|e| (e.kind, e.provenance))
            .collect();
        let redecided: Vec<_> = events
            .into_iter()
            .map(|e| (Some(e.kind), Some(e.provenance)))
            .collect();
        assert_eq!(redecided, recorded);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn replaying_the_log_gives_the_live_state(
        seed in 1u64..u64::MAX,
        plies in 0usize..70,
        noise_per_mille in 0u64..150,
        edition in prop::sample::select(vec!["fide-2005", "fide-2009", "fide-2014", "fide-2018", "fide-2023"]),
    ) {
        check_replay(seed, plies, noise_per_mille, edition);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// The oracle on every case: without noise, and with only noise the board recovers from,
    /// the completed moves are the source game's.
    #[test]
    fn a_board_that_recovers_completes_the_source_moves(
        seed in 1u64..u64::MAX,
        plies in 0usize..70,
        noise_per_mille in prop::sample::select(vec![0u64, 50, 150]),
        edition in prop::sample::select(vec!["fide-2005", "fide-2018", "fide-2023"]),
    ) {
        check_replay_with(seed, plies, noise_per_mille, edition, Disturb::Recoverable);
    }
}

/// Cases the property found, kept.
#[test]
fn found_cases_replay() {
    // An observation numbered again (dropped as a duplicate) is not a board that recovered.
    check_replay(18005020340547420883, 2, 33, "fide-2014");
    check_replay(39556711202266032, 9, 131, "fide-2005");
    check_replay(215365902884153712, 33, 114, "fide-2005");
}

/// Cases of the recovering board's property, kept.
#[test]
fn found_recoverable_cases_complete_the_source() {
    check_replay_with(
        1274220088858103106,
        61,
        150,
        "fide-2023",
        Disturb::Recoverable,
    );
}

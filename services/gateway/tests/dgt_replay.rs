//! Simulated DGT byte streams through the gateway's DGT session and capture replay (the game
//! aggregate, as the game service runs it): every game of a real tournament comes back exactly,
//! with the disturbances the simulator recorded, whichever side White's clock stands on.

use boardcast_dgt::{Decoder, Message, encode_message};
use boardcast_game::Game;
use boardcast_game::events::{
    ClockSidesBasis, GameEvent, PressSettlement, SetupAspect, Source, game_event::Kind as Event,
};
use boardcast_game::replay::{ReplaySetup, replay_observations};
use boardcast_gateway::dgt::{
    ClockSide, DgtSession, DgtSessionConfig, REPLAY_EPOCH_MS, read_capture,
};
use boardcast_rules::pgn::{PgnGame, parse_san, read_games, write_game};
use boardcast_schema::device::v1::{ClockRun, observation::Kind};
use boardcast_sim::dgt::{DgtSimOptions, Disturbance, Disturbances, Expected, simulate};
use shakmaty::{CastlingMode, Chess, Position, uci::UciMove};

const LONDON: &str = include_str!("../../../data/london-classic-2016.pgn");

fn source_ucis(game: &PgnGame) -> Vec<String> {
    let mut pos = Chess::default();
    game.moves
        .iter()
        .map(|m| {
            let mv = parse_san(&pos, &m.san).expect("legal source move");
            pos.play_unchecked(mv);
            UciMove::from_move(mv, CastlingMode::Standard).to_string()
        })
        .collect()
}

fn ucis(game: &PgnGame) -> Vec<String> {
    source_ucis(game)
}

/// A capture replayed: the game, its log and what could not be used.
struct Replay {
    game: Game,
    events: Vec<GameEvent>,
    diagnostics: Vec<String>,
}

/// A capture replayed as the game service folds it, with the gateway set up as `config`.
fn replay(bytes: &[u8], config: DgtSessionConfig) -> Replay {
    let capture = read_capture(bytes, config).expect("the capture reads");
    let setup =
        ReplaySetup::for_observations(&capture.observations, "board-1", None, REPLAY_EPOCH_MS);
    let replay = replay_observations(&capture.observations, &setup).expect("replays");
    let mut diagnostics = capture.diagnostics;
    diagnostics.extend(replay.refused);
    Replay {
        game: replay.game,
        events: replay.events,
        diagnostics,
    }
}

/// A capture as `replay-dgt --pgn` prints it: the game with `tags`, and the notes.
fn replay_capture_to_pgn(
    bytes: &[u8],
    tags: &[(String, String)],
) -> Result<(PgnGame, Vec<String>), String> {
    let capture = read_capture(bytes, DgtSessionConfig::default()).map_err(|e| e.to_string())?;
    let setup =
        ReplaySetup::for_observations(&capture.observations, "capture", None, REPLAY_EPOCH_MS);
    let replay = replay_observations(&capture.observations, &setup).map_err(|e| e.to_string())?;
    Ok((replay.pgn_with_tags(tags), replay.notes))
}

/// What the log says, in the simulator's terms; anything the simulator never causes is
/// returned as text so that the comparison fails with it. Presses in doubt must all be settled.
fn reported(events: &[GameEvent]) -> Result<Vec<Expected>, String> {
    let mut reported = Vec::new();
    let mut open_doubts = Vec::new();
    for event in events {
        let side_is_white = |side: &str| side == "white";
        match event.kind.as_ref() {
            Some(Event::MoveProvisional(p)) if !p.replaces_uci.is_empty() => {
                reported.push(Expected::Revised {
                    ply: p.ply,
                    from: p.replaces_uci.clone(),
                    to: p.uci.clone(),
                })
            }
            Some(Event::Reconstructed(r)) => reported.push(Expected::Reconstructed {
                ply: r.first_ply,
                moves: r.uci.clone(),
            }),
            Some(Event::IllegalMove(m)) if m.kind == "clock pressed without a move" => reported
                .push(Expected::PressWithoutMove {
                    ply: m.ply,
                    white: side_is_white(&m.offender),
                }),
            Some(Event::IllegalMove(m)) => reported.push(Expected::IrregularityAtPress {
                ply: m.ply,
                white: side_is_white(&m.offender),
            }),
            Some(Event::IrregularityCleared(c)) => {
                reported.push(Expected::IrregularityCleared { ply: c.ply })
            }
            // The board's irregular placement at a press: the illegal move it turns out to be
            // is what the simulator expects.
            Some(Event::Irregularity(i)) if i.cause == "clock pressed" => {}
            Some(Event::PressInDoubt(_)) => open_doubts.push(event.game_seq),
            Some(Event::PressSettled(s)) => open_doubts.retain(|seq| *seq != s.doubt_game_seq),
            // Clock alerts follow from the simulated timing (a disturbance can make a press later
            // than the score's clock time says); a set-up mismatch is checked where expected.
            Some(Event::SetupMismatch(m)) if m.aspect() == SetupAspect::ClockSides => {}
            Some(
                Event::Irregularity(_) | Event::SetupMismatch(_) | Event::ObservationsMissing(_),
            ) => {
                return Err(format!(
                    "record {}: unexpected {:?}",
                    event.game_seq, event.kind
                ));
            }
            _ => {}
        }
    }
    if !open_doubts.is_empty() {
        return Err(format!("presses left in doubt: records {open_doubts:?}"));
    }
    Ok(reported)
}

/// Every London game simulated with `options` (seeded per game) comes back from a replay with
/// the gateway at its defaults: the source moves and result, and what the record expects. Ghost
/// reads leave nothing in the log, so they are not compared.
fn london_replays_with(base: DgtSimOptions, what: &str) -> Vec<Replay> {
    let games = read_games(LONDON).expect("london file reads");
    assert_eq!(games.len(), 45);
    // Another base seed plays the tournament with other disturbances (for soak runs).
    let base_seed: u64 = std::env::var("BOARDCAST_SIM_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    let mut replays = Vec::new();
    for (number, game) in games.iter().enumerate() {
        let options = DgtSimOptions {
            seed: base_seed + number as u64,
            ..base.clone()
        };
        let sim = simulate(game, &options).expect("simulates");
        let record = &sim.record;
        let replay = replay(&sim.capture_bytes(), DgtSessionConfig::default());
        let context = format!("{what}, game {number} ({}):\n{record}", game.players());
        let pgn = replay.game.to_pgn().game;
        assert_eq!(ucis(&pgn), source_ucis(game), "{context}");
        assert_eq!(pgn.result, game.result, "{context}");
        assert!(replay.diagnostics.is_empty(), "{:?}", replay.diagnostics);

        let mut reported = reported(&replay.events).unwrap_or_else(|e| panic!("{e}\n{context}"));
        let mut expected: Vec<Expected> = record
            .expected()
            .into_iter()
            .filter(|e| !matches!(e, Expected::GhostIgnored { .. }))
            .collect();
        reported.sort();
        expected.sort();
        assert_eq!(reported, expected, "{context}");

        // Clock times come from the press frames; moves played while the board was away have
        // no frame of their own.
        let gapped: Vec<u32> = record
            .plies
            .iter()
            .filter(|p| {
                p.disturbances
                    .iter()
                    .any(|d| matches!(d, Disturbance::Disconnected { .. }))
            })
            .flat_map(|p| [p.ply, p.ply + 1])
            .collect();
        for (i, (got, source)) in pgn.moves.iter().zip(&game.moves).enumerate() {
            let ply = i as u32 + 1;
            if gapped.contains(&ply)
                || source.clock_ms.is_none()
                || (record.ended_on_board && i + 1 == game.moves.len())
            {
                continue;
            }
            assert_eq!(got.clock_ms, source.clock_ms, "ply {ply}\n{context}");
        }
        replays.push(replay);
    }
    replays
}

#[test]
fn every_london_game_with_all_disturbances_replays_to_the_source_moves() {
    let replays = london_replays_with(
        DgtSimOptions {
            disturbances: Disturbances::all(),
            ..DgtSimOptions::default()
        },
        "White's clock on the left",
    );
    // Over the tournament every kind of expectation occurs at least once (ghosts leave none).
    let kinds: std::collections::HashSet<_> = replays
        .iter()
        .flat_map(|r| reported(&r.events).unwrap_or_default())
        .map(|e| std::mem::discriminant(&e))
        .collect();
    assert_eq!(kinds.len(), 5, "{kinds:?}");
}

/// Events of one kind in a replay's log.
fn count(replay: &Replay, matches: impl Fn(&Event) -> bool) -> usize {
    replay
        .events
        .iter()
        .filter(|e| e.kind.as_ref().is_some_and(&matches))
        .count()
}

/// Every completed move was completed by a press of its own (not a reconstruction, not a press
/// that completed two moves).
fn every_move_by_its_own_press(replay: &Replay) -> Result<(), String> {
    let mut presses = std::collections::HashSet::new();
    for event in &replay.events {
        if let Some(Event::MoveCompleted(m)) = &event.kind {
            let provenance = event.provenance.as_ref().ok_or("no provenance")?;
            // A mate or stalemate is completed by the move itself (no press follows it).
            let ends_on_board = provenance.source() == Source::BoardSensor
                && Some(m.ply as usize) == Some(replay.game.completed_moves().len())
                && (replay.game.position().is_checkmate() || replay.game.position().is_stalemate());
            if provenance.source() != Source::Clock && !ends_on_board {
                return Err(format!(
                    "ply {} completed by {:?}",
                    m.ply,
                    provenance.source()
                ));
            }
            let press = provenance.device_seqs.last().copied().unwrap_or_default();
            if !presses.insert(press) && !replay.game.is_over() {
                return Err(format!(
                    "ply {} completed by the press of another move",
                    m.ply
                ));
            }
        }
    }
    Ok(())
}

/// Every move completed by its own press; no illegal move, irregularity or press in doubt.
fn clean_record(replay: &Replay, context: &str) {
    every_move_by_its_own_press(replay).unwrap_or_else(|e| panic!("{e}: {context}"));
    for (what, found) in [
        (
            "illegal move",
            count(replay, |e| matches!(e, Event::IllegalMove(_))),
        ),
        (
            "irregularity",
            count(replay, |e| matches!(e, Event::Irregularity(_))),
        ),
        (
            "press in doubt",
            count(replay, |e| matches!(e, Event::PressInDoubt(_))),
        ),
    ] {
        assert_eq!(found, 0, "{what}: {context}");
    }
}

#[test]
fn white_clock_on_the_right_with_the_gateway_at_its_default() {
    let replays = london_replays_with(
        DgtSimOptions {
            disturbances: Disturbances::none(),
            white_on_left: false,
            ..DgtSimOptions::default()
        },
        "White's clock on the right",
    );
    for (number, replay) in replays.iter().enumerate() {
        let context = format!("game {number}");
        clean_record(replay, &context);
        // Read from the clock's start, confirmed by White's first press, told once.
        let sides: Vec<_> = replay
            .events
            .iter()
            .filter_map(|e| match &e.kind {
                Some(Event::ClockSides(c)) => Some((c.reversed, c.basis())),
                _ => None,
            })
            .collect();
        assert_eq!(
            sides,
            vec![
                (true, ClockSidesBasis::ClockStarted),
                (true, ClockSidesBasis::MovePress)
            ],
            "{context}"
        );
        let mismatches = replay.game.setup_mismatches();
        assert_eq!(mismatches.len(), 1, "{context}");
        assert_eq!(mismatches[0].aspect(), SetupAspect::ClockSides);
        assert!(
            mismatches[0].fix.contains("--white-clock right"),
            "{mismatches:?}"
        );
    }
}

#[test]
fn a_clock_turned_round_at_move_20_is_followed() {
    for white_on_left in [true, false] {
        let replays = london_replays_with(
            DgtSimOptions {
                disturbances: Disturbances::none(),
                white_on_left,
                clock_turned_before_ply: Some(39),
                ..DgtSimOptions::default()
            },
            "clock turned round at move 20",
        );
        let games = read_games(LONDON).expect("london file reads");
        for (number, (replay, game)) in replays.iter().zip(&games).enumerate() {
            let context =
                format!("game {number}, White's clock first on the left: {white_on_left}");
            clean_record(replay, &context);
            // Turned round: the sides change once more after move 20.
            let press_sides: Vec<bool> = replay
                .events
                .iter()
                .filter_map(|e| match &e.kind {
                    Some(Event::ClockSides(c)) if c.basis() == ClockSidesBasis::MovePress => {
                        Some(c.reversed)
                    }
                    _ => None,
                })
                .collect();
            let expected = if game.moves.len() >= 39 {
                vec![!white_on_left, white_on_left]
            } else {
                vec![!white_on_left]
            };
            assert_eq!(press_sides, expected, "{context}");
        }
    }
}

#[test]
fn all_disturbances_with_white_clock_on_the_right_give_the_same_record() {
    london_replays_with(
        DgtSimOptions {
            disturbances: Disturbances::all(),
            white_on_left: false,
            ..DgtSimOptions::default()
        },
        "White's clock on the right, all disturbances",
    );
}

#[test]
fn a_press_without_a_move_is_an_illegal_move_once_the_next_presses_show_it() {
    // Tidy play but for presses without a move: each is recorded in doubt at once and, when
    // the player then completes the move with a press of their own, as the illegal move it
    // was, with the edition's penalty proposed.
    let games = read_games(LONDON).expect("london file reads");
    for white_on_left in [true, false] {
        let options = DgtSimOptions {
            disturbances: Disturbances {
                press_without_move: 0.1,
                ..Disturbances::none()
            },
            white_on_left,
            ..DgtSimOptions::default()
        };
        let sim = simulate(&games[0], &options).expect("simulates");
        let presses: Vec<u32> = sim
            .record
            .plies
            .iter()
            .filter(|p| p.disturbances.contains(&Disturbance::PressWithoutMove))
            .map(|p| p.ply)
            .collect();
        assert!(!presses.is_empty());
        let replay = replay(&sim.capture_bytes(), DgtSessionConfig::default());
        let illegal: Vec<(u32, String, String)> = replay
            .events
            .iter()
            .filter_map(|e| match &e.kind {
                Some(Event::IllegalMove(m)) => {
                    Some((m.ply, m.kind.clone(), m.proposed_penalty.clone()))
                }
                _ => None,
            })
            .collect();
        assert_eq!(
            illegal.iter().map(|(ply, _, _)| *ply).collect::<Vec<_>>(),
            presses,
            "{}",
            sim.record
        );
        // The edition's penalty: time for the opponent at first, the game at the second
        // (Article 7.5.5 of 2023).
        for (i, (_, kind, penalty)) in illegal.iter().enumerate() {
            assert_eq!(kind, "clock pressed without a move");
            if i == 0 {
                assert!(
                    penalty.contains("added to the opponent's clock"),
                    "{penalty}"
                );
            } else {
                assert!(!penalty.starts_with("none"), "{penalty}");
            }
        }
        let settled: Vec<PressSettlement> = replay
            .events
            .iter()
            .filter_map(|e| match &e.kind {
                Some(Event::PressSettled(s)) => Some(s.settlement()),
                _ => None,
            })
            .collect();
        assert_eq!(settled.len(), presses.len());
        assert!(settled.iter().all(|s| *s == PressSettlement::IllegalMove));
    }
}

#[test]
fn tidy_play_replays_with_notes_on_the_clock_and_the_result() {
    let games = read_games(LONDON).expect("london file reads");
    let game = &games[0];
    let options = DgtSimOptions {
        disturbances: Disturbances::none(),
        ..DgtSimOptions::default()
    };
    let sim = simulate(game, &options).expect("simulates");
    assert!(sim.record.expected().is_empty());
    let tags = vec![
        ("White".to_owned(), "So, Wesley".to_owned()),
        ("Result".to_owned(), "?".to_owned()),
    ];
    let (pgn, notes) = replay_capture_to_pgn(&sim.capture_bytes(), &tags).expect("replays");
    assert_eq!(ucis(&pgn), source_ucis(game));
    assert_eq!(pgn.tag("Result"), Some(game.result.as_str()));
    let notes: Vec<&String> = notes.iter().filter(|n| !n.starts_with("board:")).collect();
    assert_eq!(
        notes[..2],
        [
            "clock: White's time on the left display (it ran when the clock was started)",
            "clock: White's time on the left display (the press after a move stopped it)",
        ],
        "{notes:?}"
    );
    assert_eq!(notes.len(), 3, "{notes:?}");
    assert!(
        notes[2].starts_with(&format!(
            "result {}: result signalled on the board",
            game.result
        )),
        "{notes:?}"
    );
    let written = write_game(&pgn);
    let back = read_games(&written).expect("written PGN reads");
    assert_eq!(ucis(&back[0]), source_ucis(game));
    assert_eq!(back[0].moves[0].clock_ms, game.moves[0].clock_ms);
}

#[test]
fn a_rotated_board_with_the_clock_the_other_way_round() {
    let games = read_games(LONDON).expect("london file reads");
    let game = &games[3];
    let options = DgtSimOptions {
        orientation: boardcast_dgt::Orientation::Rotated,
        white_on_left: false,
        ..DgtSimOptions::default()
    };
    let sim = simulate(game, &options).expect("simulates");
    let config = DgtSessionConfig {
        orientation: boardcast_dgt::Orientation::Rotated,
        white_clock: ClockSide::Right,
    };
    let replay = replay(&sim.capture_bytes(), config);
    let pgn = replay.game.to_pgn().game;
    assert_eq!(ucis(&pgn), source_ucis(game));
    assert_eq!(pgn.moves[1].clock_ms, game.moves[1].clock_ms);
    assert!(replay.game.setup_mismatches().is_empty());
}

#[test]
fn a_board_turned_round_against_its_gateway_is_followed_and_told() {
    let games = read_games(LONDON).expect("london file reads");
    let game = &games[3];
    let options = DgtSimOptions {
        orientation: boardcast_dgt::Orientation::Rotated,
        disturbances: Disturbances::none(),
        ..DgtSimOptions::default()
    };
    let sim = simulate(game, &options).expect("simulates");
    let replay = replay(&sim.capture_bytes(), DgtSessionConfig::default());
    assert_eq!(ucis(&replay.game.to_pgn().game), source_ucis(game));
    let mismatches = replay.game.setup_mismatches();
    assert_eq!(mismatches.len(), 1, "{mismatches:?}");
    assert_eq!(mismatches[0].aspect(), SetupAspect::Orientation);
    assert!(mismatches[0].fix.contains("--rotated"), "{mismatches:?}");
}

/// Everything the session makes of a byte stream, however it was cut.
fn session_output(chunks: &[&[u8]]) -> (Vec<Kind>, Vec<String>) {
    let mut session = DgtSession::new(DgtSessionConfig::default());
    let mut kinds = Vec::new();
    let mut diagnostics = Vec::new();
    for chunk in chunks {
        let handled = session.feed(chunk);
        kinds.extend(handled.kinds);
        diagnostics.extend(handled.diagnostics);
    }
    (kinds, diagnostics)
}

#[test]
fn split_reads_and_garbage_change_nothing_but_diagnostics() {
    let games = read_games(LONDON).expect("london file reads");
    let sim = simulate(&games[1], &DgtSimOptions::default()).expect("simulates");
    let bytes = sim.capture_bytes();
    let (whole, diagnostics) = session_output(&[&bytes]);
    assert!(diagnostics.is_empty());
    assert!(whole.iter().any(|k| matches!(k, Kind::Lifted(_))));
    assert!(whole.iter().any(|k| matches!(k, Kind::Status(_))));

    // Cut at every 7th byte and at 1-byte reads for the first frames.
    let mut pieces: Vec<&[u8]> = bytes[..200].chunks(1).collect();
    pieces.extend(bytes[200..].chunks(7));
    let (split, diagnostics) = session_output(&pieces);
    assert!(diagnostics.is_empty());
    assert_eq!(split, whole);

    // Line noise between frames (bytes without bit 7 are skipped until the next frame start).
    let mut noisy = Vec::new();
    let mut decoder = Decoder::new();
    let frames: Vec<Vec<u8>> = decoder
        .feed(&bytes)
        .iter()
        .map(|m| encode_message(m).expect("re-encodes"))
        .collect();
    for (i, frame) in frames.iter().enumerate() {
        if i % 50 == 25 {
            noisy.extend([0x01, 0x7f, 0x33]);
        }
        noisy.extend(frame);
    }
    let (with_noise, diagnostics) = session_output(&[&noisy]);
    assert_eq!(with_noise, whole);
    assert!(!diagnostics.is_empty());
    assert!(
        diagnostics.iter().all(|d| d.contains("skipped")),
        "{diagnostics:?}"
    );

    let replay = replay(&noisy, DgtSessionConfig::default());
    assert_eq!(ucis(&replay.game.to_pgn().game), source_ucis(&games[1]));
}

#[test]
fn session_maps_squares_pieces_clock_sides_and_ignores_acks() {
    use boardcast_dgt::{
        BoardCodes, ClockAck, ClockSide as Display, ClockStatus, ClockTime, DgtSquare, PieceCode,
    };
    let mut session = DgtSession::new(DgtSessionConfig::default());
    let mut codes = BoardCodes::default();
    let start = shakmaty::Board::new();
    for (square, piece) in start.iter() {
        codes.set(
            DgtSquare::from_square(square, boardcast_dgt::Orientation::Normal),
            PieceCode::Piece(piece),
        );
    }
    let kinds = session.on_message(Message::BoardDump(codes)).kinds;
    assert!(
        matches!(&kinds[..], [Kind::Placement(p)] if p.placement == "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR")
    );
    // DGT square 52 is e2; the proto numbers e2 as 12.
    let e2 = DgtSquare::new(52).expect("square");
    let kinds = session
        .on_message(Message::FieldUpdate {
            square: e2,
            piece: PieceCode::Empty,
        })
        .kinds;
    assert!(matches!(&kinds[..], [Kind::Lifted(l), Kind::Placement(p)]
        if l.square == 12 && l.piece == 1 && p.placement == "rnbqkbnr/pppppppp/8/8/8/8/PPPP1PPP/RNBQKBNR"));

    let time = |left_runs: bool| ClockTime {
        left: Display {
            hours: 1,
            minutes: 59,
            seconds: 30,
            ..Display::default()
        },
        right: Display {
            hours: 2,
            ..Display::default()
        },
        status: ClockStatus(1 | u8::from(left_runs) << 1),
    };
    // The first clock frame says a clock is connected, then what it shows.
    let kinds = session.on_message(Message::Clock(time(true))).kinds;
    assert!(matches!(&kinds[..], [Kind::Status(s), Kind::Clock(c)]
        if s.clock_connected == Some(true)
            && c.white_remaining_ms == 7_170_000 && c.black_remaining_ms == 7_200_000 && c.running() == ClockRun::White));
    // The same reading again says nothing new.
    assert!(
        session
            .on_message(Message::Clock(time(true)))
            .kinds
            .is_empty()
    );

    let mut right = DgtSession::new(DgtSessionConfig {
        white_clock: ClockSide::Right,
        ..DgtSessionConfig::default()
    });
    let kinds = right.on_message(Message::Clock(time(true))).kinds;
    assert!(matches!(&kinds[..], [Kind::Status(_), Kind::Clock(c)]
        if c.white_remaining_ms == 7_200_000 && c.running() == ClockRun::Black));

    // The clock's cable is pulled: the board's frames say no clock (bit 5), once; back, it is
    // said again.
    let unplugged = ClockTime {
        status: ClockStatus(0x20),
        ..time(true)
    };
    let kinds = right.on_message(Message::Clock(unplugged)).kinds;
    assert!(matches!(&kinds[..], [Kind::Status(s)] if s.clock_connected == Some(false)));
    assert!(right.on_message(Message::Clock(unplugged)).kinds.is_empty());
    let kinds = right.on_message(Message::Clock(time(true))).kinds;
    assert!(matches!(&kinds[..], [Kind::Status(s)] if s.clock_connected == Some(true)));

    assert!(session.on_message(Message::ClockIgnored).kinds.is_empty());
    let ack = ClockAck {
        payload: [0x0a, 0x10, 0x0a, 0x00, 0x00, 0x00, 0x00],
    };
    assert!(session.on_message(Message::ClockAck(ack)).kinds.is_empty());
    let handled = session.on_message(Message::Unknown {
        id: 0xb0,
        payload: vec![1, 2],
    });
    assert!(handled.kinds.is_empty() && handled.diagnostics.len() == 1);
    let kinds = session
        .on_message(Message::SerialNumber("12345".into()))
        .kinds;
    assert!(matches!(&kinds[..], [Kind::Status(s)] if s.serial_number == "12345"));
}

#[test]
fn capture_without_a_board_is_an_error() {
    assert!(replay_capture_to_pgn(&[0x01, 0x02], &[]).is_err());
}

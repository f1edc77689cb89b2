//! Simulated DGT byte streams through the gateway's DGT session and capture replay: every game
//! of a real tournament comes back exactly, with the disturbances the simulator recorded.

use boardcast_dgt::{Decoder, Message, encode_message};
use boardcast_gateway::dgt::{
    ClockSide, DgtSession, DgtSessionConfig, ReplayEvent, replay_capture, replay_capture_to_pgn,
};
use boardcast_inference::{IrregularityCause, Output};
use boardcast_rules::pgn::{PgnGame, parse_san, read_games, write_game};
use boardcast_schema::device::v1::{ClockRun, observation::Kind};
use boardcast_sim::dgt::{DgtSimOptions, Disturbances, Expected, simulate};
use shakmaty::{CastlingMode, Chess, Color, Position, uci::UciMove};

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

fn uci(m: shakmaty::Move) -> String {
    UciMove::from_move(m, CastlingMode::Standard).to_string()
}

/// What the replay reported, in the simulator's terms; anything the simulator never causes is
/// returned as text so that the comparison fails with it.
fn as_expected(event: &ReplayEvent) -> Option<Result<Expected, String>> {
    let ply = event.next_ply;
    Some(Ok(match &event.output {
        Output::ProvisionalRevised {
            from_move, to_move, ..
        } => Expected::Revised {
            ply: to_move.ply,
            from: uci(from_move.mv),
            to: uci(to_move.mv),
        },
        Output::Reconstructed { moves, .. } => Expected::Reconstructed {
            ply: moves.first().map_or(ply, |m| m.ply),
            moves: moves.iter().map(|m| uci(m.mv)).collect(),
        },
        Output::Irregularity {
            cause: IrregularityCause::ClockPressed { side },
            ..
        } => Expected::IrregularityAtPress {
            ply,
            white: *side == Color::White,
        },
        Output::IrregularityCleared { .. } => Expected::IrregularityCleared { ply },
        Output::GhostIgnored { .. } => Expected::GhostIgnored { ply },
        Output::ClockPressWithoutMove { side, .. } => Expected::PressWithoutMove {
            ply,
            white: *side == Color::White,
        },
        Output::ResultSignalled { .. } => return None,
        other => return Some(Err(format!("ply {ply}: unexpected {other:?}"))),
    }))
}

#[test]
fn every_london_game_with_all_disturbances_replays_to_the_source_moves() {
    let games = read_games(LONDON).expect("london file reads");
    assert_eq!(games.len(), 45);
    let mut seen_kinds = std::collections::HashSet::new();
    // Another base seed plays the tournament with other disturbances (for soak runs).
    let base_seed: u64 = std::env::var("BOARDCAST_SIM_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    for (number, game) in games.iter().enumerate() {
        let options = DgtSimOptions {
            seed: base_seed + number as u64,
            disturbances: Disturbances::all(),
            ..DgtSimOptions::default()
        };
        let sim = simulate(game, &options).expect("simulates");
        let record = &sim.record;
        let replay =
            replay_capture(&sim.capture_bytes(), DgtSessionConfig::default()).expect("replays");
        let context = format!("game {number} ({}):\n{record}", game.players());
        assert_eq!(ucis(&replay.game), source_ucis(game), "{context}");
        assert_eq!(replay.game.result, game.result, "{context}");
        assert!(replay.diagnostics.is_empty(), "{:?}", replay.diagnostics);

        let mut reported: Vec<Expected> = Vec::new();
        for event in &replay.events {
            match as_expected(event) {
                Some(Ok(e)) => reported.push(e),
                Some(Err(unexpected)) => panic!("{unexpected}\n{context}"),
                None => {}
            }
        }
        let mut expected = record.expected();
        reported.sort();
        expected.sort();
        assert_eq!(reported, expected, "{context}");
        for e in &expected {
            seen_kinds.insert(std::mem::discriminant(e));
        }

        // Clock times come from the press frames; moves played while the board was away have
        // no frame of their own.
        let gapped: Vec<u32> = record
            .plies
            .iter()
            .filter(|p| {
                p.disturbances
                    .iter()
                    .any(|d| matches!(d, boardcast_sim::dgt::Disturbance::Disconnected { .. }))
            })
            .flat_map(|p| [p.ply, p.ply + 1])
            .collect();
        for (i, (got, source)) in replay.game.moves.iter().zip(&game.moves).enumerate() {
            let ply = i as u32 + 1;
            if gapped.contains(&ply)
                || source.clock_ms.is_none()
                || (record.ended_on_board && i + 1 == game.moves.len())
            {
                continue;
            }
            assert_eq!(got.clock_ms, source.clock_ms, "ply {ply}\n{context}");
        }
    }
    // Over the tournament every kind of expectation occurs at least once.
    assert_eq!(seen_kinds.len(), 6, "{seen_kinds:?}");
}

#[test]
fn tidy_play_replays_without_notes_but_the_result() {
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
    assert_eq!(notes, vec![format!("result signalled: {}", game.result)]);
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
    let replay = replay_capture(&sim.capture_bytes(), config).expect("replays");
    assert_eq!(ucis(&replay.game), source_ucis(game));
    assert_eq!(replay.game.moves[1].clock_ms, game.moves[1].clock_ms);
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

    let replay = replay_capture(&noisy, DgtSessionConfig::default()).expect("replays");
    assert_eq!(ucis(&replay.game), source_ucis(&games[1]));
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
    let kinds = session.on_message(Message::Clock(time(true))).kinds;
    assert!(matches!(&kinds[..], [Kind::Clock(c)]
        if c.white_remaining_ms == 7_170_000 && c.black_remaining_ms == 7_200_000 && c.running() == ClockRun::White));
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
    assert!(matches!(&kinds[..], [Kind::Clock(c)]
        if c.white_remaining_ms == 7_200_000 && c.running() == ClockRun::Black));

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

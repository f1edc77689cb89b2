//! Whatever the board reports, the engine never panics and its game stays a legal chain.

mod common;

use boardcast_inference::{Config, Event, Inference, Input, Output};
use common::confirmed_sans;
use proptest::prelude::*;
use shakmaty::{Board, Chess, Color, Piece, Position, Role, Square};

fn square() -> impl Strategy<Value = Square> {
    (0u32..64).prop_map(Square::new)
}

fn piece() -> impl Strategy<Value = Piece> {
    (any::<bool>(), 0usize..6).prop_map(|(white, role)| Piece {
        color: if white { Color::White } else { Color::Black },
        role: Role::ALL[role],
    })
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        4 => square().prop_map(|square| Event::Lifted { square }),
        4 => (square(), piece()).prop_map(|(square, piece)| Event::Placed { square, piece }),
        1 => proptest::collection::vec((square(), piece()), 0..12).prop_map(|pieces| {
            let mut board = Board::empty();
            for (square, piece) in pieces {
                board.set_piece_at(square, piece);
            }
            Event::Placement(board)
        }),
        1 => Just(Event::Placement(Board::new())),
        2 => any::<bool>().prop_map(|white| Event::ClockPressed {
            side: if white { Color::White } else { Color::Black },
        }),
        1 => Just(Event::Tick),
    ]
}

fn assert_legal_chain(engine: &Inference) {
    let mut pos = engine.start_position().clone();
    for m in engine.moves() {
        assert!(pos.is_legal(m.mv), "illegal {m:?}");
        pos.play_unchecked(m.mv);
    }
    assert_eq!(&pos, engine.position());
    assert!(engine.confirmed_plies() as usize <= engine.moves().len());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_observations_never_break_the_engine(
        events in proptest::collection::vec((event(), 0i64..20_000), 0..60),
        press_grace_ms in prop_oneof![Just(0i64), 1i64..5_000],
    ) {
        let config = Config { reconstruct_budget: 20_000, press_grace_ms, ..Config::default() };
        let mut engine = Inference::with_config(Chess::default(), config);
        let mut time_ms = 0;
        for (seq, (event, gap)) in events.into_iter().enumerate() {
            time_ms += gap;
            if engine.tick_would_be_idle(time_ms) {
                let tick = Input { seq: seq as u64, time_ms, event: Event::Tick };
                prop_assert_eq!(engine.clone().observe(tick), Vec::new());
            }
            engine.observe(Input { seq: seq as u64, time_ms, event });
            assert_legal_chain(&engine);
        }
    }

    #[test]
    fn random_legal_games_are_inferred_exactly(choices in proptest::collection::vec(any::<usize>(), 0..80)) {
        let mut engine = Inference::new(Chess::default());
        let mut pos = Chess::default();
        let mut expected = Vec::new();
        let mut confirmed = Vec::new();
        for (seq, choice) in choices.into_iter().enumerate() {
            let moves = pos.legal_moves();
            if moves.is_empty() {
                break;
            }
            let m = moves[choice % moves.len()];
            let mover = pos.turn();
            expected.push(shakmaty::san::SanPlus::from_move(pos.clone(), m).to_string());
            pos.play_unchecked(m);
            let seq = seq as u64 * 2;
            let mut out: Vec<Output> = engine.observe(Input {
                seq,
                time_ms: seq as i64 * 1000,
                event: Event::Placement(pos.board().clone()),
            });
            out.extend(engine.observe(Input {
                seq: seq + 1,
                time_ms: seq as i64 * 1000 + 500,
                event: Event::ClockPressed { side: mover },
            }));
            confirmed.extend(confirmed_sans(&out));
        }
        // Kings are never adjacent in legal play and a return to the start placement is a
        // legal move there, so no convention signal interferes.
        prop_assert_eq!(confirmed, expected);
    }
}

//! Reading broadcast files as they come: every game is read, each keeps its legal moves, and a
//! score that stops being legal says where and why — the DGT result signal named as such.

use boardcast_rules::{
    pgn::{FileProblem, StopReason, read_games, read_pgn},
    result_signal::ResultSignal,
};

fn game(tags: &str, moves: &str) -> String {
    format!("[Event \"Test\"]\n[White \"W\"]\n[Black \"B\"]\n{tags}\n{moves}\n\n")
}

#[test]
fn a_game_whose_moves_stop_being_legal_keeps_its_legal_moves_and_the_file_goes_on() {
    let file = [
        game(
            "[Result \"1-0\"]",
            "1. e4 e5 2. Qh5 Nc6 3. Bc4 Nf6 4. Qxf7# 1-0",
        ),
        game("[Result \"*\"]", "1. e4 e5 2. Ke3 Nc6 3. Nf3 *"),
        game("[Result \"1/2-1/2\"]", "1. d4 d5 1/2-1/2"),
    ]
    .concat();
    let read = read_pgn(&file);
    assert!(read.problems.is_empty(), "{:?}", read.problems);
    assert_eq!(read.games.len(), 3);
    assert!(read.games[0].stopped.is_none());
    assert_eq!(read.games[0].game.game.moves.len(), 7);
    let middle = &read.games[1];
    assert_eq!(middle.number, 2);
    assert_eq!(middle.game.game.moves.len(), 2);
    let stop = middle.stopped.as_ref().expect("stopped");
    assert_eq!(stop.reason, StopReason::IllegalMove);
    assert_eq!(stop.move_number, "2.");
    assert_eq!(stop.san, "Ke3");
    assert_eq!(stop.kept_plies, 2);
    assert_eq!(stop.dropped, ["Ke3", "Nc6", "Nf3"]);
    assert!(stop.to_string().contains("2. Ke3 is not legal"), "{stop}");
    assert_eq!(read.games[2].game.game.moves.len(), 2);

    // The strict reader, for files this system wrote, still refuses the file.
    assert!(read_games(&file).is_err());
}

#[test]
fn both_kings_put_on_the_centre_squares_is_named_as_the_result_signal() {
    // After the last move the players put the kings on e4 and d5 (light squares: 1-0); the
    // broadcast recorded it as two king moves.
    let white_wins = game(
        "[Result \"1-0\"]",
        "1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 4. Ke4 Kd5 1-0",
    );
    let read = read_pgn(&white_wins);
    let stop = read.games[0].stopped.as_ref().expect("stopped");
    assert_eq!(
        stop.reason,
        StopReason::KingsInCentre {
            signal: ResultSignal::WhiteWins
        }
    );
    assert_eq!(stop.kept_plies, 6);
    assert_eq!(stop.dropped, ["Ke4", "Kd5"]);
    assert_eq!(read.games[0].game.game.moves.len(), 6);
    assert_eq!(read.games[0].game.game.result, "1-0");
    assert!(stop.to_string().contains("result signal (1-0)"), "{stop}");

    // Dark squares: 0-1.
    let black_wins = game(
        "[FEN \"7k/8/8/8/8/8/8/4K3 w - - 0 1\"]\n[SetUp \"1\"]\n[Result \"0-1\"]",
        "1. Kd4 Ke5 0-1",
    );
    let read = read_pgn(&black_wins);
    assert_eq!(
        read.games[0].stopped.as_ref().map(|s| s.reason),
        Some(StopReason::KingsInCentre {
            signal: ResultSignal::BlackWins
        })
    );

    // One light, one dark: a draw.
    let draw = game("[Result \"1/2-1/2\"]", "1. d4 d5 2. Ke4 Ke5 1/2-1/2");
    assert_eq!(
        read_pgn(&draw).games[0].stopped.as_ref().map(|s| s.reason),
        Some(StopReason::KingsInCentre {
            signal: ResultSignal::Draw
        })
    );
}

#[test]
fn a_legal_king_step_into_the_centre_before_the_signal_is_the_signals_first_half() {
    // White's king may legally step to e4; Black's king cannot then go to d5 beside it: the two
    // are the signal, not a king move and an illegal one.
    let file = game(
        "[FEN \"8/8/3k4/8/8/4K3/8/8 w - - 0 1\"]\n[SetUp \"1\"]\n[Result \"1-0\"]",
        "1. Ke4 Kd5 1-0",
    );
    let stop = read_pgn(&file).games[0].stopped.clone().expect("stopped");
    assert_eq!(stop.kept_plies, 0);
    assert_eq!(stop.dropped, ["Ke4", "Kd5"]);
    assert_eq!(
        stop.reason,
        StopReason::KingsInCentre {
            signal: ResultSignal::WhiteWins
        }
    );
}

#[test]
fn other_illegal_tails_are_not_taken_for_the_signal() {
    for moves in [
        "1. e4 e5 2. Ke4 Nf3 *",
        "1. e4 e5 2. Ke4 *",
        "1. e4 e5 2. Ke4 Kd5 3. Kc4 Kc5 4. Kb4 *",
    ] {
        let read = read_pgn(&game("[Result \"*\"]", moves));
        assert_eq!(
            read.games[0].stopped.as_ref().map(|s| s.reason),
            Some(StopReason::IllegalMove),
            "{moves}"
        );
    }
}

#[test]
fn a_game_that_cannot_be_read_is_listed_and_the_games_after_it_are_read() {
    let file = [
        game("[Result \"*\"]", "1. e4 *"),
        game(
            "[FEN \"not a position\"]\n[SetUp \"1\"]\n[Result \"*\"]",
            "1. e4 *",
        ),
        game("[Result \"*\"]", "1. d4 *"),
    ]
    .concat();
    let read = read_pgn(&file);
    assert_eq!(
        read.games.iter().map(|g| g.number).collect::<Vec<_>>(),
        [1, 3]
    );
    assert!(matches!(
        read.problems.as_slice(),
        [FileProblem::InvalidFen { number: 2, .. }]
    ));
    assert!(read.problems[0].to_string().contains("game 2 (W - B)"));
}

#[test]
fn a_real_broadcast_file_reads_whole() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../data/london-classic-2016.pgn"
    ))
    .expect("the London file");
    let read = read_pgn(&text);
    assert_eq!(read.games.len(), 45);
    assert!(read.games.iter().all(|g| g.stopped.is_none()));
    assert!(read.problems.is_empty());
}

proptest::proptest! {
    /// Whatever a file holds, reading it answers (games, problems), never a panic.
    #[test]
    fn any_text_reads_without_a_panic(text in "(\\[[A-Za-z]{1,8} \"[^\"]{0,12}\"\\]\n|[0-9]{1,3}\\.{1,3} |[KQRBNa-h1-8x+#=O-]{1,6} |[{}();*\n]|1-0|0-1){0,60}") {
        let read = read_pgn(&text);
        for game in &read.games {
            proptest::prop_assert!(game.number >= 1);
        }
    }
}

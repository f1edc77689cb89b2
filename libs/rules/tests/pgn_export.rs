//! PGN export reads back to the same game: the London Chess Classic 2016 and constructed games
//! with elapsed times, draw offers, arbiter notes and a FEN start.

use boardcast_rules::pgn::{
    AnnotatedGame, MoveNotes, PgnGame, PgnMove, format_duration, parse_duration_ms,
    read_annotated_games, read_games, san_plus, write_annotated_game, write_game,
};
use shakmaty::{CastlingMode, Chess, Position, fen::Fen, uci::UciMove};

fn london_text() -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../data/london-classic-2016.pgn"
    );
    std::fs::read_to_string(path).expect("the London file is in data/")
}

fn sorted_tags(game: &PgnGame) -> Vec<(String, String)> {
    let mut tags = game.tags.clone();
    tags.sort();
    tags
}

#[test]
fn london_games_read_back_unchanged() {
    let games = read_games(&london_text()).expect("reads");
    assert_eq!(games.len(), 45);
    let exported: String = games.iter().map(write_game).collect();
    let again = read_games(&exported).expect("export reads back");
    assert_eq!(again.len(), games.len());
    for (before, after) in games.iter().zip(&again) {
        assert_eq!(after.moves, before.moves, "{}", before.players());
        assert_eq!(after.result, before.result);
        // The writer puts the Seven Tag Roster first; the set of tags is unchanged.
        assert_eq!(sorted_tags(after), sorted_tags(before));
    }
    // A second export is byte for byte the first.
    let twice: String = again.iter().map(write_game).collect();
    assert_eq!(twice, exported);
}

#[test]
fn london_games_read_back_through_the_annotated_reader() {
    let games = read_annotated_games(&london_text()).expect("reads");
    let exported: String = games.iter().map(write_annotated_game).collect();
    let again = read_annotated_games(&exported).expect("reads back");
    assert_eq!(again, read_annotated_games(&exported).expect("stable"));
    for (before, after) in games.iter().zip(&again) {
        assert_eq!(after.game.moves, before.game.moves);
        assert_eq!(after.notes, before.notes);
        assert!(after.notes.iter().all(|n| *n == MoveNotes::default()));
    }
}

fn play(start: &Chess, ucis: &[&str]) -> Vec<PgnMove> {
    let mut pos = start.clone();
    ucis.iter()
        .map(|u| {
            let m = u
                .parse::<UciMove>()
                .expect("UCI")
                .to_move(&pos)
                .expect("legal");
            let san = san_plus(&pos, &m);
            pos.play_unchecked(m);
            PgnMove {
                san,
                ..PgnMove::default()
            }
        })
        .collect()
}

fn constructed() -> AnnotatedGame {
    let fen = "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 3 3";
    let start: Chess = fen
        .parse::<Fen>()
        .expect("FEN")
        .into_position(CastlingMode::Standard)
        .expect("legal");
    let mut moves = play(&start, &["g8f6", "f3e5", "c6e5", "d2d4", "e5g6", "e4e5"]);
    moves[0].clock_ms = Some(5_400_000);
    moves[0].elapsed_ms = Some(12_345);
    moves[1].clock_ms = Some(5_399_000);
    moves[1].elapsed_ms = Some(4_500);
    moves[2].elapsed_ms = Some(60_000);
    moves[3].comment = Some("a comment with {braces} and (=) words".to_owned());
    moves[4].comment = Some("the offer was declined".to_owned());
    let mut notes = vec![MoveNotes::default(); moves.len()];
    notes[1].draw_offer = true;
    notes[3].draw_offer = true;
    notes[3].arbiter_notes = vec![
        "illegal move by White: 2 minutes added to Black's clock".to_owned(),
        "clocks set to 1:29:00 and 1:28:30".to_owned(),
    ];
    notes[5].arbiter_notes = vec!["game adjourned".to_owned()];
    AnnotatedGame {
        game: PgnGame {
            tags: vec![
                ("Event".to_owned(), "Test \"quoted\"".to_owned()),
                ("White".to_owned(), "A".to_owned()),
                ("Black".to_owned(), "B".to_owned()),
                ("SetUp".to_owned(), "1".to_owned()),
                ("FEN".to_owned(), fen.to_owned()),
            ],
            moves,
            result: "*".to_owned(),
        },
        notes,
    }
}

#[test]
fn constructed_game_with_every_annotation_reads_back() {
    let game = constructed();
    let text = write_annotated_game(&game);
    assert!(
        text.contains("3... Nf6 {[%clk 1:30:00] [%emt 0:00:12.345]}"),
        "{text}"
    );
    assert!(text.contains("[%emt 0:00:04.5] (=)}"), "{text}");
    assert!(
        text.contains("{Arbiter: illegal move by White: 2 minutes added to Black's clock}"),
        "{text}"
    );
    let again = read_annotated_games(&text).expect("reads back");
    assert_eq!(again.len(), 1);
    let again = &again[0];
    // Braces in comments cannot survive inside a PGN comment; they are written as parentheses.
    // A `(=)` word in free text is read as a draw offer: free text should not contain it.
    let mut expected = game.clone();
    expected.game.moves[3].comment = Some("a comment with (braces) and words".to_owned());
    expected.game.tags.sort();
    let mut got = again.clone();
    got.game.tags.retain(|(name, value)| {
        !(["Site", "Date", "Round"].contains(&name.as_str()) && value == "?")
    });
    got.game.tags.retain(|(name, _)| name != "Result");
    got.game.tags.sort();
    assert_eq!(got, expected);
    assert_eq!(
        again.game.start_position().expect("FEN").turn(),
        shakmaty::Color::Black
    );
}

#[test]
fn plain_reader_keeps_annotations_as_comment_text() {
    let text = write_annotated_game(&constructed());
    let plain = read_games(&text).expect("reads");
    assert_eq!(plain[0].moves[1].comment.as_deref(), Some("(=)"));
    assert_eq!(
        plain[0].moves[5].comment.as_deref(),
        Some("Arbiter: game adjourned")
    );
    // And the plain writer keeps them, so the annotated reader still finds the draw offer.
    let rewritten = read_annotated_games(&write_game(&plain[0])).expect("reads");
    assert!(rewritten[0].notes[1].draw_offer);
}

#[test]
fn draw_offer_written_bare_would_be_a_variation() {
    // Why the offer lives inside a comment: a bare `(=)` is parsed as a variation and lost.
    let text = "1. e4 (=) e5 *";
    let plain = read_annotated_games(text).expect("reads");
    assert!(!plain[0].notes.iter().any(|n| n.draw_offer));
    let text = "1. e4 {(=)} e5 *";
    let annotated = read_annotated_games(text).expect("reads");
    assert!(annotated[0].notes[0].draw_offer);
    assert_eq!(annotated[0].game.moves[0].comment, None);
}

#[test]
fn durations_round_trip() {
    for ms in [
        0, 1, 10, 100, 999, 1_000, 4_500, 12_345, 3_599_999, 7_200_000, 86_400_001,
    ] {
        assert_eq!(parse_duration_ms(&format_duration(ms)), Some(ms), "{ms}");
    }
    assert_eq!(format_duration(4_500), "0:00:04.5");
    assert_eq!(format_duration(60_000), "0:01:00");
}

/// An arbiter's note is free text: a `[%clk …]` in it is written so that no reader takes it for
/// the move's clock.
#[test]
fn an_arbiter_note_cannot_pass_for_a_clock() {
    let mut game = constructed();
    game.notes[0].arbiter_notes = vec!["clock showed [%clk 0:00:01] by mistake".to_owned()];
    let text = write_annotated_game(&game);
    assert!(!text.contains("[%clk 0:00:01]"), "{text}");
    assert!(
        text.contains("{Arbiter: clock showed [ %clk 0:00:01] by mistake}"),
        "{text}"
    );
    let again = &read_annotated_games(&text).expect("reads back")[0];
    assert_eq!(again.game.moves[0].clock_ms, game.game.moves[0].clock_ms);
}

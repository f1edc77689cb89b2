//! `boardcast analyze` as a user runs it.

use std::process::Command;

fn boardcast(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_boardcast"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .output()
        .expect("boardcast runs")
}

#[test]
fn json_lines_one_game_per_line() {
    let out = boardcast(&["analyze", "data/london-classic-2016.pgn", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let games: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is a JSON object"))
        .collect();
    assert_eq!(games.len(), 45);
    for game in &games {
        for field in [
            "white",
            "black",
            "round",
            "plies",
            "claims",
            "automatic",
            "status",
        ] {
            assert!(game.get(field).is_some(), "{field} in {game}");
        }
    }
    // Anand - Kramnik (9.2) ended in a repetition: the claim is listed with its occurrences.
    let anand = &games[1];
    assert_eq!(anand["round"], "9.2");
    let claim = anand["claims"]
        .as_array()
        .expect("claims")
        .iter()
        .find(|c| c["basis"] == "position")
        .expect("a threefold claim on the position");
    assert_eq!(claim["kind"], "threefold");
    assert_eq!(claim["occurrences"], serde_json::json!([40, 44, 48]));
}

/// `boardcast analyze --fen FEN --json`, which must succeed, as JSON.
fn fen_json(fen: &str) -> serde_json::Value {
    let out = boardcast(&["analyze", "--fen", fen, "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

#[test]
fn fen_json_says_whether_the_position_is_dead() {
    assert_eq!(
        fen_json("8/8/4k3/1p1p1p1p/1P1P1P1P/8/4K3/8 w - - 0 1"),
        serde_json::json!({"dead": "yes", "white_can_mate": "no", "black_can_mate": "no"})
    );
}

/// A position the analysis cannot settle within its bounds is shown as undetermined, never as
/// a verdict. (Pawn races behind a half-locked chain: the analysis proves that White can never
/// mate, and finds neither a mate nor a proof for Black. Should it one day decide the position,
/// pick another from the undetermined ones the dead-position benchmark lists.)
#[test]
fn an_undetermined_position_is_shown_as_such() {
    let fen = "1k6/p1p1p1p1/P1P1P1P1/p1p1p1p1/8/8/P1P1P1P1/4K3 w - - 0 1";
    assert_eq!(
        fen_json(fen),
        serde_json::json!({"dead": "undetermined", "white_can_mate": "no", "black_can_mate": "undetermined"})
    );
    let out = boardcast(&["analyze", "--fen", fen]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("dead: undetermined"), "{text}");
    assert!(
        text.contains("black can checkmate: undetermined") && text.contains("the arbiter decides"),
        "{text}"
    );
    assert!(text.contains("white can checkmate: no"), "{text}");
}

#[test]
fn bad_input_gets_a_clear_error() {
    let out = boardcast(&["analyze", "--fen", "not a fen"]);
    assert!(!out.status.success());
    assert!(!String::from_utf8_lossy(&out.stderr).is_empty());
    let out = boardcast(&["analyze", "no-such-file.pgn"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such-file.pgn"));
    let out = boardcast(&[
        "analyze",
        "data/london-classic-2016.pgn",
        "--edition",
        "fide-2020",
    ]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("fide-2023"),
        "lists the valid editions"
    );
}

#[test]
fn every_game_of_a_file_with_bad_scores_is_analysed_and_the_cuts_are_said() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("broadcast.pgn");
    std::fs::write(
        &file,
        "[Event \"T\"]\n[White \"A\"]\n[Black \"B\"]\n[Result \"1-0\"]\n\n\
         1. e4 e5 2. Nf3 Nc6 3. Ke4 Kd5 1-0\n\n\
         [Event \"T\"]\n[White \"C\"]\n[Black \"D\"]\n[Result \"*\"]\n\n1. d4 Kd5 *\n\n\
         [Event \"T\"]\n[White \"E\"]\n[Black \"F\"]\n[Result \"1/2-1/2\"]\n\n1. c4 c5 1/2-1/2\n",
    )
    .expect("write");
    let path = file.to_str().expect("path");
    let out = boardcast(&["analyze", path, "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let games: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert_eq!(games.len(), 3);
    assert_eq!(games[0]["plies"], 4);
    assert_eq!(
        games[0]["score_stopped"]["reason"],
        serde_json::json!({"kind": "kings_in_centre", "signal": "white_wins"})
    );
    assert_eq!(games[1]["score_stopped"]["reason"]["kind"], "illegal_move");
    assert_eq!(
        games[1]["score_stopped"]["dropped"],
        serde_json::json!(["Kd5"])
    );
    assert!(games[2].get("score_stopped").is_none());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("2 cut short"), "{said}");
    assert!(said.contains("a DGT board's result signal (1-0)"), "{said}");

    let text = boardcast(&["analyze", path]);
    let printed = String::from_utf8_lossy(&text.stdout);
    assert!(printed.contains("Game 3: E - F"), "{printed}");
    assert!(printed.contains("1... Kd5 is not legal"), "{printed}");
}

//! Results written back into the pairing program's file give the file it would have written
//! itself: the results in their columns, the points summed again, nothing else changed.

use boardcast_trf::{GameOutcome, Outcome, TrfFile};

fn source() -> String {
    let path = format!(
        "{}/tests/files/javafo_sample2.trf",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(path).expect("the file is there")
}

/// The file as the pairing program exported it after pairing `round`: that round's games
/// without results (forfeits and byes, known beforehand, keep theirs), the points without them.
fn paired_not_played(text: &str, round: u32) -> String {
    let column = 92 + 10 * (round as usize - 1) + 7;
    text.split_inclusive('\n')
        .map(|line| {
            let mut chars: Vec<char> = line.chars().collect();
            let played = line.starts_with("001")
                && chars
                    .get(column - 1)
                    .is_some_and(|c| matches!(c, '1' | '0' | '='))
                && chars
                    .get(column - 8..column - 4)
                    .and_then(|o| o.iter().collect::<String>().trim().parse::<u32>().ok())
                    .is_some_and(|opponent| opponent != 0);
            if played {
                // The points as the program wrote them then: without that result.
                let taken = match chars[column - 1] {
                    '1' => 1.0,
                    '=' => 0.5,
                    _ => 0.0,
                };
                let points: f64 = chars[80..84]
                    .iter()
                    .collect::<String>()
                    .trim()
                    .parse()
                    .expect("the points");
                for (slot, c) in chars[80..84]
                    .iter_mut()
                    .zip(format!("{:>4.1}", points - taken).chars())
                {
                    *slot = c;
                }
                chars[column - 1] = ' ';
            }
            chars.into_iter().collect::<String>()
        })
        .collect()
}

#[test]
fn a_rounds_results_written_back_give_the_pairing_programs_file() {
    let original = source();
    let played = TrfFile::parse(&original).expect("reads");
    let exported = paired_not_played(&original, 4);
    assert_ne!(exported, original);
    let file = TrfFile::parse(&exported).expect("the export reads");
    let pairings = file.round(4).expect("round 4 paired");
    // The results of round 4 as they were played.
    let results: Vec<GameOutcome> = pairings
        .tables
        .iter()
        .map(|t| GameOutcome {
            round: 4,
            white: t.white,
            black: t.black,
            white_outcome: played.players[&t.white]
                .round(4)
                .and_then(|e| e.outcome)
                .expect("played"),
            black_outcome: played.players[&t.black]
                .round(4)
                .and_then(|e| e.outcome)
                .expect("played"),
        })
        .collect();
    let written = file.with_results(&exported, &results).expect("writes");
    assert_eq!(
        written, original,
        "the file the pairing program wrote after round 4"
    );
    // And it reads back to the same players and rounds.
    let again = TrfFile::parse(&written).expect("re-reads");
    let json = |f: &TrfFile| serde_json::to_value(&f.players).expect("JSON");
    assert_eq!(json(&again), json(&played));
}

#[test]
fn a_result_for_a_game_the_file_does_not_pair_so_is_refused() {
    let original = source();
    let file = TrfFile::parse(&original).expect("reads");
    let swapped = GameOutcome {
        round: 4,
        white: 1,
        black: 4,
        white_outcome: Outcome::Win,
        black_outcome: Outcome::Loss,
    };
    let refused = file
        .with_results(&original, &[swapped])
        .expect_err("4 had White");
    assert!(
        refused
            .to_string()
            .contains("does not pair 1 (White) with 4"),
        "{refused}"
    );
}

#[test]
fn a_file_scoring_otherwise_gets_no_results_written() {
    let original = source().replace("XXR 9", "XXR 9\r\n162  W 3.0    D 1.0    L 0.0");
    let file = TrfFile::parse(&original).expect("reads");
    let result = GameOutcome {
        round: 4,
        white: 4,
        black: 1,
        white_outcome: Outcome::Loss,
        black_outcome: Outcome::Win,
    };
    let refused = file
        .with_results(&original, &[result])
        .expect_err("3-1-0 scoring");
    assert!(refused.to_string().contains("162"), "{refused}");
    let default = source().replace("XXR 9", "XXR 9\r\n162  W 1.0    D 0.5    L 0.0");
    let file = TrfFile::parse(&default).expect("reads");
    assert!(
        file.with_results(&default, &[result]).is_ok(),
        "the default, written out"
    );
}

#[test]
fn a_trf16_file_whose_points_score_otherwise_gets_no_results_written() {
    // TRF16 has no record for the scoring: a 3-1-0 event's file says so by its points only
    // (here player 1's, 10.0 where the default scoring sums 4.0).
    let original = source();
    let line = original
        .lines()
        .find(|l| l.starts_with("001    1 "))
        .expect("player 1");
    let football = original.replacen(line, &format!("{}10.0{}", &line[..80], &line[84..]), 1);
    let file = TrfFile::parse(&football).expect("reads");
    let result = GameOutcome {
        round: 4,
        white: 4,
        black: 1,
        white_outcome: Outcome::Loss,
        black_outcome: Outcome::Win,
    };
    let refused = file
        .with_results(&football, &[result])
        .expect_err("3-1-0 points");
    assert!(
        refused.to_string().contains("player 1's points (10.0)"),
        "{refused}"
    );
}

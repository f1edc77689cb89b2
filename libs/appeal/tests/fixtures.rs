//! Records exported from a live hall by an earlier version replay to the same states forever:
//! the edition and every rule choice are in the log, so a newer version of the rules must never
//! change how an old log replays.
//!
//! Each `fixtures/NAME.bcrec` (a `boardcast export` of a round played on the real services, with
//! irregularities, a claim and rulings) comes with the key it was signed with
//! (`NAME.trusted-keys`) and what replaying it gave when it was made (`NAME.expected.json`: each
//! game's final state as encoded bytes, and its timeline). `BOARDCAST_BLESS=1` writes the
//! expectation — only for a new fixture, never to make a changed replay pass.

use std::path::{Path, PathBuf};

use boardcast_appeal::{RecordFile, replay, verify};
use boardcast_game::signing::TrustedKeys;
use prost::Message as _;
use serde_json::{Value, json};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn replayed(file: &RecordFile, keys: &TrustedKeys) -> Value {
    let games: Vec<Value> = file
        .games
        .iter()
        .map(|g| {
            let r = replay(g, keys, None).expect("the fixture replays");
            let state = r.game.to_state().encode_to_vec();
            json!({
                "game_id": g.game_id,
                "state": state.iter().map(|b| format!("{b:02x}")).collect::<String>(),
                "result": r.game.result_token(),
                "fen": boardcast_game::fen(r.game.position()),
                "timeline": r.steps.iter().map(|s| format!("{} {} {} {}", s.entry().game_seq, s.entry().kind, s.entry().actor, s.entry().words)).collect::<Vec<_>>(),
                "alerts": r.alerts.iter().map(|a| format!("{} {:?} {}", a.raised_at, a.kind, a.summary)).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({ "games": games })
}

#[test]
fn exported_hall_records_replay_to_the_same_states_forever() {
    let mut checked = 0;
    for entry in std::fs::read_dir(fixtures()).expect("the fixtures") {
        let path = entry.expect("a fixture").path();
        if path.extension().and_then(|e| e.to_str()) != Some("bcrec") {
            continue;
        }
        let file = RecordFile::read(std::fs::File::open(&path).expect("opens")).expect("reads");
        let keys = TrustedKeys::parse(
            &std::fs::read_to_string(path.with_extension("trusted-keys")).expect("its key"),
        )
        .expect("a key");
        let report = verify(&file, &keys);
        assert!(report.passed(), "{}: {:?}", path.display(), report.problems);
        assert!(report.decisions_reproduced > 0);
        let now = replayed(&file, &keys);
        let expected_path = path.with_extension("expected.json");
        if std::env::var_os("BOARDCAST_BLESS").is_some() {
            std::fs::write(
                &expected_path,
                serde_json::to_string_pretty(&now).expect("json"),
            )
            .expect("writes");
        }
        let expected: Value = serde_json::from_str(
            &std::fs::read_to_string(&expected_path).expect("the expected replay"),
        )
        .expect("json");
        assert_eq!(now, expected, "{} replays differently", path.display());
        checked += 1;
    }
    assert!(checked > 0, "no fixture found");
}

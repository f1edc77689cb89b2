//! `boardcast users` as an administrator runs it: tokens that expire and rotate, sessions ended.

use std::{path::Path, process::Command};

fn users(file: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_boardcast"))
        .arg("users")
        .arg("--file")
        .arg(file)
        .args(args)
        .env("NEW_PASSWORD", "a long enough password")
        .output()
        .expect("boardcast runs")
}

fn stdout(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn directory(file: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(file).expect("users file")).expect("json")
}

#[test]
fn tokens_expire_rotate_and_sessions_end() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("users.json");
    stdout(&users(
        &file,
        &["add", "pairing", "--password-env", "NEW_PASSWORD"],
    ));
    let token = stdout(&users(
        &file,
        &[
            "token",
            "pairing",
            "--label",
            "pairing program",
            "--valid-days",
            "2",
        ],
    ));
    let id = token.trim().split('.').nth(2).expect("an id").to_owned();
    let listed = stdout(&users(&file, &["list"]));
    assert!(
        listed.contains(&format!(
            "token {id} (pairing program): expires in 1 day(s)"
        )),
        "{listed}"
    );

    // Rotated: a new token with the same label; the old one works for the overlap only.
    let rotated = users(
        &file,
        &["rotate-token", "pairing", &id, "--overlap-hours", "1"],
    );
    let new_token = stdout(&rotated);
    assert!(new_token.starts_with("bct1.pairing."), "{new_token}");
    assert!(String::from_utf8_lossy(&rotated.stderr).contains("works for 1 more hour(s)"));
    let tokens = directory(&file)["users"]["pairing"]["tokens"].clone();
    let (old, new) = (&tokens[0], &tokens[1]);
    let hour_ms = 3_600_000;
    let overlap = old["expires_unix_ms"].as_i64().expect("old expiry")
        - new["created_unix_ms"].as_i64().expect("created");
    assert!((hour_ms - 1_000..=hour_ms).contains(&overlap), "{overlap}");
    assert_eq!(new["label"], "pairing program");

    // A token that is not there: a clear error, nothing written.
    let before = std::fs::read_to_string(&file).expect("file");
    let refused = users(&file, &["rotate-token", "pairing", "nope"]);
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("has no token \"nope\""),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    assert_eq!(std::fs::read_to_string(&file).expect("file"), before);
    // Out-of-range lifetimes are refused by the parser.
    assert!(
        !users(&file, &["token", "pairing", "--valid-days", "0"])
            .status
            .success()
    );

    // Ending the sessions, a disable and a password change each set when sessions count from.
    for command in [
        vec!["end-sessions", "pairing"],
        vec!["disable", "pairing"],
        vec!["passwd", "pairing", "--password-env", "NEW_PASSWORD"],
    ] {
        let before = directory(&file)["users"]["pairing"]["sessions_from_unix_ms"]
            .as_i64()
            .unwrap_or(0);
        std::thread::sleep(std::time::Duration::from_millis(5));
        stdout(&users(&file, &command));
        let after = directory(&file)["users"]["pairing"]["sessions_from_unix_ms"]
            .as_i64()
            .expect("set");
        assert!(after > before, "{command:?}");
    }
}

#[test]
fn a_role_in_a_tournament_id_no_game_can_have_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("users.json");
    let missing = users(&file, &["list"]);
    assert!(
        !missing.status.success(),
        "no such file: said, not listed empty"
    );
    let created = users(&file, &["add", "ada"]);
    stdout(&created);
    assert!(
        String::from_utf8_lossy(&created.stderr).contains("created the users file"),
        "the file made is named"
    );
    let refused = users(
        &file,
        &[
            "grant",
            "ada",
            "--role",
            "operator",
            "--tournament",
            "Hall Open",
        ],
    );
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("--tournament") && said.contains("' '"),
        "{said}"
    );
    assert!(!stdout(&users(&file, &["list"])).contains("Hall Open"));
    stdout(&users(
        &file,
        &[
            "grant",
            "ada",
            "--role",
            "operator",
            "--tournament",
            "hall-open",
        ],
    ));
    stdout(&users(
        &file,
        &["grant", "ada", "--role", "observer", "--tournament", "*"],
    ));
}

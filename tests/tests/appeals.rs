//! An appeal's record, end to end: a round with irregularities, a claim and rulings played on a
//! real NATS and game service, exported with `boardcast export`; with NATS stopped, the file
//! replays to the live service's states and the arbiter dashboard's timelines; `--verify` passes,
//! and fails naming the place for every kind of tampering; a claim judged again at its moment
//! gets the arbiter's verdict; the HTML replay shows a chosen moment in Chromium.

mod support;

use std::path::Path;
use std::time::Duration;

use anyhow::{Context as _, bail};
use boardcast_appeal::{At, RecordFile, replay};
use boardcast_game::signing::{RecordSigner, TrustedKeys};
use boardcast_schema::game::v1::{
    ActRequest, AdjustClocks, Annotation, ArbiterAction, ClaimKind, ClaimRuling, GameEventRecord,
    GameState, GetGameRequest, PenaltyDecision, StreamGameEventsRequest, arbiter_action::Action,
    game_event::Kind,
};
use boardcast_testkit::{
    ArbiterService, GameService, TEST_PASSWORD, TestNats, TestUsers, browser::Browser, repo_root,
};
use futures::StreamExt as _;
use prost::Message as _;

const TOURNAMENT: &str = "appeals-open";

/// Board 1: the Berlin, White presses without moving at ply 5. Board 2: a battery report, an
/// irregular placement and lost observations. Board 3: knights out and back until Black claims
/// a threefold repetition with 4... Ng8.
const PGN: &str = "[Event \"Appeals Open\"]\n[Round \"1.1\"]\n[White \"A\"]\n[Black \"B\"]\n\
    [Result \"*\"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bb5 Nf6 4. O-O Nxe4 5. Re1 Nd6 6. Nxe5 Be7 \
    7. Bf1 Nxe5 8. Rxe5 O-O *\n\n\
    [Event \"Appeals Open\"]\n[Round \"1.2\"]\n[White \"C\"]\n[Black \"D\"]\n\
    [Result \"1/2-1/2\"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bb5 Nf6 4. O-O Nxe4 5. Re1 Nd6 6. Nxe5 Be7 \
    7. Bf1 Nxe5 8. Rxe5 O-O 1/2-1/2\n\n\
    [Event \"Appeals Open\"]\n[Round \"1.3\"]\n[White \"E\"]\n[Black \"F\"]\n\
    [Result \"*\"]\n\n1. Nf3 Nf6 2. Ng1 Ng8 3. Nf3 Nf6 4. Ng1 *\n";

const INCIDENTS: &str = "board=1:press-without-move@ply=5,board=2:battery-low@ply=3,\
    board=2:irregular-placement@ply=7,board=2:lost-observations@ply=12";

fn game_id(board: u32) -> String {
    format!("{TOURNAMENT}-r1-b{board}")
}

async fn act(
    service: &GameService,
    game: &str,
    action: Action,
    request: &str,
) -> anyhow::Result<()> {
    service
        .client()
        .await?
        .act(ActRequest {
            game_id: game.into(),
            action: Some(ArbiterAction {
                action: Some(action),
                ..Default::default()
            }),
            request_id: request.into(),
        })
        .await
        .with_context(|| format!("{request} on {game}"))?;
    Ok(())
}

async fn state(service: &GameService, game: &str) -> anyhow::Result<GameState> {
    Ok(service
        .client()
        .await?
        .get_game(GetGameRequest {
            game_id: game.into(),
        })
        .await?
        .into_inner())
}

/// The `game_seq` of the first event of `game` that `wanted` picks.
async fn find_event(
    service: &GameService,
    game: &str,
    wanted: impl Fn(&Kind) -> bool,
) -> anyhow::Result<u64> {
    let last = state(service, game).await?.last_game_seq;
    let mut events = service
        .client()
        .await?
        .stream_game_events(StreamGameEventsRequest {
            game_id: game.into(),
            from_game_seq: 1,
        })
        .await?
        .into_inner();
    while let Some(event) = events.next().await {
        let event = event?;
        if event.kind.as_ref().is_some_and(&wanted) {
            return Ok(event.game_seq);
        }
        if event.game_seq >= last {
            break;
        }
    }
    bail!("no such event in {game}")
}

fn fingerprint() -> anyhow::Result<String> {
    Ok(TestUsers::shared()?.signer()?.public_key().fingerprint())
}

/// `boardcast replay FILE --verify --trust FINGERPRINT` on `file` with its records of game 0
/// changed by `change`.
fn verify_tampered(
    dir: &Path,
    file: &RecordFile,
    name: &str,
    change: impl FnOnce(&mut RecordFile),
) -> anyhow::Result<(bool, String)> {
    let mut tampered = file.clone();
    change(&mut tampered);
    let path = dir.join(format!("{name}.bcrec"));
    tampered.write(std::fs::File::create(&path)?)?;
    support::boardcast_cli(&[
        "replay",
        &path.to_string_lossy(),
        "--verify",
        "--trust",
        &fingerprint()?,
    ])
}

fn decoded(file: &RecordFile, game: usize, index: usize) -> GameEventRecord {
    GameEventRecord::decode(file.games[game].records[index].payload.as_slice()).expect("decodes")
}

#[tokio::test(flavor = "multi_thread")]
async fn an_exported_round_replays_offline_to_the_live_record_and_tampering_is_named()
-> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let game_service = GameService::start(&nats.url())?;
    let arbiter = ArbiterService::start(&nats.url(), &game_service.url())?;
    support::play(
        PGN,
        3,
        &["--time-control", "5400+30", "--incidents", INCIDENTS],
        &nats.url(),
        &game_service.url(),
    )?;
    let js = async_nats::jetstream::new(boardcast_kit::nats::connect(&nats.url(), "test").await?);
    support::drained(&js).await?;

    // The rulings: White's illegal move penalised, a clock corrected with a note, and Black's
    // threefold claim upheld.
    let illegal = find_event(&game_service, &game_id(1), |k| {
        matches!(k, Kind::IllegalMove(_))
    })
    .await?;
    act(
        &game_service,
        &game_id(1),
        Action::Penalty(PenaltyDecision {
            illegal_move_game_seq: illegal,
            confirmed: true,
            note: "7.5.4".into(),
        }),
        "r-penalty",
    )
    .await?;
    act(
        &game_service,
        &game_id(1),
        Action::Clocks(AdjustClocks {
            white_added_ms: 120_000,
            reason: "clock set wrongly".into(),
            ..Default::default()
        }),
        "r-clocks",
    )
    .await?;
    act(
        &game_service,
        &game_id(2),
        Action::Annotation(Annotation {
            text: "players warned about noise".into(),
        }),
        "r-note",
    )
    .await?;
    let before_claim = state(&game_service, &game_id(3)).await?.last_game_seq;
    act(
        &game_service,
        &game_id(3),
        Action::Claim(ClaimRuling {
            claimant: "black".into(),
            kind: ClaimKind::Threefold as i32,
            intended_move: "Ng8".into(),
            upheld: true,
            ..Default::default()
        }),
        "r-claim",
    )
    .await?;

    let games: Vec<String> = (1..=3).map(game_id).collect();
    let mut live_states = Vec::new();
    for g in &games {
        live_states.push(state(&game_service, g).await?);
    }
    // The dashboard's timelines, once it has followed every game to its end.
    let session = arbiter.login("admin", TEST_PASSWORD).await?;
    let mut live_timelines = Vec::new();
    for (g, s) in games.iter().zip(&live_states) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let answer = session.get(&format!("/api/games/{g}/timeline")).await?;
            let entries = answer["timeline"].as_array().cloned().unwrap_or_default();
            if entries.last().and_then(|e| e["game_seq"].as_u64()) == Some(s.last_game_seq) {
                live_timelines.push(entries);
                break;
            }
            anyhow::ensure!(
                tokio::time::Instant::now() < deadline,
                "the dashboard never caught up with {g}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    // Exported from the live log, then NATS gone.
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("round-1.bcrec");
    export(
        &nats.url(),
        &["--tournament", TOURNAMENT, "--round", "1"],
        &path,
    )?;
    // The live log can be replayed directly too.
    let (ok, out) = support::boardcast_cli(&[
        "replay",
        "--nats",
        &nats.url(),
        "--game",
        &game_id(3),
        "--pgn",
        "--trusted-keys",
        &TestUsers::shared()?.trusted_keys().to_string_lossy(),
    ])?;
    assert!(ok && out.contains("4. Ng1"), "{out}");
    drop(arbiter);
    drop(game_service);
    drop(nats);

    // `BOARDCAST_WRITE_APPEAL_FIXTURES=1` keeps this export as the appeal library's fixture
    // (then bless its expected replay: see libs/appeal/tests/fixtures.rs).
    if std::env::var_os("BOARDCAST_WRITE_APPEAL_FIXTURES").is_some() {
        let fixtures = repo_root().join("libs/appeal/tests/fixtures");
        std::fs::create_dir_all(&fixtures)?;
        std::fs::copy(&path, fixtures.join("hall-round-1.bcrec"))?;
        std::fs::write(
            fixtures.join("hall-round-1.trusted-keys"),
            std::fs::read_to_string(TestUsers::shared()?.trusted_keys())?,
        )?;
    }
    let file = RecordFile::read(std::fs::File::open(&path)?)?;
    assert_eq!(file.games.len(), 3);
    assert!(
        file.games.iter().all(|g| !g.observations.is_empty()),
        "the boards' observations are in the file"
    );
    let trusted = TrustedKeys::new([TestUsers::shared()?.signer()?.public_key().clone()]);
    for ((g, live), timeline) in games.iter().zip(&live_states).zip(&live_timelines) {
        let replayed = replay(file.game(g).context("in the file")?, &trusted, None)?;
        assert_eq!(
            &replayed.game.to_state(),
            live,
            "{g}: the replayed state is the live one"
        );
        let words = |entries: Vec<serde_json::Value>| -> Vec<(u64, String, String, String)> {
            entries
                .iter()
                .map(|e| {
                    (
                        e["game_seq"].as_u64().unwrap_or(0),
                        e["kind"].as_str().unwrap_or_default().to_owned(),
                        e["words"].as_str().unwrap_or_default().to_owned(),
                        e["actor"].as_str().unwrap_or_default().to_owned(),
                    )
                })
                .collect()
        };
        let replayed_timeline: Vec<serde_json::Value> = replayed
            .steps
            .iter()
            .map(|s| serde_json::to_value(s.entry()))
            .collect::<Result<_, _>>()?;
        assert_eq!(
            words(replayed_timeline),
            words(timeline.clone()),
            "{g}: the timeline is the dashboard's"
        );
    }

    // The CLI agrees: verified against the organiser's fingerprint.
    let file_arg = path.to_string_lossy().to_string();
    let (ok, out) =
        support::boardcast_cli(&["replay", &file_arg, "--verify", "--trust", &fingerprint()?])?;
    assert!(ok && out.contains("verified"), "{out}");
    // Without a fingerprint from outside the file nothing is proven.
    let (ok, out) = support::boardcast_cli(&["replay", &file_arg, "--verify"])?;
    assert!(!ok && out.contains("--trust"), "{out}");
    // The human timeline names the arbiter's rulings and the claim.
    let (ok, out) = support::boardcast_cli(&["replay", &file_arg, "--trust", &fingerprint()?])?;
    assert!(
        ok && out.contains("[ALERT]") && out.contains("admin"),
        "{out}"
    );

    // The claim judged again just before the ruling: the verdict the arbiter got.
    let claim_game = file.game(&game_id(3)).context("board 3")?;
    let judged = replay(claim_game, &trusted, None)?
        .steps
        .iter()
        .find(|s| s.entry().kind == "claim_judged" || s.entry().words.contains("upheld"))
        .map(|s| s.entry().words.clone())
        .context("the claim's ruling is on the timeline")?;
    let (ok, out) = support::boardcast_cli(&[
        "replay",
        &file_arg,
        "--game",
        &game_id(3),
        "--at",
        &before_claim.to_string(),
        "--claim",
        "threefold",
        "--intended-move",
        "Ng8",
    ])?;
    assert!(
        ok && out.contains("upheld") && out.contains("9.2"),
        "{out}\n(recorded: {judged})"
    );
    // The moment itself: position, clocks, repetitions, the claim available.
    let moment = replay(claim_game, &trusted, Some(At::Seq(before_claim)))?.moment();
    let (ok, out) = support::boardcast_cli(&[
        "replay",
        &file_arg,
        "--game",
        &game_id(3),
        "--at",
        &before_claim.to_string(),
    ])?;
    assert!(
        ok && out.contains(&moment.fen) && out.contains("Threefold"),
        "{out}"
    );

    // Every kind of tampering fails verification and names the place.
    let d = dir.path();
    let (ok, out) = verify_tampered(d, &file, "flipped", |f| {
        let mut r = decoded(f, 0, 9);
        let last = r.event.len() - 1;
        r.event[last] ^= 1;
        f.games[0].records[9].payload = r.encode_to_vec();
    })?;
    assert!(
        !ok && out.contains("record 10") && out.contains("altered"),
        "{out}"
    );
    let (ok, out) = verify_tampered(d, &file, "dropped", |f| {
        f.games[0].records.remove(9);
    })?;
    assert!(
        !ok && out.contains("record 11") && out.contains("missing"),
        "{out}"
    );
    let (ok, out) = verify_tampered(d, &file, "swapped", |f| f.games[0].records.swap(9, 10))?;
    assert!(
        !ok && out.contains("record 11") && out.contains("reordered"),
        "{out}"
    );
    let (ok, out) = verify_tampered(d, &file, "inserted", |f| {
        // A record that continues the chain, signed by a key nobody trusts.
        let records = &f.games[0].records;
        let head = decoded(f, 0, records.len() - 1);
        let event = boardcast_schema::game::v1::GameEvent::decode(head.event.as_slice()).unwrap();
        let forged_event = boardcast_schema::game::v1::GameEvent {
            game_seq: event.game_seq + 1,
            kind: Some(Kind::Arbiter(ArbiterAction {
                action: Some(Action::Annotation(Annotation {
                    text: "result changed".into(),
                })),
                ..Default::default()
            })),
            ..event
        };
        let bytes = forged_event.encode_to_vec();
        let prev: [u8; 32] = head.hash.as_slice().try_into().unwrap();
        let mut forged = GameEventRecord {
            hash: boardcast_game::chain_hash(&prev, &bytes).to_vec(),
            event: bytes,
            prev_hash: prev.to_vec(),
            chain_version: 1,
            ..Default::default()
        };
        RecordSigner::from_seed([7; 32]).sign(&mut forged);
        let mut item = f.games[0].records.last().unwrap().clone();
        item.payload = forged.encode_to_vec();
        f.games[0].records.push(item);
    })?;
    assert!(!ok && out.contains("unknown key"), "{out}");
    let (ok, out) = verify_tampered(d, &file, "rekeyed", |f| {
        // Every record signed again with another key, whose public key replaces the hall's.
        let other = RecordSigner::from_seed([8; 32]);
        for g in &mut f.games {
            for item in &mut g.records {
                let mut r = GameEventRecord::decode(item.payload.as_slice()).unwrap();
                other.sign(&mut r);
                item.payload = r.encode_to_vec();
            }
        }
        f.header.keys[0].public_key = other.public_key().to_text();
        f.header.keys[0].fingerprint = other.public_key().fingerprint();
    })?;
    assert!(
        !ok && out.contains("no key in the file has the fingerprint"),
        "{out}"
    );

    // The HTML replay at a chosen moment, in a real browser.
    let html = dir.path().join("board-1.html");
    let (ok, out) = support::boardcast_cli(&[
        "replay",
        &file_arg,
        "--game",
        &game_id(1),
        "--html",
        &html.to_string_lossy(),
    ])?;
    anyhow::ensure!(ok, "{out}");
    let replayed = replay(file.game(&game_id(1)).context("board 1")?, &trusted, None)?;
    let chosen = replayed
        .steps
        .iter()
        .filter(|s| s.entry().kind == "move_completed")
        .nth(4)
        .context("a fifth move")?
        .clone();
    let browser = Browser::launch().await?;
    let mut page = browser.open(&format!("file://{}", html.display())).await?;
    page.wait_for(
        "document.getElementById('board').dataset.fen !== undefined",
        Duration::from_secs(10),
    )
    .await?;
    page.eval(&format!(
        "(() => {{ const s = document.getElementById('slider'); const i = {}; s.value = i; s.dispatchEvent(new Event('input')); }})()",
        replayed.steps.iter().position(|s| s.entry().game_seq == chosen.entry().game_seq).unwrap_or(0)
    ))
    .await?;
    let shown = page
        .eval("document.getElementById('board').dataset.fen")
        .await?;
    assert_eq!(shown.as_str(), Some(&*chosen.fen));
    let records = page
        .eval("document.querySelectorAll('#records li').length")
        .await?;
    assert_eq!(records.as_u64(), Some(replayed.steps.len() as u64));
    let shots = repo_root().join("target/screenshots");
    std::fs::create_dir_all(&shots)?;
    page.screenshot(&shots.join("appeal-replay.png")).await?;
    Ok(())
}

/// An export from a game log that was emptied (purged: its last sequence stays, no message is
/// left) says there is no such game instead of waiting for records that never come.
#[tokio::test(flavor = "multi_thread")]
async fn an_export_from_an_emptied_game_log_says_so_and_does_not_wait() -> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let js = async_nats::jetstream::new(async_nats::connect(nats.url()).await?);
    boardcast_kit::nats::ensure_streams(&js, 1, boardcast_kit::nats::DEFAULT_PARTITIONS).await?;
    js.publish(
        boardcast_kit::nats::game_subject("emptied-open-r1-b1"),
        "not a record".into(),
    )
    .await?
    .await?;
    js.get_stream(boardcast_kit::nats::GAMES_STREAM)
        .await?
        .purge()
        .await?;
    let dir = tempfile::tempdir()?;
    let out = dir.path().join("emptied.bcrec");
    let export = tokio::process::Command::new(boardcast_testkit::program("boardcast")?)
        .args([
            "export",
            "--nats",
            &nats.url(),
            "--tournament",
            "emptied-open",
        ])
        .arg("--out")
        .arg(&out)
        .env("RUST_LOG", "warn")
        .kill_on_drop(true)
        .output();
    let done = tokio::time::timeout(Duration::from_secs(60), export)
        .await
        .context("the export waited for records that never come")??;
    let said = String::from_utf8_lossy(&done.stderr);
    assert!(!done.status.success(), "{said}");
    assert!(said.contains("no game of"), "{said}");
    Ok(())
}

/// `boardcast export` of what `selection` selects from the log on `nats_url` into `path`, with
/// the test signer's key trusted; what it said.
fn export(nats_url: &str, selection: &[&str], path: &Path) -> anyhow::Result<String> {
    let path = path.to_string_lossy();
    let trusted = TestUsers::shared()?.trusted_keys();
    let trusted = trusted.to_string_lossy();
    let mut args = vec!["export", "--nats", nats_url];
    args.extend_from_slice(selection);
    args.extend(["--out", &path, "--trusted-keys", &trusted]);
    let (ok, out) = support::boardcast_cli(&args)?;
    anyhow::ensure!(ok, "export failed: {out}");
    Ok(out)
}

/// Waits until `game` has `count` moves completed.
async fn wait_for_moves(service: &GameService, game: &str, count: usize) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while state(service, game).await?.moves.len() < count {
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "move {count} of {game} never completed"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

/// A game whose board broke after the first move goes on on a spare board: its export holds
/// both boards' observations, each board's from the game's set-up on it, and verifies.
#[tokio::test(flavor = "multi_thread")]
async fn a_game_moved_to_another_board_is_exported_with_both_boards_observations()
-> anyhow::Result<()> {
    use boardcast_schema::device::v1::{ClockRun, Observation};
    use boardcast_testkit::{clock_shows as clock, publish_observation, showing as placement};

    const MOVED: &str = "moved-open";
    let nats = TestNats::start()?;
    let service = GameService::start(&nats.url())?;
    let js = async_nats::jetstream::new(async_nats::connect(nats.url()).await?);
    let mut set_up = boardcast_testkit::game_on_board(MOVED, 1, "moved-a");
    service
        .client()
        .await?
        .create_game(boardcast_testkit::create_request(set_up.clone()))
        .await?;
    let on_a = [
        placement(&[])?,
        clock(ClockRun::White, 5_400_000, 5_400_000),
        placement(&["e4"])?,
        clock(ClockRun::Black, 5_420_000, 5_400_000),
    ];
    for (seq, kind) in (1..).zip(on_a) {
        publish_observation(&js, "moved-a", seq, kind).await?;
    }
    wait_for_moves(&service, &format!("{MOVED}-r1-b1"), 1).await?;

    // Board A broke: the game goes on on board B.
    set_up.board_id = "moved-b".into();
    service
        .client()
        .await?
        .create_game(boardcast_schema::game::v1::CreateGameRequest {
            revise: true,
            ..boardcast_testkit::create_request(set_up)
        })
        .await?;
    let on_b = [
        placement(&["e4"])?,
        clock(ClockRun::Black, 5_420_000, 5_390_000),
        placement(&["e4", "e5"])?,
        clock(ClockRun::White, 5_420_000, 5_400_000),
    ];
    for (seq, kind) in (1..).zip(on_b) {
        publish_observation(&js, "moved-b", seq, kind).await?;
    }
    wait_for_moves(&service, &format!("{MOVED}-r1-b1"), 2).await?;

    let dir = tempfile::tempdir()?;
    let path = dir.path().join("moved.bcrec");
    let out = export(&nats.url(), &["--tournament", MOVED], &path)?;
    assert!(out.contains("8 observations"), "{out}");
    let file = RecordFile::read(std::fs::File::open(&path)?)?;
    let exported: Vec<(String, u64)> = file.games[0]
        .observations
        .iter()
        .map(|o| {
            let observation = Observation::decode(o.payload.as_slice()).expect("decodes");
            (observation.board_id, observation.device_seq)
        })
        .collect();
    let expected: Vec<(String, u64)> = ["moved-a", "moved-b"]
        .into_iter()
        .flat_map(|board| (1..=4).map(move |seq| (board.to_owned(), seq)))
        .collect();
    assert_eq!(exported, expected);
    let (verified, said) = support::boardcast_cli(&[
        "replay",
        &path.to_string_lossy(),
        "--verify",
        "--trust",
        &fingerprint()?,
    ])?;
    assert!(verified, "{said}");
    Ok(())
}

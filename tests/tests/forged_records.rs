//! A record written to a game's log by someone other than the game service — continuing the hash
//! chain, but signed by another key or not at all — is refused by every reader and changes
//! nothing: the game service, the broadcast feed, the arbiters' dashboard and an appeal's replay
//! all keep the game as the game service wrote it, and say that a record was refused.

mod support;

use std::time::Duration;

use anyhow::{Context as _, bail};
use boardcast_game::signing::RecordSigner;
use boardcast_kit::nats::{GAMES_STREAM, game_subject};
use boardcast_schema::game::v1::{
    ActRequest, ArbiterAction, EnterMove, GameEnded, GameEvent, GameEventRecord, GameResult,
    GetGameRequest, Termination, arbiter_action::Action, game_event::Kind,
};
use boardcast_testkit::{
    ArbiterService, BroadcastService, GameService, TEST_PASSWORD, TestNats, TestUsers,
    browser::Browser,
};
use prost::Message as _;

const PGN: &str = "[Event \"Forgery Open\"]\n[Round \"1.1\"]\n[White \"A\"]\n[Black \"B\"]\n\
    [Result \"*\"]\n\n1. e4 e5 2. Nf3 *\n";
const GAME: &str = "forgery-open-r1-b1";

/// A record that continues `head`'s chain declaring White the winner.
fn forged_result(head: &GameEventRecord, signer: Option<&RecordSigner>) -> GameEventRecord {
    let last = GameEvent::decode(head.event.as_slice()).expect("decodes");
    let event = GameEvent {
        game_seq: last.game_seq + 1,
        kind: Some(Kind::Ended(GameEnded {
            result: GameResult::WhiteWins as i32,
            termination: Termination::Resignation as i32,
            detail: "forged".into(),
            ..Default::default()
        })),
        ..last
    };
    let bytes = event.encode_to_vec();
    let prev: [u8; 32] = head.hash.as_slice().try_into().expect("a hash");
    let mut record = GameEventRecord {
        hash: boardcast_game::chain_hash(&prev, &bytes).to_vec(),
        event: bytes,
        prev_hash: prev.to_vec(),
        chain_version: 1,
        ..Default::default()
    };
    if let Some(s) = signer {
        s.sign(&mut record);
    }
    record
}

#[tokio::test(flavor = "multi_thread")]
async fn a_record_no_trusted_key_signed_is_refused_by_every_reader() -> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let game_service = GameService::start(&nats.url())?;
    let broadcast = BroadcastService::start(&nats.url())?;
    let arbiter = ArbiterService::start(&nats.url(), &game_service.url())?;
    support::play(PGN, 1, &[], &nats.url(), &game_service.url())?;
    let js =
        async_nats::jetstream::new(boardcast_kit::nats::connect(&nats.url(), "intruder").await?);
    support::drained(&js).await?;

    // The intruder can publish on the game's subject (this NATS has no permissions): a result
    // signed by its own key, then one not signed at all, each continuing the chain.
    let stream = js.get_stream(GAMES_STREAM).await?;
    let head = stream
        .get_last_raw_message_by_subject(&game_subject(GAME))
        .await?;
    let head = GameEventRecord::decode(head.payload.as_ref())?;
    let intruder = RecordSigner::from_seed([66; 32]);
    for forged in [
        forged_result(&head, Some(&intruder)),
        forged_result(&head, None),
    ] {
        js.publish(game_subject(GAME), forged.encode_to_vec().into())
            .await?
            .await?;
    }

    // The game service says which key it signs with, to anyone (public keys are public).
    let signer = TestUsers::shared()?.signer()?;
    let keys = boardcast_kit::client::game_client(&game_service.url(), None)
        .await?
        .get_signing_keys(boardcast_schema::game::v1::GetSigningKeysRequest {})
        .await?
        .into_inner();
    let signing = keys.signing.context("the signing key")?;
    assert_eq!(signing.fingerprint, signer.public_key().fingerprint());
    assert_eq!(signing.public_key, signer.public_key().to_text());

    // The arbiter enters Black's reply: the game service appends after its own last record. Its
    // first try, expecting the game's subject to end at that record, is refused (the forgeries
    // are there); the game is read again, the forgeries skipped, and the reply appended.
    let mut client = game_service.client().await?;
    client
        .act(ActRequest {
            game_id: GAME.into(),
            action: Some(ArbiterAction {
                action: Some(Action::Move(EnterMove { san: "Nc6".into() })),
                ..Default::default()
            }),
            request_id: "reply".into(),
        })
        .await
        .context("the arbiter's move")?;
    let state = client
        .get_game(GetGameRequest {
            game_id: GAME.into(),
        })
        .await?
        .into_inner();
    assert_eq!(
        state.result(),
        GameResult::Unspecified,
        "the forged result is not the game's"
    );
    assert_eq!(
        state.last_game_seq,
        head_seq(&head) + 2,
        "Nc6 follows the game service's own last record"
    );

    // The broadcast feed shows the game going on, with Nc6.
    let pgn_url = broadcast.url(&format!("/games/{GAME}.pgn"));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let pgn = loop {
        let text = reqwest::get(&pgn_url).await?.text().await?;
        if text.contains("Nc6") {
            break text;
        }
        if tokio::time::Instant::now() > deadline {
            bail!("the feed never showed Nc6: {text}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(pgn.contains("[Result \"*\"]"), "{pgn}");

    // The dashboard too, and it says two records were refused.
    let session = arbiter.login("admin", TEST_PASSWORD).await?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let detail = loop {
        let detail = session.get(&format!("/api/games/{GAME}")).await?;
        if detail["board"]["last_game_seq"].as_u64() == Some(state.last_game_seq) {
            break detail;
        }
        if tokio::time::Instant::now() > deadline {
            bail!("the dashboard never caught up: {detail}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(detail["board"]["state"], "playing", "{detail}");
    let refused = detail["refused_records"]
        .as_array()
        .context("refused records")?;
    assert_eq!(refused.len(), 2, "{detail}");
    assert!(
        refused[0]
            .as_str()
            .unwrap_or_default()
            .contains("not among the trusted keys")
    );
    assert!(
        refused[1]
            .as_str()
            .unwrap_or_default()
            .contains("not signed")
    );

    // An appeal's export keeps the records exactly as stored; verification names the forgeries,
    // and the replay refuses them and shows the game as the game service wrote it.
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("forgery.bcrec");
    let keys = TestUsers::shared()?.trusted_keys();
    let (ok, out) = support::boardcast_cli(&[
        "export",
        "--nats",
        &nats.url(),
        "--game",
        GAME,
        "--out",
        &path.to_string_lossy(),
        "--trusted-keys",
        &keys.to_string_lossy(),
    ])?;
    assert!(ok, "{out}");
    let file = path.to_string_lossy().to_string();
    let (ok, out) = support::boardcast_cli(&[
        "replay",
        &file,
        "--verify",
        "--trusted-keys",
        &keys.to_string_lossy(),
    ])?;
    assert!(
        !ok && out.contains("signed by an unknown key") && out.contains("inserted"),
        "{out}"
    );
    let (ok, out) =
        support::boardcast_cli(&["replay", &file, "--trusted-keys", &keys.to_string_lossy()])?;
    assert!(
        ok && out.matches("CAUTION refused, not folded").count() == 2
            && out.contains("-- result * after 4 plies (move 2)"),
        "{out}"
    );
    // The committee's page says so too, above the game, in a real browser.
    let html = dir.path().join("forgery.html");
    let (ok, out) = support::boardcast_cli(&[
        "replay",
        &file,
        "--trusted-keys",
        &keys.to_string_lossy(),
        "--html",
        &html.to_string_lossy(),
    ])?;
    assert!(ok, "{out}");
    let browser = Browser::launch().await?;
    let mut page = browser.open(&format!("file://{}", html.display())).await?;
    page.wait_for(
        "document.querySelectorAll('#cautions li').length > 0",
        Duration::from_secs(10),
    )
    .await?;
    let cautions = page
        .eval("Array.from(document.querySelectorAll('#cautions li'), (li) => li.textContent)")
        .await?;
    let cautions = cautions.as_array().context("a list")?;
    assert_eq!(cautions.len(), 2, "{cautions:?}");
    assert!(
        cautions.iter().all(|c| c
            .as_str()
            .is_some_and(|c| c.starts_with("refused, not folded"))),
        "{cautions:?}"
    );
    Ok(())
}

fn head_seq(head: &GameEventRecord) -> u64 {
    GameEvent::decode(head.event.as_slice())
        .map(|e| e.game_seq)
        .unwrap_or(0)
}

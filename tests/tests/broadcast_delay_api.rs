//! The broadcast delay set by the organiser through the game service (`SetBroadcastDelay`,
//! `boardcast delay`): only an operator or chief arbiter of the tournament may set it, only the
//! chief arbiter may lower the delay in force, every refusal records nothing, and the broadcast service applies what was set — also when it
//! starts after it was set.

mod support;

use std::time::Duration;

use boardcast_access::{Grant, Role};
use boardcast_kit::nats::DELAYS_STREAM;
use boardcast_schema::game::v1::SetBroadcastDelayRequest;
use boardcast_testkit::{BroadcastService, GameService, TestNats, TestUsers, program};
use tonic::Code;

const TOURNAMENT: &str = "london-chess-classic-2016";

fn grant(role: Role) -> Grant {
    Grant {
        tournament: TOURNAMENT.into(),
        role,
        boards: Vec::new(),
    }
}

fn request(round: u32, delay_ms: u64) -> SetBroadcastDelayRequest {
    SetBroadcastDelayRequest {
        tournament_id: TOURNAMENT.into(),
        round,
        delay_ms,
        request_id: boardcast_kit::client::new_request_id(),
    }
}

async fn recorded(nats: &TestNats) -> anyhow::Result<u64> {
    let js = async_nats::jetstream::new(async_nats::connect(nats.url()).await?);
    Ok(js
        .get_stream(DELAYS_STREAM)
        .await?
        .get_info()
        .await?
        .state
        .messages)
}

async fn moves_shown(broadcast: &BroadcastService) -> anyhow::Result<Option<usize>> {
    let response =
        reqwest::get(broadcast.url(&format!("/tournaments/{TOURNAMENT}/rounds/9.json"))).await?;
    if response.status() == reqwest::StatusCode::NOT_FOUND {
        return Ok(None);
    }
    let round: serde_json::Value = response.json().await?;
    Ok(Some(
        round["games"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|g| g["moves"].as_array().map_or(0, Vec::len))
            .sum(),
    ))
}

#[tokio::test(flavor = "multi_thread")]
async fn only_the_organiser_sets_the_delay_and_every_broadcast_service_applies_it()
-> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let game_service = GameService::start(&nats.url())?;
    let users = TestUsers::shared()?;
    let observer = users.add("delay-observer", &[grant(Role::Observer)])?;
    let arbiter = users.add("delay-arbiter", &[grant(Role::Arbiter)])?;
    let operator = users.add("delay-operator", &[grant(Role::Operator)])?;
    let chief = users.add("delay-chief", &[grant(Role::ChiefArbiter)])?;
    for token in [&observer, &arbiter, &operator, &chief] {
        game_service.wait_for_user(token).await?;
    }

    // Refusals: no credential, a role that does not set up games, too long a delay.
    let mut anonymous = boardcast_kit::client::game_client(&game_service.url(), None).await?;
    let refused = anonymous.set_broadcast_delay(request(9, 0)).await.err();
    assert_eq!(refused.map(|s| s.code()), Some(Code::Unauthenticated));
    for token in [&observer, &arbiter] {
        let mut client = game_service.client_as(token).await?;
        let refused = client.set_broadcast_delay(request(9, 0)).await.err();
        assert_eq!(refused.map(|s| s.code()), Some(Code::PermissionDenied));
    }
    let mut operator_client = game_service.client_as(&operator).await?;
    let refused = operator_client
        .set_broadcast_delay(request(9, 61 * 60_000))
        .await
        .err();
    assert_eq!(refused.map(|s| s.code()), Some(Code::InvalidArgument));
    assert_eq!(recorded(&nats).await?, 0, "a refusal records nothing");

    // The operator sets an hour on round 9 with the command-line tool; the broadcast service,
    // started afterwards with no delay of its own, shows nothing of the round.
    let out = std::process::Command::new(program("boardcast")?)
        .args(["delay", "--tournament", TOURNAMENT, "--round", "9", "60"])
        .args(["--game-service", &game_service.url()])
        .env("BOARDCAST_TOKEN", &operator)
        .output()?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("round 9") && said.contains("3600 s") && said.contains("delay-operator"),
        "{said}"
    );
    assert_eq!(recorded(&nats).await?, 1);
    // Set before the round is played, as an organiser may; the command says no game has that
    // tournament id yet, in case it is misspelt.
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no game of tournament"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let broadcast = BroadcastService::start(&nats.url())?;
    broadcast.wait_ready(Duration::from_secs(30)).await?;
    let pgn = std::fs::read_to_string(
        boardcast_testkit::repo_root().join("data/london-classic-2016.pgn"),
    )?;
    support::play(&pgn, 2, &[], &nats.url(), &game_service.url())?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        moves_shown(&broadcast).await?,
        None,
        "the hour's delay holds the round back"
    );

    // Lowering it releases moves sooner: not the operator's call. Refused, nothing recorded,
    // the round still held back.
    let refused = operator_client
        .set_broadcast_delay(request(9, 0))
        .await
        .err();
    assert_eq!(refused.map(|s| s.code()), Some(Code::PermissionDenied));
    assert_eq!(recorded(&nats).await?, 1, "a refusal records nothing");
    assert_eq!(moves_shown(&broadcast).await?, None);

    // The chief arbiter sets it to nothing: the round shows at once, whole.
    let mut chief_client = game_service.client_as(&chief).await?;
    chief_client.set_broadcast_delay(request(9, 0)).await?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(moves) = moves_shown(&broadcast).await?
            && moves > 100
        {
            break;
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the round was never released"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // A monitor already open is told a new delay at once (it counts the clocks on the delayed
    // time line), not only when it connects again.
    let mut viewer =
        reqwest::get(broadcast.url(&format!("/tournaments/{TOURNAMENT}/rounds/9/updates"))).await?;
    let mut events = support::SseEvents::default();
    let mut delays_told = Vec::new();
    let mut raised = false;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while delays_told.len() < 2 {
        let chunk = tokio::time::timeout_at(deadline, viewer.chunk())
            .await
            .map_err(|_| anyhow::anyhow!("told the delays {delays_told:?} only"))??
            .ok_or_else(|| anyhow::anyhow!("the stream ended"))?;
        for event in events.events(&chunk) {
            if event.name == "round" {
                let round: serde_json::Value = serde_json::from_str(&event.data)?;
                delays_told.push((
                    round["delay_ms"].as_u64().unwrap_or(u64::MAX),
                    round["release_step_ms"].as_u64().unwrap_or(u64::MAX),
                ));
            }
        }
        if !raised && !delays_told.is_empty() {
            chief_client
                .set_broadcast_delay(request(9, 300_000))
                .await?;
            raised = true;
        }
    }
    // With the step five minutes are released in, which the pages tick the clocks behind.
    assert_eq!(delays_told, [(0, 0), (300_000, 5_000)]);
    Ok(())
}

//! Reads never wait on NATS: with the NATS server frozen while a ruling is being appended, the
//! game service still answers games and claims at once from what it has folded; its health says
//! NOT_SERVING while no progress can be made, and SERVING again once NATS answers.

mod support;

use std::time::Duration;

use anyhow::{Context as _, bail};
use boardcast_schema::game::v1::{
    ActRequest, Annotation, ArbiterAction, ClaimKind, EvaluateClaimRequest, GetGameRequest,
    ListGamesRequest, arbiter_action::Action,
};
use boardcast_testkit::{GameService, TestNats};
use tonic_health::pb::{
    HealthCheckRequest, health_check_response::ServingStatus, health_client::HealthClient,
};

/// The health the service reports for its gRPC API.
async fn health(service: &GameService) -> anyhow::Result<ServingStatus> {
    let channel = tonic::transport::Endpoint::from_shared(service.url())?
        .connect()
        .await?;
    let status = HealthClient::new(channel)
        .check(HealthCheckRequest {
            service: "boardcast.game.v1.GameService".into(),
        })
        .await?
        .into_inner();
    Ok(status.status())
}

async fn wait_for_health(service: &GameService, wanted: ServingStatus) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let now = health(service).await?;
        if now == wanted {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            bail!("health stayed {now:?}, never {wanted:?}");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn reads_are_answered_while_an_append_waits_on_a_frozen_nats() -> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let service = GameService::start(&nats.url())?;
    let pgn = support::write_pgn()?;
    let status = support::simulate(pgn.path(), &nats.url(), &service.url())?.status()?;
    anyhow::ensure!(status.success(), "boardcast simulate failed");
    let js = async_nats::jetstream::new(async_nats::connect(nats.url()).await?);
    support::drained(&js).await?;
    let mut client = service.client().await?;
    let games = client
        .list_games(ListGamesRequest::default())
        .await?
        .into_inner()
        .games;
    let game = games.first().context("a game")?.clone();
    assert_eq!(health(&service).await?, ServingStatus::Serving);
    // A game nobody set up, looked up in the log.
    let unknown = client
        .get_game(GetGameRequest {
            game_id: "nobody-r1-b1".into(),
        })
        .await
        .map(|_| ())
        .map_err(|status| status.code());
    assert_eq!(unknown, Err(tonic::Code::NotFound));

    // NATS freezes; a ruling starts and waits on it.
    nats.server.pause()?;
    let ruling = {
        let mut client = service.client().await?;
        let game_id = game.game_id.clone();
        tokio::spawn(async move {
            client
                .act(ActRequest {
                    game_id,
                    action: Some(ArbiterAction {
                        action: Some(Action::Annotation(Annotation {
                            text: "written while NATS was frozen".into(),
                        })),
                        ..Default::default()
                    }),
                    request_id: boardcast_kit::client::new_request_id(),
                })
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!ruling.is_finished(), "the ruling waits on NATS");

    // Reads are answered at once from the folded state.
    let answered = tokio::time::timeout(Duration::from_secs(2), async {
        let state = client
            .get_game(GetGameRequest {
                game_id: game.game_id.clone(),
            })
            .await?
            .into_inner();
        let listed = client
            .list_games(ListGamesRequest::default())
            .await?
            .into_inner()
            .games
            .len();
        let verdict = client
            .evaluate_claim(EvaluateClaimRequest {
                game_id: game.game_id.clone(),
                kind: ClaimKind::Threefold as i32,
                ..Default::default()
            })
            .await;
        // An id no game can have is not looked up in the log.
        let no_such = client
            .get_game(GetGameRequest {
                game_id: "no.such*game".into(),
            })
            .await
            .map(|_| ())
            .map_err(|status| status.code());
        anyhow::Ok((state, listed, verdict, no_such))
    })
    .await
    .context("a read waited on the frozen NATS")??;
    assert_eq!(answered.0.last_game_seq, game.last_game_seq);
    assert_eq!(answered.1, games.len());
    assert_eq!(answered.3, Err(tonic::Code::NotFound));

    // No progress while NATS stays frozen: health says so.
    wait_for_health(&service, ServingStatus::NotServing).await?;

    // NATS answers again: the ruling is recorded (or refused with a status to retry), and the
    // service is healthy again.
    nats.server.resume()?;
    let outcome = tokio::time::timeout(Duration::from_secs(60), ruling)
        .await
        .context("the ruling never finished")??;
    if let Err(status) = &outcome {
        assert!(
            matches!(
                status.code(),
                tonic::Code::Unavailable | tonic::Code::Aborted | tonic::Code::DeadlineExceeded
            ),
            "{status:?}"
        );
    }
    wait_for_health(&service, ServingStatus::Serving).await?;
    Ok(())
}

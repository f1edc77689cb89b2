//! The game service's arbiter-facing API as a client uses it: claims judged from the log,
//! the state at any log entry, a round's events, arbiter actions recorded with their author.

use std::{process::Command, time::Duration};

use anyhow::Context as _;
use boardcast_schema::game::v1::{
    ActRequest, ArbiterAction, ClaimKind, DrawAgreed, EvaluateClaimRequest, GamePosition,
    GameStarted, GetGameAtRequest, GetGameRequest, SideAction, Source, StreamRoundEventsRequest,
    arbiter_action::Action, game_event::Kind,
};
use boardcast_testkit::{GameService, TestNats, program};
use futures::StreamExt;

const GAME: &str = "arbiters-open-r1-b1";

#[tokio::test(flavor = "multi_thread")]
async fn claims_history_and_actions_through_grpc() -> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let service = GameService::start(&nats.url())?;
    let pgn = tempfile::NamedTempFile::new()?;
    std::fs::write(
        pgn.path(),
        "[Event \"Arbiters Open\"]\n[Round \"1.1\"]\n[White \"A\"]\n[Black \"B\"]\n[Result \"*\"]\n\n\
         1. Nf3 Nf6 2. Ng1 Ng8 3. Nf3 Nf6 4. Ng1 Ng8 *\n",
    )?;
    let status = Command::new(program("boardcast")?)
        .env("BOARDCAST_TOKEN", boardcast_testkit::admin_token())
        .arg("simulate")
        .arg("--pgn")
        .arg(pgn.path())
        .args(["--boards", "1", "--speed", "max", "--nats", &nats.url()])
        .args(["--game-service", &service.url()])
        .status()?;
    assert!(status.success());

    let mut client = boardcast_testkit::admin_client(&service.url()).await?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let state = loop {
        let state = client
            .get_game(GetGameRequest {
                game_id: GAME.into(),
            })
            .await?
            .into_inner();
        if state.moves.len() == 8 {
            break state;
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "moves did not arrive"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };

    // White claims a threefold repetition: the start position stood after plies 0, 4 and 8.
    let verdict = client
        .evaluate_claim(EvaluateClaimRequest {
            game_id: GAME.into(),
            kind: ClaimKind::Threefold as i32,
            ..Default::default()
        })
        .await?
        .into_inner();
    assert_eq!(verdict.verdict, "upheld", "{verdict:?}");
    let plies: Vec<u32> = verdict.occurrences.iter().map(|o| o.ply).collect();
    assert_eq!(plies, vec![0, 4, 8]);
    assert!(
        verdict.unconfirmed.is_empty(),
        "every move was completed by a clock press"
    );
    assert!(
        verdict
            .occurrences
            .iter()
            .all(|o| o.game_seq >= 1 && o.game_seq <= state.last_game_seq)
    );
    // A claim with an intended move that is not legal is refused with a reason.
    let refused = client
        .evaluate_claim(EvaluateClaimRequest {
            game_id: GAME.into(),
            kind: ClaimKind::Threefold as i32,
            intended_move: "Ke3".into(),
            ..Default::default()
        })
        .await
        .expect_err("refused");
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);

    // The game as it stood after the log entry that completed the 2nd move.
    let second_move_seq = verdict.occurrences[1].game_seq; // the 4th move's entry
    let earlier = client
        .get_game_at(GetGameAtRequest {
            game_id: GAME.into(),
            game_seq: second_move_seq,
        })
        .await?
        .into_inner();
    assert_eq!(earlier.moves.len(), 4);
    assert_eq!(earlier.last_game_seq, second_move_seq);
    let out_of_range = client
        .get_game_at(GetGameAtRequest {
            game_id: GAME.into(),
            game_seq: state.last_game_seq + 1,
        })
        .await
        .expect_err("beyond the log");
    assert_eq!(out_of_range.code(), tonic::Code::OutOfRange);

    // Arbiter actions are recorded with the authenticated arbiter as the actor, and need a
    // request id so that a retry records nothing twice.
    let smith = boardcast_testkit::TestUsers::shared()?.add(
        "ia-smith",
        &[boardcast_access::Grant {
            tournament: "arbiters-open".into(),
            role: boardcast_access::Role::ChiefArbiter,
            boards: Vec::new(),
        }],
    )?;
    service.wait_for_user(&smith).await?;
    let mut client = service.client_as(&smith).await?;
    let agreed = ArbiterAction {
        action: Some(Action::DrawAgreed(DrawAgreed {})),
        ..Default::default()
    };
    let without_id = client
        .act(ActRequest {
            game_id: GAME.into(),
            action: Some(agreed.clone()),
            request_id: String::new(),
        })
        .await
        .expect_err("a request id is required");
    assert_eq!(without_id.code(), tonic::Code::InvalidArgument);
    let request_id = boardcast_kit::client::new_request_id();
    let agree = ActRequest {
        game_id: GAME.into(),
        action: Some(agreed),
        request_id: request_id.clone(),
    };
    let after = client
        .act(agree.clone())
        .await?
        .into_inner()
        .state
        .context("the state after the action")?;
    assert_ne!(after.result, 0, "the draw ends the game");
    // The same request again (a retry after a timeout): answered, nothing recorded twice.
    let retried = client
        .act(agree)
        .await?
        .into_inner()
        .state
        .context("the state after the retry")?;
    assert_eq!(retried.last_game_seq, after.last_game_seq);
    let resign = ArbiterAction {
        action: Some(Action::Resignation(SideAction {
            side: "white".into(),
            ..Default::default()
        })),
        ..Default::default()
    };
    let reused = client
        .act(ActRequest {
            game_id: GAME.into(),
            action: Some(resign.clone()),
            request_id,
        })
        .await
        .expect_err("the id belongs to another action");
    assert_eq!(reused.code(), tonic::Code::AlreadyExists);
    let late = client
        .act(ActRequest {
            game_id: GAME.into(),
            action: Some(resign),
            request_id: boardcast_kit::client::new_request_id(),
        })
        .await
        .expect_err("the game is over");
    assert_eq!(late.code(), tonic::Code::FailedPrecondition);
    let mut client = service.client().await?;

    // Two more games: one of another tournament whose id happens to begin like this round's game
    // ids, then one of this round. The round's stream has the second, never the first.
    for (tournament, round, board_number) in
        [("arbiters-open-r1-b2", 3, 5), ("arbiters-open", 1, 2)]
    {
        client
            .create_game(boardcast_testkit::create_request(GameStarted {
                round,
                time_control: boardcast_testkit::two_hours(),
                ..boardcast_testkit::game_on_board(
                    tournament,
                    board_number,
                    &format!("{tournament}-{board_number}"),
                )
            }))
            .await?;
    }

    // The round's event stream carries the game's whole log, the arbiter's action included.
    let mut events = client
        .stream_round_events(StreamRoundEventsRequest {
            tournament_id: "arbiters-open".into(),
            round: 1,
            seen: Vec::new(),
        })
        .await?
        .into_inner();
    let mut arbiter_actor = None;
    for _ in 0..after.last_game_seq {
        let event = tokio::time::timeout(Duration::from_secs(10), events.next())
            .await?
            .context("stream ended")??;
        assert_eq!(event.game_id, GAME);
        if let Some(Kind::Arbiter(_)) = event.kind {
            let provenance = event.provenance.context("provenance")?;
            assert_eq!(provenance.source, Source::Arbiter as i32);
            arbiter_actor = Some(provenance.actor);
        }
    }
    assert_eq!(arbiter_actor.as_deref(), Some("ia-smith"));
    let next = tokio::time::timeout(Duration::from_secs(10), events.next())
        .await?
        .context("stream ended")??;
    assert_eq!(
        next.game_id, "arbiters-open-r1-b2",
        "the round's other game"
    );

    // A client that reconnects after the game's tenth entry gets the rest only.
    let mut events = client
        .stream_round_events(StreamRoundEventsRequest {
            tournament_id: "arbiters-open".into(),
            round: 1,
            seen: vec![GamePosition {
                game_id: GAME.into(),
                game_seq: 10,
            }],
        })
        .await?
        .into_inner();
    let first = tokio::time::timeout(Duration::from_secs(10), events.next())
        .await?
        .context("stream ended")??;
    assert_eq!((first.game_id.as_str(), first.game_seq), (GAME, 11));
    Ok(())
}

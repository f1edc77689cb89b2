//! The chief arbiter assigns arbiters to boards in the running system: every instance of the
//! game service applies the assignment (also after a restart), it replaces the users file's
//! boards, a retry records it once, and every refusal is a clear status that changes nothing.
//! Through the arbiter service's dashboard too.

use std::time::Duration;

use anyhow::{Context as _, ensure};
use boardcast_access::{Grant, Role};
use boardcast_kit::{client::GameClient, nats::ASSIGNMENTS_STREAM, nats_access::Role as NatsRole};
use boardcast_schema::game::v1::{
    ActRequest, Annotation, ArbiterAction, AssignArbiterRequest, CreateGameRequest, GameStarted,
    ListAssignmentsRequest, WhoAmIRequest, arbiter_action::Action,
};
use boardcast_testkit::{ArbiterService, GameService, TEST_PASSWORD, TestNats, TestUsers};
use serde_json::json;
use tonic::Code;

const TOURNAMENT: &str = "assign-open";

fn game(board_number: u32) -> GameStarted {
    boardcast_testkit::game_on_board(TOURNAMENT, board_number, &format!("assign-{board_number}"))
}

fn grant(tournament: &str, role: Role, boards: &[u32]) -> Grant {
    Grant {
        tournament: tournament.into(),
        role,
        boards: boards.to_vec(),
    }
}

fn assign(user: &str, boards: &[u32], request_id: &str) -> AssignArbiterRequest {
    AssignArbiterRequest {
        tournament_id: TOURNAMENT.into(),
        user: user.into(),
        boards: boards.to_vec(),
        request_id: request_id.into(),
    }
}

/// Whether `client` may write a note on board `board_number`'s game: `Ok` or the refusal's code.
async fn rules_on(client: &mut GameClient, board_number: u32) -> anyhow::Result<Result<(), Code>> {
    let answer = client
        .act(ActRequest {
            game_id: boardcast_game::game_id_for(TOURNAMENT, 1, board_number),
            action: Some(ArbiterAction {
                action: Some(Action::Annotation(Annotation {
                    text: "scoresheets checked".into(),
                })),
                ..Default::default()
            }),
            request_id: boardcast_kit::client::new_request_id(),
        })
        .await;
    Ok(answer.map(|_| ()).map_err(|status| status.code()))
}

/// The assignments as (user, boards) that a service lists.
async fn listed(service: &GameService) -> anyhow::Result<Vec<(String, Vec<u32>)>> {
    let mut client = service.client().await?;
    let answer = client
        .list_assignments(ListAssignmentsRequest {
            tournament_id: TOURNAMENT.into(),
        })
        .await?
        .into_inner();
    Ok(answer
        .assignments
        .into_iter()
        .map(|a| (a.user, a.boards))
        .collect())
}

/// Waits until `check` holds, for up to 10 s.
async fn eventually<F, Fut>(what: &str, mut check: F) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<bool>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !check().await? {
        ensure!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_chief_arbiter_assigns_boards_that_every_instance_applies() -> anyhow::Result<()> {
    let nats = TestNats::start_secured(&[])?;
    let url = nats.url_for(&NatsRole::GameService)?;
    let a = GameService::start(&url)?;
    let mut b = GameService::start(&url)?;
    let users = TestUsers::shared()?;
    let chief = users.add("ca-jones", &[grant(TOURNAMENT, Role::ChiefArbiter, &[])])?;
    let smith = users.add("ia-smith", &[grant(TOURNAMENT, Role::Arbiter, &[1])])?;
    let brown = users.add("ia-brown", &[grant(TOURNAMENT, Role::Arbiter, &[])])?;
    let other_chief = users.add("ca-rapid", &[grant("rapid", Role::ChiefArbiter, &[])])?;
    let observer = users.add("ob-white", &[grant(TOURNAMENT, Role::Observer, &[])])?;
    for token in [&chief, &smith, &brown, &other_chief, &observer] {
        a.wait_for_user(token).await?;
        b.wait_for_user(token).await?;
    }
    let mut admin = a.client().await?;
    for board in [1, 2] {
        admin
            .create_game(CreateGameRequest {
                game: Some(game(board)),
                replace_unfinished: false,
                request_id: boardcast_kit::client::new_request_id(),
                revise: false,
            })
            .await?;
    }

    // Refusals: each a clear status, and nothing is assigned anywhere.
    let id = boardcast_kit::client::new_request_id;
    let refusals: [(&str, &str, AssignArbiterRequest, Code); 10] = [
        (
            "an arbiter",
            &smith,
            assign("ia-smith", &[1, 2], &id()),
            Code::PermissionDenied,
        ),
        (
            "an observer",
            &observer,
            assign("ia-smith", &[2], &id()),
            Code::PermissionDenied,
        ),
        (
            "another tournament's chief",
            &other_chief,
            assign("ia-smith", &[2], &id()),
            Code::PermissionDenied,
        ),
        (
            "no credential",
            "",
            assign("ia-smith", &[2], &id()),
            Code::Unauthenticated,
        ),
        (
            "a user who is no arbiter",
            &chief,
            assign("ob-white", &[2], &id()),
            Code::FailedPrecondition,
        ),
        (
            "an unknown user",
            &chief,
            assign("nobody", &[2], &id()),
            Code::FailedPrecondition,
        ),
        (
            "board 0",
            &chief,
            assign("ia-smith", &[0], &id()),
            Code::InvalidArgument,
        ),
        (
            "every tournament",
            &chief,
            AssignArbiterRequest {
                tournament_id: "*".into(),
                ..assign("ia-smith", &[2], &id())
            },
            Code::InvalidArgument,
        ),
        (
            "no request id",
            &chief,
            assign("ia-smith", &[2], ""),
            Code::InvalidArgument,
        ),
        (
            "a request id with a line break",
            &chief,
            assign("ia-smith", &[2], "a\nb"),
            Code::InvalidArgument,
        ),
    ];
    for (who, token, request, code) in refusals {
        let mut client = if token.is_empty() {
            boardcast_kit::client::game_client(&a.url(), None).await?
        } else {
            a.client_as(token).await?
        };
        let refused = client
            .assign_arbiter(request)
            .await
            .err()
            .with_context(|| format!("{who} was not refused"))?;
        assert_eq!(refused.code(), code, "{who}: {refused:?}");
        assert!(!refused.message().is_empty(), "{who}");
    }
    assert_eq!(listed(&a).await?, []);
    assert_eq!(listed(&b).await?, []);
    // Who rules where, with the users file's boards: for those who rule here only.
    let arbiters = |token: String| {
        let a = &a;
        async move {
            let answer = a
                .client_as(&token)
                .await?
                .list_assignments(ListAssignmentsRequest {
                    tournament_id: TOURNAMENT.into(),
                })
                .await?
                .into_inner();
            anyhow::Ok(
                answer
                    .arbiters
                    .into_iter()
                    .map(|a| (a.user, a.every_board, a.boards))
                    .collect::<Vec<_>>(),
            )
        }
    };
    let every_arbiter = arbiters(smith.clone()).await?;
    for expected in [
        ("ca-jones".to_owned(), true, vec![]),
        ("ia-smith".to_owned(), false, vec![1]),
        ("ia-brown".to_owned(), false, vec![]),
    ] {
        assert!(every_arbiter.contains(&expected), "{every_arbiter:?}");
    }
    assert_eq!(arbiters(observer.clone()).await?, [], "an observer");
    let mut smith_a = a.client_as(&smith).await?;
    let mut smith_b = b.client_as(&smith).await?;
    assert_eq!(
        rules_on(&mut smith_a, 1).await?,
        Ok(()),
        "the users file's board"
    );
    assert_eq!(
        rules_on(&mut smith_a, 2).await?,
        Err(Code::PermissionDenied)
    );

    // The chief arbiter moves ia-smith from board 1 to board 2 on instance A (sent twice: a
    // retry after an unknown outcome).
    let mut chief_a = a.client_as(&chief).await?;
    let request = assign("ia-smith", &[2], &id());
    let recorded = chief_a.assign_arbiter(request.clone()).await?.into_inner();
    assert_eq!(
        (recorded.boards.as_slice(), recorded.assigned_by.as_str()),
        (&[2][..], "ca-jones")
    );
    let retried = chief_a.assign_arbiter(request.clone()).await?.into_inner();
    assert_eq!(
        retried, recorded,
        "a retry is answered with what was recorded"
    );
    // The same request id with another decision is refused.
    let reused = chief_a
        .assign_arbiter(AssignArbiterRequest {
            boards: vec![3],
            ..request
        })
        .await
        .err()
        .context("a reused request id was accepted")?;
    assert_eq!(reused.code(), Code::AlreadyExists, "{reused:?}");
    assert_eq!(rules_on(&mut smith_a, 2).await?, Ok(()), "at once on A");
    assert_eq!(
        rules_on(&mut smith_a, 1).await?,
        Err(Code::PermissionDenied)
    );
    let who = smith_a.who_am_i(WhoAmIRequest {}).await?.into_inner();
    let assigned: Vec<(String, Vec<u32>)> = who
        .assignments
        .into_iter()
        .map(|a| (a.tournament_id, a.boards))
        .collect();
    assert_eq!(assigned, [(TOURNAMENT.to_owned(), vec![2])]);
    // Instance B takes it from NATS.
    eventually("B applies the assignment", || {
        let mut client = smith_b.clone();
        async move { Ok(rules_on(&mut client, 1).await? == Err(Code::PermissionDenied)) }
    })
    .await?;
    assert_eq!(rules_on(&mut smith_b, 2).await?, Ok(()));
    assert_eq!(listed(&b).await?, [("ia-smith".to_owned(), vec![2])]);
    // Recorded once, with who did it.
    let admin_nats = boardcast_kit::nats::connect(&nats.url_for(&NatsRole::Admin)?, "test").await?;
    let js = async_nats::jetstream::new(admin_nats);
    let info = js.get_stream(ASSIGNMENTS_STREAM).await?.get_info().await?;
    assert_eq!(info.state.messages, 1, "the retry recorded nothing twice");

    // Restarted, B knows it before its first answer.
    assert!(b.process.stop(Duration::from_secs(30))?, "B stops");
    drop(b);
    let b = GameService::start(&url)?;
    let mut smith_b = b.client_as(&smith).await?;
    assert_eq!(
        rules_on(&mut smith_b, 1).await?,
        Err(Code::PermissionDenied)
    );
    assert_eq!(rules_on(&mut smith_b, 2).await?, Ok(()));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_dashboard_assigns_for_the_chief_arbiter_only() -> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let game_service = GameService::start(&nats.url())?;
    let arbiter = ArbiterService::start(&nats.url(), &game_service.url())?;
    let users = TestUsers::shared()?;
    let chief = users.add("ca-green", &[grant(TOURNAMENT, Role::ChiefArbiter, &[])])?;
    let smith = users.add("ia-black", &[grant(TOURNAMENT, Role::Arbiter, &[])])?;
    game_service.wait_for_user(&chief).await?;
    game_service.wait_for_user(&smith).await?;
    let path = format!("/api/tournaments/{TOURNAMENT}/assignments");
    let body = |request_id: String, boards: &str| json!({ "request_id": request_id, "user": "ia-black", "boards": boards });

    let arbiter_session = arbiter.login("ia-black", TEST_PASSWORD).await?;
    let listed = arbiter_session.get(&path).await?;
    assert_eq!(listed["may_assign"], false);
    let refused = arbiter_session
        .post(&path, &body(arbiter_session.request_id().await?, "1-3"))
        .await;
    let refused = refused
        .err()
        .context("an arbiter assigned boards")?
        .to_string();
    assert!(
        refused.contains("403") && refused.contains("assigning arbiters"),
        "{refused}"
    );

    let chief_session = arbiter.login("ca-green", TEST_PASSWORD).await?;
    assert_eq!(chief_session.get(&path).await?["may_assign"], true);
    let bad = chief_session
        .post(&path, &body(chief_session.request_id().await?, "0, 2"))
        .await;
    assert!(bad.err().is_some_and(|e| e.to_string().contains("400")));
    assert_eq!(chief_session.get(&path).await?["assignments"], json!([]));

    let answer = chief_session
        .post(&path, &body(chief_session.request_id().await?, "1-3, 7"))
        .await?;
    assert_eq!(
        answer["message"],
        format!("Recorded: ia-black rules on boards 1-3, 7 of {TOURNAMENT} now.")
    );
    let listed = arbiter_session.get(&path).await?;
    assert_eq!(listed["assignments"][0]["boards"], json!([1, 2, 3, 7]));
    assert_eq!(listed["assignments"][0]["assigned_by"], "ca-green");
    Ok(())
}

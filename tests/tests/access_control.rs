//! Who may do what on the game service, with real processes: every refusal is a clear status
//! and changes nothing; retries and concurrent set-ups of one board record one game.

use std::time::Duration;

use anyhow::Context as _;

use boardcast_access::{Grant, Role, SessionClaims};
use boardcast_schema::game::v1::{
    ActRequest, Annotation, ArbiterAction, GameStarted, GetGameRequest, ListGamesRequest,
    LoginRequest, PairRoundRequest, Pairing, Player, TimeControl, TimePeriod, WhoAmIRequest,
    arbiter_action::Action,
};
use boardcast_testkit::{GameService, TEST_PASSWORD, TestNats, TestUsers, create_request};
use tonic::Code;

const TOURNAMENT: &str = "access-open";

fn player(name: &str) -> Option<Player> {
    Some(Player {
        name: name.into(),
        ..Default::default()
    })
}

fn time_control() -> Option<TimeControl> {
    Some(TimeControl {
        periods: vec![TimePeriod {
            moves: 0,
            base_ms: 5_400_000,
            increment_ms: 30_000,
            ..Default::default()
        }],
    })
}

fn game(tournament: &str, board_number: u32) -> GameStarted {
    boardcast_testkit::game_on_board(
        tournament,
        board_number,
        &format!("{tournament}-{board_number}"),
    )
}

fn note(game_id: &str, text: &str) -> ActRequest {
    ActRequest {
        game_id: game_id.into(),
        action: Some(ArbiterAction {
            action: Some(Action::Annotation(Annotation { text: text.into() })),
            ..Default::default()
        }),
        request_id: boardcast_kit::client::new_request_id(),
    }
}

fn grant(tournament: &str, role: Role, boards: &[u32]) -> Grant {
    Grant {
        tournament: tournament.into(),
        role,
        boards: boards.to_vec(),
    }
}

/// The game's last log entry, read as the admin.
async fn log_length(service: &GameService, game_id: &str) -> anyhow::Result<u64> {
    Ok(service
        .client()
        .await?
        .get_game(GetGameRequest {
            game_id: game_id.into(),
        })
        .await?
        .into_inner()
        .last_game_seq)
}

#[tokio::test(flavor = "multi_thread")]
async fn every_refusal_is_clear_and_changes_nothing() -> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let service = GameService::start(&nats.url())?;
    let users = TestUsers::shared()?;
    let observer = users.add("observer-olga", &[grant(TOURNAMENT, Role::Observer, &[])])?;
    let arbiter = users.add("arbiter-ann", &[grant(TOURNAMENT, Role::Arbiter, &[2])])?;
    let stranger = users.add(
        "arbiter-bob",
        &[grant("other-open", Role::Arbiter, &[1, 2])],
    )?;
    let operator = users.add("operator-otto", &[grant(TOURNAMENT, Role::Operator, &[])])?;
    for token in [&observer, &arbiter, &stranger, &operator] {
        service.wait_for_user(token).await?;
    }
    let mut admin = service.client().await?;
    for board in [1, 2] {
        admin
            .create_game(create_request(game(TOURNAMENT, board)))
            .await?;
    }
    let board_1 = "access-open-r1-b1";
    let board_2 = "access-open-r1-b2";
    let before = (
        log_length(&service, board_1).await?,
        log_length(&service, board_2).await?,
    );

    // No credential: UNAUTHENTICATED for changes and (by default) reads.
    let mut anonymous = boardcast_kit::client::game_client(&service.url(), None).await?;
    let refused = anonymous
        .act(note(board_1, "x"))
        .await
        .expect_err("no credential");
    assert_eq!(refused.code(), Code::Unauthenticated, "{refused:?}");
    let refused = anonymous
        .create_game(create_request(game(TOURNAMENT, 3)))
        .await
        .expect_err("no credential");
    assert_eq!(refused.code(), Code::Unauthenticated);
    let refused = anonymous
        .list_games(ListGamesRequest::default())
        .await
        .expect_err("reads need a credential too");
    assert_eq!(refused.code(), Code::Unauthenticated);

    // A made-up or altered token.
    let mut forged = service
        .client_as("bct1.admin.abcdefgh.not-the-secret")
        .await?;
    let refused = forged
        .act(note(board_1, "x"))
        .await
        .expect_err("unknown token");
    assert_eq!(refused.code(), Code::Unauthenticated);
    assert!(
        refused.message().contains("unknown or revoked"),
        "{}",
        refused.message()
    );

    // Wrong password, then the right one; the session works until it expires.
    let mut login = boardcast_kit::client::game_client(&service.url(), None).await?;
    let refused = login
        .login(LoginRequest {
            user: "arbiter-ann".into(),
            password: "not the password".into(),
        })
        .await
        .expect_err("wrong password");
    assert_eq!(refused.code(), Code::Unauthenticated);
    assert_eq!(refused.message(), "wrong user name or password");
    let session = login
        .login(LoginRequest {
            user: "arbiter-ann".into(),
            password: TEST_PASSWORD.into(),
        })
        .await?
        .into_inner();
    let mut by_session = service.client_as(&session.session_token).await?;
    let me = by_session.who_am_i(WhoAmIRequest {}).await?.into_inner();
    assert_eq!(me.user, "arbiter-ann");
    assert!(me.expires_unix_ms > boardcast_kit::now_unix_ms());
    let key = boardcast_kit::secrets::session_key(&users.session_key())?;
    let claims = SessionClaims::read_unverified(&session.session_token)?;
    let expired = key.issue(&SessionClaims {
        expires_unix_ms: boardcast_kit::now_unix_ms() - 1,
        ..claims.clone()
    });
    let mut late = service.client_as(&expired).await?;
    let refused = late.act(note(board_2, "x")).await.expect_err("expired");
    assert_eq!(refused.code(), Code::Unauthenticated);
    assert!(
        refused.message().contains("expired"),
        "{}",
        refused.message()
    );
    // A session signed with another key (another deployment's, or forged).
    let other_key = boardcast_kit::secrets::new_session_key().issue(&claims);
    let mut foreign = service.client_as(&other_key).await?;
    let refused = foreign
        .act(note(board_2, "x"))
        .await
        .expect_err("foreign key");
    assert_eq!(refused.code(), Code::Unauthenticated);

    // Roles: an observer reads but may not rule; an arbiter rules on the assigned board only;
    // an arbiter of another tournament rules on none of these; an operator sets up, never rules.
    let mut as_observer = service.client_as(&observer).await?;
    as_observer
        .get_game(GetGameRequest {
            game_id: board_1.into(),
        })
        .await?;
    let refused = as_observer
        .act(note(board_1, "x"))
        .await
        .expect_err("observer");
    assert_eq!(refused.code(), Code::PermissionDenied);
    let mut as_arbiter = service.client_as(&arbiter).await?;
    let refused = as_arbiter
        .act(note(board_1, "x"))
        .await
        .expect_err("unassigned");
    assert_eq!(refused.code(), Code::PermissionDenied);
    assert!(
        refused.message().contains("not assigned board 1"),
        "{}",
        refused.message()
    );
    let mut as_stranger = service.client_as(&stranger).await?;
    let refused = as_stranger
        .act(note(board_2, "x"))
        .await
        .expect_err("other tournament");
    assert_eq!(refused.code(), Code::PermissionDenied);
    let refused = as_stranger
        .get_game(GetGameRequest {
            game_id: board_2.into(),
        })
        .await
        .expect_err("not even reads");
    assert_eq!(refused.code(), Code::PermissionDenied);
    let listed = as_stranger
        .list_games(ListGamesRequest::default())
        .await?
        .into_inner();
    assert!(
        listed.games.is_empty(),
        "another tournament's games are not listed"
    );
    let mut as_operator = service.client_as(&operator).await?;
    let refused = as_operator
        .act(note(board_1, "x"))
        .await
        .expect_err("operator");
    assert_eq!(refused.code(), Code::PermissionDenied);
    let refused = as_observer
        .create_game(create_request(game(TOURNAMENT, 3)))
        .await
        .expect_err("observer sets up nothing");
    assert_eq!(refused.code(), Code::PermissionDenied);
    let refused = as_arbiter
        .pair_round(PairRoundRequest {
            tournament_id: TOURNAMENT.into(),
            round: 2,
            time_control: time_control(),
            pairings: vec![Pairing {
                board_number: 1,
                board_id: "access-open-1".into(),
                white: player("A"),
                black: player("B"),
                start_fen: String::new(),
            }],
            request_id: boardcast_kit::client::new_request_id(),
            ..Default::default()
        })
        .await
        .expect_err("arbiters do not pair rounds");
    assert_eq!(refused.code(), Code::PermissionDenied);

    // Nothing of all that changed anything.
    assert_eq!(
        (
            log_length(&service, board_1).await?,
            log_length(&service, board_2).await?
        ),
        before
    );
    let games = admin
        .list_games(ListGamesRequest {
            tournament_id: TOURNAMENT.into(),
            round: 0,
        })
        .await?
        .into_inner()
        .games;
    assert_eq!(games.len(), 2, "no game was set up by a refused call");

    // What is allowed is recorded with the authenticated identity as the actor.
    let state = as_arbiter
        .act(note(board_2, "seen by Ann"))
        .await?
        .into_inner()
        .state
        .expect("state");
    assert_eq!(state.last_game_seq, before.1 + 1);
    let state = by_session
        .act(note(board_2, "by session"))
        .await?
        .into_inner()
        .state
        .expect("state");
    assert_eq!(state.last_game_seq, before.1 + 2);
    as_operator
        .create_game(create_request(game(TOURNAMENT, 3)))
        .await?;
    let events = events_of(&service, board_2).await?;
    let actors: Vec<&str> = events
        .iter()
        .filter_map(|e| e.provenance.as_ref().map(|p| p.actor.as_str()))
        .filter(|a| !a.is_empty())
        .collect();
    assert_eq!(actors, ["admin", "arbiter-ann", "arbiter-ann"]);
    Ok(())
}

/// The game's events so far, streamed as the admin.
async fn events_of(
    service: &GameService,
    game_id: &str,
) -> anyhow::Result<Vec<boardcast_schema::game::v1::GameEvent>> {
    use futures::StreamExt as _;
    let mut client = service.client().await?;
    let last = log_length(service, game_id).await?;
    let mut stream = client
        .stream_game_events(boardcast_schema::game::v1::StreamGameEventsRequest {
            game_id: game_id.into(),
            from_game_seq: 1,
        })
        .await?
        .into_inner();
    let mut events = Vec::new();
    while (events.len() as u64) < last {
        let event = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await?
            .ok_or_else(|| anyhow::anyhow!("the stream ended"))??;
        events.push(event);
    }
    Ok(events)
}

#[tokio::test(flavor = "multi_thread")]
async fn repeated_failed_logins_are_slowed_down() -> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let service = GameService::start(&nats.url())?;
    let users = TestUsers::shared()?;
    let token = users.add("slow-sam", &[grant(TOURNAMENT, Role::Observer, &[])])?;
    service.wait_for_user(&token).await?;
    let mut client = boardcast_kit::client::game_client(&service.url(), None).await?;
    let attempt = |password: &'static str| LoginRequest {
        user: "slow-sam".into(),
        password: password.into(),
    };
    for _ in 0..5 {
        let refused = client.login(attempt("wrong")).await.expect_err("wrong");
        assert_eq!(refused.code(), Code::Unauthenticated);
    }
    // Now even the right password has to wait, and the answer says how long.
    let refused = client
        .login(attempt(TEST_PASSWORD))
        .await
        .expect_err("slowed down");
    assert_eq!(refused.code(), Code::ResourceExhausted);
    assert!(
        refused.message().contains("try again in"),
        "{}",
        refused.message()
    );
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    client.login(attempt(TEST_PASSWORD)).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_flood_of_logins_keeps_memory_bounded_and_the_user_still_logs_in_from_elsewhere()
-> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let service = GameService::start(&nats.url())?;
    let pid = service.process.pid().context("the service's pid")?;
    let users = TestUsers::shared()?;
    let token = users.add("chief-cora", &[grant(TOURNAMENT, Role::ChiefArbiter, &[])])?;
    service.wait_for_user(&token).await?;
    let peak = || {
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("VmHWM:"))
                    .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            })
            .unwrap_or(0)
    };
    let before = peak();

    // An attacker at another address: 200 logins at once as the chief arbiter, and names of a
    // megabyte.
    let attacker_channel = tonic::transport::Endpoint::from_shared(service.url())?
        .local_address(Some("127.0.0.2".parse()?))
        .connect()
        .await?;
    let attacker =
        boardcast_schema::game::v1::game_service_client::GameServiceClient::new(attacker_channel);
    let attempts = (0..210).map(|n| {
        let mut client = attacker.clone();
        let user = if n < 200 {
            "chief-cora".to_owned()
        } else {
            "x".repeat(1 << 20)
        };
        async move {
            client
                .login(LoginRequest {
                    user,
                    password: format!("guess-{n}"),
                })
                .await
                .err()
                .map(|status| status.code())
        }
    });
    let codes = futures::future::join_all(attempts).await;
    assert!(
        codes.iter().all(|c| matches!(
            c,
            Some(Code::Unauthenticated | Code::ResourceExhausted | Code::Unavailable)
        )),
        "{codes:?}"
    );
    // Bounded: a few hashes of 19 MiB at once and the megabyte names' buffers, where one hash
    // per attempt at once would be some 200 × 19 MiB.
    let grew_mb = peak().saturating_sub(before) / 1024;
    eprintln!("peak resident memory grew by {grew_mb} MB over the flood");
    assert!(grew_mb < 300, "grew by {grew_mb} MB");

    // The chief arbiter, at the hall's address, logs in; the attacker's address is slowed down.
    let mut hall = boardcast_kit::client::game_client(&service.url(), None).await?;
    hall.login(LoginRequest {
        user: "chief-cora".into(),
        password: TEST_PASSWORD.into(),
    })
    .await?;
    let mut attacker = attacker;
    let refused = attacker
        .login(LoginRequest {
            user: "chief-cora".into(),
            password: TEST_PASSWORD.into(),
        })
        .await
        .expect_err("slowed down at the attacker's address");
    assert_eq!(refused.code(), Code::ResourceExhausted);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_set_ups_of_one_board_make_one_game_across_instances() -> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let first = GameService::start(&nats.url())?;
    let second = GameService::start(&nats.url())?;
    let urls = [first.url(), second.url()];
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..20 {
        let url = urls[i % 2].clone();
        calls.spawn(async move {
            let mut client = boardcast_testkit::admin_client(&url).await?;
            let outcome = client
                .create_game(create_request(game("race-open", 1)))
                .await;
            anyhow::Ok(outcome.map(|r| r.into_inner()))
        });
    }
    let mut succeeded = Vec::new();
    let mut refused = 0;
    while let Some(outcome) = calls.join_next().await {
        match outcome?? {
            Ok(created) => succeeded.push(created),
            Err(status) => {
                assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
                refused += 1;
            }
        }
    }
    assert_eq!(succeeded.len(), 1, "exactly one set-up succeeds");
    assert!(succeeded[0].created);
    assert_eq!(refused, 19);
    let games = first
        .client()
        .await?
        .list_games(ListGamesRequest {
            tournament_id: "race-open".into(),
            round: 0,
        })
        .await?
        .into_inner()
        .games;
    assert_eq!(games.len(), 1);
    assert_eq!(games[0].last_game_seq, 1, "one GameStarted, never two");

    // A retry of a set-up with its own request id is answered with the game it created.
    let request = create_request(game("race-open", 2));
    let mut client = first.client().await?;
    let created = client.create_game(request.clone()).await?.into_inner();
    assert!(created.created);
    let again = second
        .client()
        .await?
        .create_game(request)
        .await?
        .into_inner();
    assert_eq!((again.game_id, again.created), (created.game_id, false));
    Ok(())
}

/// Made-up names are never slowed down (each is a new name), yet each costs a password hash:
/// the service hashes a stand-in so that an unknown name takes as long as a wrong password. A
/// flood of them from one address must not keep the chief arbiter, at another, waiting behind
/// it: hashes are given round the addresses, and one address may have only a few waiting.
#[tokio::test(flavor = "multi_thread")]
async fn a_flood_of_made_up_names_does_not_keep_the_chief_arbiter_waiting() -> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let service = GameService::start(&nats.url())?;
    let token =
        TestUsers::shared()?.add("chief-ella", &[grant(TOURNAMENT, Role::ChiefArbiter, &[])])?;
    service.wait_for_user(&token).await?;

    // The attacker at 127.0.0.2 keeps 2,400 logins under made-up names in flight, over twelve
    // connections (a server takes 200 calls at once on each), until the chief arbiter has
    // logged in. In arrival order, the chief arbiter's login would wait behind all of them.
    let mut connections = Vec::new();
    for _ in 0..12 {
        let channel = tonic::transport::Endpoint::from_shared(service.url())?
            .local_address(Some("127.0.0.2".parse()?))
            .connect()
            .await?;
        connections
            .push(boardcast_schema::game::v1::game_service_client::GameServiceClient::new(channel));
    }
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // The flood's attempts answered after their hash (refused as unknown), counted as they come.
    let hashed = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut flood = tokio::task::JoinSet::new();
    for n in 0..2_400usize {
        let mut client = connections[n % connections.len()].clone();
        let (done, hashed) = (done.clone(), hashed.clone());
        flood.spawn(async move {
            let mut codes = Vec::new();
            let mut attempt = 0u32;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let refused = client
                    .login(LoginRequest {
                        user: format!("nobody-{n}-{attempt}"),
                        password: "guess".into(),
                    })
                    .await
                    .err();
                if refused.as_ref().map(tonic::Status::code) == Some(Code::Unauthenticated) {
                    hashed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                codes.push(refused.map(|status| (status.code(), status.message().to_owned())));
                attempt += 1;
            }
            codes
        });
    }
    // The flood is under way: the service has refused some of it.
    tokio::time::sleep(Duration::from_secs(2)).await;

    let mut hall = boardcast_kit::client::game_client(&service.url(), None).await?;
    let hashed_before = hashed.load(std::sync::atomic::Ordering::Relaxed);
    let logged_in = hall
        .login(LoginRequest {
            user: "chief-ella".into(),
            password: TEST_PASSWORD.into(),
        })
        .await;
    let hashed_meanwhile = hashed.load(std::sync::atomic::Ordering::Relaxed) - hashed_before;
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut answers = Vec::new();
    while let Some(codes) = flood.join_next().await {
        answers.extend(codes?);
    }
    let logged_in = logged_in.context("the chief arbiter logs in during the flood")?;
    assert!(logged_in.into_inner().identity.is_some());
    // The chief arbiter's login waited for the hashes under way and the flood's next turn, not
    // for the flood's queue (in arrival order: every attempt that came before it).
    eprintln!("the flood had {hashed_meanwhile} attempts hashed while the chief arbiter waited");
    assert!(
        hashed_meanwhile < 50,
        "{hashed_meanwhile} of the flood's hashes went first"
    );
    // Every made-up name was refused, as unknown or as too many at once from that address.
    let busy = answers
        .iter()
        .filter(|a| matches!(a, Some((Code::Unavailable, _))))
        .count();
    assert!(
        answers
            .iter()
            .all(|a| matches!(a, Some((Code::Unauthenticated | Code::Unavailable, _)))),
        "{:?}",
        answers
            .iter()
            .find(|a| !matches!(a, Some((Code::Unauthenticated | Code::Unavailable, _))))
    );
    assert!(
        busy > 0,
        "the flood's address was never told it asks too often"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn failures_at_the_dashboard_do_not_lock_the_chief_arbiter_out() -> anyhow::Result<()> {
    let nats = TestNats::start()?;
    // The dashboard connects from 127.0.0.1: trusted to pass on who is logging in.
    let service = GameService::start_with(
        &nats.url(),
        boardcast_testkit::GameServiceOptions {
            args: vec!["--trusted-proxies".into(), "127.0.0.1".into()],
            ..Default::default()
        },
    )?;
    let token =
        TestUsers::shared()?.add("chief-dora", &[grant(TOURNAMENT, Role::ChiefArbiter, &[])])?;
    service.wait_for_user(&token).await?;
    let dashboard = boardcast_testkit::ArbiterService::start(&nats.url(), &service.url())?;

    // Two attackers at the dashboard, each guessing until the dashboard stops them: ten failures
    // for the chief arbiter reach the game service, more than it lets pass from one address.
    // (Without --trusted-proxies the game service counts them all against the dashboard's
    // address, and the chief arbiter is then refused too.)
    for address in ["127.0.0.2", "127.0.0.3"] {
        let attacker = reqwest::Client::builder()
            .local_address(Some(address.parse()?))
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        for guess in 0..8 {
            let status = attacker
                .post(dashboard.url("/login"))
                .header("origin", dashboard.url(""))
                .form(&[
                    ("user", "chief-dora"),
                    ("password", &format!("guess-{guess}")),
                ])
                .send()
                .await?
                .status();
            assert!(
                [401, 429].contains(&status.as_u16()),
                "{address} guess {guess}: {status}"
            );
        }
    }
    // The chief arbiter, at another address, logs in through the same dashboard.
    let session = dashboard.login("chief-dora", TEST_PASSWORD).await?;
    assert_eq!(session.get("/api/me").await?["user"], "chief-dora");

    // A caller the game service does not trust cannot choose the address it is judged by: its
    // claims are ignored, its failures counted against its own address.
    let channel = tonic::transport::Endpoint::from_shared(service.url())?
        .local_address(Some("127.0.0.4".parse()?))
        .connect()
        .await?;
    let mut untrusted =
        boardcast_schema::game::v1::game_service_client::GameServiceClient::new(channel);
    let claiming = |password: &str, claimed: usize| {
        let mut request = tonic::Request::new(LoginRequest {
            user: "chief-dora".into(),
            password: password.into(),
        });
        request.metadata_mut().insert(
            boardcast_kit::client::CLIENT_ADDRESS_METADATA,
            format!("10.0.0.{claimed}").parse().expect("metadata"),
        );
        request
    };
    for n in 0..5 {
        let refused = untrusted
            .login(claiming("wrong", n))
            .await
            .expect_err("wrong");
        assert_eq!(refused.code(), Code::Unauthenticated, "{refused:?}");
    }
    let refused = untrusted
        .login(claiming(TEST_PASSWORD, 99))
        .await
        .expect_err("slowed down at its own address");
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    Ok(())
}

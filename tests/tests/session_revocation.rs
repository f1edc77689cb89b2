//! Sessions that end: a logout, a password change and a disabled user end the old session on
//! every instance, gRPC and dashboard alike, within seconds, and a disabled user's API token
//! too, also where it was checked before; API tokens expire and rotate.
//!
//! Two game services share one NATS, each with its own copy of the users file (as two hosts of a
//! hall have), and each with a dashboard in front. Only the first copy is changed: the second
//! instance learns of the change from NATS.

use std::time::Duration;

use boardcast_access::{EVERY_TOURNAMENT, Grant, Role};
use boardcast_schema::game::v1::WhoAmIRequest;
use boardcast_testkit::{
    GameService, GameServiceOptions, TEST_PASSWORD, TestNats, TestUsers,
    arbiter::{ArbiterService, ArbiterSession},
};
use tonic::Code;

/// The bound: every instance refuses an ended session within this.
const WITHIN: Duration = Duration::from_secs(5);

struct Hall {
    _nats: TestNats,
    games: [GameService; 2],
    dashboards: [ArbiterService; 2],
}

/// Two instances; the second reads a copy of the users file taken now.
async fn hall(users: &[&str]) -> anyhow::Result<(Hall, tempfile::TempDir)> {
    let test_users = TestUsers::shared()?;
    for user in users {
        test_users.add(
            user,
            &[Grant {
                tournament: EVERY_TOURNAMENT.to_owned(),
                role: Role::Observer,
                boards: vec![],
            }],
        )?;
    }
    let copy = tempfile::tempdir()?;
    let copied_users = copy.path().join("users.json");
    std::fs::copy(test_users.users_file(), &copied_users)?;
    let nats = TestNats::start()?;
    let first = GameService::start(&nats.url())?;
    let second = GameService::start_with(
        &nats.url(),
        GameServiceOptions {
            users_file: Some(copied_users),
            ..Default::default()
        },
    )?;
    let dashboards = [
        ArbiterService::start(&nats.url(), &first.url())?,
        ArbiterService::start(&nats.url(), &second.url())?,
    ];
    Ok((
        Hall {
            _nats: nats,
            games: [first, second],
            dashboards,
        },
        copy,
    ))
}

impl Hall {
    async fn login(&self, user: &str, password: &str) -> anyhow::Result<ArbiterSession> {
        self.dashboards[0].login(user, password).await
    }

    /// What each game service answers `WhoAmI` with, for the session's token.
    async fn grpc_answers(&self, session: &ArbiterSession) -> anyhow::Result<Vec<Option<Code>>> {
        self.grpc_answers_for(session.token()).await
    }

    /// What each game service answers `WhoAmI` with, for a session or API token.
    async fn grpc_answers_for(&self, token: &str) -> anyhow::Result<Vec<Option<Code>>> {
        let mut answers = Vec::new();
        for game in &self.games {
            let mut client = game.client_as(token).await?;
            answers.push(
                client
                    .who_am_i(WhoAmIRequest {})
                    .await
                    .err()
                    .map(|e| e.code()),
            );
        }
        Ok(answers)
    }

    /// What each dashboard answers `/api/me` with, for the session's cookie.
    async fn dashboard_answers(&self, session: &ArbiterSession) -> anyhow::Result<Vec<u16>> {
        let mut answers = Vec::new();
        for dashboard in &self.dashboards {
            answers.push(session.on(dashboard).status("/api/me").await?.as_u16());
        }
        Ok(answers)
    }

    async fn accepted_everywhere(&self, session: &ArbiterSession) -> anyhow::Result<()> {
        assert_eq!(self.grpc_answers(session).await?, vec![None, None]);
        assert_eq!(self.dashboard_answers(session).await?, vec![200, 200]);
        Ok(())
    }

    /// Waits until both game services and both dashboards refuse the session; fails if that
    /// takes longer than `WITHIN`. Says how long it took.
    async fn refused_everywhere_within(
        &self,
        session: &ArbiterSession,
        what: &str,
    ) -> anyhow::Result<Duration> {
        let started = tokio::time::Instant::now();
        loop {
            let grpc = self.grpc_answers(session).await?;
            let dashboards = self.dashboard_answers(session).await?;
            let refused = grpc.iter().all(|c| *c == Some(Code::Unauthenticated))
                && dashboards.iter().all(|s| *s == 401);
            if refused {
                return Ok(started.elapsed());
            }
            anyhow::ensure!(
                started.elapsed() < WITHIN,
                "after {what}, the old session still works after {WITHIN:?}: gRPC {grpc:?}, \
                 dashboards {dashboards:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_logout_a_password_change_and_a_disable_end_the_session_everywhere() -> anyhow::Result<()>
{
    let users = ["logs-out", "changes-password", "is-disabled", "bystander"];
    let (hall, _copy) = hall(&users).await?;
    let logs_out = hall.login("logs-out", TEST_PASSWORD).await?;
    let changes_password = hall.login("changes-password", TEST_PASSWORD).await?;
    let is_disabled = hall.login("is-disabled", TEST_PASSWORD).await?;
    let bystander = hall.login("bystander", TEST_PASSWORD).await?;
    for session in [&logs_out, &changes_password, &is_disabled, &bystander] {
        hall.accepted_everywhere(session).await?;
    }

    // A logout on the first dashboard.
    assert_eq!(logs_out.logout().await?.as_u16(), 303);
    let took = hall
        .refused_everywhere_within(&logs_out, "a logout")
        .await?;
    eprintln!("logout refused everywhere after {took:?}");
    // Logging in again gives a new session that works.
    let again = hall.login("logs-out", TEST_PASSWORD).await?;
    hall.accepted_everywhere(&again).await?;

    // A password change in the first instance's users file only.
    let new_password = "a brand new password";
    TestUsers::shared()?.edit(|directory| {
        directory.set_password(
            "changes-password",
            new_password,
            &mut rand::rng(),
            boardcast_kit::now_unix_ms(),
        )?;
        Ok(())
    })?;
    let took = hall
        .refused_everywhere_within(&changes_password, "a password change")
        .await?;
    eprintln!("password change refused everywhere after {took:?}");
    let with_new = hall.login("changes-password", new_password).await?;
    assert_eq!(hall.grpc_answers(&with_new).await?[0], None);
    // The instance whose copy of the file is older opens no session with the old password.
    assert!(
        hall.dashboards[1]
            .login("changes-password", TEST_PASSWORD)
            .await
            .is_err(),
        "a stale copy of the users file must not let the old password in"
    );

    // A disabled user.
    TestUsers::shared()?.edit(|directory| {
        directory.set_disabled("is-disabled", true, boardcast_kit::now_unix_ms())?;
        Ok(())
    })?;
    let took = hall
        .refused_everywhere_within(&is_disabled, "disabling the user")
        .await?;
    eprintln!("disabled user refused everywhere after {took:?}");
    assert!(
        hall.login("is-disabled", TEST_PASSWORD).await.is_err(),
        "a disabled user cannot log in"
    );

    // None of it touched anybody else's session.
    hall.accepted_everywhere(&bystander).await?;
    hall.accepted_everywhere(&again).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_disabled_users_api_token_is_refused_everywhere_though_it_was_checked_before()
-> anyhow::Result<()> {
    let users = TestUsers::shared()?;
    users.add(
        "token-holder",
        &[Grant {
            tournament: EVERY_TOURNAMENT.to_owned(),
            role: Role::Observer,
            boards: vec![],
        }],
    )?;
    let now = boardcast_kit::now_unix_ms();
    let token = users.edit(|directory| {
        Ok(directory.new_token(
            "token-holder",
            "pairing",
            now + 3_600_000,
            &mut rand::rng(),
            now,
        )?)
    })?;
    // Both copies of the users file hold the token; each instance checks it once and remembers.
    let (hall, _copy) = hall(&[]).await?;
    for game in &hall.games {
        game.wait_for_user(&token).await?;
        let mut client = game.client_as(&token).await?;
        client.who_am_i(WhoAmIRequest {}).await?;
    }

    // Disabled in the first copy only: the second learns of it from NATS.
    users.edit(|directory| {
        directory.set_disabled("token-holder", true, boardcast_kit::now_unix_ms())?;
        Ok(())
    })?;
    let started = tokio::time::Instant::now();
    loop {
        let answers = hall.grpc_answers_for(&token).await?;
        if answers.iter().all(|a| *a == Some(Code::Unauthenticated)) {
            break;
        }
        anyhow::ensure!(
            started.elapsed() < WITHIN,
            "a disabled user's token still works after {WITHIN:?}: {answers:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn logging_out_needs_the_session_itself() -> anyhow::Result<()> {
    let (hall, _copy) = hall(&["keeps-session"]).await?;
    let session = hall.login("keeps-session", TEST_PASSWORD).await?;
    let token = TestUsers::shared()?.add("keeps-session", &[])?;
    hall.games[0].wait_for_user(&token).await?;
    // An API token cannot log a session out, nor log itself out; a made-up session cannot
    // either. The session still works everywhere.
    for credential in [token.as_str(), "bcs1.made.up"] {
        let mut client = hall.games[0].client_as(credential).await?;
        let refused = client
            .logout(boardcast_schema::game::v1::LogoutRequest { everywhere: true })
            .await
            .expect_err("refused");
        assert_eq!(refused.code(), Code::Unauthenticated, "{refused:?}");
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    hall.accepted_everywhere(&session).await?;

    // "Everywhere" ends every session of the user, on both instances.
    let other = hall.dashboards[1]
        .login("keeps-session", TEST_PASSWORD)
        .await?;
    let mut client = hall.games[1].client_as(other.token()).await?;
    client
        .logout(boardcast_schema::game::v1::LogoutRequest { everywhere: true })
        .await?;
    hall.refused_everywhere_within(&session, "logging out everywhere")
        .await?;
    hall.refused_everywhere_within(&other, "logging out everywhere")
        .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_live_stream_ends_when_its_session_does() -> anyhow::Result<()> {
    let (hall, _copy) = hall(&["watches-live"]).await?;
    let session = hall.login("watches-live", TEST_PASSWORD).await?;
    let mut client = hall.games[1].client_as(session.token()).await?;
    let mut stream = client
        .stream_round_events(boardcast_schema::game::v1::StreamRoundEventsRequest {
            tournament_id: "quiet-event".into(),
            round: 1,
            ..Default::default()
        })
        .await?
        .into_inner();
    assert_eq!(session.logout().await?.as_u16(), 303);
    // The stream follows the log live; it ends, with the refusal, within seconds.
    let ended = tokio::time::timeout(WITHIN, stream.message())
        .await
        .map_err(|_| anyhow::anyhow!("the stream outlived its session by {WITHIN:?}"))?;
    let refusal = ended.expect_err("refused");
    assert_eq!(refusal.code(), Code::Unauthenticated, "{refusal:?}");
    // And the ended session cannot end anybody's sessions any more.
    let mut client = hall.games[0].client_as(session.token()).await?;
    let refused = client
        .logout(boardcast_schema::game::v1::LogoutRequest { everywhere: true })
        .await
        .expect_err("refused");
    assert_eq!(refused.code(), Code::Unauthenticated);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn api_tokens_expire_and_rotate() -> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let game = GameService::start(&nats.url())?;
    let users = TestUsers::shared()?;
    users.add("pairing-program", &[])?;
    let now = boardcast_kit::now_unix_ms();
    let (short_lived, long_lived) = users.edit(|directory| {
        let mut rng = rand::rng();
        Ok((
            directory.new_token("pairing-program", "short", now + 3_000, &mut rng, now)?,
            directory.new_token("pairing-program", "pairing", now + 3_600_000, &mut rng, now)?,
        ))
    })?;
    game.wait_for_user(&short_lived).await?;
    game.wait_for_user(&long_lived).await?;

    // Past its expiry, a token is refused, saying so, also after its first check was
    // remembered.
    tokio::time::sleep(Duration::from_millis(3_200)).await;
    let mut client = game.client_as(&short_lived).await?;
    let refused = client
        .who_am_i(WhoAmIRequest {})
        .await
        .expect_err("expired");
    assert_eq!(refused.code(), Code::Unauthenticated);
    assert!(refused.message().contains("expired"), "{refused:?}");

    // Rotated without overlap: the old token stops, the new one works.
    let id = long_lived.split('.').nth(2).unwrap_or_default().to_owned();
    let rotated = users.edit(|directory| {
        let now = boardcast_kit::now_unix_ms();
        Ok(directory.rotate_token(
            "pairing-program",
            &id,
            now + 3_600_000,
            now,
            &mut rand::rng(),
            now,
        )?)
    })?;
    game.wait_for_user(&rotated).await?;
    let mut old = game.client_as(&long_lived).await?;
    let refused = old.who_am_i(WhoAmIRequest {}).await.expect_err("rotated");
    assert_eq!(refused.code(), Code::Unauthenticated, "{refused:?}");
    Ok(())
}

//! The broadcast service pushes a round to lichess (`POST /api/broadcast/round/{id}/push`) on
//! every change, completed moves only, a whole round or a range of its boards: tested against a
//! local HTTP server that answers as lichess does and checks what it receives.

mod support;

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use anyhow::bail;
use axum::{
    Json, Router,
    extract::{Path, State},
    http::{HeaderMap, StatusCode},
    routing::post,
};
use boardcast_rules::pgn::read_games;
use boardcast_testkit::{BroadcastService, GameService, TestNats};

const TOKEN: &str = "lip_test_token";

/// What the stand-in received: the round id, whether the bearer token was right, the body.
#[derive(Default)]
struct Received {
    pushes: Vec<(String, bool, String)>,
}

type Shared = Arc<Mutex<Received>>;

/// Answers as lichess does: per game, the tags it matched and the moves it took. The first
/// push is answered 503, as a busy server would, to exercise the retry.
async fn push(
    State(received): State<Shared>,
    Path(round): Path<String>,
    headers: HeaderMap,
    body: String,
) -> (StatusCode, Json<serde_json::Value>) {
    let authorised = headers.get("authorization").and_then(|v| v.to_str().ok())
        == Some(&format!("Bearer {TOKEN}"));
    let first = {
        let mut received = received.lock().unwrap_or_else(|e| e.into_inner());
        received.pushes.push((round, authorised, body.clone()));
        received.pushes.len() == 1
    };
    if !authorised {
        return (
            StatusCode::UNAUTHORIZED,
            Json(serde_json::json!({"error": "No such token"})),
        );
    }
    if first {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(serde_json::json!({"error": "busy"})),
        );
    }
    let games = match read_games(&body) {
        Ok(games) => games,
        Err(e) => {
            return (
                StatusCode::BAD_REQUEST,
                Json(serde_json::json!({"error": e.to_string()})),
            );
        }
    };
    let answers: Vec<serde_json::Value> = games
        .iter()
        .map(|g| {
            let tags: serde_json::Map<String, serde_json::Value> = g
                .tags
                .iter()
                .map(|(k, v)| (k.clone(), v.clone().into()))
                .collect();
            serde_json::json!({"tags": tags, "moves": g.moves.len()})
        })
        .collect();
    (
        StatusCode::OK,
        Json(serde_json::json!({ "games": answers })),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn each_change_of_the_round_reaches_lichess_with_the_token_and_is_retried_after_a_failure()
-> anyhow::Result<()> {
    let received: Shared = Arc::default();
    let app = Router::new()
        .route("/api/broadcast/round/{id}/push", post(push))
        .with_state(received.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let lichess = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });

    let nats = TestNats::start()?;
    let game_service = GameService::start(&nats.url())?;
    // The token as an option here; in real use it comes from the environment.
    let broadcast = BroadcastService::start_with(
        &nats.url(),
        &[
            "--push-lichess",
            "london-chess-classic-2016/9=AbCd1234",
            "--push-lichess",
            "london-chess-classic-2016/9:2-2=EfGh5678",
            "--lichess-url",
            &lichess,
            "--lichess-token",
            TOKEN,
        ],
    )?;
    let pgn = std::fs::read_to_string(
        boardcast_testkit::repo_root().join("data/london-classic-2016.pgn"),
    )?;
    let source: Vec<_> = read_games(&pgn)?.into_iter().take(2).collect();
    support::play(&pgn, 2, &[], &nats.url(), &game_service.url())?;

    // The last push has the round's games as the feed serves them, both finished.
    let feed_url = broadcast.url("/tournaments/london-chess-classic-2016/rounds/9.pgn");
    let scores = |text: &str| -> anyhow::Result<Vec<(Vec<String>, String)>> {
        read_games(text)?
            .iter()
            .map(|g| Ok((support::uci_moves(g)?, g.result.clone())))
            .collect()
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let feed = reqwest::get(&feed_url).await?.text().await?;
        let last = received
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pushes
            .iter()
            .rfind(|(round, _, _)| round == "AbCd1234")
            .map(|(_, _, body)| body.clone());
        let finished = read_games(&feed)?
            .iter()
            .filter(|g| g.result != "*")
            .count()
            == 2;
        if finished && last.is_some_and(|last| scores(&last).ok() == scores(&feed).ok()) {
            break;
        }
        if tokio::time::Instant::now() > deadline {
            bail!("lichess never got the finished round");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let pushes = std::mem::take(&mut received.lock().unwrap_or_else(|e| e.into_inner()).pushes);
    assert!(pushes.iter().all(|(_, authorised, _)| *authorised));
    let (whole, board_2): (Vec<_>, Vec<_>) = pushes
        .into_iter()
        .partition(|(round, _, _)| round == "AbCd1234");
    assert!(whole.len() >= 2, "{} pushes", whole.len());
    // The range of boards went to its own lichess round, and only its board.
    assert!(!board_2.is_empty());
    assert!(board_2.iter().all(|(round, _, _)| round == "EfGh5678"));
    for (_, _, body) in &board_2 {
        let games = read_games(body)?;
        assert_eq!(games.len(), 1);
        assert_eq!(games[0].tag("Board"), Some("2"));
    }
    // The failed first push was sent again (the round had not changed meanwhile, or changed
    // and was sent newer).
    let last = read_games(&whole[whole.len() - 1].2)?;
    for (game, source) in last.iter().zip(&source) {
        assert_eq!(support::uci_moves(game)?, support::uci_moves(source)?);
        assert_eq!(game.result, source.result);
    }
    // Only completed moves are pushed (lichess would drop the comment marking the others and
    // keep them), so a game never goes backwards between pushes, and a body lichess took is
    // not sent again.
    for (_, _, body) in whole.iter().chain(&board_2) {
        assert!(!body.contains("provisional"), "{body}");
    }
    // (The stand-in refuses the first push of all; it may have been this round's first.)
    for (i, pair) in whole.windows(2).enumerate() {
        if i > 0 {
            assert_ne!(pair[0].2, pair[1].2, "the same body pushed twice in a row");
        }
        let (before, after) = (read_games(&pair[0].2)?, read_games(&pair[1].2)?);
        for (a, b) in before.iter().zip(&after) {
            assert!(a.moves.len() <= b.moves.len());
        }
    }

    // A lichess round that polls instead gets the same: the round, or a range of its boards.
    let polled = |query: &str| {
        reqwest::get(broadcast.url(&format!(
            "/tournaments/london-chess-classic-2016/rounds/9/lichess.pgn{query}"
        )))
    };
    let whole_polled = polled("").await?;
    assert_eq!(whole_polled.status(), 200);
    let etag = whole_polled
        .headers()
        .get("etag")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert_eq!(whole_polled.text().await?, whole[whole.len() - 1].2);
    assert_eq!(
        polled("?boards=2-2").await?.text().await?,
        board_2[board_2.len() - 1].2
    );
    let unchanged = reqwest::Client::new()
        .get(broadcast.url("/tournaments/london-chess-classic-2016/rounds/9/lichess.pgn"))
        .header("if-none-match", &etag)
        .send()
        .await?;
    assert_eq!(unchanged.status(), 304);
    for bad in ["?boards=0-5", "?boards=1-101", "?boards=5", "?boards=9-3"] {
        let refused = polled(bad).await?;
        assert_eq!(refused.status(), 400, "{bad}");
        assert!(refused.text().await?.contains("boards"), "{bad}");
    }
    assert_eq!(polled("?boards=50-60").await?.status(), 404);

    // The operator sees lichess's answer per game.
    let status: serde_json::Value = reqwest::get(broadcast.url("/api/push"))
        .await?
        .json()
        .await?;
    let round = &status["london-chess-classic-2016/9"];
    assert_eq!(round["lichess_round_id"], "AbCd1234");
    assert_eq!(round["error"], "");
    let games = round["games"].as_array().cloned().unwrap_or_default();
    assert_eq!(games.len(), 2);
    for (game, source) in games.iter().zip(&source) {
        assert_eq!(game["white"], source.tag("White").unwrap_or_default());
        assert_eq!(game["moves"], source.moves.len());
        assert!(game["error"].is_null());
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_service_refuses_to_push_without_a_token() -> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let _game_service = GameService::start(&nats.url())?;
    let out =
        std::process::Command::new(boardcast_testkit::program("boardcast-broadcast-service")?)
            .args(["--nats", &nats.url(), "--push-lichess", "t/1=AbCd"])
            .arg("--trusted-keys")
            .arg(boardcast_testkit::TestUsers::shared()?.trusted_keys())
            .env_remove("BOARDCAST_LICHESS_TOKEN")
            .output()?;
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("BOARDCAST_LICHESS_TOKEN"), "{stderr}");
    Ok(())
}

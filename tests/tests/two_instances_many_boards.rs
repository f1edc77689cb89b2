//! Two game-service instances deciding a 200-board round at once on one NATS server: no game
//! forks, every game's log is gap-free and folds to the state both instances serve, and the
//! round's exported records verify.

mod support;

use std::time::Duration;

use anyhow::Context as _;
use async_nats::jetstream;
use boardcast_schema::game::v1::GameState;
use boardcast_testkit::{GameService, TestNats};
use support::{PGN, baseline, check_logs, counted, drained_within, play, states};

const BOARDS: usize = 200;

/// The six short games of `support::PGN`, again and again, as boards 1 to `BOARDS` of round 1.
fn round_of_many_boards() -> String {
    let games: Vec<&str> = PGN
        .split("[Event ")
        .filter(|g| !g.trim().is_empty())
        .collect();
    (0..BOARDS)
        .map(|board| {
            let game = games[board % games.len()];
            let round_tag = format!("[Round \"1.{}\"]", board + 1);
            let retagged: String = game
                .lines()
                .map(|line| {
                    if line.starts_with("[Round ") {
                        round_tag.clone()
                    } else {
                        line.to_owned()
                    }
                })
                .collect::<Vec<_>>()
                .join("\n");
            format!("[Event {retagged}\n")
        })
        .collect()
}

/// What a game's observations decide, whatever board it is played on.
fn outcome(state: &GameState) -> (Vec<String>, String, i32, i32) {
    (
        state.moves.iter().map(|m| m.uci.clone()).collect(),
        state.fen.clone(),
        state.result,
        state.termination,
    )
}

/// Waits until `url` serves `BOARDS` games, each over.
async fn every_game_over(url: &str) -> anyhow::Result<Vec<GameState>> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        let now = states(url).await?;
        let over = now.iter().filter(|s| s.result != 0).count();
        if now.len() == BOARDS && over == BOARDS {
            return Ok(now);
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "{url}: {} games, {over} over",
            now.len()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn two_instances_deciding_200_boards_at_once_never_fork_a_game() -> anyhow::Result<()> {
    let base = baseline().await?;
    let nats = TestNats::start()?;
    let first = GameService::start(&nats.url())?;
    let second = GameService::start(&nats.url())?;
    let js = jetstream::new(boardcast_kit::nats::connect(&nats.url(), "test").await?);

    // The games are set up through one instance; both take the boards' partitions.
    play(
        &round_of_many_boards(),
        BOARDS,
        &[],
        &nats.url(),
        &second.url(),
    )?;
    drained_within(&js, Duration::from_secs(240)).await?;
    let one = every_game_over(&first.url()).await?;
    let two = every_game_over(&second.url()).await?;
    assert_eq!(
        one, two,
        "both instances serve the same games, chain heads included"
    );
    // Both appended: the boards' partitions were shared, not left to one of them.
    for (name, service) in [("first", &first), ("second", &second)] {
        let applied = counted(
            service,
            r#"boardcast_observations_total{disposition="applied"}"#,
        )
        .await?;
        assert!(applied > 0.0, "the {name} instance applied no observation");
        eprintln!("the {name} instance applied {applied} observations");
    }

    // Each board's game is the reference game it played, as one instance alone decided it.
    let reference: Vec<_> = base.states.iter().map(outcome).collect();
    for state in &one {
        let board = state
            .info
            .as_ref()
            .map(|i| i.board_number as usize)
            .context("a game without its set-up")?;
        assert!(
            state.log_not_followed.is_none(),
            "{}: {:?}",
            state.game_id,
            state.log_not_followed
        );
        assert_eq!(
            outcome(state),
            reference[(board - 1) % reference.len()],
            "{} on board {board}",
            state.game_id
        );
    }

    // Every game's log is one chain with consecutive numbers, no observation recorded twice,
    // folding to the state served.
    check_logs(&js, &one).await?;

    // The round's records, exported, verify: every signature, every decision made again.
    support::export_verifies(&nats.url(), "log-open", 1)?;
    Ok(())
}

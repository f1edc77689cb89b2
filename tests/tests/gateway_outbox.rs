//! A board PC's gateway started on an outbox filled against another NATS store (last event's, a
//! test hall's) publishes nothing of it: those observations would land in today's game on that
//! board. It says why and how to go on; told to, it publishes them.

use std::{process::Command, time::Duration};

use async_nats::jetstream;
use boardcast_gateway::outbox::Outbox;
use boardcast_kit::nats::{self, DEFAULT_PARTITIONS, ingest_stream, partition_of_board};
use boardcast_schema::device::v1::Observation;
use boardcast_testkit::{TestNats, program, repo_root};

/// Messages stored for `board` in its partition's stream.
async fn stored_for(nats: &TestNats, board: &str) -> anyhow::Result<u64> {
    let js = jetstream::new(async_nats::connect(nats.url()).await?);
    let stream = ingest_stream(Some(partition_of_board(board, DEFAULT_PARTITIONS)));
    Ok(js.get_stream(stream).await?.info().await?.state.messages)
}

async fn with_streams() -> anyhow::Result<TestNats> {
    let nats = TestNats::start()?;
    let js = jetstream::new(async_nats::connect(nats.url()).await?);
    nats::ensure_streams(&js, 1, DEFAULT_PARTITIONS).await?;
    Ok(nats)
}

fn replay(
    capture: &std::path::Path,
    nats: &TestNats,
    outbox: &std::path::Path,
    extra: &[&str],
) -> anyhow::Result<std::process::Output> {
    Ok(Command::new(program("boardcast")?)
        .args(["gateway", "replay-dgt"])
        .arg(capture)
        .args(["--board-id", "gw-1", "--nats", &nats.url(), "--outbox"])
        .arg(outbox)
        .args(extra)
        .env("RUST_BACKTRACE", "0")
        .output()?)
}

#[tokio::test(flavor = "multi_thread")]
async fn an_outbox_of_another_nats_store_is_not_published_into_todays_games() -> anyhow::Result<()>
{
    let dir = tempfile::tempdir()?;
    let out = Command::new(program("boardcast")?)
        .args(["simulate", "--pgn"])
        .arg(repo_root().join("data/london-classic-2016.pgn"))
        .args(["--boards", "1", "--board-prefix", "gw", "--dgt-out"])
        .arg(dir.path())
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let capture = dir.path().join("gw-1.dgt");
    let outbox_path = dir.path().join("outbox.redb");

    // Last event: the board's capture published, then a few observations left waiting (the
    // board PC lost NATS at the end and was switched off).
    let last_event = with_streams().await?;
    let out = replay(&capture, &last_event, &outbox_path, &[])?;
    anyhow::ensure!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let published = stored_for(&last_event, "gw-1").await?;
    assert!(published > 0);
    {
        let outbox = Outbox::open(&outbox_path)?;
        let now = boardcast_kit::now_unix_ms();
        outbox.append(
            (0..3)
                .map(|_| Observation {
                    board_id: "gw-1".into(),
                    receive_time_unix_ms: now,
                    ..Default::default()
                })
                .collect(),
        )?;
    }
    drop(last_event);

    // Today, on a new NATS store: nothing published, the reason said, the outbox kept.
    let today = with_streams().await?;
    let refused = replay(&capture, &today, &outbox_path, &[])?;
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{said}");
    assert!(
        said.contains("look like another event's")
            && said.contains(&format!("acknowledged up to {published}"))
            && said.contains("--publish-held-outbox"),
        "{said}"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(stored_for(&today, "gw-1").await?, 0, "nothing published");
    assert_eq!(Outbox::open(&outbox_path)?.pending_count()?, 3, "kept");

    // The operator decides they belong here after all.
    let published_anyway = replay(&capture, &today, &outbox_path, &["--publish-held-outbox"])?;
    assert!(
        published_anyway.status.success(),
        "{}",
        String::from_utf8_lossy(&published_anyway.stderr)
    );
    assert!(stored_for(&today, "gw-1").await? >= 3);
    Ok(())
}

//! NATS is killed while boards keep producing, then restarted: every observation arrives exactly
//! once, in order per board; the outage shows only as delay.

use std::{collections::HashMap, process::Stdio, sync::Arc, time::Duration};

use async_nats::jetstream;
use boardcast_gateway::{outbox::Outbox, publisher};
use boardcast_schema::device::v1::{BoardPlacement, Observation, observation::Kind};
use boardcast_testkit::TestNats;
use prost::Message as _;
use tokio::sync::Notify;

const BOARDS: usize = 3;
const PER_BOARD: u64 = 300;

#[tokio::test(flavor = "multi_thread")]
async fn observations_survive_a_nats_outage_exactly_once_and_in_order() -> anyhow::Result<()> {
    let mut nats = TestNats::start()?;
    let client = boardcast_kit::nats::connect(&nats.url(), "gateway-test").await?;
    let js = jetstream::ContextBuilder::new()
        .timeout(Duration::from_secs(1))
        .build(client);
    boardcast_kit::nats::ensure_streams(&js, 1, boardcast_kit::nats::DEFAULT_PARTITIONS).await?;

    let dir = tempfile::tempdir()?;
    let outbox = Arc::new(Outbox::open(&dir.path().join("outbox.redb"))?);
    let (wake, stop) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let publishing = tokio::spawn(publisher::run(
        outbox.clone(),
        js.clone(),
        wake.clone(),
        stop.clone(),
    ));

    // Boards produce observations every few milliseconds, NATS or not.
    let producing = {
        let outbox = outbox.clone();
        let wake = wake.clone();
        tokio::spawn(async move {
            for _ in 0..PER_BOARD {
                let batch = (1..=BOARDS)
                    .map(|b| Observation {
                        board_id: format!("board-{b}"),
                        kind: Some(Kind::Placement(BoardPlacement {
                            placement: "8/8/8/8/8/8/8/8".into(),
                        })),
                        ..Default::default()
                    })
                    .collect();
                let outbox = outbox.clone();
                tokio::task::spawn_blocking(move || outbox.append(batch)).await??;
                wake.notify_one();
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            anyhow::Ok(())
        })
    };

    tokio::time::sleep(Duration::from_millis(400)).await;
    nats.server.kill_hard()?;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        outbox.pending_count()? > 0,
        "observations wait in the outbox while NATS is down"
    );
    nats.server.restart(Stdio::null())?;
    producing.await??;

    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while outbox.pending_count()? > 0 {
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the outbox did not drain"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop.notify_one();
    publishing.await??;

    // Read the stream back with a fresh connection.
    let js = jetstream::new(async_nats::connect(nats.url()).await?);
    let mut seen: HashMap<String, Vec<u64>> = HashMap::new();
    let total = BOARDS as u64 * PER_BOARD;
    let stored = boardcast_testkit::every_observation(&js).await?;
    assert_eq!(stored.len() as u64, total, "every observation stored once");
    for message in stored {
        let o = Observation::decode(message.payload.as_ref())?;
        seen.entry(o.board_id).or_default().push(o.device_seq);
    }
    for b in 1..=BOARDS {
        let seqs = &seen[&format!("board-{b}")];
        let expected: Vec<u64> = (1..=PER_BOARD).collect();
        assert_eq!(
            seqs, &expected,
            "board-{b}: every observation once, in order"
        );
    }
    Ok(())
}

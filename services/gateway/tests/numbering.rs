//! A board's `device_seq`s are never reused, also when its gateway starts with a new outbox file
//! (another machine, a lost volume): the numbering continues from what JetStream holds.

use std::{sync::Arc, time::Duration};

use async_nats::jetstream;
use boardcast_gateway::{outbox::Outbox, publisher, recorder::Recorder};
use boardcast_schema::device::v1::{BoardPlacement, SourceKind, observation::Kind};
use boardcast_testkit::TestNats;
use tokio::sync::Notify;

fn placement() -> Vec<Kind> {
    vec![Kind::Placement(BoardPlacement {
        placement: "8/8/8/8/8/8/8/8".into(),
    })]
}

/// A gateway's outbox and publisher, as `boardcast gateway` runs them.
struct Gateway {
    outbox: Arc<Outbox>,
    recorder: Recorder,
    stop: Arc<Notify>,
    publishing: tokio::task::JoinHandle<Result<(), boardcast_gateway::outbox::OutboxError>>,
}

impl Gateway {
    fn start(path: &std::path::Path, js: &jetstream::Context) -> anyhow::Result<Gateway> {
        let outbox = Arc::new(Outbox::open(path)?);
        let (wake, stop) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
        let publishing = tokio::spawn(publisher::run(
            outbox.clone(),
            js.clone(),
            wake.clone(),
            stop.clone(),
        ));
        let recorder =
            Recorder::new(outbox.clone(), wake, SourceKind::DgtSerial).continuing_from(js.clone());
        Ok(Gateway {
            outbox,
            recorder,
            stop,
            publishing,
        })
    }

    async fn record(&self, board: &str) -> anyhow::Result<u64> {
        let stored = self.recorder.record(board, 0, placement()).await?;
        Ok(stored[0].device_seq)
    }

    /// Waits until JetStream has everything, then stops.
    async fn drain_and_stop(self) -> anyhow::Result<()> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while self.outbox.pending_count()? > 0 {
            anyhow::ensure!(tokio::time::Instant::now() < deadline, "outbox not drained");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.stop.notify_one();
        self.publishing.await??;
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_new_outbox_numbers_a_board_on_from_jetstream() -> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let js = jetstream::new(boardcast_kit::nats::connect(&nats.url(), "numbering-test").await?);
    boardcast_kit::nats::ensure_streams(&js, 1, boardcast_kit::nats::DEFAULT_PARTITIONS).await?;
    let dir = tempfile::tempdir()?;

    let first = Gateway::start(&dir.path().join("first.redb"), &js)?;
    for expected in 1..=5 {
        assert_eq!(first.record("board-a").await?, expected);
    }
    first.drain_and_stop().await?;

    // Another outbox file for the same board: it continues after 5, not from 1.
    let second = Gateway::start(&dir.path().join("second.redb"), &js)?;
    assert_eq!(second.record("board-a").await?, 6);
    assert_eq!(second.record("board-a").await?, 7);
    // A board JetStream has never seen starts at 1.
    assert_eq!(second.record("board-b").await?, 1);
    second.drain_and_stop().await?;

    // The first file again: its own counter (5) is behind JetStream's (7).
    let first_again = Gateway::start(&dir.path().join("first.redb"), &js)?;
    assert_eq!(first_again.record("board-a").await?, 8);
    first_again.drain_and_stop().await?;
    Ok(())
}

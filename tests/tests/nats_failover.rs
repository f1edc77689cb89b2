//! The services' NATS connection leaves a node that stops answering without closing its
//! connections (frozen, or cut off the network) for another node of the cluster, and JetStream
//! works again through it.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use anyhow::Context as _;
use async_nats::jetstream::{self, stream};
use boardcast_testkit::TestCluster;

#[tokio::test(flavor = "multi_thread")]
async fn a_frozen_node_is_left_for_another_within_a_minute() -> anyhow::Result<()> {
    let cluster = TestCluster::start(3).await?;
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    // Given only the first node: the others are learnt from it, as a service given one URL does.
    let client = boardcast_kit::nats::connect_observed(
        &cluster.nodes[0].url(),
        "failover-test",
        move |event| {
            if let Ok(mut seen) = seen.lock() {
                seen.push(event.to_string());
            }
        },
    )
    .await?;
    let js = jetstream::ContextBuilder::new()
        .timeout(Duration::from_secs(2))
        .ack_timeout(Duration::from_secs(2))
        .build(client.clone());
    js.create_stream(stream::Config {
        name: "FAILOVER".into(),
        subjects: vec!["failover.>".into()],
        num_replicas: 3,
        ..Default::default()
    })
    .await?;
    js.publish("failover.before", "1".into()).await?.await?;
    assert_eq!(
        client.server_info().port,
        cluster.nodes[0].port,
        "connected to the first node"
    );

    cluster.pause(0)?;
    let frozen = tokio::time::Instant::now();
    // Within a minute (async-nats's default ping interval would take up to three): a write is
    // stored through another node.
    let stored = loop {
        let attempt = async { anyhow::Ok(js.publish("failover.after", "2".into()).await?.await?) };
        if let Ok(ack) = attempt.await {
            break ack;
        }
        if frozen.elapsed() > Duration::from_secs(60) {
            cluster.resume(0)?;
            anyhow::bail!(
                "still no write a minute after the node froze; connection events: {:?}",
                events.lock().map(|e| e.clone()).unwrap_or_default()
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let took = frozen.elapsed();
    cluster.resume(0)?;
    // After the first write; an attempt that timed out while the node was frozen may have been
    // stored too (these writes carry no message id to deduplicate them).
    assert!(stored.sequence >= 2, "stored at {}", stored.sequence);
    assert_ne!(
        client.server_info().port,
        cluster.nodes[0].port,
        "on another node"
    );
    let events = events.lock().map(|e| e.clone()).unwrap_or_default();
    assert!(
        events.iter().any(|e| e.contains("disconnected")),
        "the frozen node was left: {events:?}"
    );
    eprintln!("written again through another node {took:.1?} after the first one froze");
    js.get_stream("FAILOVER")
        .await?
        .get_info()
        .await
        .context("the stream after the failover")?;
    Ok(())
}

//! The harness's own NATS: private, with JetStream, gone after the test.

use std::time::Duration;

use boardcast_testkit::TestNats;

#[tokio::test]
async fn private_nats_has_jetstream_and_stops_on_drop() -> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let port = nats.server.port;
    assert_ne!(port, 4222, "never the default port");
    let client = async_nats::connect(nats.url()).await?;
    let js = async_nats::jetstream::new(client);
    let mut stream = js
        .create_stream(async_nats::jetstream::stream::Config {
            name: "HARNESS".into(),
            subjects: vec!["harness.>".into()],
            ..Default::default()
        })
        .await?;
    js.publish("harness.x", "hello".into()).await?.await?;
    assert_eq!(stream.info().await?.state.messages, 1);
    let store = nats.store_dir().to_owned();
    assert!(
        store.join("store").exists(),
        "JetStream keeps its data in the test's own directory"
    );
    drop(nats);
    assert!(!store.exists(), "the store directory is removed");
    // The port is free again once the server has stopped.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(std::net::TcpListener::bind(("127.0.0.1", port)).is_ok());
    Ok(())
}

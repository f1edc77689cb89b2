//! NATS as the hall guide sets it up: clients over TLS only, checked against the hall's own
//! authority (`boardcast tls-certs`), and routes over mutual TLS, so that a machine on the venue
//! network can neither read the traffic nor join the cluster as a route.

use std::{
    io::{Read as _, Write as _},
    net::TcpStream,
    path::Path,
    process::{Command, Stdio},
    time::Duration,
};

use boardcast_kit::tls::{CA_CERT_FILE, make_certificates};
use boardcast_testkit::{
    GameService, GameServiceOptions, ManagedProcess, NatsServer, TestCluster, free_port,
};
use futures::StreamExt as _;

/// The hall's authority and the three nodes' certificates (the third signed in a second run,
/// as when a host is added later, with the authority made by the first).
fn hall_certificates(dir: &Path) -> anyhow::Result<()> {
    let host = |name: &str| format!("{name}=127.0.0.1").parse();
    make_certificates(dir, &[host("n1")?, host("n2")?], 30)?;
    make_certificates(dir, &[host("n3")?], 30)?;
    Ok(())
}

/// The servers node `node` has routes to now (each over a pool of connections), by its
/// monitoring endpoint.
async fn routed_servers(cluster: &TestCluster, node: usize) -> anyhow::Result<Vec<String>> {
    let routez: serde_json::Value = reqwest::get(format!(
        "http://127.0.0.1:{}/routez",
        cluster.nodes[node].monitor_port
    ))
    .await?
    .json()
    .await?;
    let mut servers: Vec<String> = routez["routes"]
        .as_array()
        .ok_or_else(|| anyhow::anyhow!("routez without routes: {routez}"))?
        .iter()
        .filter_map(|route| route["remote_name"].as_str().map(str::to_owned))
        .collect();
    servers.sort();
    servers.dedup();
    Ok(servers)
}

/// A nats-server of someone on the venue network, trying to join the cluster as a route through
/// node 1's cluster port; `tls` is its cluster block's TLS settings (none, or a certificate of
/// an authority of its own). Returns it with its client port.
fn rogue_server(
    dir: &Path,
    name: &str,
    node_1_cluster_port: u16,
    tls: &str,
) -> anyhow::Result<(ManagedProcess, u16)> {
    let port = free_port()?;
    let config = dir.join(format!("{name}.conf"));
    std::fs::write(
        &config,
        format!(
            "server_name: {name}\nlisten: \"127.0.0.1:{port}\"\n\
             cluster {{\n  name: boardcast-test\n  listen: \"127.0.0.1:{cluster}\"\n  \
             routes: [\"nats-route://127.0.0.1:{node_1_cluster_port}\"]\n{tls}}}\n",
            cluster = free_port()?,
        ),
    )?;
    let mut process = ManagedProcess::spawn(
        name,
        Command::new(NatsServer::current()?.binary)
            .arg("-c")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    )?;
    boardcast_testkit::wait_for_port(
        &mut process,
        std::net::SocketAddr::from(([127, 0, 0, 1], port)),
        Duration::from_secs(10),
    )?;
    Ok((process, port))
}

#[tokio::test(flavor = "multi_thread")]
async fn clients_speak_tls_and_only_the_halls_servers_join_the_cluster() -> anyhow::Result<()> {
    let certs = tempfile::tempdir()?;
    hall_certificates(certs.path())?;
    let ca = certs.path().join(CA_CERT_FILE);
    let cluster = TestCluster::start_tls(3, &NatsServer::current()?, certs.path()).await?;
    assert_eq!(routed_servers(&cluster, 0).await?, ["n2", "n3"]);

    // A client trusting the hall's authority: messages cross the cluster (node 1 to node 3,
    // over the routes).
    let first = boardcast_kit::nats::connect_observed_trusting(
        &cluster.nodes[0].url(),
        "tls-first",
        Some(&ca),
        |_| {},
    )
    .await?;
    let third = boardcast_kit::nats::connect_observed_trusting(
        &cluster.nodes[2].url(),
        "tls-third",
        Some(&ca),
        |_| {},
    )
    .await?;
    let mut heard = third.subscribe("hall.check").await?;
    third.flush().await?;
    // Interest crosses the routes a moment after the subscription.
    let mut received = None;
    for _ in 0..50 {
        first.publish("hall.check", "from the hall".into()).await?;
        first.flush().await?;
        if let Ok(Some(message)) =
            tokio::time::timeout(Duration::from_millis(100), heard.next()).await
        {
            received = Some(message.payload);
            break;
        }
    }
    assert_eq!(received.as_deref(), Some(&b"from the hall"[..]));

    // A plain connection is refused: the server says TLS is required, and never answers PING.
    let mut plain = TcpStream::connect(("127.0.0.1", cluster.nodes[0].port))?;
    plain.set_read_timeout(Some(Duration::from_secs(3)))?;
    let mut info = [0u8; 4096];
    let read = plain.read(&mut info)?;
    let info = String::from_utf8_lossy(&info[..read]).into_owned();
    assert!(info.contains("\"tls_required\":true"), "{info}");
    plain.write_all(b"CONNECT {\"verbose\":false}\r\nPING\r\n")?;
    let mut answer = String::new();
    let _ = plain.read_to_string(&mut answer);
    assert!(
        !answer.contains("PONG"),
        "a plain client was served: {answer}"
    );
    assert!(
        answer.contains("TLS Required") || answer.is_empty(),
        "{answer}"
    );

    // A client that does not trust the hall's authority does not get through.
    let untrusting = tokio::time::timeout(
        Duration::from_secs(10),
        async_nats::ConnectOptions::new()
            .require_tls(true)
            .connect(cluster.nodes[0].url()),
    )
    .await;
    assert!(
        !matches!(untrusting, Ok(Ok(_))),
        "a client without the hall's authority connected"
    );

    // Servers of someone on the venue network try to join as routes: one without TLS, one with
    // a certificate of an authority of its own. Node 1 admits neither, and what their clients
    // publish never reaches the hall.
    let elsewhere = tempfile::tempdir()?;
    make_certificates(elsewhere.path(), &["rogue=127.0.0.1".parse()?], 30)?;
    let foreign_tls = format!(
        "  tls {{\n    cert_file: \"{dir}/rogue.pem\"\n    key_file: \"{dir}/rogue.key\"\n    \
         ca_file: \"{dir}/ca.pem\"\n    verify: true\n  }}\n",
        dir = elsewhere.path().display()
    );
    let node_1_cluster = cluster.nodes[0].cluster_port;
    let (_plain_rogue, plain_port) =
        rogue_server(elsewhere.path(), "rogue-plain", node_1_cluster, "")?;
    let (_tls_rogue, tls_port) =
        rogue_server(elsewhere.path(), "rogue-tls", node_1_cluster, &foreign_tls)?;
    let mut rogue_clients = Vec::new();
    for port in [plain_port, tls_port] {
        rogue_clients.push(async_nats::connect(format!("nats://127.0.0.1:{port}")).await?);
    }
    let mut heard_rogue = 0;
    let until = tokio::time::Instant::now() + Duration::from_secs(5);
    while tokio::time::Instant::now() < until {
        for client in &rogue_clients {
            client.publish("hall.check", "rogue".into()).await?;
            client.flush().await?;
        }
        if let Ok(Some(message)) =
            tokio::time::timeout(Duration::from_millis(200), heard.next()).await
            && message.payload.as_ref() == b"rogue"
        {
            heard_rogue += 1;
        }
    }
    assert_eq!(heard_rogue, 0, "a rogue server's messages reached the hall");
    assert_eq!(
        routed_servers(&cluster, 0).await?,
        ["n2", "n3"],
        "node 1 routes to nodes 2 and 3 only"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_service_given_the_halls_authority_works_over_tls() -> anyhow::Result<()> {
    let certs = tempfile::tempdir()?;
    hall_certificates(certs.path())?;
    let ca = certs.path().join(CA_CERT_FILE);
    let cluster = TestCluster::start_tls(3, &NatsServer::current()?, certs.path()).await?;
    // The game service connects over TLS with the authority in BOARDCAST_NATS_CA, and creates
    // its streams.
    let _game = GameService::start_with(
        &cluster.urls(),
        GameServiceOptions {
            env: vec![(
                boardcast_kit::nats::NATS_CA_ENV.to_owned(),
                ca.display().to_string(),
            )],
            ..Default::default()
        },
    )?;
    let js = async_nats::jetstream::new(cluster.connect("tls-check").await?);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while js
        .get_stream(boardcast_kit::nats::GAMES_STREAM)
        .await
        .is_err()
    {
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the game service did not create its streams over TLS"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}

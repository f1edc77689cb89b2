//! gRPC over TLS: the game service serves with a configured certificate, a client that trusts
//! its authority gets through, and a client that does not trust it, or speaks plain gRPC, does not.

use std::process::{Command, Stdio};
use std::time::Duration;

use boardcast_schema::game::v1::WhoAmIRequest;
use boardcast_testkit::{ManagedProcess, TestNats, TestUsers, free_port, program, wait_for_port};
use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};

#[tokio::test(flavor = "multi_thread")]
async fn grpc_over_tls_with_the_configured_certificate() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    // A certificate authority of the hall, and the game service's certificate signed by it.
    let ca_key = KeyPair::generate()?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key)?;
    let key = KeyPair::generate()?;
    let cert =
        CertificateParams::new(vec!["localhost".to_owned()])?.signed_by(&key, &ca, &ca_key)?;
    let (ca_pem, cert_pem, key_pem) = (
        dir.path().join("ca.pem"),
        dir.path().join("cert.pem"),
        dir.path().join("key.pem"),
    );
    std::fs::write(&ca_pem, ca.pem())?;
    std::fs::write(&cert_pem, cert.pem())?;
    std::fs::write(&key_pem, key.serialize_pem())?;
    let stranger_key = KeyPair::generate()?;
    let mut stranger_params = CertificateParams::new(Vec::<String>::new())?;
    stranger_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let stranger_pem = dir.path().join("stranger.pem");
    std::fs::write(
        &stranger_pem,
        stranger_params.self_signed(&stranger_key)?.pem(),
    )?;

    let nats = TestNats::start()?;
    let users = TestUsers::shared()?;
    let port = free_port()?;
    let mut service = ManagedProcess::spawn(
        "boardcast-game-service",
        Command::new(program("boardcast-game-service")?)
            .args([
                "--nats",
                &nats.url(),
                "--grpc-listen",
                &format!("127.0.0.1:{port}"),
            ])
            .arg("--snapshot")
            .arg(dir.path().join("snapshot.redb"))
            .arg("--users")
            .arg(users.users_file())
            .arg("--session-key")
            .arg(users.session_key())
            .arg("--tls-cert")
            .arg(&cert_pem)
            .arg("--tls-key")
            .arg(&key_pem)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null()),
    )?;
    wait_for_port(
        &mut service,
        ([127, 0, 0, 1], port).into(),
        Duration::from_secs(60),
    )?;

    let url = format!("https://localhost:{port}");
    let token = users.admin_token();
    let mut trusted =
        boardcast_kit::client::game_client_with_ca(&url, Some(token), Some(&ca_pem)).await?;
    let me = trusted.who_am_i(WhoAmIRequest {}).await?.into_inner();
    assert_eq!(me.user, "admin");

    // A client trusting another authority: the handshake fails, nothing is answered.
    let untrusted =
        boardcast_kit::client::game_client_with_ca(&url, Some(token), Some(&stranger_pem)).await;
    let refused = match untrusted {
        Err(e) => format!("{e:#}"),
        Ok(mut client) => client
            .who_am_i(WhoAmIRequest {})
            .await
            .expect_err("an unknown authority")
            .to_string(),
    };
    assert!(!refused.is_empty());

    // Plain gRPC to the TLS port is not answered either.
    let plain =
        boardcast_kit::client::game_client(&format!("http://localhost:{port}"), Some(token)).await;
    if let Ok(mut client) = plain {
        client
            .who_am_i(WhoAmIRequest {})
            .await
            .expect_err("plain gRPC on a TLS port");
    }
    // An https URL without a CA to trust is a clear error before any connection.
    let no_ca = boardcast_kit::client::game_client_with_ca(&url, Some(token), None)
        .await
        .err()
        .map(|e| format!("{e:#}"))
        .unwrap_or_default();
    assert!(no_ca.contains("BOARDCAST_GAME_SERVICE_CA"), "{no_ca}");
    Ok(())
}

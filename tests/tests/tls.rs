//! TLS where certificates are configured: the game service serves gRPC and the arbiter service
//! HTTPS with them; a client that trusts the hall's authority gets through, and a client that
//! does not trust it, or speaks plain gRPC or HTTP, does not.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use boardcast_schema::game::v1::WhoAmIRequest;
use boardcast_testkit::{
    ManagedProcess, TEST_PASSWORD, TestNats, TestUsers, free_port, program, wait_for_port,
};
use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// A certificate authority of the hall and a certificate for `localhost` signed by it, as PEM
/// files in `dir`: (authority, certificate, key).
fn hall_certificates(dir: &Path) -> anyhow::Result<(PathBuf, PathBuf, PathBuf)> {
    // A certificate authority of the hall, and the game service's certificate signed by it.
    let ca_key = KeyPair::generate()?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key)?;
    let key = KeyPair::generate()?;
    let cert =
        CertificateParams::new(vec!["localhost".to_owned()])?.signed_by(&key, &ca, &ca_key)?;
    let (ca_pem, cert_pem, key_pem) = (
        dir.join("ca.pem"),
        dir.join("cert.pem"),
        dir.join("key.pem"),
    );
    std::fs::write(&ca_pem, ca.pem())?;
    std::fs::write(&cert_pem, cert.pem())?;
    std::fs::write(&key_pem, key.serialize_pem())?;
    Ok((ca_pem, cert_pem, key_pem))
}

/// The game service serving gRPC over TLS with `cert`/`key` on a free port: (process, port).
fn game_service_with_tls(
    dir: &Path,
    nats: &TestNats,
    cert: &Path,
    key: &Path,
) -> anyhow::Result<(ManagedProcess, u16)> {
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
            .arg(dir.join("snapshot.redb"))
            .arg("--users")
            .arg(users.users_file())
            .arg("--session-key")
            .arg(users.session_key())
            .arg("--signing-key")
            .arg(users.signing_key())
            .arg("--tls-cert")
            .arg(cert)
            .arg("--tls-key")
            .arg(key)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null()),
    )?;
    wait_for_port(
        &mut service,
        ([127, 0, 0, 1], port).into(),
        Duration::from_secs(60),
    )?;
    Ok((service, port))
}

#[tokio::test(flavor = "multi_thread")]
async fn grpc_over_tls_with_the_configured_certificate() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let (ca_pem, cert_pem, key_pem) = hall_certificates(dir.path())?;
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
    let (_service, port) = game_service_with_tls(dir.path(), &nats, &cert_pem, &key_pem)?;

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

/// One HTTP/1.1 exchange over TLS with `localhost:port`, trusting only the authority in
/// `ca_pem`: the response's head and body as text.
async fn https(port: u16, ca_pem: &Path, request: &str) -> anyhow::Result<String> {
    let mut roots = rustls::RootCertStore::empty();
    let pem = std::fs::read_to_string(ca_pem)?;
    let der = pem
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect::<String>();
    use base64::Engine as _;
    let der = base64::engine::general_purpose::STANDARD.decode(der)?;
    roots.add(rustls::pki_types::CertificateDer::from(der))?;
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_root_certificates(roots)
    .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
    let name = rustls::pki_types::ServerName::try_from("localhost")?;
    let mut tls = connector.connect(name, tcp).await?;
    tls.write_all(request.as_bytes()).await?;
    let mut response = Vec::new();
    // The server closes the connection (Connection: close); a TLS close without notify is fine.
    let _ = tokio::time::timeout(Duration::from_secs(10), tls.read_to_end(&mut response)).await;
    Ok(String::from_utf8_lossy(&response).into_owned())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_arbiter_service_serves_https_and_talks_tls_to_the_game_service() -> anyhow::Result<()>
{
    let dir = tempfile::tempdir()?;
    let (ca_pem, cert_pem, key_pem) = hall_certificates(dir.path())?;
    let nats = TestNats::start()?;
    let (_game_service, grpc_port) = game_service_with_tls(dir.path(), &nats, &cert_pem, &key_pem)?;
    let port = free_port()?;
    let mut arbiter = ManagedProcess::spawn(
        "boardcast-arbiter-service",
        Command::new(program("boardcast-arbiter-service")?)
            .args(["--nats", &nats.url()])
            .args(["--game-service", &format!("https://localhost:{grpc_port}")])
            .arg("--game-service-ca")
            .arg(&ca_pem)
            .args(["--http-listen", &format!("127.0.0.1:{port}")])
            .arg("--trusted-keys")
            .arg(TestUsers::shared()?.trusted_keys())
            .arg("--tls-cert")
            .arg(&cert_pem)
            .arg("--tls-key")
            .arg(&key_pem)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null()),
    )?;
    wait_for_port(
        &mut arbiter,
        ([127, 0, 0, 1], port).into(),
        Duration::from_secs(30),
    )?;

    let page = https(
        port,
        &ca_pem,
        "GET /login HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    )
    .await?;
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");

    // A login goes through to the game service over TLS; the cookie is for HTTPS only.
    let form = format!(
        "user=admin&password={}&next=%2F",
        TEST_PASSWORD.replace(' ', "+")
    );
    let login = https(
        port,
        &ca_pem,
        &format!(
            "POST /login HTTP/1.1\r\nHost: localhost:{port}\r\nOrigin: https://localhost:{port}\r\n\
             Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{form}",
            form.len()
        ),
    )
    .await?;
    assert!(login.starts_with("HTTP/1.1 303"), "{login}");
    let cookie = login
        .lines()
        .find(|l| {
            l.to_ascii_lowercase()
                .starts_with("set-cookie: boardcast_session=")
        })
        .unwrap_or_default();
    assert!(cookie.contains("; Secure"), "{cookie}");

    // Plain HTTP on the HTTPS port is not served, and the service goes on serving HTTPS.
    let plain = reqwest::Client::new()
        .get(format!("http://127.0.0.1:{port}/login"))
        .timeout(Duration::from_secs(5))
        .send()
        .await;
    assert!(
        plain.as_ref().is_err() || plain.as_ref().is_ok_and(|r| r.status().as_u16() == 400),
        "plain HTTP answered: {plain:?}"
    );
    let again = https(
        port,
        &ca_pem,
        "GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    )
    .await?;
    assert!(again.starts_with("HTTP/1.1 200"), "{again}");
    Ok(())
}

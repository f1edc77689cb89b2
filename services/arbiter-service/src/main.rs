//! boardcast-arbiter-service: every irregularity of every board in front of the arbiters at once,
//! and their rulings forwarded to the game service.
//!
//! Follows the authoritative game log (never the broadcast service's display: Article 6.14),
//! folds each game with the aggregate and its alerts, and serves a dashboard for arbiters on
//! tablets: the live alert queue, the rounds' boards, each game's full timeline and position at
//! any entry, and the forms for every ruling. Signing in, permissions and the rulings themselves
//! are the game service's: this service forwards each as the arbiter's own call.

mod auth;
mod follow;
mod http;
mod metrics;
mod upstream;

use std::{net::SocketAddr, path::PathBuf, sync::Arc, time::Duration};

use anyhow::Context as _;
use clap::Parser;

#[derive(Parser, Debug)]
#[command(
    name = "boardcast-arbiter-service",
    version,
    about = "The boardcast arbiter service: a live dashboard of every irregularity for remote arbiters, \
             and their rulings forwarded to the game service",
    long_about = "The boardcast arbiter service: a live dashboard of every irregularity for remote \
arbiters, and their rulings forwarded to the game service.\n\n\
It follows the game log (JetStream stream BOARDCAST_GAMES, which the game service creates: this \
service waits for it and never creates it), folds every game with the same aggregate as the game \
service, and raises the alerts an arbiter must see. Arbiters sign in with their boardcast user \
(the game service's Login); every page shows only the tournaments their roles allow, and every \
ruling is sent to the game service as their own Act call, which records it in the game's log.\n\n\
Routes:\n  \
/login, /logout                          sign in and out (session cookie boardcast_session)\n  \
/                                        the rounds you may read, and the alert queue\n  \
/tournaments/{t}/rounds/{r}              the round's boards at a glance, its alert queue, and\n                                           who rules on which boards (the chief arbiter assigns)\n  \
/games/{game_id}                         a game's timeline, position at any entry, alerts, rulings\n  \
/events?tournament=..&round=..           the live alert queue (server-sent events)\n  \
/api/...                                 the JSON behind the pages\n  \
/healthz                                 liveness, whether the game log is followed and the game service answers\n  \
/readyz                                  200 once both hold (for a load balancer), 503 with what is missing\n  \
/metrics (Prometheus text: alerts open, log position, latency) is served on --metrics-listen only.\n\n\
Example:\n  boardcast-arbiter-service --nats nats://arbiter:secret@127.0.0.1:4222 \\\n    \
--game-service https://games.hall.local:50051 --game-service-ca ca.pem \\\n    \
--http-listen 0.0.0.0:8443 --tls-cert arbiters.pem --tls-key arbiters-key.pem"
)]
struct Args {
    /// NATS server(s) to follow the game log on; several servers of a cluster separated by
    /// commas. A URL may carry a user and password (nats://user:password@host:4222): the user
    /// needs to read the stream BOARDCAST_GAMES only.
    #[arg(
        long,
        env = "BOARDCAST_NATS_URL",
        default_value = "nats://127.0.0.1:4222"
    )]
    nats: String,
    /// The hall's certificate authority (PEM, from `boardcast tls-certs`) that the NATS
    /// servers' certificates are checked against. Given, NATS connections are TLS only (use
    /// `tls://` URLs).
    #[arg(long, env = boardcast_kit::nats::NATS_CA_ENV)]
    nats_ca: Option<std::path::PathBuf>,
    /// The game service's gRPC URL (https:// for TLS).
    #[arg(
        long,
        env = "BOARDCAST_GAME_SERVICE",
        default_value = "http://127.0.0.1:50051"
    )]
    game_service: String,
    /// PEM file of the certificate authority the game service's TLS certificate is checked
    /// against; required for an https:// game service.
    #[arg(long, env = "BOARDCAST_GAME_SERVICE_CA")]
    game_service_ca: Option<PathBuf>,
    /// Address to serve the dashboard on.
    #[arg(
        long,
        env = "BOARDCAST_ARBITER_HTTP_LISTEN",
        default_value = "127.0.0.1:8090"
    )]
    http_listen: SocketAddr,
    /// Address to serve /metrics on, for operators (e.g. 127.0.0.1:9466); none without it. Not
    /// on the dashboard's address, which remote arbiters reach: its counters move with play.
    #[arg(long, env = "BOARDCAST_ARBITER_METRICS_LISTEN")]
    metrics_listen: Option<SocketAddr>,
    /// PEM certificate (chain) to serve HTTPS with; needs --tls-key. Session cookies are then
    /// marked Secure. Without both, plain HTTP (put a TLS proxy in front for remote arbiters).
    #[arg(long, env = "BOARDCAST_ARBITER_TLS_CERT", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long, env = "BOARDCAST_ARBITER_TLS_KEY", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// A public origin besides the request's own host that may post forms, e.g.
    /// https://arbiters.example.org behind a reverse proxy that rewrites Host. Repeatable.
    #[arg(
        long = "allowed-origin",
        env = "BOARDCAST_ARBITER_ALLOWED_ORIGINS",
        value_delimiter = ','
    )]
    allowed_origins: Vec<String>,
    /// The address of a reverse proxy in front: the client address it gives in
    /// X-Forwarded-For is the one failed logins are counted by (otherwise one person could lock
    /// everyone out), and --max-connections-per-address does not apply to it. Repeatable.
    #[arg(
        long = "proxy",
        env = "BOARDCAST_ARBITER_PROXIES",
        value_delimiter = ','
    )]
    proxies: Vec<std::net::IpAddr>,
    /// Open connections at once, live alert queues included; more are refused.
    #[arg(long, env = "BOARDCAST_ARBITER_MAX_CONNECTIONS", default_value_t = 2_000,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    max_connections: u64,
    /// Open connections at once from one address (but --proxy addresses).
    #[arg(long, env = "BOARDCAST_ARBITER_MAX_CONNECTIONS_PER_ADDRESS", default_value_t = 100,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    max_connections_per_address: u64,
    /// Seconds a client may take to send a request's headers (the first, or the next on a
    /// kept-alive connection) before the connection is closed.
    #[arg(long, env = "BOARDCAST_ARBITER_HEADER_TIMEOUT", default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(1..=600))]
    header_timeout: u64,
    /// Mark session cookies Secure (sent over HTTPS only) though this service serves plain
    /// HTTP: behind a proxy that serves HTTPS. Implied by --tls-cert and by an https://
    /// --allowed-origin.
    #[arg(long, env = "BOARDCAST_ARBITER_SECURE_COOKIES")]
    secure_cookies: bool,
    /// Which signatures are accepted on the game log's records.
    #[command(flatten)]
    trust: boardcast_kit::signing::TrustArgs,
}

/// How long open live queues may keep the service from stopping after Ctrl-C or SIGTERM.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    boardcast_kit::nats::trust_authority(args.nats_ca.as_deref());
    let _telemetry = boardcast_kit::telemetry::init("boardcast-arbiter-service", "info")?;
    let exposition = boardcast_kit::metrics::install("boardcast-arbiter-service")?;
    // Both TLS sides (HTTPS here, gRPC to the game service) use rustls with ring. Installing
    // fails only if a provider is installed already, which is as good.
    let _ = rustls::crypto::ring::default_provider().install_default();

    let trusted = args.trust.load()?;
    let api = upstream::GameApi::new(&args.game_service, args.game_service_ca.as_deref())
        .context("setting up the game service client")?;
    // Said in the log when the game service stops or starts answering; shown on /readyz.
    tokio::spawn(api.clone().watch());
    let games = Arc::new(follow::Games::new(trusted));
    // Kept for as long as the service runs: they report when scraped.
    let _gauges = {
        let meter = opentelemetry::global::meter("boardcast-arbiter-service");
        let (open, folded) = (games.clone(), games.clone());
        (
            meter
                .u64_observable_gauge("boardcast.alerts.open")
                .with_description("Alerts no arbiter has resolved yet, all games together")
                .with_callback(move |gauge| gauge.observe(open.open_alert_count(), &[]))
                .build(),
            meter
                .u64_observable_gauge("boardcast.log.folded_seq")
                .with_description("The game log's stream sequence folded up to")
                .with_callback(move |gauge| gauge.observe(folded.last_stream_seq(), &[]))
                .build(),
        )
    };

    // The dashboard is served at once; the log follower waits for NATS and the stream meanwhile
    // (its state shows on /healthz).
    let follower = {
        let games = games.clone();
        let nats = args.nats.clone();
        tokio::spawn(async move {
            let client = boardcast_kit::nats::connect(&nats, "boardcast-arbiter-service").await?;
            follow::follow(async_nats::jetstream::new(client), games).await;
            anyhow::Ok(())
        })
    };

    let state = http::state(
        games,
        Arc::new(api),
        auth::LoginThrottle::new(auth::ThrottlePolicy::default()),
        http::HttpConfig {
            secure_cookies: args.tls_cert.is_some()
                || args.secure_cookies
                || args
                    .allowed_origins
                    .iter()
                    .any(|origin| origin.starts_with("https://")),
            allowed_origins: args.allowed_origins.clone(),
            proxies: args.proxies.clone(),
            ..Default::default()
        },
    );
    let router = http::router(state);
    if let Some(addr) = args.metrics_listen {
        boardcast_kit::metrics::serve_metrics(addr, exposition).await?;
    }

    let listener = std::net::TcpListener::bind(args.http_listen)
        .with_context(|| format!("binding the HTTP address {}", args.http_listen))?;
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(
            axum_server::tls_rustls::RustlsConfig::from_pem_file(cert, key)
                .await
                .with_context(|| {
                    format!(
                        "reading the TLS certificate {} and key {}",
                        cert.display(),
                        key.display()
                    )
                })?,
        ),
        _ => None,
    };
    tracing::info!(
        addr = %args.http_listen,
        "serving {}",
        if tls.is_some() { "HTTPS" } else { "HTTP" }
    );
    let limits = boardcast_kit::http_server::Limits {
        max_connections: usize::try_from(args.max_connections).unwrap_or(usize::MAX),
        max_per_address: usize::try_from(args.max_connections_per_address).unwrap_or(usize::MAX),
        unlimited_addresses: args.proxies.clone(),
        header_timeout: Duration::from_secs(args.header_timeout),
    };
    let handle = axum_server::Handle::new();
    let serve = boardcast_kit::http_server::serve(listener, router, limits, tls, handle.clone());
    let mut server = tokio::spawn(serve);
    tokio::select! {
        result = &mut server => result.context("the HTTP server panicked")??,
        result = follower => {
            result.context("the game log follower panicked")??;
            anyhow::bail!("the game log follower stopped");
        }
        _ = boardcast_kit::shutdown::signal() => {
            // Open live queues are cut after the grace: the pages reconnect (to another
            // instance, if there is one).
            handle.graceful_shutdown(Some(SHUTDOWN_GRACE));
            let waited = tokio::time::timeout(SHUTDOWN_GRACE + Duration::from_secs(1), server).await;
            if let Ok(Ok(Err(e))) = waited {
                tracing::warn!("stopping the HTTP server: {e:#}");
            }
        }
    }
    tracing::info!("stopped");
    Ok(())
}

//! boardcast-game-service: the only writer of games.
//!
//! Consumes board observations from JetStream, folds them into games with the game aggregate,
//! appends the resulting events to each game's log, and serves games over gRPC.

mod assignments;
mod auth;
mod fault_points;
mod games;
mod grpc;
mod ingest;
mod metrics;
mod sessions;
mod snapshot;
mod store;

use std::{net::SocketAddr, path::PathBuf, sync::Arc, time::Duration};

use anyhow::Context as _;
use boardcast_kit::nats;
use boardcast_schema::game::v1::game_service_server::GameServiceServer;
use clap::Parser;

#[derive(Parser, Debug)]
#[command(
    name = "boardcast-game-service",
    version,
    about = "The boardcast game service: folds board observations into event-sourced games and serves them over gRPC",
    long_about = "The boardcast game service: folds board observations into event-sourced games and serves them over gRPC.\n\n\
It reads device observations from the JetStream stream BOARDCAST_INGEST, appends game events to \
BOARDCAST_GAMES (one subject per game, hash-chained), and keeps unusable observations in \
BOARDCAST_DEADLETTER with the reason. On start it rebuilds every game from its snapshot and the \
log after it. Several instances may run at once: each game's appends are checked against the \
game's own end in the log (nats-server 2.12 or newer), so no game's log ever forks."
)]
struct Args {
    /// NATS server to use.
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
    /// Address to serve gRPC on.
    #[arg(long, env = "BOARDCAST_GRPC_LISTEN", default_value = "127.0.0.1:50051")]
    grpc_listen: SocketAddr,
    /// Address to serve /metrics (Prometheus text format), /healthz and /readyz on, e.g.
    /// 127.0.0.1:9464; none when not given.
    #[arg(long, env = "BOARDCAST_METRICS_LISTEN")]
    metrics_listen: Option<SocketAddr>,
    /// JetStream replicas for streams this service creates (1 on a single server, 3 on a cluster).
    #[arg(long, env = "BOARDCAST_STREAM_REPLICAS", default_value_t = 1)]
    replicas: usize,
    /// redb file keeping a snapshot of the folded games, so that a restart reads only the log
    /// written after it. Deleting it only makes the next start slower.
    #[arg(
        long,
        env = "BOARDCAST_GAME_SNAPSHOT",
        default_value = "var/game-service/snapshot.redb"
    )]
    snapshot: PathBuf,
    /// Seconds between snapshot writes (also written on shutdown).
    #[arg(long, env = "BOARDCAST_GAME_SNAPSHOT_INTERVAL", default_value_t = 10)]
    snapshot_interval: u64,
    /// The users file (`boardcast users`): users, roles per tournament, password and token
    /// hashes. Read again within seconds when it changes. Missing: every credential is refused.
    #[arg(long, env = "BOARDCAST_USERS", default_value = boardcast_kit::secrets::DEFAULT_USERS_FILE)]
    users: PathBuf,
    /// The key sessions are signed with (created when missing). Every instance must use the
    /// same file, or a session from one is refused by another.
    #[arg(long, env = "BOARDCAST_SESSION_KEY", default_value = boardcast_kit::secrets::DEFAULT_SESSION_KEY_FILE)]
    session_key: PathBuf,
    /// How long a login's session lasts, in hours.
    #[arg(long, env = "BOARDCAST_SESSION_HOURS", default_value_t = 12)]
    session_hours: u64,
    /// Answer reads (games, boards, events, claim verdicts) without a credential. Off by
    /// default: the live game is ahead of the broadcast delay.
    #[arg(long, env = "BOARDCAST_OPEN_READS")]
    open_reads: bool,
    /// PEM certificate (chain) to serve gRPC over TLS with; needs --tls-key. Without both, gRPC
    /// is plain: keep it on the hall's private network.
    #[arg(long, env = "BOARDCAST_TLS_CERT", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long, env = "BOARDCAST_TLS_KEY", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Addresses of the arbiters' dashboards (comma-separated): a login through one of them is
    /// slowed down after failures by the address of the person logging in, which the dashboard
    /// passes on, not by the dashboard's own, so that failures by someone else at the dashboard
    /// do not lock the chief arbiter out. From any other address that claim is ignored.
    #[arg(long, env = "BOARDCAST_TRUSTED_PROXIES", value_delimiter = ',')]
    trusted_proxies: Vec<std::net::IpAddr>,
    /// The Ed25519 key every record is signed with (`boardcast keys new` creates one; never
    /// created here, so that a wrong path cannot start signing with a key nobody trusts). Every
    /// instance uses the same key; its public key is printed at start and served (GetSigningKeys).
    #[arg(long, env = "BOARDCAST_SIGNING_KEY", default_value = boardcast_kit::signing::DEFAULT_SIGNING_KEY_FILE)]
    signing_key: PathBuf,
    /// Which signatures are accepted on records read from the log: this instance's own key,
    /// and those in the trusted-keys file when it exists (earlier keys after a rotation).
    #[command(flatten)]
    trust: boardcast_kit::signing::TrustArgs,
    /// How many partitions of observations to decide concurrently: the number in the NATS
    /// server's subject mapping (`mappings` in its configuration; 16 in the configurations
    /// boardcast writes). Each partition's stream (BOARDCAST_INGEST_<N>) is created if missing;
    /// a partition's stream found beyond it is consumed as well.
    #[arg(long, env = "BOARDCAST_PARTITIONS", default_value_t = boardcast_kit::nats::DEFAULT_PARTITIONS,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(boardcast_kit::nats::MAX_PARTITIONS)))]
    partitions: u32,
    /// Seconds an observation handed to an instance may stay unacknowledged before JetStream
    /// gives it to another instance (a stalled or lost instance holds up its partition that long).
    #[arg(long, env = "BOARDCAST_ACK_WAIT", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(5..=3600))]
    ack_wait: u64,
    /// Run as a standby: consume a partition's observations only once no other instance has
    /// decided any of them for half of --ack-wait (it died, or stalled), then go on consuming it.
    /// Instances that share the partitions decide the hall together; an instance for failover
    /// started with --standby does not compete while the others run. It serves gRPC as any
    /// instance.
    #[arg(long, env = "BOARDCAST_STANDBY")]
    standby: bool,
}

/// How long open event streams may keep the service from stopping after Ctrl-C or SIGTERM.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

/// A decision or append busy this long means the service is not making progress: health says
/// NOT_SERVING until it is.
const STUCK_AFTER: Duration = Duration::from_secs(20);
/// How long the follower may take to fold what the log holds before the service counts as stuck.
const REFRESH_WITHIN: Duration = Duration::from_secs(15);

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    boardcast_kit::nats::trust_authority(args.nats_ca.as_deref());
    let _telemetry = boardcast_kit::telemetry::init("boardcast-game-service", "info")?;
    // First, so that every instrument records into it; ready once the games are loaded.
    let exposition = boardcast_kit::metrics::install("boardcast-game-service")?;
    let readiness = boardcast_kit::metrics::Readiness::default();
    if let Some(addr) = args.metrics_listen {
        boardcast_kit::metrics::serve(addr, exposition, readiness.clone()).await?;
    }
    let signer = boardcast_kit::signing::read_signing_key(&args.signing_key)?;
    let trusted = args.trust.load_with(signer.public_key())?;
    tracing::info!(
        key_id = signer.public_key().key_id(),
        fingerprint = %signer.public_key().fingerprint(),
        public_key = %signer.public_key().to_text(),
        "signing game log records"
    );

    if args.session_hours == 0 || args.session_hours > nats::MAX_SESSION_HOURS {
        anyhow::bail!(
            "--session-hours {} is out of range: 1 to {} (an ended session is remembered only \
             that long)",
            args.session_hours,
            nats::MAX_SESSION_HOURS
        );
    }
    let auth = Arc::new(
        auth::Authenticator::load(
            &args.users,
            &args.session_key,
            Duration::from_secs(args.session_hours.saturating_mul(3600)),
            args.open_reads,
            args.trusted_proxies.clone(),
        )
        .context("loading users")?,
    );
    {
        let auth = auth.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tick.tick().await;
                auth.reload_if_changed();
            }
        });
    }

    let client = nats::connect(&args.nats, "boardcast-game-service").await?;
    let js = async_nats::jetstream::new(client);
    // Connections of their own for the partitions (see `ingest::CONNECTIONS`).
    let mut ingest_connections = Vec::with_capacity(ingest::CONNECTIONS);
    for i in 0..ingest::CONNECTIONS {
        let name = format!("boardcast-game-service-ingest-{i}");
        ingest_connections.push(async_nats::jetstream::new(
            nats::connect(&args.nats, &name).await?,
        ));
    }
    // Right after a cluster node fails JetStream may not answer until its leaders are elected:
    // keep trying for a while rather than exit.
    retrying("creating the streams", || {
        nats::ensure_streams(&js, args.replicas, args.partitions)
    })
    .await?;

    // A snapshot that cannot be opened (another instance holds the file, a bad file) only costs
    // start-up time: run without one.
    let log_created = retrying("reading the game log's details", || {
        nats::game_log_created(&js)
    })
    .await?;
    let snapshots = match snapshot::Snapshots::open(&args.snapshot, &log_created) {
        Ok(s) => Some(Arc::new(s)),
        Err(e) => {
            tracing::warn!("running without snapshots: {e}");
            None
        }
    };
    let read_snapshot = || match snapshots.as_deref().map(snapshot::Snapshots::read) {
        Some(Ok(saved)) => saved,
        Some(Err(e)) => {
            tracing::warn!("ignoring the snapshot: {e}");
            None
        }
        None => None,
    };
    let mut had_snapshot = false;
    let started = std::time::Instant::now();
    let (store, used_snapshot) = retrying("rebuilding the games", || {
        let saved = read_snapshot();
        had_snapshot = saved.is_some();
        store::Store::load(js.clone(), saved, signer.clone(), trusted.clone())
    })
    .await?;
    let store = Arc::new(store);
    let following = tokio::spawn(store.clone().follow());
    if had_snapshot && !used_snapshot {
        // The snapshot belongs to another log: start it again from what was just folded.
        if let Some(s) = &snapshots
            && let Err(e) = s.clear()
        {
            tracing::warn!("clearing the snapshot: {e}");
        }
    }
    tracing::info!(
        games = store.game_count().await,
        folded_seq = store.folded_seq().await,
        used_snapshot,
        ms = started.elapsed().as_millis() as u64,
        "games rebuilt"
    );

    // Every assignment so far before the first call is answered; then those of the other
    // instances as they come.
    let assignments = Arc::new(
        retrying("reading the arbiters' assignments", || {
            assignments::AssignmentLog::open(js.clone(), auth.clone())
        })
        .await?,
    );
    {
        let assignments = assignments.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(250));
            loop {
                tick.tick().await;
                if let Err(e) = assignments.catch_up().await {
                    tracing::warn!("following the arbiters' assignments: {e:#}");
                }
            }
        });
    }

    // Every session ended so far before the first call is answered; then those ended on the
    // other instances, and in the users file, as they come.
    let sessions = Arc::new(
        retrying("reading the ended sessions", || {
            sessions::SessionLog::open(js.clone(), auth.clone())
        })
        .await?,
    );
    {
        let sessions = sessions.clone();
        tokio::spawn(async move { sessions.follow().await });
    }

    // gRPC health (grpc.health.v1): serving while the game log can be read.
    let (health, health_service) = tonic_health::server::health_reporter();
    health
        .set_serving::<GameServiceServer<grpc::GameApi>>()
        .await;
    readiness.set(true);

    let ingest = tokio::spawn(ingest::run(
        ingest_connections,
        store.clone(),
        ingest::IngestSettings {
            partitions: args.partitions,
            ack_wait: Duration::from_secs(args.ack_wait),
            standby: args.standby,
        },
    ));
    // Other instances may append too: follow the log so reads here are at most this far behind.
    let follow = {
        let store = store.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(250));
            let mut serving = true;
            loop {
                tick.tick().await;
                // A decision or append that has not finished for this long: no progress is being
                // made (NATS does not answer), whatever the reads still answer.
                let stuck = store.busy_for().is_some_and(|d| d > STUCK_AFTER);
                let progress = if stuck {
                    Err(format!(
                        "a decision or append has been waiting on NATS for over {} s",
                        STUCK_AFTER.as_secs()
                    ))
                } else {
                    // The follower folds everything the log held a moment ago.
                    match tokio::time::timeout(REFRESH_WITHIN, store.refresh()).await {
                        Ok(result) => result.map_err(|e| e.to_string()),
                        Err(_) => Err(format!(
                            "the game log could not be read within {} s",
                            REFRESH_WITHIN.as_secs()
                        )),
                    }
                };
                match progress {
                    Ok(()) if !serving => {
                        serving = true;
                        readiness.set(true);
                        tracing::info!("the game log is readable again and decisions go on");
                        health
                            .set_serving::<GameServiceServer<grpc::GameApi>>()
                            .await;
                    }
                    Ok(()) => {}
                    Err(e) => {
                        tracing::warn!("not making progress: {e}");
                        if serving {
                            serving = false;
                            readiness.set(false);
                            health
                                .set_not_serving::<GameServiceServer<grpc::GameApi>>()
                                .await;
                        }
                    }
                }
            }
        })
    };
    // One task writes every snapshot, the last one on shutdown, so writes never overlap.
    let (stop_snapshots, mut stopping) = tokio::sync::watch::channel(false);
    let snapshotting = snapshots.clone().map(|snapshots| {
        let store = store.clone();
        let every = Duration::from_secs(args.snapshot_interval.max(1));
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tokio::select! {
                    _ = tick.tick() => write_snapshot(&store, &snapshots).await,
                    _ = stopping.changed() => {
                        write_snapshot(&store, &snapshots).await;
                        break;
                    }
                }
            }
        })
    });

    let service = grpc::GameApi::new(store.clone(), js.clone(), auth, assignments, sessions);
    let listener = tokio::net::TcpListener::bind(args.grpc_listen)
        .await
        .with_context(|| format!("binding the gRPC address {}", args.grpc_listen))?;
    tracing::info!(addr = %args.grpc_listen, "serving gRPC");
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    let (shutdown, grace_over) = boardcast_kit::shutdown::with_grace(SHUTDOWN_GRACE);
    // Each call in a span of its own, continuing the caller's trace (an arbiter's ruling, say).
    let mut server = tonic::transport::Server::builder().trace_fn(|request| {
        let span = tracing::info_span!("grpc", path = %request.uri().path());
        boardcast_kit::telemetry::continue_trace(
            &span,
            boardcast_kit::telemetry::context_from_http(request.headers()),
        );
        span
    });
    if let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) {
        let read = |path: &PathBuf| {
            std::fs::read(path).with_context(|| format!("reading {}", path.display()))
        };
        server = server
            .tls_config(tonic::transport::ServerTlsConfig::new().identity(
                tonic::transport::Identity::from_pem(read(cert)?, read(key)?),
            ))
            .context("setting up TLS for gRPC")?;
        tracing::info!("gRPC over TLS");
    }
    let serve = server
        .add_service(health_service)
        .add_service(GameServiceServer::new(service))
        .serve_with_incoming_shutdown(incoming, shutdown);

    let outcome = tokio::select! {
        result = serve => result.context("gRPC server failed"),
        result = ingest => match result {
            Ok(r) => r.context("ingest stopped"),
            Err(e) => Err(anyhow::Error::from(e).context("ingest task panicked")),
        },
        _ = games_poisoned(&store) => Err(anyhow::anyhow!(
            "a panic (a bug) struck while games were being folded: the games here may no longer \
             match the game log; stopping, so that a restart folds them again from the last \
             snapshot and the log"
        )),
        _ = grace_over => Ok(()),
    };
    follow.abort();
    following.abort();
    let _ = stop_snapshots.send(true);
    if let Some(task) = snapshotting
        && let Err(e) = task.await
    {
        tracing::warn!("writing the last snapshot: {e}");
    }
    tracing::info!("stopped");
    outcome
}

/// Returns once a panic (a bug) struck while the games were being changed (see
/// `Store::games_poisoned`). Nothing is decided on them from then on; this stops the service.
async fn games_poisoned(store: &store::Store) {
    let mut look = tokio::time::interval(Duration::from_millis(100));
    while !store.games_poisoned() {
        look.tick().await;
    }
}

/// Writes the games changed since the last snapshot, with the log position, in one transaction.
async fn write_snapshot(store: &Arc<store::Store>, snapshots: &Arc<snapshot::Snapshots>) {
    // After a failed write the file may lack games that changed then: write all of them.
    let full = snapshots.needs_full();
    let Some(changes) = store.take_changes(full).await else {
        if store.games_poisoned() {
            tracing::error!(
                "not writing the snapshot: a panic struck while games were being folded"
            );
        }
        return;
    };
    let writer = snapshots.clone();
    match tokio::task::spawn_blocking(move || writer.write(&changes, full)).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!("writing the snapshot: {e}"),
        Err(e) => tracing::warn!("writing the snapshot: {e}"),
    }
}

/// Runs `attempt` until it succeeds, for up to two minutes, logging each failure.
async fn retrying<T, F, Fut>(what: &str, mut attempt: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<T>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        match attempt().await {
            Ok(value) => return Ok(value),
            Err(e) if tokio::time::Instant::now() < deadline => {
                tracing::warn!("{what}: {e:#}; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            Err(e) => return Err(e.context(format!("{what} (gave up after two minutes)"))),
        }
    }
}

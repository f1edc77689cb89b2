//! boardcast-broadcast-service: what viewers see.
//!
//! Follows the game log and serves each round as PGN and JSON feeds, live updates (server-sent
//! events, WebSocket, NATS subjects) and the hall's monitor pages, all held back by the
//! organiser's delay; optionally pushes each round to a lichess broadcast.

mod delays;
mod http;
mod metrics;
mod projection;
mod push;
mod state;

use std::{collections::BTreeMap, net::SocketAddr, path::PathBuf, sync::Arc, time::Duration};

use anyhow::Context as _;
use boardcast_feeds::Delays;
use boardcast_kit::{http_server, nats};
use clap::Parser;

#[derive(Parser, Debug)]
#[command(
    name = "boardcast-broadcast-service",
    version,
    about = "The boardcast broadcast service: PGN feeds, live updates and hall monitors from the game log",
    long_about = "The boardcast broadcast service: PGN feeds, live updates and hall monitors built from the \
game log, held back by the organiser's delay.\n\n\
Routes (T = tournament id, N = round number, B = board number):\n  \
/                                  index of tournaments and rounds\n  \
/tournaments/T/rounds/N.pgn        the round's games as PGN, board order, with the moves the board shows\n                                     before the clock press marked {provisional: ...} (for sites that can\n                                     take a move back; others poll lichess.pgn, completed moves only)\n  \
/tournaments/T/rounds/N.json       the same as JSON\n  \
/tournaments/T/rounds/N/lichess.pgn  the round as a lichess broadcast polling it takes it: completed\n                                     moves, at most 100 games (?boards=FIRST-LAST for a range)\n  \
/games/ID.pgn, /games/ID.json      one game\n  \
/tournaments/T/rounds/N/live       monitor page: every board of the round\n  \
/tournaments/T/rounds/N/boards/B   monitor page: one board, big (?lang=de for German piece letters)\n  \
/tournaments/T/rounds/N/hall       monitor page: the boards one after another (?every=SECONDS)\n  \
/tournaments/T/rounds/N/updates    live updates, server-sent events (Last-Event-ID or ?since=VERSION)\n  \
/tournaments/T/rounds/N/ws         the same over WebSocket\n  \
/games/ID/updates                  live updates of one game\n  \
/api/push                          the lichess push's status per round\n  \
/healthz, /readyz                  alive; caught up with the game log\n\n\
/metrics (Prometheus text: live connections, log-to-fold latency) is served on --metrics-listen only.\n\
Live updates are also published as JSON on NATS: each game whole on boardcast.feed.T.N.B, as deltas\n\
on boardcast.delta.T.N.B (docs/live-updates.md)."
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
    /// Address to serve HTTP on.
    #[arg(long, env = "BOARDCAST_HTTP_LISTEN", default_value = "127.0.0.1:8080")]
    http_listen: SocketAddr,
    /// Address to serve /metrics on, for operators (e.g. 127.0.0.1:9465); none without it. Not
    /// on the public address: its counters move with play, which a delay must not show.
    #[arg(long, env = "BOARDCAST_METRICS_LISTEN")]
    metrics_listen: Option<SocketAddr>,
    /// Open connections at once (live pages included); more are answered 503 and closed.
    #[arg(long, env = "BOARDCAST_MAX_CONNECTIONS", default_value_t = 20_000,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    max_connections: u64,
    /// Open connections at once from one address (but --proxy addresses): one script on one
    /// machine cannot take every place.
    #[arg(long, env = "BOARDCAST_MAX_CONNECTIONS_PER_ADDRESS", default_value_t = 1_000,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    max_connections_per_address: u64,
    /// The address of a reverse proxy or CDN in front, whose connections carry many viewers:
    /// --max-connections-per-address does not apply to it. Repeatable.
    #[arg(long = "proxy", env = "BOARDCAST_PROXIES", value_delimiter = ',')]
    proxies: Vec<std::net::IpAddr>,
    /// Seconds a client may take to send a request's headers (the first, or the next on a
    /// kept-alive connection) before the connection is closed.
    #[arg(long, env = "BOARDCAST_HEADER_TIMEOUT", default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(1..=600))]
    header_timeout: u64,
    /// Where the projection is kept between runs (a redb file).
    #[arg(
        long,
        env = "BOARDCAST_BROADCAST_STATE",
        default_value = "var/broadcast.redb"
    )]
    state: PathBuf,
    /// How often what changed is written to --state (milliseconds). Nothing waits for the disk
    /// before a viewer sees a move; after a crash the service reads the game log again from
    /// what was last written.
    #[arg(long, env = "BOARDCAST_STORE_EVERY_MS", default_value_t = 200,
          value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    store_every_ms: u64,
    /// The organiser's delay, 0 to 60 minutes: MINUTES for every round, TOURNAMENT=MINUTES or
    /// TOURNAMENT/ROUND=MINUTES (or SECONDS followed by s, e.g. 90s); repeat the option for
    /// several. Moves, clocks, results and board status are shown that long after they were
    /// recorded, on every route.
    #[arg(long = "delay", env = "BOARDCAST_DELAY", value_delimiter = ',')]
    delays: Vec<String>,
    /// A file with more delay settings, one per line (as --delay, `#` starts a comment), read
    /// again whenever it changes: the way to change a delay during a round.
    #[arg(long, env = "BOARDCAST_DELAY_FILE")]
    delay_file: Option<PathBuf>,
    /// Push a round to a lichess broadcast round on every change (its completed moves; what
    /// the board shows before the press follows it): TOURNAMENT/ROUND=LICHESS_ROUND_ID; repeat
    /// for several rounds. A lichess round holds at most 100 games: push a larger round as
    /// ranges of boards, TOURNAMENT/ROUND:1-100=ID1, TOURNAMENT/ROUND:101-200=ID2, …
    /// (comma-separated in the environment).
    #[arg(
        long = "push-lichess",
        env = "BOARDCAST_PUSH_LICHESS",
        value_delimiter = ','
    )]
    push_lichess: Vec<push::PushTarget>,
    /// The lichess server to push to.
    #[arg(
        long,
        env = "BOARDCAST_LICHESS_URL",
        default_value = "https://lichess.org"
    )]
    lichess_url: String,
    /// The lichess API token (with study:write) for the push.
    #[arg(long, env = "BOARDCAST_LICHESS_TOKEN", hide_env_values = true)]
    lichess_token: Option<String>,
    /// Which signatures are accepted on the game log's records.
    #[command(flatten)]
    trust: boardcast_kit::signing::TrustArgs,
}

/// How long open live pages may keep the service from stopping after Ctrl-C or SIGTERM.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

/// The delays from the command line, then the file's (later ones win).
fn read_delays(args: &Args) -> anyhow::Result<Delays> {
    let mut settings: Vec<String> = args.delays.clone();
    if let Some(path) = &args.delay_file {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the delay file {}", path.display()))?;
        settings.extend(
            text.lines()
                .map(|l| l.split('#').next().unwrap_or_default().trim().to_owned())
                .filter(|l| !l.is_empty()),
        );
    }
    Delays::parse(settings.iter().map(String::as_str)).context("reading the delays")
}

/// Reads the delay file again whenever it changes. A file that cannot be read or has a bad
/// line leaves the delays as they were, and says so.
async fn watch_delays(
    args: Arc<Args>,
    projection: Arc<projection::Projection>,
    sources: Arc<std::sync::Mutex<delays::DelaySources>>,
) {
    let Some(path) = args.delay_file.clone() else {
        return;
    };
    let modified = |p: &PathBuf| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let mut seen = modified(&path);
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = modified(&path);
        if now == seen {
            continue;
        }
        seen = now;
        match read_delays(&args) {
            Ok(configured) => {
                tracing::info!(file = %path.display(), "delays changed: {configured:?}");
                let effective = {
                    let mut sources = sources.lock().unwrap_or_else(|e| e.into_inner());
                    sources.configured = configured;
                    sources.effective()
                };
                if let Err(e) = projection.set_delays(effective) {
                    tracing::error!("applying the new delays: {e:#}");
                }
            }
            Err(e) => tracing::error!("the delay file was not applied: {e:#}"),
        }
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Arc::new(Args::parse());
    boardcast_kit::nats::trust_authority(args.nats_ca.as_deref());
    let _telemetry = boardcast_kit::telemetry::init("boardcast-broadcast-service", "info")?;
    let exposition = boardcast_kit::metrics::install("boardcast-broadcast-service")?;
    let delays = read_delays(&args)?;
    if !args.push_lichess.is_empty() && args.lichess_token.is_none() {
        anyhow::bail!(
            "--push-lichess needs a lichess API token with study:write: \
             set BOARDCAST_LICHESS_TOKEN or --lichess-token"
        );
    }

    let client = nats::connect(&args.nats, "boardcast-broadcast-service").await?;
    let js = async_nats::jetstream::new(client.clone());
    // The game service creates the streams; this service may only read the game log.
    nats::require_streams(&js, &[nats::GAMES_STREAM, nats::DELAYS_STREAM]).await?;

    let log_created = nats::game_log_created(&js).await?;
    let state = state::State::open(&args.state, &log_created)?;
    // Every recorded delay is known before anything is released.
    let (recorded, next_delay_seq) = delays::read_all(&js).await?;
    let sources = Arc::new(std::sync::Mutex::new(delays::DelaySources {
        configured: delays,
        recorded,
    }));
    let effective = sources
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .effective();
    let (feed_updates, to_publish) = tokio::sync::mpsc::channel(projection::FEED_QUEUE);
    let projection = Arc::new(projection::Projection::open(
        state,
        effective,
        args.trust.load()?,
        Some(feed_updates),
    )?);
    // Every background task lives in this set and is stopped before the runtime shuts down:
    // a task still running then (the release uses `block_in_place`) would panic on its timer.
    let mut background = tokio::task::JoinSet::new();
    background.spawn(projection::publish_feed_updates(client, to_publish));
    background.spawn(delays::follow(
        js.clone(),
        projection.clone(),
        sources.clone(),
        next_delay_seq,
    ));
    let mut follow = tokio::spawn(projection::follow(js, projection.clone()));
    let mut release = tokio::spawn(projection::release_when_due(projection.clone()));
    let mut store = tokio::spawn(projection::store_changes(
        projection.clone(),
        Duration::from_millis(args.store_every_ms),
    ));
    background.spawn(watch_delays(args.clone(), projection.clone(), sources));
    let pushes: push::PushStatuses = Arc::new(std::sync::Mutex::new(BTreeMap::new()));
    for target in &args.push_lichess {
        background.spawn(push::push_round(
            projection.clone(),
            target.clone(),
            args.lichess_url.clone(),
            args.lichess_token.clone().unwrap_or_default(),
            pushes.clone(),
        ));
    }

    let listener = std::net::TcpListener::bind(args.http_listen)
        .with_context(|| format!("binding the HTTP address {}", args.http_listen))?;
    tracing::info!(addr = %args.http_listen, "serving HTTP");
    if let Some(addr) = args.metrics_listen {
        boardcast_kit::metrics::serve_metrics(addr, exposition).await?;
    }
    // Kept for as long as the service runs: it reports the live connections when scraped.
    let _subscribers = {
        let projection = projection.clone();
        opentelemetry::global::meter("boardcast-broadcast-service")
            .u64_observable_gauge("boardcast.feed.subscribers")
            .with_description("Live connections (SSE and WebSocket) to the rounds' feeds")
            .with_callback(move |gauge| gauge.observe(projection.subscriber_count(), &[]))
            .build()
    };
    let app = http::App::new(projection.clone(), pushes);
    let limits = http_server::Limits {
        max_connections: usize::try_from(args.max_connections).unwrap_or(usize::MAX),
        max_per_address: usize::try_from(args.max_connections_per_address).unwrap_or(usize::MAX),
        unlimited_addresses: args.proxies.clone(),
        header_timeout: Duration::from_secs(args.header_timeout),
    };
    let handle = axum_server::Handle::new();
    let mut server = tokio::spawn(http_server::serve(
        listener,
        http::router(app),
        limits,
        None,
        handle.clone(),
    ));
    let outcome: anyhow::Result<()> = tokio::select! {
        result = &mut server => result
            .context("the HTTP server panicked")
            .and_then(|r| r),
        result = &mut follow => result
            .context("game log follower panicked")
            .and_then(|r| r.context("game log follower stopped")),
        result = &mut release => result
            .context("the release of delayed moves panicked")
            .and_then(|r| r.context("the release of delayed moves stopped")),
        result = &mut store => result
            .context("storing the feeds panicked")
            .and_then(|r| r.context("storing the feeds stopped")),
        _ = boardcast_kit::shutdown::signal() => {
            // Open live pages are cut after the grace: they reconnect (to another instance,
            // if there is one).
            handle.graceful_shutdown(Some(SHUTDOWN_GRACE));
            match tokio::time::timeout(SHUTDOWN_GRACE + Duration::from_secs(1), &mut server).await {
                Ok(Ok(Err(e))) => tracing::warn!("stopping the HTTP server: {e:#}"),
                Ok(_) => {}
                Err(_) => tracing::warn!("live pages still open {SHUTDOWN_GRACE:?} after the signal: stopping"),
            }
            Ok(())
        }
    };
    server.abort();
    for task in [follow, release, store] {
        task.abort();
        // The task `select!` saw end is finished and must not be awaited again.
        if !task.is_finished() {
            let _ = task.await;
        }
    }
    if let Err(e) = &outcome {
        tracing::error!("stopping: {e:#}");
    }
    background.shutdown().await;
    // What was shown since the last store, so that a restart reads little of the log again.
    projection
        .store()
        .context("storing the feeds before stopping")?;
    outcome?;
    tracing::info!("stopped");
    Ok(())
}

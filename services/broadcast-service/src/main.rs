//! boardcast-broadcast-service: what viewers see.
//!
//! Follows the game log and serves each round as a PGN feed (with `[%clk]`), each game as PGN,
//! and a live page for monitors in the hall and on the web.

mod http;
mod projection;

use std::{net::SocketAddr, sync::Arc, time::Duration};

use anyhow::Context as _;
use boardcast_kit::nats;
use clap::Parser;

#[derive(Parser, Debug)]
#[command(
    name = "boardcast-broadcast-service",
    version,
    about = "The boardcast broadcast service: PGN feeds and live pages built from the game log",
    long_about = "The boardcast broadcast service: PGN feeds and live pages built from the game log.\n\n\
Routes:\n  /                                        index of tournaments, rounds and games\n  \
/tournaments/{tournament}/rounds/{round}.pgn  the round's games as PGN (poll this from broadcast sites)\n  \
/games/{game_id}.pgn                     one game as PGN\n  \
/tournaments/{tournament}/rounds/{round}/live  live page of the round\n  \
/api/games                               all games as JSON\n  /healthz                                 liveness"
)]
struct Args {
    /// NATS server to use.
    #[arg(
        long,
        env = "BOARDCAST_NATS_URL",
        default_value = "nats://127.0.0.1:4222"
    )]
    nats: String,
    /// Address to serve HTTP on.
    #[arg(long, env = "BOARDCAST_HTTP_LISTEN", default_value = "127.0.0.1:8080")]
    http_listen: SocketAddr,
}

/// How long open live pages may keep the service from stopping after Ctrl-C or SIGTERM.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let _telemetry = boardcast_kit::telemetry::init("boardcast-broadcast-service")?;

    let client = nats::connect(&args.nats, "boardcast-broadcast-service").await?;
    let js = async_nats::jetstream::new(client);
    // The game service creates the streams; this service may only read the game log.
    nats::require_streams(&js, &[nats::GAMES_STREAM]).await?;

    let projection = Arc::new(projection::Projection::new());
    let follow = tokio::spawn(projection::follow(js, projection.clone()));

    let listener = tokio::net::TcpListener::bind(args.http_listen)
        .await
        .with_context(|| format!("binding the HTTP address {}", args.http_listen))?;
    tracing::info!(addr = %args.http_listen, "serving HTTP");
    let (shutdown, grace_over) = boardcast_kit::shutdown::with_grace(SHUTDOWN_GRACE);
    let serve = axum::serve(listener, http::router(projection)).with_graceful_shutdown(shutdown);
    tokio::select! {
        result = serve => result.context("HTTP server failed")?,
        result = follow => {
            result.context("game log follower panicked")?.context("game log follower stopped")?;
        }
        _ = grace_over => {}
    }
    tracing::info!("stopped");
    Ok(())
}

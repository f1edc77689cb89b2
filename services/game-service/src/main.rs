//! boardcast-game-service: the only writer of games.
//!
//! Consumes board observations from JetStream, folds them into games with the game aggregate,
//! appends the resulting events to each game's log, and serves games over gRPC.

mod grpc;
mod ingest;
mod store;

use std::{net::SocketAddr, sync::Arc};

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
BOARDCAST_DEADLETTER with the reason. On start it rebuilds every game from its log."
)]
struct Args {
    /// NATS server to use.
    #[arg(
        long,
        env = "BOARDCAST_NATS_URL",
        default_value = "nats://127.0.0.1:4222"
    )]
    nats: String,
    /// Address to serve gRPC on.
    #[arg(long, env = "BOARDCAST_GRPC_LISTEN", default_value = "127.0.0.1:50051")]
    grpc_listen: SocketAddr,
    /// JetStream replicas for streams this service creates (1 on a single server, 3 on a cluster).
    #[arg(long, env = "BOARDCAST_STREAM_REPLICAS", default_value_t = 1)]
    replicas: usize,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let _telemetry = boardcast_kit::telemetry::init("boardcast-game-service")?;

    let client = nats::connect(&args.nats, "boardcast-game-service").await?;
    let js = async_nats::jetstream::new(client);
    nats::ensure_streams(&js, args.replicas).await?;

    let store = Arc::new(store::Store::load(js.clone()).await?);
    tracing::info!(
        games = store.game_count().await,
        "games rebuilt from the log"
    );

    let ingest = tokio::spawn(ingest::run(js.clone(), store.clone()));

    let service = grpc::GameApi::new(store.clone(), js.clone());
    let listener = tokio::net::TcpListener::bind(args.grpc_listen)
        .await
        .with_context(|| format!("binding the gRPC address {}", args.grpc_listen))?;
    tracing::info!(addr = %args.grpc_listen, "serving gRPC");
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    let serve = tonic::transport::Server::builder()
        .add_service(GameServiceServer::new(service))
        .serve_with_incoming_shutdown(incoming, shutdown_signal());

    tokio::select! {
        result = serve => result.context("gRPC server failed")?,
        result = ingest => {
            result.context("ingest task panicked")?.context("ingest stopped")?;
        }
    }
    tracing::info!("stopped");
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!("cannot listen for SIGTERM: {e}");
                    let _ = ctrl_c.await;
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {},
            _ = term.recv() => {},
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}

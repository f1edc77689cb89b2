//! Test harness: a private `nats-server` per test, and the boardcast programs as real processes.
//!
//! Every test that needs NATS starts its own server on a free port with its own store directory;
//! no test depends on a NATS that happens to be running. Processes are stopped when dropped.
//! The programs under test are the ones built next to the test binary: `make test` builds them
//! first (`cargo build --bins`).

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::Duration,
};

use anyhow::{Context as _, bail};
pub use boardcast_kit::local::{LocalNats, ManagedProcess, free_port, wait_for_port};
use tempfile::TempDir;

pub mod browser;
pub mod cluster;

pub use cluster::TestCluster;

/// A private nats-server with JetStream and its own store directory, removed afterwards.
pub struct TestNats {
    pub server: LocalNats,
    dir: TempDir,
}

impl TestNats {
    pub fn start() -> anyhow::Result<TestNats> {
        let dir = tempfile::Builder::new()
            .prefix("boardcast-nats-")
            .tempdir()
            .context("creating a store directory for NATS")?;
        let server = LocalNats::start(&dir.path().join("store"), 0, Stdio::null())?;
        Ok(TestNats { server, dir })
    }

    pub fn url(&self) -> String {
        self.server.url()
    }

    pub fn store_dir(&self) -> &Path {
        self.dir.path()
    }
}

/// The path of one of the workspace's programs, built next to the running test.
pub fn program(name: &str) -> anyhow::Result<PathBuf> {
    let test_exe = std::env::current_exe().context("locating the test binary")?;
    // target/<profile>/deps/<test> → target/<profile>/<program>
    let profile_dir = test_exe
        .parent()
        .and_then(Path::parent)
        .context("unexpected test binary location")?;
    let path = profile_dir.join(name);
    if !path.is_file() {
        bail!(
            "{} is missing: build the programs before running these tests (`cargo build --bins`, which `make test` does)",
            path.display()
        );
    }
    Ok(path)
}

/// A running game service with its gRPC address.
pub struct GameService {
    pub process: ManagedProcess,
    pub grpc: SocketAddr,
    /// Holds the snapshot file when the test did not choose one.
    _dir: Option<TempDir>,
}

/// How to start a game service beyond the NATS URL.
#[derive(Default, Clone)]
pub struct GameServiceOptions {
    /// The snapshot file (`--snapshot`); a fresh temporary one when `None`.
    pub snapshot: Option<PathBuf>,
    /// More command-line arguments, e.g. `["--replicas", "3"]`.
    pub args: Vec<String>,
    /// Where the service's log (stderr) goes; inherited when `None`.
    pub log: Option<PathBuf>,
    /// `RUST_LOG` for the service; `warn` when `None`.
    pub rust_log: Option<String>,
}

impl GameService {
    pub fn start(nats_url: &str) -> anyhow::Result<GameService> {
        Self::start_with(nats_url, GameServiceOptions::default())
    }

    pub fn start_with(nats_url: &str, options: GameServiceOptions) -> anyhow::Result<GameService> {
        let grpc = SocketAddr::from(([127, 0, 0, 1], free_port()?));
        let (snapshot, dir) = match options.snapshot {
            Some(path) => (path, None),
            None => {
                let dir = tempfile::Builder::new()
                    .prefix("boardcast-game-service-")
                    .tempdir()
                    .context("creating a directory for the snapshot")?;
                (dir.path().join("snapshot.redb"), Some(dir))
            }
        };
        let stderr = match &options.log {
            Some(path) => Stdio::from(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .with_context(|| format!("opening {}", path.display()))?,
            ),
            None => Stdio::inherit(),
        };
        let mut process = ManagedProcess::spawn(
            "boardcast-game-service",
            Command::new(program("boardcast-game-service")?)
                .args(["--nats", nats_url, "--grpc-listen", &grpc.to_string()])
                .arg("--snapshot")
                .arg(&snapshot)
                .args(&options.args)
                .env("RUST_LOG", options.rust_log.as_deref().unwrap_or("warn"))
                .stdin(Stdio::null())
                .stderr(stderr),
        )?;
        wait_for_port(&mut process, grpc, Duration::from_secs(60))?;
        Ok(GameService {
            process,
            grpc,
            _dir: dir,
        })
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.grpc)
    }
}

/// A running broadcast service with its HTTP address.
pub struct BroadcastService {
    pub process: ManagedProcess,
    pub http: SocketAddr,
}

impl BroadcastService {
    pub fn start(nats_url: &str) -> anyhow::Result<BroadcastService> {
        let http = SocketAddr::from(([127, 0, 0, 1], free_port()?));
        let mut process = ManagedProcess::spawn(
            "boardcast-broadcast-service",
            Command::new(program("boardcast-broadcast-service")?)
                .args(["--nats", nats_url, "--http-listen", &http.to_string()])
                .env("RUST_LOG", "warn")
                .stdin(Stdio::null()),
        )?;
        wait_for_port(&mut process, http, Duration::from_secs(30))?;
        Ok(BroadcastService { process, http })
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.http)
    }
}

/// The repository's root directory.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_owned)
        .unwrap_or_else(|| PathBuf::from("."))
}

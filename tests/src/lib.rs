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

pub mod arbiter;
pub mod browser;
pub mod cluster;
pub mod otlp;
pub mod secure_nats;

pub use arbiter::ArbiterService;
pub use cluster::{NatsServer, TestCluster};
pub use otlp::OtlpCollector;

/// A private nats-server with JetStream and its own store directory, removed afterwards.
pub struct TestNats {
    pub server: LocalNats,
    dir: TempDir,
}

impl TestNats {
    pub fn start() -> anyhow::Result<TestNats> {
        Self::start_partitioned(boardcast_kit::nats::DEFAULT_PARTITIONS)
    }

    /// A server whose mapping spreads boards over `partitions` partitions (0: no mapping).
    pub fn start_partitioned(partitions: u32) -> anyhow::Result<TestNats> {
        Self::start_partitioned_with(partitions, "")
    }

    /// A server that writes every JetStream message to disk before acknowledging it, as the
    /// shipped configurations set it up (`sync_interval: always`).
    pub fn start_synced() -> anyhow::Result<TestNats> {
        Self::start_partitioned_with(
            boardcast_kit::nats::DEFAULT_PARTITIONS,
            "jetstream { sync_interval: always }",
        )
    }

    fn start_partitioned_with(partitions: u32, more_config: &str) -> anyhow::Result<TestNats> {
        let dir = tempfile::Builder::new()
            .prefix("boardcast-nats-")
            .tempdir()
            .context("creating a store directory for NATS")?;
        // Its log is kept beside the store, and is in the error if it does not start; a port
        // taken by another process between being found free and the server listening on it
        // makes it exit, and other ports are tried.
        let log_path = dir.path().join("nats.log");
        let mut attempts = 0;
        let server = loop {
            attempts += 1;
            let log = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&log_path)
                .context("creating the NATS log")?;
            match LocalNats::start_partitioned_with(
                &dir.path().join("store"),
                0,
                Stdio::from(log),
                partitions,
                more_config,
            ) {
                Ok(server) => break server,
                Err(e) if attempts < 3 => eprintln!("nats-server did not start ({e:#}); again"),
                Err(e) => {
                    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
                    return Err(e.context(format!("its log:\n{log}")));
                }
            }
        };
        Ok(TestNats { server, dir })
    }

    pub fn url(&self) -> String {
        self.server.url()
    }

    pub fn store_dir(&self) -> &Path {
        self.dir.path()
    }
}

/// Observations the game service has not decided yet, over all its partitions' consumers:
/// (waiting, in flight). `None` while its consumers are not all created yet (just started).
pub async fn undecided_observations(
    js: &async_nats::jetstream::Context,
) -> anyhow::Result<Option<(u64, usize)>> {
    use boardcast_kit::nats::{ingest_stream, observation_partitions};
    use boardcast_kit::nats_access::ingest_consumer;
    // The game service creates every stream before any consumer: until each stream it lists
    // has its consumer, it has not started consuming.
    let partitions = observation_partitions(js).await?;
    if partitions.len() < 2 {
        return Ok(None);
    }
    let (mut waiting, mut in_flight) = (0, 0);
    for partition in partitions {
        let name = ingest_stream(partition);
        let stream = js
            .get_stream(&name)
            .await
            .with_context(|| format!("opening the observation stream {name}"))?;
        let consumer = ingest_consumer(partition);
        let info = match stream.consumer_info(&consumer).await {
            Ok(info) => info,
            Err(e)
                if e.kind() == async_nats::jetstream::context::ConsumerInfoErrorKind::NotFound =>
            {
                return Ok(None);
            }
            Err(e) => {
                return Err(e).with_context(|| format!("reading consumer {consumer} of {name}"));
            }
        };
        waiting += info.num_pending;
        // One handed back to wait a moment (a recent gap) is neither pending nor in flight
        // while it waits: it shows as delivered beyond the acknowledged.
        let handed_back = info.delivered.consumer_sequence > info.ack_floor.consumer_sequence;
        in_flight += info.num_ack_pending.max(usize::from(handed_back));
    }
    Ok(Some((waiting, in_flight)))
}

/// Board `board`'s observation `device_seq` of `kind`, made and received at `device_seq`
/// seconds, published as a gateway does, with its message id.
pub async fn publish_observation(
    js: &async_nats::jetstream::Context,
    board: &str,
    device_seq: u64,
    kind: boardcast_schema::device::v1::observation::Kind,
) -> anyhow::Result<()> {
    use prost::Message as _;
    let at_ms = i64::try_from(device_seq)?.saturating_mul(1_000);
    let observation = boardcast_schema::device::v1::Observation {
        board_id: board.into(),
        device_seq,
        device_time_unix_ms: at_ms,
        receive_time_unix_ms: at_ms,
        kind: Some(kind),
        ..Default::default()
    };
    let message = async_nats::jetstream::message::PublishMessage::build()
        .payload(observation.encode_to_vec().into())
        .message_id(boardcast_kit::nats::observation_message_id(
            board,
            device_seq,
            rand::random(),
        ));
    js.send_publish(boardcast_kit::nats::observation_subject(board), message)
        .await?
        .await?;
    Ok(())
}

/// A board showing the position after `sans` (SAN) from the start, as its gateway reports a
/// whole board.
pub fn showing(sans: &[&str]) -> anyhow::Result<boardcast_schema::device::v1::observation::Kind> {
    use shakmaty::{Chess, Position as _, san::San};
    let mut pos = Chess::default();
    for san in sans {
        let mv = san.parse::<San>()?.to_move(&pos)?;
        pos.play_unchecked(mv);
    }
    Ok(boardcast_schema::device::v1::observation::Kind::Placement(
        boardcast_schema::device::v1::BoardPlacement {
            placement: pos.board().board_fen().to_string(),
        },
    ))
}

/// A clock reading: `running`, White's and Black's displays in ms, no flag.
pub fn clock_shows(
    running: boardcast_schema::device::v1::ClockRun,
    white_ms: u64,
    black_ms: u64,
) -> boardcast_schema::device::v1::observation::Kind {
    boardcast_schema::device::v1::observation::Kind::Clock(
        boardcast_schema::device::v1::ClockReading {
            white_remaining_ms: white_ms,
            black_remaining_ms: black_ms,
            running: running as i32,
            ..Default::default()
        },
    )
}

/// Board `board`'s observation `device_seq`: its gateway reporting `state` and
/// `battery_percent` (see [`publish_observation`]).
pub async fn publish_status(
    js: &async_nats::jetstream::Context,
    board: &str,
    device_seq: u64,
    state: boardcast_schema::device::v1::DeviceState,
    battery_percent: u32,
) -> anyhow::Result<()> {
    use boardcast_schema::device::v1::{DeviceStatus, observation::Kind};
    let status = Kind::Status(DeviceStatus {
        state: state as i32,
        battery_percent: Some(battery_percent),
        ..Default::default()
    });
    publish_observation(js, board, device_seq, status).await
}

/// Every observation stored when called, of every observation stream (the unpartitioned one and
/// the partitions'), in the order stored (a board's are in one stream, in its order).
pub async fn every_observation(
    js: &async_nats::jetstream::Context,
) -> anyhow::Result<Vec<async_nats::jetstream::message::StreamMessage>> {
    let mut all = Vec::new();
    for partition in boardcast_kit::nats::observation_partitions(js).await? {
        all.extend(every_message(js, &boardcast_kit::nats::ingest_stream(partition)).await?);
    }
    all.sort_by_key(|message| message.time);
    Ok(all)
}

/// Every message stored in `stream` when called, in stream order (see [`messages_up_to`]).
pub async fn every_message(
    js: &async_nats::jetstream::Context,
    stream: &str,
) -> anyhow::Result<Vec<async_nats::jetstream::message::StreamMessage>> {
    let mut stream = js
        .get_stream(stream)
        .await
        .with_context(|| format!("looking up {stream}"))?;
    let last = stream.info().await?.state.last_sequence;
    messages_up_to(&stream, ">", last).await
}

/// The messages on `subject` in `stream` up to stream sequence `last`, in stream order, read by
/// message gets (an ordered consumer can stall for long on nats-server 2.9 after a leader
/// change, or deliver a record again, which says nothing about what is stored); a read that
/// fails is tried again, up to ten times.
pub async fn messages_up_to(
    stream: &async_nats::jetstream::stream::Stream,
    subject: &str,
    last: u64,
) -> anyhow::Result<Vec<async_nats::jetstream::message::StreamMessage>> {
    let mut read = Vec::new();
    let mut seq = 1;
    let mut failures = 0;
    while seq <= last {
        match boardcast_kit::nats::next_message(stream, seq, subject).await {
            Ok(Some(message)) if message.sequence <= last => {
                seq = message.sequence + 1;
                read.push(message);
            }
            Ok(_) => break,
            Err(e) if failures < 10 => {
                failures += 1;
                eprintln!("reading {subject} from stream sequence {seq}: {e}; retrying");
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            }
            Err(e) => {
                return Err(e).with_context(|| format!("reading {subject} from {seq}"));
            }
        }
    }
    Ok(read)
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

/// The users the game services of a test process accept, in a users file of their own: an
/// `admin` (chief arbiter of every tournament) and whatever users a test adds.
pub struct TestUsers {
    dir: TempDir,
    directory: std::sync::Mutex<boardcast_access::Directory>,
    admin_token: String,
}

/// The password every test user gets.
pub const TEST_PASSWORD: &str = "a test password";

impl TestUsers {
    fn create() -> anyhow::Result<TestUsers> {
        use boardcast_access::{Directory, EVERY_TOURNAMENT, Grant, Role};
        let dir = tempfile::Builder::new()
            .prefix("boardcast-users-")
            .tempdir()
            .context("creating a directory for the users file")?;
        let mut directory = Directory::new();
        let mut rng = rand::rng();
        directory.add_user("admin", "Test chief arbiter")?;
        directory.grant(
            "admin",
            Grant {
                tournament: EVERY_TOURNAMENT.to_owned(),
                role: Role::ChiefArbiter,
                boards: Vec::new(),
            },
        )?;
        directory.set_password("admin", TEST_PASSWORD, &mut rng, 0)?;
        let admin_token = directory.new_token("admin", "tests", i64::MAX, &mut rng, 0)?;
        boardcast_kit::secrets::write_users(&dir.path().join("users.json"), &directory)?;
        boardcast_kit::secrets::session_key(&dir.path().join("session.key"))?;
        boardcast_kit::signing::create_signing_key(
            &dir.path().join("signing.key"),
            &dir.path().join("trusted-keys"),
        )?;
        Ok(TestUsers {
            dir,
            directory: std::sync::Mutex::new(directory),
            admin_token,
        })
    }

    /// The users of this test process (created on first use).
    pub fn shared() -> anyhow::Result<&'static TestUsers> {
        static USERS: std::sync::OnceLock<TestUsers> = std::sync::OnceLock::new();
        if let Some(users) = USERS.get() {
            return Ok(users);
        }
        let created = TestUsers::create()?;
        Ok(USERS.get_or_init(|| created))
    }

    pub fn users_file(&self) -> PathBuf {
        self.dir.path().join("users.json")
    }

    pub fn session_key(&self) -> PathBuf {
        self.dir.path().join("session.key")
    }

    /// The game services' signing key.
    pub fn signing_key(&self) -> PathBuf {
        self.dir.path().join("signing.key")
    }

    /// The trusted-keys file listing the signing key's public key, for every log reader.
    pub fn trusted_keys(&self) -> PathBuf {
        self.dir.path().join("trusted-keys")
    }

    /// The signing key itself, to sign records as the game service would.
    pub fn signer(&self) -> anyhow::Result<boardcast_game::signing::RecordSigner> {
        boardcast_kit::signing::read_signing_key(&self.signing_key())
    }

    /// The API token of `admin`, chief arbiter of every tournament.
    pub fn admin_token(&self) -> &str {
        &self.admin_token
    }

    /// Adds a user with these grants and the password `TEST_PASSWORD` (a user that exists
    /// already gets the grants), and returns a new API token of the user. The game services
    /// read the file again within about a second: wait for it with `GameService::wait_for_user`.
    pub fn add(&self, user: &str, grants: &[boardcast_access::Grant]) -> anyhow::Result<String> {
        let mut directory = self
            .directory
            .lock()
            .map_err(|_| anyhow::anyhow!("the test users are poisoned"))?;
        let mut rng = rand::rng();
        if !directory.users.contains_key(user) {
            directory.add_user(user, user)?;
            directory.set_password(user, TEST_PASSWORD, &mut rng, 0)?;
        }
        for grant in grants {
            directory.grant(user, grant.clone())?;
        }
        let token = directory.new_token(user, "tests", i64::MAX, &mut rng, 0)?;
        boardcast_kit::secrets::write_users(&self.users_file(), &directory)?;
        Ok(token)
    }
}

impl TestUsers {
    /// Changes the users file as `boardcast users` would (a password, a disabled user, a
    /// token); the game services read it again within about a second.
    pub fn edit<T>(
        &self,
        change: impl FnOnce(&mut boardcast_access::Directory) -> anyhow::Result<T>,
    ) -> anyhow::Result<T> {
        let mut directory = self
            .directory
            .lock()
            .map_err(|_| anyhow::anyhow!("the test users are poisoned"))?;
        let changed = change(&mut directory)?;
        boardcast_kit::secrets::write_users(&self.users_file(), &directory)?;
        Ok(changed)
    }
}

/// The admin token of this test process's game services.
pub fn admin_token() -> String {
    TestUsers::shared()
        .map(|u| u.admin_token().to_owned())
        .unwrap_or_default()
}

/// A gRPC client of the game service at `url`, calling as the test process's admin.
pub async fn admin_client(url: &str) -> anyhow::Result<boardcast_kit::client::GameClient> {
    boardcast_kit::client::game_client(url, Some(&admin_token())).await
}

/// A game of round 1 of `tournament` on board `board_id` (number `board_number`) between
/// "White" and "Black", at 90 minutes plus 30 seconds a move: what a test sets up unless it says
/// otherwise (`GameStarted { time_control: …, ..game_on_board(…) }`).
pub fn game_on_board(
    tournament: &str,
    board_number: u32,
    board_id: &str,
) -> boardcast_schema::game::v1::GameStarted {
    use boardcast_schema::game::v1::{GameStarted, Player, TimeControl, TimePeriod};
    let player = |name: &str| {
        Some(Player {
            name: name.into(),
            ..Default::default()
        })
    };
    GameStarted {
        tournament_id: tournament.into(),
        round: 1,
        board_number,
        board_id: board_id.into(),
        white: player("White"),
        black: player("Black"),
        time_control: Some(TimeControl {
            periods: vec![TimePeriod {
                base_ms: 5_400_000,
                increment_ms: 30_000,
                ..Default::default()
            }],
        }),
        ..Default::default()
    }
}

/// Two hours for the whole game, no increment.
pub fn two_hours() -> Option<boardcast_schema::game::v1::TimeControl> {
    use boardcast_schema::game::v1::{TimeControl, TimePeriod};
    Some(TimeControl {
        periods: vec![TimePeriod {
            base_ms: 7_200_000,
            ..Default::default()
        }],
    })
}

/// The request that sets up `game` (a new request id; an unfinished game on the board is not
/// replaced).
pub fn create_request(
    game: boardcast_schema::game::v1::GameStarted,
) -> boardcast_schema::game::v1::CreateGameRequest {
    boardcast_schema::game::v1::CreateGameRequest {
        game: Some(game),
        replace_unfinished: false,
        request_id: boardcast_kit::client::new_request_id(),
        revise: false,
    }
}

/// A running game service with its gRPC address.
pub struct GameService {
    pub process: ManagedProcess,
    pub grpc: SocketAddr,
    /// Where it serves /metrics, /healthz and /readyz.
    pub metrics: SocketAddr,
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
    /// More environment variables, e.g. fault points armed (`BOARDCAST_FAULT_PANIC`).
    pub env: Vec<(String, String)>,
    /// The users file (`--users`); the test process's shared one when `None`.
    pub users_file: Option<PathBuf>,
}

impl GameService {
    pub fn start(nats_url: &str) -> anyhow::Result<GameService> {
        Self::start_with(nats_url, GameServiceOptions::default())
    }

    pub fn start_with(nats_url: &str, options: GameServiceOptions) -> anyhow::Result<GameService> {
        let grpc = SocketAddr::from(([127, 0, 0, 1], free_port()?));
        let metrics = SocketAddr::from(([127, 0, 0, 1], free_port()?));
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
                .args(["--metrics-listen", &metrics.to_string()])
                .arg("--snapshot")
                .arg(&snapshot)
                .arg("--users")
                .arg(match &options.users_file {
                    Some(path) => path.clone(),
                    None => TestUsers::shared()?.users_file(),
                })
                .arg("--session-key")
                .arg(TestUsers::shared()?.session_key())
                .arg("--signing-key")
                .arg(TestUsers::shared()?.signing_key())
                .args(&options.args)
                .env("RUST_LOG", options.rust_log.as_deref().unwrap_or("warn"))
                .envs(options.env.iter().map(|(k, v)| (k, v)))
                .stdin(Stdio::null())
                .stderr(stderr),
        )?;
        wait_for_port(&mut process, grpc, Duration::from_secs(60))?;
        Ok(GameService {
            process,
            grpc,
            metrics,
            _dir: dir,
        })
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.grpc)
    }

    /// `path` on its metrics and health endpoint, e.g. `/metrics`.
    pub fn metrics_url(&self, path: &str) -> String {
        format!("http://{}{path}", self.metrics)
    }

    /// A client calling as the test process's admin.
    pub async fn client(&self) -> anyhow::Result<boardcast_kit::client::GameClient> {
        admin_client(&self.url()).await
    }

    /// A client calling with `token`.
    pub async fn client_as(
        &self,
        token: &str,
    ) -> anyhow::Result<boardcast_kit::client::GameClient> {
        boardcast_kit::client::game_client(&self.url(), Some(token)).await
    }

    /// Waits until the service accepts `token` (it reads the users file again within a second
    /// of a change).
    pub async fn wait_for_user(&self, token: &str) -> anyhow::Result<()> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let mut client = self.client_as(token).await?;
            match client
                .who_am_i(boardcast_schema::game::v1::WhoAmIRequest {})
                .await
            {
                Ok(_) => return Ok(()),
                Err(status) if tokio::time::Instant::now() < deadline => {
                    let _ = status;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(status) => bail!("the game service never accepted the token: {status}"),
            }
        }
    }
}

/// A running broadcast service with its HTTP address and its own state file.
pub struct BroadcastService {
    pub process: ManagedProcess,
    pub http: SocketAddr,
    /// Its operators' address (`/metrics`).
    pub metrics: SocketAddr,
    /// Holds the projection's redb file; kept across `restart`.
    pub dir: TempDir,
    nats_url: String,
    extra: Vec<String>,
}

impl BroadcastService {
    pub fn start(nats_url: &str) -> anyhow::Result<BroadcastService> {
        Self::start_with(nats_url, &[])
    }

    /// With more options, e.g. `["--delay", "5"]`.
    pub fn start_with(nats_url: &str, extra: &[&str]) -> anyhow::Result<BroadcastService> {
        let dir = tempfile::Builder::new()
            .prefix("boardcast-broadcast-")
            .tempdir()?;
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        let http = SocketAddr::from(([127, 0, 0, 1], free_port()?));
        let metrics = SocketAddr::from(([127, 0, 0, 1], free_port()?));
        let extra: Vec<String> = ["--metrics-listen".to_owned(), metrics.to_string()]
            .into_iter()
            .chain(extra)
            .collect();
        let process = Self::spawn(nats_url, http, &dir, &extra)?;
        Ok(BroadcastService {
            process,
            http,
            metrics,
            dir,
            nats_url: nats_url.to_owned(),
            extra,
        })
    }

    fn spawn(
        nats_url: &str,
        http: SocketAddr,
        dir: &TempDir,
        extra: &[String],
    ) -> anyhow::Result<ManagedProcess> {
        let mut process = ManagedProcess::spawn(
            "boardcast-broadcast-service",
            Command::new(program("boardcast-broadcast-service")?)
                .args(["--nats", nats_url, "--http-listen", &http.to_string()])
                .arg("--state")
                .arg(dir.path().join("broadcast.redb"))
                .arg("--trusted-keys")
                .arg(TestUsers::shared()?.trusted_keys())
                .args(extra)
                .env("RUST_LOG", "warn")
                .stdin(Stdio::null()),
        )?;
        wait_for_port(&mut process, http, Duration::from_secs(30))?;
        Ok(process)
    }

    /// Stops the service (SIGTERM) and starts it again on the same address and state file.
    pub fn restart(&mut self) -> anyhow::Result<()> {
        self.process.stop(Duration::from_secs(30))?;
        self.process = Self::spawn(&self.nats_url, self.http, &self.dir, &self.extra)?;
        Ok(())
    }

    /// Kills the service (SIGKILL: nothing stored on the way out) and starts it again on the
    /// same address and state file.
    pub fn crash_and_restart(&mut self) -> anyhow::Result<()> {
        self.process.kill_hard()?;
        self.process = Self::spawn(&self.nats_url, self.http, &self.dir, &self.extra)?;
        Ok(())
    }

    /// Waits until the service has caught up with the game log (`/readyz`).
    pub async fn wait_ready(&self, timeout: Duration) -> anyhow::Result<()> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Ok(r) = reqwest::get(self.url("/readyz")).await
                && r.status().is_success()
            {
                return Ok(());
            }
            if tokio::time::Instant::now() > deadline {
                anyhow::bail!("the broadcast service did not catch up within {timeout:?}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.http)
    }

    /// A URL on its operators' address.
    pub fn metrics_url(&self, path: &str) -> String {
        format!("http://{}{path}", self.metrics)
    }
}

/// The repository's root directory.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_owned)
        .unwrap_or_else(|| PathBuf::from("."))
}

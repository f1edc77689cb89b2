//! Shared by the system tests: short games, a clean reference run, reading and checking logs,
//! a score's moves in UCI, an HTTP connection held open from a given address.

#![allow(dead_code)]

use std::{collections::BTreeMap, path::Path, process::Command, time::Duration};

use anyhow::Context as _;
use async_nats::jetstream::{self, consumer::DeliverPolicy, consumer::pull::OrderedConfig};
use boardcast_game::{Game, events::GameEventRecord, events::game_event::Kind};
use boardcast_schema::game::v1::{GameStarted, GameState, ListGamesRequest};
use boardcast_testkit::{GameService, TestNats, program};
use futures::StreamExt;
use prost::Message as _;
use tokio::sync::OnceCell;

/// Six short games: mates, a resignation and a draw, some with captures, castling and checks.
pub const PGN: &str = r#"[Event "Log Open"]
[Round "1.1"]
[White "A"]
[Black "B"]
[Result "1-0"]

1. e4 e5 2. Bc4 Nc6 3. Qh5 Nf6 4. Qxf7# 1-0

[Event "Log Open"]
[Round "1.2"]
[White "C"]
[Black "D"]
[Result "0-1"]

1. f3 e5 2. g4 Qh4# 0-1

[Event "Log Open"]
[Round "1.3"]
[White "E"]
[Black "F"]
[Result "1-0"]

1. e4 e5 2. Nf3 d6 3. Bc4 Bg4 4. Nc3 g6 5. Nxe5 Bxd1 6. Bxf7+ Ke7 7. Nd5# 1-0

[Event "Log Open"]
[Round "1.4"]
[White "G"]
[Black "H"]
[Result "1-0"]

1. d4 d5 2. c4 e6 3. Nc3 Nf6 4. Bg5 Be7 5. e3 O-O 6. Nf3 Nbd7 7. Rc1 c6 8. Bd3 dxc4 9. Bxc4 Nd5 1-0

[Event "Log Open"]
[Round "1.5"]
[White "I"]
[Black "J"]
[Result "1/2-1/2"]

1. Nf3 Nf6 2. Ng1 Ng8 3. Nf3 Nf6 4. Ng1 Ng8 1/2-1/2

[Event "Log Open"]
[Round "1.6"]
[White "K"]
[Black "L"]
[Result "0-1"]

1. e4 c5 2. Nf3 d6 3. d4 cxd4 4. Nxd4 Nf6 5. Nc3 a6 6. Be3 e5 7. Nb3 Be6 8. f3 Be7 0-1
"#;

pub const BOARDS: usize = 6;

pub fn write_pgn() -> anyhow::Result<tempfile::NamedTempFile> {
    let file = tempfile::NamedTempFile::new()?;
    std::fs::write(file.path(), PGN)?;
    Ok(file)
}

/// `boardcast simulate --speed max` of the six games, setting them up on `game_service`.
pub fn simulate(pgn: &Path, nats: &str, game_service: &str) -> anyhow::Result<Command> {
    let mut command = Command::new(program("boardcast")?);
    command
        .env("BOARDCAST_TOKEN", boardcast_testkit::admin_token())
        .arg("simulate")
        .arg("--pgn")
        .arg(pgn)
        .args(["--boards", &BOARDS.to_string(), "--speed", "max"])
        .args(["--nats", nats, "--game-service", game_service]);
    Ok(command)
}

/// Plays the games of `pgn` (PGN text) on `boards` simulated boards at full speed, setting them
/// up on `game_service` as the test process's admin, with more `simulate` arguments.
pub fn play(
    pgn: &str,
    boards: usize,
    more: &[&str],
    nats: &str,
    game_service: &str,
) -> anyhow::Result<()> {
    let file = tempfile::NamedTempFile::new()?;
    std::fs::write(file.path(), pgn)?;
    let status = Command::new(program("boardcast")?)
        .env("BOARDCAST_TOKEN", boardcast_testkit::admin_token())
        .arg("simulate")
        .arg("--pgn")
        .arg(file.path())
        .args(["--boards", &boards.to_string(), "--speed", "max"])
        .args(more)
        .args(["--nats", nats, "--game-service", game_service])
        .stdout(std::process::Stdio::null())
        .status()
        .context("running boardcast simulate")?;
    anyhow::ensure!(status.success(), "boardcast simulate failed: {status}");
    Ok(())
}

/// Waits until the game service's consumer has every observation acknowledged.
pub async fn drained(js: &jetstream::Context) -> anyhow::Result<()> {
    drained_within(js, Duration::from_secs(60)).await
}

/// `drained`, for up to `limit`.
pub async fn drained_within(js: &jetstream::Context, limit: Duration) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        // A read that fails (a cluster still electing after a fault answers 503) says nothing
        // yet: asked again until the deadline, which reports it.
        let undecided = boardcast_testkit::undecided_observations(js).await;
        if matches!(undecided, Ok(Some((0, 0)))) {
            return Ok(());
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "observations still undecided (waiting, in flight): {undecided:?}"
        );
        // Often, since a benchmark's time ends here (its measure would otherwise be as coarse):
        // the partitions' consumers are unfiltered, and their info costs the server little.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Every game the service knows, by id.
pub async fn states(url: &str) -> anyhow::Result<Vec<GameState>> {
    let mut client = boardcast_testkit::admin_client(url).await?;
    let mut games = client
        .list_games(ListGamesRequest::default())
        .await?
        .into_inner()
        .games;
    games.sort_by(|a, b| a.game_id.cmp(&b.game_id));
    Ok(games)
}

/// Waits until the service's games equal `expected` (as `comparable`), returning the last seen.
pub async fn states_reaching(url: &str, expected: &[GameState]) -> anyhow::Result<Vec<GameState>> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let now = states(url).await?;
        if comparable(&now) == comparable(expected) || tokio::time::Instant::now() > deadline {
            return Ok(now);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// States without the chain head, which differs between runs (records carry the time they
/// were recorded); everything else is decided by the observations alone.
pub fn comparable(states: &[GameState]) -> Vec<GameState> {
    states
        .iter()
        .cloned()
        .map(|mut s| {
            s.chain_head.clear();
            s
        })
        .collect()
}

/// Reads game `game_id`'s subject of the log and folds it with the aggregate, which checks that
/// it is one unbroken hash chain with consecutive sequence numbers; also checks that no
/// observation is recorded twice. Returns the folded game.
///
/// The records are read by message gets ([`boardcast_testkit::messages_up_to`]).
pub async fn fold_log(js: &jetstream::Context, game_id: &str) -> anyhow::Result<Game> {
    let subject = format!("boardcast.game.{game_id}.events");
    let stream = js.get_stream("BOARDCAST_GAMES").await?;
    let last = stream
        .get_last_raw_message_by_subject(&subject)
        .await
        .with_context(|| format!("last record of {game_id}"))?
        .sequence;
    let mut game: Option<Game> = None;
    let mut last_device_seq = 0;
    // The last records read, shown when the log does not fold: where they are in the stream,
    // their place in the game and what they record.
    let mut recent: std::collections::VecDeque<String> = std::collections::VecDeque::new();
    let messages = boardcast_testkit::messages_up_to(&stream, &subject, last)
        .await
        .with_context(|| format!("reading the log of {game_id}"))?;
    anyhow::ensure!(
        messages.last().map(|m| m.sequence) == Some(last),
        "the log of {game_id} ends before its last record (stream sequence {last})"
    );
    for message in messages {
        let record = GameEventRecord::decode(message.payload.as_ref())?;
        let event = Game::open_record(&record)?;
        let observation = match &event.kind {
            Some(Kind::ObservationRecorded(recorded)) => {
                recorded.observation.as_ref().map(|o| o.device_seq)
            }
            _ => None,
        };
        let kind = event
            .kind
            .as_ref()
            .map_or_else(|| "no event".to_owned(), |k| format!("{k:?}"));
        recent.push_back(format!(
            "stream {}: game_seq {} at {} by {:?}: {}",
            message.sequence,
            event.game_seq,
            event.recorded_unix_ms,
            event.provenance.as_ref().map(|p| p.source),
            kind.chars().take(160).collect::<String>()
        ));
        if recent.len() > 8 {
            recent.pop_front();
        }
        let shown = || recent.iter().cloned().collect::<Vec<_>>().join("\n  ");
        if let Some(seq) = observation {
            anyhow::ensure!(
                seq > last_device_seq,
                "{game_id}: observation {seq} recorded after {last_device_seq}; the last records:\n  {}",
                shown()
            );
            last_device_seq = seq;
        }
        match game.as_mut() {
            None => game = Some(Game::from_first_record(&record)?),
            Some(g) => g
                .apply(&record)
                .with_context(|| format!("folding {game_id}; the last records:\n  {}", shown()))?,
        }
    }
    game.context("empty log")
}

/// Checks every game's log folds cleanly to the state the service reports.
pub async fn check_logs(js: &jetstream::Context, states: &[GameState]) -> anyhow::Result<()> {
    for state in states {
        // Right after a cluster node fails, reads may fail until leaders are elected (a log
        // that does not fold fails every time).
        let mut attempt = 0;
        let folded = loop {
            match fold_log(js, &state.game_id).await {
                Ok(folded) => break folded,
                Err(e) if attempt < 10 => {
                    attempt += 1;
                    eprintln!("reading the log of {}: {e:#}; retrying", state.game_id);
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                Err(e) => return Err(e),
            }
        };
        assert_eq!(
            folded.to_state(),
            *state,
            "the log of {} folds to the state served",
            state.game_id
        );
    }
    Ok(())
}

/// A clean run of the six games on one game service: the reference for the other tests.
pub struct Baseline {
    pub states: Vec<GameState>,
    pub infos: Vec<GameStarted>,
    /// The observations as the simulator published them: subject and payload, in stream order.
    pub observations: Vec<(String, Vec<u8>)>,
}

static BASELINE: OnceCell<Baseline> = OnceCell::const_new();

pub async fn baseline() -> anyhow::Result<&'static Baseline> {
    BASELINE.get_or_try_init(clean_run).await
}

async fn clean_run() -> anyhow::Result<Baseline> {
    let nats = TestNats::start()?;
    let service = GameService::start(&nats.url())?;
    let pgn = write_pgn()?;
    let status = simulate(pgn.path(), &nats.url(), &service.url())?.status()?;
    anyhow::ensure!(status.success(), "simulate failed");
    let js = jetstream::new(async_nats::connect(nats.url()).await?);
    drained(&js).await?;
    let states = states(&service.url()).await?;
    anyhow::ensure!(states.len() == BOARDS, "{} games", states.len());
    check_logs(&js, &states).await?;
    let infos = states.iter().filter_map(|s| s.info.clone()).collect();
    let mut observations = Vec::new();
    for message in every_observation(&js).await? {
        // As the board published it (the server stored it in the board's partition).
        let subject = boardcast_kit::nats::board_of_subject(&message.subject)
            .map(boardcast_kit::nats::observation_subject)
            .unwrap_or_else(|| message.subject.to_string());
        observations.push((subject, message.payload.to_vec()));
    }
    Ok(Baseline {
        states,
        infos,
        observations,
    })
}

use boardcast_testkit::every_observation;

/// A score's moves in UCI, to compare games whatever SAN they were written in.
pub fn uci_moves(game: &boardcast_rules::pgn::PgnGame) -> anyhow::Result<Vec<String>> {
    use shakmaty::Position as _;
    let mut pos = game.start_position()?;
    game.moves
        .iter()
        .map(|m| {
            let mv = boardcast_rules::pgn::parse_san(&pos, &m.san)
                .with_context(|| format!("illegal {}", m.san))?;
            pos.play_unchecked(mv);
            Ok(shakmaty::uci::UciMove::from_standard(mv).to_string())
        })
        .collect()
}

/// The first `count` observations kept on the dead-letter stream: (subject, reason).
pub async fn dead_letters(
    js: &jetstream::Context,
    count: usize,
) -> anyhow::Result<Vec<(String, String)>> {
    let stream = js.get_stream("BOARDCAST_DEADLETTER").await?;
    let consumer = stream
        .create_consumer(OrderedConfig {
            deliver_policy: DeliverPolicy::All,
            ..Default::default()
        })
        .await?;
    let mut messages = consumer.messages().await?;
    let mut out = Vec::new();
    while out.len() < count {
        let message = tokio::time::timeout(Duration::from_secs(20), messages.next())
            .await
            .context("waiting for dead letters")?
            .context("dead-letter stream ended")??;
        let reason = message
            .headers
            .as_ref()
            .and_then(|h| h.get("Boardcast-Reason"))
            .map(|v| v.as_str().to_owned())
            .unwrap_or_default();
        out.push((message.subject.to_string(), reason));
    }
    Ok(out)
}

/// One board's observations as published: (subject, payload).
pub type Published = Vec<(String, Vec<u8>)>;

/// The clean run's observations per board with the clock ticking `ticks` times after every
/// press (readings that are not presses, which no game event records), numbered on per board.
/// Each board's are in segments, each ending with a press and its ticks (the last one with
/// whatever follows the last press).
pub fn with_clock_ticks(
    observations: &[(String, Vec<u8>)],
    ticks: usize,
) -> anyhow::Result<BTreeMap<String, Vec<Published>>> {
    use boardcast_schema::device::v1::{ClockRun, Observation, observation::Kind};
    let mut by_board: BTreeMap<String, (u64, Vec<Published>)> = BTreeMap::new();
    for (subject, payload) in observations {
        let mut observation = Observation::decode(payload.as_slice())?;
        let (last_seq, segments) = by_board
            .entry(observation.board_id.clone())
            .or_insert_with(|| (0, vec![Vec::new()]));
        let mut push = |observation: &mut Observation, segments: &mut Vec<Published>| {
            *last_seq += 1;
            observation.device_seq = *last_seq;
            if let Some(segment) = segments.last_mut() {
                segment.push((subject.clone(), observation.encode_to_vec()));
            }
        };
        push(&mut observation, segments);
        let pressed = matches!(
            &observation.kind,
            Some(Kind::Clock(reading))
                if matches!(reading.running(), ClockRun::White | ClockRun::Black)
        );
        if pressed {
            for _ in 0..ticks {
                push(&mut observation, segments);
            }
            segments.push(Vec::new());
        }
    }
    Ok(by_board
        .into_iter()
        .map(|(board, (_, segments))| (board, segments))
        .collect())
}

/// CPU seconds process `pid` has used so far (user and system, from `/proc/<pid>/stat`); `None`
/// once it has gone.
pub fn cpu_seconds_of(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command name (which is in parentheses and may hold spaces).
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(ticks as f64 / 100.0)
}

/// Process `pid`'s peak resident memory in kB, as the kernel counts it (`VmHWM`).
pub fn peak_resident_kb(pid: u32) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The `device_seq`s of the observations recorded among `events`, in log order.
pub fn recorded_observations(events: &[boardcast_schema::game::v1::GameEvent]) -> Vec<u64> {
    use boardcast_schema::game::v1::game_event::Kind;
    events
        .iter()
        .filter_map(|e| match &e.kind {
            Some(Kind::ObservationRecorded(r)) => r.observation.as_ref().map(|o| o.device_seq),
            _ => None,
        })
        .collect()
}

/// Every event of game `game_id`'s log so far, through the game service's `StreamGameEvents`
/// (the stream goes on with live events; it is read until the game's last record).
pub async fn game_events(
    client: &mut boardcast_kit::client::GameClient,
    game_id: &str,
) -> anyhow::Result<Vec<boardcast_schema::game::v1::GameEvent>> {
    use boardcast_schema::game::v1::{GetGameRequest, StreamGameEventsRequest};
    let last = client
        .get_game(GetGameRequest {
            game_id: game_id.to_owned(),
        })
        .await?
        .into_inner()
        .last_game_seq;
    let mut stream = client
        .stream_game_events(StreamGameEventsRequest {
            game_id: game_id.to_owned(),
            ..Default::default()
        })
        .await?
        .into_inner();
    let mut events = Vec::new();
    while events.len() < last as usize {
        let event = tokio::time::timeout(Duration::from_secs(10), stream.message())
            .await
            .with_context(|| format!("reading the events of {game_id}"))??
            .with_context(|| format!("the events of {game_id} ended early"))?;
        events.push(event);
    }
    Ok(events)
}

/// Every place where a game's log forks: two records of one game with the same `game_seq`,
/// each described with what its writer expected the log to end with (its headers), so that a
/// fork found after faults says how it was written. Empty when no game's log forks.
pub async fn forks(js: &jetstream::Context) -> anyhow::Result<Vec<String>> {
    let mut seen: BTreeMap<(String, u64), String> = BTreeMap::new();
    let mut forks = Vec::new();
    for message in boardcast_testkit::every_message(js, boardcast_kit::nats::GAMES_STREAM).await? {
        let record = GameEventRecord::decode(message.payload.as_ref())?;
        let event = Game::open_record(&record)?;
        let header = |name: &str| {
            message
                .headers
                .get(name)
                .map(|v| v.as_str().to_owned())
                .unwrap_or_default()
        };
        let described = format!(
            "stream seq {} stored {:?} event {} prev {} hash {} msg-id {:?} \
             expected-last-seq {:?} expected-last-msg-id {:?}",
            message.sequence,
            message.time,
            format!("{:?}", event.kind)
                .chars()
                .take(80)
                .collect::<String>(),
            hex_prefix(&record.prev_hash),
            hex_prefix(&record.hash),
            header("Nats-Msg-Id"),
            header("Nats-Expected-Last-Sequence"),
            header("Nats-Expected-Last-Msg-Id"),
        );
        let key = (event.game_id.clone(), event.game_seq);
        match seen.get(&key) {
            Some(first) => forks.push(format!(
                "game {} record {} twice:\n  {first}\n  {described}",
                key.0, key.1
            )),
            None => {
                seen.insert(key, described);
            }
        }
    }
    Ok(forks)
}

fn hex_prefix(bytes: &[u8]) -> String {
    bytes.iter().take(4).map(|b| format!("{b:02x}")).collect()
}

/// A benchmark's whole-number setting from the environment, or its default.
pub fn setting(name: &str, default: u64) -> anyhow::Result<u64> {
    match std::env::var(name) {
        Ok(value) => value
            .parse()
            .with_context(|| format!("{name}={value:?} is not a whole number")),
        Err(_) => Ok(default),
    }
}

/// Microseconds since the epoch.
pub fn now_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

/// The `p` quantile (0 to 1) of sorted samples in µs, in ms.
pub fn percentile(sorted: &[i64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index] as f64 / 1000.0
}

/// Server-sent events as they arrive, in chunks that may end mid-event.
#[derive(Default)]
pub struct SseEvents {
    buffer: String,
}

impl SseEvents {
    /// The `data` of each event `chunk` completes (an event's data lines joined).
    pub fn data(&mut self, chunk: &[u8]) -> Vec<String> {
        self.events(chunk)
            .into_iter()
            .map(|event| event.data)
            .collect()
    }

    /// Each event `chunk` completes.
    pub fn events(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        self.buffer.push_str(&String::from_utf8_lossy(chunk));
        let mut complete = Vec::new();
        while let Some(end) = self.buffer.find("\n\n") {
            let event: String = self.buffer.drain(..end + 2).collect();
            let field = |name: &str| {
                event
                    .lines()
                    .filter_map(|l| l.strip_prefix(name))
                    .map(|d| d.strip_prefix(' ').unwrap_or(d))
                    .collect::<Vec<&str>>()
            };
            let data = field("data:");
            if !data.is_empty() {
                complete.push(SseEvent {
                    name: field("event:")
                        .first()
                        .copied()
                        .unwrap_or("message")
                        .to_owned(),
                    id: field("id:").first().map(|id| (*id).to_owned()),
                    data: data.join("\n"),
                });
            }
        }
        complete
    }
}

/// What a timing subscriber reads of a live update: the game and its completed moves.
#[derive(serde::Deserialize)]
pub struct MovesUpdate<'a> {
    #[serde(borrow)]
    pub game_id: &'a str,
    /// A game sent whole has them all; a delta the new ones (from `moves_from` on when earlier
    /// ones were taken back), when they changed.
    #[serde(borrow, default)]
    moves: Option<Vec<&'a str>>,
    #[serde(default)]
    moves_from: Option<usize>,
}

impl<'a> MovesUpdate<'a> {
    /// The update of an event (`game` whole, or a delta), when it is one.
    pub fn read(event: &'a SseEvent) -> Option<MovesUpdate<'a>> {
        (event.name == "game" || event.is_delta())
            .then(|| serde_json::from_str(&event.data).ok())
            .flatten()
    }

    /// The completed moves the game has after this update (`whole`: a `game` event), the game
    /// having had `before`; `None` when the update does not change them.
    pub fn completed(&self, whole: bool, before: usize) -> Option<usize> {
        let moves = self.moves.as_ref()?.len();
        Some(if whole {
            moves
        } else {
            self.moves_from.unwrap_or(before) + moves
        })
    }
}

/// One server-sent event.
pub struct SseEvent {
    /// `message` when the event names none.
    pub name: String,
    pub id: Option<String>,
    pub data: String,
}

impl SseEvent {
    /// Deltas are the service's unnamed events.
    pub fn is_delta(&self) -> bool {
        self.name == "message"
    }
}

/// A live viewer's copies of the games of a round, as a page keeps them: a game sent whole
/// replaces the copy, a delta is applied to the copy at its base version.
#[derive(Default)]
pub struct LiveGames {
    pub games: BTreeMap<String, serde_json::Value>,
    /// Deltas that came for a copy at another version (or none): the game was fetched whole.
    pub missed: usize,
    /// Deltas the copy already had (published by each instance, or fetched whole since).
    pub repeated: usize,
}

/// What one live update did to the copies.
pub enum Taken {
    /// The game, as it now stands.
    Game(String),
    /// A delta for a copy at another version: fetch the game whole and [`LiveGames::replace`].
    Missed(String),
    /// Not a game update (the round's settings).
    Other,
}

impl LiveGames {
    /// Takes a live update: `kind` `game` (whole, `data` the game) or `delta` (a server-sent
    /// event's unnamed `message`, or a WebSocket message of type `delta`).
    pub fn take(&mut self, kind: &str, data: &str) -> anyhow::Result<Taken> {
        let value: serde_json::Value = serde_json::from_str(data)
            .with_context(|| format!("a live update that is not JSON: {data}"))?;
        let game_id = value["game_id"].as_str().unwrap_or_default().to_owned();
        match kind {
            "game" => {
                self.replace(value);
                Ok(Taken::Game(game_id))
            }
            "delta" | "message" => {
                let applied = self
                    .games
                    .get_mut(&game_id)
                    .map(|copy| boardcast_feeds::apply_delta(copy, &value));
                match applied {
                    Some(Ok(boardcast_feeds::Applied::Changed)) => Ok(Taken::Game(game_id)),
                    Some(Ok(boardcast_feeds::Applied::AlreadyHad)) => {
                        self.repeated += 1;
                        Ok(Taken::Game(game_id))
                    }
                    _ => {
                        self.missed += 1;
                        Ok(Taken::Missed(game_id))
                    }
                }
            }
            _ => Ok(Taken::Other),
        }
    }

    /// A game fetched or sent whole; an older one than the copy changes nothing.
    pub fn replace(&mut self, game: serde_json::Value) {
        let game_id = game["game_id"].as_str().unwrap_or_default().to_owned();
        let version = |g: &serde_json::Value| g["version"].as_u64().unwrap_or_default();
        match self.games.get(&game_id) {
            Some(copy) if version(copy) > version(&game) => {}
            _ => {
                self.games.insert(game_id, game);
            }
        }
    }

    pub fn game(&self, game_id: &str) -> Option<&serde_json::Value> {
        self.games.get(game_id)
    }
}

/// The sum of a counter's samples on a service's Prometheus page (0 before its first count);
/// `name{label="value"}` sums those samples that carry the label (among the exporter's own).
pub async fn counted(service: &GameService, counter: &str) -> anyhow::Result<f64> {
    let page = reqwest::get(service.metrics_url("/metrics"))
        .await?
        .text()
        .await?;
    let (name, label) = match counter.split_once('{') {
        Some((name, label)) => (name, label.trim_end_matches('}')),
        None => (counter, ""),
    };
    Ok(page
        .lines()
        .filter(|line| line.starts_with(name) && line.contains(label))
        .filter_map(|line| line.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum())
}

/// Runs the `boardcast` tool; whether it succeeded, with what it printed.
pub fn boardcast_cli(args: &[&str]) -> anyhow::Result<(bool, String)> {
    let out = std::process::Command::new(boardcast_testkit::program("boardcast")?)
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .context("running boardcast")?;
    Ok((
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    ))
}

/// Round `round` of `tournament`, exported from the log on `nats_url` with `boardcast export`,
/// verifies with `boardcast replay --verify`: every signature, every decision made again.
pub fn export_verifies(nats_url: &str, tournament: &str, round: u32) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let file = dir.path().join(format!("round-{round}.bcrec"));
    let users = boardcast_testkit::TestUsers::shared()?;
    let (ok, out) = boardcast_cli(&[
        "export",
        "--nats",
        nats_url,
        "--tournament",
        tournament,
        "--round",
        &round.to_string(),
        "--out",
        &file.to_string_lossy(),
        "--trusted-keys",
        &users.trusted_keys().to_string_lossy(),
    ])?;
    anyhow::ensure!(ok, "export failed: {out}");
    let fingerprint = users.signer()?.public_key().fingerprint();
    let (ok, out) = boardcast_cli(&[
        "replay",
        &file.to_string_lossy(),
        "--verify",
        "--trust",
        &fingerprint,
    ])?;
    anyhow::ensure!(ok && out.contains("verified"), "not verified: {out}");
    Ok(())
}

/// A connection from `local` that asked for `/healthz`, got its answer, and is kept open.
pub async fn held_connection_from(
    local: std::net::IpAddr,
    server: std::net::SocketAddr,
) -> anyhow::Result<(tokio::net::TcpStream, String)> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.bind(std::net::SocketAddr::new(local, 0))?;
    let mut connection = socket.connect(server).await?;
    connection
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await?;
    let mut answer = Vec::new();
    let mut buffer = [0u8; 512];
    let read = tokio::time::timeout(Duration::from_secs(10), async {
        while !answer.windows(4).any(|w| w == b"\r\n\r\n") || answer.len() < 20 {
            let n = connection.read(&mut buffer).await?;
            if n == 0 {
                break;
            }
            answer.extend_from_slice(&buffer[..n]);
        }
        anyhow::Ok(())
    })
    .await;
    anyhow::ensure!(read.is_ok(), "no answer within 10 s");
    Ok((connection, String::from_utf8_lossy(&answer).into_owned()))
}

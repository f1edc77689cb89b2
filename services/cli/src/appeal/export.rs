//! `boardcast export`: the selected games' records as stored, and their boards' observations,
//! from the live log into one record file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use async_nats::jetstream::{self, consumer::DeliverPolicy, consumer::pull::OrderedConfig};
use boardcast_appeal::RecordFileWriter;
use boardcast_game::Game;
use boardcast_game::device::Observation;
use boardcast_game::events::GameEventRecord;
use boardcast_game::signing::{PublicKey, TrustedKeys};
use boardcast_kit::game_log;
use boardcast_kit::nats::{GAMES_STREAM, GAMES_SUBJECTS};
use boardcast_schema::appeal::v1::RecordFileHeader;
use boardcast_schema::game::v1::SigningKeyInfo;
use clap::Args;
use futures::StreamExt as _;
use indicatif::{ProgressBar, ProgressStyle};
use prost::Message as _;

/// Which games: a tournament, one of its rounds, or games by id.
#[derive(Args, Debug, Clone)]
pub struct Selection {
    /// The tournament whose games to take.
    #[arg(long)]
    tournament: Option<String>,
    /// Only this round of the tournament.
    #[arg(long, requires = "tournament")]
    round: Option<u32>,
    /// Only this board number of the round.
    #[arg(long, requires = "round")]
    board: Option<u32>,
    /// A game by id (repeatable), e.g. open-2026-r3-b1.
    #[arg(long)]
    pub(super) game: Vec<String>,
}

impl Selection {
    pub(super) fn check(&self) -> anyhow::Result<()> {
        if self.tournament.is_none() && self.game.is_empty() {
            bail!("say which games: --tournament [--round [--board]] or --game ID");
        }
        Ok(())
    }

    fn wants(&self, started: &boardcast_game::events::GameStarted, game_id: &str) -> bool {
        if self.game.iter().any(|g| g == game_id) {
            return true;
        }
        self.tournament.as_deref() == Some(started.tournament_id.as_str())
            && self.round.is_none_or(|r| r == started.round)
            && self.board.is_none_or(|b| b == started.board_number)
    }

    fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(t) = &self.tournament {
            parts.push(format!("tournament {t}"));
        }
        if let Some(r) = self.round {
            parts.push(format!("round {r}"));
        }
        if let Some(b) = self.board {
            parts.push(format!("board {b}"));
        }
        if !self.game.is_empty() {
            parts.push(format!("games {}", self.game.join(", ")));
        }
        parts.join(" ")
    }
}

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// NATS server to read the logs from, as a user that may read BOARDCAST_GAMES and
    /// BOARDCAST_INGEST (the admin's URL: `boardcast nats-config --print-url admin`).
    #[arg(
        long,
        env = "BOARDCAST_NATS_URL",
        default_value = "nats://127.0.0.1:4222"
    )]
    nats: String,
    #[command(flatten)]
    selection: Selection,
    /// The file to write (written under a temporary name and renamed when complete).
    #[arg(long, short)]
    out: PathBuf,
    /// The trusted-keys file: its keys go into the file's header for convenience (a verifier
    /// still needs the fingerprint from the organiser).
    #[arg(long, env = "BOARDCAST_TRUSTED_KEYS", default_value = boardcast_kit::signing::DEFAULT_TRUSTED_KEYS_FILE)]
    trusted_keys: PathBuf,
    /// Leave out the boards' observations (the records still hold every observation that
    /// mattered; these add the clock readings that changed nothing).
    #[arg(long)]
    no_observations: bool,
}

/// What a game's observations on one physical board are looked up by.
struct BoardRange {
    board_id: String,
    /// Observations after this device sequence belong to the game…
    after: u64,
    /// …up to this one.
    through: u64,
    started_unix_ms: i64,
}

pub async fn export(args: ExportArgs) -> anyhow::Result<()> {
    args.selection.check()?;
    let client = boardcast_kit::nats::connect_for_command(
        &args.nats,
        "boardcast-export",
        boardcast_kit::nats::COMMAND_CONNECT_WITHIN,
    )
    .await?;
    let js = jetstream::new(client);
    // Written as it is read (a tournament's records need not fit in memory), under a temporary
    // name until it is complete.
    let temporary = args.out.with_extension("partial");
    let file = std::fs::File::create(&temporary)
        .with_context(|| format!("creating {}", temporary.display()))?;
    let out = read_game_log(
        &js,
        &args.selection,
        &args.trusted_keys,
        &args.nats,
        !args.no_observations,
        true,
        std::io::BufWriter::new(file),
    )
    .await;
    let out = match out {
        Ok(out) => out,
        Err(e) => {
            let _ = std::fs::remove_file(&temporary);
            return Err(e);
        }
    };
    out.written
        .into_inner()
        .map_err(|e| e.into_error())
        .and_then(|file| file.sync_all())
        .with_context(|| format!("writing {}", temporary.display()))?;
    std::fs::rename(&temporary, &args.out)
        .with_context(|| format!("renaming {} to {}", temporary.display(), args.out.display()))?;
    eprintln!(
        "wrote {}: {} games, {} records, {} observations",
        args.out.display(),
        out.games,
        out.records,
        out.observations
    );
    Ok(())
}

pub(super) struct Exported<W> {
    pub(super) written: W,
    games: usize,
    records: u64,
    observations: u64,
}

pub(super) fn progress(total: u64, what: &str, shown: bool) -> ProgressBar {
    if !shown {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template("{msg:24} {wide_bar} {pos}/{len} ({eta} left)")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_message(what.to_owned());
    bar
}

/// Reads the selected games' records (and their boards' observations) from JetStream into a
/// record file written to `out`.
pub(super) async fn read_game_log<W: std::io::Write>(
    js: &jetstream::Context,
    selection: &Selection,
    trusted_keys: &Path,
    nats_url: &str,
    with_observations: bool,
    show_progress: bool,
    out: W,
) -> anyhow::Result<Exported<W>> {
    let mut stream = js.get_stream(GAMES_STREAM).await.with_context(|| {
        format!("opening the game log {GAMES_STREAM} (is this the hall's NATS?)")
    })?;
    let state = stream
        .info()
        .await
        .context("reading the game log's size")?
        .state
        .clone();
    // A log emptied (purged) keeps its last sequence but holds no message: nothing would come.
    let last = if state.messages == 0 {
        0
    } else {
        state.last_sequence
    };
    let keys = match std::fs::read_to_string(trusted_keys) {
        Ok(text) => TrustedKeys::parse(&text).map_err(anyhow::Error::msg)?,
        Err(_) => {
            eprintln!(
                "note: no trusted-keys file at {}; the file will carry no public keys",
                trusted_keys.display()
            );
            TrustedKeys::default()
        }
    };
    let header = RecordFileHeader {
        exported_unix_ms: now_unix_ms(),
        scope: selection.describe(),
        source: format!(
            "{} stream {GAMES_STREAM}",
            boardcast_kit::nats::redact(nats_url)
        ),
        exporter_version: env!("CARGO_PKG_VERSION").to_owned(),
        keys: keys.keys().map(key_info).collect(),
        ..Default::default()
    };
    let mut writer = RecordFileWriter::new(out, header)?;
    // Each game folded (to find its observations), when it was set up, and the boards it was
    // followed on before the one it is on (a game moved when its board broke).
    let mut games: BTreeMap<String, (Game, i64, Vec<BoardRange>)> = BTreeMap::new();
    let mut skipped: BTreeSet<String> = BTreeSet::new();
    let mut records = 0u64;
    // Messages before a game's signed start that are not one (refused by every reader).
    let mut ignored = 0u64;
    // What the game service signed, logs from before signing included; with no keys at hand,
    // every record that opens is taken as it is.
    let fold_keys = (!keys.is_empty()).then(|| keys.clone().accepting_unsigned(true));
    let read = |payload: &[u8], signed: bool| match &fold_keys {
        Some(keys) => Game::read_stored(payload, keys, signed).ok(),
        None => GameEventRecord::decode(payload)
            .ok()
            .and_then(|r| Game::open(r).ok()),
    };
    if last > 0 {
        let bar = progress(last, "game log records", show_progress);
        let messages = game_log::read_from(&stream, GAMES_SUBJECTS, 1)
            .await
            .context("reading the game log")?;
        let mut messages = std::pin::pin!(messages);
        while let Some(message) = messages.next().await {
            let message = message?;
            let (seq, pending) = (message.stream_seq, message.pending);
            bar.set_position(seq);
            let game_id = boardcast_kit::nats::game_of_subject(&message.subject)
                .unwrap_or_default()
                .to_owned();
            if !skipped.contains(&game_id) {
                match games.get_mut(&game_id) {
                    Some((game, started_unix_ms, earlier_boards)) => {
                        // Folded only to find the game's observations, with the records the
                        // game service signed; the file holds every message as stored, for the
                        // verifier to judge.
                        let signed = game.is_signed();
                        if let Some(opened) = read(&message.payload, signed) {
                            // Only a revision of the set-up moves a game to another board.
                            let revision = matches!(
                                opened.event().kind,
                                Some(boardcast_game::events::game_event::Kind::SetUpRevised(_))
                            );
                            let before = revision.then(|| board_range(game, *started_unix_ms));
                            let _ = game.apply_opened(&opened);
                            if let Some(before) = before
                                && (game.info().board_id.as_str(), game.info().board_seq_before)
                                    != (before.board_id.as_str(), before.after)
                            {
                                earlier_boards.push(before);
                            }
                        }
                        writer.record(&game_id, seq, message.payload.to_vec())?;
                        records += 1;
                    }
                    None => match read(&message.payload, false) {
                        Some(opened) => {
                            let at = opened.event().recorded_unix_ms;
                            match Game::from_first_opened(&opened) {
                                Ok(game) if selection.wants(game.info(), &game_id) => {
                                    games.insert(game_id.clone(), (game, at, Vec::new()));
                                    writer.record(&game_id, seq, message.payload.to_vec())?;
                                    records += 1;
                                }
                                // Another game's start: none of its records are wanted.
                                Ok(_) => {
                                    skipped.insert(game_id);
                                }
                                Err(_) => ignored += 1,
                            }
                        }
                        // Not a start the game service signed: whatever it is, the game's
                        // real start may follow.
                        None => ignored += 1,
                    },
                }
            }
            if seq >= last || pending == 0 {
                break;
            }
        }
        bar.finish_and_clear();
    }
    if ignored > 0 {
        eprintln!(
            "note: {ignored} messages on game subjects were not a game's start signed by a known \
             key and are not in the file"
        );
    }
    if games.is_empty() {
        bail!("no game of {} in the game log", selection.describe());
    }
    let count = games.len();
    let mut observations = 0u64;
    if with_observations {
        let ranges: Vec<(String, BoardRange)> = games
            .into_iter()
            .flat_map(|(id, (game, started_unix_ms, earlier_boards))| {
                let last_board = board_range(&game, started_unix_ms);
                earlier_boards
                    .into_iter()
                    .chain([last_board])
                    .map(move |range| (id.clone(), range))
            })
            .collect();
        let bar = progress(ranges.len() as u64, "boards' observations", show_progress);
        for (game_id, range) in ranges {
            observations += board_observations(js, &game_id, &range, &mut writer).await?;
            bar.inc(1);
        }
        bar.finish_and_clear();
    }
    Ok(Exported {
        written: writer.finish()?,
        games: count,
        records,
        observations,
    })
}

/// The observations of the board `game` is followed on now that belong to it so far.
fn board_range(game: &Game, started_unix_ms: i64) -> BoardRange {
    BoardRange {
        board_id: game.info().board_id.clone(),
        after: game.info().board_seq_before,
        through: game.board_seq_accounted(),
        started_unix_ms,
    }
}

/// Copies the board's observations of the game into the file.
async fn board_observations(
    js: &jetstream::Context,
    game_id: &str,
    range: &BoardRange,
    writer: &mut RecordFileWriter<impl std::io::Write>,
) -> anyhow::Result<u64> {
    if range.through <= range.after {
        return Ok(0);
    }
    let deliver_policy = if range.started_unix_ms > 0 {
        DeliverPolicy::ByStartTime {
            start_time: time::OffsetDateTime::from_unix_timestamp_nanos(
                i128::from(range.started_unix_ms - 60_000) * 1_000_000,
            )
            .unwrap_or(time::OffsetDateTime::UNIX_EPOCH),
        }
    } else {
        DeliverPolicy::All
    };
    // Stored as published (a server without the partition mapping) or in the board's
    // partition (another one before the partition count changed): every observation stream
    // is read, each in its order.
    let published = boardcast_kit::nats::observation_subject(&range.board_id);
    let mut found = Vec::new();
    let mut complete = true;
    for partition in boardcast_kit::nats::observation_partitions(js).await? {
        let name = boardcast_kit::nats::ingest_stream(partition);
        // Exactly the board's subject in that stream (a consumer's filter must lie within the
        // stream's subjects).
        let filter_subject = match partition {
            Some(p) => format!("{published}.{p}"),
            None => published.clone(),
        };
        let mut stream = js
            .get_stream(&name)
            .await
            .with_context(|| format!("opening the observation stream {name}"))?;
        let last = stream
            .info()
            .await
            .with_context(|| format!("reading the observation stream {name}"))?
            .state
            .last_sequence;
        let any = boardcast_kit::nats::next_message(&stream, 1, &filter_subject)
            .await
            .with_context(|| format!("reading board {}'s observations", range.board_id))?;
        if last == 0 || any.is_none() {
            continue;
        }
        let consumer = stream
            .create_consumer(OrderedConfig {
                filter_subject,
                deliver_policy,
                ..Default::default()
            })
            .await
            .with_context(|| format!("reading board {}'s observations", range.board_id))?;
        let mut messages = consumer.messages().await.context("reading observations")?;
        loop {
            let next =
                tokio::time::timeout(std::time::Duration::from_secs(5), messages.next()).await;
            let Ok(Some(message)) = next else {
                complete = false;
                break;
            };
            let message = message.context("reading observations")?;
            let info = message.info().map_err(|e| anyhow::anyhow!("{e}"))?;
            let (seq, pending) = (info.stream_sequence, info.pending);
            let stored_ms = (info.published.unix_timestamp_nanos() / 1_000_000) as i64;
            if let Ok(obs) = Observation::decode(message.payload.as_ref())
                && obs.device_seq > range.after
                && obs.device_seq <= range.through
            {
                found.push((stored_ms, seq, message.payload.to_vec()));
            }
            if pending == 0 || seq >= last {
                break;
            }
        }
    }
    // In the order stored (a board's observations are in one stream but after a change of the
    // partition count).
    found.sort_by_key(|(stored_ms, seq, _)| (*stored_ms, *seq));
    let copied = u64::try_from(found.len()).unwrap_or(u64::MAX);
    if !complete {
        eprintln!(
            "note: board {}'s observations {}..={} of game {game_id}: {copied} found, the \
             ingest stream has no more (the records hold every observation that mattered)",
            range.board_id,
            range.after + 1,
            range.through
        );
    }
    for (stored_ms, seq, payload) in found {
        writer.observation(game_id, seq, payload, stored_ms)?;
    }
    Ok(copied)
}

pub(super) fn key_info(key: &PublicKey) -> SigningKeyInfo {
    SigningKeyInfo {
        key_id: key.key_id().to_owned(),
        public_key: key.to_text(),
        fingerprint: key.fingerprint(),
    }
}

pub(super) fn now_unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

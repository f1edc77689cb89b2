//! `boardcast export` and `boardcast replay`: the exact record of games for an appeal — read from
//! the live JetStream log into one file, then checked and replayed anywhere, without the live
//! system.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use async_nats::jetstream::{self, consumer::DeliverPolicy, consumer::pull::OrderedConfig};
use boardcast_appeal::{
    At, RecordFile, RecordFileWriter, ReplayedGame, replay, replay_each, replay_many, verify,
};
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
    game: Vec<String>,
}

impl Selection {
    fn check(&self) -> anyhow::Result<()> {
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

/// What a game's observations are looked up by.
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
    let client = boardcast_kit::nats::connect(&args.nats, "boardcast-export").await?;
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

struct Exported<W> {
    written: W,
    games: usize,
    records: u64,
    observations: u64,
}

fn progress(total: u64, what: &str, shown: bool) -> ProgressBar {
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
async fn read_game_log<W: std::io::Write>(
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
    let last = stream
        .info()
        .await
        .context("reading the game log's size")?
        .state
        .last_sequence;
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
    // Each game folded (to find its observations) and when it was set up.
    let mut games: BTreeMap<String, (Game, i64)> = BTreeMap::new();
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
                    Some((game, _)) => {
                        // Folded only to find the game's observations, with the records the
                        // game service signed; the file holds every message as stored, for the
                        // verifier to judge.
                        let signed = game.is_signed();
                        if let Some(opened) = read(&message.payload, signed) {
                            let _ = game.apply_opened(&opened);
                        }
                        writer.record(&game_id, seq, message.payload.to_vec())?;
                        records += 1;
                    }
                    None => match read(&message.payload, false) {
                        Some(opened) => {
                            let at = opened.event().recorded_unix_ms;
                            match Game::from_first_opened(&opened) {
                                Ok(game) if selection.wants(game.info(), &game_id) => {
                                    games.insert(game_id.clone(), (game, at));
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
    let mut observations = 0u64;
    if with_observations {
        let ranges: Vec<(String, BoardRange)> = games
            .iter()
            .map(|(id, (g, started_unix_ms))| {
                (
                    id.clone(),
                    BoardRange {
                        board_id: g.info().board_id.clone(),
                        after: g.info().board_seq_before,
                        through: g.board_seq_accounted(),
                        started_unix_ms: *started_unix_ms,
                    },
                )
            })
            .collect();
        let bar = progress(ranges.len() as u64, "boards' observations", show_progress);
        for (game_id, range) in ranges {
            observations += board_observations(js, &game_id, &range, &mut writer).await?;
            bar.inc(1);
        }
        bar.finish_and_clear();
    }
    let count = games.len();
    Ok(Exported {
        written: writer.finish()?,
        games: count,
        records,
        observations,
    })
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

fn key_info(key: &PublicKey) -> SigningKeyInfo {
    SigningKeyInfo {
        key_id: key.key_id().to_owned(),
        public_key: key.to_text(),
        fingerprint: key.fingerprint(),
    }
}

fn now_unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// A game record file written by `boardcast export`. Without it, the games are read from
    /// the live log (--nats with --tournament/--round/--game).
    file: Option<PathBuf>,
    /// Read the live log from this NATS server instead of a file.
    #[arg(long, conflicts_with = "file")]
    nats: Option<String>,
    #[command(flatten)]
    selection: Option<Selection>,
    /// Check the record: sequence, hash chain, signatures, and every decision made again with
    /// this version's rules; names each problem and exits non-zero when there is one.
    #[arg(long)]
    verify: bool,
    /// The fingerprint (or key id) of a key to trust, as the organiser published it (`boardcast
    /// keys show`); repeatable. The file's own keys are trusted only when they match.
    #[arg(long = "trust")]
    trust: Vec<String>,
    /// Trust the keys listed in this trusted-keys file.
    #[arg(long)]
    trusted_keys: Option<PathBuf>,
    /// Stop at a moment: a record's sequence number (e.g. 120), or a time — RFC 3339
    /// (2026-11-24T14:32:05Z) or HH:MM:SS (UTC, on the day the game was set up). Shows the
    /// position, the clocks, repetitions and the claims available then.
    #[arg(long)]
    at: Option<String>,
    /// With --at: judge a draw claim then (`threefold` or `fifty`), as the arbiter would have.
    #[arg(long, requires = "at")]
    claim: Option<String>,
    /// With --claim: the move written on the scoresheet and declared (SAN or UCI).
    #[arg(long, requires = "claim")]
    intended_move: Option<String>,
    /// Print the games as PGN.
    #[arg(long, conflicts_with_all = ["json", "html"])]
    pgn: bool,
    /// Print the games, their timelines and alerts (or the moment) as JSON.
    #[arg(long, conflicts_with = "html")]
    json: bool,
    /// Write one self-contained HTML page (board, slider over the timeline, record list) to this
    /// file: it opens in any browser without a network.
    #[arg(long)]
    html: Option<PathBuf>,
}

pub async fn replay_command(args: ReplayArgs) -> anyhow::Result<std::process::ExitCode> {
    let file = match (&args.file, &args.nats) {
        (Some(path), _) => {
            let input =
                std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
            RecordFile::read(input).with_context(|| format!("reading {}", path.display()))?
        }
        (None, Some(url)) => {
            let Some(selection) = &args.selection else {
                bail!("with --nats, say which games: --tournament [--round] or --game");
            };
            selection.check()?;
            let client = boardcast_kit::nats::connect(url, "boardcast-replay").await?;
            let js = jetstream::new(client);
            let keys_file = args
                .trusted_keys
                .clone()
                .unwrap_or_else(|| boardcast_kit::signing::DEFAULT_TRUSTED_KEYS_FILE.into());
            let out = read_game_log(
                &js,
                selection,
                &keys_file,
                url,
                true,
                atty_stderr(),
                Vec::new(),
            )
            .await?;
            RecordFile::read(out.written.as_slice())?
        }
        (None, None) => bail!("give a record file, or --nats with the games to read"),
    };
    let (trusted, pinned) = trust(&args, &file)?;
    let wanted: Vec<&boardcast_appeal::ExportedGame> = file
        .games
        .iter()
        .filter(|g| match &args.selection {
            Some(s) if args.file.is_some() && !s.game.is_empty() => s.game.contains(&g.game_id),
            _ => true,
        })
        .collect();
    if wanted.is_empty() {
        bail!(
            "the file holds no such game; it holds {}",
            file.games
                .iter()
                .map(|g| g.game_id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let key_note = describe_keys(&trusted, pinned);

    if args.verify {
        let report = verify(&file, &trusted);
        let mut failed = !report.passed();
        if args.json {
            println!("{}", serde_json::to_string_pretty(&report)?);
        } else {
            println!(
                "{}: {} games, {} records, {} decisions made again",
                file.header.scope, report.games, report.records, report.decisions_reproduced
            );
            println!("{key_note}");
            const SHOWN: usize = 50;
            for problem in report.problems.iter().take(SHOWN) {
                println!("FAIL {problem}");
            }
            if report.problems.len() > SHOWN {
                println!(
                    "FAIL … and {} more (--json lists them all)",
                    report.problems.len() - SHOWN
                );
            }
        }
        if !pinned {
            failed = true;
            eprintln!(
                "the signing key was not checked against a fingerprint from outside the file: pass --trust FINGERPRINT (the organiser's) or --trusted-keys FILE"
            );
        }
        if failed {
            eprintln!("verification FAILED");
            return Ok(std::process::ExitCode::FAILURE);
        }
        if !args.json {
            println!(
                "verified: every record of every game is unaltered, in order, signed by the \
                 trusted key, and means what the rules decide; the file ends as written"
            );
            // The file's end is not signed: a game cut short and its end rewritten would pass.
            // A game without a result is worth a look.
            for game in &file.games {
                let finished = replay(game, &trusted, None).is_ok_and(|r| r.game.is_over());
                if !finished {
                    println!(
                        "note: game {} has no result in the file (unfinished when exported, or \
                         its last records are not here)",
                        game.game_id
                    );
                }
            }
        }
        return Ok(std::process::ExitCode::SUCCESS);
    }

    let accepting = trusted.clone().accepting_unsigned(true);
    let mut jobs = Vec::new();
    for game in &wanted {
        let until = match &args.at {
            Some(text) => Some(parse_at(text, game)?),
            None => None,
        };
        jobs.push((*game, until));
    }
    let timeline_only =
        args.claim.is_none() && args.at.is_none() && !args.pgn && !args.json && args.html.is_none();
    if timeline_only {
        // A round's timelines are printed a few games at a time: replays are large and only
        // needed until they are printed.
        let mut out = std::io::stdout().lock();
        writeln!(
            out,
            "{} — exported {}",
            file.header.scope,
            format_time(file.header.exported_unix_ms)
        )?;
        writeln!(out, "{key_note}")?;
        // Each timeline is written out on the core that replayed the game.
        let render = |game: Result<ReplayedGame, _>| -> anyhow::Result<(Vec<u8>, bool)> {
            let mut text = Vec::new();
            match game {
                Ok(game) => {
                    print_timeline(&mut text, &game)?;
                    Ok((text, false))
                }
                Err(e) => {
                    writeln!(text, "\n== cannot replay: {e}")?;
                    Ok((text, true))
                }
            }
        };
        let mut failed = 0;
        let mut written = Ok(());
        replay_each(&jobs, &accepting, render, |rendered| {
            if written.is_err() {
                return;
            }
            written = rendered.and_then(|(text, refused)| {
                failed += usize::from(refused);
                Ok(out.write_all(&text)?)
            });
        });
        written?;
        if failed > 0 {
            eprintln!("{failed} games could not be replayed");
            return Ok(std::process::ExitCode::FAILURE);
        }
        return Ok(std::process::ExitCode::SUCCESS);
    }
    let replayed = replay_many(&jobs, &accepting)
        .into_iter()
        .collect::<Result<Vec<_>, _>>()?;

    if let Some(kind) = &args.claim {
        for game in &replayed {
            print_claim(game, kind, args.intended_move.as_deref().unwrap_or(""))?;
        }
        return Ok(std::process::ExitCode::SUCCESS);
    }
    if args.at.is_some() {
        let moments: Vec<_> = replayed.iter().map(ReplayedGame::moment).collect();
        if args.json {
            println!("{}", serde_json::to_string_pretty(&moments)?);
        } else {
            for m in &moments {
                print_moment(m);
            }
        }
        return Ok(std::process::ExitCode::SUCCESS);
    }
    if args.pgn {
        for game in &replayed {
            println!(
                "{}",
                boardcast_rules::pgn::write_annotated_game(&game.game.to_pgn())
            );
        }
        return Ok(std::process::ExitCode::SUCCESS);
    }
    if args.json {
        let games: Vec<_> = replayed.iter().map(game_json).collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "scope": file.header.scope,
                "exported_unix_ms": file.header.exported_unix_ms,
                "keys": key_note,
                "games": games,
            }))?
        );
        return Ok(std::process::ExitCode::SUCCESS);
    }
    // What is left: the HTML page.
    let Some(path) = &args.html else {
        bail!("nothing to write");
    };
    let check = format!(
        "{} · {key_note} · not verified here: run `boardcast replay FILE --verify --trust FINGERPRINT`",
        file.header.scope
    );
    let page = boardcast_appeal::html::replay_page(&replayed, &check);
    std::fs::write(path, page).with_context(|| format!("writing {}", path.display()))?;
    eprintln!(
        "wrote {} ({} games): open it in a browser",
        path.display(),
        replayed.len()
    );
    Ok(std::process::ExitCode::SUCCESS)
}

fn atty_stderr() -> bool {
    use std::io::IsTerminal as _;
    std::io::stderr().is_terminal()
}

/// The keys to check signatures with, and whether they were confirmed from outside the file.
fn trust(args: &ReplayArgs, file: &RecordFile) -> anyhow::Result<(TrustedKeys, bool)> {
    let mut keys = TrustedKeys::default();
    let mut pinned = false;
    if let Some(path) = &args.trusted_keys {
        keys = boardcast_kit::signing::read_trusted_keys(path)?;
        pinned = true;
    }
    let in_file: Vec<PublicKey> = file
        .header
        .keys
        .iter()
        .filter_map(|k| PublicKey::parse(&k.public_key).ok())
        .collect();
    for pin in &args.trust {
        let matching: Vec<&PublicKey> = in_file.iter().filter(|k| k.matches(pin)).collect();
        if matching.is_empty() {
            bail!(
                "no key in the file has the fingerprint {pin}: the records were not signed with that key (the file's keys: {})",
                in_file
                    .iter()
                    .map(PublicKey::fingerprint)
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        for key in matching {
            keys.add(key.clone());
        }
        pinned = true;
    }
    if !pinned {
        for key in in_file {
            keys.add(key);
        }
    }
    Ok((keys, pinned))
}

fn describe_keys(keys: &TrustedKeys, pinned: bool) -> String {
    let list: Vec<String> = keys
        .keys()
        .map(|k| format!("{} ({})", k.key_id(), k.fingerprint()))
        .collect();
    if pinned {
        format!(
            "signatures checked with the trusted key(s) {}",
            list.join(", ")
        )
    } else {
        format!(
            "signatures checked only with the key(s) the file carries, {} — compare the fingerprint with the organiser's (--trust)",
            list.join(", ")
        )
    }
}

fn parse_at(text: &str, game: &boardcast_appeal::ExportedGame) -> anyhow::Result<At> {
    let text = text.trim();
    let times: Vec<(u64, i64)> = game
        .records
        .iter()
        .filter_map(|r| GameEventRecord::decode(r.payload.as_slice()).ok())
        .filter_map(|r| Game::open_record(&r).ok())
        .map(|e| (e.game_seq, e.recorded_unix_ms))
        .collect();
    let last_seq = times.iter().map(|(seq, _)| *seq).max().unwrap_or(0);
    let started = times.first().map_or(0, |(_, at)| *at);
    if let Ok(seq) = text.parse::<u64>() {
        if seq == 0 || seq > last_seq {
            bail!(
                "--at {seq}: game {} has records 1 to {last_seq}",
                game.game_id
            );
        }
        return Ok(At::Seq(seq));
    }
    let at_ms = if let Ok(time) = humantime::parse_rfc3339_weak(text) {
        time.duration_since(std::time::UNIX_EPOCH)
            .ok()
            .and_then(|d| i64::try_from(d.as_millis()).ok())
    } else {
        // HH:MM[:SS], UTC, on the day the game was set up.
        let parts: Option<Vec<u8>> = text.split(':').map(|p| p.parse::<u8>().ok()).collect();
        match parts.as_deref() {
            Some([h, m]) | Some([h, m, _]) if *h < 24 && *m < 60 => {
                let s = parts
                    .as_deref()
                    .and_then(|p| p.get(2))
                    .copied()
                    .unwrap_or(0);
                (s < 60).then(|| {
                    let day = started - started.rem_euclid(86_400_000);
                    day + ((i64::from(*h) * 60 + i64::from(*m)) * 60 + i64::from(s)) * 1000
                })
            }
            _ => None,
        }
    };
    let Some(at_ms) = at_ms else {
        bail!(
            "--at {text:?}: give a record number, an RFC 3339 time (2026-11-24T14:32:05Z) or \
             HH:MM[:SS] (UTC, on the day the game was set up; use RFC 3339 for a game that went \
             past midnight UTC)"
        );
    };
    if at_ms < started {
        bail!(
            "--at {text:?} is before game {} was set up (record 1, {} UTC)",
            game.game_id,
            format_time(started)
        );
    }
    Ok(At::Time(at_ms))
}

fn print_claim(game: &ReplayedGame, kind: &str, intended: &str) -> anyhow::Result<()> {
    use boardcast_game::events::ClaimKind;
    let kind = match kind {
        "threefold" => ClaimKind::Threefold,
        "fifty" | "fifty-moves" => ClaimKind::FiftyMoves,
        other => bail!("--claim {other:?}: threefold or fifty"),
    };
    let statement = boardcast_game::ClaimStatement {
        kind,
        intended_move: intended,
        claimant_has_moved: false,
        claimant_has_touched: false,
        claimant_remaining_ms: 0,
    };
    let claim = game
        .game
        .draw_claim(&statement)
        .map_err(anyhow::Error::msg)?;
    let assessment = game
        .game
        .evaluate_claim(&claim)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let judged = assessment.judged(true);
    println!(
        "game {} after record {}: {} claim — {} (Article {}): {}",
        game.game_id,
        game.game.last_game_seq(),
        if kind == ClaimKind::Threefold {
            "threefold"
        } else {
            "fifty-move"
        },
        boardcast_game::wording::claim_verdict(&judged),
        judged.article,
        judged.explanation
    );
    println!("  rests on log entries {:?}", judged.game_seqs);
    if !judged.unconfirmed_plies.is_empty() {
        println!(
            "  moves no clock press or arbiter confirmed (check the scoresheets): plies {:?}",
            judged.unconfirmed_plies
        );
    }
    Ok(())
}

fn print_moment(m: &boardcast_appeal::Moment) {
    println!(
        "game {} after record {} ({})",
        m.game_id,
        m.game_seq,
        format_time(m.recorded_unix_ms)
    );
    println!(
        "  position    {}  ({} to move, {} moves completed)",
        m.fen, m.to_move, m.completed_plies
    );
    println!(
        "  clocks      White {}  Black {}  running: {}",
        m.clocks
            .white_ms
            .map(boardcast_game::timeline::format_clock)
            .unwrap_or_else(|| "–".into()),
        m.clocks
            .black_ms
            .map(boardcast_game::timeline::format_clock)
            .unwrap_or_else(|| "–".into()),
        if m.clocks.running.is_empty() {
            "unknown"
        } else {
            m.clocks.running
        }
    );
    println!(
        "  repetition  the position has occurred {} time(s); {} half-moves without capture or pawn move",
        m.repetition_count, m.halfmove_clock
    );
    if m.claims_available.is_empty() {
        println!("  claims      none available to the player to move");
    }
    for claim in &m.claims_available {
        println!(
            "  claim       {:?} on {:?}{}",
            claim.kind,
            claim.basis,
            if claim.moves.is_empty() {
                String::new()
            } else {
                format!(" with {}", claim.moves.join(", "))
            }
        );
    }
    println!("  result      {}", m.result);
}

fn game_json(game: &ReplayedGame) -> serde_json::Value {
    let info = game.info();
    let player = |p: &Option<boardcast_game::events::Player>| {
        p.as_ref().map(|p| p.name.clone()).unwrap_or_default()
    };
    serde_json::json!({
        "game_id": game.game_id,
        "tournament_id": info.tournament_id,
        "round": info.round,
        "board_number": info.board_number,
        "board_id": info.board_id,
        "white": player(&info.white),
        "black": player(&info.black),
        "edition": info.edition,
        "result": game.game.result_token(),
        "fen": boardcast_game::fen(game.game.position()),
        "moves": game.game.completed_moves().iter().map(|m| serde_json::json!({
            "ply": m.event.ply, "san": m.event.san, "uci": m.event.uci,
        })).collect::<Vec<_>>(),
        "unsigned_records": game.game.unsigned_records(),
        "refused_records": game.refused,
        "timeline": game.steps,
        "alerts": game.alerts.iter().map(|a| serde_json::json!({
            "raised_at": a.raised_at,
            "kind": boardcast_game::timeline::alert_kind_label(a.kind),
            "article": a.article,
            "summary": a.summary,
            "status": boardcast_game::timeline::alert_status_name(&a.status),
            "rests_on": a.rests_on,
        })).collect::<Vec<_>>(),
    })
}

fn print_timeline(out: &mut impl std::io::Write, game: &ReplayedGame) -> anyhow::Result<()> {
    let info = game.info();
    let player = |p: &Option<boardcast_game::events::Player>| {
        p.as_ref().map(|p| p.name.clone()).unwrap_or_default()
    };
    writeln!(out)?;
    writeln!(
        out,
        "== {} — {} vs {} (round {}, board {}, board id {}, {}) ==",
        game.game_id,
        player(&info.white),
        player(&info.black),
        info.round,
        info.board_number,
        info.board_id,
        info.edition
    )?;
    for step in &game.steps {
        let e = step.entry();
        let who = if e.actor.is_empty() {
            String::new()
        } else {
            format!(" — {}", e.actor)
        };
        let flags = format!(
            "{}{}",
            if e.raises_alert { " [ALERT]" } else { "" },
            if step.unsigned { " [unsigned]" } else { "" }
        );
        writeln!(
            out,
            "#{:<5} {} {:<13} {}{}{}",
            e.game_seq,
            format_time(e.recorded_unix_ms),
            e.source,
            e.words,
            who,
            flags
        )?;
    }
    for refusal in &game.refused {
        writeln!(
            out,
            "REFUSED {refusal} (not folded: no trusted key signed it)"
        )?;
    }
    writeln!(out, "-- alerts --")?;
    for a in &game.alerts {
        writeln!(
            out,
            "  entry {}: {} (Article {}): {} — {}",
            a.raised_at,
            boardcast_game::timeline::alert_kind_label(a.kind),
            a.article,
            a.summary,
            boardcast_game::timeline::alert_status_name(&a.status)
        )?;
    }
    writeln!(
        out,
        "-- result {} after {} moves; position {}",
        game.game.result_token(),
        game.game.completed_moves().len(),
        boardcast_game::fen(game.game.position())
    )?;
    Ok(())
}

/// `HH:MM:SS.mmm` UTC.
fn format_time(unix_ms: i64) -> String {
    let ms = unix_ms.rem_euclid(86_400_000);
    format!(
        "{:02}:{:02}:{:02}.{:03}",
        ms / 3_600_000,
        ms / 60_000 % 60,
        ms / 1000 % 60,
        ms % 1000
    )
}

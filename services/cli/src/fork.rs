//! `boardcast fork`: a game whose log forks (two records with one number, written beside each
//! other) is shown with its branches; an operator keeps one, and the records of the others are
//! saved to a file and removed from the log, so that the game goes on from the branch kept. A
//! game whose log lost records for good (a NATS fault) is cut after the last record that
//! follows on the same way, the records after the gap saved and removed.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use async_nats::jetstream;
use base64::Engine as _;
use boardcast_appeal::fork::{BranchRecord, Fork, Missing, find_fork, find_missing, follows_on};
use boardcast_game::signing::TrustedKeys;
use boardcast_kit::game_log::game_records;
use boardcast_kit::nats::GAMES_STREAM;

#[derive(clap::Args, Debug)]
pub struct ForkArgs {
    #[command(subcommand)]
    command: ForkCommand,
}

#[derive(clap::Subcommand, Debug)]
enum ForkCommand {
    /// Show where a game's log forks and the records of each branch, named by where its first
    /// record is stored (nothing is changed). The game service refuses every decision on a game
    /// whose log forks, and says why in its log and its dead letters ("the log forked").
    Show {
        /// The game, as the game service names it (e.g. `london-r1-b3`).
        game_id: String,
        #[command(flatten)]
        log: LogArgs,
    },
    /// Keep one branch of a game's forked log: the records of the other branches (each one's
    /// bytes as stored, with its stream sequence) are written to a file, then removed from the
    /// log, the last first. Then the board's last observation is published again: the game
    /// service folds the game afresh from the branch kept, decides the board's observations it
    /// gave up meanwhile, in order, and goes on. Needs the admin's NATS URL (`boardcast
    /// nats-config --print-url admin`). One operator at a time: two keeping different branches
    /// at once would remove both.
    Keep {
        /// The game, as the game service names it.
        game_id: String,
        /// The branch to keep: the stream sequence of its first record, as `show` lists it.
        #[arg(long)]
        branch: u64,
        /// Where to save the records removed (a new file: an existing one is not overwritten).
        #[arg(long)]
        save: PathBuf,
        #[command(flatten)]
        log: LogArgs,
    },
    /// Cut a game's log that lost records for good (a NATS fault; the game service says
    /// "does not follow on", and `show` lists what follows the gap): the records
    /// after the gap, which no reader can fold, are written to a file, then removed from the
    /// log, the last first. Then the board's last observation is published again: the game
    /// service folds the game afresh and decides the board's observations since the last record
    /// kept again, from the observation streams, so the moves and clock presses come back;
    /// arbiters' decisions among the records removed (listed) must be made again. Needs the
    /// admin's NATS URL. Refuses, changing nothing, a log
    /// that forks (keep a branch first), that follows on, or whose last record following on is
    /// not `--after`.
    Cut {
        /// The game, as the game service names it.
        game_id: String,
        /// The number of the last record that follows on, as `show` gives it: the log is kept
        /// up to it.
        #[arg(long)]
        after: u64,
        /// Where to save the records removed (a new file: an existing one is not overwritten).
        #[arg(long)]
        save: PathBuf,
        #[command(flatten)]
        log: LogArgs,
    },
}

#[derive(clap::Args, Debug)]
struct LogArgs {
    /// NATS server holding the game log.
    #[arg(
        long,
        env = "BOARDCAST_NATS_URL",
        default_value = "nats://127.0.0.1:4222"
    )]
    nats: String,
    /// Only records signed by these keys count, as for every reader of the log: a record no
    /// trusted key signed (a forgery) makes no branch and is never kept.
    #[command(flatten)]
    trust: boardcast_kit::signing::TrustArgs,
}

pub async fn run(args: ForkArgs) -> anyhow::Result<()> {
    match args.command {
        ForkCommand::Show { game_id, log } => {
            let trusted = log.trust.load()?;
            let stored = game_records(&open_log(&log.nats).await?, &game_id, u64::MAX).await?;
            anyhow::ensure!(
                !stored.is_empty(),
                "the game log holds nothing of game {game_id:?}: check the id (the dashboard and \
                 `boardcast export` show them)"
            );
            let taken = boardcast_game::trusted_records_of(&game_id, &stored, &trusted).len();
            if taken < stored.len() {
                println!(
                    "{} of the {} messages on the subject of game {game_id} are not records of \
                     it that a trusted key signed: left aside, as every reader leaves them",
                    stored.len() - taken,
                    stored.len()
                );
            }
            match find_fork(&game_id, &stored, &trusted) {
                Some(fork) => print_fork(&game_id, &fork),
                None => match find_missing(&game_id, &stored, &trusted) {
                    Some(missing) => print_missing(&game_id, &missing),
                    None => println!(
                        "the log of game {game_id} does not fork ({taken} records): {}",
                        following(follows_on(&game_id, &stored, &trusted))
                    ),
                },
            }
            Ok(())
        }
        ForkCommand::Keep {
            game_id,
            branch,
            save,
            log,
        } => keep(&log.nats, &log.trust.load()?, &game_id, branch, &save).await,
        ForkCommand::Cut {
            game_id,
            after,
            save,
            log,
        } => cut(&log.nats, &log.trust.load()?, &game_id, after, &save).await,
    }
}

/// The game log stream on NATS server `nats`.
async fn open_log(nats: &str) -> anyhow::Result<jetstream::stream::Stream> {
    let client = boardcast_kit::nats::connect_for_command(
        nats,
        "boardcast-fork",
        boardcast_kit::nats::COMMAND_CONNECT_WITHIN,
    )
    .await?;
    jetstream::new(client)
        .get_stream(GAMES_STREAM)
        .await
        .with_context(|| format!("opening the game log ({GAMES_STREAM})"))
}

fn print_fork(game_id: &str, fork: &Fork) {
    println!(
        "the log of game {game_id} forks at record {}: {} branches",
        fork.game_seq,
        fork.branches.len()
    );
    for branch in &fork.branches {
        println!("\nbranch {}:", branch.first_stream_seq());
        print_records(&branch.records);
    }
    println!(
        "\nkeep one with: boardcast fork keep {game_id} --branch <first stream sequence> --save <file>"
    );
}

fn print_missing(game_id: &str, missing: &Missing) {
    let first_after = missing.after.first().map_or(0, |r| r.game_seq);
    println!(
        "the log of game {game_id} does not fork; it follows on up to record {}, and records {} \
         to {} are missing; stored after them, and not folded by any reader:",
        missing.last_followed,
        missing.last_followed.saturating_add(1),
        first_after.saturating_sub(1),
    );
    print_records(&missing.after);
    println!(
        "\nA record still missing a minute after a fault (a node back, a leader elected) is lost \
         for good (the game service refuses to decide on the game meanwhile). Then cut the log after record \
         {last} with: boardcast fork cut {game_id} --after {last} --save <file>\nThe board's \
         observations since are decided again; arbiters' decisions listed above must be made \
         again.",
        last = missing.last_followed
    );
}

/// The records of a branch, or after a gap, one a line.
fn print_records(records: &[BranchRecord]) {
    for r in records {
        let stored_at = r
            .stream_seqs
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        let signed = if r.key_id.is_empty() {
            "unsigned".to_owned()
        } else {
            format!("signed by key {}", r.key_id)
        };
        println!(
            "  record {} (stored at {stored_at}; recorded {}; {signed}): {}",
            r.game_seq,
            time_of(r.recorded_unix_ms),
            r.words
        );
    }
}

/// How a game's records follow on, in words.
fn following(followed: Result<u64, String>) -> String {
    match followed {
        Ok(last) => format!("its records follow on, up to record {last}"),
        Err(e) => format!("its records do not follow on: {e}"),
    }
}

async fn keep(
    nats: &str,
    trusted: &TrustedKeys,
    game_id: &str,
    kept: u64,
    save: &Path,
) -> anyhow::Result<()> {
    let stream = open_log(nats).await?;
    let stored = game_records(&stream, game_id, u64::MAX).await?;
    let fork = find_fork(game_id, &stored, trusted)
        .with_context(|| format!("the log of game {game_id} does not fork: nothing removed"))?;
    let removed = fork
        .removed_keeping(kept)
        .with_context(|| format!("nothing removed from the log of game {game_id}"))?;
    remove_saved(
        &stream,
        game_id,
        &stored,
        &removed,
        ("kept_branch", kept),
        save,
    )
    .await?;
    let after = game_records(&stream, game_id, u64::MAX).await?;
    if let Some(again) = find_fork(game_id, &after, trusted) {
        eprintln!(
            "removed {} records; the log of game {game_id} forks again further on:",
            removed.len()
        );
        print_fork(game_id, &again);
        return Ok(());
    }
    let done = format!("removed {} records, keeping branch {kept}", removed.len());
    say_it_follows_on(game_id, &after, trusted, &done)?;
    decide_board_again(nats, game_id, boards_set_up_on(&after, &stored)).await
}

/// Says what was `done` and whether game `game_id`'s records left in the log (`left`) follow
/// on; an error when they do not.
fn say_it_follows_on(
    game_id: &str,
    left: &[(u64, impl AsRef<[u8]>)],
    trusted: &TrustedKeys,
    done: &str,
) -> anyhow::Result<()> {
    let followed = follows_on(game_id, left, trusted);
    let ok = followed.is_ok();
    eprintln!("{done}: {}", following(followed));
    anyhow::ensure!(
        ok,
        "the log of game {game_id} still does not follow on; the game service refuses to decide \
         on it until it does"
    );
    Ok(())
}

async fn cut(
    nats: &str,
    trusted: &TrustedKeys,
    game_id: &str,
    after: u64,
    save: &Path,
) -> anyhow::Result<()> {
    let stream = open_log(nats).await?;
    let stored = game_records(&stream, game_id, u64::MAX).await?;
    anyhow::ensure!(
        find_fork(game_id, &stored, trusted).is_none(),
        "the log of game {game_id} forks: keep a branch first (boardcast fork show {game_id}); \
         nothing removed"
    );
    let missing = find_missing(game_id, &stored, trusted).with_context(|| {
        format!(
            "the log of game {game_id} misses no record that cutting it mends ({}): nothing \
             removed",
            following(follows_on(game_id, &stored, trusted))
        )
    })?;
    anyhow::ensure!(
        missing.last_followed == after,
        "the log of game {game_id} follows on up to record {}, not {after}: nothing removed \
         (see boardcast fork show {game_id})",
        missing.last_followed
    );
    let removed = missing.removed();
    remove_saved(
        &stream,
        game_id,
        &stored,
        &removed,
        ("kept_up_to_record", after),
        save,
    )
    .await?;
    let left = game_records(&stream, game_id, u64::MAX).await?;
    let done = format!("removed {} records after record {after}", removed.len());
    say_it_follows_on(game_id, &left, trusted, &done)?;
    decide_board_again(nats, game_id, boards_set_up_on(&left, &stored)).await?;
    eprintln!(
        "arbiters' decisions among the records removed must be made again (saved in {})",
        save.display()
    );
    Ok(())
}

/// The boards game `game_id` was set up on, by its first record or a revision, in the records
/// before they were mended (`stored`) and left in the log (`left`), each once, the board it is on
/// now last: the game service may still hold the game on a board the mending removed, and folds
/// it afresh at that board's observation, before the one it is on now says what is left to do.
fn boards_set_up_on(
    left: &[(u64, impl AsRef<[u8]>)],
    stored: &[(u64, impl AsRef<[u8]>)],
) -> Vec<String> {
    fn boards(records: &[(u64, impl AsRef<[u8]>)]) -> Vec<String> {
        use boardcast_schema::game::v1::game_event::Kind;
        use prost::Message as _;
        records
            .iter()
            .filter_map(|(_, payload)| {
                let record =
                    boardcast_schema::game::v1::GameEventRecord::decode(payload.as_ref()).ok()?;
                match boardcast_game::Game::open_record(&record).ok()?.kind? {
                    Kind::Started(info) => Some(info.board_id),
                    Kind::SetUpRevised(revised) => revised.set_up.map(|s| s.board_id),
                    _ => None,
                }
            })
            .collect()
    }
    let mut ordered: Vec<String> = Vec::new();
    for board in boards(stored).into_iter().chain(boards(left)) {
        ordered.retain(|b| *b != board);
        ordered.push(board);
    }
    ordered
}

/// Publishes the last observation of game `game_id`'s boards again (`boards`, see
/// [`boards_set_up_on`]), so that the game service decides the board's observations since the
/// log was mended without waiting for the board (a finished game's board sends nothing more):
/// the game service folds the mended game afresh at that decision, and the gap before the
/// observation brings back, in order, those given up while the log was broken or decided into
/// records removed. On a board another game is live on, it is one that game has had.
async fn decide_board_again(nats: &str, game_id: &str, boards: Vec<String>) -> anyhow::Result<()> {
    use boardcast_kit::nats::{
        BoardRead, last_board_observation, observation_message_id, observation_subject,
    };
    if boards.is_empty() {
        eprintln!("game {game_id} has no first record left: no board to decide again");
        return Ok(());
    }
    let js = jetstream::new(
        boardcast_kit::nats::connect_for_command(
            nats,
            "boardcast-fork",
            boardcast_kit::nats::COMMAND_CONNECT_WITHIN,
        )
        .await?,
    );
    for board in boards {
        let Some((device_seq, payload)) =
            last_board_observation(&js, &board, BoardRead::Leader).await?
        else {
            eprintln!("board {board} has sent no observation: nothing to decide again");
            continue;
        };
        let message_id = observation_message_id(&board, device_seq, rand::random());
        js.send_publish(
            observation_subject(&board),
            jetstream::message::PublishMessage::build()
                .payload(payload)
                .message_id(message_id),
        )
        .await
        .context("publishing the board's last observation again")?
        .await
        .context("publishing the board's last observation again")?;
        eprintln!(
            "published board {board}'s last observation ({device_seq}) again: the game service \
             folds the mended game afresh and decides the board's observations since, in order"
        );
    }
    Ok(())
}

/// Saves the messages of `stored` at the stream sequences `removed` to `save` (with `kept`,
/// what stays, named), then removes them from the log.
async fn remove_saved(
    stream: &jetstream::stream::Stream,
    game_id: &str,
    stored: &[(u64, impl AsRef<[u8]>)],
    removed: &[u64],
    kept: (&str, u64),
    save: &Path,
) -> anyhow::Result<()> {
    save_removed(save, game_id, kept, stored, removed)?;
    eprintln!(
        "saved the {} records to remove to {}",
        removed.len(),
        save.display()
    );
    // The last first: stopped part way (a connection lost), the first record to remove is
    // still there, and `show`, `keep` and `cut` find the same again.
    for seq in removed.iter().rev() {
        stream.delete_message(*seq).await.with_context(|| {
            format!(
                "removing stream sequence {seq} from {GAMES_STREAM} (the admin's NATS URL is \
                 needed); the records are saved in {}",
                save.display()
            )
        })?;
    }
    Ok(())
}

/// Writes the messages of `stored` at the stream sequences `removed`, exactly as stored, to
/// `path` (a new file, complete before anything is removed), with what stays (`kept`, named
/// `kept_as`).
fn save_removed(
    path: &Path,
    game_id: &str,
    (kept_as, kept): (&str, u64),
    stored: &[(u64, impl AsRef<[u8]>)],
    removed: &[u64],
) -> anyhow::Result<()> {
    let records: Vec<serde_json::Value> = stored
        .iter()
        .filter(|(seq, _)| removed.contains(seq))
        .map(|(seq, payload)| {
            serde_json::json!({
                "stream_seq": seq,
                "record_base64": base64::engine::general_purpose::STANDARD.encode(payload.as_ref()),
            })
        })
        .collect();
    let mut saved = serde_json::json!({
        "game_id": game_id,
        "removed_at": time_of(boardcast_kit::now_unix_ms()),
        "removed": records,
    });
    saved[kept_as] = kept.into();
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .with_context(|| format!("creating {} (not overwritten)", path.display()))?;
    serde_json::to_writer_pretty(&mut file, &saved)?;
    file.write_all(b"\n")?;
    file.sync_all()
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// A time in milliseconds since 1970 as RFC 3339 (UTC), or as the number when out of range.
fn time_of(unix_ms: i64) -> String {
    u64::try_from(unix_ms)
        .ok()
        .and_then(|ms| std::time::UNIX_EPOCH.checked_add(std::time::Duration::from_millis(ms)))
        .map_or_else(
            || format!("{unix_ms} ms since 1970"),
            |at| humantime::format_rfc3339_millis(at).to_string(),
        )
}

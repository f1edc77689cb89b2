//! How long an appeal's checks take on a full round: 1,000 games of real length (the London
//! Chess Classic 2016 games on simulated boards: every lift, placement and clock press decided
//! by the aggregate, an illegal move with its penalty and arbiter's rulings in each), signed as
//! the game service signs them. Reports reading the file, replaying every game, checking the
//! signatures alone, and the whole verification (chain, signatures, every decision made again).
//!
//! `cargo bench -p boardcast-appeal --bench replay` (BENCH_GAMES=n for another size).

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::Instant;

use boardcast_appeal::{RecordFile, replay, verify};
use boardcast_game::events::GameEventRecord;
use boardcast_game::signing::TrustedKeys;
use prost::Message as _;

fn main() {
    let games: u32 = std::env::var("BENCH_GAMES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let signer = common::hall_signer();
    let started = Instant::now();
    // BENCH_FILE=path keeps the generated round there and reads it back on later runs.
    let cached = std::env::var_os("BENCH_FILE").map(std::path::PathBuf::from);
    let bytes = match cached.as_ref().and_then(|p| std::fs::read(p).ok()) {
        Some(bytes) => bytes,
        None => {
            let (_, bytes) = common::round_file(games, &signer);
            if let Some(path) = &cached {
                std::fs::write(path, &bytes).expect("writes the round");
            }
            bytes
        }
    };
    let records: usize = RecordFile::read(bytes.as_slice())
        .expect("reads")
        .games
        .iter()
        .map(|g| g.records.len())
        .sum();
    let games = RecordFile::read(bytes.as_slice())
        .expect("reads")
        .games
        .len();
    println!(
        "round of {games} games: {records} records ({:.0} per game), {:.1} MB, made or read in {:.1} s",
        records as f64 / games as f64,
        bytes.len() as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    let keys = TrustedKeys::new([signer.public_key().clone()]);

    let t = Instant::now();
    let file = RecordFile::read(bytes.as_slice()).expect("reads");
    let read_s = t.elapsed().as_secs_f64();

    // BENCH_VERIFY_ONLY=1: the whole verification alone (for a profiler).
    if std::env::var_os("BENCH_VERIFY_ONLY").is_some() {
        let t = Instant::now();
        let report = verify(&file, &keys);
        assert!(report.passed(), "{:?}", report.problems.first());
        println!(
            "verify                        {:8.3} s",
            t.elapsed().as_secs_f64()
        );
        return;
    }
    // Timed up to having every game replayed; freeing the results afterwards is not counted.
    let t = Instant::now();
    let all: Vec<_> = file
        .games
        .iter()
        .map(|game| replay(game, &keys, None).expect("replays"))
        .collect();
    let replay_s = t.elapsed().as_secs_f64();
    drop(all);

    // As `boardcast replay FILE` prints timelines: every core, each game's replay handed over
    // in order and dropped once used.
    let t = Instant::now();
    let jobs: Vec<_> = file.games.iter().map(|g| (g, None)).collect();
    boardcast_appeal::replay_each(
        &jobs,
        &keys,
        |replayed| drop(replayed.expect("replays")),
        |()| {},
    );
    let streamed_s = t.elapsed().as_secs_f64();
    println!(
        "replay, every core, streamed  {streamed_s:8.3} s  (as `boardcast replay` prints timelines)"
    );
    if std::env::var_os("BENCH_REPLAY_ONLY").is_some() {
        println!("replay every game, 1 thread   {replay_s:8.3} s");
        return;
    }
    let t = Instant::now();
    for game in &file.games {
        let mut folded: Option<boardcast_game::Game> = None;
        for r in &game.records {
            let record = GameEventRecord::decode(r.payload.as_slice()).expect("decodes");
            match folded.as_mut() {
                None => {
                    folded = Some(boardcast_game::Game::from_first_record(&record).expect("folds"))
                }
                Some(g) => g.apply(&record).expect("folds"),
            }
        }
    }
    let fold_only_s = t.elapsed().as_secs_f64();

    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let t = Instant::now();
    let jobs: Vec<_> = file.games.iter().map(|g| (g, None)).collect();
    let all = boardcast_appeal::replay_many(&jobs, &keys);
    let replay_parallel_s = t.elapsed().as_secs_f64();
    assert!(all.iter().all(Result::is_ok));
    drop(all);

    let t = Instant::now();
    for game in &file.games {
        for r in &game.records {
            let record = GameEventRecord::decode(r.payload.as_slice()).expect("decodes");
            keys.check(&record, 0, false).expect("signed");
        }
    }
    let signatures_s = t.elapsed().as_secs_f64();

    // As verification checks them: a game's signatures in one batch.
    let t = Instant::now();
    for game in &file.games {
        let records: Vec<GameEventRecord> = game
            .records
            .iter()
            .map(|r| GameEventRecord::decode(r.payload.as_slice()).expect("decodes"))
            .collect();
        assert!(keys.batch_verifies(&records.iter().collect::<Vec<_>>()));
    }
    let batches_s = t.elapsed().as_secs_f64();

    let t = Instant::now();
    let report = verify(&file, &keys);
    let verify_s = t.elapsed().as_secs_f64();
    assert!(report.passed(), "{:?}", report.problems.first());

    println!("read the file                 {read_s:8.3} s");
    println!(
        "replay every game, 1 thread   {replay_s:8.3} s  (timeline, alerts, positions; each game's last signature)"
    );
    println!(
        "fold only (Game::apply)       {fold_only_s:8.3} s  (no timeline, alerts or positions)"
    );
    println!("replay every game, {threads} threads  {replay_parallel_s:8.3} s");
    println!(
        "signatures alone, 1 thread    {signatures_s:8.3} s  ({:.1} µs per record)",
        signatures_s * 1e6 / records as f64
    );
    println!(
        "signatures in batches, 1 thread {batches_s:6.3} s  ({:.1} µs per record, a game a batch)",
        batches_s * 1e6 / records as f64
    );
    println!(
        "verify, {threads} threads             {verify_s:8.3} s  (chain, every signature, {} decisions made again)",
        report.decisions_reproduced
    );
}

//! `boardcast replay`: a record file (or the live log) checked, verified and replayed: a
//! game's timeline, a position at a moment, a claim judged again, JSON or an HTML page.

use std::io::Write as _;
use std::path::PathBuf;

use anyhow::{Context as _, bail};
use async_nats::jetstream::{self};
use boardcast_appeal::{At, RecordFile, ReplayedGame, replay, replay_each, replay_many, verify};
use boardcast_game::Game;
use boardcast_game::events::GameEventRecord;
use boardcast_game::signing::{PublicKey, TrustedKeys};
use clap::Args;

use super::export::{Selection, read_game_log};
use prost::Message as _;

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
            let client = boardcast_kit::nats::connect_for_command(
                url,
                "boardcast-replay",
                boardcast_kit::nats::COMMAND_CONNECT_WITHIN,
            )
            .await?;
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

pub(super) fn atty_stderr() -> bool {
    use std::io::IsTerminal as _;
    std::io::stderr().is_terminal()
}

/// The keys to check signatures with, and whether they were confirmed from outside the file.
pub(super) fn trust(args: &ReplayArgs, file: &RecordFile) -> anyhow::Result<(TrustedKeys, bool)> {
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

pub(super) fn describe_keys(keys: &TrustedKeys, pinned: bool) -> String {
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

pub(super) fn parse_at(text: &str, game: &boardcast_appeal::ExportedGame) -> anyhow::Result<At> {
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

pub(super) fn print_claim(game: &ReplayedGame, kind: &str, intended: &str) -> anyhow::Result<()> {
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
    for caution in game.cautions() {
        println!("  caution: {caution}");
    }
    if !judged.unconfirmed_plies.is_empty() {
        println!(
            "  moves no clock press or arbiter confirmed (check the scoresheets): plies {:?}",
            judged.unconfirmed_plies
        );
    }
    Ok(())
}

pub(super) fn print_moment(m: &boardcast_appeal::Moment) {
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
    for caution in &m.cautions {
        println!("  caution     {caution}");
    }
}

pub(super) fn game_json(game: &ReplayedGame) -> serde_json::Value {
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
        "cautions": game.cautions(),
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

pub(super) fn print_timeline(
    out: &mut impl std::io::Write,
    game: &ReplayedGame,
) -> anyhow::Result<()> {
    let info = game.info();
    let player = |p: &Option<boardcast_game::events::Player>| {
        p.as_ref().map(|p| p.name.clone()).unwrap_or_default()
    };
    writeln!(out)?;
    writeln!(
        out,
        "== {} — {} vs {} (round {}, board {}, board id {}, Laws {}; times UTC) ==",
        game.game_id,
        player(&info.white),
        player(&info.black),
        info.round,
        info.board_number,
        info.board_id,
        game.game.rules().edition
    )?;
    for caution in game.cautions() {
        writeln!(out, "CAUTION {caution}")?;
    }
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
    let position = game.game.position();
    // The number of the last move made: the position's next one, less one when White is to move.
    use shakmaty::Position as _;
    let last_move = position.fullmoves().get() - u32::from(position.turn().is_white());
    writeln!(
        out,
        "-- result {} after {} plies (move {last_move}); position {}",
        game.game.result_token(),
        game.game.completed_moves().len(),
        boardcast_game::fen(position)
    )?;
    Ok(())
}

/// `HH:MM:SS.mmm` UTC.
pub(super) fn format_time(unix_ms: i64) -> String {
    let ms = unix_ms.rem_euclid(86_400_000);
    format!(
        "{:02}:{:02}:{:02}.{:03}",
        ms / 3_600_000,
        ms / 60_000 % 60,
        ms / 1000 % 60,
        ms % 1000
    )
}

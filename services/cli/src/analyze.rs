//! `boardcast analyze`: the draw claims, automatic draws, dead positions and final status of
//! every game in a PGN file, or what is known about one FEN position.
//!
//! Output, human-readable by default; with `--json`, one JSON object per game per line (JSON
//! Lines) with the fields of [`boardcast_rules::analysis::GameAnalysis`]:
//! `white`, `black`, `round`, `edition`, `plies` (half-moves played), `claims` (every ply after
//! which the player to move could claim: `{"ply", "kind": "threefold"|"fifty", "basis":
//! "position"|"intended_move", "occurrences": [plies], "moves": [uci]}`), `automatic`
//! (`{"ply", "kind": "fivefold"|"seventyfive"|"dead_position", "occurrences"}`, the first ply of
//! each kind), `first_dead_ply`, `dead_undetermined_plies` (only when not empty: plies whose
//! position the analysis examined without determining whether it is dead; the first dead ply may
//! be among them), `status`, `ended_at_ply` and `result`.
//!
//! `status` is `checkmate`, `stalemate`, `dead_position`, `fivefold` or `seventyfive` when the
//! position ended the game (at `ended_at_ply`, even if the score goes on), otherwise the result
//! tag (`1-0`, `0-1`, `1/2-1/2`: resignation, agreement, time, claim; `0-0`, `1/2-0`, `0-1/2`:
//! the arbiter's) or `ongoing` for `*`.
//!
//! Occurrences: for a threefold claim on the position, the plies of every occurrence so far; with
//! an intended move, the earlier occurrences of the position(s) the qualifying move(s) would
//! produce, then the would-be ply N + 1; for fifty moves, the ply right after the last capture
//! or pawn move when it is within the score, else empty.
//!
//! With `--fen` (and `--json`): `{"dead", "white_can_mate", "black_can_mate"}`, each `"yes"`,
//! `"no"` or `"undetermined"` (the analysis reached its bounds without a proof either way: never
//! a verdict, the arbiter decides), and `white_helpmate` / `black_helpmate` (UCI moves ending in
//! that side's mate) when the side can mate.

use std::{
    io::{self, BufWriter, Read, Write},
    path::PathBuf,
};

use anyhow::Context;
use boardcast_rules::{
    analysis::{self, AutomaticKind, GameAnalysis},
    claims::{ClaimBasis, ClaimKind},
    dead::Answer,
    pgn,
    ruleset::{Edition, RuleSet},
};

/// Arguments of `boardcast analyze`.
#[derive(Debug, Clone, clap::Args)]
pub struct AnalyzeArgs {
    /// PGN file to analyse; `-` reads standard input.
    #[arg(
        value_name = "FILE",
        required_unless_present = "fen",
        conflicts_with = "fen"
    )]
    pub file: Option<PathBuf>,
    /// Analyse this position instead of a PGN file: is it dead, which sides can still mate.
    #[arg(long, value_name = "FEN")]
    pub fen: Option<String>,
    /// Edition of the Laws: fide-2005, fide-2009, fide-2014, fide-2018, fide-2023, iccf-2019.
    #[arg(long, default_value = "fide-2023")]
    pub edition: Edition,
    /// One JSON object per game per line instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Runs `boardcast analyze`.
pub fn run(args: AnalyzeArgs) -> anyhow::Result<()> {
    match analyze(&args) {
        // The reader went away (e.g. `| head`): nothing more to say.
        Err(e)
            if e.downcast_ref::<io::Error>()
                .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe) =>
        {
            Ok(())
        }
        other => other,
    }
}

fn analyze(args: &AnalyzeArgs) -> anyhow::Result<()> {
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    if let Some(fen) = &args.fen {
        let report = analysis::analyze_fen(fen)?;
        if args.json {
            writeln!(out, "{}", serde_json::to_string(&report)?)?;
        } else {
            writeln!(out, "position: {fen}")?;
            writeln!(out, "dead: {}", report.dead.as_str())?;
            for (side, answer, line) in [
                ("white", report.white_can_mate, &report.white_helpmate),
                ("black", report.black_can_mate, &report.black_helpmate),
            ] {
                write!(out, "{side} can checkmate: {}", answer.as_str())?;
                match answer {
                    Answer::Yes => writeln!(out, " (for example {})", line.join(" "))?,
                    Answer::Undetermined => writeln!(
                        out,
                        " (the analysis found neither a mate nor a proof within its bounds; \
                         the arbiter decides)"
                    )?,
                    Answer::No => writeln!(out)?,
                }
            }
        }
        out.flush()?;
        return Ok(());
    }

    let file = args
        .file
        .as_ref()
        .context("a PGN file (or `-` for standard input) or --fen is required")?;
    let text = if file.as_os_str() == "-" {
        let mut buf = String::new();
        io::stdin()
            .read_to_string(&mut buf)
            .context("reading PGN from standard input")?;
        buf
    } else {
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?
    };
    // Every game of the file, each with its legal moves: one bad game never stops the rest.
    let file = pgn::read_pgn(&text);
    let rules = RuleSet::standard(args.edition);
    for read in &file.games {
        let game = &read.game.game;
        let mut report = analysis::analyze_game(&rules, game)
            .with_context(|| format!("game {} ({})", read.number, game.players()))?;
        report.score_stopped = read.stopped.clone();
        if args.json {
            writeln!(out, "{}", serde_json::to_string(&report)?)?;
        } else {
            print_game(&mut out, read.number, &report)?;
        }
    }
    out.flush()?;
    report_what_was_left_out(&file);
    Ok(())
}

/// Says on standard error which games' scores were cut short and what could not be read.
fn report_what_was_left_out(file: &pgn::PgnFile) {
    let stopped: Vec<_> = file.games.iter().filter(|g| g.stopped.is_some()).collect();
    if stopped.is_empty() && file.problems.is_empty() {
        return;
    }
    eprintln!(
        "read {} game(s); {} cut short where the score stops being legal, {} problem(s):",
        file.games.len(),
        stopped.len(),
        file.problems.len()
    );
    for read in stopped {
        if let Some(stop) = &read.stopped {
            eprintln!(
                "  game {} ({}): {stop}",
                read.number,
                read.game.game.players()
            );
        }
    }
    for problem in &file.problems {
        eprintln!("  {problem}");
    }
}

fn plies_list(plies: &[u32]) -> String {
    plies
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn print_game(out: &mut impl Write, number: usize, report: &GameAnalysis) -> io::Result<()> {
    writeln!(
        out,
        "Game {number}: {} - {} (round {}), {} plies, {}",
        report.white, report.black, report.round, report.plies, report.edition
    )?;
    if report.claims.is_empty() {
        writeln!(out, "  no draw claim available")?;
    }
    for claim in &report.claims {
        let kind = match claim.kind {
            ClaimKind::Threefold => "threefold repetition",
            ClaimKind::Fifty => "fifty moves",
        };
        let basis = match claim.basis {
            ClaimBasis::Position => "on the position".to_owned(),
            ClaimBasis::IntendedMove => format!("with intended move {}", claim.moves.join(" / ")),
        };
        let occurrences = if claim.occurrences.is_empty() {
            String::new()
        } else {
            format!(" (plies {})", plies_list(&claim.occurrences))
        };
        writeln!(
            out,
            "  ply {}: {kind} claimable {basis}{occurrences}",
            claim.ply
        )?;
    }
    for auto in &report.automatic {
        let kind = match auto.kind {
            AutomaticKind::Fivefold => "fivefold repetition (automatic draw)",
            AutomaticKind::Seventyfive => "seventy-five moves (automatic draw)",
            AutomaticKind::DeadPosition => "dead position (game ends)",
        };
        let occurrences = if auto.occurrences.is_empty() {
            String::new()
        } else {
            format!(" (plies {})", plies_list(&auto.occurrences))
        };
        writeln!(out, "  ply {}: {kind}{occurrences}", auto.ply)?;
    }
    match report.first_dead_ply {
        Some(ply) => writeln!(out, "  first dead position: ply {ply}")?,
        None if report.dead_undetermined_plies.is_empty() => writeln!(out, "  no dead position")?,
        None => writeln!(out, "  no dead position proven")?,
    }
    if !report.dead_undetermined_plies.is_empty() {
        writeln!(
            out,
            "  whether the position is dead was not determined at plies {} (the arbiter decides)",
            plies_list(&report.dead_undetermined_plies)
        )?;
    }
    match report.ended_at_ply {
        Some(ply) => writeln!(out, "  status: {} at ply {ply}", report.status)?,
        None => writeln!(out, "  status: {}", report.status)?,
    }
    if let Some(stop) = &report.score_stopped {
        writeln!(out, "  {stop}")?;
    }
    Ok(())
}

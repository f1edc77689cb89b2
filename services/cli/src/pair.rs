//! `boardcast pair`: sets a round up from the Tournament Report File a pairing program exported,
//! through the game service's `PairRound`; `--dry-run` prints the round as JSON instead.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use boardcast_schema::game::v1::{
    ListGamesRequest, PairRoundRequest, Pairing, Player as PairedPlayer,
};
use boardcast_trf::{RoundPairings, TrfFile};
use clap::Args;

#[derive(Args, Debug)]
pub struct PairArgs {
    /// The Tournament Report File (TRF16 or TRF-26) the pairing program exported after pairing
    /// the round.
    #[arg(long)]
    trf: PathBuf,
    /// The round to set up.
    #[arg(long)]
    round: u32,
    /// The tournament's id in boardcast (e.g. hall-open-2026).
    #[arg(long)]
    tournament: String,
    /// The physical boards, in table order: a range such as hall-1..hall-60 (table 1 on hall-1,
    /// table 2 on hall-2, …).
    #[arg(long, conflicts_with = "board_map")]
    boards: Option<String>,
    /// A file mapping each table to its physical board, one `TABLE BOARD` pair a line (e.g.
    /// `1 hall-7`); `#` starts a comment.
    #[arg(long)]
    board_map: Option<PathBuf>,
    /// Print the round as JSON (one object per board, byes apart) and set nothing up; needs no
    /// running system.
    #[arg(long)]
    dry_run: bool,
    /// The time control, as in PGN (40/5400+30:1800+30); without it, the file's (TRF-26 `222`,
    /// else `122` when it reads as one).
    #[arg(long)]
    time_control: Option<String>,
    /// Laws edition (e.g. fide-2023); without it, the game service's default.
    #[arg(long, default_value = "")]
    edition: String,
    /// The event's name for the games' PGN; without it, the file's (`012`).
    #[arg(long)]
    event: Option<String>,
    /// The site for the games' PGN; without it, the file's city (`022`).
    #[arg(long)]
    site: Option<String>,
    /// The round's date (YYYY.MM.DD); without it, the file's date for the round (`132`), else
    /// its start (`042`).
    #[arg(long)]
    date: Option<String>,
    /// Set the games up on boards whose current game is not finished (an adjourned or abandoned
    /// game keeps its log but receives no more observations).
    #[arg(long)]
    replace_unfinished: bool,
    /// Set up again the round's games that exist with other details (the pairing program
    /// paired the round again, a board or a player's details were wrong, a board or clock broke
    /// in play). Before a game begins anything but its table may change; after, the players'
    /// and the event's details and its physical board (the game goes on there from its
    /// position; not while a move stands on the old board uncompleted), never the time control. Every game is checked first: one that may
    /// not change refuses the whole round. Games of the round the file no longer pairs are
    /// named, not removed.
    #[arg(long)]
    revise: bool,
    #[command(flatten)]
    game_service: crate::game_service::GameServiceArgs,
}

/// A player as the dry run prints them.
#[derive(serde::Serialize)]
struct PlayerOut {
    name: String,
    title: Option<&'static str>,
    rating: Option<u32>,
    fide_id: Option<String>,
    federation: Option<String>,
    /// The player's starting rank in the file.
    rank: u32,
}

#[derive(serde::Serialize)]
struct BoardOut {
    board: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    board_id: Option<String>,
    white: PlayerOut,
    black: PlayerOut,
}

pub async fn run(args: PairArgs) -> anyhow::Result<()> {
    let file = read_trf(&args.trf)?;
    let pairings = file
        .round(args.round)
        .with_context(|| format!("round {} of {}", args.round, args.trf.display()))?;
    if !pairings.matches.is_empty()
        && file.teams_are_older_records
        && file.tournament.kind.is_empty()
    {
        eprintln!(
            "note: round {} is read as a team event's (its 013 teams meet team against team, \
             and the file has no 092 type of tournament); if they are the clubs of an \
             individual event, add the line `092 Individual: Swiss-System`",
            args.round
        );
    }
    let boards = match (&args.boards, &args.board_map) {
        (Some(range), _) => Some(boards_in_range(range, &pairings)?),
        (None, Some(path)) => Some(boards_from_map(path, &pairings)?),
        (None, None) if args.dry_run => None,
        (None, None) => anyhow::bail!(
            "say which physical board each of the round's {} tables is on: --boards \
             hall-1..hall-{} or --board-map FILE",
            pairings.table_count(),
            pairings.table_count()
        ),
    };
    // Read before a dry run too: a dry run that passes must not be refused for real.
    let time_control = time_control(&args, &file)?;
    if args.dry_run {
        let mut shown = serde_json::to_value(dry_run(&args, &file, &pairings, boards.as_deref()))?;
        shown["time_control"] = boardcast_game::time_control_tag(&time_control).into();
        println!("{}", serde_json::to_string_pretty(&shown)?);
        return Ok(());
    }
    let boards = boards.unwrap_or_default();
    let date = args
        .date
        .clone()
        .or_else(|| {
            let index = usize::try_from(args.round).ok()?.checked_sub(1)?;
            file.tournament
                .round_dates
                .get(index)
                .copied()
                .flatten()
                .map(|d| d.pgn())
        })
        .or_else(|| file.tournament.start.map(|d| d.pgn()))
        .unwrap_or_default();
    // Team names only in a team event: an individual open's `013` records are clubs, and a
    // team tag would make viewers (lichess) show the round as team matches.
    let team_of: BTreeMap<u32, &str> = file
        .teams
        .iter()
        .filter(|_| !pairings.matches.is_empty())
        .flat_map(|t| t.players.iter().map(move |&p| (p, t.name.as_str())))
        .collect();
    let player = |rank: u32| -> PairedPlayer {
        let p = &file.players[&rank];
        PairedPlayer {
            name: p.name.clone(),
            rating: p.rating.unwrap_or(0),
            title: p.title.map(|t| t.as_str().to_owned()).unwrap_or_default(),
            fide_id: p.fide_id.clone(),
            federation: p.federation.clone(),
            team: team_of
                .get(&rank)
                .map(|t| (*t).to_owned())
                .unwrap_or_default(),
        }
    };
    let request = PairRoundRequest {
        tournament_id: args.tournament.clone(),
        round: args.round,
        time_control: Some(time_control),
        edition: args.edition.clone(),
        event_name: args
            .event
            .clone()
            .unwrap_or_else(|| file.tournament.name.clone()),
        site: args
            .site
            .clone()
            .unwrap_or_else(|| file.tournament.city.clone()),
        date,
        pairings: pairings
            .tables
            .iter()
            .zip(&boards)
            .map(|(table, board_id)| Pairing {
                board_number: table.table,
                board_id: board_id.clone(),
                white: Some(player(table.white)),
                black: Some(player(table.black)),
                start_fen: String::new(),
            })
            .collect(),
        replace_unfinished: args.replace_unfinished,
        request_id: String::new(),
        revise: args.revise,
    };
    // The same command again (its answer lost, or run twice) is the same request: answered with
    // the games it set up, not refused as another request for their boards. A revision is a new
    // request each time: the same revision again changes nothing anyway, and one made before a
    // later revision must set the games up again (a board back from repair).
    let request = PairRoundRequest {
        request_id: if args.revise {
            boardcast_kit::client::new_request_id()
        } else {
            request_id_of(&request)
        },
        ..request
    };
    let mut client = args.game_service.connect().await?;
    let set_up = client
        .pair_round(request)
        .await
        .map_err(|status| anyhow::anyhow!("the game service refused: {}", status.message()))?
        .into_inner();
    let created = set_up.games.iter().filter(|g| g.created).count();
    let revised: Vec<(&str, &str)> = set_up
        .games
        .iter()
        .zip(&boards)
        .filter(|(g, _)| g.revised)
        .map(|(g, board)| (g.game_id.as_str(), board.as_str()))
        .collect();
    let unchanged = set_up.games.len() - created - revised.len();
    println!(
        "round {} of {}: {} games set up{}{}, on {}",
        args.round,
        args.tournament,
        set_up.games.len(),
        if revised.is_empty() {
            String::new()
        } else {
            format!(" ({} of them set up again)", revised.len())
        },
        if unchanged == set_up.games.len() {
            " (all already were, as asked: nothing changed)".to_owned()
        } else {
            String::new()
        },
        match (&args.boards, &args.board_map) {
            (Some(range), _) => range.clone(),
            (None, Some(map)) => format!("the boards of {}", map.display()),
            (None, None) => "-".to_owned(),
        },
    );
    for (game_id, board) in &revised {
        println!("set up again: {game_id} on {board}");
    }
    if args.revise {
        let tables: std::collections::HashSet<u32> =
            pairings.tables.iter().map(|t| t.table).collect();
        let games = client
            .list_games(ListGamesRequest {
                tournament_id: args.tournament.clone(),
                round: args.round,
            })
            .await
            .map_err(|status| {
                anyhow::anyhow!("listing the round's games to compare: {}", status.message())
            })?
            .into_inner()
            .games;
        for game in games {
            let Some(info) = game
                .info
                .as_ref()
                .filter(|i| !tables.contains(&i.board_number))
            else {
                continue;
            };
            println!(
                "warning: game {} (table {}, board {}) is set up but the file no longer pairs \
                 it; record its result or a note if it will not be played",
                game.game_id, info.board_number, info.board_id
            );
        }
    }
    let name = |rank: u32| {
        file.players
            .get(&rank)
            .map_or_else(|| rank.to_string(), |p| p.name.clone())
    };
    for bye in &pairings.byes {
        let kind = match bye.kind {
            boardcast_trf::ByeKind::HalfPoint => "half-point bye",
            boardcast_trf::ByeKind::FullPoint => "full-point bye",
            boardcast_trf::ByeKind::PairingAllocated => "bye allocated by the pairing",
            boardcast_trf::ByeKind::ZeroPoint => "zero-point bye (absent)",
        };
        println!("{kind}: {}", name(bye.player));
    }
    if !pairings.not_paired.is_empty() {
        let names: Vec<String> = pairings.not_paired.iter().map(|&r| name(r)).collect();
        println!(
            "without a game or a bye this round (withdrawn, or not paired): {}",
            names.join(", ")
        );
    }
    for forfeit in &pairings.forfeits {
        println!(
            "not set up, decided by forfeit: table {} ({} – {}), its board stays empty",
            forfeit.table,
            name(forfeit.white),
            name(forfeit.black)
        );
    }
    Ok(())
}

/// The round as `--dry-run` prints it.
#[derive(serde::Serialize)]
struct DryRun<'a> {
    tournament: &'a str,
    round: u32,
    event: &'a str,
    board_order: &'static str,
    boards: Vec<BoardOut>,
    byes: Vec<ByeOut>,
    forfeits: Vec<ForfeitOut>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    matches: &'a [boardcast_trf::TeamMatch],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    team_byes: &'a [boardcast_trf::TeamBye],
    not_paired: Vec<PlayerOut>,
}

#[derive(serde::Serialize)]
struct ByeOut {
    player: PlayerOut,
    kind: boardcast_trf::ByeKind,
}

#[derive(serde::Serialize)]
struct ForfeitOut {
    /// The table the pairing program gave it; its board stays empty.
    board: u32,
    white: PlayerOut,
    black: PlayerOut,
    /// As the file gives them: `+` won, `-` lost by forfeit.
    white_result: char,
    black_result: char,
}

fn dry_run<'a>(
    args: &'a PairArgs,
    file: &'a TrfFile,
    pairings: &'a RoundPairings,
    boards: Option<&[String]>,
) -> DryRun<'a> {
    let player = |rank: u32| {
        let p = &file.players[&rank];
        PlayerOut {
            name: p.name.clone(),
            title: p.title.map(|t| t.as_str()),
            rating: p.rating,
            fide_id: Some(p.fide_id.clone()).filter(|id| !id.is_empty()),
            federation: Some(p.federation.clone()).filter(|f| !f.is_empty()),
            rank,
        }
    };
    DryRun {
        tournament: &args.tournament,
        round: args.round,
        event: &file.tournament.name,
        board_order: if pairings.matches.is_empty() {
            "by the score before the round of the pair's higher player, then the pair's total, \
             then the higher player's starting rank (as the FIDE Swiss rules have pairings \
             published)"
        } else {
            "by team match, each match's boards in the teams' order for the round"
        },
        boards: pairings
            .tables
            .iter()
            .enumerate()
            .map(|(index, table)| BoardOut {
                board: table.table,
                board_id: boards.and_then(|b| b.get(index).cloned()),
                white: player(table.white),
                black: player(table.black),
            })
            .collect(),
        byes: pairings
            .byes
            .iter()
            .map(|b| ByeOut {
                player: player(b.player),
                kind: b.kind,
            })
            .collect(),
        forfeits: pairings
            .forfeits
            .iter()
            .map(|f| ForfeitOut {
                board: f.table,
                white: player(f.white),
                black: player(f.black),
                white_result: f.white_outcome.code(),
                black_result: f.black_outcome.code(),
            })
            .collect(),
        matches: &pairings.matches,
        team_byes: &pairings.team_byes,
        not_paired: pairings.not_paired.iter().map(|&r| player(r)).collect(),
    }
}

/// A Tournament Report File read, its notes (what was skipped) said on stderr.
pub(crate) fn read_trf(path: &Path) -> anyhow::Result<TrfFile> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let file = TrfFile::parse_bytes(&bytes).with_context(|| {
        format!(
            "{} is not a Tournament Report File this reads",
            path.display()
        )
    })?;
    for note in &file.notes {
        eprintln!(
            "note: {}, line {}: {}",
            path.display(),
            note.line,
            note.text
        );
    }
    Ok(file)
}

/// `hall-1..hall-60`: the boards, one per table in order (a forfeit's board left empty), for
/// the round's games to be played.
fn boards_in_range(range: &str, pairings: &RoundPairings) -> anyhow::Result<Vec<String>> {
    let tables = usize::try_from(pairings.table_count()).unwrap_or(usize::MAX);
    let bad = || anyhow::anyhow!("--boards {range:?} is not a range such as hall-1..hall-60");
    let (first, last) = range.split_once("..").ok_or_else(bad)?;
    let split = |board: &str| -> Option<(String, u32)> {
        let digits = board.len() - board.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        let (prefix, number) = board.split_at(board.len() - digits);
        Some((prefix.to_owned(), number.parse().ok()?))
    };
    let ((prefix, from), (last_prefix, to)) =
        (split(first).ok_or_else(bad)?, split(last).ok_or_else(bad)?);
    if prefix != last_prefix || to < from {
        return Err(bad());
    }
    let available = usize::try_from(u64::from(to) - u64::from(from) + 1).unwrap_or(usize::MAX);
    if available < tables {
        anyhow::bail!(
            "the round has {tables} tables (a forfeit's included) and {range} only {available} \
             boards"
        );
    }
    // hall-01..hall-60 keeps its zeros: hall-01, hall-02, …
    let width = first.len() - prefix.len();
    let boards: Vec<String> = (from..=to)
        .take(tables)
        .map(|n| format!("{prefix}{n:0width$}"))
        .collect();
    Ok(pairings
        .tables
        .iter()
        .filter_map(|t| {
            boards
                .get(usize::try_from(t.table).ok()?.checked_sub(1)?)
                .cloned()
        })
        .collect())
}

/// A map file: `TABLE BOARD` per line; every table of the round must be on it, each board once.
fn boards_from_map(path: &Path, pairings: &RoundPairings) -> anyhow::Result<Vec<String>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut by_table = BTreeMap::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        let mut fields = line
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|f| !f.is_empty());
        let (Some(table), Some(board), None) = (fields.next(), fields.next(), fields.next()) else {
            anyhow::bail!(
                "{}, line {}: expected `TABLE BOARD`, got {line:?}",
                path.display(),
                index + 1
            );
        };
        let table: u32 = table.parse().with_context(|| {
            format!(
                "{}, line {}: table {table:?} is not a number",
                path.display(),
                index + 1
            )
        })?;
        if by_table.insert(table, board.to_owned()).is_some() {
            anyhow::bail!(
                "{}, line {}: table {table} is mapped twice",
                path.display(),
                index + 1
            );
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    for board in by_table.values() {
        if !seen.insert(board) {
            anyhow::bail!("{}: board {board} is given to two tables", path.display());
        }
    }
    let missing: Vec<String> = pairings
        .tables
        .iter()
        .filter(|t| !by_table.contains_key(&t.table))
        .map(|t| t.table.to_string())
        .collect();
    if !missing.is_empty() {
        anyhow::bail!(
            "{} maps no board to table(s) {}",
            path.display(),
            missing.join(", ")
        );
    }
    Ok(pairings
        .tables
        .iter()
        .map(|t| by_table[&t.table].clone())
        .collect())
}

fn time_control(
    args: &PairArgs,
    file: &TrfFile,
) -> anyhow::Result<boardcast_schema::game::v1::TimeControl> {
    use boardcast_game::{parse_time_control, read_time_control_tag};
    if let Some(given) = &args.time_control {
        return parse_time_control(given)
            .map_err(|e| anyhow::anyhow!("--time-control {given:?}: {e}"));
    }
    let encoded = &file.tournament.time_control;
    if let Ok(tc) = parse_time_control(encoded) {
        return Ok(tc);
    }
    let words = &file.tournament.time_control_text;
    if let Ok((tc, _)) = read_time_control_tag(words) {
        return Ok(tc);
    }
    anyhow::bail!(
        "the file's time control ({}) is not one this reads: give --time-control, as in PGN \
         (40/5400+30:1800+30)",
        if encoded.is_empty() {
            format!("122: {words:?}")
        } else {
            format!("222: {encoded:?}")
        }
    )
}

/// A request's id made from what it asks (`PairRound` without an id): the same round set up
/// the same way is the same request.
fn request_id_of(request: &PairRoundRequest) -> String {
    use prost::Message as _;
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(request.encode_to_vec());
    format!(
        "pair/{}/r{}/{}",
        request.tournament_id,
        request.round,
        hex::encode(&digest[..12])
    )
}

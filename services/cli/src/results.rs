//! `boardcast results`: the rounds' results from the game logs, written into the pairing
//! program's Tournament Report File so that it pairs the next round from it.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Context as _;
use boardcast_schema::game::v1::{GameResult, GameState, ListGamesRequest, Termination};
use boardcast_trf::{GameOutcome, Outcome, TrfFile};
use clap::Args;

#[derive(Args, Debug)]
pub struct ResultsArgs {
    /// The tournament's id in boardcast.
    #[arg(long)]
    tournament: String,
    /// The pairing program's file the rounds were set up from (`boardcast pair --trf`).
    #[arg(long)]
    trf_in: PathBuf,
    /// Where to write the file with the results (the pairing program imports it).
    #[arg(long)]
    trf_out: PathBuf,
    /// Only these rounds (repeatable); without it, every round of the tournament.
    #[arg(long = "round")]
    rounds: Vec<u32>,
    /// Game service to read the games from.
    #[arg(
        long,
        env = "BOARDCAST_GAME_SERVICE",
        default_value = "http://127.0.0.1:50051"
    )]
    game_service: String,
    /// File holding an API token of the tournament; without it, the token in BOARDCAST_TOKEN.
    #[arg(long, env = "BOARDCAST_TOKEN_FILE")]
    token_file: Option<PathBuf>,
}

pub async fn run(args: ResultsArgs) -> anyhow::Result<()> {
    let text = std::fs::read(&args.trf_in)
        .with_context(|| format!("reading {}", args.trf_in.display()))?;
    // Written back as read: the pairing program's own bytes, Latin-1 included.
    let original: String = match String::from_utf8(text.clone()) {
        Ok(text) => text,
        Err(_) => text.iter().map(|&b| char::from(b)).collect(),
    };
    let file = TrfFile::parse(&original).with_context(|| {
        format!(
            "{} is not a Tournament Report File this reads",
            args.trf_in.display()
        )
    })?;
    let token = boardcast_kit::client::token_from(args.token_file.as_deref())?;
    let mut client = boardcast_kit::client::game_client(&args.game_service, token.as_deref())
        .await
        .with_context(|| format!("connecting to the game service at {}", args.game_service))?;
    let games = client
        .list_games(ListGamesRequest {
            tournament_id: args.tournament.clone(),
            round: 0,
        })
        .await
        .map_err(|status| anyhow::anyhow!("the game service refused: {}", status.message()))?
        .into_inner()
        .games;
    // Players are found by FIDE id, else by name, as `boardcast pair` set them up.
    let mut rank_of: BTreeMap<String, u32> = BTreeMap::new();
    for player in file.players.values() {
        if !player.fide_id.is_empty() {
            rank_of.insert(format!("fide:{}", player.fide_id), player.rank);
        }
        rank_of
            .entry(format!("name:{}", player.name))
            .or_insert(player.rank);
    }
    let rank = |player: Option<&boardcast_schema::game::v1::Player>| {
        let player = player?;
        (!player.fide_id.is_empty())
            .then(|| rank_of.get(&format!("fide:{}", player.fide_id)))
            .flatten()
            .or_else(|| rank_of.get(&format!("name:{}", player.name)))
            .copied()
    };
    let mut results = Vec::new();
    let mut without_result = Vec::new();
    let mut not_in_file = Vec::new();
    let mut games: Vec<&GameState> = games
        .iter()
        .filter(|g| {
            g.info
                .as_ref()
                .is_some_and(|i| args.rounds.is_empty() || args.rounds.contains(&i.round))
        })
        .collect();
    games.sort_by_key(|g| g.info.as_ref().map(|i| (i.round, i.board_number)));
    for game in games {
        let Some(info) = &game.info else { continue };
        let place = format!(
            "round {} board {} ({})",
            info.round, info.board_number, game.game_id
        );
        let (Some(white), Some(black)) = (rank(info.white.as_ref()), rank(info.black.as_ref()))
        else {
            not_in_file.push(format!("{place}: its players are not the file's"));
            continue;
        };
        let Some((white_outcome, black_outcome)) = outcomes(game) else {
            without_result.push(place);
            continue;
        };
        results.push(GameOutcome {
            round: info.round,
            white,
            black,
            white_outcome,
            black_outcome,
        });
    }
    let written = file
        .with_results(&original, &results)
        .with_context(|| format!("writing the results into {}", args.trf_in.display()))?;
    let bytes: Vec<u8> = if std::str::from_utf8(&text).is_ok() {
        written.into_bytes()
    } else {
        written
            .chars()
            .map(|c| u8::try_from(u32::from(c)).unwrap_or(b'?'))
            .collect()
    };
    std::fs::write(&args.trf_out, bytes)
        .with_context(|| format!("writing {}", args.trf_out.display()))?;
    println!(
        "{} results written to {}",
        results.len(),
        args.trf_out.display()
    );
    for place in &without_result {
        eprintln!("no result yet, left blank: {place}");
    }
    for problem in &not_in_file {
        eprintln!("not written: {problem}");
    }
    Ok(())
}

/// White's and Black's results as the log says: a decisive result an arbiter gave before any
/// move was made is a forfeit (`+`/`-`); a game of less than one move each is not rated
/// (`W`, `D`, `L`).
fn outcomes(game: &GameState) -> Option<(Outcome, Outcome)> {
    let result = GameResult::try_from(game.result).unwrap_or(GameResult::Unspecified);
    let forfeit = game.moves.is_empty()
        && game.termination == Termination::Arbiter as i32
        && result != GameResult::Draw;
    let unrated = game.moves.len() < 2;
    Some(match result {
        GameResult::Unspecified => return None,
        GameResult::WhiteWins if forfeit => (Outcome::ForfeitWin, Outcome::ForfeitLoss),
        GameResult::BlackWins if forfeit => (Outcome::ForfeitLoss, Outcome::ForfeitWin),
        GameResult::WhiteWins if unrated => (Outcome::UnratedWin, Outcome::UnratedLoss),
        GameResult::BlackWins if unrated => (Outcome::UnratedLoss, Outcome::UnratedWin),
        GameResult::Draw if unrated => (Outcome::UnratedDraw, Outcome::UnratedDraw),
        GameResult::WhiteWins => (Outcome::Win, Outcome::Loss),
        GameResult::BlackWins => (Outcome::Loss, Outcome::Win),
        GameResult::Draw => (Outcome::Draw, Outcome::Draw),
    })
}

//! `boardcast results`: the rounds' results from the game logs, written into the pairing
//! program's Tournament Report File so that it pairs the next round from it (or, without that
//! file, a TRF made from the games alone).

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Context as _;
use boardcast_schema::game::v1::{
    GameResult, GameState, ListGamesRequest, Player as GamePlayer, Termination,
};
use boardcast_trf::{Colour, Date, GameOutcome, Outcome, Player, RoundEntry, TrfFile};
use clap::Args;

#[derive(Args, Debug)]
pub struct ResultsArgs {
    /// The tournament's id in boardcast.
    #[arg(long)]
    tournament: String,
    /// The pairing program's file the rounds were set up from (`boardcast pair --trf`): written
    /// back with the results, everything else as the program wrote it. Without it, a TRF is
    /// made from the games alone (starting ranks by rating; players who never played are not
    /// in it).
    #[arg(long)]
    trf_in: Option<PathBuf>,
    /// Where to write the file with the results (the pairing program imports it).
    #[arg(long)]
    trf_out: PathBuf,
    /// Only these rounds (repeatable); without it, every round of the tournament.
    #[arg(long = "round")]
    rounds: Vec<u32>,
    /// What to do where the file already has a result that differs from the game log's (one
    /// corrected in the pairing program, or entered there from the scoresheet): `refuse` lists
    /// them and writes nothing; `keep-file` keeps the file's and writes the others; `take-log`
    /// writes the game log's over them.
    #[arg(long, value_enum, default_value_t = WhenTheFileDiffers::Refuse)]
    differing: WhenTheFileDiffers,
    #[command(flatten)]
    game_service: crate::game_service::GameServiceArgs,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum WhenTheFileDiffers {
    Refuse,
    KeepFile,
    TakeLog,
}

/// How a player of the games is found in a file: by FIDE id, else by name.
fn identity(name: &str, fide_id: &str) -> String {
    if fide_id.is_empty() {
        format!("name:{name}")
    } else {
        format!("fide:{fide_id}")
    }
}

pub async fn run(args: ResultsArgs) -> anyhow::Result<()> {
    let read = match &args.trf_in {
        Some(path) => {
            let bytes =
                std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
            // Written back as read: the pairing program's own bytes, Windows-1252 included.
            let latin1 = std::str::from_utf8(&bytes).is_err();
            let text: String = match String::from_utf8(bytes) {
                Ok(text) => text,
                Err(e) => boardcast_trf::decode_windows_1252(e.as_bytes()),
            };
            let file = TrfFile::parse(&text).with_context(|| {
                format!(
                    "{} is not a Tournament Report File this reads",
                    path.display()
                )
            })?;
            Some((file, text, latin1))
        }
        None => None,
    };
    let mut client = args.game_service.connect().await?;
    let all = client
        .list_games(ListGamesRequest {
            tournament_id: args.tournament.clone(),
            round: 0,
        })
        .await
        .map_err(|status| anyhow::anyhow!("the game service refused: {}", status.message()))?
        .into_inner()
        .games;
    // A TRF has room for rounds 1 to 999.
    let mut games: Vec<&GameState> = all
        .iter()
        .filter(|g| {
            g.info.as_ref().is_some_and(|i| {
                (1..=999).contains(&i.round)
                    && (args.rounds.is_empty() || args.rounds.contains(&i.round))
            })
        })
        .collect();
    games.sort_by_key(|g| g.info.as_ref().map(|i| (i.round, i.board_number)));
    anyhow::ensure!(
        !games.is_empty(),
        "the game service has no games of tournament {:?}{}",
        args.tournament,
        if args.rounds.is_empty() {
            ""
        } else {
            " in those rounds"
        }
    );
    let (file, original, latin1) = match read {
        Some(read) => read,
        None => {
            let file = file_from_games(&games);
            let text = file.to_text();
            (file, text, false)
        }
    };
    let mut rank_of: BTreeMap<String, u32> = BTreeMap::new();
    // Names two players of the file share find neither: their games are reported, not credited
    // to the wrong one.
    let mut shared_names = std::collections::BTreeSet::new();
    for player in file.players.values() {
        if !player.fide_id.is_empty() {
            rank_of.insert(identity("", &player.fide_id), player.rank);
        }
        if rank_of
            .insert(identity(&player.name, ""), player.rank)
            .is_some()
        {
            shared_names.insert(identity(&player.name, ""));
        }
    }
    for name in &shared_names {
        rank_of.remove(name);
    }
    let rank = |player: Option<&GamePlayer>| {
        let player = player?;
        rank_of
            .get(&identity(&player.name, &player.fide_id))
            .or_else(|| rank_of.get(&identity(&player.name, "")))
            .copied()
    };
    let mut results = Vec::new();
    // Where each result is, for the messages.
    let mut place_of = BTreeMap::new();
    let mut without_result = Vec::new();
    let mut not_in_file = Vec::new();
    // Results the board or the clock gave that no arbiter's result followed.
    let mut by_the_board = Vec::new();
    for game in &games {
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
        if let Some(short) = &game.log_not_followed {
            // Its state stops short of its log: a result read from it could be stale.
            not_in_file.push(format!(
                "{place}: the game service cannot read its log to the end ({}); mend it \
                 (boardcast fork) and run this again",
                short.reason
            ));
            continue;
        }
        let Some((white_outcome, black_outcome)) = outcomes(game) else {
            let in_file = file
                .players
                .get(&white)
                .and_then(|p| p.round(info.round))
                .and_then(|e| e.outcome);
            without_result.push(match in_file {
                Some(outcome) => format!("{place}, the file's result ({}) kept", outcome.code()),
                None => format!("{place}, left blank"),
            });
            continue;
        };
        if let Some(how) = ended_without_an_arbiter(game) {
            by_the_board.push(format!("{place}: {}, {how}", result_token(game)));
        }
        place_of.insert((info.round, white), place);
        results.push(GameOutcome {
            round: info.round,
            white,
            black,
            white_outcome,
            black_outcome,
        });
    }
    let differing = file.differing_results(&results);
    let describe = |held: &GameOutcome| {
        let logged = results
            .iter()
            .find(|r| (r.round, r.white) == (held.round, held.white))
            .map_or_else(String::new, GameOutcome::codes);
        format!(
            "{}: the file has {}, the game log {logged}",
            place_of
                .get(&(held.round, held.white))
                .map_or("a game", String::as_str),
            held.codes()
        )
    };
    match args.differing {
        WhenTheFileDiffers::Refuse if !differing.is_empty() => {
            let list: Vec<String> = differing.iter().map(describe).collect();
            anyhow::bail!(
                "the file already has other results for {} game(s), nothing written:\n  {}\n\
                 check them; then --differing keep-file keeps the file's, --differing take-log \
                 writes the game log's",
                differing.len(),
                list.join("\n  ")
            );
        }
        WhenTheFileDiffers::KeepFile => {
            for held in &differing {
                eprintln!("kept the file's result: {}", describe(held));
            }
            results.retain(|r| {
                !differing
                    .iter()
                    .any(|held| (held.round, held.white) == (r.round, r.white))
            });
        }
        WhenTheFileDiffers::TakeLog => {
            for held in &differing {
                eprintln!("replaced by the game log's result: {}", describe(held));
            }
        }
        WhenTheFileDiffers::Refuse => {}
    }
    let written = file
        .with_results(&original, &results)
        .context("writing the results into the file")?;
    let bytes: Vec<u8> = if latin1 {
        boardcast_trf::encode_windows_1252(&written)
    } else {
        written.into_bytes()
    };
    std::fs::write(&args.trf_out, bytes)
        .with_context(|| format!("writing {}", args.trf_out.display()))?;
    println!(
        "{} results written to {}",
        results.len(),
        args.trf_out.display()
    );
    for place in &without_result {
        eprintln!("no result in the game log yet: {place}");
    }
    if !by_the_board.is_empty() {
        eprintln!(
            "written, but ended by the board or the clock with no arbiter's result since: check \
             them against the signed scoresheets (Article 8.7) before pairing the next round:"
        );
        for place in &by_the_board {
            eprintln!("  {place}");
        }
    }
    for problem in &not_in_file {
        eprintln!("not written: {problem}");
    }
    Ok(())
}

/// How a game ended when the board or the clock ended it (a mate or the result signal the
/// board saw, a flag, a draw by rule) and no arbiter declared a result since; `None` otherwise.
fn ended_without_an_arbiter(game: &GameState) -> Option<&'static str> {
    use boardcast_schema::game::v1::Termination;
    match game.termination() {
        Termination::Arbiter
        | Termination::Resignation
        | Termination::Agreement
        | Termination::DrawClaim
        | Termination::Unspecified => None,
        other => boardcast_game::wording::termination_name(other),
    }
}

/// The game's result as PGN writes it.
fn result_token(game: &GameState) -> &'static str {
    boardcast_game::terms::result_token(game.result())
}

/// A TRF of the games alone: their players, starting ranks by rating (then name), each game
/// in its round with its colours (results are written afterwards, as into any file).
fn file_from_games(games: &[&GameState]) -> TrfFile {
    let mut file = TrfFile::default();
    let infos: Vec<_> = games.iter().filter_map(|g| g.info.as_ref()).collect();
    if let Some(first) = infos.first() {
        file.tournament.name.clone_from(&first.event_name);
        file.tournament.city.clone_from(&first.site);
    }
    let dates: Vec<Date> = infos.iter().filter_map(|i| Date::read(&i.date)).collect();
    file.tournament.start = dates.iter().min().copied();
    file.tournament.end = dates.iter().max().copied();
    file.tournament.rounds = infos.iter().map(|i| i.round).max();
    let mut people: BTreeMap<String, &GamePlayer> = BTreeMap::new();
    for info in &infos {
        for player in [&info.white, &info.black].into_iter().flatten() {
            people
                .entry(identity(&player.name, &player.fide_id))
                .or_insert(player);
        }
    }
    let mut ordered: Vec<(&String, &&GamePlayer)> = people.iter().collect();
    ordered.sort_by(|(_, a), (_, b)| b.rating.cmp(&a.rating).then_with(|| a.name.cmp(&b.name)));
    let mut rank_of = BTreeMap::new();
    for (index, (id, player)) in ordered.into_iter().enumerate() {
        let rank = u32::try_from(index + 1).unwrap_or(u32::MAX);
        rank_of.insert(id.clone(), rank);
        file.players.insert(
            rank,
            Player {
                rank,
                sex: None,
                title: boardcast_trf::Title::read(&player.title),
                name: player.name.clone(),
                rating: Some(player.rating).filter(|&r| r > 0),
                federation: player.federation.clone(),
                fide_id: player.fide_id.clone(),
                birth: String::new(),
                rounds: Vec::new(),
                line: 0,
            },
        );
    }
    for info in &infos {
        let (Some(white), Some(black)) = (&info.white, &info.black) else {
            continue;
        };
        let ranks = [white, black].map(|p| rank_of[&identity(&p.name, &p.fide_id)]);
        for (side, colour) in [(0, Colour::White), (1, Colour::Black)] {
            let Some(player) = file.players.get_mut(&ranks[side]) else {
                continue;
            };
            let index = usize::try_from(info.round.max(1) - 1).unwrap_or(0);
            if player.rounds.len() <= index {
                player.rounds.resize(index + 1, RoundEntry::default());
            }
            player.rounds[index] = RoundEntry {
                opponent: Some(ranks[1 - side]),
                colour: Some(colour),
                outcome: None,
                column: 0,
            };
        }
    }
    file
}

/// White's and Black's results as the log says: a decisive result an arbiter gave before the
/// loser made a move is a forfeit (`+`/`-`): the loser did not come (Article 6.7), even when
/// White had played a first move and pressed the clock, as a DGT board's White often has by
/// then; the pairing program must not count it as played. A game of less than one move each
/// is not rated (`W`, `D`, `L`).
fn outcomes(game: &GameState) -> Option<(Outcome, Outcome)> {
    let result = GameResult::try_from(game.result).unwrap_or(GameResult::Unspecified);
    let by_the_arbiter = game.termination == Termination::Arbiter as i32;
    let (white_moved, black_moved) = (!game.moves.is_empty(), game.moves.len() >= 2);
    let unrated = game.moves.len() < 2;
    Some(match result {
        GameResult::Unspecified => return None,
        GameResult::WhiteWins if by_the_arbiter && !black_moved => {
            (Outcome::ForfeitWin, Outcome::ForfeitLoss)
        }
        GameResult::BlackWins if by_the_arbiter && !white_moved => {
            (Outcome::ForfeitLoss, Outcome::ForfeitWin)
        }
        // Neither came (a double forfeit), or both were penalised after play.
        GameResult::BothLose if by_the_arbiter && !black_moved => {
            (Outcome::ForfeitLoss, Outcome::ForfeitLoss)
        }
        GameResult::BothLose if unrated => (Outcome::UnratedLoss, Outcome::UnratedLoss),
        GameResult::BothLose => (Outcome::Loss, Outcome::Loss),
        // One lost for a breach of the rules; the other, who could not have won, scores a draw.
        GameResult::WhiteHalfBlackZero if unrated => (Outcome::UnratedDraw, Outcome::UnratedLoss),
        GameResult::WhiteZeroBlackHalf if unrated => (Outcome::UnratedLoss, Outcome::UnratedDraw),
        GameResult::WhiteHalfBlackZero => (Outcome::Draw, Outcome::Loss),
        GameResult::WhiteZeroBlackHalf => (Outcome::Loss, Outcome::Draw),
        GameResult::WhiteWins if unrated => (Outcome::UnratedWin, Outcome::UnratedLoss),
        GameResult::BlackWins if unrated => (Outcome::UnratedLoss, Outcome::UnratedWin),
        GameResult::Draw if unrated => (Outcome::UnratedDraw, Outcome::UnratedDraw),
        GameResult::WhiteWins => (Outcome::Win, Outcome::Loss),
        GameResult::BlackWins => (Outcome::Loss, Outcome::Win),
        GameResult::Draw => (Outcome::Draw, Outcome::Draw),
    })
}

#[cfg(test)]
mod tests {
    use boardcast_schema::game::v1::MoveCompleted;

    use super::*;

    fn ended(moves: usize, result: GameResult, termination: Termination) -> GameState {
        GameState {
            moves: vec![MoveCompleted::default(); moves],
            result: result as i32,
            termination: termination as i32,
            ..GameState::default()
        }
    }

    #[test]
    fn a_loss_declared_before_the_loser_moved_is_a_forfeit() {
        use GameResult::{BlackWins, BothLose, WhiteHalfBlackZero, WhiteWins, WhiteZeroBlackHalf};
        use Outcome::*;
        use Termination::{Arbiter, Resignation};
        let cases = [
            // Black never came: White had played and pressed, or not.
            (0, WhiteWins, Arbiter, (ForfeitWin, ForfeitLoss)),
            (1, WhiteWins, Arbiter, (ForfeitWin, ForfeitLoss)),
            (0, BlackWins, Arbiter, (ForfeitLoss, ForfeitWin)),
            // White had moved: a game, too short to be rated.
            (1, BlackWins, Arbiter, (UnratedLoss, UnratedWin)),
            (1, WhiteWins, Resignation, (UnratedWin, UnratedLoss)),
            // Both had moved: a game.
            (2, WhiteWins, Arbiter, (Win, Loss)),
            // Neither came (a DGT board's White may have pressed a first move): a double
            // forfeit. Both lose a game played too (penalties).
            (0, BothLose, Arbiter, (ForfeitLoss, ForfeitLoss)),
            (1, BothLose, Arbiter, (ForfeitLoss, ForfeitLoss)),
            (30, BothLose, Arbiter, (Loss, Loss)),
            // One lost for a breach against an opponent who could not win: a draw for them.
            (30, WhiteHalfBlackZero, Arbiter, (Draw, Loss)),
            (40, WhiteZeroBlackHalf, Arbiter, (Loss, Draw)),
            (1, WhiteZeroBlackHalf, Arbiter, (UnratedLoss, UnratedDraw)),
        ];
        for (moves, result, termination, expected) in cases {
            assert_eq!(
                outcomes(&ended(moves, result, termination)),
                Some(expected),
                "{moves} moves, {result:?} by {termination:?}"
            );
        }
    }
}

//! `boardcast simulate`: simulated boards playing the games of a PGN file.

use std::{path::PathBuf, str::FromStr, time::Duration};

use anyhow::{Context as _, bail};
use async_nats::jetstream::{self, message::PublishMessage};
use boardcast_game::device::ClockDisplay;
use boardcast_game::{
    device::{Observation, SourceKind},
    events::{CreateGameRequest, GameStarted, Player},
    parse_time_control, read_time_control_tag,
};
use boardcast_kit::nats::{observation_message_id, observation_subject};
use boardcast_rules::pgn::{PgnGame, ScoreStop, StopReason, read_pgn};
use boardcast_sim::{ClockSetup, ScriptOptions, script};
use futures::TryFutureExt as _;
use prost::Message as _;
use tokio::time::Instant;

mod dgt_out;
mod incidents;

pub use dgt_out::{DgtOutArgs, write_dgt_streams};
pub use incidents::{BoardIncident, IncidentArgs, incident_record};

/// How fast simulated time runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Speed {
    Factor(f64),
    Max,
}

impl FromStr for Speed {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "max" {
            return Ok(Speed::Max);
        }
        match s.parse::<f64>() {
            Ok(f) if f.is_finite() && f > 0.0 => Ok(Speed::Factor(f)),
            _ => Err(format!(
                "speed must be a positive number (1 = real time, 60 = one minute per second) or \"max\", got {s:?}"
            )),
        }
    }
}

#[derive(clap::Args, Debug, Clone)]
pub struct SimulateArgs {
    /// PGN file with the games to play; board N plays the file's N-th game.
    #[arg(long)]
    pub pgn: PathBuf,
    /// Number of boards.
    #[arg(long, default_value_t = 4)]
    pub boards: usize,
    /// 1 = real time, 60 = a minute of play per second, "max" = as fast as possible.
    #[arg(long, default_value = "1")]
    pub speed: Speed,
    /// NATS server of the running system.
    #[arg(
        long,
        env = "BOARDCAST_NATS_URL",
        default_value = "nats://127.0.0.1:4222"
    )]
    pub nats: String,
    /// Game service on which to set up the boards' games before playing them; "none" if the
    /// games are already set up.
    #[arg(
        long,
        env = "BOARDCAST_GAME_SERVICE",
        default_value = "http://127.0.0.1:50051"
    )]
    pub game_service: String,
    /// File holding the API token to set the games up with (an operator's or chief arbiter's:
    /// `boardcast users token NAME --out FILE`); without it, the token in BOARDCAST_TOKEN.
    #[arg(long, env = "BOARDCAST_TOKEN_FILE")]
    pub token_file: Option<PathBuf>,
    /// Board ids are <prefix>-1, <prefix>-2, ...
    #[arg(long, default_value = "sim")]
    pub board_prefix: String,
    /// Tournament id for the games (default: from the Event tag, e.g. london-chess-classic-2016).
    #[arg(long)]
    pub tournament: Option<String>,
    /// Time control for games whose score has no TimeControl tag, as in PGN (40/7200:3600+30).
    #[arg(long, default_value = "40/7200:3600+30")]
    pub time_control: String,
    /// Laws of Chess edition the games are played under.
    #[arg(long, default_value = "fide-2023")]
    pub edition: String,
    /// Where White's time is on the simulated clocks. The simulated gateways read White's time
    /// on the left, as a gateway left at its default does: with "right" the game service has to
    /// work the sides out from the presses, as in a hall.
    #[arg(long, value_enum, default_value = "left")]
    pub white_clock: SimClockSide,
    /// The arbiter turns each clock round (and sets each player's time on the display now in
    /// front of them) before this move number's White move.
    #[arg(long, value_name = "MOVE")]
    pub clock_turned_at_move: Option<u32>,
    /// Each running clock also reports its time this often between presses (milliseconds of
    /// game time), as a DGT clock does every second; 0: readings at the presses only.
    #[arg(long, value_name = "MS", default_value_t = 0,
          value_parser = clap::value_parser!(u64).range(0..=3_600_000))]
    pub clock_reports_every: u64,
    /// Number each round's boards 1, 2, … in the file's order instead of by the `Round "r.b"`
    /// tags: for a file that merges broadcast groups whose round and board numbers repeat.
    #[arg(long)]
    pub boards_in_file_order: bool,
    #[command(flatten)]
    pub dgt: DgtOutArgs,
}

/// A side of the simulated clock.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SimClockSide {
    #[default]
    Left,
    Right,
}

impl SimulateArgs {
    /// How the simulated clocks stand.
    fn clock_setup(&self) -> ClockSetup {
        ClockSetup {
            white_display: match self.white_clock {
                SimClockSide::Left => ClockDisplay::Left,
                SimClockSide::Right => ClockDisplay::Right,
            },
            gateway_white_display: ClockDisplay::Left,
            turned_before_ply: self
                .clock_turned_at_move
                .map(|n| n.saturating_sub(1).saturating_mul(2).saturating_add(1)),
        }
    }
}

/// One simulated board and the game it plays.
#[derive(Debug, Clone)]
pub struct BoardPlan {
    pub board_id: String,
    pub game: PgnGame,
    pub started: GameStarted,
    pub options: ScriptOptions,
}

/// `London Chess Classic 2016` → `london-chess-classic-2016`.
pub fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    let out = out.trim_end_matches('-').to_owned();
    if out.is_empty() {
        "tournament".to_owned()
    } else {
        out
    }
}

/// The round and board a `Round` tag gives: `9.1` is round 9, board 1; `9` is round 9 with the
/// board not said. Rounds and boards are numbered from 1.
fn round_and_board(tag: Option<&str>) -> (Option<u32>, Option<u32>) {
    let number = |s: &str| s.trim().parse::<u32>().ok().filter(|n| *n > 0);
    match tag.map(|t| t.split_once('.').unwrap_or((t, ""))) {
        Some((round, board)) => match number(round) {
            Some(round) => (Some(round), number(board)),
            None => (None, None),
        },
        None => (None, None),
    }
}

/// The boards' games, with what a user should know about them before they are played.
pub struct Plan {
    pub boards: Vec<BoardPlan>,
    /// Games cut short, numbering changed, tags not understood, parts of the file not read.
    pub notices: Vec<String>,
}

/// Each game's tournament, round and board: from the tags, or (`in_file_order`) each round's
/// boards numbered 1, 2, … in the file's order. Games that would be the same game (the same
/// three numbers) are refused with the list of them and the fix.
fn number_boards(
    games: &[(usize, &PgnGame, String)],
    in_file_order: bool,
    notices: &mut Vec<String>,
) -> anyhow::Result<Vec<(u32, u32)>> {
    use std::collections::{BTreeMap, HashMap};
    let mut next_board: HashMap<(&str, u32), u32> = HashMap::new();
    let mut numbers = Vec::with_capacity(games.len());
    for (number, game, tournament) in games {
        let (round, board) = round_and_board(game.tag("Round"));
        let round = round.unwrap_or(1);
        let next = next_board.entry((tournament.as_str(), round)).or_insert(0);
        *next += 1;
        let board = match (board, in_file_order) {
            (Some(board), false) => board,
            (tagged, _) => {
                if in_file_order && tagged.is_some_and(|b| b != *next) {
                    notices.push(format!(
                        "game {number} ({}): Round \"{}\" played as round {round}, board {next} \
                         (--boards-in-file-order)",
                        game.players(),
                        game.tag("Round").unwrap_or("")
                    ));
                }
                *next
            }
        };
        numbers.push((round, board));
    }
    let mut seen: BTreeMap<(&str, u32, u32), Vec<String>> = BTreeMap::new();
    for ((number, game, tournament), (round, board)) in games.iter().zip(&numbers) {
        seen.entry((tournament.as_str(), *round, *board))
            .or_default()
            .push(format!("game {number} ({})", game.players()));
    }
    let repeated: Vec<String> = seen
        .into_iter()
        .filter(|(_, games)| games.len() > 1)
        .map(|((tournament, round, board), games)| {
            format!(
                "{tournament} round {round} board {board}: {}",
                games.join(", ")
            )
        })
        .collect();
    if !repeated.is_empty() {
        bail!(
            "these games would be the same game (the same tournament, round and board):\n  {}\n\
             The file seems to merge broadcast groups whose Round \"round.board\" tags repeat: run \
             again with --boards-in-file-order (each round's boards numbered 1, 2, … in the \
             file's order), or give each group its own file or --tournament.",
            repeated.join("\n  ")
        );
    }
    Ok(numbers)
}

pub fn plan(args: &SimulateArgs) -> anyhow::Result<Plan> {
    let text = std::fs::read_to_string(&args.pgn)
        .with_context(|| format!("reading {}", args.pgn.display()))?;
    // Every game the file holds, each with its legal moves: one bad game stops nothing.
    let file = read_pgn(&text);
    let mut notices: Vec<String> = file
        .problems
        .iter()
        .map(|problem| format!("{}: {problem}", args.pgn.display()))
        .collect();
    let games: Vec<(usize, PgnGame, Option<ScoreStop>)> = file
        .games
        .into_iter()
        .map(|read| (read.number, read.game.game, read.stopped))
        .collect();
    if args.boards == 0 {
        bail!("--boards must be at least 1");
    }
    if games.len() < args.boards {
        bail!(
            "{} has {} games that can be read, not enough for {} boards{}",
            args.pgn.display(),
            games.len(),
            args.boards,
            if notices.is_empty() {
                String::new()
            } else {
                format!(" ({})", notices.join("; "))
            }
        );
    }
    let default_tc = parse_time_control(&args.time_control).map_err(anyhow::Error::msg)?;
    let specs = &args.dgt.incidents.specs;
    if let Some(spec) = specs.iter().find(|s| s.board > args.boards) {
        bail!(
            "--incidents board={}:{}: there are {} boards",
            spec.board,
            spec.incident,
            args.boards
        );
    }
    if args.dgt.dgt_out.is_some()
        && (!specs.is_empty() || args.dgt.incidents.incident_record.is_some())
    {
        bail!(
            "--incidents and --incident-record are for published observations, not --dgt-out \
             (whose disturbances are --dgt-disturbances)"
        );
    }
    if let Some(tournament) = &args.tournament {
        boardcast_game::validate_tournament_id(tournament)
            .map_err(|e| anyhow::anyhow!("--tournament: {e}"))?;
    }
    let games: Vec<_> = games.into_iter().take(args.boards).collect();
    let tournament_of = |game: &PgnGame| {
        args.tournament
            .clone()
            .unwrap_or_else(|| slug(game.tag("Event").unwrap_or("tournament")))
    };
    let keyed: Vec<(usize, &PgnGame, String)> = games
        .iter()
        .map(|(number, game, _)| (*number, game, tournament_of(game)))
        .collect();
    let numbers = number_boards(&keyed, args.boards_in_file_order, &mut notices)?;
    let boards = games
        .into_iter()
        .zip(numbers)
        .enumerate()
        .map(
            |(i, ((number, mut game, stopped), (round, board_number)))| {
                let board_id = format!("{}-{}", args.board_prefix, i + 1);
                boardcast_game::validate_board_id(&board_id)?;
                if let Some(stop) = &stopped {
                    // The signal is the result: a board plays the kept moves, then puts the kings
                    // in the centre for the result the signal gave.
                    if let StopReason::KingsInCentre { signal } = stop.reason
                        && game.result == "*"
                    {
                        game.result = signal.pgn_result().to_owned();
                    }
                    notices.push(format!(
                        "board {board_id} plays game {number} ({}) as far as it is legal: {stop}",
                        game.players()
                    ));
                }
                let time_control = match game.tag("TimeControl") {
                    Some(tag) => match read_time_control_tag(tag) {
                        Ok((tc, read_as)) => {
                            if let Some(read_as) = read_as {
                                notices.push(format!("board {board_id}: {read_as}"));
                            }
                            tc
                        }
                        Err(why) => {
                            notices.push(format!(
                                "board {board_id}: {why}; played with --time-control {}",
                                args.time_control
                            ));
                            default_tc.clone()
                        }
                    },
                    None => default_tc.clone(),
                };
                // The pairing as the score's tags give it: `White`, `WhiteElo`, `WhiteTitle`,
                // `WhiteFideId`, `WhiteFed`, `WhiteTeam` (and Black's).
                let player = |side: &str| {
                    let tag = |suffix: &str| game.tag(&format!("{side}{suffix}")).unwrap_or("");
                    Player {
                        name: game.tag(side).unwrap_or("?").to_owned(),
                        rating: tag("Elo").parse().unwrap_or(0),
                        title: tag("Title").to_owned(),
                        fide_id: tag("FideId").to_owned(),
                        federation: tag("Fed").to_owned(),
                        team: tag("Team").to_owned(),
                    }
                };
                let first = time_control.periods.first().cloned().unwrap_or_default();
                let later_periods = time_control
                    .periods
                    .iter()
                    .skip(1)
                    .map(|p| boardcast_sim::LaterPeriod {
                        moves: p.moves,
                        base_ms: p.base_ms,
                        increment_ms: p.increment_ms,
                    })
                    .collect();
                let started = GameStarted {
                    tournament_id: tournament_of(&game),
                    round,
                    board_number,
                    board_id: board_id.clone(),
                    white: Some(player("White")),
                    black: Some(player("Black")),
                    time_control: Some(time_control),
                    edition: args.edition.clone(),
                    start_fen: game.tag("FEN").unwrap_or("").to_owned(),
                    event_name: game.tag("Event").unwrap_or("").to_owned(),
                    site: game.tag("Site").unwrap_or("").to_owned(),
                    date: game.tag("Date").unwrap_or("").to_owned(),
                    // Filled in by the game service.
                    board_seq_before: 0,
                    interpretation: 0,
                };
                let options = ScriptOptions {
                    initial_clock_ms: first.base_ms,
                    increment_ms: first.increment_ms,
                    first_period_moves: first.moves,
                    later_periods,
                    clock: args.clock_setup(),
                    clock_reports_every_ms: Some(args.clock_reports_every).filter(|ms| *ms > 0),
                    incidents: specs
                        .iter()
                        .filter(|s| s.board == i + 1)
                        .map(|s| s.incident)
                        .collect(),
                    ..ScriptOptions::default()
                };
                if !options.incidents.is_empty() {
                    // Scripted now so that an incident the game cannot have stops everything.
                    script(&game, &options)
                        .with_context(|| format!("--incidents on board {} ({board_id})", i + 1))?;
                }
                Ok(BoardPlan {
                    board_id,
                    game,
                    started,
                    options,
                })
            },
        )
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(Plan { boards, notices })
}

/// Sets up each board's game on the game service as the holder of `token`. The request id of a
/// board's game is derived from the game, so running the same simulation again finds the games
/// it set up rather than failing.
pub async fn create_games(
    game_service: &str,
    token: Option<&str>,
    plans: &[BoardPlan],
) -> anyhow::Result<()> {
    // A service still starting refuses the connection for a moment.
    let client = patiently("connecting to the game service", || {
        boardcast_kit::client::game_client(game_service, token).map_err(Attempt::Again)
    })
    .await?;
    for plan in plans {
        let game = &plan.started;
        let request = CreateGameRequest {
            game: Some(game.clone()),
            replace_unfinished: false,
            request_id: format!(
                "simulate/{}/{}/{}/{}",
                game.tournament_id, game.round, game.board_number, plan.board_id
            ),
            revise: false,
        };
        let what = format!("setting up the game on board {}", plan.board_id);
        patiently(&what, || {
            let (mut client, request) = (client.clone(), request.clone());
            async move {
                match client.create_game(request).await {
                    Ok(_) => Ok(()),
                    // The game service could not record it for a moment (NATS electing a
                    // leader); the same request id sets the game up once however often sent.
                    Err(status) if status.code() == tonic::Code::Unavailable => {
                        Err(Attempt::Again(anyhow::anyhow!("{}", status.message())))
                    }
                    Err(status) => Err(Attempt::Refused(anyhow::anyhow!(
                        "{}: {}",
                        status.code(),
                        status.message()
                    ))),
                }
            }
        })
        .await?;
    }
    Ok(())
}

/// How long the simulator keeps trying a step of its set-up that NATS or the game service cannot
/// do for a moment (a stream's leader being elected, a service starting) before it gives up,
/// saying why: as long as such an election takes, several times over.
const SET_UP_PATIENCE: Duration = Duration::from_secs(60);

/// How long one attempt at a set-up step may wait for an answer before it counts as failed.
const ATTEMPT_WITHIN: Duration = Duration::from_secs(10);

/// Why one attempt at a set-up step failed.
enum Attempt {
    /// Worth trying again: what is asked may work a moment later.
    Again(anyhow::Error),
    /// Trying again cannot help (a refusal, a bad request).
    Refused(anyhow::Error),
}

/// Runs `step` until it succeeds, it is refused, or [`SET_UP_PATIENCE`] has passed, saying on
/// stderr what failed while it tries again.
async fn patiently<T, F, Fut>(what: &str, mut step: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, Attempt>>,
{
    let give_up_at = Instant::now() + SET_UP_PATIENCE;
    let mut attempts = 0u32;
    loop {
        let attempt = tokio::time::timeout(ATTEMPT_WITHIN, step())
            .await
            .unwrap_or_else(|_| {
                Err(Attempt::Again(anyhow::anyhow!(
                    "no answer within {}s",
                    ATTEMPT_WITHIN.as_secs()
                )))
            });
        match attempt {
            Ok(done) => return Ok(done),
            Err(Attempt::Refused(e)) => return Err(e.context(what.to_owned())),
            Err(Attempt::Again(e)) if Instant::now() >= give_up_at => {
                return Err(e.context(format!(
                    "{what}: still failing after {}s",
                    SET_UP_PATIENCE.as_secs()
                )));
            }
            Err(Attempt::Again(e)) => {
                attempts += 1;
                if attempts % 10 == 1 {
                    tracing::warn!("{what} failed, trying again: {e:#}");
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    }
}

/// How the boards' progress is said while they play.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// On stderr: each board as it ends (up to 20 boards), else every tenth of them.
    Said,
    Quiet,
}

/// Plays every board's game, publishing each observation to JetStream and waiting for its
/// acknowledgement; a failed publish is retried with the same message id, so it is stored once.
pub async fn play(
    js: &jetstream::Context,
    plans: &[BoardPlan],
    speed: Speed,
    progress: Progress,
) -> anyhow::Result<()> {
    let mut tasks = tokio::task::JoinSet::new();
    for plan in plans.iter().cloned() {
        let js = js.clone();
        tasks.spawn(async move {
            let board = plan.board_id.clone();
            play_board(&js, plan, speed)
                .await
                .with_context(|| format!("board {board}"))
                .map(|()| board)
        });
    }
    let total = plans.len();
    let mut done = 0;
    while let Some(result) = tasks.join_next().await {
        let board = result.context("a simulated board panicked")??;
        done += 1;
        let tenth_passed = (done * 10 / total.max(1)) > ((done - 1) * 10 / total.max(1));
        if progress == Progress::Said && (total <= 20 || tenth_passed) {
            eprintln!("{done} of {total} boards played ({board} last)");
        }
    }
    Ok(())
}

async fn play_board(js: &jetstream::Context, plan: BoardPlan, speed: Speed) -> anyhow::Result<()> {
    let steps = script(&plan.game, &plan.options)?;
    let start = Instant::now();
    // Device times follow the game's own timeline, as a real clock's would: at an accelerated
    // speed the wall clock runs faster than the clock readings.
    let game_start_unix_ms = boardcast_kit::now_unix_ms();
    let subject = observation_subject(&plan.board_id);
    // Numbered on from the board's last observation, as a gateway does: a board's numbers are
    // never reused, and a game set up on it ignores those sent before.
    let what = format!("reading where board {}'s numbering stands", plan.board_id);
    let first_seq = patiently(&what, || {
        boardcast_kit::nats::last_board_seq(
            js,
            &plan.board_id,
            boardcast_kit::nats::BoardRead::OwnBoard,
        )
        .map_err(Attempt::Again)
    })
    .await?
        + 1;
    for (i, step) in steps.into_iter().enumerate() {
        let device_seq = first_seq + i as u64;
        // Lost on the way: its number is used, the observation never arrives.
        if step.lost {
            continue;
        }
        if let Speed::Factor(f) = speed {
            let due = start + Duration::from_secs_f64(step.at_ms as f64 / 1000.0 / f);
            tokio::time::sleep_until(due).await;
        }
        let observation = Observation {
            board_id: plan.board_id.clone(),
            device_seq,
            device_time_unix_ms: game_start_unix_ms + step.at_ms as i64,
            receive_time_unix_ms: boardcast_kit::now_unix_ms(),
            source: SourceKind::Simulator as i32,
            kind: Some(step.kind),
        };
        let payload = observation.encode_to_vec();
        // Random: the simulator's resends are in this loop.
        let id = observation_message_id(&plan.board_id, device_seq, rand::random());
        let mut attempt = 0u32;
        loop {
            let message = PublishMessage::build()
                .payload(payload.clone().into())
                .message_id(&id);
            let result = match js.send_publish(subject.clone(), message).await {
                Ok(ack) => ack.await.map(|_| ()).map_err(anyhow::Error::from),
                Err(e) => Err(e.into()),
            };
            match result {
                Ok(()) => break,
                Err(e) => {
                    attempt += 1;
                    if attempt % 10 == 1 {
                        tracing::warn!(board = %plan.board_id, device_seq, "publishing failed, retrying: {e:#}");
                    }
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
    }
    Ok(())
}

pub async fn run(args: SimulateArgs) -> anyhow::Result<()> {
    let Plan {
        boards: plans,
        notices,
    } = plan(&args)?;
    for notice in &notices {
        eprintln!("{notice}");
    }
    if let Some(path) = &args.dgt.incidents.incident_record {
        let json = serde_json::to_string_pretty(&incident_record(&plans))?;
        std::fs::write(path, json + "\n").with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(dir) = &args.dgt.dgt_out {
        write_dgt_streams(&plans, &args.dgt)?;
        eprintln!("wrote {} DGT captures to {}", plans.len(), dir.display());
        return Ok(());
    }
    if args.game_service != "none" {
        let token = boardcast_kit::client::token_from(args.token_file.as_deref())?;
        if token.is_none() {
            eprintln!(
                "no token (--token-file or BOARDCAST_TOKEN): the game service will refuse to set \
                 the games up; use --game-service none if they are set up already"
            );
        }
        create_games(&args.game_service, token.as_deref(), &plans).await?;
    }
    let client = boardcast_kit::nats::connect_for_command(
        &args.nats,
        "boardcast-simulate",
        boardcast_kit::nats::COMMAND_CONNECT_WITHIN,
    )
    .await?;
    let js = jetstream::new(client);
    match plans.len() {
        1 => eprintln!("playing 1 game on board {}-1", args.board_prefix),
        n => eprintln!(
            "playing {n} games on boards {}-1..{}-{n}",
            args.board_prefix, args.board_prefix
        ),
    }
    play(&js, &plans, args.speed, Progress::Said).await?;
    eprintln!("all games played");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_set_up_step_is_tried_again_until_it_works_but_not_when_refused() {
        let tries = std::sync::atomic::AtomicU32::new(0);
        let done = patiently("reading", || async {
            match tries.fetch_add(1, std::sync::atomic::Ordering::SeqCst) {
                0 | 1 => Err(Attempt::Again(anyhow::anyhow!("no leader"))),
                n => Ok(n),
            }
        })
        .await;
        assert_eq!(done.ok(), Some(2));

        let tries = std::sync::atomic::AtomicU32::new(0);
        let refused = patiently("setting up the game on board b-1", || async {
            tries.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Err::<(), _>(Attempt::Refused(anyhow::anyhow!("permission denied")))
        })
        .await;
        assert_eq!(
            refused.map_err(|e| format!("{e:#}")).err().as_deref(),
            Some("setting up the game on board b-1: permission denied")
        );
        assert_eq!(tries.into_inner(), 1);
    }

    #[test]
    fn speeds_and_slugs() {
        assert_eq!("max".parse::<Speed>(), Ok(Speed::Max));
        assert_eq!("60".parse::<Speed>(), Ok(Speed::Factor(60.0)));
        assert!("0".parse::<Speed>().is_err());
        assert!("fast".parse::<Speed>().is_err());
        assert_eq!(
            slug("London Chess Classic 2016"),
            "london-chess-classic-2016"
        );
        assert_eq!(round_and_board(Some("9.1")), (Some(9), Some(1)));
        assert_eq!(round_and_board(Some("9")), (Some(9), None));
        assert_eq!(round_and_board(Some("?")), (None, None));
        assert_eq!(round_and_board(Some("0.1")), (None, None));
        assert_eq!(round_and_board(None), (None, None));
    }

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        args: SimulateArgs,
    }

    /// `boardcast simulate` on the London games with `extra` arguments.
    fn args(extra: &[&str]) -> Result<SimulateArgs, clap::Error> {
        let pgn = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../data/london-classic-2016.pgn"
        );
        args_for(pgn, 3, extra)
    }

    fn args_for(pgn: &str, boards: usize, extra: &[&str]) -> Result<SimulateArgs, clap::Error> {
        use clap::Parser as _;
        let boards = boards.to_string();
        let mut argv = vec!["simulate", "--pgn", pgn, "--boards", &boards];
        argv.extend(extra);
        Cli::try_parse_from(argv).map(|cli| cli.args)
    }

    /// A PGN file of `games` (tags, moves) in a temporary directory.
    fn pgn_file(games: &[(&str, &str)]) -> tempfile::NamedTempFile {
        use std::io::Write as _;
        let mut file = tempfile::NamedTempFile::new().expect("temp file");
        for (tags, moves) in games {
            write!(file, "[Event \"Merged\"]\n{tags}\n\n{moves}\n\n").expect("write");
        }
        file
    }

    #[test]
    fn a_game_cut_short_is_played_as_far_as_it_is_legal_and_said_so() {
        let file = pgn_file(&[
            (
                "[Round \"1.1\"]\n[White \"A\"]\n[Black \"B\"]\n[Result \"*\"]",
                "1. e4 e5 2. Nf3 Nc6 3. Ke4 Kd5 *",
            ),
            (
                "[Round \"1.2\"]\n[White \"C\"]\n[Black \"D\"]\n[Result \"*\"]\n\
                 [TimeControl \"90 min + 30 sec/move\"]",
                "1. d4 d5 2. Kd3 *",
            ),
        ]);
        let path = file.path().to_str().expect("path");
        let plan = plan(&args_for(path, 2, &[]).expect("parses")).expect("plans");
        assert_eq!(plan.boards[0].game.moves.len(), 4);
        // The signal says the result the score left open.
        assert_eq!(plan.boards[0].game.result, "1-0");
        assert_eq!(plan.boards[1].game.moves.len(), 2);
        assert_eq!(plan.notices.len(), 3, "{:?}", plan.notices);
        assert!(plan.notices[0].contains("board sim-1 plays game 1 (A - B)"));
        // A TimeControl in prose is read, and said how.
        assert_eq!(
            plan.notices[2],
            "board sim-2: TimeControl \"90 min + 30 sec/move\" read as 5400+30"
        );
        let periods = &plan.boards[1]
            .started
            .time_control
            .as_ref()
            .expect("tc")
            .periods;
        assert_eq!(
            (periods[0].base_ms, periods[0].increment_ms),
            (5_400_000, 30_000)
        );
        assert!(plan.notices[0].contains("result signal (1-0)"));
        assert!(
            plan.notices[1].contains("2. Kd3 is not legal"),
            "{}",
            plan.notices[1]
        );
        // Scripted to its end: the kept moves, then the kings in the centre.
        for board in &plan.boards {
            script(&board.game, &board.options).expect("scripts");
        }
    }

    #[test]
    fn repeated_round_and_board_numbers_are_refused_or_numbered_in_file_order() {
        let game = |round: &str, white: &str| {
            (
                format!("[Round \"{round}\"]\n[White \"{white}\"]\n[Black \"X\"]\n[Result \"*\"]"),
                "1. e4 e5 *".to_owned(),
            )
        };
        let games = [
            game("1.1", "A"),
            game("1.2", "B"),
            game("1.1", "C"),
            game("1.2", "D"),
            game("2", "E"),
        ];
        let borrowed: Vec<(&str, &str)> = games
            .iter()
            .map(|(t, m)| (t.as_str(), m.as_str()))
            .collect();
        let file = pgn_file(&borrowed);
        let path = file.path().to_str().expect("path");

        let refused = format!(
            "{:#}",
            plan(&args_for(path, 5, &[]).expect("parses"))
                .err()
                .expect("refused")
        );
        assert!(
            refused.contains("merged round 1 board 1: game 1 (A - X), game 3 (C - X)"),
            "{refused}"
        );
        assert!(refused.contains("merged round 1 board 2: game 2 (B - X), game 4 (D - X)"));
        assert!(refused.contains("--boards-in-file-order"));

        let renumbered =
            plan(&args_for(path, 5, &["--boards-in-file-order"]).expect("parses")).expect("plans");
        let numbers: Vec<(u32, u32)> = renumbered
            .boards
            .iter()
            .map(|b| (b.started.round, b.started.board_number))
            .collect();
        assert_eq!(numbers, [(1, 1), (1, 2), (1, 3), (1, 4), (2, 1)]);
        assert_eq!(renumbered.notices.len(), 2, "{:?}", renumbered.notices);
        assert!(
            renumbered.notices[0]
                .contains("game 3 (C - X): Round \"1.1\" played as round 1, board 3")
        );

        // Other tournaments do not collide.
        let separate = plan(&args_for(path, 2, &["--tournament", "one"]).expect("parses"))
            .expect("two distinct boards");
        assert!(separate.notices.is_empty());
        // An id no game can have is refused up front, named as the option.
        let refused = plan(&args_for(path, 2, &["--tournament", "Hall Open"]).expect("parses"))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(refused.starts_with("--tournament: "), "{refused}");
    }

    #[test]
    fn incidents_are_planned_on_their_boards_and_recorded() {
        let args = args(&[
            "--incidents",
            "board=2:press-without-move@ply=7,board=3:irregular-placement@ply=9:for=10s",
            "--incidents",
            "board=2:battery-low@ply=3",
        ])
        .expect("parses");
        let plans = plan(&args).expect("plans").boards;
        let record = serde_json::to_value(incident_record(&plans)).expect("serialises");
        let boards = record["boards"].as_array().expect("boards");
        assert_eq!(boards.len(), 3);
        assert_eq!(boards[0]["board_id"], "sim-1");
        assert_eq!(boards[0]["game_id"], "london-chess-classic-2016-r9-b1");
        assert_eq!(boards[0]["incidents"], serde_json::json!([]));
        assert_eq!(
            boards[1]["incidents"],
            serde_json::json!([
                {
                    "incident": "press-without-move@ply=7",
                    "kind": "press-without-move",
                    "ply": 7,
                    "expected_alerts": [
                        { "kind": "press_in_doubt", "ply": 7 },
                        { "kind": "illegal_move", "ply": 7 }
                    ]
                },
                {
                    "incident": "battery-low@ply=3:percent=15",
                    "kind": "battery-low",
                    "ply": 3,
                    "expected_alerts": [{ "kind": "battery_low", "ply": 3 }]
                }
            ])
        );
        assert_eq!(
            boards[2]["incidents"][0]["incident"],
            "irregular-placement@ply=9:for=10000ms"
        );
        assert_eq!(plans[2].options.incidents.len(), 1);
    }

    #[test]
    fn bad_incidents_stop_the_simulation_before_anything_is_published() {
        // Unknown kind, no board, a board numbered 0: refused when the arguments are read.
        for spec in [
            "board=1:juggling@ply=3",
            "press-without-move@ply=3",
            "board=0:offline@ply=3",
        ] {
            assert!(args(&["--incidents", spec]).is_err(), "{spec}");
        }
        // A board beyond --boards, a ply beyond the game: refused by the plan.
        for (spec, says) in [
            ("board=4:offline@ply=3", "there are 3 boards"),
            ("board=1:offline@ply=500", "ply 500 is not in the game"),
        ] {
            let args = args(&["--incidents", spec]).expect("parses");
            let error = format!("{:#}", plan(&args).err().expect(spec));
            assert!(error.contains(says), "{spec}: {error}");
        }
        let args = args(&[
            "--incidents",
            "board=1:offline@ply=3",
            "--dgt-out",
            "/nonexistent",
        ])
        .expect("parses");
        assert!(plan(&args).is_err());
    }
}

//! `boardcast boards`: the hall's physical boards at a glance, for the check before a round —
//! each board's game, connection and battery, what of its set-up to correct, and the boards
//! being played on while no game takes their moves (a round not set up on them yet, a board
//! paired under another id).

use std::path::PathBuf;

use anyhow::Context as _;
use boardcast_schema::device::v1::DeviceState;
use boardcast_schema::game::v1::{BoardSummary, ListBoardsRequest};

#[derive(clap::Args, Debug)]
pub struct BoardsArgs {
    /// Only the boards carrying this tournament's games (and the boards with no game).
    #[arg(long)]
    tournament: Option<String>,
    /// Game service to ask.
    #[arg(
        long,
        env = "BOARDCAST_GAME_SERVICE",
        default_value = "http://127.0.0.1:50051"
    )]
    game_service: String,
    /// File holding an API token (an operator's or chief arbiter's sees the boards with no
    /// game too); without it, the token in BOARDCAST_TOKEN.
    #[arg(long, env = "BOARDCAST_TOKEN_FILE")]
    token_file: Option<PathBuf>,
}

pub async fn run(args: BoardsArgs) -> anyhow::Result<()> {
    let token = boardcast_kit::client::token_from(args.token_file.as_deref())?;
    let mut client = boardcast_kit::client::game_client(&args.game_service, token.as_deref())
        .await
        .with_context(|| format!("connecting to the game service at {}", args.game_service))?;
    let boards = client
        .list_boards(ListBoardsRequest { with_traffic: true })
        .await
        .context("listing the boards")?
        .into_inner()
        .boards;
    let shown: Vec<&BoardSummary> = boards
        .iter()
        .filter(|b| {
            b.game_id.is_empty()
                || args
                    .tournament
                    .as_ref()
                    .is_none_or(|t| *t == b.tournament_id)
        })
        .collect();
    if shown.is_empty() {
        println!("no boards: no game is set up on any, and none has sent anything unused");
        return Ok(());
    }
    let mut to_see = 0;
    for board in &shown {
        let (line, problems) = describe(board);
        println!("{line}");
        for problem in &problems {
            println!("    ! {problem}");
        }
        to_see += usize::from(!problems.is_empty());
    }
    println!("{} boards, {} to see to", shown.len(), to_see);
    Ok(())
}

/// One line on the board, and what about it needs someone's attention.
fn describe(board: &BoardSummary) -> (String, Vec<String>) {
    let mut problems = Vec::new();
    if board.game_id.is_empty() {
        problems.push(format!(
            "played on with no game set up: {} of its observations given up (the last: {}); set \
             its game up on it (boardcast pair), or correct the board's id in the pairing",
            board.given_up, board.last_given_up_reason
        ));
        return (format!("{:<12} no game", board.board_id), problems);
    }
    let state = match board.state() {
        DeviceState::Connected => "connected",
        DeviceState::NotResponding => "not responding",
        DeviceState::Disconnected => "disconnected",
        DeviceState::Unspecified => "not reported yet",
    };
    match board.state() {
        DeviceState::NotResponding | DeviceState::Disconnected if !board.game_over => problems
            .push(format!(
                "{state}: its moves are not seen until it is back (they are reconstructed then)"
            )),
        _ => {}
    }
    let battery = match board.battery_percent {
        Some(percent) if percent <= boardcast_game::LOW_BATTERY_PERCENT => {
            problems.push(format!("battery low ({percent}%): charge or change it"));
            format!(", battery {percent}%")
        }
        Some(percent) => format!(", battery {percent}%"),
        None => String::new(),
    };
    let unused = board
        .last_sent_device_seq
        .saturating_sub(board.last_device_seq);
    if board.game_over && unused > 0 {
        problems.push(format!(
            "played on after its game ended: {unused} observations since that no game takes; set \
             up its next game on it (boardcast pair)"
        ));
    }
    for mismatch in &board.setup_mismatches {
        problems.push(format!(
            "set-up: expected {}; seen {}. {}",
            mismatch.expected, mismatch.seen, mismatch.fix
        ));
    }
    let line = format!(
        "{:<12} {} round {} board {:<4} {:<9} {state}{battery}",
        board.board_id,
        board.tournament_id,
        board.round,
        board.board_number,
        if board.game_over {
            "finished"
        } else {
            "playing"
        },
    );
    (line, problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_board_played_on_after_its_game_or_with_none_is_to_be_seen_to() {
        let finished = BoardSummary {
            board_id: "hall-5".into(),
            game_id: "open-r3-b5".into(),
            tournament_id: "open".into(),
            round: 3,
            board_number: 5,
            game_over: true,
            last_device_seq: 120,
            last_sent_device_seq: 160,
            state: DeviceState::Connected as i32,
            battery_percent: Some(15),
            ..Default::default()
        };
        let (line, problems) = describe(&finished);
        assert!(
            line.starts_with("hall-5       open round 3 board 5"),
            "{line}"
        );
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].starts_with("battery low (15%)"));
        assert!(problems[1].contains("40 observations since"));
        let idle = BoardSummary {
            last_sent_device_seq: 120,
            battery_percent: Some(80),
            ..finished
        };
        assert_eq!(describe(&idle).1, Vec::<String>::new());
        let stray = BoardSummary {
            board_id: "hall-9".into(),
            given_up: 12,
            last_given_up_reason: "no game is live on board hall-9".into(),
            ..Default::default()
        };
        let (line, problems) = describe(&stray);
        assert_eq!(line.trim_end(), "hall-9       no game");
        assert!(problems[0].contains("12 of its observations given up"));
    }
}

//! `boardcast boards`: the hall's physical boards at a glance, for the check before a round —
//! each board's game, connection and battery, what of its set-up to correct, and the boards
//! being played on while no game takes their moves (the round not set up on them yet, a board
//! paired under another id).

use anyhow::Context as _;
use boardcast_schema::device::v1::DeviceState;
use boardcast_schema::game::v1::{BoardSummary, ListBoardsRequest};

#[derive(clap::Args, Debug)]
pub struct BoardsArgs {
    /// Only the boards carrying this tournament's games (and the boards with no game).
    #[arg(long)]
    tournament: Option<String>,
    /// Boards with no game are listed when they sent something within this many hours (older
    /// ones: `boardcast dead-letters`).
    #[arg(long, default_value_t = 12)]
    within_hours: u32,
    #[command(flatten)]
    game_service: crate::game_service::GameServiceArgs,
}

pub async fn run(args: BoardsArgs) -> anyhow::Result<()> {
    let mut client = args.game_service.connect().await?;
    let listed = client
        .list_boards(ListBoardsRequest { with_traffic: true })
        .await
        .context("listing the boards")?
        .into_inner();
    let since_ms = boardcast_kit::now_unix_ms()
        .saturating_sub(i64::from(args.within_hours).saturating_mul(3_600_000));
    let long_quiet = listed
        .boards
        .iter()
        .filter(|b| b.game_id.is_empty() && b.last_given_up_unix_ms < since_ms)
        .count();
    let mut shown: Vec<&BoardSummary> = listed
        .boards
        .iter()
        .filter(|b| match b.game_id.is_empty() {
            true => b.last_given_up_unix_ms >= since_ms,
            false => args
                .tournament
                .as_ref()
                .is_none_or(|t| *t == b.tournament_id),
        })
        .collect();
    shown.sort_by_key(|b| natural_key(&b.board_id));
    if !listed.traffic_error.is_empty() {
        eprintln!(
            "warning: {}: boards played on with no game to take their moves may be missing",
            listed.traffic_error
        );
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
    println!("{} boards, {to_see} to see to", shown.len());
    if long_quiet > 0 {
        println!(
            "({long_quiet} more boards with no game sent nothing in the last {} hours: \
             boardcast dead-letters lists them)",
            args.within_hours
        );
    }
    if !listed.boards_without_game_shown && listed.traffic_error.is_empty() {
        println!("(boards with no game set up are shown to operators and chief arbiters only)");
    }
    Ok(())
}

/// One line on the board, and what about it needs someone's attention.
fn describe(board: &BoardSummary) -> (String, Vec<String>) {
    let mut problems = Vec::new();
    if board.game_id.is_empty() {
        let why = match board.last_given_up_reason.as_str() {
            "" => String::new(),
            reason => format!(" (the last: {reason})"),
        };
        problems.push(format!(
            "played on with no game set up: {} of its messages given up{why}; set its game up on \
             it (boardcast pair), or correct the board's id in the pairing",
            board.given_up
        ));
        return (format!("{:<12} no game", board.board_id), problems);
    }
    let state = match board.state() {
        DeviceState::Connected => "connected",
        DeviceState::NotResponding => "not responding",
        DeviceState::Disconnected => "disconnected",
        DeviceState::Unspecified => "not reported",
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
    if board.clock_connected == Some(false) && !board.game_over {
        problems.push(
            "no clock connected to the board: plug its cable in (moves are completed, and \
             broadcast, only with the clock's presses)"
                .to_owned(),
        );
    }
    if board.played_on_after_the_end {
        problems.push(
            "played on after its game ended: the board shows a game in progress that no game \
             takes; set its next game up on it (boardcast pair)"
                .to_owned(),
        );
    }
    for mismatch in &board.setup_mismatches {
        problems.push(format!(
            "set-up: expected {}; seen {}. {}",
            mismatch.expected, mismatch.seen, mismatch.fix
        ));
    }
    let line = format!(
        "{:<12} {} round {} board {:<4} {:<9} {state}{battery}{}",
        board.board_id,
        board.tournament_id,
        board.round,
        board.board_number,
        if board.game_over {
            "finished"
        } else {
            "playing"
        },
        // A finished game takes nothing from its board any more.
        if board.game_over {
            " (when its game ended)"
        } else {
            ""
        },
    );
    (line, problems)
}

/// Orders board ids as people number them: `hall-2` before `hall-10`.
fn natural_key(id: &str) -> Vec<(String, u64)> {
    let mut key = Vec::new();
    let mut text = String::new();
    let mut digits = String::new();
    for c in id.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
        } else {
            if !digits.is_empty() {
                key.push((
                    std::mem::take(&mut text),
                    digits.parse().unwrap_or(u64::MAX),
                ));
                digits.clear();
            }
            text.push(c);
        }
    }
    key.push((text, digits.parse().unwrap_or(0)));
    key
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
            played_on_after_the_end: true,
            state: DeviceState::Connected as i32,
            battery_percent: Some(15),
            ..Default::default()
        };
        let (line, problems) = describe(&finished);
        assert!(
            line.starts_with("hall-5       open round 3 board 5"),
            "{line}"
        );
        assert!(line.ends_with("(when its game ended)"), "{line}");
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].starts_with("battery low (15%)"));
        assert!(problems[1].starts_with("played on after its game ended"));
        let idle = BoardSummary {
            played_on_after_the_end: false,
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
        assert!(problems[0].contains("12 of its messages given up (the last: no game"));
    }

    #[test]
    fn boards_are_in_the_order_people_number_them() {
        let mut ids = ["hall-10", "hall-2", "b", "hall-1", "a-3"];
        ids.sort_by_key(|id| natural_key(id));
        assert_eq!(ids, ["a-3", "b", "hall-1", "hall-2", "hall-10"]);
    }
}

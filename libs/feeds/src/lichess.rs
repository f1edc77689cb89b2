//! A round as a lichess broadcast round takes it, by push (`POST /api/broadcast/round/{id}/push`)
//! or by polling the round's `lichess.pgn`, which is not quite the PGN feed:
//!
//! - A lichess broadcast round holds at most [`LICHESS_MAX_GAMES`] games and silently drops the
//!   rest of a push, so a larger round goes to several lichess rounds, each a range of boards.
//! - Lichess strips every comment from the moves it imports and never removes a move it once
//!   showed (a changed move becomes the main line, the old one stays as a variation). A move no
//!   clock press confirmed yet would lose the comment that says so and could stay on as a stray
//!   variation (a rook seen first in a castling), so it is left out until its press completes it.
//! - Lichess shows a side's clock from the `[%clk]` of its last move and ignores the
//!   `WhiteClock`/`BlackClock` tags once that move has one, so time the arbiter added or took
//!   would show there only after the next move. The clocks as they now stand go into each side's
//!   last move instead (lichess updates a move's clock when it changes).
//! - Lichess reads `TimeControl` in seconds only when the `Site` tag names lichess.org or
//!   chess.com (scalachess's `TournamentClock.parse`, strict); for any other site a base of 180
//!   or less is taken as minutes (`180+2` would be three hours), and a value of several periods
//!   not at all, which also stops it from using the broadcast's own time control. So such a
//!   value is written the way lichess reads it for the game's site, or left out.

use std::{collections::HashMap, ops::RangeInclusive};

use boardcast_game::display::DisplayGame;
use boardcast_game::events::TimeControl;
use boardcast_rules::pgn::write_annotated_game;
use shakmaty::Color;

/// The most games a lichess broadcast round holds.
pub const LICHESS_MAX_GAMES: usize = 100;

/// The body of one push and what it leaves out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LichessPush {
    /// The games as PGN, in board order; empty when none is shown yet.
    pub text: String,
    pub games: usize,
    /// When the newest event shown in the body was recorded (ms since the epoch; 0 for none).
    pub last_modified_unix_ms: i64,
    /// Board numbers of the shown games past [`LICHESS_MAX_GAMES`], not in the body.
    pub left_out_boards: Vec<u32>,
}

/// Builds the pushes of a round, keeping each game's PGN until the game changes: a round
/// changes many times a second, each time for a game or two. One builder serves any ranges of
/// the round's boards.
#[derive(Debug, Default)]
pub struct LichessPusher {
    /// By game id: the version of the game rendered, and its PGN.
    rendered: HashMap<String, (u64, String)>,
}

impl LichessPusher {
    /// The shown games of a round (in board order, each with the version it last changed at)
    /// on the boards of `boards` (all when `None`) as one push.
    pub fn push(
        &mut self,
        round_games: &[(&DisplayGame, u64)],
        boards: Option<&RangeInclusive<u32>>,
    ) -> LichessPush {
        // Games no longer in the round are forgotten.
        if self.rendered.len() > round_games.len() {
            let in_round: std::collections::HashSet<&str> = round_games
                .iter()
                .map(|(g, _)| g.game_id.as_str())
                .collect();
            self.rendered.retain(|id, _| in_round.contains(id.as_str()));
        }
        let mut push = LichessPush {
            text: String::new(),
            games: 0,
            last_modified_unix_ms: 0,
            left_out_boards: Vec::new(),
        };
        let on_boards = round_games
            .iter()
            .filter(|(g, _)| boards.is_none_or(|range| range.contains(&g.info.board_number)));
        for &(game, version) in on_boards {
            if push.games == LICHESS_MAX_GAMES {
                push.left_out_boards.push(game.info.board_number);
                continue;
            }
            match self.rendered.get_mut(&game.game_id) {
                Some(entry) if entry.0 == version => {}
                Some(entry) => *entry = (version, lichess_pgn(game)),
                None => {
                    self.rendered
                        .insert(game.game_id.clone(), (version, lichess_pgn(game)));
                }
            }
            if let Some((_, pgn)) = self.rendered.get(&game.game_id) {
                push.text.push_str(pgn);
            }
            push.games += 1;
            push.last_modified_unix_ms = push.last_modified_unix_ms.max(game.updated_unix_ms);
        }
        push
    }
}

/// A range of board numbers as an operator writes it, `FIRST-LAST`: at most
/// [`LICHESS_MAX_GAMES`] boards, since a lichess round holds no more.
pub fn parse_board_range(text: &str) -> Result<RangeInclusive<u32>, String> {
    let bad = || format!("boards {text:?}: write FIRST-LAST, e.g. 101-200");
    let (first, last) = text.split_once('-').ok_or_else(bad)?;
    let (first, last): (u32, u32) = (
        first.trim().parse().map_err(|_| bad())?,
        last.trim().parse().map_err(|_| bad())?,
    );
    if first == 0 || last < first {
        return Err(bad());
    }
    let count = u64::from(last - first) + 1;
    if count > LICHESS_MAX_GAMES as u64 {
        return Err(format!(
            "boards {first}-{last} are {count} games, and a lichess broadcast round holds at \
             most {LICHESS_MAX_GAMES}: split them over several lichess rounds"
        ));
    }
    Ok(first..=last)
}

/// One game as lichess should take it: completed moves only, `TimeControl` as lichess reads it.
fn lichess_pgn(game: &DisplayGame) -> String {
    let mut annotated = game.to_pgn();
    // The moves no press confirmed follow the completed ones.
    annotated.game.moves.truncate(game.moves.len());
    if let Some(clocks) = &game.clocks {
        // Each side's last move: the last two.
        let completed = annotated.game.moves.len();
        for (index, pgn_move) in annotated
            .game
            .moves
            .iter_mut()
            .enumerate()
            .skip(completed.saturating_sub(2))
        {
            pgn_move.clock_ms = match side_of_move(game, index) {
                Some(Color::White) => Some(clocks.white_ms),
                Some(Color::Black) => Some(clocks.black_ms),
                None => pgn_move.clock_ms,
            };
        }
    }
    let time_control = game
        .info
        .time_control
        .as_ref()
        .and_then(|tc| lichess_time_control(tc, &game.info.site));
    annotated
        .game
        .tags
        .retain(|(name, _)| name != "TimeControl");
    if let Some(value) = time_control {
        annotated.game.tags.push(("TimeControl".to_owned(), value));
    }
    write_annotated_game(&annotated)
}

/// Who made the completed move at `index`: the side not to move after it.
fn side_of_move(game: &DisplayGame, index: usize) -> Option<Color> {
    let fen = &game.moves.get(index)?.fen_after;
    match fen.split_whitespace().nth(1)? {
        "w" => Some(Color::Black),
        "b" => Some(Color::White),
        _ => None,
    }
}

/// A time control as lichess reads a game's `TimeControl` tag: one period, its base in seconds
/// when the game's site is one lichess reads strictly or the base is over 180, otherwise in
/// minutes when whole minutes. `None` (no tag, so lichess uses the broadcast's own setting) for
/// anything else.
fn lichess_time_control(tc: &TimeControl, site: &str) -> Option<String> {
    let [period] = tc.periods.as_slice() else {
        return None;
    };
    let (base_s, increment_s) = (period.base_ms / 1000, period.increment_ms / 1000);
    if period.base_ms % 1000 != 0 || period.increment_ms % 1000 != 0 {
        return None;
    }
    let site = site.to_ascii_lowercase();
    let read_strictly = site.contains("lichess.org") || site.contains("chess.com");
    let base = if base_s > 180 || (read_strictly && base_s > 0) {
        base_s
    } else if base_s > 0 && base_s % 60 == 0 {
        base_s / 60
    } else {
        return None;
    };
    Some(format!("{base}+{increment_s}"))
}

#[cfg(test)]
mod tests {
    use boardcast_game::events::TimePeriod;

    use super::*;

    fn tc(periods: &[(u32, u64, u64)]) -> TimeControl {
        TimeControl {
            periods: periods
                .iter()
                .map(|&(moves, base_ms, increment_ms)| TimePeriod {
                    moves,
                    base_ms,
                    increment_ms,
                    ..TimePeriod::default()
                })
                .collect(),
        }
    }

    fn lichess_time_control_at(site: &str, tc: &TimeControl) -> Option<String> {
        lichess_time_control(tc, site)
    }

    #[test]
    fn from_lichess_or_chess_com_every_base_is_in_seconds() {
        for site in [
            "https://lichess.org/broadcast",
            "Chess.com",
            "tcec-chess.com",
        ] {
            assert_eq!(
                lichess_time_control_at(site, &tc(&[(0, 180_000, 2_000)])).as_deref(),
                Some("180+2"),
                "{site}"
            );
            assert_eq!(
                lichess_time_control_at(site, &tc(&[(0, 90_000, 0)])).as_deref(),
                Some("90+0"),
                "{site}"
            );
        }
    }

    #[test]
    fn time_controls_are_written_as_lichess_reads_them_or_left_out() {
        // Classical and rapid: seconds, as the PGN standard has them.
        assert_eq!(
            lichess_time_control_at("Oslo", &tc(&[(0, 5_400_000, 30_000)])).as_deref(),
            Some("5400+30")
        );
        assert_eq!(
            lichess_time_control_at("Oslo", &tc(&[(0, 600_000, 5_000)])).as_deref(),
            Some("600+5")
        );
        // Blitz: lichess would read 180 as minutes.
        assert_eq!(
            lichess_time_control_at("Oslo", &tc(&[(0, 180_000, 2_000)])).as_deref(),
            Some("3+2")
        );
        assert_eq!(
            lichess_time_control_at("Oslo", &tc(&[(0, 60_000, 0)])).as_deref(),
            Some("1+0")
        );
        // What lichess would misread or not read at all.
        for unreadable in [
            tc(&[(0, 90_000, 0)]),
            tc(&[(40, 5_400_000, 30_000), (0, 1_800_000, 30_000)]),
            tc(&[(0, 180_500, 0)]),
            tc(&[]),
        ] {
            assert_eq!(
                lichess_time_control(&unreadable, "Oslo"),
                None,
                "{unreadable:?}"
            );
        }
    }
}

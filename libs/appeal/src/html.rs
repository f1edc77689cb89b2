//! The replay as one self-contained HTML file: board, clocks, a slider over the timeline and the
//! record list, with the data inside the page — a committee opens it in any browser, offline.

use serde::Serialize;

use crate::replay::{ReplayedGame, Step};

const TEMPLATE: &str = include_str!("replay.html");

#[derive(Serialize)]
struct PageGame<'a> {
    game_id: &'a str,
    title: String,
    white: String,
    black: String,
    /// `ReplayedGame::cautions`, shown under the title.
    cautions: Vec<String>,
    steps: &'a [Step],
}

#[derive(Serialize)]
struct PageData<'a> {
    check: &'a str,
    games: Vec<PageGame<'a>>,
}

/// The page for `games`; `check` says how the record was verified (shown in the header).
pub fn replay_page(games: &[ReplayedGame], check: &str) -> String {
    let data = PageData {
        check,
        games: games
            .iter()
            .map(|g| {
                let info = g.info();
                let name = |p: &Option<boardcast_game::events::Player>| {
                    p.as_ref().map(|p| p.name.clone()).unwrap_or_default()
                };
                let (white, black) = (name(&info.white), name(&info.black));
                PageGame {
                    game_id: &g.game_id,
                    title: format!(
                        "{white} – {black}, {} round {} board {} ({})",
                        if info.event_name.is_empty() {
                            &info.tournament_id
                        } else {
                            &info.event_name
                        },
                        info.round,
                        info.board_number,
                        g.game.result_token()
                    ),
                    white,
                    black,
                    cautions: g.cautions(),
                    steps: &g.steps,
                }
            })
            .collect(),
    };
    // Inside a <script> element no `<` may appear (`</script>`, `<!--`): JSON may write it as
    // \u003c, which reads back the same.
    let json = serde_json::to_string(&data)
        .unwrap_or_else(|_| "{\"check\":\"\",\"games\":[]}".to_owned())
        .replace('<', "\\u003c");
    TEMPLATE.replacen("/*DATA*/", &json, 1)
}

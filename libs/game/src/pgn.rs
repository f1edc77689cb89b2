//! A game as a PGN score, the one way every part of the system writes it (the broadcast feeds,
//! a capture's replay).

use boardcast_rules::pgn::{AnnotatedGame, MoveNotes, PgnGame, PgnMove};
use shakmaty::Position;

use crate::{Game, events::GameStarted, time_control::time_control_tag};

fn player_name(p: &Option<crate::events::Player>) -> String {
    p.as_ref().map(|p| p.name.clone()).unwrap_or_default()
}

/// The notes of each of `moves` completed moves: draw offers and the arbiter's rulings at the
/// number of moves they followed. Those before the first move have no move to follow; they stay
/// in the log.
pub(crate) fn move_notes(
    moves: usize,
    draw_offers: &[u32],
    arbiter_notes: &[(u32, String)],
) -> Vec<MoveNotes> {
    let mut notes = vec![MoveNotes::default(); moves];
    let at = |ply: u32| (ply as usize).checked_sub(1);
    for ply in draw_offers {
        if let Some(n) = at(*ply).and_then(|i| notes.get_mut(i)) {
            n.draw_offer = true;
        }
    }
    for (ply, text) in arbiter_notes {
        if let Some(n) = at(*ply).and_then(|i| notes.get_mut(i)) {
            n.arbiter_notes.push(text.clone());
        }
    }
    notes
}

/// The tags of a game's set-up, as downstream sites read them: the Seven Tag Roster but the
/// result, `Round "r.b"` and `Board`, `GameId` (the game's id, which never changes, so that a
/// site matching games across polls never mistakes one for another when boards are
/// renumbered), ratings, titles, FIDE ids and teams where the pairing has them, the time control, and
/// the start position when it is not the standard one.
pub fn pgn_tags(game_id: &str, info: &GameStarted) -> Vec<(String, String)> {
    let mut tags = vec![
        ("Event".to_owned(), info.event_name.clone()),
        ("Site".to_owned(), info.site.clone()),
        ("Date".to_owned(), info.date.clone()),
        (
            "Round".to_owned(),
            format!("{}.{}", info.round, info.board_number),
        ),
        ("Board".to_owned(), info.board_number.to_string()),
        ("GameId".to_owned(), game_id.to_owned()),
        ("White".to_owned(), player_name(&info.white)),
        ("Black".to_owned(), player_name(&info.black)),
    ];
    for (side, player) in [("White", &info.white), ("Black", &info.black)] {
        let Some(p) = player else { continue };
        if p.rating > 0 {
            tags.push((format!("{side}Elo"), p.rating.to_string()));
        }
        tags.push((format!("{side}Title"), p.title.clone()));
        tags.push((format!("{side}FideId"), p.fide_id.clone()));
        tags.push((format!("{side}Team"), p.team.clone()));
    }
    if let Some(tc) = &info.time_control {
        tags.push(("TimeControl".to_owned(), time_control_tag(tc)));
    }
    if !info.start_fen.is_empty() {
        tags.push(("SetUp".to_owned(), "1".to_owned()));
        tags.push(("FEN".to_owned(), info.start_fen.clone()));
    }
    tags.retain(|(_, v)| !v.is_empty());
    tags
}

impl Game {
    /// A game as a PGN score: the Seven Tag Roster, ratings, `[%clk]` after every move that was
    /// completed with a clock reading, draw offers and the arbiter's decisions at the move they
    /// followed. A move that rests on the board alone says so (`UNCONFIRMED`), and while the game
    /// goes on the moves the board shows after the completed ones follow, marked `PROVISIONAL`:
    /// a final move nobody pressed after is shown, never passed off as confirmed.
    pub fn to_pgn(&self) -> AnnotatedGame {
        use crate::display::{PROVISIONAL, UNCONFIRMED};
        use crate::events::Source;
        let game = self;
        let tags = pgn_tags(&game.game_id, game.info());
        let mut moves: Vec<PgnMove> = game
            .completed_moves()
            .iter()
            .map(|completed| {
                let m = &completed.event;
                let confirmed = matches!(
                    completed.source,
                    Source::Clock | Source::Arbiter | Source::Scoresheet
                );
                PgnMove {
                    san: m.san.clone(),
                    // The mover's clock: the start position's side to move plays the odd plies.
                    clock_ms: if (m.ply % 2 == 1) == (game.start.turn() == shakmaty::Color::White) {
                        m.white_remaining_ms
                    } else {
                        m.black_remaining_ms
                    },
                    elapsed_ms: None,
                    comment: (!confirmed).then(|| UNCONFIRMED.to_owned()),
                }
            })
            .collect();
        if !game.is_over() {
            moves.extend(game.provisional.moves().iter().map(|p| PgnMove {
                san: p.event.san.clone(),
                comment: Some(PROVISIONAL.to_owned()),
                ..PgnMove::default()
            }));
        }
        let notes = move_notes(
            game.completed_moves().len(),
            game.draw_offers(),
            game.arbiter_notes(),
        );
        AnnotatedGame {
            game: PgnGame {
                tags,
                moves,
                result: game.result_token().to_owned(),
            },
            notes,
        }
    }
}

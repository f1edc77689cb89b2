//! The display projection: every game folded from the log, for viewers.
//!
//! Display data only. Nothing on an arbiter's path reads it (Article 6.14: no claim may rest on
//! what monitors show).

use std::collections::BTreeMap;

use anyhow::Context as _;
use async_nats::jetstream::{self, consumer::DeliverPolicy, consumer::pull::OrderedConfig};
use boardcast_game::{Game, events::GameEventRecord};
use boardcast_kit::nats::{GAMES_STREAM, GAMES_SUBJECTS};
use boardcast_rules::pgn::write_annotated_game;
use futures::StreamExt;
use prost::Message as _;
use serde::Serialize;
use tokio::sync::{RwLock, broadcast};

pub struct Projection {
    games: RwLock<BTreeMap<String, Game>>,
    /// Ids of games that changed, for live pages.
    changes: broadcast::Sender<String>,
}

/// A game as the live page shows it.
#[derive(Debug, Serialize)]
pub struct GameView {
    pub game_id: String,
    pub tournament_id: String,
    /// The event's name, as in the PGN `Event` tag.
    pub event: String,
    pub round: u32,
    pub board_number: u32,
    pub white: String,
    pub black: String,
    pub fen: String,
    pub moves: Vec<String>,
    /// A move seen on the board but not confirmed by the clock yet.
    pub provisional: Option<String>,
    pub white_clock_ms: Option<u64>,
    pub black_clock_ms: Option<u64>,
    pub result: String,
}

impl Projection {
    pub fn new() -> Self {
        Projection {
            games: RwLock::new(BTreeMap::new()),
            changes: broadcast::channel(1024).0,
        }
    }

    pub fn subscribe(&self) -> broadcast::Receiver<String> {
        self.changes.subscribe()
    }

    async fn fold(&self, record: &GameEventRecord) -> anyhow::Result<()> {
        let event = Game::open_record(record)?;
        let mut games = self.games.write().await;
        match games.get_mut(&event.game_id) {
            Some(game) => game.apply(record)?,
            None => {
                let game = Game::from_first_record(record)?;
                games.insert(event.game_id.clone(), game);
            }
        }
        drop(games);
        // No receivers is fine: nobody is watching.
        let _ = self.changes.send(event.game_id);
        Ok(())
    }

    /// Tournaments and their rounds, for the index.
    pub async fn rounds(&self) -> BTreeMap<String, Vec<u32>> {
        let games = self.games.read().await;
        let mut rounds: BTreeMap<String, Vec<u32>> = BTreeMap::new();
        for game in games.values() {
            let info = game.info();
            let list = rounds.entry(info.tournament_id.clone()).or_default();
            if !list.contains(&info.round) {
                list.push(info.round);
            }
        }
        for list in rounds.values_mut() {
            list.sort_unstable();
        }
        rounds
    }

    pub async fn views(&self, filter: impl Fn(&Game) -> bool) -> Vec<GameView> {
        let games = self.games.read().await;
        let mut views: Vec<GameView> = games.values().filter(|g| filter(g)).map(view).collect();
        views.sort_by(|a, b| {
            (&a.tournament_id, a.round, a.board_number).cmp(&(
                &b.tournament_id,
                b.round,
                b.board_number,
            ))
        });
        views
    }

    /// The PGN of the games that `filter` selects, ordered by round and board.
    pub async fn pgn(&self, filter: impl Fn(&Game) -> bool) -> Option<String> {
        let games = self.games.read().await;
        let mut selected: Vec<&Game> = games.values().filter(|g| filter(g)).collect();
        if selected.is_empty() {
            return None;
        }
        selected.sort_by_key(|g| (g.info().round, g.info().board_number));
        Some(
            selected
                .into_iter()
                .map(|g| write_annotated_game(&g.to_pgn()))
                .collect(),
        )
    }
}

fn player_name(p: &Option<boardcast_game::events::Player>) -> String {
    p.as_ref().map(|p| p.name.clone()).unwrap_or_default()
}

fn view(game: &Game) -> GameView {
    let info = game.info();
    let last = game.completed_moves().last().map(|m| &m.event);
    GameView {
        game_id: game.game_id().to_owned(),
        tournament_id: info.tournament_id.clone(),
        event: info.event_name.clone(),
        round: info.round,
        board_number: info.board_number,
        white: player_name(&info.white),
        black: player_name(&info.black),
        fen: boardcast_game::fen(game.position()),
        moves: game
            .completed_moves()
            .iter()
            .map(|m| m.event.san.clone())
            .collect(),
        provisional: game.provisional().map(|p| p.san.clone()),
        white_clock_ms: last.and_then(|m| m.white_remaining_ms),
        black_clock_ms: last.and_then(|m| m.black_remaining_ms),
        result: game.result_token().to_owned(),
    }
}

/// Follows the game log from its start, for as long as the service runs.
pub async fn follow(
    js: jetstream::Context,
    projection: std::sync::Arc<Projection>,
) -> anyhow::Result<()> {
    let stream = js
        .get_stream(GAMES_STREAM)
        .await
        .context("opening the game log")?;
    let consumer = stream
        .create_consumer(OrderedConfig {
            filter_subject: GAMES_SUBJECTS.to_owned(),
            deliver_policy: DeliverPolicy::All,
            ..Default::default()
        })
        .await
        .context("following the game log")?;
    let mut messages = consumer
        .messages()
        .await
        .context("following the game log")?;
    while let Some(message) = messages.next().await {
        let message = match message {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!("game log: {e}");
                continue;
            }
        };
        let result = match GameEventRecord::decode(message.payload.as_ref()) {
            Ok(record) => projection.fold(&record).await,
            Err(e) => Err(e.into()),
        };
        if let Err(e) = result {
            // The display can be wrong; the log is the authority. Keep serving the rest.
            tracing::error!(subject = %message.subject, "cannot show a game log record: {e:#}");
        }
    }
    anyhow::bail!("the game log follower ended")
}

#[cfg(test)]
mod tests {
    use super::*;
    use boardcast_game::events::{
        Annotation, ArbiterAction, GameStarted, Player, SideAction, TimeControl, TimePeriod,
        arbiter_action::Action,
    };
    use boardcast_rules::pgn::read_annotated_games;

    fn act(game: &mut Game, action: Action) {
        let events = game
            .decide_arbiter(
                &ArbiterAction {
                    action: Some(action),
                    ..Default::default()
                },
                "IA Smith",
                "",
            )
            .expect("accepted");
        for record in Game::record(Some(game), game.game_id(), events, 0) {
            game.apply(&record).expect("applies");
        }
    }

    #[test]
    fn draw_offers_and_arbiter_decisions_appear_in_the_pgn() {
        let info = GameStarted {
            tournament_id: "t".into(),
            round: 1,
            board_number: 1,
            board_id: "b".into(),
            white: Some(Player {
                name: "W".into(),
                ..Default::default()
            }),
            black: Some(Player {
                name: "B".into(),
                ..Default::default()
            }),
            time_control: Some(TimeControl {
                periods: vec![TimePeriod {
                    base_ms: 60_000,
                    ..Default::default()
                }],
            }),
            ..Default::default()
        };
        let (id, start) = Game::decide_start(&info, "operator", "").expect("valid");
        let mut game =
            Game::from_first_record(&Game::record(None, &id, vec![start], 0)[0]).expect("folds");
        act(
            &mut game,
            Action::Move(boardcast_game::events::EnterMove { san: "e4".into() }),
        );
        act(
            &mut game,
            Action::DrawOffer(SideAction {
                side: "white".into(),
            }),
        );
        act(
            &mut game,
            Action::Move(boardcast_game::events::EnterMove { san: "e5".into() }),
        );
        act(
            &mut game,
            Action::Annotation(Annotation {
                text: "phone rang in the hall".into(),
            }),
        );
        let text = write_annotated_game(&game.to_pgn());
        let back = read_annotated_games(&text).expect("reads back");
        assert_eq!(back[0].game.moves.len(), 2);
        assert!(back[0].notes[0].draw_offer, "{text}");
        assert!(
            back[0].notes[1]
                .arbiter_notes
                .iter()
                .any(|n| n.contains("phone rang") && n.contains("IA Smith")),
            "{text}"
        );
    }
}

//! The games this instance knows, rebuilt from the log at start, and appending to the log.

use std::collections::HashMap;

use anyhow::Context as _;
use async_nats::jetstream::{
    self, consumer::DeliverPolicy, consumer::pull::OrderedConfig, message::PublishMessage,
};
use boardcast_game::{Game, events::GameEventRecord};
use boardcast_kit::nats::{GAMES_STREAM, GAMES_SUBJECTS, game_message_id, game_subject};
use futures::StreamExt;
use prost::Message as _;
use tokio::sync::Mutex;

struct Entry {
    game: Game,
    /// Stream sequence of the game's last record: the expected sequence for the next append.
    last_stream_seq: u64,
}

#[derive(Default)]
struct Games {
    by_id: HashMap<String, Entry>,
    /// The game live on each physical board: the latest one started there.
    live_on_board: HashMap<String, String>,
}

impl Games {
    fn insert(&mut self, game: Game, stream_seq: u64) {
        self.live_on_board
            .insert(game.board_id().to_owned(), game.game_id().to_owned());
        self.by_id.insert(
            game.game_id().to_owned(),
            Entry {
                game,
                last_stream_seq: stream_seq,
            },
        );
    }

    fn fold(&mut self, record: &GameEventRecord, stream_seq: u64) -> anyhow::Result<()> {
        let event = Game::open_record(record)?;
        match self.by_id.get_mut(&event.game_id) {
            Some(entry) => {
                entry.game.apply(record)?;
                entry.last_stream_seq = stream_seq;
            }
            None => self.insert(Game::from_first_record(record)?, stream_seq),
        }
        Ok(())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AppendError {
    #[error("the log of game {0} was written by someone else; retry")]
    Conflict(String),
    #[error("appending to the log of game {game_id}: {reason}")]
    Failed { game_id: String, reason: String },
}

pub struct Store {
    js: jetstream::Context,
    games: Mutex<Games>,
}

impl Store {
    /// Rebuilds every game by reading the whole game log once.
    pub async fn load(js: jetstream::Context) -> anyhow::Result<Store> {
        let mut stream = js
            .get_stream(GAMES_STREAM)
            .await
            .context("opening the game log stream")?;
        let last = stream.info().await?.state.last_sequence;
        let mut games = Games::default();
        if last > 0 {
            let consumer = stream
                .create_consumer(OrderedConfig {
                    filter_subject: GAMES_SUBJECTS.to_owned(),
                    deliver_policy: DeliverPolicy::All,
                    ..Default::default()
                })
                .await
                .context("reading the game log")?;
            let mut messages = consumer.messages().await?;
            while let Some(message) = messages.next().await {
                let message = message.context("reading the game log")?;
                let seq = message
                    .info()
                    .map_err(|e| anyhow::anyhow!("{e}"))?
                    .stream_sequence;
                let record = GameEventRecord::decode(message.payload.as_ref())
                    .with_context(|| format!("game log record at stream sequence {seq}"))?;
                games
                    .fold(&record, seq)
                    .with_context(|| format!("game log record at stream sequence {seq}"))?;
                if seq >= last {
                    break;
                }
            }
        }
        Ok(Store {
            js,
            games: Mutex::new(games),
        })
    }

    pub async fn game_count(&self) -> usize {
        self.games.lock().await.by_id.len()
    }

    pub async fn with_game<T>(&self, game_id: &str, f: impl FnOnce(&Game) -> T) -> Option<T> {
        self.games
            .lock()
            .await
            .by_id
            .get(game_id)
            .map(|e| f(&e.game))
    }

    pub async fn all_games<T>(&self, mut f: impl FnMut(&Game) -> Option<T>) -> Vec<T> {
        let games = self.games.lock().await;
        games.by_id.values().filter_map(|e| f(&e.game)).collect()
    }

    /// Runs `decide` on the game live on `board_id` and appends what it returns, as one step:
    /// no other write to this instance's games happens in between.
    pub async fn decide_on_board<T>(
        &self,
        board_id: &str,
        recorded_unix_ms: i64,
        decide: impl FnOnce(&Game) -> T,
        events_of: impl FnOnce(&T) -> Vec<boardcast_game::NewEvent>,
    ) -> Result<Option<T>, AppendError> {
        let mut games = self.games.lock().await;
        let Some(game_id) = games.live_on_board.get(board_id).cloned() else {
            return Ok(None);
        };
        let Some(entry) = games.by_id.get_mut(&game_id) else {
            return Ok(None);
        };
        let decision = decide(&entry.game);
        let new_events = events_of(&decision);
        if !new_events.is_empty() {
            let records = Game::record(Some(&entry.game), &game_id, new_events, recorded_unix_ms);
            self.append(entry, &game_id, records).await?;
        }
        Ok(Some(decision))
    }

    /// Appends the first record of a new game. Returns false when the game already exists.
    pub async fn create(
        &self,
        game_id: &str,
        first: boardcast_game::NewEvent,
        recorded_unix_ms: i64,
    ) -> Result<bool, AppendError> {
        let mut games = self.games.lock().await;
        if games.by_id.contains_key(game_id) {
            return Ok(false);
        }
        let records = Game::record(None, game_id, vec![first], recorded_unix_ms);
        let record = &records[0];
        let seq = self.publish(game_id, 1, record, 0).await?;
        let game = Game::from_first_record(record).map_err(|e| AppendError::Failed {
            game_id: game_id.to_owned(),
            reason: e.to_string(),
        })?;
        games.insert(game, seq);
        Ok(true)
    }

    async fn append(
        &self,
        entry: &mut Entry,
        game_id: &str,
        records: Vec<GameEventRecord>,
    ) -> Result<(), AppendError> {
        for record in records {
            let game_seq = entry.game.last_game_seq() + 1;
            let seq = self
                .publish(game_id, game_seq, &record, entry.last_stream_seq)
                .await?;
            entry.game.apply(&record).map_err(|e| AppendError::Failed {
                game_id: game_id.to_owned(),
                reason: e.to_string(),
            })?;
            entry.last_stream_seq = seq;
        }
        Ok(())
    }

    /// Publishes one record, expecting the game's subject to end at `expected_last`: a write by
    /// anyone else in between makes this fail instead of forking the log.
    async fn publish(
        &self,
        game_id: &str,
        game_seq: u64,
        record: &GameEventRecord,
        expected_last: u64,
    ) -> Result<u64, AppendError> {
        let failed = |reason: String| AppendError::Failed {
            game_id: game_id.to_owned(),
            reason,
        };
        let message = PublishMessage::build()
            .payload(record.encode_to_vec().into())
            .message_id(game_message_id(game_id, game_seq))
            .expected_last_subject_sequence(expected_last);
        let ack = self
            .js
            .send_publish(game_subject(game_id), message)
            .await
            .map_err(|e| failed(e.to_string()))?
            .await;
        match ack {
            Ok(ack) => Ok(ack.sequence),
            Err(e)
                if e.kind()
                    == async_nats::jetstream::context::PublishErrorKind::WrongLastSequence =>
            {
                Err(AppendError::Conflict(game_id.to_owned()))
            }
            Err(e) => Err(failed(e.to_string())),
        }
    }
}

//! The gRPC API of the game service.

use std::{pin::Pin, sync::Arc};

use async_nats::jetstream::{self, consumer::DeliverPolicy, consumer::pull::OrderedConfig};
use boardcast_game::{Game, GameError, events::*};
use boardcast_kit::nats::{GAMES_STREAM, game_subject};
use futures::{Stream, StreamExt};
use prost::Message as _;
use tonic::{Request, Response, Status};

use crate::store::{AppendError, Store};

pub struct GameApi {
    store: Arc<Store>,
    js: jetstream::Context,
}

impl GameApi {
    pub fn new(store: Arc<Store>, js: jetstream::Context) -> Self {
        GameApi { store, js }
    }
}

fn append_status(e: AppendError) -> Status {
    match e {
        AppendError::Conflict(_) => Status::aborted(e.to_string()),
        AppendError::Failed { .. } => Status::unavailable(e.to_string()),
    }
}

#[tonic::async_trait]
impl game_service_server::GameService for GameApi {
    async fn create_game(
        &self,
        request: Request<CreateGameRequest>,
    ) -> Result<Response<CreateGameResponse>, Status> {
        let request = request.into_inner();
        let info = request
            .game
            .ok_or_else(|| Status::invalid_argument("the game to create is missing"))?;
        let actor = if request.actor.is_empty() {
            "operator"
        } else {
            request.actor.as_str()
        };
        let (game_id, event) = Game::decide_start(&info, actor).map_err(|e| match e {
            GameError::InvalidGame(m) => Status::invalid_argument(m),
            other => Status::internal(other.to_string()),
        })?;
        let created = self
            .store
            .create(&game_id, event, boardcast_kit::now_unix_ms())
            .await
            .map_err(append_status)?;
        if !created {
            let same = self
                .store
                .with_game(&game_id, |g| g.info() == &info)
                .await
                .unwrap_or(false);
            if !same {
                return Err(Status::already_exists(format!(
                    "game {game_id} already exists with other details"
                )));
            }
        } else {
            tracing::info!(%game_id, board = %info.board_id, "game created");
        }
        Ok(Response::new(CreateGameResponse { game_id, created }))
    }

    async fn get_game(
        &self,
        request: Request<GetGameRequest>,
    ) -> Result<Response<GameState>, Status> {
        let game_id = request.into_inner().game_id;
        self.store
            .with_game(&game_id, Game::to_state)
            .await
            .map(Response::new)
            .ok_or_else(|| Status::not_found(format!("no game {game_id:?}")))
    }

    async fn list_games(
        &self,
        request: Request<ListGamesRequest>,
    ) -> Result<Response<ListGamesResponse>, Status> {
        let filter = request.into_inner();
        let mut games = self
            .store
            .all_games(|g| {
                let info = g.info();
                let wanted = (filter.tournament_id.is_empty()
                    || info.tournament_id == filter.tournament_id)
                    && (filter.round == 0 || info.round == filter.round);
                wanted.then(|| g.to_state())
            })
            .await;
        games.sort_by(|a, b| a.game_id.cmp(&b.game_id));
        Ok(Response::new(ListGamesResponse { games }))
    }

    type StreamGameEventsStream = Pin<Box<dyn Stream<Item = Result<GameEvent, Status>> + Send>>;

    async fn stream_game_events(
        &self,
        request: Request<StreamGameEventsRequest>,
    ) -> Result<Response<Self::StreamGameEventsStream>, Status> {
        let request = request.into_inner();
        if self
            .store
            .with_game(&request.game_id, |_| ())
            .await
            .is_none()
        {
            return Err(Status::not_found(format!("no game {:?}", request.game_id)));
        }
        let stream = self
            .js
            .get_stream(GAMES_STREAM)
            .await
            .map_err(|e| Status::unavailable(e.to_string()))?;
        let consumer = stream
            .create_consumer(OrderedConfig {
                filter_subject: game_subject(&request.game_id),
                deliver_policy: DeliverPolicy::All,
                ..Default::default()
            })
            .await
            .map_err(|e| Status::unavailable(e.to_string()))?;
        let messages = consumer
            .messages()
            .await
            .map_err(|e| Status::unavailable(e.to_string()))?;
        let from = request.from_game_seq;
        let events = messages.filter_map(move |message| async move {
            let message = match message {
                Ok(m) => m,
                Err(e) => return Some(Err(Status::unavailable(e.to_string()))),
            };
            let event = GameEventRecord::decode(message.payload.as_ref())
                .map_err(|e| GameError::Undecodable(e.to_string()))
                .and_then(|record| Game::open_record(&record));
            match event {
                Ok(event) if event.game_seq >= from => Some(Ok(event)),
                Ok(_) => None,
                Err(e) => Some(Err(Status::data_loss(e.to_string()))),
            }
        });
        Ok(Response::new(Box::pin(events)))
    }
}

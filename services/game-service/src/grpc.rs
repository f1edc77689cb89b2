//! The gRPC API of the game service: each call checks its caller, then reads the store or has it
//! decide and append. Long because tonic takes every call of the service in one `impl` block.

use std::{collections::HashSet, pin::Pin, sync::Arc};

use async_nats::jetstream;
use boardcast_game::signing::PublicKey;
use boardcast_game::{
    ActionRejected, ClaimStatement, Game, GameError, NewEvent, RevisionRefused, events::*,
    game_id_for,
};
use boardcast_kit::game_log::{self, Read};
use boardcast_kit::nats::{GAMES_STREAM, GAMES_SUBJECTS, delay_subject, game_subject};
use futures::{Stream, StreamExt};
use prost::Message as _;
use tonic::{Request, Response, Status};

use crate::assignments::{self, AssignmentLog};
use crate::auth::{self, Authenticator, check_read, denied, may_read};
use crate::sessions::SessionLog;
use crate::store::{AppendError, Store};
use boardcast_access::{BoardsRuled, Operation};

/// How often a live stream's credential is checked again.
const RECHECK_CREDENTIAL: std::time::Duration = std::time::Duration::from_secs(2);

pub struct GameApi {
    store: Arc<Store>,
    js: jetstream::Context,
    /// Who is calling, and the users they are checked against.
    auth: Arc<Authenticator>,
    /// Where the chief arbiters' assignments are recorded.
    assignments: Arc<AssignmentLog>,
    /// Where sessions ended early are recorded.
    sessions: Arc<SessionLog>,
}

impl GameApi {
    pub fn new(
        store: Arc<Store>,
        js: jetstream::Context,
        auth: Arc<Authenticator>,
        assignments: Arc<AssignmentLog>,
        sessions: Arc<SessionLog>,
    ) -> Self {
        GameApi {
            store,
            js,
            auth,
            assignments,
            sessions,
        }
    }

    /// A live stream that ends, with the refusal, once its caller's credential no longer counts
    /// (a logout, an expiry, a disabled user, a role taken away): it is checked again every
    /// `RECHECK_CREDENTIAL`. A stream of open reads without a credential has nothing to check.
    fn while_credential_counts(
        &self,
        has_credential: bool,
        metadata: tonic::metadata::MetadataMap,
        events: impl Stream<Item = Result<GameEvent, Status>> + Send + 'static,
    ) -> Pin<Box<dyn Stream<Item = Result<GameEvent, Status>> + Send>> {
        if !has_credential {
            return Box::pin(events);
        }
        let auth = self.auth.clone();
        let start = tokio::time::Instant::now() + RECHECK_CREDENTIAL;
        let tick = tokio::time::interval_at(start, RECHECK_CREDENTIAL);
        let state = (Box::pin(events), tick, auth, metadata, false);
        Box::pin(futures::stream::unfold(
            state,
            |(mut events, mut tick, auth, metadata, refused)| async move {
                if refused {
                    return None;
                }
                loop {
                    tokio::select! {
                        item = events.next() => {
                            return item.map(|item| (item, (events, tick, auth, metadata, false)));
                        }
                        _ = tick.tick() => {
                            if let Err(refusal) = auth.identify(&metadata).await {
                                return Some((Err(refusal), (events, tick, auth, metadata, true)));
                            }
                        }
                    }
                }
            },
        ))
    }
}

/// The client's request id, required on calls that record something so that a retry records
/// nothing twice.
fn required_request_id(request_id: &str) -> Result<&str, Status> {
    let id = request_id.trim();
    if id.is_empty() {
        return Err(Status::invalid_argument(
            "request_id is required: a new unique id (e.g. a UUID) per intended change, reused \
             only to retry that change",
        ));
    }
    if id.len() > 128 {
        return Err(Status::invalid_argument(
            "request_id is longer than 128 characters",
        ));
    }
    if id.chars().any(|c| !c.is_ascii_graphic()) {
        return Err(Status::invalid_argument(
            "request_id may hold printable ASCII only (e.g. a UUID)",
        ));
    }
    Ok(id)
}

fn append_status(e: AppendError) -> Status {
    match e {
        AppendError::Conflict(_) => Status::aborted(e.to_string()),
        AppendError::Failed { .. } | AppendError::Unavailable { .. } => {
            Status::unavailable(e.to_string())
        }
        AppendError::Unfoldable { .. } | AppendError::LogBroken { .. } => {
            Status::failed_precondition(e.to_string())
        }
    }
}

/// How long the hall check may read each part of the boards' traffic on NATS before it answers
/// with what it has: a NATS in trouble must not hold the check up.
const TRAFFIC_WITHIN: std::time::Duration = std::time::Duration::from_secs(5);

/// A finished game's board, as the hall check reads its traffic.
struct FinishedBoard {
    board_id: String,
    /// The last of the board's observations its game accounted for.
    accounted: u64,
    /// The game's final position.
    final_board: shakmaty::Board,
}

impl GameApi {
    /// The finished games' boards whose last message, after the last their game recorded, shows
    /// a game in progress; and how many boards could not be read.
    async fn played_on_after_the_end(
        &self,
        finished: Vec<FinishedBoard>,
    ) -> anyhow::Result<(HashSet<String>, usize)> {
        use boardcast_kit::nats::{BoardRead, last_board_observation_in, observation_partitions};
        let js = &self.js;
        let partitions = observation_partitions(js).await?;
        let partitions = &partitions;
        // Each board with its last message (number and bytes), or why it could not be read.
        type LastMessage = anyhow::Result<Option<(u64, bytes::Bytes)>>;
        let read: Vec<(FinishedBoard, LastMessage)> = futures::stream::iter(finished)
            .map(|board| async move {
                let last =
                    last_board_observation_in(js, partitions, &board.board_id, BoardRead::Leader)
                        .await;
                (board, last)
            })
            .buffered(16)
            .collect()
            .await;
        let mut played_on = HashSet::new();
        let mut unread = 0;
        for (board, last) in read {
            match last {
                Ok(Some((seq, payload))) if seq > board.accounted => {
                    let shown = boardcast_game::device::Observation::decode(payload.as_ref())
                        .ok()
                        .and_then(|o| placement_of(&o));
                    if shown
                        .is_some_and(|shown| shows_a_game_in_progress(&shown, &board.final_board))
                    {
                        played_on.insert(board.board_id);
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(board = %board.board_id, "reading the board's last message: {e:#}");
                    unread += 1;
                }
            }
        }
        Ok((played_on, unread))
    }
}

/// The whole board an observation shows, if it shows one.
fn placement_of(observation: &boardcast_game::device::Observation) -> Option<shakmaty::Board> {
    match &observation.kind {
        Some(boardcast_game::device::observation::Kind::Placement(p)) => p.placement.parse().ok(),
        _ => None,
    }
}

/// `shown` is a game in progress on a board whose game ended at `final_board`: both kings stand
/// on it, and it is neither that final position nor the start position, either way round (a
/// board left as it ended, or set up for the next game, is not played on; a gateway connecting
/// sends the whole board again).
fn shows_a_game_in_progress(shown: &shakmaty::Board, final_board: &shakmaty::Board) -> bool {
    let turned = |board: &shakmaty::Board| {
        let mut turned = board.clone();
        turned.rotate_180();
        turned
    };
    let start = shakmaty::Board::new();
    let kings = shown.kings();
    (kings & shown.white()).count() == 1
        && (kings & shown.black()).count() == 1
        && ![
            final_board.clone(),
            turned(final_board),
            turned(&start),
            start,
        ]
        .contains(shown)
}

#[tonic::async_trait]
impl game_service_server::GameService for GameApi {
    async fn create_game(
        &self,
        request: Request<CreateGameRequest>,
    ) -> Result<Response<CreateGameResponse>, Status> {
        let who = self.auth.identify(request.metadata()).await?;
        let request = request.into_inner();
        let request_id = required_request_id(&request.request_id)?;
        let info = request
            .game
            .ok_or_else(|| Status::invalid_argument("the game to create is missing"))?;
        who.may(Operation::SetUp {
            tournament: &info.tournament_id,
        })
        .map_err(denied)?;
        let mut info = info;
        info.board_seq_before = self.board_seq_now(&info.board_id).await?;
        let set_up = SetUp {
            who: &who,
            request_id,
            options: SetUpOptions {
                revise: request.revise,
                replace_unfinished: request.replace_unfinished,
            },
            round_games: HashSet::new(),
        };
        self.refresh().await?;
        let step = self.plan_set_up(&set_up, info).await?;
        Ok(Response::new(self.set_up(&set_up, step).await?))
    }

    async fn get_game(
        &self,
        request: Request<GetGameRequest>,
    ) -> Result<Response<GameState>, Status> {
        let reader = self.auth.identify_reader(request.metadata()).await?;
        let game_id = request.into_inner().game_id;
        self.known_game(&game_id, |_| ()).await?;
        let state = self
            .store
            .game_state(&game_id)
            .await
            .ok_or_else(|| Status::not_found(format!("no game {game_id:?}")))?;
        check_read(
            &reader,
            &state
                .info
                .as_ref()
                .map(|i| i.tournament_id.clone())
                .unwrap_or_default(),
        )?;
        Ok(Response::new(state))
    }

    async fn list_games(
        &self,
        request: Request<ListGamesRequest>,
    ) -> Result<Response<ListGamesResponse>, Status> {
        let reader = self.auth.identify_reader(request.metadata()).await?;
        let filter = request.into_inner();
        if !filter.tournament_id.is_empty() {
            check_read(&reader, &filter.tournament_id)?;
        }
        let mut games = self
            .store
            .game_states(|g| {
                let info = g.info();
                (filter.tournament_id.is_empty() || info.tournament_id == filter.tournament_id)
                    && (filter.round == 0 || info.round == filter.round)
                    && may_read(&reader, &info.tournament_id)
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
        let reader = self.auth.identify_reader(request.metadata()).await?;
        let metadata = request.metadata().clone();
        let request = request.into_inner();
        self.require_readable_game(&reader, &request.game_id)
            .await?;
        let from = request.from_game_seq;
        let records = self.log_records(&game_subject(&request.game_id), 1).await?;
        // A game whose log does not follow on ends its stream with DATA_LOSS.
        let events = records.filter_map(move |item| async move {
            match item {
                Ok(Read::Record { opened, .. }) => {
                    (opened.event().game_seq >= from).then(|| Ok((*opened).into_event()))
                }
                Ok(Read::Refused { .. }) => None,
                Ok(Read::Break(at)) => Some(Err(Status::data_loss(at.to_string()))),
                Err(e) => Some(Err(e)),
            }
        });
        Ok(Response::new(self.while_credential_counts(
            reader.is_some(),
            metadata,
            events,
        )))
    }

    async fn get_game_at(
        &self,
        request: Request<GetGameAtRequest>,
    ) -> Result<Response<GameState>, Status> {
        let reader = self.auth.identify_reader(request.metadata()).await?;
        let request = request.into_inner();
        let last = self
            .require_readable_game(&reader, &request.game_id)
            .await?;
        if request.game_seq > last
            && let Some(not_followed) = self.store.not_followed(&request.game_id).await
        {
            return Err(Status::unavailable(format!(
                "game {} is folded here up to log entry {last}, and its log goes on past it: {}",
                request.game_id, not_followed.reason
            )));
        }
        if request.game_seq == 0 || request.game_seq > last {
            return Err(Status::out_of_range(format!(
                "game {} has log entries 1 to {last}, not {}",
                request.game_id, request.game_seq
            )));
        }
        let records = self.log_records(&game_subject(&request.game_id), 1).await?;
        let mut records = std::pin::pin!(records);
        let mut game: Option<Game> = None;
        while let Some(item) = records.next().await {
            let opened = match item? {
                Read::Record { opened, .. } => *opened,
                Read::Refused { .. } => continue,
                Read::Break(at) => return Err(Status::data_loss(at.to_string())),
            };
            let folded = match game.as_mut() {
                None => Game::from_first_opened(&opened).map(|g| game = Some(g)),
                Some(g) => g.apply_opened(&opened),
            };
            folded.map_err(|e| Status::data_loss(format!("game {}: {e}", request.game_id)))?;
            if opened.event().game_seq >= request.game_seq {
                break;
            }
        }
        game.map(|g| Response::new(g.to_state())).ok_or_else(|| {
            Status::data_loss(format!("the log of game {} is empty", request.game_id))
        })
    }

    type StreamRoundEventsStream = Pin<Box<dyn Stream<Item = Result<GameEvent, Status>> + Send>>;

    async fn stream_round_events(
        &self,
        request: Request<StreamRoundEventsRequest>,
    ) -> Result<Response<Self::StreamRoundEventsStream>, Status> {
        let reader = self.auth.identify_reader(request.metadata()).await?;
        let metadata = request.metadata().clone();
        let request = request.into_inner();
        if request.round == 0 || request.tournament_id.is_empty() {
            return Err(Status::invalid_argument(
                "a tournament id and a round (from 1) are required",
            ));
        }
        check_read(&reader, &request.tournament_id)?;
        let (tournament_id, round) = (request.tournament_id, request.round);
        let seen: std::collections::HashMap<String, u64> = request
            .seen
            .into_iter()
            .map(|p| (p.game_id, p.game_seq))
            .collect();
        // The round's games are those whose first record says so (their ids need not follow the
        // pairing pattern); the log is read from the first of them this instance knows, or from
        // what it has not folded yet.
        let start = self.store.round_start_seq(&tournament_id, round).await;
        let records = self.log_records(GAMES_SUBJECTS, start).await?;
        let mut round_games = std::collections::HashSet::new();
        // A game whose log does not follow on sends nothing more; the round goes on.
        let events = records
            .map(move |item| {
                let event = match item {
                    Ok(Read::Record { opened, .. }) => (*opened).into_event(),
                    Ok(Read::Refused { .. } | Read::Break(_)) => return None,
                    Err(e) => return Some(Err(e)),
                };
                if let Some(game_event::Kind::Started(started)) = &event.kind
                    && started.tournament_id == tournament_id
                    && started.round == round
                {
                    round_games.insert(event.game_id.clone());
                }
                let wanted = round_games.contains(&event.game_id)
                    && seen
                        .get(&event.game_id)
                        .is_none_or(|&last| event.game_seq > last);
                wanted.then_some(Ok(event))
            })
            .filter_map(|item| async move { item });
        Ok(Response::new(self.while_credential_counts(
            reader.is_some(),
            metadata,
            events,
        )))
    }

    async fn evaluate_claim(
        &self,
        request: Request<EvaluateClaimRequest>,
    ) -> Result<Response<ClaimVerdict>, Status> {
        let reader = self.auth.identify_reader(request.metadata()).await?;
        let request = request.into_inner();
        self.require_readable_game(&reader, &request.game_id)
            .await?;
        let verdict = self
            .store
            .with_whole_game(&request.game_id, |game| {
                let claim = game
                    .draw_claim(&ClaimStatement {
                        kind: request.kind(),
                        intended_move: &request.intended_move,
                        claimant_has_moved: request.claimant_has_moved,
                        claimant_has_touched: request.claimant_has_touched,
                        claimant_remaining_ms: request.claimant_remaining_ms,
                    })
                    .map_err(Status::invalid_argument)?;
                game.evaluate_claim(&claim)
                    .map_err(|e| Status::failed_precondition(e.to_string()))
            })
            .await
            .ok_or_else(|| Status::not_found(format!("no game {:?}", request.game_id)))?
            // A verdict rests on the game's whole log, never on part of it.
            .map_err(|not_followed| {
                Status::unavailable(format!(
                    "game {}: its log goes on past stream sequence {} here: {}; no verdict is \
                     given on part of a log",
                    request.game_id, not_followed.from_stream_seq, not_followed.reason
                ))
            })??;
        let report = &verdict.report;
        let judgement = verdict.judgement();
        Ok(Response::new(ClaimVerdict {
            verdict: boardcast_game::wording::verdict_name(judgement).to_owned(),
            judgement: judgement as i32,
            article: report.article.to_owned(),
            explanation: report.explanation.clone(),
            occurrences: report
                .evidence
                .occurrences
                .iter()
                .map(|o| Occurrence {
                    ply: o.ply,
                    move_number: o.move_number,
                    game_seq: o.log_ref,
                })
                .collect(),
            game_seqs: report.evidence.log_refs.clone(),
            unconfirmed: verdict
                .unconfirmed
                .iter()
                .map(|u| UnconfirmedMove {
                    ply: u.ply,
                    san: u.san.clone(),
                    game_seq: u.game_seq,
                    source: u.source as i32,
                })
                .collect(),
            detail_json: serde_json::to_string(report).unwrap_or_default(),
            penalty_if_rejected: boardcast_game::wording::rejected_claim_penalty(
                &verdict.judged(false),
            )
            .unwrap_or_default(),
        }))
    }

    async fn act(&self, request: Request<ActRequest>) -> Result<Response<ActResponse>, Status> {
        let who = self.auth.identify(request.metadata()).await?;
        let request = request.into_inner();
        let request_id = required_request_id(&request.request_id)?;
        let action = request
            .action
            .ok_or_else(|| Status::invalid_argument("the arbiter's action is missing"))?;
        let (tournament, board_number, board_id, over) = self
            .known_game(&request.game_id, |g| {
                (
                    g.info().tournament_id.clone(),
                    g.info().board_number,
                    g.info().board_id.clone(),
                    g.is_over(),
                )
            })
            .await?;
        who.may(Operation::Rule {
            tournament: &tournament,
            board_number,
        })
        .map_err(denied)?;
        // An arbiter rules by assignment: not while the assignments in force are unknown.
        let chief = who
            .may(Operation::AssignArbiters {
                tournament: &tournament,
            })
            .is_ok();
        if !chief && !self.assignments.fresh() {
            return Err(Status::unavailable(
                "the arbiters' assignments cannot be read from NATS right now, so whether this \
                 board is yours is not known; nothing was recorded: send it again shortly",
            ));
        }
        // Play resumes on the game's board only while its observations still go to this game:
        // not once another game was set up on it. (A game in play already is refused, or a
        // retry answered, by the game itself.)
        if over
            && matches!(
                action.action,
                Some(boardcast_schema::game::v1::arbiter_action::Action::Resume(
                    _
                ))
            )
            && let Some(other) = self
                .store
                .with_board(&board_id, |g| g.game_id().to_owned())
                .await
                .filter(|on_board| *on_board != request.game_id)
        {
            return Err(Status::failed_precondition(format!(
                "board {board_id:?} now carries game {other}, set up after this one ended: its \
                 moves go to that game. Move this game to another board (set-up revised) to \
                 resume it there; nothing was recorded"
            )));
        }
        let outcome = self
            .store
            .decide_on_game(&request.game_id, boardcast_kit::now_unix_ms(), |game| {
                game.decide_arbiter(&action, &who.user, request_id)
            })
            .await
            .map_err(append_status)?
            .ok_or_else(|| Status::not_found(format!("no game {:?}", request.game_id)))?;
        outcome.map_err(|refused| match refused {
            ActionRejected::GameOver => Status::failed_precondition(refused.to_string()),
            ActionRejected::RequestIdReused { .. } => Status::already_exists(refused.to_string()),
            other => Status::invalid_argument(other.to_string()),
        })?;
        tracing::info!(game_id = %request.game_id, actor = %who.user, request_id, "arbiter action recorded");
        let state = self.store.game_state(&request.game_id).await;
        Ok(Response::new(ActResponse { state }))
    }

    async fn pair_round(
        &self,
        request: Request<PairRoundRequest>,
    ) -> Result<Response<PairRoundResponse>, Status> {
        let who = self.auth.identify(request.metadata()).await?;
        let request = request.into_inner();
        let request_id = required_request_id(&request.request_id)?;
        who.may(Operation::SetUp {
            tournament: &request.tournament_id,
        })
        .map_err(denied)?;
        if request.pairings.is_empty() {
            return Err(Status::invalid_argument("the round has no pairings"));
        }
        // Everything is checked before anything is created, so a bad pairing list changes
        // nothing. Creating is idempotent: after a failure part-way, send the round again.
        let mut board_numbers = HashSet::new();
        let mut board_ids = HashSet::new();
        let mut infos = Vec::with_capacity(request.pairings.len());
        for pairing in &request.pairings {
            if !board_numbers.insert(pairing.board_number) {
                return Err(Status::invalid_argument(format!(
                    "board number {} is paired twice",
                    pairing.board_number
                )));
            }
            if !board_ids.insert(pairing.board_id.as_str()) {
                return Err(Status::invalid_argument(format!(
                    "board {:?} carries two games of the round",
                    pairing.board_id
                )));
            }
            infos.push(GameStarted {
                tournament_id: request.tournament_id.clone(),
                round: request.round,
                board_number: pairing.board_number,
                board_id: pairing.board_id.clone(),
                white: pairing.white.clone(),
                black: pairing.black.clone(),
                time_control: request.time_control.clone(),
                edition: request.edition.clone(),
                start_fen: pairing.start_fen.clone(),
                event_name: request.event_name.clone(),
                site: request.site.clone(),
                date: request.date.clone(),
                board_seq_before: self.board_seq_now(&pairing.board_id).await?,
                // Set by `decide_start`.
                interpretation: 0,
            });
        }
        let set_up = SetUp {
            who: &who,
            request_id,
            options: SetUpOptions {
                revise: request.revise,
                replace_unfinished: request.replace_unfinished,
            },
            // Revised, the round's games may change boards among themselves.
            round_games: if request.revise {
                infos
                    .iter()
                    .map(|i| game_id_for(&i.tournament_id, i.round, i.board_number))
                    .collect()
            } else {
                HashSet::new()
            },
        };
        // Once for the round: another instance may have set up or changed its games.
        self.refresh().await?;
        let mut steps = Vec::with_capacity(infos.len());
        for (index, info) in infos.into_iter().enumerate() {
            let board_number = info.board_number;
            let step = self.plan_set_up(&set_up, info).await.map_err(|status| {
                Status::new(
                    status.code(),
                    format!("board {board_number}: {}", status.message()),
                )
            })?;
            steps.push(((index, board_number), step));
        }
        // Answered in the pairings' order, whatever order they are recorded in.
        let mut answers: Vec<Option<CreateGameResponse>> = vec![None; steps.len()];
        for ((index, board_number), step) in recording_order(steps) {
            let answer = self.set_up(&set_up, step).await.map_err(|status| {
                // Something changed since the round was checked (a game began, NATS went
                // away): what is recorded stays, and sending the round again finishes it.
                let done: Vec<&str> = answers
                    .iter()
                    .flatten()
                    .filter(|g| g.created || g.revised)
                    .map(|g| g.game_id.as_str())
                    .collect();
                Status::new(
                    status.code(),
                    format!(
                        "board {board_number}: {}; set up before it: {}",
                        status.message(),
                        if done.is_empty() {
                            "nothing".to_owned()
                        } else {
                            done.join(", ")
                        }
                    ),
                )
            })?;
            if let Some(slot) = answers.get_mut(index) {
                *slot = Some(answer);
            }
        }
        let created: Vec<CreateGameResponse> = answers.into_iter().flatten().collect();
        tracing::info!(
            tournament = %request.tournament_id,
            round = request.round,
            games = created.len(),
            "round paired"
        );
        Ok(Response::new(PairRoundResponse { games: created }))
    }

    async fn list_tournaments(
        &self,
        request: Request<ListTournamentsRequest>,
    ) -> Result<Response<ListTournamentsResponse>, Status> {
        use std::collections::BTreeMap;
        let reader = self.auth.identify_reader(request.metadata()).await?;
        let games = self
            .store
            .all_games(|g| {
                let info = g.info();
                may_read(&reader, &info.tournament_id).then(|| {
                    (
                        info.tournament_id.clone(),
                        info.event_name.clone(),
                        info.round,
                        g.is_over(),
                    )
                })
            })
            .await;
        let mut tournaments: BTreeMap<String, (String, BTreeMap<u32, RoundSummary>)> =
            BTreeMap::new();
        for (tournament_id, event_name, round, over) in games {
            let (name, rounds) = tournaments.entry(tournament_id).or_default();
            if name.is_empty() {
                *name = event_name;
            }
            let summary = rounds.entry(round).or_insert(RoundSummary {
                round,
                ..Default::default()
            });
            summary.games += 1;
            summary.finished += u32::from(over);
        }
        let tournaments = tournaments
            .into_iter()
            .map(|(tournament_id, (event_name, rounds))| TournamentSummary {
                tournament_id,
                event_name,
                rounds: rounds.into_values().collect(),
            })
            .collect();
        Ok(Response::new(ListTournamentsResponse { tournaments }))
    }

    async fn list_boards(
        &self,
        request: Request<ListBoardsRequest>,
    ) -> Result<Response<ListBoardsResponse>, Status> {
        let reader = self.auth.identify_reader(request.metadata()).await?;
        let with_traffic = request.into_inner().with_traffic;
        let mut boards: Vec<(BoardSummary, Option<FinishedBoard>)> = self
            .store
            .live_games(|g| {
                let info = g.info();
                let board = g.board_status();
                let summary = BoardSummary {
                    board_id: info.board_id.clone(),
                    game_id: g.game_id().to_owned(),
                    tournament_id: info.tournament_id.clone(),
                    round: info.round,
                    board_number: info.board_number,
                    game_over: g.is_over(),
                    last_device_seq: g.last_device_seq(),
                    state: board.state as i32,
                    battery_percent: board.battery_percent,
                    setup_mismatches: g.setup_mismatches().to_vec(),
                    clock_connected: g.clock_connected(),
                    ..Default::default()
                };
                let finished = (with_traffic && g.is_over()).then(|| FinishedBoard {
                    board_id: info.board_id.clone(),
                    accounted: g.board_seq_accounted(),
                    final_board: shakmaty::Position::board(g.position()).clone(),
                });
                (summary, finished)
            })
            .await;
        boards.retain(|(b, _)| may_read(&reader, &b.tournament_id));
        let mut response = ListBoardsResponse::default();
        let mut missing = Vec::new();
        // The traffic costs NATS reads per board: for a signed-in caller only, not open reads.
        if with_traffic && reader.is_none() {
            response.traffic_error =
                "the boards' traffic is read for a caller with a credential only".to_owned();
        } else if with_traffic {
            let finished = boards.iter_mut().filter_map(|(_, f)| f.take()).collect();
            match tokio::time::timeout(TRAFFIC_WITHIN, self.played_on_after_the_end(finished)).await
            {
                Ok(Ok((played_on, unread))) => {
                    for (board, _) in &mut boards {
                        board.played_on_after_the_end = played_on.contains(&board.board_id);
                    }
                    if unread > 0 {
                        missing.push(format!("{unread} finished boards' last messages"));
                    }
                }
                Ok(Err(e)) => {
                    tracing::warn!("reading the finished boards' last messages: {e:#}");
                    missing.push("the finished boards' last messages".to_owned());
                }
                Err(_) => {
                    tracing::warn!("reading the finished boards' last messages timed out");
                    missing.push("the finished boards' last messages (too slow)".to_owned());
                }
            }
            // Boards with no game are the hall's, not a tournament's: for whoever sets games up.
            // A board carrying any game (one the caller may not read, one not folded) is not one.
            if reader.as_ref().is_some_and(|who| who.sets_up_games()) {
                let carrying_a_game = self.store.boards_with_a_game().await;
                let read = boardcast_kit::nats::given_up_by_board(&self.js, |board| {
                    !carrying_a_game.contains(board)
                });
                match tokio::time::timeout(TRAFFIC_WITHIN, read).await {
                    Ok(Ok(without_game)) => {
                        response.boards_without_game_shown = true;
                        boards.extend(without_game.into_iter().map(|given_up| {
                            let summary = BoardSummary {
                                board_id: given_up.board_id,
                                given_up: given_up.count,
                                last_given_up_reason: given_up.last_reason,
                                last_given_up_unix_ms: given_up.last_unix_ms,
                                ..Default::default()
                            };
                            (summary, None)
                        }));
                    }
                    Ok(Err(e)) => {
                        tracing::warn!("reading the boards with no game: {e:#}");
                        missing.push("the boards with no game".to_owned());
                    }
                    Err(_) => {
                        tracing::warn!("reading the boards with no game timed out");
                        missing.push("the boards with no game (too slow)".to_owned());
                    }
                }
            }
        }
        if !missing.is_empty() {
            response.traffic_error = format!(
                "not read on NATS: {} (the service's log says why)",
                missing.join("; ")
            );
        }
        response.boards = boards.into_iter().map(|(b, _)| b).collect();
        response.boards.sort_by(|a, b| a.board_id.cmp(&b.board_id));
        Ok(Response::new(response))
    }

    async fn login(
        &self,
        request: Request<LoginRequest>,
    ) -> Result<Response<LoginResponse>, Status> {
        let peer = self
            .auth
            .login_address(request.remote_addr().map(|a| a.ip()), request.metadata());
        let request = request.into_inner();
        self.auth
            .login(&request.user, &request.password, peer)
            .await
            .map(Response::new)
    }

    async fn get_signing_keys(
        &self,
        _request: Request<GetSigningKeysRequest>,
    ) -> Result<Response<SigningKeys>, Status> {
        let info = |key: &PublicKey| SigningKeyInfo {
            key_id: key.key_id().to_owned(),
            public_key: key.to_text(),
            fingerprint: key.fingerprint(),
        };
        Ok(Response::new(SigningKeys {
            signing: Some(info(self.store.public_key())),
            trusted: self.store.trusted_keys().keys().map(info).collect(),
        }))
    }

    async fn logout(
        &self,
        request: Request<LogoutRequest>,
    ) -> Result<Response<LogoutResponse>, Status> {
        let end = self
            .auth
            .ending_of(request.metadata(), request.get_ref().everywhere)?;
        tracing::info!(?end, "session ended");
        self.sessions.end(end).await?;
        Ok(Response::new(LogoutResponse {}))
    }

    async fn who_am_i(
        &self,
        request: Request<WhoAmIRequest>,
    ) -> Result<Response<Identity>, Status> {
        let who = self.auth.identify(request.metadata()).await?;
        Ok(Response::new(auth::to_proto(&who)))
    }

    async fn assign_arbiter(
        &self,
        request: Request<AssignArbiterRequest>,
    ) -> Result<Response<ArbiterAssignment>, Status> {
        let who = self.auth.identify(request.metadata()).await?;
        let request = request.into_inner();
        let request_id = required_request_id(&request.request_id)?.to_owned();
        boardcast_game::validate_tournament_id(&request.tournament_id)
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
        who.may(Operation::AssignArbiters {
            tournament: &request.tournament_id,
        })
        .map_err(denied)?;
        let target = self.auth.user(request.user.trim())?;
        let assignment = boardcast_access::Assignment::new(
            &target,
            &request.tournament_id,
            request.boards,
            &who.user,
            boardcast_kit::now_unix_ms(),
            &request_id,
        )
        .map_err(|e| match e {
            boardcast_access::AssignmentError::NotAnArbiter { .. } => {
                Status::failed_precondition(e.to_string())
            }
            _ => Status::invalid_argument(e.to_string()),
        })?;
        let recorded = assignments::to_proto(&self.assignments.record(&assignment).await?);
        tracing::info!(
            tournament = %recorded.tournament_id,
            user = %recorded.user,
            boards = ?recorded.boards,
            by = %who.user,
            "arbiter assigned"
        );
        Ok(Response::new(recorded))
    }

    async fn list_assignments(
        &self,
        request: Request<ListAssignmentsRequest>,
    ) -> Result<Response<ListAssignmentsResponse>, Status> {
        let reader = self.auth.identify_reader(request.metadata()).await?;
        let tournament = request.into_inner().tournament_id;
        check_read(&reader, &tournament)?;
        let assignments = self
            .auth
            .assignments_of(&tournament)
            .iter()
            .map(assignments::to_proto)
            .collect();
        // Who rules where is for those who rule in the tournament (the arbiters' user names
        // are half of their credentials): not for observers, operators or open reads.
        let rules_here = reader
            .as_ref()
            .is_some_and(|who| who.rules_on(&tournament).is_some());
        let arbiters = if rules_here {
            self.auth.arbiters_of(&tournament)
        } else {
            Vec::new()
        };
        let arbiters = arbiters
            .into_iter()
            .map(|a| ArbiterBoards {
                user: a.user,
                display_name: a.display_name,
                every_board: a.boards == BoardsRuled::Every,
                boards: match a.boards {
                    BoardsRuled::Every => Vec::new(),
                    BoardsRuled::These(boards) => boards,
                },
                assignment: a.assignment.as_ref().map(assignments::to_proto),
            })
            .collect();
        Ok(Response::new(ListAssignmentsResponse {
            assignments,
            arbiters,
        }))
    }

    async fn set_broadcast_delay(
        &self,
        request: Request<SetBroadcastDelayRequest>,
    ) -> Result<Response<BroadcastDelay>, Status> {
        let who = self.auth.identify(request.metadata()).await?;
        let request = request.into_inner();
        let request_id = required_request_id(&request.request_id)?.to_owned();
        boardcast_game::validate_tournament_id(&request.tournament_id)
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
        // The delay is the organiser's: whoever may set up the tournament's games sets it.
        who.may(Operation::SetUp {
            tournament: &request.tournament_id,
        })
        .map_err(denied)?;
        if request.delay_ms > MAX_BROADCAST_DELAY_MS {
            return Err(Status::invalid_argument(format!(
                "a broadcast delay of {} s is too long: at most 60 minutes",
                request.delay_ms / 1000
            )));
        }
        let in_force = recorded_delay(&self.js, &request.tournament_id, request.round)
            .await
            .map_err(|e| Status::unavailable(format!("reading the delay in force: {e:#}")))?;
        let may_lower = who.may(Operation::LowerDelay {
            tournament: &request.tournament_id,
        });
        if request.delay_ms < in_force {
            may_lower.clone().map_err(denied)?;
        }
        let delay = BroadcastDelay {
            tournament_id: request.tournament_id.clone(),
            round: request.round,
            delay_ms: request.delay_ms,
            set_by: who.user.clone(),
            set_unix_ms: boardcast_kit::now_unix_ms(),
            request_id: request_id.clone(),
            may_lower: may_lower.is_ok(),
        };
        // The request id is the message id: a retry within the stream's duplicate window is
        // stored once.
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("Nats-Msg-Id", request_id.as_str());
        self.js
            .publish_with_headers(
                delay_subject(&request.tournament_id),
                headers,
                delay.encode_to_vec().into(),
            )
            .await
            .map_err(|e| Status::unavailable(format!("recording the delay on NATS: {e}")))?
            .await
            .map_err(|e| Status::unavailable(format!("recording the delay on NATS: {e}")))?;
        tracing::info!(
            tournament = %delay.tournament_id,
            round = delay.round,
            delay_ms = delay.delay_ms,
            by = %who.user,
            "broadcast delay set"
        );
        Ok(Response::new(delay))
    }
}

/// The longest broadcast delay (as lichess allows).
const MAX_BROADCAST_DELAY_MS: u64 = 60 * 60 * 1000;

/// The delay recorded for the tournament's `round` (0: the tournament's own, for every round
/// without one), 0 when none is: the round's last record, else the tournament's. The tournament's
/// delays are few, read one by one.
async fn recorded_delay(
    js: &async_nats::jetstream::Context,
    tournament_id: &str,
    round: u32,
) -> anyhow::Result<u64> {
    let stream = js.get_stream(boardcast_kit::nats::DELAYS_STREAM).await?;
    let subject = delay_subject(tournament_id);
    let (mut of_round, mut of_tournament) = (None, None);
    let mut seq = 1;
    while let Some(message) = boardcast_kit::nats::next_message(&stream, seq, &subject).await? {
        seq = message.sequence.saturating_add(1);
        let Ok(delay) = BroadcastDelay::decode(message.payload.as_ref()) else {
            continue;
        };
        match delay.round {
            0 => of_tournament = Some(delay.delay_ms),
            r if r == round => of_round = Some(delay.delay_ms),
            _ => {}
        }
    }
    Ok(of_round.or(of_tournament).unwrap_or(0))
}

/// INVALID_ARGUMENT unless a game may be put on board `board_id` now (see
/// `boardcast_game::validate_board_id`).
fn board_may_take_games(board_id: &str) -> Result<(), Status> {
    boardcast_game::validate_board_id(board_id).map_err(|e| match e {
        GameError::InvalidGame(m) => Status::invalid_argument(m),
        other => Status::internal(other.to_string()),
    })
}

/// The game's id and first event, or INVALID_ARGUMENT saying what is wrong with the pairing.
fn decide_start(
    info: &GameStarted,
    actor: &str,
    request_id: &str,
) -> Result<(String, NewEvent), Status> {
    Game::decide_start(info, actor, request_id).map_err(|e| match e {
        GameError::InvalidGame(m) => Status::invalid_argument(m),
        other => Status::internal(other.to_string()),
    })
}

impl GameApi {
    /// The game log's records on `subject` from stream sequence `start`, then live, checked as
    /// every reader checks them (`game_log::read_records`); what is refused or does not follow
    /// on is logged here, once.
    async fn log_records(
        &self,
        subject: &str,
        start: u64,
    ) -> Result<impl Stream<Item = Result<Read, Status>> + Send + use<>, Status> {
        let unavailable = |e: String| Status::unavailable(e);
        let stream = self
            .js
            .get_stream(GAMES_STREAM)
            .await
            .map_err(|e| unavailable(e.to_string()))?;
        let records = game_log::read_records(&stream, subject, start, self.store.trusted_keys())
            .await
            .map_err(|e| unavailable(e.to_string()))?;
        Ok(records.map(|item| {
            let read = item.map_err(|e| Status::unavailable(e.to_string()))?;
            match &read {
                Read::Refused { subject, why, .. } => {
                    tracing::warn!(%subject, "refused a game log record: {why}")
                }
                Read::Break(at) => tracing::error!("{at}"),
                Read::Record { .. } => {}
            }
            Ok(read)
        }))
    }

    /// What setting up `info` takes: creating its game, or (revising) setting the game that
    /// exists up again, checked as far as can be before anything is recorded, on what this
    /// instance has folded (the caller brought it up to the log first: `refresh`).
    async fn plan_set_up(
        &self,
        set_up: &SetUp<'_>,
        info: GameStarted,
    ) -> Result<SetUpStep, Status> {
        let (game_id, event) = decide_start(&info, &set_up.who.user, set_up.request_id)?;
        if set_up.options.revise
            && let Some(decided) = self
                .store
                .with_game(&game_id, |g| {
                    g.decide_set_up_revision(&info, &set_up.who.user, set_up.request_id)
                        .map(|events| (!events.is_empty(), g.board_id().to_owned()))
                })
                .await
        {
            if let Some(not_followed) = self.store.not_followed(&game_id).await {
                return Err(Status::failed_precondition(format!(
                    "game {game_id}: its log goes on past stream sequence {} here ({}): \
                     nothing is set up again on it until it is mended (`boardcast fork`)",
                    not_followed.from_stream_seq, not_followed.reason
                )));
            }
            let (changes, from_board) = decided.map_err(|e| revision_refused(&game_id, e))?;
            if changes && from_board != info.board_id {
                board_may_take_games(&info.board_id)?;
                self.check_board_takes(set_up, &info, &game_id).await?;
            }
            return Ok(SetUpStep::Revise {
                game_id,
                info,
                changes,
                from_board,
            });
        }
        if let Some((by, on_board)) = self
            .store
            .with_game(&game_id, |g| {
                (g.started_by_request().to_owned(), g.info().board_id.clone())
            })
            .await
            && by != set_up.request_id
        {
            return Err(created_by_another(&game_id, &on_board));
        }
        board_may_take_games(&info.board_id)?;
        self.check_board_takes(set_up, &info, &game_id).await?;
        Ok(SetUpStep::Create {
            game_id,
            event: Box::new(event),
            info,
        })
    }

    /// Brings this instance up to what the game log holds now.
    async fn refresh(&self) -> Result<(), Status> {
        self.store
            .refresh()
            .await
            .map_err(|e| Status::unavailable(e.to_string()))
    }

    /// Records a planned set-up. A game arriving on a board is checked against the board once
    /// more: its game may have begun since the round was checked.
    async fn set_up(
        &self,
        set_up: &SetUp<'_>,
        step: SetUpStep,
    ) -> Result<CreateGameResponse, Status> {
        let (game_id, info) = match step {
            SetUpStep::Create {
                game_id,
                event,
                info,
            } => {
                self.check_board_takes(set_up, &info, &game_id).await?;
                return self.create(game_id, *event, &info, set_up.request_id).await;
            }
            SetUpStep::Revise {
                game_id,
                changes: false,
                ..
            } => {
                return Ok(CreateGameResponse {
                    game_id,
                    created: false,
                    revised: false,
                });
            }
            SetUpStep::Revise {
                game_id,
                info,
                from_board,
                ..
            } => {
                if from_board != info.board_id {
                    self.check_board_takes(set_up, &info, &game_id).await?;
                }
                (game_id, info)
            }
        };
        // Decided again on the game as it is then: a move seen since refuses what it no longer
        // allows.
        let recorded = std::sync::atomic::AtomicBool::new(false);
        self.store
            .decide_on_game(&game_id, boardcast_kit::now_unix_ms(), |g| {
                let events =
                    g.decide_set_up_revision(&info, &set_up.who.user, set_up.request_id)?;
                recorded.store(!events.is_empty(), std::sync::atomic::Ordering::Relaxed);
                Ok(events)
            })
            .await
            .map_err(append_status)?
            .ok_or_else(|| Status::not_found(format!("no game {game_id:?}")))?
            .map_err(|e| revision_refused(&game_id, e))?;
        let revised = recorded.load(std::sync::atomic::Ordering::Relaxed);
        if revised {
            tracing::info!(%game_id, board = %info.board_id, actor = %set_up.who.user, "game set up again");
        }
        Ok(CreateGameResponse {
            game_id,
            created: false,
            revised,
        })
    }

    /// A board's observations go to the latest game set up on it: refuse to set up another game
    /// there while the board's game is unfinished, unless the operator says to replace it (or
    /// it is a game of the same request that has not begun, which the request sets up
    /// elsewhere). Replacing a game takes the board from its tournament: the caller must be able
    /// to set up that tournament's games too (an operator of a side event cannot take a
    /// main-event board).
    async fn check_board_takes(
        &self,
        set_up: &SetUp<'_>,
        info: &GameStarted,
        game_id: &str,
    ) -> Result<(), Status> {
        let live = self
            .store
            .with_board(&info.board_id, |g| {
                (
                    g.game_id().to_owned(),
                    g.is_over(),
                    g.has_begun(),
                    g.info().tournament_id.clone(),
                )
            })
            .await;
        match live {
            Some((live_id, false, _, _)) if live_id == game_id => Ok(()),
            Some((live_id, false, begun, _)) if set_up.round_games.contains(&live_id) => {
                if begun {
                    Err(Status::failed_precondition(format!(
                        "board {:?} carries game {live_id} of this set-up, which has begun: no \
                         other game can be put there while it is on it",
                        info.board_id
                    )))
                } else {
                    Ok(())
                }
            }
            Some((live_id, false, _, _)) if !set_up.options.replace_unfinished => {
                Err(Status::failed_precondition(format!(
                    "board {:?} still carries game {live_id}, which is not finished; \
                     record its result first, or replace it (`boardcast pair \
                     --replace-unfinished`, replace_unfinished in the API)",
                    info.board_id
                )))
            }
            Some((live_id, false, _, tournament)) => set_up
                .who
                .may(Operation::SetUp {
                    tournament: &tournament,
                })
                .map_err(|e| {
                    Status::permission_denied(format!(
                        "board {:?} carries game {live_id} of tournament {tournament:?}, \
                         not finished; replacing it: {e}",
                        info.board_id
                    ))
                }),
            _ => Ok(()),
        }
    }

    /// Appends a game's first event; the same game created by the same request (a retry) is not
    /// an error.
    async fn create(
        &self,
        game_id: String,
        event: NewEvent,
        info: &GameStarted,
        request_id: &str,
    ) -> Result<CreateGameResponse, Status> {
        let created = self
            .store
            .create(&game_id, event, boardcast_kit::now_unix_ms())
            .await
            .map_err(append_status)?;
        if created {
            tracing::info!(%game_id, board = %info.board_id, "game created");
        } else {
            // The board's position in the ingest stream moves on; the pairing must not.
            let same = self
                .store
                .with_game(&game_id, |g| {
                    if g.started_by_request() != request_id {
                        return Err(created_by_another(&game_id, &g.info().board_id));
                    }
                    let stored = g.info();
                    // The board's position in the ingest stream and how the service reads the
                    // game are the service's own.
                    Ok(GameStarted {
                        board_seq_before: stored.board_seq_before,
                        interpretation: stored.interpretation,
                        ..info.clone()
                    } == *stored)
                })
                .await
                .unwrap_or(Ok(false))?;
            if !same {
                return Err(Status::already_exists(format!(
                    "game {game_id} already exists with other details; to set it up again \
                     with these, revise it (`boardcast pair --revise`, revise in the API)"
                )));
            }
        }
        Ok(CreateGameResponse {
            game_id,
            created,
            revised: false,
        })
    }

    /// The board's last observation in the ingest stream (0 when it has sent none): where a
    /// game set up on it now starts following it.
    async fn board_seq_now(&self, board_id: &str) -> Result<u64, Status> {
        if boardcast_game::validate_board_id(board_id).is_err() {
            // The set-up is refused: `board_may_take_games` says why.
            return Ok(0);
        }
        boardcast_kit::nats::last_board_seq(
            &self.js,
            board_id,
            boardcast_kit::nats::BoardRead::Leader,
        )
        .await
        .map_err(|e| Status::unavailable(format!("{e:#}")))
    }

    /// The game's last log entry, or NOT_FOUND, or PERMISSION_DENIED when the reader may not
    /// read its tournament. A game this instance does not know yet may have just been created
    /// by another instance: the log is read once more before saying so.
    async fn require_readable_game(
        &self,
        reader: &Option<boardcast_access::Identity>,
        game_id: &str,
    ) -> Result<u64, Status> {
        let (last, tournament) = self
            .known_game(game_id, |g| {
                (g.last_game_seq(), g.info().tournament_id.clone())
            })
            .await?;
        check_read(reader, &tournament)?;
        Ok(last)
    }

    /// Runs `f` on the game, or NOT_FOUND (see `require_game`).
    async fn known_game<T>(&self, game_id: &str, f: impl Fn(&Game) -> T) -> Result<T, Status> {
        if let Some(found) = self.store.with_game(game_id, &f).await {
            return Ok(found);
        }
        // Known from its log, but nothing of it is folded here (its first record was missed, or
        // folding it panicked): not "no game". Why is not said: whose game it is, and so who
        // may read it, is not known here (the game service's log and metrics say).
        let not_readable_yet = || {
            Status::unavailable(format!(
                "game {game_id} is in the game log but cannot be read here yet"
            ))
        };
        if self.store.not_followed(game_id).await.is_some() {
            return Err(not_readable_yet());
        }
        // Not a subject to look up (a `*` in it would match others).
        if !boardcast_game::could_be_game_id(game_id) {
            return Err(Status::not_found(format!("no game {game_id:?}")));
        }
        // Perhaps set up a moment ago by another instance: one look at the game's own subject
        // says whether it is in the log at all, without waiting on appends in progress here;
        // only a game there is caught up with.
        let in_log = self
            .store
            .in_log(game_id)
            .await
            .map_err(|e| Status::unavailable(e.to_string()))?;
        if !in_log {
            return Err(Status::not_found(format!("no game {game_id:?}")));
        }
        self.refresh().await?;
        match self.store.with_game(game_id, f).await {
            Some(found) => Ok(found),
            None => Err(not_readable_yet()),
        }
    }
}

/// FAILED_PRECONDITION for a set-up request that is not the one that created the game.
fn created_by_another(game_id: &str, board_id: &str) -> Status {
    Status::failed_precondition(format!(
        "game {game_id} on board {board_id:?} was already set up by another request; only a \
         retry with that request's id is answered with it; to correct its set-up, revise it \
         (`boardcast pair --revise`, revise in the API)"
    ))
}

/// How a set-up treats games and boards that are taken.
#[derive(Clone, Copy)]
struct SetUpOptions {
    /// A game that exists with other details is set up again.
    revise: bool,
    /// A board's unfinished game of another round gives the board up.
    replace_unfinished: bool,
}

/// One `CreateGame` or `PairRound` request, shared by its games.
struct SetUp<'a> {
    who: &'a boardcast_access::Identity,
    request_id: &'a str,
    options: SetUpOptions,
    /// The games the request revises, which may change boards among themselves.
    round_games: HashSet<String>,
}

/// One game's part of a set-up, checked, to be recorded.
enum SetUpStep {
    Create {
        game_id: String,
        event: Box<NewEvent>,
        info: GameStarted,
    },
    Revise {
        game_id: String,
        info: GameStarted,
        /// Whether the revision changes anything (else nothing is recorded).
        changes: bool,
        /// The board the game is on now.
        from_board: String,
    },
}

impl SetUpStep {
    /// The board the step puts its game on.
    fn board(&self) -> &str {
        match self {
            SetUpStep::Create { info, .. } | SetUpStep::Revise { info, .. } => &info.board_id,
        }
    }

    /// The board the step takes its game from, when it moves one.
    fn leaves(&self) -> Option<&str> {
        match self {
            SetUpStep::Revise {
                info,
                from_board,
                changes: true,
                ..
            } if *from_board != info.board_id => Some(from_board),
            _ => None,
        }
    }
}

/// `steps` in an order that records a game leaving a board before the one arriving there, so
/// that no board carries a game the request has set up elsewhere while a step is pending (only
/// games exchanging boards in a ring cannot all be: then in the pairings' order).
fn recording_order<T>(mut steps: Vec<(T, SetUpStep)>) -> Vec<(T, SetUpStep)> {
    let mut ordered = Vec::with_capacity(steps.len());
    while !steps.is_empty() {
        let next = (0..steps.len())
            .find(|&i| {
                let board = steps[i].1.board();
                !steps
                    .iter()
                    .enumerate()
                    .any(|(j, (_, other))| j != i && other.leaves() == Some(board))
            })
            .unwrap_or(0);
        ordered.push(steps.remove(next));
    }
    ordered
}

/// Why a revision is refused, as a status naming the game.
fn revision_refused(game_id: &str, refused: RevisionRefused) -> Status {
    match refused {
        RevisionRefused::Invalid(GameError::InvalidGame(m)) => Status::invalid_argument(m),
        RevisionRefused::Invalid(other) => Status::internal(other.to_string()),
        RevisionRefused::Begun { .. } | RevisionRefused::MoveOnTheBoard => {
            Status::failed_precondition(format!("game {game_id}: {refused}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moving(game: &str, from: &str, to: &str) -> (String, SetUpStep) {
        let info = GameStarted {
            board_id: to.into(),
            ..Default::default()
        };
        (
            game.to_owned(),
            SetUpStep::Revise {
                game_id: game.into(),
                info,
                changes: true,
                from_board: from.into(),
            },
        )
    }

    fn order(steps: Vec<(String, SetUpStep)>) -> Vec<String> {
        recording_order(steps).into_iter().map(|(g, _)| g).collect()
    }

    #[test]
    fn a_game_leaving_a_board_is_recorded_before_the_one_arriving_there() {
        // A moves from b1 to b2, which B leaves for b3, which C leaves for b4.
        let chain = vec![
            moving("A", "b1", "b2"),
            moving("B", "b2", "b3"),
            moving("C", "b3", "b4"),
        ];
        assert_eq!(order(chain), ["C", "B", "A"]);
        // Two games exchanging boards: in the pairings' order.
        let swap = vec![moving("A", "b1", "b2"), moving("B", "b2", "b1")];
        assert_eq!(order(swap), ["A", "B"]);
    }

    #[test]
    fn a_finished_board_is_played_on_when_it_shows_another_game() {
        let board = |fen: &str| fen.parse::<shakmaty::Board>().expect("a placement");
        let ended = board("6k1/5ppp/8/8/8/8/5PPP/3R2K1");
        let mut turned = ended.clone();
        turned.rotate_180();
        let start = shakmaty::Board::new();
        let next_game = board("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR");
        let in_the_box = board("8/8/8/8/8/8/8/8");
        let half_cleared = board("8/8/8/8/8/8/5PPP/3R4");
        assert!(shows_a_game_in_progress(&next_game, &ended));
        for not_played in [&ended, &turned, &start, &in_the_box, &half_cleared] {
            assert!(
                !shows_a_game_in_progress(not_played, &ended),
                "{not_played}"
            );
        }
    }
}

//! Follows the authoritative game log (never the broadcast service's display data: Article 6.14)
//! and keeps, per game, the game folded with the aggregate, its alerts (`GameAlerts`) and its
//! timeline; every alert raised or changed goes out on a broadcast channel for the live queues.
//!
//! Everything here is a fold of the log: each instance of the service, started at any time,
//! arrives at the same alerts with the same versions. An alert's version is the log entry that
//! last changed it, and the JetStream sequence of that entry orders every change of every game,
//! so a page that reconnects is sent exactly what it missed.

use std::{
    collections::BTreeMap,
    panic::AssertUnwindSafe,
    sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard},
    time::Duration,
};

use boardcast_game::signing::TrustedKeys;
use boardcast_game::timeline::{self, FoldedGame, TimelineEntry};
use boardcast_game::wording;
use boardcast_game::{
    Game, GameError, OpenedRecord, alerts::GameAlerts, device::DeviceState, events::GameEventRecord,
};
use boardcast_kit::game_log::LogBreak;
use tokio::sync::{broadcast, watch};

mod reader;
#[cfg(test)]
mod tests;
mod views;

pub use reader::follow;
pub use views::{
    AlertKey, AlertView, AtError, BoardView, Change, Damage, FollowStatus, GameDetail,
    PendingPenalty, PositionView, RoundView,
};
use views::{alert_view, move_views, player_name, provisional_words, side_to_move};

/// One game as the service keeps it.
struct GameEntry {
    game_id: String,
    folded: Option<FoldedGame>,
    alerts: GameAlerts,
    /// Each alert (by `raised_at`) as it stands, with the log entry that last changed it.
    alerts_shown: BTreeMap<u64, AlertView>,
    timeline: Vec<TimelineEntry>,
    /// The records as stored, to fold the game to any entry (`position_at`).
    records: Vec<GameEventRecord>,
    damage: Option<Damage>,
    /// Records refused (not signed by a trusted key, or not records at all), in words, the
    /// first `MAX_REFUSED_SHOWN`; the log goes on with the next record that continues the chain.
    refused: Vec<String>,
    /// How many were refused in all.
    refused_count: u64,
}

/// Refused records listed by name; more are only counted (a flood must not grow memory).
const MAX_REFUSED_SHOWN: usize = 100;

impl GameEntry {
    fn refuse(&mut self, reason: String) {
        // The same record refused again, as the game's log is read again: counted once.
        if self.refused.contains(&reason) {
            return;
        }
        self.refused_count += 1;
        if self.refused.len() < MAX_REFUSED_SHOWN {
            self.refused.push(reason);
        }
    }

    fn new(game_id: &str) -> GameEntry {
        GameEntry {
            game_id: game_id.to_owned(),
            folded: None,
            alerts: GameAlerts::new(),
            alerts_shown: BTreeMap::new(),
            timeline: Vec::new(),
            records: Vec::new(),
            damage: None,
            refused: Vec::new(),
            refused_count: 0,
        }
    }

    fn last_game_seq(&self) -> u64 {
        self.timeline.last().map(|e| e.game_seq).unwrap_or(0)
    }

    fn alert_views(&self) -> impl Iterator<Item = &AlertView> {
        self.alerts_shown.values()
    }

    /// Folds the next record; returns the alerts it raised or changed.
    fn fold(&mut self, opened: OpenedRecord, stream_seq: u64) -> Result<Vec<AlertView>, GameError> {
        let swapped = match &mut self.folded {
            None => {
                let (folded, swapped) = FoldedGame::start(&opened)?;
                self.folded = Some(folded);
                swapped
            }
            Some(folded) => folded.apply(&opened)?,
        };
        let event = opened.event();
        let Some(folded) = &self.folded else {
            return Ok(Vec::new());
        };
        let changed = self.alerts.fold(event, &folded.game);
        let mut views = Vec::new();
        let mut raises_alert = false;
        for index in changed {
            let Some(alert) = self.alerts.alerts().get(index) else {
                continue;
            };
            raises_alert |= alert.raised_at == event.game_seq;
            let view = alert_view(&folded.game, alert, event.game_seq, stream_seq);
            self.alerts_shown.insert(alert.raised_at, view.clone());
            views.push(view);
        }
        views.sort_by_key(|v| v.raised_at);
        views.dedup_by_key(|v| v.raised_at);
        self.timeline.push(TimelineEntry::of(
            event,
            swapped,
            raises_alert,
            stream_seq,
            Some(&folded.game.rules().edition.to_string()),
        ));
        self.records.push(opened.record().clone());
        Ok(views)
    }

    fn board_view(&self) -> Option<BoardView> {
        let folded = self.folded.as_ref()?;
        let game = &folded.game;
        let info = game.info();
        let status = game.board_status();
        let offline = matches!(
            status.state,
            DeviceState::NotResponding | DeviceState::Disconnected
        );
        let last_move = game
            .completed_moves()
            .last()
            .map(|m| format!("{} {}", timeline::move_number(m.event.ply), m.event.san))
            .unwrap_or_default();
        Some(BoardView {
            game_id: self.game_id.clone(),
            tournament_id: info.tournament_id.clone(),
            event_name: info.event_name.clone(),
            round: info.round,
            board_number: info.board_number,
            board_id: info.board_id.clone(),
            white: player_name(&info.white),
            black: player_name(&info.black),
            fen: boardcast_game::fen(game.position()),
            to_move: side_to_move(game),
            completed_plies: game.completed_moves().len(),
            last_move,
            provisional: provisional_words(game),
            clocks: folded.clocks,
            state: if self.damage.is_some() {
                "damaged"
            } else if game.is_over() {
                "finished"
            } else if offline {
                "offline"
            } else {
                "playing"
            },
            result: game.result_token(),
            termination: game
                .result()
                .and_then(|(_, t)| boardcast_game::wording::termination_name(t))
                .map(str::to_owned)
                .unwrap_or_default(),
            device: timeline::device_state_name(status.state),
            battery_percent: status.battery_percent,
            open_alerts: self.alert_views().filter(|a| a.is_open()).count(),
            new_alerts: self.alert_views().filter(|a| a.status == "new").count(),
            last_game_seq: self.last_game_seq(),
            damage: self.damage.clone(),
        })
    }
}

/// Which alerts a live queue shows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AlertFilter {
    pub tournament: Option<String>,
    pub round: Option<u32>,
    pub game: Option<String>,
}

impl AlertFilter {
    pub fn matches(&self, alert: &AlertView) -> bool {
        self.tournament
            .as_ref()
            .is_none_or(|t| *t == alert.tournament_id)
            && self.round.is_none_or(|r| r == alert.round)
            && self.game.as_ref().is_none_or(|g| *g == alert.game_id)
    }

    pub fn matches_board(&self, board: &BoardView) -> bool {
        self.tournament
            .as_ref()
            .is_none_or(|t| *t == board.tournament_id)
            && self.round.is_none_or(|r| r == board.round)
            && self.game.as_ref().is_none_or(|g| *g == board.game_id)
    }
}

struct State {
    games: BTreeMap<String, GameEntry>,
    last_stream_seq: u64,
    status: FollowStatus,
    /// The keys whose signatures are accepted: a record signed by none of them damages its
    /// game's log from there on.
    trusted: TrustedKeys,
}

/// Every game of the log as the arbiters see it.
pub struct Games {
    state: RwLock<State>,
    changes: broadcast::Sender<Change>,
    folded: watch::Sender<u64>,
}

/// The game id in a subject `boardcast.game.<game>.events`.
fn game_of_subject(subject: &str) -> String {
    boardcast_kit::nats::game_of_subject(subject)
        .unwrap_or(subject)
        .to_owned()
}

impl Games {
    pub fn new(trusted: TrustedKeys) -> Games {
        Games {
            state: RwLock::new(State {
                games: BTreeMap::new(),
                last_stream_seq: 0,
                status: FollowStatus::Connecting,
                trusted,
            }),
            changes: broadcast::channel(4096).0,
            folded: watch::channel(0).0,
        }
    }

    // A panic while folding is caught (see `fold_message`), so a poisoned lock still holds
    // consistent data: the game concerned is marked damaged.
    fn read(&self) -> RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Change> {
        self.changes.subscribe()
    }

    pub fn status(&self) -> FollowStatus {
        self.read().status.clone()
    }

    fn set_status(&self, status: FollowStatus) {
        self.write().status = status;
    }

    /// The games whose log is damaged, with the keys their records are checked against.
    fn damaged(&self) -> (Vec<String>, TrustedKeys) {
        let state = self.read();
        let games = state
            .games
            .iter()
            .filter(|(_, entry)| entry.damage.is_some())
            .map(|(game_id, _)| game_id.to_string())
            .collect();
        (games, state.trusted.clone())
    }

    pub fn last_stream_seq(&self) -> u64 {
        self.read().last_stream_seq
    }

    pub fn game_count(&self) -> usize {
        self.read().games.len()
    }

    /// Alerts not resolved yet, all games together.
    pub fn open_alert_count(&self) -> u64 {
        let state = self.read();
        state
            .games
            .values()
            .map(|g| g.alerts.open().count() as u64)
            .sum()
    }

    /// Folds one message of the game log. Never fails: a record that cannot be folded marks
    /// its game damaged from that entry on ("log damaged at entry N") and is logged.
    pub fn fold_message(&self, stream_seq: u64, subject: &str, payload: &[u8]) {
        let changes = {
            let mut state = self.write();
            if stream_seq <= state.last_stream_seq {
                // Delivered again after the consumer was recreated.
                return;
            }
            state.last_stream_seq = stream_seq;
            fold_into(&mut state, stream_seq, subject, payload)
        };
        self.folded.send_replace(stream_seq);
        self.announce(changes);
    }

    /// Folds a game afresh from its records read again from the log (stream sequence and
    /// payload, in order, none after what was folded; an operator mended it): a record that
    /// does not follow on marks the game damaged.
    pub fn fold_mended<P: AsRef<[u8]>>(&self, subject: &str, records: &[(u64, P)]) {
        let (changes, last_stream_seq) = {
            let mut state = self.write();
            // Folded afresh: what was folded of it may hold a record the log no longer holds.
            state.games.remove(&game_of_subject(subject));
            let changes: Vec<Change> = records
                .iter()
                .flat_map(|(stream_seq, payload)| {
                    fold_into(&mut state, *stream_seq, subject, payload.as_ref())
                })
                .collect();
            (changes, state.last_stream_seq)
        };
        // Whoever waits for a record of it finds it folded now.
        self.folded.send_replace(last_stream_seq);
        self.announce(changes);
    }

    fn announce(&self, changes: Vec<Change>) {
        for change in changes {
            // Nobody listening is fine.
            let _ = self.changes.send(change);
        }
    }

    /// Tournaments' rounds the `readable` predicate lets through.
    pub fn rounds(&self, readable: &dyn Fn(&str) -> bool) -> Vec<RoundView> {
        let state = self.read();
        let mut rounds: BTreeMap<(String, u32), RoundView> = BTreeMap::new();
        for entry in state.games.values() {
            let Some(board) = entry.board_view() else {
                continue;
            };
            if !readable(&board.tournament_id) {
                continue;
            }
            let round = rounds
                .entry((board.tournament_id.clone(), board.round))
                .or_insert_with(|| RoundView {
                    tournament_id: board.tournament_id.clone(),
                    event_name: board.event_name.clone(),
                    round: board.round,
                    games: 0,
                    finished: 0,
                    offline: 0,
                    open_alerts: 0,
                    new_alerts: 0,
                });
            round.games += 1;
            round.finished += usize::from(board.state == "finished");
            round.offline += usize::from(board.state == "offline");
            round.open_alerts += board.open_alerts;
            round.new_alerts += board.new_alerts;
        }
        rounds.into_values().collect()
    }

    /// The boards `filter` selects, by round and board number.
    pub fn boards(&self, filter: &AlertFilter) -> Vec<BoardView> {
        let state = self.read();
        let mut boards: Vec<BoardView> = state
            .games
            .values()
            .filter_map(GameEntry::board_view)
            .filter(|b| filter.matches_board(b))
            .collect();
        boards.sort_by(|a, b| {
            (&a.tournament_id, a.round, a.board_number).cmp(&(
                &b.tournament_id,
                b.round,
                b.board_number,
            ))
        });
        boards
    }

    pub fn board(&self, game_id: &str) -> Option<BoardView> {
        self.read().games.get(game_id)?.board_view()
    }

    /// The tournament and board number of a game, for permission checks.
    pub fn tournament_of(&self, game_id: &str) -> Option<(String, u32)> {
        let state = self.read();
        let game = &state.games.get(game_id)?.folded.as_ref()?.game;
        Some((game.info().tournament_id.clone(), game.info().board_number))
    }

    pub fn game_detail(&self, game_id: &str) -> Option<GameDetail> {
        let state = self.read();
        let entry = state.games.get(game_id)?;
        let board = entry.board_view()?;
        let game = &entry.folded.as_ref()?.game;
        Some(GameDetail {
            board,
            moves: move_views(game),
            alerts: entry.alert_views().cloned().collect(),
            timeline: entry.timeline.clone(),
            refused_records: {
                let mut listed = entry.refused.clone();
                let more = entry.refused_count.saturating_sub(listed.len() as u64);
                if more > 0 {
                    listed.push(format!("… and {more} more"));
                }
                listed
            },
            pending_penalties: game
                .illegal_moves()
                .iter()
                .filter(|m| m.decided.is_none())
                .map(|m| {
                    let edition = game.rules().edition.to_string();
                    let (offender, kind, proposed_penalty) =
                        wording::illegal_move(&m.event, Some(&edition));
                    PendingPenalty {
                        game_seq: m.game_seq,
                        ply: m.event.ply,
                        offender,
                        kind,
                        proposed_penalty,
                        article: m.event.article.clone(),
                    }
                })
                .collect(),
            missing_observations: game
                .missing_observations()
                .iter()
                .map(|m| {
                    format!(
                        "observations {} to {} never arrived",
                        m.first_device_seq, m.last_device_seq
                    )
                })
                .collect(),
            setup_mismatches: game
                .setup_mismatches()
                .iter()
                .map(|m| format!("expected {}; seen {}. {}", m.expected, m.seen, m.fix))
                .collect(),
        })
    }

    /// The game's timeline entries after `after`.
    pub fn timeline_after(&self, game_id: &str, after: u64) -> Option<Vec<TimelineEntry>> {
        let state = self.read();
        let entry = state.games.get(game_id)?;
        Some(
            entry
                .timeline
                .iter()
                .filter(|e| e.game_seq > after)
                .cloned()
                .collect(),
        )
    }

    /// The game's entries recorded under a request id (an arbiter action and its effects).
    pub fn entries_of_request(&self, game_id: &str, request_id: &str) -> Vec<TimelineEntry> {
        let state = self.read();
        state
            .games
            .get(game_id)
            .map(|entry| {
                entry
                    .timeline
                    .iter()
                    .filter(|e| !request_id.is_empty() && e.request_id == request_id)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn last_game_seq(&self, game_id: &str) -> Option<u64> {
        Some(self.read().games.get(game_id)?.last_game_seq())
    }

    /// Waits until the game's log here reaches `game_seq` (true), or `timeout` passes (false).
    pub async fn wait_for(&self, game_id: &str, game_seq: u64, timeout: Duration) -> bool {
        let mut folded = self.folded.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if self.last_game_seq(game_id).unwrap_or(0) >= game_seq {
                return true;
            }
            match tokio::time::timeout_at(deadline, folded.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) | Err(_) => return false,
            }
        }
    }

    /// The game as it stood after log entry `game_seq`: its records folded up to it.
    pub fn position_at(&self, game_id: &str, game_seq: u64) -> Result<PositionView, AtError> {
        // Folded again without checking signatures: each was checked when it was first folded.
        let (records, words) = {
            let state = self.read();
            let entry = state
                .games
                .get(game_id)
                .ok_or_else(|| AtError::UnknownGame(game_id.to_owned()))?;
            let last = entry.records.len() as u64;
            if game_seq == 0 || game_seq > last {
                return Err(AtError::OutOfRange {
                    game_id: game_id.to_owned(),
                    asked: game_seq,
                    last,
                });
            }
            let words = entry
                .timeline
                .get(game_seq as usize - 1)
                .map(|e| e.words.clone())
                .unwrap_or_default();
            (entry.records[..game_seq as usize].to_vec(), words)
        };
        // Folded outside the lock: a long game takes a moment.
        let fold_error = |reason: String| AtError::Fold {
            game_id: game_id.to_owned(),
            asked: game_seq,
            reason,
        };
        let mut folded: Option<FoldedGame> = None;
        for record in records {
            let opened = Game::open(record).map_err(|e| fold_error(e.to_string()))?;
            match &mut folded {
                None => {
                    folded = Some(
                        FoldedGame::start(&opened)
                            .map_err(|e| fold_error(e.to_string()))?
                            .0,
                    )
                }
                Some(f) => {
                    f.apply(&opened).map_err(|e| fold_error(e.to_string()))?;
                }
            }
        }
        let folded = folded.ok_or_else(|| fold_error("no records".to_owned()))?;
        let game = &folded.game;
        Ok(PositionView {
            game_id: game_id.to_owned(),
            game_seq,
            fen: boardcast_game::fen(game.position()),
            to_move: side_to_move(game),
            completed_plies: game.completed_moves().len(),
            moves: move_views(game),
            provisional: provisional_words(game),
            clocks: folded.clocks,
            result: game.result_token(),
            words,
        })
    }

    /// The alerts a live queue is sent first, and the stream sequence they are complete up to
    /// (later changes come from `subscribe`). Without `after`: the open alerts. With `after` (a
    /// reconnecting page's last event): every alert changed after it, whatever its status.
    pub fn alerts_since(
        &self,
        filter: &AlertFilter,
        readable: &dyn Fn(&str) -> bool,
        after: Option<&AlertKey>,
    ) -> (Vec<AlertView>, u64) {
        let state = self.read();
        let mut alerts: Vec<AlertView> = state
            .games
            .values()
            .flat_map(GameEntry::alert_views)
            .filter(|a| filter.matches(a) && readable(&a.tournament_id))
            .filter(|a| match after {
                None => a.is_open(),
                Some(after) => a.key() > *after,
            })
            .cloned()
            .collect();
        alerts.sort_by_key(AlertView::key);
        (alerts, state.last_stream_seq)
    }

    /// The position in the change order of an SSE event id `<game_id>/<raised_at>/<version>`;
    /// `None` when this instance does not know it (then the page is sent the open alerts).
    pub fn key_of_event_id(&self, event_id: &str) -> Option<AlertKey> {
        let mut parts = event_id.rsplitn(3, '/');
        let version: u64 = parts.next()?.parse().ok()?;
        let raised_at: u64 = parts.next()?.parse().ok()?;
        let game_id = parts.next()?;
        let state = self.read();
        let entry = state.games.get(game_id)?;
        let stream_seq = entry
            .timeline
            .get(usize::try_from(version).ok()?.checked_sub(1)?)
            .filter(|e| e.game_seq == version)?
            .stream_seq;
        Some((stream_seq, game_id.to_owned(), raised_at))
    }
}

/// Folds one message into its game; returns the alerts it raised or changed and the game.
fn fold_into(state: &mut State, stream_seq: u64, subject: &str, payload: &[u8]) -> Vec<Change> {
    let subject_game = game_of_subject(subject);
    let trusted = &state.trusted;
    let entry = state
        .games
        .entry(subject_game.clone())
        .or_insert_with(|| GameEntry::new(&subject_game));
    let game_change = Change::Game {
        game_id: subject_game.as_str().into(),
        stream_seq,
    };
    if let Some(damage) = &mut entry.damage {
        // Whether the log was mended since is for `show_mended`.
        damage.entries_not_shown += 1;
        return vec![game_change];
    }
    // A message that is not a record the game service signed (garbage, an altered record, one
    // signed by another key or not at all) is refused and reported, and the log goes on: the
    // next record the game service writes continues the chain before it.
    let signed_before = entry.folded.as_ref().is_some_and(|f| f.game.is_signed());
    let opened = Game::read_stored(payload, trusted, signed_before)
        .map_err(|e| e.to_string())
        .and_then(|opened| {
            let event = opened.event();
            if event.game_id == subject_game {
                Ok(opened)
            } else {
                Err(format!(
                    "entry {} on the log of game {subject_game:?} names game {:?}",
                    event.game_seq, event.game_id
                ))
            }
        });
    let opened = match opened {
        Ok(opened) => opened,
        Err(refusal) => {
            let hint = boardcast_kit::game_log::untrusted_key_hint(&refusal.to_string())
                .map(|hint| format!("; {hint}"))
                .unwrap_or_default();
            tracing::error!(
                game = %subject_game,
                stream_seq,
                "refused a game log record: {refusal}{hint}"
            );
            entry.refuse(format!("stream sequence {stream_seq}: {refusal}"));
            return vec![game_change];
        }
    };
    // A signed record already folded, published again: nothing new.
    let at_game_seq = opened.event().game_seq;
    if at_game_seq <= entry.last_game_seq()
        && usize::try_from(at_game_seq)
            .ok()
            .and_then(|seq| entry.records.get(seq.checked_sub(1)?))
            .is_some_and(|folded| folded.hash == opened.record().hash)
    {
        return Vec::new();
    }
    let result = std::panic::catch_unwind(AssertUnwindSafe(|| entry.fold(opened, stream_seq)))
        .map_err(|panic| {
            format!(
                "folding it failed: {}",
                boardcast_kit::panic_text(panic.as_ref())
            )
        })
        .and_then(|folded| folded.map_err(|e| e.to_string()));
    match result {
        Ok(alerts) => {
            let mut changes: Vec<Change> = alerts
                .into_iter()
                .map(|a| Change::Alert(Arc::new(a)))
                .collect();
            changes.push(game_change);
            changes
        }
        // What this service does with a game whose log does not follow on: the dashboard shows
        // the game as it was before the break, damaged, and counts what arrives after it; the
        // game is read again every `game_log::MENDED_CHECK` (`show_mended`).
        Err(why) => {
            let at = LogBreak {
                game_id: subject_game.as_str().to_owned(),
                stream_seq,
                game_seq: at_game_seq,
                why,
            };
            tracing::error!(game = %at.game_id, stream_seq, "{at}; {}", at.remedy());
            entry.damage = Some(Damage {
                at_game_seq,
                message: format!("log damaged at entry {at_game_seq}: {}", at.why),
                reason: at.why,
                entries_not_shown: 0,
            });
            vec![game_change]
        }
    }
}

//! The display projection as the service runs it: follows the game log into the feeds, releases
//! what the delay allows, tells live connections, the NATS feed subjects and the lichess push what
//! changed, and stores it with the log position in the background.
//!
//! Nothing is written to disk between a record and the viewer: the stored state may lag what was
//! shown by one period of `store_changes`. A restart reads the log again from the stored position, which
//! shows again what was shown (the release point only moves forward with the clock; what was released
//! is stored before a delay is raised), under versions past any a viewer may have seen
//! (`Feeds::restore`).
//!
//! Display data only. Nothing on an arbiter's path reads it (Article 6.14: no claim may rest on
//! what monitors show).

use std::{
    collections::{BTreeMap, HashMap},
    sync::{
        Arc, Mutex, RwLock, RwLockReadGuard,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use anyhow::Context as _;
use async_nats::jetstream;
use boardcast_feeds::{Delays, Feeds, RoundKey};
use boardcast_game::events::GameEventRecord;
use boardcast_game::signing::TrustedKeys;
use boardcast_kit::game_log::{self, LogBreak};
use boardcast_kit::nats::{GAMES_STREAM, GAMES_SUBJECTS};
use futures::StreamExt as _;
use prost::Message as _;
use tokio::sync::{Notify, broadcast, mpsc};

use crate::state::State;

/// A change for live connections: the game's JSON at the round's new version, and what changed
/// since its previous version (`boardcast_feeds::GameDelta`) when that can be sent instead.
#[derive(Debug, Clone)]
pub struct Update {
    pub game_id: String,
    pub version: u64,
    pub json: Arc<str>,
    pub delta: Option<Arc<str>>,
}

/// What live connections to a round are told: a game changed, or the round's delay did (the
/// pages count the clocks on the delayed time line, so they need the new one at once).
#[derive(Debug, Clone)]
pub enum LiveEvent {
    Game(Update),
    DelayChanged,
}

/// How many updates a slow live connection may fall behind before it is sent the round afresh.
const LIVE_BACKLOG: usize = 4096;

/// A game's update on its NATS feed subject.
pub type FeedUpdate = (String, bytes::Bytes);

/// How many NATS feed updates may wait for a publisher that cannot keep up (NATS unreachable; two
/// per change, whole and as a delta): past that an update is dropped with a warning; the game's
/// next update on the feed subject carries its whole state, its next delta does not apply.
pub const FEED_QUEUE: usize = 65_536;

/// Publishes the feed updates one after the other, so that a game's subject carries them in the
/// order they were released (one task per update could reorder them).
pub async fn publish_feed_updates(
    nats: async_nats::Client,
    mut updates: mpsc::Receiver<FeedUpdate>,
) {
    while let Some((subject, payload)) = updates.recv().await {
        if let Err(e) = nats.publish(subject.clone(), payload).await {
            tracing::warn!(%subject, "publishing a feed update: {e}");
        }
    }
}

pub struct Projection {
    feeds: RwLock<Feeds>,
    state: State,
    /// The last game log record folded (stream sequence).
    stream_seq: AtomicU64,
    /// Caught up with the log as it was when the service started.
    ready: AtomicBool,
    /// Live connections per round.
    live: Mutex<HashMap<RoundKey, broadcast::Sender<LiveEvent>>>,
    /// Woken whenever a round's feed changes (the lichess push waits on it).
    pub changed: Notify,
    /// Where the changes go to be published for other venue systems (core NATS, JSON), in the
    /// order they were released: one queue, one publisher (`publish_feed_updates`).
    nats: Option<mpsc::Sender<FeedUpdate>>,
    /// Games whose log does not follow on (`game_log::LogBreak`): nothing of them past the
    /// break is shown; read again every `game_log::MENDED_CHECK`, so that one an operator
    /// mended (`boardcast fork keep`) is shown as mended even when no record of it comes any
    /// more.
    not_following_on: Mutex<BTreeMap<String, LogBreak>>,
    /// Held by a store from taking the changes to writing them, so that two stores (the
    /// timer's, a delay change's) land in the order their changes were taken.
    writing: Mutex<()>,
}

pub fn now_unix_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The NATS subject of a game's live updates, each the game whole: for readers that join at any
/// moment and keep no copy.
pub fn feed_subject(round: &RoundKey, board_number: u32) -> String {
    format!(
        "boardcast.feed.{}.{}.{board_number}",
        round.tournament_id, round.round
    )
}

/// The NATS subject of a game's live updates as deltas (`{"type":"delta","delta":…}`), or the
/// game whole (`{"type":"game","game":…}`) when a change is no delta: for readers that keep a
/// copy, as the WebSocket's messages without a cursor (NATS has no resuming).
pub fn delta_subject(round: &RoundKey, board_number: u32) -> String {
    format!(
        "boardcast.delta.{}.{}.{board_number}",
        round.tournament_id, round.round
    )
}

impl Projection {
    /// Resumes from the stored state.
    pub fn open(
        state: State,
        delays: Delays,
        trusted: TrustedKeys,
        nats: Option<mpsc::Sender<FeedUpdate>>,
    ) -> anyhow::Result<Projection> {
        let stored = state.read()?;
        let feeds = Feeds::restore(delays, trusted, stored.games, stored.rounds, state.run())
            .context("reading the stored feed state")?;
        Ok(Projection {
            feeds: RwLock::new(feeds),
            state,
            stream_seq: AtomicU64::new(stored.stream_seq),
            ready: AtomicBool::new(false),
            live: Mutex::new(HashMap::new()),
            changed: Notify::new(),
            nats,
            not_following_on: Mutex::new(BTreeMap::new()),
            writing: Mutex::new(()),
        })
    }

    pub fn read(&self) -> RwLockReadGuard<'_, Feeds> {
        self.feeds.read().unwrap_or_else(|e| e.into_inner())
    }

    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// Live connections to the rounds' feeds, all rounds together.
    pub fn subscriber_count(&self) -> u64 {
        let live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        live.values()
            .map(|sender| sender.receiver_count() as u64)
            .sum()
    }

    /// Live updates of a round from now on; `None` for a round nothing of which is shown, for
    /// which nothing is kept (a made-up name in a URL costs nothing).
    pub fn subscribe(&self, round: &RoundKey) -> Option<broadcast::Receiver<LiveEvent>> {
        if !self.read().shows_round(round) {
            return None;
        }
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        Some(
            live.entry(round.clone())
                .or_insert_with(|| broadcast::channel(LIVE_BACKLOG).0)
                .subscribe(),
        )
    }

    /// Sets the delays from now on; a lower delay releases what is due at once. What was
    /// released is stored first: with a raised delay, a restart would not release it again.
    pub fn set_delays(&self, delays: Delays) -> anyhow::Result<()> {
        self.store()?;
        let changed: Vec<RoundKey> = {
            let mut feeds = self.feeds.write().unwrap_or_else(|e| e.into_inner());
            let live = self.live.lock().unwrap_or_else(|e| e.into_inner());
            let changed = live
                .keys()
                .filter(|round| feeds.delays().delay_ms(round) != delays.delay_ms(round))
                .cloned()
                .collect();
            feeds.set_delays(delays);
            changed
        };
        self.release()?;
        // After the release, so that what a lower delay let out comes first.
        let live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        for round in &changed {
            if let Some(sender) = live.get(round) {
                let _ = sender.send(LiveEvent::DelayChanged);
            }
        }
        Ok(())
    }

    /// Folds a batch of game log messages (stream sequence, payload), then releases. A game
    /// whose records do not follow on is marked (see `not_following_on`).
    fn fold(&self, messages: &[(u64, bytes::Bytes)]) -> anyhow::Result<()> {
        let Some((last, _)) = messages.last() else {
            return Ok(());
        };
        {
            let mut feeds = self.feeds.write().unwrap_or_else(|e| e.into_inner());
            for (seq, payload) in messages {
                let record = match GameEventRecord::decode(payload.as_ref()) {
                    Ok(record) => record,
                    Err(e) => {
                        tracing::error!(stream_seq = seq, "cannot show a game log record: {e}");
                        continue;
                    }
                };
                let Err(e) = feeds.accept(&record) else {
                    continue;
                };
                match e.out_of_chain_at() {
                    Some((game_id, game_seq)) => self.mark_not_following_on(LogBreak {
                        game_id: game_id.to_owned(),
                        stream_seq: *seq,
                        game_seq,
                        why: e.to_string(),
                    }),
                    // The display can be wrong; the log is the authority. Keep serving the rest.
                    None => {
                        let e = e.to_string();
                        let hint = boardcast_kit::game_log::untrusted_key_hint(&e)
                            .map(|hint| format!("; {hint}"))
                            .unwrap_or_default();
                        tracing::error!(
                            stream_seq = seq,
                            "cannot show a game log record: {e}{hint}"
                        )
                    }
                }
            }
            // Under the same lock as the records it covers: a release stores both together.
            self.stream_seq.fetch_max(*last, Ordering::AcqRel);
        }
        self.release()
    }

    /// What this service does with a game whose log does not follow on: it shows the game as
    /// it was before the break, says so once, and reads the game again every
    /// `game_log::MENDED_CHECK` (`show_mended`).
    fn mark_not_following_on(&self, at: LogBreak) {
        let mut marked = self.lock_not_following_on();
        if !marked.contains_key(&at.game_id) {
            tracing::error!(game = %at.game_id, stream_seq = at.stream_seq, "{at}; {}", at.remedy());
            marked.insert(at.game_id.clone(), at);
        }
    }

    /// Reads the games whose log does not follow on again, up to `up_to`, and shows those an
    /// operator mended as the log now holds them ([`Feeds::read_again`]).
    async fn show_mended(
        &self,
        stream: &jetstream::stream::Stream,
        up_to: u64,
    ) -> anyhow::Result<()> {
        let marked: Vec<String> = self.lock_not_following_on().keys().cloned().collect();
        if marked.is_empty() {
            return Ok(());
        }
        let trusted = self.read().trusted().clone();
        for game_id in marked {
            let records = match game_log::mended_records(stream, &game_id, up_to, &trusted).await {
                Ok(Some(records)) => records,
                Ok(None) => continue,
                Err(e) => {
                    tracing::warn!(game = %game_id, "{e}; trying again later");
                    continue;
                }
            };
            // A record bad in itself is left out, as when the log is followed.
            let records: Vec<GameEventRecord> = records
                .iter()
                .filter_map(|(_, payload)| GameEventRecord::decode(payload.as_ref()).ok())
                .collect();
            let shown = self
                .feeds
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .read_again(&game_id, &records);
            match shown {
                Ok(()) => {
                    self.lock_not_following_on().remove(&game_id);
                    tracing::info!(game = %game_id, up_to, "the game's log was mended: shown as it holds it");
                }
                Err(e) => tracing::warn!(game = %game_id, "showing the game's mended log: {e}"),
            }
        }
        self.release()
    }

    fn lock_not_following_on(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, LogBreak>> {
        self.not_following_on
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Stores what changed since last time with the log position it was built from; the
    /// feeds are held only while the changes are taken, not while they are written.
    pub fn store(&self) -> anyhow::Result<()> {
        // One store at a time from taking to writing: an older write never lands last.
        let _writing = self.writing.lock().unwrap_or_else(|e| e.into_inner());
        let (stream_seq, dirty) = {
            let mut feeds = self.feeds.write().unwrap_or_else(|e| e.into_inner());
            // Under the feeds' lock, as `fold` moves it: the position covers exactly these.
            (self.stream_seq.load(Ordering::Acquire), feeds.take_dirty())
        };
        if dirty.games.is_empty() && dirty.rounds.is_empty() {
            return Ok(());
        }
        let written = tokio::task::block_in_place(|| self.state.write(stream_seq, &dirty));
        if written.is_err() {
            // Still to be stored: a later store must not write the position without them.
            self.feeds
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .mark_dirty(&dirty);
        }
        Ok(written?)
    }

    /// Releases what is due, then tells everyone who follows. Nothing is stored on the way
    /// (`store_changes` does that): see the module comment.
    pub fn release(&self) -> anyhow::Result<()> {
        let changes = {
            let mut feeds = self.feeds.write().unwrap_or_else(|e| e.into_inner());
            let (changes, errors) = feeds.release(now_unix_ms());
            for e in errors {
                tracing::error!("cannot show a game log record: {e}");
            }
            // Announced while the feeds are still held: two releases (the log's follower and
            // the timer) never hand their updates on in the other order.
            let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
            // A round's channel lives only while someone listens.
            live.retain(|_, sender| sender.receiver_count() > 0);
            for change in changes.iter().filter(|c| c.seen_live) {
                let (Some((version, json)), Some(game)) = (
                    feeds.game_json(&change.game_id),
                    feeds.game(&change.game_id),
                ) else {
                    continue;
                };
                let delta = feeds.game_delta(&change.game_id);
                if let Some(sender) = live.get(&change.round) {
                    // No receivers is fine: nobody is watching.
                    let _ = sender.send(LiveEvent::Game(Update {
                        game_id: change.game_id.clone(),
                        version,
                        json: json.clone(),
                        delta: delta.clone(),
                    }));
                }
                if let Some(nats) = &self.nats {
                    let board = game.info.board_number;
                    let whole = bytes::Bytes::from(json.as_bytes().to_vec());
                    let as_delta = match &delta {
                        Some(delta) => format!("{{\"type\":\"delta\",\"delta\":{delta}}}"),
                        None => format!("{{\"type\":\"game\",\"game\":{json}}}"),
                    };
                    for update in [
                        (feed_subject(&change.round, board), whole),
                        (delta_subject(&change.round, board), as_delta.into()),
                    ] {
                        if let Err(e) = nats.try_send(update) {
                            tracing::warn!(
                                game = %change.game_id,
                                "a NATS feed update is dropped ({e}); the game's next one on the \
                                 feed subject has its whole state, its next delta will not apply"
                            );
                        }
                    }
                }
            }
            changes
        };
        if changes.is_empty() {
            return Ok(());
        }
        self.changed.notify_waiters();
        Ok(())
    }
}

/// Stores what changed at each `period` (`--store-every-ms`: a few commits a second whatever
/// the load), for as long as the service runs.
pub async fn store_changes(projection: Arc<Projection>, period: Duration) -> anyhow::Result<()> {
    /// How often a failure that goes on is said again.
    const SAY_AGAIN: Duration = Duration::from_secs(60);
    let mut every = tokio::time::interval(period);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut failing_since: Option<(tokio::time::Instant, tokio::time::Instant)> = None;
    loop {
        every.tick().await;
        match projection.store() {
            // The state file only spares a restart reading the log again: viewers are served
            // from memory, so a full disk must not take the feeds down. What is not stored
            // stays marked and goes with the next write that succeeds.
            Err(e) => {
                crate::metrics::store_failed();
                let now = tokio::time::Instant::now();
                match failing_since {
                    Some((_, said)) if now.duration_since(said) < SAY_AGAIN => {}
                    Some((since, _)) => {
                        failing_since = Some((since, now));
                        tracing::error!(
                            "storing the feeds has failed for {} s: {e:#}; still serving from \
                             memory, a restart now would read the log again",
                            now.duration_since(since).as_secs()
                        );
                    }
                    None => {
                        failing_since = Some((now, now));
                        tracing::error!(
                            "storing the feeds failed: {e:#}; serving from memory and trying \
                             again every {period:?}"
                        );
                    }
                }
            }
            Ok(()) => {
                if failing_since.take().is_some() {
                    tracing::info!("the feeds are stored again");
                }
            }
        }
    }
}

/// Releases what falls due while nothing arrives from the log: at the next due time, and at
/// least every second so that each round's release point keeps up with the clock.
pub async fn release_when_due(projection: Arc<Projection>) -> anyhow::Result<()> {
    loop {
        let due = projection.read().next_due();
        let wait = due.map_or(1000, |due| due.saturating_sub(now_unix_ms()).clamp(0, 1000));
        tokio::time::sleep(Duration::from_millis(wait as u64 + 1)).await;
        projection.release()?;
    }
}

/// Follows the game log for as long as the service runs, resuming after the last folded record
/// whenever the consumer has to be made again.
pub async fn follow(js: jetstream::Context, projection: Arc<Projection>) -> anyhow::Result<()> {
    loop {
        if let Err(e) = follow_stream(&js, &projection).await {
            tracing::warn!("following the game log: {e:#}; resuming in a second");
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// The most messages folded before one release: bounds a release's latency while catching up.
const BATCH: usize = 512;

async fn follow_stream(js: &jetstream::Context, projection: &Projection) -> anyhow::Result<()> {
    let mut stream = js
        .get_stream(GAMES_STREAM)
        .await
        .context("opening the game log")?;
    let start = projection.stream_seq.load(Ordering::Acquire) + 1;
    let last_in_log = stream
        .info()
        .await
        .context("reading the game log's position")?
        .state
        .last_sequence;
    if last_in_log < start && !projection.is_ready() {
        projection.ready.store(true, Ordering::Release);
        tracing::info!(stream_seq = start - 1, "the feeds are up to date");
    }
    let messages = game_log::read_from(&stream, GAMES_SUBJECTS, start)
        .await
        .context("following the game log")?;
    let mut messages = std::pin::pin!(messages);
    let mut batch = Vec::new();
    // Each message's time in the log and trace, beside `batch`.
    let mut stored = Vec::new();
    let mut mended_check = tokio::time::interval(game_log::MENDED_CHECK);
    mended_check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        // (The log's reader keeps what it was reading when the timer comes first.)
        let next = tokio::select! {
            next = messages.next() => next,
            _ = mended_check.tick() => {
                let up_to = projection.stream_seq.load(Ordering::Acquire);
                projection.show_mended(&stream, up_to).await?;
                continue;
            }
        };
        let message = match next {
            Some(Ok(m)) => m,
            Some(Err(e @ game_log::LogError::NoPosition(_))) => return Err(e.into()),
            Some(Err(e)) => {
                tracing::warn!("{e}");
                continue;
            }
            None => anyhow::bail!("the game log consumer ended"),
        };
        let (seq, pending) = (message.stream_seq, message.pending);
        batch.push((seq, message.payload));
        stored.push((message.stored_at, message.trace));
        if pending == 0 || batch.len() >= BATCH {
            // Traced and timed live only: records read while catching up after a restart are
            // old, and a span for each batch of the whole log would flood the collector.
            if projection.is_ready() {
                game_log::fold_span("broadcast", stored.iter().map(|(_, trace)| trace))
                    .in_scope(|| projection.fold(&batch))?;
                for (stored_at, _) in &stored {
                    crate::metrics::folded_after(*stored_at);
                }
            } else {
                projection.fold(&batch)?;
            }
            batch.clear();
            stored.clear();
            if !projection.is_ready() && (pending == 0 || seq >= last_in_log) {
                projection.ready.store(true, Ordering::Release);
                tracing::info!(stream_seq = seq, "caught up with the game log");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use boardcast_game::Game;
    use boardcast_game::events::{Annotation, ArbiterAction, arbiter_action::Action};

    use super::*;

    /// A game's log of three records (its start and two arbiter's notes), as stored.
    fn log_of_three() -> (String, Vec<(u64, bytes::Bytes)>) {
        let info = boardcast_game::example_game("open", 1, 1, "b1");
        let (game_id, started) = Game::decide_start(&info, "operator", "r").expect("valid");
        let first = Game::record(None, &game_id, vec![started], 1_000).remove(0);
        let mut game = Game::from_first_record(&first).expect("folds");
        let mut records = vec![first];
        for request in ["n1", "n2"] {
            let note = ArbiterAction {
                action: Some(Action::Annotation(Annotation { text: "n".into() })),
                ..Default::default()
            };
            let events = game
                .decide_arbiter(&note, "arbiter", request)
                .expect("taken");
            let record = Game::record(Some(&game), &game_id, events, 2_000).remove(0);
            game.apply(&record).expect("follows");
            records.push(record);
        }
        let log = (1..)
            .zip(
                records
                    .iter()
                    .map(|r| bytes::Bytes::from(r.encode_to_vec())),
            )
            .collect();
        (game_id, log)
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_game_whose_records_skip_one_is_marked_at_the_record_that_does_not_follow_on()
    -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let state = State::open(&dir.path().join("state.redb"), "log")?;
        let trusted = TrustedKeys::default().accepting_unsigned(true);
        let projection = Projection::open(state, Delays::none(), trusted, None)?;
        let (game_id, log) = log_of_three();
        projection.fold(&log[..1])?;
        assert!(projection.lock_not_following_on().is_empty());
        // The second record is missing from the log.
        projection.fold(&log[2..])?;
        let marked = projection.lock_not_following_on().get(&game_id).cloned();
        let marked = marked.expect("marked");
        assert_eq!((marked.stream_seq, marked.game_seq), (3, 3), "{marked}");
        assert!(
            marked.to_string().contains("does not follow on"),
            "{marked}"
        );
        assert_eq!(projection.stream_seq.load(Ordering::Acquire), 3);
        Ok(())
    }
}

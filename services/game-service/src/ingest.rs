//! Consuming board observations: decode, fold into the board's live game, append, then ack.
//!
//! An observation is acknowledged only after the events it produced are in the game log, so a
//! crash before that means redelivery, and redelivery is harmless: a decision's records are
//! stored all or none, the store decides on the game as its log holds it, and the game ignores
//! `device_seq`s it has already applied.
//! Observations that cannot be used go to the dead-letter stream with the reason, and are then
//! acknowledged; when a game is in progress on the board, its log first records the hole
//! (`ObservationsMissing` with the reason), as for observations that never arrived.
//!
//! # One bad observation never stops the hall
//!
//! An observation is rejected (impossible values: see `Rejected`), or its decision panics (a bug,
//! caught here: retrying would panic again), or NATS refuses `MAX_FAILURES` times to store its
//! decision (each attempt after a longer pause; NATS refusing the record, not NATS being away),
//! or its board's game can take nothing until someone mends it (its log does not follow on, or a
//! record of it cannot be folded here: given up at once, and so are the board's next ones until
//! then): it is dead-lettered with the reason and the board's next observations are decided as
//! usual.
//! NATS being away (no leader during an election, a timeout, the connection lost) is waited out
//! however long it lasts, so nothing is given up for it.
//!
//! # Partitions, and order across instances
//!
//! The NATS server's subject mapping stores each board's observations in one partition
//! (`boardcast.board.<board>.obs.<partition>`; see `boardcast_kit::nats::partition_mapping`),
//! each partition in a stream of its own (`BOARDCAST_INGEST_<partition>`). Each partition's
//! stream has one durable, unfiltered consumer with `max_ack_pending = 1`, shared by every
//! instance: JetStream hands out a partition's next observation only when the previous one is
//! acknowledged, so a board's observations are decided one at a time, in stream order, whichever
//! instance gets them, while the partitions are decided concurrently (each instance consumes
//! every partition). Observations stored unpartitioned (a server without the mapping, in
//! `BOARDCAST_INGEST`) are one more partition. When an instance stalls past `ack_wait` its
//! observation goes to another instance; if the stalled one wakes up, its append is refused (the
//! game moved, see `store`), it folds the game's new records and finds the observation applied.
//! A lost acknowledgement holds up its partition only.
//!
//! # Gaps and reordering
//!
//! A board may publish out of order (a gateway re-sending from its outbox) and the log may hold
//! duplicates stored under different message ids. Duplicates are ignored by the aggregate
//! (`device_seq` at or below the last applied). When an observation skips `device_seq`s, the
//! board's messages in its partition's stream are read around it. Those before it were handled
//! already, by this instance or another, or before a restart (clock ticks and rejected
//! observations leave no event; an observation that came while no game was live on the board, between a game's set-up
//! and its creation, was dead-lettered): they are decided again, in order, which changes nothing
//! for the first kind and applies the second. They are read from the last message of the board
//! this instance handled, or from a point found by bisection, since a board's messages are in
//! `device_seq` order but for re-sent ones (when something seems missing, the search is made
//! again from the stream's start). Those after it were published out of order: they are decided
//! first, in order (their own delivery later is then a duplicate). The rest were not found
//! within `LOOKAHEAD` later messages of the board. While the gap is recent (`GAP_PATIENCE`
//! after this instance's search first found it) the observation is handed back to
//! JetStream to be delivered again shortly: a gateway whose connection dropped mid-batch re-sends
//! the missing ones within seconds. After that they are recorded in the game's log as missing
//! (`ObservationsMissing`), where the arbiter sees them; one that arrives after that is not
//! applied (the game went on without it) and goes to the dead-letter stream. A gap is only
//! logged, not recorded, when no game is in progress on the board, or when more than
//! `MAX_LOOKBACK` earlier messages of the board would have to be read to tell it from
//! passed-over ones.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    sync::Arc,
    time::Duration,
};

use anyhow::Context as _;
use async_nats::{
    HeaderMap,
    jetstream::{
        self, AckKind,
        consumer::{DeliverPolicy, pull},
        context::ConsumerInfoErrorKind,
        message::Message,
        stream::Stream,
    },
};
use boardcast_game::{
    Ignored, ObservationOutcome, Rejected, device::Observation, events::game_event::Kind,
    plausible_device_seq,
};
use boardcast_kit::nats::{
    DEADLETTER_STREAM, INGEST_STREAM, INGEST_SUBJECTS, ORIGINAL_BYTES_HEADER,
    ORIGINAL_SEQUENCE_HEADER, ORIGINAL_STREAM_HEADER, ORIGINAL_SUBJECT_HEADER, REASON_HEADER,
    board_observations, board_of_subject, deadletter_subject, ingest_stream, next_message,
    observation_partitions,
};
use boardcast_kit::nats_access::{GAME_SERVICE_CONSUMER, ingest_consumer};
use boardcast_kit::panic_text;
use futures::{FutureExt as _, StreamExt};
use prost::Message as _;
use tracing::Instrument as _;

use crate::fault_points::Place;
use crate::games::Entry;
use crate::store::{AppendError, Store};

/// How the observations are consumed.
#[derive(Debug, Clone, Copy)]
pub struct IngestSettings {
    /// The partitions consumed whatever the stream holds (0..partitions), besides any other
    /// partition found in the stream.
    pub partitions: u32,
    /// How long an observation handed to an instance waits for its acknowledgement before
    /// JetStream gives it to another.
    pub ack_wait: Duration,
    /// A standby instance: it consumes a partition only once nobody else decides its
    /// observations (see [`wait_until_unattended`]).
    pub standby: bool,
}

/// How many NATS connections the partitions are consumed over, spread evenly. nats-server
/// handles each connection's messages one at a time, and so does the client: over one
/// connection, every delivery and acknowledgement of the hall waited in one line (measured in
/// `docs/ingest-benchmark.md`: about 10 % more observations decided per second with four).
pub const CONNECTIONS: usize = 4;

/// How often the streams are looked at for partitions not consumed yet (another instance was
/// started with more `--partitions`, for a mapping with more partitions).
const PARTITION_CHECK: Duration = Duration::from_secs(30);

/// How soon creating a partition's consumer is tried again after it failed.
const CONSUMER_RETRY: Duration = Duration::from_secs(5);

/// Consumes every partition, each in its own task, over one of `connections` (partition `n`
/// over connection `n` modulo their number), for as long as the service runs.
pub async fn run(
    connections: Vec<jetstream::Context>,
    store: Arc<Store>,
    settings: IngestSettings,
) -> anyhow::Result<()> {
    let connection_of = |partition: Option<u32>| {
        let n = partition.map_or(0, |p| p as usize);
        connections.get(n % connections.len().max(1)).cloned()
    };
    let js = connection_of(None).context("no NATS connection to consume over")?;
    // Right after a node failed JetStream may answer "temporarily unavailable" for a while: a
    // service (re)started then waits for it rather than exit.
    let unpartitioned_start = loop {
        let start = match js.get_stream(INGEST_STREAM).await {
            Ok(mut unpartitioned) => start_after_earlier_version(&mut unpartitioned).await,
            Err(e) => Err(anyhow::Error::from(e).context("opening the observation stream")),
        };
        match start {
            Ok(start) => break start,
            Err(e) => {
                tracing::warn!("{e:#}; trying again in {CONSUMER_RETRY:?}");
                tokio::time::sleep(CONSUMER_RETRY).await;
            }
        }
    };
    let mut consumed = BTreeSet::new();
    let mut tasks = tokio::task::JoinSet::new();
    let mut check = tokio::time::interval(PARTITION_CHECK);
    loop {
        tokio::select! {
            _ = check.tick() => {
                let mut wanted: BTreeSet<Option<u32>> =
                    std::iter::once(None).chain((0..settings.partitions).map(Some)).collect();
                match observation_partitions(&js).await {
                    Ok(found) => wanted.extend(found),
                    Err(e) => tracing::warn!("looking for partitions' observation streams: {e:#}"),
                }
                let new: Vec<Option<u32>> = wanted.difference(&consumed).copied().collect();
                for partition in new {
                    if partition.is_some_and(|p| p >= settings.partitions) {
                        tracing::warn!(partition, partitions = settings.partitions, "an observation stream of a partition beyond --partitions: consuming it too (the NATS server's mapping has more partitions)");
                    }
                    let start = match partition {
                        None => unpartitioned_start,
                        Some(_) => DeliverPolicy::All,
                    };
                    let js = connection_of(partition).unwrap_or_else(|| js.clone());
                    let consumer = match partition_consumer(&js, partition, start, settings.ack_wait).await {
                        Ok(consumer) => consumer,
                        // NATS busy or electing a leader (a service started right after a node
                        // failed): tried again shortly, the other partitions go on meanwhile.
                        Err(e) => {
                            tracing::warn!("{e:#}; trying again in {CONSUMER_RETRY:?}");
                            check.reset_after(CONSUMER_RETRY);
                            continue;
                        }
                    };
                    consumed.insert(partition);
                    let (js, store) = (js.clone(), store.clone());
                    tasks.spawn(async move {
                        let mut consumer = consumer;
                        if settings.standby {
                            wait_until_unattended(&mut consumer.1, partition, settings.ack_wait).await;
                        }
                        // A panic outside an observation's handling (a bug) stops this
                        // partition's consumer only, which is then started again like one NATS
                        // ended: the others go on, and the service does not restart.
                        let ended = std::panic::AssertUnwindSafe(consume(js, store, consumer, partition))
                            .catch_unwind()
                            .await
                            .unwrap_or_else(|panic| {
                                Err(anyhow::anyhow!("it panicked (a bug): {}", panic_text(panic.as_ref())))
                            });
                        (partition, ended)
                    });
                }
            }
            Some(ended) = tasks.join_next() => {
                // A partition whose consumer ended (NATS away for long) is consumed again from
                // the next check; the others go on meanwhile.
                let (partition, ended) = ended.context("a partition's consumer was cancelled")?;
                let why = ended.err().map_or_else(|| "ended".to_owned(), |e| format!("{e:#}"));
                tracing::warn!(partition = partition_name(partition), "consuming the partition stopped: {why}; resuming shortly");
                consumed.remove(&partition);
                check.reset_after(Duration::from_secs(1));
            }
        }
    }
}

fn partition_name(partition: Option<u32>) -> String {
    partition.map_or_else(|| "unpartitioned".to_owned(), |p| p.to_string())
}

/// Where new partition consumers start: after what the earlier version's single consumer
/// acknowledged, if there is one (its observations were decided), otherwise at the start.
async fn start_after_earlier_version(stream: &mut Stream) -> anyhow::Result<DeliverPolicy> {
    match stream.consumer_info(GAME_SERVICE_CONSUMER).await {
        Ok(info) => {
            let after = info.ack_floor.stream_sequence;
            tracing::info!(
                after,
                "the observations up to the earlier version's consumer position were decided; partitions start after it"
            );
            Ok(DeliverPolicy::ByStartSequence {
                start_sequence: after + 1,
            })
        }
        Err(e) if e.kind() == ConsumerInfoErrorKind::NotFound => Ok(DeliverPolicy::All),
        Err(e) => Err(e).context("reading the earlier version's consumer"),
    }
}

/// The partition's durable consumer on its stream: created, or brought to these settings if it
/// exists (its position and start stay as they are). Unfiltered: each partition has a stream
/// of its own (see `boardcast_kit::nats`).
async fn partition_consumer(
    js: &jetstream::Context,
    partition: Option<u32>,
    start: DeliverPolicy,
    ack_wait: Duration,
) -> anyhow::Result<(Stream, PullConsumer)> {
    let stream_name = ingest_stream(partition);
    let stream = js
        .get_stream(&stream_name)
        .await
        .with_context(|| format!("opening the observation stream {stream_name}"))?;
    let name = ingest_consumer(partition);
    let existing = stream.get_consumer::<pull::Config>(&name).await;
    let deliver_policy = match &existing {
        Ok(consumer) => consumer.cached_info().config.deliver_policy,
        Err(_) => start,
    };
    // The unpartitioned stream's consumer was filtered when that stream also held the
    // partitions; its filter is now the stream's one subject (a filter cannot be changed).
    let filter_subject = match partition {
        Some(_) => String::new(),
        None => INGEST_SUBJECTS.to_owned(),
    };
    let consumer = stream
        .create_consumer(pull::Config {
            durable_name: Some(name.clone()),
            filter_subject,
            deliver_policy,
            ack_policy: jetstream::consumer::AckPolicy::Explicit,
            ack_wait,
            // One observation of the partition in flight across all instances: see the module
            // comment.
            max_ack_pending: 1,
            ..Default::default()
        })
        .await
        .with_context(|| format!("creating the observation consumer {name} on {stream_name}"))?;
    Ok((stream, consumer))
}

type PullConsumer = jetstream::consumer::Consumer<pull::Config>;

/// How often a standby instance looks at a partition's consumer.
const STANDBY_LOOK: Duration = Duration::from_secs(1);

/// Returns once nobody has been deciding the partition's observations for half of `ack_wait`:
/// some were waiting or in flight, and none was handed out (JetStream's delivery count of the
/// consumer stood still). Until then a standby instance leaves the partition to the others, so
/// that it does not compete with them for the game log (every append of one instance makes the
/// other's next one conflict: see `store`). An observation in flight on an instance that died
/// is handed out again `ack_wait` after it was delivered, by which time the standby is pulling.
/// Once it has taken a partition over, it goes on consuming it as any instance does.
async fn wait_until_unattended(
    consumer: &mut PullConsumer,
    partition: Option<u32>,
    ack_wait: Duration,
) {
    let name = partition_name(partition);
    let grace = ack_wait / 2;
    // The consumer's delivery count when it was last seen to move, and since when it stands.
    let mut standing: Option<(u64, std::time::Instant)> = None;
    let mut unread: u32 = 0;
    loop {
        tokio::time::sleep(STANDBY_LOOK).await;
        let info = match consumer.info().await {
            Ok(info) => {
                unread = 0;
                info.clone()
            }
            // NATS away: nothing can be decided by anyone meanwhile; looked at again. Said once
            // it lasts, then every five minutes (a standby that cannot look never takes over).
            Err(e) => {
                unread = unread.saturating_add(1);
                if unread % 300 == 10 {
                    tracing::warn!(
                        partition = name,
                        "standby: the partition's consumer could not be read for {unread} s: {e}"
                    );
                }
                continue;
            }
        };
        let delivered = info.delivered.consumer_sequence;
        let waiting = info.num_pending > 0 || info.num_ack_pending > 0;
        match standing {
            Some((seen, since)) if seen == delivered && waiting => {
                if since.elapsed() >= grace {
                    tracing::warn!(
                        partition = name,
                        waiting = info.num_pending,
                        in_flight = info.num_ack_pending,
                        "standby: nobody has decided the partition's observations for {} s; \
                         taking it over",
                        grace.as_secs()
                    );
                    crate::metrics::partition_taken_over(&name);
                    return;
                }
            }
            _ => standing = Some((delivered, std::time::Instant::now())),
        }
    }
}

/// Decides one partition's observations, one at a time.
async fn consume(
    js: jetstream::Context,
    store: Arc<Store>,
    (stream, consumer): (Stream, PullConsumer),
    partition: Option<u32>,
) -> anyhow::Result<()> {
    let name = partition_name(partition);
    let mut messages = consumer
        .messages()
        .await
        .context("subscribing to observations")?;
    let mut state = PartitionState::default();
    while let Some(message) = messages.next().await {
        let message = match message {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!("observation stream: {e}");
                continue;
            }
        };
        if let Ok(info) = message.info() {
            crate::metrics::partition_lag(&name, info.pending);
        }
        handle_guarded(&js, &stream, &store, &mut state, &message).await;
    }
    anyhow::bail!("the observation consumer ended")
}

/// [`handle`] in the observation's trace, begun by its gateway. A panic while handling it (a
/// bug) is caught here: the service must not crash-loop on one observation, nor the partition
/// stop on it.
async fn handle_guarded(
    js: &jetstream::Context,
    stream: &Stream,
    store: &Store,
    state: &mut PartitionState,
    message: &Message,
) {
    let span = tracing::info_span!("observation.decide", subject = %message.subject);
    boardcast_kit::telemetry::continue_trace(
        &span,
        boardcast_kit::telemetry::context_from_nats(message.headers.as_ref()),
    );
    let handled = std::panic::AssertUnwindSafe(
        handle(js, stream, store, state, message).instrument(span.clone()),
    )
    .catch_unwind()
    .await;
    if let Err(panic) = handled {
        after_panic(js, store, state, message, &panic_text(panic.as_ref()))
            .instrument(span)
            .await;
    }
}

/// How many times handling one observation may panic on this instance before it is given up. A
/// panic after its decision was stored is passed on the next delivery, which finds the decision
/// applied; one before is a bug that panics again, and goes as a rejected observation does.
const MAX_PANICS: u32 = 2;

/// After handling `message` panicked (a bug, with the panic's `text`): until it has panicked
/// `MAX_PANICS` times it is delivered again after a pause, then it is given up (its hole
/// recorded, to the dead-letter stream). Its partition goes on either way. A panic while games
/// were being folded is left to the service's stop (see `main`).
async fn after_panic(
    js: &jetstream::Context,
    store: &Store,
    state: &mut PartitionState,
    message: &Message,
    text: &str,
) {
    tracing::error!(subject = %message.subject, "handling an observation panicked (a bug): {text}");
    // Whether this instance was handed the partition's messages one after the other is no
    // longer known.
    state.recent.clear();
    if store.games_poisoned() {
        // It struck while games were being folded: nothing more is decided on them here (the
        // service stops, and its restart folds them again), and the observation is delivered
        // again then.
        return;
    }
    let stream_seq = message.info().map_or(0, |info| info.stream_sequence);
    let attempts = state.current.of(stream_seq);
    attempts.panics = attempts.panics.saturating_add(1);
    if attempts.panics < MAX_PANICS {
        crate::metrics::observation("retried");
        return nak_after(message, FIRST_RETRY_PAUSE).await;
    }
    crate::metrics::observation("dead_lettered");
    let reason = format!("handling it failed unexpectedly (a bug): {text}");
    let observation = match read_observation(&message.subject, message.payload.as_ref()) {
        Ok(observation) => observation,
        Err(unreadable) => {
            let board = board_of_subject(&message.subject).map(str::to_owned);
            let reason = format!("{reason}; {unreadable}");
            return dead_letter(js, message, board.as_deref(), &reason).await;
        }
    };
    // Recording the hole goes through the game aggregate, which may be where the bug is: the
    // observation then goes to the dead-letter stream without it.
    let recorded = std::panic::AssertUnwindSafe(give_up(js, store, message, &observation, &reason))
        .catch_unwind()
        .await;
    if let Err(panic) = recorded {
        let reason = format!(
            "{reason}; giving it up failed unexpectedly too: {}",
            panic_text(panic.as_ref())
        );
        dead_letter(js, message, Some(&observation.board_id), &reason).await
    }
}

/// What this instance has handled of each board of a partition for the game live on it then:
/// the highest `device_seq`, and the stream sequence of the last message. Every message of the
/// partition before the one being handled has been handled, by this instance or another (one
/// observation in flight: see the module comment), so the board's messages in between were
/// passed over by another instance. Kept per game as folded: what was handled for a game the
/// board no longer carries tells nothing about the new one, nor what was handled for a game
/// before it was folded afresh (records it held then may have been removed).
#[derive(Default)]
struct Seen(HashMap<String, (Option<GameFolded>, SeenBoard)>);

/// A game in progress on a board as folded here: its id and `Entry::generation`.
type GameFolded = (String, u64);

#[derive(Default, Clone, Copy)]
struct SeenBoard {
    device_seq: u64,
    stream_seq: u64,
}

/// At most how many later messages of the same board are searched for missing `device_seq`s: a
/// gateway publishes up to 256 observations at once and re-sends the ones not acknowledged,
/// which JetStream then stores after the rest.
const LOOKAHEAD: usize = 512;

/// At most how many earlier messages of the same board are read to find those another instance
/// passed over; beyond that a gap is logged but not recorded (it cannot be told from ticks).
const MAX_LOOKBACK: usize = 20_000;

/// How far below the last accounted `device_seq` the search for passed-over messages starts
/// after a restart, for boards whose messages are out of order where a gateway re-sent them.
const RESEND_MARGIN: u64 = 256;

/// After NATS refused this many times to store an observation's decision, it is given up
/// (dead-lettered, a hole recorded). The pauses between attempts grow from `FIRST_RETRY_PAUSE`.
/// Counted here rather than from JetStream's deliveries, which also count the waits for a gap
/// and for NATS to come back.
const MAX_FAILURES: u32 = 5;

/// What a partition's task keeps between observations.
#[derive(Default)]
struct PartitionState {
    seen: Seen,
    /// The observation being handled (one in flight per partition): how often storing its
    /// decision failed, and since when observations before it are missing.
    current: Attempts,
    /// The partition's last messages handed to this instance one after the other in the
    /// stream, each first delivered (at most `RECENT_DELIVERIES`), for
    /// [`PartitionState::stored_by`].
    recent: std::collections::VecDeque<Delivery>,
}

/// How many of the partition's last deliveries [`PartitionState::stored_by`] looks back over.
const RECENT_DELIVERIES: usize = 16;

/// A message of the partition as it was handed to this instance.
#[derive(Clone, Copy)]
struct Delivery {
    stream_seq: u64,
    /// When it was received here.
    at: std::time::Instant,
    /// How many messages of the partition the stream held after it then.
    pending: u64,
}

impl PartitionState {
    /// A moment by which the message just received (`delivery`) was stored in the stream, on
    /// this instance's clock. A decision on it that appends nothing stands without asking the
    /// log when this instance's state holds every record stored after that moment (see
    /// `Store::decide_on_board`): it then misses nothing written before the observation came,
    /// by anyone. When this instance was handed, first delivered, every
    /// message of the partition from an earlier one up to this one, and the stream held this
    /// one already when that earlier one came, that is when the earlier one was received: a
    /// record this instance sent since, once folded, then shows the log whole late enough, and
    /// a busy hall needs no request to the log for it. Otherwise: now.
    fn stored_by(&mut self, delivery: Delivery, first_delivery: bool) -> std::time::Instant {
        let follows_on = first_delivery
            && self
                .recent
                .back()
                .is_some_and(|last| last.stream_seq.checked_add(1) == Some(delivery.stream_seq));
        if !follows_on {
            self.recent.clear();
        }
        let stored_by = self
            .recent
            .iter()
            .find(|earlier| {
                earlier.stream_seq.saturating_add(earlier.pending) >= delivery.stream_seq
            })
            .map_or(delivery.at, |earlier| earlier.at);
        if first_delivery {
            if self.recent.len() >= RECENT_DELIVERIES {
                self.recent.pop_front();
            }
            self.recent.push_back(delivery);
        }
        stored_by
    }
}

struct Attempts {
    stream_seq: u64,
    /// Earlier attempts that did not store its decision, for whatever reason: the pause before
    /// the next one grows with them.
    failures: u32,
    /// Of those, the ones where NATS refused the records (`AppendError::Failed`): only these
    /// count towards giving it up (`MAX_FAILURES`). NATS being away, however long, does not.
    refusals: u32,
    /// How often handling it panicked (a bug: see [`after_panic`]).
    panics: u32,
    /// When a search of the stream first found observations missing before it: the board's
    /// time to re-send them counts from there, not from earlier attempts that could not search
    /// (NATS away during a fault would otherwise use the time up).
    gap_found: Option<std::time::Instant>,
}

impl Default for Attempts {
    /// Attempts at no observation (stream sequences start at 1).
    fn default() -> Self {
        Attempts::at(0)
    }
}

impl Attempts {
    fn at(stream_seq: u64) -> Attempts {
        Attempts {
            stream_seq,
            failures: 0,
            refusals: 0,
            panics: 0,
            gap_found: None,
        }
    }

    /// The attempts at the observation at `stream_seq`, starting afresh for a new one.
    fn of(&mut self, stream_seq: u64) -> &mut Attempts {
        if self.stream_seq != stream_seq {
            *self = Attempts::at(stream_seq);
        }
        self
    }

    /// How long since observations were first found missing before it (none yet: zero).
    fn gap_waited(&self) -> Duration {
        self.gap_found.map_or(Duration::ZERO, |at| at.elapsed())
    }
}

/// The first pause before an observation whose decision could not be stored is tried again.
const FIRST_RETRY_PAUSE: Duration = Duration::from_millis(250);

/// The observation a message carries, or why it cannot be decided: its payload does not decode,
/// or it is of another board than its subject names.
fn read_observation(subject: &str, payload: &[u8]) -> Result<Observation, String> {
    let observation =
        Observation::decode(payload).map_err(|e| format!("undecodable observation: {e}"))?;
    if board_of_subject(subject) != Some(observation.board_id.as_str()) {
        return Err(format!(
            "observation of board {:?} published on subject {subject}",
            observation.board_id
        ));
    }
    Ok(observation)
}

/// The board's observations missing before `device_seq` when `known` is the last accounted for:
/// none when it follows on, and none either when it is implausibly far ahead (no gap to look
/// for: the decision rejects it).
fn gap_before(known: u64, device_seq: u64) -> Option<std::ops::Range<u64>> {
    let first_missing = known.checked_add(1)?;
    (device_seq > first_missing && plausible_device_seq(known, device_seq))
        .then_some(first_missing..device_seq)
}

async fn handle(
    js: &jetstream::Context,
    stream: &Stream,
    store: &Store,
    state: &mut PartitionState,
    message: &Message,
) {
    let received = std::time::Instant::now();
    let observation = match read_observation(&message.subject, message.payload.as_ref()) {
        Ok(o) => o,
        Err(reason) => {
            let subject_board = board_of_subject(&message.subject).map(str::to_owned);
            crate::metrics::observation("dead_lettered");
            return dead_letter(js, message, subject_board.as_deref(), &reason).await;
        }
    };
    crate::fault_points::panic_at(
        Place::Handling,
        &observation.board_id,
        observation.device_seq,
    );
    let board = observation.board_id.clone();
    // Where it stands in its stream, and when NATS stored it: the start of its latency to the
    // game log.
    let (stream_seq, stored_by, arrived_unix_ns) = match message.info() {
        Ok(info) => (
            info.stream_sequence,
            state.stored_by(
                Delivery {
                    stream_seq: info.stream_sequence,
                    at: received,
                    pending: info.pending,
                },
                info.delivered == 1,
            ),
            Some(info.published.unix_timestamp_nanos()),
        ),
        Err(_) => {
            state.recent.clear();
            (0, received, None)
        }
    };
    // Nothing is decided on a game that cannot be folded here (a bug struck on one of its
    // records) or whose log does not follow on: its board's observations go, with the reason,
    // before any gap is looked for (each search would decide the first one given up again).
    // Not counted as seen, so that once the game can be decided on again (a service without
    // the bug, the log mended) they are found in the gap before the board's next observation.
    if let Some(stuck) = store.broken_on_board(&board).await {
        crate::metrics::observation("dead_lettered");
        return dead_letter(js, message, Some(&board), &stuck.to_string()).await;
    }
    let seen = &mut state.seen;
    let attempts = state.current.of(stream_seq);
    let in_progress = match game_in_progress(store, &board).await {
        Ok(in_progress) => in_progress,
        Err(e) => {
            // Not acknowledged: decided once the log can be read.
            tracing::warn!(%board, seq = observation.device_seq, "reading the game log: {e:#}");
            crate::metrics::observation("retried");
            return nak(message).await;
        }
    };
    let live_game = in_progress.as_ref().map(|(game, _)| game.clone());
    let seen_here = seen.of(&board, live_game.as_ref());
    // Gaps matter only to a game in progress on the board (and looking for them costs reads).
    // A decision that NATS refused while the gap before it was being closed: it stands for this
    // observation's own (counted towards giving it up).
    let mut refused_in_gap = None;
    if let Some((_, accounted)) = in_progress {
        let known = seen_here.map_or(0, |s| s.device_seq).max(accounted);
        if gap_before(known, observation.device_seq).is_some() {
            // Reading the board's messages may take a while: the observation stays this
            // instance's meanwhile (JetStream would otherwise give it to another after ack_wait).
            if let Err(e) = message.ack_with(AckKind::Progress).await {
                tracing::debug!("telling JetStream the observation is in hand: {e}");
            }
            let closed = close_gap(
                stream,
                store,
                seen_here,
                &observation,
                known,
                stream_seq,
                attempts.gap_waited(),
            )
            .await;
            match closed {
                Ok(()) => {}
                Err(GapOpen::Waiting { missing }) => {
                    // Not acknowledged: the partition waits a moment for the board to re-send.
                    if attempts.gap_found.is_none() {
                        attempts.gap_found = Some(std::time::Instant::now());
                        tracing::info!(%board, seq = observation.device_seq, missing, "waiting for observations the board may still re-send");
                    }
                    crate::metrics::observation("retried");
                    return nak_after(message, GAP_RECHECK).await;
                }
                Err(GapOpen::Failed(e)) => {
                    // Not acknowledged: decided again later, once the earlier ones can be read.
                    tracing::warn!(%board, seq = observation.device_seq, "{e}");
                    crate::metrics::observation("retried");
                    return nak(message).await;
                }
                Err(GapOpen::Refused(e)) => refused_in_gap = Some(e),
            }
        }
    }
    let decided = match refused_in_gap {
        Some(refused) => Err(refused),
        None => decide(store, &observation, stored_by).await,
    };
    let seen_before = seen_here.map_or(0, |s| s.device_seq);
    let disposition = disposition(&decided, &observation, attempts, seen_before);
    // Delivered again after its decision was appended, or after only part of it was (on a
    // single server, the service stopped between two of its records): completed first, and
    // delivered again if that fails.
    if disposition
        == (Disposition::Ack {
            complete_first: true,
        })
        && let Err(e) = complete(store, &observation).await
    {
        tracing::warn!(%board, seq = observation.device_seq, "{e}");
        crate::metrics::observation("retried");
        return nak(message).await;
    }
    let label = disposition.label(&decided);
    crate::metrics::observation(label);
    if disposition.accounts_for_it() {
        seen.note(
            &board,
            live_game.as_ref(),
            observation.device_seq,
            stream_seq,
        );
    }
    match disposition {
        // Decided on games that a panic may have left different from the log: not
        // acknowledged, decided again after the restart (see `Store::games_poisoned`).
        _ if store.games_poisoned() => {}
        Disposition::Ack { .. } => {
            if label == "applied" {
                crate::fault_points::panic_at(Place::Stored, &board, observation.device_seq);
            }
            ack(message).await;
            if label == "applied"
                && let Some(arrived) = arrived_unix_ns
            {
                crate::metrics::applied_after(arrived);
            }
        }
        Disposition::Retry { pause } => {
            attempts.failures = attempts.failures.saturating_add(1);
            if matches!(decided, Err(AppendError::Failed { .. })) {
                attempts.refusals = attempts.refusals.saturating_add(1);
            }
            nak_after(message, pause).await
        }
        Disposition::DeadLetter {
            reason,
            hole: Hole::ToRecord,
        } => give_up(js, store, message, &observation, &reason).await,
        Disposition::DeadLetter { reason, .. } => {
            dead_letter(js, message, Some(&observation.board_id), &reason).await
        }
    }
}

/// What becomes of a delivered observation once it was decided.
#[derive(Debug, PartialEq, Eq)]
enum Disposition {
    /// Acknowledged: its decision is in the log (or it changed nothing). `complete_first`: it is
    /// the game's last applied observation delivered again, whose decision may have been stored
    /// only in part: complete it before acknowledging.
    Ack { complete_first: bool },
    /// Not acknowledged: JetStream delivers it again after `pause`, and it is decided again.
    Retry { pause: Duration },
    /// To the dead-letter stream with `reason`.
    DeadLetter { reason: String, hole: Hole },
}

/// The hole a dead-lettered observation leaves in its board's record.
#[derive(Debug, PartialEq, Eq)]
enum Hole {
    /// None: no game is live on the board.
    NoGame,
    /// Already in the record (it was recorded missing before it arrived).
    Recorded,
    /// To be recorded before it goes (for a game in progress).
    ToRecord,
    /// None can be recorded: the board's game cannot be folded here (`AppendError::Unfoldable`)
    /// or its log is broken (`AppendError::LogBroken`). Not accounted for, as with no game: once
    /// the game can be decided on again (a service without the bug, the log mended), the gap
    /// before the board's next observation brings it back (the board's observations meanwhile
    /// go the same way, see `handle`).
    Unrecordable,
}

impl Disposition {
    /// Whether the board's observations up to it count as seen by this instance afterwards (for
    /// the gap before the next one). Not one that found no game: should a game be set up on the
    /// board a moment later (its set-up checked the board before this arrived), the gap before
    /// its next observation brings this one back (see the module comment). Not one to retry.
    /// What became of the observation, for `boardcast_observations_total`.
    fn label(&self, decided: &Result<Option<Decision>, AppendError>) -> &'static str {
        match (self, decided) {
            (Disposition::Retry { .. }, _) => "retried",
            (Disposition::DeadLetter { .. }, _) => "dead_lettered",
            (_, Ok(Some(Ok(ObservationOutcome::Events(_))))) => "applied",
            (_, Ok(Some(Ok(ObservationOutcome::Ignored(Ignored::Duplicate { .. }))))) => {
                "duplicate"
            }
            _ => "unchanged",
        }
    }

    fn accounts_for_it(&self) -> bool {
        match self {
            Disposition::Ack { .. } => true,
            Disposition::Retry { .. } => false,
            Disposition::DeadLetter { hole, .. } => {
                !matches!(hole, Hole::NoGame | Hole::Unrecordable)
            }
        }
    }
}

/// The disposition of `observation` decided as `decided`, after the earlier `attempts` to store
/// its decision; `seen_before`: the board's last observation this instance had seen (to
/// tell one that arrived too late from a plain duplicate).
fn disposition(
    decided: &Result<Option<Decision>, AppendError>,
    observation: &Observation,
    &Attempts {
        failures, refusals, ..
    }: &Attempts,
    seen_before: u64,
) -> Disposition {
    let board = &observation.board_id;
    let dead = |reason: String, hole: Hole| Disposition::DeadLetter { reason, hole };
    match decided {
        Ok(None) => dead(format!("no game is live on board {board}"), Hole::NoGame),
        Ok(Some(Err(undecided))) => dead(undecided.reason(board, observation), Hole::ToRecord),
        Ok(Some(Ok(ObservationOutcome::Events(events)))) => {
            tracing::debug!(%board, seq = observation.device_seq, events = events.len(), "applied");
            Disposition::Ack {
                complete_first: false,
            }
        }
        Ok(Some(Ok(ObservationOutcome::Ignored(Ignored::Duplicate {
            device_seq,
            last_applied,
        })))) => {
            if *device_seq != *last_applied && *device_seq > seen_before {
                tracing::warn!(%board, device_seq, last_applied, "observation arrived too late: a later one of this board was already applied");
            }
            Disposition::Ack {
                complete_first: device_seq == last_applied,
            }
        }
        Ok(Some(Ok(ObservationOutcome::Ignored(Ignored::EarlierGame {
            device_seq,
            earlier_game_last,
        })))) => {
            tracing::info!(%board, device_seq, earlier_game_last, "observation of the board's previous game, delivered after the next game was set up: ignored");
            Disposition::Ack {
                complete_first: false,
            }
        }
        Ok(Some(Ok(ObservationOutcome::Ignored(Ignored::AfterItsGap { device_seq })))) => dead(
            format!(
                "observation {device_seq} of board {board} arrived after it was recorded as missing: the game went on without it"
            ),
            Hole::Recorded,
        ),
        Ok(Some(Ok(ObservationOutcome::Ignored(why)))) => {
            tracing::debug!(%board, seq = observation.device_seq, ?why, "no change");
            Disposition::Ack {
                complete_first: false,
            }
        }
        // Trying again cannot help (a bug, a forked log) and no hole can be recorded.
        Err(e @ (AppendError::Unfoldable { .. } | AppendError::LogBroken { .. })) => {
            dead(e.to_string(), Hole::Unrecordable)
        }
        Err(e @ AppendError::Failed { .. }) if refusals.saturating_add(1) >= MAX_FAILURES => dead(
            format!("its decision could not be stored in {MAX_FAILURES} attempts: {e}"),
            Hole::ToRecord,
        ),
        // NATS away or a conflict: nothing is wrong with the observation, so it is never given
        // up for it, only tried again after a growing pause.
        Err(
            e @ (AppendError::Conflict(_)
            | AppendError::Failed { .. }
            | AppendError::Unavailable { .. }),
        ) => {
            let attempt = failures.saturating_add(1);
            tracing::warn!(%board, seq = observation.device_seq, attempt, "{e}");
            Disposition::Retry {
                pause: FIRST_RETRY_PAUSE.saturating_mul(1 << attempt.clamp(1, 6)),
            }
        }
    }
}

/// Records in the game live on its board that `observation` is unusable, and why: a hole in the
/// board's record (nothing when its number is accounted for already).
async fn record_unusable(
    store: &Store,
    observation: &Observation,
    reason: &str,
) -> Result<(), AppendError> {
    store
        .decide_on_board(
            &observation.board_id,
            boardcast_kit::now_unix_ms(),
            std::time::Instant::now(),
            |game| {
                game.decide_unusable_observation(
                    observation.device_seq,
                    observation.device_time_unix_ms,
                    reason,
                )
            },
            Vec::clone,
        )
        .await
        .map(|_| ())
}

/// Gives an observation up: the hole in its board's record first (when a game is in progress and
/// it is not accounted for already), then the observation to the dead-letter stream with the
/// reason. If the hole cannot be recorded the observation is delivered again.
async fn give_up(
    js: &jetstream::Context,
    store: &Store,
    message: &Message,
    observation: &Observation,
    reason: &str,
) {
    match record_unusable(store, observation, reason).await {
        Ok(_) => dead_letter(js, message, Some(&observation.board_id), reason).await,
        // Nothing can be appended to the game (its log forks, or it cannot be folded here): the
        // observation goes without its hole, rather than holding its partition up for good.
        Err(
            e @ (AppendError::Failed { .. }
            | AppendError::Unfoldable { .. }
            | AppendError::LogBroken { .. }),
        ) => {
            tracing::error!(board = %observation.board_id, seq = observation.device_seq, "the hole cannot be recorded: {e}");
            let reason = format!("{reason}; the hole could not be recorded in the game's log: {e}");
            dead_letter(js, message, Some(&observation.board_id), &reason).await
        }
        Err(e) => {
            tracing::warn!(board = %observation.board_id, seq = observation.device_seq, "recording the hole: {e}");
            nak(message).await
        }
    }
}

impl Seen {
    /// What was handled of `board` for `game`.
    fn of(&self, board: &str, game: Option<&GameFolded>) -> Option<SeenBoard> {
        self.0
            .get(board)
            .filter(|(seen_for, _)| seen_for.as_ref() == game)
            .map(|(_, seen)| *seen)
    }

    /// Keeps the board's highest `device_seq` for `game` and where it is in the stream (a copy
    /// re-sent later, with a lower `device_seq`, does not move that point).
    fn note(&mut self, board: &str, game: Option<&GameFolded>, device_seq: u64, stream_seq: u64) {
        let (seen_for, entry) = self.0.entry(board.to_owned()).or_default();
        if seen_for.as_ref() != game {
            *seen_for = game.cloned();
            *entry = SeenBoard::default();
        }
        if device_seq >= entry.device_seq {
            entry.device_seq = device_seq;
            entry.stream_seq = entry.stream_seq.max(stream_seq);
        }
    }
}

/// The game in progress on the board and its last observation accounted for, if there is one.
/// When this instance knows of no game on the board, the follower is first brought up to what
/// the log holds (another instance may have set one up a moment ago): the gap before the
/// observation and its decision then rest on that. An error when the log cannot be read.
async fn game_in_progress(store: &Store, board: &str) -> anyhow::Result<Option<(GameFolded, u64)>> {
    let accounted = |e: &Entry| {
        (!e.game.is_over()).then(|| {
            let folded = (e.game.game_id().to_owned(), e.generation);
            (folded, e.game.board_seq_accounted())
        })
    };
    if let Some(known) = store.with_board_entry(board, accounted).await {
        return Ok(known);
    }
    store.refresh().await?;
    Ok(store.with_board_entry(board, accounted).await.flatten())
}

/// Why an observation was not decided.
#[derive(Debug)]
enum Undecided {
    Rejected(Rejected),
    /// The decision panicked: a bug, with the panic's message.
    Panicked(String),
}

impl Undecided {
    /// Why `observation` of `board` is unusable, as its dead letter and its hole say.
    fn reason(&self, board: &str, observation: &Observation) -> String {
        match self {
            Undecided::Rejected(rejected) => rejected.to_string(),
            Undecided::Panicked(panic) => {
                tracing::error!(%board, seq = observation.device_seq, "deciding an observation panicked (a bug): {panic}");
                format!("deciding it failed unexpectedly (a bug): {panic}")
            }
        }
    }
}

type Decision = Result<ObservationOutcome, Undecided>;

/// Decides `observation`, stored in the stream by `stored_by` (see `PartitionState::stored_by`),
/// on the game live on its board.
async fn decide(
    store: &Store,
    observation: &Observation,
    stored_by: std::time::Instant,
) -> Result<Option<Decision>, AppendError> {
    store
        .decide_on_board(
            &observation.board_id,
            boardcast_kit::now_unix_ms(),
            stored_by,
            |game| {
                caught(|| {
                    crate::fault_points::panic_at(
                        Place::Deciding,
                        &observation.board_id,
                        observation.device_seq,
                    );
                    game.decide_observation(observation)
                })
            },
            |decision| match decision {
                Ok(ObservationOutcome::Events(events)) => events.clone(),
                _ => Vec::new(),
            },
        )
        .await
}

/// Runs a decision, a panic in it (a bug) becoming `Undecided::Panicked` with its message:
/// deciding only reads the game, so a panic leaves nothing half-changed, and deciding again would
/// panic again.
fn caught<T>(decide: impl FnOnce() -> Result<T, Rejected>) -> Result<T, Undecided> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(decide))
        .map_err(|payload| Undecided::Panicked(panic_text(payload.as_ref())))?
        .map_err(Undecided::Rejected)
}

async fn complete(store: &Store, observation: &Observation) -> Result<usize, AppendError> {
    store
        .complete_last_decision(
            &observation.board_id,
            boardcast_kit::now_unix_ms(),
            |event| match &event.kind {
                Some(Kind::ObservationRecorded(recorded)) => recorded
                    .observation
                    .as_ref()
                    .is_some_and(|o| o.device_seq == observation.device_seq),
                _ => false,
            },
            |game| match game.decide_observation(observation) {
                Ok(ObservationOutcome::Events(events)) => events,
                _ => Vec::new(),
            },
        )
        .await
}

/// How long after this instance first found observations missing before one the board is given
/// to re-send them before they are recorded as missing (a gateway re-sends within seconds).
/// Measured on this instance's own clock, so no clock skew lengthens it.
const GAP_PATIENCE: Duration = Duration::from_secs(10);

/// How soon an observation waiting for a gap to close is delivered again.
const GAP_RECHECK: Duration = Duration::from_millis(500);

/// Why a gap was left open for now.
enum GapOpen {
    /// Observations are missing, but recently: wait for the board to re-send them.
    Waiting { missing: u64 },
    /// The board's observations could not be read or decided.
    Failed(String),
    /// NATS refused to store the decision on one of them (`AppendError::Failed`), or their game
    /// can take nothing (`Unfoldable`, `LogBroken`): decided as this observation's own.
    Refused(AppendError),
}

impl From<String> for GapOpen {
    fn from(e: String) -> Self {
        GapOpen::Failed(e)
    }
}

/// Accounts for the board's `device_seq`s between `known` and `observation`: those in the stream
/// before it were handled already and are decided again, in order (see the module comment);
/// those published after it are decided now, in order; the rest were not found and, once the
/// gap is no longer recent (`waited` since this instance first found it), are recorded as
/// missing in the game's log.
async fn close_gap(
    stream: &Stream,
    store: &Store,
    seen_here: Option<SeenBoard>,
    observation: &Observation,
    known: u64,
    stream_seq: u64,
    waited: Duration,
) -> Result<(), GapOpen> {
    let board = &observation.board_id;
    if stream_seq == 0 {
        tracing::warn!(%board, before = observation.device_seq, "gap in the board's observations: cannot look for them (no stream sequence)");
        return Ok(());
    }
    let gap = Gap {
        messages: BoardMessages {
            stream,
            subject: board_observations(board),
        },
        wanted: match gap_before(known, observation.device_seq) {
            Some(wanted) => wanted,
            None => return Ok(()),
        },
        observation,
        stream_seq,
    };
    // Where the board's messages after `known` start: right after the last one this instance
    // handled if that is as far as the game got, otherwise found by bisection from there.
    let (start, from_stream_start) = match seen_here {
        Some(s) if s.stream_seq > 0 && s.device_seq >= known => (s.stream_seq + 1, false),
        Some(s) => (
            gap.messages
                .start_after(known, s.stream_seq + 1, stream_seq)
                .await?,
            false,
        ),
        None => (gap.messages.start_after(known, 1, stream_seq).await?, true),
    };
    let mut found = gap.search(start).await?;
    if found.unaccounted(&gap.wanted) > 0 && !from_stream_start {
        // A message the board re-sent may be stored before the last one this instance handled:
        // before recording anything as missing, search from the stream's start (gaps are rare).
        found = gap
            .search(gap.messages.start_after(known, 1, stream_seq).await?)
            .await?;
    }
    let missing = found.unaccounted(&gap.wanted);
    if missing > 0 && found.complete && waited < GAP_PATIENCE {
        return Err(GapOpen::Waiting { missing });
    }
    if missing > 0 {
        // What was searched, for whoever checks a hole recorded below.
        tracing::warn!(%board, known, before = observation.device_seq, stream_seq, searched_from = start, from_stream_start, waited_ms = u64::try_from(waited.as_millis()).unwrap_or(u64::MAX), passed_over = found.passed_over.len(), later = found.later.len(), "gap in the board's observations: not all found");
    }
    if !found.passed_over.is_empty() {
        tracing::debug!(%board, count = found.passed_over.len(), before = observation.device_seq, "observations handled before (by another instance, before a restart, or before the game was set up): deciding them again in order");
    }
    // In device_seq order: a late observation is decided before the gap after it is recorded;
    // the holes between the ones accounted for are missing.
    let mut accounted: BTreeMap<u64, (Option<Observation>, bool)> = found
        .passed_over
        .into_iter()
        .map(|(seq, o)| (seq, (o, false)))
        .collect();
    accounted.extend(
        found
            .later
            .into_iter()
            .map(|(seq, o)| (seq, (Some(o), true))),
    );
    let mut first_unaccounted = gap.wanted.start;
    for (device_seq, (earlier, published_after)) in accounted {
        if device_seq > first_unaccounted {
            record_missing(
                store,
                observation,
                (first_unaccounted, device_seq - 1),
                found.complete,
            )
            .await?;
        }
        if let Some(earlier) = earlier {
            if published_after {
                tracing::info!(%board, device_seq, before = observation.device_seq, "deciding an observation that was published out of order");
            }
            let stored = match decide(store, &earlier, std::time::Instant::now()).await {
                // Unusable: its hole is recorded now, in order. Delivered itself later, it goes
                // to the dead-letter stream, but its number is accounted for by then.
                Ok(Some(Err(undecided))) => {
                    let reason = undecided.reason(board, &earlier);
                    record_unusable(store, &earlier, &reason).await
                }
                Ok(_) => Ok(()),
                Err(e) => Err(e),
            };
            match stored {
                Ok(()) => {}
                Err(
                    refused @ (AppendError::Failed { .. }
                    | AppendError::Unfoldable { .. }
                    | AppendError::LogBroken { .. }),
                ) => {
                    return Err(GapOpen::Refused(refused));
                }
                Err(e) => {
                    return Err(GapOpen::Failed(format!(
                        "deciding observation {device_seq} before it: {e}"
                    )));
                }
            }
        }
        first_unaccounted = device_seq + 1;
    }
    if first_unaccounted < gap.wanted.end {
        record_missing(
            store,
            observation,
            (first_unaccounted, gap.wanted.end - 1),
            found.complete,
        )
        .await?;
    }
    Ok(())
}

/// The `device_seq`s `wanted` that `observation` (at `stream_seq`) skipped.
struct Gap<'a> {
    messages: BoardMessages<'a>,
    wanted: std::ops::Range<u64>,
    observation: &'a Observation,
    stream_seq: u64,
}

/// What a search of the stream found of a gap's observations.
struct Found {
    /// In the stream before the observation: handled already (decoded, when they can be).
    passed_over: BTreeMap<u64, Option<Observation>>,
    /// In the stream after it: to be decided before it.
    later: BTreeMap<u64, Observation>,
    /// Every earlier message of the board from the start point was read.
    complete: bool,
}

impl Found {
    fn unaccounted(&self, wanted: &std::ops::Range<u64>) -> u64 {
        (wanted.end - wanted.start) - (self.passed_over.len() + self.later.len()) as u64
    }
}

impl Gap<'_> {
    /// Reads the board's messages from stream sequence `next` on: up to `MAX_LOOKBACK` before
    /// the observation and `LOOKAHEAD` after it, or until every wanted `device_seq` is found.
    async fn search(&self, mut next: u64) -> Result<Found, String> {
        let board = &self.observation.board_id;
        let mut found = Found {
            passed_over: BTreeMap::new(),
            later: BTreeMap::new(),
            complete: true,
        };
        let (mut read_before, mut read_after) = (0, 0);
        while found.unaccounted(&self.wanted) > 0 {
            let Some((seq, read)) = self.messages.next_from(next).await? else {
                break;
            };
            next = seq + 1;
            let read = read.filter(|o| o.board_id == *board);
            if seq < self.stream_seq {
                read_before += 1;
                if read_before > MAX_LOOKBACK {
                    // Too far back to tell passed-over from missing: only look ahead.
                    found.complete = false;
                    next = self.stream_seq + 1;
                } else if let Some(read) = read
                    && self.wanted.contains(&read.device_seq)
                {
                    found.passed_over.insert(read.device_seq, Some(read));
                }
            } else if seq > self.stream_seq {
                read_after += 1;
                if read_after > LOOKAHEAD {
                    break;
                }
                if let Some(read) = read
                    && self.wanted.contains(&read.device_seq)
                    && !found.passed_over.contains_key(&read.device_seq)
                {
                    found.later.insert(read.device_seq, read);
                }
            }
        }
        Ok(found)
    }
}

/// Records the board's observations `first..=last` as missing, when the search for them was
/// complete; otherwise only logs them.
async fn record_missing(
    store: &Store,
    observation: &Observation,
    (first, last): (u64, u64),
    search_complete: bool,
) -> Result<(), GapOpen> {
    let board = &observation.board_id;
    if !search_complete {
        tracing::warn!(%board, from = first, to = last, before = observation.device_seq, "gap in the board's observations: too many messages to tell it from passed-over ones; not recorded");
        return Ok(());
    }
    tracing::warn!(%board, from = first, to = last, before = observation.device_seq, "gap in the board's observations: never arrived, recorded as missing");
    store
        .decide_on_board(
            board,
            boardcast_kit::now_unix_ms(),
            std::time::Instant::now(),
            |game| game.decide_missing_observations(first, last, observation),
            Vec::clone,
        )
        .await
        .map(|_| ())
        .map_err(|e| match e {
            // The game can take nothing: given up at once, as its own decision would be.
            stuck @ (AppendError::Unfoldable { .. } | AppendError::LogBroken { .. }) => {
                GapOpen::Refused(stuck)
            }
            // Anything else is tried again: the observation must not be given up with a hole
            // of its own only, which would pass over the ones missing before it unrecorded.
            e => GapOpen::Failed(format!("recording the observations missing: {e}")),
        })
}

/// One board's messages in the observation stream, read by stream sequence.
struct BoardMessages<'a> {
    stream: &'a Stream,
    subject: String,
}

impl BoardMessages<'_> {
    /// The board's first message at or after stream sequence `seq`, decoded if it can be.
    async fn next_from(&self, seq: u64) -> Result<Option<(u64, Option<Observation>)>, String> {
        let message = next_message(self.stream, seq, &self.subject)
            .await
            .map_err(|e| format!("reading the board's observations: {e}"))?;
        Ok(message.map(|m| (m.sequence, Observation::decode(m.payload.as_ref()).ok())))
    }

    /// A stream sequence in `low..=before` from which the board's messages before `before`
    /// include every one after `known`. A board's messages are in `device_seq` order but for
    /// re-sent ones, so bisection finds where they pass `known`; it aims `RESEND_MARGIN` lower
    /// so that a re-sent run does not hide earlier ones.
    async fn start_after(&self, known: u64, low: u64, before: u64) -> Result<u64, String> {
        let target = known.saturating_sub(RESEND_MARGIN);
        let (mut low, mut high) = (low, before);
        while low < high {
            let middle = low + (high - low) / 2;
            match self.next_from(middle).await? {
                Some((seq, read))
                    if seq < before && read.as_ref().is_none_or(|o| o.device_seq <= target) =>
                {
                    low = seq + 1
                }
                _ => high = middle,
            }
        }
        Ok(low)
    }
}

async fn nak(message: &Message) {
    nak_after(message, Duration::from_millis(500)).await
}

async fn nak_after(message: &Message, pause: Duration) {
    if let Err(e) = message.ack_with(AckKind::Nak(Some(pause))).await {
        tracing::warn!("negative acknowledgement failed: {e}");
    }
}

async fn ack(message: &Message) {
    if let Err(e) = message.ack().await {
        tracing::warn!("acknowledging an observation failed (it will be delivered again): {e}");
    }
}

/// At most how much of an unusable observation its dead letter keeps. Anything longer was
/// refused for its size (no observation used is longer), and an observation near the server's
/// `max_payload` would not fit a message any more with the dead letter's headers: it could never
/// be kept, and its partition would wait on it for ever. Its start tells what it was; the whole
/// of it stays in its observation stream, at the sequence the headers name.
const DEAD_LETTER_PAYLOAD_BYTES: usize = boardcast_game::MAX_OBSERVATION_BYTES;

/// Keeps an unusable observation, with the reason, and acknowledges it.
async fn dead_letter(
    js: &jetstream::Context,
    message: &Message,
    board: Option<&str>,
    reason: &str,
) {
    tracing::warn!(subject = %message.subject, "rejected observation: {reason}");
    let (headers, payload) = dead_letter_of(message, reason);
    let kept = match js
        .publish_with_headers(deadletter_subject(board), headers, payload)
        .await
    {
        Ok(ack) => ack.await.map(|_| ()).map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    match kept {
        Ok(()) => ack(message).await,
        Err(e) => {
            tracing::error!(
                "cannot keep the rejected observation in {DEADLETTER_STREAM}: {e}; it will be delivered again"
            );
            let _ = message
                .ack_with(AckKind::Nak(Some(Duration::from_secs(1))))
                .await;
        }
    }
}

/// The dead letter of `message`: its reason, where the observation is kept whole, and the
/// observation, cut to [`DEAD_LETTER_PAYLOAD_BYTES`].
fn dead_letter_of(message: &Message, reason: &str) -> (HeaderMap, bytes::Bytes) {
    let mut headers = HeaderMap::new();
    headers.insert(REASON_HEADER, header_value(reason).as_str());
    headers.insert(ORIGINAL_SUBJECT_HEADER, message.subject.as_str());
    if let Ok(info) = message.info() {
        headers.insert(ORIGINAL_STREAM_HEADER, info.stream);
        headers.insert(
            ORIGINAL_SEQUENCE_HEADER,
            info.stream_sequence.to_string().as_str(),
        );
    }
    let mut payload = message.payload.clone();
    if payload.len() > DEAD_LETTER_PAYLOAD_BYTES {
        headers.insert(ORIGINAL_BYTES_HEADER, payload.len().to_string().as_str());
        payload.truncate(DEAD_LETTER_PAYLOAD_BYTES);
    }
    (headers, payload)
}

/// At most how long a dead letter's reason header is.
const REASON_HEADER_BYTES: usize = 2_000;

/// `text` as a NATS header value: on one line (a header cannot hold a line break, and a panic's
/// message often has several), and not longer than `REASON_HEADER_BYTES`.
fn header_value(text: &str) -> String {
    let one_line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    boardcast_kit::cut_to(one_line, REASON_HEADER_BYTES)
}

#[cfg(test)]
mod tests {
    use boardcast_game::device::{ClockReading, observation::Kind};
    use proptest::prelude::*;

    use super::*;

    fn observation(board: String, device_seq: u64, ms: u64) -> Observation {
        Observation {
            board_id: board,
            device_seq,
            device_time_unix_ms: ms as i64,
            kind: Some(Kind::Clock(ClockReading {
                white_remaining_ms: ms,
                black_remaining_ms: u64::MAX - ms,
                ..Default::default()
            })),
            ..Default::default()
        }
    }

    #[test]
    fn a_reason_with_several_lines_makes_a_header() {
        let caught = std::panic::catch_unwind(|| assert_eq!(1 + 1, 3)).expect_err("it panics");
        let reason = format!(
            "handling it failed unexpectedly (a bug): {}",
            panic_text(caught.as_ref())
        );
        assert!(reason.contains('\n'), "{reason:?}");
        let mut headers = HeaderMap::new();
        headers.insert(REASON_HEADER, header_value(&reason).as_str());
        let kept = headers.get(REASON_HEADER).map(|v| v.as_str().to_owned());
        assert!(kept.is_some_and(|v| v.contains("left: 2") && v.contains("right: 3")));
        assert!(header_value(&"x".repeat(5_000)).len() <= REASON_HEADER_BYTES);
    }

    proptest! {
        /// Any bytes on any subject: read, or refused with a reason; never a panic.
        #[test]
        fn any_message_is_read_or_refused_with_a_reason(
            subject in "[a-z0-9.*>]{0,40}",
            payload in proptest::collection::vec(any::<u8>(), 0..600),
        ) {
            match read_observation(&subject, &payload) {
                Ok(o) => prop_assert_eq!(board_of_subject(&subject), Some(o.board_id.as_str())),
                Err(reason) => prop_assert!(!reason.is_empty()),
            }
        }

        /// A well-formed observation with extreme values is read exactly when its subject names
        /// its board, partitioned or not.
        #[test]
        fn an_observation_is_read_only_on_its_boards_subject(
            board in "[a-z0-9-]{1,12}",
            other in "[a-z0-9-]{1,12}",
            device_seq in any::<u64>(),
            ms in any::<u64>(),
            partition in 0u32..64,
        ) {
            let payload = observation(board.clone(), device_seq, ms).encode_to_vec();
            for subject in [
                format!("boardcast.board.{board}.obs"),
                format!("boardcast.board.{board}.obs.{partition}"),
            ] {
                let read = read_observation(&subject, &payload).expect("its own board");
                prop_assert_eq!(read.device_seq, device_seq);
            }
            let elsewhere = read_observation(&format!("boardcast.board.{other}.obs"), &payload);
            prop_assert_eq!(elsewhere.is_ok(), other == board);
        }

        /// Whatever a decision came to, after any number of attempts and whatever the board's
        /// numbers: a disposition and no panic, a reason for every dead letter, a bounded pause
        /// for every retry, and never a give-up for a conflict or NATS being away.
        #[test]
        fn every_decision_has_a_disposition(
            outcome in 0u8..12,
            device_seq in any::<u64>(),
            other_seq in any::<u64>(),
            ms in any::<u64>(),
            failures in any::<u32>(),
            refusals in any::<u32>(),
            seen_before in any::<u64>(),
        ) {
            let obs = observation("b1".into(), device_seq, ms);
            let ignored = |why: Ignored| decided(Ok(ObservationOutcome::Ignored(why)));
            let decision = match outcome {
                0 => Ok(None),
                1 => decided(Err(Undecided::Rejected(Rejected::ImplausibleClock { ms }))),
                2 => decided(Err(Undecided::Rejected(Rejected::ImplausibleSequence {
                    device_seq,
                    accounted: other_seq,
                }))),
                3 => decided(Err(Undecided::Panicked("attempt to add with overflow".into()))),
                4 => decided(Ok(ObservationOutcome::Events(Vec::new()))),
                5 => ignored(Ignored::Duplicate { device_seq, last_applied: other_seq }),
                6 => ignored(Ignored::EarlierGame { device_seq, earlier_game_last: other_seq }),
                7 => ignored(Ignored::AfterItsGap { device_seq }),
                8 => ignored(Ignored::GameOver),
                9 => Err(AppendError::Conflict("g".into())),
                10 => Err(AppendError::Unavailable {
                    game_id: "g".into(),
                    reason: "timed out".into(),
                }),
                _ => Err(AppendError::Failed {
                    game_id: "g".into(),
                    reason: "maximum payload exceeded".into(),
                }),
            };
            let tried = &Attempts { failures, refusals, ..Attempts::default() };
            match disposition(&decision, &obs, tried, seen_before) {
                Disposition::DeadLetter { reason, .. } => prop_assert!(!reason.is_empty()),
                Disposition::Retry { pause } => {
                    prop_assert!(pause <= FIRST_RETRY_PAUSE.saturating_mul(64), "{pause:?}");
                }
                Disposition::Ack { .. } => prop_assert!((4..=8).contains(&outcome)),
            }
            if (9..=10).contains(&outcome) {
                let retried = matches!(
                    disposition(&decision, &obs, tried, seen_before),
                    Disposition::Retry { .. }
                );
                prop_assert!(retried, "a conflict or NATS away is tried again");
            }
        }

        /// The gap arithmetic never overflows: a gap is the numbers strictly between the last
        /// one accounted for and the new one, and only for a plausible jump.
        #[test]
        fn a_gap_lies_strictly_between(known in any::<u64>(), device_seq in any::<u64>()) {
            match gap_before(known, device_seq) {
                Some(gap) => {
                    prop_assert!(known < gap.start && gap.start < gap.end);
                    prop_assert_eq!(gap.end, device_seq);
                    prop_assert!(plausible_device_seq(known, device_seq));
                }
                None => prop_assert!(
                    device_seq <= known.saturating_add(1)
                        || !plausible_device_seq(known, device_seq)
                ),
            }
        }
    }

    fn decided(
        outcome: Result<ObservationOutcome, Undecided>,
    ) -> Result<Option<Decision>, AppendError> {
        Ok(Some(outcome))
    }

    #[test]
    fn a_panic_in_a_decision_becomes_an_undecided_observation_with_its_message() {
        // An arithmetic overflow (overflow checks are on in every build profile).
        let overflowed = caught(|| Ok(std::hint::black_box(u64::MAX) + 1));
        assert!(
            matches!(&overflowed, Err(Undecided::Panicked(m)) if m.contains("overflow")),
            "{overflowed:?}"
        );
        let with_text = caught::<()>(|| panic!("a bug on board {}", 7));
        assert!(
            matches!(&with_text, Err(Undecided::Panicked(m)) if m == "a bug on board 7"),
            "{with_text:?}"
        );
        let rejected = caught::<()>(|| Err(Rejected::Empty));
        assert!(matches!(
            rejected,
            Err(Undecided::Rejected(Rejected::Empty))
        ));
        assert!(matches!(caught(|| Ok(5)), Ok(5)));
    }

    #[test]
    fn each_decision_has_its_disposition() {
        let obs = observation("b1".into(), 7, 1_000);
        let ack = Disposition::Ack {
            complete_first: false,
        };
        let applied = decided(Ok(ObservationOutcome::Events(Vec::new())));
        assert_eq!(disposition(&applied, &obs, &Attempts::default(), 6), ack);
        let no_change = decided(Ok(ObservationOutcome::Ignored(Ignored::ClockTick)));
        assert_eq!(disposition(&no_change, &obs, &Attempts::default(), 6), ack);
        // The last applied one again: its decision may be stored in part, complete it.
        let again = |last_applied| {
            decided(Ok(ObservationOutcome::Ignored(Ignored::Duplicate {
                device_seq: 7,
                last_applied,
            })))
        };
        assert_eq!(
            disposition(&again(7), &obs, &Attempts::default(), 7),
            Disposition::Ack {
                complete_first: true
            }
        );
        assert_eq!(disposition(&again(9), &obs, &Attempts::default(), 9), ack);
        // No game on the board: dead-lettered, not counted as seen (a game set up a moment later
        // brings it back).
        let none = disposition(&Ok(None), &obs, &Attempts::default(), 6);
        assert!(
            matches!(&none, Disposition::DeadLetter { hole: Hole::NoGame, reason } if reason.contains("b1"))
        );
        assert!(!none.accounts_for_it());
        // Refused for good, or a bug: dead-lettered, with the hole recorded first.
        let refused = decided(Err(Undecided::Rejected(Rejected::InvalidSquare(99))));
        let panicked = decided(Err(Undecided::Panicked("overflow".into())));
        for decided in [refused, panicked] {
            let d = disposition(&decided, &obs, &Attempts::default(), 6);
            assert!(
                matches!(
                    &d,
                    Disposition::DeadLetter {
                        hole: Hole::ToRecord,
                        ..
                    }
                ),
                "{d:?}"
            );
            assert!(d.accounts_for_it());
        }
        // After its gap was recorded: dead-lettered, the hole is in the record already.
        let late = decided(Ok(ObservationOutcome::Ignored(Ignored::AfterItsGap {
            device_seq: 7,
        })));
        assert!(matches!(
            disposition(&late, &obs, &Attempts::default(), 9),
            Disposition::DeadLetter {
                hole: Hole::Recorded,
                ..
            }
        ));
    }

    #[test]
    fn a_decision_that_cannot_be_stored_is_retried_with_growing_pauses_then_given_up() {
        let obs = observation("b1".into(), 7, 1_000);
        let failed = Err(AppendError::Failed {
            game_id: "g".into(),
            reason: "maximum payload exceeded".into(),
        });
        let refused = |n: u32| Attempts {
            failures: n,
            refusals: n,
            ..Attempts::default()
        };
        let pauses: Vec<Duration> = (0..MAX_FAILURES - 1)
            .map(|n| match disposition(&failed, &obs, &refused(n), 6) {
                Disposition::Retry { pause } => pause,
                other => panic!("attempt {n}: {other:?}"),
            })
            .collect();
        assert!(pauses.windows(2).all(|p| p[0] < p[1]), "{pauses:?}");
        assert!(matches!(
            disposition(&failed, &obs, &refused(MAX_FAILURES - 1), 6),
            Disposition::DeadLetter {
                hole: Hole::ToRecord,
                ..
            }
        ));
        // Only refusals count: after an election's many attempts, a first refusal is tried again.
        let after_an_election = Attempts {
            failures: 50,
            ..Attempts::default()
        };
        assert!(matches!(
            disposition(&failed, &obs, &after_an_election, 6),
            Disposition::Retry { .. }
        ));
        // A conflict is never given up here: the log moved on, the decision is made again. Nor
        // is NATS being away (an election can last longer than the five attempts).
        let conflict = Err(AppendError::Conflict("b1".into()));
        let unavailable = Err(AppendError::Unavailable {
            game_id: "g".into(),
            reason: "no stream found for given subject".into(),
        });
        for not_given_up in [conflict, unavailable] {
            assert!(matches!(
                disposition(&not_given_up, &obs, &refused(50), 6),
                Disposition::Retry { .. }
            ));
        }
    }

    #[test]
    fn a_game_that_trying_again_cannot_mend_gives_its_observations_up_at_once() {
        let obs = observation("b1".into(), 7, 1_000);
        let forked = Err(AppendError::LogBroken {
            game_id: "g".into(),
            reason: "it holds two records numbered 4: forked".into(),
        });
        let unfoldable = Err(AppendError::Unfoldable {
            game_id: "g".into(),
            reason: "folding record 4 panicked".into(),
        });
        for stuck in [forked, unfoldable] {
            let d = disposition(&stuck, &obs, &Attempts::default(), 6);
            let said = stuck.as_ref().err().map(ToString::to_string);
            match &d {
                Disposition::DeadLetter {
                    reason,
                    hole: Hole::Unrecordable,
                } => assert_eq!(Some(reason), said.as_ref()),
                other => panic!("{other:?}"),
            }
            assert!(!d.accounts_for_it(), "found in the gap once it is mended");
        }
    }

    #[test]
    fn an_observation_is_known_stored_by_an_earlier_delivery_only_when_all_in_between_came_here() {
        let t0 = std::time::Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        let delivery = |stream_seq, ms, pending| Delivery {
            stream_seq,
            at: at(ms),
            pending,
        };
        let mut state = PartitionState::default();
        // The first one seen: only now.
        assert_eq!(state.stored_by(delivery(10, 0, 5), true), at(0));
        // The next ones in the stream, which the stream held when 10 came (five more: up to
        // 15): stored by then.
        assert_eq!(state.stored_by(delivery(11, 2, 4), true), at(0));
        assert_eq!(state.stored_by(delivery(12, 4, 3), true), at(0));
        assert_eq!(state.stored_by(delivery(13, 6, 3), true), at(0));
        assert_eq!(state.stored_by(delivery(14, 8, 2), true), at(0));
        assert_eq!(state.stored_by(delivery(15, 10, 0), true), at(0));
        // 16 was stored after 12 was handed out, before 13 was.
        assert_eq!(state.stored_by(delivery(16, 12, 0), true), at(6));
        // Nothing was waiting when 16 came: 17 may have been stored after it.
        assert_eq!(state.stored_by(delivery(17, 14, 0), true), at(14));
        // A message skipped (handed to another instance, or removed): only now.
        assert_eq!(state.stored_by(delivery(19, 16, 9), true), at(16));
        // Delivered again (NAKed, or its acknowledgement lost): only now, and the run restarts.
        assert_eq!(state.stored_by(delivery(20, 18, 9), false), at(18));
        assert_eq!(state.stored_by(delivery(21, 20, 9), true), at(20));
        assert_eq!(state.stored_by(delivery(22, 22, 9), true), at(20));
        // Stream sequences at the end of u64 do not wrap around.
        let mut state = PartitionState::default();
        assert_eq!(
            state.stored_by(delivery(u64::MAX, 0, u64::MAX), true),
            at(0)
        );
        assert_eq!(state.stored_by(delivery(0, 2, 0), true), at(2));
    }

    #[test]
    fn what_was_seen_of_a_board_holds_for_its_game_as_folded_then_only() {
        let mut seen = Seen::default();
        let game = |id: &str, generation| (id.to_owned(), generation);
        seen.note("b1", Some(&game("g", 0)), 6, 60);
        seen.note("b1", Some(&game("g", 0)), 4, 70);
        let of = |g: &GameFolded| seen.of("b1", Some(g)).map(|s| (s.device_seq, s.stream_seq));
        assert_eq!(
            of(&game("g", 0)),
            Some((6, 60)),
            "a re-sent one moves nothing"
        );
        // Folded afresh from its log (records it held may have been removed): none holds.
        assert_eq!(of(&game("g", 1)), None);
        // Nor for another game set up on the board.
        assert_eq!(of(&game("h", 0)), None);
    }

    #[test]
    fn gaps_at_the_edges() {
        assert_eq!(gap_before(0, 1), None);
        assert_eq!(gap_before(0, 3), Some(1..3));
        assert_eq!(gap_before(5, 6), None);
        assert_eq!(gap_before(u64::MAX, 1), None);
        assert_eq!(gap_before(u64::MAX - 1, u64::MAX), None);
        // Far beyond any plausible jump: not a gap to look for, the decision rejects it.
        assert_eq!(gap_before(10, u64::MAX), None);
    }
}

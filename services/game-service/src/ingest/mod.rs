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

use std::{collections::BTreeSet, sync::Arc, time::Duration};

use anyhow::Context as _;
use async_nats::jetstream::{
    self, AckKind,
    consumer::{DeliverPolicy, pull},
    context::ConsumerInfoErrorKind,
    message::Message,
    stream::Stream,
};
use boardcast_game::{ObservationOutcome, device::Observation, events::game_event::Kind};
use boardcast_kit::nats::{
    INGEST_STREAM, INGEST_SUBJECTS, board_of_subject, ingest_stream, observation_partitions,
};
use boardcast_kit::nats_access::{GAME_SERVICE_CONSUMER, ingest_consumer};
use boardcast_kit::panic_text;
use futures::{FutureExt as _, StreamExt};
use tracing::Instrument as _;

mod dead_letter;
mod gaps;
mod policy;

use dead_letter::{dead_letter, give_up};
use gaps::{GAP_RECHECK, GapOpen, close_gap};
use policy::{
    Decision, Delivery, Disposition, FIRST_RETRY_PAUSE, GameFolded, Hole, PartitionState,
    Undecided, caught, disposition, gap_before, read_observation,
};

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
        None => decide(store, &observation, stored_by, in_progress.is_some()).await,
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

/// Decides `observation`, stored in the stream by `stored_by` (see `PartitionState::stored_by`),
/// on the game live on its board. `gap_looked_for`: the gap before it was looked for on a game
/// in play; when it was not (the game was over) and the game is in play now (an arbiter resumed
/// play meanwhile) with observations between, those are decided first (`Undecided::GapFirst`).
async fn decide(
    store: &Store,
    observation: &Observation,
    stored_by: std::time::Instant,
    gap_looked_for: bool,
) -> Result<Option<Decision>, AppendError> {
    store
        .decide_on_board(
            &observation.board_id,
            boardcast_kit::now_unix_ms(),
            stored_by,
            |game| {
                if !gap_looked_for
                    && !game.is_over()
                    && gap_before(game.board_seq_accounted(), observation.device_seq).is_some()
                {
                    return Err(Undecided::GapFirst);
                }
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

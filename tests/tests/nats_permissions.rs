//! Who may do what on NATS: a real nats-server started with the users and permissions of
//! `boardcast_kit::nats_access`. Each refusal is checked twice: the caller gets an error and the
//! server's reason ("Permissions Violation for Publish to …") reaches the connection's events,
//! and the streams are as they were.
//!
//! A refused JetStream call gets no answer (the server drops the request), so it fails by
//! timing out: the clients here use a short JetStream timeout to keep the tests fast.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use anyhow::Context as _;
use async_nats::jetstream::{
    self,
    consumer::{AckPolicy, DeliverPolicy, pull},
    context::PublishErrorKind,
    message::PublishMessage,
};
use boardcast_kit::{
    nats::{
        self, ASSIGNMENTS_STREAM, BoardRead::OwnBoard, DEADLETTER_STREAM, DEFAULT_PARTITIONS,
        DELAYS_STREAM, DELAYS_SUBJECTS, GAMES_STREAM, GAMES_SUBJECTS, INGEST_STREAM,
        SESSIONS_STREAM, assignment_subject, deadletter_subject, delay_subject, game_subject,
        ingest_stream, observation_message_id, observation_subject,
    },
    nats_access::{NatsAccess, Role, ingest_consumer},
};
use boardcast_testkit::{TestNats, secure_nats::SecureNats};
use futures::StreamExt as _;
use prost::Message as _;

/// How long a client waits for JetStream's answer; a refused request gets none.
const JS_TIMEOUT: Duration = Duration::from_secs(1);

/// A connection as one user, with what the server refused on it.
struct As {
    js: jetstream::Context,
    refusals: Arc<Mutex<Vec<String>>>,
}

impl As {
    async fn connect(nats: &SecureNats, role: Role) -> anyhow::Result<As> {
        Self::connect_url(&nats.url_for(&role)?, &role.user_name()).await
    }

    async fn connect_url(url: &str, name: &str) -> anyhow::Result<As> {
        let refusals = Arc::new(Mutex::new(Vec::new()));
        let seen = refusals.clone();
        // The same connection the services make, with an observer of its events.
        let client = nats::connect_observed(url, name, move |event| {
            if nats::is_refusal(event)
                && let Ok(mut seen) = seen.lock()
            {
                seen.push(event.to_string());
            }
        })
        .await?;
        let js = jetstream::ContextBuilder::new()
            .timeout(JS_TIMEOUT)
            .ack_timeout(JS_TIMEOUT)
            .build(client);
        Ok(As { js, refusals })
    }

    /// Waits for the server's refusal mentioning `subject`.
    async fn refused(&self, subject: &str) -> anyhow::Result<String> {
        let needle = format!("Permissions Violation for Publish to \"{subject}\"");
        for _ in 0..100 {
            if let Some(found) = self
                .refusals
                .lock()
                .map_err(|_| anyhow::anyhow!("poisoned"))?
                .iter()
                .find(|r| r.contains(&needle))
            {
                return Ok(found.clone());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        anyhow::bail!(
            "no refusal for {subject}; refusals: {:?}",
            self.refusals.lock().map(|r| r.clone()).unwrap_or_default()
        )
    }

    fn refusal_count(&self) -> usize {
        self.refusals.lock().map(|r| r.len()).unwrap_or(0)
    }

    /// Publishes an observation of `board` to JetStream and waits for the acknowledgement.
    /// Publishes as a board does; the stream it was stored in, and where.
    async fn publish_observation(
        &self,
        board: &str,
        device_seq: u64,
    ) -> anyhow::Result<(String, u64)> {
        let ack = self
            .publish_with_id(
                board,
                device_seq,
                &observation_message_id(board, device_seq, rand::random()),
            )
            .await?;
        Ok((ack.stream, ack.sequence))
    }

    /// Publishes an observation of `board` under the message id `id`.
    async fn publish_with_id(
        &self,
        board: &str,
        device_seq: u64,
        id: &str,
    ) -> anyhow::Result<jetstream::publish::PublishAck> {
        let message = PublishMessage::build()
            .payload(observation(board, device_seq).into())
            .message_id(id);
        Ok(self
            .js
            .send_publish(observation_subject(board), message)
            .await?
            .await?)
    }

    /// Appends a record to `game`'s log, as the game service does.
    async fn append(&self, game: &str, payload: &str, expected_last: u64) -> anyhow::Result<u64> {
        let message = PublishMessage::build()
            .payload(payload.to_owned().into())
            .message_id(format!("{game}:{expected_last}"))
            .expected_last_sequence(expected_last);
        let ack = self
            .js
            .send_publish(game_subject(game), message)
            .await?
            .await?;
        Ok(ack.sequence)
    }
}

fn observation(board: &str, device_seq: u64) -> Vec<u8> {
    boardcast_schema::device::v1::Observation {
        board_id: board.to_owned(),
        device_seq,
        ..Default::default()
    }
    .encode_to_vec()
}

async fn messages_in(js: &jetstream::Context, stream: &str) -> anyhow::Result<u64> {
    Ok(js
        .get_stream(stream)
        .await?
        .get_info()
        .await?
        .state
        .messages)
}

/// The admin's view, to check what is stored.
async fn admin(nats: &SecureNats) -> anyhow::Result<As> {
    As::connect(nats, Role::Admin).await
}

async fn with_streams(nats: &SecureNats) -> anyhow::Result<As> {
    let game = As::connect(nats, Role::GameService).await?;
    nats::ensure_streams(&game.js, 1, boardcast_kit::nats::DEFAULT_PARTITIONS).await?;
    Ok(game)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_gateway_publishes_for_its_own_boards_only() -> anyhow::Result<()> {
    let nats = TestNats::start_secured(&[("hall-a", &["a1", "a2"]), ("hall-b", &["b1"])])?;
    let _game = with_streams(&nats).await?;
    let admin = admin(&nats).await?;
    let hall_a = As::connect(&nats, Role::Gateway("hall-a".into())).await?;
    let hall_b = As::connect(&nats, Role::Gateway("hall-b".into())).await?;

    // Its own boards: stored, each in its partition's stream, and acknowledged.
    let partition_stream =
        |board: &str| ingest_stream(Some(nats::partition_of_board(board, DEFAULT_PARTITIONS)));
    assert_eq!(
        hall_a.publish_observation("a1", 1).await?,
        (partition_stream("a1"), 1)
    );
    assert_eq!(
        hall_a.publish_observation("a2", 1).await?,
        (partition_stream("a2"), 1)
    );

    // Another gateway's board: refused, with the server's reason, and not stored.
    let refused = hall_a.publish_observation("b1", 1).await;
    assert!(refused.is_err(), "publishing for board b1 must fail");
    // Refused in the gateway's own account, on the subject it published (the hall's account,
    // where the partition mapping is, never sees it).
    hall_a.refused(&observation_subject("b1")).await?;
    // A board nobody has: the same.
    assert!(hall_a.publish_observation("z9", 1).await.is_err());
    hall_a.refused(&observation_subject("z9")).await?;
    for board in ["b1", "z9"] {
        assert_eq!(
            nats::last_board_seq(&admin.js, board, nats::BoardRead::Leader).await?,
            0,
            "nothing stored for {board}"
        );
    }
    assert_eq!(observations_stored(&admin.js).await?, 2);

    // The owner of b1 may; the gateway reads its boards' numbering back (`last_board_seq`).
    assert_eq!(
        hall_b.publish_observation("b1", 7).await?,
        (partition_stream("b1"), 1)
    );
    assert_eq!(nats::last_board_seq(&hall_b.js, "b1", OwnBoard).await?, 7);
    assert_eq!(nats::last_board_seq(&hall_a.js, "a1", OwnBoard).await?, 1);
    assert_eq!(nats::last_board_seq(&hall_a.js, "a2", OwnBoard).await?, 1);

    // Another gateway's board it may not read, by a direct get or a message get: it would see
    // that board's moves live, before any broadcast delay.
    let b1_stream = partition_stream("b1");
    let b1_stored = format!(
        "{}.{}",
        observation_subject("b1"),
        nats::partition_of_board("b1", DEFAULT_PARTITIONS)
    );
    let stream = hall_a.js.get_stream_no_info(&b1_stream).await?;
    assert!(
        stream
            .direct_get_last_for_subject(&b1_stored)
            .await
            .is_err(),
        "a direct get of another gateway's board must be refused"
    );
    hall_a
        .refused(&format!("$JS.API.DIRECT.GET.{b1_stream}.{b1_stored}"))
        .await?;
    assert!(
        stream
            .get_last_raw_message_by_subject(&b1_stored)
            .await
            .is_err(),
        "a message get must be refused"
    );
    hall_a
        .refused(&format!("$JS.API.STREAM.MSG.GET.{b1_stream}"))
        .await?;
    assert!(
        stream.direct_get(1).await.is_err(),
        "a direct get by sequence must be refused"
    );
    hall_a
        .refused(&format!("$JS.API.DIRECT.GET.{b1_stream}"))
        .await?;
    assert!(
        nats::last_board_seq(&hall_a.js, "b1", OwnBoard)
            .await
            .is_err()
    );
    assert!(
        nats::last_board_seq(&hall_a.js, "b1", nats::BoardRead::Leader)
            .await
            .is_err()
    );

    // Nor may a gateway create consumers (it could read every board's observations).
    let created = create_ingest_consumer(&hall_a.js, "sneaky").await;
    assert!(created.is_err(), "a gateway may not create consumers");
    hall_a
        .refused(&format!(
            "$JS.API.CONSUMER.CREATE.{}.sneaky",
            partition_stream("a1")
        ))
        .await?;
    Ok(())
}

/// A partition stream's duplicate window is shared by every board in it: a gateway that could
/// claim the message id of another gateway's next observation, publishing first on its own
/// board's subject, would have that observation acknowledged and dropped. The ids carry the
/// publisher's secret nonce, so all it can claim is what it can compute.
#[tokio::test(flavor = "multi_thread")]
async fn a_gateway_cannot_have_another_boards_observations_dropped_as_duplicates()
-> anyhow::Result<()> {
    let partition = |board: &str| nats::partition_of_board(board, DEFAULT_PARTITIONS);
    let victim = "b1";
    let own = (1..)
        .map(|i| format!("a{i}"))
        .find(|board| partition(board) == partition(victim))
        .unwrap_or_default();
    let nats = TestNats::start_secured(&[("hall-a", &[own.as_str()]), ("hall-b", &[victim])])?;
    let _game = with_streams(&nats).await?;
    let admin = admin(&nats).await?;
    let hall_a = As::connect(&nats, Role::Gateway("hall-a".into())).await?;
    let hall_b = As::connect(&nats, Role::Gateway("hall-b".into())).await?;

    // The board and its next numbers are easy to know; the ids made of them are claimed.
    for seq in 1..=3 {
        for id in [
            format!("{victim}:{seq}"),
            observation_message_id(victim, seq, 0),
            observation_message_id(victim, seq, seq),
        ] {
            let ack = hall_a.publish_with_id(&own, seq, &id).await?;
            assert_eq!(ack.stream, ingest_stream(Some(partition(victim))));
        }
    }
    // The victim's gateway publishes as gateways do: each observation stored, none taken for
    // a duplicate; and a resend of one is still a duplicate.
    let nonces: [u64; 3] = rand::random();
    for (seq, nonce) in (1..=3).zip(nonces) {
        let id = observation_message_id(victim, seq, nonce);
        let ack = hall_b.publish_with_id(victim, seq, &id).await?;
        assert!(!ack.duplicate, "observation {seq} taken for a duplicate");
        let again = hall_b.publish_with_id(victim, seq, &id).await?;
        assert!(again.duplicate, "a resend of {seq} stored twice");
    }
    assert_eq!(
        nats::last_board_seq(&admin.js, victim, nats::BoardRead::Leader).await?,
        3
    );
    assert_eq!(observations_stored(&admin.js).await?, 9 + 3);
    Ok(())
}

/// Observations stored in every observation stream.
async fn observations_stored(js: &jetstream::Context) -> anyhow::Result<u64> {
    let mut stored = 0;
    for partition in nats::observation_partitions(js).await? {
        stored += messages_in(js, &ingest_stream(partition)).await?;
    }
    Ok(stored)
}

/// The partition of board `a1`, whose observation stream the consumers below are made on.
fn a1_partition() -> u32 {
    nats::partition_of_board("a1", DEFAULT_PARTITIONS)
}

/// Creates a durable consumer on the observation stream of `a1`'s partition.
async fn create_ingest_consumer(js: &jetstream::Context, name: &str) -> anyhow::Result<()> {
    js.get_stream_no_info(ingest_stream(Some(a1_partition())))
        .await?
        .create_consumer(pull::Config {
            durable_name: Some(name.to_owned()),
            ..Default::default()
        })
        .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn only_the_game_service_writes_game_logs() -> anyhow::Result<()> {
    let nats = TestNats::start_secured(&[("hall-a", &["a1"])])?;
    let game = with_streams(&nats).await?;
    let admin = admin(&nats).await?;
    assert_eq!(game.append("g1", "record 1", 0).await?, 1);

    let others = [
        Role::BroadcastService,
        Role::ArbiterService,
        Role::Gateway("hall-a".into()),
        Role::Simulator,
    ];
    let mut clients = Vec::new();
    for role in others {
        clients.push((role.clone(), As::connect(&nats, role).await?));
    }
    let attempts = clients.iter().map(|(role, client)| async move {
        let appended = client.append("g1", "forged", 1).await;
        let dead_letter = client
            .js
            .publish(deadletter_subject(Some("a1")), "forged".into())
            .await;
        let dead_letter = match dead_letter {
            Ok(ack) => ack.await.map(|_| ()).map_err(anyhow::Error::from),
            Err(e) => Err(e.into()),
        };
        let assignment = client
            .js
            .publish(assignment_subject("open"), "forged".into())
            .await;
        let assignment = match assignment {
            Ok(ack) => ack.await.map(|_| ()).map_err(anyhow::Error::from),
            Err(e) => Err(e.into()),
        };
        let delay = client
            .js
            .publish(delay_subject("open"), "forged".into())
            .await;
        let delay = match delay {
            Ok(ack) => ack.await.map(|_| ()).map_err(anyhow::Error::from),
            Err(e) => Err(e.into()),
        };
        (role, appended, dead_letter, assignment, delay)
    });
    for (role, appended, dead_letter, assignment, delay) in
        futures::future::join_all(attempts).await
    {
        assert!(appended.is_err(), "{role} appended to a game log");
        assert!(dead_letter.is_err(), "{role} wrote a dead letter");
        assert!(assignment.is_err(), "{role} assigned an arbiter");
        assert!(delay.is_err(), "{role} set a broadcast delay");
    }
    for (_, client) in &clients {
        client.refused("boardcast.game.g1.events").await?;
        client.refused("boardcast.deadletter.a1").await?;
        client.refused("boardcast.assignments.open").await?;
        client.refused("boardcast.delays.open").await?;
    }

    // The log is as the game service left it.
    let games = admin.js.get_stream(GAMES_STREAM).await?;
    let info = games.get_info().await?;
    assert_eq!((info.state.messages, info.state.last_sequence), (1, 1));
    let last = games
        .get_last_raw_message_by_subject(&game_subject("g1"))
        .await?;
    assert_eq!(last.payload.as_ref(), b"record 1");
    assert_eq!(messages_in(&admin.js, DEADLETTER_STREAM).await?, 0);
    assert_eq!(messages_in(&admin.js, ASSIGNMENTS_STREAM).await?, 0);
    assert_eq!(messages_in(&admin.js, DELAYS_STREAM).await?, 0);

    // The game service goes on appending where it was.
    assert_eq!(game.append("g1", "record 2", 1).await?, 2);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn only_admin_deletes_purges_or_reconfigures() -> anyhow::Result<()> {
    let nats = TestNats::start_secured(&[])?;
    let game = with_streams(&nats).await?;
    let admin = admin(&nats).await?;
    let broadcast = As::connect(&nats, Role::BroadcastService).await?;
    game.append("g1", "record 1", 0).await?;
    game.append("g2", "record 2", 1).await?;
    let consumer_name = ingest_consumer(Some(a1_partition()));
    let observations = ingest_stream(Some(a1_partition()));
    create_ingest_consumer(&game.js, &consumer_name).await?;

    async fn attempts(
        client: &As,
        consumer_name: &str,
        observations: &str,
    ) -> anyhow::Result<Vec<(String, bool)>> {
        let js = &client.js;
        // Both may read BOARDCAST_GAMES.
        let games = js.get_stream(GAMES_STREAM).await?;
        let purge = games.purge().await.is_err();
        let mut config = games.cached_info().config.clone();
        config.max_messages = 1;
        let (delete, update, delete_consumer, delete_ingest) = tokio::join!(
            js.delete_stream(GAMES_STREAM),
            js.update_stream(config),
            js.delete_consumer_from_stream(consumer_name, observations),
            js.delete_stream(observations),
        );
        Ok(vec![
            ("$JS.API.STREAM.PURGE.BOARDCAST_GAMES".into(), purge),
            (
                "$JS.API.STREAM.DELETE.BOARDCAST_GAMES".into(),
                delete.is_err(),
            ),
            (
                "$JS.API.STREAM.UPDATE.BOARDCAST_GAMES".into(),
                update.is_err(),
            ),
            (
                format!("$JS.API.CONSUMER.DELETE.{observations}.{consumer_name}"),
                delete_consumer.is_err(),
            ),
            (
                format!("$JS.API.STREAM.DELETE.{observations}"),
                delete_ingest.is_err(),
            ),
        ])
    }
    let (from_game, from_broadcast) = tokio::join!(
        attempts(&game, &consumer_name, &observations),
        attempts(&broadcast, &consumer_name, &observations)
    );
    for (who, client, results) in [
        ("game-service", &game, from_game?),
        ("broadcast-service", &broadcast, from_broadcast?),
    ] {
        for (subject, failed) in results {
            assert!(failed, "{who}: {subject} must fail");
            client.refused(&subject).await?;
        }
    }

    // Everything is still there.
    let games = admin.js.get_stream(GAMES_STREAM).await?;
    let info = games.get_info().await?;
    assert_eq!(info.state.messages, 2);
    assert_eq!(info.config.max_messages, -1, "configuration unchanged");
    let ingest = admin.js.get_stream(&observations).await?;
    ingest
        .consumer_info(&consumer_name)
        .await
        .context("the game service's consumer is still there")?;

    // The admin may.
    let purged = games.purge().await?;
    assert_eq!(purged.purged, 2);
    assert!(admin.js.delete_stream(GAMES_STREAM).await?.success);
    assert!(admin.js.get_stream(GAMES_STREAM).await.is_err());
    assert_eq!(admin.refusal_count(), 0);
    Ok(())
}

/// Asking a stream's leader to step down is the admin's alone: no service needs it on a current
/// nats-server, and every refusal leaves the leader as it was.
#[tokio::test(flavor = "multi_thread")]
async fn only_the_admin_asks_a_streams_leader_to_step_down() -> anyhow::Result<()> {
    let nats = TestNats::start_secured(&[("hall-a", &["a1"])])?;
    let _streams = with_streams(&nats).await?;
    for role in [
        Role::GameService,
        Role::BroadcastService,
        Role::ArbiterService,
        Role::Simulator,
        Role::Gateway("hall-a".into()),
    ] {
        let other = As::connect(&nats, role.clone()).await?;
        for stream in [GAMES_STREAM.to_owned(), ingest_stream(Some(0))] {
            assert!(
                nats::step_down_stream_leader(&other.js, &stream)
                    .await
                    .is_err(),
                "{role}"
            );
            other
                .refused(&format!("$JS.API.STREAM.LEADER.STEPDOWN.{stream}"))
                .await
                .with_context(|| role.to_string())?;
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn every_service_can_do_its_work() -> anyhow::Result<()> {
    let nats = TestNats::start_secured(&[("hall-a", &["a1"])])?;
    let game = As::connect(&nats, Role::GameService).await?;
    let simulator = As::connect(&nats, Role::Simulator).await?;
    let gateway = As::connect(&nats, Role::Gateway("hall-a".into())).await?;

    // The game service creates the streams.
    nats::ensure_streams(&game.js, 1, boardcast_kit::nats::DEFAULT_PARTITIONS).await?;

    // Boards publish; a simulated board and a gateway continue their numbering from JetStream.
    assert_eq!(
        nats::last_board_seq(&simulator.js, "sim-1", OwnBoard).await?,
        0
    );
    simulator.publish_observation("sim-1", 1).await?;
    simulator.publish_observation("sim-2", 1).await?;
    gateway.publish_observation("a1", 1).await?;
    assert_eq!(
        nats::last_board_seq(&simulator.js, "sim-1", OwnBoard).await?,
        1
    );
    assert_eq!(nats::last_board_seq(&gateway.js, "a1", OwnBoard).await?, 1);

    // The game service: finds the partitions' streams; its durable pull consumers, one per
    // partition's stream (as ingest.rs creates them), fetch and ack.
    assert_eq!(
        nats::observation_partitions(&game.js).await?.len(),
        1 + DEFAULT_PARTITIONS as usize
    );
    let partitions: std::collections::BTreeSet<u32> = ["sim-1", "sim-2", "a1"]
        .iter()
        .map(|board| nats::partition_of_board(board, nats::DEFAULT_PARTITIONS))
        .collect();
    let mut delivered = 0;
    for &partition in &partitions {
        let ingest = game.js.get_stream(ingest_stream(Some(partition))).await?;
        let consumer = ingest
            .create_consumer(pull::Config {
                durable_name: Some(ingest_consumer(Some(partition))),
                ack_policy: AckPolicy::Explicit,
                ack_wait: Duration::from_secs(30),
                max_ack_pending: 1,
                ..Default::default()
            })
            .await?;
        let mut messages = consumer.messages().await?;
        loop {
            let message = tokio::time::timeout(Duration::from_secs(5), messages.next())
                .await
                .context("no observation delivered")?
                .context("the consumer ended")??;
            let pending = message.info().map_err(|e| anyhow::anyhow!("{e}"))?.pending;
            // A confirmed acknowledgement: the server answers only if the ack was allowed.
            message
                .double_ack()
                .await
                .map_err(|e| anyhow::anyhow!("ack: {e}"))?;
            delivered += 1;
            if pending == 0 {
                break;
            }
        }
        drop(messages);
        let mut consumer = consumer;
        let info = consumer.info().await?;
        assert_eq!((info.num_ack_pending, info.num_pending), (0, 0));
    }
    assert_eq!(
        delivered, 3,
        "every observation, each in its board's partition"
    );
    // The game service reads a board's last number when it sets up a game, and messages by
    // sequence when it looks for gaps.
    assert_eq!(
        nats::last_board_seq(&game.js, "sim-2", nats::BoardRead::Leader).await?,
        1
    );
    let sim_2 = game
        .js
        .get_stream(ingest_stream(Some(nats::partition_of_board(
            "sim-2",
            DEFAULT_PARTITIONS,
        ))))
        .await?;
    assert!(
        nats::next_message(&sim_2, 1, &nats::board_observations("sim-2"))
            .await?
            .is_some()
    );
    // A board whose game's log was mended has its last observation handed over again by a
    // short-lived consumer filtered to the board (`ingest::Redrive`).
    let sim_2_subject = nats::stored_observation_subject(
        "sim-2",
        Some(nats::partition_of_board("sim-2", DEFAULT_PARTITIONS)),
    );
    let last = sim_2
        .get_last_raw_message_by_subject(&sim_2_subject)
        .await?;
    let redrive = sim_2
        .create_consumer(pull::Config {
            name: Some(format!("redrive-{}", last.sequence)),
            max_ack_pending: 1,
            filter_subject: sim_2_subject,
            deliver_policy: DeliverPolicy::ByStartSequence {
                start_sequence: last.sequence,
            },
            ack_policy: AckPolicy::Explicit,
            inactive_threshold: Duration::from_secs(30),
            memory_storage: true,
            ..Default::default()
        })
        .await?;
    let message = redrive
        .fetch()
        .max_messages(1)
        .expires(Duration::from_secs(5))
        .messages()
        .await?
        .next()
        .await
        .context("the board's last observation is delivered")?
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    assert_eq!(
        message
            .info()
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .stream_sequence,
        last.sequence
    );
    message
        .double_ack()
        .await
        .map_err(|e| anyhow::anyhow!("ack: {e}"))?;

    // Appends with the stream-level expected sequence; a stale one is a conflict, not a
    // permission problem.
    assert_eq!(game.append("g1", "record 1", 0).await?, 1);
    assert_eq!(game.append("g2", "record 2", 1).await?, 2);
    let stale = PublishMessage::build()
        .payload("stale".into())
        .expected_last_sequence(1);
    let stale = game.js.send_publish(game_subject("g1"), stale).await?.await;
    assert!(matches!(stale, Err(e) if e.kind() == PublishErrorKind::WrongLastSequence));
    // Dead letters.
    game.js
        .publish(deadletter_subject(Some("sim-1")), "unusable".into())
        .await?
        .await?;

    // Catching up: message get and an ordered consumer over the log.
    let games = game.js.get_stream(GAMES_STREAM).await?;
    assert_eq!(
        games.get_raw_message(2).await?.payload.as_ref(),
        b"record 2"
    );
    assert_eq!(read_log(&game.js, 2).await?, ["record 1", "record 2"]);

    // The delays in force, which the broadcast service follows.
    game.js
        .publish(delay_subject("t"), "a delay".into())
        .await?
        .await?;

    // Other venue systems read the broadcast service's live updates in the hall's account.
    let venue = admin(&nats).await?;
    let mut live_updates = venue.js.client().subscribe("boardcast.*.t.1.1").await?;
    venue.js.client().flush().await?;

    // The broadcast and arbiter services follow the log.
    for role in [Role::BroadcastService, Role::ArbiterService] {
        let reader = As::connect(&nats, role.clone()).await?;
        nats::require_streams(&reader.js, &[GAMES_STREAM]).await?;
        assert_eq!(
            read_log(&reader.js, 2).await?,
            ["record 1", "record 2"],
            "{role}"
        );
        let games = reader.js.get_stream(GAMES_STREAM).await?;
        assert_eq!(
            games.get_raw_message(1).await?.payload.as_ref(),
            b"record 1"
        );
        let next = nats::next_message(&games, 2, GAMES_SUBJECTS).await?;
        assert_eq!(next.map(|m| m.sequence), Some(2));
        assert_eq!(reader.refusal_count(), 0, "{role}");
        // The broadcast service publishes the live updates, whole and as deltas; the arbiter
        // service may not.
        for subject in ["boardcast.feed.t.1.1", "boardcast.delta.t.1.1"] {
            let client = reader.js.client();
            client.publish(subject, "{}".into()).await?;
            client.flush().await?;
            if role == Role::ArbiterService {
                reader.refused(subject).await?;
            }
        }
        if role == Role::BroadcastService {
            assert_eq!(
                read_in_order(&reader.js, DELAYS_STREAM, DELAYS_SUBJECTS, 1).await?,
                ["a delay"]
            );
            // A refusal would have come by now: the arbiter's come within this time.
            tokio::time::sleep(Duration::from_millis(500)).await;
            assert_eq!(reader.refusal_count(), 0, "{role}");
        }
    }
    for subject in ["boardcast.feed.t.1.1", "boardcast.delta.t.1.1"] {
        let update = tokio::time::timeout(Duration::from_secs(5), live_updates.next())
            .await
            .with_context(|| format!("{subject} did not reach the hall"))?
            .context("the subscription ended")?;
        assert_eq!(update.subject.as_str(), subject);
    }
    for client in [&game, &simulator, &gateway] {
        assert_eq!(client.refusal_count(), 0);
    }
    Ok(())
}

/// The log's first `count` records, with an ordered consumer as the services follow it.
async fn read_log(js: &jetstream::Context, count: usize) -> anyhow::Result<Vec<String>> {
    read_in_order(js, GAMES_STREAM, GAMES_SUBJECTS, count).await
}

/// The first `count` messages of `stream` on `subjects`, with an ordered consumer.
async fn read_in_order(
    js: &jetstream::Context,
    stream: &str,
    subjects: &str,
    count: usize,
) -> anyhow::Result<Vec<String>> {
    let consumer = js
        .get_stream(stream)
        .await?
        .create_consumer(pull::OrderedConfig {
            filter_subject: subjects.to_owned(),
            deliver_policy: DeliverPolicy::All,
            ..Default::default()
        })
        .await?;
    let mut messages = consumer.messages().await?;
    let mut records = Vec::new();
    while records.len() < count {
        let message = tokio::time::timeout(Duration::from_secs(5), messages.next())
            .await
            .context("the log did not arrive")?
            .context("the log ended")??;
        records.push(String::from_utf8_lossy(&message.payload).into_owned());
    }
    Ok(records)
}

#[tokio::test(flavor = "multi_thread")]
async fn readers_need_the_game_service_to_create_the_streams() -> anyhow::Result<()> {
    let nats = TestNats::start_secured(&[])?;
    let broadcast = As::connect(&nats, Role::BroadcastService).await?;
    let admin = admin(&nats).await?;

    // Not there yet: a clear message after the wait.
    let missing = nats::require_streams_within(&broadcast.js, &[GAMES_STREAM], Duration::ZERO)
        .await
        .err()
        .context("require_streams must fail without the stream")?;
    assert!(
        format!("{missing:#}").contains("stream BOARDCAST_GAMES does not exist"),
        "{missing:#}"
    );
    // And the broadcast service may not create them itself.
    assert!(
        nats::ensure_streams(&broadcast.js, 1, boardcast_kit::nats::DEFAULT_PARTITIONS)
            .await
            .is_err()
    );
    broadcast
        .refused("$JS.API.STREAM.INFO.BOARDCAST_INGEST")
        .await?;
    assert!(admin.js.get_stream(INGEST_STREAM).await.is_err());
    let created = broadcast
        .js
        .create_stream(jetstream::stream::Config {
            name: GAMES_STREAM.to_owned(),
            subjects: vec![GAMES_SUBJECTS.to_owned()],
            ..Default::default()
        })
        .await;
    assert!(created.is_err());
    broadcast
        .refused("$JS.API.STREAM.CREATE.BOARDCAST_GAMES")
        .await?;
    assert!(admin.js.get_stream(GAMES_STREAM).await.is_err());

    // It waits for the game service.
    let waiting = tokio::spawn({
        let js = broadcast.js.clone();
        async move { nats::require_streams_within(&js, &[GAMES_STREAM], Duration::from_secs(10)).await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    with_streams(&nats).await?;
    waiting.await??;
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn strangers_are_refused_and_a_restart_keeps_the_users() -> anyhow::Result<()> {
    let mut nats = TestNats::start_secured(&[])?;

    // No user, or a wrong password: refused at once with the reason.
    let anonymous = async_nats::connect(nats.url()).await;
    let refused = anonymous
        .err()
        .context("an anonymous client must be refused")?;
    assert!(
        refused.to_string().contains("authorization violation"),
        "{refused}"
    );
    let wrong = format!(
        "nats://game-service:not-the-password@127.0.0.1:{}",
        nats.server.port
    );
    let (seen, mut refusals) = tokio::sync::mpsc::unbounded_channel();
    let _retrying = nats::connect_observed(&wrong, "wrong", move |event| {
        if nats::is_refusal(event) {
            let _ = seen.send(event.to_string());
        }
    })
    .await?;
    let refusal = tokio::time::timeout(Duration::from_secs(5), refusals.recv())
        .await
        .context("a wrong password must be reported")?
        .context("no event")?;
    assert!(refusal.contains("authorization violation"), "{refusal}");

    // Data written, then the server restarts with the same configuration.
    let game = with_streams(&nats).await?;
    game.append("g1", "record 1", 0).await?;
    tokio::task::block_in_place(|| nats.server.restart(std::process::Stdio::null()))?;
    assert!(
        async_nats::connect(nats.url()).await.is_err(),
        "still secured"
    );

    // The credentials read back from their directory still work.
    let access = NatsAccess::load(nats.access.dir())?;
    assert_eq!(
        access.url_for(&Role::GameService, &nats.url())?,
        nats.url_for(&Role::GameService)?
    );
    let again = As::connect_url(&access.url_for(&Role::GameService, &nats.url())?, "again").await?;
    assert_eq!(again.append("g1", "record 2", 1).await?, 2);
    Ok(())
}

/// An operator lists the dead letters as the admin (`boardcast dead-letters`); with a reader's
/// credentials the listing is refused, and says why.
#[tokio::test(flavor = "multi_thread")]
async fn an_operator_lists_the_dead_letters_as_the_admin() -> anyhow::Result<()> {
    let nats = TestNats::start_secured(&[])?;
    let game = with_streams(&nats).await?;
    let mut headers = async_nats::HeaderMap::new();
    headers.insert(
        boardcast_kit::nats::REASON_HEADER,
        "a clock showing 90000000 ms (25 h): more than a day is no chess clock's",
    );
    game.js
        .publish_with_headers(
            deadletter_subject(Some("a1")),
            headers,
            observation("a1", 7).into(),
        )
        .await?
        .await?;
    let listing = |role: Role| -> anyhow::Result<std::process::Output> {
        Ok(
            std::process::Command::new(boardcast_testkit::program("boardcast")?)
                .args(["dead-letters", "--nats", &nats.url_for(&role)?])
                .output()?,
        )
    };
    let admin = listing(Role::Admin)?;
    let shown = String::from_utf8(admin.stdout)?;
    assert!(
        admin.status.success(),
        "{}",
        String::from_utf8_lossy(&admin.stderr)
    );
    assert!(
        shown.contains("board a1: observation 7 (no kind)\n  why: a clock showing 90000000 ms")
            && shown.ends_with("1 dead letter\n"),
        "{shown}"
    );
    let reader = listing(Role::BroadcastService)?;
    let said = String::from_utf8_lossy(&reader.stderr);
    assert!(
        !reader.status.success(),
        "{}",
        String::from_utf8_lossy(&reader.stdout)
    );
    assert!(said.contains("Permissions Violation"), "{said}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn no_board_side_user_reads_what_is_addressed_to_another_program() -> anyhow::Result<()> {
    let nats = TestNats::start_secured(&[("hall-a", &["a1"])])?;
    let game = with_streams(&nats).await?;
    let broadcast = As::connect(&nats, Role::BroadcastService).await?;

    // A board PC's credentials, listening on every inbox and on the programs' own.
    let mut snoopers = Vec::new();
    for role in [Role::Simulator, Role::Gateway("hall-a".into())] {
        let refusals = Arc::new(Mutex::new(Vec::new()));
        let seen = refusals.clone();
        let client = nats::connect_observed(&nats.url_for(&role)?, "snooper", move |event| {
            if nats::is_refusal(event)
                && let Ok(mut seen) = seen.lock()
            {
                seen.push(event.to_string());
            }
        })
        .await?;
        for inbox in [
            "_INBOX.>",
            "_INBOX.game-service.>",
            "_INBOX.broadcast-service.>",
            ">",
        ] {
            let subscription = client.subscribe(inbox).await?;
            snoopers.push((role.clone(), inbox, subscription, refusals.clone()));
        }
        client.flush().await?;
    }

    // Traffic addressed to the programs: the game service's appends and their
    // acknowledgements, observations it reads, the log delivered to the broadcast service.
    for n in 1..=20u64 {
        game.append("g1", &format!("record {n}"), n - 1).await?;
    }
    As::connect(&nats, Role::Simulator)
        .await?
        .publish_observation("a1", 1)
        .await?;
    assert_eq!(read_log(&broadcast.js, 20).await?.len(), 20);
    assert_eq!(read_log(&game.js, 20).await?.len(), 20);

    for (role, inbox, mut subscription, refusals) in snoopers {
        let got = tokio::time::timeout(Duration::from_millis(500), subscription.next()).await;
        assert!(
            !matches!(got, Ok(Some(_))),
            "{role} on {inbox} received a message addressed to another program"
        );
        let refused = refusals.lock().map(|r| r.clone()).unwrap_or_default();
        assert!(
            refused
                .iter()
                .any(|r| r.contains(&format!("Subscription to \"{inbox}\""))),
            "{role} on {inbox}: no refusal among {refused:?}"
        );
    }
    assert_eq!(game.refusal_count() + broadcast.refusal_count(), 0);
    Ok(())
}

/// What the relay tests look at before and after: the game log's and the delays' records.
struct Hall {
    records: u64,
    delays: u64,
}

async fn hall_now(admin: &As) -> anyhow::Result<Hall> {
    Ok(Hall {
        records: messages_in(&admin.js, GAMES_STREAM).await?,
        delays: messages_in(&admin.js, DELAYS_STREAM).await?,
    })
}

/// Nothing of the hall changed: the game logs are neither emptied nor written to, the delays
/// neither deleted nor written to, and the session ends' stream is still there.
async fn assert_hall_unchanged(admin: &As, before: &Hall) -> anyhow::Result<()> {
    let now = hall_now(admin).await?;
    assert_eq!(
        now.records, before.records,
        "the game logs are neither emptied nor written to"
    );
    assert_eq!(
        now.delays, before.delays,
        "the delays are neither deleted nor written to"
    );
    admin
        .js
        .get_stream(SESSIONS_STREAM)
        .await
        .context("the session ends' stream is still there")?;
    Ok(())
}

/// Asks, as `client`, for a stored message (`direct_get`, a direct get's subject) and for the
/// account's information, with each of `targets` as the reply subject: the relay JetStream
/// carries out for anyone whose answers reach the hall's account.
async fn relay_answers(
    client: &async_nats::Client,
    direct_get: &str,
    targets: &[String],
) -> anyhow::Result<()> {
    for target in targets {
        client
            .publish_with_reply(direct_get.to_owned(), target.clone(), Default::default())
            .await?;
        client
            .publish_with_reply("$JS.API.INFO", target.clone(), Default::default())
            .await?;
    }
    client.flush().await?;
    Ok(())
}

/// JetStream sends its answer wherever a request's reply subject says. A board PC asking for its
/// own observation (bytes it chose: here a request that empties a stream) with a JetStream call
/// or a game's log as the reply subject, or for the account's information with a game's log as
/// the reply, must reach neither. The board side is in accounts of its own, whose requests are
/// answered to the asker alone.
#[tokio::test(flavor = "multi_thread")]
async fn a_board_pc_cannot_have_the_server_answer_into_the_hall() -> anyhow::Result<()> {
    let nats = TestNats::start_secured(&[("hall-a", &["a1"])])?;
    let _game = with_streams(&nats).await?;
    let admin = admin(&nats).await?;
    let victim = game_subject("victim-r1-b1");
    admin
        .js
        .publish(victim.clone(), "a record".into())
        .await?
        .await?;
    let before = hall_now(&admin).await?;
    let partition = nats::partition_of_board("a1", DEFAULT_PARTITIONS);
    let stored_in = ingest_stream(Some(partition));
    let stored_as = format!("{}.{partition}", observation_subject("a1"));
    for role in [Role::Gateway("hall-a".into()), Role::Simulator] {
        let pc = As::connect(&nats, role.clone()).await?;
        pc.js
            .publish(observation_subject("a1"), "{}".into())
            .await?
            .await
            .with_context(|| format!("{role} stores its observation"))?;
        // The direct get below finds it: the relay would work if the answer could reach the
        // hall.
        let stored = pc
            .js
            .get_stream_no_info(&stored_in)
            .await?
            .direct_get_last_for_subject(&stored_as)
            .await
            .with_context(|| format!("{role} reads its observation back"))?;
        assert_eq!(stored.payload.as_ref(), b"{}");
        relay_answers(
            &pc.js.client(),
            &format!("$JS.API.DIRECT.GET.{stored_in}.{stored_as}"),
            &[
                format!("$JS.API.STREAM.PURGE.{GAMES_STREAM}"),
                format!("$JS.API.STREAM.DELETE.{DELAYS_STREAM}"),
                victim.clone(),
            ],
        )
        .await?;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_hall_unchanged(&admin, &before).await
}

/// The broadcast service faces the internet and the arbiter service the arbiters' dashboards: a
/// service taken over must not reach further than its credential. Each may read the game log
/// (and the broadcast service the delays), so it can ask for a record with a JetStream call as
/// the reply subject: a record is a JSON object, which a purge request takes as "everything",
/// and a stream deletion reads no body at all. Each service is in an account of its own, whose
/// requests are answered to the asker alone.
#[tokio::test(flavor = "multi_thread")]
async fn a_service_cannot_have_the_server_answer_into_the_hall() -> anyhow::Result<()> {
    let nats = TestNats::start_secured(&[])?;
    let game = with_streams(&nats).await?;
    let victim = game_subject("victim-r1-b1");
    game.append(
        "victim-r1-b1",
        r#"{"game_id":"victim-r1-b1","game_seq":1}"#,
        0,
    )
    .await?;
    game.js
        .publish(
            delay_subject("open"),
            r#"{"tournament_id":"open","delay_ms":900000}"#.into(),
        )
        .await?
        .await?;
    let admin = admin(&nats).await?;
    let before = hall_now(&admin).await?;
    for role in [Role::BroadcastService, Role::ArbiterService] {
        let service = As::connect(&nats, role.clone()).await?;
        let stored = service
            .js
            .get_stream_no_info(GAMES_STREAM)
            .await?
            .direct_get_last_for_subject(&victim)
            .await
            .with_context(|| format!("{role} reads the game's record"))?;
        assert!(stored.payload.starts_with(b"{"));
        relay_answers(
            &service.js.client(),
            &format!("$JS.API.DIRECT.GET.{GAMES_STREAM}.{victim}"),
            &[
                format!("$JS.API.STREAM.PURGE.{GAMES_STREAM}"),
                format!("$JS.API.STREAM.DELETE.{DELAYS_STREAM}"),
                format!("$JS.API.STREAM.DELETE.{SESSIONS_STREAM}"),
                victim.clone(),
                delay_subject("open"),
            ],
        )
        .await?;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_hall_unchanged(&admin, &before).await
}

/// A command run by hand (an export for an appeal) with a wrong password stops at once and says
/// why, without printing the password; it used to wait for ever, printing nothing.
#[tokio::test(flavor = "multi_thread")]
async fn a_command_with_a_wrong_password_says_so_and_stops() -> anyhow::Result<()> {
    let nats = TestNats::start_secured(&[])?;
    let _game = with_streams(&nats).await?;
    let admin_url = nats.url_for(&Role::Admin)?;
    let password = nats
        .access
        .user(&Role::Admin)
        .context("the admin user")?
        .password
        .clone();
    let wrong = admin_url.replace(&password, "not-the-password");
    let dir = tempfile::tempdir()?;
    let out = std::process::Command::new(boardcast_testkit::program("boardcast")?)
        .args(["export", "--nats", &wrong, "--tournament", "open", "--out"])
        .arg(dir.path().join("open.json"))
        .env("RUST_BACKTRACE", "0")
        .output()?;
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("refused the connection"), "{said}");
    assert!(!said.contains("not-the-password"), "{said}");
    assert!(!dir.path().join("open.json").exists());
    Ok(())
}

/// A consumer created through a service account's import lives in the hall's account, where a
/// push consumer delivers to its deliver subject: a service taken over could aim one at a
/// JetStream call or at another stream's subject. A push consumer delivers only where a client
/// subscribes, and no user of the hall but admin may subscribe but to its own inbox, so nothing
/// arrives there (the same consumer aimed where admin listens delivers: the control).
#[tokio::test(flavor = "multi_thread")]
async fn a_service_cannot_have_a_consumer_deliver_into_the_hall() -> anyhow::Result<()> {
    let nats = TestNats::start_secured(&[])?;
    let game = with_streams(&nats).await?;
    game.append(
        "victim-r1-b1",
        r#"{"game_id":"victim-r1-b1","game_seq":1}"#,
        0,
    )
    .await?;
    let admin = admin(&nats).await?;
    let before = hall_now(&admin).await?;
    let service = As::connect(&nats, Role::BroadcastService).await?;
    let games = service.js.get_stream_no_info(GAMES_STREAM).await?;
    let push = |name: &str, deliver_subject: String| jetstream::consumer::push::Config {
        name: Some(name.to_owned()),
        deliver_subject,
        deliver_policy: DeliverPolicy::All,
        ack_policy: AckPolicy::None,
        ..Default::default()
    };
    for (name, deliver_to) in [
        ("purge", format!("$JS.API.STREAM.PURGE.{GAMES_STREAM}")),
        ("delete", format!("$JS.API.STREAM.DELETE.{DELAYS_STREAM}")),
        ("delay", delay_subject("open")),
    ] {
        games.create_consumer(push(name, deliver_to)).await?;
    }
    // The control: such a consumer delivers where a client of the hall listens (only admin
    // may subscribe to anything there).
    let mut delivered = admin.js.client().subscribe("control.deliveries").await?;
    admin.js.client().flush().await?;
    games
        .create_consumer(push("control", "control.deliveries".to_owned()))
        .await?;
    tokio::time::timeout(Duration::from_secs(5), delivered.next())
        .await
        .context("the control consumer delivers")?
        .context("the subscription ended")?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_hall_unchanged(&admin, &before).await
}

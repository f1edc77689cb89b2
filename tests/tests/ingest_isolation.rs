//! One bad board never stops the hall: poison observations on one board while 20 boards play.
//! The other games are complete and exact, each poison is in the dead-letter stream with its
//! reason, the poisoned board's log shows the holes, the board goes on being decided, and the
//! game service never restarts.

mod support;

use std::collections::BTreeMap;

use anyhow::{Context as _, ensure};
use async_nats::jetstream;
use boardcast_game::events::{GetGameRequest, game_event::Kind};
use boardcast_kit::nats::{DEADLETTER_STREAM, REASON_HEADER, observation_subject};
use boardcast_rules::pgn::read_games;
use boardcast_schema::device::v1::{
    ClockReading, ClockRun, DeviceState, DeviceStatus, Observation, Piece, PieceLifted, SourceKind,
    observation::Kind as ObservationKind,
};
use boardcast_testkit::{GameService, TestNats, program, repo_root};
use prost::Message as _;

const BOARDS: usize = 20;
const POISONED: &str = "poisoned";

fn observation(device_seq: u64, kind: ObservationKind) -> Observation {
    let now = boardcast_kit::now_unix_ms();
    Observation {
        board_id: POISONED.into(),
        device_seq,
        device_time_unix_ms: now,
        receive_time_unix_ms: now,
        source: SourceKind::Simulator as i32,
        kind: Some(kind),
    }
}

fn clock(white_ms: u64) -> ObservationKind {
    ObservationKind::Clock(ClockReading {
        white_remaining_ms: white_ms,
        black_remaining_ms: 5_400_000,
        running: ClockRun::White as i32,
        ..Default::default()
    })
}

/// The dead letters of the poisoned board: (reason, payload).
async fn dead_letters(js: &jetstream::Context) -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    let stream = js.get_stream(DEADLETTER_STREAM).await?;
    let mut letters = Vec::new();
    let mut seq = 1;
    while let Some(message) =
        boardcast_kit::nats::next_message(&stream, seq, &format!("boardcast.deadletter.{POISONED}"))
            .await?
    {
        seq = message.sequence + 1;
        let reason = message
            .headers
            .get(REASON_HEADER)
            .map(|v| v.as_str().to_owned())
            .unwrap_or_default();
        letters.push((reason, message.payload.to_vec()));
    }
    Ok(letters)
}

#[tokio::test(flavor = "multi_thread")]
async fn poison_observations_on_one_board_stop_nothing_else() -> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let mut service = GameService::start(&nats.url())?;
    let pid = service.process.pid();
    let js = jetstream::new(async_nats::connect(nats.url()).await?);

    // The poisoned board's game, set up by the operator.
    let mut client = service.client().await?;
    let created = client
        .create_game(boardcast_testkit::create_request(
            boardcast_testkit::game_on_board("isolation", 1, POISONED),
        ))
        .await?
        .into_inner();

    // Twenty boards play while the poison arrives.
    let source_path = repo_root().join("data/london-classic-2016.pgn");
    let mut simulation = std::process::Command::new(program("boardcast")?)
        .env("BOARDCAST_TOKEN", boardcast_testkit::admin_token())
        .arg("simulate")
        .arg("--pgn")
        .arg(&source_path)
        .args(["--boards", &BOARDS.to_string(), "--speed", "max"])
        .args(["--nats", &nats.url(), "--game-service", &service.url()])
        .stdout(std::process::Stdio::null())
        .spawn()?;
    let started = std::time::Instant::now();
    let subject = observation_subject(POISONED);
    let huge = ObservationKind::Status(DeviceStatus {
        state: DeviceState::Connected as i32,
        detail: "x".repeat(100_000),
        ..Default::default()
    });
    let poisons: Vec<Vec<u8>> = vec![
        // A clock no chess clock shows: arithmetic on it would overflow.
        observation(1, clock(u64::MAX)).encode_to_vec(),
        // An observation far larger than any board sends: its record would not fit a message.
        observation(2, huge).encode_to_vec(),
        // A device_seq near the end of the numbers.
        observation(u64::MAX - 1, clock(5_000_000)).encode_to_vec(),
        // Not an observation at all.
        b"\xff\xff\xff not protobuf".to_vec(),
    ];
    for poison in &poisons {
        js.publish(subject.clone(), poison.clone().into())
            .await?
            .await?;
    }
    // The board goes on: White's hand on the e2 pawn.
    let lift = observation(
        3,
        ObservationKind::Lifted(PieceLifted {
            square: 12,
            piece: Piece::WhitePawn as i32,
        }),
    );
    js.publish(subject.clone(), lift.encode_to_vec().into())
        .await?
        .await?;

    ensure!(
        simulation.wait()?.success(),
        "boardcast simulate failed while the poison was handled"
    );
    support::drained(&js).await?;
    eprintln!(
        "20 boards played and the poison handled in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    // The other games: complete and exact.
    let source = read_games(&std::fs::read_to_string(&source_path)?)?;
    let states: BTreeMap<String, _> = support::states(&service.url())
        .await?
        .into_iter()
        .map(|s| (s.game_id.clone(), s))
        .collect();
    for game in source.iter().take(BOARDS) {
        let round = game.tag("Round").context("a Round tag")?;
        let (r, b) = round.split_once('.').context("round.board")?;
        let id = format!("london-chess-classic-2016-r{r}-b{b}");
        let state = states
            .get(&id)
            .with_context(|| format!("{id} was not played"))?;
        let ucis: Vec<String> = state.moves.iter().map(|m| m.uci.clone()).collect();
        assert_eq!(ucis, support::uci_moves(game)?, "moves of {id}");
    }

    // Each poison is kept with its reason.
    let letters = dead_letters(&js).await?;
    let reasons: Vec<&str> = letters.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(letters.len(), 4, "{reasons:?}");
    for (poison, expected) in poisons.iter().zip([
        "more than a day",
        "bytes; at most",
        "ahead of the board's last one",
        "undecodable observation",
    ]) {
        let (reason, _) = letters
            .iter()
            .find(|(_, payload)| payload == poison)
            .with_context(|| format!("a poison is missing from the dead letters: {reasons:?}"))?;
        assert!(
            reason.contains(expected),
            "{reason:?} should say {expected:?}"
        );
    }

    // The poisoned board's log shows the holes, and its next observation was decided.
    let state = client
        .get_game(GetGameRequest {
            game_id: created.game_id.clone(),
        })
        .await?
        .into_inner();
    let holes: Vec<(u64, u64, bool)> = state
        .missing_observations
        .iter()
        .map(|m| {
            (
                m.first_device_seq,
                m.last_device_seq,
                !m.unusable_reason.is_empty(),
            )
        })
        .collect();
    assert_eq!(holes, [(1, 1, true), (2, 2, true)]);
    let events = support::game_events(&mut client, &created.game_id).await?;
    assert!(
        events.iter().any(|e| matches!(
            &e.kind,
            Some(Kind::ObservationRecorded(r))
                if r.observation.as_ref().is_some_and(|o| o.device_seq == 3)
        )),
        "the lift after the poison is in the log"
    );

    // The service never restarted.
    service.process.check_running()?;
    assert_eq!(service.process.pid(), pid);
    Ok(())
}

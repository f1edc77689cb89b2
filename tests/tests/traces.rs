//! One trace per observation across every process it passes: a board's moves go from a DGT
//! capture through `boardcast gateway replay-dgt`, NATS and the game service to the broadcast and
//! arbiter services, each exporting its spans over OTLP to a receiver in this test. Every record
//! the observations produced must be traced back to the gateway's span of its observation, and
//! forward to both readers of the log; an arbiter's ruling likewise from the arbiter service's
//! gRPC call to the game service (its trace context in the call's metadata).

mod support;

use std::{collections::HashMap, process::Command, time::Duration};

use boardcast_schema::game::v1::{GameResult, GameStarted, GetGameRequest};
use boardcast_testkit::{
    ArbiterService, BroadcastService, GameService, OtlpCollector, TestNats, otlp::CollectedSpan,
    program,
};

#[test]
fn one_trace_links_the_gateway_game_service_broadcast_and_arbiter_for_each_move()
-> anyhow::Result<()> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    // SAFETY: this process has no other thread yet (the runtime is built below, and this binary
    // has no other test). The services started below inherit the environment.
    unsafe {
        std::env::set_var(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://{}", listener.local_addr()?),
        );
        // Export every 100 ms instead of every 5 s, so that the test need not wait long.
        std::env::set_var("OTEL_BSP_SCHEDULE_DELAY", "100");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let collector = runtime.block_on(async { OtlpCollector::start_on(listener) })?;
    runtime.block_on(traced_round(&collector))
}

async fn traced_round(collector: &OtlpCollector) -> anyhow::Result<()> {
    let nats = TestNats::start()?;
    let game_service = GameService::start(&nats.url())?;
    let _broadcast = BroadcastService::start(&nats.url())?;
    let arbiter = ArbiterService::start(&nats.url(), &game_service.url())?;

    // The first game of the test PGN (a seven-ply mate) as a DGT board's bytes.
    let dir = tempfile::tempdir()?;
    let pgn = dir.path().join("game.pgn");
    std::fs::write(&pgn, support::PGN)?;
    let out = Command::new(program("boardcast")?)
        .args(["simulate", "--pgn"])
        .arg(&pgn)
        .args(["--boards", "1", "--dgt-disturbances", "none", "--dgt-out"])
        .arg(dir.path())
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut client = boardcast_testkit::admin_client(&game_service.url()).await?;
    client
        .create_game(boardcast_testkit::create_request(GameStarted {
            time_control: boardcast_testkit::two_hours(),
            ..boardcast_testkit::game_on_board("traced", 1, "sim-1")
        }))
        .await?;

    let out = Command::new(program("boardcast")?)
        .args(["gateway", "replay-dgt"])
        .arg(dir.path().join("sim-1.dgt"))
        .args(["--board-id", "sim-1", "--nats", &nats.url(), "--outbox"])
        .arg(dir.path().join("outbox.redb"))
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let moves = loop {
        let state = client
            .get_game(GetGameRequest {
                game_id: "traced-r1-b1".into(),
            })
            .await?
            .into_inner();
        if state.result() != GameResult::Unspecified {
            break state.moves.len();
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the game did not end"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(moves, 7);

    // An arbiter's note through the dashboard's service: traced from its call to the game
    // service into the record and its readers.
    let admin = arbiter
        .login("admin", boardcast_testkit::TEST_PASSWORD)
        .await?;
    let request_id = admin.request_id().await?;
    admin
        .post(
            "/api/games/traced-r1-b1/act",
            &serde_json::json!({
                "request_id": request_id,
                "action": { "type": "annotation", "text": "scoresheets checked" },
            }),
        )
        .await?;

    // Every record decided on an observation, traced both ways (the services export in batches,
    // so the last spans may take a moment).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let spans = collector.spans();
        match check_traces(&spans, moves) {
            Ok(()) => return Ok(()),
            Err(e) if tokio::time::Instant::now() > deadline => {
                return Err(e.context(format!("{} spans received", spans.len())));
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    }
}

/// Each record appended on an observation's behalf is in the trace the gateway began for that
/// observation (gateway publish → game service decide → append), and the broadcast and arbiter
/// services folded it in a span of that trace (a child of the append, or linked to it when it was
/// folded in a batch).
fn check_traces(spans: &[CollectedSpan], moves: usize) -> anyhow::Result<()> {
    let by_id: HashMap<&[u8], &CollectedSpan> =
        spans.iter().map(|s| (s.span_id.as_slice(), s)).collect();
    let parent = |span: &CollectedSpan| by_id.get(span.parent_span_id.as_slice()).copied();
    let folded_by = |service: &str, append: &CollectedSpan| {
        spans.iter().any(|s| {
            s.service == service
                && s.name == "game_log.fold"
                && (s.parent_span_id == append.span_id
                    || s.links
                        .iter()
                        .any(|(t, id)| *t == append.trace_id && *id == append.span_id))
        })
    };
    let appends: Vec<&CollectedSpan> = spans
        .iter()
        .filter(|s| s.service == "boardcast-game-service" && s.name == "record.append")
        .collect();
    let mut traced = 0;
    let mut ruling_traced = false;
    for append in &appends {
        let Some(decide) = parent(append) else {
            anyhow::bail!("the append of {:?} has no parent", append.attributes);
        };
        if decide.name == "grpc" {
            // The game's set-up, asked for by this test's untraced client, or the arbiter's
            // note, whose trace begins in the arbiter service.
            if let Some(act) = parent(decide) {
                anyhow::ensure!(
                    act.service == "boardcast-arbiter-service"
                        && act.name == "arbiter.act"
                        && act.trace_id == append.trace_id,
                    "a gRPC call under {act:?}"
                );
                ruling_traced |= ["boardcast-broadcast-service", "boardcast-arbiter-service"]
                    .iter()
                    .all(|reader| folded_by(reader, append));
            }
            continue;
        }
        anyhow::ensure!(
            decide.name == "observation.decide" && decide.service == "boardcast-game-service",
            "an append under {decide:?}"
        );
        let Some(publish) = parent(decide) else {
            anyhow::bail!("the decision {decide:?} does not continue a gateway's trace");
        };
        anyhow::ensure!(
            publish.service == "boardcast-gateway"
                && publish.name == "observation.publish"
                && publish.parent_span_id.is_empty()
                && publish.attribute("board") == Some("sim-1"),
            "the decision's parent is {publish:?}"
        );
        anyhow::ensure!(
            publish.trace_id == append.trace_id && decide.trace_id == append.trace_id,
            "one trace from the gateway to the append"
        );
        for reader in ["boardcast-broadcast-service", "boardcast-arbiter-service"] {
            anyhow::ensure!(
                folded_by(reader, append),
                "{reader} has no span folding the record of {:?}",
                append.attributes
            );
        }
        traced += 1;
    }
    eprintln!(
        "{traced} records traced from the gateway to both readers, of {} appends",
        appends.len()
    );
    anyhow::ensure!(
        ruling_traced,
        "no trace from the arbiter's call through the game service to both readers"
    );
    // A move's record at least for every move, and the game's end.
    anyhow::ensure!(
        traced > moves,
        "{traced} records traced from the gateway, {} appends",
        appends.len()
    );
    Ok(())
}

//! `boardcast simulate --dgt-out` and `boardcast gateway replay-dgt FILE --pgn`, run as the
//! operator runs them: a simulated board's capture comes back as the game that was played.

use std::process::Command;

use boardcast_rules::pgn::{PgnGame, parse_san, read_games};
use shakmaty::{CastlingMode, Chess, Position, uci::UciMove};

fn ucis(game: &PgnGame) -> Vec<String> {
    let mut pos = Chess::default();
    game.moves
        .iter()
        .map(|m| {
            let mv = parse_san(&pos, &m.san).expect("legal move");
            pos.play_unchecked(mv);
            UciMove::from_move(mv, CastlingMode::Standard).to_string()
        })
        .collect()
}

#[test]
fn simulate_writes_dgt_captures() {
    let london = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../data/london-classic-2016.pgn"
    );
    let dir = tempfile::tempdir().expect("temporary directory");
    let out = Command::new(env!("CARGO_BIN_EXE_boardcast"))
        .args(["simulate", "--pgn", london, "--boards", "3"])
        .args(["--dgt-disturbances", "none", "--dgt-out"])
        .arg(dir.path())
        .output()
        .expect("boardcast simulate runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for board in ["sim-1", "sim-2", "sim-3"] {
        let capture = std::fs::read(dir.path().join(format!("{board}.dgt"))).expect("capture");
        // Serial number, version and board dump first, as a board answers the start-up sequence.
        assert_eq!(&capture[..3], &[0x91, 0x00, 0x08]);
        let record = std::fs::read_to_string(dir.path().join(format!("{board}.record.txt")))
            .expect("record");
        assert!(!record.contains("expect"), "{record}");
    }
}

#[test]
fn simulated_capture_replays_to_the_source_game_as_pgn() {
    let london = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../data/london-classic-2016.pgn"
    );
    let dir = tempfile::tempdir().expect("temporary directory");
    let out = Command::new(env!("CARGO_BIN_EXE_boardcast"))
        .args([
            "simulate",
            "--pgn",
            london,
            "--boards",
            "2",
            "--dgt-seed",
            "7",
        ])
        .arg("--dgt-out")
        .arg(dir.path())
        .output()
        .expect("boardcast simulate runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let record = std::fs::read_to_string(dir.path().join("sim-2.record.txt")).expect("record");
    assert!(record.contains("ply 1 "), "{record}");
    assert!(dir.path().join("sim-2.timing.tsv").exists());

    let out = Command::new(env!("CARGO_BIN_EXE_boardcast"))
        .args(["gateway", "replay-dgt"])
        .arg(dir.path().join("sim-2.dgt"))
        .args(["--pgn", "--tag", "Event=Replay test", "--tag", "Round=1.2"])
        .output()
        .expect("boardcast gateway replay-dgt runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let pgn = String::from_utf8(out.stdout).expect("PGN is UTF-8");
    let replayed = read_games(&pgn).expect("the output is PGN");
    let source = read_games(&std::fs::read_to_string(london).expect("london file")).expect("reads");
    assert_eq!(replayed.len(), 1);
    assert_eq!(ucis(&replayed[0]), ucis(&source[1]));
    assert_eq!(replayed[0].result, source[1].result);
    assert_eq!(replayed[0].tag("Event"), Some("Replay test"));
    assert_eq!(replayed[0].tag("Result"), Some(source[1].result.as_str()));
    // The notes (on stderr) end with the players' result signal.
    assert!(
        stderr.contains(&format!(
            "result {}: result signalled on the board",
            source[1].result
        )),
        "{stderr}"
    );

    let out = Command::new(env!("CARGO_BIN_EXE_boardcast"))
        .args(["gateway", "replay-dgt", "--pgn"])
        .arg(dir.path().join("missing.dgt"))
        .output()
        .expect("runs");
    assert!(!out.status.success());
}

// Publishing a capture through the outbox to a private NATS: every observation arrives once,
// numbered 1, 2, 3, ... for the board.
#[test]
fn capture_is_published_through_the_outbox() -> anyhow::Result<()> {
    use async_nats::jetstream;
    use boardcast_schema::device::v1::{Observation, SourceKind};
    use prost::Message as _;

    let games = read_games(include_str!("../../../data/london-classic-2016.pgn"))?;
    let sim =
        boardcast_sim::dgt::simulate(&games[6], &boardcast_sim::dgt::DgtSimOptions::default())?;
    let dir = tempfile::tempdir()?;
    let capture = dir.path().join("board.dgt");
    std::fs::write(&capture, sim.capture_bytes())?;
    let expected = boardcast_gateway::dgt::read_capture(
        &sim.capture_bytes(),
        boardcast_gateway::dgt::DgtSessionConfig::default(),
    )?
    .observations
    .len();

    let nats = boardcast_testkit::TestNats::start()?;
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let js = jetstream::new(async_nats::connect(nats.url()).await?);
        boardcast_kit::nats::ensure_streams(&js, 1, boardcast_kit::nats::DEFAULT_PARTITIONS)
            .await?;
        anyhow::Ok(())
    })?;
    let out = Command::new(env!("CARGO_BIN_EXE_boardcast"))
        .args(["gateway", "replay-dgt"])
        .arg(&capture)
        .args(["--board-id", "hall-1", "--nats", &nats.url(), "--outbox"])
        .arg(dir.path().join("outbox.redb"))
        .output()?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    runtime.block_on(async {
        let js = jetstream::new(async_nats::connect(nats.url()).await?);
        let stored = boardcast_testkit::every_observation(&js).await?;
        assert_eq!(stored.len(), expected, "every observation, nothing more");
        for (message, seq) in stored.iter().zip(1..) {
            let o = Observation::decode(message.payload.as_ref())?;
            assert_eq!((o.board_id.as_str(), o.device_seq), ("hall-1", seq));
            assert_eq!(o.source, SourceKind::CaptureReplay as i32);
        }
        anyhow::Ok(())
    })
}

/// `GET path` on a local HTTP server, the body (or the empty string when it does not answer).
fn http_get(addr: std::net::SocketAddr, path: &str) -> String {
    use std::io::{Read as _, Write as _};
    let Ok(mut stream) = std::net::TcpStream::connect(addr) else {
        return String::new();
    };
    let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(5)));
    let request = format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return String::new();
    }
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response
}

/// The gateway's /metrics report its outbox's backlog: what it holds while NATS does not answer,
/// and nothing once NATS is back and has taken it.
#[test]
fn the_outbox_backlog_is_reported_while_nats_is_away() -> anyhow::Result<()> {
    use boardcast_schema::device::v1::{BoardPlacement, Observation, observation::Kind};
    use std::time::{Duration, Instant};

    let dir = tempfile::tempdir()?;
    let outbox_path = dir.path().join("outbox.redb");
    {
        // Observations a board reported before the gateway stopped, not yet in JetStream.
        let outbox = boardcast_gateway::outbox::Outbox::open(&outbox_path)?;
        let placement = |seq| Observation {
            board_id: "hall-1".into(),
            device_seq: seq,
            kind: Some(Kind::Placement(BoardPlacement {
                placement: "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR".into(),
            })),
            ..Default::default()
        };
        outbox.append((1..=7).map(placement).collect())?;
    }
    let nats = boardcast_testkit::TestNats::start()?;
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let js = async_nats::jetstream::new(async_nats::connect(nats.url()).await?);
        boardcast_kit::nats::ensure_streams(&js, 1, boardcast_kit::nats::DEFAULT_PARTITIONS)
            .await?;
        anyhow::Ok(())
    })?;
    nats.server.pause()?;

    let metrics = std::net::SocketAddr::from(([127, 0, 0, 1], boardcast_kit::local::free_port()?));
    let mut gateway = boardcast_kit::local::ManagedProcess::spawn(
        "boardcast gateway",
        Command::new(env!("CARGO_BIN_EXE_boardcast"))
            .args(["gateway", "serial", "--port", "/dev/no-such-board"])
            .args(["--board-id", "hall-1", "--nats", &nats.url(), "--outbox"])
            .arg(&outbox_path)
            .args(["--metrics-listen", &metrics.to_string()])
            .env("RUST_LOG", "error")
            .stdin(std::process::Stdio::null()),
    )?;
    let backlog_reaches = |wanted: &str| -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let page = http_get(metrics, "/metrics");
            if page.lines().any(|l| {
                l.starts_with("boardcast_gateway_outbox{") && l.ends_with(&format!(" {wanted}"))
            }) {
                return Ok(());
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "the backlog never showed {wanted}:\n{page}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    backlog_reaches("7")?;
    let health = http_get(metrics, "/healthz");
    assert!(health.contains(" 200 "), "{health}");
    nats.server.resume()?;
    backlog_reaches("0")?;
    gateway.kill_hard()?;
    Ok(())
}

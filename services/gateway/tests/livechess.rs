//! The LiveChess feed against a server speaking LiveChess's websocket protocol.

use std::sync::Arc;

use boardcast_gateway::{livechess, outbox::Outbox, recorder::Recorder};
use boardcast_schema::device::v1::{ClockRun, DeviceState, SourceKind, observation::Kind};
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio_tungstenite::{accept_async, tungstenite::Message};

const START: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR";
const AFTER_E4: &str = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR";

/// Serves one connection the way LiveChess does: the board list, then the subscribed board's
/// events, then closes.
async fn serve_livechess(listener: TcpListener) -> anyhow::Result<Vec<Value>> {
    let (stream, _) = listener.accept().await?;
    let mut ws = accept_async(stream).await?;
    let mut calls = Vec::new();
    let send = |v: Value| Message::Text(v.to_string().into());
    while let Some(message) = ws.next().await {
        let Message::Text(text) = message? else {
            continue;
        };
        let call: Value = serde_json::from_str(&text)?;
        calls.push(call.clone());
        match call["call"].as_str() {
            Some("eboards") => {
                ws.send(send(json!({"response": "call", "id": call["id"], "time": 1000, "param": [{
                    "serialnr": "7425", "state": "ACTIVE", "battery": "90%", "board": START,
                    "flipped": false, "clock": {"white": 5400, "black": 5400, "run": null, "time": 1000},
                }]})))
                .await?;
            }
            Some("subscribe") => {
                let feed = call["param"]["id"].clone();
                ws.send(send(
                    json!({"response": "call", "id": call["id"], "param": null, "time": 1001}),
                ))
                .await?;
                // White is thinking; plays e4 and presses the clock; a junk frame in between.
                ws.send(send(json!({"response": "feed", "id": feed, "time": 2000, "param": {
                    "serialnr": "7425", "board": START, "clock": {"white": 5399, "black": 5400, "run": true}}})))
                .await?;
                ws.send(Message::Text("not json".into())).await?;
                ws.send(send(
                    json!({"response": "feed", "id": feed, "time": 3000, "param": {
                    "serialnr": "7425", "board": AFTER_E4, "san": ["e4"], "start": START}}),
                ))
                .await?;
                ws.send(send(json!({"response": "feed", "id": feed, "time": 3100, "param": {
                    "serialnr": "7425", "board": AFTER_E4, "clock": {"white": 5398.5, "black": 5400, "run": false}}})))
                .await?;
                ws.close(None).await?;
                break;
            }
            _ => {}
        }
    }
    Ok(calls)
}

#[tokio::test]
async fn boards_placements_and_clocks_become_numbered_observations() -> anyhow::Result<()> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("ws://{}/api/v1.0", listener.local_addr()?);
    let server = tokio::spawn(serve_livechess(listener));

    let dir = tempfile::tempdir()?;
    let outbox = Arc::new(Outbox::open(&dir.path().join("outbox.redb"))?);
    let recorder = Recorder::new(
        outbox.clone(),
        Arc::new(Notify::new()),
        SourceKind::Livechess,
    );
    let ended = livechess::run_once(&url, &recorder).await;
    assert!(ended.is_err(), "the connection closing ends the session");

    let calls = server.await??;
    assert_eq!(calls[0]["call"], "eboards");
    assert_eq!(calls[1]["call"], "subscribe");
    assert_eq!(calls[1]["param"]["feed"], "eboardevent");
    assert_eq!(calls[1]["param"]["param"]["serialnr"], "7425");

    let stored = outbox.peek(100)?;
    let kinds: Vec<&Kind> = stored
        .iter()
        .filter_map(|p| p.observation.kind.as_ref())
        .collect();
    assert!(
        stored
            .iter()
            .all(|p| p.observation.board_id == "livechess-7425")
    );
    let seqs: Vec<u64> = stored.iter().map(|p| p.observation.device_seq).collect();
    assert_eq!(
        seqs,
        (1..=stored.len() as u64).collect::<Vec<_>>(),
        "numbered in order"
    );
    assert!(
        matches!(kinds[0], Kind::Status(s) if s.state == DeviceState::Connected as i32 && s.battery_percent == Some(90))
    );
    assert!(matches!(kinds[1], Kind::Placement(p) if p.placement == START));
    assert!(matches!(kinds[2], Kind::Clock(c) if c.running == ClockRun::Stopped as i32));
    assert!(
        matches!(kinds[3], Kind::Clock(c) if c.running == ClockRun::White as i32 && c.white_remaining_ms == 5_399_000)
    );
    assert!(matches!(kinds[4], Kind::Placement(p) if p.placement == AFTER_E4));
    assert!(
        matches!(kinds[5], Kind::Clock(c) if c.running == ClockRun::Black as i32 && c.white_remaining_ms == 5_398_500)
    );
    assert_eq!(
        kinds.len(),
        6,
        "unchanged placements and the junk frame add nothing"
    );
    assert_eq!(
        stored[4].observation.device_time_unix_ms, 3000,
        "LiveChess's time is the device time"
    );
    Ok(())
}

//! The DGT LiveChess 2 websocket feed (`ws://localhost:1982/api/v1.0`).
//!
//! LiveChess reads the boards itself; it reports each board's placement (FEN) and clock, and its
//! state and battery. We list the boards (`eboards`), subscribe to each board's `eboardevent`
//! feed, and turn what it says into observations: a placement when the board changed, a clock
//! reading when the clock did, device status when the state or battery did. The board id is
//! `livechess-<serial number>`. LiveChess does not report single lifts and placements, so touch
//! evidence from these boards is limited to what the placements show.

use std::{collections::HashMap, time::Duration};

use anyhow::{Context as _, bail};
use boardcast_schema::device::v1::{
    BoardPlacement, ClockDisplay, ClockReading, ClockRun, DeviceState, DeviceStatus,
    observation::Kind,
};
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::{connect_async, tungstenite::Message};

use crate::recorder::Recorder;

/// How often the board list is asked for again (new boards, state and battery).
const POLL_BOARDS: Duration = Duration::from_secs(5);

/// What we last reported per board, so that only changes become observations.
#[derive(Default, Debug, Clone, PartialEq)]
struct BoardSeen {
    status: Option<DeviceStatus>,
    placement: Option<String>,
    clock: Option<ClockReading>,
}

/// `livechess-<serial>`, with anything a NATS subject cannot hold replaced.
pub fn board_id_for(serial: &str) -> String {
    let clean: String = serial
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("livechess-{clean}")
}

fn device_state(state: &str) -> DeviceState {
    match state {
        "ACTIVE" | "DELAYED" => DeviceState::Connected,
        "NOTRESPONDING" => DeviceState::NotResponding,
        _ => DeviceState::Disconnected,
    }
}

/// Battery as LiveChess reports it: a number or a string such as "85%".
fn battery_percent(value: &Value) -> Option<u32> {
    match value {
        Value::Number(n) => n.as_u64().map(|v| v.min(100) as u32),
        Value::String(s) => s
            .trim()
            .trim_end_matches('%')
            .trim()
            .parse::<u32>()
            .ok()
            .map(|v| v.min(100)),
        _ => None,
    }
}

fn status_of(board: &Value) -> DeviceStatus {
    let state = board["state"].as_str().unwrap_or("INACTIVE");
    DeviceStatus {
        state: device_state(state) as i32,
        battery_percent: battery_percent(&board["battery"]),
        serial_number: board["serialnr"].as_str().unwrap_or_default().to_owned(),
        firmware_version: board["version"].as_str().unwrap_or_default().to_owned(),
        detail: format!("LiveChess state {state}"),
        // LiveChess's board list does not say whether a clock is paired.
        clock_connected: None,
    }
}

/// `{"white": s, "black": s, "run": true|false|null}` → a clock reading (seconds may be
/// fractional).
fn clock_of(clock: &Value) -> Option<ClockReading> {
    let seconds = |v: &Value| v.as_f64().filter(|s| s.is_finite() && *s >= 0.0);
    let white = seconds(&clock["white"])?;
    let black = seconds(&clock["black"])?;
    let running = match clock["run"] {
        Value::Bool(true) => ClockRun::White,
        Value::Bool(false) => ClockRun::Black,
        _ => ClockRun::Stopped,
    };
    Some(ClockReading {
        white_remaining_ms: (white * 1000.0).round() as u64,
        black_remaining_ms: (black * 1000.0).round() as u64,
        running: running as i32,
        white_flag: white == 0.0,
        black_flag: black == 0.0,
        // LiveChess maps the displays to White and Black itself and does not say how.
        white_display: ClockDisplay::Unspecified as i32,
    })
}

/// A placement from LiveChess's `board` field (a FEN placement, possibly a whole FEN).
fn placement_of(board: &Value) -> Option<Result<String, String>> {
    let text = board.as_str()?;
    let placement = text.split_whitespace().next().unwrap_or_default();
    Some(
        placement
            .parse::<shakmaty::Board>()
            .map(|b| b.board_fen().to_string())
            .map_err(|e| format!("{text:?}: {e}")),
    )
}

impl BoardSeen {
    /// The observations that `update` (a board from `eboards` or an `eboardevent` feed) brings.
    fn changes(&mut self, update: &Value, with_status: bool) -> Vec<Kind> {
        let mut kinds = Vec::new();
        if with_status {
            let status = status_of(update);
            if self.status.as_ref() != Some(&status) {
                self.status = Some(status.clone());
                kinds.push(Kind::Status(status));
            }
        }
        match placement_of(&update["board"]) {
            Some(Ok(placement)) if self.placement.as_ref() != Some(&placement) => {
                self.placement = Some(placement.clone());
                kinds.push(Kind::Placement(BoardPlacement { placement }));
            }
            Some(Err(e)) => tracing::warn!("LiveChess sent an unreadable board: {e}"),
            _ => {}
        }
        if let Some(clock) = clock_of(&update["clock"])
            && self.clock.as_ref() != Some(&clock)
        {
            self.clock = Some(clock);
            kinds.push(Kind::Clock(clock));
        }
        kinds
    }
}

/// Reads LiveChess at `url` until the connection fails; the caller reconnects.
pub async fn run_once(url: &str, recorder: &Recorder) -> anyhow::Result<()> {
    let (mut socket, _) = connect_async(url)
        .await
        .with_context(|| format!("connecting to LiveChess at {url}"))?;
    tracing::info!(url, "connected to LiveChess");
    let mut next_id: u64 = 1;
    let mut list_call = next_id;
    socket
        .send(Message::Text(
            json!({"id": list_call, "call": "eboards"})
                .to_string()
                .into(),
        ))
        .await?;
    next_id += 1;
    let mut boards: HashMap<String, BoardSeen> = HashMap::new();
    // Feed id → serial number.
    let mut feeds: HashMap<u64, String> = HashMap::new();
    let mut poll = tokio::time::interval(POLL_BOARDS);
    poll.tick().await;
    loop {
        let message = tokio::select! {
            message = socket.next() => message,
            _ = poll.tick() => {
                list_call = next_id;
                next_id += 1;
                socket.send(Message::Text(json!({"id": list_call, "call": "eboards"}).to_string().into())).await?;
                continue;
            }
        };
        let Some(message) = message else {
            bail!("LiveChess closed the connection");
        };
        let text = match message.context("reading from LiveChess")? {
            Message::Text(text) => text,
            Message::Close(_) => bail!("LiveChess closed the connection"),
            _ => continue,
        };
        let value: Value = match serde_json::from_str(&text) {
            Ok(v) => v,
            Err(e) => {
                tracing::warn!("LiveChess sent something that is not JSON ({e}): {text:.200}");
                continue;
            }
        };
        let time = value["time"]
            .as_i64()
            .unwrap_or_else(boardcast_kit::now_unix_ms);
        match (value["response"].as_str(), value["id"].as_u64()) {
            (Some("call"), Some(id)) if id == list_call => {
                let Some(list) = value["param"].as_array() else {
                    tracing::warn!("LiveChess board list without boards: {text:.200}");
                    continue;
                };
                for board in list {
                    let Some(serial) = board["serialnr"].as_str() else {
                        continue;
                    };
                    let known = boards.contains_key(serial);
                    let seen = boards.entry(serial.to_owned()).or_default();
                    let kinds = seen.changes(board, true);
                    recorder.record(&board_id_for(serial), time, kinds).await?;
                    if !known {
                        let feed_id = next_id;
                        next_id += 1;
                        feeds.insert(feed_id, serial.to_owned());
                        let subscribe = json!({
                            "id": next_id,
                            "call": "subscribe",
                            "param": {"feed": "eboardevent", "id": feed_id, "param": {"serialnr": serial}},
                        });
                        next_id += 1;
                        socket
                            .send(Message::Text(subscribe.to_string().into()))
                            .await?;
                    }
                }
            }
            (Some("feed"), Some(feed_id)) => {
                let param = &value["param"];
                let serial = param["serialnr"]
                    .as_str()
                    .map(str::to_owned)
                    .or_else(|| feeds.get(&feed_id).cloned());
                let Some(serial) = serial else {
                    tracing::warn!("LiveChess feed message for an unknown board: {text:.200}");
                    continue;
                };
                let kinds = boards
                    .entry(serial.clone())
                    .or_default()
                    .changes(param, false);
                recorder.record(&board_id_for(&serial), time, kinds).await?;
            }
            (Some("call"), _) => {}
            _ => tracing::debug!("LiveChess message ignored: {text:.200}"),
        }
    }
}

/// Reads LiveChess for as long as the gateway runs, reconnecting after failures.
pub async fn run(url: String, recorder: Recorder) {
    let mut backoff = Duration::from_millis(500);
    loop {
        match run_once(&url, &recorder).await {
            Ok(()) => backoff = Duration::from_millis(500),
            Err(e) => tracing::warn!("LiveChess: {e:#}; reconnecting in {backoff:?}"),
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(10));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_from_livechess() {
        assert_eq!(board_id_for("12345"), "livechess-12345");
        assert_eq!(board_id_for("a.b c"), "livechess-a_b_c");
        assert_eq!(battery_percent(&json!("85%")), Some(85));
        assert_eq!(battery_percent(&json!(40)), Some(40));
        let c = clock_of(&json!({"white": 5400.5, "black": 5399, "run": false})).expect("clock");
        assert_eq!(c.white_remaining_ms, 5_400_500);
        assert_eq!(c.running, ClockRun::Black as i32);
        assert!(clock_of(&json!({"white": "x"})).is_none());
        assert!(placement_of(&json!("not a board")).is_some_and(|r| r.is_err()));
    }
}

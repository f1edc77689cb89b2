//! Plumbing shared by the boardcast services: NATS subjects and streams, connecting, telemetry,
//! stopping.

pub mod client;
pub mod game_log;
pub mod local;
pub mod metrics;
pub mod nats;
pub mod nats_access;
pub mod secrets;
pub mod shutdown;
pub mod signing;
pub mod telemetry;

/// Milliseconds since the Unix epoch, for receive and record times. Services read the wall
/// clock; the domain libraries only ever see the value.
pub fn now_unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// What a caught panic said (its message), for the log and for a dead letter's reason.
pub fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

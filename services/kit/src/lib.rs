//! Plumbing shared by the boardcast services: NATS subjects and streams, connecting, telemetry,
//! stopping.

pub mod client;
pub mod fair_turns;
pub mod game_log;
pub mod http_server;
pub mod local;
pub mod metrics;
pub mod nats;
pub mod nats_access;
pub mod secrets;
pub mod shutdown;
pub mod signing;
pub mod telemetry;
pub mod tls;

/// Milliseconds since the Unix epoch, for receive and record times. Services read the wall
/// clock; the domain libraries only ever see the value.
pub fn now_unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// At most how much of a caught panic's message is kept: it goes into a dead letter's reason
/// and the game log's record of the hole, and a panic may print a whole value.
pub const PANIC_TEXT_BYTES: usize = 1_000;

/// What a caught panic said (its message, at most `PANIC_TEXT_BYTES`), for the log and for a
/// dead letter's reason.
pub fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    let text = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned());
    cut_to(text, PANIC_TEXT_BYTES)
}

/// `text` cut to at most `bytes` bytes (on a character boundary), ending in `…` where it was cut
/// if that fits.
pub fn cut_to(mut text: String, bytes: usize) -> String {
    if text.len() > bytes {
        let marker = if bytes >= '…'.len_utf8() { "…" } else { "" };
        let mut end = bytes - marker.len();
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str(marker);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_panic_message_is_cut_on_a_character_boundary() {
        let long = "é".repeat(PANIC_TEXT_BYTES);
        let caught = std::panic::catch_unwind(|| panic!("{long}")).expect_err("it panics");
        let text = panic_text(caught.as_ref());
        assert!(text.len() <= PANIC_TEXT_BYTES, "{}", text.len());
        assert!(text.starts_with("éé") && text.ends_with('…'));
        assert_eq!(cut_to("short".into(), 10), "short");
        assert_eq!(cut_to("éé".into(), 1), "");
    }
}

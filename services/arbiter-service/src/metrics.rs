//! The arbiter service's latency, as Prometheus shows it at `/metrics`:
//! `boardcast_log_to_alerts_seconds`, from a record stored in the game log to the arbiters' alerts
//! and game views updated with it, once the service has first caught up with the log (records
//! read before are old). (`boardcast_alerts_open` and `boardcast_log_folded_seq` are gauges read
//! from the folded games.)

use std::sync::LazyLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

use opentelemetry::metrics::Histogram;

/// Made on first use, from the meter `boardcast_kit::metrics::install` set up.
static LOG_TO_ALERTS: LazyLock<Histogram<f64>> = LazyLock::new(|| {
    boardcast_kit::metrics::latency_histogram(
        &opentelemetry::global::meter("boardcast-arbiter-service"),
        "boardcast.log.to_alerts",
        "From a record stored in the game log to the arbiters' alerts updated with it",
    )
});

/// Whether the service has caught up with the log once: from then on every record is timed,
/// also the backlog read after a lost connection (that delay is what the arbiters saw).
static LIVE: AtomicBool = AtomicBool::new(false);

/// The log has been folded to its end once.
pub fn caught_up() {
    LIVE.store(true, Ordering::Release);
}

pub fn is_live() -> bool {
    LIVE.load(Ordering::Acquire)
}

/// A record stored at `stored_at` was folded into the arbiters' view now.
pub fn alerts_after(stored_at: SystemTime) {
    if is_live() {
        LOG_TO_ALERTS.record(boardcast_kit::metrics::seconds_since(stored_at), &[]);
    }
}

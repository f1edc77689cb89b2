//! The arbiter service's latency, as Prometheus shows it at `/metrics`:
//! `boardcast_log_to_alerts_seconds`, from a record stored in the game log to the arbiters' alerts
//! and game views updated with it. (`boardcast_alerts_open` and `boardcast_log_folded_seq` are
//! gauges read from the folded games.)

use std::sync::LazyLock;
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

/// A record stored at `stored_at` was folded into the arbiters' view now.
pub fn alerts_after(stored_at: SystemTime) {
    LOG_TO_ALERTS.record(boardcast_kit::metrics::seconds_since(stored_at), &[]);
}

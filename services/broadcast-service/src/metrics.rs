//! The broadcast service's latency, as Prometheus shows it at `/metrics`:
//! `boardcast_log_to_feed_seconds`, from a record stored in the game log to the feeds' subscribers
//! sent what it changed. (`boardcast_feed_subscribers` is a gauge read from the projection.)

use std::sync::LazyLock;
use std::time::SystemTime;

use opentelemetry::metrics::Histogram;

/// Made on first use, from the meter `boardcast_kit::metrics::install` set up.
static LOG_TO_FEED: LazyLock<Histogram<f64>> = LazyLock::new(|| {
    boardcast_kit::metrics::latency_histogram(
        &opentelemetry::global::meter("boardcast-broadcast-service"),
        "boardcast.log.to_feed",
        "From a record stored in the game log to its change sent to the feeds' subscribers",
    )
});

/// A record stored at `stored_at` was folded into the feeds and sent to their subscribers now.
pub fn fed_after(stored_at: SystemTime) {
    LOG_TO_FEED.record(boardcast_kit::metrics::seconds_since(stored_at), &[]);
}

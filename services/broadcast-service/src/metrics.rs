//! The broadcast service's latency, as Prometheus shows it at `/metrics`:
//! `boardcast_log_to_fold_seconds`, from a record stored in the game log to its fold into the
//! feeds — when a round has no delay, the moment its change is sent to the subscribers; with a
//! delay, the change is held and released later. (`boardcast_feed_subscribers` is a gauge read
//! from the projection.) `boardcast_state_store_failures_total`: writes of the state file that
//! failed (a full disk, say); the feeds go on from memory.

use std::sync::LazyLock;
use std::time::SystemTime;

use opentelemetry::metrics::{Counter, Histogram};

/// Made on first use, from the meter `boardcast_kit::metrics::install` set up.
static LOG_TO_FOLD: LazyLock<Histogram<f64>> = LazyLock::new(|| {
    boardcast_kit::metrics::latency_histogram(
        &opentelemetry::global::meter("boardcast-broadcast-service"),
        "boardcast.log.to_fold",
        "From a record stored in the game log to its fold into the feeds (sent to subscribers \
         then, or when the round's delay releases it)",
    )
});

/// A record stored at `stored_at` was folded into the feeds now.
pub fn folded_after(stored_at: SystemTime) {
    LOG_TO_FOLD.record(boardcast_kit::metrics::seconds_since(stored_at), &[]);
}

static STORE_FAILURES: LazyLock<Counter<u64>> = LazyLock::new(|| {
    opentelemetry::global::meter("boardcast-broadcast-service")
        .u64_counter("boardcast.state.store_failures")
        .with_description("Writes of the state file that failed; the feeds go on from memory")
        .build()
});

/// A write of the state file failed.
pub fn store_failed() {
    STORE_FAILURES.add(1, &[]);
}

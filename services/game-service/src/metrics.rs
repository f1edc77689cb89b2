//! The game service's instruments, as Prometheus shows them at `/metrics`:
//! - `boardcast_observations_total{disposition}`: observations delivered from the ingest stream
//!   and what became of them (`applied`, `unchanged`, `duplicate`, `dead_lettered`, `retried`);
//! - `boardcast_records_appended_total`: records this instance appended to the game log;
//! - `boardcast_append_conflicts_total`: appends refused because the log had moved on (another
//!   instance, or another partition of this one, appended first): each is caught up and retried.

use std::sync::LazyLock;

use opentelemetry::KeyValue;
use opentelemetry::metrics::Counter;

pub struct Instruments {
    observations: Counter<u64>,
    records_appended: Counter<u64>,
    append_conflicts: Counter<u64>,
}

/// Made on first use, from the meter `boardcast_kit::metrics::serve` installed (without it, they
/// record nowhere).
static INSTRUMENTS: LazyLock<Instruments> = LazyLock::new(|| {
    let meter = opentelemetry::global::meter("boardcast-game-service");
    Instruments {
        observations: meter
            .u64_counter("boardcast.observations")
            .with_description(
                "Observations delivered from the ingest stream, by what became of them",
            )
            .build(),
        records_appended: meter
            .u64_counter("boardcast.records.appended")
            .with_description("Records this instance appended to the game log")
            .build(),
        append_conflicts: meter
            .u64_counter("boardcast.append.conflicts")
            .with_description(
                "Appends refused because the game log had moved on (caught up and retried)",
            )
            .build(),
    }
});

/// An observation was done with: `disposition` says how.
pub fn observation(disposition: &'static str) {
    INSTRUMENTS
        .observations
        .add(1, &[KeyValue::new("disposition", disposition)]);
}

pub fn record_appended() {
    INSTRUMENTS.records_appended.add(1, &[]);
}

pub fn append_conflict() {
    INSTRUMENTS.append_conflicts.add(1, &[]);
}

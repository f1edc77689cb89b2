//! The game service's instruments, as Prometheus shows them at `/metrics`:
//! - `boardcast_observations_total{disposition}`: observations delivered from the ingest stream
//!   and what became of them (`applied`, `unchanged`, `duplicate`, `dead_lettered`, `retried`);
//! - `boardcast_records_appended_total`: records this instance appended to the game log;
//! - `boardcast_append_conflicts_total`: decisions made again because their game moved (another
//!   instance appended to it first, or its log ends elsewhere than folded here);
//! - `boardcast_observation_applied_seconds`: from an observation's arrival in NATS to its events
//!   stored in the game log and the observation acknowledged (a histogram);
//! - `boardcast_ingest_lag{partition}`: observations of the partition waiting behind the one
//!   being decided, as JetStream last said;
//! - `boardcast_partitions_taken_over_total{partition}`: partitions a standby instance began to
//!   consume because nobody else was deciding them (see `ingest`);
//! - `boardcast_nothing_decided_total{how}`: decisions that append nothing (a clock reading, most
//!   of a hall's), each checked against its game's end in the log (`asked`).

use std::collections::BTreeMap;
use std::sync::{LazyLock, Mutex};

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram, ObservableGauge};

pub struct Instruments {
    observations: Counter<u64>,
    records_appended: Counter<u64>,
    append_conflicts: Counter<u64>,
    partitions_taken_over: Counter<u64>,
    nothing_decided: Counter<u64>,
    applied_seconds: Histogram<f64>,
    /// Reports `LAGS` when scraped; kept so that it goes on reporting.
    _lag: ObservableGauge<u64>,
}

/// Each partition's lag, as its consumer last delivered.
static LAGS: LazyLock<Mutex<BTreeMap<String, u64>>> = LazyLock::new(Default::default);

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
        partitions_taken_over: meter
            .u64_counter("boardcast.partitions.taken_over")
            .with_description(
                "Partitions this standby instance began to consume because nobody else decided them",
            )
            .build(),
        nothing_decided: meter
            .u64_counter("boardcast.nothing_decided")
            .with_description(
                "Decisions on observations that append nothing, by how their game was known \
                 not to have moved on",
            )
            .build(),
        applied_seconds: boardcast_kit::metrics::latency_histogram(
            &meter,
            "boardcast.observation.applied",
            "From an observation's arrival in NATS to its events in the game log",
        ),
        _lag: meter
            .u64_observable_gauge("boardcast.ingest.lag")
            .with_description("Observations of a partition waiting behind the one being decided")
            .with_callback(|gauge| {
                let lags = LAGS.lock().unwrap_or_else(|e| e.into_inner());
                for (partition, lag) in lags.iter() {
                    gauge.observe(*lag, &[KeyValue::new("partition", partition.clone())]);
                }
            })
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

/// A decision that appends nothing, by how it was made sure that its game had not moved on.
pub fn nothing_decided(how: &'static str) {
    INSTRUMENTS
        .nothing_decided
        .add(1, &[KeyValue::new("how", how)]);
}

pub fn append_conflict() {
    INSTRUMENTS.append_conflicts.add(1, &[]);
}

/// This standby instance began to consume `partition`.
pub fn partition_taken_over(partition: &str) {
    INSTRUMENTS
        .partitions_taken_over
        .add(1, &[KeyValue::new("partition", partition.to_owned())]);
}

/// An observation that arrived in NATS at `arrived_unix_ns` was applied and acknowledged now.
pub fn applied_after(arrived_unix_ns: i128) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i128::try_from(d.as_nanos()).unwrap_or(i128::MAX));
    let seconds = now.saturating_sub(arrived_unix_ns).max(0) as f64 / 1e9;
    INSTRUMENTS.applied_seconds.record(seconds, &[]);
}

/// `pending` observations of `partition` wait behind the one just delivered.
pub fn partition_lag(partition: &str, pending: u64) {
    LazyLock::force(&INSTRUMENTS);
    let mut lags = LAGS.lock().unwrap_or_else(|e| e.into_inner());
    lags.insert(partition.to_owned(), pending);
}

//! Metrics for operators: OpenTelemetry instruments, read out in the Prometheus text format at
//! `GET /metrics` (what a hall's Grafana scrapes). The game service, which has no HTTP server of
//! its own, serves it with `GET /healthz` (the process answers) and `GET /readyz` (it is making
//! progress) on a listener of its own ([`serve`]); the broadcast and arbiter services add the
//! route to theirs ([`Exposition::router`]).
//!
//! `opentelemetry-prometheus` bridges the OpenTelemetry meter to a `prometheus` registry, so the
//! services record with the same OpenTelemetry API as their traces and an OTLP exporter can be
//! added beside it without touching the instruments.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context as _;
use axum::{Router, http::StatusCode, routing::get};
use opentelemetry_sdk::metrics::SdkMeterProvider;
use prometheus::{Encoder as _, TextEncoder};

/// Whether the service is making progress (for `/readyz`); the service sets it.
#[derive(Clone, Default)]
pub struct Readiness(Arc<AtomicBool>);

impl Readiness {
    pub fn set(&self, ready: bool) {
        self.0.store(ready, Ordering::Release);
    }

    pub fn is_ready(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

/// What the instruments have recorded, in the Prometheus text format.
#[derive(Clone)]
pub struct Exposition {
    registry: prometheus::Registry,
}

impl Exposition {
    /// The page `/metrics` serves.
    pub fn render(&self) -> (StatusCode, String) {
        let mut text = Vec::new();
        match TextEncoder::new().encode(&self.registry.gather(), &mut text) {
            Ok(()) => (StatusCode::OK, String::from_utf8_lossy(&text).into_owned()),
            Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        }
    }

    /// `GET /metrics`, to merge into a service's router.
    pub fn router(&self) -> Router {
        let exposition = self.clone();
        Router::new().route(
            "/metrics",
            get(move || {
                let page = exposition.render();
                async move { page }
            }),
        )
    }
}

/// A latency histogram in seconds, with buckets from a millisecond to half a minute.
pub fn latency_histogram(
    meter: &opentelemetry::metrics::Meter,
    name: &'static str,
    description: &'static str,
) -> opentelemetry::metrics::Histogram<f64> {
    meter
        .f64_histogram(name)
        .with_unit("s")
        .with_description(description)
        .with_boundaries(vec![
            0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0,
        ])
        .build()
}

/// Seconds from `then` to now (0 when `then` is later: clocks of two machines).
pub fn seconds_since(then: std::time::SystemTime) -> f64 {
    then.elapsed().map_or(0.0, |d| d.as_secs_f64())
}

/// Makes the global OpenTelemetry meter record into a Prometheus registry. Instruments made
/// before this record nowhere: call it first thing.
pub fn install(service_name: &'static str) -> anyhow::Result<Exposition> {
    let registry = prometheus::Registry::new();
    let exporter = opentelemetry_prometheus::exporter()
        .with_registry(registry.clone())
        .build()
        .context("setting up the Prometheus exporter")?;
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name(service_name)
        .build();
    let provider = SdkMeterProvider::builder()
        .with_reader(exporter)
        .with_resource(resource)
        .build();
    opentelemetry::global::set_meter_provider(provider);
    Ok(Exposition { registry })
}

/// Serves `/metrics`, `/healthz` and `/readyz` on `addr`.
pub async fn serve(
    addr: SocketAddr,
    exposition: Exposition,
    readiness: Readiness,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    let app = exposition
        .router()
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/readyz",
            get(move || {
                let ready = readiness.is_ready();
                async move {
                    if ready {
                        (StatusCode::OK, "ready")
                    } else {
                        (StatusCode::SERVICE_UNAVAILABLE, "not making progress")
                    }
                }
            }),
        );
    serve_on(addr, app, "/metrics, /healthz and /readyz").await
}

/// Serves `/metrics` alone on `addr`, an operators' address: for a service whose health is
/// answered on its own HTTP address, and whose public address must not show counters that move
/// with play.
pub async fn serve_metrics(
    addr: SocketAddr,
    exposition: Exposition,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    serve_on(addr, exposition.router(), "/metrics").await
}

async fn serve_on(
    addr: SocketAddr,
    app: Router,
    what: &'static str,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding the metrics address {addr}"))?;
    tracing::info!(%addr, "serving {what}");
    Ok(tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!("the metrics endpoint stopped: {e}");
        }
    }))
}

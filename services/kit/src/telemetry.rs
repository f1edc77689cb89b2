//! Logging and tracing: human-readable logs on stderr (filtered by `RUST_LOG`), and
//! OpenTelemetry traces over OTLP when `OTEL_EXPORTER_OTLP_ENDPOINT` is set; and the W3C trace
//! context (`traceparent`) carried in NATS headers and gRPC metadata, so that one observation's
//! trace runs from the gateway through the game service to the broadcast and arbiter services.

use std::io::IsTerminal as _;

use opentelemetry::{
    Context,
    propagation::{Extractor, Injector, TextMapPropagator as _},
    trace::TracerProvider as _,
};
use opentelemetry_sdk::{propagation::TraceContextPropagator, trace::SdkTracerProvider};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use tracing_subscriber::{
    EnvFilter, Layer as _, filter::LevelFilter, layer::SubscriberExt, util::SubscriberInitExt,
};

/// Flushes and shuts the trace exporter down when dropped.
pub struct TelemetryGuard {
    provider: Option<SdkTracerProvider>,
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        if let Some(provider) = self.provider.take()
            && let Err(e) = provider.shutdown()
        {
            eprintln!("shutting down the trace exporter: {e}");
        }
    }
}

/// Sets up logging (at `default_level` unless `RUST_LOG` says otherwise) and, when an OTLP endpoint
/// is configured, trace export as `service_name`. Spans are exported at `info` and above whatever
/// the log shows: a quiet log must not cut a trace.
pub fn init(service_name: &'static str, default_level: &str) -> anyhow::Result<TelemetryGuard> {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_level));
    // Plain text when the log goes to a file, as it does under `boardcast demo`.
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    let provider = if std::env::var_os("OTEL_EXPORTER_OTLP_ENDPOINT").is_some() {
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .build()?;
        let resource = opentelemetry_sdk::Resource::builder()
            .with_service_name(service_name)
            .build();
        Some(
            SdkTracerProvider::builder()
                .with_batch_exporter(exporter)
                .with_resource(resource)
                .build(),
        )
    } else {
        None
    };
    let otel = provider
        .as_ref()
        .map(|p| tracing_opentelemetry::layer().with_tracer(p.tracer(service_name)))
        .with_filter(LevelFilter::INFO);
    tracing_subscriber::registry()
        .with(fmt.with_filter(filter))
        .with(otel)
        .try_init()?;
    Ok(TelemetryGuard { provider })
}

/// Writes the current span's trace context into the headers of a NATS message.
pub fn inject_into_nats(headers: &mut async_nats::HeaderMap) {
    struct Headers<'a>(&'a mut async_nats::HeaderMap);
    impl Injector for Headers<'_> {
        fn set(&mut self, key: &str, value: String) {
            self.0.insert(key, value.as_str());
        }
    }
    let cx = tracing::Span::current().context();
    TraceContextPropagator::new().inject_context(&cx, &mut Headers(headers));
}

/// The trace context a NATS message carries (an empty one when it carries none).
pub fn context_from_nats(headers: Option<&async_nats::HeaderMap>) -> Context {
    struct Headers<'a>(&'a async_nats::HeaderMap);
    impl Extractor for Headers<'_> {
        fn get(&self, key: &str) -> Option<&str> {
            self.0.get(key).map(|v| v.as_str())
        }
        fn keys(&self) -> Vec<&str> {
            self.0.iter().map(|(k, _)| k.as_ref()).collect()
        }
    }
    match headers {
        Some(headers) => TraceContextPropagator::new().extract(&Headers(headers)),
        None => Context::new(),
    }
}

/// Writes the current span's trace context into a gRPC request's metadata.
pub fn inject_into_grpc(metadata: &mut tonic::metadata::MetadataMap) {
    struct Metadata<'a>(&'a mut tonic::metadata::MetadataMap);
    impl Injector for Metadata<'_> {
        fn set(&mut self, key: &str, value: String) {
            if let (Ok(key), Ok(value)) = (
                tonic::metadata::MetadataKey::from_bytes(key.as_bytes()),
                value.parse(),
            ) {
                self.0.insert(key, value);
            }
        }
    }
    let cx = tracing::Span::current().context();
    TraceContextPropagator::new().inject_context(&cx, &mut Metadata(metadata));
}

/// The trace context an HTTP/2 request (a gRPC call) carries.
pub fn context_from_http(headers: &tonic::codegen::http::HeaderMap) -> Context {
    struct Headers<'a>(&'a tonic::codegen::http::HeaderMap);
    impl Extractor for Headers<'_> {
        fn get(&self, key: &str) -> Option<&str> {
            self.0.get(key).and_then(|v| v.to_str().ok())
        }
        fn keys(&self) -> Vec<&str> {
            self.0.keys().map(|k| k.as_str()).collect()
        }
    }
    TraceContextPropagator::new().extract(&Headers(headers))
}

/// Makes `span` a child of the remote span in `parent` (nothing when `parent` has none, or when
/// traces are not exported).
pub fn continue_trace(span: &tracing::Span, parent: Context) {
    use opentelemetry::trace::TraceContextExt as _;
    if parent.span().span_context().is_valid() {
        // Fails only when the span is disabled (no exporter): then there is nothing to link.
        let _ = span.set_parent(parent);
    }
}

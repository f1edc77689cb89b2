//! An OTLP trace receiver on loopback that keeps every span the services export, so that a test
//! can read a trace that crossed several processes (the in-memory end of their exporters).

use std::{
    net::SocketAddr,
    sync::{Arc, Mutex},
};

use opentelemetry_proto::tonic::{
    collector::trace::v1::{
        ExportTraceServiceRequest, ExportTraceServiceResponse,
        trace_service_server::{TraceService, TraceServiceServer},
    },
    common::v1::any_value::Value,
};

/// One exported span, with what a test asks of it.
#[derive(Debug, Clone)]
pub struct CollectedSpan {
    /// `service.name` of the process that exported it.
    pub service: String,
    pub name: String,
    pub trace_id: Vec<u8>,
    pub span_id: Vec<u8>,
    /// Empty for the root of a trace.
    pub parent_span_id: Vec<u8>,
    /// (trace id, span id) of each linked span.
    pub links: Vec<(Vec<u8>, Vec<u8>)>,
    /// String and integer attributes, as text.
    pub attributes: Vec<(String, String)>,
}

impl CollectedSpan {
    pub fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Clone, Default)]
struct Receiver(Arc<Mutex<Vec<CollectedSpan>>>);

#[tonic::async_trait]
impl TraceService for Receiver {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let mut collected = Vec::new();
        for resource_spans in request.into_inner().resource_spans {
            let service = resource_spans
                .resource
                .iter()
                .flat_map(|r| &r.attributes)
                .find(|a| a.key == "service.name")
                .and_then(|a| text(a.value.as_ref()?.value.as_ref()?))
                .unwrap_or_default();
            for span in resource_spans.scope_spans.into_iter().flat_map(|s| s.spans) {
                collected.push(CollectedSpan {
                    service: service.clone(),
                    name: span.name,
                    trace_id: span.trace_id,
                    span_id: span.span_id,
                    parent_span_id: span.parent_span_id,
                    links: span
                        .links
                        .into_iter()
                        .map(|l| (l.trace_id, l.span_id))
                        .collect(),
                    attributes: span
                        .attributes
                        .into_iter()
                        .filter_map(|a| Some((a.key, text(a.value?.value.as_ref()?)?)))
                        .collect(),
                });
            }
        }
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(collected);
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

fn text(value: &Value) -> Option<String> {
    match value {
        Value::StringValue(s) => Some(s.clone()),
        Value::IntValue(i) => Some(i.to_string()),
        Value::BoolValue(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A running receiver; it stops when dropped.
pub struct OtlpCollector {
    addr: SocketAddr,
    spans: Receiver,
    task: tokio::task::JoinHandle<()>,
}

impl OtlpCollector {
    /// Receives on `listener` (bound before the runtime, so that its address can be put in the
    /// environment first), in the current tokio runtime.
    pub fn start_on(listener: std::net::TcpListener) -> anyhow::Result<OtlpCollector> {
        listener.set_nonblocking(true)?;
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let addr = listener.local_addr()?;
        let spans = Receiver::default();
        let service = TraceServiceServer::new(spans.clone());
        let task = tokio::spawn(async move {
            let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
            if let Err(e) = tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming(incoming)
                .await
            {
                eprintln!("the OTLP receiver stopped: {e}");
            }
        });
        Ok(OtlpCollector { addr, spans, task })
    }

    /// What `OTEL_EXPORTER_OTLP_ENDPOINT` is set to for the services.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<CollectedSpan> {
        self.spans
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Drop for OtlpCollector {
    fn drop(&mut self) {
        self.task.abort();
    }
}

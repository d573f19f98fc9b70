//! Process-wide observability for every mnemo binary: structured logs, distributed
//! traces and Prometheus metrics. [`init`] installs the one global `tracing` subscriber
//! (a text or JSON fmt layer behind an `EnvFilter`, plus, when an OTLP endpoint is
//! configured, a `tracing-opentelemetry` layer whose spans a batch processor exports
//! over OTLP/HTTP+protobuf) and returns a [`TelemetryGuard`] that flushes on drop.
//! [`current_traceparent`] and [`set_parent_from_traceparent`] carry a trace across
//! the event log, the bus and HTTP hops as a W3C `traceparent` string, so the other
//! crates never touch OpenTelemetry types. [`Metrics`] owns one Prometheus registry
//! per instance (not the process-global default registry) so tests can build as many
//! as they like without their counts bleeding into each other. Key decisions: HTTP
//! export rather than gRPC keeps tonic's transport stack out of the build; spans
//! are exported only when an endpoint is set, so a process without a collector pays
//! nothing for OpenTelemetry; logs go to stderr so stdout stays free for the output
//! of CLI commands; the crate depends on no HTTP server framework — the HTTP service
//! renders [`Metrics::render`] itself.

use std::collections::HashMap;

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use opentelemetry_sdk::Resource;
use prometheus::{
    Gauge, GaugeVec, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec,
    Opts, Registry,
};
use tracing::Subscriber;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::filter::{filter_fn, EnvFilter};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

/// Name of the W3C Trace Context header (and of the bus/event field that mirrors it).
pub const TRACEPARENT: &str = "traceparent";

/// `Content-Type` of [`Metrics::render`]'s output, so the HTTP service can serve it
/// without depending on `prometheus` itself.
pub const METRICS_CONTENT_TYPE: &str = prometheus::TEXT_FORMAT;

/// Filter used when neither `RUST_LOG` nor the configuration says anything.
const DEFAULT_LOG_FILTER: &str = "info";

/// Instrumentation scope name reported with every exported span.
const TRACER_NAME: &str = "mnemo";

/// Everything that can go wrong while setting telemetry up.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// `RUST_LOG` or `log_filter` is not a valid `EnvFilter` directive list. Reported
    /// rather than ignored: a typo would otherwise silently change what gets logged.
    #[error("invalid log filter {directives:?}: {source}")]
    InvalidLogFilter {
        directives: String,
        #[source]
        source: tracing_subscriber::filter::ParseError,
    },
    /// The OTLP endpoint is not an `http://` or `https://` URL.
    #[error("invalid OTLP endpoint {0:?}: expected an http:// or https:// URL")]
    InvalidOtlpEndpoint(String),
    /// The OTLP span exporter could not be built.
    #[error("cannot build the OTLP span exporter: {0}")]
    OtlpExporter(#[from] opentelemetry_otlp::ExporterBuildError),
    /// A global `tracing` subscriber (or `log` logger) was already installed.
    #[error("a global tracing subscriber is already installed: {0}")]
    AlreadyInitialized(#[from] tracing_subscriber::util::TryInitError),
    /// A metric could not be created or registered.
    #[error("metrics registry error: {0}")]
    Metrics(#[from] prometheus::Error),
}

impl TelemetryError {
    /// A stable code for logs and start-up errors.
    pub fn code(&self) -> &'static str {
        match self {
            TelemetryError::InvalidLogFilter { .. } => "telemetry_invalid_log_filter",
            TelemetryError::InvalidOtlpEndpoint(_) => "telemetry_invalid_otlp_endpoint",
            TelemetryError::OtlpExporter(_) => "telemetry_otlp_exporter",
            TelemetryError::AlreadyInitialized(_) => "telemetry_already_initialized",
            TelemetryError::Metrics(_) => "telemetry_metrics",
        }
    }
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LogFormat {
    /// Human-readable lines, for a terminal.
    #[default]
    Text,
    /// One JSON object per line, for log shippers.
    Json,
}

/// What [`init`] installs.
#[derive(Debug, Clone)]
pub struct TelemetryConfig {
    /// `service.name` resource attribute of exported spans: "mnemo", "mnemo-ingest", ...
    pub service_name: String,
    /// Text or JSON log lines.
    pub log_format: LogFormat,
    /// `EnvFilter` directives, e.g. `"info,mnemo_bus=debug"`. A non-empty `RUST_LOG`
    /// overrides it, so an operator can turn up verbosity without editing config.
    /// Empty means `"info"`.
    pub log_filter: String,
    /// Base URL of an OTLP/HTTP collector, e.g. `"http://localhost:4318"`;
    /// `/v1/traces` is appended unless the URL already ends with it.
    /// `None` = spans are not exported and no OpenTelemetry layer is installed.
    pub otlp_endpoint: Option<String>,
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        Self {
            service_name: "mnemo".to_owned(),
            log_format: LogFormat::Text,
            log_filter: DEFAULT_LOG_FILTER.to_owned(),
            otlp_endpoint: None,
        }
    }
}

/// Keeps the tracer provider alive; flushes and shuts it down on drop.
///
/// Hold it in `main` until the process is about to exit: spans still queued in the
/// batch processor are only sent by that final flush.
#[must_use = "dropping the guard shuts span export down immediately"]
#[derive(Debug)]
pub struct TelemetryGuard {
    tracer_provider: Option<SdkTracerProvider>,
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        if let Some(provider) = self.tracer_provider.take() {
            // `shutdown` flushes the batch queue first. It blocks (bounded by the SDK's
            // timeout) but never needs an async runtime: the batch processor runs on its
            // own thread and the blocking reqwest client on another, so dropping the
            // guard inside `#[tokio::main]` is fine.
            if let Err(err) = provider.shutdown() {
                // The subscriber may be the only sink and is about to go; stderr is the
                // last place this can still be seen.
                eprintln!("mnemo-telemetry: tracer provider shutdown failed: {err}");
            }
        }
    }
}

/// Installs the global tracing subscriber: fmt layer (text or JSON) + EnvFilter, plus
/// a tracing-opentelemetry layer exporting spans over OTLP/HTTP when an endpoint is
/// set (batch exporter; the W3C TraceContext propagator installed globally). Call
/// once per process: a second call returns [`TelemetryError::AlreadyInitialized`].
pub fn init(config: &TelemetryConfig) -> Result<TelemetryGuard, TelemetryError> {
    let env_rust_log = std::env::var("RUST_LOG").ok();
    let directives = effective_filter(&config.log_filter, env_rust_log.as_deref());
    let filter =
        EnvFilter::try_new(directives).map_err(|source| TelemetryError::InvalidLogFilter {
            directives: directives.to_owned(),
            source,
        })?;

    let tracer_provider = config
        .otlp_endpoint
        .as_deref()
        .map(|endpoint| build_otlp_provider(&config.service_name, endpoint))
        .transpose()?;
    let otel_layer = tracer_provider
        .as_ref()
        .map(|provider| otel_layer(provider.tracer(TRACER_NAME)));

    // Both formats are optional layers rather than a boxed `dyn Layer`, which keeps the
    // subscriber's type concrete; exactly one of them is `Some`.
    let (text_layer, json_layer) = match config.log_format {
        LogFormat::Text => (
            Some(tracing_subscriber::fmt::layer().with_writer(std::io::stderr)),
            None,
        ),
        LogFormat::Json => (
            None,
            Some(
                tracing_subscriber::fmt::layer()
                    .json()
                    .with_writer(std::io::stderr),
            ),
        ),
    };

    tracing_subscriber::registry()
        .with(filter)
        .with(otel_layer)
        .with(text_layer)
        .with(json_layer)
        .try_init()?;

    // Only after the subscriber is in: a failed `init` must leave no global state behind.
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    if let Some(provider) = &tracer_provider {
        // Lets code that uses the OpenTelemetry API directly share the same exporter.
        opentelemetry::global::set_tracer_provider(provider.clone());
    }

    Ok(TelemetryGuard { tracer_provider })
}

/// W3C `traceparent` of the current tracing span's OpenTelemetry context, if it is
/// valid (so events and bus records can carry it). `None` outside any span or when no
/// OpenTelemetry layer is installed. The flags byte carries the sampling decision, so
/// an unsampled trace stays unsampled downstream instead of restarting as a new root.
pub fn current_traceparent() -> Option<String> {
    let cx = tracing::Span::current().context();
    let mut carrier = HashMap::new();
    // The propagator (not a hand-written format!) is the one place that knows the
    // header layout, and it injects nothing for an invalid span context.
    TraceContextPropagator::new().inject_context(&cx, &mut carrier);
    carrier.remove(TRACEPARENT)
}

/// Makes the given `traceparent` the parent of the given span (for consumers
/// continuing a trace from a bus header or HTTP header).
///
/// Call it right after creating the span, before entering it or reading its context:
/// OpenTelemetry starts the span on first use and its parent is fixed from then on.
/// A malformed `traceparent` or a span that cannot be re-parented is logged at debug
/// level and otherwise ignored — the span simply starts its own trace — because the
/// value comes from outside and must never break request handling.
pub fn set_parent_from_traceparent(span: &tracing::Span, traceparent: &str) {
    let carrier = HashMap::from([(TRACEPARENT.to_owned(), traceparent.trim().to_owned())]);
    // A local propagator rather than the global one: this must work the same whether or
    // not `init` ran (tests, tools), and traceparent is the only format mnemo speaks.
    let parent = TraceContextPropagator::new().extract(&carrier);
    if !opentelemetry::trace::TraceContextExt::span(&parent)
        .span_context()
        .is_valid()
    {
        tracing::debug!("ignoring malformed traceparent");
        return;
    }
    if let Err(err) = span.set_parent(parent) {
        tracing::debug!(error = %err, "could not set span parent from traceparent");
    }
}

/// A tracing-opentelemetry layer backed by an SDK tracer provider with no exporter:
/// spans get real, sampled trace and span ids but nothing leaves the process. For
/// tests (here and in other crates) that check trace propagation with
/// `tracing::subscriber::with_default`, without the global subscriber or a network.
pub fn otel_layer_for_tests<S>() -> impl Layer<S>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    // The tracer keeps its provider alive, so the provider handle can go out of scope.
    otel_layer(SdkTracerProvider::builder().build().tracer(TRACER_NAME))
}

/// The OpenTelemetry layer as `init` installs it.
fn otel_layer<S>(tracer: SdkTracer) -> impl Layer<S>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    // Spans from the exporter's own HTTP stack must not become exported spans: at
    // debug/trace verbosity each export would otherwise produce spans to export, a
    // feedback loop. They are still logged by the fmt layer if the filter allows.
    tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_filter(filter_fn(|meta| !is_exporter_internal(meta.target())))
}

fn is_exporter_internal(target: &str) -> bool {
    const PREFIXES: [&str; 6] = ["opentelemetry", "reqwest", "hyper", "h2", "tower", "rustls"];
    PREFIXES.iter().any(|prefix| {
        target
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(['_', ':']))
    })
}

/// `RUST_LOG` wins when set and non-empty, then the configured filter, then `info`.
fn effective_filter<'a>(configured: &'a str, rust_log: Option<&'a str>) -> &'a str {
    match rust_log.map(str::trim) {
        Some(env) if !env.is_empty() => env,
        _ if !configured.trim().is_empty() => configured.trim(),
        _ => DEFAULT_LOG_FILTER,
    }
}

/// The exporter's target URL. `with_endpoint` is used verbatim by the OTLP crate (only
/// the `OTEL_EXPORTER_OTLP_ENDPOINT` env var gets the signal path appended), while our
/// config names the collector's base URL like every other OTLP SDK does.
fn traces_url(endpoint: &str) -> Result<String, TelemetryError> {
    let endpoint = endpoint.trim();
    if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
        return Err(TelemetryError::InvalidOtlpEndpoint(endpoint.to_owned()));
    }
    let base = endpoint.trim_end_matches('/');
    Ok(if base.ends_with("/v1/traces") {
        base.to_owned()
    } else {
        format!("{base}/v1/traces")
    })
}

fn build_otlp_provider(
    service_name: &str,
    endpoint: &str,
) -> Result<SdkTracerProvider, TelemetryError> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_endpoint(traces_url(endpoint)?)
        .build()?;
    let resource = Resource::builder()
        .with_service_name(service_name.to_owned())
        .build();
    // The batch processor runs on its own thread (not on the tokio runtime), which is
    // what makes the blocking reqwest client safe to use from async services.
    Ok(SdkTracerProvider::builder()
        .with_resource(resource)
        .with_batch_exporter(exporter)
        .build())
}

/// Prometheus metrics of the process, in one registry.
///
/// Cloning is cheap and shares the underlying metrics (they are reference-counted), so
/// one instance can be handed to every component of a process.
#[derive(Clone, Debug)]
pub struct Metrics {
    registry: Registry,
    /// `mnemo_http_requests_total{method, route, status}`. `route` is the route
    /// *pattern* (e.g. `/v1/memories/{id}`), never the raw path: ids in labels would
    /// explode series cardinality and could leak identifiers into dashboards.
    pub http_requests_total: IntCounterVec,
    /// `mnemo_http_request_duration_seconds{method, route}`; `route` is the route
    /// pattern, never the raw path, for the same reasons as above.
    pub http_request_duration_seconds: HistogramVec,
    /// `mnemo_events_appended_total{event_type}`: events appended to the event log.
    pub events_appended_total: IntCounterVec,
    /// `mnemo_relay_lag_events`: log head position − relay position.
    pub relay_lag_events: IntGauge,
    /// `mnemo_relay_published_total`: events the relay has published. A gauge because
    /// it is set from the relay's persisted position, which survives restarts, rather
    /// than incremented from zero by each process.
    pub relay_published_total: IntGauge,
    /// `mnemo_consumer_lag_events{group}`: records on a group's topics it has
    /// not committed yet; for a projection, what is not searchable yet.
    pub consumer_lag_events: IntGaugeVec,
    /// `mnemo_consumer_oldest_unprocessed_seconds{group}`: how long the
    /// oldest record a group has not committed has waited since it was
    /// published (0 when caught up).
    pub consumer_oldest_unprocessed_seconds: GaugeVec,
    /// `mnemo_consolidation_buffer_messages`: messages waiting for
    /// consolidation, every tenant.
    pub consolidation_buffer_messages: IntGauge,
    /// `mnemo_consolidation_buffer_conversations`: conversations with
    /// waiting messages.
    pub consolidation_buffer_conversations: IntGauge,
    /// `mnemo_consolidation_buffer_oldest_seconds`: how long the
    /// longest-waiting message has waited (idle waits included).
    pub consolidation_buffer_oldest_seconds: Gauge,
    /// `mnemo_degraded`: 1 while `/readyz` says `degraded`.
    pub degraded: IntGauge,
    /// `mnemo_disk_free_bytes`: bytes still free to the process on the
    /// file system of its data dir (kept at its last reading while it
    /// cannot be read).
    pub disk_free_bytes: IntGauge,
    /// `mnemo_vector_index_unoptimized_seconds`: how long the embedded
    /// vector index has held writes no optimisation has taken in (dense
    /// search scans them); 0 once optimised after the last write.
    pub vector_index_unoptimized_seconds: Gauge,
    /// `mnemo_ingest_refused_total{limit}`: requests refused before any
    /// append, by the limit that refused them (`backlog_ceiling`,
    /// `slowdown`, `min_free_disk_bytes`, and the quotas: `requests_per_second`,
    /// `messages_per_day`, `memories_per_subject`, `storage_bytes`).
    pub ingest_refused_total: IntCounterVec,
    /// `mnemo_ingest_paced_requests_total`: requests of messages held
    /// before their append because the consolidator trails.
    pub ingest_paced_requests_total: IntCounter,
    /// `mnemo_ingest_pace_messages_per_second`: the rate ingest admits
    /// messages at while paced; 0 while not.
    pub ingest_pace_messages_per_second: Gauge,
    /// `mnemo_consumer_handled_total{group, outcome}`, outcome one of `ok`, `retry`,
    /// `dead_letter`.
    pub consumer_handled_total: IntCounterVec,
    /// `mnemo_pii_findings_total{kind}`: counts of PII findings by kind only — never
    /// the values found, which are exactly what must not leak.
    pub pii_findings_total: IntCounterVec,
    /// `mnemo_llm_calls_total{outcome}`: consolidation LLM calls; `completed`
    /// answers (billed), `failed` attempts without a usable answer.
    pub llm_calls_total: IntCounterVec,
    /// `mnemo_llm_tokens_total{kind}`, kind `prompt` or `completion`.
    pub llm_tokens_total: IntCounterVec,
    /// `mnemo_consolidation_candidates_total{route}`: `memory`, `review`, `discarded`.
    pub consolidation_candidates_total: IntCounterVec,
    /// `mnemo_consolidation_fallbacks_total{reason}`: batches the rules
    /// consolidated instead of the LLM (`llm_failed`, `budget_exhausted`).
    pub consolidation_fallbacks_total: IntCounterVec,
    /// `mnemo_consolidation_suspected_injections_total{signal}`: the
    /// injection screening's signals on the candidates it held for review
    /// (a candidate counts once per signal). The label is one of the
    /// detector's fixed signal names (`ignore_instructions`,
    /// `not_from_user`, …), never any text.
    pub consolidation_suspected_injections_total: IntCounterVec,
}

impl Metrics {
    /// Creates every metric in a fresh registry of its own.
    pub fn new() -> Result<Self, TelemetryError> {
        let registry = Registry::new();
        let metrics = Self {
            http_requests_total: counter_vec(
                &registry,
                "mnemo_http_requests_total",
                "HTTP requests handled, by method, route pattern and status code.",
                &["method", "route", "status"],
            )?,
            http_request_duration_seconds: {
                let vec = HistogramVec::new(
                    HistogramOpts::new(
                        "mnemo_http_request_duration_seconds",
                        "HTTP request latency in seconds, by method and route pattern.",
                    ),
                    &["method", "route"],
                )?;
                registry.register(Box::new(vec.clone()))?;
                vec
            },
            events_appended_total: counter_vec(
                &registry,
                "mnemo_events_appended_total",
                "Events appended to the event log, by event type.",
                &["event_type"],
            )?,
            relay_lag_events: gauge(
                &registry,
                "mnemo_relay_lag_events",
                "Events in the log not yet published by the relay (log head minus relay position).",
            )?,
            relay_published_total: gauge(
                &registry,
                "mnemo_relay_published_total",
                "Events published by the relay (its persisted position).",
            )?,
            consumer_lag_events: {
                let vec = IntGaugeVec::new(
                    Opts::new(
                        "mnemo_consumer_lag_events",
                        "Records on a consumer group's topics it has not committed yet, by group.",
                    ),
                    &["group"],
                )?;
                registry.register(Box::new(vec.clone()))?;
                vec
            },
            consumer_oldest_unprocessed_seconds: {
                let vec = GaugeVec::new(
                    Opts::new(
                        "mnemo_consumer_oldest_unprocessed_seconds",
                        "Seconds the oldest record a consumer group has not committed has waited since it was published (0 when caught up), by group.",
                    ),
                    &["group"],
                )?;
                registry.register(Box::new(vec.clone()))?;
                vec
            },
            consolidation_buffer_messages: gauge(
                &registry,
                "mnemo_consolidation_buffer_messages",
                "Messages waiting for consolidation, in every tenant.",
            )?,
            consolidation_buffer_conversations: gauge(
                &registry,
                "mnemo_consolidation_buffer_conversations",
                "Conversations with messages waiting for consolidation.",
            )?,
            consolidation_buffer_oldest_seconds: registered(
                &registry,
                Gauge::new(
                    "mnemo_consolidation_buffer_oldest_seconds",
                    "How long the longest-waiting buffered message has waited, idle waits included.",
                )?,
            )?,
            vector_index_unoptimized_seconds: registered(
                &registry,
                Gauge::new(
                    "mnemo_vector_index_unoptimized_seconds",
                    "Seconds the embedded vector index has held writes no optimisation has taken in (0 once optimised after the last write).",
                )?,
            )?,
            degraded: gauge(
                &registry,
                "mnemo_degraded",
                "1 while /readyz reports degraded (a backlog past its limit), else 0.",
            )?,
            disk_free_bytes: gauge(
                &registry,
                "mnemo_disk_free_bytes",
                "Bytes free to the process on the file system of its data dir.",
            )?,
            ingest_refused_total: counter_vec(
                &registry,
                "mnemo_ingest_refused_total",
                "Ingest requests refused before any append, by limit.",
                &["limit"],
            )?,
            ingest_paced_requests_total: registered(
                &registry,
                IntCounter::new(
                    "mnemo_ingest_paced_requests_total",
                    "Requests of messages held before their append because the consolidator trails.",
                )?,
            )?,
            ingest_pace_messages_per_second: registered(
                &registry,
                Gauge::new(
                    "mnemo_ingest_pace_messages_per_second",
                    "Messages per second ingest admits while paced behind the consolidator; 0 while not paced.",
                )?,
            )?,
            consumer_handled_total: counter_vec(
                &registry,
                "mnemo_consumer_handled_total",
                "Bus records handled by consumers, by group and outcome (ok, retry, dead_letter).",
                &["group", "outcome"],
            )?,
            pii_findings_total: counter_vec(
                &registry,
                "mnemo_pii_findings_total",
                "PII findings, by kind (counts only, never values).",
                &["kind"],
            )?,
            llm_calls_total: counter_vec(
                &registry,
                "mnemo_llm_calls_total",
                "Consolidation LLM calls, by outcome (completed, failed).",
                &["outcome"],
            )?,
            llm_tokens_total: counter_vec(
                &registry,
                "mnemo_llm_tokens_total",
                "Consolidation LLM tokens, by kind (prompt, completion).",
                &["kind"],
            )?,
            consolidation_candidates_total: counter_vec(
                &registry,
                "mnemo_consolidation_candidates_total",
                "Extracted candidates, by confidence route (memory, review, discarded).",
                &["route"],
            )?,
            consolidation_fallbacks_total: counter_vec(
                &registry,
                "mnemo_consolidation_fallbacks_total",
                "Batches the rules consolidated instead of the LLM, by reason.",
                &["reason"],
            )?,
            consolidation_suspected_injections_total: counter_vec(
                &registry,
                "mnemo_consolidation_suspected_injections_total",
                "Signals of the injection screening on candidates held for review, by signal name.",
                &["signal"],
            )?,
            registry,
        };
        Ok(metrics)
    }

    /// The registry behind these metrics, for a service that needs to register a
    /// metric of its own next to them.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Prometheus text exposition format of everything registered.
    pub fn render(&self) -> String {
        prometheus::TextEncoder::new()
            .encode_to_string(&self.registry.gather())
            .unwrap_or_else(|err| {
                // Only reachable through a malformed metric family; a scrape must still
                // get an answer, and the error is worth a log line rather than a panic.
                tracing::error!(error = %err, "cannot encode metrics");
                String::new()
            })
    }
}

/// `metric`, once registered.
fn registered<M>(registry: &Registry, metric: M) -> Result<M, TelemetryError>
where
    M: prometheus::core::Collector + Clone + 'static,
{
    registry.register(Box::new(metric.clone()))?;
    Ok(metric)
}

fn counter_vec(
    registry: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
) -> Result<IntCounterVec, TelemetryError> {
    let vec = IntCounterVec::new(Opts::new(name, help), labels)?;
    registry.register(Box::new(vec.clone()))?;
    Ok(vec)
}

fn gauge(registry: &Registry, name: &str, help: &str) -> Result<IntGauge, TelemetryError> {
    let gauge = IntGauge::new(name, help)?;
    registry.register(Box::new(gauge.clone()))?;
    Ok(gauge)
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::TraceContextExt;

    fn otel_subscriber() -> impl Subscriber + Send + Sync {
        tracing_subscriber::registry().with(otel_layer_for_tests())
    }

    fn is_traceparent(value: &str) -> bool {
        let parts: Vec<&str> = value.split('-').collect();
        let hex = |s: &str, len: usize| {
            s.len() == len
                && s.chars()
                    .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
        };
        parts.len() == 4
            && parts[0] == "00"
            && hex(parts[1], 32)
            && hex(parts[2], 16)
            && hex(parts[3], 2)
    }

    #[test]
    fn render_contains_every_metric_name_and_counts() {
        let metrics = Metrics::new().unwrap();
        metrics
            .http_requests_total
            .with_label_values(&["GET", "/v1/memories/{id}", "200"])
            .inc_by(3);
        metrics
            .http_request_duration_seconds
            .with_label_values(&["GET", "/v1/memories/{id}"])
            .observe(0.02);
        metrics
            .events_appended_total
            .with_label_values(&["memory_recorded"])
            .inc();
        metrics.relay_lag_events.set(7);
        metrics.relay_published_total.set(42);
        metrics
            .consumer_handled_total
            .with_label_values(&["consolidator", "ok"])
            .inc();
        metrics
            .pii_findings_total
            .with_label_values(&["email"])
            .inc_by(2);

        let text = metrics.render();
        for name in [
            "mnemo_http_requests_total",
            "mnemo_http_request_duration_seconds",
            "mnemo_events_appended_total",
            "mnemo_relay_lag_events",
            "mnemo_relay_published_total",
            "mnemo_consumer_handled_total",
            "mnemo_pii_findings_total",
        ] {
            assert!(text.contains(name), "missing {name} in:\n{text}");
        }
        assert!(
            text.contains(
                r#"mnemo_http_requests_total{method="GET",route="/v1/memories/{id}",status="200"} 3"#
            ),
            "{text}"
        );
        assert!(
            text.contains(r#"mnemo_pii_findings_total{kind="email"} 2"#),
            "{text}"
        );
        assert!(text.contains("mnemo_relay_lag_events 7"), "{text}");
        assert!(text.contains("mnemo_relay_published_total 42"), "{text}");
    }

    #[test]
    fn metrics_instances_do_not_share_counts() {
        let a = Metrics::new().unwrap();
        let b = Metrics::new().unwrap();
        a.events_appended_total
            .with_label_values(&["memory_recorded"])
            .inc_by(5);
        assert!(a
            .render()
            .contains(r#"mnemo_events_appended_total{event_type="memory_recorded"} 5"#));
        assert!(!b.render().contains("memory_recorded"), "{}", b.render());
    }

    #[test]
    fn current_traceparent_is_well_formed_inside_an_otel_span() {
        tracing::subscriber::with_default(otel_subscriber(), || {
            let span = tracing::info_span!("work");
            let _entered = span.enter();
            let traceparent = current_traceparent().expect("a traceparent inside a span");
            assert!(is_traceparent(&traceparent), "{traceparent}");
            // Sampled by the default ParentBased(AlwaysOn) sampler.
            assert!(traceparent.ends_with("-01"), "{traceparent}");
        });
    }

    #[test]
    fn current_traceparent_is_none_without_otel_layer_or_span() {
        tracing::subscriber::with_default(tracing_subscriber::registry(), || {
            let span = tracing::info_span!("work");
            let _entered = span.enter();
            assert_eq!(current_traceparent(), None);
        });
        tracing::subscriber::with_default(otel_subscriber(), || {
            assert_eq!(current_traceparent(), None);
        });
    }

    #[test]
    fn set_parent_from_traceparent_continues_the_given_trace() {
        let parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        tracing::subscriber::with_default(otel_subscriber(), || {
            let span = tracing::info_span!("consume");
            set_parent_from_traceparent(&span, parent);
            let trace_id = span.context().span().span_context().trace_id();
            assert_eq!(trace_id.to_string(), "0af7651916cd43dd8448eb211c80319c");

            let _entered = span.enter();
            let child = current_traceparent().unwrap();
            assert!(
                child.starts_with("00-0af7651916cd43dd8448eb211c80319c-"),
                "{child}"
            );
            // A new span of the same trace, not the remote parent itself.
            assert!(!child.contains("b7ad6b7169203331"), "{child}");
        });
    }

    #[test]
    fn malformed_traceparent_leaves_the_span_on_its_own_trace() {
        tracing::subscriber::with_default(otel_subscriber(), || {
            let span = tracing::info_span!("consume");
            set_parent_from_traceparent(&span, "not-a-traceparent");
            let span_context = span.context().span().span_context().clone();
            assert!(span_context.is_valid());
            assert!(!span_context.is_remote());
        });
    }

    #[test]
    fn rust_log_overrides_the_configured_filter() {
        assert_eq!(effective_filter("warn", Some("debug")), "debug");
        assert_eq!(effective_filter("warn", Some("  ")), "warn");
        assert_eq!(effective_filter("warn", None), "warn");
        assert_eq!(effective_filter("", None), "info");
    }

    #[test]
    fn traces_url_appends_the_signal_path_once() {
        assert_eq!(
            traces_url("http://localhost:4318").unwrap(),
            "http://localhost:4318/v1/traces"
        );
        assert_eq!(
            traces_url("http://localhost:4318/").unwrap(),
            "http://localhost:4318/v1/traces"
        );
        assert_eq!(
            traces_url("https://collector:4318/v1/traces").unwrap(),
            "https://collector:4318/v1/traces"
        );
        assert!(matches!(
            traces_url("localhost:4318"),
            Err(TelemetryError::InvalidOtlpEndpoint(_))
        ));
    }

    #[test]
    fn exporter_internal_targets_are_recognised() {
        assert!(is_exporter_internal("hyper_util::client::legacy"));
        assert!(is_exporter_internal("reqwest::connect"));
        assert!(is_exporter_internal("h2"));
        assert!(is_exporter_internal("opentelemetry_sdk"));
        assert!(!is_exporter_internal("mnemo_http::routes"));
        assert!(!is_exporter_internal("hyperloglog"));
    }

    #[test]
    fn log_format_uses_snake_case() {
        let format: LogFormat = serde_json::from_str(r#""json""#).unwrap();
        assert_eq!(format, LogFormat::Json);
        assert_eq!(
            serde_json::to_string(&LogFormat::Text).unwrap(),
            r#""text""#
        );
        assert_eq!(LogFormat::default(), LogFormat::Text);
    }
}

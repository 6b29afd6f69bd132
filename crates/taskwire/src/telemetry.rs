//! Prometheus metrics and the HTTP latency middleware.
//!
//! The recorder is process-wide (the `metrics` facade has one global recorder): the
//! first server built installs it and every later one shares it. If the embedding
//! program installed a recorder of its own first, `/metrics` renders only the
//! scrape-time gauges this crate sets through its own handle (and logs a warning).

use std::collections::HashMap;
use std::sync::{LazyLock, OnceLock, RwLock};
use std::time::Duration;

use axum::http::{Method, StatusCode};
use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use taskwire_core::{TaskState, TaskStore};

/// Latency buckets, in seconds, for every `*_seconds` histogram.
const SECONDS_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0,
];

/// Names of the metrics taskwire exports.
pub mod names {
    /// Counter: state transitions, labels `from` and `to` (emitted by the core).
    pub const TRANSITIONS: &str = "taskwire_transitions_total";
    /// Counter: tasks created (emitted by the core).
    pub const TASKS_CREATED: &str = "taskwire_tasks_created_total";
    /// Counter: queue entries whose lease lapsed and were re-queued by the reaper.
    pub const LEASE_EXPIRIES: &str = "taskwire_lease_expiries_total";
    /// Counter: terminal tasks deleted by the retention sweeper.
    pub const TASKS_SWEPT: &str = "taskwire_tasks_swept_total";
    /// Histogram: duration of agent turns, in seconds.
    pub const TURN_SECONDS: &str = "taskwire_turn_seconds";
    /// Gauge: tasks in the store by state, label `state` (set at scrape time).
    pub const TASKS: &str = "taskwire_tasks";
    /// Gauge: queue entries, available and leased (set at scrape time).
    pub const QUEUE_DEPTH: &str = "taskwire_queue_depth";
    /// Histogram: HTTP request latency, labels `method`, `route`, `status`.
    pub const HTTP_REQUEST_SECONDS: &str = "taskwire_http_request_duration_seconds";
}

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Installs the Prometheus recorder once per process and returns its handle.
pub(crate) fn install() -> PrometheusHandle {
    HANDLE
        .get_or_init(|| {
            let builder = match PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), SECONDS_BUCKETS)
            {
                Ok(b) => b,
                Err(e) => {
                    tracing::warn!(error = %e, "histogram buckets rejected; using summaries");
                    PrometheusBuilder::new()
                }
            };
            let recorder = builder.build_recorder();
            let handle = recorder.handle();
            if let Err(e) = metrics::set_global_recorder(recorder) {
                tracing::warn!(
                    error = %e,
                    "a metrics recorder was already installed; /metrics shows only what taskwire records through its own handle"
                );
            }
            describe();
            handle
        })
        .clone()
}

/// Describes every metric and registers the counters, so that they are exported
/// (at 0) before anything happens.
fn describe() {
    use names::*;
    describe_counter!(TRANSITIONS, "Task state transitions, by from and to state.");
    describe_counter!(TASKS_CREATED, "Tasks created.");
    describe_counter!(
        LEASE_EXPIRIES,
        "Queue entries whose lease lapsed and that the reaper made available again."
    );
    describe_counter!(
        TASKS_SWEPT,
        "Terminal tasks deleted by the retention sweeper."
    );
    describe_histogram!(TURN_SECONDS, Unit::Seconds, "Duration of agent turns.");
    describe_gauge!(TASKS, "Tasks in the store, by state.");
    describe_gauge!(QUEUE_DEPTH, "Queue entries, available and leased.");
    describe_histogram!(
        HTTP_REQUEST_SECONDS,
        Unit::Seconds,
        "HTTP request latency, by method, matched route and status."
    );
    metrics::counter!(TASKS_CREATED).increment(0);
    metrics::counter!(LEASE_EXPIRIES).increment(0);
    metrics::counter!(TASKS_SWEPT).increment(0);
}

/// Serialises scrapes: gauges are process-wide, so two servers in one process (as in
/// tests) must not interleave "set from my store" and "render".
static SCRAPE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Sets the store gauges and renders the Prometheus text.
pub(crate) async fn scrape(handle: &PrometheusHandle, store: &dyn TaskStore) -> String {
    let _guard = SCRAPE.lock().await;
    match store.count_by_state().await {
        Ok(counts) => {
            for state in TaskState::ALL {
                let n = counts
                    .iter()
                    .filter(|(s, _)| *s == state)
                    .map(|(_, n)| *n)
                    .sum::<u64>();
                metrics::gauge!(names::TASKS, "state" => state.as_str()).set(n as f64);
            }
        }
        Err(e) => tracing::warn!(error = %e, "metrics: counting tasks by state failed"),
    }
    match store.queue_depth().await {
        Ok(n) => metrics::gauge!(names::QUEUE_DEPTH).set(n as f64),
        Err(e) => tracing::warn!(error = %e, "metrics: reading the queue depth failed"),
    }
    handle.run_upkeep();
    handle.render()
}

/// Records one request in `taskwire_http_request_duration_seconds` (the server's
/// layer stack calls this once per request, with the route pattern as `route`).
pub(crate) fn record_http(method: &Method, route: &str, status: StatusCode, elapsed: Duration) {
    let method: &'static str = match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    };
    let status = status.as_u16();
    let cached = HTTP_HISTOGRAMS.read().ok().and_then(|m| {
        m.get(route)?
            .iter()
            .find(|h| h.0 == method && h.1 == status)
            .map(|h| h.2.clone())
    });
    let histogram = match cached {
        Some(h) => h,
        None => {
            let h = metrics::histogram!(
                names::HTTP_REQUEST_SECONDS,
                "method" => method,
                "route" => route.to_owned(),
                "status" => status.to_string()
            );
            if let Ok(mut m) = HTTP_HISTOGRAMS.write() {
                let slot = m.entry(route.into()).or_default();
                // Another request may have cached the same handle meanwhile.
                let cached = slot.iter().any(|c| c.0 == method && c.1 == status);
                if !cached && slot.len() < MAX_CACHED_PER_ROUTE {
                    slot.push((method, status, h.clone()));
                }
            }
            h
        }
    };
    histogram.record(elapsed.as_secs_f64());
}

/// Handles of the request histogram by route, then method and status: building
/// the labelled key and looking it up in the registry on every request cost more
/// than the rest of the bookkeeping. Handles are only made after [`install`] (the
/// layer stack exists only in a built server), so none of them is
/// a no-op handle from before the recorder.
type HttpHistograms =
    HashMap<Box<str>, Vec<(&'static str, u16, metrics::Histogram)>, foldhash::fast::RandomState>;
static HTTP_HISTOGRAMS: LazyLock<RwLock<HttpHistograms>> = LazyLock::new(Default::default);
/// Method and status pairs cached per route (the rest go through the registry).
const MAX_CACHED_PER_ROUTE: usize = 32;

//! The upstream metrics (names in [`metric`]) and the timing of each call.

use std::future::Future;

use taskwire_client::ClientError;

/// The bridge's metric names.
pub mod metric {
    /// Histogram: latency of each call to an upstream (for a stream: until its
    /// response head), by `protocol` and `operation`.
    pub const REQUEST_SECONDS: &str = "taskwire_upstream_request_duration_seconds";
    /// Counter: calls to an upstream that failed, by `protocol` and `operation`.
    pub const ERRORS: &str = "taskwire_upstream_errors_total";
    /// Counter: turns that followed an existing upstream task instead of
    /// sending (re-runs after a restart or a lost lease), by `protocol`.
    pub const REATTACHMENTS: &str = "taskwire_upstream_reattachments_total";
}

/// Runs one upstream call, recording its latency and, if it fails, an error.
pub(crate) async fn timed<T>(
    protocol: &'static str,
    operation: &'static str,
    call: impl Future<Output = Result<T, ClientError>>,
) -> Result<T, ClientError> {
    let start = std::time::Instant::now();
    let r = call.await;
    metrics::histogram!(metric::REQUEST_SECONDS, "protocol" => protocol, "operation" => operation)
        .record(start.elapsed().as_secs_f64());
    if r.is_err() {
        metrics::counter!(metric::ERRORS, "protocol" => protocol, "operation" => operation)
            .increment(1);
    }
    r
}

/// Counts a re-attachment.
pub(crate) fn reattached(protocol: &'static str) {
    metrics::counter!(metric::REATTACHMENTS, "protocol" => protocol).increment(1);
}

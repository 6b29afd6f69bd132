//! Readiness of an upstream for `/readyz`, cached so that probes do not
//! hammer it.

use std::future::Future;

/// How long a readiness answer is reused: `/readyz` is public, so a client
/// polling it fast makes at most one upstream call a second.
pub(crate) const READY_REUSE: std::time::Duration = std::time::Duration::from_secs(1);

/// The last readiness probe of an upstream, reused for [`READY_REUSE`].
#[derive(Debug, Default)]
pub(crate) struct ReadyCache {
    pub(crate) last: tokio::sync::Mutex<Option<(std::time::Instant, Result<(), String>)>>,
}

impl ReadyCache {
    /// The upstream's readiness: the last answer if fresh, else `probe`'s
    /// (concurrent callers wait for one probe).
    pub(crate) async fn check<Fut>(&self, probe: impl FnOnce() -> Fut) -> Result<(), String>
    where
        Fut: Future<Output = Result<(), String>>,
    {
        let mut last = self.last.lock().await;
        if let Some((at, r)) = last.as_ref() {
            if at.elapsed() < READY_REUSE {
                return r.clone();
            }
        }
        let r = probe().await;
        *last = Some((std::time::Instant::now(), r.clone()));
        r
    }
}

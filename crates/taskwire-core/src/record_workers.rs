//! [`RecordWorkers`]: leased work on the records of one kind, divided between
//! the processes that share a store.

use std::time::Duration;

use crate::record::{Record, RecordKind, RecordLease};

/// Works on the active records of one kind, each under a lease: claims them
/// (every third of the lease, and whenever [`RecordWorkers::kick`] is called),
/// runs the given work for each claimed record while renewing its lease, and
/// gives the lease back when the work returns. The work gets a token that is
/// cancelled when the lease is lost or the workers stop, and must then stop: its
/// writes are fenced by the lease anyway. Workers of several processes sharing
/// a store divide the records between them; a record whose worker died is taken
/// over once its lease lapses.
#[derive(Clone)]
pub struct RecordWorkers {
    inner: std::sync::Arc<WorkersInner>,
}

struct WorkersInner {
    store: std::sync::Arc<dyn crate::store::TaskStore>,
    kind: RecordKind,
    worker: String,
    lease: Duration,
    batch: usize,
    stop: tokio_util::sync::CancellationToken,
    kick: tokio::sync::Notify,
}

impl std::fmt::Debug for RecordWorkers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordWorkers")
            .field("kind", &self.inner.kind)
            .field("worker", &self.inner.worker)
            .finish_non_exhaustive()
    }
}

impl RecordWorkers {
    /// Workers on `kind` of `store` under leases of `lease`, named `worker` in
    /// them (unique per process).
    pub fn new(
        store: std::sync::Arc<dyn crate::store::TaskStore>,
        kind: RecordKind,
        worker: impl Into<String>,
        lease: Duration,
    ) -> Self {
        Self {
            inner: std::sync::Arc::new(WorkersInner {
                store,
                kind,
                worker: worker.into(),
                lease: lease.max(Duration::from_millis(30)),
                batch: 64,
                stop: tokio_util::sync::CancellationToken::new(),
                kick: tokio::sync::Notify::new(),
            }),
        }
    }

    /// This process's name in the leases.
    pub fn worker(&self) -> &str {
        &self.inner.worker
    }

    /// Starts claiming (needs a tokio runtime); `work` runs once per claim.
    pub fn start<F, Fut>(&self, work: F)
    where
        F: Fn(Record, RecordLease, tokio_util::sync::CancellationToken) -> Fut
            + Send
            + Sync
            + 'static,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        let me = self.clone();
        let work = std::sync::Arc::new(work);
        tokio::spawn(async move {
            let every = (me.inner.lease / 3).max(Duration::from_millis(10));
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = me.inner.stop.cancelled() => return,
                    _ = tick.tick() => {}
                    _ = me.inner.kick.notified() => {}
                }
                let claimed = me
                    .inner
                    .store
                    .claim_records(
                        me.inner.kind,
                        &me.inner.worker,
                        me.inner.batch,
                        me.inner.lease,
                        chrono::Utc::now(),
                    )
                    .await;
                match claimed {
                    Ok(claimed) => {
                        for (rec, lease) in claimed {
                            let me = me.clone();
                            let work = work.clone();
                            tokio::spawn(async move { me.hold(rec, lease, &*work).await });
                        }
                    }
                    Err(e) => {
                        tracing::warn!(kind = %me.inner.kind, error = %e, "claiming records failed")
                    }
                }
            }
        });
    }

    async fn hold<F, Fut>(&self, rec: Record, lease: RecordLease, work: &F)
    where
        F: Fn(Record, RecordLease, tokio_util::sync::CancellationToken) -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        let lost = self.inner.stop.child_token();
        let renewer = {
            let me = self.clone();
            let lease = lease.clone();
            let lost = lost.clone();
            tokio::spawn(async move {
                let every = (me.inner.lease / 3).max(Duration::from_millis(10));
                loop {
                    tokio::select! {
                        _ = lost.cancelled() => return,
                        _ = tokio::time::sleep(every) => {}
                    }
                    let now = chrono::Utc::now();
                    match me
                        .inner
                        .store
                        .renew_record(&lease, me.inner.lease, now)
                        .await
                    {
                        Ok(true) => {}
                        Ok(false) => {
                            tracing::info!(record = %lease.id, "record lease lost");
                            lost.cancel();
                            return;
                        }
                        Err(e) => {
                            tracing::warn!(record = %lease.id, error = %e, "renewing a record lease failed")
                        }
                    }
                }
            })
        };
        work(rec, lease.clone(), lost.clone()).await;
        lost.cancel();
        renewer.abort();
        // Stopping (a drain or a crash alike) leaves the lease to lapse, so that
        // the record is taken over from its cursor; finished work gives it back.
        if !self.inner.stop.is_cancelled() {
            if let Err(e) = self.inner.store.release_record(&lease).await {
                tracing::debug!(record = %lease.id, error = %e, "releasing a record lease failed");
            }
        }
    }

    /// Claims at once (a record was made active).
    pub fn kick(&self) {
        self.inner.kick.notify_one();
    }

    /// Stops claiming and cancels the work in progress.
    pub fn stop(&self) {
        self.inner.stop.cancel();
    }

    /// Whether [`RecordWorkers::stop`] was called.
    pub fn stopped(&self) -> bool {
        self.inner.stop.is_cancelled()
    }
}

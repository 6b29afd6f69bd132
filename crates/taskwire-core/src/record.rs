//! Records: the task state adapters keep beside a task — push configs and their
//! delivery cursors, AG-UI runs, MCP sessions, CAS subscriptions — as rows of the
//! store contract, never as a file or a process-local map, so that a restart or
//! another node sharing the store finds them.
//!
//! One mechanism serves every kind: a record is a keyed JSON value owned by a
//! principal, optionally attached to a task (and then deleted with it by the
//! sweeper), optionally expiring by itself (sessions), with a compare-and-set
//! version, a progress cursor, and a lease so that exactly one worker at a time
//! works on an active record (push delivery), fenced by an epoch as turns are.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::ids::TaskId;
use crate::types::Timestamp;

/// What a record holds; each kind is one adapter's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[non_exhaustive]
pub enum RecordKind {
    /// An A2A push notification config and its delivery cursor (attached to its task).
    PushConfig,
    /// An AG-UI run: which task, from which event (attached to its task).
    AguiRun,
    /// An MCP 2025-11-25 session (expires when idle).
    McpSession,
    /// A CAS push subscription and its delivery cursor (attached to its task).
    CasSubscription,
    /// A bridged task's upstream task, kept while the downstream task waits
    /// (attached to its task), so that a cancel made while no bridge ran is
    /// still sent upstream.
    UpstreamLink,
}

impl RecordKind {
    /// Every kind.
    pub const ALL: [RecordKind; 5] = [
        RecordKind::PushConfig,
        RecordKind::AguiRun,
        RecordKind::McpSession,
        RecordKind::CasSubscription,
        RecordKind::UpstreamLink,
    ];

    /// The stable name stored with the row (and used as a metric label).
    pub const fn as_str(self) -> &'static str {
        match self {
            RecordKind::PushConfig => "push_config",
            RecordKind::AguiRun => "agui_run",
            RecordKind::McpSession => "mcp_session",
            RecordKind::CasSubscription => "cas_subscription",
            RecordKind::UpstreamLink => "upstream_link",
        }
    }

    /// The kind stored under `name`.
    pub fn parse(name: &str) -> Option<RecordKind> {
        RecordKind::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

impl std::fmt::Display for RecordKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One record. `(kind, id)` is its key.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Record {
    /// What it is.
    pub kind: RecordKind,
    /// Its key within the kind.
    pub id: String,
    /// The task it belongs to: it is deleted with the task, and the task must exist
    /// when it is written.
    pub task_id: Option<TaskId>,
    /// The owner's tenant.
    pub tenant: String,
    /// The owner (principal); quotas count per (tenant, owner).
    pub owner: String,
    /// The adapter's value.
    pub data: serde_json::Value,
    /// A progress position (a delivery cursor: the sequence number of the last
    /// event handled).
    pub cursor: u64,
    /// Whether the record waits for a worker: only active records are claimed.
    pub active: bool,
    /// When it expires by itself (the sweeper deletes it after that).
    pub expires_at: Option<Timestamp>,
    /// Compare-and-set version, set by the store (1 when inserted).
    pub version: u64,
}

impl Record {
    /// A record of `kind` under `id` owned by `(tenant, owner)`, holding `data`:
    /// attached to no task, never expiring, inactive, cursor 0.
    pub fn new(
        kind: RecordKind,
        id: impl Into<String>,
        tenant: impl Into<String>,
        owner: impl Into<String>,
        data: serde_json::Value,
    ) -> Record {
        Record {
            kind,
            id: id.into(),
            task_id: None,
            tenant: tenant.into(),
            owner: owner.into(),
            data,
            cursor: 0,
            active: false,
            expires_at: None,
            version: 0,
        }
    }

    /// Attached to `task` (deleted with it).
    pub fn for_task(mut self, task: TaskId) -> Record {
        self.task_id = Some(task);
        self
    }

    /// Expiring at `at`.
    pub fn expiring(mut self, at: Option<Timestamp>) -> Record {
        self.expires_at = at;
        self
    }

    /// Waiting for a worker (or not).
    pub fn active(mut self, active: bool) -> Record {
        self.active = active;
        self
    }

    /// With a cursor.
    pub fn at(mut self, cursor: u64) -> Record {
        self.cursor = cursor;
        self
    }

    /// Whether it has expired by `now`.
    pub fn expired(&self, now: Timestamp) -> bool {
        self.expires_at.is_some_and(|e| e <= now)
    }
}

/// A per-owner bound checked atomically with an insert: at most `max` live records
/// of the kind for the record's (tenant, owner). Live: not expired at `now`, and
/// attached to no task or to a task that is not terminal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quota {
    /// The bound.
    pub max: usize,
    /// The time expiry is judged at.
    pub now: Timestamp,
}

/// What a put did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PutOutcome {
    /// Inserted or replaced; the record's version now.
    Stored {
        /// The stored version.
        version: u64,
    },
    /// Not inserted: the owner has `max` live records of this kind already.
    OverQuota {
        /// The bound that was reached.
        max: usize,
    },
}

/// A worker's lease on one active record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordLease {
    /// The record's kind.
    pub kind: RecordKind,
    /// The record's id.
    pub id: String,
    /// The worker holding it.
    pub worker: String,
    /// Fencing token: incremented by every claim of the record.
    pub epoch: u64,
}

/// Where records are looked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordScope {
    /// The records attached to one task.
    Task(TaskId),
    /// The records of one owner.
    Owner {
        /// Tenant.
        tenant: String,
        /// Owner.
        owner: String,
    },
}

impl RecordScope {
    /// Whether `r` is in the scope.
    pub fn contains(&self, r: &Record) -> bool {
        match self {
            RecordScope::Task(t) => r.task_id.as_ref() == Some(t),
            RecordScope::Owner { tenant, owner } => r.tenant == *tenant && r.owner == *owner,
        }
    }
}

/// The lease a claim grants: `until` is `now + lease`.
pub fn lease_until(now: Timestamp, lease: Duration) -> Timestamp {
    chrono::Duration::from_std(lease)
        .ok()
        .and_then(|d| now.checked_add_signed(d))
        .unwrap_or(chrono::DateTime::<chrono::Utc>::MAX_UTC)
}

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

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

//! The upstream link of a bridged task: reading it from the task's agent state,
//! the turn number it names, and the `upstream_link` records one watcher keeps
//! of the tasks linked upstream (bounded, replaced by a later link).

use std::sync::Arc;

use serde_json::Value;
use taskwire_core::{TaskId, TaskStore};

use tracing::{debug, warn};

use crate::options::{DEFAULT_CATCH_UP_RECORDS, DEFAULT_MAX_LINK_RECORDS, LINK_KEY};

/// The upstream task id of a downstream task's agent state, when its link is
/// of `protocol`.
pub(crate) fn linked_task(state: Option<&Value>, protocol: &str) -> Option<String> {
    let link = state?.get(LINK_KEY)?;
    if link.get("protocol").and_then(Value::as_str) != Some(protocol) {
        return None;
    }
    link.get("taskId")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// How long a turn runs on its upstream task before the task's
/// `upstream_link` record is stored (see [`LinkRecords::running`]).
pub(crate) const RECORD_RUNNING_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

/// A linked downstream task, as its `upstream_link` record needs it.
#[derive(Clone, Debug)]
pub(crate) struct Linked {
    pub(crate) id: TaskId,
    pub(crate) tenant: String,
    pub(crate) owner: String,
    pub(crate) upstream: String,
}

impl Linked {
    pub(crate) fn of(task: &taskwire_core::Task, upstream: &str) -> Self {
        Self {
            id: task.id.clone(),
            tenant: task.tenant.clone(),
            owner: task.owner.clone(),
            upstream: upstream.to_string(),
        }
    }
}

/// The `upstream_link` records of one executor's tasks: stored when a linked
/// task waits, or when its turn has run upstream for [`RECORD_RUNNING_AFTER`]
/// (both by the watcher, which looks at the running turns once a
/// [`RECORD_RUNNING_AFTER`]), and deleted by the watcher when the task ends.
/// This process remembers which it stored (and the upstream task each
/// names), to delete them, and to store one again when a later turn links
/// another upstream task.
pub(crate) struct LinkRecords {
    pub(crate) store: Arc<dyn TaskStore>,
    pub(crate) protocol: &'static str,
    pub(crate) recorded: std::sync::Mutex<std::collections::HashMap<TaskId, String>>,
    /// The linked turns running now, since when.
    pub(crate) running:
        std::sync::Mutex<std::collections::HashMap<TaskId, (Linked, std::time::Instant)>>,
    /// Most records kept track of ([`LinkBounds::tracked`]).
    pub(crate) max_tracked: usize,
}

impl std::fmt::Debug for LinkRecords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinkRecords")
            .field("protocol", &self.protocol)
            .field("store", &self.store.kind())
            .finish_non_exhaustive()
    }
}

impl LinkRecords {
    pub(crate) fn remove(&self, id: &TaskId) -> bool {
        self.recorded
            .lock()
            .is_ok_and(|mut r| r.remove(id).is_some())
    }

    /// Notes a record of `id` naming upstream task `upstream` as stored;
    /// false when it was already, or beyond [`LinkBounds::tracked`].
    pub(crate) fn track(&self, id: &TaskId, upstream: &str) -> bool {
        self.recorded.lock().is_ok_and(|mut r| {
            let full = r.len() >= self.max_tracked;
            match r.get_mut(id) {
                Some(u) if u == upstream => false,
                Some(u) => {
                    *u = upstream.to_string();
                    true
                }
                None if !full => {
                    r.insert(id.clone(), upstream.to_string());
                    true
                }
                None => false,
            }
        })
    }

    /// Stores the record of a linked task, unless stored already with the
    /// same upstream task.
    pub(crate) async fn remember(&self, linked: &Linked) {
        if !self.track(&linked.id, &linked.upstream) {
            return;
        }
        if !remember_link(&self.store, linked, self.protocol).await {
            self.remove(&linked.id);
        }
    }

    /// Notes that `task`'s turn runs on upstream task `upstream`, until the
    /// returned guard is dropped with the turn. A turn still running after
    /// [`RECORD_RUNNING_AFTER`] has its task's record stored, so that a cancel
    /// made while no bridge runs reaches that upstream task; turns that end
    /// sooner cost no store write (and no timer of their own).
    pub(crate) fn running(
        self: &Arc<Self>,
        task: &taskwire_core::Task,
        upstream: &str,
    ) -> RunningTurn {
        if let Ok(mut r) = self.running.lock() {
            r.insert(
                task.id.clone(),
                (Linked::of(task, upstream), std::time::Instant::now()),
            );
        }
        RunningTurn {
            records: self.clone(),
            id: task.id.clone(),
        }
    }

    /// Stores the records of the turns running for [`RECORD_RUNNING_AFTER`]
    /// or longer (each once).
    pub(crate) async fn record_long_turns(&self) {
        let now = std::time::Instant::now();
        let long: Vec<Linked> = match self.running.lock() {
            Ok(r) => r
                .values()
                .filter(|(_, since)| now.duration_since(*since) >= RECORD_RUNNING_AFTER)
                .map(|(l, _)| l.clone())
                .collect(),
            Err(_) => return,
        };
        for linked in long {
            self.remember(&linked).await;
        }
    }
}

/// A linked turn running (see [`LinkRecords::running`]).
pub(crate) struct RunningTurn {
    pub(crate) records: Arc<LinkRecords>,
    pub(crate) id: TaskId,
}

impl Drop for RunningTurn {
    fn drop(&mut self) {
        if let Ok(mut r) = self.records.running.lock() {
            r.remove(&self.id);
        }
    }
}

/// The bounds of one watcher's `upstream_link` records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LinkBounds {
    /// Most records kept track of at once.
    pub(crate) tracked: usize,
    /// Most records read by the start-up catch-up.
    pub(crate) catch_up: usize,
}

impl LinkBounds {
    /// The bounds `opts` asks for (each at least 1).
    pub(crate) fn of(opts: &crate::UpstreamOptions) -> Self {
        Self {
            tracked: opts.max_link_records.max(1),
            catch_up: opts.catch_up_records.max(1),
        }
    }
}

impl Default for LinkBounds {
    fn default() -> Self {
        Self {
            tracked: DEFAULT_MAX_LINK_RECORDS,
            catch_up: DEFAULT_CATCH_UP_RECORDS,
        }
    }
}

/// Stores the `upstream_link` record of a linked task; true if stored.
pub(crate) async fn remember_link(
    store: &Arc<dyn TaskStore>,
    linked: &Linked,
    protocol: &str,
) -> bool {
    let record = taskwire_core::Record::new(
        taskwire_core::RecordKind::UpstreamLink,
        linked.id.as_str(),
        linked.tenant.clone(),
        linked.owner.clone(),
        serde_json::json!({ "protocol": protocol, "taskId": linked.upstream }),
    )
    .for_task(linked.id.clone())
    .active(true);
    match store.put_record(record, None).await {
        Ok(_) => {
            debug!(task = %linked.id, upstream_task = %linked.upstream, "upstream link record stored");
            true
        }
        Err(e) => {
            warn!(task = %linked.id, error = %e,
                "storing the upstream link record failed; a cancel made while the bridge is down will not reach the upstream");
            false
        }
    }
}

pub(crate) async fn forget_link(store: &Arc<dyn TaskStore>, id: &TaskId) {
    if let Err(e) = store
        .delete_record(taskwire_core::RecordKind::UpstreamLink, id.as_str())
        .await
    {
        debug!(task = %id, error = %e, "deleting the upstream link record failed");
    }
}

/// The number of the turn `task` is in: a re-run of a turn that had started
/// counts as the same turn (its upstream link names it), a new turn is the
/// next one.
pub(crate) fn turn_number(task: &taskwire_core::Task) -> u32 {
    if task.turn_open {
        task.turns
    } else {
        task.turns.saturating_add(1)
    }
}

/// The link of `protocol` stored in an agent state under [`LINK_KEY`], read
/// as `T` (`None` without one, or for another protocol's link).
pub(crate) fn read_link<T: serde::de::DeserializeOwned>(
    state: Option<&Value>,
    protocol: &str,
) -> Option<T> {
    let v = state?.get(LINK_KEY)?;
    if v.get("protocol").and_then(Value::as_str) != Some(protocol) {
        return None;
    }
    serde_json::from_value(v.clone()).ok()
}

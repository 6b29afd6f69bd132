//! The runs this adapter started, for reconnects, cancel by run id and naming runs
//! in replays: each run is a record of the store ([`taskwire_core::record`], kind
//! `AguiRun`) attached to its task, so a client reconnecting after a restart, or to
//! another node sharing the store, finds its run, and the run goes with its task
//! when the task is swept. Open runs are bounded per caller.

use chrono::Utc;
use serde::{Deserialize, Serialize};
use taskwire_core::record::{PutOutcome, Quota, Record, RecordKind, RecordScope};
use taskwire_core::{StoreError, TaskId, TaskService};

const KIND: RecordKind = RecordKind::AguiRun;

/// Who owns a run and what it is called.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct RunKey {
    pub(crate) tenant: String,
    pub(crate) owner: String,
    pub(crate) thread_id: String,
    pub(crate) run_id: String,
}

impl RunKey {
    /// The record id: the four parts as a JSON array, unambiguous whatever they hold.
    fn record_id(&self) -> String {
        serde_json::json!([self.tenant, self.owner, self.thread_id, self.run_id]).to_string()
    }
}

/// Where a run's events are.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RunRecord {
    pub(crate) task_id: String,
    pub(crate) after_seq: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) parent_run_id: Option<String>,
    /// The run's own id (to name it in replays of its task).
    #[serde(default)]
    pub(crate) run_id: String,
}

/// Why a run could not be registered.
#[derive(Debug)]
pub(crate) enum RunsError {
    /// The caller has `max` open runs.
    OverQuota(usize),
    Store(StoreError),
}

/// The registry.
pub(crate) struct Runs {
    service: TaskService,
    max_per_principal: usize,
}

impl Runs {
    pub(crate) fn new(service: TaskService, max_per_principal: usize) -> Self {
        Self {
            service,
            max_per_principal: max_per_principal.max(1),
        }
    }

    /// Registers a run (again, for a retry: the same record is replaced).
    pub(crate) async fn insert(&self, key: RunKey, mut rec: RunRecord) -> Result<(), RunsError> {
        let task =
            TaskId::parse(&rec.task_id).map_err(|_| RunsError::Store(StoreError::NotFound))?;
        rec.run_id = key.run_id.clone();
        let data = serde_json::to_value(&rec)
            .map_err(|e| RunsError::Store(StoreError::Backend(e.to_string())))?;
        let r = Record::new(KIND, key.record_id(), &key.tenant, &key.owner, data)
            .for_task(task)
            .at(rec.after_seq);
        let quota = Quota {
            max: self.max_per_principal,
            now: Utc::now(),
        };
        match self.service.store().put_record(r, Some(quota)).await {
            Ok(PutOutcome::Stored { .. }) => Ok(()),
            Ok(PutOutcome::OverQuota { max }) => Err(RunsError::OverQuota(max)),
            Err(e) => Err(RunsError::Store(e)),
        }
    }

    /// A run by key; None if unknown (or unreadable: logged).
    pub(crate) async fn get(&self, key: &RunKey) -> Option<RunRecord> {
        match self
            .service
            .store()
            .get_record(KIND, &key.record_id())
            .await
        {
            Ok(Some(r)) => serde_json::from_value(r.data).ok(),
            Ok(None) => None,
            Err(e) => {
                tracing::warn!(error = %e, "agui: reading a run failed");
                None
            }
        }
    }

    /// The runs started on a task, oldest first.
    pub(crate) async fn of_task(&self, task_id: &str) -> Vec<RunRecord> {
        let Ok(id) = TaskId::parse(task_id) else {
            return Vec::new();
        };
        let records = match self
            .service
            .store()
            .list_records(KIND, &RecordScope::Task(id))
            .await
        {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "agui: listing runs failed");
                return Vec::new();
            }
        };
        let mut runs: Vec<RunRecord> = records
            .into_iter()
            .filter_map(|r| serde_json::from_value(r.data).ok())
            .collect();
        runs.sort_by_key(|r| r.after_seq);
        runs
    }

    /// The latest run started on a task.
    pub(crate) async fn last_of_task(&self, task_id: &str) -> Option<String> {
        last_of(&self.of_task(task_id).await)
    }
}

/// The latest of a task's runs.
pub(crate) fn last_of(runs: &[RunRecord]) -> Option<String> {
    runs.iter()
        .max_by_key(|r| r.after_seq)
        .map(|r| r.run_id.clone())
}

/// The run of a task that started in `[from, to)`, if one is known.
pub(crate) fn run_in(runs: &[RunRecord], from: u64, to: u64) -> Option<String> {
    runs.iter()
        .filter(|r| r.after_seq >= from && r.after_seq < to)
        .min_by_key(|r| r.after_seq)
        .map(|r| r.run_id.clone())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::sync::Arc;
    use taskwire_core::{Caller, CreateTask, MemoryStore, Message};

    fn key(owner: &str, run: &str) -> RunKey {
        RunKey {
            tenant: "t".into(),
            owner: owner.into(),
            thread_id: "th".into(),
            run_id: run.into(),
        }
    }

    #[tokio::test]
    async fn runs_are_indexed_by_task_and_bounded_per_caller() {
        let svc = TaskService::new(Arc::new(MemoryStore::new()), "t");
        let task = svc
            .create(
                &Caller::new("t", "o"),
                CreateTask::new(Message::user_text("x")),
            )
            .await
            .unwrap()
            .task;
        let runs = Runs::new(svc.clone(), 3);
        for (i, r) in ["a", "b", "c"].iter().enumerate() {
            let rec = RunRecord {
                task_id: task.id.to_string(),
                after_seq: i as u64 * 10,
                parent_run_id: None,
                run_id: String::new(),
            };
            runs.insert(key("o", r), rec).await.unwrap();
        }
        let rec = RunRecord {
            task_id: task.id.to_string(),
            after_seq: 40,
            parent_run_id: None,
            run_id: String::new(),
        };
        // A fourth open run of the same caller is refused; another caller's is not.
        assert!(matches!(
            runs.insert(key("o", "d"), rec.clone()).await,
            Err(RunsError::OverQuota(3))
        ));
        runs.insert(key("p", "d"), rec).await.unwrap();
        assert_eq!(runs.get(&key("o", "a")).await.unwrap().after_seq, 0);
        assert!(runs.get(&key("o", "d")).await.is_none());
        let of = runs.of_task(&task.id.to_string()).await;
        assert_eq!(last_of(&of).as_deref(), Some("d"));
        assert_eq!(run_in(&of, 5, 15).as_deref(), Some("b"));
        assert_eq!(run_in(&of, 1, 5), None);
    }
}

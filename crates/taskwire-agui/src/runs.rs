//! The runs this adapter started, remembered (bounded) for reconnects, cancel by
//! run id and naming runs in replays. Losing it (a restart) only loses those
//! conveniences: replays fall back to derived run ids.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// Who owns a run and what it is called.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct RunKey {
    pub(crate) tenant: String,
    pub(crate) owner: String,
    pub(crate) thread_id: String,
    pub(crate) run_id: String,
}

/// Where a run's events are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RunRecord {
    pub(crate) task_id: String,
    pub(crate) after_seq: u64,
    pub(crate) parent_run_id: Option<String>,
}

#[derive(Default)]
struct Inner {
    runs: HashMap<RunKey, RunRecord>,
    order: VecDeque<RunKey>,
    by_task: HashMap<String, Vec<(u64, String)>>,
}

/// The registry.
pub(crate) struct Runs {
    max: usize,
    inner: Mutex<Inner>,
}

impl Runs {
    pub(crate) fn new(max: usize) -> Self {
        Self {
            max: max.max(1),
            inner: Mutex::new(Inner::default()),
        }
    }

    pub(crate) fn insert(&self, key: RunKey, rec: RunRecord) {
        let Ok(mut g) = self.inner.lock() else { return };
        if g.runs.contains_key(&key) {
            return;
        }
        while g.order.len() >= self.max {
            if let Some(old) = g.order.pop_front() {
                if let Some(r) = g.runs.remove(&old) {
                    if let Some(v) = g.by_task.get_mut(&r.task_id) {
                        v.retain(|(_, id)| id != &old.run_id);
                    }
                }
            }
        }
        g.by_task
            .entry(rec.task_id.clone())
            .or_default()
            .push((rec.after_seq, key.run_id.clone()));
        g.order.push_back(key.clone());
        g.runs.insert(key, rec);
    }

    pub(crate) fn get(&self, key: &RunKey) -> Option<RunRecord> {
        self.inner.lock().ok()?.runs.get(key).cloned()
    }

    /// The latest run started on a task.
    pub(crate) fn last_of_task(&self, task_id: &str) -> Option<String> {
        let g = self.inner.lock().ok()?;
        g.by_task
            .get(task_id)?
            .iter()
            .max_by_key(|(s, _)| *s)
            .map(|(_, id)| id.clone())
    }

    /// The run of a task that started in `[from, to)`, if one is remembered.
    pub(crate) fn run_in(&self, task_id: &str, from: u64, to: u64) -> Option<String> {
        let g = self.inner.lock().ok()?;
        g.by_task
            .get(task_id)?
            .iter()
            .filter(|(s, _)| *s >= from && *s < to)
            .min_by_key(|(s, _)| *s)
            .map(|(_, id)| id.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(run: &str) -> RunKey {
        RunKey {
            tenant: "t".into(),
            owner: "o".into(),
            thread_id: "th".into(),
            run_id: run.into(),
        }
    }

    #[test]
    fn bounded_and_indexed_by_task() {
        let runs = Runs::new(2);
        for (i, r) in ["a", "b", "c"].iter().enumerate() {
            runs.insert(
                key(r),
                RunRecord {
                    task_id: "task".into(),
                    after_seq: i as u64 * 10,
                    parent_run_id: None,
                },
            );
        }
        assert!(runs.get(&key("a")).is_none());
        assert_eq!(runs.last_of_task("task").as_deref(), Some("c"));
        assert_eq!(runs.run_in("task", 5, 15).as_deref(), Some("b"));
        assert_eq!(runs.run_in("task", 0, 5), None);
    }
}

//! The cancel watcher: a downstream cancel of a bridged task is carried
//! upstream, by the turn that runs it or, when none runs (the bridge restarted,
//! or the task waits for input), by the watcher that follows its link records.

use std::future::Future;
use std::sync::Arc;

use serde_json::Value;
use taskwire_client::ClientError;
use taskwire_core::{Access, CoreError, TaskId, TaskService, TaskState, TaskStore, TurnOutcome};

use crate::error::BridgeError;
use tracing::{debug, info, warn};

use crate::link::{
    forget_link, linked_task, LinkBounds, LinkRecords, Linked, RECORD_RUNNING_AFTER,
};
use crate::many::{owns, Route};

/// Aborts the watcher task when the last agent clone goes.
#[derive(Debug)]
pub(crate) struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl AbortOnDrop {
    /// Spawns `fut` on the current runtime, aborted when this is dropped.
    pub(crate) fn spawn(fut: impl Future<Output = ()> + Send + 'static) -> Self {
        Self(tokio::spawn(fut))
    }
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Starts (on the current tokio runtime) a watcher that cancels the upstream
/// task of every linked downstream task that ends canceled (a downstream
/// cancel or an inactivity expiry), through `cancel`. A turn that was running
/// cancels upstream itself too; a second cancel is harmless (refused by an
/// upstream whose task has ended, and only logged).
///
/// Cancels made while no bridge ran are not lost: when a linked task starts
/// waiting (for input, an authorisation, a review: the long waits, with the
/// upstream task held open), the watcher stores an `upstream_link` record of
/// it, and deletes it when the task ends. On start the watcher first claims
/// the records left behind, cancels the upstream tasks of those whose
/// downstream task was canceled meanwhile, and deletes the records of ended
/// tasks.
///
/// With several upstreams, each executor's watcher has its `route` and acts
/// only on the tasks that run on its member.
pub(crate) fn watch_cancels<F, Fut>(
    store: Arc<dyn TaskStore>,
    protocol: &'static str,
    route: Option<Route>,
    bounds: LinkBounds,
    cancel: F,
) -> Watcher
where
    F: Fn(String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), ClientError>> + Send + 'static,
{
    let records = Arc::new(LinkRecords {
        store: store.clone(),
        protocol,
        recorded: std::sync::Mutex::new(std::collections::HashMap::new()),
        running: std::sync::Mutex::new(std::collections::HashMap::new()),
        max_tracked: bounds.tracked,
    });
    let recorded = records.clone();
    let task = AbortOnDrop(tokio::spawn(async move {
        use tokio::sync::broadcast::error::RecvError;
        let recorded = &recorded;
        // Subscribed before the catch-up, so nothing falls between the two.
        let mut rx = store.hub().firehose();
        catch_up_cancels(
            &store,
            protocol,
            route.as_ref(),
            recorded,
            bounds.catch_up,
            &cancel,
        )
        .await;
        let mut tick = tokio::time::interval(RECORD_RUNNING_AFTER);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let got = tokio::select! {
                got = rx.recv() => got,
                _ = tick.tick() => {
                    recorded.record_long_turns().await;
                    continue;
                }
            };
            let (id, state) = match got {
                Ok((id, wake)) => (id, wake.state),
                Err(RecvError::Lagged(n)) => {
                    warn!(
                        missed = n,
                        "the cancel watcher fell behind; some upstream tasks may not be canceled"
                    );
                    continue;
                }
                Err(RecvError::Closed) => return,
            };
            let waiting = state.is_interrupted();
            if state != TaskState::Canceled && !waiting {
                if state.is_terminal() && recorded.remove(&id) {
                    forget_link(&store, &id).await;
                }
                continue;
            }
            let task = match store.get_shared(&id).await {
                Ok(Some(t)) => t,
                Ok(None) => continue,
                Err(e) => {
                    warn!(task = %id, error = %e, "reading a canceled or waiting task failed");
                    continue;
                }
            };
            if !owns(route.as_ref(), &task) {
                continue;
            }
            let Some(upstream) = linked_task(task.agent_state.as_ref(), protocol) else {
                continue;
            };
            if waiting {
                recorded.remember(&Linked::of(&task, &upstream)).await;
                continue;
            }
            send_cancel(&cancel, &id, &upstream).await;
            recorded.remove(&id);
            forget_link(&store, &id).await;
        }
    }));
    Watcher {
        _task: task,
        records,
    }
}

/// A running cancel watcher ([`watch_cancels`]; stopped when dropped) and its
/// executor's `upstream_link` records.
#[derive(Debug)]
pub(crate) struct Watcher {
    pub(crate) _task: AbortOnDrop,
    /// The records of the executor's tasks.
    pub(crate) records: Arc<LinkRecords>,
}

/// Records claimed by the start-up catch-up at once.
pub(crate) const CATCH_UP_BATCH: usize = 100;

pub(crate) async fn send_cancel<F, Fut>(cancel: &F, id: &TaskId, upstream: &str)
where
    F: Fn(String) -> Fut,
    Fut: Future<Output = Result<(), ClientError>>,
{
    match cancel(upstream.to_string()).await {
        Ok(()) => info!(task = %id, upstream_task = %upstream, "upstream task canceled"),
        Err(e) => debug!(task = %id, upstream_task = %upstream, error = %e,
            "the upstream refused the cancel (already ended?)"),
    }
}

/// The start-up pass over the `upstream_link` records (see [`watch_cancels`]),
/// bounded: at most `limit` records, claimed [`CATCH_UP_BATCH`] at a time.
///
/// The watchers of one process take turns (one lock), and each holds every
/// record it claimed until its pass ends: the records of other protocols and
/// members, and of tasks still waiting, are given back only then, so that its
/// next claim returns records it has not seen, and the next watcher's claims
/// find them all free.
pub(crate) async fn catch_up_cancels<F, Fut>(
    store: &Arc<dyn TaskStore>,
    protocol: &str,
    route: Option<&Route>,
    records: &LinkRecords,
    limit: usize,
    cancel: &F,
) where
    F: Fn(String) -> Fut,
    Fut: Future<Output = Result<(), ClientError>>,
{
    use taskwire_core::RecordKind;
    static TURNS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let _turn = TURNS.lock().await;
    let member = route.map_or("", Route::name);
    let worker = format!("taskwire-bridge-{protocol}-{member}-{}", std::process::id());
    let (mut canceled, mut ended) = (0usize, 0usize);
    let mut held = Vec::new();
    let mut left = limit;
    while left > 0 {
        let batch = match store
            .claim_records(
                RecordKind::UpstreamLink,
                &worker,
                left.min(CATCH_UP_BATCH),
                std::time::Duration::from_secs(60),
                chrono::Utc::now(),
            )
            .await
        {
            Ok(b) => b,
            Err(e) => {
                warn!(error = %e, "reading the upstream link records failed; cancels made while the bridge was down are not sent");
                break;
            }
        };
        if batch.is_empty() {
            break;
        }
        left = left.saturating_sub(batch.len());
        for (record, lease) in batch {
            let ours = record.data.get("protocol").and_then(Value::as_str) == Some(protocol);
            let (Some(task_id), true) = (record.task_id.clone(), ours) else {
                // Another watcher's: given back when this pass ends.
                held.push(lease);
                continue;
            };
            let upstream = record
                .data
                .get("taskId")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            match store.get_shared(&task_id).await {
                Ok(Some(t)) if !owns(route, &t) => held.push(lease),
                Ok(Some(t)) if t.state == TaskState::Canceled => {
                    if !upstream.is_empty() {
                        send_cancel(cancel, &task_id, &upstream).await;
                    }
                    canceled += 1;
                    forget_link(store, &task_id).await;
                }
                // Still waiting (or running again): the watcher and the turns
                // take it from here; its record stays, deleted by this
                // watcher when the task ends.
                Ok(Some(t)) if !t.state.is_terminal() => {
                    records.track(&t.id, &upstream);
                    held.push(lease);
                }
                Ok(_) => {
                    ended += 1;
                    forget_link(store, &task_id).await;
                }
                Err(e) => {
                    warn!(task = %task_id, error = %e, "reading a linked task failed");
                    held.push(lease);
                }
            }
        }
    }
    for lease in &held {
        let _ = store.release_record(lease).await;
    }
    if canceled + ended > 0 {
        info!(protocol, member, canceled, ended,
            "upstream link records left by an earlier run: upstream tasks of tasks canceled meanwhile canceled");
    }
}

/// Whether the downstream task `id` was canceled (so a stopped turn should
/// cancel upstream), as opposed to its worker losing it (a lease lapsed, a
/// restart), after which the next worker re-attaches. Without a store every
/// stop counts as a cancel.
pub(crate) async fn downstream_canceled(store: Option<&Arc<dyn TaskStore>>, id: &TaskId) -> bool {
    match store {
        Some(store) => match store.get_shared(id).await {
            Ok(Some(t)) => t.state == TaskState::Canceled,
            Ok(None) => false,
            Err(e) => {
                warn!(task = %id, error = %e, "reading the stopped task failed; not canceling upstream");
                false
            }
        },
        None => true,
    }
}

/// The upstream task ended canceled: the downstream task `id` ends canceled
/// too (failed, without a store to cancel it in). The turn's result is the
/// core's "already terminal" error, which ends the turn without a transition.
pub(crate) async fn end_canceled(
    store: Option<&Arc<dyn TaskStore>>,
    agent: &str,
    id: &TaskId,
) -> Result<TurnOutcome, BridgeError> {
    let Some(store) = store else {
        return Ok(TurnOutcome::Failed {
            message: "the upstream task was canceled".into(),
        });
    };
    let service = TaskService::new(store.clone(), agent.to_string());
    match service
        .cancel(
            Access::System,
            id,
            Some("the upstream task was canceled".into()),
        )
        .await
    {
        Ok(_) | Err(CoreError::NotCancelable { .. }) => {}
        Err(e) => return Err(e.into()),
    }
    Err(BridgeError::Core(CoreError::Terminal {
        state: TaskState::Canceled,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::{DEFAULT_MAX_LINK_RECORDS, LINK_KEY};
    use std::sync::Mutex;
    use std::time::Duration;
    use taskwire_core::{Caller, CreateTask, MemoryStore, Message};

    type Sent = Arc<Mutex<Vec<String>>>;

    /// A watcher of `route` whose cancels are recorded in `sent`.
    fn watcher(store: &Arc<dyn TaskStore>, route: Option<Route>, sent: &Sent) -> Watcher {
        bounded_watcher(store, route, sent, LinkBounds::default())
    }

    /// [`watcher`] with the record bounds `bounds`.
    fn bounded_watcher(
        store: &Arc<dyn TaskStore>,
        route: Option<Route>,
        sent: &Sent,
        bounds: LinkBounds,
    ) -> Watcher {
        let sent = sent.clone();
        watch_cancels(store.clone(), "a2a", route, bounds, move |id| {
            let sent = sent.clone();
            async move {
                sent.lock().unwrap_or_else(|e| e.into_inner()).push(id);
                Ok(())
            }
        })
    }

    fn sent(s: &Sent) -> Vec<String> {
        s.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// A task on member `skill` linked to upstream task `upstream`, in
    /// INPUT_REQUIRED (the link state and the state written as a turn would).
    async fn linked(
        service: &TaskService,
        store: &Arc<dyn TaskStore>,
        skill: &str,
        upstream: &str,
    ) -> TaskId {
        let mut req = CreateTask::new(Message::user_text("hi"));
        req.metadata.insert("skill".into(), Value::from(skill));
        let t = service
            .create(&Caller::new("t", "alice"), req)
            .await
            .expect("create")
            .task;
        let mut next = (*t).clone();
        next.agent_state = Some(serde_json::json!({
            LINK_KEY: {"protocol": "a2a", "taskId": upstream, "turn": 1}
        }));
        next.state = TaskState::InputRequired;
        next.version = t.version + 1;
        store
            .commit(taskwire_core::store::Commit {
                task: Arc::new(next),
                expected_version: t.version,
                events: Vec::new(),
                queue: Default::default(),
                fence: None,
            })
            .await
            .expect("commit");
        t.id.clone()
    }

    /// The `upstream_link` records stored.
    async fn link_records(store: &Arc<dyn TaskStore>) -> u64 {
        store
            .count_records()
            .await
            .expect("count")
            .iter()
            .find(|(k, _)| *k == taskwire_core::RecordKind::UpstreamLink)
            .map_or(0, |(_, n)| *n)
    }

    /// Waits (at most 10 s) until `n` `upstream_link` records are stored.
    async fn until_records(store: &Arc<dyn TaskStore>, n: u64) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while link_records(store).await < n {
            assert!(tokio::time::Instant::now() < deadline, "records not stored");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Cancels every task of `ids`.
    async fn cancel_all(service: &TaskService, ids: &[TaskId]) {
        for id in ids {
            service
                .cancel(Access::System, id, None)
                .await
                .expect("cancel");
        }
    }

    /// Lets the watchers just spawned subscribe to the store's changes.
    async fn started() {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    async fn until(what: &str, f: impl Fn() -> bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while !f() {
            assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    #[tokio::test]
    async fn each_member_cancels_only_its_own_tasks() {
        let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::new());
        let service = TaskService::new(store.clone(), "bridge".to_string());
        let routes = Route::all(vec!["a".into(), "b".into()]);
        let (sa, sb): (Sent, Sent) = Default::default();
        let _wa = watcher(&store, Some(routes[0].clone()), &sa);
        let _wb = watcher(&store, Some(routes[1].clone()), &sb);
        started().await;
        let on_a = linked(&service, &store, "a", "up-a").await;
        let on_b = linked(&service, &store, "b", "up-b").await;
        service
            .cancel(Access::System, &on_a, None)
            .await
            .expect("cancel a");
        service
            .cancel(Access::System, &on_b, None)
            .await
            .expect("cancel b");
        until("both cancels sent", || {
            sent(&sa).len() + sent(&sb).len() >= 2
        })
        .await;
        // A misrouted cancel would be sent in the same pass as the right one.
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(sent(&sa), vec!["up-a".to_string()]);
        assert_eq!(sent(&sb), vec!["up-b".to_string()]);
    }

    /// A record names the upstream task of the task's latest link: a later
    /// turn linked to another upstream task (an MCP tool called again)
    /// stores it again; the same link is stored once.
    #[tokio::test]
    async fn a_later_link_replaces_the_record() {
        let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::new());
        let service = TaskService::new(store.clone(), "bridge".to_string());
        let id = linked(&service, &store, "a", "up-1").await;
        let task = store.get_shared(&id).await.expect("get").expect("task");
        let records = LinkRecords {
            store: store.clone(),
            protocol: "a2a",
            recorded: std::sync::Mutex::new(std::collections::HashMap::new()),
            running: std::sync::Mutex::new(std::collections::HashMap::new()),
            max_tracked: DEFAULT_MAX_LINK_RECORDS,
        };
        let stored = || async {
            store
                .get_record(taskwire_core::RecordKind::UpstreamLink, id.as_str())
                .await
                .expect("get record")
                .map(|r| (r.data["taskId"].clone(), r.version))
        };
        records.remember(&Linked::of(&task, "up-1")).await;
        let first = stored().await.expect("stored");
        assert_eq!(first.0, "up-1");
        records.remember(&Linked::of(&task, "up-1")).await;
        assert_eq!(
            stored().await,
            Some(first.clone()),
            "the same link is not stored again"
        );
        records.remember(&Linked::of(&task, "up-2")).await;
        assert_eq!(stored().await.map(|s| s.0), Some(Value::from("up-2")));
    }

    /// The start-up catch-up of several watchers: every member finds the
    /// records of its tasks canceled while no bridge ran, however the claims
    /// of the watchers interleave, and records beyond one claim's batch.
    #[tokio::test]
    async fn every_member_catches_up_on_its_own_records() {
        let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::new());
        let service = TaskService::new(store.clone(), "bridge".to_string());
        let routes = Route::all(vec!["a".into(), "b".into()]);
        // A first run records the links of waiting tasks: b's several times
        // one claim's batch, so that a's claims (in record id order, which is
        // random) mostly find b's records first.
        let (sa, sb): (Sent, Sent) = Default::default();
        let n_b = 4 * CATCH_UP_BATCH;
        let n_a = 5;
        let mut ids = Vec::new();
        {
            let _wa = watcher(&store, Some(routes[0].clone()), &sa);
            let _wb = watcher(&store, Some(routes[1].clone()), &sb);
            started().await;
            for i in 0..n_b {
                ids.push(linked(&service, &store, "b", &format!("up-b{i}")).await);
            }
            for i in 0..n_a {
                ids.push(linked(&service, &store, "a", &format!("up-a{i}")).await);
            }
            until_records(&store, ids.len() as u64).await;
        }
        // No bridge runs: every task is canceled.
        cancel_all(&service, &ids).await;
        assert!(sent(&sa).is_empty() && sent(&sb).is_empty());
        // The bridge again: both watchers start at once.
        let _wa = watcher(&store, Some(routes[0].clone()), &sa);
        let _wb = watcher(&store, Some(routes[1].clone()), &sb);
        until("every cancel sent", || {
            sent(&sa).len() + sent(&sb).len() >= ids.len()
        })
        .await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        let sorted = |mut v: Vec<String>| {
            v.sort();
            v
        };
        let want =
            |member: &str, n: usize| sorted((0..n).map(|i| format!("up-{member}{i}")).collect());
        assert_eq!(sorted(sent(&sa)), want("a", n_a));
        assert_eq!(sorted(sent(&sb)), want("b", n_b));
    }

    /// A watcher stores at most `tracked` records, and its start-up
    /// catch-up reads at most `catch_up` of them: the rest are read by the
    /// next start.
    #[tokio::test]
    async fn the_link_records_are_bounded() {
        let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::new());
        let service = TaskService::new(store.clone(), "bridge".to_string());
        let sent_at: Sent = Default::default();
        let mut ids = Vec::new();
        {
            let three = LinkBounds {
                tracked: 3,
                catch_up: 100,
            };
            let _w = bounded_watcher(&store, None, &sent_at, three);
            started().await;
            for i in 0..5 {
                ids.push(linked(&service, &store, "a", &format!("up-{i}")).await);
            }
            until_records(&store, 3).await;
            tokio::time::sleep(Duration::from_millis(200)).await;
            assert_eq!(link_records(&store).await, 3, "past the bound, none stored");
        }
        // Five records, from a watcher without the bound.
        {
            let _w = watcher(&store, None, &sent_at);
            started().await;
            for i in 5..7 {
                ids.push(linked(&service, &store, "a", &format!("up-{i}")).await);
            }
            until_records(&store, 5).await;
        }
        cancel_all(&service, &ids).await;
        assert!(sent(&sent_at).is_empty());
        // A start that reads two records cancels two upstream tasks.
        let (first, second): (Sent, Sent) = Default::default();
        let two = LinkBounds {
            tracked: 100,
            catch_up: 2,
        };
        let _w1 = bounded_watcher(&store, None, &first, two);
        until("two cancels sent", || sent(&first).len() >= 2).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(sent(&first).len(), 2, "{:?}", sent(&first));
        assert_eq!(link_records(&store).await, 3);
        // The next start reads the other three.
        let _w2 = watcher(&store, None, &second);
        until("the other cancels sent", || sent(&second).len() >= 3).await;
        let mut all = [sent(&first), sent(&second)].concat();
        all.sort();
        let recorded = ["up-0", "up-1", "up-2", "up-5", "up-6"];
        let mut want: Vec<String> = recorded.iter().map(|s| s.to_string()).collect();
        want.sort();
        assert_eq!(all, want);
    }
}

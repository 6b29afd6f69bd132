//! Property test: random interleavings of concurrent commands on one task never
//! overwrite a terminal state, and versions only grow.

use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use serde_json::json;
use taskwire_core::event::EventKind;
use taskwire_core::store::Claim;
use taskwire_core::types::{InputRequest, InputResponse};
use taskwire_core::{
    Access, Caller, CreateTask, MemoryStore, Message, TaskService, TaskState, TaskStore,
};

#[derive(Clone, Debug)]
enum Cmd {
    Complete,
    Fail,
    Cancel,
    Input,
    AskInput,
    Answer,
    Reap,
}

fn cmd() -> impl Strategy<Value = Cmd> {
    prop_oneof![
        Just(Cmd::Complete),
        Just(Cmd::Fail),
        Just(Cmd::Cancel),
        Just(Cmd::Input),
        Just(Cmd::AskInput),
        Just(Cmd::Answer),
        Just(Cmd::Reap),
    ]
}

fn alice() -> Caller {
    Caller::new("t", "alice")
}

async fn worker_end(svc: &TaskService, claim: &Claim, to: TaskState) {
    let id = claim.task_id.clone();
    let _ = svc
        .mutate(&id, Access::System, Some(claim), |d| {
            d.ensure_active()?;
            if d.task.state == TaskState::Submitted {
                d.transition(TaskState::Working, None)?;
            }
            if to == TaskState::InputRequired {
                let now = d.now();
                d.task.input_requests.insert(
                    "k".into(),
                    InputRequest {
                        key: "k".into(),
                        prompt: "?".into(),
                        schema: json!({"type": "object"}),
                        since: now,
                        kind: Default::default(),
                        subject: None,
                    },
                );
            }
            d.transition(to, None)
        })
        .await;
}

async fn run(cmds: Vec<Cmd>) {
    let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::new());
    let svc = TaskService::new(store.clone(), "scripted");
    let t = svc
        .create(&alice(), CreateTask::new(Message::user_text("x")))
        .await
        .expect("create")
        .task;
    let claim = store
        .claim("w", 1, Duration::from_secs(60), chrono::Utc::now())
        .await
        .expect("claim")
        .remove(0);
    let mut handles = Vec::new();
    for (i, c) in cmds.into_iter().enumerate() {
        let svc = svc.clone();
        let store = store.clone();
        let claim = claim.clone();
        let id = t.id.clone();
        handles.push(tokio::spawn(async move {
            match c {
                Cmd::Complete => worker_end(&svc, &claim, TaskState::Completed).await,
                Cmd::Fail => worker_end(&svc, &claim, TaskState::Failed).await,
                Cmd::AskInput => worker_end(&svc, &claim, TaskState::InputRequired).await,
                Cmd::Cancel => {
                    let _ = svc.cancel(Access::Owner(&alice()), &id, None).await;
                }
                Cmd::Input => {
                    let mut m = Message::user_text("more");
                    m.message_id = format!("in-{i}");
                    let _ = svc.send_input(&alice(), &id, m).await;
                }
                Cmd::Answer => {
                    let mut a = std::collections::BTreeMap::new();
                    a.insert(
                        "k".to_string(),
                        InputResponse::accept(json!({"answer": "y"})),
                    );
                    let _ = svc.answer_inputs(&alice(), &id, a).await;
                }
                Cmd::Reap => {
                    let later = chrono::Utc::now() + chrono::Duration::hours(1);
                    let _ = store.reap(later).await;
                    // A second worker picks it up and finishes it.
                    if let Ok(mut c) = store.claim("w2", 1, Duration::from_secs(60), later).await {
                        if let Some(c) = c.pop() {
                            worker_end(&svc, &c, TaskState::Completed).await;
                        }
                    }
                }
            }
        }));
    }
    for h in handles {
        h.await.expect("join");
    }
    let events = store.events(&t.id, 0, 100_000).await.expect("events");
    let fin = store.get(&t.id).await.expect("get").expect("task");
    // Sequence numbers are dense; versions never decrease and grow between commits.
    let mut last_version = 0;
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e.seq, i as u64 + 1);
        assert!(e.version >= last_version, "versions only grow");
        last_version = e.version;
    }
    assert_eq!(fin.version, last_version.max(1));
    // At most one terminal status; nothing after it; the final state is it.
    let terminal: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.kind.terminal_state().is_some())
        .map(|(i, _)| i)
        .collect();
    assert!(terminal.len() <= 1, "one terminal state wins: {terminal:?}");
    if let Some(&i) = terminal.first() {
        assert_eq!(
            i,
            events.len() - 1,
            "nothing is appended after a terminal state"
        );
        assert_eq!(Some(fin.state), events[i].kind.terminal_state());
    } else {
        assert!(!fin.state.is_terminal());
    }
    // Every status event follows the transition table from the previous state.
    let mut state = TaskState::Submitted;
    for e in &events {
        if let EventKind::Status { from, to, .. } = &e.kind {
            assert_eq!(*from, state);
            assert!(
                taskwire_core::transition::is_allowed(*from, *to),
                "{from} -> {to}"
            );
            state = *to;
        }
    }
    assert_eq!(state, fin.state);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]
    #[test]
    fn concurrent_commands_never_overwrite_a_terminal_state(cmds in proptest::collection::vec(cmd(), 1..16)) {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(run(cmds));
    }
}

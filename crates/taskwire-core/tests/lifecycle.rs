//! Task lifecycles through the service and runtime with the scripted agent.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::json;
use taskwire_core::event::EventKind;
use taskwire_core::scripted::ask_key;
use taskwire_core::types::{InputAction, InputResponse, ReviewDecision};
use taskwire_core::{
    Access, Agent, Caller, CoreError, CreateTask, MemoryStore, Message, Runtime, RuntimeConfig,
    ScriptedAgent, Task, TaskService, TaskState, TaskStore,
};

struct Env {
    svc: TaskService,
    rt: Option<Runtime>,
}

impl Env {
    fn new() -> Self {
        Self::with_config({
            let mut v = RuntimeConfig::default();
            v.poll_interval = Duration::from_millis(20);
            v.reap_interval = Duration::from_millis(50);
            v
        })
    }

    fn with_config(cfg: RuntimeConfig) -> Self {
        let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::new());
        let svc = TaskService::new(store, "scripted");
        let rt = Runtime::start(svc.clone(), Arc::new(ScriptedAgent::new()), cfg);
        Self { svc, rt: Some(rt) }
    }

    async fn create(&self, text: &str) -> Task {
        self.svc
            .create(&alice(), CreateTask::new(Message::user_text(text)))
            .await
            .expect("create")
            .task
            .as_ref()
            .clone()
    }

    async fn settle(&self, t: &Task) -> Task {
        self.svc
            .wait_until(&alice(), &t.id, Duration::from_secs(10), |t| {
                t.state.is_interrupted()
            })
            .await
            .expect("wait")
    }

    async fn terminal(&self, t: &Task) -> Task {
        self.svc
            .wait_until(&alice(), &t.id, Duration::from_secs(10), |_| false)
            .await
            .expect("wait")
    }

    async fn stop(mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown(Duration::from_secs(5)).await;
        }
    }
}

fn alice() -> Caller {
    Caller::new("t1", "alice")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn echo_completes_with_an_echo_artifact() {
    let env = Env::new();
    let t = env.terminal(&env.create("hello world").await).await;
    assert_eq!(t.state, TaskState::Completed);
    assert_eq!(t.artifacts.len(), 1);
    assert_eq!(t.artifacts[0].name.as_deref(), Some("echo"));
    assert_eq!(t.artifacts[0].text(), "hello world");
    assert_eq!(t.turns, 1);
    assert!(
        t.history[0].committed_at.is_some(),
        "the agent saw the input"
    );
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_is_answered_by_a_plain_message() {
    let env = Env::new();
    let t = env
        .settle(&env.create("ask What is your name?").await)
        .await;
    assert_eq!(t.state, TaskState::InputRequired);
    assert_eq!(
        t.status_message.as_ref().map(Message::text).as_deref(),
        Some("What is your name?")
    );
    let req = t.input_requests.get(&ask_key(0)).expect("keyed request");
    assert_eq!(req.schema["properties"]["answer"]["type"], "string");
    env.svc
        .send_input(&alice(), &t.id, Message::user_text("Ada"))
        .await
        .unwrap();
    let t = env.terminal(&t).await;
    assert_eq!(t.state, TaskState::Completed);
    assert_eq!(t.artifacts[0].text(), "answer: Ada");
    assert!(t.superseded_keys.contains(&ask_key(0)));
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partial_unknown_and_superseded_answers() {
    let env = Env::new();
    let t = env
        .settle(&env.create("ask first?\nask second?").await)
        .await;
    assert_eq!(t.state, TaskState::InputRequired);
    // Unknown key: ignored, task still waits.
    let mut a = BTreeMap::new();
    a.insert(
        "nope".to_string(),
        InputResponse::accept(json!({"answer": "x"})),
    );
    let r = env.svc.answer_inputs(&alice(), &t.id, a).await.unwrap();
    assert!(r.applied.is_empty());
    assert_eq!(r.ignored, vec!["nope".to_string()]);
    assert_eq!(r.task.state, TaskState::InputRequired);
    // The right key resumes; the script then asks the second question.
    let mut a = BTreeMap::new();
    a.insert(ask_key(0), InputResponse::accept(json!({"answer": "one"})));
    let r = env
        .svc
        .answer_inputs(&alice(), &t.id, a.clone())
        .await
        .unwrap();
    assert_eq!(r.applied, vec![ask_key(0)]);
    let t2 = env
        .svc
        .wait_until(&alice(), &t.id, Duration::from_secs(10), |t| {
            t.input_requests.contains_key(&ask_key(1))
        })
        .await
        .unwrap();
    assert_eq!(t2.state, TaskState::InputRequired);
    // Answering the first key again is ignored (already answered).
    let r = env.svc.answer_inputs(&alice(), &t.id, a).await.unwrap();
    assert_eq!(r.ignored, vec![ask_key(0)]);
    let mut a = BTreeMap::new();
    a.insert(ask_key(1), InputResponse::accept(json!({"answer": "two"})));
    env.svc.answer_inputs(&alice(), &t.id, a).await.unwrap();
    let t = env.terminal(&t).await;
    assert_eq!(t.state, TaskState::Completed);
    let texts: Vec<String> = t.artifacts.iter().map(|a| a.text()).collect();
    assert_eq!(texts, vec!["answer: one", "answer: two"]);
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn declined_input_ends_rejected() {
    let env = Env::new();
    let t = env.settle(&env.create("ask ok?").await).await;
    let mut a = BTreeMap::new();
    a.insert(
        ask_key(0),
        InputResponse {
            action: InputAction::Decline,
            content: None,
        },
    );
    env.svc.answer_inputs(&alice(), &t.id, a).await.unwrap();
    let t = env.terminal(&t).await;
    assert_eq!(t.state, TaskState::Rejected);
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_is_one_wait_per_provider_and_one_grant_resolves_it() {
    let env = Env::new();
    let t = env
        .settle(&env.create("auth github\nauth github\necho done").await)
        .await;
    assert_eq!(t.state, TaskState::AuthRequired);
    assert_eq!(t.pending_auth.len(), 1);
    assert_eq!(t.pending_auth[0].provider, "github");
    // Granting an unrelated provider changes nothing.
    let same = env
        .svc
        .grant_auth(Access::Owner(&alice()), &t.id, "gitlab")
        .await
        .unwrap();
    assert_eq!(same.version, t.version);
    env.svc
        .grant_auth(Access::Owner(&alice()), &t.id, "github")
        .await
        .unwrap();
    let t = env.terminal(&t).await;
    assert_eq!(
        t.state,
        TaskState::Completed,
        "both waits on github resolved by one grant"
    );
    assert!(t.granted_providers.contains("github"));
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_can_carry_an_authorisation() {
    let env = Env::new();
    let t = env.settle(&env.create("auth slack\nhello").await).await;
    assert_eq!(t.state, TaskState::AuthRequired);
    let mut m = Message::user_text("signed in");
    m.metadata
        .insert("authorization".into(), json!({"provider": "slack"}));
    env.svc.send_input(&alice(), &t.id, m).await.unwrap();
    let t = env.terminal(&t).await;
    assert_eq!(t.state, TaskState::Completed);
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn review_approve_continues_and_reject_ends_rejected() {
    let env = Env::new();
    let t = env.settle(&env.create("review\nhello").await).await;
    assert_eq!(t.state, TaskState::InputRequired);
    let rv = t.pending_reviews[0].clone();
    assert_eq!(rv.reviewer, "alice");
    // Someone else cannot decide it.
    let mallory = Caller::new("t1", "mallory");
    let err = env
        .svc
        .decide_review(&mallory, &t.id, &rv.id, ReviewDecision::Approve)
        .await;
    assert!(matches!(err, Err(CoreError::NotFound)));
    env.svc
        .decide_review(&alice(), &t.id, &rv.id, ReviewDecision::Approve)
        .await
        .unwrap();
    assert_eq!(env.terminal(&t).await.state, TaskState::Completed);

    let t = env.settle(&env.create("review").await).await;
    let rv = t.pending_reviews[0].clone();
    env.svc
        .decide_review(&alice(), &t.id, &rv.id, ReviewDecision::Reject)
        .await
        .unwrap();
    let t = env.terminal(&t).await;
    assert_eq!(t.state, TaskState::Rejected);
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_reject_and_crash() {
    let env = Env::new();
    let t = env.terminal(&env.create("fail disk full").await).await;
    assert_eq!(t.state, TaskState::Failed);
    assert_eq!(
        t.error.as_ref().map(|e| e.message.as_str()),
        Some("disk full")
    );
    let t = env.terminal(&env.create("reject not allowed").await).await;
    assert_eq!(t.state, TaskState::Rejected);
    assert_eq!(
        t.error.as_ref().map(|e| e.message.as_str()),
        Some("not allowed")
    );
    let t = env.terminal(&env.create("crash").await).await;
    assert_eq!(t.state, TaskState::Failed);
    let e = t.error.expect("error");
    assert_eq!(e.code, "internal");
    assert_eq!(e.message, "internal error", "no details leak");
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_and_steps_are_logged() {
    let env = Env::new();
    let t = env.terminal(&env.create("stream 4\nsteps 2").await).await;
    assert_eq!(t.state, TaskState::Completed);
    let a = t.artifact("stream-0").expect("stream artifact");
    assert_eq!(a.parts.len(), 4);
    assert!(a.complete);
    let events = env.svc.events(&alice(), &t.id, 0, 1000).await.unwrap();
    let chunks: Vec<(bool, bool)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Artifact {
                append, last_chunk, ..
            } => Some((*append, *last_chunk)),
            _ => None,
        })
        .collect();
    assert_eq!(
        chunks,
        vec![(false, false), (true, false), (true, false), (true, true)]
    );
    let steps = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Step { .. }))
        .count();
    assert_eq!(steps, 4);
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn message_directive_is_a_direct_reply() {
    let agent = ScriptedAgent::new();
    let reply = agent
        .direct_reply(&alice(), &Message::user_text("message\nhi"))
        .await;
    assert_eq!(reply.map(|m| m.text()).as_deref(), Some("message\nhi"));
    assert!(agent
        .direct_reply(&alice(), &Message::user_text("hello"))
        .await
        .is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_during_a_turn_is_queued_in_order_and_never_lost() {
    let env = Env::new();
    let t = env.create("sleep 300").await;
    env.svc
        .wait_until(&alice(), &t.id, Duration::from_secs(10), |t| {
            t.state == TaskState::Working
        })
        .await
        .unwrap();
    for i in 1..=3 {
        let mut m = Message::user_text(format!("input {i}"));
        m.message_id = format!("in-{i}");
        let after = env.svc.send_input(&alice(), &t.id, m).await.unwrap();
        assert_eq!(
            after.state,
            TaskState::Working,
            "the turn in flight is not interrupted"
        );
    }
    let t = env.terminal(&t).await;
    assert_eq!(t.state, TaskState::Completed);
    assert_eq!(t.turns, 2, "queued input ran in one later turn");
    let echoed: Vec<String> = t
        .artifacts
        .iter()
        .filter(|a| a.artifact_id.starts_with("echo-"))
        .map(|a| a.text())
        .collect();
    assert_eq!(echoed, vec!["input 1", "input 2", "input 3"]);
    assert!(t.history.iter().all(|m| m.committed_at.is_some()));
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminal_tasks_refuse_input_and_cancel() {
    let env = Env::new();
    let t = env.terminal(&env.create("hello").await).await;
    let err = env
        .svc
        .send_input(&alice(), &t.id, Message::user_text("more"))
        .await;
    assert!(matches!(
        err,
        Err(CoreError::Terminal {
            state: TaskState::Completed
        })
    ));
    let err = env.svc.cancel(Access::Owner(&alice()), &t.id, None).await;
    assert!(matches!(
        err,
        Err(CoreError::NotCancelable {
            state: TaskState::Completed
        })
    ));
    let after = env.svc.get(&alice(), &t.id).await.unwrap();
    assert_eq!(after.version, t.version, "a terminal task is never mutated");
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_is_idempotent_and_cooperative() {
    let env = Env::new();
    let t = env.create("sleep 10000").await;
    env.svc
        .wait_until(&alice(), &t.id, Duration::from_secs(10), |t| {
            t.state == TaskState::Working
        })
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let a = env
        .svc
        .cancel(Access::Owner(&alice()), &t.id, None)
        .await
        .unwrap();
    let b = env
        .svc
        .cancel(Access::Owner(&alice()), &t.id, None)
        .await
        .unwrap();
    assert_eq!(a.state, TaskState::Canceled);
    assert_eq!(a.version, b.version, "a second cancel changes nothing");
    // The runtime drains quickly because the sleeping turn saw its token.
    env.stop().await;
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_callers_task_is_not_found() {
    let env = Env::new();
    let t = env.create("ask hm?").await;
    for other in [Caller::new("t1", "bob"), Caller::new("t2", "alice")] {
        assert!(matches!(
            env.svc.get(&other, &t.id).await,
            Err(CoreError::NotFound)
        ));
        assert!(matches!(
            env.svc
                .send_input(&other, &t.id, Message::user_text("x"))
                .await,
            Err(CoreError::NotFound)
        ));
        assert!(matches!(
            env.svc.cancel(Access::Owner(&other), &t.id, None).await,
            Err(CoreError::NotFound)
        ));
        assert!(matches!(
            env.svc.subscribe(Access::Owner(&other), &t.id, 0).await,
            Err(CoreError::NotFound)
        ));
        let page = env.svc.list(&other, Default::default()).await.unwrap();
        assert!(page.tasks.is_empty());
    }
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_is_idempotent_and_starts_no_new_work() {
    let env = Env::new();
    let mut m = Message::user_text("hello");
    m.message_id = "same".into();
    let a = env
        .svc
        .create(&alice(), CreateTask::new(m.clone()))
        .await
        .unwrap();
    let t = env.terminal(&a.task).await;
    let b = env.svc.create(&alice(), CreateTask::new(m)).await.unwrap();
    assert!(!b.created);
    assert_eq!(b.task.id, t.id);
    let again = env.svc.get(&alice(), &t.id).await.unwrap();
    assert_eq!(again.turns, 1);
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_typed_errors() {
    let env = Env::new();
    let big = Message::user_text("x".repeat(2 * 1024 * 1024));
    assert!(matches!(
        env.svc.create(&alice(), CreateTask::new(big)).await,
        Err(CoreError::TooLarge { .. })
    ));
    let mut req = CreateTask::new(Message::user_text("x"));
    req.context_id = Some("bad\u{0}id".into());
    assert!(matches!(
        env.svc.create(&alice(), req).await,
        Err(CoreError::InvalidInput { field, .. }) if field == "contextId"
    ));
    let mut agent_msg = Message::agent_text("x");
    agent_msg.message_id = "z".into();
    assert!(matches!(
        env.svc.create(&alice(), CreateTask::new(agent_msg)).await,
        Err(CoreError::InvalidInput { field, .. }) if field == "role"
    ));
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guardrail_refuses_before_the_agent_sees_anything() {
    let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::new());
    let svc = TaskService::new(store.clone(), "scripted").with_guardrail(Arc::new(
        taskwire_core::guardrail::DenyPhrases::new(["drop table"]),
    ));
    let err = svc
        .create(
            &alice(),
            CreateTask::new(Message::user_text("please DROP TABLE x")),
        )
        .await;
    assert!(matches!(err, Err(CoreError::DeniedByGuardrail { .. })));
    assert_eq!(store.queue_depth().await.unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_survives_its_worker_dying() {
    // A worker claims the task and dies (never renews). The reaper re-queues it once
    // the lease lapses, and a live runtime completes it.
    let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::new());
    let svc = TaskService::new(store.clone(), "scripted");
    let t = svc
        .create(&alice(), CreateTask::new(Message::user_text("hello")))
        .await
        .unwrap()
        .task
        .as_ref()
        .clone();
    let dead = store
        .claim(
            "dead-worker",
            1,
            Duration::from_millis(100),
            chrono::Utc::now(),
        )
        .await
        .unwrap();
    assert_eq!(dead.len(), 1);
    let rt = Runtime::start(svc.clone(), Arc::new(ScriptedAgent::new()), {
        let mut v = RuntimeConfig::default();
        v.poll_interval = Duration::from_millis(20);
        v.reap_interval = Duration::from_millis(50);
        v
    });
    let t = svc
        .wait_until(&alice(), &t.id, Duration::from_secs(10), |_| false)
        .await
        .unwrap();
    assert_eq!(t.state, TaskState::Completed);
    // The dead worker's late commit is refused.
    let late = svc
        .mutate(&t.id, Access::System, Some(&dead[0]), |d| {
            d.record(EventKind::Step {
                name: "late".into(),
                phase: taskwire_core::StepPhase::Started,
            });
            Ok(())
        })
        .await;
    assert!(late.is_err());
    rt.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscriber_that_drops_and_resumes_sees_no_gap_and_no_duplicate() {
    let env = Env::new();
    let t = env.create("stream 40\nsleep 50\nstream 40").await;
    let mut seen = Vec::new();
    // Read a few events, drop the subscription, resume from the last seq, repeatedly.
    let mut after = 0;
    loop {
        let mut sub = env
            .svc
            .subscribe(Access::Owner(&alice()), &t.id, after)
            .await
            .unwrap();
        let mut n = 0;
        let mut ended = true;
        while let Some(e) = tokio::time::timeout(Duration::from_secs(10), sub.next())
            .await
            .unwrap()
        {
            let e = e.unwrap();
            after = e.seq;
            seen.push(e.seq);
            n += 1;
            if n == 7 {
                ended = false;
                break;
            }
        }
        drop(sub);
        if ended {
            break;
        }
    }
    let t = env.svc.get(&alice(), &t.id).await.unwrap();
    assert_eq!(t.state, TaskState::Completed);
    let want: Vec<u64> = (1..=t.last_seq).collect();
    assert_eq!(seen, want);
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_lifespan_ends_a_waiting_task() {
    let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::new());
    let svc = TaskService::new(store, "scripted").with_defaults(
        taskwire_core::TaskDefaults::default()
            .with_ttl(None)
            .with_idle_lifespan(Some(Duration::from_millis(100))),
    );
    let rt = Runtime::start(svc.clone(), Arc::new(ScriptedAgent::new()), {
        let mut v = RuntimeConfig::default();
        v.poll_interval = Duration::from_millis(20);
        v.sweep_interval = Duration::from_millis(50);
        v
    });
    let t = svc
        .create(&alice(), CreateTask::new(Message::user_text("ask anyone?")))
        .await
        .unwrap()
        .task
        .as_ref()
        .clone();
    let waiting = svc
        .wait_until(&alice(), &t.id, Duration::from_secs(10), |t| {
            t.state.is_interrupted()
        })
        .await
        .unwrap();
    assert!(waiting.idle_expires_at.is_some());
    let t = svc
        .wait_until(&alice(), &t.id, Duration::from_secs(10), |_| false)
        .await
        .unwrap();
    assert_eq!(t.state, TaskState::Canceled);
    assert_eq!(
        t.terminal_cause,
        Some(taskwire_core::types::TerminalCause::Expired)
    );
    assert!(t.idle_expires_at.is_none());
    rt.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupt_stops_the_turn_and_the_task_waits_for_input() {
    let env = Env::new();
    let t = env.create("sleep 10000").await;
    env.svc
        .wait_until(&alice(), &t.id, Duration::from_secs(10), |t| {
            t.state == TaskState::Working && t.turns == 1
        })
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let i = env
        .svc
        .interrupt_turn(Access::Owner(&alice()), &t.id, Some("stop".into()))
        .await
        .unwrap();
    assert_eq!(i.state, TaskState::InputRequired);
    assert!(
        i.waiting_state().is_none(),
        "nothing is pending: it awaits input"
    );
    assert!(!i.turn_open);
    // The sleeping turn saw its token: the runtime has no running turn left.
    let rt = env.rt.as_ref().unwrap();
    while rt.running_turns() > 0 {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "turn not stopped"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Interrupting a task that is not working is refused.
    let again = env
        .svc
        .interrupt_turn(Access::Owner(&alice()), &t.id, None)
        .await;
    assert!(matches!(again, Err(CoreError::WrongState { .. })));
    // Someone else's task is not found.
    let bob = Caller::new("t1", "bob");
    let other = env
        .svc
        .interrupt_turn(Access::Owner(&bob), &t.id, None)
        .await;
    assert!(matches!(other, Err(CoreError::NotFound)));
    // The next input starts a new turn, which sees only that input.
    env.svc
        .send_input(&alice(), &t.id, Message::user_text("hello"))
        .await
        .unwrap();
    let done = env.terminal(&t).await;
    assert_eq!(done.state, TaskState::Completed);
    assert_eq!(done.turns, 2);
    let echoed: Vec<String> = done.artifacts.iter().map(|a| a.text()).collect();
    assert_eq!(echoed, vec!["hello"]);
    env.stop().await;
}

/// Event streams are bounded per caller: one over the bound is TooLarge, another
/// caller is not affected, and a closed stream frees its place; the runtime's
/// own subscriptions (push delivery) do not count.
#[tokio::test]
async fn open_streams_are_bounded_per_caller() {
    use taskwire_core::{Access, CoreError, Limits};
    let limits = {
        let mut v = Limits::default();
        v.max_streams_per_principal = 2;
        v
    };
    let svc = TaskService::new(std::sync::Arc::new(MemoryStore::new()), "t").with_limits(limits);
    let alice = Caller::new("t", "alice");
    let bob = Caller::new("t", "bob");
    let a = svc
        .create(&alice, CreateTask::new(Message::user_text("x")))
        .await
        .unwrap()
        .task;
    let b = svc
        .create(&bob, CreateTask::new(Message::user_text("y")))
        .await
        .unwrap()
        .task;
    let s1 = svc
        .subscribe(Access::Owner(&alice), &a.id, 0)
        .await
        .unwrap();
    let _s2 = svc
        .subscribe(Access::Owner(&alice), &a.id, 0)
        .await
        .unwrap();
    let third = svc.subscribe(Access::Owner(&alice), &a.id, 0).await;
    assert!(matches!(third, Err(CoreError::TooLarge { limit: 2, .. })));
    assert!(svc.subscribe(Access::Owner(&bob), &b.id, 0).await.is_ok());
    assert!(svc.subscribe(Access::System, &a.id, 0).await.is_ok());
    drop(s1);
    assert!(svc.subscribe(Access::Owner(&alice), &a.id, 0).await.is_ok());
}

/// An agent that holds the automatic flushes while it emits `held`, waits far
/// longer than the flush interval, then reports whether `held` was committed
/// meanwhile (it must not be), lets go and emits `after`.
struct Holding {
    svc: std::sync::OnceLock<TaskService>,
    seen_while_held: Arc<std::sync::Mutex<Option<bool>>>,
}

#[async_trait::async_trait]
impl Agent for Holding {
    fn info(&self) -> taskwire_core::AgentInfo {
        taskwire_core::AgentInfo::new("holding", "holds its flushes")
    }

    async fn run_turn(
        &self,
        ctx: &taskwire_core::TurnContext,
    ) -> Result<taskwire_core::TurnOutcome, taskwire_core::AgentError> {
        let svc = self.svc.get().expect("service").clone();
        let id = ctx.task().id.clone();
        let committed = |name: &'static str| {
            let svc = svc.clone();
            let id = id.clone();
            async move {
                let t = svc.get(&alice(), &id).await.expect("get");
                t.artifacts.iter().any(|a| a.artifact_id == name)
            }
        };
        {
            let _hold = ctx.hold_flushes();
            ctx.emit_artifact("held", None, vec![taskwire_core::Part::text("a")])
                .await?;
            tokio::time::sleep(Duration::from_millis(100)).await;
            ctx.emit_artifact("held-2", None, vec![taskwire_core::Part::text("b")])
                .await?;
            tokio::time::sleep(Duration::from_millis(100)).await;
            *self.seen_while_held.lock().expect("lock") = Some(committed("held").await);
        }
        ctx.emit_artifact("after", None, vec![taskwire_core::Part::text("c")])
            .await?;
        tokio::time::sleep(Duration::from_millis(100)).await;
        if !committed("held").await || !committed("after").await {
            return Ok(taskwire_core::TurnOutcome::Failed {
                message: "not committed after the hold".into(),
            });
        }
        Ok(taskwire_core::TurnOutcome::Completed { message: None })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_flushes_commit_together_after_the_hold() {
    let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::new());
    let svc = TaskService::new(store, "holding");
    let seen = Arc::new(std::sync::Mutex::new(None));
    let agent = Holding {
        svc: std::sync::OnceLock::new(),
        seen_while_held: seen.clone(),
    };
    agent.svc.set(svc.clone()).ok();
    let mut cfg = RuntimeConfig::default();
    cfg.poll_interval = Duration::from_millis(20);
    let rt = Runtime::start(svc.clone(), Arc::new(agent), cfg);
    let t = svc
        .create(&alice(), CreateTask::new(Message::user_text("go")))
        .await
        .expect("create")
        .task
        .as_ref()
        .clone();
    let t = svc
        .wait_until(&alice(), &t.id, Duration::from_secs(10), |_| false)
        .await
        .expect("wait");
    assert_eq!(t.state, TaskState::Completed, "{t:?}");
    assert_eq!(
        *seen.lock().expect("lock"),
        Some(false),
        "held output was committed during the hold"
    );
    rt.shutdown(Duration::from_secs(5)).await;
}

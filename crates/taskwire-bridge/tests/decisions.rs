//! The bridge's decisions, against an in-process fake upstream: an
//! [`A2aBinding`] of this test's own that answers each call from a script
//! and records what it was sent. The bridged agent runs in the core's own
//! runtime over a memory store, as `taskwire serve --upstream` runs it, but
//! with no network and no second process.
//!
//! What is decided: the plan of a turn (send the input with the turn's
//! message id, continue the upstream task with an answer, re-attach on a
//! re-run), what is sent again and when (a send that never reached the
//! upstream, never one that did), and what a failed turn becomes.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use serde_json::{json, Value};
use taskwire_bridge::{A2aUpstream, UpstreamOptions};
use taskwire_client::a2a::{pb, A2aEvent, A2aStream};
use taskwire_client::{A2aBinding, BackoffPolicy, ClientConfig, ClientError, Received, RpcError};
use taskwire_core::{
    async_trait, AgentInfo, Caller, CreateTask, MemoryStore, Message, Runtime, RuntimeConfig, Task,
    TaskService, TaskState, TaskStore,
};

/// What the fake answers to one `SendStreamingMessage` or `SubscribeToTask`.
enum Answer {
    /// These events (ProtoJSON `StreamResponse`s), then the end of the stream.
    Events(Vec<Value>),
    /// These events, then a stream that never ends (an upstream still working).
    EventsThenHang(Vec<Value>),
    /// The call fails.
    Fail(ClientError),
}

/// An A2A upstream in this process.
struct Fake {
    config: ClientConfig,
    sends: Mutex<VecDeque<Answer>>,
    resubscribes: Mutex<VecDeque<Answer>>,
    sent: Mutex<Vec<pb::SendMessageRequest>>,
    resubscribed: Mutex<Vec<(String, Option<String>)>>,
    canceled: Mutex<Vec<String>>,
}

impl std::fmt::Debug for Fake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fake").finish_non_exhaustive()
    }
}

impl Fake {
    fn new(sends: Vec<Answer>) -> Arc<Self> {
        Arc::new(Self {
            config: ClientConfig::new("http://127.0.0.1:9/fake"),
            sends: Mutex::new(sends.into()),
            resubscribes: Mutex::new(VecDeque::new()),
            sent: Mutex::new(Vec::new()),
            resubscribed: Mutex::new(Vec::new()),
            canceled: Mutex::new(Vec::new()),
        })
    }

    fn on_resubscribe(self: &Arc<Self>, a: Answer) {
        self.resubscribes.lock().expect("lock").push_back(a);
    }

    fn sent(&self) -> Vec<pb::SendMessageRequest> {
        self.sent.lock().expect("lock").clone()
    }
}

fn stream_of(a: Answer) -> Result<A2aStream, ClientError> {
    let (events, hang) = match a {
        Answer::Events(e) => (e, false),
        Answer::EventsThenHang(e) => (e, true),
        Answer::Fail(e) => return Err(e),
    };
    let events: Vec<Result<A2aEvent, ClientError>> = events
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            let r: pb::StreamResponse = serde_json::from_value(v).expect("a StreamResponse");
            Ok(A2aEvent::new(r, Some(format!("e{i}"))))
        })
        .collect();
    let s = futures::stream::iter(events);
    Ok(if hang {
        A2aStream::of_events(s.chain(futures::stream::pending()))
    } else {
        A2aStream::of_events(s)
    })
}

fn unused<T>(what: &str) -> Result<T, ClientError> {
    Err(ClientError::Connect(format!(
        "the fake upstream has no {what}"
    )))
}

#[async_trait]
impl A2aBinding for Fake {
    fn binding(&self) -> &'static str {
        "JSONRPC"
    }
    fn endpoint(&self) -> &str {
        "http://127.0.0.1:9/fake"
    }
    fn config(&self) -> &ClientConfig {
        &self.config
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    async fn send_message(
        &self,
        _req: pb::SendMessageRequest,
    ) -> Result<Received<pb::SendMessageResponse>, ClientError> {
        unused("SendMessage")
    }
    async fn send_streaming_message(
        &self,
        req: pb::SendMessageRequest,
    ) -> Result<A2aStream, ClientError> {
        self.sent.lock().expect("lock").push(req);
        let a = self.sends.lock().expect("lock").pop_front();
        stream_of(a.unwrap_or(Answer::Fail(ClientError::Connect(
            "no answer scripted".into(),
        ))))
    }
    async fn resubscribe(
        &self,
        id: &str,
        last_event_id: Option<&str>,
    ) -> Result<A2aStream, ClientError> {
        self.resubscribed
            .lock()
            .expect("lock")
            .push((id.to_string(), last_event_id.map(str::to_string)));
        let a = self.resubscribes.lock().expect("lock").pop_front();
        stream_of(a.unwrap_or(Answer::Fail(ClientError::Connect(
            "no answer scripted".into(),
        ))))
    }
    async fn get_task(
        &self,
        _id: &str,
        _history_length: Option<i32>,
    ) -> Result<Received<pb::Task>, ClientError> {
        unused("GetTask")
    }
    async fn list_tasks(
        &self,
        _req: pb::ListTasksRequest,
    ) -> Result<Received<pb::ListTasksResponse>, ClientError> {
        unused("ListTasks")
    }
    async fn cancel_task(&self, id: &str) -> Result<Received<pb::Task>, ClientError> {
        self.canceled.lock().expect("lock").push(id.to_string());
        unused("CancelTask")
    }
    async fn create_push_config(
        &self,
        _config: pb::TaskPushNotificationConfig,
    ) -> Result<Received<pb::TaskPushNotificationConfig>, ClientError> {
        unused("push configs")
    }
    async fn get_push_config(
        &self,
        _task_id: &str,
        _id: &str,
    ) -> Result<Received<pb::TaskPushNotificationConfig>, ClientError> {
        unused("push configs")
    }
    async fn list_push_configs(
        &self,
        _task_id: &str,
    ) -> Result<Received<pb::ListTaskPushNotificationConfigsResponse>, ClientError> {
        unused("push configs")
    }
    async fn delete_push_config(&self, _task_id: &str, _id: &str) -> Result<(), ClientError> {
        unused("push configs")
    }
    async fn extended_agent_card(&self) -> Result<Received<pb::AgentCard>, ClientError> {
        unused("card")
    }
}

fn task_event(id: &str, state: &str) -> Value {
    json!({"task": {"id": id, "contextId": "ctx-up", "status": {"state": state}}})
}

fn status_event(id: &str, state: &str, text: &str) -> Value {
    json!({"statusUpdate": {"taskId": id, "contextId": "ctx-up", "status": {
        "state": state,
        "message": {"messageId": format!("m-{state}"), "role": "ROLE_AGENT",
            "parts": [{"text": text}]}}}})
}

/// The bridged agent over `fake` in a runtime of its own, over `store`.
struct Env {
    svc: TaskService,
    rt: Option<Runtime>,
}

fn options() -> UpstreamOptions {
    UpstreamOptions {
        backoff: BackoffPolicy {
            initial: Duration::from_millis(10),
            max: Duration::from_millis(20),
            max_attempts: 3,
            ..BackoffPolicy::default()
        },
        ..UpstreamOptions::default()
    }
}

impl Env {
    fn start(fake: &Arc<Fake>, store: Arc<dyn TaskStore>) -> Self {
        let agent = A2aUpstream::over(
            fake.clone(),
            AgentInfo::new("upstream", "the fake upstream"),
            &options(),
        )
        .with_store(store.clone());
        let svc = TaskService::new(store, "upstream");
        let mut cfg = RuntimeConfig::default();
        cfg.poll_interval = Duration::from_millis(10);
        cfg.reap_interval = Duration::from_millis(50);
        cfg.lease = Duration::from_millis(300);
        let rt = Runtime::start(svc.clone(), Arc::new(agent), cfg);
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

    /// The task once `done` holds of it (at most 10 s).
    async fn until(&self, id: &Task, done: impl Fn(&Task) -> bool) -> Task {
        self.svc
            .wait_until(&alice(), &id.id, Duration::from_secs(10), |t| done(t))
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

fn text_of(m: &pb::Message) -> String {
    m.parts
        .iter()
        .filter_map(|p| match &p.content {
            Some(pb::part::Content::Text(t)) => Some(t.clone()),
            _ => None,
        })
        .collect()
}

fn last_text(t: &Task) -> String {
    t.status_message
        .as_ref()
        .map(Message::text)
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_turn_sends_the_input_with_the_tasks_own_message_id() {
    let fake = Fake::new(vec![Answer::Events(vec![
        task_event("up-1", "TASK_STATE_WORKING"),
        status_event("up-1", "TASK_STATE_COMPLETED", "done upstream"),
    ])]);
    let env = Env::start(&fake, Arc::new(MemoryStore::new()));
    let t = env.create("hello upstream").await;
    let t = env.until(&t, |t| t.state.is_terminal()).await;
    assert_eq!(t.state, TaskState::Completed, "{t:?}");
    assert_eq!(last_text(&t), "done upstream");
    let sent = fake.sent();
    assert_eq!(sent.len(), 1);
    let m = sent[0].message.as_ref().expect("a message");
    assert_eq!(text_of(m), "hello upstream");
    assert_eq!(
        m.message_id,
        taskwire_bridge::upstream::a2a::upstream_message_id(t.id.as_str(), 1)
    );
    assert!(m.task_id.is_empty(), "a first send names no upstream task");
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_that_never_reached_the_upstream_is_sent_again_with_the_same_id() {
    let fake = Fake::new(vec![
        Answer::Fail(ClientError::Connect("refused".into())),
        Answer::Events(vec![status_event(
            "up-2",
            "TASK_STATE_COMPLETED",
            "second time lucky",
        )]),
    ]);
    let env = Env::start(&fake, Arc::new(MemoryStore::new()));
    let t = env.create("again").await;
    let t = env.until(&t, |t| t.state.is_terminal()).await;
    assert_eq!(t.state, TaskState::Completed, "{t:?}");
    let sent = fake.sent();
    assert_eq!(sent.len(), 2, "sent once more after the refused connection");
    let ids: Vec<_> = sent
        .iter()
        .map(|r| r.message.as_ref().map(|m| m.message_id.clone()))
        .collect();
    assert_eq!(
        ids[0], ids[1],
        "the same message, so the upstream can deduplicate"
    );
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_refusal_fails_the_task_with_the_upstreams_words_and_is_not_sent_again() {
    let refusal = ClientError::Rpc(
        RpcError::from_json(
            &json!({"code": -32602, "message": "the skill wants a number"}),
            Some(200),
        )
        .expect("an error object"),
    );
    let fake = Fake::new(vec![Answer::Fail(refusal)]);
    let env = Env::start(&fake, Arc::new(MemoryStore::new()));
    let t = env.create("seven").await;
    let t = env.until(&t, |t| t.state.is_terminal()).await;
    assert_eq!(t.state, TaskState::Failed, "{t:?}");
    let said = last_text(&t);
    assert!(
        said.contains("the upstream refused SendStreamingMessage")
            && said.contains("the skill wants a number"),
        "{said}"
    );
    assert_eq!(
        fake.sent().len(),
        1,
        "a refusal is an answer: never sent again"
    );
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_upstream_fails_the_task_saying_so_without_its_address() {
    let fake = Fake::new(
        (0..10)
            .map(|_| Answer::Fail(ClientError::Connect("tcp 10.1.2.3:443 refused".into())))
            .collect(),
    );
    let env = Env::start(&fake, Arc::new(MemoryStore::new()));
    let t = env.create("anyone there").await;
    let t = env.until(&t, |t| t.state.is_terminal()).await;
    assert_eq!(t.state, TaskState::Failed, "{t:?}");
    let said = last_text(&t);
    assert!(said.contains("could not be reached"), "{said}");
    assert!(
        !said.contains("10.1.2.3"),
        "no address reaches the caller: {said}"
    );
    assert!(fake.sent().len() > 1, "sent again while the backoff allows");
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_continues_the_same_upstream_task() {
    let fake = Fake::new(vec![
        Answer::Events(vec![
            task_event("up-3", "TASK_STATE_WORKING"),
            status_event("up-3", "TASK_STATE_INPUT_REQUIRED", "which colour?"),
        ]),
        Answer::Events(vec![status_event(
            "up-3",
            "TASK_STATE_COMPLETED",
            "blue it is",
        )]),
    ]);
    let env = Env::start(&fake, Arc::new(MemoryStore::new()));
    let t = env.create("paint it").await;
    let t = env.until(&t, |t| t.state.is_interrupted()).await;
    assert_eq!(t.state, TaskState::InputRequired, "{t:?}");
    assert_eq!(last_text(&t), "which colour?");
    env.svc
        .send_input(&alice(), &t.id, Message::user_text("blue"))
        .await
        .expect("answer");
    let t = env.until(&t, |t| t.state.is_terminal()).await;
    assert_eq!(t.state, TaskState::Completed, "{t:?}");
    let sent = fake.sent();
    assert_eq!(sent.len(), 2);
    let second = sent[1].message.as_ref().expect("a message");
    assert_eq!(text_of(second), "blue");
    assert_eq!(
        second.task_id, "up-3",
        "the answer goes to the same upstream task"
    );
    assert_eq!(second.context_id, "ctx-up");
    assert_ne!(
        second.message_id,
        sent[0]
            .message
            .as_ref()
            .map(|m| m.message_id.clone())
            .unwrap_or_default(),
        "each turn sends a message of its own"
    );
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_run_again_after_its_worker_stopped_reattaches_from_its_cursor() {
    let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::new());
    // The first run: the upstream task is named, then the stream goes quiet
    // (the upstream works on) until the worker stops.
    let fake = Fake::new(vec![Answer::EventsThenHang(vec![
        task_event("up-4", "TASK_STATE_WORKING"),
        status_event("up-4", "TASK_STATE_WORKING", "halfway"),
    ])]);
    fake.on_resubscribe(Answer::Events(vec![status_event(
        "up-4",
        "TASK_STATE_COMPLETED",
        "finished while you were away",
    )]));
    let env = Env::start(&fake, store.clone());
    let t = env.create("long job").await;
    // Wait until the link is committed (the turn's progress shows).
    let t = env
        .until(&t, |t| last_text(t) == "halfway" || t.state.is_terminal())
        .await;
    assert_eq!(t.state, TaskState::Working, "{t:?}");
    env.stop().await;
    // Another worker takes the task up once the lease runs out.
    let env = Env::start(&fake, store);
    let t = env.until(&t, |t| t.state.is_terminal()).await;
    assert_eq!(t.state, TaskState::Completed, "{t:?}");
    assert_eq!(last_text(&t), "finished while you were away");
    assert_eq!(fake.sent().len(), 1, "a re-run sends nothing again");
    let resubscribed = fake.resubscribed.lock().expect("lock").clone();
    assert_eq!(resubscribed.len(), 1, "{resubscribed:?}");
    assert_eq!(resubscribed[0].0, "up-4");
    assert_eq!(
        resubscribed[0].1.as_deref(),
        Some("e1"),
        "resumed after the last event whose outputs were committed"
    );
    env.stop().await;
}

//! HTTP handlers: run, replay, reconnect, cancel.

use std::collections::{BTreeMap, HashSet};
use std::convert::Infallible;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use futures::StreamExt;
use serde_json::{json, Map, Value};
use taskwire_core::event::{Event as CoreEvent, EventKind};
use taskwire_core::store::ListQuery;
use taskwire_core::types::InputResponse;
use taskwire_core::{
    Access, Agent, Caller, CoreError, CreateTask, Message, Role, Task, TaskId, TaskService,
};
use taskwire_vocab::agui::{
    self as vocab, codes, AuthResume, InterruptKind, InterruptRef, ResumeStatus,
};
use tokio::sync::mpsc;
use tracing::debug;

use crate::render::{frames_at, Frame, Pos, Renderer, Resumer, RunSpec};
use crate::runs::{RunKey, RunRecord, Runs, RunsError};
use crate::wire::{Event, EventBody, InputMessage, RunAgentInput, SnapshotMessage};
use crate::{sse, AguiConfig, AguiError};

/// Path of the run endpoint.
pub(crate) const PATH_RUN: &str = "/agui";
/// Path of a thread's replay.
pub(crate) const PATH_THREAD: &str = "/agui/threads/{thread_id}";
/// Path of a run's stream (reconnect).
pub(crate) const PATH_RUN_EVENTS: &str = "/agui/threads/{thread_id}/runs/{run_id}/events";
/// Path of a run's cancellation.
pub(crate) const PATH_RUN_CANCEL: &str = "/agui/threads/{thread_id}/runs/{run_id}/cancel";
/// The reconnect header.
const LAST_EVENT_ID: &str = "last-event-id";
/// Page size when reading a whole log.
const PAGE: usize = 1000;
/// Most tasks a thread replay or lookup reads.
const MAX_THREAD_TASKS: usize = 1000;

pub(crate) struct Inner {
    service: TaskService,
    _agent: Arc<dyn Agent>,
    runs: Runs,
    max_body_bytes: usize,
}

impl Inner {
    pub(crate) fn new(service: TaskService, agent: Arc<dyn Agent>, config: AguiConfig) -> Self {
        Self {
            runs: Runs::new(service.clone(), config.max_runs_per_principal),
            service,
            _agent: agent,
            max_body_bytes: config.max_body_bytes,
        }
    }
}

type Shared = Arc<Inner>;

pub(crate) fn routes(inner: Shared) -> Router {
    Router::new()
        .route(PATH_RUN, post(run))
        .route(PATH_THREAD, get(replay))
        .route(PATH_RUN_EVENTS, get(reconnect))
        .route(PATH_RUN_CANCEL, post(cancel))
        .with_state(inner)
}

/// A refusal before a run starts: `RUN_ERROR` as the only event of the stream.
#[derive(Debug)]
struct Refusal {
    code: &'static str,
    message: String,
}

impl Refusal {
    fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

impl From<CoreError> for Refusal {
    fn from(e: CoreError) -> Self {
        let (code, message) = vocab::core_error(&e);
        Self { code, message }
    }
}

impl From<taskwire_vocab::VocabError> for Refusal {
    fn from(e: taskwire_vocab::VocabError) -> Self {
        Self::new(codes::INVALID_INPUT, e.to_string())
    }
}

impl From<AguiError> for Refusal {
    fn from(e: AguiError) -> Self {
        let code = match e {
            AguiError::BodyTooLarge { .. } => codes::TOO_LARGE,
            AguiError::BodyUnreadable
            | AguiError::UnsupportedMediaType { .. }
            | AguiError::InvalidInput(_) => codes::INVALID_INPUT,
            AguiError::Encode(_) | AguiError::Frame(_) | AguiError::Decode(_) => codes::INTERNAL,
        };
        Self::new(code, e.to_string())
    }
}

/// Reads the posted `RunAgentInput`: the content type first (JSON only: protobuf
/// is an output framing), then the body within `limit` bytes (a declared length
/// over it is refused before reading; see [`taskwire_wire::body`]), then the JSON, whose errors name the field.
async fn read_input(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
) -> Result<RunAgentInput, AguiError> {
    let ct = headers.get(header::CONTENT_TYPE);
    let base = ct
        .and_then(|v| v.to_str().ok())
        .map(|ct| ct.split(';').next().unwrap_or("").trim());
    if !base.is_some_and(is_json_media_type) {
        let found = match (ct, base) {
            (None, _) => "none".to_string(),
            (Some(_), Some(b)) if b.eq_ignore_ascii_case(crate::proto::MEDIA_TYPE) => {
                format!("{b} (protobuf frames are an output format; post the input as JSON)")
            }
            (Some(_), Some(b)) if !b.is_empty() => format!("{b:?}"),
            (Some(_), _) => "an unreadable content type".to_string(),
        };
        return Err(AguiError::UnsupportedMediaType { found });
    }
    let bytes = match taskwire_wire::body::read_body(headers, body, limit).await {
        Ok(b) => b,
        Err(taskwire_wire::WireError::BodyTooLarge { .. }) => {
            return Err(AguiError::BodyTooLarge { limit })
        }
        Err(e) => {
            debug!(error = %e, "AG-UI: request body could not be read");
            return Err(AguiError::BodyUnreadable);
        }
    };
    let de = &mut serde_json::Deserializer::from_slice(&bytes);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        // `.` is the whole document, `?` a place serde could not name (a syntax error).
        AguiError::InvalidInput(if path == "." || path == "?" {
            inner.to_string()
        } else {
            format!("{path}: {inner}")
        })
    })
}

/// `application/json` or a `+json` type, in any case.
fn is_json_media_type(base: &str) -> bool {
    base.eq_ignore_ascii_case("application/json")
        || base
            .len()
            .checked_sub(5)
            .and_then(|i| base.get(i..))
            .is_some_and(|end| end.eq_ignore_ascii_case("+json"))
}

/// The error answer of the plain HTTP endpoints (replay, reconnect, cancel):
/// `{"code", "message"}` as JSON, the fields of a `RUN_ERROR`.
/// A 503 says when to retry (`Retry-After`).
fn error_json(status: StatusCode, code: &str, message: impl Into<String>) -> Response {
    let mut res = (
        status,
        Json(crate::wire::HttpError {
            code: code.to_string(),
            message: message.into(),
        }),
    )
        .into_response();
    if status == StatusCode::SERVICE_UNAVAILABLE {
        res.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    res
}

/// [`error_json`] of a core error.
fn core_error_json(e: &CoreError) -> Response {
    let (code, message) = vocab::core_error(e);
    error_json(http_status(e), code, message)
}

/// 404 `not_found`.
fn not_found(what: &str) -> Response {
    error_json(
        StatusCode::NOT_FOUND,
        codes::NOT_FOUND,
        format!("{what} not found"),
    )
}

/// The path parameters; `None` (answered `not_found`) for a path that does not
/// decode (say, a percent-escape that is not UTF-8): it names no thread or run of
/// this server.
fn path<T>(r: Result<Path<T>, PathRejection>) -> Option<T> {
    r.map(|Path(v)| v)
        .inspect_err(|e| debug!(error = %e, "AG-UI: path parameters do not decode"))
        .ok()
}

/// What a run streams: a task's log after a sequence number.
struct Plan {
    task: Task,
    after_seq: u64,
    parent_run_id: Option<String>,
    prior_messages: Vec<SnapshotMessage>,
}

/// The framing a response uses, chosen by `Accept`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Sse,
    Proto,
}

impl Format {
    fn from_headers(h: &HeaderMap) -> Self {
        let accept = h.get(header::ACCEPT).and_then(|v| v.to_str().ok());
        if crate::proto::prefers_proto(accept) {
            Format::Proto
        } else {
            Format::Sse
        }
    }

    fn media_type(self) -> &'static str {
        match self {
            Format::Sse => sse::MEDIA_TYPE,
            Format::Proto => crate::proto::MEDIA_TYPE,
        }
    }

    /// One frame; the id only exists in SSE.
    fn encode(self, id: Option<&str>, e: &Event) -> Option<Vec<u8>> {
        match self {
            Format::Sse => sse::encode(id, e).ok().map(String::into_bytes),
            Format::Proto => Some(crate::proto::encode_frame(e)),
        }
    }

    fn response(self, body: Body) -> Response {
        let mut resp = Response::new(body);
        let h = resp.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(self.media_type()),
        );
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        resp
    }
}

fn stream_response(format: Format, rx: mpsc::Receiver<Vec<u8>>) -> Response {
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|s| (Ok::<Bytes, Infallible>(Bytes::from(s)), rx))
    });
    format.response(Body::from_stream(stream))
}

fn refusal_response(format: Format, r: Refusal) -> Response {
    let e = Event::at(
        EventBody::RunError {
            message: r.message,
            code: Some(r.code.to_string()),
        },
        chrono::Utc::now().timestamp_millis(),
    );
    match format.encode(None, &e) {
        Some(b) => format.response(Body::from(b)),
        None => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

fn run_key(caller: &Caller, thread_id: &str, run_id: &str) -> RunKey {
    RunKey {
        tenant: caller.tenant.clone(),
        owner: caller.principal.clone(),
        thread_id: thread_id.to_string(),
        run_id: run_id.to_string(),
    }
}

/// `POST /agui`. The request is taken whole and its body read here, so that every
/// refusal, a malformed or oversized body included, is a lone `RUN_ERROR` in the
/// framing the client asked for (see [`read_input`]).
async fn run(
    State(inner): State<Shared>,
    Extension(caller): Extension<Caller>,
    req: Request,
) -> Response {
    let (parts, body) = req.into_parts();
    let format = Format::from_headers(&parts.headers);
    let input = match read_input(&parts.headers, body, inner.max_body_bytes).await {
        Ok(i) => i,
        Err(e) => return refusal_response(format, Refusal::from(e)),
    };
    if input.thread_id.is_empty() || input.run_id.is_empty() {
        return refusal_response(
            format,
            Refusal::new(codes::INVALID_INPUT, "threadId and runId must not be empty"),
        );
    }
    let key = run_key(&caller, &input.thread_id, &input.run_id);
    let plan = match inner.runs.get(&key).await {
        // The same run posted again (a retry): its stream again, nothing new applied.
        Some(rec) => match get_task(&inner.service, &caller, &rec.task_id).await {
            Ok(task) => {
                let prior = prior_messages(&inner, &caller, &input.thread_id, &task).await;
                Ok(Plan {
                    task,
                    after_seq: rec.after_seq,
                    parent_run_id: rec.parent_run_id,
                    prior_messages: prior,
                })
            }
            Err(e) => Err(Refusal::from(e)),
        },
        None => start_run(&inner, &caller, &input).await,
    };
    let plan = match plan {
        Ok(p) => p,
        Err(r) => return refusal_response(format, r),
    };
    let registered = inner
        .runs
        .insert(
            key,
            RunRecord {
                task_id: plan.task.id.to_string(),
                after_seq: plan.after_seq,
                parent_run_id: plan.parent_run_id.clone(),
                run_id: String::new(),
            },
        )
        .await;
    match registered {
        Ok(()) => {}
        Err(RunsError::OverQuota(max)) => {
            metrics::counter!("taskwire_quota_refusals_total", "resource" => "agui_run")
                .increment(1);
            return refusal_response(
                format,
                Refusal::new(
                    codes::QUOTA_EXCEEDED,
                    format!("at most {max} open runs per caller; wait for one to end"),
                ),
            );
        }
        Err(RunsError::Store(e)) => {
            return refusal_response(format, Refusal::from(CoreError::from(e)))
        }
    }
    let spec = RunSpec {
        thread_id: input.thread_id.clone(),
        run_id: input.run_id.clone(),
        parent_run_id: plan.parent_run_id,
        task_id: plan.task.id.to_string(),
        idle_lifespan_ms: plan.task.idle_lifespan_ms,
    };
    stream_run(
        inner,
        caller,
        spec,
        plan.prior_messages,
        plan.after_seq,
        None,
        format,
    )
}

/// Starts the streaming of a run on a spawned task; the response reads a channel.
fn stream_run(
    inner: Shared,
    caller: Caller,
    spec: RunSpec,
    prior: Vec<SnapshotMessage>,
    after_seq: u64,
    resume: Option<Pos>,
    format: Format,
) -> Response {
    let (tx, rx) = mpsc::channel::<Vec<u8>>(64);
    tokio::spawn(async move {
        let mut out = FrameSink {
            tx,
            resumer: resume.map(Resumer::new),
            format,
        };
        produce(
            &inner.service,
            &caller,
            spec,
            prior,
            after_seq,
            &mut out,
            resume.is_none(),
        )
        .await;
    });
    stream_response(format, rx)
}

struct FrameSink {
    tx: mpsc::Sender<Vec<u8>>,
    resumer: Option<Resumer>,
    format: Format,
}

impl FrameSink {
    /// Sends frames; false once the client is gone.
    async fn send(&mut self, frames: Vec<Frame>) -> bool {
        for f in frames {
            let fs = match &mut self.resumer {
                Some(r) => r.push(f),
                None => vec![f],
            };
            for f in fs {
                let Some(s) = self.format.encode(Some(&f.pos.to_string()), &f.event) else {
                    return false;
                };
                if self.tx.send(s).await.is_err() {
                    return false;
                }
            }
        }
        true
    }
}

/// Renders a run from the task's log, live, into the sink.
async fn produce(
    service: &TaskService,
    caller: &Caller,
    spec: RunSpec,
    prior: Vec<SnapshotMessage>,
    after_seq: u64,
    out: &mut FrameSink,
    fresh: bool,
) {
    let task_id = spec.task_id.clone();
    let mut r = Renderer::new(spec, prior);
    let mut begun = false;
    let now = || chrono::Utc::now().timestamp_millis();
    let sub = match TaskId::parse(&task_id) {
        Ok(id) => service.subscribe(Access::Owner(caller), &id, 0).await,
        Err(_) => Err(CoreError::NotFound),
    };
    let mut sub = match sub {
        Ok(s) => s,
        Err(e) => {
            let (code, message) = vocab::core_error(&e);
            let ev = Event::at(
                EventBody::RunError {
                    message,
                    code: Some(code.to_string()),
                },
                now(),
            );
            out.send(frames_at(after_seq, 0, vec![ev])).await;
            return;
        }
    };
    while let Some(item) = sub.next().await {
        match item {
            Ok(e) => {
                if e.seq <= after_seq {
                    r.fold(&e);
                    continue;
                }
                let mut frames = Vec::new();
                if !begun {
                    begun = true;
                    frames.extend(frames_at(after_seq, 0, r.begin(e.at.timestamp_millis())));
                }
                frames.extend(frames_at(e.seq, 1, r.render(&e)));
                if !out.send(frames).await {
                    debug!(task = %task_id, "AG-UI client went away");
                    return;
                }
                if r.is_closed() {
                    return;
                }
            }
            Err(err) => {
                debug!(task = %task_id, error = %err, "AG-UI stream: log read failed");
                let mut frames = Vec::new();
                if !begun {
                    frames.extend(frames_at(after_seq, 0, r.begin(now())));
                }
                frames.extend(frames_at(
                    u64::MAX,
                    0,
                    r.abort("the event log could not be read", now()),
                ));
                out.send(frames).await;
                return;
            }
        }
    }
    // The log ended without closing the run (the task was deleted).
    if begun {
        out.send(frames_at(u64::MAX, 0, r.abort("the task is gone", now())))
            .await;
    } else if fresh {
        let frames = vec![Event::at(
            EventBody::RunError {
                message: "the run produced no events".into(),
                code: Some(codes::NOT_FOUND.to_string()),
            },
            now(),
        )];
        out.send(frames_at(after_seq, 0, frames)).await;
    }
}

async fn get_task(service: &TaskService, caller: &Caller, id: &str) -> Result<Task, CoreError> {
    let id = TaskId::parse(id).map_err(|_| CoreError::NotFound)?;
    service.get(caller, &id).await
}

/// The caller's tasks of a thread, oldest first.
async fn thread_tasks(
    service: &TaskService,
    caller: &Caller,
    thread_id: &str,
) -> Result<Vec<Task>, CoreError> {
    let mut tasks = Vec::new();
    let mut cursor = None;
    loop {
        let page = service
            .list(caller, {
                let mut q = ListQuery::default();
                q.context_id = Some(thread_id.to_string());
                q.page_size = 200;
                q.cursor = cursor;
                q
            })
            .await?;
        tasks.extend(page.tasks);
        match page.next_cursor {
            Some(c) if tasks.len() < MAX_THREAD_TASKS => cursor = Some(c),
            _ => break,
        }
    }
    tasks.sort_by(|a, b| {
        a.created_at
            .cmp(&b.created_at)
            .then(a.id.to_string().cmp(&b.id.to_string()))
    });
    Ok(tasks)
}

async fn all_events(
    service: &TaskService,
    caller: &Caller,
    id: &TaskId,
) -> Result<Vec<CoreEvent>, CoreError> {
    let mut out: Vec<CoreEvent> = Vec::new();
    loop {
        let after = out.last().map_or(0, |e| e.seq);
        let page = service.events(caller, id, after, PAGE).await?;
        let n = page.len();
        out.extend(page);
        if n < PAGE {
            return Ok(out);
        }
    }
}

/// The snapshot messages of the thread's tasks created before `task`.
async fn prior_messages(
    inner: &Inner,
    caller: &Caller,
    thread_id: &str,
    task: &Task,
) -> Vec<SnapshotMessage> {
    let Ok(tasks) = thread_tasks(&inner.service, caller, thread_id).await else {
        return Vec::new();
    };
    prior_messages_of(inner, caller, thread_id, task, &tasks).await
}

/// [`prior_messages`] from a list of the thread's tasks, oldest first.
async fn prior_messages_of(
    inner: &Inner,
    caller: &Caller,
    thread_id: &str,
    task: &Task,
    tasks: &[Task],
) -> Vec<SnapshotMessage> {
    let mut prior = Vec::new();
    for t in tasks.iter().take_while(|t| t.id != task.id) {
        let Ok(events) = all_events(&inner.service, caller, &t.id).await else {
            continue;
        };
        let mut r = Renderer::new(spec_for(thread_id, t, String::new()), Vec::new());
        for e in &events {
            r.fold(e);
        }
        prior.extend(r.thread_messages());
    }
    prior
}

fn spec_for(thread_id: &str, t: &Task, run_id: String) -> RunSpec {
    RunSpec {
        thread_id: thread_id.to_string(),
        run_id,
        parent_run_id: None,
        task_id: t.id.to_string(),
        idle_lifespan_ms: t.idle_lifespan_ms,
    }
}

fn to_core_message(m: &InputMessage, input: &RunAgentInput) -> Result<Message, Refusal> {
    let content = m
        .content
        .as_ref()
        .ok_or_else(|| Refusal::new(codes::INVALID_INPUT, "a user message needs content"))?;
    let parts = vocab::user_parts(content)?;
    let mut metadata = Map::new();
    metadata.insert(
        "agui".into(),
        json!({"threadId": input.thread_id, "runId": input.run_id}),
    );
    Ok(Message {
        message_id: m.id.clone(),
        role: Role::User,
        parts,
        metadata,
        received_at: None,
        committed_at: None,
    })
}

/// Decides what a posted run does, applies it, and says what to stream.
async fn start_run(inner: &Inner, caller: &Caller, input: &RunAgentInput) -> Result<Plan, Refusal> {
    let svc = &inner.service;
    let tasks = thread_tasks(svc, caller, &input.thread_id).await?;
    let known: HashSet<&str> = tasks
        .iter()
        .flat_map(|t| t.history.iter().map(|m| m.message_id.as_str()))
        .collect();
    let new_user: Vec<&InputMessage> = input
        .messages
        .iter()
        .filter(|m| m.role == crate::wire::role::USER && !known.contains(m.id.as_str()))
        .collect();
    let latest = tasks.last();
    let resume = input.resume.as_deref().unwrap_or_default();

    if !resume.is_empty() {
        let mut plan = apply_resume(inner, caller, input, &tasks, resume).await?;
        // New messages sent along with a resume are queued for the next turn.
        for m in new_user {
            svc.send_input(caller, &plan.task.id, to_core_message(m, input)?)
                .await?;
        }
        plan.prior_messages = prior_messages(inner, caller, &input.thread_id, &plan.task).await;
        return Ok(plan);
    }

    if let Some(t) = latest {
        if t.state.is_interrupted() {
            return Err(Refusal::new(
                codes::INTERRUPT_PENDING,
                "the thread has open interrupts: answer them with resume",
            ));
        }
    }
    let Some((first, rest)) = new_user.split_first() else {
        return Err(Refusal::new(
            codes::NO_NEW_INPUT,
            "the input carries no new user message and no resume",
        ));
    };
    let (task, after_seq) = match latest {
        Some(t) if !t.state.is_terminal() => {
            // The latest task is still running: the message is its next turn.
            let after = t.last_seq;
            let task = svc
                .send_input(caller, &t.id, to_core_message(first, input)?)
                .await?;
            (task, after)
        }
        _ => {
            let mut req = CreateTask::new(to_core_message(first, input)?);
            req.context_id = Some(input.thread_id.clone());
            let created = svc.create(caller, req).await?;
            if created.task.context_id != input.thread_id {
                // Create is idempotent on the message id, across contexts.
                return Err(Refusal::new(
                    codes::INVALID_INPUT,
                    format!(
                        "message {} already started a task in another thread",
                        first.id
                    ),
                ));
            }
            (std::sync::Arc::unwrap_or_clone(created.task), 0)
        }
    };
    for m in rest {
        svc.send_input(caller, &task.id, to_core_message(m, input)?)
            .await?;
    }
    let parent_run_id = input
        .parent_run_id
        .clone()
        .or(inner.runs.last_of_task(&task.id.to_string()).await);
    let prior_messages = prior_messages_of(inner, caller, &input.thread_id, &task, &tasks).await;
    Ok(Plan {
        task,
        after_seq,
        parent_run_id,
        prior_messages,
    })
}

/// A resume entry, checked against the thread.
enum Step {
    /// Answers an open interrupt.
    Apply(InterruptRef, ResumeStatus, Option<Value>),
    /// Repeats an answer already applied identically: where it was applied.
    Repeat(InterruptRef),
}

fn classify(
    t: &Task,
    r: &InterruptRef,
    status: ResumeStatus,
    payload: Option<&Value>,
) -> Result<bool, Refusal> {
    // Ok(true): open, apply; Ok(false): identical repeat.
    let expired = || {
        Refusal::new(
            codes::INTERRUPT_EXPIRED,
            format!("interrupt {} is no longer open", r.id()),
        )
    };
    let conflict = || {
        Refusal::new(
            codes::RESUME_CONFLICT,
            format!("interrupt {} was already answered differently", r.id()),
        )
    };
    let unknown = || {
        Refusal::new(
            codes::INTERRUPT_UNKNOWN,
            format!("interrupt {} is not an interrupt of this thread", r.id()),
        )
    };
    match &r.kind {
        InterruptKind::Input(key) => {
            if t.input_requests.contains_key(key) {
                // Validate the payload now, so a bad one refuses the whole resume.
                vocab::input_response(status, payload)?;
                return Ok(true);
            }
            if t.answered_keys.contains(key) {
                let (want, _) = vocab::input_response(status, payload)?;
                return match t.input_answers.get(key) {
                    Some(have) if same_answer(have, &want) => Ok(false),
                    _ => Err(conflict()),
                };
            }
            if t.superseded_keys.contains(key) || t.state.is_terminal() {
                return Err(expired());
            }
            Err(unknown())
        }
        InterruptKind::Auth(p) => {
            if t.pending_auth.iter().any(|a| &a.provider == p) {
                return Ok(true);
            }
            if t.granted_providers.contains(p) {
                return if status == ResumeStatus::Resolved {
                    Ok(false)
                } else {
                    Err(conflict())
                };
            }
            if t.state.is_terminal() {
                return Err(expired());
            }
            Err(unknown())
        }
        InterruptKind::Review(id) => {
            if t.pending_reviews.iter().any(|rv| &rv.id == id) {
                return Ok(true);
            }
            if let Some(d) = t.review_decisions.get(id) {
                return if *d == vocab::review_decision(status, payload) {
                    Ok(false)
                } else {
                    Err(conflict())
                };
            }
            if t.state.is_terminal() {
                return Err(expired());
            }
            Err(unknown())
        }
    }
}

fn same_answer(a: &InputResponse, b: &InputResponse) -> bool {
    a.action == b.action && a.content == b.content
}

async fn apply_resume(
    inner: &Inner,
    caller: &Caller,
    input: &RunAgentInput,
    tasks: &[Task],
    resume: &[crate::wire::ResumeEntry],
) -> Result<Plan, Refusal> {
    let svc = &inner.service;
    let mut steps = Vec::new();
    let mut seen = HashSet::new();
    let mut target: Option<&Task> = None;
    for entry in resume {
        if !seen.insert(entry.interrupt_id.as_str()) {
            return Err(Refusal::new(
                codes::INVALID_INPUT,
                format!("interrupt {} is resumed twice", entry.interrupt_id),
            ));
        }
        let r = InterruptRef::parse(&entry.interrupt_id).map_err(|_| {
            Refusal::new(
                codes::INTERRUPT_UNKNOWN,
                format!(
                    "{} is not an interrupt id of this server",
                    entry.interrupt_id
                ),
            )
        })?;
        let status = vocab::resume_status(&entry.status)?;
        let Some(t) = tasks.iter().find(|t| t.id.to_string() == r.task_id) else {
            return Err(Refusal::new(
                codes::INTERRUPT_UNKNOWN,
                format!(
                    "interrupt {} is not an interrupt of this thread",
                    entry.interrupt_id
                ),
            ));
        };
        match target {
            Some(x) if x.id != t.id => {
                return Err(Refusal::new(
                    codes::INVALID_INPUT,
                    "a resume answers the interrupts of one run",
                ))
            }
            _ => target = Some(t),
        }
        steps.push(if classify(t, &r, status, entry.payload.as_ref())? {
            Step::Apply(r, status, entry.payload.clone())
        } else {
            Step::Repeat(r)
        });
    }
    let Some(task) = target else {
        return Err(Refusal::new(codes::INVALID_INPUT, "empty resume"));
    };
    let applies: Vec<&Step> = steps
        .iter()
        .filter(|s| matches!(s, Step::Apply(..)))
        .collect();

    if applies.is_empty() {
        // An identical resume repeated: the stream of what the first one started.
        let events = all_events(svc, caller, &task.id).await?;
        let mut first = u64::MAX;
        for s in &steps {
            if let Step::Repeat(r) = s {
                if let Some(seq) = answer_seq(&events, &r.kind) {
                    first = first.min(seq);
                }
            }
        }
        if first == u64::MAX {
            return Err(Refusal::new(
                codes::INTERRUPT_EXPIRED,
                "the resumed run is no longer available",
            ));
        }
        return Ok(Plan {
            task: task.clone(),
            after_seq: first - 1,
            parent_run_id: input
                .parent_run_id
                .clone()
                .or(inner.runs.last_of_task(&task.id.to_string()).await),
            prior_messages: Vec::new(),
        });
    }

    // Every open interrupt of the task must be covered.
    let covered: HashSet<String> = steps
        .iter()
        .map(|s| match s {
            Step::Apply(r, ..) | Step::Repeat(r) => r.id(),
        })
        .collect();
    let tid = task.id.to_string();
    let mk = |kind| {
        InterruptRef {
            task_id: tid.clone(),
            kind,
        }
        .id()
    };
    let open: Vec<String> = task
        .input_requests
        .keys()
        .map(|k| mk(InterruptKind::Input(k.clone())))
        .chain(
            task.pending_auth
                .iter()
                .map(|a| mk(InterruptKind::Auth(a.provider.clone()))),
        )
        .chain(
            task.pending_reviews
                .iter()
                .map(|r| mk(InterruptKind::Review(r.id.clone()))),
        )
        .collect();
    let missing: Vec<&String> = open.iter().filter(|i| !covered.contains(*i)).collect();
    if !missing.is_empty() {
        return Err(Refusal::new(
            codes::RESUME_INCOMPLETE,
            format!(
                "a resume must answer every open interrupt; missing: {}",
                missing
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }

    let parent_run_id = input
        .parent_run_id
        .clone()
        .or(inner.runs.last_of_task(&tid).await);
    let after_seq = task.last_seq;
    let id = task.id.clone();
    // A declined authorisation ends the task; nothing else applies.
    for s in &applies {
        if let Step::Apply(
            InterruptRef {
                kind: InterruptKind::Auth(_),
                ..
            },
            status,
            _,
        ) = s
        {
            if vocab::auth_resume(*status).0 == AuthResume::CancelTask {
                let task = svc
                    .cancel(
                        Access::Owner(caller),
                        &id,
                        Some("authorization declined".into()),
                    )
                    .await?;
                return Ok(Plan {
                    task,
                    after_seq,
                    parent_run_id,
                    prior_messages: Vec::new(),
                });
            }
        }
    }
    // Authorisations, then reviews, then inputs: each command settles the wait, and
    // this order never passes through another waiting state on the way.
    for s in &applies {
        if let Step::Apply(
            InterruptRef {
                kind: InterruptKind::Auth(p),
                ..
            },
            ..,
        ) = s
        {
            svc.grant_auth(Access::Owner(caller), &id, p).await?;
        }
    }
    for s in &applies {
        if let Step::Apply(
            InterruptRef {
                kind: InterruptKind::Review(rid),
                ..
            },
            status,
            payload,
        ) = s
        {
            let d = vocab::review_decision(*status, payload.as_ref());
            svc.decide_review(caller, &id, rid, d).await?;
        }
    }
    let mut answers = BTreeMap::new();
    for s in &applies {
        if let Step::Apply(
            InterruptRef {
                kind: InterruptKind::Input(k),
                ..
            },
            status,
            payload,
        ) = s
        {
            let (resp, _loss) = vocab::input_response(*status, payload.as_ref())?;
            answers.insert(k.clone(), resp);
        }
    }
    if !answers.is_empty() {
        svc.answer_inputs(caller, &id, answers).await?;
    }
    let task = svc.get(caller, &id).await?;
    Ok(Plan {
        task,
        after_seq,
        parent_run_id,
        prior_messages: Vec::new(),
    })
}

/// The sequence number of the event that applied an answer to an interrupt.
fn answer_seq(events: &[CoreEvent], kind: &InterruptKind) -> Option<u64> {
    events.iter().find_map(|e| {
        let hit = match (&e.kind, kind) {
            (EventKind::InputAnswered { keys }, InterruptKind::Input(k)) => keys.contains(k),
            (EventKind::AuthGranted { provider }, InterruptKind::Auth(p)) => provider == p,
            (EventKind::ReviewDecided { review_id, .. }, InterruptKind::Review(r)) => {
                review_id == r
            }
            _ => false,
        };
        hit.then_some(e.seq)
    })
}

async fn replay(
    State(inner): State<Shared>,
    Extension(caller): Extension<Caller>,
    thread_id: Result<Path<String>, PathRejection>,
    req: Request,
) -> Response {
    let Some(thread_id) = path(thread_id) else {
        return not_found("thread");
    };
    let format = Format::from_headers(req.headers());
    let tasks = match thread_tasks(&inner.service, &caller, &thread_id).await {
        Ok(t) if !t.is_empty() => t,
        Ok(_) => return not_found("thread"),
        Err(e) => return core_error_json(&e),
    };
    let mut events_out: Vec<Event> = Vec::new();
    let mut prior: Vec<SnapshotMessage> = Vec::new();
    for t in &tasks {
        let events = match all_events(&inner.service, &caller, &t.id).await {
            Ok(e) => e,
            Err(e) => return core_error_json(&e),
        };
        let tid = t.id.to_string();
        let known_runs = inner.runs.of_task(&tid).await;
        let mut r = Renderer::new(spec_for(&thread_id, t, String::new()), prior.clone());
        let mut seg_start = 0u64;
        let mut n = 0u32;
        let mut parent: Option<String> = None;
        for e in &events {
            let ends = matches!(&e.kind, EventKind::Status { to, .. } if to.is_terminal() || to.is_interrupted());
            if ends {
                n += 1;
                let run_id = crate::runs::run_in(&known_runs, seg_start, e.seq)
                    .unwrap_or_else(|| format!("{tid}.{n}"));
                r.set_run(run_id.clone(), parent.replace(run_id));
                seg_start = e.seq;
            }
            events_out.extend(r.restate(e));
        }
        prior = r.thread_messages();
    }
    let mut body = Vec::new();
    for (i, e) in events_out.iter().enumerate() {
        match format.encode(Some(&format!("replay.{i}")), e) {
            Some(b) => body.extend_from_slice(&b),
            None => {
                return error_json(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    codes::INTERNAL,
                    "an event could not be encoded",
                )
            }
        }
    }
    format.response(Body::from(body))
}

async fn reconnect(
    State(inner): State<Shared>,
    Extension(caller): Extension<Caller>,
    ids: Result<Path<(String, String)>, PathRejection>,
    req: Request,
) -> Response {
    let Some((thread_id, run_id)) = path(ids) else {
        return not_found("run");
    };
    let headers = req.headers();
    let Some(rec) = inner.runs.get(&run_key(&caller, &thread_id, &run_id)).await else {
        return not_found("run");
    };
    let last = match headers
        .get(LAST_EVENT_ID)
        .map(|v| v.to_str().ok().and_then(Pos::parse))
    {
        None => None,
        Some(Some(p)) => Some(p),
        Some(None) => {
            return error_json(
                StatusCode::BAD_REQUEST,
                codes::INVALID_INPUT,
                "Last-Event-ID is not an id of this stream",
            )
        }
    };
    let task = match get_task(&inner.service, &caller, &rec.task_id).await {
        Ok(t) => t,
        Err(CoreError::NotFound) => return not_found("run"),
        Err(e) => return core_error_json(&e),
    };
    let prior = prior_messages(&inner, &caller, &thread_id, &task).await;
    let spec = RunSpec {
        thread_id,
        run_id,
        parent_run_id: rec.parent_run_id.clone(),
        task_id: rec.task_id.clone(),
        idle_lifespan_ms: task.idle_lifespan_ms,
    };
    let format = Format::from_headers(headers);
    stream_run(inner, caller, spec, prior, rec.after_seq, last, format)
}

async fn cancel(
    State(inner): State<Shared>,
    Extension(caller): Extension<Caller>,
    ids: Result<Path<(String, String)>, PathRejection>,
) -> Response {
    let Some((thread_id, run_id)) = path(ids) else {
        return not_found("run");
    };
    let Some(rec) = inner.runs.get(&run_key(&caller, &thread_id, &run_id)).await else {
        return not_found("run");
    };
    let Ok(id) = TaskId::parse(&rec.task_id) else {
        return not_found("run");
    };
    match inner
        .service
        .cancel(
            Access::Owner(&caller),
            &id,
            Some("cancelled by the client".into()),
        )
        .await
    {
        Ok(t) => Json(crate::wire::CancelResult {
            task_id: t.id.to_string(),
            state: t.state.as_str().to_string(),
        })
        .into_response(),
        Err(CoreError::NotFound) => not_found("run"),
        Err(e) => core_error_json(&e),
    }
}

/// The HTTP status of a core error on the plain HTTP endpoints, from
/// `taskwire_vocab::agui::http_status`.
fn http_status(e: &CoreError) -> StatusCode {
    StatusCode::from_u16(vocab::http_status(e)).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

#[cfg(test)]
mod unavailable_tests {
    use super::*;

    /// On the plain HTTP endpoints a store that did not answer is 503
    /// `unavailable` with `Retry-After`; an internal failure stays 500.
    #[test]
    fn an_unavailable_store_is_503_with_retry_after() {
        let res = core_error_json(&CoreError::Unavailable("dsn".into()));
        assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(res.headers()[header::RETRY_AFTER], "1");
        let res = core_error_json(&CoreError::Store(taskwire_core::StoreError::Backend(
            "dsn".into(),
        )));
        assert_eq!(res.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert!(res.headers().get(header::RETRY_AFTER).is_none());
        let (code, message) = vocab::core_error(&CoreError::Unavailable("dsn".into()));
        assert_eq!(code, codes::UNAVAILABLE);
        assert!(!message.contains("dsn"));
    }
}

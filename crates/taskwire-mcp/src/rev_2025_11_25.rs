//! Revision 2025-11-25 (and older, without tasks): `initialize`, sessions with
//! `Mcp-Session-Id`, and the experimental tasks of SEP-1686.

use std::collections::{BTreeSet, HashMap};
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use taskwire_core::record::{PutOutcome, Quota, Record, RecordKind};
use taskwire_core::store::ListQuery;
use taskwire_core::{Caller, StoreError, Task, TaskId, TaskService, Timestamp};
use taskwire_vocab::mcp::{self as vocab, Answering, McpStatus, Revision};
use taskwire_wire::mcp as msg;

use crate::rev_2026_07_28::to_json;
use tokio::sync::{mpsc, oneshot};

use crate::error::RpcError;
use crate::ops::task_id_param;
use crate::wire::{self, code, header, method, Incoming};
use crate::{accepted, error_response, json_response, Inner};

/// One 2025-11-25 session.
pub(crate) struct Session {
    caller: Caller,
    version: String,
    /// The client capabilities it can be asked through (`elicitation`,
    /// `sampling`, `roots`), as declared at initialize.
    asks: BTreeSet<&'static str>,
    /// Server-to-client requests waiting for the client's response, by id (held
    /// by this process: the stream that sent them is here).
    pending: Mutex<HashMap<String, oneshot::Sender<Result<Value, Value>>>>,
    /// The blocking `tools/call`s of the session in progress in this process,
    /// by request id (its JSON text): the task a `notifications/cancelled`
    /// for that request cancels. One entry per open HTTP request, removed when
    /// the call ends.
    calls: Mutex<HashMap<String, TaskId>>,
    next_id: AtomicU64,
    /// When the stored session expires unless used (as this process last wrote it).
    expires: Mutex<Timestamp>,
}

impl Session {
    fn tasks(&self) -> bool {
        self.version == wire::V_2025_11_25
    }

    /// Notes that request `id` is a blocking call of `task`, until the
    /// returned guard is dropped.
    fn open_call(self: &Arc<Self>, id: &Value, task: &TaskId) -> OpenCall {
        let key = id.to_string();
        if let Ok(mut calls) = self.calls.lock() {
            calls.insert(key.clone(), task.clone());
        }
        OpenCall {
            session: self.clone(),
            key,
        }
    }

    /// The task of the blocking call with request id `id`, if it is open here.
    fn call_of(&self, id: &Value) -> Option<TaskId> {
        self.calls.lock().ok()?.get(&id.to_string()).cloned()
    }
}

/// A blocking call in progress (see [`Session::open_call`]).
struct OpenCall {
    session: Arc<Session>,
    key: String,
}

impl Drop for OpenCall {
    fn drop(&mut self) {
        if let Ok(mut calls) = self.session.calls.lock() {
            calls.remove(&self.key);
        }
    }
}

/// The refusal of `tasks/cancel` for a task that ended other than cancelled
/// (invalid params, as 2025-11-25 says), if it did.
fn not_cancelable(t: &taskwire_core::Task, raw: &str) -> Option<RpcError> {
    let (st, _) = vocab::status(t, Revision::V2025_11_25);
    (st.is_terminal() && st != McpStatus::Cancelled).then(|| {
        RpcError::invalid_params(format!(
            "cannot cancel task {raw}: it is already {}",
            st.as_str()
        ))
    })
}

/// `notifications/cancelled`: the client gives up request `requestId`; a
/// blocking `tools/call` of this session in progress here has its task
/// canceled (its stream or response then ends; the client ignores it). Other
/// requests finish on their own: they are short, or are tasks, canceled with
/// `tasks/cancel`.
async fn cancelled(inner: &Inner, caller: &Caller, session: &Session, params: &Map<String, Value>) {
    let Some(id) = params
        .get("requestId")
        .filter(|v| v.is_string() || v.is_number())
    else {
        return;
    };
    let Some(task) = session.call_of(id) else {
        tracing::debug!(request = %id, "mcp: notifications/cancelled for no blocking call open here");
        return;
    };
    let reason = params.get("reason").and_then(Value::as_str).map_or_else(
        || "the client cancelled the call".to_string(),
        |r| {
            format!(
                "the client cancelled the call: {}",
                r.chars().take(200).collect::<String>()
            )
        },
    );
    inner.abandon(caller, &task, &reason).await;
}

/// What a session's record holds.
#[derive(Serialize, Deserialize)]
struct SessionData {
    version: String,
    asks: Vec<String>,
}

const KIND: RecordKind = RecordKind::McpSession;

/// Why a session could not be opened.
pub(crate) enum OpenError {
    /// The caller holds `max` sessions already.
    OverQuota(usize),
    Store(StoreError),
}

/// The sessions: each is a record of the store ([`taskwire_core::record`], kind
/// `McpSession`), so a client keeps its session across a restart and on another
/// node sharing the store; it expires `idle` after its last use (the sweeper
/// deletes it) and each caller may hold `max_per_principal` at once. This process
/// caches the sessions it served, with their pending server-to-client requests.
pub(crate) struct Sessions {
    service: TaskService,
    max_per_principal: usize,
    idle: Duration,
    cache: Mutex<HashMap<String, Arc<Session>>>,
}

fn chrono_of(d: Duration) -> chrono::Duration {
    chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX)
}

impl Sessions {
    pub(crate) fn new(service: TaskService, max_per_principal: usize, idle: Duration) -> Self {
        Self {
            service,
            max_per_principal: max_per_principal.max(1),
            idle: idle.max(Duration::from_secs(1)),
            cache: Mutex::new(HashMap::new()),
        }
    }

    fn expiry(&self, now: Timestamp) -> Timestamp {
        now.checked_add_signed(chrono_of(self.idle))
            .unwrap_or(chrono::DateTime::<chrono::Utc>::MAX_UTC)
    }

    fn cache(&self) -> Option<std::sync::MutexGuard<'_, HashMap<String, Arc<Session>>>> {
        self.cache.lock().ok()
    }

    async fn insert(&self, s: Session) -> Result<String, OpenError> {
        let id = taskwire_core::ids::random_id();
        let now = Utc::now();
        let data = SessionData {
            version: s.version.clone(),
            asks: s.asks.iter().map(|a| a.to_string()).collect(),
        };
        let data = serde_json::to_value(&data)
            .map_err(|e| OpenError::Store(StoreError::Backend(e.to_string())))?;
        let rec = Record::new(KIND, &id, &s.caller.tenant, &s.caller.principal, data)
            .expiring(Some(self.expiry(now)));
        let quota = Quota {
            max: self.max_per_principal,
            now,
        };
        match self.service.store().put_record(rec, Some(quota)).await {
            Ok(PutOutcome::Stored { .. }) => {}
            Ok(PutOutcome::OverQuota { max }) => return Err(OpenError::OverQuota(max)),
            Err(e) => return Err(OpenError::Store(e)),
        }
        if let Ok(mut e) = s.expires.lock() {
            *e = self.expiry(now);
        }
        if let Some(mut c) = self.cache() {
            // Forget the sessions that expired (a bound on what is cached: live
            // sessions are bounded per caller by the store).
            c.retain(|_, v| v.expires.lock().map(|e| *e > now).unwrap_or(false));
            c.insert(id.clone(), Arc::new(s));
        }
        Ok(id)
    }

    /// The caller's session `id`, if it is stored and not expired; extends its
    /// life (writing the store at most once per half of the idle time).
    async fn get(&self, id: &str, caller: &Caller) -> Option<Arc<Session>> {
        let now = Utc::now();
        let store = self.service.store();
        let rec = match store.get_record(KIND, id).await {
            Ok(Some(r)) => r,
            Ok(None) => {
                if let Some(mut c) = self.cache() {
                    c.remove(id);
                }
                return None;
            }
            Err(e) => {
                tracing::warn!(error = %e, "mcp: reading a session failed");
                return None;
            }
        };
        if rec.tenant != caller.tenant || rec.owner != caller.principal || rec.expired(now) {
            return None;
        }
        let cached = self.cache().and_then(|c| c.get(id).cloned());
        let session = match cached {
            Some(s) => s,
            None => {
                // Opened by another node or before a restart.
                let data: SessionData = serde_json::from_value(rec.data.clone()).ok()?;
                let asks = ["elicitation", "sampling", "roots"]
                    .into_iter()
                    .filter(|a| data.asks.iter().any(|d| d == a))
                    .collect();
                let s = Arc::new(Session {
                    caller: caller.clone(),
                    version: data.version,
                    asks,
                    pending: Mutex::new(HashMap::new()),
                    calls: Mutex::new(HashMap::new()),
                    next_id: AtomicU64::new(1),
                    expires: Mutex::new(rec.expires_at.unwrap_or(now)),
                });
                if let Some(mut c) = self.cache() {
                    c.insert(id.to_string(), s.clone());
                }
                s
            }
        };
        let half = chrono_of(self.idle / 2);
        let stale = rec.expires_at.is_none_or(|e| e - now < half);
        if stale {
            let mut next = rec.clone();
            next.expires_at = Some(self.expiry(now));
            if store.update_record(&next, None).await.is_ok() {
                if let Ok(mut e) = session.expires.lock() {
                    *e = self.expiry(now);
                }
            }
        }
        Some(session)
    }

    /// Ends the caller's session; false if there is none.
    pub(crate) async fn remove(&self, id: &str, caller: &Caller) -> bool {
        let store = self.service.store();
        let mine = matches!(
            store.get_record(KIND, id).await,
            Ok(Some(r)) if r.tenant == caller.tenant && r.owner == caller.principal
        );
        if !mine {
            return false;
        }
        if let Some(mut c) = self.cache() {
            c.remove(id);
        }
        store.delete_record(KIND, id).await.unwrap_or(false)
    }
}

/// `initialize` without a session: opens one.
pub(crate) async fn initialize(inner: Arc<Inner>, caller: Caller, msg: Incoming) -> Response {
    let Incoming::Request { id, params, .. } = msg else {
        return accepted();
    };
    let Some(requested) = params.get("protocolVersion").and_then(Value::as_str) else {
        return error_response(
            &id,
            &RpcError::invalid_params("params.protocolVersion is required"),
        );
    };
    let version = if requested == wire::V_2025_11_25 || wire::V_OLDER.contains(&requested) {
        requested.to_string()
    } else {
        wire::V_2025_11_25.to_string()
    };
    let asks: BTreeSet<&'static str> = ["elicitation", "sampling", "roots"]
        .into_iter()
        .filter(|cap| {
            params
                .get("capabilities")
                .and_then(|c| c.get(*cap))
                .is_some_and(|v| !v.is_null())
        })
        .collect();
    let session = Session {
        caller,
        version: version.clone(),
        asks,
        pending: Mutex::new(HashMap::new()),
        calls: Mutex::new(HashMap::new()),
        next_id: AtomicU64::new(1),
        expires: Mutex::new(Utc::now()),
    };
    let tasks = session.tasks();
    let sid = match inner.sessions.insert(session).await {
        Ok(sid) => sid,
        Err(OpenError::OverQuota(max)) => {
            metrics::counter!("taskwire_quota_refusals_total", "resource" => "mcp_session")
                .increment(1);
            return error_response(
                &id,
                &RpcError::new(
                    code::INVALID_REQUEST,
                    format!(
                        "at most {max} open sessions per caller: end one (DELETE) or wait for one to expire"
                    ),
                )
                .with_status(StatusCode::TOO_MANY_REQUESTS),
            );
        }
        Err(OpenError::Store(e)) => {
            tracing::warn!(error = %e, "mcp: storing a session failed");
            return error_response(
                &id,
                &RpcError::internal("the session could not be stored; retry later")
                    .with_status(StatusCode::SERVICE_UNAVAILABLE),
            );
        }
    };
    let result = initialize_result(&inner, &version, tasks);
    let mut r = json_response(StatusCode::OK, &wire::result(&id, result));
    if let Ok(v) = HeaderValue::from_str(&sid) {
        r.headers_mut().insert(header::SESSION_ID, v);
    }
    r
}

pub(crate) fn initialize_result(inner: &Inner, version: &str, tasks: bool) -> Value {
    let capabilities = msg::ServerCapabilities2025_11_25 {
        tools: Some(msg::ListChanged {
            list_changed: Some(false),
        }),
        tasks: tasks.then(|| msg::TasksCapability2025_11_25 {
            list: Some(Map::new()),
            cancel: Some(Map::new()),
            requests: Some(msg::TaskRequests {
                tools: Some(msg::ToolTaskRequests {
                    call: Some(Map::new()),
                }),
            }),
        }),
        other: Map::new(),
    };
    let r = msg::InitializeResult {
        protocol_version: version.to_string(),
        capabilities,
        server_info: crate::rev_2026_07_28::server_info(inner),
        instructions: Some(inner.info.description.clone()),
    };
    to_json(&r).unwrap_or_else(|e| e.object())
}

/// A message in a session.
pub(crate) async fn handle(
    inner: Arc<Inner>,
    caller: Caller,
    headers: HeaderMap,
    sid: String,
    msg: Incoming,
) -> Response {
    let id_of = |m: &Incoming| match m {
        Incoming::Request { id, .. } => id.clone(),
        _ => Value::Null,
    };
    let Some(session) = inner.sessions.get(&sid, &caller).await else {
        return error_response(
            &id_of(&msg),
            &RpcError::new(
                code::SESSION_NOT_FOUND,
                "session not found: initialize again",
            )
            .with_status(StatusCode::NOT_FOUND),
        );
    };
    if let Some(v) = headers
        .get(header::PROTOCOL_VERSION)
        .and_then(|v| v.to_str().ok())
    {
        if v != session.version {
            return error_response(
                &id_of(&msg),
                &RpcError::bad_request(
                    code::INVALID_REQUEST,
                    format!(
                        "MCP-Protocol-Version {v} does not match the session's {}",
                        session.version
                    ),
                ),
            );
        }
    }
    let (id, name, params) = match msg {
        Incoming::Notification { method, params } => {
            if method == method::NOTIFY_CANCELLED {
                cancelled(&inner, &caller, &session, &params).await;
            }
            return accepted();
        }
        Incoming::Response { id, outcome } => {
            let key = id.to_string();
            let tx = session.pending.lock().ok().and_then(|mut p| p.remove(&key));
            if let Some(tx) = tx {
                let _ = tx.send(outcome);
            }
            return accepted();
        }
        Incoming::Request { id, method, params } => (id, method, params),
    };
    if name == method::TASKS_RESULT && session.tasks() {
        return tasks_result(inner, caller, session, id, params).await;
    }
    let as_task = session.tasks() && params.get("task").is_some();
    let progress_token = params
        .get("_meta")
        .and_then(|m| m.get("progressToken"))
        .filter(|t| t.is_string() || t.is_number())
        .cloned();
    if name == method::TOOLS_CALL
        && !as_task
        && (!session.asks.is_empty() || progress_token.is_some())
    {
        return blocking_call_stream(inner, caller, session, id, params, progress_token).await;
    }
    match dispatch(&inner, &caller, &session, &id, &name, &params).await {
        Ok(v) => json_response(StatusCode::OK, &wire::result(&id, v)),
        Err(e) => error_response(&id, &e),
    }
}

async fn dispatch(
    inner: &Inner,
    caller: &Caller,
    session: &Arc<Session>,
    id: &Value,
    name: &str,
    params: &Map<String, Value>,
) -> Result<Value, RpcError> {
    let poll = inner.config.poll_interval_ms;
    let tasks = session.tasks();
    match name {
        method::INITIALIZE => Err(RpcError::new(
            code::INVALID_REQUEST,
            "this session is already initialized",
        )),
        method::PING => Ok(json!({})),
        method::TOOLS_LIST => {
            let g = if tasks {
                Revision::V2025_11_25
            } else {
                Revision::V2026_07_28
            };
            to_json(&msg::ListToolsResult2025_11_25 {
                tools: inner
                    .info
                    .skills
                    .iter()
                    .map(|s| vocab::tool_of_skill(s, g))
                    .collect(),
                next_cursor: None,
            })
        }
        method::TOOLS_CALL => {
            let task_param = params.get("task").filter(|_| tasks);
            if let Some(tp) = task_param {
                let ttl = match tp.get("ttl") {
                    None | Some(Value::Null) => None,
                    Some(v) => Some(Duration::from_millis(v.as_u64().ok_or_else(|| {
                        RpcError::invalid_params(
                            "params.task.ttl must be a non-negative integer (ms)",
                        )
                    })?)),
                };
                let task = inner.start_call(caller, params, ttl).await?;
                return to_json(&msg::CreateTaskResult2025_11_25 {
                    task: vocab::rev_2025_11_25_task(&task, poll),
                    meta: None,
                });
            }
            blocking_call(inner, caller, session, id, params).await
        }
        method::TASKS_GET if tasks => {
            let t = inner.get(caller, task_id_param(params)?).await?;
            to_json(&vocab::rev_2025_11_25_task(&t, poll))
        }
        method::TASKS_CANCEL if tasks => {
            let raw = task_id_param(params)?;
            let t = inner.get(caller, raw).await?;
            if let Some(refused) = not_cancelable(&t, raw) {
                return Err(refused);
            }
            let t = match inner.cancel(caller, raw).await {
                Ok(t) => t,
                Err(e) => {
                    // It ended between the read and the cancel: the same
                    // refusal as when it had ended before.
                    if let Some(refused) = inner
                        .get(caller, raw)
                        .await
                        .ok()
                        .and_then(|t| not_cancelable(&t, raw))
                    {
                        return Err(refused);
                    }
                    return Err(e);
                }
            };
            to_json(&vocab::rev_2025_11_25_task(&t, poll))
        }
        method::TASKS_LIST if tasks => {
            let cursor = match params.get("cursor") {
                None | Some(Value::Null) => None,
                Some(Value::String(c)) => Some(c.clone()),
                Some(_) => return Err(RpcError::invalid_params("params.cursor must be a string")),
            };
            let mut q = ListQuery::default();
            q.page_size = 50;
            q.cursor = cursor;
            let page = inner.service.list(caller, q).await.map_err(|e| match e {
                taskwire_core::CoreError::InvalidInput { .. } => {
                    RpcError::invalid_params("invalid cursor: not one this server issued")
                }
                other => RpcError::from_core(other, None),
            })?;
            to_json(&msg::ListTasksResult2025_11_25 {
                tasks: page
                    .tasks
                    .iter()
                    .map(|t| vocab::rev_2025_11_25_task(t, poll))
                    .collect(),
                next_cursor: page.next_cursor,
            })
        }
        other => Err(RpcError::method_not_found(format!(
            "method not found: {other}{}",
            if tasks {
                ""
            } else {
                " (tasks need protocol version 2025-11-25)"
            }
        ))),
    }
}

async fn blocking_call(
    inner: &Inner,
    caller: &Caller,
    session: &Arc<Session>,
    id: &Value,
    params: &Map<String, Value>,
) -> Result<Value, RpcError> {
    let task = inner.start_call(caller, params, None).await?;
    let _open = session.open_call(id, &task.id);
    let timeout = inner.config.call_timeout;
    let t = inner.wait(caller, &task.id, timeout, true).await?;
    if t.state.is_interrupted() {
        inner
            .abandon(
                caller,
                &t.id,
                "the tool needs input and the call was not a task",
            )
            .await;
        return Err(RpcError::new(
            code::INVALID_REQUEST,
            "the tool asked for input: call it as a task (params.task) to answer through tasks/result",
        ));
    }
    if !t.state.is_terminal() {
        inner.abandon(caller, &t.id, "tools/call timed out").await;
        return Err(RpcError::internal(format!(
            "tools/call did not finish within {} ms and was cancelled; call it as a task (params.task) to wait longer",
            timeout.as_millis()
        )));
    }
    match vocab::answer(&t, Answering::ToolCall).0 {
        Ok(r) => to_json(&r),
        Err(e) => Err(RpcError::new(e.code, e.message)),
    }
}

/// The `_meta` relating a message to its task.
fn related(task: &Task) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(
        vocab::RELATED_TASK_META.into(),
        msg::to_value(&msg::RelatedTask {
            task_id: task.id.to_string(),
        }),
    );
    m
}

/// A `notifications/tasks/status` of the task.
fn status_notification(task: &Task, poll: u64) -> Value {
    let mut t = vocab::rev_2025_11_25_task(task, poll);
    t.meta = Some(related(task));
    match to_json(&t) {
        Ok(p) => wire::notification(method::NOTIFY_TASKS_STATUS, p),
        Err(e) => wire::notification(method::NOTIFY_TASKS_STATUS, e.object()),
    }
}

/// A typed answer as a JSON-RPC response (an error object or a result).
fn response<T: serde::Serialize>(id: &Value, r: Result<T, msg::ErrorObject>) -> Value {
    match r.map_err(|e| to_json(&e)).map(|r| to_json(&r)) {
        Ok(Ok(r)) => wire::result(id, r),
        Err(Ok(e)) => wire::error_object(id, e),
        Ok(Err(e)) | Err(Err(e)) => wire::error(id, &e),
    }
}

/// The params of a server request the task makes, with `_meta` when given.
fn request_params(req: msg::InputRequest, meta: Option<Map<String, Value>>) -> Value {
    let params = match req {
        msg::InputRequest::Elicit(mut p) => {
            if let Some(m) = meta {
                match &mut p {
                    msg::ElicitRequestParams::Form { meta, .. }
                    | msg::ElicitRequestParams::Url { meta, .. } => *meta = Some(m),
                }
            }
            to_json(&p)
        }
        msg::InputRequest::CreateMessage(mut p) => {
            if let Some(m) = meta {
                p.other.insert("_meta".into(), Value::Object(m));
            }
            to_json(&p)
        }
        msg::InputRequest::ListRoots(p) => {
            let mut p = p.unwrap_or_default();
            if let Some(m) = meta {
                p.insert("_meta".into(), Value::Object(m));
            }
            Ok(Value::Object(p))
        }
        // A request this adapter does not make.
        _ => Ok(Value::Object(Map::new())),
    };
    params.unwrap_or_else(|_| Value::Object(Map::new()))
}

/// The final `tasks/result` answer of a terminal task.
fn final_message(id: &Value, task: &Task) -> Value {
    let answer = vocab::answer(task, Answering::TasksResult).0.map(|mut r| {
        r.meta = Some(related(task));
        r
    });
    response(id, answer)
}

/// `tasks/result`: the result once terminal. While the task waits for input, the
/// elicitations are sent to the client over the response stream and the answers
/// fed back to the task; status changes go out as `notifications/tasks/status`.
async fn tasks_result(
    inner: Arc<Inner>,
    caller: Caller,
    session: Arc<Session>,
    id: Value,
    params: Map<String, Value>,
) -> Response {
    let raw = match task_id_param(&params) {
        Ok(r) => r.to_string(),
        Err(e) => return error_response(&id, &e),
    };
    let task = match inner.get(&caller, &raw).await {
        Ok(t) => t,
        Err(e) => return error_response(&id, &e),
    };
    if task.state.is_terminal() {
        return json_response(StatusCode::OK, &final_message(&id, &task));
    }
    let (tx, rx) = mpsc::channel::<Value>(16);
    tokio::spawn(drive_result(
        inner,
        caller,
        session,
        id,
        task,
        tx,
        Mode::TaskResult,
    ));
    sse_of(rx)
}

/// A blocking `tools/call` from a client that can answer elicitations (or gave a
/// progressToken): the answer is a stream that delivers progress notifications
/// and the task's elicitations as server-to-client requests
/// and ends with the `CallToolResult` (or an error after the call timeout, which
/// cancels the task).
async fn blocking_call_stream(
    inner: Arc<Inner>,
    caller: Caller,
    session: Arc<Session>,
    id: Value,
    params: Map<String, Value>,
    progress_token: Option<Value>,
) -> Response {
    let task = match inner.start_call(&caller, &params, None).await {
        Ok(t) => t,
        Err(e) => return error_response(&id, &e),
    };
    let (tx, rx) = mpsc::channel::<Value>(16);
    let forwarder = progress_token.map(|token| {
        crate::rev_2026_07_28::ProgressForwarder::start(
            &inner,
            &caller,
            &task.id,
            crate::rev_2026_07_28::Progress {
                token,
                tx: tx.clone(),
            },
        )
    });
    let open = session.open_call(&id, &task.id);
    tokio::spawn(async move {
        let _open = open;
        drive_result(
            inner,
            caller,
            session,
            id,
            task,
            tx,
            Mode::BlockingCall(forwarder),
        )
        .await
    });
    sse_of(rx)
}

/// What a driven stream answers.
enum Mode {
    /// `tasks/result`: status notifications, the result with the related-task key.
    TaskResult,
    /// A blocking `tools/call`: no task vocabulary on the wire, just the result
    /// (after the progress notifications, when the call asked for them).
    BlockingCall(Option<crate::rev_2026_07_28::ProgressForwarder>),
}

/// An SSE response: a priming event (an id and empty data, which clients skip),
/// then one `message` event per JSON-RPC message from the channel.
pub(crate) fn sse_of(rx: mpsc::Receiver<Value>) -> Response {
    let events = futures::stream::unfold((true, rx), |(first, mut rx)| async move {
        if first {
            return Some((
                Ok::<Event, Infallible>(Event::default().id("0").data("")),
                (false, rx),
            ));
        }
        let v = rx.recv().await?;
        Some((
            Ok(Event::default().event("message").data(v.to_string())),
            (false, rx),
        ))
    });
    Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response()
}

async fn drive_result(
    inner: Arc<Inner>,
    caller: Caller,
    session: Arc<Session>,
    id: Value,
    task: Task,
    tx: mpsc::Sender<Value>,
    mode: Mode,
) {
    let poll = inner.config.poll_interval_ms;
    let limit = match mode {
        Mode::TaskResult => inner.config.result_timeout,
        Mode::BlockingCall(_) => inner.config.call_timeout,
    };
    let deadline = tokio::time::Instant::now() + limit;
    let notify = matches!(mode, Mode::TaskResult);
    let mut last_status = vocab::status(&task, Revision::V2025_11_25).0;
    let mut sent_keys: BTreeSet<String> = BTreeSet::new();
    let task_id = task.id.clone();
    // The stream opens with the task's current status.
    if notify && tx.send(status_notification(&task, poll)).await.is_err() {
        return;
    }
    loop {
        let now = tokio::time::Instant::now();
        if now >= deadline {
            let e = match mode {
                Mode::TaskResult => RpcError::internal(format!(
                    "task {task_id} did not finish within {} ms; poll tasks/get and call tasks/result again",
                    limit.as_millis()
                )),
                Mode::BlockingCall(_) => {
                    inner.abandon(&caller, &task_id, "tools/call timed out").await;
                    RpcError::internal(format!(
                        "tools/call did not finish within {} ms and was cancelled; call it as a task (params.task) to wait longer",
                        limit.as_millis()
                    ))
                }
            };
            let _ = tx.send(wire::error(&id, &e)).await;
            return;
        }
        let elicit = !session.asks.is_empty();
        let t = match inner
            .service
            .wait_until(&caller, &task_id, deadline - now, |t| {
                vocab::status(t, Revision::V2025_11_25).0 != last_status
                    || (elicit
                        && t.state.is_interrupted()
                        && unsent(t, &session, &sent_keys, &inner.config.auth_url_base))
            })
            .await
        {
            Ok(t) => t,
            Err(e) => {
                let _ = tx
                    .send(wire::error(
                        &id,
                        &RpcError::from_core(e, Some(task_id.as_str())),
                    ))
                    .await;
                return;
            }
        };
        let st = vocab::status(&t, Revision::V2025_11_25).0;
        if st != last_status && !notify {
            last_status = st;
        } else if st != last_status {
            last_status = st;
            if tx.send(status_notification(&t, poll)).await.is_err() {
                return;
            }
        }
        if t.state.is_terminal() {
            let msg = match mode {
                Mode::TaskResult => final_message(&id, &t),
                Mode::BlockingCall(forwarder) => {
                    if let Some(f) = forwarder {
                        f.finish(t.last_seq).await;
                    }
                    response(&id, vocab::answer(&t, Answering::ToolCall).0)
                }
            };
            let _ = tx.send(msg).await;
            return;
        }
        if !(elicit && t.state.is_interrupted()) {
            continue;
        }
        let (reqs, _) =
            vocab::input_requests(&t, Revision::V2025_11_25, &inner.config.auth_url_base);
        for (key, req) in reqs {
            let out_method = req.method();
            // Only what the client declared it can answer is asked.
            if !session
                .asks
                .contains(crate::rev_2026_07_28::capability_of(out_method))
                || !sent_keys.insert(key.clone())
            {
                continue;
            }
            let n = session.next_id.fetch_add(1, Ordering::Relaxed);
            let rid = Value::String(format!("taskwire-elicit-{n}"));
            let (otx, orx) = oneshot::channel();
            if let Ok(mut p) = session.pending.lock() {
                p.insert(rid.to_string(), otx);
            }
            let params = request_params(req, notify.then(|| related(&t)));
            let out = wire::request(&rid, out_method, params);
            if tx.send(out).await.is_err() {
                return;
            }
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let answer = match tokio::time::timeout(left, orx).await {
                Ok(Ok(Ok(result))) => result,
                // An error from the client, or no answer: treated as a dismissal.
                _ => {
                    if let Ok(mut p) = session.pending.lock() {
                        p.remove(&rid.to_string());
                    }
                    msg::to_value(&msg::ElicitResult::cancel())
                }
            };
            let mut m = Map::new();
            m.insert(key, answer);
            if let Err(e) = inner.apply_responses(&caller, task_id.as_str(), &m).await {
                tracing::debug!(error = %e, "mcp: applying an elicitation answer");
            }
        }
    }
}

/// True if the task has a request the client can answer and was not sent yet.
fn unsent(t: &Task, session: &Session, sent: &BTreeSet<String>, auth: &str) -> bool {
    let (reqs, _) = vocab::input_requests(t, Revision::V2025_11_25, auth);
    reqs.iter().any(|(k, r)| {
        !sent.contains(k)
            && session
                .asks
                .contains(crate::rev_2026_07_28::capability_of(r.method()))
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use taskwire_core::MemoryStore;

    fn session(who: &str) -> Session {
        Session {
            caller: Caller::new("t", who),
            version: wire::V_2025_11_25.into(),
            asks: ["elicitation"].into_iter().collect(),
            pending: Mutex::new(HashMap::new()),
            calls: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            expires: Mutex::new(Utc::now()),
        }
    }

    #[tokio::test]
    async fn sessions_are_stored_bounded_per_caller_and_private() {
        let svc = TaskService::new(Arc::new(MemoryStore::new()), "t");
        let s = Sessions::new(svc.clone(), 2, Duration::from_secs(3600));
        let a1 = s.insert(session("a")).await.ok().unwrap();
        let _a2 = s.insert(session("a")).await.ok().unwrap();
        // A third of a's is refused, and evicts nobody; b has a quota of its own.
        assert!(matches!(
            s.insert(session("a")).await,
            Err(OpenError::OverQuota(2))
        ));
        let b = s.insert(session("b")).await.ok().unwrap();
        assert!(s.get(&a1, &Caller::new("t", "a")).await.is_some());
        assert!(s.get(&b, &Caller::new("t", "b")).await.is_some());
        // Another principal cannot use or end someone's session.
        assert!(s.get(&a1, &Caller::new("t", "b")).await.is_none());
        assert!(!s.remove(&a1, &Caller::new("t", "b")).await);
        // Another process over the same store (a restart, another node) finds it,
        // with what was declared at initialize.
        let other = Sessions::new(svc.clone(), 2, Duration::from_secs(3600));
        let got = other.get(&a1, &Caller::new("t", "a")).await.unwrap();
        assert_eq!(got.version, wire::V_2025_11_25);
        assert!(got.asks.contains("elicitation"));
        assert!(other.remove(&a1, &Caller::new("t", "a")).await);
        assert!(s.get(&a1, &Caller::new("t", "a")).await.is_none());
        // With one ended, a may open another.
        assert!(s.insert(session("a")).await.is_ok());
    }

    #[tokio::test]
    async fn an_expired_session_is_gone_and_frees_its_quota() {
        let svc = TaskService::new(Arc::new(MemoryStore::new()), "t");
        let s = Sessions::new(svc.clone(), 1, Duration::from_secs(1));
        let a = s.insert(session("a")).await.ok().unwrap();
        tokio::time::sleep(Duration::from_millis(1100)).await;
        assert!(s.get(&a, &Caller::new("t", "a")).await.is_none());
        assert!(s.insert(session("a")).await.is_ok());
        let swept = svc.store().sweep_records(Utc::now(), 10).await.unwrap();
        assert_eq!(swept, 1);
    }
}

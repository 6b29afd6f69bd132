//! The Common Agent Specification (CAS) task status surface of taskwire.
//!
//! [`CasAdapter`] exposes the task core under `/cas` (paths in [`paths`], documented
//! in `docs/cas.md`): the status object, the messages list, input, long polling
//! with ETags, an SSE stream of status objects, the provider authorisation
//! callback, the reviews addressed to a user, and the host lifecycle control.
//!
//! ```
//! use std::sync::Arc;
//! use axum::{body::Body, http::Request};
//! use serde_json::{json, Value};
//! use taskwire_cas::{CasAdapter, CasConfig};
//! use taskwire_core::{Agent, Caller, MemoryStore, ScriptedAgent, TaskService};
//! use tower::ServiceExt;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let agent: Arc<dyn Agent> = Arc::new(ScriptedAgent::new());
//! let service = TaskService::new(Arc::new(MemoryStore::new()), agent.info().name);
//! let router = CasAdapter::new(service, agent, CasConfig::default()).routes();
//!
//! let input = json!({"message": [{"mimeType": "text/plain", "text": "hello"}]});
//! let mut req = Request::post("/cas/tasks")
//!     .header("content-type", "application/json")
//!     .body(Body::from(input.to_string()))?;
//! // Mount `router` behind a layer that inserts the caller, as the server's auth
//! // layer does; here, one local caller.
//! req.extensions_mut().insert(Caller::local());
//! let res = router.oneshot(req).await?;
//! assert_eq!(res.status(), 201);
//! let body = axum::body::to_bytes(res.into_body(), 1 << 20).await?;
//! let status: Value = serde_json::from_slice(&body)?;
//! assert_eq!(status["agent"], "scripted");
//! assert_eq!(status["responsible_user"], "local");
//! # Ok(())
//! # }
//! ```

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use futures::Stream;
use serde::Deserialize;
use serde_json::{Map, Value};
use taskwire_core::service::Access;
use taskwire_core::types::ReviewDecision;
use taskwire_core::{
    Agent, AgentInfo, Caller, CreateTask, Message, Role, Task, TaskId, TaskService,
};
use taskwire_vocab::cas as vocab;

mod body;
mod error;
pub mod push;
mod view;
/// The CAS wire types: the wire layer's, shared with the client and the schema
/// generator.
pub use taskwire_wire::cas as wire;

pub use error::{CasError, ERR_UNSUPPORTED_MEDIA_TYPE};
pub use push::PushConfig;
use view::{MessagesFold, View};
use wire::{Decision, DecisionBody, HostBody, ReviewEntry, ReviewList};

/// The paths this adapter serves (axum syntax).
pub mod paths {
    /// `POST`: create a task from an input; returns the status object.
    pub const TASKS: &str = "/cas/tasks";
    /// `GET`: the status object (`ETag`, `If-None-Match`, `?wait=&revision=`).
    pub const TASK: &str = "/cas/tasks/{id}";
    /// `GET`: the task's inputs and outputs in commit order.
    pub const MESSAGES: &str = "/cas/tasks/{id}/messages";
    /// `POST`: send input (responsible user only).
    pub const INPUT: &str = "/cas/tasks/{id}/input";
    /// `GET`: SSE stream of the status object, one event per revision.
    pub const EVENTS: &str = "/cas/tasks/{id}/events";
    /// `POST`: the callback a provider sign-in completes; resolves that provider's
    /// `user_auth_required` and every operation waiting on it.
    pub const AUTHORIZATION: &str = "/cas/tasks/{id}/authorizations/{provider}";
    /// `GET`: reviews addressed to the caller.
    pub const REVIEWS: &str = "/cas/reviews";
    /// `POST`: decide a review addressed to the caller.
    pub const REVIEW: &str = "/cas/reviews/{task_id}/{review_id}";
    /// `POST`: host lifecycle control, complete (end) the task (owner only).
    pub const HOST_COMPLETE: &str = "/cas/host/tasks/{id}/complete";
    /// `POST`: host lifecycle control, interrupt the turn in flight (owner only);
    /// the task then awaits its next input (`idle`).
    pub const HOST_INTERRUPT: &str = "/cas/host/tasks/{id}/interrupt";
}

/// Name of the SSE event carrying a status object.
pub const SSE_EVENT_STATUS: &str = "status";
/// Request header: an idempotency key for `POST /cas/tasks` and input (becomes the
/// core message id).
pub const HEADER_IDEMPOTENCY_KEY: &str = "idempotency-key";
/// Request header: create the task on behalf of this task (its responsible user
/// carries over).
pub const HEADER_PARENT_TASK: &str = "cas-parent-task";

/// Settings of the CAS surface.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct CasConfig {
    /// Longest `?wait=` a long poll may ask for (longer values are capped).
    pub max_wait: Duration,
    /// Interval of SSE keep-alive comments.
    pub keep_alive: Duration,
    /// How often an SSE stream or long poll re-reads the task when no wake-up
    /// arrives (a safety net; wake-ups normally drive them).
    pub recheck: Duration,
    /// Optional outbound push of the status object (off by default).
    pub push: PushConfig,
    /// Largest request body, in bytes: larger ones are refused with `413
    /// too_large` before parsing (a declared length before reading). Handlers read
    /// their bodies themselves within it; the router has no layers of its own.
    pub max_body_bytes: usize,
}

impl Default for CasConfig {
    fn default() -> Self {
        Self {
            max_wait: Duration::from_secs(60),
            keep_alive: Duration::from_secs(15),
            recheck: Duration::from_secs(5),
            push: PushConfig::default(),
            max_body_bytes: 4 * 1024 * 1024,
        }
    }
}

struct Inner {
    service: TaskService,
    info: AgentInfo,
    params: Option<jsonschema::Validator>,
    config: CasConfig,
    /// Deliver push subscriptions under leases.
    workers: taskwire_core::record_workers::RecordWorkers,
    push_started: std::sync::atomic::AtomicBool,
    /// Folded message lists of recently polled tasks.
    folds: view::FoldCache,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.workers.stop();
    }
}

/// The CAS adapter: build it once, mount [`CasAdapter::routes`] behind the auth layer.
#[derive(Clone)]
pub struct CasAdapter {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for CasAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CasAdapter")
            .field("agent", &self.inner.info.name)
            .field("config", &self.inner.config)
            .finish()
    }
}

impl CasAdapter {
    /// An adapter over the shared service for `agent`. A parameters schema the agent
    /// declares that is not a valid JSON schema is logged and treated as "no
    /// parameters accepted".
    pub fn new(service: TaskService, agent: Arc<dyn Agent>, config: CasConfig) -> Self {
        let info = agent.info();
        let params = info.parameters_schema.as_ref().and_then(|s| {
            jsonschema::validator_for(s)
                .map_err(|e| tracing::warn!(error = %e, "invalid agent parameters schema"))
                .ok()
        });
        let workers = taskwire_core::record_workers::RecordWorkers::new(
            service.store().clone(),
            taskwire_core::RecordKind::CasSubscription,
            format!("cas-push-{}", &taskwire_core::ids::random_id()[..12]),
            config.push.lease,
        );
        let inner = Arc::new(Inner {
            service,
            info,
            params,
            config,
            workers,
            push_started: std::sync::atomic::AtomicBool::new(false),
            folds: view::FoldCache::new(1024),
        });
        // Resume the subscriptions stored before a restart (or on another node).
        push::start(&inner);
        Self { inner }
    }

    /// The routes; every handler reads `axum::Extension<Caller>`.
    pub fn routes(&self) -> Router {
        Router::new()
            .route(paths::TASKS, post(create))
            .route(paths::TASK, get(status))
            .route(paths::MESSAGES, get(messages))
            .route(paths::INPUT, post(input))
            .route(paths::EVENTS, get(events))
            .route(paths::AUTHORIZATION, post(authorize))
            .route(paths::REVIEWS, get(reviews))
            .route(paths::REVIEW, post(decide))
            .route(paths::HOST_COMPLETE, post(host_complete))
            .route(paths::HOST_INTERRUPT, post(host_interrupt))
            .with_state(self.inner.clone())
    }

    /// Routes without authentication: none.
    pub fn public_routes(&self) -> Router {
        Router::new()
    }
}

type St = State<Arc<Inner>>;
type QueryIn<T> = Result<Query<T>, QueryRejection>;
type PathIn<T> = Result<Path<T>, PathRejection>;

/// The path parameters, or "not found": a path that does not decode (say, a
/// percent-escape that is not UTF-8) names no task, like a malformed id.
fn path<T>(r: PathIn<T>) -> Result<T, CasError> {
    r.map(|Path(v)| v).map_err(|e| {
        tracing::debug!(error = %e, "cas: path parameters do not decode");
        CasError::Core(taskwire_core::CoreError::NotFound)
    })
}

/// The query string, or our error body.
fn query<T>(r: QueryIn<T>) -> Result<T, CasError> {
    r.map(|Query(v)| v)
        .map_err(|e| CasError::invalid("query", e.body_text()))
}

/// The optional JSON body of a host command: empty (or blank) means defaults, with
/// any content type; anything else must be JSON.
async fn host_body(req: Request, limit: usize) -> Result<HostBody, CasError> {
    let (parts, b) = req.into_parts();
    let b = body::read(&parts.headers, b, limit).await?;
    if b.iter().all(u8::is_ascii_whitespace) {
        return Ok(HostBody::default());
    }
    body::require_json(&parts.headers)?;
    body::parse(&b)
}

fn parse_id(id: &str) -> Result<TaskId, CasError> {
    // A malformed id names no task: "not found", like a task that is not yours.
    TaskId::parse(id).map_err(|_| CasError::Core(taskwire_core::CoreError::NotFound))
}

impl Inner {
    /// Reads a task the caller may see ([`Access::Participant`]: same tenant, and
    /// the caller is its owner or its responsible user). Anything else is "not found".
    async fn load(&self, caller: &Caller, id: &TaskId) -> Result<Task, CasError> {
        Ok(self.service.get_as(Access::Participant(caller), id).await?)
    }

    /// Advances the fold to the snapshot's last event, reading only the events it
    /// has not applied yet.
    async fn advance(
        &self,
        caller: &Caller,
        task: &Task,
        fold: &mut MessagesFold,
    ) -> Result<(), CasError> {
        while fold.last_seq < task.last_seq {
            let evs = self
                .service
                .events_as(Access::Participant(caller), &task.id, fold.last_seq, 1000)
                .await?;
            if evs.is_empty() {
                break;
            }
            for e in evs.iter().filter(|e| e.seq <= task.last_seq) {
                fold.apply(e);
            }
            if evs.last().is_some_and(|e| e.seq >= task.last_seq) {
                break;
            }
        }
        Ok(())
    }

    /// The view of a snapshot, from the cached fold of its task when there is one
    /// (a poll reads only the events since the last poll of any caller, not the
    /// whole log).
    async fn view(&self, caller: &Caller, task: &Task) -> Result<View, CasError> {
        let mut fold = self.folds.take(&task.id, task.last_seq);
        self.advance(caller, task, &mut fold).await?;
        let view = View::build(task, &fold);
        self.folds.put(task.id.clone(), fold);
        Ok(view)
    }

    /// Splits an input object into core parts and parameters, validated.
    fn parse_input(&self, body: Value) -> Result<Message, CasError> {
        let Value::Object(mut obj) = body else {
            return Err(CasError::invalid(
                "input",
                "an input is a JSON object {message: [ContentPart], ...parameters}",
            ));
        };
        let Some(raw) = obj.remove("message") else {
            return Err(CasError::invalid("message", "an input needs a message"));
        };
        let parts: Vec<vocab::ContentPart> = serde_json::from_value(raw)
            .map_err(|e| CasError::invalid("message", format!("not a list of ContentPart: {e}")))?;
        let parts = vocab::parts_from_cas(&parts)?;
        for k in vocab::WELL_KNOWN_KEYS {
            if obj.contains_key(k) {
                return Err(CasError::invalid(k, "a well-known key, not a parameter"));
            }
        }
        self.validate_parameters(&obj)?;
        let mut m = Message::new(Role::User, parts);
        if !obj.is_empty() {
            m.metadata
                .insert(vocab::META_PARAMETERS.into(), Value::Object(obj));
        }
        Ok(m)
    }

    fn validate_parameters(&self, params: &Map<String, Value>) -> Result<(), CasError> {
        match (&self.params, self.info.parameters_schema.is_some()) {
            (Some(v), _) => {
                let instance = Value::Object(params.clone());
                if let Some(e) = v.iter_errors(&instance).next() {
                    let path = e.instance_path().to_string();
                    let field = if path.is_empty() {
                        "parameters".to_string()
                    } else {
                        format!("parameters{path}")
                    };
                    return Err(CasError::invalid(field, e.to_string()));
                }
                Ok(())
            }
            (None, has_schema) => match params.keys().next() {
                Some(k) => Err(CasError::invalid(
                    k.clone(),
                    if has_schema {
                        "the agent's parameters schema is invalid; no parameters are accepted"
                    } else {
                        "the agent declares no parameters"
                    },
                )),
                None => Ok(()),
            },
        }
    }
}

fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, CasError> {
    match headers.get(HEADER_IDEMPOTENCY_KEY) {
        None => Ok(None),
        Some(v) => v
            .to_str()
            .map(|s| Some(s.to_string()))
            .map_err(|_| CasError::invalid(HEADER_IDEMPOTENCY_KEY, "must be visible ASCII")),
    }
}

fn etag(rev: &str) -> HeaderValue {
    HeaderValue::from_str(&format!("\"{rev}\"")).unwrap_or(HeaderValue::from_static("\"\""))
}

/// True if `If-None-Match` names the revision (or is `*`).
fn matches_if_none_match(headers: &HeaderMap, rev: &str) -> bool {
    let Some(v) = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    v.split(',').map(str::trim).any(|t| {
        let t = t.strip_prefix("W/").unwrap_or(t);
        t == "*" || t.trim_matches('"') == rev
    })
}

fn with_etag(status: StatusCode, rev: &str, body: impl serde::Serialize) -> Response {
    let mut r = (status, Json(body)).into_response();
    r.headers_mut().insert(header::ETAG, etag(rev));
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

fn not_modified(rev: &str) -> Response {
    let mut r = StatusCode::NOT_MODIFIED.into_response();
    r.headers_mut().insert(header::ETAG, etag(rev));
    r
}

async fn create(
    State(s): St,
    Extension(caller): Extension<Caller>,
    req: Request,
) -> Result<Response, CasError> {
    let (parts, body) = req.into_parts();
    let headers = &parts.headers;
    let body: Value = body::json(headers, body, s.config.max_body_bytes).await?;
    let mut message = s.parse_input(body)?;
    if let Some(k) = idempotency_key(headers)? {
        message.message_id = k;
    }
    let parent = match headers.get(HEADER_PARENT_TASK) {
        None => None,
        Some(v) => Some(parse_id(v.to_str().unwrap_or_default())?),
    };
    let push_target = match headers.get(push::HEADER_PUSH_URL) {
        None => None,
        Some(v) => {
            let url = v.to_str().unwrap_or_default();
            let token = headers
                .get(push::HEADER_PUSH_TOKEN)
                .and_then(|t| t.to_str().ok())
                .map(str::to_string);
            Some(push::target(&s.config.push, url, token).await?)
        }
    };
    let mut req = CreateTask::new(message);
    req.parent = parent;
    let created = s.service.create(&caller, req).await?;
    if let (Some(t), true) = (push_target, created.created) {
        push::subscribe(&s, &caller, &created.task.id, t).await?;
    }
    let view = s.view(&caller, &created.task).await?;
    let code = if created.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let mut r = with_etag(code, view.revision(), &view.status);
    if let Ok(loc) = HeaderValue::from_str(&format!("{}/{}", paths::TASKS, created.task.id)) {
        r.headers_mut().insert(header::LOCATION, loc);
    }
    Ok(r)
}

/// Query of `GET /cas/tasks/{id}`.
#[derive(Debug, Default, Deserialize)]
struct PollQuery {
    /// Seconds to wait for a revision different from `revision`.
    wait: Option<f64>,
    /// The revision the caller has.
    revision: Option<String>,
}

async fn status(
    State(s): St,
    Extension(caller): Extension<Caller>,
    id: PathIn<String>,
    q: QueryIn<PollQuery>,
    req: Request,
) -> Result<Response, CasError> {
    let headers = req.headers();
    let id = parse_id(&path(id)?)?;
    let q = query(q)?;
    let known = q.revision.clone().or_else(|| {
        headers
            .get(header::IF_NONE_MATCH)
            .and_then(|v| v.to_str().ok())
            .map(|v| {
                v.trim()
                    .trim_start_matches("W/")
                    .trim_matches('"')
                    .to_string()
            })
    });
    let view = match (q.wait, known) {
        (Some(secs), Some(rev)) if secs.is_finite() && secs > 0.0 => {
            let wait = Duration::from_secs_f64(secs.min(s.config.max_wait.as_secs_f64()));
            long_poll(&s, &caller, &id, &rev, wait).await?
        }
        (Some(secs), _) if !secs.is_finite() || secs < 0.0 => {
            return Err(CasError::invalid("wait", "a number of seconds >= 0"));
        }
        _ => {
            let t = s.load(&caller, &id).await?;
            s.view(&caller, &t).await?
        }
    };
    if matches_if_none_match(headers, view.revision()) {
        return Ok(not_modified(view.revision()));
    }
    Ok(with_etag(StatusCode::OK, view.revision(), &view.status))
}

/// Waits until the revision differs from `rev`, the task is terminal, or `wait`
/// passes: the first object of [`revisions`] after `rev`, else the current one.
async fn long_poll(
    s: &Arc<Inner>,
    caller: &Caller,
    id: &TaskId,
    rev: &str,
    wait: Duration,
) -> Result<View, CasError> {
    use futures::StreamExt;
    let t = s.load(caller, id).await?;
    let now = s.view(caller, &t).await?;
    if now.revision() != rev || t.state.is_terminal() {
        return Ok(now);
    }
    let mut next = std::pin::pin!(revisions(
        s.clone(),
        caller.clone(),
        id.clone(),
        Some(rev.to_string())
    ));
    match tokio::time::timeout(wait, next.next()).await {
        Ok(Some(_)) | Ok(None) | Err(_) => {
            let t = s.load(caller, id).await?;
            s.view(caller, &t).await
        }
    }
}

async fn messages(
    State(s): St,
    Extension(caller): Extension<Caller>,
    id: PathIn<String>,
    req: Request,
) -> Result<Response, CasError> {
    let id = parse_id(&path(id)?)?;
    let t = s.load(&caller, &id).await?;
    let view = s.view(&caller, &t).await?;
    if matches_if_none_match(req.headers(), view.revision()) {
        return Ok(not_modified(view.revision()));
    }
    Ok(with_etag(StatusCode::OK, view.revision(), &view.messages))
}

async fn input(
    State(s): St,
    Extension(caller): Extension<Caller>,
    id: PathIn<String>,
    req: Request,
) -> Result<Response, CasError> {
    let id = parse_id(&path(id)?)?;
    let (parts, body) = req.into_parts();
    let headers = &parts.headers;
    let body: Value = body::json(headers, body, s.config.max_body_bytes).await?;
    let t = s.load(&caller, &id).await?;
    // Input belongs to the responsible user alone; anyone else gets "not found".
    if t.responsible_user != caller.principal {
        return Err(taskwire_core::CoreError::NotFound.into());
    }
    if t.state.is_terminal() {
        return Err(taskwire_core::CoreError::Terminal { state: t.state }.into());
    }
    let mut message = s.parse_input(body)?;
    if let Some(k) = idempotency_key(headers)? {
        message.message_id = k;
    }
    // For a task created on behalf of another, the owner is the creating agent and
    // the responsible user sends input in its place.
    let as_owner = Caller::new(t.tenant.clone(), t.owner.clone());
    let task = s.service.send_input(&as_owner, &id, message).await?;
    let view = s.view(&caller, &task).await?;
    Ok(with_etag(
        StatusCode::ACCEPTED,
        view.revision(),
        &view.status,
    ))
}

async fn authorize(
    State(s): St,
    Extension(caller): Extension<Caller>,
    p: PathIn<(String, String)>,
) -> Result<Response, CasError> {
    let (id, provider) = path(p)?;
    let id = parse_id(&id)?;
    let t = s.load(&caller, &id).await?;
    if t.responsible_user != caller.principal {
        return Err(taskwire_core::CoreError::NotFound.into());
    }
    let task = s.service.grant_auth(Access::System, &id, &provider).await?;
    let view = s.view(&caller, &task).await?;
    Ok(with_etag(StatusCode::OK, view.revision(), &view.status))
}

/// Query of `GET /cas/reviews`.
#[derive(Debug, Default, Deserialize)]
struct ReviewsQuery {
    cursor: Option<String>,
    page_size: Option<usize>,
}

async fn reviews(
    State(s): St,
    Extension(caller): Extension<Caller>,
    q: QueryIn<ReviewsQuery>,
) -> Result<Response, CasError> {
    let q = query(q)?;
    let page = s
        .service
        .list_reviews(&caller, q.page_size.unwrap_or(50), q.cursor)
        .await?;
    let mut out = Vec::new();
    for t in &page.tasks {
        for r in t
            .pending_reviews
            .iter()
            .filter(|r| r.reviewer == caller.principal)
        {
            out.push(ReviewEntry {
                task_id: t.id.to_string(),
                review_id: r.id.clone(),
                summary: r.summary.clone(),
                since: wire::iso(r.since),
                agent: t.agent.clone(),
                responsible_user: t.responsible_user.clone(),
            });
        }
    }
    Ok(Json(ReviewList {
        reviews: out,
        next_cursor: page.next_cursor,
    })
    .into_response())
}

async fn decide(
    State(s): St,
    Extension(caller): Extension<Caller>,
    p: PathIn<(String, String)>,
    req: Request,
) -> Result<Response, CasError> {
    let (id, review_id) = path(p)?;
    let (parts, body) = req.into_parts();
    let body: DecisionBody = body::json(&parts.headers, body, s.config.max_body_bytes).await?;
    let id = parse_id(&id)?;
    let decision = match body.decision {
        Decision::Approve => ReviewDecision::Approve,
        Decision::Reject => ReviewDecision::Reject,
    };
    s.service
        .decide_review(&caller, &id, &review_id, decision)
        .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

async fn host_complete(
    State(s): St,
    Extension(caller): Extension<Caller>,
    id: PathIn<String>,
    req: Request,
) -> Result<Response, CasError> {
    let id = parse_id(&path(id)?)?;
    let reason = host_body(req, s.config.max_body_bytes).await?.reason;
    // The effect is visible only through phase and terminal_reason: no status
    // message (which would be an output); the reason is only logged. The core
    // ends the task canceled; CAS reports terminal_reason completed (a named loss).
    s.service.cancel(Access::Owner(&caller), &id, None).await?;
    tracing::info!(task = %id, principal = %caller.principal, reason = reason.as_deref().unwrap_or(""), "cas host: task completed");
    Ok(StatusCode::NO_CONTENT.into_response())
}

async fn host_interrupt(
    State(s): St,
    Extension(caller): Extension<Caller>,
    id: PathIn<String>,
    req: Request,
) -> Result<Response, CasError> {
    let id = parse_id(&path(id)?)?;
    let reason = host_body(req, s.config.max_body_bytes).await?.reason;
    // As for complete: no status message; the task goes idle.
    s.service
        .interrupt_turn(Access::Owner(&caller), &id, None)
        .await?;
    tracing::info!(task = %id, principal = %caller.principal, reason = reason.as_deref().unwrap_or(""), "cas host: turn interrupted");
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// Query of the SSE stream (`Last-Event-ID` works too).
#[derive(Debug, Default, Deserialize)]
struct EventsQuery {
    revision: Option<String>,
}

async fn events(
    State(s): St,
    Extension(caller): Extension<Caller>,
    id: PathIn<String>,
    q: QueryIn<EventsQuery>,
    req: Request,
) -> Result<Response, CasError> {
    let id = parse_id(&path(id)?)?;
    let q = query(q)?;
    let headers = req.headers();
    s.load(&caller, &id).await?;
    let last = q.revision.or_else(|| {
        headers
            .get("last-event-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    });
    let keep_alive = s.config.keep_alive;
    let stream = status_stream(s, caller, id, last);
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(keep_alive))
        .into_response())
}

struct StreamState {
    s: Arc<Inner>,
    caller: Caller,
    id: TaskId,
    events: Option<taskwire_core::service::EventStream>,
    fold: MessagesFold,
    last: Option<String>,
    done: bool,
}

/// The status object each time the revision changes, starting with the current
/// one (unless its revision is `last`), ending after the terminal object (or when
/// the task can no longer be read). Driven by a subscription to the task's log
/// ([`TaskService::subscribe`]): each event is read once and folded, and the
/// snapshot is read again only when events arrived. Shared by the SSE stream, long
/// polls and outbound push.
pub(crate) fn revisions(
    s: Arc<Inner>,
    caller: Caller,
    id: TaskId,
    last: Option<String>,
) -> impl Stream<Item = wire::StatusObject> {
    use futures::StreamExt;
    let st = StreamState {
        s,
        caller,
        id,
        events: None,
        fold: MessagesFold::default(),
        last,
        done: false,
    };
    futures::stream::unfold(st, |mut st| async move {
        if st.done {
            return None;
        }
        if st.events.is_none() {
            let sub =
                st.s.service
                    .subscribe(Access::Participant(&st.caller), &st.id, 0)
                    .await
                    .ok()?;
            st.events = Some(sub);
        }
        loop {
            let task = st.s.load(&st.caller, &st.id).await.ok()?;
            // Fold the subscription's events up to the snapshot.
            while st.fold.last_seq < task.last_seq {
                let events = st.events.as_mut()?;
                match events.next().await {
                    Some(Ok(e)) => st.fold.apply(&e),
                    Some(Err(_)) => return None,
                    None => break,
                }
            }
            let view = View::build(&task, &st.fold);
            let terminal = task.state.is_terminal();
            if st.last.as_deref() != Some(view.revision()) {
                st.last = Some(view.revision().to_string());
                st.done = terminal;
                return Some((view.status, st));
            }
            if terminal {
                return None;
            }
            // Wait for the next event (or the periodic re-check).
            let events = st.events.as_mut()?;
            match tokio::time::timeout(st.s.config.recheck, events.next()).await {
                Ok(Some(Ok(e))) => st.fold.apply(&e),
                Ok(Some(Err(_))) => return None,
                Ok(None) => {}
                Err(_) => {}
            }
        }
    })
}

/// One SSE event per revision: `event: status`, `id: <revision>`, `data: <status object>`.
fn status_stream(
    s: Arc<Inner>,
    caller: Caller,
    id: TaskId,
    last: Option<String>,
) -> impl Stream<Item = Result<SseEvent, Infallible>> {
    use futures::StreamExt;
    revisions(s, caller, id, last).map(|status| {
        let data = serde_json::to_string(&status).unwrap_or_default();
        Ok(SseEvent::default()
            .event(SSE_EVENT_STATUS)
            .id(status.status.revision.as_str())
            .data(data))
    })
}

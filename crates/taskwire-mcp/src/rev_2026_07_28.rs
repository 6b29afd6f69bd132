//! Revision 2026-07-28: no handshake, the per-request `_meta` and header checks,
//! `server/discover`, tools, and the tasks extension (SEP-2663) with
//! `tasks/continue` (SEP-2339).

use std::sync::Arc;

use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::{Map, Value};
use taskwire_core::{Caller, TaskSupport};
use taskwire_vocab::mcp::{self as vocab, Revision};
use taskwire_wire::mcp as msg;

use crate::error::RpcError;
use crate::ops::task_id_param;
use crate::wire::{self, code, header, meta, method, Incoming};
use crate::{accepted, error_response, json_response, Inner, TaskMode};

/// How long a client may cache `tools/list` (SEP-2549 `ttlMs`).
pub(crate) const TOOLS_TTL_MS: u64 = 300_000;

/// What the request's `_meta` says about the client.
pub(crate) struct RequestContext {
    /// The client declared the tasks extension.
    pub(crate) tasks: bool,
    /// The client's declared capabilities (`_meta` clientCapabilities).
    pub(crate) capabilities: Map<String, Value>,
}

pub(crate) async fn handle(
    inner: Arc<Inner>,
    caller: Caller,
    headers: HeaderMap,
    peer: Option<std::net::SocketAddr>,
    msg: Incoming,
) -> Response {
    let (id, name, params) = match msg {
        // Notifications and responses need no answer in this revision.
        Incoming::Notification { .. } | Incoming::Response { .. } => return accepted(),
        Incoming::Request { id, method, params } => (id, method, params),
    };
    let ctx = match check(&headers, &name, &params) {
        Ok(c) => c,
        Err(e) => return error_response(&id, &e),
    };
    if name == method::TOOLS_CALL {
        if let Err(e) = check_param_headers(&inner, &headers, &params) {
            return error_response(&id, &e);
        }
    }
    if name == method::SUBSCRIPTIONS_LISTEN {
        // Task notifications need the tasks extension; a listen for anything
        // else (this server sends no list-changed notifications) is
        // acknowledged with no task ids and ends.
        let asks_tasks = params
            .get("notifications")
            .and_then(|n| n.get("taskIds"))
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty());
        if asks_tasks && !ctx.tasks {
            return error_response(
                &id,
                &RpcError::missing_tasks_extension(
                    "subscriptions/listen for tasks needs the tasks extension declared in _meta clientCapabilities",
                ),
            );
        }
        return crate::notify::listen(inner, caller, id, params).await;
    }
    if name == method::TASKS_STREAM {
        return crate::stream::open(inner, caller, peer, id, params).await;
    }
    // A tools/call with a progressToken is answered as a stream: progress
    // notifications while the client waits, then the result.
    let progress_token = params
        .get("_meta")
        .and_then(|m| m.get("progressToken"))
        .filter(|t| t.is_string() || t.is_number())
        .cloned();
    if let (method::TOOLS_CALL, Some(token)) = (name.as_str(), progress_token) {
        let (tx, rx) = tokio::sync::mpsc::channel::<Value>(32);
        tokio::spawn(async move {
            let progress = Progress {
                token,
                tx: tx.clone(),
            };
            let msg = match tools_call(&inner, &caller, &ctx, &params, Some(progress)).await {
                Ok(Reply::Result(r)) => wire::result(&id, r),
                Ok(Reply::ErrorObject(o)) => wire::error_object(&id, o),
                Err(e) => wire::error(&id, &e),
            };
            let _ = tx.send(msg).await;
        });
        return crate::rev_2025_11_25::sse_of(rx);
    }
    match dispatch(&inner, &caller, &ctx, &name, &params).await {
        Ok(Reply::Result(r)) => json_response(axum::http::StatusCode::OK, &wire::result(&id, r)),
        Ok(Reply::ErrorObject(o)) => {
            json_response(axum::http::StatusCode::OK, &wire::error_object(&id, o))
        }
        Err(e) => error_response(&id, &e),
    }
}

pub(crate) enum Reply {
    Result(Value),
    ErrorObject(Value),
}

impl Reply {
    /// A typed result, serialized.
    pub(crate) fn result<T: serde::Serialize>(r: &T) -> Result<Reply, RpcError> {
        Ok(Reply::Result(to_json(r)?))
    }
}

/// A typed wire message as JSON; failing is a bug, answered as an internal error.
pub(crate) fn to_json<T: serde::Serialize>(v: &T) -> Result<Value, RpcError> {
    serde_json::to_value(v).map_err(|e| RpcError::internal(format!("encoding the answer: {e}")))
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Result<Option<&'a str>, RpcError> {
    let mut all = headers.get_all(name).iter();
    let Some(first) = all.next() else {
        return Ok(None);
    };
    if all.next().is_some() {
        return Err(RpcError::header_mismatch(format!(
            "duplicate {name} header"
        )));
    }
    // RFC 9110 §5.5: a field value excludes leading and trailing whitespace.
    first
        .to_str()
        .map(|v| Some(v.trim_matches([' ', '\t'])))
        .map_err(|_| RpcError::header_mismatch(format!("{name} header is not visible ASCII")))
}

/// The per-request checks of revision 2026-07-28: `_meta`, version, headers,
/// method, capability.
pub(crate) fn check(
    headers: &HeaderMap,
    name: &str,
    params: &Map<String, Value>,
) -> Result<RequestContext, RpcError> {
    let m = params
        .get("_meta")
        .and_then(Value::as_object)
        .ok_or_else(|| {
            RpcError::bad_request(
                code::INVALID_PARAMS,
                "params._meta is required (protocol version and client capabilities); send initialize first for revision 2025-11-25",
            )
        })?;
    // clientInfo is a SHOULD (a client that leaves it out is served).
    for k in [meta::PROTOCOL_VERSION, meta::CLIENT_CAPABILITIES] {
        if !m.contains_key(k) {
            return Err(RpcError::bad_request(
                code::INVALID_PARAMS,
                format!("params._meta[\"{k}\"] is required"),
            ));
        }
    }
    let version = m
        .get(meta::PROTOCOL_VERSION)
        .and_then(Value::as_str)
        .ok_or_else(|| {
            RpcError::bad_request(
                code::INVALID_PARAMS,
                format!(
                    "params._meta[\"{}\"] must be a string",
                    meta::PROTOCOL_VERSION
                ),
            )
        })?;
    let caps = m
        .get(meta::CLIENT_CAPABILITIES)
        .and_then(Value::as_object)
        .ok_or_else(|| {
            RpcError::bad_request(
                code::INVALID_PARAMS,
                format!(
                    "params._meta[\"{}\"] must be an object",
                    meta::CLIENT_CAPABILITIES
                ),
            )
        })?;
    // The header must repeat _meta's version (-32020) before the version
    // itself is judged (-32022).
    match header(headers, header::PROTOCOL_VERSION)? {
        Some(v) if v == version => {}
        Some(v) => {
            return Err(RpcError::header_mismatch(format!(
                "MCP-Protocol-Version header {v} does not match _meta protocol version {version}"
            )))
        }
        None => {
            return Err(RpcError::header_mismatch(
                "missing required MCP-Protocol-Version header",
            ))
        }
    }
    if version != wire::V_2026_07_28 {
        return Err(RpcError::bad_request(
            code::UNSUPPORTED_VERSION,
            format!(
                "unsupported protocol version {version}: this server speaks {} (and {} after initialize)",
                wire::V_2026_07_28,
                wire::V_2025_11_25
            ),
        )
        .with_data(&msg::UnsupportedVersionData {
            supported: vec![wire::V_2026_07_28.to_string()],
            requested: version.to_string(),
        }));
    }
    match header(headers, header::METHOD)? {
        Some(v) if v == name => {}
        Some(v) => {
            return Err(RpcError::header_mismatch(format!(
                "Mcp-Method header {v} does not match body method {name}"
            )))
        }
        None => {
            return Err(RpcError::header_mismatch(
                "missing required Mcp-Method header",
            ))
        }
    }
    let is_task_method = match name {
        method::DISCOVER | method::TOOLS_LIST | method::TOOLS_CALL | method::SUBSCRIPTIONS_LISTEN => {
            false
        }
        method::TASKS_GET
        | method::TASKS_UPDATE
        | method::TASKS_CANCEL
        | method::TASKS_CONTINUE
        | method::TASKS_STREAM => true,
        method::TASKS_RESULT | method::TASKS_LIST => {
            return Err(RpcError::method_not_found(format!(
                "{name} is not part of the tasks extension of revision {}: poll tasks/get (it carries the result), or initialize with {} for the experimental tasks",
                wire::V_2026_07_28,
                wire::V_2025_11_25
            )))
        }
        other => return Err(RpcError::method_not_found(format!("method not found: {other}"))),
    };
    // Mcp-Name: the tool name, or the task id.
    let expected = match name {
        method::TOOLS_CALL => params.get("name").and_then(Value::as_str),
        method::TASKS_GET
        | method::TASKS_UPDATE
        | method::TASKS_CANCEL
        | method::TASKS_CONTINUE
        | method::TASKS_STREAM => params.get("taskId").and_then(Value::as_str),
        _ => None,
    };
    if let Some(expected) = expected {
        match header(headers, header::NAME)? {
            Some(raw) => {
                let got = wire::decode_header_value(raw).ok_or_else(|| {
                    RpcError::header_mismatch("Mcp-Name header is not valid base64")
                })?;
                if got != expected {
                    return Err(RpcError::header_mismatch(format!(
                        "Mcp-Name header {got} does not match the body's {}",
                        if name == method::TOOLS_CALL {
                            "params.name"
                        } else {
                            "params.taskId"
                        }
                    )));
                }
            }
            // tasks/continue and tasks/stream are not in the standard header
            // table; accept them bare.
            None if name == method::TASKS_CONTINUE || name == method::TASKS_STREAM => {}
            None => {
                return Err(RpcError::header_mismatch(format!(
                    "missing required Mcp-Name header for {name}"
                )))
            }
        }
    }
    let tasks = caps
        .get("extensions")
        .and_then(|e| e.get(vocab::TASKS_EXTENSION))
        .is_some();
    if is_task_method && !tasks {
        return Err(RpcError::missing_tasks_extension(format!(
            "{name} needs the tasks extension: declare _meta[\"{}\"].extensions[\"{}\"]",
            meta::CLIENT_CAPABILITIES,
            vocab::TASKS_EXTENSION
        )));
    }
    Ok(RequestContext {
        tasks,
        capabilities: caps.clone(),
    })
}

/// `Mcp-Param-<H>` headers for tool arguments annotated `x-mcp-header: H` in the
/// tool's input schema (reached through `properties` only): present exactly when
/// the argument is, and equal to its string form.
fn check_param_headers(
    inner: &Inner,
    headers: &HeaderMap,
    params: &Map<String, Value>,
) -> Result<(), RpcError> {
    let Some(tool) = params.get("name").and_then(Value::as_str) else {
        return Ok(());
    };
    let Ok(skill) = inner.skill(tool) else {
        return Ok(());
    };
    param_headers(&skill.input_schema, params.get("arguments"), headers, "")
}

fn primitive(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

pub(crate) fn param_headers(
    schema: &Value,
    args: Option<&Value>,
    headers: &HeaderMap,
    path: &str,
) -> Result<(), RpcError> {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Ok(());
    };
    for (prop, sub) in props {
        let here = if path.is_empty() {
            prop.clone()
        } else {
            format!("{path}.{prop}")
        };
        let arg = args.and_then(|a| a.get(prop)).filter(|v| !v.is_null());
        if let Some(h) = sub.get("x-mcp-header").and_then(Value::as_str) {
            let hname = format!("mcp-param-{}", h.to_ascii_lowercase());
            let got = header(headers, &hname)?;
            match (got, arg.and_then(primitive)) {
                (None, None) => {}
                (Some(_), None) => {
                    return Err(RpcError::header_mismatch(format!(
                        "unexpected Mcp-Param-{h} header: argument {here} is absent"
                    )))
                }
                (None, Some(_)) => {
                    return Err(RpcError::header_mismatch(format!(
                        "missing Mcp-Param-{h} header for argument {here}"
                    )))
                }
                (Some(raw), Some(want)) => {
                    let got = wire::decode_header_value(raw).ok_or_else(|| {
                        RpcError::header_mismatch(format!(
                            "Mcp-Param-{h} header is not valid base64"
                        ))
                    })?;
                    if got != want {
                        return Err(RpcError::header_mismatch(format!(
                            "Mcp-Param-{h} header {got} does not match argument {here}"
                        )));
                    }
                }
            }
        }
        param_headers(sub, arg, headers, &here)?;
    }
    Ok(())
}

/// A `DetailedTask` result.
fn detailed(task: msg::TaskFields) -> msg::DetailedTask {
    msg::DetailedTask {
        result_type: msg::Complete::Complete,
        task,
        meta: None,
    }
}

/// The empty result of `tasks/update` and `tasks/cancel`.
fn empty() -> Result<Reply, RpcError> {
    Reply::result(&msg::EmptyResult {
        result_type: msg::Complete::Complete,
        meta: None,
    })
}

async fn dispatch(
    inner: &Inner,
    caller: &Caller,
    ctx: &RequestContext,
    name: &str,
    params: &Map<String, Value>,
) -> Result<Reply, RpcError> {
    let poll = inner.config.poll_interval_ms;
    let auth = inner.config.auth_url_base.as_str();
    match name {
        method::DISCOVER => Reply::result(&discover(inner)),
        method::TOOLS_LIST => Reply::result(&msg::ListToolsResult {
            result_type: msg::Complete::Complete,
            tools: inner
                .info
                .skills
                .iter()
                .map(|s| vocab::tool_of_skill(s, Revision::V2026_07_28))
                .collect(),
            next_cursor: None,
            // SEP-2549 caching hints: the tools are fixed for the server's life;
            // the list is behind the caller's credentials, so private.
            ttl_ms: TOOLS_TTL_MS,
            cache_scope: msg::CacheScope::Private,
        }),
        method::TOOLS_CALL => tools_call(inner, caller, ctx, params, None).await,
        method::TASKS_GET => {
            let task = inner.get(caller, task_id_param(params)?).await?;
            Reply::result(&detailed(vocab::detailed_task(&task, poll, auth)))
        }
        method::TASKS_UPDATE => {
            let id = task_id_param(params)?;
            let responses = params
                .get("inputResponses")
                .and_then(Value::as_object)
                .ok_or_else(|| {
                    RpcError::invalid_params(
                        "params.inputResponses (an object keyed by input request) is required",
                    )
                })?;
            inner.apply_responses(caller, id, responses).await?;
            empty()
        }
        method::TASKS_CANCEL => {
            let id = task_id_param(params)?;
            match inner.cancel(caller, id).await {
                // Cancelling a task that already ended is acknowledged: the task
                // simply ended otherwise (cooperative, eventually consistent).
                Ok(_) => empty(),
                Err(e)
                    if e.code == code::INVALID_PARAMS && !e.message.starts_with("unknown task") =>
                {
                    empty()
                }
                Err(e) => Err(e),
            }
        }
        method::TASKS_CONTINUE => {
            let id = task_id_param(params)?;
            match params.get("inputResponses") {
                None | Some(Value::Null) => {}
                Some(Value::Object(r)) => inner.apply_responses(caller, id, r).await?,
                Some(_) => {
                    return Err(RpcError::invalid_params(
                        "params.inputResponses must be an object keyed by input request",
                    ))
                }
            }
            let task = inner.get(caller, id).await?;
            Reply::result(&detailed(vocab::detailed_task(&task, poll, auth)))
        }
        other => Err(RpcError::method_not_found(format!(
            "method not found: {other}"
        ))),
    }
}

/// The `server/discover` result.
pub(crate) fn discover(inner: &Inner) -> msg::DiscoverResult {
    let mut extensions = Map::new();
    // SEP-2694's event streams, offered as the `eventStreams` sub-capability
    // of the tasks extension (the SEP's words for capability negotiation).
    let mut tasks = Map::new();
    tasks.insert(vocab::EVENT_STREAMS.into(), Value::Object(Map::new()));
    extensions.insert(vocab::TASKS_EXTENSION.into(), Value::Object(tasks));
    msg::DiscoverResult {
        result_type: msg::Complete::Complete,
        supported_versions: vec![wire::V_2026_07_28.into()],
        capabilities: msg::ServerCapabilities {
            extensions: Some(extensions),
            tools: Some(msg::ListChanged {
                list_changed: Some(false),
            }),
            other: Map::new(),
        },
        instructions: Some(inner.info.description.clone()),
        cache_scope: Some("private".into()),
        ttl_ms: Some(0),
        meta: Some(msg::ServerMeta {
            server_info: server_info(inner),
            other: Map::new(),
        }),
    }
}

pub(crate) fn server_info(inner: &Inner) -> msg::Implementation {
    msg::Implementation::new(inner.config.server_name.clone(), env!("CARGO_PKG_VERSION"))
}

/// Where a waiting `tools/call` sends its progress notifications.
pub(crate) struct Progress {
    /// The request's `progressToken`.
    pub(crate) token: Value,
    /// The response stream.
    pub(crate) tx: tokio::sync::mpsc::Sender<Value>,
}

/// Forwards a task's progress-worthy events as `notifications/progress`, until
/// [`ProgressForwarder::finish`] (or drop).
pub(crate) struct ProgressForwarder {
    task: tokio::task::JoinHandle<()>,
    /// The sequence number to forward up to (`u64::MAX`: all, for now).
    stop_at: tokio::sync::watch::Sender<u64>,
}

impl Drop for ProgressForwarder {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl ProgressForwarder {
    pub(crate) fn start(
        inner: &Inner,
        caller: &Caller,
        id: &taskwire_core::TaskId,
        p: Progress,
    ) -> Self {
        let service = inner.service.clone();
        let caller = caller.clone();
        let id = id.clone();
        let (stop_at, mut stop) = tokio::sync::watch::channel(u64::MAX);
        let task = tokio::spawn(async move {
            use futures::StreamExt;
            let Ok(mut events) = service
                .subscribe(taskwire_core::Access::Owner(&caller), &id, 0)
                .await
            else {
                return;
            };
            let mut seen = 0;
            loop {
                if seen >= *stop.borrow() {
                    return;
                }
                let ev = tokio::select! {
                    ev = events.next() => ev,
                    changed = stop.changed() => {
                        if changed.is_err() {
                            return;
                        }
                        continue;
                    }
                };
                let Some(ev) = ev else { return };
                let Ok(ev) = ev else { continue };
                seen = ev.seq;
                let Some(message) = vocab::progress_message(&ev.kind) else {
                    continue;
                };
                let n = wire::notification(
                    method::NOTIFY_PROGRESS,
                    msg::to_value(&msg::ProgressNotificationParams {
                        progress_token: p.token.clone(),
                        progress: ev.seq,
                        message: Some(message),
                    }),
                );
                if p.tx.send(n).await.is_err() {
                    return;
                }
            }
        });
        Self { task, stop_at }
    }

    /// Forwards what is left up to `last_seq` (at most a second more), then
    /// stops.
    pub(crate) async fn finish(mut self, last_seq: u64) {
        let _ = self.stop_at.send(last_seq);
        let task = &mut self.task;
        if tokio::time::timeout(std::time::Duration::from_secs(1), task)
            .await
            .is_err()
        {
            tracing::debug!("mcp: progress forwarding did not catch up");
        }
    }
}

async fn tools_call(
    inner: &Inner,
    caller: &Caller,
    ctx: &RequestContext,
    params: &Map<String, Value>,
    progress: Option<Progress>,
) -> Result<Reply, RpcError> {
    let poll = inner.config.poll_interval_ms;
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("params.name (the tool name) is required"))?;
    let support = inner.skill(name)?.task_support;
    // A sync-only tool is never answered with a task, whatever the client offers.
    let as_task = ctx.tasks && support != TaskSupport::Forbidden;
    // A repeated call (SEP-2322) names its task in requestState: the answers go
    // to that task, which continues. A 2025-11-25-style `params.task` is ignored in this
    // revision: the server decides.
    // Answers sent with the first call (no requestState) are kept for the
    // input the task asks for: a client may answer ahead (SEP-2322).
    let mut ahead = None;
    let (task, repeated) = match params.get("requestState") {
        Some(Value::String(state)) => {
            let id = inner.state_key.open(caller, name, state)?;
            match params.get("inputResponses") {
                None | Some(Value::Null) => {}
                Some(Value::Object(r)) => inner.apply_responses(caller, id.as_str(), r).await?,
                Some(_) => {
                    return Err(RpcError::invalid_params(
                        "params.inputResponses must be an object keyed by input request",
                    ))
                }
            }
            (inner.get(caller, id.as_str()).await?, true)
        }
        None | Some(Value::Null) => {
            if support == TaskSupport::Required && !ctx.tasks {
                return Err(RpcError::missing_tasks_extension(format!(
                    "tool {name} runs only as a task: declare _meta[\"{}\"].extensions[\"{}\"]",
                    meta::CLIENT_CAPABILITIES,
                    vocab::TASKS_EXTENSION
                )));
            }
            ahead = match params.get("inputResponses") {
                None | Some(Value::Null) => None,
                Some(Value::Object(r)) => Some(r),
                Some(_) => {
                    return Err(RpcError::invalid_params(
                        "params.inputResponses must be an object keyed by input request",
                    ))
                }
            };
            (inner.start_call(caller, params, None).await?, false)
        }
        Some(_) => {
            return Err(RpcError::invalid_params(
                "params.requestState must be the string a previous InputRequiredResult gave",
            ))
        }
    };
    if as_task && inner.skill(name)?.input_first {
        // SEP-2322 rounds before the task (SEP-2663's composition): while the
        // tool's first turn waits for input this client can give, the call
        // answers input_required with no task id (the requestState names the
        // task); the task is returned on the final round.
        let mut t = if repeated {
            task
        } else {
            inner
                .wait(caller, &task.id, inner.config.input_first_wait, true)
                .await?
        };
        if let (true, Some(r)) = (t.state.is_interrupted(), ahead.take()) {
            inner.apply_responses(caller, t.id.as_str(), r).await?;
            t = inner.get(caller, t.id.as_str()).await?;
        }
        if t.state.is_interrupted() {
            let (usable, _) = usable_requests(inner, ctx, &t);
            if !usable.is_empty() {
                return Reply::result(&msg::InputRequiredResult {
                    result_type: msg::InputRequiredResultType::InputRequired,
                    input_requests: usable,
                    request_state: Some(inner.state_key.seal(caller, name, &t)),
                });
            }
        }
        // The turn did more than ask, or the client cannot answer in rounds:
        // the task, whose input requests tasks/get shows.
        return Reply::result(&vocab::create_task_result(&t, poll));
    }
    if as_task {
        let task = match inner.config.task_mode {
            TaskMode::After(ms) if !repeated => {
                let t = inner
                    .wait(caller, &task.id, std::time::Duration::from_millis(ms), true)
                    .await?;
                if t.state.is_terminal() {
                    return terminal_reply(&t);
                }
                t
            }
            _ if task.state.is_terminal() => return terminal_reply(&task),
            _ => task,
        };
        return Reply::result(&vocab::create_task_result(&task, poll));
    }
    // The client waits for the result: until the task ends, or stops for input
    // (answered with an InputRequiredResult), or the call times out.
    let timeout = inner.config.call_timeout;
    let deadline = tokio::time::Instant::now() + timeout;
    let forwarder = progress.map(|p| ProgressForwarder::start(inner, caller, &task.id, p));
    let (reply, last_seq) = loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let t = inner.wait(caller, &task.id, left, true).await?;
        if t.state.is_terminal() {
            break (terminal_reply(&t), t.last_seq);
        }
        if !t.state.is_interrupted() {
            inner.abandon(caller, &t.id, "tools/call timed out").await;
            let e = RpcError::internal(format!(
                "tools/call did not finish within {} ms and was cancelled; declare the tasks extension to run long tools as tasks",
                timeout.as_millis()
            ))
            .with_data(&msg::TimeoutData {
                timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
            });
            break (Err(e), t.last_seq);
        }
        // Answers given ahead go to the first input the task asks for (once;
        // keys it did not ask for are ignored).
        match ahead.take() {
            Some(r) => inner.apply_responses(caller, t.id.as_str(), r).await?,
            None => {
                break (
                    input_required(inner, caller, ctx, name, &t).await,
                    t.last_seq,
                )
            }
        }
    };
    // Every progress event up to the answer goes out before it.
    if let Some(f) = forwarder {
        f.finish(last_seq).await;
    }
    reply
}

/// The client capability a server-to-client request needs.
pub(crate) fn capability_of(request_method: &str) -> &'static str {
    match request_method {
        method::SAMPLING_CREATE_MESSAGE => "sampling",
        method::ROOTS_LIST => "roots",
        _ => "elicitation",
    }
}

/// The task's keyed input requests that the client declared it can answer,
/// and the capabilities (as a `ClientCapabilities` object) of those it cannot.
fn usable_requests(
    inner: &Inner,
    ctx: &RequestContext,
    t: &taskwire_core::Task,
) -> (
    std::collections::BTreeMap<String, msg::InputRequest>,
    Map<String, Value>,
) {
    let (requests, _) = vocab::input_requests(
        t,
        Revision::V2026_07_28,
        inner.config.auth_url_base.as_str(),
    );
    // Each request goes only to a client that declared its capability.
    let mut missing = Map::new();
    let usable = requests
        .into_iter()
        .filter(|(_, r)| {
            let cap = capability_of(r.method());
            let declared = ctx.capabilities.get(cap).is_some_and(|c| !c.is_null());
            if !declared {
                missing.insert(cap.to_string(), Value::Object(Map::new()));
            }
            declared
        })
        .collect();
    (usable, missing)
}

/// The SEP-2322 `InputRequiredResult` of a task waiting for input: its keyed
/// input requests that the client declared it can answer, and the sealed
/// `requestState` naming the task. A client that can answer none of them gets
/// -32021 naming the capability, and the task is cancelled.
async fn input_required(
    inner: &Inner,
    caller: &Caller,
    ctx: &RequestContext,
    tool: &str,
    t: &taskwire_core::Task,
) -> Result<Reply, RpcError> {
    let (usable, missing) = usable_requests(inner, ctx, t);
    if usable.is_empty() {
        inner
            .abandon(caller, &t.id, "the tool needs input the client cannot give")
            .await;
        let names: Vec<&str> = missing.keys().map(String::as_str).collect();
        return Err(RpcError::missing_capability(
            msg::ClientCapabilities {
                extensions: None,
                other: missing.clone(),
            },
            format!(
                "tool {tool} asked for input through {}, which the client did not declare; the call was cancelled (declare it, or the tasks extension {})",
                if names.is_empty() { "a request no client can answer".to_string() } else { names.join(" and ") },
                vocab::TASKS_EXTENSION
            ),
        ));
    }
    Reply::result(&msg::InputRequiredResult {
        result_type: msg::InputRequiredResultType::InputRequired,
        input_requests: usable,
        request_state: Some(inner.state_key.seal(caller, tool, t)),
    })
}

fn terminal_reply(t: &taskwire_core::Task) -> Result<Reply, RpcError> {
    match vocab::answer(t, vocab::Answering::ToolCall).0 {
        Ok(r) => Reply::result(&r.into_complete()),
        Err(e) => Ok(Reply::ErrorObject(to_json(&e)?)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "loc": {"type": "object", "properties": {"zone": {"type": "integer", "x-mcp-header": "Zone"}}}
        }})
    }

    fn hm(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn param_headers_follow_annotated_arguments() {
        let args = json!({"region": "eu west", "loc": {"zone": 3}});
        let ok = hm(&[
            ("mcp-param-region", "=?base64?ZXUgd2VzdA==?="),
            ("mcp-param-zone", "3"),
        ]);
        assert!(param_headers(&schema(), Some(&args), &ok, "").is_ok());
        let missing = hm(&[("mcp-param-region", "eu west")]);
        let e = param_headers(&schema(), Some(&args), &missing, "").unwrap_err();
        assert_eq!(e.code, code::HEADER_MISMATCH);
        assert!(e.message.contains("loc.zone"));
        let wrong = hm(&[("mcp-param-region", "us"), ("mcp-param-zone", "3")]);
        assert!(param_headers(&schema(), Some(&args), &wrong, "").is_err());
        let extra = hm(&[("mcp-param-region", "us")]);
        assert!(param_headers(&schema(), Some(&json!({})), &extra, "").is_err());
        assert!(param_headers(&schema(), Some(&json!({})), &HeaderMap::new(), "").is_ok());
    }
}

//! The server every HTTP target talks to, in process: a memory store, the scripted
//! agent's description (no runtime runs turns, so tasks stay where requests put
//! them and no input waits on an agent), and each adapter built as `taskwire serve`
//! builds it, with every wait shortened to zero. Requests go through the adapters'
//! public routers (`tower::ServiceExt::oneshot`), the caller set as the auth layer
//! would set it.
//!
//! Nothing here reaches the network: A2A push is off (it would resolve host names
//! and deliver to them), CAS push is off (its default), no listener is opened.
//!
//! The environment is rebuilt, runtime included, every [`USES`] inputs, so what
//! inputs leave behind (tasks, sessions, spawned producers waiting on a stream no
//! one reads) is dropped and a long fuzzing run keeps a flat memory profile.

use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, Request};
use axum::response::Response;
use axum::Router;
use http_body_util::BodyExt;
use taskwire_a2a::{A2aConfig, A2aService};
use taskwire_agui::{AguiAdapter, AguiConfig};
use taskwire_cas::{CasAdapter, CasConfig};
use taskwire_core::{Agent, Caller, CreateTask, MemoryStore, Message, ScriptedAgent, TaskService};
use taskwire_mcp::{McpAdapter, McpConfig};
use tower::ServiceExt;

/// Inputs served by one environment before it is rebuilt.
const USES: u32 = 500;

/// The placeholder an input uses to name a task that exists.
pub(crate) const TASK_PLACEHOLDER: &[u8] = b"$TASK";

/// The caller every request is made as.
pub(crate) fn caller() -> Caller {
    Caller::new("default", "alice")
}

/// The in-process server (see the module docs).
pub(crate) struct Env {
    rt: tokio::runtime::Runtime,
    service: TaskService,
    /// The A2A service layer (`taskwire_a2a::jsonrpc::serve` takes it).
    pub(crate) a2a: A2aService,
    /// `POST /mcp` and friends.
    pub(crate) mcp: Router,
    /// The AG-UI routes.
    pub(crate) agui: Router,
    /// The CAS routes.
    pub(crate) cas: Router,
    /// A 2025-11-25 session opened with `initialize` when the environment was built.
    pub(crate) mcp_session: Option<String>,
    uses: u32,
}

thread_local! {
    static ENV: RefCell<Option<Env>> = const { RefCell::new(None) };
}

/// Runs `f` with the environment, building (or rebuilding) it when needed.
pub(crate) fn with_env<R>(f: impl FnOnce(&mut Env) -> R) -> R {
    ENV.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.as_ref().is_none_or(|e| e.uses >= USES) {
            // Drop the old runtime (and every task spawned on it) first.
            *slot = None;
            *slot = Some(Env::new());
        }
        let env = slot.as_mut().expect("environment was just built");
        env.uses += 1;
        f(env)
    })
}

impl Env {
    fn new() -> Self {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime");
        let agent: Arc<dyn Agent> = Arc::new(ScriptedAgent::new());
        let service = TaskService::new(Arc::new(MemoryStore::new()), agent.info().name);
        let (a2a, mcp, agui, cas) = {
            let _guard = rt.enter();
            let a2a = A2aService::new(service.clone(), agent.clone(), {
                let mut v = A2aConfig::default();
                v.push_notifications = false;
                v.blocking_timeout = Duration::ZERO;
                v
            });
            let mcp = McpAdapter::new(service.clone(), agent.clone(), {
                let mut v = McpConfig::default();
                v.call_timeout = Duration::ZERO;
                v.result_timeout = Duration::ZERO;
                v.max_sessions_per_principal = 64;
                v
            })
            .routes();
            let agui = AguiAdapter::new(service.clone(), agent.clone(), {
                let mut v = AguiConfig::default();
                v.max_runs_per_principal = 64;
                v
            })
            .routes();
            let cas = CasAdapter::new(service.clone(), agent, {
                let mut v = CasConfig::default();
                v.max_wait = Duration::ZERO;
                v.recheck = Duration::ZERO;
                v
            })
            .routes();
            (a2a, mcp, agui, cas)
        };
        let mut env = Self {
            rt,
            service,
            a2a,
            mcp,
            agui,
            cas,
            mcp_session: None,
            uses: 0,
        };
        env.mcp_session = env.open_mcp_session();
        env
    }

    /// `initialize` (2025-11-25), for inputs that speak the session revision.
    fn open_mcp_session(&mut self) -> Option<String> {
        let body = serde_json::json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
                "clientInfo": {"name": "fuzz", "version": "1"}}
        });
        let req = Request::post("/mcp")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(Body::from(body.to_string()))
            .ok()?;
        let resp = self.call(&self.mcp.clone(), req);
        resp.headers()
            .get(taskwire_mcp::wire::header::SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    }

    /// Runs a future to completion on the environment's runtime.
    pub(crate) fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.rt.block_on(f)
    }

    /// One request through a router, the caller attached as the auth layer does.
    pub(crate) fn call(&mut self, router: &Router, mut req: Request<Body>) -> Response {
        req.extensions_mut().insert(caller());
        let router = router.clone();
        let resp = self.rt.block_on(async move {
            match router.oneshot(req).await {
                Ok(r) => r,
                Err(never) => match never {},
            }
        });
        self.settle();
        resp
    }

    /// Lets spawned tasks (stream producers, cancellations) run a little.
    pub(crate) fn settle(&self) {
        self.rt.block_on(async {
            for _ in 0..8 {
                tokio::task::yield_now().await;
            }
        });
    }

    /// A new task of the caller's, in state submitted; its id.
    pub(crate) fn new_task(&mut self) -> String {
        let svc = self.service.clone();
        self.rt.block_on(async move {
            let created = svc
                .create(&caller(), CreateTask::new(Message::user_text("ask fuzz?")))
                .await
                .expect("creating a task in the memory store");
            created.task.id.as_str().to_string()
        })
    }

    /// `data` with every `$TASK` replaced by the id of a new task.
    pub(crate) fn substitute<'a>(&mut self, data: &'a [u8]) -> Cow<'a, [u8]> {
        if !contains(data, TASK_PLACEHOLDER) {
            return Cow::Borrowed(data);
        }
        let id = self.new_task();
        Cow::Owned(replace(data, TASK_PLACEHOLDER, id.as_bytes()))
    }

    /// The part of a response body that is ready now: frames are read until the
    /// body ends, `max` bytes are read, or no frame arrives after spawned tasks had
    /// a chance to run (an open stream). `true` if the body ended.
    pub(crate) fn ready_body(&self, body: Body, max: usize) -> (Vec<u8>, bool) {
        self.rt.block_on(async move {
            let mut body = body;
            let mut out = Vec::new();
            let mut idle = 0;
            while out.len() < max {
                let next = tokio::time::timeout(Duration::ZERO, body.frame()).await;
                match next {
                    Ok(None) => return (out, true),
                    Ok(Some(Ok(frame))) => {
                        idle = 0;
                        if let Ok(data) = frame.into_data() {
                            out.extend_from_slice(&data);
                        }
                    }
                    Ok(Some(Err(_))) => return (out, true),
                    Err(_) => {
                        idle += 1;
                        if idle > 8 {
                            break;
                        }
                        tokio::task::yield_now().await;
                    }
                }
            }
            (out, false)
        })
    }
}

/// A request head given by an input (see [`split`]).
#[derive(Debug, Default)]
pub(crate) struct Head {
    /// From a first `METHOD /path` line.
    pub(crate) method: Option<Method>,
    /// From a first `METHOD /path` line.
    pub(crate) path: Option<String>,
    /// From a `?query` line (without the `?`).
    pub(crate) query: Option<String>,
    /// Every `name: value` line that makes a valid header.
    pub(crate) headers: HeaderMap,
}

/// Splits an input into its head and its body: `@` + head lines + an empty line +
/// body, or a bare body (no head).
pub(crate) fn split(data: &[u8]) -> (Option<Head>, &[u8]) {
    let Some(rest) = data.strip_prefix(b"@") else {
        return (None, data);
    };
    let (head, body) = match find(rest, b"\n\n") {
        Some(i) => (&rest[..i], &rest[i + 2..]),
        None => (rest, &[][..]),
    };
    let mut out = Head::default();
    for (n, line) in head.split(|b| *b == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if n == 0 {
            if let Some((m, p)) = request_line(line) {
                out.method = Some(m);
                out.path = Some(p);
                continue;
            }
        }
        if let Some(q) = line.strip_prefix(b"?") {
            out.query = Some(String::from_utf8_lossy(q).into_owned());
            continue;
        }
        let Some(colon) = line.iter().position(|b| *b == b':') else {
            continue;
        };
        let name = trim(&line[..colon]);
        let value = trim(&line[colon + 1..]);
        if let (Ok(n), Ok(v)) = (HeaderName::from_bytes(name), HeaderValue::from_bytes(value)) {
            out.headers.append(n, v);
        }
    }
    (Some(out), body)
}

/// `METHOD /path` (an upper-case token, a space, a path that makes a URI).
fn request_line(line: &[u8]) -> Option<(Method, String)> {
    let sp = line.iter().position(|b| *b == b' ')?;
    let (m, p) = (&line[..sp], &line[sp + 1..]);
    if m.is_empty() || !m.iter().all(u8::is_ascii_uppercase) || !p.starts_with(b"/") {
        return None;
    }
    let path = std::str::from_utf8(p).ok()?;
    path.parse::<axum::http::Uri>().ok()?;
    Some((Method::from_bytes(m).ok()?, path.to_string()))
}

fn trim(b: &[u8]) -> &[u8] {
    let start = b
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(b.len());
    let end = b
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(start, |i| i + 1);
    &b[start..end.max(start)]
}

/// The first index of `needle` in `hay`.
pub(crate) fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    find(hay, needle).is_some()
}

fn replace(hay: &[u8], needle: &[u8], with: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(hay.len() + with.len());
    let mut rest = hay;
    while let Some(i) = find(rest, needle) {
        out.extend_from_slice(&rest[..i]);
        out.extend_from_slice(with);
        rest = &rest[i + needle.len()..];
    }
    out.extend_from_slice(rest);
    out
}

/// The media type of a response (lower case, without parameters).
pub(crate) fn media_type(h: &HeaderMap) -> Option<String> {
    h.get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
        })
}

/// The `data:` payloads of a well-formed SSE body as a server writes it (frames
/// separated by an empty line; an unfinished last frame is left out).
pub(crate) fn sse_data(body: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(body);
    let mut out = Vec::new();
    let complete = match text.rfind("\n\n") {
        Some(i) => &text[..i],
        None => return out,
    };
    for block in complete.split("\n\n") {
        let mut data: Option<String> = None;
        for line in block.lines() {
            if let Some(v) = line.strip_prefix("data:") {
                let v = v.strip_prefix(' ').unwrap_or(v);
                match &mut data {
                    Some(d) => {
                        d.push('\n');
                        d.push_str(v);
                    }
                    None => data = Some(v.to_string()),
                }
            }
        }
        out.extend(data);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_split() {
        let (h, b) = split(b"@POST /cas/tasks\n?x=1\ncontent-type: a/b\nbad header\n\n{}");
        let h = h.expect("a head");
        assert_eq!(h.method, Some(Method::POST));
        assert_eq!(h.path.as_deref(), Some("/cas/tasks"));
        assert_eq!(h.query.as_deref(), Some("x=1"));
        assert_eq!(h.headers.len(), 1);
        assert_eq!(b, b"{}");
        assert!(split(b"{}").0.is_none());
        assert_eq!(replace(b"a$TASKb$TASK", b"$TASK", b"1"), b"a1b1");
    }
}

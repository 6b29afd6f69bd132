//! HTTP plumbing the protocol clients share: raw responses, JSON-RPC envelopes,
//! SSE event streams.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt};
use serde_json::Value;

use crate::error::{snippet, ClientError, RpcError};
use crate::oauth::{Authorizer, Challenge};
use crate::sse::{SseParser, TooLarge};

/// The SSE media type.
pub const SSE_MEDIA_TYPE: &str = "text/event-stream";
/// The JSON media type.
pub const JSON_MEDIA_TYPE: &str = "application/json";

/// An HTTP response as received, for calls that want the bytes (malformed
/// request probes, raw checks).
#[derive(Clone, Debug, PartialEq)]
pub struct RawResponse {
    /// The HTTP status.
    pub status: u16,
    /// The response headers (names lower case), in order.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Bytes,
}

impl RawResponse {
    /// The first value of a header (name compared case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The media type of `Content-Type` without parameters, lower case.
    pub fn media_type(&self) -> Option<String> {
        self.header("content-type").map(media_type)
    }

    /// The body as JSON.
    pub fn json(&self) -> Result<Value, ClientError> {
        serde_json::from_slice(&self.body)
            .map_err(|e| ClientError::decode("JSON body", e, &self.body))
    }

    /// The body as (lossy) text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// Reads a whole response, at most [`crate::sse::DEFAULT_MAX_EVENT_BYTES`]
    /// of body.
    pub(crate) async fn read(resp: reqwest::Response) -> Result<Self, ClientError> {
        Self::read_limited(resp, crate::sse::DEFAULT_MAX_EVENT_BYTES).await
    }

    /// Reads a whole response; a body larger than `max` bytes is refused
    /// ([`ClientError::Decode`]) as soon as it is known to be: by its
    /// `content-length`, else once that much has arrived.
    pub(crate) async fn read_limited(
        mut resp: reqwest::Response,
        max: usize,
    ) -> Result<Self, ClientError> {
        let too_large = || ClientError::Decode {
            what: "response body".into(),
            detail: format!("larger than {max} bytes"),
        };
        let status = resp.status().as_u16();
        let headers = headers_of(resp.headers());
        if resp
            .content_length()
            .is_some_and(|n| usize::try_from(n).map_or(true, |n| n > max))
        {
            return Err(too_large());
        }
        let mut first: Option<Bytes> = None;
        let mut rest: Vec<u8> = Vec::new();
        let mut len = 0usize;
        while let Some(chunk) = resp.chunk().await? {
            len = len.saturating_add(chunk.len());
            if len > max {
                return Err(too_large());
            }
            match &first {
                None if rest.is_empty() => first = Some(chunk),
                _ => {
                    if let Some(f) = first.take() {
                        rest.extend_from_slice(&f);
                    }
                    rest.extend_from_slice(&chunk);
                }
            }
        }
        let body = match first {
            Some(b) => b,
            None => Bytes::from(rest),
        };
        Ok(Self {
            status,
            headers,
            body,
        })
    }
}

pub(crate) fn headers_of(h: &reqwest::header::HeaderMap) -> Vec<(String, String)> {
    h.iter()
        .map(|(k, v)| {
            (
                k.as_str().to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect()
}

/// The media type of a `Content-Type` value, without parameters, lower case.
pub(crate) fn media_type(v: &str) -> String {
    v.split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

pub(crate) fn content_type(resp: &reqwest::Response) -> Option<String> {
    resp.headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(media_type)
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A fresh JSON-RPC request id (process-wide counter).
pub(crate) fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// Sends a request, authorized by `authorizer` when there is one: its
/// `Authorization` value is set (sensitive, so never logged); a 401 is told to
/// the authorizer once and, when it has a new token, the request is sent
/// again; a 403 with `error="insufficient_scope"` steps up at most
/// [`Authorizer::max_step_ups`] times. The one place every HTTP client of the
/// crate sends through.
pub async fn send_authorized(
    rb: reqwest::RequestBuilder,
    authorizer: Option<&dyn Authorizer>,
) -> Result<reqwest::Response, ClientError> {
    let Some(auth) = authorizer else {
        return Ok(rb.send().await?);
    };
    let (client, req) = rb.build_split();
    let req = req?;
    let url = req.url().clone();
    let mut renewed = false;
    let mut step_ups = 0u32;
    loop {
        let mut attempt = req.try_clone().ok_or_else(|| {
            ClientError::Config("a request with a streaming body cannot be authorized".into())
        })?;
        if let Some(v) = auth.authorization(&url).await? {
            let mut value = reqwest::header::HeaderValue::from_str(&v)
                .map_err(|_| ClientError::Auth("the access token is not a header value".into()))?;
            value.set_sensitive(true);
            attempt
                .headers_mut()
                .insert(reqwest::header::AUTHORIZATION, value);
        }
        let resp = client.execute(attempt).await?;
        match resp.status().as_u16() {
            401 if !renewed => {
                renewed = true;
                let challenge = Challenge::from_headers(resp.headers());
                if auth.unauthorized(&url, &challenge).await? {
                    continue;
                }
            }
            403 if step_ups < auth.max_step_ups() => {
                let challenge = Challenge::from_headers(resp.headers());
                if challenge.is_insufficient_scope() {
                    step_ups += 1;
                    if auth.insufficient_scope(&url, &challenge).await? {
                        continue;
                    }
                }
            }
            _ => {}
        }
        return Ok(resp);
    }
}

/// A JSON-RPC request envelope.
pub(crate) fn envelope(id: u64, method: &str, params: Value) -> Value {
    taskwire_wire::jsonrpc::request(&Value::from(id), method, params)
}

/// Checks that a response answers request `id` (a `null` id is accepted:
/// servers answer unparseable requests with it).
pub(crate) fn check_id(msg: &Value, id: u64) -> Result<(), ClientError> {
    match msg.get("id") {
        None | Some(Value::Null) => Ok(()),
        Some(v) if v.as_u64() == Some(id) || v.as_str() == Some(id.to_string().as_str()) => Ok(()),
        Some(v) => Err(ClientError::Protocol(format!(
            "response id {v} does not answer request id {id}"
        ))),
    }
}

/// The `result` of a JSON-RPC response, or its error as [`ClientError::Rpc`].
pub(crate) fn rpc_result(msg: &Value, http_status: Option<u16>) -> Result<Value, ClientError> {
    if !msg.is_object() {
        return Err(ClientError::Protocol(format!(
            "a JSON-RPC response must be an object, got {}",
            snippet(msg.to_string().as_bytes())
        )));
    }
    if let Some(err) = msg.get("error").filter(|e| !e.is_null()) {
        return match RpcError::from_json(err, http_status) {
            Some(e) => Err(ClientError::Rpc(e)),
            None => Err(ClientError::Protocol(format!(
                "malformed JSON-RPC error object: {}",
                snippet(err.to_string().as_bytes())
            ))),
        };
    }
    match msg.get("result") {
        Some(r) => Ok(r.clone()),
        None => Err(ClientError::Protocol(format!(
            "JSON-RPC response without result or error: {}",
            snippet(msg.to_string().as_bytes())
        ))),
    }
}

/// As [`rpc_result`], taking the `result` out of `msg` instead of copying it.
pub(crate) fn rpc_result_take(
    msg: &mut Value,
    http_status: Option<u16>,
) -> Result<Value, ClientError> {
    if let Some(r) = msg
        .as_object_mut()
        .filter(|m| m.get("error").is_none_or(Value::is_null))
        .and_then(|m| m.get_mut("result"))
    {
        return Ok(r.take());
    }
    rpc_result(msg, http_status)
}

/// Reads a JSON body; a non-2xx status without a JSON body is
/// [`ClientError::Http`].
pub(crate) fn json_body(raw: &RawResponse) -> Result<Value, ClientError> {
    match serde_json::from_slice::<Value>(&raw.body) {
        Ok(v) => Ok(v),
        Err(e) => {
            if (200..300).contains(&raw.status) {
                Err(ClientError::decode("JSON body", e, &raw.body))
            } else {
                Err(http_error(raw))
            }
        }
    }
}

/// The [`ClientError::Http`] of a failed response (reads `{"error":{"code","message"}}`
/// when the body has that shape).
pub(crate) fn http_error(raw: &RawResponse) -> ClientError {
    let parsed: Option<Value> = serde_json::from_slice(&raw.body).ok();
    let err = parsed.as_ref().and_then(|v| v.get("error"));
    let code = err.and_then(|e| e.get("code")).and_then(|c| match c {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    });
    let message = err
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
        .map(str::to_string);
    ClientError::Http {
        status: raw.status,
        code,
        message,
        body: snippet(&raw.body),
    }
}

/// One server-sent event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// `event:` (None: a plain message).
    pub event: Option<String>,
    /// `data:` lines joined with `\n` (empty if none).
    pub data: String,
    /// `id:`.
    pub id: Option<String>,
    /// `retry:` in milliseconds.
    pub retry: Option<u64>,
}

/// A boxed stream of SSE events.
pub(crate) type SseStream = Pin<Box<dyn Stream<Item = Result<SseEvent, ClientError>> + Send>>;

/// A boxed stream of JSON values.
pub(crate) type JsonStream = Pin<Box<dyn Stream<Item = Result<Value, ClientError>> + Send>>;

/// The `data:` of each SSE event of a streaming body, parsed as JSON; events
/// without data are skipped (see [`sse_events`] for `idle`).
pub(crate) fn sse_json<S, E>(body: S, idle: Option<Duration>) -> JsonStream
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: std::error::Error + Send + Sync + 'static,
{
    sse_json_limited(body, idle, crate::sse::DEFAULT_MAX_EVENT_BYTES)
}

/// As [`sse_json`], with events of at most `max_event_bytes`.
pub(crate) fn sse_json_limited<S, E>(
    body: S,
    idle: Option<Duration>,
    max_event_bytes: usize,
) -> JsonStream
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: std::error::Error + Send + Sync + 'static,
{
    sse_events_limited(body, idle, max_event_bytes)
        .filter_map(|ev| async move {
            match ev {
                Err(e) => Some(Err(e)),
                Ok(ev) if ev.data.trim().is_empty() => None,
                Ok(ev) => Some(
                    serde_json::from_str::<Value>(&ev.data)
                        .map_err(|e| ClientError::decode("SSE data", e, ev.data.as_bytes())),
                ),
            }
        })
        .boxed()
}

/// The SSE events of a streaming body, parsed as the HTML standard says
/// ([`crate::sse::SseParser`]). Events with neither data, event type nor id
/// (comments, keep-alives) are skipped. A read that stays silent longer than
/// `idle` is [`ClientError::Timeout`]; an event over 16 MiB is a decode error.
pub(crate) fn sse_events<S, E>(body: S, idle: Option<Duration>) -> SseStream
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: std::error::Error + Send + Sync + 'static,
{
    sse_events_limited(body, idle, crate::sse::DEFAULT_MAX_EVENT_BYTES)
}

/// As [`sse_events`], with events (and lines) of at most `max_event_bytes`.
pub(crate) fn sse_events_limited<S, E>(
    body: S,
    idle: Option<Duration>,
    max_event_bytes: usize,
) -> SseStream
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: std::error::Error + Send + Sync + 'static,
{
    use std::collections::VecDeque;
    struct State<S> {
        body: Pin<Box<S>>,
        parser: SseParser,
        ready: VecDeque<SseEvent>,
        /// Ends the stream once the events before it are delivered.
        error: Option<ClientError>,
        done: bool,
    }
    let state = State {
        body: Box::pin(body),
        parser: SseParser::new(max_event_bytes),
        ready: VecDeque::new(),
        error: None,
        done: false,
    };
    let parsed = futures::stream::unfold(state, |mut st| async move {
        loop {
            if let Some(ev) = st.ready.pop_front() {
                return Some((Ok(ev), st));
            }
            if let Some(e) = st.error.take() {
                return Some((Err(e), st));
            }
            if st.done {
                return None;
            }
            match st.body.next().await {
                None => st.done = true,
                Some(Err(e)) => {
                    st.done = true;
                    st.error = Some(ClientError::Transport(format!(
                        "stream body: {}",
                        error_chain(&e)
                    )));
                }
                Some(Ok(chunk)) => {
                    let mut out = Vec::new();
                    let fed = st.parser.feed(&chunk, &mut out);
                    // Events completed before an oversized one are still delivered.
                    st.ready.extend(out);
                    if let Err(too_large) = fed {
                        st.done = true;
                        st.error = Some(sse_too_large(too_large));
                    }
                }
            }
        }
    })
    .boxed();
    match idle {
        None => parsed,
        Some(limit) => with_idle_timeout(parsed, limit),
    }
}

fn sse_too_large(e: TooLarge) -> ClientError {
    ClientError::Decode {
        what: "SSE stream".into(),
        detail: format!("an event is larger than {} bytes", e.limit),
    }
}

/// Parses a whole SSE body (e.g. the body of a [`RawResponse`]) into its
/// events, with the same parser the streams use.
pub async fn parse_sse(body: Bytes) -> Result<Vec<SseEvent>, ClientError> {
    let one = futures::stream::iter(vec![Ok::<_, std::io::Error>(body)]);
    let mut out = Vec::new();
    let mut s = sse_events(one, None);
    while let Some(ev) = s.next().await {
        out.push(ev?);
    }
    Ok(out)
}

pub(crate) use taskwire_wire::error::error_chain;

/// Ends the stream with a timeout error when no item arrives within `limit`.
pub(crate) fn with_idle_timeout<T: Send + 'static>(
    s: Pin<Box<dyn Stream<Item = Result<T, ClientError>> + Send>>,
    limit: Duration,
) -> Pin<Box<dyn Stream<Item = Result<T, ClientError>> + Send>> {
    futures::stream::unfold(Some(s), move |state| async move {
        let mut s = state?;
        match tokio::time::timeout(limit, s.next()).await {
            Ok(Some(item)) => Some((item, Some(s))),
            Ok(None) => None,
            Err(_) => Some((
                Err(ClientError::Timeout(format!(
                    "no stream data for {} ms",
                    limit.as_millis()
                ))),
                None,
            )),
        }
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;

    fn chunks(
        parts: &[&str],
    ) -> impl Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static {
        let v: Vec<Result<Bytes, std::io::Error>> = parts
            .iter()
            .map(|p| Ok(Bytes::from(p.to_string())))
            .collect();
        futures::stream::iter(v)
    }

    #[tokio::test]
    async fn sse_frames_split_across_chunks() {
        let s = sse_events(
            chunks(&[
                ": keep-alive\n\n",
                "id: 1\nda",
                "ta: {\"a\":1}\n",
                "\nevent: x\ndata: a\ndata: b\n\n",
                "data:\n\n",
            ]),
            None,
        );
        let evs: Vec<_> = s.collect().await;
        let evs: Vec<SseEvent> = evs.into_iter().map(|e| e.expect("event")).collect();
        assert_eq!(evs.len(), 3, "{evs:?}");
        assert_eq!(evs[0].id.as_deref(), Some("1"));
        assert_eq!(evs[0].data, "{\"a\":1}");
        assert_eq!(evs[1].event.as_deref(), Some("x"));
        assert_eq!(evs[1].data, "a\nb");
        assert_eq!(evs[2].data, "");
    }

    #[tokio::test]
    async fn whole_bodies_parse() {
        let evs = parse_sse(Bytes::from_static(b"id: 1\ndata: a\n\ndata: b\n\n"))
            .await
            .expect("events");
        assert_eq!(evs.len(), 2);
        assert_eq!(evs[1].data, "b");
        // A final event without its blank line is not an event.
        let evs = parse_sse(Bytes::from_static(b"data: a\n\ndata: cut"))
            .await
            .expect("events");
        assert_eq!(evs.len(), 1);
    }

    #[tokio::test]
    async fn sse_body_error_is_transport() {
        let body = futures::stream::iter(vec![
            Ok(Bytes::from_static(b"data: 1\n\n")),
            Err(std::io::Error::other("reset")),
        ]);
        let evs: Vec<_> = sse_events(body, None).collect().await;
        assert!(evs[0].is_ok());
        assert!(matches!(evs[1], Err(ClientError::Transport(_))), "{evs:?}");
    }

    #[tokio::test]
    async fn idle_timeout_ends_a_silent_stream() {
        let body = futures::stream::pending::<Result<Bytes, Infallible>>();
        let body = body.map(|r| r.map_err(|e| match e {}));
        let body = body.map(|r: Result<Bytes, std::io::Error>| r);
        let mut s = sse_events(body, Some(Duration::from_millis(20)));
        let first = s.next().await;
        assert!(
            matches!(first, Some(Err(ClientError::Timeout(_)))),
            "{first:?}"
        );
        assert!(s.next().await.is_none());
    }

    #[test]
    fn rpc_result_shapes() {
        let ok = serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {"x": 1}});
        assert_eq!(rpc_result(&ok, None).expect("result")["x"], 1);
        let err = serde_json::json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "nope"}});
        assert_eq!(
            rpc_result(&err, Some(404)).expect_err("error").rpc_code(),
            Some(-32601)
        );
        let neither = serde_json::json!({"jsonrpc": "2.0", "id": 1});
        assert!(matches!(
            rpc_result(&neither, None),
            Err(ClientError::Protocol(_))
        ));
        assert!(matches!(
            rpc_result(&serde_json::json!([1]), None),
            Err(ClientError::Protocol(_))
        ));
    }

    #[test]
    fn http_error_reads_cas_shape() {
        let raw = RawResponse {
            status: 404,
            headers: vec![],
            body: Bytes::from_static(br#"{"error":{"code":"not_found","message":"no such task"}}"#),
        };
        match http_error(&raw) {
            ClientError::Http {
                status,
                code,
                message,
                ..
            } => {
                assert_eq!(status, 404);
                assert_eq!(code.as_deref(), Some("not_found"));
                assert_eq!(message.as_deref(), Some("no such task"));
            }
            other => panic!("{other:?}"),
        }
    }
}

//! AG-UI: POST a `RunAgentInput` and read the run's events, as SSE (JSON
//! events) or as protobuf frames (`application/vnd.ag-ui.event+proto`: a
//! 4-byte big-endian length, then an `ag_ui.Event`), chosen by `Accept`.
//!
//! Protobuf events are converted to the same JSON as their SSE form, so both
//! encodings yield identical [`AguiEvent`]s (the decoded message is kept in
//! [`AguiEvent::proto`]).
//!
//! A stream that breaks before the run ended (`RUN_FINISHED` or `RUN_ERROR`)
//! is re-opened with backoff through taskwire's run-events route
//! (`GET {endpoint}/threads/{threadId}/runs/{runId}/events`) with
//! `Last-Event-ID` (SSE; what the server restates up to that id, such as
//! taskwire's reopening `RUN_STARTED`, is dropped, so the merged stream is the
//! uncut one); protobuf frames carry no ids, so a protobuf reconnect re-reads
//! the run and skips the events already delivered. The
//! AG-UI specification itself has no resume cursor: against other servers a
//! break ends the stream with [`ClientError::StreamBroken`].

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::{Buf, Bytes, BytesMut};
use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use prost::Message as _;
use serde_json::{json, Map, Value};
use taskwire_wire::wkt;

use crate::config::{BackoffPolicy, ClientConfig, Exchange};
use crate::error::ClientError;
use crate::http::{self, RawResponse};

pub use crate::a2a_stream::EventOrigin;

/// The `ag_ui` protobuf messages of the wire layer.
pub use taskwire_wire::agui::pb;

/// The default endpoint path.
pub const AGUI_PATH: &str = "/agui";
/// The protobuf media type.
pub const PROTO_MEDIA_TYPE: &str = "application/vnd.ag-ui.event+proto";
/// Largest protobuf frame accepted (16 MiB).
pub const MAX_FRAME: usize = 16 << 20;

/// Event type names, and the JSON wire types a client posts: the wire layer's.
pub use taskwire_wire::agui::{
    event_type, InputMessage, ResumeEntry, ResumeStatus, RunAgentInput, PROTOCOL_VERSION,
};

/// How events are framed on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum AguiEncoding {
    /// `text/event-stream`, one JSON event per frame.
    #[default]
    Sse,
    /// `application/vnd.ag-ui.event+proto`, length-prefixed protobuf.
    Protobuf,
}

impl AguiEncoding {
    /// The `Accept` header value asking for this encoding.
    pub fn accept(self) -> &'static str {
        match self {
            Self::Sse => http::SSE_MEDIA_TYPE,
            Self::Protobuf => "application/vnd.ag-ui.event+proto, text/event-stream;q=0.5",
        }
    }
}

/// One AG-UI event.
#[derive(Clone, Debug, PartialEq)]
pub struct AguiEvent {
    /// The event `type` (`RUN_STARTED`, …).
    pub kind: String,
    /// The event as JSON (for protobuf: converted to the SSE form).
    pub raw: Value,
    /// The SSE `id:` (SSE only).
    pub id: Option<String>,
    /// The decoded protobuf message (protobuf only).
    pub proto: Option<pb::Event>,
    /// Where the event came from (`Live` or `Resumed`).
    pub origin: EventOrigin,
}

impl AguiEvent {
    /// RUN_FINISHED or RUN_ERROR.
    pub fn ends_run(&self) -> bool {
        self.kind == event_type::RUN_FINISHED || self.kind == event_type::RUN_ERROR
    }

    /// The outcome type of a RUN_FINISHED (`success` when absent), else None.
    pub fn outcome_type(&self) -> Option<String> {
        if self.kind != event_type::RUN_FINISHED {
            return None;
        }
        Some(
            self.raw
                .pointer("/outcome/type")
                .and_then(Value::as_str)
                .unwrap_or("success")
                .to_string(),
        )
    }

    /// The interrupts of an interrupting RUN_FINISHED.
    pub fn interrupts(&self) -> Vec<Value> {
        self.raw
            .pointer("/outcome/interrupts")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    }
}

/// A stream of [`AguiEvent`]s that reconnects on a break (see the module
/// docs). Items are `Err` only once, at the end.
pub struct AguiStream {
    rx: tokio::sync::mpsc::Receiver<Result<AguiEvent, ClientError>>,
    reconnects: Arc<Mutex<u32>>,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for AguiStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AguiStream").finish_non_exhaustive()
    }
}

impl Drop for AguiStream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Stream for AguiStream {
    type Item = Result<AguiEvent, ClientError>;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx)
    }
}

impl AguiStream {
    /// How many times the stream was re-opened.
    pub fn reconnects(&self) -> u32 {
        self.reconnects.lock().map(|g| *g).unwrap_or(0)
    }

    /// Collects every event until the stream ends; the first error ends it.
    pub async fn collect_all(mut self) -> Result<Vec<AguiEvent>, ClientError> {
        let mut out = Vec::new();
        while let Some(e) = self.next().await {
            out.push(e?);
        }
        Ok(out)
    }
}

type EventStream = BoxStream<'static, Result<AguiEvent, ClientError>>;

/// The AG-UI client. Cheap to clone.
#[derive(Clone, Debug)]
pub struct AguiClient {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: ClientConfig,
    http: reqwest::Client,
    endpoint: String,
}

impl AguiClient {
    /// A client for `{base}/agui`.
    pub fn new(config: ClientConfig) -> Result<Self, ClientError> {
        Self::with_endpoint(config, AGUI_PATH)
    }

    /// A client for the endpoint `url` (absolute, or a path below the base).
    pub fn with_endpoint(config: ClientConfig, url: &str) -> Result<Self, ClientError> {
        let http = config.http_client()?;
        let endpoint = config.url(url).trim_end_matches('/').to_string();
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                http,
                endpoint,
            }),
        })
    }

    /// The endpoint url.
    pub fn endpoint(&self) -> &str {
        &self.inner.endpoint
    }

    /// POSTs the input and streams the run's events (reconnecting on a break).
    pub async fn run(
        &self,
        input: &RunAgentInput,
        encoding: AguiEncoding,
    ) -> Result<AguiStream, ClientError> {
        let body = serde_json::to_value(input).map_err(|e| ClientError::Config(e.to_string()))?;
        let c = &self.inner.config;
        self.observe("POST", &body);
        let rb = self
            .inner
            .http
            .post(&self.inner.endpoint)
            .header(reqwest::header::ACCEPT, encoding.accept())
            .header(reqwest::header::CONTENT_TYPE, http::JSON_MEDIA_TYPE)
            .body(body.to_string());
        let resp = tokio::time::timeout(c.request_timeout, c.send(rb))
            .await
            .map_err(|_| ClientError::Timeout("AG-UI run: no response head".into()))??;
        let first = self.events_of(resp, EventOrigin::Live).await?;
        Ok(self.spawn(
            first,
            Some((input.thread_id.clone(), input.run_id.clone())),
            encoding,
        ))
    }

    /// `GET {endpoint}/threads/{thread}/runs/{run}/events` (taskwire): the run
    /// again, after `last_event_id` when given.
    pub async fn run_events(
        &self,
        thread_id: &str,
        run_id: &str,
        last_event_id: Option<&str>,
        encoding: AguiEncoding,
    ) -> Result<AguiStream, ClientError> {
        let first = self
            .open_run_events(
                thread_id,
                run_id,
                last_event_id,
                encoding,
                EventOrigin::Live,
            )
            .await?;
        Ok(self.spawn(
            first,
            Some((thread_id.to_string(), run_id.to_string())),
            encoding,
        ))
    }

    /// `GET {endpoint}/threads/{thread}` (taskwire): every closed run of the
    /// thread, restated as snapshots (no reconnect).
    pub async fn replay_thread(
        &self,
        thread_id: &str,
        encoding: AguiEncoding,
    ) -> Result<AguiStream, ClientError> {
        let url = format!("{}/threads/{thread_id}", self.inner.endpoint);
        let resp = self.get(&url, None, encoding).await?;
        let first = self.events_of(resp, EventOrigin::Live).await?;
        Ok(self.spawn(first, None, encoding))
    }

    /// `GET {endpoint}`: whether the endpoint answers HTTP at all (AG-UI has
    /// no discovery; a server that is up answers, usually 405). The status.
    pub async fn probe(&self) -> Result<u16, ClientError> {
        let resp = self
            .inner
            .http
            .get(&self.inner.endpoint)
            .timeout(self.inner.config.request_timeout)
            .send()
            .await?;
        Ok(resp.status().as_u16())
    }

    /// `POST {endpoint}/threads/{thread}/runs/{run}/cancel` (taskwire).
    pub async fn cancel_run(&self, thread_id: &str, run_id: &str) -> Result<(), ClientError> {
        let url = format!(
            "{}/threads/{thread_id}/runs/{run_id}/cancel",
            self.inner.endpoint
        );
        let resp = self
            .inner
            .http
            .post(&url)
            .timeout(self.inner.config.request_timeout);
        let resp = self.inner.config.send(resp).await?;
        let raw = RawResponse::read_limited(resp, self.inner.config.max_message_bytes).await?;
        if !(200..300).contains(&raw.status) {
            return Err(http::http_error(&raw));
        }
        Ok(())
    }

    /// POSTs `body` as is to the endpoint: for malformed-request probes.
    pub async fn post_raw(
        &self,
        body: impl Into<Bytes>,
        headers: &[(&str, &str)],
    ) -> Result<RawResponse, ClientError> {
        let mut rb = self
            .inner
            .http
            .post(&self.inner.endpoint)
            .timeout(self.inner.config.request_timeout);
        if !headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
        {
            rb = rb.header(reqwest::header::CONTENT_TYPE, http::JSON_MEDIA_TYPE);
        }
        for (k, v) in headers {
            rb = rb.header(*k, *v);
        }
        RawResponse::read(self.inner.config.send(rb.body(body.into())).await?).await
    }

    fn observe(&self, op: &str, body: &Value) {
        self.inner.config.observe(|| Exchange {
            protocol: "agui",
            operation: op.to_string(),
            request: body.clone(),
            status: None,
            response: Value::Null,
        });
    }

    async fn get(
        &self,
        url: &str,
        last_event_id: Option<&str>,
        encoding: AguiEncoding,
    ) -> Result<reqwest::Response, ClientError> {
        let mut rb = self
            .inner
            .http
            .get(url)
            .header(reqwest::header::ACCEPT, encoding.accept());
        if let Some(id) = last_event_id {
            rb = rb.header("Last-Event-ID", id);
        }
        tokio::time::timeout(
            self.inner.config.request_timeout,
            self.inner.config.send(rb),
        )
        .await
        .map_err(|_| ClientError::Timeout("AG-UI: no response head".into()))?
    }

    async fn open_run_events(
        &self,
        thread_id: &str,
        run_id: &str,
        last_event_id: Option<&str>,
        encoding: AguiEncoding,
        origin: EventOrigin,
    ) -> Result<EventStream, ClientError> {
        let url = format!(
            "{}/threads/{thread_id}/runs/{run_id}/events",
            self.inner.endpoint
        );
        let resp = self.get(&url, last_event_id, encoding).await?;
        self.events_of(resp, origin).await
    }

    /// The events of a response, by its content type.
    async fn events_of(
        &self,
        resp: reqwest::Response,
        origin: EventOrigin,
    ) -> Result<EventStream, ClientError> {
        let status = resp.status().as_u16();
        if !(200..300).contains(&status) {
            let raw = RawResponse::read_limited(resp, self.inner.config.max_message_bytes).await?;
            return Err(http::http_error(&raw));
        }
        let media = http::content_type(&resp);
        let observer = self.inner.config.observer.clone();
        let idle = self.inner.config.stream_idle_timeout;
        let max = self.inner.config.max_message_bytes;
        let s: EventStream = match media.as_deref() {
            Some(http::SSE_MEDIA_TYPE) => http::sse_events_limited(resp.bytes_stream(), idle, max)
                .filter_map(move |ev| async move {
                    match ev {
                        Err(e) => Some(Err(e)),
                        Ok(ev) if ev.data.trim().is_empty() => None,
                        Ok(ev) => Some(sse_event(&ev.data, ev.id, origin)),
                    }
                })
                .boxed(),
            Some(PROTO_MEDIA_TYPE) => {
                let frames = proto_frames(resp.bytes_stream(), max).map(move |f| {
                    f.and_then(|bytes| {
                        let ev = pb::Event::decode(bytes.as_ref())
                            .map_err(|e| ClientError::decode("ag_ui.Event", e, &bytes))?;
                        let raw = event_json(&ev)?;
                        let kind = raw
                            .get("type")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string();
                        Ok(AguiEvent {
                            kind,
                            raw,
                            id: None,
                            proto: Some(ev),
                            origin,
                        })
                    })
                });
                let frames = frames.boxed();
                match idle {
                    Some(l) => http::with_idle_timeout(frames, l),
                    None => frames,
                }
            }
            // An empty body (nothing left to resume) may come without a type.
            None => futures::stream::empty().boxed(),
            Some(other) => {
                return Err(ClientError::ContentType {
                    expected: format!("{} or {PROTO_MEDIA_TYPE}", http::SSE_MEDIA_TYPE),
                    got: Some(other.to_string()),
                })
            }
        };
        Ok(s.inspect(move |ev| {
            if let (Some(o), Ok(ev)) = (&observer, ev) {
                o(&Exchange {
                    protocol: "agui",
                    operation: format!("{} (event)", ev.kind),
                    request: Value::Null,
                    status: None,
                    response: ev.raw.clone(),
                });
            }
        })
        .boxed())
    }

    fn spawn(
        &self,
        first: EventStream,
        run: Option<(String, String)>,
        encoding: AguiEncoding,
    ) -> AguiStream {
        let (tx, rx) = tokio::sync::mpsc::channel(32);
        let reconnects = Arc::new(Mutex::new(0u32));
        let me = self.clone();
        let counter = reconnects.clone();
        let backoff = self.inner.config.backoff.clone();
        let task = tokio::spawn(async move {
            me.drive(first, run, encoding, backoff, counter, tx).await;
        });
        AguiStream {
            rx,
            reconnects,
            task,
        }
    }

    async fn drive(
        &self,
        first: EventStream,
        run: Option<(String, String)>,
        encoding: AguiEncoding,
        backoff: BackoffPolicy,
        reconnects: Arc<Mutex<u32>>,
        tx: tokio::sync::mpsc::Sender<Result<AguiEvent, ClientError>>,
    ) {
        let mut stream = first;
        let mut last_id: Option<String> = None;
        let mut delivered: usize = 0;
        let mut attempt: u32 = 0;
        let mut skip: usize = 0;
        let mut in_run = false;
        // After an SSE reconnect: drop what the server restates up to the
        // cursor (taskwire reopens with the run's RUN_STARTED and what was
        // open, at the cursor's id).
        let mut skip_through: Option<String> = None;
        loop {
            let mut progress = false;
            let err = loop {
                match stream.next().await {
                    Some(Ok(ev)) => {
                        if skip > 0 {
                            skip -= 1;
                            continue;
                        }
                        if let (Some(after), Some(id)) = (&skip_through, &ev.id) {
                            if !id_after(id, after) {
                                continue;
                            }
                            skip_through = None;
                        }
                        if ev.id.is_none() || ev.id != last_id {
                            progress = true;
                        }
                        if ev.id.is_some() {
                            last_id = ev.id.clone();
                        }
                        delivered += 1;
                        if ev.kind == event_type::RUN_STARTED {
                            in_run = true;
                        }
                        let ends = ev.ends_run();
                        if ends {
                            in_run = false;
                        }
                        if tx.send(Ok(ev)).await.is_err() {
                            return;
                        }
                    }
                    Some(Err(e)) => break e,
                    None => {
                        if !in_run {
                            return;
                        }
                        break ClientError::Protocol("the event stream ended inside a run".into());
                    }
                }
            };
            if progress {
                attempt = 0;
            }
            // A malformed event is a server fault a reconnect would repeat.
            if matches!(
                err,
                ClientError::Decode { .. } | ClientError::ContentType { .. }
            ) {
                let _ = tx.send(Err(err)).await;
                return;
            }
            let Some((thread, run_id)) = &run else {
                let _ = tx.send(Err(err)).await;
                return;
            };
            if attempt >= backoff.max_attempts {
                let _ = tx
                    .send(Err(ClientError::StreamBroken {
                        attempts: attempt,
                        last: err.to_string(),
                    }))
                    .await;
                return;
            }
            tokio::time::sleep(backoff.delay(attempt)).await;
            attempt += 1;
            if let Ok(mut g) = reconnects.lock() {
                *g += 1;
            }
            let (cursor, to_skip) = match encoding {
                AguiEncoding::Sse => (last_id.clone(), 0),
                AguiEncoding::Protobuf => (None, delivered),
            };
            match self
                .open_run_events(
                    thread,
                    run_id,
                    cursor.as_deref(),
                    encoding,
                    EventOrigin::Resumed,
                )
                .await
            {
                Ok(s) => {
                    stream = s;
                    skip = to_skip;
                    skip_through = cursor.clone();
                    in_run = in_run || cursor.is_some();
                }
                Err(e) if e.is_transient() => {
                    stream = futures::stream::iter(vec![Err(e)]).boxed();
                }
                Err(e) => {
                    let _ = tx
                        .send(Err(ClientError::StreamBroken {
                            attempts: attempt,
                            last: format!("{err}; reconnect refused: {e}"),
                        }))
                        .await;
                    return;
                }
            }
        }
    }
}

/// Decodes a whole protobuf body (length-prefixed `ag_ui.Event`s, e.g. the
/// body of a [`RawResponse`]) into events in their JSON form.
pub fn decode_proto_body(mut body: &[u8]) -> Result<Vec<AguiEvent>, ClientError> {
    let mut out = Vec::new();
    while !body.is_empty() {
        if body.len() < 4 {
            return Err(ClientError::Protocol(format!(
                "protobuf body ends inside a length prefix ({} bytes left)",
                body.len()
            )));
        }
        let len = u32::from_be_bytes([body[0], body[1], body[2], body[3]]) as usize;
        let rest = &body[4..];
        if len > MAX_FRAME || rest.len() < len {
            return Err(ClientError::Protocol(format!(
                "protobuf frame of {len} bytes, {} left",
                rest.len()
            )));
        }
        let (frame, tail) = rest.split_at(len);
        let ev =
            pb::Event::decode(frame).map_err(|e| ClientError::decode("ag_ui.Event", e, frame))?;
        let raw = event_json(&ev)?;
        let kind = raw
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        out.push(AguiEvent {
            kind,
            raw,
            id: None,
            proto: Some(ev),
            origin: EventOrigin::Live,
        });
        body = tail;
    }
    Ok(out)
}

/// Whether SSE id `id` comes after `after`: ids of dot-separated numbers
/// (`<seq>.<k>`, as taskwire writes them) compare numerically, others only
/// by equality.
fn id_after(id: &str, after: &str) -> bool {
    fn parts(s: &str) -> Option<Vec<u64>> {
        s.split('.').map(|p| p.parse().ok()).collect()
    }
    match (parts(id), parts(after)) {
        (Some(a), Some(b)) => a > b,
        _ => id != after,
    }
}

fn sse_event(
    data: &str,
    id: Option<String>,
    origin: EventOrigin,
) -> Result<AguiEvent, ClientError> {
    let raw: Value = serde_json::from_str(data)
        .map_err(|e| ClientError::decode("AG-UI event (JSON)", e, data.as_bytes()))?;
    let kind = raw
        .get("type")
        .and_then(Value::as_str)
        .ok_or_else(|| ClientError::decode("AG-UI event", "no string `type`", data.as_bytes()))?
        .to_string();
    Ok(AguiEvent {
        kind,
        raw,
        id,
        proto: None,
        origin,
    })
}

/// Splits a byte stream into length-prefixed frames of at most `max` bytes.
fn proto_frames<S, E>(body: S, max: usize) -> BoxStream<'static, Result<Bytes, ClientError>>
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: Into<ClientError> + Send + 'static,
{
    futures::stream::unfold(
        (Box::pin(body), BytesMut::new(), false),
        move |(mut body, mut buf, done)| async move {
            if done {
                return None;
            }
            loop {
                if buf.len() >= 4 {
                    let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
                    if len > max {
                        return Some((
                            Err(ClientError::Decode {
                                what: "protobuf frame".into(),
                                detail: format!("frame of {len} bytes exceeds {max}"),
                            }),
                            (body, buf, true),
                        ));
                    }
                    if buf.len() >= 4 + len {
                        buf.advance(4);
                        let frame = buf.split_to(len).freeze();
                        return Some((Ok(frame), (body, buf, false)));
                    }
                }
                match body.next().await {
                    Some(Ok(chunk)) => buf.extend_from_slice(&chunk),
                    Some(Err(e)) => return Some((Err(e.into()), (body, buf, true))),
                    None => {
                        if buf.is_empty() {
                            return None;
                        }
                        return Some((
                            Err(ClientError::Protocol(format!(
                                "protobuf stream ended inside a frame ({} bytes left)",
                                buf.len()
                            ))),
                            (body, buf, true),
                        ));
                    }
                }
            }
        },
    )
    .boxed()
}

// ---- protobuf → JSON (the SSE form of each event) ----

fn val(v: &wkt::Value) -> Value {
    Value::from(v)
}

fn strukt(v: &wkt::Struct) -> Value {
    Value::Object(v.into())
}

struct Obj(Map<String, Value>);

impl Obj {
    fn new(kind: &str, base: Option<&pb::BaseEvent>) -> Self {
        let mut m = Map::new();
        m.insert("type".into(), Value::String(kind.into()));
        if let Some(b) = base {
            if let Some(t) = b.timestamp {
                m.insert("timestamp".into(), json!(t));
            }
            if let Some(r) = &b.raw_event {
                m.insert("rawEvent".into(), val(r));
            }
            if let Some(s) = &b.metadata {
                m.insert("metadata".into(), strukt(s));
            }
        }
        Self(m)
    }
    fn s(mut self, k: &str, v: &str) -> Self {
        self.0.insert(k.into(), Value::String(v.into()));
        self
    }
    fn os(mut self, k: &str, v: &Option<String>) -> Self {
        if let Some(v) = v {
            self.0.insert(k.into(), Value::String(v.clone()));
        }
        self
    }
    fn v(mut self, k: &str, v: Value) -> Self {
        self.0.insert(k.into(), v);
        self
    }
    fn ov(mut self, k: &str, v: &Option<wkt::Value>) -> Self {
        if let Some(v) = v {
            self.0.insert(k.into(), val(v));
        }
        self
    }
    fn done(self) -> Value {
        Value::Object(self.0)
    }
}

fn patch(ops: &[pb::JsonPatchOperation]) -> Value {
    Value::Array(
        ops.iter()
            .map(|o| {
                let op = match pb::JsonPatchOperationType::try_from(o.op) {
                    Ok(pb::JsonPatchOperationType::Remove) => "remove",
                    Ok(pb::JsonPatchOperationType::Replace) => "replace",
                    Ok(pb::JsonPatchOperationType::Move) => "move",
                    Ok(pb::JsonPatchOperationType::Copy) => "copy",
                    Ok(pb::JsonPatchOperationType::Test) => "test",
                    _ => "add",
                };
                let mut m = Map::new();
                m.insert("op".into(), json!(op));
                m.insert("path".into(), json!(o.path));
                if let Some(f) = &o.from {
                    m.insert("from".into(), json!(f));
                }
                if let Some(v) = &o.value {
                    m.insert("value".into(), val(v));
                }
                Value::Object(m)
            })
            .collect(),
    )
}

fn usage(u: &[pb::Usage]) -> Value {
    Value::Array(
        u.iter()
            .map(|u| {
                let mut m = Map::new();
                let mut put = |k: &str, v: Option<Value>| {
                    if let Some(v) = v {
                        m.insert(k.into(), v);
                    }
                };
                put("provider", u.provider.clone().map(Value::String));
                put("model", u.model.clone().map(Value::String));
                put("inputTokens", u.input_tokens.map(|x| json!(x)));
                put("outputTokens", u.output_tokens.map(|x| json!(x)));
                put("totalTokens", u.total_tokens.map(|x| json!(x)));
                put("reasoningTokens", u.reasoning_tokens.map(|x| json!(x)));
                put("cachedInputTokens", u.cached_input_tokens.map(|x| json!(x)));
                put(
                    "cacheWriteInputTokens",
                    u.cache_write_input_tokens.map(|x| json!(x)),
                );
                Value::Object(m)
            })
            .collect(),
    )
}

fn message(m: &pb::Message) -> Value {
    let mut o = Map::new();
    o.insert("id".into(), json!(m.id));
    o.insert("role".into(), json!(m.role));
    if m.role == "activity" {
        if let Some(t) = &m.activity_type {
            o.insert("activityType".into(), json!(t));
        }
        if let Some(c) = &m.activity_content {
            o.insert("content".into(), strukt(c));
        }
    } else if let Some(c) = &m.content {
        o.insert("content".into(), json!(c));
    }
    let mut put = |k: &str, v: &Option<String>| {
        if let Some(v) = v {
            o.insert(k.into(), json!(v));
        }
    };
    put("name", &m.name);
    put("toolCallId", &m.tool_call_id);
    put("error", &m.error);
    put("subagentRunId", &m.subagent_run_id);
    put("encryptedValue", &m.encrypted_value);
    if !m.tool_calls.is_empty() {
        let calls = m
            .tool_calls
            .iter()
            .map(|c| {
                let f = c.function.as_ref();
                json!({"id": c.id, "type": if c.r#type.is_empty() { "function" } else { c.r#type.as_str() },
                    "function": {"name": f.map(|f| f.name.as_str()).unwrap_or(""),
                                 "arguments": f.map(|f| f.arguments.as_str()).unwrap_or("")}})
            })
            .collect();
        o.insert("toolCalls".into(), Value::Array(calls));
    }
    if let Some(md) = &m.metadata {
        o.insert("metadata".into(), strukt(md));
    }
    Value::Object(o)
}

fn interrupt(i: &pb::Interrupt) -> Value {
    let mut o = Map::new();
    o.insert("id".into(), json!(i.id));
    o.insert("reason".into(), json!(i.reason));
    if let Some(v) = &i.message {
        o.insert("message".into(), json!(v));
    }
    if let Some(v) = &i.tool_call_id {
        o.insert("toolCallId".into(), json!(v));
    }
    if let Some(v) = &i.response_schema {
        o.insert("responseSchema".into(), val(v));
    }
    if let Some(v) = &i.expires_at {
        o.insert("expiresAt".into(), json!(v));
    }
    if let Some(v) = &i.metadata {
        o.insert("metadata".into(), val(v));
    }
    if let Some(v) = &i.subagent_run_id {
        o.insert("subagentRunId".into(), json!(v));
    }
    Value::Object(o)
}

/// The JSON (SSE) form of a protobuf event.
pub fn event_json(e: &pb::Event) -> Result<Value, ClientError> {
    use pb::event::Event as E;
    let ev = e.event.as_ref().ok_or_else(|| ClientError::Decode {
        what: "ag_ui.Event".into(),
        detail: "no event in the oneof".into(),
    })?;
    let b = |x: &Option<pb::BaseEvent>| x.clone();
    Ok(match ev {
        E::TextMessageStart(x) => Obj::new("TEXT_MESSAGE_START", b(&x.base_event).as_ref())
            .s("messageId", &x.message_id)
            .os("role", &x.role)
            .os("name", &x.name)
            .os("subagentRunId", &x.subagent_run_id)
            .done(),
        E::TextMessageContent(x) => Obj::new("TEXT_MESSAGE_CONTENT", x.base_event.as_ref())
            .s("messageId", &x.message_id)
            .s("delta", &x.delta)
            .os("subagentRunId", &x.subagent_run_id)
            .done(),
        E::TextMessageEnd(x) => Obj::new("TEXT_MESSAGE_END", x.base_event.as_ref())
            .s("messageId", &x.message_id)
            .os("subagentRunId", &x.subagent_run_id)
            .done(),
        E::TextMessageChunk(x) => Obj::new("TEXT_MESSAGE_CHUNK", x.base_event.as_ref())
            .os("messageId", &x.message_id)
            .os("role", &x.role)
            .os("delta", &x.delta)
            .os("name", &x.name)
            .os("subagentRunId", &x.subagent_run_id)
            .done(),
        E::ToolCallStart(x) => Obj::new("TOOL_CALL_START", x.base_event.as_ref())
            .s("toolCallId", &x.tool_call_id)
            .s("toolCallName", &x.tool_call_name)
            .os("parentMessageId", &x.parent_message_id)
            .os("subagentRunId", &x.subagent_run_id)
            .done(),
        E::ToolCallArgs(x) => Obj::new("TOOL_CALL_ARGS", x.base_event.as_ref())
            .s("toolCallId", &x.tool_call_id)
            .s("delta", &x.delta)
            .os("subagentRunId", &x.subagent_run_id)
            .done(),
        E::ToolCallEnd(x) => Obj::new("TOOL_CALL_END", x.base_event.as_ref())
            .s("toolCallId", &x.tool_call_id)
            .os("subagentRunId", &x.subagent_run_id)
            .done(),
        E::ToolCallChunk(x) => Obj::new("TOOL_CALL_CHUNK", x.base_event.as_ref())
            .os("toolCallId", &x.tool_call_id)
            .os("toolCallName", &x.tool_call_name)
            .os("parentMessageId", &x.parent_message_id)
            .os("delta", &x.delta)
            .os("subagentRunId", &x.subagent_run_id)
            .done(),
        E::ToolCallResult(x) => Obj::new("TOOL_CALL_RESULT", x.base_event.as_ref())
            .s("messageId", &x.message_id)
            .s("toolCallId", &x.tool_call_id)
            .s("content", &x.content)
            .os("role", &x.role)
            .os("subagentRunId", &x.subagent_run_id)
            .done(),
        E::StateSnapshot(x) => Obj::new("STATE_SNAPSHOT", x.base_event.as_ref())
            .v(
                "snapshot",
                x.snapshot.as_ref().map(val).unwrap_or(Value::Null),
            )
            .os("subagentRunId", &x.subagent_run_id)
            .done(),
        E::StateDelta(x) => Obj::new("STATE_DELTA", x.base_event.as_ref())
            .v("delta", patch(&x.delta))
            .os("subagentRunId", &x.subagent_run_id)
            .done(),
        E::MessagesSnapshot(x) => Obj::new("MESSAGES_SNAPSHOT", x.base_event.as_ref())
            .v(
                "messages",
                Value::Array(x.messages.iter().map(message).collect()),
            )
            .done(),
        E::ActivitySnapshot(x) => {
            let mut o = Obj::new("ACTIVITY_SNAPSHOT", x.base_event.as_ref())
                .s("messageId", &x.message_id)
                .s("activityType", &x.activity_type)
                .v(
                    "content",
                    x.content.as_ref().map(strukt).unwrap_or(json!({})),
                )
                .os("subagentRunId", &x.subagent_run_id);
            if let Some(r) = x.replace {
                o = o.v("replace", json!(r));
            }
            o.done()
        }
        E::ActivityDelta(x) => Obj::new("ACTIVITY_DELTA", x.base_event.as_ref())
            .s("messageId", &x.message_id)
            .s("activityType", &x.activity_type)
            .v("patch", patch(&x.patch))
            .os("subagentRunId", &x.subagent_run_id)
            .done(),
        E::Raw(x) => Obj::new("RAW", x.base_event.as_ref())
            .v("event", x.event.as_ref().map(val).unwrap_or(Value::Null))
            .os("source", &x.source)
            .os("subagentRunId", &x.subagent_run_id)
            .done(),
        E::Custom(x) => Obj::new("CUSTOM", x.base_event.as_ref())
            .s("name", &x.name)
            .ov("value", &x.value)
            .os("subagentRunId", &x.subagent_run_id)
            .done(),
        E::RunStarted(x) => {
            let mut o = Obj::new("RUN_STARTED", x.base_event.as_ref())
                .s("threadId", &x.thread_id)
                .s("runId", &x.run_id)
                .os("parentRunId", &x.parent_run_id)
                .os("protocolVersion", &x.protocol_version);
            if let Some(i) = &x.input {
                let mut m = Map::new();
                m.insert("threadId".into(), json!(i.thread_id));
                m.insert("runId".into(), json!(i.run_id));
                if let Some(p) = &i.parent_run_id {
                    m.insert("parentRunId".into(), json!(p));
                }
                if let Some(s) = &i.state {
                    m.insert("state".into(), val(s));
                }
                m.insert(
                    "messages".into(),
                    Value::Array(i.messages.iter().map(message).collect()),
                );
                if let Some(f) = &i.forwarded_props {
                    m.insert("forwardedProps".into(), val(f));
                }
                if let Some(p) = &i.protocol_version {
                    m.insert("protocolVersion".into(), json!(p));
                }
                o = o.v("input", Value::Object(m));
            }
            o.done()
        }
        E::RunFinished(x) => {
            let mut o = Obj::new("RUN_FINISHED", x.base_event.as_ref())
                .s("threadId", &x.thread_id)
                .s("runId", &x.run_id)
                .ov("result", &x.result);
            let outcome = match x.outcome.as_str() {
                "" if x.interrupts.is_empty() && x.pending_tool_call_ids.is_empty() => None,
                "interrupt" => Some(json!({"type": "interrupt",
                    "interrupts": x.interrupts.iter().map(interrupt).collect::<Vec<_>>()})),
                "success" | "" => {
                    let mut m = Map::new();
                    m.insert("type".into(), json!("success"));
                    if !x.pending_tool_call_ids.is_empty() {
                        m.insert("pendingToolCallIds".into(), json!(x.pending_tool_call_ids));
                    }
                    Some(Value::Object(m))
                }
                other => Some(json!({"type": other})),
            };
            if let Some(out) = outcome {
                o = o.v("outcome", out);
            }
            if !x.usage.is_empty() {
                o = o.v("usage", usage(&x.usage));
            }
            o.done()
        }
        E::RunError(x) => {
            let mut o = Obj::new("RUN_ERROR", x.base_event.as_ref())
                .s("message", &x.message)
                .os("code", &x.code);
            if !x.usage.is_empty() {
                o = o.v("usage", usage(&x.usage));
            }
            o.done()
        }
        E::StepStarted(x) => Obj::new("STEP_STARTED", x.base_event.as_ref())
            .s("stepName", &x.step_name)
            .os("subagentRunId", &x.subagent_run_id)
            .done(),
        E::StepFinished(x) => Obj::new("STEP_FINISHED", x.base_event.as_ref())
            .s("stepName", &x.step_name)
            .os("subagentRunId", &x.subagent_run_id)
            .done(),
        E::SubagentStarted(x) => Obj::new("SUBAGENT_STARTED", x.base_event.as_ref())
            .s("subagentRunId", &x.subagent_run_id)
            .s("name", &x.name)
            .os("description", &x.description)
            .os("parentSubagentRunId", &x.parent_subagent_run_id)
            .os("parentToolCallId", &x.parent_tool_call_id)
            .os("parentMessageId", &x.parent_message_id)
            .done(),
        E::SubagentFinished(x) => {
            let mut o = Obj::new("SUBAGENT_FINISHED", x.base_event.as_ref())
                .s("subagentRunId", &x.subagent_run_id)
                .ov("result", &x.result);
            if !x.outcome.is_empty() {
                o = o.v(
                    "outcome",
                    json!({"type": x.outcome, "interruptIds": x.interrupt_ids}),
                );
            }
            o.done()
        }
        E::SubagentError(x) => Obj::new("SUBAGENT_ERROR", x.base_event.as_ref())
            .s("subagentRunId", &x.subagent_run_id)
            .s("message", &x.message)
            .os("code", &x.code)
            .done(),
        E::ReasoningStart(x) => Obj::new("REASONING_START", x.base_event.as_ref())
            .s("messageId", &x.message_id)
            .os("subagentRunId", &x.subagent_run_id)
            .done(),
        E::ReasoningMessageStart(x) => Obj::new("REASONING_MESSAGE_START", x.base_event.as_ref())
            .s("messageId", &x.message_id)
            .s("role", &x.role)
            .os("subagentRunId", &x.subagent_run_id)
            .done(),
        E::ReasoningMessageContent(x) => {
            Obj::new("REASONING_MESSAGE_CONTENT", x.base_event.as_ref())
                .s("messageId", &x.message_id)
                .s("delta", &x.delta)
                .os("subagentRunId", &x.subagent_run_id)
                .done()
        }
        E::ReasoningMessageEnd(x) => Obj::new("REASONING_MESSAGE_END", x.base_event.as_ref())
            .s("messageId", &x.message_id)
            .os("subagentRunId", &x.subagent_run_id)
            .done(),
        E::ReasoningMessageChunk(x) => Obj::new("REASONING_MESSAGE_CHUNK", x.base_event.as_ref())
            .os("messageId", &x.message_id)
            .os("delta", &x.delta)
            .os("subagentRunId", &x.subagent_run_id)
            .done(),
        E::ReasoningEnd(x) => Obj::new("REASONING_END", x.base_event.as_ref())
            .s("messageId", &x.message_id)
            .os("subagentRunId", &x.subagent_run_id)
            .done(),
        E::ReasoningEncryptedValue(x) => {
            Obj::new("REASONING_ENCRYPTED_VALUE", x.base_event.as_ref())
                .s("subtype", &x.subtype)
                .s("entityId", &x.entity_id)
                .s("encryptedValue", &x.encrypted_value)
                .os("subagentRunId", &x.subagent_run_id)
                .done()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn proto_frames_split_and_reject_truncation() {
        let ev = pb::Event {
            event: Some(pb::event::Event::StepStarted(pb::StepStartedEvent {
                base_event: None,
                step_name: "s".into(),
                subagent_run_id: None,
            })),
        };
        let bytes = ev.encode_to_vec();
        let mut wire = (bytes.len() as u32).to_be_bytes().to_vec();
        wire.extend_from_slice(&bytes);
        let mut twice = wire.clone();
        twice.extend_from_slice(&wire);
        // Split at every byte boundary.
        let chunks: Vec<Result<Bytes, ClientError>> = twice
            .iter()
            .map(|b| Ok(Bytes::copy_from_slice(&[*b])))
            .collect();
        let frames: Vec<_> = proto_frames(futures::stream::iter(chunks), MAX_FRAME)
            .collect()
            .await;
        assert_eq!(frames.len(), 2);
        for f in frames {
            let e = pb::Event::decode(f.expect("frame").as_ref()).expect("decode");
            assert_eq!(
                event_json(&e).expect("json"),
                json!({"type": "STEP_STARTED", "stepName": "s"})
            );
        }
        let all = decode_proto_body(&twice).expect("whole body");
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].kind, "STEP_STARTED");
        assert!(decode_proto_body(&wire[..wire.len() - 1]).is_err());
        assert!(decode_proto_body(&[0, 0]).is_err());
        let truncated: Vec<Result<Bytes, ClientError>> =
            vec![Ok(Bytes::copy_from_slice(&wire[..wire.len() - 1]))];
        let frames: Vec<_> = proto_frames(futures::stream::iter(truncated), MAX_FRAME)
            .collect()
            .await;
        assert!(matches!(frames.as_slice(), [Err(ClientError::Protocol(_))]));
        let huge: Vec<Result<Bytes, ClientError>> =
            vec![Ok(Bytes::from_static(&[0xff, 0xff, 0xff, 0xff]))];
        let frames: Vec<_> = proto_frames(futures::stream::iter(huge), MAX_FRAME)
            .collect()
            .await;
        assert!(matches!(
            frames.as_slice(),
            [Err(ClientError::Decode { .. })]
        ));
    }

    #[test]
    fn run_finished_interrupt_becomes_an_outcome_object() {
        let ev = pb::Event {
            event: Some(pb::event::Event::RunFinished(pb::RunFinishedEvent {
                base_event: Some(pb::BaseEvent {
                    r#type: pb::EventType::RunFinished as i32,
                    timestamp: Some(5),
                    raw_event: None,
                    metadata: None,
                }),
                thread_id: "t".into(),
                run_id: "r".into(),
                result: None,
                outcome: "interrupt".into(),
                interrupts: vec![pb::Interrupt {
                    id: "i".into(),
                    reason: "input_required".into(),
                    message: Some("name?".into()),
                    ..Default::default()
                }],
                usage: vec![],
                pending_tool_call_ids: vec![],
            })),
        };
        let j = event_json(&ev).expect("json");
        assert_eq!(
            j,
            json!({"type": "RUN_FINISHED", "timestamp": 5, "threadId": "t", "runId": "r",
                "outcome": {"type": "interrupt", "interrupts": [{"id": "i", "reason": "input_required", "message": "name?"}]}})
        );
        assert!(event_json(&pb::Event { event: None }).is_err());
    }

    #[test]
    fn ids_compare_numerically() {
        assert!(id_after("10.0", "9.2"));
        assert!(id_after("9.3", "9.2"));
        assert!(!id_after("9.2", "9.2"));
        assert!(!id_after("1.1", "9.2"));
        assert!(id_after("b", "a"));
        assert!(!id_after("a", "a"));
    }

    #[test]
    fn sse_events_need_a_type() {
        assert!(sse_event("{\"type\":\"RUN_STARTED\"}", None, EventOrigin::Live).is_ok());
        assert!(sse_event("{}", None, EventOrigin::Live).is_err());
        assert!(sse_event("nope", None, EventOrigin::Live).is_err());
    }
}

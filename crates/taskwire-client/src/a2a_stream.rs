//! The reconnecting A2A event stream the three bindings share.
//!
//! A stream ends normally after a direct `message`, at a terminal state, or
//! when the server closes it at an interrupted state (INPUT_REQUIRED,
//! AUTH_REQUIRED). Any other end (a body error, an idle timeout, a close in
//! the middle of the task) is a break: the client waits per the backoff policy
//! and resubscribes to the task with `Last-Event-ID: <id of the last event>`
//! (before the task id is known it repeats the original request, which carries
//! the same `messageId`). When resubscribing is refused or the attempts run
//! out, it polls `GetTask` until the task is terminal or interrupted and
//! yields each changed snapshot as a `task` event.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use serde_json::Value;

use crate::a2a::pb;
use crate::config::BackoffPolicy;
use crate::error::ClientError;

/// Where an event of an [`A2aStream`] came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventOrigin {
    /// The stream as first opened.
    Live,
    /// A stream re-opened after a break (with `Last-Event-ID` when known).
    Resumed,
    /// A `GetTask` poll of the polling fallback (a `task` event).
    Polled,
}

/// One event of an A2A stream.
#[derive(Clone, Debug)]
pub struct A2aEvent {
    /// The typed event.
    pub response: pb::StreamResponse,
    /// The event's JSON as received, parsed only when [`A2aEvent::raw`] is
    /// asked for.
    raw: RawJson,
    /// The SSE `id:` of the frame (JSON-RPC only), the resume cursor.
    pub event_id: Option<String>,
    /// Where the event came from.
    pub origin: EventOrigin,
}

impl PartialEq for A2aEvent {
    fn eq(&self, other: &Self) -> bool {
        self.response == other.response
            && self.event_id == other.event_id
            && self.origin == other.origin
            && self.raw() == other.raw()
    }
}

/// The JSON of a received event: the text as it came (JSON-RPC, HTTP+JSON),
/// parsed on first use, or nothing, when the event came as protobuf (gRPC) and
/// its JSON is the ProtoJSON of the typed event. Reading events costs one
/// parse, into the typed event; the JSON tree is built only for callers that
/// look at it (conformance checks, observers).
#[derive(Clone, Debug, Default)]
pub(crate) struct RawJson {
    /// A JSON-RPC response as received, whose `result` is the event's JSON.
    envelope: Option<String>,
    parsed: std::sync::OnceLock<Value>,
}

impl RawJson {
    /// The `result` of a JSON-RPC response received as `text` (already
    /// decoded once).
    pub(crate) fn result_of(text: String) -> Self {
        Self {
            envelope: Some(text),
            parsed: std::sync::OnceLock::new(),
        }
    }

    /// A JSON tree already built.
    pub(crate) fn value(v: Value) -> Self {
        Self {
            envelope: None,
            parsed: std::sync::OnceLock::from(v),
        }
    }

    /// The ProtoJSON of the typed event, built when asked for.
    pub(crate) fn of_response() -> Self {
        Self::default()
    }
}

impl A2aEvent {
    /// An event of an in-process source (a binding of one's own, a test's
    /// upstream): its JSON is the ProtoJSON of `response`; `event_id` is the
    /// cursor a resubscription continues after.
    pub fn new(response: pb::StreamResponse, event_id: Option<String>) -> Self {
        Self {
            response,
            raw: RawJson::of_response(),
            event_id,
            origin: EventOrigin::Live,
        }
    }

    #[cfg(test)]
    pub(crate) fn for_test(response: pb::StreamResponse, raw: RawJson) -> Self {
        Self {
            response,
            raw,
            event_id: None,
            origin: EventOrigin::Live,
        }
    }

    /// The `StreamResponse` as received (JSON-RPC: the envelope's `result`;
    /// gRPC: the message as ProtoJSON), built on first use.
    pub fn raw(&self) -> &Value {
        self.raw.parsed.get_or_init(|| match &self.raw.envelope {
            Some(t) => serde_json::from_str::<Value>(t)
                .ok()
                .and_then(|mut v| v.get_mut("result").map(Value::take))
                .unwrap_or(Value::Null),
            None => serde_json::to_value(&self.response).unwrap_or(Value::Null),
        })
    }

    /// The task id the event is about (a direct message: its `taskId`, if any).
    pub fn task_id(&self) -> Option<&str> {
        use pb::stream_response::Payload;
        let id = match self.response.payload.as_ref()? {
            Payload::Task(t) => &t.id,
            Payload::Message(m) => &m.task_id,
            Payload::StatusUpdate(s) => &s.task_id,
            Payload::ArtifactUpdate(a) => &a.task_id,
        };
        (!id.is_empty()).then_some(id.as_str())
    }

    /// The task state the event reports, if it reports one.
    pub fn state(&self) -> Option<pb::TaskState> {
        use pb::stream_response::Payload;
        match self.response.payload.as_ref()? {
            Payload::Task(t) => t.status.as_ref().map(|s| s.state()),
            Payload::StatusUpdate(s) => s.status.as_ref().map(|s| s.state()),
            _ => None,
        }
    }

    /// Whether this is a direct reply (`message` payload).
    pub fn is_message(&self) -> bool {
        matches!(
            self.response.payload,
            Some(pb::stream_response::Payload::Message(_))
        )
    }
}

/// Whether a state is terminal (COMPLETED, FAILED, CANCELED, REJECTED).
pub fn is_terminal(s: pb::TaskState) -> bool {
    s.is_terminal()
}

/// Whether a state is interrupted (INPUT_REQUIRED, AUTH_REQUIRED).
pub fn is_interrupted(s: pb::TaskState) -> bool {
    s.is_interrupted()
}

/// A frame as a binding delivers it: the SSE id (if any), the typed event and
/// its JSON.
pub(crate) type Frame = (Option<String>, pb::StreamResponse, RawJson);
pub(crate) type FrameStream = BoxStream<'static, Result<Frame, ClientError>>;

/// What a stream was opened for.
#[derive(Clone, Debug)]
pub(crate) enum StreamKind {
    Send(Box<pb::SendMessageRequest>),
    Subscribe(String),
}

/// A binding's way to open streams and read tasks.
pub(crate) trait StreamSource: Send + Sync + 'static {
    fn open(
        &self,
        kind: StreamKind,
        last_event_id: Option<String>,
    ) -> BoxFuture<'static, Result<FrameStream, ClientError>>;
    fn get_task(&self, id: String) -> BoxFuture<'static, Result<(pb::Task, Value), ClientError>>;
}

#[derive(Debug, Default)]
struct Shared {
    task_id: Option<String>,
    last_event_id: Option<String>,
    reconnects: u32,
    polled: bool,
}

/// A stream of [`A2aEvent`]s that reconnects on a break (see the module docs
/// of [`crate::a2a`]). Items are `Err` only once, at the end.
///
/// The reconnecting driver runs inside the stream's own `poll_next` (no task of
/// its own): it reads and decodes frames while the consumer polls, queues at
/// most 32 events ahead of it, and stops when the stream is dropped.
pub struct A2aStream {
    rx: tokio::sync::mpsc::Receiver<Result<A2aEvent, ClientError>>,
    shared: Arc<Mutex<Shared>>,
    /// The driver, until it ends.
    driver: Option<BoxFuture<'static, ()>>,
}

impl std::fmt::Debug for A2aStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("A2aStream").finish_non_exhaustive()
    }
}

impl A2aStream {
    /// The task id, once an event named it.
    pub fn task_id(&self) -> Option<String> {
        self.shared.lock().ok().and_then(|s| s.task_id.clone())
    }

    /// The id of the last event received (the resume cursor).
    pub fn last_event_id(&self) -> Option<String> {
        self.shared
            .lock()
            .ok()
            .and_then(|s| s.last_event_id.clone())
    }

    /// How many times the stream was re-opened after a break.
    pub fn reconnects(&self) -> u32 {
        self.shared.lock().map(|s| s.reconnects).unwrap_or(0)
    }

    /// Whether the stream fell back to polling `GetTask`.
    pub fn fell_back_to_polling(&self) -> bool {
        self.shared.lock().map(|s| s.polled).unwrap_or(false)
    }

    /// Collects every event until the stream ends; the first error ends it.
    pub async fn collect_all(mut self) -> Result<Vec<A2aEvent>, ClientError> {
        let mut out = Vec::new();
        while let Some(item) = self.next().await {
            out.push(item?);
        }
        Ok(out)
    }

    /// A stream of the events an in-process source yields (a binding of
    /// one's own, a test's upstream): read as they come, with no reconnects;
    /// [`A2aStream::task_id`] and [`A2aStream::last_event_id`] follow them.
    pub fn of_events(
        events: impl Stream<Item = Result<A2aEvent, ClientError>> + Send + 'static,
    ) -> Self {
        let shared = Arc::new(Mutex::new(Shared::default()));
        let (tx, rx) = tokio::sync::mpsc::channel(32);
        let seen = shared.clone();
        let driver = async move {
            let mut events = Box::pin(events);
            while let Some(item) = events.next().await {
                if let (Ok(e), Ok(mut s)) = (&item, seen.lock()) {
                    if let Some(id) = e.task_id() {
                        s.task_id = Some(id.to_string());
                    }
                    if let Some(id) = &e.event_id {
                        s.last_event_id = Some(id.clone());
                    }
                }
                if tx.send(item).await.is_err() {
                    return;
                }
            }
        };
        Self {
            rx,
            shared,
            driver: Some(Box::pin(driver)),
        }
    }

    /// Opens the first stream (errors from the first open are returned here,
    /// not as stream items); reading it and any reconnects are driven as the
    /// stream is polled.
    pub(crate) async fn start(
        source: Arc<dyn StreamSource>,
        kind: StreamKind,
        last_event_id: Option<String>,
        backoff: BackoffPolicy,
        poll_interval: std::time::Duration,
    ) -> Result<Self, ClientError> {
        let first = source.open(kind.clone(), last_event_id.clone()).await?;
        let shared = Arc::new(Mutex::new(Shared {
            task_id: match &kind {
                StreamKind::Subscribe(id) => Some(id.clone()),
                StreamKind::Send(r) => r
                    .message
                    .as_ref()
                    .map(|m| m.task_id.clone())
                    .filter(|t| !t.is_empty()),
            },
            last_event_id,
            ..Shared::default()
        }));
        let (tx, rx) = tokio::sync::mpsc::channel(32);
        let driver = Driver {
            source,
            kind,
            backoff,
            poll_interval,
            shared: shared.clone(),
            tx,
        };
        Ok(Self {
            rx,
            shared,
            driver: Some(Box::pin(driver.run(first))),
        })
    }
}

impl Stream for A2aStream {
    type Item = Result<A2aEvent, ClientError>;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        // The driver first: it queues what is readable now (until the queue
        // is full or it waits on the network, a backoff or a poll), then the
        // queue is read. Both register this task's waker.
        if let Some(d) = self.driver.as_mut() {
            if d.as_mut().poll(cx).is_ready() {
                self.driver = None;
            }
        }
        self.rx.poll_recv(cx)
    }
}

/// How long a stream that has given its last event may take to end.
const END_GRACE: std::time::Duration = std::time::Duration::from_millis(100);
/// Most frames read after a stream's last event (a server that streams on
/// past it is cut off).
const END_FRAMES: usize = 16;

/// Reads what `s` still sends until it ends, for at most [`END_GRACE`] and
/// [`END_FRAMES`] frames (which are dropped: the stream's last event came).
async fn read_to_end(s: &mut FrameStream) {
    use futures::FutureExt;
    // Most often the end has arrived with the last event: no timer then.
    if let Some(None) = s.next().now_or_never() {
        return;
    }
    let rest = async {
        for _ in 1..END_FRAMES {
            if s.next().await.is_none() {
                return;
            }
        }
    };
    let _ = tokio::time::timeout(END_GRACE, rest).await;
}

struct Driver {
    source: Arc<dyn StreamSource>,
    kind: StreamKind,
    backoff: BackoffPolicy,
    poll_interval: std::time::Duration,
    shared: Arc<Mutex<Shared>>,
    tx: tokio::sync::mpsc::Sender<Result<A2aEvent, ClientError>>,
}

enum End {
    /// Ended normally.
    Done,
    /// The consumer went away.
    Gone,
    /// Broke with this error.
    Broken(ClientError),
}

impl Driver {
    fn task_id(&self) -> Option<String> {
        self.shared.lock().ok().and_then(|s| s.task_id.clone())
    }

    fn last_event_id(&self) -> Option<String> {
        self.shared
            .lock()
            .ok()
            .and_then(|s| s.last_event_id.clone())
    }

    async fn emit(&self, ev: A2aEvent) -> bool {
        if let Ok(mut s) = self.shared.lock() {
            if let Some(id) = ev.task_id() {
                s.task_id = Some(id.to_string());
            }
            if let Some(id) = &ev.event_id {
                s.last_event_id = Some(id.clone());
            }
        }
        self.tx.send(Ok(ev)).await.is_ok()
    }

    async fn fail(&self, e: ClientError) {
        let _ = self.tx.send(Err(e)).await;
    }

    /// Reads one opened stream to its end.
    async fn drain(&self, mut s: FrameStream, origin: EventOrigin, progress: &mut bool) -> End {
        let mut last_state: Option<pb::TaskState> = None;
        loop {
            match s.next().await {
                Some(Ok((event_id, response, raw))) => {
                    let ev = A2aEvent {
                        response,
                        raw,
                        event_id,
                        origin,
                    };
                    // Progress is a new cursor, or (without ids) an update:
                    // a re-sent snapshot or a repeated id is not, so a
                    // server that keeps breaking the same way runs out of
                    // attempts.
                    let advanced = match &ev.event_id {
                        Some(id) => self.last_event_id().as_deref() != Some(id.as_str()),
                        None => !matches!(
                            ev.response.payload,
                            Some(pb::stream_response::Payload::Task(_))
                        ),
                    };
                    if advanced {
                        *progress = true;
                    }
                    let message = ev.is_message();
                    if let Some(st) = ev.state() {
                        last_state = Some(st);
                    }
                    let last = message || last_state.is_some_and(is_terminal);
                    if last {
                        // Read the stream to its end (a gRPC call's
                        // trailers, an HTTP body's last chunk) before the
                        // consumer, who stops here, drops it: a call dropped
                        // before its end is reset (HTTP/2 RST_STREAM, whose
                        // count h2 bounds per connection) or its connection
                        // closed (HTTP/1.1).
                        read_to_end(&mut s).await;
                    }
                    if !self.emit(ev).await {
                        return End::Gone;
                    }
                    if last {
                        return End::Done;
                    }
                }
                Some(Err(e)) => return End::Broken(e),
                None => {
                    return if last_state.is_some_and(is_interrupted) {
                        End::Done
                    } else {
                        End::Broken(ClientError::Protocol(
                            "the stream ended before a terminal or interrupted state".into(),
                        ))
                    };
                }
            }
        }
    }

    async fn run(self, first: FrameStream) {
        let mut progress = false;
        let mut end = self.drain(first, EventOrigin::Live, &mut progress).await;
        let mut attempt: u32 = 0;
        loop {
            let err = match end {
                End::Done | End::Gone => return,
                End::Broken(e) => e,
            };
            // An error the server sent in the stream before anything else is
            // the answer, not a break.
            if matches!(err, ClientError::Rpc(_)) && !progress && attempt == 0 {
                return self.fail(err).await;
            }
            // A frame that is not a StreamResponse is a server fault that a
            // reconnect would only repeat.
            if matches!(
                err,
                ClientError::Decode { .. } | ClientError::ContentType { .. }
            ) {
                return self.fail(err).await;
            }
            if progress {
                attempt = 0;
            }
            progress = false;
            if attempt >= self.backoff.max_attempts {
                return self.poll(err, attempt).await;
            }
            tokio::time::sleep(self.backoff.delay(attempt)).await;
            attempt += 1;
            if let Ok(mut s) = self.shared.lock() {
                s.reconnects += 1;
            }
            let kind = match self.task_id() {
                Some(id) => StreamKind::Subscribe(id),
                None => self.kind.clone(),
            };
            match self.source.open(kind, self.last_event_id()).await {
                Ok(s) => end = self.drain(s, EventOrigin::Resumed, &mut progress).await,
                Err(e @ ClientError::Rpc(_)) => {
                    // Resubscribing was refused (e.g. the task is terminal and
                    // the server keeps no cursor): read the task instead.
                    return self.poll(e, attempt).await;
                }
                Err(e) => end = End::Broken(e),
            }
        }
    }

    /// The polling fallback.
    async fn poll(&self, cause: ClientError, attempts: u32) {
        let Some(id) = self.task_id() else {
            return self
                .fail(ClientError::StreamBroken {
                    attempts,
                    last: cause.to_string(),
                })
                .await;
        };
        if let Ok(mut s) = self.shared.lock() {
            s.polled = true;
        }
        let mut failures: u32 = 0;
        let mut last: Option<Value> = None;
        loop {
            match self.source.get_task(id.clone()).await {
                Ok((task, raw)) => {
                    failures = 0;
                    let state = task.status.as_ref().map(|s| s.state());
                    if last.as_ref() != Some(&raw) {
                        last = Some(raw.clone());
                        let ev = A2aEvent {
                            response: pb::StreamResponse {
                                payload: Some(pb::stream_response::Payload::Task(task)),
                            },
                            raw: RawJson::value(serde_json::json!({ "task": raw })),
                            event_id: None,
                            origin: EventOrigin::Polled,
                        };
                        if !self.emit(ev).await {
                            return;
                        }
                    }
                    if state.is_some_and(|s| is_terminal(s) || is_interrupted(s)) {
                        return;
                    }
                    tokio::time::sleep(self.poll_interval).await;
                }
                Err(e) => {
                    if failures >= self.backoff.max_attempts || !e.is_transient() {
                        return self
                            .fail(ClientError::StreamBroken {
                                attempts: attempts + failures,
                                last: e.to_string(),
                            })
                            .await;
                    }
                    tokio::time::sleep(self.backoff.delay(failures)).await;
                    failures += 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;
    use std::time::Duration;
    use tokio::time::Instant;

    fn task(state: pb::TaskState) -> pb::Task {
        pb::Task {
            id: "t1".into(),
            status: Some(pb::TaskStatus {
                state: state as i32,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// The first open yields one WORKING snapshot and then breaks; every
    /// later open fails; GetTask says COMPLETED.
    type Opens = Arc<Mutex<Vec<(Instant, Option<String>)>>>;

    struct Flaky {
        opens: Opens,
    }

    impl StreamSource for Flaky {
        fn open(
            &self,
            _kind: StreamKind,
            last_event_id: Option<String>,
        ) -> BoxFuture<'static, Result<FrameStream, ClientError>> {
            let opens = self.opens.clone();
            async move {
                let n = {
                    let mut g = opens.lock().unwrap_or_else(|e| e.into_inner());
                    g.push((Instant::now(), last_event_id));
                    g.len()
                };
                if n == 1 {
                    let t = task(pb::TaskState::Working);
                    let raw = serde_json::json!({"task": {"id": "t1"}});
                    let items: Vec<Result<Frame, ClientError>> = vec![
                        Ok((
                            Some("7".into()),
                            pb::StreamResponse {
                                payload: Some(pb::stream_response::Payload::Task(t)),
                            },
                            RawJson::value(raw),
                        )),
                        Err(ClientError::Transport("reset".into())),
                    ];
                    Ok(futures::stream::iter(items).boxed())
                } else {
                    Err(ClientError::Transport("refused".into()))
                }
            }
            .boxed()
        }

        fn get_task(
            &self,
            _id: String,
        ) -> BoxFuture<'static, Result<(pb::Task, Value), ClientError>> {
            async {
                Ok((
                    task(pb::TaskState::Completed),
                    serde_json::json!({"id": "t1"}),
                ))
            }
            .boxed()
        }
    }

    /// One COMPLETED snapshot, then the stream's end, which sets `ended`
    /// when it is read.
    struct Ending {
        ended: Arc<std::sync::atomic::AtomicBool>,
    }

    impl StreamSource for Ending {
        fn open(
            &self,
            _kind: StreamKind,
            _last_event_id: Option<String>,
        ) -> BoxFuture<'static, Result<FrameStream, ClientError>> {
            let ended = self.ended.clone();
            async move {
                let frame: Frame = (
                    None,
                    pb::StreamResponse {
                        payload: Some(pb::stream_response::Payload::Task(task(
                            pb::TaskState::Completed,
                        ))),
                    },
                    RawJson::value(serde_json::json!({"task": {"id": "t1"}})),
                );
                let end = futures::stream::poll_fn(move |_| {
                    ended.store(true, std::sync::atomic::Ordering::SeqCst);
                    std::task::Poll::Ready(None)
                });
                Ok(futures::stream::iter([Ok(frame)]).chain(end).boxed())
            }
            .boxed()
        }

        fn get_task(
            &self,
            _id: String,
        ) -> BoxFuture<'static, Result<(pb::Task, Value), ClientError>> {
            async { Err(ClientError::Transport("not polled".into())) }.boxed()
        }
    }

    /// The terminal event is handed over only once its stream has been read
    /// to its end, so that a consumer who stops there does not drop (and so
    /// reset) an unfinished call.
    #[tokio::test]
    async fn the_last_event_comes_after_its_stream_ended() {
        let ended = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let source = Arc::new(Ending {
            ended: ended.clone(),
        });
        let mut s = A2aStream::start(
            source,
            StreamKind::Subscribe("t1".into()),
            None,
            BackoffPolicy::default(),
            Duration::from_millis(10),
        )
        .await
        .expect("open");
        let ev = s.next().await.expect("an event").expect("not an error");
        assert_eq!(ev.state(), Some(pb::TaskState::Completed));
        assert!(
            ended.load(std::sync::atomic::Ordering::SeqCst),
            "the terminal event was handed over before its stream ended"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn reconnects_follow_the_backoff_policy_then_poll() {
        let policy = BackoffPolicy {
            initial: Duration::from_millis(100),
            max: Duration::from_millis(1000),
            multiplier: 2.0,
            jitter: 0.5,
            max_attempts: 4,
        };
        let opens = Arc::new(Mutex::new(Vec::new()));
        let source = Arc::new(Flaky {
            opens: opens.clone(),
        });
        let s = A2aStream::start(
            source,
            StreamKind::Subscribe("t1".into()),
            None,
            policy.clone(),
            Duration::from_millis(10),
        )
        .await
        .expect("first open");
        let events = s.collect_all().await.expect("events");
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].origin, EventOrigin::Live);
        assert_eq!(events[1].origin, EventOrigin::Polled);
        assert_eq!(events[1].state(), Some(pb::TaskState::Completed));

        let opens = opens.lock().unwrap_or_else(|e| e.into_inner()).clone();
        assert_eq!(opens.len(), 5, "the first open and max_attempts reconnects");
        // Every reconnect carries the cursor of the last event.
        assert!(opens[1..].iter().all(|(_, id)| id.as_deref() == Some("7")));
        for (i, w) in opens.windows(2).enumerate() {
            let waited = w[1].0 - w[0].0;
            let base = policy.base_delay(i as u32);
            assert!(
                waited >= base.mul_f64(0.5) && waited <= base + Duration::from_millis(1),
                "retry {i}: waited {waited:?}, base {base:?}"
            );
        }
    }
}

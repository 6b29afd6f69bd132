//! A2A 1.0 over JSON-RPC (`A2aClient`), gRPC (`A2aGrpcClient`) and HTTP+JSON
//! (`A2aRestClient`): the same messages and the same reconnecting stream, so one
//! driver serves all three.

use async_trait::async_trait;
use serde_json::{json, Value};
use taskwire_client::a2a::{pb, A2aClient, A2aEvent, A2aStream};
use taskwire_client::a2a_rest::A2aRestClient;
use taskwire_client::grpc::A2aGrpcClient;
use taskwire_client::{A2aBinding, ClientError};

use std::sync::Arc;

use super::classify;
use super::common::Frames;
use crate::driver::{Driver, OpError, ResumeObs, StreamObs, TaskRef, Wire};
use crate::protocol::Protocol;
use crate::scenario::ErrorClass;
use crate::views::View;

/// The A2A driver.
pub(crate) struct A2aDriver {
    pub(crate) protocol: Protocol,
    /// The binding the driver speaks (JSON-RPC, gRPC or HTTP+JSON).
    pub(crate) binding: Arc<dyn A2aBinding>,
    pub(crate) wire: Wire,
}

/// A user text message, built through ProtoJSON (what goes on the wire).
fn request(
    text: &str,
    message_id: &str,
    task: Option<&TaskRef>,
    metadata: Option<Value>,
    return_immediately: bool,
) -> Result<pb::SendMessageRequest, OpError> {
    let mut m = json!({
        "messageId": message_id,
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    });
    if let Some(t) = task {
        m["taskId"] = json!(t.id);
        if let Some(c) = &t.context_id {
            m["contextId"] = json!(c);
        }
    }
    if let Some(md) = metadata {
        m["metadata"] = md;
    }
    let mut r = json!({"message": m});
    if return_immediately {
        r["configuration"] = json!({"returnImmediately": true});
    }
    serde_json::from_value(r).map_err(|e| {
        OpError::new(
            ErrorClass::Other,
            format!("building SendMessageRequest: {e}"),
        )
    })
}

/// The ProtoJSON name of a task state (`TASK_STATE_COMPLETED`).
fn state_word(s: Option<&pb::TaskStatus>) -> String {
    s.map(|s| s.state().as_str_name().to_string())
        .unwrap_or_else(|| "TASK_STATE_UNSPECIFIED".into())
}

fn text_of(parts: &[pb::Part]) -> String {
    taskwire_client::a2a::parts_text(parts)
}

fn view_of(t: &pb::Task) -> View {
    View {
        state: state_word(t.status.as_ref()),
        status_message: t
            .status
            .as_ref()
            .and_then(|s| s.message.as_ref())
            .map(|m| text_of(&m.parts)),
        artifacts: t.artifacts.iter().map(|a| parts_concat(&a.parts)).collect(),
        context_id: Some(t.context_id.clone()).filter(|c| !c.is_empty()),
        pending: Vec::new(),
    }
}

/// Text parts concatenated (chunks of one artifact are parts of it).
fn parts_concat(parts: &[pb::Part]) -> String {
    parts
        .iter()
        .filter_map(|p| match &p.content {
            Some(pb::part::Content::Text(t)) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

/// Records every artifact of a task snapshot, replacing what was seen of it.
fn restate(obs: &mut StreamObs, artifacts: &[pb::Artifact]) {
    for a in artifacts {
        obs.artifacts
            .insert(a.artifact_id.clone(), parts_concat(&a.parts));
    }
}

/// Folds one stream event into an observation.
fn observe(obs: &mut StreamObs, ev: &A2aEvent) {
    use pb::stream_response::Payload;
    obs.frames += 1;
    if let Some(id) = &ev.event_id {
        obs.ids.push(id.clone());
    }
    match ev.response.payload.as_ref() {
        Some(Payload::Task(t)) => {
            obs.push_state(state_word(t.status.as_ref()));
            // A snapshot restates every artifact.
            restate(obs, &t.artifacts);
        }
        Some(Payload::StatusUpdate(s)) => obs.push_state(state_word(s.status.as_ref())),
        Some(Payload::ArtifactUpdate(a)) => {
            if let Some(art) = &a.artifact {
                let text = parts_concat(&art.parts);
                let e = obs.artifacts.entry(art.artifact_id.clone()).or_default();
                if a.append {
                    e.push_str(&text);
                } else {
                    *e = text;
                }
            }
        }
        Some(Payload::Message(_)) | None => {}
    }
}

fn is_stop_word(w: &str) -> bool {
    matches!(
        w,
        "TASK_STATE_COMPLETED"
            | "TASK_STATE_FAILED"
            | "TASK_STATE_CANCELED"
            | "TASK_STATE_REJECTED"
    )
}

impl A2aDriver {
    fn err(&self, e: ClientError) -> OpError {
        classify(self.protocol, &e)
    }

    fn validate_task(&self, raw: &Value, method: &str) {
        self.wire
            .validate(self.protocol, &["methods", method, "result"], raw);
    }

    /// Reads a stream until it ends, `stop` accepts a state, `max_frames`
    /// frames were read, or the time runs out.
    async fn read(
        &self,
        stream: &mut A2aStream,
        obs: &mut StreamObs,
        task_id: &mut String,
        stop: &[String],
        max_frames: Option<usize>,
        limit_ms: u64,
    ) -> Result<(), OpError> {
        let mut frames = Frames::within_ms(limit_ms, max_frames);
        while let Some(ev) = frames
            .next_into(stream, obs)
            .await
            .map_err(|e| self.err(e))?
        {
            self.wire.validate(
                self.protocol,
                &["methods", "SendStreamingMessage", "stream"],
                ev.raw(),
            );
            if task_id.is_empty() {
                if let Some(id) = ev.task_id() {
                    *task_id = id.to_string();
                }
            }
            observe(obs, &ev);
            if obs
                .last_state()
                .is_some_and(|w| stop.iter().any(|x| x == w) || is_stop_word(w))
            {
                obs.ended = obs.last_state().is_some_and(is_stop_word) || obs.ended;
                return Ok(());
            }
        }
        Ok(())
    }

    /// Opens the stream of a new task started with `text`.
    async fn open_stream(&self, text: &str, message_id: &str) -> Result<A2aStream, OpError> {
        let req = request(text, message_id, None, None, false)?;
        self.binding
            .send_streaming_message(req)
            .await
            .map_err(|e| self.err(e))
    }

    /// Sends `text` to `task` as message `message_id` (`SendMessage`, returning immediately).
    async fn send_to(
        &self,
        task: &TaskRef,
        text: &str,
        message_id: &str,
        metadata: Option<Value>,
    ) -> Result<(), OpError> {
        let req = request(text, message_id, Some(task), metadata, true)?;
        let r = self
            .binding
            .send_message(req)
            .await
            .map_err(|e| self.err(e))?;
        self.validate_task(&r.raw, "SendMessage");
        Ok(())
    }
}

#[async_trait]
impl Driver for A2aDriver {
    fn protocol(&self) -> Protocol {
        self.protocol
    }

    async fn create(&self, text: &str, message_id: &str) -> Result<TaskRef, OpError> {
        let req = request(text, message_id, None, None, true)?;
        let r = self
            .binding
            .send_message(req)
            .await
            .map_err(|e| self.err(e))?;
        self.validate_task(&r.raw, "SendMessage");
        match r.value.payload {
            Some(pb::send_message_response::Payload::Task(t)) => Ok(TaskRef {
                context_id: Some(t.context_id.clone()).filter(|c| !c.is_empty()),
                ..TaskRef::created(t.id.clone(), message_id, text)
            }),
            Some(pb::send_message_response::Payload::Message(_)) => Err(OpError::new(
                ErrorClass::Other,
                "SendMessage answered with a direct message, not a task",
            )),
            None => Err(OpError::new(
                ErrorClass::Other,
                "SendMessage answered with neither task nor message",
            )),
        }
    }

    async fn create_stream(
        &self,
        text: &str,
        message_id: &str,
        limit_ms: u64,
    ) -> Result<(TaskRef, StreamObs), OpError> {
        let mut s = self.open_stream(text, message_id).await?;
        let mut obs = StreamObs::default();
        let mut id = String::new();
        let never: Vec<String> = Vec::new();
        self.read(&mut s, &mut obs, &mut id, &never[..], None, limit_ms)
            .await?;
        // A stream also closes at an interrupted state.
        if !obs.ended && obs.last_state().is_some_and(|w| w.contains("REQUIRED")) {
            obs.ended = true;
        }
        Ok((TaskRef::created(id, message_id, text), obs))
    }

    async fn get(&self, task: &mut TaskRef) -> Result<View, OpError> {
        let r = self
            .binding
            .get_task(&task.id, None)
            .await
            .map_err(|e| self.err(e))?;
        self.validate_task(&r.raw, "GetTask");
        let v = view_of(&r.value);
        if task.context_id.is_none() {
            task.context_id = v.context_id.clone();
        }
        Ok(v)
    }

    async fn answer(&self, task: &mut TaskRef, text: &str) -> Result<(), OpError> {
        let id = format!("{}-a{}", task.message_id, text.len());
        self.send_to(task, text, &id, None).await
    }

    async fn authorize(&self, task: &mut TaskRef, provider: &str) -> Result<(), OpError> {
        self.send_to(
            task,
            &format!("authorised {provider}"),
            &format!("{}-auth-{provider}", task.message_id),
            Some(json!({"authorization": {"provider": provider}})),
        )
        .await
    }

    async fn approve(&self, task: &mut TaskRef) -> Result<(), OpError> {
        let _ = task;
        Err(OpError::unsupported(
            "A2A has no way to decide a review (a pending review shows as INPUT_REQUIRED, a named loss)",
        ))
    }

    async fn cancel(&self, task: &mut TaskRef) -> Result<(), OpError> {
        let r = self
            .binding
            .cancel_task(&task.id)
            .await
            .map_err(|e| self.err(e))?;
        self.validate_task(&r.raw, "CancelTask");
        Ok(())
    }

    async fn send(&self, task: &mut TaskRef, text: &str) -> Result<(), OpError> {
        let id = format!("{}-s{}", task.message_id, text.len());
        self.send_to(task, text, &id, None).await
    }

    async fn stream(
        &self,
        task: &mut TaskRef,
        stop: &[String],
        limit_ms: u64,
    ) -> Result<StreamObs, OpError> {
        let mut s = match self.binding.resubscribe(&task.id, None).await {
            Ok(s) => s,
            Err(e) => {
                let e = self.err(e);
                if e.class != ErrorClass::Terminal {
                    return Err(e);
                }
                // SubscribeToTask refuses a task that has already ended
                // (UnsupportedOperation): the stream of an ended task is its final state.
                let r = self
                    .binding
                    .get_task(&task.id, None)
                    .await
                    .map_err(|e| self.err(e))?;
                self.validate_task(&r.raw, "GetTask");
                let v = view_of(&r.value);
                let mut obs = StreamObs {
                    ended: true,
                    frames: 1,
                    ..StreamObs::default()
                };
                obs.push_state(v.state);
                restate(&mut obs, &r.value.artifacts);
                return Ok(obs);
            }
        };
        let mut obs = StreamObs::default();
        let mut id = task.id.clone();
        self.read(&mut s, &mut obs, &mut id, stop, None, limit_ms)
            .await?;
        Ok(obs)
    }

    async fn stream_resume(
        &self,
        text: &str,
        message_id: &str,
        frames: usize,
        limit_ms: u64,
    ) -> Result<ResumeObs, OpError> {
        let mut s = self.open_stream(text, message_id).await?;
        let mut first = StreamObs::default();
        let mut id = String::new();
        let never: Vec<String> = Vec::new();
        self.read(
            &mut s,
            &mut first,
            &mut id,
            &never[..],
            Some(frames),
            limit_ms,
        )
        .await?;
        // Our own cursor: the stream may have buffered frames we never read.
        let cursor = first.ids.last().cloned().unwrap_or_default();
        drop(s);
        if id.is_empty() {
            return Err(OpError::new(
                ErrorClass::Other,
                "no frame named the task before the drop",
            ));
        }
        let cur = Some(cursor.as_str()).filter(|c| !c.is_empty());
        let mut s = self
            .binding
            .resubscribe(&id, cur)
            .await
            .map_err(|e| self.err(e))?;
        let mut rest = StreamObs {
            artifacts: first.artifacts.clone(),
            ..StreamObs::default()
        };
        self.read(&mut s, &mut rest, &mut id, &never[..], None, limit_ms)
            .await?;
        Ok(ResumeObs {
            task: TaskRef::created(id, message_id, text),
            first,
            cursor,
            rest,
        })
    }

    async fn malformed(&self) -> Vec<(String, Result<(), OpError>)> {
        let mut out = Vec::new();
        let any = self.binding.as_any();
        if let Some(c) = any.downcast_ref::<A2aClient>() {
            for (label, body) in [
                (
                    "a body that is not JSON",
                    "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ".to_string(),
                ),
                (
                    "an envelope without jsonrpc",
                    json!({"id": 2, "method": "GetTask", "params": {"id": "x"}}).to_string(),
                ),
                (
                    "GetTask with a numeric id",
                    json!({"jsonrpc": "2.0", "id": 3, "method": "GetTask", "params": {"id": 5}})
                        .to_string(),
                ),
            ] {
                let r = c.post_raw(body.clone(), &[]).await;
                let o = super::rpc_raw_outcome(
                    &self.wire,
                    self.protocol,
                    format!("POST {body}"),
                    r,
                    |code, v| {
                        self.wire.validate(self.protocol, &["envelope", "error"], v);
                        super::rpc_class(code, &v["error"]["message"].to_string())
                    },
                );
                out.push((label.to_string(), o));
            }
        } else if let Some(c) = any.downcast_ref::<A2aGrpcClient>() {
            // A message without parts is refused with INVALID_ARGUMENT.
            let req = pb::SendMessageRequest {
                message: Some(pb::Message {
                    message_id: String::new(),
                    role: pb::Role::User as i32,
                    ..Default::default()
                }),
                ..Default::default()
            };
            let r = c
                .send_message(req)
                .await
                .map(|_| ())
                .map_err(|e| self.err(e));
            out.push(("SendMessage without message id or parts".to_string(), r));
        } else if let Some(c) = any.downcast_ref::<A2aRestClient>() {
            use reqwest::Method;
            let q = |k: &str, v: &str| vec![(k.to_string(), v.to_string())];
            for (label, method, path, body, query) in [
                (
                    "SendMessage without a message",
                    Method::POST,
                    "/message:send",
                    Some(json!({})),
                    Vec::new(),
                ),
                (
                    "SendMessage whose parts are not a list",
                    Method::POST,
                    "/message:send",
                    Some(json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": 3}})),
                    Vec::new(),
                ),
                (
                    "ListTasks with a pageSize that is not a number",
                    Method::GET,
                    "/tasks",
                    None,
                    q("pageSize", "ten"),
                ),
            ] {
                let r = c
                    .call_raw(method, path, "malformed", body, &query)
                    .await
                    .map(|_| ())
                    .map_err(|e| self.err(e));
                out.push((label.to_string(), r));
            }
        }
        out
    }
}

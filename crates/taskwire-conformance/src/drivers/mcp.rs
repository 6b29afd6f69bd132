//! MCP revision 2026-07-28 with the tasks extension (`McpClient`): `tools/call`
//! becomes a task; `tasks/get`, `tasks/update` (input responses by key),
//! `tasks/cancel`; streams through `tasks/stream` (SEP-2694, resumable from a
//! sequence number), or `subscriptions/listen` where the target answers
//! `tasks/stream` with -32601.

use async_trait::async_trait;
use serde_json::{json, Value};
use std::collections::BTreeMap;

use taskwire_client::mcp::{elicit_accept, DetailedTask, ElicitResult, McpClient, ToolCallOutcome};
use taskwire_client::ClientError;

use super::classify;
use super::common::{field_texts, Frames};
use crate::driver::{Driver, OpError, ResumeObs, StreamObs, TaskRef, Wire};
use crate::protocol::Protocol;
use crate::scenario::ErrorClass;
use crate::views::{expected, mcp_view_word, CoreExpect, View};
use taskwire_core::types::{TaskState, TerminalCause};

/// Prefix of the input-request key of a provider authorisation (taskwire's MCP adapter).
const AUTH_KEY_PREFIX: &str = "taskwire.auth/";
/// Prefix of the input-request key of a review (taskwire's MCP adapter).
const REVIEW_KEY_PREFIX: &str = "taskwire.review/";

/// The MCP driver.
pub(crate) struct McpDriver {
    pub(crate) client: McpClient,
    pub(crate) tool: String,
    pub(crate) wire: Wire,
}

fn status_word(v: &Value) -> String {
    let status = v["status"].as_str().unwrap_or("?");
    let is_error = v["result"]["isError"].as_bool() == Some(true);
    mcp_view_word(status, is_error)
}

/// The texts of a task's result content.
fn contents(v: &Value) -> Vec<String> {
    field_texts(&v["result"]["content"], "text")
}

/// The view word a taskwire task event shows, if any (its `taskwire.status`
/// events, through the vocabulary's mapping of the core state), and the
/// artifact text it carries (`taskwire.artifact`: appended or replaced by id).
fn event_view(ev: &Value, artifacts: &mut BTreeMap<String, String>) -> Option<String> {
    let p = &ev["payload"];
    match ev["type"].as_str()? {
        "taskwire.artifact" => {
            let a = &p["artifact"];
            let id = a["artifactId"].as_str().unwrap_or("artifact").to_string();
            let text: String = field_texts(&a["parts"], "text").concat();
            let slot = artifacts.entry(id).or_default();
            if p["append"].as_bool() != Some(true) {
                slot.clear();
            }
            slot.push_str(&text);
            None
        }
        "taskwire.status" => {
            let state = serde_json::from_value::<TaskState>(p["to"].clone()).ok()?;
            let cause = serde_json::from_value::<TerminalCause>(p["cause"].clone()).ok();
            let mut e = CoreExpect::state(state);
            e.cause = cause;
            expected(Protocol::Mcp, &e)
        }
        _ => None,
    }
}

impl McpDriver {
    fn err(&self, e: ClientError) -> OpError {
        classify(Protocol::Mcp, &e)
    }

    async fn detailed(&self, id: &str) -> Result<DetailedTask, OpError> {
        self.client
            .get_task(id)
            .await
            .map(|r| r.value)
            .map_err(|e| self.err(e))
    }

    /// Sends input responses to a task (`tasks/update`).
    async fn update(
        &self,
        id: &str,
        responses: BTreeMap<String, ElicitResult>,
    ) -> Result<(), OpError> {
        self.client
            .update_task(id, responses)
            .await
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    async fn respond(
        &self,
        task: &TaskRef,
        pick: impl Fn(&str) -> bool,
        response: ElicitResult,
    ) -> Result<(), OpError> {
        let t = self.detailed(&task.id).await?;
        let keys: Vec<String> = t
            .input_requests
            .as_ref()
            .map(|m| m.keys().filter(|k| pick(k)).cloned().collect())
            .unwrap_or_default();
        if keys.is_empty() {
            return Err(OpError::new(
                ErrorClass::Other,
                format!(
                    "tasks/get shows no matching input request (status {:?})",
                    t.status
                ),
            ));
        }
        let mut m = BTreeMap::new();
        for k in keys {
            m.insert(k, response.clone());
        }
        self.update(&task.id, m).await
    }

    /// Follows the task through `tasks/stream` after `after` (SEP-2694): each
    /// `notifications/tasks/event` is a frame whose id is its sequence number;
    /// taskwire's `taskwire.status` events give the view word (through the
    /// vocabulary's mapping), its `taskwire.artifact` events the artifacts.
    /// `Ok(false)`: the target has no `tasks/stream` (-32601).
    #[allow(
        clippy::too_many_arguments,
        reason = "the stream's knobs, each used once"
    )]
    async fn follow(
        &self,
        id: &str,
        after: Option<u64>,
        obs: &mut StreamObs,
        stop: &[String],
        max_frames: Option<usize>,
        limit_ms: u64,
    ) -> Result<bool, OpError> {
        let mut s = match self.client.stream_task(id, after).await {
            Ok(s) => s,
            Err(e) if e.rpc_code() == Some(-32601) => return Ok(false),
            Err(e) => return Err(self.err(e)),
        };
        self.wire.record(
            Protocol::Mcp,
            format!("tasks/stream {{taskId:{id}, after:{after:?}}}"),
            "200",
        );
        let mut frames = Frames::within_ms(limit_ms, max_frames);
        let mut next_seq = after.map(|a| a + 1);
        while let Some(msg) = frames
            .next_into(&mut s, obs)
            .await
            .map_err(|e| self.err(e))?
        {
            if msg.get("method").and_then(Value::as_str) == Some("notifications/tasks/event") {
                let ev = &msg["params"];
                let seq = ev["seq"].as_u64().ok_or_else(|| {
                    OpError::new(ErrorClass::Other, format!("task event without a seq: {ev}"))
                })?;
                if let Some(want) = next_seq {
                    if seq != want {
                        return Err(OpError::new(
                            ErrorClass::Other,
                            format!("tasks/stream skipped from {want} to {seq}"),
                        ));
                    }
                }
                next_seq = Some(seq + 1);
                obs.frames += 1;
                obs.ids.push(seq.to_string());
                if let Some(w) = event_view(ev, &mut obs.artifacts) {
                    obs.push_state(w.clone());
                    if stop.contains(&w) {
                        return Ok(true);
                    }
                }
            } else if msg.get("result").is_some() {
                obs.ended = true;
                return Ok(true);
            } else if msg.get("error").is_some() {
                return Err(OpError::new(
                    ErrorClass::Other,
                    format!("tasks/stream error: {}", msg["error"]),
                ));
            }
        }
        Ok(true)
    }

    async fn listen(
        &self,
        id: &str,
        obs: &mut StreamObs,
        stop: &[String],
        max_frames: Option<usize>,
        limit_ms: u64,
    ) -> Result<(), OpError> {
        let mut s = self
            .client
            .listen_tasks(&[id])
            .await
            .map_err(|e| self.err(e))?;
        self.wire.record(
            Protocol::Mcp,
            format!("subscriptions/listen {{taskIds:[{id}]}}"),
            "200 text/event-stream",
        );
        let mut frames = Frames::within_ms(limit_ms, max_frames);
        while let Some(msg) = frames
            .next_into(&mut s, obs)
            .await
            .map_err(|e| self.err(e))?
        {
            obs.frames += 1;
            let v = crate::discovery::MCP_VERSION;
            if let Some(m) = msg["method"].as_str() {
                self.wire
                    .validate(Protocol::Mcp, &["methods", v, m, "params"], &msg["params"]);
                if m == "notifications/tasks" {
                    let t = &msg["params"];
                    let t = if t.get("task").is_some() {
                        &t["task"]
                    } else {
                        t
                    };
                    let w = status_word(t);
                    obs.number_artifacts("content", contents(t));
                    obs.push_state(w.clone());
                    if stop.contains(&w) {
                        return Ok(());
                    }
                }
            } else if msg.get("result").is_some() {
                self.wire.validate(
                    Protocol::Mcp,
                    &["methods", v, "subscriptions/listen", "result"],
                    &msg["result"],
                );
                obs.ended = true;
                return Ok(());
            } else if msg.get("error").is_some() {
                return Err(OpError::new(
                    ErrorClass::Other,
                    format!("listen error: {}", msg["error"]),
                ));
            }
        }
        Ok(())
    }
}

#[async_trait]
impl Driver for McpDriver {
    fn protocol(&self) -> Protocol {
        Protocol::Mcp
    }

    async fn create(&self, text: &str, message_id: &str) -> Result<TaskRef, OpError> {
        let r = self
            .client
            .call_tool(&self.tool, json!({"text": text}))
            .await
            .map_err(|e| self.err(e))?;
        match r.value {
            ToolCallOutcome::Task(t) => Ok(TaskRef::created(t.task_id, message_id, text)),
            ToolCallOutcome::Complete(_) => Err(OpError::new(
                ErrorClass::Other,
                "tools/call answered with the result directly, not a task (the tasks extension was declared)",
            )),
            ToolCallOutcome::InputRequired(v) => Err(OpError::new(
                ErrorClass::Other,
                format!(
                    "tools/call answered input_required without a task: {}",
                    serde_json::to_string(&v).unwrap_or_default()
                ),
            )),
        }
    }

    async fn create_stream(
        &self,
        text: &str,
        message_id: &str,
        limit_ms: u64,
    ) -> Result<(TaskRef, StreamObs), OpError> {
        let t = self.create(text, message_id).await?;
        let mut obs = StreamObs::default();
        let stop = vec!["input_required".to_string()];
        self.listen(&t.id, &mut obs, &stop, None, limit_ms).await?;
        Ok((t, obs))
    }

    async fn get(&self, task: &mut TaskRef) -> Result<View, OpError> {
        let r = self
            .client
            .get_task(&task.id)
            .await
            .map_err(|e| self.err(e))?;
        let v = &r.raw;
        Ok(View {
            state: status_word(v),
            status_message: v["statusMessage"].as_str().map(str::to_string),
            artifacts: contents(v),
            context_id: None,
            pending: v["inputRequests"]
                .as_object()
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default(),
        })
    }

    async fn answer(&self, task: &mut TaskRef, text: &str) -> Result<(), OpError> {
        self.respond(
            task,
            |k| !k.starts_with(AUTH_KEY_PREFIX) && !k.starts_with(REVIEW_KEY_PREFIX),
            elicit_accept(super::object(json!({"answer": text}))),
        )
        .await
    }

    async fn authorize(&self, task: &mut TaskRef, provider: &str) -> Result<(), OpError> {
        let key = format!("{AUTH_KEY_PREFIX}{provider}");
        self.respond(task, |k| k == key, elicit_accept(super::object(json!({}))))
            .await
    }

    /// Approves through `tasks/continue` (SEP-2339: the input responses, then the
    /// task), so the suite exercises it beside `tasks/update`.
    async fn approve(&self, task: &mut TaskRef) -> Result<(), OpError> {
        let t = self.detailed(&task.id).await?;
        let mut m = BTreeMap::new();
        for k in t.input_requests.iter().flat_map(|m| m.keys()) {
            if k.starts_with(REVIEW_KEY_PREFIX) {
                m.insert(
                    k.clone(),
                    elicit_accept(super::object(json!({"approved": true}))),
                );
            }
        }
        if m.is_empty() {
            return Err(OpError::new(
                ErrorClass::Other,
                format!(
                    "tasks/get shows no review to approve (status {:?})",
                    t.status
                ),
            ));
        }
        let r = self
            .client
            .continue_task(&task.id, Some(m))
            .await
            .map_err(|e| self.err(e))?;
        self.wire.validate(
            Protocol::Mcp,
            &[
                "methods",
                crate::discovery::MCP_VERSION,
                "tasks/continue",
                "result",
            ],
            &r.raw,
        );
        Ok(())
    }

    async fn cancel(&self, task: &mut TaskRef) -> Result<(), OpError> {
        self.client
            .cancel_task(&task.id)
            .await
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    async fn send(&self, task: &mut TaskRef, text: &str) -> Result<(), OpError> {
        // The only message MCP carries to a task is an input response.
        let mut m = BTreeMap::new();
        m.insert(
            "conformance".into(),
            elicit_accept(super::object(json!({"answer": text}))),
        );
        self.update(&task.id, m).await
    }

    async fn stream(
        &self,
        task: &mut TaskRef,
        stop: &[String],
        limit_ms: u64,
    ) -> Result<StreamObs, OpError> {
        let mut obs = StreamObs::default();
        if !self
            .follow(&task.id, None, &mut obs, stop, None, limit_ms)
            .await?
        {
            self.listen(&task.id, &mut obs, stop, None, limit_ms)
                .await?;
        }
        Ok(obs)
    }

    async fn stream_resume(
        &self,
        text: &str,
        message_id: &str,
        frames: usize,
        limit_ms: u64,
    ) -> Result<ResumeObs, OpError> {
        // tasks/stream (SEP-2694): read `frames` events, drop the connection,
        // resume after the last sequence number read.
        let t = self.create(text, message_id).await?;
        let never: Vec<String> = Vec::new();
        let mut first = StreamObs::default();
        if !self
            .follow(&t.id, None, &mut first, &never, Some(frames), limit_ms)
            .await?
        {
            return Err(OpError::unsupported(
                "tasks/stream (SEP-2694): the target answered -32601",
            ));
        }
        let cursor = first.ids.last().cloned().unwrap_or_default();
        let after = cursor.parse::<u64>().ok();
        let mut rest = StreamObs {
            artifacts: first.artifacts.clone(),
            ..StreamObs::default()
        };
        self.follow(&t.id, after, &mut rest, &never, None, limit_ms)
            .await?;
        Ok(ResumeObs {
            task: t,
            first,
            cursor,
            rest,
        })
    }

    async fn malformed(&self) -> Vec<(String, Result<(), OpError>)> {
        let mut out = Vec::new();
        let r = self.client.post_raw("{\"jsonrpc\":\"2.0\",", &[]).await;
        let o = super::rpc_raw_outcome(
            &self.wire,
            Protocol::Mcp,
            "POST (malformed body)".to_string(),
            r,
            |code, v| super::rpc_class(code, v["error"]["message"].as_str().unwrap_or_default()),
        );
        out.push(("a body that is not JSON".to_string(), o));
        let r = self
            .client
            .call_raw("tasks/get", json!({"taskId": 5}), Some("5"))
            .await;
        out.push((
            "tasks/get with a numeric taskId".to_string(),
            r.map(|_| ()).map_err(|e| self.err(e)),
        ));
        out
    }
}

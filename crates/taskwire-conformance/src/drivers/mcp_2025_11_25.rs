//! MCP revision 2025-11-25 with its experimental tasks (`McpClient2025_11_25`): a
//! session opened with `initialize`, `tools/call` with a `task` field creates a
//! task, `tasks/get` and `tasks/cancel` read and cancel it, and `tasks/result`
//! streams the task's status notifications and, while it waits, its
//! interactions as `elicitation/create` server requests, answered in the session.
//!
//! This generation has no message to a task, no idempotency key and no stream
//! cursor; those commands are `unsupported`.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Value};
use taskwire_client::mcp::{
    elicit_accept, method, ElicitAction, ElicitResult, McpClient2025_11_25,
};
use taskwire_client::ClientError;
use taskwire_vocab::mcp::{review_schema, AUTH_KEY_PREFIX};

use super::classify;
use super::common::{field_texts, Frame, Frames};
use crate::discovery::MCP_VERSION_2025_11_25 as V;
use crate::driver::{Driver, OpError, ResumeObs, StreamObs, TaskRef, Wire};
use crate::protocol::Protocol;
use crate::scenario::ErrorClass;
use crate::views::View;

/// The server request that carries an interaction.
const ELICITATION_CREATE: &str = "elicitation/create";
/// How long an answer waits for its elicitation on the `tasks/result` stream.
const INTERACTION_LIMIT: Duration = Duration::from_secs(15);
/// The status words that end a task in this generation.
const TERMINAL: [&str; 3] = ["completed", "failed", "cancelled"];

const P: Protocol = Protocol::Mcp2025;

/// The MCP 2025-11-25 driver.
pub(crate) struct McpDriver2025_11_25 {
    client: McpClient2025_11_25,
    tool: String,
    wire: Wire,
    initialized: tokio::sync::Mutex<bool>,
}

/// Which elicitation a command answers, and with what.
enum Pick<'a> {
    /// A form that is not a review: `{answer: text}`.
    Answer(&'a str),
    /// The URL elicitation of a provider's authorisation.
    Authorize(&'a str),
    /// A review (the confirmation form): `{approve: true}`.
    Approve,
}

impl Pick<'_> {
    /// The answer to `params` when this pick matches it.
    fn answer(&self, params: &Value) -> Option<ElicitResult> {
        let mode = params["mode"].as_str().unwrap_or("form");
        let review = params["requestedSchema"] == review_schema();
        match self {
            Pick::Answer(text) if mode == "form" && !review => {
                Some(elicit_accept(super::object(json!({"answer": text}))))
            }
            Pick::Authorize(provider)
                if mode == "url"
                    && params["elicitationId"].as_str()
                        == Some(format!("{AUTH_KEY_PREFIX}{provider}").as_str()) =>
            {
                Some(elicit_accept(super::object(json!({}))))
            }
            Pick::Approve if mode == "form" && review => {
                Some(elicit_accept(super::object(json!({"approved": true}))))
            }
            _ => None,
        }
    }

    fn what(&self) -> String {
        match self {
            Pick::Answer(_) => "an input form".into(),
            Pick::Authorize(p) => format!("the URL elicitation of {p}"),
            Pick::Approve => "a review form".into(),
        }
    }
}

/// The texts of a `tasks/result` result's content.
fn contents(result: &Value) -> Vec<String> {
    field_texts(&result["content"], "text")
}

/// 2025-11-25 refuses to cancel an ended task with invalid params; the
/// message says which refusal it is (taskwire's: "cannot cancel task …: it is
/// already completed"; also seen: "task is completed and cannot be
/// canceled").
fn not_cancelable_refined(mut o: OpError) -> OpError {
    if o.class == ErrorClass::Invalid
        && (o.detail.contains("cannot cancel") || o.detail.contains("cannot be canceled"))
    {
        o.class = ErrorClass::NotCancelable;
    }
    o
}

impl McpDriver2025_11_25 {
    pub(crate) fn new(
        client: McpClient2025_11_25,
        tool: String,
        wire: Wire,
    ) -> McpDriver2025_11_25 {
        McpDriver2025_11_25 {
            client,
            tool,
            wire,
            initialized: tokio::sync::Mutex::new(false),
        }
    }

    fn err(&self, e: ClientError) -> OpError {
        not_cancelable_refined(classify(P, &e))
    }

    /// Opens the session (once): `initialize` with the elicitation capability.
    async fn session(&self) -> Result<(), OpError> {
        let mut done = self.initialized.lock().await;
        if !*done {
            self.client
                .initialize(super::object(json!({"elicitation": {}})))
                .await
                .map_err(|e| self.err(e))?;
            let v = self.client.protocol_version();
            if v != V {
                return Err(OpError::new(
                    ErrorClass::Other,
                    format!("initialize asking for {V} negotiated {v}"),
                ));
            }
            *done = true;
        }
        Ok(())
    }

    /// Validates and records one message of a `tasks/result` stream.
    fn seen(&self, id: &str, msg: &Value) {
        self.wire.record(
            P,
            format!("tasks/result {{taskId:{id}}} (event)"),
            msg.to_string(),
        );
        if let Some(m) = msg["method"].as_str() {
            self.wire
                .validate(P, &["methods", V, m, "params"], &msg["params"]);
        } else if msg.get("error").is_some() {
            self.wire.validate(P, &["envelope", "error"], msg);
        } else if msg.get("result").is_some() {
            self.wire.validate(
                P,
                &["methods", V, method::TASKS_RESULT, "result"],
                &msg["result"],
            );
        }
    }

    async fn open_result(
        &self,
        id: &str,
    ) -> Result<futures::stream::BoxStream<'static, Result<Value, ClientError>>, OpError> {
        self.session().await?;
        self.client
            .request_events(method::TASKS_RESULT, json!({"taskId": id}))
            .await
            .map_err(|e| self.err(e))
    }

    /// Reads `tasks/result` until the elicitation `pick` matches, answers it in the
    /// session and returns (dropping the stream); other elicitations are dismissed
    /// with `cancel`, which leaves them pending.
    async fn interact(&self, task: &TaskRef, pick: Pick<'_>) -> Result<(), OpError> {
        let mut s = self.open_result(&task.id).await?;
        let mut frames = Frames::new(INTERACTION_LIMIT, None);
        loop {
            let msg = match frames.next(&mut s).await.map_err(|e| self.err(e))? {
                Frame::Cut => {
                    return Err(OpError::new(
                        ErrorClass::Other,
                        format!(
                            "tasks/result sent no {} within {} ms",
                            pick.what(),
                            INTERACTION_LIMIT.as_millis()
                        ),
                    ))
                }
                Frame::Ended => {
                    return Err(OpError::new(
                        ErrorClass::Other,
                        format!("tasks/result ended without {}", pick.what()),
                    ))
                }
                Frame::Item(m) => m,
            };
            self.seen(&task.id, &msg);
            if let Some(e) = msg.get("error") {
                return Err(super::rpc_class(
                    e["code"].as_i64().unwrap_or_default(),
                    e["message"].as_str().unwrap_or_default(),
                ));
            }
            if msg.get("result").is_some() {
                return Err(OpError::new(
                    ErrorClass::Terminal,
                    format!(
                        "tasks/result answered the final result before {}: the task has ended",
                        pick.what()
                    ),
                ));
            }
            if msg["method"] != ELICITATION_CREATE || msg["id"].is_null() {
                continue;
            }
            let answer = pick
                .answer(&msg["params"])
                .unwrap_or_else(ElicitResult::cancel);
            let matched = answer.action != ElicitAction::Cancel;
            let shown = serde_json::to_string(&answer).unwrap_or_default();
            self.wire.record(
                P,
                format!("response to {} {}: {shown}", msg["id"], ELICITATION_CREATE),
                "(sent in the session)",
            );
            self.client
                .respond(msg["id"].clone(), &answer)
                .await
                .map_err(|e| self.err(e))?;
            if matched {
                return Ok(());
            }
        }
    }

    /// Reads `tasks/result` until the task ends, shows a word in `stop`, or
    /// `limit_ms` passes; elicitations are left unanswered (an observer).
    async fn watch(
        &self,
        id: &str,
        obs: &mut StreamObs,
        stop: &[String],
        limit_ms: u64,
    ) -> Result<(), OpError> {
        let mut s = self.open_result(id).await?;
        let mut frames = Frames::within_ms(limit_ms, None);
        loop {
            // Cut by the time limit or ended by itself: the status read is all there is.
            let Some(msg) = frames
                .next_into(&mut s, obs)
                .await
                .map_err(|e| self.err(e))?
            else {
                return Ok(());
            };
            obs.frames += 1;
            self.seen(id, &msg);
            if msg["method"] == method::NOTIFY_TASKS_STATUS {
                let w = msg["params"]["status"].as_str().unwrap_or("?").to_string();
                obs.push_state(w.clone());
                // A terminal status is followed by the result, which carries the
                // output: read on to it.
                if stop.contains(&w) && !TERMINAL.contains(&w.as_str()) {
                    return Ok(());
                }
            } else if let Some(r) = msg.get("result") {
                obs.number_artifacts("content", contents(r));
                obs.ended = true;
                break;
            } else if msg.get("error").is_some() {
                obs.ended = true;
                break;
            }
        }
        // A task that had already ended answers with the result alone: its
        // status comes from tasks/get.
        if !obs.last_state().is_some_and(|w| TERMINAL.contains(&w)) {
            let t = self.client.get_task(id).await.map_err(|e| self.err(e))?;
            if let Some(w) = t.raw["status"].as_str() {
                obs.push_state(w);
            }
        }
        Ok(())
    }
}

#[async_trait]
impl Driver for McpDriver2025_11_25 {
    fn protocol(&self) -> Protocol {
        P
    }

    async fn create(&self, text: &str, message_id: &str) -> Result<TaskRef, OpError> {
        self.session().await?;
        let t = self
            .client
            .call_tool_as_task(&self.tool, json!({"text": text}), None)
            .await
            .map_err(|e| self.err(e))?;
        Ok(TaskRef::created(t.value.task_id, message_id, text))
    }

    async fn create_retry(&self, task: &TaskRef) -> Result<TaskRef, OpError> {
        let _ = task;
        Err(OpError::unsupported(
            "MCP 2025-11-25 tools/call carries no message id or idempotency key",
        ))
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
        self.watch(&t.id, &mut obs, &stop, limit_ms).await?;
        Ok((t, obs))
    }

    async fn get(&self, task: &mut TaskRef) -> Result<View, OpError> {
        self.session().await?;
        let r = self
            .client
            .get_task(&task.id)
            .await
            .map_err(|e| self.err(e))?;
        let v = &r.raw;
        let status = v["status"].as_str().unwrap_or("?").to_string();
        // The output of an ended task is only on tasks/result (immediate once ended).
        let mut artifacts = Vec::new();
        if status == "completed" || status == "failed" {
            if let Ok(res) = self
                .client
                .call_raw(method::TASKS_RESULT, json!({"taskId": task.id}))
                .await
            {
                artifacts = contents(&res);
            }
        }
        Ok(View {
            state: status,
            status_message: v["statusMessage"].as_str().map(str::to_string),
            artifacts,
            context_id: None,
            pending: Vec::new(),
        })
    }

    async fn answer(&self, task: &mut TaskRef, text: &str) -> Result<(), OpError> {
        self.interact(task, Pick::Answer(text)).await
    }

    async fn authorize(&self, task: &mut TaskRef, provider: &str) -> Result<(), OpError> {
        self.interact(task, Pick::Authorize(provider)).await
    }

    async fn approve(&self, task: &mut TaskRef) -> Result<(), OpError> {
        self.interact(task, Pick::Approve).await
    }

    async fn cancel(&self, task: &mut TaskRef) -> Result<(), OpError> {
        self.session().await?;
        self.client
            .cancel_task(&task.id)
            .await
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    async fn send(&self, task: &mut TaskRef, text: &str) -> Result<(), OpError> {
        let _ = (task, text);
        Err(OpError::unsupported(
            "MCP 2025-11-25 has no message to a task: input reaches it only as answers to the elicitations of tasks/result",
        ))
    }

    async fn stream(
        &self,
        task: &mut TaskRef,
        stop: &[String],
        limit_ms: u64,
    ) -> Result<StreamObs, OpError> {
        let mut obs = StreamObs::default();
        self.watch(&task.id, &mut obs, stop, limit_ms).await?;
        Ok(obs)
    }

    async fn stream_resume(
        &self,
        text: &str,
        message_id: &str,
        frames: usize,
        limit_ms: u64,
    ) -> Result<ResumeObs, OpError> {
        let _ = (text, message_id, frames, limit_ms);
        Err(OpError::unsupported(
            "MCP 2025-11-25 tasks/result has no resume cursor",
        ))
    }

    async fn malformed(&self) -> Vec<(String, Result<(), OpError>)> {
        let mut out = Vec::new();
        if let Err(e) = self.session().await {
            out.push(("initialize".to_string(), Err(e)));
            return out;
        }
        let cases = [
            (
                "tasks/get with a numeric taskId",
                method::TASKS_GET,
                json!({"taskId": 5}),
            ),
            (
                "tools/call with a task ttl that is not a number",
                method::TOOLS_CALL,
                json!({"name": self.tool, "arguments": {"text": "x"}, "task": {"ttl": "soon"}}),
            ),
            (
                "tasks/update, a method this revision does not have",
                method::TASKS_UPDATE,
                json!({"taskId": "x", "inputResponses": {}}),
            ),
        ];
        for (label, m, params) in cases {
            let r = self.client.call_raw(m, params).await;
            out.push((label.to_string(), r.map(|_| ()).map_err(|e| self.err(e))));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_to_cancel_an_ended_task_are_not_cancelable() {
        for m in [
            "cannot cancel task t: it is already completed",
            "task is completed and cannot be canceled",
        ] {
            let o = not_cancelable_refined(super::super::rpc_class(-32602, m));
            assert_eq!(o.class, ErrorClass::NotCancelable, "{m}");
        }
        let o = not_cancelable_refined(super::super::rpc_class(-32602, "no taskId"));
        assert_eq!(o.class, ErrorClass::Invalid);
    }

    #[test]
    fn picks_match_their_elicitations() {
        let form = json!({"mode": "form", "message": "?", "requestedSchema": {"type": "object"}});
        let review = json!({"mode": "form", "message": "Review required: x", "requestedSchema": review_schema()});
        let url =
            json!({"mode": "url", "url": "u", "elicitationId": format!("{AUTH_KEY_PREFIX}github")});
        assert!(Pick::Answer("a").answer(&form).is_some());
        assert!(Pick::Answer("a").answer(&review).is_none());
        assert!(Pick::Answer("a").answer(&url).is_none());
        assert!(Pick::Approve.answer(&review).is_some());
        assert!(Pick::Approve.answer(&form).is_none());
        assert!(Pick::Authorize("github").answer(&url).is_some());
        assert!(Pick::Authorize("gitlab").answer(&url).is_none());
        assert_eq!(
            Pick::Approve
                .answer(&review)
                .and_then(|v| v.content)
                .and_then(|c| c.get("approved").cloned()),
            Some(json!(true))
        );
    }
}

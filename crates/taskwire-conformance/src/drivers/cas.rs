//! CAS task status surface (`CasClient`): create, status object, messages,
//! input, authorisation callback, host complete (cancel), SSE status events.

use async_trait::async_trait;
use serde_json::json;
use taskwire_client::cas::{CasClient, CasInput, CasStatus, IoType, TerminalReason};
use taskwire_client::http::RawResponse;
use taskwire_client::ClientError;

use super::classify;
use super::common::Frames;
use crate::driver::{Driver, OpError, ResumeObs, StreamObs, TaskRef, Wire};
use crate::protocol::Protocol;
use crate::report::excerpt;
use crate::scenario::ErrorClass;
use crate::views::{cas_view_word, View};

/// The CAS driver.
pub(crate) struct CasDriver {
    pub(crate) client: CasClient,
    pub(crate) wire: Wire,
}

fn word(s: &CasStatus) -> String {
    let phase = serde_json::to_value(s.status.phase)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| "unknown".into());
    let notes: Vec<String> = s
        .status
        .notifications
        .iter()
        .map(|n| match &n.provider {
            Some(p) => format!("{}:{p}", n.kind.as_str()),
            None => n.kind.as_str().to_string(),
        })
        .collect();
    cas_view_word(
        &phase,
        s.status.terminal_reason.map(TerminalReason::as_str),
        &notes,
    )
}

impl CasDriver {
    fn err(&self, e: ClientError) -> OpError {
        classify(Protocol::Cas, &e)
    }

    /// Output texts (artifacts and agent messages) from `GET …/messages`, and the
    /// last output before the status (the question asked).
    async fn outputs(&self, id: &str) -> Result<Vec<String>, OpError> {
        let m = self.client.messages(id).await.map_err(|e| self.err(e))?;
        Ok(m.value
            .iter()
            .filter(|m| m.io == IoType::Output)
            .map(|m| {
                m.message
                    .iter()
                    .filter_map(|p| p.text.as_deref())
                    .collect::<String>()
            })
            .collect())
    }

    async fn read(
        &self,
        id: &str,
        cursor: Option<&str>,
        obs: &mut StreamObs,
        stop: &[String],
        max_frames: Option<usize>,
        limit_ms: u64,
    ) -> Result<(), OpError> {
        let mut s = self
            .client
            .events(id, cursor)
            .await
            .map_err(|e| self.err(e))?;
        self.wire.record(
            Protocol::Cas,
            format!(
                "GET /tasks/{id}/events{}",
                cursor
                    .map(|c| format!(" (Last-Event-ID {c})"))
                    .unwrap_or_default()
            ),
            "200 text/event-stream",
        );
        let mut frames = Frames::within_ms(limit_ms, max_frames);
        while let Some(st) = frames
            .next_into(&mut s, obs)
            .await
            .map_err(|e| self.err(e))?
        {
            self.wire.validate(
                Protocol::Cas,
                &["endpoints", "GET /cas/tasks/{id}/events", "stream"],
                &st.raw,
            );
            self.wire
                .record(Protocol::Cas, "event", excerpt(&st.raw.to_string()));
            obs.frames += 1;
            obs.ids.push(st.status.revision.clone());
            let w = word(&st);
            obs.push_state(w.clone());
            if st.is_terminal() || stop.contains(&w) {
                return Ok(());
            }
        }
        Ok(())
    }

    /// A malformed request's outcome: an HTTP error status classified.
    fn raw_outcome(&self, r: Result<RawResponse, ClientError>) -> Result<(), OpError> {
        match r {
            Err(e) => Err(self.err(e)),
            Ok(raw) if raw.status >= 400 => Err(super::http_class(raw.status, &raw.text())),
            Ok(_) => Ok(()),
        }
    }
}

#[async_trait]
impl Driver for CasDriver {
    fn protocol(&self) -> Protocol {
        Protocol::Cas
    }

    async fn create(&self, text: &str, message_id: &str) -> Result<TaskRef, OpError> {
        let s = self
            .client
            .create_task(&CasInput::text(text), Some(message_id))
            .await
            .map_err(|e| self.err(e))?;
        Ok(TaskRef::created(s.id.clone(), message_id, text))
    }

    async fn create_stream(
        &self,
        text: &str,
        message_id: &str,
        limit_ms: u64,
    ) -> Result<(TaskRef, StreamObs), OpError> {
        let t = self.create(text, message_id).await?;
        let mut obs = StreamObs::default();
        let never: Vec<String> = Vec::new();
        self.read(&t.id, None, &mut obs, &never[..], None, limit_ms)
            .await?;
        // Status events carry no content: the outputs come from the messages list.
        obs.number_artifacts("output", self.outputs(&t.id).await?);
        Ok((t, obs))
    }

    async fn get(&self, task: &mut TaskRef) -> Result<View, OpError> {
        let s = self
            .client
            .status(&task.id)
            .await
            .map_err(|e| self.err(e))?;
        let outputs = self.outputs(&task.id).await?;
        Ok(View {
            state: word(&s),
            // The question asked is the last output of a waiting task.
            status_message: outputs.last().cloned(),
            artifacts: outputs,
            context_id: None,
            pending: s
                .status
                .notifications
                .iter()
                .map(|n| n.kind.as_str().to_string())
                .collect(),
        })
    }

    async fn answer(&self, task: &mut TaskRef, text: &str) -> Result<(), OpError> {
        self.client
            .send_input(&task.id, &CasInput::text(text), None)
            .await
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    async fn authorize(&self, task: &mut TaskRef, provider: &str) -> Result<(), OpError> {
        self.client
            .grant_authorization(&task.id, provider)
            .await
            .map_err(|e| self.err(e))
    }

    async fn approve(&self, task: &mut TaskRef) -> Result<(), OpError> {
        let list = self.client.reviews().await.map_err(|e| self.err(e))?;
        let review = list.value["reviews"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|r| r["task_id"].as_str() == Some(task.id.as_str()))
            .and_then(|r| r["review_id"].as_str().map(str::to_string))
            .ok_or_else(|| {
                OpError::new(
                    ErrorClass::Other,
                    format!("GET /cas/reviews lists no review of task {}", task.id),
                )
            })?;
        self.client
            .decide_review(&task.id, &review, true)
            .await
            .map_err(|e| self.err(e))
    }

    async fn cancel(&self, task: &mut TaskRef) -> Result<(), OpError> {
        // The host lifecycle control ends the task (a core cancellation).
        self.client
            .complete(&task.id, Some("conformance cancel"))
            .await
            .map_err(|e| self.err(e))
    }

    async fn send(&self, task: &mut TaskRef, text: &str) -> Result<(), OpError> {
        self.answer(task, text).await
    }

    async fn stream(
        &self,
        task: &mut TaskRef,
        stop: &[String],
        limit_ms: u64,
    ) -> Result<StreamObs, OpError> {
        let mut obs = StreamObs::default();
        self.read(&task.id, None, &mut obs, stop, None, limit_ms)
            .await?;
        obs.number_artifacts("output", self.outputs(&task.id).await?);
        Ok(obs)
    }

    async fn stream_resume(
        &self,
        text: &str,
        message_id: &str,
        frames: usize,
        limit_ms: u64,
    ) -> Result<ResumeObs, OpError> {
        let t = self.create(text, message_id).await?;
        let never: Vec<String> = Vec::new();
        let mut first = StreamObs::default();
        self.read(&t.id, None, &mut first, &never[..], Some(frames), limit_ms)
            .await?;
        let cursor = first.ids.last().cloned().unwrap_or_default();
        let mut rest = StreamObs::default();
        if !first
            .last_state()
            .is_some_and(|w| w.starts_with("terminal"))
        {
            self.read(
                &t.id,
                Some(&cursor).filter(|c| !c.is_empty()).map(String::as_str),
                &mut rest,
                &never[..],
                None,
                limit_ms,
            )
            .await?;
        } else {
            rest.ended = true;
        }
        rest.number_artifacts("output", self.outputs(&t.id).await?);
        Ok(ResumeObs {
            task: t,
            first,
            cursor,
            rest,
        })
    }

    async fn malformed(&self) -> Vec<(String, Result<(), OpError>)> {
        let mut out = Vec::new();
        let probes: [(&str, Option<serde_json::Value>); 2] = [
            (
                "a create whose message is a string",
                Some(json!({"message": "not a list"})),
            ),
            (
                "a create with a part that has neither text nor file",
                Some(json!({"message": [{"mimeType": "text/plain"}]})),
            ),
        ];
        for (label, body) in probes {
            let r = self
                .client
                .send_raw(reqwest::Method::POST, "/tasks", body, &[])
                .await;
            out.push((label.to_string(), self.raw_outcome(r)));
        }
        // A body that is not JSON at all.
        let r = self
            .client
            .send_raw(
                reqwest::Method::POST,
                "/tasks",
                None,
                &[("content-type", "application/json")],
            )
            .await;
        out.push((
            "a create with an empty body".to_string(),
            self.raw_outcome(r),
        ));
        out
    }
}

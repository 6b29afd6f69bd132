//! The driver abstraction: one implementation per protocol turns the runner's
//! protocol-neutral commands into that protocol's requests (through
//! taskwire-client), records every exchange, validates every message received
//! against its schema, and reduces what it reads to a [`View`].

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::Value;

use crate::protocol::Protocol;
use crate::report::{excerpt, Exchange};
use crate::scenario::ErrorClass;
use crate::schema::Schemas;
use crate::views::View;

/// A task as the runner knows it: the core task id every protocol shares, and
/// what the protocol that created it told about it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskRef {
    /// The core task id (A2A task id, MCP taskId, CAS id, AG-UI `taskwire:task_created`).
    pub id: String,
    /// The message id the task was created with.
    pub message_id: String,
    /// The text it was created with.
    pub text: String,
    /// The context (A2A contextId, AG-UI threadId), once some protocol showed it.
    pub context_id: Option<String>,
    /// The latest AG-UI run of the task, when it was started or resumed over AG-UI.
    pub agui_run: Option<String>,
}

impl TaskRef {
    /// A task created with `text` and `message_id`, with no context or AG-UI run known yet.
    pub(crate) fn created(id: String, message_id: &str, text: &str) -> TaskRef {
        TaskRef {
            id,
            message_id: message_id.to_string(),
            text: text.to_string(),
            context_id: None,
            agui_run: None,
        }
    }
}

/// A command that failed, classified.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpError {
    /// The class of error.
    pub class: ErrorClass,
    /// The protocol's words (code, status, message).
    pub detail: String,
}

impl OpError {
    /// An error of a class.
    pub fn new(class: ErrorClass, detail: impl Into<String>) -> OpError {
        OpError {
            class,
            detail: detail.into(),
        }
    }

    /// A command the driver cannot express on its protocol.
    pub fn unsupported(what: &str) -> OpError {
        OpError::new(ErrorClass::Other, format!("unsupported: {what}"))
    }
}

/// What a stream showed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamObs {
    /// The frame cursors (SSE ids, revisions), in order; empty where frames have none.
    pub ids: Vec<String>,
    /// The view words seen, in order (consecutive repeats collapsed).
    pub states: Vec<String>,
    /// Artifact text by artifact id, assembled with the protocol's append/replace rules.
    pub artifacts: BTreeMap<String, String>,
    /// True if the stream ended by itself (not cut by the runner's time limit).
    pub ended: bool,
    /// Frames read.
    pub frames: usize,
}

impl StreamObs {
    /// Records a view word, collapsing repeats.
    pub fn push_state(&mut self, w: impl Into<String>) {
        let w = w.into();
        if self.states.last() != Some(&w) {
            self.states.push(w);
        }
    }

    /// Records `texts` as the artifacts `{prefix}-000`, `{prefix}-001`, … (for
    /// protocols whose outputs have no ids of their own).
    pub(crate) fn number_artifacts(&mut self, prefix: &str, texts: Vec<String>) {
        for (i, t) in texts.into_iter().enumerate() {
            self.artifacts.insert(format!("{prefix}-{i:03}"), t);
        }
    }

    /// The last view word seen.
    pub fn last_state(&self) -> Option<&str> {
        self.states.last().map(String::as_str)
    }
}

/// What a dropped and resumed stream showed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResumeObs {
    /// The task.
    pub task: TaskRef,
    /// Before the drop.
    pub first: StreamObs,
    /// The cursor resumed from.
    pub cursor: String,
    /// After resuming; `artifacts` are assembled over both halves.
    pub rest: StreamObs,
}

/// Where a driver records exchanges and schema violations; shared by the drivers
/// of one run, drained by the runner after each step.
#[derive(Clone, Debug, Default)]
pub struct Wire {
    inner: Arc<Mutex<WireInner>>,
    schemas: Schemas,
}

#[derive(Debug, Default)]
struct WireInner {
    exchanges: Vec<Exchange>,
    violations: Vec<String>,
}

impl Wire {
    /// A wire that validates against `schemas`.
    pub fn new(schemas: Schemas) -> Wire {
        Wire {
            inner: Arc::default(),
            schemas,
        }
    }

    /// Records one exchange (request and response are cut to excerpts).
    pub fn record(&self, protocol: Protocol, request: impl AsRef<str>, response: impl AsRef<str>) {
        if let Ok(mut i) = self.inner.lock() {
            i.exchanges.push(Exchange {
                protocol,
                request: excerpt(request.as_ref()),
                response: excerpt(response.as_ref()),
            });
        }
    }

    /// Validates a received message; a violation is kept for the runner.
    ///
    /// gRPC messages arrive as protobuf and are validated as their ProtoJSON
    /// rendering by the client (the wire layer's, timestamps in `Z` form).
    pub fn validate(&self, protocol: Protocol, kind: &[&str], value: &Value) {
        let v = self.schemas.check(protocol, kind, value);
        if !v.is_empty() {
            if let Ok(mut i) = self.inner.lock() {
                i.violations.extend(v);
            }
        }
    }

    /// Takes the exchanges and violations recorded since the last call.
    pub fn drain(&self) -> (Vec<Exchange>, Vec<String>) {
        match self.inner.lock() {
            Ok(mut i) => (
                std::mem::take(&mut i.exchanges),
                std::mem::take(&mut i.violations),
            ),
            Err(_) => (Vec::new(), Vec::new()),
        }
    }

    /// The schemas.
    pub fn schemas(&self) -> &Schemas {
        &self.schemas
    }
}

/// One protocol's driver. Every method records its exchanges on the driver's
/// [`Wire`]; commands that a protocol cannot express return an `Other` error
/// starting with `unsupported:`, which the runner reports as a skip.
#[async_trait]
pub trait Driver: Send + Sync {
    /// The protocol.
    fn protocol(&self) -> Protocol;

    /// Starts a task with one text message. Must not block until the task ends.
    async fn create(&self, text: &str, message_id: &str) -> Result<TaskRef, OpError>;

    /// Repeats the request that created `task` (same message id, same thread/run
    /// where the protocol has them); an idempotent target returns the same task.
    async fn create_retry(&self, task: &TaskRef) -> Result<TaskRef, OpError> {
        self.create(&task.text, &task.message_id).await
    }

    /// Starts a task and reads its stream until it ends or pauses (or `limit_ms`).
    async fn create_stream(
        &self,
        text: &str,
        message_id: &str,
        limit_ms: u64,
    ) -> Result<(TaskRef, StreamObs), OpError>;

    /// Reads the task once.
    async fn get(&self, task: &mut TaskRef) -> Result<View, OpError>;

    /// Answers the pending input request with a text.
    async fn answer(&self, task: &mut TaskRef, text: &str) -> Result<(), OpError>;

    /// Grants a provider authorisation.
    async fn authorize(&self, task: &mut TaskRef, provider: &str) -> Result<(), OpError>;

    /// Approves the task's pending review, as the responsible user.
    async fn approve(&self, task: &mut TaskRef) -> Result<(), OpError> {
        let _ = task;
        Err(OpError::unsupported(
            "this protocol has no way to decide a review",
        ))
    }

    /// Cancels the task.
    async fn cancel(&self, task: &mut TaskRef) -> Result<(), OpError>;

    /// Sends a further text message to the task.
    async fn send(&self, task: &mut TaskRef, text: &str) -> Result<(), OpError>;

    /// Reads the task's stream until it ends, or until it shows one of the view words in `stop`,
    /// or `limit_ms` passes.
    async fn stream(
        &self,
        task: &mut TaskRef,
        stop: &[String],
        limit_ms: u64,
    ) -> Result<StreamObs, OpError>;

    /// Starts a task with `text`, reads `frames` frames of its stream, drops the
    /// connection and resumes from the last cursor to the end.
    async fn stream_resume(
        &self,
        text: &str,
        message_id: &str,
        frames: usize,
        limit_ms: u64,
    ) -> Result<ResumeObs, OpError>;

    /// Sends malformed requests; returns, per request, its label and the result.
    async fn malformed(&self) -> Vec<(String, Result<(), OpError>)>;
}

//! Operations both generations share: starting a tool call as a task, waiting on
//! it, applying input responses.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use taskwire_core::agent::Skill;
use taskwire_core::service::Access;
use taskwire_core::{Caller, CoreError, CreateTask, Task, TaskId};
use taskwire_vocab::mcp::{self as vocab, InputAnswer};

use crate::error::RpcError;
use crate::Inner;

impl Inner {
    /// The skill offered as the tool `name`.
    pub(crate) fn skill(&self, name: &str) -> Result<&Skill, RpcError> {
        self.info
            .skills
            .iter()
            .find(|s| s.id == name)
            .ok_or_else(|| RpcError::invalid_params(format!("unknown tool: {name}")))
    }

    /// Creates the task for a `tools/call` (returns once it is durably stored).
    pub(crate) async fn start_call(
        &self,
        caller: &Caller,
        params: &Map<String, Value>,
        ttl: Option<Duration>,
    ) -> Result<Task, RpcError> {
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| RpcError::invalid_params("params.name (the tool name) is required"))?;
        let skill = self.skill(name)?;
        let message = vocab::message_of_arguments(skill, params.get("arguments"))?;
        let mut req = CreateTask::new(message);
        req.ttl = ttl;
        req.metadata.insert(
            crate::fixture::TOOL_METADATA_KEY.into(),
            Value::String(name.to_string()),
        );
        let created = self
            .service
            .create(caller, req)
            .await
            .map_err(|e| RpcError::from_core(e, None))?;
        Ok(std::sync::Arc::unwrap_or_clone(created.task))
    }

    /// Waits until the task ends, or (with `stop_on_interrupt`) waits for someone,
    /// or `timeout` passes; returns the latest snapshot.
    pub(crate) async fn wait(
        &self,
        caller: &Caller,
        id: &TaskId,
        timeout: Duration,
        stop_on_interrupt: bool,
    ) -> Result<Task, RpcError> {
        self.service
            .wait_for_state_shared(caller, id, timeout, |s| {
                stop_on_interrupt && s.is_interrupted()
            })
            .await
            .map(Arc::unwrap_or_clone)
            .map_err(|e| RpcError::from_core(e, Some(id.as_str())))
    }

    /// Reads a task of the caller; unknown, expired and foreign tasks are -32602.
    pub(crate) async fn get(&self, caller: &Caller, raw: &str) -> Result<Task, RpcError> {
        let id = TaskId::parse(raw).map_err(|_| RpcError::unknown_task(raw))?;
        self.service
            .get(caller, &id)
            .await
            .map_err(|e| RpcError::from_core(e, Some(raw)))
    }

    /// Applies keyed input responses (`ElicitResult`s). Unknown, answered and
    /// superseded keys are ignored; answers to a task that ended meanwhile too.
    pub(crate) async fn apply_responses(
        &self,
        caller: &Caller,
        raw_id: &str,
        responses: &Map<String, Value>,
    ) -> Result<(), RpcError> {
        let task = self.get(caller, raw_id).await?;
        let id = task.id.clone();
        let mut inputs = BTreeMap::new();
        let mut actions = Vec::new();
        for (key, value) in responses {
            match vocab::input_answer(&task, key, value)? {
                InputAnswer::Input { key, response } => {
                    inputs.insert(key, response);
                }
                InputAnswer::Ignored => {}
                other => actions.push(other),
            }
        }
        let ignore_ended = |r: Result<(), CoreError>| match r {
            Ok(()) | Err(CoreError::Terminal { .. }) | Err(CoreError::NotCancelable { .. }) => {
                Ok(())
            }
            Err(e) => Err(RpcError::from_core(e, Some(raw_id))),
        };
        for a in actions {
            let r = match a {
                InputAnswer::Auth {
                    provider,
                    granted: true,
                } => self
                    .service
                    .grant_auth(Access::Owner(caller), &id, &provider)
                    .await
                    .map(|_| ()),
                InputAnswer::Auth {
                    provider,
                    granted: false,
                } => self
                    .service
                    .cancel(
                        Access::Owner(caller),
                        &id,
                        Some(format!("authorization of {provider} declined")),
                    )
                    .await
                    .map(|_| ()),
                InputAnswer::Review {
                    review_id,
                    decision,
                } => self
                    .service
                    .decide_review(caller, &id, &review_id, decision)
                    .await
                    .map(|_| ()),
                InputAnswer::Input { .. } | InputAnswer::Ignored => Ok(()),
            };
            ignore_ended(r)?;
        }
        if !inputs.is_empty() {
            ignore_ended(
                self.service
                    .answer_inputs(caller, &id, inputs)
                    .await
                    .map(|_| ()),
            )?;
        }
        Ok(())
    }

    /// Cancels the caller's task. `Ok(false)` if it had already ended otherwise.
    pub(crate) async fn cancel(&self, caller: &Caller, raw_id: &str) -> Result<Task, RpcError> {
        let task = self.get(caller, raw_id).await?;
        match self
            .service
            .cancel(
                Access::Owner(caller),
                &task.id,
                Some("cancelled by the client".into()),
            )
            .await
        {
            Ok(t) => Ok(t),
            Err(e) => Err(RpcError::from_core(e, Some(raw_id))),
        }
    }

    /// Cancels a task nobody can reach any more (best effort).
    pub(crate) async fn abandon(&self, caller: &Caller, id: &TaskId, why: &str) {
        if let Err(e) = self
            .service
            .cancel(Access::Owner(caller), id, Some(why.to_string()))
            .await
        {
            tracing::debug!(task = %id, error = %e, "mcp: abandoning a task");
        }
    }
}

/// `params.taskId` as a string.
pub(crate) fn task_id_param(params: &Map<String, Value>) -> Result<&str, RpcError> {
    params
        .get("taskId")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("params.taskId (a string) is required"))
}

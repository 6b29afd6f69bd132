//! The `Agent` trait and what describes an agent: [`AgentInfo`], [`Skill`],
//! [`AgentError`]. A turn runs through a [`TurnContext`] and ends with a
//! [`TurnOutcome`] ([`crate::turn`]).

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::CoreError;
use crate::types::{Caller, Message};

pub use crate::turn::{TurnContext, TurnOutcome};

/// A skill the agent offers (an A2A skill, an MCP tool).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Skill {
    /// Stable id, also the MCP tool name.
    pub id: String,
    /// Human-readable name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON schema of its arguments.
    pub input_schema: Value,
    /// Whether callers must, may or must not follow it as a task (MCP's
    /// `taskSupport`; other protocols always see a task).
    #[serde(default, skip_serializing_if = "TaskSupport::is_optional")]
    pub task_support: TaskSupport,
    /// The skill's first turn only asks for input (it does its work once
    /// answered). An MCP client that follows tasks then answers that input in
    /// SEP-2322 `input_required` rounds of the `tools/call` itself, and the
    /// task is returned on the final round (SEP-2663's composition); other
    /// protocols see the task as always.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub input_first: bool,
}

impl Skill {
    /// A skill whose callers may follow it as a task or wait for its result.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
    ) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            description: description.into(),
            input_schema,
            task_support: TaskSupport::Optional,
            input_first: false,
        }
    }

    /// The same skill with another [`TaskSupport`].
    pub fn with_task_support(mut self, task_support: TaskSupport) -> Self {
        self.task_support = task_support;
        self
    }

    /// The same skill, marked as asking for input before it works
    /// ([`Skill::input_first`]).
    pub fn with_input_first(mut self) -> Self {
        self.input_first = true;
        self
    }
}

/// How a skill's callers relate to its task. Every call runs as a task of the
/// core; this says what a protocol that lets the client choose (MCP) offers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskSupport {
    /// The caller may follow a task or wait for the result (the default).
    #[default]
    Optional,
    /// Only callers that can follow a task may call it (long-running work).
    Required,
    /// The caller always waits for the result, never gets a task (quick work).
    Forbidden,
}

impl TaskSupport {
    /// True for [`TaskSupport::Optional`].
    pub fn is_optional(&self) -> bool {
        *self == TaskSupport::Optional
    }

    /// The MCP `taskSupport` value.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskSupport::Optional => "optional",
            TaskSupport::Required => "required",
            TaskSupport::Forbidden => "forbidden",
        }
    }
}

/// What an agent says about itself.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInfo {
    /// The agent's name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Its version.
    pub version: String,
    /// Its skills.
    pub skills: Vec<Skill>,
    /// JSON schema of the parameter keys an input may carry besides `message`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters_schema: Option<Value>,
}

impl AgentInfo {
    /// An agent card with a name and description, version 0.1.0, no skills and no
    /// parameters schema.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            version: "0.1.0".into(),
            skills: Vec::new(),
            parameters_schema: None,
        }
    }

    /// Adds a skill.
    pub fn with_skill(mut self, skill: Skill) -> Self {
        self.skills.push(skill);
        self
    }

    /// The skills as the adapters offer them: the declared ones, or, for an agent
    /// that declares none, one default skill ([`DEFAULT_SKILL_ID`], the agent's
    /// name and description) taking a `text` argument, so that every protocol can
    /// call it (an MCP tool needs a skill; an A2A card lists it).
    pub fn with_default_skill(mut self) -> Self {
        if self.skills.is_empty() {
            self.skills.push(Skill {
                task_support: TaskSupport::Optional,
                input_first: false,
                id: DEFAULT_SKILL_ID.into(),
                name: self.name.clone(),
                description: self.description.clone(),
                input_schema: serde_json::json!({
                    "type": "object",
                    "properties": {
                        "text": {"type": "string", "description": "The message to the agent"}
                    },
                    "required": ["text"]
                }),
            });
        }
        self
    }
}

/// The id (and MCP tool name) of the skill an agent that declares none is offered
/// with ([`AgentInfo::with_default_skill`]).
pub const DEFAULT_SKILL_ID: &str = "run";

/// An error from agent code. The task fails with a safe message; the details are
/// only logged.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// Anything the agent could not handle.
    #[error("internal agent error: {0}")]
    Internal(String),
    /// A core operation failed inside the turn (for example the task was canceled).
    #[error(transparent)]
    Core(#[from] CoreError),
}

/// An agent: runs one turn of a task at a time. It must be safe to run a turn
/// twice (a turn whose worker died is re-run), and should watch `ctx.cancelled()`.
#[async_trait]
pub trait Agent: Send + Sync + 'static {
    /// The agent's card.
    fn info(&self) -> AgentInfo;

    /// Runs one turn.
    async fn run_turn(&self, ctx: &TurnContext) -> Result<TurnOutcome, AgentError>;

    /// A direct reply without a task, for protocols that allow one. `None` (the
    /// default) means the message starts a task.
    async fn direct_reply(&self, _caller: &Caller, _message: &Message) -> Option<Message> {
        None
    }

    /// Whether the agent can take work now, for `/readyz`: `Err` says why not
    /// (a bridged agent whose upstream does not answer). The default is ready.
    async fn ready(&self) -> std::result::Result<(), String> {
        Ok(())
    }
}

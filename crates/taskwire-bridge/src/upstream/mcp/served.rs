//! What an MCP upstream serves, whichever revision it speaks: its endpoint,
//! its tools and their input schemas, the agent they are offered as, and the
//! store its tasks live in.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use taskwire_client::BackoffPolicy;
use taskwire_core::{AgentInfo, Skill, TaskStore, TurnContext};
use taskwire_vocab::upstream::mcp as vocab;

use crate::cancel_watch::Watcher;
use crate::error::BridgeError;
use crate::link::{LinkBounds, LinkRecords};
use crate::options::UpstreamOptions;

/// What an MCP upstream serves (see the module).
#[derive(Clone)]
pub struct Served {
    pub(crate) endpoint: String,
    /// The tools served (all of the server's, or the URL's `#tool`), with
    /// their input schemas.
    pub(crate) tools: Vec<(String, Value)>,
    /// The server offers the tasks extension (2025-11-25: some tool served
    /// is called as a task).
    pub(crate) tasks: bool,
    pub(crate) info: AgentInfo,
    pub(crate) store: Option<Arc<dyn TaskStore>>,
    pub(crate) backoff: BackoffPolicy,
    pub(crate) poll_interval: Duration,
    pub(crate) link_bounds: LinkBounds,
    pub(crate) watcher: Option<Arc<Watcher>>,
}

impl Served {
    /// What `endpoint` serves: `tools` offered as `info`.
    pub(crate) fn new(
        endpoint: &str,
        info: AgentInfo,
        tools: Vec<(String, Value)>,
        tasks: bool,
        opts: &UpstreamOptions,
    ) -> Self {
        Self {
            endpoint: endpoint.to_string(),
            tools,
            tasks,
            info,
            store: None,
            backoff: opts.backoff.clone(),
            poll_interval: opts.poll_interval,
            link_bounds: LinkBounds::of(opts),
            watcher: None,
        }
    }

    /// The `upstream_link` records of this executor's tasks (with a store).
    pub(crate) fn link_records(&self) -> Option<&Arc<LinkRecords>> {
        self.watcher.as_ref().map(|w| &w.records)
    }

    /// With the store and the watcher of cancels made while no turn runs.
    pub(crate) fn with_store(mut self, store: Arc<dyn TaskStore>, watcher: Watcher) -> Self {
        self.watcher = Some(Arc::new(watcher));
        self.store = Some(store);
        self
    }

    /// The arguments of a call of `tool` for the task's first message, by
    /// the tool's input schema.
    pub(crate) fn arguments(
        &self,
        tool: &str,
        ctx: &TurnContext,
    ) -> serde_json::Map<String, Value> {
        static NO_SCHEMA: Value = Value::Null;
        let schema = self
            .tools
            .iter()
            .find(|t| t.0 == tool)
            .map_or(&NO_SCHEMA, |t| &t.1);
        let first = ctx.task().history.first().or(ctx.input().first());
        vocab::tool_arguments(schema, first)
    }

    pub(crate) fn tool_names(&self) -> Vec<String> {
        self.tools.iter().map(|t| t.0.clone()).collect()
    }
}

/// The tools to serve: `tool` alone (an error naming the server's tools
/// when it has none of that name), else all of them.
pub(crate) fn choose_tools(
    listed: Vec<taskwire_client::mcp::Tool>,
    tool: Option<&str>,
) -> Result<Vec<taskwire_client::mcp::Tool>, BridgeError> {
    let all: Vec<String> = listed.iter().map(|t| t.name.clone()).collect();
    match tool {
        Some(name) => {
            let found: Vec<_> = listed.into_iter().filter(|t| t.name == name).collect();
            if found.is_empty() {
                return Err(BridgeError::NoSuchTool {
                    tool: name.to_string(),
                    tools: all,
                });
            }
            Ok(found)
        }
        None => Ok(listed),
    }
}

/// The agent info of an MCP server (its name, version and instructions) whose
/// `tools` are its skills, and the tools' input schemas.
pub(crate) fn agent_info(
    endpoint: &str,
    name: String,
    version: String,
    instructions: Option<String>,
    tools: &[taskwire_client::mcp::Tool],
) -> (AgentInfo, Vec<(String, Value)>) {
    let description = instructions
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| format!("The MCP server at {endpoint}, bridged by taskwire"));
    let mut info = AgentInfo::new(
        if name.trim().is_empty() {
            "upstream".to_string()
        } else {
            name
        },
        description,
    );
    if !version.is_empty() {
        info.version = version;
    }
    let mut out = Vec::new();
    for t in tools {
        let schema = Value::Object(t.input_schema.clone());
        info.skills.push(Skill::new(
            t.name.clone(),
            t.title.clone().unwrap_or_else(|| t.name.clone()),
            t.description.clone().unwrap_or_default(),
            schema.clone(),
        ));
        out.push((t.name.clone(), schema));
    }
    (info, out)
}

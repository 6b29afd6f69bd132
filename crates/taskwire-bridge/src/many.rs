//! Several upstreams behind one server (`--upstream NAME=URL`, repeated): each
//! upstream is one skill named `NAME`, and each task runs on the upstream its
//! caller chose.
//!
//! An MCP caller chooses by calling the tool `NAME`; an A2A caller names it in
//! the request's metadata (`{"skill": "NAME"}`, kept as task metadata). A task
//! that names no upstream runs on the only one, or is rejected with the list.

use std::sync::Arc;

use serde_json::{json, Value};
use taskwire_core::{
    async_trait, Agent, AgentError, AgentInfo, Skill, Task, TurnContext, TurnOutcome,
};
use taskwire_vocab::mcp::TOOL_METADATA_KEY;
use taskwire_vocab::upstream::SKILL_METADATA_KEY;

use crate::error::BridgeError;

/// One named upstream.
#[derive(Clone)]
pub struct Member {
    /// The skill name callers choose it by.
    pub name: String,
    /// The upstream executor.
    pub agent: Arc<dyn Agent>,
}

impl std::fmt::Debug for Member {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Member")
            .field("name", &self.name)
            .field("agent", &self.agent.info().name)
            .finish()
    }
}

/// Most upstreams one bridge serves (`--upstream` given at most this often).
pub const MAX_UPSTREAMS: usize = 32;

/// Whether `name` can name an upstream: 1 to 64 ASCII letters, digits, `_`
/// and `-` (it becomes a skill id and an MCP tool name).
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Several upstreams, run as one agent with one skill per upstream.
#[derive(Debug)]
pub struct Upstreams {
    members: Vec<Member>,
    info: AgentInfo,
}

impl Upstreams {
    /// The agent of these upstreams. Each member becomes one skill named after
    /// it, described by its upstream; a member whose upstream offers exactly
    /// one skill lends it its input schema (an MCP tool's arguments), others
    /// take one `text`. An MCP member must offer one tool (`#TOOL`), since its
    /// skill is the upstream as a whole.
    pub fn new(members: Vec<Member>) -> Result<Self, BridgeError> {
        if members.len() > MAX_UPSTREAMS {
            return Err(BridgeError::Config(format!(
                "{} upstreams: a bridge serves at most {MAX_UPSTREAMS}",
                members.len()
            )));
        }
        let mut info = AgentInfo::new(
            "taskwire-bridge",
            format!(
                "Bridges {} upstream agents: {}",
                members.len(),
                members
                    .iter()
                    .map(|m| m.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
        for (i, m) in members.iter().enumerate() {
            if !valid_name(&m.name) {
                return Err(BridgeError::Config(format!(
                    "upstream name {:?}: use 1 to 64 letters, digits, `_` or `-`",
                    m.name
                )));
            }
            if members[..i].iter().any(|o| o.name == m.name) {
                return Err(BridgeError::Config(format!(
                    "two upstreams are named {:?}",
                    m.name
                )));
            }
            let up = m.agent.info();
            let (schema, description) = match up.skills.as_slice() {
                [only] => (
                    only.input_schema.clone(),
                    if only.description.trim().is_empty() {
                        up.description.clone()
                    } else {
                        only.description.clone()
                    },
                ),
                _ => (text_schema(), up.description.clone()),
            };
            info.skills.push(Skill::new(
                m.name.clone(),
                up.name.clone(),
                description,
                schema,
            ));
        }
        Ok(Self { members, info })
    }

    /// The member a task runs on.
    fn member_of(&self, ctx: &TurnContext) -> Option<&Member> {
        let i = member_index(&ctx.task().metadata, self.members.iter().map(|m| &m.name))?;
        self.members.get(i)
    }
}

/// The index, among `names`, of the member a task with `metadata` runs on:
/// the first of its MCP tool and A2A skill that names a member, else the only
/// member.
fn member_index<'a>(
    metadata: &serde_json::Map<String, Value>,
    names: impl ExactSizeIterator<Item = &'a String> + Clone,
) -> Option<usize> {
    let chosen = [TOOL_METADATA_KEY, SKILL_METADATA_KEY]
        .iter()
        .filter_map(|k| metadata.get(*k).and_then(Value::as_str))
        .find_map(|n| names.clone().position(|m| m == n));
    match chosen {
        Some(i) => Some(i),
        None if names.len() == 1 => Some(0),
        None => None,
    }
}

/// The member an upstream executor is, among several: its watcher of
/// downstream cancels acts only on the tasks that run on it (the others are
/// another member's, whose upstream would refuse the cancel, or could hold
/// a task of the same id).
#[derive(Clone, Debug)]
pub(crate) struct Route {
    index: usize,
    names: Arc<[String]>,
}

impl Route {
    /// The routes of members named `names`, in order.
    pub(crate) fn all(names: Vec<String>) -> Vec<Route> {
        let names: Arc<[String]> = names.into();
        (0..names.len())
            .map(|index| Route {
                index,
                names: names.clone(),
            })
            .collect()
    }

    /// Whether a task runs on this member.
    pub(crate) fn owns(&self, task: &Task) -> bool {
        member_index(&task.metadata, self.names.iter()) == Some(self.index)
    }

    /// This member's name.
    pub(crate) fn name(&self) -> &str {
        self.names.get(self.index).map_or("", String::as_str)
    }
}

/// Whether the executor with `route` (none: the only upstream) owns `task`.
pub(crate) fn owns(route: Option<&Route>, task: &Task) -> bool {
    route.is_none_or(|r| r.owns(task))
}

fn text_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"text": {"type": "string", "description": "The message to the upstream agent"}},
        "required": ["text"]
    })
}

#[async_trait]
impl Agent for Upstreams {
    fn info(&self) -> AgentInfo {
        self.info.clone()
    }

    async fn run_turn(&self, ctx: &TurnContext) -> Result<TurnOutcome, AgentError> {
        match self.member_of(ctx) {
            Some(m) => m.agent.run_turn(ctx).await,
            None => Ok(TurnOutcome::Rejected {
                reason: format!(
                    "this bridge serves several upstreams ({}): call one as an MCP tool, or name it in the A2A request's metadata as {{\"{SKILL_METADATA_KEY}\": \"NAME\"}}",
                    self.members
                        .iter()
                        .map(|m| m.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }),
        }
    }

    /// Ready when every upstream is; else the first that is not, by name.
    async fn ready(&self) -> Result<(), String> {
        for m in &self.members {
            m.agent
                .ready()
                .await
                .map_err(|e| format!("{}: {e}", m.name))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Named(&'static str, Vec<Skill>);

    #[async_trait]
    impl Agent for Named {
        fn info(&self) -> AgentInfo {
            let mut i = AgentInfo::new(self.0, format!("{} agent", self.0));
            i.skills = self.1.clone();
            i
        }
        async fn run_turn(&self, _ctx: &TurnContext) -> Result<TurnOutcome, AgentError> {
            Ok(TurnOutcome::Completed { message: None })
        }
    }

    fn member(name: &str, agent: Named) -> Member {
        Member {
            name: name.into(),
            agent: Arc::new(agent),
        }
    }

    #[test]
    fn each_upstream_is_one_skill() {
        let tool = Skill::new(
            "t",
            "T",
            "a tool",
            json!({"type": "object", "properties": {"q": {"type": "string"}}}),
        );
        let u = Upstreams::new(vec![
            member("search", Named("mcp-server", vec![tool])),
            member("writer", Named("scripted", vec![])),
        ])
        .expect("upstreams");
        let info = u.info();
        let ids: Vec<&str> = info.skills.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, vec!["search", "writer"]);
        assert_eq!(info.skills[0].description, "a tool");
        assert_eq!(
            info.skills[0].input_schema["properties"]["q"]["type"],
            "string"
        );
        assert_eq!(info.skills[1].description, "scripted agent");
        assert_eq!(info.skills[1].input_schema["required"][0], "text");
    }

    #[test]
    fn names_are_checked() {
        for bad in ["", "a b", "a/b", &"x".repeat(65)] {
            assert!(
                Upstreams::new(vec![member(bad, Named("a", vec![]))]).is_err(),
                "{bad:?}"
            );
        }
        assert!(Upstreams::new(vec![
            member("a", Named("a", vec![])),
            member("a", Named("b", vec![]))
        ])
        .is_err());
        assert!(valid_name("search_2-x"));
    }
}

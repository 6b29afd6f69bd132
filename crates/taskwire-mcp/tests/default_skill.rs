//! An agent that declares no skill is still callable over MCP: it is offered one
//! default tool (`run`, taking `text`), which becomes the task's text part.

#![allow(clippy::unwrap_used, reason = "tests")]

mod common;

use std::sync::Arc;

use common::Server;
use serde_json::{json, Value};
use taskwire_core::{async_trait, Agent, AgentError, AgentInfo, Part, TurnContext, TurnOutcome};
use taskwire_mcp::McpConfig;

/// Upper-cases its input; declares no skill.
struct Upper;

#[async_trait]
impl Agent for Upper {
    fn info(&self) -> AgentInfo {
        AgentInfo::new("upper", "Replies in upper case.")
    }

    async fn run_turn(&self, ctx: &TurnContext) -> Result<TurnOutcome, AgentError> {
        for (i, m) in ctx.input().iter().enumerate() {
            let part = Part::text(m.text().to_uppercase());
            ctx.emit_artifact(&format!("upper-{i}"), Some("upper"), vec![part])
                .await?;
        }
        Ok(TurnOutcome::Completed { message: None })
    }
}

#[tokio::test]
async fn an_agent_without_skills_is_offered_the_default_tool() {
    let s = Server::with_agent(Arc::new(Upper), McpConfig::default()).await;
    let (status, list) = s.call("tools/list", json!({}), false).await;
    assert_eq!(status, 200, "{list}");
    let tools = list["result"]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1, "{list}");
    assert_eq!(tools[0]["name"], taskwire_core::DEFAULT_SKILL_ID);
    assert_eq!(tools[0]["description"], "Replies in upper case.");
    assert_eq!(tools[0]["inputSchema"]["required"], json!(["text"]));

    let (status, r) = s
        .call(
            "tools/call",
            json!({"name": "run", "arguments": {"text": "hello"}}),
            false,
        )
        .await;
    assert_eq!(status, 200, "{r}");
    let text: Vec<&str> = r["result"]["content"]
        .as_array()
        .unwrap_or_else(|| panic!("no content: {r}"))
        .iter()
        .filter_map(|c| c.get("text").and_then(Value::as_str))
        .collect();
    assert!(text.contains(&"HELLO"), "{r}");
    s.shutdown().await;
}

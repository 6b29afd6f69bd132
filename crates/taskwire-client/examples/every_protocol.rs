//! Calls one agent over every protocol a taskwire server speaks, with the clients
//! of this crate, and prints what each answered: A2A (JSON-RPC), MCP (its first
//! tool, with a `text` argument), AG-UI (a run's events) and CAS (a task polled
//! to its end, then its messages).
//!
//! `cargo run -p taskwire-client --example every_protocol -- http://127.0.0.1:7420 [token]`

use std::time::Duration;
use taskwire_client::A2aBinding as _;

use serde_json::json;
use taskwire_client::agui::{AguiClient, AguiEncoding, RunAgentInput};
use taskwire_client::cas::{CasClient, CasInput, CasPhase};
use taskwire_client::mcp::{McpClient, ToolCallOutcome};
use taskwire_client::{a2a::A2aClient, ClientConfig, ClientError};

#[tokio::main]
async fn main() -> Result<(), ClientError> {
    let mut args = std::env::args().skip(1);
    let base = args
        .next()
        .unwrap_or_else(|| "http://127.0.0.1:7420".into());
    let mut config = ClientConfig::builder(base);
    if let Some(token) = args.next() {
        config = config.bearer_token(token);
    }
    let config = config.build();

    let (a2a, card) = A2aClient::discover(config.clone()).await?;
    let reply = a2a.send_text("hello over A2A", false).await?;
    println!("A2A ({}): {}", card.name, reply.raw);

    let mcp = McpClient::new(config.clone())?;
    let tools = mcp.list_tools().await?.value;
    let tool = tools
        .first()
        .ok_or_else(|| ClientError::Config("the server offers no MCP tool".into()))?;
    let called = mcp
        .call_tool(&tool.name, json!({"text": "hello over MCP"}))
        .await?;
    println!("MCP ({}): {}", tool.name, called.raw);
    // With the tasks extension (declared by default) a call may become a task.
    if let ToolCallOutcome::Task(task) = called.value {
        let done = mcp
            .wait_task(&task.task_id, Duration::from_secs(30))
            .await?;
        println!("MCP task: {}", done.raw);
    }

    let agui = AguiClient::new(config.clone())?;
    let input =
        RunAgentInput::new("every-protocol", "run-1").user_message("m1", "hello over AG-UI");
    let events = agui
        .run(&input, AguiEncoding::Sse)
        .await?
        .collect_all()
        .await?;
    for e in &events {
        println!("AG-UI {}: {}", e.kind, e.raw);
    }

    let cas = CasClient::new(config)?;
    let created = cas
        .create_task(&CasInput::text("hello over CAS"), None)
        .await?;
    let id = created.value.id;
    let ended = |s: &taskwire_client::cas::CasStatus| s.status.phase == CasPhase::Terminal;
    let status = cas.wait_until(&id, Duration::from_secs(30), ended).await?;
    println!("CAS status: {}", status.raw);
    println!("CAS messages: {}", cas.messages(&id).await?.raw);
    Ok(())
}

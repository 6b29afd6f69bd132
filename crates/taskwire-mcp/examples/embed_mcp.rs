//! One adapter crate in your own axum application, without the `taskwire` server:
//! your agent's tasks as MCP tools at `/mcp`, next to a route of your own
//! (`GET /hello`). You bring the task core (store, service, runtime) and say who
//! the caller is (here one local principal; put your own authentication there).
//!
//! `cargo run -p taskwire-mcp --example embed_mcp -- --listen 127.0.0.1:7422`
//! (or `TASKWIRE_LISTEN`; default `127.0.0.1:0`, any free port); it prints where.
use std::{net::SocketAddr, sync::Arc, time::Duration};

use axum::{extract::Request, middleware::Next, routing::get, Router};
use taskwire_core::{async_trait, Agent, AgentError, AgentInfo, Caller, MemoryStore, Part};
use taskwire_core::{Runtime, RuntimeConfig, TaskService, TurnContext, TurnOutcome};
use taskwire_mcp::{McpAdapter, McpConfig};

struct Upper;

#[async_trait]
impl Agent for Upper {
    fn info(&self) -> AgentInfo {
        AgentInfo::new("upper", "Replies in upper case.")
    }

    async fn run_turn(&self, ctx: &TurnContext) -> Result<TurnOutcome, AgentError> {
        let text: String = ctx
            .input()
            .iter()
            .map(|m| m.text().to_uppercase())
            .collect();
        let id = format!("upper-{}", ctx.task().turns);
        ctx.emit_artifact(&id, Some("upper"), vec![Part::text(text)])
            .await?;
        Ok(TurnOutcome::Completed { message: None })
    }
}

/// Your authentication goes here: the adapter serves the caller it finds.
async fn caller(mut req: Request, next: Next) -> axum::response::Response {
    req.extensions_mut().insert(Caller::local());
    next.run(req).await
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let listen = match args.iter().position(|a| a == "--listen") {
        Some(i) => args
            .get(i + 1)
            .cloned()
            .ok_or("--listen needs an address")?,
        None => std::env::var("TASKWIRE_LISTEN").unwrap_or_else(|_| "127.0.0.1:0".into()),
    };
    let agent: Arc<dyn Agent> = Arc::new(Upper);
    let service = TaskService::new(Arc::new(MemoryStore::new()), agent.info().name);
    let runtime = Runtime::start(service.clone(), agent.clone(), RuntimeConfig::default());
    let mcp = McpAdapter::new(service, agent, McpConfig::default()).routes();
    let app = Router::new()
        .route("/hello", get(|| async { "a route of your own\n" }))
        .merge(mcp.layer(axum::middleware::from_fn(caller)));
    let listener = tokio::net::TcpListener::bind(listen.parse::<SocketAddr>()?).await?;
    println!("listening on http://{}", listener.local_addr()?);
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    runtime.shutdown(Duration::from_secs(5)).await;
    Ok(())
}

//! Your own agent, served on every protocol (A2A JSON-RPC and gRPC, MCP, AG-UI,
//! CAS). It declares no skill, so it is offered the default one (`run`, taking
//! `text`). `cargo run -p taskwire --example custom_agent -- --listen 127.0.0.1:7421`
//! (or `TASKWIRE_LISTEN`; default `127.0.0.1:0`, any free port); it prints where.
use std::{net::SocketAddr, sync::Arc};
use taskwire::{async_trait, Agent, AgentError, AgentInfo, MemoryStore, Part, Server};
use taskwire::{TurnContext, TurnOutcome};

struct Upper;

#[async_trait]
impl Agent for Upper {
    fn info(&self) -> AgentInfo {
        AgentInfo::new("upper", "Replies in upper case.")
    }

    async fn run_turn(&self, ctx: &TurnContext) -> Result<TurnOutcome, AgentError> {
        for (i, m) in ctx.input().iter().enumerate() {
            let id = format!("upper-{}-{i}", ctx.task().turns);
            let part = Part::text(m.text().to_uppercase());
            ctx.emit_artifact(&id, Some("upper"), vec![part]).await?;
        }
        Ok(TurnOutcome::Completed { message: None })
    }
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
    let server = Server::builder()
        .agent(Arc::new(Upper))
        .store(Arc::new(MemoryStore::new()))
        .listen(listen.parse::<SocketAddr>()?)
        .all_adapters()
        .build()
        .await?;
    println!("listening on http://{}", server.local_addr());
    server.run(tokio::signal::ctrl_c()).await?;
    Ok(())
}

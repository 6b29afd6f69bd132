//! A custom agent (it upper-cases its input) served through the taskwire builder.
use async_trait::async_trait;
use std::{sync::Arc, time::Duration};
use taskwire::Server;
use taskwire_core::{Agent, AgentError, AgentInfo, Caller, CreateTask, MemoryStore, Message};
use taskwire_core::{Part, Task, TurnContext, TurnOutcome};

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

/// `cargo run -p taskwire --example custom_agent`; serves 127.0.0.1:7420 until Ctrl-C.
#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Server::builder()
        .agent(Arc::new(Upper))
        .store(Arc::new(MemoryStore::new()))
        .build()
        .await?;
    let (service, me) = (server.service().clone(), Caller::local());
    let serving = tokio::spawn(server.run(tokio::signal::ctrl_c()));
    let first = CreateTask::new(Message::user_text("hello, taskwire"));
    let id = service.create(&me, first).await?.task.id.clone();
    let (ended, five) = (|t: &Task| t.state.is_terminal(), Duration::from_secs(5));
    let t = service.wait_until(&me, &id, five, ended).await?;
    println!("{}: {:?}", t.state, t.artifacts.first().map(|a| a.text()));
    Ok(serving.await??)
}

//! Resume rules with an agent that asks two questions at once: a partial resume is
//! refused, a full one continues the task; an interrupt of a task that ended is
//! expired.

mod common;

use std::sync::Arc;

use async_trait::async_trait;
use common::{input, user, Env};
use serde_json::json;
use taskwire_core::{Agent, AgentError, AgentInfo, TurnContext, TurnOutcome};

struct TwoQuestions;

#[async_trait]
impl Agent for TwoQuestions {
    fn info(&self) -> AgentInfo {
        AgentInfo::new("two", "asks two questions at once")
    }

    async fn run_turn(&self, ctx: &TurnContext) -> Result<TurnOutcome, AgentError> {
        let a = ctx.answers().get("a").cloned();
        let b = ctx.answers().get("b").cloned();
        match (a, b) {
            (Some(a), Some(b)) => {
                ctx.emit_text(format!("a={:?} b={:?}", a.content, b.content))
                    .await?;
                Ok(TurnOutcome::Completed { message: None })
            }
            _ => {
                let schema = json!({"type": "object"});
                ctx.request_input("a", "first?", schema.clone())?;
                ctx.request_input("b", "second?", schema)?;
                Ok(TurnOutcome::Waiting { message: None })
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partial_resume_is_refused_and_a_full_one_continues() {
    let env = Env::with_agent(Arc::new(TwoQuestions)).await;
    let m = user("m1", "go");
    let s = env
        .run("alice", &input("th", "run-1", json!([m])))
        .await
        .verified();
    let ints = s.interrupts();
    assert_eq!(ints.len(), 2);
    let (a, b) = (ints[0]["id"].clone(), ints[1]["id"].clone());

    let mut partial = input("th", "run-2", json!([m]));
    partial["resume"] = json!([{"interruptId": a, "status": "resolved", "payload": {"v": 1}}]);
    let s = env.run("alice", &partial).await.verified();
    assert_eq!(s.types(), ["RUN_ERROR"]);
    assert_eq!(s.last()["code"], "resume_incomplete");
    assert!(s.last()["message"]
        .as_str()
        .unwrap()
        .contains(b.as_str().unwrap()));

    let mut twice = input("th", "run-2b", json!([m]));
    twice["resume"] = json!([
        {"interruptId": a, "status": "resolved", "payload": {"v": 1}},
        {"interruptId": a, "status": "resolved", "payload": {"v": 1}}
    ]);
    assert_eq!(
        env.run("alice", &twice).await.verified().last()["code"],
        "invalid_input"
    );

    let mut full = input("th", "run-3", json!([m]));
    full["resume"] = json!([
        {"interruptId": a, "status": "resolved", "payload": {"v": 1}},
        {"interruptId": b, "status": "resolved", "payload": "two"}
    ]);
    let s = env.run("alice", &full).await.verified();
    assert_eq!(s.last()["type"], "RUN_FINISHED", "{:#?}", s.frames);
    let text = s.first_of("TEXT_MESSAGE_CONTENT").unwrap()["delta"].clone();
    assert_eq!(
        text,
        json!("a=Some(Object {\"v\": Number(1)}) b=Some(Object {\"answer\": String(\"two\")})")
    );
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_of_a_cancelled_task_is_expired() {
    let env = Env::start().await;
    let m = user("m1", "ask anything?");
    let s = env
        .run("alice", &input("th-x", "run-1", json!([m])))
        .await
        .verified();
    let id = s.interrupts()[0]["id"].clone();
    let c = env
        .http
        .post(env.url("/agui/threads/th-x/runs/run-1/cancel"))
        .send()
        .await
        .unwrap();
    assert_eq!(c.status(), 200);
    let mut r = input("th-x", "run-2", json!([m]));
    r["resume"] = json!([{"interruptId": id, "status": "resolved", "payload": {"answer": "x"}}]);
    let s = env.run("alice", &r).await.verified();
    assert_eq!(s.types(), ["RUN_ERROR"]);
    assert_eq!(s.last()["code"], "interrupt_expired");
    env.stop().await;
}

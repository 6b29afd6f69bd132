//! The CAS surface end to end: each numbered rule of the task status contract
//! (seed 000_d6b71b34d9865e90) as at least one test, golden fixtures for every
//! shape the surface emits, and one task driven through every phase.

mod common;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use common::{golden, id_of, input, Harness};
use reqwest::StatusCode;
use serde_json::{json, Value};
use taskwire_core::guardrail::DenyPhrases;
use taskwire_core::service::TaskDefaults;
use taskwire_core::{
    Agent, AgentError, AgentInfo, RuntimeConfig, ScriptedAgent, TaskId, TurnContext, TurnOutcome,
};
use tokio::sync::Notify;

fn scripted() -> Arc<dyn Agent> {
    Arc::new(ScriptedAgent::new())
}

// ---------------------------------------------------------------- status object

/// Status object rule 1: the id is cryptographically random (128 bits) and unique.
#[tokio::test]
async fn rule1_ids_are_random_and_unique() {
    let h = Harness::start(scripted()).await;
    let a = id_of(&h.create_text("one").await);
    let b = id_of(&h.create_text("two").await);
    assert_ne!(a, b);
    for id in [&a, &b] {
        assert_eq!(id.len(), 32);
        assert!(id.bytes().all(|c| c.is_ascii_hexdigit()));
    }
    h.stop().await;
}

/// Status object rules 2 and 4: the agent's name, and the creation time in UTC ISO 8601.
#[tokio::test]
async fn rule2_4_agent_name_and_created_at() {
    let h = Harness::start(scripted()).await;
    let before = chrono::Utc::now() - chrono::Duration::seconds(1);
    let s = h.create_text("hello").await;
    assert_eq!(s["agent"], "scripted");
    let created = s["created_at"].as_str().unwrap();
    assert!(created.ends_with('Z'), "{created}");
    let t = chrono::DateTime::parse_from_rfc3339(created).unwrap();
    assert!(t >= before && t <= chrono::Utc::now());
    h.stop().await;
}

/// Status object rule 3: the responsible user is the creator, or for a task created
/// on behalf of another task, that task's responsible user; input belongs to them.
/// Only a task the caller may read can be a parent: another principal's task is
/// "not found", exactly as an id that names no task (no existence oracle), and the
/// refused child appears nowhere.
#[tokio::test]
async fn rule3_responsible_user() {
    let h = Harness::start(scripted()).await;
    let parent = h.create_text("ask what?").await;
    assert_eq!(parent["responsible_user"], "alice");
    let pid = id_of(&parent);
    let as_helper = |parent: String| {
        let h = &h;
        async move {
            h.send(
                reqwest::Method::POST,
                "/cas/tasks",
                "helper-agent",
                Some(input("review")),
                &[("cas-parent-task", &parent)],
            )
            .await
        }
    };
    // Another principal cannot hang a task under alice's...
    let foreign = as_helper(pid.clone()).await;
    assert_eq!(foreign.status, StatusCode::NOT_FOUND, "{}", foreign.body);
    // ...and cannot tell it from a task that does not exist.
    let random = as_helper(taskwire_core::TaskId::new().to_string()).await;
    assert_eq!(random.status, StatusCode::NOT_FOUND);
    assert_eq!(foreign.body, random.body);
    // Nothing was created on either side (no review reached alice).
    let r = h
        .send(reqwest::Method::GET, "/cas/reviews", "alice", None, &[])
        .await;
    assert_eq!(r.body["reviews"], json!([]), "{}", r.body);
    // Alice creates a task on behalf of her own: the responsible user carries over.
    let r = h
        .send(
            reqwest::Method::POST,
            "/cas/tasks",
            "alice",
            Some(input("ask and you?")),
            &[("cas-parent-task", &pid)],
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.body["responsible_user"], "alice");
    let child = id_of(&r.body);
    h.wait_phase(&child, "idle").await;
    // Another principal can neither read it nor send it input.
    let r = h
        .send(
            reqwest::Method::GET,
            &format!("/cas/tasks/{child}"),
            "helper-agent",
            None,
            &[],
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    let r = h
        .post(
            &format!("/cas/tasks/{child}/input"),
            "helper-agent",
            input("x"),
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    let r = h
        .post(&format!("/cas/tasks/{child}/input"), "alice", input("me"))
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let done = h.wait_phase(&child, "terminal").await;
    assert_eq!(done["status"]["terminal_reason"], "completed");
    h.stop().await;
}

/// Status object rule 5: terminal_reason is null unless terminal; a terminal task
/// is never mutated (input is refused and nothing changes).
#[tokio::test]
async fn rule5_terminal_reason_and_no_mutation_after_terminal() {
    let h = Harness::start(scripted()).await;
    let s = h.create_text("sleep 100\nhello").await;
    assert_eq!(s["status"]["phase"], "processing");
    assert_eq!(s["status"]["terminal_reason"], Value::Null);
    let id = id_of(&s);
    let done = h.wait_phase(&id, "terminal").await;
    assert_eq!(done["status"]["terminal_reason"], "completed");
    golden("status_terminal_completed", &done);
    golden("messages_echo", &h.messages(&id).await);
    let r = h
        .post(&format!("/cas/tasks/{id}/input"), "alice", input("more"))
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT);
    assert_eq!(r.body["error"]["code"], "task_terminal");
    golden("error_task_terminal", &r.body);
    assert_eq!(h.status(&id).await, done);

    let failed = h.create_text("fail boom").await;
    let failed = h.wait_phase(&id_of(&failed), "terminal").await;
    assert_eq!(failed["status"]["terminal_reason"], "errored");
    golden("status_terminal_errored", &failed);
    let m = h.messages(&id_of(&failed)).await;
    assert_eq!(
        m.as_array().unwrap().last().unwrap()["error"],
        "agent_failed"
    );

    let rejected = h.create_text("reject nope").await;
    let rejected = h.wait_phase(&id_of(&rejected), "terminal").await;
    assert_eq!(rejected["status"]["terminal_reason"], "restricted");
    golden("status_terminal_restricted", &rejected);
    h.stop().await;
}

/// An agent that emits steps and state (which move the core version) and then, on
/// a signal, a message (which CAS shows).
struct QuietThenTalk {
    emitted: Arc<Notify>,
    go: Arc<Notify>,
}

#[async_trait]
impl Agent for QuietThenTalk {
    fn info(&self) -> AgentInfo {
        AgentInfo::new("quiet", "steps and state, then a message")
    }

    async fn run_turn(&self, ctx: &TurnContext) -> Result<TurnOutcome, AgentError> {
        let pause = || async {
            self.emitted.notify_one();
            let _ = tokio::time::timeout(Duration::from_secs(5), self.go.notified()).await;
        };
        ctx.flush().await?;
        pause().await;
        ctx.step_started("think").await?;
        ctx.set_state(json!({"thinking": true})).await?;
        ctx.step_finished("think").await?;
        ctx.flush().await?;
        pause().await;
        ctx.emit_text("said something").await?;
        ctx.flush().await?;
        pause().await;
        Ok(TurnOutcome::Completed { message: None })
    }
}

/// Status object rule 6: the revision changes when the status object or the
/// messages change, and on nothing else (steps and agent state move the core's
/// version but not the revision).
#[tokio::test]
async fn rule6_revision_follows_status_and_messages_only() {
    let emitted = Arc::new(Notify::new());
    let go = Arc::new(Notify::new());
    let agent = Arc::new(QuietThenTalk {
        emitted: emitted.clone(),
        go: go.clone(),
    });
    let h = Harness::start(agent).await;
    let s = h.create_text("go").await;
    let id = id_of(&s);
    let tid = TaskId::parse(&id).unwrap();
    let alice = taskwire_core::Caller::new(common::TENANT, "alice");
    let next = || async {
        tokio::time::timeout(Duration::from_secs(5), emitted.notified())
            .await
            .unwrap();
    };
    // The turn started.
    next().await;
    let v1 = h.service.get(&alice, &tid).await.unwrap().version;
    let begun = h.status(&id).await;
    assert_eq!(begun["status"]["phase"], "processing");
    let r1 = begun["status"]["revision"].as_str().unwrap().to_string();
    // Steps and agent state: the core version moves, the revision does not.
    go.notify_one();
    next().await;
    let v2 = h.service.get(&alice, &tid).await.unwrap().version;
    assert!(v2 > v1, "steps and state moved the version");
    let mid = h.status(&id).await;
    assert_eq!(mid["status"]["revision"], r1.as_str());
    assert_eq!(mid, begun);
    // Nothing CAS shows changed: 304 on If-None-Match.
    let again = h
        .send(
            reqwest::Method::GET,
            &format!("/cas/tasks/{id}"),
            "alice",
            None,
            &[("if-none-match", &format!("\"{r1}\""))],
        )
        .await;
    assert_eq!(again.status, StatusCode::NOT_MODIFIED);
    go.notify_one();
    next().await;
    let talked = h.status(&id).await;
    let r2 = talked["status"]["revision"].as_str().unwrap().to_string();
    assert_ne!(r1, r2, "a new output changes the revision");
    assert_eq!(talked["status"]["phase"], "processing");
    go.notify_one();
    let done = h.wait_phase(&id, "terminal").await;
    assert_ne!(done["status"]["revision"], r2);
    h.stop().await;
}

/// An agent that needs two providers, the second one raised later.
struct TwoProviders;

#[async_trait]
impl Agent for TwoProviders {
    fn info(&self) -> AgentInfo {
        AgentInfo::new("two-providers", "needs drive and github")
    }

    async fn run_turn(&self, ctx: &TurnContext) -> Result<TurnOutcome, AgentError> {
        if ctx.is_granted("drive") && ctx.is_granted("github") {
            return Ok(TurnOutcome::Completed { message: None });
        }
        if !ctx.is_granted("drive") {
            ctx.require_auth("drive", "read", None)?;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
        if !ctx.is_granted("github") {
            ctx.require_auth("github", "push", None)?;
        }
        Ok(TurnOutcome::Waiting { message: None })
    }
}

/// Status object rule 7 and notification rule 1: notifications are ordered by
/// `since`, one per provider, removed when resolved, empty when nothing is needed.
#[tokio::test]
async fn rule7_notifications_ordered_and_removed_when_resolved() {
    let h = Harness::start(Arc::new(TwoProviders)).await;
    let id = id_of(&h.create_text("go").await);
    let s = h
        .wait_for(&id, |v| {
            v["status"]["notifications"].as_array().unwrap().len() == 2
        })
        .await;
    let n = s["status"]["notifications"].as_array().unwrap();
    assert_eq!(n[0]["provider"], "drive");
    assert_eq!(n[1]["provider"], "github");
    assert!(n[0]["since"].as_str().unwrap() <= n[1]["since"].as_str().unwrap());
    assert_eq!(s["status"]["phase"], "processing");
    let r = h
        .post(
            &format!("/cas/tasks/{id}/authorizations/drive"),
            "alice",
            json!({}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let n = r.body["status"]["notifications"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(n.len(), 1);
    assert_eq!(n[0]["provider"], "github");
    // Someone else cannot grant it.
    let r = h
        .post(
            &format!("/cas/tasks/{id}/authorizations/github"),
            "bob",
            json!({}),
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    let r = h
        .post(
            &format!("/cas/tasks/{id}/authorizations/github"),
            "alice",
            json!({}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let done = h.wait_phase(&id, "terminal").await;
    assert_eq!(done["status"]["notifications"], json!([]));
    h.stop().await;
}

/// Status object rule 8: with an inactivity lifespan, `idle_expires_at` is the time
/// the runtime ends the idle task, the runtime does end it then, and it is null at
/// terminal; with no lifespan it is null.
#[tokio::test]
async fn rule8_idle_expires_at() {
    let rc = {
        let mut v = RuntimeConfig::default();
        v.sweep_interval = Duration::from_millis(50);
        v
    };
    let h = Harness::start_with(
        scripted(),
        |s| {
            s.with_defaults({
                let mut v = TaskDefaults::default();
                v.idle_lifespan = Some(Duration::from_millis(1500));
                v
            })
        },
        rc,
    )
    .await;
    let id = id_of(&h.create_text("ask name?").await);
    let idle = h.wait_phase(&id, "idle").await;
    let at = idle["status"]["idle_expires_at"].as_str().unwrap();
    let at = chrono::DateTime::parse_from_rfc3339(at).unwrap();
    let now = chrono::Utc::now();
    assert!(
        at > now && at <= now + chrono::Duration::milliseconds(1600),
        "{at}"
    );
    golden("status_idle_with_lifespan", &idle);
    let done = h.wait_phase(&id, "terminal").await;
    assert!(chrono::Utc::now() >= at);
    assert_eq!(done["status"]["terminal_reason"], "completed");
    assert_eq!(done["status"]["idle_expires_at"], Value::Null);
    h.stop().await;

    let h = Harness::start(scripted()).await;
    let id = id_of(&h.create_text("ask name?").await);
    let idle = h.wait_phase(&id, "idle").await;
    assert_eq!(idle["status"]["idle_expires_at"], Value::Null);
    golden("status_idle", &idle);
    golden("messages_idle", &h.messages(&id).await);
    h.stop().await;
}

// ---------------------------------------------------------------- notifications

/// Requests a review by a named reviewer, then completes.
struct ReviewBy(&'static str);

#[async_trait]
impl Agent for ReviewBy {
    fn info(&self) -> AgentInfo {
        AgentInfo::new("reviewed", "asks a reviewer")
    }

    async fn run_turn(&self, ctx: &TurnContext) -> Result<TurnOutcome, AgentError> {
        match ctx.review_decision("r1") {
            Some(_) => {
                ctx.emit_text("approved").await?;
                Ok(TurnOutcome::Completed { message: None })
            }
            None => {
                ctx.request_review("r1", Some(self.0), "please check")?;
                Ok(TurnOutcome::Waiting { message: None })
            }
        }
    }
}

/// Notification rule 2: a review addressed to someone other than the responsible
/// user is not a notification (only `processing`); it is routed to its reviewer,
/// who lists and decides it.
#[tokio::test]
async fn notification2_review_for_someone_else_is_routed_not_notified() {
    let h = Harness::start(Arc::new(ReviewBy("bob"))).await;
    let id = id_of(&h.create_text("go").await);
    let tid = TaskId::parse(&id).unwrap();
    // Wait until the review is pending in the core.
    let caller = taskwire_core::Caller::new(common::TENANT, "alice");
    h.service
        .wait_until(&caller, &tid, Duration::from_secs(5), |t| {
            !t.pending_reviews.is_empty()
        })
        .await
        .unwrap();
    let s = h.status(&id).await;
    assert_eq!(s["status"]["phase"], "processing");
    assert_eq!(s["status"]["notifications"], json!([]));
    golden("status_processing_foreign_review", &s);
    // Bob cannot read the task, but sees the review addressed to him.
    assert_eq!(
        h.get(&format!("/cas/tasks/{id}"), "bob").await.status,
        StatusCode::NOT_FOUND
    );
    let mine = h.get("/cas/reviews", "alice").await;
    assert_eq!(mine.body["reviews"], json!([]));
    let his = h.get("/cas/reviews", "bob").await;
    assert_eq!(his.status, StatusCode::OK);
    assert_eq!(his.body["reviews"][0]["task_id"], id.as_str());
    assert_eq!(his.body["reviews"][0]["review_id"], "r1");
    golden("reviews_list", &his.body);
    // A cursor this server did not issue is the caller's error, not the server's.
    for bad in ["garbage", "", "%00"] {
        let r = h.get(&format!("/cas/reviews?cursor={bad}"), "bob").await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{bad:?}: {:?}", r.body);
    }
    // Alice cannot decide bob's review.
    let r = h
        .post(
            &format!("/cas/reviews/{id}/r1"),
            "alice",
            json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    let r = h
        .post(
            &format!("/cas/reviews/{id}/r1"),
            "bob",
            json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let done = h.wait_phase(&id, "terminal").await;
    assert_eq!(done["status"]["terminal_reason"], "completed");
    h.stop().await;
}

/// Notification rules 3 and 4: nothing else is a notification — not an open input
/// request (that is `idle`), not work in progress, not new output, not a terminal
/// outcome.
#[tokio::test]
async fn notification3_4_nothing_else_is_a_notification() {
    let h = Harness::start(scripted()).await;
    let s = h.create_text("sleep 200\nstream 3").await;
    let id = id_of(&s);
    assert_eq!(s["status"]["notifications"], json!([]));
    let done = h.wait_phase(&id, "terminal").await;
    assert_eq!(done["status"]["notifications"], json!([]));
    let asked = id_of(&h.create_text("ask why?").await);
    let idle = h.wait_phase(&asked, "idle").await;
    assert_eq!(idle["status"]["notifications"], json!([]));
    // A review rejected by the reviewer ends restricted, again with no notification.
    let r = id_of(&h.create_text("review").await);
    let s = h
        .wait_for(&r, |v| {
            v["status"]["notifications"].as_array().unwrap().len() == 1
        })
        .await;
    assert_eq!(s["status"]["notifications"][0]["kind"], "review_required");
    let list = h.get("/cas/reviews", "alice").await;
    let review_id = list.body["reviews"][0]["review_id"]
        .as_str()
        .unwrap()
        .to_string();
    let d = h
        .post(
            &format!("/cas/reviews/{r}/{review_id}"),
            "alice",
            json!({"decision": "reject"}),
        )
        .await;
    assert_eq!(d.status, StatusCode::NO_CONTENT);
    let end = h.wait_phase(&r, "terminal").await;
    assert_eq!(end["status"]["terminal_reason"], "restricted");
    assert_eq!(end["status"]["notifications"], json!([]));
    h.stop().await;
}

// ---------------------------------------------------------------- polling

/// Polling rule 1: ETag is the revision, If-None-Match gets 304, and
/// `?wait=&revision=` long-polls until the revision differs (or the wait ends).
#[tokio::test]
async fn polling1_etag_304_and_long_poll() {
    let h = Harness::start(scripted()).await;
    let id = id_of(&h.create_text("ask name?").await);
    let idle = h.wait_phase(&id, "idle").await;
    let rev = idle["status"]["revision"].as_str().unwrap().to_string();
    let r = h.get(&format!("/cas/tasks/{id}"), "alice").await;
    assert_eq!(r.headers["etag"].to_str().unwrap(), format!("\"{rev}\""));
    let r = h
        .send(
            reqwest::Method::GET,
            &format!("/cas/tasks/{id}"),
            "alice",
            None,
            &[("if-none-match", &format!("\"{rev}\""))],
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_MODIFIED);
    let r = h
        .send(
            reqwest::Method::GET,
            &format!("/cas/tasks/{id}/messages"),
            "alice",
            None,
            &[("if-none-match", &format!("\"{rev}\""))],
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_MODIFIED);
    // Nothing changes: the long poll returns the same object after the wait.
    let t0 = std::time::Instant::now();
    let r = h
        .get(&format!("/cas/tasks/{id}?wait=0.3&revision={rev}"), "alice")
        .await;
    assert!(t0.elapsed() >= Duration::from_millis(250));
    assert_eq!(r.body["status"]["revision"], rev.as_str());
    // A change during the wait ends it early with the new revision.
    let poll = {
        let h2 = (h.client.clone(), h.base.clone(), id.clone(), rev.clone());
        tokio::spawn(async move {
            h2.0.get(format!(
                "{}/cas/tasks/{}?wait=10&revision={}",
                h2.1, h2.2, h2.3
            ))
            .header("x-test-principal", "alice")
            .send()
            .await
            .unwrap()
            .json::<Value>()
            .await
            .unwrap()
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let t0 = std::time::Instant::now();
    let r = h
        .post(&format!("/cas/tasks/{id}/input"), "alice", input("Ada"))
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    let changed = poll.await.unwrap();
    assert!(t0.elapsed() < Duration::from_secs(5));
    assert_ne!(changed["status"]["revision"], rev.as_str());
    h.stop().await;
}

/// Polling rule 2: the SSE push carries the same status object polling returns,
/// one event per revision, and ends after the terminal one.
#[tokio::test]
async fn polling2_sse_pushes_the_same_status_object() {
    let h = Harness::start(scripted()).await;
    let id = id_of(&h.create_text("sleep 150\nstream 3").await);
    let mut resp = h
        .client
        .get(format!("{}/cas/tasks/{id}/events", h.base))
        .header("x-test-principal", "alice")
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(resp.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    let mut text = String::new();
    while let Some(chunk) = resp.chunk().await.unwrap() {
        text.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    let mut objects = Vec::new();
    for frame in text.split("\n\n").filter(|f| !f.trim().is_empty()) {
        let mut event = None;
        let mut id_line = None;
        let mut data = String::new();
        for line in frame.lines() {
            if let Some(v) = line.strip_prefix("event:") {
                event = Some(v.trim().to_string());
            } else if let Some(v) = line.strip_prefix("id:") {
                id_line = Some(v.trim().to_string());
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push_str(v.trim_start());
            }
        }
        if event.is_none() {
            continue; // keep-alive comment
        }
        assert_eq!(event.as_deref(), Some("status"));
        let v: Value = serde_json::from_str(&data).unwrap();
        assert_eq!(id_line.as_deref(), v["status"]["revision"].as_str());
        objects.push(v);
    }
    assert!(objects.len() >= 2, "{text}");
    for w in objects.windows(2) {
        assert_ne!(w[0]["status"]["revision"], w[1]["status"]["revision"]);
    }
    let last = objects.last().unwrap();
    assert_eq!(last["status"]["phase"], "terminal");
    assert_eq!(*last, h.status(&id).await, "push carries the polled object");
    golden("sse_last_status", last);
    // Resuming with the last revision sends nothing more for a terminal task.
    let r = h
        .send(
            reqwest::Method::GET,
            &format!("/cas/tasks/{id}/events"),
            "alice",
            None,
            &[(
                "last-event-id",
                last["status"]["revision"].as_str().unwrap(),
            )],
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(!r.body.to_string().contains("event:"), "{}", r.body);
    // Not yours: not found.
    let r = h.get(&format!("/cas/tasks/{id}/events"), "bob").await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    h.stop().await;
}

// ---------------------------------------------------------------- interaction

/// Interaction rule 1: input while processing is accepted, queued without
/// interrupting the turn, and processed in a later turn in arrival order.
#[tokio::test]
async fn interaction1_three_inputs_during_a_slow_turn_are_queued_in_order() {
    let h = Harness::start(scripted()).await;
    let id = id_of(&h.create_text("sleep 1500").await);
    // Wait until the first turn has taken its input (it is then sleeping).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !h.messages(&id).await[0]["committed_at"].is_string() {
        assert!(tokio::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for text in ["first", "second", "third"] {
        let r = h
            .post(&format!("/cas/tasks/{id}/input"), "alice", input(text))
            .await;
        assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
        assert_eq!(r.body["status"]["phase"], "processing");
    }
    let queued = h.messages(&id).await;
    let q = queued.as_array().unwrap();
    let tail: Vec<&Value> = q.iter().rev().take(3).collect();
    for e in &tail {
        assert_eq!(e["type"], "input");
        assert!(e.get("committed_at").is_none(), "not yet seen: {e}");
        assert!(e["received_at"].is_string());
    }
    golden("messages_queued", &queued);
    let done = h.wait_phase(&id, "terminal").await;
    assert_eq!(done["status"]["terminal_reason"], "completed");
    let m = h.messages(&id).await;
    let m = m.as_array().unwrap();
    let inputs: Vec<&str> = m
        .iter()
        .filter(|e| e["type"] == "input")
        .map(|e| e["message"][0]["text"].as_str().unwrap())
        .collect();
    assert_eq!(inputs, ["sleep 1500", "first", "second", "third"]);
    let outputs: Vec<&str> = m
        .iter()
        .filter(|e| e["type"] == "output")
        .map(|e| e["message"][0]["text"].as_str().unwrap())
        .collect();
    assert_eq!(outputs, ["first", "second", "third"]);
    assert!(m.iter().all(|e| e["committed_at"].is_string()));
    // Ordered by commit time.
    let times: Vec<&str> = m
        .iter()
        .map(|e| e["committed_at"].as_str().unwrap())
        .collect();
    let mut sorted = times.clone();
    sorted.sort();
    assert_eq!(times, sorted);
    h.stop().await;
}

/// Interaction rule 1: input guardrails run before the agent sees anything; a
/// refused input is answered with `denied_by_input_guardrail` and never reaches
/// the agent (the messages and the revision do not change).
#[tokio::test]
async fn interaction1_guardrail_refusal() {
    let h = Harness::start_with(
        scripted(),
        |s| s.with_guardrail(Arc::new(DenyPhrases::new(["forbidden"]))),
        RuntimeConfig::default(),
    )
    .await;
    let r = h
        .post("/cas/tasks", "alice", input("a forbidden plan"))
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(r.body["error"]["code"], "denied_by_input_guardrail");
    golden("error_denied_by_input_guardrail", &r.body);
    let id = id_of(&h.create_text("ask name?").await);
    let idle = h.wait_phase(&id, "idle").await;
    let before = h.messages(&id).await;
    let r = h
        .post(
            &format!("/cas/tasks/{id}/input"),
            "alice",
            input("FORBIDDEN"),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(r.body["error"]["code"], "denied_by_input_guardrail");
    assert_eq!(h.messages(&id).await, before);
    assert_eq!(h.status(&id).await, idle);
    h.stop().await;
}

/// An agent declaring a parameters schema.
struct WithParams;

#[async_trait]
impl Agent for WithParams {
    fn info(&self) -> AgentInfo {
        let mut i = AgentInfo::new("params", "takes a ticket id");
        i.parameters_schema = Some(json!({
            "type": "object",
            "properties": {"ticket_id": {"type": "integer"}, "note": {"type": "string"}},
            "required": ["ticket_id"],
            "additionalProperties": false
        }));
        i
    }

    async fn run_turn(&self, ctx: &TurnContext) -> Result<TurnOutcome, AgentError> {
        let p = ctx
            .input()
            .last()
            .and_then(|m| m.metadata.get("parameters"))
            .cloned()
            .unwrap_or_default();
        ctx.emit_text(format!("ticket {}", p["ticket_id"])).await?;
        Ok(TurnOutcome::Completed { message: None })
    }
}

/// Interaction rule 1: parameter keys are validated against the agent's parameters
/// schema; they reach the agent and are listed on the input.
#[tokio::test]
async fn interaction1_parameters_are_validated() {
    let h = Harness::start(Arc::new(WithParams)).await;
    let mut body = input("look");
    let r = h.post("/cas/tasks", "alice", body.clone()).await;
    assert_eq!(
        r.status,
        StatusCode::BAD_REQUEST,
        "required parameter missing"
    );
    assert_eq!(r.body["error"]["code"], "invalid_input");
    body["ticket_id"] = json!("seven");
    let r = h.post("/cas/tasks", "alice", body.clone()).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("ticket_id"),
        "{}",
        r.body
    );
    golden("error_invalid_parameter", &r.body);
    body["ticket_id"] = json!(7);
    body["committed_at"] = json!("x");
    let r = h.post("/cas/tasks", "alice", body.clone()).await;
    assert_eq!(
        r.status,
        StatusCode::BAD_REQUEST,
        "well-known keys are not parameters"
    );
    body.as_object_mut().unwrap().remove("committed_at");
    let r = h.post("/cas/tasks", "alice", body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let id = id_of(&r.body);
    h.wait_phase(&id, "terminal").await;
    let m = h.messages(&id).await;
    assert_eq!(m[0]["ticket_id"], 7);
    assert_eq!(m[1]["message"][0]["text"], "ticket 7");
    golden("messages_with_parameters", &m);
    h.stop().await;

    // An agent without a parameters schema accepts no parameters.
    let h = Harness::start(scripted()).await;
    let mut body = input("hi");
    body["extra"] = json!(1);
    let r = h.post("/cas/tasks", "alice", body).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    h.stop().await;
}

/// Interaction rule 2: input belongs exclusively to the responsible user (anyone
/// else: not found); host lifecycle control is separate, owner-only, and visible
/// only through phase and terminal_reason.
#[tokio::test]
async fn interaction2_input_is_the_responsible_users_and_host_control_is_separate() {
    let h = Harness::start(scripted()).await;
    let id = id_of(&h.create_text("ask name?").await);
    h.wait_phase(&id, "idle").await;
    for path in [
        format!("/cas/tasks/{id}/input"),
        format!("/cas/host/tasks/{id}/complete"),
        format!("/cas/tasks/{id}/authorizations/github"),
    ] {
        let body = if path.ends_with("input") {
            input("hi")
        } else {
            json!({})
        };
        let r = h.post(&path, "bob", body).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{path}");
    }
    assert_eq!(
        h.get(&format!("/cas/tasks/{id}"), "bob").await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        h.get(&format!("/cas/tasks/{id}/messages"), "bob")
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        h.get("/cas/tasks/not-a-task-id", "alice").await.status,
        StatusCode::NOT_FOUND
    );
    let before = h.messages(&id).await;
    let r = h
        .post(
            &format!("/cas/host/tasks/{id}/complete"),
            "alice",
            json!({"reason": "done"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let s = h.status(&id).await;
    assert_eq!(s["status"]["phase"], "terminal");
    assert_eq!(s["status"]["terminal_reason"], "completed");
    assert_eq!(
        h.messages(&id).await,
        before,
        "visible only through the status"
    );
    h.stop().await;
}

/// Host lifecycle control: interrupting the turn in flight stops it; the task goes
/// idle (its effect is visible only through the phase); queued input waits for the
/// next input, which starts a turn that sees both in arrival order.
#[tokio::test]
async fn host_interrupt_stops_the_turn_and_the_task_goes_idle() {
    let h = Harness::start(scripted()).await;
    let id = id_of(&h.create_text("sleep 10000").await);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !h.messages(&id).await[0]["committed_at"].is_string() {
        assert!(tokio::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let r = h
        .post(
            &format!("/cas/tasks/{id}/input"),
            "alice",
            input("queued one"),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    let before = h.messages(&id).await;
    let r = h
        .post(&format!("/cas/host/tasks/{id}/interrupt"), "bob", json!({}))
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    let r = h
        .post(
            &format!("/cas/host/tasks/{id}/interrupt"),
            "alice",
            json!({}),
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
    let s = h.status(&id).await;
    assert_eq!(s["status"]["phase"], "idle");
    assert_eq!(s["status"]["terminal_reason"], Value::Null);
    assert_eq!(s["status"]["notifications"], json!([]));
    assert_eq!(h.messages(&id).await, before, "no output from an interrupt");
    let r = h
        .post(
            &format!("/cas/host/tasks/{id}/interrupt"),
            "alice",
            json!({}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT);
    assert_eq!(r.body["error"]["code"], "conflict");
    let r = h
        .post(&format!("/cas/tasks/{id}/input"), "alice", input("now"))
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    assert_eq!(r.body["status"]["phase"], "processing");
    let done = h.wait_phase(&id, "terminal").await;
    assert_eq!(done["status"]["terminal_reason"], "completed");
    let m = h.messages(&id).await;
    let outputs: Vec<&str> = m
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "output")
        .map(|e| e["message"][0]["text"].as_str().unwrap())
        .collect();
    assert_eq!(outputs, ["queued one", "now"]);
    h.stop().await;
}

/// ContentPart: inline text over 100 KB and metadata over 8 KB are refused with a
/// clear error, never truncated; files round-trip.
#[tokio::test]
async fn content_parts_limits_and_round_trip() {
    let h = Harness::start(scripted()).await;
    let big = "x".repeat(100_001);
    let r = h.post("/cas/tasks", "alice", input(&big)).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let msg = r.body["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("message[0].text") && msg.contains("100000"),
        "{msg}"
    );
    golden("error_text_too_large", &r.body);
    let r = h
        .post(
            "/cas/tasks",
            "alice",
            json!({"message": [{"mimeType": "text/plain", "text": "hi",
                "metadata": {"blob": "y".repeat(8 * 1024)}}]}),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(r.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("metadata"));
    let r = h
        .post(
            "/cas/tasks",
            "alice",
            json!({"message": [
                {"mimeType": "text/plain", "text": "ask which?"},
                {"mimeType": "application/pdf", "file": "task://report.pdf", "sizeBytes": 1234}
            ]}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let m = h.messages(&id_of(&r.body)).await;
    assert_eq!(
        m[0]["message"][1],
        json!({"mimeType": "application/pdf", "file": "task://report.pdf", "sizeBytes": 1234})
    );
    // Exactly at the limit is accepted.
    let r = h
        .post("/cas/tasks", "alice", input(&"x".repeat(100_000)))
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    h.stop().await;
}

/// Create is idempotent on the Idempotency-Key header.
#[tokio::test]
async fn create_is_idempotent_on_the_key() {
    let h = Harness::start(scripted()).await;
    let hdr = [("idempotency-key", "k-1")];
    let a = h
        .send(
            reqwest::Method::POST,
            "/cas/tasks",
            "alice",
            Some(input("hi")),
            &hdr,
        )
        .await;
    assert_eq!(a.status, StatusCode::CREATED);
    let b = h
        .send(
            reqwest::Method::POST,
            "/cas/tasks",
            "alice",
            Some(input("hi")),
            &hdr,
        )
        .await;
    assert_eq!(b.status, StatusCode::OK);
    assert_eq!(a.body["id"], b.body["id"]);
    h.stop().await;
}

// ---------------------------------------------------------------- one task, every phase

/// The journey agent: idle → processing (slow turn, input queued) → one
/// authorisation shared by two operations → a review by the responsible user →
/// completed.
struct Journey {
    entered: Arc<Notify>,
    release: Arc<Notify>,
}

#[async_trait]
impl Agent for Journey {
    fn info(&self) -> AgentInfo {
        AgentInfo::new("journey", "walks every phase")
    }

    async fn run_turn(&self, ctx: &TurnContext) -> Result<TurnOutcome, AgentError> {
        match ctx.task().turns {
            0 => {
                ctx.request_input("q", "what shall I do?", json!({"type": "object"}))?;
                Ok(TurnOutcome::Waiting {
                    message: Some(taskwire_core::Message::agent_text("what shall I do?")),
                })
            }
            1 => {
                ctx.flush().await?;
                self.entered.notify_one();
                let _ = tokio::time::timeout(Duration::from_secs(5), self.release.notified()).await;
                ctx.emit_text("working on it").await?;
                Ok(TurnOutcome::Completed { message: None })
            }
            2 => {
                if !ctx.is_granted("github") {
                    ctx.require_auth("github", "list-repos", None)?;
                    ctx.require_auth("github", "open-issue", None)?;
                    return Ok(TurnOutcome::Waiting { message: None });
                }
                Ok(TurnOutcome::Completed { message: None })
            }
            3 => {
                ctx.request_review("publish", None, "publish the issue?")?;
                Ok(TurnOutcome::Waiting { message: None })
            }
            _ => {
                ctx.emit_text("published").await?;
                Ok(TurnOutcome::Completed { message: None })
            }
        }
    }
}

#[tokio::test]
async fn journey_idle_processing_auth_review_terminal() {
    let entered = Arc::new(Notify::new());
    let release = Arc::new(Notify::new());
    let h = Harness::start(Arc::new(Journey {
        entered: entered.clone(),
        release: release.clone(),
    }))
    .await;
    let created = h.create_text("start").await;
    golden("status_processing", &created);
    let id = id_of(&created);
    let tid = TaskId::parse(&id).unwrap();
    let alice = taskwire_core::Caller::new(common::TENANT, "alice");

    // 1. idle: the agent asked a question.
    let idle = h.wait_phase(&id, "idle").await;
    assert_eq!(idle["status"]["notifications"], json!([]));
    assert_eq!(idle["status"]["terminal_reason"], Value::Null);

    // 2. processing, with input queued during the slow turn.
    let r = h
        .post(
            &format!("/cas/tasks/{id}/input"),
            "alice",
            input("open an issue"),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    assert_eq!(r.body["status"]["phase"], "processing");
    tokio::time::timeout(Duration::from_secs(5), entered.notified())
        .await
        .unwrap();
    let r = h
        .post(
            &format!("/cas/tasks/{id}/input"),
            "alice",
            input("and label it"),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    let busy = h.status(&id).await;
    assert_eq!(busy["status"]["phase"], "processing");
    assert_eq!(busy["status"]["notifications"], json!([]));
    let m = h.messages(&id).await;
    let last = m.as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["message"][0]["text"], "and label it");
    assert!(last.get("committed_at").is_none());
    release.notify_one();

    // 3. one user_auth_required shared by two operations.
    let auth = h
        .wait_for(&id, |v| {
            !v["status"]["notifications"].as_array().unwrap().is_empty()
        })
        .await;
    assert_eq!(auth["status"]["phase"], "processing");
    let n = auth["status"]["notifications"].as_array().unwrap();
    assert_eq!(n.len(), 1, "{auth}");
    assert_eq!(n[0]["kind"], "user_auth_required");
    assert_eq!(n[0]["provider"], "github");
    golden("status_processing_user_auth", &auth);
    let core = h.service.get(&alice, &tid).await.unwrap();
    assert_eq!(core.pending_auth.len(), 1);
    assert_eq!(
        core.pending_auth[0].operations,
        ["list-repos", "open-issue"]
    );
    // The queued input was seen by now.
    let m = h.messages(&id).await;
    assert!(m
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["committed_at"].is_string()));
    // Notifications are state: the same on every poll while outstanding.
    assert_eq!(h.status(&id).await, auth);
    let granted = h
        .post(
            &format!("/cas/tasks/{id}/authorizations/github"),
            "alice",
            json!({}),
        )
        .await;
    assert_eq!(granted.status, StatusCode::OK);
    assert_eq!(granted.body["status"]["notifications"], json!([]));
    assert_eq!(granted.body["status"]["phase"], "processing");

    // 4. review_required for the responsible user.
    let review = h
        .wait_for(&id, |v| {
            v["status"]["notifications"]
                .as_array()
                .unwrap()
                .iter()
                .any(|n| n["kind"] == "review_required")
        })
        .await;
    assert_eq!(review["status"]["phase"], "processing");
    assert_eq!(
        review["status"]["notifications"].as_array().unwrap().len(),
        1
    );
    golden("status_processing_review", &review);
    let list = h.get("/cas/reviews", "alice").await;
    assert_eq!(list.body["reviews"][0]["review_id"], "publish");
    let d = h
        .post(
            &format!("/cas/reviews/{id}/publish"),
            "alice",
            json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(d.status, StatusCode::NO_CONTENT);

    // 5. terminal.
    let done = h.wait_phase(&id, "terminal").await;
    assert_eq!(done["status"]["terminal_reason"], "completed");
    assert_eq!(done["status"]["notifications"], json!([]));
    assert_eq!(done["status"]["idle_expires_at"], Value::Null);
    let m = h.messages(&id).await;
    golden("messages_journey", &m);
    let texts: Vec<(String, String)> = m
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["type"].as_str().unwrap().to_string(),
                e["message"][0]["text"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expect = [
        ("input", "start"),
        ("output", "what shall I do?"),
        ("input", "open an issue"),
        ("output", "working on it"),
        ("input", "and label it"),
        ("output", "published"),
    ];
    assert_eq!(
        texts,
        expect
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect::<Vec<_>>()
    );
    h.stop().await;
}

/// Malformed bodies and queries are answered with the CAS error body.
#[tokio::test]
async fn malformed_requests_get_the_error_body() {
    let h = Harness::start(scripted()).await;
    let r = h
        .client
        .post(format!("{}/cas/tasks", h.base))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], "invalid_input");
    let r = h
        .post("/cas/tasks", "alice", json!({"text": "no message"}))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.body["error"]["code"], "invalid_input");
    let id = id_of(&h.create_text("hello").await);
    let r = h.get(&format!("/cas/tasks/{id}?wait=soon"), "alice").await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.body["error"]["code"], "invalid_input");
    let r = h
        .post(
            &format!("/cas/reviews/{id}/r1"),
            "alice",
            json!({"decision": "maybe"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let r = h
        .client
        .post(format!("{}/cas/host/tasks/{id}/complete", h.base))
        .header("x-test-principal", "alice")
        .body("")
        .send()
        .await
        .unwrap();
    assert!(
        r.status() == StatusCode::NO_CONTENT || r.status() == StatusCode::CONFLICT,
        "an empty body is allowed: {}",
        r.status()
    );
    h.stop().await;
}

/// Optional outbound push: the same status object polling returns, POSTed on every
/// revision change until terminal; off unless enabled; private targets refused
/// unless allowed.
#[tokio::test]
async fn push_posts_the_same_status_object() {
    use axum::routing::post;
    type Seen = Arc<std::sync::Mutex<Vec<(Option<String>, Value)>>>;
    let seen: Seen = Arc::default();
    let seen2 = seen.clone();
    let app = axum::Router::new().route(
        "/hook",
        post(
            move |headers: axum::http::HeaderMap, axum::Json(v): axum::Json<Value>| {
                let seen = seen2.clone();
                async move {
                    let token = headers
                        .get("x-cas-push-token")
                        .and_then(|t| t.to_str().ok())
                        .map(str::to_string);
                    seen.lock().unwrap().push((token, v));
                    StatusCode::NO_CONTENT
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hook = format!("http://{}/hook", listener.local_addr().unwrap());
    let receiver = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });

    // Off by default.
    let h = Harness::start(scripted()).await;
    let r = h
        .send(
            reqwest::Method::POST,
            "/cas/tasks",
            "alice",
            Some(input("hi")),
            &[("cas-push-url", &hook)],
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    h.stop().await;

    let mut config = taskwire_cas::CasConfig::default();
    config.push.enabled = true;
    let strict =
        Harness::start_full(scripted(), |s| s, RuntimeConfig::default(), config.clone()).await;
    let r = strict
        .send(
            reqwest::Method::POST,
            "/cas/tasks",
            "alice",
            Some(input("hi")),
            &[("cas-push-url", &hook)],
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "loopback refused");
    assert!(r.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("loopback"));
    strict.stop().await;

    config.push.allow_private = true;
    let h = Harness::start_full(scripted(), |s| s, RuntimeConfig::default(), config).await;
    let r = h
        .send(
            reqwest::Method::POST,
            "/cas/tasks",
            "alice",
            Some(input("ask name?")),
            &[("cas-push-url", &hook), ("cas-push-token", "s3cret")],
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let id = id_of(&r.body);
    h.wait_phase(&id, "idle").await;
    let r = h
        .post(&format!("/cas/tasks/{id}/input"), "alice", input("Ada"))
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    let done = h.wait_phase(&id, "terminal").await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let last = seen.lock().unwrap().last().map(|(_, v)| v.clone());
        if last.as_ref() == Some(&done) {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "last push {last:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let got = seen.lock().unwrap().clone();
    assert!(got.iter().all(|(t, _)| t.as_deref() == Some("s3cret")));
    assert!(got.iter().any(|(_, v)| v["status"]["phase"] == "idle"));
    for w in got.windows(2) {
        assert_ne!(w[0].1["status"]["revision"], w[1].1["status"]["revision"]);
    }
    h.stop().await;
    receiver.abort();
}

/// A push subscription is a record of the store: one left behind by a node that
/// died (its lease still held, then lapsing) is taken over by this adapter, which
/// delivers from the last revision delivered, and records what it delivered.
#[tokio::test]
async fn a_dead_nodes_push_subscription_is_taken_over() {
    use axum::routing::post;
    use taskwire_core::{Record, RecordKind};
    type Seen = Arc<std::sync::Mutex<Vec<Value>>>;
    let seen: Seen = Arc::default();
    let seen2 = seen.clone();
    let app = axum::Router::new().route(
        "/hook",
        post(move |axum::Json(v): axum::Json<Value>| {
            let seen = seen2.clone();
            async move {
                seen.lock().unwrap().push(v);
                StatusCode::NO_CONTENT
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hook = format!("http://{}/hook", listener.local_addr().unwrap());
    let receiver = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let mut config = taskwire_cas::CasConfig::default();
    config.push.enabled = true;
    config.push.allow_private = true;
    config.push.lease = Duration::from_millis(300);
    let h = Harness::start_full(scripted(), |s| s, RuntimeConfig::default(), config).await;
    let r = h.post("/cas/tasks", "alice", input("ask name?")).await;
    assert_eq!(r.status, StatusCode::CREATED);
    let id = id_of(&r.body);
    let idle = h.wait_phase(&id, "idle").await;
    let task_id = TaskId::parse(&id).unwrap();
    // What the dead node left: the subscription, under a lease it no longer renews.
    let store = h.service.store().clone();
    let rec = Record::new(
        RecordKind::CasSubscription,
        format!("{id}/push"),
        common::TENANT,
        "alice",
        json!({"url": hook}),
    )
    .for_task(task_id.clone())
    .active(true);
    store.put_record(rec, None).await.unwrap();
    let held = store
        .claim_records(
            RecordKind::CasSubscription,
            "dead-node",
            10,
            Duration::from_millis(300),
            chrono::Utc::now(),
        )
        .await
        .unwrap();
    assert_eq!(held.len(), 1, "claimed by the dead node first");
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert!(
        seen.lock().unwrap().is_empty(),
        "taken over while still leased"
    );
    // After the lapse this adapter delivers the current object, then the rest.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while seen.lock().unwrap().is_empty() {
        assert!(tokio::time::Instant::now() < deadline, "never taken over");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(seen.lock().unwrap()[0], idle);
    let r = h
        .post(&format!("/cas/tasks/{id}/input"), "alice", input("Ada"))
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    let done = h.wait_phase(&id, "terminal").await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let rec = store
            .get_record(RecordKind::CasSubscription, &format!("{id}/push"))
            .await
            .unwrap()
            .unwrap();
        if !rec.active {
            assert_eq!(rec.data["lastRevision"], done["status"]["revision"]);
            assert_eq!(
                rec.data["delivered"].as_u64().unwrap() as usize,
                seen.lock().unwrap().len()
            );
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{:?}", rec.data);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(seen.lock().unwrap().last(), Some(&done));
    h.stop().await;
    receiver.abort();
}

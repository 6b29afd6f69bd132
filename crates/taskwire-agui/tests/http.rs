//! `POST /agui` end to end over a real runtime with the scripted agent: every run
//! shape, resume semantics, replay, reconnect and owner checks. Every stream passes
//! the verifier and each shape is pinned by a golden fixture.

mod common;

use std::time::Duration;

use common::{golden, input, user, Env, Stream};
use serde_json::json;

fn ids(s: &Stream) -> Vec<String> {
    s.frames
        .iter()
        .map(|(id, _)| id.clone().unwrap_or_default())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completed_run() {
    let env = Env::start().await;
    let s = env
        .run(
            "alice",
            &input("th-done", "run-1", json!([user("m1", "hello")])),
        )
        .await
        .verified();
    let first = &s.events()[0];
    assert_eq!(first["type"], "RUN_STARTED");
    assert_eq!(first["protocolVersion"], "1.0");
    assert_eq!(first["threadId"], "th-done");
    assert_eq!(first["runId"], "run-1");
    let snap = s.first_of("ACTIVITY_SNAPSHOT").unwrap();
    assert_eq!(snap["activityType"], "taskwire.artifact");
    assert_eq!(snap["content"]["parts"][0]["text"], "hello");
    let last = s.last();
    assert_eq!(last["type"], "RUN_FINISHED");
    assert!(last.get("outcome").is_none(), "success has no outcome");
    assert_eq!(last["result"]["artifacts"][0]["name"], "echo");
    assert!(
        ids(&s).iter().all(|i| i.contains('.')),
        "every frame has an id"
    );
    golden("completed", &s.frames);
    env.proto_matches_sse(
        "alice",
        "/agui/threads/th-done/runs/run-1/events",
        "completed.proto",
    )
    .await;
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_and_rejected_runs_end_with_run_error() {
    let env = Env::start().await;
    let s = env
        .run(
            "alice",
            &input("th-fail", "run-1", json!([user("m1", "fail boom")])),
        )
        .await
        .verified();
    assert_eq!(s.last()["type"], "RUN_ERROR");
    assert_eq!(s.last()["code"], "agent_failed");
    assert_eq!(s.last()["message"], "boom");
    golden("failed", &s.frames);
    env.proto_matches_sse(
        "alice",
        "/agui/threads/th-fail/runs/run-1/events",
        "failed.proto",
    )
    .await;

    let s = env
        .run(
            "alice",
            &input("th-reject", "run-1", json!([user("m2", "reject nope")])),
        )
        .await
        .verified();
    assert_eq!(s.last()["type"], "RUN_ERROR");
    assert_eq!(s.last()["code"], "rejected");
    assert_eq!(s.last()["message"], "nope");
    golden("rejected", &s.frames);
    env.proto_matches_sse(
        "alice",
        "/agui/threads/th-reject/runs/run-1/events",
        "rejected.proto",
    )
    .await;

    let s = env
        .run(
            "alice",
            &input("th-crash", "run-1", json!([user("m3", "crash")])),
        )
        .await
        .verified();
    assert_eq!(s.last()["code"], "internal");
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_run() {
    let env = Env::start().await;
    let body = input(
        "th-cancel",
        "run-1",
        json!([user("m1", "steps 1\nsleep 10000")]),
    );
    let resp = env
        .http
        .post(env.url("/agui"))
        .header("x-test-principal", "alice")
        .json(&body)
        .send()
        .await
        .unwrap();
    let reader = tokio::spawn(async move { resp.text().await.unwrap() });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let c = env
        .http
        .post(env.url("/agui/threads/th-cancel/runs/run-1/cancel"))
        .header("x-test-principal", "alice")
        .send()
        .await
        .unwrap();
    assert_eq!(c.status(), 200);
    let s = Stream::parse(
        &tokio::time::timeout(Duration::from_secs(10), reader)
            .await
            .unwrap()
            .unwrap(),
    )
    .verified();
    assert_eq!(s.last()["type"], "RUN_FINISHED");
    assert_eq!(s.last()["outcome"], json!({"type": "cancelled"}));
    golden("cancelled", &s.frames);
    env.proto_matches_sse(
        "alice",
        "/agui/threads/th-cancel/runs/run-1/events",
        "cancelled.proto",
    )
    .await;
    // Cancelling someone else's run: not found.
    let c = env
        .http
        .post(env.url("/agui/threads/th-cancel/runs/run-1/cancel"))
        .header("x-test-principal", "bob")
        .send()
        .await
        .unwrap();
    assert_eq!(c.status(), 404);
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupt_then_resume_then_replay() {
    let env = Env::start().await;
    let m1 = user("m1", "ask what colour?");
    let s1 = env
        .run("alice", &input("th-ask", "run-1", json!([m1])))
        .await
        .verified();
    let interrupts = s1.interrupts();
    assert_eq!(interrupts.len(), 1);
    let it = &interrupts[0];
    assert_eq!(it["reason"], "input_required");
    assert_eq!(it["message"], "what colour?");
    assert_eq!(it["responseSchema"]["required"], json!(["answer"]));
    // The snapshots come right before the interrupting RUN_FINISHED.
    let t = s1.types();
    let n = t.len();
    assert_eq!(
        &t[n - 3..],
        ["STATE_SNAPSHOT", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    );
    golden("interrupted", &s1.frames);
    env.proto_matches_sse(
        "alice",
        "/agui/threads/th-ask/runs/run-1/events",
        "interrupted.proto",
    )
    .await;
    let iid = it["id"].as_str().unwrap().to_string();

    // New input without resume while the interrupt is open: refused.
    let s = env
        .run(
            "alice",
            &input("th-ask", "run-x", json!([m1, user("m2", "hi")])),
        )
        .await
        .verified();
    assert_eq!(s.types(), ["RUN_ERROR"]);
    assert_eq!(s.last()["code"], "interrupt_pending");

    // An unknown interrupt: refused.
    let mut bad = input("th-ask", "run-y", json!([m1]));
    bad["resume"] = json!([{"interruptId": "0123/input/nope", "status": "resolved", "payload": {"answer": "x"}}]);
    let s = env.run("alice", &bad).await.verified();
    assert_eq!(s.last()["code"], "interrupt_unknown");

    // The resume continues the same task in a new run.
    let mut resume = input("th-ask", "run-2", json!([m1]));
    resume["resume"] =
        json!([{"interruptId": iid, "status": "resolved", "payload": {"answer": "blue"}}]);
    let s2 = env.run("alice", &resume).await.verified();
    assert_eq!(s2.events()[0]["parentRunId"], "run-1");
    assert_eq!(s2.last()["type"], "RUN_FINISHED");
    let arts = s2.last()["result"]["artifacts"].as_array().unwrap().clone();
    assert!(
        arts.iter().any(|a| a["parts"][0]["text"] == "answer: blue"),
        "{arts:?}"
    );
    golden("resumed", &s2.frames);
    env.proto_matches_sse(
        "alice",
        "/agui/threads/th-ask/runs/run-2/events",
        "resumed.proto",
    )
    .await;

    // The same resume again (a new run id): idempotent, not a second answer.
    let mut again = resume.clone();
    again["runId"] = json!("run-3");
    let s3 = env.run("alice", &again).await.verified();
    assert_eq!(s3.last()["result"], s2.last()["result"]);
    // A different answer to the same interrupt: refused.
    let mut other = resume.clone();
    other["runId"] = json!("run-4");
    other["resume"][0]["payload"] = json!({"answer": "red"});
    let s4 = env.run("alice", &other).await.verified();
    assert_eq!(s4.last()["code"], "resume_conflict");

    // A new message on the thread starts the next task of the context.
    let s5 = env
        .run(
            "alice",
            &input("th-ask", "run-5", json!([m1, user("m3", "second")])),
        )
        .await
        .verified();
    assert_eq!(s5.last()["type"], "RUN_FINISHED");
    let tasks = env
        .service
        .list(&taskwire_core::Caller::new("t1", "alice"), {
            let mut v = taskwire_core::store::ListQuery::default();
            v.context_id = Some("th-ask".into());
            v.page_size = 10;
            v
        })
        .await
        .unwrap();
    assert_eq!(
        tasks.tasks.len(),
        2,
        "the thread is one context with two tasks"
    );

    // Replay: several runs on one stream, restated as snapshots.
    let (status, body) = env.get("alice", "/agui/threads/th-ask", None).await;
    assert_eq!(status, 200);
    let r = Stream::parse(&body).verified();
    let runs: Vec<&serde_json::Value> = r
        .events()
        .into_iter()
        .filter(|e| e["type"] == "RUN_STARTED")
        .collect();
    assert_eq!(runs.len(), 3, "{:#?}", r.types());
    assert_eq!(runs[0]["runId"], "run-1");
    assert_eq!(runs[1]["runId"], "run-2");
    assert_eq!(runs[2]["runId"], "run-5");
    assert!(!r.types().iter().any(|t| t.starts_with("TEXT_MESSAGE")));
    golden("replay", &r.frames);
    env.proto_matches_sse("alice", "/agui/threads/th-ask", "replay.proto")
        .await;

    // Owner checks: bob sees none of it.
    assert_eq!(env.get("bob", "/agui/threads/th-ask", None).await.0, 404);
    assert_eq!(
        env.get("bob", "/agui/threads/th-ask/runs/run-1/events", None)
            .await
            .0,
        404
    );
    let s = env.run("bob", &resume).await.verified();
    assert_eq!(s.last()["code"], "interrupt_unknown");
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_and_review_interrupts() {
    let env = Env::start().await;
    let m1 = user("m1", "auth github\nreview\nhello");
    let s1 = env
        .run("alice", &input("th-auth", "run-1", json!([m1])))
        .await
        .verified();
    let i = s1.interrupts();
    assert_eq!(i[0]["reason"], "taskwire:auth_required");
    assert_eq!(i[0]["metadata"]["provider"], "github");
    golden("interrupted_auth", &s1.frames);
    let mut r2 = input("th-auth", "run-2", json!([m1]));
    r2["resume"] = json!([{"interruptId": i[0]["id"], "status": "resolved"}]);
    let s2 = env.run("alice", &r2).await.verified();
    let i2 = s2.interrupts();
    assert_eq!(i2[0]["reason"], "confirmation");
    let mut r3 = input("th-auth", "run-3", json!([m1]));
    r3["resume"] =
        json!([{"interruptId": i2[0]["id"], "status": "resolved", "payload": {"approved": true}}]);
    let s3 = env.run("alice", &r3).await.verified();
    assert_eq!(s3.last()["type"], "RUN_FINISHED");
    assert!(s3.last().get("outcome").is_none());

    // A review declined ends the task rejected.
    let m = user("m2", "review");
    let s = env
        .run("alice", &input("th-rev", "run-1", json!([m])))
        .await
        .verified();
    let i = s.interrupts();
    let mut r = input("th-rev", "run-2", json!([m]));
    r["resume"] = json!([{"interruptId": i[0]["id"], "status": "cancelled"}]);
    let s = env.run("alice", &r).await.verified();
    assert_eq!(s.last()["code"], "rejected");

    // A message id that already started a task in another thread is refused.
    let s = env
        .run(
            "alice",
            &input("th-other", "run-1", json!([user("m2", "review")])),
        )
        .await
        .verified();
    assert_eq!(s.last()["code"], "invalid_input");
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnect_resumes_after_last_event_id() {
    let env = Env::start().await;
    let s = env
        .run(
            "alice",
            &input("th-rc", "run-1", json!([user("m1", "steps 2\nstream 3")])),
        )
        .await
        .verified();
    let all_ids = ids(&s);
    // Reconnect without Last-Event-ID: the whole run again, identical.
    let (status, body) = env
        .get("alice", "/agui/threads/th-rc/runs/run-1/events", None)
        .await;
    assert_eq!(status, 200);
    let again = Stream::parse(&body).verified();
    assert_eq!(again.frames, s.frames);
    // After each frame: a stream valid on its own whose tail is exactly the rest.
    for (cut, id) in all_ids.iter().enumerate().take(all_ids.len() - 1).skip(1) {
        let (status, body) = env
            .get("alice", "/agui/threads/th-rc/runs/run-1/events", Some(id))
            .await;
        assert_eq!(status, 200);
        let r = Stream::parse(&body).verified();
        assert_eq!(r.events()[0]["type"], "RUN_STARTED");
        let rest = &s.frames[cut + 1..];
        assert_eq!(
            &r.frames[r.frames.len() - rest.len()..],
            rest,
            "cut after {id}"
        );
        // Pinned: a cut inside an open step, and one after an incomplete artifact.
        if id == "6.1" {
            assert_eq!(
                r.events()[1]["type"],
                "STEP_STARTED",
                "the open step is re-opened"
            );
            golden("reconnected_step_open", &r.frames);
        }
        if id == "10.1" {
            assert_eq!(
                r.events()[1]["type"],
                "ACTIVITY_SNAPSHOT",
                "the artifact is restated"
            );
            golden("reconnected_artifact_open", &r.frames);
        }
    }
    // After the last frame: nothing left.
    let (status, body) = env
        .get(
            "alice",
            "/agui/threads/th-rc/runs/run-1/events",
            all_ids.last().map(String::as_str),
        )
        .await;
    assert_eq!(status, 200);
    assert!(body.is_empty());
    // A malformed id is refused.
    let (status, _) = env
        .get(
            "alice",
            "/agui/threads/th-rc/runs/run-1/events",
            Some("zzz"),
        )
        .await;
    assert_eq!(status, 400);
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_are_a_lone_run_error() {
    let env = Env::start().await;
    let s = env
        .run("alice", &input("th-none", "run-1", json!([])))
        .await
        .verified();
    assert_eq!(s.types(), ["RUN_ERROR"]);
    assert_eq!(s.last()["code"], "no_new_input");
    let s = env
        .run("alice", &input("", "run-1", json!([user("m", "x")])))
        .await
        .verified();
    assert_eq!(s.last()["code"], "invalid_input");
    golden("refused", &s.frames);
    env.stop().await;
}

//! Revision 2025-11-25: initialize and sessions, the experimental tasks
//! (params.task, nested results, tasks/get, tasks/result with elicitation over the
//! stream, tasks/list, tasks/cancel, notifications/tasks/status), over raw HTTP.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers outside #[test] functions panic on failure by design"
)]

mod common;

use std::time::Duration;

use common::{golden, Server, SseReader};
use serde_json::{json, Value};

const V: &str = "2025-11-25";

struct Session<'a> {
    s: &'a Server,
    sid: String,
    who: &'a str,
}

impl<'a> Session<'a> {
    async fn open(s: &'a Server, who: &'a str, elicitation: bool) -> (Session<'a>, Value) {
        let caps = if elicitation {
            json!({"elicitation": {"form": {}, "url": {}}})
        } else {
            json!({})
        };
        let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": V, "capabilities": caps, "clientInfo": {"name": "t", "version": "1"}}});
        let resp = s
            .http
            .post(&s.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("x-test-principal", who)
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        let sid = resp
            .headers()
            .get("mcp-session-id")
            .expect("a session id")
            .to_str()
            .unwrap()
            .to_string();
        let r: Value = resp.json().await.unwrap();
        let me = Session { s, sid, who };
        let (st, _) = me
            .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        assert_eq!(st, 202);
        (me, r)
    }

    fn headers(&self) -> Vec<(String, String)> {
        vec![
            ("mcp-session-id".into(), self.sid.clone()),
            ("mcp-protocol-version".into(), V.into()),
            ("x-test-principal".into(), self.who.into()),
        ]
    }

    async fn send(&self, body: Value) -> (u16, Value) {
        self.s.raw(&body.to_string(), &self.headers()).await
    }

    async fn call(&self, method: &str, params: Value) -> (u16, Value) {
        let id = self.s.id();
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await
    }

    async fn poll(&self, id: &str, status: &str) -> Value {
        for _ in 0..500 {
            let (_, r) = self.call("tasks/get", json!({"taskId": id})).await;
            if r["result"]["status"] == status {
                return r;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("task {id} never became {status}");
    }

    async fn start(&self, text: &str) -> String {
        let (st, r) = self
            .call(
                "tools/call",
                json!({"name": "run_script", "arguments": {"text": text}, "task": {"ttl": 60000}}),
            )
            .await;
        assert_eq!(st, 200, "{r}");
        r["result"]["task"]["taskId"]
            .as_str()
            .expect("a task id")
            .to_string()
    }
}

#[tokio::test]
async fn initialize_opens_a_session_with_the_tasks_capability() {
    let s = Server::start().await;
    let (sess, r) = Session::open(&s, "alice", false).await;
    assert_eq!(r["result"]["protocolVersion"], V);
    assert_eq!(
        r["result"]["capabilities"]["tasks"]["requests"]["tools"]["call"],
        json!({})
    );
    golden("rev_2025_11_25_initialize", &r);
    let (_, r) = sess.call("tools/list", json!({})).await;
    assert_eq!(
        r["result"]["tools"][0]["execution"]["taskSupport"],
        "optional"
    );
    golden("rev_2025_11_25_tools_list", &r);
    let (_, r) = sess.call("ping", json!({})).await;
    assert_eq!(r["result"], json!({}));
    s.shutdown().await;
}

#[tokio::test]
async fn call_as_task_poll_result_list() {
    let s = Server::start().await;
    let (sess, _) = Session::open(&s, "alice", false).await;
    let (_, r) = sess
        .call(
            "tools/call",
            json!({"name": "run_script", "arguments": {"text": "hello"}, "task": {"ttl": 60000}}),
        )
        .await;
    assert_eq!(r["result"]["task"]["status"], "working");
    assert_eq!(r["result"]["task"]["ttl"], 60000);
    golden("rev_2025_11_25_create_task_result", &r);
    let id = r["result"]["task"]["taskId"].as_str().unwrap().to_string();
    let done = sess.poll(&id, "completed").await;
    golden("rev_2025_11_25_get_completed", &done);
    let (st, r) = sess.call("tasks/result", json!({"taskId": id})).await;
    assert_eq!(st, 200);
    assert_eq!(r["result"]["content"][0]["text"], "hello");
    assert_eq!(
        r["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        json!(id)
    );
    golden("rev_2025_11_25_task_result", &r);
    let (_, r) = sess.call("tasks/list", json!({})).await;
    assert_eq!(r["result"]["tasks"][0]["taskId"], json!(id));
    golden("rev_2025_11_25_tasks_list", &r);
    s.shutdown().await;
}

#[tokio::test]
async fn tasks_list_pages_and_stays_with_the_caller() {
    let s = Server::start().await;
    let (alice, _) = Session::open(&s, "alice", false).await;
    let (bob, _) = Session::open(&s, "bob", false).await;
    for i in 0..55 {
        alice.start(&format!("hello {i}")).await;
    }
    bob.start("bob's").await;
    let (_, p1) = alice.call("tasks/list", json!({})).await;
    assert_eq!(p1["result"]["tasks"].as_array().unwrap().len(), 50);
    let cursor = p1["result"]["nextCursor"].as_str().unwrap().to_string();
    let (_, p2) = alice.call("tasks/list", json!({"cursor": cursor})).await;
    assert_eq!(p2["result"]["tasks"].as_array().unwrap().len(), 5);
    assert!(p2["result"].get("nextCursor").is_none());
    let (_, b) = bob.call("tasks/list", json!({})).await;
    assert_eq!(b["result"]["tasks"].as_array().unwrap().len(), 1);
    let (_, bad) = alice.call("tasks/list", json!({"cursor": "garbage"})).await;
    assert_eq!(bad["error"]["code"], -32602);
    // Alice's session is not Bob's.
    let (st, r) = s
        .raw(
            &json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}).to_string(),
            &[
                ("mcp-session-id".to_string(), alice.sid.clone()),
                ("x-test-principal".to_string(), "bob".to_string()),
            ],
        )
        .await;
    assert_eq!((st, r["error"]["code"].clone()), (404, json!(-32001)));
    s.shutdown().await;
}

#[tokio::test]
async fn cancel_and_cancel_errors() {
    let s = Server::start().await;
    let (sess, _) = Session::open(&s, "alice", false).await;
    let id = sess.start("sleep 20000").await;
    let (_, r) = sess.call("tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(r["result"]["status"], "cancelled");
    golden("rev_2025_11_25_cancel_result", &r);
    let id = sess.start("hello").await;
    sess.poll(&id, "completed").await;
    let (_, r) = sess.call("tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(r["error"]["code"], -32602);
    golden("rev_2025_11_25_cancel_terminal", &r);
    let (_, r) = sess
        .call(
            "tasks/get",
            json!({"taskId": "0123456789abcdef0123456789abcdef"}),
        )
        .await;
    assert_eq!(r["error"]["code"], -32602);
    // No tasks/update or tasks/continue in this generation.
    let (st, r) = sess
        .call("tasks/update", json!({"taskId": id, "inputResponses": {}}))
        .await;
    assert_eq!((st, r["error"]["code"].clone()), (404, json!(-32601)));
    s.shutdown().await;
}

#[tokio::test]
async fn failures_in_the_2025_11_25_generation() {
    let s = Server::start().await;
    let (sess, _) = Session::open(&s, "alice", false).await;
    let id = sess.start("fail no ink").await;
    let t = sess.poll(&id, "failed").await;
    golden("rev_2025_11_25_get_agent_failed", &t);
    let (_, r) = sess.call("tasks/result", json!({"taskId": id})).await;
    assert_eq!(r["result"]["isError"], true);
    let id = sess.start("crash").await;
    sess.poll(&id, "failed").await;
    let (_, r) = sess.call("tasks/result", json!({"taskId": id})).await;
    assert_eq!(r["error"]["code"], -32603);
    golden("rev_2025_11_25_task_result_error", &r);
    s.shutdown().await;
}

#[tokio::test]
async fn blocking_call_in_a_session() {
    let s = Server::start().await;
    let (sess, _) = Session::open(&s, "alice", false).await;
    let (_, r) = sess
        .call(
            "tools/call",
            json!({"name": "run_script", "arguments": {"text": "hi"}}),
        )
        .await;
    assert_eq!(r["result"]["content"][0]["text"], "hi");
    golden("rev_2025_11_25_call_tool_result", &r);
    s.shutdown().await;
}

#[tokio::test]
async fn tasks_result_delivers_the_elicitation_over_the_stream() {
    let s = Server::start().await;
    let (sess, _) = Session::open(&s, "alice", true).await;
    let id = sess.start("ask Your name?").await;
    let mut req = s
        .http
        .post(&s.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    for (k, v) in sess.headers() {
        req = req.header(k, v);
    }
    let resp = req
        .body(
            json!({"jsonrpc": "2.0", "id": "r1", "method": "tasks/result", "params": {"taskId": id}})
                .to_string(),
        )
        .send()
        .await
        .unwrap();
    assert!(resp.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    let mut sse = SseReader::new(resp);
    let mut status_seen = false;
    let elicit = loop {
        let m = sse.next().await.expect("an elicitation");
        if m["method"] == "notifications/tasks/status" {
            // The stream opens with the current status (working or already
            // input_required, depending on timing); pin the input_required one.
            if m["params"]["status"] == "input_required" {
                golden("rev_2025_11_25_notification_tasks_status", &m);
                status_seen = true;
            }
            continue;
        }
        if m["method"] == "elicitation/create" {
            break m;
        }
    };
    assert!(status_seen);
    assert_eq!(elicit["params"]["mode"], "form");
    golden("rev_2025_11_25_elicitation_request", &elicit);
    let (st, _) = sess
        .send(json!({"jsonrpc": "2.0", "id": elicit["id"], "result": {"action": "accept", "content": {"answer": "Zoe"}}}))
        .await;
    assert_eq!(st, 202);
    let fin = loop {
        let m = sse.next().await.expect("the final result");
        if m.get("id") == Some(&json!("r1")) {
            break m;
        }
    };
    assert_eq!(fin["result"]["content"][0]["text"], "answer: Zoe");
    assert!(sse.next().await.is_none());
    s.shutdown().await;
}

#[tokio::test]
async fn sessions_end_with_delete() {
    let s = Server::start().await;
    let (sess, _) = Session::open(&s, "alice", false).await;
    let mut req = s.http.delete(&s.url);
    for (k, v) in sess.headers() {
        req = req.header(k, v);
    }
    assert_eq!(req.send().await.unwrap().status(), 204);
    let (st, r) = sess.call("tools/list", json!({})).await;
    assert_eq!((st, r["error"]["code"].clone()), (404, json!(-32001)));
    golden("rev_2025_11_25_session_not_found", &r);
    s.shutdown().await;
}

#[tokio::test]
async fn blocking_call_delivers_the_elicitation_over_its_stream() {
    let s = Server::start().await;
    let (sess, _) = Session::open(&s, "alice", true).await;
    let mut req = s
        .http
        .post(&s.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    for (k, v) in sess.headers() {
        req = req.header(k, v);
    }
    let resp = req
        .body(
            json!({"jsonrpc": "2.0", "id": "c1", "method": "tools/call",
                   "params": {"name": "run_script", "arguments": {"text": "ask Pet?"}}})
            .to_string(),
        )
        .send()
        .await
        .unwrap();
    let mut sse = SseReader::new(resp);
    let elicit = sse.next().await.expect("an elicitation");
    assert_eq!(elicit["method"], "elicitation/create", "{elicit}");
    assert!(elicit["params"].get("_meta").is_none());
    golden("rev_2025_11_25_blocking_elicitation_request", &elicit);
    sess.send(json!({"jsonrpc": "2.0", "id": elicit["id"], "result": {"action": "accept", "content": {"answer": "cat"}}}))
        .await;
    let fin = sse.next().await.expect("the result");
    assert_eq!(fin["id"], "c1");
    assert_eq!(fin["result"]["content"][0]["text"], "answer: cat");
    assert!(sse.next().await.is_none());
    s.shutdown().await;
}

/// Sessions are bounded per caller: over the bound, `initialize` is HTTP 429 with
/// a JSON-RPC error and no session; another caller's sessions, and the first
/// caller's open ones, are untouched.
#[tokio::test]
async fn sessions_are_bounded_per_caller() {
    let s = Server::with_config({
        let mut v = taskwire_mcp::McpConfig::default();
        v.max_sessions_per_principal = 2;
        v
    })
    .await;
    let (a1, _) = Session::open(&s, "alice", false).await;
    let (_a2, _) = Session::open(&s, "alice", false).await;
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": V, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let (st, r) = s
        .raw(
            &body.to_string(),
            &[("x-test-principal".into(), "alice".into())],
        )
        .await;
    assert_eq!(st, 429, "{r}");
    assert_eq!(r["error"]["code"], -32600);
    assert!(r["error"]["message"]
        .as_str()
        .unwrap()
        .contains("at most 2"));
    let (b, _) = Session::open(&s, "bob", false).await;
    let (st, _) = b.call("tools/list", json!({})).await;
    assert_eq!(st, 200);
    let (st, _) = a1.call("tools/list", json!({})).await;
    assert_eq!(st, 200, "alice's open session survived the refusal");
    s.shutdown().await;
}

/// `notifications/cancelled` for a blocking `tools/call` in progress cancels
/// its task, and the call ends at once (its answer, which the client ignores,
/// comes long before the tool's 30 s sleep would end); with and without a
/// stream (a client that declared elicitation gets one). A cancel for a
/// request that is not an open call changes nothing.
#[tokio::test]
async fn notifications_cancelled_cancels_a_blocking_call() {
    let s = Server::start().await;
    for (who, elicitation) in [("alice", false), ("bob", true)] {
        let (sess, _) = Session::open(&s, who, elicitation).await;
        let call = sess.send(
            json!({"jsonrpc": "2.0", "id": "slow-1", "method": "tools/call",
            "params": {"name": "run_script", "arguments": {"text": "sleep 30000"}}}),
        );
        let watch = async {
            let mut task = None;
            for _ in 0..500 {
                let (_, r) = sess.call("tasks/list", json!({})).await;
                if let Some(t) = r["result"]["tasks"].as_array().and_then(|a| a.first()) {
                    if t["status"] == "working" {
                        task = Some(t["taskId"].as_str().expect("id").to_string());
                        break;
                    }
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let task = task.expect("the call's task runs");
            // Another request id: nothing happens.
            let (st, _) = sess
                .send(
                    json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                    "params": {"requestId": "slow-2"}}),
                )
                .await;
            assert_eq!(st, 202);
            tokio::time::sleep(Duration::from_millis(100)).await;
            let (_, r) = sess.call("tasks/get", json!({"taskId": task})).await;
            assert_eq!(r["result"]["status"], "working", "{r}");
            let (st, _) = sess
                .send(
                    json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                    "params": {"requestId": "slow-1", "reason": "the user gave up"}}),
                )
                .await;
            assert_eq!(st, 202);
            task
        };
        let (_, task) =
            tokio::time::timeout(Duration::from_secs(10), async { tokio::join!(call, watch) })
                .await
                .expect("the call ends soon after its cancel");
        let r = sess.poll(&task, "cancelled").await;
        assert!(
            r["result"]["statusMessage"]
                .as_str()
                .is_some_and(|m| m.contains("the user gave up")),
            "{r}"
        );
    }
    s.shutdown().await;
}

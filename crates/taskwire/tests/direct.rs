//! The listener answers `POST /a2a` through a direct route, ahead of the router
//! (see `taskwire::DirectRoute`). The router still serves the same route to
//! in-process callers. Both paths must give the same answer to every request:
//! authentication failures, body limits, JSON-RPC errors, batches, notifications and
//! results. And a direct route must record the request metric as the router does.

use axum::body::Body;
use axum::http::Request;
mod common;

use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;

const TOKEN: &str = "direct-test-token";

struct Answer {
    status: u16,
    content_type: Option<String>,
    www_authenticate: Option<String>,
    body: Vec<u8>,
}

impl std::fmt::Debug for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {:?} {:?} {}",
            self.status,
            self.content_type,
            self.www_authenticate,
            String::from_utf8_lossy(&self.body)
        )
    }
}

fn same(a: &Answer, b: &Answer) -> bool {
    a.status == b.status
        && a.content_type == b.content_type
        && a.www_authenticate == b.www_authenticate
        && a.body == b.body
}

struct Case {
    what: &'static str,
    method: &'static str,
    path: &'static str,
    headers: Vec<(&'static str, String)>,
    body: Vec<u8>,
}

fn case(what: &'static str, path: &'static str, body: impl Into<Vec<u8>>) -> Case {
    Case {
        what,
        method: "POST",
        path,
        headers: vec![
            ("authorization", format!("Bearer {TOKEN}")),
            ("content-type", "application/json".into()),
        ],
        body: body.into(),
    }
}

impl Case {
    fn header(mut self, name: &'static str, value: &str) -> Self {
        self.headers.retain(|(n, _)| *n != name);
        self.headers.push((name, value.to_string()));
        self
    }

    fn without(mut self, name: &'static str) -> Self {
        self.headers.retain(|(n, _)| *n != name);
        self
    }

    fn method(mut self, method: &'static str) -> Self {
        self.method = method;
        self
    }
}

async fn over_tcp(http: &reqwest::Client, base: &str, c: &Case) -> Answer {
    let mut req = http.request(
        c.method.parse().expect("method"),
        format!("{base}{}", c.path),
    );
    for (n, v) in &c.headers {
        req = req.header(*n, v);
    }
    let r = req.body(c.body.clone()).send().await.expect("send");
    let header = |n: &str| {
        r.headers()
            .get(n)
            .map(|v| v.to_str().expect("header").to_string())
    };
    Answer {
        status: r.status().as_u16(),
        content_type: header("content-type"),
        www_authenticate: header("www-authenticate"),
        body: r.bytes().await.expect("body").to_vec(),
    }
}

async fn in_process(router: &axum::Router, c: &Case) -> Answer {
    let mut req = Request::builder().method(c.method).uri(c.path);
    for (n, v) in &c.headers {
        req = req.header(*n, v);
    }
    let req = req.body(Body::from(c.body.clone())).expect("request");
    let r = router.clone().oneshot(req).await.expect("infallible");
    let header = |n: &str| {
        r.headers()
            .get(n)
            .map(|v| v.to_str().expect("header").to_string())
    };
    let (status, content_type, www_authenticate) = (
        r.status().as_u16(),
        header("content-type"),
        header("www-authenticate"),
    );
    let body = r.into_body().collect().await.expect("body").to_bytes();
    Answer {
        status,
        content_type,
        www_authenticate,
        body: body.to_vec(),
    }
}

/// The count of `taskwire_http_request_duration_seconds` for POST /a2a with `status`.
async fn count(http: &reqwest::Client, base: &str, status: u16) -> u64 {
    let text = http
        .get(format!("{base}/metrics"))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("metrics text");
    let series = format!(
        "taskwire_http_request_duration_seconds_count{{method=\"POST\",route=\"/a2a\",status=\"{status}\"}}"
    );
    text.lines()
        .find_map(|l| l.strip_prefix(series.as_str()))
        .map_or(0, |v| v.trim().parse().expect("count"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn direct_routes_answer_as_the_router_does() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, format!("{TOKEN} alice acme\n")).expect("tokens");
    let server = common::build_serve(&["--auth-tokens", tokens.to_str().expect("path")]).await;
    let base = format!("http://{}", server.local_addr());
    let router = server.router();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(server.run(async move {
        let _ = rx.await;
    }));
    let http = reqwest::Client::new();

    // A task to read back: SendMessage over TCP (the direct route).
    let send = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": {"messageId": "direct-1", "role": "ROLE_USER", "parts": [{"text": "hello"}]}}});
    let sent = over_tcp(&http, &base, &case("send", "/a2a", send.to_string())).await;
    let sent: Value = serde_json::from_slice(&sent.body).expect("json");
    let task_id = sent["result"]["task"]["id"].as_str().expect("task id");
    let get = json!({"jsonrpc": "2.0", "id": "g", "method": "GetTask", "params": {"id": task_id}});

    let cases = vec![
        case("GetTask", "/a2a", get.to_string()),
        case("GetTask, trailing slash", "/a2a/", get.to_string()),
        case(
            "retried SendMessage: the same task",
            "/a2a",
            send.to_string(),
        ),
        case(
            "GetTask, pretty-printed",
            "/a2a",
            serde_json::to_vec_pretty(&get).expect("json"),
        ),
        case(
            "ListTasks",
            "/a2a",
            r#"{"jsonrpc":"2.0","id":2,"method":"ListTasks","params":{}}"#,
        ),
        case(
            "unknown task",
            "/a2a",
            r#"{"jsonrpc":"2.0","id":3,"method":"GetTask","params":{"id":"nope"}}"#,
        ),
        case(
            "wrong field",
            "/a2a",
            r#"{"jsonrpc":"2.0","id":4,"method":"GetTask","params":{"id":"x","historyLength":"many"}}"#,
        ),
        case(
            "unknown method",
            "/a2a",
            r#"{"jsonrpc":"2.0","id":5,"method":"Nope"}"#,
        ),
        case("parse error", "/a2a", r#"{"jsonrpc":"#),
        case("not an object", "/a2a", r#"["2.0",1,"GetTask"]"#),
        case(
            "bad envelope",
            "/a2a",
            r#"{"jsonrpc":"1.0","id":6,"method":"GetTask"}"#,
        ),
        case(
            "batch",
            "/a2a",
            format!(
                r#"[{get},{{"jsonrpc":"2.0","id":7,"method":"Nope"}},{{"jsonrpc":"2.0","method":"ListTasks"}}]"#
            ),
        ),
        case("empty batch", "/a2a", "[]"),
        case(
            "notification",
            "/a2a",
            r#"{"jsonrpc":"2.0","method":"ListTasks"}"#,
        ),
        case("version refused", "/a2a", get.to_string()).header("a2a-version", "0.3"),
        case(
            "version in the query",
            "/a2a?A2A-Version=0.2",
            get.to_string(),
        ),
        case("content type", "/a2a", get.to_string()).header("content-type", "text/plain"),
        case("no content type", "/a2a", get.to_string()).without("content-type"),
        case("no credentials", "/a2a", get.to_string()).without("authorization"),
        case("unknown token", "/a2a", get.to_string()).header("authorization", "Bearer nope"),
        case("malformed credentials", "/a2a", get.to_string()).header("authorization", "Basic x"),
        case(
            "over the body limit",
            "/a2a",
            vec![b' '; 4 * 1024 * 1024 + 1],
        ),
        case("not POST", "/a2a", "").method("GET"),
    ];
    for c in &cases {
        let tcp = over_tcp(&http, &base, c).await;
        let router_answer = in_process(&router, c).await;
        assert!(
            same(&tcp, &router_answer),
            "{}: direct route {tcp:?}\nrouter {router_answer:?}",
            c.what
        );
    }

    // The request metric: one more POST /a2a with status 415 per direct request.
    let before = count(&http, &base, 415).await;
    let c = case("content type", "/a2a", "{}").header("content-type", "text/plain");
    assert_eq!(over_tcp(&http, &base, &c).await.status, 415);
    assert_eq!(count(&http, &base, 415).await, before + 1);

    grpc_answers_as_the_router_does(&base, &router, task_id).await;

    let _ = tx.send(());
    running.await.expect("join").expect("run");
}

/// One unary gRPC request through the router in-process: the gRPC status (from
/// the trailers, or the headers of a trailers-only answer) and the decoded message.
async fn grpc_in_process<M: prost::Message, R: prost::Message + Default>(
    router: &axum::Router,
    rpc: &str,
    msg: &M,
    token: Option<&str>,
) -> (u16, Option<i32>, Option<R>) {
    let payload = msg.encode_to_vec();
    let mut body = vec![0u8];
    body.extend_from_slice(&u32::try_from(payload.len()).expect("size").to_be_bytes());
    body.extend_from_slice(&payload);
    let mut req = Request::builder()
        .method("POST")
        .uri(format!("{}{rpc}", taskwire_grpc::RPC_PREFIX))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    let res = router
        .clone()
        .oneshot(req.body(Body::from(body)).expect("request"))
        .await
        .expect("infallible");
    let status = res.status().as_u16();
    let mut code = res
        .headers()
        .get("grpc-status")
        .map(|v| v.to_str().expect("status").parse().expect("code"));
    let collected = res.into_body().collect().await.expect("body");
    if let Some(t) = collected.trailers() {
        if let Some(v) = t.get("grpc-status") {
            code = Some(v.to_str().expect("status").parse().expect("code"));
        }
    }
    let bytes = collected.to_bytes();
    let message =
        (status == 200 && bytes.len() > 5).then(|| R::decode(&bytes[5..]).expect("message"));
    (status, code, message)
}

/// The same RPCs over TCP (the direct route, through tonic's client) and through
/// the router: the same task, the same status codes.
async fn grpc_answers_as_the_router_does(base: &str, router: &axum::Router, task_id: &str) {
    use taskwire_a2a::pb;
    let channel = tonic::transport::Channel::from_shared(base.to_string())
        .expect("url")
        .connect()
        .await
        .expect("connect");
    let mut client = taskwire_grpc::A2aServiceClient::new(channel);
    let request = |id: &str, token: Option<&str>| {
        let mut r = tonic::Request::new(pb::GetTaskRequest {
            id: id.to_string(),
            ..Default::default()
        });
        if let Some(t) = token {
            r.metadata_mut().insert(
                "authorization",
                format!("Bearer {t}").parse().expect("metadata"),
            );
        }
        r
    };
    let get = |id: &str| pb::GetTaskRequest {
        id: id.to_string(),
        ..Default::default()
    };

    // A task.
    let over_tcp = client
        .get_task(request(task_id, Some(TOKEN)))
        .await
        .expect("GetTask")
        .into_inner();
    let (status, code, routed) =
        grpc_in_process::<_, pb::Task>(router, "GetTask", &get(task_id), Some(TOKEN)).await;
    assert_eq!((status, code), (200, Some(0)));
    assert_eq!(routed.as_ref(), Some(&over_tcp));
    assert_eq!(over_tcp.id, task_id);

    // An unknown task: NOT_FOUND both ways.
    let over_tcp = client
        .get_task(request("nope", Some(TOKEN)))
        .await
        .expect_err("unknown task");
    let (status, code, _) =
        grpc_in_process::<_, pb::Task>(router, "GetTask", &get("nope"), Some(TOKEN)).await;
    assert_eq!(status, 200);
    assert_eq!(code, Some(tonic::Code::NotFound as i32));
    assert_eq!(over_tcp.code(), tonic::Code::NotFound);

    // No credentials, or an unknown token: UNAUTHENTICATED both ways.
    for token in [None, Some("nope")] {
        let over_tcp = client
            .get_task(request(task_id, token))
            .await
            .expect_err("no credentials");
        let (status, code, _) =
            grpc_in_process::<_, pb::Task>(router, "GetTask", &get(task_id), token).await;
        assert_eq!(
            (status, code),
            (200, Some(tonic::Code::Unauthenticated as i32))
        );
        assert_eq!(
            over_tcp.code(),
            tonic::Code::Unauthenticated,
            "{over_tcp:?}"
        );
        assert!(
            over_tcp.message().to_lowercase().contains("token"),
            "{over_tcp:?}"
        );
    }
}

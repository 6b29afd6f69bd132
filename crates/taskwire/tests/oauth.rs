//! OAuth 2.1 / OpenID Connect, inbound, against software nobody here wrote: the
//! npm package `oidc-provider` (OpenID Certified), started on loopback by the
//! tests (.ci/setup-oidc-provider.sh installs it under target/), issues JWT
//! access tokens by the client credentials grant for taskwire's resource
//! indicator. Its tokens are accepted on every adapter and binding; a rotation
//! of its signing key is followed without a restart; every kind of bad token is
//! refused on every surface with the protocol's own error; a token without the
//! scope an operation needs gets the protocol's own "forbidden".
//!
//! `#[ignore]`d: `.ci/test` runs them with `--include-ignored`.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine;
use serde_json::{json, Value};
use taskwire::auth::{AuthConfig, Authenticator};
use taskwire::{MemoryStore, ScriptedAgent, Server};
use taskwire_auth::jwt::{default_audiences, JwtAuthenticator, JwtConfig};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::TcpListener;
use tokio::process::{Child, Command};

const UNKNOWN_TASK: &str = "0123456789abcdef0123456789abcdef";

fn provider_dir() -> String {
    std::env::var("TASKWIRE_OIDC_PROVIDER_DIR")
        .unwrap_or_else(|_| format!("{}/../../target/oidc-provider", env!("CARGO_MANIFEST_DIR")))
}

/// A running oidc-provider.
struct Provider {
    _child: Child,
    issuer: String,
    port: u16,
    /// Its signing key (PKCS#8 PEM), to sign tokens that are right in all but
    /// the one claim a case is about.
    pem: String,
    kid: String,
}

async fn provider(port: u16, resource: &str) -> Provider {
    let dir = provider_dir();
    assert!(
        std::path::Path::new(&format!("{dir}/node_modules/oidc-provider/package.json")).exists(),
        "oidc-provider is not installed in {dir}: run .ci/setup-oidc-provider.sh"
    );
    let mut child = Command::new("node")
        .arg(format!(
            "{}/tests/oidc/provider.mjs",
            env!("CARGO_MANIFEST_DIR")
        ))
        .env("OIDC_PROVIDER_DIR", &dir)
        .env("PORT", port.to_string())
        .env("RESOURCE", resource)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("node");
    let out = child.stdout.take().expect("stdout");
    let mut line = String::new();
    tokio::time::timeout(
        Duration::from_secs(30),
        BufReader::new(out).read_line(&mut line),
    )
    .await
    .expect("oidc-provider starts")
    .expect("read");
    let v: Value = serde_json::from_str(&line).expect("provider line");
    let issuer = v["issuer"].as_str().expect("issuer").to_string();
    let port = issuer
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("port");
    Provider {
        _child: child,
        issuer,
        port,
        pem: v["privateKeyPem"].as_str().expect("pem").to_string(),
        kid: v["kid"].as_str().expect("kid").to_string(),
    }
}

impl Provider {
    /// A token by the client credentials grant (client_secret_basic).
    async fn token(&self, client: &str, scope: Option<&str>, resource: &str) -> String {
        let mut form = vec![("grant_type", "client_credentials"), ("resource", resource)];
        if let Some(s) = scope {
            form.push(("scope", s));
        }
        let r: Value = reqwest::Client::new()
            .post(format!("{}/token", self.issuer))
            .basic_auth(client, Some(format!("{client}-secret")))
            .form(&form)
            .send()
            .await
            .expect("token request")
            .json()
            .await
            .expect("token json");
        r["access_token"]
            .as_str()
            .unwrap_or_else(|| panic!("no token: {r}"))
            .to_string()
    }

    /// A token signed with the issuer's own key: `claims` over a valid base.
    fn forge(&self, resource: &str, edit: impl FnOnce(&mut Value)) -> String {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_secs() as i64;
        let mut c = json!({
            "iss": self.issuer, "aud": resource, "sub": "forged", "iat": now,
            "exp": now + 300, "scope": "tasks:read tasks:write", "client_id": "svc",
        });
        edit(&mut c);
        let mut h = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
        h.kid = Some(self.kid.clone());
        h.typ = Some("at+jwt".into());
        let key = jsonwebtoken::EncodingKey::from_ec_pem(self.pem.as_bytes()).expect("pem");
        jsonwebtoken::encode(&h, &c, &key).expect("sign")
    }
}

struct Running {
    base: String,
    service: taskwire::core::TaskService,
    _stop: tokio::sync::oneshot::Sender<()>,
}

/// taskwire with every adapter, accepting tokens of `issuer` for its URL.
async fn serve(listener: TcpListener, issuer: &str) -> Running {
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let mut c = JwtConfig::new(issuer, default_audiences(&base));
    c.leeway = Duration::ZERO;
    c.jwks_min_refresh = Duration::from_secs(1);
    let jwt = JwtAuthenticator::discover(c).await.expect("discover");
    let server = Server::builder()
        .agent(Arc::new(ScriptedAgent::new()))
        .store(Arc::new(MemoryStore::new()))
        .listen(listener)
        .public_url(base.clone())
        .auth(AuthConfig::chain(vec![
            Arc::new(jwt) as Arc<dyn Authenticator>
        ]))
        .all_adapters()
        .build()
        .await
        .expect("build");
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let service = server.service().clone();
    tokio::spawn(server.run(async move {
        let _ = rx.await;
    }));
    Running {
        base,
        service,
        _stop: tx,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Surface {
    A2aJsonRpc,
    A2aHttpJson,
    A2aGrpc,
    Mcp,
    Agui,
    Cas,
}

const SURFACES: [Surface; 6] = [
    Surface::A2aJsonRpc,
    Surface::A2aHttpJson,
    Surface::A2aGrpc,
    Surface::Mcp,
    Surface::Agui,
    Surface::Cas,
];

/// What a surface answered, in the protocol's own terms.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Outcome {
    /// The operation went through (for a read of an unknown task: its "not
    /// found", past authentication and the scope check).
    Done,
    /// 401 (gRPC UNAUTHENTICATED) with this `WWW-Authenticate`.
    Unauthenticated(String),
    /// 403 (gRPC PERMISSION_DENIED) with this `WWW-Authenticate`.
    Forbidden(String),
    Other(String),
}

fn challenge(r: &reqwest::Response) -> String {
    r.headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string()
}

async fn http_outcome(r: reqwest::Response, done: impl Fn(u16, &str) -> bool) -> Outcome {
    let status = r.status().as_u16();
    let c = challenge(&r);
    let body = r.text().await.unwrap_or_default();
    match status {
        401 => Outcome::Unauthenticated(c),
        403 => Outcome::Forbidden(c),
        s if done(s, &body) => Outcome::Done,
        s => Outcome::Other(format!("{s}: {body}")),
    }
}

async fn grpc_outcome<T>(r: Result<tonic::Response<T>, tonic::Status>, read: bool) -> Outcome {
    match r {
        Ok(_) => Outcome::Done,
        Err(s) if s.code() == tonic::Code::Unauthenticated => Outcome::Unauthenticated(
            s.metadata()
                .get("www-authenticate")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string(),
        ),
        Err(s) if s.code() == tonic::Code::PermissionDenied => Outcome::Forbidden(String::new()),
        Err(s) if read && s.code() == tonic::Code::NotFound => Outcome::Done,
        Err(s) => Outcome::Other(format!("{s:?}")),
    }
}

fn grpc_request<T>(msg: T, token: &str) -> tonic::Request<T> {
    let mut r = tonic::Request::new(msg);
    if let Ok(v) = format!("Bearer {token}").parse() {
        r.metadata_mut().insert("authorization", v);
    }
    r.metadata_mut().insert(
        "a2a-version",
        tonic::metadata::MetadataValue::from_static("1.0"),
    );
    r
}

async fn grpc(base: &str) -> taskwire_wire::a2a::grpc::A2aServiceClient<tonic::transport::Channel> {
    let ch = tonic::transport::Endpoint::from_shared(base.to_string())
        .expect("endpoint")
        .connect()
        .await
        .expect("connect");
    taskwire_wire::a2a::grpc::A2aServiceClient::new(ch)
}

fn mcp_meta(tasks: bool) -> Value {
    let caps = if tasks {
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
    } else {
        json!({})
    };
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "oauth-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": caps,
    })
}

/// Sends a message (a write) on `s` with `token`.
async fn write(s: Surface, base: &str, token: &str, n: usize) -> Outcome {
    let http = reqwest::Client::new();
    let text = format!("hello {n}");
    match s {
        Surface::A2aJsonRpc => {
            let r = http
                .post(format!("{base}/a2a"))
                .bearer_auth(token)
                .header("A2A-Version", "1.0")
                .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params":
                    {"message": {"messageId": format!("m-{n}-{}", s as u8), "role": "ROLE_USER", "parts": [{"text": text}]}}}))
                .send()
                .await
                .expect("send");
            http_outcome(r, |st, b| st == 200 && b.contains("TASK_STATE_COMPLETED")).await
        }
        Surface::A2aHttpJson => {
            let r = http
                .post(format!("{base}/a2a/rest/message:send"))
                .bearer_auth(token)
                .header("A2A-Version", "1.0")
                .json(&json!({"message": {"messageId": format!("m-{n}-{}", s as u8), "role": "ROLE_USER", "parts": [{"text": text}]}}))
                .send()
                .await
                .expect("send");
            http_outcome(r, |st, b| st == 200 && b.contains("TASK_STATE_COMPLETED")).await
        }
        Surface::A2aGrpc => {
            let mut c = grpc(base).await;
            let req = taskwire_wire::a2a::pb::SendMessageRequest {
                message: Some(taskwire_wire::a2a::pb::Message {
                    message_id: format!("m-{n}-{}", s as u8),
                    role: taskwire_wire::a2a::pb::Role::User as i32,
                    parts: vec![taskwire_wire::a2a::pb::Part {
                        content: Some(taskwire_wire::a2a::pb::part::Content::Text(text)),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
                ..Default::default()
            };
            grpc_outcome(c.send_message(grpc_request(req, token)).await, false).await
        }
        Surface::Mcp => {
            let r = http
                .post(format!("{base}/mcp"))
                .bearer_auth(token)
                .header("Accept", "application/json, text/event-stream")
                .header("Mcp-Protocol-Version", "2026-07-28")
                .header("Mcp-Method", "tools/call")
                .header("Mcp-Name", "run_script")
                .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                    "params": {"_meta": mcp_meta(false), "name": "run_script", "arguments": {"text": text}}}))
                .send()
                .await
                .expect("send");
            http_outcome(r, |st, b| st == 200 && b.contains("\"result\"")).await
        }
        Surface::Agui => {
            let r = http
                .post(format!("{base}/agui"))
                .bearer_auth(token)
                .header("Accept", "text/event-stream")
                .json(
                    &json!({"threadId": format!("t-{n}"), "runId": format!("r-{n}"),
                    "messages": [{"id": format!("u-{n}"), "role": "user", "content": text}],
                    "tools": [], "context": [], "state": {}, "forwardedProps": {}}),
                )
                .send()
                .await
                .expect("send");
            // A run refused by the core before it starts is a RUN_ERROR.
            let status = r.status().as_u16();
            if status == 200 {
                let body = r.text().await.unwrap_or_default();
                if body.contains("RUN_ERROR") && body.contains("forbidden") {
                    return Outcome::Forbidden(String::new());
                }
                return if body.contains("RUN_FINISHED") {
                    Outcome::Done
                } else {
                    Outcome::Other(body)
                };
            }
            http_outcome(r, |_, _| false).await
        }
        Surface::Cas => {
            let r = http
                .post(format!("{base}/cas/tasks"))
                .bearer_auth(token)
                .json(&json!({"message": [{"mimeType": "text/plain", "text": text}]}))
                .send()
                .await
                .expect("send");
            http_outcome(r, |st, _| st == 201 || st == 200).await
        }
    }
}

/// Reads an unknown task (a read) on `s`: `Done` is the protocol's not-found.
async fn read(s: Surface, base: &str, token: &str) -> Outcome {
    let http = reqwest::Client::new();
    match s {
        Surface::A2aJsonRpc => {
            let r = http
                .post(format!("{base}/a2a"))
                .bearer_auth(token)
                .header("A2A-Version", "1.0")
                .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": UNKNOWN_TASK}}))
                .send()
                .await
                .expect("send");
            http_outcome(r, |st, b| st == 200 && b.contains("-32001")).await
        }
        Surface::A2aHttpJson => {
            let r = http
                .get(format!("{base}/a2a/rest/tasks/{UNKNOWN_TASK}"))
                .bearer_auth(token)
                .header("A2A-Version", "1.0")
                .send()
                .await
                .expect("send");
            http_outcome(r, |st, _| st == 404).await
        }
        Surface::A2aGrpc => {
            let mut c = grpc(base).await;
            let req = taskwire_wire::a2a::pb::GetTaskRequest {
                id: UNKNOWN_TASK.into(),
                ..Default::default()
            };
            grpc_outcome(c.get_task(grpc_request(req, token)).await, true).await
        }
        Surface::Mcp => {
            let r = http
                .post(format!("{base}/mcp"))
                .bearer_auth(token)
                .header("Accept", "application/json, text/event-stream")
                .header("Mcp-Protocol-Version", "2026-07-28")
                .header("Mcp-Method", "tasks/get")
                .header("Mcp-Name", UNKNOWN_TASK)
                .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/get",
                    "params": {"_meta": mcp_meta(true), "taskId": UNKNOWN_TASK}}))
                .send()
                .await
                .expect("send");
            http_outcome(r, |st, b| st == 200 && b.contains("-32602")).await
        }
        Surface::Agui => Outcome::Done,
        Surface::Cas => {
            let r = http
                .get(format!("{base}/cas/tasks/{UNKNOWN_TASK}"))
                .bearer_auth(token)
                .send()
                .await
                .expect("send");
            http_outcome(r, |st, _| st == 404).await
        }
    }
}

async fn free_listener() -> TcpListener {
    TcpListener::bind("127.0.0.1:0").await.expect("bind")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs oidc-provider (.ci/setup-oidc-provider.sh); run by .ci/test"]
async fn tokens_of_a_real_openid_provider_work_on_every_surface() {
    let listener = free_listener().await;
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let op = provider(0, &base).await;
    let s = serve(listener, &op.issuer).await;

    // The MCP endpoint's resource identifier is an audience too.
    for resource in [base.clone(), format!("{base}/mcp")] {
        let token = op
            .token("svc", Some("tasks:read tasks:write"), &resource)
            .await;
        for (n, surface) in SURFACES.into_iter().enumerate() {
            assert_eq!(
                write(surface, &s.base, &token, n).await,
                Outcome::Done,
                "{surface:?} {resource}"
            );
            assert_eq!(
                read(surface, &s.base, &token).await,
                Outcome::Done,
                "{surface:?}"
            );
        }
    }

    // Read scope only: reads pass, writes are forbidden with the protocol's own
    // error and, over HTTP, the step-up challenge.
    let reader = op.token("reader", Some("tasks:read"), &base).await;
    for (n, surface) in SURFACES.into_iter().enumerate() {
        assert_eq!(
            read(surface, &s.base, &reader).await,
            Outcome::Done,
            "{surface:?}"
        );
        match write(surface, &s.base, &reader, 100 + n).await {
            Outcome::Forbidden(c) => {
                if !matches!(surface, Surface::A2aGrpc | Surface::Agui) {
                    assert!(
                        c.contains("error=\"insufficient_scope\""),
                        "{surface:?}: {c}"
                    );
                    assert!(c.contains("scope=\"tasks:write\""), "{surface:?}: {c}");
                    assert!(c.contains("resource_metadata=\""), "{surface:?}: {c}");
                }
            }
            other => panic!("{surface:?}: {other:?}"),
        }
    }
    // No scope at all: reads are forbidden too.
    let none = op.forge(&base, |c| {
        c.as_object_mut().expect("object").remove("scope");
    });
    for surface in SURFACES {
        if surface == Surface::Agui {
            continue;
        }
        assert!(
            matches!(read(surface, &s.base, &none).await, Outcome::Forbidden(_)),
            "{surface:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs oidc-provider (.ci/setup-oidc-provider.sh); run by .ci/test"]
async fn bad_tokens_are_refused_on_every_surface() {
    let listener = free_listener().await;
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let op = provider(0, &base).await;
    let s = serve(listener, &op.issuer).await;

    let good = op.token("svc", Some("tasks:read tasks:write"), &base).await;
    let parts: Vec<&str> = good.split('.').collect();
    let short = op
        .token("short", Some("tasks:read tasks:write"), &base)
        .await;
    let other_aud = op
        .token(
            "svc",
            Some("tasks:read tasks:write"),
            "https://other.example.com",
        )
        .await;
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_secs() as i64
    };
    let jwks: Value = reqwest::get(format!("{}/jwks", op.issuer))
        .await
        .expect("jwks")
        .json()
        .await
        .expect("jwks json");
    let hmac = {
        let mut h = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
        h.kid = Some(op.kid.clone());
        let claims: Value =
            serde_json::from_slice(&B64.decode(parts[1]).expect("b64")).expect("claims");
        let secret = serde_json::to_vec(&jwks["keys"][0]).expect("jwk");
        jsonwebtoken::encode(
            &h,
            &claims,
            &jsonwebtoken::EncodingKey::from_secret(&secret),
        )
        .expect("hs")
    };
    let unknown_kid = {
        let kp = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("key");
        let mut h = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
        h.kid = Some("not-a-key-of-the-issuer".into());
        let claims: Value =
            serde_json::from_slice(&B64.decode(parts[1]).expect("b64")).expect("claims");
        jsonwebtoken::encode(
            &h,
            &claims,
            &jsonwebtoken::EncodingKey::from_ec_pem(kp.serialize_pem().as_bytes()).expect("pem"),
        )
        .expect("sign")
    };
    let tampered = {
        let mut claims: Value =
            serde_json::from_slice(&B64.decode(parts[1]).expect("b64")).expect("claims");
        claims["sub"] = json!("someone-else");
        format!(
            "{}.{}.{}",
            parts[0],
            B64.encode(claims.to_string()),
            parts[2]
        )
    };
    let none = format!(
        "{}.{}.",
        B64.encode(r#"{"alg":"none","typ":"at+jwt"}"#),
        parts[1]
    );
    // The short-lived token (2 s) expires.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let cases: Vec<(&str, String)> = vec![
        ("expired", short),
        (
            "not yet valid",
            op.forge(&base, |c| c["nbf"] = json!(now() + 600)),
        ),
        ("other audience", other_aud),
        (
            "other issuer",
            op.forge(&base, |c| c["iss"] = json!("https://issuer.example.com")),
        ),
        ("alg none", none),
        ("HMAC with the public key", hmac),
        ("unknown kid", unknown_kid),
        ("tampered", tampered),
        (
            "oversized",
            op.forge(&base, |c| c["pad"] = json!("x".repeat(9000))),
        ),
        ("no Authorization", String::new()),
    ];
    let mut table = String::from("| token | A2A JSON-RPC | A2A HTTP+JSON | A2A gRPC | MCP | AG-UI | CAS |\n|---|---|---|---|---|---|---|\n");
    for (n, (name, token)) in cases.iter().enumerate() {
        table.push_str(&format!("| {name} |"));
        for surface in SURFACES {
            let out = if token.is_empty() {
                write_without_token(surface, &s.base).await
            } else {
                write(surface, &s.base, token, 1000 + n).await
            };
            match &out {
                Outcome::Unauthenticated(c) => {
                    if surface != Surface::A2aGrpc {
                        assert!(c.starts_with("Bearer "), "{name} {surface:?}: {c}");
                        assert!(
                            c.contains("resource_metadata=\""),
                            "{name} {surface:?}: {c}"
                        );
                        if token.is_empty() {
                            assert!(!c.contains("error="), "{name} {surface:?}: {c}");
                        } else {
                            assert!(
                                c.contains("error=\"invalid_token\""),
                                "{name} {surface:?}: {c}"
                            );
                        }
                    }
                    table.push_str(if surface == Surface::A2aGrpc {
                        " UNAUTHENTICATED |"
                    } else {
                        " 401 |"
                    });
                }
                other => panic!("{name} on {surface:?}: {other:?}"),
            }
        }
        table.push('\n');
    }
    println!("{table}");
    // The good token still works.
    assert_eq!(
        write(Surface::A2aJsonRpc, &s.base, &good, 9999).await,
        Outcome::Done
    );
}

async fn write_without_token(s: Surface, base: &str) -> Outcome {
    // The same requests with an empty bearer would be malformed: send none.
    let http = reqwest::Client::new();
    match s {
        Surface::A2aGrpc => {
            let mut c = grpc(base).await;
            let mut r = tonic::Request::new(taskwire_wire::a2a::pb::GetTaskRequest {
                id: UNKNOWN_TASK.into(),
                ..Default::default()
            });
            r.metadata_mut().insert(
                "a2a-version",
                tonic::metadata::MetadataValue::from_static("1.0"),
            );
            grpc_outcome(c.get_task(r).await, false).await
        }
        _ => {
            let path = match s {
                Surface::A2aJsonRpc => "/a2a",
                Surface::A2aHttpJson => "/a2a/rest/message:send",
                Surface::Mcp => "/mcp",
                Surface::Agui => "/agui",
                _ => "/cas/tasks",
            };
            let r = http
                .post(format!("{base}{path}"))
                .json(&json!({}))
                .send()
                .await
                .expect("send");
            http_outcome(r, |_, _| false).await
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs oidc-provider (.ci/setup-oidc-provider.sh); run by .ci/test"]
async fn a_key_rotation_is_followed_without_a_restart() {
    let listener = free_listener().await;
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let op = provider(0, &base).await;
    let s = serve(listener, &op.issuer).await;
    let t1 = op.token("svc", Some("tasks:read tasks:write"), &base).await;
    assert_eq!(
        write(Surface::A2aJsonRpc, &s.base, &t1, 1).await,
        Outcome::Done
    );
    // The issuer restarts with a new signing key (a new key id) on its port.
    let (port, old_kid) = (op.port, op.kid.clone());
    drop(op);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let op = provider(port, &base).await;
    assert_ne!(op.kid, old_kid);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let t2 = op.token("svc", Some("tasks:read tasks:write"), &base).await;
    for (n, surface) in SURFACES.into_iter().enumerate() {
        assert_eq!(
            write(surface, &s.base, &t2, 10 + n).await,
            Outcome::Done,
            "{surface:?}"
        );
    }
    // The retired key's tokens no longer pass.
    assert!(matches!(
        write(Surface::A2aJsonRpc, &s.base, &t1, 99).await,
        Outcome::Unauthenticated(_)
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs oidc-provider (.ci/setup-oidc-provider.sh); run by .ci/test"]
async fn the_protected_resource_metadata_and_the_card_tell_the_truth() {
    let listener = free_listener().await;
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let op = provider(0, &base).await;
    let s = serve(listener, &op.issuer).await;
    let http = reqwest::Client::new();
    for (path, resource) in [
        (
            "/.well-known/oauth-protected-resource".to_string(),
            base.clone(),
        ),
        (
            "/.well-known/oauth-protected-resource/mcp".to_string(),
            format!("{base}/mcp"),
        ),
    ] {
        let m: Value = http
            .get(format!("{}{path}", s.base))
            .send()
            .await
            .expect("metadata")
            .json()
            .await
            .expect("json");
        assert_eq!(m["resource"], resource.as_str(), "{m}");
        assert_eq!(m["authorization_servers"], json!([op.issuer]), "{m}");
        assert_eq!(
            m["scopes_supported"],
            json!(["tasks:read", "tasks:write"]),
            "{m}"
        );
        assert_eq!(m["bearer_methods_supported"], json!(["header"]), "{m}");
    }
    // The MCP endpoint's 401 points at its own metadata.
    let r = http
        .post(format!("{}/mcp", s.base))
        .json(&json!({}))
        .send()
        .await
        .expect("mcp");
    assert_eq!(r.status(), 401);
    assert_eq!(
        challenge(&r),
        format!("Bearer realm=\"taskwire\", scope=\"tasks:read tasks:write\", resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\"")
    );
    // The card stays public and declares the issuer.
    let card: Value = http
        .get(format!("{}/.well-known/agent-card.json", s.base))
        .send()
        .await
        .expect("card")
        .json()
        .await
        .expect("card json");
    let oidc = &card["securitySchemes"]["oidc"]["openIdConnectSecurityScheme"];
    assert_eq!(
        oidc["openIdConnectUrl"],
        format!("{}/.well-known/openid-configuration", op.issuer),
        "{card}"
    );
    let oauth = &card["securitySchemes"]["oauth2"]["oauth2SecurityScheme"];
    assert_eq!(
        oauth["flows"]["clientCredentials"]["tokenUrl"],
        format!("{}/token", op.issuer),
        "{card}"
    );
    assert!(card["securitySchemes"].get("bearer").is_none(), "{card}");
    assert_eq!(card["capabilities"]["extendedAgentCard"], true, "{card}");
    // The extended card, to an authenticated caller.
    let token = op.token("reader", Some("tasks:read"), &base).await;
    let r = http
        .post(format!("{}/a2a", s.base))
        .bearer_auth(&token)
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "GetExtendedAgentCard", "params": {}}))
        .send()
        .await
        .expect("extended card");
    let v: Value = r.json().await.expect("json");
    assert!(v["result"]["name"].is_string(), "{v}");
}

fn python() -> String {
    std::env::var("TASKWIRE_MCP_PY_PYTHON").unwrap_or_else(|_| {
        format!(
            "{}/../../target/mcp-py-venv/bin/python",
            env!("CARGO_MANIFEST_DIR")
        )
    })
}

/// The official Python MCP SDK's OAuth client (`mcp` 2.3,
/// `mcp.client.auth.extensions.client_credentials`) with client credentials
/// and no token: from the 401 through the RFC 9728 metadata, the issuer's
/// metadata and the token to a tool call, which is a task of the token's
/// principal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs oidc-provider and the Python MCP SDK (.ci/setup-oidc-provider.sh, .ci/setup-mcp-py.sh); run by .ci/test"]
async fn the_python_mcp_sdk_client_credentials_client_gets_to_a_tool_call() {
    let listener = free_listener().await;
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let op = provider(0, &format!("{base}/mcp")).await;
    let s = serve(listener, &op.issuer).await;
    let py = python();
    assert!(
        std::path::Path::new(&py).exists(),
        "no python at {py}: run .ci/setup-mcp-py.sh"
    );
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        Command::new(&py)
            .arg(format!(
                "{}/tests/oidc/mcp_client_credentials.py",
                env!("CARGO_MANIFEST_DIR")
            ))
            .args([
                format!("{base}/mcp"),
                op.issuer.clone(),
                "svc".into(),
                "svc-secret".into(),
            ])
            .output(),
    )
    .await
    .expect("the client finishes")
    .expect("python");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(stdout.lines().last().unwrap_or("")).expect("json line");
    let steps: Vec<(String, String, u64)> = v["exchanges"]
        .as_array()
        .expect("exchanges")
        .iter()
        .map(|e| {
            (
                e["method"].as_str().unwrap_or("").to_string(),
                e["url"].as_str().unwrap_or("").to_string(),
                e["status"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    let at = |m: &str, u: &str, st: u64| {
        steps
            .iter()
            .position(|(a, b, c)| a == m && b == u && *c == st)
            .unwrap_or_else(|| panic!("no {m} {u} {st} in {steps:?}"))
    };
    let first = at("POST", &format!("{base}/mcp"), 401);
    let prm = at(
        "GET",
        &format!("{base}/.well-known/oauth-protected-resource/mcp"),
        200,
    );
    let token = at("POST", &format!("{}/token", op.issuer), 200);
    let then = steps
        .iter()
        .rposition(|(a, b, c)| a == "POST" && *b == format!("{base}/mcp") && *c == 200)
        .expect("an authorized call");
    assert!(first < prm && prm < token && token < then, "{steps:?}");
    assert_eq!(v["tools"], json!(["run_script"]), "{v}");
    assert_eq!(v["text"], json!(["hello over oauth"]), "{v}");
    assert_eq!(v["isError"], false, "{v}");
    // The scope came from the challenge.
    assert_eq!(v["granted"], "tasks:read tasks:write", "{v}");
    // The call is a task of the token's principal.
    let mut q = taskwire::core::store::ListQuery::default();
    q.tenant = "default".into();
    q.page_size = 10;
    let page = s
        .service
        .list(&taskwire::Caller::new("default", "svc"), q)
        .await
        .expect("list");
    assert_eq!(page.tasks.len(), 1, "{:?}", page.tasks);
    assert_eq!(page.tasks[0].owner, "svc");
}

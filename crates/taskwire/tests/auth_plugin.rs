//! An embedder's own authenticator, plugged in beside the token file: its
//! grants' permissions are enforced on every surface by the task core, and with
//! an OAuth scheme the server publishes RFC 9728 metadata and answers with the
//! RFC 6750 challenges. No external service needed.

use std::sync::Arc;

use serde_json::{json, Value};
use taskwire::auth::{AuthConfig, Authenticator, Grant, OAuthScheme, Scheme, Verdict};
use taskwire::core::{Caller, Permissions};
use taskwire::{MemoryStore, ScriptedAgent, Server, TokenTable};
use tokio::net::TcpListener;

/// Tokens `reader` (read only), `nobody` (no permission), `writer` (all).
struct Mine;

impl Authenticator for Mine {
    fn authenticate(&self, token: &str) -> Verdict {
        let p = match token {
            "reader" => Permissions::READ,
            "nobody" => Permissions::NONE,
            "writer" => Permissions::ALL,
            _ => return Verdict::Pass,
        };
        Verdict::Accept(Grant::new(Caller::new("acme", token).with_permissions(p)))
    }

    fn scheme(&self) -> Scheme {
        Scheme::OAuth(Box::new(OAuthScheme::new(
            "https://id.example.com",
            "https://id.example.com/.well-known/oauth-authorization-server",
            ["tasks:read".into(), "tasks:write".into()],
        )))
    }
}

async fn start() -> (String, tokio::sync::oneshot::Sender<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let mut table = TokenTable::new();
    table.insert("file-token", Caller::new("acme", "ci"));
    let server = Server::builder()
        .agent(Arc::new(ScriptedAgent::new()))
        .store(Arc::new(MemoryStore::new()))
        .listen(listener)
        .public_url(base.clone())
        .auth(AuthConfig::chain(vec![
            Arc::new(table) as Arc<dyn Authenticator>,
            Arc::new(Mine),
        ]))
        .all_adapters()
        .build()
        .await
        .expect("build");
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(server.run(async move {
        let _ = rx.await;
    }));
    (base, tx)
}

async fn send(base: &str, token: &str, id: &str) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{base}/a2a"))
        .bearer_auth(token)
        .header("A2A-Version", "1.0")
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params":
            {"message": {"messageId": id, "role": "ROLE_USER", "parts": [{"text": "hi"}]}}}),
        )
        .send()
        .await
        .expect("send")
}

fn challenge(r: &reqwest::Response) -> String {
    r.headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_embedders_authenticator_sits_beside_the_token_file() {
    let (base, _stop) = start().await;
    let http = reqwest::Client::new();

    // Both kinds of token work.
    for (token, id) in [("file-token", "m1"), ("writer", "m2")] {
        let r = send(&base, token, id).await;
        assert_eq!(r.status(), 200, "{token}");
        let v: Value = r.json().await.expect("json");
        assert_eq!(
            v["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
            "{v}"
        );
    }

    // Read only: a send is forbidden, with A2A's PERMISSION_DENIED and the
    // step-up challenge.
    let r = send(&base, "reader", "m3").await;
    assert_eq!(r.status(), 403);
    assert_eq!(
        challenge(&r),
        format!("Bearer realm=\"taskwire\", error=\"insufficient_scope\", scope=\"tasks:write\", resource_metadata=\"{base}/.well-known/oauth-protected-resource\"")
    );
    let v: Value = r.json().await.expect("json");
    assert_eq!(v["error"]["code"], -32600, "{v}");
    assert_eq!(v["error"]["data"][0]["reason"], "PERMISSION_DENIED", "{v}");
    // ... a read passes (and finds nothing of this caller's).
    let r = http
        .get(format!(
            "{base}/a2a/rest/tasks/0123456789abcdef0123456789abcdef"
        ))
        .bearer_auth("reader")
        .header("A2A-Version", "1.0")
        .send()
        .await
        .expect("get");
    assert_eq!(r.status(), 404);
    // ... CAS and MCP refuse a write their own way.
    let r = http
        .post(format!("{base}/cas/tasks"))
        .bearer_auth("reader")
        .json(&json!({"message": [{"mimeType": "text/plain", "text": "hi"}]}))
        .send()
        .await
        .expect("cas");
    assert_eq!(r.status(), 403);
    assert!(challenge(&r).contains("insufficient_scope"));
    let v: Value = r.json().await.expect("json");
    assert_eq!(v["error"]["code"], "forbidden", "{v}");
    let r = http
        .post(format!("{base}/mcp"))
        .bearer_auth("reader")
        .header("Accept", "application/json, text/event-stream")
        .header("Mcp-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "run_script")
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {}},
            "name": "run_script", "arguments": {"text": "hi"}}}),
        )
        .send()
        .await
        .expect("mcp");
    assert_eq!(r.status(), 403);
    assert_eq!(
        challenge(&r),
        format!("Bearer realm=\"taskwire\", error=\"insufficient_scope\", scope=\"tasks:write\", resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\"")
    );

    // No permission: even a read is forbidden, and the challenge names both.
    let r = http
        .get(format!("{base}/cas/tasks/0123456789abcdef0123456789abcdef"))
        .bearer_auth("nobody")
        .send()
        .await
        .expect("cas get");
    assert_eq!(r.status(), 403);
    assert!(
        challenge(&r).contains("scope=\"tasks:read tasks:write\""),
        "{}",
        challenge(&r)
    );

    // Unknown and missing tokens: 401 with the metadata and the scopes.
    let r = send(&base, "who", "m4").await;
    assert_eq!(r.status(), 401);
    assert_eq!(
        challenge(&r),
        format!("Bearer realm=\"taskwire\", error=\"invalid_token\", error_description=\"unknown bearer token\", scope=\"tasks:read tasks:write\", resource_metadata=\"{base}/.well-known/oauth-protected-resource\"")
    );

    // The metadata names the issuer; the card declares both schemes.
    let m: Value = http
        .get(format!("{base}/.well-known/oauth-protected-resource"))
        .send()
        .await
        .expect("prm")
        .json()
        .await
        .expect("json");
    assert_eq!(m["resource"], base.as_str());
    assert_eq!(
        m["authorization_servers"],
        json!(["https://id.example.com"])
    );
    let card: Value = http
        .get(format!("{base}/.well-known/agent-card.json"))
        .send()
        .await
        .expect("card")
        .json()
        .await
        .expect("json");
    assert_eq!(
        card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"], "Bearer",
        "{card}"
    );
    assert_eq!(
        card["securitySchemes"]["oauth2"]["oauth2SecurityScheme"]["oauth2MetadataUrl"],
        "https://id.example.com/.well-known/oauth-authorization-server",
        "{card}"
    );
    assert_eq!(
        card["securityRequirements"].as_array().map(Vec::len),
        Some(2),
        "{card}"
    );
}

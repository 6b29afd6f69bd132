//! The outbound OAuth client against a resource server and an authorization
//! server of the test's own on 127.0.0.1: discovery from the 401, the token
//! cache and its renewal before expiry, the 401-renews-once rule and the
//! step-up limit. (The interop proof is the official MCP conformance suite in
//! client mode, .ci/mcp-conformance-client.sh.)

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Form, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use taskwire_client::http::send_authorized;
use taskwire_client::oauth::{
    AuthorizationServer, Authorizer, ClientAuth, OAuthClient, OAuthConfig, Secret, SecretMethod,
};

#[derive(Default)]
struct Shared {
    base: String,
    /// Tokens issued, with their scopes.
    issued: Vec<(String, Vec<String>)>,
    /// Form bodies of the token requests.
    token_requests: Vec<std::collections::HashMap<String, String>>,
    /// Lifetime of issued tokens.
    expires_in: u64,
    /// Every token is refused (as after a key rotation on the resource).
    refuse_all: bool,
    /// Requests that reached the resource with a token.
    with_token: usize,
    /// Distinct authorization headers seen by the resource.
    seen_tokens: Vec<String>,
}

type S = Arc<Mutex<Shared>>;

async fn start(expires_in: u64) -> (String, S) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let shared: S = Arc::new(Mutex::new(Shared {
        base: base.clone(),
        expires_in,
        ..Shared::default()
    }));
    let app = Router::new()
        .route("/mcp", post(resource))
        .route("/admin", post(resource))
        .route("/always403", post(resource))
        .route("/.well-known/oauth-protected-resource/mcp", get(prm_mcp))
        .route(
            "/.well-known/oauth-protected-resource/admin",
            get(prm_admin),
        )
        .route(
            "/.well-known/oauth-protected-resource/always403",
            get(prm_always),
        )
        .route("/.well-known/oauth-authorization-server", get(as_metadata))
        .route("/token", post(token))
        .with_state(shared.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (base, shared)
}

fn prm(s: &S, path: &str) -> Json<Value> {
    let base = s.lock().expect("lock").base.clone();
    Json(json!({
        "resource": format!("{base}{path}"),
        "authorization_servers": [base],
        "scopes_supported": ["read", "write"],
    }))
}

async fn prm_mcp(State(s): State<S>) -> Json<Value> {
    prm(&s, "/mcp")
}
async fn prm_admin(State(s): State<S>) -> Json<Value> {
    prm(&s, "/admin")
}
async fn prm_always(State(s): State<S>) -> Json<Value> {
    prm(&s, "/always403")
}

async fn as_metadata(State(s): State<S>) -> Json<Value> {
    let base = s.lock().expect("lock").base.clone();
    Json(json!({
        "issuer": base,
        "token_endpoint": format!("{base}/token"),
        "token_endpoint_auth_methods_supported": ["client_secret_basic"],
        "grant_types_supported": ["client_credentials"],
    }))
}

async fn token(
    State(s): State<S>,
    headers: HeaderMap,
    Form(form): Form<std::collections::HashMap<String, String>>,
) -> Response {
    let basic = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    // "svc:s3cret", base64.
    if basic != "Basic c3ZjOnMzY3JldA==" {
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({"error": "invalid_client"})),
        )
            .into_response();
    }
    let mut st = s.lock().expect("lock");
    st.token_requests.push(form.clone());
    let scopes: Vec<String> = form
        .get("scope")
        .map(|s| s.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default();
    let tok = format!("tok-{}", st.issued.len() + 1);
    st.issued.push((tok.clone(), scopes.clone()));
    Json(json!({
        "access_token": tok,
        "token_type": "Bearer",
        "expires_in": st.expires_in,
        "scope": scopes.join(" "),
    }))
    .into_response()
}

async fn resource(State(s): State<S>, uri: axum::http::Uri, headers: HeaderMap) -> Response {
    let mut st = s.lock().expect("lock");
    let prm = format!(
        "{}/.well-known/oauth-protected-resource{}",
        st.base,
        uri.path()
    );
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let challenge = |extra: &str| {
        [(
            "www-authenticate",
            format!(r#"Bearer resource_metadata="{prm}"{extra}"#),
        )]
    };
    let Some(auth) = auth else {
        return (StatusCode::UNAUTHORIZED, challenge(r#", scope="read""#)).into_response();
    };
    st.with_token += 1;
    if !st.seen_tokens.contains(&auth) {
        st.seen_tokens.push(auth.clone());
    }
    let tok = auth.trim_start_matches("Bearer ");
    let scopes = st
        .issued
        .iter()
        .find(|(t, _)| t == tok)
        .map(|(_, s)| s.clone());
    let Some(scopes) = scopes.filter(|_| !st.refuse_all) else {
        return (
            StatusCode::UNAUTHORIZED,
            challenge(r#", error="invalid_token""#),
        )
            .into_response();
    };
    match uri.path() {
        "/admin" if !scopes.iter().any(|s| s == "write") => (
            StatusCode::FORBIDDEN,
            challenge(r#", error="insufficient_scope", scope="write""#),
        )
            .into_response(),
        "/always403" => {
            let n = st.with_token;
            (
                StatusCode::FORBIDDEN,
                challenge(&format!(r#", error="insufficient_scope", scope="s{n}""#)),
            )
                .into_response()
        }
        _ => (StatusCode::OK, "ok").into_response(),
    }
}

fn client(max_step_ups: u32) -> OAuthClient {
    OAuthClient::new(
        OAuthConfig::client_credentials(
            "svc",
            ClientAuth::Secret {
                secret: Secret::from("s3cret"),
                method: Some(SecretMethod::Basic),
            },
        )
        .with_max_step_ups(max_step_ups),
    )
    .expect("oauth client")
}

async fn call(auth: &OAuthClient, url: &str) -> u16 {
    let rb = reqwest::Client::new().post(url).body("{}");
    send_authorized(rb, Some(auth as &dyn Authorizer))
        .await
        .expect("response")
        .status()
        .as_u16()
}

#[tokio::test]
async fn discovers_from_the_401_then_caches_the_token() {
    let (base, s) = start(3600).await;
    let auth = client(2);
    let url = format!("{base}/mcp");
    assert_eq!(call(&auth, &url).await, 200);
    assert_eq!(call(&auth, &url).await, 200);
    assert_eq!(call(&auth, &url).await, 200);
    assert_eq!(auth.token_requests().await, 1, "one token for three calls");
    let st = s.lock().expect("lock");
    let form = &st.token_requests[0];
    assert_eq!(
        form.get("grant_type").map(String::as_str),
        Some("client_credentials")
    );
    // RFC 8707: the resource as the metadata names it; the 401's scope.
    assert_eq!(form.get("resource"), Some(&url));
    assert_eq!(form.get("scope").map(String::as_str), Some("read"));
    // The secret went in the Basic header only.
    assert!(!form.contains_key("client_secret"));
    assert_eq!(st.seen_tokens, ["Bearer tok-1"]);
}

#[tokio::test]
async fn renews_before_expiry_without_a_401() {
    let (base, s) = start(1).await;
    let auth = client(2);
    let url = format!("{base}/mcp");
    assert_eq!(call(&auth, &url).await, 200);
    let after_first = s.lock().expect("lock").with_token;
    // The 1 s token is renewed at 0.8 s: the next call carries a new token
    // and is not refused first.
    tokio::time::sleep(Duration::from_millis(900)).await;
    assert_eq!(call(&auth, &url).await, 200);
    let st = s.lock().expect("lock");
    assert_eq!(st.issued.len(), 2);
    assert_eq!(st.seen_tokens, ["Bearer tok-1", "Bearer tok-2"]);
    assert_eq!(st.with_token, after_first + 1, "no request was refused");
}

#[tokio::test]
async fn a_401_renews_once_and_retries_once() {
    let (base, s) = start(3600).await;
    let auth = client(2);
    let url = format!("{base}/mcp");
    assert_eq!(call(&auth, &url).await, 200);
    s.lock().expect("lock").refuse_all = true;
    let before = s.lock().expect("lock").with_token;
    // Refused with a cached token: one new token, one retry, then the 401
    // stands.
    assert_eq!(call(&auth, &url).await, 401);
    assert_eq!(auth.token_requests().await, 2);
    assert_eq!(s.lock().expect("lock").with_token, before + 2);
    // Accepted again: the renewed token is used.
    s.lock().expect("lock").refuse_all = false;
    assert_eq!(call(&auth, &url).await, 200);
    assert_eq!(auth.token_requests().await, 2);
}

#[tokio::test]
async fn a_403_steps_up_to_the_union_of_scopes() {
    let (base, s) = start(3600).await;
    let auth = client(2);
    assert_eq!(call(&auth, &format!("{base}/admin")).await, 200);
    let st = s.lock().expect("lock");
    assert_eq!(st.token_requests.len(), 2);
    assert_eq!(
        st.token_requests[0].get("scope").map(String::as_str),
        Some("read")
    );
    assert_eq!(
        st.token_requests[1].get("scope").map(String::as_str),
        Some("read write"),
        "the step-up keeps the scopes held"
    );
}

#[tokio::test]
async fn step_ups_stop_at_the_limit() {
    let (base, s) = start(3600).await;
    let auth = client(2);
    assert_eq!(call(&auth, &format!("{base}/always403")).await, 403);
    // The token of the 401, then two step-ups, then the 403 stands.
    assert_eq!(auth.token_requests().await, 3);
    assert_eq!(s.lock().expect("lock").with_token, 3);
    let none = client(0);
    assert_eq!(call(&none, &format!("{base}/always403")).await, 403);
    assert_eq!(none.token_requests().await, 1);
}

#[tokio::test]
async fn a_step_up_outside_the_allowed_scopes_is_not_made() {
    let (base, _s) = start(3600).await;
    let auth = OAuthClient::new(
        OAuthConfig::client_credentials(
            "svc",
            ClientAuth::Secret {
                secret: Secret::from("s3cret"),
                method: None,
            },
        )
        .with_scopes(["read"])
        .with_allowed_scopes(["read"]),
    )
    .expect("client");
    assert_eq!(call(&auth, &format!("{base}/admin")).await, 403);
    assert_eq!(auth.token_requests().await, 1);
}

#[tokio::test]
async fn a_configured_issuer_gets_a_token_before_any_request() {
    let (base, s) = start(3600).await;
    let auth = OAuthClient::new(
        OAuthConfig::client_credentials(
            "svc",
            ClientAuth::Secret {
                secret: Secret::from("s3cret"),
                method: None,
            },
        )
        .with_authorization_server(AuthorizationServer::Issuer(base.clone())),
    )
    .expect("client");
    assert_eq!(call(&auth, &format!("{base}/mcp")).await, 200);
    {
        let st = s.lock().expect("lock");
        assert_eq!(st.with_token, 1, "the first request carried a token");
        // Without metadata of the resource, the resource is the URL used.
        assert_eq!(
            st.token_requests[0].get("resource"),
            Some(&format!("{base}/mcp"))
        );
    }
    // A wrong issuer is refused.
    let wrong = OAuthClient::new(
        OAuthConfig::client_credentials("svc", ClientAuth::None)
            .with_authorization_server(AuthorizationServer::Issuer(format!("{base}/other"))),
    )
    .expect("client");
    let rb = reqwest::Client::new().post(format!("{base}/mcp"));
    assert!(send_authorized(rb, Some(&wrong as &dyn Authorizer))
        .await
        .is_err());
}

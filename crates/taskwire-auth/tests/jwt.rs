//! The JWT validator against an issuer served on loopback by the test: every
//! refusal the module documents, key rotation, and the bound on refetches.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use axum::routing::get;
use axum::{Json, Router};
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};
use taskwire_auth::jwt::{JwtAuthenticator, JwtConfig};
use taskwire_auth::{Authenticator, Permission, Refusal, Verdict};

const AUD: &str = "https://agents.example.com";

struct SigningKey {
    kid: String,
    key: EncodingKey,
    jwk: Value,
}

fn es256(kid: &str) -> SigningKey {
    let kp = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("key");
    let raw = kp.public_key_raw();
    let jwk = json!({
        "kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": kid,
        "x": B64.encode(&raw[1..33]), "y": B64.encode(&raw[33..65]),
    });
    SigningKey {
        kid: kid.into(),
        key: EncodingKey::from_ec_pem(kp.serialize_pem().as_bytes()).expect("pem"),
        jwk,
    }
}

struct Issuer {
    url: String,
    jwks: Arc<RwLock<Value>>,
    fetches: Arc<AtomicUsize>,
}

async fn issuer(keys: &[&SigningKey]) -> Issuer {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let jwks = Arc::new(RwLock::new(
        json!({ "keys": keys.iter().map(|k| k.jwk.clone()).collect::<Vec<_>>() }),
    ));
    let fetches = Arc::new(AtomicUsize::new(0));
    let meta = json!({
        "issuer": url,
        "jwks_uri": format!("{url}/jwks"),
        "token_endpoint": format!("{url}/token"),
        "grant_types_supported": ["client_credentials"],
    });
    let (j, f) = (jwks.clone(), fetches.clone());
    let app = Router::new()
        .route(
            "/.well-known/openid-configuration",
            get(move || {
                let m = meta.clone();
                async move { Json(m) }
            }),
        )
        .route(
            "/jwks",
            get(move || {
                f.fetch_add(1, Ordering::SeqCst);
                let v = j.read().expect("lock").clone();
                async move { Json(v) }
            }),
        );
    tokio::spawn(async move { axum::serve(listener, app).await });
    Issuer { url, jwks, fetches }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs() as i64
}

fn claims(iss: &str) -> Value {
    json!({
        "iss": iss, "aud": AUD, "sub": "svc-a", "exp": now() + 300, "iat": now(),
        "scope": "openid tasks:read tasks:write", "org": "acme",
    })
}

fn sign(k: &SigningKey, claims: &Value) -> String {
    let mut h = Header::new(Algorithm::ES256);
    h.kid = Some(k.kid.clone());
    h.typ = Some("at+jwt".into());
    jsonwebtoken::encode(&h, claims, &k.key).expect("sign")
}

async fn verdict(a: &JwtAuthenticator, token: &str) -> Verdict {
    a.authenticate(token).resolve().await
}

async fn refused(a: &JwtAuthenticator, token: &str) -> &'static str {
    match verdict(a, token).await {
        Verdict::Refuse(Refusal::InvalidToken(why)) => why,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

async fn setup() -> (SigningKey, Issuer, JwtAuthenticator) {
    let k = es256("k1");
    let iss = issuer(&[&k]).await;
    let mut c = JwtConfig::new(iss.url.clone(), vec![AUD.into()]);
    c.tenant_claim = Some("org".into());
    c.jwks_min_refresh = Duration::from_secs(1);
    let a = JwtAuthenticator::discover(c).await.expect("discover");
    (k, iss, a)
}

#[tokio::test]
async fn a_valid_token_becomes_the_caller_with_its_permissions() {
    let (k, iss, a) = setup().await;
    match verdict(&a, &sign(&k, &claims(&iss.url))).await {
        Verdict::Accept(g) => {
            assert_eq!(
                (g.caller.tenant.as_str(), g.caller.principal.as_str()),
                ("acme", "svc-a")
            );
            assert!(g.caller.permissions.allows(Permission::Write));
            assert_eq!(g.scopes, ["openid", "tasks:read", "tasks:write"]);
        }
        other => panic!("{other:?}"),
    }
    // Read only; no scope at all; scopes as an array (Okta's `scp`).
    let mut c = claims(&iss.url);
    c["scope"] = json!("tasks:read");
    let Verdict::Accept(g) = verdict(&a, &sign(&k, &c)).await else {
        panic!("read-only token refused")
    };
    assert!(g.caller.permissions.allows(Permission::Read));
    assert!(!g.caller.permissions.allows(Permission::Write));
    c.as_object_mut().expect("object").remove("scope");
    c.as_object_mut().expect("object").remove("org");
    let Verdict::Accept(g) = verdict(&a, &sign(&k, &c)).await else {
        panic!("scope-less token refused")
    };
    assert!(!g.caller.permissions.allows(Permission::Read));
    assert_eq!(g.caller.tenant, "default");
    // Not a JWT at all: the next authenticator is asked.
    assert!(matches!(a.authenticate("opaque-token"), Verdict::Pass));
    // Keys are known: no fetch on the request path.
    assert_eq!(iss.fetches.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn every_invalid_token_is_refused_with_its_reason() {
    let (k, iss, a) = setup().await;
    let base = claims(&iss.url);
    let with = |f: &dyn Fn(&mut Value)| {
        let mut c = base.clone();
        f(&mut c);
        sign(&k, &c)
    };
    assert!(refused(&a, &with(&|c| c["exp"] = json!(now() - 120)))
        .await
        .contains("expired"));
    assert!(refused(&a, &with(&|c| c["nbf"] = json!(now() + 120)))
        .await
        .contains("not valid yet"));
    assert!(refused(
        &a,
        &with(&|c| c["aud"] = json!("https://other.example.com"))
    )
    .await
    .contains("audience"));
    assert!(
        refused(&a, &with(&|c| c["iss"] = json!("https://evil.example.com")))
            .await
            .contains("issuer")
    );
    assert!(refused(
        &a,
        &with(&|c| {
            c.as_object_mut().expect("object").remove("exp");
        })
    )
    .await
    .contains("required claim"));
    assert!(refused(
        &a,
        &with(&|c| {
            c.as_object_mut().expect("object").remove("sub");
        })
    )
    .await
    .contains("principal"));
    // Within the leeway (30 s) an expired token is still good.
    assert!(matches!(
        verdict(&a, &with(&|c| c["exp"] = json!(now() - 5))).await,
        Verdict::Accept(_)
    ));

    let good = sign(&k, &base);
    let parts: Vec<&str> = good.split('.').collect();
    // alg none, with and without a signature.
    let none = B64.encode(r#"{"alg":"none","typ":"JWT","kid":"k1"}"#);
    assert!(refused(&a, &format!("{none}.{}.", parts[1]))
        .await
        .contains("header"));
    assert!(refused(&a, &format!("{none}.{}.{}", parts[1], parts[2]))
        .await
        .contains("header"));
    // HS256 keyed with the issuer's public key (the algorithm confusion).
    let public = serde_json::to_vec(&k.jwk).expect("jwk");
    let mut h = Header::new(Algorithm::HS256);
    h.kid = Some("k1".into());
    let hs = jsonwebtoken::encode(&h, &base, &EncodingKey::from_secret(&public)).expect("hs");
    assert!(refused(&a, &hs).await.contains("not allowed"));
    // Tampered: another payload under the same signature.
    let mut evil = base.clone();
    evil["sub"] = json!("admin");
    let forged = format!("{}.{}.{}", parts[0], B64.encode(evil.to_string()), parts[2]);
    assert!(refused(&a, &forged).await.contains("signature"));
    // Signed by a key the issuer does not publish, under its key id.
    let other = es256("k1");
    assert!(refused(&a, &sign(&other, &base))
        .await
        .contains("signature"));
    // Oversized.
    let big = with(&|c| c["pad"] = json!("x".repeat(9000)));
    assert!(refused(&a, &big).await.contains("too large"));
    // Garbage in three parts.
    assert!(refused(&a, "a.b.c").await.contains("header"));
}

#[tokio::test]
async fn rotation_is_followed_and_made_up_kids_cannot_drive_fetches() {
    let (k1, iss, a) = setup().await;
    let k2 = es256("k2");
    // Not published yet: one refetch, then refused.
    assert!(refused(&a, &sign(&k2, &claims(&iss.url)))
        .await
        .contains("unknown"));
    assert_eq!(
        iss.fetches.load(Ordering::SeqCst),
        1,
        "within the interval after discovery"
    );
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert!(refused(&a, &sign(&k2, &claims(&iss.url)))
        .await
        .contains("unknown"));
    assert_eq!(iss.fetches.load(Ordering::SeqCst), 2);
    // A burst of made-up kids within the interval fetches nothing more.
    for i in 0..50 {
        let fake = SigningKey {
            kid: format!("made-up-{i}"),
            ..es256("x")
        };
        assert!(refused(&a, &sign(&fake, &claims(&iss.url)))
            .await
            .contains("unknown"));
    }
    assert_eq!(iss.fetches.load(Ordering::SeqCst), 2);
    // The issuer rotates: k2 published, k1 retired.
    *iss.jwks.write().expect("lock") = json!({ "keys": [k2.jwk.clone()] });
    tokio::time::sleep(Duration::from_millis(1100)).await;
    match verdict(&a, &sign(&k2, &claims(&iss.url))).await {
        Verdict::Accept(g) => assert_eq!(g.caller.principal, "svc-a"),
        other => panic!("{other:?}"),
    }
    assert_eq!(iss.fetches.load(Ordering::SeqCst), 3);
    assert!(refused(&a, &sign(&k1, &claims(&iss.url)))
        .await
        .contains("unknown"));
}

#[tokio::test]
async fn discovery_checks_the_issuer_and_the_scheme() {
    let k = es256("k1");
    let iss = issuer(&[&k]).await;
    // The metadata names another issuer than configured (a trailing slash).
    let e = JwtAuthenticator::discover(JwtConfig::new(format!("{}/", iss.url), vec![AUD.into()]))
        .await
        .expect_err("issuer mismatch");
    assert!(
        e.to_string().contains("no authorization server metadata"),
        "{e}"
    );
    let e = JwtAuthenticator::discover(JwtConfig::new("http://id.example.com", vec![AUD.into()]))
        .await
        .expect_err("plain http");
    assert!(e.to_string().contains("https"), "{e}");
    let mut c = JwtConfig::new(iss.url.clone(), vec![AUD.into()]);
    c.algorithms.push(Algorithm::HS256);
    let e = JwtAuthenticator::discover(c).await.expect_err("hmac");
    assert!(e.to_string().contains("symmetric"), "{e}");
}

#[tokio::test]
async fn rfc_9068_typ_is_checked_when_required() {
    let k = es256("k1");
    let iss = issuer(&[&k]).await;
    let mut c = JwtConfig::new(iss.url.clone(), vec![AUD.into()]);
    c.require_at_jwt = true;
    let a = JwtAuthenticator::discover(c).await.expect("discover");
    assert!(matches!(
        verdict(&a, &sign(&k, &claims(&iss.url))).await,
        Verdict::Accept(_)
    ));
    let mut h = Header::new(Algorithm::ES256);
    h.kid = Some("k1".into());
    let plain = jsonwebtoken::encode(&h, &claims(&iss.url), &k.key).expect("sign");
    assert!(refused(&a, &plain).await.contains("9068"));
}

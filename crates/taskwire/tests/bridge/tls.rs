//! Upstreams and push receivers over TLS with a private CA, and with mutual TLS.

use super::*;

// ---- upstreams over TLS (`a2a+https://`, `a2a+grpcs://`, `mcp+https://`) ----

/// One task through a bridge of upstream `url` (started with `flags` besides):
/// it completes, its text echoed back as the artifact.
pub(crate) async fn one_task_through(url: &str, flags: &[&str]) {
    let mut argv = vec!["--upstream", url];
    argv.extend_from_slice(flags);
    let bridge = serve(&argv).await;
    let text = format!("through {url}");
    let t = task_of(
        a2a_client(&bridge.base)
            .send_text(&text, false)
            .await
            .expect("send")
            .into_inner(),
    );
    assert_eq!(state(&t), pb::TaskState::Completed, "{url}: {t:?}");
    let texts = artifact_texts(&t);
    assert!(texts.iter().any(|(_, x)| x == &text), "{url}: {texts:?}");
    bridge.stop().await;
}

/// A TLS front on 127.0.0.1: a fresh CA signs a certificate for `localhost`
/// and 127.0.0.1; once [`TlsFront::relay_to`] runs, each TLS connection (ALPN
/// `h2` or `http/1.1`) is relayed byte for byte to a plain server.
pub(crate) struct TlsFront {
    listener: tokio::net::TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    port: u16,
    /// The CA certificate, PEM.
    ca_pem: String,
    /// A client certificate the CA signed, and its key, PEM (for
    /// [`TlsFront::bind_mutual`]).
    client_pem: (String, String),
}

impl TlsFront {
    async fn bind() -> Self {
        Self::bind_with(false).await
    }

    /// A front that asks every client for a certificate the CA signed
    /// (mutual TLS) and refuses the handshake without one.
    async fn bind_mutual() -> Self {
        Self::bind_with(true).await
    }

    async fn bind_with(mutual: bool) -> Self {
        use tokio_rustls::rustls;
        let ca_key = rcgen::KeyPair::generate().expect("CA key");
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA");
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "taskwire test CA");
        let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).expect("CA");
        let key = rcgen::KeyPair::generate().expect("key");
        let cert = rcgen::CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()])
            .expect("params")
            .signed_by(&key, &ca)
            .expect("certificate");
        let client_key = rcgen::KeyPair::generate().expect("client key");
        let client_cert = rcgen::CertificateParams::new(vec!["taskwire-bridge".into()])
            .expect("client params")
            .signed_by(&client_key, &ca)
            .expect("client certificate");
        let key_der = rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into());
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .expect("TLS versions");
        let builder = if mutual {
            let mut roots = rustls::RootCertStore::empty();
            roots.add(ca.der().clone()).expect("CA root");
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                std::sync::Arc::new(roots),
                provider,
            )
            .build()
            .expect("client verifier");
            builder.with_client_cert_verifier(verifier)
        } else {
            builder.with_no_client_auth()
        };
        let mut config = builder
            .with_single_cert(vec![cert.der().clone()], key_der)
            .expect("server config");
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        Self {
            listener,
            acceptor: tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(config)),
            port,
            ca_pem: ca.pem(),
            client_pem: (client_cert.pem(), client_key.serialize_pem()),
        }
    }

    /// Writes the CA certificate, the client certificate and its key (PEM)
    /// into `dir`; answers their paths.
    fn write_pems(&self, dir: &std::path::Path) -> (String, String, String) {
        let write = |name: &str, text: &str| {
            let p = dir.join(name);
            std::fs::write(&p, text).expect("write");
            p.to_string_lossy().to_string()
        };
        (
            write("ca.pem", &self.ca_pem),
            write("client.pem", &self.client_pem.0),
            write("client-key.pem", &self.client_pem.1),
        )
    }

    /// Relays to the plain server at `base` (`http://127.0.0.1:PORT`) until
    /// the returned task is aborted.
    fn relay_to(self, base: &str) -> tokio::task::JoinHandle<()> {
        let backend = base.trim_start_matches("http://").to_string();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = self.listener.accept().await {
                let acceptor = self.acceptor.clone();
                let backend = backend.clone();
                tokio::spawn(async move {
                    let mut tls = match acceptor.accept(tcp).into_fallible().await {
                        Ok(tls) => tls,
                        // A refused handshake: the alert is sent; closing
                        // with the client's first request unread would reset
                        // the connection, and a reset can discard the alert
                        // before the client reads it. Close our side, then
                        // read what the client sent until it closes.
                        Err((_, mut tcp)) => {
                            use tokio::io::{AsyncReadExt, AsyncWriteExt};
                            let _ = tcp.shutdown().await;
                            let mut sink = [0u8; 4096];
                            let drain = async {
                                while matches!(tcp.read(&mut sink).await, Ok(n) if n > 0) {}
                            };
                            let _ = tokio::time::timeout(Duration::from_secs(2), drain).await;
                            return;
                        }
                    };
                    let Ok(mut plain) = tokio::net::TcpStream::connect(&backend).await else {
                        return;
                    };
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                });
            }
        })
    }
}

/// A bridge reaches upstreams over TLS, trusting a private CA given with
/// `--upstream-ca-file`: an A2A agent over JSON-RPC (`a2a+https://`, its card
/// naming its https URL) and over gRPC (`a2a+grpcs://`), and an MCP server
/// (`mcp+https://`); each runs a task to its end through the bridge. Without
/// the CA the https upstream's certificate is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstreams_over_tls_with_a_private_ca() {
    let front = TlsFront::bind().await;
    let https = format!("https://localhost:{}", front.port);
    let up = serve(&["--public-url", &https]).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, &front.ca_pem).expect("CA file");
    let ca_arg = ca_file.to_string_lossy().to_string();
    let port = front.port;
    let relay = front.relay_to(&up.base);

    for url in [
        format!("a2a+https://localhost:{port}"),
        format!("a2a+grpcs://localhost:{port}"),
        format!("mcp+https://localhost:{port}/mcp#run_script"),
    ] {
        one_task_through(&url, &["--upstream-ca-file", &ca_arg]).await;
    }

    // Without the CA, the upstream's certificate is not trusted.
    let url = format!("a2a+https://localhost:{port}");
    let err = refused_at_start(&["--upstream", &url]).await;
    assert!(err.to_lowercase().contains("certificate"), "{err}");
    relay.abort();
    up.stop().await;
}

/// A webhook receiver on 127.0.0.1 (plain HTTP, `/hook`) keeping every JSON
/// body POSTed to it; answers its base URL, the bodies, and its task.
pub(crate) async fn push_receiver() -> (
    String,
    std::sync::Arc<std::sync::Mutex<Vec<serde_json::Value>>>,
    tokio::task::JoinHandle<()>,
) {
    let got: std::sync::Arc<std::sync::Mutex<Vec<serde_json::Value>>> = Default::default();
    let keep = got.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |body: axum::body::Bytes| {
            let keep = keep.clone();
            async move {
                if let Ok(v) = serde_json::from_slice(&body) {
                    keep.lock().expect("receiver lock").push(v);
                }
                axum::http::StatusCode::OK
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind receiver");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (base, got, task)
}

/// Runs a task on the taskwire at `base` with a push config for `hook`
/// (blocking SendMessage); answers its id once completed.
pub(crate) async fn task_pushed_to(base: &str, hook: &str, text: &str) -> String {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": {"message": {"messageId": format!("push-{text}"), "role": "ROLE_USER",
            "parts": [{"text": text}]},
            "configuration": {"taskPushNotificationConfig": {"url": hook, "token": "t"}}}});
    let r: serde_json::Value = reqwest::Client::new()
        .post(format!("{base}/a2a"))
        .header("A2A-Version", "1.0")
        .json(&body)
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    assert_eq!(
        r["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{r}"
    );
    r["result"]["task"]["id"]
        .as_str()
        .expect("task id")
        .to_string()
}

/// Serves with `untrusting` flags and with `trusting` ones (besides
/// `--push-allow-private`), runs one task on each pushing to `hook`: the
/// second's completed status arrives, the first's nothing (given as long and
/// more).
pub(crate) async fn pushes_arrive_only_with(
    hook: &str,
    got: &std::sync::Arc<std::sync::Mutex<Vec<serde_json::Value>>>,
    untrusting: &[&str],
    trusting: &[&str],
) {
    let pushed_for = |id: &str| {
        got.lock()
            .expect("receiver lock")
            .iter()
            .filter(|v| v.to_string().contains(id))
            .count()
    };
    fn with<'a>(flags: &[&'a str]) -> Vec<&'a str> {
        let mut v = vec!["--push-allow-private"];
        v.extend_from_slice(flags);
        v
    }
    let refusing = serve(&with(untrusting)).await;
    let refused = task_pushed_to(&refusing.base, hook, "refused").await;
    let delivering = serve(&with(trusting)).await;
    let delivered = task_pushed_to(&delivering.base, hook, "delivered").await;
    common::bridge::eventually("the completed status pushed over https", || {
        got.lock().expect("receiver lock").iter().any(|v| {
            v.to_string().contains(&delivered) && v.to_string().contains("TASK_STATE_COMPLETED")
        })
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(pushed_for(&refused), 0, "delivered with {untrusting:?}");
    assert!(pushed_for(&delivered) >= 1);
    refusing.stop().await;
    delivering.stop().await;
}

/// A2A push notifications reach an `https` receiver whose certificate a
/// private CA signed, when that CA is given with `--push-ca-file` (the same
/// TLS front as the upstreams above, in front of a plain receiver); without
/// it, nothing reaches the receiver. A CA file without a certificate stops
/// `serve` with a usage error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_notifications_over_tls_with_a_private_ca() {
    let (plain, got, receiver) = push_receiver().await;
    let front = TlsFront::bind().await;
    let hook = format!("https://localhost:{}/hook", front.port);
    let dir = tempfile::tempdir().expect("tempdir");
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, &front.ca_pem).expect("CA file");
    let ca_arg = ca_file.to_string_lossy().to_string();
    let relay = front.relay_to(&plain);
    pushes_arrive_only_with(&hook, &got, &[], &["--push-ca-file", &ca_arg]).await;

    // A file without a certificate is refused at start.
    let empty = dir.path().join("empty.pem");
    std::fs::write(&empty, "not a certificate\n").expect("file");
    let err = refused_at_start(&["--push-ca-file", &empty.to_string_lossy()]).await;
    assert!(err.contains("--push-ca-file"), "{err}");
    relay.abort();
    receiver.abort();
}

/// A2A push notifications reach an `https` receiver that requires a client
/// certificate (mutual TLS) when `--push-client-cert` and
/// `--push-client-key` give one its CA signed; with the CA alone, nothing
/// arrives. A key that does not parse stops `serve` with a usage error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_notifications_over_mutual_tls() {
    let (plain, got, receiver) = push_receiver().await;
    let front = TlsFront::bind_mutual().await;
    let hook = format!("https://localhost:{}/hook", front.port);
    let dir = tempfile::tempdir().expect("tempdir");
    let (ca, cert, key) = front.write_pems(dir.path());
    let relay = front.relay_to(&plain);
    pushes_arrive_only_with(
        &hook,
        &got,
        &["--push-ca-file", &ca],
        &[
            "--push-ca-file",
            &ca,
            "--push-client-cert",
            &cert,
            "--push-client-key",
            &key,
        ],
    )
    .await;

    let err = refused_at_start(&["--push-client-cert", &cert, "--push-client-key", &ca]).await;
    assert!(err.contains("--push-client-key"), "{err}");
    assert!(serve_args(&["--push-client-cert", &cert]).is_err());
    relay.abort();
    receiver.abort();
}

/// A bridge presents the client certificate of `--upstream-client-cert` and
/// `--upstream-client-key` to upstreams that require one (mutual TLS), over
/// `a2a+https://`, `a2a+grpcs://` and `mcp+https://`; without it, such an
/// upstream refuses the bridge, which then does not start. A key that does
/// not belong with a certificate file is a usage error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstreams_over_mutual_tls() {
    let front = TlsFront::bind_mutual().await;
    let https = format!("https://localhost:{}", front.port);
    let up = serve(&["--public-url", &https]).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let (ca, cert, key) = front.write_pems(dir.path());
    let port = front.port;
    let relay = front.relay_to(&up.base);

    for url in [
        format!("a2a+https://localhost:{port}"),
        format!("a2a+grpcs://localhost:{port}"),
        format!("mcp+https://localhost:{port}/mcp#run_script"),
    ] {
        let flags = [
            "--upstream-ca-file",
            &ca,
            "--upstream-client-cert",
            &cert,
            "--upstream-client-key",
            &key,
        ];
        one_task_through(&url, &flags).await;
    }

    // Without a client certificate the upstream refuses the bridge. Over TLS
    // 1.3 the client's handshake is done before the server reads its (empty)
    // certificate, so the server's alert races the request: hyper reports it
    // as the alert when the request was sent, and as a connection that
    // closed before the request could be sent ("connection was not ready",
    // the alert unread) when the alert came first (seen under load).
    let url = format!("a2a+https://localhost:{port}");
    let err = refused_at_start(&["--upstream", &url, "--upstream-ca-file", &ca]).await;
    assert!(
        err.contains("discovering the upstream agent")
            && (err.contains("CertificateRequired") || err.contains("connection was not ready")),
        "{err}"
    );

    // A certificate with a key that is not one is refused at start.
    let err = refused_at_start(&[
        "--upstream",
        &url,
        "--upstream-client-cert",
        &cert,
        "--upstream-client-key",
        &ca,
    ])
    .await;
    assert!(err.contains("--upstream-client-key"), "{err}");
    // The key alone is not a flag set.
    assert!(serve_args(&["--upstream", &url, "--upstream-client-key", &key]).is_err());
    relay.abort();
    up.stop().await;
}

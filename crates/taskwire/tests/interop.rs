//! Interop through the listener of `taskwire serve` itself (its HTTP/1.1 and its
//! own HTTP/2 server), with two real gRPC stacks:
//! - the official Python `a2a-sdk` client (installed by `.ci/setup-a2a.sh`; its
//!   gRPC transport is grpc-python, the C-core HTTP/2 stack) runs the A2A
//!   interop script over JSON-RPC, over gRPC and over HTTP+JSON;
//! - the official Node.js client `@grpc/grpc-js` (installed by
//!   `.ci/setup-grpc-js.sh`; Node's HTTP/2, nghttp2) runs `interop/grpc_js.js`;
//!
//! and with `h2` (hyper-h2, a Python HTTP/2 library that validates every frame
//! it receives; in the same virtualenv) driving `interop/hyper_h2.py`: twenty
//! concurrent 50 KB requests and answers through a 1,000-byte stream window.
//!
//! Each is `#[ignore]`d (plain `cargo test` reports it as ignored); `.ci/test`
//! runs them with `--include-ignored`, where a missing client is a failure.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

fn python() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("TASKWIRE_A2A_PYTHON") {
        let p = PathBuf::from(p);
        return p.exists().then_some(p);
    }
    let p =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/a2a-interop-venv/bin/python");
    p.exists().then_some(p)
}

/// Runs `taskwire serve` (memory store, `extra` flags) while the clients that
/// `clients` makes for its address run in turn; each must exit 0 and print
/// `PASS <marker>`.
async fn against_serve(
    extra: &[&str],
    clients: impl FnOnce(SocketAddr) -> Vec<(tokio::process::Command, String)>,
) {
    let server = common::build_serve(extra).await;
    let addr = server.local_addr();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let run = tokio::spawn(server.run(stopped));
    for (mut cmd, marker) in clients(addr) {
        let out = tokio::time::timeout(Duration::from_secs(120), cmd.kill_on_drop(true).output())
            .await
            .unwrap_or_else(|_| panic!("{marker}: timed out"))
            .unwrap_or_else(|e| panic!("{marker}: does not run: {e}"));
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{marker} failed:\n{stdout}\n{stderr}");
        assert!(stdout.contains(&format!("PASS {marker}")), "{stdout}");
        eprintln!("{}", stdout.trim());
    }
    stop.send(()).unwrap();
    run.await.unwrap().unwrap();
}

fn here(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

#[tokio::test]
#[ignore = "interop: needs the Python a2a-sdk (.ci/setup-a2a.sh); .ci/test runs it with --include-ignored"]
async fn python_sdk_against_taskwire_serve() {
    let Some(py) = python() else {
        panic!(
            "the Python a2a-sdk is not installed (run .ci/setup-a2a.sh or set TASKWIRE_A2A_PYTHON)"
        );
    };
    against_serve(&["--push-allow-private"], |addr| {
        ["JSONRPC", "GRPC", "HTTP+JSON"]
            .into_iter()
            .map(|binding| {
                let mut cmd = tokio::process::Command::new(&py);
                cmd.arg(here("../taskwire-a2a/interop/interop.py"))
                    .arg(format!("http://{addr}"))
                    .arg(binding);
                (cmd, binding.to_string())
            })
            .collect()
    })
    .await;
}

fn grpc_js_dir() -> Option<PathBuf> {
    let dir = std::env::var("TASKWIRE_GRPC_JS_DIR").map_or_else(
        |_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/grpc-js-interop"),
        PathBuf::from,
    );
    let modules = dir.join("node_modules");
    modules
        .join("@grpc/grpc-js/package.json")
        .exists()
        .then_some(modules)
}

fn adk_python() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("TASKWIRE_ADK_PYTHON") {
        let p = PathBuf::from(p);
        return p.exists().then_some(p);
    }
    let p =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/adk-interop-venv/bin/python");
    p.exists().then_some(p)
}

/// Google ADK's `RemoteA2aAgent(agent_card=URL)` (issue 42): with the card's
/// default gRPC url (`host:port`, what the SDKs' gRPC clients dial) it refuses
/// the card, as it refuses any interface url that is not http(s) on the
/// card's origin; with `--a2a-card-grpc-url origin` or `omit` it loads the
/// card and a run through ADK's Runner gets the echo back.
#[tokio::test]
#[ignore = "interop: needs google-adk (.ci/setup-adk.sh); .ci/test runs it with --include-ignored"]
async fn google_adk_remote_agent_loads_the_card_by_url() {
    let Some(py) = adk_python() else {
        panic!("google-adk is not installed (run .ci/setup-adk.sh or set TASKWIRE_ADK_PYTHON)");
    };
    for (style, expect) in [
        ("host-port", "refused"),
        ("origin", "works"),
        ("omit", "works"),
    ] {
        against_serve(&["--a2a-card-grpc-url", style], |addr| {
            let mut cmd = tokio::process::Command::new(&py);
            cmd.arg(here("interop/adk_remote.py"))
                .arg(format!("http://{addr}"))
                .arg(expect);
            vec![(cmd, format!("adk-{expect}"))]
        })
        .await;
    }
}

#[tokio::test]
#[ignore = "interop: needs @grpc/grpc-js (.ci/setup-grpc-js.sh); .ci/test runs it with --include-ignored"]
async fn grpc_js_against_taskwire_serve() {
    let Some(modules) = grpc_js_dir() else {
        panic!(
            "@grpc/grpc-js is not installed (run .ci/setup-grpc-js.sh or set TASKWIRE_GRPC_JS_DIR)"
        );
    };
    against_serve(&[], |addr| {
        let mut cmd = tokio::process::Command::new("node");
        cmd.arg(here("interop/grpc_js.js"))
            .arg(addr.to_string())
            .arg(here("../../proto/a2a.proto"))
            .env("NODE_PATH", &modules);
        vec![(cmd, "grpc-js".to_string())]
    })
    .await;
}

#[tokio::test]
#[ignore = "interop: needs the Python h2 package (.ci/setup-a2a.sh); .ci/test runs it with --include-ignored"]
async fn hyper_h2_against_taskwire_serve() {
    let Some(py) = python() else {
        panic!("the interop virtualenv is not installed (run .ci/setup-a2a.sh or set TASKWIRE_A2A_PYTHON)");
    };
    let has_h2 = std::process::Command::new(&py)
        .args(["-c", "import h2"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        has_h2,
        "the Python h2 package is not installed (run .ci/setup-a2a.sh)"
    );
    against_serve(&[], |addr| {
        let mut cmd = tokio::process::Command::new(&py);
        cmd.arg(here("interop/hyper_h2.py"))
            .arg(addr.port().to_string());
        vec![(cmd, "hyper-h2".to_string())]
    })
    .await;
}

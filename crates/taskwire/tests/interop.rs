//! Interop through the listener of `taskwire serve` itself (its HTTP/1.1 and its
//! own HTTP/2 server), with two real gRPC stacks:
//! - the official Python `a2a-sdk` client (installed by `.ci/setup-a2a.sh`; its
//!   gRPC transport is grpc-python, the C-core HTTP/2 stack) runs the A2A
//!   interop script over JSON-RPC and over gRPC;
//! - the official Node.js client `@grpc/grpc-js` (installed by
//!   `.ci/setup-grpc-js.sh`; Node's HTTP/2, nghttp2) runs `interop/grpc_js.js`;
//!
//! and with `h2` (hyper-h2, a Python HTTP/2 library that validates every frame
//! it receives; in the same virtualenv) driving `interop/hyper_h2.py`: twenty
//! concurrent 50 KB requests and answers through a 1,000-byte stream window.
//!
//! Each is skipped, with a message, when its client is not installed.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

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

#[tokio::test]
async fn python_sdk_against_taskwire_serve() {
    let Some(py) = python() else {
        eprintln!(
            "skipped: the Python a2a-sdk is not installed (run .ci/setup-a2a.sh or set TASKWIRE_A2A_PYTHON)"
        );
        return;
    };
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../taskwire-a2a/interop/interop.py");
    let server = common::build_serve(&["--push-allow-private"]).await;
    let base = format!("http://{}", server.local_addr());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let run = tokio::spawn(server.run(stopped));
    for binding in ["JSONRPC", "GRPC"] {
        let out = tokio::time::timeout(
            Duration::from_secs(120),
            tokio::process::Command::new(&py)
                .arg(&script)
                .arg(&base)
                .arg(binding)
                .kill_on_drop(true)
                .output(),
        )
        .await
        .expect("interop script timed out")
        .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "interop over {binding} failed:\n{stdout}\n{stderr}"
        );
        assert!(stdout.contains(&format!("PASS {binding}")), "{stdout}");
        eprintln!("{}", stdout.trim());
    }
    stop.send(()).unwrap();
    run.await.unwrap().unwrap();
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

#[tokio::test]
async fn grpc_js_against_taskwire_serve() {
    let Some(modules) = grpc_js_dir() else {
        eprintln!("skipped: @grpc/grpc-js is not installed (run .ci/setup-grpc-js.sh or set TASKWIRE_GRPC_JS_DIR)");
        return;
    };
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let server = common::build_serve(&[]).await;
    let addr = server.local_addr().to_string();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let run = tokio::spawn(server.run(stopped));
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::process::Command::new("node")
            .arg(root.join("interop/grpc_js.js"))
            .arg(&addr)
            .arg(root.join("../../proto/a2a.proto"))
            .env("NODE_PATH", &modules)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("grpc-js script timed out")
    .expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "grpc-js interop failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("PASS grpc-js"), "{stdout}");
    eprintln!("{}", stdout.trim());
    stop.send(()).unwrap();
    run.await.unwrap().unwrap();
}

#[tokio::test]
async fn hyper_h2_against_taskwire_serve() {
    let Some(py) = python() else {
        eprintln!("skipped: the interop virtualenv is not installed (run .ci/setup-a2a.sh or set TASKWIRE_A2A_PYTHON)");
        return;
    };
    let has_h2 = std::process::Command::new(&py)
        .args(["-c", "import h2"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_h2 {
        eprintln!("skipped: the Python h2 package is not installed (run .ci/setup-a2a.sh)");
        return;
    }
    let server = common::build_serve(&[]).await;
    let port = server.local_addr().port().to_string();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let run = tokio::spawn(server.run(stopped));
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::process::Command::new(&py)
            .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("interop/hyper_h2.py"))
            .arg(&port)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("hyper-h2 script timed out")
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "hyper-h2 interop failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("PASS hyper-h2"), "{stdout}");
    eprintln!("{}", stdout.trim());
    stop.send(()).unwrap();
    run.await.unwrap().unwrap();
}

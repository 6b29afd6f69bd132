//! Interop: the official Python `a2a-sdk` client (installed by `.ci/setup-a2a.sh`)
//! against this server over JSON-RPC, gRPC and HTTP+JSON on one listener. `#[ignore]`d:
//! `.ci/test` runs it with `--include-ignored`, where a missing SDK is a failure.

#![allow(clippy::unwrap_used, reason = "test helpers")]

#[path = "../../taskwire-a2a/tests/common/mod.rs"]
mod common;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use taskwire_core::ScriptedAgent;
use taskwire_grpc::GrpcAdapter;

fn python() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("TASKWIRE_A2A_PYTHON") {
        let p = PathBuf::from(p);
        return p.exists().then_some(p);
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let p = root.join("target/a2a-interop-venv/bin/python");
    p.exists().then_some(p)
}

#[tokio::test]
#[ignore = "interop: needs the Python a2a-sdk (.ci/setup-a2a.sh); .ci/test runs it with --include-ignored"]
async fn python_sdk_over_jsonrpc_grpc_and_http_json() {
    let Some(py) = python() else {
        panic!(
            "the Python a2a-sdk is not installed (run .ci/setup-a2a.sh or set TASKWIRE_A2A_PYTHON)"
        );
    };
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../taskwire-a2a/interop/interop.py");
    let s = common::start_with(Arc::new(ScriptedAgent::new()), common::test_config(), |a| {
        GrpcAdapter::new(a.service().clone()).routes()
    })
    .await;
    for binding in ["JSONRPC", "GRPC", "HTTP+JSON"] {
        let out = tokio::time::timeout(
            Duration::from_secs(120),
            tokio::process::Command::new(&py)
                .arg(&script)
                .arg(&s.base)
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
    s.stop().await;
}

//! Interop with the official TypeScript SDK (`@ag-ui/client`, `@ag-ui/core`,
//! `@ag-ui/proto` 1.0): runs interop/interop.mjs with node against a served
//! adapter. Needs .ci/setup-agui.sh to have run, so it is `#[ignore]`d: plain
//! `cargo test` reports it as ignored, and `.ci/test` runs it with
//! `--include-ignored`, where a missing client is a failure.

mod common;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use common::Env;

fn node_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("TASKWIRE_AGUI_NODE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/agui-interop")
        });
    dir.join("node_modules/@ag-ui/client/package.json")
        .exists()
        .then_some(dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "interop: needs @ag-ui/client (.ci/setup-agui.sh); .ci/test runs it with --include-ignored"]
async fn typescript_client_interop() {
    let Some(dir) = node_dir() else {
        panic!(
            "@ag-ui/client is not installed (run .ci/setup-agui.sh or set TASKWIRE_AGUI_NODE_DIR)"
        );
    };
    let node_ok = tokio::process::Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .await
        .is_ok_and(|s| s.success());
    assert!(node_ok, "node is not on PATH");
    let env = Env::start().await;
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("interop/interop.mjs");
    let out = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::process::Command::new("node")
            .arg(&script)
            .arg(format!("http://{}", env.addr))
            .env("TASKWIRE_AGUI_NODE_DIR", &dir)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the interop script timed out")
    .expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    eprintln!("{stderr}");
    env.stop().await;
    assert!(
        out.status.success(),
        "interop script failed:\n{stdout}\n{stderr}"
    );
}

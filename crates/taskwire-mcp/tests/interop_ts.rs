//! Interop with the official TypeScript SDK `@modelcontextprotocol/sdk` 1.x as the
//! client of the 2025-11-25 experimental tasks: call as a task, poll, get the
//! result, list, cancel, an unknown id, and an `ask` answered through elicitation
//! over `tasks/result`. The SDK is installed by `.ci/setup-mcp.sh` into
//! `target/mcp-interop` (or `$TASKWIRE_MCP_TS_SDK_DIR`); without it, or without
//! `node`, it fails; it is `#[ignore]`d, and `.ci/test` runs it with
//! `--include-ignored`.

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::Server;

fn sdk_dir() -> PathBuf {
    match std::env::var_os("TASKWIRE_MCP_TS_SDK_DIR") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/mcp-interop"),
    }
}

#[tokio::test]
#[ignore = "interop: needs @modelcontextprotocol/sdk (.ci/setup-mcp.sh); .ci/test runs it with --include-ignored"]
async fn typescript_sdk_experimental_tasks() {
    let dir = sdk_dir();
    let marker = dir.join("node_modules/@modelcontextprotocol/sdk/package.json");
    assert!(
        marker.exists(),
        "@modelcontextprotocol/sdk is not installed at {} (run .ci/setup-mcp.sh)",
        dir.display()
    );
    let node_ok = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(node_ok, "`node` is not on PATH (run .ci/setup-mcp.sh)");
    let s = Server::start().await;
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("interop/ts_tasks.mjs");
    let out = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::process::Command::new("node")
            .arg(&script)
            .arg(&s.url)
            .arg(&dir)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the TypeScript interop script finished within 120 s")
    .expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "TypeScript interop failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    s.shutdown().await;
}

//! End to end: the real `taskwire` binary, started, probed over HTTP, and stopped
//! with a signal.

use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

const BIN: &str = env!("CARGO_BIN_EXE_taskwire");

/// A `taskwire` command with no TASKWIRE_* variable inherited, stderr to a file.
fn taskwire(args: &[&str], dir: &Path) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .current_dir(dir)
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(dir.join("stderr.log")).expect("stderr file"))
        .kill_on_drop(true);
    for (k, _) in std::env::vars() {
        if k.starts_with("TASKWIRE_") {
            cmd.env_remove(k);
        }
    }
    cmd
}

fn stderr_of(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("stderr.log")).unwrap_or_default()
}

/// Waits for the `listening on ADDR` line and returns the address.
async fn listening_on(child: &mut Child, dir: &Path) -> String {
    let stdout = child.stdout.take().expect("stdout piped");
    let mut lines = BufReader::new(stdout).lines();
    let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .unwrap_or_else(|_| panic!("no address line; stderr:\n{}", stderr_of(dir)))
        .expect("read stdout")
        .unwrap_or_else(|| panic!("stdout closed; stderr:\n{}", stderr_of(dir)));
    line.strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_string()
}

fn signal(child: &Child, sig: libc::c_int) {
    let pid = child.id().expect("running") as libc::pid_t;
    // SAFETY: kill(2) on the pid of our own child, which has not been reaped yet.
    let rc = unsafe { libc::kill(pid, sig) };
    assert_eq!(rc, 0, "kill failed");
}

async fn exit_of(child: &mut Child) -> ExitStatus {
    tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("exits in time")
        .expect("wait")
}

#[tokio::test]
async fn serve_probes_and_exits_zero_on_sigterm() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = taskwire(
        &["serve", "--listen", "127.0.0.1:0", "--store", "memory://"],
        dir.path(),
    )
    .spawn()
    .expect("spawn");
    let addr = listening_on(&mut child, dir.path()).await;
    assert!(
        addr.starts_with("127.0.0.1:") && !addr.ends_with(":0"),
        "{addr}"
    );

    let get = |path: &str| reqwest::get(format!("http://{addr}{path}"));
    let r = get("/healthz").await.expect("healthz");
    assert_eq!(r.status(), 200);
    assert_eq!(r.text().await.expect("body"), "ok");
    assert_eq!(get("/readyz").await.expect("readyz").status(), 200);
    let metrics = get("/metrics")
        .await
        .expect("metrics")
        .text()
        .await
        .expect("body");
    for name in [
        "taskwire_lease_expiries_total 0",
        "taskwire_queue_depth 0",
        "taskwire_tasks{state=\"submitted\"} 0",
        "taskwire_http_request_duration_seconds_bucket",
    ] {
        assert!(metrics.contains(name), "{name} missing:\n{metrics}");
    }
    assert_eq!(get("/nothing-here").await.expect("404").status(), 404);

    signal(&child, libc::SIGTERM);
    let status = exit_of(&mut child).await;
    let log = stderr_of(dir.path());
    assert!(status.success(), "exit {status:?}; stderr:\n{log}");
    assert!(log.contains("SIGTERM received"), "{log}");
    assert!(log.contains("taskwire stopped"), "{log}");
}

#[tokio::test]
async fn default_sqlite_store_and_ctrl_c() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = taskwire(
        &["serve", "--listen", "127.0.0.1:0", "--log-format", "json"],
        dir.path(),
    )
    .spawn()
    .expect("spawn");
    let addr = listening_on(&mut child, dir.path()).await;
    let r = reqwest::get(format!("http://{addr}/readyz"))
        .await
        .expect("readyz");
    assert_eq!(r.status(), 200);
    assert!(
        dir.path().join("taskwire.db").exists(),
        "default store file"
    );
    signal(&child, libc::SIGINT);
    let status = exit_of(&mut child).await;
    let log = stderr_of(dir.path());
    assert!(status.success(), "exit {status:?}; stderr:\n{log}");
    let first = log.lines().next().expect("a log line");
    let json: serde_json::Value = serde_json::from_str(first).expect("json logs");
    assert!(json.get("level").is_some(), "{first}");
}

#[tokio::test]
async fn non_loopback_without_auth_is_refused_unless_insecure() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cmd = taskwire(&["serve", "--store", "memory://"], dir.path());
    cmd.env("TASKWIRE_LISTEN", "0.0.0.0:0");
    let status = exit_of(&mut cmd.spawn().expect("spawn")).await;
    let log = stderr_of(dir.path());
    assert_eq!(status.code(), Some(1), "stderr:\n{log}");
    assert!(log.contains("refusing to listen on 0.0.0.0:0"), "{log}");
    assert!(log.contains("--insecure-no-auth"), "{log}");

    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = taskwire(
        &[
            "serve",
            "--listen",
            "0.0.0.0:0",
            "--store",
            "memory://",
            "--insecure-no-auth",
        ],
        dir.path(),
    )
    .spawn()
    .expect("spawn");
    let addr = listening_on(&mut child, dir.path()).await;
    let port = addr.rsplit(':').next().expect("port");
    let r = reqwest::get(format!("http://127.0.0.1:{port}/healthz"))
        .await
        .expect("healthz");
    assert_eq!(r.status(), 200);
    signal(&child, libc::SIGTERM);
    assert!(exit_of(&mut child).await.success());
    assert!(stderr_of(dir.path()).contains("WITHOUT authentication"));
}

#[tokio::test]
async fn configuration_errors_exit_nonzero_with_a_message() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("tokens"), "good alice\nbad\n").expect("write");
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str);
    let cases: [Case<'_>; 5] = [
        (
            &["serve", "--store", "memory://"],
            &[("TASKWIRE_AGENT", "nope")],
            "unknown agent \"nope\"",
        ),
        (
            &["serve", "--store", "redis://x"],
            &[],
            "unsupported store URL \"redis://x\"",
        ),
        (
            &["serve", "--store", "memory://", "--auth-tokens", "tokens"],
            &[],
            "line 2: expected `TOKEN PRINCIPAL [TENANT]`",
        ),
        (
            &["serve", "--store", "memory://", "--auth-tokens", "missing"],
            &[],
            "cannot read auth token file missing",
        ),
        (
            &[
                "serve",
                "--store",
                "memory://",
                "--max-concurrent-turns",
                "0",
            ],
            &[],
            "--max-concurrent-turns 0 runs no turns on this node",
        ),
    ];
    for (args, env, expected) in cases {
        let mut cmd = taskwire(args, dir.path());
        cmd.envs(env.iter().copied());
        let status = exit_of(&mut cmd.spawn().expect("spawn")).await;
        let log = stderr_of(dir.path());
        assert_eq!(status.code(), Some(1), "{args:?}: {log}");
        assert!(
            log.contains(expected),
            "{args:?}: expected {expected:?} in:\n{log}"
        );
    }
}

/// SIGTERM closes the SQLite store: the writer drains, checkpoints the log into
/// the database file and closes, so the log and the shared-memory file are gone
/// once the process has exited, and the task is in the database file alone.
#[tokio::test]
async fn sigterm_closes_the_sqlite_store() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = taskwire(
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--store",
            "sqlite://tasks.db",
        ],
        dir.path(),
    )
    .spawn()
    .expect("spawn");
    let addr = listening_on(&mut child, dir.path()).await;
    let sent: serde_json::Value = reqwest::Client::new()
        .post(format!("http://{addr}/a2a"))
        .header("A2A-Version", "1.0")
        .json(&serde_json::json!({
            "jsonrpc": "2.0", "id": 1, "method": "SendMessage",
            "params": {"message": {"messageId": "m-close-1", "role": "ROLE_USER", "parts": [{"text": "kept"}]}}
        }))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("send json");
    let state = &sent["result"]["task"]["status"]["state"];
    assert_eq!(state, "TASK_STATE_COMPLETED", "{sent}");
    let side = |suffix: &str| dir.path().join(format!("tasks.db{suffix}"));
    assert!(side("-wal").exists(), "the log exists while serving");

    signal(&child, libc::SIGTERM);
    let status = exit_of(&mut child).await;
    let log = stderr_of(dir.path());
    assert!(status.success(), "exit {status:?}; stderr:\n{log}");
    assert!(
        !side("-wal").exists(),
        "the log remains after SIGTERM; stderr:\n{log}"
    );
    assert!(
        !side("-shm").exists(),
        "the shared-memory file remains; stderr:\n{log}"
    );
    assert!(
        log.contains("sqlite store closed and checkpointed"),
        "{log}"
    );

    // Served again, the file holds the completed task.
    let mut child = taskwire(
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--store",
            "sqlite://tasks.db",
        ],
        dir.path(),
    )
    .spawn()
    .expect("spawn");
    let addr = listening_on(&mut child, dir.path()).await;
    let id = sent["result"]["task"]["id"].as_str().expect("task id");
    let got: serde_json::Value = reqwest::Client::new()
        .post(format!("http://{addr}/a2a"))
        .header("A2A-Version", "1.0")
        .json(&serde_json::json!({
            "jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": id}
        }))
        .send()
        .await
        .expect("get")
        .json()
        .await
        .expect("get json");
    assert_eq!(
        got["result"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{got}"
    );
    signal(&child, libc::SIGTERM);
    assert!(exit_of(&mut child).await.success());
}

/// A database file that exists without a schema (its creation was cut short, as
/// by a power loss before the first start finished) is recreated, with a warning
/// in the log; a file taskwire created itself opens without one.
#[tokio::test]
async fn a_database_file_without_a_schema_is_recreated_with_a_warning() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("tasks.db"), b"").expect("empty file");
    let args = [
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--store",
        "sqlite://tasks.db",
    ];
    for (run, warned) in [(1, true), (2, false)] {
        let mut child = taskwire(&args, dir.path()).spawn().expect("spawn");
        let _ = listening_on(&mut child, dir.path()).await;
        signal(&child, libc::SIGTERM);
        let status = exit_of(&mut child).await;
        let log = stderr_of(dir.path());
        assert!(status.success(), "exit {status:?}; stderr:\n{log}");
        assert_eq!(
            log.contains("the database file exists but has no schema"),
            warned,
            "run {run}:\n{log}"
        );
    }
}

//! `taskwire conformance` against an in-process `taskwire serve` (memory store,
//! two bearer-token principals, every adapter): the whole suite passes on every
//! protocol with an empty baseline; a stale baseline entry fails the run; the
//! JUnit and JSON outputs are well-formed.

use std::io::Write;
use std::process::Stdio;

mod common;

use serde_json::Value;
use taskwire_conformance::report::Verdict;
use taskwire_conformance::{Baseline, Config, Protocol};

const TOKEN: &str = "conformance-alice-token";
const TOKEN2: &str = "conformance-bob-token";

struct Running {
    base: String,
    _stop: tokio::sync::oneshot::Sender<()>,
    _dir: tempfile::TempDir,
}

async fn serve() -> Running {
    let dir = tempfile::tempdir().expect("tmp");
    let tokens = dir.path().join("tokens");
    let mut f = std::fs::File::create(&tokens).expect("token file");
    writeln!(f, "{TOKEN} alice\n{TOKEN2} bob").expect("write tokens");
    drop(f);
    let tokens = tokens.display().to_string();
    let server = common::build_serve(&["--auth-tokens", &tokens]).await;
    let base = format!("http://{}", server.local_addr());
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(server.run(async move {
        let _ = rx.await;
    }));
    Running {
        base,
        _stop: tx,
        _dir: dir,
    }
}

fn config(base: &str) -> Config {
    let mut c = Config::new(base).expect("built-in scenarios");
    c.token = Some(TOKEN.into());
    c.token2 = Some(TOKEN2.into());
    c.request_timeout = std::time::Duration::from_secs(20);
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_whole_suite_passes_against_taskwire_serve_on_every_protocol() {
    let srv = serve().await;
    let c = config(&srv.base);
    let report = taskwire_conformance::run(&c).await.expect("the suite runs");
    let text = report.render_text(&Baseline::default());
    // Every protocol is discovered and used.
    for o in &report.offers {
        assert!(o.skipped.is_none(), "{:?} skipped: {text}", o.protocol);
    }
    assert!(
        report.scripted_agent.detected,
        "scripted agent not detected"
    );
    // Every cell passes, except the documented not-applicable ones.
    for cell in &report.cells {
        match &cell.verdict {
            Verdict::Pass => {}
            Verdict::Skip(r) => assert!(
                r.starts_with("not applicable"),
                "{} × {} skipped: {r}\n{text}",
                cell.scenario,
                cell.protocol
            ),
            Verdict::Fail(f) => panic!(
                "{} × {} failed: {f:?}\n{text}",
                cell.scenario, cell.protocol
            ),
        }
    }
    let scenarios = c.scenarios.len();
    assert_eq!(report.cells.len(), scenarios * Protocol::ALL.len());
    assert!(!report.failed(), "{text}");
    // Each protocol passed something of each kind: cross scenarios too.
    for p in Protocol::ALL {
        for s in [
            "ask-answer",
            "cross-ask",
            "cancel-race",
            "foreign-task",
            "malformed",
        ] {
            assert!(
                report
                    .cells
                    .iter()
                    .any(|c| c.scenario == s && c.protocol == p && c.verdict == Verdict::Pass),
                "{s} × {p} did not pass\n{text}"
            );
        }
    }
    // MCP 2025-11-25 skips only what that revision cannot express; in the cross
    // scenarios started on mcp it is the next protocol, so it answers, authorises,
    // approves and cancels there (those cells passed above).
    let mut skipped: Vec<&str> = report
        .cells
        .iter()
        .filter(|c| c.protocol == Protocol::Mcp2025 && matches!(c.verdict, Verdict::Skip(_)))
        .map(|c| c.scenario.as_str())
        .collect();
    skipped.sort_unstable();
    assert_eq!(
        skipped,
        ["create-retry", "reconnect", "terminal-message"],
        "{text}"
    );
    // MCP 2026-07-28 resumes a dropped stream from its cursor through
    // tasks/stream (SEP-2694).
    assert!(
        report.cells.iter().any(|c| c.scenario == "reconnect"
            && c.protocol == Protocol::Mcp
            && c.verdict == Verdict::Pass),
        "reconnect × mcp did not pass\n{text}"
    );
    // Messages were validated against schemas/.
    assert!(report.schemas.validated > 0, "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_principal_is_needed_for_the_foreign_task_scenario() {
    let srv = serve().await;
    let mut c = config(&srv.base);
    c.token2 = None;
    c.only = vec!["foreign-task".into()];
    c.protocols = vec![Protocol::A2a, Protocol::Cas];
    let report = taskwire_conformance::run(&c).await.expect("runs");
    assert_eq!(report.cells.len(), 2);
    for cell in &report.cells {
        match &cell.verdict {
            Verdict::Skip(r) => assert!(r.contains("second principal"), "{r}"),
            other => panic!("expected a skip, got {other:?}"),
        }
    }
    assert!(!report.failed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_passing_cell_in_the_baseline_is_stale_and_fails_the_run() {
    let srv = serve().await;
    let mut c = config(&srv.base);
    c.only = vec!["unknown-id".into()];
    c.baseline = Baseline::parse(
        "test",
        r#"[{"scenario": "unknown-id", "protocol": "cas", "reason": "pretend"}]"#,
    )
    .expect("baseline");
    let report = taskwire_conformance::run(&c).await.expect("runs");
    assert!(report.failed());
    assert_eq!(report.judgement.stale.len(), 1);
    assert!(report
        .render_text(&c.baseline)
        .contains("stale baseline entry: unknown-id × cas"));
}

/// Runs the binary against the in-process server.
async fn binary(args: &[&str]) -> (i32, String, String) {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_taskwire"))
        .arg("conformance")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .await
        .expect("run taskwire conformance");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_exits_non_zero_on_a_stale_baseline_and_writes_junit_and_json() {
    let srv = serve().await;
    let dir = tempfile::tempdir().expect("tmp");
    let stale = dir.path().join("stale.json");
    std::fs::write(
        &stale,
        r#"[{"scenario": "create", "protocol": "a2a", "reason": "listed although it passes"}]"#,
    )
    .expect("write");
    let stale = stale.display().to_string();
    let common = [
        "--target",
        &srv.base,
        "--token",
        TOKEN,
        "--only",
        "create,unknown-id",
    ];

    // An empty baseline: exit 0, the matrix on stdout, progress on stderr.
    let (code, out, err) = binary(&common).await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("unknown-id"), "{out}");
    assert!(err.contains("[1/2] create"), "{err}");

    // A passing cell listed in the baseline: exit 1, named as stale.
    let mut args = common.to_vec();
    args.extend(["--baseline", &stale]);
    let (code, out, err) = binary(&args).await;
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(out.contains("stale baseline entry: create × a2a"), "{out}");

    // JSON on stdout and JUnit in a file, both well-formed.
    let junit = dir.path().join("junit.xml");
    let junit_s = junit.display().to_string();
    let mut args = common.to_vec();
    args.extend(["--json", "--junit", &junit_s, "--quiet"]);
    let (code, out, err) = binary(&args).await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(err.is_empty(), "--quiet prints nothing on stderr: {err}");
    let j: Value = serde_json::from_str(&out).expect("stdout is JSON");
    let cells = j["cells"].as_array().expect("cells");
    // Two scenarios on every protocol, mcp-2025 included.
    let n = 2 * Protocol::ALL.len();
    assert_eq!(cells.len(), n);
    assert!(cells.iter().any(|c| c["protocol"] == "mcp-2025"), "{out}");
    assert!(cells
        .iter()
        .all(|c| c["verdict"] == "pass" || c["verdict"] == "skip"));
    assert_eq!(j["judgement"]["stale"], serde_json::json!([]));
    let x = std::fs::read_to_string(&junit).expect("junit written");
    assert!(x.starts_with("<?xml version=\"1.0\""), "{x}");
    assert_eq!(x.matches("<testsuites").count(), 1);
    assert_eq!(x.matches("</testsuites>").count(), 1);
    let suites = Protocol::ALL.len();
    assert_eq!(x.matches("<testsuite ").count(), suites, "{x}");
    assert_eq!(x.matches("</testsuite>").count(), suites, "{x}");
    assert!(x.contains("mcp-2025"), "{x}");
    assert_eq!(x.matches("<testcase ").count(), n, "{x}");
    assert!(x.contains(&format!("tests=\"{n}\" failures=\"0\"")), "{x}");

    // A target where nothing answers: exit 2, naming each protocol's reason.
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let a = l.local_addr().expect("addr");
        drop(l);
        format!("http://{a}")
    };
    let (code, out, err) = binary(&["--target", &dead, "--quiet"]).await;
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(
        err.contains("offers none of the selected protocols"),
        "{err}"
    );
    assert!(err.contains("a2a: no agent card"), "{err}");
    assert!(
        err.contains("mcp-2025: MCP initialize (2025-11-25)"),
        "{err}"
    );

    // A target that is not a url: exit 2 with the reason.
    let (code, out, err) = binary(&["--target", "not-a-url"]).await;
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(err.contains("expected an http"), "{err}");
}

//! The documentation's shell examples, run: every `sh` block of README.md and
//! docs/*.md that talks to a server (a URL on port 7420 outside a comment) is run,
//! command by command, against a real `taskwire serve` on an ephemeral port, so an
//! example that drifts from the code fails the test suite.
//!
//! How a block is run:
//! - `127.0.0.1:7420` and `localhost:7420` become the test server's address; a
//!   block that starts its own server (`… serve … &`) gets a free port of its own
//!   and its background commands are killed when the block ends; port 7421 (a
//!   second server, the upstream of a bridge) becomes another free port.
//! - `cargo run [--release] -p taskwire --`, `./target/{debug,release}/taskwire`
//!   become the binary under test; `cargo run … --example NAME --` the example
//!   built beside it (`cargo test --workspace` builds the examples); `cargo build`
//!   lines are skipped (the test's own build did that); `/tmp/` is a temporary
//!   directory.
//! - `<id>`, `$ID` and `$REV` are the task id (`taskId`, else `id`) and `revision`
//!   found in the JSON answer of the latest command that had one; shell variable
//!   assignments (`META='…'`) carry over to the commands after them.
//! - A command fails the test if it exits non-zero (with `set -o pipefail`; `curl`
//!   gets `--fail-with-body`, so an HTTP error status counts), if its answer holds
//!   a JSON-RPC `error` or an AG-UI `RUN_ERROR`, or if it does not show the
//!   `"key":"value"` pairs of a following `# → …` comment line (re-run for up to
//!   10 s first: the docs show the settled answer).

use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_taskwire");
/// The port the documentation uses.
const DOC_PORT: &str = "7420";
/// The port of a second server a block starts (the upstream of a bridge); each
/// block gets a free port for it too.
const DOC_SECOND_PORT: &str = "7421";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One fenced `sh` block: where it is and its lines.
struct Block {
    place: String,
    lines: Vec<String>,
}

fn shell_blocks(file: &Path) -> Vec<Block> {
    let text = std::fs::read_to_string(file).expect("read doc");
    let name = file
        .strip_prefix(root())
        .unwrap_or(file)
        .display()
        .to_string();
    let mut blocks = Vec::new();
    let mut current: Option<Block> = None;
    for (n, line) in text.lines().enumerate() {
        if let Some(fence) = line.strip_prefix("```") {
            match current.take() {
                Some(b) => blocks.push(b),
                None if matches!(fence.trim(), "sh" | "bash" | "shell") => {
                    current = Some(Block {
                        place: format!("{name}:{}", n + 1),
                        lines: Vec::new(),
                    });
                }
                // Another language's block: skip to its closing fence.
                None => {
                    current = Some(Block {
                        place: String::new(),
                        lines: Vec::new(),
                    })
                }
            }
        } else if let Some(b) = current.as_mut() {
            b.lines.push(line.to_string());
        }
    }
    blocks.retain(|b| !b.place.is_empty());
    blocks
}

/// Index of a ` #` comment start outside quotes at or after `from`, if any.
fn comment_start(text: &str, from: usize) -> Option<usize> {
    let (mut single, mut double) = (false, false);
    let bytes = text.as_bytes();
    for (i, &c) in bytes.iter().enumerate() {
        match c {
            b'\'' if !double => single = !single,
            b'"' if !single => double = !double,
            b'#' if i >= from && !single && !double && (i == 0 || bytes[i - 1] == b' ') => {
                return Some(i)
            }
            _ => {}
        }
    }
    None
}

fn quotes_open(text: &str) -> bool {
    let (mut single, mut double) = (false, false);
    for c in text.chars() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            _ => {}
        }
    }
    single || double
}

/// A command of a block and the expectation lines (`# → …`) that follow it.
struct Cmd {
    text: String,
    expect: Vec<String>,
}

fn commands(block: &Block) -> Vec<Cmd> {
    let mut out: Vec<Cmd> = Vec::new();
    let mut lines: VecDeque<&String> = block.lines.iter().collect();
    while let Some(line) = lines.pop_front() {
        let trimmed = line.trim();
        if let Some(exp) = trimmed.strip_prefix("# →") {
            if let Some(last) = out.last_mut() {
                last.expect.push(exp.trim().to_string());
            }
            continue;
        }
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let mut text = line.clone();
        loop {
            let continued = text.trim_end().ends_with('\\');
            if !continued && !quotes_open(&text) {
                break;
            }
            let Some(next) = lines.pop_front() else {
                break;
            };
            if continued {
                let t = text.trim_end();
                text = format!("{} {}", t[..t.len() - 1].trim_end(), next.trim_start());
            } else {
                text = format!("{text}\n{next}");
            }
        }
        // The trailing comment is on the command's last line.
        let last_line_start = text.rfind('\n').map_or(0, |i| i + 1);
        if let Some(i) = comment_start(&text, last_line_start) {
            text.truncate(i);
        }
        out.push(Cmd {
            text: text.trim_end().to_string(),
            expect: Vec::new(),
        });
    }
    out
}

fn talks_to_server(block: &Block) -> bool {
    commands(block).iter().any(|c| {
        c.text.contains(&format!("127.0.0.1:{DOC_PORT}"))
            || c.text.contains(&format!("localhost:{DOC_PORT}"))
    })
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port()
}

/// The `"key":"value"` pairs of an expectation, without placeholders.
fn expected_pairs(exp: &str) -> Vec<String> {
    let mut pairs = Vec::new();
    let mut rest = exp;
    while let Some(start) = rest.find('"') {
        let after = &rest[start + 1..];
        let Some(key_end) = after.find('"') else {
            break;
        };
        let key = &after[..key_end];
        let tail = &after[key_end + 1..];
        if let Some(v) = tail.strip_prefix(":\"") {
            if let Some(v_end) = v.find('"') {
                let value = &v[..v_end];
                if !value.contains('<') {
                    pairs.push(format!("\"{key}\":\"{value}\""));
                }
                rest = &v[v_end + 1..];
                continue;
            }
        }
        rest = tail;
    }
    pairs
}

/// The JSON documents of an answer: the whole body, or each SSE `data:` line.
fn json_docs(stdout: &str) -> Vec<Value> {
    if let Ok(v) = serde_json::from_str::<Value>(stdout.trim()) {
        return vec![v];
    }
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str(d.trim()).ok())
        .collect()
}

/// The first string `key` in a breadth-first walk of `v`.
fn find(v: &Value, key: &str) -> Option<Value> {
    let mut queue = VecDeque::from([v]);
    while let Some(v) = queue.pop_front() {
        match v {
            Value::Object(m) => {
                if let Some(found) = m.get(key).filter(|f| f.is_string() || f.is_number()) {
                    return Some(found.clone());
                }
                queue.extend(m.values());
            }
            Value::Array(a) => queue.extend(a),
            _ => {}
        }
    }
    None
}

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Shell state carried from one command of a block to the next.
#[derive(Default)]
struct State {
    id: Option<String>,
    rev: Option<String>,
    assignments: Vec<String>,
    background: Vec<Child>,
}

impl Drop for State {
    fn drop(&mut self) {
        for child in &mut self.background {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

const PRELUDE: &str = r#"set -eo pipefail
curl() {
  local a
  for a in "$@"; do case $a in --fail*|-[!-]*f*) command curl "$@"; return;; esac; done
  command curl --fail-with-body "$@"
}
"#;

fn substitute(cmd: &str, ports: (u16, u16), tmp: &Path, state: &State) -> Option<String> {
    let (port, second) = ports;
    // The docs' /tmp/ first: the paths substituted below may be under /tmp
    // themselves (a checkout there).
    let cmd = &cmd.replace("/tmp/", &format!("{}/", tmp.display()));
    let trimmed = cmd.trim_start();
    if trimmed.starts_with("cargo build") {
        return None;
    }
    let bin_dir = Path::new(BIN).parent().expect("binary directory");
    let mut s = cmd.to_string();
    // `cargo run … --example NAME --` → the example binary.
    if let Some(rest) = trimmed.strip_prefix("cargo run") {
        let words: Vec<&str> = rest.split_whitespace().collect();
        let dashdash = words.iter().position(|w| *w == "--");
        let head = &words[..dashdash.unwrap_or(words.len())];
        let tail = dashdash.map_or(&[][..], |i| &words[i + 1..]);
        let program = match head.iter().position(|w| *w == "--example") {
            Some(i) => {
                let name = head.get(i + 1).expect("example name");
                let path = bin_dir.join("examples").join(name);
                assert!(
                    path.exists(),
                    "{} is not built: run the docs test through `cargo test --workspace`, which builds every example",
                    path.display()
                );
                path.display().to_string()
            }
            None => {
                let pkg = head
                    .iter()
                    .position(|w| *w == "-p")
                    .and_then(|i| head.get(i + 1));
                assert_eq!(pkg, Some(&"taskwire"), "cannot run {cmd:?}");
                BIN.to_string()
            }
        };
        s = std::iter::once(program.as_str())
            .chain(tail.iter().copied())
            .collect::<Vec<_>>()
            .join(" ");
    }
    s = s
        .replace("./target/debug/taskwire", BIN)
        .replace("./target/release/taskwire", BIN)
        .replace(
            &format!("127.0.0.1:{DOC_PORT}"),
            &format!("127.0.0.1:{port}"),
        )
        .replace(
            &format!("localhost:{DOC_PORT}"),
            &format!("localhost:{port}"),
        )
        .replace(
            &format!("127.0.0.1:{DOC_SECOND_PORT}"),
            &format!("127.0.0.1:{second}"),
        )
        .replace(
            &format!("localhost:{DOC_SECOND_PORT}"),
            &format!("localhost:{second}"),
        );
    if s.contains("<id>") || s.contains("$ID") {
        let id = state
            .id
            .as_deref()
            .unwrap_or_else(|| panic!("{cmd:?} needs a task id and no command before it made one"));
        s = s.replace("<id>", id);
    }
    Some(s)
}

struct Outcome {
    ok: bool,
    status: std::process::ExitStatus,
    stdout: String,
    stderr: String,
}

fn run(script: &str, tmp: &Path, state: &State) -> Outcome {
    let full = format!("{PRELUDE}{}\n{script}\n", state.assignments.join("\n"));
    let mut cmd = Command::new("timeout");
    cmd.args(["120", "bash", "-c", &full])
        .current_dir(tmp)
        .env_remove("RUST_LOG");
    for (k, _) in std::env::vars() {
        if k.starts_with("TASKWIRE_") {
            cmd.env_remove(k);
        }
    }
    if let Some(id) = &state.id {
        cmd.env("ID", id);
    }
    if let Some(rev) = &state.rev {
        cmd.env("REV", rev);
    }
    let out = cmd.output().expect("run bash");
    Outcome {
        ok: out.status.success(),
        status: out.status,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn is_assignment(cmd: &str) -> bool {
    let name: String = cmd.chars().take_while(|c| *c != '=').collect();
    !name.is_empty()
        && name.len() < cmd.len()
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// Waits until something accepts connections on `port` (a block's own server).
fn wait_for_port(port: u16, place: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "{place}: nothing listens on {port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn run_block(block: &Block, server_port: u16) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let own_server = block
        .lines
        .iter()
        .any(|l| l.contains(" serve ") && l.trim_end().ends_with('&'));
    // The block's own server runs in the background; nothing may answer on
    // its port before that.
    let port = if own_server { free_port() } else { server_port };
    let second = loop {
        let p = free_port();
        if p != port {
            break p;
        }
    };
    let mut state = State::default();
    for cmd in commands(block) {
        let Some(script) = substitute(&cmd.text, (port, second), tmp.path(), &state) else {
            continue;
        };
        let what = format!("{}: {}", block.place, cmd.text);
        if is_assignment(&script) {
            state.assignments.push(script);
            continue;
        }
        if let Some(bg) = script.trim_end().strip_suffix('&') {
            let full = format!("{PRELUDE}exec {bg}");
            let child = Command::new("bash")
                .args(["-c", &full])
                .current_dir(tmp.path())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn background command");
            state.background.push(child);
            continue;
        }
        if !state.background.is_empty() {
            wait_for_port(port, &what);
        }
        let pairs: Vec<String> = cmd.expect.iter().flat_map(|e| expected_pairs(e)).collect();
        let deadline = Instant::now() + Duration::from_secs(10);
        let outcome = loop {
            let outcome = run(&script, tmp.path(), &state);
            let compact: String = outcome.stdout.split_whitespace().collect();
            let missing: Vec<&String> = pairs.iter().filter(|p| !compact.contains(*p)).collect();
            if !outcome.ok || missing.is_empty() || Instant::now() > deadline {
                assert!(
                    outcome.ok,
                    "{what}\nfailed ({}; curl's 22 is an HTTP error status)\nstdout:\n{}\nstderr:\n{}",
                    outcome.status, outcome.stdout, outcome.stderr
                );
                assert!(
                    missing.is_empty(),
                    "{what}\nanswer lacks {missing:?} (from its `# →` line)\n{}",
                    outcome.stdout
                );
                break outcome;
            }
            std::thread::sleep(Duration::from_millis(200));
        };
        let docs = json_docs(&outcome.stdout);
        for doc in &docs {
            assert!(
                doc.get("error").is_none() && doc.get("type") != Some(&Value::from("RUN_ERROR")),
                "{what}\nanswered with an error:\n{}",
                outcome.stdout
            );
        }
        if let Some(doc) = docs.first() {
            let id = find(doc, "taskId").or_else(|| find(doc, "id").filter(Value::is_string));
            if let Some(id) = id {
                state.id = Some(text_of(&id));
                state.rev = find(doc, "revision").map(|r| text_of(&r));
            }
        }
    }
}

/// The test server: `taskwire serve` on an ephemeral port with an in-memory store.
struct Server(Child, u16);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_server() -> Server {
    let mut cmd = Command::new(BIN);
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--store", "memory://"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    for (k, _) in std::env::vars() {
        if k.starts_with("TASKWIRE_") {
            cmd.env_remove(k);
        }
    }
    let mut child = cmd.spawn().expect("spawn taskwire serve");
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("read address line");
    let port = line
        .trim()
        .strip_prefix("listening on ")
        .and_then(|a| a.rsplit(':').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
    Server(child, port)
}

fn documents() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

#[test]
fn every_shell_block_that_talks_to_a_server_runs() {
    let server = start_server();
    let blocks: Vec<Block> = documents()
        .iter()
        .flat_map(|f| shell_blocks(f))
        .filter(talks_to_server)
        .collect();
    // The README's protocol tour and the docs' curl sessions at least: a parser
    // that finds nothing must not pass.
    let places: Vec<&str> = blocks.iter().map(|b| b.place.as_str()).collect();
    for expected in [
        "README.md",
        "docs/cas.md",
        "docs/mcp.md",
        "docs/conformance.md",
        "docs/bridging.md",
    ] {
        assert!(
            places.iter().any(|p| p.starts_with(expected)),
            "no server block found in {expected}: {places:?}"
        );
    }
    for block in &blocks {
        run_block(block, server.1);
    }
}

#[test]
fn the_block_parser_joins_continuations_and_quoted_lines() {
    let block = Block {
        place: "x".into(),
        lines: [
            "# a comment",
            "curl -s http://127.0.0.1:7420/a -d '{",
            "  \"k\":1}'   # trailing",
            "curl -s localhost:7420/b \\",
            "  -H 'x: y'",
            "# → {\"status\":\"working\",\"taskId\":\"<id>\",…}",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
    };
    let cmds = commands(&block);
    assert_eq!(cmds.len(), 2);
    assert_eq!(
        cmds[0].text,
        "curl -s http://127.0.0.1:7420/a -d '{\n  \"k\":1}'"
    );
    assert_eq!(cmds[1].text, "curl -s localhost:7420/b -H 'x: y'");
    assert_eq!(
        expected_pairs(&cmds[1].expect[0]),
        vec!["\"status\":\"working\"".to_string()]
    );
    assert!(talks_to_server(&block));
}

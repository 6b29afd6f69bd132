//! What the bridge tests share (the modules of `tests/bridge/`): an
//! in-process `taskwire serve`
//! ([`Running`]), the client configuration and the A2A / AG-UI helpers they
//! read tasks with, and [`SdkServer`], an upstream served by one of the Python
//! SDK targets of `conformance/targets/` (described by a [`PythonSdk`]).

use std::path::PathBuf;
use std::time::{Duration, Instant};
use taskwire_client::A2aBinding as _;

use serde_json::{Map, Value};
use taskwire_client::a2a::{self, pb, A2aClient};
use taskwire_client::agui::{AguiClient, AguiEncoding, AguiEvent, RunAgentInput};
use taskwire_client::mcp::InputRequest;
use taskwire_client::ClientConfig;
use tokio::io::{AsyncBufReadExt, BufReader};

/// The bound of every wait on a task, a call, a stream or a server.
pub(crate) const LIMIT: Duration = Duration::from_secs(20);
/// The bound on an SDK server's start (importing the SDK and starting uvicorn
/// on a loaded two-core machine).
pub(crate) const STARTUP: Duration = Duration::from_secs(30);

// ---- an in-process taskwire ----

/// An in-process `taskwire serve` (127.0.0.1, a free port).
pub(crate) struct Running {
    pub(crate) base: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    done: Option<tokio::task::JoinHandle<()>>,
}

impl Running {
    /// Stops the server and waits (bounded) until it has stopped.
    pub(crate) async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(done) = self.done.take() {
            let _ = tokio::time::timeout(LIMIT, done).await;
        }
    }
}

/// Runs a built server until [`Running::stop`].
pub(crate) fn run(server: taskwire::Server) -> Running {
    let base = format!("http://{}", server.local_addr());
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let done = tokio::spawn(async move {
        let _ = server
            .run(async move {
                let _ = rx.await;
            })
            .await;
    });
    Running {
        base,
        stop: Some(tx),
        done: Some(done),
    }
}

/// `taskwire serve --listen 127.0.0.1:0 --store memory:// EXTRA…`, running
/// (built within LIMIT).
pub(crate) async fn serve(extra: &[&str]) -> Running {
    let server = tokio::time::timeout(LIMIT, super::build_serve(extra))
        .await
        .expect("serve started within LIMIT");
    run(server)
}

/// A server of `agent` on `store` (every adapter, 127.0.0.1, a free port),
/// running.
pub(crate) async fn serve_agent(
    agent: std::sync::Arc<dyn taskwire::core::Agent>,
    store: std::sync::Arc<dyn taskwire::core::TaskStore>,
) -> Running {
    let server = taskwire::Server::builder()
        .agent(agent)
        .store(store)
        .listen("127.0.0.1:0".parse::<std::net::SocketAddr>().expect("addr"))
        .all_adapters()
        .build()
        .await
        .expect("build");
    run(server)
}

/// `taskwire serve --listen 127.0.0.1:0 ARGS…` as a child process (killed on
/// drop; without the caller's `TASKWIRE_*` variables; `RUST_LOG` at
/// `info,taskwire_bridge=debug`), its stderr written to `log`. Spawns it at
/// once; the future answers the child and its base URL once it printed its
/// address (within LIMIT).
pub(crate) fn spawn_serve(
    args: &[&str],
    log: &std::path::Path,
) -> impl std::future::Future<Output = (tokio::process::Child, String)> {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_taskwire"));
    cmd.args(["serve", "--listen", "127.0.0.1:0"])
        .args(args)
        .env("RUST_LOG", "info,taskwire_bridge=debug")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(log).expect("log"))
        .kill_on_drop(true);
    for (k, _) in std::env::vars() {
        if k.starts_with("TASKWIRE_") {
            cmd.env_remove(k);
        }
    }
    let mut child = cmd.spawn().expect("spawn taskwire");
    let stdout = child.stdout.take().expect("stdout");
    async move {
        let mut lines = BufReader::new(stdout).lines();
        let line = tokio::time::timeout(LIMIT, lines.next_line())
            .await
            .expect("address in time")
            .expect("read")
            .expect("an address line");
        let addr = line
            .strip_prefix("listening on ")
            .expect("listening on ADDR")
            .to_string();
        (child, format!("http://{addr}"))
    }
}

/// `taskwire serve` processes a test starts, kills (SIGKILL) and starts again
/// with the same arguments (on the same store, so that the next one picks up
/// the tasks of the one killed): start `n` writes its stderr to
/// `stderr-n.log` in `dir`.
pub(crate) struct Restartable<'a> {
    dir: &'a std::path::Path,
    args: Vec<String>,
}

impl<'a> Restartable<'a> {
    /// `taskwire serve ARGS…` (see [`spawn_serve`]), logging into `dir`.
    pub(crate) fn new(dir: &'a std::path::Path, args: &[&str]) -> Self {
        Self {
            dir,
            args: args.iter().map(|a| a.to_string()).collect(),
        }
    }

    fn log(&self, n: u32) -> PathBuf {
        self.dir.join(format!("stderr-{n}.log"))
    }

    /// Start `n`: the child and its base URL.
    pub(crate) async fn start(&self, n: u32) -> (tokio::process::Child, String) {
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        spawn_serve(&args, &self.log(n)).await
    }

    /// Start 1, and a task sent to it over A2A (`text`; answered at once when
    /// `return_immediately`, else once it ends or waits): the child and the
    /// task.
    pub(crate) async fn start_with(
        &self,
        text: &str,
        return_immediately: bool,
    ) -> (tokio::process::Child, pb::Task) {
        let (child, base) = self.start(1).await;
        let t = task_of(
            a2a_client(&base)
                .send_text(text, return_immediately)
                .await
                .expect("send")
                .into_inner(),
        );
        (child, t)
    }

    /// What start `n` logged so far.
    pub(crate) fn logs(&self, n: u32) -> String {
        std::fs::read_to_string(self.log(n)).unwrap_or_default()
    }

    /// Kills `child` (SIGKILL) and waits for it to end (within LIMIT).
    pub(crate) async fn kill(&self, child: &mut tokio::process::Child) {
        child.start_kill().expect("SIGKILL");
        let _ = tokio::time::timeout(LIMIT, child.wait()).await;
    }

    /// Once the log of start `n` (`child`) shows what `shown` looks for
    /// (`what`), and 200 ms more (what it logged as done is committed by the
    /// turn's next flush, a few ms later), kills it and starts `n + 1`.
    pub(crate) async fn killed_once(
        &self,
        child: &mut tokio::process::Child,
        n: u32,
        what: &str,
        shown: impl Fn(&str) -> bool,
    ) -> (tokio::process::Child, String) {
        eventually_showing(what, || shown(&self.logs(n)), || self.logs(n)).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        self.kill(child).await;
        self.start(n + 1).await
    }

    /// The task `id` once it has ended, read over A2A from `base` (start
    /// `n`); panics with the logs of every start up to `n` when it does not
    /// end within LIMIT.
    pub(crate) async fn ended(&self, base: &str, id: &str, n: u32) -> pb::Task {
        match a2a_client(base).wait_task(id, LIMIT).await {
            Ok(t) => t.into_inner(),
            Err(e) => {
                let logs: String = (1..=n)
                    .map(|i| format!("\nstart {i}:\n{}", self.logs(i)))
                    .collect();
                panic!("{e}{logs}")
            }
        }
    }
}

// ---- clients and what they read ----

/// A client configuration for `base`: LIMIT per request, polls every 50 ms.
pub(crate) fn config(base: &str) -> ClientConfig {
    ClientConfig::builder(base)
        .request_timeout(LIMIT)
        .poll_interval(Duration::from_millis(50))
        .build()
}

/// A JSON-RPC A2A client of `base`.
pub(crate) fn a2a_client(base: &str) -> A2aClient {
    A2aClient::new(config(base)).expect("a2a client")
}

/// The task a `SendMessage` answered with.
pub(crate) fn task_of(r: pb::SendMessageResponse) -> pb::Task {
    match r.payload {
        Some(pb::send_message_response::Payload::Task(t)) => t,
        other => panic!("expected a task, got {other:?}"),
    }
}

pub(crate) fn state(t: &pb::Task) -> pb::TaskState {
    t.status
        .as_ref()
        .map(|s| s.state())
        .unwrap_or(pb::TaskState::Unspecified)
}

pub(crate) fn status_text(t: &pb::Task) -> String {
    t.status
        .as_ref()
        .and_then(|s| s.message.as_ref())
        .map(a2a::message_text)
        .unwrap_or_default()
}

/// (name, text) of every artifact of `t`.
pub(crate) fn artifact_texts(t: &pb::Task) -> Vec<(String, String)> {
    t.artifacts
        .iter()
        .map(|a| (a.name.clone(), a2a::parts_text(&a.parts)))
        .collect()
}

/// An A2A `SendMessage` of `text` (to task `task_id` when given; returning at
/// once when `immediately`, else blocking), bounded by LIMIT.
pub(crate) async fn a2a_send(
    client: &A2aClient,
    text: &str,
    task_id: Option<&str>,
    immediately: bool,
) -> pb::Task {
    let mut message = a2a::text_message(text);
    if let Some(id) = task_id {
        message.task_id = id.to_string();
    }
    let mut req = a2a::send_request(message);
    if immediately {
        let mut c = req.configuration.take().unwrap_or_default();
        c.return_immediately = true;
        req.configuration = Some(c);
    }
    let sent = tokio::time::timeout(LIMIT, client.send_message(req))
        .await
        .expect("SendMessage answered within LIMIT")
        .expect("SendMessage");
    task_of(sent.into_inner())
}

/// The task as an A2A caller sees it once it stops for someone or ends.
pub(crate) async fn settled(client: &A2aClient, id: &str) -> pb::Task {
    client
        .wait_task(id, LIMIT)
        .await
        .expect("wait")
        .into_inner()
}

/// The question and the schema of an MCP elicitation input request.
pub(crate) fn elicitation(r: &InputRequest) -> (String, Map<String, Value>) {
    match r {
        InputRequest::Elicit(p) => {
            let v = serde_json::to_value(p).expect("json");
            let message = v["message"].as_str().unwrap_or_default().to_string();
            let schema = v["requestedSchema"]
                .as_object()
                .cloned()
                .unwrap_or_default();
            (message, schema)
        }
        other => panic!("expected an elicitation, got {other:?}"),
    }
}

/// A fresh AG-UI id (`<prefix>-<random>`).
pub(crate) fn agui_id(prefix: &str) -> String {
    format!("{prefix}-{}", a2a::random_id())
}

/// One AG-UI run's events, up to its end (within LIMIT).
pub(crate) async fn agui_run(client: &AguiClient, input: &RunAgentInput) -> Vec<AguiEvent> {
    let s = client
        .run(input, AguiEncoding::Sse)
        .await
        .expect("AG-UI run");
    tokio::time::timeout(LIMIT, s.collect_all())
        .await
        .expect("the run ends within LIMIT")
        .expect("events")
}

/// Waits (within LIMIT) until `cond` holds.
pub(crate) async fn eventually(what: &str, cond: impl FnMut() -> bool) {
    eventually_showing(what, cond, String::new).await
}

/// As [`eventually`], showing `detail()` (a process's log, say) if it fails.
pub(crate) async fn eventually_showing(
    what: &str,
    mut cond: impl FnMut() -> bool,
    detail: impl Fn() -> String,
) {
    let deadline = Instant::now() + LIMIT;
    while !cond() {
        assert!(
            Instant::now() < deadline,
            "not within {LIMIT:?}: {what}\n{}",
            detail()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

// ---- an upstream served by a Python SDK ----

/// One of the Python SDK servers of `conformance/targets/`: which script, in
/// which virtualenv, and how it is started and reached. Each script takes
/// `--host` and one `--…port` option per entry of `ports`, and prints
/// `ready <endpoint>` once it serves.
pub(crate) struct PythonSdk {
    /// What messages call it (`the a2a-sdk server`).
    pub(crate) name: &'static str,
    /// The script, under `conformance/targets/`.
    pub(crate) script: &'static str,
    /// The variable naming the interpreter to use.
    pub(crate) python_var: &'static str,
    /// Else this virtualenv under `target/` (what `setup` makes).
    pub(crate) venv: &'static str,
    /// The script that makes the virtualenv.
    pub(crate) setup: &'static str,
    /// What the interpreter must have, said when it is missing.
    pub(crate) needs: &'static str,
    /// Python code that fails without what the script imports.
    pub(crate) probe: &'static str,
    /// The port options of the script, each given its own free port
    /// (`--port` first: the HTTP port of `base`).
    pub(crate) ports: &'static [&'static str],
    /// The endpoint's path below `base`, as the ready line announces it.
    pub(crate) path: &'static str,
    /// The `--upstream` scheme prefix of the bridge in front of it (`mcp`).
    pub(crate) scheme: &'static str,
}

impl PythonSdk {
    /// The interpreter: `$python_var` if set (and existing), else the venv's.
    fn python(&self) -> Option<PathBuf> {
        if let Ok(p) = std::env::var(self.python_var) {
            let p = PathBuf::from(p);
            return p.exists().then_some(p);
        }
        let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../target")
            .join(self.venv)
            .join("bin/python");
        p.exists().then_some(p)
    }
}

/// `n` distinct free loopback ports (all held while choosing).
pub(crate) fn free_ports(n: usize) -> Vec<u16> {
    let held: Vec<std::net::TcpListener> = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").expect("bind"))
        .collect();
    held.iter()
        .map(|l| l.local_addr().expect("addr").port())
        .collect()
}

/// An SDK server, a child process killed when this is dropped.
pub(crate) struct SdkServer {
    /// `http://127.0.0.1:PORT`.
    pub(crate) base: String,
    /// What it announced as ready (`{base}{path}`).
    pub(crate) endpoint: String,
    /// Each port option with the port it was given.
    ports: Vec<(&'static str, u16)>,
    scheme: &'static str,
    child: tokio::process::Child,
    dir: tempfile::TempDir,
    drain: tokio::task::JoinHandle<()>,
}

impl Drop for SdkServer {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
        self.drain.abort();
    }
}

impl SdkServer {
    /// Starts `sdk`'s script on free loopback ports and waits for its
    /// `ready <url>` line (retrying with other ports if one was taken
    /// meanwhile).
    pub(crate) async fn start(sdk: &PythonSdk) -> Self {
        Self::start_with(sdk, &[]).await
    }

    /// [`SdkServer::start`] with more arguments for the script.
    pub(crate) async fn start_with(sdk: &PythonSdk, extra: &[&str]) -> Self {
        let name = sdk.name;
        let py = sdk.python().unwrap_or_else(|| {
            panic!(
                "{name} cannot start: no python at ${} ({:?}) nor at target/{}/bin/python \
                 (run {}, or set {} to a python with {})",
                sdk.python_var,
                std::env::var(sdk.python_var).ok(),
                sdk.venv,
                sdk.setup,
                sdk.python_var,
                sdk.needs
            )
        });
        let probe = std::process::Command::new(&py)
            .args(["-c", sdk.probe])
            .output()
            .expect("run the python interpreter");
        assert!(
            probe.status.success(),
            "{} lacks {}, which {} needs (run {}):\n{}",
            py.display(),
            sdk.needs,
            sdk.script,
            sdk.setup,
            String::from_utf8_lossy(&probe.stderr)
        );
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../conformance/targets")
            .join(sdk.script);
        let mut last = String::new();
        for attempt in 0..3 {
            let dir = tempfile::tempdir().expect("tempdir");
            let log = dir.path().join("sdk-server.log");
            let ports: Vec<(&'static str, u16)> = sdk
                .ports
                .iter()
                .copied()
                .zip(free_ports(sdk.ports.len()))
                .collect();
            let mut cmd = tokio::process::Command::new(&py);
            cmd.arg(&script).args(["--host", "127.0.0.1"]);
            for (flag, port) in &ports {
                cmd.args([*flag, port.to_string().as_str()]);
            }
            let mut child = cmd
                .args(extra)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::piped())
                .stderr(std::fs::File::create(&log).expect("log file"))
                .kill_on_drop(true)
                .spawn()
                .unwrap_or_else(|e| panic!("spawn {name}: {e}"));
            let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
            let first = tokio::time::timeout(STARTUP, lines.next_line()).await;
            let logs = || std::fs::read_to_string(&log).unwrap_or_default();
            match first {
                Ok(Ok(Some(line))) if line.starts_with("ready ") => {
                    let endpoint = line["ready ".len()..].trim().to_string();
                    let base = format!("http://127.0.0.1:{}", ports[0].1);
                    assert_eq!(endpoint, format!("{base}{}", sdk.path));
                    // Keep reading its stdout so it never blocks on a full pipe.
                    let drain =
                        tokio::spawn(
                            async move { while let Ok(Some(_)) = lines.next_line().await {} },
                        );
                    return Self {
                        base,
                        endpoint,
                        ports,
                        scheme: sdk.scheme,
                        child,
                        dir,
                        drain,
                    };
                }
                Err(_) => {
                    let _ = child.start_kill();
                    panic!("{name} was not ready within {STARTUP:?}:\n{}", logs());
                }
                other => {
                    let _ = child.start_kill();
                    let _ = child.wait().await;
                    last = format!("attempt {attempt}: {other:?}\n{}", logs());
                    // A port taken between choosing it and binding it: try others.
                    if !last.contains("already in use") {
                        break;
                    }
                }
            }
        }
        panic!("{name} did not start:\n{last}");
    }

    /// What the SDK server wrote to stderr so far.
    pub(crate) fn logs(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("sdk-server.log")).unwrap_or_default()
    }

    /// The port the script was given for its option `flag` (`--grpc-port`).
    pub(crate) fn port(&self, flag: &str) -> u16 {
        self.ports
            .iter()
            .find(|(f, _)| *f == flag)
            .map(|(_, p)| *p)
            .unwrap_or_else(|| panic!("no {flag} among {:?}", self.ports))
    }

    /// The upstream URL of a bridge in front of it: all its tools (skills), or
    /// `#tool` alone.
    pub(crate) fn upstream(&self, tool: Option<&str>) -> String {
        match tool {
            Some(t) => format!("{}+{}#{t}", self.scheme, self.endpoint),
            None => format!("{}+{}", self.scheme, self.endpoint),
        }
    }

    /// `taskwire serve --upstream URL` (URL one of this server's), running;
    /// its start is bounded by LIMIT.
    pub(crate) async fn bridge_at(&self, url: &str) -> Running {
        let server = tokio::time::timeout(LIMIT, super::build_serve(&["--upstream", url]))
            .await
            .unwrap_or_else(|_| panic!("the bridge to {url} did not start:\n{}", self.logs()));
        run(server)
    }

    /// A bridge in front of all its tools, or of `tool` alone
    /// ([`SdkServer::upstream`]).
    pub(crate) async fn bridge(&self, tool: Option<&str>) -> Running {
        self.bridge_at(&self.upstream(tool)).await
    }
}

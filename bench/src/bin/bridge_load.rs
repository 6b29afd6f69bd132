//! The load generator of the bridge benchmark (issue #21, bench/bridge.sh):
//! blocking requests to a running `taskwire serve` (a bridge, or its upstream
//! called directly), each answer checked to be a completed result, then
//! requests/s, p50/p99 latency and, given pids, the CPU time per request of
//! each of those processes and of all of them together.
//!
//! ```text
//! bridge_load <base-url> <a2a|mcp> <concurrency> <secs> [pid,pid,...]
//! ```
//!
//! - `a2a`: JSON-RPC `SendMessage` to `BASE/a2a` (blocking: no
//!   `returnImmediately`), text `hello`, a fresh `messageId` per request; the
//!   answer must be a result whose task is `TASK_STATE_COMPLETED`.
//! - `mcp`: revision 2026-07-28 `tools/call` of `run_script` with
//!   `{"text": "hello"}` to `BASE/mcp`, WITHOUT the tasks extension, so that
//!   the call blocks until the tool's result; the answer must be a
//!   `CallToolResult` with `"resultType":"complete"` that is not `isError`.
//!
//! Each of `concurrency` workers holds one HTTP/1.1 keep-alive connection and
//! sends one request at a time. Every worker first sends a few requests that are
//! not measured (connections, the bridge's upstream connections and the
//! allocators warm up); the CPU counters are read once all workers are past
//! that point and again when the last one has stopped.
//!
//! The requests go out through a lean HTTP/1.1 client (prebuilt request bytes,
//! the answer's body located without a JSON tree), for the reason
//! `a2a_load/raw.rs` gives: the generator runs on its own core and must cost
//! less per request than the server, or a server that is not saturated reports
//! the CPU of idling and waking up. `BRIDGE_LOAD_CLIENT=reqwest` sends through
//! reqwest instead (to cross-check).
//!
//! CPU time is utime+stime of `/proc/<pid>/stat` (all threads of the process),
//! in clock ticks (normally 1/100 s): runs must be long enough for the ticks to
//! be many (at 10 s of a saturated core, 1000 ticks).
//!
//! The last lines of the output are `key=value` pairs for scripts:
//! `RESULT requests=… rps=… p50_us=… p99_us=… load_us_per_req=… others_pct=…`
//! (the generator's own CPU per request; the CPU, in % of one core, that the
//! rest of the machine used meanwhile: not the pids, not the generator), then,
//! per pid,
//! `CPU pid=… us_per_req=…`, then `CPU_SUM us_per_req=…`.

#![allow(
    clippy::unwrap_used,
    reason = "a benchmark tool: failures abort the run"
)]

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The MCP revision the calls are made in.
const MCP_VERSION: &str = "2026-07-28";
/// Requests each worker sends before the measurement starts.
const WARMUP: usize = 20;

fn cpu_ticks(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// The busy clock ticks of the whole machine (all cores), from `/proc/stat`:
/// user, nice, system, irq, softirq and steal.
fn machine_busy_ticks() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/stat").ok()?;
    let f: Vec<u64> = s
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .map(|v| v.parse().unwrap_or(0))
        .collect();
    Some(f.first()? + f.get(1)? + f.get(2)? + f.get(5)? + f.get(6)? + f.get(7)?)
}

fn ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    A2a,
    Mcp,
}

impl Mode {
    fn path(self) -> &'static str {
        match self {
            Mode::A2a => "/a2a",
            Mode::Mcp => "/mcp",
        }
    }

    /// The request headers beyond host, content-type and content-length.
    fn headers(self) -> Vec<(&'static str, &'static str)> {
        match self {
            Mode::A2a => vec![("a2a-version", "1.0"), ("accept", "application/json")],
            Mode::Mcp => vec![
                ("accept", "application/json, text/event-stream"),
                ("mcp-protocol-version", MCP_VERSION),
                ("mcp-method", "tools/call"),
                ("mcp-name", "run_script"),
            ],
        }
    }

    fn body(self, worker: usize, i: u64) -> Vec<u8> {
        let pid = std::process::id();
        let v = match self {
            Mode::A2a => json!({"jsonrpc": "2.0", "id": i, "method": "SendMessage", "params": {
                "message": {"messageId": format!("bridge-load-{pid}-{worker}-{i}"),
                            "role": "ROLE_USER", "parts": [{"text": "hello"}]}}}),
            // No io.modelcontextprotocol/tasks extension among the client
            // capabilities: a taskwire server answers when the tool is done.
            Mode::Mcp => json!({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
                "name": "run_script", "arguments": {"text": "hello"},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": MCP_VERSION,
                    "io.modelcontextprotocol/clientInfo": {"name": "bridge_load", "version": "1"},
                    "io.modelcontextprotocol/clientCapabilities": {}}}}),
        };
        serde_json::to_vec(&v).unwrap()
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The JSON-RPC response in an answer body: the body itself, or the data line
/// of an SSE event that carries `"result"` or `"error"` (a server may answer a
/// call on an event stream).
fn response_of(body: &[u8], sse: bool) -> &[u8] {
    if !sse {
        return body;
    }
    for line in body.split(|b| *b == b'\n') {
        if let Some(data) = line.strip_prefix(b"data:") {
            if find(data, b"\"result\"").is_some() || find(data, b"\"error\"").is_some() {
                return data;
            }
        }
    }
    body
}

/// Aborts the run unless `body` is a completed result (see the module doc),
/// so that no figure is of errors. A cheap check of the bytes in the timed
/// loop; the warm-up requests are checked on a parsed tree as well.
fn check(mode: Mode, body: &[u8], sse: bool, parse: bool) {
    let r = response_of(body, sse);
    let fail = |why: &str| -> ! {
        eprintln!(
            "bridge_load: {why}; the answer was:\n{}",
            String::from_utf8_lossy(body)
        );
        std::process::exit(1);
    };
    if find(r, b"\"result\":").is_none() || find(r, b"\"error\":").is_some() {
        fail("not a JSON-RPC result");
    }
    match mode {
        Mode::A2a => {
            if find(r, b"\"TASK_STATE_COMPLETED\"").is_none() {
                fail("the task is not TASK_STATE_COMPLETED");
            }
        }
        Mode::Mcp => {
            if find(r, b"\"isError\":true").is_some() {
                fail("the tool result is an error");
            }
            if find(r, b"\"content\":").is_none()
                || find(r, b"\"resultType\":\"complete\"").is_none()
            {
                fail("not a complete CallToolResult");
            }
            if find(r, b"\"taskId\"").is_some() || find(r, b"\"inputRequests\"").is_some() {
                fail("answered with a task or an input request, not the tool's result");
            }
        }
    }
    if parse {
        let v: Value = serde_json::from_slice(r.trim_ascii())
            .unwrap_or_else(|e| fail(&format!("not JSON ({e})")));
        let ok = match mode {
            Mode::A2a => v["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED",
            Mode::Mcp => {
                v["result"]["content"].is_array()
                    && v["result"]["resultType"] == "complete"
                    && v["result"]["isError"] != Value::Bool(true)
            }
        };
        if !ok {
            fail("not a completed result");
        }
    }
}

/// An HTTP/1.1 keep-alive connection POSTing JSON to one path.
struct H1 {
    stream: TcpStream,
    head: Vec<u8>,
    buf: Vec<u8>,
}

fn bad(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

impl H1 {
    async fn connect(addr: &str, path: &str, headers: &[(&str, &str)]) -> io::Result<Self> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let mut head =
            format!("POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n");
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("content-length: ");
        Ok(Self {
            stream,
            head: head.into_bytes(),
            buf: Vec::with_capacity(16 * 1024),
        })
    }

    /// Sends `body`; returns the answer's body (status 200 required; a
    /// content-length or a chunked body) and whether it is an event stream.
    async fn post(&mut self, body: &[u8]) -> io::Result<(Vec<u8>, bool)> {
        let mut req = Vec::with_capacity(self.head.len() + 8 + body.len());
        req.extend_from_slice(&self.head);
        req.extend_from_slice(body.len().to_string().as_bytes());
        req.extend_from_slice(b"\r\n\r\n");
        req.extend_from_slice(body);
        self.stream.write_all(&req).await?;
        let head_end = loop {
            if let Some(i) = find(&self.buf, b"\r\n\r\n") {
                break i + 4;
            }
            self.fill().await?;
        };
        let head = std::str::from_utf8(&self.buf[..head_end])
            .map_err(|_| bad("head not UTF-8"))?
            .to_string();
        if !head.starts_with("HTTP/1.1 200") {
            // Read what body there is, for the message.
            let _ = tokio::time::timeout(Duration::from_millis(200), self.fill()).await;
            return Err(bad(format!(
                "not a 200: {}",
                String::from_utf8_lossy(&self.buf)
            )));
        }
        let header = |name: &str| {
            head.split("\r\n").find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.trim()
                    .eq_ignore_ascii_case(name)
                    .then(|| v.trim().to_ascii_lowercase())
            })
        };
        let sse = header("content-type").is_some_and(|c| c.starts_with("text/event-stream"));
        self.buf.drain(..head_end);
        if let Some(len) = header("content-length") {
            let len: usize = len.parse().map_err(|_| bad("bad content-length"))?;
            while self.buf.len() < len {
                self.fill().await?;
            }
            let body = self.buf[..len].to_vec();
            self.buf.drain(..len);
            return Ok((body, sse));
        }
        if header("transfer-encoding").is_some_and(|t| t.contains("chunked")) {
            let mut body = Vec::new();
            loop {
                let line_end = loop {
                    if let Some(i) = find(&self.buf, b"\r\n") {
                        break i;
                    }
                    self.fill().await?;
                };
                let size_text = std::str::from_utf8(&self.buf[..line_end])
                    .map_err(|_| bad("chunk size not UTF-8"))?;
                let size_text = size_text.split(';').next().unwrap_or("").trim();
                let size = usize::from_str_radix(size_text, 16)
                    .map_err(|_| bad(format!("bad chunk size {size_text:?}")))?;
                let need = line_end + 2 + size + 2;
                while self.buf.len() < need {
                    self.fill().await?;
                }
                body.extend_from_slice(&self.buf[line_end + 2..line_end + 2 + size]);
                self.buf.drain(..need);
                if size == 0 {
                    // No trailers are expected: the last chunk's CRLF ends it.
                    return Ok((body, sse));
                }
            }
        }
        Err(bad(format!("neither content-length nor chunked: {head}")))
    }

    async fn fill(&mut self) -> io::Result<()> {
        let mut chunk = [0u8; 16 * 1024];
        let n = self.stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(bad("connection closed"));
        }
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(())
    }
}

enum Client {
    Raw(H1),
    Reqwest(reqwest::Client, String, Vec<(&'static str, &'static str)>),
}

impl Client {
    async fn post(&mut self, body: Vec<u8>) -> Result<(Vec<u8>, bool), String> {
        match self {
            Client::Raw(c) => c.post(&body).await.map_err(|e| e.to_string()),
            Client::Reqwest(http, url, headers) => {
                let mut rb = http
                    .post(url.as_str())
                    .header(reqwest::header::CONTENT_TYPE, "application/json");
                for (k, v) in headers.iter() {
                    rb = rb.header(*k, *v);
                }
                let r = rb.body(body).send().await.map_err(|e| e.to_string())?;
                let status = r.status();
                let sse = r
                    .headers()
                    .get(reqwest::header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    .is_some_and(|c| c.starts_with("text/event-stream"));
                let b = r.bytes().await.map_err(|e| e.to_string())?.to_vec();
                if !status.is_success() {
                    return Err(format!("HTTP {status}: {}", String::from_utf8_lossy(&b)));
                }
                Ok((b, sse))
            }
        }
    }
}

/// Sends one request, checks its answer (aborting the run if it is not a
/// completed result) and returns its latency in µs.
async fn one(
    client: &mut Client,
    mode: Mode,
    worker: usize,
    counter: &AtomicU64,
    parse: bool,
) -> u64 {
    let i = counter.fetch_add(1, Ordering::Relaxed);
    let body = mode.body(worker, i);
    let t = Instant::now();
    match client.post(body).await {
        Ok((answer, sse)) => {
            let us = t.elapsed().as_micros() as u64;
            check(mode, &answer, sse, parse);
            us
        }
        Err(e) => {
            eprintln!("bridge_load: request {i} failed: {e}");
            std::process::exit(1);
        }
    }
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: bridge_load <base-url> <a2a|mcp> <concurrency> <secs> [pid,pid,...]\n\
                 BRIDGE_LOAD_CLIENT=reqwest sends through reqwest instead of the lean HTTP/1.1 client";
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{usage}");
        return;
    }
    if args.len() < 5 {
        eprintln!("{usage}");
        std::process::exit(2);
    }
    let base = args[1].trim_end_matches('/').to_string();
    let mode = match args[2].as_str() {
        "a2a" => Mode::A2a,
        "mcp" => Mode::Mcp,
        other => {
            eprintln!("unknown mode {other:?}\n{usage}");
            std::process::exit(2);
        }
    };
    let conc: usize = args[3].parse().expect("concurrency: a number");
    let secs: f64 = args[4].parse().expect("secs: a number");
    let pids: Vec<u32> = args
        .get(5)
        .map(|p| {
            p.split(',')
                .filter(|s| !s.is_empty())
                .map(|s| s.parse().expect("pids: numbers separated by commas"))
                .collect()
        })
        .unwrap_or_default();
    let addr = base
        .strip_prefix("http://")
        .expect("the base url is http://host:port")
        .to_string();
    let reqwest_client = std::env::var("BRIDGE_LOAD_CLIENT").is_ok_and(|c| c == "reqwest");
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(conc)
        .http1_only()
        .build()
        .unwrap();

    // Workers: connect, warm up, wait at the barrier, then run until `stop`.
    let barrier = Arc::new(tokio::sync::Barrier::new(conc + 1));
    let stop = Arc::new(AtomicBool::new(false));
    let counter = Arc::new(AtomicU64::new(1));
    let mut handles = Vec::new();
    for w in 0..conc {
        let (barrier, stop, counter, addr, http, base) = (
            barrier.clone(),
            stop.clone(),
            counter.clone(),
            addr.clone(),
            http.clone(),
            base.clone(),
        );
        handles.push(tokio::spawn(async move {
            let headers = mode.headers();
            let mut client = if reqwest_client {
                Client::Reqwest(http, format!("{base}{}", mode.path()), headers)
            } else {
                match H1::connect(&addr, mode.path(), &headers).await {
                    Ok(c) => Client::Raw(c),
                    Err(e) => {
                        eprintln!("bridge_load: connecting to {addr}: {e}");
                        std::process::exit(1);
                    }
                }
            };
            for _ in 0..WARMUP {
                one(&mut client, mode, w, &counter, true).await;
            }
            barrier.wait().await;
            let mut lat = Vec::with_capacity(1 << 16);
            while !stop.load(Ordering::Relaxed) {
                lat.push(one(&mut client, mode, w, &counter, false).await);
            }
            lat
        }));
    }
    barrier.wait().await;
    let cpu0: Vec<Option<u64>> = pids.iter().map(|p| cpu_ticks(*p)).collect();
    let own0 = cpu_ticks(std::process::id());
    let machine0 = machine_busy_ticks();
    let started = Instant::now();
    tokio::time::sleep(Duration::from_secs_f64(secs)).await;
    stop.store(true, Ordering::Relaxed);
    let mut all: Vec<u64> = Vec::new();
    for h in handles {
        all.extend(h.await.unwrap());
    }
    let elapsed = started.elapsed().as_secs_f64();
    let cpu1: Vec<Option<u64>> = pids.iter().map(|p| cpu_ticks(*p)).collect();
    let own1 = cpu_ticks(std::process::id());
    let machine1 = machine_busy_ticks();
    all.sort_unstable();
    let n = all.len();
    if n == 0 {
        eprintln!("bridge_load: no request completed");
        std::process::exit(1);
    }
    let pct = |p: f64| all[((n as f64 * p) as usize).min(n - 1)];
    let (p50, p99) = (pct(0.50), pct(0.99));
    let rps = n as f64 / elapsed;
    let what = match mode {
        Mode::A2a => "A2A SendMessage (blocking)",
        Mode::Mcp => "MCP tools/call run_script (blocking)",
    };
    println!(
        "{what} to {base}, concurrency {conc}: {n} requests in {elapsed:.1}s = {rps:.0} req/s, \
         p50 {p50} µs, p99 {p99} µs, max {} µs",
        all[n - 1]
    );
    let tps = ticks_per_second();
    let mut cpu_lines = Vec::new();
    let mut sum = 0.0;
    for ((pid, a), b) in pids.iter().zip(&cpu0).zip(&cpu1) {
        match (a, b) {
            (Some(a), Some(b)) => {
                let us = (b - a) as f64 / tps * 1e6 / n as f64;
                sum += us;
                println!("pid {pid}: {} ticks of CPU, {us:.1} µs per request", b - a);
                cpu_lines.push(format!("CPU pid={pid} ticks={} us_per_req={us:.2}", b - a));
            }
            _ => {
                eprintln!("bridge_load: cannot read /proc/{pid}/stat");
                std::process::exit(1);
            }
        }
    }
    if !pids.is_empty() {
        println!("all pids: {sum:.1} µs per request");
    }
    // The generator's own CPU: if it nears a whole core, it is what limits the
    // rate, not the servers.
    let own = match (own0, own1) {
        (Some(a), Some(b)) => (b - a) as f64 / tps * 1e6 / n as f64,
        _ => f64::NAN,
    };
    println!(
        "bridge_load itself: {own:.1} µs per request ({:.0}% of a core)",
        own * rps / 1e4
    );
    // What the rest of the machine spent meanwhile (other processes, the
    // kernel's own threads): a run with much of it was disturbed.
    let pid_ticks: u64 = cpu0
        .iter()
        .zip(&cpu1)
        .map(|(a, b)| b.unwrap_or(0) - a.unwrap_or(0))
        .sum::<u64>()
        + own1.unwrap_or(0).saturating_sub(own0.unwrap_or(0));
    let others = match (machine0, machine1) {
        (Some(a), Some(b)) => (b - a).saturating_sub(pid_ticks) as f64 / tps / elapsed * 100.0,
        _ => f64::NAN,
    };
    println!("everything else on the machine: {others:.0}% of a core");
    println!(
        "RESULT requests={n} rps={rps:.1} p50_us={p50} p99_us={p99} load_us_per_req={own:.2} others_pct={others:.0}"
    );
    for l in cpu_lines {
        println!("{l}");
    }
    if !pids.is_empty() {
        println!("CPU_SUM us_per_req={sum:.2}");
    }
}

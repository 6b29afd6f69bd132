//! `taskwire serve` as a child process on loopback, with a sampler thread that
//! watches its resident memory (VmRSS in /proc/PID/status) and its open
//! sockets (/proc/PID/fd), and kills it if its memory runs away.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

/// A server whose resident memory passes this is killed by the sampler: it
/// protects the machine (a test host has no swap; the old server reached
/// 1.95 GB under the HPACK bomb and would have gone on), and the test fails.
pub(crate) const KILL_RSS_KIB: u64 = 1536 * 1024;

/// The binary: `taskwire` of this build, or TASKWIRE_ATTACKS_BIN (to run the
/// same attacks against another build, e.g. the server before a change).
fn binary() -> PathBuf {
    std::env::var_os("TASKWIRE_ATTACKS_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_taskwire")),
        PathBuf::from,
    )
}

struct Watch {
    stop: AtomicBool,
    peak_rss_kib: AtomicU64,
    peak_sockets: AtomicUsize,
    killed: AtomicBool,
}

/// A running `taskwire serve --listen 127.0.0.1:0 --store memory://`.
pub(crate) struct Serve {
    child: Child,
    _stdout: Lines<BufReader<ChildStdout>>,
    pub(crate) addr: SocketAddr,
    pub(crate) pid: u32,
    dir: tempfile::TempDir,
    watch: Arc<Watch>,
    sampler: Option<std::thread::JoinHandle<()>>,
}

impl Serve {
    /// Starts the server with the listener limits `limits` (flag name without
    /// the dashes, value) and other flags `extra`.
    ///
    /// With TASKWIRE_ATTACKS_LIMITS_AS_ENV set, the limits are passed as their
    /// environment variables (TASKWIRE_<NAME>) instead of flags, so that a build
    /// without them still starts (and ignores them).
    pub(crate) async fn start(limits: &[(&str, &str)], extra: &[&str]) -> Serve {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut cmd = Command::new(binary());
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--store", "memory://"]);
        for (k, _) in std::env::vars() {
            if k.starts_with("TASKWIRE_") {
                cmd.env_remove(k);
            }
        }
        let as_env = std::env::var_os("TASKWIRE_ATTACKS_LIMITS_AS_ENV").is_some();
        for (name, value) in limits {
            if as_env {
                cmd.env(
                    format!("TASKWIRE_{}", name.replace('-', "_").to_uppercase()),
                    value,
                );
            } else {
                cmd.arg(format!("--{name}")).arg(value);
            }
        }
        // The binary lets freed pages sit for a second before mimalloc returns
        // them (src/main.rs: a purge delay, for reuse under load without refaulting), and an
        // idle thread never gets round to it. These tests measure what the
        // server itself still holds after an attack, so mimalloc is asked to
        // return freed memory at once.
        cmd.args(extra)
            .env("MIMALLOC_PURGE_DELAY", "0")
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(dir.path().join("stderr.log")).expect("stderr file"))
            .kill_on_drop(true);
        let mut child = cmd.spawn().expect("spawn taskwire serve");
        let pid = child.id().expect("pid");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let stderr = || std::fs::read_to_string(dir.path().join("stderr.log")).unwrap_or_default();
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("no address line; stderr:\n{}", stderr()))
            .expect("read stdout")
            .unwrap_or_else(|| panic!("taskwire serve exited; stderr:\n{}", stderr()));
        let addr: SocketAddr = line
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .parse()
            .expect("address");
        assert!(addr.ip().is_loopback(), "{addr}");
        let watch = Arc::new(Watch {
            stop: AtomicBool::new(false),
            peak_rss_kib: AtomicU64::new(0),
            peak_sockets: AtomicUsize::new(0),
            killed: AtomicBool::new(false),
        });
        let w = watch.clone();
        let sampler = std::thread::spawn(move || sample(pid, &w));
        Serve {
            child,
            _stdout: lines,
            addr,
            pid,
            dir,
            watch,
            sampler: Some(sampler),
        }
    }

    /// Resident memory now, in KiB.
    pub(crate) fn rss_kib(&self) -> u64 {
        rss_kib(self.pid).unwrap_or(0)
    }

    /// Open sockets now (the listener and every connection).
    pub(crate) fn sockets(&self) -> usize {
        sockets(self.pid).unwrap_or(0)
    }

    /// Starts a new window for the peaks.
    pub(crate) fn reset_peaks(&self) {
        self.watch
            .peak_rss_kib
            .store(self.rss_kib(), Ordering::SeqCst);
        self.watch
            .peak_sockets
            .store(self.sockets(), Ordering::SeqCst);
    }

    /// The highest RSS seen since [`Serve::reset_peaks`], in KiB.
    pub(crate) fn peak_rss_kib(&self) -> u64 {
        self.watch.peak_rss_kib.load(Ordering::SeqCst)
    }

    /// The most open sockets seen since [`Serve::reset_peaks`].
    pub(crate) fn peak_sockets(&self) -> usize {
        self.watch.peak_sockets.load(Ordering::SeqCst)
    }

    /// Whether the sampler had to kill the server.
    pub(crate) fn killed(&self) -> bool {
        self.watch.killed.load(Ordering::SeqCst)
    }

    /// Whether the process still runs.
    pub(crate) fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Waits until at most `n` sockets are open; returns how long it took, or
    /// `None` if that did not happen within `timeout`.
    pub(crate) async fn wait_sockets_at_most(
        &self,
        n: usize,
        timeout: Duration,
    ) -> Option<Duration> {
        let start = Instant::now();
        loop {
            if self.sockets() <= n {
                return Some(start.elapsed());
            }
            if start.elapsed() >= timeout {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits until RSS is at most `kib`, or `timeout` passes; returns the
    /// last RSS read.
    pub(crate) async fn wait_rss_at_most(&self, kib: u64, timeout: Duration) -> u64 {
        let start = Instant::now();
        loop {
            let now = self.rss_kib();
            if now <= kib || start.elapsed() >= timeout {
                return now;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The end of the server's log (for failure messages).
    pub(crate) fn stderr_tail(&self) -> String {
        let log = std::fs::read_to_string(self.dir.path().join("stderr.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(15)..].join("\n")
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        self.watch.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.sampler.take() {
            let _ = t.join();
        }
        let _ = self.child.start_kill();
    }
}

fn sample(pid: u32, w: &Watch) {
    let mut last_sockets = Instant::now() - Duration::from_secs(1);
    while !w.stop.load(Ordering::SeqCst) {
        let Some(rss) = rss_kib(pid) else { return };
        w.peak_rss_kib.fetch_max(rss, Ordering::SeqCst);
        if rss > KILL_RSS_KIB && !w.killed.swap(true, Ordering::SeqCst) {
            eprintln!("the server's RSS reached {} MiB: killed", rss / 1024);
            // SAFETY: kill(2) on the pid of this test's own child.
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGKILL);
            }
        }
        if last_sockets.elapsed() >= Duration::from_millis(50) {
            if let Some(n) = sockets(pid) {
                w.peak_sockets.fetch_max(n, Ordering::SeqCst);
            }
            last_sockets = Instant::now();
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// VmRSS of a process, in KiB.
pub(crate) fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Open sockets of a process.
fn sockets(pid: u32) -> Option<usize> {
    let dir = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    Some(
        dir.filter_map(Result::ok)
            .filter(|e| {
                std::fs::read_link(e.path())
                    .is_ok_and(|l| l.to_string_lossy().starts_with("socket:"))
            })
            .count(),
    )
}

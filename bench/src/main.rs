//! `taskwire-bench`: tasks created and completed per second through the runtime with
//! the scripted echo agent, on the memory and SQLite stores, at several numbers of
//! concurrent callers; and bytes of memory per stored idle task.
//!
//! Run: `cargo run --release -p taskwire-bench` (see `--help`).

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use taskwire_core::{
    Caller, CreateTask, MemoryStore, Message, Runtime, RuntimeConfig, ScriptedAgent, TaskService,
    TaskStore,
};

/// Counts live heap bytes, to measure memory per stored task. Counting is on only
/// while that is measured: a shared counter updated by every allocation would
/// otherwise add contention to the throughput runs.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);
static COUNTING: AtomicBool = AtomicBool::new(false);

// SAFETY: delegates every call to mimalloc (`mimalloc::MiMalloc`, as `taskwire serve`) and
// only adds counting.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        // SAFETY: same contract as the caller's.
        unsafe { mimalloc::MiMalloc.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if COUNTING.load(Ordering::Relaxed) {
            LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        }
        // SAFETY: same contract as the caller's.
        unsafe { mimalloc::MiMalloc.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            LIVE.fetch_add(
                new_size as isize - layout.size() as isize,
                Ordering::Relaxed,
            );
        }
        // SAFETY: same contract as the caller's.
        unsafe { mimalloc::MiMalloc.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Benchmark of the taskwire runtime.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// Stores to measure: memory, sqlite (comma-separated).
    #[arg(long, default_value = "memory,sqlite", value_delimiter = ',')]
    stores: Vec<String>,
    /// Numbers of concurrent callers (comma-separated).
    #[arg(long, default_value = "1,16,256", value_delimiter = ',')]
    callers: Vec<usize>,
    /// How long each measurement runs, in seconds.
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
    /// Tasks stored to measure heap per task (that many idle ones, then that many
    /// completed through the runtime); 0 skips the memory measurement.
    #[arg(long, default_value_t = 20_000)]
    idle_tasks: usize,
    /// SQLite synchronous mode (full or normal).
    #[arg(long, default_value = "full")]
    synchronous: String,
    /// Also store this many idle tasks (256 owners) in a SQLite store, close it, and
    /// time its reopening (the scan that rebuilds its in-memory indexes); 0 skips it.
    #[arg(long, default_value_t = 0)]
    reopen_tasks: usize,
}

fn open(
    kind: &str,
    dir: &tempfile::TempDir,
    synchronous: &str,
) -> Result<Arc<dyn TaskStore>, String> {
    match kind {
        "memory" => Ok(Arc::new(MemoryStore::new())),
        "sqlite" => {
            let path = dir
                .path()
                .join(format!("bench-{}.db", taskwire_core::ids::random_id()));
            let url = format!("sqlite://{}?synchronous={synchronous}", path.display());
            taskwire_store_sqlite::SqliteStore::open(&url)
                .map(|s| Arc::new(s) as Arc<dyn TaskStore>)
                .map_err(|e| e.to_string())
        }
        other => Err(format!("unknown store {other:?} (memory, sqlite)")),
    }
}

/// CPU time (user + system) this process has used so far, in microseconds.
fn cpu_micros() -> f64 {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::uninit();
    // SAFETY: getrusage writes a full rusage into the pointer it is given.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, ru.as_mut_ptr()) };
    if rc != 0 {
        return 0.0;
    }
    // SAFETY: rc == 0 means the struct was initialised.
    let ru = unsafe { ru.assume_init() };
    let tv = |t: libc::timeval| t.tv_sec as f64 * 1e6 + t.tv_usec as f64;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Result of one throughput run.
struct Run {
    tasks: u64,
    per_sec: f64,
    cpu_us_per_task: f64,
    p50_ms: f64,
    p99_ms: f64,
}

async fn throughput(store: Arc<dyn TaskStore>, callers: usize, secs: f64) -> Run {
    let svc = TaskService::new(store, "scripted");
    let rt = Runtime::start(svc.clone(), Arc::new(ScriptedAgent::new()), {
        let mut v = RuntimeConfig::default();
        v.max_concurrent_turns = 512;
        v
    });
    let done = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    let start = Instant::now();
    let cpu0 = cpu_micros();
    let mut joins = Vec::new();
    for c in 0..callers {
        let svc = svc.clone();
        let done = done.clone();
        joins.push(tokio::spawn(async move {
            let caller = Caller::new("bench", format!("caller-{c}"));
            let mut lat = Vec::new();
            while Instant::now() < deadline {
                let t0 = Instant::now();
                let t = match svc
                    .create(&caller, CreateTask::new(Message::user_text("hello")))
                    .await
                {
                    Ok(c) => c.task,
                    Err(e) => {
                        eprintln!("create failed: {e}");
                        return lat;
                    }
                };
                match svc
                    .wait_until_shared(&caller, &t.id, Duration::from_secs(30), |t| {
                        t.state.is_terminal()
                    })
                    .await
                {
                    Ok(t) if t.state.is_terminal() => {
                        done.fetch_add(1, Ordering::Relaxed);
                        lat.push(t0.elapsed().as_secs_f64() * 1000.0);
                    }
                    Ok(t) => eprintln!("task {} not finished: {}", t.id, t.state),
                    Err(e) => eprintln!("wait failed: {e}"),
                }
            }
            lat
        }));
    }
    let mut lat = Vec::new();
    for j in joins {
        if let Ok(l) = j.await {
            lat.extend(l);
        }
    }
    lat.sort_by(|a, b| a.total_cmp(b));
    let pct = |p: f64| {
        lat.get(((lat.len() as f64 * p) as usize).min(lat.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0.0)
    };
    let elapsed = start.elapsed().as_secs_f64();
    let cpu = cpu_micros() - cpu0;
    rt.shutdown(Duration::from_secs(5)).await;
    let n = done.load(Ordering::Relaxed);
    Run {
        tasks: n,
        per_sec: n as f64 / elapsed,
        cpu_us_per_task: cpu / n.max(1) as f64,
        p50_ms: pct(0.5),
        p99_ms: pct(0.99),
    }
}

async fn idle_bytes(n: usize) -> f64 {
    let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::new());
    let svc = TaskService::new(store.clone(), "scripted");
    let caller = Caller::local();
    // Warm up allocations that are not per task.
    let _ = svc
        .create(&caller, CreateTask::new(Message::user_text("warm-up")))
        .await;
    // Bytes allocated minus bytes freed while counting is the change in live heap.
    COUNTING.store(true, Ordering::SeqCst);
    let before = LIVE.load(Ordering::Relaxed);
    for _ in 0..n {
        if svc
            .create(&caller, CreateTask::new(Message::user_text("hello")))
            .await
            .is_err()
        {
            break;
        }
    }
    let after = LIVE.load(Ordering::Relaxed);
    COUNTING.store(false, Ordering::SeqCst);
    drop(svc);
    drop(store);
    (after - before) as f64 / n as f64
}

/// Heap bytes the SQLite store keeps per further stored idle task, once its bounded
/// caches are full: `n` tasks are created first (the snapshot cache holds 8192),
/// then the live heap is compared across `n` more. What it measures is the
/// in-memory listing, the idempotency index, the id map and the queue index (these tasks stay queued: no
/// runtime claims them); SQLite's own page cache is allocated by SQLite, outside
/// the Rust heap, and is bounded anyway.
async fn sqlite_idle_bytes(dir: &tempfile::TempDir, n: usize, synchronous: &str) -> Option<f64> {
    let store = open("sqlite", dir, synchronous).ok()?;
    let svc = TaskService::new(store.clone(), "scripted");
    let caller = Caller::local();
    let create_many = |count: usize| {
        let svc = svc.clone();
        let caller = caller.clone();
        async move {
            // 256 at a time, so that group commit makes this quick.
            let mut left = count;
            while left > 0 {
                let wave = left.min(256);
                let creates = (0..wave)
                    .map(|_| svc.create(&caller, CreateTask::new(Message::user_text("hello"))));
                for r in futures::future::join_all(creates).await {
                    r.ok()?;
                }
                left -= wave;
            }
            Some(())
        }
    };
    create_many(n.max(10_000)).await?;
    COUNTING.store(true, Ordering::SeqCst);
    let before = LIVE.load(Ordering::Relaxed);
    create_many(n).await?;
    let after = LIVE.load(Ordering::Relaxed);
    COUNTING.store(false, Ordering::SeqCst);
    drop(svc);
    drop(store);
    Some((after - before) as f64 / n as f64)
}

/// Stores `n` idle tasks of 256 owners in a SQLite store, closes it, and reopens
/// it: the time the open took (it scans `tasks` to rebuild the id map, listings,
/// idempotency and queue indexes) and the heap it then holds per task.
async fn sqlite_reopen(dir: &tempfile::TempDir, n: usize, synchronous: &str) -> Option<(f64, f64)> {
    let path = dir.path().join("reopen.db");
    let url = format!("sqlite://{}?synchronous={synchronous}", path.display());
    {
        let store: Arc<dyn TaskStore> =
            Arc::new(taskwire_store_sqlite::SqliteStore::open(&url).ok()?);
        let svc = TaskService::new(store, "scripted");
        let mut made = 0;
        while made < n {
            let wave = (n - made).min(512);
            let creates = (0..wave).map(|i| {
                let svc = svc.clone();
                async move {
                    let caller = Caller::new("bench", format!("caller-{}", i % 256));
                    svc.create(&caller, CreateTask::new(Message::user_text("hello")))
                        .await
                }
            });
            for r in futures::future::join_all(creates).await {
                r.ok()?;
            }
            made += wave;
        }
    }
    COUNTING.store(true, Ordering::SeqCst);
    let before = LIVE.load(Ordering::Relaxed);
    let t0 = Instant::now();
    let store = taskwire_store_sqlite::SqliteStore::open(&url).ok()?;
    let took = t0.elapsed().as_secs_f64() * 1000.0;
    let after = LIVE.load(Ordering::Relaxed);
    COUNTING.store(false, Ordering::SeqCst);
    drop(store);
    Some((took, (after - before) as f64 / n.max(1) as f64))
}

/// Heap bytes retained per task created and completed through the runtime on the
/// memory store (the task, its event log and its idempotency key stay stored).
async fn completed_bytes(n: usize) -> f64 {
    let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::new());
    let svc = TaskService::new(store.clone(), "scripted");
    let rt = Runtime::start(
        svc.clone(),
        Arc::new(ScriptedAgent::new()),
        RuntimeConfig::default(),
    );
    let caller = Caller::local();
    let run_one = |text: &'static str| {
        let svc = svc.clone();
        let caller = caller.clone();
        async move {
            let t = svc
                .create(&caller, CreateTask::new(Message::user_text(text)))
                .await
                .ok()?;
            svc.wait_until(&caller, &t.task.id, Duration::from_secs(30), |t| {
                t.state.is_terminal()
            })
            .await
            .ok()
        }
    };
    // Warm up allocations that are not per task (runtime, channels, map capacity).
    for _ in 0..1000 {
        let _ = run_one("warm-up").await;
    }
    COUNTING.store(true, Ordering::SeqCst);
    let before = LIVE.load(Ordering::Relaxed);
    let mut done = 0usize;
    for _ in 0..n {
        if run_one("hello").await.is_some() {
            done += 1;
        }
    }
    // Let the turns' last bookkeeping (permits, watch channels) settle.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let after = LIVE.load(Ordering::Relaxed);
    COUNTING.store(false, Ordering::SeqCst);
    rt.shutdown(Duration::from_secs(5)).await;
    drop(svc);
    drop(store);
    (after - before) as f64 / done.max(1) as f64
}

fn main() {
    // The purge delay `taskwire serve` sets (crates/taskwire/src/main.rs):
    // mi_option_purge_delay (15) at 1000 ms, unless the environment sets it.
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: mi_option_set stores an option value; any value is valid for it.
        unsafe { libmimalloc_sys::mi_option_set(15, 1000) };
    }
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start the tokio runtime: {e}");
            std::process::exit(2);
        }
    };
    rt.block_on(run());
}

async fn run() {
    let args = Args::parse();
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("cannot create a temporary directory: {e}");
            std::process::exit(2);
        }
    };
    // Memory first, while nothing else is allocated or being freed; 0 skips it.
    let memory = if args.idle_tasks > 0 {
        Some((
            idle_bytes(args.idle_tasks).await,
            completed_bytes(args.idle_tasks).await,
        ))
    } else {
        None
    };
    let sqlite_bytes = if args.idle_tasks > 0 && args.stores.iter().any(|s| s == "sqlite") {
        sqlite_idle_bytes(&dir, args.idle_tasks, &args.synchronous).await
    } else {
        None
    };
    println!("| store | callers | tasks | tasks/s | p50 ms | p99 ms | CPU µs/task |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for kind in &args.stores {
        for &c in &args.callers {
            let store = match open(kind, &dir, &args.synchronous) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("{e}");
                    std::process::exit(2);
                }
            };
            let r = throughput(store, c.max(1), args.seconds).await;
            println!(
                "| {kind} | {c} | {} | {:.0} | {:.2} | {:.2} | {:.1} |",
                r.tasks, r.per_sec, r.p50_ms, r.p99_ms, r.cpu_us_per_task
            );
        }
    }
    if let Some((bytes, done_bytes)) = memory {
        println!();
        println!(
            "memory store: {bytes:.0} bytes of heap per stored idle task (one 5-byte text message, {} tasks)",
            args.idle_tasks
        );
        println!(
            "memory store: {done_bytes:.0} bytes of heap per completed echo task (task, event log, idempotency key; {} tasks)",
            args.idle_tasks
        );
    }
    if args.reopen_tasks > 0 {
        match sqlite_reopen(&dir, args.reopen_tasks, &args.synchronous).await {
            Some((ms, bytes)) => println!(
                "sqlite store: reopening with {} idle tasks took {ms:.0} ms; heap after open {bytes:.0} bytes per task",
                args.reopen_tasks
            ),
            None => eprintln!("the reopen measurement failed"),
        }
    }
    if let Some(bytes) = sqlite_bytes {
        println!(
            "sqlite store: {bytes:.0} bytes of heap per further stored idle task (in-memory listing ~190 B, idempotency index ~40 B, id map ~40 B, queue index of a queued task; caches full; {} tasks)",
            args.idle_tasks
        );
    }
}

//! `taskwire-bench`: tasks created and completed per second through the runtime with
//! the scripted echo agent, on the memory and SQLite stores, at several numbers of
//! concurrent callers; and bytes of memory per stored idle task.
//!
//! Run: `cargo run --release -p taskwire-bench` (see `--help`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use taskwire_core::{
    Caller, CreateTask, MemoryStore, Message, Runtime, RuntimeConfig, ScriptedAgent, TaskService,
    TaskStore,
};

/// Counts live heap bytes, to measure memory per stored task.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: delegates every call to the system allocator and only adds counting.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
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
    /// Idle tasks created to measure memory per stored task.
    #[arg(long, default_value_t = 20_000)]
    idle_tasks: usize,
    /// SQLite synchronous mode (full or normal).
    #[arg(long, default_value = "full")]
    synchronous: String,
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

async fn throughput(store: Arc<dyn TaskStore>, callers: usize, secs: f64) -> (u64, f64) {
    let svc = TaskService::new(store, "scripted");
    let rt = Runtime::start(
        svc.clone(),
        Arc::new(ScriptedAgent::new()),
        RuntimeConfig {
            max_concurrent_turns: 512,
            ..RuntimeConfig::default()
        },
    );
    let done = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    let start = Instant::now();
    let mut joins = Vec::new();
    for c in 0..callers {
        let svc = svc.clone();
        let done = done.clone();
        joins.push(tokio::spawn(async move {
            let caller = Caller::new("bench", format!("caller-{c}"));
            while Instant::now() < deadline {
                let t = match svc
                    .create(&caller, CreateTask::new(Message::user_text("hello")))
                    .await
                {
                    Ok(c) => c.task,
                    Err(e) => {
                        eprintln!("create failed: {e}");
                        return;
                    }
                };
                match svc
                    .wait_until(&caller, &t.id, Duration::from_secs(30), |t| {
                        t.state.is_terminal()
                    })
                    .await
                {
                    Ok(t) if t.state.is_terminal() => {
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(t) => eprintln!("task {} not finished: {}", t.id, t.state),
                    Err(e) => eprintln!("wait failed: {e}"),
                }
            }
        }));
    }
    for j in joins {
        let _ = j.await;
    }
    let elapsed = start.elapsed().as_secs_f64();
    rt.shutdown(Duration::from_secs(5)).await;
    let n = done.load(Ordering::Relaxed);
    (n, n as f64 / elapsed)
}

async fn idle_bytes(n: usize) -> f64 {
    let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::new());
    let svc = TaskService::new(store.clone(), "scripted");
    let caller = Caller::local();
    // Warm up allocations that are not per task.
    let _ = svc
        .create(&caller, CreateTask::new(Message::user_text("warm-up")))
        .await;
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
    drop(svc);
    drop(store);
    (after - before) as f64 / n as f64
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("cannot create a temporary directory: {e}");
            std::process::exit(2);
        }
    };
    println!("| store | callers | tasks | tasks/s |");
    println!("|---|---:|---:|---:|");
    for kind in &args.stores {
        for &c in &args.callers {
            let store = match open(kind, &dir, &args.synchronous) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("{e}");
                    std::process::exit(2);
                }
            };
            let (n, rate) = throughput(store, c.max(1), args.seconds).await;
            println!("| {kind} | {c} | {n} | {rate:.0} |");
        }
    }
    let bytes = idle_bytes(args.idle_tasks.max(1)).await;
    println!();
    println!(
        "memory store: {bytes:.0} bytes of heap per stored idle task (one 5-byte text message, {} tasks)",
        args.idle_tasks
    );
}

//! Crash-test helper for `tests/durability.rs`: opens the store given as the first
//! argument, creates tasks from several concurrent callers until it is killed, and
//! prints the id of every task whose create was acknowledged, one per line, flushed.

use std::io::Write;
use std::sync::Arc;

use taskwire_core::{Caller, CreateTask, Message, TaskService, TaskStore};
use taskwire_store_sqlite::SqliteStore;

const CALLERS: usize = 8;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let Some(url) = std::env::args().nth(1) else {
        eprintln!("usage: taskwire-sqlite-crashtest STORE");
        std::process::exit(2);
    };
    let store: Arc<dyn TaskStore> = match SqliteStore::open(&url) {
        Ok(s) => Arc::new(s),
        Err(e) => {
            eprintln!("open {url}: {e}");
            std::process::exit(1);
        }
    };
    let service = TaskService::new(store, "scripted");
    let out = Arc::new(std::sync::Mutex::new(std::io::stdout()));
    let mut callers = Vec::new();
    for c in 0..CALLERS {
        let service = service.clone();
        let out = out.clone();
        callers.push(tokio::spawn(async move {
            for i in 0u64.. {
                let mut message = Message::user_text(format!("crash test {c}/{i}"));
                message.message_id = format!("crash-{c}-{i}");
                match service
                    .create(&Caller::local(), CreateTask::new(message))
                    .await
                {
                    Ok(created) => {
                        let Ok(mut out) = out.lock() else { return };
                        if writeln!(out, "{}", created.task.id)
                            .and_then(|()| out.flush())
                            .is_err()
                        {
                            return;
                        }
                    }
                    Err(e) => {
                        eprintln!("create failed: {e}");
                        std::process::exit(1);
                    }
                }
            }
        }));
    }
    for c in callers {
        let _ = c.await;
    }
}

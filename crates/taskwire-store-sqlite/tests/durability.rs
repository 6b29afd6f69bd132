//! Durability: acknowledged creates survive `kill -9`, and idempotency survives a restart.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;

use taskwire_core::{
    Caller, CreateTask, EventKind, Message, TaskId, TaskService, TaskState, TaskStore,
};
use taskwire_store_sqlite::SqliteStore;

const ACKED: usize = 300;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_creates_survive_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("crash.db").display());
    let mut child = Command::new(env!("CARGO_BIN_EXE_taskwire-sqlite-crashtest"))
        .arg(&url)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut acked = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        acked.push(TaskId::parse(line.trim()).unwrap());
        if acked.len() == ACKED {
            break;
        }
    }
    assert_eq!(acked.len(), ACKED, "the child stopped early");
    // The child is still creating tasks: kill it mid-stream (SIGKILL).
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success());

    let store = SqliteStore::open(&url).unwrap();
    for id in &acked {
        let task = store
            .get(id)
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("acknowledged task {id} lost"));
        assert_eq!(task.state, TaskState::Submitted);
        let events = store.events(id, 0, 100).await.unwrap();
        assert_eq!(events.len() as u64, task.last_seq, "history of {id}");
        assert!(matches!(events[0].kind, EventKind::Created { .. }));
        assert!(matches!(events[1].kind, EventKind::Message { .. }));
    }
    // Every acknowledged task is still queued (more may be, from creates in flight).
    assert!(store.queue_depth().await.unwrap() >= ACKED as u64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idempotent_create_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("restart.db");
    let url = path.display().to_string();
    let msg = || {
        let mut m = Message::user_text("hello");
        m.message_id = "restart-1".into();
        m
    };
    let first = {
        let store: Arc<dyn TaskStore> = Arc::new(SqliteStore::open(&url).unwrap());
        let svc = TaskService::new(store, "scripted");
        let created = svc
            .create(&Caller::local(), CreateTask::new(msg()))
            .await
            .unwrap();
        assert!(created.created);
        created.task
    };
    // The store is closed here; open it again as a restarted server would.
    let store: Arc<dyn TaskStore> = Arc::new(SqliteStore::open(&url).unwrap());
    let svc = TaskService::new(store.clone(), "scripted");
    let again = svc
        .create(&Caller::local(), CreateTask::new(msg()))
        .await
        .unwrap();
    assert!(!again.created);
    assert_eq!(again.task.id, first.id);
    assert_eq!(again.task, first);
    assert_eq!(store.queue_depth().await.unwrap(), 1);
}

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

/// Dropping the store closes it: the readers first, then the writer, which
/// checkpoints the log into the database file, so SQLite deletes the log and the
/// shared-memory file; what was written is in the database file alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_checkpoints_and_removes_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("close.db");
    let side = |suffix: &str| dir.path().join(format!("close.db{suffix}"));
    let id = {
        let store: Arc<dyn TaskStore> =
            Arc::new(SqliteStore::open(path.to_str().unwrap()).unwrap());
        let svc = TaskService::new(store.clone(), "scripted");
        let created = svc
            .create(
                &Caller::local(),
                CreateTask::new(Message::user_text("kept")),
            )
            .await
            .unwrap();
        // Reads use (and pool) read connections, which must not keep the log.
        for _ in 0..4 {
            assert!(store.get(&created.task.id).await.unwrap().is_some());
            assert_eq!(
                store.events(&created.task.id, 0, 10).await.unwrap().len(),
                2
            );
        }
        assert!(
            side("-wal").exists(),
            "the log exists while the store is open"
        );
        created.task.id.clone()
    };
    assert!(!side("-wal").exists(), "the log was removed on close");
    assert!(
        !side("-shm").exists(),
        "the shared-memory file was removed on close"
    );
    // The task is in the database file itself.
    let conn = rusqlite::Connection::open(&path).unwrap();
    let n: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM tasks WHERE id = ?1",
            [id.as_str()],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(n, 1);
}

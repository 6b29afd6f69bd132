//! The shared store suite of taskwire-core, run against the SQLite store.

use std::sync::{Arc, Mutex};

use taskwire_core::TaskStore;
use taskwire_store_sqlite::SqliteStore;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_store_passes_the_shared_suite() {
    // Each store gets its own directory, kept until the end of the test.
    let dirs = Mutex::new(Vec::new());
    let factory = || {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&format!(
            "sqlite://{}",
            dir.path().join("suite.db").display()
        ))
        .unwrap();
        dirs.lock().unwrap().push(dir);
        Arc::new(store) as Arc<dyn TaskStore>
    };
    taskwire_core::store_suite::run_all(&factory).await;
}

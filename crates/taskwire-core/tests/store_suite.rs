//! The shared store suite against the in-memory store.

use std::sync::Arc;

use taskwire_core::{MemoryStore, TaskStore};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_store_passes_the_shared_suite() {
    taskwire_core::store_suite::run_all(&|| Arc::new(MemoryStore::new()) as Arc<dyn TaskStore>)
        .await;
}

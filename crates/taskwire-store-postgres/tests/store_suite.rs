//! The shared store suite of taskwire-core, run against the PostgreSQL store on
//! the database named by `TASKWIRE_TEST_POSTGRES_URL` (skipped without it). Each
//! store gets a fresh schema of its own, dropped at the end.

use std::sync::Arc;

use taskwire_core::TaskStore;

mod common;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_store_passes_the_shared_suite() {
    let Some(url) = common::url() else {
        return;
    };
    let schemas = common::Schemas::new(&url);
    let factory = || {
        let schema = schemas.fresh();
        let store = tokio::task::block_in_place(|| {
            tokio::runtime::Handle::current().block_on(schemas.open(&schema))
        });
        Arc::new(store) as Arc<dyn TaskStore>
    };
    taskwire_core::store_suite::run_all(&factory).await;
}

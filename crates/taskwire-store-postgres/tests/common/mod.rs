//! Shared by the integration tests: the test database's address and fresh
//! schemas that are dropped when the test ends, whether it passed or not.

#![allow(
    dead_code,
    unreachable_pub,
    reason = "each test binary uses part of this module"
)]
#![expect(
    clippy::unwrap_used,
    reason = "test helpers panic on failure by design"
)]

use std::sync::Mutex;

use taskwire_store_postgres::{PostgresOptions, PostgresStore};

/// The variable naming the test database.
pub const URL_VAR: &str = "TASKWIRE_TEST_POSTGRES_URL";

/// The test database's address, if the variable is set (say the test is
/// skipped otherwise).
pub fn url() -> Option<String> {
    let url = std::env::var(URL_VAR).ok().filter(|u| !u.is_empty());
    if url.is_none() {
        println!("skipped: {URL_VAR} is not set");
    }
    url
}

/// Fresh schemas, each dropped (with everything in it) when this is dropped.
pub struct Schemas {
    url: String,
    names: Mutex<Vec<String>>,
}

impl Schemas {
    /// None to hand out yet.
    pub fn new(url: &str) -> Self {
        Self {
            url: url.to_string(),
            names: Mutex::new(Vec::new()),
        }
    }

    /// A new schema name, random, to be dropped at the end.
    pub fn fresh(&self) -> String {
        let name = format!("tw_test_{}", taskwire_core::TaskId::new().as_str());
        self.names.lock().unwrap().push(name.clone());
        name
    }

    /// Opens a store on `schema` (creating it) with a small pool.
    pub async fn open(&self, schema: &str) -> PostgresStore {
        PostgresStore::open(&self.url, {
            let mut v = PostgresOptions::default();
            v.pool_size = 4;
            v.schema = Some(schema.to_string());
            v
        })
        .await
        .unwrap()
    }
}

impl Drop for Schemas {
    fn drop(&mut self) {
        let names = std::mem::take(&mut *self.names.lock().unwrap_or_else(|e| e.into_inner()));
        if names.is_empty() {
            return;
        }
        let url = self.url.clone();
        // A thread of its own: this may run inside (or while unwinding out of) a
        // runtime, where blocking on another one is not allowed.
        let cleanup = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                    .await
                    .unwrap();
                let driver = tokio::spawn(conn);
                for s in &names {
                    if let Err(e) = client
                        .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{s}\" CASCADE"))
                        .await
                    {
                        eprintln!("dropping test schema {s}: {e}");
                    }
                }
                drop(client);
                let _ = driver.await;
            });
        });
        let _ = cleanup.join();
    }
}

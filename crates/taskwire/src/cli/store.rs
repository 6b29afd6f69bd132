//! The store named by `--store`.

use std::sync::Arc;

use taskwire_core::{MemoryStore, TaskStore};

use super::args::{PgArgs, STORE_SCHEMES};
use crate::error::Error;

/// Whether the store at `url` can be shared by several nodes.
pub(crate) fn store_is_shared(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

/// Opens the store named by `--store` (`pg` applies to a PostgreSQL store only).
pub(crate) async fn open_store(url: &str, pg: &PgArgs) -> Result<Arc<dyn TaskStore>, Error> {
    let scheme = url.split_once("://").map(|(s, _)| s);
    #[cfg(not(feature = "postgres"))]
    let _ = pg;
    match scheme {
        #[cfg(feature = "postgres")]
        Some("postgres" | "postgresql") => {
            let options = {
                let mut v = taskwire_store_postgres::PostgresOptions::default();
                v.pool_size = pg.pg_pool_size;
                v.statement_timeout =
                    (!pg.pg_statement_timeout.is_zero()).then_some(pg.pg_statement_timeout);
                v.max_batch = pg.pg_max_batch;
                v.write_batches = pg.pg_write_batches;
                v.timeout = pg.pg_timeout;
                v
            };
            taskwire_store_postgres::PostgresStore::open(url, options)
                .await
                .map(|s| Arc::new(s) as Arc<dyn TaskStore>)
                .map_err(|e| Error::StoreOpen {
                    url: url.to_string(),
                    reason: e.to_string(),
                })
        }
        Some("memory") if url == "memory://" => Ok(Arc::new(MemoryStore::new())),
        #[cfg(feature = "sqlite")]
        Some("sqlite") => taskwire_store_sqlite::SqliteStore::open(url)
            .map(|s| Arc::new(s) as Arc<dyn TaskStore>)
            .map_err(|e| Error::StoreOpen {
                url: url.to_string(),
                reason: e.to_string(),
            }),
        _ => Err(Error::UnknownStore {
            url: url.to_string(),
            expected: STORE_SCHEMES,
        }),
    }
}

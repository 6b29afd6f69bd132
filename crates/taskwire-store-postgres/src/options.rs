//! Options of the PostgreSQL store.

use std::time::Duration;

/// How the store connects and how large its pool is.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct PostgresOptions {
    /// Connections in the pool (at least 1). The LISTEN connection is one more.
    pub pool_size: usize,
    /// Server-side `statement_timeout` of every pooled connection; `None` keeps
    /// the server's setting.
    pub statement_timeout: Option<Duration>,
    /// How long opening a connection may take, unless the URL says
    /// (`connect_timeout=SECONDS`).
    pub connect_timeout: Duration,
    /// How long a request waits for a free pooled connection before it fails.
    pub wait_timeout: Duration,
    /// The schema the store's tables live in (created if missing); `None` uses
    /// the connection's `search_path` (normally `public`). Stores sharing one
    /// database and one schema are nodes of one deployment.
    pub schema: Option<String>,
    /// Group commit: the most creates and commits sent as one batch (one round
    /// trip, one transaction).
    pub max_batch: usize,
    /// Group commit: the most batches in flight at once; writes that come while
    /// they are wait and form the next batch.
    pub write_batches: usize,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        Self {
            pool_size: 16,
            statement_timeout: Some(Duration::from_secs(30)),
            connect_timeout: Duration::from_secs(10),
            wait_timeout: Duration::from_secs(30),
            schema: None,
            max_batch: 256,
            write_batches: 2,
        }
    }
}

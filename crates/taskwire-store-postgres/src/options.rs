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
    /// (`connect_timeout=SECONDS`); a request's wait for it is also bounded by
    /// [`PostgresOptions::timeout`].
    pub connect_timeout: Duration,
    /// How long a request waits for a free pooled connection before it fails
    /// (also bounded by [`PostgresOptions::timeout`]).
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
    /// The bound of every call to the database: waiting for a pooled connection
    /// (or opening one), sending the statement and reading its answer. A call
    /// that takes longer fails with [`StoreError::Unavailable`], and the
    /// connection it used is closed rather than returned to the pool. Writes,
    /// reads, claims, renewals, the LISTEN health check and readiness all use
    /// it. Keep it below the listener's and clients' request timeouts.
    ///
    /// [`StoreError::Unavailable`]: taskwire_core::StoreError::Unavailable
    pub timeout: Duration,
    /// TCP keepalive of every connection, unless the URL sets `keepalives`,
    /// `keepalives_idle`, `keepalives_interval` or `keepalives_retries`: the
    /// idle time before the first probe, the time between probes, and how many
    /// unanswered probes close the connection.
    pub keepalives: Keepalives,
    /// `TCP_USER_TIMEOUT` of every connection (how long sent data may stay
    /// unacknowledged before the kernel closes the connection), unless the URL
    /// sets `tcp_user_timeout`; `None` leaves the system's default (minutes).
    pub tcp_user_timeout: Option<Duration>,
}

/// TCP keepalive settings (see [`PostgresOptions::keepalives`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Keepalives {
    /// Idle time before the first probe.
    pub idle: Duration,
    /// Time between probes.
    pub interval: Duration,
    /// Unanswered probes before the connection is closed.
    pub retries: u32,
}

impl Default for Keepalives {
    fn default() -> Self {
        Self {
            idle: Duration::from_secs(5),
            interval: Duration::from_secs(2),
            retries: 3,
        }
    }
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
            timeout: Duration::from_secs(10),
            keepalives: Keepalives::default(),
            tcp_user_timeout: Some(Duration::from_secs(10)),
        }
    }
}

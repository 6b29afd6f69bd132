//! The crate's error type.

use taskwire_core::StoreError;

/// Errors from opening or running the PostgreSQL store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PostgresError {
    /// The store URL could not be understood.
    #[error("invalid PostgreSQL store address: {0}")]
    InvalidUrl(String),
    /// The options are not usable (a pool of no connections, a bad schema name).
    #[error("invalid PostgreSQL store options: {0}")]
    InvalidOptions(String),
    /// PostgreSQL (or the connection to it) reported an error.
    #[error("postgres: {}", describe(.0))]
    Postgres(#[from] tokio_postgres::Error),
    /// No pooled connection could be had (the database is unreachable, or every
    /// connection stayed busy past the wait timeout).
    #[error("postgres connection pool: {0}")]
    Pool(String),
    /// The database was migrated by a newer taskwire whose schema this one does not know.
    #[error("database schema version {found} is newer than the {supported} this build knows")]
    SchemaTooNew {
        /// The highest version in `schema_migrations`.
        found: i64,
        /// The newest schema version this build can use.
        supported: i64,
    },
}

impl From<deadpool_postgres::PoolError> for PostgresError {
    fn from(e: deadpool_postgres::PoolError) -> Self {
        match e {
            deadpool_postgres::PoolError::Backend(e) => PostgresError::Postgres(e),
            other => PostgresError::Pool(other.to_string()),
        }
    }
}

/// A pool error, with the server's message when connecting failed.
fn describe_pool(e: &deadpool_postgres::PoolError) -> String {
    match e {
        deadpool_postgres::PoolError::Backend(e) => describe(e),
        other => other.to_string(),
    }
}

impl From<PostgresError> for StoreError {
    fn from(e: PostgresError) -> Self {
        StoreError::Backend(e.to_string())
    }
}

/// What went wrong, with the server's message (tokio-postgres' own `Display` says
/// only "db error") or the underlying cause.
pub(crate) fn describe(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return format!(
            "{}: {} (SQLSTATE {})",
            db.severity(),
            db.message(),
            db.code().code()
        );
    }
    match std::error::Error::source(e) {
        Some(cause) => format!("{e}: {cause}"),
        None => e.to_string(),
    }
}

/// Whether `e` says that the database could not be reached or did not answer
/// (the connection failed, was closed, or the server is shutting down, refusing
/// connections or cancelled the statement on its timeout), rather than that it
/// answered and refused the statement.
pub(crate) fn unreachable(e: &tokio_postgres::Error) -> bool {
    if let Some(db) = e.as_db_error() {
        let code = db.code().code();
        // Class 08: connection exception; 57P01-57P03: the server is shutting
        // down or not accepting connections yet; 53300: too many connections;
        // 57014: the statement was cancelled (statement_timeout).
        return code.starts_with("08")
            || matches!(code, "57P01" | "57P02" | "57P03" | "53300" | "57014");
    }
    if e.is_closed() {
        return true;
    }
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        if c.is::<std::io::Error>() {
            return true;
        }
        cause = c.source();
    }
    // tokio-postgres' own words for a connection that failed or timed out.
    let text = e.to_string();
    [
        "error connecting",
        "error communicating",
        "timeout",
        "connection closed",
    ]
    .iter()
    .any(|p| text.starts_with(p))
}

/// Maps a PostgreSQL error met while serving a request to the core's store error:
/// [`StoreError::Unavailable`] when the database did not answer, else
/// [`StoreError::Backend`].
pub(crate) fn backend(e: tokio_postgres::Error) -> StoreError {
    if unreachable(&e) {
        StoreError::Unavailable(format!("postgres: {}", describe(&e)))
    } else {
        StoreError::Backend(format!("postgres: {}", describe(&e)))
    }
}

/// Maps a pool error met while serving a request to the core's store error: no
/// connection to be had in time, or connecting failed, is
/// [`StoreError::Unavailable`].
pub(crate) fn pool(e: deadpool_postgres::PoolError) -> StoreError {
    let text = format!("postgres connection pool: {}", describe_pool(&e));
    match &e {
        deadpool_postgres::PoolError::Backend(e) if !unreachable(e) => StoreError::Backend(text),
        deadpool_postgres::PoolError::Backend(_)
        | deadpool_postgres::PoolError::Timeout(_)
        | deadpool_postgres::PoolError::Closed => StoreError::Unavailable(text),
        _ => StoreError::Backend(text),
    }
}

/// The error of a call that did not end within the store's timeout.
pub(crate) fn timed_out(what: &str, timeout: std::time::Duration) -> StoreError {
    StoreError::Unavailable(format!(
        "postgres: {what} did not answer within {} ms",
        timeout.as_millis()
    ))
}

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

/// Maps a PostgreSQL error met while serving a request to the core's store error.
pub(crate) fn backend(e: tokio_postgres::Error) -> StoreError {
    StoreError::Backend(format!("postgres: {}", describe(&e)))
}

/// Maps a pool error met while serving a request to the core's store error.
pub(crate) fn pool(e: deadpool_postgres::PoolError) -> StoreError {
    StoreError::Backend(format!("postgres connection pool: {}", describe_pool(&e)))
}

//! The crate's error type.

use taskwire_core::StoreError;

/// Errors from opening or running the SQLite store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SqliteError {
    /// The store URL or path could not be understood.
    #[error("invalid SQLite store address {url:?}: {reason}")]
    InvalidUrl {
        /// The address as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// SQLite reported an error.
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// A file-system operation failed (creating the database's directory).
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    /// The database was written by a newer taskwire whose schema this one does not know.
    #[error("database schema version {found} is newer than the {supported} this build knows")]
    SchemaTooNew {
        /// `PRAGMA user_version` of the database.
        found: i64,
        /// The newest schema version this build can use.
        supported: i64,
    },
    /// SQLite refused to switch the database to write-ahead logging.
    #[error("could not enable WAL mode (journal mode is {0:?})")]
    NoWal(String),
    /// Another store (in this process or another one) has the database open.
    #[error("the database {0:?} is in use by another taskwire store")]
    InUse(std::path::PathBuf),
    /// The writer thread could not be started or has stopped.
    #[error("the writer thread is not running: {0}")]
    Writer(String),
}

impl From<SqliteError> for StoreError {
    fn from(e: SqliteError) -> Self {
        StoreError::Backend(e.to_string())
    }
}

/// Maps a SQLite error met while serving a request to the core's store error.
pub(crate) fn backend(e: rusqlite::Error) -> StoreError {
    StoreError::Backend(format!("sqlite: {e}"))
}

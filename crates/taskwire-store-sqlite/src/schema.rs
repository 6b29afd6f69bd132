//! Connection set-up and the versioned schema migrations.
//!
//! Times are integers: `created_us` in microseconds (the list order and the cursor
//! use microseconds), every other time in nanoseconds so that comparisons are as
//! exact as the in-memory store's.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use crate::error::SqliteError;
use crate::options::SqliteOptions;

/// The schema migrations, applied in order; `PRAGMA user_version` counts those applied.
/// Never edit a released migration: append a new one.
pub(crate) const MIGRATIONS: &[&str] = &[
    // 1: tasks, events, idempotency keys and the work queue.
    r#"
CREATE TABLE tasks (
    id          TEXT PRIMARY KEY NOT NULL,
    tenant      TEXT NOT NULL,
    owner       TEXT NOT NULL,
    context_id  TEXT NOT NULL,
    state       TEXT NOT NULL,
    terminal    INTEGER NOT NULL,
    version     INTEGER NOT NULL,
    created_us  INTEGER NOT NULL,
    updated_ns  INTEGER NOT NULL,
    expires_ns  INTEGER,
    idle_ns     INTEGER,
    -- JSON array of the reviewers of pending reviews; NULL when there are none.
    reviewers   TEXT,
    -- The task snapshot as JSON.
    body        BLOB NOT NULL
);
CREATE INDEX tasks_by_owner ON tasks (tenant, owner, created_us, id);
CREATE INDEX tasks_by_reviewer ON tasks (tenant, created_us, id) WHERE reviewers IS NOT NULL;
CREATE INDEX tasks_expiring ON tasks (expires_ns) WHERE terminal = 1 AND expires_ns IS NOT NULL;
CREATE INDEX tasks_idle ON tasks (idle_ns) WHERE terminal = 0 AND idle_ns IS NOT NULL;

CREATE TABLE events (
    task_id  TEXT NOT NULL,
    seq      INTEGER NOT NULL,
    -- The event as JSON.
    body     BLOB NOT NULL,
    PRIMARY KEY (task_id, seq)
) WITHOUT ROWID;

CREATE TABLE idempotency (
    tenant      TEXT NOT NULL,
    owner       TEXT NOT NULL,
    message_id  TEXT NOT NULL,
    task_id     TEXT NOT NULL,
    PRIMARY KEY (tenant, owner, message_id)
) WITHOUT ROWID;
CREATE INDEX idempotency_by_task ON idempotency (task_id);

CREATE TABLE queue (
    task_id      TEXT PRIMARY KEY NOT NULL,
    -- 1 while claimable, 0 while leased.
    available    INTEGER NOT NULL,
    lease_owner  TEXT,
    lease_until  INTEGER,
    epoch        INTEGER NOT NULL,
    attempts     INTEGER NOT NULL,
    -- FIFO position among claimable entries.
    ready_seq    INTEGER NOT NULL
);
CREATE INDEX queue_ready ON queue (ready_seq) WHERE available = 1;
CREATE INDEX queue_leases ON queue (lease_until) WHERE available = 0;
"#,
];

const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Opens the writer connection: WAL mode, the chosen durability, migrations applied.
pub(crate) fn open_writer(path: &Path, options: &SqliteOptions) -> Result<Connection, SqliteError> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(SqliteError::NoWal(mode));
    }
    conn.pragma_update(None, "synchronous", options.synchronous.pragma_value())?;
    conn.pragma_update(None, "foreign_keys", false)?;
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    // 32 MiB of page cache; checkpoint every 4000 pages (about 16 MiB of WAL).
    conn.pragma_update(None, "cache_size", -32_768)?;
    conn.pragma_update(None, "wal_autocheckpoint", 4000)?;
    conn.set_prepared_statement_cache_capacity(64);
    migrate(&conn)?;
    Ok(conn)
}

/// Opens a read-only connection on a database the writer has already set up.
pub(crate) fn open_reader(path: &Path) -> Result<Connection, rusqlite::Error> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.pragma_update(None, "cache_size", -16_384)?;
    conn.set_prepared_statement_cache_capacity(32);
    Ok(conn)
}

/// Applies the migrations the database lacks, each in its own transaction.
pub(crate) fn migrate(conn: &Connection) -> Result<(), SqliteError> {
    let supported = MIGRATIONS.len() as i64;
    loop {
        let tx = rusqlite::Transaction::new_unchecked(conn, TransactionBehavior::Immediate)?;
        let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version > supported {
            return Err(SqliteError::SchemaTooNew {
                found: version,
                supported,
            });
        }
        let Some(sql) = usize::try_from(version)
            .ok()
            .and_then(|v| MIGRATIONS.get(v))
        else {
            return Ok(());
        };
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", version + 1)?;
        tx.commit()?;
        tracing::info!(version = version + 1, "sqlite store schema migrated");
    }
}

//! Connection set-up and the versioned schema migrations.
//!
//! Times are integers: `created_us` in microseconds (the list order and the cursor
//! use microseconds), every other time in nanoseconds so that comparisons are as
//! exact as the in-memory store's.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use crate::error::SqliteError;
use crate::options::{SqliteOptions, Synchronous};

/// The schema migrations, applied in order; `PRAGMA user_version` counts those applied.
/// Never edit a released migration: append a new one.
pub(crate) const MIGRATIONS: &[&str] = &[
    // 1: tasks, events, idempotency keys and the work queue.
    //
    // Task ids are random, so every table keyed by them would take each write to a
    // random page. Instead each task gets an increasing integer key (`tid`, the rowid)
    // and only the `tasks_id` index is keyed by the random id: the event log, the
    // queue and the idempotency back-reference are keyed by `tid`, so that the writes
    // of one group commit land on a few shared pages at the right edge of each tree.
    r#"
CREATE TABLE tasks (
    tid         INTEGER PRIMARY KEY,
    id          TEXT NOT NULL,
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
CREATE UNIQUE INDEX tasks_id ON tasks (id);
CREATE INDEX tasks_by_owner ON tasks (tenant, owner, created_us, id);
CREATE INDEX tasks_by_reviewer ON tasks (tenant, created_us, id) WHERE reviewers IS NOT NULL;
CREATE INDEX tasks_expiring ON tasks (expires_ns) WHERE terminal = 1 AND expires_ns IS NOT NULL;
CREATE INDEX tasks_idle ON tasks (idle_ns) WHERE terminal = 0 AND idle_ns IS NOT NULL;

CREATE TABLE events (
    tid   INTEGER NOT NULL,
    seq   INTEGER NOT NULL,
    -- The event as JSON.
    body  BLOB NOT NULL,
    PRIMARY KEY (tid, seq)
) WITHOUT ROWID;

CREATE TABLE idempotency (
    tenant      TEXT NOT NULL,
    owner       TEXT NOT NULL,
    message_id  TEXT NOT NULL,
    tid         INTEGER NOT NULL,
    PRIMARY KEY (tenant, owner, message_id)
) WITHOUT ROWID;
CREATE INDEX idempotency_by_task ON idempotency (tid);

CREATE TABLE queue (
    tid          INTEGER PRIMARY KEY,
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

-- Tasks per state, kept by triggers so that counting never scans the tasks.
CREATE TABLE state_counts (
    state  TEXT PRIMARY KEY NOT NULL,
    n      INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TRIGGER tasks_count_insert AFTER INSERT ON tasks BEGIN
    INSERT INTO state_counts (state, n) VALUES (NEW.state, 1)
        ON CONFLICT (state) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER tasks_count_update AFTER UPDATE OF state ON tasks
WHEN OLD.state IS NOT NEW.state BEGIN
    UPDATE state_counts SET n = n - 1 WHERE state = OLD.state;
    INSERT INTO state_counts (state, n) VALUES (NEW.state, 1)
        ON CONFLICT (state) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER tasks_count_delete AFTER DELETE ON tasks BEGIN
    UPDATE state_counts SET n = n - 1 WHERE state = OLD.state;
END;
"#,
    // 2: one event-log row per commit instead of one per event. A commit appends a
    // few events at once (a turn's final commit typically five); storing them as one
    // JSON array keyed by the last one's sequence number takes one B-tree insert
    // instead of several. Reads take the rows whose `last_seq` is past the cursor
    // and drop the events at or before it.
    r#"
CREATE TABLE event_log (
    tid       INTEGER NOT NULL,
    -- Sequence number of the last event in `body`.
    last_seq  INTEGER NOT NULL,
    -- The events of one commit, oldest first, as a JSON array.
    body      BLOB NOT NULL,
    PRIMARY KEY (tid, last_seq)
) WITHOUT ROWID;
INSERT INTO event_log (tid, last_seq, body)
    SELECT tid, seq, CAST('[' || CAST(body AS TEXT) || ']' AS BLOB) FROM events;
DROP TABLE events;
"#,
    // 3: the time of the last state change, for listing newest-first by status time
    // (A2A ListTasks). Rows written before this migration get it from the snapshot,
    // to the millisecond (what SQLite's date functions resolve).
    r#"
ALTER TABLE tasks ADD COLUMN changed_us INTEGER NOT NULL DEFAULT 0;
UPDATE tasks SET changed_us = COALESCE(CAST(
    unixepoch(json_extract(body, '$.stateChangedAt'), 'subsec') * 1000000 AS INTEGER), 0)
    WHERE json_valid(body);
CREATE INDEX tasks_by_owner_changed ON tasks (tenant, owner, changed_us, id);
"#,
    // 4: the writer keeps `state_counts` itself, once per transaction, instead of
    // three triggers firing on every task row.
    r#"
DROP TRIGGER tasks_count_insert;
DROP TRIGGER tasks_count_update;
DROP TRIGGER tasks_count_delete;
"#,
    // 5: the writer keeps the claimable entries and the leases in memory (loaded
    // from this table when the store opens), so the table needs no index of them.
    r#"
DROP INDEX queue_ready;
DROP INDEX queue_leases;
"#,
    // 6: the event log becomes a rowid table with a separate index on (task, last
    // sequence number). As a WITHOUT ROWID table its rows (often near 1 KiB) were
    // stored whole in the interior pages too, so the tree was deep, each insert moved
    // large cells when a page split, and a group commit rewrote several interior
    // pages. Now the rows append at the right edge of the rowid tree and the index
    // holds only two integers per row. Runtime bench, SQLite, 256 callers: 12.7k ->
    // 14.5k tasks/s.
    r#"
CREATE TABLE event_log_rows (
    tid       INTEGER NOT NULL,
    -- Sequence number of the last event in `body`.
    last_seq  INTEGER NOT NULL,
    -- The events of one commit, oldest first, as a JSON array.
    body      BLOB NOT NULL
);
INSERT INTO event_log_rows (tid, last_seq, body)
    SELECT tid, last_seq, body FROM event_log ORDER BY tid, last_seq;
DROP TABLE event_log;
ALTER TABLE event_log_rows RENAME TO event_log;
CREATE UNIQUE INDEX event_log_by_task ON event_log (tid, last_seq);
"#,
    // 7: an owner's tasks are listed from an in-memory listing built at open
    // (listing.rs), so the two per-owner indexes, which took a page write per owner
    // for every create and state change, go.
    r#"
DROP INDEX tasks_by_owner;
DROP INDEX tasks_by_owner_changed;
"#,
    // 8: idempotency keys move into the task rows, found through an in-memory index
    // built at open (idem.rs): the `idempotency` table, keyed by random message ids,
    // took a page write at a random place for every create.
    r#"
ALTER TABLE tasks ADD COLUMN idem_tenant TEXT;
ALTER TABLE tasks ADD COLUMN idem_owner TEXT;
ALTER TABLE tasks ADD COLUMN idem_message_id TEXT;
UPDATE tasks SET (idem_tenant, idem_owner, idem_message_id) =
    (SELECT i.tenant, i.owner, i.message_id FROM idempotency i
     WHERE i.tid = tasks.tid LIMIT 1)
    WHERE tid IN (SELECT tid FROM idempotency);
DROP TABLE idempotency;
"#,
    // 9: task ids are found through an in-memory map built at open (ids.rs): the
    // `tasks_id` index, keyed by random ids, took a page write at a random place
    // for every create.
    "DROP INDEX tasks_id;",
    // 10: records (taskwire_core::record): push configs and their delivery cursors,
    // AG-UI runs, MCP sessions, CAS subscriptions. A record of a task carries the
    // task's row id and goes with it when the task is swept.
    r#"
CREATE TABLE records (
    kind         TEXT NOT NULL,
    id           TEXT NOT NULL,
    tid          INTEGER,
    task_id      TEXT,
    tenant       TEXT NOT NULL,
    owner        TEXT NOT NULL,
    -- The adapter's value as JSON.
    data         BLOB NOT NULL,
    cursor       INTEGER NOT NULL,
    active       INTEGER NOT NULL,
    expires_ns   INTEGER,
    version      INTEGER NOT NULL,
    lease_owner  TEXT,
    lease_until  INTEGER,
    epoch        INTEGER NOT NULL,
    PRIMARY KEY (kind, id)
) WITHOUT ROWID;
CREATE INDEX records_by_task ON records (tid) WHERE tid IS NOT NULL;
CREATE INDEX records_by_owner ON records (kind, tenant, owner);
CREATE INDEX records_active ON records (kind, id) WHERE active = 1;
CREATE INDEX records_expiring ON records (expires_ns) WHERE expires_ns IS NOT NULL;
"#,
];

const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Log pages from which SQLite checkpoints with `synchronous=normal` (4 MiB). In
/// that mode the log is synced only by checkpoints, so this bounds what a power
/// loss takes. (With `synchronous=full` the writer checkpoints itself, every
/// 64 MiB: there every commit is synced anyway.)
pub(crate) const NORMAL_CHECKPOINT_PAGES: i64 = 1_024;
/// Log pages from which SQLite checkpoints with `synchronous=full` when the writer
/// does not (no syncer thread).
const FULL_CHECKPOINT_PAGES: i64 = 16_384;

/// What was on disk at a path before SQLite opened it.
struct Found {
    /// Size of the database file, if it existed.
    file: Option<u64>,
    /// Size of its write-ahead log, if one existed.
    wal: Option<u64>,
}

impl Found {
    fn at(path: &Path) -> Self {
        let mut wal = path.as_os_str().to_owned();
        wal.push("-wal");
        Found {
            file: std::fs::metadata(path).ok().map(|m| m.len()),
            wal: std::fs::metadata(&wal).ok().map(|m| m.len()),
        }
    }
}

/// Opens the writer connection: WAL mode, the chosen durability, migrations applied.
///
/// A database without a schema (`user_version` 0) is created; if its file was
/// already there, that is said in the log as a warning. taskwire makes a new
/// schema durable (checkpointed into the database file, file and directory
/// synced) before the store opens, in every `synchronous` mode, so a file that
/// exists without a schema was not left by a taskwire that served from it: its
/// creation was cut short (by a crash or a power loss), or it was emptied or made
/// by something else.
pub(crate) fn open_writer(path: &Path, options: &SqliteOptions) -> Result<Connection, SqliteError> {
    let found = Found::at(path);
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
    // 8 MiB of page cache: at the end of every write transaction SQLite's page cache
    // walks its whole hash table (pcache1TruncateUnsafe), so a larger cache costs
    // every group commit (with 32 MiB it was 4.6% of the runtime bench's CPU, with
    // 8 MiB 1.9%); the OS page cache holds the rest of the file. Checkpoint (from this connection, between group commits)
    // once the WAL holds 16384 pages (64 MiB): pages rewritten by many commits, such
    // as the right edges of the trees, reach the database file once per checkpoint.
    // After a checkpoint the WAL file is cut back to 64 MiB.
    conn.pragma_update(None, "cache_size", -8_192)?;
    let checkpoint_pages = match options.synchronous {
        Synchronous::Full => FULL_CHECKPOINT_PAGES,
        Synchronous::Normal => NORMAL_CHECKPOINT_PAGES,
    };
    conn.pragma_update(None, "wal_autocheckpoint", checkpoint_pages)?;
    let _: i64 = conn.query_row("PRAGMA journal_size_limit = 67108864", [], |r| r.get(0))?;
    conn.set_prepared_statement_cache_capacity(64);
    let before: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if before == 0 {
        match found.file {
            Some(size) => tracing::warn!(
                path = %path.display(),
                file_bytes = size,
                wal_bytes = found.wal,
                "sqlite: the database file exists but has no schema: its creation was cut \
                 short (a crash or power loss before the store first opened) or it was \
                 emptied or made by something else; creating the schema, any tasks it \
                 held are gone"
            ),
            None => tracing::info!(path = %path.display(), "sqlite: creating a new database"),
        }
    }
    migrate(&conn)?;
    let after: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if after != before {
        make_durable(&conn, path, options.synchronous)?;
    }
    if options.synchronous == Synchronous::Normal {
        tracing::warn!(
            path = %path.display(),
            checkpoint_every_mib = checkpoint_pages * 4096 / (1024 * 1024),
            "sqlite: synchronous=normal: commits are synced only at checkpoints; an OS \
             crash or power loss takes every task written since the last one"
        );
    }
    Ok(conn)
}

/// Makes what the migrations wrote durable in the database file itself, whatever
/// the `synchronous` mode: a full checkpoint synced (log first, then the file),
/// then the directory synced. After this no power loss can take the schema.
fn make_durable(conn: &Connection, path: &Path, mode: Synchronous) -> Result<(), SqliteError> {
    conn.pragma_update(None, "synchronous", "FULL")?;
    let busy: i64 = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))?;
    conn.pragma_update(None, "synchronous", mode.pragma_value())?;
    if busy != 0 {
        tracing::warn!(path = %path.display(), "sqlite: the checkpoint after the migrations was blocked");
    }
    crate::writer::sync_dir(path);
    Ok(())
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

/// The steps of `EXPLAIN QUERY PLAN` for a statement (for tests).
#[cfg(test)]
pub(crate) fn query_plan(conn: &Connection, sql: &str) -> Result<Vec<String>, rusqlite::Error> {
    let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))?;
    let n = stmt.parameter_count();
    let args: Vec<rusqlite::types::Value> = (0..n).map(|_| rusqlite::types::Value::Null).collect();
    let rows = stmt.query_map(rusqlite::params_from_iter(args), |r| r.get::<_, String>(3))?;
    rows.collect()
}

/// True unless a plan step scans a whole table or sorts in a temporary tree.
#[cfg(test)]
pub(crate) fn plan_step_is_indexed(detail: &str) -> bool {
    let full_scan = detail.starts_with("SCAN ") && !detail.contains(" USING ");
    !full_scan && !detail.contains("TEMP B-TREE")
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskwire_core::event::{Event, EventKind, StepPhase};
    use taskwire_core::TaskId;

    /// A log written one row per event (schema 1) reads back the same after the
    /// migration to one row per commit, from any cursor.
    #[test]
    fn event_log_rows_are_migrated() {
        let dir = tempfile::tempdir().unwrap();
        let conn = Connection::open(dir.path().join("m.db")).unwrap();
        conn.execute_batch(MIGRATIONS[0]).unwrap();
        conn.pragma_update(None, "user_version", 1).unwrap();
        let id = TaskId::new();
        conn.execute(
            "INSERT INTO tasks (tid, id, tenant, owner, context_id, state, terminal, version, \
             created_us, updated_ns, body) VALUES (7, ?1, 't', 'o', 'c', 'working', 0, 3, 0, 0, x'')",
            [id.as_str()],
        )
        .unwrap();
        let events: Vec<Event> = (1..=4)
            .map(|seq| Event {
                task_id: id.clone(),
                seq,
                version: seq,
                at: chrono::Utc::now(),
                kind: EventKind::Step {
                    name: format!("s{seq}"),
                    phase: StepPhase::Started,
                },
            })
            .collect();
        for e in &events {
            conn.execute(
                "INSERT INTO events (tid, seq, body) VALUES (7, ?1, ?2)",
                rusqlite::params![e.seq as i64, serde_json::to_vec(e).unwrap()],
            )
            .unwrap();
        }
        migrate(&conn).unwrap();
        for after in 0..=4u64 {
            let got = crate::read::events(&conn, 7, after, 100).unwrap();
            assert_eq!(got, events[after as usize..].to_vec(), "after {after}");
        }
        let two = crate::read::events(&conn, 7, 1, 2).unwrap();
        assert_eq!(two, events[1..3].to_vec());
    }

    /// Migration 8 moves each idempotency key into its task's row, and the key
    /// index built at open finds it.
    #[test]
    fn idempotency_keys_move_into_the_task_rows() {
        let dir = tempfile::tempdir().unwrap();
        let conn = Connection::open(dir.path().join("m.db")).unwrap();
        for m in &MIGRATIONS[..7] {
            conn.execute_batch(m).unwrap();
        }
        conn.pragma_update(None, "user_version", 7).unwrap();
        // Real task ids: the scan at open skips rows with malformed ones.
        let (a, b) = (TaskId::new(), TaskId::new());
        conn.execute(
            "INSERT INTO tasks (tid, id, tenant, owner, context_id, state, terminal, version, \
             created_us, updated_ns, body) VALUES (5, ?1, 't', 'o', 'c', 'working', 0, 1, 0, 0, x''), \
             (6, ?2, 't', 'o', 'c', 'working', 0, 1, 0, 0, x'')",
            [a.as_str(), b.as_str()],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO idempotency (tenant, owner, message_id, tid) VALUES ('t', 'o', 'm1', 5)",
            [],
        )
        .unwrap();
        migrate(&conn).unwrap();
        type Key = (i64, Option<String>, Option<String>, Option<String>);
        let keys: Vec<Key> = conn
            .prepare("SELECT tid, idem_tenant, idem_owner, idem_message_id FROM tasks ORDER BY tid")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            keys,
            vec![
                (5, Some("t".into()), Some("o".into()), Some("m1".into())),
                (6, None, None, None)
            ]
        );
        let ix = crate::ids::load(&conn).unwrap().idem;
        assert_eq!(ix.get(ix.hash_parts("t", "o", "m1")), Some(5));
        assert_eq!(ix.get(ix.hash_parts("t", "o", "m2")), None);
    }

    /// With `synchronous=normal` only checkpoints sync the log, so SQLite
    /// checkpoints every 4 MiB instead of every 64 MiB; a new schema is already
    /// in the database file (checkpointed) when the store opens.
    #[test]
    fn normal_mode_checkpoints_often_and_new_schemas_are_checkpointed() {
        let dir = tempfile::tempdir().unwrap();
        // At most 4 MiB of log (4 KiB pages) between syncs in normal mode.
        for (mode, pages) in [(Synchronous::Normal, 1_024), (Synchronous::Full, 16_384)] {
            let path = dir.path().join(format!("{mode:?}.db"));
            let options = SqliteOptions {
                synchronous: mode,
                ..Default::default()
            };
            let conn = open_writer(&path, &options).unwrap();
            let got: i64 = conn
                .query_row("PRAGMA wal_autocheckpoint", [], |r| r.get(0))
                .unwrap();
            assert_eq!(got, pages, "{mode:?}");
            let wal = std::fs::metadata(dir.path().join(format!("{mode:?}.db-wal"))).unwrap();
            assert_eq!(wal.len(), 0, "{mode:?}: the schema was checkpointed");
            let file = std::fs::metadata(&path).unwrap();
            assert!(file.len() > 4096, "{mode:?}: the schema is in the file");
        }
    }

    /// Rows written before migration 3 get their state-change time from the snapshot.
    #[test]
    fn state_change_times_are_backfilled() {
        let dir = tempfile::tempdir().unwrap();
        let conn = Connection::open(dir.path().join("m.db")).unwrap();
        conn.execute_batch(MIGRATIONS[0]).unwrap();
        conn.execute_batch(MIGRATIONS[1]).unwrap();
        conn.pragma_update(None, "user_version", 2).unwrap();
        conn.execute(
            "INSERT INTO tasks (tid, id, tenant, owner, context_id, state, terminal, version, \
             created_us, updated_ns, body) VALUES (1, 'a', 't', 'o', 'c', 'working', 0, 3, 0, 0, \
             '{\"stateChangedAt\":\"2026-01-02T03:04:05.678901Z\"}'), \
             (2, 'b', 't', 'o', 'c', 'working', 0, 3, 0, 0, x'')",
            [],
        )
        .unwrap();
        migrate(&conn).unwrap();
        let got: Vec<i64> = conn
            .prepare("SELECT changed_us FROM tasks ORDER BY tid")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let want = chrono::DateTime::parse_from_rfc3339("2026-01-02T03:04:05.678Z")
            .unwrap()
            .timestamp_micros();
        assert!((got[0] - want).abs() <= 1000, "{} vs {want}", got[0]);
        assert_eq!(
            got[1], 0,
            "an unreadable body gets 0, not a failed migration"
        );
    }
}

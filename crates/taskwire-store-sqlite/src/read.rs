//! Reads: a small pool of read-only connections used on the blocking thread pool.
//! WAL lets them read concurrently with the writer; each read sees the last
//! committed state when it starts.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use rusqlite::types::Value;
use rusqlite::{params, params_from_iter, Connection, OptionalExtension};
use taskwire_core::store::{decode_cursor, encode_cursor, ListOrder, ListPage, ListQuery};
use taskwire_core::{Event, StoreError, Task, TaskId, TaskState};
use tokio::sync::Semaphore;

use crate::error::backend;
use crate::listing::Listings;
use crate::row::{decode_events, decode_task, int, limit};
use crate::schema::open_reader;

/// The read-only connections.
pub(crate) struct Readers {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
    permits: Arc<Semaphore>,
    /// Set by [`Self::close`]: connections are closed after use, not pooled.
    closed: AtomicBool,
}

impl Readers {
    /// A pool of at most `size` connections on `path`, with one opened now.
    pub(crate) fn new(path: PathBuf, size: usize) -> Result<Self, rusqlite::Error> {
        let first = open_reader(&path)?;
        Ok(Self {
            path,
            idle: Mutex::new(vec![first]),
            permits: Arc::new(Semaphore::new(size.max(1))),
            closed: AtomicBool::new(false),
        })
    }

    /// Closes the idle connections; one in use closes when its read ends.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        let idle = match self.idle.lock() {
            Ok(mut idle) => std::mem::take(&mut *idle),
            Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
        };
        drop(idle);
    }

    /// Runs `f` on a pooled connection on the blocking thread pool.
    pub(crate) async fn run<T, F>(self: &Arc<Self>, f: F) -> Result<T, StoreError>
    where
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
        T: Send + 'static,
    {
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| StoreError::Backend("sqlite read pool closed".into()))?;
        let me = self.clone();
        tokio::task::spawn_blocking(move || {
            let r = me.with(f);
            drop(permit);
            r
        })
        .await
        .map_err(|e| StoreError::Backend(format!("sqlite read task failed: {e}")))?
    }

    fn with<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let pooled = self.idle.lock().ok().and_then(|mut idle| idle.pop());
        let conn = match pooled {
            Some(c) => c,
            None => open_reader(&self.path).map_err(backend)?,
        };
        let r = f(&conn);
        if conn.is_autocommit() && !self.closed.load(Ordering::SeqCst) {
            if let Ok(mut idle) = self.idle.lock() {
                idle.push(conn);
            }
        }
        r
    }
}

const EVENTS: &str = "SELECT body FROM event_log \
     WHERE tid = ?1 AND last_seq > ?2 ORDER BY last_seq LIMIT ?3";
const IDLE: &str = "SELECT id FROM tasks WHERE terminal = 0 AND idle_ns IS NOT NULL \
     AND idle_ns < ?1 ORDER BY idle_ns LIMIT ?2";

/// The task in row `tid`, if the row exists.
pub(crate) fn get(conn: &Connection, tid: i64) -> Result<Option<Task>, StoreError> {
    let body: Option<Vec<u8>> = conn
        .prepare_cached(ROW_BODY)
        .and_then(|mut s| s.query_row(params![tid], |r| r.get(0)).optional())
        .map_err(backend)?;
    body.map(|b| decode_task(&b)).transpose()
}

/// The events of the task in row `tid` after `after_seq`.
pub(crate) fn events(
    conn: &Connection,
    tid: i64,
    after_seq: u64,
    max: usize,
) -> Result<Vec<Event>, StoreError> {
    let mut stmt = conn.prepare_cached(EVENTS).map_err(backend)?;
    let rows = stmt
        .query_map(params![tid, int(after_seq), limit(max)], |r| {
            r.get::<_, Vec<u8>>(0)
        })
        .map_err(backend)?;
    // Each row holds at least one event past the cursor, so `max` rows are enough.
    let mut out = Vec::new();
    'rows: for body in rows {
        for e in decode_events(&body.map_err(backend)?)? {
            if e.seq <= after_seq {
                continue;
            }
            if out.len() >= max {
                break 'rows;
            }
            out.push(e);
        }
    }
    Ok(out)
}

/// A page, with a cursor after its last task when there is more.
fn page_of(q: &ListQuery, tasks: Vec<Task>, more: bool, total: u64) -> ListPage {
    let next_cursor = if more {
        tasks.last().map(|t| encode_cursor(q.order.key(t), &t.id))
    } else {
        None
    };
    ListPage {
        tasks,
        next_cursor,
        total,
    }
}

pub(crate) fn list(conn: &Connection, q: &ListQuery) -> Result<ListPage, StoreError> {
    let after = match &q.cursor {
        // The service maps this to an invalid-input error before it gets here.
        Some(c) => {
            Some(decode_cursor(c).ok_or_else(|| StoreError::Backend("invalid cursor".into()))?)
        }
        None => None,
    };
    let mut filter = String::from("tenant = ?");
    let mut args = vec![Value::Text(q.tenant.clone())];
    if let Some(owner) = &q.owner {
        filter.push_str(" AND owner = ?");
        args.push(Value::Text(owner.clone()));
    }
    if let Some(reviewer) = &q.reviewer {
        filter.push_str(
            " AND reviewers IS NOT NULL \
             AND EXISTS (SELECT 1 FROM json_each(tasks.reviewers) WHERE json_each.value = ?)",
        );
        args.push(Value::Text(reviewer.clone()));
    }
    if let Some(context) = &q.context_id {
        filter.push_str(" AND context_id = ?");
        args.push(Value::Text(context.clone()));
    }
    if let Some(state) = q.state {
        filter.push_str(" AND state = ?");
        args.push(Value::Text(state.as_str().to_string()));
    }
    if let Some(after) = q.updated_after {
        filter.push_str(" AND updated_ns > ?");
        args.push(Value::Integer(crate::row::ns(after)));
    }
    if let Some(since) = q.changed_since {
        filter.push_str(" AND changed_us >= ?");
        args.push(Value::Integer(since.timestamp_micros()));
    }
    let key = match q.order {
        ListOrder::Created => "created_us",
        ListOrder::StateChanged => "changed_us",
    };
    let size = q.page_size.clamp(1, 1000);
    // Count and page in one read transaction so that both see the same state.
    let tx = conn.unchecked_transaction().map_err(backend)?;
    let total: i64 = tx
        .prepare_cached(&format!("SELECT COUNT(*) FROM tasks WHERE {filter}"))
        .and_then(|mut s| s.query_row(params_from_iter(args.iter()), |r| r.get(0)))
        .map_err(backend)?;
    let mut page_sql = format!("SELECT body FROM tasks WHERE {filter}");
    if let Some((micros, id)) = after {
        page_sql.push_str(&format!(" AND ({key}, id) < (?, ?)"));
        args.push(Value::Integer(micros));
        args.push(Value::Text(id));
    }
    page_sql.push_str(&format!(" ORDER BY {key} DESC, id DESC LIMIT ?"));
    args.push(Value::Integer(limit(size + 1)));
    let mut tasks = Vec::with_capacity(size.min(64));
    let mut more = false;
    {
        let mut stmt = tx.prepare_cached(&page_sql).map_err(backend)?;
        let rows = stmt
            .query_map(params_from_iter(args.iter()), |r| r.get::<_, Vec<u8>>(0))
            .map_err(backend)?;
        for body in rows {
            if tasks.len() == size {
                more = true;
                break;
            }
            tasks.push(decode_task(&body.map_err(backend)?)?);
        }
    }
    tx.finish().map_err(backend)?;
    Ok(page_of(q, tasks, more, u64::try_from(total).unwrap_or(0)))
}

const ROW_BODY: &str = "SELECT body FROM tasks WHERE tid = ?1";

/// One page of `owner`'s tasks (`q.owner` is `owner` and `q.reviewer` unset), through
/// the in-memory listing.
pub(crate) fn list_owned(
    conn: &Connection,
    listings: &Listings,
    q: &ListQuery,
    owner: &str,
) -> Result<ListPage, StoreError> {
    let after = match &q.cursor {
        // The service maps this to an invalid-input error before it gets here.
        Some(c) => {
            Some(decode_cursor(c).ok_or_else(|| StoreError::Backend("invalid cursor".into()))?)
        }
        None => None,
    };
    let size = q.page_size.clamp(1, 1000);
    let found = listings.page(q, owner, after.as_ref().map(|(m, id)| (*m, id.as_str())));
    let more = found.tids.len() > size;
    let mut tasks = Vec::with_capacity(found.tids.len().min(size));
    {
        let tx = conn.unchecked_transaction().map_err(backend)?;
        let mut stmt = tx.prepare_cached(ROW_BODY).map_err(backend)?;
        for tid in found.tids.iter().take(size) {
            let body: Option<Vec<u8>> = stmt
                .query_row(params![tid], |r| r.get(0))
                .optional()
                .map_err(backend)?;
            // A row deleted or changed since the listing was read is left out.
            if let Some(body) = body {
                let t = decode_task(&body)?;
                if q.matches(&t) {
                    tasks.push(t);
                }
            }
        }
        drop(stmt);
        tx.finish().map_err(backend)?;
    }
    Ok(page_of(q, tasks, more, found.total))
}

pub(crate) fn idle_expired(
    conn: &Connection,
    now: i64,
    max: usize,
) -> Result<Vec<TaskId>, StoreError> {
    let mut stmt = conn.prepare_cached(IDLE).map_err(backend)?;
    let rows = stmt
        .query_map(params![now, limit(max)], |r| r.get::<_, String>(0))
        .map_err(backend)?;
    let mut out = Vec::new();
    for id in rows {
        let id = id.map_err(backend)?;
        out.push(
            TaskId::parse(&id)
                .map_err(|_| StoreError::Corrupt(format!("stored task id {id:?}")))?,
        );
    }
    Ok(out)
}

pub(crate) fn queue_depth(conn: &Connection) -> Result<u64, StoreError> {
    let n: i64 = conn
        .prepare_cached("SELECT COUNT(*) FROM queue")
        .and_then(|mut s| s.query_row([], |r| r.get(0)))
        .map_err(backend)?;
    Ok(u64::try_from(n).unwrap_or(0))
}

pub(crate) fn count_by_state(conn: &Connection) -> Result<Vec<(TaskState, u64)>, StoreError> {
    let mut stmt = conn
        .prepare_cached("SELECT state, n FROM state_counts")
        .map_err(backend)?;
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
        .map_err(backend)?;
    let mut counts = TaskState::ALL.map(|s| (s, 0u64));
    for row in rows {
        let (state, n) = row.map_err(backend)?;
        let state = TaskState::parse(&state)
            .ok_or_else(|| StoreError::Corrupt(format!("stored task state {state:?}")))?;
        if let Some(slot) = counts.iter_mut().find(|(s, _)| *s == state) {
            slot.1 = u64::try_from(n).unwrap_or(0);
        }
    }
    Ok(counts.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads by row id, the event log, idle candidates and the reviewer's
    /// listing go through indexes (an owner's listing is in memory).
    #[test]
    fn reads_use_indexes() {
        let dir = tempfile::tempdir().unwrap();
        let conn =
            crate::schema::open_writer(&dir.path().join("p.db"), &Default::default()).unwrap();
        for sql in [
            EVENTS,
            IDLE,
            ROW_BODY,
            "SELECT body FROM tasks WHERE tenant = ? AND reviewers IS NOT NULL \
             AND EXISTS (SELECT 1 FROM json_each(tasks.reviewers) WHERE json_each.value = ?) \
             ORDER BY created_us DESC, id DESC LIMIT ?",
        ] {
            for detail in crate::schema::query_plan(&conn, sql).unwrap() {
                assert!(
                    crate::schema::plan_step_is_indexed(&detail) || detail.contains("json_each"),
                    "{sql}\n  has plan step {detail:?}"
                );
            }
        }
    }
}

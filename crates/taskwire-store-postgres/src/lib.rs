//! The distributed store of taskwire: a [`TaskStore`] on a PostgreSQL database
//! that several taskwire nodes share.
//!
//! ```no_run
//! use std::sync::Arc;
//! use taskwire_core::{Caller, CreateTask, Message, TaskService};
//! use taskwire_store_postgres::{PostgresOptions, PostgresStore};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let store = PostgresStore::open(
//!     "postgres://postgres@127.0.0.1:5432/test",
//!     PostgresOptions::default(),
//! )
//! .await?;
//! let service = TaskService::new(Arc::new(store), "scripted");
//! let created = service
//!     .create(&Caller::local(), CreateTask::new(Message::user_text("hi")))
//!     .await?;
//! # let _ = created;
//! # Ok(())
//! # }
//! ```
//!
//! - **Schema**: versioned migrations (the `schema_migrations` table) applied at
//!   open under an advisory lock, so nodes starting together migrate once. Task
//!   snapshots and events are stored as JSON (serde_json of `Task` and `Event`),
//!   beside indexed columns for what queries filter on.
//! - **Compare-and-set**: a commit is one call of the `taskwire_commit` function,
//!   which locks the task row, checks the version (`Conflict`) and the fence (the
//!   queue entry still leased to the same worker at the same epoch, else
//!   `LeaseLost`), applies the queue operation, replaces the snapshot and appends
//!   the events, all in one transaction and one round trip.
//! - **Idempotent create**: the task row carries its idempotency key under a
//!   UNIQUE constraint; the insert is `ON CONFLICT DO NOTHING`, and a create that
//!   conflicts reads the task that won, so concurrent retries on any node create
//!   once.
//! - **Claims**: `FOR UPDATE SKIP LOCKED` over the claimable entries in FIFO order;
//!   each claim increments the entry's epoch (the fencing token). Reaping and
//!   sweeping lock what they change with `SKIP LOCKED` as well, so they are safe
//!   on every node at once; a sweep deletes a batch of tasks with their events,
//!   keys, queue entries and records in one statement.
//! - **Record quotas**: the count of live records and the insert run under a
//!   transaction-scoped advisory lock of (kind, tenant, owner).
//! - **Wake-ups**: each commit is published to this node's [`WakeHub`] at once and
//!   sent to the other nodes with `pg_notify` after it committed (see the
//!   `notify` module); each node LISTENs on a connection of its own.
//!
//! The semantics are exactly those of [`taskwire_core::MemoryStore`], and the
//! shared store suite checks them.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use taskwire_core::event::Event;
use taskwire_core::record::{
    lease_until, PutOutcome, Quota, Record, RecordKind, RecordLease, RecordScope,
};
use taskwire_core::store::{
    decode_cursor, encode_cursor, Claim, Commit, CreateOutcome, IdempotencyKey, ListOrder,
    ListPage, ListQuery, TaskStore, TaskWake,
};
use taskwire_core::{StoreError, Task, TaskId, TaskState, Timestamp, WakeHub};
use tokio_postgres::types::{Json, ToSql};
use tokio_postgres::NoTls;

mod batch;
use batch::NewEntry;
mod error;
mod notify;
mod options;
mod row;
mod schema;

pub use batch::WriteStats;
pub use error::PostgresError;
pub use options::{Keepalives, PostgresOptions};

use error::{backend, pool, timed_out};
use row::{dur_ns, int, limit, ns, record, task_id, uint, RECORD_COLUMNS};

/// The PostgreSQL store. Cheap to share behind an `Arc`; dropping it stops its
/// LISTEN connection and its notifier and closes the pool.
pub struct PostgresStore {
    pool: Pool,
    hub: Arc<WakeHub>,
    node: String,
    channel: String,
    notifier: notify::Notifier,
    batcher: batch::Batcher,
    recent: Recent,
    timeout: Duration,
    _listener: notify::Listener,
}

/// The snapshots this node committed last (at most [`RECENT`]), for
/// [`TaskStore::committed_snapshot`].
#[derive(Debug, Default)]
struct Recent {
    inner: std::sync::Mutex<RecentInner>,
}

#[derive(Debug, Default)]
struct RecentInner {
    by_id: std::collections::HashMap<TaskId, Arc<Task>>,
    order: std::collections::VecDeque<TaskId>,
}

/// How many committed snapshots a node keeps at hand.
const RECENT: usize = 4096;

impl Recent {
    fn put(&self, task: &Arc<Task>) {
        let Ok(mut r) = self.inner.lock() else {
            return;
        };
        if r.by_id.insert(task.id.clone(), task.clone()).is_none() {
            r.order.push_back(task.id.clone());
            while r.order.len() > RECENT {
                if let Some(old) = r.order.pop_front() {
                    r.by_id.remove(&old);
                }
            }
        }
    }

    fn get(&self, id: &TaskId, last_seq: u64) -> Option<Arc<Task>> {
        let r = self.inner.lock().ok()?;
        r.by_id.get(id).filter(|t| t.last_seq == last_seq).cloned()
    }
}

impl fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresStore")
            .field("node", &self.node)
            .field("channel", &self.channel)
            .finish_non_exhaustive()
    }
}

/// Whether `s` may name a schema here: lowercase ASCII letters, digits and
/// underscores, not starting with a digit, at most 48 bytes.
fn valid_schema(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 48
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        && !s.as_bytes()[0].is_ascii_digit()
}

/// The connection parameters named in the query string of `url`.
fn url_keys(url: &str) -> Vec<String> {
    let Some((_, query)) = url.split_once('?') else {
        return Vec::new();
    };
    query
        .split('&')
        .filter_map(|kv| kv.split('=').next())
        .map(|k| k.trim().to_ascii_lowercase())
        .filter(|k| !k.is_empty())
        .collect()
}

fn wake_of(task: &Task) -> TaskWake {
    TaskWake {
        last_seq: task.last_seq,
        state: task.state,
    }
}

impl PostgresStore {
    /// Opens the store at `url` (`postgres://user@host:port/database`, with any
    /// connection parameter tokio-postgres accepts), applies pending migrations
    /// and starts listening for other nodes' commits.
    pub async fn open(url: &str, options: PostgresOptions) -> Result<PostgresStore, PostgresError> {
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(PostgresError::InvalidUrl(
                "the address must start with postgres:// or postgresql://".into(),
            ));
        }
        if options.pool_size == 0 {
            return Err(PostgresError::InvalidOptions(
                "the pool needs at least one connection".into(),
            ));
        }
        let mut config: tokio_postgres::Config = url
            .parse()
            .map_err(|e: tokio_postgres::Error| PostgresError::InvalidUrl(e.to_string()))?;
        let mut server_options = config.get_options().unwrap_or_default().to_string();
        if let Some(t) = options.statement_timeout {
            server_options.push_str(&format!(" -c statement_timeout={}", t.as_millis()));
        }
        if let Some(s) = &options.schema {
            if !valid_schema(s) {
                return Err(PostgresError::InvalidOptions(format!(
                    "schema {s:?}: use lowercase letters, digits and underscores"
                )));
            }
            server_options.push_str(&format!(" -c search_path={s}"));
        }
        config.options(server_options.trim());
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(options.connect_timeout);
        }
        if config.get_application_name().is_none() {
            config.application_name("taskwire");
        }
        if options.timeout.is_zero() {
            return Err(PostgresError::InvalidOptions(
                "the timeout must be more than zero".into(),
            ));
        }
        let in_url = url_keys(url);
        // A dead connection is noticed by the kernel (keepalive on an idle one,
        // TCP_USER_TIMEOUT on one with unacknowledged data) and then fails,
        // instead of waiting for the system's defaults (two hours, minutes).
        if !in_url.iter().any(|k| k.starts_with("keepalives")) {
            config.keepalives(true);
            config.keepalives_idle(options.keepalives.idle);
            config.keepalives_interval(options.keepalives.interval);
            config.keepalives_retries(options.keepalives.retries);
        }
        if !in_url.iter().any(|k| k == "tcp_user_timeout") {
            if let Some(t) = options.tcp_user_timeout {
                config.tcp_user_timeout(t);
            }
        }
        let manager = Manager::from_config(
            config.clone(),
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(options.pool_size)
            .runtime(Runtime::Tokio1)
            .create_timeout(Some(options.connect_timeout))
            .wait_timeout(Some(options.wait_timeout))
            .build()
            .map_err(|e| PostgresError::Pool(e.to_string()))?;
        let mut conn = pool.get().await?;
        schema::migrate(&mut conn, options.schema.as_deref()).await?;
        let current: String = conn
            .query_one("SELECT current_schema()", &[])
            .await?
            .try_get(0)?;
        drop(conn);
        // Stores on one database and schema are nodes of one deployment.
        let channel = format!("taskwire:{current}");
        let node = TaskId::new().as_str().to_string();
        let hub = Arc::new(WakeHub::new());
        let listener = notify::Listener::start(
            config,
            channel.clone(),
            node.clone(),
            hub.clone(),
            options.timeout,
        )
        .await?;
        let notifier =
            notify::Notifier::start(pool.clone(), channel.clone(), node.clone(), options.timeout);
        let batcher = batch::Batcher::start(
            pool.clone(),
            options.max_batch,
            options.write_batches,
            options.timeout,
        );
        tracing::debug!(schema = %current, node = %node, "postgres store open");
        Ok(PostgresStore {
            pool,
            hub,
            node,
            channel,
            notifier,
            batcher,
            recent: Recent::default(),
            timeout: options.timeout,
            _listener: listener,
        })
    }

    /// This node's name in its notifications (random per store).
    pub fn node(&self) -> &str {
        &self.node
    }

    /// How many write batches this store sent and how many writes they held
    /// (group commit; also the `taskwire_pg_write_batch_size` histogram).
    pub fn write_stats(&self) -> WriteStats {
        self.batcher.stats()
    }

    /// Whether the database answers within the store's timeout (for readiness
    /// probes).
    pub async fn ping(&self) -> Result<(), StoreError> {
        let deadline = tokio::time::Instant::now() + self.timeout;
        let conn = self.conn_by(deadline).await?;
        let answer = tokio::time::timeout_at(deadline, conn.simple_query("SELECT 1")).await;
        self.settle(conn, answer)?.map_err(backend)?;
        Ok(())
    }

    /// A pooled connection, by `deadline`.
    async fn conn_by(
        &self,
        deadline: tokio::time::Instant,
    ) -> Result<deadpool_postgres::Object, StoreError> {
        match tokio::time::timeout_at(deadline, self.pool.get()).await {
            Ok(r) => r.map_err(pool),
            Err(_) => Err(timed_out("the connection pool", self.timeout)),
        }
    }

    /// The answer of a call made on `conn` by `deadline`: a call that timed out
    /// closes its connection rather than returning it to the pool (it may be
    /// dead, and the next request must not wait behind it).
    fn settle<T>(
        &self,
        conn: deadpool_postgres::Object,
        answer: Result<T, tokio::time::error::Elapsed>,
    ) -> Result<T, StoreError> {
        match answer {
            Ok(r) => Ok(r),
            Err(_) => {
                drop(deadpool_postgres::Object::take(conn));
                Err(timed_out("the database", self.timeout))
            }
        }
    }

    /// Runs one statement (prepared once per connection) and returns its rows.
    async fn query(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<tokio_postgres::Row>, StoreError> {
        self.query_pg(sql, params).await?.map_err(backend)
    }

    /// [`PostgresStore::query`], with the server's error left to the caller.
    async fn query_pg(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Result<Vec<tokio_postgres::Row>, tokio_postgres::Error>, StoreError> {
        let deadline = tokio::time::Instant::now() + self.timeout;
        let conn = self.conn_by(deadline).await?;
        let answer = tokio::time::timeout_at(deadline, async {
            match conn.prepare_cached(sql).await {
                Ok(stmt) => conn.query(&stmt, params).await,
                Err(e) => Err(e),
            }
        })
        .await;
        self.settle(conn, answer)
    }

    /// Runs one statement and returns the number of rows it changed.
    async fn execute(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<u64, StoreError> {
        let deadline = tokio::time::Instant::now() + self.timeout;
        let conn = self.conn_by(deadline).await?;
        let answer = tokio::time::timeout_at(deadline, async {
            let stmt = conn.prepare_cached(sql).await?;
            conn.execute(&stmt, params).await
        })
        .await;
        self.settle(conn, answer)?.map_err(backend)
    }

    /// Creates a task through the batch loop, with the queue entry `entry`, and
    /// publishes it (as work for other claimers only when it is claimable).
    async fn insert(
        &self,
        task: Task,
        events: Vec<Event>,
        key: Option<IdempotencyKey>,
        entry: NewEntry,
    ) -> Result<CreateOutcome, StoreError> {
        let claimable = matches!(entry, NewEntry::Available);
        let task = Arc::new(task);
        let answer = self
            .batcher
            .create(task.clone(), events, key, entry)
            .await?;
        match answer.existing {
            Some(t) => Ok(CreateOutcome::Existing(Arc::new(t))),
            None => {
                self.published(&task, claimable);
                Ok(CreateOutcome::Created(task))
            }
        }
    }

    /// Publishes a committed change of a task here and to the other nodes.
    fn published(&self, task: &Arc<Task>, queued: bool) {
        self.recent.put(task);
        let wake = wake_of(task);
        self.hub.publish(&task.id, wake);
        if queued {
            self.hub.work_queued();
        }
        self.notifier
            .send(notify::task_line(&task.id, wake, queued));
    }

    /// Publishes that work became claimable, here and to the other nodes.
    fn work_published(&self) {
        self.hub.work_queued();
        self.notifier.send(notify::WORK_LINE.to_string());
    }
}

const GET: &str = "SELECT body FROM tasks WHERE id = $1";
const EVENTS: &str = "SELECT body FROM events WHERE task_id = $1 AND last_seq > $2 \
     ORDER BY last_seq LIMIT $3";
// The entries to change are picked (and locked) by a subquery, and the update
// finds them by key: a join of the picked rows with the table would be planned as
// a hash join over every row of the table, dead ones included, which a busy queue
// has many of between vacuums.
const CLAIM: &str = "UPDATE queue q SET available = false, lease_owner = $1, lease_until = $2, \
     epoch = q.epoch + 1, attempts = q.attempts + 1 \
     WHERE q.task_id = ANY(ARRAY(SELECT task_id FROM queue WHERE available \
     ORDER BY ready_seq LIMIT $3 FOR UPDATE SKIP LOCKED)) \
     RETURNING q.task_id, q.epoch, q.attempts, q.ready_seq, \
     (SELECT body FROM tasks t WHERE t.id = q.task_id)";
const RENEW: &str = "UPDATE queue SET lease_until = $4 WHERE task_id = $1 AND NOT available \
     AND lease_owner = $2 AND epoch = $3";
const RELEASE: &str = "UPDATE queue SET available = true, lease_owner = NULL, \
     lease_until = NULL, ready_seq = nextval('queue_ready_seq') \
     WHERE task_id = $1 AND NOT available AND lease_owner = $2 AND epoch = $3";
const DROP_CLAIM: &str = "DELETE FROM queue WHERE task_id = $1 AND NOT available \
     AND lease_owner = $2 AND epoch = $3";
const REAP: &str = "UPDATE queue q SET available = true, lease_owner = NULL, \
     lease_until = NULL, ready_seq = nextval('queue_ready_seq') \
     WHERE q.task_id = ANY(ARRAY(SELECT task_id FROM queue \
     WHERE NOT available AND lease_until < $1 ORDER BY lease_until FOR UPDATE SKIP LOCKED)) \
     RETURNING q.task_id";
const SWEEP: &str = "WITH doomed AS (SELECT id FROM tasks \
     WHERE terminal AND expires_ns IS NOT NULL AND expires_ns < $1 \
     ORDER BY expires_ns LIMIT $2 FOR UPDATE SKIP LOCKED), \
     gone AS (DELETE FROM tasks t USING doomed WHERE t.id = doomed.id RETURNING t.id), \
     ev AS (DELETE FROM events e USING gone WHERE e.task_id = gone.id), \
     qu AS (DELETE FROM queue q USING gone WHERE q.task_id = gone.id), \
     re AS (DELETE FROM records r USING gone WHERE r.task_id = gone.id) \
     SELECT count(*) FROM gone";
const IDLE: &str = "SELECT id FROM tasks WHERE NOT terminal AND idle_ns IS NOT NULL \
     AND idle_ns < $1 ORDER BY idle_ns LIMIT $2";
const PUT_RECORD: &str = "SELECT taskwire_put_record($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)";
const UPDATE_RECORD: &str = "SELECT taskwire_update_record($1, $2, $3, $4, $5, $6, $7, $8, $9)";
const CLAIM_RECORDS: &str = "UPDATE records r SET lease_owner = $4, lease_until = $5, \
     epoch = r.epoch + 1 \
     WHERE r.kind = $1 AND r.id = ANY(ARRAY(SELECT id FROM records \
     WHERE kind = $1 AND active AND (lease_until IS NULL OR lease_until < $2) \
     ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED)) \
     RETURNING r.epoch, r.kind, r.id, r.task_id, r.tenant, r.owner, r.data, r.cursor, \
     r.active, r.expires_ns, r.version";
const SWEEP_RECORDS: &str = "WITH doomed AS (SELECT kind, id FROM records \
     WHERE expires_ns IS NOT NULL AND expires_ns <= $1 ORDER BY expires_ns LIMIT $2 \
     FOR UPDATE SKIP LOCKED) \
     DELETE FROM records r USING doomed WHERE r.kind = doomed.kind AND r.id = doomed.id";

fn one<T>(rows: Vec<tokio_postgres::Row>) -> Result<T, StoreError>
where
    T: for<'a> tokio_postgres::types::FromSql<'a>,
{
    let row = rows
        .into_iter()
        .next()
        .ok_or_else(|| StoreError::Backend("postgres: no row returned".into()))?;
    row.try_get(0).map_err(backend)
}

#[async_trait]
impl TaskStore for PostgresStore {
    fn kind(&self) -> &'static str {
        "postgres"
    }

    fn hub(&self) -> &WakeHub {
        &self.hub
    }

    fn committed_snapshot(&self, id: &TaskId, last_seq: u64) -> Option<Arc<Task>> {
        self.recent.get(id, last_seq)
    }

    async fn create(
        &self,
        task: Task,
        events: Vec<Event>,
        key: Option<IdempotencyKey>,
        enqueue: bool,
    ) -> Result<CreateOutcome, StoreError> {
        let entry = if enqueue {
            NewEntry::Available
        } else {
            NewEntry::None
        };
        self.insert(task, events, key, entry).await
    }

    /// The queue entry is inserted leased (epoch 1, one attempt, as a first claim
    /// leaves it), in the create's batch; no work is published.
    async fn create_claimed(
        &self,
        task: Task,
        events: Vec<Event>,
        key: Option<IdempotencyKey>,
        worker: &str,
        lease: Duration,
        now: Timestamp,
    ) -> Result<(CreateOutcome, Option<Claim>), StoreError> {
        // The lease counts from when the create's batch is sent, not from `now`
        // (when the request came): a create that waited for its batch (behind a
        // slow or dead connection) must not commit a lease already lapsed, which
        // a reaper would hand to another node while this one runs the turn.
        let _ = now;
        let entry = NewEntry::Leased {
            worker: worker.to_string(),
            lease,
        };
        let outcome = self.insert(task, events, key, entry).await?;
        let claim = match &outcome {
            CreateOutcome::Created(t) => Some(Claim {
                task_id: t.id.clone(),
                worker: worker.to_string(),
                epoch: 1,
                attempts: 1,
            }),
            CreateOutcome::Existing(_) => None,
        };
        Ok((outcome, claim))
    }

    async fn get_shared(&self, id: &TaskId) -> Result<Option<Arc<Task>>, StoreError> {
        let rows = self.query(GET, &[&id.as_str()]).await?;
        match rows.into_iter().next() {
            None => Ok(None),
            Some(r) => {
                let Json(t): Json<Task> = r
                    .try_get(0)
                    .map_err(|e| StoreError::Corrupt(format!("task: {e}")))?;
                Ok(Some(Arc::new(t)))
            }
        }
    }

    async fn commit(&self, c: Commit) -> Result<(), StoreError> {
        let task = c.task.clone();
        let code = self.batcher.commit(c).await?.code;
        match code {
            0 | 1 => {
                self.published(&task, code == 1);
                Ok(())
            }
            2 => Err(StoreError::NotFound),
            3 => Err(StoreError::Conflict),
            4 => Err(StoreError::LeaseLost),
            other => Err(StoreError::Backend(format!(
                "postgres: unexpected commit answer {other}"
            ))),
        }
    }

    async fn events(
        &self,
        id: &TaskId,
        after_seq: u64,
        max: usize,
    ) -> Result<Vec<Event>, StoreError> {
        let rows = self
            .query(EVENTS, &[&id.as_str(), &int(after_seq), &limit(max)])
            .await?;
        // Each row holds at least one event past the cursor, so `max` rows are enough.
        let mut out = Vec::new();
        'rows: for r in rows {
            let Json(events): Json<Vec<Event>> = r
                .try_get(0)
                .map_err(|e| StoreError::Corrupt(format!("events: {e}")))?;
            for e in events {
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

    async fn list(&self, q: &ListQuery) -> Result<ListPage, StoreError> {
        let after = match &q.cursor {
            // The service maps this to an invalid-input error before it gets here.
            Some(c) => {
                Some(decode_cursor(c).ok_or_else(|| StoreError::Backend("invalid cursor".into()))?)
            }
            None => None,
        };
        let mut args: Vec<Box<dyn ToSql + Sync + Send>> = vec![Box::new(q.tenant.clone())];
        let mut filter = String::from("tenant = $1");
        let arg = |args: &mut Vec<Box<dyn ToSql + Sync + Send>>,
                   v: Box<dyn ToSql + Sync + Send>| {
            args.push(v);
            format!("${}", args.len())
        };
        if let Some(owner) = &q.owner {
            let p = arg(&mut args, Box::new(owner.clone()));
            filter.push_str(&format!(" AND owner = {p}"));
        }
        if let Some(reviewer) = &q.reviewer {
            let p = arg(&mut args, Box::new(reviewer.clone()));
            filter.push_str(&format!(
                " AND reviewers IS NOT NULL AND reviewers @> ARRAY[{p}::text]"
            ));
        }
        if let Some(context) = &q.context_id {
            let p = arg(&mut args, Box::new(context.clone()));
            filter.push_str(&format!(" AND context_id = {p}"));
        }
        if let Some(state) = q.state {
            let p = arg(&mut args, Box::new(state.as_str().to_string()));
            filter.push_str(&format!(" AND state = {p}"));
        }
        if let Some(t) = q.updated_after {
            let p = arg(&mut args, Box::new(ns(t)));
            filter.push_str(&format!(" AND updated_ns > {p}"));
        }
        if let Some(t) = q.changed_since {
            let p = arg(&mut args, Box::new(t.timestamp_micros()));
            filter.push_str(&format!(" AND changed_us >= {p}"));
        }
        let key = match q.order {
            ListOrder::Created => "created_us",
            ListOrder::StateChanged => "changed_us",
        };
        let mut page_filter = filter.clone();
        if let Some((micros, id)) = after {
            let a = arg(&mut args, Box::new(micros));
            let b = arg(&mut args, Box::new(id));
            page_filter.push_str(&format!(" AND ({key}, id) < ({a}, {b})"));
        }
        let size = q.page_size.clamp(1, 1000);
        let lim = arg(&mut args, Box::new(limit(size + 1)));
        // One statement, so the total and the page see one snapshot.
        let sql = format!(
            "SELECT c.total, p.body FROM (SELECT count(*) AS total FROM tasks WHERE {filter}) c \
             LEFT JOIN LATERAL (SELECT body, {key} AS k, id FROM tasks WHERE {page_filter} \
             ORDER BY {key} DESC, id DESC LIMIT {lim}) p ON true ORDER BY p.k DESC, p.id DESC"
        );
        let params: Vec<&(dyn ToSql + Sync)> = args
            .iter()
            .map(|a| a.as_ref() as &(dyn ToSql + Sync))
            .collect();
        // The filters make a bounded set of statements, each prepared once per
        // connection.
        let rows = self.query(&sql, &params).await?;
        let mut total = 0u64;
        let mut tasks = Vec::with_capacity(rows.len().min(size));
        let mut more = false;
        for r in rows {
            let n: i64 = r.try_get(0).map_err(backend)?;
            total = uint(n);
            let body: Option<Json<Task>> = r
                .try_get(1)
                .map_err(|e| StoreError::Corrupt(format!("task: {e}")))?;
            if let Some(Json(t)) = body {
                if tasks.len() == size {
                    more = true;
                } else {
                    tasks.push(t);
                }
            }
        }
        let next_cursor = if more {
            tasks
                .last()
                .map(|t: &Task| encode_cursor(q.order.key(t), &t.id))
        } else {
            None
        };
        Ok(ListPage {
            tasks,
            next_cursor,
            total,
        })
    }

    async fn claim(
        &self,
        worker: &str,
        max: usize,
        lease: Duration,
        now: Timestamp,
    ) -> Result<Vec<Claim>, StoreError> {
        Ok(self
            .claim_tasks(worker, max, lease, now)
            .await?
            .into_iter()
            .map(|(c, _)| c)
            .collect())
    }

    /// Claims and reads the claimed tasks in one statement.
    async fn claim_tasks(
        &self,
        worker: &str,
        max: usize,
        lease: Duration,
        now: Timestamp,
    ) -> Result<Vec<(Claim, Option<Arc<Task>>)>, StoreError> {
        if max == 0 {
            return Ok(Vec::new());
        }
        let until = ns(now).saturating_add(dur_ns(lease));
        let rows = self.query(CLAIM, &[&worker, &until, &limit(max)]).await?;
        let mut claimed = Vec::with_capacity(rows.len());
        for r in rows {
            let id: &str = r.try_get(0).map_err(backend)?;
            let epoch: i64 = r.try_get(1).map_err(backend)?;
            let attempts: i32 = r.try_get(2).map_err(backend)?;
            let ready: i64 = r.try_get(3).map_err(backend)?;
            let body: Option<Json<Task>> = r
                .try_get(4)
                .map_err(|e| StoreError::Corrupt(format!("task: {e}")))?;
            claimed.push((
                ready,
                Claim {
                    task_id: task_id(id)?,
                    worker: worker.to_string(),
                    epoch: uint(epoch),
                    attempts: u32::try_from(attempts).unwrap_or(0),
                },
                body.map(|Json(t)| Arc::new(t)),
            ));
        }
        // In queue order (RETURNING gives no order).
        claimed.sort_by_key(|(ready, _, _)| *ready);
        Ok(claimed.into_iter().map(|(_, c, t)| (c, t)).collect())
    }

    async fn renew(
        &self,
        claim: &Claim,
        lease: Duration,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        let until = ns(now).saturating_add(dur_ns(lease));
        let n = self
            .execute(
                RENEW,
                &[
                    &claim.task_id.as_str(),
                    &claim.worker,
                    &int(claim.epoch),
                    &until,
                ],
            )
            .await?;
        Ok(n > 0)
    }

    async fn release(&self, claim: &Claim) -> Result<(), StoreError> {
        let n = self
            .execute(
                RELEASE,
                &[&claim.task_id.as_str(), &claim.worker, &int(claim.epoch)],
            )
            .await?;
        if n > 0 {
            self.work_published();
        }
        Ok(())
    }

    async fn drop_claim(&self, claim: &Claim) -> Result<(), StoreError> {
        self.execute(
            DROP_CLAIM,
            &[&claim.task_id.as_str(), &claim.worker, &int(claim.epoch)],
        )
        .await?;
        Ok(())
    }

    async fn reap(&self, now: Timestamp) -> Result<Vec<TaskId>, StoreError> {
        let rows = self.query(REAP, &[&ns(now)]).await?;
        let mut ids = Vec::with_capacity(rows.len());
        for r in rows {
            let id: &str = r.try_get(0).map_err(backend)?;
            ids.push(task_id(id)?);
        }
        if !ids.is_empty() {
            self.work_published();
        }
        Ok(ids)
    }

    async fn sweep(&self, now: Timestamp, max: usize) -> Result<usize, StoreError> {
        if max == 0 {
            return Ok(0);
        }
        let n: i64 = one(self.query(SWEEP, &[&ns(now), &limit(max)]).await?)?;
        Ok(usize::try_from(n).unwrap_or(0))
    }

    async fn put_record(
        &self,
        record: Record,
        quota: Option<Quota>,
    ) -> Result<PutOutcome, StoreError> {
        let data = Json(&record.data);
        let v: i64 = one(self
            .query(
                PUT_RECORD,
                &[
                    &record.kind.as_str(),
                    &record.id,
                    &record.task_id.as_ref().map(|t| t.as_str()),
                    &record.tenant,
                    &record.owner,
                    &data,
                    &int(record.cursor),
                    &record.active,
                    &record.expires_at.map(ns),
                    &quota.map(|q| limit(q.max)),
                    &quota.map(|q| ns(q.now)),
                ],
            )
            .await?)?;
        match v {
            -1 => Ok(PutOutcome::OverQuota {
                max: quota.map_or(0, |q| q.max),
            }),
            -2 => Err(StoreError::NotFound),
            v if v > 0 => Ok(PutOutcome::Stored { version: uint(v) }),
            other => Err(StoreError::Backend(format!(
                "postgres: unexpected put answer {other}"
            ))),
        }
    }

    async fn get_record(&self, kind: RecordKind, id: &str) -> Result<Option<Record>, StoreError> {
        let sql = format!("SELECT {RECORD_COLUMNS} FROM records WHERE kind = $1 AND id = $2");
        let rows = self.query(&sql, &[&kind.as_str(), &id]).await?;
        rows.first().map(|r| record(r, 0)).transpose()
    }

    async fn list_records(
        &self,
        kind: RecordKind,
        scope: &RecordScope,
    ) -> Result<Vec<Record>, StoreError> {
        let rows = match scope {
            RecordScope::Task(t) => {
                let sql = format!(
                    "SELECT {RECORD_COLUMNS} FROM records WHERE task_id = $1 AND kind = $2 \
                     ORDER BY id"
                );
                self.query(&sql, &[&t.as_str(), &kind.as_str()]).await?
            }
            RecordScope::Owner { tenant, owner } => {
                let sql = format!(
                    "SELECT {RECORD_COLUMNS} FROM records WHERE kind = $1 AND tenant = $2 \
                     AND owner = $3 ORDER BY id"
                );
                self.query(&sql, &[&kind.as_str(), tenant, owner]).await?
            }
        };
        rows.iter().map(|r| record(r, 0)).collect()
    }

    async fn update_record(
        &self,
        record: &Record,
        fence: Option<&RecordLease>,
    ) -> Result<u64, StoreError> {
        let data = Json(&record.data);
        let v: i64 = one(self
            .query(
                UPDATE_RECORD,
                &[
                    &record.kind.as_str(),
                    &record.id,
                    &int(record.version),
                    &fence.map(|f| f.worker.as_str()),
                    &fence.map(|f| int(f.epoch)),
                    &data,
                    &int(record.cursor),
                    &record.active,
                    &record.expires_at.map(ns),
                ],
            )
            .await?)?;
        match v {
            -1 => Err(StoreError::NotFound),
            -2 => Err(StoreError::Conflict),
            -3 => Err(StoreError::LeaseLost),
            v if v > 0 => Ok(uint(v)),
            other => Err(StoreError::Backend(format!(
                "postgres: unexpected update answer {other}"
            ))),
        }
    }

    async fn delete_record(&self, kind: RecordKind, id: &str) -> Result<bool, StoreError> {
        let n = self
            .execute(
                "DELETE FROM records WHERE kind = $1 AND id = $2",
                &[&kind.as_str(), &id],
            )
            .await?;
        Ok(n > 0)
    }

    async fn claim_records(
        &self,
        kind: RecordKind,
        worker: &str,
        max: usize,
        lease: Duration,
        now: Timestamp,
    ) -> Result<Vec<(Record, RecordLease)>, StoreError> {
        if max == 0 {
            return Ok(Vec::new());
        }
        let until = ns(lease_until(now, lease));
        let rows = self
            .query(
                CLAIM_RECORDS,
                &[&kind.as_str(), &ns(now), &limit(max), &worker, &until],
            )
            .await?;
        let mut out = Vec::with_capacity(rows.len());
        for r in &rows {
            let epoch: i64 = r.try_get(0).map_err(backend)?;
            let rec = record(r, 1)?;
            let lease = RecordLease {
                kind,
                id: rec.id.clone(),
                worker: worker.to_string(),
                epoch: uint(epoch),
            };
            out.push((rec, lease));
        }
        out.sort_by(|a, b| a.0.id.cmp(&b.0.id));
        Ok(out)
    }

    async fn renew_record(
        &self,
        lease: &RecordLease,
        duration: Duration,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        let n = self
            .execute(
                "UPDATE records SET lease_until = $5 WHERE kind = $1 AND id = $2 \
                 AND lease_owner = $3 AND epoch = $4",
                &[
                    &lease.kind.as_str(),
                    &lease.id,
                    &lease.worker,
                    &int(lease.epoch),
                    &ns(lease_until(now, duration)),
                ],
            )
            .await?;
        Ok(n > 0)
    }

    async fn release_record(&self, lease: &RecordLease) -> Result<(), StoreError> {
        self.execute(
            "UPDATE records SET lease_owner = NULL, lease_until = NULL WHERE kind = $1 \
             AND id = $2 AND lease_owner = $3 AND epoch = $4",
            &[
                &lease.kind.as_str(),
                &lease.id,
                &lease.worker,
                &int(lease.epoch),
            ],
        )
        .await?;
        Ok(())
    }

    async fn sweep_records(&self, now: Timestamp, max: usize) -> Result<usize, StoreError> {
        if max == 0 {
            return Ok(0);
        }
        let n = self
            .execute(SWEEP_RECORDS, &[&ns(now), &limit(max)])
            .await?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    async fn count_records(&self) -> Result<Vec<(RecordKind, u64)>, StoreError> {
        let rows = self
            .query("SELECT kind, count(*) FROM records GROUP BY kind", &[])
            .await?;
        let mut counts: Vec<(RecordKind, u64)> = RecordKind::ALL.iter().map(|k| (*k, 0)).collect();
        for r in rows {
            let kind: &str = r.try_get(0).map_err(backend)?;
            let n: i64 = r.try_get(1).map_err(backend)?;
            if let Some(slot) = counts.iter_mut().find(|(k, _)| k.as_str() == kind) {
                slot.1 = uint(n);
            }
        }
        Ok(counts)
    }

    async fn idle_expired(&self, now: Timestamp, max: usize) -> Result<Vec<TaskId>, StoreError> {
        let rows = self.query(IDLE, &[&ns(now), &limit(max)]).await?;
        rows.iter()
            .map(|r| {
                let id: &str = r.try_get(0).map_err(backend)?;
                task_id(id)
            })
            .collect()
    }

    async fn queue_depth(&self) -> Result<u64, StoreError> {
        let n: i64 = one(self.query("SELECT count(*) FROM queue", &[]).await?)?;
        Ok(uint(n))
    }

    async fn count_by_state(&self) -> Result<Vec<(TaskState, u64)>, StoreError> {
        let rows = self
            .query("SELECT state, count(*) FROM tasks GROUP BY state", &[])
            .await?;
        let mut counts = TaskState::ALL.map(|s| (s, 0u64));
        for r in rows {
            let state: &str = r.try_get(0).map_err(backend)?;
            let n: i64 = r.try_get(1).map_err(backend)?;
            let state = TaskState::parse(state)
                .ok_or_else(|| StoreError::Corrupt(format!("stored task state {state:?}")))?;
            if let Some(slot) = counts.iter_mut().find(|(s, _)| *s == state) {
                slot.1 = uint(n);
            }
        }
        Ok(counts.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The parameters a URL sets are found, so that taskwire's keepalive and
    /// TCP_USER_TIMEOUT defaults give way to them.
    #[test]
    fn url_keys_name_the_parameters_the_url_sets() {
        assert!(url_keys("postgres://u@h/db").is_empty());
        assert_eq!(
            url_keys("postgres://u@h/db?keepalives_idle=30&TCP_USER_TIMEOUT=5&options=-c%20x%3Dy"),
            ["keepalives_idle", "tcp_user_timeout", "options"]
        );
        assert_eq!(url_keys("postgres://u@h/db?keepalives=0"), ["keepalives"]);
    }
}
